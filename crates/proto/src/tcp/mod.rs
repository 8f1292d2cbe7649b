//! A sans-IO TCP endpoint.
//!
//! # Contract
//! [`Connection`] never reads a clock or touches a socket. Its driver (the
//! simulator or a test) follows the same loop as quinn-proto's `Connection`:
//!
//! 1. feed input: [`Connection::handle_segment`] for every segment that
//!    arrives, [`Connection::handle_timeout`] when the deadline from
//!    [`Connection::poll_timeout`] has passed;
//! 2. drain output: call [`Connection::poll_transmit`] until it returns
//!    `None`, putting each segment on the wire;
//! 3. drain [`Connection::poll_event`] for application-visible events;
//! 4. re-read [`Connection::poll_timeout`] and arm a timer for it.
//!
//! The application side is [`Connection::send`], [`Connection::recv`],
//! [`Connection::close`] and [`Connection::abort`]; after calling any of them
//! the driver drains output again.
//!
//! # What is modelled
//! Three-way handshake with option negotiation (MSS, SACK-permitted,
//! timestamps, window scale); FIN in both directions with the RFC 9293 state
//! machine; RST. Slow start and congestion avoidance are delegated to a
//! [`Controller`]. Loss recovery is RFC 6582 NewReno (fast retransmit, window
//! inflation, partial ACKs) without SACK and RFC 6675 (pipe, IsLost, NextSeg
//! rule 1) with SACK. RTO per RFC 6298 with a configurable minimum. Delayed
//! ACKs (every second full segment, or a timer), immediate ACKs for out-of-order
//! data (RFC 5681 §4.2). Send and receive buffer limits with receiver SWS
//! avoidance. Nagle (RFC 896). Timestamps (RFC 7323) for RTT and one-way-delay
//! samples. ACKs ride on data in both directions.
//!
//! With SACK, Proportional Rate Reduction (RFC 6937) is an option
//! ([`TcpConfig::prr`], off by default).
//!
//! Options, off by default: pacing ([`TcpConfig::pacing`]; always on under
//! BBR), with the next permitted send time among the deadlines of
//! [`Connection::poll_timeout`]; ECN ([`TcpConfig::ecn`], RFC 3168, and
//! DCTCP's echo, RFC 8257 §3.2). Delivery-rate sampling
//! (draft-cheng-iccrg-delivery-rate-estimation) runs for controllers that
//! ask for it (BBR). HyStart++ (RFC 9406, [`TcpConfig::hystart`]) is an
//! option of the NewReno and CUBIC controllers. RACK-TLP loss detection
//! (RFC 8985, [`TcpConfig::rack`]) is an option of SACK connections; it
//! replaces the duplicate-ACK threshold and IsLost, and adds the
//! reordering and probe timers to [`Connection::poll_timeout`].
//!
//! Not modelled (see `crates/proto/README.md`): PAWS, simultaneous open,
//! urgent data, F-RTO, TSO, the RFC 7661 restart after
//! idle, and zero-window probing beyond resending one byte under the
//! retransmission timer.

mod buffers;
mod input;
mod output;
mod rack;
mod scoreboard;
mod segment;

pub use buffers::{Reassembly, SendBuffer};
pub use output::reset_for;
pub use scoreboard::{Scoreboard, TxState};
pub use segment::{Ecn, Flags, SackBlocks, Segment, IPV4_HEADER, TCP_HEADER, TS_OPTION};

use crate::cc::{AckSample, CcInit, CongestionControl, Controller, LossEvent};
use crate::rtt::RttEstimator;
pub use crate::rtt::RttEstimatorKind;
use crate::time::{Dur, Time};
use bytes::Bytes;
use std::collections::VecDeque;

/// Per-connection configuration. Defaults follow Linux where the RFCs leave
/// a choice; each field says which.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// MSS option value we announce (IPv4 over a 1500 B MTU: 1460). With
    /// timestamps the payload per segment is 12 B smaller (1448 B).
    pub mss: u16,
    /// Offer and use SACK (RFC 2018) and SACK-based recovery (RFC 6675).
    pub sack: bool,
    /// Offer and use timestamps (RFC 7323).
    pub timestamps: bool,
    /// Timestamp clock tick. Linux uses 1 ms; we default to 1 µs so that
    /// delay-based controllers see fine-grained samples, as Linux's do from its
    /// own per-packet clocks.
    pub ts_tick: Dur,
    /// Offer and use window scaling (RFC 7323 §2).
    pub window_scaling: bool,
    /// Model extension (not in real TCP): report the receiver's ACK delay
    /// with each timestamp echo, so that one-way-delay samples (TSval − TSecr)
    /// exclude delayed-ACK waits, as LEDBAT's µTP does by measuring delay at
    /// the receiver. Without it a window of one segment waits for the
    /// delayed-ACK timer on every ACK and a delay-based controller reads that
    /// wait as queueing. RTT samples are unaffected (RFC 6298 counts ACK delay).
    pub report_ack_delay: bool,
    /// Delay ACKs: acknowledge every second full-sized segment or after
    /// `delack_timeout` (RFC 5681 §4.2).
    pub delayed_ack: bool,
    /// Delayed-ACK timer. RFC 5681 allows up to 500 ms; Linux uses 40 ms minimum.
    pub delack_timeout: Dur,
    /// Nagle's algorithm (RFC 896): hold sub-MSS segments while data is unacknowledged.
    pub nagle: bool,
    /// Lower bound of the RTO (RFC 6298 §2.4 says 1 s; Linux uses 200 ms).
    pub min_rto: Dur,
    /// Apply `min_rto` as Linux does, to the deviation term (RTO ≥ SRTT +
    /// `min_rto`), rather than to the whole RTO as RFC 6298 does. On a long,
    /// stable queue RFC 6298's RTO shrinks to SRTT + a few ms and fires
    /// spuriously during recovery.
    pub rto_floor_on_variance: bool,
    /// How the RTO's deviation term is estimated: RFC 6298 (default) or
    /// Linux's per-window maximum ([`RttEstimatorKind::Linux`]), which keeps
    /// a delay swing in the RTO for several round trips.
    pub rtt_estimator: RttEstimatorKind,
    /// Upper bound of the RTO (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Dur,
    /// Send buffer: bytes written and not yet acknowledged.
    pub send_buffer: u64,
    /// Receive buffer: bounds the advertised window.
    pub recv_buffer: u64,
    /// Initial window in segments (RFC 6928: 10).
    pub initial_window: u64,
    /// Duplicate-ACK threshold (RFC 5681: 3).
    pub dupthresh: u64,
    /// Proportional Rate Reduction in SACK recovery (RFC 6937, with RFC
    /// 9937's conservative bound, as Linux since 4.2): sends during recovery
    /// are spread over the ACKs in proportion ssthresh / RecoverFS, instead
    /// of RFC 6675's cwnd = ssthresh at once, which silences the sender
    /// until the pipe has drained below the new window. RecoverFS is the
    /// pipe when recovery began (RFC 9937's choice; RFC 6937 uses
    /// FlightSize, Linux the previous cwnd); ssthresh is the controller's
    /// window after its loss response. Off by default (every reproduction
    /// runs without it). No effect without SACK.
    pub prr: bool,
    /// Pace transmissions (Linux's internal TCP pacing, `tcp_update_pacing_rate`
    /// in `tcp_input.c` and the send-time stamp of `tcp_output.c`): segments
    /// leave no closer than their length at the pacing rate, which is the
    /// controller's own rate if it sets one (BBR), else cwnd / SRTT × 2 while
    /// cwnd < ssthresh / 2 and × 1.2 after (Linux's `tcp_pacing_ss_ratio`
    /// and `tcp_pacing_ca_ratio`), with cwnd at least the data outstanding.
    /// Nothing is paced before the first RTT sample. Always on under BBR.
    pub pacing: bool,
    /// Negotiate and use ECN (RFC 3168): ECE|CWR on the SYN, ECE on the
    /// SYN-ACK; new data leaves ECT(0); the receiver echoes CE with ECE
    /// until it sees CWR (with DCTCP, RFC 8257 §3.2: ECE mirrors each
    /// segment's mark); the sender answers ECE at most once per window
    /// through its controller and sets CWR on the next new data.
    pub ecn: bool,
    /// HyStart++ (RFC 9406) in the initial slow start of NewReno and CUBIC
    /// (`CcConfig::supports_hystart`); other controllers ignore it.
    pub hystart: bool,
    /// RACK-TLP loss detection (RFC 8985) on connections that negotiated
    /// SACK: a segment is lost once a segment sent after it was delivered
    /// and RACK.rtt plus a reordering window (min RTT / 4) has passed
    /// since it was sent; this replaces the duplicate-ACK threshold and
    /// RFC 6675's IsLost. A tail loss probe goes out after 2·SRTT without
    /// an ACK. Off by default (every reproduction runs without it); no
    /// effect without SACK. Differences from the RFC: `crates/proto/README.md`.
    pub rack: bool,
    /// SYN retransmissions before giving up.
    pub syn_retries: u32,
    /// How long TIME-WAIT lasts (RFC 9293: 2·MSL = 4 min; Linux: 60 s).
    pub time_wait: Dur,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            sack: true,
            timestamps: true,
            ts_tick: Dur::MICROSECOND,
            window_scaling: true,
            report_ack_delay: true,
            delayed_ack: true,
            delack_timeout: Dur::from_millis(40),
            nagle: true,
            min_rto: Dur::from_millis(200),
            rto_floor_on_variance: true,
            rtt_estimator: RttEstimatorKind::Rfc6298,
            max_rto: Dur::from_secs(60),
            send_buffer: 4 << 20,
            recv_buffer: 4 << 20,
            initial_window: 10,
            dupthresh: 3,
            prr: false,
            pacing: false,
            ecn: false,
            hystart: false,
            rack: false,
            syn_retries: 6,
            time_wait: Dur::from_secs(60),
        }
    }
}

/// RFC 9293 connection states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    Closed,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl State {
    /// The handshake completed and the connection has not closed.
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::Closed | State::SynSent | State::SynReceived)
    }
}

/// What the application should know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed.
    Connected,
    /// In-order data can be read with [`Connection::recv`].
    Readable,
    /// Send-buffer space became available after a write was refused.
    Writable,
    /// The peer sent FIN: no more data will arrive.
    PeerClosed,
    /// The connection closed normally (after TIME-WAIT or LAST-ACK).
    Closed,
    /// The peer reset the connection.
    Reset,
    /// The handshake or the retransmission timer gave up.
    TimedOut,
}

/// Counters a researcher wants after a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    pub segs_sent: u64,
    pub segs_received: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    /// Segments retransmitted (fast, SACK-based or after RTO).
    pub retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub pure_acks_sent: u64,
    /// Payload bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// In-order payload bytes received from the peer.
    pub bytes_received: u64,
    /// Window reductions in answer to ECN-Echo (RFC 3168 §6.1.2).
    pub ecn_reductions: u64,
    /// Data segments that arrived marked CE.
    pub ce_received: u64,
    /// RTT samples taken (from the SYN-ACK and from ACKs, one at most per
    /// segment); the latest is [`Connection::latest_rtt`]. A driver that
    /// compares the count before and after [`Connection::handle_segment`]
    /// sees every sample.
    pub rtt_samples: u64,
    /// Tail loss probes sent (RFC 8985 §7.3; 0 without [`TcpConfig::rack`]).
    pub tlp_probes: u64,
    /// Segments RACK deemed lost (RFC 8985 §6.2; 0 without [`TcpConfig::rack`]).
    pub rack_losses: u64,
}

/// Delayed-ACK bookkeeping.
#[derive(Clone, Copy, Debug, Default)]
struct AckState {
    /// Payload bytes received since the last ACK we sent.
    unacked_bytes: u64,
    /// Send an ACK at the next opportunity.
    now: bool,
    deadline: Option<Time>,
}

/// A TCP endpoint. See the module documentation for the driving contract.
#[derive(Debug)]
pub struct Connection {
    cfg: TcpConfig,
    state: State,
    cc: Controller,
    rtt: RttEstimator,
    local_port: u16,
    remote_port: u16,

    // Negotiated.
    sack_ok: bool,
    ts_ok: bool,
    snd_wscale: u8,
    rcv_wscale: u8,
    /// Payload bytes per full segment.
    smss: u64,

    // Sender; offsets in our sequence space, 0 = SYN, data byte k at k + 1.
    iss: u32,
    snd_una: u64,
    snd_nxt: u64,
    /// Peer's window in bytes, and the segment that last updated it (RFC 9293 SND.WL1/WL2).
    snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    max_snd_wnd: u64,
    sendbuf: SendBuffer,
    fin_queued: bool,
    board: Scoreboard,
    dupacks: u64,
    in_recovery: bool,
    recovery_point: u64,
    /// Fast retransmit is not entered for data sent before the last RTO (RFC 6582 §4.1 "recover").
    rto_recover: u64,
    /// NewReno window inflation (RFC 6582), zero with SACK.
    inflation: u64,
    /// Partial ACKs in the current NewReno recovery.
    partial_acks: u32,
    /// The first retransmission of a recovery episode goes out regardless of pipe.
    force_retx: bool,
    /// PRR (RFC 6937 §3.1): bytes delivered and sent since recovery began,
    /// the pipe when it began (RecoverFS), and what the latest ACK allows
    /// to send.
    prr_delivered: u64,
    prr_out: u64,
    prr_recover_fs: u64,
    prr_sndcnt: u64,
    /// Send one byte past a zero window (persist timer fired).
    force_probe: bool,
    rto_deadline: Option<Time>,
    syn_retries_left: u32,
    syn_pending: bool,
    syn_sent_at: Time,
    rst_pending: bool,
    /// Earliest time a segment may leave when cwnd < 1 segment.
    sub_mss_next: Time,
    /// The latest `now` any `handle_*`/`poll_transmit` call was given.
    last_now: Time,
    cwnd_limited: bool,
    write_blocked: bool,
    delivered: u64,

    /// Pacing (TcpConfig::pacing, or BBR): the earliest time the next
    /// segment may leave, and whether a segment is waiting for it.
    pacing: bool,
    next_send: Time,
    pacing_blocked: bool,
    /// Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation
    /// §3.1): C.delivered (acknowledged and SACKed bytes), C.delivered_time,
    /// C.first_sent_time, C.app_limited (0: not application-limited).
    rate_sampling: bool,
    rs_delivered: u64,
    rs_delivered_time: Time,
    rs_first_sent: Time,
    app_limited_until: u64,
    /// ECN (RFC 3168): negotiated; the receiver echoes ECE; the sender owes
    /// a CWR; no new reaction until SND.UNA passes this offset.
    ecn_ok: bool,
    ece_echo: bool,
    cwr_pending: bool,
    ecn_recover: u64,
    /// An ACK built for DCTCP's echo when the CE state changed with an
    /// ACK still owed for the earlier segments (RFC 8257 §3.2).
    /// Boxed: rare (DCTCP only), and a segment is 112 bytes.
    ecn_ack_out: Option<Box<Segment>>,
    /// RACK-TLP (TcpConfig::rack with SACK negotiated) and its state.
    rack_on: bool,
    rack: rack::Rack,

    // Receiver; peer offsets, 0 = peer SYN, data byte k at k + 1.
    irs: u32,
    rcv: Reassembly,
    /// Data offset of the peer's FIN once seen.
    rcv_fin: Option<u64>,
    fin_received: bool,
    /// Right edge of the window we advertised (data offset); never moves left.
    rcv_adv_right: u64,
    last_ack_sent: u64,
    ts_recent: u32,
    /// When the segment that set `ts_recent` arrived.
    ts_recent_at: Time,
    ack: AckState,
    time_wait_deadline: Option<Time>,

    events: VecDeque<Event>,
    stats: TcpStats,
}

/// Absolute offset of a 32-bit wire value, taken as the value closest to `near`.
fn unwrap32(base: u32, near: u64, wire: u32) -> u64 {
    let near_wire = base.wrapping_add(near as u32);
    let d = wire.wrapping_sub(near_wire) as i32 as i64;
    (near as i64 + d).max(0) as u64
}

impl Connection {
    fn new(cfg: TcpConfig, cc: Controller, local_port: u16, remote_port: u16, iss: u32) -> Self {
        let rtt = RttEstimator::new(cfg.min_rto, cfg.max_rto)
            .with_floor_on_variance(cfg.rto_floor_on_variance)
            .with_kind(cfg.rtt_estimator);
        let cfg_pacing =
            cfg.pacing || cc.pacing_rate().is_some() || matches!(cc, Controller::Bbr(_));
        let rate_sampling = cc.wants_rate_samples();
        let mut rcv_wscale = 0;
        if cfg.window_scaling {
            while rcv_wscale < 14 && (cfg.recv_buffer >> rcv_wscale) > 65_535 {
                rcv_wscale += 1;
            }
        }
        Connection {
            smss: cfg.mss as u64,
            rcv_adv_right: cfg.recv_buffer,
            syn_retries_left: cfg.syn_retries,
            cfg,
            state: State::Closed,
            cc,
            rtt,
            local_port,
            remote_port,
            sack_ok: false,
            ts_ok: false,
            snd_wscale: 0,
            rcv_wscale,
            iss,
            snd_una: 0,
            snd_nxt: 0,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            max_snd_wnd: 0,
            sendbuf: SendBuffer::new(),
            fin_queued: false,
            board: Scoreboard::new().with_rate_tracking(rate_sampling),
            dupacks: 0,
            in_recovery: false,
            recovery_point: 0,
            rto_recover: 0,
            inflation: 0,
            partial_acks: 0,
            force_retx: false,
            prr_delivered: 0,
            prr_out: 0,
            prr_recover_fs: 1,
            prr_sndcnt: 0,
            force_probe: false,
            rto_deadline: None,
            syn_pending: false,
            syn_sent_at: Time::ZERO,
            rst_pending: false,
            sub_mss_next: Time::ZERO,
            last_now: Time::ZERO,
            cwnd_limited: false,
            write_blocked: false,
            delivered: 0,
            pacing: cfg_pacing,
            next_send: Time::ZERO,
            pacing_blocked: false,
            rate_sampling,
            rs_delivered: 0,
            rs_delivered_time: Time::ZERO,
            rs_first_sent: Time::ZERO,
            app_limited_until: 0,
            ecn_ok: false,
            ece_echo: false,
            cwr_pending: false,
            ecn_recover: 0,
            ecn_ack_out: None,
            rack_on: false,
            rack: rack::Rack::default(),
            irs: 0,
            rcv: Reassembly::new(),
            rcv_fin: None,
            fin_received: false,
            last_ack_sent: 0,
            ts_recent: 0,
            ts_recent_at: Time::ZERO,
            ack: AckState::default(),
            time_wait_deadline: None,
            events: VecDeque::new(),
            stats: TcpStats::default(),
        }
    }

    /// Builds the controller for a connection from its configuration.
    fn controller(cfg: &TcpConfig, cc: &crate::cc::CcConfig) -> Controller {
        // Before negotiation we assume timestamps are used if offered; the
        // controller is told the payload size of a full segment.
        let smss = cfg.mss as u64 - if cfg.timestamps { TS_OPTION as u64 } else { 0 };
        cc.build(CcInit {
            mss: smss,
            initial_window: cfg.initial_window,
            hystart: cfg.hystart,
        })
    }

    /// Active open: the connection will send a SYN on the next `poll_transmit`.
    pub fn connect(
        cfg: TcpConfig,
        cc: &crate::cc::CcConfig,
        local_port: u16,
        remote_port: u16,
        iss: u32,
    ) -> Self {
        let ctl = Self::controller(&cfg, cc);
        let mut c = Connection::new(cfg, ctl, local_port, remote_port, iss);
        c.state = State::SynSent;
        c.syn_pending = true;
        c
    }

    /// Passive open from a received SYN. Returns `None` if `syn` is not a SYN
    /// (without ACK, RST or FIN): the caller should then answer with
    /// [`reset_for`] as RFC 9293 §3.10.7.1 says for a closed port.
    pub fn accept(
        cfg: TcpConfig,
        cc: &crate::cc::CcConfig,
        syn: &Segment,
        iss: u32,
        now: Time,
    ) -> Option<Self> {
        let f = syn.flags;
        if !f.contains(Flags::SYN)
            || f.contains(Flags::ACK)
            || f.contains(Flags::RST)
            || f.contains(Flags::FIN)
        {
            return None;
        }
        let ctl = Self::controller(&cfg, cc);
        let mut c = Connection::new(cfg, ctl, syn.dst_port, syn.src_port, iss);
        c.state = State::SynReceived;
        c.irs = syn.seq;
        c.negotiate(syn);
        c.snd_wnd = syn.window as u64; // never scaled in a SYN (RFC 7323 §2.2)
        c.snd_wl1 = 0;
        if let (true, Some((tsval, _))) = (c.ts_ok, syn.ts) {
            c.ts_recent = tsval;
            c.ts_recent_at = now;
        }
        c.syn_pending = true;
        c.ack.now = true;
        Some(c)
    }

    /// Applies the options of the peer's SYN or SYN-ACK.
    fn negotiate(&mut self, syn: &Segment) {
        self.sack_ok = self.cfg.sack && syn.sack_permitted;
        // RFC 8985 §4: RACK-TLP needs SACK.
        self.rack_on = self.cfg.rack && self.sack_ok;
        // RFC 3168 §6.1.1: an ECN-setup SYN carries ECE and CWR, an
        // ECN-setup SYN-ACK ECE without CWR.
        let f = syn.flags;
        self.ecn_ok = self.cfg.ecn
            && f.contains(Flags::ECE)
            && f.contains(Flags::ACK) != f.contains(Flags::CWR);
        self.ts_ok = self.cfg.timestamps && syn.ts.is_some();
        match (self.cfg.window_scaling, syn.wscale) {
            (true, Some(s)) => self.snd_wscale = s.min(14),
            _ => {
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
            }
        }
        let peer_mss = syn.mss.unwrap_or(536) as u64;
        let opt = if self.ts_ok { TS_OPTION as u64 } else { 0 };
        self.smss = (peer_mss.min(self.cfg.mss as u64))
            .saturating_sub(opt)
            .max(1);
    }

    // ----- accessors -------------------------------------------------------

    pub fn state(&self) -> State {
        self.state
    }
    pub fn stats(&self) -> &TcpStats {
        &self.stats
    }
    pub fn controller_ref(&self) -> &Controller {
        &self.cc
    }
    /// Congestion window in bytes (without NewReno recovery inflation).
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    pub fn srtt(&self) -> Dur {
        self.rtt.srtt()
    }
    pub fn latest_rtt(&self) -> Dur {
        self.rtt.latest()
    }
    pub fn min_rtt(&self) -> Dur {
        self.rtt.min_rtt()
    }
    pub fn rto(&self) -> Dur {
        self.rtt.rto()
    }
    /// Whether the connection paces its transmissions.
    pub fn pacing(&self) -> bool {
        self.pacing
    }
    /// The current pacing rate in bytes per second, if pacing and known.
    pub fn pacing_rate(&self) -> Option<u64> {
        if !self.pacing {
            return None;
        }
        if let Some(r) = self.cc.pacing_rate() {
            return Some(r);
        }
        if !self.rtt.has_sample() {
            return None;
        }
        // Linux `tcp_update_pacing_rate`: 200 % of cwnd / SRTT in slow
        // start (cwnd < ssthresh / 2), 120 % after.
        let cwnd = self.cc.cwnd();
        let pct: u128 = if cwnd < self.cc.ssthresh() / 2 {
            200
        } else {
            120
        };
        let w = cwnd.max(self.outstanding()) as u128;
        let srtt = self.rtt.srtt().as_nanos().max(1) as u128;
        Some((w * pct * 10_000_000 / srtt).clamp(1, u64::MAX as u128) as u64)
    }
    /// Whether ECN was negotiated.
    pub fn ecn(&self) -> bool {
        self.ecn_ok
    }
    /// Payload bytes per full segment after negotiation.
    pub fn smss(&self) -> u64 {
        self.smss
    }
    pub fn local_port(&self) -> u16 {
        self.local_port
    }
    pub fn remote_port(&self) -> u16 {
        self.remote_port
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// Bytes sent and not yet cumulatively acknowledged (SND.NXT − SND.UNA).
    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// RFC 6675 pipe: the sender's estimate of bytes in the network.
    pub fn pipe(&self) -> u64 {
        self.board.pipe(self.outstanding())
    }
    /// Bytes the application may still write.
    pub fn send_space(&self) -> u64 {
        if self.fin_queued
            || !matches!(
                self.state,
                State::SynSent | State::SynReceived | State::Established | State::CloseWait
            )
        {
            return 0;
        }
        self.cfg.send_buffer.saturating_sub(self.sendbuf.len())
    }
    /// Written bytes not yet acknowledged.
    pub fn send_buffered(&self) -> u64 {
        self.sendbuf.len()
    }
    /// In-order bytes waiting for [`Connection::recv`].
    pub fn recv_ready(&self) -> u64 {
        self.rcv.ready_len()
    }
    /// Whether the peer has finished sending and everything was read.
    pub fn recv_finished(&self) -> bool {
        self.fin_received && self.rcv.ready_len() == 0
    }
    /// All written data (and FIN, if closing) has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.snd_una == self.snd_nxt && self.sendbuf.is_empty()
    }

    // ----- application side ------------------------------------------------

    /// Queues data; returns how many bytes were accepted (bounded by the send buffer).
    pub fn send(&mut self, mut data: Bytes) -> usize {
        let n = self.accept_len(data.len());
        data.truncate(n);
        self.sendbuf.push(data);
        n
    }

    /// How much of a write of `len` bytes the send buffer takes; a write it
    /// cuts short marks the connection write-blocked.
    fn accept_len(&mut self, len: usize) -> usize {
        let space = self.send_space() as usize;
        if len > space {
            self.write_blocked = true;
            return space;
        }
        len
    }

    /// Writes `src[range]` (as much as fits, like [`Connection::send`]).
    /// A write that continues the previous one in the same buffer (the
    /// range right after it) extends it, so that segments spanning the two
    /// are views of `src` rather than copies.
    pub fn send_slice(&mut self, src: &Bytes, range: std::ops::Range<usize>) -> usize {
        let n = self.accept_len(range.len());
        self.sendbuf.push_slice(src, range.start..range.start + n);
        n
    }

    /// Takes up to `max` bytes of in-order data. Reading frees receive
    /// buffer space and may open the window.
    pub fn recv(&mut self, max: usize) -> Option<Bytes> {
        let b = self.rcv.read(max)?;
        self.maybe_window_update();
        Some(b)
    }

    /// Reads and discards everything readable; returns the byte count.
    pub fn recv_discard(&mut self) -> u64 {
        let mut n = 0;
        while let Some(b) = self.rcv.read(usize::MAX) {
            n += b.len() as u64;
        }
        if n > 0 {
            self.maybe_window_update();
        }
        n
    }

    /// Graceful close: FIN goes out after the queued data.
    pub fn close(&mut self) {
        match self.state {
            State::SynSent => self.enter_closed(Event::Closed),
            State::SynReceived | State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Abortive close: send RST and forget the connection.
    pub fn abort(&mut self) {
        if self.state != State::Closed {
            self.rst_pending = self.state != State::SynSent;
            self.state = State::Closed;
            self.board.clear();
            self.rto_deadline = None;
            self.rack_reset_timers();
            self.ack.deadline = None;
            self.events.push_back(Event::Closed);
        }
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    // ----- time ------------------------------------------------------------

    fn ts_now(&self, now: Time) -> u32 {
        (now.as_nanos() / self.cfg.ts_tick.as_nanos().max(1)) as u32
    }

    fn ticks_to_dur(&self, ticks: u32) -> Dur {
        self.cfg.ts_tick * ticks as u64
    }

    /// The earliest time [`Connection::handle_timeout`] must be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut take = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        take(self.rto_deadline);
        take(self.ack.deadline);
        take(self.time_wait_deadline);
        // The pacing gate of a sub-segment window is a deadline only while
        // it lies ahead. Once it has opened at a `poll_transmit`, a segment
        // still waiting is held by something else (the peer's window, sender
        // SWS avoidance, Nagle) whose own ACK or persist timer frees it; a
        // past deadline here would never be consumed and would spin a driver.
        if self.sub_mss_pending() && self.sub_mss_next > self.last_now {
            take(Some(self.sub_mss_next));
        }
        // The pacing gate, on the same terms: only while a segment waits
        // for it and it lies ahead.
        if self.pacing_blocked && self.next_send > self.last_now {
            take(Some(self.next_send));
        }
        if self.rack_on {
            take(self.rack.reo_deadline);
            take(self.rack.pto_deadline);
        }
        t
    }

    fn sub_mss_pending(&self) -> bool {
        self.state.is_synchronized()
            && self.cc.cwnd() < self.smss
            && (self.has_unsent() || self.board.awaits_retransmission())
            && self.pipe() == 0
    }

    /// Processes every timer that has expired at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        if self.time_wait_deadline.is_some_and(|d| d <= now) {
            self.time_wait_deadline = None;
            self.enter_closed(Event::Closed);
            return;
        }
        if self.ack.deadline.is_some_and(|d| d <= now) {
            self.ack.deadline = None;
            self.ack.now = true;
        }
        if self.rack_on {
            // Before the RTO: a probe timer capped at the RTO's deadline
            // fires instead of it (RFC 8985 §7.2) and restarts it.
            self.rack_on_timers(now);
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.rto_deadline = None;
            self.on_rto(now);
        }
    }

    fn on_rto(&mut self, now: Time) {
        match self.state {
            State::SynSent | State::SynReceived => {
                if self.syn_retries_left == 0 {
                    self.enter_closed(Event::TimedOut);
                    return;
                }
                self.syn_retries_left -= 1;
                self.rtt.back_off();
                self.syn_pending = true;
                self.stats.timeouts += 1;
            }
            State::Closed | State::TimeWait => {}
            _ => {
                if self.outstanding() == 0 {
                    // Window probe timer (zero window, nothing outstanding): the next
                    // poll_transmit sends one byte past the window.
                    self.rtt.back_off();
                    self.force_probe = true;
                    return;
                }
                if self.rtt.backoff() >= 15 {
                    self.enter_closed(Event::TimedOut);
                    return;
                }
                self.stats.timeouts += 1;
                // As in enter_recovery: bytes believed in the network, not SND.NXT − SND.UNA.
                let in_flight = self.pipe();
                self.cc.on_timeout(now, in_flight);
                self.rtt.back_off();
                if self.rack_on {
                    self.rack_mark_losses_on_rto(now);
                } else {
                    self.board.mark_all_lost();
                }
                self.in_recovery = false;
                self.inflation = 0;
                self.dupacks = 0;
                self.force_retx = false;
                self.rto_recover = self.snd_nxt;
                // A timeout reduces the window too (RFC 3168 §6.1.2): no
                // ECN-Echo reduction for this window, and CWR on new data.
                self.ecn_recover = self.snd_nxt;
                self.cwr_pending = self.ecn_ok;
            }
        }
        let _ = now;
    }
}
