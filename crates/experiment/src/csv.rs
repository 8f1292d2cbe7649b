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
//! * a float is written in the shortest form that reads back the same
//!   value, so no precision is lost and none is invented;
//! * a cell with a comma, a quote or a line break is quoted as RFC 4180
//!   says, with quotes doubled.
//!
//! The `csv` crate would quote and write headers, but it writes NaN as
//! "NaN" and a table with no rows without its header; the serializer here
//! is the few lines that keep hopwise's convention (an empty table still
//! has its header, from `T::default()`).

use serde::ser::{self, Impossible, Serialize};
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

/// A float as a cell: empty for NaN or ±∞, else the shortest round-trip form.
pub fn float(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A row that is not a struct: columns named at run time, in order
/// (`hopwise sweep`'s axes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DynRow(pub Vec<(String, String)>);

impl Serialize for DynRow {
    fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeMap;
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
    w: std::io::BufWriter<std::fs::File>,
    header: Option<Vec<String>>,
}

impl Writer {
    pub fn create(path: &Path) -> anyhow::Result<Writer> {
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", d.display()))?;
        }
        let f = std::fs::File::create(path)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        Ok(Writer {
            path: path.to_path_buf(),
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

    pub fn finish(mut self) -> anyhow::Result<()> {
        self.w
            .flush()
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", self.path.display()))
    }
}

/// A row's column names and cells.
fn flatten<T: Serialize>(row: &T) -> Result<(Vec<String>, Vec<String>), Error> {
    let mut r = RowSer {
        names: Vec::new(),
        cells: Vec::new(),
        key: None,
    };
    row.serialize(&mut r)?;
    Ok((r.names, r.cells))
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
impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// Serializes the top level of a row: a struct or a map of cells.
struct RowSer {
    names: Vec<String>,
    cells: Vec<String>,
    /// The pending map key.
    key: Option<String>,
}

fn not_a_row(what: &str) -> Error {
    Error(format!(
        "a CSV row must be a struct or a map of plain values, not {what}"
    ))
}

macro_rules! refuse {
    ($($f:ident($($t:ty),*) $what:literal;)*) => {$(
        fn $f(self, $(_: $t),*) -> Result<(), Error> { Err(not_a_row($what)) }
    )*};
}

impl ser::Serializer for &mut RowSer {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), Error>;

    refuse! {
        serialize_bool(bool) "a bool";
        serialize_i8(i8) "a number"; serialize_i16(i16) "a number";
        serialize_i32(i32) "a number"; serialize_i64(i64) "a number";
        serialize_u8(u8) "a number"; serialize_u16(u16) "a number";
        serialize_u32(u32) "a number"; serialize_u64(u64) "a number";
        serialize_f32(f32) "a number"; serialize_f64(f64) "a number";
        serialize_char(char) "a char"; serialize_str(&str) "a string";
        serialize_bytes(&[u8]) "bytes"; serialize_none() "None";
        serialize_unit() "()"; serialize_unit_struct(&'static str) "a unit struct";
        serialize_unit_variant(&'static str, u32, &'static str) "an enum";
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(not_a_row("an enum"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_row("a list"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_row("a tuple"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_row("a tuple struct"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_row("an enum"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Error> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Error> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_row("an enum"))
    }
}

impl RowSer {
    fn push<T: ?Sized + Serialize>(&mut self, name: String, v: &T) -> Result<(), Error> {
        let c = v
            .serialize(CellSer)
            .map_err(|Error(e)| Error(format!("{name}: {e}")))?;
        self.names.push(name);
        self.cells.push(c);
        Ok(())
    }
}

impl ser::SerializeStruct for &mut RowSer {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.push(key.to_string(), v)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

impl ser::SerializeMap for &mut RowSer {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(CellSer)?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Error> {
        let k = self
            .key
            .take()
            .ok_or_else(|| Error("a value without a key".into()))?;
        self.push(k, v)
    }
    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}

/// Serializes one cell.
struct CellSer;

fn not_a_cell(what: &str) -> Error {
    Error(format!("a CSV cell holds a plain value, not {what}"))
}

impl ser::Serializer for CellSer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    fn serialize_bool(self, v: bool) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<String, Error> {
        Ok(if v.is_finite() {
            v.to_string()
        } else {
            String::new()
        })
    }
    fn serialize_f64(self, v: f64) -> Result<String, Error> {
        Ok(float(v))
    }
    fn serialize_char(self, v: char) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_str(self, v: &str) -> Result<String, Error> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Error> {
        Err(not_a_cell("bytes"))
    }
    fn serialize_none(self) -> Result<String, Error> {
        Ok(String::new())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<String, Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, Error> {
        Ok(String::new())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Error> {
        Ok(String::new())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Error> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(not_a_cell("an enum with data"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_cell("a list"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_cell("a tuple"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_cell("a tuple struct"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_cell("an enum with data"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_cell("a map (use #[serde(flatten)])"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_cell("a struct (use #[serde(flatten)])"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_cell("an enum with data"))
    }
}

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

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir()
            .join(format!("hopwise-csv-{}", std::process::id()))
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
             \"equal delays, no delayed ACKs\",1,web-page,0.30000000000000004,3,true\n\
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
        assert_eq!(float(f64::INFINITY), "");
    }
}
