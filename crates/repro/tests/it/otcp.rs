//! `hopwise reproduce otcp` (seed 001): relays deliver byte-exact and
//! pipeline, refuse bad headers by name, runs are deterministic, and a
//! quick run writes its outputs.

use bytes::Bytes;
use hopwise_experiment::{Silent, Verdict};
use hopwise_overlay::otcp::agents::{Node, PORT};
use hopwise_overlay::otcp::chain::run_path;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_repro::otcp::{table1_hops, Regime};
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::{Agent, Cx, Sim, Sock, SockEvent};

#[test]
fn a_window_limited_chain_runs_at_its_slowest_hop() {
    // 32 KiB receive windows, no loss: one hop of 40 ms carries 32 KiB per
    // 40 ms; three hops of 40 ms pipeline to nearly the same rate, and one
    // hop of 120 ms (their sum) gets a third of it.
    let (t, w) = Regime::Window.setup(1_000_000);
    let one = run_path(&table1_hops(1, 40.0), &t, &w, 1).unwrap();
    let three = run_path(&table1_hops(3, 40.0), &t, &w, 1).unwrap();
    let long = run_path(&table1_hops(1, 120.0), &t, &w, 1).unwrap();
    let ideal = (32 << 10) as f64 * 8.0 / 0.040;
    assert!(
        one.goodput_bps > 0.7 * ideal && one.goodput_bps <= ideal,
        "one hop: {:.0} of {ideal:.0} bit/s",
        one.goodput_bps
    );
    assert!(
        three.goodput_bps > 0.9 * one.goodput_bps,
        "three hops {:.0}, one hop {:.0} bit/s",
        three.goodput_bps,
        one.goodput_bps
    );
    assert!(
        three.goodput_bps > 2.5 * long.goodput_bps,
        "split {:.0} against direct {:.0} bit/s",
        three.goodput_bps,
        long.goodput_bps
    );
    // Each relay connects on demand: the first byte reaches the server
    // after a handshake and a header per hop, later than over one hop.
    assert!(three.first_byte_s > 2.0 * one.first_byte_s);
}

#[test]
fn transfers_are_deterministic_per_seed_and_survive_loss() {
    let (t, w) = Regime::Loss.setup(500_000);
    let hops = table1_hops(2, 50.0);
    let a = run_path(&hops, &t, &w, 7).unwrap();
    let b = run_path(&hops, &t, &w, 7).unwrap();
    let c = run_path(&hops, &t, &w, 8).unwrap();
    assert_eq!((a.secs, a.events), (b.secs, b.events));
    assert_ne!((a.secs, a.events), (c.secs, c.events));
    // run_path checks that every byte arrived; losses were repaired.
    assert!(a.retransmits + c.retransmits > 0, "0.3 % loss on 2 links");
}

/// Connects to `to` and sends `bytes` instead of a route header (and
/// closes, if `close`).
struct Garbage {
    to: &'static str,
    bytes: &'static [u8],
    close: bool,
    sock: Option<Sock>,
    reset: bool,
}

impl Agent for Garbage {
    fn start(&mut self, cx: &mut Cx<'_>) {
        let to = cx.node_id(self.to).unwrap();
        self.sock = Some(
            cx.connect(to, PORT, TcpConfig::default(), &CcConfig::NewReno)
                .unwrap(),
        );
    }
    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        match ev {
            SockEvent::Connected => {
                cx.send(sock, Bytes::from_static(self.bytes));
                if self.close {
                    cx.close(sock);
                }
            }
            SockEvent::Reset => self.reset = true,
            _ => {}
        }
    }
}

/// Runs a node on `b` and a [`Garbage`] client on `a`; the node's errors
/// and whether the client saw a reset.
fn garbage(bytes: &'static [u8], close: bool) -> (Vec<String>, bool, u64) {
    let mut s = Scenario::new("otcp/garbage", Dur::from_secs(5), 1);
    for n in ["a", "b"] {
        s.nodes.push(NodeSpec {
            name: n.into(),
            kind: NodeKind::Host,
        });
    }
    let dir = DirSpec {
        rate: hopwise_proto::units::Rate::from_mbps(10),
        delay: Dur::from_millis(5),
        queue: QueueSpec::DropTail {
            limit: Limit::Packets(100),
        },
        loss: 0.0,
        model: Default::default(),
    };
    s.links.push(LinkSpec {
        name: "ab".into(),
        a: "a".into(),
        b: "b".into(),
        ab: dir.clone(),
        ba: dir,
    });
    let mut sim = Sim::new(&s).unwrap();
    let node = sim
        .add_agent(
            "b",
            "node",
            Time::ZERO,
            Box::new(Node::new(TcpConfig::default(), CcConfig::NewReno, 1 << 16)),
        )
        .unwrap();
    let client = sim
        .add_agent(
            "a",
            "garbage",
            Time::ZERO,
            Box::new(Garbage {
                to: "b",
                bytes,
                close,
                sock: None,
                reset: false,
            }),
        )
        .unwrap();
    sim.run();
    let n: &Node = sim.agent(node).unwrap();
    assert!(n.received.is_empty());
    let g: &Garbage = sim.agent(client).unwrap();
    (n.errors.clone(), g.reset, n.relayed)
}

#[test]
fn a_relay_refuses_a_bad_header_and_names_the_field() {
    let (errors, reset, relayed) = garbage(b"GET / HTTP/1.1\r\n\r\n", false);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("`magic`"), "{}", errors[0]);
    assert_eq!(relayed, 0);
    assert!(reset, "the relay resets the connection");
    // A header cut short by FIN is an error too, not a connection left open.
    let (errors, reset, _) = garbage(b"oT\x01\x02\x0a", true);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("before its route header"),
        "{}",
        errors[0]
    );
    assert!(reset);
}

#[test]
fn quick_run_writes_every_output() {
    let dir = std::env::temp_dir().join(format!("hopwise-otcp-{}", std::process::id()));
    let opts = hopwise_experiment::Opts {
        seeds: Some(2),
        jobs: 2,
        ..hopwise_experiment::Opts::new(&dir, true)
    };
    let exp = hopwise_repro::find("otcp").expect("registered");
    let out = exp.run(&opts, &Silent).unwrap();
    for f in &out.files {
        let p = dir.join(f);
        assert!(
            p.metadata().map(|m| m.len() > 0).unwrap_or(false),
            "{f} missing or empty"
        );
    }
    for f in [
        "table1.svg",
        "sizes.svg",
        "trace_reduction.svg",
        "selection.svg",
        "pairs.svg",
    ] {
        assert!(out.files.iter().any(|x| x == f), "{f} not listed");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["table1"].as_array().unwrap().len(), 12);
    assert_eq!(summary["trace"]["budgets"].as_array().unwrap().len(), 4);
    // The window-limited chain reproduces Table 1's shape: every hop helps.
    let gains: Vec<f64> = summary["table1"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["regime"] == "window")
        .map(|r| r["gain"].as_f64().unwrap())
        .collect();
    assert!(gains.windows(2).all(|w| w[1] > w[0]), "{gains:?}");
    assert!(out
        .claims
        .iter()
        .any(|c| c.figure == "§3 (hops)" && c.verdict == Verdict::Holds));
    let _ = std::fs::remove_dir_all(&dir);
}
