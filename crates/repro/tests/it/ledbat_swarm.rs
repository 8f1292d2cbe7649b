//! The BitTorrent swarm of `reproduce ledbat-swarm`: small swarms that
//! finish in well under a second.

use hopwise_overlay::swarm::driver::{run_swarm, Class, SwarmSpec};
use hopwise_overlay::swarm::peer::Stay;
use hopwise_proto::bittorrent::BLOCK;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;

fn spec(classes: &[&str], stay: Stay, leechers: usize) -> SwarmSpec {
    SwarmSpec {
        leechers,
        arrival_mean: Dur::from_secs(5),
        transient: 0,
        pieces: 16,
        piece_len: 8 * BLOCK,
        up: Rate::from_kbps(1000),
        down: Rate::from_kbps(8000),
        buffer: 200,
        max_delay: Dur::from_millis(25),
        classes: classes
            .iter()
            .map(|c| Class {
                name: c.to_string(),
                cc: CcConfig::from_name(c).unwrap(),
            })
            .collect(),
        stay,
        pipeline: 5,
        slots: 3,
        tracker_peers: 40,
        min_peers: 20,
        limit: Dur::from_secs(3600),
    }
}

/// Every leecher gets the whole file, with no wire error, and the swarm's
/// downloads add up: at least one file per completion, and little waste.
#[test]
fn every_leecher_completes() {
    for stay in [Stay::Forever, Stay::Random { frac: 0.5 }, Stay::Leave] {
        let s = spec(&["newreno", "ledbat"], stay, 12);
        let r = run_swarm(&s, 1).unwrap();
        assert!(r.finished, "{stay:?}: not finished by {} s", r.sim_secs);
        assert!(r.errors.is_empty(), "{stay:?}: {:?}", r.errors);
        assert_eq!(r.completions.len(), 12);
        let file = (s.pieces * s.piece_len) as u64;
        assert!(r.downloaded >= 12 * file, "{stay:?}: {} B", r.downloaded);
        assert!(
            (r.duplicate_blocks * BLOCK as u64) < r.downloaded / 5,
            "{stay:?}: {} duplicate blocks of {} B",
            r.duplicate_blocks,
            r.downloaded
        );
        // Ranks are the completion order, and classes alternate on arrival.
        for (k, c) in r.completions.iter().enumerate() {
            assert_eq!(c.rank, k + 1);
            assert!(c.download_s > 0.0);
        }
        assert!(r.completions.iter().any(|c| c.class == 1));
        if stay != Stay::Forever {
            // Leavers were replaced.
            assert!(r.peers > 13, "{stay:?}: {} peers", r.peers);
        }
    }
}

/// The mechanism of seed 003 §5: a NewReno peer's uploads fill its uplink
/// buffer, a LEDBAT peer's stay near the target.
#[test]
fn newreno_uplinks_queue_more_than_ledbat() {
    let s = spec(&["newreno", "ledbat"], Stay::Random { frac: 0.5 }, 16);
    let r = run_swarm(&s, 3).unwrap();
    let mean = |h: &Vec<u64>| {
        let n: u64 = h.iter().sum();
        h.iter()
            .enumerate()
            .map(|(i, &x)| i as f64 * x as f64)
            .sum::<f64>()
            / n as f64
    };
    let (tcp, ledbat) = (mean(&r.queue_hist[0]), mean(&r.queue_hist[1]));
    assert!(
        tcp > 2.0 * ledbat,
        "NewReno {tcp:.1} vs LEDBAT {ledbat:.1} packets"
    );
    // 100 ms at 1 Mbit/s is 8.3 packets; control traffic and ACKs add some.
    assert!(ledbat < 25.0, "LEDBAT {ledbat:.1} packets");
}

#[test]
fn same_seed_same_swarm_other_seed_another() {
    let s = spec(&["newreno", "ledbat"], Stay::Random { frac: 0.5 }, 8);
    let key = |seed| {
        let r = run_swarm(&s, seed).unwrap();
        (
            r.events,
            r.completions
                .iter()
                .map(|c| (c.class, c.download_s.to_bits()))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(key(5), key(5));
    assert_ne!(key(5), key(6));
}

#[test]
fn bad_specs_are_refused_by_name() {
    let mut s = spec(&["newreno"], Stay::Forever, 2);
    s.piece_len = 1000;
    let e = run_swarm(&s, 1).unwrap_err();
    assert!(e.contains("piece length 1000 B"), "{e}");
    s = spec(&[], Stay::Forever, 2);
    let e = run_swarm(&s, 1).unwrap_err();
    assert!(e.contains("peer class"), "{e}");
}
