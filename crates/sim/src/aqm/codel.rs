//! CoDel, "Controlled Delay" (RFC 8289), as a queue of its own and as the
//! per-flow state of FQ-CoDel.
//!
//! CoDel looks at the sojourn time of each packet it dequeues. Once that
//! time has stayed above `target` for a whole `interval` (§3.2), it enters
//! the dropping state and drops (or, with ECN, marks) one packet, then the
//! next ones at times following the control law `interval / √count` (§3.3)
//! until a packet's sojourn time falls below `target` again. On re-entering
//! the dropping state soon after leaving it, it resumes near the previous
//! drop rate instead of starting over (§5.6, as Linux's `codel_impl.h`).

use super::{AqmCounts, Stamped};
use crate::packet::Packet;
use crate::spec::Limit;
use std::collections::VecDeque;

/// CoDel's parameters (RFC 8289 §4.3–4.4), in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    /// Mark ECN-capable packets instead of dropping them (RFC 8289 §5.4,
    /// RFC 3168 §5).
    pub ecn: bool,
}

/// CoDel's state variables (RFC 8289 §5.3's `first_above_time`,
/// `drop_next`, `count`, `lastcount`, `dropping`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// When the sojourn time will have been above target for an interval
    /// (0: it is below target).
    first_above_ns: u64,
    drop_next_ns: u64,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

/// The control law (RFC 8289 §5.5): the next drop `interval / √count`
/// after `t`.
fn control_law(t: u64, interval_ns: u64, count: u32) -> u64 {
    t + (interval_ns as f64 / (count.max(1) as f64).sqrt()) as u64
}

/// A FIFO of timestamped packets and its byte count: one CoDel queue, or
/// one flow's queue in FQ-CoDel.
#[derive(Debug, Default)]
pub struct SubQueue {
    pub(super) q: VecDeque<Stamped>,
    pub(super) bytes: u64,
    pub(super) vars: CodelVars,
}

impl SubQueue {
    pub(super) fn push(&mut self, now_ns: u64, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(Stamped { at_ns: now_ns, p });
    }

    pub(super) fn pop_front(&mut self) -> Option<Packet> {
        let s = self.q.pop_front()?;
        self.bytes -= s.p.size as u64;
        Some(s.p)
    }

    /// RFC 8289 §5.4's `dodequeue`: the head packet, and whether CoDel may
    /// drop it (its sojourn time has been above target for an interval).
    /// A queue holding at most one full packet after this one is never
    /// "above target" (Linux's `maxpacket` check): it cannot be drained
    /// faster. Under FQ-CoDel this looks at the flow's own queue, where
    /// Linux's `fq_codel_dequeue` passes the whole qdisc's backlog: a thin
    /// flow that never has more than one packet queued is never dropped
    /// here, while Linux can drop it when other flows fill the qdisc.
    fn dodequeue(&mut self, now_ns: u64, par: &CodelParams, mtu: u32) -> Option<(Packet, bool)> {
        let Some(s) = self.q.pop_front() else {
            self.vars.first_above_ns = 0;
            return None;
        };
        self.bytes -= s.p.size as u64;
        let sojourn = now_ns.saturating_sub(s.at_ns);
        let v = &mut self.vars;
        let mut ok_to_drop = false;
        if sojourn < par.target_ns || self.bytes <= mtu as u64 {
            v.first_above_ns = 0;
        } else if v.first_above_ns == 0 {
            v.first_above_ns = now_ns + par.interval_ns;
        } else if now_ns >= v.first_above_ns {
            ok_to_drop = true;
        }
        Some((s.p, ok_to_drop))
    }

    /// RFC 8289 §5.5's `dequeue`: the next packet to send, after dropping
    /// (or marking) what the control law asks for.
    pub(super) fn codel_dequeue(
        &mut self,
        now_ns: u64,
        par: &CodelParams,
        mtu: u32,
        counts: &mut AqmCounts,
    ) -> Option<Packet> {
        let (mut p, mut ok) = match self.dodequeue(now_ns, par, mtu) {
            Some(x) => x,
            None => {
                self.vars.dropping = false;
                return None;
            }
        };
        if self.vars.dropping {
            if !ok {
                // Sojourn time below target: leave the dropping state.
                self.vars.dropping = false;
            } else {
                while now_ns >= self.vars.drop_next_ns && self.vars.dropping {
                    self.vars.count += 1;
                    if par.ecn && p.mark_ce() {
                        counts.marks += 1;
                        self.vars.drop_next_ns =
                            control_law(self.vars.drop_next_ns, par.interval_ns, self.vars.count);
                        return Some(p);
                    }
                    counts.dequeue_drop();
                    match self.dodequeue(now_ns, par, mtu) {
                        None => {
                            self.vars.dropping = false;
                            return None;
                        }
                        Some((q, o)) => {
                            p = q;
                            ok = o;
                        }
                    }
                    if !ok {
                        self.vars.dropping = false;
                    } else {
                        self.vars.drop_next_ns =
                            control_law(self.vars.drop_next_ns, par.interval_ns, self.vars.count);
                    }
                }
            }
        } else if ok {
            // Enter the dropping state: drop (or mark) this packet.
            if par.ecn && p.mark_ce() {
                counts.marks += 1;
            } else {
                counts.dequeue_drop();
                match self.dodequeue(now_ns, par, mtu) {
                    Some((q, _)) => p = q,
                    None => {
                        self.enter_dropping(now_ns, par);
                        return None;
                    }
                }
            }
            self.enter_dropping(now_ns, par);
        }
        Some(p)
    }

    /// RFC 8289 §5.5: start dropping; if the last dropping state ended
    /// recently (within 16 intervals of its next drop), resume at the drop
    /// rate it had reached.
    fn enter_dropping(&mut self, now_ns: u64, par: &CodelParams) {
        let v = &mut self.vars;
        v.dropping = true;
        let delta = v.count.saturating_sub(v.lastcount);
        v.count = if delta > 1 && now_ns.saturating_sub(v.drop_next_ns) < 16 * par.interval_ns {
            delta
        } else {
            1
        };
        v.drop_next_ns = control_law(now_ns, par.interval_ns, v.count);
        v.lastcount = v.count;
    }
}

/// A CoDel queue: one FIFO under CoDel, with a tail-drop limit.
#[derive(Debug)]
pub struct Codel {
    sub: SubQueue,
    par: CodelParams,
    limit: Limit,
    /// The largest packet seen (Linux's `maxpacket`).
    mtu: u32,
    pub(crate) counts: AqmCounts,
}

impl Codel {
    pub fn new(par: CodelParams, limit: Limit) -> Self {
        Codel {
            sub: SubQueue::default(),
            par,
            limit,
            mtu: 0,
            counts: AqmCounts::default(),
        }
    }

    /// Queues `p` (stamped with `now_ns`); `false` if the limit refused it.
    pub fn enqueue(&mut self, now_ns: u64, p: Packet) -> bool {
        let fits = match self.limit {
            Limit::Bytes(b) => self.sub.bytes + p.size as u64 <= b,
            Limit::Packets(n) => (self.sub.q.len() as u64) < n,
        };
        if !fits {
            return false;
        }
        self.mtu = self.mtu.max(p.size);
        self.sub.push(now_ns, p);
        true
    }

    pub fn dequeue(&mut self, now_ns: u64) -> Option<Packet> {
        let Codel {
            sub,
            par,
            mtu,
            counts,
            ..
        } = self;
        sub.codel_dequeue(now_ns, par, *mtu, counts)
    }

    pub fn bytes(&self) -> u64 {
        self.sub.bytes
    }
    pub fn packets(&self) -> u64 {
        self.sub.q.len() as u64
    }
}
