//! A relay's read and write token buckets (Tor's global buckets), on top of
//! `hopwise_proto::bucket::TokenBucket`, with Tor's per-connection share and
//! the bookkeeping for waking blocked connections at the refill.

use crate::config::{BucketScope, BucketSpec};
use hopwise_proto::bucket::TokenBucket;
use hopwise_proto::time::{Dur, Time};

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Read = 0,
    Write = 1,
}

/// A node's buckets. A missing bucket is unlimited.
#[derive(Debug, Default)]
pub struct Buckets {
    b: [Option<TokenBucket>; 2],
    /// Pending wake-up per side (a timer is armed for it).
    wake: [Option<Time>; 2],
    /// Bytes taken per side.
    pub used: [u64; 2],
    /// How often each side found its bucket empty.
    pub empties: [u64; 2],
}

impl Buckets {
    /// Buckets for `spec` limited to `scope`; `phase_draw` is a uniform draw
    /// in `[0, 1)` for the refill phase.
    pub fn new(spec: Option<&BucketSpec>, scope: BucketScope, phase_draw: f64) -> Buckets {
        let mut out = Buckets::default();
        let Some(s) = spec else { return out };
        let phase = s.phase(phase_draw);
        let mk = || TokenBucket::new(s.rate, s.burst, s.refill).with_phase(phase);
        if matches!(scope, BucketScope::Read | BucketScope::Both) {
            out.b[0] = Some(mk());
        }
        if matches!(scope, BucketScope::Write | BucketScope::Both) {
            out.b[1] = Some(mk());
        }
        out
    }

    /// The refill phase of the relay's buckets (zero without a bucket).
    pub fn phase(&self) -> Dur {
        self.b
            .iter()
            .flatten()
            .next()
            .map_or(Dur::ZERO, TokenBucket::phase)
    }

    /// Whether `side` is limited at all.
    pub fn limited(&self, side: Side) -> bool {
        self.b[side as usize].is_some()
    }

    /// Tokens available (`None`: unlimited).
    pub fn tokens(&mut self, side: Side, now: Time) -> Option<u64> {
        self.b[side as usize].as_mut().map(|b| b.available(now))
    }

    /// Bytes a connection may move in one turn, cells of `base` bytes: Tor's
    /// share of the global bucket (`connection_bucket_get_share`: an eighth
    /// of the bucket rounded down to whole cells, at least 4 and at most 32
    /// cells, never more than the bucket holds). Unlimited: 32 cells.
    pub fn share(&mut self, side: Side, now: Time, base: u64) -> u64 {
        let high = 32 * base;
        let low = 4 * base;
        match self.tokens(side, now) {
            None => high,
            Some(tokens) => {
                let eighth = tokens / 8;
                let cells = eighth - eighth % base;
                cells.clamp(low, high).min(tokens)
            }
        }
    }

    pub fn consume(&mut self, side: Side, now: Time, n: u64) {
        if let Some(b) = self.b[side as usize].as_mut() {
            b.consume(now, n);
            self.used[side as usize] += n;
        }
    }

    /// A consumer found `side` empty at `now`. Returns the time to arm a
    /// timer for, unless one is pending already.
    pub fn block(&mut self, side: Side, now: Time) -> Option<Time> {
        let b = self.b[side as usize].as_mut()?;
        let at = b.retry_at(now, 1)?;
        self.empties[side as usize] += 1;
        match self.wake[side as usize] {
            Some(w) if w <= at => None,
            _ => {
                self.wake[side as usize] = Some(at);
                Some(at)
            }
        }
    }

    /// A wake-up timer for `side` fired at `now`: true if it is the pending
    /// one (consumers blocked on `side` should try again).
    pub fn fired(&mut self, side: Side, now: Time) -> bool {
        match self.wake[side as usize] {
            Some(w) if w <= now => {
                self.wake[side as usize] = None;
                true
            }
            _ => false,
        }
    }

    /// Whether consumers of `side` are waiting for a refill.
    pub fn waiting(&self, side: Side) -> bool {
        self.wake[side as usize].is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Dur::from_millis(ms)
    }

    #[test]
    fn share_follows_tor() {
        let spec = BucketSpec::new(1_500_000).random_phase(false);
        let mut b = Buckets::new(Some(&spec), BucketScope::Both, 0.0);
        // Full bucket: an eighth is far above 32 cells.
        assert_eq!(b.share(Side::Read, at(0), 512), 32 * 512);
        b.consume(Side::Read, at(0), 1_500_000 - 10_000);
        // 10 000 / 8 = 1250 → 1024 (2 cells) → at least 4 cells = 2048.
        assert_eq!(b.share(Side::Read, at(0), 512), 2048);
        b.consume(Side::Read, at(0), 9_000);
        assert_eq!(
            b.share(Side::Read, at(0), 512),
            1000,
            "never more than the bucket"
        );
        assert_eq!(
            b.share(Side::Write, at(0), 512),
            32 * 512,
            "sides are separate"
        );
        let mut u = Buckets::new(None, BucketScope::Both, 0.0);
        assert_eq!(u.share(Side::Read, at(0), 498), 32 * 498);
    }

    #[test]
    fn phase_shifts_the_refill() {
        let spec = BucketSpec::new(1_000_000).burst(100_000);
        let mut b = Buckets::new(Some(&spec), BucketScope::Write, 0.25);
        assert!(!b.limited(Side::Read));
        b.consume(Side::Write, at(10), 100_000);
        assert_eq!(b.tokens(Side::Write, at(10)), Some(0));
        // Boundaries at k·100 ms − 25 ms.
        assert_eq!(b.block(Side::Write, at(10)), Some(at(75)));
        assert_eq!(b.block(Side::Write, at(20)), None, "already armed");
        assert!(!b.fired(Side::Write, at(74)));
        assert_eq!(b.tokens(Side::Write, at(74)), Some(0));
        assert!(b.fired(Side::Write, at(75)));
        assert_eq!(b.tokens(Side::Write, at(75)), Some(100_000));
    }
}
