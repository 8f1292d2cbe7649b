//! # hopwise-plot
//!
//! A small, dependency-free SVG charting library for hopwise results.
//!
//! * [`Chart`]: an x/y panel with [`Series`] drawn as lines, step lines,
//!   markers or lines with markers, optionally with error bars and shaded
//!   confidence bands; dashed reference lines ([`Chart::hline`],
//!   [`Chart::vline`]) and labelled shaded x regions ([`Chart::band_x`]);
//!   linear or logarithmic axes.
//! * [`BarChart`]: categorical or grouped bars, e.g. histograms built with
//!   [`histogram`].
//! * [`Figure`]: a grid of panels in one SVG.
//! * [`cdf_points`]: empirical CDF points for a step series.
//!
//! Output is a self-contained SVG string (generic `sans-serif` font, no CSS
//! or external resources), deterministic byte for byte, with all text
//! escaped. Axes get "nice" ticks (1/2/5 × 10^k, decades on log axes) with
//! compact labels (`0.5`, `2.5k`, `1M`, `1e-3`). Very long series are
//! decimated per pixel column keeping each column's minimum and maximum
//! (see [`decimate()`]), so 100k-point time series produce small files that
//! still show every spike. Non-finite points break lines; empty charts show
//! a "no data" note instead of failing.
//!
//! ```
//! use hopwise_plot::{cdf_points, Chart, Figure, Series};
//!
//! let rtt: Vec<f64> = (0..1000).map(|i| 20.0 + (i % 37) as f64 * 0.5).collect();
//! let ts = Chart::new("RTT over time")
//!     .x_label("time (s)")
//!     .y_label("RTT (ms)")
//!     .series(Series::line("rtt", rtt.iter().enumerate().map(|(i, &r)| (i as f64 * 0.01, r)).collect()))
//!     .hline(20.0, "base RTT");
//! let cdf = Chart::new("RTT CDF")
//!     .x_label("RTT (ms)")
//!     .series(Series::step("rtt", cdf_points(&rtt)));
//! let svg = Figure::new("run 1", 2).panel(ts).panel(cdf).to_svg();
//! assert!(svg.starts_with("<?xml"));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod axis;
mod bar;
mod chart;
mod data;
pub mod decimate;
mod figure;
mod legend;
mod series;
mod svg;
pub mod ticks;

pub use bar::BarChart;
pub use chart::Chart;
pub use data::{cdf_points, histogram};
pub use decimate::decimate;
pub use figure::{Figure, Panel};
pub use series::{palette_color, Series, SeriesKind, PALETTE};

/// Escapes text for XML or HTML content and attribute values, as the SVG
/// writer does (for pages that embed the plots, such as a run's report).
pub fn escape_markup(s: &str) -> String {
    svg::escape(s)
}
