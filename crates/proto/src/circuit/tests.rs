//! Nodes wired together by a tiny lossy network (no crypto): circuit setup
//! and teardown, streams in both directions, half-close, reset, refusal and
//! control-message loss.

use super::cell::EndReason;
use super::control::CtlMsg;
use super::*;
use crate::backtap::{CircuitId, Direction};
use crate::time::{Dur, Time};
use std::collections::{BTreeMap, VecDeque};

const RELAYS: usize = 3;
const CLIENT: usize = RELAYS;

struct Net {
    nodes: Vec<Node>,
    keys: Vec<Identity>,
    /// (deliver at, from node, to node, frame)
    wire: VecDeque<(Time, usize, usize, Vec<u8>)>,
    now: Time,
    loss: f64,
    rng: u64,
    dropped: u64,
    events: Vec<Vec<NodeEvent>>,
    /// Exit application: echo streams (data read and not yet written back).
    echo: BTreeMap<StreamKey, (Vec<u8>, bool)>,
    down: Vec<(usize, usize)>,
    /// Directions whose BackTap cells are lost (feedback still passes).
    no_cells: Vec<(usize, usize)>,
    /// Directions where the next BackTap cell gets one bit of its body
    /// flipped (a relay tampering with what it forwards); each flips once.
    tamper: Vec<(usize, usize)>,
    /// Every control frame sent: (from, to, frame).
    ctl_log: Vec<(usize, usize, Vec<u8>)>,
}

fn secret(i: usize) -> [u8; 32] {
    let mut k = [0u8; 32];
    k[0] = 0x10 * (i as u8 + 1);
    k[31] = i as u8;
    k
}

fn key(i: usize) -> Identity {
    onion::public_key(&secret(i))
}

impl Net {
    fn new(exit: &[bool], loss: f64) -> Net {
        Net::with_cfg(exit, loss, |_, _| {})
    }

    /// As [`Net::new`], with `tweak(node, cfg)` applied to each node's config.
    fn with_cfg(exit: &[bool], loss: f64, tweak: impl Fn(usize, &mut NodeConfig)) -> Net {
        let keys: Vec<Identity> = (0..=RELAYS).map(key).collect();
        let dir: Vec<Identity> = keys[..RELAYS].to_vec();
        let mut nodes = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let mut cfg = NodeConfig::new(*k, secret(i), dir.clone());
            cfg.exit = i < RELAYS && exit[i];
            cfg.stream_window = 64 * 1024;
            cfg.stream_send_buffer = 16 * 1024;
            cfg.build_timeout = Dur::from_secs(5);
            tweak(i, &mut cfg);
            nodes.push(Node::new(
                cfg,
                Box::new(onion::SeededKeys::new(i as u64 + 1)),
            ));
        }
        let mut net = Net {
            nodes,
            keys,
            wire: VecDeque::new(),
            now: Time::ZERO,
            loss,
            rng: 0x9E37_79B9_7F4A_7C15,
            dropped: 0,
            events: vec![Vec::new(); RELAYS + 1],
            echo: BTreeMap::new(),
            down: Vec::new(),
            no_cells: Vec::new(),
            tamper: Vec::new(),
            ctl_log: Vec::new(),
        };
        // Links are authenticated before frames flow.
        for a in 0..=RELAYS {
            for b in 0..=RELAYS {
                if a != b {
                    let l = net.link_id(b);
                    let k = net.keys[b];
                    net.nodes[a].link_up(l, k);
                }
            }
        }
        net
    }

    /// The link id node `to` is known by at any other node.
    fn link_id(&self, to: usize) -> LinkId {
        LinkId(to as u32)
    }

    fn rand(&mut self) -> f64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    fn flush(&mut self) {
        for a in 0..self.nodes.len() {
            while let Some((l, f)) = self.nodes[a].poll_frame(self.now) {
                let b = l.0 as usize;
                if self.down.contains(&(a, b)) || self.rand() < self.loss {
                    self.dropped += 1;
                    continue;
                }
                if f[0] == control::FRAME_CTL {
                    self.ctl_log.push((a, b, f.clone()));
                }
                let mut f = f;
                if let Some(i) = self.tamper.iter().position(|&x| x == (a, b)) {
                    if let Some(off) = first_cell_body(&f) {
                        f[off + 100] ^= 0x04;
                        self.tamper.remove(i);
                    }
                }
                let f = if self.no_cells.contains(&(a, b)) && f[0] == control::FRAME_BACKTAP {
                    use crate::backtap::wire;
                    let d = wire::decode(&f).expect("a node's own datagram");
                    let fb: Vec<wire::Item> = d
                        .items()
                        .filter(|i| matches!(i, wire::Item::Feedback(_)))
                        .collect();
                    if fb.is_empty() {
                        continue;
                    }
                    wire::encode(&fb)
                } else {
                    f
                };
                self.wire
                    .push_back((self.now + Dur::from_millis(1), a, b, f));
            }
            while let Some(e) = self.nodes[a].poll_event() {
                self.events[a].push(e);
            }
        }
        self.run_echo();
    }

    fn run_echo(&mut self) {
        let exits: Vec<usize> = (0..RELAYS).collect();
        for x in exits {
            let evs: Vec<NodeEvent> = std::mem::take(&mut self.events[x]);
            for e in evs {
                match e {
                    NodeEvent::StreamBegin { stream, port, .. } => {
                        if port == 1 {
                            self.nodes[x]
                                .stream_refuse(self.now, stream, EndReason::ConnectRefused)
                                .unwrap();
                        } else {
                            self.nodes[x].stream_connected(self.now, stream).unwrap();
                            self.echo.insert(stream, (Vec::new(), false));
                        }
                    }
                    NodeEvent::StreamReset { stream, .. } => {
                        self.echo.remove(&stream);
                    }
                    _ => {}
                }
            }
            let keys: Vec<StreamKey> = self.echo.keys().copied().collect();
            for k in keys {
                let node = &mut self.nodes[x];
                let mut buf = [0u8; 4096];
                let (pending, fin) = self.echo.get_mut(&k).expect("present");
                loop {
                    match node.stream_read(self.now, k, &mut buf) {
                        Ok(Read::Data(n)) => pending.extend_from_slice(&buf[..n]),
                        Ok(Read::Eof) => {
                            *fin = true;
                            break;
                        }
                        _ => break,
                    }
                }
                if !pending.is_empty() {
                    if let Ok(n) = node.stream_write(self.now, k, pending) {
                        pending.drain(..n);
                    }
                }
                if *fin && pending.is_empty() {
                    let _ = node.stream_shutdown(self.now, k);
                    node.stream_close(self.now, k);
                    self.echo.remove(&k);
                }
            }
        }
    }

    /// Advances to the next delivery or timer.
    fn step(&mut self) {
        self.flush();
        let next_wire = self.wire.front().map(|w| w.0);
        let next_timer = self.nodes.iter().filter_map(|n| n.poll_timeout()).min();
        let t = match (next_wire, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(self.now + Dur::from_millis(1)),
        };
        self.now = self.now.max(t);
        while self.wire.front().is_some_and(|w| w.0 <= self.now) {
            let (_, a, b, f) = self.wire.pop_front().expect("present");
            let l = self.link_id(a);
            self.nodes[b].handle_frame(self.now, l, &f);
        }
        for n in &mut self.nodes {
            if n.poll_timeout().is_some_and(|t| t <= self.now) {
                n.handle_timeout(self.now);
            }
        }
        self.flush();
    }

    fn run_until(&mut self, limit: Dur, mut done: impl FnMut(&mut Net) -> bool) {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return;
            }
            self.step();
        }
        panic!("not done after {limit:?}");
    }

    /// Opens a stream on circuit `c` at the client and runs until it is
    /// connected (at most `limit`).
    fn open_connected(&mut self, c: CircuitId, limit: Dur) -> StreamKey {
        let now = self.now;
        let k = self.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
        let mut connected = false;
        self.run_until(limit, |n| {
            connected |= n.client_events().contains(&NodeEvent::StreamConnected(k));
            connected
        });
        k
    }

    fn client_events(&mut self) -> Vec<NodeEvent> {
        std::mem::take(&mut self.events[CLIENT])
    }

    fn build(&mut self, path: &[usize]) -> CircuitId {
        let (c, closed) = self.build_outcome(path);
        assert_eq!(closed, None, "{c:?} closed while building");
        c
    }

    /// Builds a circuit along `path` and runs until it is ready (`None`) or
    /// closed (the reason).
    fn build_outcome(&mut self, path: &[usize]) -> (CircuitId, Option<DestroyReason>) {
        let p: Vec<Identity> = path.iter().map(|&i| self.keys[i]).collect();
        let now = self.now;
        let c = self.nodes[CLIENT].build_circuit(now, &p).unwrap();
        let mut outcome = None;
        self.run_until(Dur::from_secs(10), |n| {
            for e in n.client_events() {
                match e {
                    NodeEvent::CircuitReady(x) if x == c => outcome = Some(None),
                    NodeEvent::CircuitClosed { circuit, reason } if circuit == c => {
                        outcome = Some(Some(reason))
                    }
                    _ => {}
                }
            }
            outcome.is_some()
        });
        (c, outcome.expect("the build ends within 10 s"))
    }

    /// Sends `data` on a new stream, shuts down, and reads the echo to EOF.
    fn echo_stream(&mut self, c: CircuitId, data: &[u8], limit: Dur) -> Vec<u8> {
        let now = self.now;
        let k = self.nodes[CLIENT]
            .open_stream(now, c, "echo.example", 7)
            .unwrap();
        let mut sent = 0;
        let mut shut = false;
        let mut got = Vec::new();
        let mut eof = false;
        self.run_until(limit, |n| {
            let now = n.now;
            let node = &mut n.nodes[CLIENT];
            for e in std::mem::take(&mut n.events[CLIENT]) {
                if let NodeEvent::StreamReset { stream, reason } = e {
                    assert_ne!(stream, k, "stream reset: {reason}");
                }
            }
            if sent < data.len() {
                if let Ok(w) = node.stream_write(now, k, &data[sent..]) {
                    sent += w;
                }
            } else if !shut && node.stream_shutdown(now, k).is_ok() {
                shut = true;
            }
            let mut buf = [0u8; 8192];
            loop {
                match node.stream_read(now, k, &mut buf) {
                    Ok(Read::Data(m)) => got.extend_from_slice(&buf[..m]),
                    Ok(Read::Eof) => {
                        eof = true;
                        break;
                    }
                    _ => break,
                }
            }
            eof
        });
        got
    }
}

/// Where the body of the first cell of a BackTap frame starts, if it has a
/// cell.
fn first_cell_body(f: &[u8]) -> Option<usize> {
    use crate::backtap::wire;
    if f[0] != control::FRAME_BACKTAP {
        return None;
    }
    let d = wire::decode(f).ok()?;
    let body = d.items().find_map(|i| match i {
        wire::Item::Cell(c) => Some(c.body.as_ptr()),
        _ => None,
    })?;
    Some(body as usize - f.as_ptr() as usize)
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn builds_a_circuit_and_echoes_a_stream() {
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    assert_eq!(net.nodes[1].circuit_count(), 1);
    let data = pattern(300_000);
    let got = net.echo_stream(c, &data, Dur::from_secs(60));
    assert_eq!(got.len(), data.len());
    assert!(got == data, "echo differs");
    // Both ends forgot the stream.
    net.run_until(Dur::from_secs(1), |n| {
        n.nodes[CLIENT].stream_count() == 0 && n.nodes[2].stream_count() == 0
    });
    // Several streams at once share the circuit.
    let d1 = pattern(50_000);
    let d2: Vec<u8> = pattern(70_000).iter().map(|b| b ^ 0x55).collect();
    let got1 = net.echo_stream(c, &d1, Dur::from_secs(30));
    let got2 = net.echo_stream(c, &d2, Dur::from_secs(30));
    assert!(got1 == d1 && got2 == d2);
}

#[test]
fn survives_frame_loss() {
    let mut net = Net::new(&[false, false, true], 0.05);
    let c = net.build(&[0, 1, 2]);
    let data = pattern(200_000);
    let got = net.echo_stream(c, &data, Dur::from_secs(600));
    assert!(got == data, "echo differs");
    assert!(net.dropped > 20, "{} frames dropped", net.dropped);
    let retx: u64 = net.nodes.iter().map(|n| n.stats().ctl_retransmits).sum();
    let _ = retx; // control loss is likely but not certain; the circuit must work either way
                  // Cells were resent on every hop, and every edge recognized every cell:
                  // a retransmission carries the ciphertext sent the first time (a cell
                  // encrypted again at another keystream position would not be
                  // recognized, and would tear the circuit down).
    let c = [CLIENT, 0, 1, 2].map(|i| {
        let n = &net.nodes[i];
        n.circuits()
            .map(|(c, _)| {
                let ep = n.endpoint();
                ep.circuit_stats(c, Direction::Forward).retransmits
                    + ep.circuit_stats(c, Direction::Backward).retransmits
            })
            .sum::<u64>()
    });
    for (i, n) in c.iter().enumerate() {
        assert!(*n > 0, "node {i} retransmitted no cell");
    }
    for n in &net.nodes {
        assert_eq!(n.stats().cells_unrecognized, 0);
    }
}

#[test]
fn refusals_reach_the_client() {
    let mut net = Net::new(&[false, false, true], 0.0);
    // The last hop is not an exit: the circuit builds (no relay knows it is
    // the last), and its streams are refused.
    let c = net.build(&[0, 1]);
    let now = net.now;
    let k = net.nodes[CLIENT].open_stream(now, c, "x", 80).unwrap();
    let mut got = None;
    net.run_until(Dur::from_secs(5), |n| {
        for e in n.client_events() {
            if let NodeEvent::StreamReset { stream, reason } = e {
                assert_eq!(stream, k);
                got = Some(reason);
            }
        }
        got.is_some()
    });
    assert_eq!(got, Some(EndReason::ExitPolicy));
    let now = net.now;
    net.nodes[CLIENT].destroy_circuit(now, c, DestroyReason::Requested);
    // Nothing left behind at the relays.
    net.run_until(Dur::from_secs(1), |n| {
        (0..RELAYS).all(|i| n.nodes[i].circuit_count() == 0)
    });
    // A path through an unknown relay is refused by the relay before it.
    let mut p: Vec<Identity> = [0, 1].iter().map(|&i| net.keys[i]).collect();
    p.push([0xEE; 32]);
    let now = net.now;
    assert_eq!(
        net.nodes[CLIENT].build_circuit(now, &p),
        Err(BuildError::UnknownRelay(2))
    );
    // A stream the exit refuses.
    let c = net.build(&[0, 1, 2]);
    let now = net.now;
    let k = net.nodes[CLIENT].open_stream(now, c, "x", 1).unwrap();
    let mut got = None;
    net.run_until(Dur::from_secs(5), |n| {
        for e in n.client_events() {
            if let NodeEvent::StreamReset { stream, reason } = e {
                assert_eq!(stream, k);
                got = Some(reason);
            }
        }
        got.is_some()
    });
    assert_eq!(got, Some(EndReason::ConnectRefused));
}

#[test]
fn destroy_and_link_failure_tear_down_everywhere() {
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let now = net.now;
    net.nodes[CLIENT].destroy_circuit(now, c, DestroyReason::Requested);
    net.run_until(Dur::from_secs(2), |n| {
        (0..RELAYS).all(|i| n.nodes[i].circuit_count() == 0)
    });
    // The exit's link to the middle dies: the circuit is destroyed back to the client.
    let c = net.build(&[0, 1, 2]);
    let now = net.now;
    let k = net.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
    net.step();
    net.step();
    let now = net.now;
    net.nodes[1].link_down(now, LinkId(2));
    let mut closed = false;
    let mut reset = false;
    net.run_until(Dur::from_secs(2), |n| {
        for e in n.client_events() {
            match e {
                NodeEvent::CircuitClosed { circuit, reason } => {
                    assert_eq!((circuit, reason), (c, DestroyReason::LinkFailed));
                    closed = true;
                }
                NodeEvent::StreamReset { stream, .. } => {
                    assert_eq!(stream, k);
                    reset = true;
                }
                _ => {}
            }
        }
        closed && reset
    });
    assert_eq!(net.nodes[0].circuit_count(), 0);
    assert_eq!(net.nodes[1].circuit_count(), 0);
}

#[test]
fn build_times_out_when_the_next_hop_is_unreachable() {
    let mut net = Net::new(&[false, false, true], 0.0);
    net.down.push((1, 2));
    let p: Vec<Identity> = [0, 1, 2].iter().map(|&i| net.keys[i]).collect();
    let now = net.now;
    let c = net.nodes[CLIENT].build_circuit(now, &p).unwrap();
    let mut reason = None;
    net.run_until(Dur::from_secs(20), |n| {
        for e in n.client_events() {
            if let NodeEvent::CircuitClosed { circuit, reason: r } = e {
                assert_eq!(circuit, c);
                reason = Some(r);
            }
        }
        reason.is_some()
    });
    assert_eq!(reason, Some(DestroyReason::Timeout));
}

#[test]
fn stream_reset_propagates() {
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let k = net.open_connected(c, Dur::from_secs(2));
    assert_eq!(net.nodes[2].stream_count(), 1);
    let now = net.now;
    net.nodes[CLIENT]
        .stream_reset(now, k, EndReason::ConnReset)
        .unwrap();
    net.run_until(Dur::from_secs(2), |n| n.nodes[2].stream_count() == 0);
    assert_eq!(
        net.nodes[CLIENT].stream_write(now, k, b"x"),
        Err(StreamError::UnknownStream)
    );
}

fn one_stream_at_exit(i: usize, cfg: &mut NodeConfig) {
    if i == 0 {
        cfg.max_streams = 1;
    }
}

/// A client that keeps sending BEGINs beyond the exit's stream limit while
/// it never lets the exit's answers through (it acknowledges nothing the
/// exit sends) would grow the exit's queue of END cells without end; past
/// two per allowed stream plus some slack, the exit tears the circuit down.
#[test]
fn a_peer_that_never_takes_answers_loses_the_circuit() {
    let mut net = Net::with_cfg(&[true, false, false], 0.0, one_stream_at_exit);
    let c = net.build(&[0]);
    net.no_cells.push((0, CLIENT));
    let now = net.now;
    for _ in 0..600 {
        net.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
    }
    let errors = net.nodes[0].stats().protocol_errors;
    net.run_until(Dur::from_secs(30), |n| n.nodes[0].circuit_count() == 0);
    assert_eq!(net.nodes[0].stats().protocol_errors, errors + 1);
    // The stream limit alone does not end a circuit: with answers let
    // through, ENDs leave as fast as BEGINs come.
    let mut net = Net::with_cfg(&[true, false, false], 0.0, one_stream_at_exit);
    let c = net.build(&[0]);
    let now = net.now;
    for _ in 0..600 {
        net.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
    }
    let mut resets = 0;
    net.run_until(Dur::from_secs(30), |n| {
        resets += n
            .client_events()
            .iter()
            .filter(|e| matches!(e, NodeEvent::StreamReset { .. }))
            .count();
        resets == 599
    });
    assert_eq!(net.nodes[0].circuit_count(), 1);
}

/// The hop state of node 0's circuit towards the client: (baseRtt, SRTT).
fn guard_rtts(net: &Net) -> (Dur, Dur) {
    let guard = &net.nodes[0];
    let (c, _) = guard
        .circuits()
        .find(|&(_, r)| r == Role::Relay)
        .expect("a circuit at the guard");
    let st = guard
        .endpoint()
        .circuit_stats(c, crate::backtap::Direction::Backward);
    (st.base_rtt, st.srtt)
}

#[test]
fn a_client_link_that_goes_down_forgets_its_path() {
    // The link layer gives a client's id to the next client once its link
    // is down, so nothing learnt about the old client's path may carry over.
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let data = pattern(50_000);
    assert_eq!(net.echo_stream(c, &data, Dur::from_secs(20)), data);
    let (base, srtt) = guard_rtts(&net);
    assert!(
        base > Dur::ZERO && srtt > Dur::ZERO,
        "the echo sampled the path"
    );
    let client = net.link_id(CLIENT);
    let now = net.now;
    net.nodes[0].link_down(now, client);
    net.nodes[CLIENT].link_down(now, LinkId(0));
    assert_eq!(net.nodes[0].circuit_count(), 0);
    // A new session (as `LinkEvent::Up` would bring it) and a new circuit:
    // its hop towards the client has no baseRtt and no RTT estimate (it
    // does not start from the old path's) until it samples them.
    let key = net.keys[CLIENT];
    net.nodes[0].link_up(client, key);
    let c = net.build(&[0, 1, 2]);
    assert_eq!(guard_rtts(&net), (Dur::ZERO, Dur::ZERO));
    assert_eq!(net.echo_stream(c, &data, Dur::from_secs(20)), data);
    assert!(guard_rtts(&net).0 > Dur::ZERO);
}

/// Builds two circuits through the same relays, then lets the client push
/// cells on one with a hop window of 800 while the guard's cells towards
/// the middle are lost, so that they pile up at the guard. Returns the net
/// after `secs` and the two circuits (idle, flooding).
fn flood_the_guard(max_queued_cells: usize, secs: u64) -> (Net, CircuitId, CircuitId) {
    let mut net = Net::with_cfg(&[false, false, true], 0.0, |i, cfg| {
        cfg.stream_window = 1 << 20;
        if i == CLIENT {
            cfg.backtap.initial_window = 800;
        }
        if i == 0 {
            cfg.max_queued_cells = max_queued_cells;
        }
    });
    let idle = net.build(&[0, 1, 2]);
    let big = net.build(&[0, 1, 2]);
    let k = net.open_connected(big, Dur::from_secs(5));
    net.no_cells.push((0, 1));
    let data = pattern(600 * 498);
    let mut sent = 0;
    let end = net.now + Dur::from_secs(secs);
    while net.now < end {
        let now = net.now;
        if let Ok(w) = net.nodes[CLIENT].stream_write(now, k, &data[sent..]) {
            sent += w;
        }
        net.step();
    }
    (net, idle, big)
}

#[test]
fn the_largest_circuits_are_shed_when_all_queues_hold_too_much() {
    // Unlimited: the guard holds the flood and both circuits stay.
    let (net, _, _) = flood_the_guard(usize::MAX, 3);
    let ep = net.nodes[0].endpoint();
    let held: usize = ep.held_cells().map(|h| h.1).sum();
    assert!(held > 400, "the guard holds {held} cells");
    assert_eq!(ep.total_held(), held);
    assert_eq!(net.nodes[0].circuit_count(), 2);
    assert_eq!(net.nodes[0].stats().circuits_shed, 0);
    // A limit of 200 cells: the flooding circuit goes, the idle one stays.
    let (mut net, idle, big) = flood_the_guard(200, 3);
    assert_eq!(net.nodes[0].stats().circuits_shed, 1);
    assert_eq!(net.nodes[0].circuit_count(), 1);
    let ep = net.nodes[0].endpoint();
    assert_eq!(ep.total_held(), ep.held_cells().map(|h| h.1).sum::<usize>());
    let closed: Vec<NodeEvent> = net
        .client_events()
        .into_iter()
        .filter(|e| matches!(e, NodeEvent::CircuitClosed { .. }))
        .collect();
    assert_eq!(
        closed,
        vec![NodeEvent::CircuitClosed {
            circuit: big,
            reason: DestroyReason::ResourceLimit
        }]
    );
    assert!(net.nodes[CLIENT].circuit_ready(idle));
}

#[test]
fn a_client_gets_at_most_its_share_of_circuits() {
    let mut net = Net::with_cfg(&[false, false, true], 0.0, |_, cfg| {
        cfg.max_circuits_per_client = 2;
    });
    let (c1, r1) = net.build_outcome(&[0, 1, 2]);
    let (_, r2) = net.build_outcome(&[0, 1, 2]);
    assert_eq!((r1, r2), (None, None));
    let (_, r3) = net.build_outcome(&[0, 1, 2]);
    assert_eq!(r3, Some(DestroyReason::ResourceLimit), "the guard's cap");
    assert_eq!(net.nodes[0].circuit_count(), 2);
    // Links between relays are not capped: the exit carries three circuits
    // from the middle once the client enters at the middle.
    let (_, r4) = net.build_outcome(&[1, 2]);
    assert_eq!(r4, None);
    assert_eq!(net.nodes[2].circuit_count(), 3);
    // A circuit that goes frees its place.
    let now = net.now;
    net.nodes[CLIENT].destroy_circuit(now, c1, DestroyReason::Requested);
    net.run_until(Dur::from_secs(2), |n| n.nodes[0].circuit_count() == 1);
    let (_, r5) = net.build_outcome(&[0, 1, 2]);
    assert_eq!(r5, None);
}

#[test]
fn a_client_that_never_acknowledges_stops_getting_circuits() {
    let mut net = Net::new(&[false, false, true], 0.0);
    // Nothing the exit sends reaches the client: no CREATED, no CTL_ACK.
    net.down.push((2, CLIENT));
    let exit = [net.keys[2]];
    for _ in 0..600 {
        let now = net.now;
        net.nodes[CLIENT].build_circuit(now, &exit).unwrap();
        net.step();
    }
    let end = net.now + Dur::from_secs(2);
    while net.now < end {
        net.step();
    }
    // The exit answered 512 CREATEs and ignores the rest.
    assert_eq!(net.nodes[2].circuit_count(), 512);
    assert_eq!(net.nodes[2].stats().protocol_errors, 88);
}

/// The client sends on two streams to an echoing exit and reads nothing,
/// so the echo of the long one piles up in the exit's send buffer (16 KiB
/// here) once the client's window is full; the exit's limit on stream
/// buffers resets that stream and keeps the short one.
#[test]
fn streams_that_buffer_too_much_are_reset_largest_first() {
    const CAP: usize = 12 * 1024;
    let mut net = Net::with_cfg(&[true, false, false], 0.0, |i, cfg| {
        if i == 0 {
            cfg.max_stream_bytes = CAP;
        }
    });
    let c = net.build(&[0]);
    let now = net.now;
    let a = net.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
    let b = net.nodes[CLIENT].open_stream(now, c, "x", 7).unwrap();
    let data = pattern(200_000);
    let (mut sa, mut sb) = (0, 0);
    let mut resets = Vec::new();
    let end = net.now + Dur::from_secs(10);
    while net.now < end && resets.is_empty() {
        let now = net.now;
        if let Ok(n) = net.nodes[CLIENT].stream_write(now, a, &data[sa..]) {
            sa += n;
        }
        if let Ok(n) = net.nodes[CLIENT].stream_write(now, b, &data[sb..4000]) {
            sb += n;
        }
        net.step();
        for e in net.client_events() {
            if let NodeEvent::StreamReset { stream, reason } = e {
                resets.push((stream, reason));
            }
        }
    }
    assert_eq!(resets, vec![(a, EndReason::ResourceLimit)]);
    assert_eq!(sb, 4000);
    let exit = &net.nodes[0];
    assert_eq!(exit.stats().streams_shed, 1);
    assert!(exit.stream_buffered() <= CAP, "{}", exit.stream_buffered());
    assert_eq!(exit.stream_count(), 1, "b stays open");
}

/// Runs until the client learns that circuit `c` closed; the reason.
fn closed_reason(net: &mut Net, c: CircuitId) -> DestroyReason {
    let mut reason = None;
    net.run_until(Dur::from_secs(10), |n| {
        for e in n.client_events() {
            if let NodeEvent::CircuitClosed { circuit, reason: r } = e {
                if circuit == c {
                    reason = Some(r);
                }
            }
        }
        reason.is_some()
    });
    reason.expect("closed")
}

/// A relay that flips one bit of a cell body it forwards: the cell reaches
/// the far edge (the exit for a forward cell, the client for a backward
/// one), whose layer does not recognize it; it counts the cell and tears
/// the circuit down.
#[test]
fn a_relay_that_flips_a_bit_gets_the_circuit_torn_down() {
    for (from, to, edge) in [
        (CLIENT, 0, 2),
        (0, 1, 2),
        (1, 2, 2),
        (2, 1, CLIENT),
        (1, 0, CLIENT),
        (0, CLIENT, CLIENT),
    ] {
        let mut net = Net::new(&[false, false, true], 0.0);
        let c = net.build(&[0, 1, 2]);
        let k = net.open_connected(c, Dur::from_secs(5));
        net.tamper.push((from, to));
        let now = net.now;
        net.nodes[CLIENT]
            .stream_write(now, k, &pattern(5000))
            .unwrap();
        assert_eq!(closed_reason(&mut net, c), DestroyReason::Protocol);
        assert!(net.tamper.is_empty(), "a cell was tampered with");
        let unrecognized: Vec<u64> = net
            .nodes
            .iter()
            .map(|n| n.stats().cells_unrecognized)
            .collect();
        let mut want = vec![0; RELAYS + 1];
        want[edge] = 1;
        assert_eq!(unrecognized, want, "flipped on {from} -> {to}");
        net.run_until(Dur::from_secs(2), |n| {
            (0..RELAYS).all(|i| n.nodes[i].circuit_count() == 0)
        });
    }
}

/// The control messages `from` sent `to`, decoded, with the next sequence
/// number of that channel.
fn ctl_sent(net: &Net, from: usize, to: usize) -> (Vec<CtlMsg>, u32) {
    let mut msgs = Vec::new();
    let mut next = 0;
    for (a, b, f) in &net.ctl_log {
        if (*a, *b) != (from, to) {
            continue;
        }
        if let Ok(control::Frame::Ctl { seq, msg }) = control::decode_frame(f) {
            if seq >= next {
                next = seq + 1;
                msgs.push(msg);
            }
        }
    }
    (msgs, next)
}

/// A CREATE whose handshake (the client's ephemeral key) was answered
/// before is refused: here the middle replays to the exit the CREATE it
/// sent for a client's EXTEND.
#[test]
fn a_replayed_create_is_refused() {
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let (msgs, next) = ctl_sent(&net, 1, 2);
    let Some(&CtlMsg::Create {
        circ_id, onionskin, ..
    }) = msgs.iter().find(|m| matches!(m, CtlMsg::Create { .. }))
    else {
        panic!("the middle sent a CREATE");
    };
    let replay = control::encode_ctl(
        next,
        &CtlMsg::Create {
            circ_id: circ_id + 1,
            htype: control::HTYPE_NTOR,
            onionskin,
        },
    );
    let now = net.now;
    net.nodes[2].handle_frame(now, LinkId(1), &replay);
    assert_eq!(net.nodes[2].stats().handshake_replays, 1);
    // The same key with its top bit set (X25519 ignores that bit) is the
    // same handshake.
    let mut flipped = onionskin;
    flipped[63] ^= 0x80;
    let replay2 = control::encode_ctl(
        next + 1,
        &CtlMsg::Create {
            circ_id: circ_id + 2,
            htype: control::HTYPE_NTOR,
            onionskin: flipped,
        },
    );
    net.nodes[2].handle_frame(now, LinkId(1), &replay2);
    assert_eq!(net.nodes[2].stats().handshake_replays, 2);
    assert_eq!(net.nodes[2].stats().circuits_created, 1);
    assert_eq!(net.nodes[2].circuit_count(), 1);
    let destroys = std::iter::from_fn(|| net.nodes[2].poll_frame(now))
        .filter_map(|(l, f)| match control::decode_frame(&f) {
            Ok(control::Frame::Ctl {
                msg: CtlMsg::Destroy { circ_id: x, .. },
                ..
            }) if l == LinkId(1) => Some(x),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(destroys, vec![circ_id + 1, circ_id + 2]);
    // The original circuit is unharmed.
    let k = net.open_connected(c, Dur::from_secs(5));
    assert!(net.nodes[CLIENT].circuit_ready(k.circuit));
}

/// An EXTEND replayed on its circuit (here by the entry, to the middle) is
/// refused: each hop's cipher has moved on, so the last hop does not
/// recognize it and tears the circuit down; and once a circuit carries
/// cells, any EXTEND is refused where it arrives.
#[test]
fn a_replayed_extend_is_refused() {
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let (msgs, next) = ctl_sent(&net, 0, 1);
    let extends: Vec<&CtlMsg> = msgs
        .iter()
        .filter(|m| matches!(m, CtlMsg::Relay { .. }))
        .collect();
    assert_eq!(
        extends.len(),
        1,
        "the entry passed on the EXTEND for the exit"
    );
    let now = net.now;
    net.nodes[1].handle_frame(now, LinkId(0), &control::encode_ctl(next, extends[0]));
    assert_eq!(closed_reason(&mut net, c), DestroyReason::Protocol);
    assert_eq!(net.nodes[2].stats().cells_unrecognized, 1);
    assert_eq!(net.nodes[2].stats().circuits_created, 1);

    // On a circuit in use, the relay it reaches refuses it.
    let mut net = Net::new(&[false, false, true], 0.0);
    let c = net.build(&[0, 1, 2]);
    let _ = net.open_connected(c, Dur::from_secs(5));
    let (msgs, next) = ctl_sent(&net, 0, 1);
    let extend = msgs
        .iter()
        .find(|m| matches!(m, CtlMsg::Relay { .. }))
        .expect("an EXTEND")
        .clone();
    let errors = net.nodes[1].stats().protocol_errors;
    let now = net.now;
    net.nodes[1].handle_frame(now, LinkId(0), &control::encode_ctl(next, &extend));
    assert_eq!(net.nodes[1].stats().protocol_errors, errors + 1);
    assert_eq!(closed_reason(&mut net, c), DestroyReason::Protocol);
    assert_eq!(net.nodes[2].stats().cells_unrecognized, 0);
}
