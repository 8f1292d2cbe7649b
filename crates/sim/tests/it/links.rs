//! Realistic links end to end: a Mahimahi trace sets the rate a flow gets;
//! Gilbert-Elliott loss and jitter run deterministically.

use hopwise_sim::report::Summary;
use hopwise_sim::{scenario, Sim};
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

fn sim(sets: &[&str]) -> (Sim, Summary) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = scenario::load(&path("trace-link.toml"), &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Sim::new(&sc).unwrap();
    sim.run();
    let s = Summary::of(&sim, &sc.name, 0.0);
    assert!(s.flows.iter().all(|f| f.corrupt_bytes == 0));
    (sim, s)
}

/// The trace's rate (Mbit/s) over second `i` of its 8 s cycle.
fn trace_mbps(i: usize) -> f64 {
    [24.0, 24.0, 6.0, 6.0, 12.0, 12.0, 3.0, 3.0][i % 8]
}

#[test]
fn utilisation_follows_the_trace() {
    let (sim, s) = sim(&[]);
    let b = s.link("bottleneck:ab").unwrap();
    assert_eq!(b.rate_bps, 11_250_000, "the trace's mean rate");
    assert!(b.utilization >= 0.9, "utilisation {:.4}", b.utilization);
    let f = sim.flow_id("cubic").unwrap();
    let rx = sim.endpoint(sim.flow(f).ends()[1]);
    let rates = rx.goodput().rates_bps();
    // Goodput counts data as the receiver reads it, up to a queue's delay
    // after it crossed the link and in bursts after a loss is repaired, so
    // single seconds stray; each step's mean over the seven cycles after the
    // warm-up matches what the trace offers (× 1448/1500 for the headers).
    let secs: Vec<usize> = (8..rates.len()).collect();
    let offered = |i: usize| trace_mbps(i) * 1e6 * 1448.0 / 1500.0;
    for step in 0..4 {
        let v: Vec<f64> = secs
            .iter()
            .filter(|&&i| i % 8 / 2 == step)
            .map(|&i| rates[i] / offered(i))
            .collect();
        let m = v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            (0.9..=1.05).contains(&m),
            "step of {} Mbit/s: {m:.3} of the trace",
            trace_mbps(2 * step)
        );
    }
    // And second by second the goodput moves with the trace: correlation.
    let (x, y): (Vec<f64>, Vec<f64>) = secs.iter().map(|&i| (offered(i), rates[i])).unzip();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(&x), mean(&y));
    let cov: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sd = |v: &[f64], m: f64| v.iter().map(|a| (a - m) * (a - m)).sum::<f64>().sqrt();
    let r = cov / (sd(&x, mx) * sd(&y, my));
    assert!(r >= 0.95, "correlation {r:.3}");
}

#[test]
fn bursty_loss_and_jitter_are_deterministic() {
    for sets in [
        vec![
            "link.bottleneck.ab.gilbert_elliott.p=0.002",
            "link.bottleneck.ab.gilbert_elliott.r=0.3",
        ],
        vec!["link.bottleneck.ab.jitter=5ms"],
        vec![
            "link.bottleneck.ab.jitter=5ms",
            "link.bottleneck.ab.reorder=true",
        ],
    ] {
        let mut sets = sets.clone();
        sets.push("duration=16s");
        let (a, sa) = sim(&sets);
        let (b, sb) = sim(&sets);
        assert_eq!(a.event_hash(), b.event_hash(), "{sets:?}");
        assert_eq!(sa, sb);
        let plain = sim(&["duration=16s"]).0;
        assert_ne!(
            a.event_hash(),
            plain.event_hash(),
            "{sets:?} changes the run"
        );
        let l = sa.link("bottleneck:ab").unwrap();
        if sets[0].contains("gilbert") {
            assert!(l.wire_losses > 0, "{l:?}");
        } else {
            assert_eq!(l.wire_losses, 0);
        }
    }
}
