//! The [`BarChart`] panel: categorical bars, optionally grouped.

use std::collections::BTreeMap;

use crate::axis::{self, AxisSpec, Extent, TICK_FONT};
use crate::chart::{
    draw_axis_labels, draw_title, no_data_note, title_height, AXIS_LABEL_FONT, MIN_HEIGHT,
    MIN_WIDTH, PAD, TICK_LEN,
};
use crate::legend::{self, Entry, Placement, Swatch};
use crate::series::palette_color;
use crate::svg::{self, escape, put, text, text_width, truncate, Rect, P, TEXT_COLOR};

/// Longest category label shown in full.
const MAX_CATEGORY_CHARS: usize = 24;
const SIN45: f64 = std::f64::consts::FRAC_1_SQRT_2;

#[derive(Clone, Debug, PartialEq)]
struct Group {
    name: String,
    bars: Vec<(String, f64)>,
    /// Error bars `(category, (low, high))`, drawn as whiskers on the bars.
    errors: Vec<(String, (f64, f64))>,
}

/// A bar chart: one bar per category, or grouped bars (one per group within
/// each category) with a legend when several groups are added. Suited to
/// histograms (see [`histogram`](crate::histogram)) and per-configuration
/// summaries.
///
/// ```
/// use hopwise_plot::BarChart;
/// let svg = BarChart::new("throughput")
///     .y_label("Mbit/s")
///     .group("cubic", vec![("1 flow".into(), 94.0), ("4 flows".into(), 91.0)])
///     .group("bbr", vec![("1 flow".into(), 96.0), ("4 flows".into(), 95.0)])
///     .to_svg();
/// assert!(svg.contains("cubic"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    title: String,
    x_label: String,
    y_label: String,
    y_range: Option<(f64, f64)>,
    width: u32,
    height: u32,
    groups: Vec<Group>,
}

impl BarChart {
    /// An empty 800 x 400 bar chart with the given title.
    pub fn new(title: impl Into<String>) -> Self {
        BarChart {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            y_range: None,
            width: 800,
            height: 400,
            groups: Vec::new(),
        }
    }

    /// Sets the x (category) axis label.
    pub fn x_label(mut self, s: impl Into<String>) -> Self {
        self.x_label = s.into();
        self
    }

    /// Sets the y (value) axis label.
    pub fn y_label(mut self, s: impl Into<String>) -> Self {
        self.y_label = s.into();
        self
    }

    /// Fixes the value range (default: from the data, always including 0).
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Sets the size in pixels (default 800 x 400; at least 160 x 120 is used).
    pub fn size(mut self, width_px: u32, height_px: u32) -> Self {
        self.width = width_px;
        self.height = height_px;
        self
    }

    /// Adds a group of `(category, value)` bars. Categories are shown in
    /// order of first appearance across all groups; a category missing from
    /// a group leaves a gap; if a group repeats a category, the last value
    /// wins. Non-finite values are not drawn.
    pub fn group(mut self, name: impl Into<String>, bars: Vec<(String, f64)>) -> Self {
        self.groups.push(Group {
            name: name.into(),
            bars,
            errors: Vec::new(),
        });
        self
    }

    /// [`BarChart::group`] with an error bar on each bar: `(category,
    /// value, (low, high))`, drawn as a whisker from `low` to `high` (for
    /// instance a confidence interval). A whisker with a non-finite end, or
    /// of zero height, is not drawn.
    pub fn group_with_errors(
        mut self,
        name: impl Into<String>,
        bars: Vec<(String, f64, (f64, f64))>,
    ) -> Self {
        let errors = bars.iter().map(|(c, _, e)| (c.clone(), *e)).collect();
        self.groups.push(Group {
            name: name.into(),
            bars: bars.into_iter().map(|(c, v, _)| (c, v)).collect(),
            errors,
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
        self.render(&mut body, w, h);
        svg::document(w, h, &self.title, &body)
    }

    /// Writes [`BarChart::to_svg`] to `path` (via a temporary file and rename).
    pub fn write_svg(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        svg::write_file(path.as_ref(), &self.to_svg())
    }

    /// Categories in first-seen order, the value matrix `[category][group]`
    /// and the error bars in the same layout.
    #[allow(clippy::type_complexity)]
    fn table(
        &self,
    ) -> (
        Vec<&str>,
        Vec<Vec<Option<f64>>>,
        Vec<Vec<Option<(f64, f64)>>>,
    ) {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut cats: Vec<&str> = Vec::new();
        for g in &self.groups {
            for (c, _) in &g.bars {
                index.entry(c.as_str()).or_insert_with(|| {
                    cats.push(c.as_str());
                    cats.len() - 1
                });
            }
        }
        let mut values = vec![vec![None; self.groups.len()]; cats.len()];
        for (gi, g) in self.groups.iter().enumerate() {
            for (c, v) in &g.bars {
                if let Some(&ci) = index.get(c.as_str()) {
                    values[ci][gi] = v.is_finite().then_some(*v);
                }
            }
        }
        let mut errors = vec![vec![None; self.groups.len()]; cats.len()];
        for (gi, g) in self.groups.iter().enumerate() {
            for (c, (lo, hi)) in &g.errors {
                if let Some(&ci) = index.get(c.as_str()) {
                    errors[ci][gi] = (lo.is_finite() && hi.is_finite() && values[ci][gi].is_some())
                        .then_some((lo.min(*hi), lo.max(*hi)));
                }
            }
        }
        (cats, values, errors)
    }

    pub(crate) fn render(&self, out: &mut String, w: f64, h: f64) {
        let (cats, values, errors) = self.table();
        let ngroups = self.groups.len().max(1);
        let mut ext = Extent::new(false);
        for v in values.iter().flatten().flatten() {
            ext.add(*v);
        }
        for &(lo, hi) in errors.iter().flatten().flatten() {
            ext.add(lo);
            ext.add(hi);
        }
        let has_data = ext.range().is_some();
        // Bars start at zero, so zero is always in range.
        let data = ext.range().map(|(lo, hi)| (lo.min(0.0), hi.max(0.0)));
        let y_spec = AxisSpec {
            explicit: self.y_range,
            log: false,
            data,
            nice: true,
            pad: false,
            include_zero: true,
        };
        let entries: Vec<Entry> = if self.groups.len() > 1 {
            self.groups
                .iter()
                .enumerate()
                .filter(|(_, g)| !g.name.is_empty())
                .map(|(i, g)| Entry {
                    name: g.name.clone(),
                    color: palette_color(i).to_string(),
                    swatch: Swatch::Box,
                })
                .collect()
        } else {
            Vec::new()
        };
        let legend = Placement::choose(&entries, w, h);
        let labels: Vec<String> = cats
            .iter()
            .map(|c| truncate(c, MAX_CATEGORY_CHARS))
            .collect();
        let label_w = labels
            .iter()
            .map(|l| text_width(l, TICK_FONT))
            .fold(0.0, f64::max);

        let title_h = title_height(&self.title);
        let y_label_w = if self.y_label.is_empty() {
            0.0
        } else {
            AXIS_LABEL_FONT + 8.0
        };
        let x_label_h = if self.x_label.is_empty() {
            0.0
        } else {
            AXIS_LABEL_FONT + 8.0
        };
        let right_edge = w - PAD - legend.reserved_right();
        let mut plot = Rect {
            left: PAD + y_label_w + 40.0,
            top: title_h + 6.0,
            right: right_edge - 4.0,
            bottom: h - PAD - TICK_LEN - 4.0 - TICK_FONT - x_label_h - legend.reserved_below(),
        };
        let mut ya = axis::resolve(&y_spec, 2);
        let mut cat_layout = CategoryLayout::Horizontal;
        let mut x_ticks_h = TICK_LEN + 4.0 + TICK_FONT;
        for _ in 0..3 {
            plot.ensure_min(20.0, 20.0);
            ya = axis::resolve_vertical(&y_spec, plot.height());
            plot.left = PAD + y_label_w + ya.max_label_width() + TICK_LEN + 4.0;
            plot.ensure_min(20.0, 20.0);
            let slot = plot.width() / cats.len().max(1) as f64;
            cat_layout = if label_w + 6.0 <= slot {
                CategoryLayout::Horizontal
            } else {
                CategoryLayout::Rotated {
                    stride: ((TICK_FONT + 3.0) / SIN45 / slot).ceil().max(1.0) as usize,
                }
            };
            x_ticks_h = match cat_layout {
                CategoryLayout::Horizontal => TICK_LEN + 4.0 + TICK_FONT,
                CategoryLayout::Rotated { .. } => {
                    (TICK_LEN + 6.0 + (label_w + TICK_FONT) * SIN45).min(0.4 * h)
                }
            };
            plot.bottom = h - PAD - x_ticks_h - x_label_h - legend.reserved_below();
            // Rotated labels hang to the left of their category.
            if matches!(cat_layout, CategoryLayout::Rotated { .. }) {
                let overhang = (label_w + TICK_FONT) * SIN45 - 0.5 * slot;
                plot.left = plot.left.max(PAD + overhang.min(0.3 * w));
            }
        }
        plot.ensure_min(20.0, 20.0);
        let ys = ya.scale(plot.bottom, plot.top);

        out.push_str("<g class=\"bar-chart\">\n");
        draw_title(out, &self.title, w);
        // Horizontal grid.
        let mut grid = String::new();
        for &v in &ya.ticks {
            if let Some(y) = ys.map(v) {
                put!(&mut grid, "M{},{}H{}", P(plot.left), P(y), P(plot.right));
            }
        }
        if !grid.is_empty() {
            put!(
                out,
                "<path class=\"grid\" d=\"{grid}\" stroke=\"#e3e3e3\" fill=\"none\" shape-rendering=\"crispEdges\"/>\n"
            );
        }

        // Bars.
        let slot = plot.width() / cats.len().max(1) as f64;
        let inner = slot * if ngroups == 1 { 0.9 } else { 0.8 };
        let bw = inner / ngroups as f64;
        let gap = if bw > 6.0 { 1.0 } else { 0.0 };
        let (y_min, y_max) = (plot.top - 2.0, plot.bottom + 2.0);
        let base = ys.map(0.0).unwrap_or(plot.bottom).clamp(y_min, y_max);
        for g in 0..self.groups.len() {
            let color = escape(palette_color(g));
            put!(
                out,
                "<g class=\"bars\" data-index=\"{g}\" data-name=\"{}\" fill=\"{color}\">\n",
                escape(&self.groups[g].name)
            );
            for (c, row) in values.iter().enumerate() {
                let Some(v) = row[g] else { continue };
                let Some(y) = ys.map(v) else { continue };
                let y = y.clamp(y_min, y_max);
                let x = plot.left + c as f64 * slot + 0.5 * (slot - inner) + g as f64 * bw;
                put!(
                    out,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                    P(x + 0.5 * gap),
                    P(y.min(base)),
                    P(bw - gap),
                    P((y - base).abs())
                );
            }
            out.push_str("</g>\n");
        }
        // Error bars: a whisker with caps, centred on its bar.
        let mut whiskers = String::new();
        let cap = (0.3 * bw).clamp(2.0, 8.0);
        for (c, row) in errors.iter().enumerate() {
            for (g, e) in row.iter().enumerate() {
                let Some((lo, hi)) = *e else { continue };
                // An interval of width 0 has nothing to show.
                if hi <= lo {
                    continue;
                }
                let (Some(y0), Some(y1)) = (ys.map(lo), ys.map(hi)) else {
                    continue;
                };
                let (y0, y1) = (y0.clamp(y_min, y_max), y1.clamp(y_min, y_max));
                let x = plot.left + c as f64 * slot + 0.5 * (slot - inner) + (g as f64 + 0.5) * bw;
                put!(
                    &mut whiskers,
                    "M{},{}V{}M{},{}h{}M{},{}h{}",
                    P(x),
                    P(y0),
                    P(y1),
                    P(x - 0.5 * cap),
                    P(y0),
                    P(cap),
                    P(x - 0.5 * cap),
                    P(y1),
                    P(cap)
                );
            }
        }
        if !whiskers.is_empty() {
            put!(
                out,
                "<path class=\"error-bars\" d=\"{whiskers}\" stroke=\"#333\" stroke-width=\"1.2\" fill=\"none\"/>\n"
            );
        }

        // Axes: y axis, baseline at zero and the plot bottom.
        let mut d = format!(
            "M{},{}V{}H{}",
            P(plot.left),
            P(plot.top),
            P(plot.bottom),
            P(plot.right)
        );
        if (base - plot.bottom).abs() > 0.5 {
            put!(&mut d, "M{},{}H{}", P(plot.left), P(base), P(plot.right));
        }
        for &v in &ya.ticks {
            if let Some(y) = ys.map(v) {
                put!(&mut d, "M{},{}h{}", P(plot.left), P(y), P(-TICK_LEN));
            }
        }
        put!(
            out,
            "<path class=\"axes\" d=\"{d}\" stroke=\"#555\" fill=\"none\" shape-rendering=\"crispEdges\"/>\n"
        );
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

        // Category labels.
        put!(
            out,
            "<g class=\"x-ticks\" font-size=\"{TICK_FONT}\" fill=\"{TEXT_COLOR}\">\n"
        );
        for (c, label) in labels.iter().enumerate() {
            let cx = plot.left + (c as f64 + 0.5) * slot;
            match cat_layout {
                CategoryLayout::Horizontal => text(
                    out,
                    cx,
                    plot.bottom + TICK_LEN + 3.0 + TICK_FONT,
                    " text-anchor=\"middle\"",
                    label,
                ),
                CategoryLayout::Rotated { stride } => {
                    if c % stride != 0 {
                        continue;
                    }
                    let (x, y) = (cx + 3.0, plot.bottom + TICK_LEN + 6.0);
                    text(
                        out,
                        x,
                        y,
                        &format!(
                            " text-anchor=\"end\" transform=\"rotate(-45 {} {})\"",
                            P(x),
                            P(y)
                        ),
                        label,
                    );
                }
            }
        }
        out.push_str("</g>\n");
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
    }
}

#[derive(Clone, Copy, Debug)]
enum CategoryLayout {
    Horizontal,
    /// Labels rotated by 45°, only every `stride`-th one shown.
    Rotated {
        stride: usize,
    },
}
