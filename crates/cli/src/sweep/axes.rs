//! The grid of a sweep: the `--vary` axes (parsed, and checked for values
//! given twice), the points they span and their labels, and values read as
//! quantities (number, packets, size, rate, duration) for a numeric x axis.

use std::collections::{HashMap, HashSet};

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// Parses `--vary KEY=V1,V2,...`: a key, `=`, and at least one non-empty value.
pub fn parse_vary(s: &str) -> Result<Axis, String> {
    let shown = hopwise_sim::scenario::shorten(s);
    let Some((key, vals)) = s.split_once('=') else {
        return Err(format!(
            "`{shown}`: expected KEY=V1,V2,... (for example link.bottleneck.queue=20pkt,50pkt)"
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("`{shown}`: the key before `=` is empty"));
    }
    let values: Vec<String> = vals.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!(
            "`{shown}`: a value is empty (values are separated by commas)"
        ));
    }
    let unbalanced = |v: &String| {
        v.matches('{').count() != v.matches('}').count()
            || v.matches('[').count() != v.matches(']').count()
    };
    if let Some(v) = values.iter().find(|v| unbalanced(v)) {
        return Err(format!(
            "`{shown}`: values are split at commas, which cuts `{v}` short: an inline table or \
             array with commas cannot be a --vary value. Vary one of its keys instead, \
             e.g. --set {key}=... --vary {key}.KEY=V1,V2"
        ));
    }
    // A value given twice would run the same point twice (and then warn
    // that two points gave identical results): refuse it before running.
    // Values are compared as written, then as quantities, so that `20pkt`
    // and `20 pkt`, or `1s` and `1000ms`, count as the same.
    let mut as_written: HashSet<&str> = HashSet::new();
    let mut as_quantity: HashMap<(u8, u64), &str> = HashMap::new();
    for v in &values {
        if !as_written.insert(v) {
            return Err(format!(
                "{key}: the value `{v}` is given twice; each value is one point \
                 (for repeated runs of a point use --seeds N)"
            ));
        }
        // Beyond 2^53 an f64 no longer tells neighbouring integers apart
        // (the scenario keeps them exact): compare those as written only.
        let exact = |x: f64| x.abs() < 9_007_199_254_740_992.0;
        if let Some((kind, x, _)) = quantity(v).filter(|q| exact(q.1)) {
            // 0.0 and -0.0 are the same value.
            let x = if x == 0.0 { 0.0 } else { x };
            if let Some(w) = as_quantity.insert((kind as u8, x.to_bits()), v) {
                return Err(format!(
                    "{key}: `{w}` and `{v}` are the same value, given twice; each value is \
                     one point (for repeated runs of a point use --seeds N)"
                ));
            }
        }
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// One grid point: a value per axis, in axis order.
pub(super) type Point = Vec<String>;
pub(super) fn grid(axes: &[Axis]) -> Vec<Point> {
    let mut pts: Vec<Point> = vec![Vec::new()];
    for a in axes {
        pts = pts
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v.clone());
                    q
                })
            })
            .collect();
    }
    pts
}
pub(super) fn label(axes: &[Axis], p: &Point) -> String {
    if axes.is_empty() {
        // No --vary: the one point is the scenario as it is.
        return "as is".to_string();
    }
    if axes.len() == 1 {
        return p[0].clone();
    }
    axes.iter()
        .zip(p)
        .map(|(a, v)| format!("{}={v}", a.key))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tables' first column: its heading (the one axis's key, else
/// "point") and its width (the widest of the heading and the labels).
pub(super) fn label_column<'a>(axes: &'a [Axis], points: &[Point]) -> (&'a str, usize) {
    let head = if axes.len() == 1 {
        axes[0].key.as_str()
    } else {
        "point"
    };
    let w = points
        .iter()
        .map(|p| label(axes, p).chars().count())
        .chain([head.chars().count()])
        .max()
        .unwrap_or(5);
    (head, w)
}

/// The length of the number at the start of `v`: an optional sign, digits
/// and a decimal point, and an exponent (`e`, an optional sign, digits) only
/// when digits follow it, so "2e" is 2 with the unit "e" and "1e-3" is 0.001.
fn number_prefix(v: &str) -> usize {
    let b = v.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// What kind of quantity a `--vary` value is, when it is one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A plain number (no unit).
    Number,
    Packets,
    /// Bytes (`B`, `kB`, `MiB`, …).
    Size,
    /// Bits per second (`bit`, `Mbit`, `kB/s`, …).
    Rate,
    /// Seconds (`ns` … `h`).
    Duration,
}

/// `v` read as a quantity the scenario format knows: its kind, its value in
/// the kind's base unit (1, packets, bytes, bit/s, seconds) and its unit as
/// written. `None` for anything else (names, booleans, tables, unknown units).
fn quantity(v: &str) -> Option<(Kind, f64, &str)> {
    use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate};
    let v = v.trim();
    let split = number_prefix(v);
    let x: f64 = v[..split].parse().ok().filter(|x: &f64| x.is_finite())?;
    let unit = v[split..].trim();
    if unit.is_empty() {
        return Some((Kind::Number, x, unit));
    }
    if ["pkt", "pkts", "packet", "packets"].contains(&unit) {
        return (x >= 0.0).then_some((Kind::Packets, x, unit));
    }
    if let Ok(d) = parse_duration(v) {
        return Some((Kind::Duration, d.as_secs_f64(), unit));
    }
    if let Ok(r) = parse_rate(v) {
        return Some((Kind::Rate, r.bps() as f64, unit));
    }
    if let Ok(b) = parse_bytes(v) {
        return Some((Kind::Size, b.get() as f64, unit));
    }
    None
}

/// The values of a single axis as numbers with one common unit, for a
/// numeric x axis; `None` otherwise. Values written with the same unit
/// keep it ("10pkt", "20pkt" → 10, 20 and "pkt"); values of one kind of
/// quantity in different units are converted to the unit most of them were
/// written in, the first value's on a tie ("5Mbit", "10000kbit", "20Mbit"
/// → 5, 10, 20 and "Mbit").
pub(super) fn numeric(values: &[String]) -> Option<(Vec<f64>, String)> {
    let as_written = || {
        let mut unit: Option<&str> = None;
        let mut xs = Vec::new();
        for v in values {
            let split = number_prefix(v);
            let x: f64 = v[..split].parse().ok()?;
            let u = v[split..].trim();
            match unit {
                Some(w) if w != u => return None,
                _ => unit = Some(u),
            }
            xs.push(x);
        }
        Some((xs, unit.unwrap_or_default().to_string()))
    };
    if let Some(x) = as_written() {
        return Some(x);
    }
    let qs: Vec<(Kind, f64, &str)> = values.iter().map(|v| quantity(v)).collect::<Option<_>>()?;
    let kind = qs.first()?.0;
    if qs.iter().any(|q| q.0 != kind) {
        return None;
    }
    let count = |u: &str| qs.iter().filter(|q| q.2 == u).count();
    let unit = qs.iter().map(|q| q.2).fold(
        qs[0].2,
        |best, u| if count(u) > count(best) { u } else { best },
    );
    let scale = quantity(&format!("1{unit}"))
        .filter(|q| q.0 == kind && q.1 > 0.0)?
        .1;
    Some((qs.iter().map(|q| q.1 / scale).collect(), unit.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vary_parses_keys_and_values_and_names_mistakes() {
        assert_eq!(
            parse_vary("link.b.queue=20pkt, 50pkt").unwrap(),
            Axis {
                key: "link.b.queue".into(),
                values: vec!["20pkt".into(), "50pkt".into()]
            }
        );
        assert!(parse_vary("link.b.queue")
            .unwrap_err()
            .contains("KEY=V1,V2"));
        assert!(parse_vary("=1,2").unwrap_err().contains("key"));
        assert!(parse_vary("a=1,,2").unwrap_err().contains("empty"));
        let e = parse_vary("flow.f1.cc={algo=\"vegas\",alpha=1},cubic").unwrap_err();
        assert!(
            e.contains("split at commas") && e.contains("--set flow.f1.cc="),
            "{e}"
        );
        // A value given twice, as written or as the same quantity.
        let e = parse_vary("link.bottleneck.queue=20pkt,20pkt").unwrap_err();
        assert!(
            e.contains("link.bottleneck.queue") && e.contains("`20pkt` is given twice"),
            "{e}"
        );
        for (vals, a, b) in [
            ("20pkt,50pkt,20 pkt", "20pkt", "20 pkt"),
            ("1s,1000ms", "1s", "1000ms"),
            ("10Mbit,10000kbit", "10Mbit", "10000kbit"),
            ("1kB,1000B", "1kB", "1000B"),
            ("0.5,0.50", "0.5", "0.50"),
        ] {
            let e = parse_vary(&format!("k={vals}")).unwrap_err();
            assert!(
                e.starts_with("k: ") && e.contains(&format!("`{a}` and `{b}` are the same value")),
                "{vals}: {e}"
            );
        }
        // Different kinds with the same number are different values.
        assert!(parse_vary("k=1000B,1000pkt,1000").is_ok());
        // Integers beyond 2^53 that an f64 cannot tell apart are different.
        assert!(parse_vary("k=9007199254740992,9007199254740993").is_ok());
        assert!(parse_vary("k=cubic,reno,1Mbit,1MB").is_ok());
        // A one-key inline table has no comma and stays a value.
        assert_eq!(
            parse_vary("flow.f1.cc={algo=\"vegas\"},cubic")
                .unwrap()
                .values,
            vec!["{algo=\"vegas\"}".to_string(), "cubic".to_string()]
        );
    }

    #[test]
    fn grid_is_the_product_with_the_first_key_slowest() {
        let a = |k: &str, v: &[&str]| Axis {
            key: k.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
        };
        let g = grid(&[a("x", &["1", "2"]), a("y", &["a", "b", "c"])]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec!["1", "a"]);
        assert_eq!(g[2], vec!["1", "c"]);
        assert_eq!(g[3], vec!["2", "a"]);
    }

    #[test]
    fn numeric_axes_need_one_unit() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            numeric(&v(&["10pkt", "2.5pkt"])),
            Some((vec![10.0, 2.5], "pkt".into()))
        );
        assert_eq!(
            numeric(&v(&["1e3", "-2"])),
            Some((vec![1000.0, -2.0], String::new()))
        );
        assert_eq!(numeric(&v(&["cubic", "reno"])), None);
        // One kind of quantity in several units: the commonest unit.
        assert_eq!(
            numeric(&v(&["5Mbit", "10000kbit", "20Mbit"])),
            Some((vec![5.0, 10.0, 20.0], "Mbit".into()))
        );
        assert_eq!(
            numeric(&v(&["10ms", "1s"])),
            Some((vec![10.0, 1000.0], "ms".into()))
        );
        assert_eq!(
            numeric(&v(&["64kB", "1MB", "500B", "2MB"])),
            Some((vec![0.064, 1.0, 0.0005, 2.0], "MB".into()))
        );
        assert_eq!(
            numeric(&v(&["20pkt", "50 pkts", "100pkts"])),
            Some((vec![20.0, 50.0, 100.0], "pkts".into()))
        );
        // Different kinds (a packet count and a size) stay categorical.
        assert_eq!(numeric(&v(&["20pkt", "30000B"])), None);
        assert_eq!(numeric(&v(&["10ms", "cubic"])), None);
        assert_eq!(numeric(&v(&["1Mbit", "1MB"])), None);
        // "2e" is a number followed by the unit "e", not an exponent.
        assert_eq!(
            numeric(&v(&["2e", "3e"])),
            Some((vec![2.0, 3.0], "e".into()))
        );
    }
}
