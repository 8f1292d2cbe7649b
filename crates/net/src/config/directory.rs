//! The directory file: the relays, their addresses, keys and flags.

use super::raw::RawDirectory;
use super::{addr, err, path_key, resolve, table, ConfigError, R};
use hopwise_config::{self as cfg, did_you_mean, Seg};
use hopwise_proto::circuit::policy::{ExitPolicy, Rule, Unreachable, Verdict};
use hopwise_proto::link::{is_small_order, parse_key};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

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
    /// `bandwidth`: what the relay offers in kB/s (1000 bytes per second),
    /// the weight of its chance to be picked for a random path
    /// ([`DEFAULT_BANDWIDTH`] when left out).
    pub bandwidth: u64,
    /// `family`: relays of one operator declare the same family, and no
    /// random path has two of them.
    pub family: Option<String>,
    /// `exit_policy`: what proxies assume the exit accepts when they pick
    /// one for a destination (the relay itself enforces its own `[exit]`
    /// policy). Rules in order, the first match decides, the rest is
    /// accepted; left out, the policy of an `[exit]` with no rules (refuse
    /// private addresses, accept the rest).
    pub exit_policy: ExitPolicy,
}

/// The `bandwidth` of a relay that gives none, in kB/s.
pub const DEFAULT_BANDWIDTH: u64 = 1000;

impl RelayEntry {
    /// A relay with no flags, the default bandwidth and exit policy, and no
    /// family.
    pub fn new(name: &str, address: SocketAddr, key: [u8; 32]) -> RelayEntry {
        RelayEntry {
            name: name.to_string(),
            address,
            key,
            exit: false,
            guard: false,
            bandwidth: DEFAULT_BANDWIDTH,
            family: None,
            exit_policy: ExitPolicy::default(),
        }
    }

    /// The rules of `exit_policy` as the directory file writes them, `None`
    /// for the default (the key left out).
    pub fn exit_policy_rules(&self) -> Option<Vec<String>> {
        let p = &self.exit_policy;
        if *p == ExitPolicy::default() {
            return None;
        }
        let mut rules = Vec::new();
        if p.reject_private {
            rules.push("reject private:*".to_string());
        }
        rules.extend(p.rules.iter().map(|r| r.to_string()));
        if p.default == Verdict::Reject && !p.rules.last().is_some_and(|r| r.is_catch_all()) {
            rules.push("reject *:*".to_string());
        }
        Some(rules)
    }
}

/// A relay's `exit_policy` (at key `key`): the rules in order, the first
/// match decides, and what no rule matches is accepted. Nothing is refused
/// before the rules: `reject private:*` says it.
fn exit_policy_of(rules: Option<Vec<String>>, key: &str) -> R<ExitPolicy> {
    let Some(rules) = rules else {
        return Ok(ExitPolicy::default());
    };
    let mut p = ExitPolicy {
        reject_private: false,
        rules: Vec::new(),
        default: Verdict::Accept,
    };
    for (i, r) in rules.iter().enumerate() {
        match Rule::parse(r) {
            Ok(rule) => p.rules.push(rule),
            Err(e) => return err(&format!("{key}[{i}]"), e.0),
        }
    }
    if let Some((i, Unreachable::AfterCatchAll(j))) = p.unreachable_rule() {
        return err(
            &format!("{key}[{i}]"),
            format!(
                "`{}` can never match: {key}[{j}] `{}` matches every address and port first (remove the rules after it)",
                p.rules[i], p.rules[j]
            ),
        );
    }
    Ok(p)
}

/// The static list of relays; relays and proxies read the same file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory {
    pub relays: Vec<RelayEntry>,
}

pub const FLAGS: &[&str] = &["exit", "guard"];

/// How the message about a file that is not a directory begins.
const NOT_A_DIRECTORY: &str = "is not a directory file";

/// `address` as the directory needs it: an address with a port that others
/// can send to.
fn address_of(s: &str, key: &str) -> R<SocketAddr> {
    let a = addr(s, key)?;
    if a.ip().is_unspecified() {
        return err(
            key,
            format!(
                "{a}: {} is the unspecified address, which nobody can send to; \
                 give the address the relay is reached at",
                a.ip()
            ),
        );
    }
    if a.port() == 0 {
        return err(
            key,
            format!(
                "{a}: port 0 is not a port anybody can send to; give the port the relay listens on"
            ),
        );
    }
    Ok(a)
}

/// A relay's key path: `relay.NAME` once its name is known, else `relay[i]`.
fn relay_key(doc: &Table, path: &[Seg]) -> String {
    if let [Seg::Key(k), Seg::Index(i), rest @ ..] = path {
        let name = doc
            .get(k)
            .and_then(|v| v.get(*i))
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .filter(|n| cfg::blank(n).is_none());
        if let Some(n) = name {
            return cfg::join(&format!("relay.{n}"), rest);
        }
    }
    cfg::join("", path)
}

impl Directory {
    pub fn load(path: &Path) -> Result<Directory, ConfigError> {
        let text = cfg::read(path)?;
        Directory::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<Directory, ConfigError> {
        let t = cfg::parse_toml(text, file, |_, _| String::new())?;
        Directory::from_table(&t).map_err(|x| x.in_file(file))
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
        let raw: RawDirectory = table(t, relay_key)?;
        let Some(entries) = raw.relay else {
            return err(
                "relay",
                "the directory lists no relays (add [[relay]] tables)",
            );
        };
        let mut relays: Vec<RelayEntry> = Vec::new();
        for (i, r) in entries.0.into_iter().enumerate() {
            let why = "every relay needs a name";
            let name = cfg::required(r.name, &format!("relay[{i}].name"), why)?.0;
            let p = format!("relay.{name}");
            let address = cfg::required(r.address, &format!("{p}.address"), "")?;
            let address = address_of(&address, &format!("{p}.address"))?;
            let key_s = cfg::required(r.key, &format!("{p}.key"), "")?;
            let key = parse_key(&key_s).ok_or_else(|| {
                ConfigError::new(
                    "",
                    format!("{p}.key"),
                    format!("`{key_s}` is not a public key (64 hex digits)"),
                )
            })?;
            let flags = r.flags.unwrap_or_default().0;
            for f in &flags {
                if !FLAGS.contains(&f.as_str()) {
                    return err(
                        &format!("{p}.flags"),
                        format!(
                            "unknown flag `{f}`{} (known: exit, guard)",
                            did_you_mean(f, FLAGS)
                        ),
                    );
                }
            }
            if relays.iter().any(|x| x.name == name) {
                return err(
                    &format!("{p}.name"),
                    format!("relay `{name}` is listed twice"),
                );
            }
            if key == [0; 32] {
                // The all-zero X25519 point has small order: every
                // Diffie-Hellman result with it is zero (RFC 7748 §6.1).
                return err(&format!("{p}.key"), "all zeros is not a usable public key");
            }
            if is_small_order(&key) {
                return err(
                    &format!("{p}.key"),
                    format!(
                        "`{key_s}` is an X25519 point of small order, not a usable public key \
                         (every handshake secret with it would be zero)"
                    ),
                );
            }
            if let Some(x) = relays.iter().find(|x| x.key == key) {
                return err(
                    &format!("{p}.key"),
                    format!("the same key is listed for relay `{}`", x.name),
                );
            }
            if let Some(x) = relays.iter().find(|x| x.address == address) {
                return err(
                    &format!("{p}.address"),
                    format!("{address} is also relay `{}`'s address", x.name),
                );
            }
            let exit = flags.iter().any(|f| f == "exit");
            if r.exit_policy.is_some() && !exit {
                return err(
                    &format!("{p}.exit_policy"),
                    format!(
                        "relay `{name}` has no \"exit\" flag, so no path ends there and its exit policy is never read \
                         (add \"exit\" to its flags, or remove exit_policy)"
                    ),
                );
            }
            let exit_policy =
                exit_policy_of(r.exit_policy.map(|x| x.0), &format!("{p}.exit_policy"))?;
            relays.push(RelayEntry {
                name,
                address,
                key,
                exit,
                guard: flags.iter().any(|f| f == "guard"),
                bandwidth: r.bandwidth.map_or(DEFAULT_BANDWIDTH, |b| b.0),
                family: r.family.map(|f| f.0),
                exit_policy,
            });
        }
        Ok(Directory { relays })
    }

    /// The file text.
    pub fn to_toml(&self) -> String {
        let mut s =
            String::from("# hopwise directory: the relays, their addresses, keys and flags.\n");
        let quote = |t: &str| Value::String(t.to_string()).to_string();
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
            if r.bandwidth != DEFAULT_BANDWIDTH {
                s.push_str(&format!("bandwidth = {}\n", r.bandwidth));
            }
            if let Some(f) = &r.family {
                s.push_str(&format!("family = {}\n", quote(f)));
            }
            if let Some(rules) = r.exit_policy_rules().filter(|_| r.exit) {
                let q: Vec<String> = rules.iter().map(|x| quote(x)).collect();
                s.push_str(&format!("exit_policy = [{}]\n", q.join(", ")));
            }
        }
        s
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.relays.iter().position(|r| r.name == name)
    }
}

/// The directory file named by the `directory` key of `file` (relative to
/// `base`), and its path; a file that cannot be read is that key's error.
pub(super) fn directory_key(
    value: Option<cfg::Text>,
    file: &str,
    base: &Path,
) -> Result<(PathBuf, Directory), ConfigError> {
    let key = "directory";
    let name = path_key(value, key)
        .map_err(|x| x.in_file(file))?
        .ok_or_else(|| ConfigError::new(file, key, "missing required key (the directory file)"))?;
    let path = resolve(base, &name);
    let text = cfg::read(&path)
        .map_err(|x| ConfigError::new(file, key, format!("{}: {}", x.file, x.message)))?;
    let dir = Directory::parse(&text, &path.display().to_string()).map_err(|x| {
        if x.key.is_empty() && x.message.starts_with(NOT_A_DIRECTORY) {
            // The mistake is this key, which names the wrong file.
            ConfigError::new(file, key, format!("{} {}", x.file, x.message))
        } else {
            x
        }
    })?;
    Ok((path, dir))
}
