//! `hopwise lab hops`: BackTap and kernel TCP over the same three lossy
//! hops, on an equal footing.
//!
//! Five hosts on the lab's wide-area links ([`hopwise_lab::wan`]):
//!
//! ```text
//!   client ── relay1 ── relay2 ── relay3 ── server
//!          p        p         p       clean
//! ```
//!
//! The three hops client–relay1, relay1–relay2 and relay2–relay3 each have
//! a 40 ms round trip (20 ms one way) and lose each frame with probability
//! `p`, in each direction, independently (the kernel-TCP measurement
//! that motivated it lost frames on every hop both ways, as the delay line does); relay3–
//! server has no delay and no loss. Both transports cross the same veths
//! and the same delay line: every relay host runs `hopwise relay` (BackTap
//! over UDP) and `hopwise otcp relay` (kernel TCP spliced at the relay),
//! and the client runs `hopwise proxy` (SOCKS5, the fixed path relay1 →
//! relay2 → relay3) and `hopwise otcp forward --via relay1,relay2,relay3`.
//! The delay line counts UDP and TCP frames and their losses apart, which
//! shows that both met the same loss.
//!
//! A download: the server (a thread in the server's namespace) sends a
//! body of the given size from the daemon's deterministic test file
//! ([`hopwise_net::testbed::fill`]) and closes; the client (a thread in
//! the client's namespace) connects through SOCKS5 or to the forwarder,
//! reads to the end and checks the SHA-256 against
//! [`hopwise_net::testbed::expected_hash`]. Setup (from the attempt's start
//! to the first byte: for BackTap the proxy's start, its circuit and the
//! stream; for TCP the chain's connections) and transfer (first byte to
//! end of stream) are timed apart; goodput is the bytes over the transfer
//! time. Every BackTap download has a fresh proxy, hence a cold circuit.
//! Within one wan per `p` the downloads alternate BackTap and TCP. A
//! download that reaches the per-transfer limit is reported with the
//! bytes it got, and its goodput so far, marked unfinished.
//!
//! Kernel: CUBIC on every socket that sends (`hopwise otcp --cc`, the
//! servers; a namespace may only default to an algorithm of
//! `tcp_allowed_congestion_control`), SACK on, `tcp_no_metrics_save = 1`
//! on every host (each connection starts afresh), Linux's default initial
//! window; the sysctls as read back go into summary.json. Buffers: `otcp --buffer` per
//! direction of a spliced connection, and BackTap's `[limits]
//! circuit_queue` and `stream_window`; the plan holds them, and its
//! `relay_transport` lines go into every relay's and the proxy's
//! `[transport]` table (new knobs, once they exist, without a rebuild of
//! the experiment).

use crate::backtap::common::PAPER;
use anyhow::Result;
use hopwise_experiment::stats::{bootstrap_groups_ci90, median, RESAMPLES};
use hopwise_experiment::{Check, Claim, Cmp, Ctx, Estimate, Outputs, Reproduction};
use hopwise_lab::delay::{LaneRow, LaneStats, LinkStats};
use hopwise_lab::traffic::Clock;
use hopwise_plot::{Chart, Series};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

mod run;

/// Each lossy hop's round trip (20 ms one way).
pub const HOP_RTT_MS: f64 = 40.0;
/// The lossy hops: client–relay1, relay1–relay2, relay2–relay3.
pub const LOSSY_HOPS: usize = 3;
/// The download that resolves ARP and builds the relays' links before
/// the measured ones (not measured).
pub const WARMUP_BYTES: u64 = 100_000;
/// The confidence of the loss check (the whole claim, Bonferroni-
/// corrected over its checks).
pub const LOSS_CONFIDENCE: f64 = 0.99;

/// `hopwise lab hops`: its plan is [`Plan`].
pub struct LabHops;

/// A transport under test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// `hopwise proxy` and three `hopwise relay`s.
    #[default]
    Backtap,
    /// `hopwise otcp forward` and three `hopwise otcp relay`s.
    Tcp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Backtap => "BackTap",
            Transport::Tcp => "kernel TCP",
        }
    }
}

/// What to run (summary.json's `plan`).
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The `hopwise` executable that runs the relays, proxies and forwarders.
    pub exe: PathBuf,
    /// Loss per frame on each lossy hop, in each direction: one wan each.
    pub losses: Vec<f64>,
    /// Bytes per download.
    pub sizes: Vec<u64>,
    /// Downloads per transport, size and loss.
    pub runs: u32,
    /// Seconds a download may take, setup included.
    pub limit_s: u64,
    /// Every host's congestion control.
    pub cc: String,
    /// `hopwise otcp --buffer`: bytes each direction of a spliced
    /// connection may hold at a relay or the forwarder.
    pub otcp_buffer: u64,
    /// BackTap's `[limits] circuit_queue` (cells per circuit and
    /// direction) and `stream_window` (bytes), on relays and proxy.
    pub circuit_queue: u32,
    pub stream_window: u64,
    /// Extra lines of the relays' and the proxy's `[transport]` table,
    /// e.g. `startup = "slow-start"`.
    pub relay_transport: Vec<String>,
    /// Seeds the delay line's loss and the test file.
    pub seed: u64,
}

impl Plan {
    /// Full: p ∈ {0, 0.5, 1, 2, 5} %, 20 and 200 MB, 3 runs, 600 s per
    /// download; quick: p ∈ {0, 2} %, 4 MB, 1 run, 300 s (BackTap with the
    /// paper's linear start and halving took about 100 s for 4 MB at 2 %).
    pub fn new(exe: PathBuf, quick: bool) -> Plan {
        Plan {
            exe,
            losses: if quick {
                vec![0.0, 0.02]
            } else {
                vec![0.0, 0.005, 0.01, 0.02, 0.05]
            },
            sizes: if quick {
                vec![4_000_000]
            } else {
                vec![20_000_000, 200_000_000]
            },
            runs: if quick { 1 } else { 3 },
            limit_s: if quick { 300 } else { 600 },
            cc: "cubic".into(),
            otcp_buffer: 4 << 20,
            circuit_queue: 4096,
            stream_window: 8 << 20,
            relay_transport: Vec::new(),
            seed: 1,
        }
    }

    /// The plan's own errors, named by their flags.
    pub fn check(&self) -> Result<()> {
        hopwise_lab::traffic::check_cc(&self.cc)?;
        anyhow::ensure!(!self.losses.is_empty(), "--loss: at least one");
        for (i, &p) in self.losses.iter().enumerate() {
            anyhow::ensure!((0.0..0.5).contains(&p), "--loss {p}: 0 to below 0.5");
            anyhow::ensure!(!self.losses[..i].contains(&p), "--loss {p}: given twice");
        }
        anyhow::ensure!(!self.sizes.is_empty(), "--sizes: at least one");
        for (i, &s) in self.sizes.iter().enumerate() {
            anyhow::ensure!(
                (WARMUP_BYTES..=4_000_000_000).contains(&s),
                "--sizes {s}: {WARMUP_BYTES} B to 4 GB"
            );
            anyhow::ensure!(!self.sizes[..i].contains(&s), "--sizes {s}: given twice");
        }
        anyhow::ensure!(self.sizes.len() <= 50, "--sizes: at most 50");
        anyhow::ensure!(
            (1..=20).contains(&self.runs),
            "--runs {}: 1 to 20",
            self.runs
        );
        anyhow::ensure!(
            (10..=7200).contains(&self.limit_s),
            "--limit {} s: 10 s to 2 h",
            self.limit_s
        );
        anyhow::ensure!(
            (64 << 10..=1 << 30).contains(&self.otcp_buffer),
            "--otcp-buffer {} B: 64 KiB to 1 GiB",
            self.otcp_buffer
        );
        anyhow::ensure!(
            (4096..=1 << 30).contains(&self.stream_window),
            "--stream-window {} B: 4 KiB to 1 GiB (the daemon's range)",
            self.stream_window
        );
        anyhow::ensure!(
            (2..=1_000_000).contains(&self.circuit_queue),
            "--circuit-queue {}: 2 to 1000000 cells",
            self.circuit_queue
        );
        for l in &self.relay_transport {
            let t = l.trim();
            anyhow::ensure!(
                !t.is_empty()
                    && !t.starts_with('[')
                    && !t.contains('\n')
                    && t.split_once('=').is_some_and(|(k, _)| !k.trim().is_empty()),
                "--relay-transport {l:?}: one `key = value` line of the [transport] table"
            );
        }
        anyhow::ensure!(
            self.exe.is_file(),
            "{}: not the hopwise executable (it runs the relays, proxies and forwarders)",
            self.exe.display()
        );
        Ok(())
    }

    /// Downloads measured in all (both transports).
    pub fn transfers(&self) -> usize {
        self.losses.len() * self.sizes.len() * self.runs as usize * 2
    }

    /// The lines added to every relay's and the proxy's config file.
    pub fn config_lines(&self) -> String {
        let mut s = format!(
            "\n[limits]\ncircuit_queue = {}\nstream_window = {}\n",
            self.circuit_queue, self.stream_window
        );
        if !self.relay_transport.is_empty() {
            s.push_str("\n[transport]\n");
            for l in &self.relay_transport {
                s.push_str(l.trim());
                s.push('\n');
            }
        }
        s
    }
}

/// The order of one wan's downloads: for each run and size a BackTap and
/// a TCP download, the first of the pair alternating, so that neither
/// always goes first. Pure, for tests.
pub fn schedule(sizes: usize, runs: u32) -> Vec<(usize, u32, Transport)> {
    let mut s = Vec::new();
    let mut k = 0usize;
    for run in 0..runs {
        for size in 0..sizes {
            let pair = if k.is_multiple_of(2) {
                [Transport::Backtap, Transport::Tcp]
            } else {
                [Transport::Tcp, Transport::Backtap]
            };
            s.extend(pair.map(|t| (size, run, t)));
            k += 1;
        }
    }
    s
}

/// One download (a row of `transfers.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Transfer {
    pub loss: f64,
    pub size: u64,
    pub transport: Transport,
    pub run: u32,
    /// Its place among the wan's downloads (0: first after the warm-ups).
    pub order: u32,
    /// Attempt start to first byte, first byte to end, start to end (s).
    pub setup_s: f64,
    pub transfer_s: f64,
    pub total_s: f64,
    pub bytes: u64,
    /// Bytes over the transfer time, MB/s (10⁶ B/s); so far, if unfinished.
    pub goodput_mbs: f64,
    /// The whole body arrived and the server closed.
    pub finished: bool,
    /// SHA-256 of the body as expected (checked only if finished).
    pub hash_ok: Option<bool>,
    /// CPU seconds of this download's proxy (BackTap only).
    pub proxy_cpu_s: Option<f64>,
    /// Why it stopped early, besides the limit.
    pub error: String,
}

/// One (loss, size) of `table.csv`: each transport's median and range over
/// its runs, and the ratio of the medians.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TableRow {
    pub loss: f64,
    pub size: u64,
    pub runs: usize,
    pub backtap_median_mbs: f64,
    pub backtap_min_mbs: f64,
    pub backtap_max_mbs: f64,
    pub backtap_unfinished: usize,
    pub tcp_median_mbs: f64,
    pub tcp_min_mbs: f64,
    pub tcp_max_mbs: f64,
    pub tcp_unfinished: usize,
    /// BackTap's median over TCP's.
    pub backtap_over_tcp: f64,
    /// Median setup time (s) of each.
    pub backtap_setup_s: f64,
    pub tcp_setup_s: f64,
}

/// The goodputs (MB/s) of one (loss, size, transport), in run order.
fn goodputs(t: &[Transfer], loss: f64, size: u64, tr: Transport) -> Vec<&Transfer> {
    t.iter()
        .filter(|x| x.loss == loss && x.size == size && x.transport == tr)
        .collect()
}

/// `table.csv`: a row per (loss, size) that has downloads, in the order
/// they first appear.
pub fn table(transfers: &[Transfer]) -> Vec<TableRow> {
    let mut keys: Vec<(f64, u64)> = Vec::new();
    for t in transfers {
        if !keys.contains(&(t.loss, t.size)) {
            keys.push((t.loss, t.size));
        }
    }
    let range = |xs: &[f64]| {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if xs.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            (lo, hi)
        }
    };
    keys.into_iter()
        .map(|(loss, size)| {
            let bt = goodputs(transfers, loss, size, Transport::Backtap);
            let tcp = goodputs(transfers, loss, size, Transport::Tcp);
            let g = |v: &[&Transfer]| v.iter().map(|x| x.goodput_mbs).collect::<Vec<f64>>();
            let setup = |v: &[&Transfer]| median(&v.iter().map(|x| x.setup_s).collect::<Vec<_>>());
            let unfinished = |v: &[&Transfer]| v.iter().filter(|x| !x.finished).count();
            let (gb, gt) = (g(&bt), g(&tcp));
            let (bl, bh) = range(&gb);
            let (tl, th) = range(&gt);
            let (mb, mt) = (median(&gb), median(&gt));
            TableRow {
                loss,
                size,
                runs: bt.len().max(tcp.len()),
                backtap_median_mbs: mb,
                backtap_min_mbs: bl,
                backtap_max_mbs: bh,
                backtap_unfinished: unfinished(&bt),
                tcp_median_mbs: mt,
                tcp_min_mbs: tl,
                tcp_max_mbs: th,
                tcp_unfinished: unfinished(&tcp),
                backtap_over_tcp: if mt > 0.0 { mb / mt } else { f64::NAN },
                backtap_setup_s: setup(&bt),
                tcp_setup_s: setup(&tcp),
            }
        })
        .collect()
}

/// BackTap's median goodput over TCP's, with a bootstrap interval that
/// resamples each transport's runs on their own (they share no seed) when
/// both have two or more; exact otherwise.
pub fn parity(name: &str, backtap: &[f64], tcp: &[f64]) -> Estimate {
    let ratio = |b: &[f64], t: &[f64]| median(b) / median(t);
    let value = ratio(backtap, tcp);
    if backtap.len() < 2 || tcp.len() < 2 {
        return Estimate::exact(value);
    }
    let ci = bootstrap_groups_ci90(&[backtap.len(), tcp.len()], RESAMPLES, name, |idx| {
        let pick = |xs: &[f64], g: usize| -> Vec<f64> { idx[g].iter().map(|&i| xs[i]).collect() };
        ratio(&pick(backtap, 0), &pick(tcp, 1))
    });
    Estimate::bootstrap(value, ci, backtap.len().min(tcp.len()))
}

/// The standard normal distribution function, from the error function of
/// Abramowitz and Stegun 7.1.26 (absolute error below 1.5·10⁻⁷).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// The two-sided critical value for `checks` tests that together hold at
/// `confidence` (Bonferroni): Φ⁻¹(1 − (1 − confidence)/(2·checks)), by
/// bisection.
pub fn critical_z(confidence: f64, checks: usize) -> f64 {
    let tail = (1.0 - confidence) / (2.0 * checks.max(1) as f64);
    let (mut lo, mut hi) = (0.0, 10.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if 1.0 - normal_cdf(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The fractions of `n` frames that a loss probability `p` makes likely at
/// critical value `z`: `p ± z·√(p(1 − p)/n)` (the score test, whose
/// inversion is Wilson's interval), clipped to [0, 1]. Exactly 0 for p = 0.
pub fn loss_band(p: f64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let hw = z * (p * (1.0 - p) / n as f64).sqrt();
    ((p - hw).max(0.0), (p + hw).min(1.0))
}

/// What the delay line did in one wan.
#[derive(Clone, Debug, Serialize)]
pub struct LossLinks {
    pub loss: f64,
    pub links: Vec<LinkStats>,
}

/// CPU seconds of one process in one wan (a row of `cpu.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuRow {
    pub loss: f64,
    pub process: String,
    pub cpu_s: f64,
}

/// What the runs measured (beside the plan in summary.json).
#[derive(Debug, Default, Serialize)]
pub struct Results {
    pub kernel: String,
    /// Where the congestion control is set: on every TCP socket of the
    /// oTCP chain and the servers, not as the namespaces' default (which
    /// `sysctls` shows).
    pub congestion_control: String,
    /// The TCP sysctls as read back in the client's namespace (every host
    /// gets the same).
    pub sysctls: BTreeMap<String, String>,
    pub transfers: Vec<Transfer>,
    pub table: Vec<TableRow>,
    pub links: Vec<LossLinks>,
    pub cpu: Vec<CpuRow>,
}

/// `50 MB`, `4 MB`, `0.1 MB`.
fn mb(bytes: u64) -> String {
    format!("{} MB", hopwise_experiment::sig(bytes as f64 / 1e6, 3))
}

/// `0`, `0.5 %`, `2 %`.
fn pct(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else {
        format!("{} %", hopwise_experiment::sig(100.0 * p, 3))
    }
}

/// The frames and losses of one protocol on one link, both directions.
fn link_counts(l: &LinkStats, tcp: bool) -> (u64, u64) {
    let one = |s: &LaneStats| {
        if tcp {
            (s.tcp_frames, s.tcp_lost)
        } else {
            (s.udp_frames, s.udp_lost)
        }
    };
    let (a, b) = (one(&l.ab), one(&l.ba));
    (a.0 + b.0, a.1 + b.1)
}

impl Reproduction for LabHops {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "lab-hops";
    const ABOUT: &'static str = "BackTap (hopwise relay) against kernel TCP spliced by hopwise otcp relays, over the same three lossy 40 ms hops";
    const PAPER: &'static str = PAPER;
    const WALL: &'static str =
        "quick about 2 min; full several hours (mostly the 200 MB downloads at 5 %)";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Plan {
        Plan::new(std::env::current_exe().unwrap_or_default(), quick)
    }

    fn title(&self) -> String {
        "hopwise lab hops".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }

    fn facts(&self, p: &Plan) -> Vec<String> {
        vec![format!(
            "client, relay1–3, server in network namespaces, Linux {}; three hops of {HOP_RTT_MS} ms RTT losing p of the frames each way (user-space delay line), relay3–server clean; p ∈ {{{}}}; {} per download, {} per transport; limit {} s; kernel TCP: {}, SACK, no saved metrics, otcp --buffer {} B; BackTap: circuit_queue {}, stream_window {} B{}",
            hopwise_lab::kstats::kernel_release(),
            p.losses.iter().map(|&x| pct(x)).collect::<Vec<_>>().join(", "),
            p.sizes.iter().map(|&s| mb(s)).collect::<Vec<_>>().join(", "),
            hopwise_experiment::plural(p.runs as usize, "run"),
            p.limit_s,
            p.cc,
            p.otcp_buffer,
            p.circuit_queue,
            p.stream_window,
            if p.relay_transport.is_empty() {
                String::new()
            } else {
                format!(", [transport] {}", p.relay_transport.join("; "))
            }
        )]
    }

    /// One wan per loss; the outputs are rewritten after each, so a run
    /// that fails later keeps what it measured.
    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require()?;
        plan.check()?;
        let clock = Clock::start();
        let mut r = Results {
            kernel: hopwise_lab::kstats::kernel_release(),
            congestion_control: format!(
                "{} on every socket that sends data (TCP_CONGESTION: hopwise otcp --cc, the servers)",
                plan.cc
            ),
            ..Results::default()
        };
        let hashes = run::hashes(plan);
        ctx.progress
            .start("downloads (real time)", plan.transfers() as u64);
        for &p in &plan.losses {
            let w = run::run_loss(plan, ctx.out, p, clock, ctx.progress, &hashes)?;
            if r.sysctls.is_empty() {
                r.sysctls = w.sysctls;
            }
            r.transfers.extend(w.transfers);
            r.table = table(&r.transfers);
            r.links.push(LossLinks {
                loss: p,
                links: w.links,
            });
            r.cpu
                .extend(w.cpu.into_iter().map(|(process, cpu_s)| CpuRow {
                    loss: p,
                    process,
                    cpu_s,
                }));
            ctx.checkpoint(&r)?;
        }
        ctx.progress.finish();
        Ok(r)
    }

    fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
        claims(plan, r)
    }

    fn outputs(&self, _: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
        out.svg("hops.svg", &chart(&r.table))?;
        out.csv("table.csv", &r.table)?;
        out.csv("transfers.csv", &r.transfers)?;
        /// `p`: the wan's loss (the clean hop's own `loss` is 0).
        #[derive(Default, Serialize)]
        struct LinkRow {
            p: f64,
            #[serde(flatten)]
            lane: LaneRow,
        }
        let rows: Vec<LinkRow> = r
            .links
            .iter()
            .flat_map(|w| {
                w.links
                    .iter()
                    .flat_map(LinkStats::rows)
                    .map(|lane| LinkRow { p: w.loss, lane })
            })
            .collect();
        out.csv("links.csv", &rows)?;
        out.csv("cpu.csv", &r.cpu)?;
        out.data(&["hops.svg"], &["table.csv", "transfers.csv"]);
        Ok(())
    }
}

/// The claims on the downloads finished so far.
fn claims(plan: &Plan, r: &Results) -> Vec<Claim> {
    let mut out = Vec::new();
    if r.table.is_empty() {
        return out;
    }
    // Parity or better, per (loss, size), judged on the runs.
    let items: Vec<(String, Estimate)> = r
        .table
        .iter()
        .map(|row| {
            let g = |tr| {
                goodputs(&r.transfers, row.loss, row.size, tr)
                    .iter()
                    .map(|x| x.goodput_mbs)
                    .collect::<Vec<f64>>()
            };
            let label = format!("p = {}, {}", pct(row.loss), mb(row.size));
            let e = parity(
                &format!("lab-hops/{}/{}", row.loss, row.size),
                &g(Transport::Backtap),
                &g(Transport::Tcp),
            );
            (label, e)
        })
        .collect();
    let measured = r
        .table
        .iter()
        .map(|row| {
            format!(
                "p = {}, {}: BackTap {} MB/s ({}–{}), TCP {} MB/s ({}–{}){}",
                pct(row.loss),
                mb(row.size),
                hopwise_experiment::sig(row.backtap_median_mbs, 3),
                hopwise_experiment::sig(row.backtap_min_mbs, 3),
                hopwise_experiment::sig(row.backtap_max_mbs, 3),
                hopwise_experiment::sig(row.tcp_median_mbs, 3),
                hopwise_experiment::sig(row.tcp_min_mbs, 3),
                hopwise_experiment::sig(row.tcp_max_mbs, 3),
                match (row.backtap_unfinished, row.tcp_unfinished) {
                    (0, 0) => String::new(),
                    (b, t) => format!(" (unfinished: BackTap {b}, TCP {t})"),
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    out.push(
        Claim::new(
            "parity or better",
            "over the same three lossy hops, BackTap's median goodput is at least kernel TCP's (CUBIC, SACK, spliced at the same relays), for every loss and size",
        )
        .measured(format!("median (min–max) over {}: {measured}", hopwise_experiment::plural(plan.runs as usize, "run")))
        .each("BackTap median ÷ TCP median", items, Cmp::AtLeast(1.0)),
    );
    // Both transports met the loss the plan set.
    for w in &r.links {
        let lossy: Vec<&LinkStats> = w.links.iter().take(LOSSY_HOPS).collect();
        let checks = 2 * lossy.len();
        let z = critical_z(LOSS_CONFIDENCE, checks);
        let mut c = Claim::new(
            "the delay line",
            format!(
                "at p = {}, each lossy hop lost UDP (BackTap) and TCP frames, both directions together, at p: each fraction within p ± {}·√(p(1−p)/n) (the {} % level over the {checks} checks, Bonferroni)",
                pct(w.loss),
                hopwise_experiment::sig(z, 3),
                100.0 * LOSS_CONFIDENCE
            ),
        );
        let mut text = Vec::new();
        for l in &lossy {
            for (tcp, proto) in [(false, "UDP"), (true, "TCP")] {
                let (n, k) = link_counts(l, tcp);
                let frac = if n > 0 { k as f64 / n as f64 } else { f64::NAN };
                let (lo, hi) = loss_band(w.loss, n, z);
                text.push(format!(
                    "{} {proto} {k} of {n} ({})",
                    l.link.name,
                    if frac.is_nan() {
                        "-".into()
                    } else {
                        format!("{:.3} %", 100.0 * frac)
                    }
                ));
                c = c.check(Check::one(
                    format!("{} {proto} loss fraction", l.link.name),
                    frac,
                    Cmp::Between(lo, hi),
                ));
            }
        }
        out.push(c.measured(text.join("; ")));
    }
    // The line's own timing and faults.
    let lanes: Vec<&LaneStats> = r
        .links
        .iter()
        .flat_map(|w| w.links.iter().flat_map(|l| [&l.ab, &l.ba]))
        .collect();
    if !lanes.is_empty() {
        out.push(Claim::info(
            "the delay line",
            "frames leave after their hop's one-way delay (20 ms), a little late: the last frames of a burst wait for those before them",
            hopwise_lab::delay::lateness_summary(&lanes),
        ));
    }
    // Every finished download was byte-exact.
    let finished: Vec<&Transfer> = r.transfers.iter().filter(|t| t.finished).collect();
    let bad = finished.iter().filter(|t| t.hash_ok != Some(true)).count();
    out.push(
        Claim::new(
            "downloads",
            "every finished download is the server's body, byte for byte (SHA-256)",
        )
        .measured(format!(
            "{} of {} downloads finished; {bad} with a wrong hash",
            finished.len(),
            r.transfers.len()
        ))
        .fact("every finished download's SHA-256 as expected", bad == 0),
    );
    // Setup and CPU, for the record.
    let setup = |tr: Transport| {
        let v: Vec<f64> = r
            .transfers
            .iter()
            .filter(|t| t.transport == tr)
            .map(|t| t.setup_s)
            .collect();
        median(&v)
    };
    out.push(Claim::info(
        "setup",
        "time to the first byte: for BackTap a fresh proxy, its circuit and the stream (a cold circuit each time), for TCP the chain of connections",
        format!(
            "median BackTap {} s, kernel TCP {} s",
            hopwise_experiment::sig(setup(Transport::Backtap), 3),
            hopwise_experiment::sig(setup(Transport::Tcp), 3)
        ),
    ));
    if !r.cpu.is_empty() {
        let mut per: BTreeMap<&str, f64> = BTreeMap::new();
        for c in &r.cpu {
            if c.cpu_s.is_finite() {
                *per.entry(c.process.as_str()).or_default() += c.cpu_s;
            }
        }
        let proxies: f64 = r.transfers.iter().filter_map(|t| t.proxy_cpu_s).sum();
        out.push(Claim::info(
            "CPU",
            "CPU seconds of the daemons (the machine's cores are shared by all of them and the delay line)",
            format!(
                "{}; the proxies {:.1} s",
                per.iter()
                    .map(|(k, v)| format!("{k} {v:.1} s"))
                    .collect::<Vec<_>>()
                    .join(", "),
                proxies
            ),
        ));
    }
    out
}

/// Goodput against loss, log y: each transport and size's medians with
/// their min–max as bars.
fn chart(table: &[TableRow]) -> Chart {
    let mut c = Chart::new("BackTap and kernel TCP over three lossy 40 ms hops")
        .x_label("loss per frame on each hop, each way (%)")
        .y_label("goodput (MB/s), median and min–max")
        .log_y(true)
        .size(760, 440);
    let mut sizes: Vec<u64> = table.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for tr in [Transport::Backtap, Transport::Tcp] {
        for &size in &sizes {
            let rows: Vec<&TableRow> = table.iter().filter(|r| r.size == size).collect();
            let pick = |r: &TableRow| match tr {
                Transport::Backtap => (r.backtap_median_mbs, r.backtap_min_mbs, r.backtap_max_mbs),
                Transport::Tcp => (r.tcp_median_mbs, r.tcp_min_mbs, r.tcp_max_mbs),
            };
            // Log axis: a zero goodput (nothing arrived) is left out.
            let kept: Vec<(f64, (f64, f64, f64))> = rows
                .iter()
                .map(|r| (100.0 * r.loss, pick(r)))
                .filter(|(_, (m, _, _))| *m > 0.0)
                .collect();
            let mut s = Series::line_points(
                format!("{}, {}", tr.name(), mb(size)),
                kept.iter().map(|&(x, (m, _, _))| (x, m)).collect(),
            )
            .with_error_bars(
                kept.iter()
                    .map(|&(_, (_, lo, hi))| (lo.max(1e-6), hi))
                    .collect(),
            );
            if tr == Transport::Tcp {
                s = s.dashed();
            }
            c.push_series(s);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transfer(loss: f64, size: u64, tr: Transport, run: u32, mbs: f64) -> Transfer {
        Transfer {
            loss,
            size,
            transport: tr,
            run,
            goodput_mbs: mbs,
            setup_s: if tr == Transport::Backtap { 0.5 } else { 0.3 },
            finished: mbs > 0.5,
            hash_ok: Some(true),
            ..Transfer::default()
        }
    }

    #[test]
    fn plans_have_the_full_grid_and_refuse_bad_values_by_flag() {
        let exe = std::env::current_exe().unwrap();
        let full = Plan::new(exe.clone(), false);
        assert_eq!(full.losses, [0.0, 0.005, 0.01, 0.02, 0.05]);
        assert_eq!(full.sizes, [20_000_000, 200_000_000]);
        assert_eq!((full.runs, full.transfers()), (3, 60));
        full.check().unwrap();
        let q = Plan::new(exe, true);
        assert_eq!(
            (q.losses.clone(), q.sizes.clone(), q.runs),
            (vec![0.0, 0.02], vec![4_000_000], 1)
        );
        assert_eq!(q.transfers(), 4);
        let err = |f: &dyn Fn(&mut Plan)| {
            let mut p = q.clone();
            f(&mut p);
            p.check().unwrap_err().to_string()
        };
        assert!(err(&|p| p.losses = vec![0.6]).starts_with("--loss 0.6"));
        assert!(err(&|p| p.losses = vec![0.01, 0.01]).contains("twice"));
        assert!(err(&|p| p.sizes = vec![10]).starts_with("--sizes 10"));
        assert!(err(&|p| p.runs = 0).starts_with("--runs 0"));
        assert!(err(&|p| p.limit_s = 1).starts_with("--limit 1"));
        assert!(
            err(&|p| p.relay_transport = vec!["[limits]".into()]).starts_with("--relay-transport")
        );
        assert!(
            err(&|p| p.relay_transport = vec!["no equals".into()]).starts_with("--relay-transport")
        );
        assert!(err(&|p| p.exe = "/nonexistent".into()).contains("not the hopwise executable"));
    }

    #[test]
    fn config_lines_set_the_limits_and_pass_the_transport_lines_through() {
        let mut p = Plan::new(PathBuf::from("/x"), true);
        let s = p.config_lines();
        assert!(s.contains("[limits]\ncircuit_queue = 4096\nstream_window = 8388608\n"));
        assert!(!s.contains("[transport]"), "no table without lines");
        p.relay_transport = vec!["startup = \"slow-start\"".into(), " sack = true ".into()];
        let s = p.config_lines();
        assert!(
            s.ends_with("\n[transport]\nstartup = \"slow-start\"\nsack = true\n"),
            "{s}"
        );
    }

    #[test]
    fn the_schedule_alternates_which_transport_goes_first() {
        let s = schedule(2, 2);
        assert_eq!(s.len(), 8);
        let first: Vec<Transport> = s.iter().step_by(2).map(|x| x.2).collect();
        assert_eq!(
            first,
            [
                Transport::Backtap,
                Transport::Tcp,
                Transport::Backtap,
                Transport::Tcp
            ]
        );
        // Each (size, run) once per transport.
        for size in 0..2 {
            for run in 0..2 {
                for tr in [Transport::Backtap, Transport::Tcp] {
                    assert_eq!(s.iter().filter(|x| **x == (size, run, tr)).count(), 1);
                }
            }
        }
        // One size, one run: BackTap first.
        assert_eq!(
            schedule(1, 1),
            [(0, 0, Transport::Backtap), (0, 0, Transport::Tcp)]
        );
    }

    #[test]
    fn the_table_has_medians_ranges_and_the_ratio_per_loss_and_size() {
        let t = vec![
            transfer(0.0, 4, Transport::Backtap, 0, 2.0),
            transfer(0.0, 4, Transport::Tcp, 0, 4.0),
            transfer(0.0, 4, Transport::Backtap, 1, 6.0),
            transfer(0.0, 4, Transport::Tcp, 1, 5.0),
            transfer(0.0, 4, Transport::Backtap, 2, 3.0),
            transfer(0.0, 4, Transport::Tcp, 2, 0.1),
            transfer(0.02, 4, Transport::Backtap, 0, 1.0),
            transfer(0.02, 4, Transport::Tcp, 0, 0.25),
        ];
        let rows = table(&t);
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!((r.loss, r.size, r.runs), (0.0, 4, 3));
        assert_eq!(
            (r.backtap_median_mbs, r.backtap_min_mbs, r.backtap_max_mbs),
            (3.0, 2.0, 6.0)
        );
        assert_eq!(
            (r.tcp_median_mbs, r.tcp_min_mbs, r.tcp_max_mbs),
            (4.0, 0.1, 5.0)
        );
        assert_eq!((r.backtap_unfinished, r.tcp_unfinished), (0, 1));
        assert_eq!(r.backtap_over_tcp, 0.75);
        assert_eq!((r.backtap_setup_s, r.tcp_setup_s), (0.5, 0.3));
        assert_eq!(rows[1].backtap_over_tcp, 4.0);
        // A transport without a byte: the ratio is missing, not infinite.
        let rows = table(&[
            transfer(0.0, 4, Transport::Backtap, 0, 1.0),
            transfer(0.0, 4, Transport::Tcp, 0, 0.0),
        ]);
        assert!(rows[0].backtap_over_tcp.is_nan());
    }

    #[test]
    fn parity_is_exact_for_one_run_and_an_interval_for_several() {
        let e = parity("t", &[2.0], &[1.0]);
        assert_eq!((e.value, e.ci90), (2.0, None));
        let e = parity("t", &[2.0, 2.2, 1.8], &[1.0, 1.1, 0.9]);
        assert_eq!(e.value, 2.0);
        let [lo, hi] = e.ci90.unwrap();
        assert!(lo > 1.5 && hi < 2.5 && lo <= hi, "{lo}–{hi}");
        // Overlapping runs: the interval straddles 1, so the claim cannot
        // be decided either way.
        let plan = Plan::new(PathBuf::from("/x"), true);
        let mut t = Vec::new();
        for (run, (b, c)) in [(1.0, 1.2), (1.3, 0.9), (0.8, 1.1)].into_iter().enumerate() {
            t.push(transfer(0.0, 4, Transport::Backtap, run as u32, b));
            t.push(transfer(0.0, 4, Transport::Tcp, run as u32, c));
        }
        let r = Results {
            table: table(&t),
            transfers: t,
            ..Results::default()
        };
        let c = &claims(&plan, &r)[0];
        assert_eq!(
            c.verdict,
            hopwise_experiment::Verdict::Inconclusive,
            "{c:?}"
        );
        // Clearly ahead in every run: holds.
        let mut t = r.transfers.clone();
        for x in &mut t {
            if x.transport == Transport::Backtap {
                x.goodput_mbs *= 3.0;
            }
        }
        let r = Results {
            table: table(&t),
            transfers: t,
            ..Results::default()
        };
        assert_eq!(
            claims(&plan, &r)[0].verdict,
            hopwise_experiment::Verdict::Holds
        );
    }

    #[test]
    fn loss_bands_follow_the_binomial_spread_and_zero_loss_allows_none() {
        // The two-sided 99 % point, and Bonferroni over six checks.
        assert!((critical_z(0.99, 1) - 2.5758).abs() < 1e-3);
        assert!((critical_z(0.95, 1) - 1.9600).abs() < 1e-3);
        assert!((critical_z(0.99, 6) - 3.1444).abs() < 2e-3);
        let (lo, hi) = loss_band(0.02, 10_000, 2.5758);
        assert!(
            (lo - 0.016394).abs() < 1e-5 && (hi - 0.023606).abs() < 1e-5,
            "{lo}–{hi}"
        );
        assert_eq!(loss_band(0.0, 10_000, 3.0), (0.0, 0.0));
        assert_eq!(loss_band(0.02, 0, 3.0), (0.0, 1.0));
    }

    #[test]
    fn the_loss_claim_checks_each_protocol_on_each_lossy_hop() {
        use hopwise_lab::delay::{Dir, Link};
        let lane = |udp: (u64, u64), tcp: (u64, u64)| LaneStats {
            udp_frames: udp.0,
            udp_lost: udp.1,
            tcp_frames: tcp.0,
            tcp_lost: tcp.1,
            ..LaneStats::default()
        };
        let link = |name: &str, ab: LaneStats, ba: LaneStats| LinkStats {
            link: Link {
                name: name.into(),
                a_dev: "a".into(),
                b_dev: "b".into(),
                ab: Dir {
                    delay: std::time::Duration::from_millis(20),
                    loss: 0.02,
                },
                ba: Dir {
                    delay: std::time::Duration::from_millis(20),
                    loss: 0.02,
                },
            },
            ab,
            ba,
        };
        let good = || {
            link(
                "h",
                lane((5000, 100), (5000, 95)),
                lane((5000, 104), (5000, 98)),
            )
        };
        let r = |links: Vec<LinkStats>| Results {
            table: table(&[
                transfer(0.02, 4, Transport::Backtap, 0, 1.0),
                transfer(0.02, 4, Transport::Tcp, 0, 1.0),
            ]),
            links: vec![LossLinks { loss: 0.02, links }],
            ..Results::default()
        };
        let plan = Plan::new(PathBuf::from("/x"), true);
        // Three lossy hops and a clean one, which is not judged.
        let clean = link("clean", lane((10, 0), (10, 0)), lane((10, 0), (10, 0)));
        let c = claims(&plan, &r(vec![good(), good(), good(), clean.clone()]));
        let loss = c
            .iter()
            .find(|c| c.claim.starts_with("at p = 2 %"))
            .unwrap();
        assert_eq!(loss.checks.len(), 6);
        assert_eq!(loss.verdict, hopwise_experiment::Verdict::Holds, "{loss:?}");
        // TCP losing 4 % on one hop: differs.
        let bad = link(
            "h",
            lane((5000, 100), (5000, 200)),
            lane((5000, 100), (5000, 200)),
        );
        let c = claims(&plan, &r(vec![good(), bad, good(), clean]));
        let loss = c
            .iter()
            .find(|c| c.claim.starts_with("at p = 2 %"))
            .unwrap();
        assert_eq!(loss.verdict, hopwise_experiment::Verdict::Differs);
    }

    #[test]
    fn outputs_write_the_table_transfers_links_and_the_figure() {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-hops-out-{}", std::process::id()));
        let plan = Plan::new(PathBuf::from("/x"), true);
        let t = vec![
            transfer(0.0, 4_000_000, Transport::Backtap, 0, 2.0),
            transfer(0.0, 4_000_000, Transport::Tcp, 0, 4.0),
            transfer(0.02, 4_000_000, Transport::Backtap, 0, 0.0),
            transfer(0.02, 4_000_000, Transport::Tcp, 0, 0.3),
        ];
        let r = Results {
            table: table(&t),
            transfers: t,
            ..Results::default()
        };
        let mut out = Outputs::new(&dir);
        LabHops.outputs(&plan, &r, &mut out).unwrap();
        assert_eq!(
            out.files(),
            [
                "hops.svg",
                "table.csv",
                "transfers.csv",
                "links.csv",
                "cpu.csv"
            ]
        );
        let table = std::fs::read_to_string(dir.join("table.csv")).unwrap();
        assert!(
            table.starts_with("loss,size,runs,backtap_median_mbs"),
            "{table}"
        );
        assert_eq!(table.lines().count(), 3);
        let svg = std::fs::read_to_string(dir.join("hops.svg")).unwrap();
        for s in ["BackTap, 4 MB", "kernel TCP, 4 MB"] {
            assert!(svg.contains(s), "{s}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod wan_tests {
    use super::run::{spec, HOSTS};
    use super::*;

    #[test]
    fn the_wan_is_a_chain_of_three_lossy_hops_and_a_clean_one_with_routes() {
        let s = spec(0.02);
        s.check().unwrap();
        assert_eq!(s.hosts, HOSTS);
        assert_eq!(s.links.len(), 4);
        for (i, l) in s.links.iter().enumerate() {
            assert_eq!((l.a, l.b), (i, i + 1), "a chain");
            let lossy = i < LOSSY_HOPS;
            assert_eq!(l.loss, if lossy { 0.02 } else { 0.0 });
            assert_eq!(
                l.rtt.as_secs_f64() * 1e3,
                if lossy { HOP_RTT_MS } else { 0.0 }
            );
        }
        for k in ["net.ipv4.tcp_sack=1", "net.ipv4.tcp_no_metrics_save=1"] {
            assert!(s.sysctls.contains(&k.to_string()), "{k}");
        }
        assert_eq!(s.initcwnd, None, "Linux's default initial window");
        // relay2 reaches relay1's address on the client's link (where the
        // proxy and the directory name it) through relay1.
        assert!(s.routes.iter().any(|r| (r.host, r.to, r.via) == (2, 0, 1)));
    }
}
