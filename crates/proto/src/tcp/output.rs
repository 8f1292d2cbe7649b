//! Segment departure: what to send next, and building segments.

use super::{Connection, Ecn, Flags, SackBlocks, Segment, State};
use crate::cc::CongestionControl;
use crate::time::{Dur, Time};
use bytes::Bytes;

impl Connection {
    /// The next segment to put on the wire, if any. Call until `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        self.last_now = self.last_now.max(now);
        if self.ecn_ack_out.is_some() {
            return self.ecn_ack_out.take().map(|s| *s);
        }
        if self.rst_pending {
            self.rst_pending = false;
            let mut s = self.header(now, self.snd_nxt, Flags::RST | Flags::ACK);
            s.ts = None;
            s.sack = SackBlocks::new();
            return Some(s);
        }
        match self.state {
            State::Closed => return None,
            State::SynSent | State::SynReceived if self.syn_pending => {
                return Some(self.send_syn(now))
            }
            State::SynSent => return None,
            _ => {}
        }
        if self.rack.probe_due {
            // RFC 8985 §7.3: the probe timer fired.
            if let Some(s) = self.tlp_send_probe(now) {
                return Some(s);
            }
        }
        if self.state != State::SynReceived {
            if let Some(s) = self.next_data_segment(now) {
                return Some(s);
            }
        }
        if self.ack.now {
            self.stats.pure_acks_sent += 1;
            return Some(self.header(now, self.snd_nxt, Flags::ACK));
        }
        None
    }

    fn send_syn(&mut self, now: Time) -> Segment {
        let is_ack = self.state == State::SynReceived;
        let retransmission = self.snd_nxt > 0;
        self.syn_pending = false;
        self.snd_nxt = 1;
        self.syn_sent_at = now;
        let offer_ts = if is_ack {
            self.ts_ok
        } else {
            self.cfg.timestamps
        };
        let offer_sack = if is_ack { self.sack_ok } else { self.cfg.sack };
        // RFC 7323 §2.2: a SYN-ACK carries window scale only if the SYN did.
        let offer_ws =
            self.cfg.window_scaling && (!is_ack || self.rcv_wscale > 0 || self.snd_wscale > 0);
        let mut seg = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss,
            ack: if is_ack { self.irs.wrapping_add(1) } else { 0 },
            flags: match (is_ack, self.cfg.ecn, self.ecn_ok) {
                (true, _, true) => Flags::SYN | Flags::ACK | Flags::ECE,
                (true, _, false) => Flags::SYN | Flags::ACK,
                (false, true, _) => Flags::SYN | Flags::ECE | Flags::CWR,
                (false, false, _) => Flags::SYN,
            },
            window: self.cfg.recv_buffer.min(65_535) as u16,
            mss: Some(self.cfg.mss),
            wscale: offer_ws.then_some(self.rcv_wscale),
            sack_permitted: offer_sack,
            ts: offer_ts.then(|| (self.ts_now(now), if is_ack { self.ts_recent } else { 0 })),
            sack: SackBlocks::new(),
            ack_delay: None,
            ecn: Ecn::NotEct,
            payload: Bytes::new(),
        };
        if is_ack && !offer_ws {
            seg.wscale = None;
        }
        if is_ack {
            // RFC 7323 §4.3: TS.Recent is updated from segments at or below the
            // last ACK sent; the SYN-ACK acknowledges the peer's SYN.
            self.last_ack_sent = 1;
        }
        if retransmission {
            self.stats.retransmits += 1;
        }
        self.stats.segs_sent += 1;
        self.ack.now = false;
        self.rto_deadline = Some(now + self.rtt.rto());
        seg
    }

    /// The window we advertise, applying receiver SWS avoidance (RFC 9293
    /// §3.8.6.2.2): the right edge moves only by at least min(buffer/2, MSS),
    /// and never moves left.
    fn advertise(&mut self) -> u64 {
        let used = self.rcv.ready_len() + self.rcv.ooo_len();
        let free = self.cfg.recv_buffer.saturating_sub(used);
        let candidate = self.rcv.next() + free;
        let step = (self.cfg.recv_buffer / 2).min(self.smss);
        if candidate >= self.rcv_adv_right + step {
            self.rcv_adv_right = candidate;
        }
        self.rcv_adv_right.saturating_sub(self.rcv.next())
    }

    /// After the application read data: send a window update if the
    /// window would open by at least the SWS step.
    pub(super) fn maybe_window_update(&mut self) {
        if !self.state.is_synchronized() || self.fin_received {
            return;
        }
        let used = self.rcv.ready_len() + self.rcv.ooo_len();
        let candidate = self.rcv.next() + self.cfg.recv_buffer.saturating_sub(used);
        let step = (self.cfg.recv_buffer / 2).min(self.smss);
        // Only when the advertised window has shrunk noticeably; a reader
        // that keeps up never triggers extra ACKs.
        let adv = self.rcv_adv_right.saturating_sub(self.rcv.next());
        if candidate >= self.rcv_adv_right + step && adv < self.cfg.recv_buffer / 2 {
            self.ack.now = true;
        }
    }

    /// A segment carrying the current ACK, window, timestamps and SACK blocks.
    pub(super) fn header(&mut self, now: Time, seq_off: u64, mut flags: Flags) -> Segment {
        if self.ece_echo {
            flags.insert(Flags::ECE);
        }
        let wnd = self.advertise();
        let rcv_nxt = self.rcv_nxt_off();
        let mut sack = SackBlocks::new();
        if self.sack_ok {
            // RFC 2018 §3: three blocks fit beside timestamps, four without.
            let max = if self.ts_ok { 3 } else { 4 };
            for (l, r) in self.rcv.sack_blocks(max) {
                sack.push(
                    self.irs.wrapping_add((l + 1) as u32),
                    self.irs.wrapping_add((r + 1) as u32),
                );
            }
        }
        self.ack = Default::default();
        self.last_ack_sent = rcv_nxt;
        self.stats.segs_sent += 1;
        Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss.wrapping_add(seq_off as u32),
            ack: self.irs.wrapping_add(rcv_nxt as u32),
            flags,
            window: (wnd >> self.rcv_wscale).min(65_535) as u16,
            mss: None,
            wscale: None,
            sack_permitted: false,
            ts: self.ts_ok.then(|| (self.ts_now(now), self.ts_recent)),
            sack,
            ack_delay: (self.ts_ok && self.cfg.report_ack_delay).then(|| {
                self.ts_now(now)
                    .wrapping_sub(self.ts_now(self.ts_recent_at))
            }),
            ecn: Ecn::NotEct,
            payload: Bytes::new(),
        }
    }

    /// Builds the data segment `[start, end)` of our sequence space.
    pub(super) fn data_segment(&mut self, now: Time, start: u64, end: u64) -> Segment {
        let fin_off = self.fin_off();
        let fin = self.fin_queued && end == fin_off + 1;
        let data_end = if fin { end - 1 } else { end };
        let mut flags = Flags::ACK;
        if fin {
            flags.insert(Flags::FIN);
        }
        let payload = if data_end > start {
            self.sendbuf.slice(start - 1, (data_end - start) as usize)
        } else {
            Bytes::new()
        };
        if data_end == fin_off && !payload.is_empty() {
            flags.insert(Flags::PSH);
        }
        self.stats.bytes_sent += payload.len() as u64;
        let mut seg = self.header(now, start, flags);
        seg.payload = payload;
        if self.rto_deadline.is_none() {
            // RFC 6298 §5.1.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if self.cc.cwnd() < self.smss {
            // Windows below one segment: one segment per mss/cwnd RTTs.
            let rtt = if self.rtt.has_sample() {
                self.rtt.srtt()
            } else {
                self.rtt.rto()
            };
            let cwnd = self.cc.cwnd().max(1);
            let gap = Dur::from_nanos(
                (rtt.as_nanos() as u128 * self.smss as u128 / cwnd as u128).min(u64::MAX as u128)
                    as u64,
            );
            self.sub_mss_next = now + gap;
        }
        seg
    }

    /// Unsent data or an unsent FIN is waiting.
    pub(super) fn has_unsent(&self) -> bool {
        let fin_off = self.fin_off();
        self.snd_nxt < fin_off || (self.fin_queued && self.snd_nxt == fin_off)
    }

    /// Whether the congestion window (in PRR recovery: PRR's send count)
    /// allows `len` more bytes.
    fn cwnd_allows(&self, now: Time, pipe: u64, len: u64) -> bool {
        // PRR's count (with a target window of at least one segment; below
        // that the sub-segment rule below paces the sends).
        if self.prr_active() && self.cc.cwnd() >= self.smss {
            return len <= self.prr_sndcnt;
        }
        let cwnd = self.cc.cwnd();
        if cwnd < self.smss && self.inflation == 0 {
            return pipe == 0 && now >= self.sub_mss_next;
        }
        pipe + len <= cwnd + self.inflation
    }

    /// PRR's bookkeeping of a transmission (RFC 6937 §3.1: prr_out).
    fn prr_sent(&mut self, len: u64) {
        if self.prr_active() {
            self.prr_out += len;
            self.prr_sndcnt = self.prr_sndcnt.saturating_sub(len);
        }
    }

    /// The pacing gate (TcpConfig::pacing): whether a segment may leave now.
    fn pacing_allows(&mut self, now: Time) -> bool {
        if now >= self.next_send {
            return true;
        }
        self.pacing_blocked = true;
        false
    }

    /// After a transmission of `len` bytes: the earliest time of the next
    /// (Linux's `tcp_wstamp_ns` advanced by len / rate), and the segment's
    /// delivery-rate state (draft-cheng §3.2).
    pub(super) fn on_transmit(&mut self, now: Time, len: u64, retx: Option<usize>) {
        if self.pacing {
            if let Some(rate) = self.pacing_rate() {
                let gap = (len as u128 * 1_000_000_000 / rate as u128).min(u64::MAX as u128);
                self.next_send = self.next_send.max(now) + Dur::from_nanos(gap as u64);
            }
        }
        if self.rate_sampling {
            // draft-cheng-iccrg-delivery-rate-estimation §3.2 (Linux's
            // tcp_rate_skb_sent): restart the intervals when nothing is
            // outstanding, not merely nothing believed in flight (after a
            // timeout marked everything lost).
            if self.outstanding() == 0 {
                self.rs_first_sent = now;
                self.rs_delivered_time = now;
            }
            let tx = super::TxState {
                delivered: self.rs_delivered,
                delivered_time: self.rs_delivered_time,
                first_sent: self.rs_first_sent,
                app_limited: self.app_limited_until != 0,
            };
            self.board.stamp(retx, tx);
        }
    }

    fn next_data_segment(&mut self, now: Time) -> Option<Segment> {
        self.pacing_blocked = false;
        let pipe = self.pipe();
        // RFC 6675 NextSeg rule 1 (and NewReno's retransmission): lost segments first.
        if let Some(i) = self.board.next_lost() {
            let s = *self.board.get(i).expect("index from next_lost");
            // The FIN takes sequence space but no window, as on the new-data
            // path: a full final segment with FIN is MSS + 1 long and would
            // never fit a one-segment window after a timeout.
            let fin = self.fin_queued && s.end == self.fin_off() + 1;
            let len = s.end - s.start - u64::from(fin);
            if self.force_retx || self.cwnd_allows(now, pipe, len) {
                if !self.force_retx && self.pacing && !self.pacing_allows(now) {
                    return None;
                }
                self.force_retx = false;
                let (start, end) = self.board.retransmitted(i, now, self.snd_nxt);
                if self.pacing || self.rate_sampling {
                    self.on_transmit(now, end - start, Some(i));
                }
                self.stats.retransmits += 1;
                self.prr_sent(end - start);
                if start <= self.snd_una && !self.impatient_hold() {
                    // Retransmitting the head re-arms the timer, as Linux does
                    // (and RFC 6582 on partial ACKs): it must not expire before
                    // this retransmission could have been acknowledged.
                    self.rto_deadline = Some(now + self.rtt.rto());
                }
                let seg = self.data_segment(now, start, end);
                self.stats.bytes_retransmitted += seg.payload.len() as u64;
                return Some(seg);
            }
            self.cwnd_limited = true;
            return None;
        }
        if !self.has_unsent() {
            self.cwnd_limited = false;
            if self.rate_sampling && pipe < self.cc.cwnd() {
                // draft-cheng §3.4: the application limits sending; samples
                // until this data is delivered may understate the path.
                self.app_limited_until = (self.rs_delivered + pipe).max(1);
            }
            return None;
        }
        let fin_off = self.fin_off();
        let unsent = fin_off.saturating_sub(self.snd_nxt);
        let room = (self.snd_una + self.snd_wnd).saturating_sub(self.snd_nxt);
        let mut len = unsent.min(self.smss).min(room);
        if unsent > 0 && len == 0 {
            if std::mem::take(&mut self.force_probe) {
                len = 1;
            } else {
                // Zero window: the retransmission timer doubles as persist timer.
                if self.outstanding() == 0 && self.rto_deadline.is_none() {
                    self.rto_deadline = Some(now + self.rtt.rto());
                }
                return None;
            }
        }
        if len > 0 && len < self.smss {
            // Sender SWS avoidance and Nagle (RFC 9293 §3.8.6.2.1, RFC 896).
            let all = len == unsent;
            let nagle_ok = !self.cfg.nagle || self.outstanding() == 0 || self.fin_queued;
            let half_window = self.max_snd_wnd > 0 && len >= self.max_snd_wnd / 2;
            if !((all && nagle_ok) || half_window || self.force_probe) {
                return None;
            }
        }
        if !self.cwnd_allows(now, pipe, len) {
            self.cwnd_limited = true;
            return None;
        }
        if self.pacing && !self.pacing_allows(now) {
            return None;
        }
        let start = self.snd_nxt;
        let mut end = start + len;
        if self.fin_queued && end == fin_off {
            end += 1;
        }
        if end == start {
            return None;
        }
        self.board.push(start, end, now);
        if self.pacing || self.rate_sampling {
            self.on_transmit(now, len, None);
        }
        self.snd_nxt = end;
        self.prr_sent(end - start);
        self.cwnd_limited = pipe + len + self.smss > self.cc.cwnd() + self.inflation;
        let mut seg = self.data_segment(now, start, end);
        if self.ecn_ok && len > 0 {
            // RFC 3168 §6.1.5: ECT on new data only, never on
            // retransmissions or pure ACKs; CWR on the first new data after
            // a reduction (§6.1.2).
            seg.ecn = Ecn::Ect0;
            if std::mem::take(&mut self.cwr_pending) {
                seg.flags.insert(Flags::CWR);
            }
        }
        if self.rack_on {
            // RFC 8985 §7.2: (re)arm the probe timer after new data.
            self.tlp_schedule(now);
        }
        Some(seg)
    }
}

/// The RST a host sends for a segment that matches no connection
/// (RFC 9293 §3.10.7.1). `None` for an incoming RST.
pub fn reset_for(seg: &Segment) -> Option<Segment> {
    if seg.flags.contains(Flags::RST) {
        return None;
    }
    let (seq, ack, flags) = if seg.flags.contains(Flags::ACK) {
        (seg.ack, 0, Flags::RST)
    } else {
        (
            0,
            seg.seq.wrapping_add(seg.seq_len()),
            Flags::RST | Flags::ACK,
        )
    };
    Some(Segment {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        seq,
        ack,
        flags,
        ..Default::default()
    })
}
