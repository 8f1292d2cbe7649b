//! The stream edges of a circuit (`docs/relay.md`, "Streams"): the
//! client's and the exit's streams, their byte-credit flow control, the
//! cells an edge packages into BackTap and takes out of it (sealed and
//! opened with the circuit's onion layers), and the stream calls of the
//! application.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StreamState {
    /// Client: BEGIN sent, waiting for CONNECTED.
    Connecting,
    /// Exit: waiting for the application to connect.
    Resolving,
    Open,
}

pub(super) struct Stream {
    pub(super) state: StreamState,
    pub(super) send_buf: VecDeque<u8>,
    /// Bytes the peer lets us send.
    pub(super) credit: u64,
    /// The peer's window: `credit` never exceeds it.
    pub(super) peer_window: u64,
    pub(super) fin_requested: bool,
    pub(super) fin_sent: bool,
    pub(super) in_rr: bool,
    pub(super) writable_wanted: bool,
    pub(super) recv_buf: VecDeque<u8>,
    /// Bytes the peer may still send before our next SENDME.
    pub(super) recv_allowed: u64,
    pub(super) consumed: u64,
    pub(super) fin_received: bool,
    pub(super) readable_sent: bool,
}

impl Stream {
    pub(super) fn new(state: StreamState, window: u32, peer_window: u32) -> Stream {
        Stream {
            state,
            send_buf: VecDeque::new(),
            credit: peer_window as u64,
            peer_window: peer_window as u64,
            fin_requested: false,
            fin_sent: false,
            in_rr: false,
            writable_wanted: false,
            recv_buf: VecDeque::new(),
            recv_allowed: window as u64,
            consumed: 0,
            fin_received: false,
            readable_sent: false,
        }
    }
    pub(super) fn sendable(&self) -> bool {
        self.state == StreamState::Open
            && ((!self.send_buf.is_empty() && self.credit > 0)
                || (self.send_buf.is_empty() && self.fin_requested && !self.fin_sent))
    }
    pub(super) fn finished(&self) -> bool {
        self.fin_sent && self.fin_received && self.recv_buf.is_empty()
    }
}

/// Relay cells other than DATA waiting for room at the packaging edge.
#[derive(Clone, Debug)]
pub(super) enum PendingCell {
    Begin {
        host: String,
        port: u16,
        window: u32,
    },
    Connected {
        window: u32,
    },
    End(EndReason),
    Sendme(u32),
}

/// Cells an edge may have waiting beyond two per allowed stream before the
/// peer that caused them loses the circuit.
pub(super) const PENDING_SLACK: usize = 256;

/// A stream edge of a circuit: the client's or the exit's.
pub(super) struct Edge {
    /// The direction this edge packages cells into.
    pub(super) send_dir: Direction,
    pub(super) streams: BTreeMap<u16, Stream>,
    pub(super) next_id: u16,
    pub(super) pending: VecDeque<(u16, PendingCell)>,
    pub(super) rr: VecDeque<u16>,
    /// Exit: a stream was opened here (counted once per circuit).
    pub(super) exited: bool,
}

impl Edge {
    pub(super) fn new(client: bool) -> Edge {
        Edge {
            send_dir: if client {
                Direction::Forward
            } else {
                Direction::Backward
            },
            streams: BTreeMap::new(),
            next_id: 1,
            pending: VecDeque::new(),
            rr: VecDeque::new(),
            exited: false,
        }
    }
    pub(super) fn recv_dir(&self) -> Direction {
        self.send_dir.reverse()
    }
    pub(super) fn activate(&mut self, id: u16) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.in_rr && s.sendable() {
                s.in_rr = true;
                self.rr.push_back(id);
            }
        }
    }
}

impl Node {
    // ------------------------------------------------------------------
    // The BackTap edges

    pub(super) fn process_events(&mut self, now: Time) {
        while let Some(ev) = self.ep.poll_event() {
            match ev {
                Event::Readable { circuit, dir } => self.drain(now, circuit, dir),
                Event::Writable { circuit, .. } => {
                    self.dirty.insert(circuit);
                }
            }
        }
    }

    /// Takes every in-order cell at a delivering edge and dispatches it.
    pub(super) fn drain(&mut self, now: Time, c: CircuitId, dir: Direction) {
        let mut body = [0u8; CELL_BODY_LEN];
        loop {
            let Some(circ) = self.circs.get(&c) else {
                // Not ours (any more): empty the edge so it does not hold cells.
                while self.ep.recv_cell_into(now, c, dir, &mut body).is_some() {}
                return;
            };
            if circ.edge.as_ref().map(|e| e.recv_dir()) != Some(dir) {
                self.stats.protocol_errors += 1;
                return;
            }
            if self.ep.recv_cell_into(now, c, dir, &mut body).is_none() {
                return;
            }
            if !self.unseal(c, &mut body) {
                // Changed on the way (a relay flipped bits, or replayed or
                // dropped cells), or sealed for another hop: the cipher
                // streams are out of step from here on.
                self.stats.cells_unrecognized += 1;
                self.teardown(now, c, DestroyReason::Protocol, None);
                return;
            }
            self.observe(Observed::CellOpened {
                circuit: c,
                body: &body,
            });
            self.on_relay_cell(c, &body);
            // The peer's cells queue answers (END for a BEGIN over the
            // stream limit, or for a stream it broke) that leave only as the
            // peer opens our window. A peer that keeps sending while it
            // keeps the window shut would grow the queue without end.
            let pending = self
                .circs
                .get(&c)
                .and_then(|x| x.edge.as_ref())
                .map_or(0, |e| e.pending.len());
            if pending
                > self
                    .cfg
                    .max_streams
                    .saturating_mul(2)
                    .saturating_add(PENDING_SLACK)
            {
                self.stats.protocol_errors += 1;
                self.teardown(now, c, DestroyReason::Protocol, None);
            }
        }
    }

    /// Removes the onion layers of a cell that arrived at this edge: true if
    /// the cell is for this edge (the exit's own layer recognizes it, or, at
    /// the client, the last hop's).
    pub(super) fn unseal(&mut self, c: CircuitId, body: &mut CellBody) -> bool {
        match self.circs.get_mut(&c).map(|x| &mut x.onion) {
            Some(Onion::Client { crypto, .. }) => {
                let last = crypto.len().checked_sub(1);
                last.is_some() && crypto.decrypt_backward(body) == last
            }
            Some(Onion::Hop(h)) => h.relay_forward(body),
            _ => false,
        }
    }

    pub(super) fn on_relay_cell(&mut self, c: CircuitId, body: &CellBody) {
        let (id, msg) = match cell::decode(body) {
            Ok(x) => x,
            Err(_) => {
                self.stats.protocol_errors += 1;
                return;
            }
        };
        let max_streams = self.cfg.max_streams;
        let window = self.cfg.stream_window;
        let exit = self.cfg.exit;
        let Some(circ) = self.circs.get_mut(&c) else {
            return;
        };
        let is_client = circ.role == Role::Client;
        let Some(edge) = circ.edge.as_mut() else {
            return;
        };
        let key = StreamKey { circuit: c, id };
        let mut dirty = false;
        match msg {
            RelayMsg::Begin {
                window: peer_window,
                host,
                port,
            } => {
                if is_client || id == 0 || edge.streams.contains_key(&id) {
                    self.stats.protocol_errors += 1;
                    return;
                }
                if !exit {
                    // The last hop of this circuit is not an exit.
                    self.stats.streams_refused_not_exit += 1;
                    edge.pending
                        .push_back((id, PendingCell::End(EndReason::ExitPolicy)));
                    self.dirty.insert(c);
                    return;
                }
                if edge.streams.len() >= max_streams {
                    self.stats.streams_refused_limit += 1;
                    edge.pending
                        .push_back((id, PendingCell::End(EndReason::ResourceLimit)));
                    self.dirty.insert(c);
                    return;
                }
                if !edge.exited {
                    edge.exited = true;
                    self.stats.circuits_exited += 1;
                }
                edge.streams
                    .insert(id, Stream::new(StreamState::Resolving, window, peer_window));
                self.stats.streams_opened += 1;
                self.events.push_back(NodeEvent::StreamBegin {
                    stream: key,
                    host: host.to_string(),
                    port,
                });
            }
            RelayMsg::Connected {
                window: peer_window,
            } => {
                let Some(s) = edge.streams.get_mut(&id) else {
                    self.stats.unknown_stream_cells += 1;
                    return;
                };
                if !is_client || s.state != StreamState::Connecting {
                    self.stats.protocol_errors += 1;
                    return;
                }
                s.state = StreamState::Open;
                s.credit = peer_window as u64;
                s.peer_window = peer_window as u64;
                self.events.push_back(NodeEvent::StreamConnected(key));
                self.events.push_back(NodeEvent::StreamWritable(key));
                edge.activate(id);
                dirty = true;
            }
            RelayMsg::Data(d) => {
                self.stats.data_cells_in += 1;
                let Some(s) = edge.streams.get_mut(&id) else {
                    self.stats.unknown_stream_cells += 1;
                    return;
                };
                if s.state != StreamState::Open || s.fin_received || d.len() as u64 > s.recv_allowed
                {
                    self.stats.protocol_errors += 1;
                    Self::reset_in(
                        edge,
                        &mut self.events,
                        &mut self.stats,
                        key,
                        EndReason::Protocol,
                    );
                    self.dirty.insert(c);
                    return;
                }
                s.recv_allowed -= d.len() as u64;
                s.recv_buf.extend(d);
                if !s.readable_sent {
                    s.readable_sent = true;
                    self.events.push_back(NodeEvent::StreamReadable(key));
                }
            }
            RelayMsg::End(EndReason::Done) => {
                let Some(s) = edge.streams.get_mut(&id) else {
                    self.stats.unknown_stream_cells += 1;
                    return;
                };
                if s.state != StreamState::Open || s.fin_received {
                    self.stats.protocol_errors += 1;
                    return;
                }
                s.fin_received = true;
                if !s.readable_sent {
                    s.readable_sent = true;
                    self.events.push_back(NodeEvent::StreamReadable(key));
                }
            }
            RelayMsg::End(reason) => {
                if edge.streams.remove(&id).is_some() {
                    self.stats.streams_reset += 1;
                    self.events.push_back(NodeEvent::StreamReset {
                        stream: key,
                        reason,
                    });
                } else {
                    self.stats.unknown_stream_cells += 1;
                }
            }
            RelayMsg::Sendme { increment } => {
                let Some(s) = edge.streams.get_mut(&id) else {
                    self.stats.unknown_stream_cells += 1;
                    return;
                };
                s.credit += increment as u64;
                if s.credit > s.peer_window {
                    self.stats.protocol_errors += 1;
                    Self::reset_in(
                        edge,
                        &mut self.events,
                        &mut self.stats,
                        key,
                        EndReason::Protocol,
                    );
                    self.dirty.insert(c);
                    return;
                }
                edge.activate(id);
                dirty = true;
            }
            RelayMsg::Extend { .. } | RelayMsg::Extended { .. } => {
                // These travel on the control channel only.
                self.stats.protocol_errors += 1;
                return;
            }
        }
        if dirty {
            self.dirty.insert(c);
        }
    }

    /// Resets a stream from inside: END(reason) to the peer, an event for
    /// the application.
    pub(super) fn reset_in(
        edge: &mut Edge,
        events: &mut VecDeque<NodeEvent>,
        stats: &mut NodeStats,
        key: StreamKey,
        reason: EndReason,
    ) {
        if edge.streams.remove(&key.id).is_some() {
            stats.streams_reset += 1;
            edge.pending.push_back((key.id, PendingCell::End(reason)));
            events.push_back(NodeEvent::StreamReset {
                stream: key,
                reason,
            });
        }
    }

    /// Packages pending relay cells and stream data of dirty circuits while
    /// BackTap admits them (round-robin over streams, one cell per turn).
    pub(super) fn pump(&mut self, now: Time) {
        while let Some(c) = self.dirty.pop_first() {
            let Some(circ) = self.circs.get_mut(&c) else {
                continue;
            };
            if circ.state != CircState::Open {
                continue;
            }
            let Circ { edge, onion, .. } = circ;
            let Some(edge) = edge.as_mut() else {
                continue;
            };
            let dir = edge.send_dir;
            let cap = self.cfg.stream_send_buffer;
            let body = &mut *self.cell;
            while self.ep.can_send(c, dir) {
                if let Some((id, p)) = edge.pending.pop_front() {
                    let msg = match &p {
                        PendingCell::Begin { host, port, window } => RelayMsg::Begin {
                            window: *window,
                            host,
                            port: *port,
                        },
                        PendingCell::Connected { window } => {
                            RelayMsg::Connected { window: *window }
                        }
                        PendingCell::End(r) => RelayMsg::End(*r),
                        PendingCell::Sendme(n) => RelayMsg::Sendme { increment: *n },
                    };
                    cell::encode(id, &msg, body);
                    onion.seal(c, body, &mut self.observer);
                    let _ = self.ep.send_cell(now, c, dir, body);
                    continue;
                }
                let Some(id) = edge.rr.pop_front() else {
                    break;
                };
                let Some(s) = edge.streams.get_mut(&id) else {
                    continue;
                };
                s.in_rr = false;
                if !s.sendable() {
                    continue;
                }
                if !s.send_buf.is_empty() {
                    let n = (s.credit as usize).min(CELL_DATA_LEN).min(s.send_buf.len());
                    let (a, b) = s.send_buf.as_slices();
                    let a = &a[..a.len().min(n)];
                    let b = &b[..b.len().min(n - a.len())];
                    let used = cell::encode_data_from(id, a, b, body);
                    s.send_buf.drain(..used);
                    s.credit -= used as u64;
                    onion.seal(c, body, &mut self.observer);
                    let _ = self.ep.send_cell(now, c, dir, body);
                    self.stats.data_cells_out += 1;
                    if s.writable_wanted && s.send_buf.len() <= cap / 2 {
                        s.writable_wanted = false;
                        self.events
                            .push_back(NodeEvent::StreamWritable(StreamKey { circuit: c, id }));
                    }
                } else {
                    cell::encode(id, &RelayMsg::End(EndReason::Done), body);
                    onion.seal(c, body, &mut self.observer);
                    let _ = self.ep.send_cell(now, c, dir, body);
                    s.fin_sent = true;
                    if s.finished() {
                        edge.streams.remove(&id);
                        continue;
                    }
                }
                if s.sendable() {
                    s.in_rr = true;
                    edge.rr.push_back(id);
                }
            }
        }
    }

    // ------------------------------------------------------------------
    // Client streams

    /// Opens a stream to `host:port` on a built circuit of this client.
    /// [`NodeEvent::StreamConnected`] or [`NodeEvent::StreamReset`] follows.
    pub fn open_stream(
        &mut self,
        _now: Time,
        c: CircuitId,
        host: &str,
        port: u16,
    ) -> Result<StreamKey, StreamError> {
        if host.is_empty() || host.len() > cell::MAX_HOST_LEN {
            return Err(StreamError::BadTarget);
        }
        let max = self.cfg.max_streams;
        let window = self.cfg.stream_window;
        let circ = self.circs.get_mut(&c).ok_or(StreamError::UnknownCircuit)?;
        if circ.role != Role::Client {
            return Err(StreamError::UnknownCircuit);
        }
        if circ.state != CircState::Open {
            return Err(StreamError::NotReady);
        }
        let edge = circ.edge.as_mut().ok_or(StreamError::UnknownCircuit)?;
        if edge.streams.len() >= max.min(u16::MAX as usize) {
            return Err(StreamError::TooManyStreams);
        }
        let mut id = edge.next_id;
        while id == 0 || edge.streams.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        edge.next_id = id.wrapping_add(1);
        edge.streams
            .insert(id, Stream::new(StreamState::Connecting, window, 0));
        edge.pending.push_back((
            id,
            PendingCell::Begin {
                host: host.to_string(),
                port,
                window,
            },
        ));
        self.stats.streams_opened += 1;
        self.dirty.insert(c);
        Ok(StreamKey { circuit: c, id })
    }

    // ------------------------------------------------------------------
    // Streams (both edges)

    pub(super) fn stream_mut(
        &mut self,
        k: StreamKey,
    ) -> Result<(&mut Edge, &NodeConfig), StreamError> {
        let circ = self
            .circs
            .get_mut(&k.circuit)
            .ok_or(StreamError::UnknownStream)?;
        let edge = circ.edge.as_mut().ok_or(StreamError::UnknownStream)?;
        if !edge.streams.contains_key(&k.id) {
            return Err(StreamError::UnknownStream);
        }
        Ok((edge, &self.cfg))
    }

    /// Exit: the TCP connection for a [`NodeEvent::StreamBegin`] is up.
    pub fn stream_connected(&mut self, _now: Time, k: StreamKey) -> Result<(), StreamError> {
        let (edge, cfg) = self.stream_mut(k)?;
        let window = cfg.stream_window;
        let s = edge.streams.get_mut(&k.id).expect("checked");
        if s.state != StreamState::Resolving {
            return Err(StreamError::NotOpen);
        }
        s.state = StreamState::Open;
        edge.pending
            .push_back((k.id, PendingCell::Connected { window }));
        edge.activate(k.id);
        self.events.push_back(NodeEvent::StreamWritable(k));
        self.dirty.insert(k.circuit);
        Ok(())
    }

    /// Exit: refuses a [`NodeEvent::StreamBegin`] (END with `reason`).
    pub fn stream_refuse(
        &mut self,
        now: Time,
        k: StreamKey,
        reason: EndReason,
    ) -> Result<(), StreamError> {
        self.stream_reset(now, k, reason)
    }

    /// Room in a stream's send buffer, in bytes.
    pub fn stream_send_space(&self, k: StreamKey) -> usize {
        self.circs
            .get(&k.circuit)
            .and_then(|c| c.edge.as_ref())
            .and_then(|e| e.streams.get(&k.id))
            .map_or(0, |s| {
                if s.fin_requested {
                    0
                } else {
                    self.cfg.stream_send_buffer.saturating_sub(s.send_buf.len())
                }
            })
    }

    /// Queues application bytes; returns how many fit. Once the buffer is
    /// more than half full, [`NodeEvent::StreamWritable`] follows when it has
    /// drained to half.
    pub fn stream_write(
        &mut self,
        _now: Time,
        k: StreamKey,
        data: &[u8],
    ) -> Result<usize, StreamError> {
        let (edge, cfg) = self.stream_mut(k)?;
        let cap = cfg.stream_send_buffer;
        let s = edge.streams.get_mut(&k.id).expect("checked");
        if s.fin_requested {
            return Err(StreamError::Closed);
        }
        let n = data.len().min(cap.saturating_sub(s.send_buf.len()));
        s.send_buf.extend(&data[..n]);
        if s.send_buf.len() > cap / 2 {
            s.writable_wanted = true;
        }
        edge.activate(k.id);
        self.dirty.insert(k.circuit);
        Ok(n)
    }

    /// Reads received bytes. Returning bytes to the application is what
    /// opens the peer's window (SENDME after each quarter window).
    pub fn stream_read(
        &mut self,
        _now: Time,
        k: StreamKey,
        buf: &mut [u8],
    ) -> Result<Read, StreamError> {
        let (edge, cfg) = self.stream_mut(k)?;
        let quarter = (cfg.stream_window as u64 / 4).max(1);
        let s = edge.streams.get_mut(&k.id).expect("checked");
        if s.recv_buf.is_empty() {
            s.readable_sent = false;
            if s.fin_received {
                if s.finished() {
                    edge.streams.remove(&k.id);
                }
                return Ok(Read::Eof);
            }
            return Ok(Read::WouldBlock);
        }
        let n = buf.len().min(s.recv_buf.len());
        let (a, b) = s.recv_buf.as_slices();
        let na = a.len().min(n);
        buf[..na].copy_from_slice(&a[..na]);
        buf[na..n].copy_from_slice(&b[..n - na]);
        s.recv_buf.drain(..n);
        s.consumed += n as u64;
        if s.consumed >= quarter && !s.fin_received {
            let inc = s.consumed.min(u32::MAX as u64) as u32;
            s.consumed -= inc as u64;
            s.recv_allowed += inc as u64;
            edge.pending.push_back((k.id, PendingCell::Sendme(inc)));
            self.dirty.insert(k.circuit);
        }
        Ok(Read::Data(n))
    }

    /// Bytes waiting to be read.
    pub fn stream_readable_bytes(&self, k: StreamKey) -> usize {
        self.circs
            .get(&k.circuit)
            .and_then(|c| c.edge.as_ref())
            .and_then(|e| e.streams.get(&k.id))
            .map_or(0, |s| s.recv_buf.len())
    }

    /// The application finished sending (TCP FIN): END(DONE) follows the
    /// buffered data.
    pub fn stream_shutdown(&mut self, _now: Time, k: StreamKey) -> Result<(), StreamError> {
        let (edge, _) = self.stream_mut(k)?;
        let s = edge.streams.get_mut(&k.id).expect("checked");
        s.fin_requested = true;
        edge.activate(k.id);
        self.dirty.insert(k.circuit);
        Ok(())
    }

    /// Resets a stream (TCP RST or an application error): END(reason) at
    /// once, buffered data is dropped.
    pub fn stream_reset(
        &mut self,
        _now: Time,
        k: StreamKey,
        reason: EndReason,
    ) -> Result<(), StreamError> {
        let (edge, _) = self.stream_mut(k)?;
        edge.streams.remove(&k.id);
        edge.pending.push_back((k.id, PendingCell::End(reason)));
        self.stats.streams_reset += 1;
        self.dirty.insert(k.circuit);
        Ok(())
    }

    /// The application is done with a stream: a stream that finished both
    /// ways is forgotten, any other is reset (CONNRESET).
    pub fn stream_close(&mut self, now: Time, k: StreamKey) {
        let Ok((edge, _)) = self.stream_mut(k) else {
            return;
        };
        let s = edge.streams.get(&k.id).expect("checked");
        if s.finished() {
            edge.streams.remove(&k.id);
        } else if s.fin_requested && s.fin_received && s.recv_buf.is_empty() {
            // END(DONE) still queued behind data: let it go out, then forget.
        } else {
            let _ = self.stream_reset(now, k, EndReason::ConnReset);
        }
    }
}
