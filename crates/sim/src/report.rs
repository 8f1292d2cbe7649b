//! Results of a run: `summary.json`, tidy CSV files and SVG plots.

use crate::sim::Sim;
use crate::spec::Traffic;
use hopwise_experiment::csv;
use hopwise_experiment::stats::{jain, LogHistogram};
use hopwise_plot::{BarChart, Chart, Series};
use serde::Serialize;
use std::io;
use std::path::Path;

/// One direction of a flow: the data one endpoint sent and its peer read
/// (also a row of `flows.csv`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct FlowSummary {
    /// The flow's name; the reverse direction of a bidirectional flow is `<name>/rev`.
    #[serde(rename = "flow")]
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
    /// With ECN negotiated (`tcp.ecn`): data segments that reached the
    /// receiver marked CE, and the sender's window reductions for ECN-Echo
    /// (RFC 3168 §6.1.2: at most one per window; DCTCP's per-window cuts).
    /// Both 0 without ECN.
    pub ce_received: u64,
    pub ecn_reductions: u64,
    /// With RACK-TLP (`tcp.rack`): the sender's tail loss probes and the
    /// segments RACK deemed lost. Both 0 without it.
    pub tlp_probes: u64,
    pub rack_losses: u64,
    /// Bytes the receiver read that differ from what the sender wrote (always 0 unless a bug).
    pub corrupt_bytes: u64,
    pub start_s: f64,
    /// Completion time of a fixed-size transfer, from its start.
    pub completion_s: Option<f64>,
    pub reset: bool,
    /// RTT samples the sender took after the warm-up (one per ACK that
    /// yields a measurement: RFC 7323 timestamps, or Karn's rule without).
    pub rtt_samples: u64,
    /// Their mean, median, 95th and 99th percentile, in ms (`null` without
    /// samples). Percentiles are by nearest rank from a log-bucketed
    /// histogram (within 0.4 %; see `LogHistogram`); the mean is exact.
    pub rtt_mean_ms: Option<f64>,
    pub rtt_median_ms: Option<f64>,
    pub rtt_p95_ms: Option<f64>,
    pub rtt_p99_ms: Option<f64>,
    /// Data packets (with payload, retransmissions included) the receiver
    /// got after the warm-up.
    pub queue_delay_samples: u64,
    /// Per data packet, the total time it waited in queues on its path
    /// (not transmission, not propagation): mean, median, 95th and 99th
    /// percentile in ms, as for the RTT.
    pub queue_delay_mean_ms: Option<f64>,
    pub queue_delay_median_ms: Option<f64>,
    pub queue_delay_p95_ms: Option<f64>,
    pub queue_delay_p99_ms: Option<f64>,
}

/// Mean, median, 95th and 99th percentile of a histogram of seconds, in ms.
fn latency_ms(h: &LogHistogram) -> [Option<f64>; 4] {
    let ms = |v: Option<f64>| v.map(|s| s * 1e3);
    [
        ms(h.mean()),
        ms(h.median()),
        ms(h.quantile(0.95)),
        ms(h.quantile(0.99)),
    ]
}

/// One direction of a link (an output port and its queue; also a row of
/// `links.csv`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LinkSummary {
    /// `<link>:ab` or `<link>:ba`.
    #[serde(rename = "link")]
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    /// Fraction of the measured window spent transmitting.
    pub utilization: f64,
    pub mean_queue_bytes: f64,
    pub mean_queue_packets: f64,
    pub max_queue_bytes: u64,
    /// Packets the queue dropped: overflow of its limit, plus `aqm_drops`.
    pub drops: u64,
    /// Of `drops`, those an AQM chose (CoDel's control law, PIE's and
    /// RED's early drops); 0 for the other disciplines.
    pub aqm_drops: u64,
    /// Packets an AQM marked Congestion Experienced (ECN) instead of
    /// dropping them.
    pub ecn_marks: u64,
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
        for (f, e, name) in senders(sim) {
            let ep = &sim.endpoints[e as usize];
            let rx = &sim.endpoints[ep.peer as usize];
            let st = ep.conn.as_ref().map(|c| *c.stats()).unwrap_or_default();
            let rx_st = rx.conn.as_ref().map(|c| *c.stats()).unwrap_or_default();
            let from = sim.node_name(ep.node);
            let to = sim.node_name(ep.peer_node);
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
            let [rtt_mean_ms, rtt_median_ms, rtt_p95_ms, rtt_p99_ms] = latency_ms(&ep.rtt);
            let [queue_delay_mean_ms, queue_delay_median_ms, queue_delay_p95_ms, queue_delay_p99_ms] =
                latency_ms(&rx.queue_delay);
            flows.push(FlowSummary {
                name,
                from: from.to_string(),
                to: to.to_string(),
                cc: sim.cc_name(e).to_string(),
                bytes_delivered: rx.received,
                goodput_bps: goodput,
                retransmits: st.retransmits,
                timeouts: st.timeouts,
                fast_recoveries: st.fast_recoveries,
                ce_received: rx_st.ce_received,
                ecn_reductions: st.ecn_reductions,
                tlp_probes: st.tlp_probes,
                rack_losses: st.rack_losses,
                corrupt_bytes: rx.corrupt,
                start_s: f.start.as_secs_f64(),
                completion_s: rx.completed_at.map(|t| (t - f.start).as_secs_f64()),
                reset: ep.reset || rx.reset,
                rtt_samples: ep.rtt.count(),
                rtt_mean_ms,
                rtt_median_ms,
                rtt_p95_ms,
                rtt_p99_ms,
                queue_delay_samples: rx.queue_delay.count(),
                queue_delay_mean_ms,
                queue_delay_median_ms,
                queue_delay_p95_ms,
                queue_delay_p99_ms,
            });
        }
        let links = sim
            .ifaces
            .iter()
            .map(|f| {
                let s = &f.stats;
                let (mb, mp) = s.means(window);
                let cap = f.rate.bytes_per_sec() * window.as_secs_f64();
                let offered = s.enqueued + s.drops;
                // Packets refused at enqueue are in `s.drops`; the AQM
                // counts those it dropped after queueing them.
                let aqm = f.qdisc.aqm_counts();
                let drops = s.drops + aqm.queued_drops;
                LinkSummary {
                    name: f.name.clone(),
                    from: sim.node_name(f.from).to_string(),
                    to: sim.node_name(f.to).to_string(),
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
                    drops,
                    aqm_drops: aqm.aqm_drops,
                    ecn_marks: aqm.marks,
                    wire_losses: s.wire_losses,
                    loss_rate: if offered > 0 {
                        (drops + s.wire_losses) as f64 / offered as f64
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
            jain: Some(jain(&rates)).filter(|j| j.is_finite()),
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
    hopwise_experiment::write_summary(dir, summary)
        .map_err(|e| io::Error::other(format!("{e:#}")))?;
    let mut files = vec!["summary.json".to_string()];
    write_csvs(dir, sim, summary, &mut files)?;
    write_plots(dir, sim, &mut files)?;
    Ok(files)
}

/// Sending endpoints in flow order, each with its flow and its display
/// name (the reverse direction of a bidirectional flow is `<name>/rev`).
fn senders(sim: &Sim) -> Vec<(&crate::sim::Flow, u32, String)> {
    let mut v = Vec::new();
    for f in &sim.flows {
        for (k, &e) in f.ends.iter().enumerate() {
            if sim.endpoints[e as usize].sender {
                let name = if k == 0 {
                    f.name.clone()
                } else {
                    format!("{}/rev", f.name)
                };
                v.push((f, e, name));
            }
        }
    }
    v
}

/// A row of `goodput.csv`: a flow's goodput in one interval.
#[derive(Default, Serialize)]
struct GoodputRow<'a> {
    time_s: f64,
    flow: &'a str,
    goodput_bps: f64,
}

/// A row of `cwnd.csv`: a sender's state at one trace sample.
#[derive(Default, Serialize)]
struct CwndRow<'a> {
    time_s: f64,
    flow: &'a str,
    cwnd_bytes: f64,
    ssthresh_bytes: f64,
    srtt_ms: f64,
    inflight_bytes: f64,
}

/// A row of `queues.csv`: a queue's occupancy at one trace sample.
#[derive(Default, Serialize)]
struct QueueRow<'a> {
    time_s: f64,
    queue: &'a str,
    bytes: u64,
    packets: u64,
}

/// A row of `ack_bursts.csv`: how often a queue sent so many ACKs in a row.
#[derive(Default, Serialize)]
struct AckBurstRow<'a> {
    queue: &'a str,
    burst_len: usize,
    count: u64,
}

fn write_csvs(dir: &Path, sim: &Sim, summary: &Summary, files: &mut Vec<String>) -> io::Result<()> {
    let io = |e: anyhow::Error| io::Error::other(format!("{e:#}"));
    let mut table = |name: &str, rows: &mut dyn FnMut(&mut csv::Writer) -> anyhow::Result<()>| {
        let mut w = csv::Writer::create(&dir.join(name)).map_err(io)?;
        rows(&mut w).map_err(io)?;
        w.finish().map_err(io)?;
        files.push(name.into());
        Ok::<_, io::Error>(())
    };
    table("flows.csv", &mut |w| {
        w.header_of(&FlowSummary::default())?;
        summary.flows.iter().try_for_each(|f| w.row(f))
    })?;
    table("links.csv", &mut |w| {
        w.header_of(&LinkSummary::default())?;
        summary.links.iter().try_for_each(|l| w.row(l))
    })?;
    table("goodput.csv", &mut |w| {
        w.header_of(&GoodputRow::default())?;
        for (_, e, ref flow) in senders(sim) {
            let rx = &sim.endpoints[sim.endpoints[e as usize].peer as usize];
            let dt = rx.goodput.interval.as_secs_f64();
            for (i, &goodput_bps) in rx.goodput.rates_bps().iter().enumerate() {
                w.row(&GoodputRow {
                    time_s: i as f64 * dt,
                    flow,
                    goodput_bps,
                })?;
            }
        }
        Ok(())
    })?;
    table("cwnd.csv", &mut |w| {
        w.header_of(&CwndRow::default())?;
        for (_, e, ref flow) in senders(sim) {
            for (t, r) in sim.trace_times.iter().zip(&sim.endpoints[e as usize].trace) {
                if r.is_open() {
                    w.row(&CwndRow {
                        time_s: t.as_secs_f64(),
                        flow,
                        cwnd_bytes: r.cwnd,
                        ssthresh_bytes: r.ssthresh,
                        srtt_ms: r.srtt_ms,
                        inflight_bytes: r.pipe,
                    })?;
                }
            }
        }
        Ok(())
    })?;
    table("queues.csv", &mut |w| {
        w.header_of(&QueueRow::default())?;
        for f in sim.ifaces.iter().filter(|f| f.stats.max_bytes > 0) {
            for (t, q) in sim.trace_times.iter().zip(&f.trace) {
                w.row(&QueueRow {
                    time_s: t.as_secs_f64(),
                    queue: &f.name,
                    bytes: q.bytes,
                    packets: q.packets,
                })?;
            }
        }
        Ok(())
    })?;
    table("ack_bursts.csv", &mut |w| {
        w.header_of(&AckBurstRow::default())?;
        for f in &sim.ifaces {
            for (burst_len, &count) in f.stats.ack_bursts.iter().enumerate() {
                if count > 0 {
                    w.row(&AckBurstRow {
                        queue: &f.name,
                        burst_len,
                        count,
                    })?;
                }
            }
        }
        Ok(())
    })
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
    for (_, e, name) in senders.iter().take(MAX_PLOTTED) {
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
        for (_, e, _) in &senders {
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
    for (_, e, name) in senders.iter().take(MAX_PLOTTED) {
        let tr = &sim.endpoints[*e as usize].trace;
        cwnd.push_series(Series::line(
            name.clone(),
            times
                .iter()
                .zip(tr)
                .map(|(&t, r)| (t, r.cwnd / 1e3))
                .collect(),
        ));
        rtt.push_series(Series::line(
            name.clone(),
            times
                .iter()
                .zip(tr)
                .map(|(&t, r)| (t, if r.srtt_ms > 0.0 { r.srtt_ms } else { f64::NAN }))
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
                .map(|(&t, q)| (t, q.bytes as f64 / 1e3))
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
