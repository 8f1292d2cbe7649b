//! A network namespace that is deleted when dropped.

use crate::cmd::{args, run};
use anyhow::{Context, Result};
use std::fs::File;
use std::path::PathBuf;

/// A named network namespace (`ip netns add NAME`), deleted with
/// `ip netns del` when dropped, so that a failed or interrupted experiment
/// leaves nothing behind. A run ended by a signal (Ctrl-C, kill) skips the
/// drop; `hopwise lab clean` removes its leftovers.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates the namespace and brings its loopback up.
    pub fn create(name: &str) -> Result<Netns> {
        run("ip", &args(&["netns", "add", name]))?;
        let ns = Netns { name: name.into() };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME args…`.
    pub fn ip(&self, a: &[&str]) -> Result<String> {
        let mut v = args(&["-n", &self.name]);
        v.extend(args(a));
        run("ip", &v)
    }

    /// `tc -n NAME args…`.
    pub fn tc(&self, a: &[&str]) -> Result<String> {
        let mut v = args(&["-n", &self.name]);
        v.extend(args(a));
        run("tc", &v)
    }

    /// The namespace's file, for `setns(2)`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// Opens the namespace's file.
    pub fn open(&self) -> Result<File> {
        let p = self.path();
        File::open(&p).with_context(|| format!("cannot open {}", p.display()))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &args(&["netns", "del", &self.name]));
    }
}

/// Names of existing namespaces that start with `prefix` (`ip netns list`).
pub fn list(prefix: &str) -> Result<Vec<String>> {
    let out = run("ip", &args(&["netns", "list"]))?;
    Ok(parse_list(&out)
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect())
}

/// The names in `ip netns list` output ("NAME" or "NAME (id: N)" per line).
pub fn parse_list(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Deletes every namespace whose name starts with `prefix` and whose
/// owner (`PREFIXPID-…`) is no longer running; returns their names.
pub fn clean(prefix: &str) -> Result<Vec<String>> {
    let mut gone = Vec::new();
    for n in list(prefix)? {
        if owner_alive(&n[prefix.len()..]) {
            continue;
        }
        run("ip", &args(&["netns", "del", &n]))?;
        gone.push(n);
    }
    Ok(gone)
}

/// Whether the PID at the start of `rest` ("PID-inet") is a running process.
fn owner_alive(rest: &str) -> bool {
    let pid = rest.split('-').next().unwrap_or("");
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && std::path::Path::new("/proc").join(pid).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_spares_namespaces_of_running_processes() {
        assert!(owner_alive(&format!("{}-inet", std::process::id())));
        assert!(!owner_alive("4294967295-inet"));
        assert!(!owner_alive("check-inet"));
        assert!(!owner_alive(""));
    }

    #[test]
    fn list_output_is_parsed_with_and_without_ids() {
        let out = "hwlab-123-home (id: 2)\nhwlab-123-rtr (id: 1)\nother\n\n";
        assert_eq!(
            parse_list(out),
            vec!["hwlab-123-home", "hwlab-123-rtr", "other"]
        );
    }
}
