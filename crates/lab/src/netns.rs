//! A network namespace that is deleted when dropped.

use crate::cmd::{args, run};
use anyhow::{Context, Result};
use std::fs::File;
use std::path::PathBuf;

/// A named network namespace (`ip netns add NAME`), deleted with
/// `ip netns del` when dropped, so that a failed or interrupted experiment
/// leaves nothing behind; processes still inside it are killed first. A
/// run ended by a signal (Ctrl-C, kill) skips the drop; `hopwise lab clean`
/// removes its leftovers, processes included.
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
        kill_inside(&self.name);
        let _ = run("ip", &args(&["netns", "del", &self.name]));
    }
}

/// Kills every process still running in namespace `name` (`ip netns pids`):
/// deleting a namespace only removes its name, and a process inside it
/// (a relay of `hopwise lab backtap` whose parent was killed) would keep
/// running there for good.
fn kill_inside(name: &str) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let Ok(out) = run("ip", &args(&["netns", "pids", name])) else {
        return;
    };
    for pid in parse_pids(&out) {
        if pid != std::process::id() as i32 {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The PIDs in `ip netns pids` output, one per line.
fn parse_pids(out: &str) -> Vec<i32> {
    out.lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
        .collect()
}

/// `PREFIX` + this process's PID + a number unique within the process:
/// the start of a lab instance's namespace names. The PID comes first, so
/// that [`clean`] can tell whether the owner still runs; the number keeps
/// two labs of one process (tests running in parallel) apart.
pub fn instance_prefix(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}{}-{n}", std::process::id())
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
/// owner (`PREFIXPID-…`) is no longer running, after killing the processes
/// left inside it; returns their names.
pub fn clean(prefix: &str) -> Result<Vec<String>> {
    delete_where(prefix, |n| !owner_alive(&n[prefix.len()..]))
}

/// Deletes this process's own namespaces that start with `prefix` (after
/// killing what runs inside them), for a run that is interrupted; returns
/// their names.
pub fn clean_own(prefix: &str) -> Result<Vec<String>> {
    let mine = format!("{prefix}{}-", std::process::id());
    delete_where(prefix, |n| n.starts_with(&mine))
}

/// Deletes the namespaces starting with `prefix` that `pick` chooses,
/// after killing the processes left inside them; returns their names.
fn delete_where(prefix: &str, pick: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    let mut gone = Vec::new();
    for n in list(prefix)? {
        if pick(&n) {
            kill_inside(&n);
            run("ip", &args(&["netns", "del", &n]))?;
            gone.push(n);
        }
    }
    Ok(gone)
}

/// The namespaces starting with `prefix` that belong to a process still
/// running (which [`clean`] leaves alone), with that process's PID.
pub fn live(prefix: &str) -> Result<Vec<(String, String)>> {
    Ok(list(prefix)?
        .into_iter()
        .filter(|n| owner_alive(&n[prefix.len()..]))
        .map(|n| {
            let pid = n[prefix.len()..]
                .split('-')
                .next()
                .unwrap_or("")
                .to_string();
            (n, pid)
        })
        .collect())
}

/// Makes Ctrl-C (SIGINT) or SIGTERM during a lab run delete this process's
/// namespaces and the relays in them, say so, and exit with 130 or 143,
/// instead of leaving them for `hopwise lab clean`. Call it before any
/// thread starts: it blocks both signals in the calling thread, which
/// every thread started later inherits, and waits for them on a thread of
/// its own. Programs started meanwhile inherit the mask too: the daemons
/// are started with it lifted (`Overlay::start`); `ip` and `tc` finish on
/// their own.
pub fn clean_up_on_interrupt(prefix: &'static str) -> Result<()> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    set.thread_block()
        .map_err(|e| anyhow::anyhow!("blocking SIGINT and SIGTERM: {e}"))?;
    std::thread::spawn(move || {
        let Ok(sig) = set.wait() else {
            return;
        };
        let gone = clean_own(prefix).unwrap_or_default();
        eprintln!(
            "\ninterrupted ({}): removed {} of this run",
            sig.as_str(),
            if gone.len() == 1 {
                "1 namespace".to_string()
            } else {
                format!("{} namespaces", gone.len())
            }
        );
        std::process::exit(if sig == Signal::SIGINT { 130 } else { 143 });
    });
    Ok(())
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
    fn instance_prefixes_are_unique_and_start_with_the_pid() {
        let (a, b) = (instance_prefix("hwlab-"), instance_prefix("hwlab-"));
        assert_ne!(a, b);
        assert!(owner_alive(&a["hwlab-".len()..]));
    }

    #[test]
    fn pids_are_parsed_one_per_line_and_nonsense_is_skipped() {
        assert_eq!(parse_pids("123\n 456 \n\nx\n-1\n0\n"), vec![123, 456]);
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
