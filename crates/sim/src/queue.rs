//! The simulator's event queue: a radix heap over event times, first in,
//! first out among events at the same time.
//!
//! A discrete-event simulator only ever schedules at or after the event it
//! is processing, so every time pushed is at least the last time popped. A
//! radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster algorithms for the
//! shortest path problem", J. ACM 37(2), 1990) exploits exactly that
//! monotonicity: an item lives in the bucket given by the highest bit in
//! which its time differs from the last time popped, a push is an append,
//! and a pop only sorts the lowest non-empty bucket into lower ones. Each
//! item moves down at most 64 times in its life, and in practice a few
//! times, where a binary heap with hundreds of thousands of packets in
//! flight pays a cache-missing sift on every push and pop.
//!
//! Ties are popped in insertion order, which is the simulator's order on
//! `(time, insertion sequence)`: all items of one time always share a
//! bucket (an item's bucket depends only on its time and the last time
//! popped), pushes append, and sorting a bucket down keeps the relative
//! order of its items. So the sequence number need not be part of the key,
//! and the order, hence the event log and every result, is the same as a
//! binary heap's on `(time, seq)`.

use hopwise_proto::time::Time;
use std::collections::VecDeque;

const BUCKETS: usize = 64;

/// A min-queue of items keyed by time, FIFO among equal times, for monotone
/// use: every time pushed must be at least the last time popped.
pub(crate) struct EventQueue<T> {
    /// The time of the items in `due`: the last time popped, or a later
    /// one that [`EventQueue::peek_time`] settled on.
    last: u64,
    /// The last time popped: pushes must not go before it.
    popped: u64,
    /// Items at `last`, in insertion order.
    due: VecDeque<T>,
    /// Bucket `i` holds items whose time first differs from `last` in bit
    /// `i` (from the bottom).
    buckets: Vec<Vec<(u64, T)>>,
    /// Bit `i` set: bucket `i` may hold items.
    nonempty: u64,
    /// The last sequence number pushed (debug check of the caller's order).
    #[cfg(debug_assertions)]
    seq: u64,
}

fn bucket_of(last: u64, t: u64) -> usize {
    debug_assert_ne!(last, t);
    (63 - (t ^ last).leading_zeros()) as usize
}

impl<T> EventQueue<T> {
    pub(crate) fn new() -> Self {
        EventQueue {
            last: 0,
            popped: 0,
            due: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: 0,
            #[cfg(debug_assertions)]
            seq: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.due.len() + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    /// Adds `item` at `t`, after every item already queued for `t`. `seq`
    /// must grow with every push (the simulator's insertion sequence; ties
    /// pop in that order). Panics if `t` is before the last time popped,
    /// which would break the queue's order (a scheduling bug). A push
    /// between a peek and the next pop may go before the peeked time (a
    /// driver adding work between two `run_until` calls): the queue is then
    /// rebuilt around `t`, which costs one pass over its items.
    pub(crate) fn push(&mut self, t: Time, seq: u64, item: T) {
        let t = t.as_nanos();
        assert!(
            t >= self.popped,
            "event scheduled at {t} ns (seq {seq}) before the last one processed"
        );
        #[cfg(debug_assertions)]
        {
            debug_assert!(seq > self.seq, "sequence numbers must grow");
            self.seq = seq;
        }
        if t < self.last {
            self.rebase(t);
        }
        if t == self.last {
            self.due.push_back(item);
        } else {
            let b = bucket_of(self.last, t);
            self.buckets[b].push((t, item));
            self.nonempty |= 1 << b;
        }
    }

    /// Re-keys every item against `t`, below every queued time. Items of
    /// one time share a bucket (or `due`) in insertion order, and keep it.
    fn rebase(&mut self, t: u64) {
        let old = self.last;
        let mut items: Vec<(u64, T)> = self.due.drain(..).map(|x| (old, x)).collect();
        for b in 0..BUCKETS {
            if self.nonempty & (1 << b) != 0 {
                items.append(&mut self.buckets[b]);
            }
        }
        self.nonempty = 0;
        self.last = t;
        for (time, item) in items {
            let j = bucket_of(t, time);
            self.buckets[j].push((time, item));
            self.nonempty |= 1 << j;
        }
    }

    /// Moves the items of the smallest time into `due` (if the queue is not
    /// empty).
    fn settle(&mut self) {
        if !self.due.is_empty() || self.nonempty == 0 {
            return;
        }
        let i = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= !(1 << i);
        let mut b = std::mem::take(&mut self.buckets[i]);
        let min = b.iter().map(|(t, _)| *t).min().expect("non-empty");
        self.last = min;
        // Every time in bucket i agrees with the new `last` above bit i, so
        // each item lands in `due` or a bucket below i, in its order.
        for (t, item) in b.drain(..) {
            if t == min {
                self.due.push_back(item);
            } else {
                let j = bucket_of(min, t);
                self.buckets[j].push((t, item));
                self.nonempty |= 1 << j;
            }
        }
        // Keep the emptied bucket's allocation for later pushes.
        self.buckets[i] = b;
    }

    /// The time of the next item, if any.
    pub(crate) fn peek_time(&mut self) -> Option<Time> {
        self.settle();
        (!self.due.is_empty()).then(|| Time::from_nanos(self.last))
    }

    /// Removes and returns the item with the smallest time (the earliest
    /// pushed among equal times), with its time.
    pub(crate) fn pop(&mut self) -> Option<(Time, T)> {
        self.settle();
        let item = self.due.pop_front()?;
        self.popped = self.last;
        Some((Time::from_nanos(self.last), item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Random monotone workloads pop in exactly the order of a binary heap
    /// on `(time, seq)`: seeds 0–19 mostly at distinct times, seeds 20–39
    /// on a coarse grid where most items share their time with others.
    #[test]
    fn pops_in_binary_heap_order() {
        for seed in 0..40 {
            let coarse = seed >= 20;
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            let mut popped = 0;
            let mut ties = 0;
            for _ in 0..20_000 {
                if rng.chance(0.55) || h.is_empty() {
                    // Mostly near-future events, some at `now`, a few far out.
                    let dt = match rng.below(10) {
                        0 => 0,
                        1 if !coarse => rng.below(u64::MAX / 4),
                        _ if coarse => rng.below(8) * 1000,
                        _ => rng.below(1_000_000),
                    };
                    seq += 1;
                    let t = now + dt;
                    q.push(Time::from_nanos(t), seq, seq);
                    h.push(Reverse((t, seq)));
                } else {
                    let Reverse((t, s)) = h.pop().unwrap();
                    ties += (h.peek().is_some_and(|Reverse((u, _))| *u == t)) as usize;
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
            assert!(!coarse || ties > popped / 4, "seed {seed}: {ties} ties");
        }
    }

    /// A driver that peeks (as `run_until` does) and then pushes before the
    /// peeked time, but not before the last pop, still gets heap order.
    #[test]
    fn push_between_peek_and_pop_keeps_order() {
        for seed in 0..20 {
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            let (mut seq, mut now, mut rebased) = (0u64, 0u64, 0);
            for _ in 0..5_000 {
                match rng.below(4) {
                    0 | 1 if !h.is_empty() => {
                        let Reverse((t, s)) = h.pop().unwrap();
                        assert_eq!(q.pop(), Some((Time::from_nanos(t), s)), "seed {seed}");
                        now = t;
                    }
                    2 => {
                        // Peek, then push somewhere in (now, peeked).
                        let next = q.peek_time().map_or(now + 1000, |t| t.as_nanos());
                        let t = if next > now + 1 {
                            now + 1 + rng.below(next - now - 1)
                        } else {
                            next
                        };
                        rebased += (t < next) as usize;
                        seq += 1;
                        q.push(Time::from_nanos(t), seq, seq);
                        h.push(Reverse((t, seq)));
                    }
                    _ => {
                        seq += 1;
                        let t = now + 1 + rng.below(4) * 500;
                        q.push(Time::from_nanos(t), seq, seq);
                        h.push(Reverse((t, seq)));
                    }
                }
            }
            while let Some(Reverse((t, s))) = h.pop() {
                assert_eq!(q.pop(), Some((Time::from_nanos(t), s)));
            }
            assert!(
                rebased > 30,
                "seed {seed}: {rebased} pushes before the peeked time"
            );
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
