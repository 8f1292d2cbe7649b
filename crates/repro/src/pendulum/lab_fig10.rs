//! Seed 004's Fig. 10 on kernel TCP: the throughput ratio r = X_d / X_u of
//! a download and an upload that share the 2.4 Mbit/s / 196 kbit/s link,
//! with the bottleneck's propagation delay `T_p` given by the
//! [delay line](hopwise_lab::delay), beside Eq. 11 and the simulator.
//!
//! The paper puts `T_p` between its two routers, so that what leaves one
//! queue reaches the other `T_p` plus an endpoint's round trip later. The
//! lab has one router holding both queues, so each host's hop to it gets
//! half of `T_p` plus the paper's endpoint delay: from the downlink queue
//! to the uplink queue takes `T_p` + 2 ms, as in the paper. D1 and U1 are
//! one namespace, so the way back takes `T_p` + 6 ms for both flows (the
//! paper: + 2 ms for the download, + 10 ms for the upload), and both get
//! the mean of the simulator's two base round trips, the round trip the
//! model uses.
//!
//! Each point runs both flows for `--secs` of real time and measures them
//! after the reproduction's 20 s warm-up ([`simp::SWEEP_WARM`]); the
//! simulator runs the reproduction's `sweep_setup` for as long, in three TCP
//! settings ([`SIM_SETTINGS`]: its 1 s minimum RTO, Linux's 200 ms with
//! Linux's RTT estimator, and that with PRR), with `--sim-seeds` start
//! jitters each.

use super::lab_fig1::{Timeline, DOWN_RATE_BPS, UP_RATE_BPS};
use crate::pendulum as simp;
use anyhow::{bail, Result};
use hopwise_experiment::{stats, Claim, Ctx, Outputs, Progress, Reproduction};
use hopwise_lab::delay::{LaneRow, LinkStats};
use hopwise_lab::kstats::kernel_release;
use hopwise_lab::tc;
use hopwise_lab::topology::{
    self, AccessLab, AccessSpec, Buffer, Names, SideDelays, DOWN_DEV, LEAF, UP_DEV,
};
use hopwise_lab::traffic::{check_cc_and_secs, goodput_bps, per_second};
use hopwise_plot::{Chart, Figure, Series};
use hopwise_proto::tcp::RttEstimatorKind;
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;
use std::collections::BTreeMap;

/// The reproduction's Fig. 10 criterion: r within this fraction of Eq. 11
/// at T_p = [`JUDGED_TP_MS`] for uplink buffers of at least [`JUDGED_FROM`]
/// bytes (at 20 ms the paper itself reports a worse fit).
pub const AGREE: f64 = 0.4;
pub const JUDGED_FROM: u64 = 15_000;
pub const JUDGED_TP_MS: u64 = 100;
/// Runs shorter than this give no verdict: at T_p = 100 ms one swing of
/// the pendulum takes tens of seconds, and the reproduction's quick
/// variant runs 300 s per point.
pub const VERDICT_SECS: u64 = 300;
/// The download starts first, the upload half a second later.
const STARTS: (f64, f64) = (0.5, 1.0);

/// The simulator's settings beside the kernel: the reproduction's (1 s
/// minimum RTO), Linux's RTO (200 ms, Linux's estimator), and that with
/// Linux's PRR (RFC 6937) in recovery.
const SIM_SETTINGS: [(&str, Dur, RttEstimatorKind, bool); 3] = [
    (
        "simulator, min RTO 1 s",
        simp::MIN_RTO,
        RttEstimatorKind::Rfc6298,
        false,
    ),
    (
        "simulator, min RTO 200 ms, Linux estimator",
        Dur::from_millis(200),
        RttEstimatorKind::Linux,
        false,
    ),
    (
        "simulator, min RTO 200 ms, Linux estimator, PRR",
        Dur::from_millis(200),
        RttEstimatorKind::Linux,
        true,
    ),
];

/// What to run: `hopwise lab pendulum-fig10`'s flags.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub cc: String,
    /// One-way propagation delay of the bottleneck (`T_p`), ms.
    pub tp_ms: u64,
    /// The downlink buffer, bytes.
    pub down_buffer: u64,
    /// The uplink buffers, bytes: one point each.
    pub up_buffers: Vec<u64>,
    /// Real time per point.
    pub secs: u64,
    /// Simulator runs per point and setting (0: no simulator).
    pub sim_seeds: u32,
}

impl Plan {
    /// T_p = 100 ms and B_d = 120 kB, the row of the reproduction's one
    /// point outside ±40 % (B_u = 45 kB); B_u = 15, 30, 45, 60 kB, 300 s
    /// each, 5 simulator seeds. `quick`: B_u = 45 kB only, for 60 s, 2 seeds
    /// (no verdict).
    pub fn new(quick: bool) -> Plan {
        Plan {
            cc: "reno".into(),
            tp_ms: 100,
            down_buffer: 120_000,
            up_buffers: if quick {
                vec![45_000]
            } else {
                vec![15_000, 30_000, 45_000, 60_000]
            },
            secs: if quick { 60 } else { VERDICT_SECS },
            sim_seeds: if quick { 2 } else { 5 },
        }
    }

    /// Fails, naming the flag, on values the experiment cannot run.
    pub fn check(&self) -> Result<()> {
        check_cc_and_secs(&self.cc, self.secs, simp::SWEEP_WARM)?;
        if self.secs > 3600 {
            bail!("--secs {}: at most 3600 s per point", self.secs);
        }
        if self.tp_ms > 1000 {
            bail!("--tp {} ms: at most 1000 ms", self.tp_ms);
        }
        if self.up_buffers.is_empty() || self.up_buffers.len() > 12 {
            bail!("--up-buffers: 1 to 12 buffers");
        }
        for (flag, b) in std::iter::once(("--down-buffer", self.down_buffer))
            .chain(self.up_buffers.iter().map(|&b| ("--up-buffers", b)))
        {
            if !(3_000..=10_000_000).contains(&b) {
                bail!("{flag} {b} B: 3000 B (two frames) to 10 MB");
            }
        }
        if self.sim_seeds > 100 {
            bail!("--sim-seeds {}: at most 100", self.sim_seeds);
        }
        Ok(())
    }

    /// The reproduction's setup for one point (its delays, buffers and TCP).
    fn setup(&self, up_buffer: u64, seed: u64) -> simp::Setup {
        simp::sweep_setup(
            Limit::Bytes(self.down_buffer),
            Limit::Bytes(up_buffer),
            self.tp_ms,
            self.secs,
            seed,
        )
    }

    /// Half of T_p on each side, plus the endpoints' delays (the mean of
    /// D1's and U1's on the INET side).
    pub fn side_delays(&self) -> SideDelays {
        let s = self.setup(self.down_buffer, 1);
        let ms = |d: Dur| d.as_secs_f64() * 1e3;
        SideDelays {
            inet_ms: ms(s.tp) / 2.0 + (ms(s.d_delay) + ms(s.u_delay)) / 2.0,
            home_ms: ms(s.tp) / 2.0 + ms(s.home_delay),
        }
    }
}

/// One source's measurement at one point.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    pub source: String,
    pub up_buffer_bytes: u64,
    pub download_bps: f64,
    pub upload_bps: f64,
    /// Ratio of the mean goodputs.
    pub r: f64,
    /// Smallest and largest per-run ratio (the simulator's seeds).
    pub r_min: f64,
    pub r_max: f64,
    pub runs: u32,
}

/// The kernel's queues at one point: occupancy after the warm-up, drops
/// over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct KernelQueues {
    pub up_buffer_bytes: u64,
    pub downlink_mean_bytes: f64,
    pub downlink_empty_share: f64,
    pub downlink_drops: u64,
    pub uplink_mean_bytes: f64,
    pub uplink_empty_share: f64,
    pub uplink_drops: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub tp_ms: u64,
    pub down_buffer_bytes: u64,
    pub up_buffer_bytes: u64,
    /// Eq. 11 (exact form, as the reproduction).
    pub r_model: f64,
    pub kernel: Measured,
    pub simulator: Vec<Measured>,
    pub queues: KernelQueues,
    /// The kernel's TCP counters ([`hopwise_lab::kstats::KEYS`]) in INET (the
    /// download's sender) and in HOME (the upload's sender).
    pub tcp_inet: BTreeMap<String, u64>,
    pub tcp_home: BTreeMap<String, u64>,
    /// The delay line's two links (INET side, HOME side).
    pub links: Vec<LinkStats>,
}

/// What one point's kernel run gives.
struct KernelRun {
    measured: Measured,
    queues: KernelQueues,
    tcp_inet: BTreeMap<String, u64>,
    tcp_home: BTreeMap<String, u64>,
    links: Vec<LinkStats>,
    series: PointSeries,
}

/// The kernel run's time series at one point.
#[derive(Clone, Debug, Default)]
pub struct PointSeries {
    /// Per-second goodput of the download and the upload, bit/s.
    pub goodput: [Vec<f64>; 2],
    /// (time, downlink, uplink) bytes every 100 ms.
    pub queues: Vec<(f64, u64, u64)>,
}

/// What the points measured so far (summary.json holds every field but
/// `series`).
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// The running kernel's release.
    pub kernel: String,
    pub warmup_s: f64,
    pub side_delays_ms: SideDelays,
    /// Simulator runs per point and setting that ran: 0 when `--cc`
    /// skipped the simulator.
    pub sim_seeds: u32,
    pub points: Vec<Point>,
    /// Per point, the kernel run's time series.
    #[serde(skip)]
    pub series: Vec<PointSeries>,
}

/// Mean occupancy and share of empty samples of one queue (`pick`) in
/// `[lo, hi)`.
fn occupancy(
    samples: &[(f64, u64, u64)],
    (lo, hi): (f64, f64),
    pick: fn(&(f64, u64, u64)) -> u64,
) -> (f64, f64) {
    let v: Vec<f64> = samples
        .iter()
        .filter(|s| s.0 >= lo && s.0 < hi)
        .map(|s| pick(s) as f64)
        .collect();
    let empty: Vec<f64> = v.iter().map(|&b| f64::from(b == 0.0)).collect();
    (stats::mean(&v), stats::mean(&empty))
}

/// Runs one point on kernel TCP: a download from [`STARTS`]`.0` and an
/// upload from `.1` to the end, on the lab with delays, through
/// [`super::lab_fig1`]'s kernel run.
fn run_kernel(plan: &Plan, up_buffer: u64, progress: &dyn Progress) -> Result<KernelRun> {
    let spec = AccessSpec {
        down_rate_bps: DOWN_RATE_BPS,
        up_rate_bps: UP_RATE_BPS,
        down_buffer: Buffer::Bytes(plan.down_buffer),
        up_buffer: Buffer::Bytes(up_buffer),
        cc: plan.cc.clone(),
        delayed_acks: true,
        delay: Some(plan.side_delays()),
    };
    let end = plan.secs as f64;
    let warm = simp::SWEEP_WARM;
    let tl = Timeline {
        download: (STARTS.0, end),
        uploads: vec![(STARTS.1, end)],
        end_s: end,
        windows: [(warm, end); 3],
    };
    let mut lab = AccessLab::build(&Names::new_instance(), &spec)?;
    let (bins, samples, stats) = super::lab_fig1::run_kernel(&mut lab, &tl, progress)?;
    let tcp_inet = hopwise_lab::kstats::read(&lab.inet)?;
    let tcp_home = hopwise_lab::kstats::read(&lab.home)?;
    let links = lab.stop_line()?;
    drop(lab);
    let (xd, xu) = (
        goodput_bps(&bins[0], warm, end),
        goodput_bps(&bins[1], warm, end),
    );
    let (dm, de) = occupancy(&samples, (warm, end), |s| s.1);
    let (um, ue) = occupancy(&samples, (warm, end), |s| s.2);
    let drops = |dev| tc::find(&stats, dev, LEAF).map_or(0, |s| s.drops);
    let secs = plan.secs as usize;
    Ok(KernelRun {
        measured: Measured {
            source: "kernel".into(),
            up_buffer_bytes: up_buffer,
            download_bps: xd,
            upload_bps: xu,
            r: xd / xu,
            r_min: xd / xu,
            r_max: xd / xu,
            runs: 1,
        },
        queues: KernelQueues {
            up_buffer_bytes: up_buffer,
            downlink_mean_bytes: dm,
            downlink_empty_share: de,
            downlink_drops: drops(DOWN_DEV),
            uplink_mean_bytes: um,
            uplink_empty_share: ue,
            uplink_drops: drops(UP_DEV),
        },
        tcp_inet,
        tcp_home,
        links,
        series: PointSeries {
            goodput: [per_second(&bins[0], secs), per_second(&bins[1], secs)],
            queues: samples,
        },
    })
}

/// The simulator at one point, in one setting.
fn run_sim(
    plan: &Plan,
    up_buffer: u64,
    (label, min_rto, est, prr): (&str, Dur, RttEstimatorKind, bool),
) -> Result<Measured> {
    let mut runs = Vec::new();
    for seed in 1..=plan.sim_seeds as u64 {
        let mut s = plan.setup(up_buffer, seed);
        s.min_rto = min_rto;
        s.rtt_estimator = est;
        s.prr = prr;
        runs.push(simp::run_pair(&s, "lab-pendulum-fig10")?);
    }
    let a = simp::aggregate(&runs);
    Ok(Measured {
        source: label.into(),
        up_buffer_bytes: up_buffer,
        download_bps: a.xd,
        upload_bps: a.xu,
        r: a.r,
        r_min: a.r_min,
        r_max: a.r_max,
        runs: runs.len() as u32,
    })
}

/// `hopwise lab pendulum-fig10`.
pub struct LabPendulumFig10;

impl Reproduction for LabPendulumFig10 {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "lab-pendulum-fig10";
    const ABOUT: &'static str = "seed 004, Fig. 10 on kernel TCP: the throughput ratio of a download and an upload against the uplink buffer";
    const PAPER: &'static str = "seed 004: Heusse, Merritt, Brown, Duda, Two-way TCP connections: old problem, new insight (Fig. 10, kernel TCP)";
    const WALL: &'static str = "quick 60 s, full 4 × 300 s of real time";

    /// `seeds`: simulator runs per point and setting.
    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        let p = Plan::new(quick);
        Plan {
            sim_seeds: seeds.unwrap_or(p.sim_seeds),
            ..p
        }
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
        run(plan, ctx)
    }

    fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
        claims_for(plan, &r.points)
    }

    fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
        outputs(plan, r, out)
    }

    fn facts(&self, plan: &Plan) -> Vec<String> {
        let sides = plan.side_delays();
        vec![
            format!(
                "kernel TCP ({}) in network namespaces, Linux {}; {} s per point, measured after {} s; one-way delays {:.1} ms INET–router and {:.1} ms router–HOME (the delay line)",
                plan.cc,
                kernel_release(),
                plan.secs,
                simp::SWEEP_WARM,
                sides.inet_ms,
                sides.home_ms
            ),
            format!(
                "\"simulator\": hopwise reproduce pendulum's Fig. 10 setup for as long, {} start jitters per point and setting",
                plan.sim_seeds
            ),
        ]
    }

    fn title(&self) -> String {
        "hopwise lab pendulum-fig10".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

/// Runs every point, saving the outputs after each.
fn run(plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
    let progress = ctx.progress;
    topology::require()?;
    plan.check()?;
    let sim_on =
        hopwise_lab::traffic::sim_comparison(progress, &plan.cc, "reno", plan.sim_seeds > 0);
    let mut r = Results {
        kernel: kernel_release(),
        warmup_s: simp::SWEEP_WARM,
        side_delays_ms: plan.side_delays(),
        sim_seeds: if sim_on { plan.sim_seeds } else { 0 },
        points: Vec::new(),
        series: Vec::new(),
    };
    for (i, &bu) in plan.up_buffers.iter().enumerate() {
        progress.note(&format!(
            "point {}/{}: B_u = {bu} B",
            i + 1,
            plan.up_buffers.len()
        ));
        let k = run_kernel(plan, bu, progress)?;
        let sims = if !sim_on {
            Vec::new()
        } else {
            progress.start("simulator", SIM_SETTINGS.len() as u64);
            let mut v = Vec::new();
            for setting in SIM_SETTINGS {
                v.push(run_sim(plan, bu, setting)?);
                progress.inc();
            }
            progress.finish();
            v
        };
        r.points.push(Point {
            tp_ms: plan.tp_ms,
            down_buffer_bytes: plan.down_buffer,
            up_buffer_bytes: bu,
            r_model: plan.setup(bu, 1).model().ratio(),
            kernel: k.measured,
            simulator: sims,
            queues: k.queues,
            tcp_inet: k.tcp_inet,
            tcp_home: k.tcp_home,
            links: k.links,
        });
        r.series.push(k.series);
        if i + 1 < plan.up_buffers.len() {
            ctx.checkpoint(&r)?;
        }
    }
    Ok(r)
}

/// Signed deviation of `x` from `model`, as a fraction.
fn dev(x: f64, model: f64) -> f64 {
    x / model - 1.0
}

/// Per point, the reproduction's Fig. 10 criterion on the kernel's r (one
/// run: exact), where it judges; the queues, counters and the delay line
/// for information.
fn claims_for(plan: &Plan, points: &[Point]) -> Vec<Claim> {
    let mut claims = Vec::new();
    for p in points {
        let figure = "Fig. 10, kernel TCP";
        let claim = format!(
            "T_p = {} ms, B_d = {} B, B_u = {} B: r = X_d/X_u follows Eq. 11 (the reproduction's criterion, at T_p = {JUDGED_TP_MS} ms for B_u ≥ {JUDGED_FROM} B)",
            p.tp_ms,
            p.down_buffer_bytes,
            p.up_buffer_bytes,
        );
        let sims: Vec<String> = p
            .simulator
            .iter()
            .map(|m| {
                format!(
                    "{} {:.2} ({:+.0} %; runs {:.2}–{:.2})",
                    m.source.trim_start_matches("simulator, "),
                    m.r,
                    dev(m.r, p.r_model) * 100.0,
                    m.r_min,
                    m.r_max
                )
            })
            .collect();
        let measured = format!(
            "kernel r = {:.2} ({:+.0} % from the model's {:.2}; {:.0} kbit/s against {:.1} kbit/s){}",
            p.kernel.r,
            dev(p.kernel.r, p.r_model) * 100.0,
            p.r_model,
            p.kernel.download_bps / 1e3,
            p.kernel.upload_bps / 1e3,
            if sims.is_empty() {
                String::new()
            } else {
                format!("; simulator: {}", sims.join(", "))
            }
        );
        claims.push(
            if p.tp_ms == JUDGED_TP_MS && p.up_buffer_bytes >= JUDGED_FROM && plan.secs >= VERDICT_SECS {
                Claim::new(figure, claim).measured(measured).within(
                    "kernel r / Eq. 11's r",
                    p.kernel.r / p.r_model,
                    1.0,
                    AGREE,
                )
            } else {
                Claim::info(
                    figure,
                    format!(
                        "{claim} (no verdict below {VERDICT_SECS} s per point, below B_u = {JUDGED_FROM} B or at another T_p)"
                    ),
                    measured,
                )
            },
        );
    }
    let q: Vec<String> = points
        .iter()
        .map(|p| {
            let q = &p.queues;
            format!(
                "B_u {} B: uplink {:.0} B on average, empty {:.0} % of samples; downlink {:.0} B, empty {:.0} %",
                p.up_buffer_bytes,
                q.uplink_mean_bytes,
                q.uplink_empty_share * 100.0,
                q.downlink_mean_bytes,
                q.downlink_empty_share * 100.0
            )
        })
        .collect();
    let count = |m: &BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    let tcp: Vec<String> = points
        .iter()
        .map(|p| {
            let side = |m: &BTreeMap<String, u64>| {
                format!(
                    "{} retransmitted, {} timeouts, {} recoveries, {} reductions undone",
                    count(m, "Tcp:RetransSegs"),
                    count(m, "TcpExt:TCPTimeouts"),
                    count(m, "TcpExt:TCPSackRecovery"),
                    [
                        "TcpExt:TCPLossUndo",
                        "TcpExt:TCPFullUndo",
                        "TcpExt:TCPPartialUndo",
                        "TcpExt:TCPDSACKUndo"
                    ]
                    .iter()
                    .map(|k| count(m, k))
                    .sum::<u64>()
                )
            };
            format!(
                "B_u {} B: download {}; upload {}",
                p.up_buffer_bytes,
                side(&p.tcp_inet),
                side(&p.tcp_home)
            )
        })
        .collect();
    claims.push(Claim::info(
        "kernel TCP's counters",
        "what the senders' loss recovery did over the whole run (/proc/net/netstat of each namespace)",
        tcp.join(". "),
    ));
    claims.push(Claim::info(
        "§3, kernel TCP",
        "the data pendulum: the queues fill in turn, and the model assumes that each drains completely",
        q.join("; "),
    ));
    let lanes: Vec<_> = points
        .iter()
        .flat_map(|p| p.links.iter().flat_map(|l| [&l.ab, &l.ba]))
        .collect();
    let d = plan.side_delays();
    claims.push(Claim::info(
        "the lab's delay line",
        format!(
            "frames leave after their hop's one-way delay ({:.1} ms on the INET–router hop, {:.1} ms on the router–HOME hop)",
            d.inet_ms, d.home_ms
        ),
        hopwise_lab::delay::lateness_summary(&lanes),
    ));
    claims
}

/// `points.csv`: r at each point, from the kernel and each simulator setting.
#[derive(Serialize, Default)]
struct PointRow<'a> {
    source: &'a str,
    tp_ms: u64,
    down_buffer_bytes: u64,
    up_buffer_bytes: u64,
    download_bps: f64,
    upload_bps: f64,
    r: f64,
    r_min: f64,
    r_max: f64,
    runs: u32,
    r_model: f64,
}

/// `goodput.csv`: the kernel's goodput per second at each point.
#[derive(Serialize, Default)]
struct GoodputRow {
    up_buffer_bytes: u64,
    flow: &'static str,
    time_s: usize,
    bps: f64,
}

/// `queues.csv`: the kernel's queues every 100 ms at each point.
#[derive(Serialize, Default)]
struct QueueRow {
    up_buffer_bytes: u64,
    time_s: f64,
    downlink_bytes: u64,
    uplink_bytes: u64,
}

fn outputs(plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
    let points = &r.points;
    out.svg("r.svg", &r_chart(plan, points))?;
    out.svg(
        "series.svg",
        &series_figure(plan, &r.kernel, points, &r.series),
    )?;
    let rows: Vec<PointRow> = points
        .iter()
        .flat_map(|p| {
            std::iter::once(&p.kernel)
                .chain(&p.simulator)
                .map(move |m| PointRow {
                    source: &m.source,
                    tp_ms: p.tp_ms,
                    down_buffer_bytes: p.down_buffer_bytes,
                    up_buffer_bytes: p.up_buffer_bytes,
                    download_bps: m.download_bps,
                    upload_bps: m.upload_bps,
                    r: m.r,
                    r_min: m.r_min,
                    r_max: m.r_max,
                    runs: m.runs,
                    r_model: p.r_model,
                })
        })
        .collect();
    out.csv("points.csv", &rows)?;
    let mut rows = Vec::new();
    let mut qrows = Vec::new();
    for (p, s) in points.iter().zip(&r.series) {
        for (f, flow) in ["download", "upload"].into_iter().enumerate() {
            rows.extend(
                s.goodput[f]
                    .iter()
                    .enumerate()
                    .map(|(time_s, &bps)| GoodputRow {
                        up_buffer_bytes: p.up_buffer_bytes,
                        flow,
                        time_s,
                        bps,
                    }),
            );
        }
        qrows.extend(s.queues.iter().map(|&(time_s, d, u)| QueueRow {
            up_buffer_bytes: p.up_buffer_bytes,
            time_s,
            downlink_bytes: d,
            uplink_bytes: u,
        }));
    }
    out.csv("goodput.csv", &rows)?;
    out.csv("queues.csv", &qrows)?;
    // The delay line's counters, a row per link and direction of each point.
    #[derive(Default, Serialize)]
    struct LinkRow {
        up_buffer_bytes: u64,
        #[serde(flatten)]
        lane: LaneRow,
    }
    let rows: Vec<LinkRow> = points
        .iter()
        .flat_map(|p| {
            p.links
                .iter()
                .flat_map(LinkStats::rows)
                .map(|lane| LinkRow {
                    up_buffer_bytes: p.up_buffer_bytes,
                    lane,
                })
        })
        .collect();
    out.csv("links.csv", &rows)?;
    out.data(&["r.svg"], &["points.csv"]);
    out.data(&["series.svg"], &["queues.csv"]);
    Ok(())
}

/// r against B_u: the model on a fine grid, the kernel's and the
/// simulator's points.
fn r_chart(plan: &Plan, points: &[Point]) -> Chart {
    let hi = plan
        .up_buffers
        .iter()
        .copied()
        .max()
        .unwrap_or(60_000)
        .max(15_000);
    let grid: Vec<(f64, f64)> = (0..=60)
        .map(|i| 3_000.0 + (hi as f64 - 3_000.0) * i as f64 / 60.0)
        .map(|b| (b / 1e3, plan.setup(b as u64, 1).model().ratio()))
        .collect();
    let mut c = Chart::new(format!(
        "Throughput ratio, T_p = {} ms, B_d = {} kB",
        plan.tp_ms,
        plan.down_buffer as f64 / 1e3
    ))
    .x_label("uplink buffer B_u (kB)")
    .y_label("r = X_d / X_u")
    .series(Series::line("model (Eq. 11)", grid))
    .series(Series::line_points(
        format!("kernel TCP ({})", plan.cc),
        points
            .iter()
            .map(|p| (p.up_buffer_bytes as f64 / 1e3, p.kernel.r))
            .collect(),
    ));
    for (i, (label, ..)) in SIM_SETTINGS.iter().enumerate() {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| p.simulator.get(i))
            .map(|m| (m.up_buffer_bytes as f64 / 1e3, m.r))
            .collect();
        if !pts.is_empty() {
            c.push_series(Series::line_points(*label, pts));
        }
    }
    c
}

/// Per point: the kernel run's queues over time.
fn series_figure(plan: &Plan, kernel: &str, points: &[Point], series: &[PointSeries]) -> Figure {
    let mut fig = Figure::new(
        format!(
            "Kernel TCP ({}, Linux {}): the router's queues, T_p = {} ms, B_d = {} B",
            plan.cc, kernel, plan.tp_ms, plan.down_buffer
        ),
        1,
    );
    for (p, s) in points.iter().zip(series) {
        fig = fig.panel(
            Chart::new(format!("B_u = {} B", p.up_buffer_bytes))
                .x_label("time (s)")
                .y_label("occupancy (kB)")
                .x_range(0.0, plan.secs as f64)
                .vline(simp::SWEEP_WARM, "measured from here")
                .series(Series::line(
                    "downlink",
                    s.queues.iter().map(|q| (q.0, q.1 as f64 / 1e3)).collect(),
                ))
                .series(Series::line(
                    "uplink",
                    s.queues.iter().map(|q| (q.0, q.2 as f64 / 1e3)).collect(),
                )),
        );
    }
    fig
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_experiment::{Opts, Silent, Verdict};

    #[test]
    fn the_sides_add_up_to_the_models_round_trip() {
        let o = Plan::new(false);
        for bu in [15_000, 45_000] {
            let d = o.side_delays();
            let rtt_ms = 2.0 * (d.inet_ms + d.home_ms);
            let model_ms = o.setup(bu, 1).model_rtt() * 1e3;
            assert!((rtt_ms - model_ms).abs() < 1e-9, "{rtt_ms} vs {model_ms}");
            // Half of T_p on each side, the endpoints on top.
            assert!(d.inet_ms > 50.0 && d.home_ms > 50.0, "{d:?}");
        }
    }

    #[test]
    fn bad_options_name_their_flag() {
        let base = Plan::new(false);
        for (o, want) in [
            (
                Plan {
                    secs: 10,
                    ..base.clone()
                },
                "--secs 10",
            ),
            (
                Plan {
                    tp_ms: 5000,
                    ..base.clone()
                },
                "--tp 5000",
            ),
            (
                Plan {
                    up_buffers: vec![],
                    ..base.clone()
                },
                "--up-buffers",
            ),
            (
                Plan {
                    up_buffers: vec![2000],
                    ..base.clone()
                },
                "--up-buffers 2000 B",
            ),
            (
                Plan {
                    down_buffer: 1,
                    ..base.clone()
                },
                "--down-buffer 1 B",
            ),
        ] {
            let e = format!("{:#}", o.check().unwrap_err());
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    fn measured(source: &str, r: f64) -> Measured {
        Measured {
            source: source.into(),
            up_buffer_bytes: 45_000,
            download_bps: r * 1e5,
            upload_bps: 1e5,
            r,
            r_min: r,
            r_max: r,
            runs: 1,
        }
    }

    fn point(bu: u64, r_kernel: f64) -> Point {
        Point {
            tp_ms: 100,
            down_buffer_bytes: 120_000,
            up_buffer_bytes: bu,
            r_model: 4.0,
            kernel: measured("kernel", r_kernel),
            simulator: vec![measured(SIM_SETTINGS[0].0, 5.0)],
            queues: KernelQueues {
                up_buffer_bytes: bu,
                downlink_mean_bytes: 1.0,
                downlink_empty_share: 0.5,
                downlink_drops: 0,
                uplink_mean_bytes: 2.0,
                uplink_empty_share: 0.1,
                uplink_drops: 1,
            },
            tcp_inet: BTreeMap::from([("TcpExt:TCPTimeouts".to_string(), 3)]),
            tcp_home: BTreeMap::new(),
            links: Vec::new(),
        }
    }

    #[test]
    fn verdicts_only_for_long_runs_and_judged_buffers() {
        let o = Plan::new(false);
        // +25 % holds, +50 % does not, 9 kB is not judged.
        let c = claims_for(
            &o,
            &[point(45_000, 5.0), point(30_000, 6.0), point(9_000, 9.0)],
        );
        assert_eq!(c[0].verdict, Verdict::Holds, "{:?}", c[0]);
        assert_eq!(c[1].verdict, Verdict::Differs, "{:?}", c[1]);
        assert_eq!(c[2].verdict, Verdict::Info);
        assert!(c[0].measured.contains("+25 %"), "{}", c[0].measured);
        let counters = c
            .iter()
            .find(|c| c.figure == "kernel TCP's counters")
            .unwrap();
        assert!(
            counters
                .measured
                .contains("download 0 retransmitted, 3 timeouts"),
            "{}",
            counters.measured
        );
        // Too short to judge.
        let q = Plan {
            secs: 60,
            ..o.clone()
        };
        assert_eq!(
            claims_for(&q, &[point(45_000, 5.0)])[0].verdict,
            Verdict::Info
        );
    }

    /// The experiment with canned kernel points instead of the lab: saves
    /// its outputs after each point, then stops as an interrupted run would.
    struct Interrupted(Vec<(Point, PointSeries)>);

    impl Reproduction for Interrupted {
        type Plan = Plan;
        type Results = Results;
        const NAME: &'static str = "interrupted";
        const ABOUT: &'static str = "";
        const PAPER: &'static str = "";
        const WALL: &'static str = "";
        fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
            LabPendulumFig10.plan(quick, seeds)
        }
        fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
            let mut r = Results {
                kernel: "test".into(),
                warmup_s: simp::SWEEP_WARM,
                side_delays_ms: plan.side_delays(),
                sim_seeds: plan.sim_seeds,
                points: Vec::new(),
                series: Vec::new(),
            };
            for (p, s) in &self.0 {
                r.points.push(p.clone());
                r.series.push(s.clone());
                ctx.checkpoint(&r)?;
            }
            bail!("interrupted")
        }
        fn claims(&self, plan: &Plan, r: &Results) -> Vec<Claim> {
            LabPendulumFig10.claims(plan, r)
        }
        fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
            LabPendulumFig10.outputs(plan, r, out)
        }
    }

    #[test]
    fn outputs_are_written_and_marked_incomplete_until_the_last_point() {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-fig10-{}", std::process::id()));
        let s = PointSeries {
            goodput: [vec![2e6; 3], vec![1e5; 3]],
            queues: vec![(0.0, 1, 2), (0.1, 3, 4)],
        };
        let run = Interrupted(vec![(point(45_000, 5.0), s)]);
        let plan = run.plan(true, None);
        let e = hopwise_experiment::run(&run, &plan, &Opts::new(&dir, true), &Silent).unwrap_err();
        assert!(e.to_string().contains("interrupted"), "{e}");
        let summary = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(summary.contains("\"complete\": false"), "{summary}");
        let csv = std::fs::read_to_string(dir.join("points.csv")).unwrap();
        // Header, the kernel, one simulator setting.
        assert_eq!(csv.lines().count(), 3, "{csv}");
        let svg = std::fs::read_to_string(dir.join("r.svg")).unwrap();
        for s in ["model (Eq. 11)", "kernel TCP", "min RTO 1 s"] {
            assert!(svg.contains(s), "{s} missing");
        }
        let q = std::fs::read_to_string(dir.join("queues.csv")).unwrap();
        assert!(q.contains("45000,0.1,3,4"), "{q}");
        let links = std::fs::read_to_string(dir.join("links.csv")).unwrap();
        assert!(
            links.starts_with("up_buffer_bytes,link,direction,"),
            "{links}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
