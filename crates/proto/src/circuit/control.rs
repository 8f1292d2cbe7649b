//! Link frames and circuit control messages (`docs/relay.md`, "Frames").
//!
//! A *frame* is the plaintext a secure link carries in one datagram. Its first
//! byte tells what it is:
//!
//! ```text
//! frame   := BACKTAP | CTL | CTL_ACK
//! BACKTAP := 0x02 ...                    a whole BackTap v2 datagram (0x02 is its version byte)
//! CTL     := 0x40 seq:u32 msg            a control message, delivered reliably and in order
//! CTL_ACK := 0x41 next:u32               every CTL below `next` arrived
//! msg     := CREATE | CREATED | DESTROY | RELAY
//! CREATE  := 0x01 circ_id:u32 htype:u8 onionskin:[64]   open a circuit to this hop (its ntor handshake)
//! CREATED := 0x02 circ_id:u32 reply:[64]                the hop's handshake reply
//! DESTROY := 0x03 circ_id:u32 reason:u8                 tear the circuit down
//! RELAY   := 0x04 circ_id:u32 body:[509]                an onion-encrypted relay cell (EXTEND, EXTENDED)
//! ```
//!
//! CREATE names no further hops: a circuit grows one hop at a time
//! (telescoping). The client sends EXTEND, sealed for the circuit's last
//! hop, in a RELAY message; each hop on the way removes its layer and
//! passes it on, the last hop opens the next one with CREATE and answers
//! EXTENDED, which travels back the same way with a layer added per hop.
//! RELAY messages are only accepted while a circuit is being built, before
//! it carries its first BackTap cell, so that they and the BackTap cells
//! use each hop's cipher stream in one order (`docs/relay.md`, "Onion
//! layers").
//!
//! Control messages travel beside BackTap, not inside it: a BackTap endpoint
//! only accepts cells for circuits already installed, so a circuit must be
//! set up before its first cell. `circ_id` is the id of the circuit on this
//! link (the same number the BackTap cells carry); the sender of CREATE
//! chose it.
//!
//! The empty frame is the link's keepalive and never reaches this layer.

use super::CellError;
use crate::backtap::wire::{CellBody, CELL_BODY_LEN};

/// First byte of a frame carrying a BackTap datagram (its version byte).
pub const FRAME_BACKTAP: u8 = crate::backtap::wire::VERSION;
/// First byte of a control-message frame.
pub const FRAME_CTL: u8 = 0x40;
/// First byte of a control acknowledgement frame.
pub const FRAME_CTL_ACK: u8 = 0x41;

/// Most hops a circuit may be extended by after its first (a circuit is
/// at most nine relays long).
pub const MAX_HOPS: usize = 8;

/// Bytes of a handshake message (a CREATE's onionskin, a CREATED's reply).
pub const HANDSHAKE_LEN: usize = 64;

/// The handshake type of CREATE and EXTEND: ntor over X25519 and SHA-256
/// (Tor's number for ntor, tor-spec §5.1).
pub const HTYPE_NTOR: u8 = 2;

/// An identity: a relay's static X25519 public key.
pub type Identity = [u8; 32];

/// Why a circuit was torn down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DestroyReason {
    /// The client (or the operator) closed it.
    Requested,
    /// A peer broke the protocol (bad CREATE, circuit id in use, ...).
    Protocol,
    Internal,
    /// Too many circuits at a relay or from one client, or all queues
    /// together too full.
    ResourceLimit,
    /// The path names a relay that is not in the directory.
    UnknownRelay,
    /// The link to the next hop could not be set up, or went down.
    LinkFailed,
    /// The last hop does not allow exit.
    NotExit,
    /// The circuit did not finish building in time.
    Timeout,
    /// The node is shutting down.
    Shutdown,
    /// A relay refused the link: it takes no clients, or has as many as
    /// it allows.
    LinkRefused,
    Other(u8),
}

impl DestroyReason {
    pub fn to_u8(self) -> u8 {
        match self {
            DestroyReason::Requested => 0,
            DestroyReason::Protocol => 1,
            DestroyReason::Internal => 2,
            DestroyReason::ResourceLimit => 3,
            DestroyReason::UnknownRelay => 4,
            DestroyReason::LinkFailed => 5,
            DestroyReason::NotExit => 6,
            DestroyReason::Timeout => 7,
            DestroyReason::Shutdown => 8,
            DestroyReason::LinkRefused => 9,
            DestroyReason::Other(b) => b,
        }
    }
    pub fn from_u8(b: u8) -> DestroyReason {
        match b {
            0 => DestroyReason::Requested,
            1 => DestroyReason::Protocol,
            2 => DestroyReason::Internal,
            3 => DestroyReason::ResourceLimit,
            4 => DestroyReason::UnknownRelay,
            5 => DestroyReason::LinkFailed,
            6 => DestroyReason::NotExit,
            7 => DestroyReason::Timeout,
            8 => DestroyReason::Shutdown,
            9 => DestroyReason::LinkRefused,
            b => DestroyReason::Other(b),
        }
    }
}

impl std::fmt::Display for DestroyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            DestroyReason::Requested => "closed",
            DestroyReason::Protocol => "protocol violation",
            DestroyReason::Internal => "internal error",
            DestroyReason::ResourceLimit => "resource limit (too many circuits, or queues full)",
            DestroyReason::UnknownRelay => "unknown relay in the path",
            DestroyReason::LinkFailed => "link to the next hop failed",
            DestroyReason::NotExit => "the last relay is not an exit",
            DestroyReason::Timeout => "circuit build timed out",
            DestroyReason::Shutdown => "a node on the circuit is shutting down",
            DestroyReason::LinkRefused => {
                "a relay refused the link (it takes no clients, or has as many as it allows)"
            }
            DestroyReason::Other(b) => return write!(f, "reason {b}"),
        };
        f.write_str(s)
    }
}

/// A control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CtlMsg {
    Create {
        circ_id: u32,
        htype: u8,
        onionskin: [u8; HANDSHAKE_LEN],
    },
    Created {
        circ_id: u32,
        reply: [u8; HANDSHAKE_LEN],
    },
    Destroy {
        circ_id: u32,
        reason: DestroyReason,
    },
    /// An onion-encrypted relay cell (EXTEND or EXTENDED) on the control
    /// channel.
    Relay {
        circ_id: u32,
        body: Box<CellBody>,
    },
}

/// A decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A BackTap datagram (the whole frame, version byte included).
    BackTap(&'a [u8]),
    Ctl {
        seq: u32,
        msg: CtlMsg,
    },
    CtlAck {
        next: u32,
    },
}

/// Encodes a control message frame.
pub fn encode_ctl(seq: u32, msg: &CtlMsg) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + CELL_BODY_LEN);
    out.push(FRAME_CTL);
    out.extend_from_slice(&seq.to_be_bytes());
    match msg {
        CtlMsg::Create {
            circ_id,
            htype,
            onionskin,
        } => {
            out.push(0x01);
            out.extend_from_slice(&circ_id.to_be_bytes());
            out.push(*htype);
            out.extend_from_slice(onionskin);
        }
        CtlMsg::Created { circ_id, reply } => {
            out.push(0x02);
            out.extend_from_slice(&circ_id.to_be_bytes());
            out.extend_from_slice(reply);
        }
        CtlMsg::Relay { circ_id, body } => {
            out.push(0x04);
            out.extend_from_slice(&circ_id.to_be_bytes());
            out.extend_from_slice(&body[..]);
        }
        CtlMsg::Destroy { circ_id, reason } => {
            out.push(0x03);
            out.extend_from_slice(&circ_id.to_be_bytes());
            out.push(reason.to_u8());
        }
    }
    out
}

/// Encodes a control acknowledgement frame.
pub fn encode_ack(next: u32) -> [u8; 5] {
    let b = next.to_be_bytes();
    [FRAME_CTL_ACK, b[0], b[1], b[2], b[3]]
}

fn u32_at(d: &[u8], i: usize) -> Option<u32> {
    let b = d.get(i..i + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a frame. Never panics; trailing bytes after a control message are
/// an error (the encoding is canonical).
pub fn decode_frame(d: &[u8]) -> Result<Frame<'_>, CellError> {
    let Some(&t) = d.first() else {
        return Err(CellError::Truncated);
    };
    match t {
        FRAME_BACKTAP => Ok(Frame::BackTap(d)),
        FRAME_CTL_ACK => {
            if d.len() != 5 {
                return Err(CellError::Truncated);
            }
            Ok(Frame::CtlAck {
                next: u32_at(d, 1).ok_or(CellError::Truncated)?,
            })
        }
        FRAME_CTL => {
            let seq = u32_at(d, 1).ok_or(CellError::Truncated)?;
            let kind = *d.get(5).ok_or(CellError::Truncated)?;
            let circ_id = u32_at(d, 6).ok_or(CellError::Truncated)?;
            let rest = &d[10..];
            let msg = match kind {
                0x01 => {
                    let (&htype, skin) = rest.split_first().ok_or(CellError::Truncated)?;
                    CtlMsg::Create {
                        circ_id,
                        htype,
                        onionskin: skin.try_into().map_err(|_| CellError::Truncated)?,
                    }
                }
                0x02 => CtlMsg::Created {
                    circ_id,
                    reply: rest.try_into().map_err(|_| CellError::Truncated)?,
                },
                0x04 => {
                    let body: &CellBody = rest.try_into().map_err(|_| CellError::Truncated)?;
                    CtlMsg::Relay {
                        circ_id,
                        body: Box::new(*body),
                    }
                }
                0x03 => {
                    if rest.len() != 1 {
                        return Err(CellError::Truncated);
                    }
                    CtlMsg::Destroy {
                        circ_id,
                        reason: DestroyReason::from_u8(rest[0]),
                    }
                }
                k => return Err(CellError::UnknownControl(k)),
            };
            Ok(Frame::Ctl { seq, msg })
        }
        t => Err(CellError::UnknownFrame(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for m in [
            CtlMsg::Create {
                circ_id: 0x8000_0001,
                htype: HTYPE_NTOR,
                onionskin: [1; HANDSHAKE_LEN],
            },
            CtlMsg::Created {
                circ_id: 9,
                reply: [2; HANDSHAKE_LEN],
            },
            CtlMsg::Relay {
                circ_id: 4,
                body: Box::new([5; CELL_BODY_LEN]),
            },
            CtlMsg::Destroy {
                circ_id: 9,
                reason: DestroyReason::UnknownRelay,
            },
        ] {
            let f = encode_ctl(77, &m);
            assert_eq!(decode_frame(&f).unwrap(), Frame::Ctl { seq: 77, msg: m });
        }
        assert_eq!(
            decode_frame(&encode_ack(5)).unwrap(),
            Frame::CtlAck { next: 5 }
        );
    }

    #[test]
    fn rejects() {
        assert!(decode_frame(&[]).is_err());
        assert!(decode_frame(&[0x99]).is_err());
        for m in [
            CtlMsg::Create {
                circ_id: 1,
                htype: HTYPE_NTOR,
                onionskin: [1; HANDSHAKE_LEN],
            },
            CtlMsg::Created {
                circ_id: 1,
                reply: [1; HANDSHAKE_LEN],
            },
            CtlMsg::Relay {
                circ_id: 1,
                body: Box::new([1; CELL_BODY_LEN]),
            },
        ] {
            let mut f = encode_ctl(1, &m);
            f.pop();
            assert!(decode_frame(&f).is_err());
            f.extend_from_slice(&[0, 0]);
            assert!(decode_frame(&f).is_err());
        }
        let mut f = encode_ctl(
            1,
            &CtlMsg::Destroy {
                circ_id: 1,
                reason: DestroyReason::Requested,
            },
        );
        f.push(0);
        assert!(decode_frame(&f).is_err());
    }
}
