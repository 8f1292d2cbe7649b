//! Reproduction `otcp`: seed 001, Pucha and Hu, "Overlay TCP: Ending
//! End-to-End Transport for Higher Throughput" (SIGCOMM 2005 poster).
//!
//! * **Table 1** ([`table1`]): one 4 MB transfer over the direct path
//!   (RTT 75.7 ms) and split into 2, 3 and 4 pipelined TCP connections with
//!   the paper's path RTTs (63.5, 47.1, 39.3 ms), packet by packet, with
//!   relays running `hopwise_proto::otcp`. Three regimes: every link loses
//!   packets at random, the same on every link or in proportion to its RTT
//!   (TCP's rate ∝ 1/(RTT √p)), and no loss with a 32 KiB receive window
//!   (rate = window / RTT).
//! * **Transfer sizes** (§3, "medium-sized file transfers"): 16 kB to 16 MB
//!   over the direct path and the 2- and 4-hop paths; relays connect on
//!   demand, so short transfers pay one handshake per hop.
//! * **Table 2 and §3's analysis** ([`trace`]): on a synthetic 313-node RTT
//!   trace (the paper's PlanetLab trace is not public), how many pairs a
//!   detour helps and by how much, with 1, 2, 3 or any number of relays;
//!   and how well a client that probes a few candidates does, random ones
//!   against one per geographic cluster.
//! * **Pairs** : transfers between sampled pairs of the trace, direct and
//!   through the relay the cluster strategy picks, packet by packet.
//!
//! Choices and differences from the paper are in `docs/reproductions/otcp.md`.

pub mod agents;
pub mod chain;
#[cfg(feature = "lab")]
pub mod lab;
mod plots;
pub mod trace;

use crate::{
    mean_ci90, par_map, plural, write_csv, write_summary, Claim, Experiment, Outcome, Progress,
    ReproOpts,
};
use anyhow::Context as _;
use chain::{run_path, Loss, Transfer, TransferResult, Wan};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::otcp::select::{best_via, cluster_representatives};
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use serde::Serialize;
use std::path::Path;

pub fn experiment() -> Experiment {
    Experiment {
        name: "otcp",
        about: "Pucha and Hu 2005 (Overlay TCP, seed paper 001): Table 1 (throughput by hop count), transfer sizes, Table 2 and relay selection on a synthetic RTT trace",
        wall: "quick under 1 s, full about 5 s",
        run,
    }
}

/// Table 1's paths: hops and path RTT (ms), and the paper's throughput (kbit/s).
pub const TABLE1: [(usize, f64, f64); 4] = [
    (1, 75.7, 3097.1),
    (2, 63.5, 3505.4),
    (3, 47.1, 4695.0),
    (4, 39.3, 5391.0),
];
/// The paper's transfer: "a 4MB file".
pub const FILE: u64 = 4_000_000;
/// Random loss per packet and direction on every link in the loss regime.
/// At this loss the steady-state rate of Mathis et al. (1997),
/// 1.22 MSS / (RTT √p), of the direct path is 3.4 Mbit/s, near the paper's
/// 3.1 Mbit/s; a 4 MB transfer is faster on average, because much of it
/// goes in slow start.
pub const LOSS: f64 = 0.003;
/// The receive window of the window regime (no loss): 32 KiB over 75.7 ms
/// is 3.5 Mbit/s, near the paper's direct 3.1 Mbit/s.
pub const WINDOW: u64 = 32 << 10;
/// Every link's capacity: never the limit.
pub const LINK_MBPS: u64 = 100;
/// A relay's own buffer per connection, besides its sockets' buffers.
pub const SPLICE: usize = 64 << 10;

/// What limits a hop's TCP rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Regime {
    /// Random loss [`LOSS`] on every link, however long; 4 MiB socket
    /// buffers. A k-hop path crosses k lossy links.
    Loss,
    /// Random loss proportional to the link's RTT, [`LOSS`] at the direct
    /// path's 75.7 ms; 4 MiB socket buffers.
    LossRtt,
    /// No loss; a [`WINDOW`] receive buffer.
    Window,
}

impl Regime {
    pub const ALL: [Regime; 3] = [Regime::Loss, Regime::LossRtt, Regime::Window];
    pub fn name(self) -> &'static str {
        match self {
            Regime::Loss => "loss",
            Regime::LossRtt => "loss-rtt",
            Regime::Window => "window",
        }
    }
    /// How the figures and claims describe it.
    pub fn describe(self) -> String {
        match self {
            Regime::Loss => format!("random loss {} % on every link", LOSS * 100.0),
            Regime::LossRtt => format!("random loss ∝ link RTT ({} % at 75.7 ms)", LOSS * 100.0),
            Regime::Window => format!("no loss, {} KiB receive window", WINDOW >> 10),
        }
    }
    /// The links and the transfer of `size` bytes in this regime: NewReno
    /// with SACK, delayed ACKs and RFC 3390's initial window (3 segments of
    /// 1460 B), as a 2005 host would have run.
    pub fn setup(self, size: u64) -> (Transfer, Wan) {
        let mut tcp = TcpConfig {
            initial_window: 3,
            ..TcpConfig::default()
        };
        let loss = match self {
            Regime::Loss => Loss::PerLink(LOSS),
            Regime::LossRtt => Loss::PerRtt {
                p: LOSS,
                at: ms(TABLE1[0].1),
            },
            Regime::Window => {
                tcp.recv_buffer = WINDOW;
                Loss::PerLink(0.0)
            }
        };
        (
            Transfer {
                size,
                tcp,
                cc: CcConfig::NewReno,
                splice: SPLICE,
                limit: Dur::from_secs(3600),
            },
            Wan {
                rate: Rate::from_mbps(LINK_MBPS),
                loss,
                queue: Limit::Packets(1000),
            },
        )
    }
}

fn ms(x: f64) -> Dur {
    Dur::from_secs_f64(x / 1000.0)
}

/// Table 1's path of `hops` hops with path RTT `rtt_ms`: every hop has the
/// path RTT (the paper gives only the largest hop RTT, so this is the
/// slowest path it allows; the hops add up to more than the direct RTT).
pub fn table1_hops(hops: usize, rtt_ms: f64) -> Vec<Dur> {
    vec![ms(rtt_ms); hops]
}

/// One point of Table 1.
#[derive(Clone, Debug, Serialize)]
pub struct Table1Row {
    pub regime: Regime,
    pub hops: usize,
    pub path_rtt_ms: f64,
    pub sum_rtt_ms: f64,
    pub goodput_kbps: f64,
    pub goodput_ci90_kbps: f64,
    /// Goodput over the direct path's.
    pub gain: f64,
    /// Direct RTT over path RTT: the gain if rate ∝ 1/RTT.
    pub rtt_ratio: f64,
    /// One hop alone with the path RTT (and its loss): what the paper's
    /// model expects of the whole chain.
    pub one_hop_kbps: f64,
    /// The chain's goodput over [`Table1Row::one_hop_kbps`].
    pub pipeline_efficiency: f64,
    pub paper_kbps: f64,
    pub paper_gain: f64,
    pub runs: usize,
}

/// One transfer size on one path.
#[derive(Clone, Debug, Serialize)]
pub struct SizeRow {
    pub size_bytes: u64,
    pub hops: usize,
    pub path_rtt_ms: f64,
    #[serde(rename = "transfer_s")]
    pub secs: f64,
    pub first_byte_s: f64,
    /// Direct completion time over this path's.
    pub speedup: f64,
    pub runs: usize,
}

/// One sampled pair of the trace.
#[derive(Clone, Debug, Serialize)]
pub struct PairRow {
    pub src: usize,
    pub dst: usize,
    pub direct_rtt_ms: f64,
    pub path_rtt_ms: f64,
    pub sum_rtt_ms: f64,
    pub relays: usize,
    pub direct_kbps: f64,
    pub otcp_kbps: f64,
    pub gain: f64,
    /// Direct RTT over path RTT.
    pub rtt_ratio: f64,
}

#[derive(Serialize)]
struct Summary {
    paper: &'static str,
    constants: Constants,
    table1: Vec<Table1Row>,
    sizes: Vec<SizeRow>,
    trace: TraceSummary,
    pairs: Vec<PairRow>,
    claims: Vec<Claim>,
    wall_s: f64,
}

#[derive(Serialize)]
struct Constants {
    file_bytes: u64,
    loss: f64,
    window_bytes: u64,
    link_mbps: u64,
    splice_bytes: usize,
    tcp: &'static str,
    relays: &'static str,
}

#[derive(Serialize)]
struct TraceSummary {
    nodes: usize,
    pairs: usize,
    budgets: Vec<trace::BudgetRow>,
    selection: Vec<trace::SelectionRow>,
}

/// `16 kB`, `4 MB`: a size of the sweep in decimal units.
fn si_bytes(b: u64) -> String {
    if b >= 1_000_000 {
        format!("{} MB", b / 1_000_000)
    } else {
        format!("{} kB", b / 1_000)
    }
}

/// Sizes of the transfer-size sweep.
fn sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![16_000, 256_000, 1_000_000, 4_000_000]
    } else {
        vec![16_000, 64_000, 256_000, 1_000_000, 4_000_000, 16_000_000]
    }
}

struct Job {
    hops: Vec<Dur>,
    regime: Regime,
    size: u64,
    seed: u64,
}

fn run_jobs(
    jobs: Vec<Job>,
    opts: &ReproOpts,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<TransferResult>> {
    par_map(jobs, opts.jobs, progress, |j| {
        let (t, w) = j.regime.setup(j.size);
        run_path(&j.hops, &t, &w, j.seed)
    })
    .into_iter()
    .collect::<Result<Vec<_>, String>>()
    .map_err(anyhow::Error::msg)
}

fn run(opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    #[allow(clippy::disallowed_methods)] // wall time for the summary only
    let t0 = std::time::Instant::now();
    let dir = opts.out.as_path();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let seeds = opts.seeds_or(20, 4) as u64;

    // Table 1.
    progress.note("Table 1: a 4 MB transfer over 1, 2, 3 and 4 hops");
    let regimes = Regime::ALL;
    let mut jobs = Vec::new();
    for &r in &regimes {
        for &(h, rtt, _) in &TABLE1 {
            // The chain, then its slowest hop alone (the paper's model of
            // it); for one hop the two are the same runs.
            let alone = (h > 1).then(|| table1_hops(1, rtt));
            for hops in std::iter::once(table1_hops(h, rtt)).chain(alone) {
                for s in 0..seeds {
                    jobs.push(Job {
                        hops: hops.clone(),
                        regime: r,
                        size: FILE,
                        seed: s + 1,
                    });
                }
            }
        }
    }
    progress.start("Table 1", jobs.len() as u64);
    let res = run_jobs(jobs, opts, progress)?;
    progress.finish();
    let mut t1 = Vec::new();
    let mut chunks = res.chunks(seeds as usize);
    for &r in &regimes {
        let mut direct = f64::NAN;
        for &(h, rtt, paper) in &TABLE1 {
            let runs = chunks.next().expect("one chunk per point");
            let alone = if h > 1 {
                chunks.next().expect("one chunk per point")
            } else {
                runs
            };
            let kbps: Vec<f64> = runs.iter().map(|x| x.goodput_bps / 1e3).collect();
            let (m, ci) = mean_ci90(&kbps);
            let alone: Vec<f64> = alone.iter().map(|x| x.goodput_bps / 1e3).collect();
            let alone = crate::mean_sd(&alone).0;
            if h == 1 {
                direct = m;
            }
            t1.push(Table1Row {
                regime: r,
                hops: h,
                path_rtt_ms: rtt,
                sum_rtt_ms: rtt * h as f64,
                goodput_kbps: m,
                goodput_ci90_kbps: ci,
                gain: m / direct,
                rtt_ratio: TABLE1[0].1 / rtt,
                one_hop_kbps: alone,
                pipeline_efficiency: m / alone,
                paper_kbps: paper,
                paper_gain: paper / TABLE1[0].2,
                runs: runs.len(),
            });
        }
    }

    // Transfer sizes.
    let paths = [(1usize, 75.7), (2, 63.5), (4, 39.3)];
    let szs = sizes(opts.quick);
    progress.note(&format!(
        "Transfer sizes: {} to {}, direct against 2 and 4 hops",
        si_bytes(szs[0]),
        si_bytes(szs[szs.len() - 1])
    ));
    let mut jobs = Vec::new();
    for &size in &szs {
        for &(h, rtt) in &paths {
            for s in 0..seeds {
                jobs.push(Job {
                    hops: table1_hops(h, rtt),
                    regime: Regime::Loss,
                    size,
                    seed: 1000 + s,
                });
            }
        }
    }
    progress.start("Transfer sizes", jobs.len() as u64);
    let res = run_jobs(jobs, opts, progress)?;
    progress.finish();
    let mut size_rows = Vec::new();
    let mut chunks = res.chunks(seeds as usize);
    for &size in &szs {
        let mut direct = f64::NAN;
        for &(h, rtt) in &paths {
            let runs = chunks.next().expect("one chunk per point");
            let secs: Vec<f64> = runs.iter().map(|x| x.secs).collect();
            let first: Vec<f64> = runs.iter().map(|x| x.first_byte_s).collect();
            let m = crate::mean_sd(&secs).0;
            if h == 1 {
                direct = m;
            }
            size_rows.push(SizeRow {
                size_bytes: size,
                hops: h,
                path_rtt_ms: rtt,
                secs: m,
                first_byte_s: crate::mean_sd(&first).0,
                speedup: direct / m,
                runs: runs.len(),
            });
        }
    }

    // The trace.
    let n = if opts.quick { 120 } else { 313 };
    progress.note(&format!("Table 2: a synthetic RTT trace of {n} nodes"));
    let world = trace::World::synthetic(n, 1);
    let red = trace::reductions(&world);
    let budgets = trace::budget_rows(&red);
    let selection = trace::selection(&world, 1);

    // Pairs of the trace, packet by packet.
    let n_pairs = if opts.quick { 8 } else { 40 };
    let pair_seeds: usize = if opts.quick { 1 } else { 3 };
    let reps = cluster_representatives(&world.coords, 10, 50);
    let mut rng = Rng::for_component(1, "otcp/pairs");
    let mut picked = Vec::new();
    while picked.len() < n_pairs {
        let u = rng.below(n as u64) as usize;
        let v = rng.below(n as u64) as usize;
        if u != v
            && !picked
                .iter()
                .any(|&(a, b)| (a, b) == (u, v) || (b, a) == (u, v))
        {
            picked.push((u, v));
        }
    }
    let mut jobs = Vec::new();
    let mut pair_paths = Vec::new();
    for &(u, v) in &picked {
        let p = best_via(&world.rtt, u, v, &reps);
        let direct = vec![world.rtt.get(u, v)];
        let split = p.hop_rtts(&world.rtt);
        for s in 0..pair_seeds {
            for hops in [direct.clone(), split.clone()] {
                jobs.push(Job {
                    hops,
                    regime: Regime::Loss,
                    size: FILE,
                    seed: 2000 + s as u64,
                });
            }
        }
        pair_paths.push(p);
    }
    progress.start("Trace pairs", jobs.len() as u64);
    let res = run_jobs(jobs, opts, progress)?;
    progress.finish();
    let mut pairs = Vec::new();
    for (k, (&(u, v), p)) in picked.iter().zip(&pair_paths).enumerate() {
        let runs = &res[k * 2 * pair_seeds..(k + 1) * 2 * pair_seeds];
        let d: Vec<f64> = runs
            .iter()
            .step_by(2)
            .map(|x| x.goodput_bps / 1e3)
            .collect();
        let o: Vec<f64> = runs
            .iter()
            .skip(1)
            .step_by(2)
            .map(|x| x.goodput_bps / 1e3)
            .collect();
        let (d, o) = (crate::mean_sd(&d).0, crate::mean_sd(&o).0);
        let direct = world.rtt.get(u, v).as_millis_f64();
        pairs.push(PairRow {
            src: u,
            dst: v,
            direct_rtt_ms: direct,
            path_rtt_ms: p.path_rtt.as_millis_f64(),
            sum_rtt_ms: p.sum_rtt.as_millis_f64(),
            relays: p.relays().len(),
            direct_kbps: d,
            otcp_kbps: o,
            gain: o / d,
            rtt_ratio: direct / p.path_rtt.as_millis_f64(),
        });
    }

    let mut files = vec!["summary.json".to_string()];
    write_csvs(
        dir, &t1, &size_rows, &budgets, &selection, &pairs, &mut files,
    )?;
    plots::write(
        dir, &t1, &size_rows, &red, &budgets, &selection, &pairs, &mut files,
    )?;

    let claims = claims(&t1, &size_rows, &budgets, &selection, &pairs, n);
    let summary = Summary {
        paper: "seed 001: Pucha and Hu, Overlay TCP: Ending End-to-End Transport for Higher Throughput (SIGCOMM 2005 poster)",
        constants: Constants {
            file_bytes: FILE,
            loss: LOSS,
            window_bytes: WINDOW,
            link_mbps: LINK_MBPS,
            splice_bytes: SPLICE,
            tcp: "NewReno with SACK, delayed ACKs, initial window 3 (RFC 3390), 4 MiB buffers (32 KiB receive buffer in the window regime)",
            relays: "connect to the next hop when a connection's route header arrives (on demand)",
        },
        table1: t1,
        sizes: size_rows,
        trace: TraceSummary {
            nodes: n,
            pairs: n * (n - 1) / 2,
            budgets,
            selection,
        },
        pairs,
        claims: claims.clone(),
        wall_s: t0.elapsed().as_secs_f64(),
    };
    write_summary(dir, &summary)?;
    Ok(Outcome {
        claims,
        files,
        data: crate::data_pairs(&["trace_reduction.svg"], &["trace_budgets.csv"]),
    })
}

fn f(x: f64, d: usize) -> String {
    if x.is_finite() {
        format!("{x:.d$}")
    } else {
        String::new()
    }
}

#[allow(clippy::too_many_arguments)]
fn write_csvs(
    dir: &Path,
    t1: &[Table1Row],
    sizes: &[SizeRow],
    budgets: &[trace::BudgetRow],
    selection: &[trace::SelectionRow],
    pairs: &[PairRow],
    files: &mut Vec<String>,
) -> anyhow::Result<()> {
    let rows: Vec<Vec<String>> = t1
        .iter()
        .map(|r| {
            vec![
                r.regime.name().into(),
                r.hops.to_string(),
                f(r.path_rtt_ms, 1),
                f(r.sum_rtt_ms, 1),
                f(r.goodput_kbps, 1),
                f(r.goodput_ci90_kbps, 1),
                f(r.gain, 3),
                f(r.rtt_ratio, 3),
                f(r.one_hop_kbps, 1),
                f(r.pipeline_efficiency, 3),
                f(r.paper_kbps, 1),
                f(r.paper_gain, 3),
                r.runs.to_string(),
            ]
        })
        .collect();
    write_csv(
        &dir.join("table1.csv"),
        &[
            "regime",
            "hops",
            "path_rtt_ms",
            "sum_rtt_ms",
            "goodput_kbps",
            "goodput_ci90_kbps",
            "gain",
            "rtt_ratio",
            "one_hop_kbps",
            "pipeline_efficiency",
            "paper_kbps",
            "paper_gain",
            "runs",
        ],
        &rows,
    )?;
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|r| {
            vec![
                r.size_bytes.to_string(),
                r.hops.to_string(),
                f(r.path_rtt_ms, 1),
                f(r.secs, 4),
                f(r.first_byte_s, 4),
                f(r.speedup, 3),
                r.runs.to_string(),
            ]
        })
        .collect();
    write_csv(
        &dir.join("sizes.csv"),
        &[
            "size_bytes",
            "hops",
            "path_rtt_ms",
            "transfer_s",
            "first_byte_s",
            "speedup",
            "runs",
        ],
        &rows,
    )?;
    let rows: Vec<Vec<String>> = budgets
        .iter()
        .map(|r| {
            vec![
                r.max_relays.map_or("any".into(), |k| k.to_string()),
                f(r.benefit_frac, 4),
                f(r.mean_reduction, 4),
                f(r.median_reduction, 4),
                f(r.mean_relays, 3),
            ]
        })
        .collect();
    write_csv(
        &dir.join("trace_budgets.csv"),
        &[
            "max_relays",
            "benefit_frac",
            "mean_reduction",
            "median_reduction",
            "mean_relays",
        ],
        &rows,
    )?;
    let rows: Vec<Vec<String>> = selection
        .iter()
        .map(|r| {
            vec![
                r.strategy.into(),
                r.probes.to_string(),
                f(r.mean_reduction, 4),
                f(r.share_of_optimal, 4),
                f(r.benefit_frac, 4),
            ]
        })
        .collect();
    write_csv(
        &dir.join("selection.csv"),
        &[
            "strategy",
            "probes",
            "mean_reduction",
            "share_of_optimal",
            "benefit_frac",
        ],
        &rows,
    )?;
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|r| {
            vec![
                r.src.to_string(),
                r.dst.to_string(),
                f(r.direct_rtt_ms, 2),
                f(r.path_rtt_ms, 2),
                f(r.sum_rtt_ms, 2),
                r.relays.to_string(),
                f(r.direct_kbps, 1),
                f(r.otcp_kbps, 1),
                f(r.gain, 3),
                f(r.rtt_ratio, 3),
            ]
        })
        .collect();
    write_csv(
        &dir.join("pairs.csv"),
        &[
            "src",
            "dst",
            "direct_rtt_ms",
            "path_rtt_ms",
            "sum_rtt_ms",
            "relays",
            "direct_kbps",
            "otcp_kbps",
            "gain",
            "rtt_ratio",
        ],
        &rows,
    )?;
    files.extend(
        [
            "table1.csv",
            "sizes.csv",
            "trace_budgets.csv",
            "selection.csv",
            "pairs.csv",
        ]
        .map(String::from),
    );
    Ok(())
}

/// The claims, each with the criterion we judge it by (ours: no issue sets
/// one for this paper).
pub fn claims(
    t1: &[Table1Row],
    sizes: &[SizeRow],
    budgets: &[trace::BudgetRow],
    selection: &[trace::SelectionRow],
    pairs: &[PairRow],
    nodes: usize,
) -> Vec<Claim> {
    let mut out = Vec::new();
    for regime in Regime::ALL {
        let rows: Vec<&Table1Row> = t1.iter().filter(|r| r.regime == regime).collect();
        let Some(direct) = rows.first() else { continue };
        let gains = rows[1..]
            .iter()
            .map(|r| {
                format!(
                    "{} hops ×{:.2} (1/RTT ×{:.2}; {:.0} % of one hop alone)",
                    r.hops,
                    r.gain,
                    r.rtt_ratio,
                    r.pipeline_efficiency * 100.0
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let rising = rows
            .windows(2)
            .all(|w| w[1].goodput_kbps > w[0].goodput_kbps);
        let last = rows.last().expect("rows");
        let near = (last.gain / last.paper_gain - 1.0).abs() <= 0.25;
        let what = regime.describe();
        let measured = format!("{what}: direct {:.0} kbit/s; {gains}", direct.goodput_kbps);
        let claim = "Splitting NCSU-Caltech into 2, 3, 4 hops (path RTT 75.7 → 63.5, 47.1, 39.3 ms) raises a 4 MB transfer from 3097 to 3505, 4695, 5391 kbit/s (×1.13, ×1.52, ×1.74); criterion (ours): goodput rises with every hop and the 4-hop gain is within ±25 % of ×1.74";
        let figure = match regime {
            Regime::Loss => "Table 1 (loss per link)",
            Regime::LossRtt => "Table 1 (loss ∝ RTT)",
            Regime::Window => "Table 1 (window-limited)",
        };
        out.push(crate::legacy_claim(figure, claim, measured, rising && near));
    }
    if let Some(r) = t1
        .iter()
        .find(|r| r.regime == Regime::Loss && r.hops == TABLE1.len())
    {
        out.push(crate::legacy_claim(
            "§1-2",
            "oTCP can raise throughput even when the hops' RTTs add up to more than the direct RTT",
            format!(
                "{}: 4 hops of {:.1} ms (sum {:.0} ms against 75.7 ms direct): ×{:.2}",
                Regime::Loss.describe(),
                r.path_rtt_ms,
                r.sum_rtt_ms,
                r.gain
            ),
            r.sum_rtt_ms > TABLE1[0].1 && r.gain > 1.0,
        ));
    }
    // Sizes: the smallest size where the 4-hop path wins.
    let four: Vec<&SizeRow> = sizes.iter().filter(|r| r.hops == 4).collect();
    if !four.is_empty() {
        let at_1mb = four.iter().find(|r| r.size_bytes == 1_000_000);
        let first_win = four.iter().find(|r| r.speedup > 1.0).map(|r| r.size_bytes);
        let list = four
            .iter()
            .map(|r| format!("{} kB ×{:.2}", r.size_bytes / 1000, r.speedup))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(crate::legacy_claim(
            "§3 (sizes)",
            "The benefit is apparent even in medium-sized transfers; criterion (ours): the 4-hop path (relays connecting on demand) finishes a 1 MB transfer faster than the direct path",
            format!(
                "{}: speedup of 4 hops over direct: {list}; first wins at {}; {} per size and path, on seeds of their own (one transfer under loss varies several-fold with where its first losses fall, so with few runs these and Table 1's differ)",
                Regime::Loss.describe(),
                first_win.map_or("no size".into(), |s| format!("{} kB", s / 1000)),
                plural(four[0].runs, "run")
            ),
            at_1mb.is_some_and(|r| r.speedup > 1.0),
        ));
    }
    let any = budgets.iter().find(|b| b.max_relays.is_none());
    if let Some(any) = any {
        out.push(Claim::info(
            "Table 2",
            "In a 313-node PlanetLab RTT trace 99.2 % of 88 841 pairs have a lower path RTT through intermediaries; the path RTT falls by 56.2 % on average",
            format!(
                "synthetic {nodes}-node trace (ours, docs/reproductions/otcp.md): {:.1} % of pairs, mean reduction {:.1} % (median {:.1} %)",
                any.benefit_frac * 100.0,
                any.mean_reduction * 100.0,
                any.median_reduction * 100.0
            ),
        ));
        if let Some(two) = budgets.iter().find(|b| b.max_relays == Some(2)) {
            let one = budgets.iter().find(|b| b.max_relays == Some(1));
            out.push(crate::legacy_claim(
                "§3 (hops)",
                "1 or 2 intermediaries give most of the benefit, more give diminishing returns; criterion (ours): 2 relays reach ≥ 75 % of the mean reduction with any number",
                format!(
                    "mean path-RTT reduction: 1 relay {:.1} %, 2 relays {:.1} %, any {:.1} % (2 relays reach {:.0} %)",
                    one.map_or(f64::NAN, |o| o.mean_reduction * 100.0),
                    two.mean_reduction * 100.0,
                    any.mean_reduction * 100.0,
                    two.mean_reduction / any.mean_reduction * 100.0
                ),
                two.mean_reduction >= 0.75 * any.mean_reduction,
            ));
        }
    }
    let at = |s: &str, m: usize| selection.iter().find(|r| r.strategy == s && r.probes == m);
    if let (Some(r), Some(c)) = (at("random", 10), at("cluster", 10)) {
        out.push(crate::legacy_claim(
            "§3 (selection)",
            "Random intermediaries need a large sample; one node per geographic cluster works well; criterion (ours): with 10 probes, clusters get more of the optimal one-relay reduction than random picks, and at least 80 % of it",
            format!(
                "10 probes: cluster {:.0} %, random {:.0} % of the optimum (random needs {} probes to match)",
                c.share_of_optimal * 100.0,
                r.share_of_optimal * 100.0,
                selection
                    .iter()
                    .filter(|x| x.strategy == "random" && x.share_of_optimal >= c.share_of_optimal)
                    .map(|x| x.probes.to_string())
                    .next()
                    .unwrap_or_else(|| format!("more than {}", trace::PROBES.last().expect("probes")))
            ),
            c.share_of_optimal > r.share_of_optimal && c.share_of_optimal >= 0.8,
        ));
    }
    if !pairs.is_empty() {
        let n = pairs.len() as f64;
        let better = pairs.iter().filter(|p| p.gain > 1.0).count() as f64 / n;
        let big = pairs.iter().filter(|p| p.gain > 1.25).count() as f64 / n;
        let worse = pairs.iter().filter(|p| p.gain < 0.99).count();
        let split = pairs.iter().filter(|p| p.relays > 0).count();
        let split_better = pairs
            .iter()
            .filter(|p| p.relays > 0 && p.gain > 1.0)
            .count();
        out.push(Claim::info(
            "§3 (prototype)",
            "Over a week of web downloads oTCP sped up 85 % of transfers, half by more than 25 %, and never made one slower",
            format!(
                "{} of the trace (4 MB each, {}, relay from 10 cluster representatives, {} split; the others stay direct, gain 1): {:.0} % faster, {:.0} % by more than 25 %, {} slower by more than 1 %; {} of the {} split pairs faster",
                plural(pairs.len(), "pair"),
                Regime::Loss.describe(),
                split,
                better * 100.0,
                big * 100.0,
                worse,
                split_better,
                split
            ),
        ));
    }
    out
}
