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
//! document, read it into a [`Scenario`] and run [`validate`]. The document is
//! walked by hand rather than through serde derive so that every error can
//! name the file, the key path (`link[2] "bottleneck".ba.rate`,
//! `flow "f3".cc.target`) and the accepted alternatives.
//!
//! Parsing never panics, whatever the input (a property test feeds it random
//! bytes and mutated scenarios).

use crate::spec::{
    AckClassifier, DirSpec, FlowSpec, Limit, LinkSpec, MeasureSpec, NodeKind, NodeSpec, QueueSpec,
    Scenario, Traffic,
};
use hopwise_proto::cc::{CcConfig, ParamValue};
use hopwise_proto::tcp::{RttEstimatorKind, TcpConfig};
use hopwise_proto::time::Dur;
use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate, Rate};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use toml::{Table, Value};

/// What went wrong, and where. Displayed as `<file>: <key>: <message>`
/// (or `<file>: <message>` when no key applies, e.g. TOML syntax errors,
/// whose message starts with the line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario file (or the `origin` given to [`parse`] / [`validate`]).
    pub file: String,
    /// Key path such as `link[2] "bottleneck".ba.rate`, `flow "f3".cc.target`,
    /// `measure.warmup`, or `--set <override>` for a bad override. May be empty.
    pub key: String,
    pub message: String,
}

impl ScenarioError {
    fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_string(),
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// Reads, overrides, parses and validates a scenario file.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::new(&file, "", format!("cannot read the scenario file: {e}"))
    })?;
    parse(&text, &file, overrides)
}

/// Parses scenario text. `origin` names it in errors (normally the file path;
/// its stem is the default scenario name). `overrides` are `key=value`
/// strings applied to the TOML document before it is read (see the module
/// documentation of the format).
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let mut doc: Table = text
        .parse::<Table>()
        .map_err(|e| syntax_error(text, origin, &e))?;
    // A seed from an override may use the whole u64 range, which a TOML
    // integer (i64) cannot hold: it is kept aside and set after the build.
    let mut big_seed = None;
    for o in overrides {
        let set_err = |m| ScenarioError::new(origin, format!("--set {}", shorten(o)), m);
        match seed_override(o).map_err(set_err)? {
            Some(v) if v > i64::MAX as u64 => {
                doc.remove("seed");
                big_seed = Some(v);
            }
            _ => {
                apply_override(&mut doc, o).map_err(set_err)?;
                // Any later seed (digits, hex, `+7`, ...) wins over a
                // big one given before it.
                if is_seed_key(o) {
                    big_seed = None;
                }
            }
        }
    }
    let mut s = build(&doc, origin).map_err(|e| ScenarioError::new(origin, e.key, e.msg))?;
    if let Some(v) = big_seed {
        s.seed = v;
    }
    validate(&s, origin)?;
    Ok(s)
}

/// The value of a `seed=N` override whose `N` is a whole number written in
/// digits (`_` allowed between them, as in TOML); `None` for any other
/// override; an error for a number above `u64::MAX`.
/// Whether the override `o` (KEY=VALUE) sets the top-level `seed`.
fn is_seed_key(o: &str) -> bool {
    o.split_once('=').is_some_and(
        |(path, _)| matches!(parse_path(path).as_deref(), Ok([Seg::Key(k)]) if k == "seed"),
    )
}

fn seed_override(o: &str) -> Result<Option<u64>, String> {
    let Some((_, raw)) = o.split_once('=') else {
        return Ok(None);
    };
    if !is_seed_key(o) {
        return Ok(None);
    }
    let raw = raw.trim();
    let whole = raw.starts_with(|c: char| c.is_ascii_digit())
        && raw.ends_with(|c: char| c.is_ascii_digit())
        && raw.chars().all(|c| c.is_ascii_digit() || c == '_')
        && !raw.contains("__");
    if !whole {
        return Ok(None);
    }
    let digits: String = raw.chars().filter(|&c| c != '_').collect();
    digits.parse::<u64>().map(Some).map_err(|_| {
        format!(
            "seed: must be at most {} (a seed is a 64-bit unsigned number), got {raw}",
            u64::MAX
        )
    })
}

// ---------------------------------------------------------------------------
// Key sets
// ---------------------------------------------------------------------------

const TOP_KEYS: &[&str] = &[
    "name",
    "duration",
    "seed",
    "start_jitter",
    "defaults",
    "node",
    "link",
    "flow",
    "measure",
];
const DEFAULTS_KEYS: &[&str] = &["tcp", "link"];
const NODE_KEYS: &[&str] = &["name", "kind"];
const LINK_KEYS: &[&str] = &[
    "name", "a", "b", "rate", "delay", "queue", "loss", "ab", "ba",
];
const DIR_KEYS: &[&str] = &["rate", "delay", "queue", "loss"];
const FLOW_KEYS: &[&str] = &[
    "name",
    "from",
    "to",
    "cc",
    "start",
    "stop",
    "size",
    "bidir",
    "tcp",
    "count",
    "start_step",
];
const MEASURE_KEYS: &[&str] = &[
    "goodput_interval",
    "trace_interval",
    "warmup",
    "capture",
    "capture_snaplen",
];
const TCP_KEYS: &[&str] = &[
    "mss",
    "sack",
    "timestamps",
    "ts_tick",
    "window_scaling",
    "delayed_ack",
    "delack_timeout",
    "nagle",
    "min_rto",
    "max_rto",
    "rtt_estimator",
    "send_buffer",
    "recv_buffer",
    "initial_window",
    "dupthresh",
    "prr",
    "syn_retries",
    "time_wait",
];
const QUEUE_TYPES: &[&str] = &["droptail", "ackfirst", "tbf"];
const DROPTAIL_KEYS: &[&str] = &["type", "limit"];
const ACKFIRST_KEYS: &[&str] = &[
    "type",
    "classifier",
    "data_share",
    "throttle",
    "ack_limit",
    "data_limit",
];
const TBF_KEYS: &[&str] = &["type", "rate", "burst", "limit"];
const CLASSIFIERS: &[&str] = &["no-payload", "len64"];
const NODE_KINDS: &[&str] = &["host", "switch", "router"];
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
/// Most replicas one `[[flow]]` may ask for with `count`.
const MAX_COUNT: u64 = 100_000;
/// IPv4 + TCP headers without options: a full-sized packet is `mss + 40` bytes
/// (with timestamps the payload shrinks by the option's 12 bytes).
const HEADERS: u64 = 40;

// ---------------------------------------------------------------------------
// Internal error and small helpers
// ---------------------------------------------------------------------------

/// An error before the file name is attached.
struct E {
    key: String,
    msg: String,
}

type R<T> = Result<T, E>;

fn e(key: impl Into<String>, msg: impl Into<String>) -> E {
    E {
        key: key.into(),
        msg: msg.into(),
    }
}

/// `path.key`, or `key` at the top level.
fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Cuts a string for display, on a character boundary.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// "the integer 30", "the string \"x\"", "a table", … for "expected …, got …".
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {:?}", clip(s, 40)),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(x) => format!("the float {x}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(d) => format!("the date-time {d}"),
        Value::Array(_) => "an array".to_string(),
        Value::Table(_) => "a table".to_string(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// Levenshtein distance over characters, case-insensitive.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest candidate within edit distance 2 (and less than the word's
/// own length, so that "x" does not suggest "a"), if it is the only one.
fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = word.chars().count();
    if len > 64 {
        return None;
    }
    let close: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= 2 && d < len.max(1))
        .collect();
    let best = close.iter().map(|&(d, _)| d).min()?;
    let mut at_best = close.iter().filter(|&&(d, _)| d == best).map(|&(_, c)| c);
    let first = at_best.next()?;
    // A tie (h5 vs h1, h2, …) suggests nothing rather than an arbitrary name.
    if at_best.any(|c| c != first) {
        return None;
    }
    Some(first)
}

fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match suggest(word, candidates) {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
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

fn quoted_list(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    let r: Vec<&str> = q.iter().map(|s| s.as_str()).collect();
    list(&r)
}

// ---------------------------------------------------------------------------
// TOML syntax errors
// ---------------------------------------------------------------------------

/// 1-based line and column (in characters) of byte offset `pos`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let (mut line, mut col) = (1, 1);
    for (i, ch) in text.char_indices() {
        if i >= pos {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

fn syntax_error(text: &str, origin: &str, err: &toml::de::Error) -> ScenarioError {
    let msg = err.message().trim().replace('\n', " ");
    let Some(span) = err.span() else {
        return ScenarioError::new(origin, "", format!("TOML syntax error: {msg}"));
    };
    let (line, col) = line_col(text, span.start);
    let src = text.lines().nth(line - 1).unwrap_or("");
    let mut out = format!("line {line}, column {col}: TOML syntax error: {msg}");
    // The commonest mistake: a quantity with a unit written without quotes.
    if let Some((k, v)) = src.split_once('=') {
        let v = v.split('#').next().unwrap_or("").trim();
        let starts_numeric = v.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
        if starts_numeric && v.chars().any(|c| c.is_alphabetic()) && !v.contains('"') {
            out.push_str(&format!(
                " (quantities with units are strings: write {} = \"{}\")",
                k.trim(),
                clip(v, 30)
            ));
        }
    }
    if msg.contains("number too large")
        && src.split_once('=').is_some_and(|(k, _)| k.trim() == "seed")
    {
        out.push_str(&format!(
            " (a scenario file holds whole numbers up to {}, the limit of a TOML integer; \
             for a larger seed, up to {}, use `hopwise sim --seed N` or `--set seed=N`)",
            i64::MAX,
            u64::MAX
        ));
    }
    if let Some(hint) = single_bracket_hint(text, &msg) {
        out.push_str(&hint);
    }
    out.push_str(&format!("\n  {line:>4} | {}", clip(src, 100)));
    ScenarioError::new(origin, "", out)
}

/// `[node]` next to `[[node]]` (or twice) is a duplicate key to TOML; the
/// fix is the same as for a lone `[node]`, which [`tables`] explains. The
/// hint names the line of the first single-bracket header.
fn single_bracket_hint(text: &str, msg: &str) -> Option<String> {
    let rest = msg.split_once("duplicate key `")?.1;
    let key = rest.split_once('`')?.0;
    if !["node", "link", "flow"].contains(&key) {
        return None;
    }
    let n = text.lines().position(|l| {
        let h = l.split('#').next().unwrap_or("").trim();
        !h.starts_with("[[")
            && h.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .is_some_and(|inner| inner.trim() == key)
    })?;
    Some(format!(
        " ([{key}] on line {} makes a single table: write [[{key}]] (double brackets) for \
         each entry, not [{key}])",
        n + 1
    ))
}

// ---------------------------------------------------------------------------
// Typed readers
// ---------------------------------------------------------------------------

fn as_str<'a>(v: &'a Value, p: &str) -> R<&'a str> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(e(p, format!("expected a string, got {}", describe(other)))),
    }
}

fn as_name<'a>(v: &'a Value, p: &str) -> R<&'a str> {
    let s = as_str(v, p)?;
    if s.trim().is_empty() {
        return Err(e(p, "must not be empty"));
    }
    Ok(s)
}

fn as_bool(v: &Value, p: &str) -> R<bool> {
    match v {
        Value::Boolean(b) => Ok(*b),
        Value::String(s) if s == "true" || s == "false" => Err(e(
            p,
            format!("expected a boolean, got the string \"{s}\" (write {s} without quotes)"),
        )),
        other => Err(e(
            p,
            format!("expected true or false, got {}", describe(other)),
        )),
    }
}

/// An array of strings.
fn as_str_list(v: &Value, p: &str) -> R<Vec<String>> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, it)| as_name(it, &format!("{p}[{i}]")).map(str::to_string))
            .collect(),
        other => Err(e(
            p,
            format!("expected an array of strings, got {}", describe(other)),
        )),
    }
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

/// A whole number in `[lo, hi]`.
fn as_int(v: &Value, p: &str, lo: u64, hi: u64) -> R<u64> {
    let n = match v {
        Value::Integer(n) => *n,
        other => {
            return Err(e(
                p,
                format!("expected a whole number, got {}", describe(other)),
            ))
        }
    };
    if n < 0 {
        return Err(e(p, format!("must not be negative, got {n}")));
    }
    let n = n as u64;
    if n < lo {
        return Err(e(p, format!("must be at least {lo}, got {n}")));
    }
    if n > hi {
        return Err(e(p, format!("must be at most {hi}, got {n}")));
    }
    Ok(n)
}

/// A finite number (integer or float).
fn as_num(v: &Value, p: &str) -> R<f64> {
    match v {
        Value::Integer(n) => Ok(*n as f64),
        Value::Float(x) if x.is_finite() => Ok(*x),
        Value::Float(x) => Err(e(p, format!("expected a finite number, got {x}"))),
        other => Err(e(p, format!("expected a number, got {}", describe(other)))),
    }
}

fn as_dur(v: &Value, p: &str) -> R<Dur> {
    match v {
        Value::String(s) => parse_duration(s).map_err(|x| e(p, format!("invalid duration: {x}"))),
        Value::Integer(_) | Value::Float(_) => Err(e(
            p,
            format!(
                "a duration needs a unit: write \"{v}s\" or \"{v}ms\" (a quoted string), \
                 not the bare number {v}"
            ),
        )),
        other => Err(e(
            p,
            format!(
                "expected a duration such as \"100ms\" (units ns, us, ms, s, min, h), got {}",
                describe(other)
            ),
        )),
    }
}

fn rate_problem(r: Rate) -> Option<String> {
    (r.bps() == 0).then(|| "must be positive: a zero rate never sends".to_string())
}

fn as_rate(v: &Value, p: &str) -> R<Rate> {
    let r = match v {
        Value::String(s) => parse_rate(s).map_err(|x| e(p, format!("invalid rate: {x}")))?,
        Value::Integer(_) | Value::Float(_) => {
            return Err(e(
                p,
                format!(
                    "a rate needs a unit: write \"{v}Mbit\", \"{v}kbit\" or \"{v}MB/s\" \
                     (a quoted string), not the bare number {v}"
                ),
            ))
        }
        other => {
            return Err(e(
                p,
                format!(
                    "expected a rate such as \"10Mbit\" or \"1.5MB/s\", got {}",
                    describe(other)
                ),
            ))
        }
    };
    match rate_problem(r) {
        Some(m) => Err(e(p, m)),
        None => Ok(r),
    }
}

/// A byte count: a string with a unit ("10MB", "64KiB", "30000B"), or an integer.
fn as_bytes(v: &Value, p: &str) -> R<u64> {
    match v {
        Value::String(s) => parse_bytes(s)
            .map(|b| b.get())
            .map_err(|x| e(p, format!("invalid size: {x}"))),
        Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        Value::Integer(n) => Err(e(p, format!("must not be negative, got {n}"))),
        Value::Float(x) if x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x < 1.8e19 => {
            Ok(*x as u64)
        }
        other => Err(e(
            p,
            format!(
                "expected a size such as \"64kB\", \"10MB\" or a whole number of bytes, got {}",
                describe(other)
            ),
        )),
    }
}

fn parse_limit(s: &str) -> Result<Limit, String> {
    let t = s.trim();
    for suffix in ["packets", "packet", "pkts", "pkt"] {
        if let Some(num) = t.strip_suffix(suffix) {
            let digits: String = num.trim().chars().filter(|&c| c != '_').collect();
            if let Ok(n) = digits.parse::<u64>() {
                return Ok(Limit::Packets(n));
            }
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(format!("`{s}`: the packet count is too large"));
            }
            // Exponents as elsewhere (`1e3pkt`), if the count is whole.
            return match digits.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 => {
                    if v >= u64::MAX as f64 {
                        Err(format!("`{s}`: the packet count is too large"))
                    } else {
                        Ok(Limit::Packets(v as u64))
                    }
                }
                Ok(v) if v < 0.0 => Err(format!("`{s}`: the packet count is negative")),
                _ => Err(format!(
                    "`{s}`: the packet count must be a whole number, as in \"100pkt\""
                )),
            };
        }
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return Err(format!(
            "`{s}` is ambiguous: write \"{t}pkt\" for packets or \"{t}B\" for bytes"
        ));
    }
    match parse_bytes(t) {
        Ok(b) => Ok(Limit::Bytes(b.get())),
        Err(x) => Err(format!(
            "`{s}` is neither a packet count (\"100pkt\") nor a byte size (\"30000B\", \"64kB\"): {x}"
        )),
    }
}

fn limit_problem(l: Limit) -> Option<String> {
    match l {
        Limit::Packets(0) | Limit::Bytes(0) => {
            Some("a queue limit of 0 would drop every packet".to_string())
        }
        _ => None,
    }
}

fn as_limit(v: &Value, p: &str) -> R<Limit> {
    let l = match v {
        Value::String(s) => parse_limit(s).map_err(|m| e(p, m))?,
        Value::Integer(n) => {
            return Err(e(
                p,
                format!(
                    "a queue limit needs a unit: write \"{n}pkt\" for packets or \"{n}B\" for bytes"
                ),
            ))
        }
        other => {
            return Err(e(
                p,
                format!(
                    "expected a queue limit such as \"100pkt\" or \"30000B\", got {}",
                    describe(other)
                ),
            ))
        }
    };
    match limit_problem(l) {
        Some(m) => Err(e(p, m)),
        None => Ok(l),
    }
}

fn loss_problem(x: f64) -> Option<String> {
    (!(0.0..1.0).contains(&x))
        .then(|| format!("must be a probability in [0, 1) (0.01 means 1 % of packets), got {x}"))
}

/// A loss probability: a number, or a percentage string such as "1%".
fn as_loss(v: &Value, p: &str) -> R<f64> {
    let x = match v {
        Value::String(s) => {
            let pct = s.trim().strip_suffix('%').ok_or_else(|| {
                e(
                    p,
                    format!("expected a probability such as 0.01 or a percentage such as \"1%\", got the string {s:?}"),
                )
            })?;
            let x: f64 = pct
                .trim()
                .parse()
                .map_err(|_| e(p, format!("`{s}` is not a percentage such as \"1%\"")))?;
            x / 100.0
        }
        other => as_num(other, p)?,
    };
    match loss_problem(x) {
        Some(m) => Err(e(p, m)),
        None => Ok(x),
    }
}

fn share_problem(x: f64) -> Option<String> {
    (!(x > 0.0 && x <= 1.0))
        .then(|| format!("must be in (0, 1] (a fraction of the link rate), got {x}"))
}

fn as_share(v: &Value, p: &str) -> R<f64> {
    let x = as_num(v, p)?;
    match share_problem(x) {
        Some(m) => Err(e(p, m)),
        None => Ok(x),
    }
}

/// A TOML table with its key path, for reading fields.
struct Obj<'a> {
    t: &'a Table,
    path: String,
}

impl<'a> Obj<'a> {
    fn of(v: &'a Value, path: String, expected: &str) -> R<Self> {
        match v {
            Value::Table(t) => Ok(Obj { t, path }),
            other => Err(e(
                path,
                format!("expected {expected}, got {}", describe(other)),
            )),
        }
    }

    fn key(&self, k: &str) -> String {
        at(&self.path, k)
    }

    fn get(&self, k: &str) -> Option<&'a Value> {
        self.t.get(k)
    }

    fn req(&self, k: &str, hint: &str) -> R<&'a Value> {
        self.t
            .get(k)
            .ok_or_else(|| e(self.key(k), format!("missing required key{hint}")))
    }

    fn opt<T>(&self, k: &str, f: impl FnOnce(&'a Value, &str) -> R<T>) -> R<Option<T>> {
        match self.t.get(k) {
            Some(v) => f(v, &self.key(k)).map(Some),
            None => Ok(None),
        }
    }

    /// Rejects keys outside `allowed`, suggesting near misses.
    fn check_keys(&self, allowed: &[&str], what: &str) -> R<()> {
        for k in self.t.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(e(self.key(k), unknown_key(k, allowed, what)));
            }
        }
        Ok(())
    }
}

fn unknown_key(k: &str, allowed: &[&str], what: &str) -> String {
    let mut m = format!("unknown key {what}");
    m.push_str(&did_you_mean(k, allowed.iter().copied()));
    m.push_str(&format!(" (allowed here: {})", allowed.join(", ")));
    if !allowed.contains(&"sack") && TCP_KEYS.contains(&k) {
        m.push_str("; TCP options go in [defaults.tcp] or in a flow's `tcp = { … }` table");
    } else if !allowed.contains(&"rate") && DIR_KEYS.contains(&k) {
        m.push_str(
            "; link properties go in a [[link]], its [link.ab]/[link.ba], or [defaults.link]",
        );
    }
    m
}

/// The entries of an array of tables (`[[node]]`, …).
fn tables<'a>(v: &'a Value, key: &str) -> R<Vec<&'a Table>> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, it)| match it {
                Value::Table(t) => Ok(t),
                other => Err(e(
                    format!("{key}[{i}]"),
                    format!("expected a table (a [[{key}]] section), got {}", describe(other)),
                )),
            })
            .collect(),
        Value::Table(_) => Err(e(
            key,
            format!("expected an array of tables: write [[{key}]] (double brackets) for each entry, not [{key}]"),
        )),
        other => Err(e(
            key,
            format!("expected an array of [[{key}]] tables, got {}", describe(other)),
        )),
    }
}

// ---------------------------------------------------------------------------
// Queues, links
// ---------------------------------------------------------------------------

fn as_queue(v: &Value, p: &str) -> R<QueueSpec> {
    let q = match v {
        Value::String(_) | Value::Integer(_) => QueueSpec::DropTail {
            limit: as_limit(v, p)?,
        },
        Value::Table(_) => {
            let o = Obj::of(v, p.to_string(), "a table")?;
            let ty = as_str(
                o.req(
                    "type",
                    &format!(" (the discipline: one of {})", quoted_list(QUEUE_TYPES)),
                )?,
                &o.key("type"),
            )?;
            match ty {
                "droptail" => {
                    o.check_keys(DROPTAIL_KEYS, "in a droptail queue")?;
                    QueueSpec::DropTail {
                        limit: o.opt("limit", as_limit)?.unwrap_or_default(),
                    }
                }
                "ackfirst" => {
                    o.check_keys(ACKFIRST_KEYS, "in an ackfirst queue")?;
                    let classifier = match o.opt("classifier", as_str)? {
                        None | Some("no-payload") => AckClassifier::NoPayload,
                        Some("len64") => AckClassifier::Len64,
                        Some(other) => {
                            return Err(e(
                                o.key("classifier"),
                                format!(
                                    "unknown classifier {other:?}{} (known: {})",
                                    did_you_mean(other, CLASSIFIERS.iter().copied()),
                                    quoted_list(CLASSIFIERS)
                                ),
                            ))
                        }
                    };
                    QueueSpec::AckFirst {
                        classifier,
                        data_share: o.opt("data_share", as_share)?.unwrap_or(0.9),
                        throttle: o.opt("throttle", as_share)?.unwrap_or(0.95),
                        ack_limit: o.opt("ack_limit", as_limit)?.unwrap_or_default(),
                        data_limit: o.opt("data_limit", as_limit)?.unwrap_or_default(),
                    }
                }
                "tbf" => {
                    o.check_keys(TBF_KEYS, "in a tbf queue")?;
                    let rate = as_rate(
                        o.req("rate", " (the token rate, e.g. \"1Mbit\")")?,
                        &o.key("rate"),
                    )?;
                    let burst = as_bytes(
                        o.req("burst", " (the bucket size, e.g. \"3000B\")")?,
                        &o.key("burst"),
                    )?;
                    if burst == 0 {
                        return Err(e(o.key("burst"), "must be positive"));
                    }
                    QueueSpec::TokenBucket {
                        rate,
                        burst,
                        limit: o.opt("limit", as_limit)?.unwrap_or_default(),
                    }
                }
                other => {
                    return Err(e(
                        o.key("type"),
                        format!(
                            "unknown queue type {other:?}{} (known: {})",
                            did_you_mean(other, QUEUE_TYPES.iter().copied()),
                            quoted_list(QUEUE_TYPES)
                        ),
                    ))
                }
            }
        }
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
    Ok(q)
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
}

fn dir_fields(o: &Obj<'_>) -> R<DirFields> {
    Ok(DirFields {
        rate: o.opt("rate", as_rate)?,
        delay: o.opt("delay", as_dur)?,
        queue: o.opt("queue", as_queue)?.map(|q| (q, o.key("queue"))),
        loss: o.opt("loss", as_loss)?,
    })
}

/// A direction's properties, each from the first of `dir`, `link`,
/// `defaults` that sets it, and the key path its queue came from (`None`
/// for the built-in default).
fn resolve_dir(
    dir: &DirFields,
    link: &DirFields,
    defaults: &DirFields,
    path: &str,
    (d, from, to): (&str, &str, &str),
) -> R<(DirSpec, Option<String>)> {
    let missing = |k: &str, example: &str| {
        e(
            at(path, k),
            format!(
                "missing: no {k} for direction {d} ({from} -> {to}); set `{k} = {example}` in the \
                 [[link]], in its [link.{d}] table, or in [defaults.link]"
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
    let spec = DirSpec {
        rate: dir
            .rate
            .or(link.rate)
            .or(defaults.rate)
            .ok_or_else(|| missing("rate", "\"10Mbit\""))?,
        delay: dir
            .delay
            .or(link.delay)
            .or(defaults.delay)
            .ok_or_else(|| missing("delay", "\"10ms\""))?,
        queue,
        loss: dir.loss.or(link.loss).or(defaults.loss).unwrap_or(0.0),
    };
    Ok((spec, queue_at))
}

// ---------------------------------------------------------------------------
// TCP and congestion control
// ---------------------------------------------------------------------------

fn apply_tcp(c: &mut TcpConfig, o: &Obj<'_>) -> R<()> {
    o.check_keys(TCP_KEYS, "in TCP options")?;
    for (k, v) in o.t {
        let p = o.key(k);
        match k.as_str() {
            "mss" => {
                // One range check, with the reason for the limits, whatever
                // the size of the number.
                let n = as_int(v, &p, 0, u64::MAX)?;
                if let Some(m) = mss_problem(n) {
                    return Err(e(&p, m));
                }
                c.mss = n as u16;
            }
            "sack" => c.sack = as_bool(v, &p)?,
            "timestamps" => c.timestamps = as_bool(v, &p)?,
            "ts_tick" => c.ts_tick = as_dur(v, &p)?,
            "window_scaling" => c.window_scaling = as_bool(v, &p)?,
            "delayed_ack" => c.delayed_ack = as_bool(v, &p)?,
            "delack_timeout" => c.delack_timeout = as_dur(v, &p)?,
            "nagle" => c.nagle = as_bool(v, &p)?,
            "min_rto" => c.min_rto = as_dur(v, &p)?,
            "max_rto" => c.max_rto = as_dur(v, &p)?,
            "rtt_estimator" => {
                c.rtt_estimator = match as_str(v, &p)? {
                    "rfc6298" => RttEstimatorKind::Rfc6298,
                    "linux" => RttEstimatorKind::Linux,
                    other => {
                        return Err(e(
                            &p,
                            format!("unknown RTT estimator {other:?} (known: rfc6298, linux)"),
                        ))
                    }
                }
            }
            "send_buffer" => c.send_buffer = as_bytes(v, &p)?,
            "recv_buffer" => c.recv_buffer = as_bytes(v, &p)?,
            "initial_window" => c.initial_window = as_int(v, &p, 0, 1_000_000)?,
            "dupthresh" => c.dupthresh = as_int(v, &p, 0, 1_000_000)?,
            "prr" => c.prr = as_bool(v, &p)?,
            "syn_retries" => c.syn_retries = as_int(v, &p, 0, 127)? as u32,
            "time_wait" => c.time_wait = as_dur(v, &p)?,
            _ => {}
        }
    }
    Ok(())
}

/// The largest MSS an IPv4 packet can carry: 65535 − 20 (IPv4) − 20 (TCP).
const MAX_MSS: u16 = 65_495;

/// An MSS outside 64–[`MAX_MSS`].
fn mss_problem(mss: u64) -> Option<String> {
    if mss < 64 {
        return Some(format!("must be at least 64 bytes, got {mss}"));
    }
    if mss > u64::from(MAX_MSS) {
        return Some(format!(
            "must be at most {MAX_MSS} bytes (an IPv4 packet holds 65535 bytes, headers included), got {mss}"
        ));
    }
    None
}

/// TCP configuration sanity: the offending field and what is wrong.
fn tcp_problem(c: &TcpConfig) -> Option<(&'static str, String)> {
    let mss = u64::from(c.mss);
    if let Some(m) = mss_problem(mss) {
        return Some(("mss", m));
    }
    if c.send_buffer < mss {
        return Some((
            "send_buffer",
            format!(
                "{} B is smaller than one segment (mss = {mss} B)",
                c.send_buffer
            ),
        ));
    }
    if c.recv_buffer < mss {
        return Some((
            "recv_buffer",
            format!(
                "{} B is smaller than one segment (mss = {mss} B)",
                c.recv_buffer
            ),
        ));
    }
    if c.initial_window == 0 {
        return Some(("initial_window", "must be at least 1 segment".to_string()));
    }
    if c.dupthresh == 0 {
        return Some(("dupthresh", "must be at least 1".to_string()));
    }
    if c.min_rto.is_zero() {
        return Some(("min_rto", "must be positive".to_string()));
    }
    if c.max_rto < c.min_rto {
        return Some((
            "max_rto",
            format!(
                "{} is below min_rto = {} (a min_rto raised above the default max_rto needs max_rto set too)",
                c.max_rto, c.min_rto
            ),
        ));
    }
    if c.timestamps && c.ts_tick.is_zero() {
        return Some((
            "ts_tick",
            "must be positive when timestamps are on".to_string(),
        ));
    }
    if c.delayed_ack && c.delack_timeout.is_zero() {
        return Some((
            "delack_timeout",
            "must be positive when delayed_ack is on (set delayed_ack = false to acknowledge every segment)"
                .to_string(),
        ));
    }
    None
}

fn tcp_check(c: &TcpConfig, path: &str) -> R<()> {
    match tcp_problem(c) {
        Some((k, m)) => Err(e(at(path, k), m)),
        None => Ok(()),
    }
}

fn cc_by_name(name: &str, p: &str) -> R<CcConfig> {
    let trimmed = name.trim();
    CcConfig::from_name(trimmed)
        .or_else(|_| CcConfig::from_name(&trimmed.to_lowercase()))
        .map_err(|_| {
            let candidates = CcConfig::NAMES.iter().chain(CC_ALIASES).copied();
            e(
                p,
                format!(
                    "unknown congestion control {name:?}{} (known: {})",
                    did_you_mean(trimmed, candidates),
                    CcConfig::NAMES.join(", ")
                ),
            )
        })
}

fn param_value<'a>(v: &'a Value, p: &str) -> R<ParamValue<'a>> {
    match v {
        Value::Integer(n) => Ok(ParamValue::Num(*n as f64)),
        Value::Float(x) => Ok(ParamValue::Num(*x)),
        Value::Boolean(b) => Ok(ParamValue::Bool(*b)),
        Value::String(s) => Ok(ParamValue::Str(s)),
        other => Err(e(
            p,
            format!(
                "expected a number, a boolean or a string such as \"100ms\", got {}",
                describe(other)
            ),
        )),
    }
}

fn as_cc(v: &Value, p: &str) -> R<CcConfig> {
    match v {
        Value::String(s) => cc_by_name(s, p),
        Value::Table(_) => {
            let o = Obj::of(v, p.to_string(), "a table")?;
            let algo = as_str(
                o.req(
                    "algo",
                    &format!(" (the algorithm: one of {})", CcConfig::NAMES.join(", ")),
                )?,
                &o.key("algo"),
            )?;
            let mut cfg = cc_by_name(algo, &o.key("algo"))?;
            // `variant` first: it selects the constants the other parameters adjust.
            let mut keys: Vec<&String> = o.t.keys().filter(|k| *k != "algo").collect();
            keys.sort_by_key(|k| *k != "variant");
            for k in keys {
                let Some(pv_raw) = o.get(k) else { continue };
                let kp = o.key(k);
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
                                did_you_mean(k, known.iter().copied()),
                                known.join(", ")
                            )
                        },
                    ));
                }
                let pv = param_value(pv_raw, &kp)?;
                cfg.set(k, pv).map_err(|m| e(&kp, strip_key(&m, k)))?;
            }
            if let Some(m) = cfg.problem() {
                return Err(e(p, m));
            }
            Ok(cfg)
        }
        other => Err(e(
            p,
            format!(
                "expected an algorithm name such as \"cubic\" or a table such as \
                 {{ algo = \"ledbat\", target = \"100ms\" }}, got {}",
                describe(other)
            ),
        )),
    }
}

/// `CcConfig::set` prefixes its messages with "`key`: "; the key path already says it.
fn strip_key(m: &str, k: &str) -> String {
    m.strip_prefix(&format!("`{k}`: ")).unwrap_or(m).to_string()
}

// ---------------------------------------------------------------------------
// The document
// ---------------------------------------------------------------------------

fn default_name(origin: &str) -> String {
    Path::new(origin)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(origin)
        .to_string()
}

/// `node[2] "h1"` / `link[2] "bottleneck"`.
fn indexed(kind: &str, i: usize, name: &str) -> String {
    format!("{kind}[{i}] {name:?}")
}

/// `flow "f3"`.
fn named(kind: &str, name: &str) -> String {
    format!("{kind} {name:?}")
}

fn build(doc: &Table, origin: &str) -> R<Scenario> {
    let root = Obj {
        t: doc,
        path: String::new(),
    };
    root.check_keys(TOP_KEYS, "at the top level")?;

    let name = match root.opt("name", as_str)? {
        Some(n) => n.to_string(),
        None => default_name(origin),
    };
    let duration = as_dur(
        root.req(
            "duration",
            " (how much simulated time to run, e.g. duration = \"60s\")",
        )?,
        "duration",
    )?;
    if duration.is_zero() {
        return Err(e("duration", "must be positive"));
    }
    let seed = root
        .opt("seed", |v, p| as_int(v, p, 0, u64::MAX))?
        .unwrap_or(1);
    let start_jitter = root.opt("start_jitter", as_dur)?.unwrap_or(Dur::ZERO);

    // [defaults]
    let mut tcp_default = TcpConfig::default();
    let mut link_default = DirFields::default();
    if let Some(v) = root.get("defaults") {
        let d = Obj::of(v, "defaults".into(), "a table ([defaults])")?;
        d.check_keys(DEFAULTS_KEYS, "in [defaults]")?;
        if let Some(v) = d.get("tcp") {
            let t = Obj::of(v, "defaults.tcp".into(), "a table of TCP options")?;
            apply_tcp(&mut tcp_default, &t)?;
            tcp_check(&tcp_default, "defaults.tcp")?;
        }
        if let Some(v) = d.get("link") {
            let l = Obj::of(v, "defaults.link".into(), "a table of link properties")?;
            l.check_keys(DIR_KEYS, "in [defaults.link]")?;
            link_default = dir_fields(&l)?;
        }
    }

    // [[node]]
    let node_tables = match root.get("node") {
        Some(v) => tables(v, "node")?,
        None => {
            return Err(e(
                "node",
                "missing: declare the hosts and switches with [[node]] sections \
                 (name = \"h1\", kind = \"host\" or \"switch\")",
            ))
        }
    };
    let mut nodes = Vec::with_capacity(node_tables.len());
    for (i, t) in node_tables.into_iter().enumerate() {
        let o0 = Obj {
            t,
            path: format!("node[{i}]"),
        };
        let name = as_name(
            o0.req("name", " (every node needs a name)")?,
            &o0.key("name"),
        )?;
        let o = Obj {
            t,
            path: indexed("node", i, name),
        };
        o.check_keys(NODE_KEYS, "in a [[node]]")?;
        let kind = match o.opt("kind", as_str)? {
            None | Some("host") => NodeKind::Host,
            Some("switch") | Some("router") => NodeKind::Switch,
            Some(other) => {
                return Err(e(
                    o.key("kind"),
                    format!(
                        "unknown node kind {other:?}{} (known: \"host\", \"switch\")",
                        did_you_mean(other, NODE_KINDS.iter().copied())
                    ),
                ))
            }
        };
        nodes.push(NodeSpec {
            name: name.to_string(),
            kind,
        });
    }

    // [[link]]
    let link_tables = match root.get("link") {
        Some(v) => tables(v, "link")?,
        None => Vec::new(),
    };
    let mut links = Vec::with_capacity(link_tables.len());
    // Per link: its key path and where each direction's queue came from.
    let mut queue_origins: Vec<(String, [Option<String>; 2])> = Vec::new();
    for (i, t) in link_tables.into_iter().enumerate() {
        let o0 = Obj {
            t,
            path: format!("link[{i}]"),
        };
        let explicit = o0.opt("name", as_name)?;
        let o0 = match explicit {
            Some(n) => Obj {
                t,
                path: indexed("link", i, n),
            },
            None => o0,
        };
        o0.check_keys(LINK_KEYS, "in a [[link]]")?;
        let a = as_name(o0.req("a", " (the node at one end)")?, &o0.key("a"))?;
        let b = as_name(o0.req("b", " (the node at the other end)")?, &o0.key("b"))?;
        let name = explicit.map_or_else(|| format!("{a}-{b}"), str::to_string);
        let o = Obj {
            t,
            path: indexed("link", i, &name),
        };
        let link_fields = dir_fields(&o)?;
        let mut dirs = [DirFields::default(), DirFields::default()];
        for (slot, d) in dirs.iter_mut().zip(["ab", "ba"]) {
            if let Some(v) = o.get(d) {
                let dt = Obj::of(v, o.key(d), &format!("a table ([link.{d}])"))?;
                dt.check_keys(DIR_KEYS, &format!("in [link.{d}]"))?;
                *slot = dir_fields(&dt)?;
            }
        }
        let (ab, ab_queue_at) = resolve_dir(
            &dirs[0],
            &link_fields,
            &link_default,
            &o.key("ab"),
            ("ab", a, b),
        )?;
        let (ba, ba_queue_at) = resolve_dir(
            &dirs[1],
            &link_fields,
            &link_default,
            &o.key("ba"),
            ("ba", b, a),
        )?;
        queue_origins.push((o.path.clone(), [ab_queue_at, ba_queue_at]));
        links.push(LinkSpec {
            name,
            a: a.to_string(),
            b: b.to_string(),
            ab,
            ba,
        });
    }

    // [[flow]]
    let flow_tables = match root.get("flow") {
        Some(v) => tables(v, "flow")?,
        None => Vec::new(),
    };
    let mut flows = Vec::new();
    for (i, t) in flow_tables.into_iter().enumerate() {
        let o0 = Obj {
            t,
            path: format!("flow[{i}]"),
        };
        let explicit = o0.opt("name", as_name)?;
        let o = match explicit {
            Some(n) => Obj {
                t,
                path: named("flow", n),
            },
            None => o0,
        };
        o.check_keys(FLOW_KEYS, "in a [[flow]]")?;
        let name = explicit.map_or_else(|| format!("flow{i}"), str::to_string);
        let from = as_name(
            o.req("from", " (the host that opens the connection)")?,
            &o.key("from"),
        )?;
        let to = as_name(o.req("to", " (the host that accepts it)")?, &o.key("to"))?;
        let cc = as_cc(
            o.req(
                "cc",
                &format!(
                    " (the congestion control, e.g. cc = \"cubic\"; known: {})",
                    CcConfig::NAMES.join(", ")
                ),
            )?,
            &o.key("cc"),
        )?;
        let start = o.opt("start", as_dur)?.unwrap_or(Dur::ZERO);
        let stop = o.opt("stop", as_dur)?;
        let traffic = match o.opt("size", as_bytes)? {
            None => Traffic::Bulk,
            Some(0) => {
                return Err(e(
                    o.key("size"),
                    "must be positive (leave `size` out for a bulk, backlogged flow)",
                ))
            }
            Some(n) => Traffic::Fixed(n),
        };
        let bidir = o.opt("bidir", as_bool)?.unwrap_or(false);
        let mut tcp = tcp_default.clone();
        if let Some(v) = o.get("tcp") {
            let to = Obj::of(v, o.key("tcp"), "a table of TCP options")?;
            apply_tcp(&mut tcp, &to)?;
        }
        tcp_check(&tcp, &o.key("tcp"))?;
        let count = o.opt("count", |v, p| as_int(v, p, 1, MAX_COUNT))?;
        let start_step = o.opt("start_step", as_dur)?;
        if start_step.is_some() && count.is_none() {
            return Err(e(
                o.key("start_step"),
                "only applies with `count` (replica i starts at start + i × start_step)",
            ));
        }
        if start >= duration {
            return Err(e(
                o.key("start"),
                format!(
                    "the flow starts at {start}, at or after the end of the simulation (duration = {duration})"
                ),
            ));
        }
        if let Some(stop) = stop {
            if stop <= start {
                return Err(e(
                    o.key("stop"),
                    format!("must be after start: stop = {stop}, start = {start}"),
                ));
            }
        }
        let step = start_step.unwrap_or(Dur::ZERO);
        let proto = FlowSpec {
            name: name.clone(),
            from: from.to_string(),
            to: to.to_string(),
            cc,
            tcp,
            start,
            stop,
            traffic,
            bidir,
            group: None,
        };
        match count {
            None => flows.push(proto),
            Some(n) => {
                let last = start + step * (n - 1);
                if last >= duration {
                    return Err(e(
                        o.key("start_step"),
                        format!(
                            "replica {} would start at {last} (start + {} × start_step), at or \
                             after the end of the simulation (duration = {duration})",
                            n - 1,
                            n - 1
                        ),
                    ));
                }
                if let Some(stop) = stop {
                    if last >= stop {
                        return Err(e(
                            o.key("stop"),
                            format!(
                                "replica {} would start at {last} (start + {} × start_step), not before stop = {stop}",
                                n - 1,
                                n - 1
                            ),
                        ));
                    }
                }
                for r in 0..n {
                    let mut f = proto.clone();
                    f.name = format!("{name}-{r}");
                    f.group = Some(name.clone());
                    f.start = start + step * r;
                    flows.push(f);
                }
            }
        }
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

    // [measure]
    let mut measure = MeasureSpec::default();
    if let Some(v) = root.get("measure") {
        let m = Obj::of(v, "measure".into(), "a table ([measure])")?;
        m.check_keys(MEASURE_KEYS, "in [measure]")?;
        if let Some(d) = m.opt("goodput_interval", as_dur)? {
            measure.goodput_interval = d;
        }
        if let Some(d) = m.opt("trace_interval", as_dur)? {
            measure.trace_interval = d;
        }
        if let Some(d) = m.opt("warmup", as_dur)? {
            measure.warmup = d;
        }
        if let Some(v) = m.opt("capture", as_str_list)? {
            measure.capture = v;
        }
        if let Some(n) = m.opt("capture_snaplen", |v, p| {
            as_int(v, p, crate::pcap::MIN_SNAPLEN as u64, 262_144)
        })? {
            measure.capture_snaplen = n as u32;
        }
    }

    Ok(Scenario {
        name,
        duration,
        seed,
        nodes,
        links,
        flows,
        measure,
        start_jitter,
    })
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

fn queue_problem(q: &QueueSpec, max_pkt: u64) -> Option<(String, String)> {
    let too_small = |n: u64| {
        format!(
            "{n} B cannot hold one full-sized packet ({max_pkt} B = mss + 40 B of headers): \
             every data packet would be dropped"
        )
    };
    let lim = |sub: &str, l: Limit| -> Option<(String, String)> {
        if let Some(m) = limit_problem(l) {
            return Some((sub.to_string(), m));
        }
        match l {
            Limit::Bytes(n) if n < max_pkt => Some((sub.to_string(), too_small(n))),
            _ => None,
        }
    };
    match q {
        QueueSpec::DropTail { limit } => lim("", *limit),
        QueueSpec::AckFirst {
            data_share,
            throttle,
            ack_limit,
            data_limit,
            ..
        } => {
            if let Some(m) = share_problem(*data_share) {
                return Some((".data_share".into(), m));
            }
            if let Some(m) = share_problem(*throttle) {
                return Some((".throttle".into(), m));
            }
            if let Some(m) = limit_problem(*ack_limit) {
                return Some((".ack_limit".into(), m));
            }
            lim(".data_limit", *data_limit)
        }
        QueueSpec::TokenBucket { rate, burst, limit } => {
            if let Some(m) = rate_problem(*rate) {
                return Some((".rate".into(), m));
            }
            if *burst < max_pkt {
                return Some((
                    ".burst".into(),
                    format!(
                        "a burst of {burst} B is smaller than one full-sized packet ({max_pkt} B = mss + 40 B): \
                         the shaper could never send it"
                    ),
                ));
            }
            lim(".limit", *limit)
        }
    }
}

/// The largest full-sized packet of any flow (`mss + 40` bytes), which every
/// queue must hold; 1500 B without flows.
fn max_packet(flows: &[FlowSpec]) -> u64 {
    flows
        .iter()
        .map(|f| u64::from(f.tcp.mss) + HEADERS)
        .max()
        .unwrap_or(1500)
}

fn dir_problem(d: &DirSpec, max_pkt: u64) -> Option<(String, String)> {
    if let Some(m) = rate_problem(d.rate) {
        return Some(("rate".into(), m));
    }
    if let Some(m) = loss_problem(d.loss) {
        return Some(("loss".into(), m));
    }
    queue_problem(&d.queue, max_pkt).map(|(sub, m)| (format!("queue{sub}"), m))
}

/// Semantic checks of a scenario, whether parsed or built in code: names,
/// topology (known endpoints, hosts at flow ends, connectivity), times,
/// rates, loss probabilities, queue limits and TCP sanity. `origin` names
/// the scenario in errors.
pub fn validate(s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    check(s).map_err(|x| ScenarioError::new(origin, x.key, x.msg))
}

/// Names end up in CSV cells and capture file names: no commas, quotes,
/// path separators or control characters.
fn name_problem(name: &str) -> Option<String> {
    let bad = name
        .chars()
        .find(|c| matches!(c, ',' | '"' | '/' | '\\') || c.is_control())?;
    Some(format!(
        "{name:?} contains {bad:?}; names appear in CSV files and file names, so use \
         letters, digits and characters such as - _ . :"
    ))
}

/// Memory the sampled series of one run may take (cwnd and queue traces,
/// goodput bins): a scenario that would need more is refused.
pub const TRACE_BUDGET: u64 = 2 << 30;

fn check(s: &Scenario) -> R<()> {
    if s.duration.is_zero() {
        return Err(e("duration", "must be positive"));
    }
    if s.start_jitter >= s.duration {
        return Err(e(
            "start_jitter",
            format!(
                "{} is not shorter than the duration ({})",
                s.start_jitter, s.duration
            ),
        ));
    }
    let m = &s.measure;
    if m.goodput_interval.is_zero() {
        return Err(e("measure.goodput_interval", "must be positive"));
    }
    if m.trace_interval.is_zero() {
        return Err(e("measure.trace_interval", "must be positive"));
    }
    // Series kept in memory for the whole run: every trace sample holds its
    // time, 32 B per TCP sender (cwnd, ssthresh, SRTT, pipe; at most two per
    // flow) and 16 B per link direction's queue; every goodput bin 8 B per
    // flow direction.
    let (flows, dirs) = (s.flows.len() as u64, 2 * s.links.len() as u64);
    let series = [
        (
            "measure.trace_interval",
            m.trace_interval,
            8 + 64 * flows + 16 * dirs,
        ),
        ("measure.goodput_interval", m.goodput_interval, 16 * flows),
    ];
    for (key, iv, bytes) in series {
        let samples = (s.duration.as_nanos() / iv.as_nanos()).saturating_add(1);
        if samples.saturating_mul(bytes) > TRACE_BUDGET {
            // (D/iv + 1)·b ≤ B holds for iv ≥ D·b / (B − b).
            let (d, b, budget) = (
                u128::from(s.duration.as_nanos()),
                u128::from(bytes),
                u128::from(TRACE_BUDGET),
            );
            let need = (b < budget).then(|| (d * b).div_ceil(budget - b));
            let advice = match need.filter(|&ns| ns < d) {
                Some(ns) => {
                    let ns = ns as u64;
                    // Rounded up to a whole unit, so that the suggestion reads well.
                    let unit = [1_000_000_000, 1_000_000, 1_000, 1]
                        .into_iter()
                        .find(|u| ns >= 10 * u)
                        .unwrap_or(1);
                    format!(
                        "use an interval of at least {}",
                        Dur::from_nanos((ns / unit + 1) * unit)
                    )
                }
                None => format!(
                    "no interval fits: each sample takes {bytes} B for this many flows and links"
                ),
            };
            return Err(e(
                key,
                format!(
                    "{iv} gives {samples} samples over the {} run, about {:.1} GiB of \
                     traces in memory (the limit is {} GiB); {advice}",
                    s.duration,
                    samples as f64 * bytes as f64 / (1u64 << 30) as f64,
                    TRACE_BUDGET >> 30
                ),
            ));
        }
    }
    if m.warmup >= s.duration {
        return Err(e(
            "measure.warmup",
            format!(
                "{} is not shorter than the duration ({}): nothing would be measured",
                m.warmup, s.duration
            ),
        ));
    }

    // Nodes.
    if s.nodes.is_empty() {
        return Err(e(
            "node",
            "no nodes defined; declare hosts and switches with [[node]]",
        ));
    }
    let mut node_ix: HashMap<&str, usize> = HashMap::new();
    for (i, n) in s.nodes.iter().enumerate() {
        if n.name.trim().is_empty() {
            return Err(e(format!("node[{i}].name"), "must not be empty"));
        }
        if let Some(m) = name_problem(&n.name) {
            return Err(e(format!("node[{i}].name"), m));
        }
        if let Some(&j) = node_ix.get(n.name.as_str()) {
            return Err(e(
                format!("{}.name", indexed("node", i, &n.name)),
                format!("duplicate node name {:?} (also node[{j}])", n.name),
            ));
        }
        node_ix.insert(&n.name, i);
    }
    let node_names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
    let unknown_node = |name: &str| {
        format!(
            "unknown node {name:?}{} (nodes: {})",
            did_you_mean(name, node_names.iter().copied()),
            list(&node_names)
        )
    };

    let max_pkt = max_packet(&s.flows);

    // Links, and connectivity (union-find over node indexes).
    let mut parent: Vec<usize> = (0..s.nodes.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut link_ix: HashMap<&str, usize> = HashMap::new();
    for (i, l) in s.links.iter().enumerate() {
        let p = indexed("link", i, &l.name);
        if l.name.trim().is_empty() {
            return Err(e(format!("link[{i}].name"), "must not be empty"));
        }
        if let Some(m) = name_problem(&l.name) {
            return Err(e(format!("link[{i}].name"), m));
        }
        if let Some(&j) = link_ix.get(l.name.as_str()) {
            return Err(e(
                format!("{p}.name"),
                format!(
                    "duplicate link name {:?} (also link[{j}]); give one of them another `name`",
                    l.name
                ),
            ));
        }
        link_ix.insert(&l.name, i);
        let a = *node_ix
            .get(l.a.as_str())
            .ok_or_else(|| e(format!("{p}.a"), unknown_node(&l.a)))?;
        let b = *node_ix
            .get(l.b.as_str())
            .ok_or_else(|| e(format!("{p}.b"), unknown_node(&l.b)))?;
        if a == b {
            return Err(e(
                format!("{p}.b"),
                format!(
                    "a link must connect two different nodes (both ends are {:?})",
                    l.a
                ),
            ));
        }
        for (d, spec) in [("ab", &l.ab), ("ba", &l.ba)] {
            if let Some((k, m)) = dir_problem(spec, max_pkt) {
                return Err(e(format!("{p}.{d}.{k}"), m));
            }
        }
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        parent[ra] = rb;
    }

    // Flows.
    if s.flows.is_empty() {
        return Err(e("flow", "no flows defined; add a [[flow]] (from, to, cc)"));
    }
    let mut flow_ix: HashMap<&str, usize> = HashMap::new();
    for (i, f) in s.flows.iter().enumerate() {
        if f.name.trim().is_empty() {
            return Err(e(format!("flow[{i}].name"), "must not be empty"));
        }
        if let Some(m) = name_problem(&f.name) {
            return Err(e(format!("flow[{i}].name"), m));
        }
        if f.name.contains('*') {
            return Err(e(
                format!("flow[{i}].name"),
                format!(
                    "{:?} contains '*', which is reserved for flow names: `hopwise sweep` \
                     calls the sum over a count entry's replicas NAME-*",
                    f.name
                ),
            ));
        }
        let p = named("flow", &f.name);
        if flow_ix.insert(&f.name, i).is_some() {
            return Err(e(
                format!("{p}.name"),
                format!(
                    "duplicate flow name {:?} (a flow with count = N is expanded into <name>-0 … <name>-<N-1>)",
                    f.name
                ),
            ));
        }
        let ends = [("from", &f.from), ("to", &f.to)];
        let mut ix = [0usize; 2];
        for (slot, (k, n)) in ix.iter_mut().zip(ends) {
            *slot = *node_ix
                .get(n.as_str())
                .ok_or_else(|| e(format!("{p}.{k}"), unknown_node(n)))?;
        }
        if ix[0] == ix[1] {
            return Err(e(
                format!("{p}.to"),
                format!(
                    "same as from ({:?}): a flow needs two different hosts",
                    f.from
                ),
            ));
        }
        for ((k, n), &x) in ends.iter().zip(&ix) {
            if s.nodes[x].kind == NodeKind::Switch {
                return Err(e(
                    format!("{p}.{k}"),
                    format!("{n:?} is a switch; flows run between hosts (kind = \"host\")"),
                ));
            }
        }
        if root(&mut parent, ix[0]) != root(&mut parent, ix[1]) {
            return Err(e(
                format!("{p}.to"),
                format!(
                    "no path from {:?} to {:?}: no chain of [[link]]s connects them",
                    f.from, f.to
                ),
            ));
        }
        if f.start >= s.duration {
            return Err(e(
                format!("{p}.start"),
                format!(
                    "the flow starts at {}, at or after the end of the simulation (duration = {})",
                    f.start, s.duration
                ),
            ));
        }
        if let Some(stop) = f.stop {
            if stop <= f.start {
                return Err(e(
                    format!("{p}.stop"),
                    format!("must be after start: stop = {stop}, start = {}", f.start),
                ));
            }
        }
        if f.traffic == Traffic::Fixed(0) {
            return Err(e(format!("{p}.size"), "must be positive"));
        }
        if let Some((k, m)) = tcp_problem(&f.tcp) {
            return Err(e(format!("{p}.tcp.{k}"), m));
        }
    }
    capture_ifaces(s, &s.measure.capture).map_err(|m| e("measure.capture", m))?;
    if s.measure.capture_snaplen < crate::pcap::MIN_SNAPLEN {
        return Err(e(
            "measure.capture_snaplen",
            format!(
                "{} B cannot hold an IPv4 and a TCP header (at least {})",
                s.measure.capture_snaplen,
                crate::pcap::MIN_SNAPLEN
            ),
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Overrides
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Seg {
    /// A table key, or (inside an array) the `name` of the element to select.
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let chars: Vec<char> = path.trim().chars().collect();
    if chars.is_empty() {
        return Err("empty key (expected key=value, e.g. duration=30s)".into());
    }
    let mut segs = Vec::new();
    let mut i = 0;
    loop {
        // A key: bare or "quoted".
        if chars.get(i) == Some(&'"') {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == '"')
                .ok_or("unterminated quote in the key")?;
            segs.push(Seg::Key(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else {
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']' | '"') {
                i += 1;
            }
            let k: String = chars[start..i].iter().collect();
            let k = k.trim();
            if k.is_empty() {
                return Err(format!(
                    "empty key segment at position {} of `{}`",
                    start + 1,
                    shorten(path.trim())
                ));
            }
            segs.push(Seg::Key(k.to_string()));
        }
        // Any number of [index] or [name] selectors.
        while chars.get(i) == Some(&'[') {
            let end = chars[i + 1..]
                .iter()
                .position(|&c| c == ']')
                .ok_or("unterminated `[` in the key")?;
            let inner: String = chars[i + 1..i + 1 + end].iter().collect();
            let inner = inner.trim();
            if !inner.is_empty() && inner.chars().all(|c| c.is_ascii_digit()) {
                let n = inner
                    .parse()
                    .map_err(|_| format!("index [{inner}] is too large"))?;
                segs.push(Seg::Index(n));
            } else {
                let name = inner.trim_matches('"');
                if name.is_empty() {
                    return Err("empty `[]` in the key".into());
                }
                segs.push(Seg::Key(name.to_string()));
            }
            i += end + 2;
        }
        if segs.len() > MAX_KEY_PARTS {
            return Err(format!(
                "the key has more than {MAX_KEY_PARTS} parts; no scenario key is that deep"
            ));
        }
        match chars.get(i) {
            None => break,
            Some('.') => {
                i += 1;
                if i >= chars.len() {
                    return Err("the key ends with `.`".into());
                }
            }
            Some(c) => return Err(format!("unexpected `{c}` in the key")),
        }
    }
    Ok(segs)
}

/// `o` itself, or its start and end if it is too long to print whole (for
/// messages that quote a command-line argument).
pub fn shorten(o: &str) -> String {
    let chars: Vec<char> = o.chars().collect();
    if chars.len() <= 120 {
        return o.to_string();
    }
    let head: String = chars[..60].iter().collect();
    let tail: String = chars[chars.len() - 40..].iter().collect();
    format!("{head}…{tail} ({} characters)", chars.len())
}

/// Parts of an override key at most (`flow[f1].tcp.delack_timeout` has 4);
/// the overrides are applied recursively, one level per part.
const MAX_KEY_PARTS: usize = 16;

/// A TOML value if the text parses as one, else the text as a string.
fn parse_override_value(raw: &str) -> Value {
    let raw = raw.trim();
    if let Ok(mut t) = format!("v = {raw}").parse::<Table>() {
        if t.len() == 1 {
            if let Some(v) = t.remove("v") {
                return v;
            }
        }
    }
    Value::String(raw.to_string())
}

/// Which part of the schema an override is walking (for key checks and
/// default names).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    Defaults,
    Tcp,
    Dir,
    Node,
    Link,
    Flow,
    Measure,
    NodeArr,
    LinkArr,
    FlowArr,
    Free,
}

impl Ctx {
    fn keys(self) -> Option<&'static [&'static str]> {
        match self {
            Ctx::Root => Some(TOP_KEYS),
            Ctx::Defaults => Some(DEFAULTS_KEYS),
            Ctx::Tcp => Some(TCP_KEYS),
            Ctx::Dir => Some(DIR_KEYS),
            Ctx::Node => Some(NODE_KEYS),
            Ctx::Link => Some(LINK_KEYS),
            Ctx::Flow => Some(FLOW_KEYS),
            Ctx::Measure => Some(MEASURE_KEYS),
            _ => None,
        }
    }

    fn child(self, key: &str) -> Ctx {
        match (self, key) {
            (Ctx::Root, "defaults") => Ctx::Defaults,
            (Ctx::Root, "node") => Ctx::NodeArr,
            (Ctx::Root, "link") => Ctx::LinkArr,
            (Ctx::Root, "flow") => Ctx::FlowArr,
            (Ctx::Root, "measure") => Ctx::Measure,
            (Ctx::Defaults, "tcp") | (Ctx::Flow, "tcp") => Ctx::Tcp,
            (Ctx::Defaults, "link") | (Ctx::Link, "ab") | (Ctx::Link, "ba") => Ctx::Dir,
            _ => Ctx::Free,
        }
    }

    fn element(self) -> Ctx {
        match self {
            Ctx::NodeArr => Ctx::Node,
            Ctx::LinkArr => Ctx::Link,
            Ctx::FlowArr => Ctx::Flow,
            _ => Ctx::Free,
        }
    }

    /// The name an array element answers to in a `[name]` / `.name` selector.
    fn element_name(self, i: usize, t: &Table) -> Option<String> {
        if let Some(Value::String(n)) = t.get("name") {
            return Some(n.clone());
        }
        match self {
            Ctx::LinkArr => match (t.get("a"), t.get("b")) {
                (Some(Value::String(a)), Some(Value::String(b))) => Some(format!("{a}-{b}")),
                _ => None,
            },
            Ctx::FlowArr => Some(format!("flow{i}")),
            _ => None,
        }
    }
}

fn apply_override(doc: &mut Table, o: &str) -> Result<(), String> {
    let (path, raw) = o
        .split_once('=')
        .ok_or_else(|| "expected key=value (e.g. duration=30s, flow.f1.cc=cubic)".to_string())?;
    let segs = parse_path(path)?;
    let value = parse_override_value(raw);
    let mut root = Value::Table(std::mem::take(doc));
    let r = set_at(&mut root, Ctx::Root, &segs, "", value);
    if let Value::Table(t) = root {
        *doc = t;
    }
    r
}

fn shown_key(shown: &str, k: &str) -> String {
    if shown.is_empty() {
        k.to_string()
    } else {
        format!("{shown}.{k}")
    }
}

fn set_at(
    cur: &mut Value,
    ctx: Ctx,
    segs: &[Seg],
    shown: &str,
    value: Value,
) -> Result<(), String> {
    let Some((seg, rest)) = segs.split_first() else {
        *cur = value;
        return Ok(());
    };
    match seg {
        Seg::Key(k) => match cur {
            Value::Table(t) => {
                let here = shown_key(shown, k);
                if let Some(allowed) = ctx.keys() {
                    if !allowed.contains(&k.as_str()) {
                        let place = if shown.is_empty() {
                            "at the top level".to_string()
                        } else {
                            format!("in `{shown}`")
                        };
                        return Err(format!(
                            "unknown key `{}` {place}{} (allowed: {})",
                            shorten(k),
                            did_you_mean(k, allowed.iter().copied()),
                            allowed.join(", ")
                        ));
                    }
                }
                let child_ctx = ctx.child(k);
                if !t.contains_key(k.as_str()) {
                    match rest.first() {
                        None => {
                            t.insert(k.clone(), value);
                            return Ok(());
                        }
                        Some(Seg::Index(n)) => {
                            return Err(format!(
                                "`{here}` does not exist, so it has no element [{n}]"
                            ))
                        }
                        Some(Seg::Key(sel)) => {
                            if matches!(child_ctx, Ctx::NodeArr | Ctx::LinkArr | Ctx::FlowArr) {
                                return Err(format!(
                                    "there are no [[{k}]] entries, so none is named {sel:?}"
                                ));
                            }
                            t.insert(k.clone(), Value::Table(Table::new()));
                        }
                    }
                }
                let Some(child) = t.get_mut(k.as_str()) else {
                    return Err(format!("`{here}` could not be created"));
                };
                // Shorthand strings become tables when a sub-key is set.
                if let (Some(Seg::Key(_)), Value::String(s)) = (rest.first(), &*child) {
                    let mut nt = Table::new();
                    match k.as_str() {
                        "cc" => {
                            nt.insert("algo".into(), Value::String(s.clone()));
                            *child = Value::Table(nt);
                        }
                        "queue" => {
                            nt.insert("type".into(), Value::String("droptail".into()));
                            nt.insert("limit".into(), Value::String(s.clone()));
                            *child = Value::Table(nt);
                        }
                        _ => {}
                    }
                }
                set_at(child, child_ctx, rest, &here, value)
            }
            Value::Array(items) => {
                let mut found = Vec::new();
                let mut names = Vec::new();
                for (i, it) in items.iter().enumerate() {
                    if let Value::Table(t) = it {
                        if let Some(n) = ctx.element_name(i, t) {
                            if &n == k {
                                found.push(i);
                            }
                            names.push(n);
                        }
                    }
                }
                let here = format!("{shown}.{k}");
                match found.as_slice() {
                    [i] => set_at(&mut items[*i], ctx.element(), rest, &here, value),
                    [] => {
                        let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                        Err(format!(
                            "no element of `{shown}` is named {k:?}{} (names: {})",
                            did_you_mean(k, refs.iter().copied()),
                            if refs.is_empty() { "none".to_string() } else { list(&refs) }
                        ))
                    }
                    _ => Err(format!(
                        "several elements of `{shown}` are named {k:?}; select one by index, e.g. {shown}[{}]",
                        found[0]
                    )),
                }
            }
            other => Err(format!(
                "`{shown}` is {}, not a table, so it has no key `{k}`",
                kind_of(other)
            )),
        },
        Seg::Index(n) => match cur {
            Value::Array(items) => {
                let len = items.len();
                let here = format!("{shown}[{n}]");
                match items.get_mut(*n) {
                    Some(it) => set_at(it, ctx.element(), rest, &here, value),
                    None => Err(format!(
                        "`{shown}` has {len} element{}; index [{n}] is out of range",
                        if len == 1 { "" } else { "s" }
                    )),
                }
            }
            other => Err(format!(
                "`{shown}` is {}, not an array, so [{n}] cannot index it",
                kind_of(other)
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        assert_eq!(
            parse_path("flow[1].cc.target").unwrap(),
            vec![
                Seg::Key("flow".into()),
                Seg::Index(1),
                Seg::Key("cc".into()),
                Seg::Key("target".into())
            ]
        );
        assert_eq!(
            parse_path("link.\"a.b\".ab").unwrap(),
            vec![
                Seg::Key("link".into()),
                Seg::Key("a.b".into()),
                Seg::Key("ab".into())
            ]
        );
        assert_eq!(
            parse_path("link[bottleneck].ba").unwrap(),
            vec![
                Seg::Key("link".into()),
                Seg::Key("bottleneck".into()),
                Seg::Key("ba".into())
            ]
        );
        assert!(parse_path("").is_err());
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a.").is_err());
        assert!(parse_path("a[1").is_err());
        assert!(parse_path("a[99999999999999999999999]").is_err());
        // Deep keys are refused before they are walked (one stack frame per part).
        let deep = format!("flow.f1.cc{}", ".x".repeat(30_000));
        let e = parse_path(&deep).unwrap_err();
        assert!(e.contains("more than 16 parts"), "{e}");
        assert_eq!(
            parse_path(&format!("a{}", ".b".repeat(15))).unwrap().len(),
            16
        );
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("rat", DIR_KEYS.iter().copied()), Some("rate"));
        assert_eq!(suggest("nodes", TOP_KEYS.iter().copied()), Some("node"));
        assert_eq!(suggest("zzzzzz", TOP_KEYS.iter().copied()), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit("100pkt"), Ok(Limit::Packets(100)));
        assert_eq!(parse_limit("1_000 packets"), Ok(Limit::Packets(1000)));
        assert_eq!(parse_limit("64kB"), Ok(Limit::Bytes(64_000)));
        assert!(parse_limit("100").unwrap_err().contains("ambiguous"));
        assert!(parse_limit("1.5pkt").unwrap_err().contains("whole number"));
        assert!(parse_limit("-5pkt").unwrap_err().contains("negative"));
        assert!(parse_limit("-1.5pkt").unwrap_err().contains("negative"));
        assert_eq!(parse_limit("1e2pkt"), Ok(Limit::Packets(100)));
        assert!(parse_limit("1.5e0pkt")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_limit("99999999999999999999pkt")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_limit("1e30pkt").unwrap_err().contains("too large"));
    }

    #[test]
    fn line_col_counts_chars() {
        assert_eq!(line_col("ab\ncµd", 6), (2, 3));
        assert_eq!(line_col("x", 100), (1, 2));
    }
}
