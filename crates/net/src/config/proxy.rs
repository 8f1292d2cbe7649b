//! The proxy's file, and the checks of its `path`.

use super::directory::directory_key;
use super::raw::RawProxy;
use super::{
    addr, dur_in, emulation, err, limits, link_options, log_level, metrics, path_key, plain,
    read_sections, resolve, table, transport, ConfigError, Directory, Emulation, Limits,
    LinkOptions, PeerSel, Transport, R, TIMEOUT_RANGE,
};
use hopwise_config::{self as cfg, did_you_mean};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

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
    /// Random paths: no two relays in one /16 (IPv4) or /32 (IPv6).
    pub path_subnet_rule: bool,
    /// Where the guard of random paths is kept (`state_file`); `None`:
    /// next to `key_file` ([`crate::path::default_state_file`]), or nowhere
    /// without one.
    pub state_file: Option<PathBuf>,
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
    /// `log_level`, as the relay's.
    pub log_level: Option<String>,
    pub origin: String,
}

impl ProxyConfig {
    /// Checks `path` as [`ProxyConfig::load`] does, for a config built or
    /// changed in code.
    pub fn check(&self) -> Result<(), ConfigError> {
        check_path(&self.directory, "the directory", self.path.as_deref())
            .map_err(|x| x.in_file(&self.origin))
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
            path_subnet_rule: true,
            state_file: None,
            connect_timeout: Duration::from_secs(30),
            socks_max_connections: 1000,
            socks_handshake_timeout: Duration::from_secs(10),
            limits: Limits::default(),
            link: LinkOptions::default(),
            transport: Transport::default(),
            emulation: Vec::new(),
            metrics: None,
            log_level: None,
            origin: "proxy".to_string(),
        }
    }

    /// Reads a proxy file; its directory must be valid now (the wall clock).
    pub fn load(path: &Path) -> Result<ProxyConfig, ConfigError> {
        ProxyConfig::load_at(path, crate::clock::wall_now())
    }

    /// [`ProxyConfig::load`] with the directory checked at `now`.
    pub fn load_at(path: &Path, now: SystemTime) -> Result<ProxyConfig, ConfigError> {
        let text = cfg::read(path)?;
        let file = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        ProxyConfig::parse_at(&text, &file, base, now)
    }

    /// Parses a proxy file; relative paths are relative to `base`; its
    /// directory must be valid now (the wall clock).
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<ProxyConfig, ConfigError> {
        ProxyConfig::parse_at(text, file, base, crate::clock::wall_now())
    }

    /// [`ProxyConfig::parse`] with the directory checked at `now`.
    pub fn parse_at(
        text: &str,
        file: &str,
        base: &Path,
        now: SystemTime,
    ) -> Result<ProxyConfig, ConfigError> {
        let t = cfg::parse_toml(text, file, |_, _| String::new())?;
        let e = |x: ConfigError| x.in_file(file);
        let raw: RawProxy = table(&t, plain).map_err(e)?;
        let (dir_path, directory) = directory_key(raw.directory, raw.authority, file, base, now)?;
        let mut cfg = ProxyConfig::new(directory);
        cfg.origin = file.to_string();
        if let Some(a) = raw.socks {
            let a = addr(&a, "socks").map_err(e)?;
            if !a.ip().is_loopback() {
                tracing::warn!("{file}: socks = {a} is not a loopback address: anyone who can reach it can use the proxy");
            }
            cfg.socks = a;
        }
        if let Some(a) = raw.listen {
            cfg.listen = addr(&a, "listen").map_err(e)?;
        }
        cfg.path = raw.path.map(|p| p.0);
        let desc = format!("the directory {}", dir_path.display());
        check_path(&cfg.directory, &desc, cfg.path.as_deref()).map_err(e)?;
        for w in path_warnings(&cfg.directory, &desc, cfg.path.as_deref()) {
            tracing::warn!("{file}: {w}");
        }
        cfg.key_file = path_key(raw.key_file, "key_file")
            .map_err(e)?
            .map(|k| resolve(base, &k));
        cfg.path_subnet_rule = raw.path_subnet_rule.is_none_or(|b| b.0);
        cfg.state_file = path_key(raw.state_file, "state_file")
            .map_err(e)?
            .map(|k| resolve(base, &k));
        if let Some(d) =
            dur_in(&raw.connect_timeout, "connect_timeout", TIMEOUT_RANGE).map_err(e)?
        {
            cfg.connect_timeout = d;
        }
        if let Some(n) = raw.socks_max_connections {
            cfg.socks_max_connections = n.0 as usize;
        }
        let handshake = &raw.socks_handshake_timeout;
        if let Some(d) = dur_in(handshake, "socks_handshake_timeout", TIMEOUT_RANGE).map_err(e)? {
            cfg.socks_handshake_timeout = d;
        }
        read_sections!(cfg, raw, e);
        Ok(cfg)
    }
}

/// What a proxy's `path` (checked by `check_path`) will do that its
/// operator may not expect: random paths shorter than three relays, or not
/// starting at a relay flagged `guard`; an explicit path whose entry has no
/// `guard` flag. The proxy still runs.
pub(super) fn path_warnings(
    dir: &Directory,
    dir_desc: &str,
    path: Option<&[String]>,
) -> Vec<String> {
    let mut w = Vec::new();
    match path {
        None => {
            let n = dir.relays.len();
            if n < 2 {
                w.push(format!(
                    "random paths cannot be built: {dir_desc} lists {n} relay, and a path needs a guard and an exit"
                ));
            } else if n < 3 {
                w.push(format!(
                    "random paths will have {n} relays ({dir_desc} lists {n}; a full path is a guard, a middle and an exit)"
                ));
            }
            // The guard is chosen among the relays flagged guard that are
            // not exits, else among the relays that are not exits
            // (`path::guard_candidates`).
            let guards: Vec<&str> = dir
                .relays
                .iter()
                .filter(|r| r.guard)
                .map(|r| r.name.as_str())
                .collect();
            let fits = dir.relays.iter().any(|r| r.guard && !r.exit);
            if n > 1 && !fits {
                let flagged = match guards.as_slice() {
                    [] => "no relay".to_string(),
                    [g] => format!("only the exit `{g}`"),
                    gs => format!("only exits ({})", gs.join(", ")),
                };
                let from = if dir.relays.iter().any(|r| !r.exit) {
                    "any relay that is not an exit"
                } else {
                    "an exit, which is then no path's exit"
                };
                w.push(format!(
                    "{dir_desc} flags {flagged} as a guard, so the guard of random paths is {from} \
                     (add \"guard\" to the flags of the relays that may be entries)"
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
/// messages), none twice, the last one flagged `exit`. A last hop that is
/// not an exit refuses every stream, so any other path would fail at every
/// attempt. One relay is a valid path (for tests and measurements: it sees
/// the client and the destinations together, `docs/relay.md`). Without a
/// path (a random one) the directory must flag at least one exit.
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
