//! The µTP version-1 packet: a 20-byte header, a chain of extensions, the
//! payload (BEP 29, "Header format").
//!
//! ```text
//! 0       4       8               16              24              32
//! +-------+-------+---------------+---------------+---------------+
//! | type  | ver   | extension     | connection_id                 |
//! +-------+-------+---------------+---------------+---------------+
//! | timestamp_microseconds                                        |
//! | timestamp_difference_microseconds                             |
//! | wnd_size                                                      |
//! | seq_nr                        | ack_nr                        |
//! +---------------+---------------+---------------+---------------+
//! extension := next_extension:u8 len:u8 body:[len]
//! ```
//!
//! All integers are big-endian. Types (BEP 29): ST_DATA 0, ST_FIN 1,
//! ST_STATE 2, ST_RESET 3, ST_SYN 4. Extension 1 is the selective ACK: a
//! bitmask whose bit `i` (least significant bit of byte `i / 8` first) stands
//! for `ack_nr + 2 + i`. BEP 29 asks for a length that is a multiple of 4;
//! libtorrent sends `⌈span / 8⌉` bytes (`utp_stream.cpp`, `send_pkt`), so the
//! parser accepts any length and the writer pads to a multiple of 4. Other
//! extensions are skipped by their length (libtorrent sends type 3, its
//! close reason, in `send_pkt`).
//!
//! [`parse`] never panics and names the field that is wrong.

use std::fmt;

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 20;
/// The protocol version this codec speaks (BEP 29: 1).
pub const VERSION: u8 = 1;
/// The selective-ACK extension (BEP 29).
pub const EXT_SACK: u8 = 1;

/// The packet type (the header's high nibble).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PacketType {
    Data = 0,
    Fin = 1,
    State = 2,
    Reset = 3,
    Syn = 4,
}

impl PacketType {
    pub fn from_nibble(n: u8) -> Option<PacketType> {
        Some(match n {
            0 => PacketType::Data,
            1 => PacketType::Fin,
            2 => PacketType::State,
            3 => PacketType::Reset,
            4 => PacketType::Syn,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Data => "ST_DATA",
            PacketType::Fin => "ST_FIN",
            PacketType::State => "ST_STATE",
            PacketType::Reset => "ST_RESET",
            PacketType::Syn => "ST_SYN",
        }
    }
}

/// The fixed header. `extension` is implied by what is written after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub ty: PacketType,
    pub conn_id: u16,
    pub timestamp_us: u32,
    pub timestamp_diff_us: u32,
    pub wnd_size: u32,
    pub seq_nr: u16,
    pub ack_nr: u16,
}

/// A parsed packet borrowing from the datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub header: Header,
    /// The selective-ACK bitmask, if the chain had one (the first one wins).
    pub sack: Option<&'a [u8]>,
    /// Extensions other than the selective ACK that were skipped.
    pub skipped_extensions: u8,
    pub payload: &'a [u8],
}

/// Why a datagram is not a µTP packet. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the 20-byte header.
    TooShort { len: usize },
    /// The `ver` nibble is not 1.
    Version(u8),
    /// The `type` nibble is not 0..=4.
    Type(u8),
    /// An extension's `next_extension`/`len` bytes run past the datagram.
    ExtensionHeader { offset: usize },
    /// An extension's body (`len` bytes) runs past the datagram.
    ExtensionLength { offset: usize, len: u8 },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::TooShort { len } => {
                write!(f, "µTP header: {len} bytes, need {HEADER_LEN}")
            }
            ParseError::Version(v) => write!(f, "µTP header: `ver` is {v}, expected {VERSION}"),
            ParseError::Type(t) => write!(f, "µTP header: `type` {t} is not 0..=4"),
            ParseError::ExtensionHeader { offset } => write!(
                f,
                "µTP extension at byte {offset}: `next_extension`/`len` run past the datagram"
            ),
            ParseError::ExtensionLength { offset, len } => write!(
                f,
                "µTP extension at byte {offset}: `len` {len} runs past the datagram"
            ),
        }
    }
}

impl std::error::Error for ParseError {}

fn be16(b: &[u8], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(s) => u16::from_be_bytes([s[0], s[1]]),
        None => 0,
    }
}
fn be32(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(s) => u32::from_be_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

/// Parses one datagram.
pub fn parse(buf: &[u8]) -> Result<Packet<'_>, ParseError> {
    if buf.len() < HEADER_LEN {
        return Err(ParseError::TooShort { len: buf.len() });
    }
    let tv = buf[0];
    if tv & 0x0f != VERSION {
        return Err(ParseError::Version(tv & 0x0f));
    }
    let ty = PacketType::from_nibble(tv >> 4).ok_or(ParseError::Type(tv >> 4))?;
    let header = Header {
        ty,
        conn_id: be16(buf, 2),
        timestamp_us: be32(buf, 4),
        timestamp_diff_us: be32(buf, 8),
        wnd_size: be32(buf, 12),
        seq_nr: be16(buf, 16),
        ack_nr: be16(buf, 18),
    };
    let mut ext = buf[1];
    let mut at = HEADER_LEN;
    let mut sack = None;
    let mut skipped = 0u8;
    while ext != 0 {
        let (Some(&next), Some(&len)) = (buf.get(at), buf.get(at + 1)) else {
            return Err(ParseError::ExtensionHeader { offset: at });
        };
        let body = buf
            .get(at + 2..at + 2 + len as usize)
            .ok_or(ParseError::ExtensionLength { offset: at, len })?;
        if ext == EXT_SACK && sack.is_none() {
            sack = Some(body);
        } else {
            skipped = skipped.saturating_add(1);
        }
        at += 2 + len as usize;
        ext = next;
    }
    Ok(Packet {
        header,
        sack,
        skipped_extensions: skipped,
        payload: buf.get(at..).unwrap_or(&[]),
    })
}

/// Appends a packet to `out`: the header, a selective ACK (padded with zero
/// bytes to a multiple of 4, at most 252 bytes) if `sack` is non-empty, then
/// the payload.
pub fn write(h: &Header, sack: &[u8], payload: &[u8], out: &mut Vec<u8>) {
    let sack = &sack[..sack.len().min(252)];
    out.reserve(HEADER_LEN + sack.len() + 5 + payload.len());
    out.push((h.ty as u8) << 4 | VERSION);
    out.push(if sack.is_empty() { 0 } else { EXT_SACK });
    out.extend_from_slice(&h.conn_id.to_be_bytes());
    out.extend_from_slice(&h.timestamp_us.to_be_bytes());
    out.extend_from_slice(&h.timestamp_diff_us.to_be_bytes());
    out.extend_from_slice(&h.wnd_size.to_be_bytes());
    out.extend_from_slice(&h.seq_nr.to_be_bytes());
    out.extend_from_slice(&h.ack_nr.to_be_bytes());
    if !sack.is_empty() {
        let padded = sack.len().div_ceil(4) * 4;
        out.push(0);
        out.push(padded as u8);
        out.extend_from_slice(sack);
        out.resize(out.len() + padded - sack.len(), 0);
    }
    out.extend_from_slice(payload);
}

/// Whether selective-ACK bit `i` is set.
pub fn sack_bit(mask: &[u8], i: usize) -> bool {
    mask.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hdr(ty: PacketType) -> Header {
        Header {
            ty,
            conn_id: 0xBEEF,
            timestamp_us: 0x0102_0304,
            timestamp_diff_us: 0xFFFF_FFFF,
            wnd_size: 1 << 20,
            seq_nr: 65535,
            ack_nr: 0,
        }
    }

    #[test]
    fn header_layout_is_bep29() {
        let mut out = Vec::new();
        write(&hdr(PacketType::Syn), &[], b"", &mut out);
        assert_eq!(out.len(), HEADER_LEN);
        assert_eq!(out[0], 0x41);
        assert_eq!(out[1], 0);
        assert_eq!(&out[2..4], &[0xBE, 0xEF]);
        assert_eq!(&out[4..8], &[1, 2, 3, 4]);
        assert_eq!(&out[16..18], &[0xFF, 0xFF]);
        let p = parse(&out).unwrap();
        assert_eq!(p.header, hdr(PacketType::Syn));
        assert_eq!(p.sack, None);
        assert!(p.payload.is_empty());
    }

    #[test]
    fn sack_padded_and_bits_from_lsb() {
        let mut out = Vec::new();
        write(&hdr(PacketType::State), &[0b0000_0101], b"xy", &mut out);
        assert_eq!(out[1], EXT_SACK);
        assert_eq!(&out[20..22], &[0, 4]);
        let p = parse(&out).unwrap();
        let m = p.sack.unwrap();
        assert_eq!(m.len(), 4);
        assert!(sack_bit(m, 0) && !sack_bit(m, 1) && sack_bit(m, 2));
        assert!(!sack_bit(m, 1000));
        assert_eq!(p.payload, b"xy");
    }

    #[test]
    fn unknown_extensions_are_skipped() {
        // libtorrent's close reason (type 3, 4 bytes) after a 1-byte SACK.
        let mut out = Vec::new();
        write(&hdr(PacketType::Fin), &[], b"", &mut out);
        out[1] = EXT_SACK;
        out.extend_from_slice(&[3, 1, 0xff, 0, 4, 0, 0, 0, 7]);
        out.extend_from_slice(b"data");
        let p = parse(&out).unwrap();
        assert_eq!(p.sack, Some(&[0xff][..]));
        assert_eq!(p.skipped_extensions, 1);
        assert_eq!(p.payload, b"data");
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(parse(&[0x41; 19]), Err(ParseError::TooShort { len: 19 }));
        let mut b = vec![0u8; 20];
        b[0] = 0x42;
        assert_eq!(parse(&b), Err(ParseError::Version(2)));
        b[0] = 0x51;
        assert_eq!(parse(&b), Err(ParseError::Type(5)));
        b[0] = 0x21;
        b[1] = 1;
        assert_eq!(parse(&b), Err(ParseError::ExtensionHeader { offset: 20 }));
        b.extend_from_slice(&[0, 8, 1, 2]);
        assert_eq!(
            parse(&b),
            Err(ParseError::ExtensionLength { offset: 20, len: 8 })
        );
        let e = ParseError::Version(2).to_string();
        assert!(e.contains("`ver`"), "{e}");
    }

    fn any_type() -> impl Strategy<Value = PacketType> {
        (0u8..5).prop_map(|n| PacketType::from_nibble(n).unwrap())
    }

    proptest! {
        #[test]
        fn round_trip(ty in any_type(), conn_id: u16, ts: u32, td: u32, wnd: u32, seq: u16, ack: u16,
                      sack in proptest::collection::vec(any::<u8>(), 0..40),
                      payload in proptest::collection::vec(any::<u8>(), 0..100)) {
            let h = Header { ty, conn_id, timestamp_us: ts, timestamp_diff_us: td, wnd_size: wnd, seq_nr: seq, ack_nr: ack };
            let mut out = Vec::new();
            write(&h, &sack, &payload, &mut out);
            let p = parse(&out).unwrap();
            prop_assert_eq!(p.header, h);
            prop_assert_eq!(p.payload, &payload[..]);
            match p.sack {
                None => prop_assert!(sack.is_empty()),
                Some(m) => {
                    prop_assert_eq!(m.len() % 4, 0);
                    prop_assert_eq!(&m[..sack.len()], &sack[..]);
                    prop_assert!(m[sack.len()..].iter().all(|&b| b == 0));
                }
            }
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(p) = parse(&b) {
                prop_assert!(p.payload.len() + HEADER_LEN <= b.len());
            }
        }
    }
}
