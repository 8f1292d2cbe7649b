//! The Tor sections of a scenario file: `[tor]` (transport and its
//! parameters, the access links of generated hosts, relays and circuits
//! generated from a TorPS path file), `[[relay]]` and `[[circuit]]`.
//!
//! [`parse`] reads and checks them into a [`TorSection`]; the network is
//! drawn from the run's seed when it is built ([`TorSection::net`], in
//! `tor_build`), so that `--seed` and `hopwise sweep --seeds` draw new paths
//! and start times. The transport's keys and the generators are read in
//! `tor_config`, outputs are in `tor_out`. The keys are documented in
//! `docs/scenario-format.md` §12.

use super::short_list;
use super::tor_build::Uplinks;
use super::tor_config::{access, generators, traffic, transport, Work};
use hopwise_config::{
    self as cfg, did_you_mean, table, Duration, Flag, Int, Name, QueueLimit, Rate, Size, TableOf,
    Tables, Text,
};
use hopwise_proto::bucket::Refill;
use hopwise_proto::time::Dur;
use hopwise_sim::scenario::{ScenarioError, TRACE_BUDGET};
use hopwise_sim::spec::{Limit, NodeKind, Scenario};
use hopwise_tor::{TorConfig, Traffic};
use toml::Value;

type R<T> = Result<T, ScenarioError>;

fn e(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new("", key, msg)
}

/// The transports `[tor] transport` names.
pub const TRANSPORTS: [&str; 5] = ["vanilla", "pctcp", "n23", "tor-vegas", "backtap"];
/// Most relays a `[[circuit]]` path may have.
pub const MAX_PATH: usize = 8;
/// Most circuits one `[[circuit]]` (`count`) or `[tor.torps]` may make.
pub const MAX_CIRCUITS: u64 = 100_000;

table! {
    pub struct RawTorDoc("a table") {
        tor: TableOf<RawTor>, relay: Tables<RawRelay>, circuit: Tables<RawCircuit>,
    }
}
table! {
    pub struct RawTor("a table ([tor])") {
        transport: Text, refill: Value, response_delay: Value, goodput_interval: Duration,
        queue_interval: Duration, circuit_window: Int<0, 100_000>,
        circuit_sendme: Int<1, 100_000>, stream_window: Int<0, 100_000>,
        stream_sendme: Int<1, 100_000>, optimistic_data: Flag, nagle: Flag,
        n23: TableOf<RawN23>, vegas: TableOf<RawVegas>, backtap: TableOf<RawBacktap>,
        switch: Name, access: TableOf<RawAccess>, torps: TableOf<RawTorps>,
        generate: TableOf<RawGenerate>,
    }
}
table! {
    pub struct RawGenerate("a table ([tor.generate])") {
        relays: Int<1, 100_000>, bandwidth_min: Rate, bandwidth_max: Rate,
    }
}
table! {
    pub struct RawN23("a table ([tor.n23])") {
        n2: Int<1, 100_000>, n3: Int<0, 100_000>, gating: Text,
    }
}
table! {
    pub struct RawVegas("a table ([tor.vegas])") {
        alpha: Int<0, 100_000>, beta: Int<0, 100_000>, gamma: Int<0, 100_000>,
        delta: Int<0, 100_000>, cwnd_init: Int<1, 100_000>, cwnd_min: Int<1, 100_000>,
        sendme_inc: Int<1, 100_000>,
    }
}
table! {
    pub struct RawBacktap("a table ([tor.backtap])") {
        alpha: Int<0, 100_000>, beta: Int<0, 100_000>, initial_window: Int<1, 1_000_000>,
        max_window: Int<1, 1_000_000>, min_rto: Duration,
    }
}
table! {
    pub struct RawAccess("a table of access-link properties") {
        rate: Rate, up: Rate, delay: Duration, rtt: Duration, queue: QueueLimit,
    }
}
table! {
    pub struct RawTorps("a table ([tor.torps])") {
        file: Int<50, 100>, circuits: Int<1, MAX_CIRCUITS>, workload: Text, size: Size,
        think_min: Duration, think_max: Duration, requests: Int<1, 1_000_000>,
        start_window: Duration, stream: Text,
    }
}
table! {
    pub struct RawRelay("a table (a [[relay]] section)", section "relay") {
        name: Name, node: Name, bandwidth: Rate, burst: Size, access: TableOf<RawAccess>,
    }
}
table! {
    pub struct RawCircuit("a table (a [[circuit]] section)", section "circuit") {
        name: Name, client: Name, path: Value, hops: Int<1, 8>, count: Int<1, MAX_CIRCUITS>,
        server: Name, workload: Text, size: Size, think_min: Duration, think_max: Duration,
        requests: Int<1, 1_000_000>, start: Duration, start_step: Duration,
        access: TableOf<RawAccess>,
    }
}

/// A generated host's access link (see [`hopwise_tor::Access`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccessSpec {
    pub rate: hopwise_proto::units::Rate,
    pub up: Option<hopwise_proto::units::Rate>,
    pub delay: Dur,
    pub queue: Limit,
}

impl AccessSpec {
    /// 1 Gbit/s, 10 ms one way (a 40 ms RTT between two hosts of the star),
    /// 100 packets.
    pub const DEFAULT: AccessSpec = AccessSpec {
        rate: hopwise_proto::units::Rate::from_mbps(1000),
        up: None,
        delay: Dur::from_millis(10),
        queue: Limit::Packets(100),
    };
}

/// Where a relay runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// A `[[node]]` of the file.
    Node(String),
    /// A generated host on the Tor switch.
    Generated(AccessSpec),
}

#[derive(Clone, Debug, PartialEq)]
pub struct RelaySpec {
    pub name: String,
    pub place: Place,
    /// Token bucket rate and burst (bytes per second, bytes); `None`: unlimited.
    pub bucket: Option<(u64, u64)>,
}

/// A circuit's path.
#[derive(Clone, Debug, PartialEq)]
pub enum PathSpec {
    Relays(Vec<String>),
    /// `hops` distinct relays drawn with probability proportional to their
    /// bucket rate, from the circuit's own random stream.
    ByBandwidth(usize),
}

/// A `[[circuit]]` after `count` is applied: one entry per circuit.
#[derive(Clone, Debug, PartialEq)]
pub struct CircuitDef {
    pub name: String,
    /// The client: a `[[node]]` of the file, or a generated host `op-<name>`.
    pub client: Place,
    pub client_name: String,
    pub path: PathSpec,
    /// `None`: the exit serves; else a `[[node]]` of the file.
    pub server: Option<String>,
    pub traffic: Traffic,
    pub start: Dur,
    /// The `[[circuit]]` entry's key path (`circuit "web"`), for errors.
    pub entry: String,
}

/// Circuits drawn from a TorPS path file (`[tor.torps]`).
#[derive(Clone, Debug, PartialEq)]
pub struct TorpsSpec {
    /// 50 or 100 (relays in the file).
    pub file: u32,
    pub circuits: usize,
    pub traffic: Traffic,
    pub start_window: Dur,
    /// Prefix of the random streams: `<stream>/paths`, `<stream>/starts`.
    pub stream: String,
}

/// Relays generated with bandwidths drawn log-uniformly in `[min, max]`
/// bytes per second (`[tor.generate]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenerateSpec {
    pub relays: usize,
    pub min: u64,
    pub max: u64,
}

impl GenerateSpec {
    /// The bandwidths of relays `g0`, `g1`, … for `seed` (bytes per second),
    /// from the stream `tor/generate`.
    pub fn bandwidths(&self, seed: u64) -> Vec<u64> {
        let mut rng = hopwise_proto::rng::Rng::for_component(seed, "tor/generate");
        let (lo, hi) = ((self.min as f64).ln(), (self.max as f64).ln());
        (0..self.relays)
            .map(|_| (lo + (hi - lo) * rng.f64()).exp().round().max(1.0) as u64)
            .collect()
    }
}

/// The Tor sections, read and checked.
#[derive(Clone, Debug)]
pub struct TorSection {
    pub config: TorConfig,
    /// Refill of the relays' token buckets.
    pub refill: Refill,
    /// The switch generated hosts attach to.
    pub switch: String,
    pub access: AccessSpec,
    pub relays: Vec<RelaySpec>,
    pub circuits: Vec<CircuitDef>,
    pub torps: Option<TorpsSpec>,
    /// Relays `g<i>` generated with bandwidths from a distribution.
    pub generate: Option<GenerateSpec>,
    /// Uplinks of the file's nodes that carry a relay, client or server.
    pub uplinks: Uplinks,
}

/// Reads the Tor sections of `base.overlay`; `None` if it has none.
pub fn parse(base: &Scenario) -> R<Option<TorSection>> {
    let mut doc = toml::Table::new();
    for k in ["tor", "relay", "circuit"] {
        if let Some(v) = base.overlay.get(k) {
            doc.insert(k.into(), v.clone());
        }
    }
    if doc.is_empty() {
        return Ok(None);
    }
    let raw: RawTorDoc = cfg::from_value(Value::Table(doc.clone())).map_err(|p| {
        let key = key_of(&doc, &p.path);
        p.at(key)
    })?;
    build(raw, base).map(Some)
}

/// `relay "guard"` / `circuit "web"`, or `relay[2]` for an entry without a
/// (valid) name, then the rest of the path.
fn key_of(doc: &toml::Table, path: &[cfg::Seg]) -> String {
    use cfg::Seg;
    if let [Seg::Key(kind), Seg::Index(i), rest @ ..] = path {
        let name = doc
            .get(kind)
            .and_then(|v| v.get(*i))
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .filter(|s| cfg::blank(s).is_none());
        let head = match name {
            Some(n) => format!("{kind} {n:?}"),
            None => format!("{kind}[{i}]"),
        };
        return cfg::join(&head, rest);
    }
    cfg::join("", path)
}

fn build(raw: RawTorDoc, base: &Scenario) -> R<TorSection> {
    let t = raw.tor.map(|t| t.0).unwrap_or_default();
    let (config, refill_v) = transport(&t)?;
    let switch = t
        .switch
        .as_ref()
        .map_or(hopwise_tor::net::DEFAULT_SWITCH.to_string(), |n| {
            n.0.clone()
        });
    if let Some(n) = base.nodes.iter().find(|n| n.name == switch) {
        if n.kind != NodeKind::Switch {
            return Err(e(
                "tor.switch",
                format!("`{switch}` is a host of the file; generated hosts attach to a switch"),
            ));
        }
    }
    let access_all = access(t.access.as_deref(), AccessSpec::DEFAULT, "tor.access")?;
    let (torps, generate) = generators(&t)?;

    // Relays.
    let node_names: Vec<&str> = base.nodes.iter().map(|n| n.name.as_str()).collect();
    // `n`, set at `key`, is a host of the file that a `role` can run on
    // (`hint`: where it may run instead).
    let host = |key: String, n: &str, role: &str, hint: &str| -> R<()> {
        match base.nodes.iter().find(|x| x.name == n) {
            None => Err(e(
                key,
                format!(
                    "unknown node `{n}`{} ({hint}; the file's nodes: {})",
                    did_you_mean(n, &node_names),
                    short_list(&node_names)
                ),
            )),
            Some(x) if x.kind == NodeKind::Switch => Err(e(
                key,
                format!("`{n}` is a switch; a {role} runs on a host"),
            )),
            Some(_) => Ok(()),
        }
    };
    let mut relays: Vec<RelaySpec> = Vec::new();
    for (i, r) in raw
        .relay
        .map(|t| t.0)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let name = cfg::required(r.name.clone(), &format!("relay[{i}].name"), "")?.0;
        let key = format!("relay {name:?}");
        if relays.iter().any(|x| x.name == name) {
            return Err(e(
                format!("{key}.name"),
                "a relay of this name is defined above",
            ));
        }
        let place = match &r.node {
            Some(n) => {
                let n = &n.0;
                host(
                    format!("{key}.node"),
                    n,
                    "relay",
                    "a relay runs on a [[node]] of the file; leave `node` out to \
                     generate a host for it",
                )?;
                if r.access.is_some() {
                    return Err(e(
                        format!("{key}.access"),
                        "a relay on a [[node]] uses that node's links; `access` is for \
                         generated hosts",
                    ));
                }
                if relays.iter().any(|x| x.place == Place::Node(n.clone())) {
                    return Err(e(
                        format!("{key}.node"),
                        format!("node `{n}` already runs a relay"),
                    ));
                }
                Place::Node(n.clone())
            }
            None => {
                if node_names.contains(&name.as_str()) || name == switch {
                    return Err(e(
                        format!("{key}.name"),
                        format!(
                            "a generated relay host would be named `{name}`, which is a node of \
                             the file; set `node = \"{name}\"` to run the relay there, or rename it"
                        ),
                    ));
                }
                Place::Generated(access(
                    r.access.as_deref(),
                    access_all,
                    &format!("{key}.access"),
                )?)
            }
        };
        let bucket = match (r.bandwidth, r.burst) {
            (Some(b), burst) => {
                let rate = b.0.bps() / 8;
                if rate == 0 {
                    return Err(e(
                        format!("{key}.bandwidth"),
                        format!(
                            "{} is less than one byte per second (the token bucket's rate is \
                             whole bytes); use at least 8bit",
                            b.0
                        ),
                    ));
                }
                Some((rate, burst.map_or(rate, |s| s.0)))
            }
            (None, Some(_)) => {
                return Err(e(
                    format!("{key}.burst"),
                    "a burst without `bandwidth` (the bucket's rate)",
                ))
            }
            (None, None) => None,
        };
        if let Some((_, 0)) = bucket {
            return Err(e(format!("{key}.burst"), "must be positive"));
        }
        relays.push(RelaySpec {
            name,
            place,
            bucket,
        });
    }
    let relay_names: Vec<&str> = relays.iter().map(|r| r.name.as_str()).collect();

    // Circuits.
    let mut circuits: Vec<CircuitDef> = Vec::new();
    let mut entry_names: Vec<String> = Vec::new();
    for (i, c) in raw
        .circuit
        .map(|t| t.0)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let name = cfg::required(c.name.clone(), &format!("circuit[{i}].name"), "")?.0;
        let key = format!("circuit {name:?}");
        if entry_names.contains(&name) {
            return Err(e(
                format!("{key}.name"),
                "a circuit of this name is defined above",
            ));
        }
        entry_names.push(name.clone());
        let path = match &c.path {
            None => {
                return Err(e(
                    format!("{key}.path"),
                    "missing required key (the relays, guard first: path = [\"guard\", \
                     \"middle\", \"exit\"], or path = \"by-bandwidth\")",
                ))
            }
            Some(Value::String(s)) if s == "by-bandwidth" => {
                let hops = c.hops.map_or(3, |h| h.0 as usize);
                let pool = relays.len() + generate.map_or(0, |g| g.relays);
                if hops > pool {
                    return Err(e(
                        format!("{key}.hops"),
                        format!(
                            "{hops} distinct relays needed, there are {pool} ([[relay]]s and \
                             [tor.generate] relays)"
                        ),
                    ));
                }
                if relays.iter().any(|r| r.bucket.is_none()) {
                    return Err(e(
                        format!("{key}.path"),
                        "\"by-bandwidth\" weighs relays by their `bandwidth`; give every \
                         [[relay]] one",
                    ));
                }
                PathSpec::ByBandwidth(hops)
            }
            Some(Value::Array(a)) => {
                if c.hops.is_some() {
                    return Err(e(
                        format!("{key}.hops"),
                        "`hops` goes with path = \"by-bandwidth\"; a listed path has its own length",
                    ));
                }
                if a.is_empty() {
                    return Err(e(
                        format!("{key}.path"),
                        "empty path: list the relays, guard first (Tor uses three)",
                    ));
                }
                if a.len() > MAX_PATH {
                    return Err(e(
                        format!("{key}.path"),
                        format!(
                            "{} relays; a path has at most {MAX_PATH} (Tor uses three)",
                            a.len()
                        ),
                    ));
                }
                let mut p: Vec<String> = Vec::new();
                for (k, v) in a.iter().enumerate() {
                    let at = format!("{key}.path[{k}]");
                    let Some(r) = v.as_str() else {
                        return Err(e(
                            at,
                            format!("expected a relay name, got {}", cfg::describe(v)),
                        ));
                    };
                    if !relay_names.contains(&r) {
                        let hint = if node_names.contains(&r) {
                            format!(" (`{r}` is a node; add a [[relay]] with node = \"{r}\")")
                        } else {
                            format!(
                                "{} (relays: {})",
                                did_you_mean(r, &relay_names),
                                short_list(&relay_names)
                            )
                        };
                        return Err(e(at, format!("unknown relay `{r}`{hint}")));
                    }
                    if p.iter().any(|x| x == r) {
                        return Err(e(at, format!("relay `{r}` appears twice on the path")));
                    }
                    p.push(r.to_string());
                }
                PathSpec::Relays(p)
            }
            Some(v) => {
                return Err(e(
                    format!("{key}.path"),
                    format!(
                        "expected an array of relay names or \"by-bandwidth\", got {}",
                        cfg::describe(v)
                    ),
                ))
            }
        };
        let client = match &c.client {
            Some(n) => {
                let n = &n.0;
                host(
                    format!("{key}.client"),
                    n,
                    "client",
                    "a client runs on a [[node]] of the file; leave `client` out to \
                     generate a host for it",
                )?;
                if c.access.is_some() {
                    return Err(e(
                        format!("{key}.access"),
                        "a client on a [[node]] uses that node's links; `access` is for \
                         generated clients",
                    ));
                }
                Some(n.clone())
            }
            None => None,
        };
        let server = match c.server.as_ref().map(|s| s.0.as_str()) {
            None | Some("exit") => None,
            Some(n) => {
                host(
                    format!("{key}.server"),
                    n,
                    "server",
                    "the server is \"exit\" (the exit serves the requests) or a [[node]]",
                )?;
                Some(n.to_string())
            }
        };
        let traffic = traffic(
            Work {
                workload: c.workload.as_ref(),
                size: c.size,
                think_min: c.think_min.as_ref(),
                think_max: c.think_max.as_ref(),
                requests: c.requests.map(|x| x.0),
            },
            &key,
        )?;
        let acc = access(c.access.as_deref(), access_all, &format!("{key}.access"))?;
        let count = c.count.map(|n| n.0 as usize);
        let start = c.start.as_ref().map_or(Dur::ZERO, |d| d.value);
        let step = c.start_step.as_ref().map_or(Dur::ZERO, |d| d.value);
        let start_of = |k: usize| {
            Dur::from_nanos(
                start
                    .as_nanos()
                    .saturating_add(step.as_nanos().saturating_mul(k as u64)),
            )
        };
        let last = start_of(count.unwrap_or(1) - 1);
        if last >= base.duration {
            let (at, what) = match count {
                Some(n) if n > 1 => (
                    "start_step",
                    format!(
                        "circuit {} would start at {last} (start + {} × start_step)",
                        n - 1,
                        n - 1
                    ),
                ),
                _ => ("start", format!("the circuit would start at {last}")),
            };
            return Err(e(
                format!("{key}.{at}"),
                format!(
                    "{what}, at or after the end of the simulation (duration = {})",
                    base.duration
                ),
            ));
        }
        for k in 0..count.unwrap_or(1) {
            let cname = match count {
                None => name.clone(),
                Some(_) => format!("{name}-{k}"),
            };
            if let Some(other) = circuits.iter().find(|d| d.name == cname) {
                let (at, what) = match count {
                    Some(_) => (
                        "count",
                        format!("`count` names this circuit's copies `{name}-0`, `{name}-1`, …: "),
                    ),
                    None => ("name", String::new()),
                };
                return Err(e(
                    format!("{key}.{at}"),
                    format!(
                        "{what}`{cname}` is also the name of a circuit defined above ({}); \
                         rename one of them",
                        other.entry
                    ),
                ));
            }
            let (place, client_name) = match &client {
                Some(n) => (Place::Node(n.clone()), n.clone()),
                None => (Place::Generated(acc), format!("op-{cname}")),
            };
            if let Place::Generated(_) = place {
                if node_names.contains(&client_name.as_str())
                    || relays.iter().any(|r| r.name == client_name)
                    || circuits.iter().any(|d| d.client_name == client_name)
                {
                    return Err(e(
                        format!("{key}.client"),
                        format!(
                            "the generated client host would be named `{client_name}`, which \
                             is taken; name the client with `client` or rename the circuit"
                        ),
                    ));
                }
            }
            circuits.push(CircuitDef {
                name: cname,
                client: place,
                client_name,
                path: path.clone(),
                server: server.clone(),
                traffic,
                start: start_of(k),
                entry: key.clone(),
            });
        }
    }
    if generate.is_some() {
        for n in relays
            .iter()
            .map(|r| r.name.as_str())
            .chain(node_names.iter().copied())
        {
            if numbered(n, "g") {
                return Err(e(
                    "tor.generate",
                    format!("`{n}` has the shape of a name [tor.generate] gives relays (g<i>); rename it"),
                ));
            }
        }
    }
    if torps.is_some() {
        // Generated names: relays r<i>, clients op<i>, circuits c<i>.
        for n in relays
            .iter()
            .map(|r| r.name.as_str())
            .chain(node_names.iter().copied())
        {
            if generated_name(n) {
                return Err(e(
                    "tor.torps",
                    format!(
                        "`{n}` has the shape of a name [tor.torps] generates (r<i>, op<i>); \
                         rename it"
                    ),
                ));
            }
        }
        if let Some(c) = circuits.iter().find(|c| generated_circuit(&c.name)) {
            return Err(e(
                format!("circuit {:?}.name", c.name),
                "names c<i> are those of the circuits [tor.torps] generates; rename it",
            ));
        }
    } else if circuits.is_empty() {
        return Err(e(
            "circuit",
            "no circuits: add a [[circuit]] (client, path of [[relay]]s) or draw circuits \
             from a TorPS file with [tor.torps]",
        ));
    }
    // Generated hosts must reach the file's nodes that take part.
    let on_file = relays.iter().any(|r| matches!(r.place, Place::Node(_)))
        || circuits
            .iter()
            .any(|c| matches!(c.client, Place::Node(_)) || c.server.is_some());
    let generated = relays
        .iter()
        .any(|r| matches!(r.place, Place::Generated(_)))
        || circuits
            .iter()
            .any(|c| matches!(c.client, Place::Generated(_)))
        || torps.is_some()
        || generate.is_some();
    if on_file && generated && !node_names.contains(&switch.as_str()) {
        return Err(e(
            "tor.switch",
            format!(
                "the generated hosts would hang off a new switch `{switch}`, apart from the \
                 file's nodes that run relays, clients or servers; set `switch` to a switch of \
                 the file{}",
                did_you_mean(&switch, &node_names)
            ),
        ));
    }
    // A node plays one role: relay, client or server.
    let relay_node = |n: &str| relays.iter().any(|r| r.place == Place::Node(n.to_string()));
    for c in &circuits {
        let key = format!("circuit {:?}", c.name);
        if let Place::Node(n) = &c.client {
            if relay_node(n) {
                return Err(e(
                    format!("{key}.client"),
                    format!("node `{n}` runs a relay; a client needs a node of its own"),
                ));
            }
        }
        if let Some(s) = &c.server {
            let client_node = circuits.iter().any(|x| x.client == Place::Node(s.clone()));
            if relay_node(s) || client_node {
                return Err(e(
                    format!("{key}.server"),
                    format!(
                        "node `{s}` runs a {}; a server needs a node of its own",
                        if client_node { "client" } else { "relay" }
                    ),
                ));
            }
        }
    }
    let uplinks = Uplinks::of(base, &relays, &circuits)?;
    budget(base, &config, &relays, &circuits, torps.as_ref(), generate)?;
    Ok(TorSection {
        config,
        refill: refill_v,
        switch,
        access: access_all,
        relays,
        circuits,
        torps,
        generate,
        uplinks,
    })
}

/// Checks that the series a Tor run keeps in memory fit in hopwise-sim's
/// [`TRACE_BUDGET`]: every `tor.goodput_interval` R(t) and W(t) per
/// circuit (16 B); every `tor.queue_interval` a sample per relay and one
/// per node of each circuit's path.
fn budget(
    base: &Scenario,
    config: &TorConfig,
    relays: &[RelaySpec],
    circuits: &[CircuitDef],
    torps: Option<&TorpsSpec>,
    generate: Option<GenerateSpec>,
) -> R<()> {
    use hopwise_tor::results::{HopSample, NodeSample};
    use std::mem::size_of;
    let torps_circuits = torps.map_or(0, |t| t.circuits) as u64;
    let n_circuits = circuits.len() as u64 + torps_circuits;
    let n_relays = relays.len() as u64
        + generate.map_or(0, |g| g.relays) as u64
        + torps.map_or(0, |t| u64::from(t.file));
    // Client and relays of each path; TorPS paths have three relays.
    let path_nodes: u64 = circuits
        .iter()
        .map(|c| match &c.path {
            PathSpec::Relays(r) => r.len() as u64 + 1,
            PathSpec::ByBandwidth(hops) => *hops as u64 + 1,
        })
        .sum::<u64>()
        .saturating_add(4 * torps_circuits);
    let mut series = vec![(
        "tor.goodput_interval",
        config.rw_interval,
        n_circuits.saturating_mul(16),
        format!("{n_circuits} circuits"),
    )];
    if let Some(q) = config.queue_interval {
        series.push((
            "tor.queue_interval",
            q,
            (n_relays.saturating_mul(size_of::<NodeSample>() as u64))
                .saturating_add(path_nodes.saturating_mul(size_of::<HopSample>() as u64)),
            format!("{n_relays} relays and {n_circuits} circuits"),
        ));
    }
    for (key, iv, bytes, what) in series {
        let samples = (base.duration.as_nanos() / iv.as_nanos().max(1)).saturating_add(1);
        let total = samples.saturating_mul(bytes);
        if total > TRACE_BUDGET {
            let need = u128::from(base.duration.as_nanos()) * u128::from(bytes)
                / u128::from(TRACE_BUDGET)
                + 1;
            let need = Dur::from_nanos(u64::try_from(need).unwrap_or(u64::MAX));
            let zero = if key == "tor.queue_interval" {
                " (or 0s: no queue samples)"
            } else {
                ""
            };
            return Err(e(
                key,
                format!(
                    "{iv} with {what} over {} would keep about {} MB of samples in memory, \
                     more than the {} MB allowed; use an interval of at least {need}{zero}, \
                     or a shorter duration",
                    base.duration,
                    total / 1_000_000,
                    TRACE_BUDGET / 1_000_000
                ),
            ));
        }
    }
    Ok(())
}

fn numbered(n: &str, prefix: &str) -> bool {
    n.strip_prefix(prefix)
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

fn generated_name(n: &str) -> bool {
    numbered(n, "r") || numbered(n, "op")
}

fn generated_circuit(n: &str) -> bool {
    numbered(n, "c")
}
