//! The reproduction's claims judged on kernel TCP (one run per mode, so
//! exact values), with the simulator's value beside each.

use super::{Stats, KERNEL_CAPACITY_BPS, THROTTLE};
use crate::overlay_ack::{Mode, Timeline};
use hopwise_experiment::Claim;

fn mbps(x: f64) -> String {
    format!("{:.2} Mbit/s", x / 1e6)
}

/// A→B's phase-2 over phase-1 goodput, as the checks name it.
const AB_RATIO: &str = "A→B's phase-2 goodput / its phase-1 goodput";

pub(super) fn claims(kernel: &[Stats], sim: &[Stats], tl: &Timeline) -> Vec<Claim> {
    let k = |m: Mode| kernel.iter().find(|s| s.mode == m.name());
    let s = |m: Mode| sim.iter().find(|s| s.mode == m.name());
    let beside = |m: Mode, f: &dyn Fn(&Stats) -> String| {
        s(m).map_or(String::new(), |x| {
            format!(
                "; simulator (hopwise's TCP set up as Linux 2.6.26, {} runs): {}",
                x.runs,
                f(x)
            )
        })
    };
    let (p1, p2) = (tl.phase1(), tl.phase2());
    let fair = KERNEL_CAPACITY_BPS / 2.0;
    let share_of_fair = format!(
        "goodput per flow towards B / the fair share ({})",
        mbps(fair)
    );
    let mut c = Vec::new();
    if let Some(p) = k(Mode::Plain) {
        c.push(
            Claim::new(
                "Fig. 3, kernel TCP",
                "Without prioritisation A→B loses about a third of its goodput once B→C starts",
            )
            .measured(format!(
                "A→B {} alone ({:.0}–{:.0} s), {} shared ({:.0}–{:.0} s): ratio {:.2} (kernel: one run){}",
                mbps(p.ab_phase1_bps),
                p1.0,
                p1.1,
                mbps(p.ab_phase2_bps),
                p2.0,
                p2.1,
                p.ab_ratio(),
                beside(Mode::Plain, &|x| format!("ratio {:.2}", x.ab_ratio()))
            ))
            .at_most(AB_RATIO, p.ab_ratio(), 0.8),
        );
        c.push(
            Claim::new(
                "Fig. 2b, kernel TCP",
                "A→B's RTT rises above a second while B→C runs (the paper's words; the threshold below is ours)",
            )
            .measured(format!(
                "median SRTT {:.0} ms in phase 2 ({:.0} % of samples above 500 ms); {}{}{}",
                p.ab_srtt_phase2_ms,
                100.0 * p.ab_srtt_phase2_over_500ms,
                if p.ab_srtt_phase1_ms >= p.ab_srtt_phase2_ms {
                    format!(
                        "it does not rise: phase 1 is at {:.0} ms already (CUBIC fills A's own 1000-packet queue)",
                        p.ab_srtt_phase1_ms
                    )
                } else {
                    format!("phase 1: {:.0} ms", p.ab_srtt_phase1_ms)
                },
                k(Mode::AckPrio).map_or(String::new(), |a| format!(
                    "; with ACKs first {:.0} ms in phase 2",
                    a.ab_srtt_phase2_ms
                )),
                beside(Mode::Plain, &|x| format!(
                    "{:.0} ms in phase 2, {:.0} ms in phase 1",
                    x.ab_srtt_phase2_ms, x.ab_srtt_phase1_ms
                ))
            ))
            .above(
                "A→B's median SRTT in phase 2 (ms, from ss)",
                p.ab_srtt_phase2_ms,
                500.0,
            ),
        );
    }
    if let Some(a) = k(Mode::AckPrio) {
        c.push(
            Claim::new(
                "Fig. 5, kernel TCP",
                "With ACKs first at B (no-payload filter) both transfers make close-to-optimal use of the link",
            )
            .measured(format!(
                "A→B {} alone, {} shared: ratio {:.2}{}",
                mbps(a.ab_phase1_bps),
                mbps(a.ab_phase2_bps),
                a.ab_ratio(),
                beside(Mode::AckPrio, &|x| format!("ratio {:.2}", x.ab_ratio()))
            ))
            .at_least(AB_RATIO, a.ab_ratio(), 0.9),
        );
        let bc_max = KERNEL_CAPACITY_BPS * THROTTLE;
        c.push(
            Claim::new(
                "Fig. 5, kernel TCP",
                "… and B→C runs near the link rate meanwhile",
            )
            .measured(format!(
                "B→C {} in phase 2{}",
                mbps(a.bc_phase2_bps),
                beside(Mode::AckPrio, &|x| mbps(x.bc_phase2_bps))
            ))
            .at_least(
                format!(
                    "B→C's phase-2 goodput / what B's throttled egress carries ({})",
                    mbps(bc_max)
                ),
                a.bc_phase2_bps / bc_max,
                0.9,
            ),
        );
    }
    if let Some(l) = k(Mode::AckPrioLen64) {
        c.push(Claim::info(
            "§IV filter, kernel TCP",
            "the paper's filter (IP total length < 64 B) against the no-payload filter: an ACK that carries a SACK block (with timestamps) is 64 B or longer and counts as data",
            format!(
                "ackprio-len64: A→B ratio {:.2}, SRTT {:.0} ms while shared{}{}{}",
                l.ab_ratio(),
                l.ab_srtt_phase2_ms,
                k(Mode::AckPrio).map_or(String::new(), |a| format!(
                    "; no-payload filter {:.2}, {:.0} ms",
                    a.ab_ratio(),
                    a.ab_srtt_phase2_ms
                )),
                k(Mode::Plain).map_or(String::new(), |a| format!(
                    "; plain {:.2}, {:.0} ms",
                    a.ab_ratio(),
                    a.ab_srtt_phase2_ms
                )),
                beside(Mode::AckPrioLen64, &|x| format!(
                    "ratio {:.2}",
                    x.ab_ratio()
                ))
            ),
        ));
    }
    if let Some(b) = k(Mode::Bidir) {
        c.push(
            Claim::new(
                "Fig. 6, kernel TCP",
                "With data both ways on each connection the flows towards B drop to about 200 kB/s",
            )
            .measured(format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} % of the fair share{}",
                mbps(b.towards_b_phase2_bps),
                mbps(b.ab_phase2_bps),
                mbps(b.cb_phase2_bps),
                100.0 * b.towards_b_phase2_bps / fair,
                beside(Mode::Bidir, &|x| mbps(x.towards_b_phase2_bps))
            ))
            .at_most(share_of_fair.clone(), b.towards_b_phase2_bps / fair, 0.5),
        );
    }
    if let Some(ba) = k(Mode::BidirAckPrio) {
        c.push(
            Claim::new(
                "Fig. 7a, kernel TCP",
                "With ACKs first the average recovers: both flows towards B get about half a link",
            )
            .measured(format!(
                "towards B {} per flow (A→B {}, C→B {}) = {:.0} %; away from B: B→A {}, B→C {}{}",
                mbps(ba.towards_b_phase2_bps),
                mbps(ba.ab_phase2_bps),
                mbps(ba.cb_phase2_bps),
                100.0 * ba.towards_b_phase2_bps / fair,
                mbps(ba.ba_phase2_bps),
                mbps(ba.bc_phase2_bps),
                beside(Mode::BidirAckPrio, &|x| format!(
                    "{} (A→B {}, C→B {})",
                    mbps(x.towards_b_phase2_bps),
                    mbps(x.ab_phase2_bps),
                    mbps(x.cb_phase2_bps)
                ))
            ))
            .at_least(share_of_fair, ba.towards_b_phase2_bps / fair, 0.8),
        );
        if let Some(sp) = k(Mode::SplitAckPrio) {
            let r = sp.var_10s / ba.var_10s;
            c.push(
                Claim::new(
                    "Fig. 8, 9, kernel TCP",
                    "One connection per direction makes the throughput much steadier",
                )
                .measured(format!(
                    "{:.2} against {:.2} (Mbit/s)²: {:.2}{}",
                    sp.var_10s,
                    ba.var_10s,
                    r,
                    match (s(Mode::SplitAckPrio), s(Mode::BidirAckPrio)) {
                        (Some(x), Some(y)) => format!(
                            "; simulator {:.2} against {:.2}: {:.2}",
                            x.var_10s,
                            y.var_10s,
                            x.var_10s / y.var_10s
                        ),
                        _ => String::new(),
                    }
                ))
                .at_most("split-ackprio's var_10s / bidir-ackprio's", r, 0.5),
            );
        }
    }
    c
}
