//! The paper's Fig. 2 built in code ([`Setup`]), running it, and what the
//! figures read from a finished run (goodput, traces, queues, ACK bursts).

use hopwise_experiment::stats;
use hopwise_models::pendulum;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{RttEstimatorKind, TcpConfig};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{
    DirSpec, FlowSpec, Limit, LinkSpec, MeasureSpec, NodeKind, NodeSpec, QueueSpec, Scenario,
    Traffic,
};
use hopwise_sim::{IfaceId, Sim, Sock, TraceSample};

/// The paper's downlink capacity.
pub const DOWN_RATE: Rate = Rate::from_kbps(2400);
/// The paper's uplink capacity (asymmetric case).
pub const UP_RATE: Rate = Rate::from_kbps(196);

/// The setup of the paper's Fig. 2: download D1 → D2 and upload U2 → U1
/// across the bottleneck R1 — R2. D1 and U1 are on the "Internet" side of
/// R1; D2 and U2 behind R2. The downlink is R1 → R2, the uplink R2 → R1.
#[derive(Clone, Debug)]
pub struct Setup {
    pub down_rate: Rate,
    pub up_rate: Rate,
    /// R1's output queue towards R2.
    pub down_buffer: Limit,
    /// R2's output queue towards R1.
    pub up_buffer: Limit,
    /// One-way propagation delay of the bottleneck link (`T_p`).
    pub tp: Dur,
    /// One-way delay between D1 and R1.
    pub d_delay: Dur,
    /// One-way delay between U1 and R1.
    pub u_delay: Dur,
    /// One-way delay between R2 and D2, and between R2 and U2.
    pub home_delay: Dur,
    pub delayed_ack: bool,
    /// TCP send and receive buffers (`B_TCP`).
    pub tcp_buffer: u64,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Dur,
    /// RFC 6298 (every reproduction run) or Linux's estimator (`hopwise lab`'s comparison).
    pub rtt_estimator: RttEstimatorKind,
    /// PRR in SACK recovery (`TcpConfig::prr`): off in every reproduction
    /// run, on in `hopwise lab pendulum-fig10`'s Linux-like setting.
    pub prr: bool,
    pub duration: Dur,
    pub trace_interval: Dur,
    pub goodput_interval: Dur,
    pub warmup: Dur,
    pub seed: u64,
    /// Flow start (and stop) times are shifted by up to this much, per seed.
    pub jitter: Dur,
    /// Start and stop of the download.
    pub download: (Dur, Option<Dur>),
    /// Start and stop of each upload.
    pub uploads: Vec<(Dur, Option<Dur>)>,
}

/// Lower bound of the RTO's deviation term in every run (with
/// `TcpConfig::rto_floor_on_variance`, on by default: RTO ≥ SRTT + 1 s). 1 s
/// is RFC 6298's and 4.4BSD's minimum (`TCPTV_MIN`), and BSD's
/// `tcp_xmit_timer` also keeps the RTO above the last RTT plus two 500 ms
/// ticks; the paper simulated with QualNet, whose TCP derives from BSD. Our
/// default is Linux's 200 ms. See docs/reproductions/pendulum.md.
pub const MIN_RTO: Dur = Dur::from_secs(1);

/// Access links: fast enough never to queue.
pub(super) const ACCESS_RATE: Rate = Rate::from_mbps(100);

impl Setup {
    /// §2.1: symmetric 2.4/2.4 Mbit/s, 30 000 B buffers, `T_p` = 0, 1 ms from
    /// every endpoint to its router, NewReno with SACK, a download and an upload
    /// from time 0.
    pub fn symmetric(duration: Dur) -> Setup {
        Setup {
            down_rate: DOWN_RATE,
            up_rate: DOWN_RATE,
            down_buffer: Limit::Bytes(30_000),
            up_buffer: Limit::Bytes(30_000),
            tp: Dur::ZERO,
            d_delay: Dur::from_millis(1),
            u_delay: Dur::from_millis(1),
            home_delay: Dur::from_millis(1),
            delayed_ack: false,
            tcp_buffer: 4 << 20,
            min_rto: MIN_RTO,
            rtt_estimator: RttEstimatorKind::Rfc6298,
            prr: false,
            duration,
            trace_interval: Dur::from_millis(10),
            goodput_interval: Dur::SECOND,
            warmup: Dur::ZERO,
            seed: 1,
            jitter: Dur::ZERO,
            download: (Dur::ZERO, None),
            uploads: vec![(Dur::ZERO, None)],
        }
    }

    /// §2.3 and §4: 2.4 Mbit/s down, 196 kbit/s up, the download endpoint 1 ms
    /// and the upload endpoint 5 ms from R1, delayed ACKs.
    pub fn asymmetric(down_buffer: Limit, up_buffer: Limit, tp: Dur, duration: Dur) -> Setup {
        Setup {
            up_rate: UP_RATE,
            down_buffer,
            up_buffer,
            tp,
            u_delay: Dur::from_millis(5),
            delayed_ack: true,
            ..Setup::symmetric(duration)
        }
    }

    /// The base (queue-free) round trip of the download and of the upload.
    pub fn base_rtts(&self) -> (Dur, Dur) {
        let d = (self.tp + self.d_delay + self.home_delay) * 2;
        let u = (self.tp + self.u_delay + self.home_delay) * 2;
        (d, u)
    }

    /// The round trip the model uses for `P_x = C_x · RTT`: the mean of the
    /// download's and the upload's queue-free round trips.
    pub fn model_rtt(&self) -> f64 {
        let (d, u) = self.base_rtts();
        (d.as_secs_f64() + u.as_secs_f64()) / 2.0
    }

    /// The model's parameters for this setup (buffers in bytes; a buffer
    /// counted in packets is taken as that many full segments).
    pub fn model(&self) -> pendulum::Params {
        let bytes = |l: Limit| match l {
            Limit::Bytes(b) => b as f64,
            Limit::Packets(p) => p as f64 * pendulum::DATA_SIZE,
        };
        pendulum::Params {
            down_rate: self.down_rate.bytes_per_sec(),
            up_rate: self.up_rate.bytes_per_sec(),
            rtt: self.model_rtt(),
            down_buffer: bytes(self.down_buffer),
            up_buffer: bytes(self.up_buffer),
            delayed_ack: self.delayed_ack,
            ack_size: pendulum::ACK_SIZE,
            data_size: pendulum::DATA_SIZE,
            tcp_buffer: self.tcp_buffer as f64,
        }
    }

    /// The scenario: nodes D1, U1, R1, R2, D2, U2; flows `down` and `up0`, `up1`, ….
    pub fn scenario(&self, name: &str) -> Scenario {
        let mut s = Scenario::new(name, self.duration, self.seed);
        s.start_jitter = self.jitter;
        s.measure = MeasureSpec {
            goodput_interval: self.goodput_interval,
            trace_interval: self.trace_interval,
            warmup: self.warmup,
            ..MeasureSpec::default()
        };
        for (n, kind) in [
            ("R1", NodeKind::Switch),
            ("R2", NodeKind::Switch),
            ("D1", NodeKind::Host),
            ("U1", NodeKind::Host),
            ("D2", NodeKind::Host),
            ("U2", NodeKind::Host),
        ] {
            s.nodes.push(NodeSpec {
                name: n.into(),
                kind,
            });
        }
        let dir = |rate: Rate, delay: Dur, limit: Limit| DirSpec {
            rate,
            delay,
            queue: QueueSpec::DropTail { limit },
            loss: 0.0,
            model: Default::default(),
        };
        let access = |d: Dur| dir(ACCESS_RATE, d, Limit::Packets(1000));
        // The bottleneck first, so that its ports are interfaces 0 (down) and 1 (up).
        s.links.push(LinkSpec {
            name: "bottleneck".into(),
            a: "R1".into(),
            b: "R2".into(),
            ab: dir(self.down_rate, self.tp, self.down_buffer),
            ba: dir(self.up_rate, self.tp, self.up_buffer),
        });
        for (h, r, d) in [
            ("D1", "R1", self.d_delay),
            ("U1", "R1", self.u_delay),
            ("D2", "R2", self.home_delay),
            ("U2", "R2", self.home_delay),
        ] {
            s.links.push(LinkSpec {
                name: format!("{h}-{r}"),
                a: h.into(),
                b: r.into(),
                ab: access(d),
                ba: access(d),
            });
        }
        let tcp = TcpConfig {
            delayed_ack: self.delayed_ack,
            sack: true,
            send_buffer: self.tcp_buffer,
            recv_buffer: self.tcp_buffer,
            min_rto: self.min_rto,
            rtt_estimator: self.rtt_estimator,
            prr: self.prr,
            ..TcpConfig::default()
        };
        let flow =
            |name: String, from: &str, to: &str, (start, stop): (Dur, Option<Dur>)| FlowSpec {
                name,
                from: from.into(),
                to: to.into(),
                cc: CcConfig::NewReno,
                tcp: tcp.clone(),
                start,
                stop,
                traffic: Traffic::Bulk,
                bidir: false,
                group: None,
            };
        s.flows.push(flow("down".into(), "D1", "D2", self.download));
        for (i, &w) in self.uploads.iter().enumerate() {
            s.flows.push(flow(format!("up{i}"), "U2", "U1", w));
        }
        s
    }
}

/// Interface index ([`IfaceId::index`]) of the downlink port (R1 → R2) and
/// the uplink port (R2 → R1).
pub const DOWN_IFACE: usize = 0;
pub const UP_IFACE: usize = 1;

/// Builds and runs a setup.
pub fn simulate(setup: &Setup, name: &str) -> anyhow::Result<Sim> {
    let sc = setup.scenario(name);
    hopwise_sim::scenario::validate(&sc, name).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut sim = Sim::new(&sc).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    sim.run();
    Ok(sim)
}

/// Receiving endpoint of the `f`-th flow (flows are one-way: the responder reads).
pub fn receiver(sim: &Sim, f: usize) -> Sock {
    ends(sim, f)[1]
}

/// Sending endpoint of the `f`-th flow.
pub fn sender(sim: &Sim, f: usize) -> Sock {
    ends(sim, f)[0]
}

fn ends(sim: &Sim, f: usize) -> [Sock; 2] {
    let id = sim.flows().nth(f).expect("a flow of the setup");
    sim.flow(id).ends()
}

/// The `i`-th link direction (see [`DOWN_IFACE`]).
pub(super) fn iface(sim: &Sim, i: usize) -> IfaceId {
    sim.ifaces().nth(i).expect("a link direction of the setup")
}

/// Bytes flow `f` delivered per second over the bins `[t0, t1)` (seconds), in bit/s.
pub fn goodput_between(sim: &Sim, f: usize, t0: f64, t1: f64) -> f64 {
    let g = sim.endpoint(receiver(sim, f)).goodput();
    let w = g.interval.as_secs_f64();
    let (i0, i1) = ((t0 / w).round() as usize, (t1 / w).round() as usize);
    let i1 = i1.min(g.bins.len());
    if i1 <= i0 {
        return 0.0;
    }
    let bytes: u64 = g.bins[i0..i1].iter().sum();
    bytes as f64 * 8.0 / ((i1 - i0) as f64 * w)
}

/// Mean of `field` of endpoint `e`'s trace over trace samples in `[t0, t1)` seconds.
pub(super) fn trace_mean(
    sim: &Sim,
    e: Sock,
    field: impl Fn(&TraceSample) -> f64,
    t0: f64,
    t1: f64,
) -> f64 {
    let tr = sim.endpoint(e).trace();
    let v: Vec<f64> = sim
        .trace_times()
        .iter()
        .zip(tr)
        .filter(|(t, _)| {
            let t = t.as_nanos() as f64 / 1e9;
            t >= t0 && t < t1
        })
        .map(|(_, r)| field(r))
        .filter(|x| x.is_finite())
        .collect();
    stats::mean(&v)
}

/// Occupancy (bytes) of interface `i` at each trace sample in `[t0, t1)`.
pub(super) fn queue_series(sim: &Sim, i: usize, t0: f64, t1: f64) -> Vec<(f64, f64)> {
    let q = sim.iface(iface(sim, i)).trace();
    sim.trace_times()
        .iter()
        .zip(q)
        .map(|(t, q)| (t.as_nanos() as f64 / 1e9, q.bytes as f64))
        .filter(|&(t, _)| t >= t0 && t < t1)
        .collect()
}

/// `field` of endpoint `e`'s trace in `[t0, t1)`, as `(t, value)`.
pub(super) fn endpoint_series(
    sim: &Sim,
    e: Sock,
    field: impl Fn(&TraceSample) -> f64,
    t0: f64,
    t1: f64,
) -> Vec<(f64, f64)> {
    sim.trace_times()
        .iter()
        .zip(sim.endpoint(e).trace())
        .map(|(t, r)| (t.as_nanos() as f64 / 1e9, field(r)))
        .filter(|&(t, _)| t >= t0 && t < t1)
        .collect()
}

/// Median of a run-length histogram (`h[n]` = runs of length `n`).
pub fn hist_median(h: &[u64]) -> Option<u64> {
    let total: u64 = h.iter().sum();
    if total == 0 {
        return None;
    }
    let mut acc = 0;
    for (n, &c) in h.iter().enumerate() {
        acc += c;
        if acc * 2 >= total {
            return Some(n as u64);
        }
    }
    None
}

/// Two histograms added bin by bin.
pub fn hist_sum(a: &[u64], b: &[u64]) -> Vec<u64> {
    (0..a.len().max(b.len()))
        .map(|i| a.get(i).copied().unwrap_or(0) + b.get(i).copied().unwrap_or(0))
        .collect()
}

/// Fraction of trace samples in `[t0, t1)` for which `pred(occupancy bytes)` holds.
pub(super) fn queue_fraction(
    sim: &Sim,
    i: usize,
    t0: f64,
    t1: f64,
    pred: impl Fn(f64) -> bool,
) -> f64 {
    let q = queue_series(sim, i, t0, t1);
    if q.is_empty() {
        return f64::NAN;
    }
    q.iter().filter(|p| pred(p.1)).count() as f64 / q.len() as f64
}

pub(super) fn secs(d: Dur) -> f64 {
    d.as_secs_f64()
}

/// A `len`-second window ending 5 s before `total` (or at the start for short runs).
pub(super) fn window(total: f64, len: f64) -> (f64, f64) {
    let b = (total - 5.0).max(len.min(total));
    ((b - len).max(0.0), b)
}
