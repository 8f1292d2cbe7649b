//! ACK bursts as the simulator counts them: runs of pure ACKs leaving a
//! queue after a data packet, the run still open at the end included; a
//! queue that carries only ACKs has none.

use crate::common::*;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::Summary;
use hopwise_sim::spec::{Limit, Traffic};
use hopwise_sim::Sim;

/// A bulk NewReno flow h0 → d0 over the bottleneck; with `reverse`, a
/// second flow d1 → h1 the other way (so `bottleneck:ba` carries data too).
fn run(reverse: Option<Traffic>) -> Sim {
    let mut s = dumbbell(
        2,
        Rate::from_mbps(10),
        Dur::from_millis(10),
        Dur::from_millis(1),
        Limit::Packets(30),
        Dur::from_secs(5),
    );
    s.flows.push(bulk(
        "fwd",
        "h0",
        "d0",
        CcConfig::from_name("newreno").unwrap(),
    ));
    if let Some(t) = reverse {
        let mut f = bulk("rev", "d1", "h1", CcConfig::from_name("newreno").unwrap());
        f.traffic = t;
        s.flows.push(f);
    }
    let mut sim = Sim::new(&s).unwrap();
    sim.run();
    sim
}

fn iface<'a>(sim: &'a Sim, name: &str) -> &'a hopwise_sim::sim::Iface {
    let id = sim
        .iface_id(name)
        .unwrap_or_else(|| panic!("no interface {name}"));
    sim.iface(id)
}

#[test]
fn a_direction_with_only_acks_has_no_bursts() {
    let sim = run(None);
    let ba = iface(&sim, "bottleneck:ba");
    assert!(
        ba.stats().tx_packets > 1000,
        "the ACKs left: {}",
        ba.stats().tx_packets
    );
    assert!(
        ba.stats().ack_bursts.iter().all(|&c| c == 0),
        "{:?}",
        ba.stats().ack_bursts
    );
    let sum = Summary::of(&sim, "acks", 0.0);
    let l = sum
        .links
        .iter()
        .find(|l| l.name == "bottleneck:ba")
        .unwrap();
    assert_eq!(l.median_ack_burst, None);
}

#[test]
fn acks_between_data_are_bursts() {
    let sim = run(Some(Traffic::Bulk));
    let ba = iface(&sim, "bottleneck:ba");
    let h = &ba.stats().ack_bursts;
    // Every pure ACK that left after the first data packet is in some burst
    // (the truncated one included): the counts add up.
    let in_bursts: u64 = h.iter().enumerate().map(|(n, &c)| n as u64 * c).sum();
    assert!(in_bursts > 100, "{h:?}");
    let sum = Summary::of(&sim, "acks", 0.0);
    let l = sum
        .links
        .iter()
        .find(|l| l.name == "bottleneck:ba")
        .unwrap();
    let m = l.median_ack_burst.expect("a median burst");
    assert!((1..100).contains(&m), "median {m}, histogram {h:?}");
}

/// The reverse transfer ends early; from then on `bottleneck:ba` carries only
/// the forward flow's ACKs, one long run still open at the end. It counts,
/// once, as a (truncated) burst.
#[test]
fn the_run_open_at_the_end_counts_once() {
    let sim = run(Some(Traffic::Fixed(1_000_000)));
    let h = &iface(&sim, "bottleneck:ba").stats().ack_bursts;
    let long: Vec<usize> = (1000..h.len()).filter(|&n| h[n] > 0).collect();
    assert_eq!(long.len(), 1, "one long run: {long:?}");
    assert_eq!(h[long[0]], 1);
    assert_eq!(long[0], h.len() - 1, "the longest");
    // The bursts while the reverse transfer ran are short.
    let short: u64 = h[..100].iter().sum();
    assert!(short > 10, "{:?}", &h[..100]);
}
