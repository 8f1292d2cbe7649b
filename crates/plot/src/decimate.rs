//! Min/max-preserving decimation of long polylines.
//!
//! A time series with 100k points drawn into an 800 px wide chart has over a
//! hundred points per pixel column. Drawing them all only bloats the SVG;
//! dropping points naively hides spikes. [`decimate`] keeps, for every run of
//! consecutive points that fall into the same column, the first, the lowest,
//! the highest and the last point (in their original order), so the rendered
//! envelope is unchanged while at most 4 points per column remain.

/// Marker for a break in a polyline.
const BREAK: (f64, f64) = (f64::NAN, f64::NAN);

/// Reduces `points` to at most four points per column, where the x range
/// `[x_lo, x_hi]` is divided into `columns` equal columns (typically one per
/// pixel).
///
/// * Points with a non-finite coordinate are treated as line breaks: the
///   output contains a single `(NaN, NaN)` there (never at the start).
/// * Points left of `x_lo` (right of `x_hi`) all share one extra column, so
///   out-of-view data costs at most four points per contiguous run.
/// * The bound of `4 × (columns + 2)` points plus breaks holds when x is
///   sorted; unsorted data is still reduced run by run.
/// * With a degenerate range or `columns == 0` the points are returned
///   unchanged apart from break normalisation.
///
/// ```
/// use hopwise_plot::decimate;
/// let spiky: Vec<(f64, f64)> = (0..10_000)
///     .map(|i| (i as f64, if i == 5_000 { 100.0 } else { (i % 7) as f64 }))
///     .collect();
/// let d = decimate(&spiky, 0.0, 10_000.0, 100);
/// assert!(d.len() <= 4 * 102);
/// assert!(d.contains(&(5_000.0, 100.0)));
/// ```
pub fn decimate(points: &[(f64, f64)], x_lo: f64, x_hi: f64, columns: usize) -> Vec<(f64, f64)> {
    let span = x_hi - x_lo;
    if columns == 0 || !(span.is_finite() && span > 0.0) || points.len() <= 4 {
        return normalise_breaks(points);
    }
    let cols = columns as f64;
    let scale = cols / span;
    let column_of = |x: f64| -> i64 { ((x - x_lo) * scale).floor().clamp(-1.0, cols) as i64 };

    let mut out = Vec::with_capacity(points.len().min(4 * columns + 8));
    let mut run: Option<Run> = None;
    for (i, &(x, y)) in points.iter().enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            if let Some(r) = run.take() {
                r.flush(points, &mut out);
            }
            push_break(&mut out);
            continue;
        }
        let col = column_of(x);
        match run.as_mut() {
            Some(r) if r.col == col => r.add(i, y),
            _ => {
                if let Some(r) = run.replace(Run::new(col, i, y)) {
                    r.flush(points, &mut out);
                }
            }
        }
    }
    if let Some(r) = run {
        r.flush(points, &mut out);
    }
    out
}

fn push_break(out: &mut Vec<(f64, f64)>) {
    if out.last().is_some_and(|p| !p.0.is_nan()) {
        out.push(BREAK);
    }
}

fn normalise_breaks(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    for &(x, y) in points {
        if x.is_finite() && y.is_finite() {
            out.push((x, y));
        } else {
            push_break(&mut out);
        }
    }
    out
}

/// Consecutive points sharing one column.
struct Run {
    col: i64,
    first: usize,
    last: usize,
    min: (usize, f64),
    max: (usize, f64),
}

impl Run {
    fn new(col: i64, i: usize, y: f64) -> Self {
        Run {
            col,
            first: i,
            last: i,
            min: (i, y),
            max: (i, y),
        }
    }

    fn add(&mut self, i: usize, y: f64) {
        self.last = i;
        if y < self.min.1 {
            self.min = (i, y);
        }
        if y > self.max.1 {
            self.max = (i, y);
        }
    }

    fn flush(self, points: &[(f64, f64)], out: &mut Vec<(f64, f64)>) {
        let mut idx = [self.first, self.min.0, self.max.0, self.last];
        idx.sort_unstable();
        let mut prev = None;
        for i in idx {
            if prev != Some(i) {
                out.push(points[i]);
                prev = Some(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_series_unchanged() {
        let p = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 0.0)];
        assert_eq!(decimate(&p, 0.0, 2.0, 100), p);
    }

    #[test]
    fn breaks_are_kept_and_collapsed() {
        let p = vec![
            (f64::NAN, 0.0),
            (0.0, 1.0),
            (1.0, f64::NAN),
            (2.0, f64::INFINITY),
            (3.0, 2.0),
            (4.0, 2.0),
        ];
        let d = decimate(&p, 0.0, 4.0, 1000);
        assert_eq!(d.len(), 4);
        assert_eq!(d[0], (0.0, 1.0));
        assert!(d[1].0.is_nan());
        assert_eq!(d[2], (3.0, 2.0));
    }

    #[test]
    fn order_within_column_is_preserved() {
        // One column: max comes before min.
        let p = vec![
            (0.0, 0.0),
            (0.1, 9.0),
            (0.2, 5.0),
            (0.3, -9.0),
            (0.4, 1.0),
            (0.5, 2.0),
        ];
        let d = decimate(&p, 0.0, 10.0, 10);
        assert_eq!(d, vec![(0.0, 0.0), (0.1, 9.0), (0.3, -9.0), (0.5, 2.0)]);
    }
}
