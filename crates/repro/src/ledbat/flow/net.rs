//! Scenarios and measurements of `ledbat-flow`: a dumbbell with one
//! drop-tail bottleneck and backlogged TCP flows, built in code.

use hopwise_experiment::stats::jain;
use hopwise_proto::cc::{CcConfig, ParamValue};
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::*;
use hopwise_sim::Sim;

/// The bottleneck: a dumbbell h_i — r1 — r2 — d_i with 1 Gbit/s, 1 ms access
/// links and a drop-tail bottleneck of `rate_kbps` in both directions.
#[derive(Clone, Copy, Debug)]
pub struct Path {
    pub rate_kbps: u64,
    /// Base round-trip time (the bottleneck's one-way delay is RTT/2 − 2 ms).
    pub rtt_ms: u64,
    /// Bottleneck buffer, packets.
    pub buffer_pkts: u64,
}

impl Path {
    /// Fig. 3/4: C = 1 Mbit/s, RTT 50 ms, 100 packets.
    pub const FIG4: Path = Path {
        rate_kbps: 1_000,
        rtt_ms: 50,
        buffer_pkts: 100,
    };
    /// Fig. 2: C = 10 Mbit/s, RTT 50 ms, 100 packets.
    pub const FIG2: Path = Path {
        rate_kbps: 10_000,
        rtt_ms: 50,
        buffer_pkts: 100,
    };

    /// Queueing delay of a full buffer of 1500 B packets.
    pub fn buffer_delay_ms(&self) -> f64 {
        self.buffer_pkts as f64 * 1500.0 * 8.0 / self.rate_kbps as f64
    }
}

/// One backlogged flow.
#[derive(Clone, Debug)]
pub struct FlowDef {
    pub name: String,
    pub cc: CcConfig,
    pub start: Dur,
}

impl FlowDef {
    pub fn new(name: impl Into<String>, cc: CcConfig) -> Self {
        FlowDef {
            name: name.into(),
            cc,
            start: Dur::ZERO,
        }
    }
    pub fn at(mut self, start: Dur) -> Self {
        self.start = start;
        self
    }
}

/// The TCP options of every flow in the paper-faithful runs: the receiver
/// acknowledges every segment, as ns-2's `TCPSink` does (the paper used
/// ns-2), and the initial window is ns-2's default `windowInit_` of 2
/// segments. No SACK: ns-2's `TCPSink` and `Agent/TCP/Newreno` have none.
/// Timestamps stay on (they give the one-way delay samples; with them a
/// full segment is a 1500 B packet).
pub fn tcp_ns2() -> TcpConfig {
    TcpConfig {
        delayed_ack: false,
        initial_window: 2,
        sack: false,
        ..TcpConfig::default()
    }
}

/// Our TCP model's defaults (Linux-like): delayed ACKs and an initial window
/// of 10 segments.
pub fn tcp_linux() -> TcpConfig {
    TcpConfig::default()
}

/// A controller by name with parameters (`("target", "100ms")`; numbers and
/// booleans are recognised).
pub fn cc(name: &str, params: &[(&str, &str)]) -> CcConfig {
    let mut c = CcConfig::from_name(name).expect("known controller");
    for (k, v) in params {
        let value = match (v.parse::<f64>(), *v) {
            (Ok(x), _) => ParamValue::Num(x),
            (_, "true") => ParamValue::Bool(true),
            (_, "false") => ParamValue::Bool(false),
            _ => ParamValue::Str(v),
        };
        c.set(k, value).expect("valid parameter");
    }
    c
}

/// One simulation run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub name: String,
    pub path: Path,
    pub flows: Vec<FlowDef>,
    pub duration: Dur,
    pub seed: u64,
    /// Start times jittered uniformly in `[0, jitter)`.
    pub jitter: Dur,
    /// TCP options of every flow (delayed ACKs, SACK, initial window).
    pub tcp: TcpConfig,
    /// Measurements ignore the first `warmup`.
    pub warmup: Dur,
    /// Trace interval for cwnd/queue traces (`None`: 1 s, unused).
    pub trace: Option<Dur>,
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Goodput of each flow, bit/s, over the measured window.
    pub goodput_bps: Vec<f64>,
    /// Fraction of time the bottleneck (forward direction) was transmitting.
    pub utilization: f64,
    /// Packets dropped at the bottleneck over packets offered to it.
    pub loss_rate: f64,
    /// The same from [`STEADY_FROM`] on, after the start-up transient (NaN
    /// for a run no longer than that).
    pub steady_loss_rate: f64,
    /// Time-weighted mean bottleneck queue, packets.
    pub mean_queue_pkts: f64,
    /// Retransmission timeouts per flow.
    pub timeouts: Vec<u64>,
    /// Trace times (s).
    pub times: Vec<f64>,
    /// cwnd of each flow at each trace time, packets of 1448 B.
    pub cwnd_pkts: Vec<Vec<f64>>,
    /// Bottleneck queue at each trace time, packets.
    pub queue_pkts: Vec<f64>,
    /// Goodput bins (1 s) of each flow, bit/s.
    pub goodput_bins: Vec<Vec<f64>>,
}

impl RunResult {
    /// Share of flow `i` in the total goodput.
    pub fn share(&self, i: usize) -> f64 {
        let tot: f64 = self.goodput_bps.iter().sum();
        if tot > 0.0 {
            self.goodput_bps[i] / tot
        } else {
            f64::NAN
        }
    }
    /// Share of the flows in `idx`.
    pub fn share_of(&self, idx: impl IntoIterator<Item = usize>) -> f64 {
        let tot: f64 = self.goodput_bps.iter().sum();
        idx.into_iter().map(|i| self.goodput_bps[i]).sum::<f64>() / tot
    }
    /// Jain's index of the flows' goodputs (NaN if nobody got anything).
    pub fn jain(&self) -> f64 {
        jain(&self.goodput_bps)
    }
    /// Bytes-weighted share of flow `i` between `from_s` and `to_s` seconds,
    /// from the 1 s goodput bins (needs a traced run).
    pub fn share_between(&self, i: usize, from_s: f64, to_s: f64) -> f64 {
        let sum = |bins: &Vec<f64>| -> f64 {
            bins.iter()
                .enumerate()
                .filter(|(k, _)| (*k as f64) >= from_s && ((*k + 1) as f64) <= to_s + 1e-9)
                .map(|(_, v)| *v)
                .sum()
        };
        let tot: f64 = self.goodput_bins.iter().map(sum).sum();
        if tot > 0.0 {
            sum(&self.goodput_bins[i]) / tot
        } else {
            f64::NAN
        }
    }
}

/// Payload per segment with timestamps (1500 B packets).
pub const SEG: f64 = 1448.0;

/// Where a run's steady state starts for [`RunResult::steady_loss_rate`]:
/// after NewReno's start-up overshoot and the timeouts that follow it (in
/// Fig. 4's runs nearly all of them fall in the first 15–20 s).
pub const STEADY_FROM: Dur = Dur::from_secs(30);

fn dir(rate: Rate, delay: Dur, limit: Limit) -> DirSpec {
    DirSpec {
        rate,
        delay,
        queue: QueueSpec::DropTail { limit },
        loss: 0.0,
        model: Default::default(),
    }
}

/// Builds the scenario of `spec`.
pub fn scenario(spec: &RunSpec) -> Scenario {
    let n = spec.flows.len();
    let mut s = Scenario::new(spec.name.clone(), spec.duration, spec.seed);
    s.start_jitter = spec.jitter;
    s.measure.warmup = spec.warmup;
    s.measure.trace_interval = spec.trace.unwrap_or(Dur::SECOND);
    for r in ["r1", "r2"] {
        s.nodes.push(NodeSpec {
            name: r.into(),
            kind: NodeKind::Switch,
        });
    }
    let access = Dur::from_millis(1);
    let fast = dir(Rate::from_mbps(1000), access, Limit::Packets(1000));
    for i in 0..n {
        for (h, r) in [(format!("h{i}"), "r1"), (format!("d{i}"), "r2")] {
            s.nodes.push(NodeSpec {
                name: h.clone(),
                kind: NodeKind::Host,
            });
            s.links.push(LinkSpec {
                name: format!("{h}-{r}"),
                a: h,
                b: r.into(),
                ab: fast.clone(),
                ba: fast.clone(),
            });
        }
    }
    let p = spec.path;
    let owd = Dur::from_micros(p.rtt_ms * 500) - access * 2;
    let b = dir(
        Rate::from_kbps(p.rate_kbps),
        owd,
        Limit::Packets(p.buffer_pkts),
    );
    s.links.push(LinkSpec {
        name: "bottleneck".into(),
        a: "r1".into(),
        b: "r2".into(),
        ab: b.clone(),
        ba: b,
    });
    for (i, f) in spec.flows.iter().enumerate() {
        let tcp = spec.tcp.clone();
        s.flows.push(FlowSpec {
            name: f.name.clone(),
            from: format!("h{i}"),
            to: format!("d{i}"),
            cc: f.cc.clone(),
            tcp,
            start: f.start,
            stop: None,
            traffic: Traffic::Bulk,
            bidir: false,
            group: None,
        });
    }
    s
}

/// Runs `spec` and measures it.
pub fn simulate(spec: &RunSpec) -> RunResult {
    let sc = scenario(spec);
    let mut sim = Sim::new(&sc).expect("valid built-in scenario");
    let b = sim.iface_id("bottleneck:ab").expect("bottleneck");
    // Stopping at STEADY_FROM and going on processes the same events.
    sim.run_until(Time::ZERO + STEADY_FROM);
    let lost =
        |st: &hopwise_sim::measure::QueueStats| (st.drops + st.wire_losses, st.enqueued + st.drops);
    let before = lost(sim.iface(b).stats());
    sim.run();
    let after = lost(sim.iface(b).stats());
    let steady_offered = after.1 - before.1;
    let sum = hopwise_sim::report::Summary::of(&sim, &spec.name, 0.0);
    let link = sum.link("bottleneck:ab").expect("bottleneck");
    let mut r = RunResult {
        goodput_bps: sum.flows.iter().map(|f| f.goodput_bps).collect(),
        utilization: link.utilization,
        loss_rate: link.loss_rate,
        // NaN for a run that ends before STEADY_FROM (none of ours does).
        steady_loss_rate: if spec.duration <= STEADY_FROM {
            f64::NAN
        } else if steady_offered > 0 {
            (after.0 - before.0) as f64 / steady_offered as f64
        } else {
            0.0
        },
        mean_queue_pkts: link.mean_queue_packets,
        timeouts: sum.flows.iter().map(|f| f.timeouts).collect(),
        ..RunResult::default()
    };
    if spec.trace.is_some() {
        r.times = sim
            .trace_times()
            .iter()
            .map(|t| (*t - Time::ZERO).as_secs_f64())
            .collect();
        r.queue_pkts = sim
            .iface(b)
            .trace()
            .iter()
            .map(|q| q.packets as f64)
            .collect();
        for f in sim.flows() {
            let [tx, rx] = sim.flow(f).ends();
            r.cwnd_pkts.push(
                sim.endpoint(tx)
                    .trace()
                    .iter()
                    .map(|row| row.cwnd / SEG)
                    .collect(),
            );
            r.goodput_bins.push(sim.endpoint(rx).goodput().rates_bps());
        }
    }
    r
}
