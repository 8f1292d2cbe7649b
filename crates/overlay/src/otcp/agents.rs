//! The simulator's oTCP applications: a client that sends a file along a
//! route, and a node that relays (or, at the end of the route, receives).
//! Both run the sans-IO parts of `hopwise_proto::otcp`: the route header
//! and the relay's bounded splice.

use bytes::Bytes;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::otcp::{Hop, Route, Splice};
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::{Agent, Cx, NodeId, Sock, SockEvent};

/// The port every oTCP node listens on.
pub const PORT: u16 = 7070;

static ZEROS: [u8; 65536] = [0; 65536];

/// Sends `size` bytes to the last node of `route` (node ids), through the
/// nodes before it, and closes.
pub struct Client {
    route: Vec<u32>,
    /// The port of every hop ([`PORT`] unless [`Client::on_port`]).
    port: u16,
    tcp: TcpConfig,
    cc: CcConfig,
    sock: Option<Sock>,
    header: Option<Bytes>,
    left: u64,
    /// When the client opened its connection.
    pub started: Option<Time>,
    /// Why the transfer failed, if it did.
    pub error: Option<String>,
}

impl Client {
    /// `route`: the node ids after the client, the destination last.
    pub fn new(route: Vec<u32>, size: u64, tcp: TcpConfig, cc: CcConfig) -> Client {
        Client {
            route,
            port: PORT,
            tcp,
            cc,
            sock: None,
            header: None,
            left: size,
            started: None,
            error: None,
        }
    }

    /// Reaches every node of the route on `port` (their [`Node::on_port`]).
    pub fn on_port(mut self, port: u16) -> Client {
        self.port = port;
        self
    }

    fn pump(&mut self, cx: &mut Cx<'_>) {
        let Some(s) = self.sock else { return };
        if let Some(h) = self.header.take() {
            let n = cx.send(s, h.clone());
            if n < h.len() {
                self.header = Some(h.slice(n..));
                return;
            }
        }
        while self.left > 0 {
            let n = self.left.min(ZEROS.len() as u64) as usize;
            let took = cx.send(s, Bytes::from_static(&ZEROS[..n]));
            self.left -= took as u64;
            if took < n {
                return;
            }
        }
        cx.close(s);
    }
}

impl Agent for Client {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.started = Some(cx.now());
        let Some((&first, rest)) = self.route.split_first() else {
            self.error = Some("empty route".into());
            return;
        };
        let port = self.port;
        let route = Route::new(rest.iter().map(|&addr| Hop { addr, port }).collect());
        match route.encode() {
            Ok(h) => self.header = Some(h.into()),
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        }
        match cx.connect(NodeId::from_raw(first), port, self.tcp.clone(), &self.cc) {
            Ok(s) => self.sock = Some(s),
            Err(e) => self.error = Some(e),
        }
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, _sock: Sock, ev: SockEvent) {
        match ev {
            SockEvent::Connected | SockEvent::Writable => self.pump(cx),
            SockEvent::Reset | SockEvent::TimedOut => {
                self.error = Some(format!("client connection: {ev:?}"));
            }
            _ => {}
        }
    }
}

/// One accepted connection at a node.
enum Role {
    /// Reading the route header.
    Header(Vec<u8>),
    /// Relaying to the next hop.
    Relay {
        down: Sock,
        /// The downstream handshake completed.
        ready: bool,
        /// The route header still to send downstream.
        header: Option<Bytes>,
        closed_down: bool,
    },
    /// The destination: counting bytes into `received[k]`.
    Sink(usize),
    /// Refused or failed: the connection was reset; nothing more to do.
    Done,
}

struct Leg {
    up: Sock,
    role: Role,
    splice: Splice,
    peer_closed: bool,
}

/// A received transfer, at the destination.
#[derive(Clone, Debug, Default)]
pub struct Received {
    pub bytes: u64,
    /// When the first payload byte arrived.
    pub first: Option<Time>,
    /// When the sender's FIN arrived (every byte is in).
    pub done: Option<Time>,
    /// Bytes received per interval of [`Node::binned`] (empty without).
    pub bins: Vec<u64>,
}

impl Received {
    fn count(&mut self, now: Time, n: u64, bin: Option<Dur>) {
        self.bytes += n;
        if n > 0 && self.first.is_none() {
            self.first = Some(now);
        }
        if let Some(w) = bin {
            let i = (now.as_nanos() / w.as_nanos().max(1)) as usize;
            if self.bins.len() <= i {
                self.bins.resize(i + 1, 0);
            }
            self.bins[i] += n;
        }
    }
}

/// An oTCP node: relays connections whose route goes on, receives those
/// that end here.
pub struct Node {
    port: u16,
    /// The width of [`Received::bins`], if counted.
    bin: Option<Dur>,
    tcp: TcpConfig,
    cc: CcConfig,
    /// The relay's own buffer per connection, besides its sockets' buffers
    /// (at least 512 B).
    splice_bytes: usize,
    legs: Vec<Leg>,
    /// Transfers that ended here.
    pub received: Vec<Received>,
    /// Bytes relayed downstream, over all connections.
    pub relayed: u64,
    /// Refused headers and failed connections.
    pub errors: Vec<String>,
}

impl Node {
    pub fn new(tcp: TcpConfig, cc: CcConfig, splice_bytes: usize) -> Node {
        Node {
            port: PORT,
            bin: None,
            tcp,
            cc,
            // The payload read with the header (under 512 B) must fit.
            splice_bytes: splice_bytes.max(512),
            legs: Vec::new(),
            received: Vec::new(),
            relayed: 0,
            errors: Vec::new(),
        }
    }

    /// Listens on `port` instead of [`PORT`].
    pub fn on_port(mut self, port: u16) -> Node {
        self.port = port;
        self
    }

    /// Counts the bytes of transfers that end here per `width`.
    pub fn binned(mut self, width: Dur) -> Node {
        self.bin = Some(width);
        self
    }

    fn leg_of(&self, sock: Sock) -> Option<usize> {
        self.legs.iter().position(|l| {
            l.up == sock || matches!(l.role, Role::Relay { down, .. } if down == sock)
        })
    }

    fn pump(&mut self, cx: &mut Cx<'_>, i: usize) {
        let leg = &mut self.legs[i];
        if let Role::Header(buf) = &mut leg.role {
            while let Some(b) = cx.recv(leg.up, 512) {
                buf.extend_from_slice(&b);
                match Route::decode(buf) {
                    Err(e) => {
                        self.errors.push(e.to_string());
                        cx.abort(leg.up);
                        leg.role = Role::Done;
                        return;
                    }
                    Ok(None) => continue,
                    Ok(Some((route, n))) => {
                        let rest = Bytes::copy_from_slice(&buf[n..]);
                        match route.next() {
                            None => {
                                let mut r = Received::default();
                                r.count(cx.now(), rest.len() as u64, self.bin);
                                self.received.push(r);
                                leg.role = Role::Sink(self.received.len() - 1);
                            }
                            Some((hop, onward)) => {
                                let header = onward.encode().expect("a shorter route encodes");
                                match cx.connect(
                                    NodeId::from_raw(hop.addr),
                                    hop.port,
                                    self.tcp.clone(),
                                    &self.cc,
                                ) {
                                    Ok(down) => {
                                        leg.role = Role::Relay {
                                            down,
                                            ready: false,
                                            header: Some(header.into()),
                                            closed_down: false,
                                        };
                                        leg.splice.push(rest);
                                    }
                                    Err(e) => {
                                        self.errors.push(e);
                                        cx.abort(leg.up);
                                        leg.role = Role::Done;
                                        return;
                                    }
                                }
                            }
                        }
                        break;
                    }
                }
            }
        }
        let leg = &mut self.legs[i];
        match &mut leg.role {
            Role::Header(_) if leg.peer_closed => {
                self.errors
                    .push("connection closed before its route header was complete".into());
                cx.abort(leg.up);
                leg.role = Role::Done;
            }
            Role::Header(_) | Role::Done => {}
            Role::Sink(k) => {
                let r = &mut self.received[*k];
                while let Some(b) = cx.recv(leg.up, usize::MAX) {
                    r.count(cx.now(), b.len() as u64, self.bin);
                }
                if leg.peer_closed && r.done.is_none() {
                    r.done = Some(cx.now());
                    cx.close(leg.up);
                }
            }
            Role::Relay {
                down,
                ready,
                header,
                closed_down,
            } => {
                if !*ready || *closed_down {
                    return;
                }
                if let Some(h) = header.take() {
                    let n = cx.send(*down, h.clone());
                    if n < h.len() {
                        *header = Some(h.slice(n..));
                        return;
                    }
                }
                'copy: loop {
                    while let Some(c) = leg.splice.front() {
                        let c = c.clone();
                        let n = cx.send(*down, c.clone());
                        leg.splice.consumed(n);
                        self.relayed += n as u64;
                        if n < c.len() {
                            break 'copy;
                        }
                    }
                    let want = leg.splice.want();
                    match cx.recv(leg.up, want) {
                        Some(b) if !b.is_empty() => {
                            leg.splice.push(b);
                        }
                        _ => break,
                    }
                }
                if leg.peer_closed {
                    leg.splice.upstream_closed();
                }
                if leg.splice.should_close_downstream() {
                    *closed_down = true;
                    cx.close(*down);
                    cx.close(leg.up);
                }
            }
        }
    }
}

impl Agent for Node {
    fn start(&mut self, cx: &mut Cx<'_>) {
        if let Err(e) = cx.listen(self.port, self.tcp.clone(), self.cc.clone()) {
            self.errors.push(e);
        }
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        if ev == SockEvent::Accepted {
            self.legs.push(Leg {
                up: sock,
                role: Role::Header(Vec::new()),
                splice: Splice::new(self.splice_bytes),
                peer_closed: false,
            });
        }
        let Some(i) = self.leg_of(sock) else { return };
        match ev {
            SockEvent::Connected => {
                if let Role::Relay { ready, .. } = &mut self.legs[i].role {
                    *ready = true;
                }
            }
            SockEvent::PeerClosed if self.legs[i].up == sock => self.legs[i].peer_closed = true,
            SockEvent::Reset | SockEvent::TimedOut => {
                self.errors.push(format!("connection {sock}: {ev:?}"));
                // Replay the termination to the other side (seed 001 §4).
                let leg = &self.legs[i];
                match leg.role {
                    Role::Relay { down, .. } if leg.up == sock => cx.abort(down),
                    Role::Relay { .. } => cx.abort(leg.up),
                    _ => {}
                }
                return;
            }
            _ => {}
        }
        self.pump(cx, i);
    }
}
