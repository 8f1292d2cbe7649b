//! Seed 004 §2.1 (Fig. 3 and 4) on kernel TCP: ACK compression on a
//! symmetric link, without and with delayed ACKs.
//!
//! The link is 2.4 Mbit/s in both directions with 30 000 B buffers at both
//! ends. A download (INET → HOME) and an upload (HOME → INET) start
//! together and run for the whole case. The router's packet capture
//! ([`hopwise_lab::capture`]) gives the order in which packets leave each queue,
//! hence the ACK bursts (runs of pure ACKs between data packets), and each
//! queue's exact occupancy every 5 ms, hence the correlation of the two
//! queues. The paper finds long bursts (10–20 ACKs) and queues moving in
//! phase in the first case, and says the bursts mostly disappear with
//! delayed ACKs. `hopwise reproduce pendulum` runs the same two cases in the
//! simulator; the simulator keeps the bursts with delayed ACKs (median 8).
//! This experiment asks what a real stack does.
//!
//! Delayed ACKs are Linux's (an ACK for every second full-sized segment
//! when the application has read the data, a timer of 40 ms to 200 ms, quick
//! ACKs at the start of a connection); "no delayed ACKs" sets `quickack 1`
//! on both hosts' routes. The lab has no propagation delay: the two
//! directions are as symmetric as the kernel's timing lets them be, where
//! the paper's simulator puts every endpoint 1 ms from its router.

use super::outputs::{burst_rows, BurstRow};
use crate::pendulum as simp;
use anyhow::Result;
use hopwise_experiment::stats::{self, correlation};
use hopwise_experiment::{Claim, Ctx, Outputs, Progress, Reproduction};
use hopwise_lab::capture::{self, Capture};
use hopwise_lab::tc;
use hopwise_lab::topology::{
    self, AccessLab, AccessSpec, Buffer, Names, DOWN_DEV, HOME_ADDR, INET_ADDR, LEAF, UP_DEV,
};
use hopwise_lab::traffic::{goodput_bps, join_all, spawn_receiver, spawn_sender, Clock};
use hopwise_plot::{Chart, Figure, Series};
use hopwise_proto::time::Dur;
use serde::Serialize;
use std::net::SocketAddr;

pub const RATE_BPS: u64 = 2_400_000;
pub const BUFFER_BYTES: u64 = 30_000;
const DOWN_PORT: u16 = 5001;
const UP_PORT: u16 = 5002;
/// Seconds after the start that the queue statistics and goodput skip
/// (slow start), as the reproduction's `ACK_WARM`.
pub const WARM_S: f64 = 5.0;
/// Queue occupancy sample interval, as the reproduction's trace.
pub const SAMPLE_S: f64 = 0.005;
/// When the transfers start on the lab's clock.
const START_S: f64 = 0.5;

/// The two cases: (name, the paper's figure, delayed ACKs).
pub const CASES: [(&str, &str, bool); 2] = [
    ("equal delays, no delayed ACKs", "Fig. 3", false),
    ("equal delays, delayed ACKs", "Fig. 4", true),
];

/// What to run: `hopwise lab ack-compression`'s flags.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The hosts' congestion control (`reno` is Linux's NewReno with SACK).
    pub cc: String,
    /// Seconds per case.
    pub secs: u64,
    /// Also run both cases in the simulator (only with `reno`).
    pub sim: bool,
}

impl Plan {
    /// `reno`, the reproduction's 60 s per case (20 s quick), with the simulator.
    pub fn new(quick: bool) -> Plan {
        Plan {
            cc: "reno".into(),
            secs: Plan::secs_for(quick),
            sim: true,
        }
    }

    /// The plan's own errors (not the machine's), named by their flags;
    /// the run checks them too, so a caller may check before printing.
    pub fn check(&self) -> Result<()> {
        hopwise_lab::traffic::check_cc_and_secs(&self.cc, self.secs, WARM_S)?;
        Ok(())
    }

    /// Seconds per case: the reproduction's 60 s, or 20 s with `--quick`.
    pub fn secs_for(quick: bool) -> u64 {
        if quick {
            20
        } else {
            60
        }
    }
}

/// One case's measurements, from the kernel or the simulator: the
/// reproduction's record of a case (for the kernel: no endpoint delays,
/// queues sampled every 5 ms from the capture) and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    /// "kernel" or "simulator".
    pub source: String,
    #[serde(flatten)]
    pub m: simp::AckCase,
}

impl std::ops::Deref for CaseResult {
    type Target = simp::AckCase;
    fn deref(&self) -> &simp::AckCase {
        &self.m
    }
}

/// The capture's bookkeeping for one kernel case.
#[derive(Clone, Debug, Serialize)]
pub struct CaptureStats {
    pub case: String,
    pub packets_downlink: usize,
    pub packets_uplink: usize,
    /// Arrivals that never left: the buffers' drops.
    pub dropped_downlink: u64,
    pub dropped_uplink: u64,
    /// The same counted by the `bfifo` qdiscs (`tc -s`), when readable.
    pub tc_drops_downlink: Option<u64>,
    pub tc_drops_uplink: Option<u64>,
    /// Departures whose arrival was not captured, and packets that were not
    /// IPv4 TCP on a router port; both should be (near) zero.
    pub unmatched: u64,
    pub ignored: u64,
}

/// What the run measured (summary.json holds every field but `queues`).
#[derive(Clone, Debug, Serialize)]
pub struct Results {
    /// The running kernel's release.
    pub kernel: String,
    pub rate_bps: u64,
    pub buffer_bytes: u64,
    pub warmup_s: f64,
    pub queue_sample_s: f64,
    /// The kernel's cases, then the simulator's.
    pub cases: Vec<CaseResult>,
    pub capture: Vec<CaptureStats>,
    /// Per kernel case, the queues every 5 ms after the warm-up.
    #[serde(skip)]
    pub queues: Vec<Queues>,
}

impl Results {
    fn kernel(&self) -> Vec<&CaseResult> {
        self.cases.iter().filter(|c| c.source == "kernel").collect()
    }
    fn simulator(&self) -> Vec<&CaseResult> {
        self.cases
            .iter()
            .filter(|c| c.source == "simulator")
            .collect()
    }
}

/// Kernel queue samples of one case: (time, downlink, uplink) bytes.
pub type Queues = Vec<(f64, f64, f64)>;

fn spec(cc: &str, delayed_acks: bool) -> AccessSpec {
    AccessSpec {
        down_rate_bps: RATE_BPS,
        up_rate_bps: RATE_BPS,
        down_buffer: Buffer::Bytes(BUFFER_BYTES),
        up_buffer: Buffer::Bytes(BUFFER_BYTES),
        cc: cc.into(),
        delayed_acks,
        delay: None,
    }
}

/// Runs one case on kernel TCP.
fn run_kernel(
    plan: &Plan,
    (case, figure, delayed): (&str, &str, bool),
    progress: &dyn Progress,
) -> Result<(CaseResult, CaptureStats, Queues)> {
    let lab = AccessLab::build(&Names::new_instance(), &spec(&plan.cc, delayed))?;
    let clock = Clock::start();
    let stop = START_S + plan.secs as f64;
    let read_until = stop + 1.0;
    // The capture runs on until the queues have drained (30 000 B take
    // 0.1 s), so that an arrival that never left was a drop.
    let cap = capture::spawn(lab.rtr.open()?, UP_DEV, DOWN_DEV, clock, stop + 0.5)?;
    let receivers = [
        spawn_receiver(
            lab.home.open()?,
            HOME_ADDR,
            DOWN_PORT,
            clock,
            read_until,
            "download".into(),
        )?,
        spawn_receiver(
            lab.inet.open()?,
            INET_ADDR,
            UP_PORT,
            clock,
            read_until,
            "upload".into(),
        )?,
    ];
    let senders = [
        spawn_sender(
            lab.inet.open()?,
            SocketAddr::from((HOME_ADDR, DOWN_PORT)),
            plan.cc.clone(),
            clock,
            START_S,
            stop,
            "download".into(),
        )?,
        spawn_sender(
            lab.home.open()?,
            SocketAddr::from((INET_ADDR, UP_PORT)),
            plan.cc.clone(),
            clock,
            START_S,
            stop,
            "upload".into(),
        )?,
    ];
    progress.start(
        &format!("{figure} {case} (kernel, real time)"),
        read_until.ceil() as u64,
    );
    for s in 1..=read_until.ceil() as u64 {
        clock.sleep_until(s as f64);
        progress.inc();
    }
    progress.finish();
    let mut errors = Vec::new();
    join_all(senders, "sender", &mut errors);
    let bins = join_all(receivers, "receiver", &mut errors);
    let cap: Option<Capture> = join_all([cap], "capture", &mut errors).pop();
    // The buffers' own drop counters, to check the capture against.
    let tc_drops = lab.qdiscs().ok().map(|q| {
        let d = |dev| tc::find(&q, dev, LEAF).map_or(0, |s| s.drops);
        (d(DOWN_DEV), d(UP_DEV))
    });
    drop(lab);
    let (Some(cap), true) = (cap, errors.is_empty()) else {
        anyhow::bail!(
            "{figure} ({case}) on kernel TCP failed:\n  {}",
            errors.join("\n  ")
        );
    };

    let (t0, t1) = (START_S + WARM_S, stop);
    let down = cap.downlink.occupancy(t0, t1, SAMPLE_S);
    let up = cap.uplink.occupancy(t0, t1, SAMPLE_S);
    let qd: Vec<f64> = down.series.iter().map(|p| p.1).collect();
    let qu: Vec<f64> = up.series.iter().map(|p| p.1).collect();
    // Bursts over the whole transfer, as the simulator counts them.
    let hd = capture::ack_bursts(&cap.downlink.departures);
    let hu = capture::ack_bursts(&cap.uplink.departures);
    let result = CaseResult {
        source: "kernel".into(),
        m: simp::AckCase {
            case: case.into(),
            figure: figure.into(),
            delayed_ack: delayed,
            download_endpoint_delay_ms: 0.0,
            upload_endpoint_delay_ms: 0.0,
            median_burst: simp::hist_median(&simp::hist_sum(&hd, &hu)),
            median_burst_downlink: simp::hist_median(&hd),
            median_burst_uplink: simp::hist_median(&hu),
            queue_correlation: correlation(&qd, &qu),
            trace_ms: SAMPLE_S * 1e3,
            download_bps: goodput_bps(&bins[0], t0, t1),
            upload_bps: goodput_bps(&bins[1], t0, t1),
            mean_queue_down_bytes: stats::mean(&qd),
            mean_queue_up_bytes: stats::mean(&qu),
            histogram_downlink: hd,
            histogram_uplink: hu,
        },
    };
    let stats = CaptureStats {
        case: case.into(),
        packets_downlink: cap.downlink.departures.len(),
        packets_uplink: cap.uplink.departures.len(),
        dropped_downlink: down.dropped,
        dropped_uplink: up.dropped,
        tc_drops_downlink: tc_drops.map(|d| d.0),
        tc_drops_uplink: tc_drops.map(|d| d.1),
        unmatched: down.unmatched + up.unmatched,
        ignored: cap.ignored,
    };
    let queues = down
        .series
        .iter()
        .zip(&up.series)
        .map(|(d, u)| (d.0, d.1, u.1))
        .collect();
    Ok((result, stats, queues))
}

/// Runs one case in the simulator (the reproduction's setup: 1 ms from
/// every endpoint to its router, NewReno with SACK).
fn run_sim(secs: u64, (case, figure, delayed): (&str, &str, bool)) -> Result<CaseResult> {
    let s = simp::ack_setup(secs, delayed, Dur::from_millis(1));
    let sim = simp::simulate(&s, case)?;
    Ok(CaseResult {
        source: "simulator".into(),
        m: simp::ack_measure(&sim, &s, case, figure),
    })
}

fn opt_u(v: Option<u64>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

fn opt_f(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:+.2}"))
}

/// `hopwise lab ack-compression`.
pub struct LabAckCompression;

impl Reproduction for LabAckCompression {
    type Plan = Plan;
    type Results = Results;
    const NAME: &'static str = "lab-ack-compression";
    const ABOUT: &'static str = "seed 004, Fig. 3 and 4 on kernel TCP: ACK compression on a symmetric link, without and with delayed ACKs";
    const PAPER: &'static str = "seed 004: Heusse, Merritt, Brown, Duda, Two-way TCP connections: old problem, new insight (Fig. 3 and 4, kernel TCP)";
    const WALL: &'static str = "quick 2 × 21.5 s, full 2 × 61.5 s of real time";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Plan {
        Plan::new(quick)
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
            "kernel TCP ({}) in network namespaces, Linux {}; {} s per case",
            plan.cc,
            hopwise_lab::kstats::kernel_release(),
            plan.secs
        )]
    }

    fn title(&self) -> String {
        "hopwise lab ack-compression".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }
}

/// Runs both cases on kernel TCP, then (with `reno`) in the simulator.
fn run(plan: &Plan, progress: &dyn Progress) -> Result<Results> {
    topology::require()?;
    plan.check()?;
    let sim_on = hopwise_lab::traffic::sim_comparison(progress, &plan.cc, "reno", plan.sim);
    let mut cases = Vec::new();
    let mut captures = Vec::new();
    let mut queues = Vec::new();
    for c in CASES {
        let (r, st, q) = run_kernel(plan, c, progress)?;
        cases.push(r);
        captures.push(st);
        queues.push(q);
    }
    if sim_on {
        progress.start("simulator", CASES.len() as u64);
        for c in CASES {
            cases.push(run_sim(plan.secs, c)?);
            progress.inc();
        }
        progress.finish();
    }
    Ok(Results {
        kernel: hopwise_lab::kstats::kernel_release(),
        rate_bps: RATE_BPS,
        buffer_bytes: BUFFER_BYTES,
        warmup_s: WARM_S,
        queue_sample_s: SAMPLE_S,
        cases,
        capture: captures,
        queues,
    })
}

/// Judged on the kernel (one run per case: exact); the simulator beside.
fn claims(r: &Results) -> Vec<Claim> {
    let (kernel, sims) = (r.kernel(), r.simulator());
    let (Some(k0), Some(k1)) = (kernel.first(), kernel.get(1)) else {
        return Vec::new();
    };
    let sim_of = |i: usize, f: &dyn Fn(&CaseResult) -> String| -> String {
        sims.get(i)
            .map_or(String::new(), |s| format!("; simulator {}", f(s)))
    };
    let bursts = |r: &CaseResult| {
        format!(
            "median {} (downlink {}, uplink {})",
            opt_u(r.median_burst),
            opt_u(r.median_burst_downlink),
            opt_u(r.median_burst_uplink)
        )
    };
    let corr = |r: &CaseResult| format!("correlation {}", opt_f(r.queue_correlation));
    let median = |r: &CaseResult| r.median_burst.map_or(f64::NAN, |m| m as f64);
    let correlation = |r: &CaseResult| r.queue_correlation.unwrap_or(f64::NAN);
    let rates = |r: &CaseResult| {
        format!(
            "{:.0}/{:.0} kbit/s",
            r.download_bps / 1e3,
            r.upload_bps / 1e3
        )
    };
    vec![
        Claim::new(
            "Fig. 3, kernel TCP",
            "equal delays, no delayed ACKs: ACKs leave the buffers in bursts of 10 to 20, as in the paper's simulation (a real stack need not reproduce it: the paper calls it fragile)",
        )
        .measured(format!("{}{}", bursts(k0), sim_of(0, &bursts)))
        .at_least("median ACK burst", median(k0), 5.0),
        Claim::new(
            "Fig. 3.2, kernel TCP",
            "equal delays, no delayed ACKs: the two queues grow and shrink in phase, as in the paper's simulation",
        )
        .measured(format!("{}{}", corr(k0), sim_of(0, &corr)))
        .above("correlation of the two queues", correlation(k0), 0.0),
        Claim::new(
            "Fig. 4, kernel TCP",
            "delayed ACKs: ACK compression mostly disappears",
        )
        .measured(format!("{}{}", bursts(k1), sim_of(1, &bursts)))
        .at_most("median ACK burst", median(k1), 2.0),
        Claim::info(
            "Fig. 4, kernel TCP",
            "delayed ACKs leave the connections' evolution unchanged (download/upload goodput)",
            format!(
                "without {}, with {}; queues' correlation with delayed ACKs {}{}",
                rates(k0),
                rates(k1),
                opt_f(k1.queue_correlation),
                if sims.len() == 2 {
                    format!("; simulator {} and {}", rates(sims[0]), rates(sims[1]))
                } else {
                    String::new()
                }
            ),
        ),
    ]
}

/// `bursts.csv`: a histogram row, from the kernel or the simulator.
#[derive(Serialize, Default)]
struct SourceBurstRow {
    source: String,
    #[serde(flatten)]
    row: BurstRow,
}

/// `queues.csv`: the kernel's two queues every 5 ms.
#[derive(Serialize, Default)]
struct QueueRow {
    case: &'static str,
    time_s: f64,
    downlink_bytes: f64,
    uplink_bytes: f64,
}

fn outputs(plan: &Plan, r: &Results, out: &mut Outputs) -> Result<()> {
    let (kernel, sims) = (r.kernel(), r.simulator());
    let mut fig = Figure::new(
        format!(
            "ACK compression on kernel TCP ({}, Linux {}): symmetric 2.4/2.4 Mbit/s, 30 000 B buffers",
            plan.cc, r.kernel
        ),
        2,
    );
    // A 2 s zoom ending 2 s before the end, as the reproduction's Fig. 3.2.
    let z1 = START_S + plan.secs as f64 - 2.0;
    let z0 = (z1 - 2.0).max(START_S + WARM_S);
    for (i, ((name, figure, _), (k, q))) in
        CASES.iter().zip(kernel.iter().zip(&r.queues)).enumerate()
    {
        let zoom = |pick: fn(&(f64, f64, f64)) -> f64| -> Vec<(f64, f64)> {
            q.iter()
                .filter(|p| p.0 >= z0 && p.0 < z1)
                .map(|p| (p.0, pick(p) / 1e3))
                .collect()
        };
        fig.push_panel(
            Chart::new(format!(
                "{figure}, {name}: queues (correlation {})",
                opt_f(k.queue_correlation)
            ))
            .x_label("time (s)")
            .y_label("occupancy (kB)")
            .series(Series::line("R1 (downlink)", zoom(|p| p.1)))
            .series(Series::line("R2 (uplink)", zoom(|p| p.2))),
        );
        let sim_h;
        let mut groups: Vec<(&str, &Vec<u64>)> = vec![
            ("kernel R1 (downlink)", &k.histogram_downlink),
            ("kernel R2 (uplink)", &k.histogram_uplink),
        ];
        if let Some(s) = sims.get(i) {
            sim_h = simp::hist_sum(&s.histogram_downlink, &s.histogram_uplink);
            groups.push(("simulator (both queues)", &sim_h));
        }
        fig.push_panel(simp::burst_histogram(
            &format!(
                "{figure}: ACK bursts, kernel median {}{}",
                opt_u(k.median_burst),
                sims.get(i).map_or(String::new(), |s| format!(
                    ", simulator {}",
                    opt_u(s.median_burst)
                ))
            ),
            &groups,
        ));
    }
    out.svg("acks.svg", &fig.panel_size(620, 340))?;
    let mut rows = Vec::new();
    for c in &r.cases {
        for (queue, h) in [
            ("downlink", &c.histogram_downlink),
            ("uplink", &c.histogram_uplink),
        ] {
            rows.extend(
                burst_rows(&c.case, queue, h)
                    .into_iter()
                    .map(|row| SourceBurstRow {
                        source: c.source.clone(),
                        row,
                    }),
            );
        }
    }
    out.csv("bursts.csv", &rows)?;
    let rows: Vec<QueueRow> = CASES
        .iter()
        .zip(&r.queues)
        .flat_map(|(c, q)| {
            q.iter().map(|&(time_s, d, u)| QueueRow {
                case: c.0,
                time_s,
                downlink_bytes: d,
                uplink_bytes: u,
            })
        })
        .collect();
    out.csv("queues.csv", &rows)?;
    out.data(&["acks.svg"], &["bursts.csv", "queues.csv"]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_experiment::Verdict;

    fn case(
        source: &str,
        (name, figure, delayed): (&str, &str, bool),
        median: u64,
        corr: f64,
    ) -> CaseResult {
        CaseResult {
            source: source.into(),
            m: simp::AckCase {
                case: name.into(),
                figure: figure.into(),
                delayed_ack: delayed,
                download_endpoint_delay_ms: 0.0,
                upload_endpoint_delay_ms: 0.0,
                median_burst: Some(median),
                median_burst_downlink: Some(median),
                median_burst_uplink: Some(median),
                queue_correlation: Some(corr),
                trace_ms: 5.0,
                download_bps: 2.07e6,
                upload_bps: 2.07e6,
                mean_queue_down_bytes: 1e4,
                mean_queue_up_bytes: 1e4,
                histogram_downlink: vec![0, 8, 2],
                histogram_uplink: vec![0, 9, 1],
            },
        }
    }

    fn results() -> Results {
        Results {
            kernel: "test".into(),
            rate_bps: RATE_BPS,
            buffer_bytes: BUFFER_BYTES,
            warmup_s: WARM_S,
            queue_sample_s: SAMPLE_S,
            cases: vec![
                case("kernel", CASES[0], 1, -0.88),
                case("kernel", CASES[1], 1, -0.86),
                case("simulator", CASES[0], 16, 1.0),
                case("simulator", CASES[1], 8, 1.0),
            ],
            capture: Vec::new(),
            queues: vec![vec![(5.5, 1500.0, 0.0)], vec![(5.5, 0.0, 3000.0)]],
        }
    }

    #[test]
    fn the_kernel_is_judged_and_the_simulator_shown_beside() {
        let c = claims(&results());
        let v: Vec<Verdict> = c.iter().map(|c| c.verdict).collect();
        use Verdict::*;
        assert_eq!(v, [Differs, Differs, Holds, Info]);
        assert_eq!(
            c[0].measured,
            "median 1 (downlink 1, uplink 1); simulator median 16 (downlink 16, uplink 16)"
        );
        assert_eq!(c[0].criterion.as_deref(), Some("median ACK burst ≥ 5"));
        assert_eq!(c[2].criterion.as_deref(), Some("median ACK burst ≤ 2"));
        assert!(
            c[3].measured.contains("; simulator 2070/2070 kbit/s and"),
            "{}",
            c[3].measured
        );
    }

    #[test]
    fn outputs_keep_their_columns() {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-acks-{}", std::process::id()));
        let mut out = Outputs::new(&dir);
        outputs(&Plan::new(true), &results(), &mut out).unwrap();
        assert_eq!(out.files(), ["acks.svg", "bursts.csv", "queues.csv"]);
        let bursts = std::fs::read_to_string(dir.join("bursts.csv")).unwrap();
        assert!(bursts.starts_with(
            "source,case,queue,burst,count\nkernel,\"equal delays, no delayed ACKs\",downlink,1,8\n"
        ), "{bursts}");
        assert_eq!(bursts.lines().count(), 1 + 4 * 4);
        let q = std::fs::read_to_string(dir.join("queues.csv")).unwrap();
        assert_eq!(
            q,
            "case,time_s,downlink_bytes,uplink_bytes\n\"equal delays, no delayed ACKs\",5.5,1500,0\n\"equal delays, delayed ACKs\",5.5,0,3000\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
