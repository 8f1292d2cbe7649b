//! Cells: sizes, commands, the relay-cell header, a per-node cell pool and the
//! byte pattern that applications write so that receivers can check every
//! byte.
//!
//! Layouts (tor-spec §3, §6.1; link protocol ≤ 3 with 2-byte circuit ids, as
//! the paper and nstor use, so that a cell is 512 bytes on a TCP link):
//!
//! ```text
//! link cell   := circ_id:u16 command:u8 body:[509]                  (512 B)
//! relay body  := relay_cmd:u8 recognized:u16 stream_id:u16 digest:u32
//!                length:u16 data:[498]                             (509 B)
//! ```
//!
//! The model carries no cryptography: `recognized` and `digest` are zero and
//! bodies are forwarded unchanged.

use bytes::Bytes;
use hopwise_proto::slab::Slab;
use std::sync::OnceLock;

/// Bytes of a cell on a TCP link (2-byte circuit id, command, body).
pub const CELL_LEN: usize = 512;
/// Bytes of a cell body: what a relay forwards and BackTap carries.
pub const BODY_LEN: usize = 509;
/// Relay header inside the body.
pub const RELAY_HEADER_LEN: usize = 11;
/// Application bytes per relay DATA cell (tor-spec: RELAY_PAYLOAD_SIZE).
pub const RELAY_DATA_LEN: usize = BODY_LEN - RELAY_HEADER_LEN;

/// Link-level cell commands (tor-spec §3).
pub const CMD_PADDING: u8 = 0;
pub const CMD_RELAY: u8 = 3;
/// Tor's NETINFO; here the first cell on a link, carrying the link's id so the
/// accepting relay knows which neighbour connected (the rest of Tor's link
/// handshake, VERSIONS/CERTS/AUTH, is not modelled).
pub const CMD_NETINFO: u8 = 8;
/// N23's credit cell (hop by hop, never forwarded). Tor has no such command;
/// 23 is the one nstor's `tor-n23.h` uses (`CREDIT`), outside Tor's range of
/// link commands in use (0–12, 128–132).
pub const CMD_CREDIT: u8 = 23;

/// Relay commands (tor-spec §6.1).
pub mod relay {
    pub const BEGIN: u8 = 1;
    pub const DATA: u8 = 2;
    pub const END: u8 = 3;
    pub const CONNECTED: u8 = 4;
    pub const SENDME: u8 = 5;
}

/// A cell body.
pub type Body = [u8; BODY_LEN];

/// The parsed relay header of a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayHeader {
    pub cmd: u8,
    pub stream: u16,
    pub len: u16,
}

/// Writes a relay header and `data` (at most [`RELAY_DATA_LEN`] bytes) into
/// `body`; the rest of the data field is zeroed.
pub fn write_relay(body: &mut Body, cmd: u8, stream: u16, data: &[u8]) {
    debug_assert!(data.len() <= RELAY_DATA_LEN);
    body[0] = cmd;
    body[1..3].fill(0);
    body[3..5].copy_from_slice(&stream.to_be_bytes());
    body[5..9].fill(0);
    body[9..11].copy_from_slice(&(data.len() as u16).to_be_bytes());
    body[RELAY_HEADER_LEN..RELAY_HEADER_LEN + data.len()].copy_from_slice(data);
    body[RELAY_HEADER_LEN + data.len()..].fill(0);
}

/// Reads the relay header of `body`. The length is clamped to the data field.
pub fn read_relay(body: &Body) -> RelayHeader {
    RelayHeader {
        cmd: body[0],
        stream: u16::from_be_bytes([body[3], body[4]]),
        len: u16::from_be_bytes([body[9], body[10]]).min(RELAY_DATA_LEN as u16),
    }
}

/// The data field of a relay body (`len` bytes).
pub fn relay_data(body: &Body, len: u16) -> &[u8] {
    &body[RELAY_HEADER_LEN..RELAY_HEADER_LEN + len as usize]
}

/// Cell bodies owned by one node, addressed by `u32` slots with a free list,
/// so that moving a cell between queues never allocates. The bodies live
/// in a [`Slab`]: chunks that never move, small for a node that holds a
/// few cells (most clients of a large network).
#[derive(Debug, Default)]
pub struct CellPool {
    cells: Slab<Body>,
}

impl CellPool {
    /// A slot with unspecified contents.
    pub fn alloc(&mut self) -> u32 {
        self.cells.alloc(&[0; BODY_LEN])
    }
    pub fn free(&mut self, id: u32) {
        self.cells.free(id);
    }
    pub fn get(&self, id: u32) -> &Body {
        self.cells.get(id)
    }
    pub fn get_mut(&mut self, id: u32) -> &mut Body {
        self.cells.get_mut(id)
    }
    /// Slots in use.
    pub fn live(&self) -> usize {
        self.cells.live()
    }
    /// Slots ever allocated (the peak number of cells held at once).
    pub fn capacity(&self) -> usize {
        self.cells.capacity()
    }
}

/// Length of the application byte pattern: a prime, so that cell and segment
/// boundaries keep drifting across it.
pub const PATTERN_LEN: usize = 65_521;

/// The application byte pattern (a fixed LCG sequence). Byte `i` of every
/// response is `pattern()[i % PATTERN_LEN]`.
pub fn pattern() -> &'static Bytes {
    static P: OnceLock<Bytes> = OnceLock::new();
    P.get_or_init(|| {
        let mut x: u32 = 0x9e37_79b9;
        let v: Vec<u8> = (0..PATTERN_LEN)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        Bytes::from(v)
    })
}

/// Fills `dst` with the pattern starting at stream offset `off`.
pub fn fill_pattern(off: u64, dst: &mut [u8]) {
    let p = pattern();
    let mut pos = (off % PATTERN_LEN as u64) as usize;
    let mut done = 0;
    while done < dst.len() {
        let n = (dst.len() - done).min(PATTERN_LEN - pos);
        dst[done..done + n].copy_from_slice(&p[pos..pos + n]);
        done += n;
        pos = 0;
    }
}

/// Up to `max` pattern bytes starting at stream offset `off`, without copying
/// (the slice ends at the end of the pattern buffer).
pub fn pattern_slice(off: u64, max: usize) -> Bytes {
    let pos = (off % PATTERN_LEN as u64) as usize;
    let n = max.min(PATTERN_LEN - pos);
    pattern().slice(pos..pos + n)
}

/// How many bytes of `data` (at stream offset `off`) differ from the pattern.
pub fn count_corrupt(off: u64, data: &[u8]) -> u64 {
    let p = pattern();
    let mut pos = (off % PATTERN_LEN as u64) as usize;
    let mut rest = data;
    let mut bad = 0;
    while !rest.is_empty() {
        let n = rest.len().min(PATTERN_LEN - pos);
        if rest[..n] != p[pos..pos + n] {
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

/// The request a client application sends (16 bytes): the response size it
/// wants, the circuit's network-wide index and the request's index on the
/// circuit. The server draws the response delay from the last two, so that
/// every transport sees the same delays.
pub const REQUEST_LEN: usize = 16;

/// A decoded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub size: u64,
    pub circuit: u32,
    pub index: u32,
}

pub fn encode_request(q: Request) -> [u8; REQUEST_LEN] {
    let mut r = [0; REQUEST_LEN];
    r[..8].copy_from_slice(&q.size.to_be_bytes());
    r[8..12].copy_from_slice(&q.circuit.to_be_bytes());
    r[12..].copy_from_slice(&q.index.to_be_bytes());
    r
}

pub fn decode_request(r: &[u8]) -> Option<Request> {
    if r.len() < REQUEST_LEN {
        return None;
    }
    Some(Request {
        size: u64::from_be_bytes(r[..8].try_into().ok()?),
        circuit: u32::from_be_bytes(r[8..12].try_into().ok()?),
        index: u32::from_be_bytes(r[12..16].try_into().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_header_round_trips() {
        let mut b = [0xffu8; BODY_LEN];
        write_relay(&mut b, relay::DATA, 0x1234, &[1, 2, 3]);
        let h = read_relay(&b);
        assert_eq!(
            h,
            RelayHeader {
                cmd: relay::DATA,
                stream: 0x1234,
                len: 3
            }
        );
        assert_eq!(relay_data(&b, h.len), &[1, 2, 3]);
        assert!(b[RELAY_HEADER_LEN + 3..].iter().all(|&x| x == 0));
        assert_eq!(RELAY_DATA_LEN, 498);
        assert_eq!(CELL_LEN, 3 + BODY_LEN);
    }

    #[test]
    fn pattern_is_checkable() {
        let mut v = vec![0u8; 200_000];
        fill_pattern(12_345, &mut v);
        assert_eq!(count_corrupt(12_345, &v), 0);
        v[100] ^= 1;
        assert_eq!(count_corrupt(12_345, &v), 1);
        let s = pattern_slice(PATTERN_LEN as u64 - 3, 10);
        assert_eq!(s.len(), 3);
        assert_eq!(count_corrupt(PATTERN_LEN as u64 - 3, &s), 0);
    }

    #[test]
    fn pool_reuses_slots() {
        let mut p = CellPool::default();
        let a = p.alloc();
        let b = p.alloc();
        p.free(a);
        assert_eq!(p.alloc(), a);
        assert_eq!(p.live(), 2);
        p.free(b);
        assert_eq!(p.live(), 1);
        assert_eq!(p.capacity(), 2);
    }

    #[test]
    fn request_round_trips() {
        let q = Request {
            size: 5 << 20,
            circuit: 3,
            index: 7,
        };
        let r = encode_request(q);
        assert_eq!(decode_request(&r), Some(q));
        assert_eq!(decode_request(&r[..10]), None);
    }
}
