//! Reproduction `backtap-circuit`: seed 002, Tschorsch and
//! Scheuermann, "Mind the Gap: Towards a Backpressure-Based Transport
//! Protocol for the Tor Network" (NSDI 2016), §4: the single-circuit
//! experiments.
//!
//! * **Fig. 5** ([`fig5`]): one bulk circuit client → guard → middle → exit
//!   through a middle relay limited to 1500 kB/s, end-to-end RTT swept from
//!   30 to 900 ms; rate, backlog and delay from a linear fit of R(t) and W(t)
//!   after steady state, for vanilla Tor (circuit window, stream window) and
//!   BackTap, plus vanilla with a 10 ms and an on-demand refill (the paper's
//!   explanation of the 350 kB plateau) and BackTap with Tor's refills.
//! * **Multiplexing unfairness** ([`mux`]): ten bulk circuits through one
//!   middle bottleneck, one through relays A and nine through relays B.
//! * **Late-comer** ([`latecomer`]): a second circuit joins after 30 s, with
//!   baseRtt shared per next hop and per circuit.
//!
//! The Fig. 5 circuit, the constants and the transports' configurations
//! are the paper's, shared with `backtap-network` in
//! [`crate::backtap::common`]; the claims are in [`fig5_claims`],
//! [`mux`] and [`latecomer`]. Every scenario is built in code on
//! `hopwise_tor::TorNet`. The choices and
//! the results, with their differences from the paper, are documented in
//! `docs/reproductions/backtap-circuit.md`. Two choices matter most:
//!
//! * the middle's token bucket refills every 100 ms for vanilla Tor (the
//!   paper's §4, Tor ≤ 0.3.2) and every 10 ms for BackTap (nstor's
//!   `TorBktapApp` sets `m_refilltime = 10 ms`, "tor proposal #183"), with
//!   the other refills shown as sensitivity;
//! * BackTap starts with the paper's +1 cell per round and every Fig. 5 run
//!   is long enough for the window to reach the path's BDP (≈ 880 cells per
//!   hop at 900 ms take about 250 s); the optional slow start is measured
//!   beside it ([`Fig5Out::ramp`]).

pub mod fig5;
pub mod fig5_claims;
pub mod latecomer;
pub mod mux;
mod plots;

use crate::backtap::common::{
    payload_rate, ALPHA, BACKTAP_CELL, BETA, C, CELL_DATA, PAPER, VANILLA_CELL,
};
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_proto::units::Rate;
use serde::Serialize;

pub use fig5::{Fig5Out, Fig5Row, Fig5Run, RampRow};
pub use latecomer::{LateConfig, LateOut, LateRow, LateSummaryRow};
pub use mux::{MuxConfig, MuxOut, MuxRow};

/// The reproduction `backtap-circuit`.
pub struct BacktapCircuit;

/// What to run. [`Plan::full`] is the paper's setup (20 runs per Fig. 5
/// point), [`Plan::quick`] the CI variant; tests build smaller plans.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub quick: bool,
    /// Fig. 5: end-to-end RTTs (ms).
    pub fig5_rtts_ms: Vec<u64>,
    /// Fig. 5: runs per point (different circuit start offsets and, for
    /// vanilla, bucket phases).
    pub fig5_seeds: u32,
    /// Fig. 5: include the refill variants (vanilla 10 ms / on demand,
    /// BackTap 100 ms / on demand), with this many runs per point.
    pub fig5_refill_variants: bool,
    pub fig5_refill_seeds: u32,
    /// Fig. 5, vanilla: run length and start of the fit (s).
    pub vanilla_secs: u64,
    pub vanilla_fit_from: u64,
    /// Fig. 5, BackTap: seconds measured after the ramp-up.
    pub backtap_measure_secs: u64,
    /// Fig. 5: RTTs at which the start-up (linear and slow start) is timed.
    pub ramp_rtts_ms: Vec<u64>,
    /// Multiplexing: the headline RTT and the sensitivity RTTs (ms).
    pub mux_rtt_ms: u64,
    pub mux_sensitivity_rtts_ms: Vec<u64>,
    pub mux_secs: u64,
    pub mux_seeds: u32,
    /// Late-comer: RTT, when the second circuit joins, run length, seconds
    /// measured at the end.
    pub late_rtt_ms: u64,
    pub late_join_secs: u64,
    pub late_secs: u64,
    pub late_measure_secs: u64,
    pub late_seeds: u32,
    /// Late-comer: also run the other bottlenecks (1 ms and on-demand
    /// refill, a FIFO link).
    pub late_sensitivity: bool,
    /// Late-comer: further RTTs for the headline bottleneck (ms).
    pub late_sensitivity_rtts_ms: Vec<u64>,
}

impl Plan {
    pub fn full(seeds: Option<u32>) -> Plan {
        Plan {
            quick: false,
            fig5_rtts_ms: vec![
                30, 50, 75, 100, 125, 150, 171, 200, 250, 300, 341, 400, 450, 550, 683, 800, 900,
            ],
            fig5_seeds: seeds.unwrap_or(20).max(1),
            fig5_refill_variants: true,
            fig5_refill_seeds: seeds.unwrap_or(5).max(1),
            vanilla_secs: 30,
            vanilla_fit_from: 10,
            backtap_measure_secs: 60,
            ramp_rtts_ms: vec![100, 300, 683, 900],
            mux_rtt_ms: 120,
            mux_sensitivity_rtts_ms: vec![30, 60, 120, 300],
            mux_secs: 90,
            mux_seeds: seeds.unwrap_or(10).max(1),
            late_rtt_ms: 120,
            late_join_secs: 30,
            late_secs: 180,
            late_measure_secs: 30,
            late_seeds: seeds.unwrap_or(10).max(1),
            late_sensitivity: true,
            late_sensitivity_rtts_ms: vec![60, 125, 133, 300],
        }
    }

    pub fn quick(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(1).max(1);
        Plan {
            quick: true,
            fig5_rtts_ms: vec![30, 60, 100, 150, 171, 250, 300, 341, 450, 683, 900],
            fig5_seeds: s,
            fig5_refill_seeds: s,
            mux_seeds: s,
            late_seeds: s,
            ..Plan::full(Some(s))
        }
    }
}

/// What the runs measured: summary.json's `fig5`, `fig5_ramp`,
/// `mux_fairness`, `mux`, `latecomer` and `latecomer_all` come from the
/// three parts (absent while a part has not finished).
#[derive(Serialize)]
pub struct Results {
    pub constants: Constants,
    #[serde(flatten)]
    pub fig5: Option<Fig5Out>,
    #[serde(flatten)]
    pub mux: Option<MuxOut>,
    #[serde(flatten)]
    pub latecomer: Option<LateOut>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Constants {
    #[serde(rename = "bottleneck_rate_Bps")]
    pub bottleneck_rate: u64,
    #[serde(rename = "payload_rate_vanilla_Bps")]
    pub payload_rate_vanilla: f64,
    #[serde(rename = "payload_rate_backtap_Bps")]
    pub payload_rate_backtap: f64,
    pub access_rate_bps: u64,
    pub cell_data_bytes: f64,
    pub vanilla_cell_bytes: f64,
    pub backtap_cell_bytes: f64,
    pub alpha: u32,
    pub beta: u32,
    pub vanilla_refill: &'static str,
    pub backtap_refill: &'static str,
    pub tcp: &'static str,
}

impl Constants {
    pub fn paper() -> Constants {
        Constants {
            bottleneck_rate: C,
            payload_rate_vanilla: payload_rate(VANILLA_CELL),
            payload_rate_backtap: payload_rate(BACKTAP_CELL),
            access_rate_bps: Rate::from_mbps(1000).bps(),
            cell_data_bytes: CELL_DATA,
            vanilla_cell_bytes: VANILLA_CELL,
            backtap_cell_bytes: BACKTAP_CELL,
            alpha: ALPHA,
            beta: BETA,
            vanilla_refill: "periodic 100 ms (paper §4, Tor <= 0.3.2)",
            backtap_refill: "periodic 10 ms (nstor TorBktapApp, proposal 183)",
            tcp: "CUBIC, SACK, timestamps, delayed ACKs, 4 MiB buffers; Nagle off in Fig. 5, on elsewhere",
        }
    }
}

impl Reproduction for BacktapCircuit {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "backtap-circuit";
    const ABOUT: &'static str = "Tschorsch and Scheuermann 2016 (BackTap, seed paper 002) §4: Fig. 5 (one circuit, RTT 30-900 ms), multiplexing unfairness, the late-comer; vanilla Tor vs BackTap";
    const PAPER: &'static str = PAPER;
    const WALL: &'static str = "quick about 50 s, full about 8 min";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        if quick {
            Plan::quick(seeds)
        } else {
            Plan::full(seeds)
        }
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
        let mut r = Results {
            constants: Constants::paper(),
            fig5: None,
            mux: None,
            latecomer: None,
        };
        ctx.progress
            .note("Fig. 5: one circuit, RTT swept from 30 to 900 ms");
        r.fig5 = Some(fig5::run(plan, &ctx.part())?);
        ctx.checkpoint(&r)?;
        ctx.progress
            .note("Multiplexing: 1 circuit through relays A, 9 through relays B");
        r.mux = Some(mux::run(plan, &ctx.part())?);
        ctx.checkpoint(&r)?;
        ctx.progress
            .note("Late-comer: a second circuit joins after 30 s");
        r.latecomer = Some(latecomer::run(plan, &ctx.part())?);
        Ok(r)
    }

    fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
        let mut claims = Vec::new();
        if let Some(f5) = &r.fig5 {
            claims.extend(fig5_claims::claims(plan, f5));
        }
        if let Some(mx) = &r.mux {
            claims.extend(mux::claims(plan, mx));
        }
        if let Some(lc) = &r.latecomer {
            claims.extend(latecomer::claims(plan, lc));
        }
        claims.push(Claim::info(
            "§3 (loss recovery)",
            "Under 5 % random datagram loss on every hop a 50 MB transfer arrives byte-exact and in order; the codec is fuzzed",
            "shown in crates/proto, not here: tests/backtap_transfer.rs five_percent_loss_50mb_byte_exact (and both directions at once), \
             tests/backtap_wire.rs (property-based decoder and endpoint fuzzing in every test run), cargo-fuzz targets decode and endpoint in crates/proto/fuzz",
        ));
        claims
    }

    fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
        if let Some(f5) = &r.fig5 {
            fig5::outputs(f5, out)?;
            out.data(&["fig5_refill.svg"], &["fig5.csv", "fig5_runs.csv"]);
        }
        if let Some(mx) = &r.mux {
            mux::outputs(plan, mx, out)?;
        }
        if let Some(lc) = &r.latecomer {
            latecomer::outputs(plan, lc, out)?;
        }
        Ok(())
    }
}

/// Formats bytes per second as kB/s.
fn kbs(x: f64) -> String {
    format!("{:.0} kB/s", x / 1e3)
}

fn f3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        String::new()
    }
}
