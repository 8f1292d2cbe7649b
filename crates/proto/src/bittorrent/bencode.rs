//! Bencode (BEP 3, "bencoding"): integers `i42e`, byte strings `4:spam`,
//! lists `l...e` and dictionaries `d...e`.
//!
//! Written here rather than taken from a crate because the metainfo needs
//! two things the bencode crates we looked at do not give together: the raw
//! byte span of a dictionary value exactly as it appears in the file (the
//! info-hash is SHA-1 over the `info` dictionary's bytes, not over a
//! re-encoding, which would differ for a torrent with unsorted keys or
//! non-canonical integers), and errors that name the key path and the byte
//! offset. Decoding borrows from the input and never copies a string.
//!
//! The decoder is strict where a lax reading could change meaning
//! (integers with leading zeros or `-0`, duplicate keys, trailing bytes)
//! and lenient where it cannot (keys out of order are accepted, as other
//! clients do). Nesting is limited to [`MAX_DEPTH`] so hostile input cannot
//! exhaust the stack.

use std::collections::BTreeSet;
use std::fmt;

/// The deepest nesting of lists and dictionaries accepted. A single-file
/// torrent nests 4 deep (a hybrid's `file tree` included); hopwise's bound
/// leaves room and keeps the recursion's stack use small.
pub const MAX_DEPTH: usize = 64;

/// A decoded value, borrowing its strings from the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Int(i64),
    Bytes(&'a [u8]),
    List(Vec<Value<'a>>),
    /// Entries in input order.
    Dict(Vec<Entry<'a>>),
}

/// One key of a dictionary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub key: &'a [u8],
    pub value: Value<'a>,
    /// Where the value's bytes start in the input.
    pub at: usize,
    /// The value's bytes exactly as found in the input.
    pub raw: &'a [u8],
}

impl<'a> Value<'a> {
    /// The entry of a dictionary under `key` (`None` for other values).
    pub fn get(&self, key: &[u8]) -> Option<&Entry<'a>> {
        match self {
            Value::Dict(es) => es.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// What kind of value this is, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Bytes(_) => "a byte string",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dictionary",
        }
    }

    /// Appends the canonical encoding (dictionaries in their entries'
    /// order; callers who want canonical output keep keys sorted).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Int(i) => put_int(out, *i),
            Value::Bytes(b) => put_bytes(out, b),
            Value::List(l) => {
                out.push(b'l');
                for v in l {
                    v.encode(out);
                }
                out.push(b'e');
            }
            Value::Dict(es) => {
                out.push(b'd');
                for e in es {
                    put_bytes(out, e.key);
                    e.value.encode(out);
                }
                out.push(b'e');
            }
        }
    }
}

/// Appends `i<n>e`.
pub fn put_int(out: &mut Vec<u8>, n: i64) {
    out.push(b'i');
    out.extend_from_slice(n.to_string().as_bytes());
    out.push(b'e');
}

/// Appends `<len>:<bytes>`.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b.len().to_string().as_bytes());
    out.push(b':');
    out.extend_from_slice(b);
}

/// Why bencoded input was refused: the key path (e.g. `info.piece
/// length`, `announce-list[2]`; empty for the top level), the byte offset
/// and the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub key: String,
    pub at: usize,
    pub problem: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "at byte {}: {}", self.at, self.problem)
        } else {
            write!(
                f,
                "key `{}` at byte {}: {}",
                self.key, self.at, self.problem
            )
        }
    }
}

impl std::error::Error for Error {}

/// Decodes one value that must span all of `input`.
pub fn decode(input: &[u8]) -> Result<Value<'_>, Error> {
    let mut d = Decoder {
        input,
        pos: 0,
        path: Vec::new(),
    };
    let v = d.value(0)?;
    if d.pos != input.len() {
        return Err(d.err(format!(
            "{} bytes after the end of the top-level value",
            input.len() - d.pos
        )));
    }
    Ok(v)
}

/// A key path element.
enum Seg<'a> {
    Key(&'a [u8]),
    Index(usize),
}

struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    path: Vec<Seg<'a>>,
}

impl<'a> Decoder<'a> {
    fn err(&self, problem: String) -> Error {
        let mut key = String::new();
        for s in &self.path {
            match s {
                Seg::Key(k) => {
                    if !key.is_empty() {
                        key.push('.');
                    }
                    key.push_str(&String::from_utf8_lossy(k));
                }
                Seg::Index(i) => key.push_str(&format!("[{i}]")),
            }
        }
        Error {
            key,
            at: self.pos,
            problem,
        }
    }

    fn peek(&self, what: &str) -> Result<u8, Error> {
        self.input
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.err(format!("truncated: the input ends where {what} should be")))
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, Error> {
        match self.peek("a value")? {
            b'i' => {
                self.pos += 1;
                self.int().map(Value::Int)
            }
            b'0'..=b'9' => self.bytes().map(Value::Bytes),
            c @ (b'l' | b'd') => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(format!("nested deeper than {MAX_DEPTH} levels")));
                }
                self.pos += 1;
                if c == b'l' {
                    self.list(depth)
                } else {
                    self.dict(depth)
                }
            }
            c => Err(self.err(format!(
                "expected a value (i, l, d or a digit), found byte 0x{c:02x}"
            ))),
        }
    }

    /// After the `i`: digits up to the `e`.
    fn int(&mut self) -> Result<i64, Error> {
        let start = self.pos;
        let Some(len) = self.input[start..].iter().position(|&c| c == b'e') else {
            return Err(self.err("truncated: an integer without its closing `e`".into()));
        };
        let digits = &self.input[start..start + len];
        let (neg, abs) = match digits {
            [b'-', rest @ ..] => (true, rest),
            _ => (false, digits),
        };
        let canonical = !abs.is_empty()
            && abs.iter().all(u8::is_ascii_digit)
            && (abs == b"0" && !neg || abs[0] != b'0');
        let n = canonical
            .then(|| std::str::from_utf8(digits).ok()?.parse::<i64>().ok())
            .flatten();
        let Some(n) = n else {
            self.pos = start - 1;
            return Err(self.err(format!(
                "integer `{}` is not a canonical 64-bit integer",
                String::from_utf8_lossy(&digits[..digits.len().min(24)])
            )));
        };
        self.pos = start + len + 1;
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let start = self.pos;
        let Some(colon) = self.input[start..].iter().position(|&c| c == b':') else {
            return Err(self.err("truncated: a string length without its `:`".into()));
        };
        let digits = &self.input[start..start + colon];
        let len = (digits.iter().all(u8::is_ascii_digit) && (digits == b"0" || digits[0] != b'0'))
            .then(|| std::str::from_utf8(digits).ok()?.parse::<usize>().ok())
            .flatten();
        let Some(len) = len else {
            return Err(self.err(format!(
                "string length `{}` is not a canonical number",
                String::from_utf8_lossy(&digits[..digits.len().min(24)])
            )));
        };
        let body = start + colon + 1;
        if len > self.input.len() - body {
            return Err(self.err(format!(
                "truncated: a string of {len} bytes, {} left in the input",
                self.input.len() - body
            )));
        }
        self.pos = body + len;
        Ok(&self.input[body..body + len])
    }

    fn list(&mut self, depth: usize) -> Result<Value<'a>, Error> {
        let mut l = Vec::new();
        loop {
            if self.peek("a list item or `e`")? == b'e' {
                self.pos += 1;
                return Ok(Value::List(l));
            }
            self.path.push(Seg::Index(l.len()));
            let v = self.value(depth + 1)?;
            self.path.pop();
            l.push(v);
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Value<'a>, Error> {
        let mut es: Vec<Entry<'a>> = Vec::new();
        // Keys seen, for the duplicate check in O(log n) per key (a file of
        // millions of short keys must not take quadratic time).
        let mut seen: BTreeSet<&'a [u8]> = BTreeSet::new();
        loop {
            match self.peek("a dictionary key or `e`")? {
                b'e' => {
                    self.pos += 1;
                    return Ok(Value::Dict(es));
                }
                b'0'..=b'9' => {}
                c => {
                    return Err(self.err(format!(
                        "a dictionary key must be a byte string, found byte 0x{c:02x}"
                    )))
                }
            }
            let key_at = self.pos;
            let key = self.bytes()?;
            if !seen.insert(key) {
                self.pos = key_at;
                self.path.push(Seg::Key(key));
                let e = self.err("duplicate key".into());
                return Err(e);
            }
            self.path.push(Seg::Key(key));
            let at = self.pos;
            let value = self.value(depth + 1)?;
            self.path.pop();
            es.push(Entry {
                key,
                value,
                at,
                raw: &self.input[at..self.pos],
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An owned value for generating inputs (dictionary keys sorted and
    /// unique, so the encoding is canonical).
    #[derive(Clone, Debug)]
    enum Tree {
        Int(i64),
        Bytes(Vec<u8>),
        List(Vec<Tree>),
        Dict(std::collections::BTreeMap<Vec<u8>, Tree>),
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(Tree::Int),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(Tree::Bytes),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Tree::List),
                proptest::collection::btree_map(
                    proptest::collection::vec(any::<u8>(), 0..6),
                    inner,
                    0..5
                )
                .prop_map(Tree::Dict),
            ]
        })
    }

    fn put(t: &Tree, out: &mut Vec<u8>) {
        match t {
            Tree::Int(i) => put_int(out, *i),
            Tree::Bytes(b) => put_bytes(out, b),
            Tree::List(l) => {
                out.push(b'l');
                l.iter().for_each(|t| put(t, out));
                out.push(b'e');
            }
            Tree::Dict(d) => {
                out.push(b'd');
                for (k, v) in d {
                    put_bytes(out, k);
                    put(v, out);
                }
                out.push(b'e');
            }
        }
    }

    fn same(v: &Value<'_>, t: &Tree) -> bool {
        match (v, t) {
            (Value::Int(a), Tree::Int(b)) => a == b,
            (Value::Bytes(a), Tree::Bytes(b)) => a == b,
            (Value::List(a), Tree::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
            }
            (Value::Dict(a), Tree::Dict(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(e, (k, t))| e.key == &k[..] && same(&e.value, t))
            }
            _ => false,
        }
    }

    proptest! {
        /// Encoded values decode to themselves and re-encode to the same
        /// bytes; every dictionary entry's `raw` is its value's encoding.
        #[test]
        fn round_trip(t in tree()) {
            let mut b = Vec::new();
            put(&t, &mut b);
            let v = decode(&b).unwrap();
            prop_assert!(same(&v, &t));
            let mut again = Vec::new();
            v.encode(&mut again);
            prop_assert_eq!(&again, &b);
            fn raws(v: &Value<'_>) -> bool {
                match v {
                    Value::Dict(es) => es.iter().all(|e| {
                        let mut x = Vec::new();
                        e.value.encode(&mut x);
                        x == e.raw && raws(&e.value)
                    }),
                    Value::List(l) => l.iter().all(raws),
                    _ => true,
                }
            }
            prop_assert!(raws(&v));
        }

        /// Every proper prefix of an encoding is refused as truncated or
        /// malformed, never accepted and never a panic.
        #[test]
        fn prefixes_are_refused(t in tree()) {
            let mut b = Vec::new();
            put(&t, &mut b);
            for n in 0..b.len() {
                let e = decode(&b[..n]).unwrap_err();
                prop_assert!(e.at <= n, "{e}");
            }
        }

        /// Arbitrary bytes never panic; what is accepted re-encodes to
        /// exactly the input (only canonical forms are accepted).
        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(v) = decode(&b) {
                let mut again = Vec::new();
                v.encode(&mut again);
                prop_assert_eq!(again, b);
            }
        }
    }

    #[test]
    fn errors_name_key_and_offset() {
        let e = decode(b"d4:infod6:lengthi-0eee").unwrap_err();
        assert_eq!(e.key, "info.length");
        assert_eq!(e.at, 16);
        assert!(
            e.to_string().contains("key `info.length` at byte 16"),
            "{e}"
        );
        let e = decode(b"d4:infod4:name10:abce").unwrap_err();
        assert_eq!(e.key, "info.name");
        assert!(e.problem.contains("truncated"), "{e}");
        let e = decode(b"d1:ali1ei02eee").unwrap_err();
        assert_eq!(e.key, "a[1]");
        let e = decode(b"d1:ai1e1:ai2ee").unwrap_err();
        assert_eq!((e.key.as_str(), e.at), ("a", 7));
        assert!(e.problem.contains("duplicate"));
        let e = decode(b"i1ei2e").unwrap_err();
        assert!(e.problem.contains("after the end"), "{e}");
        let deep = "l".repeat(MAX_DEPTH + 1) + &"e".repeat(MAX_DEPTH + 1);
        assert!(decode(deep.as_bytes())
            .unwrap_err()
            .problem
            .contains("nested"));
        let ok = "l".repeat(MAX_DEPTH) + &"e".repeat(MAX_DEPTH);
        assert!(decode(ok.as_bytes()).is_ok());
    }

    /// Keys out of order are accepted and kept in input order (the raw span
    /// is what the info-hash covers, not a re-sorted copy).
    #[test]
    fn unsorted_keys_keep_their_bytes() {
        let b = b"d1:bi1e1:ad1:zi0e1:yi1eee";
        let v = decode(b).unwrap();
        let a = v.get(b"a").unwrap();
        assert_eq!(a.raw, b"d1:zi0e1:yi1ee");
        assert_eq!(a.at, 10);
        assert_eq!(v.get(b"b").unwrap().value, Value::Int(1));
        assert!(v.get(b"c").is_none());
    }
}
