//! One swarm, packet by packet: seed 003 §5's star of ADSL-like access
//! links, one initial seed, leechers arriving as a mild flash crowd, and a
//! driver that plays the tracker, replaces peers that leave, and samples
//! every uplink queue at 10 Hz.

use super::peer::{Peer, PeerConfig, Stay};
use hopwise_proto::bittorrent::BLOCK;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::rng::Rng;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::Sim;
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

const STEP: Dur = Dur::from_millis(100);

struct Active {
    agent: u32,
    node: u32,
    class: usize,
    up_iface: usize,
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
    let up_iface: Vec<usize> = (0..hosts)
        .map(|i| {
            let name = format!("a{i}:ab");
            sim.ifaces
                .iter()
                .position(|f| f.name == name)
                .expect("every access link has an uplink")
        })
        .collect();
    let tcp = TcpConfig {
        nagle: false,
        ..TcpConfig::default()
    };
    let peer_cfg = |class: usize, seed: bool| PeerConfig {
        pieces: spec.pieces,
        piece_len: spec.piece_len,
        data_cc: spec.classes[class].cc.clone(),
        data_tcp: tcp.clone(),
        ctrl_tcp: tcp.clone(),
        pipeline: spec.pipeline,
        slots: spec.slots,
        seed,
        stay: if seed { Stay::Forever } else { spec.stay },
    };
    let mut active: Vec<Active> = Vec::new();
    let mut next_host = 0usize;
    let mut spawn = |sim: &mut Sim,
                     active: &mut Vec<Active>,
                     rng: &mut Rng,
                     class: usize,
                     seed_peer: bool|
     -> Result<bool, String> {
        if next_host >= hosts {
            return Ok(false);
        }
        let i = next_host;
        next_host += 1;
        let mut others: Vec<u32> = active.iter().map(|a| a.node).collect();
        sample(&mut others, spec.tracker_peers, rng);
        let node = format!("p{i}");
        let agent = sim.add_agent(
            &node,
            &format!("peer{i}"),
            sim.now(),
            Box::new(Peer::new(peer_cfg(class, seed_peer), others)),
        )?;
        active.push(Active {
            agent,
            node: sim.node_id(&node).expect("exists"),
            class,
            up_iface: up_iface[i],
            counted: !seed_peer,
            completed: seed_peer,
        });
        Ok(true)
    };
    spawn(&mut sim, &mut active, &mut rng, 0, true)?;

    let n_classes = spec.classes.len();
    let mut hist = vec![vec![0u64; spec.buffer as usize + 1]; n_classes];
    let mut completions = Vec::new();
    let mut ranks = 0usize;
    let mut arrived = 0usize;
    let mut next_arrival =
        Time::ZERO + Dur::from_secs_f64(rng.exp(spec.arrival_mean.as_secs_f64()));
    let mut tally = Tally::default();
    let mut peers = 1;
    let mut now = Time::ZERO;
    let mut finished = false;
    let mut round = 0u64;
    while now < sim.end_time() {
        now += STEP;
        sim.run_until(now);
        let mut replace = Vec::new();
        let mut k = 0;
        while k < active.len() {
            let a = &mut active[k];
            let p: &Peer = sim.agent(a.agent).expect("peer agent");
            if a.counted {
                let q = sim.ifaces[a.up_iface].stats.current().1;
                hist[a.class][(q as usize).min(spec.buffer as usize)] += 1;
            }
            if !a.completed {
                if let Some(done) = p.stats.completed {
                    a.completed = true;
                    ranks += 1;
                    let joined = p.stats.joined.expect("started");
                    if ranks > spec.transient {
                        completions.push(Completion {
                            rank: ranks,
                            class: a.class,
                            joined_s: joined.as_secs_f64(),
                            download_s: (done - joined).as_secs_f64(),
                        });
                    }
                }
            }
            if p.gone() {
                tally.add(p);
                replace.push(a.class);
                active.swap_remove(k);
            } else {
                k += 1;
            }
        }
        if ranks >= spec.leechers {
            finished = true;
            break;
        }
        while arrived < spec.leechers && next_arrival <= now {
            let class = arrived % n_classes;
            arrived += 1;
            if spawn(&mut sim, &mut active, &mut rng, class, false)? {
                peers += 1;
            }
            next_arrival += Dur::from_secs_f64(rng.exp(spec.arrival_mean.as_secs_f64()));
        }
        for class in replace {
            if spawn(&mut sim, &mut active, &mut rng, class, false)? {
                peers += 1;
            }
        }
        // The tracker: peers short of neighbours get more.
        if now.as_nanos() / Dur::from_secs(10).as_nanos() > round {
            round += 1;
            let nodes: Vec<u32> = active.iter().map(|a| a.node).collect();
            for a in &active {
                let p: &Peer = sim.agent(a.agent).expect("peer agent");
                // A peer spawned in this step has not started: its own
                // start connects to the tracker's first answer.
                if p.stats.joined.is_none() || p.neighbours() >= spec.min_peers {
                    continue;
                }
                let known = p.neighbour_nodes();
                let mut more: Vec<u32> = nodes
                    .iter()
                    .copied()
                    .filter(|&n| n != a.node && !known.contains(&n))
                    .collect();
                sample(
                    &mut more,
                    spec.tracker_peers - p.neighbours().min(spec.tracker_peers),
                    &mut rng,
                );
                let p: &mut Peer = sim.agent_mut(a.agent).expect("peer agent");
                p.announce.extend(more);
            }
        }
    }
    for a in &active {
        let p: &Peer = sim.agent(a.agent).expect("peer agent");
        tally.add(p);
    }
    Ok(SwarmResult {
        completions,
        queue_hist: hist,
        finished,
        sim_secs: now.as_secs_f64(),
        events: sim.events(),
        peers,
        duplicate_blocks: tally.dups,
        downloaded: tally.downloaded,
        errors: tally.errors,
    })
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
fn sample(v: &mut Vec<u32>, k: usize, rng: &mut Rng) {
    let k = k.min(v.len());
    for i in 0..k {
        let j = i + rng.below((v.len() - i) as u64) as usize;
        v.swap(i, j);
    }
    v.truncate(k);
}
