//! The simulator's event queue: a radix heap over event keys
//! `(time, insertion sequence)`.
//!
//! A discrete-event simulator only ever schedules at or after the event it
//! is processing, so every key pushed is above the last key popped. A
//! radix heap (Ahuja, Mehlhorn, Orlin & Tarjan, "Faster algorithms for the
//! shortest path problem", J. ACM 37(2), 1990) exploits exactly that
//! monotonicity: an item lives in the bucket given by the highest bit in
//! which its key differs from the last key popped, a push is an append,
//! and a pop only sorts the lowest non-empty bucket into lower ones. Each
//! item moves down at most 128 times in its life, and in practice a few
//! times, where a binary heap pays a cache-missing sift on every push and
//! pop.
//!
//! The key is the time in its high 64 bits and the sequence number in its
//! low 64, so the order is the simulator's total order on `(time, seq)`
//! whatever order the items were pushed in. That lets the simulator keep
//! only the earliest of a FIFO's events in the queue (the head of a link's
//! pipeline) and push the next one, with the sequence number it was given
//! when it was created, once the head has been popped: the events still pop
//! exactly as if all of them had been queued up front.

use hopwise_proto::time::Time;

const BUCKETS: usize = 128;
/// The queue's lanes: separate radix heaps, each with its own last key.
pub(crate) const LANES: usize = 2;
/// The lane of a link's events: a few per busy direction, all soon due.
pub(crate) const NEAR: usize = 0;
/// The lane of everything else, timers above all: most far in the future.
pub(crate) const FAR: usize = 1;
const _: () = assert!(NEAR == 0 && FAR == 1 && LANES == 2);

fn key(t: u64, seq: u64) -> u128 {
    (t as u128) << 64 | seq as u128
}

fn time_of(k: u128) -> Time {
    Time::from_nanos((k >> 64) as u64)
}

/// The bucket of key `k` against `last`: the highest bit in which they differ.
fn bucket_of(last: u128, k: u128) -> usize {
    debug_assert_ne!(last, k, "keys must be distinct");
    let (hi, lo) = (((k ^ last) >> 64) as u64, (k ^ last) as u64);
    if hi != 0 {
        127 - hi.leading_zeros() as usize
    } else {
        63 - lo.leading_zeros() as usize
    }
}

/// One radix heap.
struct Radix<T> {
    /// The key of `top`, or the last key popped while `top` is empty.
    last: u128,
    /// The item whose key is `last`, once [`Radix::settle`] found it.
    top: Option<T>,
    /// Bucket `i` holds items whose key first differs from `last` in bit
    /// `i` (from the bottom).
    buckets: Vec<Vec<(u128, T)>>,
    /// Bit `i % 64` of word `i / 64` set: bucket `i` may hold items.
    nonempty: [u64; 2],
}

impl<T> Radix<T> {
    fn new() -> Self {
        Radix {
            last: 0,
            top: None,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            nonempty: [0; 2],
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.top.is_some() as usize + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    #[inline]
    fn put(&mut self, k: u128, item: T) {
        let b = bucket_of(self.last, k);
        self.buckets[b].push((k, item));
        self.nonempty[b >> 6] |= 1 << (b & 63);
    }

    #[inline]
    fn push(&mut self, k: u128, item: T) {
        if k < self.last {
            self.rebase(k, item);
        } else {
            self.put(k, item);
        }
    }

    /// Makes `item`, at key `k` below every queued key, the top, and
    /// re-buckets every other item against `k`.
    #[cold]
    #[inline(never)]
    fn rebase(&mut self, k: u128, item: T) {
        let old = self.last;
        let mut items: Vec<(u128, T)> = self.top.take().map(|x| (old, x)).into_iter().collect();
        for b in &mut self.buckets {
            items.append(b);
        }
        self.nonempty = [0; 2];
        self.last = k;
        self.top = Some(item);
        for (key, item) in items {
            self.put(key, item);
        }
    }

    /// Finds the item with the smallest key and makes it the top (if the
    /// heap is not empty); returns the top's key.
    #[inline]
    fn settle(&mut self) -> Option<u128> {
        if self.top.is_some() {
            return Some(self.last);
        }
        let i = if self.nonempty[0] != 0 {
            self.nonempty[0].trailing_zeros() as usize
        } else if self.nonempty[1] != 0 {
            64 + self.nonempty[1].trailing_zeros() as usize
        } else {
            return None;
        };
        let b = &mut self.buckets[i];
        if b.len() == 1 {
            self.nonempty[i >> 6] &= !(1 << (i & 63));
            let (k, item) = b.pop().expect("one item");
            self.last = k;
            self.top = Some(item);
            return Some(k);
        }
        Some(self.split(i))
    }

    /// Makes the smallest item of bucket `i` (the lowest non-empty one, with
    /// several items) the top and sorts the others into lower buckets;
    /// returns the top's key.
    #[inline(never)]
    fn split(&mut self, i: usize) -> u128 {
        self.nonempty[i >> 6] &= !(1 << (i & 63));
        let (lower, rest) = self.buckets.split_at_mut(i);
        let b = &mut rest[0];
        let min = b.iter().map(|(k, _)| *k).min().expect("non-empty");
        self.last = min;
        // Every key in bucket i agrees with the new `last` above bit i, so
        // each other item lands in a bucket below i.
        for (k, item) in b.drain(..) {
            if k == min {
                self.top = Some(item);
            } else {
                let j = bucket_of(min, k);
                lower[j].push((k, item));
                self.nonempty[j >> 6] |= 1 << (j & 63);
            }
        }
        min
    }
}

/// A min-queue of items keyed by `(time, seq)`, for monotone use: every key
/// pushed must be above the last key popped. Items are pushed into one of
/// [`LANES`] lanes, which changes nothing in the order: a lane of frequent
/// near-future items (a link's events) then does not keep sorting down the
/// rare far-future ones (timers) of the other.
pub(crate) struct EventQueue<T> {
    lanes: [Radix<T>; LANES],
    /// The last key popped: pushes must go after it.
    popped: u128,
}

impl<T> EventQueue<T> {
    pub(crate) fn new() -> Self {
        EventQueue {
            lanes: [Radix::new(), Radix::new()],
            popped: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lanes.iter().map(Radix::len).sum()
    }

    /// Adds `item` at `t` with sequence number `seq`, which orders it among
    /// items of the same time (every queued key must be distinct), in lane
    /// `lane`. Panics if `(t, seq)` is not after the last key popped, which
    /// would break the queue's order (a scheduling bug). A push between a
    /// peek and the next pop may go before the peeked key (a driver adding
    /// work between two `run_until` calls): its lane is then rebuilt around
    /// it, which costs one pass over the lane's items.
    #[inline]
    pub(crate) fn push(&mut self, t: Time, seq: u64, lane: usize, item: T) {
        let t = t.as_nanos();
        let k = key(t, seq);
        assert!(
            k > self.popped,
            "event scheduled at {t} ns (seq {seq}) before the last one processed"
        );
        self.lanes[lane].push(k, item);
    }

    /// The lane holding the smallest key, and that key.
    fn first(&mut self) -> Option<(usize, u128)> {
        let [a, b] = &mut self.lanes;
        match (a.settle(), b.settle()) {
            (Some(x), Some(y)) if y < x => Some((FAR, y)),
            (Some(x), _) => Some((NEAR, x)),
            (None, Some(y)) => Some((FAR, y)),
            (None, None) => None,
        }
    }

    /// The time of the next item, if any.
    #[cfg(test)]
    pub(crate) fn peek_time(&mut self) -> Option<Time> {
        self.first().map(|(_, k)| time_of(k))
    }

    /// Removes and returns the item with the smallest key, with its time,
    /// if its time is at most `until`.
    #[inline]
    pub(crate) fn pop_until(&mut self, until: Time) -> Option<(Time, T)> {
        let (lane, k) = self.first()?;
        if time_of(k) > until {
            return None;
        }
        self.popped = k;
        let item = self.lanes[lane].top.take().expect("settled");
        Some((time_of(k), item))
    }

    /// Removes and returns the item with the smallest key, with its time.
    #[cfg(test)]
    pub(crate) fn pop(&mut self) -> Option<(Time, T)> {
        self.pop_until(Time::from_nanos(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, VecDeque};

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
                    q.push(Time::from_nanos(t), seq, (seq % 2) as usize, seq);
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
                        q.push(Time::from_nanos(t), seq, (seq % 2) as usize, seq);
                        h.push(Reverse((t, seq)));
                    }
                    _ => {
                        seq += 1;
                        let t = now + 1 + rng.below(4) * 500;
                        q.push(Time::from_nanos(t), seq, (seq % 2) as usize, seq);
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

    /// Several FIFO streams, each with only its head queued (the next one
    /// pushed, with the sequence number it was created with, when the head
    /// pops), among items queued directly: the pops are those of a binary
    /// heap holding every item from its creation.
    #[test]
    fn lazily_queued_fifo_heads_pop_in_binary_heap_order() {
        for seed in 0..20 {
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            // Per stream: (time, seq) of items not yet queued, behind the head.
            let mut streams: Vec<VecDeque<(u64, u64)>> = vec![VecDeque::new(); 4];
            let mut last_t = [0u64; 4];
            // Whether the stream's head is in the queue.
            let mut queued = [false; 4];
            let (mut seq, mut now, mut lazy) = (0u64, 0u64, 0);
            for _ in 0..20_000 {
                if rng.chance(0.5) || h.is_empty() {
                    seq += 1;
                    let s = rng.below(6) as usize;
                    if s < 4 {
                        // A stream item: times never decrease along a stream.
                        let t = (now + rng.below(4) * 700).max(last_t[s]);
                        last_t[s] = t;
                        let item = (s as u64) << 32 | seq;
                        if !queued[s] {
                            q.push(Time::from_nanos(t), seq, 0, item);
                            queued[s] = true;
                        } else {
                            streams[s].push_back((t, seq));
                            lazy += 1;
                        }
                        h.push(Reverse((t, seq, item)));
                    } else {
                        let t = now + rng.below(3000);
                        let item = 1 << 63 | seq;
                        q.push(Time::from_nanos(t), seq, 1, item);
                        h.push(Reverse((t, seq, item)));
                    }
                } else {
                    let Reverse((t, _, item)) = h.pop().unwrap();
                    assert_eq!(q.pop(), Some((Time::from_nanos(t), item)), "seed {seed}");
                    now = t;
                    if item & 1 << 63 == 0 {
                        let s = (item >> 32) as usize;
                        match streams[s].pop_front() {
                            Some((t2, s2)) => {
                                q.push(Time::from_nanos(t2), s2, 0, (s as u64) << 32 | s2)
                            }
                            None => queued[s] = false,
                        }
                    }
                }
                let waiting: usize = streams.iter().map(VecDeque::len).sum();
                assert_eq!(q.len() + waiting, h.len());
            }
            assert!(lazy > 2000, "seed {seed}: {lazy} items queued lazily");
        }
    }

    #[test]
    #[should_panic(expected = "before the last one processed")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.push(Time::from_nanos(10), 1, 0, ());
        q.pop();
        q.push(Time::from_nanos(5), 2, 1, ());
    }
}
