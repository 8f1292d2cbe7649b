//! Segment arrival: handshake, ACK processing with loss detection, and data
//! reception.

use super::{unwrap32, AckSample, Connection, Event, Flags, LossEvent, Segment, State};
use crate::cc::CongestionControl;
use crate::time::{Dur, Time};

impl Connection {
    /// Our RCV.NXT as a peer sequence offset (0 = the peer's SYN).
    pub(super) fn rcv_nxt_off(&self) -> u64 {
        1 + self.rcv.next() + self.fin_received as u64
    }

    /// Sequence offset of our FIN (one past the last data byte).
    pub(super) fn fin_off(&self) -> u64 {
        self.sendbuf.end() + 1
    }

    /// In NewReno recovery (no SACK) after the first partial ACK, the
    /// retransmission timer is left running (RFC 6582 §3.2 step 5).
    pub(super) fn impatient_hold(&self) -> bool {
        self.in_recovery && !self.sack_ok && self.partial_acks > 1
    }

    /// Whether our FIN has been sent.
    pub(super) fn fin_sent(&self) -> bool {
        self.fin_queued && self.snd_nxt > self.fin_off()
    }

    pub(super) fn enter_closed(&mut self, ev: Event) {
        self.state = State::Closed;
        self.rto_deadline = None;
        self.rack_reset_timers();
        self.ack.deadline = None;
        self.ack.now = false;
        self.time_wait_deadline = None;
        self.syn_pending = false;
        self.events.push_back(ev);
    }

    fn enter_time_wait(&mut self, now: Time) {
        self.state = State::TimeWait;
        self.rto_deadline = None;
        self.time_wait_deadline = Some(now + self.cfg.time_wait);
    }

    /// Processes one arriving segment.
    pub fn handle_segment(&mut self, now: Time, seg: Segment) {
        self.last_now = self.last_now.max(now);
        self.stats.segs_received += 1;
        match self.state {
            State::Closed => return,
            State::SynSent => return self.on_segment_syn_sent(now, seg),
            _ => {}
        }
        let seq_off = unwrap32(self.irs, self.rcv_nxt_off(), seg.seq);
        if seg.flags.contains(Flags::RST) {
            // RFC 9293 §3.10.7.4 first check, RFC 5961 §3: accept an RST whose
            // sequence number lies in the receive window.
            let nxt = self.rcv_nxt_off();
            let wnd = (self.rcv_adv_right + 1).saturating_sub(nxt).max(1);
            if seq_off >= nxt && seq_off < nxt + wnd {
                self.enter_closed(Event::Reset);
            }
            return;
        }
        if seg.flags.contains(Flags::SYN) {
            if self.state == State::SynReceived && seg.seq == self.irs {
                // Our SYN-ACK was lost: the peer retransmitted its SYN.
                self.syn_pending = true;
            } else {
                // RFC 5961 §4: answer an in-window SYN with a challenge ACK.
                self.ack.now = true;
            }
            return;
        }
        if !seg.flags.contains(Flags::ACK) {
            return;
        }
        if self.ts_ok {
            if let Some((tsval, _)) = seg.ts {
                // RFC 7323 §4.3: remember TSval of a segment that starts at or
                // before the last ACK we sent; echo it in TSecr.
                if seq_off <= self.last_ack_sent && (tsval.wrapping_sub(self.ts_recent) as i32) >= 0
                {
                    self.ts_recent = tsval;
                    self.ts_recent_at = now;
                }
            }
        }
        if self.state == State::SynReceived {
            let ack_off = unwrap32(self.iss, self.snd_una, seg.ack);
            if ack_off != 1 {
                return;
            }
            self.state = State::Established;
            self.syn_pending = false;
            self.events.push_back(Event::Connected);
        }
        self.process_ack(now, &seg, seq_off);
        if self.state == State::Closed {
            return;
        }
        if self.ecn_ok {
            self.ecn_receive(now, &seg);
        }
        self.process_data(now, seq_off, seg);
    }

    fn on_segment_syn_sent(&mut self, now: Time, seg: Segment) {
        let f = seg.flags;
        let acceptable = f.contains(Flags::ACK) && seg.ack == self.iss.wrapping_add(1);
        if f.contains(Flags::RST) {
            if acceptable {
                self.enter_closed(Event::Reset);
            }
            return;
        }
        if !(f.contains(Flags::SYN) && acceptable) {
            // Simultaneous open and stray segments are not modelled.
            return;
        }
        self.irs = seg.seq;
        self.negotiate(&seg);
        self.snd_una = 1;
        // The window of a SYN-ACK is never scaled (RFC 7323 §2.2).
        self.snd_wnd = seg.window as u64;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = 0;
        self.snd_wl2 = 1;
        let rtt = match (self.ts_ok, seg.ts) {
            (true, Some((tsval, tsecr))) => {
                self.ts_recent = tsval;
                self.ts_recent_at = now;
                Some(self.ticks_to_dur(self.ts_now(now).wrapping_sub(tsecr)))
            }
            _ if self.rtt.backoff() == 0 => Some(now.since(self.syn_sent_at)),
            _ => None,
        };
        if let Some(r) = rtt {
            self.rtt.update_in_window(r, self.snd_una, self.snd_nxt);
            self.stats.rtt_samples += 1;
        }
        self.rto_deadline = None;
        self.state = State::Established;
        self.events.push_back(Event::Connected);
        self.ack.now = true;
    }

    /// The receiver's side of ECN for an arriving segment.
    fn ecn_receive(&mut self, now: Time, seg: &Segment) {
        let ce = seg.ecn == super::Ecn::Ce;
        if ce {
            self.stats.ce_received += 1;
        }
        if self.cc.dctcp_echo() {
            // RFC 8257 §3.2: ECE mirrors the CE state of the latest segment;
            // when the state changes while an ACK is owed for earlier
            // segments, that ACK goes out at once with the old state.
            if ce != self.ece_echo {
                if self.ack.unacked_bytes > 0 || self.ack.deadline.is_some() {
                    self.stats.pure_acks_sent += 1;
                    let a = self.header(now, self.snd_nxt, Flags::ACK);
                    self.ecn_ack_out = Some(Box::new(a));
                }
                self.ece_echo = ce;
            }
        } else {
            // RFC 3168 §6.1.3: CWR ends the echo; CE (re)starts it.
            if seg.flags.contains(Flags::CWR) {
                self.ece_echo = false;
            }
            if ce {
                self.ece_echo = true;
            }
        }
    }

    /// Delivery-rate sample of an ACK that delivered `bytes` (draft-cheng
    /// §3.3, Linux `tcp_rate_gen`).
    fn rate_sample(&mut self, now: Time, bytes: u64) -> crate::cc::RateSample {
        self.rs_delivered += bytes;
        self.rs_delivered_time = now;
        if self.app_limited_until != 0 && self.rs_delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let mut rs = crate::cc::RateSample {
            delivered: 0,
            interval: Dur::ZERO,
            prior_delivered: 0,
            delivered_total: self.rs_delivered,
            is_app_limited: self.app_limited_until != 0,
        };
        if let Some((sent_at, tx)) = self.board.take_rate_sample() {
            self.rs_first_sent = sent_at;
            let send_elapsed = sent_at.since(tx.first_sent);
            let ack_elapsed = now.since(tx.delivered_time);
            rs.delivered = self.rs_delivered - tx.delivered;
            rs.prior_delivered = tx.delivered;
            rs.is_app_limited = tx.app_limited;
            let interval = send_elapsed.max(ack_elapsed);
            // An interval below the minimum RTT would overstate the rate
            // (ACK compression): no sample.
            if interval >= self.rtt.min_rtt() {
                rs.interval = interval;
            }
        }
        rs
    }

    /// RTT and one-way-delay samples carried by an ACK.
    fn delay_samples(
        &self,
        now: Time,
        seg: &Segment,
        advanced: bool,
        karn: Option<Time>,
    ) -> (Option<Dur>, Option<Dur>) {
        match (self.ts_ok, seg.ts) {
            (true, Some((tsval, tsecr))) => {
                // RFC 7323 §4.1: take RTT samples only from ACKs that advance the left edge.
                let rtt = advanced.then(|| self.ticks_to_dur(self.ts_now(now).wrapping_sub(tsecr)));
                // The peer's ACK delay, if it reports one, is not path delay.
                let held = seg.ack_delay.unwrap_or(0);
                let d = tsval.wrapping_sub(tsecr).wrapping_sub(held) as i32;
                let owd = (d >= 0).then(|| self.ticks_to_dur(d as u32));
                (rtt, owd)
            }
            _ => (karn.map(|t| now.since(t)), None),
        }
    }

    fn process_ack(&mut self, now: Time, seg: &Segment, seq_off: u64) {
        let ack_off = unwrap32(self.iss, self.snd_una, seg.ack);
        if ack_off > self.snd_nxt {
            // Acknowledges data we never sent (RFC 9293 §3.10.7.4): answer with an ACK.
            self.ack.now = true;
            return;
        }
        if ack_off < self.snd_una {
            return;
        }
        let window = (seg.window as u64) << self.snd_wscale;
        let window_changed = window != self.snd_wnd;
        if self.snd_wl1 < seq_off || (self.snd_wl1 == seq_off && self.snd_wl2 <= ack_off) {
            self.snd_wnd = window;
            self.snd_wl1 = seq_off;
            self.snd_wl2 = ack_off;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
        }

        if self.rack_on {
            // RFC 8985 §6.2 steps 2-3, while the scoreboard still tells
            // which segments this ACK newly delivers.
            self.rack_on_delivery(now, seg, ack_off);
        }
        let mut newly_sacked = 0;
        if self.sack_ok {
            for &(l, r) in seg.sack.as_slice() {
                let lo = unwrap32(self.iss, self.snd_una, l);
                let mut hi = unwrap32(self.iss, self.snd_una, r);
                if self.rack_on {
                    hi = self.sack_right_edge(hi);
                }
                if lo < hi && lo >= ack_off && hi <= self.snd_nxt {
                    newly_sacked += self.board.sack(lo, hi);
                }
            }
        }
        let pipe_before = self.pipe();
        let advanced = ack_off > self.snd_una;
        let was_in_recovery = self.in_recovery;

        let mut newly_acked = 0;
        let mut karn = None;
        if advanced {
            let cum = self.board.cum_ack(ack_off);
            newly_acked = cum.newly_acked;
            karn = cum.karn_sent_at;
            let acked_seq = ack_off - self.snd_una;
            self.snd_una = ack_off;
            let delivered = (self.snd_una - 1).min(self.sendbuf.end());
            self.stats.bytes_acked += delivered - self.delivered;
            self.delivered = delivered;
            self.sendbuf.release_to(delivered);
            if self.write_blocked && self.send_space() > 0 {
                self.write_blocked = false;
                self.events.push_back(Event::Writable);
            }
            self.dupacks = 0;
            if self.in_recovery {
                if ack_off >= self.recovery_point {
                    self.in_recovery = false;
                    self.inflation = 0;
                    self.cc.on_recovery_exit(now);
                } else if !self.sack_ok {
                    // RFC 6582 §3.2 step 5, partial ACK: retransmit the first
                    // unacknowledged segment, deflate by the amount acknowledged
                    // and add back one SMSS.
                    if self.board.mark_first_lost() {
                        self.force_retx = true;
                    }
                    self.inflation = self.inflation.saturating_sub(acked_seq) + self.smss;
                    self.partial_acks += 1;
                }
            }
        } else if self.outstanding() > 0 {
            let dup = if self.sack_ok {
                newly_sacked > 0
            } else {
                seg.payload.is_empty() && !seg.flags.contains(Flags::FIN) && !window_changed
            };
            if dup {
                self.dupacks += 1;
                self.stats.dupacks_received += 1;
                if self.in_recovery && !self.sack_ok {
                    // RFC 6582 §3.2 step 4: inflate for each further duplicate.
                    self.inflation += self.smss;
                }
            }
        }
        let mut newly_lost = 0;
        // With RACK, RACK alone detects losses (below).
        if newly_sacked > 0 && self.sack_ok && !self.rack_on {
            newly_lost += self.board.mark_lost_by_sack(self.cfg.dupthresh, self.smss);
            newly_lost += self.board.mark_lost_retransmissions();
        }

        let (rtt, owd) = self.delay_samples(now, seg, advanced, karn);
        if let Some(r) = rtt {
            self.rtt.update_in_window(r, self.snd_una, self.snd_nxt);
            self.stats.rtt_samples += 1;
        }
        if advanced {
            // RFC 6298 §5.2/5.3: stop the timer when all is acknowledged,
            // otherwise restart it; but in NewReno recovery only on the first
            // partial ACK (RFC 6582 §3.2 step 5, the "Impatient" variant, also
            // ns-2's default), so that many losses in one window end in a
            // timeout rather than one repair per RTT for a long time.
            if !self.impatient_hold() {
                self.rto_deadline = (self.outstanding() > 0).then(|| now + self.rtt.rto());
            }
        }
        if self.rack_on {
            // RFC 8985 §6.2 steps 4-5, §7.4 and §7.2, after the RTO restart
            // that caps the probe timer.
            newly_lost = self.rack_after_ack(now, seg, advanced);
        }
        let bytes_acked = newly_acked + newly_sacked;
        let ece = self.ecn_ok && seg.flags.contains(Flags::ECE);
        if bytes_acked > 0 {
            if self.rate_sampling {
                let rs = self.rate_sample(now, bytes_acked);
                self.cc.on_rate_sample(&rs);
            }
            if self.ecn_ok {
                self.cc.on_ecn_ack(now, bytes_acked, ece);
            }
            self.cc.on_ack(&AckSample {
                now,
                bytes_acked,
                in_flight: pipe_before,
                rtt,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                owd,
                delivered: self.delivered,
                sent: self.snd_nxt.saturating_sub(1),
                in_recovery: was_in_recovery,
                cwnd_limited: self.cwnd_limited,
            });
        }

        // Entering loss recovery (RFC 5681 §3.2 step 1-2, RFC 6675 §5).
        if !self.in_recovery && self.snd_una >= self.rto_recover && self.outstanding() > 0 {
            // RFC 8985 §6.2: with RACK, a loss RACK found starts fast
            // recovery and duplicate ACKs are not counted (as Linux).
            let by_dupacks = self.dupacks >= self.cfg.dupthresh && !self.rack_on;
            let by_sack =
                self.sack_ok && (self.board.first_is_lost() || (self.rack_on && newly_lost > 0));
            if by_dupacks || by_sack {
                self.enter_recovery(now, pipe_before);
            }
        }
        // RFC 3168 §6.1.2: ECN-Echo outside recovery, at most once per
        // window of data.
        if ece && !self.in_recovery && self.snd_una > self.ecn_recover && self.outstanding() > 0 {
            self.ecn_recover = self.snd_nxt;
            self.cwr_pending = true;
            self.stats.ecn_reductions += 1;
            self.cc.on_ecn_echo(&LossEvent {
                now,
                in_flight: pipe_before,
            });
        }
        if self.prr_active() {
            // RFC 9937's safe ACK: SND.UNA advanced and no new loss.
            self.prr_on_ack(bytes_acked, advanced && newly_lost == 0);
        }

        if self.fin_sent() && self.snd_una == self.snd_nxt {
            match self.state {
                State::FinWait1 => self.state = State::FinWait2,
                State::Closing => self.enter_time_wait(now),
                State::LastAck => self.enter_closed(Event::Closed),
                _ => {}
            }
        }
    }

    /// Enters fast recovery. `in_flight` is the RFC 6675 pipe before the
    /// triggering ACK: RFC 5681 computes ssthresh from FlightSize (SND.NXT −
    /// SND.UNA), which with SACK overstates the load when SACKed data sits
    /// above a hole; like ns-3 (BytesInFlight) and Linux (cwnd), we use the
    /// bytes the sender believes are still in the network.
    pub(super) fn enter_recovery(&mut self, now: Time, in_flight: u64) {
        self.in_recovery = true;
        self.recovery_point = self.snd_nxt;
        // One reduction per window for losses and ECN-Echo together, and
        // CWR on the next new data: RFC 3168 §6.1.2 has the sender set it
        // after a window reduction for any reason, so that the receiver
        // stops echoing a mark that arrived in this window.
        self.ecn_recover = self.snd_nxt;
        self.cwr_pending = self.ecn_ok;
        self.partial_acks = 0;
        self.stats.fast_recoveries += 1;
        self.cc.on_loss(&LossEvent { now, in_flight });
        if !self.sack_ok {
            // RFC 6582 §3.2 step 2: cwnd = ssthresh + 3·SMSS.
            self.inflation = self.cfg.dupthresh * self.smss;
        }
        // RFC 6675 §5 step 4.3 / RFC 5681 §3.2 step 2: retransmit the first
        // unacknowledged segment now, whatever the pipe says; with RACK,
        // the first segment RACK deemed lost (RFC 8985 §7.1: and TLP's
        // episode ends).
        if self.rack_on {
            self.tlp_reset();
        } else {
            self.board.mark_first_lost();
        }
        self.force_retx = true;
        // RFC 6937 §3.1, at the start of recovery.
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.prr_recover_fs = in_flight.max(1);
        self.prr_sndcnt = 0;
    }

    /// PRR is on and governs what may be sent: SACK recovery with
    /// [`TcpConfig::prr`](super::TcpConfig::prr).
    pub(super) fn prr_active(&self) -> bool {
        self.cfg.prr && self.sack_ok && self.in_recovery
    }

    /// RFC 6937 §3.1 with RFC 9937's conservative bound, as Linux since 4.2
    /// (`tcp_cwnd_reduction`), on every ACK in recovery that delivers data:
    /// `delivered` bytes newly acknowledged or SACKed. While the pipe
    /// exceeds ssthresh, sending follows delivery in proportion ssthresh /
    /// RecoverFS; below it, the pipe grows back towards ssthresh by at most
    /// the bytes delivered, plus one segment on a `safe` ACK (one that
    /// advances SND.UNA and marks no new loss). An ACK that delivers nothing
    /// changes nothing.
    fn prr_on_ack(&mut self, delivered: u64, safe: bool) {
        if delivered == 0 {
            return;
        }
        let ssthresh = self.cc.cwnd();
        self.prr_delivered += delivered;
        let pipe = self.pipe();
        let sndcnt = if pipe > ssthresh {
            let target = (self.prr_delivered as u128 * ssthresh as u128)
                .div_ceil(self.prr_recover_fs as u128);
            (target.min(u64::MAX as u128) as u64).saturating_sub(self.prr_out)
        } else {
            let limit = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered)
                + if safe { self.smss } else { 0 };
            (ssthresh - pipe).min(limit)
        };
        self.prr_sndcnt = sndcnt;
    }

    fn process_data(&mut self, now: Time, seq_off: u64, seg: Segment) {
        let accepts_data = matches!(
            self.state,
            State::Established | State::FinWait1 | State::FinWait2
        );
        if !accepts_data {
            if seg.seq_len() > 0 {
                // Retransmitted FIN or data after our side stopped reading: re-ACK.
                self.ack.now = true;
            }
            return;
        }
        let data_off = seq_off.saturating_sub(1);
        let len = seg.payload.len() as u64;
        if len > 0 {
            let limit = self.rcv_adv_right.max(self.rcv.next());
            let out = self.rcv.insert(data_off, seg.payload, limit);
            if out.advanced > 0 {
                self.stats.bytes_received += out.advanced;
                self.events.push_back(Event::Readable);
            }
            if out.out_of_order || out.filled_hole || out.advanced == 0 || !self.cfg.delayed_ack {
                // RFC 5681 §4.2: out-of-order, hole-filling and duplicate
                // segments are acknowledged at once.
                self.ack.now = true;
            } else {
                self.ack.unacked_bytes += out.advanced;
                if self.ack.unacked_bytes >= 2 * self.smss {
                    self.ack.now = true;
                } else if self.ack.deadline.is_none() {
                    self.ack.deadline = Some(now + self.cfg.delack_timeout);
                }
            }
        }
        if seg.flags.contains(Flags::FIN) {
            self.rcv_fin = Some(data_off + len);
        }
        if !self.fin_received && self.rcv_fin == Some(self.rcv.next()) {
            self.fin_received = true;
            self.ack.now = true;
            self.events.push_back(Event::PeerClosed);
            match self.state {
                State::Established => self.state = State::CloseWait,
                State::FinWait1 => self.state = State::Closing,
                State::FinWait2 => self.enter_time_wait(now),
                _ => {}
            }
        }
    }
}
