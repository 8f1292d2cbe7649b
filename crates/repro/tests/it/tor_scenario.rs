//! The 50-relay scenario file (scenarios/tor-50-relays.toml) set to the
//! star of the backtap-network reproduction (Fig. 6a) is that star: the
//! same simulation, event for event.

use hopwise_proto::time::Dur;
use hopwise_repro::backtap::network::fairness::{star_from_file, RW_INTERVAL};
use hopwise_repro::backtap::network::topo::{bulk, StarDraw};
use hopwise_repro::backtap::network::{transport, Plan};
use hopwise_sim::Sim;
use std::path::Path;

/// The reproduction's own construction: `StarDraw::net`, as
/// `fairness::run_one` builds it (100 circuits, 40 ms pair RTT, starts in
/// the first 30 s, R/W every 100 ms, no queue trace).
fn reproduction(key: &str, seed: u64, secs: u64) -> (u64, u64) {
    let t = transport(key).unwrap();
    let rtt = Dur::from_millis(t.star_rtt_ms.unwrap_or(40));
    let draw = StarDraw::new(seed, 100, rtt, Dur::from_secs(30));
    let net = draw.net(&t, bulk(), RW_INTERVAL, None);
    let sc = net.scenario("star", seed, Dur::from_secs(secs)).unwrap();
    let mut sim = Sim::new(&sc).unwrap();
    net.install(&mut sim).unwrap();
    sim.run();
    (sim.events(), sim.event_hash())
}

/// The scenario file, with the overrides the comment at its top gives
/// (and no link traces).
fn scenario_file(key: &str, seed: u64, secs: u64) -> (u64, u64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tor-50-relays.toml");
    let sets = [
        format!("tor.transport={key}"),
        "tor.queue_interval=\"0s\"".into(),
        format!("duration=\"{secs}s\""),
        "measure.warmup=\"4s\"".into(),
        format!("seed={seed}"),
    ];
    let mut s = hopwise_overlay::scenario::load(&path, &sets).unwrap();
    // The reproduction samples no link traces (`TorNet::scenario`); a file's
    // trace interval is positive, so it is turned off here, in code.
    s.base.measure.trace_interval = Dur::ZERO;
    let mut run = s.build().unwrap();
    run.sim.run();
    (run.sim.events(), run.sim.event_hash())
}

#[test]
fn the_fifty_relay_example_is_the_reproductions_star() {
    for (key, seed) in [
        ("backtap", 1),
        ("vanilla", 2),
        ("pctcp", 3),
        ("n23", 4),
        ("tor-vegas", 5),
    ] {
        let a = reproduction(key, seed, 6);
        let b = scenario_file(key, seed, 6);
        assert!(a.0 > 100_000, "{key}: only {} events", a.0);
        assert_eq!(a, b, "{key}, seed {seed}: (events, event hash)");
    }
}

/// Fig. 6a loads the file (`fairness::star_from_file`) for every transport
/// and variant it can express, and gets the network its own construction
/// builds; BackTap's start-up variants are built in code.
#[test]
fn fig6a_loads_the_file_where_it_can() {
    let mut plan = Plan::quick(None);
    plan.star_circuits = 100;
    plan.star_rtt_ms = 40;
    plan.star_start_s = 30;
    plan.star_from_s = 4;
    plan.star_secs = 6;
    for key in [
        "vanilla",
        "n23-edge",
        "vanilla-10ms",
        "tor-vegas-on-demand",
        "backtap-1ms",
        "backtap-80ms",
    ] {
        let t = transport(key).unwrap();
        let (mut sim, _) = star_from_file(&plan, &t, 7)
            .unwrap()
            .unwrap_or_else(|| panic!("{key}: the file expresses it"));
        sim.run();
        assert_eq!(
            (sim.events(), sim.event_hash()),
            reproduction(key, 7, 6),
            "{key}"
        );
    }
    for key in ["backtap-slowstart", "backtap-hystart"] {
        let t = transport(key).unwrap();
        assert!(star_from_file(&plan, &t, 7).unwrap().is_none(), "{key}");
    }
}
