//! Seed 004's Fig. 1 on kernel TCP: a download collapses while uploads
//! share an asymmetric access link.
//!
//! The link is 2.4 Mbit/s down and 196 kbit/s up with 30 000 B buffers at
//! both ends (the router's two egress queues, see [`hopwise_lab::topology`]). A
//! download runs from 10 s to the end (100 s), one upload from 30 to 50 s
//! and two uploads from 60 to 95 s, as in the paper and in
//! `hopwise reproduce pendulum`. The same timeline then runs in the
//! simulator in three TCP settings ([`SIM_SETTINGS`]: the reproduction's 1 s
//! minimum RTO, and Linux's 200 ms with two RTT estimators), and Eq. 11 gives the
//! model's ratio, so the kernel's numbers sit beside both.

use crate::pendulum as simp;
use anyhow::Result;
use hopwise_experiment::{stats, Claim, Ctx, Outputs, Progress, Reproduction};
use hopwise_lab::kstats::kernel_release;
use hopwise_lab::tc;
use hopwise_lab::topology::{
    self, AccessLab, AccessSpec, Buffer, Names, DOWN_DEV, HOME_ADDR, INET_ADDR, LEAF, UP_DEV,
};
use hopwise_lab::traffic::{
    goodput_bps, join_flows, per_second, spawn_receiver, spawn_sender, Clock, BIN_S,
};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use hopwise_proto::tcp::RttEstimatorKind;
use hopwise_proto::time::Dur;
use serde::Serialize;
use std::net::SocketAddr;

pub const DOWN_RATE_BPS: u64 = 2_400_000;
pub const UP_RATE_BPS: u64 = 196_000;
/// Ports of the download's receiver (HOME) and of the uploads' receivers (INET).
const DOWN_PORT: u16 = 5001;
const UP_PORT: u16 = 5002;

/// When the transfers run and where the phases are measured (seconds).
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    pub download: (f64, f64),
    pub uploads: Vec<(f64, f64)>,
    pub end_s: f64,
    /// Measurement windows: download alone, with one upload, with two.
    pub windows: [(f64, f64); 3],
}

impl Timeline {
    /// The paper's Fig. 1 (and `hopwise reproduce pendulum`'s): 100 s.
    pub fn paper() -> Timeline {
        Timeline {
            download: (10.0, 100.0),
            uploads: vec![(30.0, 50.0), (60.0, 95.0), (60.0, 95.0)],
            end_s: 100.0,
            windows: [(12.0, 30.0), (32.0, 50.0), (62.0, 95.0)],
        }
    }

    /// The same phases in 40 s, each measured 2 s after it begins.
    pub fn quick() -> Timeline {
        Timeline {
            download: (1.0, 40.0),
            uploads: vec![(8.0, 20.0), (24.0, 38.0), (24.0, 38.0)],
            end_s: 40.0,
            windows: [(3.0, 8.0), (10.0, 20.0), (26.0, 38.0)],
        }
    }
}

/// What to run: `hopwise lab pendulum`'s flags.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The 40 s timeline instead of the paper's 100 s.
    pub quick: bool,
    /// The hosts' congestion control (`reno` is Linux's NewReno with SACK).
    pub cc: String,
    pub down_buffer: Buffer,
    pub up_buffer: Buffer,
    /// Simulator runs per setting (different start jitter); 0 skips the simulator.
    pub sim_seeds: u32,
}

impl Plan {
    /// The defaults: `reno`, 30 000 B at both ends, 3 simulator runs per
    /// setting (`sim_seeds` instead, if given).
    pub fn new(quick: bool, sim_seeds: Option<u32>) -> Plan {
        Plan {
            quick,
            cc: "reno".into(),
            down_buffer: Buffer::Bytes(30_000),
            up_buffer: Buffer::Bytes(30_000),
            sim_seeds: sim_seeds.unwrap_or(3),
        }
    }

    pub fn timeline(&self) -> Timeline {
        if self.quick {
            Timeline::quick()
        } else {
            Timeline::paper()
        }
    }
}

/// Goodput in the three phases, bit/s.
#[derive(Clone, Debug, Serialize)]
pub struct Phases {
    /// "kernel" or the simulator setting.
    pub source: String,
    pub download_alone_bps: f64,
    pub download_one_upload_bps: f64,
    pub upload_one_bps: f64,
    pub download_two_uploads_bps: f64,
    /// Both uploads together.
    pub uploads_two_bps: f64,
}

impl Phases {
    fn from_fn(source: &str, w: &[(f64, f64); 3], g: &dyn Fn(usize, (f64, f64)) -> f64) -> Phases {
        Phases {
            source: source.into(),
            download_alone_bps: g(0, w[0]),
            download_one_upload_bps: g(0, w[1]),
            upload_one_bps: g(1, w[1]),
            download_two_uploads_bps: g(0, w[2]),
            uploads_two_bps: g(2, w[2]) + g(3, w[2]),
        }
    }
    pub fn ratio_one(&self) -> f64 {
        self.download_one_upload_bps / self.upload_one_bps
    }
    pub fn ratio_two(&self) -> f64 {
        self.download_two_uploads_bps / self.uploads_two_bps
    }
    /// Means over runs.
    fn mean(source: &str, runs: &[Phases]) -> Phases {
        let m = |f: fn(&Phases) -> f64| stats::mean(&runs.iter().map(f).collect::<Vec<_>>());
        Phases {
            source: source.into(),
            download_alone_bps: m(|p| p.download_alone_bps),
            download_one_upload_bps: m(|p| p.download_one_upload_bps),
            upload_one_bps: m(|p| p.upload_one_bps),
            download_two_uploads_bps: m(|p| p.download_two_uploads_bps),
            uploads_two_bps: m(|p| p.uploads_two_bps),
        }
    }
}

/// A queue's statistics over the run.
#[derive(Clone, Debug, Serialize)]
pub struct QueueStats {
    pub queue: String,
    pub buffer: String,
    /// Packets dropped by the buffer over the whole run.
    pub drops: u64,
    /// Mean occupancy in the three windows, bytes.
    pub mean_bytes: [f64; 3],
    /// Share of samples in the three windows with an empty queue.
    pub empty_share: [f64; 3],
}

/// What the run measured (summary.json holds every field but `series`).
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// The running kernel's release.
    pub kernel: String,
    pub link: AccessSpec,
    pub timeline: Timeline,
    pub kernel_tcp: Phases,
    pub simulator: Vec<Phases>,
    pub simulator_runs: u32,
    /// Eq. 11's r = Xd/Xu for this link (T_p = 0 and 1–5 ms endpoints, as the simulator).
    pub model_r: f64,
    /// C_d / C_u: both links are full at r = k.
    pub capacity_ratio_k: f64,
    pub queues: Vec<QueueStats>,
    pub queue_sample_interval_s: f64,
    #[serde(skip)]
    pub series: Traces,
}

/// The time series the figure shows.
#[derive(Clone, Debug, Default)]
pub struct Traces {
    /// Kernel goodput per flow (download first) in 1 s bins: (s, bit/s).
    pub kernel: Vec<Vec<(f64, f64)>>,
    /// The simulator's (seed 1, the reproduction's setting), as the kernel's.
    pub simulator: Vec<Vec<(f64, f64)>>,
    /// The router's queues every 100 ms.
    pub queues: QueueSamples,
}

/// The simulator's setup for this timeline and these buffers.
fn sim_setup(
    tl: &Timeline,
    plan: &Plan,
    (min_rto, est): (Dur, RttEstimatorKind),
    seed: u64,
) -> simp::Setup {
    let mut s = simp::fig1_setup(seed);
    let d = Dur::from_secs_f64;
    s.download = (d(tl.download.0), None);
    s.uploads = tl
        .uploads
        .iter()
        .map(|&(a, b)| (d(a), Some(d(b))))
        .collect();
    s.duration = d(tl.end_s);
    s.down_buffer = plan.down_buffer.limit();
    s.up_buffer = plan.up_buffer.limit();
    s.min_rto = min_rto;
    s.rtt_estimator = est;
    s
}

/// The simulator's TCP settings beside the kernel: the reproduction's
/// (BSD's 1 s minimum RTO, RFC 6298 estimator), Linux's 200 ms minimum with
/// the RFC 6298 estimator, and Linux's 200 ms with Linux's estimator.
const SIM_SETTINGS: &[(&str, (Dur, RttEstimatorKind))] = &[
    (
        "simulator, min RTO 1 s as in the paper",
        (simp::MIN_RTO, RttEstimatorKind::Rfc6298),
    ),
    (
        "simulator, min RTO 200 ms, RFC 6298",
        (Dur::from_millis(200), RttEstimatorKind::Rfc6298),
    ),
    (
        "simulator, min RTO 200 ms, Linux RTT estimator",
        (Dur::from_millis(200), RttEstimatorKind::Linux),
    ),
];

/// Kernel-side samples of the router's queues: (time, downlink, uplink) bytes.
pub type QueueSamples = Vec<(f64, u64, u64)>;

/// Runs the timeline on kernel TCP; returns per-flow 100 ms bins (download
/// first), the queue samples and the final qdisc counters. Fails if the
/// lab's delay line (if any) stops.
pub(crate) fn run_kernel(
    lab: &mut AccessLab,
    tl: &Timeline,
    progress: &dyn Progress,
) -> Result<(Vec<Vec<u64>>, QueueSamples, Vec<tc::QdiscStats>)> {
    let clock = Clock::start();
    let end = tl.end_s;
    // Receivers read a little past the end, so that the senders' last
    // writes are not met by a closed socket; the windows end earlier.
    let read_until = end + 1.0;
    let mut receivers = vec![spawn_receiver(
        lab.home.open()?,
        HOME_ADDR,
        DOWN_PORT,
        clock,
        read_until,
        "download".into(),
    )?];
    let mut senders = vec![spawn_sender(
        lab.inet.open()?,
        SocketAddr::from((HOME_ADDR, DOWN_PORT)),
        lab.spec.cc.clone(),
        clock,
        tl.download.0,
        tl.download.1,
        "download".into(),
    )?];
    for (i, &(a, b)) in tl.uploads.iter().enumerate() {
        let port = UP_PORT + i as u16;
        let name = format!("upload {}", i + 1);
        receivers.push(spawn_receiver(
            lab.inet.open()?,
            INET_ADDR,
            port,
            clock,
            read_until,
            name.clone(),
        )?);
        senders.push(spawn_sender(
            lab.home.open()?,
            SocketAddr::from((INET_ADDR, port)),
            lab.spec.cc.clone(),
            clock,
            a,
            b,
            name,
        )?);
    }
    progress.start("kernel TCP (real time)", end.ceil() as u64);
    let mut samples = QueueSamples::new();
    let mut last = Vec::new();
    let mut ticked = 0u64;
    let mut t = 0.0;
    let mut line_failed = None;
    while t < end {
        clock.sleep_until(t);
        let now = clock.now_s();
        if let Err(e) = lab.check_line() {
            // The senders and receivers end at their own deadlines.
            line_failed = Some(e);
            break;
        }
        let q = lab.qdiscs()?;
        let backlog = |dev| tc::find(&q, dev, LEAF).map_or(0, |s| s.backlog);
        samples.push((now, backlog(DOWN_DEV), backlog(UP_DEV)));
        last = q;
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
        }
        t += BIN_S;
    }
    clock.sleep_until(end);
    progress.finish();
    let bins = join_flows(senders, receivers, line_failed)?;
    let final_stats = lab.qdiscs().unwrap_or(last);
    Ok((bins, samples, final_stats))
}

fn kbit(bps: f64) -> String {
    format!("{:.0} kbit/s", bps / 1e3)
}

/// `hopwise lab pendulum`.
pub struct LabPendulum;

impl Reproduction for LabPendulum {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "lab-pendulum";
    const ABOUT: &'static str =
        "seed 004, Fig. 1 on kernel TCP: uploads collapse a download on an asymmetric link";
    const PAPER: &'static str = "seed 004: Heusse, Merritt, Brown, Duda, Two-way TCP connections: old problem, new insight (Fig. 1, kernel TCP)";
    const WALL: &'static str = "quick 40 s, full 100 s of real time";

    fn plan(&self, quick: bool, seeds: Option<u32>) -> Plan {
        Plan::new(quick, seeds)
    }

    fn run(&self, plan: &Plan, ctx: &Ctx<'_, Results>) -> Result<Results> {
        run(plan, ctx.progress)
    }

    fn claims(&self, _plan: &Plan, r: &Results) -> Vec<Claim> {
        claims(r)
    }

    fn outputs(&self, plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
        outputs(plan, r, out)
    }

    fn facts(&self, plan: &Plan) -> Vec<String> {
        vec![format!(
            "kernel TCP ({}) in network namespaces, Linux {}; {} timeline",
            plan.cc,
            kernel_release(),
            if plan.quick {
                "40 s quick"
            } else {
                "the paper's 100 s"
            }
        )]
    }

    fn title(&self) -> String {
        "hopwise lab pendulum".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

/// The kernel run, then the simulator on the same timeline.
fn run(plan: &Plan, progress: &dyn Progress) -> Result<Results> {
    topology::require()?;
    hopwise_lab::traffic::check_cc(&plan.cc)?;
    let sim_on =
        hopwise_lab::traffic::sim_comparison(progress, &plan.cc, "reno", plan.sim_seeds > 0);
    let tl = plan.timeline();
    let spec = AccessSpec {
        down_rate_bps: DOWN_RATE_BPS,
        up_rate_bps: UP_RATE_BPS,
        down_buffer: plan.down_buffer,
        up_buffer: plan.up_buffer,
        cc: plan.cc.clone(),
        delayed_acks: true,
        delay: None,
    };
    let mut lab = AccessLab::build(&Names::new_instance(), &spec)?;
    let (bins, samples, qstats) = run_kernel(&mut lab, &tl, progress)?;
    drop(lab);
    let kernel = Phases::from_fn("kernel", &tl.windows, &|f, w| {
        goodput_bps(&bins[f], w.0, w.1)
    });

    // The simulator on the same timeline.
    let mut sims = Vec::new();
    let mut sim_series: Vec<Vec<(f64, f64)>> = Vec::new();
    let sim_runs = if sim_on { plan.sim_seeds } else { 0 };
    if sim_runs > 0 {
        progress.start("simulator", SIM_SETTINGS.len() as u64 * sim_runs as u64);
        for &(label, rto) in SIM_SETTINGS {
            let mut runs = Vec::new();
            for seed in 1..=sim_runs as u64 {
                let sim = simp::simulate(&sim_setup(&tl, plan, rto, seed), "lab-pendulum")?;
                runs.push(Phases::from_fn(label, &tl.windows, &|f, w| {
                    simp::goodput_between(&sim, f, w.0, w.1)
                }));
                if seed == 1 && rto == SIM_SETTINGS[0].1 {
                    for f in 0..sim.flows().len() {
                        let g = sim.endpoint(simp::receiver(&sim, f)).goodput();
                        let w = g.interval.as_secs_f64();
                        sim_series.push(
                            g.bins
                                .iter()
                                .enumerate()
                                .map(|(i, &b)| (i as f64 * w, b as f64 * 8.0 / w))
                                .collect(),
                        );
                    }
                }
                progress.inc();
            }
            sims.push(Phases::mean(label, &runs));
        }
        progress.finish();
    }
    let model = sim_setup(&tl, plan, SIM_SETTINGS[0].1, 1).model();

    // Queues.
    let queues: Vec<QueueStats> = [
        (
            "downlink",
            DOWN_DEV,
            plan.down_buffer,
            (|s| s.1) as fn(&(f64, u64, u64)) -> u64,
        ),
        ("uplink", UP_DEV, plan.up_buffer, |s| s.2),
    ]
    .iter()
    .map(|&(name, dev, buf, pick)| {
        let in_window = |w: (f64, f64)| -> Vec<f64> {
            samples
                .iter()
                .filter(|s| s.0 >= w.0 && s.0 < w.1)
                .map(|s| pick(s) as f64)
                .collect()
        };
        let mut mean_bytes = [0.0; 3];
        let mut empty_share = [0.0; 3];
        for (i, &w) in tl.windows.iter().enumerate() {
            let v = in_window(w);
            mean_bytes[i] = stats::mean(&v);
            empty_share[i] =
                stats::mean(&v.iter().map(|&b| f64::from(b == 0.0)).collect::<Vec<_>>());
        }
        QueueStats {
            queue: name.into(),
            buffer: buf.to_string(),
            drops: tc::find(&qstats, dev, LEAF).map_or(0, |s| s.drops),
            mean_bytes,
            empty_share,
        }
    })
    .collect();

    // Kernel goodput in 1 s bins, as the simulator's.
    let kernel_series: Vec<Vec<(f64, f64)>> = bins
        .iter()
        .map(|b| {
            per_second(b, tl.end_s.ceil() as usize)
                .into_iter()
                .enumerate()
                .map(|(s, v)| (s as f64, v))
                .collect()
        })
        .collect();
    Ok(Results {
        kernel: kernel_release(),
        link: spec,
        timeline: tl,
        kernel_tcp: kernel,
        simulator: sims,
        simulator_runs: sim_runs,
        model_r: model.ratio(),
        capacity_ratio_k: model.capacity_ratio(),
        queues,
        queue_sample_interval_s: BIN_S,
        series: Traces {
            kernel: kernel_series,
            simulator: sim_series,
            queues: samples,
        },
    })
}

/// The reproduction's Fig. 1 criteria, judged on kernel TCP (one run: exact).
fn claims(r: &Results) -> Vec<Claim> {
    let kernel = &r.kernel_tcp;
    let sim_ratio = |f: fn(&Phases) -> f64| -> String {
        if r.simulator.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = r
                .simulator
                .iter()
                .map(|s| {
                    format!(
                        "{:.2} ({})",
                        f(s),
                        s.source.trim_start_matches("simulator, ")
                    )
                })
                .collect();
            format!("; simulator {}", v.join(", "))
        }
    };
    let alone = kernel.download_alone_bps;
    let mut claims = vec![
        Claim::new(
            "Fig. 1, kernel TCP",
            "without uploads the download gets nearly all of 2.4 Mbit/s",
        )
        .measured(format!(
            "{} ({:.1} %; 1448 B of payload per 1514 B Ethernet frame is 95.6 %)",
            kbit(alone),
            alone / DOWN_RATE_BPS as f64 * 100.0
        ))
        .at_least(
            "download goodput / 2.4 Mbit/s",
            alone / DOWN_RATE_BPS as f64,
            0.9,
        ),
        Claim::new(
            "Fig. 1, kernel TCP",
            "while one upload runs, the download falls to about the upload's goodput",
        )
        .measured(format!(
            "{} against {}: ratio {:.2}{}",
            kbit(kernel.download_one_upload_bps),
            kbit(kernel.upload_one_bps),
            kernel.ratio_one(),
            sim_ratio(Phases::ratio_one)
        ))
        .at_most("download / upload goodput", kernel.ratio_one(), 3.0),
        Claim::new(
            "Fig. 1, kernel TCP",
            "while two uploads run, the download falls to about their goodput",
        )
        .measured(format!(
            "{} against {}: ratio {:.2}{}",
            kbit(kernel.download_two_uploads_bps),
            kbit(kernel.uploads_two_bps),
            kernel.ratio_two(),
            sim_ratio(Phases::ratio_two)
        ))
        .at_most("download / uploads' goodput", kernel.ratio_two(), 3.0),
        Claim::info(
            "Eq. 11",
            "the model's throughput ratio r = Xd/Xu for this link",
            format!(
                "r = {:.2} (k = C_d/C_u = {:.2}); kernel TCP {:.2} with one upload",
                r.model_r,
                r.capacity_ratio_k,
                kernel.ratio_one()
            ),
        ),
    ];
    if let [down, up, ..] = r.queues.as_slice() {
        claims.push(Claim::info(
            "§3, kernel TCP",
            "data pendulum: while uploads run the uplink queue stays full and the downlink queue is often empty",
            format!(
                "one upload: uplink {:.0} B on average (empty {:.0} % of samples), downlink {:.0} B (empty {:.0} %); drops over the whole run: uplink {}, downlink {}",
                up.mean_bytes[1],
                up.empty_share[1] * 100.0,
                down.mean_bytes[1],
                down.empty_share[1] * 100.0,
                up.drops,
                down.drops
            ),
        ));
    }
    claims
}

/// `goodput.csv`: a flow's goodput per second, from the kernel or the simulator.
#[derive(Serialize, Default)]
struct GoodputRow {
    source: &'static str,
    flow: String,
    time_s: f64,
    bps: f64,
}

/// `queues.csv`: the router's queues every 100 ms.
#[derive(Serialize, Default)]
struct QueueRow {
    queue: &'static str,
    time_s: f64,
    bytes: u64,
}

/// `phases.csv`: goodput per phase and source (no upload, no ratio alone).
#[derive(Serialize, Default)]
struct PhaseRow {
    source: String,
    phase: &'static str,
    download_bps: f64,
    upload_bps: Option<f64>,
    ratio: Option<f64>,
}

fn outputs(plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
    let tl = &r.timeline;
    let t = &r.series;
    let names: Vec<String> = std::iter::once("download".to_string())
        .chain((1..=tl.uploads.len()).map(|i| format!("upload {i}")))
        .collect();
    let mbit = |s: &[(f64, f64)]| s.iter().map(|&(t, v)| (t, v / 1e6)).collect::<Vec<_>>();
    let goodput_chart = |title: &str, series: &[Vec<(f64, f64)>]| {
        let mut c = Chart::new(title)
            .x_label("time (s)")
            .y_label("goodput (Mbit/s)")
            .x_range(0.0, tl.end_s);
        for (f, s) in series.iter().enumerate() {
            c.push_series(Series::line(names[f].clone(), mbit(s)));
        }
        c
    };
    let queue_chart = Chart::new("Kernel run: router queues")
        .x_label("time (s)")
        .y_label("occupancy (kB)")
        .x_range(0.0, tl.end_s)
        .series(Series::line(
            "downlink",
            t.queues.iter().map(|s| (s.0, s.1 as f64 / 1e3)).collect(),
        ))
        .series(Series::line(
            "uplink",
            t.queues.iter().map(|s| (s.0, s.2 as f64 / 1e3)).collect(),
        ));
    let mut fig = Figure::new(
        format!(
            "Download and uploads on 2.4 Mbit/s / 196 kbit/s, buffers {} / {}",
            plan.down_buffer, plan.up_buffer
        ),
        1,
    )
    .panel(goodput_chart(
        &format!("Kernel TCP ({}, Linux {})", plan.cc, r.kernel),
        &t.kernel,
    ));
    if !t.simulator.is_empty() {
        fig = fig.panel(goodput_chart(
            "hopwise simulator (NewReno, SACK, min RTO 1 s), seed 1",
            &t.simulator,
        ));
    }
    out.svg("fig1.svg", &fig.panel(queue_chart))?;
    let sources = std::iter::once(&r.kernel_tcp).chain(&r.simulator);
    let mut bars = BarChart::new("Download ÷ upload goodput while uploads run")
        .y_label("ratio Xd/Xu")
        .x_label("phase");
    for p in sources.clone() {
        bars = bars.group(
            p.source.clone(),
            vec![
                ("one upload".into(), p.ratio_one()),
                ("two uploads".into(), p.ratio_two()),
            ],
        );
    }
    out.svg("phases.svg", &bars)?;

    let mut rows = Vec::new();
    for (source, series) in [("kernel", &t.kernel), ("simulator", &t.simulator)] {
        for (f, s) in series.iter().enumerate() {
            rows.extend(s.iter().map(|&(time_s, bps)| GoodputRow {
                source,
                flow: names[f].clone(),
                time_s,
                bps,
            }));
        }
    }
    out.csv("goodput.csv", &rows)?;
    let rows: Vec<QueueRow> = t
        .queues
        .iter()
        .flat_map(|&(time_s, d, u)| {
            [("downlink", d), ("uplink", u)].map(|(queue, bytes)| QueueRow {
                queue,
                time_s,
                bytes,
            })
        })
        .collect();
    out.csv("queues.csv", &rows)?;
    let mut rows = Vec::new();
    for p in sources {
        for (phase, d, u) in [
            ("download alone", p.download_alone_bps, None),
            (
                "one upload",
                p.download_one_upload_bps,
                Some(p.upload_one_bps),
            ),
            (
                "two uploads",
                p.download_two_uploads_bps,
                Some(p.uploads_two_bps),
            ),
        ] {
            rows.push(PhaseRow {
                source: p.source.clone(),
                phase,
                download_bps: d,
                upload_bps: u,
                ratio: u.map(|u| d / u),
            });
        }
    }
    out.csv("phases.csv", &rows)?;
    out.data(&["fig1.svg"], &["goodput.csv", "queues.csv"]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_experiment::Verdict;

    fn phases(source: &str, alone: f64, one: (f64, f64), two: (f64, f64)) -> Phases {
        Phases {
            source: source.into(),
            download_alone_bps: alone,
            download_one_upload_bps: one.0,
            upload_one_bps: one.1,
            download_two_uploads_bps: two.0,
            uploads_two_bps: two.1,
        }
    }

    fn results(kernel: Phases) -> Results {
        let plan = Plan::new(true, Some(1));
        let tl = plan.timeline();
        let queue = |name: &str| QueueStats {
            queue: name.into(),
            buffer: "30000 B".into(),
            drops: 3,
            mean_bytes: [0.0, 22_000.0, 21_000.0],
            empty_share: [1.0, 0.0, 0.0],
        };
        Results {
            kernel: "test".into(),
            link: AccessSpec {
                down_rate_bps: DOWN_RATE_BPS,
                up_rate_bps: UP_RATE_BPS,
                down_buffer: plan.down_buffer,
                up_buffer: plan.up_buffer,
                cc: plan.cc.clone(),
                delayed_acks: true,
                delay: None,
            },
            timeline: tl,
            kernel_tcp: kernel,
            simulator: vec![phases(
                SIM_SETTINGS[0].0,
                2.3e6,
                (3.3e5, 1.8e5),
                (4.5e5, 1.8e5),
            )],
            simulator_runs: 1,
            model_r: 1.07,
            capacity_ratio_k: 12.24,
            queues: vec![queue("downlink"), queue("uplink")],
            queue_sample_interval_s: BIN_S,
            series: Traces {
                kernel: vec![vec![(0.0, 2e6), (1.0, 2.2e6)]; 4],
                simulator: vec![vec![(0.0, 2.1e6)]; 4],
                queues: vec![(0.0, 100, 200), (0.1, 0, 30_000)],
            },
        }
    }

    #[test]
    fn the_fig1_criteria_are_judged_on_the_kernel_run() {
        let ok = results(phases("kernel", 2.29e6, (3.3e5, 1.76e5), (3.1e5, 1.79e5)));
        let c = claims(&ok);
        let judged: Vec<&Claim> = c.iter().filter(|c| c.verdict != Verdict::Info).collect();
        assert_eq!(judged.len(), 3);
        assert!(judged.iter().all(|c| c.verdict == Verdict::Holds), "{c:?}");
        assert!(c[1].measured.contains("ratio 1.88"), "{}", c[1].measured);
        assert!(
            c[1].measured.contains("simulator 1.83"),
            "{}",
            c[1].measured
        );
        assert_eq!(
            c[1].criterion.as_deref(),
            Some("download / upload goodput ≤ 3")
        );
        // 85 % of the link and a download at 4x the upload miss.
        let bad = results(phases("kernel", 2.04e6, (8e5, 2e5), (3e5, 1.8e5)));
        let c = claims(&bad);
        assert_eq!(c[0].verdict, Verdict::Differs);
        assert_eq!(c[1].verdict, Verdict::Differs);
        assert_eq!(c[2].verdict, Verdict::Holds);
    }

    #[test]
    fn outputs_keep_their_columns() {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-fig1-{}", std::process::id()));
        let r = results(phases("kernel", 2.29e6, (3.3e5, 1.76e5), (3.1e5, 1.79e5)));
        let mut out = Outputs::new(&dir);
        outputs(&Plan::new(true, None), &r, &mut out).unwrap();
        assert_eq!(
            out.files(),
            [
                "fig1.svg",
                "phases.svg",
                "goodput.csv",
                "queues.csv",
                "phases.csv"
            ]
        );
        let csv = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let phases = csv("phases.csv");
        assert!(
            phases.starts_with(
                "source,phase,download_bps,upload_bps,ratio\nkernel,download alone,2290000,,\n"
            ),
            "{phases}"
        );
        assert!(csv("queues.csv").starts_with("queue,time_s,bytes\ndownlink,0,100\nuplink,0,200\n"));
        assert!(
            csv("goodput.csv").starts_with("source,flow,time_s,bps\nkernel,download,0,2000000\n")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
