//! Seed 003's flow-level claim on real stacks: µTP (BEP 29, LEDBAT inside)
//! at one shaped bottleneck, alone and beside a kernel TCP CUBIC flow, for
//! hopwise's µTP and for libtorrent's side by side (`hopwise lab utp`).
//!
//! The topology is the lab's access link ([`hopwise_lab::topology`]): the
//! sender in INET, the receiver in HOME, and the router's egress towards
//! HOME as the bottleneck, an HTB class at 10 Mbit/s with a `pfifo` of 100
//! packets. The base one-way delay is 25 ms (a 50 ms round trip), split
//! between the two hops through the lab's delay line: the base RTT of the
//! flow-level reproduction's dumbbell (1 ms access links and 23 ms at the
//! bottleneck each way, docs/reproductions/ledbat-flow.md, "Setup"), whose
//! Fig. 2 also runs at 10 Mbit/s with a 100-packet buffer. The uplink
//! (the ACKs' way) runs at 1 Gbit/s and is never the bottleneck.
//!
//! Four cases, each in a fresh lab:
//!
//! 1. **hopwise µTP**: `hopwise utp send --secs N` in INET to `hopwise utp
//!    recv` in HOME;
//! 2. **hopwise µTP + CUBIC**: the same beside one kernel TCP bulk flow
//!    INET → HOME (`--cc`, default cubic; the lab's own traffic threads);
//! 3. **libtorrent µTP**: a libtorrent seed in INET (seed mode) and a
//!    libtorrent leecher in HOME downloading a torrent larger than the case
//!    for N seconds (interop/libtorrent/ltpeer.py, TCP off in both);
//! 4. **libtorrent µTP + CUBIC**.
//!
//! Measured per case: the bottleneck's utilisation (bytes HTB sent over
//! its rate), its queueing delay (the `pfifo` backlog sampled every 100 ms
//! with `tc -s -j`, in bytes, over the link rate: mean, p50, p95), and each
//! flow's share of the link, from a packet socket on the bottleneck's
//! egress ([`hopwise_lab::meter`]): UDP is the µTP flow, TCP the CUBIC one.
//!
//! Claims, per stack: alone, the mean queueing delay is within 100 ms ±
//! 15 % (LEDBAT's target, RFC 6817 §2.5; libtorrent's `utp_target_delay`
//! default) at ≥ 90 % utilisation; beside CUBIC, µTP takes at most 10 % of
//! the link (a lower-than-best-effort sender yields, RFC 6817 §1).

pub mod interop;
mod outputs;
mod run;

use anyhow::{Context, Result};
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_lab::topology::Buffer;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub use run::{CaseResult, CaseSeries};

/// Seed 003.
pub const PAPER: &str = "C. Testa and D. Rossi, \"Delay-based congestion control: flow vs. BitTorrent swarm perspectives\", Computer Networks 2014";

/// LEDBAT's target queueing delay, ms (RFC 6817 §2.5: 100 ms; libtorrent's
/// `utp_target_delay` default is the same).
pub const TARGET_MS: f64 = 100.0;

/// Which µTP runs in a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    Hopwise,
    Libtorrent,
}

impl Stack {
    pub fn label(self) -> &'static str {
        match self {
            Stack::Hopwise => "hopwise",
            Stack::Libtorrent => "libtorrent",
        }
    }
}

/// (name, µTP stack, beside a CUBIC flow).
pub const CASES: [(&str, Stack, bool); 4] = [
    ("hopwise µTP", Stack::Hopwise, false),
    ("hopwise µTP + CUBIC", Stack::Hopwise, true),
    ("libtorrent µTP", Stack::Libtorrent, false),
    ("libtorrent µTP + CUBIC", Stack::Libtorrent, true),
];

/// What to run: the plan of [`LabUtp`].
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// The `hopwise` executable (`hopwise utp send|recv`).
    pub exe: PathBuf,
    /// The python of the libtorrent venv (interop/libtorrent/setup.sh).
    pub python: PathBuf,
    /// interop/libtorrent/ltpeer.py.
    pub ltpeer: PathBuf,
    /// Seconds per case.
    pub secs: u64,
    pub rate_bps: u64,
    pub buffer: Buffer,
    /// Base one-way delay, ms, half on each hop.
    pub one_way_ms: f64,
    /// The competing kernel TCP flow's congestion control.
    pub cc: String,
    /// Run the hopwise cases (1, 2).
    pub hopwise: bool,
    /// Run the libtorrent cases (3, 4).
    pub libtorrent: bool,
}

/// Where setup.sh puts the venv by default, relative to the repository root.
pub const DEFAULT_VENV: &str = ".venv-libtorrent";

impl Options {
    /// 60 s per case, 20 with `--quick`.
    pub fn secs_for(quick: bool) -> u64 {
        if quick {
            20
        } else {
            60
        }
    }

    /// The default plan, the libtorrent harness found under `repo`.
    pub fn new(exe: PathBuf, repo: &Path, quick: bool) -> Options {
        Options {
            exe,
            python: default_python(repo),
            ltpeer: repo.join("interop/libtorrent/ltpeer.py"),
            secs: Options::secs_for(quick),
            rate_bps: 10_000_000,
            buffer: Buffer::Packets(100),
            one_way_ms: 25.0,
            cc: "cubic".into(),
            hopwise: true,
            libtorrent: true,
        }
    }

    /// The cases this plan runs, in [`CASES`] order.
    pub fn cases(&self) -> Vec<(&'static str, Stack, bool)> {
        CASES
            .into_iter()
            .filter(|c| match c.1 {
                Stack::Hopwise => self.hopwise,
                Stack::Libtorrent => self.libtorrent,
            })
            .collect()
    }

    /// The options' own errors and the harness's (not the lab's: see
    /// [`hopwise_lab::topology::require`]), each naming what to do.
    pub fn check(&self) -> Result<()> {
        anyhow::ensure!(
            self.hopwise || self.libtorrent,
            "--skip-hopwise and --skip-libtorrent together leave nothing to run"
        );
        hopwise_lab::traffic::check_cc_and_secs(&self.cc, self.secs, run::WARM_S)?;
        anyhow::ensure!(
            (0.0..=1000.0).contains(&self.one_way_ms),
            "--delay {} ms: 0 to 1000 ms",
            self.one_way_ms
        );
        if self.hopwise {
            anyhow::ensure!(
                self.exe.is_file(),
                "{}: not the hopwise executable (it runs `hopwise utp send|recv`)",
                self.exe.display()
            );
        }
        if self.libtorrent {
            check_python(&self.python, &self.ltpeer)?;
        }
        Ok(())
    }
}

/// `HOPWISE_LT_PYTHON` if set, else the venv's python under `repo`.
pub fn default_python(repo: &Path) -> PathBuf {
    match std::env::var_os("HOPWISE_LT_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => repo.join(DEFAULT_VENV).join("bin/python"),
    }
}

/// Fails unless `python` imports libtorrent 2.1 and `ltpeer` exists, with a
/// message naming interop/libtorrent/setup.sh.
pub fn check_python(python: &Path, ltpeer: &Path) -> Result<()> {
    let fix = "run interop/libtorrent/setup.sh (it prints the python to use), set HOPWISE_LT_PYTHON to it, or pass --skip-libtorrent";
    anyhow::ensure!(
        ltpeer.is_file(),
        "{}: the libtorrent peer script is missing (run from the repository root)",
        ltpeer.display()
    );
    anyhow::ensure!(
        python.is_file(),
        "{}: no python for the libtorrent cases: {fix}",
        python.display()
    );
    let out = std::process::Command::new(python)
        .args(["-c", "import libtorrent as lt; print(lt.__version__)"])
        .output()
        .with_context(|| format!("cannot run {}: {fix}", python.display()))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    anyhow::ensure!(
        out.status.success() && version.starts_with("2.1."),
        "{} has no libtorrent 2.1 ({}): {fix}",
        python.display(),
        if out.status.success() {
            format!("it has {version}")
        } else {
            String::from_utf8_lossy(&out.stderr).trim().to_string()
        }
    );
    Ok(())
}

/// What the cases measured (summary.json's `kernel` and `cases`).
#[derive(Debug, Default, Serialize)]
pub struct Results {
    pub kernel: String,
    /// Seconds after each case's start that the measurement skips.
    pub warmup_s: f64,
    pub cases: Vec<CaseResult>,
    #[serde(skip)]
    pub series: Vec<CaseSeries>,
}

/// `hopwise lab utp`.
pub struct LabUtp {
    pub exe: PathBuf,
    /// The repository root (for the libtorrent harness).
    pub repo: PathBuf,
}

impl Reproduction for LabUtp {
    type Plan = Options;
    type Results = Results;
    const NAME: &'static str = "lab-utp";
    const ABOUT: &'static str = "seed 003 on real stacks: hopwise's and libtorrent's µTP alone and beside kernel CUBIC at a 10 Mbit/s, 100-packet bottleneck";
    const PAPER: &'static str = PAPER;
    const WALL: &'static str = "4 × 63 s of real time, 4 × 23 s quick";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Options {
        Options::new(self.exe.clone(), &self.repo, quick)
    }

    fn run(&self, opts: &Options, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require()?;
        opts.check()?;
        let mut r = Results {
            kernel: hopwise_lab::kstats::kernel_release(),
            warmup_s: run::WARM_S,
            ..Results::default()
        };
        let work = run::Work::new(opts)?;
        for c in opts.cases() {
            let (case, s) = run::run_case(opts, &work, ctx.out, c, ctx.progress)?;
            r.cases.push(case);
            r.series.push(s);
            ctx.checkpoint(&r)?;
        }
        Ok(r)
    }

    fn claims(&self, opts: &Options, r: &Results) -> Vec<Claim> {
        claims(opts, &r.cases)
    }

    fn outputs(&self, opts: &Options, r: &Results, o: &mut Outputs) -> Result<()> {
        outputs::write(opts, r, o)
    }

    fn facts(&self, opts: &Options) -> Vec<String> {
        vec![format!(
            "µTP (hopwise utp send|recv; libtorrent via interop/libtorrent/ltpeer.py, TCP off) and kernel TCP ({}) in network namespaces, Linux {}; {} Mbit/s HTB bottleneck, {} buffer, {} ms one-way base delay (delay line); {} s per case",
            opts.cc,
            hopwise_lab::kstats::kernel_release(),
            opts.rate_bps as f64 / 1e6,
            opts.buffer,
            opts.one_way_ms,
            opts.secs,
        )]
    }

    fn title(&self) -> String {
        "hopwise lab utp".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

/// The claims on the cases finished so far: per stack, alone and beside CUBIC.
pub fn claims(opts: &Options, cases: &[CaseResult]) -> Vec<Claim> {
    let mut out = Vec::new();
    for stack in [Stack::Hopwise, Stack::Libtorrent] {
        let find = |cubic: bool| cases.iter().find(|c| c.stack == stack && c.cubic == cubic);
        let who = format!("{}'s µTP", stack.label());
        if let Some(a) = find(false) {
            out.push(
                Claim::new(
                    format!("LEDBAT target ({})", stack.label()),
                    format!("{who} alone keeps the mean queueing delay within 100 ms ± 15 % at ≥ 90 % utilisation"),
                )
                .measured(format!(
                    "queueing delay mean {:.1} ms (p50 {:.1}, p95 {:.1}); link at {:.1} % of {:.0} Mbit/s; {} drops",
                    a.queue_mean_delay_ms,
                    a.queue_p50_delay_ms,
                    a.queue_p95_delay_ms,
                    a.utilisation * 100.0,
                    opts.rate_bps as f64 / 1e6,
                    a.drops
                ))
                .within("mean queueing delay (ms)", a.queue_mean_delay_ms, TARGET_MS, 0.15)
                .at_least("bytes the link carried / its rate", a.utilisation, 0.9),
            );
        }
        if let Some(b) = find(true) {
            out.push(
                Claim::new(
                    format!("seed 003 flow level ({})", stack.label()),
                    format!("beside kernel {} {who} takes at most 10 % of the link", opts.cc),
                )
                .measured(format!(
                    "µTP {:.1} %, {} {:.1} % of the link; queueing delay mean {:.1} ms; link at {:.1} %",
                    b.utp_link_share * 100.0,
                    opts.cc,
                    b.tcp_link_share * 100.0,
                    b.queue_mean_delay_ms,
                    b.utilisation * 100.0
                ))
                .at_most("µTP's bytes on the link / what the link can carry", b.utp_link_share, 0.10),
            );
        }
        if stack == Stack::Libtorrent {
            let seen: Vec<&CaseResult> = cases.iter().filter(|c| c.stack == stack).collect();
            if !seen.is_empty() {
                let ok = seen
                    .iter()
                    .all(|c| c.utp_peers.unwrap_or(0) > 0 && c.tcp_peers == Some(0));
                out.push(
                    Claim::new(
                        "harness",
                        "libtorrent's peer lists show µTP connections only (TCP off)",
                    )
                    .measured(
                        seen.iter()
                            .map(|c| {
                                format!(
                                    "{}: {} µTP, {} TCP",
                                    c.case,
                                    c.utp_peers.map_or("-".into(), |n| n.to_string()),
                                    c.tcp_peers.map_or("-".into(), |n| n.to_string())
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                    )
                    .fact("every case: ≥ 1 µTP peer and 0 TCP peers", ok),
                );
            }
        }
    }
    if cases.len() >= 2 {
        out.push(Claim::info(
            "side by side",
            "each flow's throughput on the bottleneck over the measured window (from its share of the link), and the receivers' goodput: µTP's over its whole transfer (start-up included), TCP's over the measured window",
            cases
                .iter()
                .map(|c| {
                    let rate = opts.rate_bps as f64;
                    format!(
                        "{}: µTP {} on the link ({} goodput){}",
                        c.case,
                        mbit(Some(c.utp_link_share * rate)),
                        mbit(c.utp_goodput_bps),
                        if c.cubic {
                            format!(
                                ", {} {} ({})",
                                opts.cc,
                                mbit(Some(c.tcp_link_share * rate)),
                                mbit(c.tcp_goodput_bps)
                            )
                        } else {
                            String::new()
                        }
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ));
    }
    out
}

fn mbit(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.2} Mbit/s", x / 1e6))
}
