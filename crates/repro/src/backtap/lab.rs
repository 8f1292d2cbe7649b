//! The daemon in the lab: a BackTap circuit of three `hopwise relay`
//! processes over real UDP, against kernel TCP, at one shaped bottleneck
//! (seed 002 §3–4 on real sockets).
//!
//! Five namespaces on one switch ([`hopwise_lab::overlay`]); the switch port
//! towards `relay1` is the bottleneck (HTB at `rate`, a `bfifo` of
//! `buffer`). Three cases, each in a fresh overlay:
//!
//! 1. **kernel TCP**: a download from `server` to a client in `relay1`'s
//!    namespace, straight across the bottleneck (`--cc`, default cubic);
//! 2. **BackTap**: a download from `server` through `hopwise proxy` (SOCKS5,
//!    in `client`) and the circuit relay1 → relay2 → relay3 (the exit): the
//!    cells from relay2 to relay1 cross the bottleneck;
//! 3. **both at once**: the two downloads share the bottleneck.
//!
//! Goodput comes from the downloading clients in 100 ms bins, and the
//! bottleneck's backlog and drops from `tc -s -j` every 100 ms. The paper's
//! claims checked here: a delay-based hop keeps the bottleneck's queue short
//! while using its capacity (§3.2), and it is "over-friendly" to a
//! competing loss-based TCP (§4, Fig. 6b–c).
//!
//! [`LabBacktap`] runs it under the experiment driver: its plan is the
//! command's [`Options`], each finished case is checkpointed, and the
//! claims are judged on the one run of each case (exact values: real time
//! gives one sample per case).

use crate::backtap::common::{round_to, PAPER};
use anyhow::{Context, Result};
use hopwise_experiment::stats::jain;
use hopwise_experiment::{Claim, Ctx, Outputs, Progress, Reproduction};
use hopwise_lab::overlay::{self, Overlay, OverlayNames, OverlaySpec, CLIENT, SERVER, SOCKS_PORT};
use hopwise_lab::topology::{self, Buffer};
use hopwise_lab::traffic::{goodput_bps, join_all, spawn_client, spawn_server, Clock, BIN_S};
use hopwise_net::testbed::{write_lab, LabOptions};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

const TCP_PORT: u16 = 5001;
const CIRCUIT_PORT: u16 = 5002;
/// Host of the kernel-TCP download's client: behind the bottleneck port.
const RELAY1: usize = 1;
/// When the downloads start, and how long a client may retry while the
/// proxy builds its circuit (at most the case's length).
const START_S: f64 = 1.0;
const SETUP_S: f64 = 20.0;
/// Seconds after the start that the measurement skips.
pub const WARM_S: f64 = 5.0;

/// What to run: the plan of [`LabBacktap`] (the output directory is the
/// driver's).
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// The `hopwise` executable that runs the relays and the proxy.
    pub exe: PathBuf,
    /// Seconds per case.
    pub secs: u64,
    pub rate_bps: u64,
    pub buffer: Buffer,
    /// Congestion control of the server's sockets: the kernel-TCP download
    /// and the exit's connection to the server.
    pub cc: String,
    /// Circuits, each built by its own `hopwise proxy` over the same three
    /// relays and carrying one download.
    pub circuits: usize,
}

impl Options {
    /// The options' own errors (not the machine's), named by their flags;
    /// `run` checks them too, so a caller may check before printing.
    pub fn check(&self) -> Result<()> {
        hopwise_lab::traffic::check_cc_and_secs(&self.cc, self.secs, WARM_S)?;
        anyhow::ensure!(
            (1..=50).contains(&self.circuits),
            "--circuits {}: 1 to 50 (one proxy process each)",
            self.circuits
        );
        anyhow::ensure!(
            self.exe.is_file(),
            "{}: not the hopwise executable (it runs the relays and the proxy)",
            self.exe.display()
        );
        Ok(())
    }

    /// Seconds per case: 30, or 15 with `--quick`.
    pub fn secs_for(quick: bool) -> u64 {
        if quick {
            15
        } else {
            30
        }
    }
    pub fn new(exe: PathBuf) -> Options {
        Options {
            exe,
            secs: Options::secs_for(false),
            rate_bps: 10_000_000,
            buffer: Buffer::Bytes(250_000),
            cc: "cubic".into(),
            circuits: 1,
        }
    }
}

/// One case's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub case: String,
    /// Goodput of the kernel-TCP download, bit/s (None when it did not run).
    pub tcp_bps: Option<f64>,
    /// Goodput through the circuits, summed.
    pub backtap_bps: Option<f64>,
    /// Per circuit.
    pub circuits_bps: Vec<f64>,
    /// Jain's index over the circuits' goodputs (two or more circuits).
    pub jain_circuits: Option<f64>,
    /// The bottleneck's backlog over the measured window, bytes.
    pub queue_mean_bytes: f64,
    pub queue_p50_bytes: f64,
    pub queue_p95_bytes: f64,
    /// The mean backlog as queueing delay at the link rate, ms.
    pub queue_mean_delay_ms: f64,
    /// Bytes the bottleneck sent (Ethernet frames, as HTB counts them) ÷
    /// what its rate allows, over the measured window.
    #[serde(rename = "utilization")]
    pub utilisation: f64,
    /// Mean size of the frames the bottleneck sent (with the Ethernet header).
    pub mean_frame_bytes: f64,
    /// Packets the buffer dropped during the case.
    pub drops: u64,
    pub queue_samples: usize,
}

/// What the cases measured (summary.json's `kernel`, `warmup_s` and
/// `cases`, beside the plan).
#[derive(Debug, Default, Serialize)]
pub struct Results {
    /// The kernel's release.
    pub kernel: String,
    /// Seconds after the start that the measurement skips.
    pub warmup_s: f64,
    /// The cases finished, in [`CASES`] order.
    pub cases: Vec<CaseResult>,
    /// Their goodput bins and queue samples, for the CSVs and figures.
    #[serde(skip)]
    pub series: Vec<Series2>,
}

/// `hopwise lab backtap`: the cases of [`CASES`] with the plan's options.
pub struct LabBacktap {
    /// The `hopwise` executable (the default plan's).
    pub exe: PathBuf,
}

/// (name, kernel TCP download, circuit download).
pub const CASES: [(&str, bool, bool); 3] = [
    ("kernel TCP", true, false),
    ("BackTap circuit", false, true),
    ("both", true, true),
];

/// Per-case series: goodput bins of (tcp, circuit) and queue samples (t, bytes).
pub type Series2 = (Option<Vec<u64>>, Option<Vec<u64>>, Vec<(f64, u64)>);

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// A case's name in file names: `BackTap circuit` → `backtap-circuit`.
fn case_slug(name: &str) -> String {
    name.to_lowercase().replace(' ', "-")
}

/// The arguments of `hopwise relay` or `hopwise proxy` (`cmd`) with the
/// config file `config`, that stops with the lab even if the lab is
/// killed outright.
pub(crate) fn daemon_args(cmd: &str, config: &Path) -> Vec<String> {
    vec![
        cmd.into(),
        "--config".into(),
        config.display().to_string(),
        "--exit-with-parent".into(),
    ]
}

/// A proxy's config file as `write_lab` wrote it, to copy with another
/// SOCKS5 address: one proxy process, hence one circuit, per copy.
pub(crate) struct ProxyTemplate {
    text: String,
    line: String,
}

impl ProxyTemplate {
    /// Reads `path`, which must have the line `socks = "SOCKS"`.
    pub(crate) fn read(path: &Path, socks: SocketAddr) -> Result<ProxyTemplate> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let line = format!("socks = \"{socks}\"");
        anyhow::ensure!(
            text.contains(&line),
            "{}: no line `{line}` to give each proxy its own port",
            path.display()
        );
        Ok(ProxyTemplate { text, line })
    }

    /// Writes the copy with SOCKS5 address `socks` to `path`; returns `path`.
    pub(crate) fn write(&self, path: &Path, socks: SocketAddr) -> Result<PathBuf> {
        std::fs::write(
            path,
            self.text
                .replace(&self.line, &format!("socks = \"{socks}\"")),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path.to_path_buf())
    }
}

fn run_case(
    opts: &Options,
    out: &Path,
    (name, tcp, circuit): (&str, bool, bool),
    progress: &dyn Progress,
) -> Result<(CaseResult, Series2)> {
    let spec = OverlaySpec {
        bottleneck_host: RELAY1,
        rate_bps: opts.rate_bps,
        buffer: opts.buffer,
    };
    let mut ov = Overlay::build(&OverlayNames::new_instance(), &spec)?;
    let stop = START_S + opts.secs as f64;
    let end = stop + 0.5;
    let setup = SETUP_S.min(opts.secs as f64);
    let server = overlay::addr(SERVER);
    if circuit {
        let dir = out.join("overlay");
        let mut o = LabOptions::new(&dir);
        o.socks = SocketAddr::from((overlay::addr(CLIENT), SOCKS_PORT));
        o.relay_addresses = Some([0, 1, 2].map(overlay::relay_addr));
        o.exit_policy = vec!["accept 10.202.0.0/24:*".into()];
        let files = write_lab(&o).map_err(|e| anyhow::anyhow!("{e}"))?;
        for (i, f) in files.relays.iter().enumerate() {
            let log = dir.join(format!("relay{}-{}.log", i + 1, case_slug(name)));
            ov.start(i + 1, &opts.exe, &daemon_args("relay", f), &log)?;
        }
        // One proxy, hence one circuit, per download: the same file but
        // for its SOCKS5 port.
        let proxy = ProxyTemplate::read(&files.proxy, o.socks)?;
        // Only the per-circuit copies are used.
        let _ = std::fs::remove_file(&files.proxy);
        for k in 0..opts.circuits {
            let socks = SocketAddr::from((overlay::addr(CLIENT), SOCKS_PORT + k as u16));
            let f = proxy.write(&dir.join(format!("proxy{}.toml", k + 1)), socks)?;
            ov.start(
                CLIENT,
                &opts.exe,
                &daemon_args("proxy", &f),
                &dir.join(format!("proxy{}-{}.log", k + 1, case_slug(name))),
            )?;
        }
    }
    // The clock starts once the overlay is up, so all cases share a time base.
    let clock = Clock::start();
    // Every download: (name, server port, the client's host, its SOCKS5 proxy).
    // The kernel-TCP one comes first; the results are read in this order.
    let mut downloads: Vec<(String, u16, usize, Option<SocketAddr>)> = Vec::new();
    if tcp {
        downloads.push(("kernel TCP".into(), TCP_PORT, RELAY1, None));
    }
    for k in 0..if circuit { opts.circuits } else { 0 } {
        let socks = SocketAddr::from((overlay::addr(CLIENT), SOCKS_PORT + k as u16));
        let what = format!("BackTap circuit {}", k + 1);
        downloads.push((what, CIRCUIT_PORT + k as u16, CLIENT, Some(socks)));
    }
    let mut servers = Vec::new();
    let mut clients = Vec::new();
    for (what, port, host, socks) in downloads {
        servers.push(spawn_server(
            ov.hosts[SERVER].open()?,
            server,
            port,
            opts.cc.clone(),
            clock,
            stop,
            what.clone(),
        )?);
        clients.push(spawn_client(
            ov.hosts[host].open()?,
            SocketAddr::from((server, port)),
            socks,
            clock,
            (START_S, setup, end),
            what,
        )?);
    }
    progress.start(&format!("{name} (real time)"), end.ceil() as u64);
    // (time, backlog bytes, bytes sent so far, drops so far, packets sent so far).
    let mut samples: Vec<(f64, u64, u64, u64, u64)> = Vec::new();
    let mut t = 0.0;
    let mut ticked = 0u64;
    let mut daemon_error = None;
    while t < end {
        clock.sleep_until(t);
        let now = clock.now_s();
        let b = ov.bottleneck()?;
        samples.push((now, b.backlog, b.bytes, b.drops, b.packets));
        if let Err(e) = ov.check_daemons() {
            // A relay or the proxy died: the case cannot succeed.
            daemon_error = Some(e);
            break;
        }
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
        }
        t += BIN_S;
    }
    progress.finish();
    if let Some(e) = daemon_error {
        // Fail now; the traffic threads end on their own at the stop time.
        drop(ov);
        return Err(e.context(format!(
            "case {name:?}: a daemon died (logs in {})",
            out.join("overlay").display()
        )));
    }
    let mut errors: Vec<String> = Vec::new();
    join_all(servers, "server", &mut errors);
    let bins = join_all(clients, "client", &mut errors);
    drop(ov);
    if !errors.is_empty() {
        anyhow::bail!(
            "case {name:?} failed:\n  {}{}",
            errors.join("\n  "),
            if circuit {
                format!(
                    "\n(the daemons' logs are in {})",
                    out.join("overlay").display()
                )
            } else {
                String::new()
            }
        );
    }
    let (t0, t1) = (START_S + WARM_S, stop);
    let mut bins = bins.into_iter();
    let tcp_bins = if tcp { bins.next() } else { None };
    let per_circuit: Vec<Vec<u64>> = bins.collect();
    let circuits_bps: Vec<f64> = per_circuit.iter().map(|b| goodput_bps(b, t0, t1)).collect();
    // The circuits' bins summed, for the plots.
    let circuit_bins = (!per_circuit.is_empty()).then(|| {
        let len = per_circuit.iter().map(Vec::len).max().unwrap_or(0);
        (0..len)
            .map(|i| {
                per_circuit
                    .iter()
                    .map(|b| b.get(i).copied().unwrap_or(0))
                    .sum()
            })
            .collect::<Vec<u64>>()
    });
    let window: Vec<&(f64, u64, u64, u64, u64)> =
        samples.iter().filter(|s| s.0 >= t0 && s.0 < t1).collect();
    let mut q: Vec<u64> = window.iter().map(|s| s.1).collect();
    let n = q.len();
    // Utilisation from the bytes the buffer released over the window.
    let utilisation = match (window.first(), window.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => {
            b.2.saturating_sub(a.2) as f64 * 8.0 / (opts.rate_bps as f64 * (b.0 - a.0))
        }
        _ => 0.0,
    };
    let mean_frame_bytes = match (window.first(), window.last()) {
        (Some(a), Some(b)) if b.4 > a.4 => b.2.saturating_sub(a.2) as f64 / (b.4 - a.4) as f64,
        _ => 0.0,
    };
    let drops = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => b.3.saturating_sub(a.3),
        _ => 0,
    };
    let mean = q.iter().sum::<u64>() as f64 / n.max(1) as f64;
    q.sort_unstable();
    let result = CaseResult {
        case: name.into(),
        tcp_bps: tcp_bins.as_ref().map(|b| goodput_bps(b, t0, t1)),
        backtap_bps: circuit.then(|| circuits_bps.iter().sum()),
        jain_circuits: if circuits_bps.len() > 1 {
            Some(jain(&circuits_bps)).filter(|j| j.is_finite())
        } else {
            None
        },
        circuits_bps,
        queue_mean_bytes: mean,
        queue_p50_bytes: percentile(&q, 0.5),
        queue_p95_bytes: percentile(&q, 0.95),
        queue_mean_delay_ms: mean * 8.0 / opts.rate_bps as f64 * 1e3,
        utilisation,
        mean_frame_bytes,
        drops,
        queue_samples: n,
    };
    let queue = samples.iter().map(|s| (s.0, s.1)).collect();
    Ok((result, (tcp_bins, circuit_bins, queue)))
}

fn mbit(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.2} Mbit/s", x / 1e6))
}

/// A row of `goodput.csv`: one 100 ms bin of one download.
#[derive(Clone, Debug, Default, Serialize)]
struct GoodputRow<'a> {
    case: &'a str,
    flow: &'a str,
    time_s: f64,
    bps: f64,
}

/// A row of `queue.csv`: one sample of the bottleneck's backlog.
#[derive(Clone, Debug, Default, Serialize)]
struct QueueRow<'a> {
    case: &'a str,
    time_s: f64,
    bytes: u64,
}

/// A row of `cases.csv`, at the precision it always had.
#[derive(Clone, Debug, Default, Serialize)]
struct CaseRow<'a> {
    case: &'a str,
    tcp_bps: Option<f64>,
    backtap_bps: Option<f64>,
    queue_mean_bytes: f64,
    queue_p95_bytes: f64,
    queue_mean_delay_ms: f64,
    utilization: f64,
    drops: u64,
    jain_circuits: Option<f64>,
}

impl Reproduction for LabBacktap {
    type Plan = Options;
    type Results = Results;
    const NAME: &'static str = "lab-backtap";
    const ABOUT: &'static str = "seed 002 on real UDP: BackTap circuits (hopwise relay) against kernel TCP at one bottleneck";
    const PAPER: &'static str = PAPER;
    const WALL: &'static str = "3 × 31.5 s of real time, 3 × 16.5 s quick";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Options {
        Options {
            secs: Options::secs_for(quick),
            ..Options::new(self.exe.clone())
        }
    }

    fn run(&self, opts: &Options, ctx: &Ctx<'_, Results>) -> Result<Results> {
        topology::require()?;
        opts.check()?;
        let mut r = Results {
            kernel: hopwise_lab::kstats::kernel_release(),
            warmup_s: WARM_S,
            ..Results::default()
        };
        for c in CASES {
            let (case, s) = run_case(opts, ctx.out, c, ctx.progress)?;
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
        outputs(opts, r, o)
    }

    fn facts(&self, opts: &Options) -> Vec<String> {
        vec![format!(
            "hopwise relay ×3 and hopwise proxy over UDP, kernel TCP ({}), in network namespaces, Linux {}; {} Mbit/s bottleneck, {} buffer; {} s per case",
            opts.cc,
            hopwise_lab::kstats::kernel_release(),
            opts.rate_bps as f64 / 1e6,
            opts.buffer,
            opts.secs,
        )]
    }

    fn title(&self) -> String {
        "hopwise lab backtap".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

/// The claims on the cases finished so far (all of them once the three
/// have run).
fn claims(opts: &Options, cases: &[CaseResult]) -> Vec<Claim> {
    let (Some(tcp), Some(bt)) = (cases.first(), cases.get(1)) else {
        return Vec::new();
    };
    let rate = opts.rate_bps as f64;
    let n = opts.circuits;
    let circuits = if n == 1 {
        "a BackTap circuit".to_string()
    } else {
        format!("{n} BackTap circuits")
    };
    let mut claims = vec![
        Claim::new(
            "§3.2 (real UDP)",
            format!(
                "{circuits} {} the bottleneck's capacity",
                if n == 1 { "uses" } else { "use" }
            ),
        )
        .measured(format!(
            "link at {:.1} % of its rate, goodput {} of {:.0} Mbit/s; kernel TCP ({}) alone: {:.1} %, {}",
            bt.utilisation * 100.0,
            mbit(bt.backtap_bps),
            rate / 1e6,
            opts.cc,
            tcp.utilisation * 100.0,
            mbit(tcp.tcp_bps)
        ))
        .at_least("bytes the link carries / its rate", bt.utilisation, 0.8),
        Claim::new(
            "§3.2 (real UDP)",
            "delay-based hops keep the bottleneck's queue short, far shorter than kernel TCP's",
        )
        .measured(format!(
            "mean {:.1} kB ({:.1} ms, p95 {:.1} kB) against kernel TCP's {:.1} kB ({:.1} ms) in a {} buffer",
            bt.queue_mean_bytes / 1e3,
            bt.queue_mean_delay_ms,
            bt.queue_p95_bytes / 1e3,
            tcp.queue_mean_bytes / 1e3,
            tcp.queue_mean_delay_ms,
            opts.buffer
        ))
        .at_most(
            "BackTap's mean queue (bytes), against a quarter of kernel TCP's",
            bt.queue_mean_bytes,
            tcp.queue_mean_bytes / 4.0,
        ),
    ];
    if let Some(both) = cases.get(2) {
        let share = match (both.backtap_bps, both.tcp_bps) {
            (Some(b), Some(t)) if b + t > 0.0 => Some(b / (b + t)),
            _ => None,
        };
        let sharing = format!(
            "{} {} and kernel TCP {}: BackTap's share {}; queue {:.1} kB, {} drops",
            if n == 1 { "circuit" } else { "circuits" },
            mbit(both.backtap_bps),
            mbit(both.tcp_bps),
            share.map_or("-".into(), |s| format!("{:.2} %", 100.0 * s)),
            both.queue_mean_bytes / 1e3,
            both.drops
        );
        // The paper finds few circuits over-friendly and many competing well,
        // so the share is judged for one circuit only.
        claims.push(if n == 1 {
            Claim::new(
                "§4, Fig. 6b–c (real UDP)",
                "one BackTap circuit is over-friendly to a competing loss-based TCP download",
            )
            .measured(sharing)
            .below(
                "BackTap's share of the goodput",
                share.unwrap_or(f64::NAN),
                0.5,
            )
        } else {
            Claim::info(
                "§4, Fig. 6b–c (real UDP)",
                "several circuits against one loss-based TCP download: the paper finds more circuits take a larger share",
                sharing,
            )
        });
        if n > 1 {
            let list = |r: &CaseResult| {
                r.circuits_bps
                    .iter()
                    .map(|b| format!("{:.2}", b / 1e6))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            claims.push(Claim::info(
                "§4, Fig. 6a (real UDP)",
                "round-robin scheduling and per-hop control share the bottleneck evenly between circuits (Jain's index)",
                format!(
                    "alone: Jain {} ({} Mbit/s); beside TCP: Jain {} ({} Mbit/s)",
                    bt.jain_circuits.map_or("-".into(), |j| format!("{j:.3}")),
                    list(bt),
                    both.jain_circuits.map_or("-".into(), |j| format!("{j:.3}")),
                    list(both)
                ),
            ));
        }
    }
    let goodput_share = |r: &CaseResult, g: Option<f64>| {
        g.filter(|_| r.utilisation > 0.0).map_or("-".into(), |g| {
            format!(
                "{:.0} % ({:.0} B frames)",
                g / (r.utilisation * rate) * 100.0,
                r.mean_frame_bytes
            )
        })
    };
    claims.push(Claim::info(
        "overhead",
        "goodput as a share of the bytes the bottleneck sent",
        format!(
            "kernel TCP {}, BackTap {}",
            goodput_share(tcp, tcp.tcp_bps),
            goodput_share(bt, bt.backtap_bps)
        ),
    ));
    if let Some(both) = cases.get(2) {
        claims.push(Claim::info(
            "drops",
            "packets the bottleneck buffer dropped per case",
            format!(
                "kernel TCP {}, BackTap {}, both {}",
                tcp.drops, bt.drops, both.drops
            ),
        ));
    }
    claims
}

/// `goodput.csv`, `queue.csv`, `cases.csv`, `backtap.svg` (goodput and
/// queue per case) and `delay.svg`, for the cases finished.
fn outputs(opts: &Options, r: &Results, o: &mut Outputs) -> Result<()> {
    let rate = opts.rate_bps as f64;
    let n = opts.circuits;
    let mut rows = Vec::new();
    let mut qrows = Vec::new();
    for (c, (tb, cb, q)) in CASES.iter().zip(&r.series) {
        let bt_flow = if n == 1 {
            "BackTap circuit"
        } else {
            "BackTap, all circuits"
        };
        for (flow, b) in [("kernel TCP", tb), (bt_flow, cb)] {
            if let Some(b) = b {
                for (i, &v) in b.iter().enumerate() {
                    rows.push(GoodputRow {
                        case: c.0,
                        flow,
                        time_s: round_to(i as f64 * BIN_S, 1),
                        bps: round_to(v as f64 * 8.0 / BIN_S, 0),
                    });
                }
            }
        }
        for &(t, b) in q {
            qrows.push(QueueRow {
                case: c.0,
                time_s: round_to(t, 3),
                bytes: b,
            });
        }
    }
    let cases: Vec<CaseRow> = r
        .cases
        .iter()
        .map(|c| CaseRow {
            case: &c.case,
            tcp_bps: c.tcp_bps.map(|v| round_to(v, 0)),
            backtap_bps: c.backtap_bps.map(|v| round_to(v, 0)),
            queue_mean_bytes: round_to(c.queue_mean_bytes, 0),
            queue_p95_bytes: round_to(c.queue_p95_bytes, 0),
            queue_mean_delay_ms: round_to(c.queue_mean_delay_ms, 2),
            utilization: round_to(c.utilisation, 4),
            drops: c.drops,
            jain_circuits: c.jain_circuits.map(|j| round_to(j, 4)),
        })
        .collect();

    // 1 s goodput per case, and the queue.
    let per_s = |b: &[u64]| -> Vec<(f64, f64)> {
        b.chunks((1.0 / BIN_S).round() as usize)
            .enumerate()
            .map(|(i, c)| (i as f64, c.iter().sum::<u64>() as f64 * 8.0 / 1e6))
            .collect()
    };
    let end = START_S + opts.secs as f64;
    let mut fig = Figure::new(
        format!(
            "BackTap relays over UDP and kernel TCP ({}, Linux {}) at a {:.0} Mbit/s bottleneck, {} buffer",
            opts.cc,
            r.kernel,
            rate / 1e6,
            opts.buffer
        ),
        2,
    );
    for (c, (tb, cb, q)) in CASES.iter().zip(&r.series) {
        let mut g = Chart::new(format!("{}: goodput", c.0))
            .x_label("time (s)")
            .y_label("Mbit/s")
            .x_range(0.0, end)
            .y_range(0.0, rate / 1e6 * 1.1);
        if let Some(b) = tb {
            g.push_series(Series::line("kernel TCP", per_s(b)));
        }
        if let Some(b) = cb {
            g.push_series(Series::line(
                if n == 1 {
                    "BackTap circuit".to_string()
                } else {
                    format!("BackTap, {n} circuits")
                },
                per_s(b),
            ));
        }
        fig.push_panel(g);
        fig.push_panel(
            Chart::new(format!("{}: bottleneck queue", c.0))
                .x_label("time (s)")
                .y_label("kB")
                .x_range(0.0, end)
                .series(Series::line(
                    "backlog",
                    q.iter().map(|&(t, b)| (t, b as f64 / 1e3)).collect(),
                )),
        );
    }
    o.svg("backtap.svg", &fig.panel_size(560, 300))?;
    let bars = BarChart::new("Mean queueing delay at the bottleneck")
        .y_label("ms")
        .x_label("case")
        .group(
            "mean",
            r.cases
                .iter()
                .map(|c| (c.case.clone(), c.queue_mean_delay_ms))
                .collect(),
        );
    o.svg("delay.svg", &bars)?;
    o.csv("cases.csv", &cases)?;
    o.csv("goodput.csv", &rows)?;
    o.csv("queue.csv", &qrows)?;
    o.data(&["backtap.svg"], &["goodput.csv", "queue.csv"]);
    o.data(&["delay.svg"], &["cases.csv"]);
    Ok(())
}
