//! Tests of the peer: failed data connections and peers that leave.

use super::*;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::Sim;

const BREAK: u64 = 99;

/// A peer that, at `at`, breaks its data connections of one direction
/// as a failing network would: it resets them and handles the reset.
struct Breaker {
    peer: Peer,
    at: Time,
    uploads: bool,
    broken: usize,
}

impl Agent for Breaker {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.peer.start(cx);
        cx.set_timer(self.at, BREAK);
    }
    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        if token != BREAK {
            return self.peer.timer(cx, token);
        }
        let socks: Vec<Sock> = self
            .peer
            .nbs
            .iter()
            .flatten()
            .filter_map(|nb| {
                if self.uploads {
                    nb.data_out
                } else {
                    nb.data_in
                }
            })
            .collect();
        for s in socks {
            cx.abort(s);
            self.peer.tcp_event(cx, s, SockEvent::Reset);
            self.broken += 1;
        }
    }
    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        self.peer.tcp_event(cx, sock, ev)
    }
}

fn cfg(seed: bool, stay: Stay) -> PeerConfig {
    PeerConfig {
        pieces: 8,
        piece_len: 4 * BLOCK,
        data_cc: CcConfig::NewReno,
        data_tcp: TcpConfig::default(),
        ctrl_tcp: TcpConfig::default(),
        pipeline: 5,
        slots: 3,
        seed,
        stay,
    }
}

/// A switch and `hosts` hosts at 1 Mbit/s up, 8 Mbit/s down, 10 ms.
fn star(hosts: usize) -> Sim {
    let mut s = Scenario::new("peer-test", Dur::from_secs(600), 1);
    s.measure.trace_interval = Dur::ZERO;
    s.nodes.push(NodeSpec {
        name: "sw".into(),
        kind: NodeKind::Switch,
    });
    let dir = |mbps| DirSpec {
        rate: Rate::from_mbps(mbps),
        delay: Dur::from_millis(10),
        queue: QueueSpec::DropTail {
            limit: Limit::Packets(100),
        },
        loss: 0.0,
        model: Default::default(),
    };
    for i in 0..hosts {
        s.nodes.push(NodeSpec {
            name: format!("p{i}"),
            kind: NodeKind::Host,
        });
        s.links.push(LinkSpec {
            name: format!("a{i}"),
            a: format!("p{i}"),
            b: "sw".into(),
            ab: dir(1),
            ba: dir(8),
        });
    }
    Sim::new(&s).unwrap()
}

/// A data connection that fails mid-download, seen from either end,
/// costs a reconnect, not the download: the uploader keeps the requests
/// it has not written and opens a new connection, and the downloader
/// asks again for the blocks that were in flight.
#[test]
fn a_failed_data_connection_is_replaced() {
    for uploads in [true, false] {
        let mut sim = star(2);
        let seed_node = sim.node_id("p0").unwrap();
        let at = Time::ZERO + Dur::from_secs(1);
        let seed_peer = Peer::new(cfg(true, Stay::Forever), vec![]);
        let leecher = Peer::new(cfg(false, Stay::Forever), vec![seed_node]);
        // The breaking end is the seed when uploads break, else the
        // leecher; the leecher starts once the seed listens.
        let (breaking, other) = if uploads {
            (seed_peer, leecher)
        } else {
            (leecher, seed_peer)
        };
        let (b_node, o_node) = if uploads { ("p0", "p1") } else { ("p1", "p0") };
        let start = |node| Time::ZERO + Dur::from_millis(if node == "p1" { 1 } else { 0 });
        let b = Breaker {
            peer: breaking,
            at,
            uploads,
            broken: 0,
        };
        let b = sim.add_agent(b_node, "breaking", start(b_node), Box::new(b));
        let o = sim.add_agent(o_node, "other", start(o_node), Box::new(other));
        let (b, o) = (b.unwrap(), o.unwrap());
        sim.run();
        let b: &Breaker = sim.agent(b).unwrap();
        let o: &Peer = sim.agent(o).unwrap();
        let (broken, lp, sp) = if uploads {
            (b.broken, o, &b.peer)
        } else {
            (b.broken, &b.peer, o)
        };
        assert_eq!(broken, 1, "uploads {uploads}: one data connection broken");
        let done = lp.stats.completed.expect("the leecher completes");
        // 512 KiB at 1 Mbit/s takes about 4.3 s: the break was mid-way.
        assert!(done > at, "uploads {uploads}: done at {done:?}");
        assert!(lp.stats.errors.is_empty(), "{:?}", lp.stats.errors);
        assert!(sp.stats.errors.is_empty(), "{:?}", sp.stats.errors);
        let file = 8 * 4 * BLOCK as u64;
        assert!(lp.stats.downloaded >= file);
        assert!(
            lp.stats.downloaded <= file + 6 * BLOCK as u64,
            "uploads {uploads}: at most a pipeline and a partial block again, got {} B",
            lp.stats.downloaded
        );
    }
}

/// A node announced twice is dialled once; a peer that has left refuses
/// connections, which count as refused, not as errors.
#[test]
fn dial_once_and_refused_after_leaving() {
    let mut sim = star(3);
    let p0 = sim.node_id("p0").unwrap();
    let p1 = sim.node_id("p1").unwrap();
    let seed = sim
        .add_agent(
            "p0",
            "seed",
            Time::ZERO,
            Box::new(Peer::new(cfg(true, Stay::Forever), vec![])),
        )
        .unwrap();
    let leaver = sim
        .add_agent(
            "p1",
            "leaver",
            Time::ZERO,
            Box::new(Peer::new(cfg(false, Stay::Leave), vec![p0, p0])),
        )
        .unwrap();
    sim.run_until(Time::ZERO + Dur::from_millis(1));
    let l: &Peer = sim.agent(leaver).unwrap();
    assert_eq!(l.neighbours(), 1, "dialled once");
    assert_eq!(l.neighbour_nodes(), vec![p0]);
    sim.run_until(Time::ZERO + Dur::from_secs(60));
    let l: &Peer = sim.agent(leaver).unwrap();
    assert!(l.gone(), "it completed and left");
    // A latecomer that the tracker still points at the leaver.
    let late = sim
        .add_agent(
            "p2",
            "late",
            sim.now(),
            Box::new(Peer::new(cfg(false, Stay::Forever), vec![p1, p0])),
        )
        .unwrap();
    sim.run();
    let lp: &Peer = sim.agent(late).unwrap();
    assert_eq!(lp.stats.refused, 1);
    assert!(lp.stats.errors.is_empty(), "{:?}", lp.stats.errors);
    assert!(lp.complete());
    assert!(sim.agent::<Peer>(seed).unwrap().stats.errors.is_empty());
}
