//! The otcp reproduction's CSVs (one row struct each, the rows of
//! summary.json) and figures.

use super::trace::BUDGETS;
use super::{Regime, Results, Table1Row};
use hopwise_experiment::Outputs;
use hopwise_plot::{Chart, Figure, Series};

pub(super) fn write(r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let (t1, sizes, pairs) = (&r.table1, &r.sizes, &r.pairs);
    let (budgets, selection) = (&r.trace.budgets, &r.trace.selection);
    out.csv("table1.csv", t1)?;
    out.csv("sizes.csv", sizes)?;
    out.csv("trace_budgets.csv", budgets)?;
    out.csv("selection.csv", selection)?;
    out.csv("pairs.csv", pairs)?;
    out.data(&["trace_reduction.svg"], &["trace_budgets.csv"]);

    // Table 1: goodput and gain by hop count.
    let mut rate = Chart::new("Goodput of a 4 MB transfer")
        .x_label("hops")
        .y_label("goodput (kbit/s)");
    let mut gain = Chart::new("Gain over the direct path")
        .x_label("direct RTT / path RTT")
        .y_label("goodput gain");
    for regime in Regime::ALL {
        let rows: Vec<&Table1Row> = t1.iter().filter(|r| r.regime == regime).collect();
        let name = regime.describe();
        rate.push_series(
            Series::line_points(
                name.clone(),
                rows.iter()
                    .map(|r| (r.hops as f64, r.goodput_kbps))
                    .collect(),
            )
            .with_error_bars(
                rows.iter()
                    .map(|r| (r.goodput_ci90_kbps, r.goodput_ci90_kbps))
                    .collect(),
            ),
        );
        gain.push_series(Series::line_points(
            name,
            rows.iter().map(|r| (r.rtt_ratio, r.gain)).collect(),
        ));
    }
    let paper: Vec<&Table1Row> = t1.iter().filter(|r| r.regime == Regime::Loss).collect();
    rate.push_series(Series::points(
        "paper (PlanetLab)",
        paper
            .iter()
            .map(|r| (r.hops as f64, r.paper_kbps))
            .collect(),
    ));
    gain.push_series(Series::points(
        "paper (PlanetLab)",
        paper.iter().map(|r| (r.rtt_ratio, r.paper_gain)).collect(),
    ));
    let hi = paper.iter().map(|r| r.rtt_ratio).fold(1.0, f64::max);
    gain.push_series(Series::line("gain = RTT ratio", vec![(1.0, 1.0), (hi, hi)]).dashed());
    out.svg(
        "table1.svg",
        &Figure::new(
            "Table 1: splitting a 75.7 ms path into pipelined TCP hops",
            2,
        )
        .panel(rate)
        .panel(gain),
    )?;

    // Transfer sizes.
    let mut sp = Chart::new("Transfer sizes: completion time, direct over split")
        .x_label("transfer size (bytes)")
        .y_label("speedup over the direct path")
        .log_x(true)
        .hline(1.0, "no gain");
    for hops in [2usize, 4] {
        let rows: Vec<(f64, f64)> = sizes
            .iter()
            .filter(|r| r.hops == hops)
            .map(|r| (r.size_bytes as f64, r.speedup))
            .collect();
        if let Some(r) = sizes.iter().find(|r| r.hops == hops) {
            sp.push_series(Series::line_points(
                format!("{hops} hops of {:.1} ms", r.path_rtt_ms),
                rows,
            ));
        }
    }
    out.svg("sizes.svg", &sp)?;

    // The trace: CDF of the path-RTT reduction per relay budget.
    let mut cdf = Chart::new("Synthetic trace: path-RTT reduction over all pairs")
        .x_label("1 - path RTT / direct RTT")
        .y_label("fraction of pairs")
        .y_range(0.0, 1.0);
    for ((b, r), row) in BUDGETS.iter().zip(&r.trace.reductions).zip(budgets) {
        let vals: Vec<f64> = r.iter().map(|x| x.0).collect();
        let name = match b {
            Some(1) => "1 relay".to_string(),
            Some(k) => format!("{k} relays"),
            None => "any number of relays".to_string(),
        };
        cdf.push_series(Series::cdf(
            format!("{name} (mean {:.0} %)", row.mean_reduction * 100.0),
            &vals,
        ));
    }
    out.svg("trace_reduction.svg", &cdf)?;

    // Selection strategies.
    let mut sel = Chart::new("Choosing one relay from a few probed candidates")
        .x_label("candidates probed")
        .y_label("share of the optimal relay's reduction")
        .log_x(true)
        .y_range(0.0, 1.05)
        .hline(1.0, "optimal (every node probed)");
    for s in ["cluster", "random"] {
        let pts: Vec<(f64, f64)> = selection
            .iter()
            .filter(|r| r.strategy == s)
            .map(|r| (r.probes as f64, r.share_of_optimal))
            .collect();
        let name = if s == "cluster" {
            "one per geographic cluster"
        } else {
            "random"
        };
        sel.push_series(Series::line_points(name, pts));
    }
    out.svg("selection.svg", &sel)?;

    // Pairs: measured gain against the RTT ratio.
    if !pairs.is_empty() {
        let hi = pairs
            .iter()
            .map(|p| p.rtt_ratio.max(p.gain))
            .fold(1.0, f64::max);
        out.svg(
            "pairs.svg",
            &Chart::new(
                "Trace pairs: measured gain against the path-RTT ratio (4 MB, random loss)",
            )
            .x_label("direct RTT / path RTT")
            .y_label("goodput gain")
            .series(Series::points(
                "pair (relay from 10 cluster representatives)",
                pairs.iter().map(|p| (p.rtt_ratio, p.gain)).collect(),
            ))
            .series(Series::line("gain = RTT ratio", vec![(1.0, 1.0), (hi, hi)]).dashed()),
        )?;
    }
    Ok(())
}
