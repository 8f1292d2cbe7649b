//! `hopwise otcp relay` and `hopwise otcp forward`: oTCP (seed 001) over the
//! kernel's TCP. tokio moves the bytes; the protocol is `hopwise_proto::otcp`
//! (the route header and the bounded [`Splice`]), the same code the
//! simulator's oTCP relays run.
//!
//! * A **relay** accepts a TCP connection, reads the route header (within
//!   `header_timeout`), checks the next hop against its exit policy,
//!   connects to it, sends it the rest of the route, and copies bytes both
//!   ways through two splices of `splice_bytes` each. When the rest of the
//!   route is empty the next hop is the destination, an ordinary TCP server,
//!   and gets no header (in the simulator the destination reads an empty
//!   header instead).
//! * A **forwarder** is the client side: every connection it accepts goes
//!   through a fixed list of relays to one destination.
//!
//! Each hop is a TCP connection of its own with its own congestion control,
//! which is the point of oTCP. A splice reads from one side only while it
//! has room, so a slow hop closes the previous hop's receive window instead
//! of filling the relay's memory. Half-closes are passed on (a FIN is sent
//! onwards once every byte before it has been written); an error on either
//! side resets both.

use crate::accept::{serve_capped, Gate};
use crate::daemon::{NodeThread, StartError};
use bytes::BytesMut;
use hopwise_proto::circuit::policy::{is_private, ExitPolicy};
use hopwise_proto::otcp::select::{best_via, RttMatrix};
use hopwise_proto::otcp::{Hop, Opening, ProbeReply, Route, RouteError, Splice, REPLY_LEN};
use hopwise_proto::time::Dur;
use std::io;
use std::net::{IpAddr, Shutdown, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// The smallest splice: the bytes read with the header must fit.
pub const MIN_SPLICE: usize = 4096;
/// Bytes read at a time while the header is incomplete.
const HEADER_READ: usize = 512;
/// Bytes read at a time from a connection.
const READ_CHUNK: usize = 64 * 1024;

/// `hopwise otcp relay`.
#[derive(Clone, Debug)]
pub struct RelayOptions {
    pub listen: SocketAddr,
    /// Which next hops (relays or destinations) it connects to.
    pub policy: ExitPolicy,
    /// Bytes each direction of a connection may hold at the relay, besides
    /// the sockets' buffers.
    pub splice_bytes: usize,
    pub header_timeout: Duration,
    pub connect_timeout: Duration,
    /// A spliced connection that moves no byte either way for this long is
    /// reset (a peer that went away without a FIN or RST).
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// TCP congestion control of every connection it accepts or makes
    /// (`TCP_CONGESTION`); `None`: the system's default.
    pub congestion: Option<String>,
}

/// Default of `idle_timeout`.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

impl RelayOptions {
    pub fn new(listen: SocketAddr) -> RelayOptions {
        RelayOptions {
            listen,
            policy: ExitPolicy::default(),
            splice_bytes: 256 * 1024,
            header_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: IDLE_TIMEOUT,
            max_connections: 1024,
            congestion: None,
        }
    }
}

/// `hopwise otcp forward`.
#[derive(Clone, Debug)]
pub struct ForwardOptions {
    pub listen: SocketAddr,
    /// The relays, in order; empty: straight to the destination.
    pub relays: Vec<SocketAddrV4>,
    pub destination: SocketAddrV4,
    pub splice_bytes: usize,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// As [`RelayOptions::congestion`].
    pub congestion: Option<String>,
}

impl ForwardOptions {
    pub fn new(
        listen: SocketAddr,
        relays: Vec<SocketAddrV4>,
        destination: SocketAddrV4,
    ) -> ForwardOptions {
        ForwardOptions {
            listen,
            relays,
            destination,
            splice_bytes: 256 * 1024,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: IDLE_TIMEOUT,
            max_connections: 1024,
            congestion: None,
        }
    }

    /// The header the first relay gets: the relays after it, then the
    /// destination. `None` without relays.
    pub fn header(&self) -> Result<Option<Vec<u8>>, RouteError> {
        if self.relays.is_empty() {
            return Ok(None);
        }
        let hops = self.relays[1..]
            .iter()
            .chain(std::iter::once(&self.destination))
            .map(|a| hop(*a))
            .collect();
        Route::new(hops).encode().map(Some)
    }
}

fn hop(a: SocketAddrV4) -> Hop {
    Hop {
        addr: u32::from(*a.ip()),
        port: a.port(),
    }
}

/// Counters of a relay or forwarder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections accepted (within the cap).
    pub accepted: u64,
    /// Connections closed at once because `max_connections` were open.
    pub over_cap: u64,
    /// Connections open now.
    pub open: usize,
    /// Connections that reached their next hop and were spliced.
    pub spliced: u64,
    /// Headers refused (wrong magic or version, too many hops, empty route).
    pub bad_header: u64,
    /// Connections closed because the header did not arrive in time.
    pub header_timeout: u64,
    /// Next hops (and probed hops) the exit policy refused.
    pub refused: u64,
    /// Next hops that could not be reached (refused, unreachable, timed out).
    pub connect_failed: u64,
    /// Spliced connections that ended with an error (both sides reset).
    pub reset: u64,
    /// Spliced connections reset after `idle_timeout` without a byte.
    pub idle: u64,
    /// RTT probes answered.
    pub probes: u64,
    /// Bytes copied towards the destination and back.
    pub bytes_forward: u64,
    pub bytes_back: u64,
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    spliced: AtomicU64,
    bad_header: AtomicU64,
    header_timeout: AtomicU64,
    refused: AtomicU64,
    connect_failed: AtomicU64,
    reset: AtomicU64,
    idle: AtomicU64,
    probes: AtomicU64,
    bytes_forward: AtomicU64,
    bytes_back: AtomicU64,
}

fn bump(c: &AtomicU64) -> u64 {
    c.fetch_add(1, Ordering::Relaxed) + 1
}

/// A running relay or forwarder; dropping it stops it.
pub struct OtcpHandle {
    /// The TCP address it listens on.
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    gate: Arc<Gate>,
    thread: NodeThread,
}

impl std::fmt::Debug for OtcpHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtcpHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl OtcpHandle {
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            accepted: l(&c.accepted),
            over_cap: self.gate.refused(),
            open: self.gate.open(),
            spliced: l(&c.spliced),
            bad_header: l(&c.bad_header),
            header_timeout: l(&c.header_timeout),
            refused: l(&c.refused),
            connect_failed: l(&c.connect_failed),
            reset: l(&c.reset),
            idle: l(&c.idle),
            probes: l(&c.probes),
            bytes_forward: l(&c.bytes_forward),
            bytes_back: l(&c.bytes_back),
        }
    }

    /// Stops accepting, closes every connection and waits for the thread.
    pub fn shutdown(mut self) {
        self.thread.stop_and_join();
    }
}

fn check_splice(bytes: usize, what: &str) -> Result<(), StartError> {
    if bytes < MIN_SPLICE {
        return Err(StartError(format!(
            "{what}: --buffer: {bytes} B is below the minimum of {MIN_SPLICE} B"
        )));
    }
    Ok(())
}

/// Fails, naming the flag, if this process cannot give its sockets the
/// congestion control `cc` (a kernel without it, or one outside
/// `tcp_allowed_congestion_control` without `CAP_NET_ADMIN`).
fn check_congestion(cc: Option<&str>, what: &str) -> Result<(), StartError> {
    let Some(cc) = cc else { return Ok(()) };
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| StartError(format!("{what}: cannot open a TCP socket: {e}")))?;
    s.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        StartError(format!(
            "{what}: --cc {cc}: {e} (the kernel offers: {}; those outside net.ipv4.tcp_allowed_congestion_control need CAP_NET_ADMIN)",
            avail.trim()
        ))
    })
}

/// Gives `s` the congestion control `cc`, if any; a failure (checked at
/// start, so unexpected) is logged and the system's default stays.
fn set_congestion(s: &impl std::os::fd::AsFd, cc: Option<&str>) {
    if let Some(cc) = cc {
        if let Err(e) = socket2::SockRef::from(s).set_tcp_congestion(cc.as_bytes()) {
            tracing::warn!(cc, error = %e, "otcp: cannot set the congestion control");
        }
    }
}

/// Starts a relay on a thread of its own.
pub fn spawn_otcp_relay(o: RelayOptions) -> Result<OtcpHandle, StartError> {
    check_splice(o.splice_bytes, "otcp relay")?;
    check_congestion(o.congestion.as_deref(), "otcp relay")?;
    let o = Arc::new(o);
    start(
        o.listen,
        o.max_connections,
        "otcp relay",
        move |s, peer, c| relay_conn(s, peer, o.clone(), c),
    )
}

/// Starts a forwarder on a thread of its own.
pub fn spawn_otcp_forward(o: ForwardOptions) -> Result<OtcpHandle, StartError> {
    check_splice(o.splice_bytes, "otcp forward")?;
    check_congestion(o.congestion.as_deref(), "otcp forward")?;
    let header = o
        .header()
        .map_err(|e| StartError(format!("otcp forward: --via: {e}")))?;
    let o = Arc::new((o, header));
    start(
        o.0.listen,
        o.0.max_connections,
        "otcp forward",
        move |s, peer, c| forward_conn(s, peer, o.clone(), c),
    )
}

fn start<F, Fut>(
    listen: SocketAddr,
    max: usize,
    what: &'static str,
    serve: F,
) -> Result<OtcpHandle, StartError>
where
    F: Fn(TcpStream, SocketAddr, Arc<Counters>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    if max == 0 {
        return Err(StartError(format!(
            "{what}: --max-connections: must be at least 1"
        )));
    }
    let l = crate::daemon::bind_tcp(listen, what, "--listen")?;
    let addr = l
        .local_addr()
        .map_err(|e| StartError(format!("{what}: {e}")))?;
    let counters = Arc::new(Counters::default());
    let gate = Gate::new(max);
    let (stop, mut stopped) = watch::channel(false);
    let (c, g) = (counters.clone(), gate.clone());
    let thread = std::thread::Builder::new()
        .name(what.replace(' ', "-"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            rt.block_on(async move {
                let l = tokio::net::TcpListener::from_std(l).expect("a listener in the runtime");
                let serve = serve_capped(l, g, what, move |s, peer| serve(s, peer, c.clone()));
                tokio::select! {
                    _ = serve => {}
                    _ = stopped.wait_for(|s| *s) => {}
                }
            });
        })
        .map_err(|e| StartError(format!("{what}: cannot start a thread: {e}")))?;
    tracing::info!("{what} listening on {addr}");
    Ok(OtcpHandle {
        addr,
        counters,
        gate,
        thread: NodeThread::new(stop, thread),
    })
}

/// Why a connection ended before its splice.
#[derive(Debug)]
enum HeaderError {
    Closed,
    Io(io::Error),
    Route(RouteError),
    Empty,
}

/// Reads the route header or probe; returns it and the payload bytes read
/// with it.
async fn read_opening(s: &TcpStream) -> Result<(Opening, Vec<u8>), HeaderError> {
    let mut buf = Vec::with_capacity(HEADER_READ);
    loop {
        s.readable().await.map_err(HeaderError::Io)?;
        let mut chunk = [0u8; HEADER_READ];
        match s.try_read(&mut chunk) {
            Ok(0) => return Err(HeaderError::Closed),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(HeaderError::Io(e)),
        }
        match Opening::decode(&buf) {
            Err(e) => return Err(HeaderError::Route(e)),
            Ok(None) => continue,
            Ok(Some((Opening::Route(r), _))) if r.hops.is_empty() => {
                return Err(HeaderError::Empty)
            }
            Ok(Some((o, n))) => return Ok((o, buf.split_off(n))),
        }
    }
}

async fn relay_conn(up: TcpStream, peer: SocketAddr, o: Arc<RelayOptions>, c: Arc<Counters>) {
    bump(&c.accepted);
    let _ = up.set_nodelay(true);
    set_congestion(&up, o.congestion.as_deref());
    // Until the splice takes over: stopping during the header, the probe or
    // the connect resets the client too.
    let guard = ResetOnDrop {
        socks: vec![&up],
        armed: true,
    };
    let (opening, early) = match tokio::time::timeout(o.header_timeout, read_opening(&up)).await {
        Err(_) => {
            let n = bump(&c.header_timeout);
            if n.is_power_of_two() {
                tracing::warn!(%peer, header_timeouts = n, "otcp relay: no complete route header within {:?}", o.header_timeout);
            }
            return reset(&up);
        }
        Ok(Err(HeaderError::Closed)) => return,
        Ok(Err(HeaderError::Io(e))) => {
            tracing::debug!(%peer, error = %e, "otcp relay: reading the route header");
            return;
        }
        Ok(Err(e)) => {
            let n = bump(&c.bad_header);
            let why = match e {
                HeaderError::Route(e) => e.to_string(),
                _ => "oTCP header field `hops`: the route is empty (nothing to relay to)".into(),
            };
            if n.is_power_of_two() {
                tracing::warn!(%peer, bad_headers = n, "otcp relay: {why}");
            }
            return reset(&up);
        }
        Ok(Ok(x)) => x,
    };
    let route = match opening {
        Opening::Route(r) => r,
        Opening::Probe(hop) => {
            guard.disarm();
            return probe(up, peer, hop, &o, &c).await;
        }
    };
    let (next, onward) = route.next().expect("a non-empty route");
    let to = SocketAddrV4::new(next.addr.into(), next.port);
    if !permitted(&o.policy, to, "the next hop", peer, &c) {
        return reset(&up);
    }
    let header = if onward.hops.is_empty() {
        None
    } else {
        Some(onward.encode().expect("a shorter route encodes"))
    };
    let Some(down) = connect(
        to,
        o.connect_timeout,
        header.as_deref(),
        o.congestion.as_deref(),
        &c,
    )
    .await
    else {
        return reset(&up);
    };
    tracing::debug!(%peer, next = %to, ahead = onward.hops.len(), "otcp relay: spliced");
    guard.disarm();
    splice(up, down, early, o.splice_bytes, o.idle_timeout, &c).await;
}

async fn forward_conn(
    up: TcpStream,
    peer: SocketAddr,
    o: Arc<(ForwardOptions, Option<Vec<u8>>)>,
    c: Arc<Counters>,
) {
    bump(&c.accepted);
    let _ = up.set_nodelay(true);
    let (o, header) = &*o;
    set_congestion(&up, o.congestion.as_deref());
    let guard = ResetOnDrop {
        socks: vec![&up],
        armed: true,
    };
    let first = o.relays.first().copied().unwrap_or(o.destination);
    let Some(down) = connect(
        first,
        o.connect_timeout,
        header.as_deref(),
        o.congestion.as_deref(),
        &c,
    )
    .await
    else {
        return reset(&up);
    };
    tracing::debug!(%peer, first = %first, "otcp forward: spliced");
    guard.disarm();
    splice(up, down, Vec::new(), o.splice_bytes, o.idle_timeout, &c).await;
}

/// Whether the exit policy lets the relay connect to `to`; a refusal is
/// counted and logged (at its 1st, 2nd, 4th … occurrence) with its reason.
fn permitted(
    policy: &ExitPolicy,
    to: SocketAddrV4,
    what: &str,
    peer: SocketAddr,
    c: &Counters,
) -> bool {
    let ip = IpAddr::V4(*to.ip());
    if policy.allows(ip, to.port()) {
        return true;
    }
    let n = bump(&c.refused);
    if n.is_power_of_two() {
        let why = if policy.reject_private && is_private(ip) {
            "a private, loopback or link-local address (--allow-private allows them)".to_string()
        } else {
            match policy.rules.iter().find(|r| r.matches(ip, to.port())) {
                Some(r) => format!("--policy `{r}`"),
                None => "the policy".into(),
            }
        };
        tracing::warn!(%peer, hop = %to, refused = n, "otcp relay: {what} is refused: {why}");
    }
    false
}

/// Answers an RTT probe: times a TCP handshake with `hop` (if the exit
/// policy allows it), closes that connection, and replies.
async fn probe(mut up: TcpStream, peer: SocketAddr, hop: Hop, o: &RelayOptions, c: &Counters) {
    bump(&c.probes);
    let to = SocketAddrV4::new(hop.addr.into(), hop.port);
    let reply = if permitted(&o.policy, to, "a probed hop", peer, c) {
        match handshake_rtt(to, o.connect_timeout).await {
            Some(d) => ProbeReply::Rtt(d),
            None => ProbeReply::Unreachable,
        }
    } else {
        ProbeReply::Refused
    };
    tracing::debug!(%peer, %to, ?reply, "otcp relay: probe");
    let _ = up.write_all(&reply.encode()).await;
    let _ = up.shutdown().await;
}

/// How long a TCP handshake with `to` takes (`connect` returns when the
/// SYN-ACK arrives: one RTT); `None` if it fails or times out.
async fn handshake_rtt(to: SocketAddrV4, timeout: Duration) -> Option<Dur> {
    let clock = crate::clock::Clock::new();
    let t0 = clock.now();
    match tokio::time::timeout(timeout, TcpStream::connect(to)).await {
        Ok(Ok(s)) => {
            let d = clock.now().since(t0);
            drop(s);
            Some(d)
        }
        _ => None,
    }
}

/// Asks `relay` for its handshake RTT to `to`.
async fn ask_probe(
    relay: SocketAddrV4,
    to: SocketAddrV4,
    timeout: Duration,
) -> Result<Dur, String> {
    let r = tokio::time::timeout(timeout * 2, async {
        let mut s = TcpStream::connect(relay).await?;
        let req = Opening::Probe(hop(to)).encode().expect("a probe encodes");
        s.write_all(&req).await?;
        let mut b = [0u8; REPLY_LEN];
        s.read_exact(&mut b).await?;
        Ok::<_, io::Error>(b)
    })
    .await;
    match r {
        Err(_) => Err("no reply in time".into()),
        Ok(Err(e)) => Err(format!("probe failed: {e}")),
        Ok(Ok(b)) => match ProbeReply::decode(&b) {
            Ok(ProbeReply::Rtt(d)) => Ok(d),
            Ok(ProbeReply::Refused) => Err("its exit policy refuses the destination".into()),
            Ok(ProbeReply::Unreachable) => Err("it cannot reach the destination".into()),
            Err(e) => Err(e.to_string()),
        },
    }
}

/// The smallest of `n` measurements (the one least inflated by queueing),
/// or the last error if none succeeded.
async fn min_of<F, Fut>(n: usize, f: F) -> Result<Dur, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Dur, String>>,
{
    let mut best: Result<Dur, String> = Err("not measured".into());
    for _ in 0..n.max(1) {
        match (f().await, &best) {
            (Ok(d), Ok(b)) if d >= *b => {}
            (Ok(d), _) => best = Ok(d),
            (Err(e), Err(_)) => best = Err(e),
            (Err(_), Ok(_)) => {}
        }
    }
    best
}

/// One candidate relay, as measured by [`select_relay`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub relay: SocketAddrV4,
    /// Handshake RTT from here to the relay.
    pub to_relay: Result<Dur, String>,
    /// The relay's handshake RTT to the destination (its probe answer).
    pub to_destination: Result<Dur, String>,
}

/// What [`select_relay`] measured and chose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Handshake RTT from here to the destination.
    pub direct: Result<Dur, String>,
    pub candidates: Vec<Candidate>,
    /// The relay to go through; `None`: straight to the destination.
    pub chosen: Option<SocketAddrV4>,
    /// The chosen path's largest hop RTT (seed 001 §2).
    pub path_rtt: Dur,
}

/// Stands in for a hop that could not be measured: longer than any RTT, so
/// no path through it is chosen while another exists.
const UNMEASURED: Dur = Dur::from_secs(24 * 3600);

/// Measures the handshake RTT from here to `dest` and to every candidate,
/// asks every candidate for its RTT to `dest` (`samples` times each, keeping
/// the smallest), and chooses the path with the lowest path RTT: direct, or
/// through one candidate (`hopwise_proto::otcp::select::best_via`; ties go
/// to the direct path). An error if nothing reaches the destination.
pub fn select_relay(
    candidates: &[SocketAddrV4],
    dest: SocketAddrV4,
    timeout: Duration,
    samples: usize,
) -> Result<Selection, StartError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError(format!("otcp forward: a runtime: {e}")))?;
    let (direct, measured) = rt.block_on(async {
        let direct = min_of(samples, || async {
            handshake_rtt(dest, timeout)
                .await
                .ok_or_else(|| "unreachable".to_string())
        });
        // One measurement at a time: concurrent handshakes from one host
        // would share its access link and inflate each other's samples.
        let d = direct.await;
        let mut out = Vec::with_capacity(candidates.len());
        for &r in candidates {
            let to_relay = min_of(samples, || async move {
                handshake_rtt(r, timeout)
                    .await
                    .ok_or_else(|| "unreachable".to_string())
            })
            .await;
            let to_destination = match &to_relay {
                Ok(_) => min_of(samples, || ask_probe(r, dest, timeout)).await,
                Err(_) => Err("not asked".into()),
            };
            out.push(Candidate {
                relay: r,
                to_relay,
                to_destination,
            });
        }
        (d, out)
    });
    let Some((chosen, path_rtt)) = choose(&direct, &measured) else {
        return Err(StartError(format!(
            "otcp forward: {dest} is reachable neither directly ({}) nor through any candidate",
            direct.as_ref().err().map_or("?", |e| e.as_str())
        )));
    };
    Ok(Selection {
        direct,
        candidates: measured,
        chosen,
        path_rtt,
    })
}

/// The path with the lowest path RTT from measured RTTs: `Some((None, rtt))`
/// for the direct path, `Some((Some(relay), rtt))` through a relay, `None`
/// if no path was measured end to end. Ties go to the direct path, then to
/// the earlier candidate.
pub fn choose(
    direct: &Result<Dur, String>,
    candidates: &[Candidate],
) -> Option<(Option<SocketAddrV4>, Dur)> {
    let val = |r: &Result<Dur, String>| *r.as_ref().unwrap_or(&UNMEASURED);
    // Nodes: 0 here, 1 the destination, 2.. the candidates.
    let m = RttMatrix::from_fn(2 + candidates.len(), |u, v| match (u, v) {
        (0, 1) => val(direct),
        (0, c) => val(&candidates[c - 2].to_relay),
        (1, c) => val(&candidates[c - 2].to_destination),
        _ => UNMEASURED,
    });
    let ids: Vec<usize> = (2..2 + candidates.len()).collect();
    let best = best_via(&m, 0, 1, &ids);
    if best.path_rtt >= UNMEASURED {
        return None;
    }
    let relay = best.relays().first().map(|&i| candidates[i - 2].relay);
    Some((relay, best.path_rtt))
}

/// Connects to the next hop (with congestion control `cc`, if given, from
/// the SYN on) and writes `header`; `None` (counted) on failure.
async fn connect(
    to: SocketAddrV4,
    timeout: Duration,
    header: Option<&[u8]>,
    cc: Option<&str>,
    c: &Counters,
) -> Option<TcpStream> {
    let r = tokio::time::timeout(timeout, async {
        let sock = tokio::net::TcpSocket::new_v4()?;
        set_congestion(&sock, cc);
        let mut s = sock.connect(to.into()).await?;
        if let Some(h) = header {
            s.write_all(h).await?;
        }
        Ok::<_, io::Error>(s)
    })
    .await;
    match r {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Some(s)
        }
        Ok(Err(e)) => {
            let n = bump(&c.connect_failed);
            if n.is_power_of_two() {
                tracing::warn!(next = %to, error = %e, failed = n, "otcp: cannot reach the next hop");
            }
            None
        }
        Err(_) => {
            let n = bump(&c.connect_failed);
            if n.is_power_of_two() {
                tracing::warn!(next = %to, failed = n, "otcp: the next hop did not answer within {timeout:?}");
            }
            None
        }
    }
}

/// Closes with a reset, so the peer sees an error rather than an end.
fn reset(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// Reads smaller than this wait in a lane's staging buffer while its splice
/// is busy, so that many tiny reads (a peer trickling bytes at a stalled
/// next hop) become few chunks rather than one allocation each.
const COALESCE: usize = 16 * 1024;

/// One direction of a splice.
///
/// Reads go into `pending` and move to the [`Splice`] at once when it is
/// empty (no added latency), or in chunks of [`COALESCE`] bytes while it
/// still has bytes the next hop has not taken. `pending` counts against the
/// splice's room, so a lane holds at most the splice's capacity in bytes,
/// in at most capacity / `COALESCE` + 2 chunks.
struct Lane {
    splice: Splice,
    pending: BytesMut,
    /// The reading side sent FIN.
    eof: bool,
    /// FIN sent on the writing side.
    shut: bool,
}

impl Lane {
    fn new(bytes: usize) -> Lane {
        Lane {
            splice: Splice::new(bytes),
            pending: BytesMut::new(),
            eof: false,
            shut: false,
        }
    }
    /// Bytes that may be read now.
    fn room(&self) -> usize {
        self.splice.want().saturating_sub(self.pending.len())
    }
    fn wants_read(&self) -> bool {
        !self.eof && self.room() > 0
    }
    /// Moves `pending` into the splice when it is empty, `pending` is large
    /// enough, or `force`.
    fn flush(&mut self, force: bool) {
        let n = self.pending.len();
        if n > 0 && (force || self.splice.is_empty() || n >= COALESCE) {
            let took = self.splice.push(self.pending.split().freeze());
            debug_assert_eq!(took, n, "pending never exceeds the splice's room");
        }
    }
}

/// Reads what `from` has into `lane` (at most its room); true if anything
/// happened (bytes or the end).
fn read_into(from: &TcpStream, lane: &mut Lane) -> io::Result<bool> {
    use bytes::BufMut;
    let room = lane.room().min(READ_CHUNK);
    lane.pending.reserve(room);
    let mut limited = (&mut lane.pending).limit(room);
    match from.try_read_buf(&mut limited) {
        Ok(0) => {
            lane.eof = true;
            lane.flush(true);
            lane.splice.upstream_closed();
            Ok(true)
        }
        Ok(_) => {
            lane.flush(false);
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes what `lane` holds to `to`; returns the bytes written.
fn write_from(lane: &mut Lane, to: &TcpStream) -> io::Result<usize> {
    let Some(front) = lane.splice.front() else {
        return Ok(0);
    };
    match to.try_write(front) {
        Ok(n) => {
            lane.splice.consumed(n);
            lane.flush(false);
            Ok(n)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(e),
    }
}

/// Passes FIN on once the lane is drained.
fn shut_if_done(lane: &mut Lane, to: &TcpStream) -> io::Result<()> {
    if !lane.shut && lane.splice.should_close_downstream() {
        lane.shut = true;
        socket2::SockRef::from(to).shutdown(Shutdown::Write)?;
    }
    Ok(())
}

/// Resets both connections when dropped armed: a splice cut short (the
/// relay stopping mid-transfer drops its tasks) must not look like a clean
/// end to the peers, which a FIN would.
struct ResetOnDrop<'a> {
    socks: Vec<&'a TcpStream>,
    armed: bool,
}

impl ResetOnDrop<'_> {
    /// The connections end normally from here on.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            for s in &self.socks {
                reset(s);
            }
        }
    }
}

/// Copies `up` → `down` and `down` → `up` until both directions have ended;
/// `early` is payload read with the header. An error, `idle` without a byte
/// either way, or being dropped (the relay stopping) resets both sides.
async fn splice(
    up: TcpStream,
    down: TcpStream,
    early: Vec<u8>,
    bytes: usize,
    idle: Duration,
    c: &Counters,
) {
    bump(&c.spliced);
    let guard = ResetOnDrop {
        socks: vec![&up, &down],
        armed: true,
    };
    let mut fwd = Lane::new(bytes);
    let mut back = Lane::new(bytes);
    if !early.is_empty() {
        let n = early.len();
        let took = fwd.splice.push(early.into());
        debug_assert_eq!(
            took, n,
            "early bytes fit: at most a header read, below MIN_SPLICE"
        );
    }
    let mut quiet_until = tokio::time::Instant::now() + idle;
    let r: io::Result<()> = async {
        loop {
            shut_if_done(&mut fwd, &down)?;
            shut_if_done(&mut back, &up)?;
            if fwd.shut && back.shut {
                return Ok(());
            }
            let moved = tokio::select! {
                r = up.readable(), if fwd.wants_read() => { r?; read_into(&up, &mut fwd)? }
                r = down.readable(), if back.wants_read() => { r?; read_into(&down, &mut back)? }
                r = down.writable(), if !fwd.splice.is_empty() => {
                    r?;
                    let n = write_from(&mut fwd, &down)?;
                    c.bytes_forward.fetch_add(n as u64, Ordering::Relaxed);
                    n > 0
                }
                r = up.writable(), if !back.splice.is_empty() => {
                    r?;
                    let n = write_from(&mut back, &up)?;
                    c.bytes_back.fetch_add(n as u64, Ordering::Relaxed);
                    n > 0
                }
                _ = tokio::time::sleep_until(quiet_until) => {
                    bump(&c.idle);
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no byte either way for {idle:?}"),
                    ));
                }
            };
            if moved {
                quiet_until = tokio::time::Instant::now() + idle;
            }
        }
    }
    .await;
    match r {
        Ok(()) => guard.disarm(),
        Err(e) => {
            bump(&c.reset);
            tracing::debug!(error = %e, "otcp: connection reset");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny reads while the splice is busy are staged and moved in
    /// `COALESCE`-sized chunks; the lane's room counts them.
    #[test]
    fn tiny_reads_are_coalesced_while_the_splice_is_busy() {
        let mut lane = Lane::new(64 * 1024);
        lane.pending.extend_from_slice(b"a");
        lane.flush(false);
        // Into the empty splice at once: no added latency.
        assert_eq!((lane.splice.len(), lane.pending.len()), (1, 0));
        for _ in 0..COALESCE - 1 {
            lane.pending.extend_from_slice(b"b");
            lane.flush(false);
        }
        // The splice still holds the first byte; the rest waits, one chunk.
        assert_eq!((lane.splice.len(), lane.pending.len()), (1, COALESCE - 1));
        assert_eq!(lane.room(), 64 * 1024 - 1 - (COALESCE - 1));
        lane.pending.extend_from_slice(b"c");
        lane.flush(false);
        assert_eq!((lane.splice.len(), lane.pending.len()), (1 + COALESCE, 0));
        // The next hop takes the first byte: the front is then the chunk.
        lane.splice.consumed(1);
        assert_eq!(lane.splice.front().map(|b| b.len()), Some(COALESCE));
        // The end moves what is left at once.
        lane.pending.extend_from_slice(b"d");
        lane.flush(true);
        assert_eq!(lane.pending.len(), 0);
    }
}
