//! BackTap's start-up (`Startup::HyStart`, RFC 9406 on BackTap rounds) and
//! its loss response (`LossResponse::DelayQualified`) over the test network
//! (docs/backtap.md, "Start-up" and "Loss response"). Every measure is in
//! simulated time: rounds, cells, datagrams.

use crate::backtap_net::{secs, LinkCfg, Net};
use hopwise_proto::backtap::{Config, Direction, HopStats, LossResponse, Startup};

/// One sample of a run: time (s), the first hop's stats, and the first
/// link's queue in datagrams.
struct Sample {
    t: f64,
    s: HopStats,
    queue: usize,
}

struct Run {
    samples: Vec<Sample>,
    net: Net,
    /// Goodput of the flow over the second half of the run, bytes/s.
    goodput: f64,
}

/// A bulk flow over `path.len()` nodes joined by `links`, every node with
/// `cfg`, sampled every millisecond for `until` seconds.
fn run(cfg: &Config, links: &[LinkCfg], until: f64, seed: u64) -> Run {
    let mut net = Net::new(seed);
    let n: Vec<usize> = (0..=links.len())
        .map(|_| net.add_node(cfg.clone()))
        .collect();
    for (w, l) in n.windows(2).zip(links) {
        net.connect(w[0], w[1], *l);
    }
    let c = net.add_circuit(&n);
    net.start_flow(&c, Direction::Forward, u64::MAX, 1);
    let mut samples = Vec::new();
    let mut half = 0;
    let steps = (until * 1000.0).round() as u64;
    for k in 1..=steps {
        let t = k as f64 / 1000.0;
        net.run_until(secs(t));
        if k == steps / 2 {
            half = net.flows[0].got;
        }
        samples.push(Sample {
            t,
            s: net.stats(n[0], c.ids[0], Direction::Forward),
            queue: net.links[0].queue_len(net.now),
        });
    }
    assert!(net.flows[0].error.is_none(), "{:?}", net.flows[0].error);
    let goodput = (net.flows[0].got - half) as f64 / (until / 2.0);
    Run {
        samples,
        net,
        goodput,
    }
}

fn hystart(loss_response: LossResponse, limit: u32) -> Config {
    Config {
        startup: Startup::HyStart,
        loss_response,
        circuit_limit: limit,
        ..Config::default()
    }
}

/// Cells per second a link of `bps` carries: two cells per datagram of
/// 2 · 519 + 14 bytes of feedback and header, plus 28 bytes of UDP/IP.
fn cells_per_s(bps: u64) -> f64 {
    bps as f64 / 8.0 / ((2.0 * 519.0 + 14.0 + 28.0) / 2.0)
}

#[test]
fn explore() {
    // 1. long fat hop
    let l = LinkCfg::new(100_000_000, 25, 0.0);
    let r = run(&hystart(LossResponse::Halve, 10_000), &[l], 3.0, 3);
    let bdp = cells_per_s(100_000_000) * 0.05;
    let first = r
        .samples
        .iter()
        .find(|x| x.s.swnd as f64 >= bdp)
        .map(|x| (x.t, x.s.rounds, x.s.swnd));
    let exit = r
        .samples
        .iter()
        .find(|x| !x.s.slow_start)
        .map(|x| (x.t, x.s.rounds, x.s.swnd));
    let last = r.samples.last().unwrap();
    let maxq = r.samples.iter().map(|x| x.queue).max().unwrap();
    eprintln!("fat: bdp {bdp:.0} first {first:?} exit {exit:?} last swnd {} rounds {} css {} {} maxq {maxq} goodput {:.0} (cap {:.0})", last.s.swnd, last.s.rounds, last.s.css_entries, last.s.css_resumes, r.goodput, cells_per_s(100_000_000)*498.0);
    for x in r.samples.iter().step_by(20).take(40) {
        eprintln!(
            "  t {:.3} r {} swnd {} ss {} css {} q {}",
            x.t, x.s.rounds, x.s.swnd, x.s.slow_start, x.s.css, x.queue
        );
    }
}
