//! The simulator's models against the host's kernel (`hopwise lab cc-check
//! <check>`): the same dumbbell run by kernel TCP in network namespaces and
//! by the simulator, side by side.
//!
//! The topology of every check: a sender namespace (INET), a router and a
//! receiver namespace (HOME), the router's egress towards HOME an HTB class
//! at 10 Mbit/s with a `bfifo` buffer sized in bandwidth-delay products, and
//! a 40 ms base round trip from the lab's delay line (10 ms each way on each
//! of the two hops): BDP = 10 Mbit/s × 40 ms = 50 000 B. The ACKs' way runs
//! at 1 Gbit/s. The simulator runs the same: `h1 –1 Gbit/s, 1 ms– r1 ==10
//! Mbit/s, 18 ms== r2 –1 Gbit/s, 1 ms– h2`, the bottleneck's reverse
//! direction at 1 Gbit/s, the buffer the same number of bytes, each flow's
//! start shifted by a seeded random amount below 100 ms (so that seeds
//! differ), several seeds.
//!
//! Measured per case after a 5 s warm-up, kernel beside simulator: the
//! bottleneck's utilisation (bytes sent over the rate; the kernel's from the
//! `bfifo` counters), the mean queueing delay (the backlog, sampled every
//! 100 ms with `tc -s -j` in the kernel, over the link rate), the drop rate
//! at the bottleneck (drops over packets offered, over the measured window
//! and over the whole run), each flow's share of the goodput and Jain's
//! index. The kernel's senders are read with `ss -tin` every second
//! (cwnd, RTT, pacing rate, BBR's bandwidth and min RTT) and their TCP
//! counters (`nstat`'s) at the end, the evidence for the differences.
//!
//! The checks ([`Check`]):
//! 1. `bbr`: a lone kernel `bbr` flow against the model's BBR, with the
//!    4-BDP buffer of scenarios/bbr-single.toml;
//! 2. `bbr-cubic`: one BBR and one CUBIC flow, at 1 and 4 BDP;
//! 3. `cubic-buffers`: CUBIC alone at 1 and 4 BDP;
//! 4. `drops`: scenarios/scale.toml scaled down (20 `reno` flows started
//!    10 ms apart through 1 BDP; the same packets in flight per flow as
//!    scale.toml's 100 flows at 100 Mbit/s and 20 ms), with the simulator's
//!    defaults and with one candidate mechanism toggled at a time
//!    ([`sim::VARIANTS`]).

mod kernel;
mod outputs;
mod sim;

use anyhow::Result;
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use serde::Serialize;

pub use kernel::{KernelRun, SsSample};
pub use sim::{SimRun, Variant, VARIANTS};

/// The bottleneck's rate, bit/s.
pub const RATE_BPS: u64 = 10_000_000;
/// The base round trip, ms.
pub const RTT_MS: f64 = 40.0;
/// One bandwidth-delay product, bytes.
pub const BDP_BYTES: u64 = 50_000;
/// Seconds after a case's start that the measurement skips.
pub const WARM_S: f64 = 5.0;
/// When the first flow starts, s (the receivers listen first).
pub const START_S: f64 = 0.5;
/// Flows of the drop-rate check, and their start spacing (scale.toml's).
pub const DROP_FLOWS: usize = 20;
pub const DROP_STEP_S: f64 = 0.01;

/// One cross-check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    Bbr,
    BbrCubic,
    CubicBuffers,
    Drops,
}

impl Check {
    pub const ALL: [Check; 4] = [
        Check::Bbr,
        Check::BbrCubic,
        Check::CubicBuffers,
        Check::Drops,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Bbr => "bbr",
            Check::BbrCubic => "bbr-cubic",
            Check::CubicBuffers => "cubic-buffers",
            Check::Drops => "drops",
        }
    }

    pub fn parse(s: &str) -> Result<Check> {
        Check::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unknown check {s:?}: one of {}",
                    Check::ALL.map(Check::name).join(", ")
                )
            })
    }

    /// The cases the check runs.
    pub fn cases(self) -> Vec<Case> {
        let one = |cc: Cc| {
            vec![FlowDef {
                cc,
                start_s: START_S,
            }]
        };
        let pair = vec![
            FlowDef {
                cc: Cc::Bbr,
                start_s: START_S,
            },
            FlowDef {
                cc: Cc::Cubic,
                start_s: START_S,
            },
        ];
        match self {
            Check::Bbr => vec![Case::new("bbr, 4 BDP", 4.0, one(Cc::Bbr))],
            Check::BbrCubic => vec![
                Case::new("bbr + cubic, 1 BDP", 1.0, pair.clone()),
                Case::new("bbr + cubic, 4 BDP", 4.0, pair),
            ],
            Check::CubicBuffers => vec![
                Case::new("cubic, 1 BDP", 1.0, one(Cc::Cubic)),
                Case::new("cubic, 4 BDP", 4.0, one(Cc::Cubic)),
            ],
            Check::Drops => vec![Case::new(
                &format!("{DROP_FLOWS} reno, 1 BDP"),
                1.0,
                (0..DROP_FLOWS)
                    .map(|i| FlowDef {
                        cc: Cc::Reno,
                        start_s: START_S + i as f64 * DROP_STEP_S,
                    })
                    .collect(),
            )],
        }
    }
}

/// A congestion control both the kernel and the simulator have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cc {
    Bbr,
    Cubic,
    Reno,
}

impl Cc {
    /// The kernel's module (`TCP_CONGESTION`).
    pub fn kernel(self) -> &'static str {
        match self {
            Cc::Bbr => "bbr",
            Cc::Cubic => "cubic",
            Cc::Reno => "reno",
        }
    }
    /// The simulator's `cc` (Linux's `reno` is NewReno with SACK).
    pub fn sim(self) -> &'static str {
        match self {
            Cc::Bbr => "bbr",
            Cc::Cubic => "cubic",
            Cc::Reno => "newreno",
        }
    }
}

/// One flow of a case.
#[derive(Clone, Debug, Serialize)]
pub struct FlowDef {
    pub cc: Cc,
    pub start_s: f64,
}

/// One topology and set of flows, run by the kernel and the simulator.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    pub name: String,
    /// The bottleneck buffer in BDPs.
    pub buffer_bdp: f64,
    pub flows: Vec<FlowDef>,
}

impl Case {
    fn new(name: &str, buffer_bdp: f64, flows: Vec<FlowDef>) -> Case {
        Case {
            name: name.into(),
            buffer_bdp,
            flows,
        }
    }
    pub fn buffer_bytes(&self) -> u64 {
        (self.buffer_bdp * BDP_BYTES as f64).round() as u64
    }
}

/// What to run: `hopwise lab cc-check`'s arguments.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub check: Check,
    pub quick: bool,
    /// Real (and simulated) seconds per case.
    pub secs: u64,
    /// Simulator runs per case and variant (0: no simulator).
    pub sim_seeds: u32,
    /// The kernel hosts' delayed ACKs (Linux's default); off, both hosts'
    /// routes carry `quickack 1` and every segment is acknowledged at once.
    pub kernel_delayed_acks: bool,
}

impl Plan {
    /// 60 s per case (20, or 30 for `drops`, with `--quick`); 5 simulator
    /// seeds (3 quick).
    pub fn new(check: Check, quick: bool, sim_seeds: Option<u32>) -> Plan {
        let secs = match (quick, check) {
            (false, _) => 60,
            (true, Check::Drops) => 30,
            (true, _) => 20,
        };
        Plan {
            check,
            quick,
            secs,
            sim_seeds: sim_seeds.unwrap_or(if quick { 3 } else { 5 }),
            kernel_delayed_acks: true,
        }
    }

    pub fn check(&self) -> Result<()> {
        anyhow::ensure!(
            self.secs as f64 > WARM_S + 5.0 && self.secs <= 3600,
            "--secs {}: more than the {WARM_S} s warm-up plus 5 s, at most 3600",
            self.secs
        );
        Ok(())
    }
}

/// Bottleneck measurements of one source (the kernel, or one simulator run).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    pub utilisation: f64,
    pub queue_delay_ms: f64,
    /// Drops over packets offered to the bottleneck after the warm-up.
    pub drop_rate: f64,
    /// The same over the whole run (start-up included).
    pub drop_rate_run: f64,
    pub drops: u64,
    /// Each flow's goodput after the warm-up, bit/s, in the case's order.
    pub goodput_bps: Vec<f64>,
    pub jain: f64,
    /// Retransmission timeouts and retransmitted segments, all flows.
    pub timeouts: u64,
    pub retransmits: u64,
    /// Packets on the ACKs' way over data packets at the bottleneck, after
    /// the warm-up (about 0.5 with delayed ACKs, 1 without).
    pub acks_per_data: f64,
}

impl Measured {
    /// Each flow's share of the summed goodput.
    pub fn shares(&self) -> Vec<f64> {
        let sum: f64 = self.goodput_bps.iter().sum();
        self.goodput_bps
            .iter()
            .map(|g| if sum > 0.0 { g / sum } else { 0.0 })
            .collect()
    }
}

/// One case, kernel beside simulator.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub buffer_bytes: u64,
    pub kernel: KernelRun,
    /// The simulator with its defaults, one entry per seed.
    pub sim: Vec<Measured>,
    /// The drop-rate check's variants (its defaults first), each over the seeds.
    pub variants: Vec<SimRun>,
}

/// What a check measured (summary.json).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Results {
    pub kernel_release: String,
    pub warmup_s: f64,
    pub cases: Vec<CaseResult>,
}

/// `hopwise lab cc-check`.
pub struct LabCcCheck;

impl Reproduction for LabCcCheck {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "lab-cc-check";
    const ABOUT: &'static str = "the simulator's congestion controls against the host kernel's on a 10 Mbit/s, 40 ms dumbbell (HTB, bfifo, delay line)";
    const PAPER: &'static str = "none: the host's Linux kernel is the reference";
    const WALL: &'static str = "60 s per case; 20 s (drops: 30 s) per case quick";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        Plan::new(Check::Bbr, quick, seeds)
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require_with(&["iproute2 ss"])?;
        plan.check()?;
        for c in plan.check.cases() {
            for f in &c.flows {
                hopwise_lab::traffic::check_cc(f.cc.kernel())?;
            }
        }
        let mut r = Results {
            kernel_release: hopwise_lab::kstats::kernel_release(),
            warmup_s: WARM_S,
            cases: Vec::new(),
        };
        for case in plan.check.cases() {
            let k = kernel::run_case(plan, &case, ctx.progress)?;
            let variants: &[Variant] = if plan.check == Check::Drops {
                &VARIANTS
            } else {
                &VARIANTS[..1]
            };
            ctx.progress.start(
                &format!("simulator: {}", case.name),
                (variants.len() as u64) * plan.sim_seeds as u64,
            );
            let mut runs = Vec::new();
            for v in variants {
                runs.push(sim::run_variant(plan, &case, v, ctx.progress)?);
            }
            ctx.progress.finish();
            r.cases.push(CaseResult {
                case: case.name.clone(),
                buffer_bytes: case.buffer_bytes(),
                kernel: k,
                sim: runs.first().map(|v| v.runs.clone()).unwrap_or_default(),
                variants: if plan.check == Check::Drops {
                    runs
                } else {
                    Vec::new()
                },
            });
            ctx.checkpoint(&r)?;
        }
        Ok(r)
    }

    fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
        claims(plan, r)
    }

    fn outputs(&self, plan: &Plan, r: &Results, o: &mut Outputs) -> Result<()> {
        outputs::write(plan, r, o)
    }

    fn facts(&self, plan: &Plan) -> Vec<String> {
        vec![format!(
            "check {}: kernel TCP in network namespaces, Linux {}, delayed ACKs {}; {} Mbit/s HTB bottleneck with a bfifo of k × {BDP_BYTES} B, {RTT_MS} ms base RTT from the delay line; {} s per case, {WARM_S} s warm-up; simulator: {} seeds per case",
            plan.check.name(),
            hopwise_lab::kstats::kernel_release(),
            if plan.kernel_delayed_acks { "on" } else { "off (quickack routes)" },
            RATE_BPS / 1_000_000,
            plan.secs,
            plan.sim_seeds,
        )]
    }

    fn title(&self) -> String {
        "hopwise lab cc-check".into()
    }

    fn doc(&self) -> String {
        "docs/kernel-cross-checks.md".into()
    }
}

/// Mean and the seeds' [min, max] of `f` over `runs`.
pub fn interval(runs: &[Measured], f: impl Fn(&Measured) -> f64) -> (f64, f64, f64) {
    let v: Vec<f64> = runs.iter().map(f).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hopwise_experiment::stats::mean(&v), lo, hi)
}

/// "k (sim m [lo, hi])", and whether k lies outside [lo, hi].
fn beside(
    k: f64,
    runs: &[Measured],
    f: impl Fn(&Measured) -> f64,
    fmt: &dyn Fn(f64) -> String,
) -> (String, bool) {
    if runs.is_empty() {
        return (format!("kernel {}", fmt(k)), false);
    }
    let (m, lo, hi) = interval(runs, f);
    let out = k < lo - 1e-9 || k > hi + 1e-9;
    (
        format!(
            "kernel {}, simulator {} [{} – {}]{}",
            fmt(k),
            fmt(m),
            fmt(lo),
            fmt(hi),
            if out {
                " (kernel outside the seeds' range)"
            } else {
                ""
            }
        ),
        out,
    )
}

fn pct(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}
fn pct2(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}
fn ms(x: f64) -> String {
    format!("{x:.1} ms")
}
fn num3(x: f64) -> String {
    format!("{x:.3}")
}

/// Kernel beside simulator for every case, plus the checks' own criteria.
pub fn claims(plan: &Plan, r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    let bdp_ms = RTT_MS;
    for c in &r.cases {
        let k = &c.kernel.measured;
        let s = &c.sim;
        let (u, _) = beside(k.utilisation, s, |m| m.utilisation, &pct);
        let (q, _) = beside(k.queue_delay_ms, s, |m| m.queue_delay_ms, &ms);
        let (d, _) = beside(k.drop_rate, s, |m| m.drop_rate, &pct2);
        let (a, _) = beside(k.acks_per_data, s, |m| m.acks_per_data, &num3);
        let mut text = format!(
            "utilisation: {u}; mean queueing delay: {q}; drop rate: {d}; ACKs per data packet: {a}"
        );
        if k.goodput_bps.len() > 1 {
            let (j, _) = beside(k.jain, s, |m| m.jain, &num3);
            text.push_str(&format!("; Jain's index: {j}"));
        }
        if k.goodput_bps.len() == 2 {
            let (b, _) = beside(k.shares()[0], s, |m| m.shares()[0], &pct);
            text.push_str(&format!("; BBR's share of the goodput: {b}"));
        }
        out.push(Claim::info(
            c.case.clone(),
            "kernel beside simulator (seeds' mean and [min – max]), after the warm-up",
            text,
        ));
    }
    match plan.check {
        Check::Bbr => {
            if let Some(c) = r.cases.first() {
                let k = &c.kernel.measured;
                out.push(
                    Claim::new(
                        "bbr, kernel",
                        "a lone kernel BBR flow keeps the mean queue below 1 BDP at ≥ 90 % utilisation",
                    )
                    .measured(format!(
                        "utilisation {}, mean queueing delay {} (1 BDP = {bdp_ms} ms)",
                        pct(k.utilisation),
                        ms(k.queue_delay_ms)
                    ))
                    .at_least("utilisation", k.utilisation, 0.9)
                    .below("mean queueing delay (ms)", k.queue_delay_ms, bdp_ms),
                );
            }
        }
        Check::CubicBuffers => {
            for c in &r.cases {
                let k = &c.kernel.measured;
                out.push(
                    Claim::new(
                        format!("{}, kernel", c.case),
                        "a lone CUBIC flow fills the link",
                    )
                    .measured(format!("utilisation {}", pct(k.utilisation)))
                    .at_least("utilisation", k.utilisation, 0.9),
                );
            }
        }
        Check::BbrCubic | Check::Drops => {}
    }
    for c in &r.cases {
        if !c.variants.is_empty() {
            let k = &c.kernel.measured;
            out.push(Claim::info(
                "drops: which mechanism",
                "the simulator's drop rate after the warm-up with one mechanism changed at a time, against the kernel's",
                c.variants
                    .iter()
                    .map(|v| {
                        let (m, lo, hi) = interval(&v.runs, |m| m.drop_rate);
                        format!("{}: {} [{} – {}]", v.variant, pct2(m), pct2(lo), pct2(hi))
                    })
                    .chain(std::iter::once(format!("kernel: {}", pct2(k.drop_rate))))
                    .collect::<Vec<_>>()
                    .join("; "),
            ));
        }
        if !c.kernel.delay_line.is_empty() {
            out.push(Claim::info(
                format!("{}: the lab's delay line", c.case),
                "frames leave after their hop's one-way delay (10 ms on each hop)",
                c.kernel.delay_line.clone(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drop_check_scales_scale_toml_to_the_same_packets_per_flow() {
        let c = &Check::Drops.cases()[0];
        assert_eq!(c.flows.len(), DROP_FLOWS);
        // scale.toml: (BDP + buffer) / 100 flows = 2 × 250 000 B / 100.
        let per_flow_scale = 2.0 * 250_000.0 / 100.0;
        let per_flow_here = (BDP_BYTES + c.buffer_bytes()) as f64 / c.flows.len() as f64;
        assert_eq!(per_flow_here, per_flow_scale);
        assert!((c.flows[19].start_s - c.flows[0].start_s - 0.19).abs() < 1e-9);
    }

    #[test]
    fn check_names_round_trip_and_bad_ones_list_the_choices() {
        for c in Check::ALL {
            assert_eq!(Check::parse(c.name()).unwrap(), c);
        }
        let e = Check::parse("bbr2").unwrap_err().to_string();
        assert!(e.contains("bbr, bbr-cubic, cubic-buffers, drops"), "{e}");
    }

    #[test]
    fn beside_flags_a_kernel_value_outside_the_seeds() {
        let m = |u| Measured {
            utilisation: u,
            ..Measured::default()
        };
        let runs = [m(0.9), m(0.95)];
        assert!(!beside(0.92, &runs, |m| m.utilisation, &pct).1);
        let (t, out) = beside(0.8, &runs, |m| m.utilisation, &pct);
        assert!(out && t.contains("outside"), "{t}");
    }
}
