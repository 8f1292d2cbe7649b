//! One file transfer over a chain of overlay hops, packet by packet.
//!
//! The chain client → relay … → server has one link per hop with the hop's
//! RTT. A direct transfer is the chain of one hop. Every link has the same
//! capacity, queue and random loss (the wide area's loss, per direction),
//! so a hop's TCP rate depends on its RTT, as seed 001 §2 assumes.

use super::agents::{Client, Node};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::Sim;
use serde::Serialize;

/// The links every hop runs over.
#[derive(Clone, Debug)]
pub struct Wan {
    pub rate: Rate,
    pub loss: Loss,
    pub queue: Limit,
}

/// Random loss per packet and direction on a hop's link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// The same on every link, however long: a path of k hops crosses k
    /// lossy links where the direct path crosses one.
    PerLink(f64),
    /// Proportional to the link's RTT, `p` at RTT `at`: loss accrues with
    /// distance, so a path loses about as much as its hops' RTTs add up to.
    PerRtt { p: f64, at: Dur },
}

impl Loss {
    /// The loss probability of a link with this RTT (at most 0.5).
    pub fn for_rtt(self, rtt: Dur) -> f64 {
        match self {
            Loss::PerLink(p) => p,
            Loss::PerRtt { p, at } => (p * rtt.as_secs_f64() / at.as_secs_f64()).min(0.5),
        }
    }
}

/// What is sent, and how.
#[derive(Clone, Debug)]
pub struct Transfer {
    pub size: u64,
    pub tcp: TcpConfig,
    pub cc: CcConfig,
    /// A relay's own buffer per connection (besides its sockets' buffers).
    pub splice: usize,
    /// Give up after this much simulated time.
    pub limit: Dur,
}

/// The outcome of one transfer.
#[derive(Clone, Debug, Serialize)]
pub struct TransferResult {
    /// From the client's connect to the server's receipt of FIN.
    pub secs: f64,
    /// Size over `secs`, bit/s.
    pub goodput_bps: f64,
    /// From the client's connect to the first payload byte at the server.
    pub first_byte_s: f64,
    /// Retransmitted segments and retransmission timeouts over every hop.
    pub retransmits: u64,
    pub timeouts: u64,
    /// Simulator events (for the run's cost).
    pub events: u64,
}

/// Runs one transfer over hops with these RTTs (one entry: the direct
/// path). Errors name what failed: a refused header, a reset, or a
/// transfer that did not finish within `t.limit`.
pub fn run_path(
    hops: &[Dur],
    t: &Transfer,
    wan: &Wan,
    seed: u64,
) -> Result<TransferResult, String> {
    if hops.is_empty() {
        return Err("a path needs at least one hop".into());
    }
    let mut s = Scenario::new(format!("otcp/{}-hop", hops.len()), t.limit, seed);
    for i in 0..=hops.len() {
        s.nodes.push(NodeSpec {
            name: format!("n{i}"),
            kind: NodeKind::Host,
        });
    }
    for (i, rtt) in hops.iter().enumerate() {
        let dir = DirSpec {
            rate: wan.rate,
            delay: *rtt / 2,
            queue: QueueSpec::DropTail { limit: wan.queue },
            loss: wan.loss.for_rtt(*rtt),
            model: Default::default(),
        };
        s.links.push(LinkSpec {
            name: format!("hop{}", i + 1),
            a: format!("n{i}"),
            b: format!("n{}", i + 1),
            ab: dir.clone(),
            ba: dir,
        });
    }
    let mut sim = Sim::new(&s)?;
    let mut nodes = Vec::new();
    for i in 1..=hops.len() {
        let node = Node::new(t.tcp.clone(), t.cc.clone(), t.splice);
        nodes.push(sim.add_agent(
            &format!("n{i}"),
            &format!("node{i}"),
            Time::ZERO,
            Box::new(node),
        )?);
    }
    let route: Vec<u32> = (1..=hops.len())
        .map(|i| sim.node_id(&format!("n{i}")).expect("node exists").raw())
        .collect();
    let client = sim.add_agent(
        "n0",
        "client",
        Time::ZERO,
        Box::new(Client::new(route, t.size, t.tcp.clone(), t.cc.clone())),
    )?;
    let server = *nodes.last().expect("a hop");
    let step = Dur::from_millis(500);
    let mut now = Time::ZERO;
    let done = loop {
        now += step;
        sim.run_until(now);
        let srv: &Node = sim.agent(server).expect("server agent");
        if let Some(r) = srv.received.first().filter(|r| r.done.is_some()) {
            break r.clone();
        }
        let c: &Client = sim.agent(client).expect("client agent");
        if let Some(e) = &c.error {
            return Err(format!("{}-hop transfer: {e}", hops.len()));
        }
        for &n in &nodes {
            let a: &Node = sim.agent(n).expect("node agent");
            if let Some(e) = a.errors.first() {
                return Err(format!(
                    "{}-hop transfer, node {}: {e}",
                    hops.len(),
                    sim.agent_name(n)
                ));
            }
        }
        if now >= sim.end_time() {
            return Err(format!(
                "{}-hop transfer of {} B did not finish within {} (received {} B)",
                hops.len(),
                t.size,
                t.limit,
                srv.received.first().map_or(0, |r| r.bytes)
            ));
        }
    };
    if done.bytes != t.size {
        return Err(format!(
            "{}-hop transfer: {} B arrived, {} B were sent",
            hops.len(),
            done.bytes,
            t.size
        ));
    }
    let secs = done.done.expect("done").as_secs_f64();
    let first = done.first.map_or(f64::NAN, |f| f.as_secs_f64());
    let (mut retransmits, mut timeouts) = (0, 0);
    for e in sim.socks() {
        if let Some(c) = sim.endpoint(e).conn() {
            retransmits += c.stats().retransmits;
            timeouts += c.stats().timeouts;
        }
    }
    Ok(TransferResult {
        secs,
        goodput_bps: t.size as f64 * 8.0 / secs,
        first_byte_s: first,
        retransmits,
        timeouts,
        events: sim.events(),
    })
}
