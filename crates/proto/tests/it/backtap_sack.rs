//! Selective acknowledgement and RACK-TLP ([`Config::sack`],
//! `docs/backtap.md`, "Selective acknowledgement"): a hop driven by hand
//! with SACK items (several holes per round trip, a lost retransmission, a
//! tail loss probe), the trust bounds of SACK blocks as properties, and
//! transfers over the lossy test network.

use crate::backtap_net;
use crate::backtap_net::{secs, LinkCfg, Net};
use hopwise_proto::backtap::wire::{self, Feedback, Item, Sack, CELL_BODY_LEN};
use hopwise_proto::backtap::{CircuitId, Config, Direction, Endpoint, HopStats, PeerId};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

fn ms(x: f64) -> Time {
    Time::from_secs_f64(x / 1000.0)
}

/// The first hop of a circuit, driven by hand: the test is its successor.
struct Hop {
    ep: Endpoint,
    c: CircuitId,
    p: PeerId,
}

impl Hop {
    fn new(cfg: Config) -> Hop {
        let mut ep = Endpoint::new(cfg);
        let p = ep.add_peer(1);
        let c = ep.add_circuit(None, Some((p, 7)));
        Hop { ep, c, p }
    }

    /// The application hands over `n` cells.
    fn write(&mut self, now: Time, n: u32) {
        for _ in 0..n {
            self.ep
                .send_cell(now, self.c, Direction::Forward, &[0u8; CELL_BODY_LEN])
                .expect("room");
        }
    }

    /// The cells sent at `now`, in order.
    fn sent(&mut self, now: Time) -> Vec<u32> {
        let mut v = Vec::new();
        while let Some((_, d)) = self.ep.poll_transmit(now) {
            for it in wire::decode(&d).expect("decodes").items() {
                if let Item::Cell(c) = it {
                    v.push(c.seq);
                }
            }
        }
        v
    }

    fn sack(&mut self, now: Time, ack: u32, blocks: &[(u32, u32)]) {
        let s = Sack::from_blocks(7, ack, blocks).expect("a valid item");
        self.ep
            .handle_datagram(now, self.p, &wire::encode(&[Item::Sack(s)]))
            .unwrap();
    }

    fn feedback(&mut self, now: Time, ack: Option<u32>, fwd: Option<u32>) {
        let f = Feedback {
            circ_id: 7,
            ack,
            fwd,
        };
        self.ep
            .handle_datagram(now, self.p, &wire::encode(&[Item::Feedback(f)]))
            .unwrap();
    }

    fn stats(&self) -> HopStats {
        self.ep.circuit_stats(self.c, Direction::Forward)
    }

    /// Runs the endpoint's timers up to `until`, collecting the cells sent.
    fn run_until(&mut self, until: Time) -> Vec<(Time, u32)> {
        let mut v = Vec::new();
        while let Some(t) = self.ep.poll_timeout().filter(|&t| t <= until) {
            self.ep.handle_timeout(t);
            v.extend(self.sent(t).into_iter().map(|s| (t, s)));
        }
        v
    }
}

fn cfg() -> Config {
    Config {
        initial_window: 20,
        pack_delay: Dur::ZERO,
        ..Config::default()
    }
}

#[test]
fn several_holes_are_repaired_in_one_round_trip() {
    let mut h = Hop::new(cfg());
    h.write(ms(0.0), 20);
    assert_eq!(h.sent(ms(0.0)), (1..=20).collect::<Vec<_>>());
    // The successor lacks 1, 5 and 9.
    h.sack(ms(10.0), 1, &[(10, 21), (2, 5), (6, 9)]);
    assert_eq!(h.sent(ms(10.0)), [1, 5, 9], "every hole at once");
    let s = h.stats();
    assert_eq!((s.rack_lost, s.retransmits, s.timeouts), (3, 3, 0), "{s:?}");
    assert_eq!(s.sacked, 17);
    assert_eq!(s.head, 1, "SACK releases nothing");
    assert_eq!(s.loss_cuts, 1, "one loss event for the episode");

    // Without SACK the same losses give duplicate ACKs: one hole per round trip.
    let mut h = Hop::new(cfg());
    h.write(ms(0.0), 20);
    h.sent(ms(0.0));
    for _ in 0..3 {
        h.feedback(ms(10.0), Some(1), None);
    }
    assert_eq!(h.sent(ms(10.0)), [1]);
}

#[test]
fn a_lost_retransmission_is_repaired_without_a_timeout() {
    let mut h = Hop::new(cfg());
    h.write(ms(0.0), 20);
    h.sent(ms(0.0));
    h.sack(ms(10.0), 1, &[(2, 5), (6, 9), (10, 21)]);
    h.write(ms(10.0), 5);
    assert_eq!(h.sent(ms(10.0)), [1, 5, 9, 21, 22, 23, 24, 25]);
    // 1 and 9 arrived, the retransmission of 5 did not, the cells sent
    // after it did: RACK finds it lost (RFC 8985 §6).
    h.sack(ms(20.0), 5, &[(6, 26)]);
    assert_eq!(h.sent(ms(20.0)), [5]);
    let s = h.stats();
    assert_eq!(
        (s.timeouts, s.lost_retransmits, s.rack_lost),
        (0, 0, 4),
        "{s:?}"
    );
    h.feedback(ms(30.0), Some(26), None);
    let s = h.stats();
    assert_eq!((s.head, s.sacked, s.in_flight), (26, 0, 0), "{s:?}");
}

#[test]
fn a_tail_loss_is_found_by_a_probe_before_the_timeout() {
    let mut h = Hop::new(cfg());
    h.write(ms(0.0), 4);
    assert_eq!(h.sent(ms(0.0)), [1, 2, 3, 4]);
    // 2 is missing, 3 and 4 arrived: with two cells SACKed RACK waits a
    // reordering window (min_rtt / 4) on its reorder timer.
    h.sack(ms(10.0), 2, &[(3, 5)]);
    assert!(h.sent(ms(10.0)).is_empty());
    assert_eq!(h.ep.poll_timeout(), Some(ms(12.5)));
    assert_eq!(h.run_until(ms(12.5)), [(ms(12.5), 2)]);
    h.feedback(ms(22.5), Some(5), Some(5));
    // Four new cells, all lost; nothing comes back.
    h.write(ms(22.5), 4);
    assert_eq!(h.sent(ms(22.5)), [5, 6, 7, 8]);
    let rto_at = ms(22.5) + h.stats().rto;
    // PTO = 2·SRTT (10 ms samples): the last cell goes again at 42.5 ms.
    let probe = h.run_until(ms(50.0));
    assert_eq!(probe, [(ms(42.5), 8)]);
    assert_eq!(h.stats().tlp_probes, 1);
    // The probe arrives: its SACK shows 5..7 lost.
    h.sack(ms(52.5), 5, &[(8, 9)]);
    assert_eq!(h.sent(ms(52.5)), [5, 6, 7]);
    let s = h.stats();
    assert!(ms(52.5) < rto_at, "{rto_at:?}");
    assert_eq!((s.timeouts, s.rack_lost), (0, 4), "{s:?}");
}

#[test]
fn the_receiver_sends_the_most_recent_run_first_then_the_lowest() {
    let cfg = Config {
        sack: true,
        pack_delay: Dur::ZERO,
        ..Config::default()
    };
    let mut ep = Endpoint::new(cfg);
    let prev = ep.add_peer(0);
    let c = ep.add_circuit(Some((prev, 3)), None);
    let cell = |seq: u32| {
        let b = [0u8; CELL_BODY_LEN];
        wire::encode(&[Item::Cell(wire::Cell {
            circ_id: 3,
            seq,
            flags: 0,
            body: &b,
        })])
    };
    let mut last = None;
    // Runs 3, 5..6, 8, 10, ..., 24 (eleven runs), then 6 arrives last.
    let mut seqs: Vec<u32> = vec![1, 3, 5];
    seqs.extend((8..=24).step_by(2));
    seqs.push(6);
    for (i, &s) in seqs.iter().enumerate() {
        let now = ms(i as f64);
        ep.handle_datagram(now, prev, &cell(s)).unwrap();
        while let Some((_, d)) = ep.poll_transmit(now) {
            for it in wire::decode(&d).unwrap().items() {
                if let Item::Sack(s) = it {
                    last = Some(s);
                }
            }
        }
    }
    let s = last.expect("a SACK while cells are held above a gap");
    assert_eq!(s.ack, 2);
    assert_eq!(
        s.blocks(),
        [
            (5, 7),
            (3, 4),
            (8, 9),
            (10, 11),
            (12, 13),
            (14, 15),
            (16, 17),
            (18, 19)
        ]
    );
    assert_eq!(ep.stats().sack_out, seqs.len() as u64 - 1);
    // A request is answered with the SACK too.
    let req = wire::encode(&[Item::Feedback(Feedback {
        circ_id: 3,
        ack: None,
        fwd: None,
    })]);
    ep.handle_datagram(ms(50.0), prev, &req).unwrap();
    let (_, d) = ep.poll_transmit(ms(50.0)).unwrap();
    let items: Vec<_> = wire::decode(&d).unwrap().items().collect();
    assert!(matches!(items[0], Item::Sack(s) if s.ack == 2), "{items:?}");
    assert!(
        matches!(items[1], Item::Feedback(f) if f.ack.is_none() && f.fwd == Some(1)),
        "{items:?}"
    );
    // Once the gaps are filled (2, 4, then 7, 9 ... 23) the SACK is gone.
    for s in [2, 4].into_iter().chain((7..=23).step_by(2)) {
        ep.handle_datagram(ms(60.0), prev, &cell(s)).unwrap();
    }
    let (_, d) = ep.poll_transmit(ms(60.0)).unwrap();
    let items: Vec<_> = wire::decode(&d).unwrap().items().collect();
    assert!(
        matches!(items[..], [Item::Feedback(f)] if f.ack == Some(25)),
        "{items:?}"
    );
    assert_eq!(
        ep.circuit_stats(c, Direction::Forward).out_of_order,
        0,
        "all in order"
    );
}

/// Valid blocks above `ack` from (gap, length) pairs.
fn blocks_from(ack: u32, raw: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut at = ack;
    raw.iter()
        .map(|&(gap, len)| {
            let start = at + 1 + gap;
            at = start + len;
            (start, at)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// SACK blocks count only for cells that were sent and are still held
    /// for the successor; a block beyond `next_tx` is ignored and counted in
    /// `sack_rejected` (and the item in `invalid_items`), a block below
    /// `head` in `sack_stale`, an ACK beyond `next_tx` invalidates the item.
    #[test]
    fn sack_is_never_trusted_beyond_what_was_sent(
        n in 1u32..40,
        items in prop::collection::vec(
            (0u32..50, prop::collection::vec((0u32..8, 1u32..12), 1..=8)),
            1..12,
        ),
    ) {
        let mut h = Hop::new(Config { initial_window: 64, ..cfg() });
        h.write(ms(0.0), n);
        prop_assert_eq!(h.sent(ms(0.0)).len() as u32, n);
        let next_tx = n + 1;
        let mut head = 1u32;
        let mut sacked = std::collections::BTreeSet::new();
        let (mut rejected, mut stale, mut invalid) = (0u64, 0u64, 0u64);
        for (i, (ack, raw)) in items.iter().enumerate() {
            let blocks = blocks_from(*ack, raw);
            h.sack(ms(10.0 + i as f64), *ack, &blocks);
            if *ack > next_tx {
                invalid += 1;
            } else {
                head = head.max(*ack);
                sacked = sacked.split_off(&head);
                let mut bad = false;
                for &(s, e) in &blocks {
                    if e > next_tx {
                        rejected += 1;
                        bad = true;
                    } else if e <= head {
                        stale += 1;
                    } else {
                        sacked.extend(s.max(head)..e);
                    }
                }
                invalid += bad as u64;
            }
            let st = h.ep.stats();
            prop_assert_eq!(st.sack_rejected, rejected);
            prop_assert_eq!(st.sack_stale, stale);
            prop_assert_eq!(st.invalid_items, invalid);
            let s = h.stats();
            prop_assert_eq!(s.head, head);
            prop_assert_eq!(s.next_tx, next_tx);
            prop_assert_eq!(s.sacked as usize, sacked.len(), "{:?}", s);
            prop_assert!(sacked.iter().all(|&x| x >= head && x < next_tx));
            prop_assert!(s.sacked <= s.in_flight);
        }
    }

    /// Liveness: a successor that claims in a SACK a cell it lacks still
    /// gets it, within one RTO of its last ACK.
    #[test]
    fn a_cell_sacked_but_missing_is_still_sent(
        n in 2u32..30,
        k in 2u32..30,
        a0 in 1u32..30,
    ) {
        let k = k.min(n);
        let a0 = a0.min(k - 1);
        let mut h = Hop::new(Config { initial_window: 64, ..cfg() });
        h.write(ms(0.0), n);
        h.sent(ms(0.0));
        // A forged (or reneged) claim: everything above a0, k included.
        h.sack(ms(5.0), a0, &[(a0 + 1, n + 1)]);
        let mut got: Vec<u32> = h.sent(ms(5.0));
        // The truth: all but k arrived.
        if k < n {
            h.sack(ms(10.0), k, &[(k + 1, n + 1)]);
        } else {
            h.feedback(ms(10.0), Some(k), None);
        }
        got.extend(h.sent(ms(10.0)));
        let deadline = ms(10.0) + h.stats().rto;
        got.extend(h.run_until(deadline).into_iter().map(|(_, s)| s));
        prop_assert!(got.contains(&k), "cell {} not sent again by {:?}: {:?}", k, deadline, got);
    }
}

fn chain(cfg: Config, link: LinkCfg, seed: u64) -> (Net, backtap_net::Circ) {
    let mut net = Net::new(seed);
    let n: Vec<usize> = (0..4).map(|_| net.add_node(cfg.clone())).collect();
    for w in n.windows(2) {
        net.connect(w[0], w[1], link);
    }
    let c = net.add_circuit(&n);
    (net, c)
}

/// `bytes` through three hops of 20 Mbit/s, 5 ms, losing `loss` of the
/// datagrams in both directions; the paper's configuration plus `sack`.
fn transfer(sack: bool, bytes: u64, loss: f64, seed: u64) -> Net {
    let cfg = Config {
        sack,
        ..Config::default()
    };
    let (mut net, c) = chain(cfg, LinkCfg::new(20_000_000, 5, loss), seed);
    net.start_flow(&c, Direction::Forward, bytes, 1);
    let ok = net.run_to_completion(secs(3000.0), Dur::from_millis(100));
    assert!(ok, "not byte-exact: {:?}", net.flows[0].error);
    net
}

#[test]
fn sack_is_much_faster_at_five_percent_loss() {
    for seed in [2, 5] {
        let t = |sack| {
            let net = transfer(sack, 2_000_000, 0.05, seed);
            let sacks: u64 = net.nodes.iter().map(|n| n.ep.stats().sack_in).sum();
            assert_eq!(sacks > 0, sack);
            net.flows[0].done_at.unwrap().as_secs_f64()
        };
        let (off, on) = (t(false), t(true));
        eprintln!("seed {seed}: 2 MB at 5 % loss: {off:.1} s without SACK, {on:.1} s with");
        assert!(
            on < 0.7 * off,
            "seed {seed}: {on:.1} s with SACK, {off:.1} s without"
        );
    }
}

fn fingerprint(seed: u64) -> String {
    let net = transfer(true, 500_000, 0.05, seed);
    let sacks: u64 = net.nodes.iter().map(|n| n.ep.stats().sack_in).sum();
    assert!(sacks > 0, "the run used SACK");
    let mut s = format!("{:?} {}", net.flows[0].done_at, net.datagrams);
    for (i, node) in net.nodes.iter().enumerate() {
        s += &format!(" {:?}", node.ep.stats());
        if i < 3 {
            s += &format!(" {:?}", net.stats(i, CircuitId(0), Direction::Forward));
        }
    }
    s
}

#[test]
fn runs_with_sack_are_deterministic() {
    let a = fingerprint(11);
    assert_eq!(a, fingerprint(11));
    assert_ne!(a, fingerprint(12), "the seed matters");
}
