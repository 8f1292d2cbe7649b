//! Deserializers for the values both front-ends read. Each takes the TOML
//! value whole and words every mistake itself ("a rate needs a unit: write
//! \"10Mbit\" …"), which serde's derive cannot: the quantities accept a
//! string or a number and say which units fit, and the messages name the
//! value that was given. The parsers are `hopwise_proto::units`'.

use hopwise_proto::time::Dur;
use hopwise_proto::units::{self, parse_bytes, parse_duration, parse_rate};
use serde::de::{self, Deserialize, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;
use toml::Value;

/// "the integer 30", "the string \"x\"", "a table", … for "expected …, got …".
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {:?}", clip(s, 40)),
        Value::Integer(i) => format!("the integer {i}"),
        Value::Float(x) => format!("the float {x}"),
        Value::Boolean(b) => format!("the boolean {b}"),
        Value::Datetime(d) => format!("the date-time {d}"),
        Value::Array(_) => "an array".to_string(),
        Value::Table(_) => "a table".to_string(),
    }
}

/// Cuts a string for display, on a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// Implements `Deserialize` through `read(&Value)`.
macro_rules! from_value {
    ($($t:ty),*) => {$(
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <$t>::read(&Value::deserialize(d)?).map_err(de::Error::custom)
            }
        }
    )*};
}

from_value!(Rate, Duration, Size, QueueLimit, Loss, Fraction, Number, Flag, Name, Text);

/// A bit rate with a unit (`"10Mbit"`, `"1.5MB/s"`); zero is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate(pub units::Rate);

impl Rate {
    pub fn read(v: &Value) -> Result<Self, String> {
        let r = match v {
            Value::String(s) => parse_rate(s).map_err(|x| format!("invalid rate: {x}"))?,
            Value::Integer(_) | Value::Float(_) => {
                return Err(format!(
                    "a rate needs a unit: write \"{v}Mbit\", \"{v}kbit\" or \"{v}MB/s\" \
                     (a quoted string), not the bare number {v}"
                ))
            }
            other => {
                return Err(format!(
                    "expected a rate such as \"10Mbit\" or \"1.5MB/s\", got {}",
                    describe(other)
                ))
            }
        };
        match rate_problem(r) {
            Some(m) => Err(m),
            None => Ok(Rate(r)),
        }
    }
}

/// Why a rate cannot be used (zero), if it cannot.
pub fn rate_problem(r: units::Rate) -> Option<String> {
    (r.bps() == 0).then(|| "must be positive: a zero rate never sends".to_string())
}

/// A duration with a unit (`"100ms"`), and the text it was written as (for
/// messages that quote it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duration {
    pub value: Dur,
    pub text: String,
}

impl Duration {
    pub fn read(v: &Value) -> Result<Self, String> {
        match v {
            Value::String(s) => parse_duration(s)
                .map(|value| Duration {
                    value,
                    text: s.clone(),
                })
                .map_err(|x| format!("invalid duration: {x}")),
            Value::Integer(_) | Value::Float(_) => Err(format!(
                "a duration needs a unit: write \"{v}s\" or \"{v}ms\" (a quoted string), \
                 not the bare number {v}"
            )),
            other => Err(format!(
                "expected a duration such as \"100ms\" (units ns, us, ms, s, min, h), got {}",
                describe(other)
            )),
        }
    }
}

/// A byte count: a string with a unit (`"10MB"`, `"64KiB"`, `"30000B"`), or
/// a whole number of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl Size {
    pub fn read(v: &Value) -> Result<Self, String> {
        match v {
            Value::String(s) => parse_bytes(s)
                .map(|b| Size(b.get()))
                .map_err(|x| format!("invalid size: {x}")),
            Value::Integer(n) if *n >= 0 => Ok(Size(*n as u64)),
            Value::Integer(n) => Err(format!("must not be negative, got {n}")),
            Value::Float(x) if x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x < 1.8e19 => {
                Ok(Size(*x as u64))
            }
            other => Err(format!(
                "expected a size such as \"64kB\", \"10MB\" or a whole number of bytes, got {}",
                describe(other)
            )),
        }
    }
}

/// A queue limit: packets (`"100pkt"`) or bytes (`"30000B"`), with the unit
/// (a bare number is ambiguous); zero is refused. The default is Linux's
/// txqueuelen, 1000 packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
}

impl Default for QueueLimit {
    fn default() -> Self {
        QueueLimit::Packets(1000)
    }
}

impl QueueLimit {
    pub fn read(v: &Value) -> Result<Self, String> {
        let l = match v {
            Value::String(s) => QueueLimit::parse(s)?,
            Value::Integer(n) => {
                return Err(format!(
                    "a queue limit needs a unit: write \"{n}pkt\" for packets or \"{n}B\" for bytes"
                ))
            }
            other => {
                return Err(format!(
                    "expected a queue limit such as \"100pkt\" or \"30000B\", got {}",
                    describe(other)
                ))
            }
        };
        match l.problem() {
            Some(m) => Err(m),
            None => Ok(l),
        }
    }

    /// `"100pkt"` (also `pkts`, `packet`, `packets`; exponents if whole) or a
    /// byte size.
    pub fn parse(s: &str) -> Result<Self, String> {
        let t = s.trim();
        for suffix in ["packets", "packet", "pkts", "pkt"] {
            let Some(num) = t.strip_suffix(suffix) else {
                continue;
            };
            let digits: String = num.trim().chars().filter(|&c| c != '_').collect();
            if let Ok(n) = digits.parse::<u64>() {
                return Ok(QueueLimit::Packets(n));
            }
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(format!("`{s}`: the packet count is too large"));
            }
            return match digits.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 => {
                    if v >= u64::MAX as f64 {
                        Err(format!("`{s}`: the packet count is too large"))
                    } else {
                        Ok(QueueLimit::Packets(v as u64))
                    }
                }
                Ok(v) if v < 0.0 => Err(format!("`{s}`: the packet count is negative")),
                _ => Err(format!(
                    "`{s}`: the packet count must be a whole number, as in \"100pkt\""
                )),
            };
        }
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '_') {
            return Err(format!(
                "`{s}` is ambiguous: write \"{t}pkt\" for packets or \"{t}B\" for bytes"
            ));
        }
        match parse_bytes(t) {
            Ok(b) => Ok(QueueLimit::Bytes(b.get())),
            Err(x) => Err(format!(
                "`{s}` is neither a packet count (\"100pkt\") nor a byte size (\"30000B\", \"64kB\"): {x}"
            )),
        }
    }

    /// Why the limit cannot be used (zero), if it cannot.
    pub fn problem(self) -> Option<String> {
        matches!(self, QueueLimit::Packets(0) | QueueLimit::Bytes(0))
            .then(|| "a queue limit of 0 would drop every packet".to_string())
    }
}

/// A loss probability in [0, 1): a number, or a percentage (`"1%"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loss(pub f64);

impl Loss {
    pub fn read(v: &Value) -> Result<Self, String> {
        let x = number_or_percent(v, "a probability such as 0.01", "1%")?;
        match loss_problem(x) {
            Some(m) => Err(m),
            None => Ok(Loss(x)),
        }
    }
}

/// A fraction in (0, 1]: a number, or a percentage (`"10%"`), e.g. a bound
/// on a loss rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fraction(pub f64);

impl Fraction {
    pub fn read(v: &Value) -> Result<Self, String> {
        let x = number_or_percent(v, "a fraction such as 0.1", "10%")?;
        if x > 0.0 && x <= 1.0 {
            Ok(Fraction(x))
        } else {
            Err(format!(
                "must be a fraction in (0, 1] (0.1 or \"10%\" is a tenth), got {x}"
            ))
        }
    }
}

/// A number, or a percentage string (`"1%"` is 0.01), for [`Loss`] and
/// [`Fraction`]; `what` names the number, `pct` is an example percentage.
fn number_or_percent(v: &Value, what: &str, pct: &str) -> Result<f64, String> {
    let expected = format!("expected {what} or a percentage such as \"{pct}\"");
    match v {
        Value::String(s) => {
            let p = s
                .trim()
                .strip_suffix('%')
                .ok_or_else(|| format!("{expected}, got the string {s:?}"))?;
            let p: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("`{s}` is not a percentage such as \"{pct}\""))?;
            Ok(p / 100.0)
        }
        Value::Integer(_) | Value::Float(_) => Ok(Number::read(v)?.0),
        other => Err(format!("{expected}, got {}", describe(other))),
    }
}

/// Why a loss probability cannot be used (outside [0, 1)), if it cannot.
pub fn loss_problem(x: f64) -> Option<String> {
    (!(0.0..1.0).contains(&x)).then(|| {
        format!(
            "must be a probability in [0, 1) (0.01 drops 1 % of packets; a loss of 1 would \
             drop every packet, so no connection could come up), got {x}"
        )
    })
}

/// A finite number, integer or float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Number(pub f64);

impl Number {
    pub fn read(v: &Value) -> Result<Self, String> {
        match v {
            Value::Integer(n) => Ok(Number(*n as f64)),
            Value::Float(x) if x.is_finite() => Ok(Number(*x)),
            Value::Float(x) => Err(format!("expected a finite number, got {x}")),
            other => Err(format!("expected a number, got {}", describe(other))),
        }
    }
}

/// `true` or `false` (not a quoted "true").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag(pub bool);

impl Flag {
    pub fn read(v: &Value) -> Result<Self, String> {
        match v {
            Value::Boolean(b) => Ok(Flag(*b)),
            Value::String(s) if s == "true" || s == "false" => Err(format!(
                "expected a boolean, got the string \"{s}\" (write {s} without quotes)"
            )),
            other => Err(format!("expected true or false, got {}", describe(other))),
        }
    }
}

/// A name: a string with a visible character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name(pub String);

impl Name {
    pub fn read(v: &Value) -> Result<Self, String> {
        let Text(s) = Text::read(v)?;
        blank(&s).map_or(Ok(Name(s)), Err)
    }
}

/// A string (a date-time is not one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Text(pub String);

impl Text {
    pub fn read(v: &Value) -> Result<Self, String> {
        match v {
            Value::String(s) => Ok(Text(s.clone())),
            other => Err(format!("expected a string, got {}", describe(other))),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why `s` is no name (it has no visible character), if it is none.
pub fn blank(s: &str) -> Option<String> {
    s.trim()
        .is_empty()
        .then(|| format!("is empty ({s:?}); a name needs a visible character"))
}

/// A whole number from `LO` to `HI`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int<const LO: u64 = 0, const HI: u64 = { u64::MAX }>(pub u64);

impl<const LO: u64, const HI: u64> Int<LO, HI> {
    pub fn read(v: &Value) -> Result<Self, String> {
        let n = match v {
            Value::Integer(n) => *n,
            other => return Err(format!("expected a whole number, got {}", describe(other))),
        };
        let range = if HI == u64::MAX {
            format!("at least {LO}")
        } else {
            format!("{LO} to {HI}")
        };
        if n < 0 {
            return Err(match (LO, HI) {
                (0, u64::MAX) => format!("must not be negative, got {n}"),
                _ => format!("must not be negative (it must be {range}), got {n}"),
            });
        }
        match n as u64 {
            n if n < LO || n > HI => Err(format!("must be {range}, got {n}")),
            n => Ok(Int(n)),
        }
    }
}

impl<'de, const LO: u64, const HI: u64> Deserialize<'de> for Int<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::read(&Value::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// An array of strings; each is read at its own index (`capture[2]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strings(pub Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let want = "an array of strings";
        let v: Vec<Text> = array(d, want.into(), format!("expected {want}, got a table"))?;
        Ok(Strings(v.into_iter().map(|t| t.0).collect()))
    }
}

/// An array read element by element, each at its own index; a table is
/// refused with the message `table` (a date-time, which `toml` hands over
/// as a table, as such). `want` says what was expected.
fn array<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    want: String,
    table: String,
) -> Result<Vec<T>, D::Error> {
    struct V<T>(String, String, PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(&self.0)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::new();
            while let Some(t) = seq.next_element()? {
                out.push(t);
            }
            Ok(out)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
            Err(de::Error::custom(match map.next_key::<String>() {
                Ok(Some(k)) if k == DATETIME => format!("expected {}, got a date-time", self.0),
                _ => self.1,
            }))
        }
    }
    d.deserialize_seq(V(want, table, PhantomData))
}

/// Visitor methods that hand a value on to `T`, for its own message.
macro_rules! forward {
    ($($f:ident: $t:ty),*) => {$(
        fn $f<E: de::Error>(self, v: $t) -> Result<TableOf<T>, E> {
            T::deserialize(v.into_deserializer()).map(TableOf)
        }
    )*};
}

/// A table read into the struct `T`. serde's derive would also take an
/// array for a struct (its fields in order); here anything but a table is
/// refused, in `T`'s own words ("expected a table of TCP options, got an
/// array").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableOf<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TableOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = TableOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TableOf<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(TableOf)
            }
            // `T` has no fields to take from an empty array: it says what it expected.
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<TableOf<T>, A::Error> {
                let none = de::value::SeqDeserializer::new(std::iter::empty::<bool>());
                T::deserialize(none).map(TableOf)
            }
            forward!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
        }
        d.deserialize_map(V(PhantomData))
    }
}

impl<T> std::ops::Deref for TableOf<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// How `toml` hands a date-time to serde: a table with this one key.
pub(crate) const DATETIME: &str = "$__toml_private_datetime";

/// The name of the sections an array of tables holds (`node` for `[[node]]`).
pub trait Section {
    const NAME: &'static str;
}

/// An array of tables (`[[node]]` sections); each is read at its own index.
/// A single `[node]` table is refused with the fix.
#[derive(Clone, Debug, PartialEq)]
pub struct Tables<T>(pub Vec<T>);

impl<T> Default for Tables<T> {
    fn default() -> Self {
        Tables(Vec::new())
    }
}

impl<'de, T: Deserialize<'de> + Section> Deserialize<'de> for Tables<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let single = format!(
            "expected an array of tables: write [[{0}]] (double brackets) for each entry, \
             not [{0}]",
            T::NAME
        );
        let v: Vec<TableOf<T>> = array(d, format!("an array of [[{}]] tables", T::NAME), single)?;
        Ok(Tables(v.into_iter().map(|t| t.0).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        use QueueLimit::*;
        let p = QueueLimit::parse;
        assert_eq!(p("100pkt"), Ok(Packets(100)));
        assert_eq!(p("1_000 packets"), Ok(Packets(1000)));
        assert_eq!(p("64kB"), Ok(Bytes(64_000)));
        assert!(p("100").unwrap_err().contains("ambiguous"));
        assert!(p("1.5pkt").unwrap_err().contains("whole number"));
        assert!(p("-5pkt").unwrap_err().contains("negative"));
        assert!(p("-1.5pkt").unwrap_err().contains("negative"));
        assert_eq!(p("1e2pkt"), Ok(Packets(100)));
        assert!(p("1.5e0pkt").unwrap_err().contains("whole number"));
        assert!(p("99999999999999999999pkt")
            .unwrap_err()
            .contains("too large"));
        assert!(p("1e30pkt").unwrap_err().contains("too large"));
    }

    #[test]
    fn quantities_word_their_mistakes() {
        let s = |x: &str| Value::String(x.into());
        let int = Value::Integer;
        for (got, phrase) in [
            (Rate::read(&s("10 Mbti")).err(), "unknown rate unit `Mbti`"),
            (Rate::read(&int(10)).err(), "\"10Mbit\""),
            (Rate::read(&s("0bit")).err(), "must be positive"),
            (Duration::read(&int(8)).err(), "\"8ms\""),
            (Loss::read(&Value::Float(1.0)).err(), "[0, 1)"),
            (Flag::read(&s("true")).err(), "without quotes"),
            (Name::read(&s(" ")).err(), "is empty"),
            (Int::<1, 9>::read(&int(0)).err(), "must be 1 to 9, got 0"),
            (
                Int::<1, 9>::read(&int(-1)).err(),
                "negative (it must be 1 to 9)",
            ),
            (Int::<1>::read(&int(0)).err(), "must be at least 1, got 0"),
            (Int::<0, 9>::read(&s("x")).err(), "expected a whole number"),
        ] {
            let m = got.unwrap_or_default();
            assert!(m.contains(phrase), "{m:?} lacks {phrase:?}");
        }
        assert_eq!(Duration::read(&s("2min")).unwrap().text, "2min");
        assert_eq!(Size::read(&Value::Float(3e3)), Ok(Size(3000)));
        assert_eq!(Loss::read(&s("1%")), Ok(Loss(0.01)));
        assert_eq!(Fraction::read(&s("10%")), Ok(Fraction(0.1)));
        assert_eq!(Fraction::read(&Value::Float(0.02)), Ok(Fraction(0.02)));
        assert_eq!(Fraction::read(&Value::Integer(1)), Ok(Fraction(1.0)));
        for bad in [Value::Float(0.0), Value::Float(1.5), s("150%")] {
            assert!(
                Fraction::read(&bad).unwrap_err().contains("(0, 1]"),
                "{bad:?}"
            );
        }
        assert!(Fraction::read(&s("ten")).unwrap_err().contains("10%"));
    }
}
