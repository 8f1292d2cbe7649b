//! `[[otcp]]`: split-TCP (Overlay TCP) paths on the scenario's topology.
//!
//! ```toml
//! [[otcp]]
//! name = "split"
//! from = "client"
//! to = "server"
//! relays = ["r1", "r2"]    # on the route from `from` to `to`, in order
//! size = "4MB"             # or leave out: bulk until the end
//! cc = "newreno"
//! start = "1s"
//!
//! [[otcp]]
//! name = "chosen"
//! from = "client"
//! to = "server"
//! candidates = ["r1", "r3"] # the best of the direct path and one relay, by RTT
//! ```
//!
//! Each hop is its own TCP connection; a relay splices one into the next
//! (`hopwise_proto::otcp`, the agents of [`crate::otcp::agents`]). With
//! `relays`, every relay must lie on the route the topology gives from
//! `from` to `to` (the simulator's own routes, `hopwise_sim::routing`), so
//! the split follows the topology. With `candidates`,
//! the path is chosen as seed 001 chooses it
//! (`hopwise_proto::otcp::select::best_via`): the direct path or one relay,
//! the lowest largest-hop RTT, from the idle round-trip times of the
//! topology (propagation delays along its routes, what a probe on an idle
//! network measures).

use super::short_list;
use super::swarm::write_csv;
use crate::otcp::agents::{Client, Node, PORT};
use hopwise_config::{
    self as cfg, did_you_mean, table, Duration, Name, Problem, Size, Strings, Tables,
};
use hopwise_plot::{BarChart, Chart, Series};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::otcp::select::{best_via, RttMatrix};
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::routing::Routing;
use hopwise_sim::scenario::{cc_by_name, cc_value, ScenarioError};
use hopwise_sim::spec::Scenario;
use hopwise_sim::{NodeId, Sim};
use serde::Serialize;
use std::io;
use std::path::Path;
use toml::Value;

type R<T> = Result<T, ScenarioError>;

fn e(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new("", key, msg)
}

/// Most `[[otcp]]` paths in one file (each has its own port).
pub const MAX_PATHS: usize = 1000;
/// A `cc` value as `[[flow]]` reads it (a name, or a table such as
/// `{ algo = "ledbat", target = "50ms" }`; NewReno without one), and the
/// name the outputs show: the name as written, or the table's algorithm.
pub(super) fn cc_of(v: Option<&toml::Value>, key: &str) -> R<(CcConfig, String)> {
    match v {
        None => Ok((CcConfig::NewReno, "newreno".into())),
        Some(toml::Value::String(s)) => Ok((cc_by_name(s, key)?, s.clone())),
        Some(v) => {
            let cc = cc_value(v, key)?;
            let name = cc.name().to_string();
            Ok((cc, name))
        }
    }
}

table! {
    pub struct RawPath("a table (an [[otcp]] section)", section "otcp") {
        name: Name, from: Name, to: Name, relays: Strings, candidates: Strings,
        size: Size, cc: Value, start: Duration, splice: Size,
    }
}

/// One path, checked, its relays chosen.
#[derive(Clone, Debug)]
pub struct PathSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    /// The relays, in order (chosen, with `candidates`).
    pub relays: Vec<String>,
    /// Relays were chosen by RTT among these.
    pub candidates: Option<Vec<String>>,
    /// Bytes to send; `None`: bulk, until the simulation ends.
    pub size: Option<u64>,
    pub cc_name: String,
    pub cc: CcConfig,
    pub start: Dur,
    /// A relay's own buffer per connection.
    pub splice: usize,
    /// Idle RTT of each hop, and of the direct path.
    pub hop_rtts: Vec<Dur>,
    pub direct_rtt: Dur,
}

/// `[[otcp]]`, checked.
#[derive(Clone, Debug)]
pub struct Section {
    pub paths: Vec<PathSpec>,
    /// Bin of the goodput series: the file's `measure.goodput_interval`.
    pub bin: Dur,
}

fn path_key(i: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("otcp[{i}] {n:?}"),
        None => format!("otcp[{i}]"),
    }
}

fn problem(p: Problem, doc: &Value) -> ScenarioError {
    let key = match &p.path[..] {
        [cfg::Seg::Index(i), rest @ ..] => {
            let name = doc
                .get(*i)
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str);
            cfg::join(&path_key(*i, name), rest)
        }
        path => cfg::join("otcp", path),
    };
    p.at(key)
}

/// Reads and checks the `[[otcp]]` sections (`None` without any).
pub fn parse(base: &Scenario) -> R<Option<Section>> {
    let Some(doc) = base.overlay.get("otcp") else {
        return Ok(None);
    };
    let raw: Tables<RawPath> = cfg::from_value(doc.clone()).map_err(|p| problem(p, doc))?;
    if raw.0.len() > MAX_PATHS {
        return Err(e(
            "otcp",
            format!("{} paths; at most {MAX_PATHS}", raw.0.len()),
        ));
    }
    // The routes the simulator will forward by (hopwise_sim::routing).
    let routes = Routing::of(base).map_err(|m| e("link", m))?;
    let nodes: Vec<&str> = base.nodes.iter().map(|n| n.name.as_str()).collect();
    let node_name = |n: NodeId| nodes[n.index()];
    let mut paths: Vec<PathSpec> = Vec::new();
    for (i, r) in raw.0.iter().enumerate() {
        let name = r.name.as_ref().map_or(format!("otcp{i}"), |n| n.0.clone());
        let key = path_key(i, Some(&name));
        let at = |k: &str| format!("{key}.{k}");
        if paths.iter().any(|p| p.name == name) {
            return Err(e(
                at("name"),
                format!("a second path named {name:?}; give each its own name"),
            ));
        }
        let node = |k: &str, n: &str| -> R<NodeId> {
            base.node_id(n).ok_or_else(|| {
                e(
                    k,
                    format!(
                        "unknown node `{n}`{} (known: {})",
                        did_you_mean(n, &nodes),
                        short_list(&nodes)
                    ),
                )
            })
        };
        let from_name = cfg::required(r.from.as_ref(), &at("from"), "the client's node")?
            .0
            .clone();
        let to_name = cfg::required(r.to.as_ref(), &at("to"), "the server's node")?
            .0
            .clone();
        let from = node(&at("from"), &from_name)?;
        let to = node(&at("to"), &to_name)?;
        if from == to {
            return Err(e(
                at("to"),
                format!("the server is the client's node `{to_name}`; name another node"),
            ));
        }
        let Some((route, _)) = routes.path(from, to) else {
            return Err(e(
                &key,
                format!(
                    "no route from `{from_name}` to `{to_name}`: link them through the topology"
                ),
            ));
        };
        let direct_rtt = routes
            .rtt(from, to)
            .expect("a route both ways (links are full duplex)");
        let (cc, cc_name) = cc_of(r.cc.as_ref(), &at("cc"))?;
        if let Some(s) = &r.size {
            if s.0 == 0 {
                return Err(e(
                    at("size"),
                    "must be positive; leave `size` out for a bulk transfer that runs to the end",
                ));
            }
        }
        let splice = r.splice.as_ref().map_or(64 << 10, |s| s.0);
        if !(512..=1 << 30).contains(&splice) {
            return Err(e(
                at("splice"),
                format!("{splice} B: a relay's buffer must be 512 B to 1 GiB (e.g. \"64KiB\", the default)"),
            ));
        }
        let (relays, candidates) = match (&r.relays, &r.candidates) {
            (Some(_), Some(_)) => {
                return Err(e(
                    at("candidates"),
                    "give the relays (`relays`) or let the path choose among candidates \
                     (`candidates`), not both",
                ))
            }
            (Some(rs), None) => {
                // The relays lie on the route, in order.
                let inner: Vec<&str> = route[1..route.len() - 1]
                    .iter()
                    .map(|&n| node_name(n))
                    .collect();
                let shown: Vec<&str> = route.iter().map(|&n| node_name(n)).collect();
                let mut last = 0;
                for (j, rn) in rs.0.iter().enumerate() {
                    let k = format!("{}[{j}]", at("relays"));
                    let id = node(&k, rn)?;
                    match route.iter().position(|&n| n == id) {
                        Some(p) if p == 0 || p == route.len() - 1 => {
                            return Err(e(k, format!("`{rn}` is an end of the path, not a relay; list only the nodes between `{from_name}` and `{to_name}`")))
                        }
                        Some(p) if p <= last => {
                            return Err(e(
                                k,
                                format!(
                                    "`{rn}` comes before `{}` on the route ({}); list the relays in route order",
                                    rs.0[j - 1],
                                    shown.join(" → ")
                                ),
                            ))
                        }
                        Some(p) => last = p,
                        None => {
                            let hint = match cfg::suggest(rn, &inner) {
                                Some(s) => format!("did you mean `{s}`? "),
                                None => String::new(),
                            };
                            return Err(e(
                                k,
                                format!(
                                    "relay `{rn}` is not on the path from `{from_name}` to `{to_name}` \
                                     (the route is {}): a relay splits the path where the packets \
                                     pass; {hint}name nodes on the route{}, or use `candidates` \
                                     to let the path choose relays by RTT",
                                    shown.join(" → "),
                                    if inner.is_empty() {
                                        String::new()
                                    } else {
                                        format!(" ({})", inner.join(", "))
                                    }
                                ),
                            ));
                        }
                    }
                }
                (rs.0.clone(), None)
            }
            (None, Some(cs)) => {
                if cs.0.is_empty() {
                    return Err(e(at("candidates"), "an empty list: name the nodes to choose among, or use `relays = []` for the direct path"));
                }
                let mut ids = vec![from, to];
                for (j, c) in cs.0.iter().enumerate() {
                    let k = format!("{}[{j}]", at("candidates"));
                    let id = node(&k, c)?;
                    if id == from || id == to {
                        return Err(e(k, format!("`{c}` is an end of the path, not a relay")));
                    }
                    if routes.path(from, id).is_none() || routes.path(id, to).is_none() {
                        return Err(e(
                            k,
                            format!("`{c}` is not reachable from `{from_name}` and `{to_name}`"),
                        ));
                    }
                    ids.push(id);
                }
                let m = RttMatrix::from_fn(ids.len(), |u, v| {
                    routes.rtt(ids[u], ids[v]).expect("reachable")
                });
                let best = best_via(&m, 0, 1, &(2..ids.len()).collect::<Vec<_>>());
                let relays = best
                    .relays()
                    .iter()
                    .map(|&k| node_name(ids[k]).to_string())
                    .collect();
                (relays, Some(cs.0.clone()))
            }
            (None, None) => {
                return Err(e(
                    &key,
                    "which relays? add `relays = [\"r1\", …]` (nodes on the route, in order; `[]` \
                     for the direct path) or `candidates = [\"r1\", …]` (chosen by RTT)",
                ))
            }
        };
        let mut hops = vec![from];
        hops.extend(relays.iter().map(|r| base.node_id(r).expect("checked")));
        hops.push(to);
        let hop_rtts = hops
            .windows(2)
            .map(|w| routes.rtt(w[0], w[1]).expect("reachable"))
            .collect();
        paths.push(PathSpec {
            name,
            from: from_name,
            to: to_name,
            relays,
            candidates,
            size: r.size.as_ref().map(|s| s.0),
            cc_name,
            cc,
            start: r.start.as_ref().map_or(Dur::ZERO, |d| d.value),
            splice: splice as usize,
            hop_rtts,
            direct_rtt,
        });
    }
    if paths.is_empty() {
        return Err(e(
            "otcp",
            "an empty list of paths (`otcp = []`): nothing would run; add an [[otcp]] \
             section (from, to, relays) or remove the key",
        ));
    }
    Ok(Some(Section {
        paths,
        bin: base.measure.goodput_interval,
    }))
}

/// The port of path `i`'s relays and server.
fn port(i: usize) -> u16 {
    PORT + 1 + i as u16
}

impl Section {
    /// Adds the agents: per path, a relay on each relay node and a
    /// receiver on the server, on the path's own port, and the client,
    /// started at `start`.
    pub fn install(&self, sim: &mut Sim) -> Result<Installed, String> {
        let bin = self.bin;
        let mut paths = Vec::new();
        for (i, p) in self.paths.iter().enumerate() {
            let tcp = TcpConfig::default();
            let mut route = Vec::new();
            let mut relays = Vec::new();
            for r in &p.relays {
                let node = Node::new(tcp.clone(), p.cc.clone(), p.splice).on_port(port(i));
                relays.push(sim.add_agent(
                    r,
                    &format!("otcp/{}/relay/{r}", p.name),
                    Time::ZERO,
                    Box::new(node),
                )?);
                route.push(
                    sim.node_id(r)
                        .ok_or_else(|| format!("otcp: unknown node `{r}`"))?
                        .raw(),
                );
            }
            let server = Node::new(tcp.clone(), p.cc.clone(), p.splice)
                .on_port(port(i))
                .binned(bin);
            let server = sim.add_agent(
                &p.to,
                &format!("otcp/{}/server", p.name),
                Time::ZERO,
                Box::new(server),
            )?;
            route.push(
                sim.node_id(&p.to)
                    .ok_or_else(|| format!("otcp: unknown node `{}`", p.to))?
                    .raw(),
            );
            let client =
                Client::new(route, p.size.unwrap_or(u64::MAX), tcp, p.cc.clone()).on_port(port(i));
            let client = sim.add_agent(
                &p.from,
                &format!("otcp/{}/client", p.name),
                Time::ZERO + p.start,
                Box::new(client),
            )?;
            paths.push(Agents {
                client,
                server,
                relays,
            });
        }
        Ok(Installed {
            spec: self.clone(),
            paths,
            bin,
        })
    }
}

/// One path's agents.
struct Agents {
    client: u32,
    server: u32,
    relays: Vec<u32>,
}

/// The installed paths.
pub struct Installed {
    spec: Section,
    paths: Vec<Agents>,
    bin: Dur,
}

impl Installed {
    pub fn summary(&self, sim: &Sim) -> Summary {
        let end = sim.now().as_secs_f64();
        let paths = self
            .spec
            .paths
            .iter()
            .zip(&self.paths)
            .map(|(p, a)| {
                let client: &Client = sim.agent(a.client).expect("client agent");
                let server: &Node = sim.agent(a.server).expect("server agent");
                let rx = server.received.first();
                let start = p.start.as_secs_f64();
                let bytes = rx.map_or(0, |r| r.bytes);
                let done = rx.and_then(|r| r.done).map(|t| t.as_secs_f64() - start);
                let secs = done.unwrap_or(end - start);
                let mut errors: Vec<String> = client.error.iter().cloned().collect();
                for &r in &a.relays {
                    let relay: &Node = sim.agent(r).expect("relay agent");
                    let at = sim.agent_name(r);
                    errors.extend(relay.errors.iter().map(|x| format!("{at}: {x}")));
                }
                errors.extend(server.errors.iter().cloned());
                PathRow {
                    path: p.name.clone(),
                    from: p.from.clone(),
                    to: p.to.clone(),
                    relays: p.relays.join(" "),
                    hops: p.relays.len() + 1,
                    cc: p.cc_name.clone(),
                    direct_rtt_ms: ms(p.direct_rtt),
                    path_rtt_ms: p.hop_rtts.iter().max().map_or(0.0, |&d| ms(d)),
                    sum_rtt_ms: ms(p.hop_rtts.iter().fold(Dur::ZERO, |a, &d| a + d)),
                    size_bytes: p.size,
                    received_bytes: bytes,
                    first_byte_s: rx.and_then(|r| r.first).map(|t| t.as_secs_f64() - start),
                    completion_s: done,
                    goodput_bps: if secs > 0.0 {
                        bytes as f64 * 8.0 / secs
                    } else {
                        f64::NAN
                    },
                    errors: errors.join("; "),
                }
            })
            .collect();
        Summary { paths }
    }

    /// `otcp_paths.csv`, `otcp_goodput.csv`, `otcp_goodput.svg` and
    /// `otcp_completion.svg`.
    pub fn write(
        &self,
        dir: &Path,
        sim: &Sim,
        s: &Summary,
        files: &mut Vec<String>,
    ) -> io::Result<()> {
        write_csv(&dir.join("otcp_paths.csv"), &s.paths)?;
        files.push("otcp_paths.csv".into());
        let dt = self.bin.as_secs_f64();
        let end = sim.now().as_secs_f64();
        let mut rows = Vec::new();
        let mut chart = Chart::new("oTCP goodput per path")
            .x_label("time (s)")
            .y_label("goodput (Mbit/s)");
        for (p, a) in self.spec.paths.iter().zip(&self.paths) {
            let server: &Node = sim.agent(a.server).expect("server agent");
            let bins = server
                .received
                .first()
                .map(|r| r.bins.clone())
                .unwrap_or_default();
            let n = ((end / dt).ceil() as usize).max(bins.len());
            let mut pts = Vec::new();
            for k in 0..n {
                let b = bins.get(k).copied().unwrap_or(0);
                let row = GoodputRow {
                    path: p.name.clone(),
                    time_s: (k as f64 + 0.5) * dt,
                    goodput_bps: b as f64 * 8.0 / dt,
                };
                pts.push((row.time_s, row.goodput_bps / 1e6));
                rows.push(row);
            }
            chart.push_series(Series::line(p.name.clone(), pts));
        }
        write_csv(&dir.join("otcp_goodput.csv"), &rows)?;
        files.push("otcp_goodput.csv".into());
        chart.write_svg(dir.join("otcp_goodput.svg"))?;
        files.push("otcp_goodput.svg".into());
        let bars = s
            .paths
            .iter()
            .map(|p| (p.path.clone(), p.completion_s.unwrap_or(f64::NAN)))
            .collect();
        let b = BarChart::new("oTCP completion time per path (empty: not done, or bulk)")
            .y_label("completion (s)")
            .group("paths", bars);
        std::fs::write(dir.join("otcp_completion.svg"), b.to_svg())?;
        files.push("otcp_completion.svg".into());
        Ok(())
    }
}

fn ms(d: Dur) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// What the paths measured (`summary.json`'s `otcp`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub paths: Vec<PathRow>,
}

/// One path (a row of `otcp_paths.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PathRow {
    pub path: String,
    pub from: String,
    pub to: String,
    /// The relays, space-separated (chosen ones, with `candidates`).
    pub relays: String,
    pub hops: usize,
    pub cc: String,
    /// Idle RTT of the direct route, of the slowest hop, and of the hops
    /// added up.
    pub direct_rtt_ms: f64,
    pub path_rtt_ms: f64,
    pub sum_rtt_ms: f64,
    /// Empty for a bulk transfer.
    pub size_bytes: Option<u64>,
    pub received_bytes: u64,
    /// From the client's start.
    pub first_byte_s: Option<f64>,
    pub completion_s: Option<f64>,
    /// Received bytes over the completion time (over the time from start to
    /// the end of the run, if not complete), bit/s.
    pub goodput_bps: f64,
    pub errors: String,
}

/// A point of a path's goodput series (a row of `otcp_goodput.csv`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct GoodputRow {
    pub path: String,
    pub time_s: f64,
    pub goodput_bps: f64,
}
