//! Reproduction `ledbat-flow`: seed 003, C. Testa and D. Rossi,
//! "Delay-based congestion control: Flow vs. BitTorrent swarm
//! perspectives", Computer Networks 62 (2014), §3–4, the flow perspective.
//!
//! * Fig. 2: cwnd over time of two backlogged flows on 10 Mbit/s, 50 ms,
//!   100 packets, NewReno against Vegas, TCP-LP, TCP-NICE and LEDBAT, and
//!   two flows of each.
//! * Fig. 4: one NewReno flow and N = 1..10 low-priority flows on 1 Mbit/s,
//!   50 ms, 100 packets, 120 s; NewReno's share, utilisation, loss rate;
//!   reference: N + 1 NewReno flows.
//! * Fig. 5: NewReno against LEDBAT with the target τ from 2 % to 200 % of
//!   the buffer's queueing delay (1.2 s); the four regions.
//! * Fig. 6: two LEDBAT flows, τ2 = 100 ms, τ1/τ2 from 1 to 2.5.
//! * Beyond the paper: the latecomer problem of RFC 6817 LEDBAT and µTP,
//!   and how LEDBAT++'s periodic slowdowns fix it.
//!
//! Every run uses the ns-2-like TCP of [`net::tcp_ns2`] (per-segment ACKs,
//! initial window 2, no SACK) unless a sensitivity variant says otherwise;
//! the results and their differences from the paper are discussed in
//! `docs/reproductions/ledbat-flow.md`.

mod net;
mod plots;

pub use net::{
    cc, simulate, tcp_linux, tcp_ns2, FlowDef, Path, RunResult, RunSpec, SEG, STEADY_FROM,
};

use crate::plural;
use crate::{
    mean_sd, par_map, quantile, write_csv, write_summary, Claim, Experiment, Outcome, Progress,
    ReproOpts,
};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use serde::Serialize;
use std::path::Path as FsPath;

pub fn experiment() -> Experiment {
    Experiment {
        name: "ledbat-flow",
        about: "Testa and Rossi 2014 (seed paper 003) §3-4: LEDBAT, Vegas, LP and NICE against NewReno; LEDBAT target regions; latecomers",
        wall: "quick about 3 s, full about 40 s",
        run,
    }
}

/// The low-priority protocols of Fig. 4, in the paper's order of priority
/// (lowest first).
pub const LOW_PRIORITY: [&str; 4] = ["ledbat", "nice", "vegas", "lp"];

/// Everything a run of the reproduction can vary. [`Params::full`] and
/// [`Params::quick`] are the two built-in sizes; tests shrink them further.
#[derive(Clone, Debug)]
pub struct Params {
    /// Fig. 2: simulated seconds per pair.
    pub fig2_secs: u64,
    /// Fig. 4: numbers of low-priority flows.
    pub fig4_ns: Vec<usize>,
    /// Fig. 4: protocols (from [`LOW_PRIORITY`]); the NewReno reference is always run.
    pub fig4_protocols: Vec<&'static str>,
    pub fig4_secs: u64,
    pub fig4_seeds: u32,
    /// Fig. 4 sensitivity variants: which N (empty: none).
    pub fig4_variant_ns: Vec<usize>,
    /// Fig. 5: targets as fractions of the buffer's queueing delay.
    pub fig5_rel: Vec<f64>,
    pub fig5_secs: u64,
    pub fig5_seeds: u32,
    /// Fig. 5 long runs: targets (fractions) and duration.
    pub fig5_long_rel: Vec<f64>,
    pub fig5_long_secs: u64,
    /// Fig. 6: τ1/τ2 ratios.
    pub fig6_ratios: Vec<f64>,
    pub fig6_secs: u64,
    /// Fig. 6 with jittered starts: seeds (0: skip).
    pub fig6_jitter_seeds: u32,
    /// Latecomers: flows, gap between starts, duration, seeds.
    pub late_flows: usize,
    pub late_gap_secs: u64,
    pub late_secs: u64,
    pub late_seeds: u32,
    /// Also run the latecomer scenario on the 10 Mbit/s path with 4 flows.
    pub late_10m: bool,
}

impl Params {
    /// The full reproduction.
    pub fn full() -> Self {
        Params {
            fig2_secs: 100,
            fig4_ns: (1..=10).collect(),
            fig4_protocols: LOW_PRIORITY.to_vec(),
            fig4_secs: 120,
            fig4_seeds: 20,
            fig4_variant_ns: vec![1, 2, 5, 10],
            fig5_rel: vec![
                0.02, 0.05, 0.10, 0.20, 0.30, 0.40, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85,
                0.90, 0.95, 1.00, 1.05, 1.10, 1.20, 1.30, 1.50, 1.75, 2.00,
            ],
            fig5_secs: 120,
            fig5_seeds: 10,
            fig5_long_rel: vec![0.65, 0.80, 0.90, 1.00, 1.50],
            fig5_long_secs: 590,
            fig6_ratios: vec![1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0, 2.25, 2.5],
            fig6_secs: 180,
            fig6_jitter_seeds: 10,
            late_flows: 3,
            late_gap_secs: 30,
            late_secs: 300,
            late_seeds: 10,
            late_10m: true,
        }
    }

    /// `--quick`: fewer points and seeds, same scenarios.
    pub fn quick() -> Self {
        Params {
            fig2_secs: 60,
            fig4_ns: vec![1, 2, 5, 10],
            fig4_seeds: 4,
            fig4_variant_ns: vec![1, 10],
            fig5_rel: vec![
                0.02, 0.10, 0.30, 0.50, 0.65, 0.80, 0.90, 1.00, 1.20, 1.50, 2.00,
            ],
            fig5_seeds: 2,
            fig5_long_rel: vec![1.00],
            fig5_long_secs: 300,
            fig6_ratios: vec![1.0, 1.1, 1.2, 1.5, 2.0, 2.5],
            fig6_jitter_seeds: 3,
            late_seeds: 3,
            late_10m: false,
            ..Params::full()
        }
    }

    /// The size `opts` asks for, with `--seeds` applied to every seeded sweep.
    pub fn for_opts(opts: &ReproOpts) -> Self {
        let mut p = if opts.quick {
            Params::quick()
        } else {
            Params::full()
        };
        if opts.seeds.is_some() {
            p.fig4_seeds = opts.seeds_or(p.fig4_seeds, p.fig4_seeds);
            p.fig5_seeds = opts.seeds_or(p.fig5_seeds, p.fig5_seeds);
            p.fig6_jitter_seeds = opts.seeds_or(p.fig6_jitter_seeds, p.fig6_jitter_seeds);
            p.late_seeds = opts.seeds_or(p.late_seeds, p.late_seeds);
        }
        p
    }
}

fn run(opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    run_with(opts, &Params::for_opts(opts), progress)
}

// ---------------------------------------------------------------- results

/// Fig. 2: one pair of flows.
#[derive(Clone, Debug, Serialize)]
pub struct Fig2Row {
    /// "inter" (NewReno against X) or "intra" (two X).
    pub kind: String,
    pub flows: [String; 2],
    /// Share of the second flow in the total goodput.
    pub second_share: f64,
    pub jain: f64,
    pub utilization: f64,
    pub mean_queue_pkts: f64,
    /// Coefficient of variation of each flow's cwnd over the second half of the run.
    pub cwnd_cv: [f64; 2],
    /// Each flow's mean cwnd over the second half, packets (a CoV is only
    /// telling when this is well above 0).
    pub cwnd_mean_pkts: [f64; 2],
}

/// Fig. 4: one protocol at one N, over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Fig4Row {
    /// The low-priority protocol, or "newreno" for the N + 1 NewReno reference.
    pub protocol: String,
    pub n: usize,
    /// Mean share of the one NewReno flow (of flow 0 for the reference).
    pub tcp_share: f64,
    pub tcp_share_min: f64,
    pub tcp_share_max: f64,
    pub tcp_share_sd: f64,
    /// 1/(N + 1), the fair share.
    pub fair_share: f64,
    pub utilization: f64,
    pub utilization_min: f64,
    pub loss_rate: f64,
    pub loss_rate_min: f64,
    pub loss_rate_max: f64,
    /// Loss rate from 30 s on (after the start-up transient).
    pub steady_loss_rate: f64,
    pub mean_queue_pkts: f64,
    pub seeds: u32,
}

/// Fig. 4 sensitivity: the same as [`Fig4Row`] under another setting.
#[derive(Clone, Debug, Serialize)]
pub struct Fig4VariantRow {
    pub variant: String,
    #[serde(flatten)]
    pub row: Fig4Row,
}

/// Fig. 5: one target.
#[derive(Clone, Debug, Serialize)]
pub struct Fig5Row {
    pub target_ms: f64,
    /// τ as a percentage of the buffer's queueing delay (1.2 s).
    pub target_pct: f64,
    pub tcp_share: f64,
    pub tcp_share_min: f64,
    pub tcp_share_max: f64,
    pub utilization: f64,
    pub loss_rate: f64,
    /// Mean queue over the buffer size.
    pub mean_queue_norm: f64,
}

/// Fig. 5: a region of the target axis.
#[derive(Clone, Debug, Serialize)]
pub struct Region {
    pub name: String,
    pub from_pct: f64,
    pub to_pct: f64,
    pub what: String,
}

/// Fig. 5: a long run at one target.
#[derive(Clone, Debug, Serialize)]
pub struct Fig5LongRow {
    pub target_ms: f64,
    pub target_pct: f64,
    pub duration_s: f64,
    pub tcp_share: f64,
    /// NewReno's share over the last 120 s.
    pub tcp_share_last_120s: f64,
}

/// Fig. 6: one target ratio.
#[derive(Clone, Debug, Serialize)]
pub struct Fig6Row {
    pub target_ratio: f64,
    /// Share of the τ2 = 100 ms flow over the whole run.
    pub small_target_share: f64,
    /// Its share over the last 20 s.
    pub small_target_share_end: f64,
    pub utilization: f64,
    pub mean_queue_norm: f64,
    pub loss_rate: f64,
}

/// Fig. 6 with start times jittered by up to 100 ms, over seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Fig6JitterRow {
    pub target_ratio: f64,
    pub small_target_share: f64,
    pub small_target_share_min: f64,
    pub small_target_share_max: f64,
    pub small_target_share_end: f64,
    pub seeds: u32,
}

/// Latecomers: one LEDBAT variant.
#[derive(Clone, Debug, Serialize)]
pub struct LateRow {
    pub variant: String,
    /// Mean Jain index over seeds, while all flows are active.
    pub jain: f64,
    pub jain_min: f64,
    pub jain_max: f64,
    /// Mean share of each flow (in order of arrival) while all are active.
    pub shares: Vec<f64>,
    pub utilization: f64,
    pub mean_queue_ms: f64,
    pub seeds: u32,
}

/// `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct LedbatFlowSummary {
    pub paper: &'static str,
    pub setup: Setup,
    pub fig2: Vec<Fig2Row>,
    pub fig4: Vec<Fig4Row>,
    pub fig4_variants: Vec<Fig4VariantRow>,
    pub fig5: Vec<Fig5Row>,
    pub fig5_regions: Vec<Region>,
    pub fig5_long: Vec<Fig5LongRow>,
    pub fig6: Vec<Fig6Row>,
    pub fig6_jittered: Vec<Fig6JitterRow>,
    pub latecomer: Vec<LateRow>,
    pub latecomer_10mbit: Vec<LateRow>,
    pub claims: Vec<Claim>,
}

/// The settings every run shares.
#[derive(Clone, Debug, Serialize)]
pub struct Setup {
    pub topology: &'static str,
    pub tcp: &'static str,
    pub fig4_seeds: u32,
    pub fig4_duration_s: u64,
    pub fig5_seeds: u32,
    pub fig6_duration_s: u64,
    pub start_jitter_ms: u64,
    pub variants: Vec<VariantInfo>,
}

/// A Fig. 4 sensitivity variant.
#[derive(Clone, Debug, Serialize)]
pub struct VariantInfo {
    pub name: &'static str,
    pub what: &'static str,
}

// ---------------------------------------------------------------- runs

const JITTER: Dur = Dur::from_millis(100);

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

/// A window in packets, whole from 10 up and with two significant digits
/// below (`37`, `2.4`, `0.021`); `n/a` for no samples.
fn pkts(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x >= 10.0 || x <= 0.0 {
        return format!("{x:.0}");
    }
    let decimals = (1.0 - x.log10().floor()).max(0.0) as usize;
    format!("{x:.decimals$}")
}

/// Mean and sample standard deviation of the finite values.
fn finite_mean_sd(xs: &[f64]) -> (f64, f64) {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    mean_sd(&v)
}

/// Mean of the finite values.
fn finite_mean(xs: &[f64]) -> f64 {
    finite_mean_sd(xs).0
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

fn mean(xs: &[f64]) -> f64 {
    mean_sd(xs).0
}

/// Fig. 2 pairs: (kind, first, second).
fn fig2_pairs() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut v = Vec::new();
    for p in ["vegas", "lp", "nice", "ledbat"] {
        v.push(("inter", "newreno", p));
    }
    for p in ["vegas", "lp", "nice", "ledbat"] {
        v.push(("intra", p, p));
    }
    v
}

struct Fig2Out {
    rows: Vec<Fig2Row>,
    traces: Vec<RunResult>,
}

fn fig2(p: &Params, opts: &ReproOpts, progress: &dyn Progress) -> Fig2Out {
    let pairs = fig2_pairs();
    progress.note("Fig. 2: cwnd of two flows on 10 Mbit/s, 50 ms, 100 packets");
    progress.start("Fig. 2", pairs.len() as u64);
    let traces = par_map(pairs.clone(), opts.jobs, progress, |(kind, a, b)| {
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
    progress.finish();
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
                    finite_mean(&r.cwnd_pkts[0][half..]),
                    finite_mean(&r.cwnd_pkts[1][half..]),
                ],
            }
        })
        .collect();
    Fig2Out { rows, traces }
}

/// A Fig. 4 setting: TCP options and per-protocol controller overrides.
#[derive(Clone)]
struct Fig4Setting {
    name: &'static str,
    /// A short name for the figure (at most 24 characters, a bar's label).
    label: &'static str,
    what: &'static str,
    tcp: TcpConfig,
    /// Protocols this variant applies to (others are not rerun).
    protocols: Vec<&'static str>,
    params: fn(&str) -> Vec<(&'static str, &'static str)>,
}

fn no_params(_: &str) -> Vec<(&'static str, &'static str)> {
    Vec::new()
}

fn fig4_variants() -> Vec<Fig4Setting> {
    vec![
        Fig4Setting {
            name: "delayed-acks",
            label: "delayed ACKs",
            what: "receivers delay ACKs (RFC 5681, 40 ms timer); otherwise as the main runs",
            tcp: TcpConfig {
                delayed_ack: true,
                ..tcp_ns2()
            },
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "sack",
            label: "SACK",
            what: "SACK on every flow (ns-2's Agent/TCP/Newreno and TCPSink have none); otherwise as the main runs",
            tcp: TcpConfig {
                sack: true,
                ..tcp_ns2()
            },
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "linux-tcp",
            label: "our TCP defaults",
            what: "our TCP model's defaults: delayed ACKs, an initial window of 10 and SACK",
            tcp: tcp_linux(),
            protocols: LOW_PRIORITY.to_vec(),
            params: no_params,
        },
        Fig4Setting {
            name: "ledbat-min-cwnd-1",
            label: "MIN_CWND = 1",
            what: "LEDBAT with MIN_CWND = 1 segment (the floor of the authors' TCP-Linux LEDBAT) instead of RFC 6817's 2",
            tcp: tcp_ns2(),
            protocols: vec!["ledbat"],
            params: |_| vec![("min_cwnd", "1")],
        },
        Fig4Setting {
            name: "vegas-alpha1-beta3",
            label: "alpha, beta = 1, 3",
            what: "Vegas and NICE with alpha, beta = 1, 3 packets (ns-2 Agent/TCP/Vegas defaults, the Nice prototype) instead of Linux's 2, 4",
            tcp: tcp_ns2(),
            protocols: vec!["vegas", "nice"],
            params: |_| vec![("alpha", "1"), ("beta", "3")],
        },
        Fig4Setting {
            name: "lp-linux",
            label: "LP re-basing (Linux)",
            what: "TCP-LP with Linux tcp_lp.c's re-basing rule (rebase = true, calibrate = false): every ACK above the threshold reacts and restarts the delay range at [sowd, 2 sowd]; other differences from Linux's module remain (docs/congestion-control.md)",
            tcp: tcp_ns2(),
            protocols: vec!["lp"],
            params: |_| vec![("rebase", "true"), ("calibrate", "false")],
        },
        Fig4Setting {
            name: "paper-literal-lp-nice",
            label: "papers' literal rules",
            what: "TCP-LP with calibrate = false and TCP-NICE with delay = rtt (the papers' literal rules), delayed ACKs on so that the NICE RTT artefact can show",
            tcp: TcpConfig {
                delayed_ack: true,
                ..tcp_ns2()
            },
            protocols: vec!["lp", "nice"],
            params: |p| match p {
                "lp" => vec![("calibrate", "false")],
                "nice" => vec![("delay", "rtt")],
                _ => vec![],
            },
        },
    ]
}

/// The figure's name for the Fig. 4 setting `name`.
fn fig4_variant_label(name: &str) -> &str {
    fig4_variants()
        .into_iter()
        .find(|v| v.name == name)
        .map_or(name, |v| v.label)
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
        steady_loss_rate: mean(&runs.iter().map(|r| r.steady_loss_rate).collect::<Vec<_>>()),
        mean_queue_pkts: mean(&queues),
        seeds: runs.len() as u32,
    }
}

struct Fig4Out {
    rows: Vec<Fig4Row>,
    variants: Vec<Fig4VariantRow>,
}

fn fig4(p: &Params, opts: &ReproOpts, progress: &dyn Progress) -> Fig4Out {
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
    progress.note(&format!(
        "Fig. 4: 1 NewReno + N low-priority flows, 1 Mbit/s, {} s, {} ({})",
        p.fig4_secs,
        plural(p.fig4_seeds as usize, "seed"),
        plural(items.len(), "run"),
    ));
    progress.start("Fig. 4", items.len() as u64);
    let results = par_map(
        items.clone(),
        opts.jobs,
        progress,
        |(si, proto, n, seed)| {
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
        },
    );
    progress.finish();
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
    Fig4Out { rows, variants }
}

struct Fig5Out {
    rows: Vec<Fig5Row>,
    long: Vec<Fig5LongRow>,
    regions: Vec<Region>,
}

fn fig5(p: &Params, opts: &ReproOpts, progress: &dyn Progress) -> Fig5Out {
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
    progress.note(&format!(
        "Fig. 5: NewReno against LEDBAT, target {:.0}–{:.0} ms, {}; {} of {} s",
        p.fig5_rel.first().copied().unwrap_or(0.0) * buf_ms,
        p.fig5_rel.last().copied().unwrap_or(0.0) * buf_ms,
        plural(p.fig5_seeds as usize, "seed"),
        plural(p.fig5_long_rel.len(), "longer run"),
        p.fig5_long_secs,
    ));
    progress.start("Fig. 5", items.len() as u64);
    let results = par_map(items.clone(), opts.jobs, progress, |(long, rel, seed)| {
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
    progress.finish();
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
            let (smin, smax) = min_max(&shares);
            rows.push(Fig5Row {
                target_ms: rel * buf_ms,
                target_pct: rel * 100.0,
                tcp_share: mean(&shares),
                tcp_share_min: smin,
                tcp_share_max: smax,
                utilization: mean(&rs.iter().map(|r| r.utilization).collect::<Vec<_>>()),
                loss_rate: mean(&rs.iter().map(|r| r.loss_rate).collect::<Vec<_>>()),
                mean_queue_norm: mean(&rs.iter().map(|r| r.mean_queue_pkts).collect::<Vec<_>>())
                    / Path::FIG4.buffer_pkts as f64,
            });
        }
        i = j;
    }
    let regions = fig5_regions(&rows);
    Fig5Out {
        rows,
        long,
        regions,
    }
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

struct Fig6Out {
    rows: Vec<Fig6Row>,
    jittered: Vec<Fig6JitterRow>,
    trace_12: Option<RunResult>,
}

fn fig6(p: &Params, opts: &ReproOpts, progress: &dyn Progress) -> Fig6Out {
    let mut items: Vec<(f64, u64)> = p.fig6_ratios.iter().map(|&r| (r, 0)).collect();
    for &r in &p.fig6_ratios {
        for seed in 1..=p.fig6_jitter_seeds as u64 {
            items.push((r, seed));
        }
    }
    progress.note(&format!(
        "Fig. 6: two LEDBAT flows, tau2 = 100 ms, tau1/tau2 = {:.2}–{:.2}, {} s",
        p.fig6_ratios.first().copied().unwrap_or(1.0),
        p.fig6_ratios.last().copied().unwrap_or(1.0),
        p.fig6_secs
    ));
    progress.start("Fig. 6", items.len() as u64);
    let results = par_map(items.clone(), opts.jobs, progress, |(ratio, seed)| {
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
    progress.finish();
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
    Fig6Out {
        rows,
        jittered,
        trace_12,
    }
}

/// The LEDBAT variants compared in the latecomer runs.
pub const LATE_VARIANTS: [(&str, &str); 3] = [
    ("rfc6817", "ledbat"),
    ("utp", "ledbat-utp"),
    ("ledbat++", "ledbat++"),
];

struct LateOut {
    rows: Vec<LateRow>,
    /// Seed-1 trace of each variant.
    traces: Vec<RunResult>,
}

fn latecomer(
    p: &Params,
    opts: &ReproOpts,
    progress: &dyn Progress,
    path: Path,
    flows: usize,
    label: &str,
) -> LateOut {
    let mut items = Vec::new();
    for (vi, _) in LATE_VARIANTS.iter().enumerate() {
        for seed in 1..=p.late_seeds as u64 {
            items.push((vi, seed));
        }
    }
    progress.note(&format!(
        "Latecomers ({label}): {flows} LEDBAT flows starting {} s apart, {} s, {}",
        p.late_gap_secs,
        p.late_secs,
        plural(p.late_seeds as usize, "seed")
    ));
    progress.start("Latecomers", items.len() as u64);
    let warm = p.late_gap_secs * (flows as u64 - 1);
    let results = par_map(items.clone(), opts.jobs, progress, |(vi, seed)| {
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
    progress.finish();
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
        });
        traces.push(rs[0].clone());
    }
    LateOut { rows, traces }
}

// ---------------------------------------------------------------- claims

fn find4<'a>(rows: &'a [Fig4Row], proto: &str, n: usize) -> Option<&'a Fig4Row> {
    rows.iter().find(|r| r.protocol == proto && r.n == n)
}

fn fmt_share(r: Option<&Fig4Row>) -> String {
    r.map_or("n/a".into(), |r| {
        format!(
            "{:.3} (seeds {:.3}–{:.3})",
            r.tcp_share, r.tcp_share_min, r.tcp_share_max
        )
    })
}

fn claims(
    p: &Params,
    f2: &Fig2Out,
    f4: &Fig4Out,
    f5: &Fig5Out,
    f6: &Fig6Out,
    late: &LateOut,
) -> Vec<Claim> {
    let mut c = Vec::new();
    // ---- Fig. 2 (qualitative)
    let f2s: Vec<String> = f2
        .rows
        .iter()
        .map(|r| {
            format!(
                "{}+{}: 2nd share {:.2}, Jain {:.2}, cwnd mean {}/{} pkts, CoV {:.2}/{:.2}",
                r.flows[0],
                r.flows[1],
                r.second_share,
                r.jain,
                pkts(r.cwnd_mean_pkts[0]),
                pkts(r.cwnd_mean_pkts[1]),
                r.cwnd_cv[0],
                r.cwnd_cv[1]
            )
        })
        .collect();
    c.push(Claim::info(
        "Fig. 2",
        "Vegas, NICE and LEDBAT keep smooth windows, LP is saw-toothed and more aggressive; Vegas shares fairly with itself (10 Mbit/s, 100 packets; the CoV, sd/mean of the window over the second half, says little for a window near 0)",
        f2s.join("; "),
    ));

    // ---- Fig. 4
    let nmax = *p.fig4_ns.iter().max().unwrap_or(&10);
    let nmin = *p.fig4_ns.iter().min().unwrap_or(&1);
    let led = find4(&f4.rows, "ledbat", nmax);
    let nice = find4(&f4.rows, "nice", nmax);
    if p.fig4_protocols.contains(&"ledbat") {
        c.push(crate::legacy_claim(
            "Fig. 4",
            format!("NewReno keeps most of the link against {nmax} LEDBAT flows; criterion: share >= 0.7 (paper: about 0.9)"),
            format!("NewReno share {}", fmt_share(led)),
            led.is_some_and(|r| r.tcp_share >= 0.7),
        ));
    }
    if p.fig4_protocols.contains(&"nice") {
        c.push(crate::legacy_claim(
            "Fig. 4",
            format!("NewReno keeps most of the link against {nmax} NICE flows; criterion: share >= 0.5 (paper: about 0.7)"),
            format!("NewReno share {}", fmt_share(nice)),
            nice.is_some_and(|r| r.tcp_share >= 0.5),
        ));
    }
    // Well above the all-NewReno reference.
    let reference = find4(&f4.rows, "newreno", nmax);
    let mut above = true;
    let mut parts = Vec::new();
    for &proto in &p.fig4_protocols {
        if let Some(r) = find4(&f4.rows, proto, nmax) {
            // "Well above": at least twice the fair share and at least 0.2 more.
            let ok = r.tcp_share >= 2.0 * r.fair_share && r.tcp_share >= r.fair_share + 0.2;
            above &= ok;
            parts.push(format!("{proto} {:.3}", r.tcp_share));
        }
    }
    c.push(crate::legacy_claim(
        "Fig. 4",
        format!(
            "Against every low-priority protocol NewReno gets well above its fair share; at N = {nmax}, criterion: >= 2 x 1/(N+1) = {:.3} and >= 1/(N+1) + 0.2",
            1.0 / (nmax as f64 + 1.0)
        ),
        format!(
            "{}; measured reference (N+1 NewReno, flow 0): {}",
            parts.join(", "),
            fmt_share(reference)
        ),
        above,
    ));
    // Loss rate.
    let mut flat = true;
    let mut lparts = Vec::new();
    for proto in ["ledbat", "nice", "vegas"] {
        if !p.fig4_protocols.contains(&proto) {
            continue;
        }
        if let (Some(a), Some(b)) = (find4(&f4.rows, proto, nmin), find4(&f4.rows, proto, nmax)) {
            let ratio = b.loss_rate / a.loss_rate;
            flat &= ratio <= 1.5;
            lparts.push(format!(
                "{proto} {:.2} % -> {:.2} % ({ratio:.2}x)",
                100.0 * a.loss_rate,
                100.0 * b.loss_rate
            ));
        }
    }
    c.push(crate::legacy_claim(
        "Fig. 4",
        format!("The loss rate hardly grows with N for LEDBAT, NICE and Vegas; criterion: loss(N = {nmax}) / loss(N = {nmin}) <= 1.5"),
        lparts.join(", "),
        flat,
    ));
    if p.fig4_protocols.contains(&"lp") {
        let (a, b) = (find4(&f4.rows, "lp", nmin), find4(&f4.rows, "lp", nmax));
        let refs = (find4(&f4.rows, "newreno", nmin), reference);
        let grows = matches!((a, b), (Some(a), Some(b)) if b.loss_rate > a.loss_rate * 1.5);
        c.push(crate::legacy_claim(
            "Fig. 4",
            "For LP the loss rate grows with N, as for NewReno; criterion: loss(N = max) / loss(N = min) > 1.5",
            format!(
                "LP {:.2} % -> {:.2} %; NewReno reference {:.2} % -> {:.2} %. Our TCP-LP falls to one segment per RTT whenever NewReno holds the queue above LP's threshold (it does not re-base its delay range, see docs), so the LP flows add no losses of their own",
                a.map_or(f64::NAN, |r| 100.0 * r.loss_rate),
                b.map_or(f64::NAN, |r| 100.0 * r.loss_rate),
                refs.0.map_or(f64::NAN, |r| 100.0 * r.loss_rate),
                refs.1.map_or(f64::NAN, |r| 100.0 * r.loss_rate),
            ),
            grows,
        ));
    }
    // The same after the start-up transient, which dominates the whole-run
    // rates above (docs/reproductions/ledbat-flow.md, Fig. 4).
    {
        let pct = |r: Option<&Fig4Row>| {
            r.map_or("n/a".into(), |r| {
                format!("{:.3} %", 100.0 * r.steady_loss_rate)
            })
        };
        let pair = |name: &str, a: Option<&Fig4Row>, b: Option<&Fig4Row>| {
            format!("{name} {} -> {}", pct(a), pct(b))
        };
        let mut parts: Vec<String> = p
            .fig4_protocols
            .iter()
            .map(|&x| pair(x, find4(&f4.rows, x, nmin), find4(&f4.rows, x, nmax)))
            .collect();
        let vrow = |n: usize| {
            f4.variants
                .iter()
                .find(|r| r.variant == "lp-linux" && r.row.protocol == "lp" && r.row.n == n)
                .map(|r| &r.row)
        };
        if vrow(nmax).is_some() {
            parts.push(pair(
                "lp with Linux's re-basing (variant lp-linux)",
                vrow(nmin),
                vrow(nmax),
            ));
        }
        parts.push(pair(
            "N+1 NewReno reference",
            find4(&f4.rows, "newreno", nmin),
            reference,
        ));
        c.push(Claim::info(
            "Fig. 4",
            format!(
                "Loss rate from {:.0} s to the end, after NewReno's start-up overshoot (paper: it grows with N for NewReno and LP, not for NICE, Vegas and LEDBAT); N = {nmin} -> {nmax}",
                STEADY_FROM.as_secs_f64()
            ),
            parts.join(", "),
        ));
    }
    let umin = f4
        .rows
        .iter()
        .map(|r| r.utilization_min)
        .fold(f64::INFINITY, f64::min);
    c.push(crate::legacy_claim(
        "Fig. 4",
        "The link stays fully used; criterion: utilisation >= 0.9 in every run",
        format!("lowest utilisation of any run: {umin:.3}"),
        umin >= 0.9,
    ));
    // Order.
    let mut order: Vec<(&str, f64)> = p
        .fig4_protocols
        .iter()
        .filter_map(|&x| find4(&f4.rows, x, nmax).map(|r| (x, r.tcp_share)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let ours: Vec<&str> = order.iter().map(|o| o.0).collect();
    let paper: Vec<&str> = LOW_PRIORITY
        .iter()
        .copied()
        .filter(|x| p.fig4_protocols.contains(x))
        .collect();
    let variant_share = |v: &str, proto: &str| {
        f4.variants
            .iter()
            .find(|r| r.variant == v && r.row.protocol == proto && r.row.n == nmax)
            .map(|r| r.row.tcp_share)
    };
    let mut why = String::from(
        "NICE can shrink its window to 1/48 segment while LEDBAT stops at MIN_CWND = 2; our TCP-LP does not re-base its delay range and so mostly sits at one segment",
    );
    if let Some(x) = variant_share("ledbat-min-cwnd-1", "ledbat") {
        why.push_str(&format!(
            "; with MIN_CWND = 1 NewReno gets {x:.3} against LEDBAT"
        ));
    }
    if let Some(x) = variant_share("vegas-alpha1-beta3", "vegas") {
        why.push_str(&format!(
            "; with ns-2's Vegas alpha,beta = 1,3 it gets {x:.3} against Vegas"
        ));
    }
    c.push(crate::legacy_claim(
        "Fig. 4",
        format!(
            "Order of the four (lowest priority first, by NewReno's share at N = {nmax}): {}",
            paper.join(", ")
        ),
        format!(
            "{} ({}). {why}",
            ours.join(", "),
            order
                .iter()
                .map(|(x, s)| format!("{x} {s:.3}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ours == paper,
    ));
    // MIN_CWND bound.
    if let Some(r) = led {
        let c_bps = Path::FIG4.rate_kbps as f64 * 1000.0;
        let rtt_s = Path::FIG4.rtt_ms as f64 / 1000.0 + r.mean_queue_pkts * 1500.0 * 8.0 / c_bps;
        let floor = r.n as f64 * 2.0 * SEG * 8.0 / rtt_s / c_bps;
        c.push(Claim::info(
            "Fig. 4",
            "MIN_CWND bounds how far a flow can yield; N LEDBAT flows at MIN_CWND = 2 segments still send N x 2 segments per RTT",
            format!(
                "at N = {}: mean queue {:.0} pkts, RTT {:.2} s, so the LEDBAT floor is {:.3} of the link; measured LEDBAT share {:.3}{}",
                r.n,
                r.mean_queue_pkts,
                rtt_s,
                floor,
                1.0 - r.tcp_share,
                variant_share("ledbat-min-cwnd-1", "ledbat")
                    .map_or(String::new(), |x| format!("; with MIN_CWND = 1: {:.3}", 1.0 - x))
            ),
        ));
    }
    // Delayed ACKs.
    if !f4.variants.is_empty() {
        let parts: Vec<String> = p
            .fig4_protocols
            .iter()
            .filter_map(|&x| {
                let main = find4(&f4.rows, x, nmax)?.tcp_share;
                let d = variant_share("delayed-acks", x)?;
                let l = variant_share("linux-tcp", x)?;
                let sack = variant_share("sack", x)?;
                Some(format!("{x} {main:.3} / {sack:.3} / {d:.3} / {l:.3}"))
            })
            .collect();
        c.push(Claim::info(
            "Fig. 4",
            "Sensitivity to SACK, the receiver and the initial window; NewReno share at N = max with per-segment ACKs, IW 2 and no SACK (ns-2, our main runs) / the same with SACK / delayed ACKs / delayed ACKs, IW 10 and SACK (our defaults)",
            parts.join(", "),
        ));
    }

    // ---- Fig. 5
    let share_at = |pct: f64| {
        f5.rows
            .iter()
            .find(|r| (r.target_pct - pct).abs() < 1e-6)
            .map(|r| r.tcp_share)
    };
    let low: Vec<&Fig5Row> = f5
        .rows
        .iter()
        .filter(|r| (10.0 - 1e-6..=50.0 + 1e-6).contains(&r.target_pct))
        .collect();
    let low_min = low
        .iter()
        .map(|r| r.tcp_share)
        .fold(f64::INFINITY, f64::min);
    c.push(crate::legacy_claim(
        "Fig. 5",
        "LEDBAT is low priority while tau is 10–50 % of the buffer delay; criterion: NewReno share >= 0.8",
        format!(
            "lowest share over {} in 10–50 %: {low_min:.3}",
            plural(low.len(), "target")
        ),
        !low.is_empty() && low_min >= 0.8,
    ));
    if let (Some(a), Some(b)) = (share_at(50.0), share_at(100.0)) {
        c.push(crate::legacy_claim(
            "Fig. 5",
            "LEDBAT erodes NewReno as tau approaches the buffer delay; criterion: NewReno's share falls by >= 0.2 from tau = 50 % to 100 % (paper: to about 0)",
            format!("{a:.3} at 50 % -> {b:.3} at 100 % (drop {:.3})", a - b),
            a - b >= 0.2,
        ));
    }
    let high: Vec<&Fig5Row> = f5
        .rows
        .iter()
        .filter(|r| r.target_pct >= 150.0 - 1e-6)
        .collect();
    let in_band = high.iter().all(|r| (0.3..=0.7).contains(&r.tcp_share));
    c.push(crate::legacy_claim(
        "Fig. 5",
        "Beyond the buffer LEDBAT never reaches its target and competes like NewReno; criterion: NewReno share in 0.3–0.7 for tau >= 150 %",
        high.iter()
            .map(|r| format!("{:.0} %: {:.3}", r.target_pct, r.tcp_share))
            .collect::<Vec<_>>()
            .join(", "),
        !high.is_empty() && in_band,
    ));
    let u5 = f5
        .rows
        .iter()
        .map(|r| r.utilization)
        .fold(f64::INFINITY, f64::min);
    c.push(crate::legacy_claim(
        "Fig. 5",
        "Utilisation stays close to the capacity for every target; criterion: >= 0.9",
        format!("lowest mean utilisation: {u5:.3}"),
        u5 >= 0.9,
    ));
    c.push(Claim::info(
        "Fig. 5",
        "Four regions of tau: very small targets (shaky), low priority, erosion (paper: 65–100 %), loss-based (> 100 %)",
        format!(
            "{}{}",
            f5.regions
                .iter()
                .map(|r| format!("{} {:.0}–{:.0} %", r.name, r.from_pct, r.to_pct))
                .collect::<Vec<_>>()
                .join("; "),
            if f5.long.is_empty() {
                String::new()
            } else {
                format!(
                    ". Longer runs ({} s), NewReno share overall / last 120 s: {}",
                    p.fig5_long_secs,
                    f5.long
                        .iter()
                        .map(|r| format!(
                            "{:.0} %: {:.3} / {:.3}",
                            r.target_pct, r.tcp_share, r.tcp_share_last_120s
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ),
    ));

    // ---- Fig. 6
    if let Some(r) = f6.rows.iter().find(|r| (r.target_ratio - 1.2).abs() < 1e-9) {
        c.push(crate::legacy_claim(
            "Fig. 6",
            "A slightly larger target starves the other LEDBAT flow; criterion: at tau1/tau2 = 1.2 the smaller-target flow ends with <= 15 % (paper: 0 after about 2 min)",
            format!(
                "share over the last 20 s: {:.3} (whole run: {:.3}); a flow at MIN_CWND = 2 keeps about 2 packets per RTT",
                r.small_target_share_end, r.small_target_share
            ),
            r.small_target_share_end <= 0.15,
        ));
    }
    if let Some(r) = f6.rows.iter().find(|r| (r.target_ratio - 1.0).abs() < 1e-9) {
        c.push(Claim::info(
            "Fig. 6",
            "Equal targets share fairly, utilisation stays high and the queue grows with tau1",
            format!(
                "at 1.0: share {:.3}; utilisation {:.3}–{:.3}; E[B]/Bmax {:.3}–{:.3}{}",
                r.small_target_share,
                f6.rows.iter().map(|r| r.utilization).fold(f64::INFINITY, f64::min),
                f6.rows.iter().map(|r| r.utilization).fold(0.0, f64::max),
                f6.rows.iter().map(|r| r.mean_queue_norm).fold(f64::INFINITY, f64::min),
                f6.rows.iter().map(|r| r.mean_queue_norm).fold(0.0, f64::max),
                f6.jittered
                    .iter()
                    .find(|j| (j.target_ratio - 1.0).abs() < 1e-9)
                    .map_or(String::new(), |j| format!(
                        "; with starts jittered by up to 100 ms the share at 1.0 ranges {:.2}–{:.2} (the later starter's base delay includes the other's queue)",
                        j.small_target_share_min, j.small_target_share_max
                    ))
            ),
        ));
    }

    // ---- Latecomers
    let jain_of = |v: &str| late.rows.iter().find(|r| r.variant == v).map(|r| r.jain);
    if let (Some(rfc), Some(pp)) = (jain_of("rfc6817"), jain_of("ledbat++")) {
        c.push(crate::legacy_claim(
            "Beyond: latecomers",
            format!(
                "LEDBAT++ fixes the latecomer advantage; {} flows starting {} s apart, criterion: Jain index of ledbat++ > rfc6817",
                p.late_flows, p.late_gap_secs
            ),
            late.rows
                .iter()
                .map(|r| {
                    format!(
                        "{} Jain {:.3} ({:.3}–{:.3}), shares {}",
                        r.variant,
                        r.jain,
                        r.jain_min,
                        r.jain_max,
                        r.shares
                            .iter()
                            .map(|s| format!("{s:.2}"))
                            .collect::<Vec<_>>()
                            .join("/")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
            pp > rfc,
        ));
    }
    c
}

// ---------------------------------------------------------------- output

fn f(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        String::new()
    }
}

fn write_csvs(dir: &FsPath, s: &LedbatFlowSummary) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    let row4 = |r: &Fig4Row| {
        vec![
            r.protocol.clone(),
            r.n.to_string(),
            f(r.tcp_share),
            f(r.tcp_share_min),
            f(r.tcp_share_max),
            f(r.tcp_share_sd),
            f(r.fair_share),
            f(r.utilization),
            f(r.loss_rate),
            f(r.loss_rate_min),
            f(r.loss_rate_max),
            f(r.steady_loss_rate),
            f(r.mean_queue_pkts),
            r.seeds.to_string(),
        ]
    };
    let h4 = [
        "protocol",
        "n",
        "tcp_share",
        "tcp_share_min",
        "tcp_share_max",
        "tcp_share_sd",
        "fair_share",
        "utilization",
        "loss_rate",
        "loss_rate_min",
        "loss_rate_max",
        "steady_loss_rate",
        "mean_queue_pkts",
        "seeds",
    ];
    write_csv(
        &dir.join("fig4.csv"),
        &h4,
        &s.fig4.iter().map(row4).collect::<Vec<_>>(),
    )?;
    files.push("fig4.csv".into());
    let mut hv = vec!["variant"];
    hv.extend_from_slice(&h4);
    write_csv(
        &dir.join("fig4_variants.csv"),
        &hv,
        &s.fig4_variants
            .iter()
            .map(|v| {
                let mut r = vec![v.variant.clone()];
                r.extend(row4(&v.row));
                r
            })
            .collect::<Vec<_>>(),
    )?;
    files.push("fig4_variants.csv".into());
    write_csv(
        &dir.join("fig5.csv"),
        &[
            "target_ms",
            "target_pct",
            "tcp_share",
            "tcp_share_min",
            "tcp_share_max",
            "utilization",
            "loss_rate",
            "mean_queue_norm",
        ],
        &s.fig5
            .iter()
            .map(|r| {
                vec![
                    f(r.target_ms),
                    f(r.target_pct),
                    f(r.tcp_share),
                    f(r.tcp_share_min),
                    f(r.tcp_share_max),
                    f(r.utilization),
                    f(r.loss_rate),
                    f(r.mean_queue_norm),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    files.push("fig5.csv".into());
    write_csv(
        &dir.join("fig6.csv"),
        &[
            "target_ratio",
            "small_target_share",
            "small_target_share_end",
            "utilization",
            "mean_queue_norm",
            "loss_rate",
            "jittered_small_target_share",
            "jittered_min",
            "jittered_max",
        ],
        &s.fig6
            .iter()
            .map(|r| {
                let j = s
                    .fig6_jittered
                    .iter()
                    .find(|j| (j.target_ratio - r.target_ratio).abs() < 1e-9);
                vec![
                    f(r.target_ratio),
                    f(r.small_target_share),
                    f(r.small_target_share_end),
                    f(r.utilization),
                    f(r.mean_queue_norm),
                    f(r.loss_rate),
                    j.map_or(String::new(), |j| f(j.small_target_share)),
                    j.map_or(String::new(), |j| f(j.small_target_share_min)),
                    j.map_or(String::new(), |j| f(j.small_target_share_max)),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    files.push("fig6.csv".into());
    let mut late_rows = Vec::new();
    let mut share_rows = Vec::new();
    for (scen, rows) in [("1mbit", &s.latecomer), ("10mbit", &s.latecomer_10mbit)] {
        for r in rows.iter() {
            for (i, x) in r.shares.iter().enumerate() {
                share_rows.push(vec![
                    scen.to_string(),
                    r.variant.clone(),
                    (i + 1).to_string(),
                    format!("{x:.4}"),
                ]);
            }
            late_rows.push(vec![
                scen.to_string(),
                r.variant.clone(),
                f(r.jain),
                f(r.jain_min),
                f(r.jain_max),
                f(r.utilization),
                f(r.mean_queue_ms),
                r.seeds.to_string(),
            ]);
        }
    }
    write_csv(
        &dir.join("latecomer.csv"),
        &[
            "scenario",
            "variant",
            "jain",
            "jain_min",
            "jain_max",
            "utilization",
            "mean_queue_ms",
            "seeds",
        ],
        &late_rows,
    )?;
    files.push("latecomer.csv".into());
    // Each flow's share of the goodput, in start order (flow 1 first).
    write_csv(
        &dir.join("latecomer_shares.csv"),
        &["scenario", "variant", "flow", "share"],
        &share_rows,
    )?;
    files.push("latecomer_shares.csv".into());
    Ok(files)
}

/// Writes a time series CSV: one row per trace sample, one column per flow.
fn write_trace_csv(
    path: &FsPath,
    label: &str,
    runs: &[(String, &RunResult)],
) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for (name, r) in runs {
        for (k, t) in r.times.iter().enumerate() {
            for (i, c) in r.cwnd_pkts.iter().enumerate() {
                rows.push(vec![
                    name.clone(),
                    format!("{t:.3}"),
                    i.to_string(),
                    f(c[k]),
                    f(r.queue_pkts[k]),
                ]);
            }
        }
    }
    write_csv(
        path,
        &[label, "time_s", "flow", "cwnd_pkts", "queue_pkts"],
        &rows,
    )
}

/// Runs the reproduction with explicit parameters.
pub fn run_with(opts: &ReproOpts, p: &Params, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(&opts.out)?;
    let f2 = fig2(p, opts, progress);
    let f4 = fig4(p, opts, progress);
    let f5 = fig5(p, opts, progress);
    let f6 = fig6(p, opts, progress);
    let late = latecomer(p, opts, progress, Path::FIG4, p.late_flows, "1 Mbit/s");
    let late10 = if p.late_10m {
        Some(latecomer(p, opts, progress, Path::FIG2, 4, "10 Mbit/s"))
    } else {
        None
    };
    let claims = claims(p, &f2, &f4, &f5, &f6, &late);
    let summary = LedbatFlowSummary {
        paper: "C. Testa, D. Rossi: Delay-based congestion control: Flow vs. BitTorrent swarm perspectives. Computer Networks 62 (2014), §3-4",
        setup: Setup {
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
        },
        fig2: f2.rows.clone(),
        fig4: f4.rows.clone(),
        fig4_variants: f4.variants.clone(),
        fig5: f5.rows.clone(),
        fig5_regions: f5.regions.clone(),
        fig5_long: f5.long.clone(),
        fig6: f6.rows.clone(),
        fig6_jittered: f6.jittered.clone(),
        latecomer: late.rows.clone(),
        latecomer_10mbit: late10.as_ref().map_or(Vec::new(), |l| l.rows.clone()),
        claims: claims.clone(),
    };
    write_summary(&opts.out, &summary)?;
    let mut files = vec!["summary.json".to_string()];
    files.extend(write_csvs(&opts.out, &summary)?);
    let pairs = fig2_pairs();
    let f2runs: Vec<(String, &RunResult)> = pairs
        .iter()
        .zip(&f2.traces)
        .map(|((k, a, b), r)| (format!("{k}:{a}+{b}"), r))
        .collect();
    write_trace_csv(&opts.out.join("fig2_cwnd.csv"), "pair", &f2runs)?;
    files.push("fig2_cwnd.csv".into());
    if let Some(t) = &f6.trace_12 {
        write_trace_csv(
            &opts.out.join("fig6_cwnd.csv"),
            "run",
            &[("ratio1.2".to_string(), t)],
        )?;
        files.push("fig6_cwnd.csv".into());
    }
    let lruns: Vec<(String, &RunResult)> = LATE_VARIANTS
        .iter()
        .zip(&late.traces)
        .map(|((v, _), r)| (v.to_string(), r))
        .collect();
    write_trace_csv(&opts.out.join("latecomer_cwnd.csv"), "variant", &lruns)?;
    files.push("latecomer_cwnd.csv".into());
    files.extend(plots::write_all(
        &opts.out,
        &summary,
        &f2.traces,
        f6.trace_12.as_ref(),
        &late.traces,
        p,
    )?);
    Ok(Outcome {
        claims,
        files,
        data: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::pkts;

    #[test]
    fn windows_keep_two_significant_digits_below_ten() {
        assert_eq!(pkts(37.4), "37");
        assert_eq!(pkts(2.43), "2.4");
        assert_eq!(pkts(0.0213), "0.021");
        assert_eq!(pkts(0.0041), "0.0041");
        assert_eq!(pkts(0.0), "0");
        assert_eq!(pkts(f64::NAN), "n/a");
    }
}
