//! The statistics of a mode over its runs ([`analyse`], which the lab uses
//! for kernel TCP too), and the values the claims judge with their 90 %
//! intervals over runs ([`judge`]).

use super::dynamic::PolicyEventKind;
use super::setup::{self, mean_between, Mode, RunResult, Setup, Timeline};
use hopwise_experiment::stats::{bootstrap_ci90, mean_ci90, mean_sd, quantile};
use hopwise_experiment::Estimate;
use serde::Serialize;

/// Statistics of one mode over all runs. Rates in bit/s.
#[derive(Clone, Debug, Serialize)]
pub struct ModeStats {
    pub mode: &'static str,
    /// A→B's mean goodput in phase 1 (A→B alone) and phase 2 (both
    /// transfers); for two-way modes the A→B direction.
    pub ab_phase1_bps: f64,
    pub ab_phase2_bps: f64,
    /// Coefficient of variation of A→B's 1 s goodput in phase 2 (mean over runs).
    pub ab_phase2_cov: f64,
    /// B→C's mean goodput in phase 2.
    pub bc_phase2_bps: f64,
    /// Sample variance of the 10 s goodput samples of every flow towards B
    /// (A→B, and C→B in two-way modes) in the Fig. 9 window (100–250 s),
    /// pooled over runs, in (Mbit/s)².
    pub var_10s: f64,
    /// The same samples' variance within each flow and run, averaged: the
    /// oscillation alone, without the differences between flows' means
    /// (unfairness, slow convergence) that `var_10s` also contains.
    pub var_10s_within: f64,
    /// 90 % confidence half-widths of the phase means (over runs).
    pub ab_phase1_ci: f64,
    pub ab_phase2_ci: f64,
    pub bc_phase2_ci: f64,
    /// Mean phase-2 goodput of the flows towards B (two-way modes: the mean
    /// of A→B and C→B), and of C→B and B→A.
    pub towards_b_phase2_bps: f64,
    pub cb_phase2_bps: f64,
    pub ba_phase2_bps: f64,
    /// A→B's smoothed RTT: mean over runs of the per-run median in each
    /// phase, and the fraction of phase-2 samples above 500 ms.
    pub ab_srtt_phase1_ms: f64,
    pub ab_srtt_phase2_ms: f64,
    pub ab_srtt_phase2_over_500ms: f64,
    pub ab_srtt_phase2_max_ms: f64,
    /// Retransmission timeouts and fast recoveries of A→B's sender per run.
    pub ab_timeouts: f64,
    pub ab_recoveries: f64,
    /// Multi-second breakdowns: runs of ≥ 2 one-second bins below 25 % of
    /// the fair share, per flow towards B and run, in the Fig. 9 window.
    pub breakdowns: f64,
    /// B's pure ACKs per two data segments B received (1 = every ACK that
    /// delayed ACKs call for went out on its own; lower = piggybacked).
    pub b_pure_ack_ratio: f64,
    /// Mean drops per run at each port (A→sw, sw→A, B→sw, sw→B, C→sw, sw→C);
    /// in summary.json an object keyed by port.
    #[serde(serialize_with = "ports_by_name")]
    pub drops: [f64; 6],
    pub corrupt_bytes: u64,
    pub runs: usize,
    /// split-dynamic: mean time from each pair's start to its first split,
    /// splits and merges per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic: Option<DynStats>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DynStats {
    pub split_after_ab_start_s: f64,
    pub split_after_bc_start_s: f64,
    pub merge_after_ab_stop_s: f64,
    pub merge_after_bc_stop_s: f64,
    pub splits_per_run: f64,
    pub merges_per_run: f64,
    /// Runs in which both pairs split.
    pub runs_with_both_splits: usize,
}

/// Per-port values keyed by the port's name, in the order of `drops`.
fn ports_by_name<S: serde::Serializer>(v: &[f64; 6], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let names = [
        "a_to_sw", "sw_to_a", "b_to_sw", "sw_to_b", "c_to_sw", "sw_to_c",
    ];
    let mut m = s.serialize_map(Some(6))?;
    for (n, x) in names.iter().zip(v) {
        m.serialize_entry(n, x)?;
    }
    m.end()
}

/// The application goodput a full link carries: 1448 B of payload per
/// 1500 B frame with timestamps.
pub fn goodput_capacity(base: &Setup) -> f64 {
    base.link_rate.bps() as f64 * 1448.0 / 1500.0
}

/// Fig. 9's samples of one run: per flow towards B, its 10 s goodputs
/// (Mbit/s) wholly inside the variance window.
fn samples_10s(r: &RunResult, tl: &Timeline) -> Vec<Vec<f64>> {
    let vw = tl.var_window();
    r.towards_b()
        .into_iter()
        .map(|s| {
            setup::bins(s, 10, tl.duration)
                .iter()
                .enumerate()
                .filter(|&(k, _)| {
                    let (a, e) = ((k * 10) as f64, (k * 10 + 10) as f64);
                    a >= vw.0 - 1e-9 && e <= vw.1 + 1e-9
                })
                .map(|(_, v)| v / 1e6)
                .collect()
        })
        .collect()
}

/// One run's phase values, NaN where the run has none.
struct PerRun {
    ab1: f64,
    ab2: f64,
    bc2: f64,
    /// The mean phase-2 goodput of the flows towards B.
    towards: f64,
    /// A→B's median SRTT in phase 2 (ms).
    srtt2: f64,
}

fn srtt_in(r: &RunResult, (a, b): (f64, f64)) -> Vec<f64> {
    r.ab_srtt
        .iter()
        .filter(|(t, _)| *t >= a && *t < b)
        .map(|&(_, v)| v)
        .collect()
}

impl PerRun {
    fn of(r: &RunResult, tl: &Timeline) -> PerRun {
        let (p1, p2) = (tl.phase1(), tl.phase2());
        let v: Vec<f64> = r
            .towards_b()
            .iter()
            .map(|s| mean_between(s, p2.0, p2.1))
            .collect();
        PerRun {
            ab1: mean_between(&r.ab, p1.0, p1.1),
            ab2: mean_between(&r.ab, p2.0, p2.1),
            bc2: mean_between(&r.bc, p2.0, p2.1),
            towards: mean_sd(&v).0,
            srtt2: quantile(&srtt_in(r, p2), 0.5),
        }
    }
}

/// `f` of every run, the runs without a value left out.
fn per(runs: &[PerRun], f: impl Fn(&PerRun) -> f64) -> Vec<f64> {
    runs.iter().map(f).filter(|x| !x.is_nan()).collect()
}

/// The statistics of one mode over `runs` (the same seeds' runs of `base`'s
/// timeline), as the reproduction reports them; `hopwise lab overlay-ack`
/// uses it for kernel TCP too.
pub fn analyse(mode: Mode, runs: &[&RunResult], base: &Setup) -> ModeStats {
    let tl = &base.timeline;
    let (p1, p2, vw) = (tl.phase1(), tl.phase2(), tl.var_window());
    let each = |f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> {
        runs.iter().map(|r| f(r)).filter(|x| !x.is_nan()).collect()
    };
    let m = |xs: Vec<f64>| mean_sd(&xs).0;
    let phases: Vec<PerRun> = runs.iter().map(|r| PerRun::of(r, tl)).collect();
    let ab1 = per(&phases, |p| p.ab1);
    let ab2 = per(&phases, |p| p.ab2);
    let bc2 = per(&phases, |p| p.bc2);
    let cov = each(&|r| {
        let (i0, i1) = (p2.0 as usize, (p2.1 as usize).min(r.ab.len()));
        let (mu, sd) = mean_sd(&r.ab[i0..i1]);
        if mu > 0.0 {
            sd / mu
        } else {
            f64::NAN
        }
    });
    // Fig. 9: 10 s samples wholly inside the window, flows towards B.
    let mut samples = Vec::new();
    let fair = goodput_capacity(base) / if mode.two_way() { 2.0 } else { 1.0 };
    let mut breakdowns = Vec::new();
    let mut within = Vec::new();
    for r in runs {
        for (s, mine) in r.towards_b().into_iter().zip(samples_10s(r, tl)) {
            samples.extend_from_slice(&mine);
            if mine.len() > 1 {
                within.push(mean_sd(&mine).1.powi(2));
            }
            // Breakdowns: ≥ 2 consecutive 1 s bins under a quarter of the fair share.
            let (i0, i1) = (vw.0 as usize, (vw.1 as usize).min(s.len()));
            let mut n = 0;
            let mut run = 0;
            for &x in &s[i0..i1] {
                if x < 0.25 * fair {
                    run += 1;
                    if run == 2 {
                        n += 1;
                    }
                } else {
                    run = 0;
                }
            }
            breakdowns.push(n as f64);
        }
    }
    let var_10s = mean_sd(&samples).1.powi(2);
    let srtt1 = each(&|r| quantile(&srtt_in(r, p1), 0.5));
    let over = each(&|r| {
        let v = srtt_in(r, p2);
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().filter(|&&x| x > 500.0).count() as f64 / v.len() as f64
        }
    });
    let srtt_max = each(&|r| {
        srtt_in(r, p2)
            .into_iter()
            .fold(f64::NAN, |a: f64, b| a.max(b))
    });
    let mut drops = [0.0; 6];
    for (i, d) in drops.iter_mut().enumerate() {
        *d = m(runs.iter().map(|r| r.drops[i] as f64).collect());
    }
    let dynamic = (mode == Mode::SplitDynamic).then(|| dyn_stats(runs, tl));
    ModeStats {
        mode: mode.name(),
        ab_phase1_bps: mean_sd(&ab1).0,
        ab_phase2_bps: mean_sd(&ab2).0,
        ab_phase2_cov: m(cov),
        bc_phase2_bps: mean_sd(&bc2).0,
        var_10s,
        var_10s_within: m(within),
        ab_phase1_ci: mean_ci90(&ab1).1,
        ab_phase2_ci: mean_ci90(&ab2).1,
        bc_phase2_ci: mean_ci90(&bc2).1,
        towards_b_phase2_bps: m(per(&phases, |p| p.towards)),
        cb_phase2_bps: m(each(&|r| mean_between(&r.cb, p2.0, p2.1))),
        ba_phase2_bps: m(each(&|r| mean_between(&r.ba, p2.0, p2.1))),
        ab_srtt_phase1_ms: m(srtt1),
        ab_srtt_phase2_ms: m(per(&phases, |p| p.srtt2)),
        ab_srtt_phase2_over_500ms: m(over),
        ab_srtt_phase2_max_ms: m(srtt_max),
        ab_timeouts: m(runs.iter().map(|r| r.ab_timeouts as f64).collect()),
        ab_recoveries: m(runs.iter().map(|r| r.ab_recoveries as f64).collect()),
        breakdowns: m(breakdowns),
        b_pure_ack_ratio: {
            let (p, n): (u64, u64) = runs
                .iter()
                .fold((0, 0), |a, r| (a.0 + r.b_pure_acks, a.1 + r.b_rx_segments));
            if n == 0 {
                f64::NAN
            } else {
                p as f64 / (n as f64 / 2.0)
            }
        },
        drops,
        corrupt_bytes: runs.iter().map(|r| r.corrupt).sum(),
        runs: runs.len(),
        dynamic,
    }
}

fn dyn_stats(runs: &[&RunResult], tl: &Timeline) -> DynStats {
    let first = |pair: &str, kind: PolicyEventKind, after: f64| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| {
                r.events
                    .iter()
                    .find(|e| e.pair == pair && e.kind == kind && e.t >= after)
                    .map(|e| e.t - after)
            })
            .collect()
    };
    let count = |k: PolicyEventKind| {
        mean_sd(
            &runs
                .iter()
                .map(|r| r.events.iter().filter(|e| e.kind == k).count() as f64)
                .collect::<Vec<_>>(),
        )
        .0
    };
    DynStats {
        split_after_ab_start_s: mean_sd(&first("A-B", PolicyEventKind::Split, tl.ab.0)).0,
        split_after_bc_start_s: mean_sd(&first("B-C", PolicyEventKind::Split, tl.bc.0)).0,
        merge_after_ab_stop_s: mean_sd(&first("A-B", PolicyEventKind::Merge, tl.ab.1)).0,
        merge_after_bc_stop_s: mean_sd(&first("B-C", PolicyEventKind::Merge, tl.bc.1)).0,
        splits_per_run: count(PolicyEventKind::Split),
        merges_per_run: count(PolicyEventKind::Merge),
        runs_with_both_splits: runs
            .iter()
            .filter(|r| {
                ["A-B", "B-C"].iter().all(|p| {
                    r.events
                        .iter()
                        .any(|e| e.pair == *p && e.kind == PolicyEventKind::Split)
                })
            })
            .count(),
    }
}

/// Bootstrap resamples of every interval here.
const RESAMPLES: usize = 2000;

/// bidir-ackprio's `var_10s` over split-ackprio's (the Fig. 7b/8/9 claims),
/// with a 90 % bootstrap interval over runs. Runs with the same seed share
/// start times in both modes, so a resample draws seeds and takes both
/// modes' runs of each (a paired bootstrap).
#[derive(Clone, Debug, Serialize)]
pub struct VarRatio {
    pub ratio: f64,
    pub ci90: (f64, f64),
    pub resamples: usize,
    /// Runs (seeds) per mode.
    pub runs: usize,
}

impl VarRatio {
    pub fn estimate(&self) -> Estimate {
        if self.runs < 2 {
            return Estimate::exact(self.ratio);
        }
        Estimate::bootstrap(self.ratio, self.ci90, self.runs)
    }

    /// The inverse ratio (split-ackprio's over bidir-ackprio's), with the
    /// interval's ends inverted.
    pub fn inverse(&self) -> Estimate {
        if self.runs < 2 {
            return Estimate::exact(1.0 / self.ratio);
        }
        Estimate::bootstrap(
            1.0 / self.ratio,
            (1.0 / self.ci90.1, 1.0 / self.ci90.0),
            self.runs,
        )
    }
}

/// `num`'s `var_10s` over `den`'s, with its paired bootstrap
/// interval over seeds (the stream `name`); `None` unless both modes ran
/// the same seeds.
fn var_ratio_by(
    runs: &[&RunResult],
    tl: &Timeline,
    (num, den): (Mode, Mode),
    name: &str,
) -> Option<VarRatio> {
    let pooled = |m: Mode| -> Vec<(u64, Vec<f64>)> {
        runs.iter()
            .filter(|r| r.mode == m)
            .map(|r| (r.seed, samples_10s(r, tl).concat()))
            .collect()
    };
    let (a, b) = (pooled(num), pooled(den));
    if a.is_empty() || a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| x.0 != y.0) {
        return None;
    }
    let ratio_of = |idx: &[usize]| {
        let var = |v: &[(u64, Vec<f64>)]| {
            let xs: Vec<f64> = idx.iter().flat_map(|&i| v[i].1.iter().copied()).collect();
            mean_sd(&xs).1.powi(2)
        };
        var(&a) / var(&b)
    };
    let all: Vec<usize> = (0..a.len()).collect();
    Some(VarRatio {
        ratio: ratio_of(&all),
        ci90: bootstrap_ci90(a.len(), RESAMPLES, name, ratio_of),
        resamples: RESAMPLES,
        runs: a.len(),
    })
}

/// bidir-ackprio's `var_10s` over split-ackprio's among `runs`.
pub fn var_ratio(runs: &[&RunResult], tl: &Timeline) -> Option<VarRatio> {
    var_ratio_by(
        runs,
        tl,
        (Mode::BidirAckPrio, Mode::SplitAckPrio),
        "overlay-ack var_10s ratio",
    )
}

/// The values of one mode that the claims judge, over its runs.
#[derive(Clone, Debug)]
pub struct ModeJudged {
    pub mode: Mode,
    /// A→B's phase-2 over phase-1 goodput: a ratio of means, with a paired
    /// bootstrap (each run gives both phases).
    pub ab_ratio: Estimate,
    /// A→B's median SRTT in phase 2 (ms), the mean over runs (t).
    pub ab_srtt2_ms: Estimate,
    /// B→C's and the flows towards B's phase-2 goodput (bit/s), means over
    /// runs (t).
    pub bc2_bps: Estimate,
    pub towards_bps: Estimate,
}

/// What the claims judge for one configuration, with 90 % intervals over
/// its runs (a single run's values are exact).
#[derive(Clone, Debug, Default)]
pub struct Judged {
    pub modes: Vec<ModeJudged>,
    /// bidir-ackprio's `var_10s` over split-ackprio's.
    pub var_ratio: Option<VarRatio>,
    /// split-dynamic's `var_10s` over split-ackprio's (paired bootstrap,
    /// as `var_ratio`).
    pub dyn_factor: Option<Estimate>,
}

impl Judged {
    pub fn mode(&self, m: Mode) -> Option<&ModeJudged> {
        self.modes.iter().find(|j| j.mode == m)
    }
}

/// The judged values of `modes` from `runs` (every mode's runs of one
/// configuration on `base`'s timeline); `stats` are the same runs'
/// statistics, whose values the estimates carry.
pub fn judge(modes: &[Mode], runs: &[&RunResult], stats: &[ModeStats], base: &Setup) -> Judged {
    let tl = &base.timeline;
    let per_mode = modes
        .iter()
        .filter_map(|&m| {
            stats.iter().find(|s| s.mode == m.name())?;
            let phases: Vec<PerRun> = runs
                .iter()
                .filter(|r| r.mode == m)
                .map(|r| PerRun::of(r, tl))
                .collect();
            let col = |f: fn(&PerRun) -> f64| phases.iter().map(f).collect::<Vec<_>>();
            Some(ModeJudged {
                mode: m,
                ab_ratio: Estimate::ratio_of_means(
                    &format!("overlay-ack {} A→B phase 2 / phase 1", m.name()),
                    &col(|p| p.ab2),
                    &col(|p| p.ab1),
                ),
                ab_srtt2_ms: Estimate::mean_t90(&per(&phases, |p| p.srtt2)),
                bc2_bps: Estimate::mean_t90(&per(&phases, |p| p.bc2)),
                towards_bps: Estimate::mean_t90(&per(&phases, |p| p.towards)),
            })
        })
        .collect();
    let dyn_factor = var_ratio_by(
        runs,
        tl,
        (Mode::SplitDynamic, Mode::SplitAckPrio),
        "overlay-ack split-dynamic var_10s factor",
    )
    .map(|v| v.estimate());
    Judged {
        modes: per_mode,
        var_ratio: var_ratio(runs, tl),
        dyn_factor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_experiment::Interval;

    #[test]
    fn the_inverse_ratio_inverts_the_interval_and_shares_scale() {
        let v = VarRatio {
            ratio: 2.0,
            ci90: (1.6, 2.5),
            resamples: 2000,
            runs: 100,
        };
        assert_eq!(v.estimate().ci90, Some([1.6, 2.5]));
        let inv = v.inverse();
        assert_eq!(inv.value, 0.5);
        assert_eq!(inv.ci90, Some([0.4, 0.625]));
        assert_eq!(inv.interval, Some(Interval::Bootstrap { n: 100 }));
        let one = VarRatio { runs: 1, ..v };
        assert_eq!(one.inverse(), Estimate::exact(0.5));
    }
}
