//! RACK-TLP loss detection (RFC 8985), an option of the TCP model
//! ([`TcpConfig::rack`](super::TcpConfig::rack)) for connections that
//! negotiated SACK (RFC 8985 §4: RACK-TLP needs SACK; without it the
//! connection keeps NewReno's duplicate-ACK counting).
//!
//! RACK (§6) deems a segment lost once a segment sent after it has been
//! delivered and more than RACK.rtt + RACK.reo_wnd has passed since it was
//! sent; the reordering timer (§6.3) waits for the ones not yet old enough.
//! With RACK on it replaces the duplicate-ACK threshold and RFC 6675's
//! IsLost (and the model's lost-retransmission rule) as the loss detector
//! of the connection, as Linux does when `tcp_recovery` has RACK enabled;
//! a loss RACK finds starts fast recovery. TLP (§7) sends one probe when no
//! ACK has come for a probe timeout (PTO), so that a tail loss is repaired
//! by RACK or fast recovery rather than by the retransmission timer.
//!
//! Differences from RFC 8985, all documented in `crates/proto/README.md`:
//! - the model's receiver sends no DSACK (RFC 2883), so the reordering
//!   window never grows (§6.2 step 4's reo_wnd_mult stays 1) and a probe is
//!   never recognised as unnecessary by a DSACK (§7.4.1 case 1); a probe's
//!   duplicate ACK without SACK (case 2) is;
//! - RACK.min_RTT is the connection's lowest RTT sample ever, not a
//!   windowed minimum (§6.2 step 1 says SHOULD);
//! - TLP.max_ack_delay is 200 ms, Linux's value (`TCP_RTO_MIN` in
//!   `tcp_schedule_loss_probe`);
//! - the probe of new data ignores the congestion window, as Linux's does
//!   (`tcp_send_loss_probe`); RFC 8985 §7.3 asks only that the receive
//!   window allow it;
//! - §6.2 step 2's TSecr test of a retransmitted segment applies only to
//!   ACKs that advance the left edge (on others a receiver echoes an older
//!   segment, RFC 7323 §4.3); the min_RTT test always, as Linux's
//!   `tcp_rack_advance`. Standing in for DSACK, such an ACK that echoes the
//!   original transmission shows reordering (§6.2 step 3);
//! - the model's receiver leaves the FIN out of its SACK blocks; with RACK
//!   a block ending at the last data byte counts the FIN as SACKed when
//!   the FIN rode on that byte's segment;
//! - a loss repaired by a retransmitted probe reduces the window once
//!   (§7.4.2), and a fast recovery that RACK starts in the same window of
//!   data reduces it again, where Linux, still in the reduced-window state
//!   of the probe's response, would not.

use super::{Connection, Ecn, Flags, LossEvent, Segment};
use crate::cc::CongestionControl;
use crate::time::{Dur, Time};

/// TLP.max_ack_delay (RFC 8985 §7.2): what a lone segment's delayed ACK
/// may add to the PTO. Linux's `TCP_RTO_MIN` in `tcp_schedule_loss_probe`.
pub const TLP_MAX_ACK_DELAY: Dur = Dur::from_millis(200);
/// The PTO before any RTT sample (RFC 8985 §7.2: "SHOULD be 1 second").
pub const PTO_WITHOUT_SRTT: Dur = Dur::SECOND;

/// RACK and TLP state of one connection (RFC 8985 §5.2, §5.3).
#[derive(Clone, Debug, Default)]
pub(super) struct Rack {
    /// RACK.xmit_ts and RACK.end_seq: the most recently sent segment
    /// delivered so far (`None` before the first).
    newest: Option<(Time, u64)>,
    /// RACK.rtt: the RTT of that segment.
    rtt: Dur,
    /// RACK.fack: the highest end of a delivered segment.
    fack: u64,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// The reordering timer (§6.3).
    pub(super) reo_deadline: Option<Time>,
    /// The probe timer (§7.2).
    pub(super) pto_deadline: Option<Time>,
    /// The probe timer fired: the next `poll_transmit` sends the probe.
    pub(super) probe_due: bool,
    /// TLP.end_seq (SND.NXT when the probe left) and TLP.is_retrans.
    tlp_end: Option<u64>,
    tlp_is_retrans: bool,
}

/// RACK_sent_after (RFC 8985 §6.2 step 2): whether the segment sent at `t1`
/// and ending at `e1` was sent after the one at `t2` ending at `e2`, the
/// end sequence breaking a tie of times.
fn sent_after(t1: Time, e1: u64, t2: Time, e2: u64) -> bool {
    t1 > t2 || (t1 == t2 && e1 > e2)
}

impl Rack {
    /// The RACK.reo_wnd of RFC 8985 §6.2 step 4 (with reo_wnd_mult = 1, as
    /// no DSACK ever arrives): a quarter of the minimum RTT, at most SRTT;
    /// zero while no reordering has been seen and the sender is in fast or
    /// RTO recovery or `segs_sacked` ≥ DupThresh.
    fn reo_wnd(
        &self,
        recovering: bool,
        segs_sacked: u64,
        dupthresh: u64,
        min_rtt: Dur,
        srtt: Dur,
    ) -> Dur {
        if !self.reordering_seen && (recovering || segs_sacked >= dupthresh) {
            return Dur::ZERO;
        }
        (min_rtt / 4).min(srtt)
    }
}

// The entry points called from the connection's hot paths are `#[cold]` and
// never inlined: without `rack` they are never called, and the per-ACK and
// per-segment code stays as it was (`hopwise bench` runs without RACK).
impl Connection {
    /// RFC 8985 §6.2 steps 2 and 3, on an arriving ACK before the scoreboard
    /// takes it: among the segments it newly delivers (cumulatively
    /// acknowledged up to `ack_off`, or SACKed), the most recently sent one
    /// becomes RACK.segment, and one delivered below RACK.fack without ever
    /// having been retransmitted shows reordering.
    #[cold]
    #[inline(never)]
    pub(super) fn rack_on_delivery(&mut self, now: Time, seg: &Segment, ack_off: u64) {
        let tick = self.cfg.ts_tick.as_nanos().max(1);
        // §6.2 step 2: the ACK's TSecr, to tell which transmission of a
        // retransmitted segment it acknowledges.
        let tsecr = if self.ts_ok {
            seg.ts.map(|(_, e)| e)
        } else {
            None
        };
        let min_rtt = self.rtt.min_rtt();
        let fin_edge = self.fin_with_data();
        let rack = &mut self.rack;
        // §6.2 step 3 walks the newly delivered segments in ascending order;
        // the ACK's blocks come most recent first, so compare with RACK.fack
        // as it was before this ACK, which gives the same answer.
        let fack_before = rack.fack;
        let mut visit = |s: &super::scoreboard::SentSeg, cumulative: bool| {
            if s.sacked {
                return;
            }
            // §6.2 step 2: a retransmitted segment is ignored if the ACK
            // echoes an earlier transmission or came sooner than min_RTT
            // after the retransmission (it answers the original). The echo
            // tells only on an ACK that advances the left edge: on one for
            // out-of-order data a receiver echoes the segment that last
            // advanced it (RFC 7323 §4.3), so for SACKed segments only the
            // min_RTT test applies, as in Linux's `tcp_rack_advance`.
            let echoes_original = s.ever_retx
                && cumulative
                && tsecr.is_some_and(|e| {
                    (e.wrapping_sub((s.sent_at.as_nanos() / tick) as u32) as i32) < 0
                });
            let ambiguous = echoes_original || (s.ever_retx && now.since(s.sent_at) < min_rtt);
            if !ambiguous {
                let newer = rack
                    .newest
                    .is_none_or(|(t, e)| sent_after(s.sent_at, s.end, t, e));
                if newer {
                    rack.newest = Some((s.sent_at, s.end));
                    rack.rtt = now.since(s.sent_at);
                }
            }
            // §6.2 step 3. Without DSACK (the model's receiver sends none)
            // a spurious retransmission shows reordering the way Linux's
            // `tcp_try_undo_partial` sees it: the hole was filled by the
            // original, whose timestamp the ACK echoes (RFC 3522's test).
            if s.end < fack_before && (!s.ever_retx || echoes_original) {
                rack.reordering_seen = true;
            }
            rack.fack = rack.fack.max(s.end);
        };
        let board = &self.board;
        let acked = board.first_ending_above(ack_off);
        for i in 0..acked {
            visit(board.get(i).expect("index below len"), true);
        }
        for &(l, r) in seg.sack.as_slice() {
            let lo = super::unwrap32(self.iss, self.snd_una, l);
            let mut hi = super::unwrap32(self.iss, self.snd_una, r);
            if fin_edge == Some(hi) {
                hi += 1; // as in `sack_right_edge`
            }
            if !(lo < hi && lo >= ack_off && hi <= self.snd_nxt) {
                continue;
            }
            let mut i = board.first_ending_above(lo);
            while let Some(s) = board.get(i) {
                if s.start >= hi {
                    break;
                }
                if s.start >= lo && s.end <= hi {
                    visit(s, false);
                }
                i += 1;
            }
        }
    }

    /// The model's receiver builds SACK blocks from data only: a block that
    /// ends at our last data byte covers the segment that carried it, and
    /// when the FIN rode on that segment (segments keep their boundaries)
    /// the FIN with it, so with RACK the FIN's sequence number counts as
    /// SACKed too, as from a Linux receiver. A FIN sent on its own segment
    /// is not covered.
    #[cold]
    #[inline(never)]
    pub(super) fn sack_right_edge(&self, hi: u64) -> u64 {
        if self.fin_with_data() == Some(hi) {
            hi + 1
        } else {
            hi
        }
    }

    /// The FIN's offset, if it was sent on the segment that carries the
    /// last data byte.
    fn fin_with_data(&self) -> Option<u64> {
        if !self.fin_sent() {
            return None;
        }
        let f = self.fin_off();
        let i = self.board.first_ending_above(f - 1);
        self.board
            .get(i)
            .filter(|s| s.start < f && s.end == f + 1)
            .map(|_| f)
    }

    /// After the scoreboard took an ACK: RACK's loss detection (RFC 8985
    /// §6.2 steps 4 and 5, arming the reordering timer) and TLP's (§7.4),
    /// and the probe timer re-armed if the ACK advanced SND.UNA (§7.2).
    /// Returns the bytes newly deemed lost.
    #[cold]
    #[inline(never)]
    pub(super) fn rack_after_ack(&mut self, now: Time, seg: &Segment, advanced: bool) -> u64 {
        let lost = self.rack_detect_loss_and_arm_timer(now);
        self.tlp_process_ack(now, seg, advanced);
        if advanced {
            self.tlp_schedule(now);
        }
        lost
    }

    /// RACK_detect_loss_and_arm_timer (RFC 8985 §6.2 step 5): marks lost
    /// every segment sent before RACK.segment more than RACK.rtt +
    /// RACK.reo_wnd ago, and arms the reordering timer for the latest
    /// moment one of the others would become lost (the RFC takes the
    /// largest remaining time); an armed reordering timer cancels the probe
    /// timer. Returns the bytes newly deemed lost.
    pub(super) fn rack_detect_loss_and_arm_timer(&mut self, now: Time) -> u64 {
        self.rack.reo_deadline = None;
        let Some((xmit_ts, end_seq)) = self.rack.newest else {
            return 0;
        };
        let dupthresh = self.cfg.dupthresh;
        let mut segs_sacked = 0;
        for i in 0..self.board.len() {
            if segs_sacked >= dupthresh {
                break;
            }
            segs_sacked += self.board.get(i).is_some_and(|s| s.sacked) as u64;
        }
        let recovering = self.in_recovery || self.snd_una < self.rto_recover;
        let reo_wnd = self.rack.reo_wnd(
            recovering,
            segs_sacked,
            dupthresh,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        let wait = self.rack.rtt + reo_wnd;
        let mut lost = 0;
        let mut timeout = Dur::ZERO;
        for i in 0..self.board.len() {
            let s = *self.board.get(i).expect("index below len");
            // Delivered, or deemed lost and not yet retransmitted (the
            // RFC's Segment.xmit_ts = INFINITE_TS).
            if s.sacked || (s.lost && !s.retx) {
                continue;
            }
            if !sent_after(xmit_ts, end_seq, s.sent_at, s.end) {
                continue;
            }
            let deadline = s.sent_at + wait;
            if deadline <= now {
                let n = self.board.mark_lost_at(i);
                if n > 0 {
                    lost += n;
                    self.stats.rack_losses += 1;
                }
            } else {
                timeout = timeout.max(deadline.since(now));
            }
        }
        if timeout > Dur::ZERO {
            self.rack.reo_deadline = Some(now + timeout);
            self.rack.pto_deadline = None;
        }
        lost
    }

    /// RFC 8985 §6.3: the reordering timer expired. Detect losses again
    /// (re-arming the timer for segments still too young) and start fast
    /// recovery if one is found outside recovery.
    #[cold]
    #[inline(never)]
    pub(super) fn rack_on_reo_timeout(&mut self, now: Time) {
        let pipe_before = self.pipe();
        let lost = self.rack_detect_loss_and_arm_timer(now);
        if lost > 0 && !self.in_recovery && self.snd_una >= self.rto_recover {
            self.enter_recovery(now, pipe_before);
        }
    }

    /// RACK_mark_losses_on_RTO (RFC 8985 §6.3): on a retransmission
    /// timeout, the first outstanding segment and every segment sent more
    /// than RACK.rtt + RACK.reo_wnd ago are lost; the others stay in
    /// flight. The reordering and probe timers stop (§7.1: TLP state is
    /// reset on RTO recovery).
    #[cold]
    #[inline(never)]
    pub(super) fn rack_mark_losses_on_rto(&mut self, now: Time) {
        let reo_wnd = self.rack.reo_wnd(
            true,
            0,
            self.cfg.dupthresh,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        let wait = self.rack.rtt + reo_wnd;
        for i in 0..self.board.len() {
            let s = *self.board.get(i).expect("index below len");
            if s.start <= self.snd_una || s.sent_at + wait <= now {
                self.board.mark_lost_at(i);
            }
        }
        self.rack_reset_timers();
    }

    /// Stops RACK's timers and forgets an outstanding probe.
    #[cold]
    #[inline(never)]
    pub(super) fn rack_reset_timers(&mut self) {
        self.rack.reo_deadline = None;
        self.tlp_reset();
    }

    /// RFC 8985 §7.1: TLP.end_seq and TLP.is_retrans are reset on entering
    /// fast or RTO recovery; the probe timer stops.
    #[cold]
    #[inline(never)]
    pub(super) fn tlp_reset(&mut self) {
        self.rack.pto_deadline = None;
        self.rack.probe_due = false;
        self.rack.tlp_end = None;
        self.rack.tlp_is_retrans = false;
    }

    /// Runs RACK's expired timers (reordering first, then the probe).
    #[cold]
    #[inline(never)]
    pub(super) fn rack_on_timers(&mut self, now: Time) {
        if self.rack.reo_deadline.is_some_and(|d| d <= now) {
            self.rack.reo_deadline = None;
            self.rack_on_reo_timeout(now);
        }
        if self.rack.pto_deadline.is_some_and(|d| d <= now) {
            self.tlp_on_timeout(now);
        }
    }

    /// RFC 8985 §7.2: (re)arms the probe timer after new data was sent or an
    /// ACK advanced SND.UNA, unless the sender is in fast or RTO recovery,
    /// has SACKed segments outstanding, has a probe outstanding (at most
    /// one per episode), or waits on the reordering timer. PTO = 2·SRTT,
    /// plus TLP.max_ack_delay when one segment is in flight, 1 s before any
    /// RTT sample; never later than the retransmission timer.
    #[cold]
    #[inline(never)]
    pub(super) fn tlp_schedule(&mut self, now: Time) {
        self.rack.pto_deadline = None;
        if self.in_recovery
            || self.snd_una < self.rto_recover
            || self.outstanding() == 0
            || self.board.sacked_bytes() > 0
            || self.board.lost_bytes() > 0
            || self.rack.tlp_end.is_some()
            || self.rack.reo_deadline.is_some()
            || !self.state.is_synchronized()
        {
            return;
        }
        let pto = if self.rtt.has_sample() {
            let mut pto = self.rtt.srtt() * 2;
            if self.board.len() == 1 {
                pto += TLP_MAX_ACK_DELAY;
            }
            pto
        } else {
            PTO_WITHOUT_SRTT
        };
        let mut at = now + pto;
        if let Some(rto) = self.rto_deadline {
            at = at.min(rto);
        }
        self.rack.pto_deadline = Some(at);
    }

    /// RFC 8985 §7.3: the probe timer expired. The probe goes out on the
    /// next `poll_transmit`, and the retransmission timer restarts now, so
    /// that a probe timer capped at its deadline replaces it.
    pub(super) fn tlp_on_timeout(&mut self, now: Time) {
        self.rack.pto_deadline = None;
        self.rack.probe_due = self.outstanding() > 0;
        if self.rack.probe_due {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// TLP_send_probe (RFC 8985 §7.3): one new segment if there is unsent
    /// data the peer's window admits, else a retransmission of the highest
    /// segment sent; then TLP.end_seq = SND.NXT and the retransmission timer
    /// restarts (not the probe timer: one probe per episode).
    #[cold]
    #[inline(never)]
    pub(super) fn tlp_send_probe(&mut self, now: Time) -> Option<Segment> {
        self.rack.probe_due = false;
        if self.outstanding() == 0 || self.in_recovery || self.board.lost_bytes() > 0 {
            return None;
        }
        let fin_off = self.fin_off();
        let unsent = fin_off.saturating_sub(self.snd_nxt);
        let room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let len = unsent.min(self.smss).min(room);
        let seg = if len > 0 {
            let start = self.snd_nxt;
            let mut end = start + len;
            if self.fin_queued && end == fin_off {
                end += 1;
            }
            self.board.push(start, end, now);
            if self.pacing || self.rate_sampling {
                self.on_transmit(now, len, None);
            }
            self.snd_nxt = end;
            let mut seg = self.data_segment(now, start, end);
            if self.ecn_ok {
                // RFC 3168 §6.1.5: ECT on new data.
                seg.ecn = Ecn::Ect0;
                if std::mem::take(&mut self.cwr_pending) {
                    seg.flags.insert(Flags::CWR);
                }
            }
            self.rack.tlp_is_retrans = false;
            seg
        } else {
            let i = self.board.len().checked_sub(1)?;
            let last = *self.board.get(i)?;
            if last.sacked || last.lost {
                return None;
            }
            let (start, end) = self.board.probe_retransmitted(i, now);
            if self.pacing || self.rate_sampling {
                self.on_transmit(now, end - start, Some(i));
            }
            self.stats.retransmits += 1;
            let seg = self.data_segment(now, start, end);
            self.stats.bytes_retransmitted += seg.payload.len() as u64;
            self.rack.tlp_is_retrans = true;
            seg
        };
        self.rack.tlp_end = Some(self.snd_nxt);
        self.stats.tlp_probes += 1;
        self.rto_deadline = Some(now + self.rtt.rto());
        Some(seg)
    }

    /// TLP_process_ack (RFC 8985 §7.4.2), without DSACK (the model's
    /// receiver sends none): once the ACK reaches TLP.end_seq, a probe of
    /// new data ends the episode; a retransmitted probe that the ACK passes
    /// repaired a loss, to which the controller answers as to any loss
    /// (once, without fast recovery, as Linux's CWR state); a duplicate
    /// ACK without SACK blocks shows the original and the probe both
    /// arrived.
    fn tlp_process_ack(&mut self, now: Time, seg: &Segment, advanced: bool) {
        let Some(end) = self.rack.tlp_end else {
            return;
        };
        let ack_off = self.snd_una;
        if ack_off < end {
            return;
        }
        if !self.rack.tlp_is_retrans {
            self.rack.tlp_end = None;
        } else if ack_off > end {
            self.rack.tlp_end = None;
            let in_flight = self.pipe();
            self.cc.on_loss(&LossEvent { now, in_flight });
            self.cc.on_recovery_exit(now);
            // One reduction per window for losses and ECN-Echo together.
            self.ecn_recover = self.snd_nxt;
            self.cwr_pending = self.ecn_ok;
        } else if !advanced && seg.sack.as_slice().is_empty() && seg.payload.is_empty() {
            self.rack.tlp_end = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcConfig;
    use crate::tcp::{State, TcpConfig};
    use bytes::Bytes;

    fn ms(n: u64) -> Time {
        Time::ZERO + Dur::from_millis(n)
    }

    /// A client and a server with RACK on, connected with a 20 ms RTT (the
    /// SYN-ACK's sample).
    fn pair() -> (Connection, Connection) {
        let cfg = TcpConfig {
            rack: true,
            ..TcpConfig::default()
        };
        let cc = CcConfig::NewReno;
        let mut a = Connection::connect(cfg.clone(), &cc, 1, 2, 100);
        let syn = a.poll_transmit(ms(0)).unwrap();
        let mut b = Connection::accept(cfg, &cc, &syn, 900, ms(10)).unwrap();
        let synack = b.poll_transmit(ms(10)).unwrap();
        a.handle_segment(ms(20), synack);
        assert!(a.rack_on, "RACK with SACK negotiated");
        let ack = a.poll_transmit(ms(20)).unwrap();
        b.handle_segment(ms(30), ack);
        (a, b)
    }

    /// [`pair`], and the client's first flight of `n` full segments sent
    /// at 20 ms.
    fn flight(n: usize) -> (Connection, Connection, Vec<Segment>) {
        let (mut a, b) = pair();
        a.send(Bytes::from(vec![7u8; n * a.smss() as usize]));
        let mut segs = vec![];
        while let Some(s) = a.poll_transmit(ms(20)) {
            segs.push(s);
        }
        assert_eq!(segs.len(), n);
        (a, b, segs)
    }

    /// The ACKs `b` sends after receiving `segs` at `at`.
    fn deliver(b: &mut Connection, segs: &[Segment], at: Time) -> Vec<Segment> {
        let mut acks = vec![];
        for s in segs {
            b.handle_segment(at, s.clone());
            while let Some(a) = b.poll_transmit(at) {
                acks.push(a);
            }
        }
        acks
    }

    #[test]
    fn a_young_hole_arms_the_reordering_timer_then_is_lost() {
        let (mut a, mut b, segs) = flight(10);
        // Segments 1 and 2 arrive, 0 does not: two SACKed segments, fewer
        // than DupThresh, so the reordering window is min_RTT / 4 = 5 ms.
        let acks = deliver(&mut b, &segs[1..3], ms(30));
        assert_eq!(acks.len(), 2, "out-of-order data is acknowledged at once");
        for ack in acks {
            a.handle_segment(ms(40), ack);
        }
        assert!(!a.in_recovery(), "not yet: segment 0 may be reordered");
        assert_eq!(a.poll_transmit(ms(40)), None);
        // Segment 0 was sent with segment 2 at 20 ms: lost once 20 ms
        // (RACK.rtt) + 5 ms have passed, at 45 ms.
        assert_eq!(a.rack.reo_deadline, Some(ms(45)));
        assert_eq!(a.poll_timeout(), Some(ms(45)), "the earliest deadline");
        assert_eq!(
            a.rack.pto_deadline, None,
            "the reordering timer cancels TLP"
        );
        a.handle_timeout(ms(45));
        assert!(a.in_recovery(), "RACK's loss starts fast recovery");
        assert_eq!(
            a.stats().rack_losses,
            1,
            "only segment 0: 3..9 were sent after 2"
        );
        let r = a.poll_transmit(ms(45)).expect("retransmission");
        assert_eq!(r.seq, segs[0].seq);
        assert_eq!(a.stats().retransmits, 1);
    }

    #[test]
    fn dupthresh_sacks_without_reordering_mark_the_hole_at_once() {
        let (mut a, mut b, segs) = flight(10);
        for ack in deliver(&mut b, &segs[1..5], ms(30)) {
            a.handle_segment(ms(40), ack);
        }
        // Four SACKed segments and no reordering seen: reo_wnd = 0 and
        // segment 0, sent with them 20 ms (RACK.rtt) ago, is lost now.
        assert!(a.in_recovery());
        assert_eq!(a.rack.reo_deadline, None);
        assert_eq!(a.poll_transmit(ms(40)).unwrap().seq, segs[0].seq);
    }

    #[test]
    fn reordering_seen_keeps_the_window_open() {
        let (mut a, mut b, segs) = flight(10);
        // Segment 1 is SACKed first, then segment 0 arrives: 0 was never
        // retransmitted and lies below RACK.fack, so reordering is seen.
        for ack in deliver(&mut b, &segs[1..2], ms(30)) {
            a.handle_segment(ms(40), ack);
        }
        for ack in deliver(&mut b, &segs[0..1], ms(31)) {
            a.handle_segment(ms(41), ack);
        }
        assert!(a.rack.reordering_seen);
        // Now 3 is missing and 4..8 are SACKed (≥ DupThresh): the window
        // stays min_RTT / 4 = 5 ms instead of 0.
        for ack in deliver(&mut b, &segs[4..9], ms(32)) {
            a.handle_segment(ms(42), ack);
        }
        assert!(!a.in_recovery());
        // Segments 2 and 3 went at 20 ms with 8: RACK.rtt 22 ms + 5 ms.
        assert_eq!(a.rack.reo_deadline, Some(ms(47)));
    }

    #[test]
    fn the_probe_timer_fires_before_the_rto_and_resends_the_tail() {
        let (mut a, _b, segs) = flight(4);
        // PTO = 2·SRTT = 40 ms after the last new data, well before the RTO.
        assert_eq!(a.rack.pto_deadline, Some(ms(60)));
        let rto = a.rto_deadline.unwrap();
        assert!(rto > ms(60) + Dur::from_millis(100), "RTO at {rto:?}");
        assert_eq!(a.poll_timeout(), Some(ms(60)));
        a.handle_timeout(ms(60));
        // Nothing unsent: the probe retransmits the highest segment.
        let p = a.poll_transmit(ms(60)).expect("probe");
        assert_eq!(p.seq, segs[3].seq);
        assert_eq!(p.payload.len(), segs[3].payload.len());
        assert_eq!(a.poll_transmit(ms(60)), None, "one probe");
        assert_eq!(a.stats().tlp_probes, 1);
        assert_eq!(a.stats().timeouts, 0);
        // §7.3: the RTO restarts from the probe and no second probe is armed.
        assert_eq!(a.rack.pto_deadline, None);
        assert_eq!(a.poll_timeout(), Some(ms(60) + a.rto()));
    }

    #[test]
    fn a_probe_sends_new_data_when_the_window_allows() {
        let (mut a, _b, segs) = flight(10);
        // More data than the initial window admits: the probe carries the
        // next new segment, whatever the congestion window says.
        a.send(Bytes::from(vec![1u8; 3000]));
        assert_eq!(a.poll_transmit(ms(21)), None, "cwnd is full");
        let at = a.poll_timeout().unwrap();
        a.handle_timeout(at);
        let p = a.poll_transmit(at).expect("probe");
        let next = segs[9].seq.wrapping_add(segs[9].payload.len() as u32);
        assert_eq!(p.seq, next, "new data");
        assert_eq!(a.stats().retransmits, 0);
        assert_eq!(a.stats().tlp_probes, 1);
    }

    #[test]
    fn a_lone_segment_waits_for_a_delayed_ack_too() {
        let (a, _b, _) = flight(1);
        assert_eq!(
            a.rack.pto_deadline,
            Some(ms(60) + TLP_MAX_ACK_DELAY).min(a.rto_deadline),
            "2·SRTT + max_ack_delay, capped by the RTO"
        );
    }

    #[test]
    fn sent_after_breaks_ties_by_end_sequence() {
        let t = Time::from_nanos(5);
        assert!(sent_after(Time::from_nanos(6), 1, t, 100));
        assert!(!sent_after(Time::from_nanos(4), 900, t, 100));
        assert!(sent_after(t, 101, t, 100));
        assert!(!sent_after(t, 100, t, 100));
    }

    #[test]
    fn reorder_window_is_a_quarter_min_rtt_bounded_by_srtt() {
        let mut r = Rack::default();
        let ms = Dur::from_millis;
        // No reordering seen, open state, few SACKs: min_RTT / 4.
        assert_eq!(r.reo_wnd(false, 2, 3, ms(40), ms(50)), ms(10));
        // Bounded by SRTT.
        assert_eq!(r.reo_wnd(false, 0, 3, ms(400), ms(50)), ms(50));
        // §6.2 step 4: zero in recovery or with DupThresh segments SACKed
        // while no reordering has been seen ...
        assert_eq!(r.reo_wnd(true, 0, 3, ms(40), ms(50)), Dur::ZERO);
        assert_eq!(r.reo_wnd(false, 3, 3, ms(40), ms(50)), Dur::ZERO);
        // ... but not once it has.
        r.reordering_seen = true;
        assert_eq!(r.reo_wnd(true, 5, 3, ms(40), ms(50)), ms(10));
    }

    /// close() after the data left sends the FIN on its own segment. With
    /// the first data segment and the FIN lost, a SACK of the second data
    /// segment must not count the FIN as delivered: it is sent again and
    /// the connection finishes.
    #[test]
    fn a_lost_fin_of_its_own_is_retransmitted() {
        let (mut a, mut b, segs) = flight(2);
        a.close();
        let fin = a.poll_transmit(ms(21)).unwrap();
        assert!(fin.flags.contains(Flags::FIN) && fin.payload.is_empty());
        for ack in deliver(&mut b, &segs[1..], ms(30)) {
            a.handle_segment(ms(40), ack);
        }
        let mut fins = 0;
        let mut t = 40;
        while t < 200_000 && !matches!(a.state(), State::Closed | State::FinWait2) {
            t += 1;
            if a.poll_timeout().is_some_and(|d| d <= ms(t)) {
                a.handle_timeout(ms(t));
            }
            let out: Vec<Segment> = std::iter::from_fn(|| a.poll_transmit(ms(t))).collect();
            fins += out.iter().filter(|s| s.flags.contains(Flags::FIN)).count();
            for ack in deliver(&mut b, &out, ms(t)) {
                a.handle_segment(ms(t + 10), ack);
            }
        }
        assert!(fins > 0, "the lost FIN was never sent again");
        assert_eq!(a.state(), State::FinWait2, "at {t} ms");
    }

    /// Segments 0 and 2 lost, the ACK of 1 lost: the ACK of 3 newly SACKs
    /// [3] and then [1]. Nothing arrived out of its sending order beyond
    /// the losses, so no reordering is seen; segment 1 arriving after 3 was
    /// SACKed is reordering.
    #[test]
    fn two_new_sack_blocks_in_one_ack_are_not_reordering() {
        let (mut a, mut b, segs) = flight(6);
        let _ = deliver(&mut b, &segs[1..2], ms(30));
        let acks = deliver(&mut b, &segs[3..4], ms(30));
        assert_eq!(acks.last().unwrap().sack.as_slice().len(), 2);
        for ack in acks {
            a.handle_segment(ms(40), ack);
        }
        assert!(!a.rack.reordering_seen);
        let (mut a, mut b, segs) = flight(6);
        for s in [&segs[3], &segs[1]] {
            for ack in deliver(&mut b, std::slice::from_ref(s), ms(30)) {
                a.handle_segment(ms(40), ack);
            }
        }
        assert!(a.rack.reordering_seen);
    }
}
