//! Axis range resolution and data-to-pixel scales.

use crate::svg::text_width;
use crate::ticks::{self, pow10};

/// Font size of tick labels.
pub(crate) const TICK_FONT: f64 = 11.0;
/// Fraction of the span added on each side when markers would otherwise sit
/// on the plot border.
const MARKER_PAD: f64 = 0.04;
/// A tight axis end moves to the next nice tick if that grows the range by
/// at most this fraction.
const SNAP: f64 = 0.05;
/// Room added above data that would touch the top of a nice axis, as a
/// fraction of the span (the axis then ends at the next nice bound).
const HEADROOM: f64 = 0.04;

/// Running min/max of the values that are valid on an axis.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Extent {
    log: bool,
    range: Option<(f64, f64)>,
}

impl Extent {
    pub fn new(log: bool) -> Self {
        Extent { log, range: None }
    }

    /// Whether `v` can be placed on this axis.
    pub fn valid(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    pub fn add(&mut self, v: f64) {
        if !self.valid(v) {
            return;
        }
        self.range = Some(match self.range {
            None => (v, v),
            Some((lo, hi)) => (lo.min(v), hi.max(v)),
        });
    }

    pub fn range(&self) -> Option<(f64, f64)> {
        self.range
    }
}

/// What an axis range is derived from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AxisSpec {
    /// User-supplied range; used when valid for the axis type.
    pub explicit: Option<(f64, f64)>,
    pub log: bool,
    /// Min/max of the data (valid values only).
    pub data: Option<(f64, f64)>,
    /// Expand an automatic linear range outwards to nice tick values.
    pub nice: bool,
    /// Add a small margin when data touches the automatic range's ends
    /// (so markers are not cut in half).
    pub pad: bool,
    /// Extend an automatic linear range to 0 when all data is non-negative.
    pub include_zero: bool,
}

/// A resolved axis: range, tick positions and their labels.
#[derive(Clone, Debug)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub ticks: Vec<f64>,
    pub labels: Vec<String>,
    /// Unlabelled minor grid positions (log axes only).
    pub minor: Vec<f64>,
}

impl Axis {
    /// Maps this axis onto pixels `p_lo` (at `lo`) .. `p_hi` (at `hi`).
    pub fn scale(&self, p_lo: f64, p_hi: f64) -> Scale {
        let (a, b) = if self.log {
            (self.lo.log10(), self.hi.log10())
        } else {
            (self.lo, self.hi)
        };
        Scale {
            log: self.log,
            a,
            span: b - a,
            p_lo,
            p_hi,
        }
    }

    /// Widest tick label in pixels.
    pub fn max_label_width(&self) -> f64 {
        self.labels
            .iter()
            .map(|l| text_width(l, TICK_FONT))
            .fold(0.0, f64::max)
    }
}

/// Linear or logarithmic mapping from data values to pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scale {
    log: bool,
    a: f64,
    span: f64,
    p_lo: f64,
    p_hi: f64,
}

impl Scale {
    /// Pixel position of `v`, or `None` if `v` cannot be shown on this axis
    /// (non-finite, or not positive on a log axis).
    pub fn map(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        let t = if self.log {
            if v <= 0.0 {
                return None;
            }
            v.log10()
        } else {
            v
        };
        let f = (t - self.a) / self.span;
        let p = self.p_lo + f * (self.p_hi - self.p_lo);
        p.is_finite().then_some(p)
    }
}

fn sorted((a, b): (f64, f64)) -> (f64, f64) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Widens an empty or numerically degenerate linear range.
fn widen_linear((lo, hi): (f64, f64)) -> (f64, f64) {
    let mid = 0.5 * (lo + hi);
    if hi - lo > mid.abs() * 1e-12 && hi - lo > 1e-300 {
        return (lo, hi);
    }
    if mid == 0.0 {
        (0.0, 1.0)
    } else {
        let d = mid.abs() * 0.1;
        (mid - d, mid + d)
    }
}

/// Resolves an axis for at most `max_ticks` labelled ticks.
pub(crate) fn resolve(spec: &AxisSpec, max_ticks: usize) -> Axis {
    if spec.log {
        resolve_log(spec, max_ticks)
    } else {
        resolve_linear(spec, max_ticks)
    }
}

fn resolve_linear(spec: &AxisSpec, max_ticks: usize) -> Axis {
    let explicit = spec
        .explicit
        .filter(|(a, b)| a.is_finite() && b.is_finite());
    let (lo, hi) = match explicit {
        Some(r) => widen_linear(sorted(r)),
        None => {
            let data = spec.data.map(sorted);
            let (mut lo, mut hi) = data.unwrap_or((0.0, 1.0));
            if spec.include_zero && lo >= 0.0 {
                lo = 0.0;
            }
            (lo, hi) = widen_linear((lo, hi));
            let (nice_lo, nice_hi, _) = ticks::nice_bounds(lo, hi, max_ticks);
            if spec.nice {
                // Data that reaches the top tick exactly (a queue at its
                // limit, a utilisation of 1) would run along the frame:
                // leave a little headroom, up to the next nice bound.
                let top = data.map(|(_, dhi)| dhi);
                let span = nice_hi - nice_lo;
                if top.is_some_and(|t| t > nice_lo && nice_hi - t <= 0.005 * span) {
                    let (_, h, _) = ticks::nice_bounds(lo, hi + HEADROOM * span, max_ticks);
                    (lo, hi) = (nice_lo, h);
                } else {
                    (lo, hi) = (nice_lo, nice_hi);
                }
            } else {
                // Snap an end to the next tick when that barely changes the
                // range, so e.g. 0.02..59.7 shows as 0..60.
                let snap = SNAP * (hi - lo);
                if lo - nice_lo <= snap {
                    lo = nice_lo;
                }
                if nice_hi - hi <= snap {
                    hi = nice_hi;
                }
            }
            if let (true, Some((dlo, dhi))) = (spec.pad, data) {
                let pad = MARKER_PAD * (hi - lo);
                if dlo - lo < pad * 0.5 {
                    lo -= pad;
                }
                if hi - dhi < pad * 0.5 {
                    hi += pad;
                }
            }
            (lo, hi)
        }
    };
    let ticks = ticks::linear_ticks(lo, hi, max_ticks);
    let step = ticks::nice_step(lo, hi, max_ticks);
    let labels = ticks::format_ticks(&ticks, step);
    Axis {
        lo,
        hi,
        log: false,
        ticks,
        labels,
        minor: Vec::new(),
    }
}

fn resolve_log(spec: &AxisSpec, max_ticks: usize) -> Axis {
    let positive = |(a, b): &(f64, f64)| a.is_finite() && b.is_finite() && *a > 0.0 && *b > 0.0;
    let (lo, hi) = match spec.explicit.filter(positive) {
        Some(r) => {
            let (lo, hi) = sorted(r);
            if hi / lo < 1.0 + 1e-9 {
                (lo / 10.0, hi * 10.0)
            } else {
                (lo, hi)
            }
        }
        None => {
            let data = spec.data.filter(positive).map(sorted);
            let (dlo, dhi) = data.unwrap_or((1.0, 10.0));
            let mut e0 = dlo.log10().floor() as i32;
            let mut e1 = dhi.log10().ceil() as i32;
            if e1 <= e0 {
                // A single exact power of ten: centre it in two decades.
                e0 -= 1;
                e1 = e0 + 2;
            }
            let (mut lo, mut hi) = (pow10(e0), pow10(e1));
            if let (true, Some((dlo, dhi))) = (spec.pad, data) {
                let pad = MARKER_PAD * f64::from(e1 - e0);
                if dlo.log10() - f64::from(e0) < pad * 0.5 {
                    lo = 10f64.powf(f64::from(e0) - pad);
                }
                if f64::from(e1) - dhi.log10() < pad * 0.5 {
                    hi = 10f64.powf(f64::from(e1) + pad);
                }
            }
            (lo, hi)
        }
    };
    let ticks = ticks::log_ticks(lo, hi, max_ticks);
    let labels = ticks.iter().map(|&t| ticks::format_value(t)).collect();
    Axis {
        lo,
        hi,
        log: true,
        minor: ticks::log_minor(lo, hi, 8),
        ticks,
        labels,
    }
}

/// Resolves a horizontal axis of `length` pixels, reducing the tick count
/// until the labels do not collide.
pub(crate) fn resolve_horizontal(spec: &AxisSpec, length: f64) -> Axis {
    let mut max_ticks = ((length / 50.0) as usize).clamp(2, 12);
    loop {
        let axis = resolve(spec, max_ticks);
        let needed = axis.ticks.len() as f64 * (axis.max_label_width() + 14.0);
        if needed <= length || max_ticks <= 2 {
            return axis;
        }
        max_ticks -= 1;
    }
}

/// Resolves a vertical axis of `length` pixels.
pub(crate) fn resolve_vertical(spec: &AxisSpec, length: f64) -> Axis {
    let max_ticks = if length < 50.0 {
        2
    } else {
        ((length / 32.0) as usize).clamp(3, 10)
    };
    resolve(spec, max_ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(lo: f64, hi: f64) -> Axis {
        resolve(
            &AxisSpec {
                explicit: None,
                log: false,
                data: Some((lo, hi)),
                nice: true,
                pad: false,
                include_zero: true,
            },
            6,
        )
    }

    #[test]
    fn data_on_the_top_tick_gets_headroom() {
        // A queue at its 30 000 B limit, a utilisation of exactly 1.
        assert!(y(0.0, 30_000.0).hi > 30_000.0);
        assert!(y(0.0, 1.0).hi > 1.0);
        // Below the tick it stays as it was.
        assert_eq!(y(0.0, 28_000.0).hi, 30_000.0);
        assert_eq!(y(0.0, 0.93).hi, 1.0);
    }
}
