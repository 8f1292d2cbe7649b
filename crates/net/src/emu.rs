//! Link emulation in user space (the kernel here has no netem): per peer, a
//! constant delay, random loss and a rate limit with a drop-tail queue,
//! applied to the datagrams this node sends. Sans-IO: the daemon pushes
//! datagrams in and polls the due ones out at their release time.

use crate::config::{Emulation, PeerSel};
use hopwise_proto::time::{Dur, Time};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

/// Lanes kept before unused ones are forgotten.
const MAX_LANES: usize = 4096;
/// A lane unused for this long, with nothing queued, may be forgotten.
const LANE_IDLE: Dur = Dur::from_secs(60);

struct Lane {
    cfg: Emulation,
    rng: u64,
    /// Release times are non-decreasing: the delay is constant and the rate
    /// limit serialises.
    queue: VecDeque<(Time, Vec<u8>)>,
    busy_until: Time,
    last_used: Time,
}

/// Counters of the emulator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmuStats {
    pub lost: u64,
    pub queue_drops: u64,
    pub delayed: u64,
}

/// Per-peer emulation of delay, loss and rate.
pub struct Emulator {
    rules: Vec<(PeerSel, Emulation)>,
    lanes: HashMap<SocketAddr, Lane>,
    /// Lanes at which the next purge runs (doubles when a purge frees
    /// little, so purges stay rare under a flood of fresh addresses).
    purge_at: usize,
    /// Lanes with something queued, by address (a small set).
    active: Vec<SocketAddr>,
    pub stats: EmuStats,
}

impl Emulator {
    pub fn new(rules: Vec<(PeerSel, Emulation)>) -> Emulator {
        Emulator {
            rules,
            lanes: HashMap::new(),
            purge_at: MAX_LANES,
            active: Vec::new(),
            stats: EmuStats::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    fn rule_for(&self, to: SocketAddr) -> Option<&Emulation> {
        self.rules
            .iter()
            .find(|(s, _)| *s == PeerSel::Addr(to))
            .or_else(|| self.rules.iter().find(|(s, _)| *s == PeerSel::All))
            .map(|(_, e)| e)
    }

    /// Takes a datagram for `to`: `Some` if it is not emulated (send it
    /// now), `None` if it was queued or dropped.
    pub fn push(&mut self, now: Time, to: SocketAddr, d: Vec<u8>) -> Option<Vec<u8>> {
        if self.rules.is_empty() {
            return Some(d);
        }
        if !self.lanes.contains_key(&to) {
            let Some(cfg) = self.rule_for(to).cloned() else {
                return Some(d);
            };
            if self.lanes.len() >= self.purge_at {
                // `"*"` makes a lane for every address this node answers,
                // spoofed ones included: forget those unused for a minute
                // with nothing queued (a lane that comes back starts its
                // loss pattern afresh; peers in use keep theirs).
                self.lanes.retain(|_, l| {
                    !l.queue.is_empty() || l.busy_until > now || now.since(l.last_used) < LANE_IDLE
                });
                let lanes = &self.lanes;
                self.active.retain(|a| lanes.contains_key(a));
                self.purge_at = MAX_LANES.max(2 * self.lanes.len());
            }
            // A stream per peer address, seeded from the rule's seed and the address.
            let mut seed = cfg.seed ^ 0x9E37_79B9_7F4A_7C15;
            for b in to.to_string().bytes() {
                seed = (seed ^ b as u64).wrapping_mul(0x100_0000_01B3);
            }
            self.lanes.insert(
                to,
                Lane {
                    cfg,
                    rng: seed | 1,
                    queue: VecDeque::new(),
                    busy_until: Time::ZERO,
                    last_used: now,
                },
            );
        }
        let lane = self.lanes.get_mut(&to).expect("inserted");
        lane.last_used = now;
        if lane.cfg.loss > 0.0 && next_f64(&mut lane.rng) < lane.cfg.loss {
            self.stats.lost += 1;
            return None;
        }
        let mut release = now;
        if let Some(rate) = lane.cfg.rate {
            let start = lane.busy_until.max(now);
            let backlog = start.since(now).as_nanos() as u128 * rate as u128 / 1_000_000_000;
            if backlog as u64 + d.len() as u64 > lane.cfg.queue {
                self.stats.queue_drops += 1;
                return None;
            }
            let tx = Dur::from_nanos((d.len() as u128 * 1_000_000_000 / rate as u128) as u64);
            lane.busy_until = start + tx;
            release = lane.busy_until;
        }
        release += Dur::from_nanos(lane.cfg.delay.as_nanos() as u64);
        if release <= now && lane.queue.is_empty() {
            return Some(d);
        }
        self.stats.delayed += 1;
        lane.queue.push_back((release, d));
        if !self.active.contains(&to) {
            self.active.push(to);
        }
        None
    }

    /// A datagram whose release time has come.
    pub fn poll(&mut self, now: Time) -> Option<(SocketAddr, Vec<u8>)> {
        let mut i = 0;
        while i < self.active.len() {
            let to = self.active[i];
            let lane = self.lanes.get_mut(&to).expect("active lane");
            match lane.queue.front() {
                Some(&(t, _)) if t <= now => {
                    let (_, d) = lane.queue.pop_front().expect("front");
                    return Some((to, d));
                }
                Some(_) => i += 1,
                None => {
                    self.active.swap_remove(i);
                }
            }
        }
        None
    }

    /// When the next queued datagram is due.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.active
            .iter()
            .filter_map(|a| self.lanes.get(a)?.queue.front().map(|x| x.0))
            .min()
    }
}

/// xorshift64*, uniform in [0, 1).
fn next_f64(s: &mut u64) -> f64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    let x = s.wrapping_mul(0x2545_F491_4F6C_DD1D);
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn a(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    #[test]
    fn unused_lanes_are_forgotten_when_there_are_many() {
        let mut e = Emulator::new(vec![(
            PeerSel::All,
            Emulation {
                delay: Duration::from_millis(10),
                ..Emulation::default()
            },
        )]);
        let addr = |i: usize| SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 9));
        let peer = SocketAddr::from(([192, 0, 2, 1], 9));
        // Every 20 ms a datagram to a new address (each held for 10 ms), and
        // one to a peer in constant use; 3 × MAX_LANES addresses over 245 s.
        let n = 3 * MAX_LANES;
        let mut delivered = 0;
        for i in 0..n {
            let now = Time::ZERO + Dur::from_millis(20 * i as u64);
            // What is due first (two datagrams at most: emptied lanes may
            // stay on the active list until a later poll passes them), so
            // the peer's lane is empty when a purge runs.
            for _ in 0..2 {
                if e.poll(now).is_some() {
                    delivered += 1;
                }
            }
            assert!(e.push(now, addr(i), vec![1]).is_none());
            // The peer in use kept its lane (and its loss pattern) through
            // any purge that push ran.
            assert!(i == 0 || e.lanes.contains_key(&peer), "step {i}");
            assert!(e.push(now, peer, vec![2]).is_none());
            // At most twice the lanes used within LANE_IDLE (3000 here).
            assert!(e.lanes.len() <= 2 * MAX_LANES, "{} lanes", e.lanes.len());
        }
        assert!(e.lanes.len() < n / 2, "{} lanes", e.lanes.len());
        // Lanes with a datagram queued survived every purge.
        while e.poll(Time::ZERO + Dur::from_secs(3600)).is_some() {
            delivered += 1;
        }
        assert_eq!(delivered, 2 * n);
    }

    #[test]
    fn delay_loss_and_rate() {
        let mut e = Emulator::new(vec![
            (
                PeerSel::Addr(a(1)),
                Emulation {
                    delay: Duration::from_millis(20),
                    loss: 0.05,
                    ..Emulation::default()
                },
            ),
            (
                PeerSel::Addr(a(2)),
                Emulation {
                    rate: Some(1_000_000),
                    queue: 10_000,
                    ..Emulation::default()
                },
            ),
        ]);
        // Not emulated: straight through.
        assert!(e.push(Time::ZERO, a(3), vec![1]).is_some());
        let mut sent = 0;
        for _ in 0..10_000 {
            assert!(e.push(Time::ZERO, a(1), vec![0; 100]).is_none());
            sent += 1;
        }
        assert_eq!(e.poll_timeout(), Some(Time::ZERO + Dur::from_millis(20)));
        assert!(e.poll(Time::ZERO + Dur::from_millis(19)).is_none());
        let mut got = 0;
        while e.poll(Time::ZERO + Dur::from_millis(20)).is_some() {
            got += 1;
        }
        let loss = 1.0 - got as f64 / sent as f64;
        assert!((0.04..0.06).contains(&loss), "{loss}");
        // 1 MB/s: 1000-byte datagrams leave 1 ms apart; the queue holds 10 kB.
        let mut queued = 0;
        for _ in 0..20 {
            if e.push(Time::ZERO, a(2), vec![0; 1000]).is_none() {
                queued += 1;
            }
        }
        assert_eq!(queued, 20);
        assert_eq!(e.stats.queue_drops, 10);
        let t = |ms| Time::ZERO + Dur::from_millis(ms);
        assert!(e.poll(t(0)).is_none());
        assert!(e.poll(t(1)).is_some());
        assert!(e.poll(t(1)).is_none());
        assert!(e.poll(t(10)).is_some());
    }
}
