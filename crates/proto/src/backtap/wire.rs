//! The BackTap datagram codec, version 2 (`docs/backtap.md`, "Wire format").
//!
//! ```text
//! datagram := header item*
//! header   := version:u8 (= 2)
//! item     := CELL | FEEDBACK | SACK
//! CELL     := 0x01 circ_id:u32 seq:u32 flags:u8 body:[509]       (519 bytes)
//! FEEDBACK := 0x02 circ_id:u32 kinds:u8 [ack:u32] [fwd:u32]       (6, 10 or 14 bytes)
//! SACK     := 0x03 circ_id:u32 ack:u32 n:u8 (start:u32 end:u32){n}  (10 + 8n bytes, 1 ≤ n ≤ 8)
//! ```
//!
//! [hopwise] Version 2 adds the SACK item (RFC 2018's SACK option, in
//! cells): `ack` is cumulative as in FEEDBACK, and each block `start..end`
//! (end exclusive) is a run of cells held above a gap. The decoder checks
//! what it can without context: `ack < start < end` for every block, and no
//! two blocks overlap or touch. The order of the blocks is free (RFC 2018
//! §4 puts the most recent first). Version 1 had no SACK item; there is no
//! negotiation, a version-1 datagram is rejected.
//!
//! All integers are big-endian. The cell preamble (`circ_id`, `seq`, `flags`)
//! stays outside the 509-byte relay-cell body so that per-hop onion
//! encryption of the body leaves it readable (seed 002 §3, Fig. 3a).
//!
//! [`decode`] validates a whole datagram before handing out any item, so a
//! malformed datagram is rejected whole; it never panics, whatever the input
//! (`crates/proto/fuzz` and `tests/backtap_wire.rs` check that). Encoding is
//! canonical: decoding a valid datagram and encoding its items again gives the
//! same bytes.

use std::fmt;

/// The only version this codec speaks ([hopwise] 2 since the SACK item).
pub const VERSION: u8 = 2;
/// Bytes of the datagram header (the version byte).
pub const HEADER_LEN: usize = 1;
/// Tor's relay-cell body: `relay_cmd:u8 recognized:u16 stream_id:u16
/// digest:u32 length:u16 data:[498]`. The transport never reads it.
pub const CELL_BODY_LEN: usize = 509;
/// Application bytes per relay cell (509 − 11 bytes of relay header).
pub const CELL_DATA_LEN: usize = 498;
/// A CELL item on the wire: type, circ_id, seq, flags, body.
pub const CELL_ITEM_LEN: usize = 1 + 4 + 4 + 1 + CELL_BODY_LEN;
/// The largest FEEDBACK item (ACK and FWD present).
pub const FEEDBACK_MAX_LEN: usize = 14;
/// Item type bytes.
pub const TYPE_CELL: u8 = 0x01;
pub const TYPE_FEEDBACK: u8 = 0x02;
pub const TYPE_SACK: u8 = 0x03;
/// Most blocks a SACK item carries.
pub const MAX_SACK_BLOCKS: usize = 8;
/// A SACK item without its blocks: type, circ_id, ack, n.
pub const SACK_HEADER_LEN: usize = 10;
/// The largest SACK item (eight blocks): 74 bytes.
pub const SACK_MAX_LEN: usize = SACK_HEADER_LEN + 8 * MAX_SACK_BLOCKS;

/// Cell flag: first cell of a circuit on this hop (bit 0).
pub const FLAG_OPEN: u8 = 0x01;
/// Cell flag: last cell of the circuit in its direction (bit 1).
pub const FLAG_CLOSE: u8 = 0x02;
/// Cell flag bits that must be zero.
pub const FLAGS_RESERVED: u8 = !(FLAG_OPEN | FLAG_CLOSE);

/// FEEDBACK kinds: ACK present (bit 0).
pub const KIND_ACK: u8 = 0x01;
/// FEEDBACK kinds: FWD present (bit 1).
pub const KIND_FWD: u8 = 0x02;
/// FEEDBACK kinds bits that must be zero.
pub const KINDS_RESERVED: u8 = !(KIND_ACK | KIND_FWD);

/// A relay-cell body.
pub type CellBody = [u8; CELL_BODY_LEN];

/// One CELL item, borrowing its body from the datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Cell<'a> {
    pub circ_id: u32,
    pub seq: u32,
    pub flags: u8,
    pub body: &'a CellBody,
}

impl fmt::Debug for Cell<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cell")
            .field("circ_id", &self.circ_id)
            .field("seq", &self.seq)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

/// One FEEDBACK item. `ack`: the sender of the feedback holds every cell
/// below it; `fwd`: every cell below it has been forwarded onward (or taken
/// by the application). An item with neither is a feedback request
/// ([hopwise], see `docs/backtap.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Feedback {
    pub circ_id: u32,
    pub ack: Option<u32>,
    pub fwd: Option<u32>,
}

impl Feedback {
    /// Bytes on the wire: 6, 10 or 14.
    pub fn wire_len(&self) -> usize {
        6 + 4 * (self.ack.is_some() as usize + self.fwd.is_some() as usize)
    }
}

/// One SACK item (RFC 2018 in cells): the sender of the item holds every
/// cell below `ack` and the cells `start..end` (end exclusive) of each
/// block, all above `ack`. Build one with [`Sack::new`] and [`Sack::push`]
/// or [`Sack::from_blocks`]; a value with no block, or with blocks the
/// decoder would reject, encodes to bytes the decoder rejects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sack {
    pub circ_id: u32,
    pub ack: u32,
    len: u8,
    /// Unused entries stay zero, so that equality compares the blocks only.
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
}

impl Sack {
    /// An item with no block yet.
    pub fn new(circ_id: u32, ack: u32) -> Sack {
        Sack {
            circ_id,
            ack,
            len: 0,
            blocks: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// Appends the block `start..end`; `false` (and nothing changes) when
    /// the item already has [`MAX_SACK_BLOCKS`]. Not validated.
    pub fn push(&mut self, start: u32, end: u32) -> bool {
        let i = self.len as usize;
        if i >= MAX_SACK_BLOCKS {
            return false;
        }
        self.blocks[i] = (start, end);
        self.len += 1;
        true
    }

    /// An item with the given blocks, checked as the decoder checks them.
    pub fn from_blocks(circ_id: u32, ack: u32, blocks: &[(u32, u32)]) -> Result<Sack, Problem> {
        if blocks.is_empty() || blocks.len() > MAX_SACK_BLOCKS {
            return Err(Problem::BadSackCount(blocks.len().min(255) as u8));
        }
        let mut s = Sack::new(circ_id, ack);
        for &(a, b) in blocks {
            s.push(a, b);
        }
        match s.first_bad_block() {
            Some(index) => Err(Problem::BadSackBlock { index }),
            None => Ok(s),
        }
    }

    /// The blocks `(start, end)` in wire order.
    pub fn blocks(&self) -> &[(u32, u32)] {
        &self.blocks[..self.len as usize]
    }

    /// Bytes on the wire: 10 + 8 per block.
    pub fn wire_len(&self) -> usize {
        SACK_HEADER_LEN + 8 * self.len as usize
    }

    /// The first block that is empty, not above `ack`, or overlaps or
    /// touches an earlier block.
    fn first_bad_block(&self) -> Option<u8> {
        let b = self.blocks();
        (0..b.len())
            .find(|&i| {
                let (s, e) = b[i];
                !(self.ack < s && s < e) || b[..i].iter().any(|&(s2, e2)| s <= e2 && s2 <= e)
            })
            .map(|i| i as u8)
    }
}

/// A decoded item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    Cell(Cell<'a>),
    Feedback(Feedback),
    Sack(Sack),
}

impl Item<'_> {
    /// Bytes on the wire.
    pub fn wire_len(&self) -> usize {
        match self {
            Item::Cell(_) => CELL_ITEM_LEN,
            Item::Feedback(f) => f.wire_len(),
            Item::Sack(s) => s.wire_len(),
        }
    }
}

/// What was wrong with a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// Zero bytes: not even a version.
    Empty,
    /// The version byte is not [`VERSION`].
    BadVersion(u8),
    /// An item starts with a type byte that is not CELL, FEEDBACK or SACK.
    UnknownType(u8),
    /// A cell's flags have reserved bits set (the whole flags byte).
    ReservedFlags(u8),
    /// A feedback item's kinds have reserved bits set (the whole kinds byte).
    ReservedKinds(u8),
    /// An item needs `need` bytes from its start but only `have` remain.
    Truncated { need: usize, have: usize },
    /// A SACK item's block count `n` is not 1 to [`MAX_SACK_BLOCKS`].
    BadSackCount(u8),
    /// A SACK item's block `index` (from 0) is empty, not above `ack`, or
    /// overlaps or touches an earlier block.
    BadSackBlock { index: u8 },
}

/// A rejected datagram: `offset` is the byte at which the problem was found
/// (the version byte, an item's type byte, a flags or kinds byte, a SACK
/// item's count byte or the start of its bad block, or the start of a
/// truncated item).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    pub offset: usize,
    pub problem: Problem,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.offset;
        match self.problem {
            Problem::Empty => write!(f, "empty datagram"),
            Problem::BadVersion(v) => {
                write!(f, "byte {o}: unknown version {v} (expected {VERSION})")
            }
            Problem::UnknownType(t) => write!(f, "byte {o}: unknown item type {t:#04x}"),
            Problem::ReservedFlags(b) => {
                write!(f, "byte {o}: reserved cell flag bits set in {b:#04x}")
            }
            Problem::ReservedKinds(b) => {
                write!(f, "byte {o}: reserved feedback kind bits set in {b:#04x}")
            }
            Problem::Truncated { need, have } => {
                write!(
                    f,
                    "byte {o}: truncated item: needs {need} bytes, {have} left"
                )
            }
            Problem::BadSackCount(n) => {
                write!(
                    f,
                    "byte {o}: SACK item with {n} blocks (expected 1 to {MAX_SACK_BLOCKS})"
                )
            }
            Problem::BadSackBlock { index } => write!(
                f,
                "byte {o}: SACK block {index} is empty, not above the ACK, \
                 or overlaps or touches an earlier block"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A validated datagram. Iterating it cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    data: &'a [u8],
    items: usize,
}

impl<'a> Datagram<'a> {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.items
    }
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }
    /// The items in wire order.
    pub fn items(&self) -> Items<'a> {
        Items {
            data: self.data,
            pos: HEADER_LEN,
        }
    }
}

/// Iterator over the items of a validated [`Datagram`].
#[derive(Clone, Debug)]
pub struct Items<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Item<'a>;
    fn next(&mut self) -> Option<Item<'a>> {
        if self.pos >= self.data.len() {
            return None;
        }
        // `decode` validated every item, so `parse_item` succeeds; should it
        // not, stop rather than panic.
        match parse_item(self.data, self.pos) {
            Ok((item, next)) => {
                self.pos = next;
                Some(item)
            }
            Err(_) => {
                self.pos = self.data.len();
                None
            }
        }
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parses the item starting at `pos` (which must be `< data.len()`); returns it
/// and the offset of the next item.
fn parse_item(data: &[u8], pos: usize) -> Result<(Item<'_>, usize), DecodeError> {
    let have = data.len() - pos;
    let truncated = |need| DecodeError {
        offset: pos,
        problem: Problem::Truncated { need, have },
    };
    match data[pos] {
        TYPE_CELL => {
            if have < CELL_ITEM_LEN {
                return Err(truncated(CELL_ITEM_LEN));
            }
            let flags = data[pos + 9];
            if flags & FLAGS_RESERVED != 0 {
                return Err(DecodeError {
                    offset: pos + 9,
                    problem: Problem::ReservedFlags(flags),
                });
            }
            let body: &CellBody = data[pos + 10..pos + CELL_ITEM_LEN]
                .try_into()
                .map_err(|_| truncated(CELL_ITEM_LEN))?;
            let cell = Cell {
                circ_id: be32(data, pos + 1),
                seq: be32(data, pos + 5),
                flags,
                body,
            };
            Ok((Item::Cell(cell), pos + CELL_ITEM_LEN))
        }
        TYPE_FEEDBACK => {
            if have < 6 {
                return Err(truncated(6));
            }
            let kinds = data[pos + 5];
            if kinds & KINDS_RESERVED != 0 {
                return Err(DecodeError {
                    offset: pos + 5,
                    problem: Problem::ReservedKinds(kinds),
                });
            }
            let has_ack = kinds & KIND_ACK != 0;
            let has_fwd = kinds & KIND_FWD != 0;
            let need = 6 + 4 * (has_ack as usize + has_fwd as usize);
            if have < need {
                return Err(truncated(need));
            }
            let mut at = pos + 6;
            let ack = has_ack.then(|| {
                at += 4;
                be32(data, at - 4)
            });
            let fwd = has_fwd.then(|| be32(data, at));
            let fb = Feedback {
                circ_id: be32(data, pos + 1),
                ack,
                fwd,
            };
            Ok((Item::Feedback(fb), pos + need))
        }
        TYPE_SACK => {
            if have < SACK_HEADER_LEN {
                return Err(truncated(SACK_HEADER_LEN));
            }
            let n = data[pos + 9];
            if n == 0 || n as usize > MAX_SACK_BLOCKS {
                return Err(DecodeError {
                    offset: pos + 9,
                    problem: Problem::BadSackCount(n),
                });
            }
            let need = SACK_HEADER_LEN + 8 * n as usize;
            if have < need {
                return Err(truncated(need));
            }
            let mut s = Sack::new(be32(data, pos + 1), be32(data, pos + 5));
            for i in 0..n as usize {
                let at = pos + SACK_HEADER_LEN + 8 * i;
                s.push(be32(data, at), be32(data, at + 4));
            }
            if let Some(index) = s.first_bad_block() {
                return Err(DecodeError {
                    offset: pos + SACK_HEADER_LEN + 8 * index as usize,
                    problem: Problem::BadSackBlock { index },
                });
            }
            Ok((Item::Sack(s), pos + need))
        }
        t => Err(DecodeError {
            offset: pos,
            problem: Problem::UnknownType(t),
        }),
    }
}

/// Validates a whole datagram. On success the items can be iterated without
/// further checks; on failure nothing of it should be used.
pub fn decode(data: &[u8]) -> Result<Datagram<'_>, DecodeError> {
    let Some(&v) = data.first() else {
        return Err(DecodeError {
            offset: 0,
            problem: Problem::Empty,
        });
    };
    if v != VERSION {
        return Err(DecodeError {
            offset: 0,
            problem: Problem::BadVersion(v),
        });
    }
    let mut pos = HEADER_LEN;
    let mut items = 0;
    while pos < data.len() {
        let (_, next) = parse_item(data, pos)?;
        pos = next;
        items += 1;
    }
    Ok(Datagram { data, items })
}

/// Starts a datagram in `out` (clearing it): writes the header.
pub fn begin(out: &mut Vec<u8>) {
    out.clear();
    out.push(VERSION);
}

/// Appends a CELL item.
pub fn put_cell(out: &mut Vec<u8>, circ_id: u32, seq: u32, flags: u8, body: &CellBody) {
    out.reserve(CELL_ITEM_LEN);
    out.push(TYPE_CELL);
    out.extend_from_slice(&circ_id.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.push(flags);
    out.extend_from_slice(body);
}

/// Appends a FEEDBACK item.
pub fn put_feedback(out: &mut Vec<u8>, fb: &Feedback) {
    out.push(TYPE_FEEDBACK);
    out.extend_from_slice(&fb.circ_id.to_be_bytes());
    let mut kinds = 0;
    if fb.ack.is_some() {
        kinds |= KIND_ACK;
    }
    if fb.fwd.is_some() {
        kinds |= KIND_FWD;
    }
    out.push(kinds);
    if let Some(a) = fb.ack {
        out.extend_from_slice(&a.to_be_bytes());
    }
    if let Some(f) = fb.fwd {
        out.extend_from_slice(&f.to_be_bytes());
    }
}

/// Appends a SACK item (as given: see [`Sack`] for what decodes).
pub fn put_sack(out: &mut Vec<u8>, s: &Sack) {
    out.push(TYPE_SACK);
    out.extend_from_slice(&s.circ_id.to_be_bytes());
    out.extend_from_slice(&s.ack.to_be_bytes());
    out.push(s.len);
    for &(a, b) in s.blocks() {
        out.extend_from_slice(&a.to_be_bytes());
        out.extend_from_slice(&b.to_be_bytes());
    }
}

/// Appends any item.
pub fn put_item(out: &mut Vec<u8>, item: &Item<'_>) {
    match item {
        Item::Cell(c) => put_cell(out, c.circ_id, c.seq, c.flags, c.body),
        Item::Feedback(f) => put_feedback(out, f),
        Item::Sack(s) => put_sack(out, s),
    }
}

/// Encodes a whole datagram from items.
pub fn encode(items: &[Item<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + items.iter().map(Item::wire_len).sum::<usize>());
    begin(&mut out);
    for it in items {
        put_item(&mut out, it);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(x: u8) -> CellBody {
        let mut b = [0u8; CELL_BODY_LEN];
        for (i, v) in b.iter_mut().enumerate() {
            *v = x.wrapping_add(i as u8);
        }
        b
    }

    #[test]
    fn round_trip_all_item_shapes() {
        let b1 = body(1);
        let b2 = body(200);
        let items = [
            Item::Cell(Cell {
                circ_id: 7,
                seq: 1,
                flags: FLAG_OPEN,
                body: &b1,
            }),
            Item::Feedback(Feedback {
                circ_id: 0xdead_beef,
                ack: Some(5),
                fwd: None,
            }),
            Item::Feedback(Feedback {
                circ_id: 1,
                ack: None,
                fwd: Some(u32::MAX),
            }),
            Item::Feedback(Feedback {
                circ_id: 2,
                ack: Some(9),
                fwd: Some(3),
            }),
            Item::Feedback(Feedback {
                circ_id: 3,
                ack: None,
                fwd: None,
            }),
            Item::Sack(Sack::from_blocks(4, 10, &[(20, 25), (11, 12)]).unwrap()),
            Item::Cell(Cell {
                circ_id: u32::MAX,
                seq: u32::MAX,
                flags: FLAG_CLOSE,
                body: &b2,
            }),
            Item::Sack(
                Sack::from_blocks(
                    5,
                    0,
                    &(0..8u32)
                        .map(|i| (1 + 10 * i, 5 + 10 * i))
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            ),
        ];
        let bytes = encode(&items);
        assert_eq!(bytes.len(), 1 + 2 * 519 + 10 + 10 + 14 + 6 + 26 + 74);
        let d = decode(&bytes).unwrap();
        assert_eq!(d.len(), items.len());
        let back: Vec<Item> = d.items().collect();
        assert_eq!(back, items);
        assert_eq!(encode(&back), bytes, "canonical");
    }

    #[test]
    fn header_only_is_valid_and_empty() {
        let d = decode(&[VERSION]).unwrap();
        assert!(d.is_empty());
        assert_eq!(d.items().count(), 0);
    }

    #[test]
    fn exact_layout() {
        let fb = Feedback {
            circ_id: 0x0102_0304,
            ack: Some(0x0a0b_0c0d),
            fwd: Some(0x1112_1314),
        };
        let bytes = encode(&[Item::Feedback(fb)]);
        assert_eq!(
            bytes,
            [2, 2, 1, 2, 3, 4, 3, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x12, 0x13, 0x14]
        );
    }

    #[test]
    fn errors_name_offset_and_problem() {
        let e = |d: &[u8]| decode(d).unwrap_err();
        assert_eq!(e(&[]).problem, Problem::Empty);
        assert_eq!(
            e(&[1]),
            DecodeError {
                offset: 0,
                problem: Problem::BadVersion(1)
            }
        );
        assert_eq!(
            e(&[2, 9]),
            DecodeError {
                offset: 1,
                problem: Problem::UnknownType(9)
            }
        );
        assert_eq!(
            e(&[2, 2, 0, 0, 0, 1]),
            DecodeError {
                offset: 1,
                problem: Problem::Truncated { need: 6, have: 5 }
            }
        );
        assert_eq!(
            e(&[2, 2, 0, 0, 0, 1, 4]),
            DecodeError {
                offset: 6,
                problem: Problem::ReservedKinds(4)
            }
        );
        assert_eq!(
            e(&[2, 2, 0, 0, 0, 1, 3, 0, 0, 0, 1, 0, 0]),
            DecodeError {
                offset: 1,
                problem: Problem::Truncated { need: 14, have: 12 }
            }
        );
        let b = body(0);
        let mut cell = encode(&[Item::Cell(Cell {
            circ_id: 1,
            seq: 1,
            flags: 0,
            body: &b,
        })]);
        cell[10] = 0x80;
        assert_eq!(
            e(&cell),
            DecodeError {
                offset: 10,
                problem: Problem::ReservedFlags(0x80)
            }
        );
        cell.truncate(300);
        assert_eq!(
            e(&cell),
            DecodeError {
                offset: 1,
                problem: Problem::Truncated {
                    need: 519,
                    have: 299
                }
            }
        );
        let msg = e(&[2, 2, 0, 0, 0, 1, 4]).to_string();
        assert!(msg.contains("byte 6") && msg.contains("reserved"), "{msg}");
    }

    /// A SACK item, block by block: `ack` 10, blocks 20..25 and 12..13.
    fn sack_bytes() -> Vec<u8> {
        vec![
            2, 3, 0, 0, 0, 7, 0, 0, 0, 10, 2, 0, 0, 0, 20, 0, 0, 0, 25, 0, 0, 0, 12, 0, 0, 0, 13,
        ]
    }

    #[test]
    fn sack_exact_layout() {
        let s = Sack::from_blocks(7, 10, &[(20, 25), (12, 13)]).unwrap();
        assert_eq!(s.wire_len(), 26);
        assert_eq!(encode(&[Item::Sack(s)]), sack_bytes());
        let bytes = sack_bytes();
        let d = decode(&bytes).unwrap();
        assert_eq!(d.items().collect::<Vec<_>>(), [Item::Sack(s)]);
        assert_eq!(s.blocks(), [(20, 25), (12, 13)]);
        let full = Sack::from_blocks(
            1,
            0,
            &(0..8u32)
                .map(|i| (1 + 3 * i, 2 + 3 * i))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert_eq!(full.wire_len(), SACK_MAX_LEN);
        assert_eq!(SACK_MAX_LEN, 74);
        let mut more = full;
        assert!(!more.push(100, 101), "a ninth block does not fit");
        assert_eq!(more, full);
    }

    #[test]
    fn sack_errors_name_the_count_and_the_block() {
        let e = |d: &[u8]| decode(d).unwrap_err();
        // Block count 0 and 9.
        for n in [0u8, 9, 255] {
            let mut d = sack_bytes();
            d[10] = n;
            assert_eq!(
                e(&d),
                DecodeError {
                    offset: 10,
                    problem: Problem::BadSackCount(n)
                }
            );
        }
        // A count that promises more blocks than there are.
        let mut d = sack_bytes();
        d[10] = 3;
        assert_eq!(
            e(&d),
            DecodeError {
                offset: 1,
                problem: Problem::Truncated { need: 34, have: 26 }
            }
        );
        assert_eq!(
            e(&sack_bytes()[..8]),
            DecodeError {
                offset: 1,
                problem: Problem::Truncated { need: 10, have: 7 }
            }
        );
        let block = |blocks: &[(u32, u32)]| {
            let mut s = Sack::new(7, 10);
            for &(a, b) in blocks {
                s.push(a, b);
            }
            decode(&encode(&[Item::Sack(s)])).map(|d| d.len())
        };
        let bad = |blocks: &[(u32, u32)], index: u8| {
            assert_eq!(
                block(blocks).unwrap_err(),
                DecodeError {
                    offset: 1 + 10 + 8 * index as usize,
                    problem: Problem::BadSackBlock { index }
                },
                "{blocks:?}"
            );
            assert_eq!(
                Sack::from_blocks(7, 10, blocks).unwrap_err(),
                Problem::BadSackBlock { index }
            );
        };
        bad(&[(10, 12)], 0); // start = ack: cell 10 would be ACKed
        bad(&[(5, 12)], 0); // below ack
        bad(&[(12, 12)], 0); // empty
        bad(&[(13, 12)], 0); // reversed
        bad(&[(20, 25), (25, 30)], 1); // touching
        bad(&[(20, 25), (15, 20)], 1); // touching below
        bad(&[(20, 25), (22, 23)], 1); // inside
        bad(&[(20, 25), (11, 12), (12, 40)], 2); // overlapping two
        assert!(block(&[(20, 25), (26, 30), (11, 19)]).is_ok());
        assert!(block(&[(11, u32::MAX)]).is_ok());
        assert_eq!(
            Sack::from_blocks(7, 10, &[]).unwrap_err(),
            Problem::BadSackCount(0)
        );
        let msg = block(&[(20, 25), (25, 30)]).unwrap_err().to_string();
        assert!(
            msg.contains("byte 19") && msg.contains("SACK block 1"),
            "{msg}"
        );
    }
}
