//! Tor's relay token bucket (BandwidthRate / BandwidthBurst), sans-IO.
//!
//! Two refill disciplines:
//!
//! * [`Refill::Periodic`]: tokens are added in steps of `rate × T` at every
//!   multiple of `T` since the epoch (Tor's `TokenBucketRefillInterval`,
//!   100 ms by default). A relay that drains its bucket therefore sends in
//!   bursts every `T`: seed 002 §4 uses this to explain the 350 kB backlog
//!   plateau of Fig. 5.
//! * [`Refill::OnDemand`]: tokens accrue continuously with time, and a
//!   consumer that finds the bucket empty waits `reenable` before trying
//!   again, as current Tor stops reading from a connection that ran out of
//!   bandwidth and re-enables it after `TokenBucketRefillInterval`.
//!
//! A periodic bucket can have a phase: its refills fall at `k·T − phase`
//! rather than at multiples of `T`, as relays' timers are not synchronised.
//!
//! The bucket starts full. All arithmetic is exact (integer byte·ns).

use crate::time::{Dur, Time};

/// How tokens come back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refill {
    /// `rate × interval` every `interval`.
    Periodic(Dur),
    /// Continuous accrual; an empty bucket makes the consumer wait `reenable`.
    OnDemand { reenable: Dur },
}

/// A token bucket counting bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    /// Bytes per second.
    rate: u64,
    burst: u64,
    refill: Refill,
    tokens: u64,
    /// Periodic: the last refill boundary applied. OnDemand: the time up to
    /// which accrual was applied.
    last: Time,
    /// OnDemand: fractional accrual carried over, in byte·ns (< 1e9).
    carry: u128,
    /// Periodic: refills fall at `k·T − phase` (`phase < T`). Internally the
    /// bucket runs on the shifted clock `now + phase`.
    phase: Dur,
}

impl TokenBucket {
    /// A full bucket of `burst` bytes refilled at `rate_bytes_per_sec`.
    pub fn new(rate_bytes_per_sec: u64, burst: u64, refill: Refill) -> Self {
        TokenBucket {
            rate: rate_bytes_per_sec,
            burst,
            refill,
            tokens: burst,
            last: Time::ZERO,
            carry: 0,
            phase: Dur::ZERO,
        }
    }

    /// Shifts a periodic bucket's refills to `k·T − phase` (taken modulo
    /// `T`; ignored on demand). Set it before the bucket is first used.
    pub fn with_phase(mut self, phase: Dur) -> Self {
        if let Refill::Periodic(t) = self.refill {
            self.phase = Dur::from_nanos(phase.as_nanos() % t.as_nanos().max(1));
        }
        self
    }

    /// The refill phase (zero unless set by [`TokenBucket::with_phase`]).
    pub fn phase(&self) -> Dur {
        self.phase
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }
    pub fn burst(&self) -> u64 {
        self.burst
    }

    fn update(&mut self, now: Time) {
        match self.refill {
            Refill::Periodic(t) => {
                let now = now + self.phase;
                let t = t.as_nanos().max(1);
                let boundary = Time::from_nanos(now.as_nanos() / t * t);
                if boundary > self.last {
                    let steps = (boundary.as_nanos() - self.last.as_nanos()) / t;
                    let add = (self.rate as u128 * t as u128 / 1_000_000_000) * steps as u128;
                    self.tokens = (self.tokens as u128 + add).min(self.burst as u128) as u64;
                    self.last = boundary;
                }
            }
            Refill::OnDemand { .. } => {
                if now > self.last {
                    let acc = self.rate as u128 * (now - self.last).as_nanos() as u128 + self.carry;
                    let add = acc / 1_000_000_000;
                    self.carry = acc % 1_000_000_000;
                    self.tokens = (self.tokens as u128 + add).min(self.burst as u128) as u64;
                    if self.tokens == self.burst {
                        self.carry = 0;
                    }
                    self.last = now;
                }
            }
        }
    }

    /// Tokens (bytes) available at `now`.
    pub fn available(&mut self, now: Time) -> u64 {
        self.update(now);
        self.tokens
    }

    /// Whether `n` bytes may be sent at `now`.
    pub fn allows(&mut self, now: Time, n: u64) -> bool {
        self.available(now) >= n
    }

    /// Takes `n` bytes (saturating at zero: a caller that sends a cell with a
    /// partly filled bucket, as Tor does, empties it).
    pub fn consume(&mut self, now: Time, n: u64) {
        self.update(now);
        self.tokens = self.tokens.saturating_sub(n);
    }

    /// When a consumer blocked at `now` waiting for `n` bytes should try
    /// again: the next refill boundary (periodic) or `now + reenable` (on
    /// demand). `None` if `n` bytes are available now.
    pub fn retry_at(&mut self, now: Time, n: u64) -> Option<Time> {
        if self.available(now) >= n {
            return None;
        }
        Some(match self.refill {
            Refill::Periodic(t) => {
                let t = t.as_nanos().max(1);
                let shifted = (now + self.phase).as_nanos();
                Time::from_nanos((shifted / t + 1) * t) - self.phase
            }
            Refill::OnDemand { reenable } => now + reenable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Dur::from_millis(ms)
    }

    #[test]
    fn phase_moves_the_refill_instants() {
        // 1 MB/s, 10 ms refills (10 kB each), phase 3 ms: refills at 7, 17, … ms.
        let mut b = TokenBucket::new(1_000_000, 10_000, Refill::Periodic(Dur::from_millis(10)))
            .with_phase(Dur::from_millis(23));
        assert_eq!(b.phase(), Dur::from_millis(3), "taken modulo the period");
        assert_eq!(b.available(at(0)), 10_000);
        b.consume(at(1), 10_000);
        assert_eq!(b.retry_at(at(1), 1), Some(at(7)));
        assert_eq!(b.available(at(6)), 0, "nothing before k·T − phase");
        assert_eq!(b.available(at(7)), 10_000);
        b.consume(at(7), 10_000);
        assert_eq!(b.retry_at(at(7), 1), Some(at(17)));
        assert_eq!(b.available(at(16)), 0);
        // Two boundaries passed at once add two steps (capped at the burst).
        b.consume(at(17), 10_000);
        assert_eq!(b.available(at(37)), 10_000);
        // On demand, a phase means nothing.
        let od = TokenBucket::new(
            1_000_000,
            10_000,
            Refill::OnDemand {
                reenable: Dur::from_millis(5),
            },
        )
        .with_phase(Dur::from_millis(3));
        assert_eq!(od.phase(), Dur::ZERO);
    }

    #[test]
    fn periodic_refills_in_steps() {
        // 1 500 kB/s, burst 150 kB, refill every 100 ms: 150 kB per step.
        let mut b = TokenBucket::new(1_500_000, 150_000, Refill::Periodic(Dur::from_millis(100)));
        assert_eq!(b.available(at(0)), 150_000);
        b.consume(at(1), 150_000);
        assert_eq!(b.available(at(99)), 0, "nothing until the boundary");
        assert_eq!(b.retry_at(at(50), 512), Some(at(100)));
        assert_eq!(b.available(at(100)), 150_000);
        b.consume(at(100), 100_000);
        // Two boundaries later the bucket is capped at its burst.
        assert_eq!(b.available(at(300)), 150_000);
    }

    #[test]
    fn on_demand_accrues_continuously() {
        let mut b = TokenBucket::new(
            1_000_000,
            10_000,
            Refill::OnDemand {
                reenable: Dur::from_millis(100),
            },
        );
        b.consume(at(0), 10_000);
        assert_eq!(b.available(at(1)), 1_000, "1 ms at 1 MB/s");
        assert_eq!(b.retry_at(at(1), 5_000), Some(at(101)));
        assert_eq!(b.retry_at(at(5), 5_000), None);
        // Fractions are carried, not lost: 1 byte/s for 1.5 s twice is 3 bytes.
        let mut s = TokenBucket::new(
            1,
            100,
            Refill::OnDemand {
                reenable: Dur::from_millis(1),
            },
        );
        s.consume(at(0), 100);
        s.available(at(1500));
        assert_eq!(s.available(at(3000)), 3);
    }

    #[test]
    fn sustained_rate_matches() {
        // Send 512 B whenever allowed for 10 s: the mean rate is the bucket rate.
        for refill in [
            Refill::Periodic(Dur::from_millis(100)),
            Refill::OnDemand {
                reenable: Dur::from_millis(10),
            },
        ] {
            let mut b = TokenBucket::new(1_500_000, 150_000, refill);
            let mut now = Time::ZERO;
            let mut sent = 0u64;
            while now < at(10_000) {
                match b.retry_at(now, 512) {
                    None => {
                        b.consume(now, 512);
                        sent += 512;
                    }
                    Some(t) => now = t,
                }
            }
            let rate = sent as f64 / 10.0;
            assert!(
                (rate / 1_500_000.0 - 1.0).abs() < 0.02,
                "{refill:?}: {rate}"
            );
        }
    }
}
