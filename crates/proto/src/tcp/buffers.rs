//! Byte buffers of a TCP connection: the send buffer (written but not yet
//! acknowledged) and the receive side (reassembly, in-order queue, and the
//! SACK blocks to report).
//!
//! Data is held as reference-counted [`Bytes`] chunks, so segmenting and
//! reassembly rarely copy.

use bytes::{Bytes, BytesMut};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

/// Bytes written by the application and not yet acknowledged, addressed by
/// stream offset (0 = first data byte).
#[derive(Debug, Default)]
pub struct SendBuffer {
    chunks: VecDeque<Bytes>,
    /// Stream offset of the first byte in `chunks`.
    start: u64,
    len: u64,
}

impl SendBuffer {
    pub fn new() -> Self {
        Self::default()
    }
    /// Stream offset one past the last byte written.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
    pub fn start(&self) -> u64 {
        self.start
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn push(&mut self, data: Bytes) {
        if !data.is_empty() {
            self.len += data.len() as u64;
            self.chunks.push_back(data);
        }
    }
    /// Appends `src[range]`. When the last chunk is the part of `src` just
    /// before `range` (the previous write was the preceding range of the
    /// same buffer), the chunk grows to cover both instead, so that a slice
    /// across the two writes is a view of `src`, not a copy.
    pub fn push_slice(&mut self, src: &Bytes, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let base = src.as_ptr() as usize;
        if let Some(tail) = self.chunks.back_mut() {
            let at = tail.as_ptr() as usize;
            // `tail` and `src` are both alive, so if `tail`'s memory lies
            // inside `src`'s it is that very memory: `tail` is
            // `src[at - base..range.start]`.
            if at >= base && at + tail.len() == base + range.start {
                self.len += range.len() as u64;
                *tail = src.slice(at - base..range.end);
                return;
            }
        }
        self.push(src.slice(range));
    }
    /// Drops everything before stream offset `off`.
    pub fn release_to(&mut self, off: u64) {
        let mut n = off.saturating_sub(self.start).min(self.len);
        self.start += n;
        self.len -= n;
        while n > 0 {
            let front = self.chunks.front_mut().expect("length bookkeeping");
            if (front.len() as u64) <= n {
                n -= front.len() as u64;
                self.chunks.pop_front();
            } else {
                let _ = front.split_to(n as usize);
                n = 0;
            }
        }
    }
    /// The bytes `[off, off + len)`, which must lie inside the buffer.
    /// Zero-copy when they fall inside one chunk.
    pub fn slice(&self, off: u64, len: usize) -> Bytes {
        debug_assert!(off >= self.start && off + len as u64 <= self.end());
        let mut skip = (off - self.start) as usize;
        let mut out: Option<BytesMut> = None;
        let mut need = len;
        for c in &self.chunks {
            if skip >= c.len() {
                skip -= c.len();
                continue;
            }
            let avail = c.len() - skip;
            if out.is_none() && avail >= need {
                return c.slice(skip..skip + need);
            }
            let take = avail.min(need);
            out.get_or_insert_with(|| BytesMut::with_capacity(len))
                .extend_from_slice(&c[skip..skip + take]);
            need -= take;
            skip = 0;
            if need == 0 {
                break;
            }
        }
        out.map(BytesMut::freeze).unwrap_or_default()
    }
}

/// Receive-side reassembly. Offsets are stream offsets of the peer's data.
#[derive(Debug, Default)]
pub struct Reassembly {
    /// Next in-order offset expected (RCV.NXT in stream offsets).
    next: u64,
    /// In-order data not yet read by the application.
    ready: VecDeque<Bytes>,
    ready_len: u64,
    /// Out-of-order segments keyed by start offset; non-overlapping.
    ooo: BTreeMap<u64, Bytes>,
    ooo_len: u64,
    /// SACK blocks, most recently updated first (RFC 2018 §4).
    recent: Vec<(u64, u64)>,
}

/// What [`Reassembly::insert`] did with a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertOutcome {
    /// New in-order bytes made available to the application.
    pub advanced: u64,
    /// The segment was (at least partly) beyond `next`: out of order.
    pub out_of_order: bool,
    /// The segment filled (part of) a hole below buffered out-of-order data.
    pub filled_hole: bool,
    /// Every byte of the segment had been received already.
    pub duplicate: bool,
}

impl Reassembly {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn next(&self) -> u64 {
        self.next
    }
    pub fn ready_len(&self) -> u64 {
        self.ready_len
    }
    pub fn ooo_len(&self) -> u64 {
        self.ooo_len
    }
    pub fn has_ooo(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// Takes up to `max` in-order bytes.
    pub fn read(&mut self, max: usize) -> Option<Bytes> {
        let front = self.ready.front_mut()?;
        let b = if front.len() <= max {
            self.ready.pop_front().expect("front exists")
        } else {
            front.split_to(max)
        };
        self.ready_len -= b.len() as u64;
        Some(b)
    }

    /// Accepts `data` at stream offset `off`; bytes at or beyond `limit` are
    /// dropped (outside the receive window).
    pub fn insert(&mut self, off: u64, mut data: Bytes, limit: u64) -> InsertOutcome {
        let mut out = InsertOutcome {
            advanced: 0,
            out_of_order: false,
            filled_hole: false,
            duplicate: false,
        };
        let end = (off + data.len() as u64).min(limit);
        if end <= off {
            out.duplicate = data.is_empty() || off + (data.len() as u64) <= self.next;
            return out;
        }
        data.truncate((end - off) as usize);
        if end <= self.next {
            out.duplicate = true;
            return out;
        }
        let mut off = off;
        if off < self.next {
            let _ = data.split_to((self.next - off) as usize);
            off = self.next;
        }
        if off == self.next {
            let had_ooo = !self.ooo.is_empty();
            self.push_ready(data);
            // Drain what became contiguous.
            while let Some((&s, _)) = self.ooo.first_key_value() {
                if s > self.next {
                    break;
                }
                let (s, mut d) = self.ooo.pop_first().expect("non-empty");
                self.ooo_len -= d.len() as u64;
                let e = s + d.len() as u64;
                if e > self.next {
                    let _ = d.split_to((self.next - s) as usize);
                    self.push_ready(d);
                }
            }
            out.advanced = self.next - off;
            out.filled_hole = had_ooo;
            let next = self.next;
            self.recent.retain(|&(_, r)| r > next);
            for b in &mut self.recent {
                b.0 = b.0.max(next);
            }
        } else {
            out.out_of_order = true;
            let new = self.insert_ooo(off, data);
            if new == 0 {
                out.duplicate = true;
            }
            let block = self.block_around(off);
            self.recent.retain(|&(l, r)| r < block.0 || l > block.1);
            self.recent.insert(0, block);
            self.recent.truncate(SACK_HISTORY);
        }
        out
    }

    fn push_ready(&mut self, d: Bytes) {
        self.next += d.len() as u64;
        self.ready_len += d.len() as u64;
        self.ready.push_back(d);
    }

    /// Inserts into the out-of-order map keeping entries disjoint; returns new bytes stored.
    fn insert_ooo(&mut self, mut off: u64, mut data: Bytes) -> u64 {
        let mut stored = 0;
        // Trim against the predecessor.
        if let Some((&ps, pd)) = self.ooo.range(..=off).next_back() {
            let pe = ps + pd.len() as u64;
            if pe >= off + data.len() as u64 {
                return 0;
            }
            if pe > off {
                let _ = data.split_to((pe - off) as usize);
                off = pe;
            }
        }
        // Fill gaps between successors.
        while !data.is_empty() {
            let end = off + data.len() as u64;
            let next = self
                .ooo
                .range(off..end)
                .next()
                .map(|(&s, d)| (s, d.len() as u64));
            match next {
                None => {
                    stored += data.len() as u64;
                    self.ooo_len += data.len() as u64;
                    self.ooo.insert(off, data);
                    break;
                }
                Some((s, l)) => {
                    if s > off {
                        let head = data.split_to((s - off) as usize);
                        stored += head.len() as u64;
                        self.ooo_len += head.len() as u64;
                        self.ooo.insert(off, head);
                    }
                    let skip = (s + l).min(end) - s;
                    let _ = data.split_to(skip as usize);
                    off = s + skip;
                }
            }
        }
        stored
    }

    /// The contiguous out-of-order range containing offset `off`.
    fn block_around(&self, off: u64) -> (u64, u64) {
        let (&s0, d0) = self
            .ooo
            .range(..=off)
            .next_back()
            .expect("off was just stored");
        let mut left = s0;
        let mut right = s0 + d0.len() as u64;
        for (&s, d) in self.ooo.range(..s0).rev() {
            if s + d.len() as u64 == left {
                left = s;
            } else {
                break;
            }
        }
        for (&s, d) in self.ooo.range(right..) {
            if s == right {
                right = s + d.len() as u64;
            } else {
                break;
            }
        }
        (left, right)
    }

    /// SACK blocks to report, most recent first (RFC 2018 §4), at most `max`.
    pub fn sack_blocks(&self, max: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.recent.iter().copied().take(max)
    }
}

/// Blocks remembered for reporting; more than fit in one segment so that
/// older blocks are repeated (RFC 2018 §4).
const SACK_HISTORY: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &[u8]) -> Bytes {
        Bytes::copy_from_slice(s)
    }

    #[test]
    fn send_buffer_slices_across_chunks() {
        let mut sb = SendBuffer::new();
        sb.push(b(b"hello "));
        sb.push(b(b"world"));
        assert_eq!(&sb.slice(4, 4)[..], b"o wo");
        assert_eq!(&sb.slice(0, 5)[..], b"hello");
        sb.release_to(3);
        assert_eq!(sb.start(), 3);
        assert_eq!(&sb.slice(3, 8)[..], b"lo world");
        sb.release_to(11);
        assert!(sb.is_empty());
    }

    /// Writes of consecutive ranges of one buffer become one chunk; slices
    /// across them are views of that buffer, and every slice has the bytes
    /// a buffer of separate chunks (the same writes pushed as copies) has.
    #[test]
    fn adjacent_slices_of_one_buffer_are_merged_and_slice_the_same() {
        let src = Bytes::from((0..=255u8).cycle().take(10_007).collect::<Vec<u8>>());
        let other = Bytes::from(vec![7u8; 3000]);
        let mut rng = crate::rng::Rng::from_seed(5);
        let mut fewer_chunks = 0;
        for _ in 0..50 {
            let mut merged = SendBuffer::new();
            let mut plain = SendBuffer::new();
            let mut pos = rng.below(src.len() as u64) as usize;
            for _ in 0..40 {
                // Mostly the next range of `src` (wrapping at its end), some
                // other buffers, some empty writes.
                let (buf, range) = match rng.below(8) {
                    0 => (&other, 100..100 + rng.below(500) as usize),
                    1 => (&src, pos..pos),
                    _ => {
                        if pos == src.len() {
                            pos = 0;
                        }
                        let n = (1 + rng.below(3000) as usize).min(src.len() - pos);
                        pos += n;
                        (&src, pos - n..pos)
                    }
                };
                merged.push_slice(buf, range.clone());
                plain.push(Bytes::copy_from_slice(&buf[range]));
                assert_eq!(merged.len(), plain.len());
                fewer_chunks += (merged.chunks.len() < plain.chunks.len()) as usize;
                if rng.chance(0.3) {
                    let to = merged.start() + rng.below(merged.len() + 1);
                    merged.release_to(to);
                    plain.release_to(to);
                }
                for _ in 0..5 {
                    if merged.is_empty() {
                        break;
                    }
                    let off = merged.start() + rng.below(merged.len());
                    let len = 1 + rng.below(merged.end() - off) as usize;
                    assert_eq!(merged.slice(off, len), plain.slice(off, len));
                }
            }
        }
        assert!(fewer_chunks > 500, "{fewer_chunks} writes merged");
        // Two adjacent writes of `src`: one chunk, sliced without a copy.
        let mut sb = SendBuffer::new();
        sb.push_slice(&src, 10..20);
        sb.push_slice(&src, 20..4000);
        assert_eq!(sb.chunks.len(), 1);
        // Stream offset 15 is src[25].
        let s = sb.slice(15, 1500);
        assert_eq!(s.as_ptr(), src[25..].as_ptr());
        assert_eq!(&s[..], &src[25..1525]);
        // A gap, or another buffer, starts a new chunk.
        sb.push_slice(&src, 4001..4002);
        sb.push_slice(&other, 0..10);
        assert_eq!(sb.chunks.len(), 3);
    }

    #[test]
    fn reassembles_out_of_order_and_reports_sack() {
        let mut r = Reassembly::new();
        let o = r.insert(4, b(b"4567"), 100);
        assert!(o.out_of_order);
        let o = r.insert(10, b(b"ab"), 100);
        assert!(o.out_of_order);
        // Most recent block first.
        assert_eq!(r.sack_blocks(4).collect::<Vec<_>>(), vec![(10, 12), (4, 8)]);
        let o = r.insert(8, b(b"89"), 100);
        assert!(o.out_of_order);
        assert_eq!(r.sack_blocks(4).collect::<Vec<_>>(), vec![(4, 12)]);
        let o = r.insert(0, b(b"0123"), 100);
        assert_eq!(o.advanced, 12);
        assert!(o.filled_hole);
        assert_eq!(r.sack_blocks(4).count(), 0);
        let mut all = Vec::new();
        while let Some(c) = r.read(5) {
            all.extend_from_slice(&c);
        }
        assert_eq!(&all, b"0123456789ab");
        // Duplicates and overlaps.
        assert!(r.insert(3, b(b"3"), 100).duplicate);
        let o = r.insert(10, b(b"abcd"), 100);
        assert_eq!(o.advanced, 2);
        assert_eq!(r.next(), 14);
    }

    #[test]
    fn overlapping_ooo_segments_are_merged_exactly() {
        let mut r = Reassembly::new();
        r.insert(5, b(b"56"), 100);
        r.insert(9, b(b"9"), 100);
        r.insert(3, b(b"3456789A"), 100); // overlaps both
        assert_eq!(r.ooo_len(), 8);
        r.insert(0, b(b"012"), 100);
        let mut all = Vec::new();
        while let Some(c) = r.read(100) {
            all.extend_from_slice(&c);
        }
        assert_eq!(&all, b"0123456789A");
    }

    #[test]
    fn window_limit_truncates() {
        let mut r = Reassembly::new();
        let o = r.insert(0, b(b"0123456789"), 4);
        assert_eq!(o.advanced, 4);
        assert!(r.insert(6, b(b"67"), 4).duplicate || r.ooo_len() == 0);
    }
}
