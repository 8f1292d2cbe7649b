//! Circuits and streams over BackTap, sans-IO: what `hopwise relay` and
//! `hopwise proxy` run (`docs/relay.md` is the protocol description).
//!
//! * [`cell`]: the 509-byte relay-cell body (relay_cmd, stream_id, length,
//!   data), Tor's layout.
//! * [`control`]: link frames and the circuit control messages (CREATE,
//!   CREATED, DESTROY, RELAY), delivered reliably per link.
//! * [`onion`]: the ntor handshake and the onion layers (per hop and
//!   direction: AES-128-CTR and a running SHA-256 digest).
//! * [`Node`]: one per relay or proxy. It owns the BackTap
//!   [`Endpoint`](crate::backtap::Endpoint) and implements the three roles a
//!   node plays in a circuit: the client (onion proxy) that builds circuits
//!   one hop at a time and opens streams, the forwarding relay that extends
//!   circuits and forwards cells (BackTap does the forwarding and applies
//!   the relay's onion layer), and the exit that turns streams into TCP
//!   connections (the driver opens them).
//! * [`policy`]: the exit policy. [`socks`]: SOCKS5 parsing for the proxy.
//!
//! The node sees *links* ([`LinkId`]), authenticated channels to neighbours
//! that carry frames; `crate::link` (feature `link`) implements them with
//! Noise, and `crate::overlay` puts the two together.
//!
//! # Layering and the cell format
//!
//! ```text
//!   UDP datagram  = link header (type, receiver index, counter) + AEAD(frame)
//!   frame         = BackTap datagram | control message | control ack
//!   BackTap cell  = circ_id seq flags | body[509]      <- preamble read by every hop
//!   body          = relay_cmd recognized stream_id digest length data[498]
//! ```
//!
//! The link AEAD is per hop and covers the whole frame. The onion layers
//! cover the *body*, one per hop of the circuit; the preamble (sequence
//! number and flags) stays outside them so that each relay can run
//! BackTap's per-hop reliability and flow control on cells it cannot read
//! (seed 002 §3). `recognized` and `digest` tell a hop that a cell is for
//! it.

pub mod cell;
pub mod control;
mod node;
pub mod onion;
pub mod policy;
pub mod socks;

#[cfg(test)]
mod tests;

pub use control::{DestroyReason, Identity};
pub use node::{
    BuildError, Node, NodeConfig, NodeEvent, NodeStats, Observed, Observer, Read, Role,
    StreamError, StreamKey,
};

use std::fmt;

/// A link to a neighbour, as numbered by the link layer: `LinkId(i)` for
/// `i < directory.len()` is the relay at index `i` of the directory; larger
/// ids are clients that connected to this node. A client's id is reused by a
/// later client once its link has gone down (after `LinkEvent::Down`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);

/// A relay cell or a frame that did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellError {
    /// `recognized` is not zero (with onion encryption: not for this hop).
    Unrecognized,
    UnknownCommand(u8),
    /// `length` over 498.
    BadLength(usize),
    /// The data does not fit the command.
    BadData(cell::RelayCmd),
    /// A frame or control message ends early (or has trailing bytes).
    Truncated,
    UnknownFrame(u8),
    UnknownControl(u8),
    TooManyHops(usize),
}

impl fmt::Display for CellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CellError::Unrecognized => write!(f, "relay cell not recognized"),
            CellError::UnknownCommand(c) => write!(f, "unknown relay command {c}"),
            CellError::BadLength(l) => write!(f, "relay cell length {l} over 498"),
            CellError::BadData(c) => write!(f, "malformed {c:?} cell"),
            CellError::Truncated => write!(f, "truncated frame"),
            CellError::UnknownFrame(t) => write!(f, "unknown frame type {t:#04x}"),
            CellError::UnknownControl(t) => write!(f, "unknown control message {t:#04x}"),
            CellError::TooManyHops(n) => write!(f, "CREATE with {n} hops"),
        }
    }
}
impl std::error::Error for CellError {}
