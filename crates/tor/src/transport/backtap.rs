//! BackTap: one `hopwise_proto::backtap::Endpoint` per node, moving UDP
//! datagrams. The agent holds no protocol logic: datagrams go to
//! `handle_datagram`, deadlines to `handle_timeout`, `poll_transmit` is
//! drained after every call, and the edges use `can_send`/`send_cell` at the
//! packaging edge and `recv_cell` at the delivering edge (which is when the
//! endpoint owes FORWARD feedback upstream).
//!
//! A relay's [`crate::config::BucketSpec`] becomes the endpoint's token
//! bucket, which limits the cells the relay sends (docs/backtap.md). The
//! endpoint reads the simulation clock directly, so its periodic refills are
//! not phase-shifted per relay as the vanilla buckets are.
//!
//! **Device-queue backpressure.** The endpoint hands out every datagram its
//! window and bucket allow at once, and a relay with large windows (or a big
//! bucket refill) produces bursts of hundreds of datagrams at one instant.
//! Written straight into the host's drop-tail output queue (100 packets in
//! the network experiments), most of such a burst would be dropped at the
//! sender itself. Neither a real sender nor the reference code does that:
//! a UDP socket blocks when its send buffer is full, and nstor's
//! `UdpChannel::Flush` stops writing while the device queue holds its limit
//! and resumes later. The agent therefore keeps a model of its own uplink
//! queue (its datagrams, the uplink rate, the queue limit) and stops draining
//! `poll_transmit` while that queue is full; the cells stay in the endpoint
//! and leave when the queue has drained to half. The model sees only the
//! node's own BackTap datagrams (other traffic on the host is not counted).

use super::{token, Shared, Transport};
use crate::buckets::Side;
use crate::config::{BacktapTransportConfig, Dir};
use crate::plan::{Leg, NodePlan, Uplink};
use crate::results::{HopLosses, HopSample, NodeSample, TransportStats};
use bytes::Bytes;
use hopwise_proto::backtap::{
    BucketConfig, CircuitId, Direction, Endpoint, Event, PeerId, CELL_BODY_LEN,
};
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::packet::UDP_OVERHEAD;
use hopwise_sim::spec::Limit;
use hopwise_sim::{Cx, NodeId, Sock, SockEvent};
use std::collections::{BTreeMap, VecDeque};

const _: () = assert!(CELL_BODY_LEN == crate::cell::BODY_LEN);

fn to_dir(d: Dir) -> Direction {
    match d {
        Dir::Forward => Direction::Forward,
        Dir::Backward => Direction::Backward,
    }
}

/// A duration in whole microseconds, saturating (zero stays zero).
fn us(d: hopwise_proto::time::Dur) -> u32 {
    (d.as_nanos() / 1_000).min(u32::MAX as u64) as u32
}

fn from_dir(d: Direction) -> Dir {
    match d {
        Direction::Forward => Dir::Forward,
        Direction::Backward => Dir::Backward,
    }
}

/// The BackTap transport of one node.
pub struct BacktapTransport {
    ep: Endpoint,
    port: u16,
    /// Peer index → simulation node, and back.
    peer_node: Vec<NodeId>,
    node_peer: BTreeMap<NodeId, PeerId>,
    /// Hop index → endpoint circuit, and back (circuit ids are assigned in
    /// hop order, so `circ[h].0 == h`).
    circ: Vec<CircuitId>,
    armed: Option<Time>,
    dropped: u64,
    nic: Option<Nic>,
    buf: Vec<u8>,
}

/// A model of the host's output queue, fed with this node's datagrams: when
/// each would finish transmission on the uplink (FIFO at the uplink rate).
#[derive(Debug)]
struct Nic {
    up: Uplink,
    /// (transmission done, IP bytes) of datagrams not yet fully sent.
    q: VecDeque<(Time, u32)>,
    bytes: u64,
}

impl Nic {
    fn purge(&mut self, now: Time) {
        while let Some(&(t, n)) = self.q.front() {
            if t > now {
                break;
            }
            self.q.pop_front();
            self.bytes -= n as u64;
        }
    }
    /// Whether a datagram of `size` IP bytes fits (counting the one on the
    /// wire too, so the real queue never overflows from our own traffic).
    fn room(&mut self, now: Time, size: u32) -> bool {
        self.purge(now);
        // An empty queue always takes one (a limit below one datagram would
        // otherwise stall the node for good).
        if self.q.is_empty() {
            return true;
        }
        match self.up.queue {
            Limit::Packets(n) => (self.q.len() as u64) < n,
            Limit::Bytes(b) => self.bytes + size as u64 <= b,
        }
    }
    /// When the queue will have drained to half its limit.
    fn wake_at(&self, now: Time) -> Time {
        let mut left = self.bytes;
        for (i, &(t, n)) in self.q.iter().enumerate() {
            let half = match self.up.queue {
                Limit::Packets(l) => (self.q.len() - i) as u64 <= l.div_ceil(2),
                Limit::Bytes(b) => left <= b / 2,
            };
            if half {
                return t.max(now);
            }
            left -= n as u64;
        }
        self.q.back().map_or(now, |b| b.0)
    }
    fn push(&mut self, now: Time, size: u32) {
        let start = self.q.back().map_or(now, |b| b.0.max(now));
        self.q
            .push_back((start + self.up.rate.tx_time(size as u64), size));
        self.bytes += size as u64;
    }
}

/// The BackTap transport for `plan`.
pub fn transport(
    cfg: &BacktapTransportConfig,
    plan: &NodePlan,
) -> Result<Box<dyn Transport>, String> {
    Ok(Box::new(BacktapTransport::new(cfg, plan)))
}

impl BacktapTransport {
    pub fn new(cfg: &BacktapTransportConfig, plan: &NodePlan) -> BacktapTransport {
        let mut ecfg = cfg.endpoint.clone();
        if let Some(b) = plan.bucket {
            ecfg.bucket = Some(BucketConfig {
                rate: b.rate,
                burst: b.burst,
                refill: b.refill,
            });
        }
        let mut ep = Endpoint::new(ecfg);
        let mut peer_node = Vec::new();
        let mut node_peer = BTreeMap::new();
        // One peer per neighbour: links are per pair for BackTap.
        let link_peer: Vec<PeerId> = plan
            .links
            .iter()
            .map(|l| {
                *node_peer.entry(l.peer).or_insert_with(|| {
                    peer_node.push(l.peer);
                    ep.add_peer(u64::from(l.peer.raw()))
                })
            })
            .collect();
        let leg = |l: Leg| match l {
            Leg::Edge => None,
            Leg::Link { link, circ_id } => Some((link_peer[link as usize], circ_id as u32)),
        };
        let circ = plan
            .hops
            .iter()
            .map(|h| ep.add_circuit(leg(h.prev), leg(h.next)))
            .collect();
        BacktapTransport {
            ep,
            port: cfg.udp_port,
            peer_node,
            node_peer,
            circ,
            armed: None,
            dropped: 0,
            nic: plan.uplink.map(|up| Nic {
                up,
                q: VecDeque::new(),
                bytes: 0,
            }),
            buf: Vec::new(),
        }
    }

    fn hop_of(&self, c: CircuitId) -> u32 {
        debug_assert_eq!(self.circ.get(c.0 as usize), Some(&c));
        c.0
    }
}

impl Transport for BacktapTransport {
    fn start(&mut self, cx: &mut Cx<'_>) {
        cx.bind_udp(self.port).expect("one Tor node per host");
    }

    fn set_bucket_phase(&mut self, phase: Dur) {
        self.ep.set_bucket_phase(phase);
    }

    fn connect(&mut self, _cx: &mut Cx<'_>) {}

    fn tcp_event(
        &mut self,
        _cx: &mut Cx<'_>,
        _sock: Sock,
        _ev: SockEvent,
        _sh: &mut Shared<'_>,
    ) -> bool {
        false
    }

    fn datagram(&mut self, cx: &mut Cx<'_>, from: NodeId, data: Bytes, _sh: &mut Shared<'_>) {
        let Some(&p) = self.node_peer.get(&from) else {
            self.dropped += 1;
            return;
        };
        // Decode errors are counted by the endpoint.
        let _ = self.ep.handle_datagram(cx.now(), p, &data);
    }

    fn timer(&mut self, cx: &mut Cx<'_>, _payload: u64, _sh: &mut Shared<'_>) {
        let now = cx.now();
        if self.armed.is_some_and(|a| a <= now) {
            self.armed = None;
        }
        if self.ep.poll_timeout().is_some_and(|t| t <= now) {
            self.ep.handle_timeout(now);
        }
    }

    fn bucket_refilled(&mut self, _side: Side) {}

    fn can_send(&self, hop: u32, dir: Dir) -> bool {
        self.ep.can_send(self.circ[hop as usize], to_dir(dir))
    }

    fn send_cell(
        &mut self,
        cx: &mut Cx<'_>,
        hop: u32,
        dir: Dir,
        cell: u32,
        sh: &mut Shared<'_>,
    ) -> bool {
        let c = self.circ[hop as usize];
        match self
            .ep
            .send_cell(cx.now(), c, to_dir(dir), sh.pool.get(cell))
        {
            Ok(()) => {
                sh.pool.free(cell);
                true
            }
            Err(_) => false,
        }
    }

    fn poll_reads(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>) {
        let now = cx.now();
        while let Some(ev) = self.ep.poll_event() {
            match ev {
                Event::Readable { circuit, dir } => {
                    let hop = self.hop_of(circuit);
                    loop {
                        let slot = sh.pool.alloc();
                        if self
                            .ep
                            .recv_cell_into(now, circuit, dir, sh.pool.get_mut(slot))
                            .is_none()
                        {
                            sh.pool.free(slot);
                            break;
                        }
                        sh.io.delivered.push((hop, from_dir(dir), slot));
                    }
                }
                Event::Writable { circuit, dir } => {
                    sh.io.writable.push((self.hop_of(circuit), from_dir(dir)));
                }
            }
        }
    }

    fn poll_writes(&mut self, cx: &mut Cx<'_>, _sh: &mut Shared<'_>) {
        let now = cx.now();
        // A datagram is at most one payload budget; wait while one would not fit.
        let max = (UDP_OVERHEAD as usize + self.ep.config().payload_budget) as u32;
        let mut wake = None;
        loop {
            if let Some(nic) = self.nic.as_mut() {
                if !nic.room(now, max) {
                    wake = Some(nic.wake_at(now));
                    break;
                }
            }
            let Some(p) = self.ep.poll_transmit_into(now, &mut self.buf) else {
                break;
            };
            if let Some(nic) = self.nic.as_mut() {
                nic.push(now, UDP_OVERHEAD + self.buf.len() as u32);
            }
            let to = self.peer_node[p.0 as usize];
            cx.send_udp(self.port, to, self.port, Bytes::copy_from_slice(&self.buf));
        }
        let next = match (self.ep.poll_timeout(), wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = next {
            if self.armed.is_none_or(|a| t < a) {
                self.armed = Some(t);
                cx.set_timer(t, token::make(token::TRANSPORT, 0));
            }
        }
    }

    fn sample_hop(&mut self, _cx: &mut Cx<'_>, hop: u32) -> HopSample {
        let c = self.circ[hop as usize];
        let f = self.ep.circuit_stats(c, Direction::Forward);
        let b = self.ep.circuit_stats(c, Direction::Backward);
        HopSample {
            queued: [f.queued, b.queued],
            in_transit: [f.unforwarded, b.unforwarded],
            swnd: [f.swnd, b.swnd],
            base_rtt_us: [us(f.base_rtt), us(b.base_rtt)],
            actual_rtt_us: [us(f.actual_rtt), us(b.actual_rtt)],
            ..HopSample::default()
        }
    }

    fn sample_node(&mut self, _cx: &mut Cx<'_>) -> NodeSample {
        let mut s = NodeSample::default();
        for &c in &self.circ {
            for d in Direction::BOTH {
                s.queued_cells += self.ep.circuit_stats(c, d).queued as u64;
            }
        }
        s
    }

    fn hop_losses(&self, hop: u32) -> Option<HopLosses> {
        let c = *self.circ.get(hop as usize)?;
        let mut l = HopLosses::default();
        for d in Direction::BOTH {
            let s = self.ep.circuit_stats(c, d);
            l += HopLosses {
                retransmits: s.retransmits,
                timeouts: s.timeouts,
                loss_cuts: s.loss_cuts,
            };
        }
        Some(l)
    }

    fn stats(&self) -> TransportStats {
        let s = self.ep.stats();
        TransportStats {
            cells_in: s.cells_in,
            cells_out: s.cells_out,
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            datagrams_in: s.datagrams_in,
            datagrams_out: s.datagrams_out,
            dropped: s.decode_errors + s.unknown_circuit + s.invalid_items + s.drops + self.dropped,
            write_stalls: s.bucket_stalls,
            ..TransportStats::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::*;
    use hopwise_proto::bucket::Refill;
    use hopwise_proto::time::Dur;
    use hopwise_proto::units::Rate;
    use hopwise_sim::spec::Limit;

    /// Twenty circuits through the same relays open their windows together,
    /// so every relay sends bursts of tens of datagrams at one instant; with a
    /// 4-packet output queue they used to be dropped at the sender's own
    /// uplink. The device-queue model holds them in the endpoint instead.
    #[test]
    fn bursts_wait_for_the_uplink_queue_instead_of_overflowing_it() {
        let mut net = TorNet::new(TransportConfig::backtap());
        let acc =
            Access::star(Rate::from_mbps(1000), Dur::from_millis(40)).queue(Limit::Packets(4));
        net.relay("g", None, acc)
            .relay(
                "m",
                Some(BucketSpec::new(4_000_000).refill(Refill::Periodic(Dur::from_millis(10)))),
                acc,
            )
            .relay("e", None, acc);
        for i in 0..20 {
            let op = format!("op{i}");
            net.client(&op, acc);
            net.circuit(CircuitSpec::new(
                &format!("c{i}"),
                &op,
                &["g", "m", "e"],
                Traffic::bulk(1 << 40),
            ));
        }
        let mut s = net.build("nic", 1, Dur::from_secs(8)).unwrap();
        s.run();
        let r = s.results();
        let up_drops: u64 = s
            .sim
            .ifaces()
            .map(|i| s.sim.iface(i))
            .filter(|f| f.name().ends_with(":ab"))
            .map(|f| f.stats().drops)
            .sum();
        assert_eq!(up_drops, 0, "datagrams dropped at their sender's uplink");
        let total: u64 = r.circuits.iter().map(|c| c.delivered).sum();
        assert!(total > 20_000_000, "{total} B");
    }

    /// A drop-tail limit smaller than one datagram: the model still lets one
    /// datagram out at a time (the queue drops what does not fit) instead of
    /// waking the node at the same instant for ever.
    #[test]
    fn a_queue_limit_below_one_datagram_does_not_stall() {
        let mut net = TorNet::new(TransportConfig::backtap());
        let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(10)).queue(Limit::Bytes(600));
        net.relay("g", None, acc)
            .relay("m", None, acc)
            .relay("e", None, acc)
            .client("op", acc);
        net.circuit(CircuitSpec::new(
            "c",
            "op",
            &["g", "m", "e"],
            Traffic::bulk(1 << 20),
        ));
        let mut s = net.build("tiny-queue", 1, Dur::from_secs(2)).unwrap();
        s.run();
        assert!(s.results().circuits[0].delivered > 0);
    }
}
