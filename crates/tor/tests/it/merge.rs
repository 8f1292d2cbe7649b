//! A network merged onto a scenario of its own (`TorNet::extend`): hosts
//! on existing nodes get no access link, generated hosts may hang off the
//! scenario's switch, and into an empty scenario it is `TorNet::scenario`.

use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::Sim;
use hopwise_tor::*;

fn acc() -> Access {
    Access::star(Rate::from_mbps(100), Dur::from_millis(20))
}

fn three_relays(net: &mut TorNet) {
    for r in ["guard", "middle", "exit"] {
        net.relay(r, Some(BucketSpec::new(2_000_000)), acc());
    }
}

#[test]
fn extend_into_an_empty_scenario_is_scenario() {
    let mut net = TorNet::new(TransportConfig::vanilla());
    three_relays(&mut net);
    net.client("op", acc());
    net.circuit(CircuitSpec::new(
        "c",
        "op",
        &["guard", "middle", "exit"],
        Traffic::bulk(1 << 20),
    ));
    let a = net.scenario("x", 1, Dur::from_secs(1)).unwrap();
    let mut b = Scenario::new("x", Dur::from_secs(1), 1);
    net.extend(&mut b).unwrap();
    assert_eq!(a.nodes, b.nodes);
    assert_eq!(a.links, b.links);
}

#[test]
fn a_client_on_a_node_of_the_scenario() {
    let mut sc = Scenario::new("x", Dur::from_secs(4), 1);
    sc.nodes.push(NodeSpec {
        name: "home".into(),
        kind: NodeKind::Host,
    });
    sc.nodes.push(NodeSpec {
        name: "hub".into(),
        kind: NodeKind::Switch,
    });
    let dir = DirSpec {
        rate: Rate::from_mbps(10),
        delay: Dur::from_millis(2),
        queue: QueueSpec::default(),
        loss: 0.0,
        model: Default::default(),
    };
    sc.links.push(LinkSpec {
        name: "home-hub".into(),
        a: "home".into(),
        b: "hub".into(),
        ab: dir.clone(),
        ba: dir,
    });
    let mut net = TorNet::new(TransportConfig::vanilla());
    three_relays(&mut net);
    net.client_on(
        "home",
        Access::new(Rate::from_mbps(10), Dur::from_millis(2)),
    );
    net.circuit(CircuitSpec::new(
        "c",
        "home",
        &["guard", "middle", "exit"],
        Traffic::one_shot(1 << 20),
    ));
    net.extend(&mut sc).unwrap();
    // `hub` is not added twice; `home` gets no access link of its own.
    assert_eq!(sc.nodes.iter().filter(|n| n.name == "hub").count(), 1);
    assert_eq!(sc.nodes.len(), 5);
    assert_eq!(sc.links.len(), 4);
    assert!(!sc.links.iter().any(|l| l.name == "home~hub"));
    let mut sim = Sim::new(&sc).unwrap();
    let inst = net.install(&mut sim).unwrap();
    sim.run();
    let r = inst.results(&sim);
    assert_eq!(r.circuits[0].completed(), 1, "{:?}", r.circuits[0].requests);

    // A host the scenario does not have cannot be used as existing.
    let mut net = TorNet::new(TransportConfig::vanilla());
    three_relays(&mut net);
    net.client_on("nowhere", acc());
    net.circuit(CircuitSpec::new(
        "c",
        "nowhere",
        &["guard"],
        Traffic::bulk(1),
    ));
    let e = net
        .extend(&mut Scenario::new("y", Dur::from_secs(1), 1))
        .unwrap_err();
    assert!(e.contains("`nowhere` is not a node"), "{e}");
}
