//! The builder: relays, clients, servers, switches and circuits in, a
//! simulation (scenario + agents) out, and results back.
//!
//! Topology: every host hangs off a switch by an access link (rate, one-way
//! delay, queue); switches are joined by trunks. One switch gives a star (a
//! pair of hosts with access delays `d₁`, `d₂` has RTT `2(d₁ + d₂)`, so
//! `d = r/4` everywhere gives every pair RTT `r`); two switches and a trunk
//! give a dumbbell.
//!
//! ```no_run
//! use hopwise_tor::*;
//! use hopwise_proto::time::Dur;
//! use hopwise_proto::units::Rate;
//!
//! let mut net = TorNet::new(TransportConfig::vanilla());
//! let acc = Access::new(Rate::from_mbps(1000), Dur::from_millis(10));
//! net.client("op", acc);
//! for r in ["guard", "exit"] {
//!     net.relay(r, None, acc);
//! }
//! net.relay("middle", Some(BucketSpec::new(1_500_000)), acc);
//! net.circuit(
//!     CircuitSpec::new("c0", "op", &["guard", "middle", "exit"], Traffic::bulk(1 << 30)).trace(true),
//! );
//! let mut run = net.build("fig5", 1, Dur::from_secs(30)).unwrap();
//! run.run();
//! let res = run.results();
//! let fit = res.circuits[0].fit(Dur::from_secs(10)).unwrap();
//! println!("{:.0} B/s, {:.0} B backlog, {:.1} ms", fit.rate, fit.backlog, fit.delay * 1e3);
//! ```

use crate::config::{BucketSpec, LinkSharing, ServerSpec, TorConfig, Traffic, TransportConfig};
use crate::node::TorNode;
use crate::plan::{EdgePlan, HopPlan, Leg, LinkPlan, NodePlan, Uplink};
use crate::results::{CircuitResult, HopLosses, HopTrace, NodeResult, TorResults};
use crate::server::ServerAgent;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
use hopwise_sim::Sim;
use std::collections::BTreeMap;

/// The switch hosts attach to when none is named.
pub const DEFAULT_SWITCH: &str = "hub";
/// Port of server hosts.
pub const SERVER_PORT: u16 = 80;

/// A host's access link to its switch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access {
    /// Downstream rate (switch → host), and upstream unless `up` is set.
    pub rate: Rate,
    /// Upstream rate (host → switch), if different.
    pub up: Option<Rate>,
    /// One-way propagation delay, both directions.
    pub delay: Dur,
    /// Drop-tail limit of both directions' queues (default 1000 packets).
    pub queue: Limit,
    /// Random loss probability per packet, each direction.
    pub loss: f64,
}

impl Access {
    pub fn new(rate: Rate, delay: Dur) -> Access {
        Access {
            rate,
            up: None,
            delay,
            queue: Limit::default(),
            loss: 0.0,
        }
    }
    /// An access link in a star where every pair of hosts has RTT `rtt`.
    pub fn star(rate: Rate, rtt: Dur) -> Access {
        Access::new(rate, Dur::from_nanos(rtt.as_nanos() / 4))
    }
    pub fn up(mut self, rate: Rate) -> Self {
        self.up = Some(rate);
        self
    }
    pub fn queue(mut self, limit: Limit) -> Self {
        self.queue = limit;
        self
    }
    pub fn loss(mut self, p: f64) -> Self {
        self.loss = p;
        self
    }
}

#[derive(Clone, Debug)]
enum Role {
    Relay(Option<BucketSpec>),
    Client,
    Server,
}

#[derive(Clone, Debug)]
struct NodeDef {
    name: String,
    role: Role,
    access: Access,
    switch: String,
    /// The host is a node of the scenario already (built elsewhere, e.g. a
    /// scenario file's `[[node]]`): [`TorNet::extend`] adds neither it nor
    /// an access link; `access` gives only its uplink (rate, queue).
    existing: bool,
}

#[derive(Clone, Debug)]
struct Trunk {
    a: String,
    b: String,
    rate: Rate,
    delay: Dur,
    queue: Limit,
}

/// A circuit: a client, a path of relays (guard first, exit last), where the
/// server is, what the client application does and when it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct CircuitSpec {
    pub name: String,
    pub client: String,
    pub path: Vec<String>,
    pub server: ServerSpec,
    pub traffic: Traffic,
    /// When the client application issues its first request.
    pub start: Dur,
    /// Record R(t)/W(t) and per-hop queues.
    pub trace: bool,
}

impl CircuitSpec {
    /// A circuit served by its exit, starting at time 0, not traced.
    pub fn new(name: &str, client: &str, path: &[&str], traffic: Traffic) -> CircuitSpec {
        CircuitSpec {
            name: name.into(),
            client: client.into(),
            path: path.iter().map(|s| s.to_string()).collect(),
            server: ServerSpec::AtExit,
            traffic,
            start: Dur::ZERO,
            trace: false,
        }
    }
    pub fn server(mut self, s: ServerSpec) -> Self {
        self.server = s;
        self
    }
    pub fn start(mut self, t: Dur) -> Self {
        self.start = t;
        self
    }
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }
}

/// A Tor network to simulate.
#[derive(Clone, Debug)]
pub struct TorNet {
    pub config: TorConfig,
    switches: Vec<String>,
    trunks: Vec<Trunk>,
    nodes: Vec<NodeDef>,
    circuits: Vec<CircuitSpec>,
}

impl TorNet {
    /// An empty network with [`TorConfig::new`]'s defaults for `transport`.
    pub fn new(transport: TransportConfig) -> TorNet {
        TorNet::with_config(TorConfig::new(transport))
    }

    pub fn with_config(config: TorConfig) -> TorNet {
        TorNet {
            config,
            switches: Vec::new(),
            trunks: Vec::new(),
            nodes: Vec::new(),
            circuits: Vec::new(),
        }
    }

    /// Adds a switch.
    pub fn switch(&mut self, name: &str) -> &mut Self {
        if !self.switches.iter().any(|s| s == name) {
            self.switches.push(name.into());
        }
        self
    }

    /// Joins two switches (both directions: `rate`, `delay`, drop-tail `queue`).
    pub fn trunk(&mut self, a: &str, b: &str, rate: Rate, delay: Dur, queue: Limit) -> &mut Self {
        self.switch(a).switch(b);
        self.trunks.push(Trunk {
            a: a.into(),
            b: b.into(),
            rate,
            delay,
            queue,
        });
        self
    }

    fn add(&mut self, name: &str, role: Role, access: Access, switch: &str) -> &mut Self {
        self.switch(switch);
        self.nodes.push(NodeDef {
            name: name.into(),
            role,
            access,
            switch: switch.into(),
            existing: false,
        });
        self
    }

    /// A host that is already a node of the scenario the network is merged
    /// into ([`TorNet::extend`]): no host node, no switch, no access link is
    /// generated for it. `uplink` is its link towards the network (rate,
    /// queue), which the transports use to model their own uplink queue.
    fn add_existing(&mut self, name: &str, role: Role, uplink: Access) -> &mut Self {
        self.nodes.push(NodeDef {
            name: name.into(),
            role,
            access: uplink,
            switch: String::new(),
            existing: true,
        });
        self
    }

    /// A relay on an existing node of the scenario (see [`TorNet::extend`]).
    pub fn relay_on(
        &mut self,
        name: &str,
        bucket: Option<BucketSpec>,
        uplink: Access,
    ) -> &mut Self {
        self.add_existing(name, Role::Relay(bucket), uplink)
    }
    /// A client on an existing node of the scenario.
    pub fn client_on(&mut self, name: &str, uplink: Access) -> &mut Self {
        self.add_existing(name, Role::Client, uplink)
    }
    /// A server on an existing node of the scenario.
    pub fn server_on(&mut self, name: &str, uplink: Access) -> &mut Self {
        self.add_existing(name, Role::Server, uplink)
    }

    /// A relay on the default switch; `bucket` is its token bucket (`None`: unlimited).
    pub fn relay(&mut self, name: &str, bucket: Option<BucketSpec>, access: Access) -> &mut Self {
        self.add(name, Role::Relay(bucket), access, DEFAULT_SWITCH)
    }
    pub fn relay_at(
        &mut self,
        name: &str,
        switch: &str,
        bucket: Option<BucketSpec>,
        access: Access,
    ) -> &mut Self {
        self.add(name, Role::Relay(bucket), access, switch)
    }
    /// A client host (onion proxy and application) on the default switch.
    pub fn client(&mut self, name: &str, access: Access) -> &mut Self {
        self.add(name, Role::Client, access, DEFAULT_SWITCH)
    }
    pub fn client_at(&mut self, name: &str, switch: &str, access: Access) -> &mut Self {
        self.add(name, Role::Client, access, switch)
    }
    /// A server host on the default switch.
    pub fn server(&mut self, name: &str, access: Access) -> &mut Self {
        self.add(name, Role::Server, access, DEFAULT_SWITCH)
    }
    pub fn server_at(&mut self, name: &str, switch: &str, access: Access) -> &mut Self {
        self.add(name, Role::Server, access, switch)
    }
    /// Adds a circuit.
    pub fn circuit(&mut self, c: CircuitSpec) -> &mut Self {
        self.circuits.push(c);
        self
    }

    pub fn circuits(&self) -> &[CircuitSpec] {
        &self.circuits
    }

    /// Nodes by name (lookups stay O(log n) for networks of thousands).
    fn by_name(&self) -> BTreeMap<&str, &NodeDef> {
        self.nodes.iter().map(|n| (n.name.as_str(), n)).collect()
    }

    fn validate(&self) -> Result<(), String> {
        let ix = self.by_name();
        let node = |n: &str| ix.get(n).copied();
        let mut seen = BTreeMap::new();
        for n in self
            .switches
            .iter()
            .chain(self.nodes.iter().map(|n| &n.name))
        {
            if seen.insert(n.as_str(), ()).is_some() {
                return Err(format!("name `{n}` is used twice"));
            }
        }
        let mut names = BTreeMap::new();
        for c in &self.circuits {
            if names.insert(c.name.as_str(), ()).is_some() {
                return Err(format!("circuit name `{}` is used twice", c.name));
            }
            let what = |m: &str| format!("circuit `{}`: {m}", c.name);
            match node(&c.client) {
                Some(NodeDef {
                    role: Role::Client, ..
                }) => {}
                _ => return Err(what(&format!("`{}` is not a client", c.client))),
            }
            if c.path.is_empty() {
                return Err(what("empty path"));
            }
            for (i, r) in c.path.iter().enumerate() {
                if !matches!(
                    node(r),
                    Some(NodeDef {
                        role: Role::Relay(_),
                        ..
                    })
                ) {
                    return Err(what(&format!("`{r}` is not a relay")));
                }
                if c.path[..i].contains(r) {
                    return Err(what(&format!("relay `{r}` appears twice")));
                }
            }
            if let ServerSpec::Host(s) = &c.server {
                if !matches!(
                    node(s),
                    Some(NodeDef {
                        role: Role::Server,
                        ..
                    })
                ) {
                    return Err(what(&format!("`{s}` is not a server")));
                }
            }
            if c.traffic.size == 0 {
                return Err(what("requests of 0 bytes"));
            }
        }
        if let TransportConfig::Tcp(t) = &self.config.transport {
            if self.config.circuit_window.is_none()
                && self.config.stream_window.is_none()
                && self.config.vegas.is_none()
                && t.credits.is_none()
                && t.edge_highwater.is_none()
            {
                return Err(
                    "vanilla transport without any end-to-end window, congestion control, \
                     N23 credits or edge high-water mark: the exit would package without bound"
                        .into(),
                );
            }
            if let Some(c) = t.credits {
                if c.n2 == 0 {
                    return Err("N23 with n2 = 0: no credit would ever return".into());
                }
            }
        }
        if let Some(v) = self.config.vegas {
            if self.config.circuit_window.is_some() {
                return Err(
                    "Tor Vegas replaces the circuit window: set circuit_window to None".into(),
                );
            }
            if v.sendme_inc == 0 || v.cwnd_min < v.sendme_inc || v.cwnd_init < v.cwnd_min {
                return Err(format!(
                    "Tor Vegas needs sendme_inc ≥ 1 and cwnd_init ≥ cwnd_min ≥ sendme_inc (got {}, {}, {})",
                    v.sendme_inc, v.cwnd_init, v.cwnd_min
                ));
            }
        }
        Ok(())
    }

    /// The network part of the simulation: switches, hosts and links, no flows.
    /// Add flows or other nodes to it before [`Sim::new`], then [`TorNet::install`].
    pub fn scenario(&self, name: &str, seed: u64, duration: Dur) -> Result<Scenario, String> {
        let mut sc = Scenario::new(name, duration, seed);
        self.extend(&mut sc)?;
        sc.measure.trace_interval = Dur::ZERO;
        Ok(sc)
    }

    /// Merges the network into `sc`, after its own nodes and links: the
    /// switches `sc` does not have yet, a host and an access link for every
    /// generated host, and the trunks. Hosts added with `relay_on`,
    /// `client_on` or `server_on` must be nodes of `sc` already; a generated
    /// host may hang off a switch (or any node) of `sc`. Into an empty
    /// scenario it adds exactly what [`TorNet::scenario`] builds, in the
    /// same order.
    pub fn extend(&self, sc: &mut Scenario) -> Result<(), String> {
        self.validate()?;
        for n in self.nodes.iter().filter(|n| n.existing) {
            if !sc.nodes.iter().any(|x| x.name == n.name) {
                return Err(format!("`{}` is not a node of the scenario", n.name));
            }
        }
        for s in &self.switches {
            if !sc.nodes.iter().any(|x| &x.name == s) {
                sc.nodes.push(NodeSpec {
                    name: s.clone(),
                    kind: NodeKind::Switch,
                });
            }
        }
        let dir = |rate, delay, queue, loss| DirSpec {
            rate,
            delay,
            queue: QueueSpec::DropTail { limit: queue },
            loss,
            model: Default::default(),
        };
        for n in self.nodes.iter().filter(|n| !n.existing) {
            sc.nodes.push(NodeSpec {
                name: n.name.clone(),
                kind: NodeKind::Host,
            });
            let a = n.access;
            sc.links.push(LinkSpec {
                name: format!("{}~{}", n.name, n.switch),
                a: n.name.clone(),
                b: n.switch.clone(),
                ab: dir(a.up.unwrap_or(a.rate), a.delay, a.queue, a.loss),
                ba: dir(a.rate, a.delay, a.queue, a.loss),
            });
        }
        for t in &self.trunks {
            sc.links.push(LinkSpec {
                name: format!("{}~{}", t.a, t.b),
                a: t.a.clone(),
                b: t.b.clone(),
                ab: dir(t.rate, t.delay, t.queue, 0.0),
                ba: dir(t.rate, t.delay, t.queue, 0.0),
            });
        }
        Ok(())
    }

    /// Adds the Tor agents to a simulation built from [`TorNet::scenario`].
    pub fn install(&self, sim: &mut Sim) -> Result<Installed, String> {
        self.validate()?;
        let ix = self.by_name();
        let ids: BTreeMap<&str, hopwise_sim::NodeId> =
            sim.nodes().map(|n| (sim.node_name(n), n)).collect();
        let sim_id = |name: &str| {
            ids.get(name)
                .copied()
                .ok_or_else(|| format!("node `{name}` is not in the simulation"))
        };
        let sharing = match &self.config.transport {
            TransportConfig::Tcp(t) => t.sharing,
            TransportConfig::Backtap(_) => LinkSharing::PerPair,
        };
        // Model nodes that carry circuits, in order of first appearance.
        let mut order: Vec<String> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut idx = |n: &str, order: &mut Vec<String>| -> usize {
            *index.entry(n.to_string()).or_insert_with(|| {
                order.push(n.to_string());
                order.len() - 1
            })
        };
        // Links: (a, b, circuits as (circuit, position of a, circ id)).
        struct GLink {
            a: usize,
            b: usize,
            circs: Vec<(usize, usize, u16)>,
            next_id: u32,
        }
        let mut glinks: Vec<GLink> = Vec::new();
        let mut pair: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        // Per circuit: node indices in path order (client first), and the
        // (global link, circ id) between positions k and k+1.
        let mut seqs: Vec<Vec<usize>> = Vec::new();
        let mut legs: Vec<Vec<(usize, u16)>> = Vec::new();
        for (ci, c) in self.circuits.iter().enumerate() {
            let seq: Vec<usize> = std::iter::once(&c.client)
                .chain(c.path.iter())
                .map(|n| idx(n, &mut order))
                .collect();
            let mut cl = Vec::new();
            for k in 0..seq.len() - 1 {
                let (u, v) = (seq[k], seq[k + 1]);
                let g = match sharing {
                    LinkSharing::PerPair => {
                        *pair.entry((u.min(v), u.max(v))).or_insert_with(|| {
                            glinks.push(GLink {
                                a: u,
                                b: v,
                                circs: Vec::new(),
                                next_id: 1,
                            });
                            glinks.len() - 1
                        })
                    }
                    LinkSharing::PerCircuit => {
                        glinks.push(GLink {
                            a: u,
                            b: v,
                            circs: Vec::new(),
                            next_id: 1,
                        });
                        glinks.len() - 1
                    }
                };
                let gl = &mut glinks[g];
                if gl.next_id > u16::MAX as u32 {
                    return Err(format!(
                        "more than 65535 circuits between `{}` and `{}`",
                        order[u], order[v]
                    ));
                }
                let id = gl.next_id as u16;
                gl.next_id += 1;
                gl.circs.push((ci, k, id));
                cl.push((g, id));
            }
            seqs.push(seq);
            legs.push(cl);
        }
        // Per-node plans.
        let mut plans: Vec<NodePlan> = order
            .iter()
            .map(|n| NodePlan {
                name: n.clone(),
                seed: sim.seed(),
                bucket: match ix.get(n.as_str()).map(|d| &d.role) {
                    Some(Role::Relay(b)) => *b,
                    _ => None,
                },
                uplink: ix.get(n.as_str()).map(|d| Uplink {
                    rate: d.access.up.unwrap_or(d.access.rate),
                    queue: d.access.queue,
                }),
                links: Vec::new(),
                hops: Vec::new(),
                edges: Vec::new(),
            })
            .collect();
        // Node-local link index of each global link at each end.
        let mut local: Vec<[u32; 2]> = Vec::with_capacity(glinks.len());
        for (g, gl) in glinks.iter().enumerate() {
            let mut ends = [0u32; 2];
            for (e, (me, peer, init)) in [(gl.a, gl.b, true), (gl.b, gl.a, false)]
                .into_iter()
                .enumerate()
            {
                ends[e] = plans[me].links.len() as u32;
                plans[me].links.push(LinkPlan {
                    global: g as u32,
                    peer: sim_id(&order[peer])?,
                    peer_name: order[peer].clone(),
                    initiator: init,
                    circuits: Vec::new(),
                });
            }
            local.push(ends);
        }
        let end_at = |g: usize, node: usize, glinks: &[GLink]| -> usize {
            if glinks[g].a == node {
                0
            } else {
                1
            }
        };
        // Hops, edges and where each circuit's hops live.
        let mut metas = Vec::with_capacity(self.circuits.len());
        for (ci, c) in self.circuits.iter().enumerate() {
            let seq = &seqs[ci];
            let mut hops = Vec::with_capacity(seq.len());
            for (p, &n) in seq.iter().enumerate() {
                let leg = |k: usize| -> Leg {
                    let (g, id) = legs[ci][k];
                    Leg::Link {
                        link: local[g][end_at(g, n, &glinks)],
                        circ_id: id,
                    }
                };
                let prev = if p == 0 { Leg::Edge } else { leg(p - 1) };
                let next = if p + 1 == seq.len() {
                    Leg::Edge
                } else {
                    leg(p)
                };
                let hop = plans[n].hops.len() as u32;
                plans[n].hops.push(HopPlan {
                    circ: ci as u32,
                    prev,
                    next,
                    trace: c.trace,
                });
                for l in [prev, next] {
                    if let Leg::Link { link, circ_id } = l {
                        plans[n].links[link as usize].circuits.push((circ_id, hop));
                    }
                }
                if p == 0 || p + 1 == seq.len() {
                    let client = p == 0;
                    let server = match (&c.server, client) {
                        (ServerSpec::Host(s), false) => Some(sim_id(s)?),
                        _ => None,
                    };
                    plans[n].edges.push(EdgePlan {
                        hop,
                        circ: ci as u32,
                        client,
                        traffic: c.traffic,
                        server,
                        start: Time::ZERO + c.start,
                        trace: c.trace,
                    });
                }
                hops.push((n, hop));
            }
            metas.push(CircMeta {
                name: c.name.clone(),
                path: seq.iter().map(|&n| order[n].clone()).collect(),
                hops,
            });
        }
        // Agents.
        let mut nodes = Vec::with_capacity(plans.len());
        for p in &plans {
            let agent = TorNode::new(&self.config, p)?;
            let id = sim.add_agent(
                &p.name,
                &format!("tor/{}", p.name),
                Time::ZERO,
                Box::new(agent),
            )?;
            nodes.push((p.name.clone(), id));
        }
        let mut servers = Vec::new();
        for n in &self.nodes {
            if let Role::Server = n.role {
                let agent = ServerAgent::new(
                    sim.seed(),
                    SERVER_PORT,
                    self.config.edge_tcp.clone(),
                    self.config.edge_cc.clone(),
                    self.config.response_delay,
                );
                let id = sim.add_agent(
                    &n.name,
                    &format!("server/{}", n.name),
                    Time::ZERO,
                    Box::new(agent),
                )?;
                servers.push((n.name.clone(), id));
            }
        }
        Ok(Installed {
            transport: self.config.name(),
            rw_interval: self.config.rw_interval,
            queue_interval: self.config.queue_interval,
            nodes,
            servers,
            circuits: metas,
        })
    }

    /// Scenario, simulation and agents in one step.
    pub fn build(&self, name: &str, seed: u64, duration: Dur) -> Result<TorSim, String> {
        let sc = self.scenario(name, seed, duration)?;
        let mut sim = Sim::new(&sc)?;
        let inst = self.install(&mut sim)?;
        Ok(TorSim { sim, inst })
    }
}

#[derive(Clone, Debug)]
struct CircMeta {
    name: String,
    path: Vec<String>,
    /// `(node index in Installed::nodes, hop index there)`, client first.
    hops: Vec<(usize, u32)>,
}

/// What [`TorNet::install`] added to a simulation: enough to collect results.
#[derive(Clone, Debug)]
pub struct Installed {
    transport: &'static str,
    rw_interval: Dur,
    queue_interval: Option<Dur>,
    /// `(name, agent id)` of every Tor node.
    pub nodes: Vec<(String, u32)>,
    /// `(name, agent id)` of every server.
    pub servers: Vec<(String, u32)>,
    circuits: Vec<CircMeta>,
}

impl Installed {
    /// Reads the results out of a simulation that has run.
    pub fn results(&self, sim: &Sim) -> TorResults {
        let node = |i: usize| -> &TorNode {
            sim.agent::<TorNode>(self.nodes[i].1)
                .expect("installed agents are Tor nodes")
        };
        let circuits = self
            .circuits
            .iter()
            .map(|m| {
                let (cn, ch) = m.hops[0];
                let (en, eh) = *m.hops.last().expect("non-empty path");
                let client = node(cn).edge_of(ch).expect("client edge");
                let exit = node(en).edge_of(eh).expect("exit edge");
                let hops = m
                    .hops
                    .iter()
                    .enumerate()
                    .filter_map(|(pos, &(n, h))| {
                        node(n).hop_trace(h).map(|s| HopTrace {
                            node: self.nodes[n].0.clone(),
                            position: pos,
                            samples: s.to_vec(),
                        })
                    })
                    .collect();
                CircuitResult {
                    name: m.name.clone(),
                    path: m.path.clone(),
                    r: exit.samples.to_vec(),
                    w: client.samples.to_vec(),
                    packaged: exit.packaged,
                    delivered: client.delivered,
                    corrupt: client.corrupt,
                    requests: client.requests.to_vec(),
                    hops,
                    rw_interval: self.rw_interval,
                    vegas: exit.vegas.cloned(),
                    losses: m
                        .hops
                        .iter()
                        .try_fold(HopLosses::default(), |mut acc, &(n, h)| {
                            acc += node(n).hop_losses(h)?;
                            Some(acc)
                        }),
                }
            })
            .collect();
        let nodes = (0..self.nodes.len())
            .map(|i| {
                let n = node(i);
                NodeResult {
                    name: n.name().to_string(),
                    transport: n.transport_stats(),
                    bucket_used: n.bucket_used(),
                    samples: n.node_samples().to_vec(),
                    peak_cells: n.peak_cells(),
                }
            })
            .collect();
        let wire_bytes = sim
            .ifaces()
            .map(|i| sim.iface(i))
            .filter(|f| sim.node_kind(f.from()) == NodeKind::Host)
            .map(|f| f.stats().tx_bytes_total)
            .sum();
        TorResults {
            transport: self.transport,
            duration: sim.duration(),
            rw_interval: self.rw_interval,
            queue_interval: self.queue_interval,
            circuits,
            nodes,
            wire_bytes,
            events: sim.events(),
            event_hash: sim.event_hash(),
        }
    }
}

/// A built Tor simulation.
pub struct TorSim {
    pub sim: Sim,
    pub inst: Installed,
}

impl TorSim {
    /// Runs to the end.
    pub fn run(&mut self) {
        self.sim.run();
    }
    /// Runs up to `t` (for inspection between steps).
    pub fn run_until(&mut self, t: Time) {
        self.sim.run_until(t);
    }
    pub fn results(&self) -> TorResults {
        self.inst.results(&self.sim)
    }
}
