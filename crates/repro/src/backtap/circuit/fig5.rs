//! Fig. 5: one bulk circuit through a middle relay limited to 1500 kB/s,
//! end-to-end RTT swept from 30 to 900 ms (seed 002 §4): the runs, their
//! means over seeds, and the CSVs. The circuit itself is
//! [`crate::backtap::common::net`]; the claims are in
//! [`super::fig5_claims`].

use super::Plan;
use crate::backtap::common::{
    hop_mean, hystart_variant, middle_held_cells, net, ramp_estimate, round_to, slow_start_variant,
    start_offset, variants, Variant, BACKTAP_CELL, C,
};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::{Ctx, Outputs};
use hopwise_proto::time::Dur;
use hopwise_tor::{CircuitResult, Dir};
use serde::Serialize;

/// Round trips Tor Vegas gets before its fit, on top of vanilla's lengths.
/// After slow start (which ends by 600 cells, `cc_sscap_exit`) its window
/// grows by 31 cells per RTT (`cc_cwnd_inc` 1, 31 updates per window), so
/// from 600 cells to the ≈ 2640-cell BDP of the 900 ms circuit takes
/// about 66 RTTs; with vanilla's 30 s alone it reached 0.66 of the payload
/// rate there and its fit window covered the ramp.
pub const END_TO_END_RAMP_RTTS: f64 = 80.0;

/// Run length and start of the fit for a variant at an RTT: vanilla runs
/// `plan.vanilla_secs` and fits after `plan.vanilla_fit_from`; Tor Vegas
/// runs [`END_TO_END_RAMP_RTTS`] round trips longer and fits that much
/// later; per-hop
/// windows fit after 1.3 × the estimated ramp-up plus 30 s (the initial
/// bucket burst of one second at the middle must drain too) and measure
/// `plan.backtap_measure_secs` more.
pub fn lengths(v: &Variant, rtt: Dur, plan: &Plan) -> (Dur, Dur) {
    if v.per_hop_ramp {
        let from = (1.3 * ramp_estimate(rtt, v.cell_bytes) + 30.0).ceil() as u64;
        (
            Dur::from_secs(from + plan.backtap_measure_secs),
            Dur::from_secs(from),
        )
    } else {
        let extra = if v.end_to_end_ramp {
            (END_TO_END_RAMP_RTTS * rtt.as_secs_f64()).ceil() as u64
        } else {
            0
        };
        (
            Dur::from_secs(plan.vanilla_secs + extra),
            Dur::from_secs(plan.vanilla_fit_from + extra),
        )
    }
}

/// One run of one point (a row of `fig5_runs.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig5Run {
    pub variant: &'static str,
    pub rtt_ms: u64,
    pub seed: u64,
    pub start_s: f64,
    pub duration_s: f64,
    pub fit_from_s: f64,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    #[serde(rename = "backlog_B")]
    pub backlog: f64,
    pub delay_ms: f64,
    /// Largest R(t) − W(t) of the run.
    #[serde(rename = "max_backlog_B")]
    pub max_backlog: u64,
    /// Mean cells the middle holds for the circuit towards the client over
    /// the fit window ([`middle_held_cells`]; BackTap: its fused queue).
    pub bottleneck_queue_cells: f64,
    /// Mean send window of the exit's hop (BackTap) over the fit window.
    pub exit_swnd: f64,
    /// From the circuit's start until the delivery rate over the next 2 s
    /// first reaches 95 % of the bottleneck's payload rate (NaN: never).
    pub ramp_s: f64,
    /// Corrupt bytes delivered (a run with any fails).
    #[serde(skip)]
    pub corrupt: u64,
    pub events: u64,
}

/// Rate and exit window over time (1 s bins), for the start-up figure.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub rate: Vec<(f64, f64)>,
    pub exit_swnd: Vec<(f64, f64)>,
    pub middle_queue: Vec<(f64, f64)>,
}

/// Time from `start` until the rate over the following 2 s reaches `target`.
pub fn ramp_time(c: &CircuitResult, start: f64, target: f64) -> f64 {
    let dt = c.rw_interval.as_secs_f64();
    let win = (2.0 / dt).round() as usize;
    let i0 = (start / dt).floor() as usize;
    for i in i0..c.w.len().saturating_sub(win) {
        if (c.w[i + win] - c.w[i]) as f64 / (win as f64 * dt) >= target {
            return (i as f64 * dt - start).max(0.0);
        }
    }
    f64::NAN
}

/// Runs one point; `keep` also returns the time series.
pub fn run_point(
    v: &Variant,
    rtt_ms: u64,
    seed: u64,
    plan: &Plan,
    keep: bool,
) -> anyhow::Result<(Fig5Run, Option<Series>)> {
    let rtt = Dur::from_millis(rtt_ms);
    let start = start_offset(seed, "c0", Dur::ZERO);
    let (dur, from) = lengths(v, rtt, plan);
    let net = net(v, rtt, start);
    let mut sim = net
        .build(&format!("fig5-{}-{rtt_ms}", v.key), seed, dur)
        .map_err(|e| anyhow::anyhow!("{}: {e}", v.key))?;
    sim.run();
    let res = sim.results();
    let c = &res.circuits[0];
    let f = c
        .fit(from)
        .ok_or_else(|| anyhow::anyhow!("{} at {rtt_ms} ms: no progress to fit", v.key))?;
    let b = Dir::Backward.index();
    let qdt = res.queue_interval.map_or(0.01, |d| d.as_secs_f64());
    let run = Fig5Run {
        variant: v.key,
        rtt_ms,
        seed,
        start_s: start.as_secs_f64(),
        duration_s: dur.as_secs_f64(),
        fit_from_s: from.as_secs_f64(),
        rate: f.rate,
        backlog: f.backlog,
        delay_ms: f.delay * 1e3,
        max_backlog: c.max_backlog(),
        bottleneck_queue_cells: middle_held_cells(&res, from.as_secs_f64()).0,
        exit_swnd: hop_mean(c, "exit", qdt, from.as_secs_f64(), |s| s.swnd[b] as f64),
        ramp_s: ramp_time(c, start.as_secs_f64(), 0.95 * v.payload_rate()),
        corrupt: c.corrupt,
        events: res.events,
    };
    let series = keep.then(|| {
        let per = (1.0 / c.rw_interval.as_secs_f64()).round() as usize;
        let per_q = (1.0 / qdt).round() as usize;
        let rate = (per..c.w.len())
            .step_by(per)
            .map(|i| (i as f64 / per as f64, (c.w[i] - c.w[i - per]) as f64))
            .collect();
        let hop = |node: &str, g: &dyn Fn(&hopwise_tor::HopSample) -> f64| {
            c.hops
                .iter()
                .find(|h| h.node == node)
                .map(|h| {
                    h.samples
                        .iter()
                        .enumerate()
                        .step_by(per_q)
                        .map(|(i, s)| (i as f64 / per_q as f64, g(s)))
                        .collect()
                })
                .unwrap_or_default()
        };
        Series {
            rate,
            exit_swnd: hop("exit", &|s| s.swnd[b] as f64),
            middle_queue: hop("middle", &|s| s.queued[b] as f64),
        }
    });
    Ok((run, series))
}

/// One point of Fig. 5: the mean over seeds (with 90 % confidence
/// intervals); a row of summary.json's `fig5` and of `fig5.csv`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig5Row {
    pub variant: &'static str,
    pub transport: &'static str,
    pub window: &'static str,
    pub refill: &'static str,
    pub rtt_ms: u64,
    pub seeds: usize,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    #[serde(rename = "rate_ci90_Bps")]
    pub rate_ci: f64,
    /// Rate over the bottleneck's payload rate for this transport.
    pub rate_of_payload: f64,
    #[serde(rename = "backlog_B")]
    pub backlog: f64,
    #[serde(rename = "backlog_ci90_B")]
    pub backlog_ci: f64,
    pub delay_ms: f64,
    pub delay_ci90_ms: f64,
    /// Largest R − W of any run.
    #[serde(rename = "max_backlog_B")]
    pub max_backlog: u64,
    pub bottleneck_queue_cells: f64,
    pub exit_swnd: f64,
    pub ramp_s: f64,
    pub duration_s: f64,
    pub fit_from_s: f64,
}

/// Start-up time of BackTap's window at one RTT (a row of `fig5_ramp.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RampRow {
    pub rtt_ms: u64,
    /// "linear" (+1 cell per round, the paper), "slow-start" (γ = 1) or
    /// "hystart" (HyStart++ with the delay-qualified loss response).
    pub startup: &'static str,
    /// Time to 95 % of the payload rate (seed 1).
    pub ramp_s: f64,
    /// The estimate C/519 · (RTT/3)² the run lengths are based on.
    pub estimate_s: f64,
    /// The exit hop's window at the end of the run, and the hop BDP in cells.
    pub final_exit_swnd: f64,
    pub hop_bdp_cells: f64,
}

/// One second of a start-up run (a row of `fig5_ramp_series.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RampSeriesRow {
    pub rtt_ms: u64,
    pub startup: &'static str,
    pub time_s: f64,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    pub exit_swnd: Option<f64>,
    pub middle_queue_cells: Option<f64>,
}

/// Everything Fig. 5 produced; summary.json's `fig5` and `fig5_ramp`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fig5Out {
    #[serde(rename = "fig5")]
    pub rows: Vec<Fig5Row>,
    #[serde(skip)]
    pub runs: Vec<Fig5Run>,
    #[serde(rename = "fig5_ramp")]
    pub ramp: Vec<RampRow>,
    /// (RTT, startup, series) for the start-up figure.
    #[serde(skip)]
    pub ramp_series: Vec<(u64, &'static str, Series)>,
    /// (RTT, startup, run) of the start-up runs, for their queues.
    #[serde(skip)]
    pub ramp_runs: Vec<(u64, &'static str, Fig5Run)>,
}

impl Fig5Out {
    pub fn row(&self, variant: &str, rtt_ms: u64) -> Option<&Fig5Row> {
        self.rows
            .iter()
            .find(|r| r.variant == variant && r.rtt_ms == rtt_ms)
    }
    pub fn curve(&self, variant: &str) -> Vec<&Fig5Row> {
        self.rows.iter().filter(|r| r.variant == variant).collect()
    }
    /// `f` of every run of a point, in seed order.
    pub fn samples(&self, variant: &str, rtt_ms: u64, f: impl Fn(&Fig5Run) -> f64) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.variant == variant && r.rtt_ms == rtt_ms)
            .map(f)
            .collect()
    }
}

/// Runs the sweep and the start-up runs.
pub fn run(plan: &Plan, ctx: &Ctx<'_, Fig5Out>) -> anyhow::Result<Fig5Out> {
    let vs: Vec<Variant> = variants()
        .into_iter()
        .filter(|v| v.main || plan.fig5_refill_variants)
        .collect();
    let ss = slow_start_variant();
    let hs = hystart_variant();
    // (variant, rtt, seed, keep series, is a start-up run)
    let mut jobs: Vec<(Variant, u64, u64, bool, bool)> = Vec::new();
    for v in &vs {
        let seeds = if v.main {
            plan.fig5_seeds
        } else {
            plan.fig5_refill_seeds
        };
        for &rtt in &plan.fig5_rtts_ms {
            for seed in 1..=seeds as u64 {
                let keep = v.key == "backtap" && seed == 1 && plan.ramp_rtts_ms.contains(&rtt);
                jobs.push((v.clone(), rtt, seed, keep, false));
            }
        }
    }
    for &rtt in &plan.ramp_rtts_ms {
        if !plan.fig5_rtts_ms.contains(&rtt) {
            jobs.push((vs[2].clone(), rtt, 1, true, true));
        }
        jobs.push((ss.clone(), rtt, 1, true, true));
        jobs.push((hs.clone(), rtt, 1, true, true));
    }
    // Longest first, so that the slowest runs do not start last.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        let la = lengths(&jobs[a].0, Dur::from_millis(jobs[a].1), plan).0;
        let lb = lengths(&jobs[b].0, Dur::from_millis(jobs[b].1), plan).0;
        lb.cmp(&la).then(a.cmp(&b))
    });
    ctx.progress.start("Fig. 5", jobs.len() as u64);
    let results = ctx.par_map(order.clone(), |i| {
        let (v, rtt, seed, keep, _) = &jobs[i];
        run_point(v, *rtt, *seed, plan, *keep)
    });
    ctx.progress.finish();
    let mut by_job: Vec<Option<(Fig5Run, Option<Series>)>> = vec![None; jobs.len()];
    for (i, r) in order.into_iter().zip(results) {
        by_job[i] = Some(r?);
    }
    let mut runs = Vec::new();
    let mut ramp_runs: Vec<(u64, &'static str, Fig5Run, Series)> = Vec::new();
    for ((v, rtt, _, keep, startup_only), r) in jobs.iter().zip(by_job) {
        let (run, series) = r.expect("every job ran");
        anyhow::ensure!(run.corrupt == 0, "{} at {rtt} ms: corrupt bytes", v.key);
        if *keep {
            let name = if v.key == ss.key {
                "slow-start"
            } else if v.key == hs.key {
                "hystart"
            } else {
                "linear"
            };
            ramp_runs.push((*rtt, name, run.clone(), series.unwrap_or_default()));
        }
        if !startup_only {
            runs.push(run);
        }
    }
    // Aggregate.
    let mut rows = Vec::new();
    for v in &vs {
        for &rtt in &plan.fig5_rtts_ms {
            let rs: Vec<&Fig5Run> = runs
                .iter()
                .filter(|r| r.variant == v.key && r.rtt_ms == rtt)
                .collect();
            let col =
                |f: fn(&Fig5Run) -> f64| mean_ci90(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
            let (rate, rate_ci) = col(|r| r.rate);
            let (backlog, backlog_ci) = col(|r| r.backlog);
            let (delay, delay_ci) = col(|r| r.delay_ms);
            rows.push(Fig5Row {
                transport: v.transport,
                window: v.window,
                rtt_ms: rtt,
                rate,
                backlog,
                delay_ms: delay,
                variant: v.key,
                refill: v.refill.label(),
                seeds: rs.len(),
                rate_ci,
                backlog_ci,
                delay_ci90_ms: delay_ci,
                rate_of_payload: rate / v.payload_rate(),
                max_backlog: rs.iter().map(|r| r.max_backlog).max().unwrap_or(0),
                bottleneck_queue_cells: col(|r| r.bottleneck_queue_cells).0,
                exit_swnd: col(|r| r.exit_swnd).0,
                ramp_s: col(|r| r.ramp_s).0,
                duration_s: rs.first().map_or(f64::NAN, |r| r.duration_s),
                fit_from_s: rs.first().map_or(f64::NAN, |r| r.fit_from_s),
            });
        }
    }
    // The HyStart rows after the others (they were added later).
    ramp_runs.sort_by(|a, b| (a.1 == "hystart", a.0, a.1).cmp(&(b.1 == "hystart", b.0, b.1)));
    let ramp: Vec<RampRow> = ramp_runs
        .iter()
        .map(|(rtt, name, run, _)| RampRow {
            rtt_ms: *rtt,
            startup: name,
            ramp_s: run.ramp_s,
            estimate_s: ramp_estimate(Dur::from_millis(*rtt), BACKTAP_CELL),
            final_exit_swnd: run.exit_swnd,
            hop_bdp_cells: C as f64 / BACKTAP_CELL * (*rtt as f64 / 3e3),
        })
        .collect();
    let out = Fig5Out {
        rows,
        runs,
        ramp,
        ramp_series: ramp_runs
            .iter()
            .map(|(r, n, _, s)| (*r, *n, s.clone()))
            .collect(),
        ramp_runs: ramp_runs
            .into_iter()
            .map(|(r, n, run, _)| (r, n, run))
            .collect(),
    };
    Ok(out)
}

/// `fig5.csv`, `fig5_runs.csv`, `fig5_ramp.csv`, `fig5_ramp_series.csv`
/// and the figures.
pub fn outputs(out: &Fig5Out, o: &mut Outputs) -> anyhow::Result<()> {
    o.csv("fig5.csv", &out.rows)?;
    o.csv("fig5_runs.csv", &out.runs)?;
    o.csv("fig5_ramp.csv", &out.ramp)?;
    let mut series = Vec::new();
    for (rtt, name, s) in &out.ramp_series {
        for (i, &(t, rate)) in s.rate.iter().enumerate() {
            series.push(RampSeriesRow {
                rtt_ms: *rtt,
                startup: name,
                time_s: round_to(t, 0),
                rate,
                exit_swnd: s.exit_swnd.get(i).map(|x| x.1),
                middle_queue_cells: s.middle_queue.get(i).map(|x| x.1),
            });
        }
    }
    o.csv("fig5_ramp_series.csv", &series)?;
    super::plots::fig5(out, o)
}
