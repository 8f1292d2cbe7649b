//! Fig. 3–5: ACK compression against the data pendulum on the symmetric
//! link (four deterministic runs), and how much symmetry ACK compression
//! needs (a sweep of the upload endpoint's delay and start).

use super::setup::{
    endpoint_series, goodput_between, hist_median, hist_sum, iface, queue_series, secs, sender,
    simulate, Setup, DOWN_IFACE, UP_IFACE,
};
use super::{Plan, Results};
use hopwise_experiment::stats::{self, correlation};
use hopwise_experiment::Ctx;
use hopwise_proto::time::Dur;
use hopwise_sim::Sim;
use serde::Serialize;

/// One symmetric ACK-compression case.
#[derive(Clone, Debug, Serialize)]
pub struct AckCase {
    pub case: String,
    pub figure: String,
    pub delayed_ack: bool,
    pub download_endpoint_delay_ms: f64,
    pub upload_endpoint_delay_ms: f64,
    /// Median run of consecutive pure ACKs between data packets, over both bottleneck queues.
    pub median_burst: Option<u64>,
    pub median_burst_downlink: Option<u64>,
    pub median_burst_uplink: Option<u64>,
    /// Pearson correlation of the two bottleneck queues' occupancy (bytes),
    /// sampled every `trace_ms` after the first 5 s.
    pub queue_correlation: Option<f64>,
    pub trace_ms: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub mean_queue_down_bytes: f64,
    pub mean_queue_up_bytes: f64,
    /// `histogram_*[n]` = runs of exactly `n` ACKs.
    pub histogram_downlink: Vec<u64>,
    pub histogram_uplink: Vec<u64>,
}

/// Symmetric setup for the ACK-compression cases.
pub fn ack_setup(secs: u64, delayed_ack: bool, upload_delay: Dur) -> Setup {
    let mut s = Setup::symmetric(Dur::from_secs(secs));
    s.delayed_ack = delayed_ack;
    s.u_delay = upload_delay;
    s.trace_interval = Dur::from_millis(5);
    s
}

/// Seconds skipped before measuring queue correlation in the symmetric runs.
pub(super) const ACK_WARM: f64 = 5.0;

/// Measures an ACK-compression run.
pub fn ack_measure(sim: &Sim, s: &Setup, case: &str, figure: &str) -> AckCase {
    let end = secs(s.duration) + 1.0;
    let hd = &sim.iface(iface(sim, DOWN_IFACE)).stats().ack_bursts;
    let hu = &sim.iface(iface(sim, UP_IFACE)).stats().ack_bursts;
    let qd: Vec<f64> = queue_series(sim, DOWN_IFACE, ACK_WARM, end)
        .iter()
        .map(|p| p.1)
        .collect();
    let qu: Vec<f64> = queue_series(sim, UP_IFACE, ACK_WARM, end)
        .iter()
        .map(|p| p.1)
        .collect();
    AckCase {
        case: case.into(),
        figure: figure.into(),
        delayed_ack: s.delayed_ack,
        download_endpoint_delay_ms: s.d_delay.as_millis_f64(),
        upload_endpoint_delay_ms: s.u_delay.as_millis_f64(),
        median_burst: hist_median(&hist_sum(hd, hu)),
        median_burst_downlink: hist_median(hd),
        median_burst_uplink: hist_median(hu),
        queue_correlation: correlation(&qd, &qu),
        trace_ms: s.trace_interval.as_millis_f64(),
        download_bps: goodput_between(sim, 0, ACK_WARM, secs(s.duration)),
        upload_bps: goodput_between(sim, 1, ACK_WARM, secs(s.duration)),
        mean_queue_down_bytes: stats::mean(&qd),
        mean_queue_up_bytes: stats::mean(&qu),
        histogram_downlink: hd.clone(),
        histogram_uplink: hu.clone(),
    }
}

/// The four symmetric cases: (name, figure, delayed ACKs, upload endpoint delay).
pub const ACK_CASES: [(&str, &str, bool, u64); 4] = [
    ("equal delays, no delayed ACKs", "Fig. 3", false, 1),
    ("equal delays, delayed ACKs", "Fig. 4", true, 1),
    ("1 ms / 5 ms, no delayed ACKs", "Fig. 5", false, 5),
    ("1 ms / 5 ms, delayed ACKs", "Fig. 5 (variant)", true, 5),
];

/// One case's time series, for the figures: the senders' cwnd and data in
/// flight, the two bottleneck queues.
#[derive(Clone, Debug, Default)]
pub struct AckPlot {
    pub cwnd_d: Vec<(f64, f64)>,
    pub pipe_d: Vec<(f64, f64)>,
    pub cwnd_u: Vec<(f64, f64)>,
    pub pipe_u: Vec<(f64, f64)>,
    pub q_d: Vec<(f64, f64)>,
    pub q_u: Vec<(f64, f64)>,
}

/// Runs the four cases of [`ACK_CASES`].
pub(super) fn run_cases(
    plan: &Plan,
    ctx: &Ctx<'_, Results>,
) -> anyhow::Result<(Vec<AckCase>, Vec<AckPlot>)> {
    ctx.progress.start("Fig. 3-5", ACK_CASES.len() as u64);
    let secs_run = plan.ack_secs;
    let res = ctx.par_map(ACK_CASES.to_vec(), |(name, fig, delack, ud)| {
        let s = ack_setup(secs_run, delack, Dur::from_millis(ud));
        let sim = simulate(&s, name)?;
        let m = ack_measure(&sim, &s, name, fig);
        let end = secs(s.duration) + 1.0;
        let (d, u) = (sender(&sim, 0), sender(&sim, 1));
        let p = AckPlot {
            cwnd_d: endpoint_series(&sim, d, |r| r.cwnd, 0.0, end),
            pipe_d: endpoint_series(&sim, d, |r| r.pipe, 0.0, end),
            cwnd_u: endpoint_series(&sim, u, |r| r.cwnd, 0.0, end),
            pipe_u: endpoint_series(&sim, u, |r| r.pipe, 0.0, end),
            q_d: queue_series(&sim, DOWN_IFACE, 0.0, end),
            q_u: queue_series(&sim, UP_IFACE, 0.0, end),
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

/// Sensitivity of ACK compression to the symmetry of the setup (a row of
/// `ack_sensitivity.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SensRow {
    pub delayed_ack: bool,
    pub upload_endpoint_delay_ms: f64,
    /// The upload starts this much after the download.
    pub upload_start_offset_ms: f64,
    pub median_burst: Option<u64>,
    pub queue_correlation: Option<f64>,
}

impl SensRow {
    /// A run with both endpoints equally far and both flows starting together.
    pub(super) fn equal_delays(&self) -> bool {
        self.upload_start_offset_ms == 0.0 && self.upload_endpoint_delay_ms == 1.0
    }
    /// A run with the upload endpoint farther away and both flows starting together.
    pub(super) fn unequal_delays(&self) -> bool {
        self.upload_start_offset_ms == 0.0 && self.upload_endpoint_delay_ms > 1.0
    }
}

/// The sweep: the upload endpoint 1 to 5 ms from its router (the download
/// endpoint 1 ms), and equal delays with the upload starting later.
pub(super) fn run_sensitivity(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Vec<SensRow>> {
    let mut items = Vec::new();
    for delack in [false, true] {
        for us in [1000u64, 1020, 1050, 1100, 1200, 1500, 2000, 3000, 5000] {
            items.push((delack, us, 0u64));
        }
        for off in [10u64, 50, 100] {
            items.push((delack, 1000, off));
        }
    }
    ctx.progress.start("ACK sensitivity", items.len() as u64);
    let secs_run = plan.ack_secs;
    let res = ctx.par_map(items, |(delack, us, off)| {
        let mut s = ack_setup(secs_run, delack, Dur::from_micros(us));
        s.trace_interval = Dur::from_millis(10);
        s.uploads = vec![(Dur::from_millis(off), None)];
        let sim = simulate(&s, "sensitivity")?;
        let m = ack_measure(&sim, &s, "", "");
        anyhow::Ok(SensRow {
            delayed_ack: delack,
            upload_endpoint_delay_ms: us as f64 / 1000.0,
            upload_start_offset_ms: off as f64,
            median_burst: m.median_burst,
            queue_correlation: m.queue_correlation,
        })
    });
    ctx.progress.finish();
    res.into_iter().collect()
}
