//! Figures of the backtap-network reproduction.
//!
//! * `fig6a_jain_cdf.svg`: Fig. 6a, the CDF over seeds of Jain's index over
//!   per-circuit rates, one curve per compared transport; a second panel
//!   shows Jain's index over rate / max-min fair share.
//! * `fig6a_jain_cdf_variants.svg`: the same for the sensitivity variants
//!   (dashed), with the transports they vary (solid), if the plan ran any.
//! * `table1.svg`: Table 1 as bars, overhead (payload goodput / wire bytes,
//!   percent) and total in-flight backlog (MB) per transport.

use super::fairness::{FairnessOut, FairnessRow, FairnessRun};
use super::{transport, transports, Plan};
use hopwise_experiment::{plural, Outputs};
use hopwise_plot::{cdf_points, palette_color, BarChart, Chart, Figure, Series};

/// A transport's colour: its place in table order, so that every figure
/// (and a variant and the transport it varies) uses the same one.
fn color(key: &str) -> &'static str {
    let base = base_of(key);
    let i = transports()
        .iter()
        .position(|t| t.key == base)
        .unwrap_or(transports().len());
    palette_color(i)
}

/// The compared transport a sensitivity variant varies (itself for the
/// compared transports).
pub(super) fn base_of(key: &str) -> &str {
    transports()
        .iter()
        .map(|t| t.key)
        .filter(|b| key == *b || key.starts_with(&format!("{b}-")))
        .max_by_key(|b| b.len())
        .unwrap_or(key)
}

/// A per-run value.
type Metric = fn(&FairnessRun) -> f64;

/// Per-run values of `f` for transport `key`.
fn samples(out: &FairnessOut, key: &str, f: Metric) -> Vec<f64> {
    out.runs
        .iter()
        .filter(|r| r.transport == key)
        .map(f)
        .collect()
}

/// The two CDF panels (Jain over rates, Jain over rate / max-min share) for
/// `rows`; `dashed` decides a row's line style.
fn cdf_panels(
    out: &FairnessOut,
    rows: &[&FairnessRow],
    dashed: &dyn Fn(&FairnessRow) -> bool,
) -> [Chart; 2] {
    // Jain's index of n circuits is at least 1/n; the paper's axis starts at
    // 0.5. Start at the smallest value seen (rounded down to 0.1), at most 0.5.
    let lo = rows
        .iter()
        .flat_map(|r| samples(out, &r.transport, |x| x.jain.min(x.jain_maxmin)))
        .filter(|x| x.is_finite())
        .fold(0.5f64, f64::min);
    let lo = (lo * 10.0).floor() / 10.0;
    let mut jain = Chart::new("Jain's index over per-circuit rates (Fig. 6a)")
        .x_label("Jain's fairness index")
        .y_label("CDF over seeds")
        .x_range(lo, 1.0)
        .y_range(0.0, 1.0);
    let mut share = Chart::new("Jain's index over rate / max-min fair share")
        .x_label("Jain's index of rate / max-min share")
        .y_label("CDF over seeds")
        .x_range(lo, 1.0)
        .y_range(0.0, 1.0);
    for r in rows {
        let name = format!("{} ({})", r.label, plural(r.runs, "run"));
        let style = |s: Series| {
            let s = s.color(color(&r.transport));
            if dashed(r) {
                s.dashed()
            } else {
                s
            }
        };
        let metrics: [(&mut Chart, Metric); 2] =
            [(&mut jain, |x| x.jain), (&mut share, |x| x.jain_maxmin)];
        for (chart, f) in metrics {
            let xs = samples(out, &r.transport, f);
            chart.push_series(style(Series::cdf(&name, &xs)));
            // A step curve of a handful of runs hides where the runs are:
            // mark each one at the top of its step.
            if xs.len() <= FEW_RUNS {
                let tops = cdf_points(&xs).into_iter().skip(1).collect();
                chart.push_series(Series::points("", tops).color(color(&r.transport)));
            }
        }
    }
    [jain, share]
}

/// Up to this many runs per transport, the CDFs also mark every run.
const FEW_RUNS: usize = 5;

/// Fig. 6a (and Table 1 as bars): see the module documentation.
pub fn fig6a(plan: &Plan, out: &FairnessOut, o: &mut Outputs) -> anyhow::Result<()> {
    let main: Vec<&FairnessRow> = out.rows.iter().filter(|r| r.main).collect();
    let vars: Vec<&FairnessRow> = out.rows.iter().filter(|r| !r.main).collect();
    // The star's pair RTT, and the other RTTs of the variants shown (whose
    // labels name them).
    let setup = |rows: &[&FairnessRow]| {
        let mut other: Vec<u64> = rows
            .iter()
            .filter_map(|r| transport(&r.transport)?.star_rtt_ms)
            .filter(|&ms| ms != plan.star_rtt_ms)
            .collect();
        other.sort_unstable();
        other.dedup();
        let where_labelled = if other.is_empty() {
            String::new()
        } else {
            let ms: Vec<String> = other.iter().map(|ms| format!("{ms} ms")).collect();
            format!(" ({} where labelled)", ms.join(", "))
        };
        format!(
            "star of the 50-relay TorPS file, {} bulk circuits, pair RTT {} ms{where_labelled}, rates over {}–{} s",
            plan.star_circuits, plan.star_rtt_ms, plan.star_from_s, plan.star_secs
        )
    };

    let [jain, share] = cdf_panels(out, &main, &|_| false);
    let fig = Figure::new(
        format!("Fig. 6a: fairness between circuits ({})", setup(&main)),
        2,
    )
    .panel_size(600, 420)
    .panel(jain)
    .panel(share);
    o.svg("fig6a_jain_cdf.svg", &fig)?;

    if !vars.is_empty() {
        // Each variant (dashed) with the compared transport it varies (solid).
        let mut rows: Vec<&FairnessRow> = Vec::new();
        for v in &vars {
            if let Some(b) = main.iter().find(|m| m.transport == base_of(&v.transport)) {
                if !rows.iter().any(|r| r.transport == b.transport) {
                    rows.push(b);
                }
            }
        }
        rows.extend(vars.iter().copied());
        let [jain, share] = cdf_panels(out, &rows, &|r| !r.main);
        let fig = Figure::new(
            format!(
                "Fig. 6a, sensitivity: refill, gating and star-RTT variants (dashed) ({})",
                setup(&rows)
            ),
            2,
        )
        .panel_size(600, 420)
        .panel(jain)
        .panel(share);
        o.svg("fig6a_jain_cdf_variants.svg", &fig)?;
    }

    // Table 1: one group for the compared transports, one for the variants.
    let bars = |rows: &[&FairnessRow], f: fn(&FairnessRow) -> f64| -> Vec<(String, f64)> {
        rows.iter().map(|r| (r.label.clone(), f(r))).collect()
    };
    let mut overhead = BarChart::new("overhead: payload goodput / bytes on the wire")
        .y_label("overhead (%)")
        .y_range(0.0, 100.0)
        .group("compared transports", bars(&main, |r| 100.0 * r.overhead));
    let mut backlog = BarChart::new("total in-flight backlog, mean Σ R(t) − W(t)")
        .y_label("backlog (MB)")
        .group(
            "compared transports",
            bars(&main, |r| r.backlog_bytes / 1e6),
        );
    if !vars.is_empty() {
        overhead = overhead.group("sensitivity variants", bars(&vars, |r| 100.0 * r.overhead));
        backlog = backlog.group(
            "sensitivity variants",
            bars(&vars, |r| r.backlog_bytes / 1e6),
        );
    }
    let shown: Vec<&FairnessRow> = main.iter().chain(&vars).copied().collect();
    let fig = Figure::new(format!("Table 1 ({})", setup(&shown)), 2)
        .panel_size(600, 420)
        .panel(overhead)
        .panel(backlog);
    o.svg("table1.svg", &fig)
}

#[cfg(test)]
mod tests {
    use super::super::fairness::FairnessRun;
    use super::super::{transport, transports};
    use super::*;

    fn run(t: &str, seed: u64, jain: f64) -> FairnessRun {
        FairnessRun {
            transport: t.into(),
            seed,
            jain,
            jain_maxmin: (jain + 0.05).min(1.0),
            overhead: 0.9,
            overhead_per_hop: 2.7,
            backlog: 2e6,
            queue_cells_median: 10.0,
            goodput: 1e6,
            min_rate: 1e3,
            max_rate: 1e5,
            rates: vec![1e3, 1e5],
            wire_bytes: 1 << 30,
            events: 1000,
            wall_s: 1.0,
            corrupt: 0,
        }
    }

    fn row(t: &super::super::Transport, n: usize) -> FairnessRow {
        FairnessRow {
            transport: t.key.into(),
            label: t.label.into(),
            refill: t.refill.label(),
            main: t.main,
            runs: n,
            jain_median: 0.8,
            jain_p10: 0.7,
            backtap_gap_ci90: None,
            jain_min: 0.6,
            jain_maxmin_median: 0.85,
            overhead: 0.9,
            overhead_per_hop: 2.7,
            backlog_bytes: 2e6,
            queue_cells_median: 10.0,
            goodput: 1e6,
        }
    }

    #[test]
    fn fig6a_writes_svgs() {
        let mut ts = transports();
        ts.push(transport("backtap-100ms").expect("a variant"));
        let mut out = FairnessOut::default();
        for (i, t) in ts.iter().enumerate() {
            for s in 1..=4u64 {
                out.runs
                    .push(run(t.key, s, 0.6 + 0.05 * i as f64 + 0.02 * s as f64));
            }
            out.rows.push(row(t, 4));
        }
        let dir = std::env::temp_dir().join(format!("hopwise-fig6a-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut o = Outputs::new(&dir);
        fig6a(&super::super::Plan::quick(None), &out, &mut o).unwrap();
        let files = o.files();
        assert_eq!(
            files,
            [
                "fig6a_jain_cdf.svg",
                "fig6a_jain_cdf_variants.svg",
                "table1.svg"
            ]
        );
        for f in files {
            let svg = std::fs::read_to_string(dir.join(f)).unwrap();
            assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{f}");
            assert!(svg.contains("</svg>"), "{f}");
            assert!(!svg.contains("class=\"no-data\""), "{f}");
        }
        let main = std::fs::read_to_string(dir.join("fig6a_jain_cdf.svg")).unwrap();
        assert!(main.contains("BackTap (4 runs)") && main.contains("vanilla Tor"));
        assert!(!main.contains("100 ms refill"));
        let vars = std::fs::read_to_string(dir.join("fig6a_jain_cdf_variants.svg")).unwrap();
        assert!(vars.contains("BackTap, 100 ms refill") && vars.contains("BackTap (4 runs)"));
        assert!(!vars.contains("PCTCP"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn variants_share_their_base_colour() {
        assert_eq!(base_of("backtap-100ms"), "backtap");
        assert_eq!(base_of("n23-edge"), "n23");
        assert_eq!(base_of("vanilla-10ms"), "vanilla");
        assert_eq!(base_of("tor-vegas"), "tor-vegas");
        assert_eq!(color("backtap-1ms"), color("backtap"));
        assert_ne!(color("backtap"), color("vanilla"));
    }
}
