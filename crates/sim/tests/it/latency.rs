//! The latency metrics of `summary.json` against a case worked out by hand.

use crate::common::*;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::Summary;
use hopwise_sim::spec::*;
use hopwise_sim::Sim;

/// One host sends ten full segments to another over one link.
fn burst(warmup: Dur) -> Scenario {
    let mut s = Scenario::new("burst", Dur::from_secs(1), 1);
    for n in ["a", "b"] {
        s.nodes.push(NodeSpec {
            name: n.into(),
            kind: NodeKind::Host,
        });
    }
    let d = dir(
        Rate::from_mbps(12),
        Dur::from_millis(10),
        QueueSpec::DropTail {
            limit: Limit::Packets(100),
        },
    );
    s.links.push(LinkSpec {
        name: "l".into(),
        a: "a".into(),
        b: "b".into(),
        ab: d.clone(),
        ba: d,
    });
    let mut f = bulk("f", "a", "b", CcConfig::NewReno);
    f.tcp = TcpConfig {
        mss: 1460,
        timestamps: false,
        delayed_ack: false,
        ..TcpConfig::default()
    };
    f.traffic = Traffic::Fixed(10 * 1460);
    s.flows.push(f);
    s.measure.warmup = warmup;
    s
}

#[test]
fn latency_of_a_burst_behind_one_queue() {
    let mut sim = Sim::new(&burst(Dur::from_millis(30))).unwrap();
    sim.run();
    let s = Summary::of(&sim, "burst", 0.0);
    let f = &s.flows[0];
    println!("{f:#?}");
    let e = sim.endpoint(sim.flow(sim.flow_id("f").unwrap()).ends()[0]);
    println!("{:?}", e.rtt());
    let r = sim.endpoint(sim.flow(sim.flow_id("f").unwrap()).ends()[1]);
    println!("{:?}", r.queue_delay());
    panic!();
}
