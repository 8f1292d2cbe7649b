//! The discrete-event engine: event queue, network, TCP endpoints and their
//! applications.
//!
//! # Determinism
//! Events are ordered totally by `(time, insertion sequence)`. Every random
//! decision comes from a per-component [`Rng`] seeded from the scenario seed
//! and the component's name. No hash map is iterated on a simulation path.
//! Every processed event is folded into a 64-bit FNV-1a hash
//! ([`Sim::event_hash`]); two runs of the same scenario and seed give the
//! same hash, and tests check it.

use crate::agent::{Agent, Cx, SockEvent};
use crate::link::LinkState;
use crate::measure::{Binned, QueueSample, QueueStats, TraceSample};
use crate::packet::{Body, NodeId, Packet};
use crate::pcap::Capture;
use crate::qdisc::{Dequeue, Qdisc};
use crate::queue::{EventQueue, FAR, NEAR};
use crate::routing::{Hop, Routing};
use crate::spec::{NodeKind, Scenario, Traffic};
use bytes::Bytes;
use hopwise_experiment::stats::LogHistogram;
use hopwise_proto::cc::{CcConfig, CongestionControl};
use hopwise_proto::ring;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::{reset_for, Connection, Event, Segment, State, TcpConfig};
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;

mod agents;
mod capture;

/// What happens at an instant. Small and `Copy`: packets wait in the queues
/// and link pipelines, not in the event heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// An interface finished serialising a packet.
    TxDone(u32),
    /// The oldest packet in flight on an interface reaches the far end.
    Arrive(u32),
    /// A shaped queue may have a packet ready.
    Wake(u32),
    /// A TCP endpoint's timer.
    Timer(u32),
    FlowStart(u32),
    FlowStop(u32),
    /// Periodic trace sampling.
    Sample,
    AgentStart(u32),
    AgentTimer(u32, u64),
}

impl Ev {
    /// The event queue's lane: a link's frequent near-future events apart
    /// from timers and the rest (the order is the same either way).
    fn lane(self) -> usize {
        match self {
            Ev::TxDone(_) | Ev::Arrive(_) | Ev::Wake(_) => NEAR,
            _ => FAR,
        }
    }

    fn code(self) -> u64 {
        let (k, id) = match self {
            Ev::TxDone(i) => (1, i),
            Ev::Arrive(i) => (2, i),
            Ev::Wake(i) => (3, i),
            Ev::Timer(i) => (4, i),
            Ev::FlowStart(i) => (5, i),
            Ev::FlowStop(i) => (6, i),
            Ev::Sample => (7, 0),
            Ev::AgentStart(a) => (8, a),
            Ev::AgentTimer(a, t) => return (9 << 32 | a as u64) ^ t.rotate_left(40),
        };
        (k << 32) | id as u64
    }
}

/// One direction of a link: a node's output port (its accessors are in
/// [`crate::query`]).
#[derive(Debug)]
pub struct Iface {
    pub(crate) name: String,
    pub(crate) link: String,
    pub(crate) from: NodeId,
    pub(crate) to: NodeId,
    pub(crate) rate: Rate,
    pub(crate) delay: Dur,
    pub(crate) loss: f64,
    /// A delivery trace, bursty loss or jitter (`None` without any).
    model: Option<Box<LinkState>>,
    pub(crate) qdisc: Qdisc,
    busy: bool,
    wake_pending: bool,
    /// Packets on the wire, with their arrival times and the sequence
    /// numbers of their `Arrive` events. Sorted by arrival time, ties in
    /// sending order. On a direction that never reorders, only the first
    /// packet's `Arrive` is in the event queue; the next one is queued (with
    /// its own sequence number, so the event order is unchanged) when it
    /// arrives.
    pipeline: VecDeque<(Time, u64, Packet)>,
    rng: Rng,
    pub(crate) stats: QueueStats,
    /// Sampled occupancy at each trace tick.
    pub(crate) trace: Vec<QueueSample>,
    /// A packet capture on this direction, with its label (the file name).
    capture: Option<(String, Box<Capture>)>,
}

impl Iface {
    /// Whether packets may overtake each other on the wire (a jitter model
    /// that reorders).
    fn reorders(&self) -> bool {
        self.model.as_deref().is_some_and(LinkState::reorders)
    }
}

/// A node's name and kind (read through [`Sim::node_name`] and
/// [`Sim::node_kind`]; its routes are in [`Sim::routing`]).
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) kind: NodeKind,
}

/// One end of a TCP connection and the application on it (its accessors
/// are in [`crate::query`]).
#[derive(Debug)]
pub struct Endpoint {
    /// Boxed: a connection is about 1.4 KiB and most of an endpoint's
    /// accesses (routing a segment, its measurements) need only the rest.
    pub(crate) conn: Option<Box<Connection>>,
    pub(crate) node: NodeId,
    pub(crate) peer_node: NodeId,
    pub(crate) peer: u32,
    /// The scenario flow this endpoint belongs to (`u32::MAX` for an agent's socket).
    pub(crate) flow: u32,
    /// The agent that owns this endpoint, if it is an agent's socket.
    pub(crate) agent: Option<u32>,
    /// Configuration for accepting the peer's SYN (an agent's listening side).
    accept: Option<Box<(TcpConfig, CcConfig)>>,
    /// The connection was accepted and the owning agent not yet told.
    accepted: bool,
    pub(crate) initiator: bool,
    /// The application writes data on this end.
    pub(crate) sender: bool,
    timer_at: Option<Time>,
    /// Bytes written so far (also the stream offset of the next write).
    pub(crate) written: u64,
    stopped: bool,
    /// Bytes the application read, and how many of them differed from what was written.
    pub(crate) received: u64,
    pub(crate) corrupt: u64,
    pub(crate) received_after_warmup: u64,
    pub(crate) last_delivery: Option<Time>,
    pub(crate) goodput: Binned,
    /// Time the last byte of a fixed-size transfer was read.
    pub(crate) completed_at: Option<Time>,
    pub(crate) reset: bool,
    pub(crate) timed_out: bool,
    /// This end's state as a sender at each trace tick.
    pub(crate) trace: Vec<TraceSample>,
    /// RTT samples (seconds) this end took after the warm-up, if it is
    /// measured (a flow's end, or a socket an agent traces).
    pub(crate) rtt: LogHistogram,
    /// Per data packet this end received after the warm-up: the total
    /// time (seconds) it waited in queues along its path.
    pub(crate) queue_delay: LogHistogram,
}

impl Endpoint {
    /// An end at `node` whose peer is endpoint `peer` at `peer_node`, with
    /// no connection yet and nothing sent, received or measured; the caller
    /// sets who owns it (`flow`, `agent`, `accept`) and whether it `sends`.
    fn idle(node: NodeId, peer_node: NodeId, peer: u32, initiator: bool, goodput: Dur) -> Self {
        Endpoint {
            conn: None,
            node,
            peer_node,
            peer,
            flow: u32::MAX,
            agent: None,
            accept: None,
            accepted: false,
            initiator,
            sender: false,
            timer_at: None,
            written: 0,
            stopped: false,
            received: 0,
            corrupt: 0,
            received_after_warmup: 0,
            last_delivery: None,
            goodput: Binned::new(goodput),
            completed_at: None,
            reset: false,
            timed_out: false,
            trace: Vec::new(),
            rtt: LogHistogram::new(),
            queue_delay: LogHistogram::new(),
        }
    }
}

/// Runtime state of a flow (its accessors are in [`crate::query`]).
#[derive(Debug)]
pub struct Flow {
    pub(crate) name: String,
    pub(crate) from: NodeId,
    pub(crate) to: NodeId,
    pub(crate) cc: CcConfig,
    pub(crate) tcp: TcpConfig,
    pub(crate) traffic: Traffic,
    pub(crate) bidir: bool,
    pub(crate) start: Time,
    pub(crate) stop: Option<Time>,
    /// Endpoint indices: initiator, responder.
    pub(crate) ends: [u32; 2],
    rng: Rng,
}

/// A simulation built from a [`Scenario`]. Its state is read through the
/// queries of [`crate::query`] (flows, link directions, nodes, endpoints,
/// traces) and [`crate::report::Summary::of`].
pub struct Sim {
    now: Time,
    seq: u64,
    queue: EventQueue<Ev>,
    hash: u64,
    events: u64,
    /// Packets that started transmission on a link (packet-hops).
    transmissions: u64,
    pub(crate) duration: Dur,
    pub(crate) seed: u64,
    pub(crate) warmup: Time,
    pub(crate) trace_interval: Dur,
    goodput_interval: Dur,
    pub(crate) nodes: Vec<Node>,
    pub(crate) ifaces: Vec<Iface>,
    /// Each node's output interface towards each destination.
    pub(crate) routing: Routing,
    pub(crate) endpoints: Vec<Endpoint>,
    pub(crate) flows: Vec<Flow>,
    /// Trace tick times actually sampled.
    pub(crate) trace_times: Vec<Time>,
    scratch: Vec<Segment>,
    /// Socket events on their way to an agent ([`Sim::agent_events`]).
    sock_events: Vec<SockEvent>,
    agents: Vec<AgentSlot>,
    /// Node ids by name (lookups only, never iterated).
    node_index: BTreeMap<String, NodeId>,
    listeners: BTreeMap<(NodeId, u16), (u32, TcpConfig, CcConfig)>,
    udp_ports: BTreeMap<(NodeId, u16), u32>,
    next_port: Vec<u16>,
}

/// An agent and what the engine keeps for it. The agent is taken out of its
/// slot while one of its callbacks runs.
struct AgentSlot {
    agent: Option<Box<dyn Agent>>,
    name: String,
    node: NodeId,
    rng: Rng,
}

/// Bytes written by bulk applications: a fixed pseudo-random pattern, so a
/// receiver can check every byte it reads. Its odd length keeps segment
/// boundaries drifting across it.
const PATTERN_LEN: usize = 65_537;

/// Packets an empty link direction's pipeline keeps room for
/// ([`hopwise_proto::ring::release_if_drained`]).
const PIPELINE_KEEP: usize = 8;

fn pattern() -> &'static Bytes {
    static P: OnceLock<Bytes> = OnceLock::new();
    P.get_or_init(|| {
        let mut x: u32 = 0x1234_5678;
        let v: Vec<u8> = (0..PATTERN_LEN)
            .map(|_| {
                // Numerical Recipes LCG; the high byte is well mixed.
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        Bytes::from(v)
    })
}

/// Counts bytes of `data` (at stream offset `off`) that differ from the pattern.
fn count_corrupt(off: u64, data: &[u8]) -> u64 {
    let p = pattern();
    let mut bad = 0;
    let mut pos = (off % PATTERN_LEN as u64) as usize;
    let mut rest = data;
    while !rest.is_empty() {
        let n = rest.len().min(PATTERN_LEN - pos);
        // Bytes delivered without a copy are the pattern's own memory at
        // this very offset, hence equal to it: skip the comparison.
        let same_memory = std::ptr::eq(rest.as_ptr(), p[pos..].as_ptr());
        if !same_memory && rest[..n] != p[pos..pos + n] {
            bad += rest[..n]
                .iter()
                .zip(&p[pos..pos + n])
                .filter(|(a, b)| a != b)
                .count() as u64;
        }
        rest = &rest[n..];
        pos = 0;
    }
    bad
}

impl Sim {
    /// Builds the simulation. The scenario should have been validated
    /// ([`crate::scenario::validate`]); remaining inconsistencies are errors.
    pub fn new(sc: &Scenario) -> Result<Sim, String> {
        let node_index: BTreeMap<String, NodeId> = sc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), NodeId(i as u32)))
            .collect();
        let node_id = |name: &str| -> Result<NodeId, String> {
            node_index
                .get(name)
                .copied()
                .ok_or_else(|| format!("unknown node `{name}`"))
        };
        let nodes: Vec<Node> = sc
            .nodes
            .iter()
            .map(|n| Node {
                name: n.name.clone(),
                kind: n.kind,
            })
            .collect();
        let mut ifaces = Vec::new();
        for l in &sc.links {
            let a = node_id(&l.a)?;
            let b = node_id(&l.b)?;
            for (from, to, d, dir) in [(a, b, &l.ab, "ab"), (b, a, &l.ba, "ba")] {
                let name = format!("{}:{}", l.name, dir);
                let qdisc_rng = Rng::for_component(sc.seed, &format!("qdisc/{name}"));
                ifaces.push(Iface {
                    rng: Rng::for_component(sc.seed, &format!("iface/{name}")),
                    name,
                    link: l.name.clone(),
                    from,
                    to,
                    // A trace sets the rate: its mean, for utilisation.
                    rate: d.model.trace.as_ref().map_or(d.rate, |t| t.mean_rate()),
                    delay: d.delay,
                    loss: d.loss,
                    model: LinkState::of(&d.model),
                    qdisc: Qdisc::from_spec(&d.queue, d.rate, qdisc_rng),
                    busy: false,
                    wake_pending: false,
                    pipeline: VecDeque::new(),
                    stats: QueueStats::default(),
                    trace: Vec::new(),
                    capture: None,
                });
            }
        }
        let routing = Routing::new(
            nodes.len(),
            ifaces
                .iter()
                .map(|f| Hop {
                    from: f.from,
                    to: f.to,
                    delay: f.delay,
                })
                .collect(),
        );

        let mut flows = Vec::new();
        let mut endpoints = Vec::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            let from = node_id(&f.from)?;
            let to = node_id(&f.to)?;
            if routing.next_iface(from, to).is_none() {
                return Err(format!(
                    "flow `{}`: no route from `{}` to `{}`",
                    f.name, f.from, f.to
                ));
            }
            let mut rng = Rng::for_component(sc.seed, &format!("flow/{}", f.name));
            let jitter = if sc.start_jitter.is_zero() {
                Dur::ZERO
            } else {
                Dur::from_nanos(rng.below(sc.start_jitter.as_nanos()))
            };
            let start = Time::ZERO + f.start + jitter;
            let stop = f.stop.map(|s| Time::ZERO + s + jitter);
            let e0 = endpoints.len() as u32;
            for (initiator, node, peer_node) in [(true, from, to), (false, to, from)] {
                endpoints.push(Endpoint {
                    flow: fi as u32,
                    sender: initiator || f.bidir,
                    ..Endpoint::idle(
                        node,
                        peer_node,
                        if initiator { e0 + 1 } else { e0 },
                        initiator,
                        sc.measure.goodput_interval,
                    )
                });
            }
            flows.push(Flow {
                name: f.name.clone(),
                from,
                to,
                cc: f.cc.clone(),
                tcp: f.tcp.clone(),
                traffic: f.traffic,
                bidir: f.bidir,
                start,
                stop,
                ends: [e0, e0 + 1],
                rng,
            });
        }

        let mut sim = Sim {
            now: Time::ZERO,
            seq: 0,
            queue: EventQueue::new(),
            hash: 0xcbf2_9ce4_8422_2325,
            events: 0,
            transmissions: 0,
            duration: sc.duration,
            seed: sc.seed,
            warmup: Time::ZERO + sc.measure.warmup,
            trace_interval: sc.measure.trace_interval,
            goodput_interval: sc.measure.goodput_interval,
            nodes,
            ifaces,
            routing,
            endpoints,
            flows,
            trace_times: Vec::new(),
            scratch: Vec::new(),
            sock_events: Vec::new(),
            agents: Vec::new(),
            node_index: BTreeMap::new(),
            listeners: BTreeMap::new(),
            udp_ports: BTreeMap::new(),
            next_port: Vec::new(),
        };
        sim.next_port = vec![40_000; sim.nodes.len()];
        sim.node_index = node_index;
        for i in 0..sim.flows.len() {
            let f = &sim.flows[i];
            let (start, stop) = (f.start, f.stop);
            sim.schedule(start, Ev::FlowStart(i as u32));
            if let Some(s) = stop {
                sim.schedule(s, Ev::FlowStop(i as u32));
            }
        }
        if !sim.trace_interval.is_zero() {
            sim.schedule(Time::ZERO, Ev::Sample);
        }
        Ok(sim)
    }

    /// The current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }
    /// Packets that started transmission on a link so far, lost ones
    /// included: the packet-hops the run simulated.
    pub fn transmissions(&self) -> u64 {
        self.transmissions
    }
    /// FNV-1a hash over every processed event's time, kind and target.
    pub fn event_hash(&self) -> u64 {
        self.hash
    }
    /// When the run ends (time zero plus the scenario's duration).
    pub fn end_time(&self) -> Time {
        Time::ZERO + self.duration
    }

    /// Queues `ev` at `at` (never before the current time), after every
    /// event already queued for the same instant.
    fn schedule(&mut self, at: Time, ev: Ev) {
        self.seq += 1;
        self.queue.push(at.max(self.now), self.seq, ev.lane(), ev);
    }

    /// Folds 64-bit words into the event-log hash (FNV-1a over their bytes).
    fn fold_hash(&mut self, words: &[u64]) {
        for w in words {
            for b in w.to_le_bytes() {
                self.hash ^= b as u64;
                self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01B3);
            }
        }
    }

    /// Runs until the scenario's end.
    pub fn run(&mut self) {
        let end = self.end_time();
        self.run_until(end);
    }

    /// Processes every event up to and including `until` (capped at the end).
    pub fn run_until(&mut self, until: Time) {
        let until = until.min(self.end_time());
        while let Some((t, ev)) = self.queue.pop_until(until) {
            self.now = t;
            self.events += 1;
            self.fold_hash(&[t.as_nanos(), ev.code()]);
            self.dispatch(ev);
        }
        self.now = self.now.max(until);
        if until == self.end_time() {
            self.finish();
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::TxDone(i) => {
                self.ifaces[i as usize].busy = false;
                self.try_send(i);
            }
            Ev::Wake(i) => {
                self.ifaces[i as usize].wake_pending = false;
                if !self.ifaces[i as usize].busy {
                    self.try_send(i);
                }
            }
            Ev::Arrive(i) => {
                let f = &mut self.ifaces[i as usize];
                let (_, _, p) = f.pipeline.pop_front().expect("arrival has a packet");
                ring::release_if_drained(&mut f.pipeline, PIPELINE_KEEP);
                let node = f.to;
                if !f.reorders() {
                    if let Some(&(at, seq, _)) = f.pipeline.front() {
                        self.queue.push(at, seq, NEAR, Ev::Arrive(i));
                    }
                }
                // The log also covers what arrived, so protocol state (ISNs,
                // ACK numbers, windows) is part of the hash, not only timing.
                let w = match &p.body {
                    Body::Tcp(seg) => (
                        (seg.seq as u64) << 32 | seg.ack as u64,
                        (p.size as u64) << 32 | seg.window as u64,
                    ),
                    Body::Udp {
                        src_port,
                        dst_port,
                        data,
                    } => (
                        (*src_port as u64) << 16 | *dst_port as u64,
                        (p.size as u64) << 32 | data.first().copied().unwrap_or(0) as u64,
                    ),
                };
                self.fold_hash(&[w.0, w.1]);
                self.deliver(node, p);
            }
            Ev::Timer(e) => {
                let ep = &mut self.endpoints[e as usize];
                if ep.timer_at == Some(self.now) {
                    ep.timer_at = None;
                }
                if let Some(c) = ep.conn.as_mut() {
                    if c.poll_timeout().is_some_and(|t| t <= self.now) {
                        c.handle_timeout(self.now);
                    }
                }
                self.service(e);
            }
            Ev::FlowStart(f) => self.start_flow(f),
            Ev::FlowStop(f) => {
                for e in self.flows[f as usize].ends {
                    self.endpoints[e as usize].stopped = true;
                    self.service(e);
                }
            }
            Ev::Sample => self.sample(),
            Ev::AgentStart(a) => self.with_agent(a, |ag, cx| ag.start(cx)),
            Ev::AgentTimer(a, token) => self.with_agent(a, |ag, cx| ag.timer(cx, token)),
        }
    }

    fn start_flow(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let iss = flow.rng.next_u64() as u32;
        let port = 10_000 + (f % 50_000) as u16;
        let conn = Connection::connect(flow.tcp.clone(), &flow.cc, port, 5001, iss);
        let e = flow.ends[0];
        self.endpoints[e as usize].conn = Some(Box::new(conn));
        self.service(e);
    }

    /// After input on an endpoint: its application's work, then output
    /// draining and timer scheduling.
    fn service(&mut self, e: u32) {
        match self.endpoints[e as usize].agent {
            None => self.flow_app(e),
            Some(a) => self.agent_events(e, a),
        }
        self.flush(e);
    }

    /// The built-in application of a scenario flow (bulk, fixed-size, bidirectional).
    fn flow_app(&mut self, e: u32) {
        let now = self.now;
        let warmup = self.warmup;
        let ep = &mut self.endpoints[e as usize];
        let Some(c) = ep.conn.as_mut() else { return };
        let flow = &self.flows[ep.flow as usize];
        while let Some(ev) = c.poll_event() {
            match ev {
                Event::Reset => ep.reset = true,
                Event::TimedOut => ep.timed_out = true,
                _ => {}
            }
        }
        // Receive side: read everything, check it, count it.
        while let Some(b) = c.recv(usize::MAX) {
            let n = b.len() as u64;
            ep.corrupt += count_corrupt(ep.received, &b);
            ep.received += n;
            ep.goodput.add(now, n);
            ep.last_delivery = Some(now);
            if now >= warmup {
                ep.received_after_warmup += n;
            }
        }
        let peer_sends = flow.bidir || !ep.initiator;
        if let Traffic::Fixed(size) = flow.traffic {
            if peer_sends && ep.received >= size && ep.completed_at.is_none() {
                ep.completed_at = Some(now);
            }
        }
        // Send side.
        if ep.sender && c.state().is_synchronized() {
            let limit = match flow.traffic {
                Traffic::Fixed(size) => size,
                Traffic::Bulk if ep.stopped => ep.written,
                Traffic::Bulk => u64::MAX,
            };
            // Keep the unsent backlog near two windows (as Linux's send-buffer
            // autotuning does), so that stopping a bulk flow drains quickly.
            let unsent = c.send_buffered().saturating_sub(c.outstanding());
            let target = (2 * c.cwnd()).max(64 << 10);
            let mut want = target.saturating_sub(unsent).min(limit - ep.written);
            while want > 0 {
                let off = (ep.written % PATTERN_LEN as u64) as usize;
                let n = (want as usize).min(PATTERN_LEN - off);
                let took = c.send_slice(pattern(), off..off + n) as u64;
                ep.written += took;
                want -= took;
                if took < n as u64 {
                    break;
                }
            }
            if ep.written >= limit && matches!(c.state(), State::Established | State::CloseWait) {
                c.close();
            }
        } else if !ep.sender && c.state() == State::CloseWait {
            c.close();
        }
        if ep.stopped && !ep.sender && matches!(c.state(), State::Established | State::CloseWait) {
            c.close();
        }
    }

    /// Puts an endpoint's pending output on the wire and re-arms its timer.
    /// Never runs application code, so it is safe inside agent callbacks.
    fn flush(&mut self, e: u32) {
        let now = self.now;
        let ep = &mut self.endpoints[e as usize];
        let Some(c) = ep.conn.as_mut() else { return };
        // Output.
        let mut out = std::mem::take(&mut self.scratch);
        while let Some(s) = c.poll_transmit(now) {
            out.push(s);
        }
        let timeout = c.poll_timeout();
        if let Some(t) = timeout {
            // Record and compare the time the event is scheduled for, not a
            // deadline already past: `Ev::Timer` clears `timer_at` only when
            // it equals the current time, and a past value left behind would
            // keep every later (larger) deadline from being scheduled.
            let at = t.max(now);
            if ep.timer_at.is_none_or(|x| at < x) {
                ep.timer_at = Some(at);
                self.schedule(at, Ev::Timer(e));
            }
        }
        let ep = &self.endpoints[e as usize];
        let (src, dst, peer) = (ep.node, ep.peer_node, ep.peer);
        for s in out.drain(..) {
            self.send(src, Packet::tcp(src, dst, peer, s));
        }
        self.scratch = out;
    }

    /// Hands a packet to `node`'s routing.
    fn send(&mut self, node: NodeId, p: Packet) {
        let i = self.routing.out(node, p.dst);
        if i == u32::MAX {
            return;
        }
        self.enqueue(i, p);
    }

    fn enqueue(&mut self, i: u32, mut p: Packet) {
        let now = self.now;
        p.queued_ns = p.queued_ns.wrapping_sub(now.as_nanos());
        let warmup = self.warmup;
        let f = &mut self.ifaces[i as usize];
        f.stats.advance(now, warmup);
        if !f.busy && !f.wake_pending && f.qdisc.passes_through(p.size) {
            // It would enter the empty queue and leave it at once: account
            // for both and send it (its queueing time is zero).
            p.queued_ns = p.queued_ns.wrapping_add(now.as_nanos());
            f.stats.enqueued += 1;
            f.stats.set(p.size as u64, 1);
            self.transmit(i, p);
            return;
        }
        if f.qdisc.enqueue(now, p) {
            f.stats.enqueued += 1;
        } else {
            f.stats.drops += 1;
        }
        f.stats.set(f.qdisc.bytes(), f.qdisc.packets());
        if !f.busy && !f.wake_pending {
            self.try_send(i);
        }
    }

    fn try_send(&mut self, i: u32) {
        let now = self.now;
        let warmup = self.warmup;
        let f = &mut self.ifaces[i as usize];
        match f.qdisc.dequeue(now) {
            Dequeue::Packet(mut p) => {
                p.queued_ns = p.queued_ns.wrapping_add(now.as_nanos());
                self.transmit(i, p);
            }
            Dequeue::WaitUntil(t) => {
                if !f.wake_pending {
                    f.wake_pending = true;
                    self.schedule(t.max(now), Ev::Wake(i));
                }
            }
            Dequeue::Empty => {
                // An AQM may have dropped what was left at dequeue.
                if f.stats.current().packets != 0 {
                    f.stats.advance(now, warmup);
                    f.stats.set(0, 0);
                }
            }
        }
    }

    /// Starts sending `p`, just taken from interface `i`'s queue.
    fn transmit(&mut self, i: u32, p: Packet) {
        let now = self.now;
        let warmup = self.warmup;
        let f = &mut self.ifaces[i as usize];
        f.stats.advance(now, warmup);
        f.stats.set(f.qdisc.bytes(), f.qdisc.packets());
        f.stats.departed(now, warmup, p.size, p.payload, p.pure_ack);
        if let Some((_, c)) = f.capture.as_mut() {
            c.record(now, &p);
        }
        f.busy = true;
        let (done, lost, at, reorders) = match f.model.as_deref_mut() {
            None => {
                let done = now + f.rate.tx_time(p.size as u64);
                (done, f.rng.chance(f.loss), done + f.delay, false)
            }
            Some(m) => {
                let (done, lost, at) = m.depart(now, p.size, (f.rate, f.delay, f.loss), &mut f.rng);
                (done, lost, at, m.reorders())
            }
        };
        if lost {
            f.stats.wire_losses += 1;
        } else {
            self.seq += 1;
            let seq = self.seq;
            if reorders {
                // Keep the pipeline sorted by arrival time, ties in
                // sending order: `Arrive` takes the earliest.
                let k = f.pipeline.partition_point(|(t, _, _)| *t <= at);
                f.pipeline.insert(k, (at, seq, p));
                self.queue.push(at, seq, NEAR, Ev::Arrive(i));
            } else {
                // Arrival times never decrease here: only the
                // first packet's arrival is queued.
                f.pipeline.push_back((at, seq, p));
                if f.pipeline.len() == 1 {
                    self.queue.push(at, seq, NEAR, Ev::Arrive(i));
                }
            }
        }
        self.schedule(done, Ev::TxDone(i));
        self.transmissions += 1;
    }

    fn deliver(&mut self, node: NodeId, p: Packet) {
        if p.dst != node {
            self.send(node, p);
            return;
        }
        let e = p.endpoint;
        let seg = match p.body {
            Body::Tcp(seg) => seg,
            Body::Udp {
                src_port,
                dst_port,
                data,
            } => {
                // No ICMP: a datagram to a port nobody bound is dropped.
                if let Some(&a) = self.udp_ports.get(&(node, dst_port)) {
                    let from = p.src;
                    self.with_agent(a, |ag, cx| ag.datagram(cx, from, src_port, dst_port, data));
                }
                return;
            }
        };
        let now = self.now;
        let measured = now >= self.warmup && self.measured(e);
        let ep = &mut self.endpoints[e as usize];
        if measured && p.payload > 0 {
            ep.queue_delay.add(p.queued_ns as f64 / 1e9);
        }
        match ep.conn.as_mut() {
            Some(c) if c.state() != State::Closed => {
                let samples = c.stats().rtt_samples;
                c.handle_segment(now, seg);
                if measured && c.stats().rtt_samples > samples {
                    ep.rtt.add(c.latest_rtt().as_secs_f64());
                }
            }
            None if !ep.initiator => {
                let accepted = if let Some(cfg) = ep.accept.as_deref() {
                    let a = ep.agent.expect("an agent socket has an agent");
                    let iss = self.agents[a as usize].rng.next_u64() as u32;
                    Connection::accept(cfg.0.clone(), &cfg.1, &seg, iss, now)
                } else {
                    let flow = &mut self.flows[ep.flow as usize];
                    let iss = flow.rng.next_u64() as u32;
                    Connection::accept(flow.tcp.clone(), &flow.cc, &seg, iss, now)
                };
                let ep = &mut self.endpoints[e as usize];
                match accepted {
                    Some(c) => {
                        ep.conn = Some(Box::new(c));
                        ep.accepted = ep.agent.is_some();
                    }
                    None => return self.reply_reset(e, &seg),
                }
            }
            _ => return self.reply_reset(e, &seg),
        }
        self.service(e);
    }

    /// Whether endpoint `e`'s latency is recorded: a scenario flow's end,
    /// or an agent's socket whose either end is traced ([`Cx::trace`]).
    fn measured(&self, e: u32) -> bool {
        let ep = &self.endpoints[e as usize];
        ep.flow != u32::MAX || ep.sender || self.endpoints[ep.peer as usize].sender
    }

    fn reply_reset(&mut self, e: u32, seg: &Segment) {
        if let Some(r) = reset_for(seg) {
            let ep = &self.endpoints[e as usize];
            let p = Packet::tcp(ep.node, ep.peer_node, ep.peer, r);
            self.send(ep.node, p);
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        self.trace_times.push(now);
        for ep in &mut self.endpoints {
            if !ep.sender {
                continue;
            }
            let row = match &ep.conn {
                Some(c) if c.state() != State::Closed => {
                    let ss = c.ssthresh();
                    TraceSample {
                        cwnd: c.cwnd() as f64,
                        ssthresh: if ss == u64::MAX { f64::NAN } else { ss as f64 },
                        srtt_ms: c.srtt().as_millis_f64(),
                        pipe: c.pipe() as f64,
                    }
                }
                _ => TraceSample::CLOSED,
            };
            ep.trace.push(row);
        }
        for f in &mut self.ifaces {
            f.trace.push(f.stats.current());
        }
        let next = now + self.trace_interval;
        if next <= self.end_time() {
            self.schedule(next, Ev::Sample);
        }
    }

    /// Closes the books at the end time.
    fn finish(&mut self) {
        let end = self.end_time();
        let warmup = self.warmup;
        for f in &mut self.ifaces {
            f.stats.advance(end, warmup);
            f.stats.close_ack_run();
        }
        for ep in &mut self.endpoints {
            ep.goodput.pad_to(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{count_corrupt, pattern, PATTERN_LEN};

    #[test]
    fn corrupt_bytes_are_counted_whether_or_not_they_were_copied() {
        let p = pattern();
        let off = PATTERN_LEN as u64 - 100; // the slice wraps around the pattern
        let want: Vec<u8> = (0..300)
            .map(|i| p[(off as usize + i) % PATTERN_LEN])
            .collect();
        assert_eq!(count_corrupt(off, &want), 0, "a copy of the right bytes");
        let mut bad = want.clone();
        for i in [0, 150, 299] {
            bad[i] ^= 0x5a;
        }
        assert_eq!(count_corrupt(off, &bad), 3);
        // The pattern's own memory is right at its offset and wrong elsewhere.
        assert_eq!(count_corrupt(7, &p[7..1007]), 0);
        assert!(count_corrupt(8, &p[7..1007]) > 900);
        assert!(count_corrupt(7 + PATTERN_LEN as u64 * 3, &p[7..1007]) == 0);
    }
}
