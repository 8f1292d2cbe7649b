//! The lab's network: hosts A, B and C behind access devices on one
//! switch, as the commands that wire up a mode's namespaces; "ACKs first"
//! as HTB classes and `u32` filters at B's uplink; the queues and RTTs read
//! while it runs.

use super::{Options, DATA_SHARE, LINK_BPS, THROTTLE};
use crate::overlay_ack::Mode;
use anyhow::{Context, Result};
use hopwise_lab::cmd::{self, args, display};
use hopwise_lab::netns::Netns;
use hopwise_lab::tc::{self, QdiscStats};
use hopwise_lab::topology::{LEAF, PREFIX};
use std::net::{Ipv4Addr, SocketAddr};

/// Handle of the data class's leaf in the "ACKs first" modes (the ACK
/// class's leaf is [`LEAF`]).
const DATA_LEAF: &str = "20:";

pub const HOSTS: [&str; 3] = ["a", "b", "c"];
pub(super) const A: usize = 0;
pub(super) const B: usize = 1;
pub(super) const C: usize = 2;
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
    pub(super) fn b_queues(&self) -> Result<[(u64, u64); 2]> {
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

pub(super) fn ss_rtt(ns: &Netns, dst: SocketAddr) -> Result<Option<f64>> {
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
}
