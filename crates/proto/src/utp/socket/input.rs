//! The input side of a µTP connection: datagrams in, acknowledgements
//! (cumulative, duplicate, selective) and the data they carry.

use super::*;

impl Socket {
    /// Parses and handles one datagram addressed to this connection.
    pub fn handle_datagram(&mut self, now: Time, data: &[u8]) -> Result<(), wire::ParseError> {
        let p = wire::parse(data)?;
        self.handle_packet(now, &p);
        Ok(())
    }

    pub(super) fn take_timestamp(&mut self, now: Time, h: &Header) {
        if h.timestamp_us != 0 {
            self.reply_micro = timestamp_us(now).wrapping_sub(h.timestamp_us);
        }
    }

    /// Handles one parsed packet whose connection id matched this socket
    /// (the listener demultiplexes; it does not check ids again here except
    /// for the SYN).
    pub fn handle_packet(&mut self, now: Time, p: &Packet<'_>) {
        if self.state == State::Closed {
            return;
        }
        let h = p.header;
        self.stats.packets_received += 1;
        match h.ty {
            PacketType::Syn => {
                // A retransmitted SYN: our STATE reply was lost.
                if self.syn_seq == Some(h.seq_nr) && h.conn_id.wrapping_add(1) == self.recv_id {
                    self.ack_pending = true;
                } else {
                    self.stats.invalid += 1;
                }
                return;
            }
            PacketType::Reset => {
                self.finish(CloseReason::Reset);
                return;
            }
            _ => {}
        }
        if self.state == State::SynSent {
            // Only the ack of our SYN moves us on (libtorrent `syn_sent`).
            if h.ack_nr != self.seq_nr.wrapping_sub(1) {
                self.stats.invalid += 1;
                return;
            }
            self.state = State::Connected;
            self.last_recv = now;
            // Acknowledge the acceptor's STATE (with our first DATA, if
            // any): it confirms the connection to the acceptor, which
            // otherwise drops it after `accept_timeout`.
            self.ack_pending = true;
            // The acceptor's STATE carries its first sequence number
            // unconsumed: we have received everything before it.
            self.ack_nr = h.seq_nr.wrapping_sub(1);
            self.events.push_back(Event::Connected);
        }
        // Acks of packets never sent, or far older than the last ack, mark
        // a stray or forged packet (libtorrent `incoming_packet`).
        let last_sent = self.seq_nr.wrapping_sub(1);
        if seq::lt(last_sent, h.ack_nr)
            || seq::lt(h.ack_nr, self.acked_seq.wrapping_sub(OLD_ACK_SLACK))
        {
            self.stats.invalid += 1;
            return;
        }
        if matches!(h.ty, PacketType::Data | PacketType::Fin) {
            let ahead = seq::diff(self.ack_nr, h.seq_nr);
            if ahead > self.max_reorder() as i32 {
                self.stats.dropped += 1;
                return;
            }
        }
        self.timeouts = 0;
        self.last_recv = now;
        self.confirmed = true;
        self.take_timestamp(now, &h);
        let prev_wnd = self.peer_wnd;
        self.peer_wnd = h.wnd_size;
        let owd = (h.timestamp_diff_us != 0 && h.timestamp_diff_us != NO_SAMPLE)
            .then(|| Dur::from_micros(self.owd.unwrap(h.timestamp_diff_us)));
        self.on_ack(now, &h, p.sack, owd, prev_wnd);
        if self.state == State::Closed {
            return;
        }
        match h.ty {
            PacketType::Data => self.on_data(h.seq_nr, p.payload),
            PacketType::Fin => {
                self.ack_pending = true;
                // A FIN at or behind what we received in order is a stale
                // or forged duplicate: taking it would end the stream
                // before data still to come.
                if seq::diff(self.ack_nr, h.seq_nr) <= 0 {
                    self.stats.duplicates += 1;
                } else if self.eof_seq.is_none() && !self.peer_finished {
                    self.eof_seq = Some(h.seq_nr);
                }
                self.check_eof();
            }
            _ => {}
        }
        self.check_done();
    }

    pub(super) fn on_data(&mut self, seq_nr: u16, payload: &[u8]) {
        self.ack_pending = true;
        if self.peer_finished || self.eof_seq.is_some_and(|e| !seq::lt(seq_nr, e)) {
            return;
        }
        let ahead = seq::diff(self.ack_nr, seq_nr);
        if ahead <= 0 {
            self.stats.duplicates += 1;
            return;
        }
        let off = (ahead - 1) as usize;
        if self.recv_buf.len() + self.reorder_bytes + payload.len() > self.cfg.recv_buffer {
            // The peer did not honour our window.
            self.stats.dropped += 1;
            return;
        }
        if off == 0 {
            self.recv_buf.extend(payload);
            self.stats.bytes_received += payload.len() as u64;
            self.ack_nr = seq_nr;
            self.reorder.pop_front();
            while let Some(Some(_)) = self.reorder.front() {
                if let Some(Some(d)) = self.reorder.pop_front() {
                    self.reorder_bytes -= d.len();
                    self.stats.bytes_received += d.len() as u64;
                    self.recv_buf.extend(d);
                    self.ack_nr = self.ack_nr.wrapping_add(1);
                }
            }
            if self.events.back() != Some(&Event::Readable) {
                self.events.push_back(Event::Readable);
            }
            self.check_eof();
        } else {
            if self.reorder.len() <= off {
                self.reorder.resize(off + 1, None);
            }
            if let Some(slot @ None) = self.reorder.get_mut(off) {
                self.reorder_bytes += payload.len();
                *slot = Some(payload.to_vec());
                self.stats.reordered += 1;
            } else {
                self.stats.duplicates += 1;
            }
        }
    }

    pub(super) fn check_eof(&mut self) {
        if let Some(e) = self.eof_seq {
            if e == self.ack_nr.wrapping_add(1) {
                self.ack_nr = e;
                self.eof_seq = None;
                self.peer_finished = true;
                self.reorder.clear();
                self.reorder_bytes = 0;
                self.ack_pending = true;
                self.ack_data_before_fin = true;
                self.events.push_back(Event::PeerClosed);
            }
        }
    }

    pub(super) fn check_done(&mut self) {
        if self.state == State::Connected && self.fin_acked && self.peer_finished {
            self.finish(CloseReason::Done);
        }
    }

    pub(super) fn uncount(&mut self, idx: usize) -> u64 {
        match self.outbuf.get_mut(idx) {
            Some(p) if p.counted => {
                p.counted = false;
                let n = p.payload.len() as u64;
                self.in_flight = self.in_flight.saturating_sub(n);
                n
            }
            _ => 0,
        }
    }

    pub(super) fn on_ack(
        &mut self,
        now: Time,
        h: &Header,
        sack: Option<&[u8]>,
        owd: Option<Dur>,
        prev_wnd: u32,
    ) {
        let prev_in_flight = self.in_flight;
        let mut acked_bytes = 0u64;
        let mut rtt: Option<Dur> = None;
        let mut progress = false;
        let sample = |p: &OutPacket, rtt: &mut Option<Dur>| {
            // Karn: only packets sent once give RTT samples.
            if p.transmissions == 1 {
                let r = now.since(p.sent_at);
                *rtt = Some(rtt.map_or(r, |x: Dur| x.min(r)));
            }
        };

        // Cumulative ack.
        if seq::lt(self.acked_seq, h.ack_nr) {
            while self
                .outbuf
                .front()
                .is_some_and(|p| seq::le(p.seq, h.ack_nr))
            {
                self.uncount(0);
                if let Some(p) = self.outbuf.pop_front() {
                    if !p.sacked {
                        acked_bytes += p.payload.len() as u64;
                        sample(&p, &mut rtt);
                    }
                    self.outbuf_bytes -= p.payload.len();
                }
            }
            self.acked_seq = h.ack_nr;
            self.dup_acks = 0;
            progress = true;
        } else if h.ack_nr == self.acked_seq
            && h.ty == PacketType::State
            && !self.outbuf.is_empty()
            && h.wnd_size <= prev_wnd
            && self
                .outbuf
                .front()
                .is_some_and(|p| p.payload.len() as u64 <= h.wnd_size as u64)
        {
            // libtorrent counts only STATE packets as duplicate acks: a
            // stream of DATA says nothing about our losses. A STATE that
            // opens the window is a window update, not a duplicate ack
            // (after RFC 5681 §2, condition (e); libtorrent does not check
            // it). It may shrink, as the receiver buffers what arrived
            // after a hole. One whose window cannot hold the first
            // unacknowledged packet speaks of flow control (the receiver
            // drops DATA beyond its window), not of loss.
            self.dup_acks += 1;
            self.stats.dup_acks += 1;
        }

        // Selective ack: bit i is ack_nr + 2 + i.
        if let Some(mask) = sack {
            let base = self.acked_seq.wrapping_add(1);
            for i in 0..mask.len() * 8 {
                let s = h.ack_nr.wrapping_add(2).wrapping_add(i as u16);
                if !seq::lt(s, self.seq_nr) {
                    break;
                }
                if !wire::sack_bit(mask, i) {
                    continue;
                }
                let idx = seq::dist(base, s) as usize;
                if idx >= self.outbuf.len() {
                    continue;
                }
                if self.outbuf[idx].sacked {
                    continue;
                }
                self.uncount(idx);
                let p = &mut self.outbuf[idx];
                p.sacked = true;
                p.need_resend = false;
                acked_bytes += p.payload.len() as u64;
                let p = p.clone();
                sample(&p, &mut rtt);
                progress = true;
            }
            // Packets before more than three (at least four) selectively
            // acknowledged ones are lost (libtorrent `parse_sack` resends
            // only once `dups > dup_ack_limit`).
            let mut after = 0u32;
            let mut lost = Vec::new();
            for idx in (0..self.outbuf.len()).rev() {
                let p = &self.outbuf[idx];
                if p.sacked {
                    after += 1;
                } else if after > DUP_ACK_LIMIT
                    && !p.need_resend
                    && p.transmissions > 0
                    && !seq::lt(p.seq, self.fast_resend_from)
                {
                    lost.push(idx);
                }
            }
            for &idx in lost.iter().rev().take(MAX_SACK_RESENDS) {
                self.mark_lost(now, idx);
            }
        }

        // Leading packets acknowledged selectively are now cumulative.
        while self.outbuf.front().is_some_and(|p| p.sacked) {
            if let Some(p) = self.outbuf.pop_front() {
                self.outbuf_bytes -= p.payload.len();
                self.acked_seq = p.seq;
            }
        }
        if seq::lt(self.fast_resend_from, self.acked_seq.wrapping_add(1)) {
            self.fast_resend_from = self.acked_seq.wrapping_add(1);
        }
        if seq::lt(self.loss_seq, self.acked_seq) {
            self.loss_seq = self.acked_seq;
        }

        // Three duplicate acks: resend the first unacknowledged packet.
        if self.dup_acks >= DUP_ACK_LIMIT {
            if let Some(p) = self.outbuf.front() {
                if !p.sacked && !p.need_resend && !seq::lt(p.seq, self.fast_resend_from) {
                    self.mark_lost(now, 0);
                }
            }
        }

        if let Some(r) = rtt {
            self.rtt.update(r);
        }
        if let Some(f) = self.fin_seq {
            if !self.fin_acked && seq::le(f, self.acked_seq) {
                self.fin_acked = true;
            }
        }
        if progress {
            self.rto_at = (self.outbuf.iter().any(|p| !p.sacked)).then(|| now + self.rtt.rto());
        }
        if self.drained_at.is_none()
            && self.sent_total > 0
            && self.send_buf.is_empty()
            && self.outbuf.iter().all(|p| p.payload.is_empty())
        {
            self.drained_at = Some(now);
        }
        if acked_bytes > 0 {
            self.delivered += acked_bytes;
            self.stats.bytes_acked += acked_bytes;
            let sample = AckSample {
                now,
                bytes_acked: acked_bytes,
                in_flight: prev_in_flight,
                rtt,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                owd,
                delivered: self.delivered,
                sent: self.sent_total,
                // µTP has no fast-recovery phase (libtorrent, libutp).
                in_recovery: false,
                // libtorrent `do_ledbat`: the window limited the sender if
                // one more packet would not have fit.
                cwnd_limited: prev_in_flight + self.cfg.payload_size as u64 > self.cc.cwnd(),
            };
            #[cfg(test)]
            {
                self.last_owd = sample.owd;
            }
            self.cc.on_ack(&sample);
            if self.writable_wanted && self.send_space() > 0 {
                self.writable_wanted = false;
                self.events.push_back(Event::Writable);
            }
        }
    }

    pub(super) fn mark_lost(&mut self, now: Time, idx: usize) {
        self.uncount(idx);
        let Some(p) = self.outbuf.get_mut(idx) else {
            return;
        };
        p.need_resend = true;
        p.fast = true;
        let s = p.seq;
        self.stats.fast_resends += 1;
        self.fast_resend_from = s.wrapping_add(1);
        self.dup_acks = 0;
        // One window cut per window of data (libtorrent `experienced_loss`).
        if seq::lt(self.loss_seq, s) {
            self.loss_seq = self.seq_nr.wrapping_sub(1);
            self.cc.on_loss(&LossEvent {
                now,
                in_flight: self.in_flight,
            });
        }
    }
}
