//! Bulk TCP transfers between namespaces, on threads.
//!
//! Each sender and receiver runs on its own thread, which first moves
//! itself into a namespace with `setns(2)`; sockets it opens afterwards
//! belong to that namespace. All threads share one [`Clock`], so goodput
//! bins and queue samples line up. A sender writes until its stop time and
//! then closes with a zero linger (a reset), so that the data still queued
//! in its socket buffer is dropped and the transfer ends on time.

use anyhow::{bail, Context, Result};
use nix::sched::{setns, CloneFlags};
use socket2::SockRef;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Width of a goodput bin.
pub const BIN_S: f64 = 0.1;

/// The experiment's time base. The lab runs in real time, so this is the
/// one place in the crate that reads the wall clock and sleeps.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    t0: Instant,
    /// The same moment on the realtime clock, for kernel timestamps.
    unix0: SystemTime,
}

#[allow(clippy::disallowed_methods)] // the lab is a real-time driver, like the daemon's clock
impl Clock {
    pub fn start() -> Clock {
        Clock {
            t0: Instant::now(),
            unix0: SystemTime::now(),
        }
    }
    /// Converts a realtime-clock timestamp (seconds since the Unix epoch,
    /// e.g. from `SO_TIMESTAMPNS`) to seconds since the start. The two
    /// clocks are paired once, at the start: a step of the realtime clock
    /// during a run (NTP) shifts such timestamps by the step.
    pub fn from_unix(&self, unix_s: f64) -> f64 {
        let base = self
            .unix0
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        unix_s - base
    }
    /// Seconds since the start.
    pub fn now_s(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    /// Nanoseconds since the start.
    pub fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }
    /// Sleeps until `t_s` seconds after the start (returns at once if past).
    pub fn sleep_until(&self, t_s: f64) {
        let d = t_s - self.now_s();
        if d > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(d));
        }
    }
}

/// Sets a stop flag when dropped, so that threads waiting on it end
/// whichever way their owner leaves.
pub struct StopOnDrop(pub Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A timeout or an interrupted call (EINTR): try again.
fn retry(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// A TCP connection to `to`, directly or through the SOCKS5 proxy at
/// `socks`, each connect bounded by one second.
pub fn connect_via(to: SocketAddr, socks: Option<SocketAddr>) -> Result<TcpStream> {
    match socks {
        None => Ok(TcpStream::connect_timeout(&to, Duration::from_secs(1))?),
        Some(p) => {
            let mut s = TcpStream::connect_timeout(&p, Duration::from_secs(1))?;
            socks5_connect(&mut s, to)?;
            Ok(s)
        }
    }
}

/// Moves the calling thread into the namespace behind `ns`.
pub fn enter(ns: &File, what: &str) -> Result<()> {
    setns(ns, CloneFlags::CLONE_NEWNET)
        .with_context(|| format!("{what}: setns(CLONE_NEWNET) failed (root needed)"))
}

/// Mean goodput in bit/s of `bins` ([`BIN_S`] wide) over `[t0, t1)`;
/// bins past the end count as empty.
pub fn goodput_bps(bins: &[u64], t0: f64, t1: f64) -> f64 {
    let (i0, i1) = ((t0 / BIN_S).round() as usize, (t1 / BIN_S).round() as usize);
    if i1 <= i0 {
        return 0.0;
    }
    let bytes: u64 = (i0..i1).map(|i| bins.get(i).copied().unwrap_or(0)).sum();
    bytes as f64 * 8.0 / ((i1 - i0) as f64 * BIN_S)
}

/// 100 ms bins as a 1 s goodput series in bit/s, `secs` long (bins past
/// the end count as empty).
pub fn per_second(bins: &[u64], secs: usize) -> Vec<f64> {
    let per = (1.0 / BIN_S).round() as usize;
    (0..secs)
        .map(|s| {
            let bytes: u64 = (s * per..(s + 1) * per)
                .map(|i| bins.get(i).copied().unwrap_or(0))
                .sum();
            bytes as f64 * 8.0
        })
        .collect()
}

/// Listens on `addr:port` inside `ns`, accepts one connection and counts
/// what arrives until `end_s`, in bytes per [`BIN_S`] bin since the clock's
/// start. Returns once the socket is bound, so a sender started afterwards
/// finds it.
pub fn spawn_receiver(
    ns: File,
    addr: Ipv4Addr,
    port: u16,
    clock: Clock,
    end_s: f64,
    name: String,
) -> Result<JoinHandle<Result<Vec<u64>>>> {
    let what = format!("receiver {name}");
    let w = what.clone();
    spawn_ready(
        what,
        move || listen_in(&ns, addr, port, &w).map(|l| (l, w)),
        move |(listener, what)| {
            let Some(mut stream) = accept_until(&listener, clock, end_s, &what)? else {
                return Ok(Vec::new()); // nobody came
            };
            read_bins(&mut stream, clock, end_s, &what)
        },
    )
}

/// Runs `setup` (entering a namespace, opening a socket) and then `body` on
/// a thread named `what`. Returns once `setup` has finished; if it failed,
/// so does this call, so that the caller knows the socket is ready.
pub fn spawn_ready<S, T: Send + 'static>(
    what: String,
    setup: impl FnOnce() -> Result<S> + Send + 'static,
    body: impl FnOnce(S) -> Result<T> + Send + 'static,
) -> Result<JoinHandle<Result<T>>> {
    let (tx, rx) = mpsc::channel::<Result<()>>();
    let h = std::thread::Builder::new()
        .name(what.clone())
        .spawn(move || -> Result<T> {
            let s = match setup() {
                Ok(s) => {
                    let _ = tx.send(Ok(()));
                    s
                }
                Err(e) => {
                    let _ = tx.send(Err(anyhow::anyhow!("{e:#}")));
                    return Err(e);
                }
            };
            body(s)
        })?;
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(e)) => {
            let _ = h.join();
            Err(e)
        }
        Err(_) => bail!("{what}: the thread ended before it was ready"),
    }
}

/// Enters `ns` and listens on `addr:port` (non-blocking).
fn listen_in(ns: &File, addr: Ipv4Addr, port: u16, what: &str) -> Result<TcpListener> {
    enter(ns, what)?;
    let l = TcpListener::bind((addr, port))
        .with_context(|| format!("{what}: cannot listen on {addr}:{port}"))?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// Accepts a connection (made blocking), or `None` once `deadline_s` has passed.
fn accept_until(
    listener: &TcpListener,
    clock: Clock,
    deadline_s: f64,
    what: &str,
) -> Result<Option<TcpStream>> {
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                return Ok(Some(s));
            }
            Err(e) if retry(&e) => {
                if clock.now_s() >= deadline_s {
                    return Ok(None);
                }
                clock.sleep_until(clock.now_s() + 0.005);
            }
            Err(e) => return Err(e).context(format!("{what}: accept")),
        }
    }
}

/// The threads' results, in order; every failure is added to `errors`
/// (all threads are joined first, so that a receiver's error that explains
/// a sender's is reported too).
pub fn join_all<T>(
    handles: impl IntoIterator<Item = JoinHandle<Result<T>>>,
    kind: &str,
    errors: &mut Vec<String>,
) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Ok(v)) => out.push(v),
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(_) => errors.push(format!("a {kind} thread panicked")),
        }
    }
    out
}

/// Joins every sender and then every receiver thread, and returns the
/// receivers' results in order. The run's own failure (`failed`, such as
/// the delay line's), if any, is the error; otherwise every thread's
/// failure, listed (a receiver's error usually explains a sender's broken
/// pipe).
pub fn join_flows<S, R>(
    senders: Vec<JoinHandle<Result<S>>>,
    receivers: Vec<JoinHandle<Result<R>>>,
    failed: Option<anyhow::Error>,
) -> Result<Vec<R>> {
    let mut errors = Vec::new();
    join_all(senders, "sender", &mut errors);
    let out = join_all(receivers, "receiver", &mut errors);
    if let Some(e) = failed {
        return Err(e);
    }
    anyhow::ensure!(
        errors.is_empty(),
        "the kernel run failed:\n  {}",
        errors.join("\n  ")
    );
    Ok(out)
}

/// Sets the socket's congestion control (`TCP_CONGESTION`).
fn set_cc(stream: &TcpStream, cc: &str, what: &str) -> Result<()> {
    SockRef::from(stream)
        .set_tcp_congestion(cc.as_bytes())
        .with_context(|| {
            let avail =
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default();
            format!(
                "{what}: congestion control {cc:?} is not available (the kernel offers: {})",
                avail.trim()
            )
        })
}

/// Reads `stream` until `end_s` (or its end), counting bytes per [`BIN_S`]
/// bin since the clock's start.
fn read_bins(stream: &mut TcpStream, clock: Clock, end_s: f64, what: &str) -> Result<Vec<u64>> {
    stream.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut bins: Vec<u64> = Vec::new();
    let mut buf = vec![0u8; 256 << 10];
    while clock.now_s() < end_s {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let bin = (clock.now_s() / BIN_S) as usize;
                if bins.len() <= bin {
                    bins.resize(bin + 1, 0);
                }
                bins[bin] += n as u64;
            }
            Err(e) if retry(&e) => {}
            // The sender's zero-linger close at its stop time.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e).context(format!("{what}: read")),
        }
    }
    Ok(bins)
}

/// Writes as fast as `stream` takes data until `stop_s`, then resets it
/// (zero linger), so that the data still queued in the socket is dropped.
fn write_until(stream: &mut TcpStream, clock: Clock, stop_s: f64, what: &str) -> Result<()> {
    stream.set_write_timeout(Some(Duration::from_millis(50)))?;
    let buf = vec![0x5au8; 64 << 10];
    while clock.now_s() < stop_s {
        match stream.write(&buf) {
            Ok(_) => {}
            Err(e) if retry(&e) => {}
            // The receiver closes when the run ends; at the stop time that is not a failure.
            Err(e)
                if clock.now_s() >= stop_s - 0.2
                    && matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset) =>
            {
                break
            }
            Err(e) => return Err(e).context(format!("{what}: write")),
        }
    }
    SockRef::from(&*stream).set_linger(Some(Duration::ZERO))?;
    Ok(())
}

/// Listens on `addr:port` inside `ns`, accepts a connection and writes to
/// it until `stop_s` (a download's server); if the client closes it early,
/// serves the next one. Returns once the socket is bound.
pub fn spawn_server(
    ns: File,
    addr: Ipv4Addr,
    port: u16,
    cc: String,
    clock: Clock,
    stop_s: f64,
    name: String,
) -> Result<JoinHandle<Result<()>>> {
    let what = format!("server {name}");
    let w = what.clone();
    spawn_ready(
        what,
        move || listen_in(&ns, addr, port, &w).map(|l| (l, w)),
        move |(listener, what)| loop {
            let Some(mut stream) = accept_until(&listener, clock, stop_s, &what)? else {
                bail!("{what}: nobody connected before the end of the run");
            };
            set_cc(&stream, &cc, &what)?;
            match write_until(&mut stream, clock, stop_s, &what) {
                // A connection its client gave up on (a SOCKS5 attempt
                // that timed out while the exit connected): serve the next.
                Err(e)
                    if clock.now_s() < stop_s
                        && e.downcast_ref::<std::io::Error>().is_some_and(|io| {
                            matches!(
                                io.kind(),
                                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
                            )
                        }) =>
                {
                    continue
                }
                r => return r,
            }
        },
    )
}

/// From inside `ns`, at `start_s`, connects to `to` (through the SOCKS5
/// proxy `socks`, if given, retrying until `start_s + setup_s` while the
/// proxy builds its circuit), then reads until `end_s`; returns the
/// [`BIN_S`] bins.
pub fn spawn_client(
    ns: File,
    to: SocketAddr,
    socks: Option<SocketAddr>,
    clock: Clock,
    (start_s, setup_s, end_s): (f64, f64, f64),
    name: String,
) -> Result<JoinHandle<Result<Vec<u64>>>> {
    let what = format!("client {name}");
    Ok(std::thread::Builder::new()
        .name(what.clone())
        .spawn(move || -> Result<Vec<u64>> {
            enter(&ns, &what)?;
            clock.sleep_until(start_s);
            let mut stream = loop {
                let attempt = connect_via(to, socks);
                match attempt {
                    Ok(s) => break s,
                    Err(_) if clock.now_s() < start_s + setup_s => {
                        clock.sleep_until(clock.now_s() + 0.2)
                    }
                    Err(e) => {
                        return Err(e).context(format!(
                            "{what}: cannot connect to {to}{}",
                            socks.map_or(String::new(), |p| format!(" through SOCKS5 {p}"))
                        ))
                    }
                }
            };
            read_bins(&mut stream, clock, end_s, &what)
        })?)
}

/// The SOCKS5 CONNECT exchange (RFC 1928) without authentication, for an
/// IPv4 destination.
pub fn socks5_connect(s: &mut TcpStream, to: SocketAddr) -> Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(&[5, 1, 0])?;
    let mut r = [0u8; 2];
    s.read_exact(&mut r).context("SOCKS5 greeting")?;
    if r != [5, 0] {
        bail!("SOCKS5: the proxy answered the greeting with {r:?}, not [5, 0]");
    }
    let SocketAddr::V4(v4) = to else {
        bail!("SOCKS5: only IPv4 destinations here, not {to}");
    };
    let mut req = vec![5, 1, 0, 1];
    req.extend(v4.ip().octets());
    req.extend(v4.port().to_be_bytes());
    s.write_all(&req)?;
    let mut head = [0u8; 4];
    s.read_exact(&mut head).context("SOCKS5 reply")?;
    if head[0] != 5 {
        bail!("SOCKS5: reply version {}, not 5", head[0]);
    }
    if head[1] != 0 {
        bail!(
            "SOCKS5: the proxy refused the connection (reply code {:#04x})",
            head[1]
        );
    }
    let rest = match head[3] {
        1 => 4 + 2,
        4 => 16 + 2,
        3 => {
            let mut l = [0u8; 1];
            s.read_exact(&mut l)?;
            l[0] as usize + 2
        }
        t => bail!("SOCKS5: unknown address type {t} in the reply"),
    };
    let mut skip = vec![0u8; rest];
    s.read_exact(&mut skip)?;
    s.set_read_timeout(None)?;
    Ok(())
}

/// The checks every lab experiment makes of its options: `--cc` is a
/// congestion control the kernel has, and each case of `secs` runs longer
/// than the `warm_s` warm-up plus a second.
pub fn check_cc_and_secs(cc: &str, secs: u64, warm_s: f64) -> Result<()> {
    check_cc(cc)?;
    anyhow::ensure!(
        secs as f64 > warm_s + 1.0,
        "--secs {secs}: each case must run longer than the {warm_s} s warm-up plus a second"
    );
    Ok(())
}

/// Whether an experiment's simulator comparison runs: only when it was asked
/// for (`requested`) and the kernel's `--cc` is the one the simulator models
/// (`modelled`). Says so before the kernel runs start when it is skipped, so
/// a user learns it up front rather than after minutes of real time.
pub fn sim_comparison(
    progress: &dyn hopwise_experiment::Progress,
    cc: &str,
    modelled: &str,
    requested: bool,
) -> bool {
    let on = requested && cc == modelled;
    if requested && !on {
        progress.note(&format!(
            "the simulator's comparison runs {modelled} only, so it is skipped for --cc {cc}"
        ));
    }
    on
}

/// Fails unless a TCP socket can use congestion control `cc` (checked on
/// a scratch socket before an experiment starts).
pub fn check_cc(cc: &str) -> Result<()> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .context("cannot open a TCP socket")?;
    s.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap_or_default();
        // ENOENT is the kernel's "no such module": say it in words.
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            String::new()
        } else {
            format!("{e}; ")
        };
        anyhow::anyhow!(
            "--cc {cc:?}: the kernel has no such TCP congestion control ({why}it offers: {}; \
             `modprobe tcp_<name>` loads another)",
            avail.trim()
        )
    })
}

/// From inside `ns`, connects to `to` at `start_s` with congestion control
/// `cc`, writes as fast as the socket takes data until `stop_s`, then
/// resets the connection.
pub fn spawn_sender(
    ns: File,
    to: SocketAddr,
    cc: String,
    clock: Clock,
    start_s: f64,
    stop_s: f64,
    name: String,
) -> Result<JoinHandle<Result<()>>> {
    let what = format!("sender {name}");
    Ok(std::thread::Builder::new()
        .name(what.clone())
        .spawn(move || -> Result<()> {
            enter(&ns, &what)?;
            let mut stream = connect_at(to, clock, start_s, &what)?;
            set_cc(&stream, &cc, &what)?;
            write_until(&mut stream, clock, stop_s, &what)
        })?)
}

/// Connects to `to` at `start_s`, retrying for 10 s: the listener may not
/// be up yet, and a SYN that meets a full bottleneck queue (a second and
/// more of queueing behind a deep buffer) is dropped and sent again only
/// after the kernel's 1 s and 3 s retransmission timers, which each
/// attempt's 5 s allows.
fn connect_at(to: SocketAddr, clock: Clock, start_s: f64, what: &str) -> Result<TcpStream> {
    clock.sleep_until(start_s);
    loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(5)) {
            Ok(s) => return Ok(s),
            Err(_) if clock.now_s() < start_s + 10.0 => clock.sleep_until(clock.now_s() + 0.05),
            Err(e) => return Err(e).context(format!("{what}: cannot connect to {to}")),
        }
    }
}

/// Carries data both ways on `stream` until `stop_s`: a second thread
/// writes as fast as the socket takes data while this one counts what
/// arrives in [`BIN_S`] bins; then the connection is reset (zero linger),
/// as [`spawn_sender`]'s is.
fn duplex(stream: TcpStream, clock: Clock, stop_s: f64, what: &str) -> Result<Vec<u64>> {
    let mut w = stream
        .try_clone()
        .with_context(|| format!("{what}: cannot clone the socket for writing"))?;
    let wwhat = what.to_string();
    let writer = std::thread::Builder::new()
        .name(format!("{what}, writing"))
        .spawn(move || write_until(&mut w, clock, stop_s, &wwhat))?;
    let mut r = stream;
    let read = read_bins(&mut r, clock, stop_s, what);
    let wrote = writer
        .join()
        .map_err(|_| anyhow::anyhow!("{what}: the writing thread panicked"))?;
    // A read error usually explains the write's, so it comes first.
    let bins = read?;
    wrote?;
    Ok(bins)
}

/// The accepting end of a connection that carries data both ways (seed
/// 000's bidirectional overlay links): listens on `addr:port` inside `ns`,
/// accepts one connection, sends with congestion control `cc` and counts
/// what arrives until `stop_s`. Returns once the socket is bound; the
/// thread returns the arriving direction's [`BIN_S`] bins.
pub fn spawn_duplex_server(
    ns: File,
    addr: Ipv4Addr,
    port: u16,
    cc: String,
    clock: Clock,
    stop_s: f64,
    name: String,
) -> Result<JoinHandle<Result<Vec<u64>>>> {
    let what = format!("two-way server {name}");
    let w = what.clone();
    spawn_ready(
        what,
        move || listen_in(&ns, addr, port, &w).map(|l| (l, w)),
        move |(listener, what)| {
            let Some(stream) = accept_until(&listener, clock, stop_s, &what)? else {
                bail!("{what}: nobody connected before {stop_s} s");
            };
            set_cc(&stream, &cc, &what)?;
            duplex(stream, clock, stop_s, &what)
        },
    )
}

/// The connecting end of [`spawn_duplex_server`]'s connection: from inside
/// `ns`, connects to `to` at `start_s`, then sends and counts what arrives
/// until `stop_s`.
pub fn spawn_duplex_client(
    ns: File,
    to: SocketAddr,
    cc: String,
    clock: Clock,
    (start_s, stop_s): (f64, f64),
    name: String,
) -> Result<JoinHandle<Result<Vec<u64>>>> {
    let what = format!("two-way client {name}");
    Ok(std::thread::Builder::new()
        .name(what.clone())
        .spawn(move || -> Result<Vec<u64>> {
            enter(&ns, &what)?;
            let stream = connect_at(to, clock, start_s, &what)?;
            set_cc(&stream, &cc, &what)?;
            duplex(stream, clock, stop_s, &what)
        })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_averages_whole_bins_and_counts_missing_ones_as_empty() {
        // 10 bins of 0.1 s: 1250 B per bin = 100 kbit/s.
        let bins = vec![1250u64; 10];
        assert!((goodput_bps(&bins, 0.0, 1.0) - 100_000.0).abs() < 1e-6);
        // Half the window lies past the data.
        assert!((goodput_bps(&bins, 0.5, 1.5) - 50_000.0).abs() < 1e-6);
        assert_eq!(goodput_bps(&bins, 1.0, 1.0), 0.0);
    }

    #[test]
    fn per_second_sums_ten_bins() {
        let bins = vec![125u64; 25];
        let s = per_second(&bins, 3);
        assert_eq!(s, vec![10_000.0, 10_000.0, 5_000.0]);
    }
}
