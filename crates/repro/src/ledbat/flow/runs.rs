//! The simulator runs of `ledbat-flow`: Fig. 2, 4, 5 and 6 and the
//! latecomers, each a sweep of independent runs on the dumbbell of
//! [`super::net`], summarised into the rows of [`super::results`].

use super::net::{cc, simulate, tcp_ns2, FlowDef, Path, RunResult, RunSpec};
use super::profile::{fig4_variants, PAPER_SETUP, PROFILES};
use super::results::*;
use super::{Params, LATE_VARIANTS, LOW_PRIORITY};
use hopwise_experiment::plural;
use hopwise_experiment::stats::{mean, mean_sd, quantile};
use hopwise_experiment::Ctx;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;

/// Start times are jittered uniformly below this (Fig. 4 and 5, latecomers,
/// Fig. 6's jittered repeat).
pub(super) const JITTER: Dur = Dur::from_millis(100);

/// Runs every figure of `p`.
pub(super) fn run(p: &Params, ctx: &Ctx<'_, Results>) -> anyhow::Result<Results> {
    let (fig2, fig2_traces) = fig2(p, ctx);
    let (fig4, fig4_variants) = fig4(p, ctx);
    let (fig5, fig5_long, fig5_regions) = fig5(p, ctx);
    let (fig6, fig6_jittered, fig6_12) = fig6(p, ctx);
    let (late_rows, late) = latecomer(p, ctx, Path::FIG4, p.late_flows, "1 Mbit/s");
    let latecomer_10mbit = if p.late_10m {
        latecomer(p, ctx, Path::FIG2, 4, "10 Mbit/s").0
    } else {
        Vec::new()
    };
    let fig4_paper_setup = paper_setup_rows(&fig4_variants);
    Ok(Results {
        setup: setup(p),
        fig2,
        fig4,
        fig4_variants,
        fig4_paper_setup,
        fig5,
        fig5_regions,
        fig5_long,
        fig6,
        fig6_jittered,
        latecomer: late_rows,
        latecomer_10mbit,
        traces: Traces {
            fig2: fig2_traces,
            fig6_12,
            late,
        },
    })
}

fn setup(p: &Params) -> Setup {
    Setup {
        topology: "dumbbell h_i - r1 - r2 - d_i; access 1 Gbit/s 1 ms; bottleneck drop-tail 100 packets, both directions; base RTT 50 ms; 1500 B packets",
        tcp: "NewReno without SACK (ns-2 Agent/TCP/Newreno and TCPSink have none; RFC 6582 recovery, the retransmission timer re-armed only on the first partial ACK: the Impatient variant, ns-2's default); timestamps; receivers ACK every segment (ns-2 TCPSink); initial window 2 (ns-2 windowInit_); min RTO 200 ms, RTO >= SRTT + 200 ms",
        fig4_seeds: p.fig4_seeds,
        fig4_duration_s: p.fig4_secs,
        fig5_seeds: p.fig5_seeds,
        fig6_duration_s: p.fig6_secs,
        start_jitter_ms: JITTER.as_millis(),
        variants: fig4_variants()
            .iter()
            .map(|v| VariantInfo {
                name: v.name,
                what: v.what,
            })
            .collect(),
        profiles: PROFILES.to_vec(),
    }
}

/// Fig. 4 under the paper-setup profile: each protocol's rows from the
/// variant that runs its constants.
fn paper_setup_rows(variants: &[Fig4VariantRow]) -> Vec<Fig4VariantRow> {
    LOW_PRIORITY
        .iter()
        .filter_map(|&p| PAPER_SETUP.variant(p).map(|v| (p, v)))
        .flat_map(|(p, v)| {
            variants
                .iter()
                .filter(move |r| r.variant == v && r.row.protocol == p)
                .cloned()
        })
        .collect()
}

fn spec(
    name: impl Into<String>,
    path: Path,
    flows: Vec<FlowDef>,
    secs: u64,
    seed: u64,
    jitter: Dur,
    tcp: TcpConfig,
) -> RunSpec {
    RunSpec {
        name: name.into(),
        path,
        flows,
        duration: Dur::from_secs(secs),
        seed,
        jitter,
        tcp,
        warmup: Dur::ZERO,
        trace: None,
    }
}

fn ledbat_target(ms: f64) -> CcConfig {
    let t = format!("{}us", (ms * 1000.0).round() as u64);
    cc("ledbat", &[("target", t.as_str())])
}

/// Mean and sample standard deviation of the finite values.
fn finite_mean_sd(xs: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    mean_sd(&v)
}

/// Coefficient of variation of the finite values.
fn cv(xs: &[f64]) -> f64 {
    let (m, sd) = finite_mean_sd(xs);
    if m > 0.0 {
        sd / m
    } else {
        f64::NAN
    }
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    (quantile(xs, 0.0), quantile(xs, 1.0))
}

/// Fig. 2 pairs: (kind, first, second).
pub(super) fn fig2_pairs() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for p in ["vegas", "lp", "nice", "ledbat"] {
        v.push(("inter", "newreno", p));
    }
    for p in ["vegas", "lp", "nice", "ledbat"] {
        v.push(("intra", p, p));
    }
    v
}

fn fig2(p: &Params, ctx: &Ctx<'_, Results>) -> (Vec<Fig2Row>, Vec<RunResult>) {
    let pairs = fig2_pairs();
    ctx.progress
        .note("Fig. 2: cwnd of two flows on 10 Mbit/s, 50 ms, 100 packets");
    ctx.progress.start("Fig. 2", pairs.len() as u64);
    let traces = ctx.par_map(pairs.clone(), |(kind, a, b)| {
        let flows = vec![FlowDef::new(a, cc(a, &[])), FlowDef::new(b, cc(b, &[]))];
        let mut s = spec(
            format!("fig2-{kind}-{a}-{b}"),
            Path::FIG2,
            flows,
            p.fig2_secs,
            1,
            Dur::ZERO,
            tcp_ns2(),
        );
        s.trace = Some(Dur::from_millis(100));
        simulate(&s)
    });
    ctx.progress.finish();
    let rows = pairs
        .iter()
        .zip(&traces)
        .map(|(&(kind, a, b), r)| {
            let half = r.times.len() / 2;
            Fig2Row {
                kind: kind.into(),
                flows: [a.into(), b.into()],
                second_share: r.share(1),
                jain: r.jain(),
                utilization: r.utilization,
                mean_queue_pkts: r.mean_queue_pkts,
                cwnd_cv: [cv(&r.cwnd_pkts[0][half..]), cv(&r.cwnd_pkts[1][half..])],
                cwnd_mean_pkts: [
                    finite_mean_sd(&r.cwnd_pkts[0][half..]).0,
                    finite_mean_sd(&r.cwnd_pkts[1][half..]).0,
                ],
            }
        })
        .collect();
    (rows, traces)
}

fn fig4_flows(protocol: &str, n: usize, params: &[(&str, &str)]) -> Vec<FlowDef> {
    let mut flows = vec![FlowDef::new("newreno0", cc("newreno", &[]))];
    for i in 0..n {
        let (name, cfg) = if protocol == "newreno" {
            (format!("newreno{}", i + 1), cc("newreno", &[]))
        } else {
            (format!("{protocol}{}", i + 1), cc(protocol, params))
        };
        flows.push(FlowDef::new(name, cfg));
    }
    flows
}

fn fig4_row(protocol: &str, n: usize, runs: &[RunResult]) -> Fig4Row {
    let shares: Vec<f64> = runs.iter().map(|r| r.share(0)).collect();
    let utils: Vec<f64> = runs.iter().map(|r| r.utilization).collect();
    let losses: Vec<f64> = runs.iter().map(|r| r.loss_rate).collect();
    let steady: Vec<f64> = runs.iter().map(|r| r.steady_loss_rate).collect();
    let queues: Vec<f64> = runs.iter().map(|r| r.mean_queue_pkts).collect();
    let (smin, smax) = min_max(&shares);
    let (lmin, lmax) = min_max(&losses);
    let (m, sd) = mean_sd(&shares);
    Fig4Row {
        protocol: protocol.into(),
        n,
        tcp_share: m,
        tcp_share_min: smin,
        tcp_share_max: smax,
        tcp_share_sd: sd,
        fair_share: 1.0 / (n as f64 + 1.0),
        utilization: mean(&utils),
        utilization_min: min_max(&utils).0,
        loss_rate: mean(&losses),
        loss_rate_min: lmin,
        loss_rate_max: lmax,
        steady_loss_rate: mean(&steady),
        mean_queue_pkts: mean(&queues),
        seeds: runs.len() as u32,
        per_seed: Fig4Seeds {
            tcp_share: shares,
            loss_rate: losses,
            steady_loss_rate: steady,
        },
    }
}

fn fig4(p: &Params, ctx: &Ctx<'_, Results>) -> (Vec<Fig4Row>, Vec<Fig4VariantRow>) {
    // (setting index or None for the main runs, protocol, n, seed)
    let mut items: Vec<(Option<usize>, &'static str, usize, u64)> = Vec::new();
    let mut protos: Vec<&'static str> = p.fig4_protocols.clone();
    protos.push("newreno");
    for &proto in &protos {
        for &n in &p.fig4_ns {
            for seed in 1..=p.fig4_seeds as u64 {
                items.push((None, proto, n, seed));
            }
        }
    }
    let settings = fig4_variants();
    for (si, s) in settings.iter().enumerate() {
        for &proto in s.protocols.iter().filter(|x| p.fig4_protocols.contains(x)) {
            for &n in &p.fig4_variant_ns {
                for seed in 1..=p.fig4_seeds as u64 {
                    items.push((Some(si), proto, n, seed));
                }
            }
        }
    }
    ctx.progress.note(&format!(
        "Fig. 4: 1 NewReno + N low-priority flows, 1 Mbit/s, {} s, {} ({})",
        p.fig4_secs,
        plural(p.fig4_seeds as usize, "seed"),
        plural(items.len(), "run"),
    ));
    ctx.progress.start("Fig. 4", items.len() as u64);
    let results = ctx.par_map(items.clone(), |(si, proto, n, seed)| {
        let (tcp, params) = match si {
            None => (tcp_ns2(), Vec::new()),
            Some(i) => (settings[i].tcp.clone(), (settings[i].params)(proto)),
        };
        let s = spec(
            format!("fig4-{proto}-{n}-{seed}"),
            Path::FIG4,
            fig4_flows(proto, n, &params),
            p.fig4_secs,
            seed,
            JITTER,
            tcp,
        );
        simulate(&s)
    });
    ctx.progress.finish();
    // Group consecutive items with the same (setting, protocol, n).
    let mut rows = Vec::new();
    let mut variants = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let (si, proto, n, _) = items[i];
        let mut j = i;
        while j < items.len() && items[j].0 == si && items[j].1 == proto && items[j].2 == n {
            j += 1;
        }
        let row = fig4_row(proto, n, &results[i..j]);
        match si {
            None => rows.push(row),
            Some(k) => variants.push(Fig4VariantRow {
                variant: settings[k].name.into(),
                row,
            }),
        }
        i = j;
    }
    (rows, variants)
}

fn fig5(p: &Params, ctx: &Ctx<'_, Results>) -> (Vec<Fig5Row>, Vec<Fig5LongRow>, Vec<Region>) {
    let buf_ms = Path::FIG4.buffer_delay_ms();
    let mut items: Vec<(bool, f64, u64)> = Vec::new();
    for &rel in &p.fig5_rel {
        for seed in 1..=p.fig5_seeds as u64 {
            items.push((false, rel, seed));
        }
    }
    for &rel in &p.fig5_long_rel {
        items.push((true, rel, 1));
    }
    ctx.progress.note(&format!(
        "Fig. 5: NewReno against LEDBAT, target {:.0}–{:.0} ms, {}; {} of {} s",
        p.fig5_rel.first().copied().unwrap_or(0.0) * buf_ms,
        p.fig5_rel.last().copied().unwrap_or(0.0) * buf_ms,
        plural(p.fig5_seeds as usize, "seed"),
        plural(p.fig5_long_rel.len(), "longer run"),
        p.fig5_long_secs,
    ));
    ctx.progress.start("Fig. 5", items.len() as u64);
    let results = ctx.par_map(items.clone(), |(long, rel, seed)| {
        let flows = vec![
            FlowDef::new("newreno", cc("newreno", &[])),
            FlowDef::new("ledbat", ledbat_target(rel * buf_ms)),
        ];
        let secs = if long { p.fig5_long_secs } else { p.fig5_secs };
        let mut s = spec(
            format!("fig5-{rel}-{seed}"),
            Path::FIG4,
            flows,
            secs,
            seed,
            JITTER,
            tcp_ns2(),
        );
        if long {
            s.trace = Some(Dur::SECOND);
        }
        simulate(&s)
    });
    ctx.progress.finish();
    let mut rows = Vec::new();
    let mut long = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let (is_long, rel, _) = items[i];
        let mut j = i;
        while j < items.len() && items[j].0 == is_long && items[j].1 == rel {
            j += 1;
        }
        let rs = &results[i..j];
        if is_long {
            let r = &rs[0];
            let end = p.fig5_long_secs as f64;
            long.push(Fig5LongRow {
                target_ms: rel * buf_ms,
                target_pct: rel * 100.0,
                duration_s: end,
                tcp_share: r.share(0),
                tcp_share_last_120s: r.share_between(0, end - 120.0, end),
            });
        } else {
            let shares: Vec<f64> = rs.iter().map(|r| r.share(0)).collect();
            let utils: Vec<f64> = rs.iter().map(|r| r.utilization).collect();
            let (smin, smax) = min_max(&shares);
            rows.push(Fig5Row {
                target_ms: rel * buf_ms,
                target_pct: rel * 100.0,
                tcp_share: mean(&shares),
                tcp_share_min: smin,
                tcp_share_max: smax,
                utilization: mean(&utils),
                loss_rate: mean(&rs.iter().map(|r| r.loss_rate).collect::<Vec<_>>()),
                mean_queue_norm: mean(&rs.iter().map(|r| r.mean_queue_pkts).collect::<Vec<_>>())
                    / Path::FIG4.buffer_pkts as f64,
                tcp_shares: shares,
                utilizations: utils,
            });
        }
        i = j;
    }
    let regions = fig5_regions(&rows);
    (rows, long, regions)
}

/// The four regions of Fig. 5, from our measurements. I ends where the
/// target reaches five packets' worth of queueing (5 %, as the paper's
/// "very small" targets); II (low priority) lasts while NewReno's share stays
/// within 0.05 of its plateau over 10–50 %; III runs from there to 100 %,
/// where the target reaches the buffer; IV is beyond.
pub fn fig5_regions(rows: &[Fig5Row]) -> Vec<Region> {
    let plateau = rows
        .iter()
        .filter(|r| (10.0..=50.0).contains(&r.target_pct))
        .map(|r| r.tcp_share)
        .fold(f64::NAN, f64::max);
    let erosion = rows
        .iter()
        .filter(|r| r.target_pct > 50.0 && r.target_pct <= 100.0)
        .find(|r| r.tcp_share < plateau - 0.05)
        .map_or(100.0, |r| r.target_pct);
    let top = rows.last().map_or(150.0, |r| r.target_pct.max(150.0));
    vec![
        Region {
            name: "I: very small".into(),
            from_pct: 0.0,
            to_pct: 5.0,
            what: "target of a few packets' queueing (≤ 5 pkts)".into(),
        },
        Region {
            name: "II: low priority".into(),
            from_pct: 5.0,
            to_pct: erosion,
            what: "LEDBAT yields (at MIN_CWND for small targets)".into(),
        },
        Region {
            name: "III: erosion".into(),
            from_pct: erosion,
            to_pct: 100.0,
            what: "LEDBAT takes bandwidth from NewReno".into(),
        },
        Region {
            name: "IV: loss-based".into(),
            from_pct: 100.0,
            to_pct: top,
            what: "target beyond the buffer: LEDBAT competes like NewReno".into(),
        },
    ]
}

type Fig6Out = (Vec<Fig6Row>, Vec<Fig6JitterRow>, Option<RunResult>);

fn fig6(p: &Params, ctx: &Ctx<'_, Results>) -> Fig6Out {
    let mut items: Vec<(f64, u64)> = p.fig6_ratios.iter().map(|&r| (r, 0)).collect();
    for &r in &p.fig6_ratios {
        for seed in 1..=p.fig6_jitter_seeds as u64 {
            items.push((r, seed));
        }
    }
    ctx.progress.note(&format!(
        "Fig. 6: two LEDBAT flows, tau2 = 100 ms, tau1/tau2 = {:.2}–{:.2}, {} s",
        p.fig6_ratios.first().copied().unwrap_or(1.0),
        p.fig6_ratios.last().copied().unwrap_or(1.0),
        p.fig6_secs
    ));
    ctx.progress.start("Fig. 6", items.len() as u64);
    let results = ctx.par_map(items.clone(), |(ratio, seed)| {
        let flows = vec![
            FlowDef::new("tau1", ledbat_target(100.0 * ratio)),
            FlowDef::new("tau2", ledbat_target(100.0)),
        ];
        // Seed 0: simultaneous starts (the paper's setting); others jittered.
        let (s_seed, jitter) = if seed == 0 {
            (1, Dur::ZERO)
        } else {
            (seed, JITTER)
        };
        let mut s = spec(
            format!("fig6-{ratio}-{seed}"),
            Path::FIG4,
            flows,
            p.fig6_secs,
            s_seed,
            jitter,
            tcp_ns2(),
        );
        s.trace = Some(Dur::from_millis(200));
        simulate(&s)
    });
    ctx.progress.finish();
    let end = p.fig6_secs as f64;
    let mut rows = Vec::new();
    let mut jittered = Vec::new();
    let mut trace_12 = None;
    let nr = p.fig6_ratios.len();
    for (k, &ratio) in p.fig6_ratios.iter().enumerate() {
        let r = &results[k];
        rows.push(Fig6Row {
            target_ratio: ratio,
            small_target_share: r.share(1),
            small_target_share_end: r.share_between(1, end - 20.0, end),
            utilization: r.utilization,
            mean_queue_norm: r.mean_queue_pkts / Path::FIG4.buffer_pkts as f64,
            loss_rate: r.loss_rate,
        });
        if (ratio - 1.2).abs() < 1e-9 {
            trace_12 = Some(r.clone());
        }
        if p.fig6_jitter_seeds > 0 {
            let s0 = nr + k * p.fig6_jitter_seeds as usize;
            let rs = &results[s0..s0 + p.fig6_jitter_seeds as usize];
            let shares: Vec<f64> = rs.iter().map(|r| r.share(1)).collect();
            let ends: Vec<f64> = rs
                .iter()
                .map(|r| r.share_between(1, end - 20.0, end))
                .collect();
            let (lo, hi) = min_max(&shares);
            jittered.push(Fig6JitterRow {
                target_ratio: ratio,
                small_target_share: mean(&shares),
                small_target_share_min: lo,
                small_target_share_max: hi,
                small_target_share_end: mean(&ends),
                seeds: p.fig6_jitter_seeds,
            });
        }
    }
    (rows, jittered, trace_12)
}

/// The latecomer runs on `path` with `flows` LEDBAT flows: a row per
/// variant of [`LATE_VARIANTS`], and each variant's seed-1 trace.
fn latecomer(
    p: &Params,
    ctx: &Ctx<'_, Results>,
    path: Path,
    flows: usize,
    label: &str,
) -> (Vec<LateRow>, Vec<RunResult>) {
    let mut items = Vec::new();
    for (vi, _) in LATE_VARIANTS.iter().enumerate() {
        for seed in 1..=p.late_seeds as u64 {
            items.push((vi, seed));
        }
    }
    ctx.progress.note(&format!(
        "Latecomers ({label}): {flows} LEDBAT flows starting {} s apart, {} s, {}",
        p.late_gap_secs,
        p.late_secs,
        plural(p.late_seeds as usize, "seed")
    ));
    ctx.progress.start("Latecomers", items.len() as u64);
    let warm = p.late_gap_secs * (flows as u64 - 1);
    let results = ctx.par_map(items.clone(), |(vi, seed)| {
        let name = LATE_VARIANTS[vi].1;
        let fl = (0..flows)
            .map(|i| {
                FlowDef::new(format!("{}-{i}", LATE_VARIANTS[vi].0), cc(name, &[]))
                    .at(Dur::from_secs(p.late_gap_secs * i as u64))
            })
            .collect();
        let mut s = spec(
            format!("late-{name}-{seed}"),
            path,
            fl,
            p.late_secs,
            seed,
            JITTER,
            tcp_ns2(),
        );
        s.warmup = Dur::from_secs(warm);
        if seed == 1 {
            s.trace = Some(Dur::from_millis(500));
        }
        simulate(&s)
    });
    ctx.progress.finish();
    let ms_per_pkt = 1500.0 * 8.0 / path.rate_kbps as f64;
    let mut rows = Vec::new();
    let mut traces = Vec::new();
    for (vi, (vname, _)) in LATE_VARIANTS.iter().enumerate() {
        let k0 = vi * p.late_seeds as usize;
        let rs = &results[k0..k0 + p.late_seeds as usize];
        let jains: Vec<f64> = rs.iter().map(|r| r.jain()).collect();
        let (lo, hi) = min_max(&jains);
        let shares = (0..flows)
            .map(|i| mean(&rs.iter().map(|r| r.share(i)).collect::<Vec<_>>()))
            .collect();
        rows.push(LateRow {
            variant: (*vname).into(),
            jain: mean(&jains),
            jain_min: lo,
            jain_max: hi,
            shares,
            utilization: mean(&rs.iter().map(|r| r.utilization).collect::<Vec<_>>()),
            mean_queue_ms: mean(&rs.iter().map(|r| r.mean_queue_pkts).collect::<Vec<_>>())
                * ms_per_pkt,
            seeds: p.late_seeds,
            jains,
        });
        traces.push(rs[0].clone());
    }
    (rows, traces)
}
