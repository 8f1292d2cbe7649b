//! Tor Vegas's standing queue: the single circuit of Fig. 5
//! (`backtap-circuit`: client → guard → middle → exit in a 1 Gbit/s star,
//! the middle's bucket 1500 kB/s the bottleneck) with Tor Vegas (proposal
//! 324; relays refill on demand as in the Tor versions that have it, and,
//! for comparison, every 100 ms like the paper's vanilla) and BackTap (10 ms
//! refill), at each of
//! `plan.single_rtts_ms`, for `plan.single_secs`, measured from
//! `plan.single_fit_from`.
//!
//! The queue at the bottleneck is what the middle relay holds for the
//! circuit in the download direction, averaged over the 10 ms queue samples:
//! its circuit (BackTap: fused) queue, for TCP transports plus the circuit's
//! cells written towards the guard but not yet on the wire, plus the bytes
//! in the middle's kernel receive buffers that it has not read (its read
//! bucket is what limits; with one circuit they are all this circuit's, in
//! 512-byte cells). Tor Vegas's backlog waits there, unread; BackTap's in
//! its fused queue, released every 10 ms refill.
//!
//! Both run for the same `single_secs`: BackTap's linear start-up (+1 cell
//! per round) needs about `C/519 · (RTT/3)²` seconds to open a hop's window
//! ([`ramp_estimate`]), which at the largest RTTs exceeds the run, so
//! its rate there is still ramping (`backtap-circuit`'s Fig. 5 runs long
//! enough for it).

use super::fairness::{paired, FairnessOut};
use super::Plan;
use crate::backtap::common::{
    self, hop_mean, middle_held_cells, ramp_estimate, round_to, start_offset, RefillMode, Variant,
    BACKTAP_CELL, BETA, C, CELL_DATA,
};
use hopwise_experiment::stats::quantile;
use hopwise_experiment::{plural, Claim, Cmp, Ctx, Estimate, Outputs};
use hopwise_proto::time::Dur;
use hopwise_tor::Dir;
use serde::Serialize;

/// Cells Tor Vegas is expected to hold at the bottleneck (the claim: "100+").
pub const VEGAS_QUEUE_MIN: f64 = 100.0;

/// Rate (fraction of the payload rate) from which a run counts as in steady
/// state for the queue claim.
pub const STEADY_RATE: f64 = 0.95;

/// "A few" cells for BackTap: β plus what one 10 ms refill of the 1500 kB/s
/// bucket releases at once (cells wait for the next refill), ≈ 32.9 cells:
/// the band of `backtap-circuit`'s §3 claim.
pub fn backtap_few() -> f64 {
    BETA as f64 + C as f64 * RefillMode::Periodic10.interval().as_secs_f64() / BACKTAP_CELL
}

/// One (transport, RTT) point (a row of `single_circuit` and of
/// `single.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SingleRow {
    pub transport: String,
    /// The variant's key: `tor-vegas-on-demand`, `tor-vegas` (100 ms
    /// refill) or `backtap` (see [`variants`]).
    pub variant: String,
    /// The relays' bucket refill.
    pub refill: &'static str,
    pub rtt_ms: u64,
    /// Payload rate over the bottleneck's payload rate for this transport
    /// (C · 498 / 512 for Tor Vegas, C · 498 / 519 for BackTap).
    pub rate_frac: f64,
    /// Mean cells held at the middle relay (see the module doc).
    pub bottleneck_queue_cells: f64,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    /// Of which: the circuit's queue proper, and the unread receive buffer.
    pub middle_circuit_queue_cells: f64,
    pub middle_unread_cells: f64,
    /// The standing queue along the whole path from the R/W fit:
    /// (delay − RTT/2) · rate / 498.
    pub excess_delay_cells: f64,
    #[serde(rename = "backlog_B")]
    pub backlog: f64,
    pub delay_ms: f64,
    /// Tor Vegas: the exit's mean congestion window (cells); BackTap: the
    /// exit hop's mean send window.
    pub exit_window_cells: f64,
    /// Tor Vegas: the exit's mean cells in flight (packaged, not yet
    /// acknowledged by a SENDME); NaN for BackTap.
    pub vegas_inflight_cells: f64,
    /// Tor Vegas: the exit's mean `queue_use` (cwnd − BDP) over its RTT
    /// samples (SENDMEs) of the whole run: the cells the controller believes
    /// are queued, which it steers into [α, β]; NaN for BackTap.
    pub vegas_queue_use_cells: f64,
    /// Tor Vegas: the mean over the same samples of the smoothed RTT above
    /// the minimum RTT (ms): the delay `queue_use` stands for; NaN for BackTap.
    pub vegas_rtt_excess_ms: f64,
    /// The delay the cells held at the middle add at the circuit's rate (ms),
    /// for comparison with `vegas_rtt_excess_ms`.
    pub bottleneck_queue_ms: f64,
    #[serde(rename = "duration_s")]
    pub secs: u64,
    pub fit_from_s: u64,
    pub events: u64,
    /// Corrupt bytes delivered (a run with any fails, so never shown).
    #[serde(skip)]
    pub corrupt: u64,
}

/// Everything the single-circuit runs produced.
#[derive(Clone, Debug, Default)]
pub struct SingleOut {
    pub rows: Vec<SingleRow>,
}

impl SingleOut {
    /// The row of variant `v` (`tor-vegas-on-demand`, `tor-vegas`, `backtap`).
    pub fn row(&self, v: &str, rtt_ms: u64) -> Option<&SingleRow> {
        self.rows
            .iter()
            .find(|r| r.variant == v && r.rtt_ms == rtt_ms)
    }
}

/// The variants compared here. `tor-vegas-on-demand`: Tor Vegas on relays
/// of the Tor versions that have it (proposal 324 shipped in Tor 0.4.7),
/// whose token buckets refill on demand with a re-enable delay (Tor ≥
/// 0.3.3); the claims judge this row. `tor-vegas`: the periodic 100 ms
/// refill of Tor ≤ 0.3.2 and nstor that the paper's transports (and
/// `tor-vegas` in the star and the dumbbell) run with. BackTap: its 10 ms
/// refill (nstor).
pub fn variants() -> Vec<Variant> {
    let pick = |k: &str| common::variant(k).unwrap_or_else(|| panic!("Fig. 5 variant `{k}`"));
    let vegas = pick("tor-vegas");
    vec![
        Variant {
            key: "tor-vegas-on-demand",
            refill: RefillMode::OnDemand,
            ..vegas.clone()
        },
        vegas,
        pick("backtap"),
    ]
}

/// One run of the Fig. 5 circuit.
pub fn run_one(v: &Variant, rtt_ms: u64, secs: u64, fit_from: u64) -> anyhow::Result<SingleRow> {
    let rtt = Dur::from_millis(rtt_ms);
    let start = start_offset(1, "c0", Dur::ZERO);
    let net = common::net(v, rtt, start);
    let mut sim = net
        .build(
            &format!("single-{}-{rtt_ms}", v.key),
            1,
            Dur::from_secs(secs),
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", v.key))?;
    sim.run();
    let res = sim.results();
    let c = &res.circuits[0];
    let from = Dur::from_secs(fit_from);
    let f = c
        .fit(from)
        .ok_or_else(|| anyhow::anyhow!("{} at {rtt_ms} ms: no progress to fit", v.key))?;
    let b = Dir::Backward.index();
    let qdt = res.queue_interval.map_or(0.01, |d| d.as_secs_f64());
    let from_s = from.as_secs_f64();
    let (held, circuit_queue, unread) = middle_held_cells(&res, from_s);
    let window = hop_mean(c, "exit", qdt, from_s, |s| {
        if s.cwnd[b] > 0 {
            s.cwnd[b] as f64
        } else {
            s.swnd[b] as f64
        }
    });
    let vstats = c.vegas.as_ref().map(|v| v.stats());
    let vegas_inflight = match vstats {
        Some(_) => hop_mean(c, "exit", qdt, from_s, |s| s.inflight[b] as f64),
        None => f64::NAN,
    };
    let vegas_queue_use = vstats.map_or(f64::NAN, |s| s.mean_queue_use());
    let vegas_rtt_excess = vstats.map_or(f64::NAN, |s| s.mean_rtt_excess_s() * 1e3);
    Ok(SingleRow {
        transport: v.transport.into(),
        variant: v.key.into(),
        refill: v.refill.label(),
        rtt_ms,
        rate_frac: f.rate / v.payload_rate(),
        bottleneck_queue_cells: held,
        rate: f.rate,
        middle_circuit_queue_cells: circuit_queue,
        middle_unread_cells: unread,
        excess_delay_cells: (f.delay - rtt.as_secs_f64() / 2.0) * f.rate / CELL_DATA,
        backlog: f.backlog,
        delay_ms: f.delay * 1e3,
        exit_window_cells: window,
        vegas_inflight_cells: vegas_inflight,
        vegas_queue_use_cells: vegas_queue_use,
        vegas_rtt_excess_ms: vegas_rtt_excess,
        bottleneck_queue_ms: held * CELL_DATA / f.rate * 1e3,
        secs,
        fit_from_s: fit_from,
        events: res.events,
        corrupt: c.corrupt,
    })
}

/// Runs Tor Vegas and BackTap at every RTT of the plan.
pub fn run(plan: &Plan, ctx: &Ctx<'_, SingleOut>) -> anyhow::Result<SingleOut> {
    let jobs: Vec<(Variant, u64)> = variants()
        .into_iter()
        .flat_map(|v| plan.single_rtts_ms.iter().map(move |&r| (v.clone(), r)))
        .collect();
    ctx.progress.start("single circuit", jobs.len() as u64);
    let results = ctx.par_map(jobs, |(v, rtt)| {
        run_one(&v, rtt, plan.single_secs, plan.single_fit_from)
    });
    ctx.progress.finish();
    let mut out = SingleOut::default();
    for r in results {
        let r = r?;
        anyhow::ensure!(
            r.corrupt == 0,
            "{} at {} ms: corrupt bytes",
            r.variant,
            r.rtt_ms
        );
        out.rows.push(r);
    }
    Ok(out)
}

/// `single.csv` (rates and backlogs in whole bytes).
pub fn outputs(out: &SingleOut, o: &mut Outputs) -> anyhow::Result<()> {
    let rows: Vec<SingleRow> = out
        .rows
        .iter()
        .map(|r| SingleRow {
            rate: round_to(r.rate, 0),
            backlog: round_to(r.backlog, 0),
            ..r.clone()
        })
        .collect();
    o.csv("single.csv", &rows)
}

/// The single-circuit claims, and the star's standing queues of Tor Vegas
/// and BackTap from Fig. 6a.
pub fn claims(plan: &Plan, out: &SingleOut, fo: &FairnessOut) -> Vec<Claim> {
    let mut c = Vec::new();
    let list = |t: &str, f: &dyn Fn(&SingleRow) -> String| {
        out.rows
            .iter()
            .filter(|r| r.variant == t)
            .map(|r| format!("{} ms: {}", r.rtt_ms, f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tv: Vec<&SingleRow> = out
        .rows
        .iter()
        .filter(|r| r.variant == "tor-vegas-on-demand")
        .collect();
    let bt: Vec<&SingleRow> = out.rows.iter().filter(|r| r.variant == "backtap").collect();
    let few = backtap_few();
    if !tv.is_empty() && !bt.is_empty() {
        // A standing queue is a steady-state property: judge the RTTs at
        // which both transports fill the bottleneck (BackTap's linear
        // start-up may not have opened its windows within the run, and a
        // queue of a few cells while ramping says nothing).
        let steady: Vec<u64> = tv
            .iter()
            .filter(|v| v.rate_frac >= STEADY_RATE)
            .filter_map(|v| {
                out.row("backtap", v.rtt_ms)
                    .filter(|b| b.rate_frac >= STEADY_RATE)
                    .map(|_| v.rtt_ms)
            })
            .collect();
        let at_steady = |t: &str| -> Vec<(String, f64)> {
            steady
                .iter()
                .map(|&rtt| {
                    let q = out
                        .row(t, rtt)
                        .map_or(f64::NAN, |r| r.bottleneck_queue_cells);
                    (format!("{rtt} ms"), q)
                })
                .collect()
        };
        c.push(Claim::new(
            "Tor Vegas (Fig. 5 setup)",
            format!(
                "Tor Vegas holds a standing queue of {VEGAS_QUEUE_MIN:.0}+ cells per circuit at the bottleneck relay, BackTap a few: β + what one 10 ms refill releases = {few:.1} cells (judged at every RTT where both reach {:.0} % of the payload rate)",
                100.0 * STEADY_RATE
            ),
        )
        .measured(format!(
                "judged at {steady:?} ms; mean cells held at the middle from {} s of {} s: Tor Vegas (on-demand refill, Tor ≥ 0.3.3) {}; BackTap {}; Tor Vegas with the periodic 100 ms refill of Tor ≤ 0.3.2 {}. Whole-path standing queue (delay − RTT/2)·rate/498: Tor Vegas {}; BackTap {}. Tor Vegas's own estimate (mean queue_use per SENDME, whole run; its target α–β is 186–248), in cells and the extra RTT they stand for, against what the cells at the middle add: {}",
                plan.single_fit_from,
                plan.single_secs,
                list("tor-vegas-on-demand", &|r| format!("{:.0}", r.bottleneck_queue_cells)),
                list("backtap", &|r| format!("{:.1}", r.bottleneck_queue_cells)),
                list("tor-vegas", &|r| format!("{:.0}", r.bottleneck_queue_cells)),
                list("tor-vegas-on-demand", &|r| format!("{:.0}", r.excess_delay_cells)),
                list("backtap", &|r| format!("{:.0}", r.excess_delay_cells)),
                list("tor-vegas-on-demand", &|r| format!(
                    "{:.0} cells = {:.0} ms (middle {:.0} ms)",
                    r.vegas_queue_use_cells, r.vegas_rtt_excess_ms, r.bottleneck_queue_ms
                )),
            ))
            .each(
                "Tor Vegas's mean cells held at the middle",
                at_steady("tor-vegas-on-demand"),
                Cmp::AtLeast(VEGAS_QUEUE_MIN),
            )
            .each(
                "BackTap's mean cells held at the middle",
                at_steady("backtap"),
                Cmp::AtMost(few),
            ),
        );
    }
    if let Some(hi) = tv.iter().max_by_key(|r| r.rtt_ms) {
        c.push(
            Claim::new(
                "Tor Vegas (Fig. 5 setup)",
                "Tor Vegas keeps the rate under high RTT (judged at the largest RTT)",
            )
            .measured(format!(
                "rate / (C·498/512): {}; exit cwnd {}",
                list("tor-vegas-on-demand", &|r| format!("{:.3}", r.rate_frac)),
                list("tor-vegas-on-demand", &|r| format!(
                    "{:.0}",
                    r.exit_window_cells
                )),
            ))
            .at_least(
                format!("rate / (C·498/512) at {} ms", hi.rtt_ms),
                hi.rate_frac,
                0.8,
            ),
        );
    }
    if !bt.is_empty() {
        c.push(Claim::info(
            "Tor Vegas (Fig. 5 setup)",
            "BackTap over the same run length (its linear start-up needs about C/519·(RTT/3)² s to open a hop's window; backtap-circuit's Fig. 5 runs long enough)",
            format!(
                "rate / (C·498/519): {}; start-up estimate: {}",
                list("backtap", &|r| format!("{:.3}", r.rate_frac)),
                list("backtap", &|r| format!(
                    "{:.0} s",
                    ramp_estimate(Dur::from_millis(r.rtt_ms), BACKTAP_CELL)
                )),
            ),
        ));
    }
    if let (Some(v), Some(b)) = (fo.row("tor-vegas"), fo.row("backtap")) {
        // The difference of the medians over runs, with a bootstrap over
        // the seeds both ran (both runs of a seed share the star's draw).
        let pairs = paired(&fo.runs, "tor-vegas", "backtap", |r| r.queue_cells_median);
        let point = v.queue_cells_median - b.queue_cells_median;
        let e = if pairs.len() == v.runs && pairs.len() == b.runs {
            Estimate::resampled_at(
                point,
                "backtap-network star queue tor-vegas-backtap",
                pairs.len(),
                |idx| {
                    let med = |f: fn(&(f64, f64)) -> f64| {
                        quantile(&idx.iter().map(|&i| f(&pairs[i])).collect::<Vec<_>>(), 0.5)
                    };
                    med(|p| p.0) - med(|p| p.1)
                },
            )
        } else {
            point.into()
        };
        c.push(
            Claim::new(
                "Tor Vegas (Fig. 6a star)",
                "In the star of Fig. 6a too (every TCP transport with the 100 ms refill), Tor Vegas's per-circuit standing queue is larger than BackTap's (median over circuits and runs of the backlog beyond what propagation holds)",
            )
            .measured(format!(
                "Tor Vegas {:.0} cells, BackTap {:.0} cells ({} each)",
                v.queue_cells_median,
                b.queue_cells_median,
                plural(v.runs, "run")
            ))
            .above("Tor Vegas's standing queue − BackTap's (cells)", e, 0.0),
        );
    }
    c
}
