//! Reproduction `overlay-ack`: seed 000, Marks, Tschorsch and
//! Scheuermann, "Unleashing Tor, BitTorrent & Co.: How to Relieve TCP
//! Deficiencies in Overlays". An overlay node's inbound transfer collapses
//! when its ACKs queue behind the node's outbound data (§III); "ACKs first"
//! on the node's egress fixes unidirectional traffic (§IV); piggybacked ACKs
//! defeat it for bidirectional connections (§V-A), which one connection per
//! direction fixes (§V-B); §VI's dynamic split policy is an agent.
//!
//! Setup, parameters and their sources: `docs/reproductions/overlay-ack.md`.

pub mod dynamic;
#[cfg(feature = "lab")]
pub mod lab;
pub mod setup;

pub use dynamic::{DynPolicy, OverlayNode, PeerPlan, PolicyEvent, PolicyEventKind};
pub use setup::{mean_between, Mode, ProbeRow, RunResult, SeenSegment, Setup, Timeline};

use crate::plural;
use crate::{
    bootstrap_ci90, mean_ci90, mean_sd, par_map, quantile, write_csv, write_summary, Claim,
    Experiment, Outcome, Progress, ReproOpts,
};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use hopwise_proto::time::Dur;
use hopwise_sim::spec::Limit;
use serde::Serialize;
use std::path::Path;

pub fn experiment() -> Experiment {
    Experiment {
        name: "overlay-ack",
        about: "Marks et al. 2010 (seed paper 000): ACKs stuck behind data on an overlay link; ACK prioritisation; one connection per direction",
        wall: "quick about 20 s, full about 12 min",
        run,
    }
}

/// Runs per mode by default (the paper: 100).
pub const DEFAULT_RUNS: u32 = 100;
/// Runs per mode with `--quick`.
pub const QUICK_RUNS: u32 = 8;

/// What a reproduction run does; [`Params::full`] and [`Params::quick`] are
/// the CLI's variants, tests build smaller ones.
#[derive(Clone, Debug)]
pub struct Params {
    /// Runs per mode (seeds 1..=runs, the same seeds for every mode).
    pub runs: u32,
    pub modes: Vec<Mode>,
    /// Base setup; `mode` and `seed` are set per run.
    pub base: Setup,
    /// The sensitivity study (switch buffer, receive window, CUBIC's β),
    /// with this many runs per mode and variant; 0 = skip.
    pub sensitivity_runs: u32,
    /// Write SVG figures.
    pub figures: bool,
}

impl Params {
    /// The default variant: the paper's 300 s timeline, 100 runs per mode.
    pub fn full(runs: u32) -> Params {
        Params {
            runs,
            modes: Mode::ALL.to_vec(),
            base: Setup::paper(Mode::Plain, 1),
            sensitivity_runs: 8,
            figures: true,
        }
    }

    /// `--quick`: the same 300 s timeline with fewer runs and no sweep.
    pub fn quick(runs: u32) -> Params {
        Params {
            sensitivity_runs: 0,
            ..Params::full(runs)
        }
    }

    pub fn from_opts(opts: &ReproOpts) -> Params {
        let runs = opts.seeds_or(DEFAULT_RUNS, QUICK_RUNS);
        if opts.quick {
            Params::quick(runs)
        } else {
            Params::full(runs)
        }
    }
}

fn run(opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    run_with(&Params::from_opts(opts), opts, progress)
}

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

fn goodput_capacity(base: &Setup) -> f64 {
    // Payload per 1500 B frame with timestamps: 1448 B.
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

/// bidir-ackprio's `var_10s` over split-ackprio's (the Fig. 7b/8/9 claims),
/// with a 90 % bootstrap interval over runs. Runs with the same seed share
/// start times in both modes, so a resample draws seeds and takes both
/// modes' runs of each (a paired bootstrap).
#[derive(Clone, Debug, Serialize)]
pub struct VarRatio {
    pub ratio: f64,
    pub ci90: (f64, f64),
    pub resamples: usize,
}

fn var_ratio(results: &[RunResult], tl: &Timeline) -> Option<VarRatio> {
    let pooled = |m: Mode| -> Vec<(u64, Vec<f64>)> {
        results
            .iter()
            .filter(|r| r.mode == m)
            .map(|r| (r.seed, samples_10s(r, tl).concat()))
            .collect()
    };
    let (ba, sp) = (pooled(Mode::BidirAckPrio), pooled(Mode::SplitAckPrio));
    if ba.is_empty() || ba.len() != sp.len() || ba.iter().zip(&sp).any(|(a, b)| a.0 != b.0) {
        return None;
    }
    let ratio_of = |idx: &[usize]| {
        let var = |v: &[(u64, Vec<f64>)]| {
            let xs: Vec<f64> = idx.iter().flat_map(|&i| v[i].1.iter().copied()).collect();
            mean_sd(&xs).1.powi(2)
        };
        var(&ba) / var(&sp)
    };
    let all: Vec<usize> = (0..ba.len()).collect();
    const RESAMPLES: usize = 2000;
    Some(VarRatio {
        ratio: ratio_of(&all),
        ci90: bootstrap_ci90(ba.len(), RESAMPLES, "overlay-ack var_10s ratio", ratio_of),
        resamples: RESAMPLES,
    })
}

/// The statistics of one mode over `runs` (the same seeds' runs of `base`'s
/// timeline), as the reproduction reports them; `hopwise lab overlay-ack`
/// uses it for kernel TCP too.
pub fn analyse(mode: Mode, runs: &[&RunResult], base: &Setup) -> ModeStats {
    let tl = &base.timeline;
    let (p1, p2, vw) = (tl.phase1(), tl.phase2(), tl.var_window());
    let per = |f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> {
        runs.iter().map(|r| f(r)).filter(|x| !x.is_nan()).collect()
    };
    let m = |xs: Vec<f64>| mean_sd(&xs).0;
    let ab1 = per(&|r| mean_between(&r.ab, p1.0, p1.1));
    let ab2 = per(&|r| mean_between(&r.ab, p2.0, p2.1));
    let bc2 = per(&|r| mean_between(&r.bc, p2.0, p2.1));
    let cov = per(&|r| {
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
    let towards = per(&|r| {
        let v: Vec<f64> = r
            .towards_b()
            .iter()
            .map(|s| mean_between(s, p2.0, p2.1))
            .collect();
        mean_sd(&v).0
    });
    let srtt_phase = |r: &RunResult, (a, b): (f64, f64)| -> Vec<f64> {
        r.ab_srtt
            .iter()
            .filter(|(t, _)| *t >= a && *t < b)
            .map(|&(_, v)| v)
            .collect()
    };
    let srtt1 = per(&|r| quantile(&srtt_phase(r, p1), 0.5));
    let srtt2 = per(&|r| quantile(&srtt_phase(r, p2), 0.5));
    let over = per(&|r| {
        let v = srtt_phase(r, p2);
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().filter(|&&x| x > 500.0).count() as f64 / v.len() as f64
        }
    });
    let srtt_max = per(&|r| {
        srtt_phase(r, p2)
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
        towards_b_phase2_bps: m(towards),
        cb_phase2_bps: m(per(&|r| mean_between(&r.cb, p2.0, p2.1))),
        ba_phase2_bps: m(per(&|r| mean_between(&r.ba, p2.0, p2.1))),
        ab_srtt_phase1_ms: m(srtt1),
        ab_srtt_phase2_ms: m(srtt2),
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

/// One configuration of the sensitivity study.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    pub variant: String,
    pub switch_buffer: String,
    pub recv_window_bytes: u64,
    pub cc: String,
    pub modes: Vec<ModeStats>,
    /// The claims evaluated on this configuration alone.
    pub claims: Vec<Claim>,
}

impl SweepPoint {
    fn new(variant: &str, setup: &Setup, modes: Vec<ModeStats>) -> SweepPoint {
        let claims = claims(setup, &modes, &Fig2bOut::default(), None, false)
            .into_iter()
            .filter(|c| c.figure != "Fig. 2b (§III-B)")
            .collect();
        SweepPoint {
            variant: variant.to_string(),
            switch_buffer: limit_str(setup.switch_queue),
            recv_window_bytes: setup.tcp.recv_buffer,
            cc: cc_text(&setup.cc),
            modes,
            claims,
        }
    }

    fn mode(&self, m: Mode) -> Option<&ModeStats> {
        self.modes.iter().find(|s| s.mode == m.name())
    }
}

/// A configuration of the sensitivity study.
struct Variant {
    label: String,
    setup: Setup,
    modes: Vec<Mode>,
}

/// The unknowns of the testbed, one at a time: the switch's port buffer,
/// the receive window (Linux 2.6.26's 1.5 MiB against the simulator's
/// default 4 MiB) and CUBIC's β (0.8 in 2.6.26, 0.7 in RFC 9438).
fn variants(base: &Setup, modes: &[Mode]) -> Vec<Variant> {
    let all = modes.to_vec();
    let some = |want: &[Mode]| -> Vec<Mode> {
        want.iter().copied().filter(|m| modes.contains(m)).collect()
    };
    let with = |f: &dyn Fn(&mut Setup)| {
        let mut s = base.clone();
        f(&mut s);
        s
    };
    vec![
        Variant {
            label: "switch 32 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(32_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 48 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(48_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 96 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(96_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 128 kB".into(),
            setup: with(&|s| s.switch_queue = Limit::Bytes(128_000)),
            modes: all.clone(),
        },
        Variant {
            label: "switch 1000 pkt".into(),
            setup: with(&|s| s.switch_queue = Limit::Packets(1000)),
            modes: all.clone(),
        },
        Variant {
            label: "rwnd 4 MiB".into(),
            setup: with(&|s| s.tcp.recv_buffer = 4 << 20),
            modes: some(&[Mode::Plain, Mode::AckPrio, Mode::Bidir, Mode::BidirAckPrio]),
        },
        Variant {
            label: "rwnd 4 MiB + switch 1000 pkt (simulator defaults)".into(),
            setup: with(&|s| {
                s.tcp.recv_buffer = 4 << 20;
                s.switch_queue = Limit::Packets(1000);
            }),
            modes: some(&[Mode::Plain, Mode::AckPrio]),
        },
        Variant {
            label: "CUBIC beta 0.7".into(),
            setup: with(&|s| {
                s.cc = hopwise_proto::cc::CcConfig::Cubic(hopwise_proto::cc::CubicConfig::default())
            }),
            modes: all.clone(),
        },
    ]
}

#[derive(Serialize)]
struct Summary<'a> {
    reproduction: &'static str,
    paper: &'static str,
    runs_per_mode: u32,
    timeline: TimelineOut,
    parameters: ParamsOut,
    units: Units,
    modes: &'a [ModeStats],
    /// bidir-ackprio's var_10s over split-ackprio's, with a bootstrap interval.
    var_10s_ratio: Option<&'a VarRatio>,
    fig2b: Fig2bOut,
    split_events_example: &'a [PolicyEvent],
    sensitivity: &'a [SweepPoint],
    claims: &'a [Claim],
}

#[derive(Serialize)]
struct TimelineOut {
    ab_s: (f64, f64),
    bc_s: (f64, f64),
    duration_s: f64,
    jitter_s: f64,
    phase1_s: (f64, f64),
    phase2_s: (f64, f64),
    var_window_s: (f64, f64),
}

#[derive(Serialize)]
struct ParamsOut {
    link_rate_bps: u64,
    link_delay_us: u64,
    host_queue: String,
    switch_queue: String,
    recv_buffer_bytes: u64,
    send_buffer_bytes: u64,
    initial_window_segments: u64,
    cc: String,
    ack_first: String,
    dyn_policy: DynPolicyOut,
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

/// The dynamic split policy's thresholds (`DynPolicy`), with units.
#[derive(Serialize)]
struct DynPolicyOut {
    check_interval_s: f64,
    threshold_bps: f64,
    sustain_checks: u32,
    idle_s: f64,
    never_split: bool,
}

impl From<&DynPolicy> for DynPolicyOut {
    fn from(p: &DynPolicy) -> Self {
        DynPolicyOut {
            check_interval_s: p.check_interval.as_secs_f64(),
            threshold_bps: p.threshold_bps,
            sustain_checks: p.sustain,
            idle_s: p.idle.as_secs_f64(),
            never_split: p.never_split,
        }
    }
}

/// A congestion controller and its parameters, for summary.json.
fn cc_text(cc: &hopwise_proto::cc::CcConfig) -> String {
    match cc {
        hopwise_proto::cc::CcConfig::Cubic(c) => format!(
            "cubic (RFC 9438): C {}, beta {}, fast convergence {}",
            c.c,
            c.beta,
            if c.fast_convergence { "on" } else { "off" }
        ),
        other => other.name().to_string(),
    }
}

#[derive(Serialize)]
struct Units {
    rates: &'static str,
    var_10s: &'static str,
}

#[derive(Serialize, Default)]
struct Fig2bOut {
    window: (f64, f64),
    max_srtt_ms: f64,
    timeouts: u64,
    retransmits: u64,
    max_queue_b_pkts: u64,
    /// From the packet capture on A's link: A→B segments with data that
    /// left A's NIC, of them retransmissions (ending at or below the highest
    /// byte already sent), ACKs towards A, and the longest gap between two
    /// of those ACKs (s).
    captured_data_segments: u64,
    captured_retransmissions: u64,
    captured_acks: u64,
    longest_ack_gap_s: f64,
}

/// Fig. 2b's time-sequence graph from the captured segments: stream offsets
/// (bytes) relative to the first ACK number seen (else the first sequence
/// number), as tcptrace draws them. A segment is a retransmission if it ends
/// at or below the highest end captured before it, so one captured before
/// any higher segment of the window counts as new data.
#[derive(Default)]
struct SeqTrace {
    /// (time, end offset) of segments carrying new data.
    sent: Vec<(f64, f64)>,
    /// (time, start offset) of retransmitted segments.
    retx: Vec<(f64, f64)>,
    /// (time, cumulative ACK offset) of ACKs towards A.
    acks: Vec<(f64, f64)>,
    /// `fig2b_packets.csv` rows.
    rows: Vec<Vec<String>>,
}

fn seq_trace(seen: &[SeenSegment]) -> SeqTrace {
    let mut tr = SeqTrace::default();
    let Some(base) = seen
        .iter()
        .find(|x| !x.outbound)
        .map(|x| x.ack)
        .or_else(|| seen.first().map(|x| x.seq))
    else {
        return tr;
    };
    // A window holds far less than 2 GB, so the signed 32-bit difference
    // unwraps sequence numbers.
    let off = |x: u32| f64::from(x.wrapping_sub(base) as i32);
    let mut highest = f64::NEG_INFINITY;
    for x in seen {
        // Data rows give the segment's offset, ACK rows the acknowledged
        // offset (the other number has no meaning on this axis).
        let (dir, seq, ack, retx) = if x.outbound {
            if x.len == 0 {
                continue;
            }
            let (start, end) = (off(x.seq), off(x.seq) + f64::from(x.len));
            let retx = end <= highest;
            if retx {
                tr.retx.push((x.t, start));
            } else {
                tr.sent.push((x.t, end));
                highest = end;
            }
            ("data", format!("{start:.0}"), String::new(), retx)
        } else {
            tr.acks.push((x.t, off(x.ack)));
            ("ack", String::new(), format!("{:.0}", off(x.ack)), false)
        };
        tr.rows.push(vec![
            format!("{:.6}", x.t),
            dir.into(),
            seq,
            x.len.to_string(),
            ack,
            u8::from(retx).to_string(),
        ]);
    }
    tr
}

fn limit_str(l: Limit) -> String {
    match l {
        Limit::Bytes(b) => format!("{b} B"),
        Limit::Packets(p) => format!("{p} packets"),
    }
}

fn mbps(x: f64) -> String {
    format!("{:.2} Mbit/s", x / 1e6)
}

/// Runs the reproduction with explicit parameters (the CLI uses
/// [`Params::from_opts`]; tests use small ones).
pub fn run_with(
    params: &Params,
    opts: &ReproOpts,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome> {
    let out = &opts.out;
    std::fs::create_dir_all(out)?;
    let base = &params.base;
    let tl = &base.timeline;
    let mut files = Vec::new();

    // ---- The main runs: every mode × seeds 1..=runs. ----
    let mut items = Vec::new();
    for &mode in &params.modes {
        for k in 0..params.runs {
            let mut s = base.clone();
            s.mode = mode;
            s.seed = 1 + k as u64;
            items.push(s);
        }
    }
    progress.note(&format!(
        "{} modes × {} of {:.0} s simulated",
        params.modes.len(),
        plural(params.runs as usize, "run"),
        tl.duration
    ));
    progress.start("overlay-ack runs", items.len() as u64);
    let results: Vec<anyhow::Result<RunResult>> = par_map(items, opts.jobs, progress, |s| s.run());
    progress.finish();
    let results: Vec<RunResult> = results.into_iter().collect::<anyhow::Result<_>>()?;
    let of_mode = |m: Mode| -> Vec<&RunResult> { results.iter().filter(|r| r.mode == m).collect() };
    let stats: Vec<ModeStats> = params
        .modes
        .iter()
        .map(|&m| analyse(m, &of_mode(m), base))
        .collect();

    // ---- Fig. 2b: one plain run probed finely around B→C's start. ----
    let mut fig2b = Fig2bOut::default();
    let mut probe = Vec::new();
    let mut trace = SeqTrace::default();
    if params.modes.contains(&Mode::Plain) {
        let mut s = base.clone();
        s.mode = Mode::Plain;
        s.seed = 1;
        let w = (tl.bc.0 - 1.0, tl.bc.0 + 30.0);
        s.probe = Some((w.0, w.1, Dur::from_millis(5)));
        let r = s.run()?;
        probe = r.probe;
        trace = seq_trace(&r.seen);
        fig2b.captured_data_segments = (trace.sent.len() + trace.retx.len()) as u64;
        fig2b.captured_retransmissions = trace.retx.len() as u64;
        fig2b.captured_acks = trace.acks.len() as u64;
        fig2b.longest_ack_gap_s = trace
            .acks
            .windows(2)
            .map(|a| a[1].0 - a[0].0)
            .fold(0.0, f64::max);
        write_csv(
            &out.join("fig2b_packets.csv"),
            &[
                "time_s",
                "segment",
                "seq_offset_bytes",
                "payload_bytes",
                "ack_offset_bytes",
                "retransmission",
            ],
            &trace.rows,
        )?;
        files.push("fig2b_packets.csv".to_string());
        fig2b.window = w;
        fig2b.max_srtt_ms = probe.iter().map(|p| p.srtt_ms).fold(0.0, f64::max);
        if let (Some(a), Some(b)) = (probe.first(), probe.last()) {
            fig2b.timeouts = b.timeouts - a.timeouts;
            fig2b.retransmits = b.retransmits - a.retransmits;
        }
        fig2b.max_queue_b_pkts = probe.iter().map(|p| p.q_b).max().unwrap_or(0);
        write_csv(
            &out.join("fig2b.csv"),
            &[
                "time_s",
                "snd_nxt_bytes",
                "snd_una_bytes",
                "retransmits",
                "timeouts",
                "cwnd_bytes",
                "srtt_ms",
                "queue_a_pkts",
                "queue_b_pkts",
                "queue_sw_to_b_pkts",
            ],
            &probe
                .iter()
                .map(|p| {
                    vec![
                        format!("{:.3}", p.t),
                        p.snd_nxt.to_string(),
                        p.snd_una.to_string(),
                        p.retransmits.to_string(),
                        p.timeouts.to_string(),
                        p.cwnd.to_string(),
                        format!("{:.1}", p.srtt_ms),
                        p.q_a.to_string(),
                        p.q_b.to_string(),
                        p.q_sw_b.to_string(),
                    ]
                })
                .collect::<Vec<_>>(),
        )?;
        files.push("fig2b.csv".to_string());
    }

    // ---- Sensitivity: the parameters the paper does not give. ----
    let mut sweep: Vec<SweepPoint> = Vec::new();
    if params.sensitivity_runs > 0 {
        let variants = variants(base, &params.modes);
        let mut items = Vec::new();
        for (vi, v) in variants.iter().enumerate() {
            for &mode in &v.modes {
                for k in 0..params.sensitivity_runs {
                    let mut s = v.setup.clone();
                    s.mode = mode;
                    s.seed = 1 + k as u64;
                    items.push((vi, s));
                }
            }
        }
        progress.note(&format!(
            "sensitivity: {} variants, {} runs",
            variants.len(),
            items.len()
        ));
        progress.start("sensitivity runs", items.len() as u64);
        let res = par_map(items, opts.jobs, progress, |(vi, s)| {
            s.run().map(|r| (vi, r))
        });
        progress.finish();
        let res: Vec<(usize, RunResult)> = res.into_iter().collect::<anyhow::Result<_>>()?;
        // The default configuration first, from the main runs.
        sweep.push(SweepPoint::new(
            "default (switch 64 kB)",
            base,
            stats.clone(),
        ));
        for (vi, v) in variants.iter().enumerate() {
            let st: Vec<ModeStats> = v
                .modes
                .iter()
                .map(|&m| {
                    let rs: Vec<&RunResult> = res
                        .iter()
                        .filter(|x| x.0 == vi && x.1.mode == m)
                        .map(|x| &x.1)
                        .collect();
                    analyse(m, &rs, &v.setup)
                })
                .collect();
            sweep.push(SweepPoint::new(&v.label, &v.setup, st));
        }
        let mut rows = Vec::new();
        let mut crow = Vec::new();
        for p in &sweep {
            for m in &p.modes {
                rows.push(vec![
                    p.variant.clone(),
                    m.mode.to_string(),
                    format!("{:.0}", m.ab_phase1_bps),
                    format!("{:.0}", m.ab_phase2_bps),
                    format!("{:.4}", m.ab_phase2_bps / m.ab_phase1_bps),
                    format!("{:.0}", m.bc_phase2_bps),
                    format!("{:.0}", m.towards_b_phase2_bps),
                    format!("{:.4}", m.var_10s),
                    format!("{:.4}", m.var_10s_within),
                    format!("{:.2}", m.ab_timeouts),
                    format!("{:.3}", m.b_pure_ack_ratio),
                    m.runs.to_string(),
                ]);
            }
            for c in &p.claims {
                crow.push(vec![
                    p.variant.clone(),
                    c.figure.replace(',', ";"),
                    format!("{:?}", c.verdict).to_lowercase(),
                    c.measured.replace(',', ";"),
                ]);
            }
        }
        write_csv(
            &out.join("sensitivity.csv"),
            &[
                "variant",
                "mode",
                "ab_phase1_bps",
                "ab_phase2_bps",
                "ab_ratio",
                "bc_phase2_bps",
                "towards_b_phase2_bps",
                "var_10s_mbps2",
                "var_10s_within_mbps2",
                "ab_timeouts",
                "b_pure_ack_ratio",
                "runs",
            ],
            &rows,
        )?;
        write_csv(
            &out.join("sensitivity_claims.csv"),
            &["variant", "figure", "verdict", "measured"],
            &crow,
        )?;
        files.push("sensitivity.csv".to_string());
        files.push("sensitivity_claims.csv".to_string());
    }

    // ---- CSVs ----
    files.extend(write_tables(out, params, &results, &stats)?);

    // ---- Claims ----
    let var_ratio = var_ratio(&results, tl);
    let claims = claims(base, &stats, &fig2b, var_ratio.as_ref(), true);

    // ---- Figures ----
    if params.figures {
        files.extend(figures(out, params, &results, &probe, &trace, &sweep)?);
    }

    let example_events: Vec<PolicyEvent> = results
        .iter()
        .find(|r| r.mode == Mode::SplitDynamic)
        .map(|r| r.events.clone())
        .unwrap_or_default();
    let summary = Summary {
        reproduction: "overlay-ack",
        paper: "Marks, Tschorsch, Scheuermann: Unleashing Tor, BitTorrent & Co.: How to Relieve TCP Deficiencies in Overlays (LCN 2010; TR-2010-001)",
        runs_per_mode: params.runs,
        timeline: TimelineOut {
            ab_s: tl.ab,
            bc_s: tl.bc,
            duration_s: tl.duration,
            jitter_s: tl.jitter,
            phase1_s: tl.phase1(),
            phase2_s: tl.phase2(),
            var_window_s: tl.var_window(),
        },
        parameters: ParamsOut {
            link_rate_bps: base.link_rate.bps(),
            link_delay_us: base.link_delay.as_micros(),
            host_queue: limit_str(base.host_queue),
            switch_queue: limit_str(base.switch_queue),
            recv_buffer_bytes: base.tcp.recv_buffer,
            send_buffer_bytes: base.tcp.send_buffer,
            initial_window_segments: base.tcp.initial_window,
            cc: cc_text(&base.cc),
            ack_first: format!(
                "B's egress: data class {} of the link, both classes throttled to {}, {} per class",
                base.ack_first.data_share,
                base.ack_first.throttle,
                limit_str(base.ack_first.limit)
            ),
            dyn_policy: (&base.policy).into(),
        },
        units: Units {
            rates: "bit/s (application goodput)",
            var_10s: "(Mbit/s)^2",
        },
        modes: &stats,
        var_10s_ratio: var_ratio.as_ref(),
        fig2b,
        split_events_example: &example_events,
        sensitivity: &sweep,
        claims: &claims,
    };
    write_summary(out, &summary)?;
    files.insert(0, "summary.json".to_string());
    let mut data = crate::data_pairs(
        &["fig3.svg", "fig5.svg", "fig6.svg", "fig7.svg", "fig8.svg"],
        &["goodput_10s.csv", "modes.csv"],
    );
    data.extend(crate::data_pairs(&["fig9.svg"], &["modes.csv", "runs.csv"]));
    data.extend(crate::data_pairs(
        &["split_dynamic.svg"],
        &["splits.csv", "goodput_1s.csv"],
    ));
    Ok(Outcome {
        claims,
        files,
        data,
    })
}

fn write_tables(
    out: &Path,
    params: &Params,
    results: &[RunResult],
    stats: &[ModeStats],
) -> anyhow::Result<Vec<String>> {
    let tl = &params.base.timeline;
    let (p1, p2) = (tl.phase1(), tl.phase2());
    let f = |x: f64| format!("{x:.0}");
    // Per mode.
    write_csv(
        &out.join("modes.csv"),
        &[
            "mode",
            "ab_phase1_bps",
            "ab_phase2_bps",
            "ab_phase2_cov",
            "bc_phase2_bps",
            "var_10s_mbps2",
            "var_10s_within_mbps2",
            "towards_b_phase2_bps",
            "cb_phase2_bps",
            "ba_phase2_bps",
            "ab_srtt_phase1_ms",
            "ab_srtt_phase2_ms",
            "ab_timeouts",
            "breakdowns",
            "runs",
        ],
        &stats
            .iter()
            .map(|s| {
                vec![
                    s.mode.to_string(),
                    f(s.ab_phase1_bps),
                    f(s.ab_phase2_bps),
                    format!("{:.4}", s.ab_phase2_cov),
                    f(s.bc_phase2_bps),
                    format!("{:.4}", s.var_10s),
                    format!("{:.4}", s.var_10s_within),
                    f(s.towards_b_phase2_bps),
                    f(s.cb_phase2_bps),
                    f(s.ba_phase2_bps),
                    format!("{:.1}", s.ab_srtt_phase1_ms),
                    format!("{:.1}", s.ab_srtt_phase2_ms),
                    format!("{:.2}", s.ab_timeouts),
                    format!("{:.3}", s.breakdowns),
                    s.runs.to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    // Per run.
    let nan = |x: f64| if x.is_nan() { String::new() } else { f(x) };
    write_csv(
        &out.join("runs.csv"),
        &[
            "mode",
            "seed",
            "ab_phase1_bps",
            "ab_phase2_bps",
            "bc_phase2_bps",
            "ba_phase2_bps",
            "cb_phase2_bps",
            "ab_timeouts",
            "drops_b_egress",
            "drops_sw_to_b",
            "splits",
            "merges",
        ],
        &results
            .iter()
            .map(|r| {
                let mb = |s: &[f64], (a, b): (f64, f64)| nan(mean_between(s, a, b));
                vec![
                    r.mode.name().to_string(),
                    r.seed.to_string(),
                    mb(&r.ab, p1),
                    mb(&r.ab, p2),
                    mb(&r.bc, p2),
                    mb(&r.ba, p2),
                    mb(&r.cb, p2),
                    r.ab_timeouts.to_string(),
                    r.drops[setup::IF_B_EGRESS].to_string(),
                    r.drops[setup::IF_SW_TO_B].to_string(),
                    r.events
                        .iter()
                        .filter(|e| e.kind == PolicyEventKind::Split)
                        .count()
                        .to_string(),
                    r.events
                        .iter()
                        .filter(|e| e.kind == PolicyEventKind::Merge)
                        .count()
                        .to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    // 10 s means with 90 % CIs (Fig. 3, 5–8).
    let mut rows = Vec::new();
    for &m in &params.modes {
        let rs: Vec<&RunResult> = results.iter().filter(|r| r.mode == m).collect();
        for (flow, sel) in DIRECTIONS {
            let per_run: Vec<Vec<f64>> = rs
                .iter()
                .map(|r| sel(r))
                .filter(|s| !s.is_empty())
                .map(|s| setup::bins(s, 10, tl.duration))
                .collect();
            if per_run.is_empty() {
                continue;
            }
            for k in 0..per_run[0].len() {
                let xs: Vec<f64> = per_run.iter().map(|b| b[k]).collect();
                let (mu, hw) = mean_ci90(&xs);
                rows.push(vec![
                    m.name().to_string(),
                    flow.to_string(),
                    (k * 10).to_string(),
                    f(mu),
                    if hw.is_nan() { String::new() } else { f(hw) },
                ]);
            }
        }
    }
    write_csv(
        &out.join("goodput_10s.csv"),
        &["mode", "flow", "bin_start_s", "mean_bps", "ci90_bps"],
        &rows,
    )?;
    // Splits and merges.
    let ev: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.events.iter().map(move |e| {
                vec![
                    r.mode.name().to_string(),
                    r.seed.to_string(),
                    format!("{:.3}", e.t),
                    e.pair.clone(),
                    format!("{:?}", e.kind).to_lowercase(),
                    e.reason.clone().replace(',', ";"),
                ]
            })
        })
        .collect();
    write_csv(
        &out.join("splits.csv"),
        &["mode", "seed", "time_s", "pair", "event", "reason"],
        &ev,
    )?;
    Ok(vec![
        "modes.csv".into(),
        "runs.csv".into(),
        "goodput_10s.csv".into(),
        "splits.csv".into(),
    ])
}

type Selector = fn(&RunResult) -> &[f64];
const DIRECTIONS: [(&str, Selector); 4] = [
    ("A->B", |r| &r.ab),
    ("B->A", |r| &r.ba),
    ("B->C", |r| &r.bc),
    ("C->B", |r| &r.cb),
];

/// What the switch's port buffer was fitted to (docs/reproductions/overlay-ack.md,
/// "calibrated"): the two levels of Fig. 3 and Fig. 6.
const PORT_BUFFER_FIT: &str = "the switch port buffer (64 000 B; the paper's switch does not publish its own) was fitted to the levels of Fig. 3 and Fig. 6 together";

/// The claims for `stats`, run on `base`; `fitted`: `base` is the setup
/// whose port buffer was fitted to Fig. 3 and Fig. 6 (not a sensitivity
/// variant), so those claims are marked calibrated.
fn claims(
    base: &Setup,
    stats: &[ModeStats],
    fig2b: &Fig2bOut,
    vr: Option<&VarRatio>,
    fitted: bool,
) -> Vec<Claim> {
    let fit = |cl: Claim| {
        if fitted {
            cl.calibrated(PORT_BUFFER_FIT)
        } else {
            cl
        }
    };
    let get = |m: Mode| stats.iter().find(|s| s.mode == m.name());
    let mut c = Vec::new();
    let cap = goodput_capacity(base);
    let fair = cap / 2.0;
    if let Some(p) = get(Mode::Plain) {
        let r = p.ab_phase2_bps / p.ab_phase1_bps;
        c.push(fit(crate::legacy_claim(
            "Fig. 3 (§III-B)",
            "Without prioritisation A→B loses about a third as soon as B→C starts; must show: A→B's phase-2 goodput ≤ 0.8 × its phase-1 goodput",
            format!(
                "A→B {} (±{:.2}) alone, {} (±{:.2}) shared: ratio {:.2}; CoV of 1 s goodput {:.2}; {:.1} RTOs per run",
                mbps(p.ab_phase1_bps),
                p.ab_phase1_ci / 1e6,
                mbps(p.ab_phase2_bps),
                p.ab_phase2_ci / 1e6,
                r,
                p.ab_phase2_cov,
                p.ab_timeouts
            ),
            r <= 0.8,
        )));
        c.push(crate::legacy_claim(
            "Fig. 2b (§III-B)",
            "A→B's RTT rises above a second once B's queue fills; must show: A→B's RTT exceeds 500 ms during the collapse",
            format!(
                "median SRTT in phase 2 {:.0} ms; {}; {:.0} % of phase-2 samples above 500 ms; per-run maximum {:.0} ms; probed run: max {:.0} ms, {} in 30 s; its capture on A's link: {} data segments ({} retransmitted), {} ACKs, longest silence between ACKs {:.2} s",
                p.ab_srtt_phase2_ms,
                if p.ab_srtt_phase1_ms >= p.ab_srtt_phase2_ms {
                    format!(
                        "it does not rise: phase 1 is at {:.0} ms already (A's own 1000-packet queue overflows, see the docs' \"Phase 1 is not smooth\")",
                        p.ab_srtt_phase1_ms
                    )
                } else {
                    format!("phase 1: {:.0} ms", p.ab_srtt_phase1_ms)
                },
                100.0 * p.ab_srtt_phase2_over_500ms,
                p.ab_srtt_phase2_max_ms,
                fig2b.max_srtt_ms,
                plural(fig2b.timeouts as usize, "RTO"),
                fig2b.captured_data_segments,
                fig2b.captured_retransmissions,
                fig2b.captured_acks,
                fig2b.longest_ack_gap_s
            ),
            p.ab_srtt_phase2_ms > 500.0,
        ));
    }
    if let Some(a) = get(Mode::AckPrio) {
        let r = a.ab_phase2_bps / a.ab_phase1_bps;
        c.push(crate::legacy_claim(
            "Fig. 5 (§IV)",
            "With ACKs first at B both transfers make close-to-optimal use of the link; must show: A→B's phase-2 goodput ≥ 0.9 × phase 1",
            format!(
                "A→B {} alone, {} shared: ratio {:.2}",
                mbps(a.ab_phase1_bps),
                mbps(a.ab_phase2_bps),
                r
            ),
            r >= 0.9,
        ));
        let bc_max = cap * base.ack_first.throttle;
        c.push(crate::legacy_claim(
            "Fig. 5 (§IV)",
            format!(
                "… and B→C runs near the link rate meanwhile: ≥ 90 % of the goodput B's throttled egress can carry ({} × {} = {})",
                base.ack_first.throttle,
                mbps(cap),
                mbps(bc_max)
            ),
            format!("B→C {} (±{:.2}) in phase 2", mbps(a.bc_phase2_bps), a.bc_phase2_ci / 1e6),
            a.bc_phase2_bps >= 0.9 * bc_max,
        ));
        if let Some(l) = get(Mode::AckPrioLen64) {
            let rl = l.ab_phase2_bps / l.ab_phase1_bps;
            c.push(Claim::info(
                "§IV filter",
                "The paper's filter (ACK if total length < 64 B) against a no-payload filter; on Linux 6.18 the < 64 B filter stopped helping after the first loss (ACKs with SACK blocks are ≥ 64 B)",
                format!(
                    "ackprio-len64: A→B ratio {:.2} (no-payload: {:.2}), phase 2 {} vs {}; CoV {:.2} vs {:.2}; B→C {}",
                    rl,
                    r,
                    mbps(l.ab_phase2_bps),
                    mbps(a.ab_phase2_bps),
                    l.ab_phase2_cov,
                    a.ab_phase2_cov,
                    mbps(l.bc_phase2_bps)
                ),
            ));
        }
    }
    if let Some(b) = get(Mode::Bidir) {
        c.push(fit(crate::legacy_claim(
            "Fig. 6 (§V-A)",
            format!(
                "With data both ways on each connection the flows towards B drop to about 200 kB/s; must show: far below their fair share (≤ 50 % of {})",
                mbps(fair)
            ),
            format!(
                "towards B {} ({:.0} kB/s) per flow (A→B {}, C→B {}) = {:.0} % of the fair share; var_10s {:.2} (Mbit/s)²",
                mbps(b.towards_b_phase2_bps),
                b.towards_b_phase2_bps / 8e3,
                mbps(b.ab_phase2_bps),
                mbps(b.cb_phase2_bps),
                100.0 * b.towards_b_phase2_bps / fair,
                b.var_10s
            ),
            b.towards_b_phase2_bps <= 0.5 * fair,
        )));
    }
    if let Some(ba) = get(Mode::BidirAckPrio) {
        c.push(crate::legacy_claim(
            "Fig. 7a (§V-A)",
            format!(
                "With ACKs first the average recovers: both flows towards B get about half a link; must show: ≥ 80 % of the fair share ({})",
                mbps(fair)
            ),
            format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} % of the fair share",
                mbps(ba.towards_b_phase2_bps),
                mbps(ba.ab_phase2_bps),
                mbps(ba.cb_phase2_bps),
                100.0 * ba.towards_b_phase2_bps / fair
            ),
            ba.towards_b_phase2_bps >= 0.8 * fair,
        ));
        if let Some(s) = get(Mode::SplitAckPrio) {
            // The bootstrap interval (main runs only) says how far the point
            // estimate could move with other seeds; the verdicts use the
            // point estimate.
            let ci = vr.map_or(String::new(), |v| {
                format!(
                    " (90 % bootstrap interval over runs {:.2}–{:.2})",
                    v.ci90.0, v.ci90.1
                )
            });
            let ci_inv = vr.map_or(String::new(), |v| {
                format!(
                    "; 90 % bootstrap interval over runs {:.2}–{:.2}",
                    1.0 / v.ci90.1,
                    1.0 / v.ci90.0
                )
            });
            c.push(crate::legacy_claim(
                "Fig. 7b, 9 (§V-A)",
                "… but the individual connections still oscillate, with multi-second breakdowns; must show: var_10s stays high (at least twice split-ackprio's)",
                format!(
                    "var_10s {:.2} (Mbit/s)² vs split-ackprio {:.2}: {:.2}×{ci}; bidir {}; within flows {:.2} vs {:.2}; breakdowns (≥ 2 s under ¼ of the fair share) per flow and run: {:.2} vs {:.2}",
                    ba.var_10s,
                    s.var_10s,
                    ba.var_10s / s.var_10s,
                    get(Mode::Bidir).map_or("–".to_string(), |b| format!("{:.2}", b.var_10s)),
                    ba.var_10s_within,
                    s.var_10s_within,
                    ba.breakdowns,
                    s.breakdowns
                ),
                ba.var_10s >= 2.0 * s.var_10s,
            ));
            c.push(crate::legacy_claim(
                "Fig. 8, 9 (§V-B)",
                "One connection per direction makes the throughput much steadier; must show: split-ackprio's var_10s ≤ half of bidir-ackprio's",
                format!(
                    "var_10s {:.2} vs {:.2} (Mbit/s)² (ratio {:.2}{ci_inv}); towards B {} per flow",
                    s.var_10s,
                    ba.var_10s,
                    s.var_10s / ba.var_10s,
                    mbps(s.towards_b_phase2_bps)
                ),
                s.var_10s <= 0.5 * ba.var_10s,
            ));
        }
    }
    if let (Some(d), Some(s)) = (get(Mode::SplitDynamic), get(Mode::SplitAckPrio)) {
        let ratio = d.var_10s / s.var_10s;
        let dy = d.dynamic.clone();
        let both = dy.as_ref().map_or(0, |x| x.runs_with_both_splits);
        c.push(crate::legacy_claim(
            "§VI (dynamic split)",
            "Start with one connection per pair, split off a second one on sustained bidirectional traffic, merge after an idle period; must show: after splitting, as steady as split-ackprio (var_10s within a factor 1.5)",
            format!(
                "var_10s {:.2} vs split-ackprio {:.2} (ratio {:.2}); towards B {} per flow; both pairs split in {}/{} runs, {:.1} s after A–B starts and {:.1} s after B–C starts; {:.1} merges per run, {:.1} s after A–B stops",
                d.var_10s,
                s.var_10s,
                ratio,
                mbps(d.towards_b_phase2_bps),
                both,
                d.runs,
                dy.as_ref().map_or(f64::NAN, |x| x.split_after_ab_start_s),
                dy.as_ref().map_or(f64::NAN, |x| x.split_after_bc_start_s),
                dy.as_ref().map_or(f64::NAN, |x| x.merges_per_run),
                dy.as_ref().map_or(f64::NAN, |x| x.merge_after_ab_stop_s),
            ),
            (1.0 / 1.5..=1.5).contains(&ratio) && both == d.runs,
        ));
    }
    let corrupt: u64 = stats.iter().map(|s| s.corrupt_bytes).sum();
    c.push(crate::legacy_claim(
        "integrity",
        "Every byte delivered in order and intact (also across the dynamic split's connection changes)",
        format!("{corrupt} corrupt bytes"),
        corrupt == 0,
    ));
    c
}

// ------------------------------------------------------------------ figures

fn to_mbps(series: &[f64]) -> Vec<(f64, f64)> {
    series
        .iter()
        .enumerate()
        .map(|(i, v)| (i as f64 + 0.5, v / 1e6))
        .collect()
}

type Points = Vec<(f64, f64)>;

/// Mean and 90 % CI of 10 s bins over runs: (points, band).
fn mean_band(runs: &[&RunResult], sel: Selector, duration: f64) -> (Points, Points) {
    let per: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| sel(r))
        .filter(|s| !s.is_empty())
        .map(|s| setup::bins(s, 10, duration))
        .collect();
    let mut pts = Vec::new();
    let mut band = Vec::new();
    if per.is_empty() {
        return (pts, band);
    }
    for k in 0..per[0].len() {
        let xs: Vec<f64> = per.iter().map(|b| b[k] / 1e6).collect();
        let (m, hw) = mean_ci90(&xs);
        let hw = if hw.is_nan() { 0.0 } else { hw };
        pts.push((k as f64 * 10.0 + 5.0, m));
        band.push((m - hw, m + hw));
    }
    (pts, band)
}

/// What starts at `tl.bc.0` in a chart of `flows`: the B–C connection
/// carries C→B too in the two-way modes, and a chart of the flows towards B
/// shows that direction.
fn bc_start_label(flows: &[(&str, Selector)]) -> &'static str {
    if flows.iter().any(|(name, _)| *name == "C→B") {
        "C→B starts"
    } else {
        "B→C starts"
    }
}

fn avg_chart(title: &str, runs: &[&RunResult], flows: &[(&str, Selector)], tl: &Timeline) -> Chart {
    let mut ch = Chart::new(title)
        .x_label("time (s)")
        .y_label(if runs.len() == 1 {
            "goodput (Mbit/s), 10 s bins"
        } else {
            "goodput (Mbit/s), mean ± 90 % CI"
        })
        .y_range(0.0, 11.0)
        .x_range(0.0, tl.duration);
    for (name, sel) in flows {
        let (p, b) = mean_band(runs, *sel, tl.duration);
        ch.push_series(Series::line_points(*name, p).with_band(b));
    }
    ch.vline(tl.bc.0, bc_start_label(flows))
        .vline(tl.ab.1, "A→B stops")
}

fn single_chart(title: &str, r: &RunResult, flows: &[(&str, Selector)], tl: &Timeline) -> Chart {
    let mut ch = Chart::new(title)
        .x_label("time (s)")
        .y_label("goodput (Mbit/s), 1 s bins")
        .x_range(0.0, tl.duration);
    for (name, sel) in flows {
        ch.push_series(Series::line(*name, to_mbps(sel(r))));
    }
    ch
}

fn figures(
    out: &Path,
    params: &Params,
    results: &[RunResult],
    probe: &[ProbeRow],
    trace: &SeqTrace,
    sweep: &[SweepPoint],
) -> anyhow::Result<Vec<String>> {
    let tl = &params.base.timeline;
    let mut files = Vec::new();
    let of = |m: Mode| -> Vec<&RunResult> { results.iter().filter(|r| r.mode == m).collect() };
    let first = |m: Mode| results.iter().find(|r| r.mode == m);
    let ab: (&str, Selector) = ("A→B", |r| &r.ab);
    let bc: (&str, Selector) = ("B→C", |r| &r.bc);
    let cb: (&str, Selector) = ("C→B", |r| &r.cb);
    fn save(files: &mut Vec<String>, name: &str, svg: std::io::Result<()>) -> anyhow::Result<()> {
        svg?;
        files.push(name.to_string());
        Ok(())
    }

    if let Some(r) = first(Mode::Plain) {
        // Fig. 2a: one run, 1 s bins.
        let ch = single_chart(
            &format!("Fig. 2a: goodput in one run (plain, seed {})", r.seed),
            r,
            &[ab, bc],
            tl,
        );
        write_csv(
            &out.join("fig2a.csv"),
            &["time_s", "ab_bps", "bc_bps"],
            &(0..r.ab.len().max(r.bc.len()))
                .map(|i| {
                    vec![
                        i.to_string(),
                        format!("{:.0}", r.ab.get(i).copied().unwrap_or(0.0)),
                        format!("{:.0}", r.bc.get(i).copied().unwrap_or(0.0)),
                    ]
                })
                .collect::<Vec<_>>(),
        )?;
        files.push("fig2a.csv".into());
        save(&mut files, "fig2a.svg", ch.write_svg(out.join("fig2a.svg")))?;
    }
    if !probe.is_empty() {
        // Fig. 2b: A's sequence and ACK numbers per packet (from the
        // capture), plus what drives them (sampled every 5 ms).
        let mb = |v: &[(f64, f64)]| v.iter().map(|&(t, b)| (t, b / 1e6)).collect::<Vec<_>>();
        // Timeouts, from the sampled counter, at the cumulative ACK then.
        let ack_at = |t: f64| {
            let i = trace.acks.partition_point(|a| a.0 <= t);
            i.checked_sub(1).map_or(0.0, |i| trace.acks[i].1 / 1e6)
        };
        let rto: Vec<(f64, f64)> = probe
            .windows(2)
            .filter(|w| w[1].timeouts > w[0].timeouts)
            .map(|w| (w[1].t, ack_at(w[1].t)))
            .collect();
        // A legend entry for what happened only: "no data" would read as
        // a gap in the capture.
        let mut seq = Chart::new(if rto.is_empty() {
            "(a) A→B time-sequence graph at A's link, every packet; no timeouts in this window"
        } else {
            "(a) A→B time-sequence graph at A's link, every packet"
        })
        .x_label("time (s)")
        .y_label("stream offset (MB)")
        .series(Series::line("data segment sent (end)", mb(&trace.sent)))
        .series(Series::line("ACK towards A", mb(&trace.acks)));
        if !trace.retx.is_empty() {
            seq.push_series(Series::points("retransmitted segment", mb(&trace.retx)));
        }
        if !rto.is_empty() {
            seq.push_series(Series::points("timeout (RTO)", rto));
        }
        let seq = seq.vline(tl.bc.0, "B→C starts");
        let rtt = Chart::new("(b) A→B: smoothed RTT and congestion window")
            .x_label("time (s)")
            .y_label("SRTT (s) / cwnd (MB)")
            .series(Series::line(
                "SRTT (s)",
                probe.iter().map(|p| (p.t, p.srtt_ms / 1000.0)).collect(),
            ))
            .series(Series::line(
                "cwnd (MB)",
                probe.iter().map(|p| (p.t, p.cwnd as f64 / 1e6)).collect(),
            ));
        let q = Chart::new("(c) queues on A→B's path")
            .x_label("time (s)")
            .y_label("packets queued")
            .series(Series::line(
                "B's egress (B→C data + A→B ACKs)",
                probe.iter().map(|p| (p.t, p.q_b as f64)).collect(),
            ))
            .series(Series::line(
                "A's egress",
                probe.iter().map(|p| (p.t, p.q_a as f64)).collect(),
            ))
            .series(Series::line(
                "switch → B",
                probe.iter().map(|p| (p.t, p.q_sw_b as f64)).collect(),
            ));
        let fig = Figure::new(
            "Fig. 2b: A→B in the 30 s after B→C starts (plain, seed 1)",
            1,
        )
        .panel(seq)
        .panel(rtt)
        .panel(q)
        .panel_size(900, 330);
        save(
            &mut files,
            "fig2b.svg",
            fig.write_svg(out.join("fig2b.svg")),
        )?;
    }
    let fig_avg = |title: &str, m: Mode, flows: &[(&str, Selector)]| -> Option<Chart> {
        let rs = of(m);
        (!rs.is_empty()).then(|| avg_chart(title, &rs, flows, tl))
    };
    let n = params.runs;
    let mean_of = if n == 1 {
        "one run".to_string()
    } else {
        format!("mean of {n} runs")
    };
    if let Some(ch) = fig_avg(&format!("Fig. 3: plain, {mean_of}"), Mode::Plain, &[ab, bc]) {
        save(&mut files, "fig3.svg", ch.write_svg(out.join("fig3.svg")))?;
    }
    {
        let mut f = Figure::new("Fig. 5: ACKs first at B (unidirectional transfers)", 1);
        let mut any = false;
        for (m, t) in [
            (Mode::AckPrio, "ackprio (no-payload classifier)"),
            (
                Mode::AckPrioLen64,
                "ackprio-len64 (the paper's < 64 B classifier)",
            ),
        ] {
            if let Some(ch) = fig_avg(&format!("{t}, {mean_of}"), m, &[ab, bc]) {
                f.push_panel(ch);
                any = true;
            }
        }
        if any {
            save(
                &mut files,
                "fig5.svg",
                f.panel_size(900, 360).write_svg(out.join("fig5.svg")),
            )?;
        }
    }
    if let Some(ch) = fig_avg(
        &format!("Fig. 6: bidirectional connections, plain FIFOs, flows towards B, {mean_of}"),
        Mode::Bidir,
        &[ab, cb],
    ) {
        save(&mut files, "fig6.svg", ch.write_svg(out.join("fig6.svg")))?;
    }
    // The single runs of Fig. 7b, 8b and split_dynamic (b), 1 s bins.
    let mut single_rows: Vec<Vec<String>> = Vec::new();
    let mut single = |r: &RunResult, flows: &[(&str, Selector)]| {
        for (name, sel) in flows {
            for (i, v) in sel(r).iter().enumerate() {
                single_rows.push(vec![
                    r.mode.name().to_string(),
                    r.seed.to_string(),
                    name.to_string(),
                    i.to_string(),
                    format!("{v:.0}"),
                ]);
            }
        }
    };
    for (file, title, m) in [
        (
            "fig7.svg",
            "Fig. 7: bidirectional connections with ACKs first at B",
            Mode::BidirAckPrio,
        ),
        (
            "fig8.svg",
            "Fig. 8: one connection per direction, ACKs first at B",
            Mode::SplitAckPrio,
        ),
    ] {
        if let (Some(a), Some(r)) = (
            fig_avg(&format!("(a) flows towards B, {mean_of}"), m, &[ab, cb]),
            first(m),
        ) {
            let b = single_chart(&format!("(b) one run (seed {}), A→B", r.seed), r, &[ab], tl);
            single(r, &[ab]);
            let f = Figure::new(title, 1).panel(a).panel(b).panel_size(900, 360);
            save(&mut files, file, f.write_svg(out.join(file)))?;
        }
    }
    if let (Some(a), Some(r)) = (
        fig_avg(
            &format!("(a) flows towards B, {mean_of}"),
            Mode::SplitDynamic,
            &[ab, cb],
        ),
        first(Mode::SplitDynamic),
    ) {
        let mut b = single_chart(
            &format!(
                "(b) one run (seed {}) with the policy's splits and merges",
                r.seed
            ),
            r,
            &[ab, cb],
            tl,
        );
        single(r, &[ab, cb]);
        for e in &r.events {
            b = b.vline(e.t, format!("{} {:?}", e.pair, e.kind).to_lowercase());
        }
        let f = Figure::new("§VI: dynamic split (ACKs first at B)", 1)
            .panel(a)
            .panel(b)
            .panel_size(900, 360);
        save(
            &mut files,
            "split_dynamic.svg",
            f.write_svg(out.join("split_dynamic.svg")),
        )?;
    }
    if !single_rows.is_empty() {
        write_csv(
            &out.join("goodput_1s.csv"),
            &["mode", "seed", "flow", "bin_start_s", "bps"],
            &single_rows,
        )?;
        files.push("goodput_1s.csv".into());
    }
    {
        // Fig. 9: variance of the 10 s samples towards B, per mode.
        let base = &params.base;
        let bars: Vec<(String, f64)> = params
            .modes
            .iter()
            .map(|&m| (m.name().to_string(), analyse(m, &of(m), base).var_10s))
            .collect();
        let ch = BarChart::new(format!(
            "Fig. 9: variance of 10 s goodput samples towards B, {:.0}–{:.0} s",
            tl.var_window().0,
            tl.var_window().1
        ))
        .y_label("variance ((Mbit/s)²)")
        .group("var_10s", bars)
        .size(900, 400);
        save(&mut files, "fig9.svg", ch.write_svg(out.join("fig9.svg")))?;
    }
    if !sweep.is_empty() {
        let label = |p: &SweepPoint| p.variant.clone();
        let per = |m: Mode, f: &dyn Fn(&ModeStats) -> f64| -> Vec<(String, f64)> {
            sweep
                .iter()
                .filter_map(|p| p.mode(m).map(|s| (label(p), f(s))))
                .collect()
        };
        let fair = goodput_capacity(&params.base) / 2.0;
        let a = BarChart::new("(a) A→B phase 2 / phase 1 (Fig. 3: about 0.67; must show ≤ 0.8)")
            .y_label("ratio")
            .group(
                "plain",
                per(Mode::Plain, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
            )
            .group(
                "ackprio",
                per(Mode::AckPrio, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
            )
            .group(
                "ackprio-len64",
                per(Mode::AckPrioLen64, &|s| s.ab_phase2_bps / s.ab_phase1_bps),
            );
        let b = BarChart::new(
            "(b) flows towards B in phase 2 / fair share (Fig. 6: about 0.33; Fig. 7a: about 1)",
        )
        .y_label("fraction of the fair share")
        .group(
            "bidir",
            per(Mode::Bidir, &|s| s.towards_b_phase2_bps / fair),
        )
        .group(
            "bidir-ackprio",
            per(Mode::BidirAckPrio, &|s| s.towards_b_phase2_bps / fair),
        )
        .group(
            "split-ackprio",
            per(Mode::SplitAckPrio, &|s| s.towards_b_phase2_bps / fair),
        );
        let c = BarChart::new("(c) var_10s of the flows towards B (Fig. 9)")
            .y_label("variance ((Mbit/s)²)")
            .group("bidir-ackprio", per(Mode::BidirAckPrio, &|s| s.var_10s))
            .group("split-ackprio", per(Mode::SplitAckPrio, &|s| s.var_10s))
            .group("split-dynamic", per(Mode::SplitDynamic, &|s| s.var_10s));
        let f = Figure::new("Sensitivity to the parameters the paper does not state", 1)
            .panel(a)
            .panel(b)
            .panel(c)
            .panel_size(1000, 380);
        save(
            &mut files,
            "sensitivity.svg",
            f.write_svg(out.join("sensitivity.svg")),
        )?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(t: f64, outbound: bool, seq: u32, ack: u32, len: u32) -> SeenSegment {
        SeenSegment {
            t,
            outbound,
            seq,
            ack,
            len,
            flags: 0x10,
        }
    }

    #[test]
    fn seq_trace_unwraps_offsets_and_separates_retransmissions() {
        let top = u32::MAX - 999;
        let seen = [
            seg(0.0, true, top, 1, 1000),
            seg(0.1, false, 1, top, 0),
            // Crosses 2^32.
            seg(0.2, true, top.wrapping_add(1000), 1, 1000),
            seg(0.3, true, top.wrapping_add(2000), 1, 1000),
            // A pure ACK from A carries no data and is left out.
            seg(0.35, true, top.wrapping_add(3000), 1, 0),
            // The first segment again.
            seg(0.4, true, top, 1, 1000),
            seg(0.5, false, 1, top.wrapping_add(3000), 0),
        ];
        let tr = seq_trace(&seen);
        // Offsets relative to the first ACK number seen (top).
        assert_eq!(tr.sent, vec![(0.0, 1000.0), (0.2, 2000.0), (0.3, 3000.0)]);
        assert_eq!(tr.retx, vec![(0.4, 0.0)]);
        assert_eq!(tr.acks, vec![(0.1, 0.0), (0.5, 3000.0)]);
        assert_eq!(tr.rows.len(), 6);
        assert_eq!(tr.rows[4][1..], ["data", "0", "1000", "", "1"]);
        assert_eq!(tr.rows[5][1..], ["ack", "", "0", "3000", "0"]);
        assert!(seq_trace(&[]).rows.is_empty());
    }
}
