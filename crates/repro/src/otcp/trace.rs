//! A synthetic RTT trace standing in for the paper's PlanetLab trace
//! (seed 001 §2, Table 2: 313 nodes, all pairs), which is not public.
//!
//! Nodes are scattered around regional centres roughly where PlanetLab's
//! sites were (most in North America and Europe). The RTT between two nodes
//! is the great-circle fibre delay (200 km per ms one way) times a per-pair
//! route stretch, plus each node's access delay. The stretch is drawn per
//! pair (1 + a log-normal excess, median 1.6, heavy tailed), which is what
//! makes detours win: real routes are inflated unevenly, so the triangle
//! inequality often fails. None of these constants comes from the paper;
//! they are ours and documented in `docs/reproductions/otcp.md`.

use hopwise_experiment::stats::{mean, median};
use hopwise_proto::otcp::select::{
    best_paths, best_paths_unlimited, best_via, cluster_representatives, RttMatrix,
};
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use serde::Serialize;

/// A region of the synthetic world: centre (degrees), spread (degrees,
/// standard deviation) and share of the nodes.
pub struct Region {
    pub name: &'static str,
    pub lat: f64,
    pub lon: f64,
    pub spread: f64,
    pub share: f64,
}

/// The regions, by share (ours, loosely after PlanetLab's 2005 sites).
pub const REGIONS: [Region; 7] = [
    Region {
        name: "us-east",
        lat: 40.0,
        lon: -77.0,
        spread: 4.0,
        share: 0.30,
    },
    Region {
        name: "us-central",
        lat: 40.0,
        lon: -92.0,
        spread: 5.0,
        share: 0.10,
    },
    Region {
        name: "us-west",
        lat: 37.0,
        lon: -121.0,
        spread: 3.0,
        share: 0.15,
    },
    Region {
        name: "europe",
        lat: 49.0,
        lon: 8.0,
        spread: 6.0,
        share: 0.25,
    },
    Region {
        name: "east-asia",
        lat: 33.0,
        lon: 125.0,
        spread: 8.0,
        share: 0.12,
    },
    Region {
        name: "south-america",
        lat: -23.0,
        lon: -47.0,
        spread: 3.0,
        share: 0.04,
    },
    Region {
        name: "oceania",
        lat: -34.0,
        lon: 150.0,
        spread: 3.0,
        share: 0.04,
    },
];

/// Kilometres per millisecond of one-way delay in fibre (2/3 c).
pub const FIBRE_KM_PER_MS: f64 = 200.0;
/// The route stretch's log-normal excess: median and log-sd.
pub const STRETCH_EXCESS_MEDIAN: f64 = 0.6;
pub const STRETCH_EXCESS_SIGMA: f64 = 0.5;
/// Each node's access delay (added to every RTT it has), uniform, ms.
pub const ACCESS_MS: (f64, f64) = (0.5, 5.0);

/// The synthetic world.
pub struct World {
    pub coords: Vec<(f64, f64)>,
    pub region: Vec<usize>,
    pub rtt: RttMatrix,
}

fn normal(rng: &mut Rng) -> f64 {
    // Box-Muller; 1 - u keeps the logarithm finite.
    let (u, v) = (1.0 - rng.f64(), rng.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

fn great_circle_km(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, lo1, la2, lo2) = (
        a.0.to_radians(),
        a.1.to_radians(),
        b.0.to_radians(),
        b.1.to_radians(),
    );
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((lo2 - lo1) / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().min(1.0).asin()
}

impl World {
    /// `n` nodes, from the named stream `otcp/world` of `seed`.
    pub fn synthetic(n: usize, seed: u64) -> World {
        let mut rng = Rng::for_component(seed, "otcp/world");
        let total: f64 = REGIONS.iter().map(|r| r.share).sum();
        let mut coords = Vec::with_capacity(n);
        let mut region = Vec::with_capacity(n);
        let mut access = Vec::with_capacity(n);
        for _ in 0..n {
            let mut x = rng.f64() * total;
            let k = REGIONS
                .iter()
                .position(|r| {
                    x -= r.share;
                    x < 0.0
                })
                .unwrap_or(REGIONS.len() - 1);
            let r = &REGIONS[k];
            let lat = (r.lat + r.spread * normal(&mut rng)).clamp(-85.0, 85.0);
            let lon = r.lon + r.spread * normal(&mut rng);
            coords.push((lat, lon));
            region.push(k);
            access.push(ACCESS_MS.0 + (ACCESS_MS.1 - ACCESS_MS.0) * rng.f64());
        }
        let rtt = RttMatrix::from_fn(n, |u, v| {
            let km = great_circle_km(coords[u], coords[v]);
            let stretch =
                1.0 + STRETCH_EXCESS_MEDIAN * (STRETCH_EXCESS_SIGMA * normal(&mut rng)).exp();
            let ms = 2.0 * km / FIBRE_KM_PER_MS * stretch + access[u] + access[v];
            Dur::from_secs_f64(ms / 1000.0)
        });
        World {
            coords,
            region,
            rtt,
        }
    }
}

/// The relay budgets Table 2's analysis is broken down by (`None`: any
/// number of relays).
pub const BUDGETS: [Option<usize>; 4] = [Some(1), Some(2), Some(3), None];

/// A relay budget: up to so many relays, or any number (`"any"` in
/// summary.json and the CSV).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Relays {
    Up(usize),
    #[default]
    Any,
}

impl Serialize for Relays {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Relays::Up(k) => s.serialize_u64(*k as u64),
            Relays::Any => s.serialize_str("any"),
        }
    }
}

/// How much splitting lowers the path RTT, over every pair of nodes, with
/// a relay budget (a row of `trace_budgets.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BudgetRow {
    /// Relays allowed.
    pub max_relays: Relays,
    /// Pairs whose best path RTT is below the direct RTT.
    pub benefit_frac: f64,
    /// Mean of 1 − path RTT / direct RTT over all pairs.
    pub mean_reduction: f64,
    pub median_reduction: f64,
    /// Mean number of relays on the best paths that use any. With no budget
    /// this counts the path the search returned, which is not always the one
    /// with the fewest relays.
    pub mean_relays: f64,
}

/// Path-RTT reductions of every pair `u < v`, per budget in [`BUDGETS`].
pub fn reductions(w: &World) -> Vec<Vec<(f64, usize)>> {
    let n = w.rtt.len();
    let all = |_: usize| true;
    BUDGETS
        .iter()
        .map(|b| {
            let mut out = Vec::with_capacity(n * (n - 1) / 2);
            for src in 0..n {
                let paths = match b {
                    Some(k) => best_paths(&w.rtt, src, *k, &all),
                    None => best_paths_unlimited(&w.rtt, src, &all),
                };
                for (dst, p) in paths.iter().enumerate().skip(src + 1) {
                    let direct = w.rtt.get(src, dst).as_secs_f64();
                    out.push((1.0 - p.path_rtt.as_secs_f64() / direct, p.relays().len()));
                }
            }
            out
        })
        .collect()
}

/// [`BudgetRow`]s from [`reductions`].
pub fn budget_rows(red: &[Vec<(f64, usize)>]) -> Vec<BudgetRow> {
    BUDGETS
        .iter()
        .zip(red)
        .map(|(b, r)| {
            let vals: Vec<f64> = r.iter().map(|x| x.0).collect();
            let used: Vec<f64> = r.iter().filter(|x| x.1 > 0).map(|x| x.1 as f64).collect();
            BudgetRow {
                max_relays: b.map_or(Relays::Any, Relays::Up),
                benefit_frac: vals.iter().filter(|&&x| x > 1e-9).count() as f64
                    / vals.len().max(1) as f64,
                mean_reduction: mean(&vals),
                median_reduction: median(&vals),
                mean_relays: mean(&used),
            }
        })
        .collect()
}

/// One relay chosen from `probes` candidates: how much of the best
/// one-relay reduction a strategy gets.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SelectionRow {
    /// `random`, `cluster` or `optimal` (every node probed).
    pub strategy: &'static str,
    pub probes: usize,
    /// Mean path-RTT reduction over all pairs (0 where it keeps the direct path).
    pub mean_reduction: f64,
    /// That mean over the optimal one-relay mean.
    pub share_of_optimal: f64,
    /// Pairs that found a better path.
    pub benefit_frac: f64,
}

/// Probe budgets compared in the selection figure.
pub const PROBES: [usize; 6] = [2, 5, 10, 20, 40, 80];

/// Mean reductions of random and cluster-based candidate sets against the
/// optimal relay, over every pair `u < v`.
pub fn selection(w: &World, seed: u64) -> Vec<SelectionRow> {
    let n = w.rtt.len();
    let mut rng = Rng::for_component(seed, "otcp/selection");
    let red = |src: usize, dst: usize, cands: &[usize]| {
        let p = best_via(&w.rtt, src, dst, cands);
        1.0 - p.path_rtt.as_secs_f64() / w.rtt.get(src, dst).as_secs_f64()
    };
    let everyone: Vec<usize> = (0..n).collect();
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|u| (u + 1..n).map(move |v| (u, v)))
        .collect();
    let summarise = |strategy, probes, vals: &[f64], opt: f64| {
        let m = mean(vals);
        SelectionRow {
            strategy,
            probes,
            mean_reduction: m,
            share_of_optimal: if opt > 0.0 { m / opt } else { f64::NAN },
            benefit_frac: vals.iter().filter(|&&x| x > 1e-9).count() as f64
                / vals.len().max(1) as f64,
        }
    };
    let opt: Vec<f64> = pairs.iter().map(|&(u, v)| red(u, v, &everyone)).collect();
    let opt_mean = mean(&opt);
    let mut rows = Vec::new();
    for &m in PROBES.iter().filter(|&&m| m + 2 <= n) {
        let reps = cluster_representatives(&w.coords, m, 50);
        let cl: Vec<f64> = pairs.iter().map(|&(u, v)| red(u, v, &reps)).collect();
        let rnd: Vec<f64> = pairs
            .iter()
            .map(|&(u, v)| {
                // Drawn with replacement; a draw of u or v itself is wasted.
                let cands: Vec<usize> = (0..m).map(|_| rng.below(n as u64) as usize).collect();
                red(u, v, &cands)
            })
            .collect();
        rows.push(summarise("random", m, &rnd, opt_mean));
        rows.push(summarise("cluster", m, &cl, opt_mean));
    }
    rows.push(summarise("optimal", n - 2, &opt, opt_mean));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_is_deterministic_and_plausible() {
        let a = World::synthetic(60, 1);
        let b = World::synthetic(60, 1);
        assert_eq!(a.rtt, b.rtt);
        assert_ne!(a.rtt, World::synthetic(60, 2).rtt);
        // RTTs between 1 ms (two access delays) and half the globe stretched.
        for u in 0..60 {
            for v in u + 1..60 {
                let ms = a.rtt.get(u, v).as_millis_f64();
                assert!((1.0..1500.0).contains(&ms), "{u}-{v}: {ms} ms");
            }
        }
        // New York to Frankfurt is about 6200 km: at least 62 ms of RTT.
        assert!((6100.0..6300.0).contains(&great_circle_km((40.7, -74.0), (50.1, 8.7))));
    }

    #[test]
    fn budgets_only_help_and_selection_is_bounded_by_the_optimum() {
        let w = World::synthetic(40, 3);
        let rows = budget_rows(&reductions(&w));
        assert_eq!(rows.len(), BUDGETS.len());
        for pair in rows.windows(2) {
            assert!(pair[1].mean_reduction >= pair[0].mean_reduction - 1e-12);
            assert!(pair[1].benefit_frac >= pair[0].benefit_frac);
        }
        assert!(rows[0].benefit_frac > 0.0, "some detour helps");
        let sel = selection(&w, 3);
        let opt = sel.last().unwrap();
        assert_eq!(opt.strategy, "optimal");
        assert!((opt.mean_reduction - rows[0].mean_reduction).abs() < 1e-9);
        for r in &sel {
            assert!(r.mean_reduction <= opt.mean_reduction + 1e-12, "{r:?}");
        }
    }
}
