//! Low-level SVG writing helpers: escaping, compact number output, text
//! measurement and the document wrapper.

use std::fmt;

/// Appends formatted text to a `String`. Writing to a `String` cannot fail,
/// so the `fmt::Result` is deliberately discarded.
macro_rules! put {
    ($out:expr, $($arg:tt)*) => {{
        let _ = ::std::fmt::Write::write_fmt($out, format_args!($($arg)*));
    }};
}
pub(crate) use put;

/// Default font family: generic so the SVG needs no external fonts.
pub(crate) const FONT_FAMILY: &str = "sans-serif";
/// Main text colour.
pub(crate) const TEXT_COLOR: &str = "#222";
/// Halo attributes that keep text readable on top of lines and shading.
pub(crate) const HALO: &str =
    r##" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke""##;

/// Escapes `s` for use in XML text content and attribute values.
///
/// Characters that are not allowed in XML 1.0 (most C0 control characters,
/// U+FFFE, U+FFFF) are replaced by U+FFFD so the output is always well formed.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A pixel coordinate printed with at most one decimal (`12`, `12.5`, `-3.1`).
///
/// Non-finite values print as `0` and magnitudes are clamped to 1e7 so the
/// output is always a valid SVG number.
#[derive(Clone, Copy, Debug)]
pub(crate) struct P(pub f64);

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = if self.0.is_finite() {
            self.0.clamp(-1e7, 1e7)
        } else {
            0.0
        };
        // Bounded by the clamp above, so the cast cannot saturate.
        let tenths = (v * 10.0).round() as i64;
        if tenths < 0 {
            f.write_str("-")?;
        }
        let a = tenths.unsigned_abs();
        let (whole, frac) = (a / 10, a % 10);
        write!(f, "{whole}")?;
        if frac != 0 {
            write!(f, ".{frac}")?;
        }
        Ok(())
    }
}

/// Rough width in pixels of `s` rendered in a generic sans-serif font of the
/// given size. There are no font metrics available, so this uses per-class
/// average advances close to DejaVu Sans / Arial; it is used only for layout
/// (margins, legend size, label collision avoidance).
pub(crate) fn text_width(s: &str, size: f64) -> f64 {
    let em: f64 = s
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'I' | '(' | ')' | '['
            | ']' | 't' | 'f' | 'r' => 0.36,
            ' ' => 0.32,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.88,
            'A'..='Z' => 0.70,
            '0'..='9' => 0.64,
            c if c.is_ascii() => 0.58,
            _ => 0.9,
        })
        .sum();
    em * size
}

/// Shortens `s` to at most `max_chars` characters, ending with an ellipsis
/// when something was cut.
pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max_chars.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// Writes a `<text>` element. `attrs` is inserted verbatim (it must start
/// with a space); `content` is escaped.
pub(crate) fn text(out: &mut String, x: f64, y: f64, attrs: &str, content: &str) {
    put!(
        out,
        r#"<text x="{}" y="{}"{}>{}</text>"#,
        P(x),
        P(y),
        attrs,
        escape(content)
    );
    out.push('\n');
}

/// An axis-aligned rectangle in pixel space (y grows downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rect {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl Rect {
    pub fn width(&self) -> f64 {
        self.right - self.left
    }
    pub fn height(&self) -> f64 {
        self.bottom - self.top
    }
    /// The rectangle grown by `d` pixels on every side.
    pub fn expand(&self, d: f64) -> Rect {
        Rect {
            left: self.left - d,
            top: self.top - d,
            right: self.right + d,
            bottom: self.bottom + d,
        }
    }
    /// Makes sure the rectangle has at least `min_w` x `min_h` pixels by
    /// moving its right and bottom edges.
    pub fn ensure_min(&mut self, min_w: f64, min_h: f64) {
        if self.width().is_nan() || self.width() < min_w {
            self.right = self.left + min_w;
        }
        if self.height().is_nan() || self.height() < min_h {
            self.bottom = self.top + min_h;
        }
    }
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.left && x <= self.right && y >= self.top && y <= self.bottom
    }
}

/// Wraps an SVG body into a complete, self-contained document.
pub(crate) fn document(width: f64, height: f64, title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 512);
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    put!(
        &mut out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT_FAMILY}" font-size="12">"#,
        w = P(width),
        h = P(height),
    );
    out.push('\n');
    if !title.is_empty() {
        put!(&mut out, "<title>{}</title>\n", escape(title));
    }
    out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
    out.push_str(body);
    out.push_str("</svg>\n");
    out
}

/// A short deterministic id prefix (FNV-1a of `seed`) so that several SVGs
/// inlined into one HTML page do not share `clipPath` ids.
pub(crate) fn id_prefix(seed: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in seed.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("hw{h:08x}")
}

/// Writes `svg` to `path` through a temporary `<path>.tmp` file followed by a
/// rename, so readers never observe a half-written file.
pub(crate) fn write_file(path: &std::path::Path, svg: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, svg)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_numbers_are_compact() {
        assert_eq!(P(12.0).to_string(), "12");
        assert_eq!(P(12.46).to_string(), "12.5");
        assert_eq!(P(-3.06).to_string(), "-3.1");
        assert_eq!(P(-0.04).to_string(), "0");
        assert_eq!(P(f64::NAN).to_string(), "0");
        assert_eq!(P(1e300).to_string(), "10000000");
    }

    #[test]
    fn escaping() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y"), "x\u{FFFD}y");
    }

    #[test]
    fn truncation() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
