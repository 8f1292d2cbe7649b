//! [`Figure`]: several panels in a grid, in one SVG.

use crate::bar::BarChart;
use crate::chart::{draw_title, title_height, Chart, MIN_HEIGHT, MIN_WIDTH};
use crate::svg::{self, put, text, P};

/// One panel of a [`Figure`].
#[derive(Clone, Debug, PartialEq)]
pub enum Panel {
    /// An x/y chart.
    Chart(Chart),
    /// A bar chart.
    Bar(BarChart),
}

impl From<Chart> for Panel {
    fn from(c: Chart) -> Self {
        Panel::Chart(c)
    }
}

impl From<BarChart> for Panel {
    fn from(c: BarChart) -> Self {
        Panel::Bar(c)
    }
}

impl Panel {
    fn pixel_size(&self) -> (f64, f64) {
        match self {
            Panel::Chart(c) => c.pixel_size(),
            Panel::Bar(b) => b.pixel_size(),
        }
    }

    /// Renders the panel; a chart lines its plot area up with `align` (see
    /// [`Chart::render`]) and returns its plot area's left and right edges.
    fn render(
        &self,
        out: &mut String,
        id: &str,
        w: f64,
        h: f64,
        align: Option<(f64, f64)>,
    ) -> Option<(f64, f64)> {
        match self {
            Panel::Chart(c) => Some(c.render(out, id, w, h, align)),
            Panel::Bar(b) => {
                b.render(out, w, h);
                None
            }
        }
    }
}

/// A grid of panels with a common title, rendered into one SVG.
///
/// Panels fill the grid row by row. Each column is as wide as its widest
/// panel and each row as tall as its tallest one, unless
/// [`Figure::panel_size`] sets one size for all panels. The x/y charts of a
/// column share the left and right edges of their plot areas (the widest
/// tick labels and legend of the column decide them), so that stacked time
/// series line up. An incomplete last row below full ones is centred, and
/// its panels keep their own edges.
///
/// ```
/// use hopwise_plot::{BarChart, Chart, Figure, Series};
/// let svg = Figure::new("overview", 2)
///     .panel(Chart::new("a").series(Series::line("x", vec![(0.0, 1.0), (1.0, 2.0)])))
///     .panel(BarChart::new("b").group("g", vec![("c".into(), 1.0)]))
///     .to_svg();
/// assert!(svg.contains("overview"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    title: String,
    columns: usize,
    panels: Vec<Panel>,
    panel_size: Option<(u32, u32)>,
}

impl Figure {
    /// An empty figure with `columns` panels per row (at least 1).
    pub fn new(title: impl Into<String>, columns: usize) -> Self {
        Figure {
            title: title.into(),
            columns: columns.max(1),
            panels: Vec::new(),
            panel_size: None,
        }
    }

    /// Appends a panel (a [`Chart`] or [`BarChart`]).
    pub fn panel(mut self, c: impl Into<Panel>) -> Self {
        self.panels.push(c.into());
        self
    }

    /// Appends a panel to a figure held by mutable reference.
    pub fn push_panel(&mut self, c: impl Into<Panel>) {
        self.panels.push(c.into());
    }

    /// Renders every panel at `width_px` x `height_px`, overriding the
    /// panels' own sizes.
    pub fn panel_size(mut self, width_px: u32, height_px: u32) -> Self {
        self.panel_size = Some((width_px, height_px));
        self
    }

    fn cell_size(&self, p: &Panel) -> (f64, f64) {
        match self.panel_size {
            Some((w, h)) => (f64::from(w.max(MIN_WIDTH)), f64::from(h.max(MIN_HEIGHT))),
            None => p.pixel_size(),
        }
    }

    /// Renders the figure as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let cols = self.columns;
        let rows = self.panels.len().div_ceil(cols);
        let mut col_w = vec![0.0f64; cols];
        let mut row_h = vec![0.0f64; rows];
        for (i, p) in self.panels.iter().enumerate() {
            let (w, h) = self.cell_size(p);
            col_w[i % cols] = col_w[i % cols].max(w);
            row_h[i / cols] = row_h[i / cols].max(h);
        }
        let title_h = if self.title.is_empty() {
            0.0
        } else {
            title_height(&self.title)
        };
        let total_w = col_w.iter().sum::<f64>().max(f64::from(MIN_WIDTH));
        let total_h = (title_h + row_h.iter().sum::<f64>()).max(f64::from(MIN_HEIGHT) / 2.0);

        let base_id = svg::id_prefix(&format!("figure:{}:{total_w}x{total_h}", self.title));
        let mut body = String::from("<g class=\"figure\">\n");
        draw_title(&mut body, &self.title, total_w);
        if self.panels.is_empty() {
            text(
                &mut body,
                0.5 * total_w,
                0.5 * (title_h + total_h),
                r##" class="no-data" font-size="14" fill="#888" text-anchor="middle""##,
                "no data",
            );
        }
        // Each chart laid out alone first; a column's charts then share the
        // largest left edge and the smallest right edge among them.
        // An incomplete last row below full ones is centred, and its panels
        // keep their own edges (they no longer sit in a column).
        let first_centred = if rows > 1 && self.panels.len() < rows * cols {
            (rows - 1) * cols
        } else {
            self.panels.len()
        };
        let last_row_w: f64 = self.panels[first_centred..]
            .iter()
            .map(|p| self.cell_size(p).0)
            .sum();
        let mut align: Vec<Option<(f64, f64)>> = vec![None; cols];
        let mut charts = vec![0usize; cols];
        for (i, p) in self.panels.iter().enumerate().take(first_centred) {
            let (w, h) = self.cell_size(p);
            if let Some((l, r)) = p.render(&mut String::new(), "", w, h, None) {
                let a = align[i % cols].get_or_insert((l, r));
                *a = (a.0.max(l), a.1.min(r));
                charts[i % cols] += 1;
            }
        }
        for (c, a) in align.iter_mut().enumerate() {
            // A single chart needs no partner; nor does a column whose
            // shared area would be too narrow to plot in.
            if charts[c] < 2 || a.is_some_and(|(l, r)| r - l < 40.0) {
                *a = None;
            }
        }
        let mut centred_x = 0.5 * (total_w - last_row_w);
        for (i, p) in self.panels.iter().enumerate() {
            let (c, r) = (i % cols, i / cols);
            let (w, h) = self.cell_size(p);
            let (x, a) = if i >= first_centred {
                centred_x += w;
                (centred_x - w, None)
            } else {
                (col_w[..c].iter().sum(), align[c])
            };
            let y: f64 = title_h + row_h[..r].iter().sum::<f64>();
            put!(
                &mut body,
                "<g class=\"panel\" transform=\"translate({},{})\">\n",
                P(x),
                P(y)
            );
            p.render(&mut body, &format!("{base_id}-p{i}"), w, h, a);
            body.push_str("</g>\n");
        }
        body.push_str("</g>\n");
        svg::document(total_w, total_h, &self.title, &body)
    }

    /// Writes [`Figure::to_svg`] to `path` (via a temporary file and rename).
    pub fn write_svg(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        svg::write_file(path.as_ref(), &self.to_svg())
    }
}
