//! Fig. 6–9: the asymmetric link with 9000 B and 30 000 B uplink buffers,
//! one deterministic run each: the data pendulum and the underused downlink.

use super::setup::{
    endpoint_series, goodput_between, hist_median, iface, queue_fraction, queue_series, sender,
    simulate, window, Setup, DOWN_IFACE, UP_IFACE,
};
use super::{Plan, Results};
use hopwise_experiment::stats::correlation;
use hopwise_experiment::Ctx;
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct AsymCase {
    pub case: String,
    pub figure: String,
    pub down_buffer_bytes: u64,
    pub up_buffer_bytes: u64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub r_sim: f64,
    pub r_model: f64,
    /// Fraction of samples (10 ms) with the queue empty.
    pub downlink_queue_empty: f64,
    pub uplink_queue_empty: f64,
    pub median_burst_uplink: Option<u64>,
    pub median_burst_downlink: Option<u64>,
    pub queue_correlation: Option<f64>,
    pub histogram_uplink: Vec<u64>,
}

/// The cases: (name, figure, uplink buffer in bytes); the downlink buffer
/// is 30 000 B.
const CASES: [(&str, &str, u64); 2] = [
    ("9000 B up / 30 000 B down", "Fig. 6-7", 9_000),
    ("30 000 B up / 30 000 B down", "Fig. 8-9", 30_000),
];
const DOWN_BUFFER: u64 = 30_000;

/// One case's last 30 s (ending 5 s before the end) for the figure: the
/// upload's and the download's cwnd, data in flight and queue, by name.
#[derive(Clone, Debug, Default)]
pub struct AsymPlot {
    pub up_lines: Vec<(&'static str, Vec<(f64, f64)>)>,
    pub down_lines: Vec<(&'static str, Vec<(f64, f64)>)>,
}

pub(super) fn run(
    plan: &Plan,
    ctx: &Ctx<'_, Results>,
) -> anyhow::Result<(Vec<AsymCase>, Vec<AsymPlot>)> {
    ctx.progress.start("Fig. 6-9", CASES.len() as u64);
    let total = plan.asym_secs;
    let warm = 10.0;
    let res = ctx.par_map(CASES.to_vec(), |(case, fig, bu)| {
        let mut s = Setup::asymmetric(
            Limit::Bytes(DOWN_BUFFER),
            Limit::Bytes(bu),
            Dur::ZERO,
            Dur::from_secs(total),
        );
        s.warmup = Dur::from_secs_f64(warm);
        let sim = simulate(&s, case)?;
        let end = total as f64;
        let sum = hopwise_sim::report::Summary::of(&sim, case, 0.0);
        let util = |i: usize| sum.links[i].utilization;
        let (xd, xu) = (
            goodput_between(&sim, 0, warm, end),
            goodput_between(&sim, 1, warm, end),
        );
        let hd = sim
            .iface(iface(&sim, DOWN_IFACE))
            .stats()
            .ack_bursts
            .clone();
        let hu = sim.iface(iface(&sim, UP_IFACE)).stats().ack_bursts.clone();
        let qd: Vec<f64> = queue_series(&sim, DOWN_IFACE, warm, end + 1.0)
            .iter()
            .map(|p| p.1)
            .collect();
        let qu: Vec<f64> = queue_series(&sim, UP_IFACE, warm, end + 1.0)
            .iter()
            .map(|p| p.1)
            .collect();
        let m = AsymCase {
            case: case.into(),
            figure: fig.into(),
            down_buffer_bytes: DOWN_BUFFER,
            up_buffer_bytes: bu,
            download_bps: xd,
            upload_bps: xu,
            downlink_utilization: util(DOWN_IFACE),
            uplink_utilization: util(UP_IFACE),
            r_sim: xd / xu,
            r_model: s.model().ratio(),
            downlink_queue_empty: queue_fraction(&sim, DOWN_IFACE, warm, end + 1.0, |q| q == 0.0),
            uplink_queue_empty: queue_fraction(&sim, UP_IFACE, warm, end + 1.0, |q| q == 0.0),
            median_burst_uplink: hist_median(&hu),
            median_burst_downlink: hist_median(&hd),
            queue_correlation: correlation(&qd, &qu),
            histogram_uplink: hu,
        };
        let (w0, w1) = window(end, 30.0);
        let (d, u) = (sender(&sim, 0), sender(&sim, 1));
        let p = AsymPlot {
            up_lines: vec![
                ("U2 cwnd", endpoint_series(&sim, u, |r| r.cwnd, w0, w1)),
                ("U2 in flight", endpoint_series(&sim, u, |r| r.pipe, w0, w1)),
                ("queue R2 (uplink)", queue_series(&sim, UP_IFACE, w0, w1)),
            ],
            down_lines: vec![
                ("D1 cwnd", endpoint_series(&sim, d, |r| r.cwnd, w0, w1)),
                ("D1 in flight", endpoint_series(&sim, d, |r| r.pipe, w0, w1)),
                (
                    "queue R1 (downlink)",
                    queue_series(&sim, DOWN_IFACE, w0, w1),
                ),
            ],
        };
        anyhow::Ok((m, p))
    });
    ctx.progress.finish();
    let mut cases = Vec::new();
    let mut plots = Vec::new();
    for r in res {
        let (m, p) = r?;
        cases.push(m);
        plots.push(p);
    }
    Ok((cases, plots))
}
