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
use hopwise_proto::time::Time;
use std::io::{self, Write};

/// Default bytes kept per packet: IPv4 (20) + TCP with the longest options
/// (60) + 48 bytes of payload.
pub const DEFAULT_SNAPLEN: u32 = 128;

/// Smallest accepted snap length: an IPv4 and a TCP header without options.
pub const MIN_SNAPLEN: u32 = 40;

const MAGIC_NS: u32 = 0xA1B2_3C4D;
const LINKTYPE_RAW: u32 = 101;

/// The IPv4 address a capture gives node `id`: `10.0.0.0 + id + 1`.
pub fn node_addr(id: NodeId) -> [u8; 4] {
    (0x0A00_0000u32 + id + 1).to_be_bytes()
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
    out.push(0);
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
    use hopwise_proto::tcp::SackBlocks;

    /// A reader for what [`Capture`] writes: (ts ns, incl, orig, bytes).
    fn records(file: &[u8]) -> Vec<(u64, u32, u32, Vec<u8>)> {
        let u32le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!(u32le(&file[0..4]), MAGIC_NS);
        assert_eq!(u32le(&file[20..24]), LINKTYPE_RAW);
        let mut out = Vec::new();
        let mut i = 24;
        while i < file.len() {
            let sec = u32le(&file[i..]) as u64;
            let ns = u32le(&file[i + 4..]) as u64;
            let incl = u32le(&file[i + 8..]);
            let orig = u32le(&file[i + 12..]);
            let data = file[i + 16..i + 16 + incl as usize].to_vec();
            out.push((sec * 1_000_000_000 + ns, incl, orig, data));
            i += 16 + incl as usize;
        }
        out
    }

    /// A `Write` whose bytes the test can read after the capture owns it.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

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
    fn records_carry_time_lengths_and_a_valid_ipv4_header() {
        let sink = Shared::default();
        let mut c = Capture::new(Box::new(sink.clone()), DEFAULT_SNAPLEN).unwrap();
        let data = segs().remove(4);
        let p = Packet::tcp(2, 0, 0, data.clone());
        c.record(Time::from_nanos(3_000_000_123), &p);
        let u = Packet::udp(0, 5, 9000, 9001, Bytes::from_static(b"hello"));
        c.record(Time::from_nanos(4_000_000_000), &u);
        c.finish().unwrap();
        assert_eq!((c.packets, c.bytes), (2, 1500 + 33));
        let file = sink.0.lock().unwrap().clone();
        let r = records(&file);
        assert_eq!(r.len(), 2);
        let (t, incl, orig, ip) = &r[0];
        assert_eq!(*t, 3_000_000_123);
        assert_eq!((*incl, *orig), (DEFAULT_SNAPLEN, 1500));
        assert_eq!(ip[0], 0x45);
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
        let (_, incl, orig, ip) = &r[1];
        assert_eq!((*incl, *orig), (33, 33));
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
        let p = Packet::tcp(0, 1, 0, segs().remove(3));
        for i in 0..5 {
            c.record(Time::from_nanos(i), &p);
        }
        assert_eq!(c.packets, 1);
        let e = c.finish().unwrap_err();
        assert!(e.to_string().contains("disk full"));
    }
}
