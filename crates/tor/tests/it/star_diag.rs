//! Diagnostics of the Fig. 6a star (ignored; run with
//! `cargo test --release -p hopwise-tor --test it star_diag:: -- --ignored --nocapture`).
//! Env: `T` (backtap | vanilla), `N` circuits (20), `SECS` (60), `SEED` (1),
//! `REFILL_MS` (10 for BackTap, 100 for vanilla), `PHASE` (1/0: random bucket
//! phase, vanilla only), `SHOW` (circuits to print, 12).
//!
//! The star is the one of `hopwise_repro::backtap_network::topo::StarDraw`
//! (same draws), rebuilt here so the Tor crate can run it on its own.

use hopwise_proto::bucket::Refill;
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_tor::*;

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(d)
}

fn choose(n: usize, m: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::for_component(seed, "backtap-network/star/paths");
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..m {
        let j = i + rng.below((n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(m);
    idx
}

#[test]
#[ignore]
fn star_diag() {
    let t: String = env("T", "backtap".to_string());
    let n: usize = env("N", 20);
    let secs: u64 = env("SECS", 60);
    let seed: u64 = env("SEED", 1);
    let backtap = t.starts_with("backtap");
    let refill_ms: u64 = env("REFILL_MS", if backtap { 10 } else { 100 });
    let phase: u32 = env("PHASE", 1);
    let show: usize = env("SHOW", 12);
    let start_window = secs as f64 / 5.0;
    let from = secs as f64 * 3.0 / 5.0;

    let paths = TorpsPaths::fifty();
    let lines = choose(paths.circuits.len(), n, seed);
    let mut rng = Rng::for_component(seed, "backtap-network/star/starts");
    let starts: Vec<f64> = lines.iter().map(|_| rng.f64() * start_window).collect();
    let mut relays: Vec<usize> = lines.iter().flat_map(|&l| paths.circuits[l].path).collect();
    relays.sort_unstable();
    relays.dedup();

    let mut cfg = if backtap {
        TorConfig::new(TransportConfig::backtap())
    } else {
        TorConfig::new(TransportConfig::vanilla())
    };
    if let TransportConfig::Backtap(b) = &mut cfg.transport {
        if let Ok(v) = std::env::var("LIMIT") {
            b.endpoint.circuit_limit = v.parse().unwrap();
        }
        if std::env::var("NOSHARE").is_ok() {
            b.endpoint.share_base_rtt = false;
        }
    }
    cfg.response_delay = ResponseDelay::Exp {
        mean: Dur::from_millis(20),
        max: Dur::from_millis(200),
    };
    cfg.rw_interval = Dur::from_millis(100);
    cfg.queue_interval = Some(Dur::from_millis(100));
    let mut net = TorNet::with_config(cfg);
    let acc = Access::star(Rate::from_mbps(1000), Dur::from_millis(80))
        .queue(Limit::Packets(env("QUEUE", 100)));
    for &r in &relays {
        let b = BucketSpec::new(paths.relays[r].bandwidth)
            .refill(Refill::Periodic(Dur::from_millis(refill_ms)))
            .random_phase(phase == 1);
        net.relay(&format!("r{r}"), Some(b), acc);
    }
    for (i, &l) in lines.iter().enumerate() {
        let c = &paths.circuits[l];
        let op = format!("op{i}");
        net.client(&op, acc);
        let p: Vec<String> = c.path.iter().map(|r| format!("r{r}")).collect();
        let p: Vec<&str> = p.iter().map(|s| s.as_str()).collect();
        net.circuit(
            CircuitSpec::new(&format!("c{i}"), &op, &p, Traffic::bulk(5 << 20))
                .start(Dur::from_secs_f64(starts[i]))
                .trace(true),
        );
    }
    let mut s = net.build("diag", seed, Dur::from_secs(secs)).unwrap();
    s.run();
    let r = s.results();
    let dt = 0.1;
    let (i0, i1) = ((from / dt) as usize, (secs as f64 / dt) as usize);
    let b = Dir::Backward.index();
    let mut tot_rate = 0.0;
    let mut tot_backlog = 0.0;
    let mut rates = Vec::new();
    for (ci, c) in r.circuits.iter().enumerate() {
        let i1 = i1.min(c.w.len() - 1);
        let rate = (c.w[i1] - c.w[i0]) as f64 / ((i1 - i0) as f64 * dt);
        let bl: f64 = (i0..i1)
            .map(|i| c.r[i].saturating_sub(c.w[i]) as f64)
            .sum::<f64>()
            / (i1 - i0) as f64;
        tot_rate += rate;
        tot_backlog += bl;
        rates.push(rate);
        if ci >= show {
            continue;
        }
        let hops: Vec<String> = c
            .hops
            .iter()
            .map(|h| {
                let n = h.samples.len();
                let sm = &h.samples[(i0).min(n)..(i1).min(n)];
                let m = |f: &dyn Fn(&HopSample) -> f64| {
                    sm.iter().map(f).sum::<f64>() / sm.len().max(1) as f64
                };
                format!(
                    "{}[q {:.0} t {:.0} w {:.0} b {:.1} a {:.1}]",
                    h.node,
                    m(&|s| s.queued[b] as f64),
                    m(&|s| s.in_transit[b] as f64),
                    m(&|s| s.swnd[b] as f64),
                    m(&|s| s.base_rtt_us[b] as f64 / 1e3),
                    m(&|s| s.actual_rtt_us[b] as f64 / 1e3)
                )
            })
            .collect();
        println!(
            "{} {:.0} kB/s R-W {:.0} cells (prop {:.0}): {}",
            c.name,
            rate / 1e3,
            bl / 498.0,
            rate * 0.12 / 498.0,
            hops.join(" ")
        );
    }
    let sq: f64 = rates.iter().map(|x| x * x).sum();
    let jain = tot_rate * tot_rate / (rates.len() as f64 * sq);
    println!(
        "{t}: N {n} goodput {:.2} MB/s backlog {:.2} MB jain {:.3} min {:.0} max {:.0}",
        tot_rate / 1e6,
        tot_backlog / 1e6,
        jain,
        rates.iter().copied().fold(f64::INFINITY, f64::min),
        rates.iter().copied().fold(0.0, f64::max)
    );
    // Relays: bucket use over the whole run, cells queued at the end.
    let mut used_sum = 0.0;
    let mut cap_sum = 0.0;
    for &rl in &relays {
        let name = format!("r{rl}");
        let nd = r.node(&name).unwrap();
        let bw = paths.relays[rl].bandwidth as f64;
        let users = lines
            .iter()
            .filter(|&&l| paths.circuits[l].path.contains(&rl))
            .count();
        let ns = &nd.samples;
        let q = ns[i0.min(ns.len())..i1.min(ns.len())]
            .iter()
            .map(|s| s.queued_cells as f64)
            .sum::<f64>()
            / (i1 - i0) as f64;
        let used = nd.bucket_used[1]
            .max(nd.bucket_used[0])
            .max(nd.transport.cells_out * 519) as f64;
        used_sum += used;
        cap_sum += bw * secs as f64;
        println!(
            "{name} bw {:.0} kB/s users {users} used {:.2} ({:.0} kB/s out) q {:.0} cells stalls {} drops {} tx {:?}",
            bw / 1e3,
            used / (bw * secs as f64),
            nd.transport.bytes_out as f64 / secs as f64 / 1e3,
            q,
            nd.transport.write_stalls,
            nd.transport.dropped,
            (nd.transport.cells_out, nd.transport.cells_in)
        );
    }
    println!("bucket use {:.3}", used_sum / cap_sum);
    let mut drops = 0;
    for i in s.sim.ifaces() {
        let f = s.sim.iface(i);
        let st = f.stats();
        if st.drops > 0 {
            drops += st.drops;
            println!(
                "iface {} drops {} of {} max {} pkts",
                f.name(),
                st.drops,
                st.enqueued,
                st.max_packets
            );
        }
    }
    println!("link drops {drops}");
}
