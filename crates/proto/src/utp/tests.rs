//! Two connections over a deterministic in-memory link with delay and loss.

use super::wire::{self, PacketType};
use super::*;
use crate::rng::Rng;
use crate::time::{Dur, Time};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Per packet (to_b, packet, now): `None` loses it, `Some(extra)` delivers
/// it `extra` later than the link delay.
type DropFn = Box<dyn FnMut(bool, &wire::Packet<'_>, Time) -> Option<Dur>>;

fn keep() -> DropFn {
    Box::new(|_, _, _| Some(Dur::ZERO))
}
fn lose_if(mut f: impl FnMut(bool, &wire::Packet<'_>, Time) -> bool + 'static) -> DropFn {
    Box::new(move |a, p, t| (!f(a, p, t)).then_some(Dur::ZERO))
}

/// `a` initiates; `b` is created from the first SYN that arrives.
struct Pair {
    cfg_b: Config,
    a: Socket,
    b: Option<Socket>,
    b_isn: u16,
    now: Time,
    delay: Dur,
    /// (arrival, order) → (to_b, datagram)
    wire: BTreeMap<(Time, u64), (bool, Vec<u8>)>,
    order: u64,
    /// Decides per packet (from_a, packet, index) whether it is lost.
    drop: DropFn,
    sent_from_a: u64,
    /// Every datagram sent, for inspection: (from_a, bytes).
    log: Vec<(bool, Vec<u8>)>,
    keep_log: bool,
}

impl Pair {
    fn new(cfg: Config, a_recv_id: u16, a_isn: u16, b_isn: u16) -> Pair {
        Pair {
            cfg_b: cfg.clone(),
            a: Socket::connect(&cfg, a_recv_id, a_isn),
            b: None,
            b_isn,
            now: Time::from_nanos(1_000_000_000),
            delay: Dur::from_millis(5),
            wire: BTreeMap::new(),
            order: 0,
            drop: keep(),
            sent_from_a: 0,
            log: Vec::new(),
            keep_log: false,
        }
    }

    fn b(&mut self) -> &mut Socket {
        self.b.as_mut().expect("connected")
    }

    fn flush(&mut self) {
        while let Some(d) = self.a.poll_transmit(self.now) {
            self.sent_from_a += 1;
            self.put(true, d);
        }
        if let Some(b) = self.b.as_mut() {
            let mut out = Vec::new();
            while let Some(d) = b.poll_transmit(self.now) {
                out.push(d);
            }
            for d in out {
                self.put(false, d);
            }
        }
    }

    fn put(&mut self, to_b: bool, d: Vec<u8>) {
        let p = wire::parse(&d).expect("we only send valid packets");
        self.order += 1;
        if self.keep_log {
            self.log.push((to_b, d.clone()));
        }
        if let Some(extra) = (self.drop)(to_b, &p, self.now) {
            self.wire
                .insert((self.now + self.delay + extra, self.order), (to_b, d));
        }
    }

    /// Advances to the next event; false when nothing is left to happen.
    fn step(&mut self) -> bool {
        self.flush();
        let mut next = self.wire.keys().next().map(|k| k.0);
        for t in [
            self.a.poll_timeout(),
            self.b.as_ref().and_then(|b| b.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        {
            next = Some(next.map_or(t, |n: Time| n.min(t)));
        }
        let Some(t) = next else { return false };
        self.now = self.now.max(t);
        while let Some((&k, _)) = self.wire.iter().next() {
            if k.0 > self.now {
                break;
            }
            let (to_b, d) = self.wire.remove(&k).unwrap();
            if to_b {
                match self.b.as_mut() {
                    Some(b) => b.handle_datagram(self.now, &d).unwrap(),
                    None => {
                        let p = wire::parse(&d).unwrap();
                        self.b = Socket::accept(&self.cfg_b, self.now, &p, self.b_isn);
                    }
                }
            } else {
                self.a.handle_datagram(self.now, &d).unwrap();
            }
        }
        if self.a.poll_timeout().is_some_and(|t| t <= self.now) {
            self.a.handle_timeout(self.now);
        }
        if let Some(b) = self.b.as_mut() {
            if b.poll_timeout().is_some_and(|t| t <= self.now) {
                b.handle_timeout(self.now);
            }
        }
        true
    }

    /// a sends `data` to b, b reads it all, both close. Returns what b read.
    fn transfer(&mut self, data: &[u8], max_steps: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut off = 0;
        let mut buf = vec![0u8; 64 * 1024];
        let mut closed_a = false;
        for _ in 0..max_steps {
            if off < data.len() {
                off += self.a.send(&data[off..]);
            } else if !closed_a {
                self.a.close();
                closed_a = true;
            }
            if let Some(b) = self.b.as_mut() {
                loop {
                    let n = b.recv(&mut buf);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                if b.peer_finished() {
                    b.close();
                }
            }
            if self.a.is_closed() && self.b.as_ref().is_some_and(|b| b.is_closed()) {
                break;
            }
            if !self.step() {
                break;
            }
        }
        got
    }
}

fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::from_seed(seed);
    (0..n).map(|_| r.next_u64() as u8).collect()
}

fn events(s: &mut Socket) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

#[test]
fn handshake_ids_and_sequence_numbers() {
    let mut p = Pair::new(Config::default(), 1000, 500, 7000);
    p.keep_log = true;
    while p.b.is_none() || p.a.state() == State::SynSent {
        assert!(p.step());
    }
    let pk: Vec<_> = p
        .log
        .iter()
        .map(|(a, d)| (*a, wire::parse(d).unwrap().header))
        .collect();
    let (from_a, syn) = pk[0];
    assert!(from_a);
    assert_eq!(syn.ty, PacketType::Syn);
    assert_eq!(syn.conn_id, 1000, "the SYN carries recv_id");
    assert_eq!(syn.seq_nr, 500);
    assert_eq!(syn.ack_nr, 0);
    let (from_a, st) = pk[1];
    assert!(!from_a);
    assert_eq!(st.ty, PacketType::State);
    assert_eq!(st.conn_id, 1000, "the acceptor sends on syn.conn_id");
    assert_eq!(st.ack_nr, 500);
    assert_eq!(st.seq_nr, 7000);
    assert_eq!(p.b().recv_id(), 1001);
    assert_eq!(p.b().send_id(), 1000);
    assert_eq!(events(&mut p.a), vec![Event::Connected]);
    // Data both ways: a's first DATA is seq 501 on conn id 1001; b's first
    // DATA is seq 7000 (the STATE did not consume it).
    p.a.send(b"hello");
    p.b().send(b"world");
    p.log.clear();
    p.flush();
    let pk: Vec<_> = p
        .log
        .iter()
        .map(|(a, d)| (*a, wire::parse(d).unwrap().header))
        .collect();
    let da = pk
        .iter()
        .find(|(a, h)| *a && h.ty == PacketType::Data)
        .unwrap()
        .1;
    assert_eq!((da.conn_id, da.seq_nr, da.ack_nr), (1001, 501, 6999));
    let db = pk
        .iter()
        .find(|(a, h)| !*a && h.ty == PacketType::Data)
        .unwrap()
        .1;
    assert_eq!((db.conn_id, db.seq_nr, db.ack_nr), (1000, 7000, 500));
    for _ in 0..10 {
        p.step();
    }
    let mut buf = [0u8; 16];
    assert_eq!(p.a.recv(&mut buf), 5);
    assert_eq!(&buf[..5], b"world");
    assert_eq!(p.b().recv(&mut buf), 5);
    assert_eq!(&buf[..5], b"hello");
}

#[test]
fn retransmitted_syn_is_answered_again() {
    let mut p = Pair::new(Config::default(), 9, 100, 200);
    // Lose b's first STATE: a resends the SYN after its RTO.
    let mut states = 0;
    p.drop = lose_if(move |to_b, pk, _| {
        if !to_b && pk.header.ty == PacketType::State {
            states += 1;
            return states == 1;
        }
        false
    });
    let mut n = 0;
    while p.a.state() == State::SynSent && n < 100 {
        p.step();
        n += 1;
    }
    assert_eq!(p.a.state(), State::Connected);
    assert!(p.a.stats().timeouts >= 1);
}

#[test]
fn clean_transfer_is_byte_exact_and_closes() {
    let data = pattern(1 << 20, 1);
    let mut p = Pair::new(Config::default(), 1, 2, 3);
    let got = p.transfer(&data, 1_000_000);
    assert_eq!(got.len(), data.len());
    assert!(got == data);
    assert_eq!(p.a.close_reason(), Some(CloseReason::Done));
    assert_eq!(p.b().close_reason(), Some(CloseReason::Done));
    assert_eq!(p.a.stats().resends, 0);
    assert_eq!(p.a.stats().bytes_acked, data.len() as u64);
}

#[test]
fn lossy_transfer_across_the_sequence_wrap() {
    let data = pattern(1 << 20, 2);
    // Both initial sequence numbers just below the wrap.
    let mut p = Pair::new(Config::default(), 65535, 65500, 65530);
    p.delay = Dur::from_millis(10);
    let mut rng = Rng::from_seed(7);
    p.drop = lose_if(move |_, _, _| rng.next_u64() % 100 < 2);
    let got = p.transfer(&data, 2_000_000);
    assert!(got == data, "got {} of {} bytes", got.len(), data.len());
    let s = p.a.stats();
    assert!(s.resends > 0 && s.fast_resends > 0, "{s:?}");
    assert!(
        s.packets_sent > 65536 - 65500,
        "the sequence numbers wrapped"
    );
    assert_eq!(p.a.close_reason(), Some(CloseReason::Done));
}

#[test]
fn one_lost_packet_is_fast_resent_without_timeout() {
    let data = pattern(200 * 1400, 3);
    let mut p = Pair::new(Config::default(), 5, 65000, 6);
    // Lose the 40th DATA packet a sends, once.
    let mut seen = 0;
    p.drop = lose_if(move |to_b, pk, _| {
        if to_b && pk.header.ty == PacketType::Data {
            seen += 1;
            return seen == 40;
        }
        false
    });
    let got = p.transfer(&data, 1_000_000);
    assert!(got == data);
    let s = p.a.stats();
    assert_eq!(s.fast_resends, 1, "{s:?}");
    assert_eq!(s.timeouts, 0, "{s:?}");
    assert!(p.b().stats().reordered > 0);
}

#[test]
fn a_silent_link_times_out_then_recovers() {
    let data = pattern(100 * 1400, 4);
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    // Everything a sends during 1.2 s, starting with its 20th datagram, is lost.
    let mut count = 0u64;
    let mut from: Option<Time> = None;
    p.drop = lose_if(move |to_b, _, now| {
        if to_b {
            count += 1;
            if count == 20 {
                from = Some(now);
            }
        }
        to_b && from.is_some_and(|f| now < f + Dur::from_millis(1200))
    });
    let got = p.transfer(&data, 1_000_000);
    assert!(got == data);
    let s = p.a.stats();
    assert!(s.timeouts >= 1, "{s:?}");
    assert!(s.rto >= Dur::from_millis(500));
}

#[test]
fn reordering_is_repaired_and_sacked() {
    let data = pattern(300 * 1400, 5);
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    p.keep_log = true;
    // Every 7th DATA packet from a arrives 30 ms later than the others.
    let mut k = 0u64;
    p.drop = Box::new(move |to_b, pk, _| {
        if to_b && pk.header.ty == PacketType::Data {
            k += 1;
            if k % 7 == 3 {
                return Some(Dur::from_millis(30));
            }
        }
        Some(Dur::ZERO)
    });
    let got = p.transfer(&data, 1_000_000);
    assert!(got == data);
    assert!(p.b().stats().reordered > 0);
    let sacks = p
        .log
        .iter()
        .filter(|(to_b, d)| !*to_b && wire::parse(d).unwrap().sack.is_some())
        .count();
    assert!(sacks > 0, "the receiver sent selective acks");
}

#[test]
fn reset_closes_the_peer() {
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    while p.a.state() != State::Connected {
        p.step();
    }
    for _ in 0..5 {
        p.step();
    }
    p.b().abort();
    for _ in 0..5 {
        p.step();
    }
    assert_eq!(p.a.close_reason(), Some(CloseReason::Reset));
    assert!(events(&mut p.a).contains(&Event::Reset));
}

#[test]
fn zero_window_is_probed_and_reopens() {
    let cfg = Config {
        recv_buffer: 8 * 1400,
        ..Config::default()
    };
    let data = pattern(40 * 1400, 6);
    let mut p = Pair::new(cfg, 5, 65530, 6);
    // b does not read for a while: a fills the window and stalls.
    for _ in 0..2000 {
        p.a.send(&data[..p.a.send_space().min(data.len())]);
        if !p.step() || p.now > Time::from_nanos(20_000_000_000) {
            break;
        }
    }
    let b = p.b.as_ref().unwrap();
    assert_eq!(b.recv_ready(), 8 * 1400, "b holds exactly its window");
    assert_eq!(p.a.peer_window(), 0);
    assert!(p.a.stats().window_probes > 0, "{:?}", p.a.stats());
    assert!(
        p.a.state() == State::Connected,
        "probes keep the connection alive"
    );
    // Now b reads; the window reopens and the rest flows.
    let mut p2 = p;
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    for _ in 0..100_000 {
        if let Some(b) = p2.b.as_mut() {
            got += b.recv(&mut buf);
        }
        if p2.a.send_buffered() == 0 || !p2.step() {
            break;
        }
    }
    assert!(got > 8 * 1400);
    assert_eq!(p2.a.send_buffered(), 0);
}

#[test]
fn echoed_timestamp_difference_is_exact_and_wraps() {
    let cfg = Config::default();
    let mut a = Socket::connect(&cfg, 1, 1);
    let syn = a.poll_transmit(Time::from_nanos(5_000)).unwrap();
    let mut syn = syn.clone();
    // The SYN claims a timestamp in our future: the difference wraps.
    syn[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    let p = wire::parse(&syn).unwrap();
    let now = Time::from_nanos(10_000_000_000); // 10 s = 10 000 000 µs
    let mut b = Socket::accept(&cfg, now, &p, 77).unwrap();
    let st = b.poll_transmit(now).unwrap();
    let h = wire::parse(&st).unwrap().header;
    assert_eq!(h.timestamp_diff_us, 10_000_000u32.wrapping_sub(u32::MAX));
    assert_eq!(h.timestamp_us, 10_000_000);
}

#[test]
fn impossible_acks_are_ignored() {
    let cfg = Config::default();
    let mut p = Pair::new(cfg, 5, 1, 6);
    while p.a.state() != State::Connected {
        p.step();
    }
    let before = p.a.stats();
    // An ack of a packet never sent.
    let h = wire::Header {
        ty: PacketType::State,
        conn_id: 5,
        timestamp_us: 1,
        timestamp_diff_us: 1,
        wnd_size: 0,
        seq_nr: 6,
        ack_nr: 400,
    };
    let mut d = Vec::new();
    wire::write(&h, &[], &[], &mut d);
    p.a.handle_datagram(p.now, &d).unwrap();
    assert_eq!(p.a.stats().invalid, before.invalid + 1);
    assert_eq!(
        p.a.peer_window(),
        before.peer_window,
        "nothing was taken from it"
    );
}

#[test]
fn listener_demultiplexes_and_resets_strays() {
    let cfg = Config {
        max_connections: 3,
        ..Config::default()
    };
    let mut server: Listener<u32> = Listener::new(cfg.clone(), 1);
    let mut client: Listener<u32> = Listener::new(cfg, 2);
    let now = Time::from_nanos(1_000_000);
    let ids: Vec<ConnId> = (0..3).map(|_| client.connect(0).unwrap()).collect();
    assert!(client.connect(0).is_none(), "bounded");
    while let Some((to, d)) = client.poll_transmit(now) {
        assert_eq!(to, 0);
        server.handle_datagram(now, 9, &d).unwrap();
    }
    assert_eq!(server.connection_count(), 3);
    let accepted: Vec<_> = std::iter::from_fn(|| server.poll_accept()).collect();
    assert_eq!(accepted.len(), 3);
    while let Some((to, d)) = server.poll_transmit(now) {
        assert_eq!(to, 9);
        client.handle_datagram(now, 0, &d).unwrap();
    }
    for id in &ids {
        assert_eq!(client.socket(*id).unwrap().state(), State::Connected);
    }
    // A fourth SYN from elsewhere is refused.
    let mut other: Listener<u32> = Listener::new(Config::default(), 3);
    other.connect(0).unwrap();
    let (_, syn) = other.poll_transmit(now).unwrap();
    server.handle_datagram(now, 10, &syn).unwrap();
    assert_eq!(server.stats().refused, 1);
    // A DATA packet for no connection gets a RESET.
    let h = wire::Header {
        ty: PacketType::Data,
        conn_id: 4242,
        timestamp_us: 0,
        timestamp_diff_us: 0,
        wnd_size: 0,
        seq_nr: 17,
        ack_nr: 0,
    };
    let mut d = Vec::new();
    wire::write(&h, &[], b"x", &mut d);
    server.handle_datagram(now, 11, &d).unwrap();
    let (to, r) = server.poll_transmit(now).unwrap();
    assert_eq!(to, 11);
    let r = wire::parse(&r).unwrap().header;
    assert_eq!((r.ty, r.conn_id, r.ack_nr), (PacketType::Reset, 4242, 17));
    // Garbage is counted.
    assert!(server.handle_datagram(now, 11, &[1, 2, 3]).is_err());
    assert_eq!(server.stats().bad_datagrams, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A listener with live connections, fed arbitrary datagrams (some with
    /// a valid header for a live connection), never panics and keeps its
    /// buffers within the configured bounds.
    #[test]
    fn listener_fed_garbage_stays_bounded(
        dgs in proptest::collection::vec(
            (any::<bool>(), any::<u8>(), any::<u16>(), any::<u16>(), any::<u32>(),
             proptest::collection::vec(any::<u8>(), 0..60), 0u64..300_000), 0..200)
    ) {
        let cfg = Config { recv_buffer: 16 * 1400, send_buffer: 16 * 1400, max_connections: 8, ..Config::default() };
        let mut l: Listener<u8> = Listener::new(cfg.clone(), 9);
        let mut now = Time::from_nanos(1);
        let c = l.connect(1).unwrap();
        let recv_id = l.socket(c).unwrap().recv_id();
        for (valid, ty, seq, ack, wnd, body, dt) in dgs {
            now += Dur::from_micros(dt);
            let d = if valid {
                let h = wire::Header {
                    ty: PacketType::from_nibble(ty % 5).unwrap(),
                    conn_id: if ty & 0x80 != 0 { recv_id } else { seq },
                    timestamp_us: wnd.rotate_left(7),
                    timestamp_diff_us: wnd,
                    wnd_size: wnd % 100_000,
                    seq_nr: seq,
                    ack_nr: ack,
                };
                let mut d = Vec::new();
                let sack = if ty & 0x40 != 0 { &body[..body.len().min(8)] } else { &[][..] };
                wire::write(&h, sack, &body, &mut d);
                d
            } else {
                body
            };
            let _ = l.handle_datagram(now, ty % 3, &d);
            if let Some(s) = l.socket_mut(c) {
                s.send(&[7u8; 3000]);
                let mut buf = [0u8; 512];
                s.recv(&mut buf);
            }
            if l.poll_timeout().is_some_and(|t| t <= now) {
                l.handle_timeout(now);
            }
            let mut n = 0;
            while let Some((_, out)) = l.poll_transmit(now) {
                prop_assert!(wire::parse(&out).is_ok());
                n += 1;
                prop_assert!(n < 10_000);
            }
            while l.poll_event().is_some() {}
            prop_assert!(l.connection_count() <= cfg.max_connections);
            for id in l.ids().collect::<Vec<_>>() {
                let (_, bytes) = l.socket(id).unwrap().buffered();
                prop_assert!(bytes <= cfg.recv_buffer + cfg.send_buffer);
            }
        }
    }
}

#[test]
fn drained_at_marks_the_ack_of_the_last_byte_sent() {
    let data = pattern(200_000, 7);
    let mut p = Pair::new(Config::default(), 1, 2, 3);
    assert_eq!(p.a.drained_at(), None);
    let mut off = 0;
    let mut all_received_at = None;
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..100_000 {
        if off < data.len() {
            off += p.a.send(&data[off..]);
            assert_eq!(p.a.drained_at(), None, "unacknowledged bytes are buffered");
        }
        if let Some(b) = p.b.as_mut() {
            while b.recv(&mut buf) > 0 {}
            if all_received_at.is_none() && b.stats().bytes_received == data.len() as u64 {
                all_received_at = Some(p.now);
            }
        }
        if p.a.drained_at().is_some() || !p.step() {
            break;
        }
    }
    let received = all_received_at.expect("b received everything");
    let drained = p.a.drained_at().expect("everything was acknowledged");
    // The ack of the last byte left b no earlier than b had it, and needs
    // the path's delay back to a.
    assert!(drained >= received + p.delay, "{drained:?} vs {received:?}");
    assert_eq!(p.a.send_buffered(), 0);
    // More data: not drained again until that is acknowledged too.
    assert_eq!(p.a.send(b"more"), 4);
    assert_eq!(p.a.drained_at(), None);
}

/// Steps `p` until `now` reaches `until` (or nothing is left to happen).
fn run_until(p: &mut Pair, until: Time) {
    while p.now < until {
        if !p.step() {
            break;
        }
    }
}

#[test]
fn idle_connection_sends_keepalives_and_stays_open() {
    let cfg = Config::default();
    let mut p = Pair::new(cfg.clone(), 5, 1, 6);
    while p.a.state() != State::Connected {
        p.step();
    }
    p.a.send(b"x");
    for _ in 0..10 {
        p.step();
    }
    p.keep_log = true;
    let start = p.now;
    // Five minutes without application data: only keep-alives flow.
    run_until(&mut p, start + Dur::from_secs(300));
    assert_eq!(p.a.state(), State::Connected);
    assert_eq!(p.b().state(), State::Connected);
    let from_a: Vec<_> = p
        .log
        .iter()
        .filter(|(to_b, _)| *to_b)
        .map(|(_, d)| wire::parse(d).unwrap().header)
        .collect();
    assert!(from_a.iter().all(|h| h.ty == PacketType::State));
    // One every 29 s, give or take the first.
    assert!((9..=11).contains(&from_a.len()), "{}", from_a.len());
}

#[test]
fn silent_peer_times_out_and_is_reaped() {
    let cfg = Config::default();
    let mut p = Pair::new(cfg.clone(), 5, 1, 6);
    while p.a.state() != State::Connected {
        p.step();
    }
    // a's FIN is acknowledged, then b falls silent for good (it never
    // sends its FIN): a has nothing outstanding.
    p.a.close();
    for _ in 0..10 {
        p.step();
    }
    assert!(p.a.fin_acked());
    let silent_from = p.now;
    p.drop = lose_if(|to_b, _, _| !to_b);
    run_until(&mut p, silent_from + cfg.idle_timeout + Dur::from_secs(1));
    assert_eq!(p.a.close_reason(), Some(CloseReason::TimedOut));
    assert!(events(&mut p.a).contains(&Event::TimedOut));
    assert_eq!(p.a.poll_timeout(), None, "a closed socket has no timer");
}

#[test]
fn spoofed_syn_is_dropped_after_the_accept_timeout() {
    let cfg = Config::default();
    let mut server: Listener<u32> = Listener::new(cfg.clone(), 1);
    let mut client = Socket::connect(&cfg, 77, 1);
    let mut now = Time::from_nanos(1_000_000_000);
    let syn = client.poll_transmit(now).unwrap();
    server.handle_datagram(now, 9, &syn).unwrap();
    let id = server.poll_accept().unwrap();
    // Its STATE reply goes nowhere; nothing else arrives.
    while server.poll_transmit(now).is_some() {}
    server.release(id);
    assert_eq!(server.connection_count(), 1);
    let t = server.poll_timeout().expect("the accept timeout is armed");
    assert!(t <= now + cfg.accept_timeout);
    for _ in 0..10 {
        let Some(t) = server.poll_timeout() else {
            break;
        };
        now = t;
        server.handle_timeout(now);
        while server.poll_transmit(now).is_some() {}
    }
    assert_eq!(server.connection_count(), 0, "closed and reaped");
    assert!(now <= Time::from_nanos(1_000_000_000) + cfg.accept_timeout);
}

#[test]
fn fin_behind_ack_nr_is_ignored() {
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    while p.a.state() != State::Connected {
        p.step();
    }
    p.a.send(b"hello");
    for _ in 0..4 {
        p.step();
    }
    let b_ack = p.b().stats().bytes_received;
    assert_eq!(b_ack, 5);
    // A FIN carrying the sequence number of the DATA b already has.
    let h = wire::Header {
        ty: PacketType::Fin,
        conn_id: p.b().recv_id(),
        timestamp_us: 1,
        timestamp_diff_us: 0,
        wnd_size: 1 << 20,
        seq_nr: 2,
        ack_nr: 5,
    };
    let mut d = Vec::new();
    wire::write(&h, &[], &[], &mut d);
    let dups = p.b().stats().duplicates;
    let now = p.now;
    p.b().handle_datagram(now, &d).unwrap();
    assert_eq!(p.b().stats().duplicates, dups + 1);
    p.a.send(b"world");
    for _ in 0..4 {
        p.step();
    }
    let mut buf = [0u8; 16];
    assert_eq!(p.b().recv(&mut buf), 10);
    assert_eq!(&buf[..10], b"helloworld");
    assert!(!p.b().peer_finished());
}

#[test]
fn reset_from_a_peer_that_forgot_the_connection_closes_it() {
    let cfg = Config::default();
    let mut a: Listener<u32> = Listener::new(cfg.clone(), 1);
    let mut b: Listener<u32> = Listener::new(cfg.clone(), 2);
    let now = Time::from_nanos(1_000_000_000);
    let id = a.connect(2).unwrap();
    for _ in 0..3 {
        while let Some((_, d)) = a.poll_transmit(now) {
            b.handle_datagram(now, 1, &d).unwrap();
        }
        while let Some((_, d)) = b.poll_transmit(now) {
            a.handle_datagram(now, 2, &d).unwrap();
        }
    }
    assert_eq!(a.socket(id).unwrap().state(), State::Connected);
    assert_eq!(b.connection_count(), 1);
    // b restarts on the same address and knows nothing of the connection.
    let mut b: Listener<u32> = Listener::new(cfg, 3);
    a.socket_mut(id).unwrap().send(b"hello");
    while let Some((_, d)) = a.poll_transmit(now) {
        b.handle_datagram(now, 1, &d).unwrap();
    }
    let (to, r) = b.poll_transmit(now).expect("a RESET for the stray");
    assert_eq!(to, 1);
    assert_eq!(wire::parse(&r).unwrap().header.ty, PacketType::Reset);
    a.handle_datagram(now, 2, &r).unwrap();
    assert_eq!(
        a.socket(id).unwrap().close_reason(),
        Some(CloseReason::Reset)
    );
    assert_eq!(a.stats().unknown, 0);
}

/// A connected pair with one DATA packet of a in flight that b never got;
/// returns b's STATE packets acking a's SYN, with window `wnd` each.
fn one_in_flight() -> (Pair, impl Fn(u32) -> Vec<u8>) {
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    while p.a.state() != State::Connected || p.b.is_none() {
        p.step();
    }
    for _ in 0..4 {
        p.step();
    }
    p.a.send(&[1u8; 4000]);
    let now = p.now;
    let n = std::iter::from_fn(|| p.a.poll_transmit(now)).count();
    assert!(n >= 1);
    let state = |wnd: u32| {
        let h = wire::Header {
            ty: PacketType::State,
            conn_id: 5,
            timestamp_us: 1,
            timestamp_diff_us: 0,
            wnd_size: wnd,
            seq_nr: 6,
            ack_nr: 1,
        };
        let mut d = Vec::new();
        wire::write(&h, &[], &[], &mut d);
        d
    };
    (p, state)
}

#[test]
fn three_duplicate_acks_without_sack_fast_resend() {
    let (mut p, state) = one_in_flight();
    let now = p.now;
    // The window shrinks as b buffers what arrived after the hole.
    let wnd = p.a.peer_window();
    for k in 0..3 {
        p.a.handle_datagram(now, &state(wnd - k * 1400)).unwrap();
    }
    let s = p.a.stats();
    assert_eq!((s.dup_acks, s.fast_resends, s.timeouts), (3, 1, 0), "{s:?}");
    let d = p.a.poll_transmit(now).expect("the fast resend");
    let h = wire::parse(&d).unwrap().header;
    assert_eq!((h.ty, h.seq_nr), (PacketType::Data, 2));
}

#[test]
fn window_updates_are_not_duplicate_acks() {
    let (mut p, state) = one_in_flight();
    let now = p.now;
    let cwnd = p.a.cwnd();
    // Each opens the window: window updates (e.g. a reopening window).
    for wnd in [2 << 20, 3 << 20, 4 << 20, 5 << 20] {
        p.a.handle_datagram(now, &state(wnd)).unwrap();
    }
    // The same window, too small for the packet in flight: the receiver
    // dropped DATA beyond its window.
    for _ in 0..4 {
        p.a.handle_datagram(now, &state(100)).unwrap();
    }
    let s = p.a.stats();
    assert_eq!((s.dup_acks, s.fast_resends), (0, 0), "{s:?}");
    assert_eq!(p.a.cwnd(), cwnd, "no loss, no cut");
}

/// A hole followed by `k` packets b selectively acknowledged: whether a
/// resends the hole at once.
fn sack_resends_after(k: usize) -> u64 {
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    let data = pattern(200 * 1400, 9);
    let mut off = 0;
    let mut buf = vec![0u8; 1 << 16];
    // A clean transfer grows the window; then a is idle.
    for _ in 0..100_000 {
        if off < data.len() {
            off += p.a.send(&data[off..]);
        }
        if let Some(b) = p.b.as_mut() {
            while b.recv(&mut buf) > 0 {}
        }
        if off == data.len() && p.a.send_buffered() == 0 {
            break;
        }
        p.step();
    }
    assert!(p.a.cwnd() >= 8 * 1400, "cwnd {}", p.a.cwnd());
    // Ten packets go out and nothing reaches b.
    p.drop = lose_if(|to_b, _, _| to_b);
    p.keep_log = true;
    p.a.send(&[3u8; 10 * 1400]);
    p.flush();
    let seqs: Vec<u16> = p
        .log
        .iter()
        .filter(|(to_b, _)| *to_b)
        .map(|(_, d)| wire::parse(d).unwrap().header)
        .filter(|h| h.ty == PacketType::Data)
        .map(|h| h.seq_nr)
        .collect();
    assert!(seqs.len() >= 8, "{seqs:?}");
    let hole = seqs[0];
    // Bit i stands for hole + 1 + i.
    let mut mask = vec![0u8; 4];
    for i in 0..k {
        mask[i / 8] |= 1 << (i % 8);
    }
    let h = wire::Header {
        ty: PacketType::State,
        conn_id: 5,
        timestamp_us: 1,
        timestamp_diff_us: 0,
        wnd_size: p.a.peer_window(),
        seq_nr: 6,
        ack_nr: hole.wrapping_sub(1),
    };
    let mut d = Vec::new();
    wire::write(&h, &mask, &[], &mut d);
    let before = p.a.stats().fast_resends;
    let now = p.now;
    p.a.handle_datagram(now, &d).unwrap();
    p.a.stats().fast_resends - before
}

#[test]
fn sack_resends_a_hole_only_after_four_sacked_packets() {
    assert_eq!(sack_resends_after(3), 0, "libtorrent: dups > dup_ack_limit");
    assert_eq!(sack_resends_after(4), 1);
}

#[test]
fn echoed_timestamp_difference_reaches_ledbat_unwrapped() {
    let mut p = Pair::new(Config::default(), 5, 1, 6);
    while p.a.state() != State::Connected || p.b.is_none() {
        p.step();
    }
    for _ in 0..4 {
        p.step();
    }
    let ack = |p: &mut Pair, ack_nr: u16, diff: u32| {
        let now = p.now;
        p.a.send(b"x");
        assert!(p.a.poll_transmit(now).is_some());
        let h = wire::Header {
            ty: PacketType::State,
            conn_id: 5,
            timestamp_us: 1,
            timestamp_diff_us: diff,
            wnd_size: 1 << 20,
            seq_nr: 6,
            ack_nr,
        };
        let mut d = Vec::new();
        wire::write(&h, &[], &[], &mut d);
        p.a.handle_datagram(now, &d).unwrap();
        p.a.last_owd.expect("a sample reached the controller")
    };
    // b's echoes so far were the link delay, 5000 µs, unwrapped to
    // 2^32 + 5000. Now −50 (just below the 32-bit wrap): a step of −5050 µs,
    // not +71 minutes; then 100 µs more, across the wrap again.
    let first = ack(&mut p, 2, u32::MAX - 49);
    assert_eq!(first, Dur::from_micros((1u64 << 32) - 50));
    let second = ack(&mut p, 3, 50);
    assert_eq!(second, first + Dur::from_micros(100));
}
