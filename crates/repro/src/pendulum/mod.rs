//! Reproduction `pendulum`: seed 004, Heusse et al., "Two-way TCP
//! connections: old problem, new insight". Two-way TCP on symmetric and
//! asymmetric links: the download collapse (Fig. 1), ACK compression against
//! the data pendulum (Fig. 3–9), the throughput ratio model (Eq. 6–11,
//! Fig. 10) and buffers counted in packets (Fig. 11).
//!
//! Scenarios are built in code ([`Setup`]); [`run_plan`] runs a [`Plan`]
//! (the paper's lengths, or the `--quick` one) and writes `summary.json`,
//! CSVs and SVG figures. Choices and results are documented in
//! `docs/reproductions/pendulum.md`. Two choices matter:
//!
//! * every run uses a 1 s minimum RTO ([`MIN_RTO`]), applied like our
//!   default (Linux's rule) to the deviation term, so RTO ≥ SRTT + 1 s: the
//!   paper's figures come from QualNet 5.0.2, whose TCP is BSD-derived, and
//!   a BSD stack keeps the RTO at least 1 s and at least the last RTT plus
//!   two 500 ms ticks;
//! * the symmetric cases (Fig. 3–5) start both flows at the same instant and
//!   are deterministic; the long runs shift flow starts by a seeded random
//!   amount, one run per seed.

#[cfg(feature = "lab")]
pub mod lab_acks;
#[cfg(feature = "lab")]
pub mod lab_fig1;
#[cfg(feature = "lab")]
pub mod lab_fig10;

use crate::figs;
use crate::{par_map, write_csv, write_summary, Claim, Experiment, Outcome, Progress, ReproOpts};
use anyhow::Context as _;
use hopwise_models::pendulum;
use hopwise_plot::{palette_color, BarChart, Chart, Figure, Series};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{RttEstimatorKind, TcpConfig};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::measure::correlation;
use hopwise_sim::spec::{
    DirSpec, FlowSpec, Limit, LinkSpec, MeasureSpec, NodeKind, NodeSpec, QueueSpec, Scenario,
    Traffic,
};
use hopwise_sim::Sim;
use serde::Serialize;
use std::path::Path;

pub fn experiment() -> Experiment {
    Experiment {
        name: "pendulum",
        about: "Heusse et al. 2011 (seed paper 004): two-way TCP on asymmetric links, ACK compression vs. the data pendulum, buffer sizing (Eq. 11)",
        wall: "quick about 5 s, full about 2 min",
        run,
    }
}

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
const ACCESS_RATE: Rate = Rate::from_mbps(100);

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

/// Interface index of the downlink port (R1 → R2) and the uplink port (R2 → R1).
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

/// Receiving endpoint of flow `f` (flows are one-way: the responder reads).
pub fn receiver(sim: &Sim, f: usize) -> usize {
    sim.flows[f].ends[1] as usize
}

/// Sending endpoint of flow `f`.
pub fn sender(sim: &Sim, f: usize) -> usize {
    sim.flows[f].ends[0] as usize
}

/// Bytes flow `f` delivered per second over the bins `[t0, t1)` (seconds), in bit/s.
pub fn goodput_between(sim: &Sim, f: usize, t0: f64, t1: f64) -> f64 {
    let g = &sim.endpoints[receiver(sim, f)].goodput;
    let w = g.interval.as_secs_f64();
    let (i0, i1) = ((t0 / w).round() as usize, (t1 / w).round() as usize);
    let i1 = i1.min(g.bins.len());
    if i1 <= i0 {
        return 0.0;
    }
    let bytes: u64 = g.bins[i0..i1].iter().sum();
    bytes as f64 * 8.0 / ((i1 - i0) as f64 * w)
}

/// Mean of trace column `col` of endpoint `e` over trace samples in `[t0, t1)` seconds.
fn trace_mean(sim: &Sim, e: usize, col: usize, t0: f64, t1: f64) -> f64 {
    let tr = &sim.endpoints[e].trace;
    let v: Vec<f64> = sim
        .trace_times
        .iter()
        .zip(tr)
        .filter(|(t, _)| {
            let t = t.as_nanos() as f64 / 1e9;
            t >= t0 && t < t1
        })
        .map(|(_, r)| r[col])
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Occupancy (bytes) of interface `i` at each trace sample in `[t0, t1)`.
fn queue_series(sim: &Sim, i: usize, t0: f64, t1: f64) -> Vec<(f64, f64)> {
    sim.trace_times
        .iter()
        .zip(&sim.ifaces[i].trace)
        .map(|(t, q)| (t.as_nanos() as f64 / 1e9, q.0 as f64))
        .filter(|&(t, _)| t >= t0 && t < t1)
        .collect()
}

/// Column `col` of endpoint `e`'s trace in `[t0, t1)`, as `(t, value)`.
fn endpoint_series(sim: &Sim, e: usize, col: usize, t0: f64, t1: f64) -> Vec<(f64, f64)> {
    sim.trace_times
        .iter()
        .zip(&sim.endpoints[e].trace)
        .map(|(t, r)| (t.as_nanos() as f64 / 1e9, r[col]))
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
fn queue_fraction(sim: &Sim, i: usize, t0: f64, t1: f64, pred: impl Fn(f64) -> bool) -> f64 {
    let q = queue_series(sim, i, t0, t1);
    if q.is_empty() {
        return f64::NAN;
    }
    q.iter().filter(|p| pred(p.1)).count() as f64 / q.len() as f64
}

fn secs(d: Dur) -> f64 {
    d.as_secs_f64()
}

fn kbit(bps: f64) -> String {
    format!("{:.0} kbit/s", bps / 1e3)
}

fn f6(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        String::new()
    }
}

/// What to run. [`Plan::full`] is the paper's setup; [`Plan::quick`] shortens
/// the sweeps for CI; tests build smaller plans still.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub quick: bool,
    /// Fig. 1: runs with different start jitter.
    pub fig1_seeds: u32,
    /// Fig. 3–5: length of each symmetric run, seconds.
    pub ack_secs: u64,
    /// Run the sensitivity sweep of ACK compression (endpoint delay, start offset).
    pub ack_sensitivity: bool,
    /// Fig. 6–9: length of each asymmetric run, seconds.
    pub asym_secs: u64,
    /// Fig. 10: seconds per point, runs per point, and the grid.
    pub fig10_secs: u64,
    pub fig10_seeds: u32,
    pub fig10_tp_ms: Vec<u64>,
    pub fig10_down_buffers: Vec<u64>,
    pub fig10_up_buffers: Vec<u64>,
    /// Fig. 11: seconds per point, runs per point, and the grid (packets).
    pub fig11_secs: u64,
    pub fig11_seeds: u32,
    pub fig11_tp_ms: Vec<u64>,
    pub fig11_up_packets: Vec<u64>,
    /// Simulate the uplink buffer the sizing helper proposes.
    pub sizing_demo: bool,
}

impl Plan {
    /// The paper's setup: 600 s per Fig. 10 point, 1000 s per Fig. 11 point.
    pub fn full(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(5).max(1);
        Plan {
            quick: false,
            fig1_seeds: s,
            ack_secs: 60,
            ack_sensitivity: true,
            asym_secs: 120,
            fig10_secs: 600,
            fig10_seeds: s,
            fig10_tp_ms: vec![20, 100],
            fig10_down_buffers: vec![30_000, 60_000, 120_000],
            fig10_up_buffers: vec![
                3_000, 6_000, 9_000, 12_000, 15_000, 20_000, 30_000, 45_000, 60_000,
            ],
            fig11_secs: 1000,
            fig11_seeds: s,
            fig11_tp_ms: vec![20, 100],
            fig11_up_packets: vec![5, 8, 10, 12, 15, 20, 25, 30, 40, 50],
            sizing_demo: true,
        }
    }

    /// The CI variant: the same grids, shorter runs, one run per point.
    pub fn quick(seeds: Option<u32>) -> Plan {
        let s = seeds.unwrap_or(1).max(1);
        Plan {
            quick: true,
            fig1_seeds: seeds.unwrap_or(2).max(1),
            asym_secs: 60,
            fig10_secs: 300,
            fig10_seeds: s,
            fig11_secs: 500,
            fig11_seeds: s,
            ..Plan::full(Some(s))
        }
    }

    pub fn for_opts(opts: &ReproOpts) -> Plan {
        if opts.quick {
            Plan::quick(opts.seeds)
        } else {
            Plan::full(opts.seeds)
        }
    }
}

fn run(opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    run_plan(&Plan::for_opts(opts), opts, progress)
}

/// Runs a plan and writes everything into `opts.out`.
pub fn run_plan(plan: &Plan, opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    let dir = opts.out.as_path();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = Vec::new();

    progress.note("Fig. 1: download collapse under uploads");
    let fig1 = fig1(plan, opts, progress, dir, &mut files)?;
    progress.note("Fig. 3-5: ACK compression against the data pendulum");
    let ack = ack_cases(plan, opts, progress, dir, &mut files)?;
    let sens = if plan.ack_sensitivity {
        ack_sensitivity(plan, opts, progress, dir, &mut files)?
    } else {
        Vec::new()
    };
    progress.note("Fig. 6-9: asymmetric link");
    let asym = asym_cases(plan, opts, progress, dir, &mut files)?;
    progress.note("Fig. 10: throughput ratio, simulation against Eq. 6-11");
    let f10 = fig10(plan, opts, progress, dir, &mut files)?;
    progress.note("Fig. 11: buffers counted in packets");
    let f11 = fig11(plan, opts, progress, dir, &mut files)?;
    let sizing = if plan.sizing_demo {
        progress.note("sizing helper: the uplink buffer for r = k");
        Some(sizing_demo(plan, opts, progress)?)
    } else {
        None
    };

    let claims = claims(&fig1, &ack, &sens, &asym, &f10, &f11, sizing.as_ref());
    let probe = Setup::asymmetric(
        Limit::Bytes(30_000),
        Limit::Bytes(30_000),
        Dur::ZERO,
        Dur::SECOND,
    )
    .model();
    let summary = SummaryJson {
        paper: "seed 004: Heusse, Merritt, Brown, Duda, Two-way TCP connections: old problem, new insight",
        plan: plan.clone(),
        constants: Constants {
            ack_size_bytes: pendulum::ACK_SIZE,
            data_size_bytes: pendulum::DATA_SIZE,
            rho: probe.rho(),
            rho_eff_delayed_ack: probe.rho() / 2.0,
            capacity_ratio_k: probe.capacity_ratio(),
            down_rate_bps: DOWN_RATE.bps(),
            up_rate_bps: UP_RATE.bps(),
            min_rto_ms: MIN_RTO.as_millis(),
            access_rate_bps: ACCESS_RATE.bps(),
            tcp: "NewReno, SACK, timestamps, MSS 1448 B payload; RTO >= SRTT + 1 s (min_rto 1 s on the deviation term, like BSD's RTT + 2 ticks of 500 ms), timer re-armed on retransmitting the head",
        },
        fig1,
        ack_bursts: ack,
        ack_sensitivity: sens,
        asym,
        fig10: f10,
        fig11: f11,
        sizing,
        claims: claims.clone(),
    };
    write_summary(dir, &summary)?;
    files.insert(0, "summary.json".into());
    let mut data = crate::data_pairs(
        &["ack_a.svg", "ack_b.svg", "ack_c.svg", "ack_d.svg"],
        &["ack_bursts.csv", "ack_queues.csv", "ack_windows.csv"],
    );
    data.extend(crate::data_pairs(
        &["asym_9000.svg", "asym_30000.svg"],
        &["asym_series.csv", "asym_bursts.csv"],
    ));
    Ok(Outcome {
        claims,
        files,
        data,
    })
}

#[derive(Serialize)]
struct SummaryJson {
    paper: &'static str,
    plan: Plan,
    constants: Constants,
    fig1: Fig1,
    ack_bursts: Vec<AckCase>,
    ack_sensitivity: Vec<SensRow>,
    asym: Vec<AsymCase>,
    fig10: Vec<Fig10Row>,
    fig11: Vec<Fig11Row>,
    sizing: Option<Sizing>,
    claims: Vec<Claim>,
}

#[derive(Serialize)]
struct Constants {
    ack_size_bytes: f64,
    data_size_bytes: f64,
    rho: f64,
    rho_eff_delayed_ack: f64,
    capacity_ratio_k: f64,
    down_rate_bps: u64,
    up_rate_bps: u64,
    min_rto_ms: u64,
    access_rate_bps: u64,
    tcp: &'static str,
}

// ---------------------------------------------------------------- Fig. 1

/// Fig. 1's measurement windows (seconds): after each change we skip 2 s.
const FIG1_NONE: (f64, f64) = (12.0, 30.0);
const FIG1_ONE: (f64, f64) = (32.0, 50.0);
const FIG1_TWO: (f64, f64) = (62.0, 95.0);

#[derive(Clone, Debug, Serialize)]
pub struct Fig1Run {
    pub seed: u64,
    pub download_bps_no_upload: f64,
    pub download_bps_one_upload: f64,
    pub upload_bps_one_upload: f64,
    pub download_bps_two_uploads: f64,
    /// Both uploads together.
    pub upload_bps_two_uploads: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Fig1 {
    pub seeds: u32,
    /// Means over the runs, bit/s.
    pub download_bps_no_upload: f64,
    pub download_bps_one_upload: f64,
    pub upload_bps_one_upload: f64,
    pub download_bps_two_uploads: f64,
    pub upload_bps_two_uploads: f64,
    pub windows_s: [(f64, f64); 3],
    pub runs: Vec<Fig1Run>,
}

/// Fig. 1's setup: 2.4 Mbit/s / 196 kbit/s, 30 000 B at both ends, the
/// download from 10 s, one upload 30–50 s, two uploads 60–95 s.
pub fn fig1_setup(seed: u64) -> Setup {
    let mut s = Setup::asymmetric(
        Limit::Bytes(30_000),
        Limit::Bytes(30_000),
        Dur::ZERO,
        Dur::from_secs(100),
    );
    s.download = (Dur::from_secs(10), None);
    s.uploads = vec![
        (Dur::from_secs(30), Some(Dur::from_secs(50))),
        (Dur::from_secs(60), Some(Dur::from_secs(95))),
        (Dur::from_secs(60), Some(Dur::from_secs(95))),
    ];
    s.trace_interval = Dur::from_millis(50);
    s.seed = seed;
    s.jitter = Dur::from_millis(500);
    s
}

/// Fig. 1's phase means from a finished run.
pub fn fig1_measure(sim: &Sim, seed: u64) -> Fig1Run {
    let g = |f, w: (f64, f64)| goodput_between(sim, f, w.0, w.1);
    Fig1Run {
        seed,
        download_bps_no_upload: g(0, FIG1_NONE),
        download_bps_one_upload: g(0, FIG1_ONE),
        upload_bps_one_upload: g(1, FIG1_ONE),
        download_bps_two_uploads: g(0, FIG1_TWO),
        upload_bps_two_uploads: g(2, FIG1_TWO) + g(3, FIG1_TWO),
    }
}

fn fig1(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Fig1> {
    let seeds: Vec<u64> = (1..=plan.fig1_seeds as u64).collect();
    progress.start("Fig. 1", seeds.len() as u64);
    let res = par_map(seeds, opts.jobs, progress, |seed| {
        let sim = simulate(&fig1_setup(seed), "fig1")?;
        let m = fig1_measure(&sim, seed);
        // Keep the first run's traces for the figure.
        let plot = (seed == 1).then(|| fig1_traces(&sim));
        anyhow::Ok((m, plot))
    });
    progress.finish();
    let mut runs = Vec::new();
    let mut traces = None;
    for r in res {
        let (m, p) = r?;
        runs.push(m);
        if p.is_some() {
            traces = p;
        }
    }
    let mean = |f: fn(&Fig1Run) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    let out = Fig1 {
        seeds: plan.fig1_seeds,
        download_bps_no_upload: mean(|r| r.download_bps_no_upload),
        download_bps_one_upload: mean(|r| r.download_bps_one_upload),
        upload_bps_one_upload: mean(|r| r.upload_bps_one_upload),
        download_bps_two_uploads: mean(|r| r.download_bps_two_uploads),
        upload_bps_two_uploads: mean(|r| r.upload_bps_two_uploads),
        windows_s: [FIG1_NONE, FIG1_ONE, FIG1_TWO],
        runs,
    };
    if let Some(t) = traces {
        let rows: Vec<Vec<String>> = (0..t.goodput[0].len())
            .map(|i| {
                let mut r = vec![format!("{}", t.goodput[0][i].0)];
                r.extend(t.goodput.iter().map(|g| f6(g[i].1)));
                r
            })
            .collect();
        write_csv(
            &dir.join("fig1_goodput.csv"),
            &[
                "time_s",
                "download_bps",
                "upload1_bps",
                "upload2_bps",
                "upload3_bps",
            ],
            &rows,
        )?;
        files.push("fig1_goodput.csv".into());
        let queues = [("R1 (downlink)", &t.q_down), ("R2 (uplink)", &t.q_up)];
        let rows: Vec<Vec<String>> = queues
            .iter()
            .flat_map(|(name, q)| figs::long_rows(&[], name, q, &|t| format!("{t:.3}"), &f6))
            .collect();
        write_csv(
            &dir.join("fig1_queues.csv"),
            &["time_s", "queue", "bytes"],
            &rows,
        )?;
        files.push("fig1_queues.csv".into());
        let mbit = |v: &[(f64, f64)]| v.iter().map(|&(t, b)| (t, b / 1e6)).collect::<Vec<_>>();
        let mut gp = Chart::new("Goodput (1 s bins)")
            .x_label("time (s)")
            .x_range(0.0, 100.0)
            .y_label("goodput (Mbit/s)")
            .band_x(30.0, 50.0, "1 upload")
            .band_x(60.0, 95.0, "2 uploads");
        let names = [
            "download",
            "upload 1 (30-50 s)",
            "upload 2 (60-95 s)",
            "upload 3 (60-95 s)",
        ];
        for (i, g) in t.goodput.iter().enumerate() {
            let mut s = Series::step(names[i], mbit(g));
            if i > 0 {
                s = s.dashed();
            }
            gp = gp.series(s);
        }
        let q = Chart::new("Queue occupancy")
            .x_label("time (s)")
            .x_range(0.0, 100.0)
            .y_label("queue (bytes)")
            .series(Series::line(queues[0].0, t.q_down.clone()))
            .series(Series::line(queues[1].0, t.q_up.clone()))
            .hline(30_000.0, "buffer");
        Figure::new(
            "Fig. 1: download (2.4 Mbit/s) and uploads (196 kbit/s), 30 000 B buffers",
            1,
        )
        .panel(gp)
        .panel(q)
        .panel_size(900, 330)
        .write_svg(dir.join("fig1.svg"))?;
        files.push("fig1.svg".into());
    }
    let rows: Vec<Vec<String>> = out
        .runs
        .iter()
        .map(|r| {
            vec![
                r.seed.to_string(),
                f6(r.download_bps_no_upload),
                f6(r.download_bps_one_upload),
                f6(r.upload_bps_one_upload),
                f6(r.download_bps_two_uploads),
                f6(r.upload_bps_two_uploads),
            ]
        })
        .collect();
    write_csv(
        &dir.join("fig1_runs.csv"),
        &[
            "seed",
            "download_bps_no_upload",
            "download_bps_one_upload",
            "upload_bps_one_upload",
            "download_bps_two_uploads",
            "upload_bps_two_uploads",
        ],
        &rows,
    )?;
    files.push("fig1_runs.csv".into());
    Ok(out)
}

struct Fig1Traces {
    /// Per flow: (bin start s, bit/s).
    goodput: Vec<Vec<(f64, f64)>>,
    q_down: Vec<(f64, f64)>,
    q_up: Vec<(f64, f64)>,
}

fn fig1_traces(sim: &Sim) -> Fig1Traces {
    let goodput = (0..sim.flows.len())
        .map(|f| {
            let g = &sim.endpoints[receiver(sim, f)].goodput;
            let w = g.interval.as_secs_f64();
            g.rates_bps()
                .into_iter()
                .enumerate()
                .map(|(i, r)| (i as f64 * w, r))
                .collect()
        })
        .collect();
    let end = secs(sim.duration) + 1.0;
    Fig1Traces {
        goodput,
        q_down: queue_series(sim, DOWN_IFACE, 0.0, end),
        q_up: queue_series(sim, UP_IFACE, 0.0, end),
    }
}

// ---------------------------------------------------------------- Fig. 3-5

/// One symmetric ACK-compression case.
#[derive(Clone, Debug, Serialize)]
pub struct AckCase {
    pub case: String,
    pub figure: String,
    pub delayed_ack: bool,
    pub download_endpoint_delay_ms: f64,
    pub upload_endpoint_delay_ms: f64,
    /// Median run of consecutive pure ACKs between data packets, over both bottleneck queues.
    pub median_burst: Option<u64>,
    pub median_burst_downlink: Option<u64>,
    pub median_burst_uplink: Option<u64>,
    /// Pearson correlation of the two bottleneck queues' occupancy (bytes),
    /// sampled every `trace_ms` after the first 5 s.
    pub queue_correlation: Option<f64>,
    pub trace_ms: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub mean_queue_down_bytes: f64,
    pub mean_queue_up_bytes: f64,
    /// `histogram_*[n]` = runs of exactly `n` ACKs.
    pub histogram_downlink: Vec<u64>,
    pub histogram_uplink: Vec<u64>,
}

/// Symmetric setup for the ACK-compression cases.
pub fn ack_setup(secs: u64, delayed_ack: bool, upload_delay: Dur) -> Setup {
    let mut s = Setup::symmetric(Dur::from_secs(secs));
    s.delayed_ack = delayed_ack;
    s.u_delay = upload_delay;
    s.trace_interval = Dur::from_millis(5);
    s
}

/// Seconds skipped before measuring queue correlation in the symmetric runs.
const ACK_WARM: f64 = 5.0;

/// Measures an ACK-compression run.
pub fn ack_measure(sim: &Sim, s: &Setup, case: &str, figure: &str) -> AckCase {
    let end = secs(s.duration) + 1.0;
    let hd = &sim.ifaces[DOWN_IFACE].stats.ack_bursts;
    let hu = &sim.ifaces[UP_IFACE].stats.ack_bursts;
    let qd: Vec<f64> = queue_series(sim, DOWN_IFACE, ACK_WARM, end)
        .iter()
        .map(|p| p.1)
        .collect();
    let qu: Vec<f64> = queue_series(sim, UP_IFACE, ACK_WARM, end)
        .iter()
        .map(|p| p.1)
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    AckCase {
        case: case.into(),
        figure: figure.into(),
        delayed_ack: s.delayed_ack,
        download_endpoint_delay_ms: s.d_delay.as_millis_f64(),
        upload_endpoint_delay_ms: s.u_delay.as_millis_f64(),
        median_burst: hist_median(&hist_sum(hd, hu)),
        median_burst_downlink: hist_median(hd),
        median_burst_uplink: hist_median(hu),
        queue_correlation: correlation(&qd, &qu),
        trace_ms: s.trace_interval.as_millis_f64(),
        download_bps: goodput_between(sim, 0, ACK_WARM, secs(s.duration)),
        upload_bps: goodput_between(sim, 1, ACK_WARM, secs(s.duration)),
        mean_queue_down_bytes: mean(&qd),
        mean_queue_up_bytes: mean(&qu),
        histogram_downlink: hd.clone(),
        histogram_uplink: hu.clone(),
    }
}

/// The four symmetric cases: (name, figure, delayed ACKs, upload endpoint delay).
pub const ACK_CASES: [(&str, &str, bool, u64); 4] = [
    ("equal delays, no delayed ACKs", "Fig. 3", false, 1),
    ("equal delays, delayed ACKs", "Fig. 4", true, 1),
    ("1 ms / 5 ms, no delayed ACKs", "Fig. 5", false, 5),
    ("1 ms / 5 ms, delayed ACKs", "Fig. 5 (variant)", true, 5),
];

struct AckPlot {
    cwnd_d: Vec<(f64, f64)>,
    pipe_d: Vec<(f64, f64)>,
    cwnd_u: Vec<(f64, f64)>,
    pipe_u: Vec<(f64, f64)>,
    q_d: Vec<(f64, f64)>,
    q_u: Vec<(f64, f64)>,
}

fn ack_cases(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Vec<AckCase>> {
    progress.start("Fig. 3-5", ACK_CASES.len() as u64);
    let secs_run = plan.ack_secs;
    let res = par_map(
        ACK_CASES.to_vec(),
        opts.jobs,
        progress,
        |(name, fig, delack, ud)| {
            let s = ack_setup(secs_run, delack, Dur::from_millis(ud));
            let sim = simulate(&s, name)?;
            let m = ack_measure(&sim, &s, name, fig);
            let end = secs(s.duration) + 1.0;
            let (d, u) = (sender(&sim, 0), sender(&sim, 1));
            let p = AckPlot {
                cwnd_d: endpoint_series(&sim, d, 0, 0.0, end),
                pipe_d: endpoint_series(&sim, d, 3, 0.0, end),
                cwnd_u: endpoint_series(&sim, u, 0, 0.0, end),
                pipe_u: endpoint_series(&sim, u, 3, 0.0, end),
                q_d: queue_series(&sim, DOWN_IFACE, 0.0, end),
                q_u: queue_series(&sim, UP_IFACE, 0.0, end),
            };
            anyhow::Ok((m, p))
        },
    );
    progress.finish();
    let mut cases = Vec::new();
    let mut hist_rows = Vec::new();
    let mut q_rows = Vec::new();
    let mut w_rows = Vec::new();
    // The paper's Fig. 3 and 5 show about 30-35 s; we show a window of the same length.
    let (w0, w1) = window(plan.ack_secs as f64, 10.0);
    let (z0, z1) = window(plan.ack_secs as f64, 2.0);
    for (k, r) in res.into_iter().enumerate() {
        let (m, p) = r?;
        for (queue, h) in [
            ("downlink", &m.histogram_downlink),
            ("uplink", &m.histogram_uplink),
        ] {
            for (n, &c) in h.iter().enumerate().skip(1) {
                hist_rows.push(vec![
                    m.case.clone(),
                    queue.into(),
                    n.to_string(),
                    c.to_string(),
                ]);
            }
        }
        for (a, b) in p
            .q_d
            .iter()
            .zip(&p.q_u)
            .filter(|(a, _)| a.0 >= w0 && a.0 < w1)
        {
            q_rows.push(vec![
                m.case.clone(),
                format!("{:.3}", a.0),
                f6(a.1),
                f6(b.1),
            ]);
        }
        let clip = |v: &[(f64, f64)], a: f64, b: f64| -> Vec<(f64, f64)> {
            v.iter().copied().filter(|p| p.0 >= a && p.0 < b).collect()
        };
        let windows = [
            ("D1 cwnd", clip(&p.cwnd_d, w0, w1)),
            ("D1 in flight", clip(&p.pipe_d, w0, w1)),
            ("U2 cwnd", clip(&p.cwnd_u, w0, w1)),
            ("U2 in flight", clip(&p.pipe_u, w0, w1)),
        ];
        for (name, v) in &windows {
            w_rows.extend(figs::long_rows(
                std::slice::from_ref(&m.case),
                name,
                v,
                &|t| format!("{t:.3}"),
                &f6,
            ));
        }
        let [cwnd_d, pipe_d, cwnd_u, pipe_u] = windows.map(|w| w.1);
        let d_panel = lines_panel(
            "D1: cwnd and data in flight; queue at R1",
            "window, queue (bytes)",
            vec![
                ("D1 cwnd", cwnd_d),
                ("D1 in flight", pipe_d),
                ("queue R1", clip(&p.q_d, w0, w1)),
            ],
            &[],
        );
        let zoom = lines_panel(
            "Zoom: queues at R1 and R2",
            "queue (bytes)",
            vec![
                ("queue R1 (D1's data)", clip(&p.q_d, z0, z1)),
                ("queue R2 (U2's data)", clip(&p.q_u, z0, z1)),
            ],
            &["queue R2 (U2's data)"],
        );
        let u_panel = lines_panel(
            "U2: cwnd and data in flight; queue at R2",
            "window, queue (bytes)",
            vec![
                ("U2 cwnd", cwnd_u),
                ("U2 in flight", pipe_u),
                ("queue R2", clip(&p.q_u, w0, w1)),
            ],
            &[],
        );
        let hist = burst_histogram(
            &format!(
                "ACK bursts: median {} (correlation of queues {})",
                m.median_burst.map_or("-".into(), |x| x.to_string()),
                m.queue_correlation
                    .map_or("-".into(), |c| format!("{c:.2}"))
            ),
            &[
                ("R1 (downlink)", &m.histogram_downlink),
                ("R2 (uplink)", &m.histogram_uplink),
            ],
        );
        let name = format!("ack_{}.svg", ["a", "b", "c", "d"][k]);
        Figure::new(
            format!(
                "{}: symmetric 2.4/2.4 Mbit/s, 30 000 B buffers, {}",
                m.figure, m.case
            ),
            2,
        )
        .panel(d_panel)
        .panel(zoom)
        .panel(u_panel)
        .panel(hist)
        .panel_size(620, 340)
        .write_svg(dir.join(&name))?;
        files.push(name);
        cases.push(m);
    }
    write_csv(
        &dir.join("ack_bursts.csv"),
        &["case", "queue", "burst", "count"],
        &hist_rows,
    )?;
    write_csv(
        &dir.join("ack_queues.csv"),
        &["case", "time_s", "queue_down_bytes", "queue_up_bytes"],
        &q_rows,
    )?;
    write_csv(
        &dir.join("ack_windows.csv"),
        &["case", "time_s", "series", "bytes"],
        &w_rows,
    )?;
    files.push("ack_bursts.csv".into());
    files.push("ack_queues.csv".into());
    files.push("ack_windows.csv".into());
    Ok(cases)
}

/// A time-series panel of `lines`; a line that coincides with an earlier
/// one says so in its legend entry and is drawn dashed on top of it, as are
/// the lines named in `dashed`.
fn lines_panel(
    title: &str,
    y_label: &str,
    lines: Vec<(&str, Vec<(f64, f64)>)>,
    dashed: &[&str],
) -> Chart {
    let pts: Vec<&[(f64, f64)]> = lines.iter().map(|l| l.1.as_slice()).collect();
    let names: Vec<String> = lines.iter().map(|l| l.0.to_string()).collect();
    let span = figs::y_span(&pts);
    let hidden = figs::overlaps(&pts, span);
    // "D1 in flight (= cwnd)", "queue R2 (U2's data) (= queue R1)".
    let short = |i: usize| {
        let n = names[i].split(" (").next().unwrap_or_default();
        n.strip_prefix("D1 ")
            .or_else(|| n.strip_prefix("U2 "))
            .unwrap_or(n)
            .to_string()
    };
    let labels = figs::overlap_names(&names, &pts, span, &short);
    let mut c = Chart::new(title).x_label("time (s)").y_label(y_label);
    for ((label, (name, v)), o) in labels.into_iter().zip(lines).zip(hidden) {
        let s = Series::line(label, v);
        c.push_series(if o.is_some() || dashed.contains(&name) {
            s.dashed()
        } else {
            s
        });
    }
    c
}

/// A `len`-second window ending 5 s before `total` (or at the start for short runs).
fn window(total: f64, len: f64) -> (f64, f64) {
    let b = (total - 5.0).max(len.min(total));
    ((b - len).max(0.0), b)
}

/// Bar chart of run-length histograms as fractions, lengths 1–29 and "30+".
pub fn burst_histogram(title: &str, groups: &[(&str, &Vec<u64>)]) -> BarChart {
    let mut c = BarChart::new(title)
        .x_label("ACKs between two data packets")
        .y_label("fraction of bursts");
    for (name, h) in groups {
        let total: u64 = h.iter().skip(1).sum();
        let mut bars = Vec::new();
        for n in 1..30 {
            let v = h.get(n).copied().unwrap_or(0);
            bars.push((n.to_string(), v as f64 / total.max(1) as f64));
        }
        let tail: u64 = h.iter().skip(30).sum();
        bars.push(("30+".into(), tail as f64 / total.max(1) as f64));
        c = c.group(*name, bars);
    }
    c
}

/// Sensitivity of ACK compression to the symmetry of the setup.
#[derive(Clone, Debug, Serialize)]
pub struct SensRow {
    pub delayed_ack: bool,
    pub upload_endpoint_delay_ms: f64,
    /// The upload starts this much after the download.
    pub upload_start_offset_ms: f64,
    pub median_burst: Option<u64>,
    pub queue_correlation: Option<f64>,
}

fn ack_sensitivity(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Vec<SensRow>> {
    let mut items = Vec::new();
    for delack in [false, true] {
        for us in [1000u64, 1020, 1050, 1100, 1200, 1500, 2000, 3000, 5000] {
            items.push((delack, us, 0u64));
        }
        for off in [10u64, 50, 100] {
            items.push((delack, 1000, off));
        }
    }
    progress.start("ACK sensitivity", items.len() as u64);
    let secs_run = plan.ack_secs;
    let res = par_map(items, opts.jobs, progress, |(delack, us, off)| {
        let mut s = ack_setup(secs_run, delack, Dur::from_micros(us));
        s.trace_interval = Dur::from_millis(10);
        s.uploads = vec![(Dur::from_millis(off), None)];
        let sim = simulate(&s, "sensitivity")?;
        let m = ack_measure(&sim, &s, "", "");
        anyhow::Ok(SensRow {
            delayed_ack: delack,
            upload_endpoint_delay_ms: us as f64 / 1000.0,
            upload_start_offset_ms: off as f64,
            median_burst: m.median_burst,
            queue_correlation: m.queue_correlation,
        })
    });
    progress.finish();
    let rows: Vec<SensRow> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let csv: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.delayed_ack.to_string(),
                format!("{}", r.upload_endpoint_delay_ms),
                format!("{}", r.upload_start_offset_ms),
                r.median_burst.map_or(String::new(), |x| x.to_string()),
                r.queue_correlation.map_or(String::new(), f6),
            ]
        })
        .collect();
    write_csv(
        &dir.join("ack_sensitivity.csv"),
        &[
            "delayed_ack",
            "upload_endpoint_delay_ms",
            "upload_start_offset_ms",
            "median_burst",
            "queue_correlation",
        ],
        &csv,
    )?;
    files.push("ack_sensitivity.csv".into());
    // x: how much farther the upload endpoint is than the download endpoint (µs).
    let pts = |delack: bool, f: fn(&SensRow) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| {
                r.delayed_ack == delack
                    && r.upload_start_offset_ms == 0.0
                    && r.upload_endpoint_delay_ms > 1.0
            })
            .map(|r| ((r.upload_endpoint_delay_ms - 1.0) * 1000.0, f(r)))
            .collect()
    };
    let equal = |delack: bool| {
        rows.iter()
            .find(|r| {
                r.delayed_ack == delack
                    && r.upload_start_offset_ms == 0.0
                    && r.upload_endpoint_delay_ms == 1.0
            })
            .and_then(|r| r.median_burst)
            .map_or("-".to_string(), |m| m.to_string())
    };
    let med = |r: &SensRow| r.median_burst.map_or(f64::NAN, |x| x as f64);
    let cor = |r: &SensRow| r.queue_correlation.unwrap_or(f64::NAN);
    Figure::new(
        format!(
            "ACK compression needs exact symmetry (equal delays: median burst {}, {} with delayed ACKs)",
            equal(false),
            equal(true)
        ),
        2,
    )
    .panel(
        Chart::new("Median ACK burst")
            .x_label("extra delay of the upload endpoint (µs)")
            .y_label("ACKs")
            .log_x(true)
            .series(Series::line_points("no delayed ACKs", pts(false, med)))
            .series(Series::line_points("delayed ACKs", pts(true, med))),
    )
    .panel(
        Chart::new("Correlation of the two queues")
            .x_label("extra delay of the upload endpoint (µs)")
            .y_label("Pearson r")
            .log_x(true)
            .y_range(-1.0, 1.0)
            .series(Series::line_points("no delayed ACKs", pts(false, cor)))
            .series(Series::line_points("delayed ACKs", pts(true, cor))),
    )
    .panel_size(560, 340)
    .write_svg(dir.join("ack_sensitivity.svg"))?;
    files.push("ack_sensitivity.svg".into());
    Ok(rows)
}

// ---------------------------------------------------------------- Fig. 6-9

#[derive(Clone, Debug, Serialize)]
pub struct AsymCase {
    pub case: String,
    pub figure: String,
    pub down_buffer_bytes: u64,
    pub up_buffer_bytes: u64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub r_sim: f64,
    pub r_model: f64,
    /// Fraction of samples (10 ms) with the queue empty.
    pub downlink_queue_empty: f64,
    pub uplink_queue_empty: f64,
    pub median_burst_uplink: Option<u64>,
    pub median_burst_downlink: Option<u64>,
    pub queue_correlation: Option<f64>,
    pub histogram_uplink: Vec<u64>,
}

fn asym_cases(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Vec<AsymCase>> {
    let items = vec![
        (
            "9000 B up / 30 000 B down",
            "Fig. 6-7",
            9_000u64,
            "asym_9000.svg",
        ),
        (
            "30 000 B up / 30 000 B down",
            "Fig. 8-9",
            30_000,
            "asym_30000.svg",
        ),
    ];
    progress.start("Fig. 6-9", items.len() as u64);
    let total = plan.asym_secs;
    let warm = 10.0;
    let res = par_map(items, opts.jobs, progress, |(case, fig, bu, file)| {
        let mut s = Setup::asymmetric(
            Limit::Bytes(30_000),
            Limit::Bytes(bu),
            Dur::ZERO,
            Dur::from_secs(total),
        );
        s.warmup = Dur::from_secs_f64(warm);
        let sim = simulate(&s, case)?;
        let end = total as f64;
        let sum = hopwise_sim::report::Summary::of(&sim, case, 0.0);
        let util = |i: usize| sum.links[i].utilization;
        let (xd, xu) = (
            goodput_between(&sim, 0, warm, end),
            goodput_between(&sim, 1, warm, end),
        );
        let hd = sim.ifaces[DOWN_IFACE].stats.ack_bursts.clone();
        let hu = sim.ifaces[UP_IFACE].stats.ack_bursts.clone();
        let qd: Vec<f64> = queue_series(&sim, DOWN_IFACE, warm, end + 1.0)
            .iter()
            .map(|p| p.1)
            .collect();
        let qu: Vec<f64> = queue_series(&sim, UP_IFACE, warm, end + 1.0)
            .iter()
            .map(|p| p.1)
            .collect();
        let m = AsymCase {
            case: case.into(),
            figure: fig.into(),
            down_buffer_bytes: 30_000,
            up_buffer_bytes: bu,
            download_bps: xd,
            upload_bps: xu,
            downlink_utilization: util(DOWN_IFACE),
            uplink_utilization: util(UP_IFACE),
            r_sim: xd / xu,
            r_model: s.model().ratio(),
            downlink_queue_empty: queue_fraction(&sim, DOWN_IFACE, warm, end + 1.0, |q| q == 0.0),
            uplink_queue_empty: queue_fraction(&sim, UP_IFACE, warm, end + 1.0, |q| q == 0.0),
            median_burst_uplink: hist_median(&hu),
            median_burst_downlink: hist_median(&hd),
            queue_correlation: correlation(&qd, &qu),
            histogram_uplink: hu,
        };
        let (w0, w1) = window(end, 30.0);
        let (d, u) = (sender(&sim, 0), sender(&sim, 1));
        let up_lines = vec![
            ("U2 cwnd", endpoint_series(&sim, u, 0, w0, w1)),
            ("U2 in flight", endpoint_series(&sim, u, 3, w0, w1)),
            ("queue R2 (uplink)", queue_series(&sim, UP_IFACE, w0, w1)),
        ];
        let down_lines = vec![
            ("D1 cwnd", endpoint_series(&sim, d, 0, w0, w1)),
            ("D1 in flight", endpoint_series(&sim, d, 3, w0, w1)),
            (
                "queue R1 (downlink)",
                queue_series(&sim, DOWN_IFACE, w0, w1),
            ),
        ];
        let rows: Vec<Vec<String>> = up_lines
            .iter()
            .chain(&down_lines)
            .flat_map(|(name, v)| {
                figs::long_rows(
                    std::slice::from_ref(&m.case),
                    name,
                    v,
                    &|t| format!("{t:.3}"),
                    &f6,
                )
            })
            .collect();
        let up = lines_panel(
            "Upload (U2): cwnd, data in flight, queue at R2",
            "window, queue (bytes)",
            up_lines,
            &[],
        )
        .hline(bu as f64, "uplink buffer");
        let down = lines_panel(
            "Download (D1): cwnd, data in flight, queue at R1",
            "window, queue (bytes)",
            down_lines,
            &[],
        )
        .hline(30_000.0, "downlink buffer");
        let hist = burst_histogram(
            &format!(
                "ACK bursts at R2 (uplink): median {}",
                m.median_burst_uplink.map_or("-".into(), |x| x.to_string())
            ),
            &[("R2 (uplink)", &m.histogram_uplink)],
        );
        Figure::new(
            format!(
                "{}: 2.4 Mbit/s down, 196 kbit/s up, {}; downlink used {:.0} %",
                fig,
                case,
                100.0 * m.downlink_utilization
            ),
            1,
        )
        .panel(up)
        .panel(down)
        .panel(hist)
        .panel_size(900, 300)
        .write_svg(dir.join(file))?;
        anyhow::Ok((m, file, rows))
    });
    progress.finish();
    let mut out = Vec::new();
    let mut series_rows = Vec::new();
    let mut burst_rows = Vec::new();
    for r in res {
        let (m, file, rows) = r?;
        files.push(file.into());
        series_rows.extend(rows);
        for (n, &c) in m.histogram_uplink.iter().enumerate().skip(1) {
            burst_rows.push(vec![
                m.case.clone(),
                "uplink".into(),
                n.to_string(),
                c.to_string(),
            ]);
        }
        out.push(m);
    }
    write_csv(
        &dir.join("asym_series.csv"),
        &["case", "time_s", "series", "bytes"],
        &series_rows,
    )?;
    write_csv(
        &dir.join("asym_bursts.csv"),
        &["case", "queue", "burst", "count"],
        &burst_rows,
    )?;
    files.push("asym_series.csv".into());
    files.push("asym_bursts.csv".into());
    Ok(out)
}

// ---------------------------------------------------------------- Fig. 10

/// One run of the Fig. 10 / Fig. 11 sweeps: goodputs (bit/s) and mean
/// windows (bytes) of the download and the upload after the warm-up, and
/// the two links' utilisation.
#[derive(Clone, Copy, Debug)]
pub struct PairRun {
    pub xd: f64,
    pub xu: f64,
    pub cwnd_d: f64,
    pub cwnd_u: f64,
    pub util_d: f64,
    pub util_u: f64,
}

/// Warm-up skipped in the long sweeps, seconds.
pub const SWEEP_WARM: f64 = 20.0;

/// Runs a download and an upload (a [`sweep_setup`]) and measures them
/// after [`SWEEP_WARM`].
pub fn run_pair(s: &Setup, name: &str) -> anyhow::Result<PairRun> {
    let sim = simulate(s, name)?;
    let end = secs(s.duration);
    let sum = hopwise_sim::report::Summary::of(&sim, name, 0.0);
    Ok(PairRun {
        xd: goodput_between(&sim, 0, SWEEP_WARM, end),
        xu: goodput_between(&sim, 1, SWEEP_WARM, end),
        cwnd_d: trace_mean(&sim, sender(&sim, 0), 0, SWEEP_WARM, end),
        cwnd_u: trace_mean(&sim, sender(&sim, 1), 0, SWEEP_WARM, end),
        util_d: sum.links[DOWN_IFACE].utilization,
        util_u: sum.links[UP_IFACE].utilization,
    })
}

/// A long asymmetric run for the sweeps: both flows start within the first
/// second (seeded jitter), coarse traces, warm-up of 20 s.
pub fn sweep_setup(down: Limit, up: Limit, tp_ms: u64, secs: u64, seed: u64) -> Setup {
    let mut s = Setup::asymmetric(down, up, Dur::from_millis(tp_ms), Dur::from_secs(secs));
    s.seed = seed;
    s.jitter = Dur::SECOND;
    s.warmup = Dur::from_secs_f64(SWEEP_WARM);
    s.trace_interval = Dur::from_millis(200);
    s
}

#[derive(Clone, Debug, Serialize)]
pub struct Fig10Row {
    pub tp_ms: u64,
    pub down_buffer_bytes: u64,
    pub up_buffer_bytes: u64,
    /// Σ download goodput / Σ upload goodput over the runs.
    pub r_sim: f64,
    pub r_sim_min: f64,
    pub r_sim_max: f64,
    /// Eq. 11 (exact form, ρ' = ρ/2 for delayed ACKs).
    pub r_model: f64,
    /// Eq. 6–10 solved numerically (equal to Eq. 11 unless a limit binds).
    pub r_model_fixed_point: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub cwnd_down_sim: f64,
    pub cwnd_up_sim: f64,
    pub cwnd_down_model: f64,
    pub cwnd_up_model: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub runs: u32,
}

/// Means over the runs of one point.
pub struct Agg {
    pub xd: f64,
    pub xu: f64,
    /// Smallest and largest per-run ratio.
    pub r_min: f64,
    pub r_max: f64,
    pub cwnd_d: f64,
    pub cwnd_u: f64,
    pub util_d: f64,
    pub util_u: f64,
    /// Ratio of the mean goodputs.
    pub r: f64,
}

/// Means over the runs of one point (the ratio is of the means).
pub fn aggregate(runs: &[PairRun]) -> Agg {
    let n = runs.len() as f64;
    let m = |f: fn(&PairRun) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let rs = runs.iter().map(|r| r.xd / r.xu);
    let (xd, xu) = (m(|r| r.xd), m(|r| r.xu));
    Agg {
        xd,
        xu,
        r_min: rs.clone().fold(f64::INFINITY, f64::min),
        r_max: rs.fold(f64::NEG_INFINITY, f64::max),
        cwnd_d: m(|r| r.cwnd_d),
        cwnd_u: m(|r| r.cwnd_u),
        util_d: m(|r| r.util_d),
        util_u: m(|r| r.util_u),
        r: xd / xu,
    }
}

fn fig10(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Vec<Fig10Row>> {
    let mut items = Vec::new();
    for &tp in &plan.fig10_tp_ms {
        for &bd in &plan.fig10_down_buffers {
            for &bu in &plan.fig10_up_buffers {
                for seed in 1..=plan.fig10_seeds as u64 {
                    items.push((tp, bd, bu, seed));
                }
            }
        }
    }
    progress.start("Fig. 10", items.len() as u64);
    let secs_run = plan.fig10_secs;
    let res = par_map(items.clone(), opts.jobs, progress, |(tp, bd, bu, seed)| {
        let s = sweep_setup(Limit::Bytes(bd), Limit::Bytes(bu), tp, secs_run, seed);
        run_pair(&s, "fig10")
    });
    progress.finish();
    let res: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let mut rows = Vec::new();
    for (chunk, key) in res
        .chunks(plan.fig10_seeds as usize)
        .zip(items.chunks(plan.fig10_seeds as usize))
    {
        let (tp, bd, bu, _) = key[0];
        let model = sweep_setup(Limit::Bytes(bd), Limit::Bytes(bu), tp, secs_run, 1).model();
        let w = model.solve();
        let a = aggregate(chunk);
        rows.push(Fig10Row {
            tp_ms: tp,
            down_buffer_bytes: bd,
            up_buffer_bytes: bu,
            r_sim: a.r,
            r_sim_min: a.r_min,
            r_sim_max: a.r_max,
            r_model: model.ratio(),
            r_model_fixed_point: w.ratio,
            download_bps: a.xd,
            upload_bps: a.xu,
            cwnd_down_sim: a.cwnd_d,
            cwnd_up_sim: a.cwnd_u,
            cwnd_down_model: w.cwnd_down,
            cwnd_up_model: w.cwnd_up,
            downlink_utilization: a.util_d,
            uplink_utilization: a.util_u,
            runs: chunk.len() as u32,
        });
    }
    let csv: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.tp_ms.to_string(),
                r.down_buffer_bytes.to_string(),
                r.up_buffer_bytes.to_string(),
                f6(r.r_sim),
                f6(r.r_sim_min),
                f6(r.r_sim_max),
                f6(r.r_model),
                f6(r.r_model_fixed_point),
                f6(r.download_bps),
                f6(r.upload_bps),
                f6(r.cwnd_down_sim),
                f6(r.cwnd_up_sim),
                f6(r.cwnd_down_model),
                f6(r.cwnd_up_model),
                f6(r.downlink_utilization),
                f6(r.uplink_utilization),
                r.runs.to_string(),
            ]
        })
        .collect();
    write_csv(
        &dir.join("fig10.csv"),
        &[
            "tp_ms",
            "down_buffer_bytes",
            "up_buffer_bytes",
            "r_sim",
            "r_sim_min",
            "r_sim_max",
            "r_model",
            "r_model_fixed_point",
            "download_bps",
            "upload_bps",
            "cwnd_down_sim",
            "cwnd_up_sim",
            "cwnd_down_model",
            "cwnd_up_model",
            "downlink_utilization",
            "uplink_utilization",
            "runs",
        ],
        &csv,
    )?;
    files.push("fig10.csv".into());
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;
    let runs = rows.iter().map(|r| r.runs).max().unwrap_or(1);
    let mut fig = Figure::new(
        if runs > 1 {
            "Fig. 10: r = Xd/Xu, simulation (points, min-max over runs) and Eq. 11 (dashed)"
        } else {
            "Fig. 10: r = Xd/Xu, simulation (points, one run each) and Eq. 11 (dashed)"
        },
        1,
    );
    // Eq. 11 on a fine grid, per (Tp, Bd).
    let mut curves = Vec::new();
    for &tp in &plan.fig10_tp_ms {
        for &bd in &plan.fig10_down_buffers {
            curves.push((tp, bd, model_curve(tp, bd, &plan.fig10_up_buffers)));
        }
    }
    let model_rows: Vec<Vec<String>> = curves
        .iter()
        .flat_map(|(tp, bd, c)| {
            c.iter().map(move |&(bu, r)| {
                vec![tp.to_string(), bd.to_string(), format!("{bu:.1}"), f6(r)]
            })
        })
        .collect();
    write_csv(
        &dir.join("fig10_model.csv"),
        &["tp_ms", "down_buffer_bytes", "up_buffer_bytes", "r_model"],
        &model_rows,
    )?;
    files.push("fig10_model.csv".into());
    // One y range for every panel, so that they compare at a glance.
    let y_range = figs::decade_range(
        rows.iter()
            .flat_map(|r| [r.r_sim, r.r_sim_min, r.r_sim_max])
            .chain(curves.iter().flat_map(|c| c.2.iter().map(|p| p.1)))
            .chain([k]),
    );
    for &tp in &plan.fig10_tp_ms {
        let mut c = Chart::new(format!("Tp = {tp} ms"))
            .x_label("uplink buffer (bytes)")
            .y_label("r = Xd / Xu")
            .log_y(true)
            .hline(k, "k = Cd/Cu");
        if let Some((lo, hi)) = y_range {
            c = c.y_range(lo, hi);
        }
        for (i, &bd) in plan.fig10_down_buffers.iter().enumerate() {
            let pts: Vec<&Fig10Row> = rows
                .iter()
                .filter(|r| r.tp_ms == tp && r.down_buffer_bytes == bd)
                .collect();
            let color = palette_color(i);
            c = c
                .series(
                    Series::points(
                        format!("sim, Bd = {bd} B"),
                        pts.iter()
                            .map(|r| (r.up_buffer_bytes as f64, r.r_sim))
                            .collect(),
                    )
                    .with_error_bars(pts.iter().map(|r| (r.r_sim_min, r.r_sim_max)).collect())
                    .color(color),
                )
                .series(
                    Series::line(
                        format!("model, Bd = {bd} B"),
                        curves
                            .iter()
                            .find(|c| c.0 == tp && c.1 == bd)
                            .map(|c| c.2.clone())
                            .unwrap_or_default(),
                    )
                    .dashed()
                    .color(color),
                );
        }
        fig = fig.panel(c);
    }
    fig.panel_size(760, 420).write_svg(dir.join("fig10.svg"))?;
    files.push("fig10.svg".into());
    Ok(rows)
}

/// Eq. 11 on a fine grid of uplink buffers spanning `ups`.
fn model_curve(tp: u64, bd: u64, ups: &[u64]) -> Vec<(f64, f64)> {
    let lo = ups.iter().copied().min().unwrap_or(1_000) as f64;
    let hi = ups.iter().copied().max().unwrap_or(60_000) as f64;
    (0..=100)
        .map(|i| {
            let bu = lo + (hi - lo) * i as f64 / 100.0;
            let mut p = sweep_setup(Limit::Bytes(bd), Limit::Bytes(1), tp, 1, 1).model();
            p.up_buffer = bu;
            (bu, p.ratio())
        })
        .collect()
}

// ---------------------------------------------------------------- Fig. 11

/// TCP buffers in Fig. 11 (the paper: 256 KB).
pub const FIG11_TCP_BUFFER: u64 = 256 << 10;
/// Fig. 11's downlink buffer, packets.
pub const FIG11_DOWN_PACKETS: u64 = 50;

#[derive(Clone, Debug, Serialize)]
pub struct Fig11Row {
    pub tp_ms: u64,
    pub up_buffer_packets: u64,
    pub delayed_ack: bool,
    pub r_sim: f64,
    pub r_sim_min: f64,
    pub r_sim_max: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
    pub runs: u32,
}

pub fn fig11_setup(up_packets: u64, delayed_ack: bool, tp_ms: u64, secs: u64, seed: u64) -> Setup {
    let mut s = sweep_setup(
        Limit::Packets(FIG11_DOWN_PACKETS),
        Limit::Packets(up_packets),
        tp_ms,
        secs,
        seed,
    );
    s.delayed_ack = delayed_ack;
    s.tcp_buffer = FIG11_TCP_BUFFER;
    s
}

fn fig11(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Vec<Fig11Row>> {
    let mut items = Vec::new();
    for &tp in &plan.fig11_tp_ms {
        for delack in [true, false] {
            for &bu in &plan.fig11_up_packets {
                for seed in 1..=plan.fig11_seeds as u64 {
                    items.push((tp, delack, bu, seed));
                }
            }
        }
    }
    progress.start("Fig. 11", items.len() as u64);
    let secs_run = plan.fig11_secs;
    let res = par_map(
        items.clone(),
        opts.jobs,
        progress,
        |(tp, delack, bu, seed)| run_pair(&fig11_setup(bu, delack, tp, secs_run, seed), "fig11"),
    );
    progress.finish();
    let res: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let n = plan.fig11_seeds as usize;
    let rows: Vec<Fig11Row> = res
        .chunks(n)
        .zip(items.chunks(n))
        .map(|(chunk, key)| {
            let (tp, delack, bu, _) = key[0];
            let a = aggregate(chunk);
            Fig11Row {
                tp_ms: tp,
                up_buffer_packets: bu,
                delayed_ack: delack,
                r_sim: a.r,
                r_sim_min: a.r_min,
                r_sim_max: a.r_max,
                download_bps: a.xd,
                upload_bps: a.xu,
                downlink_utilization: a.util_d,
                uplink_utilization: a.util_u,
                runs: chunk.len() as u32,
            }
        })
        .collect();
    let csv: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.tp_ms.to_string(),
                r.up_buffer_packets.to_string(),
                r.delayed_ack.to_string(),
                f6(r.r_sim),
                f6(r.r_sim_min),
                f6(r.r_sim_max),
                f6(r.download_bps),
                f6(r.upload_bps),
                f6(r.downlink_utilization),
                f6(r.uplink_utilization),
                r.runs.to_string(),
            ]
        })
        .collect();
    write_csv(
        &dir.join("fig11.csv"),
        &[
            "tp_ms",
            "up_buffer_packets",
            "delayed_ack",
            "r_sim",
            "r_sim_min",
            "r_sim_max",
            "download_bps",
            "upload_bps",
            "downlink_utilization",
            "uplink_utilization",
            "runs",
        ],
        &csv,
    )?;
    files.push("fig11.csv".into());
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;
    let mut fig = Figure::new(
        "Fig. 11: downlink buffer 50 packets, uplink buffer in packets, TCP buffers 256 KiB",
        2,
    );
    let y_range = figs::decade_range(
        rows.iter()
            .flat_map(|r| [r.r_sim, r.r_sim_min, r.r_sim_max])
            .chain([k]),
    );
    for &tp in &plan.fig11_tp_ms {
        let mut c = Chart::new(format!("Tp = {tp} ms"))
            .x_label("uplink buffer (packets)")
            .y_label("r = Xd / Xu")
            .log_y(true)
            .hline(k, "k");
        if let Some((lo, hi)) = y_range {
            c = c.y_range(lo, hi);
        }
        for (i, delack) in [true, false].into_iter().enumerate() {
            let pts: Vec<&Fig11Row> = rows
                .iter()
                .filter(|r| r.tp_ms == tp && r.delayed_ack == delack)
                .collect();
            c = c.series(
                Series::line_points(
                    if delack {
                        "delayed ACKs"
                    } else {
                        "no delayed ACKs"
                    },
                    pts.iter()
                        .map(|r| (r.up_buffer_packets as f64, r.r_sim))
                        .collect(),
                )
                .with_error_bars(pts.iter().map(|r| (r.r_sim_min, r.r_sim_max)).collect())
                .color(palette_color(i)),
            );
        }
        fig = fig.panel(c);
    }
    fig.panel_size(580, 420).write_svg(dir.join("fig11.svg"))?;
    files.push("fig11.svg".into());
    Ok(rows)
}

// ---------------------------------------------------------------- sizing

/// The sizing helper in use: the uplink buffer that Eq. 11 says gives r = k
/// (both links full), simulated.
#[derive(Clone, Debug, Serialize)]
pub struct Sizing {
    pub tp_ms: u64,
    pub down_buffer_bytes: u64,
    pub target_r: f64,
    pub up_buffer_bytes: u64,
    pub r_sim: f64,
    pub download_bps: f64,
    pub upload_bps: f64,
    pub downlink_utilization: f64,
    pub uplink_utilization: f64,
}

fn sizing_demo(plan: &Plan, opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Sizing> {
    let (tp, bd) = (100, 60_000);
    let base = sweep_setup(Limit::Bytes(bd), Limit::Bytes(1), tp, plan.fig10_secs, 1);
    let p = base.model();
    let target = p.capacity_ratio();
    let bu = p
        .up_buffer_for_ratio(target)
        .map_err(|e| anyhow::anyhow!("sizing: {e}"))?
        .round() as u64;
    let seeds: Vec<u64> = (1..=plan.fig10_seeds as u64).collect();
    progress.start("sizing", seeds.len() as u64);
    let res = par_map(seeds, opts.jobs, progress, |seed| {
        run_pair(
            &sweep_setup(
                Limit::Bytes(bd),
                Limit::Bytes(bu),
                tp,
                plan.fig10_secs,
                seed,
            ),
            "sizing",
        )
    });
    progress.finish();
    let runs: Vec<PairRun> = res.into_iter().collect::<anyhow::Result<_>>()?;
    let a = aggregate(&runs);
    Ok(Sizing {
        tp_ms: tp,
        down_buffer_bytes: bd,
        target_r: target,
        up_buffer_bytes: bu,
        r_sim: a.r,
        download_bps: a.xd,
        upload_bps: a.xu,
        downlink_utilization: a.util_d,
        uplink_utilization: a.util_u,
    })
}

// ---------------------------------------------------------------- claims

fn opt(x: Option<u64>) -> String {
    x.map_or("-".into(), |v| v.to_string())
}

fn claims(
    f1: &Fig1,
    ack: &[AckCase],
    sens: &[SensRow],
    asym: &[AsymCase],
    f10: &[Fig10Row],
    f11: &[Fig11Row],
    sizing: Option<&Sizing>,
) -> Vec<Claim> {
    let mut c = Vec::new();
    let k = DOWN_RATE.bps() as f64 / UP_RATE.bps() as f64;

    // Fig. 1.
    let frac = f1.download_bps_no_upload / DOWN_RATE.bps() as f64;
    c.push(crate::legacy_claim(
        "Fig. 1",
        "Without uploads the download gets nearly all of the 2.4 Mbit/s (>= 90 %)",
        format!(
            "{} = {:.1} % of 2.4 Mbit/s ({}-{} s, {})",
            kbit(f1.download_bps_no_upload),
            100.0 * frac,
            FIG1_NONE.0,
            FIG1_NONE.1,
            if f1.seeds == 1 {
                "one run".to_string()
            } else {
                format!("mean of {} runs", f1.seeds)
            }
        ),
        frac >= 0.9,
    ));
    let r1 = f1.download_bps_one_upload / f1.upload_bps_one_upload;
    let r2 = f1.download_bps_two_uploads / f1.upload_bps_two_uploads;
    c.push(crate::legacy_claim(
        "Fig. 1",
        "With an upload active the download collapses to about the upload's throughput (download <= 3x upload)",
        format!(
            "one upload: download {} vs upload {} (ratio {:.2}); two uploads: download {} vs uploads {} (ratio {:.2})",
            kbit(f1.download_bps_one_upload),
            kbit(f1.upload_bps_one_upload),
            r1,
            kbit(f1.download_bps_two_uploads),
            kbit(f1.upload_bps_two_uploads),
            r2
        ),
        r1 <= 3.0 && r2 <= 3.0,
    ));

    // Fig. 3-5.
    let case = |i: usize| ack.get(i);
    if let Some(a) = case(0) {
        c.push(crate::legacy_claim(
            "Fig. 3",
            "Symmetric link, equal delays, no delayed ACKs: ACK compression, long ACK bursts (median >= 5)",
            format!(
                "median burst {} (downlink {}, uplink {})",
                opt(a.median_burst),
                opt(a.median_burst_downlink),
                opt(a.median_burst_uplink)
            ),
            a.median_burst.is_some_and(|m| m >= 5),
        ));
        c.push(crate::legacy_claim(
            "Fig. 3.2",
            "Equal delays: the two queues oscillate in phase (positive correlation)",
            format!(
                "correlation {:.2} (samples every {} ms after {ACK_WARM} s; flows start together)",
                a.queue_correlation.unwrap_or(f64::NAN),
                a.trace_ms
            ),
            a.queue_correlation.is_some_and(|r| r > 0.0),
        ));
    }
    if let Some(b) = case(1) {
        c.push(crate::legacy_claim(
            "Fig. 4",
            "Turning on delayed ACKs makes ACK compression mostly disappear (median burst <= 2)",
            format!(
                "median burst {} (downlink {}, uplink {}); correlation {:.2}",
                opt(b.median_burst),
                opt(b.median_burst_downlink),
                opt(b.median_burst_uplink),
                b.queue_correlation.unwrap_or(f64::NAN)
            ),
            b.median_burst.is_some_and(|m| m <= 2),
        ));
    }
    if let Some(d) = case(2) {
        c.push(crate::legacy_claim(
            "Fig. 5",
            "Unequal delays (1 ms / 5 ms): no ACK compression (median burst <= 2)",
            format!(
                "median burst {} (downlink {}, uplink {})",
                opt(d.median_burst),
                opt(d.median_burst_downlink),
                opt(d.median_burst_uplink)
            ),
            d.median_burst.is_some_and(|m| m <= 2),
        ));
        c.push(crate::legacy_claim(
            "Fig. 5.2",
            "Unequal delays: data pendulum, the queues alternate (anti-correlated)",
            format!(
                "correlation {:.2}; mean queues R1 {:.0} B, R2 {:.0} B",
                d.queue_correlation.unwrap_or(f64::NAN),
                d.mean_queue_down_bytes,
                d.mean_queue_up_bytes
            ),
            d.queue_correlation.is_some_and(|r| r < 0.0),
        ));
    }
    if !sens.is_empty() {
        let broken: Vec<String> = sens
            .iter()
            .filter(|r| r.upload_start_offset_ms == 0.0 && r.upload_endpoint_delay_ms > 1.0)
            .filter(|r| r.median_burst.is_some_and(|m| m <= 2))
            .map(|r| {
                format!(
                    "{} ms{}",
                    r.upload_endpoint_delay_ms,
                    if r.delayed_ack { " (delack)" } else { "" }
                )
            })
            .collect();
        let first = |delack: bool| {
            sens.iter()
                .filter(|r| {
                    r.delayed_ack == delack
                        && r.upload_start_offset_ms == 0.0
                        && r.median_burst.is_some_and(|m| m <= 2)
                })
                .map(|r| r.upload_endpoint_delay_ms)
                .fold(f64::INFINITY, f64::min)
        };
        let offs: Vec<String> = sens
            .iter()
            .filter(|r| r.upload_start_offset_ms > 0.0)
            .map(|r| {
                format!(
                    "{} ms{}: median {}, corr {:.2}",
                    r.upload_start_offset_ms,
                    if r.delayed_ack { " delack" } else { "" },
                    opt(r.median_burst),
                    r.queue_correlation.unwrap_or(f64::NAN)
                )
            })
            .collect();
        c.push(Claim::info(
            "§2.1",
            "ACK compression only arises in a perfectly symmetrical setup",
            format!(
                "median burst <= 2 from an upload endpoint delay of {} ms (no delayed ACKs) / {} ms (delayed ACKs) instead of 1 ms; {} of {} asymmetric delays break it. Equal delays with the upload starting later: {}",
                first(false),
                first(true),
                broken.len(),
                sens.iter().filter(|r| r.upload_start_offset_ms == 0.0 && r.upload_endpoint_delay_ms > 1.0).count(),
                offs.join("; ")
            ),
        ));
    }

    // Fig. 6-9.
    for a in asym {
        c.push(Claim::info(
            a.figure.clone(),
            if a.up_buffer_bytes < 30_000 {
                "9000 B up / 30 000 B down: the pendulum persists, downlink used at roughly 50 %".to_string()
            } else {
                "Equal 30 000 B buffers: the uplink buffer never empties, the downlink one often does; downlink badly underused".to_string()
            },
            format!(
                "downlink used {:.0} %, uplink {:.0} %; queue empty {:.0} % of the time at R1, {:.0} % at R2; r_sim {:.2} (Eq. 11: {:.2}); median ACK burst at R2 {}",
                100.0 * a.downlink_utilization,
                100.0 * a.uplink_utilization,
                100.0 * a.downlink_queue_empty,
                100.0 * a.uplink_queue_empty,
                a.r_sim,
                a.r_model,
                opt(a.median_burst_uplink)
            ),
        ));
    }

    // Fig. 10.
    let dev = |r: &Fig10Row| r.r_sim / r.r_model - 1.0;
    let sel: Vec<&Fig10Row> = f10
        .iter()
        .filter(|r| r.tp_ms == 100 && r.up_buffer_bytes >= 15_000)
        .collect();
    if !sel.is_empty() {
        let worst = sel
            .iter()
            .max_by(|a, b| dev(a).abs().total_cmp(&dev(b).abs()))
            .expect("non-empty");
        let within = sel.iter().filter(|r| dev(r).abs() <= 0.4).count();
        c.push(crate::legacy_claim(
            "Fig. 10",
            "Tp = 100 ms, uplink buffers >= 15 000 B: simulation follows Eq. 11 (r = Xd/Xu, download over upload goodput; r_sim simulated, within +-40 % of r_model from Eq. 11)",
            format!(
                "{within} of {} points within +-40 %; worst: downlink buffer {} B, uplink {} B, r_sim {:.2} vs r_model {:.2} ({:+.0} %)",
                sel.len(),
                worst.down_buffer_bytes,
                worst.up_buffer_bytes,
                worst.r_sim,
                worst.r_model,
                100.0 * dev(worst)
            ),
            within == sel.len(),
        ));
    }
    let others: Vec<&Fig10Row> = f10
        .iter()
        .filter(|r| r.tp_ms != 100 && r.up_buffer_bytes >= 15_000)
        .collect();
    if !others.is_empty() {
        let within = others.iter().filter(|r| dev(r).abs() <= 0.4).count();
        let mean_dev = others.iter().map(|r| dev(r)).sum::<f64>() / others.len() as f64;
        c.push(Claim::info(
            "Fig. 10",
            "The fit is best at Tp = 100 ms (the paper: 'especially for 100 ms delay')",
            format!(
                "Tp = 20 ms, Bu >= 15 000 B: {within} of {} points within +-40 %, mean deviation {:+.0} % (simulation above the model)",
                others.len(),
                100.0 * mean_dev
            ),
        ));
    }

    // Fig. 11.
    if !f11.is_empty() {
        let small: Vec<&Fig11Row> = f11.iter().filter(|r| r.up_buffer_packets <= 10).collect();
        let starved = small.iter().filter(|r| r.r_sim > k).count();
        let desc: Vec<String> = small
            .iter()
            .map(|r| {
                format!(
                    "Tp {} ms, {} pkts, {}: r {:.1}, upload at {:.0} % of its link",
                    r.tp_ms,
                    r.up_buffer_packets,
                    if r.delayed_ack {
                        "delayed ACKs"
                    } else {
                        "no delayed ACKs"
                    },
                    r.r_sim,
                    100.0 * r.upload_bps / UP_RATE.bps() as f64
                )
            })
            .collect();
        c.push(crate::legacy_claim(
            "Fig. 11",
            "Uplink buffers of <= 10 packets: the upload starves (r above k = Cd/Cu: the upload gets less than its capacity share, the download is barely hurt)",
            format!("k = {k:.1}; {starved} of {} points above k: {}", small.len(), desc.join("; ")),
            !small.is_empty() && starved == small.len(),
        ));
        let largest = f11.iter().map(|r| r.up_buffer_packets).max().unwrap_or(0);
        let big: Vec<&Fig11Row> = f11
            .iter()
            .filter(|r| r.up_buffer_packets == largest)
            .collect();
        let collapsed = big
            .iter()
            .filter(|r| r.r_sim < k && (!r.delayed_ack || r.downlink_utilization <= 0.5))
            .count();
        let desc: Vec<String> = big
            .iter()
            .map(|r| {
                format!(
                    "Tp {} ms, {}: r {:.1}, downlink used {:.0} %",
                    r.tp_ms,
                    if r.delayed_ack {
                        "delayed ACKs"
                    } else {
                        "no delayed ACKs"
                    },
                    r.r_sim,
                    100.0 * r.downlink_utilization
                )
            })
            .collect();
        c.push(crate::legacy_claim(
            "Fig. 11",
            format!(
                "Large uplink buffers ({largest} packets) bring the download collapse back: r < k with and without delayed ACKs, and with them the downlink at most half used"
            ),
            desc.join("; "),
            largest >= 40 && collapsed == big.len(),
        ));
    }

    if let Some(s) = sizing {
        c.push(Claim::info(
            "Eq. 11 inverse",
            "Sizing buffers with the reciprocal relation avoids the collapse",
            format!(
                "Tp {} ms, Bd {} B, target r = k = {:.1}: helper proposes Bu = {} B; simulated r {:.1}, downlink used {:.0} %, uplink {:.0} %",
                s.tp_ms,
                s.down_buffer_bytes,
                s.target_r,
                s.up_buffer_bytes,
                s.r_sim,
                100.0 * s.downlink_utilization,
                100.0 * s.uplink_utilization
            ),
        ));
    }
    c
}
