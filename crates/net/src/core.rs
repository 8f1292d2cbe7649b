//! The node task: one UDP socket, one sans-IO [`Host`], and channels to the
//! tasks that own TCP connections. Nothing here decides anything about the
//! protocol: datagrams go into the host, what it wants sent goes out (through
//! the link emulator when configured), its events start or feed stream tasks.

use crate::accept::Gate;
use crate::clock::Clock;
use crate::config::{Directory, ExitOptions};
use crate::emu::{EmuStats, Emulator};
use crate::path::{self, GuardState, Route};
use crate::refusals::{Reason, Refusals, PROXY_REASONS, RELAY_REASONS};
use crate::stream;
use crate::udp::BatchSocket;
use hopwise_proto::backtap::{CircuitId, Direction, EndpointStats, HopStats};
use hopwise_proto::circuit::cell::EndReason;
use hopwise_proto::circuit::{
    DestroyReason, NodeEvent, NodeStats, Read, Role, StreamError, StreamKey,
};
use hopwise_proto::link::LinkStats;
use hopwise_proto::overlay::Host;
use hopwise_proto::time::{Dur, Time};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

/// Bytes a stream may have in flight from the node task to its TCP writer.
const MAX_IN_CHANNEL: usize = 256 * 1024;
/// Credit is granted to a TCP reader in steps of at least this.
const MIN_GRANT: usize = 16 * 1024;
/// Datagrams (or commands) handled per wake-up before timers run and output
/// is flushed.
const BATCH: usize = 256;

/// To the stream tasks.
#[derive(Debug)]
pub(crate) enum Down {
    Data(Vec<u8>),
    /// The task may read this many more bytes from TCP.
    Credit(usize),
    /// The peer finished: shut down the TCP write side after the data.
    Eof,
    /// The stream was reset: reset the TCP connection.
    Reset,
}

pub(crate) type OpenResult = Result<(StreamKey, mpsc::UnboundedReceiver<Down>), EndReason>;

/// From stream tasks, SOCKS tasks, the metrics server and handles.
pub(crate) enum Cmd {
    Data(StreamKey, Vec<u8>),
    Eof(StreamKey),
    Reset(StreamKey),
    Consumed(StreamKey, usize),
    Gone(StreamKey),
    ExitConnected(StreamKey, Result<(), EndReason>),
    Open {
        host: String,
        port: u16,
        reply: oneshot::Sender<OpenResult>,
    },
    Snapshot(oneshot::Sender<Snapshot>),
    /// A relay's reloaded exit options and bandwidth; answered once they
    /// apply.
    Reload(crate::reload::Apply, oneshot::Sender<()>),
}

struct Io {
    tx: mpsc::UnboundedSender<Down>,
    granted: usize,
    in_channel: usize,
    read_blocked: bool,
    backlog: Vec<u8>,
    pending_open: Option<(oneshot::Sender<OpenResult>, mpsc::UnboundedReceiver<Down>)>,
    /// An exit's connect task, while it resolves and connects: aborted if
    /// the stream goes away first (an END, a reset, the circuit closing).
    connecting: Option<tokio::task::AbortHandle>,
}

impl Drop for Io {
    fn drop(&mut self) {
        if let Some(t) = self.connecting.take() {
            t.abort();
        }
    }
}

/// Exit connects (name resolution and TCP connect) running at once, over
/// all circuits; a BEGIN beyond it is refused with `resource limit`. Each
/// lasts up to twice `[exit] connect_timeout` (resolution, then the
/// connects together).
pub(crate) const MAX_EXIT_CONNECTS: usize = 256;
/// Exit connects one circuit may run at once: one circuit cannot hold all
/// of [`MAX_EXIT_CONNECTS`] (a client with several circuits still can; the
/// exit cannot tell clients apart).
pub(crate) const MAX_CONNECTS_PER_CIRCUIT: usize = 32;

/// The permits an exit connect holds until it ends: one of the node's and
/// one of its circuit's.
pub(crate) type ConnectPermits = [tokio::sync::OwnedSemaphorePermit; 2];

/// How many exit connects may run at once, over all circuits and per
/// circuit.
pub(crate) struct ConnectLimits {
    all: Arc<Semaphore>,
    all_max: usize,
    per_circuit: HashMap<CircuitId, Arc<Semaphore>>,
    circuit_max: usize,
}

impl ConnectLimits {
    pub(crate) fn new(all: usize, circuit_max: usize) -> ConnectLimits {
        ConnectLimits {
            all: Arc::new(Semaphore::new(all)),
            all_max: all,
            per_circuit: HashMap::new(),
            circuit_max,
        }
    }

    /// Permits for one more connect on circuit `c`, or `None` if the node
    /// or the circuit runs as many as it may.
    pub(crate) fn try_acquire(&mut self, c: CircuitId) -> Option<ConnectPermits> {
        let max = self.circuit_max;
        if self.per_circuit.len() > 2 * self.all_max {
            // Forget circuits with nothing running: at most `all_max` have.
            self.per_circuit.retain(|_, s| s.available_permits() < max);
        }
        let sem = self
            .per_circuit
            .entry(c)
            .or_insert_with(|| Arc::new(Semaphore::new(max)))
            .clone();
        let mine = sem.try_acquire_owned().ok()?;
        let all = self.all.clone().try_acquire_owned().ok()?;
        Some([all, mine])
    }
}

impl Io {
    fn new(tx: mpsc::UnboundedSender<Down>) -> Io {
        Io {
            tx,
            granted: 0,
            in_channel: 0,
            read_blocked: false,
            backlog: Vec::new(),
            pending_open: None,
            connecting: None,
        }
    }
}

/// The proxy's circuit management: one circuit in use at a time, rebuilt
/// with backoff when it closes; SOCKS requests wait for it. With random
/// paths, a request its exit refuses goes on a spare circuit whose exit
/// accepts it, or on a new circuit for it (`path::route`).
pub(crate) struct ClientState {
    pub directory: Directory,
    pub path: Option<Vec<String>>,
    pub connect_timeout: Dur,
    pub circuit: Option<CircuitId>,
    pub ready: bool,
    pub waiting: VecDeque<(String, u16, oneshot::Sender<OpenResult>, Time)>,
    pub rebuild_at: Option<Time>,
    pub backoff: Dur,
    pub rng: u64,
    pub built: u64,
    /// The relays of the circuit being built or in use, entry first.
    pub circuit_path: String,
    /// Random paths: the guard, kept across restarts.
    pub guard: GuardState,
    /// Random paths: no two relays in one /16 or /32.
    pub subnet_rule: bool,
    /// The exit (a directory index) of the circuit in use, if its path was
    /// random; `None` for a configured path (every stream goes on it).
    pub exit: Option<usize>,
    /// Earlier circuits (and their exits) that still carry streams: used
    /// for a destination their exit accepts, closed with their last stream.
    pub spares: Vec<(CircuitId, usize)>,
}

/// Everything a relay or proxy reports (tests, metrics).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub name: String,
    pub uptime: Dur,
    pub links: LinkStats,
    pub links_up: usize,
    pub clients: usize,
    pub node: NodeStats,
    pub transport: EndpointStats,
    pub emulation: EmuStats,
    pub circuits: Vec<CircuitSnapshot>,
    /// Cells all circuits hold (what `[limits] max_queued_cells` caps).
    pub held_cells: usize,
    pub streams: usize,
    /// Bytes all streams buffer (what `[limits] max_stream_buffers` caps).
    pub stream_bytes: usize,
    pub send_errors: u64,
    /// Datagrams the kernel dropped at this socket (from /proc/net/udp).
    pub socket_drops: Option<u64>,
    pub rcvbuf: usize,
    pub sndbuf: usize,
    /// Proxy: the circuit in use.
    pub client_circuit: Option<u32>,
    pub client_ready: bool,
    pub circuits_built: u64,
    /// Proxy: SOCKS connections served now, and those closed at once
    /// because `socks_max_connections` were.
    pub socks_open: Option<usize>,
    pub socks_refused: u64,
    /// Streams refused, by reason (`hopwise_streams_refused_total`): a
    /// relay's reasons or a proxy's.
    pub refused: Vec<(&'static str, u64)>,
    /// Time until the node's next timer (diagnostics).
    pub next_timer: Option<Dur>,
    /// The token bucket in force (`[bandwidth]`, reloadable).
    pub bandwidth: Option<hopwise_proto::backtap::BucketConfig>,
}

/// One circuit at this node.
#[derive(Clone, Debug)]
pub struct CircuitSnapshot {
    pub id: u32,
    pub role: Role,
    pub forward: HopStats,
    pub backward: HopStats,
}

pub(crate) struct Core {
    pub name: String,
    pub host: Host,
    pub sock: BatchSocket,
    pub clock: Clock,
    pub emu: Emulator,
    pub cmd_tx: mpsc::UnboundedSender<Cmd>,
    pub cmd_rx: mpsc::UnboundedReceiver<Cmd>,
    pub exit: Option<ExitOptions>,
    pub client: Option<ClientState>,
    pub rcvbuf: usize,
    pub sndbuf: usize,
    /// The proxy's SOCKS listener (for the snapshot).
    pub socks_gate: Option<Arc<Gate>>,
    streams: HashMap<StreamKey, Io>,
    exit_connects: ConnectLimits,
    refusals: Refusals,
    /// This node is shutting down: its circuits close because it does.
    stopping: bool,
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        host: Host,
        sock: BatchSocket,
        clock: Clock,
        emu: Emulator,
        cmd: (mpsc::UnboundedSender<Cmd>, mpsc::UnboundedReceiver<Cmd>),
        exit: Option<ExitOptions>,
        client: Option<ClientState>,
    ) -> Core {
        Core {
            name,
            host,
            sock,
            clock,
            emu,
            cmd_tx: cmd.0,
            cmd_rx: cmd.1,
            exit,
            client,
            rcvbuf: 0,
            socks_gate: None,
            sndbuf: 0,
            streams: HashMap::new(),
            exit_connects: ConnectLimits::new(MAX_EXIT_CONNECTS, MAX_CONNECTS_PER_CIRCUIT),
            refusals: Refusals::default(),
            stopping: false,
        }
    }

    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        if self.client.is_some() {
            let now = self.clock.now();
            self.build(now);
        }
        loop {
            self.flush().await;
            let deadline = self.next_deadline();
            let sleep =
                tokio::time::sleep_until(deadline.map(|t| self.clock.deadline(t)).unwrap_or_else(
                    || self.clock.deadline(self.clock.now() + Dur::from_secs(3600)),
                ));
            tokio::select! {
                biased;
                _ = shutdown.changed() => break,
                _ = self.sock.readable() => {
                    // A whole batch (recvmmsg, GRO) goes into the host
                    // before the timers and the sends.
                    let now = self.clock.now();
                    let host = &mut self.host;
                    self.sock.recv_batch(BATCH, |from, d| host.handle_datagram(now, from, d));
                    self.catch_up(now, deadline);
                }
                Some(cmd) = self.cmd_rx.recv() => {
                    let now = self.clock.now();
                    self.on_cmd(now, cmd);
                    self.catch_up(now, deadline);
                }
                _ = sleep => {
                    let now = self.clock.now();
                    self.on_timers(now);
                }
            }
        }
        // Graceful shutdown: tear every circuit down (DESTROY to the
        // neighbours, best effort), close the links and reset the streams.
        tracing::info!(node = %self.name, "shutting down");
        self.stopping = true;
        let now = self.clock.now();
        self.host
            .node_mut()
            .destroy_all(now, DestroyReason::Shutdown);
        self.emu = Emulator::new(Vec::new());
        self.flush().await;
        // Then CLOSE on every link, after the DESTROYs: the neighbours take
        // their links down at once, so circuits built through this node
        // from now on fail fast.
        let now = self.clock.now();
        self.host.close_links(now);
        self.flush().await;
        for (_, io) in self.streams.drain() {
            let _ = io.tx.send(Down::Reset);
        }
    }

    /// After a batch of datagrams or commands: handles up to a batch of the
    /// streams' commands that are waiting, and the timers if they are due.
    /// A socket that is always readable (a flood, or just a heavy load), or
    /// a steady stream of commands, must not starve the branches the biased
    /// select would otherwise never reach.
    fn catch_up(&mut self, now: Time, deadline: Option<Time>) {
        for _ in 1..BATCH {
            match self.cmd_rx.try_recv() {
                Ok(cmd) => self.on_cmd(now, cmd),
                Err(_) => break,
            }
        }
        if deadline.is_some_and(|d| d <= now) {
            self.on_timers(now);
        }
        self.refusals
            .log_node_stats(now, &self.name, self.host.node().stats());
    }

    fn on_timers(&mut self, now: Time) {
        self.host.handle_timeout(now);
        self.client_timers(now);
    }

    fn next_deadline(&self) -> Option<Time> {
        let mut d = [self.host.poll_timeout(), self.emu.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        if let Some(c) = &self.client {
            for t in c
                .rebuild_at
                .into_iter()
                .chain(c.waiting.front().map(|w| w.3))
            {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        }
        d
    }

    /// Sends everything due and handles every event, until both are empty.
    /// Datagrams are queued and sent together (`udp`), at the end or when
    /// the queue fills.
    async fn flush(&mut self) {
        loop {
            let now = self.clock.now();
            while let Some((to, d)) = self.emu.poll(now) {
                self.sock.queue(to, &d);
                if self.sock.full() {
                    self.sock.send_all().await;
                }
            }
            if self.emu.is_empty() {
                // Sealed straight into the send queue.
                let host = &mut self.host;
                while self
                    .sock
                    .queue_with(|out| host.poll_transmit_into(now, out))
                {
                    if self.sock.full() {
                        self.sock.send_all().await;
                    }
                }
            } else {
                while let Some((to, d)) = self.host.poll_transmit(now) {
                    if let Some(d) = self.emu.push(now, to, d) {
                        self.sock.queue(to, &d);
                        if self.sock.full() {
                            self.sock.send_all().await;
                        }
                    }
                }
            }
            let mut any = false;
            while let Some(ev) = self.host.poll_event() {
                any = true;
                self.on_event(now, ev);
            }
            if !any {
                break;
            }
        }
        self.sock.send_all().await;
    }

    fn on_event(&mut self, now: Time, ev: NodeEvent) {
        match ev {
            NodeEvent::CircuitReady(c) => {
                tracing::info!(node = %self.name, circuit = c.0, "circuit built");
                if let Some(cl) = self.client.as_mut() {
                    if cl.circuit == Some(c) {
                        cl.ready = true;
                        cl.backoff = Dur::from_secs(1);
                        cl.built += 1;
                        let waiting: Vec<_> = cl.waiting.drain(..).collect();
                        let mut rest = std::collections::VecDeque::new();
                        for w in waiting {
                            let cl = self.client.as_ref().expect("a client");
                            if path::exit_accepts(&cl.directory, cl.exit, &w.0, w.1) {
                                self.open(now, w.0, w.1, w.2);
                            } else {
                                rest.push_back(w);
                            }
                        }
                        if !rest.is_empty() {
                            // Requests this exit refuses: a circuit for them.
                            self.client.as_mut().expect("a client").waiting = rest;
                            self.build(now);
                        }
                    }
                }
            }
            NodeEvent::CircuitClosed { circuit, .. } if self.stopping => {
                tracing::info!(node = %self.name, circuit = circuit.0, "circuit closed on shutdown");
            }
            NodeEvent::CircuitClosed { circuit, reason }
                if self
                    .client
                    .as_ref()
                    .is_some_and(|cl| cl.spares.iter().any(|s| s.0 == circuit)) =>
            {
                tracing::info!(node = %self.name, circuit = circuit.0, %reason, "spare circuit closed");
                if let Some(cl) = self.client.as_mut() {
                    cl.spares.retain(|s| s.0 != circuit);
                }
            }
            NodeEvent::CircuitClosed { circuit, reason } => {
                match self
                    .client
                    .as_ref()
                    .filter(|cl| cl.circuit == Some(circuit))
                {
                    // The proxy's own circuit: say which relays, and whether
                    // it was ever built.
                    Some(cl) => tracing::warn!(
                        node = %self.name,
                        circuit = circuit.0,
                        path = %cl.circuit_path,
                        was_built = cl.ready,
                        %reason,
                        "circuit closed"
                    ),
                    None => {
                        tracing::warn!(node = %self.name, circuit = circuit.0, %reason, "circuit closed")
                    }
                }
                if let Some(cl) = self.client.as_mut() {
                    if cl.circuit == Some(circuit) {
                        // A configured path refused for a reason that the
                        // next attempt will meet again: the requests that
                        // wait for it fail now, not after connect_timeout.
                        let hopeless = !cl.ready
                            && cl.path.is_some()
                            && matches!(
                                reason,
                                DestroyReason::NotExit
                                    | DestroyReason::UnknownRelay
                                    | DestroyReason::LinkRefused
                            );
                        if hopeless && !cl.waiting.is_empty() {
                            tracing::warn!(
                                node = %self.name,
                                requests = cl.waiting.len(),
                                "failing the SOCKS requests that wait for a circuit: the configured path cannot be built ({reason}); retrying"
                            );
                            for (_, _, reply, _) in cl.waiting.drain(..) {
                                self.refusals.count(Reason::PathFailed);
                                let _ = reply.send(Err(EndReason::Misc));
                            }
                        }
                        cl.circuit = None;
                        cl.exit = None;
                        cl.ready = false;
                        cl.rebuild_at = Some(now + cl.backoff);
                        cl.backoff = (cl.backoff + cl.backoff).min(Dur::from_secs(30));
                    }
                }
            }
            NodeEvent::StreamBegin { stream, host, port } => {
                let Some(x) = self.exit.clone() else {
                    self.refusals.refuse(
                        now,
                        &self.name,
                        Reason::ExitPolicy,
                        &format_args!("this relay is not an exit (stream {stream})"),
                    );
                    let _ = self
                        .host
                        .node_mut()
                        .stream_refuse(now, stream, EndReason::ExitPolicy);
                    return;
                };
                let Some(permit) = self.exit_connects.try_acquire(stream.circuit) else {
                    self.refusals.refuse(
                        now,
                        &self.name,
                        Reason::ConnectLimit,
                        &format_args!("too many exit connects at once (stream {stream})"),
                    );
                    let _ =
                        self.host
                            .node_mut()
                            .stream_refuse(now, stream, EndReason::ResourceLimit);
                    return;
                };
                tracing::debug!(node = %self.name, %stream, %host, port, "stream begin");
                let (tx, rx) = mpsc::unbounded_channel();
                let task = tokio::spawn(stream::exit_connect(
                    host,
                    port,
                    x,
                    stream,
                    self.cmd_tx.clone(),
                    rx,
                    permit,
                ));
                let mut io = Io::new(tx);
                io.connecting = Some(task.abort_handle());
                self.streams.insert(stream, io);
            }
            NodeEvent::StreamConnected(k) => {
                let Some(io) = self.streams.get_mut(&k) else {
                    return;
                };
                if let Some((reply, rx)) = io.pending_open.take() {
                    if reply.send(Ok((k, rx))).is_err() {
                        // The SOCKS client gave up meanwhile.
                        self.streams.remove(&k);
                        let _ = self
                            .host
                            .node_mut()
                            .stream_reset(now, k, EndReason::ConnReset);
                        return;
                    }
                }
                self.top_up(now, k);
            }
            NodeEvent::StreamReadable(k) => self.pump_read(now, k),
            NodeEvent::StreamWritable(k) => self.top_up(now, k),
            NodeEvent::StreamReset { stream, reason } => {
                tracing::debug!(node = %self.name, %stream, %reason, "stream reset");
                if let Some(mut io) = self.streams.remove(&stream) {
                    match io.pending_open.take() {
                        Some((reply, _)) => {
                            if reason != EndReason::Destroy {
                                self.refusals.refuse(
                                    now,
                                    &self.name,
                                    Reason::ExitRefused,
                                    &format_args!("the exit ended the stream {stream}: {reason}"),
                                );
                            }
                            let _ = reply.send(Err(reason));
                        }
                        None => {
                            let _ = io.tx.send(Down::Reset);
                        }
                    }
                }
                self.close_idle_spares(now);
            }
        }
    }

    fn top_up(&mut self, now: Time, k: StreamKey) {
        let node = self.host.node_mut();
        let Some(io) = self.streams.get_mut(&k) else {
            return;
        };
        if io.pending_open.is_some() {
            return;
        }
        if !io.backlog.is_empty() {
            match node.stream_write(now, k, &io.backlog) {
                Ok(n) => {
                    io.backlog.drain(..n);
                }
                Err(_) => io.backlog.clear(),
            }
            if !io.backlog.is_empty() {
                return;
            }
        }
        let space = node.stream_send_space(k);
        if space > io.granted {
            let g = space - io.granted;
            if g >= MIN_GRANT || io.granted == 0 {
                io.granted += g;
                let _ = io.tx.send(Down::Credit(g));
            }
        }
    }

    fn pump_read(&mut self, now: Time, k: StreamKey) {
        let node = self.host.node_mut();
        let Some(io) = self.streams.get_mut(&k) else {
            return;
        };
        if io.pending_open.is_some() {
            return;
        }
        loop {
            if io.in_channel >= MAX_IN_CHANNEL {
                io.read_blocked = true;
                return;
            }
            io.read_blocked = false;
            let avail = node.stream_readable_bytes(k);
            let n = avail.min(65_536).min(MAX_IN_CHANNEL - io.in_channel).max(1);
            let mut v = vec![0u8; n];
            match node.stream_read(now, k, &mut v) {
                Ok(Read::Data(m)) => {
                    v.truncate(m);
                    io.in_channel += m;
                    let _ = io.tx.send(Down::Data(v));
                }
                Ok(Read::Eof) => {
                    let _ = io.tx.send(Down::Eof);
                    return;
                }
                _ => return,
            }
        }
    }

    fn on_cmd(&mut self, now: Time, cmd: Cmd) {
        if matches!(cmd, Cmd::Gone(_) | Cmd::Reset(_)) {
            self.close_idle_spares(now);
        }
        match cmd {
            Cmd::Data(k, v) => {
                let node = self.host.node_mut();
                if let Some(io) = self.streams.get_mut(&k) {
                    io.granted = io.granted.saturating_sub(v.len());
                    if !io.backlog.is_empty() {
                        io.backlog.extend_from_slice(&v);
                    } else {
                        match node.stream_write(now, k, &v) {
                            Ok(n) if n < v.len() => io.backlog.extend_from_slice(&v[n..]),
                            _ => {}
                        }
                    }
                    self.top_up(now, k);
                }
            }
            Cmd::Eof(k) => {
                let _ = self.host.node_mut().stream_shutdown(now, k);
            }
            Cmd::Reset(k) => {
                if self.streams.remove(&k).is_some() {
                    let _ = self
                        .host
                        .node_mut()
                        .stream_reset(now, k, EndReason::ConnReset);
                }
            }
            Cmd::Consumed(k, n) => {
                if let Some(io) = self.streams.get_mut(&k) {
                    io.in_channel = io.in_channel.saturating_sub(n);
                    if io.read_blocked {
                        self.pump_read(now, k);
                    }
                }
            }
            Cmd::Gone(k) => {
                if self.streams.remove(&k).is_some() {
                    self.host.node_mut().stream_close(now, k);
                }
            }
            Cmd::ExitConnected(k, r) => {
                let Some(io) = self.streams.get_mut(&k) else {
                    return;
                };
                // The task goes on to carry the stream; it ends when the
                // stream's channel closes.
                io.connecting = None;
                let node = self.host.node_mut();
                match r {
                    Ok(()) => {
                        if node.stream_connected(now, k).is_err() {
                            self.streams.remove(&k);
                        }
                    }
                    Err(reason) => {
                        tracing::debug!(node = %self.name, stream = %k, %reason, "stream refused");
                        self.refusals.refuse(
                            now,
                            &self.name,
                            Reason::of_connect(reason),
                            &format_args!("{reason} (stream {k})"),
                        );
                        let _ = node.stream_refuse(now, k, reason);
                        self.streams.remove(&k);
                    }
                }
            }
            Cmd::Open { host, port, reply } => {
                let Some(cl) = self.client.as_mut() else {
                    let _ = reply.send(Err(EndReason::Internal));
                    return;
                };
                if !cl.ready {
                    let deadline = now + cl.connect_timeout;
                    cl.waiting.push_back((host, port, reply, deadline));
                    return;
                }
                match path::route(&cl.directory, cl.exit, &cl.spares, &host, port) {
                    Route::Current => self.open(now, host, port, reply),
                    Route::Spare(j) => {
                        // The in-use circuit becomes a spare, the spare the
                        // one in use.
                        let (c, e) = cl.spares.swap_remove(j);
                        if let (Some(old), Some(old_exit)) = (cl.circuit, cl.exit) {
                            cl.spares.push((old, old_exit));
                        }
                        cl.circuit = Some(c);
                        cl.exit = Some(e);
                        let exit = &cl.directory.relays[e].name;
                        cl.circuit_path = format!("an earlier circuit to the exit {exit}");
                        self.open(now, host, port, reply);
                        self.close_idle_spares(now);
                    }
                    Route::New => {
                        let deadline = now + cl.connect_timeout;
                        cl.waiting.push_back((host, port, reply, deadline));
                        self.build(now);
                    }
                }
            }
            Cmd::Snapshot(tx) => {
                let _ = tx.send(self.snapshot());
            }
            Cmd::Reload(a, done) => {
                // New streams meet the new options (each connect task took
                // its own copy); circuits and open streams are untouched.
                if self.exit.is_some() {
                    self.exit = a.exit;
                }
                self.host.node_mut().set_bandwidth(a.bandwidth);
                let _ = done.send(());
            }
        }
    }

    fn open(&mut self, now: Time, host: String, port: u16, reply: oneshot::Sender<OpenResult>) {
        let Some(c) = self.client.as_ref().and_then(|c| c.circuit) else {
            let _ = reply.send(Err(EndReason::Destroy));
            return;
        };
        match self.host.node_mut().open_stream(now, c, &host, port) {
            Ok(k) => {
                let (tx, rx) = mpsc::unbounded_channel();
                let mut io = Io::new(tx);
                io.pending_open = Some((reply, rx));
                self.streams.insert(k, io);
            }
            Err(e) => {
                tracing::debug!(node = %self.name, error = %e, "cannot open a stream");
                if e == StreamError::TooManyStreams {
                    self.refusals.refuse(
                        now,
                        &self.name,
                        Reason::StreamLimit,
                        &format_args!("the circuit has [limits] max_streams streams ({e})"),
                    );
                }
                let _ = reply.send(Err(EndReason::ResourceLimit));
            }
        }
    }

    fn client_timers(&mut self, now: Time) {
        let Some(cl) = self.client.as_mut() else {
            return;
        };
        while cl.waiting.front().is_some_and(|w| w.3 <= now) {
            let (_, _, reply, _) = cl.waiting.pop_front().expect("front");
            self.refusals.refuse(
                now,
                &self.name,
                Reason::CircuitTimeout,
                &"no circuit was ready within connect_timeout",
            );
            let _ = reply.send(Err(EndReason::Timeout));
        }
        if cl.rebuild_at.is_some_and(|t| t <= now) {
            cl.rebuild_at = None;
            self.build(now);
        }
    }

    /// Builds the proxy's circuit: the configured path, or a random guard,
    /// middle and exit for the first waiting request (`path::next_path`).
    /// Requests no path can serve are refused. A circuit in use becomes a
    /// spare.
    fn build(&mut self, now: Time) {
        let Some(cl) = self.client.as_mut() else {
            return;
        };
        let idx = loop {
            let dest = cl.waiting.front().map(|w| (w.0.as_str(), w.1));
            let has_dest = dest.is_some();
            let p = path::next_path(
                &cl.directory,
                cl.path.as_deref(),
                &mut cl.guard,
                cl.subnet_rule,
                &mut cl.rng,
                dest,
            );
            match p {
                Ok(p) => break p,
                Err(e) if has_dest => {
                    let (host, port, reply, _) = cl.waiting.pop_front().expect("front");
                    // The destination only at debug level, as for the exit's refusals.
                    tracing::debug!(node = %self.name, %host, port, error = %e, "no path for this destination");
                    self.refusals.refuse(
                        now,
                        &self.name,
                        Reason::NoPath,
                        &"no exit of the directory accepts the destination (it is logged at debug level)",
                    );
                    let _ = reply.send(Err(EndReason::ExitPolicy));
                    if cl.waiting.is_empty() && cl.circuit.is_some() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::error!(node = %self.name, error = %e, "cannot choose a path");
                    cl.rebuild_at = Some(now + cl.backoff);
                    cl.backoff = (cl.backoff + cl.backoff).min(Dur::from_secs(30));
                    return;
                }
            }
        };
        if let Some(old) = cl.circuit.take() {
            match cl.exit.filter(|_| cl.ready) {
                Some(e) => cl.spares.push((old, e)),
                None => self
                    .host
                    .node_mut()
                    .destroy_circuit(now, old, DestroyReason::Requested),
            }
        }
        cl.exit = cl.path.is_none().then(|| idx.last().copied()).flatten();
        cl.ready = false;
        if idx.len() < 3 && cl.path.is_none() {
            tracing::warn!(node = %self.name, relays = idx.len(), "no middle relay fits this path's rules: a shorter path");
        }
        let dir = &cl.directory;
        let keys: Vec<[u8; 32]> = idx.iter().map(|&i| dir.relays[i].key).collect();
        let names: Vec<&str> = idx.iter().map(|&i| dir.relays[i].name.as_str()).collect();
        let names = names.join(" -> ");
        match self.host.node_mut().build_circuit(now, &keys) {
            Ok(c) => {
                tracing::info!(node = %self.name, circuit = c.0, path = %names, "building a circuit");
                cl.circuit_path = names;
                cl.circuit = Some(c);
                cl.ready = false;
            }
            Err(e) => {
                tracing::error!(node = %self.name, path = %names, error = %e, "cannot build a circuit");
                cl.rebuild_at = Some(now + cl.backoff);
                cl.backoff = (cl.backoff + cl.backoff).min(Dur::from_secs(30));
            }
        }
        self.close_idle_spares(now);
    }

    /// Closes the spare circuits that carry no stream any more.
    fn close_idle_spares(&mut self, now: Time) {
        let Some(cl) = self.client.as_mut() else {
            return;
        };
        if cl.spares.is_empty() {
            return;
        }
        let streams = &self.streams;
        let busy = |c: CircuitId| streams.keys().any(|k| k.circuit == c);
        let idle: Vec<CircuitId> = cl
            .spares
            .iter()
            .map(|s| s.0)
            .filter(|&c| !busy(c))
            .collect();
        cl.spares.retain(|s| !idle.contains(&s.0));
        for c in idle {
            self.host
                .node_mut()
                .destroy_circuit(now, c, DestroyReason::Requested);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let node = self.host.node();
        let ep = node.endpoint();
        let circuits = node
            .circuits()
            .map(|(c, role)| CircuitSnapshot {
                id: c.0,
                role,
                forward: ep.circuit_stats(c, Direction::Forward),
                backward: ep.circuit_stats(c, Direction::Backward),
            })
            .collect();
        let port = self.sock.local_addr().map(|a| a.port()).unwrap_or(0);
        Snapshot {
            name: self.name.clone(),
            uptime: self.clock.now().since(Time::ZERO),
            links: *self.host.links().stats(),
            links_up: self.host.links().links_up(),
            clients: self.host.links().client_count(),
            node: *node.stats(),
            transport: *ep.stats(),
            emulation: self.emu.stats,
            circuits,
            held_cells: ep.total_held(),
            streams: node.stream_count(),
            stream_bytes: node.stream_buffered(),
            send_errors: self.sock.send_errors,
            socket_drops: socket_drops(port),
            rcvbuf: self.rcvbuf,
            sndbuf: self.sndbuf,
            client_circuit: self.client.as_ref().and_then(|c| c.circuit.map(|c| c.0)),
            client_ready: self.client.as_ref().is_some_and(|c| c.ready),
            circuits_built: self.client.as_ref().map_or(0, |c| c.built),
            socks_open: self.socks_gate.as_ref().map(|g| g.open()),
            socks_refused: self.socks_gate.as_ref().map_or(0, |g| g.refused()),
            refused: self.refusals.counts(
                if self.client.is_some() {
                    &PROXY_REASONS
                } else {
                    &RELAY_REASONS
                },
                node.stats(),
            ),
            next_timer: self.next_deadline().map(|t| t.since(self.clock.now())),
            bandwidth: ep.bucket(),
        }
    }
}

/// The kernel's drop counter of the UDP socket bound to `port`.
fn socket_drops(port: u16) -> Option<u64> {
    let mut total = None;
    for f in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let Some(local) = cols.get(1) else { continue };
            let Some(p) = local.rsplit(':').next() else {
                continue;
            };
            if u16::from_str_radix(p, 16).ok() == Some(port) {
                if let Some(d) = cols.last().and_then(|d| d.parse::<u64>().ok()) {
                    total = Some(total.unwrap_or(0) + d);
                }
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_connects_are_limited_per_circuit_and_in_all() {
        let mut l = ConnectLimits::new(5, 2);
        let c = CircuitId;
        let a1 = l.try_acquire(c(1)).unwrap();
        let _a2 = l.try_acquire(c(1)).unwrap();
        assert!(l.try_acquire(c(1)).is_none(), "the circuit's 2 are taken");
        let _b = [c(2), c(2), c(3)].map(|x| l.try_acquire(x).unwrap());
        assert!(l.try_acquire(c(4)).is_none(), "the node's 5 are taken");
        drop(a1);
        let again = l.try_acquire(c(1));
        assert!(again.is_some(), "an ended connect frees both permits");
        drop(again);
        // Circuits with nothing running are forgotten.
        let mut l = ConnectLimits::new(2, 1);
        for i in 0..100 {
            assert!(l.try_acquire(c(i)).is_some());
            assert!(l.per_circuit.len() <= 5);
        }
    }

    /// A stream that goes away while its exit connect runs takes the
    /// connect task with it (and so its permit); one whose connect finished
    /// leaves the task to carry the stream.
    #[test]
    fn a_dropped_stream_aborts_its_connect() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let permits = Arc::new(Semaphore::new(1));
            let permit = permits.clone().try_acquire_owned().unwrap();
            let slow = tokio::spawn(async move {
                let _p = permit;
                tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            });
            let (tx, _rx) = mpsc::unbounded_channel();
            let mut io = Io::new(tx);
            io.connecting = Some(slow.abort_handle());
            assert_eq!(permits.available_permits(), 0);
            drop(io);
            assert!(slow.await.unwrap_err().is_cancelled());
            assert_eq!(permits.available_permits(), 1, "the permit came back");

            let carrying = tokio::spawn(async {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            });
            let (tx, _rx) = mpsc::unbounded_channel();
            let mut io = Io::new(tx);
            io.connecting = Some(carrying.abort_handle());
            io.connecting = None;
            drop(io);
            assert!(carrying.await.is_ok(), "not aborted once connected");
        });
    }
}
