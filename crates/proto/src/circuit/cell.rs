//! The relay-cell body: the 509 bytes a BackTap CELL item carries
//! (`docs/backtap.md`, "Wire format"; `docs/relay.md`, "Cells").
//!
//! ```text
//! body := relay_cmd:u8 recognized:u16 stream_id:u16 digest:u32 length:u16 data:[498]
//! ```
//!
//! This is Tor's relay-cell layout. Everything here is *inside* the onion
//! layers ([`super::onion`]); the BackTap preamble (`circ_id`, `seq`,
//! `flags`) stays outside them, so a relay can run the transport on a cell
//! whose body it cannot read (seed 002 §3). A hop that removes its layer
//! and finds `recognized = 0` and a matching running digest knows the cell
//! is for it; the encoder here writes both as zero and the onion layer
//! fills in the digest. A body with a non-zero `recognized` is rejected.
//! Bytes after `length` are padding and ignored.
//!
//! Commands and their data (all integers big-endian):
//!
//! | cmd | name | data |
//! | --- | --- | --- |
//! | 1 | BEGIN | `window:u32 port:u16 host_len:u8 host:[host_len]` (client → exit) |
//! | 2 | DATA | stream bytes (1 to 498) |
//! | 3 | END | `reason:u8`; [`EndReason::Done`] half-closes, anything else resets |
//! | 4 | CONNECTED | `window:u32` (exit → client) |
//! | 5 | SENDME | `increment:u32`, bytes the receiver consumed |
//! | 14 | EXTEND | `identity:[32] htype:u8 onionskin:[64]`: the last hop extends the circuit to `identity` (client → hop) |
//! | 15 | EXTENDED | `reply:[64]`: the new hop's handshake reply (hop → client) |
//!
//! The numbers are Tor's (EXTEND and EXTENDED are Tor's EXTEND2 and
//! EXTENDED2); the data layouts are not (hopwise does not speak Tor's
//! protocol). EXTEND and EXTENDED travel on the link's control channel
//! while a circuit is built (`control::CtlMsg::Relay`), never as BackTap
//! cells; the other commands only as BackTap cells.

use super::control::HANDSHAKE_LEN;
use super::CellError;
use crate::backtap::wire::{CellBody, CELL_BODY_LEN, CELL_DATA_LEN};

/// Bytes of the relay header before the data.
pub const RELAY_HEADER_LEN: usize = 11;
const _: () = assert!(RELAY_HEADER_LEN + CELL_DATA_LEN == CELL_BODY_LEN);

/// Longest host name a BEGIN cell can carry.
pub const MAX_HOST_LEN: usize = 255;

/// A relay command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelayCmd {
    Begin = 1,
    Data = 2,
    End = 3,
    Connected = 4,
    Sendme = 5,
    Extend = 14,
    Extended = 15,
}

impl RelayCmd {
    pub fn from_u8(b: u8) -> Option<RelayCmd> {
        Some(match b {
            1 => RelayCmd::Begin,
            2 => RelayCmd::Data,
            3 => RelayCmd::End,
            4 => RelayCmd::Connected,
            5 => RelayCmd::Sendme,
            14 => RelayCmd::Extend,
            15 => RelayCmd::Extended,
            _ => return None,
        })
    }
}

/// Why a stream ended (Tor's END reasons, numbered as in tor-spec §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    Misc,
    ResolveFailed,
    ConnectRefused,
    ExitPolicy,
    Destroy,
    /// Normal close: the sender will send no more data (TCP FIN). The only
    /// reason that half-closes; every other one resets the stream.
    Done,
    Timeout,
    NoRoute,
    Hibernating,
    Internal,
    ResourceLimit,
    /// The TCP connection was reset (TCP RST).
    ConnReset,
    /// The peer broke the stream protocol (window exceeded, bad cell).
    Protocol,
    /// A reason byte this version does not know.
    Other(u8),
}

impl EndReason {
    pub fn to_u8(self) -> u8 {
        match self {
            EndReason::Misc => 1,
            EndReason::ResolveFailed => 2,
            EndReason::ConnectRefused => 3,
            EndReason::ExitPolicy => 4,
            EndReason::Destroy => 5,
            EndReason::Done => 6,
            EndReason::Timeout => 7,
            EndReason::NoRoute => 8,
            EndReason::Hibernating => 9,
            EndReason::Internal => 10,
            EndReason::ResourceLimit => 11,
            EndReason::ConnReset => 12,
            EndReason::Protocol => 13,
            EndReason::Other(b) => b,
        }
    }
    pub fn from_u8(b: u8) -> EndReason {
        match b {
            1 => EndReason::Misc,
            2 => EndReason::ResolveFailed,
            3 => EndReason::ConnectRefused,
            4 => EndReason::ExitPolicy,
            5 => EndReason::Destroy,
            6 => EndReason::Done,
            7 => EndReason::Timeout,
            8 => EndReason::NoRoute,
            9 => EndReason::Hibernating,
            10 => EndReason::Internal,
            11 => EndReason::ResourceLimit,
            12 => EndReason::ConnReset,
            13 => EndReason::Protocol,
            b => EndReason::Other(b),
        }
    }
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            EndReason::Misc => "misc",
            EndReason::ResolveFailed => "resolve failed",
            EndReason::ConnectRefused => "connection refused",
            EndReason::ExitPolicy => "refused by exit policy",
            EndReason::Destroy => "circuit destroyed",
            EndReason::Done => "done",
            EndReason::Timeout => "timeout",
            EndReason::NoRoute => "no route",
            EndReason::Hibernating => "hibernating",
            EndReason::Internal => "internal error",
            EndReason::ResourceLimit => "resource limit",
            EndReason::ConnReset => "connection reset",
            EndReason::Protocol => "protocol violation",
            EndReason::Other(b) => return write!(f, "reason {b}"),
        };
        f.write_str(s)
    }
}

/// A decoded relay cell, borrowing its data from the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayMsg<'a> {
    Begin {
        window: u32,
        host: &'a str,
        port: u16,
    },
    Data(&'a [u8]),
    End(EndReason),
    Connected {
        window: u32,
    },
    Sendme {
        increment: u32,
    },
    Extend {
        relay: [u8; 32],
        htype: u8,
        onionskin: [u8; HANDSHAKE_LEN],
    },
    Extended {
        reply: [u8; HANDSHAKE_LEN],
    },
}

impl RelayMsg<'_> {
    pub fn cmd(&self) -> RelayCmd {
        match self {
            RelayMsg::Begin { .. } => RelayCmd::Begin,
            RelayMsg::Data(_) => RelayCmd::Data,
            RelayMsg::End(_) => RelayCmd::End,
            RelayMsg::Connected { .. } => RelayCmd::Connected,
            RelayMsg::Sendme { .. } => RelayCmd::Sendme,
            RelayMsg::Extend { .. } => RelayCmd::Extend,
            RelayMsg::Extended { .. } => RelayCmd::Extended,
        }
    }
}

/// Encodes a relay cell into `out` (every byte is written; padding is zero).
/// Panics only on caller errors: DATA longer than 498 bytes or empty, a host
/// name longer than 255 bytes.
pub fn encode(stream_id: u16, msg: &RelayMsg<'_>, out: &mut CellBody) {
    out.fill(0);
    out[0] = msg.cmd() as u8;
    out[3..5].copy_from_slice(&stream_id.to_be_bytes());
    let data = &mut out[RELAY_HEADER_LEN..];
    let len = match *msg {
        RelayMsg::Begin { window, host, port } => {
            assert!(host.len() <= MAX_HOST_LEN, "host name too long");
            data[0..4].copy_from_slice(&window.to_be_bytes());
            data[4..6].copy_from_slice(&port.to_be_bytes());
            data[6] = host.len() as u8;
            data[7..7 + host.len()].copy_from_slice(host.as_bytes());
            7 + host.len()
        }
        RelayMsg::Data(d) => {
            assert!(
                !d.is_empty() && d.len() <= CELL_DATA_LEN,
                "DATA of {} bytes",
                d.len()
            );
            data[..d.len()].copy_from_slice(d);
            d.len()
        }
        RelayMsg::End(r) => {
            data[0] = r.to_u8();
            1
        }
        RelayMsg::Connected { window } => {
            data[0..4].copy_from_slice(&window.to_be_bytes());
            4
        }
        RelayMsg::Sendme { increment } => {
            data[0..4].copy_from_slice(&increment.to_be_bytes());
            4
        }
        RelayMsg::Extend {
            relay,
            htype,
            onionskin,
        } => {
            data[..32].copy_from_slice(&relay);
            data[32] = htype;
            data[33..33 + HANDSHAKE_LEN].copy_from_slice(&onionskin);
            33 + HANDSHAKE_LEN
        }
        RelayMsg::Extended { reply } => {
            data[..HANDSHAKE_LEN].copy_from_slice(&reply);
            HANDSHAKE_LEN
        }
    };
    out[9..11].copy_from_slice(&(len as u16).to_be_bytes());
}

/// Writes a DATA cell from up to 498 bytes taken from two slices (the two
/// halves of a ring buffer); returns the bytes used.
pub fn encode_data_from(stream_id: u16, a: &[u8], b: &[u8], out: &mut CellBody) -> usize {
    let n1 = a.len().min(CELL_DATA_LEN);
    let n2 = b.len().min(CELL_DATA_LEN - n1);
    out[0] = RelayCmd::Data as u8;
    out[1..3].fill(0);
    out[3..5].copy_from_slice(&stream_id.to_be_bytes());
    out[5..9].fill(0);
    out[9..11].copy_from_slice(&((n1 + n2) as u16).to_be_bytes());
    let d = &mut out[RELAY_HEADER_LEN..];
    d[..n1].copy_from_slice(&a[..n1]);
    d[n1..n1 + n2].copy_from_slice(&b[..n2]);
    d[n1 + n2..].fill(0);
    n1 + n2
}

/// Decodes a relay cell. Never panics; rejects a non-zero `recognized`, an
/// unknown command, a length over 498, and data that does not fit its
/// command.
pub fn decode(body: &CellBody) -> Result<(u16, RelayMsg<'_>), CellError> {
    let cmd = body[0];
    if body[1] != 0 || body[2] != 0 {
        return Err(CellError::Unrecognized);
    }
    let stream_id = u16::from_be_bytes([body[3], body[4]]);
    let len = u16::from_be_bytes([body[9], body[10]]) as usize;
    if len > CELL_DATA_LEN {
        return Err(CellError::BadLength(len));
    }
    let data = &body[RELAY_HEADER_LEN..RELAY_HEADER_LEN + len];
    let cmd = RelayCmd::from_u8(cmd).ok_or(CellError::UnknownCommand(cmd))?;
    let u32_at = |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    let msg = match cmd {
        RelayCmd::Begin => {
            if len < 7 {
                return Err(CellError::BadData(cmd));
            }
            let host_len = data[6] as usize;
            if len != 7 + host_len || host_len == 0 {
                return Err(CellError::BadData(cmd));
            }
            let host =
                std::str::from_utf8(&data[7..7 + host_len]).map_err(|_| CellError::BadData(cmd))?;
            RelayMsg::Begin {
                window: u32_at(0),
                port: u16::from_be_bytes([data[4], data[5]]),
                host,
            }
        }
        RelayCmd::Data => {
            if len == 0 {
                return Err(CellError::BadData(cmd));
            }
            RelayMsg::Data(data)
        }
        RelayCmd::End => {
            if len != 1 {
                return Err(CellError::BadData(cmd));
            }
            RelayMsg::End(EndReason::from_u8(data[0]))
        }
        RelayCmd::Connected => {
            if len != 4 {
                return Err(CellError::BadData(cmd));
            }
            RelayMsg::Connected { window: u32_at(0) }
        }
        RelayCmd::Sendme => {
            if len != 4 {
                return Err(CellError::BadData(cmd));
            }
            RelayMsg::Sendme {
                increment: u32_at(0),
            }
        }
        RelayCmd::Extend => {
            if len != 33 + HANDSHAKE_LEN {
                return Err(CellError::BadData(cmd));
            }
            let mut relay = [0u8; 32];
            relay.copy_from_slice(&data[..32]);
            let mut onionskin = [0u8; HANDSHAKE_LEN];
            onionskin.copy_from_slice(&data[33..]);
            RelayMsg::Extend {
                relay,
                htype: data[32],
                onionskin,
            }
        }
        RelayCmd::Extended => {
            if len != HANDSHAKE_LEN {
                return Err(CellError::BadData(cmd));
            }
            let mut reply = [0u8; HANDSHAKE_LEN];
            reply.copy_from_slice(data);
            RelayMsg::Extended { reply }
        }
    };
    Ok((stream_id, msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(id: u16, m: RelayMsg<'_>) {
        let mut b = [0xAAu8; CELL_BODY_LEN];
        encode(id, &m, &mut b);
        assert_eq!(decode(&b).unwrap(), (id, m));
    }

    #[test]
    fn round_trips() {
        rt(
            7,
            RelayMsg::Begin {
                window: 1 << 20,
                host: "example.org",
                port: 443,
            },
        );
        rt(1, RelayMsg::Data(b"hello"));
        rt(1, RelayMsg::Data(&[9u8; CELL_DATA_LEN]));
        rt(65535, RelayMsg::End(EndReason::ConnReset));
        rt(2, RelayMsg::End(EndReason::Other(200)));
        rt(3, RelayMsg::Connected { window: 5 });
        rt(4, RelayMsg::Sendme { increment: 99 });
        rt(
            0,
            RelayMsg::Extend {
                relay: [7; 32],
                htype: 2,
                onionskin: [9; HANDSHAKE_LEN],
            },
        );
        rt(
            0,
            RelayMsg::Extended {
                reply: [3; HANDSHAKE_LEN],
            },
        );
    }

    #[test]
    fn data_from_two_slices() {
        let mut b = [0u8; CELL_BODY_LEN];
        let n = encode_data_from(9, &[1; 300], &[2; 300], &mut b);
        assert_eq!(n, CELL_DATA_LEN);
        let (id, m) = decode(&b).unwrap();
        assert_eq!(id, 9);
        let RelayMsg::Data(d) = m else { panic!() };
        assert_eq!(d[299], 1);
        assert_eq!(d[300], 2);
    }

    #[test]
    fn rejects() {
        let mut b = [0u8; CELL_BODY_LEN];
        encode(1, &RelayMsg::Data(b"x"), &mut b);
        let mut r = b;
        r[1] = 1;
        assert_eq!(decode(&r), Err(CellError::Unrecognized));
        let mut r = b;
        r[0] = 99;
        assert_eq!(decode(&r), Err(CellError::UnknownCommand(99)));
        let mut r = b;
        r[9..11].copy_from_slice(&499u16.to_be_bytes());
        assert_eq!(decode(&r), Err(CellError::BadLength(499)));
        let mut r = b;
        r[9..11].copy_from_slice(&0u16.to_be_bytes());
        assert!(decode(&r).is_err());
    }
}
