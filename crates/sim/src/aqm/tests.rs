//! Unit tests of the AQMs on hand-driven queues: a link serving one
//! 1500 B packet every 1.2 ms (10 Mbit/s).

use super::*;
use crate::packet::NodeId;
use crate::spec::Limit;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::{Ecn, Flags, Segment};

const MS: u64 = 1_000_000;
/// 1500 B at 10 Mbit/s.
const TICK: u64 = 1_200_000;

fn pkt(port: u16, ecn: Ecn) -> Packet {
    let seg = Segment {
        src_port: port,
        dst_port: 5001,
        flags: Flags::ACK,
        ecn,
        payload: bytes::Bytes::from(vec![0u8; 1460]),
        ..Default::default()
    };
    Packet::tcp(NodeId(0), NodeId(1), 0, seg)
}

fn codel_par(ecn: bool) -> CodelParams {
    CodelParams {
        target_ns: 5 * MS,
        interval_ns: 100 * MS,
        ecn,
    }
}

/// 100 packets arrive at once and leave one per tick. The sojourn time
/// passes the 5 ms target at the fifth packet (6 ms); CoDel drops once it
/// has stayed above for a whole 100 ms interval, at the first dequeue at
/// or after 106 ms, and not before (RFC 8289 §3.2).
#[test]
fn codel_drops_only_after_an_interval_above_target() {
    let mut q = Codel::new(codel_par(false), Limit::Packets(1000));
    for _ in 0..100 {
        assert!(q.enqueue(0, pkt(1, Ecn::NotEct)));
    }
    let mut t = 0;
    let mut first_drop = None;
    while q.packets() > 0 {
        t += TICK;
        let before = q.counts.aqm_drops;
        q.dequeue(t);
        if q.counts.aqm_drops > before && first_drop.is_none() {
            first_drop = Some(t);
        }
    }
    let d = first_drop.expect("CoDel dropped");
    assert!(
        (106 * MS..106 * MS + TICK).contains(&d),
        "first drop at {d} ns"
    );
    assert_eq!(q.counts.queued_drops, q.counts.aqm_drops);
    assert_eq!(q.counts.marks, 0);
}

/// Under a steady overload (two arrivals per departure) the drops follow
/// the control law `interval / √count` (RFC 8289 §5.5): the second comes
/// 100 ms after the first (count 1), the third 100 ms / √2 after that.
#[test]
fn codel_spaces_drops_by_the_control_law() {
    let mut q = Codel::new(codel_par(false), Limit::Packets(100_000));
    let mut drops = vec![];
    let mut t = 0;
    while drops.len() < 3 {
        t += TICK;
        assert!(q.enqueue(t, pkt(1, Ecn::NotEct)));
        assert!(q.enqueue(t, pkt(1, Ecn::NotEct)));
        let before = q.counts.aqm_drops;
        q.dequeue(t);
        if q.counts.aqm_drops > before {
            drops.push(t);
        }
    }
    let gap = |a: u64, b: u64, want: f64| {
        let got = (b - a) as f64;
        assert!((got - want).abs() <= TICK as f64, "gap {got} want {want}");
    };
    gap(drops[0], drops[1], 100.0 * MS as f64);
    gap(drops[1], drops[2], 100.0 * MS as f64 / 2f64.sqrt());
}

/// With `ecn`, CoDel marks an ECN-capable packet where it would drop it and
/// still sends it; a packet that is not ECN-capable is dropped.
#[test]
fn codel_marks_ecn_capable_packets_instead_of_dropping() {
    for (ecn, code, marks) in [
        (true, Ecn::Ect0, true),
        (true, Ecn::NotEct, false),
        (false, Ecn::Ect0, false),
    ] {
        let mut q = Codel::new(codel_par(ecn), Limit::Packets(1000));
        for _ in 0..100 {
            assert!(q.enqueue(0, pkt(1, code)));
        }
        let (mut t, mut sent, mut ce) = (0, 0, 0);
        while let Some(p) = {
            t += TICK;
            q.dequeue(t)
        } {
            sent += 1;
            ce += (p.ecn() == Ecn::Ce) as u64;
        }
        let c = q.counts;
        if marks {
            assert!(c.marks > 0 && c.aqm_drops == 0 && sent == 100, "{c:?}");
            assert_eq!(ce, c.marks, "every mark is on a packet sent");
        } else {
            assert!(c.marks == 0 && c.aqm_drops > 0 && sent + c.aqm_drops == 100);
            assert_eq!(ce, 0);
        }
    }
}

fn fq(seed: u64, limit: u64) -> FqCodel {
    FqCodel::new(
        codel_par(false),
        Limit::Packets(limit),
        1024,
        1514,
        Rng::from_seed(seed),
    )
}

/// A sparse flow's packet overtakes a backlogged flow's queue: it lands in
/// its own queue on the new-flows list, served first (RFC 8290 §4.2).
#[test]
fn fq_codel_serves_a_sparse_flow_ahead_of_a_backlog() {
    let mut q = fq(1, 10_000);
    for _ in 0..200 {
        assert!(q.enqueue(0, pkt(1, Ecn::NotEct)));
    }
    // Two packets spend the bulk flow's first quantum (1514 B): it moves
    // to the old list at the next round.
    for i in 1..=2 {
        assert_eq!(q.dequeue(i * TICK).unwrap().size, 1500);
    }
    assert!(q.enqueue(2 * TICK, pkt(2, Ecn::NotEct)));
    let next = q.dequeue(3 * TICK).unwrap();
    let crate::packet::Body::Tcp(s) = &next.body else {
        unreachable!()
    };
    assert_eq!(s.src_port, 2, "the sparse packet goes first");
    assert_eq!(q.packets(), 198);
}

/// Two backlogged flows of equal packet sizes share equally: deficit round
/// robin with a quantum of 1514 B sends two 1500 B packets of each in the
/// first round (each starts with a full quantum), then alternates.
#[test]
fn fq_codel_alternates_between_backlogged_flows() {
    let mut q = fq(1, 10_000);
    for _ in 0..50 {
        assert!(q.enqueue(0, pkt(1, Ecn::NotEct)));
        assert!(q.enqueue(0, pkt(2, Ecn::NotEct)));
    }
    let mut ports = vec![];
    for i in 1..=40 {
        // Fast enough that CoDel never drops (40 × 0.1 ms < 5 ms).
        let p = q.dequeue(i * 100_000).unwrap();
        let crate::packet::Body::Tcp(s) = &p.body else {
            unreachable!()
        };
        ports.push(s.src_port);
    }
    let ones = ports.iter().filter(|&&p| p == 1).count();
    assert_eq!(ones, 20, "{ports:?}");
    assert_eq!(ports[..4], [ports[0], ports[0], ports[2], ports[2]]);
    assert!(ports[3..].windows(2).all(|w| w[0] != w[1]), "{ports:?}");
    assert_eq!(q.counts, AqmCounts::default());
}

/// Over the limit, FQ-CoDel drops from the head of the fattest queue, not
/// the arriving packet of another flow (RFC 8290 §4.1).
#[test]
fn fq_codel_overflow_drops_from_the_fattest_flow() {
    let mut q = fq(3, 10);
    for _ in 0..10 {
        assert!(q.enqueue(0, pkt(1, Ecn::NotEct)));
    }
    assert!(q.enqueue(0, pkt(2, Ecn::NotEct)));
    assert_eq!(q.packets(), 10);
    assert_eq!(q.counts.queued_drops, 1);
    assert_eq!(q.counts.aqm_drops, 0, "an overflow, not an AQM decision");
    let mut ports = vec![];
    while let Some(p) = q.dequeue(MS) {
        let crate::packet::Body::Tcp(s) = &p.body else {
            unreachable!()
        };
        ports.push(s.src_port);
    }
    assert_eq!(ports.iter().filter(|&&p| p == 2).count(), 1);
    assert_eq!(q.bytes(), 0);
}

/// The hash is a function of the key: the same seed maps 5-tuples to the
/// same queues, another seed to others.
#[test]
fn fq_codel_hash_is_keyed_by_the_seed() {
    let map = |seed| {
        let q = fq(seed, 10);
        (0..64)
            .map(|port| q.classify_for_test(&pkt(port, Ecn::NotEct)))
            .collect::<Vec<_>>()
    };
    assert_eq!(map(5), map(5));
    assert_ne!(map(5), map(6));
    // 64 flows in 1024 queues: few collisions.
    let mut m = map(5);
    m.sort();
    m.dedup();
    assert!(m.len() >= 58, "{} distinct queues", m.len());
}

fn pie(ecn: bool) -> Pie {
    Pie::new(
        PieParams {
            target_ns: 15 * MS,
            tupdate_ns: 15 * MS,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ns: 150 * MS,
            ecn,
            ecn_threshold: 0.1,
        },
        Limit::Packets(100_000),
        Rng::from_seed(9),
    )
}

/// Under a steady 2× overload PIE's probability climbs once the burst
/// allowance is spent and it drops early; it drops nothing during the
/// allowance; once the overload stops and the queue drains, the
/// probability decays.
#[test]
fn pie_probability_follows_the_delay() {
    let mut q = pie(false);
    let mut t = 0;
    let mut drops_by_150ms = None;
    while t < 3_000 * MS {
        t += TICK;
        let _ = q.enqueue(t, pkt(1, Ecn::NotEct));
        let _ = q.enqueue(t, pkt(1, Ecn::NotEct));
        q.dequeue(t);
        if t >= 150 * MS && drops_by_150ms.is_none() {
            drops_by_150ms = Some(q.counts.aqm_drops);
        }
    }
    assert_eq!(
        drops_by_150ms,
        Some(0),
        "no drop within the burst allowance"
    );
    let p = q.probability();
    assert!(p > 0.2, "probability {p}");
    assert!(q.counts.aqm_drops > 100);
    while q.dequeue(t).is_some() {
        t += TICK;
    }
    let p_drained = q.probability();
    t += 2_000 * MS;
    assert!(q.enqueue(t, pkt(1, Ecn::NotEct)));
    assert!(
        q.probability() < p_drained / 2.0,
        "decayed from {p_drained}"
    );
}

/// With ECN PIE marks ECN-capable packets while its probability is at most
/// 10 %, and drops above (RFC 8033 §5.1).
#[test]
fn pie_marks_below_the_ecn_threshold() {
    let mut q = pie(true);
    let mut t = 0;
    // What PIE did while its probability stayed at most 10 % (it is
    // updated at most once per step: every 15 ms).
    let mut up_to_10pct = (0, 0);
    while t < 3_000 * MS {
        t += TICK;
        let _ = q.enqueue(t, pkt(1, Ecn::Ect0));
        let _ = q.enqueue(t, pkt(1, Ecn::Ect0));
        q.dequeue(t);
        if q.probability() <= 0.1 {
            up_to_10pct = (q.counts.marks, q.counts.aqm_drops);
        }
    }
    assert!(q.probability() > 0.1);
    let (m, d) = up_to_10pct;
    assert!(m > 0 && d == 0, "marks {m} drops {d} up to 10 %");
    assert!(q.counts.aqm_drops > 0, "drops above 10 %");
}

fn red(gentle: bool) -> Red {
    Red::new(
        RedParams {
            min_th: Limit::Packets(5),
            max_th: Limit::Packets(10),
            max_p: 0.1,
            // The average follows the queue exactly.
            weight: 1.0,
            gentle,
            ecn: false,
        },
        Limit::Packets(1000),
        TICK,
        Rng::from_seed(4),
    )
}

/// Arrivals to a queue of `n` packets (kept at `n`): how many RED accepts.
fn accepted_at(q: &mut Red, n: u64, tries: u64) -> u64 {
    while q.packets() < n {
        q.push_for_test(pkt(1, Ecn::NotEct));
    }
    let mut ok = 0;
    for _ in 0..tries {
        if q.enqueue(0, pkt(1, Ecn::NotEct)) {
            ok += 1;
            q.dequeue(0);
        }
    }
    ok
}

/// Below `min_th` RED accepts everything; between the thresholds it drops
/// some; at and above `max_th` the original drops everything, the gentle
/// variant with a probability rising from `max_p` to 1 up to `2·max_th`,
/// and everything beyond.
#[test]
fn red_regions_original_and_gentle() {
    let mut q = red(false);
    assert_eq!(accepted_at(&mut q, 3, 100), 100);
    // p_b = 0.1 × 2/5 = 0.04, and the count spreads the drops evenly: a
    // gap uniform in 1..25 packets, about one drop in 13.
    let mid = accepted_at(&mut q, 7, 1000);
    assert!((880..980).contains(&mid), "{mid} of 1000 at 7 packets");
    assert_eq!(
        accepted_at(&mut red(false), 11, 100),
        0,
        "forced above max_th"
    );
    // Gentle at 11: p_b = 0.1 + 0.9 × 1/10 = 0.19, gaps uniform in 1..5.
    let gentle = accepted_at(&mut red(true), 11, 1000);
    assert!(
        (400..800).contains(&gentle),
        "{gentle} of 1000 at 11 packets"
    );
    assert_eq!(
        accepted_at(&mut red(true), 20, 100),
        0,
        "forced at 2·max_th"
    );
}

/// The average decays over the whole time the queue stays empty, also
/// when an arrival in between was dropped (it did not end the idle
/// period): a flow backing off after drops is not locked out.
#[test]
fn red_average_decays_while_empty_across_drops() {
    let mut q = Red::new(
        RedParams {
            min_th: Limit::Packets(5),
            max_th: Limit::Packets(10),
            max_p: 0.1,
            weight: 0.1,
            gentle: true,
            ecn: false,
        },
        Limit::Packets(1000),
        TICK,
        Rng::from_seed(4),
    );
    for _ in 0..200 {
        q.push_for_test(pkt(1, Ecn::NotEct));
        let _ = q.enqueue(0, pkt(1, Ecn::NotEct));
    }
    assert!(q.average() > 20.0, "average {}", q.average());
    while q.dequeue(MS).is_some() {}
    // Right after the queue emptied the average is still high: dropped.
    assert!(!q.enqueue(MS + 1, pkt(1, Ecn::NotEct)));
    // A second later, after a second of empty queue, it has decayed.
    assert!(q.enqueue(1_000 * MS, pkt(1, Ecn::NotEct)));
    assert!(q.average() < 1.0, "average {}", q.average());
}
