//! Data series of a [`Chart`](crate::Chart) and the default colour palette.

/// The Okabe–Ito colour-blind-safe palette, reordered so that the
/// low-contrast yellow comes last. Series without an explicit colour use
/// `PALETTE[index % PALETTE.len()]`.
pub const PALETTE: [&str; 8] = [
    "#0072B2", // blue
    "#D55E00", // vermillion
    "#009E73", // bluish green
    "#CC79A7", // reddish purple
    "#E69F00", // orange
    "#56B4E9", // sky blue
    "#000000", // black
    "#F0E442", // yellow
];

/// Default colour for the series (or bar group) with the given index.
///
/// Line series that reuse a colour (index 8 to 15, 24 to 31, ...) are also
/// drawn dashed so they remain distinguishable.
pub fn palette_color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// How a [`Series`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// Straight segments between consecutive points.
    Line,
    /// Step-after line: each value holds until the next point's x.
    Step,
    /// Markers only (scatter plot).
    Points,
    /// Straight segments plus a marker at every point.
    LinePoints,
}

impl SeriesKind {
    /// Whether the kind draws a connecting line.
    pub fn has_line(self) -> bool {
        !matches!(self, SeriesKind::Points)
    }

    /// Whether the kind draws point markers.
    pub fn has_markers(self) -> bool {
        matches!(self, SeriesKind::Points | SeriesKind::LinePoints)
    }
}

/// One named data series of a [`Chart`](crate::Chart).
///
/// Points are `(x, y)` pairs in data units. Points with a NaN or infinite
/// coordinate (or a non-positive one on a log axis) are skipped and break
/// the line. Line-like series should be sorted by x; the per-pixel
/// decimation of very long series relies on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub(crate) name: String,
    pub(crate) kind: SeriesKind,
    pub(crate) points: Vec<(f64, f64)>,
    pub(crate) error_bars: Vec<(f64, f64)>,
    pub(crate) band: Vec<(f64, f64)>,
    pub(crate) dashed: bool,
    pub(crate) color: Option<String>,
}

impl Series {
    fn new(name: impl Into<String>, kind: SeriesKind, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            kind,
            points,
            error_bars: Vec::new(),
            band: Vec::new(),
            dashed: false,
            color: None,
        }
    }

    /// A polyline through `points`.
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, SeriesKind::Line, points)
    }

    /// A step-after line: `y[i]` holds from `x[i]` until `x[i + 1]`. Suited to
    /// per-interval samples and empirical CDFs (see [`cdf_points`](crate::cdf_points)).
    pub fn step(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, SeriesKind::Step, points)
    }

    /// Scatter markers at `points`, without a connecting line.
    pub fn points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, SeriesKind::Points, points)
    }

    /// A polyline with a marker at every point (parameter sweeps).
    pub fn line_points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::new(name, SeriesKind::LinePoints, points)
    }

    /// Step series of the empirical CDF of `samples` (see
    /// [`cdf_points`](crate::cdf_points)).
    pub fn cdf(name: impl Into<String>, samples: &[f64]) -> Self {
        Self::step(name, crate::cdf_points(samples))
    }

    /// Adds vertical error bars: `bars[i] = (lo, hi)` belongs to `points[i]`.
    /// Extra entries on either side are ignored; non-finite bars are skipped.
    pub fn with_error_bars(mut self, bars: Vec<(f64, f64)>) -> Self {
        self.error_bars = bars;
        self
    }

    /// Adds a shaded band (e.g. a confidence interval) drawn behind the line:
    /// `band[i] = (lo, hi)` at `points[i].0`. Non-finite entries break the
    /// band.
    pub fn with_band(mut self, band: Vec<(f64, f64)>) -> Self {
        self.band = band;
        self
    }

    /// Draws the line dashed.
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }

    /// Sets an explicit CSS colour (e.g. `"#1b9e77"` or `"tomato"`) instead
    /// of the palette colour (see [`palette_color`]).
    pub fn color(mut self, css: impl Into<String>) -> Self {
        self.color = Some(css.into());
        self
    }

    /// The series name shown in the legend (empty names are not listed).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the series is drawn.
    pub fn kind(&self) -> SeriesKind {
        self.kind
    }

    /// The data points.
    pub fn data(&self) -> &[(f64, f64)] {
        &self.points
    }
}
