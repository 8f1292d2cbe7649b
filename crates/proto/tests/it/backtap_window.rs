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

/// Standing queue in datagrams: the minimum of the first link's queue over
/// each 50 ms (one round trip of these paths), from the first sample that
/// satisfies `from` on.
fn standing(r: &Run, from: impl Fn(&Sample) -> bool) -> Vec<usize> {
    let i = r.samples.iter().position(from).unwrap_or(r.samples.len());
    r.samples[i..]
        .chunks(50)
        .map(|c| c.iter().map(|x| x.queue).min().unwrap_or(0))
        .collect()
}

/// RFC 9406 on a 100 Mbit/s, 50 ms hop (BDP ≈ 1157 cells): the window
/// reaches the BDP within 12 rounds (the linear start needs > 1000), leaves
/// slow start near it, and keeps no standing queue; nothing is lost.
#[test]
fn hystart_fills_a_long_fat_hop_within_twelve_rounds() {
    let l = LinkCfg::new(100_000_000, 25, 0.0);
    let r = run(&hystart(LossResponse::Halve, 10_000), &[l], 3.0, 3);
    let bdp = cells_per_s(100_000_000) * 0.05;
    let reached = r
        .samples
        .iter()
        .find(|x| x.s.swnd as f64 >= bdp)
        .expect("the window reaches the BDP");
    let exit = r
        .samples
        .iter()
        .find(|x| !x.s.slow_start)
        .expect("slow start ends");
    eprintln!(
        "hystart 100 Mbit/s, 50 ms: BDP {bdp:.0} cells reached at round {} ({} cells), exit at round {} with {} cells; goodput {:.0} B/s",
        reached.s.rounds, reached.s.swnd, exit.s.rounds, exit.s.swnd, r.goodput
    );
    assert!(reached.s.rounds <= 12, "{}", reached.s.rounds);
    assert!(
        (0.9 * bdp..1.5 * bdp).contains(&(exit.s.swnd as f64)),
        "leaves near the BDP: {}",
        exit.s.swnd
    );
    // After one more round trip the standing queue is Eq. 1's α–β band
    // (two cells per datagram).
    let st = standing(&r, |x| x.t > exit.t + 0.1);
    let peak = 2 * st.iter().max().unwrap();
    assert!(peak <= 4 * 4, "standing queue {peak} cells: {st:?}");
    let last = &r.samples.last().unwrap().s;
    assert_eq!((last.loss_cuts, r.net.links[0].overflow), (0, 0));
    assert!(r.goodput > 0.95 * cells_per_s(100_000_000) * 498.0);
}

/// A 20 Mbit/s, 50 ms hop (BDP ≈ 231 cells): the start-up's queue stays
/// well below the BDP, and after the exit Eq. 1 drains the rest of the
/// overshoot to its band.
#[test]
fn hystart_keeps_the_bottleneck_queue_short() {
    let l = LinkCfg::new(20_000_000, 25, 0.0);
    let r = run(&hystart(LossResponse::Halve, 10_000), &[l], 10.0, 3);
    let bdp = cells_per_s(20_000_000) * 0.05;
    let peak = 2 * r.samples.iter().map(|x| x.queue).max().unwrap();
    let st = standing(&r, |x| !x.s.slow_start);
    let after = 2 * st.iter().max().unwrap();
    let end = 2 * st[st.len() - 40..].iter().max().unwrap();
    eprintln!(
        "hystart 20 Mbit/s: BDP {bdp:.0}, peak queue {peak} cells, standing after exit {after} cells, last 2 s {end} cells, goodput {:.0}",
        r.goodput
    );
    assert!((peak as f64) < 0.5 * bdp, "{peak}");
    assert!((after as f64) < 0.25 * bdp, "{after}");
    assert!(end <= 2 * 4, "the standing queue ends within 2β: {end}");
    assert!(r.goodput > 0.95 * cells_per_s(20_000_000) * 498.0);
}

/// Three 100 Mbit/s, 50 ms hops, every node with HyStart: the first hop's
/// FORWARD-RTT includes the wait behind the next hop's window, still
/// opening, so it enters CSS early; once the next hop catches up the
/// minimum falls back and it resumes slow start (RFC 9406 §4.2), instead of
/// leaving for good as `Startup::SlowStart` does. (With the linear start the
/// first hop's window would be about 60 cells after 4 s.)
#[test]
fn hystart_resumes_when_backpressure_lifts() {
    let l = LinkCfg::new(100_000_000, 25, 0.0);
    let r = run(
        &hystart(LossResponse::DelayQualified, 10_000),
        &[l, l, l],
        4.0,
        3,
    );
    let bdp = cells_per_s(100_000_000) * 0.05;
    let last = &r.samples.last().unwrap().s;
    let exit = r.samples.iter().find(|x| !x.s.slow_start).expect("ends");
    eprintln!(
        "hystart, three hops: CSS entered {} times, resumed {}, exit at {:.3} s with {} cells; goodput {:.0}",
        last.css_entries, last.css_resumes, exit.t, exit.s.swnd, r.goodput
    );
    assert!(last.css_resumes >= 1, "{last:?}");
    assert!(last.css_entries > last.css_resumes);
    // The exit clamp reads the successor's rate while it still opens, so
    // the first hop leaves below its BDP (874 cells here) and Eq. 1 adds
    // the rest at one cell per round; 2-4 s average 5.1 MB/s of 11.5.
    assert!(exit.s.swnd as f64 >= 0.6 * bdp, "{}", exit.s.swnd);
    assert!(r.goodput > 0.35 * cells_per_s(100_000_000) * 498.0);
}

/// HyStart at 5 % random loss per datagram (20 Mbit/s, 50 ms): with the
/// delay-qualified response the losses leave the window alone and the
/// transfer runs several times faster than with halving. (Its remaining
/// limit is loss recovery without SACK: one hole per round trip, and no
/// FORWARD-RTT sample while a hole is open.)
#[test]
fn hystart_survives_random_loss_with_delay_qualified() {
    let l = LinkCfg::new(20_000_000, 25, 0.05);
    let dq = run(
        &hystart(LossResponse::DelayQualified, 10_000),
        &[l],
        20.0,
        3,
    );
    let halve = run(&hystart(LossResponse::Halve, 10_000), &[l], 20.0, 3);
    let (d, h) = (
        &dq.samples.last().unwrap().s,
        &halve.samples.last().unwrap().s,
    );
    eprintln!(
        "5 % loss: delay-qualified {:.0} B/s (swnd {}, {} cuts, {} kept), halve {:.0} B/s (swnd {}, {} cuts)",
        dq.goodput, d.swnd, d.loss_cuts, d.loss_kept, halve.goodput, h.swnd, h.loss_cuts
    );
    assert!(d.loss_kept > 4 * d.loss_cuts, "{d:?}");
    assert!(dq.goodput > 2.0 * halve.goodput);
    assert!(d.swnd > 4 * h.swnd);
}

/// Linear start at 1 % random loss: halving cuts on every loss event, the
/// delay-qualified response on few (those that follow the burst a repaired
/// hole releases, which does queue), and the window stays open.
#[test]
fn delay_qualified_keeps_the_window_under_random_loss() {
    let l = LinkCfg::new(20_000_000, 25, 0.01);
    let cfg = |r| Config {
        loss_response: r,
        ..Config::default()
    };
    let dq = run(&cfg(LossResponse::DelayQualified), &[l], 20.0, 3);
    let halve = run(&cfg(LossResponse::Halve), &[l], 20.0, 3);
    let (d, h) = (
        &dq.samples.last().unwrap().s,
        &halve.samples.last().unwrap().s,
    );
    let events = |s: &HopStats| s.fast_retransmits + s.timeouts;
    eprintln!(
        "1 % loss: delay-qualified {:.0} B/s, {} of {} loss events cut; halve {:.0} B/s, {} of {}",
        dq.goodput,
        d.loss_cuts,
        events(d),
        halve.goodput,
        h.loss_cuts,
        events(h)
    );
    // Every fast retransmit opens a recovery episode, and halving cuts each.
    assert!(h.loss_cuts >= h.fast_retransmits, "{h:?}");
    assert!(4 * d.loss_cuts <= d.loss_cuts + d.loss_kept, "{d:?}");
    assert!(dq.goodput > 1.5 * halve.goodput);
}

/// Overflow behind a small bottleneck queue: a 30-datagram queue on a
/// 20 Mbit/s, 50 ms hop (a fifth of the BDP) overflows in the start-up.
/// The loss comes with a delay rise, so the delay-qualified response
/// halves as halving does; without a response the window keeps
/// overflowing the queue and the transfer crawls.
#[test]
fn delay_qualified_halves_on_overflow_behind_a_small_queue() {
    let mut l = LinkCfg::new(20_000_000, 25, 0.0);
    l.queue_pkts = 30;
    let dq = run(
        &hystart(LossResponse::DelayQualified, 10_000),
        &[l],
        10.0,
        3,
    );
    let none = run(&hystart(LossResponse::None, 10_000), &[l], 10.0, 3);
    let d = &dq.samples.last().unwrap().s;
    let (od, on) = (dq.net.links[0].overflow, none.net.links[0].overflow);
    eprintln!(
        "30-datagram queue: delay-qualified {} cuts, {od} overflows, {:.0} B/s; no response {on} overflows, {:.0} B/s",
        d.loss_cuts, dq.goodput, none.goodput
    );
    assert!(d.loss_cuts >= 1 && d.loss_kept == 0, "{d:?}");
    assert!(2 * od < on, "{od} vs {on}");
    assert!(dq.goodput > 10.0 * none.goodput);
    // Once cut, the queue stays short: no overflow after the start-up.
    let st = standing(&dq, |x| x.t > 2.0);
    assert!(2 * st.iter().max().unwrap() <= 2 * 4, "{st:?}");
}

/// `loss_bound`: at 5 % random loss, a bound of 2 % takes most losses as
/// congestion (the smoothed lost fraction exceeds it), the default 10 % few.
#[test]
fn delay_qualified_loss_bound_triggers_a_cut() {
    let l = LinkCfg::new(20_000_000, 25, 0.05);
    let with = |b| {
        let r = run(
            &Config {
                loss_bound: b,
                ..hystart(LossResponse::DelayQualified, 10_000)
            },
            &[l],
            20.0,
            3,
        );
        r.samples.last().unwrap().s
    };
    let (tight, default) = (with(0.02), with(0.1));
    eprintln!(
        "loss bound 2 %: {} cuts, {} kept; 10 %: {} cuts, {} kept",
        tight.loss_cuts, tight.loss_kept, default.loss_cuts, default.loss_kept
    );
    assert!(tight.loss_cuts > 2 * tight.loss_kept, "{tight:?}");
    assert!(default.loss_kept > 4 * default.loss_cuts, "{default:?}");
}
