//! An access-link topology (Internet side, router, home side, as in seed
//! 004's Fig. 2), in three namespaces (four
//! with delays, below):
//!
//! ```text
//!  INET (D1, U1) ── i0 ═ r-inet ── RTR ── r-home ═ h0 ── HOME (D2, U2)
//!                          ▲ uplink queue       ▲ downlink queue
//! ```
//!
//! The router's egress towards HOME is the downlink (R1 → R2 in the paper),
//! its egress towards INET the uplink (R2 → R1). Each is an HTB class at
//! the link's rate with a `bfifo` (bytes) or `pfifo` (packets) leaf as the
//! buffer. The hosts' own interfaces have no qdisc (`noqueue`) and are never
//! the bottleneck, so TCP Small Queues plays no part: the queues are in
//! another box, as in the paper. GSO is off on every veth
//! (`gso_max_segs 1`), so that the qdiscs see wire-sized packets.
//!
//! Propagation delay is optional ([`AccessSpec::delay`]): without it the
//! veth hops take microseconds, against queueing delays of 0.1–1.2 s here.
//! With it, each host's link to the router runs through a fourth namespace,
//! `wan`, where the [delay line](crate::delay) holds every frame for that
//! side's one-way delay:
//!
//! ```text
//!  INET ── i0 ═ w-inet ┄ WAN ┄ w-rinet ═ r-inet ── RTR ── r-home ═ w-rhome ┄ WAN ┄ w-home ═ h0 ── HOME
//! ```
//!
//! Not modelled: distinct hosts for D1 and U1 (both are in INET, so the
//! download and the upload have the same base round trip). HTB and the
//! FIFOs count Ethernet frames (1514 B for a full segment, where the
//! simulator counts 1500 B packets), so a 30 000 B buffer holds 19 full
//! frames here and 20 packets there.

use crate::cmd::{args, display, run};
use crate::delay::{DelayLine, LinkStats};
use crate::netns::Netns;
use crate::tc::{self, QdiscStats};
use crate::traffic::Clock;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::net::Ipv4Addr;

/// Interface names inside the namespaces.
pub const INET_DEV: &str = "i0";
pub const HOME_DEV: &str = "h0";
/// The router's side towards INET: the uplink queue.
pub const UP_DEV: &str = "r-inet";
/// The router's side towards HOME: the downlink queue.
pub const DOWN_DEV: &str = "r-home";
/// Handle of the buffer (leaf) qdisc on both router interfaces.
pub const LEAF: &str = "10:";

pub const INET_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 1, 1);
pub const HOME_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 2, 1);
const RTR_INET: &str = "10.201.1.254";
const RTR_HOME: &str = "10.201.2.254";

/// The `wan` namespace's interfaces when the links are delayed: towards
/// INET and towards the router's `r-inet`, towards the router's `r-home`
/// and towards HOME.
pub const WAN_DEVS: [&str; 4] = ["w-inet", "w-rinet", "w-rhome", "w-home"];

/// Prefix of every namespace the lab creates (`hopwise lab clean` removes them).
pub const PREFIX: &str = "hwlab-";

/// A bottleneck buffer, counted in bytes (`bfifo`) or packets (`pfifo`);
/// in summary.json as it prints (`"30000 B"`, `"50 packets"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    Bytes(u64),
    Packets(u64),
}

impl Serialize for Buffer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Buffer {
    /// Parses "30000B", "30kB", "64KiB" or "50pkt".
    pub fn parse(s: &str) -> Result<Buffer> {
        let t = s.trim();
        if t.starts_with('-') {
            bail!("buffer {s:?}: must be above zero");
        }
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let n: u64 = num.parse().map_err(|_| {
            anyhow::anyhow!(
                "buffer {s:?}: expected a whole number and a unit, e.g. 30000B, 30kB or 50pkt"
            )
        })?;
        let b = match unit.trim() {
            "" => bail!(
                "buffer {s:?}: needs a unit: {n}B for bytes, {n}kB, {n}KiB or {n}pkt for packets"
            ),
            "B" => Buffer::Bytes(n),
            "kB" => Buffer::Bytes(n * 1000),
            "KiB" => Buffer::Bytes(n * 1024),
            "pkt" | "packets" => Buffer::Packets(n),
            u => bail!("buffer {s:?}: unknown unit {u:?} (use B, kB, KiB or pkt)"),
        };
        match b {
            Buffer::Bytes(0) | Buffer::Packets(0) => bail!("buffer {s:?}: must be above zero"),
            Buffer::Bytes(b) if b < 1500 => {
                bail!("buffer {s:?}: holds no full-sized packet (at least 1500 B)")
            }
            _ => Ok(b),
        }
    }

    /// The same buffer as the simulator's queue limit.
    pub fn limit(self) -> hopwise_sim::spec::Limit {
        use hopwise_sim::spec::Limit;
        match self {
            Buffer::Bytes(n) => Limit::Bytes(n),
            Buffer::Packets(n) => Limit::Packets(n),
        }
    }

    /// The leaf qdisc's arguments: `bfifo limit N` or `pfifo limit N`.
    pub fn qdisc(self) -> [String; 3] {
        match self {
            Buffer::Bytes(b) => ["bfifo".into(), "limit".into(), b.to_string()],
            Buffer::Packets(p) => ["pfifo".into(), "limit".into(), p.to_string()],
        }
    }
}

impl std::fmt::Display for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Buffer::Bytes(b) => write!(f, "{b} B"),
            Buffer::Packets(p) => write!(f, "{p} packets"),
        }
    }
}

/// The access link and the hosts' TCP.
#[derive(Clone, Debug, Serialize)]
pub struct AccessSpec {
    pub down_rate_bps: u64,
    pub up_rate_bps: u64,
    pub down_buffer: Buffer,
    pub up_buffer: Buffer,
    /// The senders' congestion control (`TCP_CONGESTION` on each sending
    /// socket; a namespace's default may only be set to a module listed in
    /// `net.ipv4.tcp_allowed_congestion_control`).
    pub cc: String,
    /// Linux's delayed ACKs (the default). When off, both hosts' routes
    /// carry `quickack 1`, so that every segment is acknowledged at once.
    pub delayed_acks: bool,
    /// One-way propagation delay between each host and the router (`None`:
    /// plain veth pairs).
    pub delay: Option<SideDelays>,
}

/// One-way delays of the two access hops, each direction alike, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SideDelays {
    /// INET ↔ router.
    pub inet_ms: f64,
    /// Router ↔ HOME.
    pub home_ms: f64,
}

impl SideDelays {
    /// Both delays are finite, at least 0 and at most 10 s.
    pub fn check(&self) -> Result<()> {
        for (what, v) in [("INET", self.inet_ms), ("HOME", self.home_ms)] {
            if !(0.0..=10_000.0).contains(&v) {
                bail!("the {what} side's one-way delay {v} ms is not in 0–10 000 ms");
            }
        }
        Ok(())
    }

    /// The delay line's two links: INET side, then HOME side.
    pub fn links(&self) -> Vec<crate::delay::Link> {
        [
            ("INET-router", WAN_DEVS[0], WAN_DEVS[1], self.inet_ms),
            ("router-HOME", WAN_DEVS[2], WAN_DEVS[3], self.home_ms),
        ]
        .map(|(name, a_dev, b_dev, ms)| {
            let dir = crate::delay::Dir {
                delay: std::time::Duration::from_secs_f64(ms / 1e3),
                loss: 0.0,
            };
            crate::delay::Link {
                name: name.into(),
                a_dev: a_dev.into(),
                b_dev: b_dev.into(),
                ab: dir,
                ba: dir,
            }
        })
        .to_vec()
    }
}

/// The namespaces' names for one lab instance.
#[derive(Clone, Debug)]
pub struct Names {
    pub inet: String,
    pub rtr: String,
    pub home: String,
    /// Created only when the links are delayed.
    pub wan: String,
}

impl Names {
    /// Names unique to a new lab instance: `hwlab-PID-N-inet`, …
    pub fn new_instance() -> Names {
        let p = crate::netns::instance_prefix(PREFIX);
        Names {
            inet: format!("{p}-inet"),
            rtr: format!("{p}-rtr"),
            home: format!("{p}-home"),
            wan: format!("{p}-wan"),
        }
    }
}

/// The commands that wire up the existing namespaces (three, or four with
/// delays): veth pairs,
/// addresses, routes, forwarding and the two bottleneck queues. Pure, so
/// that tests can read it.
pub fn plan(n: &Names, spec: &AccessSpec) -> Vec<(&'static str, Vec<String>)> {
    let mut p: Vec<(&'static str, Vec<String>)> = Vec::new();
    let ip = |a: &[&str]| ("ip", args(a));
    // One MSS per skb: the qdiscs count and drop, and the delay line copies,
    // wire-sized frames.
    let up_one_mss =
        |ns: &str, dev: &str| ip(&["-n", ns, "link", "set", dev, "up", "gso_max_segs", "1"]);
    // Each host's veth pair to the router; through `wan` when delayed.
    if spec.delay.is_some() {
        for ns in [&n.inet, &n.rtr, &n.home, &n.wan] {
            p.extend(crate::wan::no_ipv6(ns));
        }
        let [w_inet, w_rinet, w_rhome, w_home] = WAN_DEVS;
        for (dev, ns, peer) in [
            (INET_DEV, &n.inet, w_inet),
            (w_rinet, &n.wan, UP_DEV),
            (w_rhome, &n.wan, DOWN_DEV),
            (HOME_DEV, &n.home, w_home),
        ] {
            let peer_ns = if ns == &n.wan { &n.rtr } else { &n.wan };
            p.push(ip(&[
                "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", peer, "netns",
                peer_ns,
            ]));
        }
        for dev in WAN_DEVS {
            p.push(up_one_mss(&n.wan, dev));
        }
    } else {
        for (dev, ns, peer) in [(INET_DEV, &n.inet, UP_DEV), (HOME_DEV, &n.home, DOWN_DEV)] {
            p.push(ip(&[
                "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", peer, "netns",
                &n.rtr,
            ]));
        }
    }
    let inet = format!("{INET_ADDR}/24");
    let home = format!("{HOME_ADDR}/24");
    let rtr_inet = format!("{RTR_INET}/24");
    let rtr_home = format!("{RTR_HOME}/24");
    for (ns, addr, dev) in [
        (&n.inet, &inet, INET_DEV),
        (&n.rtr, &rtr_inet, UP_DEV),
        (&n.home, &home, HOME_DEV),
        (&n.rtr, &rtr_home, DOWN_DEV),
    ] {
        p.push(ip(&["-n", ns, "addr", "add", addr, "dev", dev]));
        p.push(up_one_mss(ns, dev));
    }
    for (ns, via) in [(&n.inet, RTR_INET), (&n.home, RTR_HOME)] {
        let mut r = args(&["-n", ns, "route", "add", "default", "via", via]);
        if !spec.delayed_acks {
            // The route's RTAX_QUICKACK: no delayed ACKs for its sockets.
            r.extend(args(&["quickack", "1"]));
        }
        p.push(("ip", r));
    }
    p.push(ip(&[
        "netns",
        "exec",
        &n.rtr,
        "sysctl",
        "-qw",
        "net.ipv4.ip_forward=1",
    ]));
    for (dev, rate, buf) in [
        (DOWN_DEV, spec.down_rate_bps, spec.down_buffer),
        (UP_DEV, spec.up_rate_bps, spec.up_buffer),
    ] {
        let rate = format!("{rate}bit");
        p.push((
            "tc",
            args(&[
                "-n", &n.rtr, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default",
                "1",
            ]),
        ));
        p.push((
            "tc",
            args(&[
                "-n", &n.rtr, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                "rate", &rate, "ceil", &rate,
            ]),
        ));
        let mut leaf = args(&[
            "-n", &n.rtr, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", LEAF,
        ]);
        leaf.extend(buf.qdisc());
        p.push(("tc", leaf));
    }
    p
}

/// A built access-link lab. Dropping it stops the delay line, if any, and
/// deletes the namespaces.
pub struct AccessLab {
    /// Declared first, so that it stops before its namespace goes.
    line: Option<DelayLine>,
    pub inet: Netns,
    pub rtr: Netns,
    pub home: Netns,
    pub wan: Option<Netns>,
    pub spec: AccessSpec,
}

impl AccessLab {
    /// Creates the namespaces, runs [`plan`] and, with delays, starts the
    /// delay line.
    pub fn build(names: &Names, spec: &AccessSpec) -> Result<AccessLab> {
        if let Some(d) = &spec.delay {
            d.check()?;
        }
        let mut lab = AccessLab {
            line: None,
            inet: Netns::create(&names.inet)?,
            rtr: Netns::create(&names.rtr)?,
            home: Netns::create(&names.home)?,
            wan: match spec.delay {
                Some(_) => Some(Netns::create(&names.wan)?),
                None => None,
            },
            spec: spec.clone(),
        };
        for (prog, a) in plan(names, spec) {
            run(prog, &a).with_context(|| format!("building the lab: {}", display(prog, &a)))?;
        }
        if let (Some(d), Some(wan)) = (&spec.delay, &lab.wan) {
            lab.line = Some(DelayLine::spawn(wan.open()?, d.links(), 0, Clock::start())?);
        }
        Ok(lab)
    }

    /// Fails with the delay line's error if it has stopped by itself.
    pub fn check_line(&mut self) -> Result<()> {
        self.line.as_mut().map_or(Ok(()), DelayLine::check)
    }

    /// Stops the delay line; what its two links did (INET side first), or
    /// nothing without delays.
    pub fn stop_line(&mut self) -> Result<Vec<LinkStats>> {
        self.line.take().map_or(Ok(Vec::new()), DelayLine::stop)
    }

    /// The router's qdisc statistics.
    pub fn qdiscs(&self) -> Result<Vec<QdiscStats>> {
        let out = self.rtr.tc(&["-s", "-j", "qdisc", "show"])?;
        tc::parse(&out, &format!("tc -n {} -s -j qdisc show", self.rtr.name()))
    }
}

/// The failed checks that keep an experiment needing the `optional`
/// checks (of [`OPTIONAL`]) from running, as lines.
fn blocking(items: &[CheckItem], optional: &[&str]) -> Vec<String> {
    items
        .iter()
        .filter(|c| {
            !c.ok && (!OPTIONAL.contains(&c.what.as_str()) || optional.contains(&c.what.as_str()))
        })
        .map(|c| format!("{}: {}", c.what, c.detail))
        .collect()
}

/// One line of [`check`]'s report.
#[derive(Clone, Debug, Serialize)]
pub struct CheckItem {
    pub what: String,
    pub ok: bool,
    pub detail: String,
}

/// Probes what the lab needs: root, `ip`, `tc` and `ss`, namespaces, veth,
/// the HTB, bfifo and pfifo qdiscs and the u32 classifier, plus the congestion control modules
/// the kernel offers. Builds and removes a scratch namespace.
pub fn check() -> Vec<CheckItem> {
    let mut out = Vec::new();
    let mut item = |what: &str, r: Result<String>| {
        let (ok, detail) = match r {
            Ok(d) => (true, d),
            Err(e) => (false, format!("{e:#}")),
        };
        out.push(CheckItem {
            what: what.into(),
            ok,
            detail,
        });
        ok
    };
    let euid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        });
    item(
        "root",
        match euid.as_deref() {
            Some("0") => Ok("effective uid 0".into()),
            Some(u) => Err(anyhow::anyhow!("effective uid {u}: run as root (namespaces and qdiscs need CAP_NET_ADMIN and CAP_SYS_ADMIN)")),
            None => Err(anyhow::anyhow!("cannot read /proc/self/status: is this Linux?")),
        },
    );
    let have_ip = item(
        "iproute2 ip",
        run("ip", &args(&["-V"])).map(|s| s.trim().to_string()),
    );
    item(
        "iproute2 tc",
        run("tc", &args(&["-V"])).map(|s| s.trim().to_string()),
    );
    item(
        "iproute2 ss",
        run("ss", &args(&["-V"])).map(|s| s.trim().to_string()),
    );
    item(
        "congestion control modules",
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .map(|s| s.trim().to_string())
            .context("cannot read /proc/sys/net/ipv4/tcp_available_congestion_control"),
    );
    if !have_ip {
        return out;
    }
    let name = format!("{}-check", crate::netns::instance_prefix(PREFIX));
    let ns = match Netns::create(&name) {
        Ok(ns) => {
            item("network namespaces", Ok(format!("created {name}")));
            ns
        }
        Err(e) => {
            item("network namespaces", Err(e));
            return out;
        }
    };
    if !item(
        "veth",
        ns.ip(&[
            "link", "add", "chk0", "type", "veth", "peer", "name", "chk1",
        ])
        .map(|_| "a veth pair inside the namespace".into()),
    ) {
        return out;
    }
    item(
        "gso_max_segs",
        ns.ip(&["link", "set", "chk0", "gso_max_segs", "1"])
            .map(|_| "one segment per packet on a veth".into()),
    );
    item(
        "bridge",
        ns.ip(&["link", "add", "chkbr", "type", "bridge"])
            .map(|_| "a Linux bridge (a switch between namespaces)".into()),
    );
    item(
        "packet socket",
        crate::capture::probe().map(|_| "AF_PACKET for the router's capture".into()),
    );
    let htb = ns
        .tc(&[
            "qdisc", "add", "dev", "chk0", "root", "handle", "1:", "htb", "default", "1",
        ])
        .and_then(|_| {
            ns.tc(&[
                "class", "add", "dev", "chk0", "parent", "1:", "classid", "1:1", "htb", "rate",
                "1mbit",
            ])
        });
    if item("qdisc htb", htb.map(|_| "rate-limited class".into())) {
        item(
            "qdisc bfifo",
            ns.tc(&[
                "qdisc", "add", "dev", "chk0", "parent", "1:1", "handle", "10:", "bfifo", "limit",
                "30000",
            ])
            .map(|_| "buffers in bytes".into()),
        );
        item(
            "qdisc pfifo",
            ns.tc(&[
                "class", "add", "dev", "chk0", "parent", "1:", "classid", "1:2", "htb", "rate",
                "1mbit",
            ])
            .and_then(|_| {
                ns.tc(&[
                    "qdisc", "add", "dev", "chk0", "parent", "1:2", "handle", "20:", "pfifo",
                    "limit", "50",
                ])
            })
            .map(|_| "buffers in packets".into()),
        );
        item(
            "u32 classifier",
            ns.tc(&[
                "filter", "add", "dev", "chk0", "parent", "1:", "protocol", "ip", "prio", "1",
                "u32", "match", "u16", "0", "0xffc0", "at", "2", "flowid", "1:2",
            ])
            .map(|_| "ACKs into a class of their own".into()),
        );
    }
    item(
        "qdisc statistics as JSON",
        ns.tc(&["-s", "-j", "qdisc", "show", "dev", "chk0"])
            .and_then(|s| tc::parse(&s, "tc -s -j qdisc show"))
            .map(|q| format!("{} qdiscs read", q.len())),
    );
    out
}

/// Checks that an experiment needs only if it says so ([`require_with`]):
/// reading TCP state with `ss`, and steering packets into classes with the
/// u32 classifier.
pub const OPTIONAL: [&str; 2] = ["iproute2 ss", "u32 classifier"];

/// Fails with every failed check if the lab cannot run here; the
/// [`OPTIONAL`] checks are left out.
pub fn require() -> Result<()> {
    require_with(&[])
}

/// [`require`], with those of the [`OPTIONAL`] checks an experiment needs.
pub fn require_with(optional: &[&str]) -> Result<()> {
    let failed = blocking(&check(), optional);
    if failed.is_empty() {
        Ok(())
    } else {
        bail!(
            "the lab cannot run on this machine (`hopwise lab check` shows the details):\n  {}",
            failed.join("\n  ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_optional_check_blocks_only_an_experiment_that_needs_it() {
        let item = |what: &str, ok: bool| CheckItem {
            what: what.into(),
            ok,
            detail: "why".into(),
        };
        let items = [
            item("root", true),
            item("u32 classifier", false),
            item("iproute2 ss", false),
        ];
        assert!(blocking(&items, &[]).is_empty());
        assert_eq!(blocking(&items, &["iproute2 ss"]), vec!["iproute2 ss: why"]);
        assert_eq!(
            blocking(&items, &OPTIONAL),
            vec!["u32 classifier: why", "iproute2 ss: why"]
        );
        let items = [item("qdisc htb", false), item("u32 classifier", true)];
        assert_eq!(blocking(&items, &[]), vec!["qdisc htb: why"]);
    }

    fn spec() -> AccessSpec {
        AccessSpec {
            down_rate_bps: 2_400_000,
            up_rate_bps: 196_000,
            down_buffer: Buffer::Bytes(30_000),
            up_buffer: Buffer::Packets(10),
            cc: "reno".into(),
            delayed_acks: true,
            delay: None,
        }
    }

    #[test]
    fn plan_shapes_both_router_ports_and_nothing_on_the_hosts() {
        let n = Names::new_instance();
        let p = plan(&n, &spec());
        let lines: Vec<String> = p.iter().map(|(prog, a)| display(prog, a)).collect();
        let has = |s: &str| lines.iter().any(|l| l.contains(s));
        assert!(has(&format!("tc -n {} class add dev r-home parent 1: classid 1:1 htb rate 2400000bit ceil 2400000bit", n.rtr)), "{lines:#?}");
        assert!(has("dev r-home parent 1:1 handle 10: bfifo limit 30000"));
        assert!(has(
            "class add dev r-inet parent 1: classid 1:1 htb rate 196000bit"
        ));
        assert!(has("dev r-inet parent 1:1 handle 10: pfifo limit 10"));
        // Queues only on the router; GSO off on all four veth ends.
        assert!(p
            .iter()
            .filter(|(prog, _)| *prog == "tc")
            .all(|(_, a)| a[1] == n.rtr));
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("gso_max_segs 1"))
                .count(),
            4
        );
        // Congestion control is set per socket, not in the plan.
        assert!(!has("tcp_congestion_control"));
        // Delayed ACKs are the kernel's default: no route says otherwise.
        assert!(!has("quickack"));
    }

    #[test]
    fn with_delays_both_hosts_reach_the_router_through_the_wan() {
        let n = Names::new_instance();
        let d = SideDelays {
            inet_ms: 53.0,
            home_ms: 51.0,
        };
        let s = AccessSpec {
            delay: Some(d),
            ..spec()
        };
        let lines: Vec<String> = plan(&n, &s)
            .iter()
            .map(|(prog, a)| display(prog, a))
            .collect();
        let (inet, rtr, home, wan) = (&n.inet, &n.rtr, &n.home, &n.wan);
        for want in [
            format!("ip link add i0 netns {inet} type veth peer name w-inet netns {wan}"),
            format!("ip link add w-rinet netns {wan} type veth peer name r-inet netns {rtr}"),
            format!("ip link add w-rhome netns {wan} type veth peer name r-home netns {rtr}"),
            format!("ip link add h0 netns {home} type veth peer name w-home netns {wan}"),
            format!("ip netns exec {wan} sysctl -qew net.ipv6.conf.all.disable_ipv6=1"),
        ] {
            assert!(lines.contains(&want), "{want} missing: {lines:#?}");
        }
        // No direct pair between a host and the router.
        for host in [inet, home] {
            assert!(
                !lines.iter().any(|l| l.contains("link add")
                    && l.contains(host.as_str())
                    && l.contains(rtr.as_str())),
                "{lines:#?}"
            );
        }
        // GSO off on the four host and router ends and the four wan ends.
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("gso_max_segs 1"))
                .count(),
            8
        );
        // The queues stay on the router.
        assert!(lines
            .iter()
            .filter(|l| l.starts_with("tc "))
            .all(|l| l.contains(rtr)));
        // The line's links join the wan's ends pairwise, each side its delay.
        let links = d.links();
        assert_eq!(
            (links[0].a_dev.as_str(), links[0].b_dev.as_str()),
            ("w-inet", "w-rinet")
        );
        assert_eq!(
            (links[1].a_dev.as_str(), links[1].b_dev.as_str()),
            ("w-rhome", "w-home")
        );
        assert_eq!(links[0].ab.delay, std::time::Duration::from_millis(53));
        assert_eq!(links[1].ba.delay, std::time::Duration::from_millis(51));
        assert!(SideDelays {
            inet_ms: -1.0,
            home_ms: 0.0
        }
        .check()
        .is_err());
        assert!(SideDelays {
            inet_ms: f64::NAN,
            home_ms: 0.0
        }
        .check()
        .is_err());
    }

    #[test]
    fn without_delayed_acks_both_hosts_routes_ack_every_segment() {
        let n = Names::new_instance();
        let s = AccessSpec {
            delayed_acks: false,
            ..spec()
        };
        let lines: Vec<String> = plan(&n, &s)
            .iter()
            .map(|(prog, a)| display(prog, a))
            .collect();
        for (ns, via) in [(&n.inet, RTR_INET), (&n.home, RTR_HOME)] {
            let want = format!("ip -n {ns} route add default via {via} quickack 1");
            assert!(lines.contains(&want), "{want} missing: {lines:#?}");
        }
    }

    #[test]
    fn buffers_parse_with_units_and_reject_nonsense() {
        assert_eq!(Buffer::parse("30000B").unwrap(), Buffer::Bytes(30_000));
        assert_eq!(Buffer::parse("30kB").unwrap(), Buffer::Bytes(30_000));
        assert_eq!(Buffer::parse("64KiB").unwrap(), Buffer::Bytes(65_536));
        assert_eq!(Buffer::parse("50pkt").unwrap(), Buffer::Packets(50));
        for bad in ["", "30", "30 MB", "0pkt", "1000B", "x10pkt", "-5kB"] {
            let e = Buffer::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        // Each says what is wrong in the user's terms.
        for (bad, why) in [
            ("0", "needs a unit: 0B for bytes"),
            ("30", "needs a unit: 30B for bytes"),
            ("-5kB", "must be above zero"),
            ("x10pkt", "expected a whole number and a unit"),
            ("0B", "must be above zero"),
        ] {
            let e = Buffer::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
