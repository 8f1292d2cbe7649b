//! Fig. 10: the throughput ratio r = Xd/Xu of a download and an upload
//! against the uplink buffer, simulated (runs with seeded start offsets)
//! beside Eq. 6–11; and the long runs that Fig. 11, the sizing check and
//! the lab's comparisons share ([`run_pair`], [`sweep_setup`]).

use super::setup::{
    goodput_between, secs, sender, simulate, trace_mean, Setup, DOWN_IFACE, UP_IFACE,
};
use super::{Plan, Results};
use hopwise_experiment::{stats, Ctx};
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// One run of the Fig. 10 / Fig. 11 sweeps: goodputs (bit/s) and mean
/// windows (bytes) of the download and the upload after the warm-up, and
/// the two links' utilisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct PairRun {
    pub xd: f64,
    pub xu: f64,
    pub cwnd_d: f64,
    pub cwnd_u: f64,
    pub util_d: f64,
    pub util_u: f64,
}

/// Warm-up skipped in the long sweeps, seconds.
pub const SWEEP_WARM: f64 = 20.0;

/// Runs a download and an upload (a [`sweep_setup`]) and measures them
/// after [`SWEEP_WARM`].
pub fn run_pair(s: &Setup, name: &str) -> anyhow::Result<PairRun> {
    let sim = simulate(s, name)?;
    let end = secs(s.duration);
    let sum = hopwise_sim::report::Summary::of(&sim, name, 0.0);
    Ok(PairRun {
        xd: goodput_between(&sim, 0, SWEEP_WARM, end),
        xu: goodput_between(&sim, 1, SWEEP_WARM, end),
        cwnd_d: trace_mean(&sim, sender(&sim, 0), |r| r.cwnd, SWEEP_WARM, end),
        cwnd_u: trace_mean(&sim, sender(&sim, 1), |r| r.cwnd, SWEEP_WARM, end),
        util_d: sum.links[DOWN_IFACE].utilization,
        util_u: sum.links[UP_IFACE].utilization,
    })
}

/// A long asymmetric run for the sweeps: both flows start within the first
/// second (seeded jitter), coarse traces, warm-up of 20 s.
pub fn sweep_setup(down: Limit, up: Limit, tp_ms: u64, secs: u64, seed: u64) -> Setup {
    let mut s = Setup::asymmetric(down, up, Dur::from_millis(tp_ms), Dur::from_secs(secs));
    s.seed = seed;
    s.jitter = Dur::SECOND;
    s.warmup = Dur::from_secs_f64(SWEEP_WARM);
    s.trace_interval = Dur::from_millis(200);
    s
}

/// One point of Fig. 10 (a row of `fig10.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig10Row {
    pub tp_ms: u64,
    pub down_buffer_bytes: u64,
    pub up_buffer_bytes: u64,
    /// Σ download goodput / Σ upload goodput over the runs.
    pub r_sim: f64,
    pub r_sim_min: f64,
    pub r_sim_max: f64,
    /// Eq. 11 (exact form, ρ' = ρ/2 for delayed ACKs).
    pub r_model: f64,
    /// Eq. 6–10 solved numerically (equal to Eq. 11 unless a limit binds).
    pub r_model_fixed_point: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub cwnd_down_sim: f64,
    pub cwnd_up_sim: f64,
    pub cwnd_down_model: f64,
    pub cwnd_up_model: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub runs: u32,
    /// The runs themselves, for the claims' intervals.
    #[serde(skip)]
    pub per_run: Vec<PairRun>,
}

/// Means over the runs of one point.
pub struct Agg {
    pub xd: f64,
    pub xu: f64,
    /// Smallest and largest per-run ratio.
    pub r_min: f64,
    pub r_max: f64,
    pub cwnd_d: f64,
    pub cwnd_u: f64,
    pub util_d: f64,
    pub util_u: f64,
    /// Ratio of the mean goodputs.
    pub r: f64,
}

/// Means over the runs of one point (the ratio is of the means).
pub fn aggregate(runs: &[PairRun]) -> Agg {
    let m = |f: fn(&PairRun) -> f64| stats::mean(&runs.iter().map(f).collect::<Vec<_>>());
    let rs = runs.iter().map(|r| r.xd / r.xu);
    let (xd, xu) = (m(|r| r.xd), m(|r| r.xu));
    Agg {
        xd,
        xu,
        r_min: rs.clone().fold(f64::INFINITY, f64::min),
        r_max: rs.fold(f64::NEG_INFINITY, f64::max),
        cwnd_d: m(|r| r.cwnd_d),
        cwnd_u: m(|r| r.cwnd_u),
        util_d: m(|r| r.util_d),
        util_u: m(|r| r.util_u),
        r: xd / xu,
    }
}

/// Runs the grid of [`Plan`]: every (T_p, B_d, B_u) with `fig10_seeds` runs.
pub(super) fn run(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Vec<Fig10Row>> {
    let mut items = Vec::new();
    for &tp in &plan.fig10_tp_ms {
        for &bd in &plan.fig10_down_buffers {
            for &bu in &plan.fig10_up_buffers {
                for seed in 1..=plan.fig10_seeds as u64 {
                    items.push((tp, bd, bu, seed));
                }
            }
        }
    }
    ctx.progress.start("Fig. 10", items.len() as u64);
    let secs_run = plan.fig10_secs;
    let res = ctx.par_map(items.clone(), |(tp, bd, bu, seed)| {
        let s = sweep_setup(Limit::Bytes(bd), Limit::Bytes(bu), tp, secs_run, seed);
        run_pair(&s, "fig10")
    });
    ctx.progress.finish();
    let res: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let n = plan.fig10_seeds as usize;
    let mut rows = Vec::new();
    for (chunk, key) in res.chunks(n).zip(items.chunks(n)) {
        let (tp, bd, bu, _) = key[0];
        let model = sweep_setup(Limit::Bytes(bd), Limit::Bytes(bu), tp, secs_run, 1).model();
        let w = model.solve();
        let a = aggregate(chunk);
        rows.push(Fig10Row {
            tp_ms: tp,
            down_buffer_bytes: bd,
            up_buffer_bytes: bu,
            r_sim: a.r,
            r_sim_min: a.r_min,
            r_sim_max: a.r_max,
            r_model: model.ratio(),
            r_model_fixed_point: w.ratio,
            download_bps: a.xd,
            upload_bps: a.xu,
            cwnd_down_sim: a.cwnd_d,
            cwnd_up_sim: a.cwnd_u,
            cwnd_down_model: w.cwnd_down,
            cwnd_up_model: w.cwnd_up,
            downlink_utilization: a.util_d,
            uplink_utilization: a.util_u,
            runs: chunk.len() as u32,
            per_run: chunk.to_vec(),
        });
    }
    Ok(rows)
}

/// Eq. 11 on a fine grid of uplink buffers spanning `ups`.
pub(super) fn model_curve(tp: u64, bd: u64, ups: &[u64]) -> Vec<(f64, f64)> {
    let lo = ups.iter().copied().min().unwrap_or(1_000) as f64;
    let hi = ups.iter().copied().max().unwrap_or(60_000) as f64;
    (0..=100)
        .map(|i| {
            let bu = lo + (hi - lo) * i as f64 / 100.0;
            let mut p = sweep_setup(Limit::Bytes(bd), Limit::Bytes(1), tp, 1, 1).model();
            p.up_buffer = bu;
            (bu, p.ratio())
        })
        .collect()
}
