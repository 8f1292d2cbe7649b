//! Rings that give back a burst's room.
//!
//! A `VecDeque` keeps the capacity of its largest burst for good. A large
//! simulation has tens of thousands of queues (interface queues, packets
//! on the wire, TCP scoreboards), most of them empty most of the time, and
//! together they held hundreds of megabytes of such room. A drained ring
//! that grew past [`SHRINK_ABOVE`] entries shrinks back; the gap between
//! that and what it keeps spares a ring whose bursts stay small from
//! reallocating at each one.

use std::collections::VecDeque;

/// A drained ring with room for more entries than this shrinks.
pub const SHRINK_ABOVE: usize = 64;

/// If `q` is empty and has room for more than [`SHRINK_ABOVE`] entries,
/// shrinks it to room for `keep`. The check is inline and the shrink out
/// of line, so that per-packet callers stay small.
#[inline]
pub fn release_if_drained<T>(q: &mut VecDeque<T>, keep: usize) {
    if q.is_empty() && q.capacity() > SHRINK_ABOVE {
        shrink(q, keep);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(q: &mut VecDeque<T>, keep: usize) {
    q.shrink_to(keep);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_drained_ring_past_the_threshold_shrinks() {
        let mut q: VecDeque<u64> = (0..500).collect();
        release_if_drained(&mut q, 8);
        assert!(q.capacity() >= 500, "not drained");
        q.clear();
        release_if_drained(&mut q, 8);
        assert!(q.capacity() <= 16, "{}", q.capacity());
        let mut small: VecDeque<u64> = VecDeque::with_capacity(SHRINK_ABOVE);
        let cap = small.capacity();
        release_if_drained(&mut small, 8);
        assert_eq!(small.capacity(), cap, "below the threshold");
    }
}
