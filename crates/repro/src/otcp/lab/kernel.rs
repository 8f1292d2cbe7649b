//! The kernel side of `hopwise lab otcp`: the wan of Table 1's paths, the
//! relay and forwarder processes, the sink and the timed transfers.

use super::{
    Options, Transfer, FORWARD_PORT, RELAY_PORT, SERVER_PORT, TRANSFER_LIMIT, WARMUP_BYTES,
};
use crate::otcp::{Regime, FILE, SPLICE, TABLE1, WINDOW};
use anyhow::{Context, Result};
use hopwise_experiment::Progress;
use hopwise_lab::delay::LinkStats;
use hopwise_lab::traffic::{enter, spawn_ready, Clock, StopOnDrop};
use hopwise_lab::wan::{link_addr, Wan, WanLink, WanNames, WanSpec};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use socket2::SockRef;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// The hosts: client, server, then each chain's relays.
fn hosts() -> Vec<String> {
    let mut h = vec!["client".to_string(), "server".to_string()];
    for &(k, _, _) in &TABLE1[1..] {
        h.extend((1..k).map(|j| format!("p{k}r{j}")));
    }
    h
}

/// Each path's links, as indices into the spec's links, in hop order.
/// Path 0 is the direct one.
pub(super) fn spec(regime: Regime, cc: &str) -> (WanSpec, Vec<Vec<usize>>) {
    let names = hosts();
    let idx = |n: &str| names.iter().position(|h| h == n).expect("host exists");
    let (_, wan) = regime.setup(FILE);
    let mut links = Vec::new();
    let mut paths = Vec::new();
    for &(k, rtt_ms, _) in &TABLE1 {
        let mut chain = vec![idx("client")];
        chain.extend((1..k).map(|j| idx(&format!("p{k}r{j}"))));
        chain.push(idx("server"));
        let mut path = Vec::new();
        for w in chain.windows(2) {
            let rtt = Duration::from_secs_f64(rtt_ms / 1e3);
            path.push(links.len());
            links.push(WanLink {
                a: w[0],
                b: w[1],
                rtt,
                loss: wan
                    .loss
                    .for_rtt(hopwise_proto::time::Dur::from_secs_f64(rtt.as_secs_f64())),
            });
        }
        paths.push(path);
    }
    let mut sysctls = vec![
        format!("net.ipv4.tcp_congestion_control={cc}"),
        // Every transfer starts afresh, as in the simulator.
        "net.ipv4.tcp_no_metrics_save=1".to_string(),
    ];
    if regime == Regime::Window {
        sysctls.push(window_rmem());
    }
    (
        WanSpec {
            hosts: names,
            links,
            initcwnd: Some(3),
            sysctls,
            routes: Vec::new(),
        },
        paths,
    )
}

/// The arguments of `hopwise otcp KIND` (`relay` or `forward`) listening
/// on `listen`, with `buffer` bytes per direction of a connection, that
/// stops with the lab even if the lab is killed outright.
pub(crate) fn otcp_args(kind: &str, listen: &str, buffer: u64) -> Vec<String> {
    [
        "otcp",
        kind,
        "--listen",
        listen,
        "--buffer",
        &format!("{buffer}B"),
        "--exit-with-parent",
    ]
    .map(String::from)
    .to_vec()
}

/// The window regime's receive buffers: twice the simulator's window,
/// since the kernel advertises about half of the buffer.
pub(super) fn window_rmem() -> String {
    let w = 2 * WINDOW;
    format!("net.ipv4.tcp_rmem=4096 {w} {w}")
}

/// What the server saw of one connection.
struct Seen {
    bytes: u64,
    /// First byte and end of stream, s on the run's clock (NaN: none).
    first: f64,
    end: f64,
    /// Why reading stopped, if not at the end of the stream.
    error: Option<String>,
}

/// Listens on `SERVER_PORT` in the server's namespace and reads each
/// connection to its end, one at a time, reporting each; ends when `stop`
/// is set.
fn spawn_sink(
    ns: std::fs::File,
    clock: Clock,
    stop: Arc<AtomicBool>,
    tx: mpsc::Sender<Seen>,
) -> Result<JoinHandle<Result<()>>> {
    spawn_ready(
        "otcp sink".into(),
        move || {
            enter(&ns, "otcp sink")?;
            let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, SERVER_PORT))
                .with_context(|| format!("otcp sink: cannot listen on port {SERVER_PORT}"))?;
            l.set_nonblocking(true)?;
            Ok(l)
        },
        move |l| {
            let mut buf = vec![0u8; 256 << 10];
            while !stop.load(Ordering::Relaxed) {
                // Wait for a connection without polling, so that its first
                // byte is stamped when it comes.
                let mut fds = [PollFd::new(l.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, PollTimeout::from(50u16)) {
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(e).context("otcp sink: poll"),
                }
                let mut s = match l.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                    Err(e) => return Err(e).context("otcp sink: accept"),
                };
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_millis(200)))?;
                let (mut n, mut first, mut error) = (0u64, f64::NAN, None);
                let end = loop {
                    match s.read(&mut buf) {
                        Ok(0) => break clock.now_s(),
                        Ok(k) => {
                            if n == 0 {
                                first = clock.now_s();
                            }
                            n += k as u64;
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                        {
                            if stop.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) => {
                            error = Some(e.to_string());
                            break f64::NAN;
                        }
                    }
                };
                let _ = tx.send(Seen {
                    bytes: n,
                    first,
                    end,
                    error,
                });
            }
            Ok(())
        },
    )
}

/// Connects to `to`, writes `size` bytes and half-closes, then waits for
/// the other end to close. Returns the connect time on `clock`.
fn send_one(to: SocketAddr, size: u64, cc: &str, clock: Clock) -> Result<f64> {
    let t0 = clock.now_s();
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(10))
        .with_context(|| format!("connecting to {to}"))?;
    SockRef::from(&s)
        .set_tcp_congestion(cc.as_bytes())
        .with_context(|| format!("congestion control {cc:?}"))?;
    s.set_write_timeout(Some(TRANSFER_LIMIT))?;
    s.set_read_timeout(Some(TRANSFER_LIMIT))?;
    let chunk = vec![0x6fu8; 64 << 10];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n])
            .with_context(|| format!("writing to {to} ({} of {size} B sent)", size - left))?;
        left -= n as u64;
    }
    s.shutdown(Shutdown::Write)?;
    let mut rest = Vec::new();
    s.read_to_end(&mut rest)
        .with_context(|| format!("waiting for {to} to close"))?;
    Ok(t0)
}

/// The transfers to make, in order: (path index, run or None for the warm-up).
pub(super) fn schedule(paths: usize, runs: u32) -> Vec<(usize, Option<u32>)> {
    let mut s: Vec<(usize, Option<u32>)> = (0..paths).map(|p| (p, None)).collect();
    for r in 0..runs {
        // Paths take turns, starting one later each run.
        s.extend((0..paths).map(|i| ((i + r as usize) % paths, Some(r))));
    }
    s
}

/// Runs one regime: builds the wan, starts relays and forwarders, makes
/// the transfers. Returns the transfers and what the delay line did.
pub(super) fn run_regime(
    opts: &Options,
    out: &Path,
    regime: Regime,
    clock: Clock,
    progress: &dyn Progress,
) -> Result<(Vec<Transfer>, Vec<LinkStats>)> {
    let (wspec, paths) = spec(regime, &opts.cc);
    let names = WanNames::new_instance(&wspec);
    // Each regime draws its own losses: the direct link is the same in
    // `loss` and `loss-rtt`, and would otherwise lose the same frames.
    let seed = opts.seed ^ hopwise_proto::rng::fnv1a(regime.name().as_bytes());
    let mut wan = Wan::build(&names, &wspec, seed, clock)?;
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    for (i, h) in wspec.hosts.iter().enumerate() {
        if h.starts_with('p') {
            let mut a = otcp_args("relay", &format!("0.0.0.0:{RELAY_PORT}"), SPLICE as u64);
            a.push("--allow-private".into());
            wan.start(
                i,
                &opts.exe,
                &a,
                &logs.join(format!("{}-{h}.log", regime.name())),
            )?;
        }
    }
    let client = wan.host("client")?;
    let mut targets = Vec::new();
    for (p, path) in paths.iter().enumerate() {
        let last = *path.last().expect("a path has a link");
        let server = SocketAddr::from((link_addr(last, true), SERVER_PORT));
        if path.len() == 1 {
            targets.push(server);
            continue;
        }
        let via: Vec<String> = path[..path.len() - 1]
            .iter()
            .map(|&l| SocketAddr::from((link_addr(l, true), RELAY_PORT)).to_string())
            .collect();
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, FORWARD_PORT + path.len() as u16));
        let mut a = otcp_args("forward", &listen.to_string(), SPLICE as u64);
        a.extend([
            "--via".into(),
            via.join(","),
            "--to".into(),
            server.to_string(),
        ]);
        wan.start(
            client,
            &opts.exe,
            &a,
            &logs.join(format!("{}-forward-{}hop.log", regime.name(), p + 1)),
        )?;
        targets.push(listen);
    }
    wan.wait_for_logs("listening on", Duration::from_secs(10), clock)
        .context("starting the relays and forwarders")?;
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let server = wan.host("server")?;
    let sink = spawn_sink(wan.hosts[server].open()?, clock, stop.clone(), tx)?;
    // Ends the sink however this function returns.
    let stop_sink = StopOnDrop(stop);
    let plan = schedule(paths.len(), opts.runs_for(regime));
    progress.start(
        &format!("{} (real time, transfers)", regime.name()),
        plan.len() as u64,
    );
    let (ctx, crx) = mpsc::channel::<Result<f64>>();
    let (size, cc) = (opts.size, opts.cc.clone());
    let client_ns = wan.hosts[client].open()?;
    let todo: Vec<(SocketAddr, u64)> = plan
        .iter()
        .map(|&(p, r)| (targets[p], if r.is_some() { size } else { WARMUP_BYTES }))
        .collect();
    let sender = std::thread::Builder::new()
        .name("otcp client".into())
        .spawn(move || {
            if let Err(e) = enter(&client_ns, "otcp client") {
                let _ = ctx.send(Err(e));
                return;
            }
            for (to, n) in todo {
                let r = send_one(to, n, &cc, clock);
                let failed = r.is_err();
                if ctx.send(r).is_err() || failed {
                    return;
                }
            }
        })?;
    let mut out = Vec::new();
    let mut failure = None;
    for &(p, run) in &plan {
        let hops = paths[p].len();
        let what = format!("{} regime, {hops}-hop path", regime.name());
        // Wait for the client, checking the relays, the forwarders and the
        // delay line meanwhile: a transfer they no longer carry would
        // otherwise wait for its 300 s timeout.
        let reply = loop {
            match crx.recv_timeout(Duration::from_millis(500)) {
                Ok(r) => break Ok(r),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = wan.check_daemons() {
                        break Err(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(anyhow::anyhow!("{what}: the client thread ended"))
                }
            }
        };
        let t0 = match reply {
            Ok(Ok(t0)) => t0,
            Ok(Err(e)) | Err(e) => {
                failure = Some(e.context(what));
                break;
            }
        };
        let seen = rx.recv_timeout(Duration::from_secs(10));
        if let Err(e) = wan.check_daemons() {
            failure = Some(e.context(what));
            break;
        }
        let Ok(Seen {
            bytes: n,
            first,
            end,
            error,
        }) = seen
        else {
            failure = Some(anyhow::anyhow!("{what}: the server saw no connection end"));
            break;
        };
        let want = if run.is_some() { size } else { WARMUP_BYTES };
        if let Some(e) = error {
            failure = Some(anyhow::anyhow!(
                "{what}: the server's read failed after {n} of {want} B: {e}"
            ));
            break;
        }
        if n != want {
            failure = Some(anyhow::anyhow!(
                "{what}: the server received {n} of {want} B"
            ));
            break;
        }
        progress.inc();
        if let Some(run) = run {
            let secs = end - t0;
            out.push(Transfer {
                regime,
                hops,
                run,
                secs,
                goodput_bps: size as f64 * 8.0 / secs,
                first_byte_s: first - t0,
            });
        }
    }
    progress.finish();
    drop(stop_sink);
    // The client stops at its next transfer once nobody listens.
    drop(crx);
    let _ = sender.join();
    match sink.join() {
        Ok(Err(e)) if failure.is_some() => {
            failure = failure.map(|f| f.context(format!("the server: {e:#}")))
        }
        Ok(Err(e)) => failure = Some(e),
        Err(_) => failure = failure.or(Some(anyhow::anyhow!("the server's thread panicked"))),
        Ok(Ok(())) => {}
    }
    let links = wan.finish()?;
    if let Some(e) = failure {
        return Err(e.context(format!("(logs in {})", logs.display())));
    }
    Ok((out, links))
}
