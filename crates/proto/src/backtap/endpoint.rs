//! The BackTap endpoint: one per node, all its peers and circuits.
//!
//! Data structures (all deterministic, O(1) amortised per cell unless noted):
//!
//! * circuits in a `Vec` indexed by [`CircuitId`] (ids are not reused), each
//!   with two fused queues ([`Queue`]): a `VecDeque` ring of cell slots
//!   indexed by `seq − head`, with the out-of-order cells' slots in a map by
//!   sequence number, and a ring of first-send times indexed by
//!   `seq − fwd_seen`;
//! * the cell bodies of all queues in one [`crate::slab::Slab`] (chunks
//!   that never move, slots reused): a queue holds four bytes per cell, and
//!   the endpoint's memory follows the cells it holds, not every queue's
//!   largest burst;
//! * `(peer, circ_id) → (circuit, side)` in a hash map used for lookups only
//!   (never iterated);
//! * the scheduler's round-robin list of queues that have a sendable cell
//!   (a `VecDeque`; a queue joins when it becomes sendable and leaves when it
//!   is not);
//! * one timer heap (binary heap, O(log n)) for RTO/probe deadlines and
//!   pack delays, with lazy deletion: a deadline that moves later keeps its
//!   old entry until that entry reaches the top, so restarting the RTO on
//!   every ACK costs nothing;
//! * per peer the datagram being filled, as a list of item references that
//!   are serialized when the datagram leaves: feedback therefore goes out with
//!   its latest cumulative values (coalescing in place), and a cell ACKed in
//!   the meantime is skipped.

mod feedback;

use super::queue::{AckResult, Arrival, Cells, Queue, Timer};
use super::wire::{self, CellBody, DecodeError, Feedback, Item, CELL_ITEM_LEN, FLAG_CLOSE};
use super::{
    CellLayer, CircuitId, Config, Direction, EndpointStats, Event, Full, HopStats, PeerId,
};
use crate::bucket::TokenBucket;
use crate::rtt::RttEstimator;
use crate::time::{Dur, Time};
use feedback::{PItem, Pending};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;

/// A forwarding hop's onion layers: forward, backward.
pub type Layers = (Box<dyn CellLayer>, Box<dyn CellLayer>);

/// A small multiplicative hasher for `(peer, circ_id)` and circuit-id keys.
/// The maps are for lookups: none is walked in hash order, so the hash
/// cannot influence output order.
#[derive(Default)]
struct LegHasher(u64);
impl Hasher for LegHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
}
type LegMap = HashMap<u64, (u32, Side), BuildHasherDefault<LegHasher>>;
/// Circuits by id. Lookups on the hot path; the one walk over it
/// ([`Endpoint::held_cells`]) sorts by id, so the hash never orders output.
type CircMap = HashMap<u32, Box<Circuit>, BuildHasherDefault<LegHasher>>;

fn leg_key(peer: u32, circ_id: u32) -> u64 {
    (peer as u64) << 32 | circ_id as u64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Prev,
    Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Leg {
    peer: u32,
    circ_id: u32,
}

struct Circuit {
    prev: Option<Leg>,
    next: Option<Leg>,
    q: [Queue; 2],
}

impl Circuit {
    fn in_leg(&self, d: usize) -> Option<Leg> {
        if d == 0 {
            self.prev
        } else {
            self.next
        }
    }
    fn out_leg(&self, d: usize) -> Option<Leg> {
        if d == 0 {
            self.next
        } else {
            self.prev
        }
    }
}

/// A queue: circuit index and direction index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct QRef {
    c: u32,
    d: u8,
}

struct Peer {
    addr: u64,
    /// Smallest FORWARD-RTT of any circuit sending to this peer.
    base_rtt: Dur,
    /// The RTT estimate of the last circuit to this peer that took a sample:
    /// new circuits start from it instead of RFC 6298's 1 s.
    rtt_seed: Option<RttEstimator>,
    open: Option<Pending>,
    pack_at: Option<Time>,
    heap_at: Option<Time>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerKey {
    Queue(QRef),
    Pack(u32),
}

/// A BackTap node. See the module documentation of [`super`] for the driving
/// contract and `docs/backtap.md` for the protocol.
pub struct Endpoint {
    cfg: Config,
    peers: Vec<Peer>,
    /// Installed circuits by id. Ids are handed out in order and not reused
    /// (until the counter wraps), so memory follows the circuits installed
    /// now, not all that ever were, and a stale reference (a timer, a
    /// packed item) to a removed circuit finds nothing.
    circuits: CircMap,
    /// The id the next circuit gets (skipping ids still in use once the
    /// counter wraps).
    next_circuit: u32,
    legs: LegMap,
    /// Queues with a sendable cell, in ring order (circuit index, then
    /// direction): the round robin's ring.
    rr: BTreeSet<QRef>,
    /// The queue served last; the round robin resumes after it.
    rr_last: Option<QRef>,
    timers: BinaryHeap<Reverse<(Time, TimerKey)>>,
    bucket: Option<TokenBucket>,
    bucket_wake: Option<Time>,
    ready: VecDeque<(u32, Pending)>,
    spare: Vec<Vec<PItem>>,
    events: VecDeque<Event>,
    stats: EndpointStats,
    /// Circuits installed and not removed.
    live: usize,
    /// Cells all queues hold ([`Endpoint::total_held`]).
    held: usize,
    /// The bodies of those cells; the queues keep their slots.
    cells: Cells,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("peers", &self.peers.len())
            .field("circuits", &self.live)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    pub fn new(mut cfg: Config) -> Endpoint {
        cfg.payload_budget = cfg.payload_budget.max(wire::HEADER_LEN + CELL_ITEM_LEN);
        cfg.max_window = cfg.max_window.max(1);
        cfg.circuit_limit = cfg.circuit_limit.max(1);
        let bucket = cfg
            .bucket
            .map(|b| TokenBucket::new(b.rate, b.burst, b.refill));
        Endpoint {
            cfg,
            peers: Vec::new(),
            circuits: CircMap::default(),
            next_circuit: 0,
            legs: LegMap::default(),
            rr: BTreeSet::new(),
            rr_last: None,
            timers: BinaryHeap::new(),
            bucket,
            bucket_wake: None,
            ready: VecDeque::new(),
            spare: Vec::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
            live: 0,
            held: 0,
            cells: Cells::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Registers a neighbour; `addr` is opaque to the protocol (a node id, a
    /// socket address index).
    pub fn add_peer(&mut self, addr: u64) -> PeerId {
        self.peers.push(Peer {
            addr,
            base_rtt: Dur::MAX,
            rtt_seed: None,
            open: None,
            pack_at: None,
            heap_at: None,
        });
        PeerId(self.peers.len() as u32 - 1)
    }

    /// Forgets what was learnt about the path to `p` (its base RTT and the
    /// RTT estimate new circuits start from), for when the neighbour behind
    /// it changes: a link that went down, whose slot a new neighbour may
    /// take. Call once no circuit uses `p`: what is packed for `p` and not
    /// yet sent is discarded too.
    pub fn reset_peer(&mut self, p: PeerId) {
        let Some(peer) = self.peers.get_mut(p.0 as usize) else {
            return;
        };
        peer.base_rtt = Dur::MAX;
        peer.rtt_seed = None;
        // Feedback already packed (duplicate ACKs, requests) names circuit
        // ids of the old neighbour: it must not reach a new one.
        peer.pack_at = None;
        let open = peer.open.take();
        let (gone, keep): (VecDeque<_>, VecDeque<_>) =
            self.ready.drain(..).partition(|(q, _)| *q == p.0);
        self.ready = keep;
        for mut d in open.into_iter().chain(gone.into_iter().map(|(_, d)| d)) {
            d.items.clear();
            self.spare.push(d.items);
        }
    }

    /// The `addr` given to [`Endpoint::add_peer`].
    pub fn peer_addr(&self, p: PeerId) -> Option<u64> {
        self.peers.get(p.0 as usize).map(|p| p.addr)
    }

    /// Installs a circuit at this node. `prev`/`next` are `(peer, circ_id)`;
    /// `None` means the application is that side (client: `prev = None`;
    /// exit: `next = None`).
    ///
    /// # Panics
    /// If a peer is unknown or a `(peer, circ_id)` leg is already in use:
    /// both are errors of the caller, not of the network.
    pub fn add_circuit(
        &mut self,
        prev: Option<(PeerId, u32)>,
        next: Option<(PeerId, u32)>,
    ) -> CircuitId {
        let mut idx = self.next_circuit;
        while self.circuits.contains_key(&idx) {
            idx = idx.wrapping_add(1);
        }
        self.next_circuit = idx.wrapping_add(1);
        let mut mk = |l: Option<(PeerId, u32)>, side| {
            l.map(|(p, circ_id)| {
                assert!(
                    (p.0 as usize) < self.peers.len(),
                    "add_circuit: unknown peer {p:?}"
                );
                let k = leg_key(p.0, circ_id);
                assert!(
                    !self.legs.contains_key(&k),
                    "add_circuit: leg ({p:?}, circ_id {circ_id}) already in use"
                );
                self.legs.insert(k, (idx, side));
                Leg { peer: p.0, circ_id }
            })
        };
        let prev = mk(prev, Side::Prev);
        let next = mk(next, Side::Next);
        let cfg = &self.cfg;
        let mut c = Circuit {
            prev,
            next,
            q: [
                Queue::new(cfg, prev.is_none(), next.is_none()),
                Queue::new(cfg, next.is_none(), prev.is_none()),
            ],
        };
        for d in 0..2 {
            if let Some(seed) = c
                .out_leg(d)
                .and_then(|l| self.peers[l.peer as usize].rtt_seed.clone())
            {
                c.q[d].rtt = seed;
            }
        }
        self.circuits.insert(idx, Box::new(c));
        self.live += 1;
        CircuitId(idx)
    }

    /// Turns the last hop of circuit `c` into a forwarding hop: `next` becomes
    /// its successor leg, its two queues start afresh as a relay's, and
    /// `layers` (forward, backward), if given, are the onion layers its
    /// queues apply to every cell they forward ([`CellLayer`]). Only a
    /// circuit that has carried no cell yet can be extended (a telescoping
    /// circuit is extended before it is used); otherwise, or if `c` is not a
    /// last hop, the layers are handed back.
    ///
    /// # Panics
    /// If the peer is unknown or the leg is already in use (caller errors,
    /// as for [`Endpoint::add_circuit`]).
    pub fn extend_circuit(
        &mut self,
        c: CircuitId,
        next: (PeerId, u32),
        layers: Option<Layers>,
    ) -> Result<(), Option<Layers>> {
        let Some(circ) = self.circuits.get(&c.0) else {
            return Err(layers);
        };
        if circ.next.is_some() || circ.prev.is_none() || self.carried_cells(c) {
            return Err(layers);
        }
        let (p, circ_id) = next;
        assert!(
            (p.0 as usize) < self.peers.len(),
            "extend_circuit: unknown peer {p:?}"
        );
        let k = leg_key(p.0, circ_id);
        assert!(
            !self.legs.contains_key(&k),
            "extend_circuit: leg ({p:?}, circ_id {circ_id}) already in use"
        );
        self.legs.insert(k, (c.0, Side::Next));
        let seed = self.peers[p.0 as usize].rtt_seed.clone();
        let prev_seed = circ
            .prev
            .and_then(|l| self.peers[l.peer as usize].rtt_seed.clone());
        let cfg = &self.cfg;
        let circ = self.circuits.get_mut(&c.0).expect("checked");
        circ.next = Some(Leg { peer: p.0, circ_id });
        circ.q = [Queue::new(cfg, false, false), Queue::new(cfg, false, false)];
        if let Some(s) = seed {
            circ.q[0].rtt = s;
        }
        if let Some(s) = prev_seed {
            circ.q[1].rtt = s;
        }
        if let Some((f, b)) = layers {
            circ.q[0].layer = Some(f);
            circ.q[1].layer = Some(b);
        }
        self.tidy();
        Ok(())
    }

    /// Whether circuit `c` has packaged or received any cell (in either
    /// direction).
    pub fn carried_cells(&self, c: CircuitId) -> bool {
        self.circuits
            .get(&c.0)
            .is_some_and(|x| x.q.iter().any(|q| q.st.cells_in > 0 || q.tail > 0))
    }

    /// Applies the onion layer of circuit `c`'s `dir` queue to `body`, as if
    /// the cell had passed through the queue (used for the few cells that
    /// travel beside the transport while a circuit is being extended).
    /// `false` if the queue has no layer.
    pub fn apply_layer(&mut self, c: CircuitId, dir: Direction, body: &mut CellBody) -> bool {
        match self
            .queue_mut(Self::qref(c, dir))
            .and_then(|q| q.layer.as_mut())
        {
            Some(l) => {
                l.apply(body);
                true
            }
            None => false,
        }
    }

    /// Removes a circuit and everything it holds. Items already packed for
    /// it are dropped when their datagram leaves.
    pub fn remove_circuit(&mut self, c: CircuitId) {
        if let Some(circ) = self.circuits.remove(&c.0) {
            for l in [circ.prev, circ.next].into_iter().flatten() {
                self.legs.remove(&leg_key(l.peer, l.circ_id));
            }
            self.live -= 1;
            self.held -= circ.q.iter().map(Queue::held).sum::<usize>();
            let mut circ = circ;
            for q in &mut circ.q {
                q.clear(&mut self.cells);
            }
        }
        self.tidy();
    }

    fn queue(&self, r: QRef) -> Option<&Queue> {
        self.circuits.get(&r.c).map(|c| &c.q[r.d as usize])
    }

    fn queue_mut(&mut self, r: QRef) -> Option<&mut Queue> {
        self.circuits.get_mut(&r.c).map(|c| &mut c.q[r.d as usize])
    }

    fn qref(c: CircuitId, dir: Direction) -> QRef {
        QRef {
            c: c.0,
            d: dir.idx() as u8,
        }
    }

    // ------------------------------------------------------------------
    // Input

    /// A datagram arrived from `from`. A malformed datagram is rejected whole
    /// (and counted); items naming unknown circuits are skipped.
    pub fn handle_datagram(
        &mut self,
        now: Time,
        from: PeerId,
        data: &[u8],
    ) -> Result<(), DecodeError> {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        let dg = match wire::decode(data) {
            Ok(d) => d,
            Err(e) => {
                self.stats.decode_errors += 1;
                return Err(e);
            }
        };
        if from.0 as usize >= self.peers.len() {
            self.stats.unknown_circuit += dg.len() as u64;
            return Ok(());
        }
        for item in dg.items() {
            match item {
                Item::Cell(c) => {
                    self.stats.cells_in += 1;
                    self.on_cell(now, from.0, c.circ_id, c.seq, c.flags, c.body);
                }
                Item::Feedback(f) => {
                    self.stats.feedback_in += 1;
                    self.on_feedback(now, from.0, &f);
                }
                Item::Sack(s) => {
                    self.stats.feedback_in += 1;
                    self.on_sack(now, from.0, &s);
                }
            }
        }
        self.tidy();
        Ok(())
    }

    fn lookup(&self, peer: u32, circ_id: u32) -> Option<(u32, Side)> {
        self.legs.get(&leg_key(peer, circ_id)).copied()
    }

    /// Paper §3: a cell arrives from the predecessor and is queued; the
    /// predecessor is owed `ACK(tail + 1)` at once.
    fn on_cell(
        &mut self,
        now: Time,
        peer: u32,
        circ_id: u32,
        seq: u32,
        flags: u8,
        body: &CellBody,
    ) {
        let Some((c, side)) = self.lookup(peer, circ_id) else {
            self.stats.unknown_circuit += 1;
            return;
        };
        // Cells from prev travel forward, cells from next backward.
        let r = QRef {
            c,
            d: if side == Side::Prev { 0 } else { 1 },
        };
        let cfg = &self.cfg;
        let Some(q) = self.circuits.get_mut(&c).map(|x| &mut x.q[r.d as usize]) else {
            return;
        };
        if seq == 0 || q.in_app {
            self.stats.invalid_items += 1;
            return;
        }
        // OPEN is recomputed on every hop; only CLOSE travels with the cell.
        let before = q.held();
        let arrival = q.arrive(cfg, &mut self.cells, seq, flags & FLAG_CLOSE, body);
        self.held = self.held + q.held() - before;
        match arrival {
            Arrival::InOrder => {
                q.owe_ack = true;
                q.note_limited();
                self.queue_feedback(now, r);
                self.activate(r);
                self.check_edge(r);
            }
            Arrival::OutOfOrder if cfg.sack => {
                // [hopwise] A SACK (RFC 2018), coalesced per queue and sent at once.
                q.owe_ack = true;
                q.owe_sack = true;
                self.queue_feedback(now, r);
            }
            Arrival::OutOfOrder => {
                let ack = q.ack_value();
                self.push_item(now, peer, PItem::DupAck { circ_id, ack }, 10);
            }
            Arrival::Duplicate => {
                q.owe_ack = true;
                q.owe_fwd = true;
                self.queue_feedback(now, r);
            }
            Arrival::Dropped => self.stats.drops += 1,
        }
    }

    /// Feedback from `peer` on one of our legs. Feedback arriving on the next
    /// leg is about the forward direction, on the prev leg about the backward
    /// direction; a request (neither ACK nor FWD) asks for our feedback
    /// about the direction we receive on that leg.
    fn on_feedback(&mut self, now: Time, peer: u32, f: &Feedback) {
        let Some((c, side)) = self.lookup(peer, f.circ_id) else {
            self.stats.unknown_circuit += 1;
            return;
        };
        if f.ack.is_none() && f.fwd.is_none() {
            let r = QRef {
                c,
                d: if side == Side::Prev { 0 } else { 1 },
            };
            if let Some(q) = self.queue_mut(r) {
                q.owe_ack = true;
                q.owe_fwd = true;
                self.queue_feedback(now, r);
            }
            return;
        }
        let r = QRef {
            c,
            d: if side == Side::Next { 0 } else { 1 },
        };
        let cfg = &self.cfg;
        let Some(circ) = self.circuits.get_mut(&c) else {
            return;
        };
        let Some(out) = circ.out_leg(r.d as usize) else {
            return;
        };
        let q = &mut circ.q[r.d as usize];
        let before = q.held();
        let fwd_adv = f.fwd.is_some_and(|x| x > q.fwd_seen && x <= q.next_tx);
        let mut progress = false;
        let mut invalid = false;
        if let Some(a) = f.ack {
            match q.on_ack(cfg, &mut self.cells, now, a, !fwd_adv) {
                AckResult::Advanced => {
                    progress = true;
                    q.update_timer(cfg, now, true);
                    if q.rtt.has_sample() && q.rtt.backoff() == 0 {
                        self.peers[out.peer as usize].rtt_seed = Some(q.rtt.clone());
                    }
                }
                AckResult::Duplicate(_) => {}
                AckResult::Ignored => invalid |= a > q.next_tx,
            }
        }
        let mut round = false;
        if let Some(x) = f.fwd {
            invalid |= x > q.next_tx;
            if let Some(sample) = q.on_fwd(&mut self.cells, now, x) {
                q.grow_on_forward(cfg);
                let peer_base = &mut self.peers[out.peer as usize].base_rtt;
                if let Some(s) = sample {
                    *peer_base = (*peer_base).min(s);
                }
                let base = if cfg.share_base_rtt {
                    *peer_base
                } else {
                    q.own_base
                };
                round = q.maybe_end_round(cfg, base);
                progress = true;
                // FWD progress restarts the probe timer; an implied ACK the
                // retransmission timer.
                q.update_timer(cfg, now, true);
            }
        }
        if invalid {
            self.stats.invalid_items += 1;
        }
        let q = &mut self.circuits.get_mut(&c).expect("present").q[r.d as usize];
        self.held = self.held - before + q.held();
        if q.retx_due || progress || round {
            if !progress {
                q.update_timer(cfg, now, false);
            }
            self.arm(r);
            self.activate(r);
            self.check_edge(r);
        }
    }

    /// The deadline from [`Endpoint::poll_timeout`] passed.
    pub fn handle_timeout(&mut self, now: Time) {
        self.fire_timers(now);
        self.tidy();
    }

    fn fire_timers(&mut self, now: Time) {
        if self.bucket_wake.is_some_and(|t| t <= now) {
            self.bucket_wake = None;
        }
        while let Some(&Reverse((t, key))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            match key {
                TimerKey::Queue(r) => {
                    let Some(q) = self.queue_mut(r) else {
                        continue;
                    };
                    if q.heap_at != Some(t) {
                        continue;
                    }
                    q.heap_at = None;
                    // With SACK: RACK's reorder timer and the loss probe.
                    if q.on_recovery_timers(now) {
                        self.arm(r);
                        self.activate(r);
                    }
                    let cfg = &self.cfg;
                    let Some(circ) = self.circuits.get_mut(&r.c) else {
                        continue;
                    };
                    let out = circ.out_leg(r.d as usize);
                    let q = &mut circ.q[r.d as usize];
                    match q.timer {
                        Timer::Rto(d) if d <= now => {
                            q.on_rto(cfg, now);
                            self.arm(r);
                            self.activate(r);
                        }
                        Timer::Lost(d) if d <= now => {
                            q.on_lost(cfg, now);
                            self.arm(r);
                            self.activate(r);
                        }
                        Timer::Probe(d) if d <= now => {
                            q.on_probe(cfg, now);
                            self.arm(r);
                            if let Some(l) = out {
                                self.push_item(
                                    now,
                                    l.peer,
                                    PItem::Request { circ_id: l.circ_id },
                                    6,
                                );
                            }
                        }
                        _ => self.arm(r),
                    }
                }
                TimerKey::Pack(p) => {
                    let peer = &mut self.peers[p as usize];
                    if peer.heap_at != Some(t) {
                        continue;
                    }
                    peer.heap_at = None;
                    match peer.pack_at {
                        Some(d) if d <= now => self.close_open(p),
                        Some(d) => {
                            peer.heap_at = Some(d);
                            self.timers.push(Reverse((d, TimerKey::Pack(p))));
                        }
                        None => {}
                    }
                }
            }
        }
    }

    /// Makes sure the heap holds an entry no later than the queue's deadline.
    fn arm(&mut self, r: QRef) {
        let Some(q) = self.circuits.get_mut(&r.c).map(|c| &mut c.q[r.d as usize]) else {
            return;
        };
        if let Some(d) = q.deadline() {
            if q.heap_at.is_none_or(|h| d < h) {
                q.heap_at = Some(d);
                self.timers.push(Reverse((d, TimerKey::Queue(r))));
            }
        }
    }

    /// Pops stale entries off the top of the timer heap so that its top is
    /// the exact earliest deadline ([`Endpoint::poll_timeout`] is `&self`).
    fn tidy(&mut self) {
        while let Some(&Reverse((t, key))) = self.timers.peek() {
            let (heap_at, deadline) = match key {
                TimerKey::Queue(r) => match self.queue(r) {
                    Some(q) => (q.heap_at, q.deadline()),
                    None => (None, None),
                },
                TimerKey::Pack(p) => {
                    let peer = &self.peers[p as usize];
                    (peer.heap_at, peer.pack_at)
                }
            };
            if heap_at == Some(t) && deadline == Some(t) {
                break;
            }
            self.timers.pop();
            if heap_at != Some(t) {
                continue;
            }
            // The live entry of a deadline that moved: re-file it.
            let d = deadline;
            match key {
                TimerKey::Queue(r) => {
                    if let Some(q) = self.queue_mut(r) {
                        q.heap_at = d;
                    }
                }
                TimerKey::Pack(p) => self.peers[p as usize].heap_at = d,
            }
            if let Some(d) = d {
                self.timers.push(Reverse((d, key)));
            }
        }
    }

    // ------------------------------------------------------------------
    // Output

    /// The next datagram to send, and to whom. Call until `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<(PeerId, Vec<u8>)> {
        let mut out = Vec::new();
        let p = self.poll_transmit_into(now, &mut out)?;
        Some((p, out))
    }

    /// [`Endpoint::poll_transmit`] writing into a caller-owned buffer (which
    /// is cleared first), to avoid an allocation per datagram.
    pub fn poll_transmit_into(&mut self, now: Time, out: &mut Vec<u8>) -> Option<PeerId> {
        self.fire_timers(now);
        self.schedule(now);
        self.fire_timers(now);
        let r = loop {
            let Some((peer, pending)) = self.ready.pop_front() else {
                break None;
            };
            self.serialize(&pending, out);
            let mut items = pending.items;
            items.clear();
            self.spare.push(items);
            if out.len() > wire::HEADER_LEN {
                self.stats.datagrams_out += 1;
                self.stats.bytes_out += out.len() as u64;
                break Some(PeerId(peer));
            }
        };
        self.tidy();
        r
    }

    /// Shifts the relay bucket's periodic refills to `k·T − phase`
    /// ([`TokenBucket::with_phase`]), so that relays need not refill in
    /// lockstep. Call before the first cell is sent.
    pub fn set_bucket_phase(&mut self, phase: Dur) {
        self.bucket = self.bucket.take().map(|b| b.with_phase(phase));
    }

    /// Replaces the token bucket (a relay's bandwidth reloaded while it
    /// runs); `None` removes it. The new bucket starts full and keeps the
    /// old one's refill phase; circuits and their queues are untouched. The
    /// scheduler looks at the new bucket at the next
    /// [`Endpoint::poll_transmit`].
    pub fn set_bucket(&mut self, bucket: Option<super::BucketConfig>) {
        let phase = self.bucket.as_ref().map_or(Dur::ZERO, TokenBucket::phase);
        self.cfg.bucket = bucket;
        self.bucket = bucket.map(|b| TokenBucket::new(b.rate, b.burst, b.refill).with_phase(phase));
        self.bucket_wake = None;
    }

    /// The token bucket's configuration, if there is one.
    pub fn bucket(&self) -> Option<super::BucketConfig> {
        self.cfg.bucket
    }

    /// Earliest time [`Endpoint::handle_timeout`] should be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let t = self.timers.peek().map(|Reverse((t, _))| *t);
        match (t, self.bucket_wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Round-robin over queues with a sendable cell, one cell per turn
    /// (paper §3), gated by the token bucket. The ring is fixed and the turn
    /// resumes after the queue served last, as nstor's `GetNextCircuit`
    /// iterates its circuit map: a queue that falls idle and comes back keeps
    /// its place in the ring instead of joining the back of a list. That
    /// matters when the bucket releases cells in bursts: the queue served
    /// first after a refill is the one after the last burst's final turn
    /// (`docs/backtap.md`, "Scheduling, pacing and packing").
    fn schedule(&mut self, now: Time) {
        if self.bucket_wake.is_some_and(|t| now < t) {
            return;
        }
        self.bucket_wake = None;
        loop {
            let next = self
                .rr_last
                .and_then(|l| self.rr.range((Bound::Excluded(l), Bound::Unbounded)).next())
                .or_else(|| self.rr.first())
                .copied();
            let Some(r) = next else {
                break;
            };
            if !self.queue(r).is_some_and(Queue::sendable) {
                self.rr.remove(&r);
                continue;
            }
            if let Some(b) = self.bucket.as_mut() {
                let n = CELL_ITEM_LEN as u64;
                if !b.allows(now, n) {
                    if let Some(at) = b.retry_at(now, n) {
                        self.stats.bucket_stalls += 1;
                        self.bucket_wake = Some(at);
                        break;
                    }
                }
                b.consume(now, n);
            }
            self.rr_last = Some(r);
            self.send_one(now, r);
        }
    }

    /// Sends one cell of queue `r` (a due retransmission first).
    fn send_one(&mut self, now: Time, r: QRef) {
        let cfg = &self.cfg;
        let Some(circ) = self.circuits.get_mut(&r.c) else {
            self.rr.remove(&r);
            return;
        };
        let (Some(out), inl) = (circ.out_leg(r.d as usize), circ.in_leg(r.d as usize)) else {
            // Never sendable (no successor); leaving it in the ring would
            // make the round robin come back to it forever.
            self.rr.remove(&r);
            return;
        };
        let q = &mut circ.q[r.d as usize];
        let (seq, new) = q.take_for_send(now);
        // A retransmission in recovery (re)starts the lost-retransmission timer.
        q.update_timer(cfg, now, !new && q.recover.is_some());
        if new {
            // With SACK: RFC 8985 §7.2, new data (re)arms the loss probe.
            q.arm_tlp(cfg, now);
        }
        q.note_limited();
        if new && inl.is_some() {
            // Paper §3, nstor: the cell leaves downstream, so FWD is owed upstream.
            q.owe_fwd = true;
        }
        let again = q.sendable();
        self.arm(r);
        self.push_item(now, out.peer, PItem::Cell { q: r, seq }, CELL_ITEM_LEN);
        if new && inl.is_some() {
            self.queue_feedback(now, r);
        }
        if !again {
            self.rr.remove(&r);
        }
    }

    /// Adds the queue to the round-robin ring if it has something to send.
    fn activate(&mut self, r: QRef) {
        if self.queue(r).is_some_and(Queue::sendable) {
            self.rr.insert(r);
        }
    }

    /// Emits Readable/Writable on edge transitions.
    fn check_edge(&mut self, r: QRef) {
        let cfg = &self.cfg;
        let Some(q) = self.circuits.get_mut(&r.c).map(|c| &mut c.q[r.d as usize]) else {
            return;
        };
        let dir = if r.d == 0 {
            Direction::Forward
        } else {
            Direction::Backward
        };
        let circuit = CircuitId(r.c);
        if q.out_app {
            let readable = q.head <= q.tail;
            if readable && !q.edge_flag {
                self.events.push_back(Event::Readable { circuit, dir });
            }
            q.edge_flag = readable;
        } else if q.in_app {
            let open = q.admission_open(cfg);
            if open && !q.edge_flag {
                self.events.push_back(Event::Writable { circuit, dir });
            }
            q.edge_flag = open;
        }
    }

    // ------------------------------------------------------------------
    // Application edges

    /// Room for another cell at the packaging edge of `dir`.
    pub fn can_send(&self, c: CircuitId, dir: Direction) -> bool {
        self.queue(Self::qref(c, dir))
            .is_some_and(|q| q.admission_open(&self.cfg))
    }

    /// Queues a 509-byte relay-cell body at the packaging edge; `Err(Full)` if
    /// there is no room ([`Endpoint::can_send`] is false).
    pub fn send_cell(
        &mut self,
        now: Time,
        c: CircuitId,
        dir: Direction,
        body: &CellBody,
    ) -> Result<(), Full> {
        self.send_cell_flags(now, c, dir, body, 0)
    }

    /// [`Endpoint::send_cell`] with cell flags: [`wire::FLAG_CLOSE`] marks the
    /// last cell. `OPEN` is set by the transport on the first cell; other bits
    /// are ignored.
    pub fn send_cell_flags(
        &mut self,
        _now: Time,
        c: CircuitId,
        dir: Direction,
        body: &CellBody,
        flags: u8,
    ) -> Result<(), Full> {
        let r = Self::qref(c, dir);
        let cfg = &self.cfg;
        let Some(q) = self.circuits.get_mut(&c.0).map(|c| &mut c.q[r.d as usize]) else {
            return Err(Full);
        };
        if !q.admission_open(cfg) {
            q.note_limited();
            q.edge_flag = false;
            return Err(Full);
        }
        q.package(&mut self.cells, flags & FLAG_CLOSE, body);
        self.held += 1;
        q.note_limited();
        self.activate(r);
        self.check_edge(r);
        self.tidy();
        Ok(())
    }

    /// Takes the next in-order body at the delivering edge; this is when FWD
    /// is owed to the predecessor.
    pub fn recv_cell(&mut self, now: Time, c: CircuitId, dir: Direction) -> Option<Box<CellBody>> {
        let mut b = Box::new([0u8; wire::CELL_BODY_LEN]);
        self.recv_cell_into(now, c, dir, &mut b)?;
        Some(b)
    }

    /// [`Endpoint::recv_cell`] into a caller-owned buffer; returns the cell's
    /// flags ([`wire::FLAG_CLOSE`] on the last cell).
    pub fn recv_cell_into(
        &mut self,
        now: Time,
        c: CircuitId,
        dir: Direction,
        out: &mut CellBody,
    ) -> Option<u8> {
        let r = Self::qref(c, dir);
        let q = self
            .circuits
            .get_mut(&r.c)
            .map(|c| &mut c.q[r.d as usize])?;
        let flags = q.take_delivered(&mut self.cells, out)?;
        q.owe_fwd = true;
        self.held -= 1;
        self.queue_feedback(now, r);
        self.check_edge(r);
        self.tidy();
        Some(flags)
    }

    // ------------------------------------------------------------------
    // Observation

    /// The state of one circuit and direction; all zero for an unknown circuit.
    pub fn circuit_stats(&self, c: CircuitId, dir: Direction) -> HopStats {
        let r = Self::qref(c, dir);
        let Some(circ) = self.circuits.get(&r.c) else {
            return HopStats::default();
        };
        let q = &circ.q[r.d as usize];
        let base = match circ.out_leg(r.d as usize) {
            Some(l) if self.cfg.share_base_rtt => self.peers[l.peer as usize].base_rtt,
            _ => q.own_base,
        };
        q.stats(base)
    }

    /// Cells all circuits hold, both directions, in order and above gaps
    /// (kept as a running total: no walk over the circuits).
    pub fn total_held(&self) -> usize {
        self.held
    }

    /// The cells each installed circuit holds, both directions together
    /// (in order and above gaps), in circuit order.
    pub fn held_cells(&self) -> impl Iterator<Item = (CircuitId, usize)> {
        let mut v: Vec<(CircuitId, usize)> = self
            .circuits
            .iter()
            .map(|(&i, c)| (CircuitId(i), c.q.iter().map(Queue::held).sum()))
            .collect();
        v.sort_unstable_by_key(|x| x.0);
        v.into_iter()
    }

    /// Circuits the endpoint keeps storage for.
    #[cfg(test)]
    pub(super) fn circuit_slots(&self) -> usize {
        self.circuits.len()
    }

    #[cfg(test)]
    pub(super) fn set_next_circuit_id(&mut self, id: u32) {
        self.next_circuit = id;
    }

    /// Cells the queue of `c` in `dir` has room for without growing, plus
    /// the cells it holds above a gap: its memory, in cells.
    #[cfg(test)]
    pub(super) fn cell_slots(&self, c: CircuitId, dir: Direction) -> usize {
        self.queue(Self::qref(c, dir))
            .map_or(0, |q| q.cells.capacity() + q.above.len())
    }

    /// The cell slab: slots in use, and slots ever handed out.
    #[cfg(test)]
    pub(super) fn cell_store(&self) -> (usize, usize) {
        (self.cells.live(), self.cells.capacity())
    }

    /// Entries of RACK's send order in the queue of `c` in `dir` (SACK mode).
    #[cfg(test)]
    pub(super) fn rack_order_len(&self, c: CircuitId, dir: Direction) -> usize {
        self.queue(Self::qref(c, dir))
            .and_then(|q| q.sb.as_deref())
            .map_or(0, |sb| sb.xmit_order.len())
    }

    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Circuits currently installed.
    pub fn circuit_count(&self) -> usize {
        self.live
    }
}
