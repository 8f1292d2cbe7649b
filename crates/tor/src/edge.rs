//! Circuit edges: the client application at the onion proxy, streams, the
//! exit's side of streams (an in-process server or TCP connections to a
//! server host), the end-to-end windows (SENDMEs), and the R(t)/W(t) and
//! request measurements.
//!
//! Streams follow tor-spec §6: the client opens a stream with BEGIN, sends
//! its request as DATA (right away with optimistic data, else after
//! CONNECTED), the exit answers with DATA and closes with END. DATA cells
//! carry up to 498 bytes. Each request uses a new stream.
//!
//! End-to-end windows (tor-spec §7.3–7.4, as in nstor): the packaging edge
//! may send a DATA cell while the circuit's and the stream's package windows
//! are positive, and decrements both; the delivering edge decrements its
//! deliver windows for every DATA cell and, whenever one has fallen by
//! `increment`, sends a SENDME (stream id 0 for the circuit) that adds
//! `increment` to the package window at the other end.

use crate::buckets::Side;
use crate::cell::{
    count_corrupt, decode_request, encode_request, relay, relay_data, write_relay, Request,
    RELAY_DATA_LEN, REQUEST_LEN,
};
use crate::config::{Dir, ResponseDelay, TorConfig, TorVegasConfig, Traffic, Window};
use crate::plan::NodePlan;
use crate::results::RequestRecord;
use crate::tor_vegas::TorVegas;
use crate::transport::{block_on_bucket, token, Shared, Transport};
use bytes::{Buf, Bytes, BytesMut};
use hopwise_proto::rng::Rng;
use hopwise_proto::time::Time;
use hopwise_sim::{Cx, NodeId, Sock, SockEvent};
use std::collections::{BTreeMap, VecDeque};

const NO_EDGE: u32 = u32::MAX;
const SERVER_PORT: u16 = 80;

/// What a stream end still has to package.
#[derive(Debug)]
enum Out {
    /// `left` bytes of the pattern from stream offset `off` (in-process server).
    Pattern { off: u64, left: u64 },
    /// Bytes in hand (a request; bytes read from the server).
    Buf(BytesMut),
}

impl Out {
    fn len(&self) -> u64 {
        match self {
            Out::Pattern { left, .. } => *left,
            Out::Buf(b) => b.len() as u64,
        }
    }
}

#[derive(Debug)]
struct Stream {
    id: u16,
    /// Package and deliver windows (`None`: no stream window).
    pkg: Option<i64>,
    dlv: Option<i64>,
    out: Out,
    /// No more data will be added to `out`: send END once it is drained.
    eof: bool,
    /// Client: index of the request, response size and bytes received.
    request: usize,
    size: u64,
    received: u64,
    /// Exit: the request as received so far (in-process server).
    req_buf: Vec<u8>,
    /// Exit, server host: the TCP connection to the server, whether it is up,
    /// and request bytes waiting for it.
    sock: Option<Sock>,
    sock_up: bool,
    to_server: BytesMut,
}

impl Stream {
    fn new(id: u16, window: Option<Window>) -> Stream {
        Stream {
            id,
            pkg: window.map(|w| w.start as i64),
            dlv: window.map(|w| w.start as i64),
            out: Out::Buf(BytesMut::new()),
            eof: false,
            request: 0,
            size: 0,
            received: 0,
            req_buf: Vec::new(),
            sock: None,
            sock_up: false,
            to_server: BytesMut::new(),
        }
    }
}

/// One circuit end.
#[derive(Debug)]
struct EdgeCirc {
    hop: u32,
    /// Network-wide circuit index.
    circ: u32,
    /// Think times (client); a stream of the circuit's own, so that every
    /// transport draws the same sequence.
    rng: Rng,
    client: bool,
    /// The direction this end packages: forward at the client, backward at the exit.
    pdir: Dir,
    pkg: Option<i64>,
    dlv: Option<i64>,
    /// Tor's Vegas congestion control of the packaging direction (proposal
    /// 324), and DATA cells delivered (for its SENDMEs every `sendme_inc`).
    vegas: Option<TorVegas>,
    dlv_cells: u64,
    streams: Vec<Stream>,
    rr: usize,
    /// Cells the transport did not take yet, in order.
    backlog: VecDeque<u32>,
    packaged: u64,
    delivered: u64,
    corrupt: u64,
    trace: bool,
    /// R (exit) or W (client) at every sampling instant.
    samples: Vec<u64>,
    traffic: Traffic,
    server: Option<NodeId>,
    start: Time,
    next_sid: u16,
    requests: Vec<RequestRecord>,
    dirty: bool,
    /// Waiting for the read bucket to read from a server socket.
    read_blocked: bool,
}

/// The edges hosted by one node.
pub struct Edge {
    seed: u64,
    circuit_window: Option<Window>,
    stream_window: Option<Window>,
    vegas: Option<TorVegasConfig>,
    optimistic: bool,
    response_delay: ResponseDelay,
    tcp: hopwise_proto::tcp::TcpConfig,
    cc: hopwise_proto::cc::CcConfig,
    circs: Vec<EdgeCirc>,
    by_hop: Vec<u32>,
    socks: BTreeMap<Sock, (u32, u16)>,
    dirty: VecDeque<u32>,
    scratch: Vec<(u32, Dir, u32)>,
    /// DATA cells for unknown streams, malformed requests.
    pub dropped: u64,
}

impl Edge {
    pub fn new(cfg: &TorConfig, plan: &NodePlan) -> Edge {
        let mut by_hop = vec![NO_EDGE; plan.hops.len()];
        let circs = plan
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                by_hop[e.hop as usize] = i as u32;
                EdgeCirc {
                    hop: e.hop,
                    circ: e.circ,
                    rng: Rng::for_component(plan.seed, &format!("tor-think/{}", e.circ)),
                    client: e.client,
                    pdir: if e.client {
                        Dir::Forward
                    } else {
                        Dir::Backward
                    },
                    pkg: cfg.circuit_window.map(|w| w.start as i64),
                    dlv: cfg.circuit_window.map(|w| w.start as i64),
                    vegas: cfg.vegas.map(TorVegas::new),
                    dlv_cells: 0,
                    streams: Vec::new(),
                    rr: 0,
                    backlog: VecDeque::new(),
                    packaged: 0,
                    delivered: 0,
                    corrupt: 0,
                    trace: e.trace,
                    samples: Vec::new(),
                    traffic: e.traffic,
                    server: e.server,
                    start: e.start,
                    next_sid: 1,
                    requests: Vec::new(),
                    dirty: false,
                    read_blocked: false,
                }
            })
            .collect();
        Edge {
            seed: plan.seed,
            circuit_window: cfg.circuit_window,
            stream_window: cfg.stream_window,
            vegas: cfg.vegas,
            optimistic: cfg.optimistic_data,
            response_delay: cfg.response_delay,
            tcp: cfg.edge_tcp.clone(),
            cc: cfg.edge_cc.clone(),
            circs,
            by_hop,
            socks: BTreeMap::new(),
            dirty: VecDeque::new(),
            scratch: Vec::new(),
            dropped: 0,
        }
    }

    /// Arms the client applications' start timers.
    pub fn start(&mut self, cx: &mut Cx<'_>) {
        for (i, c) in self.circs.iter().enumerate() {
            if c.client {
                cx.set_timer(c.start, token::make(token::APP, i as u64));
            }
        }
    }

    pub fn owns(&self, sock: Sock) -> bool {
        self.socks.contains_key(&sock)
    }

    pub fn has_trace(&self) -> bool {
        self.circs.iter().any(|c| c.trace)
    }

    /// Records R (exit ends) and W (client ends) of traced circuits.
    pub fn sample_rw(&mut self) {
        for c in self.circs.iter_mut().filter(|c| c.trace) {
            c.samples
                .push(if c.client { c.delivered } else { c.packaged });
        }
    }

    fn mark_dirty(&mut self, e: u32) {
        let c = &mut self.circs[e as usize];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push_back(e);
        }
    }

    /// Handles delivered cells and writable notices, then packages.
    pub fn process(&mut self, cx: &mut Cx<'_>, tx: &mut dyn Transport, sh: &mut Shared<'_>) {
        let mut cells = std::mem::take(&mut self.scratch);
        std::mem::swap(&mut cells, &mut sh.io.delivered);
        for &(hop, _dir, slot) in &cells {
            let e = self.by_hop[hop as usize];
            if e == NO_EDGE {
                sh.pool.free(slot);
                self.dropped += 1;
                continue;
            }
            self.on_cell(cx, tx, sh, e, slot);
        }
        cells.clear();
        self.scratch = cells;
        for i in 0..sh.io.writable.len() {
            let e = self.by_hop[sh.io.writable[i].0 as usize];
            if e != NO_EDGE {
                self.mark_dirty(e);
            }
        }
        sh.io.writable.clear();
        while let Some(e) = self.dirty.pop_front() {
            self.circs[e as usize].dirty = false;
            self.package(cx, tx, sh, e);
        }
    }

    /// The read bucket was refilled: streams that waited for it may read.
    pub fn bucket_refilled(&mut self) {
        for e in 0..self.circs.len() as u32 {
            if self.circs[e as usize].read_blocked {
                self.circs[e as usize].read_blocked = false;
                self.mark_dirty(e);
            }
        }
    }

    /// Queues a cell of this end's packaging direction, in order.
    fn emit(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
        slot: u32,
    ) {
        let c = &mut self.circs[e as usize];
        if !c.backlog.is_empty() || !tx.send_cell(cx, c.hop, c.pdir, slot, sh) {
            c.backlog.push_back(slot);
        }
    }

    fn emit_control(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
        cmd: u8,
        stream: u16,
    ) {
        let slot = sh.pool.alloc();
        write_relay(sh.pool.get_mut(slot), cmd, stream, &[]);
        self.emit(cx, tx, sh, e, slot);
    }

    /// A relay cell arrived at this end.
    fn on_cell(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
        slot: u32,
    ) {
        let h = sh.pool.header(slot);
        let client = self.circs[e as usize].client;
        match h.cmd {
            relay::DATA => {
                if let Some(w) = self.circuit_window {
                    let c = &mut self.circs[e as usize];
                    let d = c.dlv.as_mut().expect("window on");
                    *d -= 1;
                    let mut sendmes = 0;
                    while *d <= (w.start - w.increment) as i64 {
                        *d += w.increment as i64;
                        sendmes += 1;
                    }
                    for _ in 0..sendmes {
                        self.emit_control(cx, tx, sh, e, relay::SENDME, 0);
                    }
                }
                if let Some(v) = self.vegas {
                    // Proposal 324: a circuit SENDME every `sendme_inc` cells.
                    let c = &mut self.circs[e as usize];
                    c.dlv_cells += 1;
                    if c.dlv_cells.is_multiple_of(v.sendme_inc.max(1) as u64) {
                        self.emit_control(cx, tx, sh, e, relay::SENDME, 0);
                    }
                }
                let Some(si) = self.stream_index(e, h.stream) else {
                    self.dropped += 1;
                    sh.pool.free(slot);
                    return;
                };
                if let Some(w) = self.stream_window {
                    let s = &mut self.circs[e as usize].streams[si];
                    let d = s.dlv.as_mut().expect("window on");
                    *d -= 1;
                    let mut sendmes = 0;
                    while *d <= (w.start - w.increment) as i64 {
                        *d += w.increment as i64;
                        sendmes += 1;
                    }
                    for _ in 0..sendmes {
                        self.emit_control(cx, tx, sh, e, relay::SENDME, h.stream);
                    }
                }
                let data = relay_data(sh.pool.get(slot), h.len);
                if client {
                    self.on_response_data(cx, e, si, data);
                } else {
                    let data = Bytes::copy_from_slice(data);
                    self.on_request_data(cx, e, si, &data);
                }
            }
            relay::SENDME => {
                let c = &mut self.circs[e as usize];
                if h.stream == 0 {
                    if let (Some(p), Some(w)) = (c.pkg.as_mut(), self.circuit_window) {
                        *p += w.increment as i64;
                    }
                    if let Some(v) = c.vegas.as_mut() {
                        v.on_sendme(cx.now());
                    }
                } else if let (Some(si), Some(w)) = (
                    c.streams.iter().position(|s| s.id == h.stream),
                    self.stream_window,
                ) {
                    if let Some(p) = c.streams[si].pkg.as_mut() {
                        *p += w.increment as i64;
                    }
                }
                self.mark_dirty(e);
            }
            relay::BEGIN if !client => {
                let mut s = Stream::new(h.stream, self.stream_window);
                match self.circs[e as usize].server {
                    None => {
                        s.sock_up = true;
                        self.circs[e as usize].streams.push(s);
                        self.emit_control(cx, tx, sh, e, relay::CONNECTED, h.stream);
                    }
                    Some(server) => {
                        match cx.connect(server, SERVER_PORT, self.tcp.clone(), &self.cc) {
                            Ok(sock) => {
                                s.sock = Some(sock);
                                self.socks.insert(sock, (e, h.stream));
                                self.circs[e as usize].streams.push(s);
                            }
                            Err(_) => {
                                self.dropped += 1;
                                self.emit_control(cx, tx, sh, e, relay::END, h.stream);
                            }
                        }
                    }
                }
            }
            relay::CONNECTED if client => {
                if let Some(si) = self.stream_index(e, h.stream) {
                    if !self.optimistic {
                        let circ = self.circs[e as usize].circ;
                        let s = &mut self.circs[e as usize].streams[si];
                        let req = encode_request(Request {
                            size: s.size,
                            circuit: circ,
                            index: s.request as u32,
                        });
                        s.out = Out::Buf(BytesMut::from(&req[..]));
                        self.mark_dirty(e);
                    }
                }
            }
            relay::END => {
                if let Some(si) = self.stream_index(e, h.stream) {
                    let s = self.circs[e as usize].streams.remove(si);
                    if let Some(sock) = s.sock {
                        self.socks.remove(&sock);
                        cx.close(sock);
                    }
                }
            }
            _ => self.dropped += 1,
        }
        sh.pool.free(slot);
    }

    fn stream_index(&self, e: u32, id: u16) -> Option<usize> {
        self.circs[e as usize]
            .streams
            .iter()
            .position(|s| s.id == id)
    }

    /// Client: response bytes for stream `si`.
    fn on_response_data(&mut self, cx: &mut Cx<'_>, e: u32, si: usize, data: &[u8]) {
        let now = cx.now();
        let c = &mut self.circs[e as usize];
        let s = &mut c.streams[si];
        c.corrupt += count_corrupt(s.received, data);
        s.received += data.len() as u64;
        c.delivered += data.len() as u64;
        let r = &mut c.requests[s.request];
        if r.ttfb.is_none() {
            r.ttfb = Some(now - r.issued);
        }
        if s.received >= s.size && r.ttlb.is_none() {
            r.ttlb = Some(now - r.issued);
            let think = c.traffic.think.draw(&mut c.rng);
            cx.set_timer(now + think, token::make(token::APP, e as u64));
        }
    }

    /// Exit: request bytes for stream `si`.
    fn on_request_data(&mut self, cx: &mut Cx<'_>, e: u32, si: usize, data: &[u8]) {
        let c = &mut self.circs[e as usize];
        let s = &mut c.streams[si];
        if c.server.is_some() {
            s.to_server.extend_from_slice(data);
            if let (Some(sock), true) = (s.sock, s.sock_up) {
                let b = s.to_server.split().freeze();
                let took = cx.send(sock, b.clone());
                if took < b.len() {
                    s.to_server = BytesMut::from(&b[took..]);
                }
            }
            return;
        }
        if s.req_buf.len() >= REQUEST_LEN {
            return; // one request per stream
        }
        s.req_buf.extend_from_slice(data);
        let Some(q) = decode_request(&s.req_buf) else {
            return;
        };
        s.size = q.size;
        let delay = self.response_delay.draw(self.seed, q.circuit, q.index);
        let id = s.id;
        cx.set_timer(
            cx.now() + delay,
            token::make(token::RESPONSE, (e as u64) << 16 | id as u64),
        );
    }

    /// The in-process server's response delay ended.
    pub fn response_due(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        payload: u64,
    ) {
        let e = (payload >> 16) as u32;
        let id = payload as u16;
        let Some(si) = self.stream_index(e, id) else {
            return;
        };
        let s = &mut self.circs[e as usize].streams[si];
        s.out = Out::Pattern {
            off: 0,
            left: s.size,
        };
        s.eof = true;
        self.package(cx, tx, sh, e);
    }

    /// A client application's timer: issue the next request.
    pub fn app_due(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
    ) {
        let now = cx.now();
        let optimistic = self.optimistic;
        let window = self.stream_window;
        let c = &mut self.circs[e as usize];
        if !c.client {
            return;
        }
        if c.traffic
            .count
            .is_some_and(|n| c.requests.len() as u32 >= n)
        {
            return;
        }
        let id = c.next_sid;
        c.next_sid = c.next_sid.checked_add(1).unwrap_or(1);
        let mut s = Stream::new(id, window);
        s.request = c.requests.len();
        s.size = c.traffic.size;
        if optimistic {
            let req = encode_request(Request {
                size: s.size,
                circuit: c.circ,
                index: s.request as u32,
            });
            s.out = Out::Buf(BytesMut::from(&req[..]));
        }
        c.requests.push(RequestRecord {
            issued: now,
            size: c.traffic.size,
            ttfb: None,
            ttlb: None,
        });
        c.streams.push(s);
        self.emit_control(cx, tx, sh, e, relay::BEGIN, id);
        self.package(cx, tx, sh, e);
    }

    /// A TCP event on an exit↔server connection.
    pub fn sock_event(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        sock: Sock,
        ev: SockEvent,
    ) {
        let Some(&(e, id)) = self.socks.get(&sock) else {
            return;
        };
        let Some(si) = self.stream_index(e, id) else {
            return;
        };
        match ev {
            SockEvent::Connected | SockEvent::Writable => {
                let s = &mut self.circs[e as usize].streams[si];
                s.sock_up = true;
                if !s.to_server.is_empty() {
                    let b = s.to_server.split().freeze();
                    let took = cx.send(sock, b.clone());
                    if took < b.len() {
                        s.to_server = BytesMut::from(&b[took..]);
                    }
                }
                if ev == SockEvent::Connected {
                    // Tor's exit answers BEGIN once its connection is up.
                    self.emit_control(cx, tx, sh, e, relay::CONNECTED, id);
                }
                self.mark_dirty(e);
            }
            SockEvent::Readable | SockEvent::PeerClosed => self.mark_dirty(e),
            SockEvent::Closed | SockEvent::Reset | SockEvent::TimedOut => {
                self.circs[e as usize].streams[si].eof = true;
                self.mark_dirty(e);
            }
            SockEvent::Accepted => {}
        }
    }

    /// Exit, server host: reads response bytes from the server as far as the
    /// windows (and the read bucket) allow.
    fn pull(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>, e: u32, si: usize) -> u64 {
        let now = cx.now();
        let c = &mut self.circs[e as usize];
        let mut cwin = c.pkg.unwrap_or(i64::MAX);
        if let Some(v) = &c.vegas {
            cwin = cwin.min(v.cwnd() as i64 - v.inflight() as i64);
        }
        let s = &mut c.streams[si];
        let Some(sock) = s.sock.filter(|_| s.sock_up) else {
            return 0;
        };
        let cells = cwin.min(s.pkg.unwrap_or(i64::MAX)).clamp(0, 1 << 20) as u64;
        let Out::Buf(buf) = &mut s.out else { return 0 };
        let want = (cells * RELAY_DATA_LEN as u64).saturating_sub(buf.len() as u64);
        let Some(conn) = cx.conn(sock) else { return 0 };
        let avail = conn.recv_ready();
        if avail == 0 {
            if conn.recv_finished() {
                s.eof = true;
            }
            return 0;
        }
        if want == 0 {
            return 0;
        }
        if sh.buckets.tokens(Side::Read, now) == Some(0) {
            c.read_blocked = true;
            block_on_bucket(cx, sh.buckets, Side::Read);
            return 0;
        }
        let share = sh.buckets.share(Side::Read, now, RELAY_DATA_LEN as u64);
        let mut n = want.min(avail).min(share);
        let mut got = 0;
        while n > 0 {
            let Some(b) = cx.recv(sock, n as usize) else {
                break;
            };
            n -= b.len() as u64;
            got += b.len() as u64;
            sh.buckets.consume(Side::Read, now, b.len() as u64);
            buf.extend_from_slice(&b);
        }
        if cx.conn(sock).is_some_and(|c| c.recv_finished()) {
            s.eof = true;
        }
        got
    }

    /// Packages DATA cells (and END) while the windows and the transport allow.
    fn package(&mut self, cx: &mut Cx<'_>, tx: &mut dyn Transport, sh: &mut Shared<'_>, e: u32) {
        // Cells the transport refused earlier go first, in order.
        {
            let c = &mut self.circs[e as usize];
            while let Some(&slot) = c.backlog.front() {
                if tx.send_cell(cx, c.hop, c.pdir, slot, sh) {
                    c.backlog.pop_front();
                } else {
                    return;
                }
            }
        }
        let pulls = self.circs[e as usize].server.is_some() && !self.circs[e as usize].client;
        loop {
            // Read from the server connections (each a bucket share at most),
            // package, and read again while reading made progress: an exit
            // keeps reading a readable edge connection while its windows allow.
            let mut got = 0;
            if pulls {
                for si in 0..self.circs[e as usize].streams.len() {
                    got += self.pull(cx, sh, e, si);
                }
            }
            self.package_some(cx, tx, sh, e);
            if got == 0 {
                break;
            }
        }
        self.end_streams(cx, tx, sh, e);
    }

    /// Packages DATA cells from what the streams hold.
    fn package_some(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
    ) {
        let now = cx.now();
        loop {
            let c = &mut self.circs[e as usize];
            if !c.backlog.is_empty()
                || c.pkg.is_some_and(|p| p <= 0)
                || c.vegas.as_ref().is_some_and(|v| !v.may_send())
                || !tx.can_send(c.hop, c.pdir)
            {
                break;
            }
            let n = c.streams.len();
            // Bytes read from a server go out in full cells, and the last
            // partial cell once the response is complete: the simulator
            // reports every TCP segment as its own read event, and packaging
            // what each one brought (as Tor does per read) would cut a
            // response into 1.5 cells per segment.
            let Some(si) = (0..n).map(|k| (c.rr + k) % n).find(|&i| {
                let s = &c.streams[i];
                let have = s.out.len();
                let whole = have >= RELAY_DATA_LEN as u64 || s.eof || s.sock.is_none();
                have > 0 && whole && s.pkg.is_none_or(|p| p > 0)
            }) else {
                break;
            };
            c.rr = (si + 1) % n;
            let s = &mut c.streams[si];
            let len = (s.out.len() as usize).min(RELAY_DATA_LEN);
            let slot = match &mut s.out {
                Out::Pattern { off, left } => {
                    let slot = sh.pool.alloc_pattern_data(s.id, len as u16, *off);
                    *off += len as u64;
                    *left -= len as u64;
                    slot
                }
                Out::Buf(b) => {
                    let slot = sh.pool.alloc();
                    write_relay(sh.pool.get_mut(slot), relay::DATA, s.id, &b[..len]);
                    b.advance(len);
                    slot
                }
            };
            if let Some(p) = s.pkg.as_mut() {
                *p -= 1;
            }
            if let Some(p) = c.pkg.as_mut() {
                *p -= 1;
            }
            if let Some(v) = c.vegas.as_mut() {
                v.on_sent(now);
            }
            c.packaged += len as u64;
            self.emit(cx, tx, sh, e, slot);
        }
    }

    /// Sends END for streams whose data is all packaged and that get no more.
    fn end_streams(
        &mut self,
        cx: &mut Cx<'_>,
        tx: &mut dyn Transport,
        sh: &mut Shared<'_>,
        e: u32,
    ) {
        // Streams whose data is all packaged and that will get no more: END.
        let c = &mut self.circs[e as usize];
        let mut i = 0;
        let mut ended = Vec::new();
        while i < c.streams.len() {
            let s = &c.streams[i];
            if !c.client && s.eof && s.out.len() == 0 {
                let s = c.streams.remove(i);
                if let Some(sock) = s.sock {
                    self.socks.remove(&sock);
                    cx.close(sock);
                }
                ended.push(s.id);
            } else {
                i += 1;
            }
        }
        for id in ended {
            self.emit_control(cx, tx, sh, e, relay::END, id);
        }
    }

    // ----- results --------------------------------------------------------

    /// `(samples, packaged, delivered, corrupt, requests)` of the end on `hop`.
    pub fn end_of(&self, hop: u32) -> Option<EdgeResult<'_>> {
        let e = *self.by_hop.get(hop as usize)?;
        let c = self.circs.get(e as usize)?;
        Some(EdgeResult {
            samples: &c.samples,
            packaged: c.packaged,
            delivered: c.delivered,
            corrupt: c.corrupt,
            requests: &c.requests,
            vegas: c.vegas.as_ref(),
        })
    }

    /// The Vegas controller of the edge on `hop`, if any, with the direction
    /// it packages.
    pub fn vegas(&self, hop: u32) -> Option<(Dir, &TorVegas)> {
        let e = *self.by_hop.get(hop as usize)?;
        let c = self.circs.get(e as usize)?;
        c.vegas.as_ref().map(|v| (c.pdir, v))
    }
}

/// What an edge measured.
pub struct EdgeResult<'a> {
    pub samples: &'a [u64],
    pub packaged: u64,
    pub delivered: u64,
    pub corrupt: u64,
    pub requests: &'a [RequestRecord],
    /// Tor's Vegas controller of this end's packaging direction.
    pub vegas: Option<&'a TorVegas>,
}
