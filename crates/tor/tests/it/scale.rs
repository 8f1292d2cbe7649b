//! Larger networks: speed and sanity (ignored by default; `cargo test --release -- --ignored`).

use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_tor::*;

/// A star of `relays` relays and `circuits` circuits (10 % bulk 5 MiB, the rest
/// web 320 KiB with 1–20 s think time), starts uniform over 30 s.
fn network(transport: TransportConfig, relays: usize, circuits: usize, seed: u64) -> TorNet {
    let mut rng = Rng::from_seed(seed);
    let mut cfg = TorConfig::new(transport);
    cfg.response_delay = ResponseDelay::Exp {
        mean: Dur::from_millis(20),
        max: Dur::from_millis(200),
    };
    let mut net = TorNet::with_config(cfg);
    for i in 0..relays {
        let rate = 250_000 + rng.below(4_750_000);
        let d = Dur::from_millis(5 + rng.below(40));
        net.relay(
            &format!("r{i}"),
            Some(BucketSpec::new(rate)),
            Access::new(Rate::from_mbps(1000), d),
        );
    }
    for c in 0..circuits {
        let d = Dur::from_millis(5 + rng.below(40));
        let mbit = 1 + rng.below(50);
        net.client(&format!("op{c}"), Access::new(Rate::from_mbps(mbit), d));
        let mut path: Vec<String> = Vec::new();
        while path.len() < 3 {
            let r = format!("r{}", rng.below(relays as u64));
            if !path.contains(&r) {
                path.push(r);
            }
        }
        let p: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
        let traffic = if c % 10 == 0 {
            Traffic::bulk(5 << 20)
        } else {
            Traffic::web(320 << 10, Dur::from_secs(1), Dur::from_secs(20))
        };
        let start = Dur::from_nanos(rng.below(30_000_000_000));
        net.circuit(
            CircuitSpec::new(&format!("c{c}"), &format!("op{c}"), &p, traffic).start(start),
        );
    }
    net
}

// Reports wall time, like the CLI's bench.
#[allow(clippy::disallowed_methods)]
fn report(name: &str, net: &TorNet, secs: u64) {
    let t0 = std::time::Instant::now();
    let sc = net.scenario(name, 1, Dur::from_secs(secs)).unwrap();
    let mut sim = hopwise_sim::Sim::new(&sc).unwrap();
    let engine = t0.elapsed();
    let inst = net.install(&mut sim).unwrap();
    let mut s = TorSim { sim, inst };
    let built = t0.elapsed();
    println!(
        "{name}: Sim::new {:.2} s, install {:.2} s",
        engine.as_secs_f64(),
        (built - engine).as_secs_f64()
    );
    s.run();
    let wall = t0.elapsed();
    let r = s.results();
    let done: usize = r.circuits.iter().map(|c| c.completed()).sum();
    let corrupt: u64 = r.circuits.iter().map(|c| c.corrupt).sum();
    println!(
        "{name}: {} events in {:.1} s (build {:.2} s) = {:.2} M events/s, {:.1} sim s per wall s; \
         {done} downloads, goodput {} B, wire {} B, corrupt {corrupt}",
        r.events,
        wall.as_secs_f64(),
        built.as_secs_f64(),
        r.events as f64 / wall.as_secs_f64() / 1e6,
        secs as f64 / wall.as_secs_f64(),
        r.goodput_bytes(),
        r.wire_bytes
    );
    assert_eq!(corrupt, 0);
}

#[test]
#[ignore]
fn dumbbell_sized_star_vanilla() {
    let secs = std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    report(
        "vanilla 100r/375c",
        &network(TransportConfig::vanilla(), 100, 375, 7),
        secs,
    );
}

#[test]
#[ignore]
fn dumbbell_sized_star_backtap() {
    let secs = std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    report(
        "backtap 100r/375c",
        &network(TransportConfig::backtap(), 100, 375, 7),
        secs,
    );
}

/// Build cost and memory of a large network (`RELAYS`, `CIRCUITS`, `SECS`).
#[test]
#[ignore]
fn large_network() {
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (relays, circuits, secs) = (
        env("RELAYS", 2000) as usize,
        env("CIRCUITS", 6000) as usize,
        env("SECS", 5),
    );
    report(
        &format!("vanilla {relays}r/{circuits}c"),
        &network(TransportConfig::vanilla(), relays, circuits, 3),
        secs,
    );
}
