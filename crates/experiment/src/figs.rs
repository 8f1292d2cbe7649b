//! Helpers shared by the reproductions' figures and their CSVs: series that
//! hide one another, series that run along an axis, CDFs that rise from 0,
//! and a common range for log panels.

/// Points of a plotted series, `(x, y)`.
pub type Pts = [(f64, f64)];

/// A series that the reader cannot tell apart from an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Exactly the same points.
    Same,
    /// The same x values (at least 90 % of them), and at 95 % of those the
    /// y values differ by at most 1 % of the panel's y span (2 to 4 pixels):
    /// the lines lie on one another but for a few points.
    Close,
}

impl Overlap {
    /// `"="` or `"≈"`.
    pub fn sign(self) -> &'static str {
        match self {
            Overlap::Same => "=",
            Overlap::Close => "≈",
        }
    }
}

/// Whether `b` coincides with `a` on a panel whose y axis spans `span`.
/// Empty series never coincide.
pub fn overlap(a: &Pts, b: &Pts, span: f64) -> Option<Overlap> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    if a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| same(p.0, q.0) && same(p.1, q.1))
    {
        return Some(Overlap::Same);
    }
    if !(span.is_finite() && span > 0.0) {
        return None;
    }
    // Pair the points with equal x (both series sorted by x).
    let (mut i, mut j) = (0, 0);
    let (mut n, mut near) = (0usize, 0usize);
    while i < a.len() && j < b.len() {
        let (p, q) = (a[i], b[j]);
        if p.0 < q.0 {
            i += 1;
        } else if q.0 < p.0 {
            j += 1;
        } else {
            if p.1.is_finite() != q.1.is_finite() {
                return None;
            }
            if !p.1.is_finite() || (p.1 - q.1).abs() <= 0.01 * span {
                near += 1;
            }
            n += 1;
            i += 1;
            j += 1;
        }
    }
    let enough = n * 10 >= a.len().max(b.len()) * 9 && n >= 2;
    (enough && near * 20 >= n * 19).then_some(Overlap::Close)
}

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// For each series, the first earlier one it coincides with (see
/// [`overlap`]), if any.
pub fn overlaps(series: &[&Pts], span: f64) -> Vec<Option<(usize, Overlap)>> {
    (0..series.len())
        .map(|k| {
            // An exact match beats a close one.
            let found = |want: Overlap| {
                (0..k).find_map(|i| {
                    (overlap(series[i], series[k], span) == Some(want)).then_some((i, want))
                })
            };
            found(Overlap::Same).or_else(|| found(Overlap::Close))
        })
        .collect()
}

/// Legend names: `names[k]` with `" (= <earlier name>)"` or
/// `" (≈ <earlier name>)"` appended when series `k` coincides with an
/// earlier series on a panel whose y axis spans `span`.
/// `short(i)` is how series `i` is referred to (often its own name).
pub fn overlap_names(
    names: &[String],
    series: &[&Pts],
    span: f64,
    short: &dyn Fn(usize) -> String,
) -> Vec<String> {
    overlaps(series, span)
        .into_iter()
        .zip(names)
        .map(|(o, name)| match o {
            Some((i, o)) => format!("{name} ({} {})", o.sign(), short(i)),
            None => name.clone(),
        })
        .collect()
}

/// The y span an automatic axis gives these series: from `min(0, lowest)`
/// to the highest finite value (the axes include 0 for non-negative data).
pub fn y_span(series: &[&Pts]) -> f64 {
    let ys = || series.iter().flat_map(|s| s.iter().map(|p| p.1));
    let hi = ys()
        .filter(|y| y.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    let lo = ys().filter(|y| y.is_finite()).fold(0.0, f64::min);
    if hi.is_finite() {
        hi - lo
    } else {
        f64::NAN
    }
}

/// If the series runs along the x axis, its median over the second half of
/// its x range: that median is at most 1.5 % of the panel's y span `span`
/// (a line the axis hides). `None` otherwise.
pub fn along_axis(pts: &Pts, span: f64) -> Option<f64> {
    let xs = || pts.iter().map(|p| p.0).filter(|x| x.is_finite());
    let (x0, x1) = (xs().reduce(f64::min)?, xs().reduce(f64::max)?);
    let mid = 0.5 * (x0 + x1);
    let mut late: Vec<f64> = pts
        .iter()
        .filter(|p| p.0 >= mid && p.1.is_finite())
        .map(|p| p.1)
        .collect();
    if late.is_empty() || !(span.is_finite() && span > 0.0) {
        return None;
    }
    late.sort_by(f64::total_cmp);
    let med = late[late.len() / 2];
    (med.abs() <= 0.015 * span).then_some(med)
}

/// CDF points that rise from 0: `(x₁, 0)` put before the first point
/// `(x₁, F₁)` when the points do not start at 0 already.
pub fn cdf_from_zero(mut pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if let Some(&(x, f)) = pts.first() {
        if f != 0.0 {
            pts.insert(0, (x, 0.0));
        }
    }
    pts
}

/// One range of whole decades `(10^a, 10^b)` covering every positive finite
/// value, for log panels that should share their y axis.
pub fn decade_range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |r: Option<(f64, f64)>, v| {
            Some(r.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })?;
    let a = lo.log10().floor();
    let mut b = hi.log10().ceil();
    if b <= a {
        b = a + 1.0;
    }
    Some((10f64.powf(a), 10f64.powf(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_tell_same_from_close_from_apart() {
        let a: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, i as f64)).collect();
        let b = a.clone();
        let c: Vec<(f64, f64)> = a.iter().map(|&(x, y)| (x, y + 0.5)).collect();
        let d: Vec<(f64, f64)> = a.iter().map(|&(x, y)| (x, y + 10.0)).collect();
        // A few points apart (a loss, say) still hide the line.
        let mut e = a.clone();
        e[50].1 += 50.0;
        assert_eq!(overlap(&a, &e, 100.0), Some(Overlap::Close));
        assert_eq!(overlap(&a, &b, 100.0), Some(Overlap::Same));
        assert_eq!(overlap(&a, &c, 100.0), Some(Overlap::Close));
        assert_eq!(overlap(&a, &d, 100.0), None);
        assert_eq!(overlap(&a, &[], 100.0), None);
        let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let got = overlap_names(&names, &[&a, &b, &c, &d], 100.0, &|i| names[i].clone());
        assert_eq!(got, ["a", "b (= a)", "c (≈ a)", "d"]);
    }

    #[test]
    fn axis_huggers_and_helpers() {
        let flat: Vec<(f64, f64)> = (0..60)
            .map(|i| (i as f64, if i < 5 { 100.0 } else { 1.0 }))
            .collect();
        assert_eq!(along_axis(&flat, 150.0), Some(1.0));
        assert_eq!(along_axis(&flat, 20.0), None);
        assert_eq!(cdf_from_zero(vec![(2.0, 0.5), (3.0, 1.0)])[0], (2.0, 0.0));
        assert_eq!(cdf_from_zero(vec![(2.0, 0.0), (3.0, 1.0)]).len(), 2);
        assert_eq!(decade_range([0.3, 42.0, -1.0]), Some((0.1, 100.0)));
        assert_eq!(y_span(&[&[(0.0, 2.0), (1.0, 5.0)]]), 5.0);
    }
}
