//! Fig. 6b/c (seed 002 §4, "Inter-Fairness"): bulk circuits through one
//! relay against `nTcp` loss-based TCP downloads performed on the relay's
//! own host, in two settings:
//!
//! * **Fig. 6b, `bucket`**: the relay's token bucket is 1 MB/s, its access
//!   link 2 MB/s;
//! * **Fig. 6c, `access-link`**: the bucket is 10 MB/s ("virtually
//!   unlimited") and the 2 MB/s access link is the bottleneck.
//!
//! The measure is the share of the access link's throughput left to the TCP
//! downloads ([`InterRow::tcp_share`]).
//!
//! ## Topology (a star on one switch)
//!
//! * The relay under test `R` is every circuit's **middle**: its cells come
//!   in over `R`'s access link (switch → `R`), the direction the downloads
//!   use, and leave over the other direction. (An exit would produce the
//!   cells itself and not compete on the incoming side at all.)
//! * `R`'s access link: [`ACCESS_RATE`] (2 MB/s) each way, drop-tail
//!   [`ACCESS_QUEUE`] (100 packets, nstor's ns-3 default).
//! * Circuit `i`: client `op{i}` → guard `g{i}` → `R` → exit `x{i}`, server at
//!   the exit; every circuit has its own guard and exit (a relay's circuits
//!   come from many peers), so vanilla Tor runs one TCP connection per
//!   circuit into `R` and BackTap one hop per circuit. Guards and exits have
//!   no bucket and 1 Gbit/s links, clients 1 Gbit/s: only `R` can limit.
//! * Every access link has a one-way delay of `inter_rtt_ms / 12`: each
//!   circuit has the end-to-end RTT `inter_rtt_ms` (80 ms), as in Fig. 5's
//!   star, and every pair of hosts is `inter_rtt_ms / 3` apart, so a
//!   download has the RTT of the relay hop it competes with (vanilla's
//!   exit → `R` TCP connection, BackTap's exit → `R` hop): the comparison is
//!   between congestion controllers, not RTTs.
//! * The downloads: `nTcp` bulk TCP flows from a host `dl` (1 Gbit/s link)
//!   to `R` (the relay's machine is the receiver), CUBIC ([`DOWNLOAD_CC`]:
//!   the Linux stack of the relay's host, which the relays' own TCP runs
//!   too, as in nstor) with the default Linux-like TCP (SACK, timestamps,
//!   4 MiB buffers).
//! * Circuits: bulk (5 MiB requests back to back, 20 ms mean server delay),
//!   starting uniformly in the first second; downloads start in the first
//!   second too. Everything is measured in `[inter_from_s, inter_secs]`.

use super::fairness::RW_INTERVAL;
use super::topo::{bulk, ACCESS_QUEUE, RELAY_ACCESS, RESPONSE_DELAY};
use super::{transport, Plan, Speed, Transport};
use crate::backtap::common::{round_to, w_rate};
use hopwise_experiment::{plural, Claim, Cmp, Ctx, Estimate, Outputs};
use hopwise_plot::{BarChart, Figure};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{
    DirSpec, FlowSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec, Traffic as FlowTraffic,
};
use hopwise_sim::Sim;
use hopwise_tor::{Access, BucketSpec, CircuitSpec, TorNet};
use serde::Serialize;

/// The relay under test.
pub const RELAY: &str = "R";
/// The host the TCP downloads come from.
pub const DOWNLOAD_SERVER: &str = "dl";
/// The relay's access link: 2 MB/s each way (seed 002 §4).
pub const ACCESS_RATE: Rate = Rate::from_bps(16_000_000);
/// Congestion control of the competing downloads.
pub const DOWNLOAD_CC: &str = "cubic";

/// One of the two settings of Fig. 6b/c.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Setting {
    /// `bucket` (Fig. 6b) or `access-link` (Fig. 6c).
    pub key: &'static str,
    pub figure: &'static str,
    pub label: &'static str,
    /// The relay's token bucket (bytes per second; burst = rate).
    pub bucket: u64,
}

/// Fig. 6b (bucket 1 MB/s on the 2 MB/s link) and Fig. 6c (bucket 10 MB/s,
/// the link is the bottleneck).
pub fn settings() -> Vec<Setting> {
    vec![
        Setting {
            key: "bucket",
            figure: "Fig. 6b",
            label: "relay bucket 1 MB/s, access link 2 MB/s",
            bucket: 1_000_000,
        },
        Setting {
            key: "access-link",
            figure: "Fig. 6c",
            label: "relay bucket 10 MB/s, access link 2 MB/s (the bottleneck)",
            bucket: 10_000_000,
        },
    ]
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct InterRun {
    pub setting: &'static str,
    pub transport: String,
    pub circuits: usize,
    pub n_tcp: usize,
    pub seed: u64,
    /// Payload goodput of the downloads and of the circuits (B/s).
    #[serde(rename = "tcp_Bps")]
    pub tcp_rate: f64,
    #[serde(rename = "tor_Bps")]
    pub tor_rate: f64,
    /// `tcp_rate / (tcp_rate + tor_rate)`.
    pub tcp_share: f64,
    /// Bytes on the wire into the relay over the link's capacity.
    #[serde(rename = "link_utilization")]
    pub link_util: f64,
    /// Packets dropped at the switch's port towards the relay.
    pub drops: u64,
    pub events: u64,
    pub wall_s: f64,
    pub corrupt: u64,
}

/// One point of Fig. 6b/c: the mean over seeds (a row of `inter_fairness`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct InterRow {
    pub setting: String,
    pub transport: String,
    pub circuits: usize,
    pub n_tcp: usize,
    /// Share of the access link's payload throughput (downloads + circuits)
    /// left to the TCP downloads, in the measurement window.
    pub tcp_share: f64,
    pub runs: usize,
    #[serde(rename = "tcp_Bps")]
    pub tcp_rate: f64,
    #[serde(rename = "tor_Bps")]
    pub tor_rate: f64,
    #[serde(rename = "link_utilization")]
    pub link_util: f64,
    pub drops: f64,
}

/// Everything Fig. 6b/c produced.
#[derive(Clone, Debug, Default)]
pub struct InterOut {
    /// The settings run (each has a figure).
    pub settings: Vec<Setting>,
    pub rows: Vec<InterRow>,
    pub runs: Vec<InterRun>,
    pub speed: Vec<Speed>,
}

impl InterOut {
    pub fn row(&self, setting: &str, t: &str, circuits: usize, n_tcp: usize) -> Option<&InterRow> {
        self.rows.iter().find(|r| {
            r.setting == setting && r.transport == t && r.circuits == circuits && r.n_tcp == n_tcp
        })
    }
}

/// The network of one run: see the module doc.
pub fn net(plan: &Plan, s: &Setting, t: &Transport, circuits: usize, seed: u64) -> TorNet {
    let mut cfg = t.config();
    cfg.response_delay = RESPONSE_DELAY;
    cfg.rw_interval = RW_INTERVAL;
    cfg.queue_interval = None;
    let mut net = TorNet::with_config(cfg);
    let d = access_delay(plan);
    let fast = Access::new(RELAY_ACCESS, d).queue(ACCESS_QUEUE);
    net.relay(
        RELAY,
        Some(BucketSpec::new(s.bucket).refill(t.refill.refill())),
        Access::new(ACCESS_RATE, d).queue(ACCESS_QUEUE),
    );
    let mut rng = Rng::for_component(seed, "backtap-network/inter/starts");
    for i in 0..circuits {
        let (op, g, x) = (format!("op{i}"), format!("g{i}"), format!("x{i}"));
        net.client(&op, fast)
            .relay(&g, None, fast)
            .relay(&x, None, fast);
        net.circuit(
            CircuitSpec::new(&format!("c{i}"), &op, &[&g, RELAY, &x], bulk())
                .start(Dur::from_secs_f64(rng.f64()))
                .trace(true),
        );
    }
    net
}

/// One-way delay of every access link: `inter_rtt_ms / 12`, so that a
/// circuit's end-to-end RTT is `inter_rtt_ms` and every pair of hosts
/// (relay hop or download) is `inter_rtt_ms / 3` apart.
fn access_delay(plan: &Plan) -> Dur {
    Dur::from_nanos(Dur::from_millis(plan.inter_rtt_ms).as_nanos() / 12)
}

/// Runs one point on one seed.
pub fn run_one(
    plan: &Plan,
    s: &Setting,
    t: &Transport,
    circuits: usize,
    n_tcp: usize,
    seed: u64,
) -> anyhow::Result<InterRun> {
    let net = net(plan, s, t, circuits, seed);
    let name = format!("fig6-{}-{}-{circuits}-{n_tcp}-{seed}", s.key, t.key);
    let mut sc = net
        .scenario(&name, seed, Dur::from_secs(plan.inter_secs))
        .map_err(anyhow::Error::msg)?;
    sc.measure.warmup = Dur::from_secs(plan.inter_from_s);
    sc.start_jitter = Dur::SECOND;
    sc.nodes.push(NodeSpec {
        name: DOWNLOAD_SERVER.into(),
        kind: NodeKind::Host,
    });
    let dir = DirSpec {
        rate: RELAY_ACCESS,
        delay: access_delay(plan),
        queue: QueueSpec::DropTail {
            limit: ACCESS_QUEUE,
        },
        loss: 0.0,
        model: Default::default(),
    };
    sc.links.push(LinkSpec {
        name: format!("{DOWNLOAD_SERVER}~{}", hopwise_tor::net::DEFAULT_SWITCH),
        a: DOWNLOAD_SERVER.into(),
        b: hopwise_tor::net::DEFAULT_SWITCH.into(),
        ab: dir.clone(),
        ba: dir,
    });
    let cc = CcConfig::from_name(DOWNLOAD_CC).map_err(anyhow::Error::msg)?;
    let first_flow = sc.flows.len();
    for k in 0..n_tcp {
        sc.flows.push(FlowSpec {
            name: format!("download{k}"),
            from: DOWNLOAD_SERVER.into(),
            to: RELAY.into(),
            cc: cc.clone(),
            tcp: TcpConfig::default(),
            start: Dur::ZERO,
            stop: None,
            traffic: FlowTraffic::Bulk,
            bidir: false,
            group: None,
        });
    }
    let mut sim = Sim::new(&sc).map_err(anyhow::Error::msg)?;
    let inst = net.install(&mut sim).map_err(anyhow::Error::msg)?;
    #[allow(clippy::disallowed_methods)] // wall time for the speed report only
    let t0 = std::time::Instant::now();
    sim.run();
    let wall_s = t0.elapsed().as_secs_f64();
    let res = inst.results(&sim);
    let (from, end) = (plan.inter_from_s as f64, plan.inter_secs as f64);
    let span = end - from;
    let tcp_bytes: u64 = sim
        .flows()
        .skip(first_flow)
        .map(|f| sim.endpoint(sim.flow(f).ends()[1]).received_after_warmup())
        .sum();
    let tcp_rate = tcp_bytes as f64 / span;
    let dt = RW_INTERVAL.as_secs_f64();
    let tor_rate: f64 = res
        .circuits
        .iter()
        .map(|c| w_rate(&c.w, dt, from, end))
        .filter(|x| x.is_finite())
        .sum();
    let hub = sim.node_id(hopwise_tor::net::DEFAULT_SWITCH);
    let relay = sim.node_id(RELAY);
    let down = sim
        .ifaces()
        .map(|i| sim.iface(i))
        .find(|f| Some(f.from()) == hub && Some(f.to()) == relay)
        .ok_or_else(|| anyhow::anyhow!("no port from the switch to the relay"))?;
    Ok(InterRun {
        setting: s.key,
        transport: t.key.into(),
        circuits,
        n_tcp,
        seed,
        tcp_rate,
        tor_rate,
        tcp_share: tcp_rate / (tcp_rate + tor_rate),
        // At most one packet over (counted when it starts): clamp at 1.
        link_util: (down.stats().tx_bytes as f64 / span / (ACCESS_RATE.bps() as f64 / 8.0))
            .min(1.0),
        drops: down.stats().drops,
        events: res.events,
        wall_s,
        corrupt: res.circuits.iter().map(|c| c.corrupt).sum(),
    })
}

/// Runs both settings.
pub fn run(plan: &Plan, ctx: &Ctx<'_, InterOut>) -> anyhow::Result<InterOut> {
    run_settings(plan, &settings(), ctx)
}

/// Runs the given settings for every circuit count, `nTcp`, transport and
/// seed of the plan.
pub fn run_settings(
    plan: &Plan,
    settings: &[Setting],
    ctx: &Ctx<'_, InterOut>,
) -> anyhow::Result<InterOut> {
    let ts: Vec<Transport> = plan
        .inter_transports
        .iter()
        .chain(&plan.inter_variants)
        .map(|k| transport(k).ok_or_else(|| anyhow::anyhow!("unknown transport {k}")))
        .collect::<anyhow::Result<_>>()?;
    let mut jobs: Vec<(Setting, Transport, usize, usize, u64)> = Vec::new();
    for s in settings {
        for t in &ts {
            for &n in &plan.inter_circuits {
                for &k in &plan.inter_n_tcp {
                    for seed in 1..=plan.inter_seeds as u64 {
                        jobs.push((*s, t.clone(), n, k, seed));
                    }
                }
            }
        }
    }
    // Most circuits first, so that the slowest runs do not start last.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[b].2.cmp(&jobs[a].2).then(a.cmp(&b)));
    ctx.progress.start("Fig. 6b/c", jobs.len() as u64);
    let results = ctx.par_map(order.clone(), |i| {
        let (s, t, n, k, seed) = &jobs[i];
        run_one(plan, s, t, *n, *k, *seed)
    });
    ctx.progress.finish();
    let mut by_job: Vec<Option<InterRun>> = vec![None; jobs.len()];
    for (i, r) in order.into_iter().zip(results) {
        let r = r?;
        anyhow::ensure!(
            r.corrupt == 0,
            "{} {} {} circuits: corrupt bytes",
            r.setting,
            r.transport,
            r.circuits
        );
        by_job[i] = Some(r);
    }
    let runs: Vec<InterRun> = by_job.into_iter().flatten().collect();
    let mut out = InterOut {
        settings: settings.to_vec(),
        ..InterOut::default()
    };
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    for s in settings {
        for t in &ts {
            for &n in &plan.inter_circuits {
                for &k in &plan.inter_n_tcp {
                    let rs: Vec<&InterRun> = runs
                        .iter()
                        .filter(|r| {
                            r.setting == s.key
                                && r.transport == t.key
                                && r.circuits == n
                                && r.n_tcp == k
                        })
                        .collect();
                    let col = |f: fn(&InterRun) -> f64| rs.iter().map(|r| f(r)).collect();
                    out.rows.push(InterRow {
                        setting: s.key.into(),
                        transport: t.key.into(),
                        circuits: n,
                        n_tcp: k,
                        tcp_share: mean(col(|r| r.tcp_share)),
                        runs: rs.len(),
                        tcp_rate: mean(col(|r| r.tcp_rate)),
                        tor_rate: mean(col(|r| r.tor_rate)),
                        link_util: mean(col(|r| r.link_util)),
                        drops: mean(col(|r| r.drops as f64)),
                    });
                }
            }
        }
    }
    for t in &ts {
        let rs: Vec<&InterRun> = runs.iter().filter(|r| r.transport == t.key).collect();
        let wall: f64 = rs.iter().map(|r| r.wall_s).sum();
        let events: f64 = rs.iter().map(|r| r.events as f64).sum();
        out.speed.push(Speed {
            experiment: "fig6bc".into(),
            transport: t.key.into(),
            runs: rs.len(),
            simulated_s: plan.inter_secs as f64,
            wall_s_per_run: wall / rs.len().max(1) as f64,
            events_per_run: events / rs.len().max(1) as f64,
            events_per_s: events / wall,
        });
    }
    out.runs = runs;
    Ok(out)
}

/// A row of `inter.csv` (bytes per second whole, drops to a tenth).
#[derive(Clone, Debug, Default, Serialize)]
struct InterCsvRow<'a> {
    setting: &'a str,
    transport: &'a str,
    circuits: usize,
    n_tcp: usize,
    runs: usize,
    tcp_share: f64,
    #[serde(rename = "tcp_Bps")]
    tcp_rate: f64,
    #[serde(rename = "tor_Bps")]
    tor_rate: f64,
    #[serde(rename = "link_utilization")]
    link_util: f64,
    drops: f64,
}

/// A row of `inter_runs.csv`.
#[derive(Clone, Debug, Default, Serialize)]
struct InterRunRow<'a> {
    setting: &'a str,
    transport: &'a str,
    circuits: usize,
    n_tcp: usize,
    seed: u64,
    tcp_share: f64,
    #[serde(rename = "tcp_Bps")]
    tcp_rate: f64,
    #[serde(rename = "tor_Bps")]
    tor_rate: f64,
    #[serde(rename = "link_utilization")]
    link_util: f64,
    drops: u64,
    events: u64,
    wall_s: f64,
}

/// `inter.csv`, `inter_runs.csv` and one figure per setting.
pub fn outputs(plan: &Plan, out: &InterOut, o: &mut Outputs) -> anyhow::Result<()> {
    let rows: Vec<InterCsvRow> = out
        .rows
        .iter()
        .map(|r| InterCsvRow {
            setting: &r.setting,
            transport: &r.transport,
            circuits: r.circuits,
            n_tcp: r.n_tcp,
            runs: r.runs,
            tcp_share: r.tcp_share,
            tcp_rate: round_to(r.tcp_rate, 0),
            tor_rate: round_to(r.tor_rate, 0),
            link_util: r.link_util,
            drops: round_to(r.drops, 1),
        })
        .collect();
    o.csv("inter.csv", &rows)?;
    let rows: Vec<InterRunRow> = out
        .runs
        .iter()
        .map(|r| InterRunRow {
            setting: r.setting,
            transport: &r.transport,
            circuits: r.circuits,
            n_tcp: r.n_tcp,
            seed: r.seed,
            tcp_share: r.tcp_share,
            tcp_rate: round_to(r.tcp_rate, 0),
            tor_rate: round_to(r.tor_rate, 0),
            link_util: r.link_util,
            drops: r.drops,
            events: r.events,
            wall_s: round_to(r.wall_s, 2),
        })
        .collect();
    o.csv("inter_runs.csv", &rows)?;
    plots(plan, out, o)
}

/// One SVG per setting: the downloads' share at each number of circuits,
/// a bar per transport, a panel per `nTcp`. (Categories rather than a log
/// axis, so that every sampled circuit count is labelled.)
fn plots(plan: &Plan, out: &InterOut, o: &mut Outputs) -> anyhow::Result<()> {
    for s in &out.settings {
        let runs = if plan.inter_seeds == 1 {
            "one run per bar".to_string()
        } else {
            format!("mean of {} runs per bar", plan.inter_seeds)
        };
        let mut fig = Figure::new(format!("{}: {}", s.figure, s.label), 1).panel_size(760, 320);
        for &k in &plan.inter_n_tcp {
            let mut chart = BarChart::new(format!(
                "nTcp = {k}: {} on the relay's host ({runs}, {}–{} s)",
                plural(k, "TCP download"),
                plan.inter_from_s,
                plan.inter_secs
            ))
            .x_label("circuits through the relay")
            .y_label("share of the link left to TCP")
            .y_range(0.0, 1.0);
            let mut any = false;
            for t in &plan.inter_transports {
                let bars: Vec<(String, f64)> = plan
                    .inter_circuits
                    .iter()
                    .filter_map(|&c| {
                        out.rows
                            .iter()
                            .find(|r| {
                                r.setting == s.key
                                    && r.transport == *t
                                    && r.n_tcp == k
                                    && r.circuits == c
                            })
                            .map(|r| (c.to_string(), r.tcp_share))
                    })
                    .collect();
                if bars.is_empty() {
                    continue;
                }
                any = true;
                let label = transport(t).map_or(t.to_string(), |x| x.label.to_string());
                chart = chart.group(label, bars);
            }
            if any {
                fig.push_panel(chart);
            }
        }
        let name = format!(
            "{}_{}.svg",
            s.figure.replace("Fig. ", "fig").to_lowercase(),
            s.key
        );
        o.svg(&name, &fig)?;
    }
    Ok(())
}

/// Mean of `tcp_share` over `nTcp` at one circuit count.
fn share_over_ntcp(out: &InterOut, setting: &str, t: &str, circuits: usize) -> Option<f64> {
    let v: Vec<f64> = out
        .rows
        .iter()
        .filter(|r| r.setting == setting && r.transport == t && r.circuits == circuits)
        .map(|r| r.tcp_share)
        .filter(|x| x.is_finite())
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Per seed, in seed order: the mean over `nTcp` of the downloads' share
/// (finite values) at one circuit count.
fn shares_by_seed(out: &InterOut, setting: &str, t: &str, circuits: usize) -> Vec<(u64, f64)> {
    let mut seeds: Vec<u64> = out
        .runs
        .iter()
        .filter(|r| r.setting == setting && r.transport == t && r.circuits == circuits)
        .map(|r| r.seed)
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds
        .into_iter()
        .filter_map(|seed| {
            let v: Vec<f64> = out
                .runs
                .iter()
                .filter(|r| {
                    r.setting == setting
                        && r.transport == t
                        && r.circuits == circuits
                        && r.seed == seed
                })
                .map(|r| r.tcp_share)
                .filter(|x| x.is_finite())
                .collect();
            (!v.is_empty()).then(|| (seed, v.iter().sum::<f64>() / v.len() as f64))
        })
        .collect()
}

/// The mean over seeds of `a − b`, paired by seed (the same seed draws the
/// same start times), with its t interval; no value without a common seed.
fn paired_difference(a: &[(u64, f64)], b: &[(u64, f64)]) -> Estimate {
    let d: Vec<f64> = a
        .iter()
        .filter_map(|(s, x)| b.iter().find(|y| y.0 == *s).map(|y| x - y.1))
        .collect();
    if d.is_empty() {
        return Estimate::exact(f64::NAN);
    }
    Estimate::mean_t90(&d)
}

/// Fig. 6b/c's claims. The shares are averaged over `nTcp`; a comparison
/// is judged by the per-seed difference, with a t interval over seeds.
pub fn claims(plan: &Plan, out: &InterOut) -> Vec<Claim> {
    let mut c = Vec::new();
    let (Some(&few), Some(&many)) = (
        plan.inter_circuits.iter().min(),
        plan.inter_circuits.iter().max(),
    ) else {
        return c;
    };
    let mut seen: Vec<&str> = out.rows.iter().map(|r| r.setting.as_str()).collect();
    seen.sort_unstable();
    seen.dedup();
    let shown: Vec<Setting> = settings()
        .into_iter()
        .filter(|s| seen.contains(&s.key))
        .collect();
    let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
    // The criterion, per setting at the smallest circuit count.
    let mut items = Vec::new();
    let mut measured = Vec::new();
    for s in &shown {
        let bt = share_over_ntcp(out, s.key, "backtap", few);
        let va = share_over_ntcp(out, s.key, "vanilla", few);
        items.push((
            format!("{} ({})", s.figure, s.key),
            paired_difference(
                &shares_by_seed(out, s.key, "backtap", few),
                &shares_by_seed(out, s.key, "vanilla", few),
            ),
        ));
        measured.push(format!(
            "{} ({}): BackTap {} vs vanilla {}",
            s.figure,
            s.key,
            f(bt),
            f(va)
        ));
    }
    c.push(
        Claim::new(
            "Fig. 6b/c",
            format!(
                "With few circuits ({few}), BackTap leaves the TCP downloads a larger share of the relay's 2 MB/s access link than vanilla Tor does, in both settings (share averaged over nTcp ∈ {:?})",
                plan.inter_n_tcp
            ),
        )
        .measured(format!(
            "{}; {} per point, window {}–{} s, {DOWNLOAD_CC} downloads",
            measured.join("; "),
            plural(plan.inter_seeds as usize, "run"),
            plan.inter_from_s,
            plan.inter_secs
        ))
        .each(
            "BackTap's share − vanilla's",
            items,
            Cmp::Above(0.0),
        ),
    );
    if many > few {
        let mut items = Vec::new();
        let mut measured = Vec::new();
        for s in &shown {
            let a = share_over_ntcp(out, s.key, "backtap", few);
            let b = share_over_ntcp(out, s.key, "backtap", many);
            items.push((
                s.figure.to_string(),
                paired_difference(
                    &shares_by_seed(out, s.key, "backtap", few),
                    &shares_by_seed(out, s.key, "backtap", many),
                ),
            ));
            measured.push(format!(
                "{}: {} {} → {} {}",
                s.figure,
                plural(few, "circuit"),
                f(a),
                plural(many, "circuit"),
                f(b)
            ));
        }
        c.push(
            Claim::new(
                "Fig. 6b/c",
                "Delay-based circuits compete better together: BackTap's circuits leave the downloads a smaller share with many circuits than with few (averaged over nTcp)",
            )
            .measured(measured.join("; "))
            .each(
                format!(
                    "BackTap's share with {} − with {}",
                    plural(few, "circuit"),
                    plural(many, "circuit")
                ),
                items,
                Cmp::Above(0.0),
            ),
        );
    }
    // Sensitivity variants beside BackTap (not judged).
    for v in &plan.inter_variants {
        let label = transport(v).map_or(v.to_string(), |t| t.label.to_string());
        let per_setting: Vec<String> = shown
            .iter()
            .map(|s| {
                let pairs: Vec<String> = plan
                    .inter_circuits
                    .iter()
                    .map(|&n| {
                        format!(
                            "{n}: {} ({})",
                            f(share_over_ntcp(out, s.key, v, n)),
                            f(share_over_ntcp(out, s.key, "backtap", n))
                        )
                    })
                    .collect();
                format!("{} ({}): {}", s.figure, s.key, pairs.join(", "))
            })
            .collect();
        c.push(Claim::info(
            "Fig. 6b/c",
            format!(
                "Sensitivity: {label} (not judged); share left to the TCP downloads per circuit count, averaged over nTcp, with BackTap's in brackets"
            ),
            per_setting.join("; "),
        ));
    }
    for s in &shown {
        let list = out
            .rows
            .iter()
            .filter(|r| r.setting == s.key)
            .map(|r| {
                format!(
                    "{} {}c/{}tcp {:.2}",
                    r.transport, r.circuits, r.n_tcp, r.tcp_share
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let util = out
            .rows
            .iter()
            .filter(|r| r.setting == s.key)
            .map(|r| r.link_util)
            .fold(f64::INFINITY, f64::min);
        c.push(Claim::info(
            s.figure,
            format!(
                "{}: share of the access link left to the TCP downloads, per transport, circuits and nTcp (paper: a good fraction of the 2 MB/s stays with the downloads even with many circuits)",
                s.label
            ),
            format!("{list}; lowest link utilisation {:.2}", util),
        ));
    }
    c
}
