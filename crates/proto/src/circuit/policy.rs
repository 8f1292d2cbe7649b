//! The exit policy: which destinations an exit relay opens TCP connections
//! to (`docs/relay.md`, "Exit policy").
//!
//! A policy is an ordered list of rules, then (unless turned off) a built-in
//! rejection of loopback, private, link-local and other non-public ranges,
//! then a default. The first rule that matches decides:
//!
//! ```text
//! rule := ("accept" | "reject") " " addr ":" ports
//! addr := "*" | "private" | IPV4 ["/" bits] | "[" IPV6 "]" ["/" bits]
//! ports := "*" | PORT | PORT "-" PORT
//! ```
//!
//! The policy is checked against the *resolved* address, so a host name that
//! resolves to 127.0.0.1 is refused like the literal. IPv4-mapped IPv6
//! addresses (`::ffff:a.b.c.d`) are checked as the IPv4 address they carry.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Accept or reject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    Accept,
    Reject,
}

/// What a rule's address part matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrPattern {
    Any,
    /// Every range of [`is_private`].
    Private,
    V4 {
        net: Ipv4Addr,
        bits: u8,
    },
    V6 {
        net: Ipv6Addr,
        bits: u8,
    },
}

/// One rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    pub verdict: Verdict,
    pub addr: AddrPattern,
    pub ports: (u16, u16),
}

/// An exit policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitPolicy {
    /// Checked first, in order.
    pub rules: Vec<Rule>,
    /// After the rules: refuse [`is_private`] addresses. Default true.
    pub reject_private: bool,
    /// What is left. Default accept.
    pub default: Verdict,
}

impl Default for ExitPolicy {
    /// Refuse private, loopback and link-local ranges; accept the rest.
    fn default() -> Self {
        ExitPolicy {
            rules: Vec::new(),
            reject_private: true,
            default: Verdict::Accept,
        }
    }
}

/// A rule that did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PolicyError {}

fn canon(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ip,
        },
        v4 => v4,
    }
}

fn v4_in(ip: Ipv4Addr, net: Ipv4Addr, bits: u8) -> bool {
    if bits == 0 {
        return true;
    }
    let mask = u32::MAX << (32 - bits.min(32) as u32);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn v6_in(ip: Ipv6Addr, net: Ipv6Addr, bits: u8) -> bool {
    if bits == 0 {
        return true;
    }
    let mask = u128::MAX << (128 - bits.min(128) as u32);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// Loopback, private (RFC 1918, unique-local), link-local, carrier-grade
/// NAT, unspecified, multicast, broadcast, benchmarking and reserved
/// ranges, and IPv6 prefixes that embed IPv4 (NAT64, IPv4-compatible).
pub fn is_private(ip: IpAddr) -> bool {
    match canon(ip) {
        IpAddr::V4(a) => [
            (Ipv4Addr::new(0, 0, 0, 0), 8),
            (Ipv4Addr::new(10, 0, 0, 0), 8),
            (Ipv4Addr::new(100, 64, 0, 0), 10),
            (Ipv4Addr::new(127, 0, 0, 0), 8),
            (Ipv4Addr::new(169, 254, 0, 0), 16),
            (Ipv4Addr::new(172, 16, 0, 0), 12),
            (Ipv4Addr::new(192, 0, 0, 0), 24),
            (Ipv4Addr::new(192, 168, 0, 0), 16),
            (Ipv4Addr::new(198, 18, 0, 0), 15),
            (Ipv4Addr::new(224, 0, 0, 0), 4),
            (Ipv4Addr::new(240, 0, 0, 0), 4),
        ]
        .iter()
        .any(|&(n, b)| v4_in(a, n, b)),
        IpAddr::V6(a) => [
            (Ipv6Addr::UNSPECIFIED, 96), // ::/128, ::1 and IPv4-compatible
            (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96),
            (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48),
            (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
            (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
            (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
            (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8),
        ]
        .iter()
        .any(|&(n, b)| v6_in(a, n, b)),
    }
}

impl AddrPattern {
    fn matches(&self, ip: IpAddr) -> bool {
        match (*self, ip) {
            (AddrPattern::Any, _) => true,
            (AddrPattern::Private, ip) => is_private(ip),
            (AddrPattern::V4 { net, bits }, IpAddr::V4(a)) => v4_in(a, net, bits),
            (AddrPattern::V6 { net, bits }, IpAddr::V6(a)) => v6_in(a, net, bits),
            _ => false,
        }
    }
}

impl Rule {
    pub fn matches(&self, ip: IpAddr, port: u16) -> bool {
        self.addr.matches(canon(ip)) && self.ports.0 <= port && port <= self.ports.1
    }

    /// Parses `accept 127.0.0.1/32:*`, `reject *:25`, `accept [::1]:80-443`.
    pub fn parse(s: &str) -> Result<Rule, PolicyError> {
        let err = |m: &str| PolicyError(format!("`{s}`: {m}"));
        let s2 = s.trim();
        let (verb, rest) = s2
            .split_once(char::is_whitespace)
            .ok_or_else(|| err("expected `accept ADDR:PORTS` or `reject ADDR:PORTS`"))?;
        let verdict = match verb {
            "accept" => Verdict::Accept,
            "reject" => Verdict::Reject,
            v => return Err(err(&format!("unknown verb `{v}` (accept or reject)"))),
        };
        let rest = rest.trim();
        let (addr, ports) = rest
            .rsplit_once(':')
            .ok_or_else(|| err("missing `:PORTS` (use `:*` for every port)"))?;
        let ports = parse_ports(ports).map_err(|m| err(&m))?;
        let addr = parse_addr(addr).ok_or_else(|| {
            err("address must be `*`, `private`, an IPv4 network like 10.0.0.0/8 or an IPv6 network like [fe80::]/10")
        })?;
        Ok(Rule {
            verdict,
            addr,
            ports,
        })
    }
}

fn parse_ports(p: &str) -> Result<(u16, u16), String> {
    const FORM: &str = "ports must be `*`, a port or a range `LOW-HIGH`";
    if p == "*" {
        return Ok((0, u16::MAX));
    }
    let port = |x: &str| match x.trim().parse::<u64>() {
        Ok(n) => u16::try_from(n).map_err(|_| format!("port {n} is above 65535")),
        Err(_) => Err(format!("{FORM}; `{x}` is not a port number")),
    };
    let (a, b) = match p.split_once('-') {
        Some((a, b)) => (port(a)?, port(b)?),
        None => {
            let x = port(p)?;
            (x, x)
        }
    };
    if a > b {
        return Err(format!("{FORM}; in `{p}` LOW is above HIGH"));
    }
    Ok((a, b))
}

fn parse_addr(a: &str) -> Option<AddrPattern> {
    match a {
        "*" => return Some(AddrPattern::Any),
        "private" => return Some(AddrPattern::Private),
        _ => {}
    }
    let (ip, bits) = match a.rsplit_once('/') {
        Some((ip, b)) if !ip.ends_with(':') => (ip, Some(b.parse::<u8>().ok()?)),
        _ => (a, None),
    };
    if let Some(inner) = ip.strip_prefix('[') {
        let inner = inner.strip_suffix(']')?;
        let net: Ipv6Addr = inner.parse().ok()?;
        let bits = bits.unwrap_or(128);
        (bits <= 128).then_some(AddrPattern::V6 { net, bits })
    } else {
        let net: Ipv4Addr = ip.parse().ok()?;
        let bits = bits.unwrap_or(32);
        (bits <= 32).then_some(AddrPattern::V4 { net, bits })
    }
}

impl ExitPolicy {
    /// The verdict for a connection to `ip:port`.
    pub fn check(&self, ip: IpAddr, port: u16) -> Verdict {
        for r in &self.rules {
            if r.matches(ip, port) {
                return r.verdict;
            }
        }
        if self.reject_private && is_private(ip) {
            return Verdict::Reject;
        }
        self.default
    }

    pub fn allows(&self, ip: IpAddr, port: u16) -> bool {
        self.check(ip, port) == Verdict::Accept
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = match self.verdict {
            Verdict::Accept => "accept",
            Verdict::Reject => "reject",
        };
        let a = match self.addr {
            AddrPattern::Any => "*".to_string(),
            AddrPattern::Private => "private".to_string(),
            AddrPattern::V4 { net, bits } => format!("{net}/{bits}"),
            AddrPattern::V6 { net, bits } => format!("[{net}]/{bits}"),
        };
        let p = match self.ports {
            (0, u16::MAX) => "*".to_string(),
            (a, b) if a == b => a.to_string(),
            (a, b) => format!("{a}-{b}"),
        };
        write!(f, "{v} {a}:{p}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn default_refuses_private_ranges() {
        let p = ExitPolicy::default();
        for a in [
            "127.0.0.1",
            "127.5.5.5",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!p.allows(ip(a), 80), "{a} must be refused");
        }
        for a in ["93.184.216.34", "172.32.0.1", "8.8.8.8", "2606:4700::1111"] {
            assert!(p.allows(ip(a), 80), "{a} must be allowed");
        }
    }

    #[test]
    fn explicit_rules_come_first() {
        let p = ExitPolicy {
            rules: vec![
                Rule::parse("accept 127.0.0.1/32:*").unwrap(),
                Rule::parse("reject *:25").unwrap(),
            ],
            ..ExitPolicy::default()
        };
        assert!(p.allows(ip("127.0.0.1"), 8080));
        assert!(!p.allows(ip("127.0.0.2"), 8080));
        assert!(!p.allows(ip("8.8.8.8"), 25));
        assert!(p.allows(ip("8.8.8.8"), 26));
    }

    #[test]
    fn parses_and_prints() {
        for s in [
            "accept 127.0.0.1/32:*",
            "reject 10.0.0.0/8:80-443",
            "accept [::1]/128:22",
            "reject private:*",
            "accept *:*",
        ] {
            let r = Rule::parse(s).unwrap();
            assert_eq!(Rule::parse(&r.to_string()).unwrap(), r, "{s}");
        }
        for bad in [
            "allow *:*",
            "accept *",
            "accept 1.2.3.4/33:*",
            "accept *:9-8",
            "accept [::1:*",
            "accept",
            "",
        ] {
            assert!(Rule::parse(bad).is_err(), "{bad}");
        }
        // The message says what is wrong with the ports.
        for (bad, why) in [
            ("accept *:0-70000", "port 70000 is above 65535"),
            ("accept *:9-8", "in `9-8` LOW is above HIGH"),
            ("accept *:http", "`http` is not a port number"),
        ] {
            let e = Rule::parse(bad).unwrap_err().0;
            assert!(
                e.starts_with(&format!("`{bad}`: ")) && e.ends_with(why),
                "{e}"
            );
        }
    }
}
