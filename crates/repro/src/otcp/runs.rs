//! The simulator runs: Table 1, the transfer sizes and the trace's pairs,
//! each a batch of independent transfers over [`run_path`].

use super::trace::World;
use super::{table1_hops, PairRow, Plan, Regime, Results, SizeRow, Table1Row, FILE, TABLE1};
use hopwise_experiment::stats::{mean, mean_ci90};
use hopwise_experiment::Ctx;
use hopwise_overlay::otcp::chain::{run_path, TransferResult};
use hopwise_proto::otcp::select::{best_via, cluster_representatives};
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;

/// `16 kB`, `4 MB`: a size of the sweep in decimal units.
pub(super) fn si_bytes(b: u64) -> String {
    if b >= 1_000_000 {
        format!("{} MB", b / 1_000_000)
    } else {
        format!("{} kB", b / 1_000)
    }
}

struct Job {
    hops: Vec<Dur>,
    regime: Regime,
    size: u64,
    seed: u64,
}

fn run_jobs(
    label: &str,
    jobs: Vec<Job>,
    ctx: &Ctx<'_, Results>,
) -> anyhow::Result<Vec<TransferResult>> {
    ctx.progress.start(label, jobs.len() as u64);
    let res = ctx
        .par_map(jobs, |j| {
            let (t, w) = j.regime.setup(j.size);
            run_path(&j.hops, &t, &w, j.seed)
        })
        .into_iter()
        .collect::<Result<Vec<_>, String>>()
        .map_err(anyhow::Error::msg);
    ctx.progress.finish();
    res
}

/// Table 1: every regime and hop count, the chain and its slowest hop alone
/// (the paper's model of it; for one hop the same runs), seeds 1..=seeds.
pub(super) fn table1(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Vec<Table1Row>> {
    let seeds = plan.seeds as u64;
    let mut jobs = Vec::new();
    for r in Regime::ALL {
        for &(h, rtt, _) in &TABLE1 {
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
    let res = run_jobs("Table 1", jobs, ctx)?;
    let kbps = |runs: &[TransferResult]| -> Vec<f64> {
        runs.iter().map(|x| x.goodput_bps / 1e3).collect()
    };
    let mut rows = Vec::new();
    let mut chunks = res.chunks(seeds as usize);
    for r in Regime::ALL {
        let mut direct = f64::NAN;
        for &(h, rtt, paper) in &TABLE1 {
            let runs = chunks.next().expect("one chunk per point");
            let alone = if h > 1 {
                chunks.next().expect("one chunk per point")
            } else {
                runs
            };
            let samples = kbps(runs);
            let (m, ci) = mean_ci90(&samples);
            let alone = mean(&kbps(alone));
            if h == 1 {
                direct = m;
            }
            rows.push(Table1Row {
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
                samples_kbps: samples,
            });
        }
    }
    Ok(rows)
}

/// The paths of the size sweep: direct, 2 and 4 hops of Table 1.
const SIZE_PATHS: [(usize, f64); 3] = [(1, 75.7), (2, 63.5), (4, 39.3)];

/// Transfer sizes under random loss, seeds 1000.. (the same on every path).
pub(super) fn sizes(plan: &Plan, ctx: &Ctx<'_, Results>) -> anyhow::Result<Vec<SizeRow>> {
    let seeds = plan.seeds as u64;
    let mut jobs = Vec::new();
    for &size in &plan.sizes {
        for &(h, rtt) in &SIZE_PATHS {
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
    let res = run_jobs("Transfer sizes", jobs, ctx)?;
    let mut rows = Vec::new();
    let mut chunks = res.chunks(seeds as usize);
    for &size in &plan.sizes {
        let mut direct = f64::NAN;
        for &(h, rtt) in &SIZE_PATHS {
            let runs = chunks.next().expect("one chunk per point");
            let secs: Vec<f64> = runs.iter().map(|x| x.secs).collect();
            let first: Vec<f64> = runs.iter().map(|x| x.first_byte_s).collect();
            let m = mean(&secs);
            if h == 1 {
                direct = m;
            }
            rows.push(SizeRow {
                size_bytes: size,
                hops: h,
                path_rtt_ms: rtt,
                secs: m,
                first_byte_s: mean(&first),
                speedup: direct / m,
                runs: runs.len(),
                samples_s: secs,
            });
        }
    }
    Ok(rows)
}

/// Sampled pairs of the trace, direct and through the relay chosen from 10
/// cluster representatives, packet by packet.
pub(super) fn pairs(
    plan: &Plan,
    world: &World,
    ctx: &Ctx<'_, Results>,
) -> anyhow::Result<Vec<PairRow>> {
    let n = plan.trace_nodes;
    let pair_seeds = plan.pair_seeds as usize;
    let reps = cluster_representatives(&world.coords, 10, 50);
    let mut rng = Rng::for_component(1, "otcp/pairs");
    let mut picked = Vec::new();
    while picked.len() < plan.pairs {
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
    let mut paths = Vec::new();
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
        paths.push(p);
    }
    let res = run_jobs("Trace pairs", jobs, ctx)?;
    let mut rows = Vec::new();
    for (k, (&(u, v), p)) in picked.iter().zip(&paths).enumerate() {
        let runs = &res[k * 2 * pair_seeds..(k + 1) * 2 * pair_seeds];
        let kbps = |skip: usize| -> Vec<f64> {
            runs.iter()
                .skip(skip)
                .step_by(2)
                .map(|x| x.goodput_bps / 1e3)
                .collect()
        };
        let (d, o) = (mean(&kbps(0)), mean(&kbps(1)));
        let direct = world.rtt.get(u, v).as_millis_f64();
        rows.push(PairRow {
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
    Ok(rows)
}
