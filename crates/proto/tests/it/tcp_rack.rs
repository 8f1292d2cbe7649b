//! RACK-TLP (RFC 8985, `TcpConfig::rack`) end to end over the lossy pipe of
//! `tcp_transfer`: every byte arrives in order whatever the losses and the
//! reordering, a tail loss is repaired by the probe long before the
//! retransmission timer, and reordering costs fewer spurious recoveries
//! than the duplicate-ACK threshold.

use super::tcp_transfer::{all_ccs, pattern, transfer, Pipe};
use bytes::Bytes;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{Connection, TcpConfig, TcpStats};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    // Keep `cargo test` fast; PROPTEST_CASES raises it for a deeper run.
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 24;
    }
    c
}

proptest! {
    #![proptest_config(config())]

    /// Random loss (both directions) and reordering (per-packet jitter up
    /// to four times the one-way delay), every controller, with and without
    /// RACK, SACK, PRR and pacing: both directions deliver exactly the
    /// bytes written and the connection closes (`transfer` asserts both).
    #[test]
    fn every_byte_arrives_in_order_under_loss_and_reordering(
        seed in 1u64..1_000_000,
        loss_permille in 0u32..80,
        jitter_ms in 0u64..20,
        cc_index in 0usize..64,
        rack: bool,
        sack: bool,
        prr: bool,
        pacing: bool,
        size in 20_000usize..200_000,
    ) {
        let ccs = all_ccs();
        let cc = &ccs[cc_index % ccs.len()];
        let mut p = Pipe::new(20_000_000, Dur::from_millis(5), loss_permille as f64 / 1000.0, seed);
        for d in &mut p.dirs {
            d.jitter = Dur::from_millis(jitter_ms);
        }
        let cfg = TcpConfig { rack, sack, prr, pacing, ..TcpConfig::default() };
        transfer(&mut p, cfg, cc, size, size / 4, 3600);
        let st = p.ends[0].as_ref().unwrap().stats();
        if !(rack && sack) {
            prop_assert_eq!(st.tlp_probes + st.rack_losses, 0, "RACK-TLP off");
        }
    }
}

/// A writes `segs` full segments and keeps the connection open (no FIN
/// rides on the last segment); its data segments numbered in `drop`
/// (counted from 0, retransmissions included) are lost. Returns when B had
/// received everything, and A's counters.
fn tail_run(rack: bool, segs: usize, drop: &[u64]) -> (Time, TcpStats) {
    let cfg = TcpConfig {
        rack,
        ..TcpConfig::default()
    };
    let cc = CcConfig::from_name("cubic").unwrap();
    let mut p = Pipe::new(10_000_000, Dur::from_millis(10), 0.0, 5);
    p.drop_a_data = drop.to_vec();
    p.hold_open = [true, true];
    let mut client = Connection::connect(cfg.clone(), &cc, 40_000, 80, 1);
    let syn = client.poll_transmit(Time::ZERO).unwrap();
    let server = Connection::accept(cfg, &cc, &syn, 2, Time::ZERO).unwrap();
    p.ends = [Some(client), Some(server)];
    let len = segs * 1448;
    p.to_write = [pattern(len, 3), Bytes::new()];
    p.now = Time::ZERO + Dur::from_millis(10);
    p.transmit(0, syn);
    let mut t = p.now;
    while p.got[1].len() < len {
        assert!(
            t < Time::ZERO + Dur::from_secs(10),
            "B got {} of {len}",
            p.got[1].len()
        );
        t += Dur::from_micros(100);
        p.run(t);
    }
    (p.now, *p.ends[0].as_ref().unwrap().stats())
}

#[test]
fn a_tail_loss_is_repaired_by_the_probe_before_the_rto() {
    // 20 segments, the last two lost: no SACK arrives for them, so
    // without RACK-TLP only the retransmission timer (≥ 200 ms) repairs
    // them; the probe goes out after 2·SRTT (≈ 45 ms here), its SACK shows
    // segment 18 lost to RACK, and fast recovery resends it.
    let (t_off, off) = tail_run(false, 20, &[18, 19]);
    let (t_on, on) = tail_run(true, 20, &[18, 19]);
    eprintln!("tail loss: done at {t_on:?} with RACK-TLP, {t_off:?} without");
    assert_eq!(off.tlp_probes, 0);
    assert_eq!(
        off.timeouts, 1,
        "without TLP the RTO repairs the tail: {off:?}"
    );
    assert_eq!(on.timeouts, 0, "the probe repairs it: {on:?}");
    assert_eq!(on.tlp_probes, 1, "{on:?}");
    assert_eq!(
        on.rack_losses, 1,
        "the probe's SACK shows segment 18 lost: {on:?}"
    );
    assert_eq!(on.fast_recoveries, 1, "{on:?}");
    assert!(
        t_on + Dur::from_millis(150) < t_off,
        "with RACK-TLP done at {t_on:?}, without at {t_off:?}"
    );
}

/// No loss, reordering only: every retransmission is spurious.
fn reorder_run(rack: bool, seed: u64, jitter: Dur) -> TcpStats {
    let mut p = Pipe::new(20_000_000, Dur::from_millis(10), 0.0, seed);
    // Data packets take up to `jitter` longer than others: at 0.6 ms apart
    // (20 Mbit/s) a packet can be overtaken by several later ones, enough
    // for three duplicate ACKs. RACK's window is a quarter of the minimum
    // RTT, 5 ms.
    p.dirs[0].jitter = jitter;
    // No loss at all: a queue that never overflows.
    for d in &mut p.dirs {
        d.queue_limit = 100_000;
    }
    // The server answers the SYN one way later, so that the client's RTT
    // sample from the SYN-ACK is the path's 20 ms.
    p.now = Time::ZERO + Dur::from_millis(10);
    let cfg = TcpConfig {
        rack,
        ..TcpConfig::default()
    };
    transfer(&mut p, cfg, &CcConfig::NewReno, 2_000_000, 0, 600);
    assert_eq!(p.lost, 0);
    *p.ends[0].as_ref().unwrap().stats()
}

const JITTER_MS: u64 = 4;

#[test]
fn reordering_costs_fewer_spurious_recoveries_with_rack() {
    let (mut off, mut on) = ((0, 0), (0, 0));
    for seed in 1..=4 {
        let a = reorder_run(false, seed, Dur::from_millis(JITTER_MS));
        let b = reorder_run(true, seed, Dur::from_millis(JITTER_MS));
        off = (off.0 + a.fast_recoveries, off.1 + a.retransmits);
        on = (on.0 + b.fast_recoveries, on.1 + b.retransmits);
    }
    eprintln!("reordering, (fast recoveries, retransmits): dupthresh {off:?}, RACK {on:?}");
    assert!(off.0 > 0, "dupthresh mistakes reordering for loss: {off:?}");
    assert!(on.0 * 2 < off.0, "RACK: {on:?}, dupthresh: {off:?}");
    assert!(on.1 * 2 < off.1, "RACK: {on:?}, dupthresh: {off:?}");
}

/// Found by the property test above (without RACK): TCP-NICE's window
/// fell below one segment, a timeout marked the last data byte and the FIN
/// lost, and their retransmission waited for the sub-segment gate with no
/// timer armed to open it, so the connection hung in Closing.
#[test]
fn a_retransmission_held_by_the_sub_segment_gate_still_leaves() {
    let ccs = all_ccs();
    let cc = ccs
        .iter()
        .find(|c| matches!(c, CcConfig::Nice(_)))
        .expect("TCP-NICE among the controllers");
    let mut p = Pipe::new(20_000_000, Dur::from_millis(5), 0.072, 228_510);
    for d in &mut p.dirs {
        d.jitter = Dur::from_millis(11);
    }
    let cfg = TcpConfig {
        prr: true,
        ..TcpConfig::default()
    };
    transfer(&mut p, cfg, cc, 198_377, 198_377 / 4, 3600);
}
