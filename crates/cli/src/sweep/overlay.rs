//! Overlays in `hopwise sweep`: each run is built by
//! `hopwise_overlay::scenario` (so `--vary tor.transport=…` and the other
//! overlay keys work), the circuits' metrics join the flows' and links' in
//! runs.csv, points.csv and summary.json, and a figure and table lines
//! show each point's TTLB, fairness and queueing delay with their
//! intervals.

use super::axes::{label, label_column, numeric, Axis, Point};
use super::output::SweepSummary;
use super::plots::{bar, error_bar, series_of};
use super::samples::{samples, Sample};
use anyhow::{Context, Result};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use hopwise_sim::report::Summary;
use hopwise_sim::spec::Scenario;
use std::path::Path;

/// The subject of the metrics over all circuits.
pub const ALL: &str = "all circuits";

/// Checks the overlay sections of a point's scenario.
pub fn check(sc: Scenario, origin: &str) -> Result<Scenario, hopwise_sim::scenario::ScenarioError> {
    hopwise_overlay::scenario::from_base(sc, origin).map(|o| o.base)
}

/// Runs one point's scenario (overlays installed) and returns what it
/// measured: `hopwise sim`'s samples and the overlays'.
pub fn run(sc: Scenario, origin: &str) -> Result<Vec<Sample>, String> {
    let os = hopwise_overlay::scenario::from_base(sc, origin).map_err(|e| e.to_string())?;
    let mut run = os.build()?;
    run.run()?;
    let mut v = samples(&Summary::of(&run.sim, &os.base.name, 0.0), &os.base.flows);
    let summary = run.summary();
    let mut push = |metric: &'static str, subject: &str, value: f64| {
        v.push(Sample {
            metric,
            subject: subject.to_string(),
            value,
        })
    };
    // Swarm classes and oTCP paths: their download times and goodput.
    for c in summary.swarm.iter().flat_map(|w| &w.classes) {
        push("swarm_download_median_s", &c.class, c.download_median_s);
        push("swarm_download_p95_s", &c.class, c.download_p95_s);
        push(
            "swarm_completed_fraction",
            &c.class,
            c.completed as f64 / c.leechers.max(1) as f64,
        );
    }
    for p in summary.otcp.iter().flat_map(|o| &o.paths) {
        push("otcp_goodput_bps", &p.path, p.goodput_bps);
        if let Some(c) = p.completion_s {
            push("otcp_completion_s", &p.path, c);
        }
    }
    if let Some(t) = summary.tor {
        push("circuit_goodput_bps", ALL, t.goodput_bps);
        if let Some(j) = t.jain {
            push("circuit_jain", ALL, j);
        }
        push("ttfb_median_s", ALL, t.ttfb_s.median);
        push("ttlb_median_s", ALL, t.ttlb_s.median);
        push("ttlb_mean_s", ALL, t.ttlb_s.mean);
        push("ttlb_p95_s", ALL, t.ttlb_s.p95);
        push("circuit_rtt_median_ms", ALL, t.rtt_ms.median);
        push("circuit_queueing_median_ms", ALL, t.queueing_ms.median);
        push("circuit_queueing_p95_ms", ALL, t.queueing_ms.p95);
        push("circuit_queueing_p99_ms", ALL, t.queueing_ms.p99);
        for c in &t.circuits {
            push("circuit_goodput_bps", &c.name, c.goodput_bps);
            push("ttlb_median_s", &c.name, c.ttlb_median_s);
            push("circuit_queueing_median_ms", &c.name, c.queueing_median_ms);
        }
    }
    Ok(v)
}

/// The panels of `sweep_tor.svg`: metric, title, y label, scale.
const PANELS: [(&str, &str, &str, f64); 5] = [
    ("ttlb_median_s", "median TTLB", "TTLB (s)", 1.0),
    (
        "circuit_jain",
        "Jain's index over circuits' goodput",
        "Jain's index",
        1.0,
    ),
    (
        "circuit_goodput_bps",
        "goodput of all circuits",
        "goodput (Mbit/s)",
        1e-6,
    ),
    (
        "circuit_queueing_median_ms",
        "median queueing delay",
        "queueing delay (ms)",
        1.0,
    ),
    ("ttfb_median_s", "median TTFB", "TTFB (s)", 1.0),
];

/// `sweep_tor.svg`: per point, the circuits' TTLB, fairness, goodput,
/// queueing delay and TTFB (means over seeds, 90 % CI bars). `None` when
/// no run had circuits.
pub fn plot(
    out: &Path,
    axes: &[Axis],
    points: &[Point],
    s: &SweepSummary,
) -> Result<Option<String>> {
    if series_of(s, "circuit_goodput_bps", ALL)
        .iter()
        .all(|m| m.0.is_nan())
    {
        return Ok(None);
    }
    let cis = s.seeds.len() > 1;
    let mut fig = Figure::new(
        format!(
            "circuits of `{}`: mean over {} per point{}",
            s.scenario,
            hopwise_experiment::plural(s.seeds.len(), "seed"),
            if cis { ", error bars: 90 % CI" } else { "" }
        ),
        2,
    )
    .panel_size(560, 340);
    let num = if axes.len() == 1 {
        numeric(&axes[0].values)
    } else {
        None
    };
    let x_label = axes
        .iter()
        .map(|a| a.key.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    for (k, (metric, title, y, scale)) in PANELS.into_iter().enumerate() {
        let v = series_of(s, metric, ALL);
        let title = format!("({}) {title}", (b'a' + k as u8) as char);
        match &num {
            Some((xs, _)) => {
                let mut pts: Vec<(f64, f64, Option<f64>)> =
                    xs.iter().zip(&v).map(|(x, &(m, h))| (*x, m, h)).collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut ser =
                    Series::line_points(ALL, pts.iter().map(|&(x, m, _)| (x, m * scale)).collect());
                if cis {
                    ser = ser.with_error_bars(
                        pts.iter()
                            .map(|&(_, m, h)| error_bar(m, h, scale))
                            .collect(),
                    );
                }
                fig.push_panel(
                    Chart::new(title)
                        .x_label(x_label.clone())
                        .y_label(y)
                        .series(ser),
                );
            }
            None => {
                let bars: Vec<(String, f64, (f64, f64))> = points
                    .iter()
                    .zip(&v)
                    .map(|(p, &(m, h))| bar(axes, p, m, h, scale))
                    .collect();
                let b = BarChart::new(title).x_label(x_label.clone()).y_label(y);
                fig.push_panel(if cis {
                    b.group_with_errors(ALL, bars)
                } else {
                    b.group(ALL, bars.into_iter().map(|(c, m, _)| (c, m)).collect())
                });
            }
        }
    }
    fig.write_svg(out.join("sweep_tor.svg"))
        .with_context(|| format!("writing {}", out.join("sweep_tor.svg").display()))?;
    Ok(Some("sweep_tor.svg".into()))
}

/// Table lines: per point, the circuits' median TTLB, Jain's index,
/// goodput and median queueing delay (mean ± 90 % CI over seeds). Empty
/// when no run had circuits.
pub fn table(axes: &[Axis], points: &[Point], s: &SweepSummary) -> String {
    use std::fmt::Write as _;
    let cols: Vec<(&str, &str, f64)> = vec![
        ("ttlb_median_s", "TTLB median s", 1.0),
        ("circuit_jain", "Jain (circuits)", 1.0),
        ("circuit_goodput_bps", "circuits Mbit/s", 1e-6),
        ("circuit_queueing_median_ms", "queueing ms", 1.0),
    ];
    let data: Vec<Vec<(f64, Option<f64>)>> = cols.iter().map(|c| series_of(s, c.0, ALL)).collect();
    if data[2].iter().all(|m| m.0.is_nan()) {
        return String::new();
    }
    let cell = |(m, h): (f64, Option<f64>), scale: f64| match h {
        _ if !m.is_finite() => "–".to_string(),
        Some(h) if h.is_finite() => format!("{:.3}±{:.3}", m * scale, h * scale),
        _ => format!("{:.3}", m * scale),
    };
    let (head, w) = label_column(axes, points);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "circuits: medians over each run's requests, then means over {}{}",
        hopwise_experiment::plural(s.seeds.len(), "seed"),
        if s.seeds.len() > 1 { " ± 90 % CI" } else { "" }
    );
    let _ = write!(o, "{head:<w$}");
    for c in &cols {
        let _ = write!(o, " {:>17}", c.1);
    }
    o.push('\n');
    for (i, p) in points.iter().enumerate().take(200) {
        let _ = write!(o, "{:<w$}", label(axes, p));
        for (k, c) in cols.iter().enumerate() {
            let _ = write!(o, " {:>17}", cell(data[k][i], c.2));
        }
        o.push('\n');
    }
    o
}
