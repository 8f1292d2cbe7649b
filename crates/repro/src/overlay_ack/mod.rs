//! Reproduction `overlay-ack`: seed 000, Marks, Tschorsch and
//! Scheuermann, "Unleashing Tor, BitTorrent & Co.: How to Relieve TCP
//! Deficiencies in Overlays". An overlay node's inbound transfer collapses
//! when its ACKs queue behind the node's outbound data (§III); "ACKs first"
//! on the node's egress fixes unidirectional traffic (§IV); piggybacked ACKs
//! defeat it for bidirectional connections (§V-A), which one connection per
//! direction fixes (§V-B); §VI's dynamic split policy is an agent.
//!
//! * `setup.rs`: the testbed, the modes, one run; `dynamic.rs`: §VI's
//!   policy as an agent;
//! * `runs.rs`: the simulator's runs (every mode, Fig. 2b's probed run,
//!   the sensitivity study);
//! * `analysis.rs`: the statistics of a mode over its runs, and the values
//!   the claims judge with their intervals;
//! * `claims.rs`, `outputs.rs` (summary.json's setup, CSVs), `figures.rs`;
//! * `lab/` (feature `lab`): the same testbed on kernel TCP.
//!
//! Setup, parameters and their sources: `docs/reproductions/overlay-ack.md`.

pub mod analysis;
mod claims;
pub mod dynamic;
mod figures;
#[cfg(feature = "lab")]
pub mod lab;
mod outputs;
mod runs;
pub mod setup;

pub use analysis::{analyse, DynStats, Judged, ModeStats, VarRatio};
pub use dynamic::{DynPolicy, OverlayNode, PeerPlan, PolicyEvent, PolicyEventKind};
pub use outputs::{Fig2bOut, ParamsOut, TimelineOut, Units};
pub use runs::SweepPoint;
pub use setup::{mean_between, Mode, ProbeRow, RunResult, SeenSegment, Setup, Timeline};

use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use serde::Serialize;

/// Runs per mode by default (the paper: 100).
pub const DEFAULT_RUNS: u32 = 100;
/// Runs per mode with `--quick`.
pub const QUICK_RUNS: u32 = 8;

/// The reproduction, as the registry holds it.
pub struct OverlayAck;

/// What a reproduction run does (its plan); [`Params::full`] and
/// [`Params::quick`] are the CLI's variants, tests build smaller ones.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// Runs per mode (seeds 1..=runs, the same seeds for every mode).
    pub runs: u32,
    pub modes: Vec<Mode>,
    /// Base setup; `mode` and `seed` are set per run. summary.json
    /// describes it in `timeline` and `parameters`.
    #[serde(skip)]
    pub base: Setup,
    /// The sensitivity study (switch buffer, receive window, CUBIC's β),
    /// with this many runs per mode and variant; 0 = skip.
    pub sensitivity_runs: u32,
    /// Write SVG figures (and the CSVs of the single runs they show).
    pub figures: bool,
}

impl Params {
    /// The default variant: the paper's 300 s timeline, 100 runs per mode.
    pub fn full(runs: u32) -> Params {
        Params {
            runs,
            modes: Mode::ALL.to_vec(),
            base: Setup::paper(Mode::Plain, 1),
            sensitivity_runs: 8,
            figures: true,
        }
    }

    /// `--quick`: the same 300 s timeline with fewer runs and no sweep.
    pub fn quick(runs: u32) -> Params {
        Params {
            sensitivity_runs: 0,
            ..Params::full(runs)
        }
    }
}

/// What the runs measured. summary.json holds the serialized fields; the
/// runs themselves, the probe and the trace feed the CSVs and figures.
#[derive(Serialize, Default)]
pub struct Results {
    pub reproduction: &'static str,
    pub runs_per_mode: u32,
    pub timeline: TimelineOut,
    pub parameters: ParamsOut,
    pub units: Units,
    pub modes: Vec<ModeStats>,
    /// bidir-ackprio's var_10s over split-ackprio's, with a bootstrap interval.
    pub var_10s_ratio: Option<VarRatio>,
    pub fig2b: Fig2bOut,
    pub split_events_example: Vec<PolicyEvent>,
    pub sensitivity: Vec<SweepPoint>,
    /// What the claims judge, with intervals over runs (in the claims).
    #[serde(skip)]
    pub judged: Judged,
    /// Every main run, in the order mode × seed.
    #[serde(skip)]
    pub runs: Vec<RunResult>,
    /// Fig. 2b: the probed run's samples and its captured segments.
    #[serde(skip)]
    pub probe: Vec<ProbeRow>,
    #[serde(skip)]
    pub trace: outputs::SeqTrace,
}

impl Results {
    fn new(plan: &Params) -> Results {
        Results {
            reproduction: OverlayAck::NAME,
            runs_per_mode: plan.runs,
            timeline: TimelineOut::of(&plan.base),
            parameters: ParamsOut::of(&plan.base),
            ..Results::default()
        }
    }
}

impl Reproduction for OverlayAck {
    type Plan = Params;
    type Results = Results;
    const NAME: &'static str = "overlay-ack";
    const ABOUT: &'static str = "Marks et al. 2010 (seed paper 000): ACKs stuck behind data on an overlay link; ACK prioritisation; one connection per direction";
    const PAPER: &'static str = "Marks, Tschorsch, Scheuermann: Unleashing Tor, BitTorrent & Co.: How to Relieve TCP Deficiencies in Overlays (LCN 2010; TR-2010-001)";
    const WALL: &'static str = "quick about 20 s, full about 12 min";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Params {
        let runs = seeds
            .unwrap_or(if quick { QUICK_RUNS } else { DEFAULT_RUNS })
            .max(1);
        if quick {
            Params::quick(runs)
        } else {
            Params::full(runs)
        }
    }

    fn run(&self, plan: &Params, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        runs::run(plan, ctx)
    }

    fn claims(&self, plan: &Params, r: &Results) -> Vec<Claim> {
        claims::claims(&plan.base, &r.modes, &r.judged, Some(&r.fig2b), true)
    }

    fn outputs(&self, plan: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        outputs::write(plan, r, out)
    }
}
