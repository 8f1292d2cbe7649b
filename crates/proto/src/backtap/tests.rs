//! Unit tests of the endpoint, driven with hand-made datagrams.

use super::wire::{self, Cell, CellBody, Feedback, Item, CELL_BODY_LEN, FLAG_CLOSE, FLAG_OPEN};
use super::*;
use crate::time::{Dur, Time};

fn ms(x: u64) -> Time {
    Time::ZERO + Dur::from_millis(x)
}

fn body(n: u32) -> CellBody {
    let mut b = [0u8; CELL_BODY_LEN];
    b[..4].copy_from_slice(&n.to_be_bytes());
    b
}

/// An owned view of what an endpoint sent.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Cell {
        circ: u32,
        seq: u32,
        flags: u8,
        tag: u32,
    },
    Fb {
        circ: u32,
        ack: Option<u32>,
        fwd: Option<u32>,
    },
    Sack {
        circ: u32,
        ack: u32,
        blocks: Vec<(u32, u32)>,
    },
}

fn drain(ep: &mut Endpoint, now: Time) -> Vec<(PeerId, Vec<Out>)> {
    let mut v = Vec::new();
    while let Some((p, d)) = ep.poll_transmit(now) {
        assert!(d.len() <= ep.config().payload_budget, "within the budget");
        let items = wire::decode(&d)
            .expect("endpoint output decodes")
            .items()
            .map(|it| match it {
                Item::Cell(c) => Out::Cell {
                    circ: c.circ_id,
                    seq: c.seq,
                    flags: c.flags,
                    tag: u32::from_be_bytes(c.body[..4].try_into().unwrap()),
                },
                Item::Feedback(f) => Out::Fb {
                    circ: f.circ_id,
                    ack: f.ack,
                    fwd: f.fwd,
                },
                Item::Sack(s) => Out::Sack {
                    circ: s.circ_id,
                    ack: s.ack,
                    blocks: s.blocks().to_vec(),
                },
            })
            .collect();
        v.push((p, items));
    }
    v
}

/// Everything sent at `t` and, after the pack delay, at `t + 1 ms`.
fn settle(ep: &mut Endpoint, t: Time) -> Vec<(PeerId, Vec<Out>)> {
    let mut v = drain(ep, t);
    let t1 = t + Dur::from_millis(1);
    ep.handle_timeout(t1);
    v.extend(drain(ep, t1));
    v
}

/// (circuit id, seq) of every cell sent, in order.
fn cell_items(out: &[(PeerId, Vec<Out>)]) -> impl Iterator<Item = (u32, u32)> + '_ {
    out.iter()
        .flat_map(|(_, d)| d.iter())
        .filter_map(|o| match o {
            Out::Cell { circ, seq, .. } => Some((*circ, *seq)),
            _ => None,
        })
}

fn cells(out: &[(PeerId, Vec<Out>)]) -> Vec<u32> {
    cell_items(out).map(|(_, seq)| seq).collect()
}

fn feedback(out: &[(PeerId, Vec<Out>)]) -> Vec<(Option<u32>, Option<u32>)> {
    out.iter()
        .flat_map(|(_, d)| d.iter())
        .filter_map(|o| match o {
            Out::Fb { ack, fwd, .. } => Some((*ack, *fwd)),
            _ => None,
        })
        .collect()
}

fn fb(circ: u32, ack: Option<u32>, fwd: Option<u32>) -> Vec<u8> {
    wire::encode(&[Item::Feedback(Feedback {
        circ_id: circ,
        ack,
        fwd,
    })])
}

fn cells_dg(circ: u32, seqs: &[u32]) -> Vec<u8> {
    let bodies: Vec<CellBody> = seqs.iter().map(|&s| body(s)).collect();
    let items: Vec<Item> = seqs
        .iter()
        .zip(&bodies)
        .map(|(&seq, b)| {
            Item::Cell(Cell {
                circ_id: circ,
                seq,
                flags: 0,
                body: b,
            })
        })
        .collect();
    wire::encode(&items)
}

/// A client with one peer (the entry) and `n` circuits to it.
fn client(cfg: Config, n: u32) -> (Endpoint, PeerId, Vec<CircuitId>) {
    let mut ep = Endpoint::new(cfg);
    let p = ep.add_peer(1);
    let cs = (0..n)
        .map(|i| ep.add_circuit(None, Some((p, 10 + i))))
        .collect();
    (ep, p, cs)
}

fn fill(ep: &mut Endpoint, now: Time, c: CircuitId) -> u32 {
    let mut n = 0;
    while ep.can_send(c, Direction::Forward) {
        ep.send_cell(now, c, Direction::Forward, &body(n)).unwrap();
        n += 1;
    }
    n
}

#[test]
fn a_lone_cell_waits_pack_delay_two_cells_leave_at_once() {
    let (mut ep, _, cs) = client(Config::default(), 1);
    ep.send_cell(ms(0), cs[0], Direction::Forward, &body(7))
        .unwrap();
    assert!(
        ep.poll_transmit(ms(0)).is_none(),
        "one cell waits for company"
    );
    assert_eq!(ep.poll_timeout(), Some(ms(1)), "at most pack_delay");
    ep.handle_timeout(ms(1));
    let out = drain(&mut ep, ms(1));
    assert_eq!(
        out[0].1,
        vec![Out::Cell {
            circ: 10,
            seq: 1,
            flags: FLAG_OPEN,
            tag: 7
        }]
    );
    // The second cell (the window is 2) leaves with the next one... alone again.
    ep.send_cell(ms(2), cs[0], Direction::Forward, &body(8))
        .unwrap();
    assert!(ep.poll_transmit(ms(2)).is_none());
    let (mut ep, _, cs) = client(Config::default(), 1);
    assert_eq!(
        fill(&mut ep, ms(0), cs[0]),
        2,
        "admission: initial window 2"
    );
    let out = drain(&mut ep, ms(0));
    assert_eq!(out.len(), 1, "two cells fill a datagram: no wait");
    assert_eq!(cells(&out), vec![1, 2]);
    assert_eq!(
        ep.poll_timeout(),
        Some(ms(1000)),
        "RTO before any sample: 1 s (RFC 6298)"
    );
}

#[test]
fn relay_acks_on_arrival_and_forwards_with_fwd() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[1, 2]))
        .unwrap();
    let out = drain(&mut relay, ms(0));
    // Downstream: both cells, seq unchanged, OPEN on seq 1; upstream: one
    // coalesced item with ACK 3 (both arrived) and FWD 3 (both forwarded).
    let down: Vec<_> = out.iter().filter(|(p, _)| *p == next).collect();
    let up: Vec<_> = out.iter().filter(|(p, _)| *p == prev).collect();
    assert_eq!(cells(&out), vec![1, 2]);
    assert!(matches!(
        down[0].1[0],
        Out::Cell {
            circ: 6,
            seq: 1,
            flags: FLAG_OPEN,
            tag: 1
        }
    ));
    assert_eq!(up.len(), 1);
    assert_eq!(
        up[0].1,
        vec![Out::Fb {
            circ: 5,
            ack: Some(3),
            fwd: Some(3)
        }]
    );
    // A third cell arrives but the window (2) is full: ACK only, after pack_delay.
    relay
        .handle_datagram(ms(2), prev, &cells_dg(5, &[3]))
        .unwrap();
    assert!(drain(&mut relay, ms(2)).is_empty());
    let out = drain(&mut relay, ms(3));
    assert_eq!(feedback(&out), vec![(Some(4), None)]);
    // The next hop forwards cell 1: the window opens, cell 3 leaves, FWD 4 goes up.
    relay
        .handle_datagram(ms(20), next, &fb(6, Some(3), Some(2)))
        .unwrap();
    let out = settle(&mut relay, ms(20));
    assert_eq!(cells(&out), vec![3]);
    assert_eq!(feedback(&out), vec![(None, Some(4))]);
    let s = relay.circuit_stats(CircuitId(0), Direction::Forward);
    assert_eq!((s.head, s.tail, s.next_tx, s.fwd_seen), (3, 3, 4, 2));
}

#[test]
fn relay_refuses_cells_beyond_circuit_limit_without_acking() {
    let cfg = Config {
        circuit_limit: 50,
        ..Config::default()
    };
    let mut relay = Endpoint::new(cfg);
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    // A predecessor that ignores the window floods 60 cells.
    for s in (1..=60).step_by(2) {
        relay
            .handle_datagram(ms(0), prev, &cells_dg(5, &[s, s + 1]))
            .unwrap();
    }
    let out = drain(&mut relay, ms(5));
    let acks: Vec<u32> = feedback(&out).iter().filter_map(|f| f.0).collect();
    assert_eq!(
        acks.iter().max(),
        Some(&51),
        "cells 51..60 are not acknowledged"
    );
    let st = relay.circuit_stats(c, Direction::Forward);
    assert_eq!(st.drops, 10);
    assert_eq!(relay.stats().drops, 10);
    assert_eq!(st.tail, 50);
    assert_eq!(cells(&out), vec![1, 2], "only the window goes downstream");
    // The next hop acknowledges and forwards 1 and 2: the buffer has room for
    // two more, so the retransmitted 51 and 52 are taken, 53 is not.
    relay
        .handle_datagram(ms(20), next, &fb(6, Some(3), Some(3)))
        .unwrap();
    relay
        .handle_datagram(ms(21), prev, &cells_dg(5, &[51, 52]))
        .unwrap();
    relay
        .handle_datagram(ms(21), prev, &cells_dg(5, &[53]))
        .unwrap();
    let out = drain(&mut relay, ms(30));
    let acks: Vec<u32> = feedback(&out).iter().filter_map(|f| f.0).collect();
    assert_eq!(acks.iter().max(), Some(&53));
    assert_eq!(relay.circuit_stats(c, Direction::Forward).drops, 11);
}

/// Sends one cell on `c` at `at` and returns when it went out.
/// The circuit ids of the cells sent, in order.
fn cell_circs(out: &[(PeerId, Vec<Out>)]) -> Vec<u32> {
    cell_items(out).map(|(circ, _)| circ).collect()
}

/// The round robin's ring is fixed and resumes after the queue served last
/// (nstor's `GetNextCircuit`): a queue that went idle keeps its place instead
/// of queueing up behind whichever queue became sendable first.
#[test]
fn round_robin_resumes_after_the_queue_served_last() {
    let cfg = Config {
        initial_window: 8,
        ..Config::default()
    };
    let (mut ep, _, cs) = client(cfg, 2);
    let (a, b) = (cs[0], cs[1]);
    for n in 0..3 {
        ep.send_cell(ms(0), a, Direction::Forward, &body(n))
            .unwrap();
    }
    ep.send_cell(ms(0), b, Direction::Forward, &body(9))
        .unwrap();
    // One cell per turn; B runs dry after its first; A is served last.
    assert_eq!(cell_circs(&settle(&mut ep, ms(0))), [10, 11, 10, 10]);
    // A becomes sendable before B, but the turn after A's is B's.
    ep.send_cell(ms(5), a, Direction::Forward, &body(3))
        .unwrap();
    ep.send_cell(ms(5), b, Direction::Forward, &body(10))
        .unwrap();
    assert_eq!(cell_circs(&settle(&mut ep, ms(5))), [11, 10]);
}

fn one_cell(ep: &mut Endpoint, c: CircuitId, at: Time, tag: u32) {
    ep.send_cell(at, c, Direction::Forward, &body(tag)).unwrap();
    assert_eq!(cells(&settle(ep, at)).len(), 1);
}

#[test]
fn base_rtt_is_shared_per_next_hop() {
    for share in [true, false] {
        let cfg = Config {
            min_samples: 1,
            share_base_rtt: share,
            ..Config::default()
        };
        let (mut ep, p, cs) = client(cfg, 2);
        // Circuit A: one cell, forwarded 10 ms after it was sent.
        one_cell(&mut ep, cs[0], ms(0), 0);
        ep.handle_datagram(ms(10), p, &fb(10, Some(2), Some(2)))
            .unwrap();
        assert_eq!(
            ep.circuit_stats(cs[0], Direction::Forward).base_rtt,
            Dur::from_millis(10)
        );
        // Circuit B: its application fills the window; FWD after 40 ms.
        assert_eq!(fill(&mut ep, ms(100), cs[1]), 2);
        drain(&mut ep, ms(100));
        ep.handle_datagram(ms(140), p, &fb(11, Some(3), Some(2)))
            .unwrap();
        let b = ep.circuit_stats(cs[1], Direction::Forward);
        if share {
            // baseRtt 10 ms from A: diff = 2 · (40 − 10) / 10 = 6 > β → 1.
            assert_eq!(b.base_rtt, Dur::from_millis(10));
            assert_eq!(b.swnd, 1);
        } else {
            // Its own baseRtt is 40 ms: diff = 0 < α and the window was full → 3.
            assert_eq!(b.base_rtt, Dur::from_millis(40));
            assert_eq!(b.swnd, 3);
        }
        assert_eq!(b.actual_rtt, Dur::from_millis(40));
    }
}

#[test]
fn fast_retransmit_on_the_third_duplicate_ack() {
    let cfg = Config {
        initial_window: 8,
        ..Config::default()
    };
    let (mut ep, p, cs) = client(cfg, 1);
    assert_eq!(fill(&mut ep, ms(0), cs[0]), 8);
    assert_eq!(cells(&drain(&mut ep, ms(1))), (1..=8).collect::<Vec<_>>());
    // Cell 2 was lost: 1 arrives (ACK 2), then 3, 4, 5 (duplicate ACK 2).
    ep.handle_datagram(ms(10), p, &fb(10, Some(2), None))
        .unwrap();
    for (i, t) in [11, 12].iter().enumerate() {
        ep.handle_datagram(ms(*t), p, &fb(10, Some(2), None))
            .unwrap();
        assert!(
            cells(&drain(&mut ep, ms(*t))).is_empty(),
            "duplicate ACK {} alone does nothing",
            i + 1
        );
    }
    ep.handle_datagram(ms(13), p, &fb(10, Some(2), None))
        .unwrap();
    assert_eq!(
        cells(&settle(&mut ep, ms(13))),
        vec![2],
        "retransmitted after the third"
    );
    // More duplicates do not retransmit again (once per loss).
    ep.handle_datagram(ms(15), p, &fb(10, Some(2), None))
        .unwrap();
    assert!(cells(&settle(&mut ep, ms(15))).is_empty());
    // A partial ACK (2 arrived, 6 missing) retransmits 6 at once (RFC 6582).
    ep.handle_datagram(ms(25), p, &fb(10, Some(6), None))
        .unwrap();
    assert_eq!(cells(&settle(&mut ep, ms(25))), vec![6]);
    let s = ep.circuit_stats(cs[0], Direction::Forward);
    assert_eq!((s.fast_retransmits, s.retransmits, s.timeouts), (1, 2, 0));
    // The window halved once on entering recovery (Config::loss_response).
    assert_eq!((s.swnd, s.loss_cuts), (4, 1));
}

/// The loss response halves the window once per recovery episode, on a fast
/// retransmit or a timeout, and can be turned off (the paper's BackTap).
/// DelayQualified keeps the window for a loss that comes without a delay
/// rise (here: no ACK sample at all, nothing smoothed); the timeout that
/// follows in the same episode is not a second loss event.
#[test]
fn loss_recovery_halves_the_window_once_unless_turned_off() {
    for resp in [
        LossResponse::Halve,
        LossResponse::None,
        LossResponse::DelayQualified,
    ] {
        let cfg = Config {
            initial_window: 12,
            loss_response: resp,
            ..Config::default()
        };
        let (mut ep, p, cs) = client(cfg, 1);
        assert_eq!(fill(&mut ep, ms(0), cs[0]), 12);
        drain(&mut ep, ms(1));
        // Cell 1 lost: three duplicate ACKs for it.
        for t in 10..13 {
            ep.handle_datagram(ms(t), p, &fb(10, Some(1), None))
                .unwrap();
        }
        settle(&mut ep, ms(13));
        let s = ep.circuit_stats(cs[0], Direction::Forward);
        assert_eq!(s.fast_retransmits, 1);
        // The retransmission is lost too: the RTO fires in the same episode.
        let rto = ep.poll_timeout().expect("RTO armed");
        ep.handle_timeout(rto);
        settle(&mut ep, rto);
        let s = ep.circuit_stats(cs[0], Direction::Forward);
        assert!(s.timeouts >= 1, "{s:?}");
        match resp {
            LossResponse::Halve => assert_eq!((s.swnd, s.loss_cuts), (6, 1), "{s:?}"),
            LossResponse::None => assert_eq!((s.swnd, s.loss_cuts), (12, 0), "{s:?}"),
            LossResponse::DelayQualified => {
                assert_eq!((s.swnd, s.loss_cuts, s.loss_kept), (12, 0, 1), "{s:?}")
            }
        }
    }
}

/// DelayQualified: a timeout outside recovery is congestive once a round
/// trip was measured (before that, the test above: kept).
#[test]
fn delay_qualified_halves_on_a_timeout() {
    let cfg = Config {
        initial_window: 12,
        loss_response: LossResponse::DelayQualified,
        ..Config::default()
    };
    let (mut ep, p, cs) = client(cfg, 1);
    assert_eq!(fill(&mut ep, ms(0), cs[0]), 12);
    drain(&mut ep, ms(1));
    ep.handle_datagram(ms(10), p, &fb(10, Some(2), None))
        .unwrap();
    let rto = ep.poll_timeout().expect("RTO armed");
    ep.handle_timeout(rto);
    settle(&mut ep, rto);
    let s = ep.circuit_stats(cs[0], Direction::Forward);
    assert_eq!((s.timeouts, s.swnd, s.loss_cuts), (1, 6, 1), "{s:?}");
}

/// DelayQualified: a fast retransmit after the ACK round trip rose by the
/// RFC 9406 threshold (here from 9 ms to 29 ms, threshold 4 ms) halves the
/// window; the same loss after an unchanged round trip keeps it.
#[test]
fn delay_qualified_halves_a_loss_that_comes_with_a_delay_rise() {
    for (second_ack_ms, cut) in [(29, true), (11, false)] {
        let cfg = Config {
            initial_window: 12,
            loss_response: LossResponse::DelayQualified,
            ..Config::default()
        };
        let (mut ep, p, cs) = client(cfg, 1);
        assert_eq!(fill(&mut ep, ms(0), cs[0]), 12);
        drain(&mut ep, ms(1));
        // Cell 1 acknowledged after 9 ms, cell 2 after `second_ack_ms` − 1.
        ep.handle_datagram(ms(10), p, &fb(10, Some(2), None))
            .unwrap();
        ep.handle_datagram(ms(second_ack_ms), p, &fb(10, Some(3), None))
            .unwrap();
        // Cell 3 lost.
        for t in 0..3 {
            ep.handle_datagram(ms(second_ack_ms + 1 + t), p, &fb(10, Some(3), None))
                .unwrap();
        }
        settle(&mut ep, ms(second_ack_ms + 4));
        let s = ep.circuit_stats(cs[0], Direction::Forward);
        assert_eq!(s.fast_retransmits, 1, "{s:?}");
        if cut {
            assert_eq!((s.swnd, s.loss_cuts, s.loss_kept), (6, 1, 0), "{s:?}");
        } else {
            assert_eq!((s.swnd, s.loss_cuts, s.loss_kept), (12, 0, 1), "{s:?}");
        }
    }
}

#[test]
fn early_retransmit_with_few_cells_outstanding() {
    // RFC 5827: three cells outstanding, no new cell allowed: two duplicates suffice.
    let cfg = Config {
        initial_window: 4,
        ..Config::default()
    };
    let (mut ep, p, cs) = client(cfg, 1);
    assert_eq!(fill(&mut ep, ms(0), cs[0]), 4);
    drain(&mut ep, ms(1));
    ep.handle_datagram(ms(10), p, &fb(10, Some(2), None))
        .unwrap();
    ep.handle_datagram(ms(11), p, &fb(10, Some(2), None))
        .unwrap();
    assert!(cells(&settle(&mut ep, ms(11))).is_empty(), "one duplicate");
    ep.handle_datagram(ms(13), p, &fb(10, Some(2), None))
        .unwrap();
    assert_eq!(
        cells(&settle(&mut ep, ms(13))),
        vec![2],
        "the second suffices"
    );
}

#[test]
fn rto_retransmits_the_oldest_cell_and_backs_off() {
    let (mut ep, _, cs) = client(Config::default(), 1);
    fill(&mut ep, ms(0), cs[0]);
    drain(&mut ep, ms(0));
    let t1 = ep.poll_timeout().unwrap();
    assert_eq!(t1, ms(1000));
    ep.handle_timeout(t1);
    let out = drain(&mut ep, t1);
    ep.handle_timeout(t1 + Dur::from_millis(1));
    let out2 = drain(&mut ep, t1 + Dur::from_millis(1));
    assert_eq!([cells(&out), cells(&out2)].concat(), vec![1]);
    let t2 = ep.poll_timeout().unwrap();
    assert_eq!(t2, t1 + Dur::from_secs(2), "backed off");
    assert_eq!(ep.circuit_stats(cs[0], Direction::Forward).timeouts, 1);
}

#[test]
fn a_lost_fwd_is_recovered_by_a_feedback_request() {
    let (mut ep, p, cs) = client(Config::default(), 1);
    fill(&mut ep, ms(0), cs[0]);
    drain(&mut ep, ms(0));
    // Both cells ACKed (10 ms RTT) but the FWD that would follow is lost.
    ep.handle_datagram(ms(10), p, &fb(10, Some(3), None))
        .unwrap();
    assert!(!ep.can_send(cs[0], Direction::Forward), "window still full");
    let t = ep.poll_timeout().unwrap();
    assert!(t > ms(10) && t <= ms(1010), "probe timer armed: {t:?}");
    ep.handle_timeout(t);
    ep.handle_timeout(t + Dur::from_millis(1));
    let out = drain(&mut ep, t + Dur::from_millis(1));
    assert_eq!(
        out[0].1,
        vec![Out::Fb {
            circ: 10,
            ack: None,
            fwd: None
        }],
        "a request"
    );
    assert_eq!(ep.circuit_stats(cs[0], Direction::Forward).probes, 1);
    // The answer reopens the window and says Writable.
    ep.handle_datagram(t + Dur::from_millis(20), p, &fb(10, Some(3), Some(3)))
        .unwrap();
    assert!(ep.can_send(cs[0], Direction::Forward));
    assert_eq!(
        ep.poll_event(),
        Some(Event::Writable {
            circuit: cs[0],
            dir: Direction::Forward
        })
    );
    // A relay answers a request with its current ACK and FWD.
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[1, 2]))
        .unwrap();
    drain(&mut relay, ms(0));
    relay
        .handle_datagram(ms(50), prev, &fb(5, None, None))
        .unwrap();
    let out = drain(&mut relay, ms(50));
    assert_eq!(
        out,
        vec![(
            prev,
            vec![Out::Fb {
                circ: 5,
                ack: Some(3),
                fwd: Some(3)
            }]
        )]
    );
}

#[test]
fn out_of_order_cells_get_one_duplicate_ack_each_and_are_delivered_in_order() {
    let mut exit = Endpoint::new(Config::default());
    let prev = exit.add_peer(0);
    let c = exit.add_circuit(Some((prev, 5)), None);
    exit.handle_datagram(ms(0), prev, &cells_dg(5, &[1, 3]))
        .unwrap();
    exit.handle_datagram(ms(0), prev, &cells_dg(5, &[4]))
        .unwrap();
    assert_eq!(
        exit.poll_event(),
        Some(Event::Readable {
            circuit: c,
            dir: Direction::Forward
        })
    );
    let out = drain(&mut exit, ms(1));
    assert_eq!(
        feedback(&out),
        vec![(Some(2), None), (Some(2), None), (Some(2), None)]
    );
    let mut got = vec![];
    while let Some(b) = exit.recv_cell(ms(2), c, Direction::Forward) {
        got.push(u32::from_be_bytes(b[..4].try_into().unwrap()));
    }
    assert_eq!(got, vec![1]);
    assert_eq!(exit.circuit_stats(c, Direction::Forward).out_of_order, 2);
    exit.handle_datagram(ms(3), prev, &cells_dg(5, &[2]))
        .unwrap();
    assert_eq!(
        exit.poll_event(),
        Some(Event::Readable {
            circuit: c,
            dir: Direction::Forward
        })
    );
    while let Some(b) = exit.recv_cell(ms(3), c, Direction::Forward) {
        got.push(u32::from_be_bytes(b[..4].try_into().unwrap()));
    }
    assert_eq!(got, vec![1, 2, 3, 4]);
    // FWD is owed when the application takes the cells; it leaves at once,
    // with the latest cumulative values (one item, updated in place).
    let out = drain(&mut exit, ms(3));
    assert_eq!(feedback(&out), vec![(Some(5), Some(5))]);
}

#[test]
fn a_cell_far_ahead_costs_one_cell_of_memory() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    let limit = relay.config().circuit_limit;
    // One cell just inside the limit, and the same again.
    let far = cells_dg(5, &[limit]);
    relay.handle_datagram(ms(0), prev, &far).unwrap();
    relay.handle_datagram(ms(0), prev, &far).unwrap();
    let st = relay.circuit_stats(c, Direction::Forward);
    assert_eq!((st.out_of_order, st.duplicates, st.drops), (1, 1, 0));
    assert_eq!(relay.cell_slots(c, Direction::Forward), 1);
    // The gap fills: everything is in order and goes out in order.
    for s in (1..limit).step_by(100) {
        let seqs: Vec<u32> = (s..(s + 100).min(limit)).collect();
        for chunk in seqs.chunks(2) {
            relay
                .handle_datagram(ms(1), prev, &cells_dg(5, chunk))
                .unwrap();
        }
    }
    let st = relay.circuit_stats(c, Direction::Forward);
    assert_eq!((st.tail, st.out_of_order), (limit, 0));
    let mut now = ms(2);
    let mut sent = Vec::new();
    while sent.len() < limit as usize {
        let out = drain(&mut relay, now);
        let got = cells(&out);
        if let Some(&top) = got.iter().max() {
            relay
                .handle_datagram(now, next, &fb(6, Some(top + 1), Some(top + 1)))
                .unwrap();
        }
        sent.extend(got);
        now += Dur::from_millis(1);
        assert!(now < ms(60_000), "stalled after {} cells", sent.len());
    }
    assert_eq!(sent, (1..=limit).collect::<Vec<u32>>());
    assert_eq!(
        relay.total_held(),
        relay.held_cells().map(|h| h.1).sum::<usize>()
    );
    relay.remove_circuit(c);
    assert_eq!(relay.total_held(), 0);
}

/// The cells a removed circuit held, in order and above a gap, go back to
/// the endpoint's slab: the next circuit reuses their slots.
#[test]
fn a_removed_circuits_cells_are_reused() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    let seqs = [1, 2, 3, 7, 8, 20];
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &seqs))
        .unwrap();
    assert_eq!(relay.total_held(), 6);
    assert_eq!(relay.cell_store(), (6, 6));
    relay.remove_circuit(c);
    assert_eq!(relay.cell_store(), (0, 6));
    let d = relay.add_circuit(Some((prev, 7)), Some((next, 8)));
    relay
        .handle_datagram(ms(1), prev, &cells_dg(7, &[1, 2, 3, 4, 9, 10]))
        .unwrap();
    assert_eq!(relay.total_held(), 6);
    assert_eq!(relay.cell_store(), (6, 6), "slots reused, none added");
    relay.remove_circuit(d);
    assert_eq!(relay.cell_store(), (0, 6));
}

#[test]
fn a_reset_peer_gets_nothing_packed_for_its_predecessor() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    // An out-of-order cell packs a duplicate ACK for `prev`, which waits
    // for the pack delay.
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[3]))
        .unwrap();
    relay.remove_circuit(c);
    relay.reset_peer(prev);
    let out = drain(&mut relay, ms(100));
    assert!(out.is_empty(), "sent after the reset: {out:?}");
}

#[test]
fn close_flag_travels_and_open_is_set_per_hop() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    let b = body(1);
    let dg = wire::encode(&[Item::Cell(Cell {
        circ_id: 5,
        seq: 1,
        flags: FLAG_OPEN | FLAG_CLOSE,
        body: &b,
    })]);
    relay.handle_datagram(ms(0), prev, &dg).unwrap();
    let out = settle(&mut relay, ms(0));
    assert!(out.iter().any(|(p, d)| *p == next
        && d.contains(&Out::Cell {
            circ: 6,
            seq: 1,
            flags: FLAG_OPEN | FLAG_CLOSE,
            tag: 1
        })));
    let (mut ep, _, cs) = client(Config::default(), 1);
    ep.send_cell_flags(ms(0), cs[0], Direction::Forward, &body(0), 0xff)
        .unwrap();
    ep.send_cell_flags(ms(0), cs[0], Direction::Forward, &body(1), FLAG_CLOSE)
        .unwrap();
    let out = drain(&mut ep, ms(0));
    let flags: Vec<u8> = out[0]
        .1
        .iter()
        .map(|o| match o {
            Out::Cell { flags, .. } => *flags,
            _ => 0,
        })
        .collect();
    assert_eq!(
        flags,
        vec![FLAG_OPEN | FLAG_CLOSE, FLAG_CLOSE],
        "reserved bits are dropped"
    );
}

#[test]
fn bad_input_is_counted_not_fatal() {
    let mut relay = Endpoint::new(Config::default());
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    assert!(relay.handle_datagram(ms(0), prev, &[]).is_err());
    assert!(relay.handle_datagram(ms(0), prev, &[9, 1]).is_err());
    relay
        .handle_datagram(ms(0), prev, &cells_dg(99, &[1]))
        .unwrap();
    relay
        .handle_datagram(ms(0), PeerId(42), &cells_dg(5, &[1]))
        .unwrap();
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[0]))
        .unwrap();
    relay
        .handle_datagram(ms(0), next, &fb(6, Some(1000), Some(1000)))
        .unwrap();
    let s = *relay.stats();
    assert_eq!(s.decode_errors, 2);
    assert_eq!(s.unknown_circuit, 2);
    assert_eq!(s.invalid_items, 2);
    assert!(drain(&mut relay, ms(5)).is_empty());
    relay.remove_circuit(c);
    relay
        .handle_datagram(ms(6), prev, &cells_dg(5, &[1]))
        .unwrap();
    assert_eq!(relay.stats().unknown_circuit, 3);
    assert_eq!(relay.circuit_count(), 0);
    assert_eq!(
        relay.circuit_stats(c, Direction::Forward),
        HopStats::default()
    );
}

#[test]
fn removing_a_circuit_drops_its_packed_items() {
    let (mut ep, _, cs) = client(Config::default(), 2);
    ep.send_cell(ms(0), cs[0], Direction::Forward, &body(0))
        .unwrap();
    assert!(
        drain(&mut ep, ms(0)).is_empty(),
        "packed, waiting for company"
    );
    ep.remove_circuit(cs[0]);
    ep.send_cell(ms(0), cs[1], Direction::Forward, &body(1))
        .unwrap();
    let out = drain(&mut ep, ms(0));
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].1,
        vec![Out::Cell {
            circ: 11,
            seq: 1,
            flags: FLAG_OPEN,
            tag: 1
        }],
        "only circuit 1's cell"
    );
    assert!(ep.poll_timeout().is_some());
    ep.remove_circuit(cs[1]);
    // Stale timers are skipped without firing anything.
    while let Some(t) = ep.poll_timeout() {
        ep.handle_timeout(t);
        assert!(drain(&mut ep, t).is_empty());
    }
}

#[test]
fn removed_circuits_cost_nothing_and_their_ids_are_not_reused() {
    let (mut ep, p, cs) = client(Config::default(), 1);
    let mut last = cs[0];
    for i in 0..10_000u32 {
        let c = ep.add_circuit(None, Some((p, 100 + i % 7)));
        assert!(c.0 > last.0, "ids grow: {c:?} after {last:?}");
        last = c;
        ep.send_cell(ms(0), c, Direction::Forward, &body(i))
            .unwrap();
        ep.remove_circuit(c);
    }
    assert_eq!(ep.circuit_count(), 1);
    assert_eq!(ep.circuit_slots(), 1, "storage for the live circuit only");

    // A cell packed for a removed circuit never leaves on the leg's next
    // circuit, which gets a fresh id.
    let x = ep.add_circuit(None, Some((p, 50)));
    ep.send_cell(ms(1), x, Direction::Forward, &body(7))
        .unwrap();
    ep.remove_circuit(x);
    let y = ep.add_circuit(None, Some((p, 50)));
    assert_ne!(x, y);
    ep.send_cell(ms(1), y, Direction::Forward, &body(8))
        .unwrap();
    let out = settle(&mut ep, ms(1));
    let sent: Vec<(u32, u32)> = out
        .iter()
        .flat_map(|(_, o)| o)
        .filter_map(|o| match *o {
            Out::Cell { circ, tag, .. } => Some((circ, tag)),
            _ => None,
        })
        .collect();
    assert_eq!(sent, vec![(50, 8)], "only the new circuit's cell");

    // Once the counter wraps, ids still in use are skipped.
    ep.set_next_circuit_id(u32::MAX);
    let a = ep.add_circuit(None, Some((p, 60)));
    let b = ep.add_circuit(None, Some((p, 61)));
    assert_eq!((a.0, b.0), (u32::MAX, 1), "0 is the first circuit's");
    assert_eq!(cs[0].0, 0);
}

/// A middle relay (circuit 5 in from peer 0, 6 out to peer 2) whose bucket
/// holds one cell item and refills one every 10 ms, with refill `phase`.
fn one_cell_bucket_relay(phase: Dur) -> (Endpoint, PeerId) {
    let cfg = Config {
        bucket: Some(BucketConfig {
            rate: 519 * 100,
            burst: 519,
            refill: crate::bucket::Refill::Periodic(Dur::from_millis(10)),
        }),
        ..Config::default()
    };
    let mut relay = Endpoint::new(cfg);
    relay.set_bucket_phase(phase);
    let prev = relay.add_peer(0);
    let next = relay.add_peer(2);
    relay.add_circuit(Some((prev, 5)), Some((next, 6)));
    (relay, prev)
}

#[test]
fn token_bucket_gates_cells_not_feedback() {
    let (mut relay, prev) = one_cell_bucket_relay(Dur::ZERO);
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[1, 2]))
        .unwrap();
    let out = settle(&mut relay, ms(0));
    assert_eq!(cells(&out), vec![1], "one cell's worth of tokens");
    assert_eq!(
        feedback(&out),
        vec![(Some(3), Some(2))],
        "feedback is not limited"
    );
    assert_eq!(
        relay.poll_timeout(),
        Some(ms(10)),
        "bucket retry at the refill"
    );
    assert!(relay.stats().bucket_stalls >= 1);
    relay.handle_timeout(ms(10));
    assert_eq!(cells(&settle(&mut relay, ms(10))), vec![2]);
}

#[test]
fn bucket_phase_moves_the_refill() {
    let (mut relay, prev) = one_cell_bucket_relay(Dur::from_millis(4));
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[1, 2, 3]))
        .unwrap();
    assert_eq!(cells(&settle(&mut relay, ms(0))), vec![1]);
    assert_eq!(
        relay.poll_timeout(),
        Some(ms(6)),
        "refills at k·10 ms − 4 ms"
    );
    relay.handle_timeout(ms(6));
    assert_eq!(cells(&settle(&mut relay, ms(6))), vec![2]);
}

/// A bucket replaced while cells wait for tokens: the new one applies at
/// the next poll (without one, the waiting cell goes before the refill),
/// and the circuit and its queue stay.
#[test]
fn a_bucket_can_be_replaced_while_cells_wait() {
    let (mut relay, prev) = one_cell_bucket_relay(Dur::ZERO);
    relay
        .handle_datagram(ms(0), prev, &cells_dg(5, &[1, 2]))
        .unwrap();
    assert_eq!(cells(&settle(&mut relay, ms(0))), vec![1]);
    assert_eq!(relay.poll_timeout(), Some(ms(10)), "waiting for tokens");
    relay.set_bucket(None);
    assert_eq!(relay.bucket(), None);
    assert_eq!(
        cells(&settle(&mut relay, ms(1))),
        vec![2],
        "no bucket: no wait"
    );
    let slower = BucketConfig {
        rate: 519 * 10,
        burst: 519,
        refill: crate::bucket::Refill::Periodic(Dur::from_millis(100)),
    };
    relay.set_bucket(Some(slower));
    assert_eq!(relay.bucket(), Some(slower));
    assert_eq!(relay.circuit_count(), 1);
}

/// Drives a client's one circuit (`c`; its feedback goes to wire circuit id
/// 10, the first a client opens) for `millis` ms against a successor that
/// forwards every cell at once: its ACK+FWD arrive 20 ms after the cell
/// left (no queueing downstream, baseRtt = actualRtt). `each` sees the
/// endpoint and the cells in flight after every millisecond; returns the
/// cells sent.
fn against_an_idle_successor(
    ep: &mut Endpoint,
    p: PeerId,
    c: CircuitId,
    millis: u64,
    mut each: impl FnMut(&Endpoint, u64, usize),
) -> u32 {
    let mut due: std::collections::VecDeque<(Time, u32)> = Default::default();
    let mut sent = 0;
    for t in 0..millis {
        let now = ms(t);
        while due.front().is_some_and(|d| d.0 <= now) {
            let (_, s) = due.pop_front().unwrap();
            ep.handle_datagram(now, p, &fb(10, Some(s + 1), Some(s + 1)))
                .unwrap();
        }
        if ep.poll_timeout().is_some_and(|x| x <= now) {
            ep.handle_timeout(now);
        }
        fill(ep, now, c);
        for s in cells(&drain(ep, now)) {
            due.push_back((now + Dur::from_millis(20), s));
            sent += 1;
        }
        each(ep, t, due.len());
    }
    sent
}

/// A packaging edge whose own token bucket is the bottleneck keeps cells
/// queued locally with its window open: the window did not hold anything
/// back, so `grow_only_when_limited` must not let it grow (it used to grow by
/// one cell per round without bound, because admission, which counts the
/// locally queued cells, was full).
#[test]
fn a_bucket_limited_packaging_edge_does_not_grow_its_window() {
    let cfg = Config {
        bucket: Some(BucketConfig {
            rate: 519 * 100,
            burst: 519,
            refill: crate::bucket::Refill::Periodic(Dur::from_millis(10)),
        }),
        ..Config::default()
    };
    let (mut ep, p, cs) = client(cfg, 1);
    let c = cs[0];
    let sent = against_an_idle_successor(&mut ep, p, c, 3000, |_, _, _| {});
    let st = ep.circuit_stats(c, Direction::Forward);
    assert!(sent > 250, "the bucket's rate: {sent} cells in 3 s");
    assert!(st.rounds > 20, "{st:?}");
    assert!(
        st.swnd <= 6,
        "swnd {} (queued here {}): grew although the bucket, not the window, held cells back",
        st.swnd,
        st.queued
    );
}

/// The same edge without a bucket is window-limited and grows (Eq. 1).
#[test]
fn a_window_limited_packaging_edge_grows() {
    let (mut ep, p, cs) = client(Config::default(), 1);
    let c = cs[0];
    against_an_idle_successor(&mut ep, p, c, 1000, |_, _, _| {});
    let st = ep.circuit_stats(c, Direction::Forward);
    assert!(st.swnd >= 15, "{st:?}");
}

/// Slow start on a path without queueing doubles until the window reaches
/// the successor's circuit limit, and stops there: more cells in flight than
/// the successor accepts would be refused (paper §3).
#[test]
fn the_window_never_exceeds_the_circuit_limit() {
    for (limit, max_window, cap) in [(64, 10_000, 64), (10_000, 100, 100)] {
        let cfg = Config {
            startup: crate::backtap::Startup::SlowStart { gamma: 1 },
            circuit_limit: limit,
            max_window,
            ..Config::default()
        };
        assert_eq!(cfg.window_cap(), cap);
        let (mut ep, p, cs) = client(cfg, 1);
        let c = cs[0];
        let mut most_in_flight = 0;
        against_an_idle_successor(&mut ep, p, c, 2000, |ep, t, in_flight| {
            most_in_flight = most_in_flight.max(in_flight);
            let st = ep.circuit_stats(c, Direction::Forward);
            assert!(st.swnd <= cap, "{t} ms: {st:?}");
        });
        let st = ep.circuit_stats(c, Direction::Forward);
        assert_eq!(st.swnd, cap, "{st:?}");
        assert!(st.retransmits == 0, "{st:?}");
        // Unforwarded cells (here: in flight) stay within the cap.
        assert!(most_in_flight as u32 <= cap, "{most_in_flight}");
        assert!(most_in_flight as u32 >= cap * 3 / 4, "{most_in_flight}");
    }
}

/// After a queue's first SACK, RACK's order of sends keeps only cells not
/// yet released: a long clean stretch (no SACK, no reorder timer) does not
/// grow it by one entry per cell sent.
#[test]
fn rack_send_order_stays_bounded_on_a_clean_stretch() {
    let cfg = Config {
        sack: true,
        initial_window: 8,
        pack_delay: Dur::ZERO,
        ..Config::default()
    };
    let (mut ep, p, cs) = client(cfg, 1);
    let c = cs[0];
    assert_eq!(fill(&mut ep, ms(0), c), 8);
    assert_eq!(cells(&drain(&mut ep, ms(0))), (1..=8).collect::<Vec<_>>());
    // Cell 2 is missing, 3 and 4 arrived: the queue gets its first SACK.
    let mut s = wire::Sack::new(10, 2);
    assert!(s.push(3, 5));
    let mut dg = vec![wire::VERSION];
    wire::put_sack(&mut dg, &s);
    ep.handle_datagram(ms(10), p, &dg).unwrap();
    assert!(ep.circuit_stats(c, Direction::Forward).sacks_in >= 1);
    drain(&mut ep, ms(10));
    // Then a clean stretch: everything sent is ACKed and forwarded each
    // millisecond, and the application refills the window.
    let mut sent = 8u32;
    for k in 0..2000u64 {
        let t = ms(20 + k);
        ep.handle_datagram(t, p, &fb(10, Some(sent + 1), Some(sent + 1)))
            .unwrap();
        sent += fill(&mut ep, t, c);
        drain(&mut ep, t);
    }
    let w = ep.circuit_stats(c, Direction::Forward).swnd as usize;
    assert!(sent > 4000, "{sent} cells sent");
    let n = ep.rack_order_len(c, Direction::Forward);
    assert!(n <= w + 8, "{n} entries for a window of {w}");
}
