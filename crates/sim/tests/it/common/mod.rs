//! Scenario builders shared by the simulator's tests.
#![allow(dead_code)]

use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::spec::*;

pub fn dir(rate: Rate, delay: Dur, queue: QueueSpec) -> DirSpec {
    DirSpec {
        rate,
        delay,
        queue,
        loss: 0.0,
        model: Default::default(),
    }
}

/// h<i> — r1 — r2 — d<i> dumbbell: access links 1 Gbit/s, `access` delay;
/// bottleneck `rate`, `delay`, drop-tail `limit` in both directions.
pub fn dumbbell(
    n_hosts: usize,
    rate: Rate,
    delay: Dur,
    access: Dur,
    limit: Limit,
    duration: Dur,
) -> Scenario {
    let mut s = Scenario::new("dumbbell", duration, 1);
    for n in ["r1", "r2"] {
        s.nodes.push(NodeSpec {
            name: n.into(),
            kind: NodeKind::Switch,
        });
    }
    let fast = |d| {
        dir(
            Rate::from_mbps(1000),
            d,
            QueueSpec::DropTail {
                limit: Limit::Packets(1000),
            },
        )
    };
    for i in 0..n_hosts {
        for (h, r) in [(format!("h{i}"), "r1"), (format!("d{i}"), "r2")] {
            s.nodes.push(NodeSpec {
                name: h.clone(),
                kind: NodeKind::Host,
            });
            s.links.push(LinkSpec {
                name: format!("{h}-{r}"),
                a: h,
                b: r.into(),
                ab: fast(access),
                ba: fast(access),
            });
        }
    }
    let b = dir(rate, delay, QueueSpec::DropTail { limit });
    s.links.push(LinkSpec {
        name: "bottleneck".into(),
        a: "r1".into(),
        b: "r2".into(),
        ab: b.clone(),
        ba: b,
    });
    s
}

pub fn bulk(name: &str, from: &str, to: &str, cc: CcConfig) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        from: from.into(),
        to: to.into(),
        cc,
        tcp: TcpConfig::default(),
        start: Dur::ZERO,
        stop: None,
        traffic: Traffic::Bulk,
        bidir: false,
        group: None,
    }
}
