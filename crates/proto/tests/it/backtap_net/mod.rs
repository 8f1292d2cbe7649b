//! A tiny deterministic network for BackTap tests, independent of the
//! simulator crate: nodes each run one `backtap::Endpoint`; links have a rate,
//! a propagation delay, random loss and a FIFO queue per direction. Flows
//! write a known byte pattern at a packaging edge and the delivering edge
//! checks every byte and the order.

#![allow(dead_code)]

use hopwise_proto::backtap::{
    CircuitId, Config, Direction, Endpoint, Event, HopStats, PeerId, CELL_BODY_LEN, CELL_DATA_LEN,
};
use hopwise_proto::time::{Dur, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// xorshift64*: a small deterministic generator for losses.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// IPv4 + UDP header bytes counted on the link.
pub const UDP_OVERHEAD: usize = 28;

#[derive(Clone, Copy, Debug)]
pub struct LinkCfg {
    pub rate_bps: u64,
    pub delay: Dur,
    pub loss: f64,
    pub queue_pkts: usize,
}

impl LinkCfg {
    pub fn new(rate_bps: u64, delay_ms: u64, loss: f64) -> Self {
        LinkCfg {
            rate_bps,
            delay: Dur::from_millis(delay_ms),
            loss,
            queue_pkts: 1000,
        }
    }
}

pub struct LinkDir {
    pub cfg: LinkCfg,
    busy_until: Time,
    queued: VecDeque<Time>,
    pub sent: u64,
    pub lost: u64,
    pub overflow: u64,
    pub bytes: u64,
    pub max_queue: usize,
}

impl LinkDir {
    /// Datagrams queued or being sent at `now`.
    pub fn queue_len(&self, now: Time) -> usize {
        self.queued.iter().filter(|&&t| t > now).count()
    }
}

pub struct Node {
    pub ep: Endpoint,
    /// Per PeerId at this node: (link direction out, destination node, our PeerId there).
    peers: Vec<(usize, usize, PeerId)>,
    /// Flows by (circuit, direction) at this node: the application reacts
    /// to Writable and Readable events only, as a real one would.
    flows: HashMap<(CircuitId, Direction), usize>,
    pub events: u64,
}

/// A circuit through the network: the nodes and each node's CircuitId.
#[derive(Clone, Debug)]
pub struct Circ {
    pub nodes: Vec<usize>,
    pub ids: Vec<CircuitId>,
}

pub struct Flow {
    pub src: (usize, CircuitId),
    pub dst: (usize, CircuitId),
    pub dir: Direction,
    pub total: u64,
    pub seed: u64,
    pub sent: u64,
    pub got: u64,
    pub cells_got: u64,
    pub error: Option<String>,
    pub done_at: Option<Time>,
    /// Application may write only this far (for rate experiments: unlimited).
    pub refused: u64,
}

struct Arrival {
    at: Reverse<(Time, u64)>,
    node: usize,
    from: PeerId,
    data: Vec<u8>,
}
impl PartialEq for Arrival {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at
    }
}
impl Eq for Arrival {}
impl PartialOrd for Arrival {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Arrival {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.at.cmp(&o.at)
    }
}

pub struct Net {
    pub now: Time,
    seq: u64,
    heap: BinaryHeap<Arrival>,
    pub nodes: Vec<Node>,
    pub links: Vec<LinkDir>,
    rng: Rng,
    pub flows: Vec<Flow>,
    next_circ_id: u32,
    buf: Vec<u8>,
    pub datagrams: u64,
}

/// The pattern byte at `off` of stream `seed`.
pub fn pattern(seed: u64, off: u64) -> u8 {
    let x = (off ^ seed.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (x >> 56) as u8 ^ (off as u8)
}

impl Net {
    pub fn new(seed: u64) -> Self {
        Net {
            now: Time::ZERO,
            seq: 0,
            heap: BinaryHeap::new(),
            nodes: Vec::new(),
            links: Vec::new(),
            rng: Rng(seed | 1),
            flows: Vec::new(),
            next_circ_id: 100,
            buf: Vec::with_capacity(2048),
            datagrams: 0,
        }
    }

    pub fn add_node(&mut self, cfg: Config) -> usize {
        self.nodes.push(Node {
            ep: Endpoint::new(cfg),
            peers: Vec::new(),
            flows: HashMap::new(),
            events: 0,
        });
        self.nodes.len() - 1
    }

    /// A full-duplex link; returns the link-direction indexes (a→b, b→a).
    pub fn connect(&mut self, a: usize, b: usize, cfg: LinkCfg) -> (usize, usize) {
        let pa = self.nodes[a].ep.add_peer(b as u64);
        let pb = self.nodes[b].ep.add_peer(a as u64);
        let mk = |cfg| LinkDir {
            cfg,
            busy_until: Time::ZERO,
            queued: VecDeque::new(),
            sent: 0,
            lost: 0,
            overflow: 0,
            bytes: 0,
            max_queue: 0,
        };
        self.links.push(mk(cfg));
        self.links.push(mk(cfg));
        let ab = self.links.len() - 2;
        let ba = ab + 1;
        assert_eq!(self.nodes[a].peers.len(), pa.0 as usize);
        assert_eq!(self.nodes[b].peers.len(), pb.0 as usize);
        self.nodes[a].peers.push((ab, b, pb));
        self.nodes[b].peers.push((ba, a, pa));
        (ab, ba)
    }

    fn peer_of(&self, a: usize, b: usize) -> PeerId {
        let i = self.nodes[a]
            .peers
            .iter()
            .position(|p| p.1 == b)
            .expect("nodes are connected");
        PeerId(i as u32)
    }

    /// Installs a circuit along `path` (client first).
    pub fn add_circuit(&mut self, path: &[usize]) -> Circ {
        let mut ids = Vec::new();
        let hop_ids: Vec<u32> = (0..path.len() - 1)
            .map(|_| {
                self.next_circ_id += 1;
                self.next_circ_id
            })
            .collect();
        for (i, &n) in path.iter().enumerate() {
            let prev = (i > 0).then(|| (self.peer_of(n, path[i - 1]), hop_ids[i - 1]));
            let next = (i + 1 < path.len()).then(|| (self.peer_of(n, path[i + 1]), hop_ids[i]));
            ids.push(self.nodes[n].ep.add_circuit(prev, next));
        }
        Circ {
            nodes: path.to_vec(),
            ids,
        }
    }

    /// Starts a flow of `total` bytes on `c` in `dir` (`u64::MAX`: unlimited).
    pub fn start_flow(&mut self, c: &Circ, dir: Direction, total: u64, seed: u64) -> usize {
        let last = c.nodes.len() - 1;
        let (s, d) = match dir {
            Direction::Forward => (0, last),
            Direction::Backward => (last, 0),
        };
        self.flows.push(Flow {
            src: (c.nodes[s], c.ids[s]),
            dst: (c.nodes[d], c.ids[d]),
            dir,
            total,
            seed,
            sent: 0,
            got: 0,
            cells_got: 0,
            error: None,
            done_at: None,
            refused: 0,
        });
        let f = self.flows.len() - 1;
        self.nodes[c.nodes[s]].flows.insert((c.ids[s], dir), f);
        self.nodes[c.nodes[d]].flows.insert((c.ids[d], dir), f);
        self.write(c.nodes[s], f);
        self.service(c.nodes[s]);
        f
    }

    fn transmit(&mut self, node: usize, to: PeerId, data: Vec<u8>) {
        let (li, dst, from) = self.nodes[node].peers[to.0 as usize];
        let now = self.now;
        let l = &mut self.links[li];
        while l.queued.front().is_some_and(|&t| t <= now) {
            l.queued.pop_front();
        }
        if l.queued.len() >= l.cfg.queue_pkts {
            l.overflow += 1;
            return;
        }
        let wire = (data.len() + UDP_OVERHEAD) as u64;
        let tx = Dur::from_nanos(wire * 8 * 1_000_000_000 / l.cfg.rate_bps);
        let start = l.busy_until.max(now);
        l.busy_until = start + tx;
        l.queued.push_back(l.busy_until);
        l.max_queue = l.max_queue.max(l.queued.len());
        l.sent += 1;
        l.bytes += wire;
        if self.rng.chance(l.cfg.loss) {
            l.lost += 1;
            return;
        }
        let at = l.busy_until + l.cfg.delay;
        self.seq += 1;
        self.heap.push(Arrival {
            at: Reverse((at, self.seq)),
            node: dst,
            from,
            data,
        });
    }

    fn body_for(f: &Flow, cell: u64) -> [u8; CELL_BODY_LEN] {
        let mut b = [0u8; CELL_BODY_LEN];
        let off = cell * CELL_DATA_LEN as u64;
        let len = (f.total - off).min(CELL_DATA_LEN as u64) as usize;
        b[0] = 2; // RELAY_DATA
        b[3..5].copy_from_slice(&1u16.to_be_bytes());
        b[5..9].copy_from_slice(&(cell as u32).to_be_bytes());
        b[9..11].copy_from_slice(&(len as u16).to_be_bytes());
        for (i, v) in b[11..11 + len].iter_mut().enumerate() {
            *v = pattern(f.seed, off + i as u64);
        }
        b
    }

    fn check_body(f: &mut Flow, b: &[u8; CELL_BODY_LEN], now: Time) {
        if f.error.is_some() {
            return;
        }
        let cell = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) as u64;
        let len = u16::from_be_bytes([b[9], b[10]]) as u64;
        if cell != f.cells_got {
            f.error = Some(format!(
                "cell {cell} arrived when {} was expected",
                f.cells_got
            ));
            return;
        }
        let want = (f.total - f.got).min(CELL_DATA_LEN as u64);
        if len != want {
            f.error = Some(format!("cell {cell}: length {len}, expected {want}"));
            return;
        }
        for i in 0..len {
            if b[11 + i as usize] != pattern(f.seed, f.got + i) {
                f.error = Some(format!("byte {} differs", f.got + i));
                return;
            }
        }
        f.got += len;
        f.cells_got += 1;
        if f.got == f.total {
            f.done_at = Some(now);
        }
    }

    /// The application writes flow `fi` at node `n` while there is room.
    fn write(&mut self, n: usize, fi: usize) {
        let now = self.now;
        let node = &mut self.nodes[n];
        let f = &mut self.flows[fi];
        while f.sent < f.total && node.ep.can_send(f.src.1, f.dir) {
            let cell = f.sent / CELL_DATA_LEN as u64;
            let b = Self::body_for(f, cell);
            node.ep
                .send_cell(now, f.src.1, f.dir, &b)
                .expect("can_send said yes");
            f.sent = (f.sent + CELL_DATA_LEN as u64).min(f.total);
        }
    }

    /// The application reads flow `fi` at node `n` until nothing is left.
    fn read(&mut self, n: usize, fi: usize) {
        let now = self.now;
        let node = &mut self.nodes[n];
        let f = &mut self.flows[fi];
        let mut b = [0u8; CELL_BODY_LEN];
        while node
            .ep
            .recv_cell_into(now, f.dst.1, f.dir, &mut b)
            .is_some()
        {
            Self::check_body(f, &b, now);
        }
    }

    /// Application work (driven by events) and output draining at `n`.
    fn service(&mut self, n: usize) {
        let now = self.now;
        while let Some(ev) = self.nodes[n].ep.poll_event() {
            self.nodes[n].events += 1;
            match ev {
                Event::Writable { circuit, dir } => {
                    if let Some(&fi) = self.nodes[n].flows.get(&(circuit, dir)) {
                        self.write(n, fi);
                    }
                }
                Event::Readable { circuit, dir } => {
                    if let Some(&fi) = self.nodes[n].flows.get(&(circuit, dir)) {
                        self.read(n, fi);
                    }
                }
            }
        }
        let mut out = std::mem::take(&mut self.buf);
        while let Some(p) = self.nodes[n].ep.poll_transmit_into(now, &mut out) {
            self.datagrams += 1;
            let data = out.clone();
            self.transmit(n, p, data);
        }
        self.buf = out;
        assert!(
            self.nodes[n].ep.poll_event().is_none(),
            "output raises no events"
        );
    }

    /// Runs until `limit` (inclusive), then sets `now = limit`.
    pub fn run_until(&mut self, limit: Time) {
        let mut same = 0u32;
        loop {
            let arr = self.heap.peek().map(|a| a.at.0 .0);
            let mut timer: Option<(Time, usize)> = None;
            for (i, n) in self.nodes.iter().enumerate() {
                if let Some(t) = n.ep.poll_timeout() {
                    if timer.is_none_or(|(b, _)| t < b) {
                        timer = Some((t, i));
                    }
                }
            }
            let next = match (arr, timer) {
                (None, None) => break,
                (Some(a), Some((t, _))) => a.min(t),
                (Some(a), None) => a,
                (None, Some((t, _))) => t,
            };
            if next > limit {
                break;
            }
            if next == self.now {
                same += 1;
                assert!(same < 1_000_000, "no progress at {:?}", self.now);
            } else {
                same = 0;
            }
            self.now = next.max(self.now);
            if arr == Some(next) {
                let a = self.heap.pop().unwrap();
                self.nodes[a.node]
                    .ep
                    .handle_datagram(self.now, a.from, &a.data)
                    .expect("valid datagram");
                self.service(a.node);
            } else {
                let (_, i) = timer.unwrap();
                self.nodes[i].ep.handle_timeout(self.now);
                self.service(i);
            }
        }
        self.now = limit.max(self.now);
    }

    /// Runs until every finite flow completed or `limit` passed; returns whether all completed.
    pub fn run_to_completion(&mut self, limit: Time, step: Dur) -> bool {
        while self.now < limit {
            let t = (self.now + step).min(limit);
            self.run_until(t);
            if self
                .flows
                .iter()
                .all(|f| f.total == u64::MAX || f.done_at.is_some() || f.error.is_some())
            {
                return self.flows.iter().all(|f| f.error.is_none());
            }
        }
        false
    }

    pub fn stats(&self, node: usize, c: CircuitId, dir: Direction) -> HopStats {
        self.nodes[node].ep.circuit_stats(c, dir)
    }
}

pub fn secs(s: f64) -> Time {
    Time::from_secs_f64(s)
}
