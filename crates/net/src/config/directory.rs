//! The directory file: the relays, their addresses, keys and flags, and
//! the `[directory]` table with the validity period and the authority's
//! signature (the envelope: `crate::authority`).

use super::raw::{RawDirectory, RawHeader};
use super::{addr, err, path_key, resolve, table, ConfigError, R};
use crate::authority::{self, format_time, AuthorityKey};
use hopwise_config::{self as cfg, did_you_mean, Seg, TableOf};
use hopwise_proto::circuit::policy::{ExitPolicy, Rule, Unreachable, Verdict};
use hopwise_proto::link::{is_small_order, parse_key};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
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

/// The `[directory]` table: when the directory is valid, and the
/// authority's signature. All `None` in a file that was never signed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub valid_after: Option<SystemTime>,
    pub valid_until: Option<SystemTime>,
    pub signature: Option<[u8; 64]>,
}

/// The static list of relays; relays and proxies read the same file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory {
    pub relays: Vec<RelayEntry>,
    /// The `[directory]` table.
    pub header: Header,
}

pub const FLAGS: &[&str] = &["exit", "guard"];

/// The tables of a directory file.
const TABLES: &[&str] = &["relay", "directory"];
const TABLES_TEXT: &str = "a directory has a [directory] table and [[relay]] tables";

/// How the message about a file that is not a directory begins.
const NOT_A_DIRECTORY: &str = "is not a directory file";

/// How the message about a signature that does not verify begins.
const BAD_SIGNATURE: &str = "does not verify with the authority key";

/// The command that signs a directory, for messages.
fn sign_hint(file: &str) -> String {
    format!("hopwise directory sign --key AUTHORITY_KEY_FILE --valid-for 7d {file}")
}

/// `[directory]`: the times as RFC 3339, the signature as 128 hex digits.
fn header(t: Option<TableOf<RawHeader>>) -> R<Header> {
    let mut h = Header::default();
    let Some(TableOf(t)) = t else {
        return Ok(h);
    };
    let time = |v: Option<cfg::Text>, key: &str| -> R<Option<SystemTime>> {
        v.map(|s| authority::parse_time(&s).or_else(|m| err(key, m)))
            .transpose()
    };
    h.valid_after = time(t.valid_after, "directory.valid_after")?;
    h.valid_until = time(t.valid_until, "directory.valid_until")?;
    if let (Some(a), Some(u)) = (h.valid_after, h.valid_until) {
        if u <= a {
            return err(
                "directory.valid_until",
                format!(
                    "{} is not after valid_after = {}: the validity period is empty",
                    format_time(u),
                    format_time(a)
                ),
            );
        }
    }
    if let Some(s) = t.signature {
        let line = format!("{}\"{}\"", authority::SIGNATURE_LINE, s.0);
        match authority::signed_message(&line) {
            Ok((_, Some(sig))) => h.signature = Some(sig),
            _ => {
                return err(
                    "directory.signature",
                    format!("`{}` is not a signature (128 lowercase hex digits)", s.0),
                )
            }
        }
    }
    Ok(h)
}

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

    /// Parses a directory and checks that `authority` signed it (see
    /// `crate::authority`) and that it is valid at `now`: the errors name
    /// `file` and the problem (unsigned, a signature that does not verify,
    /// not yet valid, expired).
    pub fn parse_verified(
        text: &str,
        file: &str,
        authority: &AuthorityKey,
        now: SystemTime,
    ) -> Result<Directory, ConfigError> {
        let d = Directory::parse(text, file)?;
        let e = |key: &str, m: String| ConfigError::new(file, key, m);
        let (message, line) =
            authority::signed_message(text).map_err(|m| e("directory.signature", m))?;
        let sig = match (d.header.signature, line) {
            (None, None) => {
                return Err(e(
                    "directory",
                    format!(
                        "the directory is not signed (no [directory] signature); sign it: {}",
                        sign_hint(file)
                    ),
                ))
            }
            (Some(s), Some(l)) if s == l => s,
            (Some(_), _) => {
                return Err(e(
                    "directory.signature",
                    format!(
                        "must be a line of its own that starts with `{}`, as `hopwise directory sign` writes it",
                        authority::SIGNATURE_LINE
                    ),
                ))
            }
            (None, Some(_)) => {
                return Err(e(
                    "directory.signature",
                    format!(
                        "a line starts with `{}`, but it is not the signature of the [directory] table",
                        authority::SIGNATURE_LINE
                    ),
                ))
            }
        };
        if !authority.verifies(&message, &sig) {
            return Err(e(
                "directory.signature",
                format!(
                    "{BAD_SIGNATURE} {authority}: the file was changed after it was signed, \
                     or another authority signed it"
                ),
            ));
        }
        let need = |t: Option<SystemTime>, key: &str| {
            t.ok_or_else(|| {
                e(
                    key,
                    "missing required key (a signed directory has a validity period)".into(),
                )
            })
        };
        let after = need(d.header.valid_after, "directory.valid_after")?;
        let until = need(d.header.valid_until, "directory.valid_until")?;
        if now < after {
            return Err(e(
                "directory.valid_after",
                format!(
                    "the directory is not valid yet: it is valid from {} and it is now {} \
                     (is this machine's clock right?)",
                    format_time(after),
                    format_time(now)
                ),
            ));
        }
        if now >= until {
            return Err(e(
                "directory.valid_until",
                format!(
                    "the directory expired at {} (it is now {}); the authority signs it again: {}",
                    format_time(until),
                    format_time(now),
                    sign_hint(file)
                ),
            ));
        }
        Ok(d)
    }

    /// [`Directory::parse_verified`] of the file at `path`.
    pub fn load_verified(
        path: &Path,
        authority: &AuthorityKey,
        now: SystemTime,
    ) -> Result<Directory, ConfigError> {
        let text = cfg::read(path)?;
        Directory::parse_verified(&text, &path.display().to_string(), authority, now)
    }

    fn from_table(t: &Table) -> R<Directory> {
        if let Some(k) = t.keys().find(|k| !TABLES.contains(&k.as_str())) {
            // A misspelt `relay`, or another kind of file (a relay's or a
            // proxy's config) named where a directory belongs.
            let hint = did_you_mean(k, TABLES);
            return if hint.is_empty() {
                err(
                    "",
                    format!("{NOT_A_DIRECTORY}: unknown key `{k}` ({TABLES_TEXT})"),
                )
            } else {
                err(k, format!("unknown key{hint} ({TABLES_TEXT})"))
            };
        }
        if t.get("directory").is_some_and(|v| !v.is_table()) {
            // `directory = "FILE"`: a relay's or a proxy's config.
            return err(
                "",
                format!("{NOT_A_DIRECTORY}: `directory` is not a table ({TABLES_TEXT})"),
            );
        }
        let raw: RawDirectory = table(t, relay_key)?;
        let header = header(raw.directory)?;
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
        Ok(Directory { relays, header })
    }

    /// The file text of the relays, unsigned: without the `[directory]`
    /// table, which `crate::authority::sign_directory` adds.
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

/// The authority's public key, the `authority` key of a relay's or a
/// proxy's `file`.
fn authority_key(value: Option<cfg::Text>, file: &str) -> Result<AuthorityKey, ConfigError> {
    let why = "the directory authority's Ed25519 public key, 64 hex digits, \
               as `hopwise authority keygen` prints it";
    let s = cfg::required(value, "authority", why).map_err(|x| x.in_file(file))?;
    AuthorityKey::parse(&s).map_err(|m| ConfigError::new(file, "authority", m))
}

/// The directory file named by the `directory` key of `file` (relative to
/// `base`), checked against the `authority` key's public key at `now`
/// ([`Directory::parse_verified`]), and its path; a file that cannot be
/// read is that key's error, a signature that does not verify is
/// `authority`'s.
pub(super) fn directory_key(
    value: Option<cfg::Text>,
    authority: Option<cfg::Text>,
    file: &str,
    base: &Path,
    now: SystemTime,
) -> Result<(PathBuf, Directory), ConfigError> {
    let authority = authority_key(authority, file)?;
    let key = "directory";
    let name = path_key(value, key)
        .map_err(|x| x.in_file(file))?
        .ok_or_else(|| ConfigError::new(file, key, "missing required key (the directory file)"))?;
    let path = resolve(base, &name);
    let text = cfg::read(&path)
        .map_err(|x| ConfigError::new(file, key, format!("{}: {}", x.file, x.message)))?;
    let dir = Directory::parse_verified(&text, &path.display().to_string(), &authority, now)
        .map_err(|x| {
            if x.key.is_empty() && x.message.starts_with(NOT_A_DIRECTORY) {
                // The mistake is this key, which names the wrong file.
                ConfigError::new(file, key, format!("{} {}", x.file, x.message))
            } else if x.message.starts_with(BAD_SIGNATURE) {
                // The directory may be right and this key wrong.
                ConfigError::new(
                    file,
                    "authority",
                    format!(
                        "the directory {} is not signed by this key: its signature does not verify \
                         (the file was changed after it was signed, or another authority signed it)",
                        x.file
                    ),
                )
            } else {
                x
            }
        })?;
    Ok((path, dir))
}
