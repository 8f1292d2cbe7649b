//! A BitTorrent peer for the simulator: the peer wire protocol of
//! `hopwise_proto::bittorrent` over simulated TCP, with the parts of the protocol
//! that shape a swarm's dynamics.
//!
//! * **Connections** (seed 003 §5): one control connection per neighbour
//!   pair (NewReno, both directions: handshake, bitfield, have,
//!   interested, choke, request, cancel), and per direction one data
//!   connection that the *uploader* opens with its own congestion
//!   control and that carries only `piece` messages. So a LEDBAT peer
//!   uploads with LEDBAT and its control traffic and the ACKs of its
//!   downloads share its uplink with its uploads.
//! * **Requests**: a pipeline of [`PeerConfig::pipeline`] outstanding
//!   16 KiB block requests per unchoking neighbour; strict priority to
//!   pieces already started, random first piece for the first four
//!   pieces, then rarest first with random tie-breaks; an end game that
//!   requests the last blocks from a second neighbour and cancels the
//!   duplicate (Cohen 2003, "Incentives build robustness in BitTorrent",
//!   §2.3).
//! * **Choking** (Cohen 2003 §3; Legout et al. 2006, "Rarest first and
//!   choke algorithms are enough", §II-C): every 10 s a leecher unchokes
//!   the [`PeerConfig::slots`] interested neighbours that sent it the most
//!   in the last 20 s, a seed those it sent the most to; one more
//!   optimistic unchoke rotates every 30 s. Requests a choke leaves
//!   unserved, and requests from a choked neighbour, are answered with
//!   BEP 6's `reject request`; blocks already written still arrive, so
//!   the requester keeps waiting for them rather than asking elsewhere.
//!
//! The peer learns its neighbours from the driver (the tracker): at start
//! and whenever the driver adds to [`Peer::announce`].

use bytes::Bytes;
use hopwise_proto::bittorrent::{self as bt, Event, Handshake, Msg, Reader, BLOCK};
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::{Dur, Time};
use hopwise_sim::packet::NodeId;
use hopwise_sim::{Agent, Cx, Sock, SockEvent};
use std::collections::{BTreeMap, VecDeque};

/// The control port (BitTorrent's customary first port).
pub const CTRL_PORT: u16 = 6881;
/// The data port: data connections are accepted here.
pub const DATA_PORT: u16 = 6882;
/// The torrent's info hash (one torrent per swarm).
pub const INFO_HASH: [u8; 20] = *b"hopwise-swarm-seed03";
/// Choking rounds (Cohen 2003 §3: "every ten seconds").
pub const RECHOKE: Dur = Dur::from_secs(10);
/// Optimistic unchoke rotation, in choking rounds (30 s).
pub const OPTIMISTIC_ROUNDS: u64 = 3;
/// Pieces fetched in random order before rarest first takes over.
pub const RANDOM_FIRST: usize = 4;

static ZEROS: [u8; BLOCK as usize] = [0; BLOCK as usize];

const TICK: u64 = 1;
const LEAVE: u64 = 2;

/// How long a peer stays once it has the whole file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stay {
    /// Never leaves (seed 003's "never leave").
    Forever,
    /// An exponential time with mean `frac` × its download time ("random
    /// stay": half).
    Random { frac: f64 },
    /// Leaves at once ("immediately leave").
    Leave,
}

/// One peer's settings.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    pub pieces: u32,
    /// Bytes per piece, a multiple of [`BLOCK`].
    pub piece_len: u32,
    /// The congestion control of this peer's uploads.
    pub data_cc: CcConfig,
    pub data_tcp: TcpConfig,
    pub ctrl_tcp: TcpConfig,
    /// Outstanding block requests per unchoking neighbour.
    pub pipeline: usize,
    /// Regular unchoke slots (one optimistic slot comes on top).
    pub slots: usize,
    /// Starts with the whole file.
    pub seed: bool,
    pub stay: Stay,
}

/// The state of one neighbour.
struct Nb {
    ctrl: Sock,
    /// Known from its handshake.
    node: Option<NodeId>,
    /// The node we dialled, if we opened the control connection (before
    /// its handshake names it).
    dialled: Option<NodeId>,
    reader: Reader,
    /// Control bytes the socket has not taken yet.
    out: VecDeque<u8>,
    has: Vec<bool>,
    has_count: usize,
    am_choking: bool,
    am_interested: bool,
    peer_choking: bool,
    peer_interested: bool,
    // Uploading to it.
    data_out: Option<Sock>,
    data_ready: bool,
    /// Requests accepted and not yet written (index, begin, len).
    queue: VecDeque<(u32, u32, u32)>,
    /// What is being written: header bytes and block bytes still to write
    /// (a handshake has no block).
    writing: Option<(Bytes, u32)>,
    // Downloading from it.
    data_in: Option<Sock>,
    /// Our outstanding requests to it: (piece, block).
    requested: Vec<(u32, u32)>,
    /// Block bytes received from / sent to it, this round and last round.
    down: [u64; 2],
    up: [u64; 2],
}

impl Nb {
    fn new(ctrl: Sock, dialled: Option<NodeId>, pieces: usize) -> Nb {
        Nb {
            ctrl,
            node: None,
            dialled,
            reader: Reader::with_handshake(Some(INFO_HASH)),
            out: VecDeque::new(),
            has: vec![false; pieces],
            has_count: 0,
            am_choking: true,
            am_interested: false,
            peer_choking: true,
            peer_interested: false,
            data_out: None,
            data_ready: false,
            queue: VecDeque::new(),
            writing: None,
            data_in: None,
            requested: Vec::new(),
            down: [0; 2],
            up: [0; 2],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ctrl,
    DataOut,
    DataIn,
}

/// A peer's record, read by the driver.
#[derive(Clone, Debug, Default)]
pub struct PeerStats {
    pub joined: Option<Time>,
    pub completed: Option<Time>,
    pub left: Option<Time>,
    /// Block bytes received and sent.
    pub downloaded: u64,
    pub uploaded: u64,
    /// Blocks received twice (end game, or written before a choke).
    pub duplicate_blocks: u64,
    /// Connections to peers that were not listening.
    pub refused: u64,
    /// Wire errors and failed data connections.
    pub errors: Vec<String>,
}

/// A BitTorrent peer (see the module docs).
pub struct Peer {
    cfg: PeerConfig,
    blocks_per_piece: u32,
    /// Per piece: blocks received, and outstanding requests per block.
    got: Vec<Vec<bool>>,
    got_count: Vec<u32>,
    reqs: Vec<Vec<u8>>,
    have: Vec<bool>,
    have_count: usize,
    /// Neighbours having each piece.
    avail: Vec<u32>,
    nbs: Vec<Option<Nb>>,
    socks: BTreeMap<Sock, (usize, Kind)>,
    /// The readers of accepted data connections (whose they are is known
    /// from their handshake).
    data_readers: BTreeMap<Sock, Reader>,
    optimistic: Option<usize>,
    round: u64,
    /// Nodes to connect to (filled by the driver, the tracker).
    pub announce: Vec<NodeId>,
    pub stats: PeerStats,
}

impl Peer {
    pub fn new(cfg: PeerConfig, connect_to: Vec<NodeId>) -> Peer {
        let n = cfg.pieces as usize;
        let bpp = cfg.piece_len.div_ceil(BLOCK);
        let seed = cfg.seed;
        Peer {
            blocks_per_piece: bpp,
            got: vec![vec![seed; bpp as usize]; n],
            got_count: vec![if seed { bpp } else { 0 }; n],
            reqs: vec![vec![0; bpp as usize]; n],
            have: vec![seed; n],
            have_count: if seed { n } else { 0 },
            avail: vec![0; n],
            nbs: Vec::new(),
            socks: BTreeMap::new(),
            data_readers: BTreeMap::new(),
            optimistic: None,
            round: 0,
            announce: connect_to,
            stats: PeerStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &PeerConfig {
        &self.cfg
    }

    /// Neighbours with an open control connection.
    pub fn neighbours(&self) -> usize {
        self.nbs.iter().flatten().count()
    }

    /// The nodes of the neighbours: known from their handshakes, or dialled
    /// and not answered yet.
    pub fn neighbour_nodes(&self) -> Vec<NodeId> {
        self.nbs
            .iter()
            .flatten()
            .filter_map(|n| n.node.or(n.dialled))
            .collect()
    }

    pub fn complete(&self) -> bool {
        self.have_count == self.cfg.pieces as usize
    }

    pub fn gone(&self) -> bool {
        self.stats.left.is_some()
    }

    fn my_id(cx: &Cx<'_>) -> [u8; 20] {
        let mut id = *b"-HW0001-000000000000";
        id[8..12].copy_from_slice(&cx.node().raw().to_be_bytes());
        id
    }

    fn handshake(cx: &Cx<'_>) -> Bytes {
        Bytes::copy_from_slice(
            &Handshake {
                info_hash: INFO_HASH,
                peer_id: Self::my_id(cx),
                fast: true,
            }
            .encode(),
        )
    }

    fn connect_pending(&mut self, cx: &mut Cx<'_>) {
        let mut known = self.neighbour_nodes();
        for node in std::mem::take(&mut self.announce) {
            if node == cx.node() || known.contains(&node) {
                continue;
            }
            known.push(node);
            match cx.connect(
                node,
                CTRL_PORT,
                self.cfg.ctrl_tcp.clone(),
                &CcConfig::NewReno,
            ) {
                Ok(s) => {
                    self.nbs
                        .push(Some(Nb::new(s, Some(node), self.cfg.pieces as usize)));
                    self.socks.insert(s, (self.nbs.len() - 1, Kind::Ctrl));
                }
                // Like a refused connection: the tracker's list was stale.
                Err(_) => self.stats.refused += 1,
            }
        }
    }

    // ----- neighbours leaving ------------------------------------------------

    fn drop_nb(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].take() else { return };
        for p in 0..nb.has.len() {
            if nb.has[p] {
                self.avail[p] -= 1;
            }
        }
        for (p, b) in nb.requested {
            self.reqs[p as usize][b as usize] -= 1;
        }
        for s in [Some(nb.ctrl), nb.data_out, nb.data_in]
            .into_iter()
            .flatten()
        {
            self.socks.remove(&s);
            self.data_readers.remove(&s);
            cx.abort(s);
        }
        if self.optimistic == Some(i) {
            self.optimistic = None;
        }
        // Requests freed here can go to other neighbours.
        self.fill_all(cx);
    }

    fn fill_all(&mut self, cx: &mut Cx<'_>) {
        for j in 0..self.nbs.len() {
            self.fill(cx, j);
        }
    }

    fn leave(&mut self, cx: &mut Cx<'_>) {
        for i in 0..self.nbs.len() {
            if let Some(nb) = self.nbs[i].take() {
                for s in [Some(nb.ctrl), nb.data_out, nb.data_in]
                    .into_iter()
                    .flatten()
                {
                    cx.abort(s);
                }
            }
        }
        for (s, _) in std::mem::take(&mut self.data_readers) {
            cx.abort(s);
        }
        self.socks.clear();
        // Later connections are refused, as by a host whose client exited.
        cx.unlisten(CTRL_PORT);
        cx.unlisten(DATA_PORT);
        self.stats.left = Some(cx.now());
    }
}

impl Agent for Peer {
    fn start(&mut self, cx: &mut Cx<'_>) {
        self.stats.joined = Some(cx.now());
        let ctrl = (self.cfg.ctrl_tcp.clone(), CcConfig::NewReno);
        // The receiving end of a data connection sends only ACKs.
        let data = (self.cfg.data_tcp.clone(), CcConfig::NewReno);
        for (port, (tcp, cc)) in [(CTRL_PORT, ctrl), (DATA_PORT, data)] {
            if let Err(e) = cx.listen(port, tcp, cc) {
                self.stats.errors.push(format!("listen on {port}: {e}"));
            }
        }
        self.connect_pending(cx);
        if self.complete() {
            self.stats.completed = Some(cx.now());
        }
        // Rounds start at a random phase, as peers' clocks would.
        let phase = Dur::from_secs_f64(cx.rng().f64() * RECHOKE.as_secs_f64());
        cx.set_timer(cx.now() + phase, TICK);
    }

    fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
        if self.gone() {
            return;
        }
        match token {
            TICK => {
                self.connect_pending(cx);
                self.rechoke(cx);
                cx.set_timer(cx.now() + RECHOKE, TICK);
            }
            LEAVE => self.leave(cx),
            _ => {}
        }
    }

    fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
        if self.gone() {
            return;
        }
        if ev == SockEvent::Accepted {
            // Which port: a control connection has no entry yet; data
            // connections are told apart by the reader we give them.
            let local = cx.conn(sock).map(|c| c.local_port());
            if local == Some(DATA_PORT) {
                self.data_readers
                    .insert(sock, Reader::with_handshake(Some(INFO_HASH)));
            } else {
                self.nbs
                    .push(Some(Nb::new(sock, None, self.cfg.pieces as usize)));
                self.socks.insert(sock, (self.nbs.len() - 1, Kind::Ctrl));
            }
            return;
        }
        if self.data_readers.contains_key(&sock) && !self.socks.contains_key(&sock) {
            match ev {
                SockEvent::Readable => self.on_data_readable(cx, sock),
                SockEvent::Reset | SockEvent::TimedOut | SockEvent::PeerClosed => {
                    self.data_readers.remove(&sock);
                }
                _ => {}
            }
            return;
        }
        let Some(&(i, kind)) = self.socks.get(&sock) else {
            return;
        };
        match (kind, ev) {
            (
                _,
                SockEvent::Reset | SockEvent::TimedOut | SockEvent::PeerClosed | SockEvent::Closed,
            ) => match kind {
                Kind::Ctrl => self.drop_nb(cx, i),
                // Requests not yet written stay queued, for a new data
                // connection; the requester asks again for what was lost
                // in this one (`data_in_lost`).
                Kind::DataOut => {
                    self.socks.remove(&sock);
                    if let Some(nb) = self.nbs[i].as_mut() {
                        nb.data_out = None;
                        nb.writing = None;
                    }
                    self.pump_upload(cx, i);
                }
                Kind::DataIn => {
                    self.socks.remove(&sock);
                    self.data_readers.remove(&sock);
                    self.data_in_lost(cx, i);
                }
            },
            (Kind::Ctrl, SockEvent::Connected) => {
                let hs = Self::handshake(cx);
                let nb = self.nbs[i].as_mut().expect("live");
                nb.out.extend(hs.iter());
                Self::flush(cx, nb);
            }
            (Kind::Ctrl, SockEvent::Readable) => self.on_ctrl_readable(cx, i),
            (Kind::Ctrl, SockEvent::Writable) => {
                if let Some(nb) = self.nbs[i].as_mut() {
                    Self::flush(cx, nb);
                }
            }
            (Kind::DataOut, SockEvent::Connected) => {
                if let Some(nb) = self.nbs[i].as_mut() {
                    nb.data_ready = true;
                }
                self.pump_upload(cx, i);
            }
            (Kind::DataOut, SockEvent::Writable) => self.pump_upload(cx, i),
            (Kind::DataIn, SockEvent::Readable) => self.on_data_readable(cx, sock),
            _ => {}
        }
    }
}

/// The node named in a peer id (bytes 8..12, written by `Peer::my_id`).
fn node_of(h: &Handshake) -> NodeId {
    NodeId::from_raw(u32::from_be_bytes(
        h.peer_id[8..12].try_into().expect("4 bytes"),
    ))
}

mod transfer;
mod wire;

#[cfg(test)]
mod tests;
