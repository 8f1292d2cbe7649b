//! Routes over a scenario's topology: the one routing rule of hopwise.
//!
//! The rule, the same for every packet and every node:
//!
//! * a node sends towards a destination along a breadth-first shortest
//!   path in hops, computed from that node (not a source route: every node
//!   on the way decides again, with its own table);
//! * ties go to the lower interface index. Interfaces are link directions,
//!   numbered as [`crate::Sim`] numbers them: links in scenario order, each
//!   link's `ab` direction (its `a` node's output) before its `ba`
//!   direction, so `2·k` and `2·k + 1` for the `k`-th link (the
//!   [`IfaceId`] of the same direction);
//! * a node with a single interface (a host on one access link) sends
//!   everything through it, to any node it can reach;
//! * nodes reach each other iff they are in the same connected component
//!   (links are full duplex); a packet to an unreachable node, or to a
//!   number that names no node, has no route.
//!
//! Only nodes with several interfaces (switches, multi-homed hosts) get a
//! table, one entry per node: a star of thousands of hosts needs one table,
//! not one per host.
//!
//! Both the simulator and the overlay checks use it: [`crate::Sim::new`]
//! forwards by these tables ([`crate::Sim::routing`]), and hopwise-overlay
//! builds a [`Routing::of`] the scenario at parse time (before any `Sim`
//! exists) to check that an oTCP path's relays lie on the route and to
//! compute the idle round-trip times its relay choice compares
//! ([`Routing::path`], [`Routing::rtt`]).
//!
//! ```
//! # use hopwise_sim::routing::Routing;
//! # fn show(sc: &hopwise_sim::spec::Scenario) -> Result<(), String> {
//! let routes = Routing::of(sc)?;
//! let (a, b) = (sc.node_id("client").unwrap(), sc.node_id("server").unwrap());
//! if let Some((nodes, delay)) = routes.path(a, b) {
//!     println!("{} hops, {delay:?} one way", nodes.len() - 1);
//! }
//! # Ok(())
//! # }
//! ```

use crate::packet::NodeId;
use crate::query::IfaceId;
use crate::spec::Scenario;
use hopwise_proto::time::Dur;
use std::collections::VecDeque;

/// One interface (a link direction): the node that sends on it, the node
/// at the far end, and its one-way propagation delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub from: NodeId,
    pub to: NodeId,
    pub delay: Dur,
}

/// What a node routes by.
#[derive(Debug)]
struct NodeRoutes {
    /// Output interface towards each destination node (`u32::MAX`:
    /// unreachable). Empty for a node with at most one interface, which
    /// uses `default`.
    table: Vec<u32>,
    /// The only interface of a single-homed node (`u32::MAX`: none).
    default: u32,
    /// Connected component (nodes reach each other iff their components match).
    component: u32,
}

/// The routes of a topology: each node's output interface towards every
/// destination (see the [module documentation](self) for the rule).
#[derive(Debug)]
pub struct Routing {
    ifaces: Vec<Hop>,
    nodes: Vec<NodeRoutes>,
}

impl Routing {
    /// The routes of a scenario's `[[node]]`s and `[[link]]`s, with its
    /// interfaces numbered as the simulator numbers them. An error names a
    /// link end that is no node (a validated scenario has none).
    pub fn of(sc: &Scenario) -> Result<Routing, String> {
        let id = |name: &str| -> Result<NodeId, String> {
            sc.node_id(name)
                .ok_or_else(|| format!("unknown node `{name}`"))
        };
        let mut ifaces = Vec::with_capacity(2 * sc.links.len());
        for l in &sc.links {
            let (a, b) = (id(&l.a)?, id(&l.b)?);
            ifaces.push(Hop {
                from: a,
                to: b,
                delay: l.ab.delay,
            });
            ifaces.push(Hop {
                from: b,
                to: a,
                delay: l.ba.delay,
            });
        }
        Ok(Routing::new(sc.nodes.len(), ifaces))
    }

    /// The routes of `nodes` nodes (ids `0..nodes`) joined by `ifaces`,
    /// interface `i` being `ifaces[i]`.
    ///
    /// # Panics
    /// If an interface names a node `>= nodes`.
    pub fn new(nodes: usize, ifaces: Vec<Hop>) -> Routing {
        let n = nodes;
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, f) in ifaces.iter().enumerate() {
            out[f.from.index()].push(i as u32);
        }
        // Reachability is symmetric (links are full duplex): one component id per node.
        let mut comp = vec![u32::MAX; n];
        for s in 0..n {
            if comp[s] != u32::MAX {
                continue;
            }
            comp[s] = s as u32;
            let mut q = VecDeque::from([s]);
            while let Some(u) = q.pop_front() {
                for &i in &out[u] {
                    let t = ifaces[i as usize].to.index();
                    if comp[t] == u32::MAX {
                        comp[t] = s as u32;
                        q.push_back(t);
                    }
                }
            }
        }
        let mut routes = Vec::with_capacity(n);
        for src in 0..n {
            let mut r = NodeRoutes {
                table: Vec::new(),
                default: u32::MAX,
                component: comp[src],
            };
            match out[src].as_slice() {
                // No interface: no route but to itself (its component is itself).
                [] => {}
                [only] => r.default = *only,
                several => {
                    let mut first_hop = vec![u32::MAX; n];
                    let mut seen = vec![false; n];
                    seen[src] = true;
                    let mut q = VecDeque::new();
                    for &i in several {
                        let to = ifaces[i as usize].to.index();
                        if !seen[to] {
                            seen[to] = true;
                            first_hop[to] = i;
                            q.push_back(to);
                        }
                    }
                    while let Some(u) = q.pop_front() {
                        for &i in &out[u] {
                            let to = ifaces[i as usize].to.index();
                            if !seen[to] {
                                seen[to] = true;
                                first_hop[to] = first_hop[u];
                                q.push_back(to);
                            }
                        }
                    }
                    r.table = first_hop;
                }
            }
            routes.push(r);
        }
        Routing {
            ifaces,
            nodes: routes,
        }
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The interfaces, by index.
    pub fn interfaces(&self) -> &[Hop] {
        &self.ifaces
    }

    /// The interface `node` sends a packet for `dst` by, or `u32::MAX` if
    /// none (the simulator's forwarding step).
    #[inline]
    pub(crate) fn out(&self, node: NodeId, dst: NodeId) -> u32 {
        let n = &self.nodes[node.index()];
        if n.table.is_empty() {
            if node != dst
                && self
                    .nodes
                    .get(dst.index())
                    .is_some_and(|d| d.component == n.component)
            {
                n.default
            } else {
                u32::MAX
            }
        } else {
            n.table.get(dst.index()).copied().unwrap_or(u32::MAX)
        }
    }

    /// The interface `node` sends a packet for `dst` by; `None` if `dst` is
    /// `node` itself, unreachable, or no node.
    pub fn next_iface(&self, node: NodeId, dst: NodeId) -> Option<IfaceId> {
        match self.out(node, dst) {
            u32::MAX => None,
            i => Some(IfaceId(i)),
        }
    }

    /// The interface `node` sends a packet for `dst` by, as a [`Hop`]
    /// (the next node and the delay to it); `None` as for
    /// [`Routing::next_iface`].
    pub fn next_hop(&self, node: NodeId, dst: NodeId) -> Option<Hop> {
        self.next_iface(node, dst).map(|i| self.ifaces[i.index()])
    }

    /// Whether packets from `a` reach `b` (a node reaches itself).
    pub fn reachable(&self, a: NodeId, b: NodeId) -> bool {
        match (self.nodes.get(a.index()), self.nodes.get(b.index())) {
            (Some(x), Some(y)) => x.component == y.component,
            _ => false,
        }
    }

    /// The nodes a packet from `src` to `dst` crosses, both included, and
    /// the one-way propagation delay; `None` if `dst` is unreachable.
    pub fn path(&self, src: NodeId, dst: NodeId) -> Option<(Vec<NodeId>, Dur)> {
        if src.index() >= self.nodes.len() {
            return None;
        }
        let mut nodes = vec![src];
        let mut delay = Dur::ZERO;
        let mut at = src;
        while at != dst {
            let h = self.next_hop(at, dst)?;
            nodes.push(h.to);
            delay += h.delay;
            at = h.to;
            if nodes.len() > self.nodes.len() {
                return None;
            }
        }
        Some((nodes, delay))
    }

    /// The one-way propagation delay from `src` to `dst` along the route
    /// (transmission and queueing times not included).
    pub fn delay(&self, src: NodeId, dst: NodeId) -> Option<Dur> {
        self.path(src, dst).map(|(_, d)| d)
    }

    /// The idle round-trip time between `a` and `b`: the propagation delay
    /// there and back (what a probe on an idle network measures, less
    /// transmission times).
    pub fn rtt(&self, a: NodeId, b: NodeId) -> Option<Dur> {
        Some(self.delay(a, b)? + self.delay(b, a)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{DirSpec, LinkSpec, NodeKind, NodeSpec, QueueSpec};
    use hopwise_proto::units::Rate;

    fn scenario(links: &[(&str, &str, u64)]) -> Scenario {
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
                model: Default::default(),
            };
            sc.links.push(LinkSpec {
                name: format!("{a}-{b}"),
                a: a.to_string(),
                b: b.to_string(),
                ab: d.clone(),
                ba: d,
            });
        }
        sc
    }

    fn names(sc: &Scenario, p: &[NodeId]) -> Vec<String> {
        p.iter().map(|n| sc.nodes[n.index()].name.clone()).collect()
    }

    #[test]
    fn a_chain_and_a_shortcut() {
        // c - r1 - r2 - s, and c - x - s: two hops beat three.
        let sc = scenario(&[
            ("c", "r1", 5),
            ("r1", "r2", 5),
            ("r2", "s", 5),
            ("c", "x", 20),
            ("x", "s", 20),
        ]);
        let t = Routing::of(&sc).unwrap();
        let (c, s) = (sc.node_id("c").unwrap(), sc.node_id("s").unwrap());
        let (p, d) = t.path(c, s).unwrap();
        assert_eq!(names(&sc, &p), ["c", "x", "s"]);
        assert_eq!(d, Dur::from_millis(40));
        assert_eq!(t.delay(c, s), Some(Dur::from_millis(40)));
        assert_eq!(t.rtt(c, s), Some(Dur::from_millis(80)));
        let r2 = sc.node_id("r2").unwrap();
        let (p, _) = t.path(c, r2).unwrap();
        assert_eq!(names(&sc, &p), ["c", "r1", "r2"]);
        // c's interfaces are 0 (c-r1:ab) and 6 (c-x:ab).
        assert_eq!(t.next_iface(c, s).map(IfaceId::index), Some(6));
        assert_eq!(t.next_iface(c, r2).map(IfaceId::index), Some(0));
        assert_eq!(t.path(c, c), Some((vec![c], Dur::ZERO)));
        assert_eq!(t.next_iface(c, c), None);
    }

    #[test]
    fn ties_go_to_the_lower_interface() {
        // a - b - d and a - c - d: two hops either way; a-b comes first.
        let sc = scenario(&[("a", "b", 1), ("a", "c", 1), ("b", "d", 9), ("c", "d", 1)]);
        let t = Routing::of(&sc).unwrap();
        let (a, d) = (sc.node_id("a").unwrap(), sc.node_id("d").unwrap());
        assert_eq!(names(&sc, &t.path(a, d).unwrap().0), ["a", "b", "d"]);
        // From d, d-b is `b-d:ba` (5) and d-c is `c-d:ba` (7): back via b.
        assert_eq!(names(&sc, &t.path(d, a).unwrap().0), ["d", "b", "a"]);
        assert_eq!(t.rtt(a, d), Some(Dur::from_millis(20)));
    }

    #[test]
    fn a_star_has_one_table() {
        // A switch and 50 single-homed hosts: only the switch has a table.
        let hosts: Vec<String> = (0..50).map(|i| format!("h{i}")).collect();
        let links: Vec<(&str, &str, u64)> = hosts.iter().map(|h| ("sw", h.as_str(), 1)).collect();
        let sc = scenario(&links);
        let t = Routing::of(&sc).unwrap();
        let tables = t.nodes.iter().filter(|n| !n.table.is_empty()).count();
        assert_eq!(tables, 1);
        let (h0, h49) = (sc.node_id("h0").unwrap(), sc.node_id("h49").unwrap());
        assert_eq!(names(&sc, &t.path(h0, h49).unwrap().0), ["h0", "sw", "h49"]);
        // A host sends by its only interface (its link's `ba` direction).
        assert_eq!(t.next_iface(h0, h49).map(IfaceId::index), Some(1));
    }

    #[test]
    fn unreachable() {
        let sc = scenario(&[("a", "b", 1), ("c", "d", 1)]);
        let t = Routing::of(&sc).unwrap();
        let (a, d) = (sc.node_id("a").unwrap(), sc.node_id("d").unwrap());
        assert!(t.path(a, d).is_none());
        assert!(t.rtt(a, d).is_none());
        assert!(!t.reachable(a, d));
        assert_eq!(t.next_iface(a, d), None);
        // A number that names no node.
        assert_eq!(t.next_iface(a, NodeId(99)), None);
        assert!(t.path(NodeId(99), a).is_none());
    }

    #[test]
    fn an_unknown_link_end_is_an_error() {
        let mut sc = scenario(&[("a", "b", 1)]);
        sc.links[0].b = "zz".into();
        assert_eq!(Routing::of(&sc).unwrap_err(), "unknown node `zz`");
    }
}
