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

use crate::overlay_ack::{analyse, Mode, ModeStats, RunResult, Setup, Timeline};
use crate::{write_csv, write_summary, Claim, Outcome, Progress};
use anyhow::{bail, Context, Result};
use hopwise_lab::cmd::{self, args, display};
use hopwise_lab::kstats::kernel_release;
use hopwise_lab::netns::Netns;
use hopwise_lab::tc::{self, QdiscStats};
use hopwise_lab::topology::{Buffer, LEAF, PREFIX};
use hopwise_lab::traffic::{
    join_all, per_second, spawn_duplex_client, spawn_duplex_server, spawn_receiver, spawn_sender,
    Clock, BIN_S,
};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// Every port's rate (paper §III-A: 10 Mbit/s full duplex).
pub const LINK_BPS: u64 = 10_000_000;
/// Payload goodput a full link can carry on the wire the qdiscs count:
/// 1448 B of payload (timestamps on) per 1514 B Ethernet frame.
pub const KERNEL_CAPACITY_BPS: f64 = LINK_BPS as f64 * 1448.0 / 1514.0;
/// "ACKs first" (§IV): the data class's guaranteed share and the throttle
/// on both classes together, as in the simulator's `AckFirstParams`.
const DATA_SHARE: f64 = 0.9;
const THROTTLE: f64 = 0.95;
/// Handle of the data class's leaf in the "ACKs first" modes (the ACK
/// class's leaf is [`LEAF`]).
const DATA_LEAF: &str = "20:";

pub const HOSTS: [&str; 3] = ["a", "b", "c"];
const A: usize = 0;
const B: usize = 1;
const C: usize = 2;
const BRIDGE: &str = "br0";
/// The host's interface, the device's two sides, and the switch's ports.
const HOST_DEV: &str = "e0";
const DEV_HOST_SIDE: &str = "to-host";
/// The device's side towards the switch: the host's uplink queue.
pub const UPLINK_DEV: &str = "uplink";

/// Host `i`'s address (10.203.0.1 …).
pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 203, 0, i as u8 + 1)
}

/// The switch port towards host `i`'s device.
pub fn port_dev(i: usize) -> String {
    format!("p-{}", HOSTS[i])
}

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

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub out: PathBuf,
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
            out: PathBuf::from("out/lab-overlay-ack"),
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

/// Namespace names of one mode's instance: `hwlab-PID-N-{a,b,c,ma,mb,mc,sw}`.
#[derive(Clone, Debug)]
pub struct Names {
    pub hosts: [String; 3],
    pub devices: [String; 3],
    pub sw: String,
}

impl Names {
    pub fn new_instance() -> Names {
        let p = hopwise_lab::netns::instance_prefix(PREFIX);
        Names {
            hosts: HOSTS.map(|h| format!("{p}-{h}")),
            devices: HOSTS.map(|h| format!("{p}-m{h}")),
            sw: format!("{p}-sw"),
        }
    }
}

/// The classifier of B's "ACKs first" qdisc as `u32` matches (each inner
/// list is one filter). All match IPv4 without options (first byte 0x45)
/// carrying TCP (protocol 6).
pub fn ack_filters(mode: Mode) -> Vec<Vec<String>> {
    use hopwise_sim::spec::AckClassifier;
    let base = [
        "match", "u8", "0x45", "0xff", "at", "0", "match", "u8", "6", "0xff", "at", "9",
    ];
    match mode.ack_first() {
        None => Vec::new(),
        // IP total length < 64 B: the top ten bits of the 16-bit field are zero.
        Some(AckClassifier::Len64) => {
            let mut f = args(&base);
            f.extend(args(&["match", "u16", "0", "0xffc0", "at", "2"]));
            vec![f]
        }
        // No payload: the total length equals 20 B of IP header plus the TCP
        // header's length (data offset × 4, the high nibble of byte 12 of
        // the TCP header, at 20 + 12 = 32), for each data offset 5..=15.
        Some(AckClassifier::NoPayload) => (5u32..=15)
            .map(|doff| {
                let mut f = args(&base);
                f.extend(args(&[
                    "match",
                    "u16",
                    &(20 + 4 * doff).to_string(),
                    "0xffff",
                    "at",
                    "2",
                    "match",
                    "u8",
                    &format!("0x{:x}", doff << 4),
                    "0xf0",
                    "at",
                    "32",
                ]));
                f
            })
            .collect(),
    }
}

fn bps_arg(x: f64) -> String {
    format!("{}bit", x.round() as u64)
}

/// The commands that wire up the existing namespaces for `mode`. Pure, for tests.
pub fn plan(n: &Names, mode: Mode, opts: &Options) -> Vec<(&'static str, Vec<String>)> {
    let mut p: Vec<(&'static str, Vec<String>)> = Vec::new();
    let ip = |a: &[&str]| ("ip", args(a));
    let tc = |a: &[&str]| ("tc", args(a));
    // A bridge in the switch and in every device.
    for ns in std::iter::once(&n.sw).chain(n.devices.iter()) {
        p.push(ip(&["-n", ns, "link", "add", BRIDGE, "type", "bridge"]));
        p.push(ip(&["-n", ns, "link", "set", BRIDGE, "up"]));
    }
    for i in 0..3 {
        let (host, dev) = (&n.hosts[i], &n.devices[i]);
        let port = port_dev(i);
        p.push(ip(&[
            "link",
            "add",
            HOST_DEV,
            "netns",
            host,
            "type",
            "veth",
            "peer",
            "name",
            DEV_HOST_SIDE,
            "netns",
            dev,
        ]));
        p.push(ip(&[
            "link", "add", UPLINK_DEV, "netns", dev, "type", "veth", "peer", "name", &port,
            "netns", &n.sw,
        ]));
        let a = format!("{}/24", addr(i));
        p.push(ip(&["-n", host, "addr", "add", &a, "dev", HOST_DEV]));
        // One MSS per skb everywhere, so that the qdiscs see wire-sized packets.
        for (ns, d) in [
            (host, HOST_DEV),
            (dev, DEV_HOST_SIDE),
            (dev, UPLINK_DEV),
            (&n.sw, port.as_str()),
        ] {
            if ns != host {
                p.push(ip(&["-n", ns, "link", "set", d, "master", BRIDGE]));
            }
            p.push(ip(&["-n", ns, "link", "set", d, "up", "gso_max_segs", "1"]));
        }
        let rate = bps_arg(LINK_BPS as f64);
        // The switch port towards the device.
        p.push(tc(&[
            "-n", &n.sw, "qdisc", "add", "dev", &port, "root", "handle", "1:", "htb", "default",
            "1",
        ]));
        p.push(tc(&[
            "-n", &n.sw, "class", "add", "dev", &port, "parent", "1:", "classid", "1:1", "htb",
            "rate", &rate, "ceil", &rate,
        ]));
        let mut leaf = args(&[
            "-n", &n.sw, "qdisc", "add", "dev", &port, "parent", "1:1", "handle", LEAF,
        ]);
        leaf.extend(opts.switch_buffer.qdisc());
        p.push(("tc", leaf));
        // The host's uplink in its device.
        let filters = if i == B {
            ack_filters(mode)
        } else {
            Vec::new()
        };
        if filters.is_empty() {
            p.push(tc(&[
                "-n", dev, "qdisc", "add", "dev", UPLINK_DEV, "root", "handle", "1:", "htb",
                "default", "1",
            ]));
            p.push(tc(&[
                "-n", dev, "class", "add", "dev", UPLINK_DEV, "parent", "1:", "classid", "1:1",
                "htb", "rate", &rate, "ceil", &rate,
            ]));
            let mut leaf = args(&[
                "-n", dev, "qdisc", "add", "dev", UPLINK_DEV, "parent", "1:1", "handle", LEAF,
            ]);
            leaf.extend(opts.host_queue.qdisc());
            p.push(("tc", leaf));
        } else {
            let ceil = bps_arg(LINK_BPS as f64 * THROTTLE);
            let data = bps_arg(LINK_BPS as f64 * DATA_SHARE);
            let acks = bps_arg(LINK_BPS as f64 * (THROTTLE - DATA_SHARE));
            p.push(tc(&[
                "-n", dev, "qdisc", "add", "dev", UPLINK_DEV, "root", "handle", "1:", "htb",
                "default", "20",
            ]));
            p.push(tc(&[
                "-n", dev, "class", "add", "dev", UPLINK_DEV, "parent", "1:", "classid", "1:1",
                "htb", "rate", &ceil, "ceil", &ceil,
            ]));
            for (class, r, prio, handle) in
                [("1:10", &acks, "0", LEAF), ("1:20", &data, "1", DATA_LEAF)]
            {
                p.push(tc(&[
                    "-n", dev, "class", "add", "dev", UPLINK_DEV, "parent", "1:1", "classid",
                    class, "htb", "rate", r, "ceil", &ceil, "prio", prio,
                ]));
                let mut leaf = args(&[
                    "-n", dev, "qdisc", "add", "dev", UPLINK_DEV, "parent", class, "handle", handle,
                ]);
                leaf.extend(opts.host_queue.qdisc());
                p.push(("tc", leaf));
            }
            for f in filters {
                let mut a = args(&[
                    "-n", dev, "filter", "add", "dev", UPLINK_DEV, "parent", "1:", "protocol",
                    "ip", "prio", "1", "u32",
                ]);
                a.extend(f);
                a.extend(args(&["flowid", "1:10"]));
                p.push(("tc", a));
            }
        }
    }
    p
}

/// One mode's namespaces. Dropping it deletes them.
pub struct Lab {
    pub hosts: Vec<Netns>,
    pub devices: Vec<Netns>,
    pub sw: Netns,
}

impl Lab {
    pub fn build(n: &Names, mode: Mode, opts: &Options) -> Result<Lab> {
        let mut hosts = Vec::new();
        let mut devices = Vec::new();
        for i in 0..3 {
            hosts.push(Netns::create(&n.hosts[i])?);
            devices.push(Netns::create(&n.devices[i])?);
        }
        let lab = Lab {
            hosts,
            devices,
            sw: Netns::create(&n.sw)?,
        };
        for (prog, a) in plan(n, mode, opts) {
            cmd::run(prog, &a).with_context(|| {
                format!(
                    "building the lab for {}: {}",
                    mode.name(),
                    display(prog, &a)
                )
            })?;
        }
        Ok(lab)
    }

    fn qdiscs(ns: &Netns) -> Result<Vec<QdiscStats>> {
        let out = ns.tc(&["-s", "-j", "qdisc", "show"])?;
        tc::parse(&out, &format!("tc -n {} -s -j qdisc show", ns.name()))
    }

    /// B's uplink queue (both leaves in the "ACKs first" modes) and the
    /// switch port towards B: (backlog bytes, drops) of each.
    fn b_queues(&self) -> Result<[(u64, u64); 2]> {
        let sum = |q: &[QdiscStats], dev: &str| {
            q.iter()
                .filter(|s| s.dev == dev && (s.handle == LEAF || s.handle == DATA_LEAF))
                .fold((0, 0), |(b, d), s| (b + s.backlog, d + s.drops))
        };
        let up = Lab::qdiscs(&self.devices[B])?;
        let port = Lab::qdiscs(&self.sw)?;
        Ok([sum(&up, UPLINK_DEV), sum(&port, &port_dev(B))])
    }
}

/// The smoothed RTT in ms of the connection from `ns` to `dst`, as
/// `ss -tinH` prints it (`rtt:SRTT/RTTVAR`); `None` if there is none.
pub fn parse_ss_rtt(out: &str) -> Option<f64> {
    out.split_whitespace()
        .find_map(|tok| tok.strip_prefix("rtt:"))
        .and_then(|v| v.split('/').next())
        .and_then(|v| v.parse().ok())
}

fn ss_rtt(ns: &Netns, dst: SocketAddr) -> Result<Option<f64>> {
    let a = args(&[
        "-N",
        ns.name(),
        "-tinH",
        "state",
        "established",
        "dst",
        &dst.to_string(),
    ]);
    Ok(parse_ss_rtt(&cmd::run("ss", &a)?))
}

/// Ports: A→B (or A↔B), B→C (or B↔C), B→A and C→B (split modes).
const PORT_AB: u16 = 5001;
const PORT_BC: u16 = 5002;
const PORT_BA: u16 = 5003;
const PORT_CB: u16 = 5004;

/// What the kernel run of one mode measured.
struct KernelRun {
    /// 100 ms bins of A→B, B→A, B→C, C→B (empty where the mode has no such flow).
    bins: [Vec<u64>; 4],
    /// (time s, A→B's SRTT ms).
    srtt: Vec<(f64, f64)>,
    /// (time s, B's uplink backlog, switch port towards B backlog), bytes.
    queues: Vec<(f64, u64, u64)>,
    /// Drops at B's uplink and at the switch port towards B over the run.
    drops: [u64; 2],
}

type Flow = std::thread::JoinHandle<Result<Vec<u64>>>;

fn run_kernel(
    lab: &Lab,
    mode: Mode,
    opts: &Options,
    tl: &Timeline,
    progress: &dyn Progress,
) -> Result<KernelRun> {
    let clock = Clock::start();
    let end = tl.duration;
    let read_until = end + 1.0;
    let cc = &opts.cc;
    let sock = |i: usize, port| SocketAddr::from((addr(i), port));
    // Flows in the order A→B, B→A, B→C, C→B; `None` where absent.
    let mut flows: [Option<Flow>; 4] = [None, None, None, None];
    let mut senders = Vec::new();
    let one_way = |flows: &mut [Option<Flow>; 4],
                   senders: &mut Vec<std::thread::JoinHandle<Result<()>>>,
                   slot: usize,
                   (from, to): (usize, usize),
                   port: u16,
                   (a, b): (f64, f64),
                   name: &str|
     -> Result<()> {
        flows[slot] = Some(spawn_receiver(
            lab.hosts[to].open()?,
            addr(to),
            port,
            clock,
            read_until,
            name.into(),
        )?);
        senders.push(spawn_sender(
            lab.hosts[from].open()?,
            sock(to, port),
            cc.clone(),
            clock,
            a,
            b,
            name.into(),
        )?);
        Ok(())
    };
    if mode.two_way() && mode != Mode::SplitAckPrio {
        // One connection per pair, data both ways: the server's bins are
        // what the client sends (A→B at B, B→A at A; B→C at C, C→B at B).
        let two_way = |(client, server): (usize, usize),
                       port: u16,
                       window: (f64, f64),
                       pair: &str|
         -> Result<[Flow; 2]> {
            Ok([
                spawn_duplex_server(
                    lab.hosts[server].open()?,
                    addr(server),
                    port,
                    cc.clone(),
                    clock,
                    window.1,
                    format!("{pair} at {}", HOSTS[server].to_uppercase()),
                )?,
                spawn_duplex_client(
                    lab.hosts[client].open()?,
                    sock(server, port),
                    cc.clone(),
                    clock,
                    window,
                    format!("{pair} at {}", HOSTS[client].to_uppercase()),
                )?,
            ])
        };
        let [ab, ba] = two_way((A, B), PORT_AB, tl.ab, "A↔B")?;
        let [bc, cb] = two_way((B, C), PORT_BC, tl.bc, "B↔C")?;
        flows = [Some(ab), Some(ba), Some(bc), Some(cb)];
    } else {
        one_way(&mut flows, &mut senders, 0, (A, B), PORT_AB, tl.ab, "A→B")?;
        one_way(&mut flows, &mut senders, 2, (B, C), PORT_BC, tl.bc, "B→C")?;
        if mode == Mode::SplitAckPrio {
            one_way(&mut flows, &mut senders, 1, (B, A), PORT_BA, tl.ab, "B→A")?;
            one_way(&mut flows, &mut senders, 3, (C, B), PORT_CB, tl.bc, "C→B")?;
        }
    }
    progress.start(
        &format!("{}: kernel TCP (real time)", mode.name()),
        end.ceil() as u64,
    );
    let mut srtt = Vec::new();
    let mut queues = Vec::new();
    let mut drops = [0, 0];
    let mut ticked = 0u64;
    let mut k = 0u64;
    loop {
        let t = k as f64 * BIN_S;
        if t >= end {
            break;
        }
        clock.sleep_until(t);
        let now = clock.now_s();
        let q = lab.b_queues()?;
        queues.push((now, q[0].0, q[1].0));
        drops = [q[0].1, q[1].1];
        if k.is_multiple_of(5) && now >= tl.ab.0 && now < tl.ab.1 {
            if let Some(r) = ss_rtt(&lab.hosts[A], sock(B, PORT_AB))? {
                srtt.push((now, r));
            }
        }
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
        }
        k += 1;
    }
    clock.sleep_until(end);
    progress.finish();
    let mut errors = Vec::new();
    join_all(senders, "sender", &mut errors);
    let mut bins: [Vec<u64>; 4] = Default::default();
    for (slot, f) in flows.into_iter().enumerate() {
        if let Some(h) = f {
            if let Some(b) = join_all([h], "receiver", &mut errors).pop() {
                bins[slot] = b;
            }
        }
    }
    if !errors.is_empty() {
        bail!(
            "the kernel run of {} failed:\n  {}",
            mode.name(),
            errors.join("\n  ")
        );
    }
    if let Ok(q) = lab.b_queues() {
        drops = [q[0].1, q[1].1];
    }
    // In the two-way modes the slots hold what each end received: B's
    // server got A→B (slot 0) and A's client B→A (slot 1); C's server got
    // B→C (slot 2) and B's client C→B (slot 3). That is the order already.
    Ok(KernelRun {
        bins,
        srtt,
        queues,
        drops,
    })
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
#[derive(Clone, Debug, Serialize)]
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
    pub ab_srtt_phase2_over_500ms: f64,
    pub breakdowns: f64,
    /// Drops per run at B's uplink and at the switch port towards B.
    pub drops_b_uplink: f64,
    pub drops_switch_to_b: f64,
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
            ab_srtt_phase2_over_500ms: m.ab_srtt_phase2_over_500ms,
            breakdowns: m.breakdowns,
            drops_b_uplink: m.drops[2],
            drops_switch_to_b: m.drops[3],
        }
    }
    fn ab_ratio(&self) -> f64 {
        self.ab_phase2_bps / self.ab_phase1_bps
    }
}

#[derive(Serialize)]
struct SetupOut<'a> {
    link_rate_bps: u64,
    host_queue: Buffer,
    switch_buffer: Buffer,
    ack_first: &'static str,
    cc: &'a str,
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

#[derive(Serialize)]
struct Summary<'a> {
    experiment: &'static str,
    command: Option<&'a str>,
    kernel: String,
    setup: SetupOut<'a>,
    modes: &'a [Stats],
    /// Modes asked for that have not run: not yet (the outputs are written
    /// after each mode) or not at all, because an earlier one failed.
    modes_not_run: &'a [&'a str],
    simulator: &'a [Stats],
    simulator_runs: u32,
    claims: &'a [Claim],
}

fn mbps(x: f64) -> String {
    format!("{:.2} Mbit/s", x / 1e6)
}

/// The reproduction's criteria, judged on kernel TCP, with the simulator's
/// value beside each.
fn claims(kernel: &[Stats], sim: &[Stats], tl: &Timeline) -> Vec<Claim> {
    let k = |m: Mode| kernel.iter().find(|s| s.mode == m.name());
    let s = |m: Mode| sim.iter().find(|s| s.mode == m.name());
    let beside = |m: Mode, f: &dyn Fn(&Stats) -> String| {
        s(m).map_or(String::new(), |x| {
            format!(
                "; simulator (hopwise's TCP set up as Linux 2.6.26, {} runs): {}",
                x.runs,
                f(x)
            )
        })
    };
    let (p1, p2) = (tl.phase1(), tl.phase2());
    let fair = KERNEL_CAPACITY_BPS / 2.0;
    let mut c = Vec::new();
    if let Some(p) = k(Mode::Plain) {
        c.push(crate::legacy_claim(
            "Fig. 3, kernel TCP",
            "without prioritisation A→B's phase-2 goodput is ≤ 0.8 × its phase-1 goodput",
            format!(
                "A→B {} alone ({:.0}–{:.0} s), {} shared ({:.0}–{:.0} s): ratio {:.2} (kernel: one run){}",
                mbps(p.ab_phase1_bps),
                p1.0,
                p1.1,
                mbps(p.ab_phase2_bps),
                p2.0,
                p2.1,
                p.ab_ratio(),
                beside(Mode::Plain, &|x| format!("ratio {:.2}", x.ab_ratio()))
            ),
            p.ab_ratio() <= 0.8,
        ));
        c.push(crate::legacy_claim(
            "Fig. 2b, kernel TCP",
            "A→B's RTT exceeds 500 ms while B→C runs (median SRTT in phase 2, from ss)",
            format!(
                "median SRTT {:.0} ms in phase 2 ({:.0} % of samples above 500 ms); {}{}{}",
                p.ab_srtt_phase2_ms,
                100.0 * p.ab_srtt_phase2_over_500ms,
                if p.ab_srtt_phase1_ms >= p.ab_srtt_phase2_ms {
                    format!(
                        "it does not rise: phase 1 is at {:.0} ms already (CUBIC fills A's own 1000-packet queue)",
                        p.ab_srtt_phase1_ms
                    )
                } else {
                    format!("phase 1: {:.0} ms", p.ab_srtt_phase1_ms)
                },
                k(Mode::AckPrio).map_or(String::new(), |a| format!(
                    "; with ACKs first {:.0} ms in phase 2",
                    a.ab_srtt_phase2_ms
                )),
                beside(Mode::Plain, &|x| format!(
                    "{:.0} ms in phase 2, {:.0} ms in phase 1",
                    x.ab_srtt_phase2_ms, x.ab_srtt_phase1_ms
                ))
            ),
            p.ab_srtt_phase2_ms > 500.0,
        ));
    }
    if let Some(a) = k(Mode::AckPrio) {
        c.push(crate::legacy_claim(
            "Fig. 5, kernel TCP",
            "with ACKs first at B (no-payload filter) A→B's phase-2 goodput is ≥ 0.9 × phase 1",
            format!(
                "A→B {} alone, {} shared: ratio {:.2}{}",
                mbps(a.ab_phase1_bps),
                mbps(a.ab_phase2_bps),
                a.ab_ratio(),
                beside(Mode::AckPrio, &|x| format!("ratio {:.2}", x.ab_ratio()))
            ),
            a.ab_ratio() >= 0.9,
        ));
        let bc_max = KERNEL_CAPACITY_BPS * THROTTLE;
        c.push(crate::legacy_claim(
            "Fig. 5, kernel TCP",
            format!(
                "… and B→C runs near the link rate meanwhile: ≥ 90 % of what B's throttled egress carries ({})",
                mbps(bc_max)
            ),
            format!(
                "B→C {} in phase 2{}",
                mbps(a.bc_phase2_bps),
                beside(Mode::AckPrio, &|x| mbps(x.bc_phase2_bps))
            ),
            a.bc_phase2_bps >= 0.9 * bc_max,
        ));
    }
    if let Some(l) = k(Mode::AckPrioLen64) {
        c.push(Claim::info(
            "§IV filter, kernel TCP",
            "the paper's filter (IP total length < 64 B) against the no-payload filter: an ACK that carries a SACK block (with timestamps) is 64 B or longer and counts as data",
            format!(
                "ackprio-len64: A→B ratio {:.2}, SRTT {:.0} ms while shared{}{}{}",
                l.ab_ratio(),
                l.ab_srtt_phase2_ms,
                k(Mode::AckPrio).map_or(String::new(), |a| format!(
                    "; no-payload filter {:.2}, {:.0} ms",
                    a.ab_ratio(),
                    a.ab_srtt_phase2_ms
                )),
                k(Mode::Plain).map_or(String::new(), |a| format!(
                    "; plain {:.2}, {:.0} ms",
                    a.ab_ratio(),
                    a.ab_srtt_phase2_ms
                )),
                beside(Mode::AckPrioLen64, &|x| format!(
                    "ratio {:.2}",
                    x.ab_ratio()
                ))
            ),
        ));
    }
    if let Some(b) = k(Mode::Bidir) {
        c.push(crate::legacy_claim(
            "Fig. 6, kernel TCP",
            format!(
                "with data both ways on each connection the flows towards B fall far below their fair share (≤ 50 % of {})",
                mbps(fair)
            ),
            format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} % of the fair share{}",
                mbps(b.towards_b_phase2_bps),
                mbps(b.ab_phase2_bps),
                mbps(b.cb_phase2_bps),
                100.0 * b.towards_b_phase2_bps / fair,
                beside(Mode::Bidir, &|x| mbps(x.towards_b_phase2_bps))
            ),
            b.towards_b_phase2_bps <= 0.5 * fair,
        ));
    }
    if let Some(ba) = k(Mode::BidirAckPrio) {
        c.push(crate::legacy_claim(
            "Fig. 7a, kernel TCP",
            format!(
                "with ACKs first the mean recovers: ≥ 80 % of the fair share ({}) towards B",
                mbps(fair)
            ),
            format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} %; away from B: B→A {}, B→C {}{}",
                mbps(ba.towards_b_phase2_bps),
                mbps(ba.ab_phase2_bps),
                mbps(ba.cb_phase2_bps),
                100.0 * ba.towards_b_phase2_bps / fair,
                mbps(ba.ba_phase2_bps),
                mbps(ba.bc_phase2_bps),
                beside(Mode::BidirAckPrio, &|x| format!(
                    "{} (A→B {}, C→B {})",
                    mbps(x.towards_b_phase2_bps),
                    mbps(x.ab_phase2_bps),
                    mbps(x.cb_phase2_bps)
                ))
            ),
            ba.towards_b_phase2_bps >= 0.8 * fair,
        ));
        if let Some(sp) = k(Mode::SplitAckPrio) {
            let r = sp.var_10s / ba.var_10s;
            c.push(crate::legacy_claim(
                "Fig. 8, 9, kernel TCP",
                "split-ackprio's var_10s is at most half of bidir-ackprio's",
                format!(
                    "{:.2} against {:.2} (Mbit/s)²: {:.2}{}",
                    sp.var_10s,
                    ba.var_10s,
                    r,
                    match (s(Mode::SplitAckPrio), s(Mode::BidirAckPrio)) {
                        (Some(x), Some(y)) => format!(
                            "; simulator {:.2} against {:.2}: {:.2}",
                            x.var_10s,
                            y.var_10s,
                            x.var_10s / y.var_10s
                        ),
                        _ => String::new(),
                    }
                ),
                r <= 0.5,
            ));
        }
    }
    c
}

/// What a run has measured so far: the kernel's modes, and the simulator's
/// (once it has run).
struct Results<'a> {
    opts: &'a Options,
    tl: &'a Timeline,
    command: Option<&'a str>,
    kernel: Vec<Stats>,
    runs: Vec<(RunResult, KernelRun)>,
    sim: Vec<Stats>,
    sim_first: Vec<RunResult>,
    sim_runs: u32,
}

/// Writes every output but report.html for the results so far (called
/// after each kernel mode, so that a run stopped later keeps them, and at
/// the end); returns the claims and the files written.
fn write_outputs(r: &Results, not_run: &[&str]) -> Result<(Vec<Claim>, Vec<String>)> {
    let Results {
        opts,
        tl,
        command,
        kernel,
        runs,
        sim,
        sim_first,
        sim_runs,
    } = r;
    let (opts, tl, sim_runs) = (*opts, *tl, *sim_runs);
    let claims = claims(kernel, sim, tl);
    let dir = &opts.out;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut files = Vec::new();
    let flow_names = ["A→B", "B→A", "B→C", "C→B"];
    let mut rows = Vec::new();
    let mut push_series = |src: &str, r: &RunResult| {
        for (name, s) in flow_names.iter().zip([&r.ab, &r.ba, &r.bc, &r.cb]) {
            for (t, v) in s.iter().enumerate() {
                rows.push(vec![
                    src.to_string(),
                    r.mode.name().to_string(),
                    name.to_string(),
                    t.to_string(),
                    format!("{v:.0}"),
                ]);
            }
        }
    };
    for (rr, _) in runs.iter() {
        push_series("kernel", rr);
    }
    for rr in sim_first.iter() {
        push_series("simulator", rr);
    }
    write_csv(
        &dir.join("goodput.csv"),
        &["source", "mode", "flow", "time_s", "bps"],
        &rows,
    )?;
    files.push("goodput.csv".to_string());
    let mut rows = Vec::new();
    for (rr, kr) in runs.iter() {
        for &(t, up, port) in &kr.queues {
            for (q, b) in [("b_uplink", up), ("switch_to_b", port)] {
                rows.push(vec![
                    rr.mode.name().to_string(),
                    q.to_string(),
                    format!("{t:.3}"),
                    b.to_string(),
                ]);
            }
        }
    }
    write_csv(
        &dir.join("queues.csv"),
        &["mode", "queue", "time_s", "bytes"],
        &rows,
    )?;
    files.push("queues.csv".to_string());
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|(rr, _)| {
            rr.ab_srtt.iter().map(|&(t, v)| {
                vec![
                    "kernel".to_string(),
                    rr.mode.name().to_string(),
                    format!("{t:.3}"),
                    format!("{v:.1}"),
                ]
            })
        })
        .chain(sim_first.iter().flat_map(|rr| {
            rr.ab_srtt.iter().map(|&(t, v)| {
                vec![
                    "simulator".to_string(),
                    rr.mode.name().to_string(),
                    format!("{t:.3}"),
                    format!("{v:.1}"),
                ]
            })
        }))
        .collect();
    write_csv(
        &dir.join("rtt.csv"),
        &["source", "mode", "time_s", "ab_srtt_ms"],
        &rows,
    )?;
    files.push("rtt.csv".to_string());
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x:.4}")
        } else {
            String::new()
        }
    };
    let rows: Vec<Vec<String>> = kernel
        .iter()
        .chain(sim.iter())
        .map(|s| {
            vec![
                s.source.to_string(),
                s.mode.to_string(),
                s.runs.to_string(),
                format!("{:.0}", s.ab_phase1_bps),
                format!("{:.0}", s.ab_phase2_bps),
                f(s.ab_phase2_cov),
                format!("{:.0}", s.bc_phase2_bps),
                format!("{:.0}", s.towards_b_phase2_bps),
                format!("{:.0}", s.cb_phase2_bps),
                format!("{:.0}", s.ba_phase2_bps),
                f(s.var_10s),
                f(s.var_10s_within),
                f(s.ab_srtt_phase1_ms),
                f(s.ab_srtt_phase2_ms),
                f(s.breakdowns),
                format!("{:.1}", s.drops_b_uplink),
                format!("{:.1}", s.drops_switch_to_b),
            ]
        })
        .collect();
    write_csv(
        &dir.join("modes.csv"),
        &[
            "source",
            "mode",
            "runs",
            "ab_phase1_bps",
            "ab_phase2_bps",
            "ab_phase2_cov",
            "bc_phase2_bps",
            "towards_b_phase2_bps",
            "cb_phase2_bps",
            "ba_phase2_bps",
            "var_10s",
            "var_10s_within",
            "ab_srtt_phase1_ms",
            "ab_srtt_phase2_ms",
            "breakdowns",
            "drops_b_uplink",
            "drops_switch_to_b",
        ],
        &rows,
    )?;
    files.push("modes.csv".to_string());

    // Figures: goodput per mode (kernel), A→B's RTT and B's queue, and the
    // phase-2 goodput towards B beside the simulator's.
    let mbit = |s: &[f64]| -> Vec<(f64, f64)> {
        s.iter()
            .enumerate()
            .map(|(t, &v)| (t as f64 + 0.5, v / 1e6))
            .collect()
    };
    let mut fig = Figure::new(
        format!(
            "Kernel TCP ({}, Linux {}): goodput per flow, 1 s bins; A→B {:.0}–{:.0} s, B→C {:.0}–{:.0} s",
            opts.cc,
            kernel_release(),
            tl.ab.0,
            tl.ab.1,
            tl.bc.0,
            tl.bc.1
        ),
        2,
    );
    // One y range for every panel, so that modes compare at a glance
    // (bins above the link rate: bytes released at once when a
    // retransmission fills a hole).
    let top = runs
        .iter()
        .flat_map(|(rr, _)| [&rr.ab, &rr.ba, &rr.bc, &rr.cb])
        .flat_map(|s| s.iter())
        .fold(10e6_f64, |a, &b| a.max(b))
        / 1e6;
    for (rr, _) in runs.iter() {
        let mut c = Chart::new(rr.mode.name())
            .x_label("time (s)")
            .y_label("goodput (Mbit/s)")
            .x_range(0.0, tl.duration)
            .y_range(0.0, top.ceil());
        for (name, s) in flow_names.iter().zip([&rr.ab, &rr.ba, &rr.bc, &rr.cb]) {
            if s.iter().any(|&v| v > 0.0) {
                c.push_series(Series::line(name.to_string(), mbit(s)));
            }
        }
        fig = fig.panel(c);
    }
    fig.write_svg(dir.join("goodput.svg"))?;
    files.insert(0, "goodput.svg".to_string());
    let mut rtt = Chart::new("A→B's smoothed RTT (kernel, from ss)")
        .x_label("time (s)")
        .y_label("SRTT (s)")
        .x_range(0.0, tl.duration);
    let mut queue = Chart::new("B's uplink queue (kernel; with ACKs first, both classes together)")
        .x_label("time (s)")
        .y_label("occupancy (MB)")
        .x_range(0.0, tl.duration);
    for (rr, kr) in runs.iter() {
        rtt.push_series(Series::line(
            rr.mode.name(),
            rr.ab_srtt.iter().map(|&(t, ms)| (t, ms / 1e3)).collect(),
        ));
        queue.push_series(Series::line(
            rr.mode.name(),
            kr.queues.iter().map(|q| (q.0, q.1 as f64 / 1e6)).collect(),
        ));
    }
    Figure::new("A→B's RTT and B's uplink queue, per mode", 1)
        .panel(rtt)
        .panel(queue)
        .write_svg(dir.join("rtt.svg"))?;
    files.insert(1, "rtt.svg".to_string());
    let mut bars = BarChart::new(format!(
        "Mean goodput per flow towards B, {:.0}–{:.0} s (kernel: one run per mode{})",
        tl.phase2().0,
        tl.phase2().1,
        if sim.is_empty() {
            String::new()
        } else {
            format!("; simulator: {sim_runs} runs")
        }
    ))
    .y_label("goodput (Mbit/s)")
    .x_label("mode");
    for src in [&kernel, &sim] {
        if let Some(first) = src.first() {
            bars = bars.group(
                first.source,
                src.iter()
                    .map(|s| (s.mode.to_string(), s.towards_b_phase2_bps / 1e6))
                    .collect(),
            );
        }
    }
    bars.write_svg(dir.join("modes.svg"))?;
    files.insert(2, "modes.svg".to_string());

    let (p1, p2, vw) = (tl.phase1(), tl.phase2(), tl.var_window());
    write_summary(
        dir,
        &Summary {
            experiment: "lab overlay-ack (seed 000, kernel TCP)",
            command: *command,
            kernel: kernel_release(),
            setup: SetupOut {
                link_rate_bps: LINK_BPS,
                host_queue: opts.host_queue,
                switch_buffer: opts.switch_buffer,
                ack_first: "HTB at B's uplink: ACK class prio 0, 0.5 Mbit/s; data class prio 1, 9 Mbit/s; both borrow up to 9.5 Mbit/s",
                cc: &opts.cc,
                secs_per_mode: opts.secs,
                timeline: TimelineOut {
                    ab_s: tl.ab,
                    bc_s: tl.bc,
                    phase1_s: p1,
                    phase2_s: p2,
                    var_window_s: vw,
                },
            },
            modes: kernel,
            modes_not_run: not_run,
            simulator: sim,
            simulator_runs: sim_runs,
            claims: &claims,
        },
    )?;
    files.insert(0, "summary.json".to_string());
    Ok((claims, files))
}

/// Runs the experiment and writes its outputs into `opts.out`: after each
/// kernel mode the outputs so far (so that a run stopped later keeps the
/// modes it finished), and at the end everything with the simulator's.
pub fn run(opts: &Options, command: Option<&str>, progress: &dyn Progress) -> Result<Outcome> {
    hopwise_lab::topology::require_for("overlay-ack")?;
    opts.check()?;
    let tl = opts.timeline();
    let secs = tl.duration.ceil() as usize;
    let dir = &opts.out;
    let mut r = Results {
        opts,
        tl: &tl,
        command,
        kernel: Vec::new(),
        runs: Vec::new(),
        sim: Vec::new(),
        sim_first: Vec::new(),
        sim_runs: 0,
    };
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
        r.kernel.push(st);
        r.runs.push((rr, kr));
        let rest: Vec<&str> = opts.modes[i + 1..].iter().map(|m| m.name()).collect();
        write_outputs(&r, &rest)?;
    }
    let done: Vec<Mode> = r.runs.iter().map(|(rr, _)| rr.mode).collect();
    if done.is_empty() {
        if let Some(e) = failure {
            return Err(e);
        }
    }
    let not_run: Vec<&str> = opts
        .modes
        .iter()
        .filter(|m| !done.contains(m))
        .map(|m| m.name())
        .collect();

    // The simulator on the same timeline (its TCP is the paper's Linux 2.6.26).
    r.sim_runs = if sim_on { opts.sim_runs } else { 0 };
    if r.sim_runs > 0 {
        progress.start(
            "simulator (hopwise's TCP set up as Linux 2.6.26)",
            done.len() as u64 * r.sim_runs as u64,
        );
        for &mode in &done {
            let mut rs = Vec::new();
            for seed in 1..=r.sim_runs as u64 {
                rs.push(sim_setup(mode, &tl, opts, seed).run()?);
                progress.inc();
            }
            let refs: Vec<&RunResult> = rs.iter().collect();
            r.sim.push(Stats::from(
                "simulator",
                &analyse(mode, &refs, &sim_setup(mode, &tl, opts, 1)),
            ));
            r.sim_first.push(rs.swap_remove(0));
        }
        progress.finish();
    }
    let (claims, files) = write_outputs(&r, &not_run)?;
    if let Some(e) = failure {
        let names: Vec<&str> = done.iter().map(|m| m.name()).collect();
        return Err(e.context(format!(
            "lab overlay-ack stopped at {}; the results of {} are in {} (summary.json, CSVs, figures; no report.html)",
            not_run[0],
            names.join(", "),
            dir.display()
        )));
    }
    Ok(Outcome {
        claims,
        files,
        data: vec![
            ("goodput.svg".into(), "goodput.csv".into()),
            ("rtt.svg".into(), "rtt.csv".into()),
            ("rtt.svg".into(), "queues.csv".into()),
            ("modes.svg".into(), "modes.csv".into()),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(mode: Mode) -> Vec<String> {
        let n = Names::new_instance();
        plan(&n, mode, &Options::new(false))
            .iter()
            .map(|(prog, a)| display(prog, a))
            .collect()
    }

    #[test]
    fn plan_shapes_every_uplink_and_port_and_classifies_only_at_b() {
        let plain = lines(Mode::Plain);
        let count = |l: &[String], s: &str| l.iter().filter(|x| x.contains(s)).count();
        // Three hosts: each with a device bridge, plus the switch's.
        assert_eq!(count(&plain, "type bridge"), 4);
        assert_eq!(count(&plain, "master br0"), 9);
        assert_eq!(count(&plain, "gso_max_segs 1"), 12);
        assert_eq!(count(&plain, "pfifo limit 1000"), 3);
        assert_eq!(count(&plain, "bfifo limit 64000"), 3);
        assert_eq!(count(&plain, "u32"), 0);
        let prio = lines(Mode::AckPrio);
        // B's uplink has two leaves and eleven filters (TCP header 20–60 B).
        assert_eq!(count(&prio, "pfifo limit 1000"), 4);
        assert_eq!(count(&prio, "flowid 1:10"), 11);
        assert!(prio
            .iter()
            .all(|l| !l.contains("u32") || l.contains("-mb ")));
        assert!(prio
            .iter()
            .any(|l| l.contains("match u16 52 0xffff at 2 match u8 0x80 0xf0 at 32")));
        assert!(prio
            .iter()
            .any(|l| l.contains("classid 1:10 htb rate 500000bit ceil 9500000bit prio 0")));
        let len64 = lines(Mode::AckPrioLen64);
        assert_eq!(count(&len64, "flowid 1:10"), 1);
        assert!(len64
            .iter()
            .any(|l| l.contains("match u16 0 0xffc0 at 2 flowid 1:10")));
        assert_eq!(count(&lines(Mode::SplitAckPrio), "flowid 1:10"), 11);
        assert_eq!(count(&lines(Mode::Bidir), "u32"), 0);
    }

    #[test]
    fn the_no_payload_filters_match_exactly_the_header_only_lengths() {
        // For each filter, the total length it matches equals 20 + 4 × doff.
        for f in ack_filters(Mode::AckPrio) {
            let len: u32 = f[f.iter().position(|x| x == "u16").unwrap() + 1]
                .parse()
                .unwrap();
            let doff_hex = &f[f.iter().rposition(|x| x == "u8").unwrap() + 1];
            let doff = u32::from_str_radix(doff_hex.trim_start_matches("0x"), 16).unwrap() >> 4;
            assert_eq!(len, 20 + 4 * doff);
            assert!((5..=15).contains(&doff));
        }
    }

    #[test]
    fn ss_rtt_is_parsed_and_absent_connections_give_none() {
        let out = "ESTAB 0 0 10.203.0.1:41234 10.203.0.2:5001\n\t cubic wscale:7,7 rto:1328 rtt:1116.52/4.1 ato:40 mss:1448\n";
        assert_eq!(parse_ss_rtt(out), Some(1116.52));
        assert_eq!(parse_ss_rtt(""), None);
        assert_eq!(parse_ss_rtt("rtt:x/1"), None);
    }

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
