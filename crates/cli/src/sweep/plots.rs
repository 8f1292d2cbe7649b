//! The sweep's figure, sweep.svg: per point, the means (and 90 % intervals)
//! of the flows' goodput, Jain's index, the busy links' utilisation, queue
//! and loss, and the flows' latency; and the look-ups in the summary
//! (series, subjects, the flows and links shown) that the table and the
//! overlays' figure share.

use super::axes::{label, numeric, Axis, Point};
use super::output::SweepSummary;
use anyhow::{Context, Result};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use std::collections::HashSet;
use std::path::Path;

/// An error bar from mean `m` ± `h` (none: 0), scaled; every metric the
/// figures show is non-negative, so it stops at 0.
pub(super) fn error_bar(m: f64, h: Option<f64>, scale: f64) -> (f64, f64) {
    let h = h.unwrap_or(0.0);
    ((m - h).max(0.0) * scale, (m + h) * scale)
}

/// A bar of point `p`: its category (the point's values), the scaled mean
/// and its error bar (NaN without an interval).
pub(super) fn bar(
    axes: &[Axis],
    p: &Point,
    m: f64,
    h: Option<f64>,
    scale: f64,
) -> (String, f64, (f64, f64)) {
    let cat = if p.is_empty() {
        label(axes, p)
    } else {
        p.join(", ")
    };
    let e = h.map_or((f64::NAN, f64::NAN), |h| error_bar(m, Some(h), scale));
    (cat, m * scale, e)
}

/// The mean (± CI) of `metric` for `subject` at each point.
pub(super) fn series_of(s: &SweepSummary, metric: &str, subject: &str) -> Vec<(f64, Option<f64>)> {
    s.points
        .iter()
        .map(|p| {
            p.metrics
                .iter()
                .find(|m| m.metric == metric && m.subject == subject)
                .map_or((f64::NAN, None), |m| (m.mean, m.ci90))
        })
        .collect()
}

/// Subjects of `metric` in first-seen order.
pub(super) fn subjects(s: &SweepSummary, metric: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for p in &s.points {
        for m in p.metrics.iter().filter(|m| m.metric == metric) {
            if seen.insert(&m.subject) {
                v.push(m.subject.clone());
            }
        }
    }
    v
}

/// The flows to plot and tabulate: every flow's goodput subject, except
/// that the replicas `count` made are replaced by their sum, placed where
/// the first replica was.
pub(super) fn shown_flows(s: &SweepSummary) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for f in subjects(s, "goodput_bps") {
        let f = s.replicas.get(&f).cloned().unwrap_or(f);
        if !v.contains(&f) {
            v.push(f);
        }
    }
    v
}

/// Links that carried traffic at some point (utilisation above 1 % or drops).
fn busy_links(s: &SweepSummary) -> Vec<String> {
    subjects(s, "utilization")
        .into_iter()
        .filter(|l| {
            series_of(s, "utilization", l).iter().any(|v| v.0 > 0.01)
                || series_of(s, "loss_rate", l).iter().any(|v| v.0 > 0.0)
        })
        .collect()
}

const MAX_SERIES: usize = 12;
/// Most points a bar chart shows (all are in the CSVs).
const MAX_CLUSTERS: usize = 40;
pub(super) fn plots(
    out: &Path,
    axes: &[Axis],
    points: &[Point],
    s: &SweepSummary,
) -> Result<Vec<String>> {
    let num = if axes.len() == 1 {
        numeric(&axes[0].values)
    } else {
        None
    };
    let x_label = match &num {
        Some((_, u)) if !u.is_empty() => format!("{} ({u})", axes[0].key),
        _ => axes
            .iter()
            .map(|a| a.key.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let links = busy_links(s);
    let flows = shown_flows(s);
    let goodput_title = if s.replicas.is_empty() {
        "goodput per flow"
    } else {
        "goodput per flow (name-*: sum over its replicas)"
    };
    let panels: Vec<(&str, &str, Vec<String>, f64)> = vec![
        (goodput_title, "goodput_bps", flows, 1e-6),
        (
            "Jain's index over flows",
            "jain",
            vec!["all flows".to_string()],
            1.0,
        ),
        ("link utilisation", "utilization", links.clone(), 1.0),
        ("mean queue", "mean_queue_packets", links.clone(), 1.0),
        ("loss rate", "loss_rate", links, 1.0),
        (
            "median RTT per flow",
            "rtt_median_ms",
            subjects(s, "rtt_median_ms"),
            1.0,
        ),
        (
            "95th-percentile queueing delay per flow",
            "queue_delay_p95_ms",
            subjects(s, "queue_delay_p95_ms"),
            1.0,
        ),
    ];
    let y_label = |metric: &str| match metric {
        "goodput_bps" => "goodput (Mbit/s)",
        "jain" => "Jain's index",
        "utilization" => "utilisation",
        "mean_queue_packets" => "mean queue (packets)",
        "rtt_median_ms" => "median RTT (ms)",
        "queue_delay_p95_ms" => "p95 queueing delay (ms)",
        _ => "loss rate",
    };
    let mut fig = Figure::new(
        format!(
            "sweep of `{}`: mean over {} per point{}",
            s.scenario,
            hopwise_experiment::plural(s.seeds.len(), "seed"),
            if s.seeds.len() > 1 {
                ", error bars: 90 % CI"
            } else {
                ""
            }
        ),
        2,
    )
    .panel_size(560, 340);
    for (k, (title, metric, subjects, scale)) in panels.into_iter().enumerate() {
        if subjects.is_empty() {
            continue;
        }
        let letter = (b'a' + k as u8) as char;
        let shown = subjects.len().min(MAX_SERIES);
        let note = if shown < subjects.len() {
            format!(" ({shown} of {} shown)", subjects.len())
        } else {
            String::new()
        };
        let clusters = if num.is_none() && points.len() > MAX_CLUSTERS {
            format!(" (first {MAX_CLUSTERS} of {} points)", points.len())
        } else {
            String::new()
        };
        let title = format!("({letter}) {title}{note}{clusters}");
        match &num {
            Some((xs, _)) => {
                let mut c = Chart::new(title)
                    .x_label(x_label.clone())
                    .y_label(y_label(metric));
                for subj in subjects.iter().take(shown) {
                    // In x order, whatever order the values were given in.
                    let mut v: Vec<(f64, f64, Option<f64>)> = xs
                        .iter()
                        .zip(series_of(s, metric, subj))
                        .map(|(x, (m, h))| (*x, m, h))
                        .collect();
                    v.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let pts = v.iter().map(|&(x, m, _)| (x, m * scale)).collect();
                    let mut ser = Series::line_points(subj.clone(), pts);
                    if s.seeds.len() > 1 {
                        ser = ser.with_error_bars(
                            v.iter().map(|&(_, m, h)| error_bar(m, h, scale)).collect(),
                        );
                    }
                    c.push_series(ser);
                }
                fig.push_panel(c);
            }
            None => {
                // One bar colour per subject, one cluster per point (its
                // values; the x label names the keys).
                let mut b = BarChart::new(title)
                    .x_label(x_label.clone())
                    .y_label(y_label(metric));
                for subj in subjects.iter().take(shown) {
                    let v = series_of(s, metric, subj);
                    let bars = points
                        .iter()
                        .zip(&v)
                        .take(MAX_CLUSTERS)
                        .map(|(p, &(m, h))| bar(axes, p, m, h, scale))
                        .collect();
                    b = if s.seeds.len() > 1 {
                        b.group_with_errors(subj.clone(), bars)
                    } else {
                        b.group(
                            subj.clone(),
                            bars.into_iter().map(|(c, m, _)| (c, m)).collect(),
                        )
                    };
                }
                fig.push_panel(b);
            }
        }
    }
    fig.write_svg(out.join("sweep.svg"))
        .with_context(|| format!("writing {}", out.join("sweep.svg").display()))?;
    Ok(vec!["sweep.svg".to_string()])
}
