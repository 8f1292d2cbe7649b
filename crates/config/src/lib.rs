//! # hopwise-config
//!
//! What hopwise's two configuration front-ends share: scenario files
//! (`hopwise_sim::scenario`) and relay, proxy and directory files
//! (`hopwise_net::config`). Each front-end describes its files with
//! serde-derived structs (`#[serde(deny_unknown_fields)]`) and keeps its
//! own semantic checks; this crate holds the rest:
//!
//! * [`Error`]: `file: key path: problem`, with the "did you mean" candidate;
//! * [`suggest`] and [`did_you_mean`], over `strsim`'s edit distance;
//! * [`read`] and [`parse_toml`]: a file read with limits, and TOML text to a
//!   table, a syntax error naming its line and column (`toml`'s spans);
//! * [`from_value`]: a serde type from a TOML value through
//!   `serde_path_to_error`, an error naming the key path ([`Seg`]) and, for
//!   an unknown key, the allowed keys and the closest one;
//! * deserializers for hopwise's quantities over `hopwise_proto::units`
//!   ([`Rate`], [`Duration`], [`Size`], [`QueueLimit`], [`Loss`]) and for
//!   the other values both front-ends read ([`Int`], [`Flag`], [`Name`],
//!   [`Text`], [`Strings`], [`Tables`], [`TableOf`]), with messages in the
//!   project's words;
//! * [`table!`] to declare a table's struct, [`apply!`] to copy its keys onto
//!   defaults, [`required`] and [`choice`] for required keys and names from
//!   a fixed set.

mod value;

pub use value::*;

use serde::de::DeserializeOwned;
use std::fmt;
use std::path::Path;
use toml::Table;

/// What went wrong, and where. Displayed as `<file>: <key>: <message>`, or
/// `<file>: <message>` when no key applies (a TOML syntax error, whose
/// message starts with the line and column; a file that cannot be read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The file (or the origin a text was given under).
    pub file: String,
    /// Key path such as `link[2] "bottleneck".ba.rate`, `bandwidth.rate` or
    /// `--set <override>`. May be empty.
    pub key: String,
    /// The problem, "did you mean" included where there is a candidate.
    pub message: String,
    /// The candidate the message suggests, if any.
    pub suggestion: Option<String>,
}

impl Error {
    pub fn new(
        file: impl fmt::Display,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error {
            file: file.to_string(),
            key: key.into(),
            message: message.into(),
            suggestion: None,
        }
    }

    /// The same error, in `file`.
    pub fn in_file(mut self, file: &str) -> Self {
        self.file = file.to_string();
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for Error {}

// ---------------------------------------------------------------------------
// Did you mean

/// The closest candidate within edit distance 2 (case-insensitive, and less
/// than the word's own length, so that "x" does not suggest "a"), if it is
/// the only one that close: a tie (`h5` against `h1`, `h2`) suggests nothing
/// rather than an arbitrary name.
pub fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let len = word.chars().count();
    if len > 64 {
        return None;
    }
    let word = word.to_lowercase();
    let close: Vec<(usize, &str)> = candidates
        .iter()
        .map(|c| (strsim::levenshtein(&word, &c.to_lowercase()), *c))
        .filter(|&(d, _)| d <= 2 && d < len.max(1))
        .collect();
    let best = close.iter().map(|&(d, _)| d).min()?;
    let mut at_best = close.iter().filter(|&&(d, _)| d == best).map(|&(_, c)| c);
    let first = at_best.next()?;
    if at_best.any(|c| c != first) {
        return None;
    }
    Some(first)
}

/// "; did you mean `x`?" for the [`suggest`]ed candidate, else "".
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    match suggest(word, candidates) {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

/// The value of a required key, or "missing required key (`why`)" at `key`.
pub fn required<T>(v: Option<T>, key: &str, why: &str) -> Result<T, Error> {
    v.ok_or_else(|| {
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({why})")
        };
        Error::new("", key, format!("missing required key{why}"))
    })
}

/// The value the name `s` stands for among `options`, or "unknown `what`
/// "s"; did you mean `x`? (known: a, b)".
pub fn choice<T: Copy>(s: &str, what: &str, options: &[(&str, T)]) -> Result<T, String> {
    if let Some(&(_, v)) = options.iter().find(|(n, _)| *n == s) {
        return Ok(v);
    }
    let names: Vec<&str> = options.iter().map(|&(n, _)| n).collect();
    let dym = did_you_mean(s, &names);
    Err(format!(
        "unknown {what} {s:?}{dym} (known: {})",
        names.join(", ")
    ))
}

// ---------------------------------------------------------------------------
// Reading files and TOML text

/// Configuration files are small; a larger one is a mistake (or a device
/// such as /dev/zero, which would be read forever).
pub const MAX_FILE: u64 = 16 << 20;

/// The text of a configuration file: a regular file of at most
/// [`MAX_FILE`] bytes, in UTF-8. Errors name the file and say why.
pub fn read(path: &Path) -> Result<String, Error> {
    let e = |m: String| Error::new(path.display(), "", m);
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(e("is a directory, not a file".into())),
        Ok(m) if !m.is_file() => return Err(e("is not a regular file".into())),
        Ok(m) if m.len() > MAX_FILE => {
            return Err(e(format!(
                "is {} bytes; a configuration file is at most 16 MiB",
                m.len()
            )))
        }
        _ => {}
    }
    // The checks above keep open() from blocking on a FIFO; the opened
    // file is checked again and read up to the limit, so a file replaced
    // in between cannot make the read unbounded.
    use std::io::Read as _;
    let f = std::fs::File::open(path).map_err(|x| e(format!("cannot read: {x}")))?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(e("is not a regular file".into()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|x| e(format!("cannot read: {x}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(e("grew beyond 16 MiB while being read".into()));
    }
    String::from_utf8(bytes).map_err(|x| {
        e(format!(
            "is not UTF-8 text (byte {} is not), so not a TOML file",
            x.utf8_error().valid_up_to()
        ))
    })
}

/// Parses TOML text. A syntax error has no key; its message gives the line
/// and column, a hint for a quantity written without quotes, what
/// `hint(message, line)` adds (advice of the front-end's own) and the line.
pub fn parse_toml(
    text: &str,
    file: &str,
    hint: impl Fn(&str, &str) -> String,
) -> Result<Table, Error> {
    text.parse::<Table>().map_err(|err| {
        let msg = err.message().trim().replace('\n', " ");
        let Some(span) = err.span() else {
            return Error::new(file, "", format!("TOML syntax error: {msg}"));
        };
        let (line, col) = line_col(text, span.start);
        let src = text.lines().nth(line - 1).unwrap_or("");
        let mut out = format!("line {line}, column {col}: TOML syntax error: {msg}");
        // The commonest mistake: a quantity with a unit written without quotes.
        if let Some((k, v)) = src.split_once('=') {
            let v = v.split('#').next().unwrap_or("").trim();
            let numeric = v.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
            let unit = v.trim_start_matches(|c: char| c.is_ascii_digit() || ".-+_eE".contains(c));
            if numeric && unit.trim_start().starts_with(char::is_alphabetic) && !v.contains('"') {
                out.push_str(&format!(
                    " (quantities with units are strings: write {} = \"{}\")",
                    k.trim(),
                    clip(v, 30)
                ));
            }
        }
        out.push_str(&hint(&msg, src));
        out.push_str(&format!("\n  {line:>4} | {}", clip(src, 100)));
        Error::new(file, "", out)
    })
}

/// 1-based line and column (in characters) of byte offset `pos`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let (mut line, mut col) = (1, 1);
    for (i, ch) in text.char_indices() {
        if i >= pos {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

// ---------------------------------------------------------------------------
// serde, with the key path

/// Declares the serde struct of one kind of TOML table: every key optional,
/// unknown keys refused (`deny_unknown_fields`), `what` in the message for a
/// value that is not a table, and with `section` the name its array of
/// tables is written with (`[[node]]`, see [`Tables`]). The calling crate
/// needs `serde`. A macro, as the structs of a front-end are many and all
/// alike.
#[macro_export]
macro_rules! table {
    ($(#[$m:meta])* $v:vis struct $name:ident($what:literal $(, section $section:literal)?)
        { $($(#[$fm:meta])* $f:ident: $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, serde::Deserialize)]
        #[serde(deny_unknown_fields, expecting = $what)]
        $v struct $name { $($(#[$fm])* pub $f: Option<$t>,)* }
        $(impl $crate::Section for $name { const NAME: &'static str = $section; })?
    };
}

/// For each field `k` that `$raw` sets (to `Some(v)`), `$to.k = $e`: the
/// keys of a table, onto the defaults they override.
#[macro_export]
macro_rules! apply {
    ($to:expr, $raw:expr, |$v:ident| $e:expr; $($k:ident),* $(,)?) => {
        $(if let Some($v) = &$raw.$k { $to.$k = $e; })*
    };
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// `prefix` followed by `path`, as the messages write key paths:
/// `link[1].queue` and `[limit]` give `link[1].queue.limit`.
pub fn join(prefix: &str, path: &[Seg]) -> String {
    let mut out = prefix.to_string();
    for s in path {
        match s {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A deserialization error in the project's words, with the key path it
/// happened at, before the front-end writes the path out (naming entities
/// in it, such as `link[2] "bottleneck"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub path: Vec<Seg>,
    pub message: String,
    /// For an unknown key: the keys allowed where it stands.
    pub allowed: Option<Vec<String>>,
    pub suggestion: Option<String>,
}

impl Problem {
    /// The error at key path `key` (the file is set by [`Error::in_file`]).
    pub fn at(self, key: impl Into<String>) -> Error {
        Error {
            file: String::new(),
            key: key.into(),
            message: self.message,
            suggestion: self.suggestion,
        }
    }
}

/// Deserializes `value` into `T`. Errors name the key path; an unknown
/// key's message lists the allowed keys with a "did you mean", a missing
/// field is "missing required key" at its own path, and serde's "invalid
/// type: …, expected …" reads "expected …, got …".
pub fn from_value<T: DeserializeOwned>(value: toml::Value) -> Result<T, Problem> {
    // A table goes through TOML text: `toml::Value`'s own deserializer hands
    // a date-time over as a string, which a name or a path would take.
    let text = match &value {
        toml::Value::Table(t) => toml::to_string(t).ok(),
        _ => None,
    };
    let result = match &text {
        Some(text) => serde_path_to_error::deserialize(toml::Deserializer::new(text)),
        None => serde_path_to_error::deserialize(value),
    };
    result.map_err(|e| {
        use serde_path_to_error::Segment;
        let path = e
            .path()
            .iter()
            .filter_map(|s| match s {
                Segment::Seq { index } => Some(Seg::Index(*index)),
                Segment::Map { key } => Some(Seg::Key(key.clone())),
                Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
                _ => None,
            })
            .collect();
        problem(path, e.inner().message())
    })
}

/// Whether the struct `T` (with `deny_unknown_fields`) has a field `key`:
/// lets a front-end say where a misplaced key belongs without a second
/// list of the struct's fields.
pub fn has_field<T: DeserializeOwned>(key: &str) -> bool {
    let mut t = Table::new();
    t.insert(key.to_string(), toml::Value::Boolean(false));
    !matches!(
        from_value::<T>(toml::Value::Table(t)),
        Err(Problem {
            allowed: Some(_),
            ..
        })
    )
}

/// Puts serde's standard messages (their wording is serde's documented
/// `Error` defaults) into the project's.
fn problem(mut path: Vec<Seg>, msg: &str) -> Problem {
    let mut p = Problem {
        path: Vec::new(),
        message: reword(msg),
        allowed: None,
        suggestion: None,
    };
    if let Some(rest) = msg
        .strip_prefix("unknown field `")
        .filter(|r| !r.starts_with(DATETIME))
    {
        // "unknown field `k`, expected one of `a`, `b`" (or "expected `a`",
        // "`a` or `b`", "there are no fields"); the path ends at the key.
        let key = match path.last() {
            Some(Seg::Key(k)) => k.clone(),
            _ => {
                let k = rest.split('`').next().unwrap_or("").to_string();
                path.push(Seg::Key(k.clone()));
                k
            }
        };
        let allowed: Vec<String> = rest
            .rsplit_once(", expected ")
            .map(|(_, l)| l.split('`').skip(1).step_by(2).map(String::from).collect())
            .unwrap_or_default();
        let refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
        p.suggestion = suggest(&key, &refs).map(String::from);
        p.message = if refs.is_empty() {
            "unknown key (this table takes none)".to_string()
        } else {
            format!(
                "unknown key{} (allowed here: {})",
                did_you_mean(&key, &refs),
                refs.join(", ")
            )
        };
        p.allowed = Some(allowed);
    } else if let Some(i) = path.iter().position(|s| *s == Seg::Key(DATETIME.into())) {
        // A date-time where a table was expected (`toml` hands it over as one).
        path.truncate(i);
        p.message = "expected a table, got a date-time".to_string();
    } else if let Some(k) = msg
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        path.push(Seg::Key(k.to_string()));
        p.message = "missing required key".to_string();
    }
    p.path = path;
    p
}

/// "invalid type: integer `5`, expected a table" → "expected a table, got
/// the integer 5" (likewise "invalid value", "invalid length"); any other
/// message as it is.
fn reword(msg: &str) -> String {
    let Some((what, rest)) = ["invalid type: ", "invalid value: ", "invalid length "]
        .iter()
        .find_map(|p| msg.strip_prefix(p).map(|r| (*p, r)))
    else {
        return msg.to_string();
    };
    let Some((got, want)) = rest.rsplit_once(", expected ") else {
        return msg.to_string();
    };
    let got = if what.starts_with("invalid length") {
        "an array".to_string()
    } else {
        unexpected(got)
    };
    let want = match want {
        "a map" => "a table",
        "a sequence" => "an array",
        w => w,
    };
    format!("expected {want}, got {got}")
}

/// serde's `Unexpected` as [`describe`] words it.
fn unexpected(u: &str) -> String {
    let quoted = |p: &str| u.strip_prefix(p).and_then(|v| v.strip_suffix('`'));
    if let Some(v) = quoted("integer `") {
        format!("the integer {v}")
    } else if let Some(v) = quoted("floating point `") {
        // As `describe` writes it (serde adds ".0", and writes NaN as "nan").
        match v.parse::<f64>() {
            Ok(x) => format!("the float {x}"),
            Err(_) => format!("the float {v}"),
        }
    } else if let Some(v) = quoted("boolean `") {
        format!("the boolean {v}")
    } else if let Some(s) = u.strip_prefix("string ") {
        format!("the string {}", clip(s, 42))
    } else if u == "sequence" {
        "an array".to_string()
    } else if u == "map" {
        "a table".to_string()
    } else {
        u.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    table! {
        #[allow(dead_code)]
        struct Outer("a table") { inner: Tables<Inner>, flag: Flag, tcp: TableOf<Inner> }
    }
    table! {
        #[allow(dead_code)]
        struct Inner("a table (an [[inner]] section)", section "inner") {
            rate: Rate, tcp: Strings, when: Text,
        }
    }

    #[test]
    fn suggestions_choices_and_positions() {
        let keys = ["name", "duration", "node", "link"];
        assert_eq!(suggest("durration", &keys), Some("duration"));
        assert_eq!(suggest("NODE", &keys), Some("node"));
        assert_eq!(suggest("zzzzzz", &keys), None);
        assert_eq!(suggest("x", &["a"]), None);
        assert_eq!(
            suggest("r3", &["h1", "r1", "r2"]),
            None,
            "a tie suggests nothing"
        );
        let want = "unknown estimator \"lniux\"; did you mean `linux`? (known: linux, bsd)";
        assert_eq!(
            choice("lniux", "estimator", &[("linux", 1), ("bsd", 2)]),
            Err(want.into())
        );
        assert_eq!(line_col("ab\ncµd", 6), (2, 3));
        assert_eq!(join("x", &[Seg::Key("a".into()), Seg::Index(2)]), "x.a[2]");
    }

    #[test]
    fn from_value_names_the_key_path_and_the_problem() {
        for (text, key, message) in [
            ("[[inner]]\nrate = \"1Mbit\"\n[[inner]]\nrat = 1", "inner[1].rat", "unknown key; did you mean `rate`? (allowed here: rate, tcp, when)"),
            ("[[inner]]\nrate = []", "inner[0].rate", "expected a rate such as \"10Mbit\" or \"1.5MB/s\", got an array"),
            ("[[inner]]\nrate = \"10 Mbti\"", "inner[0].rate", "invalid rate: `10 Mbti`: unknown rate unit `Mbti` (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)"),
            ("[[inner]]\nrate = \"1Mbit\"\ntcp = [\"a\", 3]", "inner[0].tcp[1]", "expected a string, got the integer 3"),
            ("[inner]\nrate = 1", "inner", "expected an array of tables: write [[inner]] (double brackets) for each entry, not [inner]"),
            ("inner = [1]", "inner[0]", "expected a table (an [[inner]] section), got the integer 1"),
            ("tcp = [\"1Mbit\"]", "tcp", "expected a table (an [[inner]] section), got an array"),
            ("tcp = 1979-05-27", "tcp", "expected a table, got a date-time"),
            ("[tcp]\nwhen = 1979-05-27", "tcp.when", "expected a string, got the date-time 1979-05-27"),
            ("flag = \"yes\"", "flag", "expected true or false, got the string \"yes\""),
        ] {
            let t = parse_toml(text, "f", |_, _| String::new()).unwrap();
            let p = from_value::<Outer>(toml::Value::Table(t)).unwrap_err();
            assert_eq!((join("", &p.path).as_str(), p.message.as_str()), (key, message));
        }
        assert!(has_field::<Inner>("tcp") && !has_field::<Inner>("sack"));
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let e = parse_toml("a = 1\nrate = 10Mbit\n", "f", |_, _| String::new()).unwrap_err();
        let want = "line 2, column 10: TOML syntax error: expected newline, `#` (quantities with \
                    units are strings: write rate = \"10Mbit\")\n     2 | rate = 10Mbit";
        assert_eq!((e.key.as_str(), e.message.as_str()), ("", want));
    }
}
