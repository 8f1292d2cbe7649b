//! The scenario file as serde reads it: one struct per table, unknown keys
//! refused, each value a `hopwise_config` type that words its own mistakes.
//! `cc` and `queue` stay TOML values: their keys depend on the algorithm or
//! the queue `type`, so `super` reads them. Key paths name the entities
//! (`link[2] "bottleneck".rat`), as [`key_of`] writes them.

use super::ScenarioError;
use hopwise_config::{
    self as cfg, table, Duration, Flag, Int, Loss, Name, Number, Problem, QueueLimit, Rate, Seg,
    Size, Strings, TableOf, Tables, Text,
};
use toml::Value;

/// Most replicas one `[[flow]]` may ask for with `count`.
pub const MAX_COUNT: u64 = 100_000;
/// The largest `capture_snaplen`.
const MAX_SNAPLEN: u64 = 262_144;

table! {
    pub struct RawScenario("a table") {
        name: Text, duration: Duration, seed: Int, start_jitter: Duration,
        defaults: TableOf<RawDefaults>, node: Tables<RawNode>, link: Tables<RawLink>,
        flow: Tables<RawFlow>, measure: TableOf<RawMeasure>,
        // The overlay sections: kept as TOML for the crate that models them
        // (`hopwise-overlay`), which reads and checks them.
        tor: Value, relay: Value, circuit: Value, swarm: Value, otcp: Value,
    }
}
table! {
    pub struct RawDefaults("a table ([defaults])") { tcp: TableOf<RawTcp>, link: TableOf<RawDir> }
}
table! {
    /// What a `[[link]]`, its `[link.ab]`/`[link.ba]` or `[defaults.link]`
    /// may set for a direction.
    pub struct RawDir("a table of link properties") {
        rate: Rate, delay: Duration, queue: Value, loss: Loss, trace: Text,
        gilbert_elliott: TableOf<RawGilbertElliott>, jitter: Duration, reorder: Flag,
    }
}
table! {
    pub struct RawGilbertElliott("a table of Gilbert-Elliott loss parameters") {
        p: Number, r: Number, loss_good: Number, loss_bad: Number,
    }
}
table! {
    pub struct RawNode("a table (a [[node]] section)", section "node") { name: Name, kind: Text }
}
table! {
    /// A link's own direction properties are [`RawDir`]'s, repeated: serde's
    /// `flatten` does not go with `deny_unknown_fields`.
    pub struct RawLink("a table (a [[link]] section)", section "link") {
        name: Name, a: Name, b: Name, rate: Rate, delay: Duration, queue: Value, loss: Loss,
        trace: Text, gilbert_elliott: TableOf<RawGilbertElliott>, jitter: Duration,
        reorder: Flag, ab: TableOf<RawDir>, ba: TableOf<RawDir>,
    }
}
table! {
    pub struct RawFlow("a table (a [[flow]] section)", section "flow") {
        name: Name, from: Name, to: Name, cc: Value, start: Duration, stop: Duration, size: Size,
        bidir: Flag, tcp: TableOf<RawTcp>, count: Int<1, MAX_COUNT>, start_step: Duration,
    }
}
table! {
    pub struct RawTcp("a table of TCP options") {
        mss: Int, sack: Flag, timestamps: Flag, ts_tick: Duration, window_scaling: Flag,
        delayed_ack: Flag, delack_timeout: Duration, nagle: Flag, min_rto: Duration,
        max_rto: Duration, rtt_estimator: Text, send_buffer: Size, recv_buffer: Size,
        initial_window: Int<0, 1_000_000>, dupthresh: Int<0, 1_000_000>, prr: Flag,
        pacing: Flag, ecn: Flag, hystart: Flag, rack: Flag,
        syn_retries: Int<0, 127>, time_wait: Duration,
    }
}
table! {
    pub struct RawMeasure("a table ([measure])") {
        goodput_interval: Duration, trace_interval: Duration, warmup: Duration,
        capture: Strings, capture_snaplen: Int<{ crate::pcap::MIN_SNAPLEN as u64 }, MAX_SNAPLEN>,
    }
}
// The queue tables, once `type` has chosen one.
table! {
    pub struct RawDropTail("a table") { r#type: Value, limit: QueueLimit }
}
table! {
    pub struct RawAckFirst("a table") {
        r#type: Value, classifier: Text, data_share: Number, throttle: Number,
        ack_limit: QueueLimit, data_limit: QueueLimit,
    }
}
table! {
    pub struct RawTbf("a table") { r#type: Value, rate: Rate, burst: Size, limit: QueueLimit }
}
table! {
    pub struct RawCodel("a table") {
        r#type: Value, target: Duration, interval: Duration, limit: QueueLimit, ecn: Flag,
    }
}
table! {
    pub struct RawFqCodel("a table") {
        r#type: Value, target: Duration, interval: Duration, limit: QueueLimit,
        flows: Int<1, 65_536>, quantum: Size, ecn: Flag,
    }
}
table! {
    pub struct RawPie("a table") {
        r#type: Value, target: Duration, tupdate: Duration, alpha: Number, beta: Number,
        max_burst: Duration, limit: QueueLimit, ecn: Flag,
    }
}
table! {
    pub struct RawRed("a table") {
        r#type: Value, min_th: QueueLimit, max_th: QueueLimit, max_p: Number, weight: Number,
        gentle: Flag, limit: QueueLimit, ecn: Flag,
    }
}

impl RawLink {
    /// The properties set for both directions.
    pub fn both(&self) -> RawDir {
        RawDir {
            rate: self.rate,
            delay: self.delay.clone(),
            queue: self.queue.clone(),
            loss: self.loss,
            trace: self.trace.clone(),
            gilbert_elliott: self.gilbert_elliott.clone(),
            jitter: self.jitter.clone(),
            reorder: self.reorder,
        }
    }
}

// ---------------------------------------------------------------------------
// Key paths

/// `node[2] "h1"` / `link[2] "bottleneck"`.
pub fn indexed(kind: &str, i: usize, name: &str) -> String {
    format!("{kind}[{i}] {name:?}")
}

/// `flow "f3"`.
pub fn named(kind: &str, name: &str) -> String {
    format!("{kind} {name:?}")
}

/// The key path of `path` in `doc` as messages write it: a `[[node]]` or
/// `[[link]]` entry as `node[2] "h1"` (a link without a name by its default
/// name `a-b`), a named `[[flow]]` as `flow "f3"`, and an entry whose name
/// is not known (yet) by its index.
pub fn key_of(doc: &toml::Table, path: &[Seg]) -> String {
    if let [Seg::Key(kind), Seg::Index(i), rest @ ..] = path {
        let entry = doc.get(kind).and_then(|v| v.get(*i));
        if let Some(head) = entry
            .and_then(Value::as_table)
            .and_then(|t| label(kind, *i, t))
        {
            return cfg::join(&head, rest);
        }
    }
    cfg::join("", path)
}

fn label(kind: &str, i: usize, t: &toml::Table) -> Option<String> {
    let name = |k: &str| {
        t.get(k)
            .and_then(Value::as_str)
            .filter(|s| cfg::blank(s).is_none())
    };
    match kind {
        "node" => name("name").map(|n| indexed(kind, i, n)),
        "link" if t.contains_key("name") => name("name").map(|n| indexed(kind, i, n)),
        "link" => Some(indexed(kind, i, &format!("{}-{}", name("a")?, name("b")?))),
        "flow" => name("name").map(|n| named(kind, n)),
        _ => None,
    }
}

/// The error of a deserialization problem at key path `key`; a TCP option
/// or a link property where it does not belong also says where it does.
pub fn error(p: Problem, key: String) -> ScenarioError {
    let hint = match (&p.allowed, p.path.last()) {
        (Some(allowed), Some(Seg::Key(k))) => misplaced(k, allowed),
        _ => "",
    };
    let mut e = p.at(key);
    e.message.push_str(hint);
    e
}

fn misplaced(key: &str, allowed: &[String]) -> &'static str {
    let allows = |k: &str| allowed.iter().any(|a| a == k);
    if !allows("sack") && cfg::has_field::<RawTcp>(key) {
        "; TCP options go in [defaults.tcp] or in a flow's `tcp = { … }` table"
    } else if !allows("rate") && cfg::has_field::<RawDir>(key) {
        "; link properties go in a [[link]], its [link.ab]/[link.ba], or [defaults.link]"
    } else {
        ""
    }
}
