//! Vanilla Tor: TCP connections between neighbours, per-circuit queues,
//! round-robin scheduling per connection, and the relay's token buckets.
//!
//! # Reading (the feedback gap)
//! A relay reads from every readable connection regardless of how full the
//! circuit queues are (seed 002 §3.1, Fig. 2a). Only the read bucket limits
//! it: connections take turns, each reading at most Tor's share of the bucket
//! (1/8 of it, 4–32 cells) per turn; an empty bucket stops reading on every
//! connection until the refill (periodic) or the re-enable delay (on demand).
//! Read bytes are cut into 512-byte cells (a partial cell waits for its
//! rest); a cell for a circuit that continues is appended to the circuit's
//! queue towards the next node, a cell that reached its delivering edge goes
//! to the node's edge layer.
//!
//! # Writing
//! Each connection has a ring of circuits with queued cells and takes one
//! cell per circuit per turn (round robin). A turn writes at most the write
//! bucket's share and, depending on [`WritePolicy`]:
//! * `Fill`: what the socket accepts. Cells are written whole; if the kernel
//!   takes only part of the last one, the rest stays in the connection's
//!   outbuf (Tor's `outbuf`) and writing resumes on `Writable`, i.e. when ACKs
//!   free send-buffer space.
//! * `Kist`: what KIST's per-socket limit allows in the current scheduler run
//!   (runs at most every `interval`); cells beyond it wait in the circuit
//!   queues for the next run.
//!
//! # N23 (`TcpTransportConfig::credits`)
//! Hop-by-hop credits on top of the same connections. Every node holds, per
//! circuit and direction, a credit for its successor (initially `n2 + n3`).
//! Every `n2` cells a node forwards (takes from the circuit queue towards
//! the next node, or delivers to its edge), it sends a credit cell (a 512-byte
//! link cell, command [`CMD_CREDIT`], on the circuit's id) back on the link
//! the cells came from; its predecessor adds `n2` to that credit (at most
//! `n2 + n3`). With [`N23Gating::PerHop`] the round robin skips a circuit
//! whose credit is spent (it rejoins the ring when credit arrives) and a
//! packaging edge packages while its own queue holds fewer than `n2 + n3`
//! cells. With [`N23Gating::EdgeOnly`] (nstor) only the packaging edge is
//! gated: it packages while its credit is positive, spending one per cell
//! packaged. Credit cells go ahead of data cells on their link.

use super::{block_on_bucket, token, Io, Shared, Transport};
use crate::buckets::Side;
use crate::cell::{CELL_LEN, CMD_CREDIT, CMD_NETINFO, CMD_RELAY};
use crate::config::{Dir, N23Config, N23Gating, TcpTransportConfig, WritePolicy};
use crate::plan::{Leg, NodePlan};
use crate::results::{HopSample, NodeSample, TransportStats};
use bytes::Bytes;
use hopwise_proto::time::Time;
use hopwise_sim::{Cx, NodeId, Sock, SockEvent};
use std::collections::{BTreeMap, VecDeque};

const NO_HOP: u32 = u32::MAX;

/// One circuit's queues at this node.
#[derive(Debug)]
struct HopQ {
    prev: Leg,
    next: Leg,
    /// Cells waiting to leave, per direction (forward leaves via `next`).
    q: [VecDeque<u32>; 2],
    /// In the out-link's round-robin ring.
    active: [bool; 2],
    /// Cells taken from `q` and not yet on the wire (attributed; see `track`).
    in_transit: [u32; 2],
    /// Edge high-water mark reached: the packaging edge must wait.
    hw_blocked: [bool; 2],
    /// N23: credit for the successor in each direction; cells forwarded
    /// since the last credit cell sent back; out of the ring for lack of
    /// credit.
    credit: [i32; 2],
    forwarded: [u32; 2],
    credit_blocked: [bool; 2],
}

impl HopQ {
    fn out_leg(&self, d: Dir) -> Leg {
        match d {
            Dir::Forward => self.next,
            Dir::Backward => self.prev,
        }
    }
    fn in_leg(&self, d: Dir) -> Leg {
        self.out_leg(d.opposite())
    }
}

fn dir_of(d: usize) -> Dir {
    if d == 0 {
        Dir::Forward
    } else {
        Dir::Backward
    }
}

/// A TCP connection to a neighbour.
#[derive(Debug)]
struct Link {
    peer: NodeId,
    global: u32,
    initiator: bool,
    sock: Option<Sock>,
    open: bool,
    /// Circuit id on this link → hop index.
    circ_hops: Vec<u32>,
    /// A partly received cell; allocated at the link's first partial cell
    /// and kept (an idle link never has one, and a network holds tens of
    /// thousands of links).
    partial: Option<Box<[u8; CELL_LEN]>>,
    plen: usize,
    /// Bytes taken from the circuit queues that the socket has not accepted yet.
    leftover: Option<Bytes>,
    /// Round-robin ring of queue keys (`hop·2 + dir`) with cells for this link.
    active: VecDeque<u32>,
    in_read: bool,
    in_write: bool,
    /// `Fill`: the socket refused bytes; wait for `Writable`.
    wait_writable: bool,
    /// `Kist`: bytes this link may still write in the current run.
    kist_left: u64,
    /// Bytes produced for this link so far (stream offset of the next byte).
    produced: u64,
    /// `(end offset, queue key)` of produced cells that may not be on the
    /// wire yet (only when tracking).
    attrib: VecDeque<(u64, u32)>,
    /// N23: circuit ids owed a credit cell on this link.
    credits_out: VecDeque<u16>,
}

impl Link {
    fn has_data(&self) -> bool {
        self.leftover.is_some() || !self.active.is_empty() || !self.credits_out.is_empty()
    }
}

/// What a write turn on a link ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turn {
    /// Nothing (more) to write.
    Idle,
    /// Used its share; more to write.
    More,
    /// The socket (Fill) or the KIST limit refused more.
    Stalled,
    /// The write bucket is empty.
    Bucket,
}

/// The vanilla (TCP) transport of one node.
pub struct VanillaTransport {
    cfg: TcpTransportConfig,
    links: Vec<Link>,
    hops: Vec<HopQ>,
    by_sock: BTreeMap<Sock, u32>,
    /// Accepted sockets before their NETINFO cell: the partial cell so far.
    unbound: BTreeMap<Sock, Vec<u8>>,
    by_global: BTreeMap<u32, u32>,
    read_ready: VecDeque<u32>,
    write_ready: VecDeque<u32>,
    /// KIST: links that hit their limit and wait for the next run.
    kist_stalled: Vec<u32>,
    kist_last_run: Option<Time>,
    kist_armed: Option<Time>,
    /// A write turn's cells, in order: circuit id, command and pool slot
    /// (kept between turns for its allocation).
    turn: Vec<(u16, u8, u32)>,
    /// Attribute unsent bytes to circuits (for per-hop queue traces).
    track: bool,
    queued_total: u64,
    stats: TransportStats,
}

impl VanillaTransport {
    pub fn new(cfg: TcpTransportConfig, plan: &NodePlan, track: bool) -> VanillaTransport {
        let hops = plan
            .hops
            .iter()
            .map(|h| HopQ {
                prev: h.prev,
                next: h.next,
                q: [VecDeque::new(), VecDeque::new()],
                active: [false; 2],
                in_transit: [0; 2],
                hw_blocked: [false; 2],
                credit: [cfg.credits.map_or(0, |c| c.start() as i32); 2],
                forwarded: [0; 2],
                credit_blocked: [false; 2],
            })
            .collect();
        let mut by_global = BTreeMap::new();
        let links = plan
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                by_global.insert(l.global, i as u32);
                let max = l.circuits.iter().map(|c| c.0).max().unwrap_or(0) as usize;
                let mut circ_hops = vec![NO_HOP; max + 1];
                for &(cid, hop) in &l.circuits {
                    circ_hops[cid as usize] = hop;
                }
                Link {
                    peer: l.peer,
                    global: l.global,
                    initiator: l.initiator,
                    sock: None,
                    open: false,
                    circ_hops,
                    partial: None,
                    plen: 0,
                    leftover: None,
                    active: VecDeque::new(),
                    in_read: false,
                    in_write: false,
                    wait_writable: false,
                    kist_left: 0,
                    produced: 0,
                    attrib: VecDeque::new(),
                    credits_out: VecDeque::new(),
                }
            })
            .collect();
        VanillaTransport {
            cfg,
            links,
            hops,
            by_sock: BTreeMap::new(),
            unbound: BTreeMap::new(),
            by_global,
            read_ready: VecDeque::new(),
            write_ready: VecDeque::new(),
            kist_stalled: Vec::new(),
            kist_last_run: None,
            kist_armed: None,
            turn: Vec::new(),
            track,
            queued_total: 0,
            stats: TransportStats::default(),
        }
    }

    /// The packaging edge's high-water mark: the configured one, or N23's
    /// per-hop bound of `n2 + n3` cells.
    fn highwater(&self) -> Option<(u32, u32)> {
        self.cfg.edge_highwater.or(match self.cfg.credits {
            Some(c) if c.gating == N23Gating::PerHop => Some((c.start(), c.start() - 1)),
            _ => None,
        })
    }

    /// N23 with per-hop gating.
    fn per_hop(&self) -> Option<N23Config> {
        self.cfg.credits.filter(|c| c.gating == N23Gating::PerHop)
    }

    /// N23: `(hop, d)` forwarded (or delivered) one cell; every `n2` cells a
    /// credit cell goes back on the link the cells came from.
    fn forwarded(&mut self, hop: u32, d: usize) {
        let Some(c) = self.cfg.credits else { return };
        let h = &mut self.hops[hop as usize];
        h.forwarded[d] += 1;
        if h.forwarded[d] < c.n2 {
            return;
        }
        h.forwarded[d] -= c.n2;
        if let Some((l, circ_id)) = h.in_leg(dir_of(d)).link() {
            self.links[l as usize].credits_out.push_back(circ_id);
            self.stats.credits_out += 1;
            self.mark_write(l);
        }
    }

    /// N23: a credit cell for `hop` arrived on link `l`.
    fn credit_in(&mut self, l: u32, hop: u32, io: &mut Io) {
        let Some(c) = self.cfg.credits else {
            self.stats.dropped += 1;
            return;
        };
        self.stats.credits_in += 1;
        let h = &mut self.hops[hop as usize];
        // The credit is for the direction whose cells leave on `l`.
        let d = if h.next.link().map(|x| x.0) == Some(l) {
            0
        } else {
            1
        };
        let before = h.credit[d];
        h.credit[d] = (h.credit[d] + c.n2 as i32).min(c.start() as i32);
        match c.gating {
            N23Gating::PerHop => {
                if h.credit_blocked[d] && h.credit[d] > 0 {
                    h.credit_blocked[d] = false;
                    if !h.q[d].is_empty() && !h.active[d] {
                        h.active[d] = true;
                        self.links[l as usize].active.push_back(hop * 2 + d as u32);
                        self.mark_write(l);
                    }
                }
            }
            N23Gating::EdgeOnly => {
                if before <= 0 && h.credit[d] > 0 && h.in_leg(dir_of(d)) == Leg::Edge {
                    io.writable.push((hop, dir_of(d)));
                }
            }
        }
    }

    fn kist(&self) -> Option<(f64, hopwise_proto::time::Dur)> {
        match self.cfg.write {
            WritePolicy::Kist { factor, interval } => Some((factor, interval)),
            WritePolicy::Fill => None,
        }
    }

    fn mark_read(&mut self, l: u32) {
        let link = &mut self.links[l as usize];
        if !link.in_read {
            link.in_read = true;
            self.read_ready.push_back(l);
        }
    }

    fn mark_write(&mut self, l: u32) {
        let link = &mut self.links[l as usize];
        if !link.in_write && !link.wait_writable && link.open {
            link.in_write = true;
            self.write_ready.push_back(l);
        }
    }

    /// Appends a cell to `(hop, dir)`'s queue and activates it on its link.
    fn enqueue(&mut self, hop: u32, d: Dir, slot: u32) {
        let h = &mut self.hops[hop as usize];
        let Some((l, _)) = h.out_leg(d).link() else {
            unreachable!("cells are only queued towards links")
        };
        h.q[d.index()].push_back(slot);
        self.queued_total += 1;
        if !h.active[d.index()] {
            h.active[d.index()] = true;
            self.links[l as usize]
                .active
                .push_back(hop * 2 + d.index() as u32);
        }
        self.mark_write(l);
    }

    /// The next cell for link `l`, round robin over its circuits (with
    /// per-hop N23, only circuits holding credit).
    fn take_cell(&mut self, l: u32, io: &mut Io) -> Option<(u32, u32)> {
        let gated = self.per_hop().is_some();
        let low = self.highwater().map_or(0, |x| x.1);
        while let Some(qk) = self.links[l as usize].active.pop_front() {
            let (hop, d) = (qk / 2, (qk % 2) as usize);
            let h = &mut self.hops[hop as usize];
            if gated && h.credit[d] <= 0 && !h.q[d].is_empty() {
                h.active[d] = false;
                h.credit_blocked[d] = true;
                self.stats.credit_stalls += 1;
                continue;
            }
            match h.q[d].pop_front() {
                Some(slot) => {
                    self.queued_total -= 1;
                    if gated {
                        h.credit[d] -= 1;
                    }
                    if h.q[d].is_empty() {
                        h.active[d] = false;
                    } else {
                        self.links[l as usize].active.push_back(qk);
                    }
                    if h.hw_blocked[d] && h.q[d].len() as u32 <= low {
                        h.hw_blocked[d] = false;
                        io.writable.push((hop, dir_of(d)));
                    }
                    self.forwarded(hop, d);
                    return Some((qk, slot));
                }
                None => h.active[d] = false,
            }
        }
        None
    }

    /// Handles one complete cell read from link `l`.
    fn process_cell(&mut self, l: u32, cell: &[u8], sh: &mut Shared<'_>) {
        let circ_id = u16::from_be_bytes([cell[0], cell[1]]);
        if cell[2] != CMD_RELAY && cell[2] != CMD_CREDIT {
            return; // padding, or a repeated NETINFO
        }
        let hop = self.links[l as usize]
            .circ_hops
            .get(circ_id as usize)
            .copied()
            .unwrap_or(NO_HOP);
        if hop == NO_HOP {
            self.stats.dropped += 1;
            return;
        }
        if cell[2] == CMD_CREDIT {
            self.credit_in(l, hop, sh.io);
            return;
        }
        self.stats.cells_in += 1;
        let slot = sh.pool.store(&cell[3..CELL_LEN]);
        let h = &self.hops[hop as usize];
        let d = if h.prev.link().map(|x| x.0) == Some(l) {
            Dir::Forward
        } else {
            Dir::Backward
        };
        match h.out_leg(d) {
            Leg::Edge => {
                sh.io.delivered.push((hop, d, slot));
                self.forwarded(hop, d.index());
            }
            Leg::Link { .. } => self.enqueue(hop, d, slot),
        }
    }

    /// Cuts read bytes into cells.
    fn ingest(&mut self, l: u32, data: &[u8], sh: &mut Shared<'_>) {
        let mut d = data;
        let plen = self.links[l as usize].plen;
        if plen > 0 {
            let n = (CELL_LEN - plen).min(d.len());
            let link = &mut self.links[l as usize];
            let partial = link.partial.as_mut().expect("a partial cell is held");
            partial[plen..plen + n].copy_from_slice(&d[..n]);
            link.plen += n;
            d = &d[n..];
            if link.plen == CELL_LEN {
                link.plen = 0;
                let cell = **partial;
                self.process_cell(l, &cell, sh);
            }
        }
        while d.len() >= CELL_LEN {
            self.process_cell(l, &d[..CELL_LEN], sh);
            d = &d[CELL_LEN..];
        }
        if !d.is_empty() {
            let link = &mut self.links[l as usize];
            let partial = link.partial.get_or_insert_with(|| Box::new([0; CELL_LEN]));
            partial[..d.len()].copy_from_slice(d);
            link.plen = d.len();
        }
    }

    /// Reads the NETINFO cell of an accepted socket and binds it to its link.
    fn read_netinfo(&mut self, cx: &mut Cx<'_>, sock: Sock) {
        let Some(buf) = self.unbound.get_mut(&sock) else {
            return;
        };
        while buf.len() < CELL_LEN {
            match cx.recv(sock, CELL_LEN - buf.len()) {
                Some(b) => buf.extend_from_slice(&b),
                None => return,
            }
        }
        let buf = self.unbound.remove(&sock).expect("present");
        self.stats.bytes_in += CELL_LEN as u64;
        if buf[2] != CMD_NETINFO {
            self.stats.dropped += 1;
            return;
        }
        let global = u32::from_be_bytes([buf[3], buf[4], buf[5], buf[6]]);
        let Some(&l) = self.by_global.get(&global) else {
            self.stats.dropped += 1;
            return;
        };
        self.by_sock.insert(sock, l);
        self.links[l as usize].sock = Some(sock);
        self.open_link(cx, l);
        if cx.conn(sock).is_some_and(|c| c.recv_ready() > 0) {
            self.mark_read(l);
        }
    }

    /// The connection is up (handshake done, or the initiator identified):
    /// send our NETINFO cell, as both ends of a Tor link do, and start
    /// writing. The initiator's NETINFO names the link; the acceptor's reply
    /// also carries the ACK of it, so neither end's first cells wait for a
    /// delayed ACK under Nagle.
    fn open_link(&mut self, cx: &mut Cx<'_>, l: u32) {
        let link = &mut self.links[l as usize];
        let Some(sock) = link.sock else { return };
        link.open = true;
        let mut cell = [0u8; CELL_LEN];
        cell[2] = CMD_NETINFO;
        cell[3..7].copy_from_slice(&link.global.to_be_bytes());
        let took = cx.send(sock, Bytes::copy_from_slice(&cell));
        debug_assert_eq!(took, CELL_LEN);
        link.produced += CELL_LEN as u64;
        self.stats.bytes_out += took as u64;
        self.mark_write(l);
    }

    /// Drops attribution entries of cells that are on the wire by now.
    fn prune(&mut self, cx: &Cx<'_>, l: u32) {
        let link = &self.links[l as usize];
        if !self.track || link.attrib.is_empty() {
            return;
        }
        let Some(c) = link.sock.and_then(|s| cx.conn(s)) else {
            return;
        };
        let buffered = c.send_buffered();
        let unsent = buffered - c.outstanding().min(buffered);
        let held = unsent + link.leftover.as_ref().map_or(0, |b| b.len() as u64);
        let sent = link.produced.saturating_sub(held);
        let link = &mut self.links[l as usize];
        while let Some(&(end, qk)) = link.attrib.front() {
            if end > sent {
                break;
            }
            link.attrib.pop_front();
            let h = &mut self.hops[(qk / 2) as usize];
            h.in_transit[(qk % 2) as usize] -= 1;
        }
    }

    /// One write turn on link `l`.
    fn write_turn(&mut self, cx: &mut Cx<'_>, l: u32, sh: &mut Shared<'_>) -> Turn {
        let now = cx.now();
        let kist = self.kist().is_some();
        let link = &self.links[l as usize];
        let Some(sock) = link.sock.filter(|_| link.open) else {
            return Turn::Idle;
        };
        if !link.has_data() {
            return Turn::Idle;
        }
        if sh.buckets.tokens(Side::Write, now) == Some(0) {
            return Turn::Bucket;
        }
        let mut share = sh.buckets.share(Side::Write, now, CELL_LEN as u64) as usize;
        // What the connection's outbuf still holds goes first.
        if let Some(b) = self.links[l as usize].leftover.take() {
            let n = b.len().min(share);
            let took = cx.send(sock, b.slice(..n));
            self.wrote(l, took, now, sh);
            if took < b.len() {
                self.links[l as usize].leftover = Some(b.slice(took..));
            }
            if took < n {
                return self.stall(l);
            }
            share -= took;
            if share == 0 {
                return Turn::More;
            }
        }
        let room = if kist {
            share.min(self.links[l as usize].kist_left as usize)
        } else {
            let space = cx.conn(sock).map_or(0, |c| c.send_space()) as usize;
            // A full socket still gets one cell, so that it refuses it and
            // reports `Writable` once ACKs free space (write until EAGAIN).
            share.min(space.max(1))
        };
        if room == 0 {
            return if self.links[l as usize].has_data() {
                self.stall(l)
            } else {
                Turn::Idle
            };
        }
        let cells = room.div_ceil(CELL_LEN);
        // The turn's cells are chosen first and then built into a buffer of
        // exactly their size: the socket's send buffer holds it until the
        // last of its bytes is acknowledged, so a buffer shared between
        // turns (or sized for the largest turn) would keep every node's
        // unused room alive, tens of kilobytes per client in a Tor-sized
        // network.
        let mut turn = std::mem::take(&mut self.turn);
        for _ in 0..cells {
            if let Some(cid) = self.links[l as usize].credits_out.pop_front() {
                // N23 credit cell: circuit id, command, an empty body.
                turn.push((cid, CMD_CREDIT, u32::MAX));
                continue;
            }
            let Some((qk, slot)) = self.take_cell(l, sh.io) else {
                break;
            };
            let h = &self.hops[(qk / 2) as usize];
            let d = if qk % 2 == 0 {
                Dir::Forward
            } else {
                Dir::Backward
            };
            let (_, circ_id) = h.out_leg(d).link().expect("queued towards a link");
            turn.push((circ_id, CMD_RELAY, slot));
            if self.track {
                let link = &mut self.links[l as usize];
                link.attrib
                    .push_back((link.produced + (turn.len() * CELL_LEN) as u64, qk));
                self.hops[(qk / 2) as usize].in_transit[(qk % 2) as usize] += 1;
            }
        }
        let built = turn.len() as u64;
        let mut buf: Vec<u8> = Vec::with_capacity(turn.len() * CELL_LEN);
        for (circ_id, cmd, slot) in turn.drain(..) {
            buf.extend_from_slice(&circ_id.to_be_bytes());
            buf.push(cmd);
            if cmd == CMD_CREDIT {
                buf.extend_from_slice(&[0u8; CELL_LEN - 3]);
            } else {
                sh.pool.append_to(slot, &mut buf);
                sh.pool.free(slot);
            }
        }
        self.turn = turn;
        self.links[l as usize].produced += built * CELL_LEN as u64;
        self.stats.cells_out += built;
        if built == 0 {
            return Turn::Idle;
        }
        let chunk = Bytes::from(buf);
        let n = chunk.len().min(share);
        let took = cx.send(sock, chunk.slice(..n));
        self.wrote(l, took, now, sh);
        if took < chunk.len() {
            self.links[l as usize].leftover = Some(chunk.slice(took..));
        }
        self.prune(cx, l);
        if took < n {
            return self.stall(l);
        }
        if self.links[l as usize].has_data() {
            if kist && self.links[l as usize].kist_left == 0 {
                return self.stall(l);
            }
            Turn::More
        } else {
            Turn::Idle
        }
    }

    fn wrote(&mut self, l: u32, took: usize, now: Time, sh: &mut Shared<'_>) {
        sh.buckets.consume(Side::Write, now, took as u64);
        self.stats.bytes_out += took as u64;
        let link = &mut self.links[l as usize];
        link.kist_left = link.kist_left.saturating_sub(took as u64);
    }

    fn stall(&mut self, l: u32) -> Turn {
        self.stats.write_stalls += 1;
        if self.kist().is_none() {
            self.links[l as usize].wait_writable = true;
        }
        Turn::Stalled
    }

    /// Write turns, round robin over links, until nothing can be written.
    fn write_loop(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>) {
        while let Some(&l) = self.write_ready.front() {
            let t = self.write_turn(cx, l, sh);
            if t == Turn::Bucket {
                block_on_bucket(cx, sh.buckets, Side::Write);
                return;
            }
            self.write_ready.pop_front();
            self.links[l as usize].in_write = false;
            match t {
                Turn::More => self.mark_write(l),
                Turn::Stalled if self.kist().is_some() => self.kist_stalled.push(l),
                _ => {}
            }
        }
    }

    fn kist_limit(&self, cx: &Cx<'_>, l: u32, factor: f64) -> u64 {
        let link = &self.links[l as usize];
        let Some(c) = link.sock.and_then(|s| cx.conn(s)) else {
            return 0;
        };
        let cwnd = c.cwnd();
        let out = c.outstanding();
        let unsent = c.send_buffered().saturating_sub(out);
        let outbuf = link.leftover.as_ref().map_or(0, |b| b.len() as u64);
        let tcp_space = cwnd.saturating_sub(out);
        let extra = ((cwnd as f64 * factor) as u64).saturating_sub(unsent + outbuf);
        tcp_space + extra
    }

    fn arm_kist(&mut self, cx: &mut Cx<'_>, at: Time) {
        if self.kist_armed.is_none_or(|a| a > at) {
            self.kist_armed = Some(at);
            cx.set_timer(at, token::make(token::TRANSPORT, 0));
        }
    }
}

impl Transport for VanillaTransport {
    fn start(&mut self, cx: &mut Cx<'_>) {
        if self.links.iter().any(|l| !l.initiator) {
            cx.listen(self.cfg.or_port, self.cfg.tcp.clone(), self.cfg.cc.clone())
                .expect("one Tor node per host");
        }
    }

    fn connect(&mut self, cx: &mut Cx<'_>) {
        for l in 0..self.links.len() {
            let link = &self.links[l];
            if !link.initiator {
                continue;
            }
            let sock = cx
                .connect(
                    link.peer,
                    self.cfg.or_port,
                    self.cfg.tcp.clone(),
                    &self.cfg.cc,
                )
                .expect("the peer relay listens");
            self.links[l].sock = Some(sock);
            self.by_sock.insert(sock, l as u32);
        }
    }

    fn tcp_event(
        &mut self,
        cx: &mut Cx<'_>,
        sock: Sock,
        ev: SockEvent,
        _sh: &mut Shared<'_>,
    ) -> bool {
        if let Some(&l) = self.by_sock.get(&sock) {
            match ev {
                SockEvent::Connected => self.open_link(cx, l),
                SockEvent::Readable => self.mark_read(l),
                SockEvent::Writable => {
                    self.links[l as usize].wait_writable = false;
                    self.mark_write(l);
                }
                SockEvent::PeerClosed
                | SockEvent::Closed
                | SockEvent::Reset
                | SockEvent::TimedOut => {
                    self.links[l as usize].open = false;
                }
                SockEvent::Accepted => {}
            }
            return true;
        }
        match ev {
            SockEvent::Accepted => {
                self.unbound.insert(sock, Vec::with_capacity(CELL_LEN));
                self.read_netinfo(cx, sock);
                true
            }
            SockEvent::Readable if self.unbound.contains_key(&sock) => {
                self.read_netinfo(cx, sock);
                true
            }
            _ => self.unbound.contains_key(&sock),
        }
    }

    fn timer(&mut self, cx: &mut Cx<'_>, _payload: u64, _sh: &mut Shared<'_>) {
        if self.kist_armed.is_some_and(|a| a <= cx.now()) {
            self.kist_armed = None;
        }
    }

    fn bucket_refilled(&mut self, _side: Side) {
        // Blocked links stay at the head of their ready queue; the node's next
        // `poll_reads`/`poll_writes` resumes them in order.
    }

    fn can_send(&self, hop: u32, dir: Dir) -> bool {
        let h = &self.hops[hop as usize];
        match self.cfg.credits {
            Some(c) if c.gating == N23Gating::EdgeOnly && h.credit[dir.index()] <= 0 => false,
            _ => !h.hw_blocked[dir.index()],
        }
    }

    fn send_cell(
        &mut self,
        _cx: &mut Cx<'_>,
        hop: u32,
        dir: Dir,
        cell: u32,
        _sh: &mut Shared<'_>,
    ) -> bool {
        self.enqueue(hop, dir, cell);
        if self
            .cfg
            .credits
            .is_some_and(|c| c.gating == N23Gating::EdgeOnly)
        {
            self.hops[hop as usize].credit[dir.index()] -= 1;
        }
        if let Some((high, _)) = self.highwater() {
            let h = &mut self.hops[hop as usize];
            if h.q[dir.index()].len() as u32 >= high {
                h.hw_blocked[dir.index()] = true;
            }
        }
        true
    }

    fn poll_reads(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>) {
        let now = cx.now();
        while let Some(&l) = self.read_ready.front() {
            let Some(sock) = self.links[l as usize].sock else {
                self.read_ready.pop_front();
                self.links[l as usize].in_read = false;
                continue;
            };
            let avail = cx.conn(sock).map_or(0, |c| c.recv_ready()) as usize;
            if avail == 0 {
                self.read_ready.pop_front();
                self.links[l as usize].in_read = false;
                continue;
            }
            if sh.buckets.tokens(Side::Read, now) == Some(0) {
                block_on_bucket(cx, sh.buckets, Side::Read);
                return;
            }
            self.read_ready.pop_front();
            self.links[l as usize].in_read = false;
            let share = sh.buckets.share(Side::Read, now, CELL_LEN as u64) as usize;
            let mut want = share.min(avail);
            while want > 0 {
                let Some(b) = cx.recv(sock, want) else { break };
                want -= b.len();
                sh.buckets.consume(Side::Read, now, b.len() as u64);
                self.stats.bytes_in += b.len() as u64;
                self.ingest(l, &b, sh);
            }
            if cx.conn(sock).is_some_and(|c| c.recv_ready() > 0) {
                self.mark_read(l);
            }
        }
    }

    fn poll_writes(&mut self, cx: &mut Cx<'_>, sh: &mut Shared<'_>) {
        let Some((factor, interval)) = self.kist() else {
            self.write_loop(cx, sh);
            return;
        };
        if self.write_ready.is_empty() && self.kist_stalled.is_empty() {
            return;
        }
        let now = cx.now();
        if let Some(last) = self.kist_last_run {
            if now < last + interval {
                self.arm_kist(cx, last + interval);
                return;
            }
        }
        // A scheduler run: every pending socket gets its limit, then cells
        // are written round robin until the limits (or the bucket) stop them.
        self.kist_last_run = Some(now);
        for l in std::mem::take(&mut self.kist_stalled) {
            self.mark_write(l);
        }
        for i in 0..self.write_ready.len() {
            let l = self.write_ready[i];
            let lim = self.kist_limit(cx, l, factor);
            self.links[l as usize].kist_left = lim;
        }
        self.write_loop(cx, sh);
        if !self.kist_stalled.is_empty() {
            self.arm_kist(cx, now + interval);
        }
    }

    fn sample_hop(&mut self, cx: &mut Cx<'_>, hop: u32) -> HopSample {
        let h = &self.hops[hop as usize];
        let links: Vec<u32> = [h.prev, h.next]
            .iter()
            .filter_map(|x| x.link().map(|y| y.0))
            .collect();
        for l in links {
            self.prune(cx, l);
        }
        let h = &self.hops[hop as usize];
        HopSample {
            queued: [h.q[0].len() as u32, h.q[1].len() as u32],
            in_transit: h.in_transit,
            swnd: [0; 2],
            credit: if self.cfg.credits.is_some() {
                h.credit
            } else {
                [0; 2]
            },
            ..HopSample::default()
        }
    }

    fn sample_node(&mut self, cx: &mut Cx<'_>) -> NodeSample {
        let mut s = NodeSample {
            queued_cells: self.queued_total,
            ..NodeSample::default()
        };
        for link in &self.links {
            s.unsent_bytes += link.leftover.as_ref().map_or(0, |b| b.len() as u64);
            if let Some(c) = link.sock.and_then(|x| cx.conn(x)) {
                let b = c.send_buffered();
                s.unsent_bytes += b - c.outstanding().min(b);
                s.unread_bytes += c.recv_ready();
            }
        }
        s
    }

    fn stats(&self) -> TransportStats {
        self.stats
    }
}
