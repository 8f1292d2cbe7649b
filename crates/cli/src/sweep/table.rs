//! The sweep's terminal table (also in report.html): per point, the bytes
//! all flows delivered, Jain's index and each flow's goodput, then each
//! flow's median RTT and 95th-percentile queueing delay.

use super::axes::{label, label_column, Axis, Point};
use super::output::SweepSummary;
use super::plots::{series_of, shown_flows, subjects};

/// The terminal table: per point, the bytes all flows delivered, Jain's
/// index and each flow's goodput (means over seeds).
pub(super) fn table(axes: &[Axis], points: &[Point], s: &SweepSummary) -> String {
    use std::fmt::Write as _;
    const MAX_ROWS: usize = 200;
    let flows = shown_flows(s);
    let shown = flows.len().min(6);
    let (head, w) = label_column(axes, points);
    let num = |x: f64, scale: f64| {
        if x.is_finite() {
            format!("{:.3}", x * scale)
        } else {
            "–".to_string()
        }
    };
    let pad = |t: &str, width: usize| {
        format!("{t}{}", " ".repeat(width.saturating_sub(t.chars().count())))
    };
    let tot = series_of(s, "bytes_delivered", "all flows");
    let jain = series_of(s, "jain", "all flows");
    let per_flow: Vec<Vec<(f64, Option<f64>)>> = flows
        .iter()
        .take(shown)
        .map(|fl| series_of(s, "goodput_bps", fl))
        .collect();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "means over {}; the flow columns are goodput in Mbit/s{} (–: the flow is not in that point)",
        hopwise_experiment::plural(s.seeds.len(), "seed"),
        if s.seeds.len() > 1 { " ± 90 % CI" } else { "" }
    );
    // Each flow column as wide as its widest cell (at least 12).
    let cells: Vec<Vec<String>> = per_flow
        .iter()
        .map(|v| {
            v.iter()
                .map(|&(m, h)| match h {
                    Some(h) if m.is_finite() && h.is_finite() => {
                        format!("{:.3}±{:.3}", m * 1e-6, h * 1e-6)
                    }
                    _ => num(m, 1e-6),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .map(|c| {
            c.iter()
                .take(MAX_ROWS)
                .map(|x| x.chars().count())
                .fold(12, usize::max)
        })
        .collect();
    let _ = write!(o, "{} {:>12} {:>6}", pad(head, w), "delivered MB", "Jain");
    for (fl, &cw) in flows.iter().take(shown).zip(&widths) {
        let _ = write!(o, " {:>cw$}", fl.chars().take(cw).collect::<String>());
    }
    o.push('\n');
    for (i, p) in points.iter().enumerate().take(MAX_ROWS) {
        let _ = write!(
            o,
            "{} {:>12} {:>6}",
            pad(&label(axes, p), w),
            num(tot[i].0, 1e-6),
            if jain[i].0.is_finite() {
                format!("{:.3}", jain[i].0)
            } else {
                "n/a".into()
            }
        );
        for (c, &cw) in cells.iter().zip(&widths) {
            let _ = write!(o, " {:>cw$}", c[i]);
        }
        o.push('\n');
    }
    if points.len() > MAX_ROWS {
        let _ = writeln!(o, "({} more points in points.csv)", points.len() - MAX_ROWS);
    }
    if shown < flows.len() {
        let _ = writeln!(o, "({} more flows in points.csv)", flows.len() - shown);
    }
    o.push_str(&latency_table(axes, points, s, head, w));
    o
}

/// The latency part of the terminal table: per point and flow, the median
/// RTT and the 95th-percentile queueing delay (means over seeds, in ms);
/// empty if no flow has latency samples.
fn latency_table(
    axes: &[Axis],
    points: &[Point],
    s: &SweepSummary,
    head: &str,
    w: usize,
) -> String {
    use std::fmt::Write as _;
    const MAX_ROWS: usize = 200;
    let flows = subjects(s, "rtt_median_ms");
    if flows.is_empty() {
        return String::new();
    }
    let shown = flows.len().min(6);
    let ms = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "–".to_string()
        }
    };
    let cells: Vec<Vec<String>> = flows
        .iter()
        .take(shown)
        .map(|fl| {
            let rtt = series_of(s, "rtt_median_ms", fl);
            let qd = series_of(s, "queue_delay_p95_ms", fl);
            rtt.iter()
                .zip(&qd)
                .map(|(r, q)| format!("{}/{}", ms(r.0), ms(q.0)))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .zip(&flows)
        .map(|(c, fl)| {
            c.iter()
                .take(MAX_ROWS)
                .map(|x| x.chars().count())
                .fold(fl.chars().count().clamp(12, 24), usize::max)
        })
        .collect();
    let pad = |t: &str| format!("{t}{}", " ".repeat(w.saturating_sub(t.chars().count())));
    let mut o = String::from(
        "\nlatency per flow: median RTT / 95th-percentile queueing delay, ms (means over seeds)\n",
    );
    let _ = write!(o, "{}", pad(head));
    for (fl, &cw) in flows.iter().take(shown).zip(&widths) {
        let _ = write!(o, " {:>cw$}", fl.chars().take(cw).collect::<String>());
    }
    o.push('\n');
    for (i, p) in points.iter().enumerate().take(MAX_ROWS) {
        let _ = write!(o, "{}", pad(&label(axes, p)));
        for (c, &cw) in cells.iter().zip(&widths) {
            let _ = write!(o, " {:>cw$}", c[i]);
        }
        o.push('\n');
    }
    o
}
