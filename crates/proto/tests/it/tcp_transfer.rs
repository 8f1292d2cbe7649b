//! End-to-end tests of the sans-IO TCP model over a tiny lossy pipe.
//!
//! The pipe is deliberately independent of the simulator crate: it proves
//! that two `Connection`s deliver exactly the bytes written, in order, under
//! loss, for every congestion controller and option combination.

use bytes::Bytes;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{reset_for, Connection, Ecn, Event, Flags, Segment, State, TcpConfig};
use hopwise_proto::time::{Dur, Time};
use std::collections::{BinaryHeap, VecDeque};

/// xorshift64*: a small deterministic generator for test losses and data.
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Arrival {
    at: std::cmp::Reverse<(Time, u64)>,
    to: usize,
    seg: SegBox,
}
struct SegBox(Segment);
impl PartialEq for SegBox {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for SegBox {}
impl PartialOrd for SegBox {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for SegBox {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

/// One direction of the pipe: a rate-limited FIFO with propagation delay and random loss.
pub(crate) struct Dir {
    pub(crate) rate_bps: u64,
    pub(crate) delay: Dur,
    pub(crate) loss: f64,
    pub(crate) busy_until: Time,
    pub(crate) queue_limit: usize,
    pub(crate) queued: VecDeque<Time>,
    /// Probability of marking an ECN-capable segment CE (RFC 3168 §5).
    pub(crate) mark: f64,
    /// Extra delay per packet, uniform in [0, jitter]: later packets can
    /// overtake earlier ones (reordering). Zero draws nothing from the RNG.
    pub(crate) jitter: Dur,
}

pub(crate) struct Pipe {
    pub(crate) now: Time,
    seq: u64,
    heap: BinaryHeap<Arrival>,
    pub(crate) dirs: [Dir; 2],
    pub(crate) rng: Rng,
    pub(crate) ends: [Option<Connection>; 2],
    /// Bytes each end has received.
    pub(crate) got: [Vec<u8>; 2],
    /// Bytes each end still has to write.
    pub(crate) to_write: [Bytes; 2],
    pub(crate) events: [Vec<Event>; 2],
    pub(crate) reader_paused_until: [Time; 2],
    /// Ends that keep the connection open once they have written everything.
    pub(crate) hold_open: [bool; 2],
    pub(crate) lost: u64,
    /// A's data segments (counted from 0, retransmissions included) to drop.
    pub(crate) drop_a_data: Vec<u64>,
    /// A's data segments (counted as for `drop_a_data`) to mark CE.
    pub(crate) mark_a_data: Vec<u64>,
    /// When A sent each data segment.
    pub(crate) a_data_sent: Vec<Time>,
    /// A's (in recovery, pipe, cwnd) after each time it was served.
    pub(crate) a_window: Vec<(bool, u64, u64)>,
}

impl Pipe {
    pub(crate) fn new(rate_bps: u64, one_way: Dur, loss: f64, seed: u64) -> Self {
        let d = || Dir {
            rate_bps,
            delay: one_way,
            loss,
            busy_until: Time::ZERO,
            queue_limit: 200,
            queued: VecDeque::new(),
            mark: 0.0,
            jitter: Dur::ZERO,
        };
        Pipe {
            now: Time::ZERO,
            seq: 0,
            heap: BinaryHeap::new(),
            dirs: [d(), d()],
            rng: Rng(seed | 1),
            ends: [None, None],
            got: [Vec::new(), Vec::new()],
            to_write: [Bytes::new(), Bytes::new()],
            events: [Vec::new(), Vec::new()],
            reader_paused_until: [Time::ZERO; 2],
            hold_open: [false; 2],
            lost: 0,
            drop_a_data: Vec::new(),
            mark_a_data: Vec::new(),
            a_data_sent: Vec::new(),
            a_window: Vec::new(),
        }
    }

    pub(crate) fn transmit(&mut self, from: usize, mut seg: Segment) {
        if from == 0 && !seg.payload.is_empty() {
            let i = self.a_data_sent.len() as u64;
            self.a_data_sent.push(self.now);
            if self.drop_a_data.contains(&i) {
                self.lost += 1;
                return;
            }
            if self.mark_a_data.contains(&i) && seg.ecn.capable() {
                seg.ecn = Ecn::Ce;
            }
        }
        let d = &mut self.dirs[from];
        while d.queued.front().is_some_and(|&t| t <= self.now) {
            d.queued.pop_front();
        }
        if d.queued.len() >= d.queue_limit {
            self.lost += 1;
            return;
        }
        let tx = Dur::from_nanos(seg.wire_len() as u64 * 8 * 1_000_000_000 / d.rate_bps);
        let start = d.busy_until.max(self.now);
        d.busy_until = start + tx;
        d.queued.push_back(d.busy_until);
        if self.rng.chance(d.loss) {
            self.lost += 1;
            return;
        }
        if d.mark > 0.0 && seg.ecn.capable() && self.rng.chance(d.mark) {
            seg.ecn = Ecn::Ce;
        }
        let mut at = d.busy_until + d.delay;
        if d.jitter > Dur::ZERO {
            let j = d.jitter.as_nanos();
            at += Dur::from_nanos(self.rng.next() % (j + 1));
        }
        self.seq += 1;
        self.heap.push(Arrival {
            at: std::cmp::Reverse((at, self.seq)),
            to: 1 - from,
            seg: SegBox(seg),
        });
    }

    /// Application work and output draining for end `i`.
    fn service(&mut self, i: usize) {
        let now = self.now;
        let Some(c) = self.ends[i].as_mut() else {
            return;
        };
        while let Some(ev) = c.poll_event() {
            self.events[i].push(ev);
        }
        if !self.to_write[i].is_empty() && c.state().is_synchronized() {
            let n = c.send(self.to_write[i].clone());
            let _ = self.to_write[i].split_to(n);
            if self.to_write[i].is_empty() && !self.hold_open[i] {
                c.close();
            }
        }
        if now >= self.reader_paused_until[i] {
            while let Some(b) = c.recv(usize::MAX) {
                self.got[i].extend_from_slice(&b);
            }
            if c.state() == State::CloseWait {
                c.close();
            }
        }
        let mut out = Vec::new();
        while let Some(s) = c.poll_transmit(now) {
            out.push(s);
        }
        while let Some(ev) = c.poll_event() {
            self.events[i].push(ev);
        }
        if i == 0 {
            self.a_window.push((c.in_recovery(), c.pipe(), c.cwnd()));
        }
        for s in out {
            self.transmit(i, s);
        }
    }

    fn next_timer(&self) -> Option<(Time, usize)> {
        let mut best: Option<(Time, usize)> = None;
        for i in 0..2 {
            if let Some(t) = self.ends[i].as_ref().and_then(|c| c.poll_timeout()) {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, i));
                }
            }
            if self.reader_paused_until[i] > self.now
                && best.is_none_or(|(b, _)| self.reader_paused_until[i] < b)
            {
                best = Some((self.reader_paused_until[i], i));
            }
        }
        best
    }

    /// Runs until both ends are closed or `limit` passes. Returns end time.
    pub(crate) fn run(&mut self, limit: Time) -> Time {
        self.service(0);
        self.service(1);
        loop {
            let arrival = self.heap.peek().map(|a| a.at.0 .0);
            let timer = self.next_timer();
            let next = match (arrival, timer) {
                (None, None) => break,
                (Some(a), Some((t, _))) => a.min(t),
                (Some(a), None) => a,
                (None, Some((t, _))) => t,
            };
            if next > limit {
                break;
            }
            self.now = next;
            if arrival == Some(next) {
                let a = self.heap.pop().unwrap();
                let to = a.to;
                match self.ends[to].as_mut() {
                    Some(c) if c.state() != State::Closed => c.handle_segment(self.now, a.seg.0),
                    _ => {
                        if let Some(r) = reset_for(&a.seg.0) {
                            self.transmit(to, r);
                        }
                    }
                }
                self.service(to);
            } else {
                for i in 0..2 {
                    if let Some(c) = self.ends[i].as_mut() {
                        if c.poll_timeout().is_some_and(|t| t <= self.now) {
                            c.handle_timeout(self.now);
                        }
                    }
                    self.service(i);
                }
            }
            // The sans-IO contract: once an end has been served, its next
            // deadline lies ahead (a deadline at or before `now` that
            // handle_timeout does not consume would spin a driver).
            for c in self.ends.iter().flatten() {
                if let Some(t) = c.poll_timeout() {
                    assert!(t > self.now, "deadline {t:?} not after now {:?}", self.now);
                }
            }
            let done = self.ends.iter().all(|c| {
                c.as_ref()
                    .is_none_or(|c| c.state() == State::Closed || c.state() == State::TimeWait)
            });
            if done && self.heap.is_empty() {
                break;
            }
        }
        self.now
    }
}

pub(crate) fn pattern(len: usize, seed: u64) -> Bytes {
    let mut r = Rng(seed | 1);
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        v.extend_from_slice(&r.next().to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

/// Connects two ends over `pipe` and transfers `a_to_b` and `b_to_a` bytes.
pub(crate) fn transfer(
    pipe: &mut Pipe,
    cfg: TcpConfig,
    cc: &CcConfig,
    a_to_b: usize,
    b_to_a: usize,
    limit_s: u64,
) {
    let mut client = Connection::connect(cfg.clone(), cc, 40_000, 80, 0xfff0_0000);
    // Drive the SYN out by hand so the server is created from it.
    let syn = client.poll_transmit(Time::ZERO).expect("SYN");
    let server = Connection::accept(cfg, cc, &syn, 0x7fff_fff0, Time::ZERO).expect("accepts SYN");
    pipe.ends = [Some(client), Some(server)];
    pipe.to_write = [pattern(a_to_b, 1), pattern(b_to_a, 2)];
    let expect = pipe.to_write.clone();
    pipe.transmit(0, syn);
    pipe.run(Time::ZERO + Dur::from_secs(limit_s));
    assert_eq!(pipe.got[1].len(), a_to_b, "B received all of A's bytes");
    assert!(pipe.got[1] == expect[0][..], "B received exactly A's bytes");
    assert_eq!(pipe.got[0].len(), b_to_a, "A received all of B's bytes");
    assert!(pipe.got[0] == expect[1][..], "A received exactly B's bytes");
}

pub(crate) fn all_ccs() -> Vec<CcConfig> {
    CcConfig::NAMES
        .iter()
        .map(|n| CcConfig::from_name(n).unwrap())
        .collect()
}

#[test]
fn clean_transfer_closes_both_ends() {
    let mut p = Pipe::new(10_000_000, Dur::from_millis(10), 0.0, 7);
    for d in &mut p.dirs {
        d.queue_limit = 100_000;
    }
    transfer(
        &mut p,
        TcpConfig::default(),
        &CcConfig::NewReno,
        2_000_000,
        0,
        60,
    );
    let a = p.ends[0].as_ref().unwrap();
    let b = p.ends[1].as_ref().unwrap();
    assert_eq!(
        a.state(),
        State::TimeWait,
        "active closer waits in TIME-WAIT"
    );
    assert_eq!(b.state(), State::Closed);
    assert_eq!(p.lost, 0);
    assert_eq!(a.stats().retransmits, 0, "no loss, no retransmission");
    assert!(p.events[0].contains(&Event::Connected) && p.events[1].contains(&Event::Connected));
    assert!(p.events[1].contains(&Event::PeerClosed));
    // 2 MB at 10 Mbit/s is 1.6 s; slow start and the handshake add a little.
    assert!(p.now < Time::ZERO + Dur::from_secs(4), "took {:?}", p.now);
}

#[test]
fn byte_exact_under_loss_for_every_controller() {
    for cc in all_ccs() {
        for (loss, sack, prr) in [
            (0.01, true, false),
            (0.10, true, false),
            (0.01, false, false),
            (0.10, false, false),
            (0.01, true, true),
            (0.10, true, true),
        ] {
            let mut p = Pipe::new(20_000_000, Dur::from_millis(5), loss, 11);
            let cfg = TcpConfig {
                sack,
                prr,
                ..TcpConfig::default()
            };
            let n = if loss > 0.05 { 300_000 } else { 1_000_000 };
            transfer(&mut p, cfg, &cc, n, n / 3, 3600);
            assert!(p.lost > 0, "{}: the pipe dropped something", cc.name());
            let st = p.ends[0].as_ref().unwrap().stats();
            assert!(
                st.retransmits > 0,
                "{} loss {loss} sack {sack}: retransmitted",
                cc.name()
            );
        }
    }
}

/// PRR (RFC 6937) spreads a SACK recovery's sends over its ACKs. RFC 6675
/// alone sets cwnd = ssthresh at once, and a sender whose pipe is twice that
/// falls silent until the pipe has drained to it.
#[test]
fn prr_keeps_sending_through_a_recovery() {
    const DROP: u64 = 300;
    let mut gaps = Vec::new();
    for prr in [false, true] {
        let mut p = Pipe::new(10_000_000, Dur::from_millis(20), 0.0, 5);
        for d in &mut p.dirs {
            d.queue_limit = 100_000;
        }
        // Three segments in a row, once, well after slow start began.
        p.drop_a_data = vec![DROP, DROP + 1, DROP + 2];
        let cfg = TcpConfig {
            prr,
            delayed_ack: false,
            ..TcpConfig::default()
        };
        transfer(&mut p, cfg, &CcConfig::NewReno, 4_000_000, 0, 120);
        let st = p.ends[0].as_ref().unwrap().stats();
        assert_eq!(
            (st.fast_recoveries, st.timeouts),
            (1, 0),
            "prr {prr}: one recovery, no timeout"
        );
        // The longest silence between two of A's data segments from just
        // before the losses to the end.
        let from = p.a_data_sent[DROP as usize - 100];
        let gap = p
            .a_data_sent
            .windows(2)
            .filter(|w| w[0] >= from)
            .map(|w| (w[1] - w[0]).as_nanos())
            .max()
            .unwrap();
        gaps.push(gap);
        // The reduction still happens: by the end of the recovery the pipe
        // is down to the new window.
        let last = p.a_window.iter().rev().find(|w| w.0).expect("recovered");
        assert!(
            last.1 <= last.2 + 2 * 1448,
            "prr {prr}: pipe {} at the end of recovery, cwnd {}",
            last.1,
            last.2
        );
    }
    // A full segment takes 1.2 ms at 10 Mbit/s; without delayed ACKs PRR
    // sends about one per two ACKs.
    assert!(gaps[1] < 5_000_000, "with PRR: {} ns", gaps[1]);
    assert!(
        gaps[0] > 20 * gaps[1],
        "without PRR the sender pauses: {} ns against {} ns",
        gaps[0],
        gaps[1]
    );
}

#[test]
fn byte_exact_with_pacing_and_ecn_for_every_controller() {
    for cc in all_ccs() {
        for (loss, mark) in [(0.0, 0.05), (0.02, 0.02)] {
            let mut p = Pipe::new(20_000_000, Dur::from_millis(5), loss, 17);
            for d in &mut p.dirs {
                d.mark = mark;
            }
            let cfg = TcpConfig {
                pacing: true,
                ecn: true,
                ..TcpConfig::default()
            };
            transfer(&mut p, cfg, &cc, 1_000_000, 300_000, 3600);
            let (a, b) = (p.ends[0].as_ref().unwrap(), p.ends[1].as_ref().unwrap());
            assert!(a.ecn() && b.ecn(), "{}: ECN negotiated", cc.name());
            assert!(b.stats().ce_received > 0, "{}: marks arrived", cc.name());
            if loss == 0.0 {
                assert_eq!(
                    a.stats().retransmits,
                    0,
                    "{}: marks are not losses",
                    cc.name()
                );
                if cc.name() != "bbr" {
                    assert!(
                        a.stats().ecn_reductions > 0,
                        "{}: the sender answered ECE",
                        cc.name()
                    );
                }
            }
        }
    }
}

/// A loss and CE marks on later segments of the same window are one
/// congestion event: the loss's reduction sets CWR on the next new data
/// (RFC 3168 §6.1.2: after a reduction for any reason), so the receiver
/// stops echoing the marks before recovery ends and the sender does not
/// reduce a second time. (A mark whose echo arrives before the loss is
/// detected still gives two reductions; Linux, already in CWR, gives one.)
#[test]
fn a_loss_and_later_marks_in_its_window_reduce_once() {
    for cc in [CcConfig::NewReno, CcConfig::from_name("cubic").unwrap()] {
        for mark in [65, 90] {
            let mut p = Pipe::new(20_000_000, Dur::from_millis(5), 0.0, 3);
            p.drop_a_data = vec![60];
            p.mark_a_data = vec![mark];
            let cfg = TcpConfig {
                ecn: true,
                ..TcpConfig::default()
            };
            transfer(&mut p, cfg, &cc, 1_000_000, 0, 60);
            let (a, b) = (p.ends[0].as_ref().unwrap(), p.ends[1].as_ref().unwrap());
            let name = cc.name();
            assert_eq!(b.stats().ce_received, 1, "{name} {mark}: the mark arrived");
            assert_eq!(a.stats().fast_recoveries, 1, "{name} {mark}");
            assert_eq!(
                a.stats().ecn_reductions,
                0,
                "{name} {mark}: the echo ended with the loss's CWR"
            );
        }
    }
}

/// ECN is negotiated only when both ends ask (RFC 3168 §6.1.1); without
/// it nothing is ECN-capable and marks cannot happen.
#[test]
fn ecn_needs_both_ends() {
    let on = TcpConfig {
        ecn: true,
        ..TcpConfig::default()
    };
    let mut client = Connection::connect(on.clone(), &CcConfig::NewReno, 1, 2, 7);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    assert!(syn.flags.contains(Flags::ECE) && syn.flags.contains(Flags::CWR));
    assert_eq!(syn.ecn, Ecn::NotEct, "no ECT on a SYN (RFC 3168 §6.1.1)");
    let mut server = Connection::accept(
        TcpConfig::default(),
        &CcConfig::NewReno,
        &syn,
        9,
        Time::ZERO,
    )
    .unwrap();
    let synack = server.poll_transmit(Time::ZERO).unwrap();
    assert!(
        !synack.flags.contains(Flags::ECE),
        "a non-ECN server does not agree"
    );
    client.handle_segment(Time::ZERO + Dur::from_millis(1), synack);
    assert!(!client.ecn() && !server.ecn());
    client.send(Bytes::from_static(&[1; 3000]));
    let data = client
        .poll_transmit(Time::ZERO + Dur::from_millis(1))
        .unwrap();
    assert_eq!(data.ecn, Ecn::NotEct);

    let mut client = Connection::connect(on.clone(), &CcConfig::NewReno, 1, 2, 7);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    let mut server = Connection::accept(on, &CcConfig::NewReno, &syn, 9, Time::ZERO).unwrap();
    let synack = server.poll_transmit(Time::ZERO).unwrap();
    assert!(synack.flags.contains(Flags::ECE) && !synack.flags.contains(Flags::CWR));
    client.handle_segment(Time::ZERO + Dur::from_millis(1), synack);
    assert!(client.ecn() && server.ecn());
    client.send(Bytes::from_static(&[1; 3000]));
    let data = client
        .poll_transmit(Time::ZERO + Dur::from_millis(1))
        .unwrap();
    assert_eq!(data.ecn, Ecn::Ect0, "new data is ECN-capable");
}

/// With pacing, a window's segments leave spread out rather than in
/// back-to-back bursts once the first RTT sample gives a rate.
#[test]
fn pacing_spreads_the_window() {
    let mut zero_gaps = Vec::new();
    for pacing in [false, true] {
        let mut p = Pipe::new(100_000_000, Dur::from_millis(20), 0.0, 5);
        for d in &mut p.dirs {
            d.queue_limit = 100_000;
        }
        let cfg = TcpConfig {
            pacing,
            ..TcpConfig::default()
        };
        transfer(
            &mut p,
            cfg,
            &CcConfig::Cubic(Default::default()),
            3_000_000,
            0,
            120,
        );
        // After the first round trip: segments sent at the same instant.
        let from = Time::ZERO + Dur::from_millis(100);
        let n = p
            .a_data_sent
            .windows(2)
            .filter(|w| w[0] >= from && w[1] == w[0])
            .count();
        zero_gaps.push(n);
    }
    assert!(zero_gaps[0] > 100, "unpaced bursts: {}", zero_gaps[0]);
    assert_eq!(zero_gaps[1], 0, "paced: no two segments at once");
}

#[test]
fn byte_exact_with_options_off() {
    for (ts, delack, nagle, ws) in [
        (false, false, false, false),
        (false, true, true, true),
        (true, false, true, false),
    ] {
        let cfg = TcpConfig {
            timestamps: ts,
            delayed_ack: delack,
            nagle,
            window_scaling: ws,
            recv_buffer: 256 << 10,
            ..TcpConfig::default()
        };
        let mut p = Pipe::new(50_000_000, Dur::from_millis(2), 0.02, 3);
        transfer(&mut p, cfg, &CcConfig::NewReno, 1_500_000, 700_000, 600);
    }
}

#[test]
fn slow_reader_exercises_zero_window() {
    let cfg = TcpConfig {
        recv_buffer: 20_000,
        window_scaling: false,
        ..TcpConfig::default()
    };
    let mut p = Pipe::new(10_000_000, Dur::from_millis(1), 0.0, 5);
    let mut client = Connection::connect(cfg.clone(), &CcConfig::NewReno, 1, 2, 1);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    let server = Connection::accept(cfg, &CcConfig::NewReno, &syn, 9, Time::ZERO).unwrap();
    p.ends = [Some(client), Some(server)];
    p.to_write = [pattern(300_000, 4), Bytes::new()];
    p.transmit(0, syn);
    // The reader sleeps for 300 ms at a time, so the window closes repeatedly.
    let mut t = Time::ZERO;
    while p.got[1].len() < 300_000 && t < Time::ZERO + Dur::from_secs(120) {
        p.reader_paused_until[1] = t + Dur::from_millis(300);
        t = p.run(t + Dur::from_millis(300));
        t = t.max(p.reader_paused_until[1]);
        p.now = t;
    }
    assert!(p.got[1] == pattern(300_000, 4)[..]);
}

#[test]
fn abort_resets_the_peer() {
    let cfg = TcpConfig::default();
    let mut p = Pipe::new(10_000_000, Dur::from_millis(5), 0.0, 9);
    let mut client = Connection::connect(cfg.clone(), &CcConfig::NewReno, 1, 2, 100);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    let server = Connection::accept(cfg, &CcConfig::NewReno, &syn, 200, Time::ZERO).unwrap();
    p.ends = [Some(client), Some(server)];
    p.to_write = [pattern(5_000_000, 1), Bytes::new()];
    p.transmit(0, syn);
    p.run(Time::ZERO + Dur::from_millis(300));
    p.ends[1].as_mut().unwrap().abort();
    p.service(1);
    p.run(Time::ZERO + Dur::from_secs(2));
    assert_eq!(p.ends[0].as_ref().unwrap().state(), State::Closed);
    assert!(
        p.events[0].contains(&Event::Reset),
        "events: {:?}",
        p.events[0]
    );
}

#[test]
fn rst_for_unknown_connection() {
    let syn = Connection::connect(TcpConfig::default(), &CcConfig::NewReno, 5, 6, 41)
        .poll_transmit(Time::ZERO)
        .unwrap();
    let r = reset_for(&syn).unwrap();
    assert!(r.flags.contains(hopwise_proto::tcp::Flags::RST));
    assert_eq!(r.ack, 42);
    assert!(reset_for(&r).is_none(), "never answer an RST with an RST");
}

#[test]
fn handshake_survives_lost_syn() {
    // 60 % loss: SYN and SYN-ACK retransmissions are needed.
    let mut p = Pipe::new(10_000_000, Dur::from_millis(5), 0.6, 21);
    transfer(
        &mut p,
        TcpConfig::default(),
        &CcConfig::NewReno,
        20_000,
        5_000,
        3600,
    );
}

/// A transfer of whole segments ends with a full segment that carries the
/// FIN (MSS + 1 of sequence space); lost and retransmitted after a timeout,
/// when cwnd is one segment, it must still go out.
#[test]
fn a_lost_full_final_segment_with_fin_is_retransmitted() {
    for seed in 1..=20 {
        let mut p = Pipe::new(10_000_000, Dur::from_millis(5), 0.10, seed);
        transfer(
            &mut p,
            TcpConfig::default(),
            &CcConfig::NewReno,
            1448 * 100,
            0,
            3600,
        );
    }
}

#[test]
fn a_window_below_one_segment_meets_a_zero_window_without_a_stale_deadline() {
    // Cross traffic keeps Nice's delay signal congested, so its window falls
    // below one segment; a 3 kB receive buffer and a reader that reads every
    // 20 s close the peer's window while the sender is paced one segment per
    // several round trips. The run's own check (every deadline after `now`
    // once an end has been served) catches the pacing deadline that used to
    // be left behind while the window was shut (6 s stale in this run).
    let cfg = TcpConfig {
        recv_buffer: 3_000,
        window_scaling: false,
        ..TcpConfig::default()
    };
    let cc = CcConfig::from_name("nice").unwrap();
    let mut p = Pipe::new(1_000_000, Dur::from_millis(20), 0.0, 3);
    let mut client = Connection::connect(cfg.clone(), &cc, 1, 2, 1);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    let server = Connection::accept(cfg, &CcConfig::NewReno, &syn, 9, Time::ZERO).unwrap();
    p.ends = [Some(client), Some(server)];
    let len = 30_000;
    p.to_write = [pattern(len, 8), Bytes::new()];
    p.transmit(0, syn);
    let mut t = Time::ZERO;
    for round in 0..4000 {
        if p.got[1].len() >= len {
            break;
        }
        // Cross traffic that outgrows the link (its queue grows by 50 ms
        // every 500 ms) keeps Nice's delay signal congested for 100 s; the
        // reader reads every 20 s.
        if round < 200 {
            let d = &mut p.dirs[0];
            d.busy_until = d.busy_until.max(t) + Dur::from_millis(550);
        }
        if round % 40 == 0 {
            p.reader_paused_until[1] = t + Dur::from_secs(20);
        }
        t += Dur::from_millis(500);
        p.run(t);
        p.now = t;
    }
    let smss = p.ends[0].as_ref().unwrap().smss();
    let below = p.a_window.iter().filter(|w| w.2 < smss).count();
    assert!(below > 0, "the sender never went below one segment");
    assert!(
        p.got[1] == pattern(len, 8)[..],
        "got {} of {len} bytes",
        p.got[1].len()
    );
}
