//! RACK-TLP loss detection (`tcp.rack`, RFC 8985) in the simulator: what it
//! is for. On a reordering link it takes fewer reorderings for losses than
//! the duplicate-ACK threshold; a short transfer whose last segment is lost
//! completes after a tail loss probe instead of a retransmission timeout.

use super::common::{bulk, dumbbell};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::{FlowSummary, Summary};
use hopwise_sim::spec::{Limit, Traffic};
use hopwise_sim::{scenario, Sim};
use std::path::PathBuf;

fn reordering(sets: &[&str]) -> FlowSummary {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rack-reordering.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&sc).unwrap();
    sim.run();
    let s = Summary::of(&sim, &sc.name, 0.0);
    let b = s.link("bottleneck:ab").unwrap();
    assert_eq!(b.drops + b.wire_losses, 0, "nothing is lost: {b:?}");
    let f = s.flows[0].clone();
    assert_eq!(f.corrupt_bytes, 0);
    f
}

#[test]
fn rack_takes_fewer_reorderings_for_losses() {
    let off = reordering(&[]);
    let on = reordering(&["defaults.tcp.rack=true"]);
    eprintln!(
        "rack-reordering.toml: dupthresh {} fast recoveries, {} retransmits, {:.2} Mbit/s; \
         RACK {} fast recoveries, {} retransmits, {:.2} Mbit/s ({} RACK losses, {} probes)",
        off.fast_recoveries,
        off.retransmits,
        off.goodput_bps / 1e6,
        on.fast_recoveries,
        on.retransmits,
        on.goodput_bps / 1e6,
        on.rack_losses,
        on.tlp_probes
    );
    // Every retransmission here is spurious (nothing is lost).
    assert!(off.fast_recoveries >= 20, "dupthresh: {off:?}");
    assert!(
        on.fast_recoveries * 4 <= off.fast_recoveries,
        "RACK {on:?}\ndupthresh {off:?}"
    );
    assert!(
        on.retransmits * 4 <= off.retransmits,
        "RACK {on:?}\ndupthresh {off:?}"
    );
    assert!(
        on.goodput_bps > off.goodput_bps * 1.2,
        "RACK {on:?}\ndupthresh {off:?}"
    );
    assert_eq!((off.tlp_probes, off.rack_losses), (0, 0));
}

/// A 10-segment transfer (one initial window) from h0 to d0 whose last
/// two segments overflow the bottleneck queue (7 packets and the one on
/// the wire); returns the flow.
fn tail(rack: bool) -> FlowSummary {
    let mut s = dumbbell(
        1,
        Rate::from_mbps(10),
        Dur::from_millis(20),
        Dur::from_millis(1),
        Limit::Packets(QUEUE),
        Dur::from_secs(5),
    );
    let mut f = bulk("short", "h0", "d0", CcConfig::from_name("cubic").unwrap());
    f.traffic = Traffic::Fixed(10 * 1448);
    f.tcp.rack = rack;
    s.flows.push(f);
    let mut sim = Sim::new(&s).unwrap();
    sim.run();
    let sum = Summary::of(&sim, "tail", 0.0);
    let b = sum.link("bottleneck:ab").unwrap();
    assert_eq!(
        b.drops, 2,
        "the initial window's last two segments are dropped: {b:?}"
    );
    sum.flows[0].clone()
}

const QUEUE: u64 = 7;

#[test]
fn a_tail_loss_probe_beats_the_retransmission_timer() {
    let off = tail(false);
    let on = tail(true);
    let (t_off, t_on) = (off.completion_s.unwrap(), on.completion_s.unwrap());
    eprintln!(
        "tail loss: completes in {:.1} ms without RACK-TLP ({} timeouts), {:.1} ms with ({} probes, {} timeouts)",
        t_off * 1e3,
        off.timeouts,
        t_on * 1e3,
        on.tlp_probes,
        on.timeouts
    );
    assert_eq!(off.timeouts, 1, "{off:?}");
    assert_eq!((on.timeouts, on.tlp_probes), (0, 1), "{on:?}");
    // The RTO waits at least 200 ms (min_rto); the probe 2·SRTT ≈ 100 ms.
    assert!(t_on + 0.08 < t_off, "with {t_on} s, without {t_off} s");
}
