//! Simulated and real time as integer nanoseconds.
//!
//! Protocol code never reads a clock. Callers pass `now: Time` into every
//! entry point; the simulator advances it from its event queue and the real
//! daemon derives it from a monotonic clock at the edge.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// A point in time: nanoseconds since an arbitrary epoch (the start of a
/// simulation, or the start of a daemon).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

/// A length of time in nanoseconds. Never negative: subtracting a later time
/// from an earlier one saturates at zero (use [`Time::checked_since`] to tell).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(u64);

impl Time {
    /// The epoch.
    pub const ZERO: Time = Time(0);
    /// A time later than any real event; useful as "never".
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Time(ns)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Time(Dur::from_secs_f64(s).0)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed since `earlier`, saturating at zero.
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// Time elapsed since `earlier`, or `None` if `earlier` is later.
    pub fn checked_since(self, earlier: Time) -> Option<Dur> {
        self.0.checked_sub(earlier.0).map(Dur)
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);
    pub const NANOSECOND: Dur = Dur(1);
    pub const MICROSECOND: Dur = Dur(1_000);
    pub const MILLISECOND: Dur = Dur(1_000_000);
    pub const SECOND: Dur = Dur(1_000_000_000);

    pub const fn from_nanos(ns: u64) -> Self {
        Dur(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Dur(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Dur(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Dur(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Dur(0)
        } else if s >= u64::MAX as f64 * 1e-9 {
            Dur(u64::MAX)
        } else {
            Dur((s * 1e9).round() as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn saturating_sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
    pub fn mul_f64(self, f: f64) -> Dur {
        Dur::from_secs_f64(self.as_secs_f64() * f)
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        *self = *self + d;
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    /// Saturating: `earlier - later` is zero.
    fn sub(self, o: Time) -> Dur {
        self.since(o)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, o: Dur) -> Dur {
        Dur(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, o: Dur) {
        *self = *self + o;
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
}
impl SubAssign for Dur {
    fn sub_assign(&mut self, o: Dur) {
        *self = *self - o;
    }
}
impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}
impl Div<u64> for Dur {
    type Output = Dur;
    fn div(self, k: u64) -> Dur {
        Dur(self.0 / k.max(1))
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.9}s", self.as_secs_f64())
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Dur {
    /// Human-readable, parseable by [`crate::units::parse_duration`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            write!(f, "0s")
        } else if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Time::from_nanos(5);
        assert_eq!(t - Time::from_nanos(9), Dur::ZERO);
        assert_eq!(Time::MAX + Dur::SECOND, Time::MAX);
        assert_eq!(t.checked_since(Time::from_nanos(9)), None);
        assert_eq!((Dur::from_millis(3) * 2).as_micros(), 6000);
    }

    #[test]
    fn secs_f64_round_trip() {
        assert_eq!(Dur::from_secs_f64(0.0015), Dur::from_micros(1500));
        assert_eq!(Dur::from_secs_f64(-1.0), Dur::ZERO);
        assert_eq!(Dur::from_secs_f64(f64::NAN), Dur::ZERO);
        assert_eq!(format!("{}", Dur::from_millis(1500)), "1500ms");
        assert_eq!(format!("{}", Dur::from_secs(2)), "2s");
    }
}
