//! The lab's figures and CSVs: goodput per mode, A→B's RTT and B's queue,
//! the phase-2 goodput towards B beside the simulator's.

use super::{Options, Results};
use crate::overlay_ack::outputs::dp;
use crate::overlay_ack::RunResult;
use hopwise_experiment::Outputs;
use hopwise_lab::kstats::kernel_release;
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;

const FLOW_NAMES: [&str; 4] = ["A→B", "B→A", "B→C", "C→B"];

fn flows(r: &RunResult) -> [&Vec<f64>; 4] {
    [&r.ab, &r.ba, &r.bc, &r.cb]
}

/// A row of `goodput.csv`: one flow's goodput in one 1 s bin.
#[derive(Serialize, Default)]
struct GoodputRow {
    /// "kernel" or "simulator" (its first run).
    source: &'static str,
    mode: &'static str,
    flow: &'static str,
    time_s: usize,
    bps: f64,
}

/// A row of `queues.csv`: the kernel's queue at B's uplink or the switch
/// port towards B.
#[derive(Serialize, Default)]
struct QueueRow {
    mode: &'static str,
    queue: &'static str,
    time_s: f64,
    bytes: u64,
}

/// A row of `rtt.csv`: A→B's smoothed RTT.
#[derive(Serialize, Default)]
struct RttRow {
    source: &'static str,
    mode: &'static str,
    time_s: f64,
    ab_srtt_ms: f64,
}

pub(super) fn write(opts: &Options, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let tl = opts.timeline();
    let kernel_runs = || r.runs.iter().map(|(rr, _)| ("kernel", rr));
    let sim_runs = || r.sim_first.iter().map(|rr| ("simulator", rr));

    // Figures: goodput per mode (kernel), A→B's RTT and B's queue, and the
    // phase-2 goodput towards B beside the simulator's.
    let mbit = |s: &[f64]| -> Vec<(f64, f64)> {
        s.iter()
            .enumerate()
            .map(|(t, &v)| (t as f64 + 0.5, v / 1e6))
            .collect()
    };
    let mut fig = Figure::new(
        format!(
            "Kernel TCP ({}, Linux {}): goodput per flow, 1 s bins; A→B {:.0}–{:.0} s, B→C {:.0}–{:.0} s",
            opts.cc,
            kernel_release(),
            tl.ab.0,
            tl.ab.1,
            tl.bc.0,
            tl.bc.1
        ),
        2,
    );
    // One y range for every panel, so that modes compare at a glance
    // (bins above the link rate: bytes released at once when a
    // retransmission fills a hole).
    let top = r
        .runs
        .iter()
        .flat_map(|(rr, _)| flows(rr))
        .flat_map(|s| s.iter())
        .fold(10e6_f64, |a, &b| a.max(b))
        / 1e6;
    for (rr, _) in &r.runs {
        let mut c = Chart::new(rr.mode.name())
            .x_label("time (s)")
            .y_label("goodput (Mbit/s)")
            .x_range(0.0, tl.duration)
            .y_range(0.0, top.ceil());
        for (name, s) in FLOW_NAMES.iter().zip(flows(rr)) {
            if s.iter().any(|&v| v > 0.0) {
                c.push_series(Series::line(name.to_string(), mbit(s)));
            }
        }
        fig = fig.panel(c);
    }
    out.svg("goodput.svg", &fig)?;
    let mut rtt = Chart::new("A→B's smoothed RTT (kernel, from ss)")
        .x_label("time (s)")
        .y_label("SRTT (s)")
        .x_range(0.0, tl.duration);
    let mut queue = Chart::new("B's uplink queue (kernel; with ACKs first, both classes together)")
        .x_label("time (s)")
        .y_label("occupancy (MB)")
        .x_range(0.0, tl.duration);
    for (rr, kr) in &r.runs {
        rtt.push_series(Series::line(
            rr.mode.name(),
            rr.ab_srtt.iter().map(|&(t, ms)| (t, ms / 1e3)).collect(),
        ));
        queue.push_series(Series::line(
            rr.mode.name(),
            kr.queues.iter().map(|q| (q.0, q.1 as f64 / 1e6)).collect(),
        ));
    }
    out.svg(
        "rtt.svg",
        &Figure::new("A→B's RTT and B's uplink queue, per mode", 1)
            .panel(rtt)
            .panel(queue),
    )?;
    let mut bars = BarChart::new(format!(
        "Mean goodput per flow towards B, {:.0}–{:.0} s (kernel: one run per mode{})",
        tl.phase2().0,
        tl.phase2().1,
        if r.simulator.is_empty() {
            String::new()
        } else {
            format!("; simulator: {} runs", r.simulator_runs)
        }
    ))
    .y_label("goodput (Mbit/s)")
    .x_label("mode");
    for src in [&r.modes, &r.simulator] {
        if let Some(first) = src.first() {
            bars = bars.group(
                first.source,
                src.iter()
                    .map(|s| (s.mode.to_string(), s.towards_b_phase2_bps / 1e6))
                    .collect(),
            );
        }
    }
    out.svg("modes.svg", &bars)?;

    // CSVs.
    let rows: Vec<GoodputRow> = kernel_runs()
        .chain(sim_runs())
        .flat_map(|(source, rr)| {
            FLOW_NAMES.iter().zip(flows(rr)).flat_map(move |(flow, s)| {
                s.iter().enumerate().map(move |(t, &v)| GoodputRow {
                    source,
                    mode: rr.mode.name(),
                    flow,
                    time_s: t,
                    bps: dp(v, 0),
                })
            })
        })
        .collect();
    out.csv("goodput.csv", &rows)?;
    let rows: Vec<QueueRow> = r
        .runs
        .iter()
        .flat_map(|(rr, kr)| {
            kr.queues.iter().flat_map(move |&(t, up, port)| {
                [("b_uplink", up), ("switch_to_b", port)].map(|(queue, bytes)| QueueRow {
                    mode: rr.mode.name(),
                    queue,
                    time_s: dp(t, 3),
                    bytes,
                })
            })
        })
        .collect();
    out.csv("queues.csv", &rows)?;
    let rows: Vec<RttRow> = kernel_runs()
        .chain(sim_runs())
        .flat_map(|(source, rr)| {
            rr.ab_srtt.iter().map(move |&(t, v)| RttRow {
                source,
                mode: rr.mode.name(),
                time_s: dp(t, 3),
                ab_srtt_ms: dp(v, 1),
            })
        })
        .collect();
    out.csv("rtt.csv", &rows)?;
    // Both sources' statistics: the rows summary.json's `modes` and
    // `simulator` hold.
    let rows: Vec<super::Stats> = r.modes.iter().chain(&r.simulator).cloned().collect();
    out.csv("modes.csv", &rows)?;
    out.data(&["goodput.svg"], &["goodput.csv"]);
    out.data(&["rtt.svg"], &["rtt.csv", "queues.csv"]);
    out.data(&["modes.svg"], &["modes.csv"]);
    Ok(())
}
