//! The tasks that own TCP connections: one per stream, at the proxy (the
//! SOCKS client's connection) and at the exit (the connection to the
//! destination). A task moves bytes between its socket and the node task and
//! maps TCP's FIN and RST onto the stream's END(DONE) and reset.

use crate::config::ExitOptions;
use crate::core::{Cmd, Down};
use hopwise_proto::circuit::cell::EndReason;
use hopwise_proto::circuit::StreamKey;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const READ_CHUNK: usize = 64 * 1024;

/// Resets a TCP connection (RST instead of FIN) by closing it with a zero
/// linger time.
pub(crate) fn abort(s: TcpStream) {
    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    drop(s);
}

/// Moves bytes both ways until both directions finished or either side reset.
pub(crate) async fn run_stream(
    s: TcpStream,
    key: StreamKey,
    cmd: mpsc::UnboundedSender<Cmd>,
    mut down: mpsc::UnboundedReceiver<Down>,
) {
    let _ = s.set_nodelay(true);
    let mut credit = 0usize;
    let mut rd_eof = false;
    let mut wr_done = false;
    let mut eof_pending = false;
    let mut wbuf: VecDeque<Vec<u8>> = VecDeque::new();
    let mut woff = 0usize;
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        if rd_eof && wr_done {
            break;
        }
        tokio::select! {
            r = s.readable(), if credit > 0 && !rd_eof => {
                if r.is_err() {
                    let _ = cmd.send(Cmd::Reset(key));
                    return abort(s);
                }
                match s.try_read(&mut buf[..credit.min(READ_CHUNK)]) {
                    Ok(0) => {
                        rd_eof = true;
                        let _ = cmd.send(Cmd::Eof(key));
                    }
                    Ok(n) => {
                        credit -= n;
                        let _ = cmd.send(Cmd::Data(key, buf[..n].to_vec()));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => {
                        let _ = cmd.send(Cmd::Reset(key));
                        return abort(s);
                    }
                }
            }
            r = s.writable(), if !wbuf.is_empty() => {
                if r.is_err() {
                    let _ = cmd.send(Cmd::Reset(key));
                    return abort(s);
                }
                let mut written = 0;
                while let Some(front) = wbuf.front() {
                    match s.try_write(&front[woff..]) {
                        Ok(n) => {
                            written += n;
                            woff += n;
                            if woff == front.len() {
                                wbuf.pop_front();
                                woff = 0;
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => {
                            let _ = cmd.send(Cmd::Reset(key));
                            return abort(s);
                        }
                    }
                }
                if written > 0 {
                    let _ = cmd.send(Cmd::Consumed(key, written));
                }
                if wbuf.is_empty() && eof_pending {
                    let _ = socket2::SockRef::from(&s).shutdown(std::net::Shutdown::Write);
                    wr_done = true;
                    eof_pending = false;
                }
            }
            m = down.recv() => match m {
                Some(Down::Data(v)) => wbuf.push_back(v),
                Some(Down::Credit(n)) => credit += n,
                Some(Down::Eof) => {
                    if wbuf.is_empty() {
                        let _ = socket2::SockRef::from(&s).shutdown(std::net::Shutdown::Write);
                        wr_done = true;
                    } else {
                        eof_pending = true;
                    }
                }
                Some(Down::Reset) | None => return abort(s),
            },
        }
    }
    let _ = cmd.send(Cmd::Gone(key));
}

/// Exit side: resolves, checks the exit policy against every address,
/// connects (with a timeout), reports to the node task and runs the stream.
pub(crate) async fn exit_connect(
    host: String,
    port: u16,
    x: ExitOptions,
    key: StreamKey,
    cmd: mpsc::UnboundedSender<Cmd>,
    down: mpsc::UnboundedReceiver<Down>,
    permit: crate::core::ConnectPermits,
) {
    let r = connect(&host, port, &x).await;
    drop(permit);
    match r {
        Ok(s) => {
            let _ = cmd.send(Cmd::ExitConnected(key, Ok(())));
            run_stream(s, key, cmd, down).await;
        }
        Err(r) => {
            let _ = cmd.send(Cmd::ExitConnected(key, Err(r)));
        }
    }
}

/// Addresses of a name an exit tries at most.
const MAX_ADDRS: usize = 4;

async fn connect(host: &str, port: u16, x: &ExitOptions) -> Result<TcpStream, EndReason> {
    let t = x.connect_timeout;
    let addrs: Vec<SocketAddr> =
        match tokio::time::timeout(t, tokio::net::lookup_host((host, port))).await {
            Err(_) => return Err(EndReason::Timeout),
            Ok(Err(_)) => return Err(EndReason::ResolveFailed),
            Ok(Ok(a)) => a.collect(),
        };
    if addrs.is_empty() {
        return Err(EndReason::ResolveFailed);
    }
    let allowed: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| x.policy.allows(a.ip(), port))
        .collect();
    if allowed.is_empty() {
        tracing::debug!(%host, port, "refused by the exit policy");
        return Err(EndReason::ExitPolicy);
    }
    // One connect_timeout for the connects together, over at most MAX_ADDRS
    // addresses: a name with many unreachable addresses must not hold an
    // exit's connect slot for long. Each address gets an equal share of the
    // time left, so a quick refusal leaves more for the next.
    let n = allowed.len().min(MAX_ADDRS);
    let deadline = tokio::time::Instant::now() + t;
    let mut last = EndReason::ConnectRefused;
    for (i, a) in allowed.into_iter().take(n).enumerate() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let each = left / (n - i) as u32;
        match tokio::time::timeout(each, TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => {
                last = match e.kind() {
                    ErrorKind::ConnectionRefused => EndReason::ConnectRefused,
                    ErrorKind::TimedOut => EndReason::Timeout,
                    _ if e.raw_os_error() == Some(101) || e.raw_os_error() == Some(113) => {
                        EndReason::NoRoute
                    }
                    _ => EndReason::Misc,
                }
            }
            Err(_) => last = EndReason::Timeout,
        }
    }
    Err(last)
}
