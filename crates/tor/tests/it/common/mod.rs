//! Shared builders for the Tor model's tests.
#![allow(dead_code)]

use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_tor::*;

/// Bottleneck of seed 002 Fig. 5: 1500 kB/s at the middle relay.
pub const C: u64 = 1_500_000;

/// A star where the circuit client → guard → middle → exit has end-to-end
/// RTT `rtt` (each of the 3 hops has RTT rtt/3; every access link rtt/12).
/// The middle relay is limited to `C` (rate = burst, periodic 100 ms refill).
pub fn fig5(cfg: TorConfig, rtt: Dur, traffic: Traffic) -> TorNet {
    let mut net = TorNet::with_config(cfg);
    let acc = Access::new(Rate::from_mbps(1000), Dur::from_nanos(rtt.as_nanos() / 12));
    net.client("op", acc);
    net.relay("guard", None, acc);
    net.relay("middle", Some(BucketSpec::new(C)), acc);
    net.relay("exit", None, acc);
    net.circuit(CircuitSpec::new("c0", "op", &["guard", "middle", "exit"], traffic).trace(true));
    net
}

/// Vanilla Tor without Nagle (as the paper ran Fig. 5).
pub fn vanilla_no_nagle() -> TorConfig {
    let mut cfg = TorConfig::new(TransportConfig::vanilla());
    cfg.tcp_mut().unwrap().tcp.nagle = false;
    cfg
}

pub fn run(net: &TorNet, seed: u64, secs: u64) -> TorResults {
    let mut s = net.build("test", seed, Dur::from_secs(secs)).unwrap();
    s.run();
    s.results()
}
