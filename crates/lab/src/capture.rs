//! What enters and leaves the router's two bottleneck queues, captured with
//! a packet socket (`AF_PACKET`) in the router's namespace.
//!
//! A packet forwarded from INET to HOME is seen twice: as it arrives on
//! `r-inet` (it then joins the downlink queue) and as it leaves `r-home`
//! (outgoing packets reach packet sockets after the qdisc has released
//! them, so this is the moment it leaves the queue). The kernel stamps each
//! packet as it is seen (`SO_TIMESTAMPNS`). Matching arrivals with
//! departures gives each queue's exact occupancy over time; an arrival that
//! never leaves was dropped by the buffer. The departure order gives the
//! ACK bursts of seed 004 §2.1: runs of pure ACKs between data packets.
//!
//! Only IPv4 TCP is kept. A packet is identified by its source address, IP
//! ID, sequence and acknowledgement numbers: Linux numbers a connected TCP
//! socket's DF packets consecutively, so within a run the four do not repeat.

use crate::traffic::{enter, spawn_ready, Clock};
use anyhow::{Context, Result};
use nix::net::if_::if_nametoindex;
use nix::sys::socket::{
    recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr, MsgFlags,
    SockFlag, SockProtocol, SockType,
};
use nix::sys::time::TimeVal;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::AsRawFd;
use std::thread::JoinHandle;

/// What a TCP packet carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Payload (with or without flags).
    Data,
    /// No payload and no SYN, FIN or RST: an acknowledgement only.
    PureAck,
    /// No payload, but SYN, FIN or RST.
    Control,
}

/// Identifies one IP packet across the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub src: u32,
    pub ip_id: u16,
    pub seq: u32,
    pub ack: u32,
}

/// One sighting of a packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    /// Seconds on the experiment's clock.
    pub t: f64,
    pub key: Key,
    pub kind: Kind,
    /// Bytes the router's qdisc counts: the IP packet plus a 14 B Ethernet header.
    pub wire_bytes: u32,
}

/// Ethernet header bytes, counted by `bfifo` on a veth.
const ETH_HEADER: u32 = 14;

/// Parses an IPv4 packet (from its first byte). `None` unless it is TCP
/// with headers that fit in `b`; never panics on any input.
pub fn parse_ipv4_tcp(b: &[u8]) -> Option<(Key, Kind, u32)> {
    if b.len() < 20 || b[0] >> 4 != 4 || b[9] != 6 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    if ihl < 20 || total < ihl || b.len() < ihl + 20 {
        return None;
    }
    let tcp = &b[ihl..];
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < 20 || total < ihl + doff {
        return None;
    }
    let payload = total - ihl - doff;
    let flags = tcp[13];
    let (fin, syn, rst) = (flags & 0x01 != 0, flags & 0x02 != 0, flags & 0x04 != 0);
    let kind = if payload > 0 {
        Kind::Data
    } else if fin || syn || rst {
        Kind::Control
    } else {
        Kind::PureAck
    };
    let key = Key {
        src: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        ip_id: u16::from_be_bytes([b[4], b[5]]),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        ack: u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]),
    };
    Some((key, kind, total as u32 + ETH_HEADER))
}

/// Arrivals and departures of one queue.
#[derive(Clone, Debug, Default)]
pub struct QueueLog {
    pub arrivals: Vec<Seen>,
    pub departures: Vec<Seen>,
}

/// Both bottleneck queues.
#[derive(Clone, Debug, Default)]
pub struct Capture {
    /// Router → HOME.
    pub downlink: QueueLog,
    /// Router → INET.
    pub uplink: QueueLog,
    /// Packets the capture socket could not parse or place (not IPv4 TCP, or
    /// on neither router interface).
    pub ignored: u64,
}

/// Opens (and closes) the kind of socket [`spawn`] uses: fails without
/// `CAP_NET_RAW` or `AF_PACKET` support.
pub fn probe() -> Result<()> {
    socket(
        AddressFamily::Packet,
        SockType::Datagram,
        SockFlag::empty(),
        SockProtocol::EthAll,
    )
    .map(drop)
    .context("cannot open a packet socket (AF_PACKET needs CAP_NET_RAW)")
}

/// `PACKET_OUTGOING` in `sockaddr_ll.sll_pkttype`.
const PACKET_OUTGOING: u8 = 4;

/// Which queue a sighting belongs to, and whether it enters or leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    DownArrival,
    DownDeparture,
    UpArrival,
    UpDeparture,
}

/// Places a packet seen on interface `ifindex`: `up` is the router's port
/// towards INET (the uplink queue's egress), `down` its port towards HOME.
/// A packet arriving from INET joins the downlink queue; one sent out of
/// the HOME port has left it; and the other way round for the uplink.
pub fn place(ifindex: usize, pkttype: u8, up: usize, down: usize) -> Option<Place> {
    let out = pkttype == PACKET_OUTGOING;
    match (ifindex, out) {
        (i, false) if i == up => Some(Place::DownArrival),
        (i, true) if i == down => Some(Place::DownDeparture),
        (i, false) if i == down => Some(Place::UpArrival),
        (i, true) if i == up => Some(Place::UpDeparture),
        _ => None,
    }
}

/// Captures on the router until `end_s` on `clock`. `up_dev` faces INET
/// (the uplink queue's egress), `down_dev` faces HOME. Returns once the
/// socket is open, so that nothing sent afterwards is missed.
pub fn spawn(
    ns: File,
    up_dev: &'static str,
    down_dev: &'static str,
    clock: Clock,
    end_s: f64,
) -> Result<JoinHandle<Result<Capture>>> {
    let what = "capture on the router";
    spawn_ready(
        what.into(),
        move || -> Result<_> {
            enter(&ns, what)?;
            let up = if_nametoindex(up_dev).with_context(|| format!("{what}: no {up_dev}"))?;
            let down =
                if_nametoindex(down_dev).with_context(|| format!("{what}: no {down_dev}"))?;
            let fd = socket(
                AddressFamily::Packet,
                SockType::Datagram,
                SockFlag::empty(),
                SockProtocol::EthAll,
            )
            .with_context(|| format!("{what}: cannot open a packet socket (root needed)"))?;
            setsockopt(&fd, sockopt::ReceiveTimestampns, &true)
                .with_context(|| format!("{what}: SO_TIMESTAMPNS"))?;
            setsockopt(&fd, sockopt::ReceiveTimeout, &TimeVal::new(0, 50_000))
                .with_context(|| format!("{what}: SO_RCVTIMEO"))?;
            // Room for seconds of both directions' packets, should the
            // thread stall (beyond rmem_max: the lab has CAP_NET_ADMIN).
            // A packet lost here would show as a drop or an unmatched
            // departure; the live test checks both against the qdiscs.
            setsockopt(&fd, sockopt::RcvBufForce, &(8 << 20))
                .with_context(|| format!("{what}: SO_RCVBUFFORCE"))?;
            Ok((fd, up as usize, down as usize))
        },
        move |(fd, up, down)| {
            let mut cap = Capture::default();
            let mut buf = [0u8; 128];
            let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
            while clock.now_s() < end_s {
                let mut iov = [IoSliceMut::new(&mut buf)];
                let msg = match recvmsg::<LinkAddr>(
                    fd.as_raw_fd(),
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::empty(),
                ) {
                    Ok(m) => m,
                    Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e).context(format!("{what}: recvmsg")),
                };
                let mut stamp = None;
                if let Ok(cms) = msg.cmsgs() {
                    for c in cms {
                        if let ControlMessageOwned::ScmTimestampns(ts) = c {
                            stamp = Some(ts.tv_sec() as f64 + ts.tv_nsec() as f64 * 1e-9);
                        }
                    }
                }
                let (n, addr) = (msg.bytes, msg.address);
                let t = stamp.map_or_else(|| clock.now_s(), |s| clock.from_unix(s));
                let (Some(addr), Some((key, kind, wire_bytes))) =
                    (addr, parse_ipv4_tcp(&buf[..n.min(buf.len())]))
                else {
                    cap.ignored += 1;
                    continue;
                };
                let seen = Seen {
                    t,
                    key,
                    kind,
                    wire_bytes,
                };
                match place(addr.ifindex(), addr.pkttype(), up, down) {
                    Some(Place::DownArrival) => cap.downlink.arrivals.push(seen),
                    Some(Place::DownDeparture) => cap.downlink.departures.push(seen),
                    Some(Place::UpArrival) => cap.uplink.arrivals.push(seen),
                    Some(Place::UpDeparture) => cap.uplink.departures.push(seen),
                    None => cap.ignored += 1,
                }
            }
            Ok(cap)
        },
    )
}

/// `h[n]` = how many runs of exactly `n` pure ACKs left between two other
/// packets (index 0 unused): a pure ACK extends the run, any other packet
/// (data, SYN, FIN, RST) ends it, and the run open at the end of the
/// capture is not counted. The simulator's count (`QueueStats::departed`)
/// differs at the edges: there SYN, FIN and RST neither extend nor end a
/// run, ACKs before the first data packet are not counted, and the run
/// open at the end is (truncated). In a capture of a steady transfer the
/// two give the same bursts but those few.
pub fn ack_bursts(departures: &[Seen]) -> Vec<u64> {
    let mut h = vec![0u64];
    let mut run = 0usize;
    for s in departures {
        if s.kind == Kind::PureAck {
            run += 1;
        } else if run > 0 {
            if h.len() <= run {
                h.resize(run + 1, 0);
            }
            h[run] += 1;
            run = 0;
        }
    }
    h
}

/// What the log says about the queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    /// (time, bytes) every `dt` over `[t0, t1)`.
    pub series: Vec<(f64, f64)>,
    /// Arrivals that never left: dropped by the buffer (or still queued at the end).
    pub dropped: u64,
    /// Departures whose arrival was not seen (sent before the capture began).
    pub unmatched: u64,
}

impl QueueLog {
    /// The queue's occupancy in bytes, sampled every `dt` over `[t0, t1)`:
    /// each packet counts from its arrival to its departure.
    pub fn occupancy(&self, t0: f64, t1: f64, dt: f64) -> Occupancy {
        let left: HashMap<Key, f64> = self.departures.iter().map(|s| (s.key, s.t)).collect();
        let arrived: HashSet<Key> = self.arrivals.iter().map(|s| s.key).collect();
        // (time, change): ties put departures first, so that a packet that
        // leaves as another arrives is not counted twice.
        let mut ev: Vec<(f64, i64)> = Vec::with_capacity(2 * self.arrivals.len());
        let mut dropped = 0;
        for a in &self.arrivals {
            match left.get(&a.key) {
                Some(&d) => {
                    ev.push((a.t, a.wire_bytes as i64));
                    ev.push((d.max(a.t), -(a.wire_bytes as i64)));
                }
                None => dropped += 1,
            }
        }
        let unmatched = self
            .departures
            .iter()
            .filter(|d| !arrived.contains(&d.key))
            .count() as u64;
        ev.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut series = Vec::new();
        let (mut q, mut i) = (0i64, 0usize);
        let steps = ((t1 - t0) / dt).floor().max(0.0) as usize;
        for k in 0..steps {
            let t = t0 + k as f64 * dt;
            while i < ev.len() && ev[i].0 <= t {
                q += ev[i].1;
                i += 1;
            }
            series.push((t, q.max(0) as f64));
        }
        Occupancy {
            series,
            dropped,
            unmatched,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 TCP packet with `payload` bytes and TCP `flags`.
    fn packet(id: u16, seq: u32, payload: usize, flags: u8) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[4..6].copy_from_slice(&id.to_be_bytes());
        b[9] = 6;
        b[12..16].copy_from_slice(&[10, 201, 1, 1]);
        b[24..28].copy_from_slice(&seq.to_be_bytes());
        b[28..32].copy_from_slice(&7u32.to_be_bytes());
        b[32] = 8 << 4; // 32 B of TCP header (timestamps)
        b[33] = flags;
        b
    }

    #[test]
    fn parses_data_acks_and_control() {
        let (k, kind, wire) = parse_ipv4_tcp(&packet(9, 1000, 1448, 0x10)).unwrap();
        assert_eq!(kind, Kind::Data);
        assert_eq!(wire, 1500 + 14);
        assert_eq!((k.src, k.ip_id, k.seq, k.ack), (0x0ac9_0101, 9, 1000, 7));
        let (_, kind, wire) = parse_ipv4_tcp(&packet(10, 1, 0, 0x10)).unwrap();
        assert_eq!((kind, wire), (Kind::PureAck, 66));
        assert_eq!(
            parse_ipv4_tcp(&packet(11, 1, 0, 0x11)).unwrap().1,
            Kind::Control
        );
        assert_eq!(
            parse_ipv4_tcp(&packet(12, 1, 0, 0x02)).unwrap().1,
            Kind::Control
        );
        // Truncated capture: only the headers are needed.
        let p = packet(13, 1, 1448, 0x10);
        assert_eq!(parse_ipv4_tcp(&p[..60]).unwrap().1, Kind::Data);
    }

    #[test]
    fn rejects_what_is_not_ipv4_tcp_without_panicking() {
        let mut udp = packet(1, 1, 10, 0);
        udp[9] = 17;
        assert!(parse_ipv4_tcp(&udp).is_none());
        let mut v6 = packet(1, 1, 10, 0);
        v6[0] = 0x60;
        assert!(parse_ipv4_tcp(&v6).is_none());
        let mut short_total = packet(1, 1, 0, 0x10);
        short_total[2..4].copy_from_slice(&30u16.to_be_bytes()); // less than the headers
        assert!(parse_ipv4_tcp(&short_total).is_none());
        let mut bad_doff = packet(1, 1, 0, 0x10);
        bad_doff[32] = 2 << 4;
        assert!(parse_ipv4_tcp(&bad_doff).is_none());
        for n in 0..60 {
            let _ = parse_ipv4_tcp(&packet(1, 1, 100, 0x10)[..n]);
            let _ = parse_ipv4_tcp(&vec![0xff; n]);
        }
    }

    proptest::proptest! {
        /// Any bytes: no panic, and an accepted packet's sizes are consistent.
        #[test]
        fn parser_never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            if let Some((_, kind, wire)) = parse_ipv4_tcp(&b) {
                let total = u16::from_be_bytes([b[2], b[3]]) as u32;
                proptest::prop_assert_eq!(wire, total + ETH_HEADER);
                proptest::prop_assert!(total >= 40);
                if kind == Kind::Data {
                    proptest::prop_assert!(total > 40);
                }
            }
        }
    }

    fn seen(t: f64, id: u16, kind: Kind) -> Seen {
        Seen {
            t,
            key: Key {
                src: 1,
                ip_id: id,
                seq: 0,
                ack: 0,
            },
            kind,
            wire_bytes: if kind == Kind::Data { 1514 } else { 66 },
        }
    }

    #[test]
    fn bursts_are_runs_of_pure_acks_between_other_packets() {
        use Kind::*;
        let kinds = [
            Data, PureAck, Data, PureAck, PureAck, PureAck, Data, Data, PureAck, PureAck, Control,
            PureAck,
        ];
        let d: Vec<Seen> = kinds
            .iter()
            .enumerate()
            .map(|(i, &k)| seen(i as f64, i as u16, k))
            .collect();
        // Runs of 1, 3 and 2; the trailing ACK has not been closed by a packet.
        assert_eq!(ack_bursts(&d), vec![0, 1, 1, 1]);
    }

    #[test]
    fn packets_are_placed_by_port_and_direction() {
        let (up, down) = (7, 9);
        assert_eq!(place(7, 0, up, down), Some(Place::DownArrival));
        assert_eq!(place(9, 4, up, down), Some(Place::DownDeparture));
        assert_eq!(place(9, 0, up, down), Some(Place::UpArrival));
        assert_eq!(place(7, 4, up, down), Some(Place::UpDeparture));
        assert_eq!(place(1, 0, up, down), None); // loopback or another port
        assert_eq!(place(1, 4, up, down), None);
    }

    #[test]
    fn occupancy_counts_from_arrival_to_departure_and_skips_drops() {
        let q = QueueLog {
            arrivals: vec![
                seen(0.0, 1, Kind::Data),
                seen(0.1, 2, Kind::Data),
                seen(0.15, 3, Kind::Data), // dropped
                seen(0.2, 4, Kind::PureAck),
            ],
            departures: vec![
                seen(0.0, 99, Kind::Data), // arrived before the capture
                seen(0.25, 1, Kind::Data),
                seen(0.35, 2, Kind::Data),
                seen(0.35, 4, Kind::PureAck),
            ],
        };
        let o = q.occupancy(0.0, 0.4, 0.05);
        let b: Vec<f64> = o.series.iter().map(|p| p.1).collect();
        assert_eq!(
            b,
            vec![1514.0, 1514.0, 3028.0, 3028.0, 3094.0, 1580.0, 1580.0, 0.0]
        );
        assert_eq!((o.dropped, o.unmatched), (1, 1));
    }
}
