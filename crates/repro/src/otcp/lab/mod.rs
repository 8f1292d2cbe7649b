//! Seed 001's Table 1 on kernel TCP: one transfer over the direct path and
//! split into 2, 3 and 4 hops through `hopwise otcp relay` processes, over
//! wide-area links with the paper's RTTs ([`hopwise_lab::wan`]), beside the
//! simulator's run of the same paths and the paper.
//!
//! The hosts: `client`, `server`, and the relays of each chain (`p2r1`;
//! `p3r1`, `p3r2`; `p4r1` … `p4r3`). Every chain has links of its own,
//! each with the path RTT of Table 1 (the simulator's choice: every hop as
//! slow as the path allows), and the direct path is one link client–server
//! of 75.7 ms. In the client's namespace, `hopwise otcp forward` sends the
//! connections of each chain through its relays; the direct transfer
//! connects to the server itself.
//!
//! Each transfer: the client connects, writes `size` bytes, half-closes,
//! and the server reads to the end; the time runs from the client's
//! connect to the server's end of stream, on one clock, as in the
//! simulator. Paths take turns, so that a slow drift of the machine does
//! not favour one. Before measuring, a short transfer over each path
//! resolves ARP across the delay line (the simulator has no ARP), and no
//! host keeps TCP metrics between connections (`tcp_no_metrics_save`), so
//! each transfer starts afresh, as in the simulator.
//!
//! The three regimes of the reproduction (`hopwise reproduce otcp`): loss
//! on every link (0.3 %), loss in proportion to the link's RTT, and no loss
//! with a small receive buffer. The kernel's TCP is `reno` (NewReno with
//! SACK) by default, with delayed ACKs and an initial window of 3 on every
//! route (RFC 3390, as in the simulator). Its receive window comes from the
//! buffer through the kernel's own ratio, so in the window regime the lab
//! sets `tcp_rmem` to twice the simulator's 32 KiB and reports the window
//! the direct rate implies.

use crate::otcp::{table1_hops, Regime, FILE, TABLE1};
use anyhow::Result;
use hopwise_experiment::stats::{bootstrap_groups_ci90, harmonic_mean, median};
use hopwise_experiment::{Claim, Cmp, Ctx, Estimate, Outputs, Reproduction};
use hopwise_lab::delay::{LaneRow, LinkStats};
use hopwise_lab::traffic::Clock;
use hopwise_overlay::otcp::chain::run_path;
use hopwise_plot::BarChart;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

mod kernel;
pub(crate) use kernel::otcp_args;
use kernel::{run_regime, window_rmem};

const SERVER_PORT: u16 = 5001;
const RELAY_PORT: u16 = 7000;
/// The forwarder of the chain of `k` hops listens on 127.0.0.1:(7100 + k).
const FORWARD_PORT: u16 = 7100;
/// The warm-up transfer over each path.
const WARMUP_BYTES: u64 = 100_000;
/// How long one write or read of a transfer may block.
const TRANSFER_LIMIT: Duration = Duration::from_secs(300);
/// The gain of every split path must be within this fraction of the
/// simulator's for the lab and the model to agree (fixed before the first
/// run).
pub const AGREE: f64 = 0.2;
/// With random loss, the runs per path (and simulator seeds) needed for a
/// verdict: one 4 MB transfer is a lottery on where its first loss falls,
/// and the median of five moved by ×2 between runs of the lab.
pub const LOSS_VERDICT_RUNS: u32 = 20;

/// `hopwise lab otcp`: its plan is [`Options`].
pub struct LabOtcp;

/// What to run (the plan: summary.json records it).
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// The `hopwise` executable that runs the relays and the forwarders.
    pub exe: PathBuf,
    pub regimes: Vec<Regime>,
    /// Transfers per path in every regime; `None`: [`Options::runs_for`]'s
    /// defaults.
    pub runs: Option<u32>,
    pub size: u64,
    /// Congestion control of every host (its namespace's default).
    pub cc: String,
    /// Simulator transfers per path for the comparison (0: none).
    pub sim_seeds: u32,
    /// Seeds the delay line's loss.
    pub seed: u64,
}

impl Options {
    /// Every regime, 3 runs per path of the paper's 4 MB without loss and
    /// 20 with it, 40 simulator seeds; `quick`: one run in the window
    /// regime (without loss one run says as much as several; with it one
    /// run is noise).
    pub fn new(exe: PathBuf, quick: bool) -> Options {
        Options {
            exe,
            regimes: if quick {
                vec![Regime::Window]
            } else {
                Regime::ALL.to_vec()
            },
            runs: quick.then_some(1),
            size: FILE,
            cc: "reno".into(),
            sim_seeds: if quick { 4 } else { 40 },
            seed: 1,
        }
    }

    /// Transfers per path in `regime`: `runs`, or 3 without loss (the
    /// kernel's rate then varies by well under 1 %) and
    /// [`LOSS_VERDICT_RUNS`] with it.
    pub fn runs_for(&self, regime: Regime) -> u32 {
        self.runs.unwrap_or(match regime {
            Regime::Window => 3,
            Regime::Loss | Regime::LossRtt => LOSS_VERDICT_RUNS,
        })
    }

    /// The options' own errors, named by their flags.
    pub fn check(&self) -> Result<()> {
        hopwise_lab::traffic::check_cc(&self.cc)?;
        if let Some(r) = self.runs {
            anyhow::ensure!((1..=50).contains(&r), "--runs {r}: 1 to 50");
        }
        anyhow::ensure!(
            (WARMUP_BYTES..=1_000_000_000).contains(&self.size),
            "--size {}: {WARMUP_BYTES} B to 1 GB",
            self.size
        );
        anyhow::ensure!(!self.regimes.is_empty(), "--regimes: at least one");
        anyhow::ensure!(
            self.sim_seeds <= 100,
            "--sim-seeds {}: at most 100",
            self.sim_seeds
        );
        anyhow::ensure!(
            self.exe.is_file(),
            "{}: not the hopwise executable (it runs the relays and the forwarders)",
            self.exe.display()
        );
        Ok(())
    }
}

/// One measured transfer (a row of `transfers.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Transfer {
    pub regime: Regime,
    pub hops: usize,
    pub run: u32,
    /// From the client's connect to the server's end of stream.
    pub secs: f64,
    pub goodput_bps: f64,
    /// From the client's connect to the first byte at the server.
    pub first_byte_s: f64,
}

/// One path of one regime: the lab's mean, the simulator's and the paper's
/// (a row of `points.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Point {
    pub regime: Regime,
    pub hops: usize,
    pub path_rtt_ms: f64,
    /// Transfers measured.
    pub runs: u32,
    /// The transfers' bytes over their mean time (the harmonic mean of
    /// their goodputs: the rate of transfers made back to back). With
    /// random loss a few transfers whose first loss comes late are many
    /// times faster than the rest; this mean is moved little by them, the
    /// plain mean of goodputs a lot and, over 20 runs, the median too.
    pub lab_goodput_bps: f64,
    pub lab_median_bps: f64,
    /// `lab_goodput_bps` over the direct path's.
    pub lab_gain: f64,
    /// The same over the simulator's seeds.
    pub sim_goodput_bps: Option<f64>,
    pub sim_median_bps: Option<f64>,
    pub sim_gain: Option<f64>,
    pub paper_gain: f64,
}

/// What the runs measured.
#[derive(Debug, Default, Serialize)]
pub struct Results {
    kernel: String,
    window_regime_tcp_rmem: String,
    pub points: Vec<Point>,
    pub transfers: Vec<Transfer>,
    pub links: Vec<RegimeLinks>,
    /// Per regime run, the goodputs of each path's transfers, for the
    /// claims' intervals.
    #[serde(skip)]
    samples: Vec<RegimeSamples>,
}

/// One regime's goodputs (bit/s), per path in [`TABLE1`]'s order: the
/// lab's transfers and the simulator's seeds.
#[derive(Debug)]
struct RegimeSamples {
    regime: Regime,
    lab: Vec<Vec<f64>>,
    sim: Vec<Vec<f64>>,
}

/// What the delay line did in one regime.
#[derive(Clone, Debug, Serialize)]
pub struct RegimeLinks {
    pub regime: Regime,
    pub links: Vec<LinkStats>,
}

/// The simulator's goodputs over `seeds` transfers of each path.
fn simulate(regime: Regime, size: u64, seeds: u32) -> Result<Vec<Vec<f64>>> {
    let (t, wan) = regime.setup(size);
    TABLE1
        .iter()
        .map(|&(k, rtt, _)| {
            (1..=seeds as u64)
                .map(|seed| {
                    run_path(&table1_hops(k, rtt), &t, &wan, seed)
                        .map(|r| r.goodput_bps)
                        .map_err(|e| anyhow::anyhow!("simulator, {}: {e}", regime.name()))
                })
                .collect()
        })
        .collect()
}

/// Each value over the first; missing where either is.
fn gains(xs: &[Option<f64>]) -> Vec<Option<f64>> {
    let base = xs.first().copied().flatten();
    xs.iter()
        .map(|x| match (x, base) {
            (Some(x), Some(b)) if b > 0.0 => Some(x / b),
            _ => None,
        })
        .collect()
}

fn times(xs: &[Option<f64>]) -> String {
    xs.iter()
        .skip(1)
        .map(|g| g.map_or("-".into(), |g| format!("×{g:.2}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rate of each path: the transfers' bytes over their mean time.
fn rates(runs: &[Vec<f64>]) -> Vec<Option<f64>> {
    runs.iter().map(|x| harmonic_mean(x)).collect()
}

/// One regime's points (lab, simulator, paper) from its transfers.
fn points(regime: Regime, lab_runs: &[Vec<f64>], sim_runs: &[Vec<f64>]) -> Vec<Point> {
    let (lab, sim) = (rates(lab_runs), rates(sim_runs));
    let (lab_gain, sim_gain) = (gains(&lab), gains(&sim));
    let paper = gains(&TABLE1.map(|r| Some(r.2)));
    let med = |xs: &[f64]| (!xs.is_empty()).then(|| median(xs));
    TABLE1
        .iter()
        .enumerate()
        .map(|(i, &(k, rtt, _))| Point {
            regime,
            hops: k,
            path_rtt_ms: rtt,
            runs: lab_runs[i].len() as u32,
            lab_goodput_bps: lab[i].unwrap_or(f64::NAN),
            lab_median_bps: med(&lab_runs[i]).unwrap_or(f64::NAN),
            lab_gain: lab_gain[i].unwrap_or(f64::NAN),
            sim_goodput_bps: sim[i],
            sim_median_bps: med(&sim_runs[i]),
            sim_gain: sim_gain[i],
            paper_gain: paper[i].unwrap_or(f64::NAN),
        })
        .collect()
}

/// Kernel gain over simulator gain on split path `k` (an index into
/// [`TABLE1`]), with a bootstrap interval that resamples the kernel's
/// transfers of each path on their own and the simulator's seeds together
/// (every path runs seeds 1..=n, so the simulator's gain pairs them).
fn agreement(regime: Regime, k: usize, lab: &[Vec<f64>], sim: &[Vec<f64>]) -> Estimate {
    let ratio = |l0: &[f64], lk: &[f64], s0: &[f64], sk: &[f64]| -> f64 {
        let g = |a: &[f64], b: &[f64]| harmonic_mean(b).zip(harmonic_mean(a)).map(|(b, a)| b / a);
        match (g(l0, lk), g(s0, sk)) {
            (Some(a), Some(b)) => a / b,
            _ => f64::NAN,
        }
    };
    let value = ratio(&lab[0], &lab[k], &sim[0], &sim[k]);
    let n = sim[0].len().min(sim[k].len());
    let sizes = [lab[0].len(), lab[k].len(), n];
    let ci = bootstrap_groups_ci90(
        &sizes,
        hopwise_experiment::stats::RESAMPLES,
        &format!("lab-otcp/{}/{k}", regime.name()),
        |idx| {
            let pick =
                |xs: &[f64], g: usize| -> Vec<f64> { idx[g].iter().map(|&i| xs[i]).collect() };
            ratio(
                &pick(&lab[0], 0),
                &pick(&lab[k], 1),
                &pick(&sim[0], 2),
                &pick(&sim[k], 2),
            )
        },
    );
    Estimate::bootstrap(value, ci, lab[k].len())
}

impl Reproduction for LabOtcp {
    type Plan = Options;
    type Results = Results;
    const NAME: &'static str = "lab-otcp";
    const ABOUT: &'static str = "seed 001 on kernel TCP: Table 1's paths direct and through hopwise otcp relay processes, over delayed links";
    const PAPER: &'static str = "seed 001: Pucha and Hu, Overlay TCP: Ending End-to-End Transport for Higher Throughput (SIGCOMM 2005 poster)";
    const WALL: &'static str = "quick about 30 s, full about 16 min";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Options {
        Options::new(std::env::current_exe().unwrap_or_default(), quick)
    }

    fn title(&self) -> String {
        "hopwise lab otcp".into()
    }

    fn doc(&self) -> String {
        "crates/lab/README.md".into()
    }

    fn facts(&self, o: &Options) -> Vec<String> {
        let plan = o
            .regimes
            .iter()
            .map(|&r| format!("{} ×{}", r.name(), o.runs_for(r)))
            .collect::<Vec<_>>()
            .join(", ");
        vec![format!(
            "hopwise otcp relay and forward over kernel TCP ({}), in network namespaces, Linux {}; links delayed in user space; {} B per transfer; runs per path: {plan}; {} simulator seeds",
            o.cc,
            hopwise_lab::kstats::kernel_release(),
            o.size,
            o.sim_seeds,
        )]
    }

    /// Runs every regime; the outputs are rewritten after each, so a run
    /// that fails later keeps what it measured.
    fn run(&self, opts: &Options, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require()?;
        opts.check()?;
        let clock = Clock::start();
        let mut r = Results {
            kernel: hopwise_lab::kstats::kernel_release(),
            window_regime_tcp_rmem: window_rmem(),
            ..Results::default()
        };
        for &regime in &opts.regimes {
            let (t, l) = run_regime(opts, ctx.out, regime, clock, ctx.progress)?;
            let sim = simulate(regime, opts.size, opts.sim_seeds)?;
            let lab: Vec<Vec<f64>> = TABLE1
                .iter()
                .map(|&(k, _, _)| {
                    t.iter()
                        .filter(|x| x.hops == k)
                        .map(|x| x.goodput_bps)
                        .collect()
                })
                .collect();
            r.points.extend(points(regime, &lab, &sim));
            r.samples.push(RegimeSamples { regime, lab, sim });
            r.transfers.extend(t);
            r.links.push(RegimeLinks { regime, links: l });
            ctx.checkpoint(&r)?;
        }
        Ok(r)
    }

    fn claims(&self, opts: &Options, r: &Results) -> Vec<Claim> {
        let mut claims: Vec<Claim> = r
            .samples
            .iter()
            .map(|s| regime_claim(opts, s.regime, &s.lab, &s.sim))
            .collect();
        // The delay line itself: how late frames left, and what it dropped.
        let lanes: Vec<&hopwise_lab::delay::LaneStats> = r
            .links
            .iter()
            .flat_map(|r| r.links.iter().flat_map(|l| [&l.ab, &l.ba]))
            .collect();
        if !lanes.is_empty() {
            claims.push(Claim::info(
                "the lab's delay line",
                "frames leave after their link's one-way delay (19.65–37.85 ms here), a little late: the last frames of a burst wait for those before them to be written",
                hopwise_lab::delay::lateness_summary(&lanes),
            ));
        }
        let lossy: Vec<String> = r
            .links
            .iter()
            .filter(|r| r.regime != Regime::Window)
            .map(|r| {
                let (lost, frames) = r.links.iter().fold((0, 0), |(a, b), l| {
                    (a + l.ab.lost + l.ba.lost, b + l.ab.frames + l.ba.frames)
                });
                format!(
                    "{}: {:.3} % of {frames} frames",
                    r.regime.name(),
                    100.0 * lost as f64 / frames.max(1) as f64
                )
            })
            .collect();
        if !lossy.is_empty() {
            claims.push(Claim::info(
                "the lab's delay line",
                "random loss as configured (0.3 % per frame on every link, or in proportion to the link's RTT)",
                lossy.join("; "),
            ));
        }
        claims
    }

    fn outputs(&self, _: &Options, r: &Results, out: &mut Outputs) -> Result<()> {
        out.svg("gains.svg", &gains_chart(&r.points))?;
        out.svg("goodput.svg", &goodput_chart(&r.points))?;
        out.csv("points.csv", &r.points)?;
        out.csv("transfers.csv", &r.transfers)?;
        #[derive(Default, Serialize)]
        struct LinkRow {
            regime: Regime,
            #[serde(flatten)]
            lane: LaneRow,
        }
        let rows: Vec<LinkRow> = r
            .links
            .iter()
            .flat_map(|rl| {
                rl.links
                    .iter()
                    .flat_map(LinkStats::rows)
                    .map(|lane| LinkRow {
                        regime: rl.regime,
                        lane,
                    })
            })
            .collect();
        out.csv("links.csv", &rows)?;
        out.data(&["gains.svg", "goodput.svg"], &["points.csv"]);
        Ok(())
    }
}

/// Kernel against simulator in one regime: every split path's gain within
/// [`AGREE`] of the simulator's, judged only with enough runs under loss.
fn regime_claim(opts: &Options, regime: Regime, lab: &[Vec<f64>], sim: &[Vec<f64>]) -> Claim {
    let (lab_rate, sim_rate) = (rates(lab), rates(sim));
    let mbit = |x: Option<f64>| x.map_or("-".into(), |x| format!("{:.2}", x / 1e6));
    let range = |xs: &[f64]| {
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(0.0, f64::max);
        format!("{:.1}–{:.1}", lo / 1e6, hi / 1e6)
    };
    let med = |xs: &[f64]| (!xs.is_empty()).then(|| median(xs));
    let window = if regime == Regime::Window {
        format!(
            "; the direct rate implies a {:.0} KiB window",
            lab_rate[0].unwrap_or(f64::NAN) / 8.0 * TABLE1[0].1 / 1e3 / 1024.0
        )
    } else {
        String::new()
    };
    let measured = format!(
        "kernel TCP ({}): {} ({} runs per path); simulator: {} ({} seeds); direct {} Mbit/s, median {}, runs {} (simulator {}, median {}{}){window}",
        opts.cc,
        times(&gains(&lab_rate)),
        opts.runs_for(regime),
        times(&gains(&sim_rate)),
        opts.sim_seeds,
        mbit(lab_rate[0]),
        mbit(med(&lab[0])),
        range(&lab[0]),
        mbit(sim_rate[0]),
        mbit(med(&sim[0])),
        if sim[0].is_empty() {
            String::new()
        } else {
            format!(", seeds {}", range(&sim[0]))
        },
    );
    let figure = format!("Table 1, {} (kernel)", regime.name());
    let claim = format!(
        "{}: splitting the path into 2, 3, 4 hops raises the rate ×1.13, ×1.52, ×1.74 (paper); kernel TCP's gains (bytes over mean transfer time) agree with the simulator's",
        regime.describe()
    );
    if opts.sim_seeds == 0 {
        return Claim::info(figure, regime.describe(), measured);
    }
    let enough = regime == Regime::Window
        || (opts.runs_for(regime) >= LOSS_VERDICT_RUNS && opts.sim_seeds >= LOSS_VERDICT_RUNS);
    if !enough {
        // One 4 MB transfer under random loss is a lottery on where its
        // first loss falls: a few runs cannot be judged.
        return Claim::info(
            figure,
            format!(
                "{claim} (no verdict below {LOSS_VERDICT_RUNS} runs and seeds: random loss makes one transfer's rate heavy-tailed)"
            ),
            measured,
        );
    }
    let split = (1..TABLE1.len()).map(|k| {
        (
            format!("{} hops", TABLE1[k].0),
            agreement(regime, k, lab, sim),
        )
    });
    Claim::new(figure, claim).measured(measured).each(
        "kernel gain over simulator gain",
        split,
        Cmp::Within {
            target: 1.0,
            rel: AGREE,
        },
    )
}

fn gains_chart(points: &[Point]) -> BarChart {
    let mut c = BarChart::new(
        "oTCP on kernel TCP: rate (bytes over mean transfer time) over the direct path's, by hops",
    )
    .x_label("regime, hops")
    .y_label("gain over direct (×)")
    .size(960, 420)
    .group("paper", series(points, &|p| Some(p.paper_gain)));
    if points.iter().any(|p| p.sim_gain.is_some()) {
        c = c.group("simulator", series(points, &|p| p.sim_gain));
    }
    c.group("kernel", series(points, &|p| Some(p.lab_gain)))
}

fn goodput_chart(points: &[Point]) -> BarChart {
    let mut c = BarChart::new("oTCP on kernel TCP: bytes over mean transfer time, by hops")
        .x_label("regime, hops")
        .y_label("goodput (Mbit/s)")
        .size(960, 420);
    if points.iter().any(|p| p.sim_gain.is_some()) {
        c = c.group(
            "simulator (median)",
            series(points, &|p| p.sim_median_bps.map(|v| v / 1e6)),
        );
    }
    c.group(
        "kernel (median)",
        series(points, &|p| Some(p.lab_median_bps / 1e6)),
    )
}

/// One cluster per regime and hop count.
fn series(points: &[Point], f: &dyn Fn(&Point) -> Option<f64>) -> Vec<(String, f64)> {
    points
        .iter()
        .filter_map(|p| f(p).map(|v| (format!("{} {}", p.regime.name(), p.hops), v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::kernel::{schedule, spec};
    use super::*;

    #[test]
    fn every_path_is_its_own_chain_of_links_with_the_table_rtt() {
        let (s, paths) = spec(Regime::LossRtt, "reno");
        s.check().unwrap();
        assert_eq!(s.hosts.len(), 2 + 1 + 2 + 3);
        assert_eq!(paths.iter().map(Vec::len).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(s.links.len(), 10);
        for (p, path) in paths.iter().enumerate() {
            let first = &s.links[path[0]];
            let last = &s.links[*path.last().unwrap()];
            assert_eq!(s.hosts[first.a], "client");
            assert_eq!(s.hosts[last.b], "server");
            for w in path.windows(2) {
                assert_eq!(s.links[w[0]].b, s.links[w[1]].a, "a chain");
            }
            for &l in path {
                let ms = s.links[l].rtt.as_secs_f64() * 1e3;
                assert!((ms - TABLE1[p].1).abs() < 1e-6);
            }
        }
        // Loss in proportion to the RTT: 0.3 % at 75.7 ms.
        assert!((s.links[paths[0][0]].loss - 0.003).abs() < 1e-9);
        assert!(s.links[paths[3][0]].loss < 0.0016);
        let (w, _) = spec(Regime::Window, "cubic");
        assert!(w.links.iter().all(|l| l.loss == 0.0));
        assert!(w
            .sysctls
            .iter()
            .any(|s| s.starts_with("net.ipv4.tcp_rmem=")));
        assert!(w
            .sysctls
            .contains(&"net.ipv4.tcp_congestion_control=cubic".into()));
        let (l, _) = spec(Regime::Loss, "reno");
        assert!(l.links.iter().all(|l| l.loss == 0.003));
        assert!(!l.sysctls.iter().any(|s| s.contains("rmem")));
    }

    #[test]
    fn the_schedule_warms_every_path_up_then_rotates_the_order() {
        let s = schedule(4, 2);
        assert_eq!(&s[..4], &[(0, None), (1, None), (2, None), (3, None)]);
        assert_eq!(
            &s[4..],
            &[
                (0, Some(0)),
                (1, Some(0)),
                (2, Some(0)),
                (3, Some(0)),
                (1, Some(1)),
                (2, Some(1)),
                (3, Some(1)),
                (0, Some(1))
            ]
        );
    }

    #[test]
    fn outputs_have_a_cluster_per_path_and_a_series_per_source() {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-otcp-out-{}", std::process::id()));
        let plan = Options::new(PathBuf::from("/nonexistent"), true);
        let point = |hops, sim: Option<f64>| Point {
            regime: Regime::Window,
            hops,
            path_rtt_ms: 75.7,
            runs: 1,
            lab_goodput_bps: 4e6,
            lab_median_bps: 4e6,
            lab_gain: 1.0,
            sim_goodput_bps: sim,
            sim_median_bps: sim,
            sim_gain: sim.map(|_| 1.0),
            paper_gain: 1.0,
        };
        let write = |points: Vec<Point>| {
            let r = Results {
                points,
                ..Results::default()
            };
            let mut out = Outputs::new(&dir);
            LabOtcp.outputs(&plan, &r, &mut out).unwrap();
            out.files().to_vec()
        };
        let files = write(vec![point(1, Some(3e6)), point(2, Some(3.5e6))]);
        assert_eq!(
            files,
            [
                "gains.svg",
                "goodput.svg",
                "points.csv",
                "transfers.csv",
                "links.csv"
            ]
        );
        let svg = std::fs::read_to_string(dir.join("gains.svg")).unwrap();
        for s in ["paper", "simulator", "kernel", "window 1", "window 2"] {
            assert!(svg.contains(s), "{s} missing");
        }
        let csv = std::fs::read_to_string(dir.join("points.csv")).unwrap();
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.starts_with("regime,hops,path_rtt_ms,runs,lab_goodput_bps"));
        // Without the simulator: no simulator series, and empty cells.
        write(vec![point(1, None)]);
        let svg = std::fs::read_to_string(dir.join("goodput.svg")).unwrap();
        assert!(!svg.contains("simulator"));
        let csv = std::fs::read_to_string(dir.join("points.csv")).unwrap();
        assert!(csv.lines().nth(1).unwrap().contains(",,"), "{csv}");
        let links = std::fs::read_to_string(dir.join("links.csv")).unwrap();
        assert!(
            links.starts_with("regime,link,direction,delay_ms,loss,frames"),
            "{links}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn agreement_is_judged_per_split_path_with_an_interval() {
        let plan = Options {
            sim_seeds: 3,
            ..Options::new(PathBuf::from("/nonexistent"), true)
        };
        // The kernel's gains match the simulator's up to noise: agree.
        let lab = vec![vec![1e6, 1.02e6, 0.98e6]; 4]
            .into_iter()
            .enumerate()
            .map(|(k, v)| v.iter().map(|x| x * (1.0 + 0.2 * k as f64)).collect())
            .collect::<Vec<Vec<f64>>>();
        let c = regime_claim(&plan, Regime::Window, &lab, &lab);
        assert_eq!(c.verdict, hopwise_experiment::Verdict::Holds, "{c:?}");
        assert_eq!(
            c.criterion.as_deref(),
            Some("kernel gain over simulator gain within ±20 % of 1 (each of 3)")
        );
        // Half the simulator's gain at four hops: differs.
        let mut sim = lab.clone();
        sim[3] = sim[3].iter().map(|x| x * 2.0).collect();
        let c = regime_claim(&plan, Regime::Window, &lab, &sim);
        assert_eq!(c.verdict, hopwise_experiment::Verdict::Differs);
        // Under loss a run of three is no verdict.
        let c = regime_claim(&plan, Regime::Loss, &lab, &lab);
        assert_eq!(c.verdict, hopwise_experiment::Verdict::Info);
    }

    #[test]
    fn gains_are_over_the_first_path_and_missing_values_stay_missing() {
        let g = gains(&[Some(2.0), Some(3.0), None, Some(4.0)]);
        assert_eq!(g, vec![Some(1.0), Some(1.5), None, Some(2.0)]);
        assert_eq!(times(&g), "×1.50, -, ×2.00");
        assert!(gains(&[None, Some(1.0)]).iter().all(Option::is_none));
    }
}
