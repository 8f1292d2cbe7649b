//! From the Tor sections to a [`TorNet`]: relays, clients, servers and
//! circuits (listed, drawn by bandwidth, or drawn from a TorPS file) for a
//! seed, merged onto the file's topology; and the propagation delays along
//! the simulator's routes, for the circuits' latency metrics.

use super::tor::{AccessSpec, CircuitDef, PathSpec, Place, RelaySpec, TorSection};
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Dur;
use hopwise_sim::routing::Routing;
use hopwise_sim::scenario::ScenarioError;
use hopwise_sim::spec::{QueueSpec, Scenario};
use hopwise_sim::NodeId;
use hopwise_tor::{Access, BucketSpec, CircuitSpec, ServerSpec, TorNet, TorpsPaths, Traffic};
use std::collections::BTreeMap;

/// The uplink (rate and queue of the first link out of it) of each file
/// node that runs a relay, client or server.
#[derive(Clone, Debug, Default)]
pub struct Uplinks(BTreeMap<String, Access>);

impl Uplinks {
    pub fn of(
        base: &Scenario,
        relays: &[RelaySpec],
        circuits: &[CircuitDef],
    ) -> Result<Uplinks, ScenarioError> {
        let mut names: Vec<(&str, String)> = Vec::new();
        for r in relays {
            if let Place::Node(n) = &r.place {
                names.push((n, format!("relay {:?}.node", r.name)));
            }
        }
        for c in circuits {
            if let Place::Node(n) = &c.client {
                names.push((n, format!("circuit {:?}.client", c.name)));
            }
            if let Some(s) = &c.server {
                names.push((s, format!("circuit {:?}.server", c.name)));
            }
        }
        let mut out = BTreeMap::new();
        for (n, key) in names {
            if out.contains_key(n) {
                continue;
            }
            let link = base.links.iter().find_map(|l| {
                if l.a == n {
                    Some(&l.ab)
                } else if l.b == n {
                    Some(&l.ba)
                } else {
                    None
                }
            });
            let Some(d) = link else {
                return Err(ScenarioError::new(
                    "",
                    key,
                    format!("node `{n}` has no [[link]]: connect it to the network"),
                ));
            };
            let (rate, queue) = match &d.queue {
                QueueSpec::DropTail { limit } => (d.rate, *limit),
                QueueSpec::TokenBucket { rate, limit, .. } => ((*rate).min(d.rate), *limit),
                QueueSpec::AckFirst { data_limit, .. } => (d.rate, *data_limit),
                QueueSpec::Codel { .. }
                | QueueSpec::FqCodel { .. }
                | QueueSpec::Pie { .. }
                | QueueSpec::Red { .. } => {
                    return Err(ScenarioError::new(
                        "",
                        key,
                        format!(
                            "node `{n}`'s link has an AQM queue, which a Tor node's access \
                             link does not model: give it a droptail, tbf or ackfirst queue"
                        ),
                    ))
                }
            };
            out.insert(n.to_string(), Access::new(rate, d.delay).queue(queue));
        }
        Ok(Uplinks(out))
    }

    fn get(&self, n: &str) -> Access {
        self.0
            .get(n)
            .copied()
            .unwrap_or_else(|| Access::new(AccessSpec::DEFAULT.rate, Dur::ZERO))
    }
}

fn acc(a: &AccessSpec) -> Access {
    let mut x = Access::new(a.rate, a.delay).queue(a.queue);
    if let Some(up) = a.up {
        x = x.up(up);
    }
    x
}

/// What the built network's circuits are, in [`TorNet`]'s order.
#[derive(Clone, Debug)]
pub struct CircuitInfo {
    pub name: String,
    /// Client host, relay hosts (guard first).
    pub hosts: Vec<String>,
    /// The relays' names as the file gives them (generated: `r<i>`).
    pub relays: Vec<String>,
    pub server: Option<String>,
    pub traffic: Traffic,
}

/// A network drawn for one seed.
pub struct Built {
    pub net: TorNet,
    pub circuits: Vec<CircuitInfo>,
    /// Host of each relay → the relay's name.
    pub relay_of_host: BTreeMap<String, String>,
}

/// `k` distinct indexes drawn with probability proportional to `w`
/// (successive draws without replacement).
fn weighted(w: &[u64], k: usize, rng: &mut Rng) -> Vec<usize> {
    let mut left: Vec<usize> = (0..w.len()).collect();
    let mut out = Vec::with_capacity(k);
    for _ in 0..k {
        let total = left
            .iter()
            .fold(0u64, |t, &i| t.saturating_add(w[i].max(1)));
        let mut x = rng.below(total);
        let mut pick = 0;
        for (j, &i) in left.iter().enumerate() {
            let wi = w[i].max(1);
            if x < wi {
                pick = j;
                break;
            }
            x -= wi;
        }
        out.push(left.remove(pick));
    }
    out
}

/// `m` distinct lines of `paths`, uniformly, in the order drawn (a partial
/// Fisher–Yates shuffle of the line indexes, as nstor's `ParseFile` and the
/// backtap-network reproduction draw them).
pub fn choose_lines(paths: &TorpsPaths, m: usize, rng: &mut Rng) -> Vec<usize> {
    let n = paths.circuits.len();
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..m.min(n) {
        let j = i + rng.below((n - i) as u64) as usize;
        idx.swap(i, j);
    }
    idx.truncate(m.min(n));
    idx
}

impl TorSection {
    /// The network for `seed`. Order: the `[[relay]]`s, the relays of the
    /// TorPS circuits (by index in the file), the `[tor.generate]` relays,
    /// then each circuit's client in circuit order, the servers, and the
    /// circuits: `[[circuit]]`s first, then the TorPS ones.
    pub fn net(&self, seed: u64) -> Result<Built, String> {
        // Every circuit is traced (goodput over time); queue traces only
        // with a queue interval.
        let mut net = TorNet::with_config(self.config.clone());
        let mut relay_of_host = BTreeMap::new();
        let mut host_of_relay: BTreeMap<String, String> = BTreeMap::new();
        let bucket = |b: Option<(u64, u64)>| {
            b.map(|(rate, burst)| BucketSpec::new(rate).burst(burst).refill(self.refill))
        };
        for r in &self.relays {
            match &r.place {
                Place::Generated(a) => {
                    net.relay_at(&r.name, &self.switch, bucket(r.bucket), acc(a));
                    host_of_relay.insert(r.name.clone(), r.name.clone());
                    relay_of_host.insert(r.name.clone(), r.name.clone());
                }
                Place::Node(n) => {
                    net.relay_on(n, bucket(r.bucket), self.uplinks.get(n));
                    host_of_relay.insert(r.name.clone(), n.clone());
                    relay_of_host.insert(n.clone(), r.name.clone());
                }
            }
        }
        // TorPS circuits: lines, start times, relays.
        let mut torps_circuits: Vec<(String, Vec<String>, Dur)> = Vec::new();
        if let Some(t) = &self.torps {
            let paths = if t.file == 50 {
                TorpsPaths::fifty()
            } else {
                TorpsPaths::hundred()
            };
            let mut rng = Rng::for_component(seed, &format!("{}/paths", t.stream));
            let lines = choose_lines(paths, t.circuits, &mut rng);
            let mut rng = Rng::for_component(seed, &format!("{}/starts", t.stream));
            let starts: Vec<f64> = lines
                .iter()
                .map(|_| rng.f64() * t.start_window.as_secs_f64())
                .collect();
            let mut used: Vec<usize> = lines.iter().flat_map(|&l| paths.circuits[l].path).collect();
            used.sort_unstable();
            used.dedup();
            let a = acc(&self.access);
            for &r in &used {
                let name = format!("r{r}");
                let b = BucketSpec::new(paths.relays[r].bandwidth).refill(self.refill);
                net.relay_at(&name, &self.switch, Some(b), a);
                relay_of_host.insert(name.clone(), name.clone());
            }
            for (i, &l) in lines.iter().enumerate() {
                let path = paths.circuits[l]
                    .path
                    .iter()
                    .map(|r| format!("r{r}"))
                    .collect();
                torps_circuits.push((format!("c{i}"), path, Dur::from_secs_f64(starts[i])));
            }
        }
        // Relays with drawn bandwidths: on the switch, in the pool of
        // "by-bandwidth" paths after the [[relay]]s.
        let mut pool: Vec<(String, u64)> = self
            .relays
            .iter()
            .map(|r| (r.name.clone(), r.bucket.map_or(1, |b| b.0)))
            .collect();
        if let Some(g) = &self.generate {
            let a = acc(&self.access);
            for (i, bw) in g.bandwidths(seed).into_iter().enumerate() {
                let name = format!("g{i}");
                let b = BucketSpec::new(bw).refill(self.refill);
                net.relay_at(&name, &self.switch, Some(b), a);
                relay_of_host.insert(name.clone(), name.clone());
                host_of_relay.insert(name.clone(), name.clone());
                pool.push((name, bw));
            }
        }
        let relay_weights: Vec<u64> = pool.iter().map(|p| p.1).collect();
        let mut clients_on: Vec<&str> = Vec::new();
        let mut circuits = Vec::new();
        let mut specs = Vec::new();
        for c in &self.circuits {
            match &c.client {
                Place::Generated(a) => {
                    net.client_at(&c.client_name, &self.switch, acc(a));
                }
                Place::Node(n) => {
                    if !clients_on.contains(&n.as_str()) {
                        clients_on.push(n);
                        net.client_on(n, self.uplinks.get(n));
                    }
                }
            }
            let relays: Vec<String> = match &c.path {
                PathSpec::Relays(p) => p.clone(),
                PathSpec::ByBandwidth(k) => {
                    let mut rng = Rng::for_component(seed, &format!("tor/path/{}", c.name));
                    weighted(&relay_weights, *k, &mut rng)
                        .into_iter()
                        .map(|i| pool[i].0.clone())
                        .collect()
                }
            };
            let hosts: Vec<String> = relays
                .iter()
                .map(|r| {
                    host_of_relay
                        .get(r.as_str())
                        .cloned()
                        .unwrap_or_else(|| r.clone())
                })
                .collect();
            let p: Vec<&str> = hosts.iter().map(String::as_str).collect();
            let mut spec = CircuitSpec::new(&c.name, &c.client_name, &p, c.traffic)
                .start(c.start)
                .trace(true);
            if let Some(s) = &c.server {
                spec = spec.server(ServerSpec::Host(s.clone()));
            }
            specs.push(spec);
            circuits.push(CircuitInfo {
                name: c.name.clone(),
                hosts: std::iter::once(c.client_name.clone())
                    .chain(hosts)
                    .collect(),
                relays,
                server: c.server.clone(),
                traffic: c.traffic,
            });
        }
        if let Some(t) = &self.torps {
            let a = acc(&self.access);
            for (i, (name, path, start)) in torps_circuits.iter().enumerate() {
                let op = format!("op{i}");
                net.client_at(&op, &self.switch, a);
                let p: Vec<&str> = path.iter().map(String::as_str).collect();
                specs.push(
                    CircuitSpec::new(name, &op, &p, t.traffic)
                        .start(*start)
                        .trace(true),
                );
                circuits.push(CircuitInfo {
                    name: name.clone(),
                    hosts: std::iter::once(op).chain(path.iter().cloned()).collect(),
                    relays: path.clone(),
                    server: None,
                    traffic: t.traffic,
                });
            }
        }
        let mut servers: Vec<&str> = Vec::new();
        for c in &self.circuits {
            if let Some(s) = &c.server {
                if !servers.contains(&s.as_str()) {
                    servers.push(s);
                    net.server_on(s, self.uplinks.get(s));
                }
            }
        }
        for s in specs {
            net.circuit(s);
        }
        Ok(Built {
            net,
            circuits,
            relay_of_host,
        })
    }
}

/// One-way propagation delays along the simulator's routes
/// ([`hopwise_sim::routing`]), between nodes named as the circuits name
/// their hosts.
pub struct Routes {
    index: BTreeMap<String, NodeId>,
    routing: Routing,
}

impl Routes {
    pub fn of(sc: &Scenario) -> Result<Routes, String> {
        let index = sc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), NodeId::from_raw(i as u32)))
            .collect();
        Ok(Routes {
            index,
            routing: Routing::of(sc)?,
        })
    }

    /// One-way propagation delay from `a` to `b` along the route.
    pub fn delay(&self, a: &str, b: &str) -> Option<Dur> {
        self.routing.delay(*self.index.get(a)?, *self.index.get(b)?)
    }

    /// Propagation round trip of a request on circuit `c`: along the hosts
    /// and back, plus, for a server on a node, two round trips between the
    /// exit and the server (TCP's handshake, then request and response).
    pub fn circuit_rtt(&self, c: &CircuitInfo) -> Option<Dur> {
        let mut d = Dur::ZERO;
        for w in c.hosts.windows(2) {
            d += self.delay(&w[0], &w[1])? + self.delay(&w[1], &w[0])?;
        }
        if let (Some(s), Some(exit)) = (&c.server, c.hosts.last()) {
            let rtt = self.delay(exit, s)? + self.delay(s, exit)?;
            d += rtt + rtt;
        }
        Some(d)
    }
}

impl TorSection {
    /// Adds the Tor agents to `sim`, built from `sc` (= the scenario
    /// [`TorSection::net`]'s network was merged into, for the same seed).
    pub fn install(
        &self,
        sc: &Scenario,
        sim: &mut hopwise_sim::Sim,
    ) -> Result<super::tor_out::TorInstalled, String> {
        let built = self.net(sc.seed)?;
        let inst = built.net.install(sim)?;
        let routes = Routes::of(sc)?;
        let prop_rtt = built
            .circuits
            .iter()
            .map(|c| {
                let rtt = routes.circuit_rtt(c)?;
                // Without optimistic data the request waits for CONNECTED:
                // one more circuit round trip.
                Some(if self.config.optimistic_data {
                    rtt
                } else {
                    let circ = CircuitInfo {
                        server: None,
                        ..c.clone()
                    };
                    rtt + routes.circuit_rtt(&circ)?
                })
            })
            .collect();
        Ok(super::tor_out::TorInstalled {
            inst,
            circuits: built.circuits,
            prop_rtt,
            relay_of_host: built.relay_of_host,
            response_delay: self.config.response_delay,
            seed: sc.seed,
            warmup: sc.measure.warmup,
            goodput_bin: sc.measure.goodput_interval,
        })
    }
}
