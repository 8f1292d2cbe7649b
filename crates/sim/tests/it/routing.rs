//! `hopwise_sim::routing` numbers interfaces as the simulator does, so the
//! routes a scenario's overlay checks compute before a `Sim` exists
//! (`Routing::of`) are the ones packets follow.

use hopwise_proto::time::Dur;
use hopwise_sim::routing::Routing;
use hopwise_sim::{scenario, Sim};
use std::path::PathBuf;

#[test]
fn routing_of_a_scenario_is_the_simulators() {
    for name in [
        "demo.toml",
        "scale.toml",
        "asymmetric-pendulum.toml",
        "overlay-ackprio.toml",
        "otcp-split.toml",
        "newreno-two-flows.toml",
    ] {
        let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios")
            .join(name);
        let sc = scenario::load(&file, &[]).unwrap_or_else(|e| panic!("{e}"));
        let sim = Sim::new(&sc).unwrap();
        let r = Routing::of(&sc).unwrap();
        assert_eq!(r.interfaces(), sim.routing().interfaces(), "{name}");
        assert_eq!(r.interfaces().len(), sim.ifaces().len(), "{name}");
        for (i, h) in sim.ifaces().zip(r.interfaces()) {
            let f = sim.iface(i);
            assert_eq!((f.from(), f.to(), f.delay()), (h.from, h.to, h.delay));
        }
        assert_eq!(r.len(), sim.nodes().len());
        for a in sim.nodes() {
            for b in sim.nodes() {
                let i = r.next_iface(a, b);
                assert_eq!(i, sim.routing().next_iface(a, b));
                // The interface leaves `a`.
                if let Some(i) = i {
                    assert_eq!(sim.iface(i).from(), a, "{name}");
                }
                assert_eq!(i.is_some(), a != b && r.reachable(a, b), "{name}");
            }
        }
        // Every flow has a route: each node on it forwards to the next,
        // and the one-way delay is the sum of the hops'.
        for f in sim.flows() {
            let f = sim.flow(f);
            let (nodes, d) = r.path(f.from(), f.to()).expect("a route");
            assert_eq!((nodes[0], *nodes.last().unwrap()), (f.from(), f.to()));
            let mut sum = Dur::ZERO;
            for w in nodes.windows(2) {
                let h = r.next_hop(w[0], f.to()).expect("a hop");
                assert_eq!((h.from, h.to), (w[0], w[1]), "{name}");
                sum += h.delay;
            }
            assert_eq!(sum, d, "{name}");
            assert_eq!(r.delay(f.from(), f.to()), Some(d), "{name}");
        }
    }
}
