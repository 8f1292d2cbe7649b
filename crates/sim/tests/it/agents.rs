//! Agents: applications with their own logic on top of TCP sockets, UDP and timers.

use crate::common::*;
use bytes::Bytes;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::Limit;
use hopwise_sim::{Agent, Cx, NodeId, Sim, Sock, SockEvent};

/// Listens on port 80, counts bytes per accepted connection, answers UDP pings.
#[derive(Default)]
struct Server {
    conns: Vec<(Sock, u64, bool)>,
    pings: u32,
}

impl Agent for Server {
    fn start(&mut self, cx: &mut Cx<'_>) {
        cx.listen(80, TcpConfig::default(), CcConfig::NewReno)
            .unwrap();
        cx.bind_udp(7).unwrap();
    }
    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        match ev {
            SockEvent::Accepted => self.conns.push((sock, 0, false)),
            SockEvent::Readable => {
                let c = self.conns.iter_mut().find(|c| c.0 == sock).unwrap();
                while let Some(b) = cx.recv(sock, usize::MAX) {
                    c.1 += b.len() as u64;
                }
            }
            SockEvent::PeerClosed => {
                self.conns.iter_mut().find(|c| c.0 == sock).unwrap().2 = true;
                cx.close(sock);
            }
            _ => {}
        }
    }
    fn datagram(&mut self, cx: &mut Cx<'_>, from: NodeId, src_port: u16, _dst: u16, data: Bytes) {
        self.pings += 1;
        cx.send_udp(7, from, src_port, data);
    }
}

/// Sends 2 MB on one connection, then opens a second connection at 3 s and
/// sends 1 MB more; pings the server over UDP every 100 ms.
struct Client {
    server: &'static str,
    socks: Vec<Sock>,
    left: Vec<u64>,
    rtts: Vec<Dur>,
    connected: u32,
    closed: u32,
    pings_sent: u32,
}

impl Client {
    fn pump(&mut self, cx: &mut Cx<'_>, i: usize) {
        let s = self.socks[i];
        while self.left[i] > 0 {
            let n = self.left[i].min(64 << 10) as usize;
            let took = cx.send(s, Bytes::from(vec![7u8; n]));
            self.left[i] -= took as u64;
            if took < n {
                return;
            }
        }
        cx.close(s);
    }
}

impl Agent for Client {
    fn start(&mut self, cx: &mut Cx<'_>) {
        let to = cx.node_id(self.server).unwrap();
        self.socks.push(
            cx.connect(
                to,
                80,
                TcpConfig::default(),
                &CcConfig::from_name("cubic").unwrap(),
            )
            .unwrap(),
        );
        self.left.push(2_000_000);
        cx.bind_udp(5000).unwrap();
        cx.set_timer(cx.now() + Dur::from_secs(3), 1);
        cx.set_timer(cx.now() + Dur::from_millis(100), 2);
        // Nothing listens on port 81: the error names the port.
        let err = cx
            .connect(to, 81, TcpConfig::default(), &CcConfig::NewReno)
            .unwrap_err();
        assert!(err.contains("81"), "{err}");
    }
    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        let i = self.socks.iter().position(|&s| s == sock).unwrap();
        match ev {
            SockEvent::Connected => {
                self.connected += 1;
                self.pump(cx, i);
            }
            SockEvent::Writable => self.pump(cx, i),
            SockEvent::PeerClosed => self.closed += 1,
            _ => {}
        }
    }
    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        let to = cx.node_id(self.server).unwrap();
        match token {
            1 => {
                let s = cx
                    .connect(to, 80, TcpConfig::default(), &CcConfig::NewReno)
                    .unwrap();
                self.socks.push(s);
                self.left.push(1_000_000);
            }
            _ => {
                let stamp = cx.now().as_nanos().to_le_bytes();
                cx.send_udp(5000, to, 7, Bytes::copy_from_slice(&stamp));
                self.pings_sent += 1;
                if cx.now() < Time::ZERO + Dur::from_secs(5) {
                    cx.set_timer(cx.now() + Dur::from_millis(100), 2);
                }
            }
        }
    }
    fn datagram(&mut self, cx: &mut Cx<'_>, _from: NodeId, _sp: u16, _dp: u16, data: Bytes) {
        let sent = u64::from_le_bytes(data[..8].try_into().unwrap());
        self.rtts.push(cx.now() - Time::from_nanos(sent));
    }
}

/// One host and one server across a 10 Mbit/s dumbbell, no flows, for `secs`.
fn agents_only(secs: u64) -> Sim {
    let mut s = dumbbell(
        1,
        Rate::from_mbps(10),
        Dur::from_millis(10),
        Dur::from_millis(1),
        Limit::Packets(50),
        Dur::from_secs(secs),
    );
    s.flows.clear();
    Sim::new(&s).unwrap()
}

fn run() -> (Sim, u32, u32) {
    let mut sim = agents_only(20);
    let srv = sim
        .add_agent("d0", "server", Time::ZERO, Box::new(Server::default()))
        .unwrap();
    let cli = sim
        .add_agent(
            "h0",
            "client",
            Time::ZERO + Dur::from_millis(5),
            Box::new(Client {
                server: "d0",
                socks: vec![],
                left: vec![],
                rtts: vec![],
                connected: 0,
                closed: 0,
                pings_sent: 0,
            }),
        )
        .unwrap();
    sim.run();
    (sim, srv, cli)
}

#[test]
fn agents_use_tcp_udp_and_timers() {
    let (sim, srv, cli) = run();
    let server: &Server = sim.agent(srv).unwrap();
    let client: &Client = sim.agent(cli).unwrap();
    assert_eq!(
        client.connected, 2,
        "both connections completed the handshake"
    );
    let mut got: Vec<u64> = server.conns.iter().map(|c| c.1).collect();
    got.sort();
    assert_eq!(
        got,
        vec![1_000_000, 2_000_000],
        "every byte arrived on the right connection"
    );
    assert!(server.conns.iter().all(|c| c.2), "both saw FIN");
    assert_eq!(
        client.closed, 2,
        "the server closed both connections in turn"
    );
    assert_eq!(client.pings_sent, 50, "pings every 100 ms from 5 ms to 5 s");
    // Pings share the 50-packet bottleneck queue with the transfers: the ones
    // that did not arrive were dropped there, and every arrival was answered
    // (the reverse path carries only ACKs).
    let drops: u64 = sim.ifaces().map(|f| sim.iface(f).stats().drops).sum();
    assert!(
        server.pings >= 40 && server.pings as u64 + drops >= 50,
        "{} pings, {drops} drops",
        server.pings
    );
    assert_eq!(client.rtts.len() as u32, server.pings);
    // Path RTT: 2 × (1 + 10 + 1) ms plus serialisation, more when queued behind data.
    let min = client.rtts.iter().min().unwrap();
    assert!(
        *min >= Dur::from_millis(24) && *min < Dur::from_millis(25),
        "{min:?}"
    );
    assert!(
        sim.agent::<Client>(srv).is_none(),
        "downcast to the wrong type fails"
    );
}

#[test]
fn agent_runs_are_deterministic() {
    let (a, ..) = run();
    let (b, ..) = run();
    assert_eq!(a.event_hash(), b.event_hash());
}

#[test]
fn a_large_star_routes_without_quadratic_tables() {
    // 3000 hosts on one switch: only the switch needs a routing table.
    use hopwise_sim::spec::{LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
    let mut s = Scenario::new("star", Dur::from_millis(100), 1);
    s.nodes.push(NodeSpec {
        name: "sw".into(),
        kind: NodeKind::Switch,
    });
    for i in 0..3000 {
        s.nodes.push(NodeSpec {
            name: format!("h{i}"),
            kind: NodeKind::Host,
        });
        let d = dir(
            Rate::from_mbps(100),
            Dur::from_millis(5),
            QueueSpec::DropTail {
                limit: Limit::Packets(100),
            },
        );
        s.links.push(LinkSpec {
            name: format!("l{i}"),
            a: format!("h{i}"),
            b: "sw".into(),
            ab: d.clone(),
            ba: d,
        });
    }
    let mut sim = Sim::new(&s).unwrap();
    let srv = sim
        .add_agent("h2999", "server", Time::ZERO, Box::new(Server::default()))
        .unwrap();
    sim.add_agent(
        "h0",
        "client",
        Time::ZERO + Dur::from_millis(1),
        Box::new(Client {
            server: "h2999",
            socks: vec![],
            left: vec![],
            rtts: vec![],
            connected: 0,
            closed: 0,
            pings_sent: 0,
        }),
    )
    .unwrap();
    sim.run();
    assert_eq!(
        sim.agent::<Server>(srv).unwrap().conns.len(),
        1,
        "h0 reached h2999 through the switch"
    );
}

/// Listens on port 80 until 1 s, then stops; counts what it accepted and
/// the bytes that arrived on it.
#[derive(Default)]
struct Closing {
    accepted: u32,
    bytes: u64,
}

impl Agent for Closing {
    fn start(&mut self, cx: &mut Cx<'_>) {
        cx.listen(80, TcpConfig::default(), CcConfig::NewReno)
            .unwrap();
        cx.set_timer(cx.now() + Dur::from_secs(1), 1);
    }
    fn timer(&mut self, cx: &mut Cx<'_>, _token: u64) {
        cx.unlisten(80);
    }
    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        match ev {
            SockEvent::Accepted => self.accepted += 1,
            SockEvent::Readable => {
                while let Some(b) = cx.recv(sock, usize::MAX) {
                    self.bytes += b.len() as u64;
                }
            }
            _ => {}
        }
    }
}

/// Connects at 0.5 s and sends 100 kB from 1.5 s on; tries again at 2 s.
#[derive(Default)]
struct Late {
    sock: Option<Sock>,
    refused: Option<String>,
}

impl Agent for Late {
    fn start(&mut self, cx: &mut Cx<'_>) {
        cx.set_timer(cx.now() + Dur::from_millis(500), 1);
        cx.set_timer(cx.now() + Dur::from_millis(1500), 2);
        cx.set_timer(cx.now() + Dur::from_secs(2), 3);
    }
    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        let to = cx.node_id("d0").unwrap();
        match token {
            1 => {
                self.sock = Some(
                    cx.connect(to, 80, TcpConfig::default(), &CcConfig::NewReno)
                        .unwrap(),
                )
            }
            2 => {
                let n = cx.send(self.sock.unwrap(), Bytes::from(vec![1u8; 100_000]));
                assert_eq!(n, 100_000);
            }
            _ => {
                self.refused = cx
                    .connect(to, 80, TcpConfig::default(), &CcConfig::NewReno)
                    .err()
            }
        }
    }
}

#[test]
fn unlisten_refuses_later_connections_only() {
    let mut sim = agents_only(5);
    let srv = sim
        .add_agent("d0", "server", Time::ZERO, Box::new(Closing::default()))
        .unwrap();
    let cli = sim
        .add_agent("h0", "client", Time::ZERO, Box::new(Late::default()))
        .unwrap();
    sim.run();
    let server: &Closing = sim.agent(srv).unwrap();
    let client: &Late = sim.agent(cli).unwrap();
    assert_eq!(server.accepted, 1);
    assert_eq!(server.bytes, 100_000, "the accepted connection stays open");
    let err = client.refused.as_deref().expect("refused after unlisten");
    assert!(err.contains("port 80"), "{err}");
}
