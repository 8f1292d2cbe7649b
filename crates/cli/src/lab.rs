//! `hopwise lab`: kernel TCP in network namespaces (crates/lab).

use anyhow::{bail, Result};
use clap::Subcommand;
use hopwise_experiment::{Opts, Reproduction};
use hopwise_lab::Buffer;
use hopwise_repro::backtap::hops;
use hopwise_repro::backtap::lab as backtap;
use hopwise_repro::kernel_check::{self as cc_check, LabCcCheck};
use hopwise_repro::ledbat::lab as utp_lab;
use hopwise_repro::otcp::lab as otcp;
use hopwise_repro::overlay_ack::lab as overlay_ack;
use hopwise_repro::pendulum::lab_acks::{self as acks, LabAckCompression};
use hopwise_repro::pendulum::lab_fig1::{self as pendulum, LabPendulum};
use hopwise_repro::pendulum::lab_fig10::{self as pendulum_fig10, LabPendulumFig10};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum LabCmd {
    /// Check that this machine can run the lab: root, iproute2 (ip, tc, ss), namespaces, veth, GSO off, bridge, packet sockets, HTB and FIFO qdiscs, the u32 classifier.
    Check,
    /// Seed 004's Fig. 1 on kernel TCP: a download on a 2.4 Mbit/s / 196 kbit/s link while uploads run,
    /// beside the simulator and the model (real time: 100 s, 40 s with --quick; needs root).
    Pendulum {
        /// The 40 s timeline instead of the paper's 100 s.
        #[arg(long)]
        quick: bool,
        /// Output directory.
        #[arg(long, default_value = "out/lab-pendulum")]
        out: PathBuf,
        /// The senders' congestion control (TCP_CONGESTION per socket), e.g. reno, cubic, bbr; the simulator comparison runs only with reno.
        #[arg(long, default_value = "reno")]
        cc: String,
        /// The router's downlink buffer: bytes (30000B, 30kB) or packets (50pkt).
        #[arg(long, default_value = "30000B", value_parser = parse_buffer)]
        down_buffer: Buffer,
        /// The router's uplink buffer.
        #[arg(long, default_value = "30000B", value_parser = parse_buffer)]
        up_buffer: Buffer,
        /// Simulator runs per setting for the comparison (0: no simulator).
        #[arg(long, default_value_t = 3)]
        sim_seeds: u32,
    },
    /// Seed 004's Fig. 10 on kernel TCP: the throughput ratio r of a download and an upload against the uplink
    /// buffer, with the bottleneck's propagation delay from the lab's delay line, beside Eq. 11 and the simulator
    /// (real time: 4 × 300 s, 60 s with --quick; needs root).
    PendulumFig10 {
        /// One point (B_u = 45 kB) for 60 s with 2 simulator seeds (no verdict below 300 s).
        #[arg(long)]
        quick: bool,
        /// One-way propagation delay of the bottleneck (T_p), e.g. 100ms or 0.02s (default 100ms; verdicts only at
        /// 100ms, as in the reproduction).
        #[arg(long, value_parser = parse_ms)]
        tp: Option<u64>,
        /// The router's downlink buffer, in bytes, e.g. 120000B or 60kB (default 120000B).
        #[arg(long, value_parser = parse_bytes_buffer)]
        down_buffer: Option<u64>,
        /// Uplink buffers, comma-separated (default 15kB,30kB,45kB,60kB; 45kB with --quick).
        #[arg(long, value_delimiter = ',', value_parser = parse_bytes_buffer)]
        up_buffers: Option<Vec<u64>>,
        /// Real time per point (default 300; 60 with --quick; verdicts need 300).
        #[arg(long)]
        secs: Option<u64>,
        /// Simulator runs per point and setting (0: no simulator; default 5, 2 with --quick).
        #[arg(long)]
        sim_seeds: Option<u32>,
        /// The senders' congestion control (TCP_CONGESTION per socket); the simulator comparison runs only with reno.
        #[arg(long, default_value = "reno")]
        cc: String,
        /// Output directory.
        #[arg(long, default_value = "out/lab-pendulum-fig10")]
        out: PathBuf,
    },
    /// Seed 004's Fig. 3 and 4 on kernel TCP: ACK compression on a symmetric 2.4/2.4 Mbit/s link without and
    /// with delayed ACKs, from a packet capture on the router, beside the simulator
    /// (real time: 2 × 61.5 s, 2 × 21.5 s with --quick; needs root).
    AckCompression {
        /// 20 s per case instead of 60 s.
        #[arg(long)]
        quick: bool,
        /// Seconds per case (overrides --quick).
        #[arg(long)]
        secs: Option<u64>,
        /// Output directory.
        #[arg(long, default_value = "out/lab-ack-compression")]
        out: PathBuf,
        /// The senders' congestion control (TCP_CONGESTION per socket); the simulator comparison runs only with reno.
        #[arg(long, default_value = "reno")]
        cc: String,
        /// Skip the simulator's runs of the same cases.
        #[arg(long)]
        no_sim: bool,
    },
    /// Seed 000 on kernel TCP: an overlay node's ACKs stuck behind its own data, ACK prioritisation and one
    /// connection per direction, with hosts A, B and C behind access devices on a 10 Mbit/s switch, beside the
    /// simulator (real time: 6 modes × 150 s, 4 × 60 s with --quick; needs root).
    OverlayAck {
        /// 60 s per mode and the modes plain, ackprio, bidir-ackprio and split-ackprio.
        #[arg(long)]
        quick: bool,
        /// Seconds per mode (the paper's 300 s timeline scaled to it; at least 60; overrides --quick).
        #[arg(long)]
        secs: Option<u64>,
        /// Modes to run, comma-separated: plain, ackprio, ackprio-len64, bidir, bidir-ackprio, split-ackprio
        /// (default: all six; with --quick four).
        #[arg(long, value_parser = parse_modes)]
        modes: Option<ModeList>,
        /// Output directory.
        #[arg(long, default_value = "out/lab-overlay-ack")]
        out: PathBuf,
        /// The hosts' congestion control (TCP_CONGESTION per socket); the simulator comparison runs only with cubic.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Each host's uplink queue in its access device, and each of the two "ACKs first" classes' queues at B: packets (1000pkt, Linux's txqueuelen) or bytes.
        #[arg(long, default_value = "1000pkt", value_parser = parse_buffer)]
        host_queue: Buffer,
        /// Each switch port's buffer (the simulator's calibrated 64000B).
        #[arg(long, default_value = "64000B", value_parser = parse_buffer)]
        switch_buffer: Buffer,
        /// Simulator runs per mode on the same timeline (0: no simulator).
        #[arg(long, default_value_t = 3)]
        sim_runs: u32,
    },
    /// Seed 002 on real UDP: a BackTap circuit of three `hopwise relay` processes and `hopwise proxy`, against
    /// kernel TCP, at one shaped bottleneck in network namespaces: goodput, the bottleneck's queue, sharing
    /// (real time: 3 × 31.5 s, 3 × 16.5 s with --quick; needs root).
    Backtap {
        /// 15 s per case instead of 30 s.
        #[arg(long)]
        quick: bool,
        /// Seconds per case (overrides --quick).
        #[arg(long)]
        secs: Option<u64>,
        /// Output directory (the relays' keys, configs and logs go into DIR/overlay).
        #[arg(long, default_value = "out/lab-backtap")]
        out: PathBuf,
        /// The bottleneck's rate: `10Mbit`, `1.25MB/s`, or bit/s as a plain number.
        #[arg(long, default_value = "10Mbit", value_parser = parse_lab_rate)]
        rate: u64,
        /// The bottleneck's buffer: bytes (250kB) or packets (100pkt).
        #[arg(long, default_value = "250kB", value_parser = parse_buffer)]
        buffer: Buffer,
        /// Congestion control of the server's sockets (the kernel-TCP download, and the exit's connection).
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Circuits (one hopwise proxy and one download each) over the same three relays, 1 to 50.
        #[arg(long, default_value_t = 1)]
        circuits: usize,
    },
    /// Seed 003 on real stacks: hopwise's µTP (`hopwise utp send|recv`) and libtorrent's (interop/libtorrent)
    /// alone and beside one kernel CUBIC flow at a 10 Mbit/s, 100-packet bottleneck with a 25 ms one-way base
    /// delay: utilisation, queueing delay, each flow's share (real time: 4 × 63 s, 4 × 23 s with --quick; needs
    /// root and, for the libtorrent cases, interop/libtorrent/setup.sh's venv).
    Utp {
        /// 20 s per case instead of 60 s.
        #[arg(long)]
        quick: bool,
        /// Seconds per case (overrides --quick).
        #[arg(long)]
        secs: Option<u64>,
        /// Output directory (the processes' logs and JSON summaries go into DIR/logs).
        #[arg(long, default_value = "out/lab-utp")]
        out: PathBuf,
        /// Leave out the libtorrent cases.
        #[arg(long)]
        skip_libtorrent: bool,
        /// Leave out the hopwise cases.
        #[arg(long)]
        skip_hopwise: bool,
        /// The libtorrent venv's python (default: $HOPWISE_LT_PYTHON, else .venv-libtorrent/bin/python).
        #[arg(long)]
        python: Option<PathBuf>,
        /// The competing kernel TCP flow's congestion control.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// The bottleneck's buffer: packets (100pkt, the default) or bytes (250kB).
        #[arg(long, value_parser = parse_buffer)]
        buffer: Option<Buffer>,
    },
    /// hopwise's BitTorrent peer against libtorrent over µTP, both ways, on a clean link and then across the
    /// lab's delay line with a delay and loss each way, beside libtorrent to libtorrent on the same link
    /// (real time: about 2 min for 64 MiB, 1 min with --quick; needs root and interop/libtorrent/setup.sh).
    BtInterop {
        /// 16 MiB instead of 64 MiB.
        #[arg(long)]
        quick: bool,
        /// The torrent's size, e.g. 64MiB (overrides --quick).
        #[arg(long)]
        size: Option<String>,
        /// Round-trip propagation delay of the impaired link (half each way), e.g. 40ms.
        #[arg(long, default_value = "40ms", value_parser = parse_ms)]
        rtt: u64,
        /// Loss per packet each way on the impaired link, as a fraction or a percentage (1%).
        #[arg(long, default_value = "1%")]
        loss: String,
        /// Output directory.
        #[arg(long, default_value = "out/lab-bt-interop")]
        out: PathBuf,
        /// The libtorrent venv's python (default: $HOPWISE_LT_PYTHON, else .venv-libtorrent/bin/python).
        #[arg(long)]
        python: Option<PathBuf>,
    },
    /// Seed 001's Table 1 on kernel TCP: a transfer over the direct path (75.7 ms) and split into 2, 3 and 4
    /// hops through `hopwise otcp relay` processes, over links delayed (and made lossy) in user space, beside
    /// the simulator (real time: about 16 min, 30 s with --quick; needs root).
    Otcp {
        /// One run per path, the window regime only.
        #[arg(long)]
        quick: bool,
        /// Regimes, comma-separated: loss (0.3 % per link), loss-rtt (loss in proportion to the RTT),
        /// window (no loss, small receive buffers) (default: all three; with --quick window).
        #[arg(long, value_parser = parse_regimes)]
        regimes: Option<RegimeList>,
        /// Transfers per path in every regime (default: 3 in window, 20 with loss, where fewer give no
        /// verdict; 1 with --quick).
        #[arg(long)]
        runs: Option<u32>,
        /// Bytes per transfer: the paper's 4MB by default.
        #[arg(long, default_value = "4MB", value_parser = parse_size)]
        size: u64,
        /// Every host's congestion control (its namespace's default); the simulator runs NewReno.
        #[arg(long, default_value = "reno")]
        cc: String,
        /// Simulator transfers per path for the comparison (0: no simulator; default 40, 4 with --quick).
        #[arg(long)]
        sim_seeds: Option<u32>,
        /// Seed of the links' random loss.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output directory (the relays' and forwarders' logs go into DIR/logs).
        #[arg(long, default_value = "out/lab-otcp")]
        out: PathBuf,
    },
    /// BackTap on an equal footing with kernel TCP: a BackTap circuit (three `hopwise relay`s and a fresh `hopwise proxy` per
    /// download) against kernel TCP spliced by `hopwise otcp` relays at the same hosts, over the same three
    /// hops of 40 ms RTT that lose p of the frames each way: downloads through each, side by side, with the
    /// delay line's UDP and TCP losses (real time: quick about 2 min, full several hours; needs root).
    Hops {
        /// p ∈ {0, 2 %}, 4 MB, 1 run, 300 s limit.
        #[arg(long)]
        quick: bool,
        /// Loss per frame on each lossy hop, each way, comma-separated fractions, e.g. 0,0.005,0.01
        /// (default 0,0.005,0.01,0.02,0.05; 0,0.02 with --quick).
        #[arg(long, value_delimiter = ',')]
        loss: Option<Vec<f64>>,
        /// Download sizes, comma-separated, e.g. 20MB,200MB (default 20MB,200MB; 4MB with --quick).
        #[arg(long, value_delimiter = ',', value_parser = parse_size)]
        sizes: Option<Vec<u64>>,
        /// Downloads per transport, size and loss (default 3; 1 with --quick).
        #[arg(long)]
        runs: Option<u32>,
        /// Time a download may take, setup included, e.g. 300s or 10min (default 600s; 300s with --quick);
        /// an unfinished download counts with the bytes it got.
        #[arg(long, value_parser = parse_secs)]
        limit: Option<u64>,
        /// Every host's congestion control.
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// `hopwise otcp --buffer` of the relays and forwarders.
        #[arg(long, default_value = "4MiB", value_parser = parse_size)]
        otcp_buffer: u64,
        /// BackTap's `[limits] circuit_queue` (cells) on the relays and proxies.
        #[arg(long, default_value_t = 4096)]
        circuit_queue: u32,
        /// BackTap's `[limits] stream_window` on the relays and proxies.
        #[arg(long, default_value = "8MiB", value_parser = parse_size)]
        stream_window: u64,
        /// A line for the relays' and proxies' `[transport]` table, e.g. 'startup = "slow-start"' (repeatable).
        #[arg(long = "relay-transport", value_name = "LINE")]
        relay_transport: Vec<String>,
        /// Seed of the links' random loss and the downloads' bodies.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output directory (the daemons' configs and logs go into DIR/hops-pP).
        #[arg(long, default_value = "out/lab-hops")]
        out: PathBuf,
    },
    /// The simulator's congestion controls against the host kernel's, on a 10 Mbit/s, 40 ms dumbbell (HTB bottleneck,
    /// bfifo buffer in BDPs, delay line): `bbr` (a lone BBR flow, 4 BDP), `bbr-cubic` (BBR beside CUBIC, 1 and 4 BDP),
    /// `cubic-buffers` (CUBIC alone, 1 and 4 BDP), `drops` (20 reno flows through 1 BDP, the simulator with each candidate
    /// mechanism toggled). Kernel beside simulator (real time: 60 s per case; 20 s, drops 30 s, with --quick; needs root).
    CcCheck {
        /// Which check: bbr, bbr-cubic, cubic-buffers or drops.
        #[arg(value_parser = cc_check::Check::parse)]
        check: cc_check::Check,
        /// 20 s per case (drops: 30 s) and 3 simulator seeds.
        #[arg(long)]
        quick: bool,
        /// Seconds per case (overrides --quick's).
        #[arg(long)]
        secs: Option<u64>,
        /// Simulator runs per case and variant (default 5, 3 with --quick; 0: no simulator).
        #[arg(long)]
        sim_seeds: Option<u32>,
        /// Output directory (default out/lab-cc-check-<check>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Turn the kernel hosts' delayed ACKs off (`quickack 1` on their routes); the simulator keeps its defaults.
        #[arg(long)]
        kernel_quickack: bool,
    },
    /// Delete namespaces that a killed or interrupted lab run left behind (hwlab-PID-*, for PIDs no longer running), killing the processes still inside them.
    Clean,
}

/// A rate with a unit (`10Mbit`), or a plain number of bit/s (`10000000`).
fn parse_lab_rate(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(n);
    }
    hopwise_proto::units::parse_rate(s)
        .map(|r| r.bps())
        .map_err(|e| e.to_string())
}

/// `--modes`: the lab's overlay-ack modes, in the order given.
#[derive(Clone, Debug)]
pub struct ModeList(Vec<hopwise_repro::overlay_ack::Mode>);

fn parse_modes(s: &str) -> Result<ModeList, String> {
    overlay_ack::parse_modes(s)
        .map(ModeList)
        .map_err(|e| format!("{e:#}"))
}

/// `--regimes`: the oTCP regimes, in the order given.
#[derive(Clone, Debug)]
pub struct RegimeList(Vec<hopwise_repro::otcp::Regime>);

fn parse_regimes(s: &str) -> Result<RegimeList, String> {
    use hopwise_repro::otcp::Regime;
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let r = Regime::ALL
            .into_iter()
            .find(|r| r.name() == part)
            .ok_or_else(|| format!("unknown regime {part:?} (loss, loss-rtt or window)"))?;
        if out.contains(&r) {
            return Err(format!("regime {part:?} given twice"));
        }
        out.push(r);
    }
    Ok(RegimeList(out))
}

/// Bytes with a unit (`4MB`, `512KiB`) or a plain number.
fn parse_size(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.trim().parse::<u64>() {
        return Ok(n);
    }
    hopwise_proto::units::parse_bytes(s)
        .map(|b| b.get())
        .map_err(|e| e.to_string())
}

fn parse_buffer(s: &str) -> Result<Buffer, String> {
    Buffer::parse(s).map_err(|e| format!("{e:#}"))
}

/// A buffer counted in bytes (Fig. 10's axes are bytes).
fn parse_bytes_buffer(s: &str) -> Result<u64, String> {
    match parse_buffer(s)? {
        Buffer::Bytes(b) => Ok(b),
        Buffer::Packets(_) => Err(format!("{s:?}: give this buffer in bytes (45000B, 45kB)")),
    }
}

/// A duration with a unit (`300s`, `10min`), as whole seconds.
fn parse_secs(s: &str) -> Result<u64, String> {
    let d = hopwise_proto::units::parse_duration(s).map_err(|e| e.to_string())?;
    if d.as_nanos() % 1_000_000_000 != 0 {
        return Err(format!("{s:?}: whole seconds only"));
    }
    Ok(d.as_nanos() / 1_000_000_000)
}

/// A duration with a unit (`100ms`, `0.1s`), as whole milliseconds.
fn parse_ms(s: &str) -> Result<u64, String> {
    let d = hopwise_proto::units::parse_duration(s).map_err(|e| e.to_string())?;
    if d.as_nanos() % 1_000_000 != 0 {
        return Err(format!("{s:?}: whole milliseconds only"));
    }
    Ok(d.as_nanos() / 1_000_000)
}

/// Runs a lab experiment through the toolkit's driver under a progress bar
/// counting `unit`, then prints its claims. One job: a lab experiment runs
/// one thing at a time, so that nothing competes with the kernel's
/// real-time traffic.
fn drive<R: Reproduction>(
    exp: &R,
    plan: &R::Plan,
    quick: bool,
    out: PathBuf,
    unit: &'static str,
) -> Result<()> {
    let opts = Opts {
        quick,
        seeds: None,
        jobs: 1,
        command: crate::run::command_line(),
        out,
    };
    let bars = crate::reproduce::Bars::counting(unit);
    let outcome = hopwise_experiment::run(exp, plan, &opts, &bars)?;
    crate::reproduce::print_outcome(&outcome, &opts, &exp.doc());
    Ok(())
}

pub fn run(cmd: LabCmd) -> Result<()> {
    if !matches!(cmd, LabCmd::Check | LabCmd::Clean) {
        // Before any thread starts (see the function).
        hopwise_lab::netns::clean_up_on_interrupt(hopwise_lab::topology::PREFIX)?;
    }
    match cmd {
        LabCmd::Check => {
            let items = hopwise_lab::check();
            for c in &items {
                println!(
                    "{} {:<28} {}",
                    if c.ok { "ok  " } else { "FAIL" },
                    c.what,
                    c.detail
                );
            }
            let failed = items.iter().filter(|c| !c.ok).count();
            if failed > 0 {
                bail!("{failed} check(s) failed: the lab cannot run here");
            }
            println!("the lab can run here");
            Ok(())
        }
        LabCmd::Clean => {
            let prefix = hopwise_lab::topology::PREFIX;
            let gone = hopwise_lab::netns::clean(prefix)?;
            let live = hopwise_lab::netns::live(prefix)?;
            if gone.is_empty() {
                println!("no lab namespaces left by an earlier run");
            } else {
                println!("deleted {}", gone.join(", "));
            }
            let mut pids: Vec<&str> = live.iter().map(|(_, p)| p.as_str()).collect();
            pids.sort_unstable();
            pids.dedup();
            if !live.is_empty() {
                println!(
                    "left alone: {} of running lab process{} {} ({})",
                    hopwise_experiment::plural(live.len(), "namespace"),
                    if pids.len() == 1 { "" } else { "es" },
                    pids.join(", "),
                    live.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Ok(())
        }
        LabCmd::Backtap {
            quick,
            secs,
            out,
            rate,
            buffer,
            cc,
            circuits,
        } => {
            if rate < 100_000 {
                bail!("--rate {rate}: at least 100000 bit/s");
            }
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the hopwise executable: {e}"))?;
            let lab = backtap::LabBacktap { exe };
            let plan = backtap::Options {
                secs: secs.unwrap_or(backtap::Options::secs_for(quick)),
                rate_bps: rate,
                buffer,
                cc,
                circuits,
                ..hopwise_experiment::Reproduction::plan(&lab, quick, None)
            };
            let about = if circuits == 1 {
                "seed 002 on real UDP: a BackTap circuit (hopwise relay) against kernel TCP at one bottleneck"
            } else {
                "seed 002 on real UDP: BackTap circuits (hopwise relay) against kernel TCP at one bottleneck"
            };
            plan.check()?;
            // Only a run that can start makes its output directory.
            crate::run::prepare_out(&out)?;
            eprintln!("lab backtap: {about} ({} s per case)", plan.secs);
            drive(&lab, &plan, quick, out, "s")
        }
        LabCmd::Utp {
            quick,
            secs,
            out,
            skip_libtorrent,
            skip_hopwise,
            python,
            cc,
            buffer,
        } => {
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the hopwise executable: {e}"))?;
            let lab = utp_lab::LabUtp {
                exe,
                repo: repo_root(),
            };
            let defaults = hopwise_experiment::Reproduction::plan(&lab, quick, None);
            let plan = utp_lab::Options {
                secs: secs.unwrap_or(utp_lab::Options::secs_for(quick)),
                python: python.unwrap_or(defaults.python.clone()),
                cc,
                hopwise: !skip_hopwise,
                libtorrent: !skip_libtorrent,
                buffer: buffer.unwrap_or(defaults.buffer),
                ..defaults
            };
            plan.check()?;
            hopwise_lab::topology::require()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab utp: {} ({} cases, {} s each)",
                <utp_lab::LabUtp as Reproduction>::ABOUT,
                plan.cases().len(),
                plan.secs
            );
            drive(&lab, &plan, quick, out, "s")
        }
        LabCmd::BtInterop {
            quick,
            size,
            rtt,
            loss,
            out,
            python,
        } => {
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the hopwise executable: {e}"))?;
            let lab = utp_lab::interop::LabUtpInterop {
                exe,
                repo: repo_root(),
            };
            let defaults = hopwise_experiment::Reproduction::plan(&lab, quick, None);
            let size = match size {
                Some(s) => {
                    hopwise_proto::units::parse_bytes(&s)
                        .map_err(|e| anyhow::anyhow!("--size {s}: {e}"))?
                        .0
                }
                None => defaults.size,
            };
            let loss = match loss.strip_suffix('%') {
                Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
                None => loss.trim().parse::<f64>(),
            }
            .map_err(|_| anyhow::anyhow!("--loss {loss}: a fraction or a percentage such as 1%"))?;
            let plan = utp_lab::interop::Options {
                size,
                rtt_ms: rtt as f64,
                loss,
                python: python.unwrap_or(defaults.python.clone()),
                ..defaults
            };
            plan.check()?;
            hopwise_lab::topology::require()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab bt-interop: {} ({} MiB)",
                <utp_lab::interop::LabUtpInterop as Reproduction>::ABOUT,
                plan.size >> 20
            );
            drive(&lab, &plan, quick, out, "transfers")
        }
        LabCmd::Otcp {
            quick,
            regimes,
            runs,
            size,
            cc,
            sim_seeds,
            seed,
            out,
        } => {
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the hopwise executable: {e}"))?;
            let defaults = otcp::Options::new(exe, quick);
            let plan = otcp::Options {
                regimes: regimes.map_or(defaults.regimes.clone(), |r| r.0),
                runs: runs.or(defaults.runs),
                size,
                cc,
                sim_seeds: sim_seeds.unwrap_or(defaults.sim_seeds),
                seed,
                ..defaults
            };
            plan.check()?;
            crate::run::prepare_out(&out)?;
            let runs = plan
                .regimes
                .iter()
                .map(|&r| format!("{} ×{}", r.name(), plan.runs_for(r)))
                .collect::<Vec<_>>()
                .join(", ");
            eprintln!(
                "lab otcp: {} ({} B per transfer; runs per path: {runs})",
                <otcp::LabOtcp as Reproduction>::ABOUT,
                plan.size
            );
            drive(&otcp::LabOtcp, &plan, quick, out, "transfers")
        }
        LabCmd::Hops {
            quick,
            loss,
            sizes,
            runs,
            limit,
            cc,
            otcp_buffer,
            circuit_queue,
            stream_window,
            relay_transport,
            seed,
            out,
        } => {
            let exe = std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find the hopwise executable: {e}"))?;
            let d = hops::Plan::new(exe, quick);
            let plan = hops::Plan {
                losses: loss.unwrap_or(d.losses.clone()),
                sizes: sizes.unwrap_or(d.sizes.clone()),
                runs: runs.unwrap_or(d.runs),
                limit_s: limit.unwrap_or(d.limit_s),
                cc,
                otcp_buffer,
                circuit_queue,
                stream_window,
                relay_transport,
                seed,
                ..d
            };
            plan.check()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab hops: {} ({} downloads, at most {} s each)",
                <hops::LabHops as Reproduction>::ABOUT,
                plan.transfers(),
                plan.limit_s
            );
            drive(&hops::LabHops, &plan, quick, out, "downloads")
        }
        LabCmd::OverlayAck {
            quick,
            secs,
            modes,
            out,
            cc,
            host_queue,
            switch_buffer,
            sim_runs,
        } => {
            use hopwise_experiment::Reproduction;
            let defaults = overlay_ack::Options::new(quick);
            let plan = overlay_ack::Options {
                secs: secs.unwrap_or(defaults.secs),
                modes: modes.map_or(defaults.modes, |m| m.0),
                cc,
                host_queue,
                switch_buffer,
                sim_runs,
            };
            let about = overlay_ack::OverlayAckLab::ABOUT;
            plan.check()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab overlay-ack: {about} ({} × {} s)",
                hopwise_experiment::plural(plan.modes.len(), "mode"),
                plan.secs
            );
            drive(&overlay_ack::OverlayAckLab, &plan, quick, out, "s")
        }
        LabCmd::AckCompression {
            quick,
            secs,
            out,
            cc,
            no_sim,
        } => {
            let plan = acks::Plan {
                cc,
                secs: secs.unwrap_or(acks::Plan::secs_for(quick)),
                sim: !no_sim,
            };
            plan.check()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab ack-compression: {} ({} s per case)",
                <LabAckCompression as hopwise_experiment::Reproduction>::ABOUT,
                plan.secs
            );
            drive(&LabAckCompression, &plan, quick, out, "s")
        }
        LabCmd::PendulumFig10 {
            quick,
            tp,
            down_buffer,
            up_buffers,
            secs,
            sim_seeds,
            cc,
            out,
        } => {
            let d = pendulum_fig10::Plan::new(quick);
            let plan = pendulum_fig10::Plan {
                cc,
                tp_ms: tp.unwrap_or(d.tp_ms),
                down_buffer: down_buffer.unwrap_or(d.down_buffer),
                up_buffers: up_buffers.unwrap_or(d.up_buffers),
                secs: secs.unwrap_or(d.secs),
                sim_seeds: sim_seeds.unwrap_or(d.sim_seeds),
            };
            plan.check()?;
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab pendulum-fig10: {} ({} × {} s, T_p = {} ms)",
                <LabPendulumFig10 as hopwise_experiment::Reproduction>::ABOUT,
                hopwise_experiment::plural(plan.up_buffers.len(), "point"),
                plan.secs,
                plan.tp_ms
            );
            drive(&LabPendulumFig10, &plan, quick, out, "s")
        }
        LabCmd::CcCheck {
            check,
            quick,
            secs,
            sim_seeds,
            out,
            kernel_quickack,
        } => {
            let d = cc_check::Plan::new(check, quick, sim_seeds);
            let plan = cc_check::Plan {
                secs: secs.unwrap_or(d.secs),
                kernel_delayed_acks: !kernel_quickack,
                ..d
            };
            plan.check()?;
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("out/lab-cc-check-{}", check.name())));
            crate::run::prepare_out(&out)?;
            eprintln!(
                "lab cc-check {}: {} ({} × {} s, {} simulator seeds)",
                check.name(),
                <LabCcCheck as Reproduction>::ABOUT,
                hopwise_experiment::plural(check.cases().len(), "case"),
                plan.secs,
                plan.sim_seeds
            );
            drive(&LabCcCheck, &plan, quick, out, "s")
        }
        LabCmd::Pendulum {
            quick,
            out,
            cc,
            down_buffer,
            up_buffer,
            sim_seeds,
        } => {
            hopwise_lab::traffic::check_cc(&cc)?;
            crate::run::prepare_out(&out)?;
            let plan = pendulum::Plan {
                quick,
                cc,
                down_buffer,
                up_buffer,
                sim_seeds,
            };
            eprintln!(
                "lab pendulum: {}{}",
                <LabPendulum as hopwise_experiment::Reproduction>::ABOUT,
                if quick { " (quick: 40 s)" } else { " (100 s)" }
            );
            drive(&LabPendulum, &plan, quick, out, "s")
        }
    }
}

/// The repository root for the interop harness: the working directory if
/// it has `interop/libtorrent`, else the source tree this binary was built
/// from.
fn repo_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if cwd.join("interop/libtorrent").is_dir() {
        return cwd;
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    if src.join("interop/libtorrent").is_dir() {
        src
    } else {
        cwd
    }
}
