//! Overlay sections (`[tor]`, `[[relay]]`, `[[circuit]]`, …) in `hopwise
//! sim`: the scenario is read by `hopwise_overlay::scenario`, which adds the
//! overlays' nodes, links and agents; their summary goes into
//! `summary.json` beside the flows' and links', their CSVs and plots beside
//! `hopwise sim`'s own.

use anyhow::{Context, Result};
use hopwise_overlay::scenario::{self as overlay, OverlayRun, OverlayScenario, OverlaySummary};
use hopwise_sim::report::Summary;
use hopwise_sim::spec::Scenario;
use serde::Serialize;
use std::path::Path;

/// The overlay sections of a loaded scenario, read and checked; and the
/// scenario the simulation runs (the file's topology with the nodes and
/// links the overlays generate).
pub fn prepare(sc: Scenario, origin: &str) -> Result<(OverlayScenario, Scenario)> {
    let os = overlay::from_base(sc, origin)?;
    let full = os
        .scenario()
        .map_err(anyhow::Error::msg)
        .with_context(|| origin.to_string())?;
    Ok((os, full))
}

/// Builds the simulation with the overlays' agents installed.
pub fn build(os: &OverlayScenario, origin: &str) -> Result<OverlayRun> {
    os.build()
        .map_err(anyhow::Error::msg)
        .with_context(|| origin.to_string())
}

/// `summary.json`: `hopwise sim`'s summary with the overlays' flattened in.
#[derive(Serialize)]
struct Combined<'a> {
    #[serde(flatten)]
    sim: &'a Summary,
    #[serde(flatten)]
    overlay: &'a OverlaySummary,
}

/// Writes the overlays' outputs into `out` and `summary.json` again with
/// their summary in it; returns the files written and the text for the
/// terminal and the report.
pub fn write(out: &Path, run: &OverlayRun, summary: &Summary) -> Result<(Vec<String>, String)> {
    let o = run.summary();
    let files = run
        .write_outputs(out, &o)
        .with_context(|| format!("writing results to {}", out.display()))?;
    hopwise_experiment::write_summary(
        out,
        &Combined {
            sim: summary,
            overlay: &o,
        },
    )?;
    Ok((files, text(&o)))
}

fn ms(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1} ms")
    } else {
        "–".into()
    }
}

fn secs(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2} s")
    } else {
        "–".into()
    }
}

/// The overlays' part of the printed summary.
pub fn text(o: &OverlaySummary) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if let Some(t) = &o.tor {
        let _ = writeln!(
            s,
            "Tor ({}): {} over {}, {:.3} Mbit/s in all, Jain's index {}",
            t.transport,
            hopwise_experiment::plural(t.circuits.len(), "circuit"),
            hopwise_experiment::plural(t.relays.len(), "relay"),
            t.goodput_bps / 1e6,
            t.jain.map_or("n/a".into(), |j| format!("{j:.3}"))
        );
        let _ = writeln!(
            s,
            "  requests: {} of {} completed; TTFB median {}, TTLB median {} (p95 {})",
            t.completed,
            t.requests,
            secs(t.ttfb_s.median),
            secs(t.ttlb_s.median),
            secs(t.ttlb_s.p95)
        );
        let _ = writeln!(
            s,
            "  circuit RTT median {} (p99 {}), queueing delay median {} (p95 {}, p99 {})",
            ms(t.rtt_ms.median),
            ms(t.rtt_ms.p99),
            ms(t.queueing_ms.median),
            ms(t.queueing_ms.p95),
            ms(t.queueing_ms.p99)
        );
        const SHOWN: usize = 8;
        for c in t.circuits.iter().take(SHOWN) {
            let _ = writeln!(
                s,
                "  {:<12} {:>9.3} Mbit/s  TTLB {:>8}  RTT {:>9}  queueing {:>9}  path {}",
                c.name,
                c.goodput_bps / 1e6,
                secs(c.ttlb_median_s),
                ms(c.rtt_median_ms),
                ms(c.queueing_median_ms),
                c.path
            );
        }
        if t.circuits.len() > SHOWN {
            let _ = writeln!(
                s,
                "  ({} more circuits in tor_circuits.csv)",
                t.circuits.len() - SHOWN
            );
        }
    }
    if let Some(w) = &o.swarm {
        let _ = writeln!(s, "Swarm:");
        for c in &w.classes {
            let _ = writeln!(
                s,
                "  {:<12} {} of {} leechers done ({} arrived), download median {} (p95 {}), \
                 {} MB up",
                c.class,
                c.completed,
                c.leechers,
                c.arrived,
                secs(c.download_median_s),
                secs(c.download_p95_s),
                c.uploaded_bytes / 1_000_000
            );
        }
        if !w.errors.is_empty() {
            let _ = writeln!(s, "  {} peer errors (see summary.json)", w.errors.len());
        }
    }
    if let Some(p) = &o.otcp {
        let _ = writeln!(s, "oTCP:");
        for r in &p.paths {
            let via = if r.relays.is_empty() {
                "direct"
            } else {
                r.relays.as_str()
            };
            let done = r.completion_s.map_or("not complete".to_string(), |c| {
                format!("done in {}", secs(c))
            });
            let _ = writeln!(
                s,
                "  {:<12} {} → {} via {}: {:.3} Mbit/s, {}",
                r.path,
                r.from,
                r.to,
                via,
                r.goodput_bps / 1e6,
                done
            );
        }
    }
    s
}
