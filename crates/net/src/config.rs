//! Relay, proxy and directory files (TOML), validated with errors that name
//! the file, the key and the problem:
//!
//! ```text
//! error: relay.toml: bandwidth.rate: `10 MBs`: unknown rate unit `MBs` (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)
//! ```
//!
//! `docs/relay.md` is the reference for every key.

use hopwise_proto::backtap::BucketConfig;
use hopwise_proto::bucket::Refill;
use hopwise_proto::circuit::policy::{AddrPattern, ExitPolicy, Rule, Unreachable, Verdict};
use hopwise_proto::link::{is_small_order, parse_key};
use hopwise_proto::time::Dur;
use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate};
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::{Table, Value};

/// A configuration problem: `file: key: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub key: String,
    pub msg: String,
}

impl ConfigError {
    pub fn new(file: impl fmt::Display, key: impl Into<String>, msg: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_string(),
            key: key.into(),
            msg: msg.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.msg)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.msg)
        }
    }
}
impl std::error::Error for ConfigError {}

type R<T> = Result<T, (String, String)>;

fn err<T>(key: &str, msg: impl Into<String>) -> R<T> {
    Err((key.to_string(), msg.into()))
}

fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {s:?}"),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(x) => format!("the float {x}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(d) => format!("the date-time {d}"),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// "; did you mean `x`?" for a close candidate.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    let best = candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .filter(|&(d, _)| d <= 2 && d < word.len().max(1))
        .min();
    match best {
        Some((_, c)) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// Refuses keys a table should not have.
fn known(t: &Table, path: &str, keys: &[&str]) -> R<()> {
    for k in t.keys() {
        if !keys.contains(&k.as_str()) {
            return err(
                &at(path, k),
                format!(
                    "unknown key{} (known: {})",
                    did_you_mean(k, keys),
                    keys.join(", ")
                ),
            );
        }
    }
    Ok(())
}

fn get_str<'a>(t: &'a Table, path: &str, k: &str) -> R<Option<&'a str>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => err(
            &at(path, k),
            format!("expected a string, got {}", describe(v)),
        ),
    }
}

/// A required name: "missing (`why`)" when absent, "is empty" when blank.
fn get_name<'a>(t: &'a Table, path: &str, k: &str, why: &str) -> R<&'a str> {
    match get_str(t, path, k)? {
        None => err(&at(path, k), format!("missing ({why})")),
        Some(s) if s.trim().is_empty() => err(
            &at(path, k),
            format!("is empty (\"{s}\"); a name needs a visible character"),
        ),
        Some(s) => Ok(s),
    }
}

fn get_bool(t: &Table, path: &str, k: &str) -> R<Option<bool>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => err(
            &at(path, k),
            format!("expected a boolean, got the string \"{s}\" (write {s} without quotes)"),
        ),
        Some(v) => err(
            &at(path, k),
            format!("expected true or false, got {}", describe(v)),
        ),
    }
}

fn get_int(t: &Table, path: &str, k: &str, lo: u64, hi: u64) -> R<Option<u64>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Integer(n)) if *n >= 0 && (*n as u64) >= lo && (*n as u64) <= hi => {
            Ok(Some(*n as u64))
        }
        Some(Value::Integer(n)) => err(&at(path, k), format!("must be {lo} to {hi}, got {n}")),
        Some(v) => err(
            &at(path, k),
            format!("expected a whole number, got {}", describe(v)),
        ),
    }
}

fn get_table<'a>(t: &'a Table, path: &str, k: &str) -> R<Option<&'a Table>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Table(x)) => Ok(Some(x)),
        Some(v) => err(
            &at(path, k),
            format!("expected a table ([{}]), got {}", at(path, k), describe(v)),
        ),
    }
}

fn get_str_list(t: &Table, path: &str, k: &str) -> R<Option<Vec<String>>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for (i, v) in a.iter().enumerate() {
                match v {
                    Value::String(s) => out.push(s.clone()),
                    v => {
                        return err(
                            &format!("{}[{i}]", at(path, k)),
                            format!("expected a string, got {}", describe(v)),
                        )
                    }
                }
            }
            Ok(Some(out))
        }
        Some(v) => err(
            &at(path, k),
            format!("expected an array of strings, got {}", describe(v)),
        ),
    }
}

fn get_addr(t: &Table, path: &str, k: &str) -> R<Option<SocketAddr>> {
    let Some(s) = get_str(t, path, k)? else {
        return Ok(None);
    };
    match s.parse::<SocketAddr>() {
        Ok(a) => Ok(Some(a)),
        Err(_) => err(
            &at(path, k),
            format!("`{s}` is not an address with a port (e.g. 127.0.0.1:9001 or [::1]:9001)"),
        ),
    }
}

/// The `[metrics]` section of a relay or proxy config: `listen`, loopback only.
fn metrics(t: Option<&Table>) -> R<Option<SocketAddr>> {
    let Some(m) = t else {
        return Ok(None);
    };
    known(m, "metrics", &["listen"])?;
    match get_addr(m, "metrics", "listen")? {
        Some(a) if !a.ip().is_loopback() => err(
            "metrics.listen",
            format!("{a} is not a loopback address; the metrics endpoint only listens on loopback (127.0.0.1 or ::1)"),
        ),
        a => Ok(a),
    }
}

fn get_dur(t: &Table, path: &str, k: &str) -> R<Option<Duration>> {
    if let Some(Value::Integer(_) | Value::Float(_)) = t.get(k) {
        return err(
            &at(path, k),
            "durations are strings with a unit, e.g. \"20ms\"",
        );
    }
    let Some(s) = get_str(t, path, k)? else {
        return Ok(None);
    };
    match parse_duration(s) {
        Ok(d) => Ok(Some(Duration::from_nanos(d.as_nanos()))),
        Err(e) => err(&at(path, k), e.0),
    }
}

/// Bounds of a duration key: the least and the greatest value, and how the
/// messages and `docs/relay.md` write them.
#[derive(Clone, Copy, Debug)]
pub struct DurRange {
    pub lo: Duration,
    pub hi: Duration,
    pub text: &'static str,
}

/// Timeouts and the keepalive interval: zero would fire at once (a keepalive
/// of 0 is a datagram on every wake-up), less than tokio's 1 ms timer
/// resolution is zero in effect, and more than an hour is a link or a
/// request that never gives up.
pub const TIMEOUT_RANGE: DurRange = DurRange {
    lo: Duration::from_millis(1),
    hi: Duration::from_secs(3600),
    text: "1ms to 1h",
};
/// `[transport] pack_delay`: 0 (the default) packs what one wake-up
/// produces; holding a datagram for more than a second is a stall.
pub const PACK_DELAY_RANGE: DurRange = DurRange {
    lo: Duration::ZERO,
    hi: Duration::from_secs(1),
    text: "0s to 1s",
};
/// `[emulation.PEER] delay`: delayed datagrams are held in memory, so a
/// delay far beyond any real link's would hold a second's traffic many
/// times over.
pub const EMULATION_DELAY_RANGE: DurRange = DurRange {
    lo: Duration::ZERO,
    hi: Duration::from_secs(10),
    text: "0s to 10s",
};

fn get_dur_in(t: &Table, path: &str, k: &str, r: DurRange) -> R<Option<Duration>> {
    let Some(d) = get_dur(t, path, k)? else {
        return Ok(None);
    };
    if d < r.lo || d > r.hi {
        let got = get_str(t, path, k)?.unwrap_or_default();
        let what = if d.is_zero() && !r.lo.is_zero() {
            format!("must be positive ({})", r.text)
        } else {
            format!("must be {}", r.text)
        };
        return err(&at(path, k), format!("{what}, got `{got}`"));
    }
    Ok(Some(d))
}

fn get_bytes(t: &Table, path: &str, k: &str) -> R<Option<u64>> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Integer(n)) if *n >= 0 => Ok(Some(*n as u64)),
        Some(Value::String(s)) => match parse_bytes(s) {
            Ok(b) => Ok(Some(b.0)),
            Err(e) => err(&at(path, k), e.0),
        },
        Some(v) => err(
            &at(path, k),
            format!("expected a size like \"4MiB\", got {}", describe(v)),
        ),
    }
}

/// Bytes per second from `"10MB/s"` or `"80Mbit"`.
fn get_rate(t: &Table, path: &str, k: &str) -> R<Option<u64>> {
    if let Some(Value::Integer(_) | Value::Float(_)) = t.get(k) {
        return err(
            &at(path, k),
            "rates are strings with a unit, e.g. \"10MB/s\" or \"80Mbit\"",
        );
    }
    let Some(s) = get_str(t, path, k)? else {
        return Ok(None);
    };
    match parse_rate(s) {
        Ok(r) if r.bps() >= 8 => Ok(Some(r.bps() / 8)),
        Ok(_) => err(&at(path, k), "must be at least 1 byte per second"),
        Err(e) => err(&at(path, k), e.0),
    }
}

fn get_fraction(t: &Table, path: &str, k: &str) -> R<Option<f64>> {
    let v = match t.get(k) {
        None => return Ok(None),
        Some(Value::Float(x)) => *x,
        Some(Value::Integer(n)) => *n as f64,
        Some(Value::String(s)) if s.trim_end().ends_with('%') => {
            match s.trim().trim_end_matches('%').trim().parse::<f64>() {
                Ok(p) => p / 100.0,
                Err(_) => return err(&at(path, k), format!("`{s}` is not a percentage")),
            }
        }
        Some(v) => {
            return err(
                &at(path, k),
                format!(
                    "expected a fraction like 0.05 or \"5%\", got {}",
                    describe(v)
                ),
            )
        }
    };
    // Below 1: a loss of 1 drops every datagram, handshakes included, so no
    // link (and no circuit) could ever come up.
    if !(0.0..1.0).contains(&v) {
        return err(
            &at(path, k),
            format!(
                "must be at least 0 and below 1 (a loss of 1 drops every datagram, so no link could come up), got {v}"
            ),
        );
    }
    Ok(Some(v))
}

fn parse_toml(text: &str, file: &str) -> Result<Table, ConfigError> {
    text.parse::<Table>().map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        match e.span() {
            Some(sp) => {
                let line = text[..sp.start.min(text.len())].matches('\n').count() + 1;
                ConfigError::new(file, "", format!("line {line}: TOML syntax error: {msg}"))
            }
            None => ConfigError::new(file, "", format!("TOML syntax error: {msg}")),
        }
    })
}

/// Config and directory files are small; a larger one is a mistake (or a
/// device such as /dev/zero, which would be read forever).
const MAX_FILE: u64 = 16 << 20;

fn read(path: &Path) -> Result<String, ConfigError> {
    let e = |m: String| ConfigError::new(path.display(), "", m);
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(e("is a directory, not a file".into())),
        Ok(m) if !m.is_file() => return Err(e("is not a regular file".into())),
        Ok(m) if m.len() > MAX_FILE => {
            return Err(e(format!(
                "is {} bytes; a configuration file is at most 16 MiB",
                m.len()
            )))
        }
        _ => {}
    }
    // The checks above keep open() from blocking on a FIFO; the opened
    // file is checked again and read up to the limit, so a file replaced
    // in between cannot make the read unbounded.
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|x| e(format!("cannot read: {x}")))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(e("is not a regular file".into()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|x| e(format!("cannot read: {x}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(e("grew beyond 16 MiB while being read".into()));
    }
    String::from_utf8(bytes).map_err(|x| {
        e(format!(
            "is not UTF-8 text (byte {} is not), so not a TOML file",
            x.utf8_error().valid_up_to()
        ))
    })
}

/// The directory file named by the `directory` key of `file` (relative to
/// `base`), and its path; a file that cannot be read is that key's error.
fn directory_key(t: &Table, file: &str, base: &Path) -> Result<(PathBuf, Directory), ConfigError> {
    let key = "directory";
    let name = get_path(t, key)
        .map_err(|(k, m)| ConfigError::new(file, k, m))?
        .ok_or_else(|| ConfigError::new(file, key, "missing (the directory file)"))?;
    let path = resolve(base, &name);
    let text =
        read(&path).map_err(|x| ConfigError::new(file, key, format!("{}: {}", x.file, x.msg)))?;
    let dir = Directory::parse(&text, &path.display().to_string()).map_err(|x| {
        if x.key.is_empty() && x.msg.starts_with(NOT_A_DIRECTORY) {
            // The mistake is this key, which names the wrong file.
            ConfigError::new(file, key, format!("{} {}", x.file, x.msg))
        } else {
            x
        }
    })?;
    Ok((path, dir))
}

/// A path-valued key: present and not empty.
fn get_path(t: &Table, key: &str) -> R<Option<String>> {
    match get_str(t, "", key)? {
        Some("") => err(key, "is empty; name a file"),
        x => Ok(x.map(str::to_string)),
    }
}

fn resolve(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

// ---------------------------------------------------------------------------
// Directory

/// A relay of the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelayEntry {
    pub name: String,
    pub address: SocketAddr,
    pub key: [u8; 32],
    /// May be the last hop (`exit` flag).
    pub exit: bool,
    /// May be the first hop (`guard` flag).
    pub guard: bool,
}

/// The static list of relays; relays and proxies read the same file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory {
    pub relays: Vec<RelayEntry>,
}

pub const FLAGS: &[&str] = &["exit", "guard"];

/// How the message about a file that is not a directory begins.
const NOT_A_DIRECTORY: &str = "is not a directory file";

impl Directory {
    pub fn load(path: &Path) -> Result<Directory, ConfigError> {
        let text = read(path)?;
        Directory::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<Directory, ConfigError> {
        let t = parse_toml(text, file)?;
        Directory::from_table(&t).map_err(|(k, m)| ConfigError::new(file, k, m))
    }

    fn from_table(t: &Table) -> R<Directory> {
        if let Some(k) = t.keys().find(|k| *k != "relay") {
            // A misspelt `relay`, or another kind of file (a relay's or a
            // proxy's config) named where a directory belongs.
            let hint = did_you_mean(k, &["relay"]);
            return if hint.is_empty() {
                err(
                    "",
                    format!("{NOT_A_DIRECTORY}: unknown key `{k}` (a directory has only [[relay]] tables)"),
                )
            } else {
                err(
                    k,
                    format!("unknown key{hint} (a directory has only [[relay]] tables)"),
                )
            };
        }
        let Some(v) = t.get("relay") else {
            return err(
                "relay",
                "the directory lists no relays (add [[relay]] tables)",
            );
        };
        let Value::Array(a) = v else {
            return err("relay", "expected [[relay]] tables");
        };
        let mut relays: Vec<RelayEntry> = Vec::new();
        for (i, v) in a.iter().enumerate() {
            let p = format!("relay[{i}]");
            let Value::Table(r) = v else {
                return err(&p, "expected a table");
            };
            known(r, &p, &["name", "address", "key", "flags"])?;
            let name = get_name(r, &p, "name", "every relay needs a name")?.to_string();
            let p = format!("relay.{name}");
            let address = get_addr(r, &p, "address")?
                .ok_or_else(|| (at(&p, "address"), "missing".to_string()))?;
            if address.ip().is_unspecified() {
                return err(
                    &at(&p, "address"),
                    format!(
                        "{address}: {} is the unspecified address, which nobody can send to; \
                         give the address the relay is reached at",
                        address.ip()
                    ),
                );
            }
            if address.port() == 0 {
                return err(
                    &at(&p, "address"),
                    format!(
                        "{address}: port 0 is not a port anybody can send to; \
                         give the port the relay listens on"
                    ),
                );
            }
            let key_s =
                get_str(r, &p, "key")?.ok_or_else(|| (at(&p, "key"), "missing".to_string()))?;
            let key = parse_key(key_s).ok_or_else(|| {
                (
                    at(&p, "key"),
                    format!("`{key_s}` is not a public key (64 hex digits)"),
                )
            })?;
            let flags = get_str_list(r, &p, "flags")?.unwrap_or_default();
            for f in &flags {
                if !FLAGS.contains(&f.as_str()) {
                    return err(
                        &at(&p, "flags"),
                        format!(
                            "unknown flag `{f}`{} (known: exit, guard)",
                            did_you_mean(f, FLAGS)
                        ),
                    );
                }
            }
            if relays.iter().any(|x| x.name == name) {
                return err(&at(&p, "name"), format!("relay `{name}` is listed twice"));
            }
            if key == [0; 32] {
                // The all-zero X25519 point has small order: every
                // Diffie-Hellman result with it is zero (RFC 7748 §6.1).
                return err(&at(&p, "key"), "all zeros is not a usable public key");
            }
            if is_small_order(&key) {
                return err(
                    &at(&p, "key"),
                    format!(
                        "`{key_s}` is an X25519 point of small order, not a usable public key \
                         (every handshake secret with it would be zero)"
                    ),
                );
            }
            if let Some(x) = relays.iter().find(|x| x.key == key) {
                return err(
                    &at(&p, "key"),
                    format!("the same key is listed for relay `{}`", x.name),
                );
            }
            if let Some(x) = relays.iter().find(|x| x.address == address) {
                return err(
                    &at(&p, "address"),
                    format!("{address} is also relay `{}`'s address", x.name),
                );
            }
            relays.push(RelayEntry {
                name,
                address,
                key,
                exit: flags.iter().any(|f| f == "exit"),
                guard: flags.iter().any(|f| f == "guard"),
            });
        }
        Ok(Directory { relays })
    }

    /// The file text.
    pub fn to_toml(&self) -> String {
        let mut s =
            String::from("# hopwise directory: the relays, their addresses, keys and flags.\n");
        for r in &self.relays {
            let mut flags = Vec::new();
            if r.guard {
                flags.push("\"guard\"");
            }
            if r.exit {
                flags.push("\"exit\"");
            }
            s.push_str(&format!(
                "\n[[relay]]\nname = \"{}\"\naddress = \"{}\"\nkey = \"{}\"\nflags = [{}]\n",
                r.name,
                r.address,
                hopwise_proto::link::hex(&r.key),
                flags.join(", ")
            ));
        }
        s
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.relays.iter().position(|r| r.name == name)
    }
}

// ---------------------------------------------------------------------------
// Shared sections

/// `[link]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkOptions {
    /// AEAD on every datagram (test-only: false).
    pub encrypt: bool,
    /// BackTap datagram payload budget.
    pub payload_budget: usize,
    /// SO_RCVBUF and SO_SNDBUF.
    pub socket_buffer: usize,
    pub handshake_timeout: Duration,
    pub keepalive: Duration,
    pub idle_timeout: Duration,
    /// INITs given Diffie-Hellman work per second (a token bucket holding
    /// one second's worth) before INITs need a cookie.
    pub handshakes_per_second: u32,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            encrypt: true,
            payload_budget: 1400,
            socket_buffer: 4 << 20,
            handshake_timeout: Duration::from_secs(15),
            keepalive: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            handshakes_per_second: 200,
        }
    }
}

fn link_options(t: Option<&Table>) -> R<LinkOptions> {
    let mut o = LinkOptions::default();
    let Some(t) = t else {
        return Ok(o);
    };
    let p = "link";
    known(
        t,
        p,
        &[
            "encrypt",
            "payload_budget",
            "socket_buffer",
            "handshake_timeout",
            "keepalive",
            "idle_timeout",
            "handshakes_per_second",
        ],
    )?;
    if let Some(n) = get_int(t, p, "handshakes_per_second", 1, 1_000_000)? {
        o.handshakes_per_second = n as u32;
    }
    if let Some(b) = get_bool(t, p, "encrypt")? {
        o.encrypt = b;
    }
    if let Some(b) = get_bytes(t, p, "payload_budget")? {
        if !(560..=65_000).contains(&b) {
            return err(
                "link.payload_budget",
                format!("must be 560 to 65000 bytes (one cell is 519, plus headers), got {b}"),
            );
        }
        o.payload_budget = b as usize;
    }
    if let Some(b) = get_bytes(t, p, "socket_buffer")? {
        if !((64 << 10)..=(1 << 30)).contains(&b) {
            return err(
                "link.socket_buffer",
                format!("must be 64KiB to 1GiB, got {b} bytes"),
            );
        }
        o.socket_buffer = b as usize;
    }
    if let Some(d) = get_dur_in(t, p, "handshake_timeout", TIMEOUT_RANGE)? {
        o.handshake_timeout = d;
    }
    let keepalive = get_dur_in(t, p, "keepalive", TIMEOUT_RANGE)?;
    if let Some(d) = keepalive {
        o.keepalive = d;
    }
    let idle = get_dur_in(t, p, "idle_timeout", TIMEOUT_RANGE)?;
    if let Some(d) = idle {
        o.idle_timeout = d;
    }
    if o.idle_timeout <= o.keepalive {
        // Name the key that was set: with only one of them in the file, the
        // other is its default.
        return if idle.is_some() {
            err(
                "link.idle_timeout",
                format!(
                    "must be longer than link.keepalive ({})",
                    Dur::from_nanos(o.keepalive.as_nanos() as u64)
                ),
            )
        } else {
            err(
                "link.keepalive",
                format!(
                    "must be shorter than link.idle_timeout ({} by default)",
                    Dur::from_nanos(o.idle_timeout.as_nanos() as u64)
                ),
            )
        };
    }
    Ok(o)
}

/// `[transport]`: BackTap's knobs (`docs/backtap.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transport {
    /// How long a datagram that could take another cell waits for one. The
    /// daemon packs what one wake-up produces anyway, so 0 by default.
    pub pack_delay: Duration,
    /// Eq. 1 thresholds in cells. The daemon's defaults (10, 20) are larger
    /// than the paper's (2, 4): on loopback and LANs the per-hop RTT is tens of
    /// microseconds and scheduling jitter of the same order reads as
    /// queueing, which pins windows of 2 to 4 cells at one or two cells.
    pub alpha: u32,
    pub beta: u32,
    /// Vegas slow start instead of +1 cell per round.
    pub slow_start: bool,
    pub max_window: u32,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            pack_delay: Duration::ZERO,
            alpha: 10,
            beta: 20,
            slow_start: false,
            max_window: 10_000,
        }
    }
}

fn transport(t: Option<&Table>) -> R<Transport> {
    let mut o = Transport::default();
    let Some(t) = t else {
        return Ok(o);
    };
    let p = "transport";
    known(
        t,
        p,
        &["pack_delay", "alpha", "beta", "startup", "max_window"],
    )?;
    if let Some(d) = get_dur_in(t, p, "pack_delay", PACK_DELAY_RANGE)? {
        o.pack_delay = d;
    }
    if let Some(a) = get_int(t, p, "alpha", 1, 100_000)? {
        o.alpha = a as u32;
    }
    if let Some(b) = get_int(t, p, "beta", 1, 100_000)? {
        o.beta = b as u32;
    }
    if o.beta < o.alpha {
        return err("transport.beta", "must not be below transport.alpha");
    }
    match get_str(t, p, "startup")? {
        None | Some("linear") => {}
        Some("slow-start") => o.slow_start = true,
        Some(s) => {
            return err(
                "transport.startup",
                format!("`{s}`: use \"linear\" or \"slow-start\""),
            )
        }
    }
    if let Some(w) = get_int(t, p, "max_window", 1, 1_000_000)? {
        o.max_window = w as u32;
    }
    Ok(o)
}

/// `[limits]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Cells buffered per circuit and direction (BackTap `circuit_limit`).
    pub circuit_queue: u32,
    pub max_circuits: usize,
    /// Circuits one client link may have at once
    /// (`NodeConfig::max_circuits_per_client`).
    pub max_circuits_per_client: usize,
    pub max_streams: usize,
    /// Per-stream window in bytes.
    pub stream_window: u32,
    pub max_clients: usize,
    /// Cells all circuits together may hold; above it the largest are torn
    /// down (`NodeConfig::max_queued_cells`).
    pub max_queued_cells: usize,
    /// Bytes all streams may buffer together; above it the largest are
    /// reset (`NodeConfig::max_stream_bytes`).
    pub max_stream_buffers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            circuit_queue: 1000,
            max_circuits: 10_000,
            max_circuits_per_client: 1000,
            max_streams: 1024,
            stream_window: 1 << 20,
            max_clients: 10_000,
            max_queued_cells: 1 << 20,
            max_stream_buffers: 512 << 20,
        }
    }
}

fn limits(t: Option<&Table>) -> R<Limits> {
    let mut o = Limits::default();
    let Some(t) = t else {
        return Ok(o);
    };
    let p = "limits";
    known(
        t,
        p,
        &[
            "circuit_queue",
            "max_circuits",
            "max_circuits_per_client",
            "max_streams",
            "stream_window",
            "max_clients",
            "max_queued_cells",
            "max_stream_buffers",
        ],
    )?;
    if let Some(n) = get_int(t, p, "circuit_queue", 4, 1_000_000)? {
        o.circuit_queue = n as u32;
    }
    if let Some(n) = get_int(t, p, "max_circuits", 1, 10_000_000)? {
        o.max_circuits = n as usize;
    }
    if let Some(n) = get_int(t, p, "max_circuits_per_client", 1, 10_000_000)? {
        o.max_circuits_per_client = n as usize;
    }
    if let Some(n) = get_int(t, p, "max_streams", 1, 65_535)? {
        o.max_streams = n as usize;
    }
    if let Some(n) = get_bytes(t, p, "stream_window")? {
        if !(4096..=1 << 30).contains(&n) {
            return err("limits.stream_window", "must be 4KiB to 1GiB");
        }
        o.stream_window = n as u32;
    }
    if let Some(n) = get_int(t, p, "max_clients", 1, 10_000_000)? {
        o.max_clients = n as usize;
    }
    if let Some(n) = get_int(t, p, "max_queued_cells", 1000, 1 << 40)? {
        o.max_queued_cells = n as usize;
    }
    if let Some(n) = get_bytes(t, p, "max_stream_buffers")? {
        if !((1 << 20)..=1 << 40).contains(&n) {
            return err("limits.max_stream_buffers", "must be 1MiB to 1TiB");
        }
        o.max_stream_buffers = n as usize;
    }
    Ok(o)
}

/// One `[emulation.PEER]` section: what happens to datagrams sent to PEER.
#[derive(Clone, Debug, PartialEq)]
pub struct Emulation {
    pub delay: Duration,
    /// Probability of dropping a datagram.
    pub loss: f64,
    /// Bytes per second; `None` is unlimited.
    pub rate: Option<u64>,
    /// Bytes waiting for the rate limit before tail drop.
    pub queue: u64,
    pub seed: u64,
}

impl Default for Emulation {
    fn default() -> Self {
        Emulation {
            delay: Duration::ZERO,
            loss: 0.0,
            rate: None,
            queue: 1 << 20,
            seed: 1,
        }
    }
}

/// Which peers an emulation section applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerSel {
    /// `"*"`: every peer (relays and clients) without a section of its own.
    All,
    Addr(SocketAddr),
}

/// How a config file writes the section `[emulation.NAME]`.
fn emulation_section(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
    {
        format!("[emulation.{name}]")
    } else {
        format!("[emulation.{name:?}]")
    }
}

fn emulation(t: Option<&Table>, dir: &Directory) -> R<Vec<(PeerSel, Emulation)>> {
    let mut out = Vec::new();
    let Some(t) = t else {
        return Ok(out);
    };
    // The section names, in the order of `out`.
    let mut names: Vec<&str> = Vec::new();
    for (name, v) in t {
        let p = format!("emulation.{name}");
        let Value::Table(e) = v else {
            return err(
                &p,
                "expected a table: [emulation.PEER] with delay, loss, rate, queue",
            );
        };
        let sel = if name == "*" {
            PeerSel::All
        } else if let Some(i) = dir.find(name) {
            PeerSel::Addr(dir.relays[i].address)
        } else if let Ok(a) = name.parse::<SocketAddr>() {
            PeerSel::Addr(a)
        } else {
            let names: Vec<&str> = dir.relays.iter().map(|r| r.name.as_str()).collect();
            return err(
                &p,
                format!(
                    "`{name}` is not a relay of the directory, an address, or \"*\"{}",
                    did_you_mean(name, &names)
                ),
            );
        };
        if let Some(i) = out.iter().position(|(s, _)| *s == sel) {
            let PeerSel::Addr(a) = sel else {
                unreachable!("one \"*\" key per table");
            };
            return err(
                &p,
                format!(
                    "{} and {} are the same peer ({a}); give each peer one section",
                    emulation_section(names[i]),
                    emulation_section(name)
                ),
            );
        }
        known(e, &p, &["delay", "loss", "rate", "queue", "seed"])?;
        let mut em = Emulation::default();
        if let Some(d) = get_dur_in(e, &p, "delay", EMULATION_DELAY_RANGE)? {
            em.delay = d;
        }
        if let Some(l) = get_fraction(e, &p, "loss")? {
            em.loss = l;
        }
        em.rate = get_rate(e, &p, "rate")?;
        if let Some(q) = get_bytes(e, &p, "queue")? {
            if !(1500..=1 << 30).contains(&q) {
                return err(
                    &at(&p, "queue"),
                    format!("must be 1500 bytes (one datagram) to 1GiB, got {q} bytes"),
                );
            }
            if em.rate.is_none() {
                return err(
                    &at(&p, "queue"),
                    "has no effect without rate (it holds what waits for the rate limit); set rate, or leave queue out",
                );
            }
            em.queue = q;
        }
        if let Some(s) = get_int(e, &p, "seed", 0, i64::MAX as u64)? {
            em.seed = s;
        }
        out.push((sel, em));
        names.push(name);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Relay

/// `[exit]`: whether this relay is an exit, and its policy.
#[derive(Clone, Debug, PartialEq)]
pub struct ExitOptions {
    pub enabled: bool,
    pub policy: ExitPolicy,
    pub connect_timeout: Duration,
}

impl Default for ExitOptions {
    fn default() -> Self {
        ExitOptions {
            enabled: false,
            policy: ExitPolicy::default(),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// `hopwise relay --config FILE`.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayConfig {
    pub name: String,
    /// UDP address to bind.
    pub listen: SocketAddr,
    pub key_file: PathBuf,
    pub directory: Directory,
    pub accept_clients: bool,
    pub exit: ExitOptions,
    /// Token bucket (BandwidthRate/BandwidthBurst).
    pub bandwidth: Option<BucketConfig>,
    pub limits: Limits,
    /// Prometheus endpoint (loopback only); `None` is off.
    pub metrics: Option<SocketAddr>,
    pub link: LinkOptions,
    pub transport: Transport,
    pub emulation: Vec<(PeerSel, Emulation)>,
    /// The file it came from, for messages.
    pub origin: String,
}

impl RelayConfig {
    /// A relay with every default.
    pub fn new(name: &str, listen: SocketAddr, key_file: PathBuf, directory: Directory) -> Self {
        RelayConfig {
            name: name.to_string(),
            listen,
            key_file,
            directory,
            accept_clients: true,
            exit: ExitOptions::default(),
            bandwidth: None,
            limits: Limits::default(),
            metrics: None,
            link: LinkOptions::default(),
            transport: Transport::default(),
            emulation: Vec::new(),
            origin: format!("relay {name}"),
        }
    }

    pub fn load(path: &Path) -> Result<RelayConfig, ConfigError> {
        let text = read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        RelayConfig::parse(&text, &file, base)
    }

    /// Only the `key_file` of a relay config, resolved like `load` does,
    /// without reading the directory: `hopwise relay --show-key` prints a
    /// new relay's key before there is a directory to list it in.
    /// What a relay with this configuration and public key `me` will do
    /// that its operator may not expect, for warnings at start: its
    /// directory entry disagrees with `listen`, `[exit] enabled` or
    /// `accept_clients`, or is missing; link encryption is off. The relay
    /// still runs.
    pub fn start_warnings(&self, me: &[u8; 32]) -> Vec<String> {
        let mut w = Vec::new();
        match self.directory.relays.iter().find(|r| &r.key == me) {
            Some(e) => {
                if e.address != self.listen && !self.listen.ip().is_unspecified() {
                    w.push(format!(
                        "this relay's address in the directory, {}, differs from `listen` = {}",
                        e.address, self.listen
                    ));
                }
                if e.exit != self.exit.enabled {
                    w.push(format!(
                        "the directory's `exit` flag of {} differs from [exit] enabled = {}",
                        e.name, self.exit.enabled
                    ));
                }
                if e.guard && !self.accept_clients {
                    w.push(format!(
                        "the directory flags {} as a guard, but accept_clients = false: proxies that pick it as their entry are refused",
                        e.name
                    ));
                }
            }
            None => w.push(format!(
                "this relay's key ({}, relay `{}`) is not in the directory: no circuit can be extended to it",
                hopwise_proto::link::hex(me),
                self.name
            )),
        }
        if !self.link.encrypt {
            w.push(
                "link encryption is OFF (test-only): datagrams are neither encrypted nor authenticated"
                    .into(),
            );
        }
        w
    }

    pub fn load_key_file(path: &Path) -> Result<PathBuf, ConfigError> {
        let text = read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        let t = parse_toml(&text, &file)?;
        let key_file = get_path(&t, "key_file")
            .map_err(|(k, m)| ConfigError::new(&file, k, m))?
            .ok_or_else(|| {
                ConfigError::new(
                    &file,
                    "key_file",
                    "missing (where the relay's static key lives; created on first start)",
                )
            })?;
        Ok(resolve(base, &key_file))
    }

    /// Parses a relay file; relative paths are relative to `base`.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<RelayConfig, ConfigError> {
        let t = parse_toml(text, file)?;
        let e = |(k, m): (String, String)| ConfigError::new(file, k, m);
        known(
            &t,
            "",
            &[
                "name",
                "listen",
                "key_file",
                "directory",
                "accept_clients",
                "exit",
                "bandwidth",
                "limits",
                "metrics",
                "link",
                "transport",
                "emulation",
            ],
        )
        .map_err(e)?;
        let name = get_name(&t, "", "name", "the relay's name in the directory")
            .map_err(e)?
            .to_string();
        let listen = get_addr(&t, "", "listen").map_err(e)?.ok_or_else(|| {
            ConfigError::new(
                file,
                "listen",
                "missing (the UDP address to bind, e.g. \"127.0.0.1:9001\")",
            )
        })?;
        let key_file = resolve(
            base,
            get_path(&t, "key_file")
                .map_err(e)?
                .as_deref()
                .ok_or_else(|| {
                    ConfigError::new(
                        file,
                        "key_file",
                        "missing (where the relay's static key lives; created on first start)",
                    )
                })?,
        );
        let (_, directory) = directory_key(&t, file, base)?;
        let mut cfg = RelayConfig::new(&name, listen, key_file, directory);
        cfg.origin = file.to_string();
        cfg.accept_clients = get_bool(&t, "", "accept_clients")
            .map_err(e)?
            .unwrap_or(true);
        let exit = get_table(&t, "", "exit").map_err(e)?;
        cfg.exit = exit_options(exit).map_err(e)?;
        if let Some(w) = disabled_exit_warning(exit, cfg.exit.enabled) {
            tracing::warn!("{file}: {w}");
        }
        cfg.bandwidth = bandwidth(get_table(&t, "", "bandwidth").map_err(e)?).map_err(e)?;
        cfg.limits = limits(get_table(&t, "", "limits").map_err(e)?).map_err(e)?;
        cfg.link = link_options(get_table(&t, "", "link").map_err(e)?).map_err(e)?;
        cfg.transport = transport(get_table(&t, "", "transport").map_err(e)?).map_err(e)?;
        cfg.emulation =
            emulation(get_table(&t, "", "emulation").map_err(e)?, &cfg.directory).map_err(e)?;
        if let Some(a) = metrics(get_table(&t, "", "metrics").map_err(e)?).map_err(e)? {
            cfg.metrics = Some(a);
        }
        Ok(cfg)
    }
}

fn exit_options(t: Option<&Table>) -> R<ExitOptions> {
    let mut o = ExitOptions::default();
    let Some(t) = t else {
        return Ok(o);
    };
    let p = "exit";
    known(
        t,
        p,
        &[
            "enabled",
            "policy",
            "reject_private",
            "default",
            "connect_timeout",
        ],
    )?;
    o.enabled = get_bool(t, p, "enabled")?.unwrap_or(false);
    if let Some(rules) = get_str_list(t, p, "policy")? {
        for (i, r) in rules.iter().enumerate() {
            match Rule::parse(r) {
                Ok(rule) => o.policy.rules.push(rule),
                Err(e) => return err(&format!("exit.policy[{i}]"), e.0),
            }
        }
    }
    if let Some(b) = get_bool(t, p, "reject_private")? {
        o.policy.reject_private = b;
    }
    if let Some((i, why)) = o.policy.unreachable_rule() {
        let rule = o.policy.rules[i];
        return err(
            &format!("exit.policy[{i}]"),
            match why {
                Unreachable::AfterCatchAll(j) => format!(
                    "`{rule}` can never match: exit.policy[{j}] `{}` matches every address and port first (remove the rules after it)",
                    o.policy.rules[j]
                ),
                Unreachable::PrivateRejected(range) => format!(
                    "`{rule}` can never match: reject_private (true by default) refuses {} before the rules; \
                     to reach it set reject_private = false, and put \"reject private:*\" right after \
                     the rules for private ranges (before any other rule) to keep refusing the rest",
                    match range {
                        AddrPattern::Private => "the private ranges".to_string(),
                        r => format!("{r} (a private range)"),
                    }
                ),
            },
        );
    }
    if let Some(d) = get_str(t, p, "default")? {
        o.policy.default = match d {
            "accept" => Verdict::Accept,
            "reject" => Verdict::Reject,
            d => {
                return err(
                    "exit.default",
                    format!("`{d}`: use \"accept\" or \"reject\""),
                )
            }
        };
    }
    if let Some(d) = get_dur_in(t, p, "connect_timeout", TIMEOUT_RANGE)? {
        o.connect_timeout = d;
    }
    Ok(o)
}

/// A warning for `[exit]` keys that have no effect because the relay is
/// not an exit.
fn disabled_exit_warning(t: Option<&Table>, enabled: bool) -> Option<String> {
    let t = t?;
    let unused: Vec<String> = t
        .keys()
        .filter(|k| *k != "enabled")
        .map(|k| format!("exit.{k}"))
        .collect();
    if enabled || unused.is_empty() {
        return None;
    }
    Some(format!(
        "this relay is not an exit (exit.enabled is false), so {} {} no effect (set enabled = true to make it one)",
        unused.join(", "),
        if unused.len() == 1 { "has" } else { "have" }
    ))
}

fn bandwidth(t: Option<&Table>) -> R<Option<BucketConfig>> {
    let Some(t) = t else {
        return Ok(None);
    };
    let p = "bandwidth";
    known(t, p, &["rate", "burst", "refill"])?;
    let Some(rate) = get_rate(t, p, "rate")? else {
        return err("bandwidth.rate", "missing (e.g. \"10MB/s\")");
    };
    let burst = get_bytes(t, p, "burst")?.unwrap_or(rate);
    if burst < 519 {
        return err("bandwidth.burst", "must hold at least one cell (519 bytes)");
    }
    let refill = match get_str(t, p, "refill")? {
        None => Refill::Periodic(Dur::from_millis(1)),
        Some("on-demand") => Refill::OnDemand {
            reenable: Dur::from_millis(1),
        },
        Some(s) => match parse_duration(s) {
            Ok(d) if d >= Dur::from_micros(100) && d <= Dur::from_secs(1) => Refill::Periodic(d),
            Ok(_) => {
                return err(
                    "bandwidth.refill",
                    format!("must be 100us to 1s (or \"on-demand\"), got `{s}`"),
                )
            }
            Err(e) => return err("bandwidth.refill", format!("{} (or \"on-demand\")", e.0)),
        },
    };
    Ok(Some(BucketConfig {
        rate,
        burst,
        refill,
    }))
}

// ---------------------------------------------------------------------------
// Proxy

/// `hopwise proxy --config FILE`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProxyConfig {
    /// SOCKS5 listener (127.0.0.1:1080 by default).
    pub socks: SocketAddr,
    /// UDP address to bind (an ephemeral port on every address by default).
    pub listen: SocketAddr,
    pub directory: Directory,
    /// Relay names, entry first; `None`: a random guard, middle and exit.
    pub path: Option<Vec<String>>,
    /// Static key file; `None`: a fresh key every start (unlinkable).
    pub key_file: Option<PathBuf>,
    /// How long a SOCKS request waits for its stream.
    pub connect_timeout: Duration,
    /// SOCKS connections served at once; more are closed when accepted.
    pub socks_max_connections: usize,
    /// How long a SOCKS client has for its greeting and request, in all.
    pub socks_handshake_timeout: Duration,
    pub limits: Limits,
    pub link: LinkOptions,
    pub transport: Transport,
    pub emulation: Vec<(PeerSel, Emulation)>,
    pub metrics: Option<SocketAddr>,
    pub origin: String,
}

impl ProxyConfig {
    /// Checks `path` as [`ProxyConfig::load`] does, for a config built or
    /// changed in code.
    pub fn check(&self) -> Result<(), ConfigError> {
        check_path(&self.directory, "the directory", self.path.as_deref())
            .map_err(|(k, m)| ConfigError::new(&self.origin, k, m))
    }

    pub fn new(directory: Directory) -> ProxyConfig {
        ProxyConfig {
            socks: SocketAddr::from(([127, 0, 0, 1], 1080)),
            // Any address: the links go to relays elsewhere, and a socket
            // bound to loopback cannot send to them.
            listen: SocketAddr::from(([0, 0, 0, 0], 0)),
            directory,
            path: None,
            key_file: None,
            connect_timeout: Duration::from_secs(30),
            socks_max_connections: 1000,
            socks_handshake_timeout: Duration::from_secs(10),
            limits: Limits::default(),
            link: LinkOptions::default(),
            transport: Transport::default(),
            emulation: Vec::new(),
            metrics: None,
            origin: "proxy".to_string(),
        }
    }

    pub fn load(path: &Path) -> Result<ProxyConfig, ConfigError> {
        let text = read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        ProxyConfig::parse(&text, &file, base)
    }

    pub fn parse(text: &str, file: &str, base: &Path) -> Result<ProxyConfig, ConfigError> {
        let t = parse_toml(text, file)?;
        let e = |(k, m): (String, String)| ConfigError::new(file, k, m);
        known(
            &t,
            "",
            &[
                "socks",
                "listen",
                "directory",
                "path",
                "key_file",
                "connect_timeout",
                "socks_max_connections",
                "socks_handshake_timeout",
                "limits",
                "link",
                "transport",
                "emulation",
                "metrics",
            ],
        )
        .map_err(e)?;
        let (dir_path, directory) = directory_key(&t, file, base)?;
        let mut cfg = ProxyConfig::new(directory);
        cfg.origin = file.to_string();
        if let Some(a) = get_addr(&t, "", "socks").map_err(e)? {
            if !is_local(a.ip()) {
                tracing::warn!("{file}: socks = {a} is not a loopback address: anyone who can reach it can use the proxy");
            }
            cfg.socks = a;
        }
        if let Some(a) = get_addr(&t, "", "listen").map_err(e)? {
            cfg.listen = a;
        }
        cfg.path = get_str_list(&t, "", "path").map_err(e)?;
        let desc = format!("the directory {}", dir_path.display());
        check_path(&cfg.directory, &desc, cfg.path.as_deref()).map_err(e)?;
        for w in path_warnings(&cfg.directory, &desc, cfg.path.as_deref()) {
            tracing::warn!("{file}: {w}");
        }
        cfg.key_file = get_path(&t, "key_file")
            .map_err(e)?
            .map(|k| resolve(base, &k));
        if let Some(d) = get_dur_in(&t, "", "connect_timeout", TIMEOUT_RANGE).map_err(e)? {
            cfg.connect_timeout = d;
        }
        if let Some(n) = get_int(&t, "", "socks_max_connections", 1, 1_000_000).map_err(e)? {
            cfg.socks_max_connections = n as usize;
        }
        if let Some(d) = get_dur_in(&t, "", "socks_handshake_timeout", TIMEOUT_RANGE).map_err(e)? {
            cfg.socks_handshake_timeout = d;
        }
        cfg.limits = limits(get_table(&t, "", "limits").map_err(e)?).map_err(e)?;
        cfg.link = link_options(get_table(&t, "", "link").map_err(e)?).map_err(e)?;
        cfg.transport = transport(get_table(&t, "", "transport").map_err(e)?).map_err(e)?;
        cfg.emulation =
            emulation(get_table(&t, "", "emulation").map_err(e)?, &cfg.directory).map_err(e)?;
        if let Some(a) = metrics(get_table(&t, "", "metrics").map_err(e)?).map_err(e)? {
            cfg.metrics = Some(a);
        }
        Ok(cfg)
    }
}

/// What a proxy's `path` (checked by `check_path`) will do that its
/// operator may not expect: random paths shorter than three relays, or not
/// starting at a relay flagged `guard`; an explicit path whose entry has no
/// `guard` flag. The proxy still runs.
fn path_warnings(dir: &Directory, dir_desc: &str, path: Option<&[String]>) -> Vec<String> {
    let mut w = Vec::new();
    match path {
        None => {
            let n = dir.relays.len();
            if n < 3 {
                w.push(format!(
                    "random paths will have {n} relay{} ({dir_desc} lists {n}; a full path is a guard, a middle and an exit)",
                    if n == 1 { "" } else { "s" }
                ));
            }
            // The exit is chosen first, then a guard other than it
            // (`choose_path`), or any relay if there is none.
            let guards: Vec<_> = dir.relays.iter().filter(|r| r.guard).collect();
            let lone_exit_guard = guards.len() == 1 && guards[0].exit;
            if n > 1 && (guards.is_empty() || lone_exit_guard) {
                w.push(format!(
                    "{dir_desc} flags {} as a guard, so random paths {}start at any relay (add \"guard\" to the flags of the relays that may be entries)",
                    if guards.is_empty() { "no relay".to_string() } else { format!("only the exit `{}`", guards[0].name) },
                    if guards.is_empty() { "" } else { "that end there " },
                ));
            }
        }
        Some(path) if path.len() > 1 => {
            if dir.find(&path[0]).is_some_and(|i| !dir.relays[i].guard) {
                w.push(format!(
                    "path[0]: `{}` has no \"guard\" flag in {dir_desc}, but it is this path's entry",
                    path[0]
                ));
            }
        }
        Some(_) => {}
    }
    w
}

/// The most relays a path may name (the entry and `MAX_HOPS` more).
pub const MAX_PATH: usize = hopwise_proto::circuit::control::MAX_HOPS + 1;

/// Checks that a proxy's `path` can make a circuit: 1 to [`MAX_PATH`]
/// relays of the directory (`dir_desc`, "the directory FILE", names it in
/// messages), none twice, the last one flagged `exit`. A relay refuses to be
/// the last hop unless it is an exit, so any other path would fail at every
/// attempt. One relay is a valid path: with no onion encryption every relay
/// of a circuit reads every cell anyway (`docs/relay.md`). Without a path
/// (a random one) the directory must flag at least one exit.
fn check_path(dir: &Directory, dir_desc: &str, path: Option<&[String]>) -> R<()> {
    let Some(path) = path else {
        if !dir.relays.iter().any(|r| r.exit) {
            return err(
                "directory",
                format!(
                    "{dir_desc} flags no relay as an exit, so no random path can end at one \
                     (add \"exit\" to the flags of the relays that are exits)"
                ),
            );
        }
        return Ok(());
    };
    if path.is_empty() {
        return err("path", "empty (leave it out for a random path)");
    }
    if path.len() > MAX_PATH {
        return err(
            "path",
            format!("at most {MAX_PATH} relays, got {}", path.len()),
        );
    }
    let names: Vec<&str> = dir.relays.iter().map(|r| r.name.as_str()).collect();
    for (i, n) in path.iter().enumerate() {
        if dir.find(n).is_none() {
            return err(
                &format!("path[{i}]"),
                format!(
                    "unknown relay `{n}`{} ({dir_desc} lists: {})",
                    did_you_mean(n, &names),
                    names.join(", ")
                ),
            );
        }
        if let Some(j) = path[..i].iter().position(|m| m == n) {
            return err(
                &format!("path[{i}]"),
                format!("`{n}` is already path[{j}]; a circuit passes through each relay once"),
            );
        }
    }
    let last = path.len() - 1;
    let exit = &path[last];
    if !dir.relays.iter().any(|r| &r.name == exit && r.exit) {
        let exits: Vec<&str> = dir
            .relays
            .iter()
            .filter(|r| r.exit)
            .map(|r| r.name.as_str())
            .collect();
        let which = if exits.is_empty() {
            format!("{dir_desc} flags no relay as an exit")
        } else {
            format!("{dir_desc} lists these exits: {}", exits.join(", "))
        };
        return err(
            &format!("path[{last}]"),
            format!(
                "`{exit}` is not an exit (its directory entry has no \"exit\" flag), and the last relay of a path must be one ({which})"
            ),
        );
    }
    Ok(())
}

fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIR: &str = r#"
[[relay]]
name = "r1"
address = "127.0.0.1:9001"
key = "0101010101010101010101010101010101010101010101010101010101010101"
flags = ["guard"]

[[relay]]
name = "r2"
address = "127.0.0.1:9002"
key = "0202020202020202020202020202020202020202020202020202020202020202"
flags = ["exit"]
"#;

    fn with_dir(f: impl FnOnce(&Path)) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("dir.toml"), DIR).unwrap();
        f(d.path());
    }

    #[test]
    fn paths_that_skip_guards_or_hops_are_warned_about() {
        let base = Directory::parse(DIR, "dir.toml").unwrap();
        let d = "the directory dir.toml";
        let w = |dir: &Directory, path: Option<&[&str]>| {
            let path: Option<Vec<String>> = path.map(|p| p.iter().map(|s| s.to_string()).collect());
            path_warnings(dir, d, path.as_deref())
        };
        // r1 guard, r2 exit: random paths have two relays.
        assert_eq!(
            w(&base, None),
            vec!["random paths will have 2 relays (the directory dir.toml lists 2; a full path is a guard, a middle and an exit)"]
        );
        let mut third = base.clone();
        let mut r3 = third.relays[0].clone();
        r3.name = "r3".into();
        r3.guard = false;
        third.relays.push(r3);
        assert!(w(&third, None).is_empty());
        // No guard at all; the only guard is the exit.
        let mut none = third.clone();
        none.relays[0].guard = false;
        let got = w(&none, None);
        assert_eq!(got.len(), 1);
        assert!(
            got[0].contains("flags no relay as a guard, so random paths start at any relay"),
            "{got:?}"
        );
        let mut lone = none.clone();
        lone.relays[1].guard = true;
        let got = w(&lone, None);
        assert!(
            got[0].contains(
                "only the exit `r2` as a guard, so random paths that end there start at any relay"
            ),
            "{got:?}"
        );
        // An explicit path: its entry should be a guard.
        assert!(w(&base, Some(&["r1", "r2"])).is_empty());
        assert!(w(&base, Some(&["r2"])).is_empty());
        let got = w(&none, Some(&["r1", "r2"]));
        assert_eq!(
            got,
            vec!["path[0]: `r1` has no \"guard\" flag in the directory dir.toml, but it is this path's entry"]
        );
    }

    #[test]
    fn a_relay_is_warned_where_its_directory_entry_disagrees() {
        with_dir(|base| {
            let r1 = [1u8; 32];
            let cfg = |extra: &str| {
                let text = format!(
                    "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\n{extra}"
                );
                RelayConfig::parse(&text, "relay.toml", base).unwrap()
            };
            // r1 as the directory has it: a guard, not an exit, at 9001.
            assert!(cfg("").start_warnings(&r1).is_empty());
            // Unspecified listen addresses match any directory address.
            let mut any = cfg("");
            any.listen = "0.0.0.0:9001".parse().unwrap();
            assert!(any.start_warnings(&r1).is_empty());
            let mut moved = cfg("");
            moved.listen = "127.0.0.1:9009".parse().unwrap();
            let w = moved.start_warnings(&r1);
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].contains("127.0.0.1:9001, differs from `listen` = 127.0.0.1:9009"));
            let w = cfg("[exit]\nenabled = true\n").start_warnings(&r1);
            assert_eq!(
                w,
                vec!["the directory's `exit` flag of r1 differs from [exit] enabled = true"]
            );
            let w = cfg("accept_clients = false\n").start_warnings(&r1);
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].contains("flags r1 as a guard, but accept_clients = false"));
            let w = cfg("").start_warnings(&[7u8; 32]);
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(
                w[0].contains("relay `r1`) is not in the directory"),
                "{w:?}"
            );
            assert!(w[0].contains(&"07".repeat(32)), "{w:?}");
            let w = cfg("[link]\nencrypt = false\n").start_warnings(&r1);
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].starts_with("link encryption is OFF"));
        });
    }

    #[test]
    fn a_file_that_is_not_text_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("relay.toml");
        std::fs::write(&p, b"name = \"r1\"\n\xff\xfe").unwrap();
        let e = RelayConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("is not UTF-8 text (byte 12 is not)"), "{e}");
    }

    #[test]
    fn directory_round_trips() {
        let d = Directory::parse(DIR, "dir.toml").unwrap();
        assert_eq!(d.relays.len(), 2);
        assert!(d.relays[0].guard && d.relays[1].exit);
        assert_eq!(Directory::parse(&d.to_toml(), "x").unwrap(), d);
    }

    #[test]
    fn relay_errors_name_file_key_and_problem() {
        with_dir(|base| {
            let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\n";
            let c = RelayConfig::parse(ok, "relay.toml", base).unwrap();
            assert_eq!(c.key_file, base.join("r1.key"));
            let cases = [
                (
                    "[bandwidth]\nrate = \"10 MBs\"\n",
                    "relay.toml: bandwidth.rate: ",
                ),
                (
                    "[bandwidth]\nrate = 10\n",
                    "relay.toml: bandwidth.rate: rates are strings",
                ),
                (
                    "listn = 3\n",
                    "relay.toml: listn: unknown key; did you mean `listen`?",
                ),
                (
                    "[exit]\npolicy = [\"allow *:*\"]\n",
                    "relay.toml: exit.policy[0]: `allow *:*`: unknown verb",
                ),
                (
                    "[metrics]\nlisten = \"0.0.0.0:9100\"\n",
                    "relay.toml: metrics.listen: 0.0.0.0:9100 is not a loopback",
                ),
                (
                    "[emulation.r9]\ndelay = \"1ms\"\n",
                    "relay.toml: emulation.r9: `r9` is not a relay",
                ),
                (
                    "[emulation.r2]\nloss = 2.0\n",
                    "relay.toml: emulation.r2.loss: must be at least 0 and below 1 (a loss of 1 drops every datagram, so no link could come up), got 2",
                ),
                (
                    "[emulation.r2]\nloss = 1.0\n",
                    "relay.toml: emulation.r2.loss: must be at least 0 and below 1 (a loss of 1 drops every datagram, so no link could come up), got 1",
                ),
                (
                    "[emulation.r2]\nloss = \"100%\"\n",
                    "relay.toml: emulation.r2.loss: must be at least 0 and below 1",
                ),
                (
                    "[emulation.r2]\nloss = -0.01\n",
                    "relay.toml: emulation.r2.loss: must be at least 0 and below 1",
                ),
                (
                    "[emulation.r2]\nqueue = \"64KiB\"\n",
                    "relay.toml: emulation.r2.queue: has no effect without rate (it holds what waits for the rate limit); set rate, or leave queue out",
                ),
                (
                    "[emulation.r2]\ndelay = \"1ms\"\n[emulation.\"127.0.0.1:9002\"]\nloss = 0.1\n",
                    "relay.toml: emulation.r2: [emulation.\"127.0.0.1:9002\"] and [emulation.r2] are the same peer (127.0.0.1:9002); give each peer one section",
                ),
                (
                    "[limits]\ncircuit_queue = 0\n",
                    "relay.toml: limits.circuit_queue: must be 4 to",
                ),
                (
                    "[limits]\nmax_queued_cells = 10\n",
                    "relay.toml: limits.max_queued_cells: must be 1000 to 1099511627776, got 10",
                ),
                (
                    "[limits]\nmax_circuits_per_client = 0\n",
                    "relay.toml: limits.max_circuits_per_client: must be 1 to 10000000, got 0",
                ),
                (
                    "[limits]\nmax_stream_buffers = \"1KiB\"\n",
                    "relay.toml: limits.max_stream_buffers: must be 1MiB to 1TiB",
                ),
            ];
            for (extra, want) in cases {
                let text = format!("{ok}{extra}");
                let e = RelayConfig::parse(&text, "relay.toml", base).unwrap_err();
                assert!(e.to_string().starts_with(want), "{extra:?}: got {e}");
            }
            let text = format!(
                "{ok}[limits]\nmax_circuits_per_client = 8\nmax_stream_buffers = \"64MiB\"\n"
            );
            let c = RelayConfig::parse(&text, "relay.toml", base).unwrap();
            assert_eq!(c.limits.max_circuits_per_client, 8);
            assert_eq!(c.limits.max_stream_buffers, 64 << 20);
            assert_eq!(c.limits.max_circuits, Limits::default().max_circuits);
            let e = RelayConfig::parse("name = \"r1\"\n", "relay.toml", base).unwrap_err();
            assert_eq!(e.key, "listen");
            let e = RelayConfig::parse("name = [\n", "relay.toml", base).unwrap_err();
            assert!(e.msg.contains("TOML syntax error"), "{e}");
            let bad_dir = format!(
                "{}directory = \"missing.toml\"\n",
                &ok[..ok.find("directory").unwrap()]
            );
            let e = RelayConfig::parse(&bad_dir, "relay.toml", base).unwrap_err();
            assert!(e.to_string().contains("missing.toml: cannot read"), "{e}");
        });
    }

    #[test]
    fn exit_rules_that_can_never_match_are_refused() {
        with_dir(|base| {
            let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\n[exit]\nenabled = true\n";
            for (extra, want) in [
                (
                    "policy = [\"accept *:*\", \"reject *:18080\"]\n",
                    "relay.toml: exit.policy[1]: `reject *:18080` can never match: exit.policy[0] `accept *:*` matches every address and port first (remove the rules after it)",
                ),
                (
                    "policy = [\"reject *:25\", \"reject *:0-65535\", \"accept 1.2.3.4/32:80\"]\nreject_private = false\n",
                    "relay.toml: exit.policy[2]: `accept 1.2.3.4/32:80` can never match: exit.policy[1] `reject *:*` matches every address and port first (remove the rules after it)",
                ),
                (
                    "policy = [\"accept 127.0.0.1/32:*\"]\n",
                    "relay.toml: exit.policy[0]: `accept 127.0.0.1/32:*` can never match: reject_private (true by default) refuses 127.0.0.0/8 (a private range) before the rules; to reach it set reject_private = false, and put \"reject private:*\" right after the rules for private ranges (before any other rule) to keep refusing the rest",
                ),
                (
                    "policy = [\"accept private:22\"]\nreject_private = true\n",
                    "relay.toml: exit.policy[0]: `accept private:22` can never match: reject_private (true by default) refuses the private ranges before the rules; to reach it set reject_private = false, and put \"reject private:*\" right after the rules for private ranges (before any other rule) to keep refusing the rest",
                ),
                (
                    "policy = [\"accept 10.0.0.1/8:*\"]\n",
                    "relay.toml: exit.policy[0]: `accept 10.0.0.1/8:*`: `10.0.0.1/8` has bits set after the /8 prefix; did you mean 10.0.0.0/8?",
                ),
            ] {
                let e = RelayConfig::parse(&format!("{ok}{extra}"), "relay.toml", base).unwrap_err();
                assert_eq!(e.to_string(), want, "{extra:?}");
            }
            // The review's policy, without its dead rule: reject_private
            // still refuses loopback and link-local addresses first.
            let ip = |s: &str| s.parse::<IpAddr>().unwrap();
            let c = RelayConfig::parse(
                &format!(
                    "{ok}policy = [\"reject *:18080\", \"accept *:*\"]\ndefault = \"reject\"\n"
                ),
                "relay.toml",
                base,
            )
            .unwrap();
            assert!(!c.exit.policy.allows(ip("127.0.0.1"), 80));
            assert!(!c.exit.policy.allows(ip("169.254.169.254"), 80));
            assert!(!c.exit.policy.allows(ip("8.8.8.8"), 18080));
            assert!(c.exit.policy.allows(ip("8.8.8.8"), 80));
            // With reject_private off, a rule reaches loopback.
            let c = RelayConfig::parse(
                &format!("{ok}reject_private = false\npolicy = [\"accept 127.0.0.1/32:*\", \"reject private:*\"]\n"),
                "relay.toml",
                base,
            )
            .unwrap();
            assert!(c.exit.policy.allows(ip("127.0.0.1"), 80));
            assert!(!c.exit.policy.allows(ip("127.0.0.2"), 80));
        });
    }

    #[test]
    fn exit_keys_of_a_relay_that_is_not_an_exit_are_warned_about() {
        let table = |s: &str| s.parse::<Table>().unwrap();
        let t = table("enabled = false\npolicy = [\"reject *:25\"]\n");
        assert_eq!(
            disabled_exit_warning(Some(&t), false).as_deref(),
            Some("this relay is not an exit (exit.enabled is false), so exit.policy has no effect (set enabled = true to make it one)")
        );
        let t = table("policy = []\ndefault = \"reject\"\n");
        assert_eq!(
            disabled_exit_warning(Some(&t), false).as_deref(),
            Some("this relay is not an exit (exit.enabled is false), so exit.default, exit.policy have no effect (set enabled = true to make it one)")
        );
        assert_eq!(disabled_exit_warning(Some(&t), true), None);
        assert_eq!(
            disabled_exit_warning(Some(&table("enabled = false\n")), false),
            None
        );
        assert_eq!(disabled_exit_warning(None, false), None);
    }

    #[test]
    fn proxy_path_must_name_known_relays() {
        with_dir(|base| {
            let e = ProxyConfig::parse(
                "directory = \"dir.toml\"\npath = [\"r1\", \"r3\"]\n",
                "proxy.toml",
                base,
            )
            .unwrap_err();
            assert_eq!(e.key, "path[1]");
            assert!(
                e.msg.contains("unknown relay `r3`; did you mean `r1`?"),
                "{e}"
            );
            let c = ProxyConfig::parse(
                "directory = \"dir.toml\"\npath = [\"r1\", \"r2\"]\nsocks = \"127.0.0.1:0\"\n[emulation.\"*\"]\ndelay = \"20ms\"\nloss = \"5%\"\n",
                "proxy.toml",
                base,
            )
            .unwrap();
            assert_eq!(c.emulation[0].1.loss, 0.05);
            assert_eq!(c.emulation[0].0, PeerSel::All);
        });
    }

    #[test]
    fn durations_and_sizes_out_of_range_are_refused() {
        with_dir(|base| {
            let ok = "name = \"r1\"\nlisten = \"127.0.0.1:9001\"\nkey_file = \"r1.key\"\ndirectory = \"dir.toml\"\n";
            let cases = [
                (
                    "[link]\nhandshake_timeout = \"0s\"\n",
                    "relay.toml: link.handshake_timeout: must be positive (1ms to 1h), got `0s`",
                ),
                (
                    "[link]\nhandshake_timeout = \"2h\"\n",
                    "relay.toml: link.handshake_timeout: must be 1ms to 1h, got `2h`",
                ),
                (
                    "[exit]\nenabled = true\nconnect_timeout = \"0s\"\n",
                    "relay.toml: exit.connect_timeout: must be positive (1ms to 1h), got `0s`",
                ),
                (
                    "[link]\nkeepalive = \"0ms\"\n",
                    "relay.toml: link.keepalive: must be positive",
                ),
                (
                    "[link]\nidle_timeout = \"0.1ns\"\n",
                    "relay.toml: link.idle_timeout: must be positive",
                ),
                (
                    "[link]\nhandshakes_per_second = 0\n",
                    "relay.toml: link.handshakes_per_second: must be 1 to 1000000, got 0",
                ),
                (
                    "[link]\nidle_timeout = \"1000h\"\n",
                    "relay.toml: link.idle_timeout: must be 1ms to 1h, got `1000h`",
                ),
                // Only keepalive set, beyond the default idle_timeout (30s).
                (
                    "[link]\nkeepalive = \"40s\"\n",
                    "relay.toml: link.keepalive: must be shorter than link.idle_timeout (30s by default)",
                ),
                (
                    "[link]\nkeepalive = \"10s\"\nidle_timeout = \"10s\"\n",
                    "relay.toml: link.idle_timeout: must be longer than link.keepalive (10s)",
                ),
                (
                    "[link]\nsocket_buffer = 0\n",
                    "relay.toml: link.socket_buffer: must be 64KiB to 1GiB, got 0 bytes",
                ),
                (
                    "[transport]\npack_delay = \"1min\"\n",
                    "relay.toml: transport.pack_delay: must be 0s to 1s, got `1min`",
                ),
                (
                    "[bandwidth]\nrate = \"1MB/s\"\nrefill = \"10s\"\n",
                    "relay.toml: bandwidth.refill: must be 100us to 1s",
                ),
                (
                    "[bandwidth]\nrate = \"1MB/s\"\nrefill = \"0s\"\n",
                    "relay.toml: bandwidth.refill: must be 100us to 1s",
                ),
                (
                    "[emulation.r2]\ndelay = \"1h\"\n",
                    "relay.toml: emulation.r2.delay: must be 0s to 10s, got `1h`",
                ),
                (
                    "[emulation.r2]\nrate = \"1MB/s\"\nqueue = 0\n",
                    "relay.toml: emulation.r2.queue: must be 1500 bytes (one datagram) to 1GiB, got 0 bytes",
                ),
            ];
            for (extra, want) in cases {
                let text = format!("{ok}{extra}");
                let e = RelayConfig::parse(&text, "relay.toml", base).unwrap_err();
                assert!(e.to_string().starts_with(want), "{extra:?}: got {e}");
            }
            // The bounds themselves, and a zero where zero means "off", pass.
            let edges = "[link]\nhandshake_timeout = \"1ms\"\nkeepalive = \"1ms\"\nidle_timeout = \"1h\"\nsocket_buffer = \"64KiB\"\n[exit]\nconnect_timeout = \"1h\"\n[transport]\npack_delay = \"0s\"\n[emulation.r2]\ndelay = \"10s\"\nloss = 0.999\nrate = \"1MB/s\"\nqueue = 1500\n[emulation.\"127.0.0.1:9001\"]\nloss = 0\n";
            let c = RelayConfig::parse(&format!("{ok}{edges}"), "relay.toml", base).unwrap();
            assert_eq!(c.link.handshake_timeout, Duration::from_millis(1));
            assert_eq!(c.link.idle_timeout, Duration::from_secs(3600));
            assert_eq!(c.link.socket_buffer, 64 << 10);
            assert_eq!(c.exit.connect_timeout, Duration::from_secs(3600));
            assert_eq!(c.emulation[1].1.delay, Duration::from_secs(10));
            assert_eq!(c.emulation[1].1.loss, 0.999);
            assert_eq!(c.emulation[1].1.queue, 1500);
            // Two peers (r1's address and r2), two sections.
            assert_eq!(c.emulation.len(), 2);

            let proxy = "directory = \"dir.toml\"\n";
            let e = ProxyConfig::parse(
                &format!("{proxy}connect_timeout = \"0s\"\n"),
                "proxy.toml",
                base,
            )
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                "proxy.toml: connect_timeout: must be positive (1ms to 1h), got `0s`"
            );
            let e = ProxyConfig::parse(
                &format!("{proxy}[link]\nhandshake_timeout = \"0s\"\n"),
                "proxy.toml",
                base,
            )
            .unwrap_err();
            assert_eq!(e.key, "link.handshake_timeout");
            for (text, msg) in [
                (
                    "socks_max_connections = 0\n",
                    "proxy.toml: socks_max_connections: must be 1 to 1000000, got 0",
                ),
                (
                    "socks_handshake_timeout = \"2h\"\n",
                    "proxy.toml: socks_handshake_timeout: must be 1ms to 1h, got `2h`",
                ),
            ] {
                let e =
                    ProxyConfig::parse(&format!("{proxy}{text}"), "proxy.toml", base).unwrap_err();
                assert_eq!(e.to_string(), msg);
            }
            let c = ProxyConfig::parse(
                &format!("{proxy}socks_max_connections = 64\nsocks_handshake_timeout = \"2s\"\n"),
                "proxy.toml",
                base,
            )
            .unwrap();
            assert_eq!(c.socks_max_connections, 64);
            assert_eq!(c.socks_handshake_timeout, Duration::from_secs(2));
            let d = ProxyConfig::parse(proxy, "proxy.toml", base).unwrap();
            assert_eq!(d.socks_max_connections, 1000);
            assert_eq!(d.socks_handshake_timeout, Duration::from_secs(10));
        });
    }

    #[test]
    fn proxy_path_must_make_a_circuit() {
        with_dir(|base| {
            let parse = |path: &str| {
                ProxyConfig::parse(
                    &format!("directory = \"dir.toml\"\npath = {path}\n"),
                    "proxy.toml",
                    base,
                )
            };
            let e = parse("[\"r1\", \"r1\", \"r2\"]").unwrap_err();
            assert_eq!(e.key, "path[1]");
            assert!(
                e.msg
                    .contains("`r1` is already path[0]; a circuit passes through each relay once"),
                "{e}"
            );
            let e = parse("[\"r2\", \"r1\"]").unwrap_err();
            assert_eq!(e.key, "path[1]");
            assert!(
                e.msg.starts_with("`r1` is not an exit") && e.msg.contains("lists these exits: r2"),
                "{e}"
            );
            let e = parse("[]").unwrap_err();
            assert_eq!(e.key, "path");
            let e = parse(&format!("[{}]", ["\"r1\""; MAX_PATH + 1].join(", "))).unwrap_err();
            assert_eq!(e.to_string(), "proxy.toml: path: at most 9 relays, got 10");
            // One relay, an exit, is a circuit (entry and exit at once).
            assert_eq!(
                parse("[\"r2\"]").unwrap().path,
                Some(vec!["r2".to_string()])
            );
            // A random path needs an exit in the directory.
            std::fs::write(base.join("noexit.toml"), DIR.replace("[\"exit\"]", "[]")).unwrap();
            let e = ProxyConfig::parse("directory = \"noexit.toml\"\n", "proxy.toml", base)
                .unwrap_err();
            assert_eq!(e.key, "directory");
            assert!(
                e.msg.contains("noexit.toml flags no relay as an exit"),
                "{e}"
            );
            // A path set in code is checked as well (spawn_proxy calls this).
            let mut c = parse("[\"r1\", \"r2\"]").unwrap();
            assert!(c.check().is_ok());
            c.path = Some(vec!["r2".into(), "r2".into()]);
            let e = c.check().unwrap_err();
            assert_eq!(e.file, "proxy.toml");
            assert_eq!(e.key, "path[1]");
        });
    }

    #[test]
    fn generated_keys_are_accepted_in_the_directory() {
        for i in 0..8 {
            let key = hopwise_proto::link::Keypair::generate().public;
            let text = format!(
                "[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"{}\"\n",
                hopwise_proto::link::hex(&key)
            );
            let d = Directory::parse(&text, "d.toml").unwrap_or_else(|e| panic!("{i}: {e}"));
            assert_eq!(d.relays[0].key, key);
        }
    }

    #[test]
    fn bad_directories() {
        for (text, want) in [
            ("", "relay: the directory lists no relays"),
            ("[[relay]]\nname = \"a\"\naddress = \"x\"\n", "relay.a.address: `x` is not an address"),
            ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"00\"\n", "relay.a.key: `00` is not a public key"),
            ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"0101010101010101010101010101010101010101010101010101010101010101\"\nflags = [\"exiit\"]\n", "relay.a.flags: unknown flag `exiit`; did you mean `exit`?"),
            ("[[relays]]\nname = \"a\"\n", "relays: unknown key; did you mean `relay`? (a directory has only [[relay]] tables)"),
            ("name = \"r1\"\nlisten = \"127.0.0.1:9001\"\n", "is not a directory file: unknown key `listen` (a directory has only [[relay]] tables)"),
            ("[[relay]]\nname = \" \"\n", "relay[0].name: is empty"),
            ("[[relay]]\naddress = \"127.0.0.1:1\"\n", "relay[0].name: missing (every relay needs a name)"),
            ("[[relay]]\nname = \"a\"\naddress = \"0.0.0.0:19101\"\n", "relay.a.address: 0.0.0.0:19101: 0.0.0.0 is the unspecified address, which nobody can send to; give the address the relay is reached at"),
            ("[[relay]]\nname = \"a\"\naddress = \"[::]:19101\"\n", "relay.a.address: [::]:19101: :: is the unspecified address"),
            ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:0\"\n", "relay.a.address: 127.0.0.1:0: port 0 is not a port anybody can send to; give the port the relay listens on"),
            (&*format!("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"{}\"\n", "0".repeat(64)), "relay.a.key: all zeros is not a usable public key"),
            (&*format!("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"01{}\"\n", "0".repeat(62)), "relay.a.key: `0100000000000000000000000000000000000000000000000000000000000000` is an X25519 point of small order, not a usable public key (every handshake secret with it would be zero)"),
            ("[[relay]]\nname = \"a\"\naddress = \"127.0.0.1:1\"\nkey = \"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800\"\n", "relay.a.key: `e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800` is an X25519 point of small order"),
            (&*format!("{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9003\"\nkey = \"{}\"\n", "02".repeat(32)), "relay.r3.key: the same key is listed for relay `r2`"),
            (&*format!("{DIR}\n[[relay]]\nname = \"r3\"\naddress = \"127.0.0.1:9002\"\nkey = \"{}\"\n", "03".repeat(32)), "relay.r3.address: 127.0.0.1:9002 is also relay `r2`'s address"),
        ] {
            let e = Directory::parse(text, "d.toml").unwrap_err();
            assert!(e.to_string().starts_with(&format!("d.toml: {want}")), "got {e}");
        }
    }
}
