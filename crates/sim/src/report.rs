//! Results of a run: `summary.json`, tidy CSV files and SVG plots.

use crate::measure::jain;
use crate::sim::Sim;
use crate::spec::Traffic;
use hopwise_plot::{BarChart, Chart, Series};
use serde::Serialize;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One direction of a flow: the data one endpoint sent and its peer read.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The flow's name; the reverse direction of a bidirectional flow is `<name>/rev`.
    pub name: String,
    pub from: String,
    pub to: String,
    pub cc: String,
    /// Bytes the receiving application read.
    pub bytes_delivered: u64,
    /// Goodput over the flow's measured window (after warm-up, until it stopped or completed).
    pub goodput_bps: f64,
    pub retransmits: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
    /// Bytes the receiver read that differ from what the sender wrote (always 0 unless a bug).
    pub corrupt_bytes: u64,
    pub start_s: f64,
    /// Completion time of a fixed-size transfer, from its start.
    pub completion_s: Option<f64>,
    pub reset: bool,
}

/// One direction of a link (an output port and its queue).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LinkSummary {
    /// `<link>:ab` or `<link>:ba`.
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// Fraction of the measured window spent transmitting.
    pub utilization: f64,
    pub mean_queue_bytes: f64,
    pub mean_queue_packets: f64,
    pub max_queue_bytes: u64,
    /// Packets dropped by the queue (overflow).
    pub drops: u64,
    /// Packets lost by the random-loss process.
    pub wire_losses: u64,
    /// (drops + wire losses) / packets offered.
    pub loss_rate: f64,
    pub tx_packets: u64,
    /// Median number of consecutive pure ACKs between data packets leaving this queue.
    pub median_ack_burst: Option<u64>,
}

/// `summary.json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// The command line that produced the run (set by `hopwise sim`; absent
    /// when the simulator is driven as a library).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub scenario: String,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub seed: u64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock seconds the run took (the only field that differs between identical runs).
    pub wall_s: f64,
    /// Hash of the event log, hex: equal for identical runs.
    pub event_hash: String,
    /// Jain's index over the goodput of every flow direction that carried data.
    pub jain: Option<f64>,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    /// Packet captures (`measure.capture`, `hopwise sim --capture`); absent without any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureSummary>,
}

/// One pcap capture (see `hopwise_sim::pcap`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CaptureSummary {
    /// `<link>:ab` or `<link>:ba`.
    pub link: String,
    /// The capture's label: the file name, for `hopwise sim`.
    pub file: String,
    pub packets: u64,
    /// Original (uncut) bytes of the captured packets.
    pub bytes: u64,
}

impl Summary {
    /// Computes the summary of a finished simulation.
    pub fn of(sim: &Sim, scenario: &str, wall_s: f64) -> Summary {
        let end = sim.end_time();
        let warm = sim.warmup.min(end);
        let window = end - warm;
        let mut flows = Vec::new();
        for (fi, f) in sim.flows.iter().enumerate() {
            for (k, &e) in f.ends.iter().enumerate() {
                let ep = &sim.endpoints[e as usize];
                if !ep.sender {
                    continue;
                }
                let rx = &sim.endpoints[ep.peer as usize];
                let st = ep.conn.as_ref().map(|c| *c.stats()).unwrap_or_default();
                let from = &sim.nodes[ep.node as usize].name;
                let to = &sim.nodes[ep.peer_node as usize].name;
                let t0 = f.start.max(warm);
                let t1 = match (f.traffic, rx.completed_at, f.stop) {
                    (Traffic::Fixed(_), Some(t), _) => t,
                    (_, _, Some(s)) => s.max(rx.last_delivery.unwrap_or(s)).min(end),
                    _ => end,
                };
                let dt = t1.checked_since(t0).map_or(0.0, |d| d.as_secs_f64());
                let goodput = if dt > 0.0 {
                    rx.received_after_warmup as f64 * 8.0 / dt
                } else {
                    0.0
                };
                flows.push(FlowSummary {
                    name: if k == 0 {
                        f.name.clone()
                    } else {
                        format!("{}/rev", f.name)
                    },
                    from: from.clone(),
                    to: to.clone(),
                    cc: sim.cc_name(e).to_string(),
                    bytes_delivered: rx.received,
                    goodput_bps: goodput,
                    retransmits: st.retransmits,
                    timeouts: st.timeouts,
                    fast_recoveries: st.fast_recoveries,
                    corrupt_bytes: rx.corrupt,
                    start_s: f.start.as_secs_f64(),
                    completion_s: rx.completed_at.map(|t| (t - f.start).as_secs_f64()),
                    reset: ep.reset || rx.reset,
                });
                let _ = fi;
            }
        }
        let links = sim
            .ifaces
            .iter()
            .map(|f| {
                let s = &f.stats;
                let (mb, mp) = s.means(window);
                let cap = f.rate.bytes_per_sec() * window.as_secs_f64();
                let offered = s.enqueued + s.drops;
                LinkSummary {
                    name: f.name.clone(),
                    from: sim.nodes[f.from as usize].name.clone(),
                    to: sim.nodes[f.to as usize].name.clone(),
                    rate_bps: f.rate.bps(),
                    // Bytes count when their transmission starts, so the
                    // packet on the wire at the end counts whole: at most
                    // one packet too many, a few ppm above 1 on a full link.
                    utilization: if cap > 0.0 {
                        (s.tx_bytes as f64 / cap).min(1.0)
                    } else {
                        0.0
                    },
                    mean_queue_bytes: mb,
                    mean_queue_packets: mp,
                    max_queue_bytes: s.max_bytes,
                    drops: s.drops,
                    wire_losses: s.wire_losses,
                    loss_rate: if offered > 0 {
                        (s.drops + s.wire_losses) as f64 / offered as f64
                    } else {
                        0.0
                    },
                    tx_packets: s.tx_packets,
                    median_ack_burst: s.median_ack_burst(),
                }
            })
            .collect();
        let rates: Vec<f64> = flows.iter().map(|f: &FlowSummary| f.goodput_bps).collect();
        Summary {
            command: None,
            scenario: scenario.to_string(),
            // Divided, not multiplied by 1e-9: whole seconds stay whole.
            duration_s: sim.duration.as_nanos() as f64 / 1e9,
            warmup_s: (warm - hopwise_proto::time::Time::ZERO).as_secs_f64(),
            seed: sim.seed,
            events: sim.events(),
            wall_s,
            event_hash: format!("{:016x}", sim.event_hash()),
            jain: jain(&rates),
            flows,
            links,
            captures: sim
                .captures()
                .into_iter()
                .map(|(link, file, packets, bytes)| CaptureSummary {
                    link: link.to_string(),
                    file: file.to_string(),
                    packets,
                    bytes,
                })
                .collect(),
        }
    }

    pub fn flow(&self, name: &str) -> Option<&FlowSummary> {
        self.flows.iter().find(|f| f.name == name)
    }
    pub fn link(&self, name: &str) -> Option<&LinkSummary> {
        self.links.iter().find(|l| l.name == name)
    }
}

/// Most series a plot shows before it summarises.
const MAX_PLOTTED: usize = 12;

/// Writes `summary.json`, the CSV files and the SVG plots into `dir` and
/// returns their names in the order written (`ack_bursts.svg` only when
/// some queue saw ACK bursts; an older one is removed otherwise).
pub fn write_outputs(dir: &Path, sim: &Sim, summary: &Summary) -> io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(summary).map_err(io::Error::other)?;
    std::fs::write(dir.join("summary.json"), json + "\n")?;
    let mut files = vec!["summary.json".to_string()];
    write_csvs(dir, sim, summary, &mut files)?;
    write_plots(dir, sim, &mut files)?;
    Ok(files)
}

/// Sending endpoints in flow order with their display names.
fn senders(sim: &Sim) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for f in &sim.flows {
        for (k, &e) in f.ends.iter().enumerate() {
            if sim.endpoints[e as usize].sender {
                v.push((
                    e,
                    if k == 0 {
                        f.name.clone()
                    } else {
                        format!("{}/rev", f.name)
                    },
                ));
            }
        }
    }
    v
}

fn fmt_f(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.6}")
    }
}

fn write_csvs(dir: &Path, sim: &Sim, summary: &Summary, files: &mut Vec<String>) -> io::Result<()> {
    let mut s = String::from("flow,from,to,cc,bytes_delivered,goodput_bps,retransmits,timeouts,fast_recoveries,corrupt_bytes,start_s,completion_s,reset\n");
    for f in &summary.flows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            f.name,
            f.from,
            f.to,
            f.cc,
            f.bytes_delivered,
            fmt_f(f.goodput_bps),
            f.retransmits,
            f.timeouts,
            f.fast_recoveries,
            f.corrupt_bytes,
            fmt_f(f.start_s),
            f.completion_s.map_or(String::new(), fmt_f),
            f.reset
        );
    }
    std::fs::write(dir.join("flows.csv"), s)?;
    files.push("flows.csv".into());

    let mut s = String::from("link,from,to,rate_bps,utilization,mean_queue_bytes,mean_queue_packets,max_queue_bytes,drops,wire_losses,loss_rate,tx_packets,median_ack_burst\n");
    for l in &summary.links {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            l.name,
            l.from,
            l.to,
            l.rate_bps,
            fmt_f(l.utilization),
            fmt_f(l.mean_queue_bytes),
            fmt_f(l.mean_queue_packets),
            l.max_queue_bytes,
            l.drops,
            l.wire_losses,
            fmt_f(l.loss_rate),
            l.tx_packets,
            l.median_ack_burst.map_or(String::new(), |b| b.to_string())
        );
    }
    std::fs::write(dir.join("links.csv"), s)?;
    files.push("links.csv".into());

    let mut s = String::from("time_s,flow,goodput_bps\n");
    for (e, name) in senders(sim) {
        let rx = &sim.endpoints[sim.endpoints[e as usize].peer as usize];
        let dt = rx.goodput.interval.as_secs_f64();
        for (i, v) in rx.goodput.rates_bps().iter().enumerate() {
            let _ = writeln!(s, "{},{},{}", fmt_f(i as f64 * dt), name, fmt_f(*v));
        }
    }
    std::fs::write(dir.join("goodput.csv"), s)?;
    files.push("goodput.csv".into());

    let mut s = String::from("time_s,flow,cwnd_bytes,ssthresh_bytes,srtt_ms,inflight_bytes\n");
    for (e, name) in senders(sim) {
        for (t, r) in sim.trace_times.iter().zip(&sim.endpoints[e as usize].trace) {
            if r[0].is_nan() {
                continue;
            }
            let _ = writeln!(
                s,
                "{},{},{},{},{},{}",
                fmt_f(t.as_secs_f64()),
                name,
                fmt_f(r[0]),
                fmt_f(r[1]),
                fmt_f(r[2]),
                fmt_f(r[3])
            );
        }
    }
    std::fs::write(dir.join("cwnd.csv"), s)?;
    files.push("cwnd.csv".into());

    let mut s = String::from("time_s,queue,bytes,packets\n");
    for f in sim.ifaces.iter().filter(|f| f.stats.max_bytes > 0) {
        for (t, (b, p)) in sim.trace_times.iter().zip(&f.trace) {
            let _ = writeln!(s, "{},{},{},{}", fmt_f(t.as_secs_f64()), f.name, b, p);
        }
    }
    std::fs::write(dir.join("queues.csv"), s)?;
    files.push("queues.csv".into());

    let mut s = String::from("queue,burst_len,count\n");
    for f in &sim.ifaces {
        for (n, &c) in f
            .stats
            .ack_bursts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
        {
            let _ = writeln!(s, "{},{},{}", f.name, n, c);
        }
    }
    std::fs::write(dir.join("ack_bursts.csv"), s)?;
    files.push("ack_bursts.csv".into());
    Ok(())
}

fn shown_note(shown: usize, total: usize, what: &str) -> String {
    if shown < total {
        format!(" ({shown} of {total} {what} shown)")
    } else {
        String::new()
    }
}

fn write_plots(dir: &Path, sim: &Sim, files: &mut Vec<String>) -> io::Result<()> {
    let senders = senders(sim);
    let n = senders.len();

    let mut chart = Chart::new(format!(
        "Goodput per flow{}",
        shown_note(n.min(MAX_PLOTTED), n, "flows")
    ))
    .x_label("time (s)")
    .y_label("goodput (Mbit/s)");
    for (e, name) in senders.iter().take(MAX_PLOTTED) {
        let rx = &sim.endpoints[sim.endpoints[*e as usize].peer as usize];
        let dt = rx.goodput.interval.as_secs_f64();
        let pts = rx
            .goodput
            .rates_bps()
            .iter()
            .enumerate()
            .map(|(i, v)| ((i as f64 + 0.5) * dt, v / 1e6))
            .collect();
        chart.push_series(Series::line(name.clone(), pts));
    }
    if n > 1 {
        let mut total: Vec<f64> = Vec::new();
        let mut dt = 1.0;
        for (e, _) in &senders {
            let rx = &sim.endpoints[sim.endpoints[*e as usize].peer as usize];
            dt = rx.goodput.interval.as_secs_f64();
            for (i, v) in rx.goodput.rates_bps().iter().enumerate() {
                if total.len() <= i {
                    total.resize(i + 1, 0.0);
                }
                total[i] += v;
            }
        }
        let pts = total
            .iter()
            .enumerate()
            .map(|(i, v)| ((i as f64 + 0.5) * dt, v / 1e6))
            .collect();
        chart.push_series(Series::line("all flows", pts).dashed().color("#444444"));
    }
    chart.write_svg(dir.join("goodput.svg"))?;
    files.push("goodput.svg".into());

    let times: Vec<f64> = sim.trace_times.iter().map(|t| t.as_secs_f64()).collect();
    let mut cwnd = Chart::new(format!(
        "Congestion window{}",
        shown_note(n.min(MAX_PLOTTED), n, "flows")
    ))
    .x_label("time (s)")
    .y_label("cwnd (kB)");
    let mut rtt = Chart::new(format!(
        "Smoothed RTT{}",
        shown_note(n.min(MAX_PLOTTED), n, "flows")
    ))
    .x_label("time (s)")
    .y_label("SRTT (ms)");
    for (e, name) in senders.iter().take(MAX_PLOTTED) {
        let tr = &sim.endpoints[*e as usize].trace;
        cwnd.push_series(Series::line(
            name.clone(),
            times
                .iter()
                .zip(tr)
                .map(|(&t, r)| (t, r[0] / 1e3))
                .collect(),
        ));
        rtt.push_series(Series::line(
            name.clone(),
            times
                .iter()
                .zip(tr)
                .map(|(&t, r)| (t, if r[2] > 0.0 { r[2] } else { f64::NAN }))
                .collect(),
        ));
    }
    cwnd.write_svg(dir.join("cwnd.svg"))?;
    files.push("cwnd.svg".into());
    rtt.write_svg(dir.join("rtt.svg"))?;
    files.push("rtt.svg".into());

    // Queues that ever held more than a packet, busiest first.
    let mut qs: Vec<&crate::sim::Iface> = sim
        .ifaces
        .iter()
        .filter(|f| f.stats.max_packets > 1)
        .collect();
    let total = qs.len();
    let window = sim.end_time() - sim.warmup.min(sim.end_time());
    qs.sort_by(|a, b| {
        b.stats
            .means(window)
            .0
            .total_cmp(&a.stats.means(window).0)
            .then(a.name.cmp(&b.name))
    });
    // Leave out queues that never mattered next to the busiest one.
    let top = qs.first().map_or(0.0, |f| f.stats.means(window).0);
    qs.retain(|f| f.stats.means(window).0 >= 0.01 * top);
    qs.truncate(MAX_PLOTTED);
    // Say which were left out: the busiest are shown, and those below 1 %
    // of the busiest's mean are not worth a line.
    let note = if qs.len() < total {
        format!(
            " ({} busiest of {total} queues; all are in queues.csv)",
            qs.len()
        )
    } else {
        String::new()
    };
    let mut q = Chart::new(format!("Queue occupancy{note}"))
        .x_label("time (s)")
        .y_label("queue (kB)");
    for f in &qs {
        q.push_series(Series::line(
            f.name.clone(),
            times
                .iter()
                .zip(&f.trace)
                .map(|(&t, (b, _))| (t, *b as f64 / 1e3))
                .collect(),
        ));
    }
    q.write_svg(dir.join("queue.svg"))?;
    files.push("queue.svg".into());

    let with_bursts: Vec<&crate::sim::Iface> = qs
        .iter()
        .copied()
        .filter(|f| f.stats.ack_bursts.iter().any(|&c| c > 0))
        .collect();
    if !with_bursts.is_empty() {
        let mut b = BarChart::new(
            "ACK bursts leaving each queue (consecutive pure ACKs between data packets)",
        )
        .x_label("burst length (ACKs)")
        .y_label("bursts");
        for f in with_bursts.iter().take(4) {
            let max = f.stats.ack_bursts.len().min(41);
            let bars = (1..max)
                .map(|n| (n.to_string(), f.stats.ack_bursts[n] as f64))
                .collect();
            b = b.group(f.name.clone(), bars);
        }
        b.write_svg(dir.join("ack_bursts.svg"))?;
        files.push("ack_bursts.svg".into());
    } else {
        // No plot this time: an earlier run's plot in the same directory
        // would pass for this run's.
        match std::fs::remove_file(dir.join("ack_bursts.svg")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}
