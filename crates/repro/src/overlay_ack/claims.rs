//! The paper's claims beside our values: each judged over the runs of one
//! configuration, with its 90 % interval (a ratio of means or of variances
//! with a paired bootstrap over seeds, a mean with Student's t).

use super::analysis::{goodput_capacity, Judged, ModeStats};
use super::outputs::Fig2bOut;
use super::setup::{Mode, Setup};
use hopwise_experiment::{plural, Claim, Estimate};

/// What the switch's port buffer was fitted to (docs/reproductions/overlay-ack.md,
/// "calibrated"): the two levels of Fig. 3 and Fig. 6.
const PORT_BUFFER_FIT: &str = "the switch port buffer (64 000 B; the paper's switch does not publish its own) was fitted to the levels of Fig. 3 and Fig. 6 together";

pub(super) fn mbps(x: f64) -> String {
    format!("{:.2} Mbit/s", x / 1e6)
}

/// A→B's phase-2 over phase-1 goodput, as the checks name it.
const AB_RATIO: &str = "A→B's phase-2 goodput / its phase-1 goodput";

/// The claims for `stats` and `judged`, run on `base`; `fig2b` is the
/// probed run's (none in a sensitivity variant, which has no Fig. 2b
/// claim); `fitted`: `base` is the setup whose port buffer was fitted to
/// Fig. 3 and Fig. 6 (not a sensitivity variant), so those claims are
/// marked calibrated.
pub(super) fn claims(
    base: &Setup,
    stats: &[ModeStats],
    judged: &Judged,
    fig2b: Option<&Fig2bOut>,
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
    // The judged value, or the statistic itself as one exact value when
    // the runs left none (they always do).
    let jd = |m: Mode| judged.mode(m);
    let or = |e: Option<&Estimate>, v: f64| e.cloned().unwrap_or_else(|| Estimate::exact(v));
    let mut c = Vec::new();
    let cap = goodput_capacity(base);
    let fair = cap / 2.0;
    let share_of_fair = format!(
        "goodput per flow towards B / the fair share ({})",
        mbps(fair)
    );
    if let Some(p) = get(Mode::Plain) {
        let r = p.ab_phase2_bps / p.ab_phase1_bps;
        c.push(fit(Claim::new(
            "Fig. 3 (§III-B)",
            "Without prioritisation A→B loses about a third as soon as B→C starts",
        )
        .measured(format!(
            "A→B {} (±{:.2}) alone, {} (±{:.2}) shared: ratio {:.2}; CoV of 1 s goodput {:.2}; {:.1} RTOs per run",
            mbps(p.ab_phase1_bps),
            p.ab_phase1_ci / 1e6,
            mbps(p.ab_phase2_bps),
            p.ab_phase2_ci / 1e6,
            r,
            p.ab_phase2_cov,
            p.ab_timeouts
        ))
        .at_most(AB_RATIO, or(jd(Mode::Plain).map(|j| &j.ab_ratio), r), 0.8)));
        if let Some(fig2b) = fig2b {
            c.push(
                Claim::new(
                    "Fig. 2b (§III-B)",
                    "A→B's RTT rises above a second once B's queue fills (the paper's words; the threshold below is ours)",
                )
                .measured(format!(
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
                ))
                .above(
                    "A→B's median SRTT in phase 2 (ms, during the collapse)",
                    or(
                        jd(Mode::Plain).map(|j| &j.ab_srtt2_ms),
                        p.ab_srtt_phase2_ms,
                    ),
                    500.0,
                ),
            );
        }
    }
    if let Some(a) = get(Mode::AckPrio) {
        let r = a.ab_phase2_bps / a.ab_phase1_bps;
        c.push(
            Claim::new(
                "Fig. 5 (§IV)",
                "With ACKs first at B both transfers make close-to-optimal use of the link",
            )
            .measured(format!(
                "A→B {} alone, {} shared: ratio {:.2}",
                mbps(a.ab_phase1_bps),
                mbps(a.ab_phase2_bps),
                r
            ))
            .at_least(AB_RATIO, or(jd(Mode::AckPrio).map(|j| &j.ab_ratio), r), 0.9),
        );
        let bc_max = cap * base.ack_first.throttle;
        c.push(
            Claim::new("Fig. 5 (§IV)", "… and B→C runs near the link rate meanwhile")
                .measured(format!(
                    "B→C {} (±{:.2}) in phase 2",
                    mbps(a.bc_phase2_bps),
                    a.bc_phase2_ci / 1e6
                ))
                .at_least(
                    format!(
                        "B→C's phase-2 goodput / the goodput B's throttled egress can carry ({} × {} = {})",
                        base.ack_first.throttle,
                        mbps(cap),
                        mbps(bc_max)
                    ),
                    or(jd(Mode::AckPrio).map(|j| &j.bc2_bps), a.bc_phase2_bps).times(1.0 / bc_max),
                    0.9,
                ),
        );
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
        c.push(fit(Claim::new(
            "Fig. 6 (§V-A)",
            "With data both ways on each connection the flows towards B drop to about 200 kB/s",
        )
        .measured(format!(
            "towards B {} ({:.0} kB/s) per flow (A→B {}, C→B {}) = {:.0} % of the fair share; var_10s {:.2} (Mbit/s)²",
            mbps(b.towards_b_phase2_bps),
            b.towards_b_phase2_bps / 8e3,
            mbps(b.ab_phase2_bps),
            mbps(b.cb_phase2_bps),
            100.0 * b.towards_b_phase2_bps / fair,
            b.var_10s
        ))
        .at_most(
            share_of_fair.clone(),
            or(jd(Mode::Bidir).map(|j| &j.towards_bps), b.towards_b_phase2_bps).times(1.0 / fair),
            0.5,
        )));
    }
    if let Some(ba) = get(Mode::BidirAckPrio) {
        c.push(
            Claim::new(
                "Fig. 7a (§V-A)",
                "With ACKs first the average recovers: both flows towards B get about half a link",
            )
            .measured(format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} % of the fair share",
                mbps(ba.towards_b_phase2_bps),
                mbps(ba.ab_phase2_bps),
                mbps(ba.cb_phase2_bps),
                100.0 * ba.towards_b_phase2_bps / fair
            ))
            .at_least(
                share_of_fair,
                or(
                    jd(Mode::BidirAckPrio).map(|j| &j.towards_bps),
                    ba.towards_b_phase2_bps,
                )
                .times(1.0 / fair),
                0.8,
            ),
        );
        if let Some(s) = get(Mode::SplitAckPrio) {
            let vr = judged.var_ratio.as_ref();
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
            let ratio = ba.var_10s / s.var_10s;
            c.push(
                Claim::new(
                    "Fig. 7b, 9 (§V-A)",
                    "… but the individual connections still oscillate, with multi-second breakdowns",
                )
                .measured(format!(
                    "var_10s {:.2} (Mbit/s)² vs split-ackprio {:.2}: {:.2}×{ci}; bidir {}; within flows {:.2} vs {:.2}; breakdowns (≥ 2 s under ¼ of the fair share) per flow and run: {:.2} vs {:.2}",
                    ba.var_10s,
                    s.var_10s,
                    ratio,
                    get(Mode::Bidir).map_or("–".to_string(), |b| format!("{:.2}", b.var_10s)),
                    ba.var_10s_within,
                    s.var_10s_within,
                    ba.breakdowns,
                    s.breakdowns
                ))
                .at_least(
                    "bidir-ackprio's var_10s / split-ackprio's",
                    vr.map_or_else(|| Estimate::exact(ratio), |v| v.estimate()),
                    2.0,
                ),
            );
            c.push(
                Claim::new(
                    "Fig. 8, 9 (§V-B)",
                    "One connection per direction makes the throughput much steadier",
                )
                .measured(format!(
                    "var_10s {:.2} vs {:.2} (Mbit/s)² (ratio {:.2}{ci_inv}); towards B {} per flow",
                    s.var_10s,
                    ba.var_10s,
                    s.var_10s / ba.var_10s,
                    mbps(s.towards_b_phase2_bps)
                ))
                .at_most(
                    "split-ackprio's var_10s / bidir-ackprio's",
                    vr.map_or_else(|| Estimate::exact(1.0 / ratio), |v| v.inverse()),
                    0.5,
                ),
            );
        }
    }
    if let (Some(d), Some(s)) = (get(Mode::SplitDynamic), get(Mode::SplitAckPrio)) {
        let ratio = d.var_10s / s.var_10s;
        let dy = d.dynamic.clone();
        let both = dy.as_ref().map_or(0, |x| x.runs_with_both_splits);
        c.push(
            Claim::new(
                "§VI (dynamic split)",
                "Start with one connection per pair, split off a second one on sustained bidirectional traffic, merge after an idle period; after splitting, as steady as split-ackprio",
            )
            .measured(format!(
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
            ))
            .between(
                "split-dynamic's var_10s / split-ackprio's",
                judged
                    .dyn_factor
                    .clone()
                    .unwrap_or_else(|| Estimate::exact(ratio)),
                1.0 / 1.5,
                1.5,
            )
            .at_least("runs in which both pairs split", both, d.runs as f64),
        );
    }
    let corrupt: u64 = stats.iter().map(|s| s.corrupt_bytes).sum();
    c.push(
        Claim::new(
            "integrity",
            "Every byte delivered in order and intact (also across the dynamic split's connection changes)",
        )
        .measured(format!("{corrupt} corrupt bytes"))
        .at_most("corrupt bytes", corrupt, 0.0),
    );
    c
}
