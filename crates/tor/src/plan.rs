//! What the builder tells each node: its links to neighbours, the circuits
//! through it, and the circuit ends (edges) it hosts.

use crate::config::{BucketSpec, Traffic};
use hopwise_proto::time::Time;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_sim::NodeId;

/// The node's access link towards its switch (its only way out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uplink {
    pub rate: Rate,
    /// Drop-tail limit of the host's output queue.
    pub queue: Limit,
}

/// One side of a circuit at a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leg {
    /// The application is on this side (the client's `prev`, the exit's `next`).
    Edge,
    /// A link to a neighbour: the node-local link index and the circuit id on it.
    Link { link: u32, circ_id: u16 },
}

impl Leg {
    pub fn link(self) -> Option<(u32, u16)> {
        match self {
            Leg::Edge => None,
            Leg::Link { link, circ_id } => Some((link, circ_id)),
        }
    }
}

/// A connection (TCP) or peer association (BackTap) with a neighbour.
#[derive(Clone, Debug)]
pub struct LinkPlan {
    /// Network-wide link id (carried in the link handshake).
    pub global: u32,
    pub peer: NodeId,
    pub peer_name: String,
    /// This node opens the connection.
    pub initiator: bool,
    /// `(circuit id on this link, hop index at this node)`.
    pub circuits: Vec<(u16, u32)>,
}

/// One circuit passing through (or ending at) a node.
#[derive(Clone, Copy, Debug)]
pub struct HopPlan {
    /// Network-wide circuit index.
    pub circ: u32,
    /// Towards the client.
    pub prev: Leg,
    /// Towards the exit.
    pub next: Leg,
    /// Sample this hop's queues.
    pub trace: bool,
}

/// A circuit end hosted by a node.
#[derive(Clone, Debug)]
pub struct EdgePlan {
    pub hop: u32,
    pub circ: u32,
    /// The client end (onion proxy) rather than the exit.
    pub client: bool,
    pub traffic: Traffic,
    /// Exit only: the server host (`None`: the exit serves requests itself).
    pub server: Option<NodeId>,
    /// Client only: when the application starts.
    pub start: Time,
    /// Record R(t)/W(t).
    pub trace: bool,
}

/// Everything one node needs.
#[derive(Clone, Debug)]
pub struct NodePlan {
    pub name: String,
    /// The scenario seed (for per-circuit random streams).
    pub seed: u64,
    pub bucket: Option<BucketSpec>,
    /// The host's uplink (`None`: unknown, e.g. a node added by the caller).
    pub uplink: Option<Uplink>,
    pub links: Vec<LinkPlan>,
    pub hops: Vec<HopPlan>,
    pub edges: Vec<EdgePlan>,
}
