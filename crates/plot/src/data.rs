//! Helpers that turn raw samples into plottable points.

use crate::ticks;

/// Empirical CDF of `samples` as points for a [`Series::step`](crate::Series::step).
///
/// NaN and infinite samples are ignored. The result starts with
/// `(min, 0.0)` followed by one point `(v, F(v))` per distinct value `v` in
/// ascending order, where `F(v)` is the fraction of samples `<= v`; the last
/// point therefore has `F = 1`. Drawn as a step-after line this is exactly
/// the empirical distribution function. Empty input gives an empty vector.
///
/// ```
/// let p = hopwise_plot::cdf_points(&[3.0, 1.0, 2.0, f64::NAN, 2.0]);
/// assert_eq!(p, vec![(1.0, 0.0), (1.0, 0.25), (2.0, 0.75), (3.0, 1.0)]);
/// ```
pub fn cdf_points(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Vec::new();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mut out = Vec::with_capacity(v.len() + 1);
    out.push((v[0], 0.0));
    for (i, &x) in v.iter().enumerate() {
        let last_of_run = v.get(i + 1).is_none_or(|&next| next != x);
        if last_of_run {
            out.push((x, (i + 1) as f64 / n));
        }
    }
    out
}

/// Histogram of `samples` with at most `max_bins` bins whose edges are nice
/// numbers, ready for [`BarChart::group`](crate::BarChart::group).
///
/// Each entry is `("lo–hi", count)`. Bins are half open `[lo, hi)` except
/// the last one, which also holds its upper edge. Non-finite samples are
/// ignored; no finite samples give an empty vector.
///
/// ```
/// let h = hopwise_plot::histogram(&[0.5, 1.5, 1.7, 3.9], 4);
/// assert_eq!(h[1], ("1–2".to_string(), 2.0));
/// ```
pub fn histogram(samples: &[f64], max_bins: usize) -> Vec<(String, f64)> {
    let finite = || samples.iter().copied().filter(|x| x.is_finite());
    let Some(lo) = finite().reduce(f64::min) else {
        return Vec::new();
    };
    let hi = finite().fold(lo, f64::max);
    let max_bins = max_bins.max(1);
    let (lo, hi, step) = if hi > lo {
        // `nice_bounds` counts ticks, i.e. bins + 1.
        ticks::nice_bounds(lo, hi, max_bins + 1)
    } else {
        let step = ticks::nice_step(0.0, lo.abs().max(1.0), 2);
        let start = (lo / step).floor() * step;
        (start, start + step, step)
    };
    let nbins = (((hi - lo) / step).round() as usize).max(1);
    let mut counts = vec![0.0; nbins];
    for x in finite() {
        let i = ((x - lo) / step).floor();
        let i = if i.is_finite() && i > 0.0 {
            (i as usize).min(nbins - 1)
        } else {
            0
        };
        counts[i] += 1.0;
    }
    let edge = |k: usize| {
        let v = lo + k as f64 * step;
        ticks::format_ticks(&[v], step).pop().unwrap_or_default()
    };
    counts
        .into_iter()
        .enumerate()
        .map(|(k, c)| (format!("{}–{}", edge(k), edge(k + 1)), c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_counts_everything() {
        let samples: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.0731).collect();
        let h = histogram(&samples, 10);
        assert!(h.len() <= 10 && h.len() >= 5, "{h:?}");
        assert_eq!(h.iter().map(|b| b.1).sum::<f64>(), 1000.0);
    }

    #[test]
    fn histogram_degenerate() {
        let h = histogram(&[5.0, 5.0, f64::NAN], 10);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].1, 2.0);
        assert!(histogram(&[], 10).is_empty());
    }
}
