//! SOCKS5 (RFC 1928), the proxy's application side, sans-IO: the parsers
//! take what has been read so far and say how much they consumed or that
//! they need more; nothing here panics on any input.
//!
//! Supported: the greeting with method 0 (no authentication) and the CONNECT
//! request with IPv4, IPv6 and domain-name addresses. Everything else gets
//! the reply code RFC 1928 §6 gives for it:
//!
//! | input | reply |
//! | --- | --- |
//! | greeting without method 0 | method `0xFF` (no acceptable method), then close |
//! | version byte not 5 (greeting or request) | close without a reply (there is no SOCKS5 way to answer a SOCKS4 client) |
//! | BIND (2), UDP ASSOCIATE (3), any other command | `0x07` command not supported |
//! | address type not 1, 3 or 4 | `0x08` address type not supported |
//! | reserved byte not 0, empty or non-UTF-8 domain name | `0x01` general failure |

use super::cell::EndReason;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const VERSION: u8 = 5;
/// Method 0: no authentication required.
pub const METHOD_NO_AUTH: u8 = 0x00;
/// The server's answer when no offered method is acceptable.
pub const METHOD_NONE_ACCEPTABLE: u8 = 0xFF;
pub const CMD_CONNECT: u8 = 1;
pub const CMD_BIND: u8 = 2;
pub const CMD_UDP_ASSOCIATE: u8 = 3;
pub const ATYP_V4: u8 = 1;
pub const ATYP_DOMAIN: u8 = 3;
pub const ATYP_V6: u8 = 4;

/// The reply codes of RFC 1928 §6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    Succeeded = 0,
    GeneralFailure = 1,
    NotAllowed = 2,
    NetworkUnreachable = 3,
    HostUnreachable = 4,
    ConnectionRefused = 5,
    TtlExpired = 6,
    CommandNotSupported = 7,
    AddressTypeNotSupported = 8,
}

impl Reply {
    /// The reply for a stream the exit ended before it connected (Tor's
    /// mapping in `connection_edge.c`).
    pub fn for_end(reason: EndReason) -> Reply {
        match reason {
            EndReason::ResolveFailed => Reply::HostUnreachable,
            EndReason::ConnectRefused => Reply::ConnectionRefused,
            EndReason::ExitPolicy => Reply::NotAllowed,
            EndReason::Timeout => Reply::TtlExpired,
            EndReason::NoRoute => Reply::NetworkUnreachable,
            _ => Reply::GeneralFailure,
        }
    }
}

/// The destination of a CONNECT.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    Ip(IpAddr),
    Domain(String),
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Addr::Ip(a) => write!(f, "{a}"),
            Addr::Domain(d) => f.write_str(d),
        }
    }
}

impl Addr {
    /// The host as a BEGIN cell carries it: a name, or an address literal
    /// (IPv6 without brackets).
    pub fn host(&self) -> String {
        match self {
            Addr::Ip(a) => a.to_string(),
            Addr::Domain(d) => d.clone(),
        }
    }
}

/// A parsed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub addr: Addr,
    pub port: u16,
}

/// A malformed greeting or request: what to answer (if anything) before
/// closing the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocksError {
    /// `None`: close without replying.
    pub reply: Option<Reply>,
    pub msg: String,
}

impl fmt::Display for SocksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}
impl std::error::Error for SocksError {}

fn fail(reply: Option<Reply>, msg: impl Into<String>) -> SocksError {
    SocksError {
        reply,
        msg: msg.into(),
    }
}

/// The greeting `VER NMETHODS METHODS...`. `Ok(None)`: need more bytes.
/// `Ok(Some((true, n)))`: method 0 offered, `n` bytes consumed; answer
/// [`method_reply`]`(METHOD_NO_AUTH)`. `Ok(Some((false, n)))`: answer
/// `method_reply(METHOD_NONE_ACCEPTABLE)` and close.
pub fn parse_greeting(buf: &[u8]) -> Result<Option<(bool, usize)>, SocksError> {
    let Some(&ver) = buf.first() else {
        return Ok(None);
    };
    if ver != VERSION {
        return Err(fail(
            None,
            format!("SOCKS version {ver} in the greeting (only 5 is supported)"),
        ));
    }
    let Some(&n) = buf.get(1) else {
        return Ok(None);
    };
    let n = n as usize;
    if buf.len() < 2 + n {
        return Ok(None);
    }
    Ok(Some((buf[2..2 + n].contains(&METHOD_NO_AUTH), 2 + n)))
}

/// The server's method selection message.
pub fn method_reply(method: u8) -> [u8; 2] {
    [VERSION, method]
}

/// The request `VER CMD RSV ATYP DST.ADDR DST.PORT`. `Ok(None)`: need more
/// bytes. Only CONNECT is accepted.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Request, usize)>, SocksError> {
    if buf.len() < 4 {
        if let Some(&v) = buf.first() {
            if v != VERSION {
                return Err(fail(None, format!("SOCKS version {v} in the request")));
            }
        }
        return Ok(None);
    }
    let (ver, cmd, rsv, atyp) = (buf[0], buf[1], buf[2], buf[3]);
    if ver != VERSION {
        return Err(fail(None, format!("SOCKS version {ver} in the request")));
    }
    let (addr, at) = match atyp {
        ATYP_V4 => {
            if buf.len() < 4 + 4 + 2 {
                return Ok(None);
            }
            let a = Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]);
            (Addr::Ip(IpAddr::V4(a)), 8)
        }
        ATYP_V6 => {
            if buf.len() < 4 + 16 + 2 {
                return Ok(None);
            }
            let mut o = [0u8; 16];
            o.copy_from_slice(&buf[4..20]);
            (Addr::Ip(IpAddr::V6(Ipv6Addr::from(o))), 20)
        }
        ATYP_DOMAIN => {
            let Some(&len) = buf.get(4) else {
                return Ok(None);
            };
            let len = len as usize;
            if buf.len() < 5 + len + 2 {
                return Ok(None);
            }
            if len == 0 {
                return Err(fail(Some(Reply::GeneralFailure), "empty domain name"));
            }
            let Ok(d) = std::str::from_utf8(&buf[5..5 + len]) else {
                return Err(fail(
                    Some(Reply::GeneralFailure),
                    "domain name is not UTF-8",
                ));
            };
            (Addr::Domain(d.to_string()), 5 + len)
        }
        t => {
            return Err(fail(
                Some(Reply::AddressTypeNotSupported),
                format!("address type {t}"),
            ))
        }
    };
    let port = u16::from_be_bytes([buf[at], buf[at + 1]]);
    let used = at + 2;
    if rsv != 0 {
        return Err(fail(
            Some(Reply::GeneralFailure),
            format!("reserved byte {rsv:#04x} is not zero"),
        ));
    }
    if cmd != CMD_CONNECT {
        let what = match cmd {
            CMD_BIND => "BIND".to_string(),
            CMD_UDP_ASSOCIATE => "UDP ASSOCIATE".to_string(),
            c => format!("command {c}"),
        };
        return Err(fail(
            Some(Reply::CommandNotSupported),
            format!("{what} is not supported (only CONNECT)"),
        ));
    }
    Ok(Some((Request { addr, port }, used)))
}

/// A reply with the bound address `0.0.0.0:0` (hopwise does not reveal the
/// exit's local address).
pub fn reply(code: Reply) -> [u8; 10] {
    [VERSION, code as u8, 0, ATYP_V4, 0, 0, 0, 0, 0, 0]
}

/// Encodes a CONNECT request (for clients and tests).
pub fn encode_request(cmd: u8, addr: &Addr, port: u16) -> Vec<u8> {
    let mut out = vec![VERSION, cmd, 0];
    match addr {
        Addr::Ip(IpAddr::V4(a)) => {
            out.push(ATYP_V4);
            out.extend_from_slice(&a.octets());
        }
        Addr::Ip(IpAddr::V6(a)) => {
            out.push(ATYP_V6);
            out.extend_from_slice(&a.octets());
        }
        Addr::Domain(d) => {
            out.push(ATYP_DOMAIN);
            let b = &d.as_bytes()[..d.len().min(255)];
            out.push(b.len() as u8);
            out.extend_from_slice(b);
        }
    }
    out.extend_from_slice(&port.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting() {
        assert_eq!(parse_greeting(&[]), Ok(None));
        assert_eq!(parse_greeting(&[5]), Ok(None));
        assert_eq!(parse_greeting(&[5, 2, 0]), Ok(None));
        assert_eq!(parse_greeting(&[5, 2, 2, 0]), Ok(Some((true, 4))));
        assert_eq!(parse_greeting(&[5, 1, 2]), Ok(Some((false, 3))));
        assert_eq!(parse_greeting(&[4, 1, 0]).unwrap_err().reply, None);
    }

    #[test]
    fn requests() {
        for (a, p) in [
            (Addr::Ip("1.2.3.4".parse().unwrap()), 80),
            (Addr::Ip("::1".parse().unwrap()), 443),
            (Addr::Domain("example.org".into()), 8080),
        ] {
            let r = encode_request(CMD_CONNECT, &a, p);
            for cut in 0..r.len() {
                assert_eq!(parse_request(&r[..cut]), Ok(None), "{cut}");
            }
            let (req, n) = parse_request(&r).unwrap().unwrap();
            assert_eq!((req.addr, req.port, n), (a, p, r.len()));
        }
        let code = |b: &[u8]| parse_request(b).unwrap_err().reply;
        let bind = encode_request(CMD_BIND, &Addr::Domain("x".into()), 1);
        assert_eq!(code(&bind), Some(Reply::CommandNotSupported));
        let udp = encode_request(CMD_UDP_ASSOCIATE, &Addr::Domain("x".into()), 1);
        assert_eq!(code(&udp), Some(Reply::CommandNotSupported));
        assert_eq!(
            code(&[5, 1, 0, 9, 0, 0]),
            Some(Reply::AddressTypeNotSupported)
        );
        assert_eq!(code(&[5, 1, 0, 3, 0, 0, 80]), Some(Reply::GeneralFailure));
        assert_eq!(
            code(&[5, 1, 1, 1, 1, 2, 3, 4, 0, 80]),
            Some(Reply::GeneralFailure)
        );
        assert_eq!(code(&[4, 1, 0, 1]), None);
    }

    #[test]
    fn end_reasons_map_to_replies() {
        assert_eq!(Reply::for_end(EndReason::ExitPolicy), Reply::NotAllowed);
        assert_eq!(
            Reply::for_end(EndReason::ConnectRefused),
            Reply::ConnectionRefused
        );
        assert_eq!(
            Reply::for_end(EndReason::ResolveFailed),
            Reply::HostUnreachable
        );
        assert_eq!(Reply::for_end(EndReason::Timeout), Reply::TtlExpired);
        assert_eq!(Reply::for_end(EndReason::Misc), Reply::GeneralFailure);
    }
}
