//! The circuit and stream node: client, forwarding relay and exit in one
//! state machine around a BackTap endpoint.
//!
//! Driving contract (as for every sans-IO endpoint here):
//!
//! 1. input: [`Node::handle_frame`] for every frame a link delivers,
//!    [`Node::link_up`] / [`Node::link_down`] for link changes,
//!    [`Node::handle_timeout`] once [`Node::poll_timeout`] has passed;
//! 2. application: the client and stream calls (`build_circuit`,
//!    `open_stream`, `stream_write`, `stream_read`, ...);
//! 3. output: [`Node::poll_frame`] until `None` (frames for links), then
//!    [`Node::poll_event`] until `None`; re-read [`Node::poll_timeout`].

use super::cell::{self, EndReason, RelayMsg};
use super::control::{self, CtlMsg, DestroyReason, Frame, Identity, MAX_HOPS};
use super::onion::{ClientCrypto, ClientHandshake, HopCrypto, KeySource, ReplayCache};
use super::LinkId;
use crate::backtap::wire::{CellBody, CELL_BODY_LEN, CELL_DATA_LEN};
use crate::backtap::{self, CircuitId, Direction, Endpoint, Event, PeerId};
use crate::time::{Dur, Time};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;

mod streams;
mod telescope;

use streams::Edge;

/// Settings of a node.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// This node's identity (its link static public key), which is also
    /// its onion key: the key of the circuit handshake.
    pub identity: Identity,
    /// The private half of `identity` (X25519), for the circuit handshake.
    pub secret: [u8; 32],
    /// Identities of the relays in the directory: `LinkId(i)` is entry `i`.
    pub directory: Vec<Identity>,
    /// The transport's settings (token bucket, per-circuit queue limit, ...).
    pub backtap: backtap::Config,
    /// Whether this node may be the last hop of a circuit and open streams.
    pub exit: bool,
    /// Circuits this node carries at most; more CREATEs are refused.
    pub max_circuits: usize,
    /// Circuits one client link (a peer not in the directory) may have at
    /// this node at once; its further CREATEs are refused, so that one
    /// client cannot take all of `max_circuits`. Links to relays in the
    /// directory carry many clients' circuits and are not capped.
    pub max_circuits_per_client: usize,
    /// Streams per circuit at most.
    pub max_streams: usize,
    /// Bytes a stream's receiver lets its sender have outstanding (announced
    /// in BEGIN and CONNECTED); bounds what a node buffers per stream.
    pub stream_window: u32,
    /// Bytes of application data a stream buffers before packaging.
    pub stream_send_buffer: usize,
    /// A circuit that is not built after this long is torn down.
    pub build_timeout: Dur,
    /// First retransmission timeout of control messages (doubles to `ctl_max_rto`).
    pub ctl_rto: Dur,
    pub ctl_max_rto: Dur,
    /// Cells all circuits together may hold in their BackTap queues. Above
    /// it, circuits are torn down largest first (`ResourceLimit`) until the
    /// rest fit, like Tor's out-of-memory handler for `MaxMemInQueues`;
    /// checked at most every [`SHED_INTERVAL`], when datagrams arrive or
    /// timers fire.
    pub max_queued_cells: usize,
    /// Bytes all streams at this node's edges may buffer together (data
    /// received and not yet read by the application, plus data written and
    /// not yet packaged). Above it, streams are reset largest first
    /// (`EndReason::ResourceLimit`) until the rest fit; checked at most
    /// every [`SHED_INTERVAL`], like `max_queued_cells`.
    pub max_stream_bytes: usize,
    /// How long a relay remembers the client keys of the handshakes it
    /// answered, and refuses them again (replayed CREATEs).
    pub replay_window: Dur,
    /// Handshakes remembered at most; beyond it the oldest are forgotten.
    pub replay_capacity: usize,
}

impl NodeConfig {
    /// A node with identity `identity` (the X25519 public key of `secret`)
    /// and default limits.
    pub fn new(identity: Identity, secret: [u8; 32], directory: Vec<Identity>) -> NodeConfig {
        NodeConfig {
            identity,
            secret,
            directory,
            backtap: backtap::Config::default(),
            exit: false,
            max_circuits: 10_000,
            max_circuits_per_client: 1000,
            max_streams: 1024,
            stream_window: 1 << 20,
            stream_send_buffer: 256 * 1024,
            build_timeout: Dur::from_secs(30),
            ctl_rto: Dur::from_millis(250),
            ctl_max_rto: Dur::from_secs(4),
            max_queued_cells: 1 << 20,
            max_stream_bytes: 512 << 20,
            replay_window: Dur::from_secs(3600),
            replay_capacity: 1 << 18,
        }
    }
}

/// What a node's circuit layer handles, shown to an observer
/// ([`Node::set_observer`]): audits and tests that check what a relay can
/// see.
#[derive(Clone, Copy, Debug)]
pub enum Observed<'a> {
    /// A frame a link delivered (after the link's decryption).
    FrameIn { link: LinkId, frame: &'a [u8] },
    /// A frame for a link (before the link's encryption).
    FrameOut { link: LinkId, frame: &'a [u8] },
    /// A relay cell this node read once its onion layers were removed (at
    /// an edge, or an EXTEND or EXTENDED addressed to this node).
    CellOpened {
        circuit: CircuitId,
        body: &'a CellBody,
    },
    /// A relay cell this node wrote, before its onion layers were added.
    CellSealed {
        circuit: CircuitId,
        body: &'a CellBody,
    },
}

/// A callback for [`Observed`] events.
pub type Observer = Box<dyn FnMut(Observed<'_>) + Send>;

/// A stream: its circuit and its id on that circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamKey {
    pub circuit: CircuitId,
    pub id: u16,
}

impl fmt::Display for StreamKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.circuit.0, self.id)
    }
}

/// What a node's application (the daemon) should know about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A circuit this node built is ready for streams.
    CircuitReady(CircuitId),
    /// A circuit this node built failed or was torn down; its streams were
    /// reset (each also gets [`NodeEvent::StreamReset`]).
    CircuitClosed {
        circuit: CircuitId,
        reason: DestroyReason,
    },
    /// Exit: a client asks for a TCP connection. Answer with
    /// [`Node::stream_connected`] or [`Node::stream_refuse`].
    StreamBegin {
        stream: StreamKey,
        host: String,
        port: u16,
    },
    /// Client: the exit connected the stream.
    StreamConnected(StreamKey),
    /// Data or the end of the stream can be read ([`Node::stream_read`]).
    StreamReadable(StreamKey),
    /// The stream's send buffer has room again.
    StreamWritable(StreamKey),
    /// The stream is gone: reset by the peer, refused, or its circuit closed.
    StreamReset {
        stream: StreamKey,
        reason: EndReason,
    },
}

/// What [`Node::stream_read`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    Data(usize),
    /// The peer finished sending (TCP FIN) and every byte was read.
    Eof,
    /// Nothing now; a [`NodeEvent::StreamReadable`] follows when there is.
    WouldBlock,
}

/// A stream call that could not be carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamError {
    UnknownCircuit,
    /// The circuit is still being built.
    NotReady,
    UnknownStream,
    TooManyStreams,
    /// Host name empty or longer than 255 bytes.
    BadTarget,
    /// The stream was shut down for writing.
    Closed,
    /// Not connected yet.
    NotOpen,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            StreamError::UnknownCircuit => "no such circuit",
            StreamError::NotReady => "circuit not built yet",
            StreamError::UnknownStream => "no such stream",
            StreamError::TooManyStreams => "too many streams on the circuit",
            StreamError::BadTarget => "host name empty or too long",
            StreamError::Closed => "stream shut down",
            StreamError::NotOpen => "stream not connected",
        };
        f.write_str(s)
    }
}
impl std::error::Error for StreamError {}

/// Why [`Node::build_circuit`] refused a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuildError {
    EmptyPath,
    TooLong,
    /// Hop `i` of the path is not in the directory (or is this node).
    UnknownRelay(usize),
    TooManyCircuits,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::EmptyPath => write!(f, "empty path"),
            BuildError::TooLong => write!(f, "path longer than {} relays", MAX_HOPS + 1),
            BuildError::UnknownRelay(i) => {
                write!(f, "hop {i} of the path is not a relay of the directory")
            }
            BuildError::TooManyCircuits => write!(f, "too many circuits"),
        }
    }
}
impl std::error::Error for BuildError {}

/// The part a node plays in a circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Client,
    Relay,
    Exit,
}

/// Counters of a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub circuits_built: u64,
    pub circuits_extended: u64,
    pub circuits_exited: u64,
    pub circuits_destroyed: u64,
    pub creates_refused: u64,
    pub build_timeouts: u64,
    pub ctl_in: u64,
    pub ctl_out: u64,
    pub ctl_retransmits: u64,
    /// Control messages out of order or repeated (dropped, re-acknowledged).
    pub ctl_duplicates: u64,
    /// Frames, control messages or relay cells that broke the protocol.
    pub protocol_errors: u64,
    /// BackTap datagrams the codec rejected.
    pub backtap_decode_errors: u64,
    pub streams_opened: u64,
    pub streams_reset: u64,
    /// Relay cells for streams that do not exist (normal after a reset).
    pub unknown_stream_cells: u64,
    pub data_cells_in: u64,
    pub data_cells_out: u64,
    /// Circuits torn down because all queues together held more than
    /// `max_queued_cells`.
    pub circuits_shed: u64,
    /// Streams reset because all streams together buffered more than
    /// `max_stream_bytes`.
    pub streams_shed: u64,
    /// CREATEs this relay answered (it became the circuit's last hop).
    pub circuits_created: u64,
    /// Handshakes that failed: a CREATE for another relay or with a weak
    /// key, a CREATED or EXTENDED whose authentication did not verify.
    pub handshake_failures: u64,
    /// CREATEs refused because their client key was seen before (replays).
    pub handshake_replays: u64,
    /// Relay cells no onion layer recognized where one had to (a cell
    /// changed on the way, or not meant for this circuit): the circuit is
    /// torn down.
    pub cells_unrecognized: u64,
    /// BEGINs refused because this node is not an exit (END EXITPOLICY).
    pub streams_refused_not_exit: u64,
    /// BEGINs refused because the circuit had `max_streams` streams (END
    /// RESOURCELIMIT).
    pub streams_refused_limit: u64,
}

// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CircState {
    Building { deadline: Time },
    Open,
}

struct Circ {
    role: Role,
    prev: Option<(LinkId, u32)>,
    next: Option<(LinkId, u32)>,
    state: CircState,
    edge: Option<Edge>,
    onion: Onion,
    /// RELAY control messages this circuit carried (bounded).
    relay_ctl: u32,
}

/// A circuit's onion keys at this node.
#[allow(clippy::large_enum_variant)]
enum Onion {
    /// Client: one layer per hop built so far, the path, and the handshake
    /// of the hop being added.
    Client {
        crypto: ClientCrypto,
        path: Vec<Identity>,
        pending: Option<ClientHandshake>,
    },
    /// The last hop (exit, or a relay about to extend): its own layers and
    /// digests.
    Hop(HopCrypto),
    /// A forwarding relay: its layers are in the BackTap queues.
    Forwarding,
}

impl Onion {
    /// Seals a cell this edge packages on circuit `c`, shown to `observer`
    /// first: the client adds every hop's layer (the cell is for the last
    /// hop), the exit its own.
    fn seal(&mut self, c: CircuitId, body: &mut CellBody, observer: &mut Option<Observer>) {
        if let Some(o) = observer.as_mut() {
            o(Observed::CellSealed { circuit: c, body });
        }
        match self {
            Onion::Client { crypto, .. } => {
                let last = crypto.len().saturating_sub(1);
                crypto.encrypt_forward(last, body);
            }
            Onion::Hop(h) => h.originate_backward(body),
            Onion::Forwarding => {}
        }
    }
}

struct LinkState {
    peer: PeerId,
    key: Option<Identity>,
    next_circ: u32,
    tx_seq: u32,
    unacked: VecDeque<(u32, Vec<u8>)>,
    rto: Dur,
    rto_at: Option<Time>,
    rx_next: u32,
    ack_owed: bool,
    circuits: BTreeSet<CircuitId>,
}

/// Control messages a link keeps unacknowledged at most; beyond it new
/// messages are dropped (and counted as protocol errors).
const MAX_UNACKED: usize = 4096;
/// A client link with this many of our control messages unacknowledged
/// gets its CREATEs ignored (counted as protocol errors): a client that
/// does not acknowledge cannot make the relay hold answers for it without
/// bound (it holds at most this many plus one DESTROY per circuit).
const MAX_UNACKED_CLIENT_CREATE: usize = 512;
/// Control messages resent per retransmission timeout at most.
const RETX_BURST: usize = 64;
/// How often at most the queues are measured against `max_queued_cells`.
pub const SHED_INTERVAL: Dur = Dur::from_millis(100);
const HIGH_BIT: u32 = 0x8000_0000;

/// A circuit and stream node. See the module documentation for the driving
/// contract and `docs/relay.md` for the protocol.
pub struct Node {
    cfg: NodeConfig,
    ep: Endpoint,
    links: HashMap<LinkId, LinkState>,
    peer_link: Vec<LinkId>,
    circs: BTreeMap<CircuitId, Circ>,
    legs: HashMap<(LinkId, u32), CircuitId>,
    events: VecDeque<NodeEvent>,
    out: VecDeque<(LinkId, Vec<u8>)>,
    acks: BTreeSet<LinkId>,
    dirty: BTreeSet<CircuitId>,
    next_check: Option<Time>,
    /// When the queues may next be measured against `max_queued_cells`.
    shed_at: Time,
    stats: NodeStats,
    cell: Box<CellBody>,
    /// Ephemeral keys of the circuit handshakes.
    keys: Box<dyn KeySource + Send>,
    replays: ReplayCache,
    observer: Option<Observer>,
}

/// The circuits (or streams) to tear down so that `total` cells (or bytes)
/// fit in `max`: from `(amount held, id)`, the largest first (among equals
/// the newest), until the rest fit.
fn pick_shed<K: Ord + Copy>(mut held: Vec<(usize, K)>, mut total: usize, max: usize) -> Vec<K> {
    held.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = Vec::new();
    for (n, c) in held {
        if total <= max {
            break;
        }
        total -= n.min(total);
        out.push(c);
    }
    out
}

#[cfg(test)]
#[test]
fn pick_shed_takes_the_largest_until_the_rest_fit() {
    let c = CircuitId;
    let held = vec![(50, c(1)), (300, c(2)), (120, c(3)), (120, c(4)), (0, c(5))];
    // 590 held: shedding 300 leaves 290, still above 200; then 120 (the
    // newer of the two) leaves 170.
    assert_eq!(pick_shed(held.clone(), 590, 200), vec![c(2), c(4)]);
    assert_eq!(pick_shed(held.clone(), 590, 290), vec![c(2)]);
    assert_eq!(pick_shed(held.clone(), 590, 590), vec![]);
    assert_eq!(pick_shed(held, 590, 0), vec![c(2), c(4), c(3), c(1)]);
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("circuits", &self.circs.len())
            .field("links", &self.links.len())
            .finish_non_exhaustive()
    }
}

impl Node {
    /// A node; `keys` supplies the ephemeral keys of its circuit handshakes
    /// (the operating system's random source in the daemon, a seeded one in
    /// simulations and tests).
    pub fn new(cfg: NodeConfig, keys: Box<dyn KeySource + Send>) -> Node {
        let ep = Endpoint::new(cfg.backtap.clone());
        let replays = ReplayCache::new(cfg.replay_capacity, cfg.replay_window);
        Node {
            cfg,
            ep,
            links: HashMap::new(),
            peer_link: Vec::new(),
            circs: BTreeMap::new(),
            legs: HashMap::new(),
            events: VecDeque::new(),
            out: VecDeque::new(),
            acks: BTreeSet::new(),
            dirty: BTreeSet::new(),
            next_check: None,
            shed_at: Time::ZERO,
            stats: NodeStats::default(),
            cell: Box::new([0u8; CELL_BODY_LEN]),
            keys,
            replays,
            observer: None,
        }
    }

    /// Replaces the relay's token bucket ([`Endpoint::set_bucket`]): a
    /// bandwidth change that keeps every circuit.
    pub fn set_bandwidth(&mut self, bucket: Option<crate::backtap::BucketConfig>) {
        self.cfg.backtap.bucket = bucket;
        self.ep.set_bucket(bucket);
    }

    /// Shows every frame and every relay cell this node handles to `o`.
    pub fn set_observer(&mut self, o: Observer) {
        self.observer = Some(o);
    }

    fn observe(&mut self, what: Observed<'_>) {
        if let Some(o) = self.observer.as_mut() {
            o(what);
        }
    }

    pub fn config(&self) -> &NodeConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &NodeStats {
        &self.stats
    }
    /// The BackTap endpoint (for its statistics).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }
    /// Circuits at this node and the part it plays in each.
    pub fn circuits(&self) -> impl Iterator<Item = (CircuitId, Role)> + '_ {
        self.circs.iter().map(|(&c, x)| (c, x.role))
    }
    pub fn circuit_count(&self) -> usize {
        self.circs.len()
    }
    /// Streams open at edges of this node.
    pub fn stream_count(&self) -> usize {
        self.circs
            .values()
            .filter_map(|c| c.edge.as_ref())
            .map(|e| e.streams.len())
            .sum()
    }
    /// Whether a circuit exists and is built.
    pub fn circuit_ready(&self, c: CircuitId) -> bool {
        self.circs
            .get(&c)
            .is_some_and(|x| x.state == CircState::Open)
    }

    /// The link carrying the relay with `identity`, if it is in the directory.
    pub fn link_of(&self, identity: &Identity) -> Option<LinkId> {
        if *identity == self.cfg.identity {
            return None;
        }
        self.cfg
            .directory
            .iter()
            .position(|k| k == identity)
            .map(|i| LinkId(i as u32))
    }

    /// Whether `l` is a client's link (ids past the directory's relays).
    fn is_client(&self, l: LinkId) -> bool {
        l.0 as usize >= self.cfg.directory.len()
    }

    fn link(&mut self, l: LinkId) -> &mut LinkState {
        let ctl_rto = self.cfg.ctl_rto;
        let dir_key = self.cfg.directory.get(l.0 as usize).copied();
        let ep = &mut self.ep;
        let peer_link = &mut self.peer_link;
        self.links.entry(l).or_insert_with(|| {
            let peer = ep.add_peer(l.0 as u64);
            debug_assert_eq!(peer.0 as usize, peer_link.len());
            peer_link.push(l);
            LinkState {
                peer,
                key: dir_key,
                next_circ: 1,
                tx_seq: 0,
                unacked: VecDeque::new(),
                rto: ctl_rto,
                rto_at: None,
                rx_next: 0,
                ack_owed: false,
                circuits: BTreeSet::new(),
            }
        })
    }

    /// Whether circuit ids this node picks on link `l` have the top bit set:
    /// the side with the smaller identity takes the upper half, so ids two
    /// neighbours pick never collide.
    fn high_bit(&self, l: LinkId) -> Option<bool> {
        let key = self
            .links
            .get(&l)
            .and_then(|s| s.key)
            .or_else(|| self.cfg.directory.get(l.0 as usize).copied())?;
        Some(self.cfg.identity < key)
    }

    fn pick_circ_id(&mut self, l: LinkId) -> u32 {
        let high = self.high_bit(l).unwrap_or(false);
        loop {
            let st = self.link(l);
            let n = st.next_circ & !HIGH_BIT;
            st.next_circ = if n >= HIGH_BIT - 1 { 1 } else { n + 1 };
            let id = if high { n | HIGH_BIT } else { n };
            if !self.legs.contains_key(&(l, id)) {
                return id;
            }
        }
    }

    fn wake_at(&mut self, t: Time) {
        if self.next_check.is_none_or(|n| t < n) {
            self.next_check = Some(t);
        }
    }

    // ------------------------------------------------------------------
    // Links

    /// A link is authenticated: `key` is the peer's static key. Call before
    /// delivering its frames.
    pub fn link_up(&mut self, l: LinkId, key: Identity) {
        self.link(l).key = Some(key);
    }

    /// A link went down or its session was replaced (the peer restarted):
    /// every circuit over it is torn down, its control channel starts
    /// afresh, and what BackTap learnt about the path is forgotten. A client
    /// link's id may come back as a different client (`LinkId`), so its key
    /// is forgotten too.
    pub fn link_down(&mut self, now: Time, l: LinkId) {
        self.link_down_because(now, l, DestroyReason::LinkFailed);
    }

    /// Link `l` went down for a known `reason` (the peer closed it): its
    /// circuits are torn down with that reason.
    pub fn link_down_because(&mut self, now: Time, l: LinkId, reason: DestroyReason) {
        let client = self.is_client(l);
        let Some(st) = self.links.get_mut(&l) else {
            return;
        };
        let circs: Vec<CircuitId> = st.circuits.iter().copied().collect();
        let peer = st.peer;
        if client {
            st.key = None;
        }
        st.tx_seq = 0;
        st.unacked.clear();
        st.rto = self.cfg.ctl_rto;
        st.rto_at = None;
        st.rx_next = 0;
        st.ack_owed = false;
        self.acks.remove(&l);
        self.out.retain(|(x, _)| *x != l);
        for c in circs {
            self.teardown(now, c, reason, Some(l));
        }
        self.ep.reset_peer(peer);
    }

    // ------------------------------------------------------------------
    // Input

    /// A frame arrived on link `l`. Malformed frames are counted and dropped.
    pub fn handle_frame(&mut self, now: Time, l: LinkId, frame: &[u8]) {
        self.observe(Observed::FrameIn { link: l, frame });
        let f = match control::decode_frame(frame) {
            Ok(f) => f,
            Err(_) => {
                self.stats.protocol_errors += 1;
                return;
            }
        };
        match f {
            Frame::BackTap(d) => {
                let peer = self.link(l).peer;
                if self.ep.handle_datagram(now, peer, d).is_err() {
                    self.stats.backtap_decode_errors += 1;
                }
                self.process_events(now);
                self.shed(now);
            }
            Frame::CtlAck { next } => {
                let rto0 = self.cfg.ctl_rto;
                let st = self.link(l);
                let mut progress = false;
                while st
                    .unacked
                    .front()
                    .is_some_and(|&(s, _)| s.wrapping_sub(next) > u32::MAX / 2)
                {
                    st.unacked.pop_front();
                    progress = true;
                }
                if progress {
                    st.rto = rto0;
                    st.rto_at = if st.unacked.is_empty() {
                        None
                    } else {
                        Some(now + rto0)
                    };
                    if let Some(t) = st.rto_at {
                        self.wake_at(t);
                    }
                }
            }
            Frame::Ctl { seq, msg } => {
                let st = self.link(l);
                st.ack_owed = true;
                self.acks.insert(l);
                let st = self.link(l);
                if seq != st.rx_next {
                    self.stats.ctl_duplicates += 1;
                    return;
                }
                st.rx_next = st.rx_next.wrapping_add(1);
                self.stats.ctl_in += 1;
                self.on_ctl(now, l, msg);
            }
        }
    }

    fn send_ctl(&mut self, now: Time, l: LinkId, msg: CtlMsg) {
        let st = self.link(l);
        if st.unacked.len() >= MAX_UNACKED {
            self.stats.protocol_errors += 1;
            return;
        }
        let seq = st.tx_seq;
        st.tx_seq = st.tx_seq.wrapping_add(1);
        let frame = control::encode_ctl(seq, &msg);
        st.unacked.push_back((seq, frame.clone()));
        let mut wake = None;
        if st.rto_at.is_none() {
            st.rto_at = Some(now + st.rto);
            wake = st.rto_at;
        }
        self.out.push_back((l, frame));
        self.stats.ctl_out += 1;
        if let Some(t) = wake {
            self.wake_at(t);
        }
    }

    fn refuse(&mut self, now: Time, l: LinkId, circ_id: u32, reason: DestroyReason) {
        self.stats.creates_refused += 1;
        self.send_ctl(now, l, CtlMsg::Destroy { circ_id, reason });
    }

    fn on_ctl(&mut self, now: Time, l: LinkId, msg: CtlMsg) {
        match msg {
            CtlMsg::Create {
                circ_id,
                htype,
                onionskin,
            } => self.on_create(now, l, circ_id, htype, &onionskin),
            CtlMsg::Created { circ_id, reply } => self.on_created(now, l, circ_id, &reply),
            CtlMsg::Destroy { circ_id, reason } => {
                if let Some(&c) = self.legs.get(&(l, circ_id)) {
                    self.teardown(now, c, reason, Some(l));
                }
            }
            CtlMsg::Relay { circ_id, mut body } => self.on_relay_ctl(now, l, circ_id, &mut body),
        }
    }

    fn install(&mut self, c: CircuitId, circ: Circ) {
        for (l, id) in [circ.prev, circ.next].into_iter().flatten() {
            self.legs.insert((l, id), c);
            self.link(l).circuits.insert(c);
        }
        self.circs.insert(c, circ);
    }

    /// Removes a circuit, tells the other legs (all but `from`) and the
    /// application.
    fn teardown(&mut self, now: Time, c: CircuitId, reason: DestroyReason, from: Option<LinkId>) {
        let Some(circ) = self.circs.remove(&c) else {
            return;
        };
        self.stats.circuits_destroyed += 1;
        self.ep.remove_circuit(c);
        self.dirty.remove(&c);
        for (l, id) in [circ.prev, circ.next].into_iter().flatten() {
            self.legs.remove(&(l, id));
            if let Some(st) = self.links.get_mut(&l) {
                st.circuits.remove(&c);
            }
            if Some(l) != from {
                self.send_ctl(
                    now,
                    l,
                    CtlMsg::Destroy {
                        circ_id: id,
                        reason,
                    },
                );
            }
        }
        if let Some(edge) = circ.edge {
            for &id in edge.streams.keys() {
                self.stats.streams_reset += 1;
                self.events.push_back(NodeEvent::StreamReset {
                    stream: StreamKey { circuit: c, id },
                    reason: EndReason::Destroy,
                });
            }
        }
        if circ.role == Role::Client {
            self.events
                .push_back(NodeEvent::CircuitClosed { circuit: c, reason });
        }
    }

    /// Tears circuits down, those holding the most cells first, while all
    /// queues together hold more than `max_queued_cells`, and resets
    /// streams, those buffering the most first, while all streams together
    /// buffer more than `max_stream_bytes`. Runs after datagrams and on
    /// timers, at most every [`SHED_INTERVAL`]. The cell total is a running
    /// count, and only a total over the cap makes it look at every circuit;
    /// the stream total is a walk over the streams (no allocation unless it
    /// is over the cap).
    fn shed(&mut self, now: Time) {
        if now < self.shed_at {
            return;
        }
        self.shed_at = now + SHED_INTERVAL;
        let total = self.ep.total_held();
        if total > self.cfg.max_queued_cells {
            let held: Vec<(usize, CircuitId)> = self.ep.held_cells().map(|(c, n)| (n, c)).collect();
            for c in pick_shed(held, total, self.cfg.max_queued_cells) {
                if self.circs.contains_key(&c) {
                    self.stats.circuits_shed += 1;
                    self.teardown(now, c, DestroyReason::ResourceLimit, None);
                }
            }
        }
        let total = self.stream_buffered();
        if total > self.cfg.max_stream_bytes {
            let buffered: Vec<(usize, StreamKey)> = self.stream_buffers().collect();
            for k in pick_shed(buffered, total, self.cfg.max_stream_bytes) {
                if self.stream_reset(now, k, EndReason::ResourceLimit).is_ok() {
                    self.stats.streams_shed += 1;
                    self.events.push_back(NodeEvent::StreamReset {
                        stream: k,
                        reason: EndReason::ResourceLimit,
                    });
                }
            }
        }
    }

    /// Bytes each stream at this node's edges buffers (received and not
    /// read, written and not packaged), in stream order.
    fn stream_buffers(&self) -> impl Iterator<Item = (usize, StreamKey)> + '_ {
        self.circs.iter().flat_map(|(&circuit, circ)| {
            circ.edge.iter().flat_map(move |e| {
                e.streams.iter().map(move |(&id, s)| {
                    (
                        s.recv_buf.len() + s.send_buf.len(),
                        StreamKey { circuit, id },
                    )
                })
            })
        })
    }

    /// Bytes all streams at this node's edges buffer together.
    pub fn stream_buffered(&self) -> usize {
        self.stream_buffers().map(|b| b.0).sum()
    }

    /// Runs control retransmissions and circuit build timeouts.
    pub fn handle_timeout(&mut self, now: Time) {
        self.shed(now);
        if self.next_check.is_some_and(|t| t > now) {
            self.ep.handle_timeout(now);
            self.process_events(now);
            return;
        }
        self.next_check = None;
        let mut next: Option<Time> = None;
        let mut resend = Vec::new();
        let max_rto = self.cfg.ctl_max_rto;
        for (&l, st) in self.links.iter_mut() {
            if let Some(t) = st.rto_at {
                if t <= now {
                    for (_, f) in st.unacked.iter().take(RETX_BURST) {
                        resend.push((l, f.clone()));
                    }
                    st.rto = (st.rto + st.rto).min(max_rto);
                    st.rto_at = Some(now + st.rto);
                }
                let t = st.rto_at.expect("set");
                next = Some(next.map_or(t, |n: Time| n.min(t)));
            }
        }
        // Hash-map order must not leak into the output: sort by link.
        resend.sort_by_key(|(l, _)| *l);
        self.stats.ctl_retransmits += resend.len() as u64;
        self.out.extend(resend);
        let mut expired = Vec::new();
        for (&c, circ) in &self.circs {
            if let CircState::Building { deadline } = circ.state {
                if deadline <= now {
                    expired.push(c);
                } else {
                    next = Some(next.map_or(deadline, |n: Time| n.min(deadline)));
                }
            }
        }
        for c in expired {
            self.stats.build_timeouts += 1;
            self.teardown(now, c, DestroyReason::Timeout, None);
        }
        if let Some(t) = next {
            self.wake_at(t);
        }
        self.ep.handle_timeout(now);
        self.process_events(now);
    }

    /// Earliest time [`Node::handle_timeout`] should be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.next_check, self.ep.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next frame to send and its link. Call until `None`.
    pub fn poll_frame(&mut self, now: Time) -> Option<(LinkId, Vec<u8>)> {
        let (l, f) = self.next_frame(now)?;
        self.observe(Observed::FrameOut { link: l, frame: &f });
        Some((l, f))
    }

    fn next_frame(&mut self, now: Time) -> Option<(LinkId, Vec<u8>)> {
        loop {
            self.process_events(now);
            self.pump(now);
            if let Some(f) = self.out.pop_front() {
                return Some(f);
            }
            while let Some(l) = self.acks.pop_first() {
                if let Some(st) = self.links.get_mut(&l) {
                    if st.ack_owed {
                        st.ack_owed = false;
                        return Some((l, control::encode_ack(st.rx_next).to_vec()));
                    }
                }
            }
            if let Some((p, d)) = self.ep.poll_transmit(now) {
                let l = self.peer_link[p.0 as usize];
                return Some((l, d));
            }
            // Timers that fired inside poll_transmit may have raised events.
            self.process_events(now);
            if self.dirty.is_empty() && self.out.is_empty() && self.acks.is_empty() {
                return None;
            }
        }
    }

    pub fn poll_event(&mut self) -> Option<NodeEvent> {
        self.events.pop_front()
    }

    // ------------------------------------------------------------------
    // Client

    /// Tears a circuit down (DESTROY along it); its streams are reset.
    pub fn destroy_circuit(&mut self, now: Time, c: CircuitId, reason: DestroyReason) {
        self.teardown(now, c, reason, None);
    }

    /// Tears every circuit down (at shutdown).
    pub fn destroy_all(&mut self, now: Time, reason: DestroyReason) {
        let all: Vec<CircuitId> = self.circs.keys().copied().collect();
        for c in all {
            self.teardown(now, c, reason, None);
        }
    }
}
