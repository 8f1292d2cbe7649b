//! A network namespace that is deleted when dropped.

use crate::cmd::{args, run};
use anyhow::{Context, Result};
use std::fs::File;
use std::path::PathBuf;

/// A named network namespace (`ip netns add NAME`), deleted with
/// `ip netns del` when dropped, so that a failed or interrupted experiment
/// leaves nothing behind (kill -9 excepted: `hopwise lab clean` removes
/// leftovers).
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

    /// Sets a sysctl inside the namespace (`ip netns exec NAME sysctl -qw KEY=VALUE`).
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let kv = format!("{key}={value}");
        run(
            "ip",
            &args(&["netns", "exec", &self.name, "sysctl", "-qw", &kv]),
        )?;
        Ok(())
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

/// Deletes every namespace whose name starts with `prefix`; returns their names.
pub fn clean(prefix: &str) -> Result<Vec<String>> {
    let names = list(prefix)?;
    for n in &names {
        run("ip", &args(&["netns", "del", n]))?;
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_output_is_parsed_with_and_without_ids() {
        let out = "hwlab-123-home (id: 2)\nhwlab-123-rtr (id: 1)\nother\n\n";
        assert_eq!(
            parse_list(out),
            vec!["hwlab-123-home", "hwlab-123-rtr", "other"]
        );
    }
}
