//! What `ledbat-swarm` measured: a [`Row`] per class of each configuration
//! over its runs, and [`Results`], whose fields summary.json holds beside
//! the plan and the claims.

use super::{
    spec, Config, Plan, Policy, BUFFER, DOWN_KBPS, MAX_DELAY_MS, PIECES, PIECE_LEN, TARGET_MS,
    UP_KBPS,
};
use hopwise_experiment::stats::{mean_ci90, quantile};
use hopwise_overlay::swarm::driver::SwarmResult;
use serde::Serialize;

/// One class of one configuration in one run (for the claims' intervals,
/// which resample runs).
#[derive(Clone, Debug, Default)]
pub struct ClassRun {
    /// Counted download times (s), in completion order.
    pub downloads: Vec<f64>,
    /// Uplink-queue samples by packets queued, `0..=buffer`.
    pub hist: Vec<u64>,
}

impl ClassRun {
    /// The mean counted download time of this run (NaN without downloads).
    pub fn mean_download(&self) -> f64 {
        self.downloads.iter().sum::<f64>() / self.downloads.len() as f64
    }

    /// Mean uplink queue (packets) and the share of samples above 100
    /// packets, over the runs `idx`.
    pub fn queue(runs: &[ClassRun], idx: &[usize]) -> (f64, f64) {
        queue_stats(&sum_hists(idx.iter().map(|&i| &runs[i].hist)))
    }

    /// The mean download time over the runs `idx` (every download counts
    /// once; 0 without downloads, as in [`Row::mean_s`]).
    pub fn mean(runs: &[ClassRun], idx: &[usize]) -> f64 {
        let (s, n) = idx.iter().fold((0.0, 0usize), |(s, n), &i| {
            let d = &runs[i].downloads;
            (s + d.iter().sum::<f64>(), n + d.len())
        });
        s / n.max(1) as f64
    }
}

/// The sum of histograms (as long as the longest).
fn sum_hists<'a>(hists: impl Iterator<Item = &'a Vec<u64>> + Clone) -> Vec<u64> {
    let mut sum = vec![0u64; hists.clone().map(Vec::len).max().unwrap_or(0)];
    for h in hists {
        for (s, x) in sum.iter_mut().zip(h) {
            *s += x;
        }
    }
    sum
}

/// Mean queue (packets) and P(queue > 100 packets) of a histogram.
fn queue_stats(hist: &[u64]) -> (f64, f64) {
    let n: u64 = hist.iter().sum();
    let qmean = hist
        .iter()
        .enumerate()
        .map(|(i, &x)| i as f64 * x as f64)
        .sum::<f64>()
        / n.max(1) as f64;
    let over = hist.iter().skip(101).sum::<u64>() as f64 / n.max(1) as f64;
    (qmean, over)
}

/// One class in one configuration, over every run.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub fig: &'static str,
    pub population: String,
    pub policy: Policy,
    pub buffer_pkts: u64,
    pub target_ratio: Option<f64>,
    pub class: String,
    pub downloads: usize,
    pub mean_s: f64,
    /// Half-width of the 90 % interval of the mean over runs.
    pub ci90_s: f64,
    pub p25_s: f64,
    pub median_s: f64,
    pub p75_s: f64,
    /// Uplink queue of this class's peers, sampled at 10 Hz.
    pub queue_mean_pkts: f64,
    pub queue_mean_ms: f64,
    pub queue_over_100: f64,
    /// Runs that reached their last counted completion.
    pub runs_finished: usize,
    pub runs: usize,
    /// This class in each run, in run order.
    #[serde(skip)]
    pub per_run: Vec<ClassRun>,
}

impl Row {
    /// The case as the figures and `queue_ccdf.csv` name it:
    /// "fig8 / 50-50 / 200 pkts / random stay / ledbat".
    pub fn label(&self) -> String {
        format!(
            "{} / {} / {} pkts / {} / {}",
            self.fig,
            self.population,
            self.buffer_pkts,
            self.policy.name(),
            self.class
        )
    }

    /// Every counted download time, run by run.
    pub fn all_downloads(&self) -> Vec<f64> {
        self.per_run
            .iter()
            .flat_map(|r| r.downloads.iter().copied())
            .collect()
    }

    /// The uplink-queue histogram over every run.
    pub fn hist(&self) -> Vec<u64> {
        let mut hist = sum_hists(self.per_run.iter().map(|r| &r.hist));
        hist.resize(self.buffer_pkts as usize + 1, 0);
        hist
    }
}

/// What `ledbat-swarm` measured.
#[derive(Serialize)]
pub struct Results {
    pub constants: serde_json::Value,
    pub rows: Vec<Row>,
    /// Bytes of blocks received twice over bytes received.
    pub duplicate_block_share: f64,
    /// Simulator events over every run.
    pub events: u64,
    /// The configurations, in the order of `runs`.
    #[serde(skip)]
    pub configs: Vec<Config>,
    /// Every run, configuration by configuration, `plan.runs` each.
    #[serde(skip)]
    pub runs: Vec<SwarmResult>,
}

/// P(queue > q) for every q of a histogram of queue samples.
pub(super) fn ccdf(hist: &[u64]) -> Vec<f64> {
    let n: u64 = hist.iter().sum();
    let mut above = n;
    hist.iter()
        .map(|&x| {
            above -= x;
            above as f64 / n.max(1) as f64
        })
        .collect()
}

/// Milliseconds to send `pkts` full-size packets at the uplink rate.
pub(super) fn pkts_ms(pkts: f64) -> f64 {
    pkts * 1500.0 * 8.0 / UP_KBPS as f64
}

impl Results {
    /// The rows of the runs `res` of `cfgs` (`plan.runs` per configuration).
    pub fn of(plan: &Plan, cfgs: Vec<Config>, res: Vec<SwarmResult>) -> Results {
        let seeds = plan.runs as usize;
        let mut rows = Vec::new();
        for (k, c) in cfgs.iter().enumerate() {
            let runs = &res[k * seeds..(k + 1) * seeds];
            for (ci, cl) in c.classes.iter().enumerate() {
                let per_run: Vec<ClassRun> = runs
                    .iter()
                    .map(|r| ClassRun {
                        downloads: r
                            .completions
                            .iter()
                            .filter(|x| x.class == ci)
                            .map(|x| x.download_s)
                            .collect(),
                        hist: r.queue_hist[ci].clone(),
                    })
                    .collect();
                let dl: Vec<f64> = per_run
                    .iter()
                    .flat_map(|r| r.downloads.iter().copied())
                    .collect();
                let (qmean, over) = queue_stats(&sum_hists(per_run.iter().map(|r| &r.hist)));
                // Downloads of one run are not independent: the interval is
                // over the runs' means.
                let run_means: Vec<f64> = per_run
                    .iter()
                    .filter(|r| !r.downloads.is_empty())
                    .map(ClassRun::mean_download)
                    .collect();
                rows.push(Row {
                    fig: c.fig,
                    population: c.population.clone(),
                    policy: c.policy,
                    buffer_pkts: c.buffer,
                    target_ratio: c.target_ratio,
                    class: cl.name.clone(),
                    downloads: dl.len(),
                    mean_s: dl.iter().sum::<f64>() / dl.len().max(1) as f64,
                    ci90_s: mean_ci90(&run_means).1,
                    p25_s: quantile(&dl, 0.25),
                    median_s: quantile(&dl, 0.5),
                    p75_s: quantile(&dl, 0.75),
                    queue_mean_pkts: qmean,
                    queue_mean_ms: pkts_ms(qmean),
                    queue_over_100: over,
                    runs_finished: runs.iter().filter(|r| r.finished).count(),
                    runs: runs.len(),
                    per_run,
                });
            }
        }
        let dup_bytes: u64 = res.iter().map(|r| r.duplicate_blocks).sum::<u64>()
            * hopwise_proto::bittorrent::BLOCK as u64;
        let downloaded: u64 = res.iter().map(|r| r.downloaded).sum();
        Results {
            constants: serde_json::json!({
                "file_bytes": PIECES as u64 * PIECE_LEN as u64,
                "pieces": PIECES,
                "piece_bytes": PIECE_LEN,
                "up_kbps": UP_KBPS,
                "down_kbps": DOWN_KBPS,
                "buffer_pkts": BUFFER,
                "one_way_delay_ms": format!("uniform 0-{MAX_DELAY_MS}"),
                "ledbat_target_ms": TARGET_MS,
                "leechers": spec(&cfgs[0], plan.leechers).leechers,
                "arrival_rate_hz": 0.1,
                "counted": "completions after the first half",
                "pipeline_blocks": 5,
                "unchoke_slots": "3 + 1 optimistic",
                "control": "TCP NewReno, one connection per neighbour pair",
            }),
            rows,
            duplicate_block_share: dup_bytes as f64 / downloaded.max(1) as f64,
            events: res.iter().map(|r| r.events).sum(),
            configs: cfgs,
            runs: res,
        }
    }
}
