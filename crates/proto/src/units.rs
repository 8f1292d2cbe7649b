//! Unit types: byte counts and bit rates, plus parsers for human-written
//! quantities ("2.4Mbit", "30000B", "20ms") used by configs and scenarios.

use crate::time::Dur;
use std::fmt;

/// A number of bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const fn new(n: u64) -> Self {
        Bytes(n)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

/// A bit rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Rate(u64);

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn from_kbps(k: u64) -> Self {
        Rate(k * 1_000)
    }
    pub const fn from_mbps(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    /// Bytes per second to a bit rate.
    pub const fn from_bytes_per_sec(b: u64) -> Self {
        Rate(b * 8)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// Serialisation time of `bytes` at this rate, rounded up to the next
    /// nanosecond so that a link never exceeds its rate. A zero rate means
    /// "infinitely fast" and gives zero.
    pub fn tx_time(self, bytes: u64) -> Dur {
        if self.0 == 0 {
            return Dur::ZERO;
        }
        // The same quotient in 64 bits whenever the numerator fits (any
        // packet): a 128-bit division is a library call on the hot path.
        if let Some(num) = bytes.checked_mul(8 * 1_000_000_000) {
            return Dur::from_nanos(num.div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * 1_000_000_000;
        let d = num.div_ceil(self.0 as u128);
        Dur::from_nanos(d.min(u64::MAX as u128) as u64)
    }
    /// Bytes that can be sent in `d` at this rate (rounded down).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.0 as u128 * d.as_nanos() as u128 / 8_000_000_000) as u64
    }
    /// Scale by a factor, e.g. a 0.95 throttle.
    pub fn scale(self, f: f64) -> Rate {
        Rate((self.0 as f64 * f).round().max(0.0) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000_000 && b.is_multiple_of(1_000_000) {
            write!(f, "{}Gbit", b as f64 / 1e9)
        } else if b >= 1_000_000 && b.is_multiple_of(1_000) {
            write!(f, "{}Mbit", b as f64 / 1e6)
        } else if b >= 1_000 {
            write!(f, "{}kbit", b as f64 / 1e3)
        } else {
            write!(f, "{}bit", b)
        }
    }
}

/// Why a quantity did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ParseError {}

fn split_number(s: &str) -> Result<(f64, &str), ParseError> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == '_')
        })
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // 'e' is ambiguous with a unit starting with e; none of ours do.
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let v: f64 = num
        .parse()
        .map_err(|_| ParseError(format!("`{s}` does not start with a number")))?;
    if !v.is_finite() {
        return Err(ParseError(format!("`{s}` is not a finite number")));
    }
    if v < 0.0 {
        return Err(ParseError(format!("`{s}` is negative")));
    }
    Ok((v, unit.trim()))
}

/// Parses a duration such as `20ms`, `1.5s`, `250us`, `100ns`, `2min`.
/// A bare number is rejected: units are required.
pub fn parse_duration(s: &str) -> Result<Dur, ParseError> {
    let (v, unit) = split_number(s)?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "" => {
            return Err(ParseError(format!(
                "a duration needs a unit, and `{s}` has no unit: write `{s}ms` or `{s}s` \
                 (units ns, us, ms, s, min, h)"
            )))
        }
        u => {
            return Err(ParseError(format!(
                "`{s}`: unknown time unit `{u}` (use ns, us, ms, s, min)"
            )))
        }
    };
    if v * scale * 1e9 >= u64::MAX as f64 {
        return Err(ParseError(format!(
            "`{s}` is too large (durations go up to about 584 years)"
        )));
    }
    Ok(Dur::from_secs_f64(v * scale))
}

/// Parses a bit rate: `10Mbit`, `2.4Mbps`, `196kbit/s`, `1Gbit`, `800bps`, or
/// a byte rate `1.5MB/s`, `500kB/s` (decimal prefixes, as networking uses).
pub fn parse_rate(s: &str) -> Result<Rate, ParseError> {
    let (v, unit) = split_number(s)?;
    if unit.is_empty() {
        let s = s.trim();
        return Err(ParseError(format!(
            "a rate needs a unit, and `{s}` has none: write `{s}Mbit`, `{s}kbit` or `{s}MB/s`"
        )));
    }
    let u = unit.trim_end_matches("/s").trim_end_matches("ps");
    let (prefix, base) = if let Some(p) = u.strip_suffix("bit") {
        (p, 1.0)
    } else if let Some(p) = u.strip_suffix('b') {
        (p, 1.0)
    } else if let Some(p) = u.strip_suffix('B') {
        if !unit.ends_with("/s") && !unit.ends_with("Bps") {
            return Err(ParseError(format!(
                "`{s}`: a byte rate needs `/s` (e.g. `1.5MB/s`); for bits write `Mbit`"
            )));
        }
        (p, 8.0)
    } else {
        return Err(ParseError(format!(
            "`{s}`: unknown rate unit `{unit}` (use bit/kbit/Mbit/Gbit, or kB/s, MB/s)"
        )));
    };
    let mult = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        p => {
            return Err(ParseError(format!(
                "`{s}`: unknown prefix `{p}` (use k, M, G)"
            )))
        }
    };
    let bps = v * base * mult;
    if bps > u64::MAX as f64 {
        return Err(ParseError(format!("`{s}` is too large")));
    }
    if bps > 0.0 && bps < 1.0 {
        return Err(ParseError(format!(
            "`{s}` is below 1 bit/s, the smallest rate"
        )));
    }
    Ok(Rate::from_bps(bps.round() as u64))
}

/// Parses a byte size: `30000B`, `30000`, `64kB`, `1.5MB`, `256KiB`, `1MiB`.
/// Decimal prefixes for kB/MB/GB, binary for KiB/MiB/GiB. A bare number is bytes.
pub fn parse_bytes(s: &str) -> Result<Bytes, ParseError> {
    let (v, unit) = split_number(s)?;
    let mult = match unit {
        "" | "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        u => {
            return Err(ParseError(format!(
                "`{s}`: unknown size unit `{u}` (use B, kB, MB, GB, KiB, MiB, GiB)"
            )))
        }
    };
    let b = v * mult;
    if b > u64::MAX as f64 {
        return Err(ParseError(format!("`{s}` is too large")));
    }
    Ok(Bytes(b.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_rounds_up() {
        let r = Rate::from_mbps(10);
        assert_eq!(r.tx_time(1500), Dur::from_micros(1200));
        assert_eq!(Rate::from_bps(3).tx_time(1), Dur::from_nanos(2_666_666_667));
        assert_eq!(Rate::from_bps(0).tx_time(1500), Dur::ZERO);
        assert_eq!(r.bytes_in(Dur::SECOND), 1_250_000);
    }

    #[test]
    fn tx_time_is_the_same_on_both_sides_of_the_64_bit_path() {
        let exact = |r: u64, b: u64| (b as u128 * 8_000_000_000).div_ceil(r as u128);
        let edge = u64::MAX / 8_000_000_000;
        for r in [1, 3, 7_919, 10_000_000, 99_999_989, u64::MAX] {
            for b in [0, 1, 1499, 1500, 65_537, edge - 1, edge, edge + 1, edge * 2] {
                let want = exact(r, b).min(u64::MAX as u128) as u64;
                assert_eq!(
                    Rate::from_bps(r).tx_time(b).as_nanos(),
                    want,
                    "{b} B at {r} bit/s"
                );
            }
        }
    }

    #[test]
    fn parses_quantities() {
        assert_eq!(parse_duration("20ms").unwrap(), Dur::from_millis(20));
        assert_eq!(parse_duration("1.5s").unwrap(), Dur::from_millis(1500));
        assert_eq!(parse_duration("2min").unwrap(), Dur::from_secs(120));
        assert!(parse_duration("20").is_err());
        assert!(parse_duration("-1s").unwrap_err().0.contains("negative"));
        assert!(parse_duration("3 fortnights").is_err());
        assert!(parse_duration("1e30s").unwrap_err().0.contains("too large"));
        assert!(parse_duration("1e20s").unwrap_err().0.contains("too large"));
        assert_eq!(
            parse_duration("100000h").unwrap(),
            Dur::from_secs(360_000_000)
        );
        assert!(parse_rate("0.5bit")
            .unwrap_err()
            .0
            .contains("below 1 bit/s"));
        assert_eq!(parse_rate("0bit").unwrap().bps(), 0);
        assert_eq!(parse_rate("2.4Mbit").unwrap().bps(), 2_400_000);
        assert_eq!(parse_rate("196kbit/s").unwrap().bps(), 196_000);
        assert_eq!(parse_rate("10Mbps").unwrap().bps(), 10_000_000);
        assert_eq!(parse_rate("1.5MB/s").unwrap().bps(), 12_000_000);
        assert!(parse_rate("10MB").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(parse_bytes("30000B").unwrap().0, 30_000);
        assert_eq!(parse_bytes("64kB").unwrap().0, 64_000);
        assert_eq!(parse_bytes("1MiB").unwrap().0, 1 << 20);
        assert!(parse_bytes("3 apples").is_err());
    }
}
