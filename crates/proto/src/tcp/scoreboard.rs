//! The sender's record of outstanding segments: SACK scoreboard and the
//! RFC 6675 quantities built on it (`pipe`, `IsLost`, the first segment to
//! retransmit).
//!
//! Offsets are sender sequence offsets (0 = SYN). Segments keep the
//! boundaries they were first sent with; retransmissions reuse them, so SACK
//! blocks, which the receiver builds from whole segments, always cover whole
//! entries.

use crate::ring;
use crate::time::Time;
use std::collections::VecDeque;

/// One transmitted segment still outstanding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentSeg {
    pub start: u64,
    pub end: u64,
    /// When it was last (re)transmitted.
    pub sent_at: Time,
    /// Covered by a SACK block.
    pub sacked: bool,
    /// Deemed lost (RFC 6675 IsLost, a NewReno retransmission, or RTO).
    pub lost: bool,
    /// Retransmitted since it was last deemed lost; counts in `pipe` again.
    pub retx: bool,
    /// Ever retransmitted (Karn's algorithm: no RTT sample from it).
    pub ever_retx: bool,
    /// SND.NXT when it was last retransmitted: if data at or above this
    /// offset is SACKed, the retransmission itself was lost.
    pub retx_mark: u64,
}

/// The connection's delivery state when a segment was (re)transmitted
/// (draft-cheng-iccrg-delivery-rate-estimation §3.2: `P.delivered`,
/// `P.delivered_time`, `P.first_sent_time`, `P.is_app_limited`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxState {
    pub delivered: u64,
    pub delivered_time: Time,
    pub first_sent: Time,
    pub app_limited: bool,
}

impl SentSeg {
    fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// Entries a fully acknowledged scoreboard keeps room for
/// ([`crate::ring::release_if_drained`]).
const KEEP_IDLE: usize = 16;

#[derive(Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<SentSeg>,
    /// Delivery-rate state of each entry of `segs` at its last transmission,
    /// index for index; empty unless rate tracking is on. Kept apart so that
    /// transports without delivery-rate sampling do not carry it through the
    /// scoreboard's scans.
    txs: VecDeque<TxState>,
    sacked_bytes: u64,
    /// Bytes lost and not SACKed.
    lost_bytes: u64,
    /// Bytes retransmitted, not SACKed, still lost-marked.
    retx_bytes: u64,
    /// Index below which no segment waits for retransmission (search hint).
    scan_from: usize,
    /// Highest SACKed offset (end of a SACKed segment).
    high_sacked: u64,
    /// Among segments delivered since the last [`Scoreboard::take_rate_sample`],
    /// the most recently sent one: its send time and delivery state.
    rate_seg: Option<(Time, TxState)>,
    /// Whether to keep `rate_seg` (only for delivery-rate sampling).
    track_rate: bool,
}

/// Result of a cumulative acknowledgement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CumAck {
    /// Bytes newly acknowledged that had not been SACKed before.
    pub newly_acked: u64,
    /// Send time of the newest segment newly acknowledged, if it was never
    /// retransmitted (Karn's algorithm), for RTT sampling without timestamps.
    pub karn_sent_at: Option<Time>,
}

impl Scoreboard {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.segs.len()
    }
    pub fn first(&self) -> Option<&SentSeg> {
        self.segs.front()
    }
    pub fn get(&self, i: usize) -> Option<&SentSeg> {
        self.segs.get(i)
    }
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }
    /// Some segment deemed lost waits for its retransmission.
    pub fn awaits_retransmission(&self) -> bool {
        self.lost_bytes > self.retx_bytes
    }

    /// Records a new transmission of `[start, end)`.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64, now: Time) {
        debug_assert!(self.segs.back().is_none_or(|s| s.end <= start));
        self.segs.push_back(SentSeg {
            start,
            end,
            sent_at: now,
            sacked: false,
            lost: false,
            retx: false,
            ever_retx: false,
            retx_mark: 0,
        });
        if self.track_rate {
            self.txs.push_back(TxState::default());
        }
    }

    /// Keeps the delivery state of delivered segments for
    /// [`Scoreboard::take_rate_sample`] (off by default: no cost).
    pub fn with_rate_tracking(mut self, on: bool) -> Self {
        self.track_rate = on;
        self
    }

    /// Records the delivery state of the segment transmitted last (pushed
    /// or retransmitted as index `i`).
    /// Nothing without rate tracking.
    pub fn stamp(&mut self, i: Option<usize>, tx: TxState) {
        let t = match i {
            Some(i) => self.txs.get_mut(i),
            None => self.txs.back_mut(),
        };
        if let Some(t) = t {
            *t = tx;
        }
    }

    /// The send time and delivery state of the most recently sent segment
    /// delivered since the last call (draft-cheng §3.3: the packet whose
    /// `P.delivered` is largest).
    pub fn take_rate_sample(&mut self) -> Option<(Time, TxState)> {
        self.rate_seg.take()
    }

    fn delivered_seg(rate_seg: &mut Option<(Time, TxState)>, sent_at: Time, s: TxState) {
        if rate_seg.is_none_or(|(t, tx)| (s.delivered, sent_at) >= (tx.delivered, t)) {
            *rate_seg = Some((sent_at, s));
        }
    }

    /// RFC 6675 "pipe": outstanding bytes minus SACKed and lost, plus lost
    /// bytes retransmitted. `outstanding` is SND.MAX − SND.UNA.
    pub fn pipe(&self, outstanding: u64) -> u64 {
        (outstanding + self.retx_bytes).saturating_sub(self.sacked_bytes + self.lost_bytes)
    }

    /// Removes segments below `una`.
    pub fn cum_ack(&mut self, una: u64) -> CumAck {
        let mut r = CumAck::default();
        while let Some(s) = self.segs.front_mut() {
            if s.end <= una {
                let s = self.segs.pop_front().expect("front exists");
                let tx = self.txs.pop_front();
                self.scan_from = self.scan_from.saturating_sub(1);
                if s.sacked {
                    self.sacked_bytes -= s.len();
                } else {
                    r.newly_acked += s.len();
                    if s.lost {
                        self.lost_bytes -= s.len();
                    }
                    if s.retx {
                        self.retx_bytes -= s.len();
                    }
                }
                if !s.sacked {
                    if let Some(tx) = tx {
                        Self::delivered_seg(&mut self.rate_seg, s.sent_at, tx);
                    }
                    // Karn: sample only from the newest segment this ACK newly
                    // acknowledges, and only if it was never retransmitted.
                    r.karn_sent_at = (!s.ever_retx).then_some(s.sent_at);
                }
            } else {
                if s.start < una {
                    // Partial acknowledgement of a segment (e.g. a 1-byte window probe merged): trim.
                    let cut = una - s.start;
                    if s.sacked {
                        self.sacked_bytes -= cut;
                    } else {
                        r.newly_acked += cut;
                        if s.lost {
                            self.lost_bytes -= cut;
                        }
                        if s.retx {
                            self.retx_bytes -= cut;
                        }
                    }
                    s.start = una;
                }
                break;
            }
        }
        // Everything acknowledged: give back a burst's room.
        ring::release_if_drained(&mut self.segs, KEEP_IDLE);
        ring::release_if_drained(&mut self.txs, KEEP_IDLE);
        r
    }

    /// Marks segments fully covered by `[l, r)` as SACKed; returns newly SACKed bytes.
    pub fn sack(&mut self, l: u64, r: u64) -> u64 {
        let mut newly = 0;
        let i0 = self.segs.partition_point(|s| s.end <= l);
        for (i, s) in self.segs.range_mut(i0..).enumerate() {
            if s.start >= r {
                break;
            }
            if s.sacked || s.start < l || s.end > r {
                continue;
            }
            s.sacked = true;
            if let Some(&tx) = self.txs.get(i0 + i) {
                Self::delivered_seg(&mut self.rate_seg, s.sent_at, tx);
            }
            self.high_sacked = self.high_sacked.max(s.end);
            let len = s.end - s.start;
            newly += len;
            self.sacked_bytes += len;
            if s.lost {
                self.lost_bytes -= len;
            }
            if s.retx {
                self.retx_bytes -= len;
            }
        }
        newly
    }

    /// RFC 6675 §4 IsLost, applied to every segment: a non-SACKed segment is
    /// lost once `dupthresh` SACKed segments, or more than
    /// `(dupthresh − 1)·smss` SACKed bytes, lie above it. Returns bytes newly
    /// marked lost.
    #[inline]
    pub fn mark_lost_by_sack(&mut self, dupthresh: u64, smss: u64) -> u64 {
        if self.sacked_bytes == 0 {
            return 0;
        }
        let mut above_segs = 0u64;
        let mut above_bytes = 0u64;
        let mut newly = 0;
        let mut lowest_new = None;
        for (i, s) in self.segs.iter_mut().enumerate().rev() {
            if s.sacked {
                above_segs += 1;
                above_bytes += s.end - s.start;
                continue;
            }
            if s.lost {
                continue;
            }
            if above_segs >= dupthresh || above_bytes > (dupthresh - 1) * smss {
                s.lost = true;
                let len = s.end - s.start;
                self.lost_bytes += len;
                newly += len;
                lowest_new = Some(i);
            }
        }
        if let Some(i) = lowest_new {
            self.scan_from = self.scan_from.min(i);
        }
        newly
    }

    /// Detects lost retransmissions: a retransmission is lost once data sent
    /// after it has been SACKed (SACKed bytes above SND.NXT at the time of
    /// the retransmission), assuming no reordering. This is Linux's
    /// `tcp_mark_lost_retrans()` (2.6.x to 4.x, before RACK); RFC 6675 alone
    /// would wait for the retransmission timer. The segment becomes eligible
    /// for retransmission again. Returns how many were found.
    #[inline]
    pub fn mark_lost_retransmissions(&mut self) -> u64 {
        if self.retx_bytes == 0 {
            return 0;
        }
        let mut n = 0;
        let mut lowest = None;
        for (i, s) in self.segs.iter_mut().enumerate() {
            if s.retx && !s.sacked && s.retx_mark < self.high_sacked {
                s.retx = false;
                self.retx_bytes -= s.end - s.start;
                n += 1;
                lowest.get_or_insert(i);
            }
        }
        if let Some(i) = lowest {
            self.scan_from = self.scan_from.min(i);
        }
        n
    }

    /// Whether the segment starting at the lowest outstanding offset is lost
    /// by the SACK rule (RFC 6675 §5 entry condition IsLost(HighACK + 1)).
    pub fn first_is_lost(&self) -> bool {
        self.segs.front().is_some_and(|s| s.lost && !s.sacked)
    }

    /// Marks the first outstanding segment lost (NewReno fast retransmit and
    /// partial ACKs, RFC 6582 §3.2). Returns whether it changed.
    pub fn mark_first_lost(&mut self) -> bool {
        match self.segs.front_mut() {
            Some(s) if !s.lost && !s.sacked => {
                s.lost = true;
                s.retx = false;
                self.lost_bytes += s.end - s.start;
                self.scan_from = 0;
                true
            }
            _ => false,
        }
    }

    /// After a retransmission timeout every non-SACKed segment is lost and
    /// earlier retransmissions no longer count (RFC 6675 §5.1, RFC 5681 §3.1).
    pub fn mark_all_lost(&mut self) {
        self.lost_bytes = 0;
        self.retx_bytes = 0;
        for s in self.segs.iter_mut() {
            s.retx = false;
            if !s.sacked {
                s.lost = true;
                self.lost_bytes += s.end - s.start;
            }
        }
        self.scan_from = 0;
    }

    /// Index of the first segment that is lost, not SACKed and not yet
    /// retransmitted (RFC 6675 NextSeg rule 1).
    pub fn next_lost(&mut self) -> Option<usize> {
        let mut i = self.scan_from;
        while let Some(s) = self.segs.get(i) {
            if s.lost && !s.sacked && !s.retx {
                self.scan_from = i;
                return Some(i);
            }
            i += 1;
        }
        self.scan_from = i;
        None
    }

    /// Records the retransmission of segment `i`.
    #[inline]
    pub fn retransmitted(&mut self, i: usize, now: Time, snd_nxt: u64) -> (u64, u64) {
        let s = &mut self.segs[i];
        s.retx_mark = snd_nxt;
        debug_assert!(s.lost && !s.sacked);
        if !s.retx {
            s.retx = true;
            self.retx_bytes += s.end - s.start;
        }
        s.ever_retx = true;
        s.sent_at = now;
        (s.start, s.end)
    }

    /// Index of the first segment that ends above `off` (the segments below
    /// it lie wholly at or under `off`).
    pub fn first_ending_above(&self, off: u64) -> usize {
        self.segs.partition_point(|s| s.end <= off)
    }

    /// Marks segment `i` lost for RACK (RFC 8985 §6.2 step 5): a segment not
    /// yet deemed lost starts counting as lost; a retransmission deemed lost
    /// stops counting in `pipe` and waits for another retransmission.
    /// Returns the bytes newly waiting for retransmission (0 if it already
    /// was, or is SACKed).
    pub fn mark_lost_at(&mut self, i: usize) -> u64 {
        let Some(s) = self.segs.get_mut(i) else {
            return 0;
        };
        if s.sacked || (s.lost && !s.retx) {
            return 0;
        }
        let len = s.end - s.start;
        if s.retx {
            s.retx = false;
            self.retx_bytes -= len;
        } else {
            s.lost = true;
            self.lost_bytes += len;
        }
        self.scan_from = self.scan_from.min(i);
        len
    }

    /// Records a loss probe that resends segment `i` (RFC 8985 §7.3) without
    /// deeming it lost: it stays in `pipe` once, with a new send time.
    pub fn probe_retransmitted(&mut self, i: usize, now: Time) -> (u64, u64) {
        let s = &mut self.segs[i];
        s.ever_retx = true;
        s.sent_at = now;
        (s.start, s.end)
    }

    /// Forgets everything (connection reset).
    pub fn clear(&mut self) {
        *self = Self::default().with_rate_tracking(self.track_rate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::new();
        for i in 0..n {
            b.push(1 + i * 100, 1 + (i + 1) * 100, Time::ZERO);
        }
        b
    }

    #[test]
    fn an_acknowledged_burst_gives_its_room_back() {
        let mut b = board(1000);
        b.cum_ack(1 + 500 * 100);
        assert!(b.segs.capacity() >= 1000, "half a burst still in flight");
        assert_eq!(b.cum_ack(1 + 1000 * 100).newly_acked, 500 * 100);
        assert!(b.segs.capacity() <= 2 * KEEP_IDLE, "{}", b.segs.capacity());
        // And it still works.
        b.push(100_001, 100_101, Time::ZERO);
        assert_eq!(b.cum_ack(100_101).newly_acked, 100);
    }

    #[test]
    fn sack_marks_losses_after_three_segments() {
        let mut b = board(6);
        let out = 600;
        assert_eq!(b.pipe(out), 600);
        assert_eq!(b.sack(101, 201), 100);
        assert_eq!(b.sack(201, 301), 100);
        assert_eq!(
            b.mark_lost_by_sack(3, 100),
            0,
            "two SACKed segments are not enough"
        );
        assert_eq!(b.sack(301, 401), 100);
        assert_eq!(b.mark_lost_by_sack(3, 100), 100);
        assert!(b.first_is_lost());
        // pipe = 600 - 300 sacked - 100 lost
        assert_eq!(b.pipe(out), 200);
        assert_eq!(b.next_lost(), Some(0));
        b.retransmitted(0, Time::ZERO, 601);
        assert_eq!(b.pipe(out), 300);
        assert_eq!(b.next_lost(), None);
        let r = b.cum_ack(401);
        assert_eq!(r.newly_acked, 100);
        assert_eq!(b.pipe(200), 200);
        assert_eq!(b.sacked_bytes(), 0);
    }

    #[test]
    fn lost_retransmission_is_detected_by_later_sack() {
        let mut b = board(6);
        for l in [101, 201, 301] {
            b.sack(l, l + 100);
        }
        b.mark_lost_by_sack(3, 100);
        let i = b.next_lost().unwrap();
        // Retransmitted when SND.NXT was 601; new data [601, 701) goes out after it.
        b.retransmitted(i, Time::ZERO, 601);
        b.push(601, 701, Time::ZERO);
        assert_eq!(
            b.mark_lost_retransmissions(),
            0,
            "nothing sent later was SACKed yet"
        );
        b.sack(401, 501);
        assert_eq!(
            b.mark_lost_retransmissions(),
            0,
            "401..501 was sent before the retransmission"
        );
        b.sack(601, 701);
        assert_eq!(b.mark_lost_retransmissions(), 1);
        assert_eq!(
            b.next_lost(),
            Some(0),
            "eligible for another retransmission"
        );
    }

    #[test]
    fn rto_marks_everything_lost() {
        let mut b = board(4);
        b.sack(201, 301);
        b.mark_all_lost();
        assert_eq!(b.pipe(400), 0);
        let mut sent = vec![];
        while let Some(i) = b.next_lost() {
            sent.push(b.retransmitted(i, Time::ZERO, 401));
        }
        assert_eq!(sent, vec![(1, 101), (101, 201), (301, 401)]);
        assert_eq!(b.pipe(400), 300);
        let r = b.cum_ack(401);
        assert_eq!(r.newly_acked, 300);
        assert_eq!(
            r.karn_sent_at, None,
            "retransmitted segments give no Karn sample"
        );
    }
}
