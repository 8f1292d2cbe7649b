//! What a run leaves: summary.json's description of the setup, Fig. 2b's
//! packet trace, and the CSVs (the figures are in `figures.rs`).

use super::analysis::ModeStats;
use super::dynamic::{DynPolicy, PolicyEventKind};
use super::setup::{self, mean_between, Mode, ProbeRow, RunResult, SeenSegment, Setup};
use super::{Params, Results};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::{Outputs, Verdict};
use hopwise_sim::spec::Limit;
use serde::Serialize;

/// `x` as this reproduction's CSVs have always written it: rounded to
/// `places` decimals (the cell is that number's shortest form).
pub(super) fn dp(x: f64, places: usize) -> f64 {
    format!("{x:.places$}").parse().unwrap_or(f64::NAN)
}

// ------------------------------------------------------------ summary.json

#[derive(Serialize, Default)]
pub struct TimelineOut {
    ab_s: (f64, f64),
    bc_s: (f64, f64),
    duration_s: f64,
    jitter_s: f64,
    phase1_s: (f64, f64),
    phase2_s: (f64, f64),
    var_window_s: (f64, f64),
}

impl TimelineOut {
    pub fn of(base: &Setup) -> TimelineOut {
        let tl = &base.timeline;
        TimelineOut {
            ab_s: tl.ab,
            bc_s: tl.bc,
            duration_s: tl.duration,
            jitter_s: tl.jitter,
            phase1_s: tl.phase1(),
            phase2_s: tl.phase2(),
            var_window_s: tl.var_window(),
        }
    }
}

#[derive(Serialize, Default)]
pub struct ParamsOut {
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

impl ParamsOut {
    pub fn of(base: &Setup) -> ParamsOut {
        ParamsOut {
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
        }
    }
}

/// The dynamic split policy's thresholds (`DynPolicy`), with units.
#[derive(Serialize, Default)]
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
pub(super) fn cc_text(cc: &hopwise_proto::cc::CcConfig) -> String {
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

pub(super) fn limit_str(l: Limit) -> String {
    match l {
        Limit::Bytes(b) => format!("{b} B"),
        Limit::Packets(p) => format!("{p} packets"),
    }
}

#[derive(Serialize)]
pub struct Units {
    rates: &'static str,
    var_10s: &'static str,
}

impl Default for Units {
    fn default() -> Units {
        Units {
            rates: "bit/s (application goodput)",
            var_10s: "(Mbit/s)^2",
        }
    }
}

#[derive(Clone, Serialize, Default)]
pub struct Fig2bOut {
    pub window: (f64, f64),
    pub max_srtt_ms: f64,
    pub timeouts: u64,
    pub retransmits: u64,
    pub max_queue_b_pkts: u64,
    /// From the packet capture on A's link: A→B segments with data that
    /// left A's NIC, of them retransmissions (ending at or below the highest
    /// byte already sent), ACKs towards A, and the longest gap between two
    /// of those ACKs (s).
    pub captured_data_segments: u64,
    pub captured_retransmissions: u64,
    pub captured_acks: u64,
    pub longest_ack_gap_s: f64,
}

impl Fig2bOut {
    /// The facts of the probed run: its window, its probe and its trace.
    pub fn of(window: (f64, f64), probe: &[ProbeRow], trace: &SeqTrace) -> Fig2bOut {
        let mut f = Fig2bOut {
            window,
            max_srtt_ms: probe.iter().map(|p| p.srtt_ms).fold(0.0, f64::max),
            max_queue_b_pkts: probe.iter().map(|p| p.q_b).max().unwrap_or(0),
            captured_data_segments: (trace.sent.len() + trace.retx.len()) as u64,
            captured_retransmissions: trace.retx.len() as u64,
            captured_acks: trace.acks.len() as u64,
            longest_ack_gap_s: trace
                .acks
                .windows(2)
                .map(|a| a[1].0 - a[0].0)
                .fold(0.0, f64::max),
            ..Fig2bOut::default()
        };
        if let (Some(a), Some(b)) = (probe.first(), probe.last()) {
            f.timeouts = b.timeouts - a.timeouts;
            f.retransmits = b.retransmits - a.retransmits;
        }
        f
    }
}

// ------------------------------------------------------- Fig. 2b per packet

/// A row of `fig2b_packets.csv`: a data segment (its offset and length)
/// or an ACK (the offset it acknowledges).
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct PacketRow {
    pub time_s: f64,
    /// "data" or "ack".
    pub segment: &'static str,
    pub seq_offset_bytes: Option<i64>,
    pub payload_bytes: u32,
    pub ack_offset_bytes: Option<i64>,
    /// 1 if the data segment ends at or below the highest byte already sent.
    pub retransmission: u8,
}

/// Fig. 2b's time-sequence graph from the captured segments: stream offsets
/// (bytes) relative to the first ACK number seen (else the first sequence
/// number), as tcptrace draws them. A segment is a retransmission if it ends
/// at or below the highest end captured before it, so one captured before
/// any higher segment of the window counts as new data.
#[derive(Default)]
pub struct SeqTrace {
    /// (time, end offset) of segments carrying new data.
    pub sent: Vec<(f64, f64)>,
    /// (time, start offset) of retransmitted segments.
    pub retx: Vec<(f64, f64)>,
    /// (time, cumulative ACK offset) of ACKs towards A.
    pub acks: Vec<(f64, f64)>,
    /// `fig2b_packets.csv` rows.
    pub rows: Vec<PacketRow>,
}

pub fn seq_trace(seen: &[SeenSegment]) -> SeqTrace {
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
    let off = |x: u32| i64::from(x.wrapping_sub(base) as i32);
    let mut highest = i64::MIN;
    for x in seen {
        // Data rows give the segment's offset, ACK rows the acknowledged
        // offset (the other number has no meaning on this axis).
        let row = if x.outbound {
            if x.len == 0 {
                continue;
            }
            let (start, end) = (off(x.seq), off(x.seq) + i64::from(x.len));
            let retx = end <= highest;
            if retx {
                tr.retx.push((x.t, start as f64));
            } else {
                tr.sent.push((x.t, end as f64));
                highest = end;
            }
            PacketRow {
                time_s: dp(x.t, 6),
                segment: "data",
                seq_offset_bytes: Some(start),
                payload_bytes: x.len,
                ack_offset_bytes: None,
                retransmission: u8::from(retx),
            }
        } else {
            tr.acks.push((x.t, off(x.ack) as f64));
            PacketRow {
                time_s: dp(x.t, 6),
                segment: "ack",
                seq_offset_bytes: None,
                payload_bytes: x.len,
                ack_offset_bytes: Some(off(x.ack)),
                retransmission: 0,
            }
        };
        tr.rows.push(row);
    }
    tr
}

// ------------------------------------------------------------------- CSVs

/// A row of `fig2b.csv`: A's sender probed every 5 ms.
#[derive(Serialize, Default)]
struct ProbeCsv {
    time_s: f64,
    snd_nxt_bytes: u64,
    snd_una_bytes: u64,
    retransmits: u64,
    timeouts: u64,
    cwnd_bytes: u64,
    srtt_ms: f64,
    queue_a_pkts: u64,
    queue_b_pkts: u64,
    queue_sw_to_b_pkts: u64,
}

/// A row of `modes.csv`.
#[derive(Serialize, Default)]
struct ModeRow {
    mode: &'static str,
    ab_phase1_bps: f64,
    ab_phase2_bps: f64,
    ab_phase2_cov: f64,
    bc_phase2_bps: f64,
    var_10s_mbps2: f64,
    var_10s_within_mbps2: f64,
    towards_b_phase2_bps: f64,
    cb_phase2_bps: f64,
    ba_phase2_bps: f64,
    ab_srtt_phase1_ms: f64,
    ab_srtt_phase2_ms: f64,
    ab_timeouts: f64,
    breakdowns: f64,
    runs: usize,
}

/// A row of `runs.csv`.
#[derive(Serialize, Default)]
struct RunRow {
    mode: &'static str,
    seed: u64,
    ab_phase1_bps: f64,
    ab_phase2_bps: f64,
    bc_phase2_bps: f64,
    ba_phase2_bps: f64,
    cb_phase2_bps: f64,
    ab_timeouts: u64,
    drops_b_egress: u64,
    drops_sw_to_b: u64,
    splits: usize,
    merges: usize,
}

/// A row of `goodput_10s.csv`: one direction's mean over runs in one 10 s bin.
#[derive(Serialize, Default)]
struct BinRow {
    mode: &'static str,
    flow: &'static str,
    bin_start_s: usize,
    mean_bps: f64,
    /// The 90 % CI's half-width (empty for one run).
    ci90_bps: f64,
}

/// A row of `splits.csv`.
#[derive(Serialize, Default)]
struct SplitRow {
    mode: &'static str,
    seed: u64,
    time_s: f64,
    pair: String,
    event: &'static str,
    reason: String,
}

/// A row of `sensitivity.csv`.
#[derive(Serialize, Default)]
struct SweepRow {
    variant: String,
    mode: &'static str,
    ab_phase1_bps: f64,
    ab_phase2_bps: f64,
    ab_ratio: f64,
    bc_phase2_bps: f64,
    towards_b_phase2_bps: f64,
    var_10s_mbps2: f64,
    var_10s_within_mbps2: f64,
    ab_timeouts: f64,
    b_pure_ack_ratio: f64,
    runs: usize,
}

/// A row of `sensitivity_claims.csv`.
#[derive(Serialize)]
struct SweepClaimRow {
    variant: String,
    figure: String,
    verdict: Verdict,
    measured: String,
}

impl Default for SweepClaimRow {
    fn default() -> Self {
        SweepClaimRow {
            variant: String::new(),
            figure: String::new(),
            verdict: Verdict::Info,
            measured: String::new(),
        }
    }
}

/// The directions of the 10 s table and the figures, and their series.
pub type Selector = fn(&RunResult) -> &[f64];
const DIRECTIONS: [(&str, Selector); 4] = [
    ("A->B", |r| &r.ab),
    ("B->A", |r| &r.ba),
    ("B->C", |r| &r.bc),
    ("C->B", |r| &r.cb),
];

fn kind_name(k: PolicyEventKind) -> &'static str {
    match k {
        PolicyEventKind::Split => "split",
        PolicyEventKind::Merge => "merge",
    }
}

/// Text cells as these CSVs have always had them: commas turned into
/// semicolons.
fn no_commas(s: &str) -> String {
    s.replace(',', ";")
}

/// Writes the CSVs, then the figures ([`super::figures::write`]).
pub(super) fn write(plan: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    if plan.modes.contains(&Mode::Plain) {
        out.csv("fig2b_packets.csv", &r.trace.rows)?;
        let rows: Vec<ProbeCsv> = r
            .probe
            .iter()
            .map(|p| ProbeCsv {
                time_s: dp(p.t, 3),
                snd_nxt_bytes: p.snd_nxt,
                snd_una_bytes: p.snd_una,
                retransmits: p.retransmits,
                timeouts: p.timeouts,
                cwnd_bytes: p.cwnd,
                srtt_ms: dp(p.srtt_ms, 1),
                queue_a_pkts: p.q_a,
                queue_b_pkts: p.q_b,
                queue_sw_to_b_pkts: p.q_sw_b,
            })
            .collect();
        out.csv("fig2b.csv", &rows)?;
    }
    if !r.sensitivity.is_empty() {
        let mut rows = Vec::new();
        let mut crow = Vec::new();
        for p in &r.sensitivity {
            for m in &p.modes {
                rows.push(SweepRow {
                    variant: p.variant.clone(),
                    mode: m.mode,
                    ab_phase1_bps: dp(m.ab_phase1_bps, 0),
                    ab_phase2_bps: dp(m.ab_phase2_bps, 0),
                    ab_ratio: dp(m.ab_phase2_bps / m.ab_phase1_bps, 4),
                    bc_phase2_bps: dp(m.bc_phase2_bps, 0),
                    towards_b_phase2_bps: dp(m.towards_b_phase2_bps, 0),
                    var_10s_mbps2: dp(m.var_10s, 4),
                    var_10s_within_mbps2: dp(m.var_10s_within, 4),
                    ab_timeouts: dp(m.ab_timeouts, 2),
                    b_pure_ack_ratio: dp(m.b_pure_ack_ratio, 3),
                    runs: m.runs,
                });
            }
            for c in &p.claims {
                crow.push(SweepClaimRow {
                    variant: p.variant.clone(),
                    figure: no_commas(&c.figure),
                    verdict: c.verdict,
                    measured: no_commas(&c.measured),
                });
            }
        }
        out.csv("sensitivity.csv", &rows)?;
        out.csv("sensitivity_claims.csv", &crow)?;
    }
    tables(plan, &r.runs, &r.modes, out)?;
    if plan.figures {
        super::figures::write(plan, r, out)?;
    }
    out.data(
        &["fig3.svg", "fig5.svg", "fig6.svg", "fig7.svg", "fig8.svg"],
        &["goodput_10s.csv", "modes.csv"],
    );
    out.data(&["fig9.svg"], &["modes.csv", "runs.csv"]);
    out.data(&["split_dynamic.svg"], &["splits.csv", "goodput_1s.csv"]);
    Ok(())
}

fn tables(
    plan: &Params,
    results: &[RunResult],
    stats: &[ModeStats],
    out: &mut Outputs,
) -> anyhow::Result<()> {
    let tl = &plan.base.timeline;
    let (p1, p2) = (tl.phase1(), tl.phase2());
    let rows: Vec<ModeRow> = stats
        .iter()
        .map(|s| ModeRow {
            mode: s.mode,
            ab_phase1_bps: dp(s.ab_phase1_bps, 0),
            ab_phase2_bps: dp(s.ab_phase2_bps, 0),
            ab_phase2_cov: dp(s.ab_phase2_cov, 4),
            bc_phase2_bps: dp(s.bc_phase2_bps, 0),
            var_10s_mbps2: dp(s.var_10s, 4),
            var_10s_within_mbps2: dp(s.var_10s_within, 4),
            towards_b_phase2_bps: dp(s.towards_b_phase2_bps, 0),
            cb_phase2_bps: dp(s.cb_phase2_bps, 0),
            ba_phase2_bps: dp(s.ba_phase2_bps, 0),
            ab_srtt_phase1_ms: dp(s.ab_srtt_phase1_ms, 1),
            ab_srtt_phase2_ms: dp(s.ab_srtt_phase2_ms, 1),
            ab_timeouts: dp(s.ab_timeouts, 2),
            breakdowns: dp(s.breakdowns, 3),
            runs: s.runs,
        })
        .collect();
    out.csv("modes.csv", &rows)?;
    let count = |r: &RunResult, k: PolicyEventKind| r.events.iter().filter(|e| e.kind == k).count();
    let rows: Vec<RunRow> = results
        .iter()
        .map(|r| {
            let mb = |s: &[f64], (a, b): (f64, f64)| dp(mean_between(s, a, b), 0);
            RunRow {
                mode: r.mode.name(),
                seed: r.seed,
                ab_phase1_bps: mb(&r.ab, p1),
                ab_phase2_bps: mb(&r.ab, p2),
                bc_phase2_bps: mb(&r.bc, p2),
                ba_phase2_bps: mb(&r.ba, p2),
                cb_phase2_bps: mb(&r.cb, p2),
                ab_timeouts: r.ab_timeouts,
                drops_b_egress: r.drops[setup::IF_B_EGRESS],
                drops_sw_to_b: r.drops[setup::IF_SW_TO_B],
                splits: count(r, PolicyEventKind::Split),
                merges: count(r, PolicyEventKind::Merge),
            }
        })
        .collect();
    out.csv("runs.csv", &rows)?;
    // 10 s means with 90 % CIs (Fig. 3, 5–8).
    let mut rows = Vec::new();
    for &m in &plan.modes {
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
                rows.push(BinRow {
                    mode: m.name(),
                    flow,
                    bin_start_s: k * 10,
                    mean_bps: dp(mu, 0),
                    ci90_bps: dp(hw, 0),
                });
            }
        }
    }
    out.csv("goodput_10s.csv", &rows)?;
    // Splits and merges.
    let rows: Vec<SplitRow> = results
        .iter()
        .flat_map(|r| {
            r.events.iter().map(move |e| SplitRow {
                mode: r.mode.name(),
                seed: r.seed,
                time_s: dp(e.t, 3),
                pair: e.pair.clone(),
                event: kind_name(e.kind),
                reason: no_commas(&e.reason),
            })
        })
        .collect();
    out.csv("splits.csv", &rows)
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
        let cells = |r: &PacketRow| {
            (
                r.segment,
                r.seq_offset_bytes,
                r.payload_bytes,
                r.ack_offset_bytes,
                r.retransmission,
            )
        };
        assert_eq!(cells(&tr.rows[4]), ("data", Some(0), 1000, None, 1));
        assert_eq!(cells(&tr.rows[5]), ("ack", None, 0, Some(3000), 0));
        assert!(seq_trace(&[]).rows.is_empty());
    }

    #[test]
    fn cells_keep_the_precision_the_csvs_always_had() {
        assert_eq!(dp(9584215.4999, 0), 9584215.0);
        assert_eq!(dp(3.713_949, 4), 3.7139);
        assert_eq!(dp(1116.04, 1), 1116.0);
        assert!(dp(f64::NAN, 0).is_nan());
        assert_eq!(hopwise_experiment::csv::float(dp(0.0009, 4)), "0.0009");
    }
}
