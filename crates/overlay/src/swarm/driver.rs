//! A swarm, packet by packet: a driver ([`Swarm`]) that starts the
//! initial seeds, brings leechers in as a mild flash crowd (exponential
//! gaps), plays the tracker, replaces peers that leave (if asked), and
//! samples every uplink queue at 10 Hz; and [`run_swarm`], one swarm on a
//! star of access links with one initial seed (seed 003 §5's setting; the
//! ledbat-swarm reproduction's parameters are in `hopwise-repro`). A
//! scenario file's `[swarm]` runs the same driver on its own hosts.

use super::peer::{Peer, PeerConfig, PeerStats, Stay};
use hopwise_proto::bittorrent::BLOCK;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::{IfaceId, NodeId, Sim};
use serde::Serialize;

/// A class of peers: the congestion control of their uploads.
#[derive(Clone, Debug)]
pub struct Class {
    pub name: String,
    pub cc: CcConfig,
}

/// Everything one swarm run needs.
#[derive(Clone, Debug)]
pub struct SwarmSpec {
    /// Leechers of the flash crowd.
    pub leechers: usize,
    /// Mean time between their arrivals.
    pub arrival_mean: Dur,
    /// Completions discarded as the transient (the rest, up to `leechers`,
    /// are counted).
    pub transient: usize,
    pub pieces: u32,
    pub piece_len: u32,
    pub up: Rate,
    pub down: Rate,
    /// Both directions of every access link hold this many packets.
    pub buffer: u64,
    /// One-way delay of each access link: uniform in `[0, max_delay]`.
    pub max_delay: Dur,
    /// Peer classes, given to arriving leechers in turn (a peer that leaves
    /// is replaced by one of its class); the initial seed is of the first.
    pub classes: Vec<Class>,
    pub stay: Stay,
    pub pipeline: usize,
    pub slots: usize,
    /// Peers the tracker returns; a peer with fewer than `min_peers`
    /// neighbours is sent more at the next 10 s round.
    pub tracker_peers: usize,
    pub min_peers: usize,
    /// Give up after this much simulated time.
    pub limit: Dur,
}

/// One counted download.
#[derive(Clone, Debug, Serialize)]
pub struct Completion {
    /// Completion order among leechers, from 1.
    pub rank: usize,
    pub class: usize,
    pub joined_s: f64,
    pub download_s: f64,
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct SwarmResult {
    /// Completions after the transient, in order.
    pub completions: Vec<Completion>,
    /// Per class: uplink-queue samples (10 Hz, active leechers and seeds
    /// that joined as leechers) by packets queued, `0..=buffer`.
    pub queue_hist: Vec<Vec<u64>>,
    /// Whether the run reached its last counted completion before `limit`.
    pub finished: bool,
    pub sim_secs: f64,
    pub events: u64,
    pub peers: usize,
    pub duplicate_blocks: u64,
    /// Block bytes received, over all peers.
    pub downloaded: u64,
    pub errors: Vec<String>,
}

/// How often the driver looks at the swarm (arrivals, completions,
/// departures, queue samples, the tracker).
pub const STEP: Dur = Dur::from_millis(100);

/// A peer in the swarm.
struct Active {
    agent: u32,
    node: NodeId,
    class: usize,
    up_iface: IfaceId,
    counted: bool,
    completed: bool,
}

/// Runs one swarm. Errors are setup failures; a run that hits `limit`
/// returns with `finished == false`.
pub fn run_swarm(spec: &SwarmSpec, seed: u64) -> Result<SwarmResult, String> {
    if spec.classes.is_empty() {
        return Err("a swarm needs at least one peer class".into());
    }
    if spec.piece_len == 0 || !spec.piece_len.is_multiple_of(BLOCK) || spec.pieces == 0 {
        return Err(format!(
            "piece length {} B must be a positive multiple of {BLOCK} B, with at least one piece",
            spec.piece_len
        ));
    }
    // Hosts for the seed, the flash crowd and every replacement.
    let hosts = 1 + 2 * spec.leechers + 8;
    let mut s = Scenario::new(format!("ledbat-swarm/{}", seed), spec.limit, seed);
    s.measure.trace_interval = Dur::ZERO;
    s.nodes.push(NodeSpec {
        name: "sw".into(),
        kind: NodeKind::Switch,
    });
    let mut rng = Rng::for_component(seed, "swarm/driver");
    for i in 0..hosts {
        s.nodes.push(NodeSpec {
            name: format!("p{i}"),
            kind: NodeKind::Host,
        });
        let delay = Dur::from_secs_f64(rng.f64() * spec.max_delay.as_secs_f64());
        let dir = |rate| DirSpec {
            rate,
            delay,
            queue: QueueSpec::DropTail {
                limit: Limit::Packets(spec.buffer),
            },
            loss: 0.0,
            model: Default::default(),
        };
        s.links.push(LinkSpec {
            name: format!("a{i}"),
            a: format!("p{i}"),
            b: "sw".into(),
            ab: dir(spec.up),
            ba: dir(spec.down),
        });
    }
    let mut sim = Sim::new(&s)?;
    let pool = (0..hosts)
        .map(|i| {
            let name = format!("a{i}:ab");
            Host {
                node: format!("p{i}"),
                agent: format!("peer{i}"),
                uplink: sim
                    .iface_id(&name)
                    .expect("every access link has an uplink"),
            }
        })
        .collect();
    let settings = Settings {
        pieces: spec.pieces,
        piece_len: spec.piece_len,
        classes: spec.classes.clone(),
        stay: spec.stay,
        pipeline: spec.pipeline,
        slots: spec.slots,
        tracker_peers: spec.tracker_peers,
        min_peers: spec.min_peers,
    };
    let n_classes = spec.classes.len();
    let pop = Population {
        pools: vec![pool],
        class_pool: vec![0; n_classes],
        seeds: vec![0],
        arrivals: (0..spec.leechers).map(|k| k % n_classes).collect(),
        arrival_mean: spec.arrival_mean,
        transient: spec.transient,
        replace: true,
        buffer: spec.buffer,
    };
    let mut swarm = Swarm::start(&mut sim, settings, pop, rng)?;
    let mut now = Time::ZERO;
    let mut finished = false;
    while now < sim.end_time() {
        now += STEP;
        sim.run_until(now);
        if swarm.step(&mut sim, now)? {
            finished = true;
            break;
        }
    }
    let mut tally = std::mem::take(&mut swarm.tally);
    for a in &swarm.active {
        let p: &Peer = sim.agent(a.agent).expect("peer agent");
        tally.add(p);
    }
    Ok(SwarmResult {
        completions: swarm.completions,
        queue_hist: swarm.hist,
        finished,
        sim_secs: now.as_secs_f64(),
        events: sim.events(),
        peers: swarm.peers,
        duplicate_blocks: tally.dups,
        downloaded: tally.downloaded,
        errors: tally.errors,
    })
}

/// The peers' settings and the tracker's.
#[derive(Clone, Debug)]
pub struct Settings {
    pub pieces: u32,
    pub piece_len: u32,
    pub classes: Vec<Class>,
    /// How long a leecher stays once it has the file (seeds stay).
    pub stay: Stay,
    pub pipeline: usize,
    pub slots: usize,
    pub tracker_peers: usize,
    pub min_peers: usize,
}

/// A host a peer can run on.
#[derive(Clone, Debug)]
pub struct Host {
    pub node: String,
    /// The peer agent's name (its random stream derives from it).
    pub agent: String,
    /// The interface its uploads leave by (its uplink queue is sampled).
    pub uplink: IfaceId,
}

/// Who joins the swarm, when, and where.
#[derive(Clone, Debug)]
pub struct Population {
    /// Hosts, in order of use; a class takes the next free host of its pool.
    pub pools: Vec<Vec<Host>>,
    /// The pool of each class.
    pub class_pool: Vec<usize>,
    /// The classes of the initial seeds, started at once.
    pub seeds: Vec<usize>,
    /// The classes of the leechers, in order of arrival.
    pub arrivals: Vec<usize>,
    /// Mean time between arrivals (exponential gaps).
    pub arrival_mean: Dur,
    /// Completions not counted in [`Swarm::completions`].
    pub transient: usize,
    /// A peer that leaves is replaced by a newcomer of its class (while its
    /// pool has hosts).
    pub replace: bool,
    /// Largest uplink queue the histograms count (packets).
    pub buffer: u64,
}

/// One peer's record, over the run.
#[derive(Clone, Debug)]
pub struct PeerRecord {
    pub agent: String,
    pub node: String,
    pub class: usize,
    /// Started with the whole file.
    pub seed: bool,
    pub stats: PeerStats,
}

impl PeerRecord {
    /// From joining to having the file, if it got it.
    pub fn download_s(&self) -> Option<f64> {
        Some((self.stats.completed? - self.stats.joined?).as_secs_f64())
    }
}

/// A swarm on a simulation: the driver of [`run_swarm`], for any hosts.
/// Call [`Swarm::step`] every [`STEP`] of simulated time.
pub struct Swarm {
    settings: Settings,
    pop: Population,
    rng: Rng,
    next_host: Vec<usize>,
    active: Vec<Active>,
    /// Every peer started: (agent, host, class, seed).
    started: Vec<(u32, Host, usize, bool)>,
    hist: Vec<Vec<u64>>,
    completions: Vec<Completion>,
    ranks: usize,
    arrived: usize,
    next_arrival: Time,
    tally: Tally,
    peers: usize,
    round: u64,
}

impl Swarm {
    /// Starts the initial seeds and draws the first arrival.
    pub fn start(
        sim: &mut Sim,
        settings: Settings,
        pop: Population,
        rng: Rng,
    ) -> Result<Swarm, String> {
        let n_classes = settings.classes.len();
        let mut sw = Swarm {
            next_host: vec![0; pop.pools.len()],
            hist: vec![vec![0u64; pop.buffer as usize + 1]; n_classes],
            settings,
            rng,
            active: Vec::new(),
            started: Vec::new(),
            completions: Vec::new(),
            ranks: 0,
            arrived: 0,
            next_arrival: Time::ZERO,
            tally: Tally::default(),
            peers: 0,
            round: 0,
            pop,
        };
        for class in sw.pop.seeds.clone() {
            if sw.spawn(sim, class, true)? {
                sw.peers += 1;
            }
        }
        sw.next_arrival =
            Time::ZERO + Dur::from_secs_f64(sw.rng.exp(sw.pop.arrival_mean.as_secs_f64()));
        Ok(sw)
    }

    fn peer_cfg(&self, class: usize, seed: bool) -> PeerConfig {
        let tcp = TcpConfig {
            nagle: false,
            ..TcpConfig::default()
        };
        PeerConfig {
            pieces: self.settings.pieces,
            piece_len: self.settings.piece_len,
            data_cc: self.settings.classes[class].cc.clone(),
            data_tcp: tcp.clone(),
            ctrl_tcp: tcp,
            pipeline: self.settings.pipeline,
            slots: self.settings.slots,
            seed,
            stay: if seed {
                Stay::Forever
            } else {
                self.settings.stay
            },
        }
    }

    /// Starts a peer of `class` on its pool's next host; `false` if the
    /// pool has none left.
    fn spawn(&mut self, sim: &mut Sim, class: usize, seed_peer: bool) -> Result<bool, String> {
        let pool = self.pop.class_pool[class];
        let Some(host) = self.pop.pools[pool].get(self.next_host[pool]).cloned() else {
            return Ok(false);
        };
        self.next_host[pool] += 1;
        let mut others: Vec<NodeId> = self.active.iter().map(|a| a.node).collect();
        sample(&mut others, self.settings.tracker_peers, &mut self.rng);
        let agent = sim.add_agent(
            &host.node,
            &host.agent,
            sim.now(),
            Box::new(Peer::new(self.peer_cfg(class, seed_peer), others)),
        )?;
        self.active.push(Active {
            agent,
            node: sim.node_id(&host.node).expect("exists"),
            class,
            up_iface: host.uplink,
            counted: !seed_peer,
            completed: seed_peer,
        });
        self.started.push((agent, host, class, seed_peer));
        Ok(true)
    }

    /// One look at the swarm at `now` (the simulation has run to `now`):
    /// queue samples, completions and departures, then arrivals,
    /// replacements and the tracker. `true` once every leecher that arrives
    /// (with replacements) has completed.
    pub fn step(&mut self, sim: &mut Sim, now: Time) -> Result<bool, String> {
        let buffer = self.pop.buffer as usize;
        let mut replace = Vec::new();
        let mut k = 0;
        while k < self.active.len() {
            let a = &mut self.active[k];
            let p: &Peer = sim.agent(a.agent).expect("peer agent");
            if a.counted {
                let q = sim.iface(a.up_iface).stats().current().packets;
                self.hist[a.class][(q as usize).min(buffer)] += 1;
            }
            if !a.completed {
                if let Some(done) = p.stats.completed {
                    a.completed = true;
                    self.ranks += 1;
                    let joined = p.stats.joined.expect("started");
                    if self.ranks > self.pop.transient {
                        self.completions.push(Completion {
                            rank: self.ranks,
                            class: a.class,
                            joined_s: joined.as_secs_f64(),
                            download_s: (done - joined).as_secs_f64(),
                        });
                    }
                }
            }
            if p.gone() {
                self.tally.add(p);
                replace.push(a.class);
                self.active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        let leechers = self.pop.arrivals.len();
        if self.ranks >= leechers {
            return Ok(true);
        }
        let mean = self.pop.arrival_mean.as_secs_f64();
        while self.arrived < leechers && self.next_arrival <= now {
            let class = self.pop.arrivals[self.arrived];
            self.arrived += 1;
            if self.spawn(sim, class, false)? {
                self.peers += 1;
            }
            self.next_arrival += Dur::from_secs_f64(self.rng.exp(mean));
        }
        if self.pop.replace {
            for class in replace {
                if self.spawn(sim, class, false)? {
                    self.peers += 1;
                }
            }
        }
        // The tracker: peers short of neighbours get more.
        if now.as_nanos() / Dur::from_secs(10).as_nanos() > self.round {
            self.round += 1;
            let (tracker_peers, min_peers) = (self.settings.tracker_peers, self.settings.min_peers);
            let nodes: Vec<NodeId> = self.active.iter().map(|a| a.node).collect();
            for a in &self.active {
                let p: &Peer = sim.agent(a.agent).expect("peer agent");
                // A peer spawned in this step has not started: its own
                // start connects to the tracker's first answer.
                if p.stats.joined.is_none() || p.neighbours() >= min_peers {
                    continue;
                }
                let known = p.neighbour_nodes();
                let mut more: Vec<NodeId> = nodes
                    .iter()
                    .copied()
                    .filter(|&n| n != a.node && !known.contains(&n))
                    .collect();
                sample(
                    &mut more,
                    tracker_peers - p.neighbours().min(tracker_peers),
                    &mut self.rng,
                );
                let p: &mut Peer = sim.agent_mut(a.agent).expect("peer agent");
                p.announce.extend(more);
            }
        }
        Ok(false)
    }

    /// Every peer started so far, in order of start, with its record now.
    pub fn records(&self, sim: &Sim) -> Vec<PeerRecord> {
        self.started
            .iter()
            .map(|(agent, host, class, seed)| {
                let p: &Peer = sim.agent(*agent).expect("peer agent");
                PeerRecord {
                    agent: host.agent.clone(),
                    node: host.node.clone(),
                    class: *class,
                    seed: *seed,
                    stats: p.stats.clone(),
                }
            })
            .collect()
    }

    /// Completions after the transient, in order.
    pub fn completions(&self) -> &[Completion] {
        &self.completions
    }
}

/// What peers report when they leave, or at the end of the run.
#[derive(Default)]
struct Tally {
    dups: u64,
    downloaded: u64,
    errors: Vec<String>,
}

impl Tally {
    fn add(&mut self, p: &Peer) {
        self.dups += p.stats.duplicate_blocks;
        self.downloaded += p.stats.downloaded;
        self.errors.extend(p.stats.errors.iter().cloned());
    }
}

/// Keeps a uniform random sample of `k` of `v` (all if fewer), in random order.
fn sample<T>(v: &mut Vec<T>, k: usize, rng: &mut Rng) {
    let k = k.min(v.len());
    for i in 0..k {
        let j = i + rng.below((v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(k);
}
