//! Fig. 5: one bulk circuit through a middle relay limited to 1500 kB/s,
//! end-to-end RTT swept from 30 to 900 ms (seed 002 §4).

use super::{
    access, backtap, f3, kbs, payload_rate, start_offset, vanilla_circuit_window,
    vanilla_stream_window, Plan, RefillMode, ALPHA, BACKTAP_CELL, BETA, C, CELL_DATA, VANILLA_CELL,
};
use crate::plural;
use crate::{mean_ci90, par_map, write_csv, Claim, Progress, ReproOpts};
use hopwise_proto::backtap::Startup;
use hopwise_proto::time::Dur;
use hopwise_tor::{CircuitResult, CircuitSpec, Dir, TorConfig, TorNet, Traffic};
use serde::Serialize;
use std::path::Path;

/// One curve of Fig. 5: a transport configuration and the middle's refill.
/// [`variants`] lists them; a new transport (Tor Vegas) is one more
/// line there.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Unique name (CSV, summary).
    pub key: &'static str,
    /// `transport` and `window` of the summary's `fig5` rows.
    pub transport: &'static str,
    pub window: &'static str,
    pub refill: RefillMode,
    pub config: fn() -> TorConfig,
    /// Bytes the bottleneck's bucket charges per cell of this transport.
    pub cell_bytes: f64,
    /// The window grows per hop by one cell per round (BackTap's linear
    /// start-up): runs are made long enough to ramp up (see [`lengths`]).
    pub per_hop_ramp: bool,
    /// An end-to-end window that ramps up over many RTTs (Tor Vegas): runs
    /// get [`END_TO_END_RAMP_RTTS`] more round trips (see [`lengths`]).
    pub end_to_end_ramp: bool,
    /// A curve of the paper's figure (else a refill variant, `fig5_refill.svg`).
    pub main: bool,
}

fn vanilla_circuit() -> TorConfig {
    vanilla_circuit_window(false)
}
fn vanilla_stream() -> TorConfig {
    vanilla_stream_window(false)
}
/// Tor Vegas (proposal 324: no circuit or stream window, Vegas at the
/// edges) over vanilla relays, Nagle off like the other vanilla curves; the
/// middle refills every 100 ms, as for vanilla.
pub fn tor_vegas() -> TorConfig {
    let mut cfg = TorConfig::tor_vegas();
    cfg.tcp_mut().expect("Tor Vegas runs over TCP").tcp.nagle = false;
    cfg
}
fn backtap_linear() -> TorConfig {
    backtap(Startup::Linear)
}
fn backtap_slow_start() -> TorConfig {
    backtap(Startup::SlowStart { gamma: 1 })
}

impl Variant {
    fn new(
        key: &'static str,
        transport: &'static str,
        window: &'static str,
        refill: RefillMode,
        config: fn() -> TorConfig,
        main: bool,
    ) -> Variant {
        let backtap = transport == "backtap";
        Variant {
            key,
            transport,
            window,
            refill,
            config,
            cell_bytes: if backtap { BACKTAP_CELL } else { VANILLA_CELL },
            per_hop_ramp: backtap,
            end_to_end_ramp: transport == "tor-vegas",
            main,
        }
    }

    /// The bottleneck's payload rate for this transport.
    pub fn payload_rate(&self) -> f64 {
        payload_rate(self.cell_bytes)
    }
}

/// The curves of Fig. 5. Nagle is off in every vanilla variant, as the paper
/// ran Fig. 5.
pub fn variants() -> Vec<Variant> {
    use RefillMode::*;
    vec![
        Variant::new(
            "vanilla-circuit",
            "vanilla",
            "circuit",
            Periodic100,
            vanilla_circuit,
            true,
        ),
        Variant::new(
            "vanilla-stream",
            "vanilla",
            "stream",
            Periodic100,
            vanilla_stream,
            true,
        ),
        Variant::new(
            "backtap",
            "backtap",
            "per-hop",
            Periodic10,
            backtap_linear,
            true,
        ),
        // Tor Vegas (proposal 324): not one of the paper's curves,
        // so it runs with the refill variants and stays out of `fig5.svg`
        // and the paper's claims.
        Variant::new(
            "tor-vegas",
            "tor-vegas",
            "cwnd",
            Periodic100,
            tor_vegas,
            false,
        ),
        Variant::new(
            "vanilla-circuit-10ms",
            "vanilla",
            "circuit",
            Periodic10,
            vanilla_circuit,
            false,
        ),
        Variant::new(
            "vanilla-circuit-on-demand",
            "vanilla",
            "circuit",
            OnDemand,
            vanilla_circuit,
            false,
        ),
        Variant::new(
            "backtap-100ms",
            "backtap",
            "per-hop",
            Periodic100,
            backtap_linear,
            false,
        ),
        Variant::new(
            "backtap-on-demand",
            "backtap",
            "per-hop",
            OnDemand,
            backtap_linear,
            false,
        ),
    ]
}

/// BackTap with the optional slow start (γ = 1), for the start-up comparison.
pub fn slow_start_variant() -> Variant {
    Variant::new(
        "backtap-slow-start",
        "backtap",
        "per-hop",
        RefillMode::Periodic10,
        backtap_slow_start,
        false,
    )
}

/// Seconds BackTap's linear start-up needs to open a hop's window to its BDP:
/// one cell per round of one hop RTT `h`, BDP = rate · h cells, so
/// `C/cell · h²`.
pub fn ramp_estimate(rtt: Dur, cell_bytes: f64) -> f64 {
    let h = rtt.as_secs_f64() / 3.0;
    C as f64 / cell_bytes * h * h
}

/// Round trips Tor Vegas gets before its fit, on top of vanilla's lengths.
/// After slow start (which ends by 600 cells, `cc_sscap_exit`) its window
/// grows by 31 cells per RTT (`cc_cwnd_inc` 1, 31 updates per window), so
/// from 600 cells to the ≈ 2640-cell BDP of the 900 ms circuit takes
/// about 66 RTTs; with vanilla's 30 s alone it reached 0.66 of the payload
/// rate there and its fit window covered the ramp.
pub const END_TO_END_RAMP_RTTS: f64 = 80.0;

/// Run length and start of the fit for a variant at an RTT: vanilla runs
/// `plan.vanilla_secs` and fits after `plan.vanilla_fit_from`; Tor Vegas
/// runs [`END_TO_END_RAMP_RTTS`] round trips longer and fits that much
/// later; per-hop
/// windows fit after 1.3 × the estimated ramp-up plus 30 s (the initial
/// bucket burst of one second at the middle must drain too) and measure
/// `plan.backtap_measure_secs` more.
pub fn lengths(v: &Variant, rtt: Dur, plan: &Plan) -> (Dur, Dur) {
    if v.per_hop_ramp {
        let from = (1.3 * ramp_estimate(rtt, v.cell_bytes) + 30.0).ceil() as u64;
        (
            Dur::from_secs(from + plan.backtap_measure_secs),
            Dur::from_secs(from),
        )
    } else {
        let extra = if v.end_to_end_ramp {
            (END_TO_END_RAMP_RTTS * rtt.as_secs_f64()).ceil() as u64
        } else {
            0
        };
        (
            Dur::from_secs(plan.vanilla_secs + extra),
            Dur::from_secs(plan.vanilla_fit_from + extra),
        )
    }
}

/// R(t)/W(t) sampling interval. The paper sampled every 10 ms; with BackTap's
/// 10 ms refill the cells move in 10 ms bursts, and sampling at the burst
/// period aliases the fitted delay by up to one period (at 683 ms it came
/// out 1 ms *below* the propagation delay). 1 ms sampling bounds that error
/// by 1 ms; rates and backlogs do not change.
pub const RW_INTERVAL: Dur = Dur::from_millis(1);

/// Per-hop queue sampling interval. The simulator's default, 10 ms, equals
/// BackTap's refill period: every sample then falls at the same phase of the
/// middle's refill (a per-relay random offset), and reads either the full
/// burst waiting for the refill (≈ 29 cells) or the queue just after it
/// (≈ 1 cell), depending on that phase alone. Sampling every 1 ms averages
/// over the period.
pub const QUEUE_INTERVAL: Dur = Dur::from_millis(1);

/// The Fig. 5 network: client `op`, relays `guard`, `middle` (the bucket),
/// `exit` in a 1 Gbit/s star with end-to-end RTT `rtt`; one traced bulk
/// circuit `c0` starting at `start`.
pub fn net(v: &Variant, rtt: Dur, start: Dur) -> TorNet {
    let mut cfg = (v.config)();
    cfg.rw_interval = RW_INTERVAL;
    cfg.queue_interval = Some(QUEUE_INTERVAL);
    let mut net = TorNet::with_config(cfg);
    let acc = access(rtt);
    net.client("op", acc)
        .relay("guard", None, acc)
        .relay("middle", Some(v.refill.bucket()), acc)
        .relay("exit", None, acc);
    net.circuit(
        CircuitSpec::new(
            "c0",
            "op",
            &["guard", "middle", "exit"],
            Traffic::bulk(1 << 50),
        )
        .trace(true)
        .start(start),
    );
    net
}

/// One run of one point.
#[derive(Clone, Debug, Serialize)]
pub struct Fig5Run {
    pub variant: &'static str,
    pub rtt_ms: u64,
    pub seed: u64,
    pub start_s: f64,
    pub duration_s: f64,
    pub fit_from_s: f64,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    #[serde(rename = "backlog_B")]
    pub backlog: f64,
    pub delay_ms: f64,
    /// Largest R(t) − W(t) of the run.
    #[serde(rename = "max_backlog_B")]
    pub max_backlog: u64,
    /// Mean cells the middle holds for the circuit towards the client over
    /// the fit window ([`middle_held_cells`]; BackTap: its fused queue).
    pub bottleneck_queue_cells: f64,
    /// Mean send window of the exit's hop (BackTap) over the fit window.
    pub exit_swnd: f64,
    /// From the circuit's start until the delivery rate over the next 2 s
    /// first reaches 95 % of the bottleneck's payload rate (NaN: never).
    pub ramp_s: f64,
    pub corrupt: u64,
    pub events: u64,
}

/// Rate and exit window over time (1 s bins), for the start-up figure.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub rate: Vec<(f64, f64)>,
    pub exit_swnd: Vec<(f64, f64)>,
    pub middle_queue: Vec<(f64, f64)>,
}

/// Time from `start` until the rate over the following 2 s reaches `target`.
pub fn ramp_time(c: &CircuitResult, start: f64, target: f64) -> f64 {
    let dt = c.rw_interval.as_secs_f64();
    let win = (2.0 / dt).round() as usize;
    let i0 = (start / dt).floor() as usize;
    for i in i0..c.w.len().saturating_sub(win) {
        if (c.w[i + win] - c.w[i]) as f64 / (win as f64 * dt) >= target {
            return (i as f64 * dt - start).max(0.0);
        }
    }
    f64::NAN
}

/// Mean of `f` over a hop's queue samples (every `dt` seconds) from `from` on.
pub fn hop_mean(
    c: &CircuitResult,
    node: &str,
    dt: f64,
    from: f64,
    f: impl Fn(&hopwise_tor::HopSample) -> f64,
) -> f64 {
    let Some(h) = c.hops.iter().find(|h| h.node == node) else {
        return f64::NAN;
    };
    let i0 = (from / dt).ceil() as usize;
    let s = &h.samples[i0.min(h.samples.len())..];
    if s.is_empty() {
        return f64::NAN;
    }
    s.iter().map(f).sum::<f64>() / s.len() as f64
}

/// What the middle relay holds for the circuit in the download direction,
/// in cells, averaged over the queue samples from `from` seconds on: its
/// circuit (BackTap: fused) queue, for TCP transports plus the cells written
/// towards the guard but not yet on the wire, plus the bytes in its kernel
/// receive buffers that it has not read, in 512-byte cells (its read bucket
/// is what limits; with one circuit they are all this circuit's). Returns
/// (everything, the circuit queue alone, the unread part).
pub fn middle_held_cells(res: &hopwise_tor::TorResults, from: f64) -> (f64, f64, f64) {
    let c = &res.circuits[0];
    let b = Dir::Backward.index();
    let qdt = res.queue_interval.map_or(0.01, |d| d.as_secs_f64());
    let held = hop_mean(c, "middle", qdt, from, |s| s.held(b) as f64);
    let circuit_queue = hop_mean(c, "middle", qdt, from, |s| s.queued[b] as f64);
    let unread = res
        .nodes
        .iter()
        .find(|n| n.name == "middle")
        .map_or(0.0, |n| {
            let i0 = ((from / qdt).ceil() as usize).min(n.samples.len());
            let s = &n.samples[i0..];
            s.iter().map(|x| x.unread_bytes as f64).sum::<f64>()
                / s.len().max(1) as f64
                / VANILLA_CELL
        });
    (held + unread, circuit_queue, unread)
}

/// Names the points whose fit window began before the circuit reached 95 %
/// of the payload rate (their rate and queue are not the steady state's).
/// `ramp_s` counts from the circuit's start, at most 1 s into the run
/// ([`start_offset`]); NaN (never reached) counts as ramping.
fn ramping_note(rows: &[&Fig5Row]) -> String {
    let ramping: Vec<String> = rows
        .iter()
        .filter(|r| r.ramp_s.is_nan() || r.ramp_s + 1.0 > r.fit_from_s)
        .map(|r| format!("{} ms", r.rtt_ms))
        .collect();
    if ramping.is_empty() {
        String::new()
    } else {
        format!(
            " (still ramping up when the fit began at {}: not steady state)",
            ramping.join(", ")
        )
    }
}

/// Runs one point; `keep` also returns the time series.
pub fn run_point(
    v: &Variant,
    rtt_ms: u64,
    seed: u64,
    plan: &Plan,
    keep: bool,
) -> anyhow::Result<(Fig5Run, Option<Series>)> {
    let rtt = Dur::from_millis(rtt_ms);
    let start = start_offset(seed, "c0", Dur::ZERO);
    let (dur, from) = lengths(v, rtt, plan);
    let net = net(v, rtt, start);
    let mut sim = net
        .build(&format!("fig5-{}-{rtt_ms}", v.key), seed, dur)
        .map_err(|e| anyhow::anyhow!("{}: {e}", v.key))?;
    sim.run();
    let res = sim.results();
    let c = &res.circuits[0];
    let f = c
        .fit(from)
        .ok_or_else(|| anyhow::anyhow!("{} at {rtt_ms} ms: no progress to fit", v.key))?;
    let b = Dir::Backward.index();
    let qdt = res.queue_interval.map_or(0.01, |d| d.as_secs_f64());
    let run = Fig5Run {
        variant: v.key,
        rtt_ms,
        seed,
        start_s: start.as_secs_f64(),
        duration_s: dur.as_secs_f64(),
        fit_from_s: from.as_secs_f64(),
        rate: f.rate,
        backlog: f.backlog,
        delay_ms: f.delay * 1e3,
        max_backlog: c.max_backlog(),
        bottleneck_queue_cells: middle_held_cells(&res, from.as_secs_f64()).0,
        exit_swnd: hop_mean(c, "exit", qdt, from.as_secs_f64(), |s| s.swnd[b] as f64),
        ramp_s: ramp_time(c, start.as_secs_f64(), 0.95 * v.payload_rate()),
        corrupt: c.corrupt,
        events: res.events,
    };
    let series = keep.then(|| {
        let per = (1.0 / c.rw_interval.as_secs_f64()).round() as usize;
        let per_q = (1.0 / qdt).round() as usize;
        let rate = (per..c.w.len())
            .step_by(per)
            .map(|i| (i as f64 / per as f64, (c.w[i] - c.w[i - per]) as f64))
            .collect();
        let hop = |node: &str, g: &dyn Fn(&hopwise_tor::HopSample) -> f64| {
            c.hops
                .iter()
                .find(|h| h.node == node)
                .map(|h| {
                    h.samples
                        .iter()
                        .enumerate()
                        .step_by(per_q)
                        .map(|(i, s)| (i as f64 / per_q as f64, g(s)))
                        .collect()
                })
                .unwrap_or_default()
        };
        Series {
            rate,
            exit_swnd: hop("exit", &|s| s.swnd[b] as f64),
            middle_queue: hop("middle", &|s| s.queued[b] as f64),
        }
    });
    Ok((run, series))
}

/// One point of Fig. 5: the mean over seeds (with 90 % confidence intervals).
#[derive(Clone, Debug, Serialize)]
pub struct Fig5Row {
    pub transport: &'static str,
    pub window: &'static str,
    pub rtt_ms: u64,
    #[serde(rename = "rate_Bps")]
    pub rate: f64,
    #[serde(rename = "backlog_B")]
    pub backlog: f64,
    pub delay_ms: f64,
    pub variant: &'static str,
    pub refill: &'static str,
    pub seeds: usize,
    #[serde(rename = "rate_ci90_Bps")]
    pub rate_ci: f64,
    #[serde(rename = "backlog_ci90_B")]
    pub backlog_ci: f64,
    pub delay_ci90_ms: f64,
    /// Rate over the bottleneck's payload rate for this transport.
    pub rate_of_payload: f64,
    /// Largest R − W of any run.
    #[serde(rename = "max_backlog_B")]
    pub max_backlog: u64,
    pub bottleneck_queue_cells: f64,
    pub exit_swnd: f64,
    pub ramp_s: f64,
    pub duration_s: f64,
    pub fit_from_s: f64,
}

/// Start-up time of BackTap's window at one RTT.
#[derive(Clone, Debug, Serialize)]
pub struct RampRow {
    pub rtt_ms: u64,
    /// "linear" (+1 cell per round, the paper) or "slow-start" (γ = 1).
    pub startup: &'static str,
    /// Time to 95 % of the payload rate (seed 1).
    pub ramp_s: f64,
    /// The estimate C/519 · (RTT/3)² the run lengths are based on.
    pub estimate_s: f64,
    /// The exit hop's window at the end of the run, and the hop BDP in cells.
    pub final_exit_swnd: f64,
    pub hop_bdp_cells: f64,
}

/// Everything Fig. 5 produced.
#[derive(Clone, Debug)]
pub struct Fig5Out {
    pub rows: Vec<Fig5Row>,
    pub runs: Vec<Fig5Run>,
    pub ramp: Vec<RampRow>,
    /// (RTT, startup, series) for the start-up figure.
    pub ramp_series: Vec<(u64, &'static str, Series)>,
}

impl Fig5Out {
    pub fn row(&self, variant: &str, rtt_ms: u64) -> Option<&Fig5Row> {
        self.rows
            .iter()
            .find(|r| r.variant == variant && r.rtt_ms == rtt_ms)
    }
    pub fn curve(&self, variant: &str) -> Vec<&Fig5Row> {
        self.rows.iter().filter(|r| r.variant == variant).collect()
    }
}

/// Runs the sweep, the start-up runs, and writes CSVs and figures.
pub fn run(
    plan: &Plan,
    opts: &ReproOpts,
    progress: &dyn Progress,
    dir: &Path,
    files: &mut Vec<String>,
) -> anyhow::Result<Fig5Out> {
    let vs: Vec<Variant> = variants()
        .into_iter()
        .filter(|v| v.main || plan.fig5_refill_variants)
        .collect();
    let ss = slow_start_variant();
    // (variant, rtt, seed, keep series, is a start-up run)
    let mut jobs: Vec<(Variant, u64, u64, bool, bool)> = Vec::new();
    for v in &vs {
        let seeds = if v.main {
            plan.fig5_seeds
        } else {
            plan.fig5_refill_seeds
        };
        for &rtt in &plan.fig5_rtts_ms {
            for seed in 1..=seeds as u64 {
                let keep = v.key == "backtap" && seed == 1 && plan.ramp_rtts_ms.contains(&rtt);
                jobs.push((v.clone(), rtt, seed, keep, false));
            }
        }
    }
    for &rtt in &plan.ramp_rtts_ms {
        if !plan.fig5_rtts_ms.contains(&rtt) {
            jobs.push((vs[2].clone(), rtt, 1, true, true));
        }
        jobs.push((ss.clone(), rtt, 1, true, true));
    }
    // Longest first, so that the slowest runs do not start last.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        let la = lengths(&jobs[a].0, Dur::from_millis(jobs[a].1), plan).0;
        let lb = lengths(&jobs[b].0, Dur::from_millis(jobs[b].1), plan).0;
        lb.cmp(&la).then(a.cmp(&b))
    });
    progress.start("Fig. 5", jobs.len() as u64);
    let results = par_map(order.clone(), opts.jobs, progress, |i| {
        let (v, rtt, seed, keep, _) = &jobs[i];
        run_point(v, *rtt, *seed, plan, *keep)
    });
    progress.finish();
    let mut by_job: Vec<Option<(Fig5Run, Option<Series>)>> = vec![None; jobs.len()];
    for (i, r) in order.into_iter().zip(results) {
        by_job[i] = Some(r?);
    }
    let mut runs = Vec::new();
    let mut ramp_runs: Vec<(u64, &'static str, Fig5Run, Series)> = Vec::new();
    for ((v, rtt, _, keep, startup_only), r) in jobs.iter().zip(by_job) {
        let (run, series) = r.expect("every job ran");
        anyhow::ensure!(run.corrupt == 0, "{} at {rtt} ms: corrupt bytes", v.key);
        if *keep {
            let name = if v.key == ss.key {
                "slow-start"
            } else {
                "linear"
            };
            ramp_runs.push((*rtt, name, run.clone(), series.unwrap_or_default()));
        }
        if !startup_only {
            runs.push(run);
        }
    }
    // Aggregate.
    let mut rows = Vec::new();
    for v in &vs {
        for &rtt in &plan.fig5_rtts_ms {
            let rs: Vec<&Fig5Run> = runs
                .iter()
                .filter(|r| r.variant == v.key && r.rtt_ms == rtt)
                .collect();
            let col =
                |f: fn(&Fig5Run) -> f64| mean_ci90(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
            let (rate, rate_ci) = col(|r| r.rate);
            let (backlog, backlog_ci) = col(|r| r.backlog);
            let (delay, delay_ci) = col(|r| r.delay_ms);
            rows.push(Fig5Row {
                transport: v.transport,
                window: v.window,
                rtt_ms: rtt,
                rate,
                backlog,
                delay_ms: delay,
                variant: v.key,
                refill: v.refill.label(),
                seeds: rs.len(),
                rate_ci,
                backlog_ci,
                delay_ci90_ms: delay_ci,
                rate_of_payload: rate / v.payload_rate(),
                max_backlog: rs.iter().map(|r| r.max_backlog).max().unwrap_or(0),
                bottleneck_queue_cells: col(|r| r.bottleneck_queue_cells).0,
                exit_swnd: col(|r| r.exit_swnd).0,
                ramp_s: col(|r| r.ramp_s).0,
                duration_s: rs.first().map_or(f64::NAN, |r| r.duration_s),
                fit_from_s: rs.first().map_or(f64::NAN, |r| r.fit_from_s),
            });
        }
    }
    ramp_runs.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    let ramp: Vec<RampRow> = ramp_runs
        .iter()
        .map(|(rtt, name, run, _)| RampRow {
            rtt_ms: *rtt,
            startup: name,
            ramp_s: run.ramp_s,
            estimate_s: ramp_estimate(Dur::from_millis(*rtt), BACKTAP_CELL),
            final_exit_swnd: run.exit_swnd,
            hop_bdp_cells: C as f64 / BACKTAP_CELL * (*rtt as f64 / 3e3),
        })
        .collect();
    let out = Fig5Out {
        rows,
        runs,
        ramp,
        ramp_series: ramp_runs
            .into_iter()
            .map(|(r, n, _, s)| (r, n, s))
            .collect(),
    };
    write_files(&out, dir, files)?;
    Ok(out)
}

fn write_files(out: &Fig5Out, dir: &Path, files: &mut Vec<String>) -> anyhow::Result<()> {
    let g = |x: f64| format!("{x:.6}");
    write_csv(
        &dir.join("fig5.csv"),
        &[
            "variant",
            "transport",
            "window",
            "refill",
            "rtt_ms",
            "seeds",
            "rate_Bps",
            "rate_ci90_Bps",
            "rate_of_payload",
            "backlog_B",
            "backlog_ci90_B",
            "delay_ms",
            "delay_ci90_ms",
            "max_backlog_B",
            "bottleneck_queue_cells",
            "exit_swnd",
            "ramp_s",
            "duration_s",
            "fit_from_s",
        ],
        &out.rows
            .iter()
            .map(|r| {
                vec![
                    r.variant.into(),
                    r.transport.into(),
                    r.window.into(),
                    r.refill.into(),
                    r.rtt_ms.to_string(),
                    r.seeds.to_string(),
                    g(r.rate),
                    g(r.rate_ci),
                    g(r.rate_of_payload),
                    g(r.backlog),
                    g(r.backlog_ci),
                    g(r.delay_ms),
                    g(r.delay_ci90_ms),
                    r.max_backlog.to_string(),
                    g(r.bottleneck_queue_cells),
                    g(r.exit_swnd),
                    g(r.ramp_s),
                    g(r.duration_s),
                    g(r.fit_from_s),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    write_csv(
        &dir.join("fig5_runs.csv"),
        &[
            "variant",
            "rtt_ms",
            "seed",
            "start_s",
            "duration_s",
            "fit_from_s",
            "rate_Bps",
            "backlog_B",
            "delay_ms",
            "max_backlog_B",
            "bottleneck_queue_cells",
            "exit_swnd",
            "ramp_s",
            "events",
        ],
        &out.runs
            .iter()
            .map(|r| {
                vec![
                    r.variant.into(),
                    r.rtt_ms.to_string(),
                    r.seed.to_string(),
                    g(r.start_s),
                    g(r.duration_s),
                    g(r.fit_from_s),
                    g(r.rate),
                    g(r.backlog),
                    g(r.delay_ms),
                    r.max_backlog.to_string(),
                    g(r.bottleneck_queue_cells),
                    g(r.exit_swnd),
                    g(r.ramp_s),
                    r.events.to_string(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    write_csv(
        &dir.join("fig5_ramp.csv"),
        &[
            "rtt_ms",
            "startup",
            "ramp_s",
            "estimate_s",
            "final_exit_swnd",
            "hop_bdp_cells",
        ],
        &out.ramp
            .iter()
            .map(|r| {
                vec![
                    r.rtt_ms.to_string(),
                    r.startup.into(),
                    g(r.ramp_s),
                    g(r.estimate_s),
                    g(r.final_exit_swnd),
                    g(r.hop_bdp_cells),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    let mut srows = Vec::new();
    for (rtt, name, s) in &out.ramp_series {
        for (i, &(t, rate)) in s.rate.iter().enumerate() {
            srows.push(vec![
                rtt.to_string(),
                (*name).into(),
                format!("{t:.0}"),
                g(rate),
                s.exit_swnd.get(i).map_or(String::new(), |x| g(x.1)),
                s.middle_queue.get(i).map_or(String::new(), |x| g(x.1)),
            ]);
        }
    }
    write_csv(
        &dir.join("fig5_ramp_series.csv"),
        &[
            "rtt_ms",
            "startup",
            "time_s",
            "rate_Bps",
            "exit_swnd",
            "middle_queue_cells",
        ],
        &srows,
    )?;
    files.extend(
        [
            "fig5.csv",
            "fig5_runs.csv",
            "fig5_ramp.csv",
            "fig5_ramp_series.csv",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    super::plots::fig5(out, dir, files)?;
    Ok(())
}

/// Least-squares line y = a + b x and its R².
pub fn linear_fit(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    Some((my - b * mx, b, r2))
}

/// The stream window's knee: the bytes per RTT the window delivers where it
/// limits (points below 90 % of the payload rate), over the payload rate.
pub fn knee_ms(curve: &[&Fig5Row], payload: f64) -> Option<f64> {
    let per_rtt: Vec<f64> = curve
        .iter()
        .filter(|r| r.rate < 0.9 * payload)
        .map(|r| r.rate * r.rtt_ms as f64 / 1e3)
        .collect();
    if per_rtt.is_empty() {
        return None;
    }
    let k = crate::quantile(&per_rtt, 0.5);
    Some(k / payload * 1e3)
}

/// Where the rate first falls below 95 % of `payload`, by linear
/// interpolation between sweep points.
pub fn crossing_ms(curve: &[&Fig5Row], payload: f64) -> Option<f64> {
    let th = 0.95 * payload;
    curve.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        (a.rate >= th && b.rate < th).then(|| {
            a.rtt_ms as f64
                + (a.rate - th) / (a.rate - b.rate) * (b.rtt_ms as f64 - a.rtt_ms as f64)
        })
    })
}

fn list(rows: &[&Fig5Row], f: impl Fn(&Fig5Row) -> String) -> String {
    rows.iter()
        .map(|r| format!("{} ms: {}", r.rtt_ms, f(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fig. 5's claims.
pub fn claims(plan: &Plan, out: &Fig5Out) -> Vec<Claim> {
    let mut c = Vec::new();
    let seeds = plan.fig5_seeds;
    let per_point = if seeds == 1 {
        "1 run per point".to_string()
    } else {
        format!("mean of {seeds} runs per point")
    };
    let refill_runs = format!(
        "{} per point",
        plural(plan.fig5_refill_seeds as usize, "run")
    );
    let pct = |x: f64| format!("{:.1} %", 100.0 * x);
    let pv = payload_rate(VANILLA_CELL);
    let pb = payload_rate(BACKTAP_CELL);

    // Vanilla, circuit window.
    let circ = out.curve("vanilla-circuit");
    if !circ.is_empty() {
        let below: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms < 300).collect();
        let worst = below.iter().map(|r| r.rate).fold(f64::INFINITY, f64::min);
        c.push(crate::legacy_claim(
            "Fig. 5a",
            "Vanilla, circuit window 1000: the rate is at least 95 % of C·498/512 at every RTT below 300 ms",
            format!(
                "{} of C·498/512 = {}; lowest {}; {per_point}",
                list(&below, |r| pct(r.rate / pv)),
                kbs(pv),
                pct(worst / pv)
            ),
            !below.is_empty() && worst >= 0.95 * pv,
        ));
        if let Some(r) = out.row("vanilla-circuit", 683) {
            let expect = 1000.0 * CELL_DATA / 0.683;
            c.push(crate::legacy_claim(
                "Fig. 5a",
                "Vanilla, circuit window: at 683 ms the rate is within ±15 % of 1000·498 B / RTT (the window limits)",
                format!(
                    "{} vs {} ({:+.1} %)",
                    kbs(r.rate),
                    kbs(expect),
                    100.0 * (r.rate / expect - 1.0)
                ),
                (r.rate / expect - 1.0).abs() <= 0.15,
            ));
        }
        let max = circ.iter().map(|r| r.max_backlog).max().unwrap_or(0);
        c.push(crate::legacy_claim(
            "Fig. 5b",
            "Vanilla, circuit window: the backlog never exceeds the window (1000 cells = 498 000 B)",
            format!(
                "largest R(t) − W(t) over every run and sample: {max} B (window exhausted: the exit waits for a SENDME)"
            ),
            max <= 1000 * CELL_DATA as u64,
        ));
        let low: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms < 100).collect();
        let high: Vec<&Fig5Row> = circ.iter().copied().filter(|r| r.rtt_ms >= 171).collect();
        let mid: Vec<&Fig5Row> = circ
            .iter()
            .copied()
            .filter(|r| (100..171).contains(&r.rtt_ms))
            .collect();
        let near = |rs: &[&Fig5Row], level: f64| {
            !rs.is_empty() && rs.iter().all(|r| (r.backlog / level - 1.0).abs() <= 0.15)
        };
        c.push(crate::legacy_claim(
            "Fig. 5b",
            "Vanilla, circuit window (100 ms refill): the backlog plateaus near 350 kB below 100 ms RTT and near 250 kB beyond (judged: ±15 % at RTT < 100 ms and at RTT ≥ 171 ms)",
            format!(
                "below 100 ms: {}; from 171 ms: {}; in between (transition, not judged): {}",
                list(&low, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&high, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&mid, |r| format!("{:.0} kB", r.backlog / 1e3)),
            ),
            near(&low, 350e3) && near(&high, 250e3),
        ));
        // The paper's explanation: without 100 ms bursts, no 350 kB plateau.
        for key in ["vanilla-circuit-10ms", "vanilla-circuit-on-demand"] {
            let cv = out.curve(key);
            if cv.is_empty() {
                continue;
            }
            let theory = |r: &Fig5Row| (1000.0 - 50.0) * CELL_DATA - r.rate * r.rtt_ms as f64 / 2e3;
            let low: Vec<&Fig5Row> = cv.iter().copied().filter(|r| r.rtt_ms < 341).collect();
            let dev = low
                .iter()
                .map(|r| (r.backlog / theory(r) - 1.0).abs())
                .fold(0.0, f64::max);
            let (first, last) = (low.first(), low.last());
            let verdict = match (first, last) {
                (Some(a), Some(b)) if a.backlog > 1.15 * 350e3 || b.backlog < 0.85 * 350e3 => format!(
                    "no 350 kB plateau: the backlog falls from {:.0} kB at {} ms to {:.0} kB at {} ms, within {:.0} % of the smooth-window value (1000 − 50)·498 B − rate·RTT/2, and is 250 kB where the window limits",
                    a.backlog / 1e3,
                    a.rtt_ms,
                    b.backlog / 1e3,
                    b.rtt_ms,
                    100.0 * dev
                ),
                _ => format!(
                    "a plateau near 350 kB remains (largest deviation from the smooth-window value {:.0} %)",
                    100.0 * dev
                ),
            };
            c.push(Claim::info(
                "Fig. 5b (§4 explanation)",
                format!(
                    "With {} refill the 350 kB plateau should disappear. It comes from the 100 ms refill: 300 cells arrive per refill and only three SENDMEs travel back",
                    if key.ends_with("10ms") { "a 10 ms" } else { "an on-demand" }
                ),
                format!(
                    "{} ({refill_runs}); {verdict}",
                    list(&cv, |r| format!("{:.0} kB", r.backlog / 1e3)),
                ),
            ));
        }
    }

    // Vanilla, stream window.
    let stream = out.curve("vanilla-stream");
    if !stream.is_empty() {
        let knee = knee_ms(&stream, pv);
        let cross = crossing_ms(&stream, pv);
        c.push(crate::legacy_claim(
            "Fig. 5a",
            "Vanilla, stream window 500: the knee is near 500·512 B / 1500 kB/s ≈ 171 ms (judged: ±10 %)",
            format!(
                "knee {} ms (bytes per RTT where the window limits, over C·498/512); the rate first falls below 95 % at {} ms; rates (of C·498/512): {}",
                knee.map_or("-".into(), |k| format!("{k:.0}")),
                cross.map_or("-".into(), |k| format!("{k:.0}")),
                list(&stream, |r| pct(r.rate / pv))
            ),
            knee.is_some_and(|k| (k / 171.0 - 1.0).abs() <= 0.10),
        ));
        let low: Vec<&Fig5Row> = stream.iter().copied().filter(|r| r.rtt_ms < 100).collect();
        let high: Vec<&Fig5Row> = stream.iter().copied().filter(|r| r.rtt_ms >= 171).collect();
        c.push(Claim::info(
            "Fig. 5b",
            "Vanilla, stream window: about 100 kB of backlog below 100 ms, 125 kB (half the window) beyond",
            format!(
                "below 100 ms: {}; from 171 ms: {}; largest R − W {} B (window 249 000 B)",
                list(&low, |r| format!("{:.0} kB", r.backlog / 1e3)),
                list(&high, |r| format!("{:.0} kB", r.backlog / 1e3)),
                stream.iter().map(|r| r.max_backlog).max().unwrap_or(0)
            ),
        ));
    }

    // BackTap.
    let bt = out.curve("backtap");
    if !bt.is_empty() {
        let worst = bt.iter().map(|r| r.rate).fold(f64::INFINITY, f64::min);
        c.push(crate::legacy_claim(
            "Fig. 5a",
            "BackTap, after ramp-up: the rate is at least 95 % of the bottleneck's payload rate at every RTT up to 900 ms",
            format!(
                "{} of C·498/519 = {} (the bucket charges the 519-byte BackTap cell); lowest {} ({} of C·498/512); fits start {:.0}–{:.0} s into the runs",
                list(&bt, |r| pct(r.rate / pb)),
                kbs(pb),
                pct(worst / pb),
                pct(worst / pv),
                bt.first().map_or(0.0, |r| r.fit_from_s),
                bt.last().map_or(0.0, |r| r.fit_from_s)
            ),
            worst >= 0.95 * pb && bt.iter().any(|r| r.rtt_ms >= 900),
        ));
        let pts: Vec<(f64, f64)> = bt
            .iter()
            .map(|r| (r.rtt_ms as f64 / 1e3, r.backlog))
            .collect();
        let fit = linear_fit(&pts);
        c.push(crate::legacy_claim(
            "Fig. 5b",
            "BackTap: the backlog grows linearly with the RTT (judged: least-squares line with positive slope and R² ≥ 0.99)",
            match fit {
                Some((a, b, r2)) => format!(
                    "backlog = {:.1} kB + {:.1} kB per 100 ms of RTT, R² = {r2:.4} (rate·RTT/2 would be {:.1} kB per 100 ms); {}",
                    a / 1e3,
                    b / 1e4,
                    pb / 2e4,
                    list(&bt, |r| format!("{:.0} kB", r.backlog / 1e3))
                ),
                None => "no fit".into(),
            },
            fit.is_some_and(|(_, b, r2)| b > 0.0 && r2 >= 0.99),
        ));
        let ok_delay = bt.iter().all(|r| {
            let half = r.rtt_ms as f64 / 2.0;
            r.delay_ms >= half && r.delay_ms <= half + 30.0
        });
        c.push(crate::legacy_claim(
            "Fig. 5c",
            "BackTap: the delay lies between RTT/2 and RTT/2 + 30 ms at every RTT",
            format!(
                "delay − RTT/2: {}",
                list(&bt, |r| format!(
                    "{:+.1} ms",
                    r.delay_ms - r.rtt_ms as f64 / 2.0
                ))
            ),
            ok_delay,
        ));
        let quantum = C as f64 * RefillMode::Periodic10.interval().as_secs_f64() / BACKTAP_CELL;
        let lo = ALPHA as f64;
        let hi = BETA as f64 + quantum;
        c.push(crate::legacy_claim(
            "§3, Eq. 1",
            format!(
                "BackTap: the bottleneck hop's mean queue stays within the α–β band plus the token-bucket burst (judged: mean cells queued at the middle in [α, β + rate·T/519] = [{lo:.0}, {hi:.1}], T = 10 ms)"
            ),
            format!(
                "mean cells in the middle's queue: {}",
                list(&bt, |r| format!("{:.1}", r.bottleneck_queue_cells))
            ),
            bt.iter()
                .all(|r| r.bottleneck_queue_cells >= lo && r.bottleneck_queue_cells <= hi),
        ));
    }
    if !out.ramp.is_empty() {
        let by = |name: &str| {
            out.ramp
                .iter()
                .filter(|r| r.startup == name)
                .map(|r| format!("{} ms: {:.0} s", r.rtt_ms, r.ramp_s))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let at_max = |name: &str| {
            out.ramp
                .iter()
                .filter(|r| r.startup == name)
                .max_by_key(|r| r.rtt_ms)
                .map_or(f64::NAN, |r| r.ramp_s)
        };
        let (lin, ss) = (at_max("linear"), at_max("slow-start"));
        let verdict = if ss < 0.7 * lin {
            format!(
                "the slow start shortens the ramp at the largest RTT from {lin:.0} s to {ss:.0} s"
            )
        } else {
            format!(
                "the slow start does not shorten it ({ss:.0} s against {lin:.0} s at the largest RTT): it ends within the first rounds at the exit and middle hops, whose FORWARD-RTT includes the wait behind the next hop's still-small window; the sweep therefore uses the paper's linear start-up with runs long enough to ramp up"
            )
        };
        c.push(Claim::info(
            "§3 start-up",
            "BackTap's window opens by one cell per round from 2 (paper): at 900 ms the per-hop BDP of ≈ 870 cells takes hundreds of seconds; the optional slow start should shorten it",
            format!(
                "time to 95 % of the payload rate, linear: {}; slow start (γ = 1): {}; {verdict}",
                by("linear"),
                by("slow-start")
            ),
        ));
    }
    for key in ["backtap-100ms", "backtap-on-demand"] {
        let cv = out.curve(key);
        if cv.is_empty() {
            continue;
        }
        c.push(Claim::info(
            "Fig. 5 (refill sensitivity)",
            format!(
                "BackTap with Tor's {} refill instead of nstor's 10 ms",
                if key.ends_with("100ms") {
                    "100 ms periodic"
                } else {
                    "on-demand (100 ms re-enable)"
                }
            ),
            format!(
                "{refill_runs}. rate/payload: {}; delay − RTT/2: {}; mean middle queue: {}",
                list(&cv, |r| f3(r.rate / pb)),
                list(&cv, |r| format!(
                    "{:+.0} ms",
                    r.delay_ms - r.rtt_ms as f64 / 2.0
                )),
                list(&cv, |r| format!("{:.0}", r.bottleneck_queue_cells))
            ),
        ));
    }
    let tv = out.curve("tor-vegas");
    if !tv.is_empty() {
        c.push(Claim::info(
            "Fig. 5 (Tor Vegas)",
            "Tor Vegas (proposal 324, 100 ms refill) keeps the rate under high RTT but holds a standing queue of 100+ cells, where BackTap holds a few",
            format!(
                "{refill_runs}. rate/payload: {}; mean cells the middle holds (circuit queue, unsent and unread): {}; BackTap: {}{}",
                list(&tv, |r| f3(r.rate / pv)),
                list(&tv, |r| format!("{:.0}", r.bottleneck_queue_cells)),
                list(&bt, |r| format!("{:.0}", r.bottleneck_queue_cells)),
                ramping_note(&tv),
            ),
        ));
    }
    c
}
