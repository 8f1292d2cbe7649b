//! Reproduction `ledbat-flow`: seed 003, C. Testa and D. Rossi,
//! "Delay-based congestion control: Flow vs. BitTorrent swarm
//! perspectives", Computer Networks 62 (2014), §3–4, the flow perspective.
//!
//! * Fig. 2: cwnd over time of two backlogged flows on 10 Mbit/s, 50 ms,
//!   100 packets, NewReno against Vegas, TCP-LP, TCP-NICE and LEDBAT, and
//!   two flows of each.
//! * Fig. 4: one NewReno flow and N = 1..10 low-priority flows on 1 Mbit/s,
//!   50 ms, 100 packets, 120 s; NewReno's share, utilisation, loss rate;
//!   reference: N + 1 NewReno flows. Claims that hang on controller
//!   constants are judged under two profiles ([`profile`]): RFC 6817 (our
//!   defaults) and the paper's simulator's constants.
//! * Fig. 5: NewReno against LEDBAT with the target τ from 2 % to 200 % of
//!   the buffer's queueing delay (1.2 s); the four regions.
//! * Fig. 6: two LEDBAT flows, τ2 = 100 ms, τ1/τ2 from 1 to 2.5.
//! * Beyond the paper: the latecomer problem of RFC 6817 LEDBAT and µTP,
//!   and how LEDBAT++'s periodic slowdowns fix it.
//!
//! Every run uses the ns-2-like TCP of [`net::tcp_ns2`] (per-segment ACKs,
//! initial window 2, no SACK) unless a sensitivity variant says otherwise;
//! the results and their differences from the paper are discussed in
//! `docs/reproductions/ledbat-flow.md`.
//!
//! The folder: this file (the plan and the [`Reproduction`]), `net`
//! (scenario and measurements), [`profile`] (controller profiles and
//! sensitivity variants), `runs` (the simulator runs), [`results`],
//! `claims`, `outputs` (CSVs) and `plots` (figures).

mod claims;
mod net;
mod outputs;
mod plots;
pub mod profile;
pub mod results;
mod runs;

pub use net::{
    cc, simulate, tcp_linux, tcp_ns2, FlowDef, Path, RunResult, RunSpec, SEG, STEADY_FROM,
};
pub use results::Results;
pub use runs::fig5_regions;

use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use serde::Serialize;

/// The reproduction `ledbat-flow`.
pub struct LedbatFlow;

impl Reproduction for LedbatFlow {
    type Plan = Params;
    type Results = Results;
    const NAME: &'static str = "ledbat-flow";
    const ABOUT: &'static str = "Testa and Rossi 2014 (seed paper 003) §3-4: LEDBAT, Vegas, LP and NICE against NewReno; LEDBAT target regions; latecomers";
    const PAPER: &'static str = "C. Testa, D. Rossi: Delay-based congestion control: Flow vs. BitTorrent swarm perspectives. Computer Networks 62 (2014), §3-4";
    const WALL: &'static str = "quick about 3 s, full about 40 s";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Params {
        Params::new(quick, seeds)
    }

    fn run(&self, p: &Params, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        runs::run(p, ctx)
    }

    fn claims(&self, p: &Params, r: &Results) -> Vec<Claim> {
        claims::claims(p, r)
    }

    fn outputs(&self, p: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        outputs::write(p, r, out)
    }
}

/// The low-priority protocols of Fig. 4, in the paper's order of priority
/// (lowest first).
pub const LOW_PRIORITY: [&str; 4] = ["ledbat", "nice", "vegas", "lp"];

/// The LEDBAT variants compared in the latecomer runs: (name in the
/// outputs, controller).
pub const LATE_VARIANTS: [(&str, &str); 3] = [
    ("rfc6817", "ledbat"),
    ("utp", "ledbat-utp"),
    ("ledbat++", "ledbat++"),
];

/// Everything a run of the reproduction can vary (the plan). [`Params::full`]
/// and [`Params::quick`] are the two built-in sizes; tests shrink them further.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// Fig. 2: simulated seconds per pair.
    pub fig2_secs: u64,
    /// Fig. 4: numbers of low-priority flows.
    pub fig4_ns: Vec<usize>,
    /// Fig. 4: protocols (from [`LOW_PRIORITY`]); the NewReno reference is always run.
    pub fig4_protocols: Vec<&'static str>,
    pub fig4_secs: u64,
    pub fig4_seeds: u32,
    /// Fig. 4 sensitivity variants: which N (empty: none).
    pub fig4_variant_ns: Vec<usize>,
    /// Fig. 5: targets as fractions of the buffer's queueing delay.
    pub fig5_rel: Vec<f64>,
    pub fig5_secs: u64,
    pub fig5_seeds: u32,
    /// Fig. 5 long runs: targets (fractions) and duration.
    pub fig5_long_rel: Vec<f64>,
    pub fig5_long_secs: u64,
    /// Fig. 6: τ1/τ2 ratios.
    pub fig6_ratios: Vec<f64>,
    pub fig6_secs: u64,
    /// Fig. 6 with jittered starts: seeds (0: skip).
    pub fig6_jitter_seeds: u32,
    /// Latecomers: flows, gap between starts, duration, seeds.
    pub late_flows: usize,
    pub late_gap_secs: u64,
    pub late_secs: u64,
    pub late_seeds: u32,
    /// Also run the latecomer scenario on the 10 Mbit/s path with 4 flows.
    pub late_10m: bool,
}

impl Params {
    /// The full reproduction.
    pub fn full() -> Self {
        Params {
            fig2_secs: 100,
            fig4_ns: (1..=10).collect(),
            fig4_protocols: LOW_PRIORITY.to_vec(),
            fig4_secs: 120,
            fig4_seeds: 20,
            fig4_variant_ns: vec![1, 2, 5, 10],
            fig5_rel: vec![
                0.02, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85,
                0.90, 0.95, 1.00, 1.05, 1.10, 1.20, 1.30, 1.50, 1.75, 2.00,
            ],
            fig5_secs: 120,
            fig5_seeds: 10,
            fig5_long_rel: vec![0.65, 0.80, 0.90, 1.00, 1.50],
            fig5_long_secs: 590,
            fig6_ratios: vec![1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0, 2.25, 2.5],
            fig6_secs: 180,
            fig6_jitter_seeds: 10,
            late_flows: 3,
            late_gap_secs: 30,
            late_secs: 300,
            late_seeds: 10,
            late_10m: true,
        }
    }

    /// `--quick`: fewer points and seeds, same scenarios.
    pub fn quick() -> Self {
        Params {
            fig2_secs: 60,
            fig4_ns: vec![1, 2, 5, 10],
            fig4_seeds: 4,
            fig4_variant_ns: vec![1, 10],
            fig5_rel: vec![
                0.02, 0.10, 0.30, 0.50, 0.65, 0.80, 0.90, 1.00, 1.20, 1.50, 2.00,
            ],
            fig5_seeds: 2,
            fig5_long_rel: vec![1.00],
            fig5_long_secs: 300,
            fig6_ratios: vec![1.0, 1.1, 1.2, 1.5, 2.0, 2.5],
            fig6_jitter_seeds: 3,
            late_seeds: 3,
            late_10m: false,
            ..Params::full()
        }
    }

    /// The full or quick plan, with `seeds` (if given, at least 1) for
    /// every seeded sweep.
    pub fn new(quick: bool, seeds: Option<u32>) -> Self {
        let mut p = if quick {
            Params::quick()
        } else {
            Params::full()
        };
        if let Some(s) = seeds.map(|s| s.max(1)) {
            p.fig4_seeds = s;
            p.fig5_seeds = s;
            p.fig6_jitter_seeds = s;
            p.late_seeds = s;
        }
        p
    }
}
