//! "Nice" axis ticks and compact tick-label formatting.
//!
//! Linear axes use steps of 1, 2 or 5 × 10^k; logarithmic axes use decades
//! (thinned out when there are too many, refined with 2× and 5× when there
//! are too few). Labels are short: `0`, `0.5`, `2.5k`, `1M`, `1e-3`.

/// Tolerance used when deciding whether a value sits on a tick boundary.
const EPS: f64 = 1e-9;
/// Upper bound on the number of ticks any function here will produce.
const MAX_TICKS: usize = 1000;

/// Exact-as-possible `10^e`.
pub(crate) fn pow10(e: i32) -> f64 {
    if e >= 0 {
        10f64.powi(e)
    } else if e >= -300 {
        // Division of two exactly representable values is correctly rounded,
        // so e.g. pow10(-3) is the double closest to 0.001.
        1.0 / 10f64.powi(-e)
    } else {
        0.0
    }
}

/// A tick step `mant × 10^exp` with `mant` in {1, 2, 5}.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Step {
    mant: i64,
    exp: i32,
}

impl Step {
    /// The smallest nice step that is at least `raw`.
    fn at_least(raw: f64) -> Step {
        let raw = if raw.is_finite() && raw > 1e-300 {
            raw
        } else if raw.is_finite() {
            1e-300
        } else {
            1e300
        };
        let mut exp = raw.log10().floor() as i32;
        loop {
            for mant in [1, 2, 5] {
                let s = Step { mant, exp };
                if s.value() >= raw * (1.0 - EPS) {
                    return s;
                }
            }
            exp += 1;
        }
    }

    /// The next larger nice step.
    fn next(self) -> Step {
        match self.mant {
            1 => Step { mant: 2, ..self },
            2 => Step { mant: 5, ..self },
            _ => Step {
                mant: 1,
                exp: self.exp + 1,
            },
        }
    }

    fn value(self) -> f64 {
        self.times(1)
    }

    /// `k × step`, computed so that e.g. 3 × 0.1 prints as 0.3.
    fn times(self, k: i64) -> f64 {
        let n = (k * self.mant) as f64;
        if self.exp >= 0 {
            n * pow10(self.exp)
        } else if self.exp >= -300 {
            n / 10f64.powi(-self.exp)
        } else {
            0.0
        }
    }

    /// Index range `(first, last)` of the multiples of this step inside
    /// `[lo, hi]`, or `None` when the range would hold absurdly many ticks.
    fn inner(self, lo: f64, hi: f64) -> Option<(i64, i64)> {
        let s = self.value();
        let a = (lo / s - EPS).ceil();
        let b = (hi / s + EPS).floor();
        if !(a.is_finite() && b.is_finite()) || b - a > MAX_TICKS as f64 {
            return None;
        }
        Some((a as i64, b as i64))
    }

    /// Index range of the multiples that just enclose `[lo, hi]`.
    fn outer(self, lo: f64, hi: f64) -> Option<(i64, i64)> {
        let s = self.value();
        let a = (lo / s + EPS).floor();
        let b = (hi / s - EPS).ceil();
        if !(a.is_finite() && b.is_finite()) || b - a > MAX_TICKS as f64 {
            return None;
        }
        Some((a as i64, b as i64))
    }
}

fn sorted(lo: f64, hi: f64) -> (f64, f64) {
    if lo <= hi {
        (lo, hi)
    } else {
        (hi, lo)
    }
}

/// Nice step (1, 2 or 5 × 10^k) for ticks between `lo` and `hi` such that
/// at most `max_ticks` ticks fall inside the range.
pub fn nice_step(lo: f64, hi: f64, max_ticks: usize) -> f64 {
    inner_step(lo, hi, max_ticks).value()
}

fn inner_step(lo: f64, hi: f64, max_ticks: usize) -> Step {
    let (lo, hi) = sorted(lo, hi);
    let max_ticks = max_ticks.clamp(2, MAX_TICKS);
    let mut step = Step::at_least((hi - lo) / max_ticks as f64);
    for _ in 0..64 {
        match step.inner(lo, hi) {
            Some((a, b)) if b - a < max_ticks as i64 => return step,
            _ => step = step.next(),
        }
    }
    step
}

/// Tick positions inside `[lo, hi]` (inclusive) at a nice step, at most
/// `max_ticks` of them (at least 2 are requested). Returns an empty vector
/// for non-finite input.
///
/// ```
/// assert_eq!(hopwise_plot::ticks::linear_ticks(0.0, 1.0, 6), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
/// ```
pub fn linear_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let (lo, hi) = sorted(lo, hi);
    let step = inner_step(lo, hi, max_ticks);
    match step.inner(lo, hi) {
        Some((a, b)) => (a..=b).map(|k| step.times(k)).collect(),
        None => vec![lo, hi],
    }
}

/// Expands `[lo, hi]` outwards to multiples of a nice step such that the
/// expanded range holds at most `max_ticks` ticks. Returns
/// `(new_lo, new_hi, step)`.
///
/// ```
/// let (lo, hi, step) = hopwise_plot::ticks::nice_bounds(3.0, 97.0, 6);
/// assert_eq!((lo, hi, step), (0.0, 100.0, 20.0));
/// ```
pub fn nice_bounds(lo: f64, hi: f64, max_ticks: usize) -> (f64, f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (lo, hi, 1.0);
    }
    let (lo, hi) = sorted(lo, hi);
    let max_ticks = max_ticks.clamp(2, MAX_TICKS);
    let mut step = Step::at_least((hi - lo) / max_ticks as f64);
    for _ in 0..64 {
        match step.outer(lo, hi) {
            Some((a, b)) if b - a < max_ticks as i64 && b > a => {
                return (step.times(a), step.times(b), step.value());
            }
            _ => step = step.next(),
        }
    }
    (lo, hi, step.value())
}

/// Ticks for a logarithmic axis over `[lo, hi]` (both must be > 0).
///
/// Prefers whole decades; if more than `max_ticks` decades fall inside the
/// range only every n-th decade is kept (aligned so that 1 stays a tick);
/// if fewer than two decades fall inside, 2× and 5× (then all 1..9×)
/// multiples are added; for ranges narrower than that, linear ticks are used.
pub fn log_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && hi > 0.0) {
        return Vec::new();
    }
    let (lo, hi) = sorted(lo, hi);
    let max_ticks = max_ticks.clamp(2, MAX_TICKS);
    let e0 = (lo.log10() - EPS).ceil() as i32;
    let e1 = (hi.log10() + EPS).floor() as i32;
    let decades: Vec<i32> = (e0..=e1).collect();
    if decades.len() > max_ticks {
        let stride = decades.len().div_ceil(max_ticks) as i32;
        // Prefer decades that are multiples of the stride (so 10^0 = 1 stays
        // a tick); fall back to counting from the first decade.
        let aligned: Vec<i32> = decades
            .iter()
            .copied()
            .filter(|e| e.rem_euclid(stride) == 0)
            .collect();
        let chosen = if aligned.len() >= 2 {
            aligned
        } else {
            decades
                .into_iter()
                .filter(|e| (e - e0).rem_euclid(stride) == 0)
                .collect()
        };
        return chosen.into_iter().map(pow10).collect();
    }
    if decades.len() >= 2 {
        return decades.into_iter().map(pow10).collect();
    }
    let in_range = |v: f64| v >= lo * (1.0 - EPS) && v <= hi * (1.0 + EPS);
    let f0 = lo.log10().floor() as i32;
    let f1 = hi.log10().ceil() as i32;
    for mants in [
        &[1.0, 2.0, 5.0][..],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ] {
        let ticks: Vec<f64> = (f0..=f1)
            .flat_map(|e| mants.iter().map(move |m| m * pow10(e)))
            .filter(|&v| in_range(v))
            .collect();
        if ticks.len() >= 2 && ticks.len() <= max_ticks.max(3) {
            return ticks;
        }
    }
    linear_ticks(lo, hi, max_ticks)
}

/// Minor grid positions (2×..9× of each decade) for a log axis over
/// `[lo, hi]`; empty when the range spans more than `max_decades` decades.
pub(crate) fn log_minor(lo: f64, hi: f64, max_decades: i32) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let f0 = lo.log10().floor() as i32;
    let f1 = hi.log10().ceil() as i32;
    if f1 - f0 > max_decades {
        return Vec::new();
    }
    (f0..=f1)
        .flat_map(|e| (2..=9).map(move |m| f64::from(m) * pow10(e)))
        .filter(|&v| v > lo && v < hi)
        .collect()
}

/// Smallest number of decimals `d <= max` such that `x × 10^d` is (nearly)
/// an integer.
fn decimals(x: f64, max: usize) -> usize {
    let x = x.abs();
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    (0..=max)
        .find(|&d| {
            let v = x * pow10(d as i32);
            (v - v.round()).abs() <= 1e-6 * v.abs()
        })
        .unwrap_or(max)
}

/// Formats `v` with `d` decimals, dropping trailing zeros and a negative zero.
fn fixed(v: f64, d: usize) -> String {
    let mut s = format!("{v:.d$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_string();
    }
    s
}

const SI: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];

/// Scientific notation `m e k`, `precision` being the absolute resolution
/// to keep (e.g. the tick step).
fn sci(v: f64, precision: f64) -> String {
    let mut e = v.abs().log10().floor() as i32;
    let mut unit = pow10(e);
    if unit == 0.0 {
        return format!("{v:e}");
    }
    let d = decimals(precision / unit, 6);
    let mut m = fixed(v / unit, d);
    if m == "10" || m == "-10" {
        e += 1;
        unit = pow10(e);
        m = fixed(v / unit, d.saturating_sub(1));
    }
    format!("{m}e{e}")
}

/// Formats a single value compactly with the absolute resolution
/// `precision`: scientific notation when `sci`, otherwise plain digits with
/// an SI suffix from a thousand on.
fn compact(v: f64, precision: f64, sci_style: bool) -> String {
    let a = v.abs();
    if !v.is_finite() {
        return v.to_string();
    }
    if a == 0.0 || a < precision * 1e-6 {
        return "0".to_string();
    }
    if sci_style {
        return sci(v, precision);
    }
    for (unit, suffix) in SI {
        if a >= unit * (1.0 - EPS) {
            return format!("{}{suffix}", fixed(v / unit, decimals(precision / unit, 9)));
        }
    }
    fixed(v, decimals(precision, 12))
}

/// Labels for linear ticks spaced `step` apart.
///
/// All labels of an axis share one style: plain (`0.25`), SI-suffixed for
/// values from a thousand (`2.5k`, `1M`), or scientific (`1e-4`) when every
/// tick is below 1e-3 or some tick reaches 1e15.
///
/// ```
/// use hopwise_plot::ticks::format_ticks;
/// assert_eq!(format_ticks(&[0.0, 0.5, 1.0], 0.5), ["0", "0.5", "1"]);
/// assert_eq!(format_ticks(&[0.0, 1.25e6, 2.5e6], 1.25e6), ["0", "1.25M", "2.5M"]);
/// ```
pub fn format_ticks(ticks: &[f64], step: f64) -> Vec<String> {
    let max = ticks.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let sci_style = !(1e-3..1e15).contains(&max);
    let step = if step.is_finite() && step > 0.0 {
        step
    } else {
        max.max(1e-300)
    };
    ticks.iter().map(|&t| compact(t, step, sci_style)).collect()
}

/// Compact label for an arbitrary value, keeping up to 4 significant digits
/// (`0.01`, `2`, `20k`, `1M`, `3.142`, `2e-5`); values below 0.01 or from
/// 1e15 on use scientific notation. Used for log-axis ticks and
/// histogram bin edges.
///
/// ```
/// use hopwise_plot::ticks::format_value;
/// assert_eq!(format_value(1e-3), "1e-3");
/// assert_eq!(format_value(2500.0), "2.5k");
/// assert_eq!(format_value(0.1), "0.1");
/// ```
pub fn format_value(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return if v == 0.0 {
            "0".to_string()
        } else {
            v.to_string()
        };
    }
    let a = v.abs();
    let e = a.log10().floor() as i32;
    compact(v, pow10(e - 3), !(1e-2..1e15).contains(&a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_nice() {
        assert_eq!(nice_step(0.0, 1.0, 6), 0.2);
        assert_eq!(nice_step(0.0, 10.0, 11), 1.0);
        assert_eq!(nice_step(0.0, 2.4e6, 6), 5e5);
        assert_eq!(nice_step(0.0, 0.003, 4), 0.001);
    }

    #[test]
    fn pow10_exact() {
        assert_eq!(pow10(-3), 0.001);
        assert_eq!(pow10(3), 1000.0);
    }

    #[test]
    fn labels() {
        assert_eq!(
            format_ticks(&[0.0, 0.1, 0.2, 0.30000000000000004], 0.1),
            ["0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(format_ticks(&[-1.0, 0.0, 1.0], 1.0), ["-1", "0", "1"]);
        assert_eq!(
            format_ticks(&[0.0, 500.0, 1000.0, 1500.0], 500.0),
            ["0", "500", "1k", "1.5k"]
        );
        assert_eq!(
            format_ticks(&[0.0, 2e-4, 4e-4], 2e-4),
            ["0", "2e-4", "4e-4"]
        );
        assert_eq!(
            format_ticks(&[0.0, 2.5e-4, 5e-4], 2.5e-4),
            ["0", "2.5e-4", "5e-4"]
        );
        assert_eq!(format_ticks(&[1e15, 2e15], 1e15), ["1e15", "2e15"]);
        assert_eq!(format_value(1e15), "1e15");
        assert_eq!(format_value(123456.0), "123.5k");
        assert_eq!(format_value(9.99999), "10");
        assert_eq!(format_value(-0.25), "-0.25");
    }
}
