//! An overlay in namespaces: five hosts on one switch, and the daemon
//! (`hopwise relay`, `hopwise proxy`) running in them as processes.
//!
//! ```text
//!   client ─┐                      client: the proxy (SOCKS5) and the downloader
//!   relay1 ─┤◀ bottleneck          relay1–3: BackTap relays over UDP, relay3 the exit
//!   relay2 ─┼─ br0 (namespace sw)  server: a TCP server that sends as fast as it can
//!   relay3 ─┤
//!   server ─┘
//! ```
//!
//! The switch is a Linux bridge in its own namespace with one veth port
//! per host; the port towards the bottleneck host has an HTB class at the
//! link rate with a `bfifo` buffer, so everything sent to that host queues
//! there. All other ports run at veth speed. Hosts share one subnet,
//! 10.202.0.0/24.

use crate::cmd::{args, display, run};
use crate::netns::Netns;
use crate::tc::{self, QdiscStats};
use crate::topology::{Buffer, LEAF, PREFIX};
use anyhow::{Context, Result};
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The hosts, in the order of their addresses (10.202.0.1 …).
pub const HOSTS: [&str; 5] = ["client", "relay1", "relay2", "relay3", "server"];
pub const CLIENT: usize = 0;
pub const SERVER: usize = 4;
/// The relays' UDP port.
pub const RELAY_PORT: u16 = 9001;
/// The proxy's SOCKS5 port (on the client's address).
pub const SOCKS_PORT: u16 = 1080;
const BRIDGE: &str = "br0";
const HOST_DEV: &str = "e0";

/// Host `i`'s address.
pub fn addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 202, 0, i as u8 + 1)
}

/// The switch port towards host `i`.
pub fn port_dev(i: usize) -> String {
    format!("p-{}", HOSTS[i])
}

/// The bottleneck.
#[derive(Clone, Debug, Serialize)]
pub struct OverlaySpec {
    /// Host whose switch port is shaped: traffic *to* it queues there.
    pub bottleneck_host: usize,
    pub rate_bps: u64,
    pub buffer: Buffer,
}

/// Namespace names of a new instance: `hwlab-PID-N-sw` and one per host.
#[derive(Clone, Debug)]
pub struct OverlayNames {
    pub sw: String,
    pub hosts: Vec<String>,
}

impl OverlayNames {
    pub fn new_instance() -> OverlayNames {
        let p = crate::netns::instance_prefix(PREFIX);
        OverlayNames {
            sw: format!("{p}-sw"),
            hosts: HOSTS.iter().map(|h| format!("{p}-{h}")).collect(),
        }
    }
}

/// The commands that wire up the existing namespaces. Pure, for tests.
pub fn plan(n: &OverlayNames, spec: &OverlaySpec) -> Vec<(&'static str, Vec<String>)> {
    let mut p: Vec<(&'static str, Vec<String>)> = Vec::new();
    p.push((
        "ip",
        args(&["-n", &n.sw, "link", "add", BRIDGE, "type", "bridge"]),
    ));
    p.push(("ip", args(&["-n", &n.sw, "link", "set", BRIDGE, "up"])));
    for (i, ns) in n.hosts.iter().enumerate() {
        let port = port_dev(i);
        p.push((
            "ip",
            args(&[
                "link", "add", HOST_DEV, "netns", ns, "type", "veth", "peer", "name", &port,
                "netns", &n.sw,
            ]),
        ));
        let a = format!("{}/24", addr(i));
        p.push(("ip", args(&["-n", ns, "addr", "add", &a, "dev", HOST_DEV])));
        // One MSS per skb on both ends, so that the qdisc sees wire-sized packets.
        p.push((
            "ip",
            args(&["-n", ns, "link", "set", HOST_DEV, "up", "gso_max_segs", "1"]),
        ));
        p.push((
            "ip",
            args(&["-n", &n.sw, "link", "set", &port, "master", BRIDGE]),
        ));
        p.push((
            "ip",
            args(&["-n", &n.sw, "link", "set", &port, "up", "gso_max_segs", "1"]),
        ));
    }
    let dev = port_dev(spec.bottleneck_host);
    let rate = format!("{}bit", spec.rate_bps);
    p.push((
        "tc",
        args(&[
            "-n", &n.sw, "qdisc", "add", "dev", &dev, "root", "handle", "1:", "htb", "default", "1",
        ]),
    ));
    p.push((
        "tc",
        args(&[
            "-n", &n.sw, "class", "add", "dev", &dev, "parent", "1:", "classid", "1:1", "htb",
            "rate", &rate, "ceil", &rate,
        ]),
    ));
    let (kind, limit) = match spec.buffer {
        Buffer::Bytes(b) => ("bfifo", b),
        Buffer::Packets(k) => ("pfifo", k),
    };
    p.push((
        "tc",
        args(&[
            "-n",
            &n.sw,
            "qdisc",
            "add",
            "dev",
            &dev,
            "parent",
            "1:1",
            "handle",
            LEAF,
            kind,
            "limit",
            &limit.to_string(),
        ]),
    ));
    p
}

/// A built overlay. Dropping it stops its processes, then deletes the namespaces.
pub struct Overlay {
    pub spec: OverlaySpec,
    /// Declared before the namespaces, so that they are dropped first.
    daemons: Vec<Daemon>,
    pub sw: Netns,
    pub hosts: Vec<Netns>,
}

impl Overlay {
    pub fn build(names: &OverlayNames, spec: &OverlaySpec) -> Result<Overlay> {
        let sw = Netns::create(&names.sw)?;
        let mut hosts = Vec::new();
        for h in &names.hosts {
            hosts.push(Netns::create(h)?);
        }
        let o = Overlay {
            spec: spec.clone(),
            daemons: Vec::new(),
            sw,
            hosts,
        };
        for (prog, a) in plan(names, spec) {
            run(prog, &a)
                .with_context(|| format!("building the overlay: {}", display(prog, &a)))?;
        }
        Ok(o)
    }

    /// The bottleneck's qdisc statistics.
    pub fn qdiscs(&self) -> Result<Vec<QdiscStats>> {
        let out = self.sw.tc(&["-s", "-j", "qdisc", "show"])?;
        tc::parse(&out, &format!("tc -n {} -s -j qdisc show", self.sw.name()))
    }

    /// The bottleneck leaf's counters (backlog, drops, bytes sent).
    pub fn bottleneck(&self) -> Result<QdiscStats> {
        let q = self.qdiscs()?;
        let dev = port_dev(self.spec.bottleneck_host);
        tc::find(&q, &dev, LEAF).cloned().with_context(|| {
            format!(
                "no qdisc {LEAF} on {dev} in {}: the bottleneck is gone",
                self.sw.name()
            )
        })
    }

    /// Runs `exe args…` in host `i`'s namespace (`ip netns exec`), with its
    /// output in `log`. It is stopped when the overlay is dropped.
    pub fn start(&mut self, i: usize, exe: &Path, a: &[String], log: &Path) -> Result<()> {
        let d = Daemon::spawn(&self.hosts[i], HOSTS[i], exe, a, log)?;
        self.daemons.push(d);
        Ok(())
    }

    /// Fails, naming the process and the end of its log, if a daemon has exited.
    pub fn check_daemons(&mut self) -> Result<()> {
        self.daemons.iter_mut().try_for_each(Daemon::check)
    }

    /// The CPU seconds each process has used so far ([`Daemon`]'s).
    pub fn cpu_seconds(&self) -> Vec<(String, f64)> {
        self.daemons
            .iter()
            .map(|d| (d.what.clone(), d.cpu_seconds()))
            .collect()
    }
}

/// A child process in a namespace, killed when dropped.
pub(crate) struct Daemon {
    child: Child,
    what: String,
    log: PathBuf,
}

impl Daemon {
    /// Runs `exe args…` in `ns` (`ip netns exec`), with its output in
    /// `log`; `host` names the namespace's host in errors.
    pub(crate) fn spawn(
        ns: &Netns,
        host: &str,
        exe: &Path,
        a: &[String],
        log: &Path,
    ) -> Result<Daemon> {
        let out = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let err = out
            .try_clone()
            .with_context(|| format!("cannot reopen {}", log.display()))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns.name()])
            .arg(exe)
            .args(a)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // A child inherits the signal mask, and a run that cleans up on
        // Ctrl-C blocks SIGINT and SIGTERM in its threads
        // (`netns::clean_up_on_interrupt`): unblock them for the spawn, so
        // that the daemon stops on them as it would anywhere else.
        let stop = {
            use nix::sys::signal::{SigSet, Signal};
            let mut s = SigSet::empty();
            s.add(Signal::SIGINT);
            s.add(Signal::SIGTERM);
            s
        };
        let before = stop.thread_swap_mask(nix::sys::signal::SigmaskHow::SIG_UNBLOCK);
        let spawned = cmd.spawn();
        if let Ok(mask) = before {
            let _ = mask.thread_set_mask();
        }
        let child = spawned.with_context(|| {
            format!(
                "cannot start {} {} in {}",
                exe.display(),
                a.join(" "),
                ns.name()
            )
        })?;
        Ok(Daemon {
            child,
            what: format!("{} ({host})", a.first().map_or("", |s| s.as_str())),
            log: log.to_path_buf(),
        })
    }

    /// Fails, naming the process and the end of its log, if it has exited.
    pub(crate) fn check(&mut self) -> Result<()> {
        if let Ok(Some(st)) = self.child.try_wait() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            anyhow::bail!(
                "{} exited ({st}); the end of {}:\n  {}",
                self.what,
                self.log.display(),
                tail.join("\n  ")
            );
        }
        Ok(())
    }

    /// The daemon's log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// What it is, as errors name it: `relay (relay1)`.
    pub(crate) fn what(&self) -> &str {
        &self.what
    }

    /// The CPU seconds (user and system) the process has used so far, from
    /// `/proc/PID/stat` (`ip netns exec` runs the program in its own
    /// process); NaN once it is gone.
    pub(crate) fn cpu_seconds(&self) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .ok()
            .and_then(|s| cpu_seconds_of_stat(&s))
            .unwrap_or(f64::NAN)
    }
}

/// `utime + stime` of a `/proc/PID/stat` line, in seconds: fields 14 and
/// 15 (proc(5)), counted after the command name, which is in parentheses
/// and may hold spaces. The kernel reports them in USER_HZ ticks, 100 per
/// second on every architecture Linux exports to user space.
pub fn cpu_seconds_of_stat(stat: &str) -> Option<f64> {
    const USER_HZ: f64 = 100.0;
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so utime (14) is the 12th.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A relay's UDP address.
pub fn relay_addr(relay: usize) -> SocketAddr {
    SocketAddr::from((addr(relay + 1), RELAY_PORT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_bridges_every_host_and_shapes_only_the_bottleneck_port() {
        let n = OverlayNames::new_instance();
        let spec = OverlaySpec {
            bottleneck_host: 1,
            rate_bps: 10_000_000,
            buffer: Buffer::Bytes(250_000),
        };
        let lines: Vec<String> = plan(&n, &spec)
            .iter()
            .map(|(prog, a)| display(prog, a))
            .collect();
        let count = |s: &str| lines.iter().filter(|l| l.contains(s)).count();
        assert_eq!(count("master br0"), 5);
        assert_eq!(count("gso_max_segs 1"), 10);
        assert_eq!(count("htb rate 10000000bit"), 1);
        assert!(lines.iter().any(
            |l| l.ends_with("qdisc add dev p-relay1 parent 1:1 handle 10: bfifo limit 250000")
        ));
        assert!(lines
            .iter()
            .filter(|l| l.starts_with("tc "))
            .all(|l| l.contains("dev p-relay1")));
        assert!(lines
            .iter()
            .any(|l| l.contains("addr add 10.202.0.5/24 dev e0")));
        assert_eq!(relay_addr(2), "10.202.0.4:9001".parse().unwrap());
    }

    #[test]
    fn cpu_seconds_come_from_the_fields_after_the_command_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
        // majflt cmajflt utime stime …; the name may hold spaces and ')'.
        let stat = "42 (hop wise) x) S 1 42 42 0 -1 4194560 10 0 0 0 250 130 0 0 20 0";
        assert_eq!(cpu_seconds_of_stat(stat), Some(3.8));
        assert_eq!(cpu_seconds_of_stat("42 (x) S 1"), None);
        assert_eq!(cpu_seconds_of_stat("no parenthesis"), None);
    }
}
