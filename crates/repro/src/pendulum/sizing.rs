//! The sizing helper in use: the uplink buffer that Eq. 11 says gives
//! r = k (both links full), simulated.

use super::fig10::{aggregate, run_pair, sweep_setup, PairRun};
use super::{Plan, Results};
use hopwise_experiment::Ctx;
use hopwise_sim::spec::Limit;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Sizing {
    pub tp_ms: u64,
    pub down_buffer_bytes: u64,
    pub target_r: f64,
    pub up_buffer_bytes: u64,
    pub r_sim: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
}

/// Sizes the uplink buffer for T_p = 100 ms and B_d = 60 kB, then runs it
/// as long and as often as a Fig. 10 point.
pub(super) fn run(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Sizing> {
    let (tp, bd) = (100, 60_000);
    let base = sweep_setup(Limit::Bytes(bd), Limit::Bytes(1), tp, plan.fig10_secs, 1);
    let p = base.model();
    let target = p.capacity_ratio();
    let bu = p
        .up_buffer_for_ratio(target)
        .map_err(|e| anyhow::anyhow!("sizing: {e}"))?
        .round() as u64;
    let seeds: Vec<u64> = (1..=plan.fig10_seeds as u64).collect();
    ctx.progress.start("sizing", seeds.len() as u64);
    let res = ctx.par_map(seeds, |seed| {
        run_pair(
            &sweep_setup(
                Limit::Bytes(bd),
                Limit::Bytes(bu),
                tp,
                plan.fig10_secs,
                seed,
            ),
            "sizing",
        )
    });
    ctx.progress.finish();
    let runs: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let a = aggregate(&runs);
    Ok(Sizing {
        tp_ms: tp,
        down_buffer_bytes: bd,
        target_r: target,
        up_buffer_bytes: bu,
        r_sim: a.r,
        download_bps: a.xd,
        upload_bps: a.xu,
        downlink_utilization: a.util_d,
        uplink_utilization: a.util_u,
    })
}
