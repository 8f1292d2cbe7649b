//! The directory file: the relays, their addresses, keys and flags.

use super::raw::RawDirectory;
use super::{addr, err, path_key, resolve, table, ConfigError, R};
use hopwise_config::{self as cfg, did_you_mean, Seg};
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
