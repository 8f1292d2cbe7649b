//! The proxy's SOCKS5 listener (parsing is `hopwise_proto::circuit::socks`)
//! and a small SOCKS5 client for the self-test, the benchmark and tests.

use crate::accept::{serve_capped, Gate};
use crate::core::{Cmd, OpenResult};
use crate::stream::run_stream;
use hopwise_proto::circuit::socks::{self, Addr, Reply};
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// The SOCKS listener's settings (`proxy.toml`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SocksOptions {
    /// How long a request waits for its stream.
    pub connect_timeout: Duration,
    /// How long a client has for its greeting and request, in all.
    pub handshake_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

pub(crate) async fn serve(
    listener: TcpListener,
    cmd: mpsc::UnboundedSender<Cmd>,
    o: SocksOptions,
    gate: Arc<Gate>,
) {
    serve_capped(listener, gate, "SOCKS", move |s, peer| {
        let cmd = cmd.clone();
        async move {
            if let Err(e) = handle(s, cmd, o).await {
                tracing::debug!(%peer, error = %e, "SOCKS connection closed");
            }
        }
    })
    .await;
}

/// Reads until `parse` has an answer; `Ok(None)` if the client went away.
async fn read_until<T>(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    parse: impl Fn(&[u8]) -> Result<Option<T>, socks::SocksError>,
) -> Result<Option<T>, socks::SocksError> {
    loop {
        if let Some(x) = parse(buf)? {
            return Ok(Some(x));
        }
        if buf.len() > 1024 {
            return Err(socks::SocksError {
                reply: Some(Reply::GeneralFailure),
                msg: "request too long".into(),
            });
        }
        let mut chunk = [0u8; 512];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The greeting, our method choice, and the request; `Ok(None)` if the
/// client went away. What follows the request in `buf` is stream data.
async fn negotiate(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<Option<socks::Request>, String> {
    let greeting = match read_until(s, buf, socks::parse_greeting).await {
        Ok(Some(g)) => g,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.msg),
    };
    let (no_auth, used) = greeting;
    buf.drain(..used);
    if !no_auth {
        let _ = s
            .write_all(&socks::method_reply(socks::METHOD_NONE_ACCEPTABLE))
            .await;
        return Err("no acceptable authentication method".into());
    }
    s.write_all(&socks::method_reply(socks::METHOD_NO_AUTH))
        .await
        .map_err(|e| e.to_string())?;
    match read_until(s, buf, socks::parse_request).await {
        Ok(Some((req, used))) => {
            buf.drain(..used);
            Ok(Some(req))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            if let Some(r) = e.reply {
                let _ = s.write_all(&socks::reply(r)).await;
            }
            Err(e.msg)
        }
    }
}

async fn handle(
    mut s: TcpStream,
    cmd: mpsc::UnboundedSender<Cmd>,
    o: SocksOptions,
) -> Result<(), String> {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    // One deadline for the whole exchange: a client that sends a byte now
    // and then cannot hold its place for longer.
    let req = match tokio::time::timeout(o.handshake_timeout, negotiate(&mut s, &mut buf)).await {
        Ok(Ok(Some(r))) => r,
        Ok(Ok(None)) => return Ok(()),
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("no complete request in time".into()),
    };
    let (tx, rx) = oneshot::channel::<OpenResult>();
    let host = req.addr.host();
    if cmd
        .send(Cmd::Open {
            host: host.clone(),
            port: req.port,
            reply: tx,
        })
        .is_err()
    {
        let _ = s.write_all(&socks::reply(Reply::GeneralFailure)).await;
        return Err("proxy shutting down".into());
    }
    let r = match tokio::time::timeout(o.connect_timeout, rx).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(hopwise_proto::circuit::cell::EndReason::Internal),
        Err(_) => Err(hopwise_proto::circuit::cell::EndReason::Timeout),
    };
    match r {
        Ok((key, down)) => {
            if let Err(e) = s.write_all(&socks::reply(Reply::Succeeded)).await {
                // The client went away before its reply: the stream is open
                // at the exit and must not outlive it.
                let _ = cmd.send(Cmd::Reset(key));
                return Err(e.to_string());
            }
            if !buf.is_empty() {
                let _ = cmd.send(Cmd::Data(key, std::mem::take(&mut buf)));
            }
            tracing::debug!(stream = %key, %host, port = req.port, "stream connected");
            run_stream(s, key, cmd, down).await;
            Ok(())
        }
        Err(reason) => {
            let _ = s.write_all(&socks::reply(Reply::for_end(reason))).await;
            Err(format!("{host}:{}: {reason}", req.port))
        }
    }
}

/// A SOCKS5 CONNECT that failed.
#[derive(Debug)]
pub enum SocksClientError {
    Io(std::io::Error),
    /// The proxy answered with this reply code.
    Reply(u8),
    /// The proxy refused every authentication method (0xFF).
    NoMethod,
    Protocol(String),
}

impl fmt::Display for SocksClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocksClientError::Io(e) => write!(f, "{e}"),
            SocksClientError::Reply(r) => write!(f, "the proxy answered with SOCKS reply {r:#04x}"),
            SocksClientError::NoMethod => write!(f, "the proxy accepts no method we offer"),
            SocksClientError::Protocol(m) => write!(f, "{m}"),
        }
    }
}
impl std::error::Error for SocksClientError {}

impl From<std::io::Error> for SocksClientError {
    fn from(e: std::io::Error) -> Self {
        SocksClientError::Io(e)
    }
}

/// Connects to `host:port` through the SOCKS5 proxy at `proxy`.
pub async fn connect(
    proxy: SocketAddr,
    host: &str,
    port: u16,
) -> Result<TcpStream, SocksClientError> {
    let mut s = TcpStream::connect(proxy).await?;
    s.set_nodelay(true)?;
    s.write_all(&[socks::VERSION, 1, socks::METHOD_NO_AUTH])
        .await?;
    let mut m = [0u8; 2];
    s.read_exact(&mut m).await?;
    if m[1] != socks::METHOD_NO_AUTH {
        return Err(SocksClientError::NoMethod);
    }
    let addr = match host.parse() {
        Ok(ip) => Addr::Ip(ip),
        Err(_) => Addr::Domain(host.to_string()),
    };
    s.write_all(&socks::encode_request(socks::CMD_CONNECT, &addr, port))
        .await?;
    let mut r = [0u8; 4];
    s.read_exact(&mut r).await?;
    if r[0] != socks::VERSION {
        return Err(SocksClientError::Protocol(format!(
            "reply version {}",
            r[0]
        )));
    }
    let rest = match r[3] {
        socks::ATYP_V4 => 4 + 2,
        socks::ATYP_V6 => 16 + 2,
        socks::ATYP_DOMAIN => {
            let mut l = [0u8; 1];
            s.read_exact(&mut l).await?;
            l[0] as usize + 2
        }
        t => {
            return Err(SocksClientError::Protocol(format!(
                "reply address type {t}"
            )))
        }
    };
    let mut skip = vec![0u8; rest];
    s.read_exact(&mut skip).await?;
    if r[1] != 0 {
        return Err(SocksClientError::Reply(r[1]));
    }
    Ok(s)
}
