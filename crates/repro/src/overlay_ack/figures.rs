//! The figures: Fig. 2a–9 as the paper draws them, the dynamic split, and
//! the sensitivity study; with the CSVs of the single runs they show.

use super::analysis::{goodput_capacity, ModeStats};
use super::outputs::{dp, Selector};
use super::runs::SweepPoint;
use super::setup::{self, Mode, RunResult, Timeline};
use super::{Params, Results};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::Outputs;
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;

fn to_mbps(series: &[f64]) -> Vec<(f64, f64)> {
    series
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 + 0.5, v / 1e6))
        .collect()
}

type Points = Vec<(f64, f64)>;

/// Mean and 90 % CI of 10 s bins over runs: (points, band).
fn mean_band(runs: &[&RunResult], sel: Selector, duration: f64) -> (Points, Points) {
    let per: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| sel(r))
        .filter(|s| !s.is_empty())
        .map(|s| setup::bins(s, 10, duration))
        .collect();
    let mut pts = Vec::new();
    let mut band = Vec::new();
    if per.is_empty() {
        return (pts, band);
    }
    for k in 0..per[0].len() {
        let xs: Vec<f64> = per.iter().map(|b| b[k] / 1e6).collect();
        let (m, hw) = mean_ci90(&xs);
        let hw = if hw.is_nan() { 0.0 } else { hw };
        pts.push((k as f64 * 10.0 + 5.0, m));
        band.push((m - hw, m + hw));
    }
    (pts, band)
}

/// What starts at `tl.bc.0` in a chart of `flows`: the B–C connection
/// carries C→B too in the two-way modes, and a chart of the flows towards B
/// shows that direction.
fn bc_start_label(flows: &[(&str, Selector)]) -> &'static str {
    if flows.iter().any(|(name, _)| *name == "C→B") {
        "C→B starts"
    } else {
        "B→C starts"
    }
}

fn avg_chart(title: &str, runs: &[&RunResult], flows: &[(&str, Selector)], tl: &Timeline) -> Chart {
    let mut ch = Chart::new(title)
        .x_label("time (s)")
        .y_label(if runs.len() == 1 {
            "goodput (Mbit/s), 10 s bins"
        } else {
            "goodput (Mbit/s), mean ± 90 % CI"
        })
        .y_range(0.0, 11.0)
        .x_range(0.0, tl.duration);
    for (name, sel) in flows {
        let (p, b) = mean_band(runs, *sel, tl.duration);
        ch.push_series(Series::line_points(*name, p).with_band(b));
    }
    ch.vline(tl.bc.0, bc_start_label(flows))
        .vline(tl.ab.1, "A→B stops")
}

fn single_chart(title: &str, r: &RunResult, flows: &[(&str, Selector)], tl: &Timeline) -> Chart {
    let mut ch = Chart::new(title)
        .x_label("time (s)")
        .y_label("goodput (Mbit/s), 1 s bins")
        .x_range(0.0, tl.duration);
    for (name, sel) in flows {
        ch.push_series(Series::line(*name, to_mbps(sel(r))));
    }
    ch
}

/// A row of `fig2a.csv`: the plain run's 1 s bins.
#[derive(Serialize, Default)]
struct Fig2aRow {
    time_s: usize,
    ab_bps: f64,
    bc_bps: f64,
}

/// A row of `goodput_1s.csv`: the single runs of Fig. 7b, 8b and
/// `split_dynamic.svg` (b).
#[derive(Serialize, Default)]
struct SingleRow {
    mode: &'static str,
    seed: u64,
    flow: &'static str,
    bin_start_s: usize,
    bps: f64,
}

pub(super) fn write(plan: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let tl = &plan.base.timeline;
    let results = &r.runs;
    let of = |m: Mode| -> Vec<&RunResult> { results.iter().filter(|r| r.mode == m).collect() };
    let first = |m: Mode| results.iter().find(|r| r.mode == m);
    let ab: (&str, Selector) = ("A→B", |r| &r.ab);
    let bc: (&str, Selector) = ("B→C", |r| &r.bc);
    let cb: (&str, Selector) = ("C→B", |r| &r.cb);

    if let Some(r) = first(Mode::Plain) {
        // Fig. 2a: one run, 1 s bins.
        let ch = single_chart(
            &format!("Fig. 2a: goodput in one run (plain, seed {})", r.seed),
            r,
            &[ab, bc],
            tl,
        );
        let rows: Vec<Fig2aRow> = (0..r.ab.len().max(r.bc.len()))
            .map(|i| Fig2aRow {
                time_s: i,
                ab_bps: dp(r.ab.get(i).copied().unwrap_or(0.0), 0),
                bc_bps: dp(r.bc.get(i).copied().unwrap_or(0.0), 0),
            })
            .collect();
        out.csv("fig2a.csv", &rows)?;
        out.svg("fig2a.svg", &ch)?;
    }
    if !r.probe.is_empty() {
        fig2b(plan, r, out)?;
    }
    let fig_avg = |title: &str, m: Mode, flows: &[(&str, Selector)]| -> Option<Chart> {
        let rs = of(m);
        (!rs.is_empty()).then(|| avg_chart(title, &rs, flows, tl))
    };
    let n = plan.runs;
    let mean_of = if n == 1 {
        "one run".to_string()
    } else {
        format!("mean of {n} runs")
    };
    if let Some(ch) = fig_avg(&format!("Fig. 3: plain, {mean_of}"), Mode::Plain, &[ab, bc]) {
        out.svg("fig3.svg", &ch)?;
    }
    {
        let mut f = Figure::new("Fig. 5: ACKs first at B (unidirectional transfers)", 1);
        let mut any = false;
        for (m, t) in [
            (Mode::AckPrio, "ackprio (no-payload classifier)"),
            (
                Mode::AckPrioLen64,
                "ackprio-len64 (the paper's < 64 B classifier)",
            ),
        ] {
            if let Some(ch) = fig_avg(&format!("{t}, {mean_of}"), m, &[ab, bc]) {
                f.push_panel(ch);
                any = true;
            }
        }
        if any {
            out.svg("fig5.svg", &f.panel_size(900, 360))?;
        }
    }
    if let Some(ch) = fig_avg(
        &format!("Fig. 6: bidirectional connections, plain FIFOs, flows towards B, {mean_of}"),
        Mode::Bidir,
        &[ab, cb],
    ) {
        out.svg("fig6.svg", &ch)?;
    }
    // The single runs of Fig. 7b, 8b and split_dynamic (b), 1 s bins.
    let mut single_rows: Vec<SingleRow> = Vec::new();
    let mut single = |r: &RunResult, flows: &[(&'static str, Selector)]| {
        for (name, sel) in flows {
            for (i, v) in sel(r).iter().enumerate() {
                single_rows.push(SingleRow {
                    mode: r.mode.name(),
                    seed: r.seed,
                    flow: name,
                    bin_start_s: i,
                    bps: dp(*v, 0),
                });
            }
        }
    };
    for (file, title, m) in [
        (
            "fig7.svg",
            "Fig. 7: bidirectional connections with ACKs first at B",
            Mode::BidirAckPrio,
        ),
        (
            "fig8.svg",
            "Fig. 8: one connection per direction, ACKs first at B",
            Mode::SplitAckPrio,
        ),
    ] {
        if let (Some(a), Some(r)) = (
            fig_avg(&format!("(a) flows towards B, {mean_of}"), m, &[ab, cb]),
            first(m),
        ) {
            let b = single_chart(&format!("(b) one run (seed {}), A→B", r.seed), r, &[ab], tl);
            single(r, &[ab]);
            let f = Figure::new(title, 1).panel(a).panel(b).panel_size(900, 360);
            out.svg(file, &f)?;
        }
    }
    if let (Some(a), Some(r)) = (
        fig_avg(
            &format!("(a) flows towards B, {mean_of}"),
            Mode::SplitDynamic,
            &[ab, cb],
        ),
        first(Mode::SplitDynamic),
    ) {
        let mut b = single_chart(
            &format!(
                "(b) one run (seed {}) with the policy's splits and merges",
                r.seed
            ),
            r,
            &[ab, cb],
            tl,
        );
        single(r, &[ab, cb]);
        for e in &r.events {
            b = b.vline(e.t, format!("{} {:?}", e.pair, e.kind).to_lowercase());
        }
        let f = Figure::new("§VI: dynamic split (ACKs first at B)", 1)
            .panel(a)
            .panel(b)
            .panel_size(900, 360);
        out.svg("split_dynamic.svg", &f)?;
    }
    if !single_rows.is_empty() {
        out.csv("goodput_1s.csv", &single_rows)?;
    }
    {
        // Fig. 9: variance of the 10 s samples towards B, per mode.
        let bars: Vec<(String, f64)> = r
            .modes
            .iter()
            .map(|s| (s.mode.to_string(), s.var_10s))
            .collect();
        let ch = BarChart::new(format!(
            "Fig. 9: variance of 10 s goodput samples towards B, {:.0}–{:.0} s",
            tl.var_window().0,
            tl.var_window().1
        ))
        .y_label("variance ((Mbit/s)²)")
        .group("var_10s", bars)
        .size(900, 400);
        out.svg("fig9.svg", &ch)?;
    }
    if !r.sensitivity.is_empty() {
        out.svg("sensitivity.svg", &sensitivity(plan, &r.sensitivity))?;
    }
    Ok(())
}

/// Fig. 2b: A's sequence and ACK numbers per packet (from the capture),
/// plus what drives them (sampled every 5 ms).
fn fig2b(plan: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let tl = &plan.base.timeline;
    let (probe, trace) = (&r.probe, &r.trace);
    let mb = |v: &[(f64, f64)]| v.iter().map(|&(t, b)| (t, b / 1e6)).collect::<Vec<_>>();
    // Timeouts, from the sampled counter, at the cumulative ACK then.
    let ack_at = |t: f64| {
        let i = trace.acks.partition_point(|a| a.0 <= t);
        i.checked_sub(1).map_or(0.0, |i| trace.acks[i].1 / 1e6)
    };
    let rto: Vec<(f64, f64)> = probe
        .windows(2)
        .filter(|w| w[1].timeouts > w[0].timeouts)
        .map(|w| (w[1].t, ack_at(w[1].t)))
        .collect();
    // A legend entry for what happened only: "no data" would read as
    // a gap in the capture.
    let mut seq = Chart::new(if rto.is_empty() {
        "(a) A→B time-sequence graph at A's link, every packet; no timeouts in this window"
    } else {
        "(a) A→B time-sequence graph at A's link, every packet"
    })
    .x_label("time (s)")
    .y_label("stream offset (MB)")
    .series(Series::line("data segment sent (end)", mb(&trace.sent)))
    .series(Series::line("ACK towards A", mb(&trace.acks)));
    if !trace.retx.is_empty() {
        seq.push_series(Series::points("retransmitted segment", mb(&trace.retx)));
    }
    if !rto.is_empty() {
        seq.push_series(Series::points("timeout (RTO)", rto));
    }
    let seq = seq.vline(tl.bc.0, "B→C starts");
    let rtt = Chart::new("(b) A→B: smoothed RTT and congestion window")
        .x_label("time (s)")
        .y_label("SRTT (s) / cwnd (MB)")
        .series(Series::line(
            "SRTT (s)",
            probe.iter().map(|p| (p.t, p.srtt_ms / 1000.0)).collect(),
        ))
        .series(Series::line(
            "cwnd (MB)",
            probe.iter().map(|p| (p.t, p.cwnd as f64 / 1e6)).collect(),
        ));
    let q = Chart::new("(c) queues on A→B's path")
        .x_label("time (s)")
        .y_label("packets queued")
        .series(Series::line(
            "B's egress (B→C data + A→B ACKs)",
            probe.iter().map(|p| (p.t, p.q_b as f64)).collect(),
        ))
        .series(Series::line(
            "A's egress",
            probe.iter().map(|p| (p.t, p.q_a as f64)).collect(),
        ))
        .series(Series::line(
            "switch → B",
            probe.iter().map(|p| (p.t, p.q_sw_b as f64)).collect(),
        ));
    let fig = Figure::new(
        "Fig. 2b: A→B in the 30 s after B→C starts (plain, seed 1)",
        1,
    )
    .panel(seq)
    .panel(rtt)
    .panel(q)
    .panel_size(900, 330);
    out.svg("fig2b.svg", &fig)
}

/// The sensitivity study: the three quantities the claims judge, per
/// configuration.
fn sensitivity(plan: &Params, sweep: &[SweepPoint]) -> Figure {
    let label = |p: &SweepPoint| p.variant.clone();
    let per = |m: Mode, f: &dyn Fn(&ModeStats) -> f64| -> Vec<(String, f64)> {
        sweep
            .iter()
            .filter_map(|p| p.mode(m).map(|s| (label(p), f(s))))
            .collect()
    };
    let fair = goodput_capacity(&plan.base) / 2.0;
    let a = BarChart::new("(a) A→B phase 2 / phase 1 (Fig. 3: about 0.67; must show ≤ 0.8)")
        .y_label("ratio")
        .group(
            "plain",
            per(Mode::Plain, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
        )
        .group(
            "ackprio",
            per(Mode::AckPrio, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
        )
        .group(
            "ackprio-len64",
            per(Mode::AckPrioLen64, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
        );
    let b = BarChart::new(
        "(b) flows towards B in phase 2 / fair share (Fig. 6: about 0.33; Fig. 7a: about 1)",
    )
    .y_label("fraction of the fair share")
    .group(
        "bidir",
        per(Mode::Bidir, &|s| s.towards_b_phase2_bps / fair),
    )
    .group(
        "bidir-ackprio",
        per(Mode::BidirAckPrio, &|s| s.towards_b_phase2_bps / fair),
    )
    .group(
        "split-ackprio",
        per(Mode::SplitAckPrio, &|s| s.towards_b_phase2_bps / fair),
    );
    let c = BarChart::new("(c) var_10s of the flows towards B (Fig. 9)")
        .y_label("variance ((Mbit/s)²)")
        .group("bidir-ackprio", per(Mode::BidirAckPrio, &|s| s.var_10s))
        .group("split-ackprio", per(Mode::SplitAckPrio, &|s| s.var_10s))
        .group("split-dynamic", per(Mode::SplitDynamic, &|s| s.var_10s));
    Figure::new("Sensitivity to the parameters the paper does not state", 1)
        .panel(a)
        .panel(b)
        .panel(c)
        .panel_size(1000, 380)
}
