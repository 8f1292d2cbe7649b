//! 16-bit wrapping sequence-number arithmetic (BEP 29: `seq_nr` and
//! `ack_nr` are 16-bit and wrap). Comparisons take the shorter way around the
//! circle, as libtorrent's `compare_less_wrap` and libutp's `wrapping_compare_less`
//! do: `a` is before `b` if walking up from `a` reaches `b` in fewer than
//! 32 768 steps.

/// `a` comes strictly before `b`.
pub fn lt(a: u16, b: u16) -> bool {
    let up = b.wrapping_sub(a);
    up != 0 && up < 0x8000
}

/// `a` comes before `b` or equals it.
pub fn le(a: u16, b: u16) -> bool {
    a == b || lt(a, b)
}

/// Steps from `a` up to `b`, modulo 2^16.
pub fn dist(a: u16, b: u16) -> u16 {
    b.wrapping_sub(a)
}

/// Signed distance from `a` to `b`, in `-32768..32768`.
pub fn diff(a: u16, b: u16) -> i32 {
    b.wrapping_sub(a) as i16 as i32
}

/// 32-bit microsecond timestamps and differences wrap every ~71.6 minutes.
/// [`Unwrapper`] turns a stream of such values into a 64-bit running value
/// by adding the signed step between consecutive values; it starts at
/// `2^32 + first`, so small negative drifts never go below zero. Only
/// differences of its output are meaningful (they are what LEDBAT uses:
/// the sample minus the base delay), so the arbitrary start cancels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unwrapper {
    last: Option<(u32, i64)>,
}

impl Unwrapper {
    pub fn new() -> Self {
        Unwrapper { last: None }
    }

    /// The running 64-bit value of `v`.
    pub fn unwrap(&mut self, v: u32) -> u64 {
        let acc = match self.last {
            None => (1i64 << 32) + v as i64,
            Some((prev, acc)) => acc + v.wrapping_sub(prev) as i32 as i64,
        };
        let acc = acc.max(0);
        self.last = Some((v, acc));
        acc as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compare_across_the_wrap() {
        assert!(lt(65535, 0));
        assert!(lt(65530, 3));
        assert!(!lt(3, 65530));
        assert!(!lt(0, 0));
        assert!(le(0, 0));
        assert!(le(65535, 0));
        assert_eq!(dist(65534, 1), 3);
        assert_eq!(diff(65534, 1), 3);
        assert_eq!(diff(1, 65534), -3);
        assert_eq!(diff(0, 0x8000), -32768);
        // Exactly half the circle away is before in neither direction.
        assert!(lt(0, 0x7fff));
        assert!(!lt(0, 0x8000));
        assert!(!lt(0x8000, 0));
    }

    #[test]
    fn unwrap_timestamps_across_the_wrap() {
        let mut u = Unwrapper::new();
        let a = u.unwrap(u32::MAX - 10);
        let b = u.unwrap(5);
        assert_eq!(b - a, 16);
        // Going back a little is a negative step, not a wrap forward.
        let c = u.unwrap(u32::MAX - 2);
        assert_eq!(b - c, 8);
        // Many wraps forward accumulate.
        let mut u = Unwrapper::new();
        let start = u.unwrap(0);
        let mut v = 0u32;
        for _ in 0..10 {
            for _ in 0..4 {
                v = v.wrapping_add(1 << 30);
                u.unwrap(v);
            }
        }
        assert_eq!(u.unwrap(v) - start, 10 << 32);
    }

    proptest! {
        #[test]
        fn lt_is_antisymmetric_and_matches_diff(a: u16, d in 1u16..0x8000) {
            let b = a.wrapping_add(d);
            prop_assert!(lt(a, b));
            prop_assert!(!lt(b, a));
            prop_assert_eq!(diff(a, b), d as i32);
            prop_assert_eq!(diff(b, a), -(d as i32));
            prop_assert_eq!(dist(a, b), d);
        }

        #[test]
        fn unwrap_follows_small_steps(start: u32, steps in proptest::collection::vec(-1_000_000i64..1_000_000, 0..64)) {
            let mut u = Unwrapper::new();
            let base = u.unwrap(start) as i64;
            let mut exact = 0i64;
            let mut v = start;
            for s in steps {
                exact += s;
                v = v.wrapping_add(s as i32 as u32);
                let got = u.unwrap(v) as i64 - base;
                prop_assert_eq!(got, exact);
            }
        }
    }
}
