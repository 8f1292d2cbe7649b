//! §VI's migration path as an application: an overlay node that carries one
//! byte stream per direction to each neighbour over one TCP connection, and
//! splits a second connection off when it sees sustained traffic both ways.
//!
//! # Roles
//! In each neighbour pair one node is the *decider* (A for A–B, B for B–C):
//! it opens the primary connection when the pair starts and alone decides
//! to split and to merge. Its neighbour listens and follows.
//!
//! # Policy ([`DynPolicy`])
//! Every `check_interval` the decider looks at the bytes its application
//! wrote towards the neighbour and the bytes it received from it. When both
//! directions averaged at least `threshold_bps` over the last `sustain`
//! intervals (more than a few control messages: the paper's criterion), it
//! opens a second
//! connection and moves its own outgoing stream onto it: the primary then
//! carries only the neighbour's data (and pure ACKs for it), the secondary
//! only the decider's data (and pure ACKs for it), so no ACK is piggybacked
//! and "ACKs first" can move every ACK ahead of data. When either direction
//! has carried nothing for `idle`, the decider closes the secondary and
//! writes to the primary again.
//!
//! # Stream continuity
//! The secondary starts with an 8-byte header: the stream offset S at which
//! it continues the decider's stream. The receiver reads the primary up to
//! offset S, then the secondary; data that arrives early waits in TCP's
//! receive buffer (flow control holds the sender back). A merge is the
//! secondary's FIN: the receiver reads it to the end, then turns back to
//! the primary, where the decider resumes writing after closing. Every byte
//! is checked against a known pattern at its stream offset, so reordering
//! across connections would show up as corruption.

use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::{State, TcpConfig};
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::measure::Binned;
use hopwise_sim::{Agent, Cx, NodeId, Sock, SockEvent};
use serde::Serialize;
use std::collections::VecDeque;

/// Thresholds of the split/merge policy.
#[derive(Clone, Debug, PartialEq)]
pub struct DynPolicy {
    /// How often the decider looks at its traffic.
    pub check_interval: Dur,
    /// Each direction must carry at least this much, averaged over the
    /// window, to count as "significant" (more than a few control messages).
    pub threshold_bps: f64,
    /// The window, in check intervals, over which both directions must be
    /// significant before splitting.
    pub sustain: u32,
    /// A direction silent this long ends the split. Longer than a run of
    /// backed-off retransmission timeouts (1.2 + 2.4 + 4.8 + 9.6 s at the
    /// RTTs seen here), which silences a direction that still has data.
    pub idle: Dur,
    /// Never split (the agents then behave like `bidir`).
    pub never_split: bool,
}

impl Default for DynPolicy {
    fn default() -> Self {
        DynPolicy {
            check_interval: Dur::SECOND,
            threshold_bps: 100_000.0,
            sustain: 3,
            idle: Dur::from_secs(20),
            never_split: false,
        }
    }
}

/// What one neighbour pair does, from one node's view.
#[derive(Clone, Debug)]
pub struct PeerPlan {
    /// The neighbour's node name.
    pub peer: String,
    /// This node opens the primary connection and decides splits.
    pub decider: bool,
    /// The application writes towards the neighbour in `[start, stop)`; the
    /// decider also opens the primary at `start`.
    pub start: Time,
    pub stop: Time,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyEventKind {
    Split,
    Merge,
}

/// A split or merge, as the decider saw it.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyEvent {
    /// Seconds of simulated time.
    pub t: f64,
    /// "A-B" or "B-C" (decider first).
    pub pair: String,
    pub kind: PolicyEventKind,
    /// Why: the traffic seen in the last interval, or which side fell idle.
    pub reason: String,
}

const PORT_BASE: u16 = 7000;
const TOKEN_PUMP: u64 = 1;
const TOKEN_CHECK: u64 = 2;
const TOKEN_START: u64 = 100;
/// How often the application tops up its send backlog.
const PUMP_EVERY: Dur = Dur::from_millis(10);
const HEADER: usize = 8;

/// Bytes the applications write: a fixed pseudo-random pattern, indexed by
/// stream offset (odd length so that segment boundaries drift across it).
const PATTERN_LEN: usize = 65_521;

fn pattern_vec() -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..PATTERN_LEN)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 11) as u8
        })
        .collect()
}

/// Writes up to `n` pattern bytes at stream offset `off` to a socket and
/// returns how many the send buffer took.
type Writer = Box<dyn Fn(&mut Cx<'_>, Sock, u64, usize) -> usize>;

/// Converts into the type `Cx::send` takes (the buffer type of the
/// simulator), without naming it.
fn into_send_arg<D, R>(v: Vec<u8>, _send: fn(&mut Cx<'static>, Sock, D) -> R) -> D
where
    Vec<u8>: Into<D>,
{
    v.into()
}

fn pattern_writer() -> Writer {
    // One shared buffer; every write is a zero-copy slice of it.
    let pat = into_send_arg(pattern_vec(), Cx::send);
    Box::new(move |cx, sock, off, n| {
        let o = (off % PATTERN_LEN as u64) as usize;
        let n = n.min(PATTERN_LEN - o);
        cx.send(sock, pat.slice(o..o + n))
    })
}

fn pattern() -> &'static [u8] {
    static P: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    P.get_or_init(pattern_vec)
}

fn count_corrupt(off: u64, data: &[u8]) -> u64 {
    let p = pattern();
    let mut pos = (off % PATTERN_LEN as u64) as usize;
    let mut bad = 0;
    let mut rest = data;
    while !rest.is_empty() {
        let n = rest.len().min(PATTERN_LEN - pos);
        if rest[..n] != p[pos..pos + n] {
            bad += rest[..n]
                .iter()
                .zip(&p[pos..pos + n])
                .filter(|(a, b)| a != b)
                .count() as u64;
        }
        rest = &rest[n..];
        pos = 0;
    }
    bad
}

/// One neighbour, from this node's view.
struct Peer {
    plan: PeerPlan,
    node: u32,
    // Connections.
    primary: Option<Sock>,
    /// The decider's current secondary (outgoing data).
    secondary: Option<Sock>,
    /// The follower's secondaries (incoming data), oldest first.
    inc_secondaries: VecDeque<Sock>,
    // Outgoing stream.
    written: u64,
    /// The decider's stream goes to the secondary (once it is connected).
    out_on_secondary: bool,
    /// Stream offset at which the secondary continues (header not yet sent).
    header_pending: Option<u64>,
    // Incoming stream.
    received: u64,
    goodput: Binned,
    corrupt: u64,
    /// Reading the incoming stream from the front secondary.
    inc_on_secondary: bool,
    /// Offset at which the front secondary continues (its header).
    inc_switch_at: Option<u64>,
    header_buf: Vec<u8>,
    // Policy (decider).
    mon_written: u64,
    mon_received: u64,
    /// Bytes out and in over the last `sustain` intervals.
    window: VecDeque<(u64, u64)>,
    out_idle: Dur,
    in_idle: Dur,
}

/// An overlay node: one agent per host.
pub struct OverlayNode {
    name: String,
    tcp: TcpConfig,
    cc: CcConfig,
    policy: DynPolicy,
    peers: Vec<Peer>,
    /// Splits and merges this node decided.
    pub events: Vec<PolicyEvent>,
    writer: Writer,
}

impl OverlayNode {
    pub fn new(
        name: &str,
        plans: Vec<PeerPlan>,
        tcp: TcpConfig,
        cc: CcConfig,
        policy: DynPolicy,
    ) -> OverlayNode {
        OverlayNode {
            name: name.to_string(),
            tcp,
            cc,
            policy,
            peers: plans
                .into_iter()
                .map(|plan| Peer {
                    plan,
                    node: u32::MAX,
                    primary: None,
                    secondary: None,
                    inc_secondaries: VecDeque::new(),
                    written: 0,
                    out_on_secondary: false,
                    header_pending: None,
                    received: 0,
                    goodput: Binned::new(Dur::SECOND),
                    corrupt: 0,
                    inc_on_secondary: false,
                    inc_switch_at: None,
                    header_buf: Vec::new(),
                    mon_written: 0,
                    mon_received: 0,
                    window: VecDeque::new(),
                    out_idle: Dur::ZERO,
                    in_idle: Dur::ZERO,
                })
                .collect(),
            events: Vec::new(),
            writer: pattern_writer(),
        }
    }

    /// Goodput (bit/s per 1 s bin, up to `end`) of the stream from `peer`.
    pub fn incoming_bps(&self, peer: &str, end: Time) -> Vec<f64> {
        self.peers
            .iter()
            .find(|p| p.plan.peer == peer)
            .map(|p| {
                let mut g = p.goodput.clone();
                g.pad_to(end);
                g.rates_bps()
            })
            .unwrap_or_default()
    }

    /// Bytes received from `peer`, in stream order.
    pub fn received_from(&self, peer: &str) -> u64 {
        self.peers
            .iter()
            .find(|p| p.plan.peer == peer)
            .map_or(0, |p| p.received)
    }

    /// Bytes that did not match the pattern at their stream offset.
    pub fn corrupt(&self) -> u64 {
        self.peers.iter().map(|p| p.corrupt).sum()
    }

    fn pair_name(&self, p: &Peer) -> String {
        if p.plan.decider {
            format!("{}-{}", self.name, p.plan.peer)
        } else {
            format!("{}-{}", p.plan.peer, self.name)
        }
    }

    /// The listening port on the follower for connections from the decider.
    fn port(decider_node: u32, secondary: bool) -> u16 {
        PORT_BASE + 10 * decider_node as u16 + secondary as u16
    }

    /// Writes the application's stream until about two windows wait unsent
    /// (as the simulator's bulk senders do).
    fn pump(&mut self, cx: &mut Cx<'_>, i: usize) {
        let now = cx.now();
        let p = &mut self.peers[i];
        if now < p.plan.start || now >= p.plan.stop {
            return;
        }
        let sock = if p.out_on_secondary {
            // After a split, the stream waits until the secondary is up.
            match (p.secondary, p.header_pending) {
                (Some(s), None) => s,
                _ => return,
            }
        } else {
            match p.primary {
                Some(s) => s,
                None => return,
            }
        };
        let Some(c) = cx.conn(sock) else { return };
        if !matches!(c.state(), State::Established | State::CloseWait) {
            return;
        }
        let unsent = c.send_buffered().saturating_sub(c.outstanding());
        let target = (2 * c.cwnd()).max(64 << 10);
        let mut want = target.saturating_sub(unsent);
        while want > 0 {
            let off = (p.written % PATTERN_LEN as u64) as usize;
            let n = (want as usize).min(PATTERN_LEN - off);
            let took = (self.writer)(cx, sock, p.written, n) as u64;
            p.written += took;
            want -= took.min(want);
            if took < n as u64 {
                break;
            }
        }
    }

    /// Reads the incoming stream in order from whichever connection carries
    /// it now.
    fn drain(&mut self, cx: &mut Cx<'_>, i: usize) {
        let now = cx.now();
        let p = &mut self.peers[i];
        loop {
            // The front secondary's header (read as soon as it arrives).
            if let (Some(&s), None) = (p.inc_secondaries.front(), p.inc_switch_at) {
                while p.header_buf.len() < HEADER {
                    match cx.recv(s, HEADER - p.header_buf.len()) {
                        Some(b) => p.header_buf.extend_from_slice(&b),
                        None => break,
                    }
                }
                if p.header_buf.len() == HEADER {
                    let mut h = [0u8; HEADER];
                    h.copy_from_slice(&p.header_buf);
                    p.inc_switch_at = Some(u64::from_le_bytes(h));
                    p.header_buf.clear();
                }
            }
            let (sock, max) = if p.inc_on_secondary {
                (
                    *p.inc_secondaries.front().expect("reading a secondary"),
                    usize::MAX,
                )
            } else {
                let Some(s) = p.primary else { return };
                match p.inc_switch_at {
                    Some(at) if p.received >= at => {
                        p.inc_on_secondary = true;
                        continue;
                    }
                    Some(at) => (s, (at - p.received) as usize),
                    None => (s, usize::MAX),
                }
            };
            match cx.recv(sock, max) {
                Some(b) => {
                    p.corrupt += count_corrupt(p.received, &b);
                    p.received += b.len() as u64;
                    p.goodput.add(now, b.len() as u64);
                }
                None if p.inc_on_secondary && cx.conn(sock).is_none_or(|c| c.recv_finished()) => {
                    // The secondary ended (merge): back to the primary.
                    p.inc_on_secondary = false;
                    p.inc_switch_at = None;
                    p.inc_secondaries.pop_front();
                    if cx.conn(sock).is_some_and(|c| c.state() == State::CloseWait) {
                        cx.close(sock);
                    }
                }
                None => return,
            }
        }
    }

    fn peer_of_sock(&self, sock: Sock) -> Option<usize> {
        self.peers.iter().position(|p| {
            p.primary == Some(sock)
                || p.secondary == Some(sock)
                || p.inc_secondaries.contains(&sock)
        })
    }

    /// The decider's periodic look at its traffic.
    fn check(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now();
        let dt = self.policy.check_interval;
        let thr = self.policy.threshold_bps * dt.as_secs_f64() / 8.0;
        for i in 0..self.peers.len() {
            let p = &mut self.peers[i];
            if !p.plan.decider || p.primary.is_none() {
                continue;
            }
            let sent = p.written - p.mon_written;
            let got = p.received - p.mon_received;
            p.mon_written = p.written;
            p.mon_received = p.received;
            p.out_idle = if sent == 0 {
                p.out_idle + dt
            } else {
                Dur::ZERO
            };
            p.in_idle = if got == 0 { p.in_idle + dt } else { Dur::ZERO };
            let n = self.policy.sustain.max(1) as usize;
            p.window.push_back((sent, got));
            while p.window.len() > n {
                p.window.pop_front();
            }
            let (w_out, w_in) = p
                .window
                .iter()
                .fold((0, 0), |a, &(o, i)| (a.0 + o, a.1 + i));
            let both = p.window.len() == n
                && w_out as f64 >= thr * n as f64
                && w_in as f64 >= thr * n as f64;
            let rate = |b: u64| b as f64 * 8.0 / (dt.as_secs_f64() * n as f64) / 1e6;
            if p.secondary.is_none() && !self.policy.never_split && both {
                // Split: a second connection for our outgoing stream.
                let pc = p.plan.peer.clone();
                let to = cx.node_id(&pc).expect("peer node exists");
                let me = cx.node();
                let s = cx
                    .connect(to, Self::port(me.raw(), true), self.tcp.clone(), &self.cc)
                    .expect("the neighbour listens");
                let p = &mut self.peers[i];
                p.secondary = Some(s);
                p.header_pending = Some(p.written);
                p.out_on_secondary = true;
                p.window.clear();
                let reason = format!(
                    "both directions ≥ {:.2} Mbit/s over the last {} s (written {:.2}, received {:.2} Mbit/s)",
                    self.policy.threshold_bps / 1e6,
                    n as f64 * dt.as_secs_f64(),
                    rate(w_out),
                    rate(w_in)
                );
                let pair = self.pair_name(&self.peers[i]);
                self.events.push(PolicyEvent {
                    t: now.as_secs_f64(),
                    pair,
                    kind: PolicyEventKind::Split,
                    reason,
                });
            } else if let Some(s) = p.secondary {
                let idle = self.policy.idle;
                let connected = p.header_pending.is_none();
                if connected && (p.out_idle >= idle || p.in_idle >= idle) {
                    // Merge: close the secondary; our stream returns to the primary.
                    let reason = if p.out_idle >= idle {
                        format!("our direction idle for {:.0} s", p.out_idle.as_secs_f64())
                    } else {
                        format!("peer's direction idle for {:.0} s", p.in_idle.as_secs_f64())
                    };
                    p.out_on_secondary = false;
                    p.secondary = None;
                    p.window.clear();
                    cx.close(s);
                    let pair = self.pair_name(&self.peers[i]);
                    self.events.push(PolicyEvent {
                        t: now.as_secs_f64(),
                        pair,
                        kind: PolicyEventKind::Merge,
                        reason,
                    });
                    self.pump(cx, i);
                }
            }
        }
    }
}

impl Agent for OverlayNode {
    fn start(&mut self, cx: &mut Cx<'_>) {
        for i in 0..self.peers.len() {
            let node = cx
                .node_id(&self.peers[i].plan.peer)
                .expect("peer node exists");
            let node = node.raw();
            self.peers[i].node = node;
            if !self.peers[i].plan.decider {
                for secondary in [false, true] {
                    cx.listen(
                        Self::port(node, secondary),
                        self.tcp.clone(),
                        self.cc.clone(),
                    )
                    .expect("port free");
                }
            }
            let at = self.peers[i].plan.start;
            cx.set_timer(at, TOKEN_START + i as u64);
        }
        cx.set_timer(cx.now() + PUMP_EVERY, TOKEN_PUMP);
        cx.set_timer(cx.now() + self.policy.check_interval, TOKEN_CHECK);
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        if ev == SockEvent::Accepted {
            // Which neighbour, and which role: the listening port says.
            let Some(port) = cx.conn(sock).map(|c| c.local_port()) else {
                return;
            };
            for p in &mut self.peers {
                if p.plan.decider {
                    continue;
                }
                if port == Self::port(p.node, false) {
                    p.primary = Some(sock);
                } else if port == Self::port(p.node, true) {
                    p.inc_secondaries.push_back(sock);
                }
            }
        }
        let Some(i) = self.peer_of_sock(sock) else {
            return;
        };
        match ev {
            SockEvent::Connected => {
                let p = &mut self.peers[i];
                if p.secondary == Some(sock) {
                    if let Some(at) = p.header_pending.take() {
                        let n = cx.send(sock, at.to_le_bytes().to_vec().into());
                        debug_assert_eq!(n, HEADER);
                    }
                }
                self.pump(cx, i);
            }
            SockEvent::Accepted | SockEvent::Writable => self.pump(cx, i),
            SockEvent::Readable | SockEvent::PeerClosed => self.drain(cx, i),
            SockEvent::Closed | SockEvent::Reset | SockEvent::TimedOut => {
                let p = &mut self.peers[i];
                if p.primary == Some(sock) {
                    p.primary = None;
                }
            }
        }
    }

    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        match token {
            TOKEN_PUMP => {
                for i in 0..self.peers.len() {
                    self.pump(cx, i);
                }
                cx.set_timer(cx.now() + PUMP_EVERY, TOKEN_PUMP);
            }
            TOKEN_CHECK => {
                self.check(cx);
                cx.set_timer(cx.now() + self.policy.check_interval, TOKEN_CHECK);
            }
            t if t >= TOKEN_START => {
                let i = (t - TOKEN_START) as usize;
                let p = &self.peers[i];
                if p.plan.decider && p.primary.is_none() {
                    let to = NodeId::from_raw(p.node);
                    let me = cx.node();
                    let s = cx
                        .connect(to, Self::port(me.raw(), false), self.tcp.clone(), &self.cc)
                        .expect("the neighbour listens");
                    self.peers[i].primary = Some(s);
                }
                self.pump(cx, i);
            }
            _ => {}
        }
    }
}
