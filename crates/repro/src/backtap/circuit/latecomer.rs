//! The late-comer (seed 002 §4, intra-fairness): a circuit joins 30 s after
//! another one through the same relays. A late-comer that measures its
//! baseRtt while the first circuit already keeps a queue overestimates it;
//! BackTap shares baseRtt per next hop so that it does not.

use super::{f3, kbs, Plan};
use crate::backtap::common::{
    access, backtap, round_to, share_base_rtt, start_offset, w_rate, RefillMode,
};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::{plural, Claim, Ctx, Estimate, Outputs};
use hopwise_proto::backtap::Startup;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_tor::{CircuitSpec, TorNet, Traffic};
use serde::Serialize;

/// What limits the two circuits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Bottleneck {
    /// The middle's token bucket (1500 kB/s), as in Fig. 5; the middle
    /// serves the circuits round robin.
    Bucket(RefillMode),
    /// No bucket; the middle's uplink runs at 12 Mbit/s (1500 kB/s) with a
    /// drop-tail FIFO: both circuits share its queue.
    Link,
}

impl Bottleneck {
    pub fn label(self) -> String {
        match self {
            Bottleneck::Bucket(r) => format!("bucket, {} refill", r.label()),
            Bottleneck::Link => "12 Mbit/s FIFO link".into(),
        }
    }
}

/// One setting.
#[derive(Clone, Debug)]
pub struct LateConfig {
    pub bottleneck: Bottleneck,
    pub shared: bool,
    pub rtt_ms: u64,
    /// The setting the claim judges: the Fig. 5 bucket with nstor's 10 ms refill.
    pub headline: bool,
}

/// The settings of a plan.
pub fn configs(plan: &Plan) -> Vec<LateConfig> {
    let mut bs = vec![Bottleneck::Bucket(RefillMode::Periodic10)];
    if plan.late_sensitivity {
        bs.extend([
            Bottleneck::Bucket(RefillMode::Periodic1),
            Bottleneck::Bucket(RefillMode::OnDemand),
            Bottleneck::Link,
        ]);
    }
    let mut v = Vec::new();
    for (i, b) in bs.into_iter().enumerate() {
        for shared in [true, false] {
            v.push(LateConfig {
                bottleneck: b,
                shared,
                rtt_ms: plan.late_rtt_ms,
                headline: i == 0,
            });
        }
    }
    // The headline bottleneck at other RTTs.
    for &rtt in &plan.late_sensitivity_rtts_ms {
        if rtt == plan.late_rtt_ms {
            continue;
        }
        for shared in [true, false] {
            v.push(LateConfig {
                bottleneck: Bottleneck::Bucket(RefillMode::Periodic10),
                shared,
                rtt_ms: rtt,
                headline: false,
            });
        }
    }
    v
}

/// Clients op0 and op1, relays guard, middle, exit in the Fig. 5 star;
/// circuit c0 starts at [0.1, 1) s, c1 at `join` + [0.1, 1) s.
pub fn net(cfg: &LateConfig, rtt: Dur, join: Dur, seed: u64) -> TorNet {
    let mut tc = backtap(Startup::Linear);
    share_base_rtt(&mut tc, cfg.shared);
    let mut net = TorNet::with_config(tc);
    let acc = access(rtt);
    net.relay("guard", None, acc).relay("exit", None, acc);
    match cfg.bottleneck {
        Bottleneck::Bucket(r) => net.relay("middle", Some(r.bucket()), acc),
        Bottleneck::Link => net.relay("middle", None, acc.up(Rate::from_kbps(12_000))),
    };
    for (i, base) in [(0, Dur::ZERO), (1, join)] {
        let op = format!("op{i}");
        let name = format!("c{i}");
        net.client(&op, acc);
        net.circuit(
            CircuitSpec::new(
                &name,
                &op,
                &["guard", "middle", "exit"],
                Traffic::bulk(1 << 50),
            )
            .trace(true)
            .start(start_offset(seed, &name, base)),
        );
    }
    net
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct LateRun {
    pub bottleneck: String,
    pub shared_base_rtt: bool,
    pub rtt_ms: u64,
    pub seed: u64,
    /// Rates over the last `late_measure_secs` (B/s).
    pub rate_first: f64,
    pub rate_late: f64,
    /// Per-second rates of both circuits (seed 1 only, for the figure).
    #[serde(skip)]
    pub series: Option<[Vec<(f64, f64)>; 2]>,
}

pub fn run_one(cfg: &LateConfig, plan: &Plan, seed: u64) -> anyhow::Result<LateRun> {
    let net = net(
        cfg,
        Dur::from_millis(cfg.rtt_ms),
        Dur::from_secs(plan.late_join_secs),
        seed,
    );
    let secs = plan.late_secs as f64;
    let mut sim = net
        .build("latecomer", seed, Dur::from_secs(plan.late_secs))
        .map_err(|e| anyhow::anyhow!("late-comer: {e}"))?;
    sim.run();
    let res = sim.results();
    let dt = res.rw_interval.as_secs_f64();
    let t0 = secs - plan.late_measure_secs as f64;
    let mut rates = [0.0; 2];
    for (i, c) in res.circuits.iter().enumerate() {
        anyhow::ensure!(c.corrupt == 0, "late-comer: corrupt bytes");
        rates[i] = w_rate(&c.w, dt, t0, secs - dt);
    }
    let series = (seed == 1 && cfg.rtt_ms == plan.late_rtt_ms).then(|| {
        let per = (1.0 / dt).round() as usize;
        let s = |w: &[u64]| {
            (per..w.len())
                .step_by(per)
                .map(|i| {
                    (
                        i as f64 * dt,
                        (w[i] - w[i - per]) as f64 / (per as f64 * dt),
                    )
                })
                .collect::<Vec<_>>()
        };
        [s(&res.circuits[0].w), s(&res.circuits[1].w)]
    });
    Ok(LateRun {
        bottleneck: cfg.bottleneck.label(),
        shared_base_rtt: cfg.shared,
        rtt_ms: cfg.rtt_ms,
        seed,
        rate_first: rates[0],
        rate_late: rates[1],
        series,
    })
}

/// One setting over seeds (a row of summary.json's `latecomer_all` and of
/// `latecomer.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LateRow {
    pub bottleneck: String,
    pub shared_base_rtt: bool,
    pub rtt_ms: u64,
    pub headline: bool,
    pub seeds: usize,
    #[serde(rename = "rate_first_Bps")]
    pub rate_first: f64,
    #[serde(rename = "rate_late_Bps")]
    pub rate_late: f64,
    /// Mean over runs of rate_late / rate_first.
    pub rate_ratio: f64,
    pub rate_ratio_ci90: f64,
    /// Mean over runs of min/max of the two rates (1 = equal).
    pub min_over_max: f64,
    /// The lowest min/max of any run.
    pub min_over_max_worst: f64,
}

/// One line of summary.json's `latecomer`: a headline setting.
#[derive(Clone, Debug, Serialize)]
pub struct LateSummaryRow {
    pub shared_base_rtt: bool,
    /// Rate of the late circuit over the rate of the first, at the end.
    pub rate_ratio: f64,
    pub bottleneck: String,
}

/// Everything the late-comer runs produced: summary.json's `latecomer`
/// (the headline settings) and `latecomer_all`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LateOut {
    #[serde(rename = "latecomer")]
    pub headline: Vec<LateSummaryRow>,
    #[serde(rename = "latecomer_all")]
    pub rows: Vec<LateRow>,
    #[serde(skip)]
    pub runs: Vec<LateRun>,
}

/// One second of the first seed's runs (a row of `latecomer_series.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LateSeriesRow {
    pub bottleneck: String,
    pub shared_base_rtt: bool,
    pub time_s: f64,
    #[serde(rename = "rate_first_Bps")]
    pub rate_first: f64,
    #[serde(rename = "rate_late_Bps")]
    pub rate_late: f64,
}

/// Runs every setting on every seed.
pub fn run(plan: &Plan, ctx: &Ctx<'_, LateOut>) -> anyhow::Result<LateOut> {
    let cfgs = configs(plan);
    let mut jobs = Vec::new();
    for c in &cfgs {
        for seed in 1..=plan.late_seeds as u64 {
            jobs.push((c.clone(), seed));
        }
    }
    ctx.progress.start("Late-comer", jobs.len() as u64);
    let runs = ctx
        .par_map(jobs, |(c, seed)| run_one(&c, plan, seed))
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
    ctx.progress.finish();
    let mut rows = Vec::new();
    for c in &cfgs {
        let label = c.bottleneck.label();
        let rs: Vec<&LateRun> = runs
            .iter()
            .filter(|r| {
                r.bottleneck == label && r.shared_base_rtt == c.shared && r.rtt_ms == c.rtt_ms
            })
            .collect();
        let n = rs.len() as f64;
        let ratios: Vec<f64> = rs.iter().map(|r| r.rate_late / r.rate_first).collect();
        let mm: Vec<f64> = rs
            .iter()
            .map(|r| r.rate_late.min(r.rate_first) / r.rate_late.max(r.rate_first))
            .collect();
        let (ratio, ci) = mean_ci90(&ratios);
        rows.push(LateRow {
            bottleneck: label,
            shared_base_rtt: c.shared,
            rtt_ms: c.rtt_ms,
            headline: c.headline,
            seeds: rs.len(),
            rate_first: rs.iter().map(|r| r.rate_first).sum::<f64>() / n,
            rate_late: rs.iter().map(|r| r.rate_late).sum::<f64>() / n,
            rate_ratio: ratio,
            rate_ratio_ci90: ci,
            min_over_max: mm.iter().sum::<f64>() / n,
            min_over_max_worst: mm.iter().copied().fold(f64::INFINITY, f64::min),
        });
    }
    let headline = rows
        .iter()
        .filter(|r| r.headline)
        .map(|r| LateSummaryRow {
            shared_base_rtt: r.shared_base_rtt,
            rate_ratio: r.rate_ratio,
            bottleneck: r.bottleneck.clone(),
        })
        .collect();
    Ok(LateOut {
        headline,
        rows,
        runs,
    })
}

/// `latecomer.csv`, `latecomer_series.csv` and `latecomer.svg`.
pub fn outputs(plan: &Plan, out: &LateOut, o: &mut Outputs) -> anyhow::Result<()> {
    o.csv("latecomer.csv", &out.rows)?;
    let mut series = Vec::new();
    for r in &out.runs {
        let Some(s) = &r.series else { continue };
        for (a, b) in s[0].iter().zip(&s[1]) {
            series.push(LateSeriesRow {
                bottleneck: r.bottleneck.clone(),
                shared_base_rtt: r.shared_base_rtt,
                time_s: round_to(a.0, 0),
                rate_first: a.1,
                rate_late: b.1,
            });
        }
    }
    o.csv("latecomer_series.csv", &series)?;
    super::plots::latecomer(plan, out, o)
}

pub fn claims(plan: &Plan, out: &LateOut) -> Vec<Claim> {
    let mut c = Vec::new();
    let desc = |r: &LateRow| {
        format!(
            "first {}, late-comer {} (late/first {:.2}{}; min/max {:.3}, worst run {:.3}; {}, last {} s of {} s)",
            kbs(r.rate_first),
            kbs(r.rate_late),
            r.rate_ratio,
            if r.rate_ratio_ci90.is_finite() {
                format!(" ± {:.2}", r.rate_ratio_ci90)
            } else {
                String::new()
            },
            r.min_over_max,
            r.min_over_max_worst,
            plural(r.seeds, "run"),
            plan.late_measure_secs,
            plan.late_secs
        )
    };
    for r in out.rows.iter().filter(|r| r.headline) {
        if r.shared_base_rtt {
            // min/max of the two rates of each run, over its seeds.
            let mm: Vec<f64> = out
                .runs
                .iter()
                .filter(|x| {
                    x.bottleneck == r.bottleneck
                        && x.shared_base_rtt == r.shared_base_rtt
                        && x.rtt_ms == r.rtt_ms
                })
                .map(|x| x.rate_late.min(x.rate_first) / x.rate_late.max(x.rate_first))
                .collect();
            c.push(
                Claim::new(
                    "§4 late-comer",
                    format!(
                        "With baseRtt shared per next hop, a circuit joining after {} s ends with the first one's rate ({}, RTT {} ms)",
                        plan.late_join_secs, r.bottleneck, plan.late_rtt_ms
                    ),
                )
                .measured(desc(r))
                .at_least(
                    "min/max of the two circuits' rates",
                    Estimate::mean_t90(&mm),
                    0.9,
                ),
            );
        } else {
            c.push(Claim::info(
                "§4 late-comer",
                format!("The same with baseRtt per circuit ({})", r.bottleneck),
                desc(r),
            ));
        }
    }
    let others: Vec<String> = out
        .rows
        .iter()
        .filter(|r| !r.headline)
        .map(|r| {
            format!(
                "{}, {} ms, {}: late/first {}",
                r.bottleneck,
                r.rtt_ms,
                if r.shared_base_rtt {
                    "shared"
                } else {
                    "per circuit"
                },
                f3(r.rate_ratio)
            )
        })
        .collect();
    if !others.is_empty() {
        c.push(Claim::info(
            "§4 late-comer (sensitivity)",
            "Other bottlenecks (a nearly continuous bucket refilled every 1 ms, Tor's on-demand bucket, a shared 12 Mbit/s FIFO link) and other RTTs",
            others.join("; "),
        ));
    }
    c
}
