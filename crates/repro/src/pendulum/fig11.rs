//! Fig. 11: buffers counted in packets (the downlink 50, the uplink 5 to
//! 50), TCP buffers of 256 KiB, with and without delayed ACKs.

use super::fig10::{aggregate, run_pair, sweep_setup, PairRun};
use super::setup::Setup;
use super::{Plan, Results};
use hopwise_experiment::Ctx;
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// TCP buffers in Fig. 11 (the paper: 256 KB).
pub const FIG11_TCP_BUFFER: u64 = 256 << 10;
/// Fig. 11's downlink buffer, packets.
pub const FIG11_DOWN_PACKETS: u64 = 50;

/// One point of Fig. 11 (a row of `fig11.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig11Row {
    pub tp_ms: u64,
    pub up_buffer_packets: u64,
    pub delayed_ack: bool,
    pub r_sim: f64,
    pub r_sim_min: f64,
    pub r_sim_max: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub runs: u32,
    /// The runs themselves, for the claims' intervals.
    #[serde(skip)]
    pub per_run: Vec<PairRun>,
}

pub fn fig11_setup(up_packets: u64, delayed_ack: bool, tp_ms: u64, secs: u64, seed: u64) -> Setup {
    let mut s = sweep_setup(
        Limit::Packets(FIG11_DOWN_PACKETS),
        Limit::Packets(up_packets),
        tp_ms,
        secs,
        seed,
    );
    s.delayed_ack = delayed_ack;
    s.tcp_buffer = FIG11_TCP_BUFFER;
    s
}

/// Runs the grid of [`Plan`]: every (T_p, delayed ACKs, B_u) with
/// `fig11_seeds` runs.
pub(super) fn run(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Vec<Fig11Row>> {
    let mut items = Vec::new();
    for &tp in &plan.fig11_tp_ms {
        for delack in [true, false] {
            for &bu in &plan.fig11_up_packets {
                for seed in 1..=plan.fig11_seeds as u64 {
                    items.push((tp, delack, bu, seed));
                }
            }
        }
    }
    ctx.progress.start("Fig. 11", items.len() as u64);
    let secs_run = plan.fig11_secs;
    let res = ctx.par_map(items.clone(), |(tp, delack, bu, seed)| {
        run_pair(&fig11_setup(bu, delack, tp, secs_run, seed), "fig11")
    });
    ctx.progress.finish();
    let res: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let n = plan.fig11_seeds as usize;
    Ok(res
        .chunks(n)
        .zip(items.chunks(n))
        .map(|(chunk, key)| {
            let (tp, delack, bu, _) = key[0];
            let a = aggregate(chunk);
            Fig11Row {
                tp_ms: tp,
                up_buffer_packets: bu,
                delayed_ack: delack,
                r_sim: a.r,
                r_sim_min: a.r_min,
                r_sim_max: a.r_max,
                download_bps: a.xd,
                upload_bps: a.xu,
                downlink_utilization: a.util_d,
                uplink_utilization: a.util_u,
                runs: chunk.len() as u32,
                per_run: chunk.to_vec(),
            }
        })
        .collect())
}
