//! The simulator's event queue: a radix heap over `(time, insertion
//! sequence)` keys.
//!
//! A discrete-event simulator only ever schedules at or after the event it
//! is processing, and every new event gets a larger sequence number, so
//! every key pushed is larger than the last key popped. A radix heap
//! (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster algorithms for the shortest path
//! problem", J. ACM 37(2), 1990) exploits exactly that monotonicity: an item
//! lives in the bucket given by the highest bit in which its key differs
//! from the last key popped, a push is an append, and a pop only sorts the
//! lowest non-empty bucket into lower ones. Each item moves down at most
//! 128 times in its life, and in practice a few times, where a binary heap
//! with hundreds of thousands of packets in flight pays a cache-missing
//! sift on every push and pop.
//!
//! Keys are unique (the sequence number), so the order is total and the
//! same as a binary heap's on `(time, seq)`: the event log, and therefore
//! every result, is unchanged.

use hopwise_proto::time::Time;

const BUCKETS: usize = 129;

/// A min-queue of items keyed by `(time, seq)`, for monotone use: every key
/// pushed must exceed the last key popped.
pub(crate) struct EventQueue<T> {
    /// The last key popped (or moved to bucket 0).
    last: u128,
    /// Bucket 0 holds items whose key equals `last`; bucket `i > 0` those
    /// whose key first differs from `last` in bit `i − 1` (from the bottom).
    buckets: Vec<Vec<(u128, T)>>,
    /// Bit `i − 1` set: bucket `i` (1 ≤ i ≤ 128) may hold items.
    nonempty: u128,
}

fn key(t: Time, seq: u64) -> u128 {
    (t.as_nanos() as u128) << 64 | seq as u128
}

fn bucket_of(last: u128, k: u128) -> usize {
    if k == last {
        0
    } else {
        (128 - (k ^ last).leading_zeros()) as usize
    }
}

impl<T> EventQueue<T> {
    pub(crate) fn new() -> Self {
        EventQueue {
            last: 0,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }

    /// Adds `item` at `(t, seq)`. Panics if the key is below the last one
    /// popped, which would break the queue's order (a scheduling bug).
    pub(crate) fn push(&mut self, t: Time, seq: u64, item: T) {
        let k = key(t, seq);
        assert!(
            k >= self.last,
            "event scheduled at {t:?} (seq {seq}) before the last one processed"
        );
        let b = bucket_of(self.last, k);
        self.buckets[b].push((k, item));
        if b > 0 {
            self.nonempty |= 1 << (b - 1);
        }
    }

    /// Moves the smallest key into bucket 0 (if the queue is not empty).
    fn settle(&mut self) {
        if !self.buckets[0].is_empty() || self.nonempty == 0 {
            return;
        }
        let i = self.nonempty.trailing_zeros() as usize + 1;
        self.nonempty &= !(1 << (i - 1));
        let mut b = std::mem::take(&mut self.buckets[i]);
        let min = b.iter().map(|(k, _)| *k).min().expect("non-empty");
        self.last = min;
        // Every key in bucket i agrees with the new `last` above bit i − 1,
        // so each lands in a bucket below i.
        for (k, item) in b.drain(..) {
            let j = bucket_of(min, k);
            self.buckets[j].push((k, item));
            if j > 0 {
                self.nonempty |= 1 << (j - 1);
            }
        }
        // Keep the emptied bucket's allocation for later pushes.
        self.buckets[i] = b;
    }

    /// The time of the next item, if any.
    pub(crate) fn peek_time(&mut self) -> Option<Time> {
        self.settle();
        self.buckets[0]
            .last()
            .map(|(k, _)| Time::from_nanos((k >> 64) as u64))
    }

    /// Removes and returns the item with the smallest key, with its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, T)> {
        self.settle();
        let (k, item) = self.buckets[0].pop()?;
        Some((Time::from_nanos((k >> 64) as u64), item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Random monotone workloads pop in exactly the order of a binary heap
    /// on `(time, seq)`.
    #[test]
    fn pops_in_binary_heap_order() {
        for seed in 0..20 {
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            let mut popped = 0;
            for _ in 0..20_000 {
                if rng.chance(0.55) || h.is_empty() {
                    // Mostly near-future events, some at `now`, a few far out.
                    let dt = match rng.below(10) {
                        0 => 0,
                        1 => rng.below(u64::MAX / 4),
                        _ => rng.below(1_000_000),
                    };
                    seq += 1;
                    let t = now + dt;
                    q.push(Time::from_nanos(t), seq, seq);
                    h.push(Reverse((t, seq)));
                } else {
                    let Reverse((t, s)) = h.pop().unwrap();
                    assert_eq!(q.peek_time(), Some(Time::from_nanos(t)));
                    assert_eq!(q.pop(), Some((Time::from_nanos(t), s)), "seed {seed}");
                    now = t;
                    popped += 1;
                }
                assert_eq!(q.len(), h.len());
            }
            while let Some(Reverse((t, s))) = h.pop() {
                assert_eq!(q.pop(), Some((Time::from_nanos(t), s)));
            }
            assert_eq!(q.pop(), None);
            assert_eq!(q.peek_time(), None);
            assert!(popped > 1000);
        }
    }

    #[test]
    #[should_panic(expected = "before the last one processed")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.push(Time::from_nanos(10), 1, ());
        q.pop();
        q.push(Time::from_nanos(5), 2, ());
    }
}
