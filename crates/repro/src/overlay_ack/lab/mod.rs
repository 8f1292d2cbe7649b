//! Seed 000 on kernel TCP: an overlay node's ACKs stuck behind its own
//! data, ACK prioritisation, and one connection per direction.
//!
//! ```text
//!   A ═ MA ─┐
//!   B ═ MB ─┼─ br0 (namespace sw)      MA, MB, MC: each host's access device
//!   C ═ MC ─┘
//! ```
//!
//! Hosts A, B and C each reach the switch through an access device of
//! their own (a namespace bridging the host's veth to its switch port).
//! The device's egress towards the switch is the host's uplink: HTB at
//! 10 Mbit/s with a 1000-packet `pfifo` (Linux's default txqueuelen; the
//! paper's §III-A). The switch's egress towards each device is the switch
//! port: 10 Mbit/s with a 64 000 B `bfifo` (the simulator's calibrated
//! port buffer). Putting the host queue in a box of its own keeps TCP Small
//! Queues out of it, as the issue asks: on a host whose own qdisc is the
//! bottleneck, TSQ keeps that queue short and the effect disappears.
//!
//! In the modes with "ACKs first", B's device runs the paper's HTB: an ACK
//! class at priority 0 (0.5 Mbit/s guaranteed) and a data class at
//! priority 1 (9 Mbit/s), both borrowing up to 9.5 Mbit/s (the 5 %
//! throttle), each with a 1000-packet `pfifo`. Two `u32` classifiers:
//! `ackprio` puts every TCP segment without payload in the ACK class (one
//! filter per TCP header length, matching the IP total length to the
//! headers' length), `ackprio-len64` every TCP packet whose IP total length
//! is below 64 B (the paper's filter).
//!
//! The timeline is the paper's (A→B 0–250 s, B→C 50–300 s) scaled to
//! `--secs`; one kernel run per mode, then the simulator runs the same
//! scaled timeline, and [`crate::overlay_ack::analyse`] computes both
//! sides' statistics, so the definitions are the reproduction's.
//!
//! [`OverlayAckLab`] runs it under the experiment driver: `net.rs` builds
//! a mode's namespaces, `kernel.rs` runs its flows in real time,
//! `claims.rs` and `outputs.rs` judge and write what they measured.

mod claims;
mod kernel;
mod net;
mod outputs;

pub use net::{ack_filters, addr, parse_ss_rtt, plan, port_dev, Lab, Names, HOSTS, UPLINK_DEV};

use crate::overlay_ack::{analyse, Mode, ModeStats, RunResult, Setup, Timeline};
use anyhow::{bail, Result};
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_lab::kstats::kernel_release;
use hopwise_lab::topology::Buffer;
use hopwise_lab::traffic::per_second;
use kernel::{run_kernel, KernelRun};
use serde::Serialize;

/// Every port's rate (paper §III-A: 10 Mbit/s full duplex).
pub const LINK_BPS: u64 = 10_000_000;
/// Payload goodput a full link can carry on the wire the qdiscs count:
/// 1448 B of payload (timestamps on) per 1514 B Ethernet frame.
pub const KERNEL_CAPACITY_BPS: f64 = LINK_BPS as f64 * 1448.0 / 1514.0;
/// "ACKs first" (§IV): the data class's guaranteed share and the throttle
/// on both classes together, as in the simulator's `AckFirstParams`.
const DATA_SHARE: f64 = 0.9;
const THROTTLE: f64 = 0.95;

/// The modes the lab can run: all of the reproduction's but `split-dynamic`,
/// whose connection policy is an agent of the simulator.
pub const MODES: [Mode; 6] = [
    Mode::Plain,
    Mode::AckPrio,
    Mode::AckPrioLen64,
    Mode::Bidir,
    Mode::BidirAckPrio,
    Mode::SplitAckPrio,
];

/// The modes of `--quick`.
pub const QUICK_MODES: [Mode; 4] = [
    Mode::Plain,
    Mode::AckPrio,
    Mode::BidirAckPrio,
    Mode::SplitAckPrio,
];

/// Parses a `--modes` list (comma-separated mode names).
pub fn parse_modes(s: &str) -> Result<Vec<Mode>> {
    let mut v = Vec::new();
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(m) = Mode::from_name(name) else {
            bail!(
                "--modes: unknown mode {name:?} (the lab runs {})",
                MODES.map(Mode::name).join(", ")
            );
        };
        if !MODES.contains(&m) {
            bail!(
                "--modes: {name} needs the overlay's connection policy, which runs only in the \
                 simulator (`hopwise reproduce overlay-ack`); the lab runs {}",
                MODES.map(Mode::name).join(", ")
            );
        }
        if v.contains(&m) {
            bail!("--modes: mode {name:?} given twice");
        }
        v.push(m);
    }
    if v.is_empty() {
        bail!("--modes: name at least one mode");
    }
    Ok(v)
}

/// What to run: the experiment's plan (summary.json's `plan`). The
/// output directory is the driver's (`Opts::out`).
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// Real seconds per mode: the paper's 300 s timeline scaled to this.
    pub secs: u64,
    pub modes: Vec<Mode>,
    /// The hosts' congestion control (paper: CUBIC).
    pub cc: String,
    /// Each host's uplink queue in its access device.
    pub host_queue: Buffer,
    /// Each switch port's buffer.
    pub switch_buffer: Buffer,
    /// Simulator runs per mode on the same timeline (0: none).
    pub sim_runs: u32,
}

impl Options {
    /// The defaults of a full run (`quick`: the shorter variant).
    pub fn new(quick: bool) -> Options {
        Options {
            secs: Options::secs_for(quick),
            modes: if quick {
                QUICK_MODES.to_vec()
            } else {
                MODES.to_vec()
            },
            cc: "cubic".into(),
            host_queue: Buffer::Packets(1000),
            switch_buffer: Buffer::Bytes(64_000),
            sim_runs: 3,
        }
    }

    /// Seconds per mode: 150 (half the paper's timeline), 60 with `--quick`.
    pub fn secs_for(quick: bool) -> u64 {
        if quick {
            60
        } else {
            150
        }
    }

    /// Fails, naming the option, on values the experiment cannot run with.
    pub fn check(&self) -> Result<()> {
        if self.secs < 60 {
            bail!(
                "--secs {}: at least 60 (B→C starts at a sixth of the run, and A→B is measured \
                 alone from 5 s until then)",
                self.secs
            );
        }
        if self.modes.is_empty() {
            bail!("--modes: name at least one mode");
        }
        if let Some(m) = self.modes.iter().find(|m| !MODES.contains(m)) {
            bail!(
                "--modes: {} needs the overlay's connection policy, which runs only in the simulator",
                m.name()
            );
        }
        hopwise_lab::traffic::check_cc(&self.cc)
    }

    /// The paper's timeline scaled to [`Options::secs`], started without
    /// jitter on kernel TCP (the simulator's runs keep its 1 s jitter).
    pub fn timeline(&self) -> Timeline {
        let p = Timeline::paper();
        // Multiply before dividing, so that whole seconds stay whole.
        let at = |t: f64| t * self.secs as f64 / p.duration;
        Timeline {
            ab: (at(p.ab.0), at(p.ab.1)),
            bc: (at(p.bc.0), at(p.bc.1)),
            duration: self.secs as f64,
            ..p
        }
    }
}

/// The simulator's setup of `mode` on this timeline and these buffers.
fn sim_setup(mode: Mode, tl: &Timeline, opts: &Options, seed: u64) -> Setup {
    let mut s = Setup::paper(mode, seed);
    s.timeline = tl.clone();
    s.host_queue = opts.host_queue.limit();
    s.switch_queue = opts.switch_buffer.limit();
    s.ack_first.limit = opts.host_queue.limit();
    s
}

/// One mode's statistics from one source, as written to summary.json and
/// `modes.csv` (a subset of the reproduction's [`ModeStats`]).
#[derive(Clone, Debug, Serialize, Default)]
pub struct Stats {
    /// "kernel" or "simulator".
    pub source: &'static str,
    pub mode: &'static str,
    pub runs: usize,
    pub ab_phase1_bps: f64,
    pub ab_phase2_bps: f64,
    pub ab_phase2_cov: f64,
    pub bc_phase2_bps: f64,
    pub towards_b_phase2_bps: f64,
    /// C→B's and B→A's phase-2 goodput (modes with data both ways).
    pub cb_phase2_bps: f64,
    pub ba_phase2_bps: f64,
    pub var_10s: f64,
    pub var_10s_within: f64,
    pub ab_srtt_phase1_ms: f64,
    pub ab_srtt_phase2_ms: f64,
    pub breakdowns: f64,
    /// Drops per run at B's uplink and at the switch port towards B.
    pub drops_b_uplink: f64,
    pub drops_switch_to_b: f64,
    /// The share of A→B's SRTT samples above 500 ms in phase 2.
    pub ab_srtt_phase2_over_500ms: f64,
}

impl Stats {
    fn from(source: &'static str, m: &ModeStats) -> Stats {
        Stats {
            source,
            mode: m.mode,
            runs: m.runs,
            ab_phase1_bps: m.ab_phase1_bps,
            ab_phase2_bps: m.ab_phase2_bps,
            ab_phase2_cov: m.ab_phase2_cov,
            bc_phase2_bps: m.bc_phase2_bps,
            towards_b_phase2_bps: m.towards_b_phase2_bps,
            cb_phase2_bps: m.cb_phase2_bps,
            ba_phase2_bps: m.ba_phase2_bps,
            var_10s: m.var_10s,
            var_10s_within: m.var_10s_within,
            ab_srtt_phase1_ms: m.ab_srtt_phase1_ms,
            ab_srtt_phase2_ms: m.ab_srtt_phase2_ms,
            breakdowns: m.breakdowns,
            drops_b_uplink: m.drops[2],
            drops_switch_to_b: m.drops[3],
            ab_srtt_phase2_over_500ms: m.ab_srtt_phase2_over_500ms,
        }
    }
    fn ab_ratio(&self) -> f64 {
        self.ab_phase2_bps / self.ab_phase1_bps
    }
}

#[derive(Serialize)]
pub struct SetupOut {
    link_rate_bps: u64,
    host_queue: Buffer,
    switch_buffer: Buffer,
    ack_first: &'static str,
    cc: String,
    secs_per_mode: u64,
    timeline: TimelineOut,
}

#[derive(Serialize)]
struct TimelineOut {
    ab_s: (f64, f64),
    bc_s: (f64, f64),
    phase1_s: (f64, f64),
    phase2_s: (f64, f64),
    var_window_s: (f64, f64),
}

/// What a run has measured so far: the kernel's modes, and the simulator's
/// (once it has run). summary.json holds the serialized fields.
#[derive(Serialize)]
pub struct Results {
    pub experiment: &'static str,
    /// The kernel's release.
    pub kernel: String,
    pub setup: SetupOut,
    /// Kernel TCP, one run per mode.
    pub modes: Vec<Stats>,
    /// Modes asked for that have not run: not yet (the outputs are written
    /// after each mode) or not at all, because an earlier one failed.
    pub modes_not_run: Vec<&'static str>,
    pub simulator: Vec<Stats>,
    pub simulator_runs: u32,
    /// Each kernel run, as the reproduction's analysis takes it, and what
    /// only the kernel measured.
    #[serde(skip)]
    runs: Vec<(RunResult, KernelRun)>,
    /// The simulator's first run (seed 1) of each mode.
    #[serde(skip)]
    sim_first: Vec<RunResult>,
}

impl Results {
    fn new(opts: &Options) -> Results {
        let tl = opts.timeline();
        Results {
            experiment: "lab overlay-ack (seed 000, kernel TCP)",
            kernel: kernel_release(),
            setup: SetupOut {
                link_rate_bps: LINK_BPS,
                host_queue: opts.host_queue,
                switch_buffer: opts.switch_buffer,
                ack_first: "HTB at B's uplink: ACK class prio 0, 0.5 Mbit/s; data class prio 1, 9 Mbit/s; both borrow up to 9.5 Mbit/s",
                cc: opts.cc.clone(),
                secs_per_mode: opts.secs,
                timeline: TimelineOut {
                    ab_s: tl.ab,
                    bc_s: tl.bc,
                    phase1_s: tl.phase1(),
                    phase2_s: tl.phase2(),
                    var_window_s: tl.var_window(),
                },
            },
            modes: Vec::new(),
            modes_not_run: opts.modes.iter().map(|m| m.name()).collect(),
            simulator: Vec::new(),
            simulator_runs: 0,
            runs: Vec::new(),
            sim_first: Vec::new(),
        }
    }
}

fn mbps(x: f64) -> String {
    format!("{:.2} Mbit/s", x / 1e6)
}

/// `hopwise lab overlay-ack`, as the experiment driver runs it.
pub struct OverlayAckLab;

impl Reproduction for OverlayAckLab {
    type Plan = Options;
    type Results = Results;
    const NAME: &'static str = "lab-overlay-ack";
    const ABOUT: &'static str = "seed 000 on kernel TCP: ACKs stuck behind data at an overlay node, ACK prioritisation, one connection per direction";
    const PAPER: &'static str = crate::overlay_ack::OverlayAck::PAPER;
    const WALL: &'static str = "real time: quick 4 modes × 60 s, full 6 × 150 s";

    /// The defaults; `seeds` sets the simulator's runs per mode (the kernel
    /// runs each mode once).
    fn plan(&self, quick: bool, seeds: Option<u32>) -> Options {
        let mut o = Options::new(quick);
        if let Some(n) = seeds {
            o.sim_runs = n;
        }
        o
    }

    /// After each kernel mode the outputs so far (so that a run stopped
    /// later keeps the modes it finished), and at the end everything with
    /// the simulator's.
    fn run(&self, opts: &Options, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require_with(&hopwise_lab::topology::OPTIONAL)?;
        opts.check()?;
        let progress = ctx.progress;
        let tl = opts.timeline();
        let secs = tl.duration.ceil() as usize;
        let mut r = Results::new(opts);
        let (p1, p2) = (tl.phase1(), tl.phase2());
        let sim_on =
            hopwise_lab::traffic::sim_comparison(progress, &opts.cc, "cubic", opts.sim_runs > 0);
        // A mode that fails ends the kernel runs; the modes already run
        // (minutes of real time each) are still simulated and written.
        let mut failure: Option<anyhow::Error> = None;
        for (i, &mode) in opts.modes.iter().enumerate() {
            progress.note(&format!(
                "mode {} of {}: {} ({} s of real time; A→B alone {:.0}–{:.0} s, shared {:.0}–{:.0} s)",
                i + 1,
                opts.modes.len(),
                mode.name(),
                opts.secs,
                p1.0,
                p1.1,
                p2.0,
                p2.1
            ));
            let kr = match Lab::build(&Names::new_instance(), mode, opts)
                .and_then(|lab| run_kernel(&lab, mode, opts, &tl, progress))
            {
                Ok(kr) => kr,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            // Flows the mode does not have (B→A and C→B in the one-way modes)
            // stay empty; a flow that ran and delivered nothing is all zeros.
            let series = |i: usize| {
                if i == 0 || i == 2 || mode.two_way() {
                    per_second(&kr.bins[i], secs)
                } else {
                    Vec::new()
                }
            };
            let rr = RunResult {
                mode,
                seed: 0,
                ab: series(0),
                ba: series(1),
                bc: series(2),
                cb: series(3),
                ab_srtt: kr.srtt.clone(),
                ab_timeouts: 0,
                ab_recoveries: 0,
                drops: [0, 0, kr.drops[0], kr.drops[1], 0, 0],
                corrupt: 0,
                events: Vec::new(),
                probe: Vec::new(),
                seen: Vec::new(),
                sim_events: 0,
                b_pure_acks: 0,
                b_rx_segments: 0,
            };
            let base = sim_setup(mode, &tl, opts, 1);
            let st = Stats::from("kernel", &analyse(mode, &[&rr], &base));
            progress.note(&format!(
                "  {}: A→B {} alone, {} shared (ratio {:.2}); B→C {}; towards B {} per flow; A→B's SRTT {:.0} ms while shared",
                mode.name(),
                mbps(st.ab_phase1_bps),
                mbps(st.ab_phase2_bps),
                st.ab_ratio(),
                mbps(st.bc_phase2_bps),
                mbps(st.towards_b_phase2_bps),
                st.ab_srtt_phase2_ms
            ));
            r.modes.push(st);
            r.runs.push((rr, kr));
            r.modes_not_run = opts.modes[i + 1..].iter().map(|m| m.name()).collect();
            ctx.checkpoint(&r)?;
        }
        let done: Vec<Mode> = r.runs.iter().map(|(rr, _)| rr.mode).collect();
        if done.is_empty() {
            if let Some(e) = failure {
                return Err(e);
            }
        }
        r.modes_not_run = opts
            .modes
            .iter()
            .filter(|m| !done.contains(m))
            .map(|m| m.name())
            .collect();

        // The simulator on the same timeline (its TCP is the paper's Linux 2.6.26).
        r.simulator_runs = if sim_on { opts.sim_runs } else { 0 };
        if r.simulator_runs > 0 {
            progress.start(
                "simulator (hopwise's TCP set up as Linux 2.6.26)",
                done.len() as u64 * r.simulator_runs as u64,
            );
            for &mode in &done {
                let mut rs = Vec::new();
                for seed in 1..=r.simulator_runs as u64 {
                    rs.push(sim_setup(mode, &tl, opts, seed).run()?);
                    progress.inc();
                }
                let refs: Vec<&RunResult> = rs.iter().collect();
                r.simulator.push(Stats::from(
                    "simulator",
                    &analyse(mode, &refs, &sim_setup(mode, &tl, opts, 1)),
                ));
                r.sim_first.push(rs.swap_remove(0));
            }
            progress.finish();
        }
        if let Some(e) = failure {
            // The modes that ran, with the simulator's beside them.
            ctx.checkpoint(&r)?;
            let names: Vec<&str> = done.iter().map(|m| m.name()).collect();
            return Err(e.context(format!(
                "lab overlay-ack stopped at {}; the results of {} are in {} (summary.json says complete: false)",
                r.modes_not_run[0],
                names.join(", "),
                ctx.out.display()
            )));
        }
        Ok(r)
    }

    fn claims(&self, opts: &Options, r: &Results) -> Vec<Claim> {
        claims::claims(&r.modes, &r.simulator, &opts.timeline())
    }

    fn outputs(&self, opts: &Options, r: &Results, out: &mut Outputs) -> Result<()> {
        outputs::write(opts, r, out)
    }

    fn facts(&self, opts: &Options) -> Vec<String> {
        let modes: Vec<&str> = opts.modes.iter().map(|m| m.name()).collect();
        vec![
            format!(
                "kernel TCP ({}) in network namespaces, Linux {}, one run per mode; modes {}; {} s per mode (the paper's 300 s timeline scaled); host queues {}, switch ports {}",
                opts.cc,
                kernel_release(),
                modes.join(", "),
                opts.secs,
                opts.host_queue,
                opts.switch_buffer
            ),
            format!(
                "\"simulator\": hopwise's own TCP model on the same timeline, set up as the paper's Linux 2.6.26 (initial window 3, 1.5 MiB receive window, CUBIC β 0.8), {} runs per mode with 1 s start jitter",
                opts.sim_runs
            ),
        ]
    }

    fn title(&self) -> String {
        "hopwise lab overlay-ack".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_split_dynamic_is_refused_with_the_reason() {
        assert_eq!(
            parse_modes("plain, ackprio").unwrap(),
            vec![Mode::Plain, Mode::AckPrio]
        );
        let e = parse_modes("plain,ackprio,plain").unwrap_err().to_string();
        assert!(e.contains("\"plain\" given twice"), "{e}");
        let e = parse_modes("split-dynamic").unwrap_err().to_string();
        assert!(e.contains("only in the simulator"), "{e}");
        let e = parse_modes("fast").unwrap_err().to_string();
        assert!(e.contains("unknown mode \"fast\""), "{e}");
        assert!(parse_modes(" , ").is_err());
    }

    #[test]
    fn the_timeline_is_the_paper_s_scaled_to_secs() {
        let mut o = Options::new(true);
        let t = o.timeline();
        assert_eq!((t.ab, t.bc, t.duration), ((0.0, 50.0), (10.0, 60.0), 60.0));
        o.secs = 150;
        let t = o.timeline();
        assert_eq!((t.ab, t.bc), ((0.0, 125.0), (25.0, 150.0)));
        assert_eq!(t.var_window(), (50.0, 125.0));
        o.secs = 59;
        assert!(o
            .check()
            .unwrap_err()
            .to_string()
            .contains("--secs 59: at least 60"));
        o.secs = 60;
        o.modes.push(Mode::SplitDynamic);
        let e = o.check().unwrap_err().to_string();
        assert!(e.contains("split-dynamic needs"), "{e}");
    }
}
