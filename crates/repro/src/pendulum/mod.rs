//! Reproduction `pendulum`: seed 004, Heusse et al., "Two-way TCP
//! connections: old problem, new insight". Two-way TCP on symmetric and
//! asymmetric links: the download collapse (Fig. 1), ACK compression against
//! the data pendulum (Fig. 3–9), the throughput ratio model (Eq. 6–11,
//! Fig. 10) and buffers counted in packets (Fig. 11).
//!
//! Scenarios are built in code ([`Setup`]); [`Pendulum`] runs a [`Plan`]
//! (the paper's lengths, or the `--quick` one) under the toolkit's driver.
//! Choices and results are documented in `docs/reproductions/pendulum.md`.
//! Two choices matter:
//!
//! * every run uses a 1 s minimum RTO ([`MIN_RTO`]), applied like our
//!   default (Linux's rule) to the deviation term, so RTO ≥ SRTT + 1 s: the
//!   paper's figures come from QualNet 5.0.2, whose TCP is BSD-derived, and
//!   a BSD stack keeps the RTO at least 1 s and at least the last RTT plus
//!   two 500 ms ticks;
//! * the symmetric cases (Fig. 3–5) start both flows at the same instant and
//!   are deterministic; the long runs shift flow starts by a seeded random
//!   amount, one run per seed.
//!
//! The folder: [`setup`] (Fig. 2 in code, measurements of a run), one file
//! per figure's runs ([`fig1`], [`acks`] for Fig. 3–5 and the sensitivity
//! sweep, [`asym`] for Fig. 6–9, [`fig10`], [`fig11`], [`sizing`]), the
//! claims ([`claims`]), the CSVs and figures ([`outputs`]), and with the
//! `lab` feature the same paper on kernel TCP ([`lab_fig1`], [`lab_fig10`],
//! [`lab_acks`]).

pub mod acks;
pub mod asym;
mod claims;
pub mod fig1;
pub mod fig10;
pub mod fig11;
#[cfg(feature = "lab")]
pub mod lab_acks;
#[cfg(feature = "lab")]
pub mod lab_fig1;
#[cfg(feature = "lab")]
pub mod lab_fig10;
mod outputs;
pub mod setup;
pub mod sizing;

pub use acks::{ack_measure, ack_setup, AckCase, AckPlot, SensRow, ACK_CASES};
pub use asym::{AsymCase, AsymPlot};
pub use fig1::{fig1_measure, fig1_setup, Fig1, Fig1Run, Fig1Traces};
pub use fig10::{aggregate, run_pair, sweep_setup, Agg, Fig10Row, PairRun, SWEEP_WARM};
pub use fig11::{fig11_setup, Fig11Row, FIG11_DOWN_PACKETS, FIG11_TCP_BUFFER};
pub use outputs::burst_histogram;
pub use setup::{
    goodput_between, hist_median, hist_sum, receiver, sender, simulate, Setup, DOWN_IFACE,
    DOWN_RATE, MIN_RTO, UP_IFACE, UP_RATE,
};
pub use sizing::Sizing;

use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_models::pendulum;
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// The reproduction, as the registry runs it.
pub struct Pendulum;

/// What to run. [`Plan::full`] is the paper's setup; [`Plan::quick`] shortens
/// the sweeps for CI; tests build smaller plans still.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub quick: bool,
    /// Fig. 1: runs with different start jitter.
    pub fig1_seeds: u32,
    /// Fig. 3–5: length of each symmetric run, seconds.
    pub ack_secs: u64,
    /// Run the sensitivity sweep of ACK compression (endpoint delay, start offset).
    pub ack_sensitivity: bool,
    /// Fig. 6–9: length of each asymmetric run, seconds.
    pub asym_secs: u64,
    /// Fig. 10: seconds per point, runs per point, and the grid.
    pub fig10_secs: u64,
    pub fig10_seeds: u32,
    pub fig10_tp_ms: Vec<u64>,
    pub fig10_down_buffers: Vec<u64>,
    pub fig10_up_buffers: Vec<u64>,
    /// Fig. 11: seconds per point, runs per point, and the grid (packets).
    pub fig11_secs: u64,
    pub fig11_seeds: u32,
    pub fig11_tp_ms: Vec<u64>,
    pub fig11_up_packets: Vec<u64>,
    /// Simulate the uplink buffer the sizing helper proposes.
    pub sizing_demo: bool,
}

impl Plan {
    /// The paper's setup: 600 s per Fig. 10 point, 1000 s per Fig. 11 point.
    pub fn full(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(5).max(1);
        Plan {
            quick: false,
            fig1_seeds: s,
            ack_secs: 60,
            ack_sensitivity: true,
            asym_secs: 120,
            fig10_secs: 600,
            fig10_seeds: s,
            fig10_tp_ms: vec![20, 100],
            fig10_down_buffers: vec![30_000, 60_000, 120_000],
            fig10_up_buffers: vec![
                3_000, 6_000, 9_000, 12_000, 15_000, 20_000, 30_000, 45_000, 60_000,
            ],
            fig11_secs: 1000,
            fig11_seeds: s,
            fig11_tp_ms: vec![20, 100],
            fig11_up_packets: vec![5, 8, 10, 12, 15, 20, 25, 30, 40, 50],
            sizing_demo: true,
        }
    }

    /// The CI variant: the same grids, shorter runs, one run per point.
    pub fn quick(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(1).max(1);
        Plan {
            quick: true,
            fig1_seeds: seeds.unwrap_or(2).max(1),
            asym_secs: 60,
            fig10_secs: 300,
            fig10_seeds: s,
            fig11_secs: 500,
            fig11_seeds: s,
            ..Plan::full(Some(s))
        }
    }
}

/// The model's constants and the TCP every run uses.
#[derive(Clone, Debug, Serialize)]
pub struct Constants {
    pub ack_size_bytes: f64,
    pub data_size_bytes: f64,
    pub rho: f64,
    pub rho_eff_delayed_ack: f64,
    pub capacity_ratio_k: f64,
    pub down_rate_bps: u64,
    pub up_rate_bps: u64,
    pub min_rto_ms: u64,
    pub access_rate_bps: u64,
    pub tcp: &'static str,
}

impl Constants {
    fn of_the_paper() -> Constants {
        let probe = Setup::asymmetric(
            Limit::Bytes(30_000),
            Limit::Bytes(30_000),
            Dur::ZERO,
            Dur::SECOND,
        )
        .model();
        Constants {
            ack_size_bytes: pendulum::ACK_SIZE,
            data_size_bytes: pendulum::DATA_SIZE,
            rho: probe.rho(),
            rho_eff_delayed_ack: probe.rho() / 2.0,
            capacity_ratio_k: probe.capacity_ratio(),
            down_rate_bps: DOWN_RATE.bps(),
            up_rate_bps: UP_RATE.bps(),
            min_rto_ms: MIN_RTO.as_millis(),
            access_rate_bps: setup::ACCESS_RATE.bps(),
            tcp: "NewReno, SACK, timestamps, MSS 1448 B payload; RTO >= SRTT + 1 s (min_rto 1 s on the deviation term, like BSD's RTT + 2 ticks of 500 ms), timer re-armed on retransmitting the head",
        }
    }
}

/// What the runs measured (summary.json holds every field but `plots`).
/// A part not run yet (or not in the plan) is `null` or empty.
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    pub constants: Constants,
    pub fig1: Option<Fig1>,
    pub ack_bursts: Vec<AckCase>,
    pub ack_sensitivity: Vec<SensRow>,
    pub asym: Vec<AsymCase>,
    pub fig10: Vec<Fig10Row>,
    pub fig11: Vec<Fig11Row>,
    pub sizing: Option<Sizing>,
    /// Time series for the figures.
    #[serde(skip)]
    pub plots: Plots,
}

/// The runs' time series that the figures show and summary.json leaves out.
#[derive(Clone, Debug, Default)]
pub struct Plots {
    pub fig1: Fig1Traces,
    /// One per case of [`Results::ack_bursts`].
    pub ack: Vec<AckPlot>,
    /// One per case of [`Results::asym`].
    pub asym: Vec<AsymPlot>,
}

impl Reproduction for Pendulum {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "pendulum";
    const ABOUT: &'static str = "Heusse et al. 2011 (seed paper 004): two-way TCP on asymmetric links, ACK compression vs. the data pendulum, buffer sizing (Eq. 11)";
    const PAPER: &'static str =
        "seed 004: Heusse, Merritt, Brown, Duda, Two-way TCP connections: old problem, new insight";
    const WALL: &'static str = "quick about 5 s, full about 2 min";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        if quick {
            Plan::quick(seeds)
        } else {
            Plan::full(seeds)
        }
    }

    /// Runs each figure in turn, saving the outputs of what is finished
    /// after each.
    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        let mut r = Results {
            constants: Constants::of_the_paper(),
            fig1: None,
            ack_bursts: Vec::new(),
            ack_sensitivity: Vec::new(),
            asym: Vec::new(),
            fig10: Vec::new(),
            fig11: Vec::new(),
            sizing: None,
            plots: Plots::default(),
        };
        ctx.progress.note("Fig. 1: download collapse under uploads");
        let (f1, traces) = fig1::run(plan, ctx)?;
        (r.fig1, r.plots.fig1) = (Some(f1), traces);
        ctx.checkpoint(&r)?;
        ctx.progress
            .note("Fig. 3-5: ACK compression against the data pendulum");
        (r.ack_bursts, r.plots.ack) = acks::run_cases(plan, ctx)?;
        ctx.checkpoint(&r)?;
        if plan.ack_sensitivity {
            r.ack_sensitivity = acks::run_sensitivity(plan, ctx)?;
            ctx.checkpoint(&r)?;
        }
        ctx.progress.note("Fig. 6-9: asymmetric link");
        (r.asym, r.plots.asym) = asym::run(plan, ctx)?;
        ctx.checkpoint(&r)?;
        ctx.progress
            .note("Fig. 10: throughput ratio, simulation against Eq. 6-11");
        r.fig10 = fig10::run(plan, ctx)?;
        ctx.checkpoint(&r)?;
        ctx.progress.note("Fig. 11: buffers counted in packets");
        r.fig11 = fig11::run(plan, ctx)?;
        if plan.sizing_demo {
            ctx.checkpoint(&r)?;
            ctx.progress
                .note("sizing helper: the uplink buffer for r = k");
            r.sizing = Some(sizing::run(plan, ctx)?);
        }
        Ok(r)
    }

    fn claims(&self, _plan: &Plan, r: &Results) -> Vec<Claim> {
        claims::claims(r)
    }

    fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        outputs::write(plan, r, out)
    }
}
