//! Scenario files (TOML) parsed into [`crate::spec::Scenario`].
//!
//! The format is documented in `docs/scenario-format.md`; the short version:
//!
//! ```toml
//! duration = "60s"
//! [[node]]
//! name = "h1"
//! [[node]]
//! name = "h2"
//! [[link]]
//! a = "h1"
//! b = "h2"
//! rate = "10Mbit"
//! delay = "10ms"
//! [[flow]]
//! from = "h1"
//! to = "h2"
//! cc = "cubic"
//! ```
//!
//! [`load`] and [`parse`] apply `--set key=value` overrides to the TOML
//! document ([`overrides`]), read it with serde into the structs of [`raw`]
//! (unknown keys refused, values read by `hopwise_config`'s types), turn
//! those into a [`Scenario`] here and run [`validate`] ([`check`]). Every
//! error names the file, the key path (`link[2] "bottleneck".ba.rate`,
//! `flow "f3".cc.target`) and the problem, with the accepted alternatives.
//!
//! Parsing never panics, whatever the input (a property test feeds it random
//! bytes and mutated scenarios).

mod check;
mod overrides;
mod raw;

pub use check::{validate, TRACE_BUDGET};
pub use overrides::shorten;

use crate::spec::{
    AckClassifier, DeliveryTrace, DirSpec, FlowSpec, GilbertElliott, Jitter, LinkModel, LinkSpec,
    MeasureSpec, NodeKind, NodeSpec, QueueSpec, Scenario, Traffic,
};
use check::{max_packet, mss_problem, queue_problem, share_problem, tcp_problem};
use hopwise_config::{self as cfg, describe, did_you_mean, Number, QueueLimit, Seg};
use hopwise_proto::cc::{CcConfig, ParamValue};
use hopwise_proto::tcp::{RttEstimatorKind, TcpConfig};
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use raw::{indexed, named, RawDir, RawFlow, RawLink, RawNode, RawScenario, RawTcp};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::Arc;
use toml::Value;

/// What went wrong, and where: `<file>: <key>: <message>`
/// (or `<file>: <message>` when no key applies, e.g. TOML syntax errors,
/// whose message starts with the line and column). The key is a path such
/// as `link[2] "bottleneck".ba.rate`, `flow "f3".cc.target`,
/// `measure.warmup`, or `--set <override>` for a bad override.
pub type ScenarioError = cfg::Error;

type R<T> = Result<T, ScenarioError>;

/// An error at `key`, before the file name is attached.
fn e(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new("", key, msg)
}

/// `path.key`, or `key` at the top level.
fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A list for messages, shortened if long.
fn list(items: &[&str]) -> String {
    const MAX: usize = 16;
    if items.len() > MAX {
        format!("{}, … ({} in all)", items[..MAX].join(", "), items.len())
    } else {
        items.join(", ")
    }
}

/// Congestion-control aliases accepted by [`CcConfig::from_name`] besides
/// [`CcConfig::NAMES`] (for "did you mean").
const CC_ALIASES: &[&str] = &[
    "reno",
    "ledbat-rfc6817",
    "utp",
    "ledbat-plus-plus",
    "ledbatpp",
    "tcp-lp",
    "tcp-nice",
];

/// Reads, overrides, parses and validates a scenario file.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    parse(&read(path)?, &path.display().to_string(), overrides)
}

/// Reads a scenario file's text as every configuration file is read
/// ([`hopwise_config::read`]: a regular file, at most 16 MiB, UTF-8).
pub fn read(path: &Path) -> Result<String, ScenarioError> {
    cfg::read(path)
}

/// Parses scenario text. `origin` names it in errors (normally the file path;
/// its stem is the default scenario name). `overrides` are `key=value`
/// strings applied to the TOML document before it is read (see the module
/// documentation of the format).
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let mut doc = cfg::parse_toml(text, origin, |msg, line| syntax_hint(text, msg, line))?;
    // A seed from an override may use the whole u64 range, which a TOML
    // integer (i64) cannot hold: it is kept aside and set after the build.
    let mut big_seed = None;
    // The keys and tables each override created, to blame an unknown key on it.
    let mut created: Vec<(&str, Vec<Seg>)> = Vec::new();
    for o in overrides {
        let set_err = |m| ScenarioError::new(origin, format!("--set {}", shorten(o)), m);
        match overrides::seed(o).map_err(set_err)? {
            Some(v) if v > i64::MAX as u64 => {
                doc.remove("seed");
                big_seed = Some(v);
            }
            _ => {
                let paths = overrides::apply(&mut doc, o).map_err(set_err)?;
                created.extend(paths.into_iter().map(|p| (o.as_str(), p)));
                // Any later seed (digits, hex, `+7`, ...) wins over a
                // big one given before it.
                if overrides::is_seed_key(o) {
                    big_seed = None;
                }
            }
        }
    }
    let raw: RawScenario = cfg::from_value(Value::Table(doc.clone())).map_err(|p| {
        let blame = created.iter().rev().find(|(_, c)| p.path.starts_with(c));
        match (blame, &p.path[..]) {
            (Some((o, _)), [parent @ .., Seg::Key(k)]) if p.allowed.is_some() => {
                let place = match raw::key_of(&doc, parent) {
                    s if s.is_empty() => "at the top level".to_string(),
                    s => format!("in `{s}`"),
                };
                let what = format!("unknown key `{}` {place}", shorten(k));
                let mut x = raw::error(p.clone(), format!("--set {}", shorten(o)));
                x.message = x.message.replacen("unknown key", &what, 1);
                x
            }
            _ => {
                let key = raw::key_of(&doc, &p.path);
                raw::error(p, key)
            }
        }
        .in_file(origin)
    })?;
    let mut s = build(raw, origin).map_err(|x| x.in_file(origin))?;
    if let Some(v) = big_seed {
        s.seed = v;
    }
    validate(&s, origin)?;
    Ok(s)
}

/// Advice for a TOML syntax error on `line`: where a seed too large for a
/// TOML integer can go, and the fix for `[node]` next to `[[node]]`.
fn syntax_hint(text: &str, msg: &str, line: &str) -> String {
    let mut out = String::new();
    if msg.contains("number too large")
        && line
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == "seed")
    {
        out.push_str(&format!(
            " (a scenario file holds whole numbers up to {}, the limit of a TOML integer; \
             for a larger seed, up to {}, use `hopwise sim --seed N` or `--set seed=N`)",
            i64::MAX,
            u64::MAX
        ));
    }
    // `[node]` next to `[[node]]` (or twice) is a duplicate key to TOML;
    // the fix is the same as for a lone `[node]`. The hint names the line
    // of the first single-bracket header.
    let key = msg
        .split_once("duplicate key `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(k, _)| k)
        .filter(|k| ["node", "link", "flow"].contains(k));
    let single = |l: &str, key: &str| {
        let h = l.split('#').next().unwrap_or("").trim();
        !h.starts_with("[[")
            && h.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .is_some_and(|inner| inner.trim() == key)
    };
    if let Some(key) = key {
        if let Some(n) = text.lines().position(|l| single(l, key)) {
            out.push_str(&format!(
                " ([{key}] on line {} makes a single table: write [[{key}]] (double brackets) \
                 for each entry, not [{key}])",
                n + 1
            ));
        }
    }
    out
}

/// Expands capture entries (`<link>`, `<link>:ab`, `<link>:ba`) into link
/// directions (`<link>:ab`, …), in order and without repeats. The error
/// names the bad entry and lists the links.
pub fn capture_ifaces(s: &Scenario, entries: &[String]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for ent in entries {
        let is_link = |n: &str| s.links.iter().any(|l| l.name == n);
        let (link, dirs): (&str, &[&str]) = match ent.rsplit_once(':') {
            _ if is_link(ent) => (ent.as_str(), &["ab", "ba"]),
            Some((l, "ab")) => (l, &["ab"]),
            Some((l, "ba")) => (l, &["ba"]),
            Some((l, d)) if is_link(l) => {
                return Err(format!(
                    "`{ent}`: unknown direction `{d}` (use `<link>`, `<link>:ab` or `<link>:ba`)"
                ))
            }
            _ => (ent.as_str(), &["ab", "ba"]),
        };
        if !s.links.iter().any(|l| l.name == link) {
            let names: Vec<&str> = s.links.iter().map(|l| l.name.as_str()).collect();
            return Err(format!(
                "`{ent}`: unknown link `{link}` (links: {})",
                names.join(", ")
            ));
        }
        for d in dirs {
            let name = format!("{link}:{d}");
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// From the raw document to the scenario
// ---------------------------------------------------------------------------

/// A required key `path.key`: its value, or "missing required key (`why`)".
fn req<T>(v: Option<T>, path: &str, key: &str, why: &str) -> R<T> {
    cfg::required(v, &at(path, key), why)
}

/// A table of a queue or its like, read at key path `p`.
fn sub<T: DeserializeOwned>(v: &Value, p: &str) -> R<T> {
    cfg::from_value(v.clone()).map_err(|x| {
        let key = cfg::join(p, &x.path);
        raw::error(x, key)
    })
}

fn queue(v: &Value, p: &str) -> R<QueueSpec> {
    let t = match v {
        Value::String(_) | Value::Integer(_) => {
            let limit = QueueLimit::read(v).map_err(|m| e(p, m))?;
            return Ok(QueueSpec::DropTail { limit });
        }
        Value::Table(t) => t,
        other => {
            return Err(e(
                p,
                format!(
                    "expected a queue: a limit such as \"100pkt\" / \"30000B\", or a table such as \
                     {{ type = \"droptail\", limit = \"100pkt\" }}; got {}",
                    describe(other)
                ),
            ))
        }
    };
    #[derive(Clone, Copy)]
    enum Kind {
        DropTail,
        AckFirst,
        Tbf,
        Codel,
        FqCodel,
        Pie,
        Red,
    }
    let kinds = [
        ("droptail", Kind::DropTail),
        ("ackfirst", Kind::AckFirst),
        ("tbf", Kind::Tbf),
        ("codel", Kind::Codel),
        ("fq_codel", Kind::FqCodel),
        ("pie", Kind::Pie),
        ("red", Kind::Red),
    ];
    let names: Vec<&str> = kinds.iter().map(|k| k.0).collect();
    let why = format!("the discipline: one of {}", names.join(", "));
    let kind = cfg::Text::read(req(t.get("type"), p, "type", &why)?)
        .and_then(|ty| cfg::choice(&ty, "queue type", &kinds))
        .map_err(|m| e(at(p, "type"), m))?;
    let share = |x: Option<Number>, k: &str, default: f64| match x.map(|n| n.0) {
        None => Ok(default),
        Some(x) => match share_problem(x) {
            Some(m) => Err(e(at(p, k), m)),
            None => Ok(x),
        },
    };
    Ok(match kind {
        Kind::DropTail => QueueSpec::DropTail {
            limit: sub::<raw::RawDropTail>(v, p)?.limit.unwrap_or_default(),
        },
        Kind::AckFirst => {
            let q: raw::RawAckFirst = sub(v, p)?;
            let kinds = [
                ("no-payload", AckClassifier::NoPayload),
                ("len64", AckClassifier::Len64),
            ];
            let classifier = match q.classifier {
                None => AckClassifier::NoPayload,
                Some(c) => {
                    cfg::choice(&c, "classifier", &kinds).map_err(|m| e(at(p, "classifier"), m))?
                }
            };
            QueueSpec::AckFirst {
                classifier,
                data_share: share(q.data_share, "data_share", 0.9)?,
                throttle: share(q.throttle, "throttle", 0.95)?,
                ack_limit: q.ack_limit.unwrap_or_default(),
                data_limit: q.data_limit.unwrap_or_default(),
            }
        }
        Kind::Tbf => {
            let q: raw::RawTbf = sub(v, p)?;
            let rate = req(q.rate, p, "rate", "the token rate, e.g. \"1Mbit\"")?.0;
            let burst = req(q.burst, p, "burst", "the bucket size, e.g. \"3000B\"")?.0;
            if burst == 0 {
                return Err(e(at(p, "burst"), "must be positive"));
            }
            QueueSpec::TokenBucket {
                rate,
                burst,
                limit: q.limit.unwrap_or_default(),
            }
        }
        // Defaults: Linux's (tc-codel(8), tc-fq_codel(8), tc-pie(8)); RED's
        // from Floyd and Jacobson's paper and the gentle_ recommendation.
        Kind::Codel => {
            let q: raw::RawCodel = sub(v, p)?;
            QueueSpec::Codel {
                target: q.target.map_or(Dur::from_millis(5), |d| d.value),
                interval: q.interval.map_or(Dur::from_millis(100), |d| d.value),
                limit: q.limit.unwrap_or_default(),
                ecn: q.ecn.is_some_and(|f| f.0),
            }
        }
        Kind::FqCodel => {
            let q: raw::RawFqCodel = sub(v, p)?;
            QueueSpec::FqCodel {
                target: q.target.map_or(Dur::from_millis(5), |d| d.value),
                interval: q.interval.map_or(Dur::from_millis(100), |d| d.value),
                limit: q.limit.unwrap_or(QueueLimit::Packets(10_240)),
                flows: q.flows.map_or(1024, |n| n.0 as u32),
                quantum: match q.quantum {
                    None => 1514,
                    Some(s) => u32::try_from(s.0)
                        .ok()
                        .filter(|&b| b > 0)
                        .ok_or_else(|| e(at(p, "quantum"), "must be between 1 B and 4 GB"))?,
                },
                ecn: q.ecn.is_none_or(|f| f.0),
            }
        }
        Kind::Pie => {
            let q: raw::RawPie = sub(v, p)?;
            QueueSpec::Pie {
                target: q.target.map_or(Dur::from_millis(15), |d| d.value),
                tupdate: q.tupdate.map_or(Dur::from_millis(15), |d| d.value),
                alpha: q.alpha.map_or(0.125, |n| n.0),
                beta: q.beta.map_or(1.25, |n| n.0),
                max_burst: q.max_burst.map_or(Dur::from_millis(150), |d| d.value),
                limit: q.limit.unwrap_or_default(),
                ecn: q.ecn.is_some_and(|f| f.0),
            }
        }
        Kind::Red => {
            let q: raw::RawRed = sub(v, p)?;
            let min_th = q.min_th.unwrap_or(QueueLimit::Packets(5));
            let max_th = q.max_th.unwrap_or(match min_th {
                QueueLimit::Packets(n) => QueueLimit::Packets(3 * n),
                QueueLimit::Bytes(b) => QueueLimit::Bytes(3 * b),
            });
            QueueSpec::Red {
                min_th,
                max_th,
                max_p: q.max_p.map_or(0.1, |n| n.0),
                weight: q.weight.map_or(0.002, |n| n.0),
                gentle: q.gentle.is_none_or(|f| f.0),
                limit: q.limit.unwrap_or_default(),
                ecn: q.ecn.is_some_and(|f| f.0),
            }
        }
    })
}

/// The per-direction properties one table gives (any may be absent).
#[derive(Clone, Default)]
struct DirFields {
    rate: Option<Rate>,
    delay: Option<Dur>,
    /// The queue and the key path it was written at: its size can only be
    /// checked once the flows (and so the largest packet) are known, and
    /// the error must name the key the user wrote.
    queue: Option<(QueueSpec, String)>,
    loss: Option<f64>,
    trace: Option<Arc<DeliveryTrace>>,
    gilbert_elliott: Option<GilbertElliott>,
    jitter: Option<Dur>,
    reorder: Option<bool>,
}

/// `dir`'s properties; a trace file is read relative to `base` (the
/// scenario file's directory).
fn dir_fields(d: &RawDir, p: &str, base: &Path) -> R<DirFields> {
    let queue = match &d.queue {
        Some(v) => Some((queue(v, &at(p, "queue"))?, at(p, "queue"))),
        None => None,
    };
    let trace = match &d.trace {
        None => None,
        Some(t) => {
            let path = base.join(&t.0);
            let key = at(p, "trace");
            let text = std::fs::read_to_string(&path).map_err(|x| {
                e(
                    &key,
                    format!("cannot read the trace `{}`: {x}", path.display()),
                )
            })?;
            let tr = DeliveryTrace::parse(&t.0, &text)
                .map_err(|m| e(&key, format!("the trace `{}`: {m}", path.display())))?;
            Some(Arc::new(tr))
        }
    };
    let gilbert_elliott = match &d.gilbert_elliott {
        None => None,
        Some(g) => {
            let g = &g.0;
            let kp = at(p, "gilbert_elliott");
            let prob = |x: Option<Number>, k: &str, default: Option<f64>, open: bool| {
                let v = match (x, default) {
                    (Some(n), _) => n.0,
                    (None, Some(d)) => d,
                    (None, None) => {
                        return Err(e(
                            at(&kp, k),
                            "missing: the per-packet probability of changing state, e.g. 0.01",
                        ))
                    }
                };
                let ok = if open {
                    v > 0.0 && v <= 1.0
                } else {
                    (0.0..=1.0).contains(&v)
                };
                if ok {
                    Ok(v)
                } else {
                    let range = if open { "(0, 1]" } else { "[0, 1]" };
                    Err(e(
                        at(&kp, k),
                        format!("must be a probability in {range}, got {v}"),
                    ))
                }
            };
            Some(GilbertElliott {
                p: prob(g.p, "p", None, true)?,
                r: prob(g.r, "r", None, true)?,
                loss_good: prob(g.loss_good, "loss_good", Some(0.0), false)?,
                loss_bad: prob(g.loss_bad, "loss_bad", Some(1.0), false)?,
            })
        }
    };
    Ok(DirFields {
        rate: d.rate.map(|r| r.0),
        delay: d.delay.as_ref().map(|d| d.value),
        queue,
        loss: d.loss.map(|l| l.0),
        trace,
        gilbert_elliott,
        jitter: d.jitter.as_ref().map(|d| d.value),
        reorder: d.reorder.map(|f| f.0),
    })
}

/// A direction's properties, each from the first of `dir`, `link`,
/// `defaults` that sets it, and the key path its queue came from (`None`
/// for the built-in default).
fn resolve_dir(
    [dir, link, defaults]: [&DirFields; 3],
    path: &str,
    (d, from, to): (&str, &str, &str),
) -> R<(DirSpec, Option<String>)> {
    let missing = |k: &str, example: &str| {
        e(
            at(path, k),
            format!(
                "missing: no {k} for direction {d} ({from} -> {to}); set `{k} = {example}` in the \
                 [[link]], in its [link.{d}] table, or in [defaults.link]{}",
                if k == "rate" {
                    " (or give it a `trace`)"
                } else {
                    ""
                }
            ),
        )
    };
    let (queue, queue_at) = match dir
        .queue
        .as_ref()
        .or(link.queue.as_ref())
        .or(defaults.queue.as_ref())
    {
        Some((q, at)) => (q.clone(), Some(at.clone())),
        None => (QueueSpec::default(), None),
    };
    let first = |f: fn(&DirFields) -> bool| [dir, link, defaults].into_iter().find(|x| f(x));
    let trace = first(|x| x.trace.is_some()).and_then(|x| x.trace.clone());
    let jitter = first(|x| x.jitter.is_some()).and_then(|x| x.jitter);
    let reorder = first(|x| x.reorder.is_some()).and_then(|x| x.reorder);
    if reorder.is_some() && jitter.is_none() {
        return Err(e(
            at(path, "reorder"),
            "needs `jitter`: without a varying delay packets cannot overtake each other",
        ));
    }
    let model = LinkModel {
        gilbert_elliott: first(|x| x.gilbert_elliott.is_some()).and_then(|x| x.gilbert_elliott),
        jitter: jitter.map(|max| Jitter {
            max,
            reorder: reorder.unwrap_or(false),
        }),
        trace,
    };
    let spec = DirSpec {
        // A trace sets the rate (its mean, for reports).
        rate: match &model.trace {
            Some(t) => t.mean_rate(),
            None => dir
                .rate
                .or(link.rate)
                .or(defaults.rate)
                .ok_or_else(|| missing("rate", "\"10Mbit\""))?,
        },
        delay: dir
            .delay
            .or(link.delay)
            .or(defaults.delay)
            .ok_or_else(|| missing("delay", "\"10ms\""))?,
        queue,
        loss: dir.loss.or(link.loss).or(defaults.loss).unwrap_or(0.0),
        model,
    };
    Ok((spec, queue_at))
}

fn apply_tcp(c: &mut TcpConfig, t: &RawTcp, p: &str) -> R<()> {
    if let Some(n) = t.mss {
        // One range check, with the reason for the limits, whatever the
        // size of the number.
        if let Some(m) = mss_problem(n.0) {
            return Err(e(at(p, "mss"), m));
        }
        c.mss = n.0 as u16;
    }
    cfg::apply!(c, t, |f| f.0; sack, timestamps, window_scaling, delayed_ack, nagle, prr, pacing, ecn, hystart, rack);
    cfg::apply!(c, t, |d| d.value; ts_tick, delack_timeout, min_rto, max_rto, time_wait);
    cfg::apply!(c, t, |n| n.0; send_buffer, recv_buffer, initial_window, dupthresh);
    cfg::apply!(c, t, |n| n.0 as u32; syn_retries);
    if let Some(r) = &t.rtt_estimator {
        let kinds = [
            ("rfc6298", RttEstimatorKind::Rfc6298),
            ("linux", RttEstimatorKind::Linux),
        ];
        c.rtt_estimator =
            cfg::choice(r, "RTT estimator", &kinds).map_err(|m| e(at(p, "rtt_estimator"), m))?;
    }
    Ok(())
}

fn tcp_check(c: &TcpConfig, path: &str) -> R<()> {
    match tcp_problem(c) {
        Some((k, m)) => Err(e(at(path, k), m)),
        None => Ok(()),
    }
}

/// A congestion control by name (`"cubic"`, an alias such as `"reno"`,
/// any case), or an error at key path `p` with a "did you mean".
pub fn cc_by_name(name: &str, p: &str) -> R<CcConfig> {
    let trimmed = name.trim();
    CcConfig::from_name(trimmed)
        .or_else(|_| CcConfig::from_name(&trimmed.to_lowercase()))
        .map_err(|_| {
            let candidates: Vec<&str> = CcConfig::NAMES.iter().chain(CC_ALIASES).copied().collect();
            e(
                p,
                format!(
                    "unknown congestion control {name:?}{} (known: {})",
                    did_you_mean(trimmed, &candidates),
                    CcConfig::NAMES.join(", ")
                ),
            )
        })
}

/// A `cc` value: `cc = "cubic"` or `cc = { algo = "ledbat", target =
/// "100ms" }` (errors at key path `p`). Read by hand rather than by serde:
/// the parameters depend on the algorithm.
pub fn cc_value(v: &Value, p: &str) -> R<CcConfig> {
    let t = match v {
        Value::String(s) => return cc_by_name(s, p),
        Value::Table(t) => t,
        other => {
            return Err(e(
                p,
                format!(
                    "expected an algorithm name such as \"cubic\" or a table such as \
                     {{ algo = \"ledbat\", target = \"100ms\" }}, got {}",
                    describe(other)
                ),
            ))
        }
    };
    let algo = match t.get("algo") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(e(
                at(p, "algo"),
                format!("expected a string, got {}", describe(other)),
            ))
        }
        None => {
            let why = format!("the algorithm: one of {}", CcConfig::NAMES.join(", "));
            return req(None, p, "algo", &why);
        }
    };
    let mut cfg = cc_by_name(algo, &at(p, "algo"))?;
    // `variant` first: it selects the constants the other parameters adjust.
    let mut params: Vec<(&String, &Value)> = t.iter().filter(|(k, _)| *k != "algo").collect();
    params.sort_by_key(|(k, _)| *k != "variant");
    for (k, v) in params {
        let kp = at(p, k);
        let known = cfg.param_names();
        if !known.contains(&k.as_str()) {
            return Err(e(
                kp,
                if k == "variant" {
                    format!(
                        "`{}` has no variants (only the LEDBAT family has)",
                        cfg.name()
                    )
                } else if known.is_empty() {
                    format!("`{}` takes no parameters", cfg.name())
                } else {
                    format!(
                        "unknown parameter for `{}`{} (known: algo, {})",
                        cfg.name(),
                        did_you_mean(k, known),
                        known.join(", ")
                    )
                },
            ));
        }
        let pv = match v {
            Value::Integer(n) => ParamValue::Num(*n as f64),
            Value::Float(x) => ParamValue::Num(*x),
            Value::Boolean(b) => ParamValue::Bool(*b),
            Value::String(s) => ParamValue::Str(s),
            other => {
                return Err(e(
                    kp,
                    format!(
                        "expected a number, a boolean or a string such as \"100ms\", got {}",
                        describe(other)
                    ),
                ))
            }
        };
        // `CcConfig::set` prefixes its messages with "`key`: "; the key path says it.
        cfg.set(k, pv).map_err(|m| {
            let m = m
                .strip_prefix(&format!("`{k}`: "))
                .unwrap_or(&m)
                .to_string();
            e(&kp, m)
        })?;
    }
    if let Some(m) = cfg.problem() {
        return Err(e(p, m));
    }
    Ok(cfg)
}

fn default_name(origin: &str) -> String {
    Path::new(origin)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(origin)
        .to_string()
}

fn build(raw: RawScenario, origin: &str) -> R<Scenario> {
    let overlay = overlay_sections(&raw);
    let name = raw.name.map_or_else(|| default_name(origin), |n| n.0);
    // Trace files are named relative to the scenario file.
    let base = Path::new(origin)
        .parent()
        .unwrap_or(Path::new(""))
        .to_path_buf();
    let why = "how much simulated time to run, e.g. duration = \"60s\"";
    let duration = req(raw.duration, "", "duration", why)?.value;
    if duration.is_zero() {
        return Err(e("duration", "must be positive"));
    }
    let defaults = raw.defaults.map(|t| t.0).unwrap_or_default();
    let mut tcp_default = TcpConfig::default();
    if let Some(t) = &defaults.tcp {
        apply_tcp(&mut tcp_default, t, "defaults.tcp")?;
        tcp_check(&tcp_default, "defaults.tcp")?;
    }
    let link_default = match &defaults.link {
        Some(d) => dir_fields(d, "defaults.link", &base)?,
        None => DirFields::default(),
    };
    let Some(node) = raw
        .node
        .or_else(|| (!overlay.is_empty()).then(Default::default))
    else {
        return Err(e(
            "node",
            "missing: declare the hosts and switches with [[node]] sections \
             (name = \"h1\", kind = \"host\" or \"switch\")",
        ));
    };
    let nodes = node
        .0
        .into_iter()
        .enumerate()
        .map(|(i, n)| node_spec(i, n))
        .collect::<R<Vec<_>>>()?;
    let mut links = Vec::new();
    // Per link: its key path and where each direction's queue came from.
    let mut queue_origins = Vec::new();
    for (i, l) in raw.link.unwrap_or_default().0.iter().enumerate() {
        let (link, origins) = link_spec(i, l, &link_default, &base)?;
        links.push(link);
        queue_origins.push(origins);
    }
    let mut flows = Vec::new();
    for (i, f) in raw.flow.unwrap_or_default().0.into_iter().enumerate() {
        flows.extend(flow_specs(i, f, duration, &tcp_default)?);
    }

    // Queue sizes against the largest packet, now that the flows are known,
    // reported at the key that set the queue.
    let max_pkt = max_packet(&flows);
    for (l, (link_path, origins)) in links.iter().zip(&queue_origins) {
        for ((d, spec), origin) in [("ab", &l.ab), ("ba", &l.ba)].into_iter().zip(origins) {
            let (Some(origin), Some((sub, m))) = (origin, queue_problem(&spec.queue, max_pkt))
            else {
                continue;
            };
            let m = if origin.starts_with("defaults.") {
                format!("{m} (the queue of {link_path} direction {d}, which sets none of its own)")
            } else {
                m
            };
            return Err(e(format!("{origin}{sub}"), m));
        }
    }

    let mut measure = MeasureSpec::default();
    if let Some(cfg::TableOf(m)) = raw.measure {
        cfg::apply!(measure, m, |d| d.value; goodput_interval, trace_interval, warmup);
        cfg::apply!(measure, m, |c| c.0.clone(); capture);
        cfg::apply!(measure, m, |n| n.0 as u32; capture_snaplen);
        for (i, entry) in measure.capture.iter().enumerate() {
            if let Some(m) = cfg::blank(entry) {
                return Err(e(format!("measure.capture[{i}]"), m));
            }
        }
    }

    Ok(Scenario {
        name,
        duration,
        seed: raw.seed.map_or(1, |s| s.0),
        nodes,
        links,
        flows,
        measure,
        start_jitter: raw.start_jitter.map_or(Dur::ZERO, |d| d.value),
        overlay,
    })
}

/// The overlay sections [`Scenario::overlay`] keeps, in the file's words.
pub const OVERLAY_SECTIONS: [&str; 5] = ["tor", "relay", "circuit", "swarm", "otcp"];

fn overlay_sections(raw: &RawScenario) -> toml::Table {
    let all = [&raw.tor, &raw.relay, &raw.circuit, &raw.swarm, &raw.otcp];
    OVERLAY_SECTIONS
        .iter()
        .zip(all)
        .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
        .collect()
}

fn node_spec(i: usize, n: RawNode) -> R<NodeSpec> {
    let name = req(
        n.name,
        &format!("node[{i}]"),
        "name",
        "every node needs a name",
    )?
    .0;
    let kinds = [
        ("host", NodeKind::Host),
        ("switch", NodeKind::Switch),
        ("router", NodeKind::Switch),
    ];
    let kind = match n.kind {
        None => NodeKind::Host,
        Some(k) => cfg::choice(&k, "node kind", &kinds)
            .map_err(|m| e(format!("{}.kind", indexed("node", i, &name)), m))?,
    };
    Ok(NodeSpec { name, kind })
}

/// A link, and its key path with the key paths its directions' queues came from.
#[allow(clippy::type_complexity)]
fn link_spec(
    i: usize,
    l: &RawLink,
    defaults: &DirFields,
    base: &Path,
) -> R<(LinkSpec, (String, [Option<String>; 2]))> {
    let p0 = match &l.name {
        Some(n) => indexed("link", i, &n.0),
        None => format!("link[{i}]"),
    };
    let a = req(l.a.clone(), &p0, "a", "the node at one end")?.0;
    let b = req(l.b.clone(), &p0, "b", "the node at the other end")?.0;
    let name = l
        .name
        .as_ref()
        .map_or_else(|| format!("{a}-{b}"), |n| n.0.clone());
    let p = indexed("link", i, &name);
    let own = dir_fields(&l.both(), &p, base)?;
    let mut dirs = [DirFields::default(), DirFields::default()];
    for (slot, (d, raw)) in dirs.iter_mut().zip([("ab", &l.ab), ("ba", &l.ba)]) {
        if let Some(raw) = raw {
            *slot = dir_fields(raw, &at(&p, d), base)?;
        }
    }
    let (ab, ab_queue) = resolve_dir([&dirs[0], &own, defaults], &at(&p, "ab"), ("ab", &a, &b))?;
    let (ba, ba_queue) = resolve_dir([&dirs[1], &own, defaults], &at(&p, "ba"), ("ba", &b, &a))?;
    Ok((LinkSpec { name, a, b, ab, ba }, (p, [ab_queue, ba_queue])))
}

/// A `[[flow]]`: one flow, or its `count` replicas.
fn flow_specs(i: usize, f: RawFlow, duration: Dur, tcp_default: &TcpConfig) -> R<Vec<FlowSpec>> {
    let (name, p) = match f.name {
        Some(n) => (n.0.clone(), named("flow", &n.0)),
        None => (format!("flow{i}"), format!("flow[{i}]")),
    };
    let from = req(f.from, &p, "from", "the host that opens the connection")?.0;
    let to = req(f.to, &p, "to", "the host that accepts it")?.0;
    let why = format!(
        "the congestion control, e.g. cc = \"cubic\"; known: {}",
        CcConfig::NAMES.join(", ")
    );
    let cc = cc_value(&req(f.cc, &p, "cc", &why)?, &at(&p, "cc"))?;
    let start = f.start.map_or(Dur::ZERO, |d| d.value);
    let stop = f.stop.map(|d| d.value);
    let traffic = match f.size {
        None => Traffic::Bulk,
        Some(cfg::Size(0)) => {
            return Err(e(
                at(&p, "size"),
                "must be positive (leave `size` out for a bulk, backlogged flow)",
            ))
        }
        Some(cfg::Size(n)) => Traffic::Fixed(n),
    };
    let mut tcp = tcp_default.clone();
    if let Some(t) = &f.tcp {
        apply_tcp(&mut tcp, t, &at(&p, "tcp"))?;
    }
    tcp_check(&tcp, &at(&p, "tcp"))?;
    if tcp.hystart && !cc.supports_hystart() {
        return Err(e(
            at(&at(&p, "tcp"), "hystart"),
            format!(
                "HyStart++ is an option of newreno and cubic; `{}` has its own start-up",
                cc.name()
            ),
        ));
    }
    if tcp.rack && !tcp.sack {
        return Err(e(
            at(&at(&p, "tcp"), "rack"),
            "RACK-TLP detects losses from SACK blocks: it needs `sack = true`",
        ));
    }
    let count = f.count.map(|n| n.0);
    if f.start_step.is_some() && count.is_none() {
        return Err(e(
            at(&p, "start_step"),
            "only applies with `count` (replica i starts at start + i × start_step)",
        ));
    }
    if start >= duration {
        return Err(e(
            at(&p, "start"),
            format!(
                "the flow starts at {start}, at or after the end of the simulation (duration = {duration})"
            ),
        ));
    }
    if let Some(stop) = stop.filter(|&stop| stop <= start) {
        return Err(e(
            at(&p, "stop"),
            format!("must be after start: stop = {stop}, start = {start}"),
        ));
    }
    let proto = FlowSpec {
        name: name.clone(),
        from,
        to,
        cc,
        tcp,
        start,
        stop,
        traffic,
        bidir: f.bidir.is_some_and(|b| b.0),
        group: None,
    };
    let Some(n) = count else {
        return Ok(vec![proto]);
    };
    let step = f.start_step.map_or(Dur::ZERO, |d| d.value);
    let last = start + step * (n - 1);
    let late = format!(
        "replica {} would start at {last} (start + {} × start_step)",
        n - 1,
        n - 1
    );
    if last >= duration {
        return Err(e(
            at(&p, "start_step"),
            format!("{late}, at or after the end of the simulation (duration = {duration})"),
        ));
    }
    if let Some(stop) = stop.filter(|&stop| last >= stop) {
        return Err(e(
            at(&p, "stop"),
            format!("{late}, not before stop = {stop}"),
        ));
    }
    Ok((0..n)
        .map(|r| {
            let mut f = proto.clone();
            f.name = format!("{name}-{r}");
            f.group = Some(name.clone());
            f.start = start + step * r;
            f
        })
        .collect())
}
