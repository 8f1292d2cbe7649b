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
/// so that moving a cell between queues never allocates.
///
/// A cell is held in one of two forms, and every reader sees the same
/// 509 bytes either way:
/// - a full body, in a [`Slab`] (chunks that never move, small for a node
///   that holds a few cells, as most clients of a large network do);
/// - a *pattern DATA cell*: a relay DATA cell whose data is a run of the
///   application pattern ([`pattern`]) and whose other bytes are those
///   [`write_relay`] writes, kept as its stream, length and pattern
///   position (8 bytes). Exits package responses this way, and a relay
///   that reads such a cell off a link recognises it ([`CellPool::store`])
///   and keeps it so. In a Tor-sized run most held cells are DATA cells
///   waiting in circuit queues; kept in full they were the largest part of
///   the simulator's memory.
///
/// Slots of the second form have the top bit set.
#[derive(Debug, Default)]
pub struct CellPool {
    cells: Slab<Body>,
    data: Slab<PatternCell>,
    live: u32,
    peak: u32,
    /// A pattern cell's body, built for [`CellPool::get`].
    scratch: Option<Box<Body>>,
}

/// A relay DATA cell whose data is `len` pattern bytes from `pos`.
#[derive(Clone, Copy, Debug, Default)]
struct PatternCell {
    stream: u16,
    len: u16,
    pos: u32,
}

impl PatternCell {
    /// The body it stands for: what [`write_relay`] writes with its data.
    fn write(&self, body: &mut Body) {
        write_relay(body, relay::DATA, self.stream, &[]);
        body[9..11].copy_from_slice(&self.len.to_be_bytes());
        let data = &mut body[RELAY_HEADER_LEN..RELAY_HEADER_LEN + self.len as usize];
        fill_pattern(self.pos as u64, data);
    }
}

/// The top bit of a slot marks a pattern DATA cell.
const PATTERN_SLOT: u32 = 1 << 31;

impl CellPool {
    /// A slot for a full body, with unspecified contents (fill it with
    /// [`CellPool::get_mut`]).
    pub fn alloc(&mut self) -> u32 {
        self.count_alloc();
        let slot = self.cells.alloc(&[0; BODY_LEN]);
        assert!(slot < PATTERN_SLOT, "cell pool full");
        slot
    }

    /// A relay DATA cell of `len` (at most [`RELAY_DATA_LEN`]) pattern
    /// bytes from stream offset `off`: the body [`write_relay`] would write
    /// with that data.
    pub fn alloc_pattern_data(&mut self, stream: u16, len: u16, off: u64) -> u32 {
        debug_assert!(len as usize <= RELAY_DATA_LEN);
        self.count_alloc();
        let pos = (off % PATTERN_LEN as u64) as u32;
        self.insert_pattern(PatternCell { stream, len, pos })
    }

    fn insert_pattern(&mut self, c: PatternCell) -> u32 {
        let slot = self.data.insert(c);
        assert!(slot < PATTERN_SLOT, "cell pool full");
        PATTERN_SLOT | slot
    }

    /// A slot holding `body` (a body read off a link): a pattern DATA cell
    /// if it is one, else a full copy.
    pub fn store(&mut self, body: &[u8]) -> u32 {
        debug_assert_eq!(body.len(), BODY_LEN);
        if let Some((stream, len, pos)) = as_pattern_data(body) {
            self.count_alloc();
            return self.insert_pattern(PatternCell { stream, len, pos });
        }
        let slot = self.alloc();
        self.cells.get_mut(slot).copy_from_slice(body);
        slot
    }

    fn count_alloc(&mut self) {
        self.live += 1;
        self.peak = self.peak.max(self.live);
    }

    pub fn free(&mut self, id: u32) {
        self.live -= 1;
        if id & PATTERN_SLOT != 0 {
            self.data.free(id & !PATTERN_SLOT);
        } else {
            self.cells.free(id);
        }
    }

    /// The body in slot `id` (a pattern DATA cell's is built in a scratch
    /// body, valid until the next call).
    pub fn get(&mut self, id: u32) -> &Body {
        if id & PATTERN_SLOT == 0 {
            return self.cells.get(id);
        }
        let c = *self.data.get(id & !PATTERN_SLOT);
        let body = self.scratch.get_or_insert_with(|| Box::new([0; BODY_LEN]));
        c.write(body);
        body
    }

    /// Appends the body in slot `id` to `out` (as [`CellPool::get`] would
    /// read it, without the scratch copy).
    pub fn append_to(&self, id: u32, out: &mut Vec<u8>) {
        if id & PATTERN_SLOT == 0 {
            out.extend_from_slice(self.cells.get(id));
            return;
        }
        let at = out.len();
        out.resize(at + BODY_LEN, 0);
        let body: &mut Body = (&mut out[at..]).try_into().expect("a body's length");
        self.data.get(id & !PATTERN_SLOT).write(body);
    }

    /// The relay header of slot `id` ([`read_relay`] of its body).
    pub fn header(&self, id: u32) -> RelayHeader {
        if id & PATTERN_SLOT == 0 {
            return read_relay(self.cells.get(id));
        }
        let c = self.data.get(id & !PATTERN_SLOT);
        RelayHeader {
            cmd: relay::DATA,
            stream: c.stream,
            len: c.len,
        }
    }

    /// The body of a slot from [`CellPool::alloc`], to fill.
    pub fn get_mut(&mut self, id: u32) -> &mut Body {
        debug_assert_eq!(id & PATTERN_SLOT, 0, "a pattern cell is not mutable");
        self.cells.get_mut(id)
    }

    /// Cells held.
    pub fn live(&self) -> usize {
        self.live as usize
    }

    /// The most cells held at once.
    pub fn capacity(&self) -> usize {
        self.peak as usize
    }
}

/// `(stream, len, pattern position)` if `body` is a relay DATA cell whose
/// data is a run of the pattern and whose other bytes are those
/// [`write_relay`] writes (zero `recognized`, `digest` and padding).
fn as_pattern_data(body: &[u8]) -> Option<(u16, u16, u32)> {
    let h = read_relay(body.try_into().ok()?);
    let len = u16::from_be_bytes([body[9], body[10]]);
    if h.cmd != relay::DATA
        || len as usize > RELAY_DATA_LEN
        || len < 4
        || body[1..3] != [0, 0]
        || body[5..9] != [0; 4]
    {
        return None;
    }
    let data = &body[RELAY_HEADER_LEN..RELAY_HEADER_LEN + len as usize];
    if body[RELAY_HEADER_LEN + len as usize..]
        .iter()
        .any(|&b| b != 0)
    {
        return None;
    }
    let pos = pattern_index().find(data)?;
    Some((h.stream, len, pos))
}

/// Where each 4-byte window of the pattern starts: an open-addressing
/// table keyed by the window's bytes, so that a cell's data is matched to
/// its pattern position with about one probe (and a comparison) rather
/// than a search. Positions fit in 16 bits, so the table is 256 KiB.
struct PatternIndex {
    /// `position + 1` of a window, 0 for an empty slot.
    slots: Box<[u16]>,
}

/// Table slots: a power of two, twice the pattern's windows.
const INDEX_BITS: u32 = 17;
const _: () = assert!(PATTERN_LEN < u16::MAX as usize && PATTERN_LEN < 1 << (INDEX_BITS - 1));

/// The pattern's 4 bytes from `pos`, wrapping at its end.
fn window(p: &[u8], pos: usize) -> u32 {
    match p.get(pos..pos + 4) {
        Some(w) => u32::from_le_bytes(w.try_into().expect("4 bytes")),
        None => {
            let b = |i: usize| p[(pos + i) % PATTERN_LEN];
            u32::from_le_bytes([b(0), b(1), b(2), b(3)])
        }
    }
}

fn index_hash(key: u32) -> usize {
    (key.wrapping_mul(0x9e37_79b1) >> (32 - INDEX_BITS)) as usize
}

impl PatternIndex {
    fn build() -> PatternIndex {
        let p = pattern();
        let mask = (1usize << INDEX_BITS) - 1;
        let mut slots = vec![0u16; 1 << INDEX_BITS].into_boxed_slice();
        for pos in 0..PATTERN_LEN {
            let mut h = index_hash(window(p, pos));
            while slots[h] != 0 {
                h = (h + 1) & mask;
            }
            slots[h] = pos as u16 + 1;
        }
        PatternIndex { slots }
    }

    /// A position where the pattern (wrapping at its end) continues as
    /// `data` (at least 4 bytes) does, if any.
    fn find(&self, data: &[u8]) -> Option<u32> {
        let key = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
        let mask = self.slots.len() - 1;
        let mut h = index_hash(key);
        while self.slots[h] != 0 {
            let pos = self.slots[h] as usize - 1;
            if pattern_matches(pos, data) {
                return Some(pos as u32);
            }
            h = (h + 1) & mask;
        }
        None
    }
}

fn pattern_index() -> &'static PatternIndex {
    static I: OnceLock<PatternIndex> = OnceLock::new();
    I.get_or_init(PatternIndex::build)
}

/// Whether `data` equals the pattern from position `pos` on (wrapping).
fn pattern_matches(mut pos: usize, data: &[u8]) -> bool {
    let p = pattern();
    let mut rest = data;
    while !rest.is_empty() {
        let n = rest.len().min(PATTERN_LEN - pos);
        if rest[..n] != p[pos..pos + n] {
            return false;
        }
        rest = &rest[n..];
        pos = 0;
    }
    true
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

    /// A body as an exit writes it: `len` pattern bytes from `off`.
    fn data_body(stream: u16, len: usize, off: u64) -> Body {
        let mut b = [0u8; BODY_LEN];
        let mut data = vec![0u8; len];
        fill_pattern(off, &mut data);
        write_relay(&mut b, relay::DATA, stream, &data);
        b
    }

    #[test]
    fn pattern_cells_read_as_the_body_they_stand_for() {
        let mut p = CellPool::default();
        // Short and full lengths, and positions that wrap past the
        // pattern's end.
        for (len, off) in [
            (498, 0),
            (4, 17),
            (137, PATTERN_LEN as u64 - 60),
            (9, PATTERN_LEN as u64 - 2),
            (498, 1 << 40),
        ] {
            let want = data_body(9, len, off);
            let a = p.alloc_pattern_data(9, len as u16, off);
            assert_eq!(a & PATTERN_SLOT, PATTERN_SLOT);
            assert_eq!(p.header(a), read_relay(&want));
            assert_eq!(p.get(a), &want);
            let mut out = vec![1, 2];
            p.append_to(a, &mut out);
            assert_eq!(&out[2..], &want);
            // Read off a link, the same body is recognised and kept compact.
            let b = p.store(&want);
            assert_eq!(b & PATTERN_SLOT, PATTERN_SLOT, "len {len} off {off}");
            assert_eq!(p.get(b), &want);
            p.free(a);
            p.free(b);
        }
        assert_eq!(p.live(), 0);
        assert_eq!(p.capacity(), 2);
    }

    #[test]
    fn other_bodies_are_stored_in_full() {
        let mut p = CellPool::default();
        let good = data_body(3, 498, 1234);
        let mut cases = Vec::new();
        let mut flipped = good;
        flipped[300] ^= 1; // data off the pattern
        cases.push(flipped);
        let mut digest = good;
        digest[6] = 1; // non-zero digest
        cases.push(digest);
        let mut end = good;
        end[0] = relay::END;
        cases.push(end);
        let mut short = data_body(3, 100, 5);
        short[400] = 7; // non-zero padding
        cases.push(short);
        cases.push(data_body(3, 3, 5)); // too short to index
        let mut long = good;
        long[9..11].copy_from_slice(&600u16.to_be_bytes()); // length past the field
        cases.push(long);
        for (i, body) in cases.iter().enumerate() {
            let s = p.store(body);
            assert_eq!(s & PATTERN_SLOT, 0, "case {i}");
            assert_eq!(p.get(s), body, "case {i}");
            let mut out = Vec::new();
            p.append_to(s, &mut out);
            assert_eq!(&out[..], body, "case {i}");
            assert_eq!(p.header(s), read_relay(body), "case {i}");
        }
        assert_eq!(p.live(), cases.len());
    }

    proptest::proptest! {
        /// Whatever a link brings, the pool gives back the same bytes, and
        /// an exit's DATA cell, with any one byte changed, still does.
        #[test]
        fn stored_bodies_read_back_unchanged(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), BODY_LEN),
            stream in proptest::prelude::any::<u16>(),
            len in 0usize..=RELAY_DATA_LEN,
            off in proptest::prelude::any::<u64>(),
            flip in proptest::option::of((0usize..BODY_LEN, 1u8..=255)),
        ) {
            let mut p = CellPool::default();
            let mut data = data_body(stream, len, off);
            if let Some((at, x)) = flip {
                data[at] ^= x;
            }
            for body in [&raw[..], &data[..]] {
                let s = p.store(body);
                proptest::prop_assert_eq!(&p.get(s)[..], body);
                let mut out = Vec::new();
                p.append_to(s, &mut out);
                proptest::prop_assert_eq!(&out[..], body);
                proptest::prop_assert_eq!(p.header(s), read_relay(body.try_into().unwrap()));
            }
        }
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
