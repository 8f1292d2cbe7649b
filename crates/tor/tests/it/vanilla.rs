//! The vanilla Tor model against seed 002 §4 (Fig. 5) and Tor's window
//! arithmetic: one bulk circuit through a middle relay limited to 1500 kB/s.

use crate::common::*;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_tor::*;

/// Payload rate of the bottleneck: 498 of every 512 bytes it forwards.
fn payload_rate() -> f64 {
    C as f64 * 498.0 / 512.0
}

fn circuit_window_only() -> TorConfig {
    let mut cfg = vanilla_no_nagle();
    cfg.stream_window = None;
    cfg
}

fn stream_window_only() -> TorConfig {
    let mut cfg = vanilla_no_nagle();
    cfg.circuit_window = None;
    cfg
}

/// Runs the Fig. 5 circuit for 30 s and fits after 10 s.
fn fig5_point(cfg: TorConfig, rtt_ms: u64) -> (Fit, CircuitResult) {
    let net = fig5(cfg, Dur::from_millis(rtt_ms), Traffic::bulk(1 << 40));
    let r = run(&net, 1, 30);
    let c = r.circuits[0].clone();
    assert_eq!(c.corrupt, 0, "every delivered byte is the server's");
    assert!(c.packaged >= c.delivered);
    let f = c.fit(Dur::from_secs(10)).expect("the circuit moved data");
    (f, c)
}

#[test]
fn circuit_window_fills_the_bottleneck_below_the_bdp() {
    let (f, c) = fig5_point(circuit_window_only(), 100);
    assert!(
        f.rate >= 0.95 * payload_rate(),
        "rate {:.0} B/s < 95 % of {:.0}",
        f.rate,
        payload_rate()
    );
    // The window bounds what is in the circuit at every sample.
    assert!(c.max_backlog() <= 1000 * 498, "{}", c.max_backlog());
    // Seed 002 §4: below 100 ms about 350 kB are in the circuit, because the
    // bucket releases 300 cells per 100 ms and only three SENDMEs travel back.
    assert!(
        (300_000.0..420_000.0).contains(&f.backlog),
        "backlog {:.0} B",
        f.backlog
    );
    // Delay follows from the backlog: d = backlog / rate.
    assert!((f.delay - f.backlog / f.rate).abs() < 0.02, "{f:?}");
    // TCP recovers losses per connection, not per circuit.
    assert_eq!(c.losses, None);
}

#[test]
fn circuit_window_limits_the_rate_beyond_the_bdp() {
    let rtt = 0.683;
    let (f, c) = fig5_point(circuit_window_only(), 683);
    let expect = 1000.0 * 498.0 / rtt;
    assert!(
        (f.rate / expect - 1.0).abs() <= 0.15,
        "rate {:.0} B/s vs 1000·498 B / RTT = {expect:.0}",
        f.rate
    );
    assert!(c.max_backlog() <= 1000 * 498, "{}", c.max_backlog());
    // Beyond the BDP half the window is downstream: about 250 kB.
    assert!(
        (200_000.0..300_000.0).contains(&f.backlog),
        "backlog {:.0} B",
        f.backlog
    );
}

#[test]
fn stream_window_knee_near_171_ms() {
    // Below the knee (500·512 B / 1500 kB/s ≈ 171 ms) the bottleneck is full…
    let (f, c) = fig5_point(stream_window_only(), 100);
    assert!(f.rate >= 0.95 * payload_rate(), "rate {:.0}", f.rate);
    assert!(c.max_backlog() <= 500 * 498, "{}", c.max_backlog());
    // …beyond it the window limits: 500·498 B per RTT.
    let (f, c) = fig5_point(stream_window_only(), 300);
    let expect = 500.0 * 498.0 / 0.3;
    assert!(
        (f.rate / expect - 1.0).abs() <= 0.15,
        "rate {:.0} vs {expect:.0}",
        f.rate
    );
    assert!(f.rate < 0.7 * payload_rate());
    assert!(c.max_backlog() <= 500 * 498);
    // Both windows: the smaller (stream) one decides.
    let (f, _) = fig5_point(vanilla_no_nagle(), 300);
    assert!((f.rate / expect - 1.0).abs() <= 0.15, "rate {:.0}", f.rate);
}

#[test]
fn nagle_delays_sendmes() {
    // Seed 002 §4: with Nagle, SENDMEs wait behind unacknowledged data, the
    // effective RTT grows and the rate drops earlier.
    let mut nagle = circuit_window_only();
    nagle.tcp_mut().unwrap().tcp.nagle = true;
    let (with, _) = fig5_point(nagle, 300);
    let (without, _) = fig5_point(circuit_window_only(), 300);
    assert!(without.rate >= 0.95 * payload_rate());
    assert!(
        with.rate < 0.9 * without.rate,
        "Nagle {:.0} vs no Nagle {:.0}",
        with.rate,
        without.rate
    );
}

#[test]
fn on_demand_refill_and_kist_also_fill_the_bottleneck() {
    for (what, cfg) in [
        ("on-demand refill", {
            let c = circuit_window_only();
            (c, true)
        }),
        ("KIST", {
            let mut c = circuit_window_only();
            c.tcp_mut().unwrap().write = WritePolicy::KIST;
            (c, false)
        }),
    ] {
        let (cfg, on_demand) = cfg;
        let mut net = TorNet::with_config(cfg);
        let acc = Access::new(Rate::from_mbps(1000), Dur::from_nanos(100_000_000 / 12));
        let mut bucket = BucketSpec::new(C);
        if on_demand {
            bucket = bucket.refill(Refill::OnDemand {
                reenable: Dur::from_millis(100),
            });
        }
        net.client("op", acc)
            .relay("guard", None, acc)
            .relay("middle", Some(bucket), acc)
            .relay("exit", None, acc)
            .circuit(
                CircuitSpec::new(
                    "c0",
                    "op",
                    &["guard", "middle", "exit"],
                    Traffic::bulk(1 << 40),
                )
                .trace(true),
            );
        let r = run(&net, 2, 20);
        let c = &r.circuits[0];
        let f = c.fit(Dur::from_secs(8)).unwrap();
        assert_eq!(c.corrupt, 0);
        assert!(f.rate >= 0.93 * payload_rate(), "{what}: {:.0}", f.rate);
        assert!(c.max_backlog() <= 1000 * 498, "{what}");
        let middle = r.node("middle").unwrap();
        // Read and write buckets both took what the relay forwarded.
        assert!(middle.bucket_used[0] > 0 && middle.bucket_used[1] > 0);
    }
}

#[test]
fn kist_keeps_the_backlog_in_circuit_queues() {
    // KIST writes at most about two congestion windows into a socket; with a
    // write-only bucket at the middle the backlog then sits in the middle's
    // circuit queue, where the per-hop trace sees it.
    let mut cfg = circuit_window_only();
    let t = cfg.tcp_mut().unwrap();
    t.write = WritePolicy::KIST;
    t.bucket_scope = BucketScope::Write;
    let net = fig5(cfg, Dur::from_millis(100), Traffic::bulk(1 << 40));
    let r = run(&net, 1, 20);
    let c = &r.circuits[0];
    let middle = c.hops.iter().find(|h| h.node == "middle").unwrap();
    let n = middle.samples.len();
    let mean = middle.samples[n / 2..]
        .iter()
        .map(|s| s.held(Dir::Backward.index()) as f64)
        .sum::<f64>()
        / (n - n / 2) as f64;
    assert!(mean > 200.0, "mean cells held at the middle: {mean:.1}");
    assert!(middle.samples.iter().all(|s| s.queued[1] <= 1000));
}

#[test]
fn web_circuit_records_ttfb_and_ttlb() {
    // A web client (320 KiB, think 1–2 s) through a separate server host,
    // with a 20 ms response delay; the circuit's RTT is 120 ms.
    let mut cfg = TorConfig::new(TransportConfig::vanilla());
    cfg.response_delay = ResponseDelay::Fixed(Dur::from_millis(20));
    let mut net = TorNet::with_config(cfg);
    let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(40));
    net.client("op", acc)
        .relay("g", None, acc)
        .relay("m", Some(BucketSpec::new(C)), acc)
        .relay("e", None, acc)
        .server(
            "srv",
            Access::new(Rate::from_mbps(1000), Dur::from_millis(1)),
        );
    net.circuit(
        CircuitSpec::new(
            "web",
            "op",
            &["g", "m", "e"],
            Traffic::web(320 << 10, Dur::from_secs(1), Dur::from_secs(2)),
        )
        .server(ServerSpec::Host("srv".into())),
    );
    let r = run(&net, 1, 20);
    let c = &r.circuits[0];
    assert_eq!(c.corrupt, 0);
    assert!(c.completed() >= 6, "{} requests done", c.completed());
    for q in c.requests.iter().filter(|q| q.ttlb.is_some()) {
        let (fb, lb) = (q.ttfb.unwrap(), q.ttlb.unwrap());
        // Circuit RTT + exit↔server handshake and request (2 × 4 ms) + 20 ms.
        assert!(fb >= Dur::from_millis(148), "TTFB {fb:?}");
        assert!(fb < Dur::from_millis(400), "TTFB {fb:?}");
        assert!(lb > fb, "TTLB {lb:?} after TTFB {fb:?}");
        assert_eq!(q.size, 320 << 10);
    }
    let done = c.completed() as u64 * (320 << 10);
    assert!(c.delivered >= done && c.delivered < done + (320 << 10));
    // Think times: requests are 1–2 s apart after completion.
    for w in c.requests.windows(2) {
        let gap = w[1].issued - (w[0].issued + w[0].ttlb.unwrap());
        assert!(
            gap >= Dur::from_secs(1) && gap <= Dur::from_secs(2),
            "{gap:?}"
        );
    }
}

#[test]
fn one_shot_at_exit_ends_and_counts() {
    let mut net = TorNet::new(TransportConfig::vanilla());
    let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(20));
    net.client("op", acc)
        .relay("g", None, acc)
        .relay("e", None, acc);
    net.circuit(
        CircuitSpec::new("c", "op", &["g", "e"], Traffic::one_shot(1_000_000))
            .start(Dur::from_millis(50)),
    );
    let r = run(&net, 1, 5);
    let c = &r.circuits[0];
    assert_eq!(c.requests.len(), 1);
    assert_eq!(c.delivered, 1_000_000);
    assert_eq!(c.packaged, 1_000_000);
    assert_eq!(c.corrupt, 0);
    let q = c.requests[0];
    assert_eq!(q.issued.as_nanos(), 50_000_000);
    // Two hops of RTT 20 ms: first byte after 40 ms.
    assert!(q.ttfb.unwrap() >= Dur::from_millis(40));
    assert!(q.ttfb.unwrap() < Dur::from_millis(60), "{:?}", q.ttfb);
}

#[test]
fn same_seed_same_results() {
    let go = |seed| {
        let mut cfg = TorConfig::new(TransportConfig::vanilla());
        cfg.response_delay = ResponseDelay::Exp {
            mean: Dur::from_millis(20),
            max: Dur::from_millis(200),
        };
        let mut net = TorNet::with_config(cfg);
        let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(30));
        for c in ["a", "b"] {
            net.client(c, acc);
        }
        for r in ["g1", "g2", "m", "e"] {
            net.relay(r, Some(BucketSpec::new(1_000_000)), acc);
        }
        net.circuit(
            CircuitSpec::new("bulk", "a", &["g1", "m", "e"], Traffic::bulk(2 << 20)).trace(true),
        );
        net.circuit(
            CircuitSpec::new(
                "web",
                "b",
                &["g2", "m", "e"],
                Traffic::web(100_000, Dur::from_millis(100), Dur::from_secs(1)),
            )
            .start(Dur::from_millis(300))
            .trace(true),
        );
        run(&net, seed, 10)
    };
    let (a, b, other) = (go(5), go(5), go(6));
    assert_eq!(a.event_hash, b.event_hash);
    assert_eq!(a.events, b.events);
    for (x, y) in a.circuits.iter().zip(&b.circuits) {
        assert_eq!(x.r, y.r);
        assert_eq!(x.w, y.w);
        assert_eq!(x.requests, y.requests);
    }
    assert_ne!(a.event_hash, other.event_hash, "another seed, another run");
}

#[test]
fn pctcp_opens_a_connection_per_circuit() {
    let build = |t: TransportConfig| {
        let mut net = TorNet::new(t);
        let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(20));
        net.client("a", acc).client("b", acc);
        net.relay("g", None, acc)
            .relay("m", Some(BucketSpec::new(C)), acc)
            .relay("e", None, acc);
        for (n, c) in [("x", "a"), ("y", "b")] {
            net.circuit(CircuitSpec::new(
                n,
                c,
                &["g", "m", "e"],
                Traffic::bulk(1 << 30),
            ));
        }
        net
    };
    let mut sims = Vec::new();
    for t in [TransportConfig::vanilla(), TransportConfig::pctcp()] {
        let mut s = build(t).build("t", 1, Dur::from_secs(5)).unwrap();
        s.run();
        // Count the TCP connections that carried cells.
        let conns = s
            .sim
            .socks()
            .filter_map(|e| s.sim.endpoint(e).conn())
            .filter(|c| c.stats().bytes_sent > 0)
            .count();
        let r = s.results();
        assert!(r
            .circuits
            .iter()
            .all(|c| c.delivered > 1_000_000 && c.corrupt == 0));
        sims.push(conns);
    }
    // Vanilla: op→g for each client, g→m, m→e, both directions carry data
    // (cells one way, SENDMEs the other): 4 connections, 8 endpoints.
    // PCTCP: g→m and m→e once per circuit: 6 connections.
    assert_eq!(sims[0], 8);
    assert_eq!(sims[1], 12);
}

#[test]
fn invalid_networks_are_errors() {
    let acc = Access::star(Rate::from_mbps(100), Dur::from_millis(20));
    let mut net = TorNet::new(TransportConfig::vanilla());
    net.client("op", acc).relay("g", None, acc);
    net.circuit(CircuitSpec::new(
        "c",
        "op",
        &["g", "nope"],
        Traffic::bulk(1),
    ));
    let e = net.build("x", 1, Dur::from_secs(1)).err().unwrap();
    assert!(e.contains("`nope` is not a relay"), "{e}");
    let mut net = TorNet::new(TransportConfig::vanilla());
    net.client("op", acc).relay("g", None, acc);
    net.circuit(CircuitSpec::new("c", "op", &["g", "g"], Traffic::bulk(1)));
    assert!(net
        .build("x", 1, Dur::from_secs(1))
        .err()
        .unwrap()
        .contains("twice"));
    let mut net = TorNet::new(TransportConfig::vanilla());
    net.config.circuit_window = None;
    net.config.stream_window = None;
    net.client("op", acc).relay("g", None, acc);
    net.circuit(CircuitSpec::new("c", "op", &["g"], Traffic::bulk(1)));
    assert!(net
        .build("x", 1, Dur::from_secs(1))
        .err()
        .unwrap()
        .contains("without bound"));
}

#[test]
fn dumbbell_topology() {
    // Two switches joined by a 40 ms trunk; 5 ms access links. Path
    // op(eu) → g(eu) → m(na) → e(na): hop RTTs 20, 100, 20 ms.
    use hopwise_sim::spec::Limit;
    let mut net = TorNet::new(TransportConfig::vanilla());
    let acc = Access::new(Rate::from_mbps(100), Dur::from_millis(5));
    net.trunk(
        "na",
        "eu",
        Rate::from_mbps(1000),
        Dur::from_millis(40),
        Limit::Packets(1000),
    );
    net.client_at("op", "eu", acc)
        .relay_at("g", "eu", None, acc)
        .relay_at("m", "na", None, acc)
        .relay_at("e", "na", None, acc);
    net.circuit(
        CircuitSpec::new("c", "op", &["g", "m", "e"], Traffic::one_shot(100_000))
            .start(Dur::from_millis(500)),
    );
    let sc = net.scenario("db", 1, Dur::from_secs(3)).unwrap();
    assert_eq!(sc.nodes.len(), 6);
    assert_eq!(sc.links.len(), 5);
    let r = run(&net, 1, 3);
    let q = r.circuits[0].requests[0];
    let fb = q.ttfb.unwrap();
    assert!(
        fb >= Dur::from_millis(140) && fb < Dur::from_millis(150),
        "{fb:?}"
    );
    assert_eq!(r.circuits[0].delivered, 100_000);
}

/// Fig. 5 for vanilla Tor (circuit window, stream window) over the RTT
/// range of the paper: prints rate, backlog and delay. Long; run with
/// `cargo test --release -p hopwise-tor --test it vanilla:: -- --ignored --nocapture`.
#[test]
#[ignore]
fn fig5_sweep() {
    println!("window  rtt_ms  rate_kBps  of_C  backlog_kB  delay_ms");
    for (name, cfg) in [
        ("circuit", circuit_window_only as fn() -> TorConfig),
        ("stream", stream_window_only),
    ] {
        for rtt in [30, 60, 100, 171, 250, 341, 450, 683, 900] {
            let (f, c) = fig5_point(cfg(), rtt);
            let window = if name == "circuit" { 1000 } else { 500 };
            assert!(c.max_backlog() <= window * 498);
            println!(
                "{name:8}{rtt:6}{:11.0}{:6.3}{:12.0}{:10.1}",
                f.rate / 1e3,
                f.rate / payload_rate(),
                f.backlog / 1e3,
                f.delay * 1e3
            );
        }
    }
}

/// Where the backlog of the Fig. 5 circuit (100 ms, circuit window) sits for
/// each write policy and bucket scope: mean bytes unread in kernel receive
/// buffers, unsent in send buffers (plus Tor's outbuf), and cells in circuit
/// queues, per node, after 10 s.
#[test]
#[ignore]
fn where_the_backlog_sits() {
    for (wname, write) in [("fill", WritePolicy::Fill), ("kist", WritePolicy::KIST)] {
        for (sname, scope) in [
            ("both", BucketScope::Both),
            ("write", BucketScope::Write),
            ("read", BucketScope::Read),
        ] {
            let mut cfg = circuit_window_only();
            let t = cfg.tcp_mut().unwrap();
            t.write = write;
            t.bucket_scope = scope;
            let net = fig5(cfg, Dur::from_millis(100), Traffic::bulk(1 << 40));
            let r = run(&net, 1, 30);
            let f = r.circuits[0].fit(Dur::from_secs(10)).unwrap();
            print!(
                "{wname:5} {sname:6} rate {:5.0} kB/s backlog {:4.0} kB |",
                f.rate / 1e3,
                f.backlog / 1e3
            );
            for n in &r.nodes {
                let s = &n.samples[1000..];
                let k = s.len() as f64;
                let m =
                    |g: &dyn Fn(&NodeSample) -> u64| s.iter().map(|x| g(x) as f64).sum::<f64>() / k;
                print!(
                    " {}: unread {:.0} kB, unsent {:.0} kB, queued {:.0} cells |",
                    n.name,
                    m(&|x| x.unread_bytes) / 1e3,
                    m(&|x| x.unsent_bytes) / 1e3,
                    m(&|x| x.queued_cells)
                );
            }
            println!();
        }
    }
}
