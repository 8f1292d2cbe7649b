//! The CSVs of `ledbat-flow` (the figures are in [`super::plots`]).

use super::net::RunResult;
use super::results::{Fig4Row, Fig6Row, LateRow, Results};
use super::runs::fig2_pairs;
use super::{plots, Params, LATE_VARIANTS};
use hopwise_experiment::csv::{float, DynRow};
use hopwise_experiment::Outputs;
use serde::Serialize;

/// A row of `fig4.csv`: [`Fig4Row`] without the lowest utilisation.
#[derive(Default, Serialize)]
struct Fig4Csv<'a> {
    protocol: &'a str,
    n: usize,
    tcp_share: f64,
    tcp_share_min: f64,
    tcp_share_max: f64,
    tcp_share_sd: f64,
    fair_share: f64,
    utilization: f64,
    loss_rate: f64,
    loss_rate_min: f64,
    loss_rate_max: f64,
    steady_loss_rate: f64,
    mean_queue_pkts: f64,
    seeds: u32,
}

impl<'a> From<&'a Fig4Row> for Fig4Csv<'a> {
    fn from(r: &'a Fig4Row) -> Self {
        Fig4Csv {
            protocol: &r.protocol,
            n: r.n,
            tcp_share: r.tcp_share,
            tcp_share_min: r.tcp_share_min,
            tcp_share_max: r.tcp_share_max,
            tcp_share_sd: r.tcp_share_sd,
            fair_share: r.fair_share,
            utilization: r.utilization,
            loss_rate: r.loss_rate,
            loss_rate_min: r.loss_rate_min,
            loss_rate_max: r.loss_rate_max,
            steady_loss_rate: r.steady_loss_rate,
            mean_queue_pkts: r.mean_queue_pkts,
            seeds: r.seeds,
        }
    }
}

/// A row of `fig4_variants.csv`.
#[derive(Default, Serialize)]
struct Fig4VariantCsv<'a> {
    variant: &'a str,
    #[serde(flatten)]
    row: Fig4Csv<'a>,
}

/// A row of `fig6.csv`: simultaneous starts, and the mean, min and max
/// over the jittered seeds at the same ratio (empty if not run).
#[derive(Default, Serialize)]
struct Fig6Csv {
    #[serde(flatten)]
    row: Fig6Row,
    jittered_small_target_share: Option<f64>,
    jittered_min: Option<f64>,
    jittered_max: Option<f64>,
}

/// A row of `latecomer.csv`.
#[derive(Default, Serialize)]
struct LateCsv<'a> {
    /// "1mbit" (3 flows) or "10mbit" (4 flows).
    scenario: &'a str,
    variant: &'a str,
    jain: f64,
    jain_min: f64,
    jain_max: f64,
    utilization: f64,
    mean_queue_ms: f64,
    seeds: u32,
}

/// A row of `latecomer_shares.csv`: one flow's share, in start order.
#[derive(Default, Serialize)]
struct LateShareCsv<'a> {
    scenario: &'a str,
    variant: &'a str,
    /// From 1, in order of arrival.
    flow: usize,
    share: f64,
}

/// Rows of a time-series CSV: one row per trace sample and flow, the
/// first column (`label`) naming the run.
fn trace_rows(label: &str, runs: &[(String, &RunResult)]) -> Vec<DynRow> {
    let mut rows = Vec::new();
    for (name, r) in runs {
        for (k, t) in r.times.iter().enumerate() {
            for (i, c) in r.cwnd_pkts.iter().enumerate() {
                rows.push(DynRow(vec![
                    (label.to_string(), name.clone()),
                    ("time_s".into(), float(*t)),
                    ("flow".into(), i.to_string()),
                    ("cwnd_pkts".into(), float(c[k])),
                    ("queue_pkts".into(), float(r.queue_pkts[k])),
                ]));
            }
        }
    }
    rows
}

/// Writes every CSV, then the figures.
pub(super) fn write(p: &Params, r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let fig4: Vec<Fig4Csv> = r.fig4.iter().map(Fig4Csv::from).collect();
    out.csv("fig4.csv", &fig4)?;
    let variants: Vec<Fig4VariantCsv> = r
        .fig4_variants
        .iter()
        .map(|v| Fig4VariantCsv {
            variant: &v.variant,
            row: Fig4Csv::from(&v.row),
        })
        .collect();
    out.csv("fig4_variants.csv", &variants)?;
    out.csv("fig5.csv", &r.fig5)?;
    let fig6: Vec<Fig6Csv> = r
        .fig6
        .iter()
        .map(|row| {
            let j = r
                .fig6_jittered
                .iter()
                .find(|j| (j.target_ratio - row.target_ratio).abs() < 1e-9);
            Fig6Csv {
                row: row.clone(),
                jittered_small_target_share: j.map(|j| j.small_target_share),
                jittered_min: j.map(|j| j.small_target_share_min),
                jittered_max: j.map(|j| j.small_target_share_max),
            }
        })
        .collect();
    out.csv("fig6.csv", &fig6)?;
    let mut late = Vec::new();
    let mut shares = Vec::new();
    for (scenario, rows) in [("1mbit", &r.latecomer), ("10mbit", &r.latecomer_10mbit)] {
        for l in rows.iter() {
            let LateRow {
                variant,
                jain,
                jain_min,
                jain_max,
                utilization,
                mean_queue_ms,
                seeds,
                ..
            } = l;
            for (i, &share) in l.shares.iter().enumerate() {
                shares.push(LateShareCsv {
                    scenario,
                    variant,
                    flow: i + 1,
                    share,
                });
            }
            late.push(LateCsv {
                scenario,
                variant,
                jain: *jain,
                jain_min: *jain_min,
                jain_max: *jain_max,
                utilization: *utilization,
                mean_queue_ms: *mean_queue_ms,
                seeds: *seeds,
            });
        }
    }
    out.csv("latecomer.csv", &late)?;
    out.csv("latecomer_shares.csv", &shares)?;
    let f2runs: Vec<(String, &RunResult)> = fig2_pairs()
        .iter()
        .zip(&r.traces.fig2)
        .map(|((k, a, b), r)| (format!("{k}:{a}+{b}"), r))
        .collect();
    out.csv("fig2_cwnd.csv", &trace_rows("pair", &f2runs))?;
    if let Some(t) = &r.traces.fig6_12 {
        out.csv(
            "fig6_cwnd.csv",
            &trace_rows("run", &[("ratio1.2".to_string(), t)]),
        )?;
    }
    let lruns: Vec<(String, &RunResult)> = LATE_VARIANTS
        .iter()
        .zip(&r.traces.late)
        .map(|((v, _), r)| (v.to_string(), r))
        .collect();
    out.csv("latecomer_cwnd.csv", &trace_rows("variant", &lruns))?;
    plots::write_all(out, r, p)
}
