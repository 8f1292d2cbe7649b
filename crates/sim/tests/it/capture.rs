//! Packet captures of a real run: one record per packet that left the tapped
//! link direction, in time order, whose TCP headers follow the connection.

use crate::common::*;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::pcap::{self, MemorySink, Record};
use hopwise_sim::spec::Limit;
use hopwise_sim::Sim;
use std::io;

/// The records of a capture, checked against the snap length it declares.
fn read_pcap(f: &[u8]) -> Vec<Record> {
    assert_eq!(
        &f[0..4],
        &0xA1B2_3C4Du32.to_le_bytes(),
        "nanosecond pcap magic"
    );
    assert_eq!(&f[20..24], &101u32.to_le_bytes(), "LINKTYPE_RAW");
    pcap::read(f).unwrap()
}

/// One NewReno flow over a 10 Mbit/s bottleneck with a 20-packet queue.
fn one_flow() -> hopwise_sim::spec::Scenario {
    let mut sc = dumbbell(
        1,
        Rate::from_mbps(10),
        Dur::from_millis(10),
        Dur::from_millis(1),
        Limit::Packets(20),
        Dur::from_secs(5),
    );
    sc.flows.push(bulk(
        "f",
        "h0",
        "d0",
        CcConfig::from_name("newreno").unwrap(),
    ));
    sc
}

#[test]
fn bottleneck_capture_matches_the_links_own_counts() {
    let sc = one_flow();
    let mut sim = Sim::new(&sc).unwrap();
    let data = MemorySink::new();
    let acks = MemorySink::new();
    sim.attach_capture("bottleneck:ab", "data.pcap", Box::new(data.clone()), 96)
        .unwrap();
    sim.attach_capture("bottleneck:ba", "acks.pcap", Box::new(acks.clone()), 96)
        .unwrap();
    let err = sim
        .attach_capture("bottleneck:xy", "x", Box::new(io::sink()), 96)
        .unwrap_err();
    assert!(err.contains("bottleneck:ab"), "{err}");
    sim.run();
    sim.finish_captures().unwrap();
    // Capturing observes; it changes nothing in the run.
    let mut plain = Sim::new(&sc).unwrap();
    plain.run();
    assert_eq!(plain.event_hash(), sim.event_hash());
    assert!(plain.captures().is_empty());

    let ab = sim.iface(sim.iface_id("bottleneck:ab").unwrap());
    let recs = read_pcap(&data.contents());
    // Every packet that started transmission, and only those.
    assert_eq!(recs.len() as u64, ab.stats().tx_packets);
    assert_eq!(
        sim.captures()[0],
        (
            "bottleneck:ab",
            "data.pcap",
            recs.len() as u64,
            recs.iter().map(|r| r.orig_len as u64).sum()
        )
    );
    assert!(recs.windows(2).all(|w| w[0].time <= w[1].time));
    // Back-to-back full-sized packets are one transmission time apart.
    let tx_1500 = 1500 * 8 * 1_000_000_000 / 10_000_000;
    assert!(recs
        .windows(2)
        .any(|w| (w[1].time - w[0].time).as_nanos() == tx_1500));
    // Data flows h0 → d0: 10.0.0.3 → 10.0.0.4 (nodes r1, r2, h0, d0).
    let mut isn = None;
    let mut ranges = Vec::new();
    for r in &recs {
        assert_eq!(
            u16::from_be_bytes([r.data[2], r.data[3]]) as u32,
            r.orig_len
        );
        let v = pcap::tcp_view(&r.data).expect("a TCP segment");
        assert_eq!((v.src, v.dst), ([10, 0, 0, 3], [10, 0, 0, 4]));
        if v.flags & 0x02 != 0 {
            assert!(isn.replace(v.seq).is_none(), "one SYN");
            continue;
        }
        let off = v.seq.wrapping_sub(isn.expect("SYN first").wrapping_add(1)) as u64;
        ranges.push((off, off + u64::from(v.payload_len)));
    }
    // Whatever the receiver read crossed the bottleneck, possibly after
    // retransmissions of what the queue dropped: the captured ranges cover
    // a prefix of the stream at least that long.
    ranges.sort_unstable();
    let mut covered = 0;
    for (a, b) in ranges {
        if a > covered {
            break;
        }
        covered = covered.max(b);
    }
    let read = sim
        .socks()
        .map(|e| sim.endpoint(e).received())
        .max()
        .unwrap();
    assert!(read > 1_000_000, "{read}");
    assert!(covered >= read, "captured prefix {covered} < read {read}");
    assert!(ab.stats().drops > 0, "the 20-packet queue overflows");
    // The reverse direction carries the pure ACKs: 52 B with timestamps.
    let back = read_pcap(&acks.contents());
    assert!(back.len() > 100);
    assert!(back
        .iter()
        .skip(1)
        .all(|r| r.orig_len >= 52 && r.orig_len < 100));
}

#[test]
fn a_detached_capture_stops_recording() {
    let mut sim = Sim::new(&one_flow()).unwrap();
    let sink = MemorySink::new();
    sim.attach_capture("bottleneck:ab", "x", Box::new(sink.clone()), 64)
        .unwrap();
    let stop = Time::ZERO + Dur::from_secs(1);
    sim.run_until(stop);
    let tx = |sim: &Sim| {
        sim.iface(sim.iface_id("bottleneck:ab").unwrap())
            .stats()
            .tx_packets
    };
    let sent = tx(&sim);
    let (n, bytes) = sim.detach_capture("bottleneck:ab").unwrap();
    assert_eq!(n, sent);
    assert!(sim.captures().is_empty());
    let e = sim.detach_capture("bottleneck:ab").unwrap_err();
    assert!(e.contains("no capture"), "{e}");
    assert!(sim.detach_capture("nowhere:ab").is_err());
    sim.run();
    assert!(tx(&sim) > n);
    let recs = read_pcap(&sink.contents());
    assert_eq!(recs.len() as u64, n);
    assert_eq!(recs.iter().map(|r| r.orig_len as u64).sum::<u64>(), bytes);
    assert!(recs.iter().all(|r| r.time <= stop));
}
