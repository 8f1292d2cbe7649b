//! Read access to a simulation: typed handles for flows, link directions and
//! nodes, and the queries reports, reproductions, overlays and the CLI use
//! to read results. The engine's fields are private to the crate; this is
//! the measurement API.
//!
//! ```no_run
//! # fn show(sim: &hopwise_sim::Sim) {
//! for f in sim.flows() {
//!     let flow = sim.flow(f);
//!     let rx = sim.endpoint(flow.ends()[1]);
//!     println!("{}: {} B, median RTT {:?} s", flow.name(), rx.received(),
//!              sim.endpoint(flow.ends()[0]).rtt().median());
//! }
//! let q = sim.iface_id("bottleneck:ab").expect("a link named bottleneck");
//! println!("drops {}", sim.iface(q).stats().drops);
//! # }
//! ```

use crate::agent::Sock;
use crate::measure::{Binned, QueueSample, QueueStats, TraceSample};
use crate::packet::NodeId;
use crate::routing::Routing;
use crate::sim::{Endpoint, Flow, Iface, Sim};
use crate::spec::{NodeKind, Traffic};
use hopwise_experiment::stats::LogHistogram;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{Connection, TcpConfig};
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;

/// A scenario flow (`[[flow]]`), in the order the scenario lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub(crate) u32);

impl FlowId {
    /// The flow's position in the scenario's flow list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One direction of a link: a node's output port and its queue. The
/// directions are numbered in link order, `<link>:ab` before `<link>:ba`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IfaceId(pub(crate) u32);

impl IfaceId {
    /// The direction's position in [`Sim::ifaces`]: `2·k` for the `k`-th
    /// link's `ab` direction, `2·k + 1` for its `ba` direction.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl Sim {
    /// The scenario's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The end of the warm-up: measurements (goodput after warm-up, queue
    /// means, latency samples) count from here.
    pub fn warmup(&self) -> Time {
        self.warmup
    }
    /// The scenario's duration.
    pub fn duration(&self) -> Dur {
        self.duration
    }
    /// Interval between trace ticks (`measure.trace_interval`; zero: no traces).
    pub fn trace_interval(&self) -> Dur {
        self.trace_interval
    }
    /// The times of the trace ticks taken so far; the `i`-th entry of every
    /// [`Endpoint::trace`] and [`Iface::trace`] belongs to the `i`-th time.
    pub fn trace_times(&self) -> &[Time] {
        &self.trace_times
    }

    /// Every node, in scenario order.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeId> + 'static {
        (0..self.nodes.len() as u32).map(NodeId)
    }
    /// A node's name.
    pub fn node_name(&self, n: NodeId) -> &str {
        &self.nodes[n.index()].name
    }
    /// A node's kind (host or switch).
    pub fn node_kind(&self, n: NodeId) -> NodeKind {
        self.nodes[n.index()].kind
    }
    /// The routes packets follow: each node's output interface towards
    /// each destination, paths and their propagation delays.
    pub fn routing(&self) -> &Routing {
        &self.routing
    }

    /// Every scenario flow, in scenario order.
    pub fn flows(&self) -> impl ExactSizeIterator<Item = FlowId> + 'static {
        (0..self.flows.len() as u32).map(FlowId)
    }
    /// A flow by name.
    pub fn flow_id(&self, name: &str) -> Option<FlowId> {
        self.flows
            .iter()
            .position(|f| f.name == name)
            .map(|i| FlowId(i as u32))
    }
    /// A flow's configuration and its two ends.
    pub fn flow(&self, f: FlowId) -> &Flow {
        &self.flows[f.index()]
    }

    /// Every link direction, in link order (`ab` before `ba`).
    pub fn ifaces(&self) -> impl ExactSizeIterator<Item = IfaceId> + 'static {
        (0..self.ifaces.len() as u32).map(IfaceId)
    }
    /// A link direction by name (`<link>:ab` or `<link>:ba`).
    pub fn iface_id(&self, name: &str) -> Option<IfaceId> {
        self.ifaces
            .iter()
            .position(|f| f.name == name)
            .map(|i| IfaceId(i as u32))
    }
    /// A link direction: its configuration, queue statistics and trace.
    pub fn iface(&self, i: IfaceId) -> &Iface {
        &self.ifaces[i.index()]
    }

    /// Every TCP endpoint: the two ends of each flow, then agents' sockets
    /// in the order they were opened.
    pub fn socks(&self) -> impl ExactSizeIterator<Item = Sock> + 'static {
        0..self.endpoints.len() as Sock
    }
    /// A TCP endpoint (a flow's end or an agent's socket) and its measurements.
    pub fn endpoint(&self, s: Sock) -> &Endpoint {
        &self.endpoints[s as usize]
    }
}

impl Flow {
    /// The flow's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The initiating node.
    pub fn from(&self) -> NodeId {
        self.from
    }
    /// The responding node.
    pub fn to(&self) -> NodeId {
        self.to
    }
    /// Its congestion control.
    pub fn cc(&self) -> &CcConfig {
        &self.cc
    }
    /// Its TCP configuration.
    pub fn tcp(&self) -> &TcpConfig {
        &self.tcp
    }
    /// What the application sends.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }
    /// Whether both ends send.
    pub fn bidir(&self) -> bool {
        self.bidir
    }
    /// Its start time (start jitter included).
    pub fn start(&self) -> Time {
        self.start
    }
    /// When its application stops sending, if it does.
    pub fn stop(&self) -> Option<Time> {
        self.stop
    }
    /// Its endpoints: the initiator (on [`Flow::from`]), then the responder.
    pub fn ends(&self) -> [Sock; 2] {
        self.ends
    }
}

impl Endpoint {
    /// The node it is on.
    pub fn node(&self) -> NodeId {
        self.node
    }
    /// The node of the other end.
    pub fn peer_node(&self) -> NodeId {
        self.peer_node
    }
    /// The other end.
    pub fn peer(&self) -> Sock {
        self.peer
    }
    /// The scenario flow it belongs to; `None` for an agent's socket.
    pub fn flow(&self) -> Option<FlowId> {
        (self.flow != u32::MAX).then_some(FlowId(self.flow))
    }
    /// The agent that owns it, for an agent's socket.
    pub fn agent(&self) -> Option<u32> {
        self.agent
    }
    /// Whether this end opened the connection.
    pub fn is_initiator(&self) -> bool {
        self.initiator
    }
    /// Whether this end sends data (a flow's sending end, or a socket an agent traces).
    pub fn is_sender(&self) -> bool {
        self.sender
    }
    /// The TCP connection, once it exists.
    pub fn conn(&self) -> Option<&Connection> {
        self.conn.as_deref()
    }
    /// Bytes a flow's application wrote.
    pub fn written(&self) -> u64 {
        self.written
    }
    /// Bytes the application read.
    pub fn received(&self) -> u64 {
        self.received
    }
    /// Bytes the application read after the warm-up.
    pub fn received_after_warmup(&self) -> u64 {
        self.received_after_warmup
    }
    /// Bytes read that differ from what the flow's sender wrote (0 unless a bug).
    pub fn corrupt(&self) -> u64 {
        self.corrupt
    }
    /// Bytes read per `measure.goodput_interval`.
    pub fn goodput(&self) -> &Binned {
        &self.goodput
    }
    /// When the application last read data.
    pub fn last_delivery(&self) -> Option<Time> {
        self.last_delivery
    }
    /// When the last byte of a fixed-size transfer was read.
    pub fn completed_at(&self) -> Option<Time> {
        self.completed_at
    }
    /// Whether the connection was reset.
    pub fn was_reset(&self) -> bool {
        self.reset
    }
    /// Whether the handshake or the retransmissions gave up.
    pub fn timed_out(&self) -> bool {
        self.timed_out
    }
    /// This end's state as a sender at each trace tick (see
    /// [`Sim::trace_times`]); empty unless it sends.
    pub fn trace(&self) -> &[TraceSample] {
        &self.trace
    }
    /// The RTT samples (seconds) this end took after the warm-up: one per
    /// ACK that gave its TCP an RTT measurement (RFC 7323 timestamps, or
    /// Karn's rule without them). Recorded for flows' ends and for sockets
    /// whose connection an agent traces ([`crate::Cx::trace`]).
    pub fn rtt(&self) -> &LogHistogram {
        &self.rtt
    }
    /// For each data packet (one with payload, retransmissions included)
    /// this end received after the warm-up, the total time (seconds) it
    /// waited in queues on its path, not counting transmission and
    /// propagation. Recorded like [`Endpoint::rtt`].
    pub fn queue_delay(&self) -> &LogHistogram {
        &self.queue_delay
    }
}

impl Iface {
    /// `<link>:ab` or `<link>:ba`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The link's name.
    pub fn link(&self) -> &str {
        &self.link
    }
    /// The node that transmits on it.
    pub fn from(&self) -> NodeId {
        self.from
    }
    /// The node at the far end.
    pub fn to(&self) -> NodeId {
        self.to
    }
    /// Its rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }
    /// Its one-way propagation delay.
    pub fn delay(&self) -> Dur {
        self.delay
    }
    /// Its random-loss probability per packet.
    pub fn loss(&self) -> f64 {
        self.loss
    }
    /// Its queue's statistics (occupancy, drops, departures, ACK bursts).
    pub fn stats(&self) -> &QueueStats {
        &self.stats
    }
    /// What its queue's AQM dropped and marked (zero without an AQM). A
    /// packet CoDel or FQ-CoDel dropped after queueing it is in
    /// `queued_drops`, not in [`QueueStats::drops`] (refused at enqueue).
    pub fn aqm_counts(&self) -> crate::aqm::AqmCounts {
        self.qdisc.aqm_counts()
    }
    /// Its queue's occupancy at each trace tick (see [`Sim::trace_times`]).
    pub fn trace(&self) -> &[QueueSample] {
        &self.trace
    }
}
