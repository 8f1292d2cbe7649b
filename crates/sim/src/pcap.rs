//! Packet captures: every packet that starts transmission on a tapped link
//! direction, written as a classic pcap file that Wireshark, tcpdump and
//! tcptrace read.
//!
//! Format: the pcap file format with nanosecond timestamps (magic
//! `0xA1B23C4D`, version 2.4; draft-ietf-opsawg-pcap §4–5) and link type
//! `LINKTYPE_RAW` (101): each record starts with an IPv4 header. The
//! simulator carries model structs, not bytes, so the headers are built here:
//!
//! * **Addresses.** Node *i* (in scenario order, from 0) is `10.0.0.0 + i + 1`
//!   ([`node_addr`]); `hopwise sim` writes the mapping as a hosts file.
//! * **IPv4.** 20 bytes, no options, DF set, TTL 64, identification counting
//!   the tap's packets, header checksum computed. Total length is the model's
//!   [`Packet::size`], so it matches what queues and links counted (the
//!   scenario checks cap `tcp.mss` so that a segment fits; an agent's UDP
//!   datagram over 65507 bytes would show a clamped length).
//! * **TCP.** The segment's ports, sequence and acknowledgement numbers,
//!   flags and window field as the model sent them, and its options in the
//!   layout [`Segment::options_len`] charges (Linux's: MSS, SACK-permitted,
//!   timestamps, NOP-padded window scale on a SYN; NOP, NOP, timestamps and
//!   NOP, NOP, SACK blocks otherwise), checksum computed over the whole
//!   segment (also when the snap length cuts the record). The model's
//!   `ack_delay` extension has no bytes.
//! * **UDP.** Ports, length and checksum.
//! * **Payload.** The real payload bytes, up to the snap length (default
//!   [`DEFAULT_SNAPLEN`]: every header fits); the record keeps the original
//!   length.
//!
//! A write error stops the capture; the first error is kept and reported by
//! [`Capture::finish`], so a full disk never aborts a run half-way.

use crate::packet::{Body, NodeId, Packet};
use hopwise_proto::tcp::{Flags, Segment};
use hopwise_proto::time::{Dur, Time};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

/// Default bytes kept per packet: IPv4 (20) + TCP with the longest options
/// (60) + 48 bytes of payload.
pub const DEFAULT_SNAPLEN: u32 = 128;

/// Smallest accepted snap length: an IPv4 and a TCP header without options.
pub const MIN_SNAPLEN: u32 = 40;

const MAGIC_NS: u32 = 0xA1B2_3C4D;
const LINKTYPE_RAW: u32 = 101;

/// The IPv4 address a capture gives node `id`: `10.0.0.0 + id + 1`.
pub fn node_addr(id: NodeId) -> [u8; 4] {
    (0x0A00_0000u32 + id.raw() + 1).to_be_bytes()
}

/// One tap's pcap stream.
pub struct Capture {
    w: Box<dyn Write + Send>,
    snaplen: u32,
    ip_id: u16,
    /// Packets and original bytes recorded.
    pub packets: u64,
    pub bytes: u64,
    err: Option<io::Error>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("snaplen", &self.snaplen)
            .field("packets", &self.packets)
            .field("failed", &self.err.is_some())
            .finish()
    }
}

impl Capture {
    /// Starts a capture on `w`, writing the file header at once.
    /// `snaplen` is clamped to at least [`MIN_SNAPLEN`].
    pub fn new(mut w: Box<dyn Write + Send>, snaplen: u32) -> io::Result<Capture> {
        let snaplen = snaplen.max(MIN_SNAPLEN);
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        h.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        w.write_all(&h)?;
        Ok(Capture {
            w,
            snaplen,
            ip_id: 0,
            packets: 0,
            bytes: 0,
            err: None,
            buf: Vec::with_capacity(snaplen as usize + 16),
        })
    }

    /// Records `p` as sent at `t`.
    pub fn record(&mut self, t: Time, p: &Packet) {
        if self.err.is_some() {
            return;
        }
        self.buf.clear();
        let ns = t.as_nanos();
        self.buf
            .extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        self.buf
            .extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&[0; 8]); // lengths, filled in below
        let start = self.buf.len();
        self.ip_id = self.ip_id.wrapping_add(1);
        encode_packet(p, self.ip_id, &mut self.buf);
        // The encoding holds the whole packet (headers and payload); keep
        // at most the snap length of it.
        let orig = (self.buf.len() - start) as u32;
        let incl = orig.min(self.snaplen);
        self.buf.truncate(start + incl as usize);
        self.buf[8..12].copy_from_slice(&incl.to_le_bytes());
        self.buf[12..16].copy_from_slice(&orig.to_le_bytes());
        if let Err(e) = self.w.write_all(&self.buf) {
            self.err = Some(e);
            return;
        }
        self.packets += 1;
        self.bytes += orig as u64;
    }

    /// Flushes the stream; the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.w.flush()
    }
}

/// A capture target in memory: a `Write` whose clones share one buffer, so
/// the caller keeps a clone and reads what the capture wrote (with [`read`])
/// after or during the run.
#[derive(Clone, Debug, Default)]
pub struct MemorySink(Arc<Mutex<Vec<u8>>>);

impl MemorySink {
    pub fn new() -> MemorySink {
        MemorySink::default()
    }
    /// A copy of the bytes written so far.
    pub fn contents(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Write for MemorySink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One record of a capture file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub time: Time,
    /// The packet's length on the wire.
    pub orig_len: u32,
    /// The captured bytes (at most the snap length), from the IPv4 header.
    pub data: Vec<u8>,
}

/// Reads a file in the format [`Capture`] writes (little-endian, nanosecond
/// pcap, `LINKTYPE_RAW`). Anything else, and any truncated or inconsistent
/// record, is an error that names the byte offset.
pub fn read(file: &[u8]) -> Result<Vec<Record>, String> {
    let u32le = |at: usize| -> Option<u32> {
        let b = file.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if file.len() < 24 {
        return Err(format!(
            "offset 0: {} bytes, shorter than a pcap file header (24)",
            file.len()
        ));
    }
    let magic = u32le(0).unwrap_or(0);
    if magic != MAGIC_NS {
        return Err(format!(
            "magic {magic:#010x} at offset 0: not a little-endian nanosecond pcap file ({MAGIC_NS:#010x})"
        ));
    }
    let version = (
        u16::from_le_bytes([file[4], file[5]]),
        u16::from_le_bytes([file[6], file[7]]),
    );
    if version != (2, 4) {
        return Err(format!(
            "version {}.{} at offset 4: expected 2.4",
            version.0, version.1
        ));
    }
    let link = u32le(20).unwrap_or(0);
    if link != LINKTYPE_RAW {
        return Err(format!(
            "link type {link} at offset 20: expected {LINKTYPE_RAW} (LINKTYPE_RAW)"
        ));
    }
    let snaplen = u32le(16).unwrap_or(0);
    let mut out = Vec::new();
    let mut i = 24;
    while i < file.len() {
        let (Some(sec), Some(ns), Some(incl), Some(orig)) =
            (u32le(i), u32le(i + 4), u32le(i + 8), u32le(i + 12))
        else {
            return Err(format!("offset {i}: truncated record header"));
        };
        if ns >= 1_000_000_000 {
            return Err(format!("offset {i}: {ns} nanoseconds (at most 999999999)"));
        }
        if incl > snaplen || incl > orig {
            return Err(format!(
                "offset {i}: captured length {incl} exceeds the snap length {snaplen} or the original length {orig}"
            ));
        }
        let from = i + 16;
        let Some(data) = file.get(from..from + incl as usize) else {
            return Err(format!(
                "offset {i}: record of {incl} bytes runs past the end of the file"
            ));
        };
        out.push(Record {
            time: Time::ZERO + Dur::from_nanos(u64::from(sec) * 1_000_000_000 + u64::from(ns)),
            orig_len: orig,
            data: data.to_vec(),
        });
        i = from + incl as usize;
    }
    Ok(out)
}

/// The TCP fields of a captured IPv4 packet (see [`tcp_view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpView {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// The flags byte (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    pub flags: u8,
    /// Payload bytes, from the IPv4 total length and both header lengths.
    pub payload_len: u32,
}

/// Decodes the IPv4 and TCP headers at the start of `ip` (a record's data);
/// `None` unless it is an IPv4 packet carrying TCP whose fixed TCP header
/// was captured and whose lengths are consistent.
pub fn tcp_view(ip: &[u8]) -> Option<TcpView> {
    let b = |i: usize| ip.get(i).copied();
    if b(0)? >> 4 != 4 || b(9)? != 6 {
        return None;
    }
    let ihl = usize::from(b(0)? & 0x0F) * 4;
    if ihl < 20 {
        return None;
    }
    let total = u32::from(u16::from_be_bytes([b(2)?, b(3)?]));
    let tcp = ip.get(ihl..ihl + 20)?;
    let hl = u32::from(tcp[12] >> 4) * 4;
    if hl < 20 {
        return None;
    }
    let payload_len = total.checked_sub(ihl as u32 + hl)?;
    let quad = |x: &[u8]| [x[0], x[1], x[2], x[3]];
    Some(TcpView {
        src: quad(ip.get(12..16)?),
        dst: quad(ip.get(16..20)?),
        src_port: u16::from_be_bytes([tcp[0], tcp[1]]),
        dst_port: u16::from_be_bytes([tcp[2], tcp[3]]),
        seq: u32::from_be_bytes(quad(&tcp[4..8])),
        ack: u32::from_be_bytes(quad(&tcp[8..12])),
        flags: tcp[13],
        payload_len,
    })
}

/// Adds `data` to a one's-complement sum as 16-bit big-endian words (an odd
/// last byte is padded with zero; only the last piece of a sum may be odd).
fn sum16(mut acc: u64, data: &[u8]) -> u64 {
    let mut it = data.chunks_exact(2);
    for c in &mut it {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [b] = it.remainder() {
        acc += (*b as u64) << 8;
    }
    acc
}

/// Folds a sum into the RFC 1071 Internet checksum.
fn fold(mut acc: u64) -> u16 {
    while acc > 0xFFFF {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    !(acc as u16)
}

/// RFC 1071 Internet checksum of `data`.
fn ip_checksum(data: &[u8]) -> u16 {
    fold(sum16(0, data))
}

/// The TCP or UDP checksum (RFC 9293 §3.1, RFC 768) of the transport
/// header and payload at `out[at..]`, whose checksum field is zero.
fn transport_checksum(ip: &[u8], proto: u8, transport: &[u8]) -> u16 {
    let mut acc = sum16(0, &ip[12..20]);
    acc += proto as u64 + transport.len() as u64;
    fold(sum16(acc, transport))
}

/// Appends `p` as bytes: IPv4 header, transport header, payload.
pub fn encode_packet(p: &Packet, ip_id: u16, out: &mut Vec<u8>) {
    let at = out.len();
    let proto = match p.body {
        Body::Tcp(_) => 6u8,
        Body::Udp { .. } => 17,
    };
    out.push(0x45);
    // DSCP 0; the ECN field (RFC 3168 §5) in the low two bits.
    out.push(p.ecn().bits());
    out.extend_from_slice(&(p.size.min(u16::MAX as u32) as u16).to_be_bytes());
    out.extend_from_slice(&ip_id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
    out.push(64);
    out.push(proto);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&node_addr(p.src));
    out.extend_from_slice(&node_addr(p.dst));
    let ck = ip_checksum(&out[at..at + 20]);
    out[at + 10..at + 12].copy_from_slice(&ck.to_be_bytes());
    let th = out.len();
    let ck_at = match &p.body {
        Body::Tcp(seg) => {
            encode_tcp_header(seg, out);
            out.extend_from_slice(&seg.payload);
            th + 16
        }
        Body::Udp {
            src_port,
            dst_port,
            data,
        } => {
            out.extend_from_slice(&src_port.to_be_bytes());
            out.extend_from_slice(&dst_port.to_be_bytes());
            out.extend_from_slice(&((8 + data.len()).min(u16::MAX as usize) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(data);
            th + 6
        }
    };
    let mut ck = transport_checksum(&out[at..th], proto, &out[th..]);
    if proto == 17 && ck == 0 {
        ck = 0xFFFF; // RFC 768: a computed zero is sent as all ones
    }
    out[ck_at..ck_at + 2].copy_from_slice(&ck.to_be_bytes());
}

const NOP: u8 = 1;

/// Appends the TCP header of `seg` with its options, exactly
/// [`Segment::header_len`] bytes long. The TCP model never builds a header
/// longer than 60 bytes (it sends at most three SACK blocks beside
/// timestamps, RFC 2018 §3); a longer one would not fit the data-offset
/// field.
pub fn encode_tcp_header(seg: &Segment, out: &mut Vec<u8>) {
    let hl = seg.header_len();
    debug_assert!(hl <= 60, "TCP header of {hl} bytes: {seg:?}");
    out.extend_from_slice(&seg.src_port.to_be_bytes());
    out.extend_from_slice(&seg.dst_port.to_be_bytes());
    out.extend_from_slice(&seg.seq.to_be_bytes());
    out.extend_from_slice(&seg.ack.to_be_bytes());
    out.push(((hl / 4) as u8) << 4);
    out.push(seg.flags.bits());
    out.extend_from_slice(&seg.window.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum (filled in by the caller), urgent pointer
    let ts = |out: &mut Vec<u8>, (v, e): (u32, u32)| {
        out.extend_from_slice(&[8, 10]);
        out.extend_from_slice(&v.to_be_bytes());
        out.extend_from_slice(&e.to_be_bytes());
    };
    if let Some(mss) = seg.mss {
        out.extend_from_slice(&[2, 4]);
        out.extend_from_slice(&mss.to_be_bytes());
    }
    if seg.flags.contains(Flags::SYN) {
        match (seg.sack_permitted, seg.ts) {
            (true, Some(t)) => {
                out.extend_from_slice(&[4, 2]);
                ts(out, t);
            }
            (false, Some(t)) => {
                out.extend_from_slice(&[NOP, NOP]);
                ts(out, t);
            }
            (true, None) => out.extend_from_slice(&[NOP, NOP, 4, 2]),
            (false, None) => {}
        }
    } else if let Some(t) = seg.ts {
        out.extend_from_slice(&[NOP, NOP]);
        ts(out, t);
    }
    if let Some(ws) = seg.wscale {
        out.extend_from_slice(&[NOP, 3, 3, ws]);
    }
    if !seg.sack.is_empty() {
        out.extend_from_slice(&[NOP, NOP, 5, 2 + 8 * seg.sack.len() as u8]);
        for &(l, r) in seg.sack.as_slice() {
            out.extend_from_slice(&l.to_be_bytes());
            out.extend_from_slice(&r.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use hopwise_proto::tcp::{Ecn, SackBlocks};

    fn segs() -> Vec<Segment> {
        let mut sack = SackBlocks::new();
        sack.push(1000, 2448);
        sack.push(5000, 6448);
        vec![
            Segment {
                src_port: 40000,
                dst_port: 80,
                seq: 7,
                flags: Flags::SYN,
                window: 65535,
                mss: Some(1460),
                wscale: Some(7),
                sack_permitted: true,
                ts: Some((1, 0)),
                ..Default::default()
            },
            Segment {
                flags: Flags::SYN | Flags::ACK,
                mss: Some(1460),
                ts: Some((3, 1)),
                ..Default::default()
            },
            Segment {
                flags: Flags::SYN,
                sack_permitted: true,
                ..Default::default()
            },
            Segment {
                src_port: 80,
                dst_port: 40000,
                seq: 0xFFFF_FFF0,
                ack: 12345,
                flags: Flags::ACK,
                window: 501,
                ts: Some((0xDEAD_BEEF, 42)),
                sack,
                ..Default::default()
            },
            Segment {
                flags: Flags::ACK | Flags::PSH,
                payload: Bytes::from(vec![0xAB; 1448]),
                ts: Some((5, 6)),
                ..Default::default()
            },
            Segment {
                flags: Flags::RST,
                ..Default::default()
            },
        ]
    }

    #[test]
    fn tcp_header_length_matches_the_models_accounting() {
        for s in segs() {
            let mut v = Vec::new();
            encode_tcp_header(&s, &mut v);
            assert_eq!(v.len() as u32, s.header_len(), "{s:?}");
            assert_eq!(v.len() % 4, 0);
            assert_eq!((v[12] >> 4) as usize * 4, v.len());
            assert_eq!(v[13], s.flags.bits());
        }
    }

    /// Walks the options of an encoded header: (kind, option bytes).
    fn options(h: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 20;
        while i < h.len() {
            match h[i] {
                0 => break,
                NOP => i += 1,
                k => {
                    let l = h[i + 1] as usize;
                    assert!(l >= 2 && i + l <= h.len(), "bad option length at {i}");
                    out.push((k, h[i + 2..i + l].to_vec()));
                    i += l;
                }
            }
        }
        out
    }

    #[test]
    fn options_decode_to_the_segments_fields() {
        let s = &segs();
        let mut v = Vec::new();
        encode_tcp_header(&s[0], &mut v);
        assert_eq!(
            options(&v),
            vec![
                (2, 1460u16.to_be_bytes().to_vec()),
                (4, vec![]),
                (8, [1u32.to_be_bytes(), 0u32.to_be_bytes()].concat()),
                (3, vec![7]),
            ]
        );
        v.clear();
        encode_tcp_header(&s[1], &mut v);
        assert_eq!(
            options(&v),
            vec![
                (2, 1460u16.to_be_bytes().to_vec()),
                (8, [3u32.to_be_bytes(), 1u32.to_be_bytes()].concat()),
            ]
        );
        v.clear();
        encode_tcp_header(&s[2], &mut v);
        assert_eq!(options(&v), vec![(4, vec![])]);
        v.clear();
        encode_tcp_header(&s[3], &mut v);
        assert_eq!(u32::from_be_bytes([v[4], v[5], v[6], v[7]]), 0xFFFF_FFF0);
        assert_eq!(u32::from_be_bytes([v[8], v[9], v[10], v[11]]), 12345);
        assert_eq!(u16::from_be_bytes([v[14], v[15]]), 501);
        let o = options(&v);
        assert_eq!(o[0].0, 8);
        assert_eq!(&o[0].1[..4], &0xDEAD_BEEFu32.to_be_bytes());
        assert_eq!(o[1].0, 5);
        let blocks: Vec<u32> = o[1]
            .1
            .chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(blocks, vec![1000, 2448, 5000, 6448]);
    }

    #[test]
    fn the_tos_byte_carries_the_ecn_field() {
        let mut seg = segs().remove(4);
        for (ecn, bits) in [(Ecn::Ect0, 0b10), (Ecn::Ect1, 0b01)] {
            seg.ecn = ecn;
            let mut p = Packet::tcp(NodeId(2), NodeId(0), 0, seg.clone());
            let mut v = Vec::new();
            encode_packet(&p, 1, &mut v);
            assert_eq!(v[1], bits);
            assert_eq!(ip_checksum(&v[..20]), 0);
            assert!(p.mark_ce());
            v.clear();
            encode_packet(&p, 1, &mut v);
            assert_eq!(v[1], 0b11, "marked CE");
            assert_eq!(ip_checksum(&v[..20]), 0);
        }
    }

    #[test]
    fn records_carry_time_lengths_and_a_valid_ipv4_header() {
        let sink = MemorySink::new();
        let mut c = Capture::new(Box::new(sink.clone()), DEFAULT_SNAPLEN).unwrap();
        let data = segs().remove(4);
        let p = Packet::tcp(NodeId(2), NodeId(0), 0, data.clone());
        c.record(Time::from_nanos(3_000_000_123), &p);
        let u = Packet::udp(
            NodeId(0),
            NodeId(5),
            9000,
            9001,
            Bytes::from_static(b"hello"),
        );
        c.record(Time::from_nanos(4_000_000_000), &u);
        c.finish().unwrap();
        assert_eq!((c.packets, c.bytes), (2, 1500 + 33));
        let file = sink.contents();
        assert_eq!(&file[0..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(&file[20..24], &LINKTYPE_RAW.to_le_bytes());
        let r = read(&file).unwrap();
        assert_eq!(r.len(), 2);
        let Record {
            time,
            orig_len,
            data: ip,
        } = &r[0];
        assert_eq!(*time, Time::from_nanos(3_000_000_123));
        assert_eq!((ip.len() as u32, *orig_len), (DEFAULT_SNAPLEN, 1500));
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[1], 0, "not ECN-capable");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1500);
        assert_eq!(ip[9], 6);
        assert_eq!(&ip[12..16], &[10, 0, 0, 3]);
        assert_eq!(&ip[16..20], &[10, 0, 0, 1]);
        // A header with its checksum in place sums to zero (RFC 1071).
        assert_eq!(ip_checksum(&ip[..20]), 0);
        // The TCP checksum covers the whole segment, beyond the snap length.
        let mut whole = Vec::new();
        encode_packet(&p, 1, &mut whole);
        assert_eq!(&whole[..DEFAULT_SNAPLEN as usize], &ip[..]);
        let verify = |pkt: &[u8], proto: u8| {
            let pseudo = sum16(0, &pkt[12..20]) + proto as u64 + (pkt.len() - 20) as u64;
            fold(sum16(pseudo, &pkt[20..]))
        };
        assert_eq!(verify(&whole, 6), 0);
        whole[100] ^= 1;
        assert_ne!(verify(&whole, 6), 0);
        // Payload bytes follow the 32-byte TCP header, up to the snap length.
        assert!(ip[52..].iter().all(|&b| b == 0xAB));
        let Record {
            orig_len, data: ip, ..
        } = &r[1];
        assert_eq!((ip.len(), *orig_len), (33, 33));
        assert_eq!(ip[9], 17);
        assert_eq!(u16::from_be_bytes([ip[24], ip[25]]), 13);
        assert_eq!(&ip[28..], b"hello");
        assert_eq!(verify(ip, 17), 0);
    }

    #[test]
    fn a_write_error_stops_the_capture_and_is_reported() {
        struct Failing(usize);
        impl Write for Failing {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= 1;
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        // The header and one record fit; the second record fails.
        let mut c = Capture::new(Box::new(Failing(2)), 64).unwrap();
        let p = Packet::tcp(NodeId(0), NodeId(1), 0, segs().remove(3));
        for i in 0..5 {
            c.record(Time::from_nanos(i), &p);
        }
        assert_eq!(c.packets, 1);
        let e = c.finish().unwrap_err();
        assert!(e.to_string().contains("disk full"));
    }

    #[test]
    fn tcp_view_reads_back_what_was_encoded() {
        let sink = MemorySink::new();
        let mut c = Capture::new(Box::new(sink.clone()), 60).unwrap();
        let segs = segs();
        for (i, seg) in segs.iter().enumerate() {
            c.record(
                Time::from_nanos(i as u64),
                &Packet::tcp(NodeId(1), NodeId(4), 0, seg.clone()),
            );
        }
        c.record(
            Time::from_nanos(99),
            &Packet::udp(
                NodeId(0),
                NodeId(5),
                9000,
                9001,
                Bytes::from_static(b"hello"),
            ),
        );
        c.finish().unwrap();
        let r = read(&sink.contents()).unwrap();
        assert_eq!(r.len(), segs.len() + 1);
        for (rec, seg) in r.iter().zip(&segs) {
            let v = tcp_view(&rec.data).expect("a TCP record");
            assert_eq!((v.src, v.dst), ([10, 0, 0, 2], [10, 0, 0, 5]));
            assert_eq!((v.src_port, v.dst_port), (seg.src_port, seg.dst_port));
            assert_eq!(
                (v.seq, v.ack, v.flags),
                (seg.seq, seg.ack, seg.flags.bits())
            );
            assert_eq!(v.payload_len as usize, seg.payload.len());
        }
        assert_eq!(tcp_view(&r[segs.len()].data), None, "UDP");
        // A record cut inside the fixed TCP header is not decoded.
        assert_eq!(tcp_view(&r[0].data[..39]), None);
    }

    #[test]
    fn read_names_the_offset_of_what_is_wrong() {
        let sink = MemorySink::new();
        let mut c = Capture::new(Box::new(sink.clone()), 64).unwrap();
        c.record(
            Time::from_nanos(5),
            &Packet::tcp(NodeId(0), NodeId(1), 0, segs().remove(3)),
        );
        c.finish().unwrap();
        let good = sink.contents();
        assert_eq!(read(&good).unwrap().len(), 1);
        let e = read(&good[..10]).unwrap_err();
        assert!(e.contains("24"), "{e}");
        let mut bad = good.clone();
        bad[0] = 0xD4;
        assert!(read(&bad).unwrap_err().contains("magic"));
        let mut bad = good.clone();
        bad[6] = 3;
        assert!(read(&bad).unwrap_err().contains("version 2.3 at offset 4"));
        let mut bad = good.clone();
        bad[20] = 1;
        assert!(read(&bad).unwrap_err().contains("link type 1"));
        assert!(read(&good[..good.len() - 1])
            .unwrap_err()
            .contains("offset 24"));
        assert!(read(&good[..30]).unwrap_err().contains("offset 24"));
        let mut bad = good.clone();
        bad[24 + 8..24 + 12].copy_from_slice(&65u32.to_le_bytes());
        assert!(read(&bad).unwrap_err().contains("snap length 64"));
    }

    /// A record header for [`read`]: time, captured and original length.
    fn record_header(ns: u32, incl: u32, orig: u32) -> Vec<u8> {
        [7u32, ns, incl, orig]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect()
    }

    proptest::proptest! {
        /// Arbitrary files, and valid files holding arbitrary records (well
        /// framed, mostly IPv4/TCP-looking, with random lengths and bytes),
        /// never panic the reader or the decoder.
        #[test]
        fn read_and_tcp_view_never_panic(
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            recs in proptest::collection::vec(
                (
                    0u32..1_100_000_000,
                    0u32..140,
                    0u32..2000,
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..140),
                    proptest::prelude::any::<bool>(),
                ),
                0..8,
            ),
            cut in 0usize..2000,
        ) {
            let _ = read(&raw);
            let _ = tcp_view(&raw);
            let sink = MemorySink::new();
            Capture::new(Box::new(sink.clone()), 128).unwrap();
            let mut file = sink.contents();
            for (ns, incl, extra, mut data, tcp_like) in recs {
                data.resize(incl as usize, 0);
                if tcp_like && data.len() > 9 {
                    data[0] = 0x45;
                    data[9] = 6;
                }
                file.extend(record_header(ns, incl, incl + extra));
                file.extend(data);
            }
            file.truncate(file.len().saturating_sub(cut % 4));
            if let Ok(rs) = read(&file) {
                for r in rs {
                    proptest::prop_assert!(r.data.len() <= 128);
                    if let Some(v) = tcp_view(&r.data) {
                        proptest::prop_assert!(v.payload_len < 65536);
                    }
                }
            }
        }
    }
}
