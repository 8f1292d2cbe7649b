//! RED, "Random Early Detection" (S. Floyd and V. Jacobson, "Random Early
//! Detection Gateways for Congestion Avoidance", IEEE/ACM Transactions on
//! Networking 1(4), 1993), with the gentle variant (S. Floyd,
//! "Recommendation on using the gentle_ variant of RED", 2000).
//!
//! On each arrival RED updates an exponentially weighted average of the
//! queue length with weight `w_q`, decayed over idle periods as if small
//! packets had arrived to an empty queue (the paper's §4 and Fig. 2). Below
//! `min_th` it accepts; between `min_th` and `max_th` it drops (or marks)
//! with a probability rising linearly to `max_p`, spread out by the count of
//! packets since the last drop (`p_a = p_b / (1 − count·p_b)`, §7). Above
//! `max_th` the original drops every arrival; the gentle variant instead
//! raises the probability linearly from `max_p` to 1 between `max_th` and
//! `2·max_th`, and drops everything only beyond that. Forced drops are never
//! turned into marks.

use super::{AqmCounts, Stamped};
use crate::packet::Packet;
use crate::spec::Limit;
use hopwise_proto::rng::Rng;
use std::collections::VecDeque;

/// RED's parameters. The thresholds count in the unit of `min_th`
/// (packets or bytes; `max_th` in the same one).
#[derive(Clone, Copy, Debug)]
pub struct RedParams {
    pub min_th: Limit,
    pub max_th: Limit,
    pub max_p: f64,
    /// The averaging weight `w_q` (the paper's 0.002).
    pub weight: f64,
    pub gentle: bool,
    pub ecn: bool,
}

#[derive(Debug)]
pub struct Red {
    q: VecDeque<Stamped>,
    bytes: u64,
    limit: Limit,
    par: RedParams,
    avg: f64,
    /// Packets since the last drop or mark (−1: the average is below `min_th`).
    count: i64,
    /// When the queue last became empty (`None` while it is not).
    idle_since_ns: Option<u64>,
    /// Transmission time of a typical (1500 B) packet, the paper's `s`, for
    /// decaying the average over an idle period.
    typical_tx_ns: u64,
    rng: Rng,
    pub(crate) counts: AqmCounts,
}

fn value(l: Limit) -> f64 {
    match l {
        Limit::Bytes(b) => b as f64,
        Limit::Packets(n) => n as f64,
    }
}

impl Red {
    pub fn new(par: RedParams, limit: Limit, typical_tx_ns: u64, rng: Rng) -> Self {
        Red {
            q: VecDeque::new(),
            bytes: 0,
            limit,
            par,
            avg: 0.0,
            count: -1,
            idle_since_ns: Some(0),
            typical_tx_ns: typical_tx_ns.max(1),
            rng,
            counts: AqmCounts::default(),
        }
    }

    /// Queues `p` bypassing RED (to set up a queue length in tests).
    #[cfg(test)]
    pub(super) fn push_for_test(&mut self, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(Stamped { at_ns: 0, p });
        self.idle_since_ns = None;
    }

    /// The average queue length (in the thresholds' unit).
    pub fn average(&self) -> f64 {
        self.avg
    }

    fn current(&self) -> f64 {
        match self.par.min_th {
            Limit::Bytes(_) => self.bytes as f64,
            Limit::Packets(_) => self.q.len() as f64,
        }
    }

    /// What to do with an arrival: `None` accept, `Some(true)` an early
    /// (probabilistic) drop or mark, `Some(false)` a forced drop.
    fn decide(&mut self, now_ns: u64) -> Option<bool> {
        let w = self.par.weight;
        match self.idle_since_ns {
            // The queue has been empty since `t`: decay the average as if
            // packets of the typical size had kept arriving to it. The idle
            // period goes on until a packet is queued (an arrival dropped
            // here does not end it), so restart its clock.
            Some(t) => {
                let m = now_ns.saturating_sub(t) as f64 / self.typical_tx_ns as f64;
                self.avg *= (1.0 - w).powf(m);
                self.idle_since_ns = Some(now_ns);
            }
            None => self.avg = (1.0 - w) * self.avg + w * self.current(),
        }
        let (min, max, max_p) = (
            value(self.par.min_th),
            value(self.par.max_th),
            self.par.max_p,
        );
        let avg = self.avg;
        let pb = if avg < min {
            self.count = -1;
            return None;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if self.par.gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.count = 0;
            return Some(false);
        };
        self.count += 1;
        let c = self.count as f64 * pb;
        let pa = if c >= 1.0 { 1.0 } else { pb / (1.0 - c) };
        if self.rng.chance(pa) {
            self.count = 0;
            Some(true)
        } else {
            None
        }
    }

    /// Queues `p`; `false` if it was dropped (early, forced or over the limit).
    pub fn enqueue(&mut self, now_ns: u64, mut p: Packet) -> bool {
        let verdict = self.decide(now_ns);
        let fits = match self.limit {
            Limit::Bytes(b) => self.bytes + p.size as u64 <= b,
            Limit::Packets(n) => (self.q.len() as u64) < n,
        };
        match verdict {
            None => {}
            Some(true) if self.par.ecn && fits && p.mark_ce() => self.counts.marks += 1,
            Some(_) => {
                self.counts.aqm_drops += 1;
                return false;
            }
        }
        if !fits {
            return false;
        }
        self.bytes += p.size as u64;
        self.q.push_back(Stamped { at_ns: now_ns, p });
        self.idle_since_ns = None;
        true
    }

    pub fn dequeue(&mut self, now_ns: u64) -> Option<Packet> {
        let s = self.q.pop_front()?;
        self.bytes -= s.p.size as u64;
        if self.q.is_empty() {
            self.idle_since_ns = Some(now_ns);
        }
        Some(s.p)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.q.len() as u64
    }
}
