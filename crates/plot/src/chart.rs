//! The x/y [`Chart`] panel.

use std::collections::BTreeSet;

use crate::axis::{self, Axis, AxisSpec, Extent, Scale, TICK_FONT};
use crate::decimate::decimate;
use crate::legend::{self, Entry, Placement, Swatch};
use crate::series::{palette_color, Series, SeriesKind, PALETTE};
use crate::svg::{self, escape, put, text, text_width, truncate, Rect, HALO, P, TEXT_COLOR};

/// Outer padding of a panel.
pub(crate) const PAD: f64 = 8.0;
pub(crate) const TITLE_FONT: f64 = 15.0;
pub(crate) const AXIS_LABEL_FONT: f64 = 12.0;
pub(crate) const TICK_LEN: f64 = 5.0;
const BAND_FONT: f64 = 11.0;
const BAND_ROW_H: f64 = 14.0;
const MAX_BAND_ROWS: usize = 3;
/// Smallest panel size; smaller requests are enlarged to this.
pub(crate) const MIN_WIDTH: u32 = 160;
pub(crate) const MIN_HEIGHT: u32 = 120;
const LINE_WIDTH: f64 = 1.6;
const MARKER_R: f64 = 3.5;
/// Above this many markers, markers that land on the same half pixel are
/// drawn once.
const MARKER_DEDUP_THRESHOLD: usize = 2000;
const GRID_COLOR: &str = "#e3e3e3";
const MINOR_GRID_COLOR: &str = "#f2f2f2";
const AXIS_COLOR: &str = "#555";
const REF_COLOR: &str = "#444";
const REGION_COLOR: &str = "#808080";

/// A labelled horizontal or vertical reference line.
#[derive(Clone, Debug, PartialEq)]
struct RefLine {
    at: f64,
    label: String,
}

/// A shaded x interval with a label above the plot.
#[derive(Clone, Debug, PartialEq)]
struct XBand {
    x0: f64,
    x1: f64,
    label: String,
}

/// One x/y plot panel: line, step and scatter series, reference lines and
/// shaded x regions, with axes, grid, title and legend.
///
/// Built with chained calls and rendered with [`Chart::to_svg`]:
///
/// ```
/// use hopwise_plot::{Chart, Series};
/// let svg = Chart::new("cwnd")
///     .x_label("time (s)")
///     .y_label("packets")
///     .series(Series::line("flow 1", vec![(0.0, 10.0), (1.0, 20.0), (2.0, 15.0)]))
///     .hline(18.0, "BDP")
///     .to_svg();
/// assert!(svg.contains("<svg"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    title: String,
    x_label: String,
    y_label: String,
    x_range: Option<(f64, f64)>,
    y_range: Option<(f64, f64)>,
    log_x: bool,
    log_y: bool,
    width: u32,
    height: u32,
    series: Vec<Series>,
    hlines: Vec<RefLine>,
    vlines: Vec<RefLine>,
    bands: Vec<XBand>,
}

impl Chart {
    /// An empty 800 x 400 chart with the given title (may be empty).
    pub fn new(title: impl Into<String>) -> Self {
        Chart {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            x_range: None,
            y_range: None,
            log_x: false,
            log_y: false,
            width: 800,
            height: 400,
            series: Vec::new(),
            hlines: Vec::new(),
            vlines: Vec::new(),
            bands: Vec::new(),
        }
    }

    /// Sets the x axis label.
    pub fn x_label(mut self, s: impl Into<String>) -> Self {
        self.x_label = s.into();
        self
    }

    /// Sets the y axis label.
    pub fn y_label(mut self, s: impl Into<String>) -> Self {
        self.y_label = s.into();
        self
    }

    /// Fixes the x range instead of deriving it from the data. Data outside
    /// the range is clipped. Non-finite bounds (or non-positive ones on a log
    /// axis) are ignored.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    /// Fixes the y range instead of deriving it from the data (the automatic
    /// range is expanded to nice tick values and includes 0 when all data is
    /// non-negative).
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Uses a logarithmic x axis (non-positive x values are skipped).
    pub fn log_x(mut self, on: bool) -> Self {
        self.log_x = on;
        self
    }

    /// Uses a logarithmic y axis (non-positive y values are skipped).
    pub fn log_y(mut self, on: bool) -> Self {
        self.log_y = on;
        self
    }

    /// Sets the size in pixels (default 800 x 400; at least 160 x 120 is used).
    pub fn size(mut self, width_px: u32, height_px: u32) -> Self {
        self.width = width_px;
        self.height = height_px;
        self
    }

    /// Adds a series.
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Adds a series to a chart held by mutable reference (handy in loops).
    pub fn push_series(&mut self, s: Series) {
        self.series.push(s);
    }

    /// Adds a dashed horizontal reference line at `y`, labelled at its right
    /// end.
    pub fn hline(mut self, y: f64, label: impl Into<String>) -> Self {
        self.hlines.push(RefLine {
            at: y,
            label: label.into(),
        });
        self
    }

    /// Adds a dashed vertical reference line at `x`, labelled near its top.
    pub fn vline(mut self, x: f64, label: impl Into<String>) -> Self {
        self.vlines.push(RefLine {
            at: x,
            label: label.into(),
        });
        self
    }

    /// Shades the x interval `[x0, x1]` over the full plot height and puts
    /// `label` above the plot (e.g. to name regions of a parameter sweep).
    /// Infinite bounds extend the region to the edge of the plot.
    pub fn band_x(mut self, x0: f64, x1: f64, label: impl Into<String>) -> Self {
        self.bands.push(XBand {
            x0,
            x1,
            label: label.into(),
        });
        self
    }

    /// The chart title.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The configured size in pixels.
    pub fn dimensions(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    pub(crate) fn pixel_size(&self) -> (f64, f64) {
        (
            f64::from(self.width.max(MIN_WIDTH)),
            f64::from(self.height.max(MIN_HEIGHT)),
        )
    }

    /// Renders the chart as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let (w, h) = self.pixel_size();
        let mut body = String::new();
        let id = svg::id_prefix(&format!("chart:{}:{w}x{h}", self.title));
        self.render(&mut body, &id, w, h, None);
        svg::document(w, h, &self.title, &body)
    }

    /// Writes [`Chart::to_svg`] to `path` (via a temporary file and rename).
    pub fn write_svg(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        svg::write_file(path.as_ref(), &self.to_svg())
    }

    fn has_markers(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.kind.has_markers() || !s.error_bars.is_empty())
    }

    fn x_extent(&self) -> Option<(f64, f64)> {
        let mut e = Extent::new(self.log_x);
        for s in &self.series {
            for &(x, _) in &s.points {
                e.add(x);
            }
        }
        for l in &self.vlines {
            e.add(l.at);
        }
        for b in &self.bands {
            e.add(b.x0);
            e.add(b.x1);
        }
        e.range()
    }

    /// The y extent of the data, restricted to points whose x lies inside
    /// `x_window` when the x range is fixed.
    fn y_extent(&self, x_window: Option<(f64, f64)>) -> Option<(f64, f64)> {
        let xe = Extent::new(self.log_x);
        let in_x = |x: f64| xe.valid(x) && x_window.is_none_or(|(lo, hi)| x >= lo && x <= hi);
        let mut e = Extent::new(self.log_y);
        for s in &self.series {
            for (i, &(x, y)) in s.points.iter().enumerate() {
                if !in_x(x) {
                    continue;
                }
                e.add(y);
                if let Some(&(lo, hi)) = s.error_bars.get(i) {
                    if lo.is_finite() && hi.is_finite() {
                        e.add(lo);
                        e.add(hi);
                    }
                }
                if let Some(&(lo, hi)) = s.band.get(i) {
                    if lo.is_finite() && hi.is_finite() {
                        e.add(lo);
                        e.add(hi);
                    }
                }
            }
        }
        for l in &self.hlines {
            e.add(l.at);
        }
        e.range()
    }

    fn series_has_data(&self, s: &Series) -> bool {
        let (xe, ye) = (Extent::new(self.log_x), Extent::new(self.log_y));
        s.points.iter().any(|&(x, y)| xe.valid(x) && ye.valid(y))
    }

    fn legend_entries(&self) -> Vec<Entry> {
        self.series
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.name.is_empty())
            .map(|(i, s)| {
                let mut name = s.name.clone();
                if !self.series_has_data(s) {
                    name.push_str(" (no data)");
                }
                Entry {
                    name,
                    color: series_color(s, i).to_string(),
                    swatch: match s.kind {
                        SeriesKind::Points => Swatch::Marker,
                        k => Swatch::Line {
                            dashed: is_dashed(s, i),
                            marker: k.has_markers(),
                            band: !s.band.is_empty(),
                        },
                    },
                }
            })
            .collect()
    }

    /// Renders the chart into a `w` x `h` pixel box at the origin of the
    /// current coordinate system, using `id` as prefix for element ids.
    /// `align`: the plot area's left and right edges, to line it up with
    /// other panels (a [`crate::Figure`] column); `None` lays it out alone.
    /// Returns the edges used.
    pub(crate) fn render(
        &self,
        out: &mut String,
        id: &str,
        w: f64,
        h: f64,
        align: Option<(f64, f64)>,
    ) -> (f64, f64) {
        let markers = self.has_markers();
        let x_spec = AxisSpec {
            explicit: self.x_range,
            log: self.log_x,
            data: self.x_extent(),
            nice: false,
            pad: markers,
            include_zero: false,
        };
        // With a fixed x range the automatic y range only covers visible data.
        let x_window = axis::resolve(&x_spec, 2);
        let x_window = self.x_range.map(|_| (x_window.lo, x_window.hi));
        let y_spec = AxisSpec {
            explicit: self.y_range,
            log: self.log_y,
            data: self.y_extent(x_window),
            nice: true,
            pad: markers,
            include_zero: true,
        };
        let has_data = self.series.iter().any(|s| self.series_has_data(s));
        let entries = self.legend_entries();
        let legend = Placement::choose(&entries, w, h);

        let title_h = title_height(&self.title);
        let y_label_w = if self.y_label.is_empty() {
            0.0
        } else {
            AXIS_LABEL_FONT + 8.0
        };
        let x_ticks_h = TICK_LEN + 4.0 + TICK_FONT;
        let x_label_h = if self.x_label.is_empty() {
            0.0
        } else {
            AXIS_LABEL_FONT + 8.0
        };
        let bottom_reserved = x_ticks_h + x_label_h + legend.reserved_below() + PAD;
        let right_edge = w - PAD - legend.reserved_right();

        // Margins depend on tick labels, which depend on the plot size:
        // iterate a few times (converges immediately in practice).
        let mut plot = Rect {
            left: PAD + y_label_w + 40.0,
            top: title_h,
            right: right_edge - 10.0,
            bottom: h - bottom_reserved,
        };
        let mut xa = axis::resolve(&x_spec, 2);
        let mut ya = axis::resolve(&y_spec, 2);
        let mut band_labels = Vec::new();
        for _ in 0..3 {
            plot.ensure_min(20.0, 20.0);
            xa = axis::resolve_horizontal(&x_spec, plot.width());
            ya = axis::resolve_vertical(&y_spec, plot.height());
            let half = |l: Option<&String>| l.map_or(0.0, |l| 0.5 * text_width(l, TICK_FONT));
            plot.left = (PAD + y_label_w + ya.max_label_width() + TICK_LEN + 4.0)
                .max(PAD + half(xa.labels.first()));
            plot.right = right_edge - (half(xa.labels.last()) - 4.0).max(6.0);
            if let Some((left, right)) = align {
                (plot.left, plot.right) = (left, right);
            }
            plot.ensure_min(20.0, 20.0);
            band_labels = self.layout_band_labels(&xa.scale(plot.left, plot.right), &plot, w);
            let rows = band_labels.iter().map(|b| b.row + 1).max().unwrap_or(0);
            plot.top = title_h + rows as f64 * BAND_ROW_H + if rows > 0 { 4.0 } else { 0.0 };
            plot.ensure_min(20.0, 20.0);
        }
        let xs = xa.scale(plot.left, plot.right);
        let ys = ya.scale(plot.bottom, plot.top);

        out.push_str("<g class=\"chart\">\n");
        draw_title(out, &self.title, w);
        // Wide enough for a whole marker on the plot's edge (a point at the
        // last x, say); lines are cut geometrically 4 px out anyway.
        let clip = plot.expand(if markers { MARKER_R + 1.0 } else { 2.0 });
        put!(
            out,
            "<defs><clipPath id=\"{id}-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>\n",
            P(clip.left),
            P(clip.top),
            P(clip.width()),
            P(clip.height())
        );
        draw_grid(out, &plot, &xa, &xs, &ya, &ys);
        self.draw_regions(out, &plot, &xs, &band_labels);

        put!(out, "<g clip-path=\"url(#{id}-clip)\">\n");
        for (i, s) in self.series.iter().enumerate() {
            if !s.band.is_empty() {
                draw_band(out, s, i, &xs, &ys, &plot);
            }
        }
        for (i, s) in self.series.iter().enumerate() {
            draw_series(out, s, i, &xs, &ys, &plot);
        }
        let ref_lines = self.draw_ref_lines(out, &plot, &xs, &ys);
        out.push_str("</g>\n");
        out.push_str(&ref_lines);

        draw_axes(out, &plot, &xa, &xs, &ya, &ys);
        draw_axis_labels(out, &plot, &self.x_label, &self.y_label, x_ticks_h);
        legend::draw(
            out,
            &entries,
            &legend,
            &plot,
            plot.bottom + x_ticks_h + x_label_h,
            w,
        );
        if !has_data {
            no_data_note(out, &plot);
        }
        out.push_str("</g>\n");
        (plot.left, plot.right)
    }

    /// Assigns each labelled x band a row above the plot so labels do not
    /// overlap.
    fn layout_band_labels(&self, xs: &Scale, plot: &Rect, width: f64) -> Vec<BandLabel> {
        let mut row_ends: Vec<f64> = Vec::new();
        let mut labels = Vec::new();
        for (idx, b) in self.bands.iter().enumerate() {
            if b.label.is_empty() {
                continue;
            }
            let Some((x0, x1)) = region_pixels(b, xs, plot) else {
                continue;
            };
            let lw = text_width(&b.label, BAND_FONT);
            let cx = (0.5 * (x0 + x1)).clamp(0.5 * lw + 2.0, (width - 0.5 * lw - 2.0).max(0.0));
            let start = cx - 0.5 * lw;
            let row = match row_ends.iter().position(|&end| end + 8.0 <= start) {
                Some(r) => r,
                None if row_ends.len() < MAX_BAND_ROWS => {
                    row_ends.push(f64::NEG_INFINITY);
                    row_ends.len() - 1
                }
                None => (0..row_ends.len())
                    .min_by(|&a, &b| row_ends[a].total_cmp(&row_ends[b]))
                    .unwrap_or(0),
            };
            row_ends[row] = cx + 0.5 * lw;
            labels.push(BandLabel { idx, row, cx });
        }
        labels
    }

    fn draw_regions(&self, out: &mut String, plot: &Rect, xs: &Scale, labels: &[BandLabel]) {
        if self.bands.is_empty() {
            return;
        }
        out.push_str("<g class=\"regions\">\n");
        for (i, b) in self.bands.iter().enumerate() {
            let Some((x0, x1)) = region_pixels(b, xs, plot) else {
                continue;
            };
            // Alternate the shade so adjacent regions stay distinguishable.
            let opacity = if i % 2 == 0 { "0.08" } else { "0.17" };
            put!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{REGION_COLOR}" fill-opacity="{opacity}"/>"#,
                P(x0),
                P(plot.top),
                P(x1 - x0),
                P(plot.height())
            );
            for x in [x0, x1] {
                if x > plot.left + 0.5 && x < plot.right - 0.5 {
                    put!(
                        out,
                        r#"<path d="M{},{}V{}" stroke="{REGION_COLOR}" stroke-opacity="0.6"/>"#,
                        P(x),
                        P(plot.top),
                        P(plot.bottom)
                    );
                }
            }
            out.push('\n');
        }
        for l in labels {
            text(
                out,
                l.cx,
                plot.top - 5.0 - l.row as f64 * BAND_ROW_H,
                &format!(r##" font-size="{BAND_FONT}" fill="#444" text-anchor="middle""##),
                &self.bands[l.idx].label,
            );
        }
        out.push_str("</g>\n");
    }

    /// Draws reference lines into `out`; returns their labels (drawn later,
    /// outside the clip group).
    fn draw_ref_lines(&self, out: &mut String, plot: &Rect, xs: &Scale, ys: &Scale) -> String {
        let mut labels = String::new();
        let attrs = format!(r#" font-size="{}" fill="{REF_COLOR}"{HALO}"#, TICK_FONT);
        for l in &self.hlines {
            let Some(y) = ys
                .map(l.at)
                .filter(|&y| y >= plot.top - 0.5 && y <= plot.bottom + 0.5)
            else {
                continue;
            };
            put!(
                out,
                r#"<path class="hline" d="M{},{}H{}" stroke="{REF_COLOR}" stroke-width="1.2" stroke-dasharray="6 4"/>"#,
                P(plot.left),
                P(y),
                P(plot.right)
            );
            out.push('\n');
            if !l.label.is_empty() {
                let ty = if y - 5.0 - TICK_FONT < plot.top {
                    y + TICK_FONT + 3.0
                } else {
                    y - 5.0
                };
                text(
                    &mut labels,
                    plot.right - 4.0,
                    ty,
                    &format!("{attrs} text-anchor=\"end\""),
                    &l.label,
                );
            }
        }
        for l in &self.vlines {
            let Some(x) = xs
                .map(l.at)
                .filter(|&x| x >= plot.left - 0.5 && x <= plot.right + 0.5)
            else {
                continue;
            };
            put!(
                out,
                r#"<path class="vline" d="M{},{}V{}" stroke="{REF_COLOR}" stroke-width="1.2" stroke-dasharray="6 4"/>"#,
                P(x),
                P(plot.top),
                P(plot.bottom)
            );
            out.push('\n');
            if !l.label.is_empty() {
                // Vertical text reading bottom-to-top, left of the line
                // (right of it when the line hugs the y axis).
                let tx = if x - plot.left < TICK_FONT + 8.0 {
                    x + 4.0 + TICK_FONT
                } else {
                    x - 4.0
                };
                let ty = plot.top + 4.0;
                text(
                    &mut labels,
                    tx,
                    ty,
                    &format!(
                        "{attrs} text-anchor=\"end\" transform=\"rotate(-90 {} {})\"",
                        P(tx),
                        P(ty)
                    ),
                    &l.label,
                );
            }
        }
        labels
    }
}

/// Placement of one x-band label.
#[derive(Clone, Copy, Debug)]
struct BandLabel {
    idx: usize,
    row: usize,
    cx: f64,
}

fn series_color(s: &Series, index: usize) -> &str {
    s.color.as_deref().unwrap_or_else(|| palette_color(index))
}

/// Series that reuse a palette colour (index 8..15, 24..31, ...) are dashed
/// so they stay distinguishable from the series that first used it.
fn is_dashed(s: &Series, index: usize) -> bool {
    s.dashed || (s.color.is_none() && (index / PALETTE.len()) % 2 == 1)
}

/// Pixel interval of a region clamped to the plot, or `None` if it is not
/// visible.
fn region_pixels(b: &XBand, xs: &Scale, plot: &Rect) -> Option<(f64, f64)> {
    let px = |v: f64| -> Option<f64> {
        if v.is_nan() {
            None
        } else if v == f64::NEG_INFINITY {
            Some(f64::NEG_INFINITY)
        } else if v == f64::INFINITY {
            Some(f64::INFINITY)
        } else {
            // Non-positive bounds on a log axis extend to the left edge.
            Some(xs.map(v).unwrap_or(f64::NEG_INFINITY))
        }
    };
    let (a, b) = (px(b.x0)?, px(b.x1)?);
    let (a, b) = (a.min(b), a.max(b));
    let (a, b) = (a.max(plot.left), b.min(plot.right));
    (b > a).then_some((a, b))
}

pub(crate) fn title_height(title: &str) -> f64 {
    if title.is_empty() {
        PAD + 6.0
    } else {
        PAD + TITLE_FONT + 14.0
    }
}

pub(crate) fn draw_title(out: &mut String, title: &str, width: f64) {
    if title.is_empty() {
        return;
    }
    // Shrink a long title to fit, down to 10 px; beyond that, cut it.
    // Bold glyphs are roughly 10% wider than the regular estimate.
    let bold_width = |s: &str, size: f64| 1.1 * text_width(s, size);
    let avail = width - 2.0 * PAD;
    let natural = bold_width(title, TITLE_FONT);
    let size = (TITLE_FONT * avail / natural).clamp(10.0, TITLE_FONT);
    let mut shown = title.to_string();
    let mut chars = title.chars().count();
    while chars > 1 && bold_width(&shown, size) > avail {
        chars -= 1;
        shown = truncate(title, chars);
    }
    text(
        out,
        0.5 * width,
        PAD + TITLE_FONT,
        &format!(
            r#" class="title" font-size="{}" font-weight="bold" fill="{TEXT_COLOR}" text-anchor="middle""#,
            P(size)
        ),
        &shown,
    );
}

pub(crate) fn no_data_note(out: &mut String, plot: &Rect) {
    text(
        out,
        0.5 * (plot.left + plot.right),
        0.5 * (plot.top + plot.bottom) + 5.0,
        r##" class="no-data" font-size="14" fill="#888" text-anchor="middle""##,
        "no data",
    );
}

fn draw_grid(out: &mut String, plot: &Rect, xa: &Axis, xs: &Scale, ya: &Axis, ys: &Scale) {
    let mut minor = String::new();
    for &v in &xa.minor {
        if let Some(x) = xs.map(v) {
            put!(&mut minor, "M{},{}V{}", P(x), P(plot.top), P(plot.bottom));
        }
    }
    for &v in &ya.minor {
        if let Some(y) = ys.map(v) {
            put!(&mut minor, "M{},{}H{}", P(plot.left), P(y), P(plot.right));
        }
    }
    if !minor.is_empty() {
        put!(
            out,
            "<path class=\"grid-minor\" d=\"{minor}\" stroke=\"{MINOR_GRID_COLOR}\" fill=\"none\" shape-rendering=\"crispEdges\"/>\n"
        );
    }
    let mut major = String::new();
    for &v in &xa.ticks {
        if let Some(x) = xs.map(v) {
            put!(&mut major, "M{},{}V{}", P(x), P(plot.top), P(plot.bottom));
        }
    }
    for &v in &ya.ticks {
        if let Some(y) = ys.map(v) {
            put!(&mut major, "M{},{}H{}", P(plot.left), P(y), P(plot.right));
        }
    }
    if !major.is_empty() {
        put!(
            out,
            "<path class=\"grid\" d=\"{major}\" stroke=\"{GRID_COLOR}\" fill=\"none\" shape-rendering=\"crispEdges\"/>\n"
        );
    }
}

fn draw_axes(out: &mut String, plot: &Rect, xa: &Axis, xs: &Scale, ya: &Axis, ys: &Scale) {
    let mut d = String::new();
    put!(
        &mut d,
        "M{},{}V{}H{}",
        P(plot.left),
        P(plot.top),
        P(plot.bottom),
        P(plot.right)
    );
    for &v in &xa.ticks {
        if let Some(x) = xs.map(v) {
            put!(&mut d, "M{},{}v{}", P(x), P(plot.bottom), P(TICK_LEN));
        }
    }
    for &v in &ya.ticks {
        if let Some(y) = ys.map(v) {
            put!(&mut d, "M{},{}h{}", P(plot.left), P(y), P(-TICK_LEN));
        }
    }
    put!(
        out,
        "<path class=\"axes\" d=\"{d}\" stroke=\"{AXIS_COLOR}\" fill=\"none\" shape-rendering=\"crispEdges\"/>\n"
    );
    put!(
        out,
        "<g class=\"x-ticks\" font-size=\"{TICK_FONT}\" fill=\"{TEXT_COLOR}\" text-anchor=\"middle\">\n"
    );
    for (&v, label) in xa.ticks.iter().zip(&xa.labels) {
        if let Some(x) = xs.map(v) {
            text(out, x, plot.bottom + TICK_LEN + 3.0 + TICK_FONT, "", label);
        }
    }
    out.push_str("</g>\n");
    put!(
        out,
        "<g class=\"y-ticks\" font-size=\"{TICK_FONT}\" fill=\"{TEXT_COLOR}\" text-anchor=\"end\">\n"
    );
    for (&v, label) in ya.ticks.iter().zip(&ya.labels) {
        if let Some(y) = ys.map(v) {
            text(out, plot.left - TICK_LEN - 3.0, y + 4.0, "", label);
        }
    }
    out.push_str("</g>\n");
}

pub(crate) fn draw_axis_labels(
    out: &mut String,
    plot: &Rect,
    x_label: &str,
    y_label: &str,
    x_ticks_h: f64,
) {
    let attrs =
        format!(r#" font-size="{AXIS_LABEL_FONT}" fill="{TEXT_COLOR}" text-anchor="middle""#);
    if !x_label.is_empty() {
        text(
            out,
            0.5 * (plot.left + plot.right),
            plot.bottom + x_ticks_h + AXIS_LABEL_FONT + 4.0,
            &format!(r#" class="x-label"{attrs}"#),
            x_label,
        );
    }
    if !y_label.is_empty() {
        let (x, y) = (PAD + AXIS_LABEL_FONT, 0.5 * (plot.top + plot.bottom));
        text(
            out,
            x,
            y,
            &format!(
                r#" class="y-label"{attrs} transform="rotate(-90 {} {})""#,
                P(x),
                P(y)
            ),
            y_label,
        );
    }
}

/// Maps a data point to pixels, `None` when it cannot be shown.
fn map_point(xs: &Scale, ys: &Scale, (x, y): (f64, f64)) -> Option<(f64, f64)> {
    Some((xs.map(x)?, ys.map(y)?))
}

const BREAK: (f64, f64) = (f64::NAN, f64::NAN);

/// Pixel polyline of a series (with step expansion), NaN pairs marking
/// breaks.
fn pixel_polyline(s: &Series, xs: &Scale, ys: &Scale) -> Vec<(f64, f64)> {
    if s.kind != SeriesKind::Step {
        return s
            .points
            .iter()
            .map(|&p| map_point(xs, ys, p).unwrap_or(BREAK))
            .collect();
    }
    let mut out = Vec::with_capacity(2 * s.points.len());
    let mut prev_y: Option<f64> = None;
    for &(x, y) in &s.points {
        match (xs.map(x), ys.map(y)) {
            (Some(px), Some(py)) => {
                if let Some(prev) = prev_y {
                    out.push((px, prev));
                }
                out.push((px, py));
                prev_y = Some(py);
            }
            (Some(px), None) => {
                // The previous value still holds up to this x.
                if let Some(prev) = prev_y.take() {
                    out.push((px, prev));
                }
                out.push(BREAK);
            }
            _ => {
                prev_y = None;
                out.push(BREAK);
            }
        }
    }
    out
}

/// Clips segment `a`-`b` to `r` (Liang–Barsky).
fn clip_segment(a: (f64, f64), b: (f64, f64), r: &Rect) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.left),
        (dx, r.right - a.0),
        (-dy, a.1 - r.top),
        (dy, r.bottom - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                if t > t1 {
                    return None;
                }
                t0 = t0.max(t);
            } else {
                if t < t0 {
                    return None;
                }
                t1 = t1.min(t);
            }
        }
    }
    let at = |t: f64| (a.0 + t * dx, a.1 + t * dy);
    let p = if t0 > 0.0 { at(t0) } else { a };
    let q = if t1 < 1.0 { at(t1) } else { b };
    Some((p, q))
}

/// SVG path data for a polyline with breaks, clipped to `r`, plus the
/// isolated points (valid points without a valid neighbour), which a path
/// cannot show.
fn polyline_path(pts: &[(f64, f64)], r: &Rect) -> (String, Vec<(f64, f64)>) {
    let valid = |p: &(f64, f64)| !p.0.is_nan() && !p.1.is_nan();
    let mut d = String::new();
    let mut isolated = Vec::new();
    let mut pen: Option<(f64, f64)> = None;
    let mut last_token = String::new();
    for (i, p) in pts.iter().enumerate() {
        if !valid(p) {
            pen = None;
            continue;
        }
        let prev_ok = i > 0 && valid(&pts[i - 1]);
        let next_ok = pts.get(i + 1).is_some_and(valid);
        if !prev_ok && !next_ok && r.contains(p.0, p.1) {
            isolated.push(*p);
        }
        if !prev_ok {
            continue;
        }
        let Some((a, b)) = clip_segment(pts[i - 1], *p, r) else {
            pen = None;
            continue;
        };
        if pen != Some(a) {
            put!(&mut d, "M{},{}", P(a.0), P(a.1));
            last_token.clear();
        }
        let token = format!("{},{}", P(b.0), P(b.1));
        if token != last_token {
            d.push(' ');
            d.push_str(&token);
            last_token = token;
        }
        pen = Some(b);
    }
    (d, isolated)
}

fn columns(plot: &Rect) -> usize {
    plot.width().ceil().max(1.0) as usize
}

fn draw_series(out: &mut String, s: &Series, index: usize, xs: &Scale, ys: &Scale, plot: &Rect) {
    let color = escape(series_color(s, index));
    put!(
        out,
        "<g class=\"series\" data-index=\"{index}\" data-name=\"{}\">\n",
        escape(&s.name)
    );
    let mut markers: Vec<(f64, f64)> = Vec::new();
    let clip = plot.expand(4.0);
    if s.kind.has_line() {
        let pts = decimate(
            &pixel_polyline(s, xs, ys),
            plot.left,
            plot.right,
            columns(plot),
        );
        let (d, isolated) = polyline_path(&pts, &clip);
        if !d.is_empty() {
            let dash = if is_dashed(s, index) {
                r#" stroke-dasharray="7 4""#
            } else {
                ""
            };
            put!(
                out,
                "<path class=\"line\" d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"{LINE_WIDTH}\" stroke-linejoin=\"round\" stroke-linecap=\"round\"{dash}/>\n"
            );
        }
        if !s.kind.has_markers() && !isolated.is_empty() {
            marker_path(out, &isolated, LINE_WIDTH, &color, "dots", false);
        }
    }
    if !s.error_bars.is_empty() {
        draw_error_bars(out, s, &color, xs, ys, plot);
    }
    if s.kind.has_markers() {
        for &p in &s.points {
            if let Some((x, y)) = map_point(xs, ys, p) {
                if clip.contains(x, y) {
                    markers.push((x, y));
                }
            }
        }
        if markers.len() > MARKER_DEDUP_THRESHOLD {
            let mut seen = BTreeSet::new();
            markers.retain(|&(x, y)| {
                seen.insert(((x * 2.0).round() as i64, (y * 2.0).round() as i64))
            });
        }
        marker_path(out, &markers, MARKER_R, &color, "markers", true);
    }
    out.push_str("</g>\n");
}

/// Draws circles of radius `r` as one path.
fn marker_path(
    out: &mut String,
    pts: &[(f64, f64)],
    r: f64,
    color: &str,
    class: &str,
    outline: bool,
) {
    if pts.is_empty() {
        return;
    }
    let mut d = String::with_capacity(pts.len() * 40);
    for &(x, y) in pts {
        put!(
            &mut d,
            "M{},{}a{r},{r} 0 1,0 {},0a{r},{r} 0 1,0 {},0",
            P(x - r),
            P(y),
            P(2.0 * r),
            P(-2.0 * r),
            r = P(r)
        );
    }
    let stroke = if outline {
        r##" stroke="#fff" stroke-width="0.8""##
    } else {
        ""
    };
    put!(
        out,
        "<path class=\"{class}\" d=\"{d}\" fill=\"{color}\"{stroke}/>\n"
    );
}

fn draw_error_bars(out: &mut String, s: &Series, color: &str, xs: &Scale, ys: &Scale, plot: &Rect) {
    // (x, top, bottom) in pixels; whiskers in the same pixel column merge.
    let mut bars: Vec<(f64, f64, f64)> = Vec::new();
    for (&(x, y), &(lo, hi)) in s.points.iter().zip(&s.error_bars) {
        let (Some(px), true) = (xs.map(x), ys.map(y).is_some()) else {
            continue;
        };
        let (Some(a), Some(b)) = (ys.map(lo), ys.map(hi)) else {
            continue;
        };
        if px < plot.left - 1.0 || px > plot.right + 1.0 {
            continue;
        }
        let (top, bottom) = (a.min(b), a.max(b));
        match bars.last_mut() {
            Some(last) if last.0.floor() == px.floor() => {
                last.1 = last.1.min(top);
                last.2 = last.2.max(bottom);
            }
            _ => bars.push((px, top, bottom)),
        }
    }
    if bars.is_empty() {
        return;
    }
    let caps = (bars.len() as f64) * 8.0 <= plot.width();
    let (y_min, y_max) = (plot.top - 2.0, plot.bottom + 2.0);
    let mut d = String::new();
    for (x, top, bottom) in bars {
        let (t, b) = (top.clamp(y_min, y_max), bottom.clamp(y_min, y_max));
        if t == b {
            continue;
        }
        put!(&mut d, "M{},{}V{}", P(x), P(t), P(b));
        if caps {
            if t == top {
                put!(&mut d, "M{},{}h6", P(x - 3.0), P(t));
            }
            if b == bottom {
                put!(&mut d, "M{},{}h6", P(x - 3.0), P(b));
            }
        }
    }
    put!(
        out,
        "<path class=\"errors\" d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.2\"/>\n"
    );
}

/// Draws the shaded lo/hi band of a series.
fn draw_band(out: &mut String, s: &Series, index: usize, xs: &Scale, ys: &Scale, plot: &Rect) {
    // (x, upper pixel, lower pixel), NaN x for breaks.
    let mut cols: Vec<(f64, f64, f64)> = Vec::with_capacity(s.band.len());
    let mut prev: Option<(f64, f64)> = None;
    for (&(x, _), &(lo, hi)) in s.points.iter().zip(&s.band) {
        match (xs.map(x), ys.map(lo), ys.map(hi)) {
            (Some(px), Some(a), Some(b)) => {
                let (t, u) = (a.min(b), a.max(b));
                if s.kind == SeriesKind::Step {
                    if let Some((pt, pu)) = prev {
                        cols.push((px, pt, pu));
                    }
                }
                cols.push((px, t, u));
                prev = Some((t, u));
            }
            _ => {
                prev = None;
                cols.push((f64::NAN, 0.0, 0.0));
            }
        }
    }
    let ncols = columns(plot);
    // Keep coordinates within a sane distance of the plot.
    let (xlo, xhi) = (plot.left - plot.width(), plot.right + plot.width());
    let (ylo, yhi) = (plot.top - plot.height(), plot.bottom + plot.height());
    let mut d = String::new();
    for run in cols.split(|c| c.0.is_nan()) {
        if run.len() < 2 {
            continue;
        }
        let run = if run.len() > 2 * ncols {
            merge_band_columns(run, plot.left)
        } else {
            run.to_vec()
        };
        let fwd = run.iter().map(|c| (c.0, c.1));
        let back = run.iter().rev().map(|c| (c.0, c.2));
        for (k, (x, y)) in fwd.chain(back).enumerate() {
            put!(
                &mut d,
                "{}{},{}",
                if k == 0 { "M" } else { " " },
                P(x.clamp(xlo, xhi)),
                P(y.clamp(ylo, yhi))
            );
        }
        d.push('Z');
    }
    if d.is_empty() {
        return;
    }
    let color = escape(series_color(s, index));
    put!(
        out,
        "<path class=\"band\" data-index=\"{index}\" d=\"{d}\" fill=\"{color}\" fill-opacity=\"0.18\" stroke=\"none\"/>\n"
    );
}

/// Merges band samples per pixel column into their envelope (first and
/// last x of the column, min upper and max lower pixel).
fn merge_band_columns(run: &[(f64, f64, f64)], left: f64) -> Vec<(f64, f64, f64)> {
    let mut out: Vec<(f64, f64, f64)> = Vec::new();
    let mut current: Option<(f64, f64, f64, f64, f64)> = None; // col, x0, x1, t, u
    for &(x, t, u) in run {
        let col = (x - left).floor();
        match current.as_mut() {
            Some(c) if c.0 == col => {
                c.2 = x;
                c.3 = c.3.min(t);
                c.4 = c.4.max(u);
            }
            _ => {
                if let Some(c) = current.replace((col, x, x, t, u)) {
                    out.push((c.1, c.3, c.4));
                    if c.2 != c.1 {
                        out.push((c.2, c.3, c.4));
                    }
                }
            }
        }
    }
    if let Some(c) = current {
        out.push((c.1, c.3, c.4));
        if c.2 != c.1 {
            out.push((c.2, c.3, c.4));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping() {
        let r = Rect {
            left: 0.0,
            top: 0.0,
            right: 10.0,
            bottom: 10.0,
        };
        assert_eq!(
            clip_segment((-10.0, 5.0), (20.0, 5.0), &r),
            Some(((0.0, 5.0), (10.0, 5.0)))
        );
        assert_eq!(clip_segment((-10.0, -5.0), (-1.0, 50.0), &r), None);
        assert_eq!(
            clip_segment((1.0, 1.0), (2.0, 2.0), &r),
            Some(((1.0, 1.0), (2.0, 2.0)))
        );
    }

    #[test]
    fn isolated_points_are_reported() {
        let r = Rect {
            left: 0.0,
            top: 0.0,
            right: 100.0,
            bottom: 100.0,
        };
        let pts = [(1.0, 1.0), BREAK, (5.0, 5.0), (6.0, 6.0), BREAK, (9.0, 9.0)];
        let (d, iso) = polyline_path(&pts, &r);
        assert_eq!(d, "M5,5 6,6");
        assert_eq!(iso, vec![(1.0, 1.0), (9.0, 9.0)]);
    }
}
