//! Packet captures of a real run: one record per packet that left the tapped
//! link direction, in time order, whose TCP headers follow the connection.

mod common;
use common::*;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_sim::Sim;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct Rec {
    t_ns: u64,
    orig: u32,
    ip: Vec<u8>,
}

fn read_pcap(f: &[u8]) -> Vec<Rec> {
    let le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(le(&f[0..4]), 0xA1B2_3C4D, "nanosecond pcap magic");
    assert_eq!(le(&f[20..24]), 101, "LINKTYPE_RAW");
    let snaplen = le(&f[16..20]);
    let mut out = Vec::new();
    let mut i = 24;
    while i < f.len() {
        let incl = le(&f[i + 8..]) as usize;
        assert!(incl as u32 <= snaplen);
        out.push(Rec {
            t_ns: le(&f[i..]) as u64 * 1_000_000_000 + le(&f[i + 4..]) as u64,
            orig: le(&f[i + 12..]),
            ip: f[i + 16..i + 16 + incl].to_vec(),
        });
        i += 16 + incl;
    }
    assert_eq!(i, f.len(), "no trailing bytes");
    out
}

#[test]
fn bottleneck_capture_matches_the_links_own_counts() {
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
    let mut sim = Sim::new(&sc).unwrap();
    let data = Shared::default();
    let acks = Shared::default();
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

    let ab = sim
        .ifaces
        .iter()
        .find(|f| f.name == "bottleneck:ab")
        .unwrap();
    let recs = read_pcap(&data.0.lock().unwrap());
    // Every packet that started transmission, and only those.
    assert_eq!(recs.len() as u64, ab.stats.tx_packets);
    assert_eq!(
        sim.captures()[0],
        (
            "bottleneck:ab",
            "data.pcap",
            recs.len() as u64,
            recs.iter().map(|r| r.orig as u64).sum()
        )
    );
    assert!(recs.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
    // Back-to-back full-sized packets are one transmission time apart.
    let tx_1500 = 1500 * 8 * 1_000_000_000 / 10_000_000;
    assert!(recs.windows(2).any(|w| w[1].t_ns - w[0].t_ns == tx_1500));
    // Data flows h0 → d0: 10.0.0.3 → 10.0.0.4 (nodes r1, r2, h0, d0).
    let mut isn = None;
    let mut ranges = Vec::new();
    for r in &recs {
        assert_eq!(u16::from_be_bytes([r.ip[2], r.ip[3]]) as u32, r.orig);
        assert_eq!(
            (&r.ip[12..16], &r.ip[16..20]),
            (&[10, 0, 0, 3][..], &[10, 0, 0, 4][..])
        );
        let tcp = &r.ip[20..];
        let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
        let hl = (tcp[12] >> 4) as u32 * 4;
        let len = (r.orig - 20 - hl) as u64;
        if tcp[13] & 0x02 != 0 {
            assert!(isn.replace(seq).is_none(), "one SYN");
            continue;
        }
        let off = seq.wrapping_sub(isn.expect("SYN first").wrapping_add(1)) as u64;
        ranges.push((off, off + len));
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
    let read = sim.endpoints.iter().map(|e| e.received).max().unwrap();
    assert!(read > 1_000_000, "{read}");
    assert!(covered >= read, "captured prefix {covered} < read {read}");
    assert!(ab.stats.drops > 0, "the 20-packet queue overflows");
    // The reverse direction carries the pure ACKs: 52 B with timestamps.
    let back = read_pcap(&acks.0.lock().unwrap());
    assert!(back.len() > 100);
    assert!(back.iter().skip(1).all(|r| r.orig >= 52 && r.orig < 100));
}
