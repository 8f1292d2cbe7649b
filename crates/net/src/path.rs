//! Path selection for the proxy's random paths (`docs/relay.md`, "Path
//! selection"): a persistent guard, then an exit whose directory
//! `exit_policy` accepts the destination, then a middle; each picked with a
//! chance proportional to its directory `bandwidth`; no two relays of a path
//! in the same /16 (IPv4) or /32 (IPv6) unless the proxy turns that rule off
//! (`path_subnet_rule = false`), nor of the same declared `family`.
//!
//! This follows the shape of Tor's path selection (path-spec §2.2, "Path
//! selection and constraints": no two relays of one family or one /16, an
//! exit that supports the request, a guard as the first hop; guard-spec for
//! why a guard persists), simplified: see `docs/relay.md`.
//!
//! Nothing here reads a clock or OS randomness: the RNG state comes in.

use crate::config::{Directory, RelayEntry};
use hopwise_proto::circuit::policy::{AddrPattern, ExitPolicy, Verdict};
use hopwise_proto::link::{hex, parse_key};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The next number of the proxy's xorshift64 generator (state never 0).
pub fn next_u64(rng: &mut u64) -> u64 {
    if *rng == 0 {
        *rng = 0x9e37_79b9_7f4a_7c15;
    }
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// One of `candidates` (directory indices), each with a chance proportional
/// to its `bandwidth`; `None` if there is none.
pub fn weighted(dir: &Directory, candidates: &[usize], rng: &mut u64) -> Option<usize> {
    let total: u64 = candidates.iter().map(|&i| dir.relays[i].bandwidth).sum();
    if total == 0 {
        return None;
    }
    let mut x = next_u64(rng) % total;
    for &i in candidates {
        let w = dir.relays[i].bandwidth;
        if x < w {
            return Some(i);
        }
        x -= w;
    }
    None
}

fn canon(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `a` and `b` are in one /16 (IPv4) or one /32 (IPv6).
/// IPv4-mapped IPv6 addresses count as the IPv4 address.
pub fn same_subnet(a: IpAddr, b: IpAddr) -> bool {
    match (canon(a), canon(b)) {
        (IpAddr::V4(a), IpAddr::V4(b)) => a.octets()[..2] == b.octets()[..2],
        (IpAddr::V6(a), IpAddr::V6(b)) => a.octets()[..4] == b.octets()[..4],
        _ => false,
    }
}

/// Whether `a` and `b` may not be on one path: the same relay, the same
/// declared family, or (with `subnet_rule`) the same /16 or /32.
pub fn conflict(a: &RelayEntry, b: &RelayEntry, subnet_rule: bool) -> bool {
    a.key == b.key
        || (a.family.is_some() && a.family == b.family)
        || (subnet_rule && same_subnet(a.address.ip(), b.address.ip()))
}

/// Whether an exit with `policy` may accept a stream to `host:port`. An IP
/// address is checked as the exit checks it. A host name is resolved at
/// the exit, so the proxy cannot know its address: the policy may accept
/// it unless it refuses the port for every address (a `reject *:PORTS`
/// rule covering the port before any `accept` rule that covers it, or no
/// such rule and a `reject` default).
pub fn accepts(policy: &ExitPolicy, host: &str, port: u16) -> bool {
    let literal = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return policy.allows(ip, port);
    }
    for r in &policy.rules {
        if port < r.ports.0 || port > r.ports.1 {
            continue;
        }
        match r.verdict {
            // Unless reject_private refuses everything it matches first.
            Verdict::Accept if !(policy.reject_private && r.addr.private_range().is_some()) => {
                return true
            }
            Verdict::Reject if r.addr == AddrPattern::Any => return false,
            _ => {}
        }
    }
    policy.default == Verdict::Accept
}

/// A destination as messages write it.
fn dest_text(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Why no path could be chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    /// The directory has no relay to be the guard.
    NoGuard,
    /// No relay flagged `exit` (other than the guard) accepts the
    /// destination (`None`: any destination).
    NoExit {
        dest: Option<String>,
        guard: String,
        /// The guard is an exit that accepts it.
        guard_would: bool,
    },
    /// Exits accept it, but each is in the guard's family or subnet.
    ExitsConflict {
        dest: Option<String>,
        guard: String,
        exits: Vec<String>,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = |d: &Option<String>| match d {
            Some(d) => format!("accepts {d} (by its exit_policy in the directory)"),
            None => "is flagged \"exit\"".to_string(),
        };
        match self {
            PathError::NoGuard => f.write_str("the directory lists no relay to be the guard"),
            PathError::NoExit {
                dest,
                guard,
                guard_would,
            } => {
                write!(
                    f,
                    "no relay of the directory other than the guard `{guard}` {}",
                    what(dest)
                )?;
                if *guard_would {
                    write!(
                        f,
                        " (the guard does, but a path needs an exit that is not its guard)"
                    )?;
                }
                Ok(())
            }
            PathError::ExitsConflict { dest, guard, exits } => write!(
                f,
                "every exit that {} ({}) shares the guard `{guard}`'s family or subnet \
                 (/16 for IPv4, /32 for IPv6; path_subnet_rule = false allows one subnet)",
                what(dest),
                exits.join(", ")
            ),
        }
    }
}

impl std::error::Error for PathError {}

/// The relays a guard is chosen from, in the first of these that is not
/// empty: relays flagged `guard` that are not exits; relays that are not
/// exits; relays flagged `guard`; every relay. An exit is a guard only
/// when there is no other choice: it would leave fewer exits for paths.
pub fn guard_candidates(dir: &Directory) -> Vec<usize> {
    let tiers: [&dyn Fn(&RelayEntry) -> bool; 4] =
        [&|r| r.guard && !r.exit, &|r| !r.exit, &|r| r.guard, &|_| {
            true
        }];
    for t in tiers {
        let c: Vec<usize> = (0..dir.relays.len())
            .filter(|&i| t(&dir.relays[i]))
            .collect();
        if !c.is_empty() {
            return c;
        }
    }
    Vec::new()
}

/// A random path through `guard` (a directory index) for a stream to
/// `dest` (`None`: any destination): the guard, a middle, an exit. Two
/// relays (guard and exit) when no middle fits the rules.
pub fn choose_path(
    dir: &Directory,
    guard: usize,
    dest: Option<(&str, u16)>,
    subnet_rule: bool,
    rng: &mut u64,
) -> Result<Vec<usize>, PathError> {
    let g = &dir.relays[guard];
    let ok = |r: &RelayEntry| r.exit && dest.is_none_or(|(h, p)| accepts(&r.exit_policy, h, p));
    let exits: Vec<usize> = (0..dir.relays.len())
        .filter(|&i| i != guard && ok(&dir.relays[i]))
        .collect();
    let dest_s = dest.map(|(h, p)| dest_text(h, p));
    if exits.is_empty() {
        return Err(PathError::NoExit {
            dest: dest_s,
            guard: g.name.clone(),
            guard_would: ok(g),
        });
    }
    let fits: Vec<usize> = exits
        .iter()
        .copied()
        .filter(|&i| !conflict(g, &dir.relays[i], subnet_rule))
        .collect();
    let Some(exit) = weighted(dir, &fits, rng) else {
        return Err(PathError::ExitsConflict {
            dest: dest_s,
            guard: g.name.clone(),
            exits: exits.iter().map(|&i| dir.relays[i].name.clone()).collect(),
        });
    };
    let e = &dir.relays[exit];
    let middles: Vec<usize> = (0..dir.relays.len())
        .filter(|&i| {
            let m = &dir.relays[i];
            !conflict(g, m, subnet_rule) && !conflict(e, m, subnet_rule)
        })
        .collect();
    Ok(match weighted(dir, &middles, rng) {
        Some(m) => vec![guard, m, exit],
        None => vec![guard, exit],
    })
}

/// The proxy's guard and the file that keeps it across restarts.
///
/// The file (TOML, written by the proxy) has one key, `guard`: the relay's
/// public key in hex. The guard is kept while the directory lists that key
/// among the [`guard_candidates`]; else another is chosen and stored.
#[derive(Clone, Debug, Default)]
pub struct GuardState {
    pub file: Option<PathBuf>,
    pub key: Option<[u8; 32]>,
}

impl GuardState {
    /// Reads `file` if it exists; `None`: nothing is stored (the guard is
    /// chosen anew at every start). An unreadable or malformed file is an
    /// error naming it.
    pub fn load(file: Option<PathBuf>) -> Result<GuardState, String> {
        let Some(path) = file else {
            return Ok(GuardState::default());
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(GuardState {
                    file: Some(path),
                    key: None,
                })
            }
            Err(e) => {
                return Err(format!(
                    "{}: cannot read the proxy's state: {e}",
                    path.display()
                ))
            }
        };
        let key = parse_state(&text).map_err(|m| {
            format!(
                "{}: {m} (the proxy writes this file; delete it to choose a new guard)",
                path.display()
            )
        })?;
        Ok(GuardState {
            file: Some(path),
            key,
        })
    }

    /// The guard for the next path: the stored one while it is usable, else
    /// a new one (bandwidth-weighted among [`guard_candidates`]), stored.
    /// A file that cannot be written is logged; the guard is then kept for
    /// this run only.
    pub fn guard(&mut self, dir: &Directory, rng: &mut u64) -> Result<usize, PathError> {
        let candidates = guard_candidates(dir);
        if let Some(k) = self.key {
            if let Some(&i) = candidates.iter().find(|&&i| dir.relays[i].key == k) {
                return Ok(i);
            }
            tracing::warn!(guard = %hex(&k), "the stored guard is no longer a usable guard in the directory; choosing another");
        }
        let i = weighted(dir, &candidates, rng).ok_or(PathError::NoGuard)?;
        let r = &dir.relays[i];
        self.key = Some(r.key);
        tracing::info!(guard = %r.name, "chose a guard");
        if let Some(f) = &self.file {
            if let Err(e) = save_state(f, r) {
                tracing::warn!(
                    "{}: cannot store the guard (kept for this run only): {e}",
                    f.display()
                );
            }
        }
        Ok(i)
    }
}

/// The guard key of a state file's text.
fn parse_state(text: &str) -> Result<Option<[u8; 32]>, String> {
    let t: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("not a TOML file: {}", e.message()))?;
    if let Some(k) = t.keys().find(|k| *k != "guard") {
        return Err(format!(
            "unknown key `{k}` (the state file has only `guard`)"
        ));
    }
    match t.get("guard") {
        None => Ok(None),
        Some(toml::Value::String(s)) => match parse_key(s) {
            Some(k) => Ok(Some(k)),
            None => Err(format!("guard: `{s}` is not a relay key (64 hex digits)")),
        },
        Some(v) => Err(format!("guard: expected a string, got a {}", v.type_str())),
    }
}

/// Writes the state file for guard `r` (a temporary file renamed over it).
fn save_state(file: &Path, r: &RelayEntry) -> std::io::Result<()> {
    let text = format!(
        "# hopwise proxy state, written by the proxy: its guard (relay `{}` when chosen).\n\
         # Delete this file to choose a new guard.\n\
         guard = \"{}\"\n",
        r.name.replace(['\n', '\r'], " "),
        hex(&r.key)
    );
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// The state file a proxy uses when its config names none: next to its
/// `key_file`, the key file's name with `.state.toml` for its extension
/// (`proxy.key` → `proxy.state.toml`); none without a key file.
pub fn default_state_file(key_file: Option<&Path>) -> Option<PathBuf> {
    key_file.map(|k| k.with_extension("state.toml"))
}

/// Whether the exit `exit` (a directory index; `None`: a configured path,
/// whose exit the proxy does not second-guess) may accept `host:port`.
pub fn exit_accepts(dir: &Directory, exit: Option<usize>, host: &str, port: u16) -> bool {
    exit.is_none_or(|e| accepts(&dir.relays[e].exit_policy, host, port))
}

/// Which circuit a new stream goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The circuit in use.
    Current,
    /// The spare circuit at this index, whose exit accepts the destination.
    Spare(usize),
    /// A new circuit, with an exit that accepts it.
    New,
}

/// Where a stream to `host:port` goes: on the circuit in use if its exit
/// (`current`, as for [`exit_accepts`]) may accept it, else on the first
/// spare (an earlier circuit, by its exit) that may, else on a new circuit.
pub fn route<C>(
    dir: &Directory,
    current: Option<usize>,
    spares: &[(C, usize)],
    host: &str,
    port: u16,
) -> Route {
    if exit_accepts(dir, current, host, port) {
        return Route::Current;
    }
    match spares
        .iter()
        .position(|(_, e)| exit_accepts(dir, Some(*e), host, port))
    {
        Some(j) => Route::Spare(j),
        None => Route::New,
    }
}

/// The path of a proxy's next circuit, as directory indices, entry first:
/// the `configured` one, or a random one through the guard for `dest`.
pub fn next_path(
    dir: &Directory,
    configured: Option<&[String]>,
    guard: &mut GuardState,
    subnet_rule: bool,
    rng: &mut u64,
    dest: Option<(&str, u16)>,
) -> Result<Vec<usize>, PathError> {
    if let Some(p) = configured {
        return Ok(p.iter().filter_map(|n| dir.find(n)).collect());
    }
    let g = guard.guard(dir, rng)?;
    choose_path(dir, g, dest, subnet_rule, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::circuit::policy::Rule;
    use std::net::SocketAddr;

    fn relay(n: u8, addr: &str, flags: &str) -> RelayEntry {
        let mut r = RelayEntry::new(
            &format!("r{n}"),
            addr.parse::<SocketAddr>().unwrap(),
            [n; 32],
        );
        r.guard = flags.contains('g');
        r.exit = flags.contains('e');
        r
    }

    fn policy(rules: &[&str]) -> ExitPolicy {
        ExitPolicy {
            reject_private: false,
            rules: rules.iter().map(|r| Rule::parse(r).unwrap()).collect(),
            default: Verdict::Accept,
        }
    }

    #[test]
    fn subnets() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(same_subnet(ip("10.1.2.3"), ip("10.1.200.1")));
        assert!(!same_subnet(ip("10.1.2.3"), ip("10.2.2.3")));
        assert!(same_subnet(ip("2001:db8::1"), ip("2001:db8:ffff::1")));
        assert!(!same_subnet(ip("2001:db8::1"), ip("2001:db9::1")));
        assert!(same_subnet(ip("::ffff:10.1.0.1"), ip("10.1.9.9")));
        assert!(!same_subnet(ip("10.1.0.1"), ip("2001:db8::1")));
    }

    #[test]
    fn names_are_accepted_unless_every_address_is_refused() {
        let p = policy(&["accept *:80", "reject *:*"]);
        assert!(accepts(&p, "example.com", 80));
        assert!(!accepts(&p, "example.com", 25));
        assert!(accepts(&p, "192.0.2.1", 80));
        assert!(!accepts(&p, "192.0.2.1", 81));
        let p = policy(&["accept 192.0.2.0/24:*", "reject *:*"]);
        assert!(
            accepts(&p, "example.com", 25),
            "it may resolve into 192.0.2.0/24"
        );
        assert!(!accepts(&p, "198.51.100.1", 25));
        assert!(accepts(&p, "[::ffff:192.0.2.7]", 25));
        // reject_private refuses private literals; names may be public.
        let d = ExitPolicy::default();
        assert!(!accepts(&d, "127.0.0.1", 80));
        assert!(!accepts(&d, "::1", 80));
        assert!(accepts(&d, "localhost.example", 80));
        assert!(accepts(&d, "192.0.2.1", 80));
    }

    #[test]
    fn a_path_is_guard_middle_exit_without_conflicts() {
        let mut dir = Directory::default();
        dir.relays.push(relay(1, "10.1.0.1:1", "g"));
        dir.relays.push(relay(2, "10.2.0.1:1", ""));
        dir.relays.push(relay(3, "10.3.0.1:1", "e"));
        let mut rng = 7;
        assert_eq!(
            choose_path(&dir, 0, None, true, &mut rng).unwrap(),
            vec![0, 1, 2]
        );
        // The middle in the exit's /16: a two-relay path.
        dir.relays[1].address = "10.3.9.9:1".parse().unwrap();
        assert_eq!(
            choose_path(&dir, 0, None, true, &mut rng).unwrap(),
            vec![0, 2]
        );
        assert_eq!(
            choose_path(&dir, 0, None, false, &mut rng).unwrap(),
            vec![0, 1, 2]
        );
        // The middle in the guard's family.
        dir.relays[1].address = "10.2.0.1:1".parse().unwrap();
        dir.relays[0].family = Some("ops".into());
        dir.relays[1].family = Some("ops".into());
        assert_eq!(
            choose_path(&dir, 0, None, true, &mut rng).unwrap(),
            vec![0, 2]
        );
        // The exit in the guard's family: no path.
        dir.relays[2].family = Some("ops".into());
        let e = choose_path(&dir, 0, None, true, &mut rng).unwrap_err();
        assert!(matches!(e, PathError::ExitsConflict { .. }), "{e}");
        assert!(
            e.to_string().contains(
                "every exit that is flagged \"exit\" (r3) shares the guard `r1`'s family"
            ),
            "{e}"
        );
    }

    fn dir3() -> Directory {
        let mut dir = Directory::default();
        dir.relays.push(relay(1, "10.1.0.1:1", "g"));
        dir.relays.push(relay(2, "10.2.0.1:1", "g"));
        dir.relays.push(relay(3, "10.3.0.1:1", ""));
        dir.relays.push(relay(4, "10.4.0.1:1", "e"));
        dir.relays.push(relay(5, "10.5.0.1:1", "e"));
        dir
    }

    /// Over many draws with a fixed seed, each relay's share is its share
    /// of the bandwidth.
    #[test]
    fn picks_are_weighted_by_bandwidth() {
        let mut dir = dir3();
        let bw = [1000, 3000, 6000, 2000, 8000];
        for (r, b) in dir.relays.iter_mut().zip(bw) {
            r.bandwidth = b;
        }
        let mut rng = 42;
        let n = 100_000;
        let all: Vec<usize> = (0..5).collect();
        let mut count = [0u32; 5];
        for _ in 0..n {
            count[weighted(&dir, &all, &mut rng).unwrap()] += 1;
        }
        let total: u64 = bw.iter().sum();
        for i in 0..5 {
            let want = bw[i] as f64 / total as f64;
            let got = f64::from(count[i]) / f64::from(n);
            assert!((got - want).abs() < 0.01, "relay {i}: {got} against {want}");
        }
        // Exits by bandwidth in whole paths: r5 four times as often as r4.
        let mut exits = [0u32; 2];
        for _ in 0..20_000 {
            let p = choose_path(&dir, 0, None, true, &mut rng).unwrap();
            exits[p[2] - 3] += 1;
        }
        let share = f64::from(exits[1]) / 20_000.0;
        assert!((share - 0.8).abs() < 0.02, "{exits:?}");
        assert_eq!(weighted(&dir, &[], &mut rng), None);
    }

    #[test]
    fn no_two_relays_of_a_path_share_a_subnet_or_family() {
        let mut dir = dir3();
        // r3 and r4 in one /16, r2 and r5 in one family, r1 and r4 in one
        // IPv6 /32 (after a move).
        dir.relays[2].address = "10.4.7.7:1".parse().unwrap();
        dir.relays[1].family = Some("f".into());
        dir.relays[4].family = Some("f".into());
        let mut rng = 3;
        for _ in 0..2000 {
            for g in [0, 1] {
                let p = choose_path(&dir, g, None, true, &mut rng).unwrap();
                for (i, &a) in p.iter().enumerate() {
                    for &b in &p[i + 1..] {
                        let (a, b) = (&dir.relays[a], &dir.relays[b]);
                        assert!(
                            !conflict(a, b, true),
                            "{} and {} on one path",
                            a.name,
                            b.name
                        );
                    }
                }
            }
        }
        let mut v6 = dir3();
        v6.relays[0].address = "[2001:db8:1::1]:1".parse().unwrap();
        v6.relays[2].address = "[2001:db8:2::1]:1".parse().unwrap();
        v6.relays[3].address = "[2001:db9::1]:1".parse().unwrap();
        v6.relays[4].address = "[2001:db9::2]:1".parse().unwrap();
        for _ in 0..500 {
            let p = choose_path(&v6, 0, None, true, &mut rng).unwrap();
            assert_ne!(p[1], 2, "r3 shares the guard's /32");
        }
        // All on loopback: only without the subnet rule.
        let mut lo = dir3();
        for (i, r) in lo.relays.iter_mut().enumerate() {
            r.address = format!("127.0.0.1:{}", 9001 + i).parse().unwrap();
        }
        let e = choose_path(&lo, 0, None, true, &mut rng).unwrap_err();
        assert!(
            e.to_string()
                .contains("(r4, r5) shares the guard `r1`'s family or subnet"),
            "{e}"
        );
        assert_eq!(choose_path(&lo, 0, None, false, &mut rng).unwrap().len(), 3);
    }

    #[test]
    fn the_exit_accepts_the_destination() {
        let mut dir = dir3();
        dir.relays[3].exit_policy = policy(&["accept *:80", "accept *:443", "reject *:*"]);
        dir.relays[4].exit_policy = ExitPolicy::default();
        let mut rng = 9;
        let exits = |dest: (&str, u16), rng: &mut u64| {
            let mut seen = [false; 5];
            for _ in 0..300 {
                seen[*choose_path(&dir, 0, Some(dest), true, rng)
                    .unwrap()
                    .last()
                    .unwrap()] = true;
            }
            (0..5).filter(|&i| seen[i]).collect::<Vec<_>>()
        };
        assert_eq!(exits(("example.com", 8080), &mut rng), vec![4]);
        assert_eq!(exits(("example.com", 443), &mut rng), vec![3, 4]);
        // r5 refuses private addresses; r4's rules take any address.
        assert_eq!(exits(("127.0.0.1", 80), &mut rng), vec![3]);
        assert_eq!(exits(("192.0.2.1", 80), &mut rng), vec![3, 4]);
        assert_eq!(exits(("::1", 80), &mut rng), vec![3]);
        dir.relays[4].exit_policy = policy(&["reject *:25"]);
        let e = choose_path(&dir, 0, Some(("example.com", 25)), true, &mut rng).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no relay of the directory other than the guard `r1` accepts example.com:25 (by its exit_policy in the directory)"
        );
        let e = choose_path(&dir, 0, Some(("2001:db8::1", 25)), true, &mut rng).unwrap_err();
        assert!(e.to_string().contains("accepts [2001:db8::1]:25 "), "{e}");
        // The guard is the only exit that would.
        dir.relays[0].exit = true;
        let e = choose_path(&dir, 0, Some(("example.com", 25)), true, &mut rng).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("(the guard does, but a path needs an exit that is not its guard)"),
            "{e}"
        );
    }

    #[test]
    fn guards_are_non_exits_flagged_guard_if_any() {
        let mut dir = dir3();
        assert_eq!(guard_candidates(&dir), vec![0, 1]);
        dir.relays[0].guard = false;
        dir.relays[1].exit = true;
        assert_eq!(guard_candidates(&dir), vec![0, 2]);
        for r in &mut dir.relays {
            r.exit = true;
        }
        assert_eq!(guard_candidates(&dir), vec![1]);
        dir.relays[1].guard = false;
        assert_eq!(guard_candidates(&dir), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_guard_is_kept_across_restarts() {
        let d = tempfile::tempdir().unwrap();
        let file = default_state_file(Some(&d.path().join("proxy.key"))).unwrap();
        assert_eq!(file, d.path().join("proxy.state.toml"));
        let mut dir = dir3();
        dir.relays[0].bandwidth = 1;
        dir.relays[1].bandwidth = 1_000_000;
        let mut rng = 5;
        let mut s = GuardState::load(Some(file.clone())).unwrap();
        assert_eq!(s.key, None, "no file yet");
        let g = s.guard(&dir, &mut rng).unwrap();
        assert_eq!(g, 1);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(&format!("guard = \"{}\"", hex(&[2; 32]))),
            "{text}"
        );
        // A restart: the stored guard, whatever the draws, even one that
        // would rarely be drawn.
        let mut s = GuardState::load(Some(file.clone())).unwrap();
        s.key = Some([1; 32]);
        save_state(&file, &dir.relays[0]).unwrap();
        let mut s2 = GuardState::load(Some(file.clone())).unwrap();
        assert_eq!(s2.key, Some([1; 32]));
        for seed in 1..50 {
            let mut rng = seed;
            assert_eq!(s2.guard(&dir, &mut rng).unwrap(), 0);
            assert_eq!(
                next_path(&dir, None, &mut s2, true, &mut rng, None).unwrap()[0],
                0
            );
        }
        // No longer a guard: another one, stored.
        dir.relays[0].guard = false;
        assert_eq!(s.guard(&dir, &mut rng).unwrap(), 1);
        assert_eq!(
            GuardState::load(Some(file.clone())).unwrap().key,
            Some([2; 32])
        );
        // Gone from the directory: the same.
        dir.relays.remove(1);
        let mut s = GuardState::load(Some(file.clone())).unwrap();
        let g = s.guard(&dir, &mut rng).unwrap();
        assert!(
            g < 2,
            "no non-exit flagged guard is left: r1 or r3, not an exit"
        );
        let stored = GuardState::load(Some(file.clone())).unwrap().key;
        assert_eq!(stored, Some(dir.relays[g].key));
        // No file: a guard for this run only.
        let mut s = GuardState::load(None).unwrap();
        assert!(s.guard(&dir, &mut rng).is_ok());
        // A configured path needs no guard.
        let mut s = GuardState::default();
        let p = next_path(
            &dir,
            Some(&["r4".into(), "r5".into()]),
            &mut s,
            true,
            &mut rng,
            None,
        );
        assert_eq!(p.unwrap(), vec![2, 3]);
        assert_eq!(s.key, None);
    }

    #[test]
    fn a_bad_state_file_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("state.toml");
        for (text, want) in [
            ("guard = 1\n", "guard: expected a string, got a integer"),
            (
                "guard = \"12\"\n",
                "guard: `12` is not a relay key (64 hex digits)",
            ),
            (
                "gaurd = \"12\"\n",
                "unknown key `gaurd` (the state file has only `guard`)",
            ),
            ("guard = \n", "not a TOML file"),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = GuardState::load(Some(file.clone())).unwrap_err();
            assert!(e.starts_with(&format!("{}: {want}", file.display())), "{e}");
            assert!(
                e.ends_with("(the proxy writes this file; delete it to choose a new guard)"),
                "{e}"
            );
        }
        std::fs::write(&file, "# empty\n").unwrap();
        assert_eq!(GuardState::load(Some(file)).unwrap().key, None);
    }

    #[test]
    fn streams_go_where_the_exit_accepts_them() {
        let mut dir = dir3();
        dir.relays[3].exit_policy = policy(&["accept *:80", "reject *:*"]);
        dir.relays[4].exit_policy = policy(&["reject *:80"]);
        let spares = [("a", 4usize)];
        assert_eq!(
            route(&dir, Some(3), &spares, "example.com", 80),
            Route::Current
        );
        assert_eq!(
            route(&dir, Some(3), &spares, "example.com", 22),
            Route::Spare(0)
        );
        assert_eq!(route(&dir, Some(4), &spares, "example.com", 80), Route::New);
        assert_eq!(
            route::<()>(&dir, Some(3), &[], "example.com", 22),
            Route::New
        );
        // A configured path takes every stream.
        assert_eq!(
            route::<()>(&dir, None, &[], "example.com", 22),
            Route::Current
        );
    }
}
