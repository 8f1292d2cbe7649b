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
use crate::{write_csv, write_summary, Claim, Outcome, Progress};
use anyhow::{Context, Result};
use hopwise_lab::kstats::kernel_release;
use hopwise_lab::tc;
use hopwise_lab::topology::{
    self, AccessLab, AccessSpec, Buffer, Names, DOWN_DEV, HOME_ADDR, INET_ADDR, LEAF, UP_DEV,
};
use hopwise_lab::traffic::{
    goodput_bps, join_all, per_second, spawn_receiver, spawn_sender, Clock, BIN_S,
};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use hopwise_proto::tcp::RttEstimatorKind;
use hopwise_proto::time::Dur;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

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

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub out: PathBuf,
    /// The hosts' congestion control (`reno` is Linux's NewReno with SACK).
    pub cc: String,
    pub down_buffer: Buffer,
    pub up_buffer: Buffer,
    /// Simulator runs per setting (different start jitter); 0 skips the simulator.
    pub sim_seeds: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            quick: false,
            out: PathBuf::from("out/lab-pendulum"),
            cc: "reno".into(),
            down_buffer: Buffer::Bytes(30_000),
            up_buffer: Buffer::Bytes(30_000),
            sim_seeds: 3,
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
        let m = |f: fn(&Phases) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
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

#[derive(Serialize)]
struct Summary<'a> {
    experiment: &'static str,
    command: Option<&'a str>,
    kernel: String,
    cc: &'a str,
    link: &'a AccessSpec,
    timeline: &'a Timeline,
    kernel_tcp: &'a Phases,
    simulator: &'a [Phases],
    simulator_runs: u32,
    /// Eq. 11's r = Xd/Xu for this link (T_p = 0 and 1–5 ms endpoints, as the simulator).
    model_r: f64,
    /// C_d / C_u: both links are full at r = k.
    capacity_ratio_k: f64,
    queues: &'a [QueueStats],
    queue_sample_interval_s: f64,
    claims: &'a [Claim],
}

/// The simulator's setup for this timeline and these buffers.
fn sim_setup(
    tl: &Timeline,
    opts: &Options,
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
    s.down_buffer = opts.down_buffer.limit();
    s.up_buffer = opts.up_buffer.limit();
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
type QueueSamples = Vec<(f64, u64, u64)>;

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
    // Join every thread before reporting, and report every failure: a
    // receiver's error usually explains a sender's broken pipe.
    let mut errors = Vec::new();
    join_all(senders, "sender", &mut errors);
    let bins = join_all(receivers, "receiver", &mut errors);
    if let Some(e) = line_failed {
        return Err(e);
    }
    if !errors.is_empty() {
        anyhow::bail!("the kernel run failed:\n  {}", errors.join("\n  "));
    }
    let final_stats = lab.qdiscs().unwrap_or(last);
    Ok((bins, samples, final_stats))
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`).
fn kbit(bps: f64) -> String {
    format!("{:.0} kbit/s", bps / 1e3)
}

/// Runs the experiment and writes its outputs into `opts.out`.
pub fn run(opts: &Options, command: Option<&str>, progress: &dyn Progress) -> Result<Outcome> {
    topology::require()?;
    hopwise_lab::traffic::check_cc(&opts.cc)?;
    let sim_on =
        hopwise_lab::traffic::sim_comparison(progress, &opts.cc, "reno", opts.sim_seeds > 0);
    let tl = if opts.quick {
        Timeline::quick()
    } else {
        Timeline::paper()
    };
    let spec = AccessSpec {
        down_rate_bps: DOWN_RATE_BPS,
        up_rate_bps: UP_RATE_BPS,
        down_buffer: opts.down_buffer,
        up_buffer: opts.up_buffer,
        cc: opts.cc.clone(),
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
    let sim_runs = if sim_on { opts.sim_seeds } else { 0 };
    if sim_runs > 0 {
        progress.start("simulator", SIM_SETTINGS.len() as u64 * sim_runs as u64);
        for &(label, rto) in SIM_SETTINGS {
            let mut runs = Vec::new();
            for seed in 1..=sim_runs as u64 {
                let sim = simp::simulate(&sim_setup(&tl, opts, rto, seed), "lab-pendulum")?;
                runs.push(Phases::from_fn(label, &tl.windows, &|f, w| {
                    simp::goodput_between(&sim, f, w.0, w.1)
                }));
                if seed == 1 && rto == SIM_SETTINGS[0].1 {
                    for f in 0..sim.flows.len() {
                        let g = &sim.endpoints[simp::receiver(&sim, f)].goodput;
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
    let setup = sim_setup(&tl, opts, SIM_SETTINGS[0].1, 1);
    let model = setup.model();
    let (model_r, k) = (model.ratio(), model.capacity_ratio());

    // Queues.
    let queues: Vec<QueueStats> = [
        (
            "downlink",
            DOWN_DEV,
            opts.down_buffer,
            (|s| s.1) as fn(&(f64, u64, u64)) -> u64,
        ),
        ("uplink", UP_DEV, opts.up_buffer, |s| s.2),
    ]
    .iter()
    .map(|&(name, dev, buf, pick)| {
        let in_window = |w: (f64, f64)| -> Vec<u64> {
            samples
                .iter()
                .filter(|s| s.0 >= w.0 && s.0 < w.1)
                .map(pick)
                .collect()
        };
        let mut mean_bytes = [0.0; 3];
        let mut empty_share = [0.0; 3];
        for (i, &w) in tl.windows.iter().enumerate() {
            let v = in_window(w);
            let n = v.len().max(1) as f64;
            mean_bytes[i] = v.iter().sum::<u64>() as f64 / n;
            empty_share[i] = v.iter().filter(|&&b| b == 0).count() as f64 / n;
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

    // Claims: the reproduction's Fig. 1 criteria, judged on kernel TCP.
    let sim_ratio = |f: fn(&Phases) -> f64| -> String {
        if sims.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = sims
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
        crate::legacy_claim(
            "Fig. 1, kernel TCP",
            "without uploads the download gets at least 90 % of 2.4 Mbit/s",
            format!(
                "{} ({:.1} %; 1448 B of payload per 1514 B Ethernet frame is 95.6 %)",
                kbit(alone),
                alone / DOWN_RATE_BPS as f64 * 100.0
            ),
            alone >= 0.9 * DOWN_RATE_BPS as f64,
        ),
        crate::legacy_claim(
            "Fig. 1, kernel TCP",
            "while one upload runs, the download falls to at most 3× the upload's goodput",
            format!(
                "{} against {}: ratio {:.2}{}",
                kbit(kernel.download_one_upload_bps),
                kbit(kernel.upload_one_bps),
                kernel.ratio_one(),
                sim_ratio(Phases::ratio_one)
            ),
            kernel.ratio_one() <= 3.0,
        ),
        crate::legacy_claim(
            "Fig. 1, kernel TCP",
            "while two uploads run, the download falls to at most 3× their goodput",
            format!(
                "{} against {}: ratio {:.2}{}",
                kbit(kernel.download_two_uploads_bps),
                kbit(kernel.uploads_two_bps),
                kernel.ratio_two(),
                sim_ratio(Phases::ratio_two)
            ),
            kernel.ratio_two() <= 3.0,
        ),
        Claim::info(
            "Eq. 11",
            "the model's throughput ratio r = Xd/Xu for this link",
            format!(
                "r = {model_r:.2} (k = C_d/C_u = {k:.2}); kernel TCP {:.2} with one upload",
                kernel.ratio_one()
            ),
        ),
    ];
    let up = &queues[1];
    let down = &queues[0];
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

    // Outputs.
    let dir = &opts.out;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut files = Vec::new();
    let names: Vec<String> = std::iter::once("download".to_string())
        .chain((1..=tl.uploads.len()).map(|i| format!("upload {i}")))
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
    let mut rows = Vec::new();
    for (src, series) in [("kernel", &kernel_series), ("simulator", &sim_series)] {
        for (f, s) in series.iter().enumerate() {
            for &(t, v) in s {
                rows.push(vec![
                    src.into(),
                    names[f].clone(),
                    format!("{t}"),
                    format!("{v:.0}"),
                ]);
            }
        }
    }
    write_csv(
        &dir.join("goodput.csv"),
        &["source", "flow", "time_s", "bps"],
        &rows,
    )?;
    files.push("goodput.csv".to_string());
    let rows: Vec<Vec<String>> = samples
        .iter()
        .flat_map(|&(t, d, u)| {
            [("downlink", d), ("uplink", u)]
                .map(|(q, b)| vec![q.to_string(), format!("{t:.3}"), b.to_string()])
        })
        .collect();
    write_csv(
        &dir.join("queues.csv"),
        &["queue", "time_s", "bytes"],
        &rows,
    )?;
    files.push("queues.csv".to_string());
    let phase_names = ["download alone", "one upload", "two uploads"];
    let mut rows = Vec::new();
    for p in std::iter::once(&kernel).chain(sims.iter()) {
        let v = [
            (p.download_alone_bps, f64::NAN),
            (p.download_one_upload_bps, p.upload_one_bps),
            (p.download_two_uploads_bps, p.uploads_two_bps),
        ];
        for (i, (d, u)) in v.iter().enumerate() {
            rows.push(vec![
                p.source.clone(),
                phase_names[i].into(),
                format!("{d:.0}"),
                if u.is_nan() {
                    String::new()
                } else {
                    format!("{u:.0}")
                },
                if u.is_nan() {
                    String::new()
                } else {
                    format!("{:.3}", d / u)
                },
            ]);
        }
    }
    write_csv(
        &dir.join("phases.csv"),
        &["source", "phase", "download_bps", "upload_bps", "ratio"],
        &rows,
    )?;
    files.push("phases.csv".to_string());

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
            samples.iter().map(|s| (s.0, s.1 as f64 / 1e3)).collect(),
        ))
        .series(Series::line(
            "uplink",
            samples.iter().map(|s| (s.0, s.2 as f64 / 1e3)).collect(),
        ));
    let mut fig = Figure::new(
        format!(
            "Download and uploads on 2.4 Mbit/s / 196 kbit/s, buffers {} / {}",
            opts.down_buffer, opts.up_buffer
        ),
        1,
    )
    .panel(goodput_chart(
        &format!("Kernel TCP ({}, Linux {})", opts.cc, kernel_release()),
        &kernel_series,
    ));
    if !sim_series.is_empty() {
        fig = fig.panel(goodput_chart(
            "hopwise simulator (NewReno, SACK, min RTO 1 s), seed 1",
            &sim_series,
        ));
    }
    fig = fig.panel(queue_chart);
    fig.write_svg(dir.join("fig1.svg"))?;
    files.insert(0, "fig1.svg".to_string());
    let mut bars = BarChart::new("Download ÷ upload goodput while uploads run")
        .y_label("ratio Xd/Xu")
        .x_label("phase");
    for p in std::iter::once(&kernel).chain(sims.iter()) {
        bars = bars.group(
            p.source.clone(),
            vec![
                ("one upload".into(), p.ratio_one()),
                ("two uploads".into(), p.ratio_two()),
            ],
        );
    }
    bars.write_svg(dir.join("phases.svg"))?;
    files.insert(1, "phases.svg".to_string());

    write_summary(
        dir,
        &Summary {
            experiment: "lab pendulum (seed 004, Fig. 1, kernel TCP)",
            command,
            kernel: kernel_release(),
            cc: &opts.cc,
            link: &spec,
            timeline: &tl,
            kernel_tcp: &kernel,
            simulator: &sims,
            simulator_runs: sim_runs,
            model_r,
            capacity_ratio_k: k,
            queues: &queues,
            queue_sample_interval_s: BIN_S,
            claims: &claims,
        },
    )?;
    files.insert(0, "summary.json".to_string());
    Ok(Outcome {
        claims,
        files,
        data: vec![
            ("fig1.svg".into(), "goodput.csv".into()),
            ("fig1.svg".into(), "queues.csv".into()),
        ],
    })
}
