//! One µTP connection, sans-IO. See the module documentation of [`super`]
//! for the contract and the sources of each rule.

use super::seq::{self, Unwrapper};
use super::wire::{self, Header, Packet, PacketType};
use super::{CloseReason, Config, ConnStats, Event, State};
use crate::cc::{AckSample, CcConfig, CcInit, CongestionControl, Controller, LossEvent};
use crate::rtt::RttEstimator;
use crate::time::{Dur, Time};
use std::collections::VecDeque;

mod input;

/// Packets the send side keeps at most (sent and not yet acknowledged). A
/// bound on memory and on the sequence space in use (well under half of
/// 2^16, so wrapping comparisons stay unambiguous).
const MAX_OUT_PACKETS: usize = 8192;
/// Lost packets one selective ACK may trigger resends for (libtorrent
/// `parse_sack` keeps a list of 5).
const MAX_SACK_RESENDS: usize = 5;
/// Duplicate ACKs that trigger a fast resend (libtorrent `dup_ack_limit`,
/// BEP 29 "3 duplicate acks"); packets selectively acknowledged past a hole
/// must exceed it (libtorrent `parse_sack`).
const DUP_ACK_LIMIT: u32 = 3;
/// Acks older than this many packets before the last cumulative ack make
/// the packet invalid (libtorrent `incoming_packet`: `acked_seq_nr − dup_ack_limit`).
const OLD_ACK_SLACK: u16 = 3;
/// uTorrent sends `timestamp_difference = INT_MAX` when it has no sample
/// (libtorrent `incoming_packet` ignores that value).
const NO_SAMPLE: u32 = i32::MAX as u32;
/// Largest selective ACK we send, in bytes (1024 packets past `ack_nr + 1`).
const MAX_SACK_BYTES: usize = 128;

#[derive(Clone, Debug)]
struct OutPacket {
    seq: u16,
    ty: PacketType,
    payload: Vec<u8>,
    sent_at: Time,
    transmissions: u32,
    /// Selectively acknowledged.
    sacked: bool,
    /// Marked lost (timeout or fast resend); not counted in flight.
    need_resend: bool,
    /// The resend is a fast one (it may exceed the window).
    fast: bool,
    /// Counted in `in_flight`.
    counted: bool,
}

/// One µTP connection. Create with [`Socket::connect`] or [`Socket::accept`]
/// (or let a [`super::Listener`] do it).
#[derive(Clone, Debug)]
pub struct Socket {
    cfg: Config,
    state: State,
    close_reason: Option<CloseReason>,
    recv_id: u16,
    send_id: u16,
    cc: Controller,
    rtt: RttEstimator,

    // ---- send side
    /// Sequence number of the next DATA/FIN packet (STATE packets carry it unconsumed).
    seq_nr: u16,
    /// Last sequence number acknowledged cumulatively.
    acked_seq: u16,
    /// Sent packets not yet cumulatively acknowledged; `outbuf[i].seq == acked_seq + 1 + i`.
    outbuf: VecDeque<OutPacket>,
    outbuf_bytes: usize,
    in_flight: u64,
    send_buf: VecDeque<u8>,
    close_requested: bool,
    fin_seq: Option<u16>,
    fin_acked: bool,
    peer_wnd: u32,
    dup_acks: u32,
    /// Packets before this one are not fast-resent again.
    fast_resend_from: u16,
    /// Losses of packets up to this one do not cut the window again.
    loss_seq: u16,
    rto_at: Option<Time>,
    probe_at: Option<Time>,
    probe_due: bool,
    timeouts: u32,
    delivered: u64,
    sent_total: u64,
    writable_wanted: bool,
    /// When everything handed to [`Socket::send`] was last acknowledged
    /// (`None` while some of it is unacknowledged, or before any was sent).
    drained_at: Option<Time>,
    reset_pending: bool,
    /// Unwraps the peer's echoed timestamp differences (our one-way delay).
    owd: Unwrapper,

    // ---- receive side
    /// Last in-order sequence number received.
    ack_nr: u16,
    /// `reorder[i]` holds the payload of `ack_nr + 1 + i` if it arrived early.
    reorder: VecDeque<Option<Vec<u8>>>,
    reorder_bytes: usize,
    recv_buf: VecDeque<u8>,
    eof_seq: Option<u16>,
    peer_finished: bool,
    ack_pending: bool,
    /// Before acknowledging the peer's FIN, acknowledge the data before it
    /// once more (see the module documentation: libtorrent's FIN does not
    /// consume a sequence number, so it ignores an ack of the FIN itself).
    ack_data_before_fin: bool,
    last_adv_wnd: u32,
    /// Our receive timestamp minus the peer's send timestamp of the last
    /// packet, echoed in every packet we send (never capped).
    reply_micro: u32,
    /// The acceptor remembers the SYN's sequence number to answer a
    /// retransmitted SYN.
    syn_seq: Option<u16>,

    // ---- liveness (keep-alive and idle timeout)
    /// When we last sent a packet.
    last_send: Time,
    /// When we last received a valid packet (the SYN, for the acceptor).
    last_recv: Time,
    /// The peer sent a valid packet besides its SYN (always true for the
    /// initiator once connected): until then [`Config::accept_timeout`]
    /// bounds the silence instead of [`Config::idle_timeout`].
    confirmed: bool,

    events: VecDeque<Event>,
    stats: ConnStats,
    /// The one-way delay of the last sample given to the controller.
    #[cfg(test)]
    pub(super) last_owd: Option<Dur>,
}

/// The wire timestamp of `now`: microseconds, truncated to 32 bits (BEP 29).
pub fn timestamp_us(now: Time) -> u32 {
    (now.as_nanos() / 1_000) as u32
}

impl Socket {
    fn new(cfg: &Config, recv_id: u16, send_id: u16, isn: u16) -> Socket {
        let mut cfg = cfg.clone();
        cfg.payload_size = cfg.payload_size.clamp(1, super::MAX_PAYLOAD);
        cfg.recv_buffer = cfg.recv_buffer.clamp(cfg.payload_size, u32::MAX as usize);
        cfg.send_buffer = cfg.send_buffer.max(cfg.payload_size);
        let cc = CcConfig::Ledbat(cfg.cc.clone()).build(CcInit {
            mss: cfg.payload_size as u64,
            initial_window: 1,
            hystart: false,
        });
        let rtt = RttEstimator::new(cfg.min_rto, cfg.max_rto.max(cfg.min_rto));
        Socket {
            state: State::SynSent,
            close_reason: None,
            recv_id,
            send_id,
            cc,
            rtt,
            seq_nr: isn,
            acked_seq: isn.wrapping_sub(1),
            outbuf: VecDeque::new(),
            outbuf_bytes: 0,
            in_flight: 0,
            send_buf: VecDeque::new(),
            close_requested: false,
            fin_seq: None,
            fin_acked: false,
            peer_wnd: cfg.payload_size as u32,
            dup_acks: 0,
            fast_resend_from: isn,
            loss_seq: isn.wrapping_sub(1),
            rto_at: None,
            probe_at: None,
            probe_due: false,
            timeouts: 0,
            delivered: 0,
            sent_total: 0,
            writable_wanted: false,
            drained_at: None,
            reset_pending: false,
            owd: Unwrapper::new(),
            ack_nr: 0,
            reorder: VecDeque::new(),
            reorder_bytes: 0,
            recv_buf: VecDeque::new(),
            eof_seq: None,
            peer_finished: false,
            ack_pending: false,
            ack_data_before_fin: false,
            last_adv_wnd: 0,
            reply_micro: 0,
            syn_seq: None,
            last_send: Time::ZERO,
            last_recv: Time::ZERO,
            confirmed: true,
            events: VecDeque::new(),
            stats: ConnStats::default(),
            #[cfg(test)]
            last_owd: None,
            cfg,
        }
    }

    /// Active open: a SYN goes out on the next [`Socket::poll_transmit`].
    /// `recv_id` is chosen by the caller (at random); `send_id = recv_id + 1`
    /// (BEP 29). `isn` is the initial sequence number (at random too).
    pub fn connect(cfg: &Config, recv_id: u16, isn: u16) -> Socket {
        let mut s = Socket::new(cfg, recv_id, recv_id.wrapping_add(1), isn);
        s.outbuf.push_back(OutPacket {
            seq: isn,
            ty: PacketType::Syn,
            payload: Vec::new(),
            sent_at: Time::ZERO,
            transmissions: 0,
            sacked: false,
            need_resend: true,
            fast: true,
            counted: false,
        });
        s.seq_nr = isn.wrapping_add(1);
        s
    }

    /// Passive open from a received SYN: `recv_id = conn_id + 1`, `send_id =
    /// conn_id` (BEP 29). The reply is a STATE packet whose `ack_nr` is the
    /// SYN's `seq_nr` and whose `seq_nr` is `isn`, not consumed: our first
    /// DATA packet carries `isn` too (libtorrent `incoming_packet`, state
    /// `none`). Returns `None` if `syn` is not a SYN.
    pub fn accept(cfg: &Config, now: Time, syn: &Packet<'_>, isn: u16) -> Option<Socket> {
        let h = syn.header;
        if h.ty != PacketType::Syn {
            return None;
        }
        let mut s = Socket::new(cfg, h.conn_id.wrapping_add(1), h.conn_id, isn);
        s.state = State::Connected;
        s.ack_nr = h.seq_nr;
        s.syn_seq = Some(h.seq_nr);
        s.peer_wnd = h.wnd_size;
        s.stats.packets_received += 1;
        s.take_timestamp(now, &h);
        s.ack_pending = true;
        s.last_recv = now;
        s.last_send = now;
        s.confirmed = false;
        s.events.push_back(Event::Connected);
        Some(s)
    }

    // ----- accessors ------------------------------------------------------

    pub fn state(&self) -> State {
        self.state
    }
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.close_reason
    }
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    pub fn recv_id(&self) -> u16 {
        self.recv_id
    }
    pub fn send_id(&self) -> u16 {
        self.send_id
    }
    pub fn stats(&self) -> ConnStats {
        let mut s = self.stats;
        s.cwnd = self.cc.cwnd();
        s.srtt = self.rtt.srtt();
        s.rto = self.rtt.rto();
        s.in_flight = self.in_flight;
        s.peer_window = self.peer_wnd;
        s
    }
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// The congestion window in bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    /// Payload bytes sent and neither acknowledged nor deemed lost.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    /// The receive window the peer last advertised.
    pub fn peer_window(&self) -> u32 {
        self.peer_wnd
    }
    /// Bytes [`Socket::send`] would accept now.
    pub fn send_space(&self) -> usize {
        if self.close_requested || self.state == State::Closed {
            return 0;
        }
        self.cfg
            .send_buffer
            .saturating_sub(self.send_buf.len() + self.outbuf_bytes)
    }
    /// When the peer acknowledged the last of the bytes given to
    /// [`Socket::send`]: `None` while some are unsent or unacknowledged
    /// (or none were ever given). A sender's honest end of a transfer.
    pub fn drained_at(&self) -> Option<Time> {
        self.drained_at
    }
    /// Bytes buffered for sending, unsent or unacknowledged.
    pub fn send_buffered(&self) -> usize {
        self.send_buf.len() + self.outbuf_bytes
    }
    /// In-order bytes ready for [`Socket::recv`].
    pub fn recv_ready(&self) -> usize {
        self.recv_buf.len()
    }
    /// The peer's FIN arrived and every byte before it was received.
    pub fn peer_finished(&self) -> bool {
        self.peer_finished
    }
    /// Our FIN was acknowledged (everything we sent arrived).
    pub fn fin_acked(&self) -> bool {
        self.fin_acked
    }
    /// Packets held in the reorder buffer and bytes in all buffers (for
    /// memory-bound checks).
    pub fn buffered(&self) -> (usize, usize) {
        (
            self.reorder.len() + self.outbuf.len(),
            self.reorder_bytes + self.recv_buf.len() + self.send_buf.len() + self.outbuf_bytes,
        )
    }

    fn max_reorder(&self) -> usize {
        // libtorrent `incoming_packet`: max(16, capacity / 1100) packets.
        (self.cfg.recv_buffer / self.cfg.payload_size).clamp(16, 0x4000)
    }

    fn adv_window(&self) -> u32 {
        self.cfg
            .recv_buffer
            .saturating_sub(self.recv_buf.len() + self.reorder_bytes) as u32
    }

    // ----- application ----------------------------------------------------

    /// Queues bytes to send; returns how many were taken (bounded by
    /// [`Config::send_buffer`]). After a short write a [`Event::Writable`]
    /// follows once space frees up.
    pub fn send(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.send_space());
        self.send_buf.extend(&data[..n]);
        if n > 0 {
            self.drained_at = None;
        }
        if n < data.len() {
            self.writable_wanted = true;
        }
        n
    }

    /// Reads in-order bytes into `buf`.
    pub fn recv(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.recv_buf.len());
        for (d, s) in buf.iter_mut().zip(self.recv_buf.drain(..n)) {
            *d = s;
        }
        // A window that was closed (less than one packet) and reopens is
        // announced at once; otherwise the sender would wait for a probe.
        if n > 0
            && self.state == State::Connected
            && (self.last_adv_wnd as usize) < self.cfg.payload_size
            && self.adv_window() as usize >= self.cfg.payload_size
        {
            self.ack_pending = true;
        }
        n
    }

    /// Graceful close: a FIN follows the buffered data (after the
    /// handshake, if it is still under way). Reading stays possible until
    /// the peer's FIN.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent | State::Connected => self.close_requested = true,
            State::Closed => {}
        }
    }

    /// Abortive close: a RESET goes out and the connection is closed.
    pub fn abort(&mut self) {
        if self.state == State::Connected {
            self.reset_pending = true;
        }
        if self.state != State::Closed {
            self.finish(CloseReason::Aborted);
        }
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn finish(&mut self, why: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        self.state = State::Closed;
        self.close_reason = Some(why);
        self.rto_at = None;
        self.probe_at = None;
        self.outbuf.clear();
        self.outbuf_bytes = 0;
        self.send_buf.clear();
        self.reorder.clear();
        self.reorder_bytes = 0;
        self.in_flight = 0;
        self.ack_pending = false;
        self.events.push_back(match why {
            CloseReason::Done | CloseReason::Aborted => Event::Closed,
            CloseReason::Reset => Event::Reset,
            CloseReason::TimedOut => Event::TimedOut,
        });
    }

    // ----- timers ---------------------------------------------------------

    /// The earliest of the retransmission timer, the window-probe timer,
    /// and, while connected, the keep-alive and the idle timeout.
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.rto_at,
            self.probe_at,
            self.keepalive_at(),
            self.idle_at(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// When a keep-alive is due (`None` if one is already queued).
    fn keepalive_at(&self) -> Option<Time> {
        (self.state == State::Connected && !self.ack_pending)
            .then(|| self.last_send + self.cfg.keepalive)
    }

    /// When the peer's silence closes the connection.
    fn idle_at(&self) -> Option<Time> {
        let limit = if self.confirmed {
            self.cfg.idle_timeout
        } else {
            self.cfg.accept_timeout
        };
        (self.state == State::Connected).then(|| self.last_recv + limit)
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.idle_at().is_some_and(|t| now >= t) {
            self.finish(CloseReason::TimedOut);
            return;
        }
        if self.keepalive_at().is_some_and(|t| now >= t) {
            // A STATE packet with the current ack goes out on the next poll.
            self.ack_pending = true;
        }
        if self.probe_at.is_some_and(|t| now >= t) {
            self.probe_at = None;
            self.probe_due = true;
        }
        if self.rto_at.is_some_and(|t| now >= t) {
            self.on_rto(now);
        }
    }

    fn on_rto(&mut self, now: Time) {
        let Some(front) = self.outbuf.iter().find(|p| !p.sacked) else {
            self.rto_at = None;
            return;
        };
        let limit = match front.ty {
            PacketType::Syn => self.cfg.syn_resends,
            PacketType::Fin => self.cfg.fin_resends,
            _ => self.cfg.max_resends,
        };
        let front_ty = front.ty;
        self.timeouts += 1;
        self.stats.timeouts += 1;
        // Consecutive timeouts without a valid packet from the peer (a
        // valid packet resets the count, as in libtorrent `incoming_packet`):
        // a peer that answers zero-window probes stays alive.
        if self.timeouts > limit {
            // libtorrent `tick`: a FIN nobody acknowledges after the peer
            // finished its side ends the connection normally.
            let why = if front_ty == PacketType::Fin && self.peer_finished {
                CloseReason::Done
            } else {
                CloseReason::TimedOut
            };
            self.finish(why);
            return;
        }
        if front_ty != PacketType::Syn {
            self.cc.on_timeout(now, self.in_flight);
        }
        self.rtt.back_off();
        for p in self.outbuf.iter_mut().filter(|p| !p.sacked) {
            p.need_resend = true;
            p.fast = false;
            p.counted = false;
        }
        self.in_flight = 0;
        // libtorrent `tick`: losses of the packets that just timed out
        // neither cut the window again nor trigger fast resends.
        self.fast_resend_from = self.seq_nr;
        self.loss_seq = self.seq_nr.wrapping_sub(1);
        self.rto_at = Some(now + self.rtt.rto());
    }

    // ----- output ---------------------------------------------------------

    /// The next datagram to send, if any. Call until `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Vec<u8>> {
        let out = self.next_datagram(now);
        if out.is_some() {
            self.last_send = now;
        }
        out
    }

    fn next_datagram(&mut self, now: Time) -> Option<Vec<u8>> {
        if self.reset_pending {
            self.reset_pending = false;
            let h = self.header(now, PacketType::Reset, self.seq_nr, self.ack_nr);
            let mut out = Vec::with_capacity(wire::HEADER_LEN);
            wire::write(&h, &[], &[], &mut out);
            self.stats.packets_sent += 1;
            return Some(out);
        }
        if self.state == State::Closed {
            return None;
        }
        if let Some(out) = self.transmit_resend(now) {
            return Some(out);
        }
        if self.state == State::Connected {
            if let Some(out) = self.transmit_new(now) {
                return Some(out);
            }
        }
        if self.state == State::Connected && self.ack_pending {
            if self.ack_data_before_fin {
                self.ack_data_before_fin = false;
                let ack = self.ack_nr.wrapping_sub(1);
                return Some(self.state_packet(now, ack));
            }
            self.ack_pending = false;
            self.stats.acks_sent += 1;
            return Some(self.state_packet(now, self.ack_nr));
        }
        None
    }

    fn state_packet(&mut self, now: Time, ack: u16) -> Vec<u8> {
        let h = self.header(now, PacketType::State, self.seq_nr, ack);
        let mut out = Vec::with_capacity(wire::HEADER_LEN + 8);
        let sack = self.sack_mask();
        wire::write(&h, &sack, &[], &mut out);
        self.stats.packets_sent += 1;
        out
    }

    fn header(&mut self, now: Time, ty: PacketType, seq_nr: u16, ack_nr: u16) -> Header {
        let wnd = self.adv_window();
        self.last_adv_wnd = wnd;
        Header {
            ty,
            // The SYN carries the id it expects replies on (BEP 29).
            conn_id: if ty == PacketType::Syn {
                self.recv_id
            } else {
                self.send_id
            },
            timestamp_us: timestamp_us(now),
            timestamp_diff_us: self.reply_micro,
            wnd_size: wnd,
            seq_nr,
            ack_nr: if self.state == State::SynSent {
                0
            } else {
                ack_nr
            },
        }
    }

    /// Bit `i` stands for `ack_nr + 2 + i`, i.e. `reorder[i + 1]`.
    fn sack_mask(&self) -> Vec<u8> {
        if self.reorder.len() < 2 {
            return Vec::new();
        }
        let bits = (self.reorder.len() - 1).min(MAX_SACK_BYTES * 8);
        let mut m = vec![0u8; bits.div_ceil(8)];
        for (i, slot) in self.reorder.iter().skip(1).take(bits).enumerate() {
            if slot.is_some() {
                m[i / 8] |= 1 << (i % 8);
            }
        }
        m
    }

    fn window(&self) -> u64 {
        self.cc.cwnd().min(self.peer_wnd as u64)
    }

    fn encode(&mut self, now: Time, idx: usize) -> Vec<u8> {
        let (seq, ty) = match self.outbuf.get(idx) {
            Some(p) => (p.seq, p.ty),
            None => return Vec::new(),
        };
        let h = self.header(now, ty, seq, self.ack_nr);
        let sack = if ty == PacketType::Syn {
            Vec::new()
        } else {
            self.sack_mask()
        };
        let mut out = Vec::new();
        if let Some(p) = self.outbuf.get(idx) {
            wire::write(&h, &sack, &p.payload, &mut out);
        }
        if ty != PacketType::Syn {
            self.ack_pending = false;
            self.ack_data_before_fin = false;
        }
        self.stats.packets_sent += 1;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        out
    }

    fn transmit_resend(&mut self, now: Time) -> Option<Vec<u8>> {
        let idx = self.outbuf.iter().position(|p| p.need_resend)?;
        let window = self.window();
        let p = &self.outbuf[idx];
        let size = p.payload.len() as u64;
        if !p.fast && self.in_flight > 0 && self.in_flight + size > window {
            return None;
        }
        let first = p.transmissions == 0;
        let p = &mut self.outbuf[idx];
        p.need_resend = false;
        p.fast = false;
        p.counted = true;
        p.transmissions += 1;
        p.sent_at = now;
        self.in_flight += size;
        if !first {
            self.stats.resends += 1;
            self.stats.bytes_resent += size;
        }
        self.stats.bytes_sent += size;
        Some(self.encode(now, idx))
    }

    fn transmit_new(&mut self, now: Time) -> Option<Vec<u8>> {
        if self.outbuf.len() >= MAX_OUT_PACKETS {
            return None;
        }
        if !self.send_buf.is_empty() {
            let window = self.window();
            let mut len = self.send_buf.len().min(self.cfg.payload_size) as u64;
            if self.in_flight + len > window {
                if self.in_flight > 0 {
                    return None; // wait for acks
                }
                if self.peer_wnd > 0 {
                    // A small advertised window: send what fits.
                    len = len.min(self.peer_wnd as u64);
                } else if self.probe_due {
                    // Zero window: one byte probes it (RFC 9293 §3.8.6.1).
                    self.probe_due = false;
                    len = 1;
                    self.stats.window_probes += 1;
                } else {
                    if self.probe_at.is_none() {
                        self.probe_at = Some(now + self.rtt.rto());
                    }
                    return None;
                }
            }
            self.probe_at = None;
            let payload: Vec<u8> = self.send_buf.drain(..len as usize).collect();
            return Some(self.push_packet(now, PacketType::Data, payload));
        }
        if self.close_requested && self.fin_seq.is_none() {
            self.fin_seq = Some(self.seq_nr);
            return Some(self.push_packet(now, PacketType::Fin, Vec::new()));
        }
        None
    }

    fn push_packet(&mut self, now: Time, ty: PacketType, payload: Vec<u8>) -> Vec<u8> {
        let size = payload.len();
        self.outbuf.push_back(OutPacket {
            seq: self.seq_nr,
            ty,
            payload,
            sent_at: now,
            transmissions: 1,
            sacked: false,
            need_resend: false,
            fast: false,
            counted: true,
        });
        self.seq_nr = self.seq_nr.wrapping_add(1);
        self.outbuf_bytes += size;
        self.in_flight += size as u64;
        self.sent_total += size as u64;
        self.stats.bytes_sent += size as u64;
        let idx = self.outbuf.len() - 1;
        self.encode(now, idx)
    }
}
