//! Scenario specification: a plain description of nodes, links, queues,
//! flows and measurement options. Scenario files (TOML, see
//! [`crate::scenario`]) parse into this; reproductions build it in code.

pub use crate::link::{DeliveryTrace, GilbertElliott, Jitter, LinkModel};
use crate::packet::NodeId;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;

/// A whole experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// Simulated time to run.
    pub duration: Dur,
    /// Master seed; every component derives its own stream from it and its name.
    pub seed: u64,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    pub measure: MeasureSpec,
    /// Each flow's start (and stop) is shifted by a uniform random amount in
    /// `[0, start_jitter)`, drawn from the flow's own random stream.
    pub start_jitter: Dur,
    /// The overlay sections of a scenario file (`tor`, `relay`, `circuit`,
    /// `swarm`, `otcp`), as TOML after `--set` overrides: this crate does
    /// not model overlays; `hopwise-overlay` reads them and adds their
    /// nodes, links and agents. Empty for scenarios built in code.
    pub overlay: toml::Table,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// An end system that runs TCP endpoints (and forwards, if routes go through it).
    Host,
    /// A switch or router: forwards only, one output queue per port.
    Switch,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

/// A full-duplex point-to-point link between nodes `a` and `b`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub name: String,
    pub a: String,
    pub b: String,
    /// Direction a → b: `a`'s output port.
    pub ab: DirSpec,
    /// Direction b → a: `b`'s output port.
    pub ba: DirSpec,
}

/// One direction of a link: the sending node's output port.
#[derive(Clone, Debug, PartialEq)]
pub struct DirSpec {
    pub rate: Rate,
    pub delay: Dur,
    pub queue: QueueSpec,
    /// Probability that a packet is lost on this direction (after the queue), seeded.
    pub loss: f64,
    /// A delivery trace (which then sets the rate), bursty loss and delay
    /// jitter; none by default.
    pub model: LinkModel,
}

/// How a queue limit is counted (packets or bytes; 1000 packets by default,
/// Linux's txqueuelen). The scenario files read it with `hopwise_config`.
pub use hopwise_config::QueueLimit as Limit;

/// What counts as an ACK for the "ACKs first" discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckClassifier {
    /// Seed 000 §IV: a TCP segment whose IP total length is below 64 B.
    /// ACKs with SACK blocks (64 B and more with timestamps) fall outside.
    Len64,
    /// Any TCP segment without payload.
    NoPayload,
}

/// An output queue discipline.
#[derive(Clone, Debug, PartialEq)]
pub enum QueueSpec {
    /// First in, first out; arrivals beyond the limit are dropped.
    DropTail { limit: Limit },
    /// Seed 000 §IV's HTB setup: ACKs in a high-priority class, data in a
    /// class with `data_share` of the link rate guaranteed; both classes
    /// together throttled to `throttle` of the link rate, so that the queue
    /// forms here and not in the device.
    AckFirst {
        classifier: AckClassifier,
        data_share: f64,
        throttle: f64,
        ack_limit: Limit,
        data_limit: Limit,
    },
    /// A token-bucket shaper (rate, burst) in front of a drop-tail queue.
    TokenBucket {
        rate: Rate,
        burst: u64,
        limit: Limit,
    },
    /// CoDel (RFC 8289) on one FIFO.
    Codel {
        target: Dur,
        interval: Dur,
        limit: Limit,
        /// Mark ECN-capable packets instead of dropping them.
        ecn: bool,
    },
    /// FQ-CoDel (RFC 8290): `flows` hashed queues, each under CoDel,
    /// served by deficit round robin with `quantum` bytes.
    FqCodel {
        target: Dur,
        interval: Dur,
        limit: Limit,
        flows: u32,
        quantum: u32,
        ecn: bool,
    },
    /// PIE (RFC 8033).
    Pie {
        target: Dur,
        tupdate: Dur,
        alpha: f64,
        beta: f64,
        max_burst: Dur,
        limit: Limit,
        ecn: bool,
    },
    /// RED (Floyd & Jacobson 1993), optionally gentle (Floyd 2000).
    /// `min_th` and `max_th` count in the same unit.
    Red {
        min_th: Limit,
        max_th: Limit,
        max_p: f64,
        weight: f64,
        gentle: bool,
        limit: Limit,
        ecn: bool,
    },
}

impl QueueSpec {
    /// The limit of the queue that data packets wait in (the data class's
    /// for `AckFirst`).
    pub fn limit(&self) -> Limit {
        match *self {
            QueueSpec::DropTail { limit }
            | QueueSpec::TokenBucket { limit, .. }
            | QueueSpec::Codel { limit, .. }
            | QueueSpec::FqCodel { limit, .. }
            | QueueSpec::Pie { limit, .. }
            | QueueSpec::Red { limit, .. } => limit,
            QueueSpec::AckFirst { data_limit, .. } => data_limit,
        }
    }
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec::DropTail {
            limit: Limit::default(),
        }
    }
}

/// What a flow's application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// Backlogged: the sender always has data, until `stop`.
    Bulk,
    /// Sends exactly this many bytes, then closes.
    Fixed(u64),
}

/// One TCP connection from `from` (the initiator) to `to`.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    /// Congestion control of the initiator (and of the responder when `bidir`).
    pub cc: CcConfig,
    pub tcp: TcpConfig,
    pub start: Dur,
    /// When the application stops writing and closes (bulk flows); `None` = run to the end.
    pub stop: Option<Dur>,
    pub traffic: Traffic,
    /// The responder sends the same traffic back on the same connection
    /// (data both ways, ACKs piggybacked).
    pub bidir: bool,
    /// The `[[flow]]` entry's own name when it was expanded with `count`
    /// into `<name>-0` … `<name>-<N-1>`; `None` otherwise.
    pub group: Option<String>,
}

/// Measurement options.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureSpec {
    /// Goodput time-series bin (default 1 s).
    pub goodput_interval: Dur,
    /// Sampling interval of cwnd/RTT and queue traces (default 100 ms).
    pub trace_interval: Dur,
    /// Utilisation, mean queue and goodput totals ignore the first `warmup`.
    pub warmup: Dur,
    /// Link directions to capture as pcap: `<link>` (both directions),
    /// `<link>:ab` or `<link>:ba` (see [`crate::pcap`]). Default none.
    /// `hopwise sim` honours it; `Sim::new` does not open files (call
    /// [`crate::Sim::attach_capture`]).
    pub capture: Vec<String>,
    /// Bytes kept per captured packet (default [`crate::pcap::DEFAULT_SNAPLEN`]).
    pub capture_snaplen: u32,
}

impl Default for MeasureSpec {
    fn default() -> Self {
        MeasureSpec {
            goodput_interval: Dur::SECOND,
            trace_interval: Dur::from_millis(100),
            warmup: Dur::ZERO,
            capture: Vec::new(),
            capture_snaplen: crate::pcap::DEFAULT_SNAPLEN,
        }
    }
}

impl Scenario {
    /// An empty scenario with defaults; add nodes, links and flows.
    pub fn new(name: impl Into<String>, duration: Dur, seed: u64) -> Self {
        Scenario {
            name: name.into(),
            duration,
            seed,
            nodes: Vec::new(),
            links: Vec::new(),
            flows: Vec::new(),
            measure: MeasureSpec::default(),
            start_jitter: Dur::ZERO,
            overlay: toml::Table::new(),
        }
    }

    /// A node's id by name: its position in `nodes`, as [`crate::Sim::new`]
    /// and [`crate::routing::Routing::of`] number nodes.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| NodeId(i as u32))
    }
}
