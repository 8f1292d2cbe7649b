//! Flow-level dynamics of the delay-based controllers on a dumbbell
//! (h_i — r1 — r2 — d_i, 1 Gbit/s 1 ms access links, drop-tail bottleneck).
//!
//! `cargo run --release -q -p hopwise-sim --example cc_dynamics [filter...]`
//!
//! Runs every case twice, with the default `TcpConfig` (delayed ACKs on) and
//! with `delayed_ack = false` (an ns-2 `TCPSink`-like receiver that ACKs every
//! segment), prints utilisation, mean queue, Jain's index and per-flow shares,
//! and writes CSVs and SVGs to `/tmp/cc_dynamics/<case>/`. Arguments keep only
//! the cases whose name contains one of them; `CC_PARAMS` sets controller
//! parameters (see [`with_overrides`]); `OWD_MS` (bottleneck one-way delay,
//! default 23 ms: 50 ms RTT) and `BUFFER_PKTS` (default 100) vary the path.
#[path = "../tests/it/common/mod.rs"]
mod common;
use common::*;
use hopwise_proto::cc::{CcConfig, ParamValue};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::Summary;
use hopwise_sim::spec::Limit;
use hopwise_sim::Sim;

struct Case {
    name: &'static str,
    rate_kbps: u64,
    ccs: &'static [&'static str],
    /// If set: the first flow stops at this second, and only the time after
    /// `STOP_WARMUP` s is measured (how the others recover once it has gone).
    first_stops_at: Option<u64>,
}

const fn case(name: &'static str, rate_kbps: u64, ccs: &'static [&'static str]) -> Case {
    Case {
        name,
        rate_kbps,
        ccs,
        first_stops_at: None,
    }
}

/// Measurement start for the cases where the first flow stops.
const STOP_WARMUP: u64 = 30;

const CASES: &[Case] = &[
    case("lp-alone-10M", 10_000, &["lp"]),
    case("lp-alone-1M", 1_000, &["lp"]),
    case("lp-lp-10M", 10_000, &["lp", "lp"]),
    case("newreno-lp-10M", 10_000, &["newreno", "lp"]),
    case("newreno-lp-1M", 1_000, &["newreno", "lp"]),
    case("nice-alone-10M", 10_000, &["nice"]),
    case("nice-alone-1M", 1_000, &["nice"]),
    case("nice-nice-10M", 10_000, &["nice", "nice"]),
    case("newreno-nice-10M", 10_000, &["newreno", "nice"]),
    case("newreno-nice-1M", 1_000, &["newreno", "nice"]),
    case("vegas-alone-10M", 10_000, &["vegas"]),
    case("vegas-alone-1M", 1_000, &["vegas"]),
    case("vegas-vegas-10M", 10_000, &["vegas", "vegas"]),
    case("newreno-vegas-10M", 10_000, &["newreno", "vegas"]),
    case("ledbat-alone-1M", 1_000, &["ledbat"]),
    case("newreno-ledbat-1M", 1_000, &["newreno", "ledbat"]),
    case("ledbat-ledbat-10M", 10_000, &["ledbat", "ledbat"]),
    // NewReno leaves at 20 s; utilisation over 30–60 s shows whether the
    // low-priority flow climbs back from its minimum window.
    Case {
        name: "newreno-leaves-nice-10M",
        rate_kbps: 10_000,
        ccs: &["newreno", "nice"],
        first_stops_at: Some(20),
    },
    Case {
        name: "newreno-leaves-lp-10M",
        rate_kbps: 10_000,
        ccs: &["newreno", "lp"],
        first_stops_at: Some(20),
    },
];

/// 50 ms base RTT: bottleneck one-way 23 ms + two 1 ms access links each way.
const OWD_MS: u64 = 23;
const BUFFER_PKTS: u64 = 100;
const SECS: u64 = 60;

/// `name` from the environment (e.g. `OWD_MS=48` for a 100 ms RTT), else `default`.
fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `name` or `name:key=value,key=value` (numbers, `true`/`false`, else strings).
fn cc_config(spec: &str) -> CcConfig {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let mut cfg = CcConfig::from_name(name).unwrap();
    for kv in params.split(',').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').expect("key=value");
        let value = match (v.parse::<f64>(), v) {
            (Ok(x), _) => ParamValue::Num(x),
            (_, "true") => ParamValue::Bool(true),
            (_, "false") => ParamValue::Bool(false),
            _ => ParamValue::Str(v),
        };
        cfg.set(k, value).unwrap();
    }
    cfg
}

/// Appends the parameters given for `cc` in the `CC_PARAMS` environment
/// variable (`name:key=value,...;name:key=value`), e.g.
/// `CC_PARAMS="nice:delay=rtt;lp:calibrate=false"` to compare with the
/// papers' literal rules.
fn with_overrides(cc: &str) -> String {
    let mut spec = cc.to_string();
    if let Ok(all) = std::env::var("CC_PARAMS") {
        for o in all.split(';') {
            if let Some((name, params)) = o.split_once(':') {
                if name == cc {
                    spec.push(if spec.contains(':') { ',' } else { ':' });
                    spec.push_str(params);
                }
            }
        }
    }
    spec
}

fn run(case: &Case, delayed_ack: bool) {
    let n = case.ccs.len();
    let rate = case.rate_kbps;
    let mut s = dumbbell(
        n,
        Rate::from_kbps(rate),
        Dur::from_millis(env_or("OWD_MS", OWD_MS)),
        Dur::from_millis(1),
        Limit::Packets(env_or("BUFFER_PKTS", BUFFER_PKTS)),
        Dur::from_secs(SECS),
    );
    s.measure.warmup = Dur::from_secs(if case.first_stops_at.is_some() {
        STOP_WARMUP
    } else {
        10
    });
    for (i, cc) in case.ccs.iter().enumerate() {
        let mut f = bulk(
            &format!("{}{i}", cc.split(':').next().unwrap()),
            &format!("h{i}"),
            &format!("d{i}"),
            cc_config(&with_overrides(cc)),
        );
        f.tcp.delayed_ack = delayed_ack;
        if i == 0 {
            f.stop = case.first_stops_at.map(Dur::from_secs);
        }
        s.flows.push(f);
    }
    let title = format!(
        "{}{}",
        case.name,
        if delayed_ack { "" } else { "-nodelack" }
    );
    let mut sim = Sim::new(&s).unwrap();
    sim.run();
    let sum = Summary::of(&sim, &title, 1.0);
    let b = sum.link("bottleneck:ab").unwrap();
    let qdelay_ms = b.mean_queue_bytes * 8.0 / rate as f64;
    let tot: f64 = sum
        .flows
        .iter()
        .map(|f| f.goodput_bps)
        .sum::<f64>()
        .max(1.0);
    print!(
        "{title:<28} util {:.3} meanq {:5.1} pkts ({qdelay_ms:6.1} ms) q+u {:5.2} drops {:4} jain {:.3} |",
        b.utilization,
        b.mean_queue_packets,
        b.mean_queue_packets + b.utilization,
        b.drops,
        sum.jain.unwrap_or(f64::NAN)
    );
    for f in &sum.flows {
        print!(" {} {:.3}", f.name, f.goodput_bps / tot);
    }
    println!();
    let dir = format!("/tmp/cc_dynamics/{title}");
    hopwise_sim::report::write_outputs(std::path::Path::new(&dir), &sim, &sum).unwrap();
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).collect();
    for case in CASES {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        for delayed_ack in [true, false] {
            run(case, delayed_ack);
        }
    }
}
