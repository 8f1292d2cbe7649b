//! Legend layout and drawing, shared by line and bar charts.
//!
//! The legend never overlaps the plot area: it goes to the right of it when
//! it is narrow enough, otherwise in rows below the x axis.

use crate::svg::{escape, put, text, text_width, truncate, Rect, P, TEXT_COLOR};

pub(crate) const LEGEND_FONT: f64 = 12.0;
const ROW_H: f64 = 18.0;
const SWATCH_W: f64 = 24.0;
const SWATCH_GAP: f64 = 6.0;
const ITEM_GAP: f64 = 18.0;
/// Longest legend name shown in full.
const MAX_NAME_CHARS: usize = 48;
/// Gap between the plot area (or axis) and the legend.
pub(crate) const LEGEND_MARGIN: f64 = 14.0;

/// What the sample next to a legend name looks like.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Swatch {
    /// A line sample, optionally dashed, with a marker and/or band shading.
    Line {
        dashed: bool,
        marker: bool,
        band: bool,
    },
    /// A marker only.
    Marker,
    /// A filled square (bars).
    Box,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub color: String,
    pub swatch: Swatch,
}

impl Entry {
    fn label(&self) -> String {
        truncate(&self.name, MAX_NAME_CHARS)
    }

    fn width(&self) -> f64 {
        SWATCH_W + SWATCH_GAP + text_width(&self.label(), LEGEND_FONT)
    }
}

/// Where the legend goes.
#[derive(Clone, Debug)]
pub(crate) enum Placement {
    None,
    /// A column to the right of the plot, `width` pixels wide.
    Right {
        width: f64,
    },
    /// Rows of entry indices below the plot.
    Below {
        rows: Vec<Vec<usize>>,
    },
}

impl Placement {
    /// Decides the placement for a panel of `width` x `height` pixels.
    pub fn choose(entries: &[Entry], width: f64, height: f64) -> Placement {
        if entries.is_empty() {
            return Placement::None;
        }
        let w = entries.iter().map(Entry::width).fold(0.0, f64::max);
        let fits_right = w <= 0.26 * width && entries.len() as f64 * ROW_H <= 0.6 * height;
        if fits_right {
            return Placement::Right { width: w };
        }
        let avail = width - 24.0;
        let mut rows: Vec<Vec<usize>> = Vec::new();
        let mut row: Vec<usize> = Vec::new();
        let mut x = 0.0;
        for (i, e) in entries.iter().enumerate() {
            let ew = e.width();
            if !row.is_empty() && x + ew > avail {
                rows.push(std::mem::take(&mut row));
                x = 0.0;
            }
            row.push(i);
            x += ew + ITEM_GAP;
        }
        rows.push(row);
        Placement::Below { rows }
    }

    /// Horizontal space to reserve right of the plot.
    pub fn reserved_right(&self) -> f64 {
        match self {
            Placement::Right { width } => width + LEGEND_MARGIN,
            _ => 0.0,
        }
    }

    /// Vertical space to reserve below the x axis.
    pub fn reserved_below(&self) -> f64 {
        match self {
            Placement::Below { rows } => rows.len() as f64 * ROW_H + 8.0,
            _ => 0.0,
        }
    }
}

/// Draws the legend. `plot` is the plot area, `below_y` the top of the
/// space reserved under the x axis, `panel_width` the panel's width.
pub(crate) fn draw(
    out: &mut String,
    entries: &[Entry],
    placement: &Placement,
    plot: &Rect,
    below_y: f64,
    panel_width: f64,
) {
    let mut items: Vec<(f64, f64, usize)> = Vec::new();
    match placement {
        Placement::None => return,
        Placement::Right { width } => {
            let x = (panel_width - 8.0 - width).max(plot.right + LEGEND_MARGIN);
            for i in 0..entries.len() {
                items.push((x, plot.top + 6.0 + i as f64 * ROW_H, i));
            }
        }
        Placement::Below { rows } => {
            for (r, row) in rows.iter().enumerate() {
                let total: f64 = row
                    .iter()
                    .map(|&i| entries[i].width() + ITEM_GAP)
                    .sum::<f64>()
                    - ITEM_GAP;
                // Centre each row under the plot, but keep it on the panel.
                let mut x = (0.5 * (plot.left + plot.right) - 0.5 * total)
                    .min(panel_width - 8.0 - total)
                    .max(8.0);
                let y = below_y + 8.0 + ROW_H * (r as f64 + 0.5);
                for &i in row {
                    items.push((x, y, i));
                    x += entries[i].width() + ITEM_GAP;
                }
            }
        }
    }
    out.push_str("<g class=\"legend\">\n");
    for (x, y, i) in items {
        let e = &entries[i];
        let color = escape(&e.color);
        let (x0, x1) = (x, x + SWATCH_W);
        let xm = 0.5 * (x0 + x1);
        match e.swatch {
            Swatch::Line {
                dashed,
                marker,
                band,
            } => {
                if band {
                    put!(
                        out,
                        r#"<rect x="{}" y="{}" width="{}" height="10" fill="{color}" fill-opacity="0.2"/>"#,
                        P(x0),
                        P(y - 5.0),
                        P(SWATCH_W)
                    );
                }
                let dash = if dashed {
                    r#" stroke-dasharray="5 3""#
                } else {
                    ""
                };
                put!(
                    out,
                    r#"<path d="M{},{}H{}" stroke="{color}" stroke-width="2"{dash}/>"#,
                    P(x0),
                    P(y),
                    P(x1)
                );
                if marker {
                    marker_circle(out, xm, y, &color);
                }
            }
            Swatch::Marker => marker_circle(out, xm, y, &color),
            Swatch::Box => {
                put!(
                    out,
                    r#"<rect x="{}" y="{}" width="12" height="12" fill="{color}"/>"#,
                    P(xm - 6.0),
                    P(y - 6.0)
                );
            }
        }
        out.push('\n');
        text(
            out,
            x1 + SWATCH_GAP,
            y + 4.0,
            &format!(r#" font-size="{LEGEND_FONT}" fill="{TEXT_COLOR}""#),
            &e.label(),
        );
    }
    out.push_str("</g>\n");
}

fn marker_circle(out: &mut String, x: f64, y: f64, color: &str) {
    put!(
        out,
        r##"<circle cx="{}" cy="{}" r="3.5" fill="{color}" stroke="#fff" stroke-width="1"/>"##,
        P(x),
        P(y)
    );
}
