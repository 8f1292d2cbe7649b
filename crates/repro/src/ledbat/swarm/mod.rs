//! Reproduction `ledbat-swarm`: seed 003 §5 (Testa, Rossi et al., "Delay-based
//! congestion control: Flow vs. BitTorrent swarm perspectives"), BitTorrent
//! swarms whose peers upload with NewReno, LEDBAT, Vegas, LP or NICE.
//!
//! Every run is a packet-level swarm ([`swarm::run_swarm`]) of BitTorrent
//! peers ([`peer::Peer`]) on the paper's star of ADSL-like access links:
//! 1 Mbit/s up, 8 Mbit/s down, 200-packet buffers, one-way delays uniform in
//! 0–25 ms. One seed, then 100 leechers arriving at 0.1 Hz; the first 50
//! completions are the transient, the next 50 are counted.
//!
//! * **Fig. 8 and 9a**: three seed policies (never leave, random stay,
//!   immediate leave) × homogeneous NewReno, homogeneous LEDBAT and a
//!   50–50 mix: completion times per class and the uplink-queue CCDF.
//! * **Fig. 9b**: the 50–50 mix, random stay, over access buffers of
//!   25–400 packets.
//! * **Fig. 10 and 11**: random stay, homogeneous swarms of each
//!   protocol, and 50–50 mixes of NewReno with each of the others.
//! * **Fig. 12**: all-LEDBAT swarms where half the peers use τ2 = 100 ms
//!   and half τ1 = 25–1000 ms.
//!
//! Choices and differences from the paper are in
//! `docs/reproductions/ledbat-swarm.md`.

pub mod peer;
mod plots;
pub mod swarm;

use crate::{
    mean_ci90, par_map, quantile, write_csv, write_summary, Claim, Experiment, Outcome, Progress,
    ReproOpts,
};
use anyhow::Context as _;
use hopwise_proto::cc::{CcConfig, LedbatConfig, LedbatVariant};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use peer::Stay;
use serde::Serialize;
use swarm::{run_swarm, Class, SwarmResult, SwarmSpec};

pub fn experiment() -> Experiment {
    Experiment {
        name: "ledbat-swarm",
        about: "Testa, Rossi et al. (seed paper 003 §5): BitTorrent swarms uploading with NewReno, LEDBAT, Vegas, LP or NICE; completion time and uplink queues (Fig. 8-12)",
        wall: "quick about 12 s, full about 5 min",
        run,
    }
}

/// The torrent: 32 pieces of 256 KiB (8 MiB). The paper does not give its
/// file size.
pub const PIECES: u32 = 32;
pub const PIECE_LEN: u32 = 256 << 10;
/// The access links (§5).
pub const UP_KBPS: u64 = 1000;
pub const DOWN_KBPS: u64 = 8000;
pub const BUFFER: u64 = 200;
pub const MAX_DELAY_MS: u64 = 25;
/// LEDBAT's target (§5: "fixed at τ = 100 ms").
pub const TARGET_MS: u64 = 100;
/// Buffers of the Fig. 9b sweep (packets).
pub const BUFFERS: [u64; 5] = [25, 50, 100, 200, 400];
/// τ1/τ2 of the Fig. 12 sweep (τ2 = 100 ms).
pub const TARGET_RATIOS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0];

/// The seed policies of Fig. 8.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    NeverLeave,
    RandomStay,
    ImmediateLeave,
}

impl Policy {
    pub const ALL: [Policy; 3] = [
        Policy::NeverLeave,
        Policy::RandomStay,
        Policy::ImmediateLeave,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Policy::NeverLeave => "never leave",
            Policy::RandomStay => "random stay",
            Policy::ImmediateLeave => "immediate leave",
        }
    }
    fn stay(self) -> Stay {
        match self {
            Policy::NeverLeave => Stay::Forever,
            // §5: "exponentially distributed time, with mean equal to half
            // their download time".
            Policy::RandomStay => Stay::Random { frac: 0.5 },
            Policy::ImmediateLeave => Stay::Leave,
        }
    }
}

fn ledbat(target_ms: f64) -> CcConfig {
    let mut c = LedbatConfig::new(LedbatVariant::Rfc6817);
    c.target = Some(Dur::from_secs_f64(target_ms / 1000.0));
    CcConfig::Ledbat(c)
}

fn class(name: &str) -> Class {
    let cc = if name == "ledbat" {
        ledbat(TARGET_MS as f64)
    } else {
        CcConfig::from_name(name).expect("built-in name")
    };
    Class {
        name: name.into(),
        cc,
    }
}

/// One configuration: which figure, the classes, the policy and buffer.
#[derive(Clone, Debug)]
struct Config {
    fig: &'static str,
    population: String,
    policy: Policy,
    buffer: u64,
    target_ratio: Option<f64>,
    classes: Vec<Class>,
}

fn spec(c: &Config, quick: bool) -> SwarmSpec {
    let leechers = if quick { 30 } else { 100 };
    SwarmSpec {
        leechers,
        arrival_mean: Dur::from_secs(10),
        transient: leechers / 2,
        pieces: PIECES,
        piece_len: PIECE_LEN,
        up: Rate::from_kbps(UP_KBPS),
        down: Rate::from_kbps(DOWN_KBPS),
        buffer: c.buffer,
        max_delay: Dur::from_millis(MAX_DELAY_MS),
        classes: c.classes.clone(),
        stay: c.policy.stay(),
        pipeline: 5,
        slots: 3,
        tracker_peers: 40,
        min_peers: 20,
        limit: Dur::from_secs(6 * 3600),
    }
}

fn configs() -> Vec<Config> {
    let mut v = Vec::new();
    let cfg = |fig, population: &str, policy, buffer, classes: Vec<Class>| Config {
        fig,
        population: population.into(),
        policy,
        buffer,
        target_ratio: None,
        classes,
    };
    for policy in Policy::ALL {
        v.push(cfg(
            "fig8",
            "newreno",
            policy,
            BUFFER,
            vec![class("newreno")],
        ));
        v.push(cfg("fig8", "ledbat", policy, BUFFER, vec![class("ledbat")]));
        v.push(cfg(
            "fig8",
            "50-50",
            policy,
            BUFFER,
            vec![class("newreno"), class("ledbat")],
        ));
    }
    for b in BUFFERS.into_iter().filter(|&b| b != BUFFER) {
        v.push(cfg(
            "fig9b",
            "50-50",
            Policy::RandomStay,
            b,
            vec![class("newreno"), class("ledbat")],
        ));
    }
    for p in ["vegas", "lp", "nice"] {
        v.push(cfg("fig10", p, Policy::RandomStay, BUFFER, vec![class(p)]));
        v.push(cfg(
            "fig11",
            &format!("newreno-{p}"),
            Policy::RandomStay,
            BUFFER,
            vec![class("newreno"), class(p)],
        ));
    }
    for r in TARGET_RATIOS.into_iter().filter(|&r| r != 1.0) {
        let t1 = TARGET_MS as f64 * r;
        v.push(Config {
            fig: "fig12",
            population: format!("ledbat τ1/τ2 = {r}"),
            policy: Policy::RandomStay,
            buffer: BUFFER,
            target_ratio: Some(r),
            classes: vec![
                Class {
                    name: format!("ledbat τ={t1} ms"),
                    cc: ledbat(t1),
                },
                Class {
                    name: format!("ledbat τ={TARGET_MS} ms"),
                    cc: ledbat(TARGET_MS as f64),
                },
            ],
        });
    }
    v
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
}

#[derive(Serialize)]
struct Summary {
    paper: &'static str,
    constants: serde_json::Value,
    rows: Vec<Row>,
    duplicate_block_share: f64,
    events: u64,
    claims: Vec<Claim>,
    wall_s: f64,
}

/// P(queue > q) for every q of a histogram of queue samples.
fn ccdf(hist: &[u64]) -> Vec<f64> {
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
fn pkts_ms(pkts: f64) -> f64 {
    pkts * 1500.0 * 8.0 / UP_KBPS as f64
}

fn run(opts: &ReproOpts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
    #[allow(clippy::disallowed_methods)] // wall time for the summary only
    let t0 = std::time::Instant::now();
    let dir = opts.out.as_path();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let seeds = opts.seeds_or(10, 2) as u64;
    let cfgs = configs();
    let mut jobs = Vec::new();
    for (k, c) in cfgs.iter().enumerate() {
        for s in 0..seeds {
            jobs.push((k, spec(c, opts.quick), s + 1));
        }
    }
    progress.note(&format!(
        "{} swarm configurations × {seeds} runs ({} leechers each)",
        cfgs.len(),
        jobs[0].1.leechers
    ));
    progress.start("swarms", jobs.len() as u64);
    let res: Vec<SwarmResult> = par_map(jobs, opts.jobs, progress, |(_, sp, seed)| {
        run_swarm(&sp, seed)
    })
    .into_iter()
    .collect::<Result<Vec<_>, String>>()
    .map_err(anyhow::Error::msg)?;
    progress.finish();
    if let Some(e) = res.iter().flat_map(|r| r.errors.iter()).next() {
        anyhow::bail!("a swarm peer reported an error: {e}");
    }

    let mut rows = Vec::new();
    let mut cdfs: Vec<(String, Vec<f64>)> = Vec::new();
    let mut ccdfs: Vec<(String, Vec<u64>)> = Vec::new();
    // The same cases as columns for queue_ccdf.csv: fig, population,
    // policy, buffer_pkts, class (as swarm.csv names them).
    let mut ccdf_keys: Vec<[String; 5]> = Vec::new();
    for (k, c) in cfgs.iter().enumerate() {
        let runs = &res[k * seeds as usize..(k + 1) * seeds as usize];
        for (ci, cl) in c.classes.iter().enumerate() {
            let dl: Vec<f64> = runs
                .iter()
                .flat_map(|r| {
                    r.completions
                        .iter()
                        .filter(|x| x.class == ci)
                        .map(|x| x.download_s)
                })
                .collect();
            let mut hist = vec![0u64; c.buffer as usize + 1];
            for r in runs {
                for (h, x) in hist.iter_mut().zip(&r.queue_hist[ci]) {
                    *h += x;
                }
            }
            let n: u64 = hist.iter().sum();
            let qmean = hist
                .iter()
                .enumerate()
                .map(|(i, &x)| i as f64 * x as f64)
                .sum::<f64>()
                / n.max(1) as f64;
            let over = hist.iter().skip(101).sum::<u64>() as f64 / n.max(1) as f64;
            // Downloads of one run are not independent: the interval is
            // over the runs' means.
            let run_means: Vec<f64> = runs
                .iter()
                .filter_map(|r| {
                    let v: Vec<f64> = r
                        .completions
                        .iter()
                        .filter(|x| x.class == ci)
                        .map(|x| x.download_s)
                        .collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                })
                .collect();
            let m = dl.iter().sum::<f64>() / dl.len().max(1) as f64;
            let ci90 = mean_ci90(&run_means).1;
            let label = format!(
                "{} / {} / {} pkts / {}",
                c.fig,
                c.population,
                c.buffer,
                c.policy.name()
            );
            if c.fig == "fig8" {
                cdfs.push((format!("{label} / {}", cl.name), dl.clone()));
                ccdfs.push((format!("{label} / {}", cl.name), hist.clone()));
                ccdf_keys.push([
                    c.fig.to_string(),
                    c.population.to_string(),
                    c.policy.name().to_string(),
                    c.buffer.to_string(),
                    cl.name.to_string(),
                ]);
            }
            rows.push(Row {
                fig: c.fig,
                population: c.population.clone(),
                policy: c.policy,
                buffer_pkts: c.buffer,
                target_ratio: c.target_ratio,
                class: cl.name.clone(),
                downloads: dl.len(),
                mean_s: m,
                ci90_s: ci90,
                p25_s: quantile(&dl, 0.25),
                median_s: quantile(&dl, 0.5),
                p75_s: quantile(&dl, 0.75),
                queue_mean_pkts: qmean,
                queue_mean_ms: pkts_ms(qmean),
                queue_over_100: over,
                runs_finished: runs.iter().filter(|r| r.finished).count(),
                runs: runs.len(),
            });
        }
    }
    let claims = claims(&rows);

    let header = [
        "fig",
        "population",
        "policy",
        "buffer_pkts",
        "target_ratio",
        "class",
        "downloads",
        "mean_s",
        "ci90_s",
        "p25_s",
        "median_s",
        "p75_s",
        "queue_mean_pkts",
        "queue_mean_ms",
        "queue_over_100",
        "runs_finished",
        "runs",
    ];
    let csv: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.fig.into(),
                r.population.clone(),
                r.policy.name().into(),
                r.buffer_pkts.to_string(),
                r.target_ratio.map_or(String::new(), |x| x.to_string()),
                r.class.clone(),
                r.downloads.to_string(),
                format!("{:.2}", r.mean_s),
                format!("{:.2}", r.ci90_s),
                format!("{:.2}", r.p25_s),
                format!("{:.2}", r.median_s),
                format!("{:.2}", r.p75_s),
                format!("{:.2}", r.queue_mean_pkts),
                format!("{:.1}", r.queue_mean_ms),
                format!("{:.4}", r.queue_over_100),
                r.runs_finished.to_string(),
                r.runs.to_string(),
            ]
        })
        .collect();
    write_csv(&dir.join("swarm.csv"), &header, &csv)?;
    let mut dl_rows = Vec::new();
    for (k, c) in cfgs.iter().enumerate() {
        for (run, r) in res[k * seeds as usize..(k + 1) * seeds as usize]
            .iter()
            .enumerate()
        {
            for x in &r.completions {
                dl_rows.push(vec![
                    c.fig.to_string(),
                    c.population.clone(),
                    c.policy.name().to_string(),
                    c.buffer.to_string(),
                    c.classes[x.class].name.clone(),
                    (run + 1).to_string(),
                    x.rank.to_string(),
                    format!("{:.2}", x.joined_s),
                    format!("{:.2}", x.download_s),
                ]);
            }
        }
    }
    write_csv(
        &dir.join("downloads.csv"),
        &[
            "fig",
            "population",
            "policy",
            "buffer_pkts",
            "class",
            "run",
            "rank",
            "joined_s",
            "download_s",
        ],
        &dl_rows,
    )?;
    let mut q_rows = Vec::new();
    for ((_, h), key) in ccdfs.iter().zip(&ccdf_keys) {
        for (q, p) in ccdf(h).into_iter().enumerate() {
            let mut row = key.to_vec();
            row.extend([q.to_string(), format!("{p:.6}")]);
            q_rows.push(row);
        }
    }
    write_csv(
        &dir.join("queue_ccdf.csv"),
        &[
            "fig",
            "population",
            "policy",
            "buffer_pkts",
            "class",
            "queue_pkts",
            "p_greater",
        ],
        &q_rows,
    )?;

    let mut files = vec![
        "swarm.csv".to_string(),
        "downloads.csv".into(),
        "queue_ccdf.csv".into(),
    ];
    plots::write(dir, &rows, &cdfs, &ccdfs, &mut files)?;
    let dup_bytes: u64 = res.iter().map(|r| r.duplicate_blocks).sum::<u64>()
        * hopwise_proto::bittorrent::BLOCK as u64;
    let downloaded: u64 = res.iter().map(|r| r.downloaded).sum();
    write_summary(
        dir,
        &Summary {
            paper: "Testa, Rossi et al., Delay-based congestion control: Flow vs. BitTorrent swarm perspectives (seed 003), §5",
            constants: serde_json::json!({
                "file_bytes": PIECES as u64 * PIECE_LEN as u64,
                "pieces": PIECES,
                "piece_bytes": PIECE_LEN,
                "up_kbps": UP_KBPS,
                "down_kbps": DOWN_KBPS,
                "buffer_pkts": BUFFER,
                "one_way_delay_ms": format!("uniform 0-{MAX_DELAY_MS}"),
                "ledbat_target_ms": TARGET_MS,
                "leechers": spec(&cfgs[0], opts.quick).leechers,
                "arrival_rate_hz": 0.1,
                "counted": "completions after the first half",
                "pipeline_blocks": 5,
                "unchoke_slots": "3 + 1 optimistic",
                "control": "TCP NewReno, one connection per neighbour pair",
            }),
            rows: rows.clone(),
            duplicate_block_share: dup_bytes as f64 / downloaded.max(1) as f64,
            events: res.iter().map(|r| r.events).sum(),
            claims: claims.clone(),
            wall_s: t0.elapsed().as_secs_f64(),
        },
    )?;
    files.insert(0, "summary.json".into());
    Ok(Outcome {
        claims,
        files,
        data: Vec::new(),
    })
}

fn find<'a>(rows: &'a [Row], fig: &str, pop: &str, policy: Policy, class: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.fig == fig && r.population == pop && r.policy == policy && r.class == class)
}

/// The paper's claims against our rows.
pub fn claims(rows: &[Row]) -> Vec<Claim> {
    let mut v = Vec::new();
    let f8 = |pop: &str, pol: Policy, class: &str| find(rows, "fig8", pop, pol, class);
    // Fig. 8a: never leave, populations alike.
    let means: Vec<(String, f64)> = [
        ("newreno", "newreno"),
        ("ledbat", "ledbat"),
        ("50-50", "newreno"),
        ("50-50", "ledbat"),
    ]
    .iter()
    .filter_map(|(p, c)| {
        // "all newreno" for a homogeneous swarm, "50-50: ledbat peers" for a mix.
        let name = if p == c {
            format!("all {p}")
        } else {
            format!("{p}: {c} peers")
        };
        f8(p, Policy::NeverLeave, c).map(|r| (name, r.mean_s))
    })
    .collect();
    if !means.is_empty() {
        let hi = means.iter().map(|x| x.1).fold(f64::MIN, f64::max);
        let lo = means.iter().map(|x| x.1).fold(f64::MAX, f64::min);
        v.push(crate::legacy_claim(
            "Fig. 8a",
            "seeds never leave: no difference between congestion controls (max/min of the means ≤ 1.15)",
            format!(
                "{}; max/min {:.2}",
                means
                    .iter()
                    .map(|(n, m)| format!("{n} {m:.0} s"))
                    .collect::<Vec<_>>()
                    .join(", "),
                hi / lo
            ),
            hi / lo <= 1.15,
        ));
    }
    // Fig. 9a: in 50-50 swarms LEDBAT peers finish sooner.
    for pol in [Policy::RandomStay, Policy::ImmediateLeave] {
        if let (Some(t), Some(l)) = (f8("50-50", pol, "newreno"), f8("50-50", pol, "ledbat")) {
            v.push(crate::legacy_claim(
                "Fig. 9a",
                format!(
                    "50-50 swarm, {}: LEDBAT peers finish sooner than NewReno peers (by more than the 90 % intervals over runs)",
                    pol.name()
                ),
                format!(
                    "LEDBAT {:.0} s (±{:.0}), NewReno {:.0} s (±{:.0}): {:+.0} %",
                    l.mean_s,
                    l.ci90_s,
                    t.mean_s,
                    t.ci90_s,
                    (l.mean_s / t.mean_s - 1.0) * 100.0
                ),
                t.mean_s - l.mean_s > l.ci90_s.hypot(t.ci90_s),
            ));
        }
    }
    // Fig. 8 right: queues.
    if let (Some(t), Some(l)) = (
        f8("newreno", Policy::RandomStay, "newreno"),
        f8("ledbat", Policy::RandomStay, "ledbat"),
    ) {
        v.push(crate::legacy_claim(
            "Fig. 8b (CCDF)",
            "random stay: NewReno uplink queues exceed 100 packets in about 20 % of samples (we ask ≥ 10 %); LEDBAT queues stay near the target of 100 ms (we ask a mean ≤ 300 ms: control traffic and ACKs share the queue)",
            format!(
                "NewReno > 100 packets in {:.0} % of samples (mean {:.0} packets); LEDBAT mean {:.1} packets ({:.0} ms), > 100 in {:.1} %",
                t.queue_over_100 * 100.0, t.queue_mean_pkts, l.queue_mean_pkts, l.queue_mean_ms, l.queue_over_100 * 100.0
            ),
            t.queue_over_100 >= 0.1 && l.queue_mean_ms <= 3.0 * TARGET_MS as f64,
        ));
    }
    // Fig. 9b: the gap grows with the buffer.
    let gap = |b: u64| {
        let pick = |c: &str| {
            rows.iter().find(|r| {
                r.population == "50-50"
                    && r.policy == Policy::RandomStay
                    && r.buffer_pkts == b
                    && r.class == c
            })
        };
        match (pick("newreno"), pick("ledbat")) {
            (Some(t), Some(l)) => Some(t.mean_s / l.mean_s),
            _ => None,
        }
    };
    let gaps: Vec<(u64, f64)> = BUFFERS
        .iter()
        .filter_map(|&b| gap(b).map(|g| (b, g)))
        .collect();
    if gaps.len() >= 2 {
        let first = gaps[0];
        let last = gaps[gaps.len() - 1];
        v.push(crate::legacy_claim(
            "Fig. 9b",
            "the larger the access buffer, the more NewReno peers lose to LEDBAT peers (NewReno/LEDBAT rises from the smallest to the largest buffer and ends above 1)",
            gaps.iter()
                .map(|(b, g)| format!("{b} pkts: NewReno/LEDBAT {g:.2}"))
                .collect::<Vec<_>>()
                .join(", "),
            last.1 > first.1 && last.1 > 1.0,
        ));
    }
    // Fig. 10: homogeneous swarms alike; buffers higher for NewReno and LP.
    let homo: Vec<&Row> = ["newreno", "ledbat", "vegas", "lp", "nice"]
        .iter()
        .filter_map(|p| {
            rows.iter().find(|r| {
                r.population == *p && r.policy == Policy::RandomStay && r.buffer_pkts == BUFFER
            })
        })
        .collect();
    if homo.len() == 5 {
        let hi = homo.iter().map(|r| r.mean_s).fold(f64::MIN, f64::max);
        let lo = homo.iter().map(|r| r.mean_s).fold(f64::MAX, f64::min);
        v.push(crate::legacy_claim(
            "Fig. 10a",
            "homogeneous swarms (random stay): completion time roughly the same whatever the protocol (max/min ≤ 1.25)",
            format!("{}; max/min {:.2}", homo.iter().map(|r| format!("{} {:.0} s", r.population, r.mean_s)).collect::<Vec<_>>().join(", "), hi / lo),
            hi / lo <= 1.25,
        ));
        let q = |p: &str| {
            homo.iter()
                .find(|r| r.population == p)
                .map_or(f64::NAN, |r| r.queue_mean_pkts)
        };
        let loss_min = q("newreno").min(q("lp"));
        let delay_max = q("vegas").max(q("nice")).max(q("ledbat"));
        v.push(crate::legacy_claim(
            "Fig. 10b",
            "mean buffer occupancy higher for NewReno and LP than for Vegas, NICE and LEDBAT",
            homo.iter()
                .map(|r| format!("{} {:.1}", r.population, r.queue_mean_pkts))
                .collect::<Vec<_>>()
                .join(", ")
                + " packets",
            loss_min > delay_max,
        ));
    }
    // Fig. 11: NewReno peers slower in every mix, least so against LP.
    let mut diffs = Vec::new();
    for p in ["ledbat", "vegas", "lp", "nice"] {
        let pop = if p == "ledbat" {
            "50-50".to_string()
        } else {
            format!("newreno-{p}")
        };
        let pick = |c: &str| {
            rows.iter().find(|r| {
                r.population == pop
                    && r.policy == Policy::RandomStay
                    && r.buffer_pkts == BUFFER
                    && r.class == c
            })
        };
        if let (Some(t), Some(o)) = (pick("newreno"), pick(p)) {
            diffs.push((p, t.mean_s / o.mean_s));
        }
    }
    if diffs.len() == 4 {
        let all_slower = diffs.iter().all(|d| d.1 > 1.0);
        let lp = diffs.iter().find(|d| d.0 == "lp").map_or(f64::NAN, |d| d.1);
        let lp_least = diffs.iter().all(|d| d.0 == "lp" || d.1 >= lp);
        v.push(crate::legacy_claim(
            "Fig. 11a",
            "50-50 mixes: NewReno peers take longer than the other half for every protocol, least so against LP",
            diffs.iter().map(|(p, g)| format!("vs {p}: NewReno/other {g:.2}")).collect::<Vec<_>>().join(", "),
            all_slower && lp_least,
        ));
    }
    // Fig. 12: lower target, sooner; much higher, later.
    let f12: Vec<(f64, f64, f64, f64)> = TARGET_RATIOS
        .iter()
        .filter_map(|&r| {
            let t1 = format!("ledbat τ={} ms", TARGET_MS as f64 * r);
            let t2 = format!("ledbat τ={TARGET_MS} ms");
            let a = rows
                .iter()
                .find(|x| x.target_ratio == Some(r) && x.class == t1)?;
            let b = rows
                .iter()
                .find(|x| x.target_ratio == Some(r) && x.class == t2)?;
            Some((r, a.mean_s / b.mean_s, a.queue_mean_ms, b.queue_mean_ms))
        })
        .collect();
    if !f12.is_empty() {
        let low = f12.iter().find(|x| x.0 == 0.25);
        let high = f12
            .iter()
            .filter(|x| x.0 >= 5.0)
            .map(|x| x.1)
            .fold(f64::MAX, f64::min);
        let text = f12
            .iter()
            .map(|(r, g, q1, _)| format!("τ1/τ2 {r}: {g:.2} ({q1:.0} ms queued)"))
            .collect::<Vec<_>>()
            .join(", ");
        v.push(crate::legacy_claim(
            "Fig. 12a",
            "heterogeneous targets: the lower-target half finishes sooner (τ1 = 25 ms); for every τ1/τ2 ≥ 5 the higher-target half is slower (paper: up to +30 %, queue near 630 ms; reported, not checked)",
            format!("τ1-half / τ2-half completion time: {text}"),
            low.is_some_and(|x| x.1 < 1.0) && high > 1.0,
        ));
    }
    v
}
