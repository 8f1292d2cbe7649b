//! Sized downloads between namespaces: a server that sends every
//! connection the same body of a given size, generated from its offset,
//! and closes; and a client that connects (directly, or through a SOCKS5
//! proxy), reads to the end or to a deadline, and stamps when the stream
//! opened, when its first byte came and when it ended, so that setup and
//! transfer are timed apart.
//!
//! The body is whatever the caller's [`Fill`] writes at each offset (the
//! daemon's deterministic test file, say), and the client hands each chunk
//! it reads to the caller (to hash it), so that this module knows nothing
//! about the content.

use crate::traffic::{connect_via, enter, spawn_ready, Clock};
use anyhow::{Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Writes the body's bytes at `offset` into the buffer; the server calls
/// it with offsets that are multiples of [`CHUNK`].
pub type Fill = Arc<dyn Fn(u64, &mut [u8]) + Send + Sync>;

/// The server writes the body in pieces of this size (a multiple of 8).
pub const CHUNK: usize = 64 << 10;
/// How often blocked reads and writes look at their stop flag or deadline.
const TICK: Duration = Duration::from_millis(200);

/// A timeout or an interrupted call: try again.
fn retry(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Listens on `port` (every address) in `ns`, with congestion control
/// `cc` (`TCP_CONGESTION`) if given; sends each connection,
/// on a thread of its own, `size` bytes from `fill`, half-closes, and
/// waits for the client to close. A connection the client drops early is
/// given up quietly. Ends when `stop` is set; returns how many bodies were
/// sent whole. Returns once it listens.
pub fn spawn_sized_server(
    ns: File,
    port: u16,
    size: u64,
    fill: Fill,
    cc: Option<String>,
    stop: Arc<AtomicBool>,
    name: String,
) -> Result<JoinHandle<Result<u64>>> {
    let what = format!("server {name}");
    let w = what.clone();
    spawn_ready(
        what,
        move || {
            enter(&ns, &w)?;
            let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
                .with_context(|| format!("{w}: cannot listen on port {port}"))?;
            l.set_nonblocking(true)?;
            if let Some(cc) = &cc {
                socket2::SockRef::from(&l)
                    .set_tcp_congestion(cc.as_bytes())
                    .with_context(|| format!("{w}: congestion control {cc:?}"))?;
            }
            Ok((l, w, cc))
        },
        move |(l, what, cc)| {
            let whole = Arc::new(AtomicU64::new(0));
            while !stop.load(Ordering::Relaxed) {
                let mut fds = [PollFd::new(l.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::from(50u16)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e).context(format!("{what}: poll")),
                }
                let s = match l.accept() {
                    Ok((s, _)) => s,
                    Err(e) if retry(&e) => continue,
                    Err(e) => return Err(e).context(format!("{what}: accept")),
                };
                if let Some(cc) = &cc {
                    // Children inherit the listener's, but say it.
                    let _ = socket2::SockRef::from(&s).set_tcp_congestion(cc.as_bytes());
                }
                let (fill, stop, whole) = (fill.clone(), stop.clone(), whole.clone());
                std::thread::Builder::new()
                    .name(format!("{what}: a connection"))
                    .spawn(move || {
                        if send_body(s, size, &fill, &stop).unwrap_or(false) {
                            whole.fetch_add(1, Ordering::Relaxed);
                        }
                    })?;
            }
            Ok(whole.load(Ordering::Relaxed))
        },
    )
}

/// Writes `size` bytes of `fill` to `s`, half-closes and reads until the
/// client closes. Whether the whole body went out; an error if the
/// connection broke.
fn send_body(mut s: TcpStream, size: u64, fill: &Fill, stop: &AtomicBool) -> Result<bool> {
    s.set_nonblocking(false)?;
    s.set_write_timeout(Some(TICK))?;
    s.set_read_timeout(Some(TICK))?;
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(CHUNK as u64) as usize;
        fill(off, &mut buf[..n]);
        let mut at = 0;
        while at < n {
            if stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            match s.write(&buf[at..n]) {
                Ok(k) => at += k,
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        off += n as u64;
    }
    s.shutdown(Shutdown::Write)?;
    // The client closes once it has read everything.
    let mut sink = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if retry(&e) => {}
            Err(_) => break,
        }
    }
    Ok(true)
}

/// One download, as the client saw it. Times are seconds on the run's
/// clock; NaN where the moment never came.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    /// Bytes read (and handed to the sink).
    pub bytes: u64,
    /// When the attempt began, when the stream was open (the SOCKS5 reply,
    /// or the connect), when its first byte came, when reading stopped.
    pub start_s: f64,
    pub open_s: f64,
    pub first_s: f64,
    pub end_s: f64,
    /// Whether the server's end of stream was read (else the deadline, or
    /// an error, came first).
    pub complete: bool,
    /// Why it stopped early, if it did for another reason than the deadline.
    pub error: Option<String>,
}

impl Fetched {
    /// From the attempt's start to the first byte (connection, circuit,
    /// stream, request), or to the end if no byte came.
    pub fn setup_s(&self) -> f64 {
        if self.first_s.is_nan() {
            self.end_s - self.start_s
        } else {
            self.first_s - self.start_s
        }
    }

    /// From the first byte to the end of stream (or to where reading
    /// stopped); 0 if no byte came.
    pub fn transfer_s(&self) -> f64 {
        if self.first_s.is_nan() {
            0.0
        } else {
            self.end_s - self.first_s
        }
    }

    /// Bytes per second over [`Fetched::transfer_s`] (what an unfinished
    /// download managed so far); 0 without a byte.
    pub fn goodput_bytes_per_s(&self) -> f64 {
        let t = self.transfer_s();
        if t > 0.0 {
            self.bytes as f64 / t
        } else {
            0.0
        }
    }
}

/// From the calling thread's namespace, connects to `to` (through the
/// SOCKS5 proxy `socks`, if given, retrying while the proxy is not ready
/// yet), then reads to the end of the stream, handing each chunk to
/// `sink`. Gives up at `deadline_s` on `clock`, whether still connecting
/// or reading, and reports what it got. `start_s` is when the attempt
/// began (the caller may have started a proxy for it).
pub fn fetch(
    to: SocketAddr,
    socks: Option<SocketAddr>,
    clock: Clock,
    start_s: f64,
    deadline_s: f64,
    sink: &mut dyn FnMut(&[u8]),
) -> Fetched {
    let mut f = Fetched {
        bytes: 0,
        start_s,
        open_s: f64::NAN,
        first_s: f64::NAN,
        end_s: f64::NAN,
        complete: false,
        error: None,
    };
    let mut last_error = None;
    let mut stream = loop {
        if clock.now_s() >= deadline_s {
            f.end_s = clock.now_s();
            f.error = last_error.map(|e: anyhow::Error| format!("not connected: {e:#}"));
            return f;
        }
        let attempt = connect_via(to, socks);
        match attempt {
            Ok(s) => break s,
            Err(e) => {
                last_error = Some(e);
                clock.sleep_until(clock.now_s() + 0.05);
            }
        }
    };
    f.open_s = clock.now_s();
    if let Err(e) = stream.set_read_timeout(Some(TICK)) {
        f.end_s = clock.now_s();
        f.error = Some(e.to_string());
        return f;
    }
    let mut buf = vec![0u8; 256 << 10];
    loop {
        if clock.now_s() >= deadline_s {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                f.complete = true;
                break;
            }
            Ok(n) => {
                if f.bytes == 0 {
                    f.first_s = clock.now_s();
                }
                f.bytes += n as u64;
                sink(&buf[..n]);
            }
            Err(e) if retry(&e) => {}
            Err(e) => {
                f.error = Some(format!("read after {} B: {e}", f.bytes));
                break;
            }
        }
    }
    f.end_s = clock.now_s().min(deadline_s.max(f.open_s));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(first_s: f64, end_s: f64, bytes: u64) -> Fetched {
        Fetched {
            bytes,
            start_s: 1.0,
            open_s: 1.5,
            first_s,
            end_s,
            complete: true,
            error: None,
        }
    }

    #[test]
    fn setup_runs_to_the_first_byte_and_the_transfer_from_it() {
        let f = fetched(2.0, 6.0, 8_000_000);
        assert_eq!(f.setup_s(), 1.0);
        assert_eq!(f.transfer_s(), 4.0);
        assert_eq!(f.goodput_bytes_per_s(), 2e6);
        // No byte: all of it was setup, and nothing moved.
        let f = fetched(f64::NAN, 9.0, 0);
        assert_eq!(f.setup_s(), 8.0);
        assert_eq!(f.transfer_s(), 0.0);
        assert_eq!(f.goodput_bytes_per_s(), 0.0);
    }

    /// Server and client on loopback in this namespace (no root needed):
    /// the body arrives whole, in order, and the server counts it.
    #[test]
    fn a_sized_body_arrives_whole_and_ends_the_stream() {
        let ns = File::open("/proc/self/ns/net").unwrap();
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let stop = Arc::new(AtomicBool::new(false));
        let fill: Fill = Arc::new(|off, b: &mut [u8]| {
            for (i, x) in b.iter_mut().enumerate() {
                *x = ((off + i as u64) % 251) as u8;
            }
        });
        let size = 3 * CHUNK as u64 + 77;
        let server = match spawn_sized_server(ns, port, size, fill, None, stop.clone(), "t".into())
        {
            Ok(s) => s,
            // setns into our own namespace needs CAP_SYS_ADMIN.
            Err(e) if format!("{e:#}").contains("setns") => return,
            Err(e) => panic!("{e:#}"),
        };
        let clock = Clock::start();
        let mut got = Vec::new();
        let f = fetch(
            SocketAddr::from(([127, 0, 0, 1], port)),
            None,
            clock,
            0.0,
            30.0,
            &mut |b| got.extend_from_slice(b),
        );
        assert!(f.complete, "{f:?}");
        assert_eq!(f.bytes, size);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u64 % 251) as u8));
        assert!(f.open_s <= f.first_s && f.first_s <= f.end_s);
        // The server counts the body once the client has closed.
        let t = clock.now_s();
        while clock.now_s() < t + 5.0 {
            clock.sleep_until(clock.now_s() + 0.05);
            if Arc::strong_count(&stop) == 2 {
                // Its connection thread ended (it held no clone of `stop`
                // beyond the server's own).
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert_eq!(server.join().unwrap().unwrap(), 1);
    }
}
