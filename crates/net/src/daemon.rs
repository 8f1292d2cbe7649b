//! Starting relays and proxies: sockets are bound in the caller's thread (so
//! "port in use" is an error of `spawn_*`, not a log line), then the node
//! runs on a thread of its own with a single-threaded tokio runtime.

use crate::accept::Gate;
use crate::clock::Clock;
use crate::config::{LinkOptions, LossResponse, ProxyConfig, RelayConfig, Startup, Transport};
use crate::core::{ClientState, Cmd, Core, Snapshot};
use crate::emu::Emulator;
use crate::keys;
use crate::reload::{self, ReloadReport};
use crate::socks::SocksOptions;
use hopwise_proto::backtap;
use hopwise_proto::circuit::{Node, NodeConfig, Observer};
use hopwise_proto::link::{hex, Keypair, LinkConfig, Links};
use hopwise_proto::overlay::Host;
use hopwise_proto::time::Dur;
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::thread::JoinHandle;
use tokio::sync::{mpsc, oneshot, watch};

/// Why a relay or proxy could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartError(pub String);

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for StartError {}

impl From<crate::config::ConfigError> for StartError {
    fn from(e: crate::config::ConfigError) -> Self {
        StartError(e.to_string())
    }
}

fn dur(d: std::time::Duration) -> Dur {
    Dur::from_nanos(d.as_nanos() as u64)
}

struct Udp {
    sock: std::net::UdpSocket,
    /// Batched I/O (`quinn-udp`) set up on `sock`.
    state: quinn_udp::UdpSocketState,
    rcvbuf: usize,
    sndbuf: usize,
}

fn bind_udp(addr: SocketAddr, size: usize, origin: &str, key: &str) -> Result<Udp, StartError> {
    use socket2::{Domain, Protocol, Socket, Type};
    let fail =
        |e: std::io::Error| StartError(format!("{origin}: {key}: cannot bind UDP {addr}: {e}"));
    let s =
        Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP)).map_err(fail)?;
    let _ = s.set_recv_buffer_size(size);
    let _ = s.set_send_buffer_size(size);
    s.bind(&addr.into()).map_err(fail)?;
    s.set_nonblocking(true).map_err(fail)?;
    let rcvbuf = s.recv_buffer_size().unwrap_or(0);
    let sndbuf = s.send_buffer_size().unwrap_or(0);
    if rcvbuf < size {
        tracing::warn!(
            requested = size,
            got = rcvbuf,
            "the kernel capped SO_RCVBUF (net.core.rmem_max): datagrams may be dropped under load"
        );
    }
    let sock: std::net::UdpSocket = s.into();
    let state = crate::udp::prepare(&sock).map_err(fail)?;
    Ok(Udp {
        sock,
        state,
        rcvbuf,
        sndbuf,
    })
}

pub(crate) fn bind_tcp(
    addr: SocketAddr,
    origin: &str,
    key: &str,
) -> Result<std::net::TcpListener, StartError> {
    let l = std::net::TcpListener::bind(addr)
        .map_err(|e| StartError(format!("{origin}: {key}: cannot listen on TCP {addr}: {e}")))?;
    l.set_nonblocking(true)
        .map_err(|e| StartError(format!("{origin}: {key}: {e}")))?;
    Ok(l)
}

fn backtap_config(
    link: &LinkOptions,
    t: &Transport,
    queue: u32,
    bucket: Option<backtap::BucketConfig>,
) -> backtap::Config {
    backtap::Config {
        circuit_limit: queue,
        payload_budget: link.payload_budget - hopwise_proto::link::OVERHEAD,
        pack_delay: dur(t.pack_delay),
        alpha: t.alpha,
        beta: t.beta,
        startup: match t.startup {
            Startup::Linear => backtap::Startup::Linear,
            Startup::SlowStart => backtap::Startup::SlowStart { gamma: 1 },
            Startup::HyStart => backtap::Startup::HyStart,
        },
        loss_response: match t.loss_response {
            LossResponse::None => backtap::LossResponse::None,
            LossResponse::Halve => backtap::LossResponse::Halve,
            LossResponse::DelayQualified => backtap::LossResponse::DelayQualified,
        },
        loss_bound: t.loss_bound,
        max_window: t.max_window,
        bucket,
        sack: t.sack,
        ..backtap::Config::default()
    }
}

fn link_config(kp: Keypair, dir: &crate::config::Directory, o: &LinkOptions) -> LinkConfig {
    let mut c = LinkConfig::new(kp, dir.relays.iter().map(|r| (r.key, r.address)).collect());
    c.encrypt = o.encrypt;
    c.handshake_timeout = dur(o.handshake_timeout);
    c.keepalive = dur(o.keepalive);
    c.idle_timeout = dur(o.idle_timeout);
    c.handshakes_per_second = o.handshakes_per_second;
    c.cookie_secret = hopwise_proto::link::random_secret();
    c.index_seed = {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish() as u32
    };
    c
}

/// A running relay or proxy.
pub struct Handle {
    pub name: String,
    /// The UDP address it is bound to.
    pub addr: SocketAddr,
    /// Its static public key.
    pub public_key: [u8; 32],
    /// The proxy's SOCKS5 address.
    pub socks: Option<SocketAddr>,
    /// The metrics endpoint.
    pub metrics: Option<SocketAddr>,
    /// First, so that dropping a handle stops the node before anything else
    /// of it goes (fields drop in order).
    thread: NodeThread,
    cmd: mpsc::UnboundedSender<Cmd>,
    /// A relay's running configuration (what [`Handle::reload`] compares a
    /// file with); `None` for a proxy.
    relay: Option<std::sync::Mutex<RelayConfig>>,
}

/// A node's thread and its stop signal; stopping sends the signal and waits
/// for the thread, and dropping stops.
pub(crate) struct NodeThread {
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl NodeThread {
    pub(crate) fn new(stop: watch::Sender<bool>, thread: JoinHandle<()>) -> NodeThread {
        NodeThread {
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn stop_and_join(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for NodeThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("name", &self.name)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// The node's counters and circuits (blocks until the node answers).
    pub fn snapshot(&self) -> Option<Snapshot> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Cmd::Snapshot(tx)).ok()?;
        rx.blocking_recv().ok()
    }

    /// [`Handle::snapshot`] from async code.
    pub async fn snapshot_async(&self) -> Option<Snapshot> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Cmd::Snapshot(tx)).ok()?;
        rx.await.ok()
    }

    /// Reloads a relay's configuration from `path` (what `SIGHUP` does): the
    /// exit policy, `[exit] connect_timeout`, `[bandwidth]` and `log_level`
    /// apply at once without touching a circuit or an open stream; other
    /// keys that changed keep their running value until a restart, and the
    /// report names them ([`crate::reload`]). Logs the report (info, or
    /// warn when some key was not applied). A file that does not load is
    /// refused with an error log, and the relay keeps its configuration.
    /// Blocks until the node applied it; from async code use
    /// [`Handle::reload_async`].
    pub fn reload(&self, path: &Path) -> Result<ReloadReport, StartError> {
        let (report, rx) = self.reload_start(path)?;
        let applied = match rx {
            Some(rx) => rx.blocking_recv().is_ok(),
            None => true,
        };
        self.reload_finish(report, applied)
    }

    /// [`Handle::reload`] from async code.
    pub async fn reload_async(&self, path: &Path) -> Result<ReloadReport, StartError> {
        let (report, rx) = self.reload_start(path)?;
        let applied = match rx {
            Some(rx) => rx.await.is_ok(),
            None => true,
        };
        self.reload_finish(report, applied)
    }

    /// Loads and compares the file, and sends the node what changed.
    fn reload_start(
        &self,
        path: &Path,
    ) -> Result<(ReloadReport, Option<oneshot::Receiver<()>>), StartError> {
        let refused = |e: String| {
            tracing::error!(
                node = %self.name,
                "configuration reload refused, the relay keeps running its configuration: {e}"
            );
            StartError(e)
        };
        let Some(running) = &self.relay else {
            return Err(refused(format!(
                "{}: only a relay reloads its configuration",
                path.display()
            )));
        };
        let new = RelayConfig::load(path).map_err(|e| refused(e.to_string()))?;
        let mut running = running.lock().unwrap_or_else(|e| e.into_inner());
        let report = reload::diff(&running, &new);
        let merged = reload::merged(&running, &new);
        let mut rx = None;
        if merged.exit != running.exit || merged.bandwidth != running.bandwidth {
            let (tx, r) = oneshot::channel();
            let apply = reload::Apply {
                exit: merged.exit.enabled.then(|| merged.exit.clone()),
                bandwidth: merged.bandwidth,
            };
            self.cmd
                .send(Cmd::Reload(apply, tx))
                .map_err(|_| refused("the relay has stopped".into()))?;
            rx = Some(r);
        }
        let mut merged = merged;
        let mut report = report;
        if merged.log_level != running.log_level {
            if let Err(e) = reload::apply_log_level(merged.log_level.as_deref()) {
                report.not_applied.push(format!("log_level: {e}"));
                // Not in force: the next reload tries again.
                merged.log_level = running.log_level.clone();
            }
        }
        *running = merged;
        Ok((report, rx))
    }

    fn reload_finish(
        &self,
        mut report: ReloadReport,
        applied: bool,
    ) -> Result<ReloadReport, StartError> {
        if !applied {
            let e = format!("{}: the relay has stopped", report.file);
            tracing::error!(node = %self.name, "configuration reload failed: {e}");
            return Err(StartError(e));
        }
        report.not_applied.sort();
        if report.needs_restart.is_empty() && report.not_applied.is_empty() {
            tracing::info!(node = %self.name, "configuration reloaded: {report}");
        } else {
            tracing::warn!(node = %self.name, "configuration reloaded: {report}");
        }
        Ok(report)
    }

    /// Tears the circuits down, stops the node and waits for its thread.
    pub fn shutdown(mut self) {
        self.thread.stop_and_join();
    }
}

struct Parts {
    name: String,
    udp: Udp,
    host: Host,
    emu: Emulator,
    exit: Option<crate::config::ExitOptions>,
    client: Option<ClientState>,
    socks: Option<(std::net::TcpListener, SocksOptions)>,
    metrics: Option<std::net::TcpListener>,
    public_key: [u8; 32],
}

fn start(p: Parts) -> Result<Handle, StartError> {
    let addr = p
        .udp
        .sock
        .local_addr()
        .map_err(|e| StartError(e.to_string()))?;
    let socks_addr = p.socks.as_ref().and_then(|(l, ..)| l.local_addr().ok());
    let metrics_addr = p.metrics.as_ref().and_then(|l| l.local_addr().ok());
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let name = p.name.clone();
    let tx = cmd_tx.clone();
    let thread = std::thread::Builder::new()
        .name(format!("hopwise-{name}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            rt.block_on(async move {
                let sock =
                    tokio::net::UdpSocket::from_std(p.udp.sock).expect("registered UDP socket");
                let sock = crate::udp::BatchSocket::new(sock, p.udp.state);
                let mut socks_gate = None;
                if let Some((l, o)) = p.socks {
                    let l = tokio::net::TcpListener::from_std(l).expect("registered listener");
                    let gate = Gate::new(o.max_connections);
                    socks_gate = Some(gate.clone());
                    tokio::spawn(crate::socks::serve(l, tx.clone(), o, gate));
                }
                if let Some(l) = p.metrics {
                    let l = tokio::net::TcpListener::from_std(l).expect("registered listener");
                    tokio::spawn(crate::metrics::serve(l, tx.clone()));
                }
                let mut core = Core::new(
                    p.name,
                    p.host,
                    sock,
                    Clock::new(),
                    p.emu,
                    (tx, cmd_rx),
                    p.exit,
                    p.client,
                );
                core.rcvbuf = p.udp.rcvbuf;
                core.socks_gate = socks_gate;
                core.sndbuf = p.udp.sndbuf;
                core.run(stop_rx).await;
            });
        })
        .map_err(|e| StartError(format!("cannot start a thread: {e}")))?;
    Ok(Handle {
        name,
        addr,
        public_key: p.public_key,
        socks: socks_addr,
        metrics: metrics_addr,
        cmd: cmd_tx,
        thread: NodeThread::new(stop_tx, thread),
        relay: None,
    })
}

fn observed(mut node: Node, observer: Option<Observer>) -> Node {
    if let Some(o) = observer {
        node.set_observer(o);
    }
    node
}

/// Starts a relay: loads (or creates) its key, binds its sockets, runs it.
pub fn spawn_relay(cfg: RelayConfig) -> Result<Handle, StartError> {
    spawn_relay_observed(cfg, None)
}

/// [`spawn_relay`], with `observer` shown every frame and relay cell the
/// relay's circuit layer handles ([`Node::set_observer`]): for audits and
/// tests of what a relay can see.
pub fn spawn_relay_observed(
    cfg: RelayConfig,
    observer: Option<Observer>,
) -> Result<Handle, StartError> {
    let kp = keys::load_or_create(&cfg.key_file)?;
    let origin = cfg.origin.clone();
    for w in cfg.start_warnings(&kp.public) {
        tracing::warn!("{w}");
    }
    let udp = bind_udp(cfg.listen, cfg.link.socket_buffer, &origin, "listen")?;
    let metrics = match cfg.metrics {
        Some(a) => Some(bind_tcp(a, &origin, "metrics.listen")?),
        None => None,
    };
    let mut lc = link_config(kp.clone(), &cfg.directory, &cfg.link);
    lc.accept_clients = cfg.accept_clients;
    lc.max_clients = cfg.limits.max_clients;
    let mut nc = NodeConfig::new(
        kp.public,
        kp.private,
        cfg.directory.relays.iter().map(|r| r.key).collect(),
    );
    nc.backtap = backtap_config(
        &cfg.link,
        &cfg.transport,
        cfg.limits.circuit_queue,
        cfg.bandwidth,
    );
    nc.exit = cfg.exit.enabled;
    nc.max_circuits = cfg.limits.max_circuits;
    nc.max_circuits_per_client = cfg.limits.max_circuits_per_client;
    nc.max_stream_bytes = cfg.limits.max_stream_buffers;
    nc.max_streams = cfg.limits.max_streams;
    nc.stream_window = cfg.limits.stream_window;
    nc.max_queued_cells = cfg.limits.max_queued_cells;
    tracing::info!(
        relay = %cfg.name,
        listen = %cfg.listen,
        public = %hex(&kp.public),
        exit = cfg.exit.enabled,
        encrypt = cfg.link.encrypt,
        "relay starting"
    );
    let mut h = start(Parts {
        name: cfg.name.clone(),
        udp,
        host: Host::new(
            Links::new(lc),
            observed(Node::new(nc, Box::new(keys::OsKeys)), observer),
        ),
        emu: Emulator::new(cfg.emulation.clone()),
        exit: cfg.exit.enabled.then(|| cfg.exit.clone()),
        client: None,
        socks: None,
        metrics,
        public_key: kp.public,
    })?;
    h.relay = Some(std::sync::Mutex::new(cfg));
    Ok(h)
}

/// Starts a proxy: a SOCKS5 listener and a client node that builds a circuit.
pub fn spawn_proxy(cfg: ProxyConfig) -> Result<Handle, StartError> {
    spawn_proxy_observed(cfg, None)
}

/// [`spawn_proxy`] with an observer, as [`spawn_relay_observed`].
pub fn spawn_proxy_observed(
    cfg: ProxyConfig,
    observer: Option<Observer>,
) -> Result<Handle, StartError> {
    cfg.check()?;
    let origin = cfg.origin.clone();
    let kp = match &cfg.key_file {
        Some(p) => keys::load_or_create(p)?,
        None => Keypair::generate(),
    };
    if cfg.directory.relays.iter().any(|r| r.key == kp.public) {
        return Err(StartError(format!(
            "{origin}: key_file: the proxy's key is a relay's key"
        )));
    }
    let udp = bind_udp(cfg.listen, cfg.link.socket_buffer, &origin, "listen")?;
    let socks = bind_tcp(cfg.socks, &origin, "socks")?;
    let metrics = match cfg.metrics {
        Some(a) => Some(bind_tcp(a, &origin, "metrics.listen")?),
        None => None,
    };
    let mut lc = link_config(kp.clone(), &cfg.directory, &cfg.link);
    lc.accept_clients = false;
    let mut nc = NodeConfig::new(
        kp.public,
        kp.private,
        cfg.directory.relays.iter().map(|r| r.key).collect(),
    );
    nc.backtap = backtap_config(&cfg.link, &cfg.transport, cfg.limits.circuit_queue, None);
    nc.max_streams = cfg.limits.max_streams;
    nc.stream_window = cfg.limits.stream_window;
    nc.max_queued_cells = cfg.limits.max_queued_cells;
    nc.max_stream_bytes = cfg.limits.max_stream_buffers;
    let seed = {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
            | 1
    };
    // Random paths keep their guard in the state file.
    let guard = match &cfg.path {
        Some(_) => crate::path::GuardState::default(),
        None => {
            let file = cfg
                .state_file
                .clone()
                .or_else(|| crate::path::default_state_file(cfg.key_file.as_deref()));
            if file.is_none() {
                tracing::info!(
                    "{origin}: no key_file or state_file: the guard is chosen anew at every start"
                );
            }
            crate::path::GuardState::load(file).map_err(StartError)?
        }
    };
    let client = ClientState {
        directory: cfg.directory.clone(),
        path: cfg.path.clone(),
        connect_timeout: dur(cfg.connect_timeout),
        circuit: None,
        ready: false,
        waiting: Default::default(),
        rebuild_at: None,
        backoff: Dur::from_secs(1),
        rng: seed,
        built: 0,
        circuit_path: String::new(),
        guard,
        subnet_rule: cfg.path_subnet_rule,
        exit: None,
        spares: Vec::new(),
    };
    tracing::info!(socks = %cfg.socks, "proxy starting");
    start(Parts {
        name: "proxy".into(),
        udp,
        host: Host::new(
            Links::new(lc),
            observed(Node::new(nc, Box::new(keys::OsKeys)), observer),
        ),
        emu: Emulator::new(cfg.emulation.clone()),
        exit: None,
        client: Some(client),
        socks: Some((
            socks,
            SocksOptions {
                connect_timeout: cfg.connect_timeout,
                handshake_timeout: cfg.socks_handshake_timeout,
                max_connections: cfg.socks_max_connections,
            },
        )),
        metrics,
        public_key: kp.public,
    })
}

/// Whether logs on stderr may use ANSI colours: only when stderr is a
/// terminal, and not when `NO_COLOR` is set (to anything but the empty
/// string, as no-color.org asks).
pub fn stderr_colours() -> bool {
    use std::io::IsTerminal;
    colours(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

/// [`stderr_colours`] given whether stderr is a terminal and `NO_COLOR`.
pub fn colours(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Blocks until SIGINT (Ctrl-C) or SIGTERM.
pub fn wait_for_shutdown_signal() {
    wait_for_shutdown(false)
}

/// [`wait_for_shutdown_signal`], and with `orphaned` also returns once this
/// process's parent is gone (it is then adopted by another process): a
/// daemon that a lab run started stops with it, even when the run is
/// killed outright.
pub fn wait_for_shutdown(orphaned: bool) {
    wait_signals(orphaned, None::<(&str, fn() -> std::future::Ready<()>)>)
}

/// [`wait_for_shutdown`], and on every `SIGHUP` runs `on_hangup` (a relay
/// reloads its configuration, [`Handle::reload_async`]) and keeps waiting.
/// Once the handlers are in place it logs (info) that it runs and what
/// `SIGHUP` does: `hangup_does`, e.g. "reloads the configuration". On other
/// platforms than Unix there is no `SIGHUP`.
pub fn wait_for_shutdown_or_hangup<F, Fut>(orphaned: bool, hangup_does: &str, on_hangup: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    wait_signals(orphaned, Some((hangup_does, on_hangup)))
}

fn wait_signals<F, Fut>(orphaned: bool, on_hangup: Option<(&str, F)>)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
            // Without a handler SIGHUP keeps its default action (the
            // process ends).
            // Without a handler SIGHUP keeps its default action (the
            // process ends).
            let mut hup = match &on_hangup {
                Some((does, _)) => {
                    let s = signal(SignalKind::hangup()).expect("SIGHUP handler");
                    tracing::info!("running: SIGTERM or Ctrl-C stops, SIGHUP {does}");
                    Some(s)
                }
                None => None,
            };
            let mut on_hangup = on_hangup.map(|(_, f)| f);
            let parent = std::os::unix::process::parent_id();
            let adopted = async {
                if !orphaned {
                    return std::future::pending::<()>().await;
                }
                let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
                while std::os::unix::process::parent_id() == parent {
                    tick.tick().await;
                }
                tracing::info!(parent, "the parent process is gone");
            };
            tokio::pin!(adopted);
            // One future for the whole loop, so that a Ctrl-C during a
            // reload is not lost.
            let ctrl_c = tokio::signal::ctrl_c();
            tokio::pin!(ctrl_c);
            loop {
                tokio::select! {
                    _ = &mut ctrl_c => break,
                    _ = term.recv() => break,
                    _ = &mut adopted => break,
                    Some(()) = async {
                        match hup.as_mut() {
                            Some(s) => s.recv().await,
                            None => std::future::pending().await,
                        }
                    } => {
                        if let Some(f) = on_hangup.as_mut() {
                            f().await;
                        }
                    }
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = on_hangup;
            let _ = tokio::signal::ctrl_c().await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(colours(true, None));
        assert!(colours(true, Some(OsStr::new(""))));
        assert!(!colours(true, Some(OsStr::new("1"))));
        assert!(!colours(false, None));
        assert!(!colours(false, Some(OsStr::new(""))));
    }
}
