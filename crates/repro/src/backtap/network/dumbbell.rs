//! Fig. 7 and Table 2 (seed 002 §4): the NA/EU dumbbell of the 100-relay
//! TorPS file ([`DumbbellDraw`]) with 375 circuits, 10 % of them bulk (5 MiB
//! back to back) and the rest web (320 KiB with 1–20 s think time), clients
//! starting uniformly over the start window; and the 800-circuit "stress
//! test". Per transport and kind of circuit: TTFB and TTLB CDFs, the CDF of
//! the circuits' end-to-end propagation RTT, completed downloads and the
//! mean download rate.
//!
//! **What is counted.** Only requests *issued* at or after
//! `plan.dumbbell_from_s` (the paper's lead time: clients start over the
//! first 30 s, evaluation begins 30 s later), up to the end of the run
//! (`plan.dumbbell_secs`). A request is *completed* when its last byte
//! reached the client before the end of the run. TTFB and TTLB are measured
//! from the moment the client application issued the request (its BEGIN
//! cell was created) to the first and the last byte of the response at the
//! client; their distributions pool the requests of every seed. TTLB
//! statistics and the mean rate cover completed requests only (those still
//! running at the end are counted in `unfinished`). `completed` and `issued`
//! in Table 2 are means per run over the seeds (the paper counts one run);
//! the mean rate averages size / TTLB over the completed downloads of all
//! seeds.
//!
//! **Files.** `dumbbell.csv` (Table 2 and the medians, one row per circuit
//! count, transport and kind, with BackTap's hop retransmissions),
//! `dumbbell_runs.csv` (per run, with events and wall time),
//! `dumbbell_cdf.csv` (tidy CDFs: `circuits, transport, kind, metric, x, F`
//! with metric `ttfb_s`, `ttlb_s` or `e2e_rtt_s`, the latter with transport
//! `all`), `fig7_ttfb_<c>.svg` (web and bulk panels with the E2E RTT),
//! `fig7_ttlb_web_<c>.svg`, `fig7_ttlb_bulk_<c>.svg` per circuit count
//! `<c>`, and `fig7_e2e_rtt.svg`.

use super::topo::{DumbbellDraw, RESPONSE_DELAY};
use super::{transport, transports, Plan, Speed, Transport};
use crate::backtap::common::round_to;
use hopwise_experiment::stats::{mean_sd, quantile};
use hopwise_experiment::{figs, Ctx, Outputs};
use hopwise_plot::{palette_color, Chart, Figure, Series};
use hopwise_proto::time::{Dur, Time};
use hopwise_tor::{ResponseDelay, TorNet};
use serde::Serialize;

/// Kind of circuit: web or bulk.
pub const KINDS: [&str; 2] = ["web", "bulk"];

/// What one kind of circuit produced in one run (requests issued at or
/// after `dumbbell_from_s`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindRun {
    pub circuits: usize,
    pub issued: usize,
    pub completed: usize,
    /// TTFB of every request that got a first byte (s).
    pub ttfb_s: Vec<f64>,
    /// TTFB minus the propagation RTT of the request's circuit (s): queueing,
    /// transmission and the server's delay (`tests/backtap_dumbbell.rs`
    /// checks that it is never negative).
    pub ttfb_excess_s: Vec<f64>,
    /// TTLB of every completed request (s).
    pub ttlb_s: Vec<f64>,
    /// size / TTLB of every completed request (bytes per second).
    pub rate_bps: Vec<f64>,
    /// End-to-end propagation RTT of each circuit of this kind (s).
    pub e2e_rtt_s: Vec<f64>,
    /// Cells its hops sent again, over the whole run and all of this kind's
    /// circuits; `None` for transports that recover losses per connection
    /// rather than per circuit (the TCP ones).
    pub hop_retransmits: Option<u64>,
    /// Circuits of this kind with at least one retransmitted cell.
    pub lossy_circuits: Option<usize>,
}

/// One run: one circuit count, one transport, one seed.
#[derive(Clone, Debug, Serialize)]
pub struct DumbbellRun {
    pub circuits: usize,
    pub transport: String,
    pub seed: u64,
    /// `[web, bulk]`.
    pub kinds: [KindRun; 2],
    pub events: u64,
    pub wall_s: f64,
    pub corrupt: u64,
}

/// One line of Table 2 (and `summary.json`'s `dumbbell`): a circuit count,
/// a transport and a kind of circuit, over the plan's seeds.
#[derive(Clone, Debug, Serialize)]
pub struct DumbbellRow {
    pub circuits: usize,
    pub transport: String,
    pub label: String,
    /// One of the five compared transports (else a sensitivity variant).
    pub main: bool,
    /// "web" or "bulk".
    pub kind: String,
    pub runs: usize,
    /// Requests issued at or after `dumbbell_from_s`, mean per run.
    pub issued: f64,
    /// Of those, requests whose last byte arrived before the end of the run:
    /// the **mean per run** (over seeds), as Table 2 counts one run.
    pub completed: f64,
    /// Issued and not completed by the end, mean per run.
    pub unfinished: f64,
    /// Mean over completed downloads (pooled over seeds) of size / TTLB.
    #[serde(rename = "mean_rate_Bps")]
    pub mean_rate: f64,
    pub ttfb_median_s: f64,
    pub ttfb_p90_s: f64,
    pub ttlb_median_s: f64,
    pub ttlb_p90_s: f64,
    /// Standard deviation of TTFB and TTLB (the paper's "variance").
    pub ttfb_sd_s: f64,
    pub ttlb_sd_s: f64,
    /// Median over this kind's circuits (pooled over seeds) of the
    /// end-to-end propagation RTT client → guard → middle → exit → client.
    pub e2e_rtt_median_s: f64,
    /// Median over requests of TTFB minus the circuit's propagation RTT.
    pub ttfb_excess_median_s: f64,
    /// Cells the circuits' hops sent again, mean per run (whole run); `None`
    /// for the TCP transports, whose retransmissions belong to connections.
    pub hop_retransmits: Option<f64>,
    /// Circuits with at least one retransmitted cell, mean per run.
    pub lossy_circuits: Option<f64>,
}

/// Everything Fig. 7 and Table 2 produced.
#[derive(Clone, Debug, Default)]
pub struct DumbbellOut {
    /// The transports run, in the figures' order.
    pub transports: Vec<Transport>,
    pub rows: Vec<DumbbellRow>,
    pub speed: Vec<Speed>,
    pub runs: Vec<DumbbellRun>,
}

impl DumbbellOut {
    pub fn row(&self, circuits: usize, transport: &str, kind: &str) -> Option<&DumbbellRow> {
        self.rows
            .iter()
            .find(|r| r.circuits == circuits && r.transport == transport && r.kind == kind)
    }

    /// Pooled samples of one metric of one kind over the runs of a circuit
    /// count and transport.
    pub fn pooled(
        &self,
        circuits: usize,
        transport: &str,
        kind: usize,
        f: fn(&KindRun) -> &Vec<f64>,
    ) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.circuits == circuits && r.transport == transport)
            .flat_map(|r| f(&r.kinds[kind]).iter().copied())
            .collect()
    }

    /// End-to-end RTTs of every circuit of a circuit count (pooled over
    /// seeds; the same for every transport, so taken from the first).
    pub fn e2e_rtts(&self, circuits: usize, kind: Option<usize>) -> Vec<f64> {
        let Some(first) = self.runs.iter().find(|r| r.circuits == circuits) else {
            return vec![];
        };
        self.runs
            .iter()
            .filter(|r| r.circuits == circuits && r.transport == first.transport)
            .flat_map(|r| {
                r.kinds
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| kind.is_none_or(|x| x == *k))
                    .flat_map(|(_, k)| k.e2e_rtt_s.iter().copied())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The server's mean response delay (s).
pub fn server_delay_mean() -> f64 {
    match RESPONSE_DELAY {
        ResponseDelay::None => 0.0,
        ResponseDelay::Fixed(d) => d.as_secs_f64(),
        // The cap at `max` (10 means) lowers the mean by e^-10: negligible.
        ResponseDelay::Exp { mean, .. } => mean.as_secs_f64(),
    }
}

/// Runs one transport on one seed with `circuits` circuits.
pub fn run_one(
    plan: &Plan,
    t: &Transport,
    circuits: usize,
    seed: u64,
) -> anyhow::Result<DumbbellRun> {
    let draw = DumbbellDraw::new(
        seed,
        circuits,
        plan.dumbbell_bulk_fraction,
        Dur::from_secs(plan.dumbbell_start_s),
    );
    run_net(plan, &draw, &draw.net(t), t.key, seed)
}

/// Runs `net`, built from `draw` (possibly with a changed configuration,
/// for exploration), and collects the requests of [`run_one`].
pub fn run_net(
    plan: &Plan,
    draw: &DumbbellDraw,
    net: &TorNet,
    key: &str,
    seed: u64,
) -> anyhow::Result<DumbbellRun> {
    let circuits = draw.lines.len();
    let name = format!("fig7-{circuits}-{key}-{seed}");
    let mut sim = net
        .build(&name, seed, Dur::from_secs(plan.dumbbell_secs))
        .map_err(anyhow::Error::msg)?;
    #[allow(clippy::disallowed_methods)] // wall time for the speed report only
    let t0 = std::time::Instant::now();
    sim.run();
    let wall_s = t0.elapsed().as_secs_f64();
    let res = sim.results();
    anyhow::ensure!(
        res.circuits.len() == circuits,
        "{name}: {} circuit results for {circuits} circuits",
        res.circuits.len()
    );
    let from = Time::ZERO + Dur::from_secs(plan.dumbbell_from_s);
    let mut kinds: [KindRun; 2] = Default::default();
    for (i, c) in res.circuits.iter().enumerate() {
        anyhow::ensure!(
            c.name == format!("c{i}"),
            "{name}: circuit {i} is {}",
            c.name
        );
        let k = &mut kinds[usize::from(draw.is_bulk(i))];
        let rtt = draw.e2e_rtt(i);
        k.circuits += 1;
        if let Some(l) = c.losses {
            *k.hop_retransmits.get_or_insert(0) += l.retransmits;
            *k.lossy_circuits.get_or_insert(0) += usize::from(l.retransmits > 0);
        }
        k.e2e_rtt_s.push(rtt);
        for q in c.requests.iter().filter(|q| q.issued >= from) {
            k.issued += 1;
            if let Some(d) = q.ttfb {
                k.ttfb_s.push(d.as_secs_f64());
                k.ttfb_excess_s.push(d.as_secs_f64() - rtt);
            }
            if let Some(d) = q.ttlb {
                let s = d.as_secs_f64();
                k.completed += 1;
                k.ttlb_s.push(s);
                k.rate_bps.push(q.size as f64 / s);
            }
        }
    }
    Ok(DumbbellRun {
        circuits,
        transport: key.into(),
        seed,
        kinds,
        events: res.events,
        wall_s,
        corrupt: res.circuits.iter().map(|c| c.corrupt).sum(),
    })
}

fn mean(v: &[f64]) -> f64 {
    hopwise_experiment::stats::mean(v)
}

fn sd(v: &[f64]) -> f64 {
    mean_sd(v).1
}

/// Runs every circuit count, main transport and seed of the plan.
pub fn run(plan: &Plan, ctx: &Ctx<'_, DumbbellOut>) -> anyhow::Result<DumbbellOut> {
    let mut ts = transports();
    for k in &plan.dumbbell_variants {
        ts.push(transport(k).ok_or_else(|| anyhow::anyhow!("unknown dumbbell variant {k}"))?);
    }
    run_transports(plan, &ts, ctx)
}

/// [`run`] for a chosen set of transports (tests run fewer).
pub fn run_transports(
    plan: &Plan,
    ts: &[Transport],
    ctx: &Ctx<'_, DumbbellOut>,
) -> anyhow::Result<DumbbellOut> {
    let mut jobs: Vec<(usize, Transport, u64)> = Vec::new();
    for &c in &plan.dumbbell_circuits {
        for t in ts {
            for s in 1..=plan.dumbbell_seeds as u64 {
                jobs.push((c, t.clone(), s));
            }
        }
    }
    ctx.progress.start("Fig. 7", jobs.len() as u64);
    let results = ctx.par_map(jobs, |(c, t, s)| run_one(plan, &t, c, s));
    ctx.progress.finish();
    let mut out = DumbbellOut {
        transports: ts.to_vec(),
        ..DumbbellOut::default()
    };
    for r in results {
        let r = r?;
        anyhow::ensure!(
            r.corrupt == 0,
            "{} circuits, {} seed {}: corrupt bytes",
            r.circuits,
            r.transport,
            r.seed
        );
        out.runs.push(r);
    }
    for &c in &plan.dumbbell_circuits {
        for t in ts {
            let rs: Vec<&DumbbellRun> = out
                .runs
                .iter()
                .filter(|r| r.circuits == c && r.transport == t.key)
                .collect();
            let n = rs.len().max(1) as f64;
            for (k, kind) in KINDS.iter().enumerate() {
                let pool = |f: fn(&KindRun) -> &Vec<f64>| -> Vec<f64> {
                    rs.iter()
                        .flat_map(|r| f(&r.kinds[k]).iter().copied())
                        .collect()
                };
                let count = |f: fn(&KindRun) -> usize| -> f64 {
                    rs.iter().map(|r| f(&r.kinds[k]) as f64).sum::<f64>() / n
                };
                let per_run = |f: fn(&KindRun) -> Option<f64>| -> Option<f64> {
                    let v: Option<Vec<f64>> = rs.iter().map(|r| f(&r.kinds[k])).collect();
                    v.map(|v| v.iter().sum::<f64>() / n)
                };
                let (ttfb, ttlb) = (pool(|x| &x.ttfb_s), pool(|x| &x.ttlb_s));
                let (issued, completed) = (count(|x| x.issued), count(|x| x.completed));
                out.rows.push(DumbbellRow {
                    circuits: c,
                    transport: t.key.into(),
                    label: t.label.into(),
                    main: t.main,
                    kind: (*kind).into(),
                    runs: rs.len(),
                    issued,
                    completed,
                    unfinished: issued - completed,
                    mean_rate: mean(&pool(|x| &x.rate_bps)),
                    ttfb_median_s: quantile(&ttfb, 0.5),
                    ttfb_p90_s: quantile(&ttfb, 0.9),
                    ttlb_median_s: quantile(&ttlb, 0.5),
                    ttlb_p90_s: quantile(&ttlb, 0.9),
                    ttfb_sd_s: sd(&ttfb),
                    ttlb_sd_s: sd(&ttlb),
                    e2e_rtt_median_s: quantile(&pool(|x| &x.e2e_rtt_s), 0.5),
                    ttfb_excess_median_s: quantile(&pool(|x| &x.ttfb_excess_s), 0.5),
                    hop_retransmits: per_run(|x| x.hop_retransmits.map(|v| v as f64)),
                    lossy_circuits: per_run(|x| x.lossy_circuits.map(|v| v as f64)),
                });
            }
            let wall: Vec<f64> = rs.iter().map(|r| r.wall_s).collect();
            let events: Vec<f64> = rs.iter().map(|r| r.events as f64).collect();
            out.speed.push(Speed {
                experiment: format!("fig7-{c}"),
                transport: t.key.into(),
                runs: rs.len(),
                simulated_s: plan.dumbbell_secs as f64,
                wall_s_per_run: mean(&wall),
                events_per_run: mean(&events),
                events_per_s: events.iter().sum::<f64>() / wall.iter().sum::<f64>(),
            });
        }
    }
    Ok(out)
}

/// At most this many points per CDF curve in `dumbbell_cdf.csv`.
const CDF_POINTS: usize = 1000;

/// Empirical CDF of `xs` as `(x, F)`, thinned to at most [`CDF_POINTS`]
/// points (every k-th order statistic and the largest).
fn cdf_rows(xs: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut out: Vec<(f64, f64)> = (0..n)
        .filter(|i| (i + 1) % step == 0 || i + 1 == n)
        .map(|i| (v[i], (i + 1) as f64 / n as f64))
        .collect();
    out.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    out
}

/// A row of `dumbbell.csv` (Table 2 and the medians): counts per run to a
/// tenth, rates in whole bytes per second.
#[derive(Clone, Debug, Default, Serialize)]
struct TableRow<'a> {
    circuits: usize,
    transport: &'a str,
    kind: &'a str,
    runs: usize,
    issued: f64,
    completed: f64,
    unfinished: f64,
    #[serde(rename = "mean_rate_Bps")]
    mean_rate: f64,
    ttfb_median_s: f64,
    ttfb_p90_s: f64,
    ttlb_median_s: f64,
    ttlb_p90_s: f64,
    ttfb_sd_s: f64,
    ttlb_sd_s: f64,
    e2e_rtt_median_s: f64,
    ttfb_excess_median_s: f64,
    hop_retransmits: Option<f64>,
    lossy_circuits: Option<f64>,
}

/// A row of `dumbbell_runs.csv`: one kind of circuit in one run.
#[derive(Clone, Debug, Default, Serialize)]
struct RunRow<'a> {
    circuits: usize,
    transport: &'a str,
    seed: u64,
    kind: &'a str,
    kind_circuits: usize,
    issued: usize,
    completed: usize,
    #[serde(rename = "mean_rate_Bps")]
    mean_rate: f64,
    ttfb_median_s: f64,
    ttlb_median_s: f64,
    hop_retransmits: Option<u64>,
    lossy_circuits: Option<usize>,
    events: u64,
    wall_s: f64,
}

/// A point of a CDF in `dumbbell_cdf.csv`.
#[derive(Clone, Debug, Default, Serialize)]
struct CdfRow<'a> {
    circuits: usize,
    transport: &'a str,
    kind: &'a str,
    metric: &'a str,
    x: f64,
    #[serde(rename = "F")]
    f: f64,
}

/// The CDF of `xs` as rows of `dumbbell_cdf.csv` for (circuits,
/// transport, kind, metric).
fn push_cdf<'a>(
    rows: &mut Vec<CdfRow<'a>>,
    (circuits, transport, kind, metric): (usize, &'a str, &'a str, &'a str),
    xs: &[f64],
) {
    rows.extend(cdf_rows(xs).into_iter().map(|(x, f)| CdfRow {
        circuits,
        transport,
        kind,
        metric,
        x,
        f,
    }));
}

/// `dumbbell.csv`, `dumbbell_runs.csv`, `dumbbell_cdf.csv` and the
/// figures.
pub fn outputs(plan: &Plan, out: &DumbbellOut, o: &mut Outputs) -> anyhow::Result<()> {
    let rows: Vec<TableRow> = out
        .rows
        .iter()
        .map(|r| TableRow {
            circuits: r.circuits,
            transport: &r.transport,
            kind: &r.kind,
            runs: r.runs,
            issued: round_to(r.issued, 1),
            completed: round_to(r.completed, 1),
            unfinished: round_to(r.unfinished, 1),
            mean_rate: round_to(r.mean_rate, 0),
            ttfb_median_s: r.ttfb_median_s,
            ttfb_p90_s: r.ttfb_p90_s,
            ttlb_median_s: r.ttlb_median_s,
            ttlb_p90_s: r.ttlb_p90_s,
            ttfb_sd_s: r.ttfb_sd_s,
            ttlb_sd_s: r.ttlb_sd_s,
            e2e_rtt_median_s: r.e2e_rtt_median_s,
            ttfb_excess_median_s: r.ttfb_excess_median_s,
            hop_retransmits: r.hop_retransmits.map(|x| round_to(x, 1)),
            lossy_circuits: r.lossy_circuits.map(|x| round_to(x, 1)),
        })
        .collect();
    o.csv("dumbbell.csv", &rows)?;
    let rows: Vec<RunRow> = out
        .runs
        .iter()
        .flat_map(|r| {
            KINDS.iter().zip(&r.kinds).map(move |(kind, x)| RunRow {
                circuits: r.circuits,
                transport: &r.transport,
                seed: r.seed,
                kind,
                kind_circuits: x.circuits,
                issued: x.issued,
                completed: x.completed,
                mean_rate: round_to(mean(&x.rate_bps), 0),
                ttfb_median_s: quantile(&x.ttfb_s, 0.5),
                ttlb_median_s: quantile(&x.ttlb_s, 0.5),
                hop_retransmits: x.hop_retransmits,
                lossy_circuits: x.lossy_circuits,
                events: r.events,
                wall_s: round_to(r.wall_s, 2),
            })
        })
        .collect();
    o.csv("dumbbell_runs.csv", &rows)?;
    // Tidy CDFs: one row per point.
    let mut keys_seen: Vec<&str> = Vec::new();
    for s in &out.speed {
        if !keys_seen.contains(&s.transport.as_str()) {
            keys_seen.push(&s.transport);
        }
    }
    let mut rows: Vec<CdfRow> = Vec::new();
    for &c in &plan.dumbbell_circuits {
        for (k, kind) in KINDS.iter().enumerate() {
            let e2e = out.e2e_rtts(c, Some(k));
            push_cdf(&mut rows, (c, "all", kind, "e2e_rtt_s"), &e2e);
            for t in &keys_seen {
                let ttfb = out.pooled(c, t, k, |x| &x.ttfb_s);
                push_cdf(&mut rows, (c, t, kind, "ttfb_s"), &ttfb);
                let ttlb = out.pooled(c, t, k, |x| &x.ttlb_s);
                push_cdf(&mut rows, (c, t, kind, "ttlb_s"), &ttlb);
            }
        }
    }
    o.csv("dumbbell_cdf.csv", &rows)?;
    plots(plan, out, o)
}

/// CDF chart of one metric, one curve per transport, plus the end-to-end
/// RTT (dashed) if given.
/// `(c, kind)`: circuit count and index into [`KINDS`].
fn cdf_chart(
    title: &str,
    x_label: &str,
    ts: &[Transport],
    out: &DumbbellOut,
    (c, kind): (usize, usize),
    f: fn(&KindRun) -> &Vec<f64>,
    e2e: Option<&[f64]>,
) -> Chart {
    let mut ch = Chart::new(title)
        .x_label(x_label)
        .y_label("CDF")
        .y_range(0.0, 1.0)
        .log_x(true);
    for (i, t) in ts.iter().enumerate() {
        let xs = out.pooled(c, t.key, kind, f);
        ch.push_series(cdf_series(t.label, &xs).color(palette_color(i)));
    }
    if let Some(r) = e2e {
        ch.push_series(cdf_series("E2E RTT", r).dashed());
    }
    ch
}

/// The CDF of `xs` as a step line that rises from 0 at the smallest
/// sample, named with the sample size ("N23 (n = 38)").
fn cdf_series(name: &str, xs: &[f64]) -> Series {
    let n = xs.iter().filter(|x| x.is_finite()).count();
    let mut rows = cdf_rows(xs);
    // Thinned rows start at the step-th sample: the curve starts at the
    // smallest.
    let min = xs
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::INFINITY, f64::min);
    if rows.first().is_some_and(|r| r.0 > min) {
        rows.insert(0, (min, 1.0 / n as f64));
    }
    Series::step(format!("{name} (n = {n})"), figs::cdf_from_zero(rows))
}

fn plots(plan: &Plan, out: &DumbbellOut, o: &mut Outputs) -> anyhow::Result<()> {
    let ts = &out.transports;
    for &c in &plan.dumbbell_circuits {
        let mut fig = Figure::new(format!("Fig. 7: TTFB, {c} circuits"), 2).panel_size(580, 420);
        for (k, kind) in KINDS.iter().enumerate() {
            let e2e = out.e2e_rtts(c, Some(k));
            fig.push_panel(cdf_chart(
                kind,
                "time to first byte (s)",
                ts,
                out,
                (c, k),
                |x| &x.ttfb_s,
                Some(&e2e),
            ));
        }
        o.svg(&format!("fig7_ttfb_{c}.svg"), &fig)?;
        for (k, kind) in KINDS.iter().enumerate() {
            let ch = cdf_chart(
                &format!("Fig. 7: TTLB, {kind}, {c} circuits"),
                "time to last byte (s)",
                ts,
                out,
                (c, k),
                |x| &x.ttlb_s,
                None,
            );
            o.svg(&format!("fig7_ttlb_{kind}_{c}.svg"), &ch)?;
        }
    }
    let mut ch = Chart::new("Fig. 7: end-to-end propagation RTT of the circuits")
        .x_label("RTT client → exit → client (s)")
        .y_label("CDF")
        .y_range(0.0, 1.0);
    for (i, &c) in plan.dumbbell_circuits.iter().enumerate() {
        // One sample per circuit: the name says n already.
        let rows = figs::cdf_from_zero(cdf_rows(&out.e2e_rtts(c, None)));
        ch.push_series(Series::step(format!("{c} circuits"), rows).color(palette_color(i)));
    }
    o.svg("fig7_e2e_rtt.svg", &ch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_rows_thin_and_end_at_one() {
        let xs: Vec<f64> = (0..2500).map(|i| i as f64).collect();
        let r = cdf_rows(&xs);
        assert!(r.len() <= CDF_POINTS + 1);
        assert_eq!(r.last(), Some(&(2499.0, 1.0)));
        assert!(r.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        let r = cdf_rows(&[2.0, 1.0, f64::NAN]);
        assert_eq!(r, vec![(1.0, 0.5), (2.0, 1.0)]);
        assert!(cdf_rows(&[]).is_empty());
    }
}
