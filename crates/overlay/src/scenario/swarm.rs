//! `[swarm]`: a BitTorrent swarm on the scenario's topology.
//!
//! ```toml
//! [swarm]
//! size = "4MiB"              # the torrent: a whole number of pieces
//! piece_size = "256KiB"      # a multiple of 16 KiB
//! arrival_mean = "10s"       # leechers arrive one by one, exponential gaps
//! seed_policy = "random-stay"
//!
//! [[swarm.class]]
//! name = "ledbat"
//! cc = "ledbat"              # the congestion control of the peers' uploads
//! seeds = 1                  # peers that start with the whole file, at 0 s
//! peers = 10                 # leechers
//! attach = "sw"              # generated hosts: one access link each to `sw`
//! up = "1Mbit"
//! down = "8Mbit"
//! ```
//!
//! A class's peers run on the `[[node]]`s it names (`nodes`, seeds first)
//! or on hosts it generates (`attach`, with the access links' `up`, `down`,
//! `delay` and `buffer`). Arrivals and seed policy are those of the
//! ledbat-swarm reproduction ([`crate::swarm::driver`]); a peer that leaves
//! is not replaced.

use super::otcp::cc_of;
use super::short_list;
use crate::swarm::driver::{Class, Host, PeerRecord, Population, Settings, Swarm, STEP};
use crate::swarm::peer::{PeerStats, Stay};
use hopwise_config::{
    self as cfg, did_you_mean, table, Duration, Int, Name, Problem, QueueLimit, Rate, Size,
    Strings, Tables, Text,
};
use hopwise_experiment::stats::{mean, quantile};
use hopwise_plot::{Chart, Series};
use hopwise_proto::bittorrent::BLOCK;
use hopwise_proto::rng::Rng;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate as Bps;
use hopwise_sim::scenario::ScenarioError;
use hopwise_sim::spec::{DirSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::{IfaceId, Sim};
use serde::Serialize;
use std::io;
use std::path::Path;
use toml::Value;

type R<T> = Result<T, ScenarioError>;

fn e(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new("", key, msg)
}

/// The seed policies: how long a peer stays once it has the whole file.
pub const POLICIES: [(&str, Stay); 3] = [
    ("never-leave", Stay::Forever),
    // Seed 003 §5: an exponential time with mean half the download time.
    ("random-stay", Stay::Random { frac: 0.5 }),
    ("immediate-leave", Stay::Leave),
];

table! {
    pub struct RawSwarm("a table ([swarm])") {
        size: Size, piece_size: Size, arrival_mean: Duration, seed_policy: Text,
        pipeline: Int<1, 1000>, slots: Int<1, 1000>, tracker_peers: Int<1, 100_000>,
        min_peers: Int<0, 100_000>, class: Tables<RawClass>,
    }
}
table! {
    pub struct RawClass("a table (a [[swarm.class]] section)", section "swarm.class") {
        name: Name, cc: Value, seeds: Int<0, 100_000>, peers: Int<0, 100_000>,
        nodes: Strings, attach: Name, up: Rate, down: Rate, delay: Duration,
        buffer: QueueLimit,
    }
}

/// Where a class's peers run.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// On these `[[node]]`s, seeds first.
    Nodes(Vec<String>),
    /// On hosts generated for it, each with one access link to `attach`.
    Generated {
        attach: String,
        up: Bps,
        down: Bps,
        delay: Dur,
        buffer: QueueLimit,
    },
}

/// One peer class, checked.
#[derive(Clone, Debug)]
pub struct ClassSpec {
    pub name: String,
    pub cc_name: String,
    pub class: Class,
    pub seeds: usize,
    pub peers: usize,
    pub placement: Placement,
}

impl ClassSpec {
    /// The nodes its peers run on: seeds first, then leechers in arrival order.
    pub fn hosts(&self) -> Vec<String> {
        match &self.placement {
            Placement::Nodes(n) => n.clone(),
            Placement::Generated { .. } => (0..self.seeds + self.peers)
                .map(|i| format!("{}-{i}", self.name))
                .collect(),
        }
    }
}

/// `[swarm]`, checked.
#[derive(Clone, Debug)]
pub struct Section {
    pub pieces: u32,
    pub piece_len: u32,
    pub arrival_mean: Dur,
    pub policy: String,
    pub stay: Stay,
    pub pipeline: usize,
    pub slots: usize,
    pub tracker_peers: usize,
    pub min_peers: usize,
    pub classes: Vec<ClassSpec>,
}

/// `swarm.class[1] "ledbat"`.
fn class_key(i: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("swarm.class[{i}] {n:?}"),
        None => format!("swarm.class[{i}]"),
    }
}

fn problem(p: Problem, doc: &Value) -> ScenarioError {
    let key = match &p.path[..] {
        [cfg::Seg::Key(k), cfg::Seg::Index(i), rest @ ..] if k == "class" => {
            let name = doc
                .get("class")
                .and_then(|c| c.get(*i))
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str);
            cfg::join(&class_key(*i, name), rest)
        }
        path => cfg::join("swarm", path),
    };
    p.at(key)
}

/// `size` as a number of pieces of `piece`, or why not.
fn pieces_of(size: u64, piece: u64) -> Result<u32, String> {
    if size == 0 {
        return Err("must be positive".into());
    }
    if !size.is_multiple_of(piece) {
        let lo = size / piece * piece;
        // The whole pieces below `size`, or one piece if that is none.
        let near = if lo == 0 { piece } else { lo };
        return Err(format!(
            "{size} B is not a whole number of {piece} B pieces; did you mean {near} B \
             ({} pieces)? (the peers' last piece is a full one)",
            near / piece
        ));
    }
    u32::try_from(size / piece)
        .ok()
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| format!("{} pieces is more than 1048576", size / piece))
}

/// Reads and checks `[swarm]` (`None` without one).
pub fn parse(base: &Scenario) -> R<Option<Section>> {
    let Some(doc) = base.overlay.get("swarm") else {
        return Ok(None);
    };
    let raw: RawSwarm = cfg::from_value(doc.clone()).map_err(|p| problem(p, doc))?;
    let piece_len = raw.piece_size.map_or(256 << 10, |s| s.0);
    if piece_len == 0 || !piece_len.is_multiple_of(BLOCK as u64) || piece_len > 64 << 20 {
        let near = (piece_len.div_ceil(BLOCK as u64).max(1) * BLOCK as u64).min(64 << 20);
        return Err(e(
            "swarm.piece_size",
            format!(
                "{piece_len} B is not a positive multiple of {BLOCK} B (a block) up to 64 MiB; \
                 did you mean {near} B?"
            ),
        ));
    }
    let size = cfg::required(
        raw.size.map(|s| s.0),
        "swarm.size",
        "the torrent's size, e.g. \"8MiB\"",
    )?;
    let pieces = pieces_of(size, piece_len).map_err(|m| e("swarm.size", m))?;
    let policy = raw.seed_policy.map_or("random-stay".to_string(), |t| t.0);
    let stay =
        cfg::choice(&policy, "seed policy", &POLICIES).map_err(|m| e("swarm.seed_policy", m))?;
    let nodes: Vec<&str> = base.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut classes = Vec::new();
    let raw_classes = raw.class.map(|t| t.0).unwrap_or_default();
    let mut used: Vec<(String, String)> = Vec::new();
    for (i, c) in raw_classes.iter().enumerate() {
        let name = c.name.as_ref().map_or(format!("class{i}"), |n| n.0.clone());
        let key = class_key(i, Some(&name));
        let at = |k: &str| format!("{key}.{k}");
        if classes.iter().any(|x: &ClassSpec| x.name == name) {
            return Err(e(
                at("name"),
                format!("a second class named {name:?}; give each class its own name"),
            ));
        }
        let (cc, cc_name) = cc_of(c.cc.as_ref(), &at("cc"))?;
        let seeds = c.seeds.map_or(0, |n| n.0 as usize);
        let generated = [
            ("up", c.up.is_some()),
            ("down", c.down.is_some()),
            ("delay", c.delay.is_some()),
            ("buffer", c.buffer.is_some()),
        ];
        let placement = match (&c.nodes, &c.attach) {
            (Some(_), Some(_)) => {
                return Err(e(
                    at("attach"),
                    "a class runs on the [[node]]s in `nodes` or on hosts it generates \
                     (`attach`), not both; remove one",
                ))
            }
            (None, None) => {
                return Err(e(
                    &key,
                    format!(
                        "where do its peers run? add `nodes = [\"h1\", …]` ([[node]]s) or \
                         `attach = \"<node>\"` (generated hosts linked to that node; known nodes: {})",
                        short_list(&nodes)
                    ),
                ))
            }
            (Some(ns), None) => {
                if let Some((k, _)) = generated.iter().find(|(_, set)| *set) {
                    return Err(e(
                        at(k),
                        format!(
                            "`{k}` sets the access link of generated hosts; a peer on a \
                             [[node]] uses that node's links (remove `{k}`, or use `attach`)"
                        ),
                    ));
                }
                for (j, n) in ns.0.iter().enumerate() {
                    if !nodes.contains(&n.as_str()) {
                        return Err(e(
                            format!("{}[{j}]", at("nodes")),
                            format!("unknown node `{n}`{} (known: {})", did_you_mean(n, &nodes), short_list(&nodes)),
                        ));
                    }
                    if let Some((_, other)) = used.iter().find(|(u, _)| u == n) {
                        return Err(e(
                            format!("{}[{j}]", at("nodes")),
                            format!(
                                "node `{n}` already runs a peer (of class {other:?}); one peer per \
                                 node: its ports are BitTorrent's"
                            ),
                        ));
                    }
                    used.push((n.clone(), name.clone()));
                }
                Placement::Nodes(ns.0.clone())
            }
            (None, Some(a)) => {
                if !nodes.contains(&a.0.as_str()) {
                    return Err(e(
                        at("attach"),
                        format!("unknown node `{}`{} (known: {})", a.0, did_you_mean(&a.0, &nodes), short_list(&nodes)),
                    ));
                }
                Placement::Generated {
                    attach: a.0.clone(),
                    up: c.up.map_or(Bps::from_kbps(1000), |r| r.0),
                    down: c.down.map_or(Bps::from_kbps(8000), |r| r.0),
                    delay: c.delay.as_ref().map_or(Dur::from_millis(10), |d| d.value),
                    buffer: c.buffer.unwrap_or(QueueLimit::Packets(200)),
                }
            }
        };
        let peers = match (&placement, c.peers) {
            (_, Some(p)) => p.0 as usize,
            (Placement::Nodes(ns), None) => ns.len().saturating_sub(seeds),
            (Placement::Generated { .. }, None) => {
                return Err(e(
                    at("peers"),
                    "missing required key (the number of leechers of this class)",
                ))
            }
        };
        if let Placement::Nodes(ns) = &placement {
            if ns.len() != seeds + peers {
                return Err(e(
                    at("nodes"),
                    format!(
                        "{} nodes for {seeds} seeds and {peers} peers; list one node per seed and \
                         peer ({}), or leave out `peers`",
                        ns.len(),
                        seeds + peers
                    ),
                ));
            }
        }
        classes.push(ClassSpec {
            class: Class {
                name: name.clone(),
                cc,
            },
            name,
            cc_name,
            seeds,
            peers,
            placement,
        });
    }
    if classes.iter().all(|c| c.peers == 0) {
        let k = if classes.is_empty() {
            "swarm".to_string()
        } else {
            "swarm.class".to_string()
        };
        return Err(e(
            k,
            "a swarm without peers: add a [[swarm.class]] with `peers = N` leechers (and \
             `seeds = 1` in one class), e.g. `[[swarm.class]] name = \"newreno\" attach = \"sw\" \
             seeds = 1 peers = 10`",
        ));
    }
    if classes.iter().all(|c| c.seeds == 0) {
        return Err(e(
            "swarm.class",
            format!(
                "no class has seeds: nobody has the file, so no leecher would ever finish; add \
                 `seeds = 1` to a class (e.g. {:?})",
                classes[0].name
            ),
        ));
    }
    // Generated hosts must not take an existing name.
    for (i, c) in classes.iter().enumerate() {
        if matches!(c.placement, Placement::Generated { .. }) {
            if let Some(h) = c
                .hosts()
                .iter()
                .find(|h| nodes.contains(&h.as_str()) || base.links.iter().any(|l| &l.name == *h))
            {
                return Err(e(
                    class_key(i, Some(&c.name)),
                    format!(
                        "its generated host `{h}` would take the name of a [[node]] or [[link]]; \
                         rename the class or that node"
                    ),
                ));
            }
        }
    }
    Ok(Some(Section {
        pieces,
        piece_len: piece_len as u32,
        arrival_mean: raw.arrival_mean.map_or(Dur::from_secs(10), |d| d.value),
        policy,
        stay,
        pipeline: raw.pipeline.map_or(5, |n| n.0 as usize),
        slots: raw.slots.map_or(3, |n| n.0 as usize),
        tracker_peers: raw.tracker_peers.map_or(40, |n| n.0 as usize),
        min_peers: raw.min_peers.map_or(20, |n| n.0 as usize),
        classes,
    }))
}

impl Section {
    /// Adds the generated hosts and their access links.
    pub fn extend(&self, sc: &mut Scenario) {
        for c in &self.classes {
            if let Placement::Generated {
                attach,
                up,
                down,
                delay,
                buffer,
            } = &c.placement
            {
                let dir = |rate| DirSpec {
                    rate,
                    delay: *delay,
                    queue: QueueSpec::DropTail { limit: *buffer },
                    loss: 0.0,
                    model: Default::default(),
                };
                for h in c.hosts() {
                    sc.nodes.push(NodeSpec {
                        name: h.clone(),
                        kind: NodeKind::Host,
                    });
                    sc.links.push(LinkSpec {
                        name: h.clone(),
                        a: h,
                        b: attach.clone(),
                        ab: dir(*up),
                        ba: dir(*down),
                    });
                }
            }
        }
    }

    /// Starts the swarm: its initial seeds at 0 s; leechers arrive as
    /// [`Installed::run_until`] runs.
    pub fn install(&self, sim: &mut Sim) -> Result<Installed, String> {
        let settings = Settings {
            pieces: self.pieces,
            piece_len: self.piece_len,
            classes: self.classes.iter().map(|c| c.class.clone()).collect(),
            stay: self.stay,
            pipeline: self.pipeline,
            slots: self.slots,
            tracker_peers: self.tracker_peers,
            min_peers: self.min_peers,
        };
        let mut pools = Vec::new();
        for c in &self.classes {
            let mut pool = Vec::new();
            for (k, node) in c.hosts().into_iter().enumerate() {
                pool.push(Host {
                    uplink: uplink(sim, &node)?,
                    agent: format!("swarm/{}/{k}", c.name),
                    node,
                });
            }
            pools.push(pool);
        }
        // Leechers arrive with the classes in turn, as in the reproduction.
        let mut left: Vec<usize> = self.classes.iter().map(|c| c.peers).collect();
        let mut arrivals = Vec::new();
        while left.iter().any(|&n| n > 0) {
            for (k, n) in left.iter_mut().enumerate() {
                if *n > 0 {
                    *n -= 1;
                    arrivals.push(k);
                }
            }
        }
        let seeds = self
            .classes
            .iter()
            .enumerate()
            .flat_map(|(k, c)| std::iter::repeat_n(k, c.seeds))
            .collect();
        let pop = Population {
            class_pool: (0..self.classes.len()).collect(),
            pools,
            seeds,
            arrivals,
            arrival_mean: self.arrival_mean,
            transient: 0,
            replace: false,
            buffer: 0,
        };
        let rng = Rng::for_component(sim.seed(), "swarm/driver");
        let swarm = Swarm::start(sim, settings, pop, rng)?;
        Ok(Installed {
            swarm,
            next: Time::ZERO + STEP,
            classes: self.classes.iter().map(|c| c.name.clone()).collect(),
            leechers: self.classes.iter().map(|c| c.peers).collect(),
        })
    }
}

/// The interface `node`'s uploads leave by: its first link's direction
/// away from it.
fn uplink(sim: &Sim, node: &str) -> Result<IfaceId, String> {
    let id = sim
        .node_id(node)
        .ok_or_else(|| format!("swarm: unknown node `{node}`"))?;
    sim.ifaces()
        .find(|&f| sim.iface(f).from() == id)
        .ok_or_else(|| format!("swarm: node `{node}` has no link"))
}

/// The running swarm.
pub struct Installed {
    swarm: Swarm,
    /// When the driver looks next.
    next: Time,
    classes: Vec<String>,
    /// Leechers per class, as configured (arrived or not).
    leechers: Vec<usize>,
}

impl Installed {
    /// Runs the simulation to `until`, the swarm's driver looking every
    /// [`STEP`] (arrivals, the tracker, completions).
    pub fn run_until(&mut self, sim: &mut Sim, until: Time) -> Result<(), String> {
        while self.next <= until {
            sim.run_until(self.next);
            self.swarm.step(sim, self.next)?;
            self.next += STEP;
        }
        sim.run_until(until);
        Ok(())
    }

    pub fn summary(&self, sim: &Sim) -> Summary {
        let records = self.swarm.records(sim);
        let classes = self
            .classes
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let mine: Vec<&PeerRecord> = records.iter().filter(|r| r.class == k).collect();
                let times: Vec<f64> = mine
                    .iter()
                    .filter(|r| !r.seed)
                    .filter_map(|r| r.download_s())
                    .collect();
                let arrived = mine.iter().filter(|r| !r.seed).count();
                ClassSummary {
                    class: name.clone(),
                    seeds: mine.len() - arrived,
                    leechers: self.leechers[k],
                    arrived,
                    completed: times.len(),
                    download_mean_s: mean(&times),
                    download_median_s: quantile(&times, 0.5),
                    download_p95_s: quantile(&times, 0.95),
                    uploaded_bytes: mine.iter().map(|r| r.stats.uploaded).sum(),
                    downloaded_bytes: mine.iter().map(|r| r.stats.downloaded).sum(),
                }
            })
            .collect();
        Summary {
            peers: records
                .iter()
                .map(|r| PeerRow::of(r, &self.classes))
                .collect(),
            errors: records
                .iter()
                .flat_map(|r| r.stats.errors.iter().cloned())
                .collect(),
            classes,
        }
    }

    /// `swarm_peers.csv`, `swarm_completion.csv` and `swarm_completion.svg`.
    pub fn write(&self, dir: &Path, s: &Summary, files: &mut Vec<String>) -> io::Result<()> {
        write_csv(&dir.join("swarm_peers.csv"), &s.peers)?;
        files.push("swarm_peers.csv".into());
        let mut cdf = Vec::new();
        let mut chart = Chart::new("Swarm: download times")
            .x_label("download time (s)")
            .y_label("fraction of leechers");
        for (c, &n) in self.classes.iter().zip(&self.leechers) {
            let mut t: Vec<f64> = s
                .peers
                .iter()
                .filter(|p| &p.class == c && !p.seed)
                .filter_map(|p| p.download_s)
                .collect();
            t.sort_by(f64::total_cmp);
            // Over every leecher of the class, arrived or not: one that
            // never finished keeps the curve below 1.
            let mut pts = vec![(0.0, 0.0)];
            for (i, x) in t.iter().enumerate() {
                let row = CdfRow {
                    class: c.clone(),
                    download_s: *x,
                    fraction: (i + 1) as f64 / n as f64,
                };
                pts.push((row.download_s, row.fraction));
                cdf.push(row);
            }
            chart.push_series(Series::step(c.clone(), pts));
        }
        write_csv(&dir.join("swarm_completion.csv"), &cdf)?;
        files.push("swarm_completion.csv".into());
        chart.write_svg(dir.join("swarm_completion.svg"))?;
        files.push("swarm_completion.svg".into());
        Ok(())
    }
}

/// What the swarm measured (`summary.json`'s `swarm`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub classes: Vec<ClassSummary>,
    pub peers: Vec<PeerRow>,
    /// Wire errors and failed connections the peers reported.
    pub errors: Vec<String>,
}

/// One class's leechers' download times (completed ones) and bytes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClassSummary {
    pub class: String,
    pub seeds: usize,
    /// Leechers of the class, as configured (`peers` or its nodes).
    pub leechers: usize,
    /// Leechers that arrived before the end of the run.
    pub arrived: usize,
    /// Leechers that got the whole file.
    pub completed: usize,
    pub download_mean_s: f64,
    pub download_median_s: f64,
    pub download_p95_s: f64,
    pub uploaded_bytes: u64,
    pub downloaded_bytes: u64,
}

/// One peer (a row of `swarm_peers.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PeerRow {
    pub peer: String,
    pub node: String,
    pub class: String,
    /// Started with the whole file.
    pub seed: bool,
    pub joined_s: Option<f64>,
    pub completed_s: Option<f64>,
    /// From joining to having the whole file (leechers).
    pub download_s: Option<f64>,
    pub left_s: Option<f64>,
    pub downloaded_bytes: u64,
    pub uploaded_bytes: u64,
    pub duplicate_blocks: u64,
}

impl PeerRow {
    fn of(r: &PeerRecord, classes: &[String]) -> PeerRow {
        let s: &PeerStats = &r.stats;
        PeerRow {
            peer: r.agent.clone(),
            node: r.node.clone(),
            class: classes[r.class].clone(),
            seed: r.seed,
            joined_s: s.joined.map(|t| t.as_secs_f64()),
            completed_s: s.completed.map(|t| t.as_secs_f64()),
            download_s: if r.seed { None } else { r.download_s() },
            left_s: s.left.map(|t| t.as_secs_f64()),
            downloaded_bytes: s.downloaded,
            uploaded_bytes: s.uploaded,
            duplicate_blocks: s.duplicate_blocks,
        }
    }
}

/// A point of the completion CDF (a row of `swarm_completion.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CdfRow {
    pub class: String,
    pub download_s: f64,
    /// Of the class's leechers, those done within `download_s`.
    pub fraction: f64,
}

/// A CSV through `hopwise_experiment::csv`, its error as an I/O error.
pub(super) fn write_csv<T: Serialize + Default>(path: &Path, rows: &[T]) -> io::Result<()> {
    hopwise_experiment::csv::write(path, rows).map_err(|x| io::Error::other(x.to_string()))
}
