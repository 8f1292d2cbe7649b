//! The BackTap datagram codec: round trips, every class of malformed input,
//! and property-based fuzzing of the decoder and of an endpoint fed garbage
//! (the long-running fuzzer is `crates/proto/fuzz`).

use hopwise_proto::backtap::wire::{
    self, Cell, CellBody, DecodeError, Feedback, Item, Problem, Sack, CELL_BODY_LEN, CELL_ITEM_LEN,
    FLAG_CLOSE, FLAG_OPEN, MAX_SACK_BLOCKS, TYPE_CELL, TYPE_FEEDBACK, TYPE_SACK, VERSION,
};
use hopwise_proto::backtap::{Config, Direction, Endpoint};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

/// An owned item, for generating and comparing.
#[derive(Clone, Debug, PartialEq)]
enum Owned {
    Cell {
        circ_id: u32,
        seq: u32,
        flags: u8,
        body: Vec<u8>,
    },
    Fb(Feedback),
    Sack(Sack),
}

fn owned(it: &Item) -> Owned {
    match it {
        Item::Cell(c) => Owned::Cell {
            circ_id: c.circ_id,
            seq: c.seq,
            flags: c.flags,
            body: c.body.to_vec(),
        },
        Item::Feedback(f) => Owned::Fb(*f),
        Item::Sack(s) => Owned::Sack(*s),
    }
}

fn encode(items: &[Owned]) -> Vec<u8> {
    let mut out = Vec::new();
    wire::begin(&mut out);
    for it in items {
        match it {
            Owned::Cell {
                circ_id,
                seq,
                flags,
                body,
            } => {
                let b: &CellBody = body.as_slice().try_into().unwrap();
                wire::put_cell(&mut out, *circ_id, *seq, *flags, b);
            }
            Owned::Fb(f) => wire::put_feedback(&mut out, f),
            Owned::Sack(s) => wire::put_sack(&mut out, s),
        }
    }
    out
}

fn item() -> impl Strategy<Value = Owned> {
    prop_oneof![
        (any::<u32>(), any::<u32>(), 0u8..4, any::<u8>()).prop_map(
            |(circ_id, seq, flags, fill)| Owned::Cell {
                circ_id,
                seq,
                flags,
                body: (0..CELL_BODY_LEN)
                    .map(|i| fill.wrapping_add(i as u8))
                    .collect(),
            }
        ),
        (any::<u32>(), any::<Option<u32>>(), any::<Option<u32>>())
            .prop_map(|(circ_id, ack, fwd)| Owned::Fb(Feedback { circ_id, ack, fwd })),
        sack().prop_map(Owned::Sack),
    ]
}

/// A valid SACK item: blocks from cut points above `ack`, in a shuffled order.
fn sack() -> impl Strategy<Value = Sack> {
    (
        any::<u32>(),
        0u32..u32::MAX / 2,
        prop::collection::vec((1u32..50, 1u32..50), 1..=MAX_SACK_BLOCKS),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(circ_id, ack, gaps, rot)| {
            let mut at = ack;
            let mut blocks: Vec<(u32, u32)> = gaps
                .iter()
                .map(|&(gap, len)| {
                    let start = at + gap;
                    at = start + len;
                    (start, at)
                })
                .collect();
            let k = rot.index(blocks.len());
            blocks.rotate_left(k);
            Sack::from_blocks(circ_id, ack, &blocks).expect("valid by construction")
        })
}

/// What an accepted SACK item promises, whatever bytes it came from.
fn check_sack(s: &Sack) {
    let b = s.blocks();
    assert!((1..=MAX_SACK_BLOCKS).contains(&b.len()));
    for (i, &(a, e)) in b.iter().enumerate() {
        assert!(s.ack < a && a < e, "{s:?}");
        for &(a2, e2) in &b[..i] {
            assert!(e < a2 || e2 < a, "disjoint, not touching: {s:?}");
        }
    }
}

/// Decoding must never panic; a datagram it accepts re-encodes to itself.
fn check_total(data: &[u8]) {
    if let Ok(d) = wire::decode(data) {
        let items: Vec<Owned> = d.items().map(|i| owned(&i)).collect();
        assert_eq!(items.len(), d.len());
        for it in &items {
            if let Owned::Sack(s) = it {
                check_sack(s);
            }
        }
        assert_eq!(encode(&items), data, "canonical");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(items in prop::collection::vec(item(), 0..8)) {
        let bytes = encode(&items);
        let d = wire::decode(&bytes).unwrap();
        let back: Vec<Owned> = d.items().map(|i| owned(&i)).collect();
        prop_assert_eq!(back, items);
    }

    /// SACK items from arbitrary numbers: accepted exactly when every block
    /// is above `ack` and no two overlap or touch; accepted ones are canonical.
    #[test]
    fn sack_items_from_arbitrary_blocks(
        ack in 0u32..64,
        blocks in prop::collection::vec((0u32..96, 0u32..96), 0..10),
    ) {
        let mut v = vec![VERSION, TYPE_SACK, 0, 0, 0, 9];
        v.extend_from_slice(&ack.to_be_bytes());
        v.push(blocks.len() as u8);
        for &(a, e) in &blocks {
            v.extend_from_slice(&a.to_be_bytes());
            v.extend_from_slice(&e.to_be_bytes());
        }
        let valid = (1..=MAX_SACK_BLOCKS).contains(&blocks.len())
            && blocks.iter().enumerate().all(|(i, &(a, e))| {
                ack < a && a < e && blocks[..i].iter().all(|&(a2, e2)| e < a2 || e2 < a)
            });
        let r = wire::decode(&v);
        prop_assert_eq!(r.is_ok(), valid, "{:?}: {:?}", blocks, r);
        check_total(&v);
        match r {
            Ok(_) => prop_assert_eq!(
                Sack::from_blocks(9, ack, &blocks).map(|s| s.blocks().to_vec()),
                Ok(blocks.clone())
            ),
            Err(e) => match e.problem {
                Problem::BadSackCount(n) => {
                    prop_assert_eq!(n as usize, blocks.len());
                    prop_assert_eq!(e.offset, 10);
                }
                Problem::BadSackBlock { index } => {
                    prop_assert_eq!(e.offset, 11 + 8 * index as usize);
                    prop_assert_eq!(
                        Sack::from_blocks(9, ack, &blocks),
                        Err(Problem::BadSackBlock { index })
                    );
                }
                p => prop_assert!(false, "{:?}", p),
            },
        }
    }

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..1600)) {
        check_total(&data);
        // Bytes after a valid version byte reach the item parser.
        let mut v = vec![VERSION];
        v.extend_from_slice(&data);
        check_total(&v);
    }

    #[test]
    fn mutated_datagrams_never_panic(
        items in prop::collection::vec(item(), 1..5),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut bytes = encode(&items);
        for (i, v) in flips {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        if do_cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        check_total(&bytes);
    }

    /// An endpoint fed arbitrary (mostly valid-looking) datagrams from both
    /// sides never panics and keeps its timers sane.
    #[test]
    fn endpoint_survives_garbage(
        steps in prop::collection::vec((any::<bool>(), prop::collection::vec(item(), 0..4), 0u64..50), 1..40),
    ) {
        let mut relay = Endpoint::new(Config { circuit_limit: 20, ..Config::default() });
        let prev = relay.add_peer(0);
        let next = relay.add_peer(1);
        let c = relay.add_circuit(Some((prev, 5)), Some((next, 6)));
        let mut now = Time::ZERO;
        for (from_prev, mut items, dt) in steps {
            // Aim most items at the circuit's legs.
            for it in &mut items {
                match it {
                    Owned::Cell { circ_id, seq, .. } => { *circ_id = if from_prev { 5 } else { 6 }; *seq %= 40; }
                    Owned::Fb(f) => {
                        f.circ_id = if from_prev { 5 } else { 6 };
                        f.ack = f.ack.map(|a| a % 40);
                        f.fwd = f.fwd.map(|a| a % 40);
                    }
                    Owned::Sack(s) => {
                        // Small sequence numbers, still a valid item.
                        let ack = s.ack % 30;
                        let blocks: Vec<(u32, u32)> = s
                            .blocks()
                            .iter()
                            .map(|&(a, e)| (ack + (a - s.ack) % 64, ack + (e - s.ack) % 64))
                            .collect();
                        if let Ok(t) = Sack::from_blocks(if from_prev { 5 } else { 6 }, ack, &blocks) {
                            *s = t;
                        } else {
                            *s = Sack::from_blocks(if from_prev { 5 } else { 6 }, ack, &[(ack + 2, ack + 4)]).unwrap();
                        }
                    }
                }
            }
            now += Dur::from_millis(dt);
            let _ = relay.handle_datagram(now, if from_prev { prev } else { next }, &encode(&items));
            if let Some(t) = relay.poll_timeout() {
                prop_assert!(t >= now || t + Dur::from_secs(1) > now);
                if t <= now {
                    relay.handle_timeout(now);
                }
            }
            while let Some((_, d)) = relay.poll_transmit(now) {
                prop_assert!(d.len() <= 1400);
                prop_assert!(wire::decode(&d).is_ok());
            }
            for dir in Direction::BOTH {
                let s = relay.circuit_stats(c, dir);
                prop_assert!(s.fwd_seen <= s.head && s.head <= s.next_tx && s.next_tx <= s.tail + 1, "{s:?}");
                prop_assert!(s.tail + 1 - s.next_tx <= 20, "circuit_limit holds: {s:?}");
                prop_assert!(s.sacked <= s.in_flight, "SACKed cells are in flight: {s:?}");
            }
        }
    }
}

#[test]
fn every_malformed_class_is_rejected_with_its_offset() {
    let body = [7u8; CELL_BODY_LEN];
    let cell = |flags| {
        Item::Cell(Cell {
            circ_id: 1,
            seq: 2,
            flags,
            body: &body,
        })
    };
    let fbk = |ack, fwd| {
        Item::Feedback(Feedback {
            circ_id: 3,
            ack,
            fwd,
        })
    };
    let good = wire::encode(&[
        cell(FLAG_OPEN),
        fbk(Some(4), Some(5)),
        cell(FLAG_CLOSE),
        fbk(None, None),
    ]);
    assert!(wire::decode(&good).is_ok());
    let err = |d: &[u8]| -> DecodeError { wire::decode(d).unwrap_err() };

    // Empty.
    assert_eq!(
        err(&[]),
        DecodeError {
            offset: 0,
            problem: Problem::Empty
        }
    );
    // Bad version: 0, 2, 255.
    for v in [0u8, 1, 3, 255] {
        let mut d = good.clone();
        d[0] = v;
        assert_eq!(
            err(&d),
            DecodeError {
                offset: 0,
                problem: Problem::BadVersion(v)
            }
        );
    }
    // Unknown type at each item position.
    let starts = [
        1,
        1 + CELL_ITEM_LEN,
        1 + CELL_ITEM_LEN + 14,
        1 + 2 * CELL_ITEM_LEN + 14,
    ];
    for &s in &starts {
        for t in [0u8, 4, 0x80, 0xff] {
            assert_ne!(t, TYPE_SACK);
            let mut d = good.clone();
            d[s] = t;
            assert_eq!(
                err(&d),
                DecodeError {
                    offset: s,
                    problem: Problem::UnknownType(t)
                }
            );
        }
    }
    // Reserved flag bits in each cell, reserved kind bits in each feedback item.
    for &s in &[starts[0], starts[2]] {
        for bit in 2..8 {
            let mut d = good.clone();
            d[s + 9] |= 1 << bit;
            let f = d[s + 9];
            assert_eq!(
                err(&d),
                DecodeError {
                    offset: s + 9,
                    problem: Problem::ReservedFlags(f)
                }
            );
        }
    }
    for &s in &[starts[1], starts[3]] {
        for bit in 2..8 {
            let mut d = good.clone();
            d[s + 5] |= 1 << bit;
            let k = d[s + 5];
            assert_eq!(
                err(&d),
                DecodeError {
                    offset: s + 5,
                    problem: Problem::ReservedKinds(k)
                }
            );
        }
    }
    // Truncation at every length: accepted exactly at item boundaries,
    // otherwise rejected as truncated at the start of the cut item.
    let bounds = [1, starts[1], starts[2], starts[3], good.len()];
    for len in 0..=good.len() {
        let r = wire::decode(&good[..len]);
        if len == 0 {
            assert!(r.is_err());
        } else if bounds.contains(&len) {
            assert!(r.is_ok(), "prefix of {len} bytes ends at an item boundary");
        } else {
            let e = r.unwrap_err();
            let item = *starts.iter().rev().find(|&&s| s < len).unwrap();
            match e.problem {
                Problem::Truncated { have, need } => {
                    assert_eq!(e.offset, item, "len {len}");
                    assert_eq!(have, len - item);
                    assert!(need > have);
                }
                p => panic!("len {len}: {p:?}"),
            }
        }
    }
    // A feedback item whose kinds promise more than is there.
    let d = [VERSION, TYPE_FEEDBACK, 0, 0, 0, 1, 2, 0, 0];
    assert_eq!(
        err(&d),
        DecodeError {
            offset: 1,
            problem: Problem::Truncated { need: 10, have: 8 }
        }
    );
    let d = [VERSION, TYPE_CELL, 0, 0, 0, 1];
    assert_eq!(
        err(&d),
        DecodeError {
            offset: 1,
            problem: Problem::Truncated {
                need: CELL_ITEM_LEN,
                have: 5
            }
        }
    );
    // The message names the offset.
    assert!(err(&[VERSION, 9])
        .to_string()
        .starts_with("byte 1: unknown item type"));
}

#[test]
fn item_sizes_match_the_document() {
    let body = [0u8; CELL_BODY_LEN];
    let c = Item::Cell(Cell {
        circ_id: 0,
        seq: 1,
        flags: 0,
        body: &body,
    });
    assert_eq!(c.wire_len(), 519);
    for (ack, fwd, n) in [
        (None, None, 6),
        (Some(1), None, 10),
        (None, Some(1), 10),
        (Some(1), Some(1), 14),
    ] {
        let f = Item::Feedback(Feedback {
            circ_id: 0,
            ack,
            fwd,
        });
        assert_eq!(f.wire_len(), n);
        assert_eq!(wire::encode(&[f]).len(), 1 + n);
    }
    // Two cells and 25 full feedback items fit the default budget of 1400.
    let fbs: Vec<Item> = (0..25)
        .map(|i| {
            Item::Feedback(Feedback {
                circ_id: i,
                ack: Some(1),
                fwd: Some(1),
            })
        })
        .collect();
    let full = wire::encode(&[&[c, c][..], &fbs[..]].concat());
    assert_eq!(full.len(), 1389);
    assert!(full.len() <= Config::default().payload_budget);
}
