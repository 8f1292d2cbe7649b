//! Relay, proxy and directory files (TOML), validated with errors that name
//! the file, the key and the problem:
//!
//! ```text
//! error: relay.toml: bandwidth.rate: invalid rate: `10 MBs`: unknown rate unit `MBs` (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)
//! ```
//!
//! serde reads each file into the structs of `raw` (unknown keys refused,
//! values read by `hopwise_config`'s types); the functions here check what
//! the values mean. `docs/relay.md` is the reference for every key.

mod directory;
mod proxy;
mod raw;
#[cfg(test)]
mod tests;

pub use directory::{Directory, Header, RelayEntry, DEFAULT_BANDWIDTH, FLAGS};
pub use hopwise_config::did_you_mean;
/// A configuration problem: `file: key: message`.
pub use hopwise_config::Error as ConfigError;
pub use proxy::{ProxyConfig, MAX_PATH};

use hopwise_config::{self as cfg, Seg, TableOf};
use hopwise_proto::backtap::BucketConfig;
use hopwise_proto::bucket::Refill;
use hopwise_proto::circuit::policy::{AddrPattern, ExitPolicy, Rule, Unreachable, Verdict};
use hopwise_proto::time::Dur;
use hopwise_proto::units::parse_duration;
use raw::{RawBandwidth, RawEmulation, RawExit, RawLimits, RawLink, RawMetrics, RawTransport};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toml::{Table, Value};

#[cfg(test)]
use proxy::path_warnings;

/// A problem at a key, before the file is attached.
type R<T> = Result<T, ConfigError>;

fn err<T>(key: &str, msg: impl Into<String>) -> R<T> {
    Err(ConfigError::new("", key, msg))
}

/// `t` read into the serde struct `T`; `key` writes an error's key path.
fn table<T: DeserializeOwned>(t: &Table, key: fn(&Table, &[Seg]) -> String) -> R<T> {
    cfg::from_value(Value::Table(t.clone())).map_err(|p| {
        let k = key(t, &p.path);
        p.at(k)
    })
}

/// Key paths as serde gives them (`link.keepalive`).
fn plain(_: &Table, path: &[Seg]) -> String {
    cfg::join("", path)
}

fn addr(s: &str, key: &str) -> R<SocketAddr> {
    s.parse().map_err(|_| {
        ConfigError::new(
            "",
            key,
            format!("`{s}` is not an address with a port (e.g. 127.0.0.1:9001 or [::1]:9001)"),
        )
    })
}

/// A path-valued key, if present: not empty.
fn path_key(v: Option<cfg::Text>, key: &str) -> R<Option<String>> {
    match v {
        Some(t) if t.is_empty() => err(key, "is empty; name a file"),
        v => Ok(v.map(|t| t.0)),
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

/// The `[metrics]` section of a relay or proxy config: `listen`, loopback only.
fn metrics(m: Option<TableOf<RawMetrics>>) -> R<Option<SocketAddr>> {
    let Some(a) = m.and_then(|m| m.0.listen) else {
        return Ok(None);
    };
    match addr(&a, "metrics.listen")? {
        a if !a.ip().is_loopback() => err(
            "metrics.listen",
            format!("{a} is not a loopback address; the metrics endpoint only listens on loopback (127.0.0.1 or ::1)"),
        ),
        a => Ok(Some(a)),
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

/// A duration within `r`, quoted as written when it is not.
fn dur_in(d: &Option<cfg::Duration>, key: &str, r: DurRange) -> R<Option<Duration>> {
    let Some(d) = d else {
        return Ok(None);
    };
    let v = Duration::from_nanos(d.value.as_nanos());
    if v < r.lo || v > r.hi {
        let what = if v.is_zero() && !r.lo.is_zero() {
            format!("must be positive ({})", r.text)
        } else {
            format!("must be {}", r.text)
        };
        return err(key, format!("{what}, got `{}`", d.text));
    }
    Ok(Some(v))
}

/// Bytes per second.
fn bytes_per_sec(r: Option<cfg::Rate>, key: &str) -> R<Option<u64>> {
    match r {
        Some(r) if r.0.bps() < 8 => err(key, "must be at least 1 byte per second"),
        r => Ok(r.map(|r| r.0.bps() / 8)),
    }
}

/// A size within `range`, or `why` it must be.
fn size_in(
    s: Option<cfg::Size>,
    key: &str,
    range: std::ops::RangeInclusive<u64>,
    why: impl Fn(u64) -> String,
) -> R<Option<u64>> {
    match s {
        Some(cfg::Size(n)) if !range.contains(&n) => err(key, why(n)),
        s => Ok(s.map(|s| s.0)),
    }
}

// ---------------------------------------------------------------------------
// Shared sections

/// Reads the sections relays and proxies share from `$raw` into `$cfg`
/// (a `RelayConfig` or a `ProxyConfig`), errors through `$e`.
macro_rules! read_sections {
    ($cfg:ident, $raw:ident, $e:ident) => {
        $cfg.limits = limits($raw.limits).map_err($e)?;
        $cfg.link = link_options($raw.link).map_err($e)?;
        $cfg.transport = transport($raw.transport).map_err($e)?;
        $cfg.emulation = emulation($raw.emulation, &$cfg.directory).map_err($e)?;
        $cfg.metrics = metrics($raw.metrics).map_err($e)?;
        $cfg.log_level = log_level($raw.log_level).map_err($e)?;
    };
}
use read_sections;

/// The levels `log_level` may name, quietest first.
pub const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// `log_level`: what the daemon logs, as `RUST_LOG` writes it: a level
/// (`info`), or comma-separated directives `TARGET=LEVEL` and at most one
/// bare level (`warn,hopwise_net=debug`). Kept as written.
fn log_level(t: Option<cfg::Text>) -> R<Option<String>> {
    let Some(t) = t else {
        return Ok(None);
    };
    let bad = |what: String| {
        err(
            "log_level",
            format!(
                "{what}; use a level ({}) or directives such as \"warn,hopwise_net=debug\"",
                LOG_LEVELS.join(", ")
            ),
        )
    };
    if t.trim().is_empty() {
        return bad("is empty".into());
    }
    let mut bare = 0;
    for d in t.split(',').map(str::trim) {
        let (target, level) = match d.split_once('=') {
            Some((target, level)) => (Some(target.trim()), level.trim()),
            None => (None, d),
        };
        if target.is_some_and(|t| {
            t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        }) {
            return bad(format!(
                "`{d}` does not name a target (a module path such as hopwise_net)"
            ));
        }
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return bad(format!(
                "`{level}` is not a level{}",
                did_you_mean(&level.to_ascii_lowercase(), &LOG_LEVELS)
            ));
        }
        bare += usize::from(target.is_none());
    }
    if bare > 1 {
        return bad(format!("`{}` names more than one default level", t.0));
    }
    Ok(Some(t.0))
}

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

fn link_options(t: Option<TableOf<RawLink>>) -> R<LinkOptions> {
    let mut o = LinkOptions::default();
    let Some(TableOf(t)) = t else {
        return Ok(o);
    };
    cfg::apply!(o, t, |n| n.0 as u32; handshakes_per_second);
    cfg::apply!(o, t, |b| b.0; encrypt);
    let budget = size_in(t.payload_budget, "link.payload_budget", 560..=65_000, |b| {
        format!("must be 560 to 65000 bytes (one cell is 519, plus headers), got {b}")
    })?;
    o.payload_budget = budget.map_or(o.payload_budget, |b| b as usize);
    let buffer = size_in(
        t.socket_buffer,
        "link.socket_buffer",
        (64 << 10)..=(1 << 30),
        |b| format!("must be 64KiB to 1GiB, got {b} bytes"),
    )?;
    o.socket_buffer = buffer.map_or(o.socket_buffer, |b| b as usize);
    let timeout = |d, k: &str| dur_in(d, &format!("link.{k}"), TIMEOUT_RANGE);
    o.handshake_timeout =
        timeout(&t.handshake_timeout, "handshake_timeout")?.unwrap_or(o.handshake_timeout);
    o.keepalive = timeout(&t.keepalive, "keepalive")?.unwrap_or(o.keepalive);
    let idle = timeout(&t.idle_timeout, "idle_timeout")?;
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
#[derive(Clone, Debug, PartialEq)]
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
    /// How the window starts (`startup`): `linear` (+1 cell per round, the
    /// paper), `slow-start` (Vegas) or `hystart` (RFC 9406).
    pub startup: Startup,
    pub max_window: u32,
    /// Send SACK items (BackTap `Config::sack`): with them a hop repairs
    /// several holes per round trip (RACK-TLP) instead of one. On by default
    /// in the daemon, off in the paper's configuration.
    pub sack: bool,
    /// How the window answers loss (`loss_response`): `none`, `halve` or
    /// `delay-qualified` (`docs/backtap.md`, "Loss response").
    pub loss_response: LossResponse,
    /// `loss_bound`: the smoothed lost fraction above which
    /// `delay-qualified` takes a loss as congestion.
    pub loss_bound: f64,
}

/// `[transport] startup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Startup {
    Linear,
    SlowStart,
    HyStart,
}

/// `[transport] loss_response`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossResponse {
    None,
    Halve,
    DelayQualified,
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            pack_delay: Duration::ZERO,
            alpha: 10,
            beta: 20,
            startup: Startup::HyStart,
            max_window: 10_000,
            sack: true,
            loss_response: LossResponse::DelayQualified,
            loss_bound: 0.1,
        }
    }
}

fn transport(t: Option<TableOf<RawTransport>>) -> R<Transport> {
    let mut o = Transport::default();
    let Some(TableOf(t)) = t else {
        return Ok(o);
    };
    if let Some(d) = dur_in(&t.pack_delay, "transport.pack_delay", PACK_DELAY_RANGE)? {
        o.pack_delay = d;
    }
    cfg::apply!(o, t, |n| n.0 as u32; alpha, beta, max_window);
    cfg::apply!(o, t, |b| b.0; sack);
    if o.beta < o.alpha {
        return err("transport.beta", "must not be below transport.alpha");
    }
    if let Some(s) = t.startup {
        let kinds = [
            ("linear", Startup::Linear),
            ("slow-start", Startup::SlowStart),
            ("hystart", Startup::HyStart),
        ];
        o.startup = cfg::choice(&s, "startup", &kinds).or_else(|m| err("transport.startup", m))?;
    }
    if let Some(s) = t.loss_response {
        let kinds = [
            ("none", LossResponse::None),
            ("halve", LossResponse::Halve),
            ("delay-qualified", LossResponse::DelayQualified),
        ];
        o.loss_response = cfg::choice(&s, "loss_response", &kinds)
            .or_else(|m| err("transport.loss_response", m))?;
    }
    if let Some(b) = t.loss_bound {
        o.loss_bound = b.0;
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

fn limits(t: Option<TableOf<RawLimits>>) -> R<Limits> {
    let mut o = Limits::default();
    let Some(TableOf(t)) = t else {
        return Ok(o);
    };
    cfg::apply!(o, t, |n| n.0 as u32; circuit_queue);
    cfg::apply!(o, t, |n| n.0 as usize;
        max_circuits, max_circuits_per_client, max_streams, max_clients, max_queued_cells);
    let window = size_in(
        t.stream_window,
        "limits.stream_window",
        4096..=1 << 30,
        |_| "must be 4KiB to 1GiB".into(),
    )?;
    o.stream_window = window.map_or(o.stream_window, |n| n as u32);
    let buffers = size_in(
        t.max_stream_buffers,
        "limits.max_stream_buffers",
        (1 << 20)..=1 << 40,
        |_| "must be 1MiB to 1TiB".into(),
    )?;
    o.max_stream_buffers = buffers.map_or(o.max_stream_buffers, |n| n as usize);
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

fn emulation(
    t: Option<BTreeMap<String, TableOf<RawEmulation>>>,
    dir: &Directory,
) -> R<Vec<(PeerSel, Emulation)>> {
    let mut out: Vec<(PeerSel, Emulation)> = Vec::new();
    // The section names, in the order of `out`.
    let mut names: Vec<String> = Vec::new();
    for (name, TableOf(e)) in t.unwrap_or_default() {
        let p = format!("emulation.{name}");
        let sel = if name == "*" {
            PeerSel::All
        } else if let Some(i) = dir.find(&name) {
            PeerSel::Addr(dir.relays[i].address)
        } else if let Ok(a) = name.parse::<SocketAddr>() {
            PeerSel::Addr(a)
        } else {
            let names: Vec<&str> = dir.relays.iter().map(|r| r.name.as_str()).collect();
            return err(
                &p,
                format!(
                    "`{name}` is not a relay of the directory, an address, or \"*\"{}",
                    did_you_mean(&name, &names)
                ),
            );
        };
        if let Some(i) = out.iter().position(|(s, _)| *s == sel) {
            let a = match sel {
                PeerSel::Addr(a) => a.to_string(),
                PeerSel::All => "*".to_string(),
            };
            return err(
                &p,
                format!(
                    "{} and {} are the same peer ({a}); give each peer one section",
                    emulation_section(&names[i]),
                    emulation_section(&name)
                ),
            );
        }
        let mut em = Emulation::default();
        if let Some(d) = dur_in(&e.delay, &format!("{p}.delay"), EMULATION_DELAY_RANGE)? {
            em.delay = d;
        }
        em.loss = e.loss.map_or(em.loss, |l| l.0);
        em.rate = bytes_per_sec(e.rate, &format!("{p}.rate"))?;
        let queue = size_in(e.queue, &format!("{p}.queue"), 1500..=1 << 30, |q| {
            format!("must be 1500 bytes (one datagram) to 1GiB, got {q} bytes")
        })?;
        if let Some(q) = queue {
            if em.rate.is_none() {
                return err(
                    &format!("{p}.queue"),
                    "has no effect without rate (it holds what waits for the rate limit); set rate, or leave queue out",
                );
            }
            em.queue = q;
        }
        em.seed = e.seed.map_or(em.seed, |s| s.0);
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
    /// `log_level` (as `RUST_LOG` writes it); `None`: `RUST_LOG`, or info.
    pub log_level: Option<String>,
    /// The file it came from, for messages.
    pub origin: String,
}

/// What `key_file` is, when it is missing.
const KEY_FILE: &str = "where the relay's static key lives; created on first start";

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
            log_level: None,
            origin: format!("relay {name}"),
        }
    }

    /// Reads a relay file; its directory must be valid now (the wall clock).
    pub fn load(path: &Path) -> Result<RelayConfig, ConfigError> {
        RelayConfig::load_at(path, crate::clock::wall_now())
    }

    /// [`RelayConfig::load`] with the directory checked at `now`.
    pub fn load_at(path: &Path, now: SystemTime) -> Result<RelayConfig, ConfigError> {
        let text = cfg::read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        RelayConfig::parse_at(&text, &file, base, now)
    }

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

    /// Only the `key_file` of a relay config, resolved like `load` does,
    /// without reading the directory: `hopwise relay --show-key` prints a
    /// new relay's key before there is a directory to list it in.
    pub fn load_key_file(path: &Path) -> Result<PathBuf, ConfigError> {
        let text = cfg::read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        let t = cfg::parse_toml(&text, &file, |_, _| String::new())?;
        let raw: raw::RawKeyFile = table(&t, plain).map_err(|x| x.in_file(&file))?;
        let key_file = path_key(raw.key_file, "key_file")
            .and_then(|k| cfg::required(k, "key_file", KEY_FILE))
            .map_err(|x| x.in_file(&file))?;
        Ok(resolve(base, &key_file))
    }

    /// Parses a relay file; relative paths are relative to `base`; its
    /// directory must be valid now (the wall clock).
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<RelayConfig, ConfigError> {
        RelayConfig::parse_at(text, file, base, crate::clock::wall_now())
    }

    /// [`RelayConfig::parse`] with the directory checked at `now`.
    pub fn parse_at(
        text: &str,
        file: &str,
        base: &Path,
        now: SystemTime,
    ) -> Result<RelayConfig, ConfigError> {
        let t = cfg::parse_toml(text, file, |_, _| String::new())?;
        let e = |x: ConfigError| x.in_file(file);
        let raw: raw::RawRelay = table(&t, plain).map_err(e)?;
        let name =
            cfg::required(raw.name, "name", "the relay's name in the directory").map_err(e)?;
        let why = "the UDP address to bind, e.g. \"127.0.0.1:9001\"";
        let listen = cfg::required(raw.listen, "listen", why).and_then(|a| addr(&a, "listen"));
        let listen = listen.map_err(e)?;
        let key_file = path_key(raw.key_file, "key_file")
            .and_then(|k| cfg::required(k, "key_file", KEY_FILE))
            .map_err(e)?;
        let (_, directory) =
            directory::directory_key(raw.directory, raw.authority, file, base, now)?;
        let mut cfg = RelayConfig::new(&name.0, listen, resolve(base, &key_file), directory);
        cfg.origin = file.to_string();
        cfg.accept_clients = raw.accept_clients.is_none_or(|b| b.0);
        cfg.exit = exit_options(raw.exit).map_err(e)?;
        if let Some(w) =
            disabled_exit_warning(t.get("exit").and_then(Value::as_table), cfg.exit.enabled)
        {
            tracing::warn!("{file}: {w}");
        }
        cfg.bandwidth = bandwidth(raw.bandwidth).map_err(e)?;
        read_sections!(cfg, raw, e);
        Ok(cfg)
    }
}

fn exit_options(t: Option<TableOf<RawExit>>) -> R<ExitOptions> {
    let mut o = ExitOptions::default();
    let Some(TableOf(t)) = t else {
        return Ok(o);
    };
    o.enabled = t.enabled.is_some_and(|b| b.0);
    for (i, r) in t.policy.unwrap_or_default().0.iter().enumerate() {
        match Rule::parse(r) {
            Ok(rule) => o.policy.rules.push(rule),
            Err(e) => return err(&format!("exit.policy[{i}]"), e.0),
        }
    }
    if let Some(b) = t.reject_private {
        o.policy.reject_private = b.0;
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
    if let Some(d) = t.default {
        let kinds = [("accept", Verdict::Accept), ("reject", Verdict::Reject)];
        o.policy.default =
            cfg::choice(&d, "default verdict", &kinds).or_else(|m| err("exit.default", m))?;
    }
    if let Some(d) = dur_in(&t.connect_timeout, "exit.connect_timeout", TIMEOUT_RANGE)? {
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

fn bandwidth(t: Option<TableOf<RawBandwidth>>) -> R<Option<BucketConfig>> {
    let Some(TableOf(t)) = t else {
        return Ok(None);
    };
    let rate = cfg::required(
        bytes_per_sec(t.rate, "bandwidth.rate")?,
        "bandwidth.rate",
        "e.g. \"10MB/s\"",
    )?;
    let burst = t.burst.map_or(rate, |b| b.0);
    if burst < 519 {
        return err("bandwidth.burst", "must hold at least one cell (519 bytes)");
    }
    let refill = match t.refill.as_deref() {
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
