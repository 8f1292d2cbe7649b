//! N23 and Tor's Vegas congestion control in the Tor model.

use crate::common::*;
use hopwise_proto::time::Dur;
use hopwise_tor::*;

#[test]
#[ignore]
fn explore() {
    for (name, mut cfg) in [
        ("vegas", TorConfig::tor_vegas()),
        ("n23", TorConfig::new(TransportConfig::n23())),
    ] {
        cfg.tcp_mut().unwrap().tcp.nagle = false;
        for rtt in [100u64, 300, 900] {
            let refill: u64 = std::env::var("REFILL")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(100);
            let secs: u64 = std::env::var("SECS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(40);
            let mut net = TorNet::with_config(cfg.clone());
            let acc = Access::new(
                hopwise_proto::units::Rate::from_mbps(1000),
                Dur::from_nanos(rtt * 1_000_000 / 12),
            );
            net.client("op", acc)
                .relay("guard", None, acc)
                .relay(
                    "middle",
                    Some(BucketSpec::new(C).refill(Refill::Periodic(Dur::from_millis(refill)))),
                    acc,
                )
                .relay("exit", None, acc);
            net.circuit(
                CircuitSpec::new(
                    "c0",
                    "op",
                    &["guard", "middle", "exit"],
                    Traffic::bulk(1 << 40),
                )
                .trace(true),
            );
            let r = run(&net, 1, secs);
            let c = &r.circuits[0];
            let f = c.fit(Dur::from_secs(secs / 2)).unwrap();
            let b = Dir::Backward.index();
            let mid = r.node("middle").unwrap();
            let n = mid.samples.len();
            let unread: f64 = mid.samples[n / 2..]
                .iter()
                .map(|s| s.unread_bytes as f64 / 512.0)
                .sum::<f64>()
                / (n - n / 2) as f64;
            let q: Vec<String> = c
                .hops
                .iter()
                .map(|h| {
                    let s = &h.samples[h.samples.len() / 2..];
                    format!(
                        "{}: q {:.0} t {:.0} cwnd {:.0} cr {:.0}",
                        h.node,
                        s.iter().map(|x| x.queued[b] as f64).sum::<f64>() / s.len() as f64,
                        s.iter().map(|x| x.in_transit[b] as f64).sum::<f64>() / s.len() as f64,
                        s.iter().map(|x| x.cwnd[b] as f64).sum::<f64>() / s.len() as f64,
                        s.iter().map(|x| x.credit[b] as f64).sum::<f64>() / s.len() as f64
                    )
                })
                .collect();
            println!("{name} {rtt}: rate {:.3} backlog {:.0} kB delay {:.0} ms unread@mid {unread:.0} cells | {} | corrupt {} | {:?}",
                f.rate / (C as f64 * 498.0 / 512.0), f.backlog / 1e3, f.delay * 1e3, q.join("; "), c.corrupt,
                c.vegas.as_ref().map(|v| (v.cwnd(), v.min_rtt(), v.ewma_rtt(), v.stats())));
        }
    }
}
