//! The access-link topology of seed 004's Fig. 2, in three namespaces:
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
//! What the lab does not model: propagation delay (netem is not required;
//! the veth hops take microseconds, against queueing delays of 0.1–1.2 s
//! here) and distinct hosts for D1 and U1 (both are in INET). HTB and the
//! FIFOs count Ethernet frames (1514 B for a full segment, where the
//! simulator counts 1500 B packets), so a 30 000 B buffer holds 19 full
//! frames here and 20 packets there.

use crate::cmd::{args, display, run};
use crate::netns::Netns;
use crate::tc::{self, QdiscStats};
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
    pub(crate) fn qdisc(self) -> [String; 3] {
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
}

/// The namespaces' names for one lab instance.
#[derive(Clone, Debug)]
pub struct Names {
    pub inet: String,
    pub rtr: String,
    pub home: String,
}

impl Names {
    /// Names unique to a new lab instance: `hwlab-PID-N-inet`, …
    pub fn new_instance() -> Names {
        let p = crate::netns::instance_prefix(PREFIX);
        Names {
            inet: format!("{p}-inet"),
            rtr: format!("{p}-rtr"),
            home: format!("{p}-home"),
        }
    }
}

/// The commands that wire up three existing namespaces: veth pairs,
/// addresses, routes, forwarding and the two bottleneck queues. Pure, so
/// that tests can read it.
pub fn plan(n: &Names, spec: &AccessSpec) -> Vec<(&'static str, Vec<String>)> {
    let mut p: Vec<(&'static str, Vec<String>)> = Vec::new();
    let ip = |a: &[&str]| ("ip", args(a));
    p.push(ip(&[
        "link", "add", INET_DEV, "netns", &n.inet, "type", "veth", "peer", "name", UP_DEV, "netns",
        &n.rtr,
    ]));
    p.push(ip(&[
        "link", "add", HOME_DEV, "netns", &n.home, "type", "veth", "peer", "name", DOWN_DEV,
        "netns", &n.rtr,
    ]));
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
        // One MSS per skb: qdiscs then count and drop wire-sized packets.
        p.push(ip(&[
            "-n",
            ns,
            "link",
            "set",
            dev,
            "up",
            "gso_max_segs",
            "1",
        ]));
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

/// A built access-link lab. Dropping it deletes the namespaces.
pub struct AccessLab {
    pub inet: Netns,
    pub rtr: Netns,
    pub home: Netns,
    pub spec: AccessSpec,
}

impl AccessLab {
    /// Creates the namespaces and runs [`plan`].
    pub fn build(names: &Names, spec: &AccessSpec) -> Result<AccessLab> {
        let lab = AccessLab {
            inet: Netns::create(&names.inet)?,
            rtr: Netns::create(&names.rtr)?,
            home: Netns::create(&names.home)?,
            spec: spec.clone(),
        };
        for (prog, a) in plan(names, spec) {
            run(prog, &a).with_context(|| format!("building the lab: {}", display(prog, &a)))?;
        }
        Ok(lab)
    }

    /// The router's qdisc statistics.
    pub fn qdiscs(&self) -> Result<Vec<QdiscStats>> {
        let out = self.rtr.tc(&["-s", "-j", "qdisc", "show"])?;
        tc::parse(&out, &format!("tc -n {} -s -j qdisc show", self.rtr.name()))
    }
}

/// The failed checks that keep `experiment` from running, as lines.
fn blocking(items: &[CheckItem], experiment: &str) -> Vec<String> {
    items
        .iter()
        .filter(|c| {
            !c.ok
                && ONLY_FOR
                    .iter()
                    .all(|&(what, only)| what != c.what || only == experiment)
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
            .map(|_| "a Linux bridge, the switch of `lab backtap` and `lab overlay-ack`".into()),
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
            .map(|_| "ACKs into a class of their own (`lab overlay-ack`)".into()),
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

/// Checks that only one experiment needs: (the check's `what`, the experiment).
const ONLY_FOR: [(&str, &str); 2] = [
    ("iproute2 ss", "overlay-ack"),
    ("u32 classifier", "overlay-ack"),
];

/// Fails with every failed check if the lab cannot run here; checks that
/// only another experiment needs (`ss`, the u32 classifier) are left out.
pub fn require() -> Result<()> {
    require_for("")
}

/// [`require`] for `experiment` (e.g. "overlay-ack"), with the checks that
/// only it needs.
pub fn require_for(experiment: &str) -> Result<()> {
    let failed = blocking(&check(), experiment);
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
    fn a_check_only_overlay_ack_needs_blocks_only_overlay_ack() {
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
        assert!(blocking(&items, "").is_empty());
        assert!(blocking(&items, "pendulum").is_empty());
        assert_eq!(
            blocking(&items, "overlay-ack"),
            vec!["u32 classifier: why", "iproute2 ss: why"]
        );
        let items = [item("qdisc htb", false), item("u32 classifier", true)];
        assert_eq!(blocking(&items, ""), vec!["qdisc htb: why"]);
    }

    fn spec() -> AccessSpec {
        AccessSpec {
            down_rate_bps: 2_400_000,
            up_rate_bps: 196_000,
            down_buffer: Buffer::Bytes(30_000),
            up_buffer: Buffer::Packets(10),
            cc: "reno".into(),
            delayed_acks: true,
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
