//! The kernel's half: one case on the lab's access dumbbell, the bottleneck
//! read every 100 ms and the senders' TCP state (`ss -tin`) every second.

use super::{Case, Measured, Plan, RATE_BPS, WARM_S};
use anyhow::Result;
use hopwise_experiment::{stats, Progress};
use hopwise_lab::cmd::{args, run};
use hopwise_lab::tc;
use hopwise_lab::topology::{
    AccessLab, AccessSpec, Buffer, Names, SideDelays, DOWN_DEV, HOME_ADDR, LEAF, UP_DEV,
};
use hopwise_lab::traffic::{goodput_bps, join_flows, spawn_receiver, spawn_sender, Clock, BIN_S};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// The receivers' first port; flow i listens on `PORT + i`.
pub const PORT: u16 = 6000;

/// The bottleneck leaf qdisc at one moment.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct QueueSample {
    pub time_s: f64,
    pub backlog_bytes: u64,
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub drops: u64,
    /// Packets the reverse (ACK) direction's queue sent.
    pub ack_packets: u64,
}

/// One sender socket as `ss -tin` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SsSample {
    pub time_s: f64,
    /// The flow's index (its receiver's port − [`PORT`]).
    pub flow: usize,
    pub cwnd: Option<f64>,
    pub rtt_ms: Option<f64>,
    pub pacing_bps: Option<f64>,
    pub delivery_bps: Option<f64>,
    pub bbr_bw_bps: Option<f64>,
    pub bbr_min_rtt_ms: Option<f64>,
}

/// Each flow's means of its `ss` samples after the warm-up.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SsMeans {
    pub flow: usize,
    pub samples: usize,
    pub cwnd: Option<f64>,
    pub rtt_ms: Option<f64>,
    pub pacing_bps: Option<f64>,
    pub bbr_bw_bps: Option<f64>,
    pub bbr_min_rtt_ms: Option<f64>,
}

/// What the kernel did in one case.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelRun {
    pub measured: Measured,
    /// Bytes over packets the bottleneck sent (1514: one MSS per frame).
    pub mean_frame_bytes: f64,
    pub ss: Vec<SsMeans>,
    /// The senders' namespace's TCP counters at the end.
    pub tcp_counters: BTreeMap<String, u64>,
    /// The delay line's lateness report.
    pub delay_line: String,
    #[serde(skip)]
    pub queue: Vec<QueueSample>,
    #[serde(skip)]
    pub ss_samples: Vec<SsSample>,
    /// Each flow's 100 ms goodput bins.
    #[serde(skip)]
    pub bins: Vec<Vec<u64>>,
}

/// Runs `case` on kernel TCP for the plan's seconds.
pub fn run_case(plan: &Plan, case: &Case, progress: &dyn Progress) -> Result<KernelRun> {
    let spec = AccessSpec {
        down_rate_bps: RATE_BPS,
        up_rate_bps: 1_000_000_000,
        down_buffer: Buffer::Bytes(case.buffer_bytes()),
        up_buffer: Buffer::Packets(1000),
        cc: case.flows[0].cc.kernel().into(),
        delayed_acks: plan.kernel_delayed_acks,
        delay: Some(SideDelays {
            inet_ms: 10.0,
            home_ms: 10.0,
        }),
    };
    let mut lab = AccessLab::build(&Names::new_instance(), &spec)?;
    let end = plan.secs as f64;
    let clock = Clock::start();
    let mut receivers = Vec::new();
    let mut senders = Vec::new();
    // A failure to start a flow, or to read the queue, ends the run; the
    // flows already started are joined before the lab is taken down.
    let mut line_failed = None;
    for (i, f) in case.flows.iter().enumerate() {
        let port = PORT + i as u16;
        let receiver = lab.home.open().and_then(|ns| {
            spawn_receiver(ns, HOME_ADDR, port, clock, end + 1.0, format!("flow {i}"))
        });
        match receiver {
            Ok(h) => receivers.push(h),
            Err(e) => {
                line_failed = Some(e);
                break;
            }
        }
        let sender = lab.inet.open().and_then(|ns| {
            spawn_sender(
                ns,
                SocketAddr::from((HOME_ADDR, port)),
                f.cc.kernel().into(),
                clock,
                f.start_s,
                end,
                format!("flow {i}"),
            )
        });
        match sender {
            Ok(h) => senders.push(h),
            Err(e) => {
                line_failed = Some(e);
                break;
            }
        }
    }
    progress.start(
        &format!("kernel: {} (real time)", case.name),
        end.ceil() as u64,
    );
    let mut queue = Vec::new();
    let mut ss = Vec::new();
    let mut ticked = 0u64;
    let mut t = if line_failed.is_some() { end } else { 0.0 };
    while t < end {
        clock.sleep_until(t);
        let now = clock.now_s();
        if let Err(e) = lab.check_line() {
            line_failed = Some(e);
            break;
        }
        let q = match lab.qdiscs() {
            Ok(q) => q,
            Err(e) => {
                line_failed = Some(e);
                break;
            }
        };
        if let Some(s) = sample(&q, now) {
            queue.push(s);
        }
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
            let a = args(&[
                "netns",
                "exec",
                lab.inet.name(),
                "ss",
                "-tin",
                "state",
                "established",
            ]);
            if let Ok(text) = run("ip", &a) {
                ss.extend(parse_ss(&text, now));
            }
        }
        t += BIN_S;
    }
    clock.sleep_until(end);
    progress.finish();
    let bins = join_flows(senders, receivers, line_failed)?;
    if let Ok(q) = lab.qdiscs() {
        if let Some(s) = sample(&q, clock.now_s()) {
            queue.push(s);
        }
    }
    let tcp_counters = hopwise_lab::kstats::read(&lab.inet).unwrap_or_default();
    let lanes = lab.stop_line()?;
    drop(lab);
    let lane_refs: Vec<_> = lanes.iter().flat_map(|l| [&l.ab, &l.ba]).collect();
    let delay_line = hopwise_lab::delay::lateness_summary(&lane_refs);
    let goodput: Vec<f64> = bins.iter().map(|b| goodput_bps(b, WARM_S, end)).collect();
    let mut measured = measure(&queue, end);
    measured.jain = stats::jain(&goodput);
    measured.goodput_bps = goodput;
    measured.timeouts = tcp_counters.get("TcpExt:TCPTimeouts").copied().unwrap_or(0);
    measured.retransmits = tcp_counters.get("Tcp:RetransSegs").copied().unwrap_or(0);
    let last = queue.last().copied().unwrap_or_default();
    Ok(KernelRun {
        measured,
        mean_frame_bytes: last.sent_bytes as f64 / last.sent_packets.max(1) as f64,
        ss: ss_means(&ss, case.flows.len()),
        tcp_counters,
        delay_line,
        queue,
        ss_samples: ss,
        bins,
    })
}

/// The bottleneck's leaf qdisc, and the ACK direction's packet count.
fn sample(q: &[tc::QdiscStats], time_s: f64) -> Option<QueueSample> {
    let s = tc::find(q, DOWN_DEV, LEAF)?;
    Some(QueueSample {
        time_s,
        backlog_bytes: s.backlog,
        sent_bytes: s.bytes,
        sent_packets: s.packets,
        drops: s.drops,
        ack_packets: tc::find(q, UP_DEV, LEAF).map_or(0, |u| u.packets),
    })
}

/// Utilisation, queueing delay and drop rates from the qdisc samples, over
/// [`WARM_S`, `end`) (the drop rate over the whole run from the start to the
/// last sample before `end`). Samples after `end` (the one taken once the
/// flows were joined, while the senders' buffers drained) are left out, as
/// the simulator's counters stop at the end too.
pub fn measure(queue: &[QueueSample], end: f64) -> Measured {
    let in_window: Vec<&QueueSample> = queue
        .iter()
        .filter(|s| s.time_s >= WARM_S && s.time_s < end)
        .collect();
    let (Some(a), Some(b)) = (in_window.first(), in_window.last()) else {
        return Measured::default();
    };
    let dt = b.time_s - a.time_s;
    let rate = RATE_BPS as f64;
    let drops = b.drops - a.drops;
    let offered = b.sent_packets - a.sent_packets + drops;
    let backlog: Vec<f64> = in_window.iter().map(|s| s.backlog_bytes as f64).collect();
    Measured {
        utilisation: if dt > 0.0 {
            (b.sent_bytes - a.sent_bytes) as f64 * 8.0 / (rate * dt)
        } else {
            0.0
        },
        queue_delay_ms: stats::mean(&backlog) * 8.0 / rate * 1e3,
        drop_rate: drops as f64 / offered.max(1) as f64,
        drop_rate_run: b.drops as f64 / (b.sent_packets + b.drops).max(1) as f64,
        drops,
        acks_per_data: (b.ack_packets - a.ack_packets) as f64
            / (b.sent_packets - a.sent_packets).max(1) as f64,
        ..Measured::default()
    }
}

/// "12.3Mbps", "980kbps", "1.2Gbps", "123bps" in bit/s.
fn rate(s: &str) -> Option<f64> {
    let s = s.trim_end_matches("bps");
    let (num, k) = match s.chars().last()? {
        'G' => (&s[..s.len() - 1], 1e9),
        'M' => (&s[..s.len() - 1], 1e6),
        'K' | 'k' => (&s[..s.len() - 1], 1e3),
        _ => (s, 1.0),
    };
    num.parse::<f64>().ok().map(|v| v * k)
}

/// The sender sockets in `ss -tin` output (connections to a receiver port).
pub fn parse_ss(text: &str, time_s: f64) -> Vec<SsSample> {
    let mut out = Vec::new();
    let mut flow: Option<usize> = None;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            // `Recv-Q Send-Q Local:Port Peer:Port` (no state column when filtered by state).
            flow = line
                .split_whitespace()
                .filter_map(|f| f.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok()))
                .nth(1)
                .filter(|p| (PORT..PORT + 1000).contains(p))
                .map(|p| (p - PORT) as usize);
            continue;
        }
        let Some(f) = flow.take() else { continue };
        let mut s = SsSample {
            time_s,
            flow: f,
            ..SsSample::default()
        };
        let toks: Vec<&str> = line.split_whitespace().collect();
        for (i, t) in toks.iter().enumerate() {
            if let Some(v) = t.strip_prefix("cwnd:") {
                s.cwnd = v.parse().ok();
            } else if let Some(v) = t.strip_prefix("rtt:") {
                s.rtt_ms = v.split('/').next().and_then(|x| x.parse().ok());
            } else if *t == "pacing_rate" {
                s.pacing_bps = toks.get(i + 1).and_then(|x| rate(x));
            } else if *t == "delivery_rate" {
                s.delivery_bps = toks.get(i + 1).and_then(|x| rate(x));
            } else if let Some(v) = t.strip_prefix("bbr:(") {
                for kv in v.trim_end_matches(')').split(',') {
                    match kv.split_once(':') {
                        Some(("bw", x)) => s.bbr_bw_bps = rate(x),
                        Some(("mrtt", x)) => s.bbr_min_rtt_ms = x.parse().ok(),
                        _ => {}
                    }
                }
            }
        }
        out.push(s);
    }
    out
}

fn ss_means(ss: &[SsSample], flows: usize) -> Vec<SsMeans> {
    (0..flows)
        .map(|f| {
            let mine: Vec<&SsSample> = ss
                .iter()
                .filter(|s| s.flow == f && s.time_s >= WARM_S)
                .collect();
            let m = |g: fn(&SsSample) -> Option<f64>| {
                let v: Vec<f64> = mine.iter().filter_map(|s| g(s)).collect();
                (!v.is_empty()).then(|| stats::mean(&v))
            };
            SsMeans {
                flow: f,
                samples: mine.len(),
                cwnd: m(|s| s.cwnd),
                rtt_ms: m(|s| s.rtt_ms),
                pacing_bps: m(|s| s.pacing_bps),
                bbr_bw_bps: m(|s| s.bbr_bw_bps),
                bbr_min_rtt_ms: m(|s| s.bbr_min_rtt_ms),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ss_lines_give_cwnd_rtt_and_bbr_state() {
        let text = "Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n\
0 4194304 10.201.1.1:40000 10.201.2.1:6001\n\
\t bbr wscale:7,7 rto:244 rtt:43.2/1.5 ato:40 mss:1448 cwnd:101 bytes_sent:1 pacing_rate 10.4Mbps delivery_rate 9.61Mbps bbr:(bw:9.7Mbps,mrtt:40.12,pacing_gain:1.25,cwnd_gain:2)\n\
0 0 10.201.1.1:22 10.9.9.9:5555\n\
\t cubic cwnd:10 rtt:1/1\n";
        let s = parse_ss(text, 3.0);
        assert_eq!(s.len(), 1, "{s:?}");
        let s = &s[0];
        assert_eq!(s.flow, 1);
        assert_eq!(s.cwnd, Some(101.0));
        assert_eq!(s.rtt_ms, Some(43.2));
        assert_eq!(s.pacing_bps, Some(10.4e6));
        assert_eq!(s.bbr_bw_bps, Some(9.7e6));
        assert_eq!(s.bbr_min_rtt_ms, Some(40.12));
        assert_eq!(rate("980kbps"), Some(980e3));
        assert_eq!(rate("x"), None);
    }

    #[test]
    fn the_window_counts_drops_against_packets_offered() {
        let q = |t, backlog, bytes, packets, drops| QueueSample {
            time_s: t,
            backlog_bytes: backlog,
            sent_bytes: bytes,
            sent_packets: packets,
            drops,
            ack_packets: packets / 2,
        };
        let samples = [
            q(1.0, 0, 0, 0, 10),
            q(WARM_S, 25_000, 1_000_000, 700, 10),
            q(WARM_S + 1.0, 75_000, 2_250_000, 1525, 40),
        ];
        let m = measure(&samples, 60.0);
        assert!((m.utilisation - 1.0).abs() < 1e-9, "{m:?}");
        // Mean backlog 50 000 B at 10 Mbit/s.
        assert!((m.queue_delay_ms - 40.0).abs() < 1e-9);
        assert_eq!(m.drops, 30);
        assert!((m.drop_rate - 30.0 / 855.0).abs() < 1e-12);
        assert!((m.drop_rate_run - 40.0 / 1565.0).abs() < 1e-12);
        // One ACK per two data packets (the samples' ACK counts are half).
        assert!(
            (m.acks_per_data - (762.0 - 350.0) / 825.0).abs() < 1e-12,
            "{m:?}"
        );
    }
}
