//! `hopwise lab cc-check`'s CSVs and figures.

use super::{interval, Plan, Results, RATE_BPS};
use crate::backtap::common::round_to;
use anyhow::Result;
use hopwise_experiment::Outputs;
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;

/// A row of `results.csv`: one source's bottleneck measurements in one case.
#[derive(Clone, Debug, Default, Serialize)]
struct ResultRow<'a> {
    case: &'a str,
    /// "kernel" or "simulator".
    source: &'static str,
    /// The simulator's variant ("defaults" unless the drop-rate check).
    variant: &'a str,
    /// The simulator's seed (0 for the kernel).
    seed: u32,
    utilisation: f64,
    queue_delay_ms: f64,
    drop_rate: f64,
    drop_rate_run: f64,
    drops: u64,
    jain: f64,
    timeouts: u64,
    retransmits: u64,
    acks_per_data: f64,
}

/// A row of `flows.csv`: one flow's goodput and share.
#[derive(Clone, Debug, Default, Serialize)]
struct FlowRow<'a> {
    case: &'a str,
    source: &'static str,
    seed: u32,
    flow: usize,
    goodput_bps: f64,
    share: f64,
}

/// A row of `queue.csv`: the kernel's bottleneck every 100 ms.
#[derive(Clone, Debug, Default, Serialize)]
struct QueueRow<'a> {
    case: &'a str,
    time_s: f64,
    backlog_bytes: u64,
    delay_ms: f64,
    drops: u64,
}

/// A row of `ss.csv`: a kernel sender every second.
#[derive(Clone, Debug, Default, Serialize)]
struct SsRow<'a> {
    case: &'a str,
    #[serde(flatten)]
    s: super::SsSample,
}

pub fn write(plan: &Plan, r: &Results, o: &mut Outputs) -> Result<()> {
    let mut rows = Vec::new();
    let mut frows = Vec::new();
    let mut qrows = Vec::new();
    let mut srows = Vec::new();
    for c in &r.cases {
        let m = &c.kernel.measured;
        let row = |source, variant, seed, m: &super::Measured| ResultRow {
            case: &c.case,
            source,
            variant,
            seed,
            utilisation: round_to(m.utilisation, 4),
            queue_delay_ms: round_to(m.queue_delay_ms, 2),
            drop_rate: round_to(m.drop_rate, 5),
            drop_rate_run: round_to(m.drop_rate_run, 5),
            drops: m.drops,
            jain: round_to(m.jain, 4),
            timeouts: m.timeouts,
            retransmits: m.retransmits,
            acks_per_data: round_to(m.acks_per_data, 4),
        };
        rows.push(row("kernel", "", 0, m));
        let flows = |source, seed, m: &super::Measured| {
            m.goodput_bps
                .iter()
                .zip(m.shares())
                .enumerate()
                .map(|(flow, (&g, share))| FlowRow {
                    case: &c.case,
                    source,
                    seed,
                    flow,
                    goodput_bps: round_to(g, 0),
                    share: round_to(share, 4),
                })
                .collect::<Vec<_>>()
        };
        frows.extend(flows("kernel", 0, m));
        if c.variants.is_empty() {
            for (i, s) in c.sim.iter().enumerate() {
                rows.push(row("simulator", "defaults", i as u32 + 1, s));
                frows.extend(flows("simulator", i as u32 + 1, s));
            }
        }
        for v in &c.variants {
            for (i, s) in v.runs.iter().enumerate() {
                rows.push(row("simulator", &v.variant, i as u32 + 1, s));
                if v.variant == "defaults" {
                    frows.extend(flows("simulator", i as u32 + 1, s));
                }
            }
        }
        for q in &c.kernel.queue {
            qrows.push(QueueRow {
                case: &c.case,
                time_s: round_to(q.time_s, 3),
                backlog_bytes: q.backlog_bytes,
                delay_ms: round_to(q.backlog_bytes as f64 * 8.0 / RATE_BPS as f64 * 1e3, 2),
                drops: q.drops,
            });
        }
        for s in &c.kernel.ss_samples {
            srows.push(SsRow {
                case: &c.case,
                s: s.clone(),
            });
        }
    }
    // Figures: the kernel's queue over time, and kernel beside simulator.
    let mut queue = Chart::new(format!(
        "Kernel: bottleneck queueing delay ({})",
        plan.check.name()
    ))
    .x_label("time (s)")
    .y_label("queueing delay (ms)")
    .x_range(0.0, plan.secs as f64);
    for c in &r.cases {
        queue.push_series(Series::line(
            c.case.clone(),
            c.kernel
                .queue
                .iter()
                .map(|q| {
                    (
                        q.time_s,
                        q.backlog_bytes as f64 * 8.0 / RATE_BPS as f64 * 1e3,
                    )
                })
                .collect(),
        ));
    }
    let bars = |title: &str, y: &str, f: &dyn Fn(&super::Measured) -> f64| {
        let mut b = BarChart::new(title).y_label(y).x_label("case");
        b = b.group(
            "kernel",
            r.cases
                .iter()
                .map(|c| (c.case.clone(), f(&c.kernel.measured)))
                .collect(),
        );
        b.group(
            "simulator (mean of seeds)",
            r.cases
                .iter()
                .map(|c| (c.case.clone(), interval(&c.sim, f).0))
                .collect(),
        )
    };
    let fig = Figure::new(
        format!(
            "lab cc-check {}: kernel beside simulator",
            plan.check.name()
        ),
        1,
    )
    .panel(queue);
    o.svg("queue.svg", &fig)?;
    o.svg(
        "utilisation.svg",
        &bars("Bottleneck utilisation", "utilisation", &|m| m.utilisation),
    )?;
    o.svg(
        "queue_delay.svg",
        &bars("Mean queueing delay", "ms", &|m| m.queue_delay_ms),
    )?;
    let mut svgs = vec!["queue.svg", "utilisation.svg", "queue_delay.svg"];
    if r.cases
        .iter()
        .any(|c| c.kernel.measured.goodput_bps.len() > 1)
    {
        o.svg(
            "share.svg",
            &bars("First flow's share of the goodput", "share", &|m| {
                m.shares().first().copied().unwrap_or(0.0)
            }),
        )?;
        svgs.push("share.svg");
    }
    for c in r.cases.iter().filter(|c| !c.variants.is_empty()) {
        let mut b = BarChart::new("Drop rate at the bottleneck after the warm-up")
            .y_label("drop rate (%)")
            .x_label("source");
        let mut items: Vec<(String, f64)> =
            vec![("kernel".into(), c.kernel.measured.drop_rate * 100.0)];
        items.extend(c.variants.iter().map(|v| {
            (
                v.variant.clone(),
                interval(&v.runs, |m| m.drop_rate).0 * 100.0,
            )
        }));
        b = b.group(c.case.clone(), items);
        o.svg("drops.svg", &b)?;
        svgs.push("drops.svg");
    }
    o.csv("results.csv", &rows)?;
    o.csv("flows.csv", &frows)?;
    o.csv("queue.csv", &qrows)?;
    o.csv("ss.csv", &srows)?;
    o.data(&svgs[..1], &["queue.csv"]);
    Ok(())
}
