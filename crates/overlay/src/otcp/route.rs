//! Routes over a scenario's topology, as the simulator forwards: each node
//! sends towards a destination by its own breadth-first shortest path (in
//! hops), ties to the lower interface (links in file order, `ab` before
//! `ba`); a node with one interface sends everything through it. Used to
//! check that an oTCP path's relays lie on the route, and for the idle
//! round-trip times relay choice compares.

use hopwise_proto::time::Dur;
use hopwise_sim::spec::Scenario;
use std::collections::VecDeque;

/// The topology's interfaces, by node.
pub struct Topology {
    /// Per node: its interfaces as (index, neighbour, one-way delay), in
    /// interface order.
    out: Vec<Vec<(usize, usize, Dur)>>,
    names: Vec<String>,
}

impl Topology {
    pub fn of(sc: &Scenario) -> Topology {
        let names: Vec<String> = sc.nodes.iter().map(|n| n.name.clone()).collect();
        let id = |s: &str| names.iter().position(|n| n == s);
        let mut out = vec![Vec::new(); names.len()];
        for (k, l) in sc.links.iter().enumerate() {
            let (Some(a), Some(b)) = (id(&l.a), id(&l.b)) else {
                continue;
            };
            out[a].push((2 * k, b, l.ab.delay));
            out[b].push((2 * k + 1, a, l.ba.delay));
        }
        Topology { out, names }
    }

    /// A node's index by name.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// The interface `node` sends towards `dst` by: (neighbour, delay).
    fn next_hop(&self, node: usize, dst: usize) -> Option<(usize, Dur)> {
        let n = self.names.len();
        let mut first: Vec<Option<(usize, Dur)>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[node] = true;
        let mut q = VecDeque::new();
        for &(_, to, d) in &self.out[node] {
            if !seen[to] {
                seen[to] = true;
                first[to] = Some((to, d));
                q.push_back(to);
            }
        }
        while let Some(u) = q.pop_front() {
            for &(_, to, _) in &self.out[u] {
                if !seen[to] {
                    seen[to] = true;
                    first[to] = first[u];
                    q.push_back(to);
                }
            }
        }
        let hop = first[dst]?;
        // A single-homed node's only interface (the same, once reachable).
        Some(match self.out[node].as_slice() {
            [(_, to, d)] => (*to, *d),
            _ => hop,
        })
    }

    /// The nodes a packet from `src` to `dst` crosses, both included, and
    /// the one-way propagation delay; `None` if `dst` is unreachable.
    pub fn path(&self, src: usize, dst: usize) -> Option<(Vec<usize>, Dur)> {
        let mut nodes = vec![src];
        let mut delay = Dur::ZERO;
        let mut at = src;
        while at != dst {
            let (to, d) = self.next_hop(at, dst)?;
            nodes.push(to);
            delay += d;
            at = to;
            if nodes.len() > self.names.len() {
                return None;
            }
        }
        Some((nodes, delay))
    }

    /// The idle round-trip time between `a` and `b`: the propagation delay
    /// there and back (what a probe on an idle network measures, less
    /// transmission times).
    pub fn rtt(&self, a: usize, b: usize) -> Option<Dur> {
        Some(self.path(a, b)?.1 + self.path(b, a)?.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::units::Rate;
    use hopwise_sim::spec::{DirSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec};

    fn topo(links: &[(&str, &str, u64)]) -> Topology {
        let mut sc = Scenario::new("t", Dur::from_secs(1), 1);
        for (a, b, _) in links {
            for n in [a, b] {
                if !sc.nodes.iter().any(|x| &x.name == n) {
                    sc.nodes.push(NodeSpec {
                        name: n.to_string(),
                        kind: NodeKind::Host,
                    });
                }
            }
        }
        for (a, b, ms) in links {
            let d = DirSpec {
                rate: Rate::from_mbps(10),
                delay: Dur::from_millis(*ms),
                queue: QueueSpec::DropTail {
                    limit: Default::default(),
                },
                loss: 0.0,
            };
            sc.links.push(LinkSpec {
                name: format!("{a}-{b}"),
                a: a.to_string(),
                b: b.to_string(),
                ab: d.clone(),
                ba: d,
            });
        }
        Topology::of(&sc)
    }

    #[test]
    fn a_chain_and_a_shortcut() {
        // c - r1 - r2 - s, and c - x - s: two hops beat three.
        let t = topo(&[
            ("c", "r1", 5),
            ("r1", "r2", 5),
            ("r2", "s", 5),
            ("c", "x", 20),
            ("x", "s", 20),
        ]);
        let (c, s) = (t.node("c").unwrap(), t.node("s").unwrap());
        let (p, d) = t.path(c, s).unwrap();
        let names: Vec<&str> = p.iter().map(|&i| t.name(i)).collect();
        assert_eq!(names, ["c", "x", "s"]);
        assert_eq!(d, Dur::from_millis(40));
        assert_eq!(t.rtt(c, s), Some(Dur::from_millis(80)));
        let r2 = t.node("r2").unwrap();
        let (p, _) = t.path(c, r2).unwrap();
        let names: Vec<&str> = p.iter().map(|&i| t.name(i)).collect();
        assert_eq!(names, ["c", "r1", "r2"]);
    }

    #[test]
    fn unreachable() {
        let t = topo(&[("a", "b", 1), ("c", "d", 1)]);
        assert!(t.path(t.node("a").unwrap(), t.node("d").unwrap()).is_none());
    }
}
