//! Multiplexing unfairness (seed 002 §4, intra-fairness; Tschorsch and
//! Scheuermann's "Tor is unfair" [44]): ten bulk circuits through one middle
//! relay limited to 1500 kB/s, one through relays A (guard A, exit A) and
//! nine through relays B. Vanilla Tor multiplexes the nine into one TCP
//! connection per neighbour, and the middle's bucket is shared between
//! connections, so circuit A gets as much as the other nine together.
//! BackTap schedules circuits round robin.

use super::{f3, kbs, Plan};
use crate::backtap::common::{
    access, backtap, payload_rate, start_offset, vanilla_both_windows, RefillMode, BACKTAP_CELL,
    VANILLA_CELL,
};
use hopwise_experiment::stats::{jain, mean_ci90};
use hopwise_experiment::{plural, Claim, Ctx, Estimate, Outputs};
use hopwise_proto::backtap::Startup;
use hopwise_proto::time::Dur;
use hopwise_tor::{CircuitSpec, TorConfig, TorNet, Traffic};
use serde::Serialize;
use std::collections::BTreeMap;

/// Circuits in the scenario; circuit 0 goes through relays A, the rest through B.
pub const CIRCUITS: usize = 10;

/// A transport and refill for the scenario.
#[derive(Clone, Debug)]
pub struct MuxConfig {
    pub key: &'static str,
    pub transport: &'static str,
    pub refill: RefillMode,
    pub config: fn() -> TorConfig,
    /// The configuration the claims judge (the paper's setup).
    pub headline: bool,
    /// Bytes the bucket charges per cell.
    pub cell_bytes: f64,
}

fn vanilla() -> TorConfig {
    // Tor's defaults: both windows, Nagle on (seed 002 §4: "in all our
    // following simulations Nagle will be enabled").
    vanilla_both_windows(true)
}
fn backtap_linear() -> TorConfig {
    backtap(Startup::Linear)
}

/// The configurations: the paper's (vanilla with Tor's 100 ms refill,
/// BackTap with nstor's 10 ms), then the refill sensitivity.
pub fn configs() -> Vec<MuxConfig> {
    use RefillMode::*;
    let c = |key, transport, refill, config: fn() -> TorConfig, headline| MuxConfig {
        key,
        transport,
        refill,
        config,
        headline,
        cell_bytes: if transport == "backtap" {
            BACKTAP_CELL
        } else {
            VANILLA_CELL
        },
    };
    vec![
        c("vanilla", "vanilla", Periodic100, vanilla, true),
        c("backtap", "backtap", Periodic10, backtap_linear, true),
        c("vanilla-on-demand", "vanilla", OnDemand, vanilla, false),
        c(
            "backtap-100ms",
            "backtap",
            Periodic100,
            backtap_linear,
            false,
        ),
        c(
            "backtap-on-demand",
            "backtap",
            OnDemand,
            backtap_linear,
            false,
        ),
        c("backtap-1ms", "backtap", Periodic1, backtap_linear, false),
    ]
}

/// A configuration's transport as the text names it ("BackTap", "vanilla").
pub fn transport_label(transport: &str) -> &str {
    match transport {
        "backtap" => "BackTap",
        t => t,
    }
}

/// The network: clients op0…op9, guards gA and gB, the middle (the bucket),
/// exits eA and eB, in the Fig. 5 star with end-to-end RTT `rtt`; circuit c0
/// through gA and eA, c1…c9 through gB and eB, starting at random offsets
/// in [0.1, 1) s.
pub fn net(cfg: &MuxConfig, rtt: Dur, seed: u64) -> TorNet {
    let mut net = TorNet::with_config((cfg.config)());
    let acc = access(rtt);
    net.relay("gA", None, acc)
        .relay("gB", None, acc)
        .relay("middle", Some(cfg.refill.bucket()), acc)
        .relay("eA", None, acc)
        .relay("eB", None, acc);
    for i in 0..CIRCUITS {
        let op = format!("op{i}");
        let name = format!("c{i}");
        let (g, e) = if i == 0 { ("gA", "eA") } else { ("gB", "eB") };
        net.client(&op, acc);
        net.circuit(
            CircuitSpec::new(&name, &op, &[g, "middle", e], Traffic::bulk(1 << 50))
                .trace(true)
                .start(start_offset(seed, &name, Dur::ZERO)),
        );
    }
    net
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct MuxRun {
    pub config: &'static str,
    pub rtt_ms: u64,
    pub seed: u64,
    /// Per-circuit rates (B/s) from the fit over the second half of the run.
    pub rates: Vec<f64>,
    pub jain: f64,
}

/// Runs one configuration at one RTT.
pub fn run_one(cfg: &MuxConfig, rtt_ms: u64, seed: u64, secs: u64) -> anyhow::Result<MuxRun> {
    let net = net(cfg, Dur::from_millis(rtt_ms), seed);
    let mut sim = net
        .build(
            &format!("mux-{}-{rtt_ms}", cfg.key),
            seed,
            Dur::from_secs(secs),
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", cfg.key))?;
    sim.run();
    let res = sim.results();
    let from = Dur::from_secs(secs / 2);
    let mut rates = Vec::new();
    for c in &res.circuits {
        anyhow::ensure!(c.corrupt == 0, "{}: corrupt bytes", cfg.key);
        rates.push(c.fit(from).map_or(0.0, |f| f.rate));
    }
    Ok(MuxRun {
        config: cfg.key,
        rtt_ms,
        seed,
        jain: jain(&rates),
        rates,
    })
}

/// One configuration at one RTT, over seeds (a row of summary.json's `mux`
/// and of `mux.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MuxRow {
    pub config: &'static str,
    pub transport: &'static str,
    pub refill: &'static str,
    pub rtt_ms: u64,
    pub headline: bool,
    pub seeds: usize,
    pub jain: f64,
    pub jain_ci90: f64,
    pub jain_min: f64,
    /// Mean rate of circuit A and of a circuit B (B/s).
    #[serde(rename = "rate_a_Bps")]
    pub rate_a: f64,
    #[serde(rename = "rate_b_Bps")]
    pub rate_b: f64,
    /// All circuits together over the bottleneck's payload rate.
    #[serde(rename = "utilization")]
    pub utilisation: f64,
}

/// Everything the multiplexing runs produced: summary.json's
/// `mux_fairness` and `mux`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MuxOut {
    /// `{transport: jain}` of the headline configurations at the headline RTT.
    #[serde(rename = "mux_fairness")]
    pub headline: BTreeMap<String, f64>,
    #[serde(rename = "mux")]
    pub rows: Vec<MuxRow>,
    #[serde(skip)]
    pub runs: Vec<MuxRun>,
}

impl MuxOut {
    pub fn row(&self, config: &str, rtt_ms: u64) -> Option<&MuxRow> {
        self.rows
            .iter()
            .find(|r| r.config == config && r.rtt_ms == rtt_ms)
    }
}

/// Runs every configuration at its RTTs and seeds.
pub fn run(plan: &Plan, ctx: &Ctx<'_, MuxOut>) -> anyhow::Result<MuxOut> {
    let cfgs = configs();
    let mut rtts = plan.mux_sensitivity_rtts_ms.clone();
    if !rtts.contains(&plan.mux_rtt_ms) {
        rtts.push(plan.mux_rtt_ms);
    }
    rtts.sort_unstable();
    let mut jobs = Vec::new();
    for c in &cfgs {
        for &rtt in &rtts {
            if !c.headline && !plan.mux_sensitivity_rtts_ms.contains(&rtt) {
                continue;
            }
            for seed in 1..=plan.mux_seeds as u64 {
                jobs.push((c.clone(), rtt, seed));
            }
        }
    }
    ctx.progress.start("Multiplexing", jobs.len() as u64);
    let runs = ctx
        .par_map(jobs, |(c, rtt, seed)| run_one(&c, rtt, seed, plan.mux_secs))
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
    ctx.progress.finish();
    let mut rows = Vec::new();
    for c in &cfgs {
        for &rtt in &rtts {
            let rs: Vec<&MuxRun> = runs
                .iter()
                .filter(|r| r.config == c.key && r.rtt_ms == rtt)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let (j, jci) = mean_ci90(&rs.iter().map(|r| r.jain).collect::<Vec<_>>());
            let n = rs.len() as f64;
            let rate_a = rs.iter().map(|r| r.rates[0]).sum::<f64>() / n;
            let rate_b = rs
                .iter()
                .map(|r| r.rates[1..].iter().sum::<f64>() / (r.rates.len() - 1) as f64)
                .sum::<f64>()
                / n;
            let total = rs.iter().map(|r| r.rates.iter().sum::<f64>()).sum::<f64>() / n;
            rows.push(MuxRow {
                config: c.key,
                transport: c.transport,
                refill: c.refill.label(),
                rtt_ms: rtt,
                headline: c.headline && rtt == plan.mux_rtt_ms,
                seeds: rs.len(),
                jain: j,
                jain_ci90: jci,
                jain_min: rs.iter().map(|r| r.jain).fold(f64::INFINITY, f64::min),
                rate_a,
                rate_b,
                utilisation: total / payload_rate(c.cell_bytes),
            });
        }
    }
    let headline = rows
        .iter()
        .filter(|r| r.headline)
        .map(|r| (r.transport.to_string(), r.jain))
        .collect();
    Ok(MuxOut {
        rows,
        runs,
        headline,
    })
}

/// A row of `mux_runs.csv`: one run, a rate column per circuit.
#[derive(Default, Serialize)]
struct MuxRunRow<'a> {
    config: &'a str,
    rtt_ms: u64,
    seed: u64,
    jain: f64,
    #[serde(flatten)]
    rates: RateColumns<'a>,
}

/// Per-circuit rates as the columns `rate_c0_Bps`, `rate_c1_Bps`, ...
#[derive(Default)]
struct RateColumns<'a>(&'a [f64]);

impl Serialize for RateColumns<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (i, x) in self.0.iter().enumerate() {
            m.serialize_entry(&format!("rate_c{i}_Bps"), x)?;
        }
        m.end()
    }
}

/// `mux.csv`, `mux_runs.csv` and `mux.svg`.
pub fn outputs(plan: &Plan, out: &MuxOut, o: &mut Outputs) -> anyhow::Result<()> {
    o.csv("mux.csv", &out.rows)?;
    let runs: Vec<MuxRunRow> = out
        .runs
        .iter()
        .map(|r| MuxRunRow {
            config: r.config,
            rtt_ms: r.rtt_ms,
            seed: r.seed,
            jain: r.jain,
            rates: RateColumns(&r.rates),
        })
        .collect();
    o.csv("mux_runs.csv", &runs)?;
    super::plots::mux(plan, out, o)
}

pub fn claims(plan: &Plan, out: &MuxOut) -> Vec<Claim> {
    let mut c = Vec::new();
    let rtt = plan.mux_rtt_ms;
    let desc = |r: &MuxRow| {
        format!(
            "Jain {:.3} (lowest run {:.3}; {}); circuit A {}, each B circuit {}; {:.1} % of the payload rate used",
            r.jain,
            r.jain_min,
            plural(r.seeds, "run"),
            kbs(r.rate_a),
            kbs(r.rate_b),
            100.0 * r.utilisation
        )
    };
    // Jain's index of each run, over its seeds.
    let jains = |config: &str| {
        let v: Vec<f64> = out
            .runs
            .iter()
            .filter(|r| r.config == config && r.rtt_ms == rtt)
            .map(|r| r.jain)
            .collect();
        Estimate::mean_t90(&v)
    };
    if let Some(r) = out.row("vanilla", rtt) {
        c.push(
            Claim::new(
                "§4 intra-fairness",
                format!(
                    "Multiplexing: vanilla Tor (one TCP connection per relay pair, Nagle on, 100 ms refill) is unfair (10 circuits, 1 via relays A, 9 via relays B, RTT {rtt} ms)"
                ),
            )
            .measured(desc(r))
            .at_most("Jain's index", jains("vanilla"), 0.5),
        );
    }
    if let Some(r) = out.row("backtap", rtt) {
        c.push(
            Claim::new(
                "§4 intra-fairness",
                format!(
                    "Multiplexing: BackTap (round robin over circuits, nstor's 10 ms refill) is fair (same scenario, RTT {rtt} ms)"
                ),
            )
            .measured(desc(r))
            .at_least("Jain's index", jains("backtap"), 0.95),
        );
    }
    for key in [
        "vanilla",
        "backtap",
        "vanilla-on-demand",
        "backtap-100ms",
        "backtap-on-demand",
        "backtap-1ms",
    ] {
        let rs: Vec<&MuxRow> = out.rows.iter().filter(|r| r.config == key).collect();
        if rs.len() < 2 {
            continue;
        }
        c.push(Claim::info(
            "§4 intra-fairness (sensitivity)",
            format!(
                "Jain's index over RTTs: {} ({} refill)",
                transport_label(rs[0].transport),
                rs[0].refill
            ),
            rs.iter()
                .map(|r| format!("{} ms: {}", r.rtt_ms, f3(r.jain)))
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    c
}
