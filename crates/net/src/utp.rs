//! µTP over one tokio UDP socket: the driver of the sans-IO
//! [`hopwise_proto::utp::Listener`].
//!
//! One task owns the UDP socket; the listener, the link emulator
//! ([`crate::emu`], applied to what this socket sends) and the wakers live
//! behind one mutex shared with the streams. The task wakes on a datagram,
//! on the earliest protocol or emulator deadline, or when a stream changed
//! something (a [`tokio::sync::Notify`]); after each round it wakes every
//! task waiting on a stream (few streams per socket: spurious wake-ups are
//! cheaper than bookkeeping). Time comes from [`crate::clock::Clock`]; the
//! listener's connection ids and initial sequence numbers from a seed drawn
//! from the operating system at bind.

use crate::clock::Clock;
use crate::config::{Emulation, PeerSel};
use crate::emu::Emulator;
use hopwise_proto::utp::{CloseReason, Config, ConnId, ConnStats, Listener, State};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UdpSocket;
use tokio::sync::Notify;

/// Datagrams read in one round before the replies go out (acks coalesce).
const READ_BATCH: usize = 64;
/// How often an idle driver checks whether anyone still holds the socket.
const IDLE_CHECK: Duration = Duration::from_secs(1);
/// SO_RCVBUF and SO_SNDBUF asked for (the kernel caps them at
/// `net.core.rmem_max` / `wmem_max`). Linux's default (208 KiB) holds about
/// 90 full-size datagrams, a millisecond at a few hundred Mbit/s: a driver
/// that is late by that much (the runtime busy with the application) drops
/// what a fast sender has in flight, and the sender takes it for congestion.
pub const UDP_BUFFER: usize = 4 << 20;

/// Options of a [`UtpSocket`].
#[derive(Clone, Debug, Default)]
pub struct UtpOptions {
    pub config: Config,
    /// Delay, loss and rate applied to what this socket sends, per peer.
    pub emulation: Vec<(PeerSel, Emulation)>,
}

/// Counters of a [`UtpSocket`]. `resends` and `timeouts` sum the
/// connections the socket still holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UtpStats {
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Datagrams that were not µTP packets.
    pub bad_datagrams: u64,
    /// Packets for no known connection.
    pub unknown: u64,
    pub resets_sent: u64,
    /// SYNs refused at the connection limit.
    pub refused: u64,
    pub accepted: u64,
    /// Datagrams the kernel would not take (dropped; µTP resends).
    pub send_errors: u64,
    /// Datagrams the emulator dropped (loss, queue overflow).
    pub emulated_losses: u64,
    pub resends: u64,
    pub timeouts: u64,
}

struct Shared {
    listener: Listener<SocketAddr>,
    emu: Emulator,
    waiters: Vec<Waker>,
    send_errors: u64,
    /// The driver stopped (socket error): every stream fails.
    dead: Option<io::ErrorKind>,
}

impl Shared {
    fn wait(&mut self, w: &Waker) {
        if !self.waiters.iter().any(|x| x.will_wake(w)) {
            self.waiters.push(w.clone());
        }
    }
}

struct Inner {
    shared: Mutex<Shared>,
    notify: Notify,
    clock: Clock,
    local: SocketAddr,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while holding the lock is a bug; keep serving anyway.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One UDP socket carrying any number of µTP connections.
#[derive(Clone)]
pub struct UtpSocket {
    inner: Arc<Inner>,
}

impl UtpSocket {
    pub async fn bind(addr: SocketAddr, opts: UtpOptions) -> io::Result<UtpSocket> {
        let udp = UdpSocket::bind(addr).await?;
        let local = udp.local_addr()?;
        let sr = socket2::SockRef::from(&udp);
        let _ = sr.set_recv_buffer_size(UDP_BUFFER);
        let _ = sr.set_send_buffer_size(UDP_BUFFER);
        let rcvbuf = sr.recv_buffer_size().unwrap_or(0);
        if rcvbuf < UDP_BUFFER {
            tracing::debug!(
                requested = UDP_BUFFER,
                got = rcvbuf,
                "µTP: the kernel capped SO_RCVBUF (net.core.rmem_max)"
            );
        }
        let mut seed = [0u8; 8];
        getrandom::fill(&mut seed).map_err(|e| io::Error::other(format!("getrandom: {e}")))?;
        let inner = Arc::new(Inner {
            shared: Mutex::new(Shared {
                listener: Listener::new(opts.config, u64::from_le_bytes(seed)),
                emu: Emulator::new(opts.emulation),
                waiters: Vec::new(),
                send_errors: 0,
                dead: None,
            }),
            notify: Notify::new(),
            clock: Clock::new(),
            local,
        });
        tokio::spawn(drive(inner.clone(), udp));
        Ok(UtpSocket { inner })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.inner.local
    }

    /// Opens a connection; resolves once the handshake completes.
    pub async fn connect(&self, peer: SocketAddr) -> io::Result<UtpStream> {
        let id = {
            let mut s = self.inner.lock();
            s.listener.connect(peer).ok_or_else(|| {
                io::Error::other(format!(
                    "µTP: connection limit ({}) reached",
                    s.listener.config().max_connections
                ))
            })?
        };
        self.inner.notify.notify_one();
        let inner = self.inner.clone();
        poll_fn(move |cx| {
            let mut s = inner.lock();
            if let Some(k) = s.dead {
                return Poll::Ready(Err(io::Error::new(k, "µTP driver stopped")));
            }
            let st = s.listener.socket(id).map(|x| (x.state(), x.close_reason()));
            match st {
                Some((State::Connected, _)) => Poll::Ready(Ok(())),
                Some((State::SynSent, _)) => {
                    s.wait(cx.waker());
                    Poll::Pending
                }
                Some((State::Closed, why)) => {
                    s.listener.release(id);
                    Poll::Ready(Err(close_error(
                        why.unwrap_or(CloseReason::Aborted),
                        "connect",
                    )))
                }
                None => Poll::Ready(Err(close_error(CloseReason::Aborted, "connect"))),
            }
        })
        .await?;
        Ok(UtpStream {
            inner: self.inner.clone(),
            id,
            peer,
            shutdown: false,
        })
    }

    /// The next connection a peer opened.
    pub async fn accept(&self) -> io::Result<(UtpStream, SocketAddr)> {
        let inner = self.inner.clone();
        let (id, peer) = poll_fn(move |cx| {
            let mut s = inner.lock();
            if let Some(k) = s.dead {
                return Poll::Ready(Err(io::Error::new(k, "µTP driver stopped")));
            }
            while let Some(id) = s.listener.poll_accept() {
                if let Some(a) = s.listener.peer_addr(id) {
                    return Poll::Ready(Ok((id, a)));
                }
            }
            s.wait(cx.waker());
            Poll::Pending
        })
        .await?;
        Ok((
            UtpStream {
                inner: self.inner.clone(),
                id,
                peer,
                shutdown: false,
            },
            peer,
        ))
    }

    pub fn stats(&self) -> UtpStats {
        let s = self.inner.lock();
        let l = s.listener.stats();
        let (mut resends, mut timeouts) = (0, 0);
        for id in s.listener.ids() {
            if let Some(c) = s.listener.socket(id) {
                resends += c.stats().resends;
                timeouts += c.stats().timeouts;
            }
        }
        UtpStats {
            datagrams_in: l.datagrams_in,
            datagrams_out: l.datagrams_out,
            bytes_in: l.bytes_in,
            bytes_out: l.bytes_out,
            bad_datagrams: l.bad_datagrams,
            unknown: l.unknown,
            resets_sent: l.resets_sent,
            refused: l.refused,
            accepted: l.accepted,
            send_errors: s.send_errors,
            emulated_losses: s.emu.stats.lost + s.emu.stats.queue_drops,
            resends,
            timeouts,
        }
    }
}

fn close_error(why: CloseReason, what: &str) -> io::Error {
    match why {
        CloseReason::Reset => io::Error::new(
            io::ErrorKind::ConnectionReset,
            format!("µTP {what}: reset by peer"),
        ),
        CloseReason::TimedOut => {
            io::Error::new(io::ErrorKind::TimedOut, format!("µTP {what}: timed out"))
        }
        CloseReason::Done | CloseReason::Aborted => io::Error::new(
            io::ErrorKind::NotConnected,
            format!("µTP {what}: connection closed"),
        ),
    }
}

async fn drive(inner: Arc<Inner>, udp: UdpSocket) {
    let mut buf = vec![0u8; 65536];
    loop {
        let deadline = {
            let mut s = inner.lock();
            let now = inner.clock.now();
            pump(&mut s, now, &udp);
            for w in s.waiters.drain(..) {
                w.wake();
            }
            match (s.listener.poll_timeout(), s.emu.poll_timeout()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        };
        if deadline.is_none() && Arc::strong_count(&inner) == 1 {
            return;
        }
        let sleep = match deadline {
            Some(t) => inner.clock.deadline(t),
            None => tokio::time::Instant::now() + IDLE_CHECK,
        };
        tokio::select! {
            r = udp.recv_from(&mut buf) => {
                match r {
                    Ok((n, from)) => {
                        let mut s = inner.lock();
                        let now = inner.clock.now();
                        let _ = s.listener.handle_datagram(now, from, &buf[..n]);
                        for _ in 0..READ_BATCH {
                            match udp.try_recv_from(&mut buf) {
                                Ok((n, from)) => {
                                    let _ = s.listener.handle_datagram(now, from, &buf[..n]);
                                }
                                Err(_) => break,
                            }
                        }
                    }
                    Err(e) if is_transient(&e) => {}
                    Err(e) => {
                        let mut s = inner.lock();
                        tracing::warn!("µTP socket {}: {e}", inner.local);
                        s.dead = Some(e.kind());
                        for w in s.waiters.drain(..) {
                            w.wake();
                        }
                        return;
                    }
                }
            }
            _ = inner.notify.notified() => {}
            _ = tokio::time::sleep_until(sleep) => {}
        }
    }
}

/// ICMP errors from an earlier send (a closed peer port) surface on the
/// next receive on Linux; they concern one peer, not the socket.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::WouldBlock
    )
}

/// Timeouts, then everything the listener and the emulator have to send.
fn pump(s: &mut Shared, now: hopwise_proto::Time, udp: &UdpSocket) {
    if s.listener.poll_timeout().is_some_and(|t| t <= now) {
        s.listener.handle_timeout(now);
    }
    while let Some((to, d)) = s.listener.poll_transmit(now) {
        if let Some(d) = s.emu.push(now, to, d) {
            send(s, udp, to, &d);
        }
    }
    while let Some((to, d)) = s.emu.poll(now) {
        send(s, udp, to, &d);
    }
    while s.listener.poll_event().is_some() {}
}

fn send(s: &mut Shared, udp: &UdpSocket, to: SocketAddr, d: &[u8]) {
    if udp.try_send_to(d, to).is_err() {
        s.send_errors += 1;
    }
}

/// One µTP connection. `shutdown()` sends FIN and completes once the peer
/// acknowledged everything; dropping the stream closes it gracefully too.
pub struct UtpStream {
    inner: Arc<Inner>,
    id: ConnId,
    peer: SocketAddr,
    shutdown: bool,
}

impl UtpStream {
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }
    /// A handle that tells, after the stream was split or moved, when the
    /// peer acknowledged the last byte written ([`UtpAckProbe::drained_at`]).
    pub fn ack_probe(&self) -> UtpAckProbe {
        UtpAckProbe {
            inner: self.inner.clone(),
            id: self.id,
        }
    }
    pub fn stats(&self) -> ConnStats {
        let s = self.inner.lock();
        s.listener
            .socket(self.id)
            .map(|c| c.stats())
            .unwrap_or_default()
    }
}

/// See [`UtpStream::ack_probe`].
#[derive(Clone)]
pub struct UtpAckProbe {
    inner: Arc<Inner>,
    id: ConnId,
}

impl UtpAckProbe {
    /// When the peer acknowledged the last of the bytes written so far:
    /// `None` while some are unacknowledged, none were written, or the
    /// connection is gone ([`hopwise_proto::utp::Socket::drained_at`]).
    pub fn drained_at(&self) -> Option<tokio::time::Instant> {
        let t = {
            let s = self.inner.lock();
            s.listener.socket(self.id)?.drained_at()?
        };
        Some(self.inner.clock.deadline(t))
    }
}

impl std::fmt::Debug for UtpAckProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UtpAckProbe").field("id", &self.id).finish()
    }
}

impl AsyncRead for UtpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let inner = self.inner.clone();
        let mut s = inner.lock();
        if let Some(k) = s.dead {
            return Poll::Ready(Err(io::Error::new(k, "µTP driver stopped")));
        }
        let Some(c) = s.listener.socket_mut(self.id) else {
            return Poll::Ready(Ok(()));
        };
        let n = c.recv(buf.initialize_unfilled());
        if n > 0 {
            buf.advance(n);
            drop(s);
            inner.notify.notify_one();
            return Poll::Ready(Ok(()));
        }
        if c.peer_finished() {
            return Poll::Ready(Ok(()));
        }
        match c.close_reason() {
            Some(CloseReason::Done | CloseReason::Aborted) => Poll::Ready(Ok(())),
            Some(why) => Poll::Ready(Err(close_error(why, "read"))),
            None => {
                s.wait(cx.waker());
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for UtpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let inner = self.inner.clone();
        let mut s = inner.lock();
        if let Some(k) = s.dead {
            return Poll::Ready(Err(io::Error::new(k, "µTP driver stopped")));
        }
        let Some(c) = s.listener.socket_mut(self.id) else {
            return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
        };
        if let Some(why) = c.close_reason() {
            return Poll::Ready(Err(close_error(why, "write")));
        }
        if self.shutdown {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "µTP write after shutdown",
            )));
        }
        let n = c.send(data);
        if n > 0 || data.is_empty() {
            drop(s);
            inner.notify.notify_one();
            return Poll::Ready(Ok(n));
        }
        s.wait(cx.waker());
        Poll::Pending
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let inner = self.inner.clone();
        let mut s = inner.lock();
        if let Some(k) = s.dead {
            return Poll::Ready(Err(io::Error::new(k, "µTP driver stopped")));
        }
        let Some(c) = s.listener.socket_mut(self.id) else {
            return Poll::Ready(Ok(()));
        };
        if !self.shutdown {
            c.close();
            self.shutdown = true;
            drop(s);
            inner.notify.notify_one();
            s = inner.lock();
        }
        let Some(c) = s.listener.socket(self.id) else {
            return Poll::Ready(Ok(()));
        };
        if c.fin_acked() {
            return Poll::Ready(Ok(()));
        }
        match c.close_reason() {
            Some(CloseReason::Done | CloseReason::Aborted) => Poll::Ready(Ok(())),
            Some(why) => Poll::Ready(Err(close_error(why, "shutdown"))),
            None => {
                s.wait(cx.waker());
                Poll::Pending
            }
        }
    }
}

impl Drop for UtpStream {
    fn drop(&mut self) {
        let mut s = self.inner.lock();
        if let Some(c) = s.listener.socket_mut(self.id) {
            c.close();
        }
        s.listener.release(self.id);
        drop(s);
        self.inner.notify.notify_one();
    }
}
