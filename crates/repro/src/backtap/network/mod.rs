//! Reproduction `backtap-network`: seed 002, Tschorsch and
//! Scheuermann, "Mind the Gap: Towards a Backpressure-Based Transport
//! Protocol for the Tor Network" (NSDI 2016), §4: the network experiments,
//! with every baseline the paper compares (vanilla Tor, PCTCP, N23) and the
//! congestion control Tor runs today (Tor Vegas, proposal 324).
//!
//! * **Fig. 6a, Table 1** ([`fairness`]): a star of the 50-relay TorPS file
//!   with 100 bulk circuits: Jain's index over per-circuit rates (CDF over
//!   seeds), overhead (payload goodput over bytes on the wire), total
//!   in-flight backlog.
//! * **Fig. 6b/c** ([`inter`]): circuits through one relay against `nTcp`
//!   loss-based TCP downloads on the relay's host; relay bucket 1 MB/s on a
//!   2 MB/s access link, and 10 MB/s with the link the bottleneck.
//! * **Fig. 7, Table 2** ([`dumbbell`], claims in [`dumbbell_claims`]): the NA/EU dumbbell of the
//!   100-relay file with 375 circuits (10 % bulk) for 300 s, and 800
//!   circuits: TTFB and TTLB CDFs, the end-to-end RTT CDF, completed
//!   downloads, mean download rate.
//! * **Tor Vegas's standing queue** ([`single`]): the single circuit of
//!   Fig. 5 ([`crate::backtap::common::net`], which `backtap-circuit`
//!   sweeps) with Tor Vegas and BackTap.
//! * **Scale** ([`scale`]): a Tor-sized network (6000 relays, 20 000
//!   circuits, 60 s), run by `hopwise bench --tor`.
//!
//! Every transport runs on the same seeds, paths, delays, access rates,
//! start times, think times and server delays ([`topo`]). Choices and
//! results, with the differences from the paper, are in
//! `docs/reproductions/backtap-network.md`.

pub mod dumbbell;
pub mod dumbbell_claims;
pub mod fairness;
pub mod inter;
mod plots;
pub mod scale;
pub mod single;
pub mod topo;

use crate::backtap::common::{RefillMode, PAPER};
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_tor::{TorConfig, TransportConfig};
use serde::Serialize;
use std::collections::BTreeMap;

pub use crate::backtap::common::CELL_DATA;
pub use dumbbell::{DumbbellOut, DumbbellRow};
pub use fairness::{FairnessOut, FairnessRow};
pub use inter::{InterOut, InterRow};
pub use single::{SingleOut, SingleRow};

/// The reproduction `backtap-network`.
pub struct BacktapNetwork;

/// A transport as the experiments run it: the Tor model's configuration and
/// the refill of every relay's token bucket.
#[derive(Clone, Debug)]
pub struct Transport {
    /// Name in tables and `summary.json`.
    pub key: &'static str,
    pub label: &'static str,
    pub refill: RefillMode,
    build: fn() -> TorConfig,
    /// One of the five compared transports (else a sensitivity variant).
    pub main: bool,
    /// The star's pair RTT for this variant (ms); `None`: the plan's.
    pub star_rtt_ms: Option<u64>,
}

impl Transport {
    pub fn config(&self) -> TorConfig {
        (self.build)()
    }
    /// Bytes a relay's bucket charges per cell (512 on TCP links, 519 for
    /// BackTap's cell item).
    pub fn cell_bytes(&self) -> f64 {
        match self.config().transport {
            TransportConfig::Backtap(_) => hopwise_proto::backtap::CELL_ITEM_LEN as f64,
            TransportConfig::Tcp(_) => 512.0,
        }
    }
}

/// Vanilla Tor: circuit and stream windows, Nagle on (seed 002 §4: "in all
/// our following simulations Nagle will be enabled").
fn vanilla() -> TorConfig {
    TorConfig::new(TransportConfig::vanilla())
}
fn pctcp() -> TorConfig {
    TorConfig::new(TransportConfig::pctcp())
}
fn n23() -> TorConfig {
    TorConfig::new(TransportConfig::n23())
}
fn n23_edge() -> TorConfig {
    TorConfig::new(TransportConfig::n23_edge_only())
}
fn tor_vegas() -> TorConfig {
    TorConfig::tor_vegas()
}
fn backtap() -> TorConfig {
    TorConfig::new(TransportConfig::backtap())
}
/// BackTap whose hops start with Vegas's slow start (a hopwise option,
/// `Startup::SlowStart`; the paper and nstor open the window by one cell per
/// round from 2).
fn backtap_slow_start() -> TorConfig {
    crate::backtap::common::backtap(hopwise_proto::backtap::Startup::SlowStart { gamma: 1 })
}

/// The five transports, in table order. Relays of the TCP-based ones refill
/// every 100 ms (Tor ≤ 0.3.2, the paper, nstor's `TorBaseApp`); BackTap's
/// every 10 ms (nstor's `TorBktapApp`).
pub fn transports() -> Vec<Transport> {
    use RefillMode::*;
    let t = |key, label, refill, build: fn() -> TorConfig| Transport {
        key,
        label,
        refill,
        build,
        main: true,
        star_rtt_ms: None,
    };
    vec![
        t("vanilla", "vanilla Tor", Periodic100, vanilla),
        t("pctcp", "PCTCP", Periodic100, pctcp),
        t("n23", "N23", Periodic100, n23),
        t("tor-vegas", "Tor Vegas", Periodic100, tor_vegas),
        t("backtap", "BackTap", Periodic10, backtap),
    ]
}

/// Sensitivity variants: BackTap with Tor's 100 ms and a 1 ms refill, BackTap
/// with slow start, N23 gated only at the edges (nstor), vanilla with a 10 ms
/// refill, Tor Vegas on relays that refill on demand, and the five transports
/// in a star with an 80 ms pair RTT.
pub fn variants() -> Vec<Transport> {
    use RefillMode::*;
    let t = |key, label, refill, build: fn() -> TorConfig| Transport {
        key,
        label,
        refill,
        build,
        main: false,
        star_rtt_ms: None,
    };
    vec![
        t(
            "backtap-100ms",
            "BackTap, 100 ms refill",
            Periodic100,
            backtap,
        ),
        t("backtap-1ms", "BackTap, 1 ms refill", Periodic1, backtap),
        t(
            "backtap-slowstart",
            "BackTap, slow start (hopwise)",
            Periodic10,
            backtap_slow_start,
        ),
        t(
            "backtap-hystart",
            "BackTap, HyStart++ and delay-qualified loss response (hopwise)",
            Periodic10,
            crate::backtap::common::backtap_hystart,
        ),
        t("n23-edge", "N23, edge-gated (nstor)", Periodic100, n23_edge),
        t("vanilla-10ms", "vanilla, 10 ms refill", Periodic10, vanilla),
        // Tor Vegas on relays of the Tor versions that have it (≥ 0.4.7),
        // whose buckets refill on demand (Tor ≥ 0.3.3).
        t(
            "tor-vegas-on-demand",
            "Tor Vegas, on-demand refill",
            OnDemand,
            tor_vegas,
        ),
    ]
    .into_iter()
    // The five transports in a star with nstor's helper default (20 ms per
    // access link, 80 ms between hosts) instead of its example's 40 ms.
    .chain(transports().into_iter().map(|m| {
        let (key, label) = match m.key {
            "vanilla" => ("vanilla-80ms", "vanilla, star RTT 80 ms"),
            "pctcp" => ("pctcp-80ms", "PCTCP, star RTT 80 ms"),
            "n23" => ("n23-80ms", "N23, star RTT 80 ms"),
            "tor-vegas" => ("tor-vegas-80ms", "Tor Vegas, star RTT 80 ms"),
            "backtap" => ("backtap-80ms", "BackTap, star RTT 80 ms"),
            k => unreachable!("no 80 ms variant named for {k}"),
        };
        Transport {
            key,
            label,
            main: false,
            star_rtt_ms: Some(80),
            ..m
        }
    }))
    .collect()
}

/// A transport or variant by key.
pub fn transport(key: &str) -> Option<Transport> {
    transports()
        .into_iter()
        .chain(variants())
        .find(|t| t.key == key)
}

/// What to run. [`Plan::full`] is the paper's setup as far as the machine
/// allows (see the doc), [`Plan::quick`] the CI variant; tests build smaller
/// plans.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub quick: bool,
    /// Fig. 6a: runs per transport, circuits, pair RTT of the star (ms),
    /// start window, start of the measurement, run length (s).
    pub star_seeds: u32,
    pub star_circuits: usize,
    pub star_rtt_ms: u64,
    pub star_start_s: u64,
    pub star_from_s: u64,
    pub star_secs: u64,
    /// Fig. 6a: sensitivity variants ([`variants`]) and their runs.
    pub star_variants: Vec<&'static str>,
    pub star_variant_seeds: u32,
    /// Fig. 6b/c: circuits, competing TCP downloads, transports, run length,
    /// start of the measurement, runs.
    pub inter_circuits: Vec<usize>,
    pub inter_n_tcp: Vec<usize>,
    pub inter_transports: Vec<&'static str>,
    /// Fig. 6b/c: sensitivity variants ([`variants`]); run, tabulated and
    /// compared with BackTap in an info claim, but not plotted or judged.
    pub inter_variants: Vec<&'static str>,
    pub inter_secs: u64,
    pub inter_from_s: u64,
    pub inter_seeds: u32,
    pub inter_rtt_ms: u64,
    /// Fig. 7: circuit counts, run length, start window, requests counted
    /// from (s), runs per count.
    pub dumbbell_circuits: Vec<usize>,
    pub dumbbell_secs: u64,
    pub dumbbell_start_s: u64,
    pub dumbbell_from_s: u64,
    pub dumbbell_seeds: u32,
    pub dumbbell_bulk_fraction: f64,
    /// Fig. 7: sensitivity variants ([`variants`]), on the same circuit
    /// counts and seeds.
    pub dumbbell_variants: Vec<&'static str>,
    /// Single circuit (Fig. 5 setup): RTTs, run length, fit from (s).
    pub single_rtts_ms: Vec<u64>,
    pub single_secs: u64,
    pub single_fit_from: u64,
}

impl Plan {
    pub fn full(seeds: Option<u32>) -> Plan {
        Plan {
            quick: false,
            star_seeds: seeds.unwrap_or(20).max(1),
            star_circuits: 100,
            // The paper does not give r. nstor's example (`scratch/
            // tor-example.cc`) runs its star with a 40 ms hop RTT, and at
            // 40 ms the backlog ratios are the paper's (about 6× vanilla and
            // PCTCP, 3× N23); the *-80ms variants run its helper's default.
            star_rtt_ms: 40,
            star_start_s: 30,
            star_from_s: 90,
            star_secs: 150,
            star_variants: vec![
                "backtap-100ms",
                "backtap-1ms",
                "backtap-slowstart",
                "backtap-hystart",
                "n23-edge",
                "vanilla-10ms",
                "tor-vegas-on-demand",
                "vanilla-80ms",
                "pctcp-80ms",
                "n23-80ms",
                "tor-vegas-80ms",
                "backtap-80ms",
            ],
            star_variant_seeds: seeds.unwrap_or(5).max(1),
            inter_circuits: vec![1, 2, 4, 8, 16, 32],
            inter_n_tcp: vec![1, 2, 4],
            inter_transports: vec!["vanilla", "pctcp", "n23", "tor-vegas", "backtap"],
            inter_variants: vec!["backtap-slowstart", "backtap-hystart"],
            inter_secs: 60,
            inter_from_s: 20,
            inter_seeds: seeds.unwrap_or(3).max(1),
            inter_rtt_ms: 80,
            dumbbell_circuits: vec![375, 800],
            dumbbell_secs: 300,
            dumbbell_start_s: 30,
            dumbbell_from_s: 60,
            dumbbell_seeds: seeds.unwrap_or(2).max(1),
            dumbbell_bulk_fraction: 0.1,
            dumbbell_variants: vec!["backtap-slowstart", "backtap-hystart"],
            // BackTap's linear start-up needs ~260 s at 900 ms (see
            // backtap-circuit), Tor Vegas ~120–240 s to converge at 683 ms.
            single_rtts_ms: vec![100, 300, 683, 900],
            single_secs: 400,
            single_fit_from: 300,
        }
    }

    pub fn quick(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(1).max(1);
        Plan {
            quick: true,
            star_seeds: seeds.unwrap_or(2).max(1),
            star_start_s: 10,
            star_from_s: 30,
            star_secs: 50,
            // HyStart's standing queue per circuit, beside BackTap's.
            star_variants: vec!["backtap-hystart"],
            star_variant_seeds: s,
            inter_circuits: vec![1, 4, 16],
            inter_n_tcp: vec![1, 4],
            inter_transports: vec!["vanilla", "backtap"],
            inter_variants: vec![],
            inter_secs: 40,
            inter_from_s: 15,
            inter_seeds: s,
            // The 800-circuit stress run is the full plan's (it alone would
            // double the quick run's time).
            dumbbell_circuits: vec![375],
            dumbbell_secs: 90,
            dumbbell_start_s: 15,
            dumbbell_from_s: 30,
            dumbbell_seeds: s,
            single_rtts_ms: vec![100, 300],
            single_secs: 120,
            single_fit_from: 60,
            ..Plan::full(Some(s))
        }
    }
}

/// One line of `fairness` (the format of its acceptance criteria).
#[derive(Clone, Debug, Serialize)]
pub struct FairnessSummary {
    pub transport: String,
    pub jain_median: f64,
    pub jain_p10: f64,
    /// BackTap's median minus this one's: 90 % paired bootstrap interval
    /// over seeds (absent for BackTap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backtap_gap_ci90: Option<(f64, f64)>,
}

/// Wall time and speed of a group of runs.
#[derive(Clone, Debug, Serialize)]
pub struct Speed {
    pub experiment: String,
    pub transport: String,
    pub runs: usize,
    pub simulated_s: f64,
    /// Mean wall seconds per run, and events per wall second.
    pub wall_s_per_run: f64,
    pub events_per_run: f64,
    pub events_per_s: f64,
}

/// What the runs measured. `fairness`, `overhead`, `backlog`,
/// `inter_fairness` and `dumbbell` in summary.json are the keys the
/// acceptance criteria name; the rest is detail. The parts' own results
/// (with every run) are not serialized; a part that has not finished is
/// `None` and its keys are empty.
#[derive(Default, Serialize)]
pub struct Results {
    pub fairness: Vec<FairnessSummary>,
    pub overhead: BTreeMap<String, f64>,
    pub backlog: BTreeMap<String, f64>,
    pub inter_fairness: Vec<InterRow>,
    pub dumbbell: Vec<DumbbellRow>,
    pub fairness_detail: Vec<FairnessRow>,
    pub single_circuit: Vec<SingleRow>,
    pub speed: Vec<Speed>,
    #[serde(skip)]
    pub star: Option<FairnessOut>,
    #[serde(skip)]
    pub inter: Option<InterOut>,
    #[serde(skip)]
    pub dumbbell_out: Option<DumbbellOut>,
    #[serde(skip)]
    pub single: Option<SingleOut>,
}

impl Results {
    /// Fills summary.json's keys from the parts that have finished.
    fn summarize(&mut self) {
        if let Some(fo) = &self.star {
            let main = || fo.rows.iter().filter(|r| r.main);
            self.fairness = main()
                .map(|r| FairnessSummary {
                    transport: r.transport.clone(),
                    jain_median: r.jain_median,
                    jain_p10: r.jain_p10,
                    backtap_gap_ci90: r.backtap_gap_ci90,
                })
                .collect();
            self.overhead = main().map(|r| (r.transport.clone(), r.overhead)).collect();
            self.backlog = main()
                .map(|r| (r.transport.clone(), r.backlog_bytes))
                .collect();
            self.fairness_detail = fo.rows.clone();
        }
        if let Some(io) = &self.inter {
            self.inter_fairness = io.rows.clone();
        }
        if let Some(dbo) = &self.dumbbell_out {
            self.dumbbell = dbo.rows.clone();
        }
        if let Some(so) = &self.single {
            self.single_circuit = so.rows.clone();
        }
        self.speed = [
            self.star.as_ref().map(|x| &x.speed),
            self.inter.as_ref().map(|x| &x.speed),
            self.dumbbell_out.as_ref().map(|x| &x.speed),
        ]
        .into_iter()
        .flatten()
        .flatten()
        .cloned()
        .collect();
    }
}

impl Reproduction for BacktapNetwork {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "backtap-network";
    const ABOUT: &'static str = "Tschorsch and Scheuermann 2016 (BackTap, seed paper 002) §4: Fig. 6 (fairness, overhead, backlog, inter-fairness), Fig. 7 (dumbbell TTFB/TTLB); vanilla, PCTCP, N23, Tor Vegas, BackTap";
    const PAPER: &'static str = PAPER;
    const WALL: &'static str = "quick about 2 min, full 35-50 min";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        if quick {
            Plan::quick(seeds)
        } else {
            Plan::full(seeds)
        }
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        let mut r = Results::default();
        let done = |r: &mut Results| -> anyhow::Result<()> {
            r.summarize();
            ctx.checkpoint(r)
        };
        ctx.progress
            .note("Fig. 6a, Table 1: star of 50 relays, 100 bulk circuits");
        r.star = Some(fairness::run(plan, &ctx.part())?);
        done(&mut r)?;
        ctx.progress
            .note("Fig. 6b/c: circuits against TCP downloads on a relay's host");
        r.inter = Some(inter::run(plan, &ctx.part())?);
        done(&mut r)?;
        let counts: Vec<String> = plan
            .dumbbell_circuits
            .iter()
            .map(|c| c.to_string())
            .collect();
        ctx.progress.note(&format!(
            "Fig. 7, Table 2: NA/EU dumbbell, {} circuits",
            counts.join(" and ")
        ));
        r.dumbbell_out = Some(dumbbell::run(plan, &ctx.part())?);
        done(&mut r)?;
        ctx.progress
            .note("Single circuit (Fig. 5 setup): Tor Vegas's standing queue vs BackTap");
        r.single = Some(single::run(plan, &ctx.part())?);
        r.summarize();
        Ok(r)
    }

    fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
        let mut claims = Vec::new();
        if let Some(fo) = &r.star {
            claims.extend(fairness::claims(plan, fo));
        }
        if let Some(io) = &r.inter {
            claims.extend(inter::claims(plan, io));
        }
        if let Some(dbo) = &r.dumbbell_out {
            claims.extend(dumbbell_claims::claims(plan, dbo));
        }
        if let Some(so) = &r.single {
            let none = FairnessOut::default();
            claims.extend(single::claims(plan, so, r.star.as_ref().unwrap_or(&none)));
        }
        if let Some(dbo) = &r.dumbbell_out {
            claims.push(dumbbell_claims::speed_claim(plan, dbo));
        }
        claims
    }

    fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        if let Some(fo) = &r.star {
            fairness::outputs(plan, fo, out)?;
            out.data(
                &["fig6a_jain_cdf.svg"],
                &["fig6a_runs.csv", "fig6a_rates.csv"],
            );
        }
        if let Some(io) = &r.inter {
            inter::outputs(plan, io, out)?;
            out.data(
                &["fig6b_bucket.svg", "fig6c_access-link.svg"],
                &["inter.csv", "inter_runs.csv"],
            );
        }
        if let Some(dbo) = &r.dumbbell_out {
            let written = out.files().len();
            dumbbell::outputs(plan, dbo, out)?;
            // The dumbbell's figures are named after their circuit counts.
            let fig7: Vec<String> = out.files()[written..]
                .iter()
                .filter(|f| f.starts_with("fig7_") && f.ends_with(".svg"))
                .cloned()
                .collect();
            let fig7: Vec<&str> = fig7.iter().map(String::as_str).collect();
            out.data(
                &fig7,
                &["dumbbell.csv", "dumbbell_cdf.csv", "dumbbell_runs.csv"],
            );
        }
        if let Some(so) = &r.single {
            single::outputs(so, out)?;
        }
        Ok(())
    }
}

/// Formats a fraction as a percentage with one decimal.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}
