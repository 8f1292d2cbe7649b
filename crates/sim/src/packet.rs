//! Packets as the simulated network carries them.

use bytes::Bytes;
use hopwise_proto::tcp::{Ecn, Segment};

/// A node of the simulation (`[[node]]`, in scenario order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The node's position in the scenario's node list.
    pub fn index(self) -> usize {
        self.0 as usize
    }
    /// The id as a number, for an application that writes it into its own
    /// messages (a peer id); [`NodeId::from_raw`] reads it back.
    pub fn raw(self) -> u32 {
        self.0
    }
    /// The id that [`NodeId::raw`] gave. A number that names no node of the
    /// simulation is unreachable: packets to it are dropped.
    pub fn from_raw(raw: u32) -> NodeId {
        NodeId(raw)
    }
}

/// What a packet carries.
#[derive(Clone, Debug)]
pub enum Body {
    Tcp(Segment),
    Udp {
        src_port: u16,
        dst_port: u16,
        data: Bytes,
    },
}

/// IPv4 and UDP headers.
pub const UDP_OVERHEAD: u32 = 28;

/// A packet in flight. `size` is the IP total length; `payload` the transport
/// payload, kept beside the body so that queue disciplines and statistics
/// never have to look inside.
#[derive(Clone, Debug)]
pub struct Packet {
    pub src: NodeId,
    pub dst: NodeId,
    /// Receiving endpoint at `dst`.
    pub endpoint: u32,
    pub size: u32,
    pub payload: u32,
    /// A TCP segment without payload, SYN, FIN or RST: a pure ACK.
    pub pure_ack: bool,
    pub body: Body,
    /// Nanoseconds it waited in queues: each queue subtracts the time the
    /// packet enters it and adds the time it leaves (wrapping), so outside
    /// a queue this is the total so far. One field instead of two keeps
    /// the packets that fill the queues small.
    pub(crate) queued_ns: u64,
}

impl Packet {
    /// A UDP datagram; `endpoint` is unused.
    pub fn udp(src: NodeId, dst: NodeId, src_port: u16, dst_port: u16, data: Bytes) -> Packet {
        Packet {
            src,
            dst,
            endpoint: u32::MAX,
            size: UDP_OVERHEAD + data.len() as u32,
            payload: data.len() as u32,
            pure_ack: false,
            queued_ns: 0,
            body: Body::Udp {
                src_port,
                dst_port,
                data,
            },
        }
    }

    pub fn tcp(src: NodeId, dst: NodeId, endpoint: u32, seg: Segment) -> Packet {
        Packet {
            src,
            dst,
            endpoint,
            size: seg.wire_len(),
            payload: seg.payload_len(),
            pure_ack: seg.is_pure_ack(),
            body: Body::Tcp(seg),
            queued_ns: 0,
        }
    }

    /// The ECN codepoint of the packet's IP header: a TCP segment's own
    /// (`Segment::ecn`); a UDP datagram is not ECN-capable.
    pub fn ecn(&self) -> Ecn {
        match &self.body {
            Body::Tcp(s) => s.ecn,
            Body::Udp { .. } => Ecn::NotEct,
        }
    }

    /// Marks the packet Congestion Experienced, as an AQM does instead of
    /// dropping it (RFC 3168 §5): only an ECN-capable packet can be
    /// marked. Returns whether it was (a packet already CE stays CE and
    /// counts as marked).
    pub fn mark_ce(&mut self) -> bool {
        match &mut self.body {
            Body::Tcp(s) if s.ecn.capable() => {
                s.ecn = Ecn::Ce;
                true
            }
            _ => false,
        }
    }
}
