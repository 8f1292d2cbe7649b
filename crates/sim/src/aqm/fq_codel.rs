//! FQ-CoDel, "The Flow Queue CoDel Packet Scheduler and Active Queue
//! Management Algorithm" (RFC 8290).
//!
//! Packets are hashed by their 5-tuple into one of `flows` queues (§4.1.1),
//! each under its own CoDel (§4.2–4.3). A deficit round robin serves the
//! queues with a byte `quantum` each, queues that just became active (the
//! "new" list) before the others (the "old" list), which favours sparse
//! flows (§4.2). On overflow the packet at the head of the queue with the
//! most bytes is dropped (§4.1).
//!
//! The hash is a keyed mix of the source and destination node and ports and
//! the protocol, keyed from the scenario seed and the link direction's
//! name: runs are reproducible, and a different seed moves collisions
//! elsewhere as Linux's per-boot random key does.

use super::codel::{CodelParams, SubQueue};
use super::AqmCounts;
use crate::packet::{Body, Packet};
use crate::spec::Limit;
use hopwise_proto::rng::Rng;
use std::collections::VecDeque;

/// Which round-robin list a flow queue is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct FlowQueue {
    sub: SubQueue,
    deficit: i64,
    list: List,
}

/// The FQ-CoDel scheduler of one output port.
#[derive(Debug)]
pub struct FqCodel {
    flows: Vec<FlowQueue>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    par: CodelParams,
    quantum: i64,
    limit: Limit,
    key: [u64; 2],
    bytes: u64,
    packets: u64,
    /// The largest packet seen (Linux's `maxpacket`).
    mtu: u32,
    pub(crate) counts: AqmCounts,
}

/// SplitMix64's finaliser: a bijective 64-bit mix.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl FqCodel {
    /// `flows` queues (at least 1), serving `quantum` bytes per round each;
    /// `rng` gives the hash key.
    pub fn new(par: CodelParams, limit: Limit, flows: u32, quantum: u32, mut rng: Rng) -> Self {
        FqCodel {
            flows: (0..flows.max(1))
                .map(|_| FlowQueue {
                    sub: SubQueue::default(),
                    deficit: 0,
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            par,
            quantum: quantum.max(1) as i64,
            limit,
            key: [rng.next_u64(), rng.next_u64()],
            bytes: 0,
            packets: 0,
            mtu: 0,
            counts: AqmCounts::default(),
        }
    }

    /// The flow queue of `p`: a keyed hash of its 5-tuple (RFC 8290 §4.1.1).
    fn classify(&self, p: &Packet) -> usize {
        let (proto, sport, dport) = match &p.body {
            Body::Tcp(s) => (6u64, s.src_port, s.dst_port),
            Body::Udp {
                src_port, dst_port, ..
            } => (17, *src_port, *dst_port),
        };
        let nodes = (p.src.raw() as u64) << 32 | p.dst.raw() as u64;
        let ports = proto << 32 | (sport as u64) << 16 | dport as u64;
        let h = mix(mix(nodes ^ self.key[0]) ^ ports ^ self.key[1]);
        ((h as u128 * self.flows.len() as u128) >> 64) as usize
    }

    #[cfg(test)]
    pub(super) fn classify_for_test(&self, p: &Packet) -> usize {
        self.classify(p)
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            Limit::Bytes(b) => self.bytes > b,
            Limit::Packets(n) => self.packets > n,
        }
    }

    /// Queues `p`. Always accepts it; if the queue is then over its limit,
    /// drops the head of the fattest flow queue (RFC 8290 §4.1), which may
    /// be `p`'s own.
    pub fn enqueue(&mut self, now_ns: u64, p: Packet) -> bool {
        let i = self.classify(&p);
        self.mtu = self.mtu.max(p.size);
        self.bytes += p.size as u64;
        self.packets += 1;
        let f = &mut self.flows[i];
        f.sub.push(now_ns, p);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(i as u32);
        }
        while self.over_limit() {
            // Linear in the number of queues, but only on overflow.
            let fat = (0..self.flows.len())
                .max_by_key(|&j| (self.flows[j].sub.bytes, std::cmp::Reverse(j)))
                .expect("at least one queue");
            let Some(d) = self.flows[fat].sub.pop_front() else {
                break;
            };
            self.bytes -= d.size as u64;
            self.packets -= 1;
            self.counts.queued_drops += 1;
        }
        true
    }

    /// Deficit round robin over the new, then the old flow queues, each
    /// dequeuing through its CoDel (RFC 8290 §4.2).
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Packet> {
        loop {
            let (i, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i as usize, true),
                (None, Some(&i)) => (i as usize, false),
                (None, None) => return None,
            };
            let f = &mut self.flows[i];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                f.list = List::Old;
                self.pop_list(from_new);
                self.old_flows.push_back(i as u32);
                continue;
            }
            let (b0, n0) = (f.sub.bytes, f.sub.q.len() as u64);
            let p = f
                .sub
                .codel_dequeue(now_ns, &self.par, self.mtu, &mut self.counts);
            // Whatever left the flow queue: the packet returned and CoDel's drops.
            self.bytes -= b0 - f.sub.bytes;
            self.packets -= n0 - f.sub.q.len() as u64;
            match p {
                Some(p) => {
                    f.deficit -= p.size as i64;
                    return Some(p);
                }
                None => {
                    // An emptied new queue goes to the old list once, so
                    // that it cannot regain priority at once (RFC 8290
                    // §4.2; Linux's fq_codel_dequeue).
                    self.pop_list(from_new);
                    let to_old = from_new && !self.old_flows.is_empty();
                    self.flows[i].list = if to_old { List::Old } else { List::None };
                    if to_old {
                        self.old_flows.push_back(i as u32);
                    }
                }
            }
        }
    }

    fn pop_list(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.packets
    }
}
