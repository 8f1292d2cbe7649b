//! The BitTorrent peer wire protocol (BEP 3), sans-IO: the handshake and the
//! length-prefixed messages, with a streaming decoder that accepts bytes in
//! any chunking and refuses malformed input with an error that names the
//! field.
//!
//! Source: BEP 3, "The BitTorrent Protocol Specification"
//! (<https://www.bittorrent.org/beps/bep_0003.html>), section "peer
//! protocol". Of the Fast Extension (BEP 6,
//! <https://www.bittorrent.org/beps/bep_0006.html>) `reject request` (which
//! lets a choke keep the requests it does not reject), `have all` and `have
//! none` are decoded. Every other id is tolerated: the DHT's `port` (9,
//! BEP 5), BEP 6's `suggest piece` (13) and `allowed fast` (17), the
//! extension protocol (20, BEP 10) and ids nobody assigned come out as
//! [`Msg::Unknown`], their payload skipped without being buffered.
//!
//! A `piece` message carries a block of file data. By default the decoder
//! does not keep the block: it reports [`Msg::Piece`] with the block's
//! length once every byte of it has arrived (the simulator's mode: its
//! blocks carry no data worth copying). A reader made with
//! [`Reader::keep_blocks`] reports [`Event::Block`] with the bytes instead
//! (the real client's mode). [`Msg::encode`] writes only the piece
//! message's 13-byte header; the caller sends the block after it
//! ([`encode_piece`] does both).

use std::fmt;

/// The protocol string of the handshake.
pub const PSTR: &[u8; 19] = b"BitTorrent protocol";
/// The handshake's length: 1 + 19 + 8 (reserved) + 20 (info hash) + 20 (peer id).
pub const HANDSHAKE_LEN: usize = 68;
/// The block size every client requests (BEP 3: "currently 2^14 (16 kiB)").
pub const BLOCK: u32 = 1 << 14;
/// The largest block a request or piece message may carry. Clients refuse
/// more than 16 KiB or 128 KiB; we accept up to 128 KiB.
pub const MAX_BLOCK: u32 = 1 << 17;
/// The largest bitfield accepted: 2^23 pieces.
pub const MAX_BITFIELD: u32 = 1 << 20;
/// The largest payload of a message this decoder skips ([`Msg::Unknown`]).
/// The payload is never buffered, so memory does not depend on it; the
/// bound refuses a length prefix that is nonsense (hopwise's choice: an
/// extension-protocol message, the largest kind in use, carries at most a
/// 16 KiB metadata piece and a small dictionary, BEP 9).
pub const MAX_IGNORED: u32 = 1 << 20;

/// A peer wire message (BEP 3). Lengths in the comments are the
/// length-prefix values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Length 0.
    KeepAlive,
    /// id 0, length 1.
    Choke,
    /// id 1, length 1.
    Unchoke,
    /// id 2, length 1.
    Interested,
    /// id 3, length 1.
    NotInterested,
    /// id 4, length 5: the sender completed (and verified) this piece.
    Have(u32),
    /// id 5, length 1 + bytes: one bit per piece, high bit first.
    Bitfield(Vec<u8>),
    /// id 6, length 13.
    Request { index: u32, begin: u32, len: u32 },
    /// id 7, length 9 + `len`: a block; only its header is encoded and
    /// decoded (see the module docs).
    Piece { index: u32, begin: u32, len: u32 },
    /// id 8, length 13.
    Cancel { index: u32, begin: u32, len: u32 },
    /// id 16, length 13 (BEP 6, "Reject Request"): the request will not be
    /// served. With it, a choke no longer discards the requests implicitly.
    Reject { index: u32, begin: u32, len: u32 },
    /// id 14, length 1 (BEP 6, "Have All"): the sender has every piece (in
    /// place of a bitfield).
    HaveAll,
    /// id 15, length 1 (BEP 6, "Have None").
    HaveNone,
    /// A message this codec does not implement, its payload (`len` bytes
    /// after the id) skipped: `port` (9), `suggest piece` (13), `allowed
    /// fast` (17), `extended` (20) or an unassigned id. Only its header is
    /// encoded, like a piece's.
    Unknown { id: u8, len: u32 },
}

impl Msg {
    /// The message's id (`None` for keep-alive).
    pub fn id(&self) -> Option<u8> {
        Some(match self {
            Msg::KeepAlive => return None,
            Msg::Choke => 0,
            Msg::Unchoke => 1,
            Msg::Interested => 2,
            Msg::NotInterested => 3,
            Msg::Have(_) => 4,
            Msg::Bitfield(_) => 5,
            Msg::Request { .. } => 6,
            Msg::Piece { .. } => 7,
            Msg::Cancel { .. } => 8,
            Msg::Reject { .. } => 16,
            Msg::HaveAll => 14,
            Msg::HaveNone => 15,
            Msg::Unknown { id, .. } => *id,
        })
    }

    /// Bytes on the wire, the block of a piece message included.
    pub fn wire_len(&self) -> usize {
        4 + match self {
            Msg::KeepAlive => 0,
            Msg::Choke
            | Msg::Unchoke
            | Msg::Interested
            | Msg::NotInterested
            | Msg::HaveAll
            | Msg::HaveNone => 1,
            Msg::Have(_) => 5,
            Msg::Bitfield(b) => 1 + b.len(),
            Msg::Request { .. } | Msg::Cancel { .. } | Msg::Reject { .. } => 13,
            Msg::Piece { len, .. } => 9 + *len as usize,
            Msg::Unknown { len, .. } => 1 + *len as usize,
        }
    }

    /// Appends the message to `out`; for [`Msg::Piece`] and
    /// [`Msg::Unknown`] only the header (the caller sends the `len` bytes
    /// of the block or payload next).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let body_len = (self.wire_len() - 4) as u32;
        out.extend_from_slice(&body_len.to_be_bytes());
        let Some(id) = self.id() else { return };
        out.push(id);
        match self {
            Msg::Have(i) => out.extend_from_slice(&i.to_be_bytes()),
            Msg::Bitfield(b) => out.extend_from_slice(b),
            Msg::Request { index, begin, len }
            | Msg::Cancel { index, begin, len }
            | Msg::Reject { index, begin, len } => {
                for x in [index, begin, len] {
                    out.extend_from_slice(&x.to_be_bytes());
                }
            }
            Msg::Piece { index, begin, .. } => {
                out.extend_from_slice(&index.to_be_bytes());
                out.extend_from_slice(&begin.to_be_bytes());
            }
            _ => {}
        }
    }
}

/// Appends a whole piece message, header and block, to `out`.
pub fn encode_piece(index: u32, begin: u32, block: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(block.len()).unwrap_or(u32::MAX);
    Msg::Piece { index, begin, len }.encode(out);
    out.extend_from_slice(block);
}

/// The reserved byte and bit that announce the Fast Extension (BEP 6:
/// "the third least significant bit in the 8th reserved byte").
const FAST_BYTE: usize = 20 + 7;
const FAST_BIT: u8 = 0x04;

/// The handshake that opens every connection (BEP 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handshake {
    pub info_hash: [u8; 20],
    pub peer_id: [u8; 20],
    /// The sender speaks the Fast Extension (BEP 6), here only its
    /// `reject request`. Set in the reserved bytes; a reader refuses a
    /// reject from a peer whose handshake did not set it.
    pub fast: bool,
}

impl Handshake {
    pub fn encode(&self) -> [u8; HANDSHAKE_LEN] {
        let mut b = [0u8; HANDSHAKE_LEN];
        b[0] = PSTR.len() as u8;
        b[1..20].copy_from_slice(PSTR);
        // b[20..28]: reserved, zero but for the Fast Extension's bit.
        if self.fast {
            b[FAST_BYTE] |= FAST_BIT;
        }
        b[28..48].copy_from_slice(&self.info_hash);
        b[48..68].copy_from_slice(&self.peer_id);
        b
    }

    fn decode(b: &[u8; HANDSHAKE_LEN]) -> Result<Handshake, WireError> {
        if b[0] as usize != PSTR.len() {
            return Err(WireError::Pstrlen(b[0]));
        }
        if &b[1..20] != PSTR {
            return Err(WireError::Pstr);
        }
        let mut h = Handshake {
            info_hash: [0; 20],
            peer_id: [0; 20],
            fast: b[FAST_BYTE] & FAST_BIT != 0,
        };
        h.info_hash.copy_from_slice(&b[28..48]);
        h.peer_id.copy_from_slice(&b[48..68]);
        Ok(h)
    }
}

/// Why input was refused. Each variant names the field at fault; after an
/// error the [`Reader`] refuses everything (the connection should be closed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Handshake field `pstrlen` is not 19.
    Pstrlen(u8),
    /// Handshake field `pstr` is not "BitTorrent protocol".
    Pstr,
    /// Handshake field `info_hash` names another torrent.
    InfoHash,
    /// Message field `length` does not fit message `id`.
    Length { id: u8, len: u32 },
    /// A request, cancel or piece whose block length is zero or above
    /// [`MAX_BLOCK`].
    BlockLength(u32),
    /// A `reject request` (id 16) from a peer whose handshake did not set
    /// the Fast Extension's bit in field `reserved` (BEP 6).
    NotFast,
    /// Input after an earlier error.
    Failed,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Pstrlen(n) => {
                write!(f, "handshake field `pstrlen`: expected 19, got {n}")
            }
            WireError::Pstr => write!(
                f,
                "handshake field `pstr`: expected \"BitTorrent protocol\""
            ),
            WireError::InfoHash => {
                write!(
                    f,
                    "handshake field `info_hash`: not the torrent served here"
                )
            }
            WireError::Length { id, len } => write!(
                f,
                "message field `length`: {len} does not fit message id {id}"
            ),
            WireError::BlockLength(n) => write!(
                f,
                "message field `length` of a block: {n} B, expected 1..={MAX_BLOCK}"
            ),
            WireError::NotFast => write!(
                f,
                "message field `id`: reject request (16) without the Fast Extension \
                 bit in the handshake's field `reserved`"
            ),
            WireError::Failed => write!(f, "input after an earlier wire error"),
        }
    }
}

impl std::error::Error for WireError {}

/// What the [`Reader`] is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Handshake,
    Messages,
    /// Inside a piece message's block: `left` bytes still to come.
    Block {
        index: u32,
        begin: u32,
        len: u32,
        left: u32,
    },
    /// Inside the payload of a message skipped ([`Msg::Unknown`]).
    Skip {
        id: u8,
        len: u32,
        left: u32,
    },
    Failed,
}

/// A streaming decoder for one direction of a connection: the handshake
/// (if expected), then messages.
#[derive(Clone, Debug)]
pub struct Reader {
    stage: Stage,
    info_hash: Option<[u8; 20]>,
    /// Whether `reject request` is allowed: the peer's handshake set the
    /// Fast Extension's bit (a messages-only reader allows it).
    fast: bool,
    buf: Vec<u8>,
    /// Whether piece messages deliver their block ([`Event::Block`]).
    keep: bool,
    /// The block being received, in that mode (at most [`MAX_BLOCK`]).
    block: Vec<u8>,
    /// Block bytes received (the payload of piece messages).
    pub block_bytes: u64,
}

/// What [`Reader::push`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Handshake(Handshake),
    Msg(Msg),
    /// A piece message with its block, from a reader made with
    /// [`Reader::keep_blocks`] (which never reports [`Msg::Piece`]).
    Block {
        index: u32,
        begin: u32,
        data: Vec<u8>,
    },
}

impl Reader {
    /// A reader that expects a handshake first; if `info_hash` is given,
    /// one naming another torrent is refused.
    pub fn with_handshake(info_hash: Option<[u8; 20]>) -> Reader {
        Reader {
            stage: Stage::Handshake,
            info_hash,
            fast: false,
            buf: Vec::new(),
            keep: false,
            block: Vec::new(),
            block_bytes: 0,
        }
    }

    /// The same reader, but piece messages deliver their block as
    /// [`Event::Block`] in place of [`Msg::Piece`].
    pub fn keep_blocks(mut self) -> Reader {
        self.keep = true;
        self
    }

    /// A reader for messages only (the handshake was handled elsewhere).
    pub fn messages() -> Reader {
        Reader {
            stage: Stage::Messages,
            fast: true,
            ..Reader::with_handshake(None)
        }
    }

    /// Decodes `data`, appending what it completes to `out`. Bytes of an
    /// incomplete message are kept for the next call. On error, events
    /// decoded before the error are in `out`. After an error every call
    /// fails, an empty one too.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<Event>) -> Result<(), WireError> {
        if self.stage == Stage::Failed {
            return Err(WireError::Failed);
        }
        while !data.is_empty() {
            match self.stage {
                Stage::Failed => return Err(WireError::Failed),
                Stage::Block {
                    index,
                    begin,
                    len,
                    left,
                } => {
                    let n = (left as usize).min(data.len());
                    if self.keep {
                        self.block.extend_from_slice(&data[..n]);
                    }
                    data = &data[n..];
                    self.block_bytes += n as u64;
                    let left = left - n as u32;
                    if left == 0 {
                        self.stage = Stage::Messages;
                        out.push(if self.keep {
                            Event::Block {
                                index,
                                begin,
                                data: std::mem::take(&mut self.block),
                            }
                        } else {
                            Event::Msg(Msg::Piece { index, begin, len })
                        });
                    } else {
                        self.stage = Stage::Block {
                            index,
                            begin,
                            len,
                            left,
                        };
                    }
                }
                Stage::Skip { id, len, left } => {
                    let n = (left as usize).min(data.len());
                    data = &data[n..];
                    let left = left - n as u32;
                    if left == 0 {
                        self.stage = Stage::Messages;
                        out.push(Event::Msg(Msg::Unknown { id, len }));
                    } else {
                        self.stage = Stage::Skip { id, len, left };
                    }
                }
                Stage::Handshake => {
                    let n = (HANDSHAKE_LEN - self.buf.len()).min(data.len());
                    self.buf.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    if self.buf.len() == HANDSHAKE_LEN {
                        let mut b = [0u8; HANDSHAKE_LEN];
                        b.copy_from_slice(&self.buf);
                        self.buf.clear();
                        let h = Handshake::decode(&b).and_then(|h| match self.info_hash {
                            Some(ih) if ih != h.info_hash => Err(WireError::InfoHash),
                            _ => Ok(h),
                        });
                        match h {
                            Ok(h) => {
                                self.stage = Stage::Messages;
                                self.fast = h.fast;
                                out.push(Event::Handshake(h));
                            }
                            Err(e) => return Err(self.fail(e)),
                        }
                    }
                }
                Stage::Messages => loop {
                    // Collect the length prefix, then the id, then the
                    // rest of the header (for piece: the 9 bytes before
                    // the block).
                    let (need, whole) = match self.need() {
                        Ok(n) => n,
                        Err(e) => return Err(self.fail(e)),
                    };
                    if self.buf.len() < need {
                        if data.is_empty() {
                            break;
                        }
                        let n = (need - self.buf.len()).min(data.len());
                        self.buf.extend_from_slice(&data[..n]);
                        data = &data[n..];
                    } else if whole {
                        let len = u32::from_be_bytes(self.buf[..4].try_into().expect("4"));
                        match self.finish(len) {
                            Ok(Some(ev)) => out.push(ev),
                            Ok(None) => {}
                            Err(e) => return Err(self.fail(e)),
                        }
                        break;
                    }
                },
            }
        }
        Ok(())
    }

    /// How many bytes of the current message's header `buf` must hold,
    /// and whether that count is final (the prefix and the id are known).
    fn need(&self) -> Result<(usize, bool), WireError> {
        if self.buf.len() < 4 {
            return Ok((4, false));
        }
        let len = u32::from_be_bytes(self.buf[..4].try_into().expect("4"));
        if len == 0 {
            return Ok((4, true));
        }
        match self.buf.get(4) {
            None => Ok((5, false)),
            Some(&id) => Ok((4 + header_len(id, len)? as usize, true)),
        }
    }

    /// Decodes the complete header in `buf` (length prefix included).
    fn finish(&mut self, len: u32) -> Result<Option<Event>, WireError> {
        let b = std::mem::take(&mut self.buf);
        let u = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        if len == 0 {
            return Ok(Some(Event::Msg(Msg::KeepAlive)));
        }
        let msg = match b[4] {
            0 => Msg::Choke,
            1 => Msg::Unchoke,
            2 => Msg::Interested,
            3 => Msg::NotInterested,
            4 => Msg::Have(u(5)),
            5 => Msg::Bitfield(b[5..].to_vec()),
            14 => Msg::HaveAll,
            15 => Msg::HaveNone,
            16 if !self.fast => return Err(WireError::NotFast),
            id @ (6 | 8 | 16) => {
                let (index, begin, len) = (u(5), u(9), u(13));
                if len == 0 || len > MAX_BLOCK {
                    return Err(WireError::BlockLength(len));
                }
                match id {
                    6 => Msg::Request { index, begin, len },
                    8 => Msg::Cancel { index, begin, len },
                    _ => Msg::Reject { index, begin, len },
                }
            }
            7 => {
                let blen = len - 9;
                self.stage = Stage::Block {
                    index: u(5),
                    begin: u(9),
                    len: blen,
                    left: blen,
                };
                if self.keep {
                    self.block = Vec::with_capacity(blen as usize);
                }
                return Ok(None);
            }
            id => {
                let plen = len - 1;
                if plen == 0 {
                    Msg::Unknown { id, len: 0 }
                } else {
                    self.stage = Stage::Skip {
                        id,
                        len: plen,
                        left: plen,
                    };
                    return Ok(None);
                }
            }
        };
        Ok(Some(Event::Msg(msg)))
    }

    fn fail(&mut self, e: WireError) -> WireError {
        self.stage = Stage::Failed;
        self.buf.clear();
        e
    }
}

/// The body bytes (id included) read before a message is complete, or
/// before its block starts; an error if `len` does not fit `id`.
fn header_len(id: u8, len: u32) -> Result<u32, WireError> {
    let ok = match id {
        0..=3 => len == 1,
        4 => len == 5,
        // An empty bitfield (a torrent of no pieces) is allowed, as the
        // encoder writes it.
        5 => (1..=1 + MAX_BITFIELD).contains(&len),
        6 | 8 | 16 => len == 13,
        14 | 15 => len == 1,
        // port (BEP 5): a 2-byte port number.
        9 => len == 3,
        // suggest piece, allowed fast (BEP 6): a piece index.
        13 | 17 => len == 5,
        7 => {
            let blen = len.saturating_sub(9);
            if len > 9 && blen > MAX_BLOCK {
                return Err(WireError::BlockLength(blen));
            }
            len > 9
        }
        _ => (1..=1 + MAX_IGNORED).contains(&len),
    };
    if !ok {
        return Err(WireError::Length { id, len });
    }
    Ok(match id {
        7 => 9,
        0..=8 | 14..=16 => len,
        // Skipped: only the id is read into the header buffer.
        _ => 1,
    })
}

/// Whether bit `i` of a bitfield is set (high bit first, BEP 3).
pub fn bit(field: &[u8], i: usize) -> bool {
    field.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
}

/// A bitfield of `n` pieces from a predicate.
pub fn bitfield(n: usize, has: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut v = vec![0u8; n.div_ceil(8)];
    for i in (0..n).filter(|&i| has(i)) {
        v[i / 8] |= 0x80 >> (i % 8);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn msg() -> impl Strategy<Value = Msg> {
        let blk = 1..=MAX_BLOCK;
        prop_oneof![
            Just(Msg::KeepAlive),
            Just(Msg::Choke),
            Just(Msg::Unchoke),
            Just(Msg::Interested),
            Just(Msg::NotInterested),
            any::<u32>().prop_map(Msg::Have),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Msg::Bitfield),
            (any::<u32>(), any::<u32>(), blk.clone())
                .prop_map(|(index, begin, len)| Msg::Request { index, begin, len }),
            (any::<u32>(), any::<u32>(), 1..3000u32).prop_map(|(index, begin, len)| Msg::Piece {
                index,
                begin,
                len
            }),
            (any::<u32>(), any::<u32>(), blk.clone()).prop_map(|(index, begin, len)| Msg::Cancel {
                index,
                begin,
                len
            }),
            (any::<u32>(), any::<u32>(), blk).prop_map(|(index, begin, len)| Msg::Reject {
                index,
                begin,
                len
            }),
            Just(Msg::HaveAll),
            Just(Msg::HaveNone),
            Just(Msg::Unknown { id: 9, len: 2 }),
            prop_oneof![Just(13u8), Just(17)].prop_map(|id| Msg::Unknown { id, len: 4 }),
            (prop_oneof![Just(20u8), 10..=12u8, 18..=255u8], 0..3000u32)
                .prop_map(|(id, len)| Msg::Unknown { id, len }),
        ]
    }

    /// Encodes messages (blocks filled with `0xAB`).
    fn wire(h: Option<Handshake>, msgs: &[Msg]) -> Vec<u8> {
        let mut v = h.map(|h| h.encode().to_vec()).unwrap_or_default();
        for m in msgs {
            m.encode(&mut v);
            match m {
                Msg::Piece { len, .. } => v.extend(std::iter::repeat_n(0xAB, *len as usize)),
                Msg::Unknown { len, .. } => v.extend(std::iter::repeat_n(0xCD, *len as usize)),
                _ => {}
            }
        }
        v
    }

    proptest! {
        /// Whatever the chunking, the reader gives back what was encoded.
        #[test]
        fn round_trip_any_chunking(
            msgs in proptest::collection::vec(msg(), 0..12),
            cuts in proptest::collection::vec(1usize..200, 0..40),
            keep in any::<bool>(),
        ) {
            let h = Handshake { info_hash: [7; 20], peer_id: [9; 20], fast: true };
            let bytes = wire(Some(h), &msgs);
            let mut r = Reader::with_handshake(Some([7; 20]));
            if keep {
                r = r.keep_blocks();
            }
            let mut out = Vec::new();
            let mut rest = &bytes[..];
            for c in cuts.iter().cycle().take(10_000) {
                if rest.is_empty() { break; }
                let n = (*c).min(rest.len());
                r.push(&rest[..n], &mut out).unwrap();
                rest = &rest[n..];
            }
            r.push(rest, &mut out).unwrap();
            let mut want = vec![Event::Handshake(h)];
            want.extend(msgs.iter().cloned().map(|m| match m {
                Msg::Piece { index, begin, len } if keep => Event::Block {
                    index,
                    begin,
                    data: vec![0xAB; len as usize],
                },
                m => Event::Msg(m),
            }));
            prop_assert_eq!(&out, &want);
            let blocks: u64 = msgs.iter().map(|m| match m {
                Msg::Piece { len, .. } => *len as u64, _ => 0 }).sum();
            prop_assert_eq!(r.block_bytes, blocks);
            for m in &msgs {
                let mut v = Vec::new();
                m.encode(&mut v);
                let hdr = match m {
                    Msg::Piece { .. } => 13,
                    Msg::Unknown { .. } => 5,
                    _ => m.wire_len(),
                };
                prop_assert_eq!(v.len(), hdr);
            }
        }

        /// Arbitrary bytes never panic, and after an error the reader
        /// refuses everything.
        #[test]
        fn garbage_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..400),
            hs in any::<bool>(),
        ) {
            let mut r = if hs { Reader::with_handshake(None) } else { Reader::messages() };
            let mut out = Vec::new();
            if r.push(&data, &mut out).is_err() {
                prop_assert_eq!(r.push(&[0], &mut out), Err(WireError::Failed));
                prop_assert_eq!(r.push(&[], &mut out), Err(WireError::Failed));
            }
        }
    }

    #[test]
    fn errors_name_the_field() {
        let mut out = Vec::new();
        let mut bad = Handshake {
            info_hash: [1; 20],
            peer_id: [2; 20],
            fast: false,
        }
        .encode();
        let e = Reader::with_handshake(Some([3; 20]))
            .push(&bad, &mut out)
            .unwrap_err();
        assert!(e.to_string().contains("`info_hash`"), "{e}");
        bad[0] = 18;
        let e = Reader::with_handshake(None)
            .push(&bad, &mut out)
            .unwrap_err();
        assert!(e.to_string().contains("`pstrlen`"), "{e}");
        // have with length 4 instead of 5.
        let e = Reader::messages()
            .push(&[0, 0, 0, 4, 4, 0, 0, 0], &mut out)
            .unwrap_err();
        assert_eq!(e, WireError::Length { id: 4, len: 4 });
        // port (9) with a 3-byte port number.
        let e = Reader::messages()
            .push(&[0, 0, 0, 4, 9, 0, 0, 0], &mut out)
            .unwrap_err();
        assert_eq!(e, WireError::Length { id: 9, len: 4 });
        // an extension message (20) of 16 MiB.
        let e = Reader::messages()
            .push(&[1, 0, 0, 0, 20], &mut out)
            .unwrap_err();
        assert!(e.to_string().contains("`length`"), "{e}");
        // a request for 1 MiB.
        let mut v = Vec::new();
        Msg::Request {
            index: 0,
            begin: 0,
            len: 1 << 20,
        }
        .encode(&mut v);
        let e = Reader::messages().push(&v, &mut out).unwrap_err();
        assert_eq!(e, WireError::BlockLength(1 << 20));
        // a piece announcing a 1 MiB block is refused at its header.
        let e = Reader::messages()
            .push(&[0, 16, 0, 9, 7], &mut out)
            .unwrap_err();
        assert!(matches!(e, WireError::BlockLength(_)), "{e}");
        assert!(out.is_empty());
    }

    /// BEP 6: the Fast Extension's bit is reserved byte 7, value 0x04, and a
    /// reject is refused unless the peer's handshake set it.
    #[test]
    fn fast_extension_bit() {
        let h = |fast| Handshake {
            info_hash: [1; 20],
            peer_id: [2; 20],
            fast,
        };
        assert_eq!(h(true).encode()[27], 0x04);
        assert_eq!(h(false).encode()[20..28], [0; 8]);
        let mut reject = Vec::new();
        Msg::Reject {
            index: 1,
            begin: 0,
            len: BLOCK,
        }
        .encode(&mut reject);
        for fast in [true, false] {
            let mut v = h(fast).encode().to_vec();
            v.extend_from_slice(&reject);
            let mut out = Vec::new();
            let r = Reader::with_handshake(None).push(&v, &mut out);
            assert_eq!(out[0], Event::Handshake(h(fast)));
            if fast {
                assert_eq!(r, Ok(()));
                assert_eq!(out.len(), 2);
            } else {
                assert_eq!(r, Err(WireError::NotFast));
                assert!(r.unwrap_err().to_string().contains("`reserved`"));
            }
        }
    }

    /// Ids the codec does not implement are skipped, payload and all, and
    /// the messages after them decode.
    #[test]
    fn unimplemented_ids_are_skipped() {
        let mut v = Vec::new();
        // port 6881 (BEP 5), an extended handshake (BEP 10), have all and
        // allowed fast (BEP 6), id 99 with no payload, then a have.
        v.extend_from_slice(&[0, 0, 0, 3, 9, 0x1a, 0xe1]);
        let ext = b"\0d1:md11:ut_metadatai1eee";
        v.extend_from_slice(&(1 + ext.len() as u32).to_be_bytes());
        v.push(20);
        v.extend_from_slice(ext);
        v.extend_from_slice(&[0, 0, 0, 1, 14]);
        v.extend_from_slice(&[0, 0, 0, 5, 17, 0, 0, 0, 3]);
        v.extend_from_slice(&[0, 0, 0, 1, 99]);
        Msg::Have(7).encode(&mut v);
        let mut r = Reader::messages();
        let mut out = Vec::new();
        for b in &v {
            r.push(std::slice::from_ref(b), &mut out).unwrap();
        }
        assert_eq!(
            out,
            [
                Msg::Unknown { id: 9, len: 2 },
                Msg::Unknown {
                    id: 20,
                    len: ext.len() as u32
                },
                Msg::HaveAll,
                Msg::Unknown { id: 17, len: 4 },
                Msg::Unknown { id: 99, len: 0 },
                Msg::Have(7),
            ]
            .map(Event::Msg)
        );
    }

    /// In `keep_blocks` mode a piece message delivers its bytes.
    #[test]
    fn blocks_carry_their_data() {
        let block: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let mut v = Vec::new();
        encode_piece(4, BLOCK, &block, &mut v);
        Msg::Unchoke.encode(&mut v);
        let mut out = Vec::new();
        let mut r = Reader::messages().keep_blocks();
        for c in v.chunks(1000) {
            r.push(c, &mut out).unwrap();
        }
        assert_eq!(
            out,
            [
                Event::Block {
                    index: 4,
                    begin: BLOCK,
                    data: block.clone()
                },
                Event::Msg(Msg::Unchoke)
            ]
        );
        assert_eq!(r.block_bytes, 3000);
        // The default mode reports only the length.
        let mut out = Vec::new();
        Reader::messages().push(&v, &mut out).unwrap();
        assert_eq!(
            out[0],
            Event::Msg(Msg::Piece {
                index: 4,
                begin: BLOCK,
                len: 3000
            })
        );
    }

    #[test]
    fn bitfields() {
        let f = bitfield(10, |i| i % 3 == 0);
        assert_eq!(f, vec![0b1001_0010, 0b0100_0000]);
        assert!((0..10).all(|i| bit(&f, i) == (i % 3 == 0)));
        assert!(!bit(&f, 99));
    }
}
