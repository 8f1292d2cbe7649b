//! Choosing oTCP relays from RTTs (seed 001 §2–3).
//!
//! A path's *path RTT* is its largest hop RTT (§2): each hop is its own TCP
//! connection, and the slowest hop sets the pipeline's rate. The best path
//! under a relay budget is therefore a minimax (bottleneck) path, not a
//! shortest one. [`best_paths`] finds it for every destination at once with
//! a hop-layered dynamic programme, O(k·n²) for a budget of k relays;
//! [`best_paths_unlimited`] drops the budget (a minimax Dijkstra, O(n²)).
//!
//! A client does not know every RTT. It probes a few candidates and uses the
//! best one-relay path through them, [`best_via`], falling back to the
//! direct path. The paper found random candidates need a large sample, and
//! picks one candidate per geographic cluster instead (§3);
//! [`cluster_representatives`] is that choice (k-means on the sphere, with
//! the member nearest each centre as the representative).

use crate::time::Dur;

/// Symmetric RTTs between `n` nodes, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct RttMatrix {
    n: usize,
    rtt: Vec<Dur>,
}

impl RttMatrix {
    /// Builds the matrix from `f(u, v)` for `u < v`; the diagonal is zero.
    pub fn from_fn(n: usize, mut f: impl FnMut(usize, usize) -> Dur) -> RttMatrix {
        let mut rtt = vec![Dur::ZERO; n * n];
        for u in 0..n {
            for v in u + 1..n {
                let r = f(u, v);
                rtt[u * n + v] = r;
                rtt[v * n + u] = r;
            }
        }
        RttMatrix { n, rtt }
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn get(&self, u: usize, v: usize) -> Dur {
        self.rtt[u * self.n + v]
    }
}

/// A path from `nodes[0]` to its last node through the nodes between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub nodes: Vec<usize>,
    /// The largest hop RTT (seed 001 §2).
    pub path_rtt: Dur,
    /// The hop RTTs added up.
    pub sum_rtt: Dur,
}

impl Path {
    /// The direct path.
    pub fn direct(m: &RttMatrix, src: usize, dst: usize) -> Path {
        let r = m.get(src, dst);
        Path {
            nodes: vec![src, dst],
            path_rtt: r,
            sum_rtt: r,
        }
    }
    /// The relays, in order.
    pub fn relays(&self) -> &[usize] {
        &self.nodes[1..self.nodes.len().saturating_sub(1).max(1)]
    }
    /// Hops (connections) on the path.
    pub fn hops(&self) -> usize {
        self.nodes.len().saturating_sub(1)
    }
    /// Each hop's RTT, in order.
    pub fn hop_rtts(&self, m: &RttMatrix) -> Vec<Dur> {
        self.nodes.windows(2).map(|w| m.get(w[0], w[1])).collect()
    }
    /// The order paths are preferred in: lower path RTT, then fewer hops,
    /// then lower total RTT.
    fn key(&self) -> (Dur, usize, Dur) {
        (self.path_rtt, self.hops(), self.sum_rtt)
    }
}

/// For every destination, the path from `src` with the lowest path RTT that
/// uses at most `max_relays` relays, each of which `relay_ok` accepts, and
/// among those one with the fewest hops. Each layer keeps one path per
/// node, so among equal path RTTs and hop counts the lower RTT sum is
/// preferred but not guaranteed. Deterministic. Entry `src` is the empty
/// path.
pub fn best_paths(
    m: &RttMatrix,
    src: usize,
    max_relays: usize,
    relay_ok: &dyn Fn(usize) -> bool,
) -> Vec<Path> {
    let n = m.len();
    // After round k, per node, the best path from src with at most k relays.
    let mut best: Vec<Path> = (0..n).map(|v| Path::direct(m, src, v)).collect();
    best[src] = Path {
        nodes: vec![src],
        path_rtt: Dur::ZERO,
        sum_rtt: Dur::ZERO,
    };
    for _ in 0..max_relays {
        let mut next = best.clone();
        for (u, pu) in best.iter().enumerate() {
            if u == src || !relay_ok(u) {
                continue;
            }
            for (v, nv) in next.iter_mut().enumerate() {
                if v == src || v == u || pu.nodes.contains(&v) {
                    continue;
                }
                let w = m.get(u, v);
                let key = (pu.path_rtt.max(w), pu.hops() + 1, pu.sum_rtt + w);
                if key < nv.key() {
                    let mut nodes = pu.nodes.clone();
                    nodes.push(v);
                    *nv = Path {
                        nodes,
                        path_rtt: key.0,
                        sum_rtt: key.2,
                    };
                }
            }
        }
        if next == best {
            break;
        }
        best = next;
    }
    best
}

/// For every destination, the lowest path RTT from `src` with any number
/// of relays (those `relay_ok` accepts). The path returned is one that
/// attains it; among equal path RTTs it is not always the one with the
/// fewest hops.
pub fn best_paths_unlimited(
    m: &RttMatrix,
    src: usize,
    relay_ok: &dyn Fn(usize) -> bool,
) -> Vec<Path> {
    let n = m.len();
    let mut dist = vec![Dur::MAX; n];
    let mut prev = vec![usize::MAX; n];
    let mut done = vec![false; n];
    dist[src] = Dur::ZERO;
    for _ in 0..n {
        let Some(u) = (0..n)
            .filter(|&v| !done[v] && dist[v] != Dur::MAX)
            .min_by_key(|&v| (dist[v], v))
        else {
            break;
        };
        done[u] = true;
        if u != src && !relay_ok(u) {
            continue; // reachable, but carries nothing onwards
        }
        for v in 0..n {
            if !done[v] && v != u {
                let d = dist[u].max(m.get(u, v));
                if d < dist[v] {
                    dist[v] = d;
                    prev[v] = u;
                }
            }
        }
    }
    (0..n)
        .map(|v| {
            let mut nodes = vec![v];
            let mut at = v;
            while at != src && prev[at] != usize::MAX {
                at = prev[at];
                nodes.push(at);
            }
            nodes.reverse();
            let sum_rtt = nodes
                .windows(2)
                .fold(Dur::ZERO, |s, w| s + m.get(w[0], w[1]));
            Path {
                nodes,
                path_rtt: dist[v],
                sum_rtt,
            }
        })
        .collect()
}

/// The best of the direct path and the one-relay paths through
/// `candidates` (src and dst themselves are skipped). Ties go to the
/// direct path, then to the earlier candidate.
pub fn best_via(m: &RttMatrix, src: usize, dst: usize, candidates: &[usize]) -> Path {
    let mut best = Path::direct(m, src, dst);
    for &c in candidates {
        if c == src || c == dst {
            continue;
        }
        let (a, b) = (m.get(src, c), m.get(c, dst));
        let p = Path {
            nodes: vec![src, c, dst],
            path_rtt: a.max(b),
            sum_rtt: a + b,
        };
        if p.key() < best.key() {
            best = p;
        }
    }
    best
}

/// A unit vector for a (latitude, longitude) in degrees.
fn unit(lat: f64, lon: f64) -> [f64; 3] {
    let (la, lo) = (lat.to_radians(), lon.to_radians());
    [la.cos() * lo.cos(), la.cos() * lo.sin(), la.sin()]
}

fn dist2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    (0..3).map(|i| (a[i] - b[i]) * (a[i] - b[i])).sum()
}

/// Groups nodes at `(latitude, longitude)` (degrees) into `k` geographic
/// clusters and returns one representative per cluster: the member nearest
/// the cluster's centre. k-means on the unit sphere with farthest-point
/// initialisation from node 0 and at most `iters` rounds; deterministic.
/// Fewer than `k` come back when there are fewer distinct nodes.
pub fn cluster_representatives(coords: &[(f64, f64)], k: usize, iters: usize) -> Vec<usize> {
    let pts: Vec<[f64; 3]> = coords.iter().map(|&(la, lo)| unit(la, lo)).collect();
    if pts.is_empty() || k == 0 {
        return Vec::new();
    }
    // Farthest-point initialisation.
    let mut centres = vec![pts[0]];
    let mut near: Vec<f64> = pts.iter().map(|p| dist2(p, &pts[0])).collect();
    while centres.len() < k.min(pts.len()) {
        let (i, &d) = near
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
            .expect("non-empty");
        if d <= 0.0 {
            break; // every remaining node coincides with a centre
        }
        centres.push(pts[i]);
        for (j, p) in pts.iter().enumerate() {
            near[j] = near[j].min(dist2(p, &pts[i]));
        }
    }
    let nearest = |p: &[f64; 3], cs: &[[f64; 3]]| {
        (0..cs.len())
            .min_by(|&a, &b| dist2(p, &cs[a]).total_cmp(&dist2(p, &cs[b])))
            .expect("a centre")
    };
    let mut assign: Vec<usize> = pts.iter().map(|p| nearest(p, &centres)).collect();
    for _ in 0..iters {
        let mut sum = vec![[0.0f64; 3]; centres.len()];
        for (p, &c) in pts.iter().zip(&assign) {
            for i in 0..3 {
                sum[c][i] += p[i];
            }
        }
        for (c, s) in centres.iter_mut().zip(&sum) {
            let norm = s.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 0.0 {
                *c = [s[0] / norm, s[1] / norm, s[2] / norm];
            }
        }
        let next: Vec<usize> = pts.iter().map(|p| nearest(p, &centres)).collect();
        if next == assign {
            break;
        }
        assign = next;
    }
    (0..centres.len())
        .filter_map(|c| {
            (0..pts.len()).filter(|&i| assign[i] == c).min_by(|&a, &b| {
                dist2(&pts[a], &centres[c]).total_cmp(&dist2(&pts[b], &centres[c]))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    /// A line of nodes 0..n, 10 ms apart per step, with RTT = distance:
    /// more relays always lower the path RTT.
    fn line(n: usize) -> RttMatrix {
        RttMatrix::from_fn(n, |u, v| ms(10 * (v - u) as u64))
    }

    #[test]
    fn minimax_paths_on_a_line() {
        let m = line(5);
        let all = |_: usize| true;
        let p0 = best_paths(&m, 0, 0, &all);
        assert_eq!(p0[4].nodes, vec![0, 4]);
        assert_eq!(p0[4].path_rtt, ms(40));
        let p1 = best_paths(&m, 0, 1, &all);
        assert_eq!(p1[4].nodes, vec![0, 2, 4]);
        assert_eq!(p1[4].path_rtt, ms(20));
        assert_eq!(p1[4].sum_rtt, ms(40));
        assert_eq!(p1[4].relays(), &[2]);
        let p3 = best_paths(&m, 0, 3, &all);
        assert_eq!(p3[4].nodes, vec![0, 1, 2, 3, 4]);
        assert_eq!(p3[4].hop_rtts(&m), vec![ms(10); 4]);
        let u = best_paths_unlimited(&m, 0, &all);
        assert_eq!(u[4].path_rtt, ms(10));
        assert_eq!(u[4].nodes, vec![0, 1, 2, 3, 4]);
        // Relays that are refused are not used.
        let no2 = |v: usize| v != 2;
        assert_eq!(best_paths(&m, 0, 1, &no2)[4].path_rtt, ms(30));
        assert_eq!(best_paths_unlimited(&m, 0, &no2)[4].path_rtt, ms(20));
    }

    #[test]
    fn a_path_can_win_with_a_larger_rtt_sum() {
        // Direct 75 ms; via 1: 50 + 50. Path RTT 50 < 75 although the sum is 100.
        let m = RttMatrix::from_fn(3, |u, v| match (u, v) {
            (0, 2) => ms(75),
            _ => ms(50),
        });
        let p = best_via(&m, 0, 2, &[1]);
        assert_eq!(p.nodes, vec![0, 1, 2]);
        assert!(p.sum_rtt > m.get(0, 2));
        // No candidate better than direct: direct.
        let m = RttMatrix::from_fn(3, |u, v| if (u, v) == (0, 2) { ms(40) } else { ms(50) });
        assert_eq!(best_via(&m, 0, 2, &[1, 0, 2]).nodes, vec![0, 2]);
    }

    #[test]
    fn clusters_pick_one_node_per_region() {
        // Three tight groups far apart: each representative comes from its own group.
        let mut coords = Vec::new();
        for (la, lo) in [(40.0, -90.0), (50.0, 10.0), (35.0, 135.0)] {
            for i in 0..5 {
                coords.push((la + i as f64 * 0.1, lo - i as f64 * 0.1));
            }
        }
        let reps = cluster_representatives(&coords, 3, 20);
        let mut groups: Vec<usize> = reps.iter().map(|&r| r / 5).collect();
        groups.sort();
        assert_eq!(groups, vec![0, 1, 2]);
        // The middle member is nearest its group's centre.
        assert!(reps.iter().all(|&r| r % 5 == 2), "{reps:?}");
        assert_eq!(cluster_representatives(&coords, 0, 5), Vec::<usize>::new());
        assert_eq!(cluster_representatives(&[(1.0, 1.0); 4], 3, 5).len(), 1);
    }

    proptest! {
        /// The layered programme and the budget-free search agree once the
        /// budget allows every relay, budgets never make paths worse, and a
        /// path's path RTT is the maximum of its hop RTTs.
        #[test]
        fn budgets_are_monotone(rtts in proptest::collection::vec(1u64..200, 21)) {
            let n = 7;
            let mut it = rtts.into_iter();
            let m = RttMatrix::from_fn(n, |_, _| ms(it.next().unwrap()));
            let all = |_: usize| true;
            let mut last: Option<Vec<Path>> = None;
            for k in 0..n - 1 {
                let p = best_paths(&m, 0, k, &all);
                for v in 1..n {
                    let hops = p[v].hop_rtts(&m);
                    prop_assert_eq!(p[v].path_rtt, hops.iter().copied().max().unwrap());
                    prop_assert!(p[v].hops() <= k + 1);
                    if let Some(l) = &last {
                        prop_assert!(p[v].path_rtt <= l[v].path_rtt);
                    }
                }
                last = Some(p);
            }
            let u = best_paths_unlimited(&m, 0, &all);
            let l = last.unwrap();
            for v in 1..n {
                prop_assert_eq!(u[v].path_rtt, l[v].path_rtt);
                prop_assert_eq!(u[v].path_rtt, u[v].hop_rtts(&m).into_iter().max().unwrap());
            }
        }
    }
}
