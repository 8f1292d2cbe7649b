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
        id[8..12].copy_from_slice(&cx.node().to_be_bytes());
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

    // ----- control messages ------------------------------------------------

    /// Sends a message to neighbour `i`, once handshakes have been
    /// exchanged (before that, the bitfield sent with our handshake reply
    /// covers what we would have said).
    fn send(&mut self, cx: &mut Cx<'_>, i: usize, m: &Msg) {
        let Some(nb) = self.nbs[i].as_mut().filter(|nb| nb.node.is_some()) else {
            return;
        };
        let mut v = Vec::with_capacity(m.wire_len());
        m.encode(&mut v);
        nb.out.extend(v);
        Self::flush(cx, nb);
    }

    fn flush(cx: &mut Cx<'_>, nb: &mut Nb) {
        while !nb.out.is_empty() {
            let chunk = Bytes::copy_from_slice(nb.out.as_slices().0);
            let n = cx.send(nb.ctrl, chunk.clone());
            nb.out.drain(..n);
            if n < chunk.len() {
                return;
            }
        }
    }

    fn on_ctrl_readable(&mut self, cx: &mut Cx<'_>, i: usize) {
        let mut events = Vec::new();
        loop {
            let Some(nb) = self.nbs[i].as_mut() else {
                return;
            };
            let Some(b) = cx.recv(nb.ctrl, 1 << 16) else {
                break;
            };
            if let Err(e) = nb.reader.push(&b, &mut events) {
                self.stats.errors.push(format!("control connection: {e}"));
                self.drop_nb(cx, i);
                return;
            }
        }
        for ev in events {
            if self.nbs[i].is_none() {
                return;
            }
            match ev {
                Event::Handshake(h) => self.on_handshake(cx, i, h),
                Event::Msg(m) => self.on_msg(cx, i, m),
            }
        }
    }

    fn on_handshake(&mut self, cx: &mut Cx<'_>, i: usize, h: Handshake) {
        let node = node_of(&h);
        let me = cx.node();
        // Both ends opened a connection: keep the one the lower node opened.
        let dup = self
            .nbs
            .iter()
            .enumerate()
            .find(|(j, n)| *j != i && n.as_ref().is_some_and(|n| n.node == Some(node)))
            .map(|(j, _)| j);
        if let Some(j) = dup {
            let this_initiated = self.nbs[i].as_ref().expect("live").dialled.is_some();
            let keep_this = (me < node) == this_initiated;
            self.drop_nb(cx, if keep_this { j } else { i });
            if !keep_this {
                return;
            }
        }
        let nb = self.nbs[i].as_mut().expect("live");
        nb.node = Some(node);
        if nb.dialled.is_none() {
            let hs = Self::handshake(cx);
            nb.out.extend(hs.iter());
            Self::flush(cx, nb);
        }
        if self.have_count > 0 {
            let have = &self.have;
            let f = bt::bitfield(have.len(), |p| have[p]);
            self.send(cx, i, &Msg::Bitfield(f));
        }
    }

    fn on_msg(&mut self, cx: &mut Cx<'_>, i: usize, m: Msg) {
        let n = self.cfg.pieces as usize;
        match m {
            Msg::KeepAlive | Msg::Piece { .. } => {}
            Msg::Choke => {
                // Requests it will not serve come back as rejects (BEP 6);
                // the others were written before the choke and will arrive.
                self.nbs[i].as_mut().expect("live").peer_choking = true;
            }
            Msg::Reject { index, begin, .. } => {
                let nb = self.nbs[i].as_mut().expect("live");
                let r = (index, begin / BLOCK);
                if let Some(k) = nb.requested.iter().position(|&x| x == r) {
                    nb.requested.swap_remove(k);
                    self.reqs[r.0 as usize][r.1 as usize] -= 1;
                }
                self.fill_all(cx);
            }
            Msg::Unchoke => {
                self.nbs[i].as_mut().expect("live").peer_choking = false;
                self.fill(cx, i);
            }
            Msg::Interested => {
                self.nbs[i].as_mut().expect("live").peer_interested = true;
                // A free slot is given at once rather than at the next round.
                let open = self.nbs.iter().flatten().filter(|n| !n.am_choking).count();
                if open < self.cfg.slots + 1 {
                    self.set_choke(cx, i, false);
                }
            }
            Msg::NotInterested => {
                let nb = self.nbs[i].as_mut().expect("live");
                nb.peer_interested = false;
            }
            Msg::Have(p) => {
                let p = p as usize;
                if p >= n {
                    self.stats
                        .errors
                        .push(format!("have: piece {p} out of range (0..{n})"));
                    self.drop_nb(cx, i);
                    return;
                }
                let nb = self.nbs[i].as_mut().expect("live");
                if !nb.has[p] {
                    nb.has[p] = true;
                    nb.has_count += 1;
                    self.avail[p] += 1;
                }
                self.update_interest(cx, i);
            }
            Msg::Bitfield(f) => {
                if f.len() != n.div_ceil(8) {
                    self.stats.errors.push(format!(
                        "bitfield: {} B for {n} pieces (expected {})",
                        f.len(),
                        n.div_ceil(8)
                    ));
                    self.drop_nb(cx, i);
                    return;
                }
                let nb = self.nbs[i].as_mut().expect("live");
                for p in 0..n {
                    if bt::bit(&f, p) && !nb.has[p] {
                        nb.has[p] = true;
                        nb.has_count += 1;
                        self.avail[p] += 1;
                    }
                }
                self.update_interest(cx, i);
            }
            Msg::Request { index, begin, len } => {
                let plen = self.cfg.piece_len;
                let nb = self.nbs[i].as_mut().expect("live");
                let ok = (index as usize) < n
                    && self.have[index as usize]
                    && len <= BLOCK
                    && begin.checked_add(len).is_some_and(|e| e <= plen);
                if nb.am_choking || !ok {
                    self.send(cx, i, &Msg::Reject { index, begin, len });
                    return;
                }
                // A repeat (sent again after a data connection failed) keeps
                // its place.
                if !nb.queue.contains(&(index, begin, len)) {
                    nb.queue.push_back((index, begin, len));
                }
                self.pump_upload(cx, i);
            }
            Msg::Cancel { index, begin, len } => {
                let nb = self.nbs[i].as_mut().expect("live");
                nb.queue.retain(|&r| r != (index, begin, len));
            }
        }
    }

    fn update_interest(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_ref() else {
            return;
        };
        let want = nb
            .has
            .iter()
            .zip(&self.have)
            .any(|(&they, &we)| they && !we);
        if want != nb.am_interested {
            self.nbs[i].as_mut().expect("live").am_interested = want;
            let m = if want {
                Msg::Interested
            } else {
                Msg::NotInterested
            };
            self.send(cx, i, &m);
        }
        if want {
            self.fill(cx, i);
        }
    }

    fn set_choke(&mut self, cx: &mut Cx<'_>, i: usize, choke: bool) {
        let Some(nb) = self.nbs[i].as_mut() else {
            return;
        };
        if nb.am_choking == choke {
            return;
        }
        nb.am_choking = choke;
        let rejected: Vec<(u32, u32, u32)> = if choke {
            nb.queue.drain(..).collect()
        } else {
            Vec::new()
        };
        self.send(cx, i, if choke { &Msg::Choke } else { &Msg::Unchoke });
        for (index, begin, len) in rejected {
            self.send(cx, i, &Msg::Reject { index, begin, len });
        }
    }

    // ----- downloading -------------------------------------------------------

    /// Requests blocks from neighbour `i` until its pipeline is full.
    fn fill(&mut self, cx: &mut Cx<'_>, i: usize) {
        loop {
            let Some(nb) = self.nbs[i].as_ref() else {
                return;
            };
            if nb.peer_choking || !nb.am_interested || nb.requested.len() >= self.cfg.pipeline {
                return;
            }
            let Some((p, b)) = self.pick(cx, i) else {
                return;
            };
            self.reqs[p as usize][b as usize] += 1;
            let nb = self.nbs[i].as_mut().expect("live");
            nb.requested.push((p, b));
            let m = self.request(p, b);
            self.send(cx, i, &m);
        }
    }

    /// The request for block `b` of piece `p`.
    fn request(&self, p: u32, b: u32) -> Msg {
        let begin = b * BLOCK;
        Msg::Request {
            index: p,
            begin,
            len: BLOCK.min(self.cfg.piece_len - begin),
        }
    }

    /// The next block to request from neighbour `i`.
    fn pick(&self, cx: &mut Cx<'_>, i: usize) -> Option<(u32, u32)> {
        let nb = self.nbs[i].as_ref()?;
        let n = self.cfg.pieces as usize;
        let free = |p: usize| {
            (0..self.blocks_per_piece)
                .find(|&b| !self.got[p][b as usize] && self.reqs[p][b as usize] == 0)
        };
        let wanted = |p: usize| nb.has[p] && !self.have[p];
        // Strict priority: pieces already started.
        for p in (0..n).filter(|&p| {
            wanted(p) && (self.got_count[p] > 0 || self.reqs[p].iter().any(|&r| r > 0))
        }) {
            if let Some(b) = free(p) {
                return Some((p as u32, b));
            }
        }
        // A new piece: random first, then rarest first, ties at random.
        let fresh: Vec<usize> = (0..n)
            .filter(|&p| {
                wanted(p) && self.got_count[p] == 0 && self.reqs[p].iter().all(|&r| r == 0)
            })
            .collect();
        if !fresh.is_empty() {
            let cands: Vec<usize> = if self.have_count < RANDOM_FIRST {
                fresh
            } else {
                let min = fresh
                    .iter()
                    .map(|&p| self.avail[p])
                    .min()
                    .expect("non-empty");
                fresh
                    .into_iter()
                    .filter(|&p| self.avail[p] == min)
                    .collect()
            };
            let p = cands[cx.rng().below(cands.len() as u64) as usize];
            return Some((p as u32, 0));
        }
        // End game, once every missing block is requested from someone:
        // ask this neighbour too for one that only one other neighbour
        // has been asked for,
        // one such "busy" block at a time per neighbour (as libtorrent
        // does; every duplicate the cancel comes too late for is waste).
        let unrequested = (0..n).any(|p| {
            !self.have[p]
                && (0..self.blocks_per_piece as usize)
                    .any(|b| !self.got[p][b] && self.reqs[p][b] == 0)
        });
        if unrequested
            || nb
                .requested
                .iter()
                .any(|&(p, b)| self.reqs[p as usize][b as usize] > 1)
        {
            return None;
        }
        for p in (0..n).filter(|&p| wanted(p)) {
            for b in 0..self.blocks_per_piece {
                if !self.got[p][b as usize]
                    && self.reqs[p][b as usize] < 2
                    && !nb.requested.contains(&(p as u32, b))
                {
                    return Some((p as u32, b));
                }
            }
        }
        None
    }

    fn on_data_readable(&mut self, cx: &mut Cx<'_>, sock: Sock) {
        let mut events = Vec::new();
        let mut err = None;
        let Some(r) = self.data_readers.get_mut(&sock) else {
            return;
        };
        while let Some(b) = cx.recv(sock, 1 << 16) {
            if let Err(e) = r.push(&b, &mut events) {
                err = Some(e);
                break;
            }
        }
        for ev in events {
            match ev {
                // The handshake says whose data connection this is.
                Event::Handshake(h) => {
                    let node = node_of(&h);
                    let Some(i) = self
                        .nbs
                        .iter()
                        .position(|n| n.as_ref().is_some_and(|n| n.node == Some(node)))
                    else {
                        self.data_readers.remove(&sock);
                        cx.abort(sock);
                        return;
                    };
                    let nb = self.nbs[i].as_mut().expect("live");
                    let old = nb.data_in.replace(sock);
                    self.socks.insert(sock, (i, Kind::DataIn));
                    if let Some(old) = old {
                        self.socks.remove(&old);
                        self.data_readers.remove(&old);
                        cx.abort(old);
                        self.rerequest(cx, i);
                    }
                }
                Event::Msg(Msg::Piece { index, begin, len }) => {
                    if let Some(&(i, _)) = self.socks.get(&sock) {
                        self.on_block(cx, i, index, begin, len);
                    }
                }
                Event::Msg(_) => {}
            }
        }
        if let Some(e) = err {
            self.stats.errors.push(format!("data connection: {e}"));
            self.data_readers.remove(&sock);
            cx.abort(sock);
            if let Some((i, _)) = self.socks.remove(&sock) {
                self.data_in_lost(cx, i);
            }
        }
    }

    fn on_block(&mut self, cx: &mut Cx<'_>, i: usize, index: u32, begin: u32, len: u32) {
        let (p, b) = (index as usize, (begin / BLOCK) as usize);
        if p >= self.got.len() || b >= self.got[p].len() {
            self.stats.errors.push(format!(
                "piece message for piece {p}, block {b}: out of range"
            ));
            return;
        }
        self.stats.downloaded += len as u64;
        if let Some(nb) = self.nbs[i].as_mut() {
            nb.down[0] += len as u64;
            if let Some(k) = nb.requested.iter().position(|&r| r == (index, b as u32)) {
                nb.requested.swap_remove(k);
                self.reqs[p][b] -= 1;
            }
        }
        if self.got[p][b] {
            self.stats.duplicate_blocks += 1;
            self.fill(cx, i);
            return;
        }
        self.got[p][b] = true;
        self.got_count[p] += 1;
        // End game: cancel the same block at other neighbours.
        if self.reqs[p][b] > 0 {
            for j in 0..self.nbs.len() {
                let Some(nb) = self.nbs[j].as_mut() else {
                    continue;
                };
                if let Some(k) = nb.requested.iter().position(|&r| r == (index, b as u32)) {
                    nb.requested.swap_remove(k);
                    self.reqs[p][b] -= 1;
                    self.send(cx, j, &Msg::Cancel { index, begin, len });
                }
            }
        }
        if self.got_count[p] == self.blocks_per_piece {
            self.have[p] = true;
            self.have_count += 1;
            for j in 0..self.nbs.len() {
                if self.nbs[j].is_some() {
                    self.send(cx, j, &Msg::Have(index));
                }
            }
            if self.complete() {
                self.on_complete(cx);
            }
            for j in 0..self.nbs.len() {
                self.update_interest(cx, j);
            }
        }
        self.fill(cx, i);
    }

    fn on_complete(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now();
        self.stats.completed = Some(now);
        let took = now - self.stats.joined.unwrap_or(now);
        let stay = match self.cfg.stay {
            Stay::Forever => return,
            Stay::Leave => Dur::ZERO,
            Stay::Random { frac } => Dur::from_secs_f64(cx.rng().exp(frac * took.as_secs_f64())),
        };
        cx.set_timer(now + stay, LEAVE);
    }

    /// Neighbour `i`'s data connection to us failed: blocks in flight on it
    /// are lost, so ask again for every outstanding request (the uploader
    /// keeps the ones it still has queued in place).
    fn data_in_lost(&mut self, cx: &mut Cx<'_>, i: usize) {
        if let Some(nb) = self.nbs[i].as_mut() {
            nb.data_in = None;
            self.rerequest(cx, i);
        }
    }

    fn rerequest(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_ref() else {
            return;
        };
        for (p, b) in nb.requested.clone() {
            let m = self.request(p, b);
            self.send(cx, i, &m);
        }
    }

    // ----- uploading ---------------------------------------------------------

    fn pump_upload(&mut self, cx: &mut Cx<'_>, i: usize) {
        let Some(nb) = self.nbs[i].as_mut() else {
            return;
        };
        if nb.data_out.is_none() {
            if nb.queue.is_empty() {
                return;
            }
            let Some(node) = nb.node else { return };
            match cx.connect(
                node,
                DATA_PORT,
                self.cfg.data_tcp.clone(),
                &self.cfg.data_cc,
            ) {
                Ok(s) => {
                    nb.data_out = Some(s);
                    nb.data_ready = false;
                    nb.writing = Some((Self::handshake(cx), 0));
                    self.socks.insert(s, (i, Kind::DataOut));
                }
                // It stopped listening: it left, and its control
                // connection's reset may still be on the way.
                Err(_) => {
                    self.stats.refused += 1;
                    self.drop_nb(cx, i);
                }
            }
            return;
        }
        if !nb.data_ready {
            return;
        }
        let s = nb.data_out.expect("open");
        loop {
            if nb.writing.is_none() {
                let Some((index, begin, len)) = nb.queue.pop_front() else {
                    return;
                };
                let mut h = Vec::with_capacity(13);
                Msg::Piece { index, begin, len }.encode(&mut h);
                nb.writing = Some((h.into(), len));
            }
            let (hdr, left) = nb.writing.as_mut().expect("set");
            if !hdr.is_empty() {
                let n = cx.send(s, hdr.clone());
                let _ = hdr.split_to(n);
                if !hdr.is_empty() {
                    return;
                }
            }
            while *left > 0 {
                let n = cx.send(s, Bytes::from_static(&ZEROS[..*left as usize]));
                *left -= n as u32;
                nb.up[0] += n as u64;
                self.stats.uploaded += n as u64;
                if n == 0 {
                    return;
                }
            }
            nb.writing = None;
        }
    }

    // ----- choking -----------------------------------------------------------

    fn rechoke(&mut self, cx: &mut Cx<'_>) {
        self.round += 1;
        let seed = self.complete();
        let mut cands: Vec<(u64, usize)> = Vec::new();
        for (i, nb) in self.nbs.iter().enumerate() {
            let Some(nb) = nb else { continue };
            if nb.peer_interested && nb.node.is_some() {
                let rate = if seed {
                    nb.up[0] + nb.up[1]
                } else {
                    nb.down[0] + nb.down[1]
                };
                cands.push((rate, i));
            }
        }
        // Random order first, so equal rates are broken at random.
        for k in (1..cands.len()).rev() {
            let j = cx.rng().below(k as u64 + 1) as usize;
            cands.swap(k, j);
        }
        cands.sort_by_key(|c| std::cmp::Reverse(c.0));
        let regular: Vec<usize> = cands.iter().take(self.cfg.slots).map(|c| c.1).collect();
        let rest: Vec<usize> = cands.iter().skip(self.cfg.slots).map(|c| c.1).collect();
        let keep = self
            .optimistic
            .filter(|o| rest.contains(o) && !self.round.is_multiple_of(OPTIMISTIC_ROUNDS));
        self.optimistic = keep.or_else(|| {
            (!rest.is_empty()).then(|| rest[cx.rng().below(rest.len() as u64) as usize])
        });
        for i in 0..self.nbs.len() {
            if self.nbs[i].is_none() {
                continue;
            }
            let unchoke = regular.contains(&i) || self.optimistic == Some(i);
            self.set_choke(cx, i, !unchoke);
        }
        for nb in self.nbs.iter_mut().flatten() {
            nb.down = [0, nb.down[0]];
            nb.up = [0, nb.up[0]];
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
    u32::from_be_bytes(h.peer_id[8..12].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::units::Rate;
    use hopwise_sim::spec::{DirSpec, Limit, LinkSpec, NodeKind, NodeSpec, QueueSpec, Scenario};
    use hopwise_sim::Sim;

    const BREAK: u64 = 99;

    /// A peer that, at `at`, breaks its data connections of one direction
    /// as a failing network would: it resets them and handles the reset.
    struct Breaker {
        peer: Peer,
        at: Time,
        uploads: bool,
        broken: usize,
    }

    impl Agent for Breaker {
        fn start(&mut self, cx: &mut Cx<'_>) {
            self.peer.start(cx);
            cx.set_timer(self.at, BREAK);
        }
        fn timer(&mut self, cx: &mut Cx<'_>, token: u64) {
            if token != BREAK {
                return self.peer.timer(cx, token);
            }
            let socks: Vec<Sock> = self
                .peer
                .nbs
                .iter()
                .flatten()
                .filter_map(|nb| {
                    if self.uploads {
                        nb.data_out
                    } else {
                        nb.data_in
                    }
                })
                .collect();
            for s in socks {
                cx.abort(s);
                self.peer.tcp_event(cx, s, SockEvent::Reset);
                self.broken += 1;
            }
        }
        fn tcp_event(&mut self, cx: &mut Cx<'_>, sock: Sock, ev: SockEvent) {
            self.peer.tcp_event(cx, sock, ev)
        }
    }

    fn cfg(seed: bool, stay: Stay) -> PeerConfig {
        PeerConfig {
            pieces: 8,
            piece_len: 4 * BLOCK,
            data_cc: CcConfig::NewReno,
            data_tcp: TcpConfig::default(),
            ctrl_tcp: TcpConfig::default(),
            pipeline: 5,
            slots: 3,
            seed,
            stay,
        }
    }

    /// A switch and `hosts` hosts at 1 Mbit/s up, 8 Mbit/s down, 10 ms.
    fn star(hosts: usize) -> Sim {
        let mut s = Scenario::new("peer-test", Dur::from_secs(600), 1);
        s.measure.trace_interval = Dur::ZERO;
        s.nodes.push(NodeSpec {
            name: "sw".into(),
            kind: NodeKind::Switch,
        });
        let dir = |mbps| DirSpec {
            rate: Rate::from_mbps(mbps),
            delay: Dur::from_millis(10),
            queue: QueueSpec::DropTail {
                limit: Limit::Packets(100),
            },
            loss: 0.0,
        };
        for i in 0..hosts {
            s.nodes.push(NodeSpec {
                name: format!("p{i}"),
                kind: NodeKind::Host,
            });
            s.links.push(LinkSpec {
                name: format!("a{i}"),
                a: format!("p{i}"),
                b: "sw".into(),
                ab: dir(1),
                ba: dir(8),
            });
        }
        Sim::new(&s).unwrap()
    }

    /// A data connection that fails mid-download, seen from either end,
    /// costs a reconnect, not the download: the uploader keeps the requests
    /// it has not written and opens a new connection, and the downloader
    /// asks again for the blocks that were in flight.
    #[test]
    fn a_failed_data_connection_is_replaced() {
        for uploads in [true, false] {
            let mut sim = star(2);
            let seed_node = sim.node_id("p0").unwrap();
            let at = Time::ZERO + Dur::from_secs(1);
            let seed_peer = Peer::new(cfg(true, Stay::Forever), vec![]);
            let leecher = Peer::new(cfg(false, Stay::Forever), vec![seed_node]);
            // The breaking end is the seed when uploads break, else the
            // leecher; the leecher starts once the seed listens.
            let (breaking, other) = if uploads {
                (seed_peer, leecher)
            } else {
                (leecher, seed_peer)
            };
            let (b_node, o_node) = if uploads { ("p0", "p1") } else { ("p1", "p0") };
            let start = |node| Time::ZERO + Dur::from_millis(if node == "p1" { 1 } else { 0 });
            let b = Breaker {
                peer: breaking,
                at,
                uploads,
                broken: 0,
            };
            let b = sim.add_agent(b_node, "breaking", start(b_node), Box::new(b));
            let o = sim.add_agent(o_node, "other", start(o_node), Box::new(other));
            let (b, o) = (b.unwrap(), o.unwrap());
            sim.run();
            let b: &Breaker = sim.agent(b).unwrap();
            let o: &Peer = sim.agent(o).unwrap();
            let (broken, lp, sp) = if uploads {
                (b.broken, o, &b.peer)
            } else {
                (b.broken, &b.peer, o)
            };
            assert_eq!(broken, 1, "uploads {uploads}: one data connection broken");
            let done = lp.stats.completed.expect("the leecher completes");
            // 512 KiB at 1 Mbit/s takes about 4.3 s: the break was mid-way.
            assert!(done > at, "uploads {uploads}: done at {done:?}");
            assert!(lp.stats.errors.is_empty(), "{:?}", lp.stats.errors);
            assert!(sp.stats.errors.is_empty(), "{:?}", sp.stats.errors);
            let file = 8 * 4 * BLOCK as u64;
            assert!(lp.stats.downloaded >= file);
            assert!(
                lp.stats.downloaded <= file + 6 * BLOCK as u64,
                "uploads {uploads}: at most a pipeline and a partial block again, got {} B",
                lp.stats.downloaded
            );
        }
    }

    /// A node announced twice is dialled once; a peer that has left refuses
    /// connections, which count as refused, not as errors.
    #[test]
    fn dial_once_and_refused_after_leaving() {
        let mut sim = star(3);
        let p0 = sim.node_id("p0").unwrap();
        let p1 = sim.node_id("p1").unwrap();
        let seed = sim
            .add_agent(
                "p0",
                "seed",
                Time::ZERO,
                Box::new(Peer::new(cfg(true, Stay::Forever), vec![])),
            )
            .unwrap();
        let leaver = sim
            .add_agent(
                "p1",
                "leaver",
                Time::ZERO,
                Box::new(Peer::new(cfg(false, Stay::Leave), vec![p0, p0])),
            )
            .unwrap();
        sim.run_until(Time::ZERO + Dur::from_millis(1));
        let l: &Peer = sim.agent(leaver).unwrap();
        assert_eq!(l.neighbours(), 1, "dialled once");
        assert_eq!(l.neighbour_nodes(), vec![p0]);
        sim.run_until(Time::ZERO + Dur::from_secs(60));
        let l: &Peer = sim.agent(leaver).unwrap();
        assert!(l.gone(), "it completed and left");
        // A latecomer that the tracker still points at the leaver.
        let late = sim
            .add_agent(
                "p2",
                "late",
                sim.now(),
                Box::new(Peer::new(cfg(false, Stay::Forever), vec![p1, p0])),
            )
            .unwrap();
        sim.run();
        let lp: &Peer = sim.agent(late).unwrap();
        assert_eq!(lp.stats.refused, 1);
        assert!(lp.stats.errors.is_empty(), "{:?}", lp.stats.errors);
        assert!(lp.complete());
        assert!(sim.agent::<Peer>(seed).unwrap().stats.errors.is_empty());
    }
}
