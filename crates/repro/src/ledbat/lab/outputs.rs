//! `hopwise lab utp`'s CSVs and figures.

use super::run::START_S;
use super::{Options, Results, TARGET_MS};
use crate::backtap::common::round_to;
use anyhow::Result;
use hopwise_experiment::Outputs;
use hopwise_lab::traffic::BIN_S;
use hopwise_plot::{BarChart, Chart, Figure, Series};
use serde::Serialize;

/// A row of `queue.csv`: one sample of the bottleneck's backlog.
#[derive(Clone, Debug, Default, Serialize)]
struct QueueRow<'a> {
    case: &'a str,
    time_s: f64,
    backlog_bytes: u64,
    delay_ms: f64,
}

/// A row of `throughput.csv`: one flow's bytes on the link in one 100 ms bin.
#[derive(Clone, Debug, Default, Serialize)]
struct ThroughputRow<'a> {
    case: &'a str,
    flow: &'a str,
    time_s: f64,
    bps: f64,
}

/// A row of `cases.csv`.
#[derive(Clone, Debug, Default, Serialize)]
struct CaseRow<'a> {
    case: &'a str,
    stack: &'a str,
    cubic: bool,
    utilization: f64,
    queue_mean_delay_ms: f64,
    queue_p50_delay_ms: f64,
    queue_p95_delay_ms: f64,
    utp_link_share: f64,
    tcp_link_share: f64,
    utp_goodput_bps: Option<f64>,
    tcp_goodput_bps: Option<f64>,
    drops: u64,
}

pub fn write(opts: &Options, r: &Results, o: &mut Outputs) -> Result<()> {
    let rate = opts.rate_bps as f64;
    let ms = |b: u64| b as f64 * 8.0 / rate * 1e3;
    let tcp_flow = format!("{} (TCP)", opts.cc);
    let mut qrows = Vec::new();
    let mut trows = Vec::new();
    for (c, s) in r.cases.iter().zip(&r.series) {
        for &(t, b) in &s.queue {
            qrows.push(QueueRow {
                case: &c.case,
                time_s: round_to(t, 3),
                backlog_bytes: b,
                delay_ms: round_to(ms(b), 2),
            });
        }
        let mut flows: Vec<(&str, &Vec<u64>)> = vec![("µTP (UDP)", &s.link.udp)];
        if c.cubic {
            flows.push((tcp_flow.as_str(), &s.link.tcp));
        }
        for (flow, bins) in flows {
            for (i, &v) in bins.iter().enumerate() {
                trows.push(ThroughputRow {
                    case: &c.case,
                    flow,
                    time_s: round_to(i as f64 * BIN_S, 1),
                    bps: round_to(v as f64 * 8.0 / BIN_S, 0),
                });
            }
        }
    }
    let cases: Vec<CaseRow> = r
        .cases
        .iter()
        .map(|c| CaseRow {
            case: &c.case,
            stack: c.stack.label(),
            cubic: c.cubic,
            utilization: round_to(c.utilisation, 4),
            queue_mean_delay_ms: round_to(c.queue_mean_delay_ms, 2),
            queue_p50_delay_ms: round_to(c.queue_p50_delay_ms, 2),
            queue_p95_delay_ms: round_to(c.queue_p95_delay_ms, 2),
            utp_link_share: round_to(c.utp_link_share, 4),
            tcp_link_share: round_to(c.tcp_link_share, 4),
            utp_goodput_bps: c.utp_goodput_bps.map(|v| round_to(v, 0)),
            tcp_goodput_bps: c.tcp_goodput_bps.map(|v| round_to(v, 0)),
            drops: c.drops,
        })
        .collect();

    let end = START_S + opts.secs as f64 + 0.5;
    let buffer_ms = match opts.buffer {
        hopwise_lab::Buffer::Packets(p) => ms(p * 1514),
        hopwise_lab::Buffer::Bytes(b) => ms(b),
    };
    let title = |what: &str| {
        format!(
            "{what}: µTP and kernel TCP (Linux {}) at a {:.0} Mbit/s bottleneck, {} buffer, {} ms one way",
            r.kernel,
            rate / 1e6,
            opts.buffer,
            opts.one_way_ms
        )
    };
    let mut queue = Figure::new(title("Queueing delay"), 2);
    let mut thr = Figure::new(title("Throughput on the link"), 2);
    let per_s = |b: &[u64]| -> Vec<(f64, f64)> {
        b.chunks((1.0 / BIN_S).round() as usize)
            .enumerate()
            .map(|(i, c)| (i as f64 + 0.5, c.iter().sum::<u64>() as f64 * 8.0 / 1e6))
            .collect()
    };
    for (c, s) in r.cases.iter().zip(&r.series) {
        queue.push_panel(
            Chart::new(c.case.clone())
                .x_label("time (s)")
                .y_label("ms")
                .x_range(0.0, end)
                .y_range(0.0, buffer_ms.max(TARGET_MS) * 1.1)
                .series(Series::line(
                    "backlog ÷ rate",
                    s.queue.iter().map(|&(t, b)| (t, ms(b))).collect(),
                ))
                .series(Series::line(
                    "LEDBAT target",
                    vec![(0.0, TARGET_MS), (end, TARGET_MS)],
                )),
        );
        let mut g = Chart::new(c.case.clone())
            .x_label("time (s)")
            .y_label("Mbit/s (1 s bins)")
            .x_range(0.0, end)
            .y_range(0.0, rate / 1e6 * 1.1)
            .series(Series::line("µTP (UDP)", per_s(&s.link.udp)));
        if c.cubic {
            g.push_series(Series::line(tcp_flow.clone(), per_s(&s.link.tcp)));
        }
        thr.push_panel(g);
    }
    o.svg("queue.svg", &queue.panel_size(560, 300))?;
    o.svg("throughput.svg", &thr.panel_size(560, 300))?;
    let bars = BarChart::new("Mean queueing delay at the bottleneck")
        .y_label("ms")
        .x_label("case")
        .group(
            "mean",
            r.cases
                .iter()
                .map(|c| (c.case.clone(), c.queue_mean_delay_ms))
                .collect(),
        );
    o.svg("delay.svg", &bars)?;
    o.csv("cases.csv", &cases)?;
    o.csv("queue.csv", &qrows)?;
    o.csv("throughput.csv", &trows)?;
    o.data(&["queue.svg"], &["queue.csv"]);
    o.data(&["throughput.svg"], &["throughput.csv"]);
    o.data(&["delay.svg"], &["cases.csv"]);
    Ok(())
}
