//! Reproduction `ledbat-swarm`: seed 003 §5 (Testa, Rossi et al., "Delay-based
//! congestion control: Flow vs. BitTorrent swarm perspectives"), BitTorrent
//! swarms whose peers upload with NewReno, LEDBAT, Vegas, LP or NICE.
//!
//! Every run is a packet-level swarm ([`run_swarm`]) of BitTorrent
//! peers ([`hopwise_overlay::swarm::peer::Peer`]) on the paper's star of ADSL-like access links:
//! 1 Mbit/s up, 8 Mbit/s down, 200-packet buffers, one-way delays uniform in
//! 0–25 ms. One seed, then 100 leechers arriving at 0.1 Hz; the first 50
//! completions are the transient, the next 50 are counted.
//!
//! * **Fig. 8 and 9a**: three seed policies (never leave, random stay,
//!   immediate leave) × homogeneous NewReno, homogeneous LEDBAT and a
//!   50–50 mix: completion times per class and the uplink-queue CCDF.
//! * **Fig. 9b**: the 50–50 mix, random stay, over access buffers of
//!   25–400 packets.
//! * **Fig. 10 and 11**: random stay, homogeneous swarms of each
//!   protocol, and 50–50 mixes of NewReno with each of the others.
//! * **Fig. 12**: all-LEDBAT swarms where half the peers use τ2 = 100 ms
//!   and half τ1 = 25–1000 ms.
//!
//! The folder: this file (constants, configurations, the plan and the
//! [`Reproduction`]), [`results`] (rows over runs), `claims`, `outputs` (CSVs) and
//! `plots` (figures). Choices and differences from the paper are in
//! `docs/reproductions/ledbat-swarm.md`.

mod claims;
mod outputs;
mod plots;
pub mod results;

pub use claims::claims;
pub use results::{Results, Row};

use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_overlay::swarm::driver::{run_swarm, Class, SwarmResult, SwarmSpec};
use hopwise_overlay::swarm::peer::Stay;
use hopwise_proto::cc::{CcConfig, LedbatConfig, LedbatVariant};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use serde::Serialize;

/// The reproduction `ledbat-swarm`.
pub struct LedbatSwarm;

/// What to run: every configuration of [`configs`], `runs` times each
/// (seeds 1..=runs), with `leechers` leechers per swarm.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub runs: u32,
    pub leechers: usize,
}

impl Reproduction for LedbatSwarm {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "ledbat-swarm";
    const ABOUT: &'static str = "Testa, Rossi et al. (seed paper 003 §5): BitTorrent swarms uploading with NewReno, LEDBAT, Vegas, LP or NICE; completion time and uplink queues (Fig. 8-12)";
    const PAPER: &'static str = "Testa, Rossi et al., Delay-based congestion control: Flow vs. BitTorrent swarm perspectives (seed 003), §5";
    const WALL: &'static str = "quick about 12 s, full about 5 min";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        Plan {
            runs: seeds.unwrap_or(if quick { 2 } else { 10 }).max(1),
            leechers: if quick { 30 } else { 100 },
        }
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        let cfgs = configs();
        let mut jobs = Vec::new();
        for c in &cfgs {
            for s in 0..plan.runs as u64 {
                jobs.push((spec(c, plan.leechers), s + 1));
            }
        }
        ctx.progress.note(&format!(
            "{} swarm configurations × {} runs ({} leechers each)",
            cfgs.len(),
            plan.runs,
            plan.leechers
        ));
        ctx.progress.start("swarms", jobs.len() as u64);
        let res: Vec<SwarmResult> = ctx
            .par_map(jobs, |(sp, seed)| run_swarm(&sp, seed))
            .into_iter()
            .collect::<Result<Vec<_>, String>>()
            .map_err(anyhow::Error::msg)?;
        ctx.progress.finish();
        if let Some(e) = res.iter().flat_map(|r| r.errors.iter()).next() {
            anyhow::bail!("a swarm peer reported an error: {e}");
        }
        Ok(Results::of(plan, cfgs, res))
    }

    fn claims(&self, _: &Plan, r: &Results) -> Vec<Claim> {
        claims(&r.rows)
    }

    fn outputs(&self, _: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        outputs::write(r, out)
    }
}

/// The torrent: 32 pieces of 256 KiB (8 MiB). The paper does not give its
/// file size.
pub const PIECES: u32 = 32;
pub const PIECE_LEN: u32 = 256 << 10;
/// The access links (§5).
pub const UP_KBPS: u64 = 1000;
pub const DOWN_KBPS: u64 = 8000;
pub const BUFFER: u64 = 200;
pub const MAX_DELAY_MS: u64 = 25;
/// LEDBAT's target (§5: "fixed at τ = 100 ms").
pub const TARGET_MS: u64 = 100;
/// Buffers of the Fig. 9b sweep (packets).
pub const BUFFERS: [u64; 5] = [25, 50, 100, 200, 400];
/// τ1/τ2 of the Fig. 12 sweep (τ2 = 100 ms).
pub const TARGET_RATIOS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0];

/// The seed policies of Fig. 8.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    NeverLeave,
    RandomStay,
    ImmediateLeave,
}

impl Policy {
    pub const ALL: [Policy; 3] = [
        Policy::NeverLeave,
        Policy::RandomStay,
        Policy::ImmediateLeave,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Policy::NeverLeave => "never leave",
            Policy::RandomStay => "random stay",
            Policy::ImmediateLeave => "immediate leave",
        }
    }
    fn stay(self) -> Stay {
        match self {
            Policy::NeverLeave => Stay::Forever,
            // §5: "exponentially distributed time, with mean equal to half
            // their download time".
            Policy::RandomStay => Stay::Random { frac: 0.5 },
            Policy::ImmediateLeave => Stay::Leave,
        }
    }
}

fn ledbat(target_ms: f64) -> CcConfig {
    let mut c = LedbatConfig::new(LedbatVariant::Rfc6817);
    c.target = Some(Dur::from_secs_f64(target_ms / 1000.0));
    CcConfig::Ledbat(c)
}

fn class(name: &str) -> Class {
    let cc = if name == "ledbat" {
        ledbat(TARGET_MS as f64)
    } else {
        CcConfig::from_name(name).expect("built-in name")
    };
    Class {
        name: name.into(),
        cc,
    }
}

/// One configuration: which figure, the classes, the policy and buffer.
#[derive(Clone, Debug)]
pub struct Config {
    pub fig: &'static str,
    pub population: String,
    pub policy: Policy,
    pub buffer: u64,
    pub target_ratio: Option<f64>,
    pub classes: Vec<Class>,
}

/// The swarm of configuration `c` with `leechers` leechers.
pub fn spec(c: &Config, leechers: usize) -> SwarmSpec {
    SwarmSpec {
        leechers,
        arrival_mean: Dur::from_secs(10),
        transient: leechers / 2,
        pieces: PIECES,
        piece_len: PIECE_LEN,
        up: Rate::from_kbps(UP_KBPS),
        down: Rate::from_kbps(DOWN_KBPS),
        buffer: c.buffer,
        max_delay: Dur::from_millis(MAX_DELAY_MS),
        classes: c.classes.clone(),
        stay: c.policy.stay(),
        pipeline: 5,
        slots: 3,
        tracker_peers: 40,
        min_peers: 20,
        limit: Dur::from_secs(6 * 3600),
    }
}

/// Every configuration, in the order of `swarm.csv`.
pub fn configs() -> Vec<Config> {
    let mut v = Vec::new();
    let cfg = |fig, population: &str, policy, buffer, classes: Vec<Class>| Config {
        fig,
        population: population.into(),
        policy,
        buffer,
        target_ratio: None,
        classes,
    };
    for policy in Policy::ALL {
        v.push(cfg(
            "fig8",
            "newreno",
            policy,
            BUFFER,
            vec![class("newreno")],
        ));
        v.push(cfg("fig8", "ledbat", policy, BUFFER, vec![class("ledbat")]));
        v.push(cfg(
            "fig8",
            "50-50",
            policy,
            BUFFER,
            vec![class("newreno"), class("ledbat")],
        ));
    }
    for b in BUFFERS.into_iter().filter(|&b| b != BUFFER) {
        v.push(cfg(
            "fig9b",
            "50-50",
            Policy::RandomStay,
            b,
            vec![class("newreno"), class("ledbat")],
        ));
    }
    for p in ["vegas", "lp", "nice"] {
        v.push(cfg("fig10", p, Policy::RandomStay, BUFFER, vec![class(p)]));
        v.push(cfg(
            "fig11",
            &format!("newreno-{p}"),
            Policy::RandomStay,
            BUFFER,
            vec![class("newreno"), class(p)],
        ));
    }
    for r in TARGET_RATIOS.into_iter().filter(|&r| r != 1.0) {
        let t1 = TARGET_MS as f64 * r;
        v.push(Config {
            fig: "fig12",
            population: format!("ledbat τ1/τ2 = {r}"),
            policy: Policy::RandomStay,
            buffer: BUFFER,
            target_ratio: Some(r),
            classes: vec![
                Class {
                    name: format!("ledbat τ={t1} ms"),
                    cc: ledbat(t1),
                },
                Class {
                    name: format!("ledbat τ={TARGET_MS} ms"),
                    cc: ledbat(TARGET_MS as f64),
                },
            ],
        });
    }
    v
}
