//! Hosts joined by point-to-point wide-area links, each with its own
//! propagation delay and random loss ([`crate::delay`]).
//!
//! ```text
//!   host A ── lL ═ wLa ─┐                  ┌─ wLb ═ lL ── host B
//!   10.203.L.1/24       └─ wan: delay line ┘      10.203.L.2/24
//! ```
//!
//! Link `L` (0, 1, …) is a subnet of its own, 10.203.L.0/24: end A has
//! .1 and end B .2, both on an interface named `lL`. A host reaches the
//! other end of each of its links directly; nothing is forwarded, so a
//! path through several hosts exists only where a program relays it (an
//! oTCP relay, a BackTap relay). With [`WanSpec::routes`] a host also
//! reaches the addresses of hosts further away, as long as they are the
//! neighbour's own: a route to each other link's subnet through the
//! neighbour on the shortest path ([`routes_to_neighbours`]), which
//! accepts packets for any of its addresses on any interface (Linux's weak
//! host model). A relay bound to one address can then answer a peer that
//! writes from another of its addresses. The hosts' veths segment before sending
//! (`gso_max_segs 1`), as the delay line requires. Each host gets the
//! sysctls asked for (for instance its default congestion control or its
//! receive buffers) and, if asked, an initial congestion window on its
//! links' routes.

use crate::cmd::{args, display, run};
use crate::delay::{DelayLine, Dir, Link, LinkStats};
use crate::netns::Netns;
use crate::overlay::Daemon;
use crate::topology::PREFIX;
use crate::traffic::Clock;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

/// A link between hosts `a` and `b` (indices into [`WanSpec::hosts`]).
#[derive(Clone, Debug, Serialize)]
pub struct WanLink {
    pub a: usize,
    pub b: usize,
    /// Round-trip propagation delay: each direction gets half.
    #[serde(serialize_with = "ser_ms", rename = "rtt_ms")]
    pub rtt: Duration,
    /// Loss probability per frame, in each direction.
    pub loss: f64,
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

#[derive(Clone, Debug, Serialize)]
pub struct WanSpec {
    /// Host names, short (`client`, `relay1`); namespaces add a prefix.
    pub hosts: Vec<String>,
    pub links: Vec<WanLink>,
    /// `initcwnd` on every link's route (Linux's default is 10).
    pub initcwnd: Option<u32>,
    /// `key=value` sysctls set in every host's namespace.
    pub sysctls: Vec<String>,
    /// Routes to the subnets of links a host is not on: each through the
    /// other end of one of its own links ([`routes_to_neighbours`]).
    pub routes: Vec<WanRoute>,
}

/// A route in host `host` to link `to`'s subnet through the other end of
/// its own link `via`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WanRoute {
    pub host: usize,
    pub to: usize,
    pub via: usize,
}

/// For every host, a route to the subnet of every link it is not on,
/// through the neighbour on a shortest path (fewest links) to that link;
/// the first such neighbour in link order, so the routes are the same on
/// every run. Links that no path reaches get no route.
pub fn routes_to_neighbours(hosts: usize, links: &[WanLink]) -> Vec<WanRoute> {
    let mut out = Vec::new();
    for h in 0..hosts {
        // Breadth first from h: each host's distance in links, and the
        // first link out of h on the way there.
        let mut dist = vec![usize::MAX; hosts];
        let mut first: Vec<Option<usize>> = vec![None; hosts];
        dist[h] = 0;
        let mut frontier = vec![h];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for &u in &frontier {
                for (l, k) in links.iter().enumerate() {
                    let v = match (k.a == u, k.b == u) {
                        (true, _) => k.b,
                        (_, true) => k.a,
                        _ => continue,
                    };
                    if v < hosts && dist[v] == usize::MAX {
                        dist[v] = dist[u] + 1;
                        first[v] = if u == h { Some(l) } else { first[u] };
                        next.push(v);
                    }
                }
            }
            frontier = next;
        }
        for (l, k) in links.iter().enumerate() {
            if k.a == h || k.b == h || k.a >= hosts || k.b >= hosts {
                continue;
            }
            // Through the way to the nearer end of the link.
            let end = if dist[k.a] <= dist[k.b] { k.a } else { k.b };
            if let Some(via) = first[end] {
                out.push(WanRoute {
                    host: h,
                    to: l,
                    via,
                });
            }
        }
    }
    out
}

impl WanSpec {
    /// The spec's own errors: unknown hosts, a link to itself, too many links, bad loss.
    pub fn check(&self) -> Result<()> {
        if self.links.len() > MAX_LINKS {
            bail!("{} links: at most {MAX_LINKS}", self.links.len());
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.a >= self.hosts.len() || l.b >= self.hosts.len() || l.a == l.b {
                bail!(
                    "link {i}: hosts {} and {} ({} hosts)",
                    l.a,
                    l.b,
                    self.hosts.len()
                );
            }
            if !(0.0..1.0).contains(&l.loss) {
                bail!("link {i}: loss {} is not in [0, 1)", l.loss);
            }
        }
        for (i, r) in self.routes.iter().enumerate() {
            let via = self.links.get(r.via);
            if r.host >= self.hosts.len()
                || r.to >= self.links.len()
                || !via.is_some_and(|v| v.a == r.host || v.b == r.host)
            {
                bail!(
                    "route {i}: host {} to link {} via link {}: the host is not on that link, or no such host or link",
                    r.host, r.to, r.via
                );
            }
        }
        Ok(())
    }
}

/// Links are numbered into the third octet of 10.203.L.0/24.
pub const MAX_LINKS: usize = 250;

/// End `b_end` (false: A, true: B) of link `l`.
pub fn link_addr(l: usize, b_end: bool) -> Ipv4Addr {
    Ipv4Addr::new(10, 203, l as u8, if b_end { 2 } else { 1 })
}

/// The hosts' interface on link `l`.
pub fn host_dev(l: usize) -> String {
    format!("l{l}")
}

/// The `wan` namespace's interfaces facing link `l`'s ends A and B.
pub fn wan_devs(l: usize) -> (String, String) {
    (format!("w{l}a"), format!("w{l}b"))
}

/// Namespace names of a new instance: `hwlab-PID-N-wan` and one per host.
#[derive(Clone, Debug)]
pub struct WanNames {
    pub wan: String,
    pub hosts: Vec<String>,
}

impl WanNames {
    pub fn new_instance(spec: &WanSpec) -> WanNames {
        let p = crate::netns::instance_prefix(PREFIX);
        WanNames {
            wan: format!("{p}-wan"),
            hosts: spec.hosts.iter().map(|h| format!("{p}-{h}")).collect(),
        }
    }
}

/// The commands that turn IPv6 off in namespace `ns`, to run before its
/// links exist: IPv6's neighbour discovery and multicast would only add
/// frames to a delay line (`-e`: a kernel without IPv6 has no such keys).
pub(crate) fn no_ipv6(ns: &str) -> Vec<(&'static str, Vec<String>)> {
    ["all", "default"]
        .iter()
        .map(|key| {
            (
                "ip",
                args(&[
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qew",
                    &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
                ]),
            )
        })
        .collect()
}

/// The commands that wire up the existing namespaces. Pure, for tests.
pub fn plan(n: &WanNames, spec: &WanSpec) -> Vec<(&'static str, Vec<String>)> {
    let mut p: Vec<(&'static str, Vec<String>)> = Vec::new();
    for ns in n.hosts.iter().chain([&n.wan]) {
        p.extend(no_ipv6(ns));
    }
    for (l, link) in spec.links.iter().enumerate() {
        let dev = host_dev(l);
        let (wa, wb) = wan_devs(l);
        for (host, wdev, b_end) in [(link.a, &wa, false), (link.b, &wb, true)] {
            let ns = &n.hosts[host];
            p.push((
                "ip",
                args(&[
                    "link", "add", &dev, "netns", ns, "type", "veth", "peer", "name", wdev,
                    "netns", &n.wan,
                ]),
            ));
            let a = format!("{}/24", link_addr(l, b_end));
            p.push(("ip", args(&["-n", ns, "addr", "add", &a, "dev", &dev])));
            // One MSS per skb: the delay line copies frames one by one.
            for (ns, d) in [(ns, &dev), (&n.wan, wdev)] {
                p.push((
                    "ip",
                    args(&["-n", ns, "link", "set", d, "up", "gso_max_segs", "1"]),
                ));
            }
            if let Some(w) = spec.initcwnd {
                let net = format!("{}/24", Ipv4Addr::new(10, 203, l as u8, 0));
                p.push((
                    "ip",
                    args(&[
                        "-n",
                        ns,
                        "route",
                        "replace",
                        &net,
                        "dev",
                        &dev,
                        "src",
                        &link_addr(l, b_end).to_string(),
                        "initcwnd",
                        &w.to_string(),
                    ]),
                ));
            }
        }
    }
    for r in &spec.routes {
        let link = &spec.links[r.via];
        // The other end of the host's own link.
        let gw = link_addr(r.via, link.a == r.host);
        let net = format!("{}/24", Ipv4Addr::new(10, 203, r.to as u8, 0));
        p.push((
            "ip",
            args(&[
                "-n",
                &n.hosts[r.host],
                "route",
                "replace",
                &net,
                "via",
                &gw.to_string(),
                "dev",
                &host_dev(r.via),
            ]),
        ));
    }
    for ns in &n.hosts {
        for s in &spec.sysctls {
            p.push(("ip", args(&["netns", "exec", ns, "sysctl", "-qw", s])));
        }
    }
    p
}

/// A built wide-area lab: the namespaces, the delay line and the processes
/// started in the hosts. Dropping it stops the processes and the delay
/// line, then deletes the namespaces.
pub struct Wan {
    pub spec: WanSpec,
    /// Declared first, so that they are dropped first; each with the id
    /// [`Wan::start`] gave it.
    daemons: Vec<(usize, Daemon)>,
    started: usize,
    delay: Option<DelayLine>,
    pub wan: Netns,
    pub hosts: Vec<Netns>,
}

impl Wan {
    /// Creates the namespaces, runs [`plan`] and starts the delay line.
    pub fn build(names: &WanNames, spec: &WanSpec, seed: u64, clock: Clock) -> Result<Wan> {
        spec.check()?;
        let wan = Netns::create(&names.wan)?;
        let mut hosts = Vec::new();
        for h in &names.hosts {
            hosts.push(Netns::create(h)?);
        }
        let mut w = Wan {
            spec: spec.clone(),
            daemons: Vec::new(),
            started: 0,
            delay: None,
            wan,
            hosts,
        };
        for (prog, a) in plan(names, spec) {
            run(prog, &a).with_context(|| format!("building the wan: {}", display(prog, &a)))?;
        }
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(l, k)| {
                let (a_dev, b_dev) = wan_devs(l);
                let dir = Dir {
                    delay: k.rtt / 2,
                    loss: k.loss,
                };
                Link {
                    name: format!("{}-{}", spec.hosts[k.a], spec.hosts[k.b]),
                    a_dev,
                    b_dev,
                    ab: dir,
                    ba: dir,
                }
            })
            .collect();
        w.delay = Some(DelayLine::spawn(w.wan.open()?, links, seed, clock)?);
        Ok(w)
    }

    /// Index of host `name`.
    pub fn host(&self, name: &str) -> Result<usize> {
        self.spec
            .hosts
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("no host {name:?} in the wan"))
    }

    /// Runs `exe args…` in host `i`'s namespace, with its output in `log`,
    /// until the wan is dropped or [`Wan::stop`] stops it. Returns the
    /// process's id for [`Wan::stop`] and [`Wan::wait_for_logs_of`].
    pub fn start(&mut self, i: usize, exe: &Path, a: &[String], log: &Path) -> Result<usize> {
        let d = Daemon::spawn(&self.hosts[i], &self.spec.hosts[i], exe, a, log)?;
        let id = self.started;
        self.started += 1;
        self.daemons.push((id, d));
        Ok(id)
    }

    /// Stops process `id` (if it still runs, and is not already stopped);
    /// returns the CPU seconds it used, as [`Wan::cpu_seconds`] counts them.
    pub fn stop(&mut self, id: usize) -> Option<(String, f64)> {
        let i = self.daemons.iter().position(|(k, _)| *k == id)?;
        let (_, d) = self.daemons.remove(i);
        Some((d.what().to_string(), d.cpu_seconds()))
    }

    /// The CPU seconds (user and system) each running process has used so
    /// far, named as in errors (`relay (relay1)`).
    pub fn cpu_seconds(&self) -> Vec<(String, f64)> {
        self.daemons
            .iter()
            .map(|(_, d)| (d.what().to_string(), d.cpu_seconds()))
            .collect()
    }

    /// Fails, naming the process and the end of its log, if one has
    /// exited, or with its error if the delay line has stopped.
    pub fn check_daemons(&mut self) -> Result<()> {
        self.daemons.iter_mut().try_for_each(|(_, d)| d.check())?;
        self.delay.as_mut().map_or(Ok(()), DelayLine::check)
    }

    /// Waits until every process started has written `line` to its log
    /// (for instance that it listens), or fails after `within`.
    pub fn wait_for_logs(&mut self, line: &str, within: Duration, clock: Clock) -> Result<()> {
        let all: Vec<usize> = self.daemons.iter().map(|(k, _)| *k).collect();
        self.wait_for_logs_of(&all, line, within, clock)
    }

    /// Waits until the processes `ids` have written `line` to their logs,
    /// or fails after `within`.
    pub fn wait_for_logs_of(
        &mut self,
        ids: &[usize],
        line: &str,
        within: Duration,
        clock: Clock,
    ) -> Result<()> {
        let end = clock.now_s() + within.as_secs_f64();
        loop {
            self.check_daemons()?;
            if self
                .daemons
                .iter()
                .filter(|(k, _)| ids.contains(k))
                .all(|(_, d)| d.log_text().contains(line))
            {
                return Ok(());
            }
            if clock.now_s() > end {
                bail!(
                    "the processes did not all log {line:?} within {} s",
                    within.as_secs()
                );
            }
            clock.sleep_until(clock.now_s() + 0.02);
        }
    }

    /// Stops the processes and the delay line; returns what each link did.
    pub fn finish(mut self) -> Result<Vec<LinkStats>> {
        self.daemons.clear();
        match self.delay.take() {
            Some(d) => d.stop(),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> WanSpec {
        WanSpec {
            hosts: vec!["client".into(), "relay".into(), "server".into()],
            links: vec![
                WanLink {
                    a: 0,
                    b: 2,
                    rtt: Duration::from_millis(80),
                    loss: 0.0,
                },
                WanLink {
                    a: 0,
                    b: 1,
                    rtt: Duration::from_millis(40),
                    loss: 0.01,
                },
                WanLink {
                    a: 1,
                    b: 2,
                    rtt: Duration::from_millis(40),
                    loss: 0.01,
                },
            ],
            initcwnd: Some(3),
            sysctls: vec!["net.ipv4.tcp_congestion_control=reno".into()],
            routes: vec![],
        }
    }

    #[test]
    fn plan_gives_each_link_two_veths_into_the_wan_and_its_own_subnet() {
        let s = spec();
        let n = WanNames::new_instance(&s);
        let lines: Vec<String> = plan(&n, &s).iter().map(|(p, a)| display(p, a)).collect();
        let count = |x: &str| lines.iter().filter(|l| l.contains(x)).count();
        assert_eq!(count("type veth"), 6);
        assert_eq!(count("gso_max_segs 1"), 12);
        assert_eq!(count("initcwnd 3"), 6);
        assert_eq!(count("tcp_congestion_control=reno"), 3);
        assert_eq!(count("disable_ipv6=1"), 8, "hosts and wan, all and default");
        let first_veth = lines.iter().position(|l| l.contains("type veth")).unwrap();
        let last_v6 = lines
            .iter()
            .rposition(|l| l.contains("disable_ipv6"))
            .unwrap();
        assert!(last_v6 < first_veth, "IPv6 is off before the links exist");
        let relay = &n.hosts[1];
        assert!(lines.iter().any(|l| l.contains(&format!(
            "link add l1 netns {relay} type veth peer name w1b netns {}",
            n.wan
        ))));
        assert!(lines
            .iter()
            .any(|l| l.ends_with(&format!("-n {relay} addr add 10.203.2.1/24 dev l2"))));
        assert_eq!(link_addr(2, true), Ipv4Addr::new(10, 203, 2, 2));
        s.check().unwrap();
    }

    #[test]
    fn routes_go_through_the_neighbour_towards_each_far_link() {
        // A chain 0 - 1 - 2 - 3 - 4, links 0..3 in order.
        let links: Vec<WanLink> = (0..4)
            .map(|i| WanLink {
                a: i,
                b: i + 1,
                rtt: Duration::from_millis(40),
                loss: 0.0,
            })
            .collect();
        let r = routes_to_neighbours(5, &links);
        // Every host: a route to each link it is not on (5 × 4 links, less
        // the 8 link ends).
        assert_eq!(r.len(), 12);
        let route = |host, to| {
            r.iter()
                .find(|x| x.host == host && x.to == to)
                .map(|x| x.via)
        };
        assert_eq!(route(0, 3), Some(0), "the client goes out of its only link");
        assert_eq!(route(2, 0), Some(1), "towards the client: back over link 1");
        assert_eq!(route(2, 3), Some(2));
        assert_eq!(route(4, 0), Some(3));
        assert_eq!(route(1, 1), None, "no route to a link of its own");
        let spec = WanSpec {
            hosts: (0..5).map(|i| format!("h{i}")).collect(),
            links,
            initcwnd: None,
            sysctls: vec![],
            routes: r,
        };
        spec.check().unwrap();
        let n = WanNames::new_instance(&spec);
        let lines: Vec<String> = plan(&n, &spec).iter().map(|(p, a)| display(p, a)).collect();
        // Host 2 reaches link 0's subnet through host 1's end of link 1.
        assert!(
            lines.iter().any(|l| l.ends_with(&format!(
                "-n {} route replace 10.203.0.0/24 via 10.203.1.1 dev l1",
                n.hosts[2]
            ))),
            "{lines:#?}"
        );
        assert!(lines.iter().any(|l| l.ends_with(&format!(
            "-n {} route replace 10.203.3.0/24 via 10.203.0.2 dev l0",
            n.hosts[0]
        ))));
        let mut bad = spec.clone();
        bad.routes[0].via = 3;
        assert!(bad.check().unwrap_err().to_string().starts_with("route 0:"));
    }

    #[test]
    fn bad_specs_are_refused_with_the_link_named() {
        let mut s = spec();
        s.links[1].b = 0;
        assert!(s.check().unwrap_err().to_string().starts_with("link 1:"));
        let mut s = spec();
        s.links[2].loss = 1.0;
        assert!(s
            .check()
            .unwrap_err()
            .to_string()
            .contains("link 2: loss 1"));
        let mut s = spec();
        s.links = vec![s.links[0].clone(); MAX_LINKS + 1];
        assert!(s.check().is_err());
    }
}
