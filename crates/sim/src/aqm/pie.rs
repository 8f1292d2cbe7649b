//! PIE, "Proportional Integral Controller Enhanced" (RFC 8033).
//!
//! Every `tupdate` PIE moves a drop probability by `alpha` times the queueing
//! delay's distance from `target` plus `beta` times its change since the
//! last update (§4.2), with both gains scaled down while the probability is
//! small (§4.2's auto-tuning). Arriving packets are dropped (or marked, §5.1)
//! with that probability (§4.1), except during the burst allowance that
//! follows an empty queue (§4.3), when the delay and the probability are
//! both low, or when less than two packets are queued.
//!
//! The queueing delay is measured from timestamps, the sojourn time of the
//! last packet dequeued (RFC 8033 §5.2 permits it; Linux's sch_pie does it
//! by default), not estimated from the departure rate. The periodic update
//! runs lazily: each enqueue and dequeue first applies the updates that fell
//! due since the last one, so PIE schedules no events of its own.

use super::{AqmCounts, Stamped};
use crate::packet::Packet;
use crate::spec::Limit;
use hopwise_proto::rng::Rng;
use std::collections::VecDeque;

/// PIE's parameters (RFC 8033 §4 and §5.1's defaults in the scenario).
#[derive(Clone, Copy, Debug)]
pub struct PieParams {
    pub target_ns: u64,
    pub tupdate_ns: u64,
    /// Gains in Hz (RFC 8033 §4.2: 0.125 and 1.25).
    pub alpha: f64,
    pub beta: f64,
    pub max_burst_ns: u64,
    pub ecn: bool,
    /// Mark instead of dropping only while the probability is at most this
    /// (RFC 8033 §5.1: 10 %).
    pub ecn_threshold: f64,
}

#[derive(Debug)]
pub struct Pie {
    q: VecDeque<Stamped>,
    bytes: u64,
    limit: Limit,
    par: PieParams,
    prob: f64,
    /// The queueing delay at the last update, and the latest measured.
    qdelay_old_ns: u64,
    qdelay_ns: u64,
    burst_allow_ns: u64,
    next_update_ns: u64,
    mtu: u32,
    rng: Rng,
    pub(crate) counts: AqmCounts,
}

impl Pie {
    pub fn new(par: PieParams, limit: Limit, rng: Rng) -> Self {
        Pie {
            q: VecDeque::new(),
            bytes: 0,
            limit,
            par,
            prob: 0.0,
            qdelay_old_ns: 0,
            qdelay_ns: 0,
            burst_allow_ns: par.max_burst_ns,
            next_update_ns: par.tupdate_ns,
            mtu: 0,
            rng,
            counts: AqmCounts::default(),
        }
    }

    /// The drop probability now (for tests and traces).
    pub fn probability(&self) -> f64 {
        self.prob
    }

    /// Applies the periodic updates due by `now_ns`. An idle PIE (nothing
    /// queued, probability zero, burst allowance full) needs none, so a
    /// long idle period costs one step.
    fn catch_up(&mut self, now_ns: u64) {
        while now_ns >= self.next_update_ns {
            if self.q.is_empty()
                && self.prob == 0.0
                && self.qdelay_old_ns == 0
                && self.burst_allow_ns == self.par.max_burst_ns
            {
                let t = self.par.tupdate_ns;
                self.next_update_ns += ((now_ns - self.next_update_ns) / t + 1) * t;
                return;
            }
            self.update();
            self.next_update_ns += self.par.tupdate_ns;
        }
    }

    /// RFC 8033 §4.2 (`calculate_drop_prob`) and §4.3 (the burst allowance).
    fn update(&mut self) {
        let par = &self.par;
        let qdelay = if self.q.is_empty() { 0 } else { self.qdelay_ns };
        let secs = |ns: u64| ns as f64 * 1e-9;
        let p = self.prob;
        // Auto-tuning: smaller steps while the probability is small.
        let scale = match p {
            p if p < 1e-6 => 1.0 / 2048.0,
            p if p < 1e-5 => 1.0 / 512.0,
            p if p < 1e-4 => 1.0 / 128.0,
            p if p < 1e-3 => 1.0 / 32.0,
            p if p < 1e-2 => 1.0 / 8.0,
            p if p < 1e-1 => 1.0 / 2.0,
            _ => 1.0,
        };
        let mut delta = scale
            * (par.alpha * (secs(qdelay) - secs(par.target_ns))
                + par.beta * (secs(qdelay) - secs(self.qdelay_old_ns)));
        // Above 10 %, at most 2 % more per update (Linux's sch_pie cap,
        // against a sudden jump to dropping most packets).
        if p >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        let mut p = p + delta;
        // A safeguard against very high delays (RFC 8033 §4.2).
        if qdelay > 250_000_000 {
            p += 0.02;
        }
        p = p.clamp(0.0, 1.0);
        // Decay while the queue is idle (RFC 8033 §4.2).
        if qdelay == 0 && self.qdelay_old_ns == 0 {
            p *= 0.98;
            if p < 1e-9 {
                p = 0.0;
            }
        }
        self.prob = p;
        self.burst_allow_ns = self.burst_allow_ns.saturating_sub(par.tupdate_ns);
        if p == 0.0 && qdelay < par.target_ns / 2 && self.qdelay_old_ns < par.target_ns / 2 {
            self.burst_allow_ns = par.max_burst_ns;
        }
        self.qdelay_old_ns = qdelay;
    }

    /// RFC 8033 §4.1's `drop_early`.
    fn drop_early(&mut self) -> bool {
        if self.burst_allow_ns > 0 {
            return false;
        }
        if self.qdelay_old_ns < self.par.target_ns / 2 && self.prob < 0.2 {
            return false;
        }
        if self.bytes <= 2 * self.mtu as u64 {
            return false;
        }
        self.rng.chance(self.prob)
    }

    /// Queues `p`; `false` if it was dropped (early, or over the limit).
    pub fn enqueue(&mut self, now_ns: u64, mut p: Packet) -> bool {
        self.catch_up(now_ns);
        let fits = match self.limit {
            Limit::Bytes(b) => self.bytes + p.size as u64 <= b,
            Limit::Packets(n) => (self.q.len() as u64) < n,
        };
        if !fits {
            return false;
        }
        self.mtu = self.mtu.max(p.size);
        if self.drop_early() {
            if self.par.ecn && self.prob <= self.par.ecn_threshold && p.mark_ce() {
                self.counts.marks += 1;
            } else {
                self.counts.aqm_drops += 1;
                return false;
            }
        }
        self.bytes += p.size as u64;
        self.q.push_back(Stamped { at_ns: now_ns, p });
        true
    }

    pub fn dequeue(&mut self, now_ns: u64) -> Option<Packet> {
        self.catch_up(now_ns);
        let s = self.q.pop_front()?;
        self.bytes -= s.p.size as u64;
        self.qdelay_ns = now_ns.saturating_sub(s.at_ns);
        Some(s.p)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.q.len() as u64
    }
}
