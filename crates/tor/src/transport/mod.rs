//! Transports: how cells move between the nodes of a circuit.
//!
//! A node (client, relay or exit) is one agent, [`crate::node::TorNode`]. It
//! owns the circuit *edges* (applications, streams, end-to-end windows,
//! measurements; [`crate::edge`]) and one [`Transport`], which moves cell
//! bodies between neighbours. The split is the one the paper draws between
//! Tor's end-to-end layer and its hop-by-hop layer:
//!
//! * the edge hands a cell to [`Transport::send_cell`] for `(hop, dir)` when
//!   [`Transport::can_send`] allows (control cells are always offered);
//! * the transport forwards cells of circuits that pass through, and hands
//!   cells that reach their delivering edge to the node in
//!   [`Io::delivered`]; when a packaging edge may send again after
//!   `can_send` said no, it reports it in [`Io::writable`].
//!
//! Transports: [`vanilla`] (TCP connections between neighbours that
//! multiplex circuits, or one per circuit for PCTCP) and [`backtap`] (the
//! sans-IO BackTap endpoint over UDP). N23 would be a gate in the vanilla
//! scheduler (`take_cell`); Tor's Vegas (proposal 324) replaces the
//! end-to-end window at the edges (`edge::CircWindow`).

pub mod backtap;
pub mod vanilla;

use crate::buckets::{Buckets, Side};
use crate::cell::CellPool;
use crate::config::Dir;
use crate::results::{HopLosses, HopSample, NodeSample, TransportStats};
use bytes::Bytes;
use hopwise_proto::time::Dur;
use hopwise_sim::{Cx, NodeId, Sock, SockEvent};

/// What a transport reports to its node during a call.
#[derive(Debug, Default)]
pub struct Io {
    /// Cells that reached their delivering edge: `(hop, dir, cell slot)`.
    pub delivered: Vec<(u32, Dir, u32)>,
    /// Packaging edges that may send again: `(hop, dir)`.
    pub writable: Vec<(u32, Dir)>,
}

/// Node state a transport may use during a call.
pub struct Shared<'a> {
    pub pool: &'a mut CellPool,
    pub buckets: &'a mut Buckets,
    pub io: &'a mut Io,
}

/// Timer tokens: the top byte says whose timer it is.
pub mod token {
    pub const SHIFT: u32 = 56;
    pub const CONNECT: u64 = 1;
    pub const BUCKET_READ: u64 = 2;
    pub const BUCKET_WRITE: u64 = 3;
    pub const TRANSPORT: u64 = 4;
    pub const SAMPLE_RW: u64 = 5;
    pub const SAMPLE_QUEUES: u64 = 6;
    pub const APP: u64 = 7;
    pub const RESPONSE: u64 = 8;

    pub fn make(kind: u64, payload: u64) -> u64 {
        (kind << SHIFT) | (payload & ((1 << SHIFT) - 1))
    }
    pub fn split(t: u64) -> (u64, u64) {
        (t >> SHIFT, t & ((1 << SHIFT) - 1))
    }
}

/// Arms the refill wake-up of `side` if the bucket is empty and none is pending.
pub fn block_on_bucket(cx: &mut Cx<'_>, buckets: &mut Buckets, side: Side) {
    if let Some(at) = buckets.block(side, cx.now()) {
        let kind = match side {
            Side::Read => token::BUCKET_READ,
            Side::Write => token::BUCKET_WRITE,
        };
        cx.set_timer(at, token::make(kind, 0));
    }
}

/// A node's hop-by-hop layer.
pub trait Transport {
    /// The agent started (listen, bind).
    fn start(&mut self, cx: &mut Cx<'_>);
    /// Every node has started: open connections.
    fn connect(&mut self, cx: &mut Cx<'_>);
    /// A TCP event on a socket; false if the socket is not the transport's.
    fn tcp_event(
        &mut self,
        cx: &mut Cx<'_>,
        sock: Sock,
        ev: SockEvent,
        sh: &mut Shared<'_>,
    ) -> bool;
    /// A UDP datagram for the transport.
    fn datagram(&mut self, _cx: &mut Cx<'_>, _from: NodeId, _data: Bytes, _sh: &mut Shared<'_>) {}
    /// A [`token::TRANSPORT`] timer fired.
    fn timer(&mut self, _cx: &mut Cx<'_>, _payload: u64, _sh: &mut Shared<'_>) {}
    /// The relay's refill phase (drawn once, at start, before any traffic):
    /// a transport with a bucket of its own refills at the same instants as
    /// the node's buckets.
    fn set_bucket_phase(&mut self, _phase: Dur) {}
    /// The bucket of `side` was refilled: blocked work may resume.
    fn bucket_refilled(&mut self, side: Side);
    /// Whether the packaging edge may add a data cell to `(hop, dir)`.
    fn can_send(&self, hop: u32, dir: Dir) -> bool;
    /// Takes cell `cell` (a pool slot, which the transport now owns) into
    /// `(hop, dir)`. Returns false, keeping nothing, if it has no room; the
    /// caller keeps the cell and retries after [`Io::writable`].
    fn send_cell(
        &mut self,
        cx: &mut Cx<'_>,
        hop: u32,
        dir: Dir,
        cell: u32,
        sh: &mut Shared<'_>,
    ) -> bool;
    /// Reads what may be read (filling [`Io::delivered`]).
    fn poll_reads(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>);
    /// Writes what may be written.
    fn poll_writes(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>);
    /// Queue state of a hop.
    fn sample_hop(&mut self, cx: &mut Cx<'_>, hop: u32) -> HopSample;
    /// Node-wide buffer state.
    fn sample_node(&mut self, cx: &mut Cx<'_>) -> NodeSample;
    fn stats(&self) -> TransportStats;
    /// Loss recovery of the circuit's hop from this node, both directions
    /// summed; `None` for transports without per-circuit hop reliability
    /// (TCP's retransmissions belong to connections, not circuits).
    fn hop_losses(&self, _hop: u32) -> Option<HopLosses> {
        None
    }
}
