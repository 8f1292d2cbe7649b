//! A histogram in logarithmic buckets: quantiles of any number of samples in
//! bounded memory.

/// Mantissa bits a bucket index keeps: 2^7 = 128 buckets per octave.
const SUB_BITS: u32 = 7;
/// The bits of an `f64` below those: the index is `bits >> SHIFT`.
const SHIFT: u32 = 52 - SUB_BITS;

/// Non-negative samples counted in logarithmic buckets, for quantiles of
/// long runs (every packet's delay) in bounded memory.
///
/// Each octave `[2^e, 2^(e+1))` is cut into 128 buckets of equal width
/// (the bucket is the value's binary exponent and the top 7 bits of its
/// mantissa: integer operations, no logarithm, no rounding at the
/// boundaries), so a bucket's upper bound is at most 1 + 1/128 times its
/// lower one. A quantile is reported as the point of its bucket `[a, b)`
/// with the smallest relative error to both bounds, `2ab/(a+b)`, clamped
/// to the exact minimum and maximum seen: it is within
/// [`LogHistogram::RELATIVE_ERROR`] (1/257, 0.39 %) of the true sample at
/// that rank. Zero (and any value below
/// 10⁻¹²) is counted apart and reported exactly, and so are the first and
/// the last rank (the minimum and the maximum). The count and the mean are
/// exact too.
///
/// Memory grows with the range of the values, not their number: 425
/// buckets (8 bytes each) per decade between the smallest and the largest
/// positive value, so 1 µs to 10 s in seconds takes about 3 000 buckets,
/// 24 kB.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogHistogram {
    count: u64,
    zeros: u64,
    sum: f64,
    min: f64,
    max: f64,
    /// Bucket index of `counts[0]`.
    first: i32,
    counts: Vec<u64>,
}

impl LogHistogram {
    /// The largest relative error of a reported quantile: (γ − 1)/(γ + 1)
    /// for the widest bucket ratio γ = 1 + 1/128, i.e. 1/257.
    pub const RELATIVE_ERROR: f64 = 1.0 / 257.0;

    /// An empty histogram (allocates nothing until the first positive sample).
    pub fn new() -> LogHistogram {
        LogHistogram::default()
    }

    /// Counts one sample. Negative values and NaN are ignored.
    pub fn add(&mut self, x: f64) {
        if x.is_nan() || x < 0.0 {
            return;
        }
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.sum += x;
        if x < 1e-12 {
            self.zeros += 1;
            return;
        }
        let i = (x.to_bits() >> SHIFT) as i32;
        if self.counts.is_empty() {
            self.first = i;
        } else if i < self.first {
            let grow = (self.first - i) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = i;
        }
        let k = (i - self.first) as usize;
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += 1;
    }

    /// Samples counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The exact mean; `None` without samples.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// The exact smallest and largest sample; `None` without samples.
    pub fn range(&self) -> Option<(f64, f64)> {
        (self.count > 0).then_some((self.min, self.max))
    }

    /// The `q`-quantile (0..=1) by nearest rank: the sample at rank
    /// ⌈q·n⌉ (at least 1) in ascending order, within
    /// [`LogHistogram::RELATIVE_ERROR`]; `None` without samples. Unlike
    /// [`super::quantile`] it does not interpolate between neighbours.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        // The extremes are known exactly.
        if rank <= self.zeros || rank == 1 {
            return Some(self.min);
        }
        if rank == self.count {
            return Some(self.max);
        }
        let mut seen = self.zeros;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let i = (self.first + k as i32) as u64;
                let a = f64::from_bits(i << SHIFT);
                let b = f64::from_bits((i + 1) << SHIFT);
                return Some((2.0 * a * b / (a + b)).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    /// The median by nearest rank (see [`LogHistogram::quantile`]).
    pub fn median(&self) -> Option<f64> {
        self.quantile(0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_the_stated_precision() {
        // 1..=1000: the sample at rank r is r itself.
        let mut h = LogHistogram::new();
        for x in (1..=1000).rev() {
            h.add(x as f64 * 1e-3);
        }
        assert_eq!(h.count(), 1000);
        assert!((h.mean().unwrap() - 0.5005).abs() < 1e-12);
        for (q, exact) in [(0.5, 0.5), (0.95, 0.95), (0.99, 0.99), (0.001, 0.001)] {
            let got = h.quantile(q).unwrap();
            let err = (got - exact).abs() / exact;
            assert!(
                err <= LogHistogram::RELATIVE_ERROR,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), Some(1.0));
        assert_eq!(h.quantile(0.0), Some(0.001));
        assert_eq!(h.range(), Some((0.001, 1.0)));
    }

    #[test]
    fn zeros_and_the_extremes_are_exact() {
        let mut h = LogHistogram::new();
        assert_eq!((h.mean(), h.median()), (None, None));
        for _ in 0..3 {
            h.add(0.0);
        }
        for _ in 0..7 {
            h.add(0.25);
        }
        h.add(f64::NAN);
        h.add(-1.0);
        assert_eq!(h.count(), 10);
        // Ranks 1..=3 are zero, exact; 4..=9 are 0.25 within the
        // precision; rank 10 is the maximum, exact.
        let near =
            |v: Option<f64>| (v.unwrap() - 0.25).abs() <= 0.25 * LogHistogram::RELATIVE_ERROR;
        assert_eq!(h.quantile(0.3), Some(0.0));
        assert!(near(h.quantile(0.31)));
        assert!(near(h.median()));
        assert_eq!(h.quantile(0.95), Some(0.25));
        assert!((h.mean().unwrap() - 0.175).abs() < 1e-15);
    }

    #[test]
    fn memory_follows_the_range_not_the_count() {
        let mut h = LogHistogram::new();
        for k in 0..100_000u32 {
            h.add(1e-3 * (1.0 + (k % 1000) as f64 / 100.0));
        }
        // 1 ms to 11 ms: 128·log2(11) ≈ 443 buckets.
        assert!(h.counts.len() <= 445, "{}", h.counts.len());
        h.add(1e-6);
        // And down to 1 µs: 128·log2(11 000) ≈ 1720.
        assert!(h.counts.len() <= 1722, "{}", h.counts.len());
    }
}
