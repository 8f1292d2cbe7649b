//! Tidy CSVs from `#[derive(Serialize)]` rows, through one writer.
//!
//! A row is a struct (or a map) of plain values: numbers, strings, bools,
//! unit enum variants, `Option`s. Its field names are the header, in
//! declaration order; `#[serde(rename)]`, `#[serde(skip)]` and
//! `#[serde(flatten)]` work as in summary.json. The rules every hopwise
//! CSV follows:
//!
//! * a missing value (`None`, a NaN: no sample, an undefined ratio) is an
//!   empty cell;
//! * a float is written with at most 12 significant digits, in the
//!   shortest form ([`float`]);
//! * a cell with a comma, a quote or a line break is quoted as RFC 4180
//!   says, with quotes doubled.
//!
//! A row goes through `serde_json::Value` (with `preserve_order`, so the
//! columns keep the fields' order), which already writes NaN as `null`
//! and flattens `#[serde(flatten)]`. The `csv` crate would quote and write
//! headers, but it writes NaN as "NaN" and a table with no rows without
//! its header; the few lines here keep hopwise's convention (an empty
//! table still has its header, from `T::default()`).

use serde::Serialize;
use serde_json::Value;
use std::fmt::{self, Display};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A CSV cell as RFC 4180 writes it: quoted, with quotes doubled, when it
/// holds a comma, a quote or a line break; otherwise as it is.
pub fn cell(c: &str) -> std::borrow::Cow<'_, str> {
    if c.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", c.replace('"', "\"\"")).into()
    } else {
        c.into()
    }
}

/// A float as a cell: empty for NaN or ±∞, else at most 12 significant
/// digits in the shortest form that reads back as that (far beyond what any
/// measurement here resolves, and it drops binary noise: a time computed
/// as 300 ms · 10⁻⁹ reads 0.3, not 0.30000000000000004).
pub fn float(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    let r: f64 = format!("{x:.11e}").parse().unwrap_or(x);
    format!("{r}")
}

/// A row that is not a struct: columns named at run time, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynRow(pub Vec<(String, String)>);

impl Serialize for DynRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Writes `rows` to `path` (its directory is created), the header from the
/// first row's fields, or from `T::default()`'s for an empty table.
pub fn write<T: Serialize + Default>(path: &Path, rows: &[T]) -> anyhow::Result<()> {
    let mut w = Writer::create(path)?;
    if rows.is_empty() {
        w.header_of(&T::default())?;
    }
    for r in rows {
        w.row(r)?;
    }
    w.finish()
}

/// A CSV written row by row (for long tables, or rows that arrive over
/// time). The header comes from the first row.
pub struct Writer {
    path: PathBuf,
    /// The file being written, renamed to `path` by [`Writer::finish`], so
    /// that an interrupted run never leaves half a table.
    tmp: PathBuf,
    w: std::io::BufWriter<std::fs::File>,
    header: Option<Vec<String>>,
}

impl Writer {
    pub fn create(path: &Path) -> anyhow::Result<Writer> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", d.display()))?;
        }
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!(".{name}.tmp"));
        let f = std::fs::File::create(&tmp)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
        Ok(Writer {
            path: path.to_path_buf(),
            tmp,
            w: std::io::BufWriter::new(f),
            header: None,
        })
    }

    fn line(&mut self, cells: &[String]) -> anyhow::Result<()> {
        let mut s = String::new();
        for (k, c) in cells.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            s.push_str(&cell(c));
        }
        s.push('\n');
        self.w
            .write_all(s.as_bytes())
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", self.path.display()))
    }

    /// Writes the header of rows like `sample` now, before any row (so that
    /// a table that ends up empty still has it).
    pub fn header_of<T: Serialize>(&mut self, sample: &T) -> anyhow::Result<()> {
        let (names, _) = flatten(sample).map_err(|e| self.error(e))?;
        self.line(&names)?;
        self.header = Some(names);
        Ok(())
    }

    fn error(&self, e: Error) -> anyhow::Error {
        anyhow::anyhow!("writing {}: {e}", self.path.display())
    }

    /// Writes one row (and, before the first, the header). Every row must
    /// have the first row's columns.
    pub fn row<T: Serialize>(&mut self, row: &T) -> anyhow::Result<()> {
        let (names, cells) = flatten(row).map_err(|e| self.error(e))?;
        match &self.header {
            None => {
                self.line(&names)?;
                self.header = Some(names);
            }
            Some(h) if *h != names => {
                return Err(self.error(Error(format!(
                    "a row's columns ({}) are not the header's ({})",
                    names.join(","),
                    h.join(",")
                ))))
            }
            Some(_) => {}
        }
        self.line(&cells)
    }

    /// Flushes the table and puts it in place.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.w
            .flush()
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", self.path.display()))?;
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", self.path.display()))
    }
}

impl Drop for Writer {
    /// A table never finished leaves no temporary file behind (after
    /// [`Writer::finish`] there is none to remove).
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// A row's column names and cells.
fn flatten<T: Serialize>(row: &T) -> Result<(Vec<String>, Vec<String>), Error> {
    let kind = |v: &Value| match v {
        Value::Array(_) => "a list",
        Value::Object(_) => "a struct (use #[serde(flatten)])",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Null => "nothing",
    };
    let fields = match serde_json::to_value(row).map_err(|e| Error(e.to_string()))? {
        Value::Object(m) => m,
        v => {
            return Err(Error(format!(
                "a CSV row must be a struct or a map of plain values, not {}",
                kind(&v)
            )))
        }
    };
    let mut names = Vec::with_capacity(fields.len());
    let mut cells = Vec::with_capacity(fields.len());
    for (name, v) in fields {
        cells.push(match &v {
            Value::Null => String::new(),
            Value::Bool(b) => b.to_string(),
            Value::String(s) => s.clone(),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u.to_string(),
                (_, Some(i)) => i.to_string(),
                _ => float(n.as_f64().unwrap_or(f64::NAN)),
            },
            _ => {
                return Err(Error(format!(
                    "{name}: a CSV cell holds a plain value, not {}",
                    kind(&v)
                )))
            }
        });
        names.push(name);
    }
    Ok((names, cells))
}

/// What a row cannot hold (a nested struct or a list in a cell).
#[derive(Debug)]
pub struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    #[derive(Serialize, Default)]
    #[serde(rename_all = "kebab-case")]
    enum Kind {
        #[default]
        Bulk,
        WebPage,
    }

    #[derive(Serialize, Default)]
    struct Key {
        case: String,
        seed: u64,
    }

    #[derive(Serialize, Default)]
    struct Row {
        #[serde(flatten)]
        key: Key,
        kind: Kind,
        goodput_bps: f64,
        median: Option<u64>,
        #[serde(rename = "ok?")]
        ok: bool,
        #[serde(skip)]
        _trace: Vec<f64>,
    }

    /// A file in a directory of its own per test: tests run in parallel and
    /// each removes its directory at the end.
    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir()
            .join(format!("hopwise-csv-{}-{name}", std::process::id()))
            .join(name)
    }

    #[test]
    fn rows_become_a_header_and_cells() {
        let p = tmp("rows.csv");
        let rows = vec![
            Row {
                key: Key {
                    case: "equal delays, no delayed ACKs".into(),
                    seed: 1,
                },
                kind: Kind::WebPage,
                goodput_bps: 0.1 + 0.2,
                median: Some(3),
                ok: true,
                _trace: vec![1.0],
            },
            Row {
                key: Key {
                    case: "say \"hi\"".into(),
                    seed: 2,
                },
                goodput_bps: f64::NAN,
                ..Row::default()
            },
        ];
        write(&p, &rows).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "case,seed,kind,goodput_bps,median,ok?\n\
             \"equal delays, no delayed ACKs\",1,web-page,0.3,3,true\n\
             \"say \"\"hi\"\"\",2,bulk,,,false\n"
        );
        // An empty table keeps its header.
        write::<Row>(&p, &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "case,seed,kind,goodput_bps,median,ok?\n"
        );
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn dynamic_rows_and_refusals() {
        let p = tmp("dyn.csv");
        let mut w = Writer::create(&p).unwrap();
        let r = |a: &str, v: &str| DynRow(vec![("rate".into(), a.into()), ("v".into(), v.into())]);
        w.row(&r("10Mbit", "1")).unwrap();
        w.row(&r("20Mbit", "2")).unwrap();
        let other = DynRow(vec![("x".into(), "1".into())]);
        let e = w.row(&other).unwrap_err().to_string();
        assert!(e.contains("not the header's (rate,v)"), "{e}");
        w.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "rate,v\n10Mbit,1\n20Mbit,2\n"
        );
        #[derive(Serialize, Default)]
        struct Nested {
            inner: Key,
        }
        let e = write(&p, &[Nested::default()]).unwrap_err().to_string();
        assert!(
            e.contains("inner: a CSV cell holds a plain value, not a struct"),
            "{e}"
        );
        let e = write(&p, &[1u32]).unwrap_err().to_string();
        assert!(e.contains("must be a struct or a map"), "{e}");
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }

    #[test]
    fn cells_with_commas_and_quotes_are_quoted() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("bucket, 10 ms refill"), "\"bucket, 10 ms refill\"");
        assert_eq!(cell("a \"b\""), "\"a \"\"b\"\"\"");
        assert_eq!(float(2.0), "2");
        assert_eq!(float(300_000_000.0 * 1e-9), "0.3");
        assert_eq!(float(1_234.567_890_123_456), "1234.56789012");
        assert_eq!(float(f64::INFINITY), "");
    }
}
