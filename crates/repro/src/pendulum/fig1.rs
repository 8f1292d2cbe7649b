//! Fig. 1: a download on the asymmetric link collapses while one, then two
//! uploads run; one run per seed, each flow's start shifted by a seeded
//! amount.

use super::setup::{
    goodput_between, queue_series, receiver, secs, simulate, Setup, DOWN_IFACE, UP_IFACE,
};
use super::{Plan, Results};
use hopwise_experiment::{stats, Ctx};
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use hopwise_sim::Sim;
use serde::Serialize;

/// Fig. 1's measurement windows (seconds): after each change we skip 2 s.
pub(super) const FIG1_NONE: (f64, f64) = (12.0, 30.0);
pub(super) const FIG1_ONE: (f64, f64) = (32.0, 50.0);
pub(super) const FIG1_TWO: (f64, f64) = (62.0, 95.0);

/// One run's phase means (a row of `fig1_runs.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig1Run {
    pub seed: u64,
    pub download_bps_no_upload: f64,
    pub download_bps_one_upload: f64,
    pub upload_bps_one_upload: f64,
    pub download_bps_two_uploads: f64,
    /// Both uploads together.
    pub upload_bps_two_uploads: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Fig1 {
    pub seeds: u32,
    /// Means over the runs, bit/s.
    pub download_bps_no_upload: f64,
    pub download_bps_one_upload: f64,
    pub upload_bps_one_upload: f64,
    pub download_bps_two_uploads: f64,
    pub upload_bps_two_uploads: f64,
    pub windows_s: [(f64, f64); 3],
    pub runs: Vec<Fig1Run>,
}

/// Fig. 1's setup: 2.4 Mbit/s / 196 kbit/s, 30 000 B at both ends, the
/// download from 10 s, one upload 30–50 s, two uploads 60–95 s.
pub fn fig1_setup(seed: u64) -> Setup {
    let mut s = Setup::asymmetric(
        Limit::Bytes(30_000),
        Limit::Bytes(30_000),
        Dur::ZERO,
        Dur::from_secs(100),
    );
    s.download = (Dur::from_secs(10), None);
    s.uploads = vec![
        (Dur::from_secs(30), Some(Dur::from_secs(50))),
        (Dur::from_secs(60), Some(Dur::from_secs(95))),
        (Dur::from_secs(60), Some(Dur::from_secs(95))),
    ];
    s.trace_interval = Dur::from_millis(50);
    s.seed = seed;
    s.jitter = Dur::from_millis(500);
    s
}

/// Fig. 1's phase means from a finished run.
pub fn fig1_measure(sim: &Sim, seed: u64) -> Fig1Run {
    let g = |f, w: (f64, f64)| goodput_between(sim, f, w.0, w.1);
    Fig1Run {
        seed,
        download_bps_no_upload: g(0, FIG1_NONE),
        download_bps_one_upload: g(0, FIG1_ONE),
        upload_bps_one_upload: g(1, FIG1_ONE),
        download_bps_two_uploads: g(0, FIG1_TWO),
        upload_bps_two_uploads: g(2, FIG1_TWO) + g(3, FIG1_TWO),
    }
}

/// The first run's time series, for the figure.
#[derive(Clone, Debug, Default)]
pub struct Fig1Traces {
    /// Per flow: (bin start s, bit/s).
    pub goodput: Vec<Vec<(f64, f64)>>,
    pub q_down: Vec<(f64, f64)>,
    pub q_up: Vec<(f64, f64)>,
}

fn fig1_traces(sim: &Sim) -> Fig1Traces {
    let goodput = (0..sim.flows().len())
        .map(|f| {
            let g = sim.endpoint(receiver(sim, f)).goodput();
            let w = g.interval.as_secs_f64();
            g.rates_bps()
                .into_iter()
                .enumerate()
                .map(|(i, r)| (i as f64 * w, r))
                .collect()
        })
        .collect();
    let end = secs(sim.duration()) + 1.0;
    Fig1Traces {
        goodput,
        q_down: queue_series(sim, DOWN_IFACE, 0.0, end),
        q_up: queue_series(sim, UP_IFACE, 0.0, end),
    }
}

/// Runs Fig. 1's seeds; the traces are seed 1's.
pub(super) fn run(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<(Fig1, Fig1Traces)> {
    let seeds: Vec<u64> = (1..=plan.fig1_seeds as u64).collect();
    ctx.progress.start("Fig. 1", seeds.len() as u64);
    let res = ctx.par_map(seeds, |seed| {
        let sim = simulate(&fig1_setup(seed), "fig1")?;
        let m = fig1_measure(&sim, seed);
        // Keep the first run's traces for the figure.
        let plot = (seed == 1).then(|| fig1_traces(&sim));
        anyhow::Ok((m, plot))
    });
    ctx.progress.finish();
    let mut runs = Vec::new();
    let mut traces = Fig1Traces::default();
    for r in res {
        let (m, p) = r?;
        runs.push(m);
        if let Some(p) = p {
            traces = p;
        }
    }
    let mean = |f: fn(&Fig1Run) -> f64| stats::mean(&runs.iter().map(f).collect::<Vec<_>>());
    let out = Fig1 {
        seeds: plan.fig1_seeds,
        download_bps_no_upload: mean(|r| r.download_bps_no_upload),
        download_bps_one_upload: mean(|r| r.download_bps_one_upload),
        upload_bps_one_upload: mean(|r| r.upload_bps_one_upload),
        download_bps_two_uploads: mean(|r| r.download_bps_two_uploads),
        upload_bps_two_uploads: mean(|r| r.upload_bps_two_uploads),
        windows_s: [FIG1_NONE, FIG1_ONE, FIG1_TWO],
        runs,
    };
    Ok((out, traces))
}
