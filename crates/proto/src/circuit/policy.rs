//! The exit policy: which destinations an exit relay opens TCP connections
//! to (`docs/relay.md`, "Exit policy").
//!
//! A policy is a built-in rejection of loopback, private, link-local and
//! other non-public ranges (unless turned off, like Tor's
//! `ExitPolicyRejectPrivate`), then an ordered list of rules, then a
//! default. The first of them that matches decides:
//!
//! ```text
//! rule := ("accept" | "reject") " " addr ":" ports
//! addr := "*" | "private" | IPV4 ["/" bits] | "[" IPV6 "]" ["/" bits]
//! ports := "*" | PORT | PORT "-" PORT
//! ```
//!
//! The policy is checked against the *resolved* address, so a host name that
//! resolves to 127.0.0.1 is refused like the literal. IPv4-mapped IPv6
//! addresses (`::ffff:a.b.c.d`) are checked as the IPv4 address they carry,
//! and a rule for a network inside `[::ffff:0:0]/96` is read as the IPv4
//! rule (`[::ffff:192.0.2.0]/120` is `192.0.2.0/24`).

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
    /// Checked first: refuse [`is_private`] addresses, whatever the rules
    /// say. Default true.
    pub reject_private: bool,
    /// Checked next, in order.
    pub rules: Vec<Rule>,
    /// What is left. Default accept.
    pub default: Verdict,
}

impl Default for ExitPolicy {
    /// Refuse private, loopback and link-local ranges; accept the rest.
    fn default() -> Self {
        ExitPolicy {
            reject_private: true,
            rules: Vec::new(),
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

/// The mask of an IPv4 prefix of `bits` (at most 32).
fn v4_mask(bits: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(bits.min(32)))
        .unwrap_or(0)
}

/// The mask of an IPv6 prefix of `bits` (at most 128).
fn v6_mask(bits: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(bits.min(128)))
        .unwrap_or(0)
}

fn v4_in(ip: Ipv4Addr, net: Ipv4Addr, bits: u8) -> bool {
    let mask = v4_mask(bits);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn v6_in(ip: Ipv6Addr, net: Ipv6Addr, bits: u8) -> bool {
    let mask = v6_mask(bits);
    u128::from(ip) & mask == u128::from(net) & mask
}

/// The IPv4 ranges of [`is_private`].
const PRIVATE_V4: [(Ipv4Addr, u8); 11] = [
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
];

/// The IPv6 ranges of [`is_private`].
const PRIVATE_V6: [(Ipv6Addr, u8); 7] = [
    (Ipv6Addr::UNSPECIFIED, 96), // ::/128, ::1 and IPv4-compatible
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96),
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48),
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8),
];

/// Loopback, private (RFC 1918, unique-local), link-local, carrier-grade
/// NAT, unspecified, multicast, broadcast, benchmarking and reserved
/// ranges, and IPv6 prefixes that embed IPv4 (NAT64, IPv4-compatible).
pub fn is_private(ip: IpAddr) -> bool {
    match canon(ip) {
        IpAddr::V4(a) => PRIVATE_V4.iter().any(|&(n, b)| v4_in(a, n, b)),
        IpAddr::V6(a) => PRIVATE_V6.iter().any(|&(n, b)| v6_in(a, n, b)),
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

    /// The range of [`is_private`] that holds every address this pattern
    /// matches (`private` itself for [`AddrPattern::Private`]), if there is
    /// one: with `reject_private` on, an `accept` rule for it never matches.
    pub fn private_range(&self) -> Option<AddrPattern> {
        match *self {
            AddrPattern::Any => None,
            AddrPattern::Private => Some(AddrPattern::Private),
            AddrPattern::V4 { net, bits } => PRIVATE_V4
                .iter()
                .find(|&&(n, b)| bits >= b && v4_in(net, n, b))
                .map(|&(net, bits)| AddrPattern::V4 { net, bits }),
            AddrPattern::V6 { net, bits } => PRIVATE_V6
                .iter()
                .find(|&&(n, b)| bits >= b && v6_in(net, n, b))
                .map(|&(net, bits)| AddrPattern::V6 { net, bits }),
        }
    }
}

impl Rule {
    pub fn matches(&self, ip: IpAddr, port: u16) -> bool {
        self.addr.matches(canon(ip)) && self.ports.0 <= port && port <= self.ports.1
    }

    /// Matches every address and every port, so no later rule can match.
    pub fn is_catch_all(&self) -> bool {
        self.addr == AddrPattern::Any && self.ports == (0, u16::MAX)
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
        // A rule outside brackets has one `:`, before the ports; more is an
        // IPv6 address written without its brackets.
        if !rest.contains('[') && rest.matches(':').count() > 1 {
            return Err(err(&unbracketed_v6(verb, rest)));
        }
        let (addr, ports) = rest
            .rsplit_once(':')
            .ok_or_else(|| err("missing `:PORTS` (use `:*` for every port)"))?;
        let ports = parse_ports(ports).map_err(|m| err(&m))?;
        let addr = parse_addr(addr).map_err(|m| err(&m))?;
        Ok(Rule {
            verdict,
            addr,
            ports,
        })
    }
}

/// The message for `rest`, a rule's address and ports with more than one
/// `:` and no brackets: the bracketed rule when the address is IPv6.
fn unbracketed_v6(verb: &str, rest: &str) -> String {
    const HINT: &str = "an IPv6 address goes in brackets, like `[::1]/128:*` (the last `:` comes before the ports)";
    let Some((addr, ports)) = rest.rsplit_once(':') else {
        return HINT.to_string();
    };
    let (ip, prefix) = match addr.split_once('/') {
        Some((ip, bits)) => (ip, format!("/{bits}")),
        None => (addr, String::new()),
    };
    match ip.parse::<Ipv6Addr>() {
        Ok(_) => format!("an IPv6 address goes in brackets: write `{verb} [{ip}]{prefix}:{ports}`"),
        Err(_) => HINT.to_string(),
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

const ADDR_FORM: &str = "address must be `*`, `private`, an IPv4 network like 10.0.0.0/8 or an IPv6 network like [fe80::]/10";

/// The prefix length of `a` (`None`: no `/`), at most `max` bits.
fn prefix(a: &str, bits: Option<&str>, max: u8, family: &str) -> Result<u8, String> {
    let Some(b) = bits else {
        return Ok(max);
    };
    match b.parse::<u64>() {
        Ok(n) if n <= u64::from(max) => Ok(n as u8),
        Ok(n) => Err(format!(
            "`{a}`: the prefix /{n} is longer than an {family} address ({max} bits)"
        )),
        Err(_) => Err(format!(
            "`{a}`: the prefix length `{b}` is not a number (0 to {max})"
        )),
    }
}

/// What is wrong with `ip`, text that is not an IPv4 address.
fn bad_v4(ip: &str) -> String {
    let parts: Vec<&str> = ip.split('.').collect();
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    if parts.len() == 4 && parts.iter().all(|p| digits(p)) {
        if let Some(p) = parts.iter().find(|p| p.parse::<u8>().is_err()) {
            return format!("`{ip}` is not an IPv4 address: {p} is above 255");
        }
    }
    if ip.split('.').all(digits) {
        return format!(
            "`{ip}` is not an IPv4 address (four numbers 0 to 255 with dots between them)"
        );
    }
    ADDR_FORM.to_string()
}

fn parse_addr(a: &str) -> Result<AddrPattern, String> {
    match a {
        "*" => return Ok(AddrPattern::Any),
        "private" => return Ok(AddrPattern::Private),
        _ => {}
    }
    let (ip, bits) = match a.rsplit_once('/') {
        Some((ip, b)) => (ip, Some(b)),
        None => (a, None),
    };
    if let Some(inner) = ip.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| format!("`{ip}`: missing `]` after the IPv6 address"))?;
        let net: Ipv6Addr = inner
            .parse()
            .map_err(|_| format!("`{inner}` is not an IPv6 address"))?;
        let bits = prefix(a, bits, 128, "IPv6")?;
        let masked = Ipv6Addr::from(u128::from(net) & v6_mask(bits));
        if masked != net {
            return Err(format!(
                "`{a}` has bits set after the /{bits} prefix; did you mean [{masked}]/{bits}?"
            ));
        }
        // Destinations in ::ffff:0:0/96 are checked as the IPv4 address
        // they carry, so a rule inside that range is the IPv4 rule: as an
        // IPv6 pattern it would never match (and `reject` would silently
        // let the address through).
        match net.to_ipv4_mapped() {
            Some(v4) if bits >= 96 => Ok(AddrPattern::V4 {
                net: v4,
                bits: bits - 96,
            }),
            _ => Ok(AddrPattern::V6 { net, bits }),
        }
    } else {
        let net: Ipv4Addr = ip.parse().map_err(|_| bad_v4(ip))?;
        let bits = prefix(a, bits, 32, "IPv4")?;
        let masked = Ipv4Addr::from(u32::from(net) & v4_mask(bits));
        if masked != net {
            return Err(format!(
                "`{a}` has bits set after the /{bits} prefix; did you mean {masked}/{bits}?"
            ));
        }
        Ok(AddrPattern::V4 { net, bits })
    }
}

/// Why a rule of a policy can never match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// Rule `i`, earlier, matches every address and port.
    AfterCatchAll(usize),
    /// An `accept` rule inside this range of [`is_private`], which
    /// `reject_private` refuses before the rules.
    PrivateRejected(AddrPattern),
}

impl ExitPolicy {
    /// The verdict for a connection to `ip:port`.
    pub fn check(&self, ip: IpAddr, port: u16) -> Verdict {
        if self.reject_private && is_private(ip) {
            return Verdict::Reject;
        }
        for r in &self.rules {
            if r.matches(ip, port) {
                return r.verdict;
            }
        }
        self.default
    }

    pub fn allows(&self, ip: IpAddr, port: u16) -> bool {
        self.check(ip, port) == Verdict::Accept
    }

    /// The first rule that can never match, and why: it follows a rule for
    /// every address and port, or it accepts only addresses that
    /// `reject_private` refuses first. (Other rules covered by earlier ones
    /// are not looked for.)
    pub fn unreachable_rule(&self) -> Option<(usize, Unreachable)> {
        let mut catch_all = None;
        for (i, r) in self.rules.iter().enumerate() {
            if let Some(j) = catch_all {
                return Some((i, Unreachable::AfterCatchAll(j)));
            }
            if self.reject_private && r.verdict == Verdict::Accept {
                if let Some(range) = r.addr.private_range() {
                    return Some((i, Unreachable::PrivateRejected(range)));
                }
            }
            if r.is_catch_all() {
                catch_all = Some(i);
            }
        }
        None
    }
}

impl fmt::Display for AddrPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AddrPattern::Any => f.write_str("*"),
            AddrPattern::Private => f.write_str("private"),
            AddrPattern::V4 { net, bits } => write!(f, "{net}/{bits}"),
            AddrPattern::V6 { net, bits } => write!(f, "[{net}]/{bits}"),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = match self.verdict {
            Verdict::Accept => "accept",
            Verdict::Reject => "reject",
        };
        let a = self.addr;
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

    fn rules(rs: &[&str]) -> Vec<Rule> {
        rs.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    #[test]
    fn reject_private_comes_before_the_rules() {
        // A catch-all accept does not open the private ranges.
        let p = ExitPolicy {
            rules: rules(&["accept *:*"]),
            default: Verdict::Reject,
            ..ExitPolicy::default()
        };
        for a in [
            "127.0.0.1",
            "169.254.169.254",
            "10.0.0.1",
            "100.64.0.1",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!p.allows(ip(a), 18080), "{a} must be refused");
        }
        // The rule, not the default (reject), lets public addresses through.
        assert!(p.allows(ip("8.8.8.8"), 18080));
        assert!(p.allows(ip("2606:4700::1111"), 443));
    }

    #[test]
    fn without_reject_private_the_rules_decide() {
        let p = ExitPolicy {
            reject_private: false,
            rules: rules(&["accept 127.0.0.1/32:*", "reject private:*", "reject *:25"]),
            ..ExitPolicy::default()
        };
        assert!(p.allows(ip("127.0.0.1"), 8080));
        assert!(p.allows(ip("::ffff:127.0.0.1"), 8080));
        assert!(!p.allows(ip("127.0.0.2"), 8080));
        assert!(!p.allows(ip("10.0.0.1"), 80));
        assert!(!p.allows(ip("8.8.8.8"), 25));
        assert!(p.allows(ip("8.8.8.8"), 26));
        // With nothing but the default, private addresses are allowed.
        let open = ExitPolicy {
            reject_private: false,
            ..ExitPolicy::default()
        };
        assert!(open.allows(ip("169.254.169.254"), 80));
    }

    /// A rule written with an IPv4-mapped address is the IPv4 rule:
    /// destinations are checked as IPv4, so it matches both spellings (as
    /// an IPv6 pattern it never would, and a `reject` would let them by).
    #[test]
    fn a_mapped_rule_is_the_ipv4_rule() {
        let p = ExitPolicy {
            rules: rules(&[
                "reject [::ffff:8.8.8.0]/120:*",
                "reject [::ffff:1.1.1.1]:53",
            ]),
            ..ExitPolicy::default()
        };
        for a in ["8.8.8.8", "::ffff:8.8.8.8", "::ffff:1.1.1.1"] {
            assert!(!p.allows(ip(a), 53), "{a}");
        }
        assert!(p.allows(ip("8.8.9.8"), 53));
        assert!(p.allows(ip("1.1.1.1"), 54));
        assert_eq!(
            Rule::parse("reject [::ffff:8.8.8.0]/120:*")
                .unwrap()
                .to_string(),
            "reject 8.8.8.0/24:*"
        );
        // Inside the private ranges it is refused as the IPv4 rule is.
        let q = ExitPolicy {
            rules: rules(&["accept [::ffff:10.0.0.0]/104:*"]),
            ..ExitPolicy::default()
        };
        assert!(matches!(
            q.unreachable_rule(),
            Some((0, Unreachable::PrivateRejected(_)))
        ));
        // The whole mapped range is every IPv4 address; a wider IPv6
        // network stays IPv6 (and so never matches an IPv4 destination).
        let r = Rule::parse("reject [::ffff:0:0]/96:*").unwrap();
        assert_eq!(r.to_string(), "reject 0.0.0.0/0:*");
        assert!(!ExitPolicy {
            rules: vec![r],
            ..ExitPolicy::default()
        }
        .allows(ip("8.8.8.8"), 80));
        let wide = Rule::parse("reject [::]/0:*").unwrap();
        assert!(matches!(wide.addr, AddrPattern::V6 { bits: 0, .. }));
        assert!(ExitPolicy {
            rules: vec![wide],
            ..ExitPolicy::default()
        }
        .allows(ip("::ffff:8.8.8.8"), 80));
    }

    #[test]
    fn rules_that_can_never_match_are_found() {
        let find = |reject_private: bool, rs: &[&str]| {
            ExitPolicy {
                reject_private,
                rules: rules(rs),
                ..ExitPolicy::default()
            }
            .unreachable_rule()
        };
        // Anything after a rule for every address and port.
        assert_eq!(
            find(true, &["accept *:*", "reject *:18080"]),
            Some((1, Unreachable::AfterCatchAll(0)))
        );
        assert_eq!(
            find(false, &["reject *:25", "reject *:0-65535", "accept *:80"]),
            Some((2, Unreachable::AfterCatchAll(1)))
        );
        // Accepting only private addresses while reject_private is on.
        assert_eq!(
            find(true, &["reject *:25", "accept 127.0.0.1/32:*"]),
            Some((
                1,
                Unreachable::PrivateRejected(AddrPattern::V4 {
                    net: Ipv4Addr::new(127, 0, 0, 0),
                    bits: 8
                })
            ))
        );
        assert_eq!(
            find(true, &["accept [fe80::]/64:*"]),
            Some((
                0,
                Unreachable::PrivateRejected(AddrPattern::V6 {
                    net: "fe80::".parse().unwrap(),
                    bits: 10
                })
            ))
        );
        assert_eq!(
            find(true, &["accept private:22"]),
            Some((0, Unreachable::PrivateRejected(AddrPattern::Private)))
        );
        // Fine: the last rule a catch-all, a partly public range, a reject
        // of private addresses, or private accepts with reject_private off.
        for (rp, rs) in [
            (true, &["reject *:25", "accept *:*"][..]),
            (true, &["accept 10.0.0.0/7:*"][..]),
            (true, &["reject 10.0.0.0/8:*", "reject private:*"][..]),
            (false, &["accept 127.0.0.1/32:*", "reject private:*"][..]),
            (true, &["accept *:80"][..]),
        ] {
            assert_eq!(find(rp, rs), None, "{rs:?}");
        }
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
        // And what is wrong with the address.
        for (bad, why) in [
            (
                "accept 300.1.1.1/32:*",
                "`300.1.1.1` is not an IPv4 address: 300 is above 255",
            ),
            (
                "accept 1.2.3:*",
                "`1.2.3` is not an IPv4 address (four numbers 0 to 255 with dots between them)",
            ),
            (
                "accept 1.2.3.4/33:*",
                "`1.2.3.4/33`: the prefix /33 is longer than an IPv4 address (32 bits)",
            ),
            (
                "accept [::1]/129:*",
                "`[::1]/129`: the prefix /129 is longer than an IPv6 address (128 bits)",
            ),
            (
                "accept 1.2.3.4/x:*",
                "`1.2.3.4/x`: the prefix length `x` is not a number (0 to 32)",
            ),
            (
                "accept 10.0.0.1/8:*",
                "`10.0.0.1/8` has bits set after the /8 prefix; did you mean 10.0.0.0/8?",
            ),
            (
                "reject [fe80::1]/10:*",
                "`[fe80::1]/10` has bits set after the /10 prefix; did you mean [fe80::]/10?",
            ),
            (
                "accept ::1/128:*",
                "an IPv6 address goes in brackets: write `accept [::1]/128:*`",
            ),
            (
                "reject 2001:db8::1:80-443",
                "an IPv6 address goes in brackets: write `reject [2001:db8::1]:80-443`",
            ),
            (
                "accept ::1/128",
                "an IPv6 address goes in brackets, like `[::1]/128:*` (the last `:` comes before the ports)",
            ),
            ("accept [::1:*", "`[::1`: missing `]` after the IPv6 address"),
            ("accept [1.2.3.4]:*", "`1.2.3.4` is not an IPv6 address"),
            (
                "accept example.org:*",
                "address must be `*`, `private`, an IPv4 network like 10.0.0.0/8 or an IPv6 network like [fe80::]/10",
            ),
        ] {
            let e = Rule::parse(bad).unwrap_err().0;
            assert_eq!(e, format!("`{bad}`: {why}"));
        }
        // Prefixes at their bounds, and the network address, parse.
        for ok in [
            "accept 10.0.0.0/8:*",
            "accept 1.2.3.4/32:*",
            "accept 0.0.0.0/0:*",
            "accept [::]/0:*",
            "accept [2001:db8::1]/128:*",
        ] {
            assert!(Rule::parse(ok).is_ok(), "{ok}");
        }
    }
}
