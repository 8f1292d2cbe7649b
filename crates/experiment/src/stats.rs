//! The statistics every experiment uses, one copy each: means with t and
//! bootstrap intervals, quantiles, Jain's index, correlation, and a
//! bounded-memory histogram for quantiles of long runs ([`LogHistogram`]).
//!
//! A missing value is NaN (an empty cell in CSVs, `null` in summary.json),
//! except where `Option` says why there is none.

use hopwise_proto::rng::Rng;

mod histogram;
pub use histogram::LogHistogram;

/// The mean; NaN for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    mean_sd(xs).0
}

/// Mean and sample standard deviation; `(NaN, NaN)` for no samples.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (m, 0.0);
    }
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    (m, v.sqrt())
}

/// Two-sided Student-t critical value for a 90 % confidence interval with
/// `df` degrees of freedom: exact to three decimals up to 30, beyond that
/// the value at the band's lower end (40, 60, 120), so an interval is never
/// narrower than it should be.
pub fn t90(df: usize) -> f64 {
    const T: [f64; 30] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
        1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
        1.703, 1.701, 1.699, 1.697,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        31..=40 => T[29],
        41..=60 => 1.684,
        61..=120 => 1.671,
        _ => 1.658,
    }
}

/// Mean with the half-width of its 90 % confidence interval (NaN below two
/// samples).
pub fn mean_ci90(xs: &[f64]) -> (f64, f64) {
    let (m, sd) = mean_sd(xs);
    if xs.len() < 2 {
        return (m, f64::NAN);
    }
    (m, t90(xs.len() - 1) * sd / (xs.len() as f64).sqrt())
}

/// Resamples of the bootstrap intervals the claims carry.
pub const RESAMPLES: usize = 2000;

/// A 90 % percentile-bootstrap interval (Efron and Tibshirani 1993, §13.3)
/// of a statistic over `n` independent units (runs): `stat` gets the indices
/// of one resample, `n` draws with replacement, and the interval is the 5th
/// and 95th percentile over `reps` resamples. The draws come from the named
/// stream `name` (xoshiro256++, seeded from the name), so the interval is
/// deterministic. Resamples whose statistic is not finite (NaN or ±∞, say a
/// ratio over a zero variance) are left out, which narrows the interval;
/// `(NaN, NaN)` for `n == 0` or no finite resample.
pub fn bootstrap_ci90(
    n: usize,
    reps: usize,
    name: &str,
    stat: impl Fn(&[usize]) -> f64,
) -> (f64, f64) {
    bootstrap_groups_ci90(&[n], reps, name, |idx| stat(&idx[0]))
}

/// [`bootstrap_ci90`] over independent groups (the runs of two setups that
/// share nothing, say): each resample draws `sizes[g]` indices with
/// replacement within each group `g`, and `stat` gets them per group. One
/// group draws exactly what [`bootstrap_ci90`] draws. `(NaN, NaN)` if a
/// group is empty.
pub fn bootstrap_groups_ci90(
    sizes: &[usize],
    reps: usize,
    name: &str,
    stat: impl Fn(&[Vec<usize>]) -> f64,
) -> (f64, f64) {
    if sizes.is_empty() || sizes.contains(&0) {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = Rng::for_component(0, name);
    let mut idx: Vec<Vec<usize>> = sizes.iter().map(|&n| vec![0; n]).collect();
    let mut vals = Vec::with_capacity(reps);
    for _ in 0..reps {
        for (g, &n) in idx.iter_mut().zip(sizes) {
            for i in g.iter_mut() {
                *i = rng.below(n as u64) as usize;
            }
        }
        let v = stat(&idx);
        if v.is_finite() {
            vals.push(v);
        }
    }
    (quantile(&vals, 0.05), quantile(&vals, 0.95))
}

/// The `q`-quantile (0..=1) by linear interpolation, NaNs left out; NaN
/// for no samples.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The median (the mean of the middle two for an even count); NaN for no
/// samples.
pub fn median(xs: &[f64]) -> f64 {
    quantile(xs, 0.5)
}

/// The harmonic mean (for goodputs of equal transfers: the bytes over
/// their mean time); `None` for no values or one that is not positive.
pub fn harmonic_mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|&x| x <= 0.0) {
        return None;
    }
    Some(xs.len() as f64 / xs.iter().map(|x| 1.0 / x).sum::<f64>())
}

/// Jain's fairness index (Jain, Chiu & Hawe 1984): (Σx)² / (n·Σx²), 1 when
/// all are equal, 1/n when one takes everything. NaN for no samples or when
/// every sample is zero (nobody got anything: undefined, not perfect).
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 <= 0.0 {
        return f64::NAN;
    }
    s * s / (xs.len() as f64 * s2)
}

/// Pearson correlation of two equally long series (the longer one cut);
/// `None` below two points or if either is constant.
pub fn correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len().min(b.len());
    if n < 2 {
        return None;
    }
    let (a, b) = (&a[..n], &b[..n]);
    let ma = a.iter().sum::<f64>() / n as f64;
    let mb = b.iter().sum::<f64>() / n as f64;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (da, db) = (a[i] - ma, b[i] - mb);
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    if saa == 0.0 || sbb == 0.0 {
        return None;
    }
    Some(sab / (saa * sbb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_quantiles_and_intervals() {
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m - 2.5).abs() < 1e-12 && (sd - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert!(mean(&[]).is_nan());
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.25), 1.25);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[f64::NAN, 1.0]), 1.0);
        let (_, hw) = mean_ci90(&[1.0, 2.0, 3.0, 4.0]);
        assert!((hw - 2.353 * 1.290_994_448_735_805_6 / 2.0).abs() < 1e-9);
        assert!(mean_ci90(&[1.0]).1.is_nan());
        assert!(t90(1000) < t90(10));
        assert_eq!(harmonic_mean(&[1.0, 4.0]), Some(1.6));
        assert_eq!(harmonic_mean(&[1.0, 0.0]), None);
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_undefined_for_nothing() {
        assert_eq!(jain(&[2.0, 2.0, 2.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!(jain(&[]).is_nan());
        assert!(jain(&[0.0, 0.0]).is_nan());
    }

    #[test]
    fn correlation_signs() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert!((correlation(&a, &[2.0, 4.0, 6.0, 8.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((correlation(&a, &[4.0, 3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(correlation(&a, &[1.0, 1.0, 1.0, 1.0]), None);
        assert_eq!(correlation(&a[..1], &a[..1]), None);
    }

    #[test]
    fn bootstrap_interval_covers_the_mean_and_narrows_with_more_units() {
        // Unit i has the value i % 10: over 0..20 or 0..200 the mean is
        // 4.5 and the sd about 2.9.
        let mean =
            |idx: &[usize]| idx.iter().map(|&i| (i % 10) as f64).sum::<f64>() / idx.len() as f64;
        let (lo20, hi20) = bootstrap_ci90(20, 2000, "t", mean);
        let (lo200, hi200) = bootstrap_ci90(200, 2000, "t", mean);
        assert!(lo20 < 4.5 && 4.5 < hi20, "{lo20}..{hi20}");
        assert!(lo200 < 4.5 && 4.5 < hi200, "{lo200}..{hi200}");
        // The normal approximation gives ±1.645·2.87/√n: ±1.06 and ±0.33.
        assert!((hi20 - lo20 - 2.1).abs() < 0.5, "{lo20}..{hi20}");
        assert!((hi200 - lo200 - 0.67).abs() < 0.15, "{lo200}..{hi200}");
        // Deterministic per stream name; another name draws other resamples.
        assert_eq!(
            bootstrap_ci90(20, 500, "t", mean),
            bootstrap_ci90(20, 500, "t", mean)
        );
        assert_ne!(
            bootstrap_ci90(20, 500, "t", mean),
            bootstrap_ci90(20, 500, "u", mean)
        );
        assert!(bootstrap_ci90(0, 10, "t", mean).0.is_nan());
        // Two groups resample independently: the difference of two means
        // 10 apart stays near 10.
        let (lo, hi) = bootstrap_groups_ci90(&[20, 30], 1000, "g", |g| {
            let m = |idx: &[usize], off: f64| {
                idx.iter().map(|&i| (i % 5) as f64 + off).sum::<f64>() / idx.len() as f64
            };
            m(&g[1], 10.0) - m(&g[0], 0.0)
        });
        assert!(lo < 10.0 && 10.0 < hi && hi - lo < 2.0, "{lo}..{hi}");
        assert!(bootstrap_groups_ci90(&[3, 0], 10, "g", |_| 1.0).0.is_nan());
    }
}
