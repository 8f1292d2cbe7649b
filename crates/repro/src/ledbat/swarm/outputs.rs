//! The CSVs of `ledbat-swarm` (the figures are in [`super::plots`]). The
//! policy columns hold the policy's name ("random stay").

use super::plots;
use super::results::{ccdf, Results, Row};
use hopwise_experiment::Outputs;
use serde::Serialize;

/// A row of `swarm.csv`: [`Row`] with the policy's name.
#[derive(Default, Serialize)]
struct SwarmCsv<'a> {
    fig: &'a str,
    population: &'a str,
    policy: &'a str,
    buffer_pkts: u64,
    target_ratio: Option<f64>,
    class: &'a str,
    downloads: usize,
    mean_s: f64,
    ci90_s: f64,
    p25_s: f64,
    median_s: f64,
    p75_s: f64,
    queue_mean_pkts: f64,
    queue_mean_ms: f64,
    queue_over_100: f64,
    runs_finished: usize,
    runs: usize,
}

impl<'a> From<&'a Row> for SwarmCsv<'a> {
    fn from(r: &'a Row) -> Self {
        SwarmCsv {
            fig: r.fig,
            population: &r.population,
            policy: r.policy.name(),
            buffer_pkts: r.buffer_pkts,
            target_ratio: r.target_ratio,
            class: &r.class,
            downloads: r.downloads,
            mean_s: r.mean_s,
            ci90_s: r.ci90_s,
            p25_s: r.p25_s,
            median_s: r.median_s,
            p75_s: r.p75_s,
            queue_mean_pkts: r.queue_mean_pkts,
            queue_mean_ms: r.queue_mean_ms,
            queue_over_100: r.queue_over_100,
            runs_finished: r.runs_finished,
            runs: r.runs,
        }
    }
}

/// A row of `downloads.csv`: one counted download.
#[derive(Default, Serialize)]
struct DownloadCsv<'a> {
    fig: &'a str,
    population: &'a str,
    policy: &'a str,
    buffer_pkts: u64,
    class: &'a str,
    /// From 1.
    run: usize,
    /// Completion order among the run's leechers, from 1.
    rank: usize,
    joined_s: f64,
    download_s: f64,
}

/// A row of `queue_ccdf.csv`: P(uplink queue > `queue_pkts`) of one class
/// of a Fig. 8 swarm, over every run.
#[derive(Default, Serialize)]
struct CcdfCsv<'a> {
    fig: &'a str,
    population: &'a str,
    policy: &'a str,
    buffer_pkts: u64,
    class: &'a str,
    queue_pkts: usize,
    p_greater: f64,
}

/// Writes every CSV, then the figures.
pub(super) fn write(r: &Results, out: &mut Outputs) -> anyhow::Result<()> {
    let rows: Vec<SwarmCsv> = r.rows.iter().map(SwarmCsv::from).collect();
    out.csv("swarm.csv", &rows)?;
    let per_config = r.runs.len() / r.configs.len().max(1);
    let mut downloads = Vec::new();
    for (c, runs) in r.configs.iter().zip(r.runs.chunks(per_config.max(1))) {
        for (run, res) in runs.iter().enumerate() {
            for x in &res.completions {
                downloads.push(DownloadCsv {
                    fig: c.fig,
                    population: &c.population,
                    policy: c.policy.name(),
                    buffer_pkts: c.buffer,
                    class: &c.classes[x.class].name,
                    run: run + 1,
                    rank: x.rank,
                    joined_s: x.joined_s,
                    download_s: x.download_s,
                });
            }
        }
    }
    out.csv("downloads.csv", &downloads)?;
    let fig8: Vec<&Row> = r.rows.iter().filter(|x| x.fig == "fig8").collect();
    let hists: Vec<Vec<u64>> = fig8.iter().map(|x| x.hist()).collect();
    let mut ccdfs = Vec::new();
    for (x, h) in fig8.iter().zip(&hists) {
        for (q, p) in ccdf(h).into_iter().enumerate() {
            ccdfs.push(CcdfCsv {
                fig: x.fig,
                population: &x.population,
                policy: x.policy.name(),
                buffer_pkts: x.buffer_pkts,
                class: &x.class,
                queue_pkts: q,
                p_greater: p,
            });
        }
    }
    out.csv("queue_ccdf.csv", &ccdfs)?;
    let cdfs: Vec<(String, Vec<f64>)> = fig8
        .iter()
        .map(|x| (x.label(), x.all_downloads()))
        .collect();
    let ccdfs: Vec<(String, Vec<u64>)> = fig8.iter().map(|x| x.label()).zip(hists).collect();
    plots::write(out, &r.rows, &cdfs, &ccdfs)
}
