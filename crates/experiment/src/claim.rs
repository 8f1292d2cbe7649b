//! Claims: what a paper says, what we measured, and a verdict whose
//! criterion is written by the check that decides it.
//!
//! A [`Claim`] is built from its figure and its words, then given checks:
//!
//! ```
//! use hopwise_experiment::{Claim, Estimate, Verdict};
//! let shares = [0.71, 0.69, 0.72, 0.70, 0.68];
//! let c = Claim::new("Fig. 4", "NewReno keeps most of the link")
//!     .measured("NewReno's share against ten LEDBAT flows")
//!     .at_least("NewReno's share", Estimate::mean_t90(&shares), 0.7);
//! assert_eq!(c.criterion.as_deref(), Some("NewReno's share ≥ 0.7"));
//! assert_eq!(c.verdict, Verdict::Inconclusive);
//! ```
//!
//! The criterion text comes from the same threshold the check compares
//! with, so the two can never disagree. A value from one deterministic run
//! is an exact [`Estimate`] and gets *holds* or *differs*; a value judged
//! over seeds or runs carries its 90 % interval, and the verdict is
//! *holds* when the whole interval meets the criterion, *differs* when the
//! whole interval misses it, and *inconclusive* when it straddles the
//! threshold.

use crate::stats::mean_ci90;
use serde::Serialize;

/// Whether a measurement supports a paper's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The measurement meets the criterion (its whole interval, where it
    /// has one).
    Holds,
    /// It misses the criterion (its whole interval, where it has one).
    Differs,
    /// The interval straddles the threshold: more seeds or runs could
    /// decide it either way.
    Inconclusive,
    /// Reported for comparison only; no criterion.
    Info,
}

impl Verdict {
    /// The word the tables and pages show.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Differs => "differs",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Info => "info",
        }
    }

    /// Both must hold: a miss decides, then an open question.
    fn and(self, other: Verdict) -> Verdict {
        use Verdict::*;
        match (self, other) {
            (Info, v) | (v, Info) => v,
            (Differs, _) | (_, Differs) => Differs,
            (Inconclusive, _) | (_, Inconclusive) => Inconclusive,
            (Holds, Holds) => Holds,
        }
    }
}

/// How an interval was obtained.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum Interval {
    /// Student's t over `n` independent seeds or runs (the mean's interval).
    T { n: usize },
    /// Percentile bootstrap over `n` runs (paired where the statistic
    /// compares runs that share a seed).
    Bootstrap { n: usize },
}

impl Interval {
    fn describe(&self) -> String {
        match self {
            Interval::T { n } => format!("t, n = {n}"),
            Interval::Bootstrap { n } => format!("bootstrap, n = {n}"),
        }
    }
}

/// A measured value and, when it comes from several seeds or runs, its
/// 90 % interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// NaN when there was nothing to measure (`null` in summary.json).
    pub value: f64,
    /// The 90 % interval `[lo, hi]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci90: Option<[f64; 2]>,
    #[serde(flatten)]
    pub interval: Option<Interval>,
}

impl Estimate {
    /// A value from one deterministic run (or an exact count): no interval.
    pub fn exact(value: f64) -> Estimate {
        Estimate {
            value,
            ci90: None,
            interval: None,
        }
    }

    /// The mean over seeds with its t interval; exact for a single seed.
    /// A seed without a value (NaN) is left out, and n counts the rest.
    pub fn mean_t90(samples: &[f64]) -> Estimate {
        let kept: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        let (m, hw) = mean_ci90(&kept);
        if kept.len() < 2 {
            return Estimate::exact(m);
        }
        Estimate {
            value: m,
            ci90: Some([m - hw, m + hw]),
            interval: Some(Interval::T { n: kept.len() }),
        }
    }

    /// A point value with a bootstrap interval over `n` runs
    /// ([`crate::stats::bootstrap_ci90`]). An interval that could not be
    /// computed (NaN bounds: no resample gave a finite value) stays NaN, and
    /// a check of it is inconclusive rather than decided.
    pub fn bootstrap(value: f64, (lo, hi): (f64, f64), n: usize) -> Estimate {
        Estimate {
            value,
            ci90: Some([lo, hi]),
            interval: Some(Interval::Bootstrap { n }),
        }
    }

    /// A statistic of `n` independent units (runs, seeds): its value over
    /// all of them, with the percentile-bootstrap interval of
    /// [`crate::stats::bootstrap_ci90`] (stream `name`,
    /// [`crate::stats::RESAMPLES`] resamples). `stat` gets the indices of
    /// the units it is computed over. Exact for a single unit.
    pub fn resampled(name: &str, n: usize, stat: impl Fn(&[usize]) -> f64) -> Estimate {
        let all: Vec<usize> = (0..n).collect();
        Estimate::resampled_at(stat(&all), name, n, stat)
    }

    /// [`Estimate::resampled`] for a value computed elsewhere (a fit over
    /// the mean series, say), with the interval of `stat` over resamples
    /// of the `n` units.
    pub fn resampled_at(
        value: f64,
        name: &str,
        n: usize,
        stat: impl Fn(&[usize]) -> f64,
    ) -> Estimate {
        if n < 2 {
            return Estimate::exact(value);
        }
        let ci = crate::stats::bootstrap_ci90(n, crate::stats::RESAMPLES, name, stat);
        Estimate::bootstrap(value, ci, n)
    }

    /// The ratio of two means over the same seeds, `mean(num) / mean(den)`,
    /// with a paired bootstrap interval ([`Estimate::resampled`]): a
    /// resample draws seeds, and both means take the same ones. A seed
    /// missing either value (NaN) is left out of both.
    pub fn ratio_of_means(name: &str, num: &[f64], den: &[f64]) -> Estimate {
        let pairs: Vec<(f64, f64)> = num
            .iter()
            .zip(den)
            .filter(|(a, b)| !a.is_nan() && !b.is_nan())
            .map(|(&a, &b)| (a, b))
            .collect();
        Estimate::resampled(name, pairs.len(), |idx| {
            let (a, b) = idx
                .iter()
                .fold((0.0, 0.0), |(a, b), &i| (a + pairs[i].0, b + pairs[i].1));
            a / b
        })
    }

    /// The value and its interval times `k` (a unit, or a ratio to a model).
    pub fn times(mut self, k: f64) -> Estimate {
        self.value *= k;
        if let Some([lo, hi]) = self.ci90 {
            let (a, b) = (lo * k, hi * k);
            self.ci90 = Some([a.min(b), a.max(b)]);
        }
        self
    }

    /// The interval, or the point twice.
    fn range(&self) -> (f64, f64) {
        match self.ci90 {
            Some([lo, hi]) => (lo, hi),
            None => (self.value, self.value),
        }
    }

    /// `0.686 (90 %: 0.66-0.71, t over 5 seeds)`, or the value alone.
    pub fn describe(&self) -> String {
        if self.value.is_nan() {
            return "no value".into();
        }
        match (&self.ci90, &self.interval) {
            (Some([lo, hi]), Some(how)) => format!(
                "{} (90 %: {}–{}, {})",
                sig3(self.value),
                sig3(*lo),
                sig3(*hi),
                how.describe()
            ),
            _ => sig3(self.value),
        }
    }
}

impl From<f64> for Estimate {
    fn from(v: f64) -> Estimate {
        Estimate::exact(v)
    }
}

impl From<u64> for Estimate {
    fn from(v: u64) -> Estimate {
        Estimate::exact(v as f64)
    }
}

impl From<usize> for Estimate {
    fn from(v: usize) -> Estimate {
        Estimate::exact(v as f64)
    }
}

/// What a check compares its values with.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    /// ≥ the bound.
    AtLeast(f64),
    /// ≤ the bound.
    AtMost(f64),
    /// > the bound.
    Above(f64),
    /// < the bound.
    Below(f64),
    /// In `[lo, hi]`.
    Between(f64, f64),
    /// Within `rel` (a fraction) of `target`: `|v / target − 1| ≤ rel`.
    Within { target: f64, rel: f64 },
    /// The values rise from each item to the next.
    Increasing,
    /// The values fall from each item to the next.
    Decreasing,
    /// A fact that is true (value 1) or not (value 0).
    True,
}

/// One value a check judges, with a label when the check judges several.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub estimate: Estimate,
}

/// One criterion of a claim: a subject, its value or values, and the
/// comparison, rendered into [`Check::criterion`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub subject: String,
    pub items: Vec<Item>,
    pub cmp: Cmp,
    pub criterion: String,
    pub verdict: Verdict,
}

/// A number with three significant digits (`0.686`, `12.3`, `1450`), NaN as `-`.
pub fn sig3(x: f64) -> String {
    crate::sig(x, 3)
}

/// A threshold as written: the shortest form that reads back the same, or
/// six significant digits where that is longer (a bound computed from a
/// model, say).
fn num(x: f64) -> String {
    let short = format!("{x}");
    if short.chars().filter(char::is_ascii_digit).count() <= 6 {
        short
    } else {
        crate::sig(x, 6)
    }
}

/// One value against a one-sided or two-sided bound.
fn judge(e: &Estimate, cmp: &Cmp) -> Verdict {
    if e.value.is_nan() {
        return Verdict::Differs;
    }
    let (lo, hi) = e.range();
    if lo.is_nan() || hi.is_nan() {
        return Verdict::Inconclusive;
    }
    // The value may lie outside a percentile interval (or one computed
    // for a value found elsewhere): judge the span of both.
    let (lo, hi) = (lo.min(e.value), hi.max(e.value));
    // Whether every / no value of the interval meets it.
    let (all, none) = match *cmp {
        Cmp::AtLeast(t) => (lo >= t, hi < t),
        Cmp::AtMost(t) => (hi <= t, lo > t),
        Cmp::Above(t) => (lo > t, hi <= t),
        Cmp::Below(t) => (hi < t, lo >= t),
        Cmp::Between(a, b) => (lo >= a && hi <= b, hi < a || lo > b),
        Cmp::Within { target, rel } => {
            let (a, b) = band(target, rel);
            (lo >= a && hi <= b, hi < a || lo > b)
        }
        Cmp::True => (lo > 0.5, hi <= 0.5),
        Cmp::Increasing | Cmp::Decreasing => unreachable!("judged pairwise"),
    };
    if all {
        Verdict::Holds
    } else if none {
        Verdict::Differs
    } else {
        Verdict::Inconclusive
    }
}

/// `[target·(1 − rel), target·(1 + rel)]`, ordered for a negative target.
fn band(target: f64, rel: f64) -> (f64, f64) {
    let (a, b) = (target * (1.0 - rel), target * (1.0 + rel));
    (a.min(b), a.max(b))
}

/// `a` before `b` in a rising (or, with `rising` false, falling) order.
fn judge_pair(a: &Estimate, b: &Estimate, rising: bool) -> Verdict {
    if a.value.is_nan() || b.value.is_nan() {
        return Verdict::Differs;
    }
    let ((alo, ahi), (blo, bhi)) = (a.range(), b.range());
    if [alo, ahi, blo, bhi].iter().any(|x| x.is_nan()) {
        return Verdict::Inconclusive;
    }
    let (alo, ahi) = (alo.min(a.value), ahi.max(a.value));
    let (blo, bhi) = (blo.min(b.value), bhi.max(b.value));
    let (ordered, reversed) = if rising {
        (ahi < blo, bhi <= alo)
    } else {
        (alo > bhi, blo >= ahi)
    };
    if ordered {
        Verdict::Holds
    } else if reversed {
        Verdict::Differs
    } else {
        Verdict::Inconclusive
    }
}

impl Check {
    /// A check of one value.
    pub fn one(subject: impl Into<String>, value: impl Into<Estimate>, cmp: Cmp) -> Check {
        Check::build(
            subject.into(),
            vec![Item {
                label: None,
                estimate: value.into(),
            }],
            cmp,
        )
    }

    /// A check that every labelled value meets `cmp` (or, for
    /// [`Cmp::Increasing`] and [`Cmp::Decreasing`], that they are in order).
    pub fn each<L: Into<String>, E: Into<Estimate>>(
        subject: impl Into<String>,
        items: impl IntoIterator<Item = (L, E)>,
        cmp: Cmp,
    ) -> Check {
        let items = items
            .into_iter()
            .map(|(l, e)| Item {
                label: Some(l.into()),
                estimate: e.into(),
            })
            .collect();
        Check::build(subject.into(), items, cmp)
    }

    fn build(subject: String, items: Vec<Item>, cmp: Cmp) -> Check {
        match cmp {
            Cmp::Between(a, b) => debug_assert!(a <= b, "between({a}, {b}): empty range"),
            Cmp::Within { target, rel } => {
                debug_assert!(rel >= 0.0 && target != 0.0, "within ±{rel} of {target}")
            }
            _ => {}
        }
        let verdict = match cmp {
            // An order needs two values to say anything.
            Cmp::Increasing | Cmp::Decreasing if items.len() < 2 => Verdict::Differs,
            Cmp::Increasing | Cmp::Decreasing => {
                let rising = cmp == Cmp::Increasing;
                items
                    .windows(2)
                    .map(|w| judge_pair(&w[0].estimate, &w[1].estimate, rising))
                    .fold(Verdict::Holds, Verdict::and)
            }
            _ if items.is_empty() => Verdict::Differs,
            _ => items
                .iter()
                .map(|i| judge(&i.estimate, &cmp))
                .fold(Verdict::Holds, Verdict::and),
        };
        let criterion = criterion(&subject, &items, &cmp);
        Check {
            subject,
            items,
            cmp,
            criterion,
            verdict,
        }
    }

    /// `subject = value (interval)`, one per item.
    pub fn values(&self) -> String {
        let one = |i: &Item| match &i.label {
            Some(l) => format!("{l} {}", i.estimate.describe()),
            None => i.estimate.describe(),
        };
        if self.cmp == Cmp::True {
            return self.subject.clone();
        }
        match self.items.as_slice() {
            [i] if i.label.is_none() => format!("{} = {}", self.subject, one(i)),
            items => format!(
                "{}: {}",
                self.subject,
                items.iter().map(one).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

fn criterion(subject: &str, items: &[Item], cmp: &Cmp) -> String {
    let bound = match *cmp {
        Cmp::AtLeast(t) => format!("≥ {}", num(t)),
        Cmp::AtMost(t) => format!("≤ {}", num(t)),
        Cmp::Above(t) => format!("> {}", num(t)),
        Cmp::Below(t) => format!("< {}", num(t)),
        Cmp::Between(a, b) => format!("in [{}, {}]", num(a), num(b)),
        Cmp::Within { target, rel } => {
            format!("within ±{} % of {}", num(100.0 * rel), num(target))
        }
        Cmp::Increasing | Cmp::Decreasing => {
            let sign = if *cmp == Cmp::Increasing {
                " < "
            } else {
                " > "
            };
            let labels: Vec<&str> = items
                .iter()
                .map(|i| i.label.as_deref().unwrap_or("?"))
                .collect();
            return format!("{subject}: {}", labels.join(sign));
        }
        Cmp::True => return subject.to_string(),
    };
    match items {
        [i] if i.label.is_none() => format!("{subject} {bound}"),
        _ => format!("{subject} {bound} (each of {})", items.len()),
    }
}

/// One line of the claim-versus-measurement table.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// Where the claim comes from, e.g. "Fig. 4".
    pub figure: String,
    /// What the paper says, in words.
    pub claim: String,
    /// What we measured, with numbers.
    pub measured: String,
    pub verdict: Verdict,
    /// A parameter that the paper does not give and that we fitted so that
    /// this claim's level is met (the verdict then says little about the
    /// model): which one, and to what.
    pub calibrated: Option<String>,
    /// The checks' criteria, `; `-separated (all must hold); `None` for
    /// information.
    pub criterion: Option<String>,
    pub checks: Vec<Check>,
}

impl Claim {
    /// A claim with no check yet: information until one is added.
    pub fn new(figure: impl Into<String>, claim: impl Into<String>) -> Claim {
        Claim {
            figure: figure.into(),
            claim: claim.into(),
            measured: String::new(),
            verdict: Verdict::Info,
            calibrated: None,
            criterion: None,
            checks: Vec::new(),
        }
    }

    /// A claim reported for comparison only.
    pub fn info(
        figure: impl Into<String>,
        claim: impl Into<String>,
        measured: impl Into<String>,
    ) -> Claim {
        Claim::new(figure, claim).measured(measured)
    }

    /// What we measured, in words (the checks add their values).
    pub fn measured(mut self, text: impl Into<String>) -> Claim {
        self.measured = text.into();
        self
    }

    /// Adds a check: the verdict is that of all checks together (a miss
    /// decides, then an open question).
    pub fn check(mut self, c: Check) -> Claim {
        let first = self.checks.is_empty();
        self.verdict = if first {
            c.verdict
        } else {
            self.verdict.and(c.verdict)
        };
        self.criterion = Some(match self.criterion.take() {
            None => c.criterion.clone(),
            Some(s) => format!("{s}; {}", c.criterion),
        });
        self.checks.push(c);
        self
    }

    pub fn at_least(self, subject: impl Into<String>, v: impl Into<Estimate>, t: f64) -> Claim {
        self.check(Check::one(subject, v, Cmp::AtLeast(t)))
    }
    pub fn at_most(self, subject: impl Into<String>, v: impl Into<Estimate>, t: f64) -> Claim {
        self.check(Check::one(subject, v, Cmp::AtMost(t)))
    }
    pub fn above(self, subject: impl Into<String>, v: impl Into<Estimate>, t: f64) -> Claim {
        self.check(Check::one(subject, v, Cmp::Above(t)))
    }
    pub fn below(self, subject: impl Into<String>, v: impl Into<Estimate>, t: f64) -> Claim {
        self.check(Check::one(subject, v, Cmp::Below(t)))
    }
    pub fn between(
        self,
        subject: impl Into<String>,
        v: impl Into<Estimate>,
        lo: f64,
        hi: f64,
    ) -> Claim {
        self.check(Check::one(subject, v, Cmp::Between(lo, hi)))
    }
    /// `|v / target − 1| ≤ rel`.
    pub fn within(
        self,
        subject: impl Into<String>,
        v: impl Into<Estimate>,
        target: f64,
        rel: f64,
    ) -> Claim {
        self.check(Check::one(subject, v, Cmp::Within { target, rel }))
    }
    /// Every labelled value meets `cmp`.
    pub fn each<L: Into<String>, E: Into<Estimate>>(
        self,
        subject: impl Into<String>,
        items: impl IntoIterator<Item = (L, E)>,
        cmp: Cmp,
    ) -> Claim {
        self.check(Check::each(subject, items, cmp))
    }
    /// The labelled values rise in the order given.
    pub fn increasing<L: Into<String>, E: Into<Estimate>>(
        self,
        subject: impl Into<String>,
        items: impl IntoIterator<Item = (L, E)>,
    ) -> Claim {
        self.check(Check::each(subject, items, Cmp::Increasing))
    }
    /// The labelled values fall in the order given.
    pub fn decreasing<L: Into<String>, E: Into<Estimate>>(
        self,
        subject: impl Into<String>,
        items: impl IntoIterator<Item = (L, E)>,
    ) -> Claim {
        self.check(Check::each(subject, items, Cmp::Decreasing))
    }
    /// A condition that is not a number (a transfer completed, an order
    /// of ranks), stated in `subject`.
    pub fn fact(self, subject: impl Into<String>, holds: bool) -> Claim {
        self.check(Check::one(
            subject,
            Estimate::exact(if holds { 1.0 } else { 0.0 }),
            Cmp::True,
        ))
    }

    /// Marks the claim as one that `what`, a parameter the paper does not
    /// give, was fitted to.
    pub fn calibrated(mut self, what: impl Into<String>) -> Claim {
        self.calibrated = Some(what.into());
        self
    }

    /// What the checks measured, `; `-separated (empty without checks).
    pub fn judged(&self) -> String {
        self.checks
            .iter()
            .filter(|c| c.cmp != Cmp::True)
            .map(Check::values)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Counts of each verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub holds: usize,
    pub differs: usize,
    pub inconclusive: usize,
    pub info: usize,
}

impl Tally {
    pub fn of(claims: &[Claim]) -> Tally {
        let n = |v: Verdict| claims.iter().filter(|c| c.verdict == v).count();
        Tally {
            holds: n(Verdict::Holds),
            differs: n(Verdict::Differs),
            inconclusive: n(Verdict::Inconclusive),
            info: n(Verdict::Info),
        }
    }
}

/// Formats a table of claims for the terminal.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::new();
    for c in claims {
        let mark = match c.verdict {
            Verdict::Holds => "holds  ",
            Verdict::Differs => "DIFFERS",
            Verdict::Inconclusive => "OPEN   ",
            Verdict::Info => "info   ",
        };
        // The headline, then what it left out on a line of its own,
        // without repeating the headline.
        let head = short(&c.claim);
        s.push_str(&format!("[{mark}] {}: {head}\n", c.figure));
        let rest = c.claim[head.len()..].trim_start_matches([';', '.', ' ']);
        if !rest.trim_end().is_empty() {
            s.push_str(&format!("          {}\n", rest.trim_end()));
        }
        if let Some(crit) = &c.criterion {
            s.push_str(&format!("          criterion: {crit}\n"));
        }
        if !c.measured.is_empty() {
            s.push_str(&format!("          ours:  {}\n", c.measured));
        }
        let judged = c.judged();
        if !judged.is_empty() {
            s.push_str(&format!("          judged: {judged}"));
            if c.verdict == Verdict::Inconclusive {
                s.push_str(" (inconclusive: an interval straddles the threshold)");
            }
            s.push('\n');
        }
        if let Some(what) = &c.calibrated {
            s.push_str(&format!(
                "          calibrated: {what}, so the verdict follows from the fit\n"
            ));
        }
    }
    s
}

/// The headline of a claim: up to the first `;` or the first full stop that
/// ends a sentence (". " before a capital letter, not after "Fig", "Eq" or
/// another abbreviation), so that decimals ("0.7", "2.4 Mbit/s") and
/// references ("Eq. 11") stay whole; never inside parentheses.
fn short(s: &str) -> &str {
    const ABBREVIATIONS: [&str; 8] = ["Fig", "Figs", "Eq", "Eqs", "Sec", "e.g", "i.e", "cf"];
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            ';' => return s[..i].trim_end(),
            '.' => {
                let mut rest = s[i + 1..].chars();
                let ends_sentence = rest.next() == Some(' ')
                    && rest.next().is_some_and(char::is_uppercase)
                    && !ABBREVIATIONS.iter().any(|a| s[..i].ends_with(a));
                if ends_sentence {
                    return &s[..i];
                }
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(samples: &[f64]) -> Estimate {
        Estimate::mean_t90(samples)
    }

    #[test]
    fn criteria_are_written_from_the_thresholds_they_check() {
        let c = Claim::new("Fig. 1", "the download keeps the link")
            .at_least("download share", 0.95, 0.9)
            .at_most("download/upload", 2.5, 3.0);
        assert_eq!(
            c.criterion.as_deref(),
            Some("download share ≥ 0.9; download/upload ≤ 3")
        );
        assert_eq!(c.verdict, Verdict::Holds);
        let c = Claim::new("x", "y").within("r_sim / r_model", 1.54, 1.0, 0.4);
        assert_eq!(
            c.criterion.as_deref(),
            Some("r_sim / r_model within ±40 % of 1")
        );
        assert_eq!(c.verdict, Verdict::Differs);
        let c = Claim::new("x", "y").each(
            "r",
            [("15 kB", 1.0), ("30 kB", 1.2)],
            Cmp::Within {
                target: 1.0,
                rel: 0.4,
            },
        );
        assert_eq!(
            c.criterion.as_deref(),
            Some("r within ±40 % of 1 (each of 2)")
        );
        assert_eq!(c.verdict, Verdict::Holds);
        assert_eq!(c.judged(), "r: 15 kB 1, 30 kB 1.2");
        let c = Claim::new("x", "y").increasing("loss", [("N=1", 0.1), ("N=10", 0.3)]);
        assert_eq!(c.criterion.as_deref(), Some("loss: N=1 < N=10"));
        assert_eq!(c.verdict, Verdict::Holds);
        let c = Claim::new("x", "y").fact("every transfer is byte-exact", false);
        assert_eq!(c.verdict, Verdict::Differs);
        assert_eq!(c.criterion.as_deref(), Some("every transfer is byte-exact"));
        assert_eq!(Claim::info("x", "y", "z").verdict, Verdict::Info);
    }

    #[test]
    fn intervals_give_three_verdicts() {
        // Mean 0.7, sd 0.0158, 5 seeds: 90 % t interval 0.685..0.715.
        let e = t(&[0.72, 0.70, 0.71, 0.69, 0.68]);
        assert_eq!(e.interval, Some(Interval::T { n: 5 }));
        let [lo, hi] = e.ci90.unwrap();
        assert!(lo < 0.7 && hi > 0.7 && lo > 0.68 && hi < 0.72, "{lo} {hi}");
        let v = |c: Cmp| {
            Claim::new("x", "y")
                .check(Check::one("s", e.clone(), c))
                .verdict
        };
        assert_eq!(v(Cmp::AtLeast(0.7)), Verdict::Inconclusive);
        assert_eq!(v(Cmp::AtLeast(0.6)), Verdict::Holds);
        assert_eq!(v(Cmp::AtLeast(0.8)), Verdict::Differs);
        assert_eq!(v(Cmp::AtMost(0.7)), Verdict::Inconclusive);
        assert_eq!(v(Cmp::AtMost(0.8)), Verdict::Holds);
        assert_eq!(v(Cmp::Below(0.6)), Verdict::Differs);
        assert_eq!(v(Cmp::Between(0.6, 0.8)), Verdict::Holds);
        assert_eq!(v(Cmp::Between(0.71, 0.8)), Verdict::Inconclusive);
        assert_eq!(v(Cmp::Between(0.8, 0.9)), Verdict::Differs);
        // The same value without an interval is decided.
        let x = Claim::new("x", "y").at_least("s", 0.699, 0.7);
        assert_eq!(x.verdict, Verdict::Differs);
        // A ratio with a bootstrap interval (overlay-ack's var_10s).
        let b = Estimate::bootstrap(1.87, (1.67, 2.11), 100);
        let c = Claim::new("x", "y").at_least("ratio", b, 2.0);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert_eq!(
            c.judged(),
            "ratio = 1.87 (90 %: 1.67–2.11, bootstrap, n = 100)"
        );
        // One seed: no interval, so a decided verdict.
        assert_eq!(t(&[0.5]).ci90, None);
        // The value counts even where a percentile interval leaves it out.
        let off = Estimate::bootstrap(1.9, (2.01, 2.3), 20);
        let c = Claim::new("x", "y").at_least("s", off, 2.0);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        // An interval that could not be computed decides nothing.
        let nan = Estimate::bootstrap(3.0, (f64::NAN, f64::NAN), 20);
        assert_eq!(
            Claim::new("x", "y").at_least("s", nan, 2.0).verdict,
            Verdict::Inconclusive
        );
        // A seed without a value is left out of the mean.
        let e = Estimate::mean_t90(&[1.0, f64::NAN, 3.0]);
        assert_eq!((e.value, e.interval), (2.0, Some(Interval::T { n: 2 })));
        // No value misses every criterion.
        let n = Claim::new("x", "y").at_most("s", f64::NAN, 1.0);
        assert_eq!(n.verdict, Verdict::Differs);
    }

    #[test]
    fn ratios_of_means_pair_their_seeds() {
        // The denominator tracks the numerator seed by seed: the ratio is
        // 2 in every resample, so the paired interval is a point.
        let den = [1.0, 5.0, 2.0, 9.0];
        let num: Vec<f64> = den.iter().map(|x| 2.0 * x).collect();
        let e = Estimate::ratio_of_means("t", &num, &den);
        assert_eq!(e.value, 2.0);
        assert_eq!(e.ci90, Some([2.0, 2.0]));
        assert_eq!(e.interval, Some(Interval::Bootstrap { n: 4 }));
        // Unpaired noise widens it.
        let e = Estimate::ratio_of_means("t", &[2.0, 10.0, 4.0, 18.0], &[9.0, 2.0, 5.0, 1.0]);
        let [lo, hi] = e.ci90.unwrap();
        assert!(lo < e.value && e.value < hi && hi - lo > 1.0, "{e:?}");
        assert_eq!(Estimate::ratio_of_means("t", &[3.0], &[2.0]).ci90, None);
        // A seed that lacks a value is left out of both means.
        let e = Estimate::ratio_of_means("t", &[2.0, 4.0, f64::NAN], &[1.0, 2.0, 3.0]);
        assert_eq!(
            (e.value, e.interval),
            (2.0, Some(Interval::Bootstrap { n: 2 }))
        );
        let e = Estimate::bootstrap(2.0, (1.0, 3.0), 5).times(-0.5);
        assert_eq!((e.value, e.ci90), (-1.0, Some([-1.5, -0.5])));
    }

    #[test]
    fn a_miss_outranks_an_open_question_and_that_a_hold() {
        let open = t(&[0.72, 0.70, 0.71, 0.69, 0.68]);
        let c = Claim::new("x", "y")
            .at_least("a", 1.0, 0.5)
            .at_least("b", open.clone(), 0.7);
        assert_eq!(c.verdict, Verdict::Inconclusive);
        let c = c.at_least("c", 0.1, 0.5);
        assert_eq!(c.verdict, Verdict::Differs);
        // Orders: overlapping intervals are open, reversed ones differ.
        let lo = t(&[1.0, 1.1, 0.9]);
        let hi = t(&[3.0, 3.1, 2.9]);
        let c = Claim::new("x", "y").increasing("v", [("a", lo.clone()), ("b", hi.clone())]);
        assert_eq!(c.verdict, Verdict::Holds);
        let c = Claim::new("x", "y").increasing("v", [("a", hi), ("b", lo.clone())]);
        assert_eq!(c.verdict, Verdict::Differs);
        // An order of one value says nothing.
        let one = Claim::new("x", "y").increasing("v", [("a", 1.0)]);
        assert_eq!(one.verdict, Verdict::Differs);
        let near = t(&[1.05, 1.2, 0.95]);
        let c = Claim::new("x", "y").increasing("v", [("a", lo), ("b", near)]);
        assert_eq!(c.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn headlines_stop_at_a_sentence_or_semicolon_outside_parentheses() {
        assert_eq!(short("A holds; criterion: x"), "A holds");
        assert_eq!(short("Eq. 11 fits. More text"), "Eq. 11 fits");
        assert_eq!(
            short("Late-comer (bucket, 10 ms refill; RTT 120 ms); more"),
            "Late-comer (bucket, 10 ms refill; RTT 120 ms)"
        );
        assert_eq!(
            short("Without uploads the download gets nearly all of the 2.4 Mbit/s"),
            "Without uploads the download gets nearly all of the 2.4 Mbit/s"
        );
        assert_eq!(short("As in Fig. 4. Then more"), "As in Fig. 4");
        assert_eq!(short("share >= 0.7. Paper: 0.9"), "share >= 0.7");
        let c = |claim: &str| Claim::new("Fig. 1", claim).at_least("r", 3.0, 2.0);
        let t = claims_table(&[c("r is 3"), c("r is 3; paper: about 3")]);
        assert_eq!(t.matches("r is 3").count(), 2, "each headline once: {t}");
        assert!(t.contains("\n          paper: about 3\n"), "{t}");
        assert!(t.contains("\n          criterion: r ≥ 2\n"), "{t}");
        assert!(t.contains("\n          judged: r = 3\n"), "{t}");
        let t = claims_table(&[c("Eq. 11 fits. More text.")]);
        assert!(
            t.contains("] Fig. 1: Eq. 11 fits\n          More text.\n"),
            "{t}"
        );
        let t = claims_table(&[c("r is 3").calibrated("the buffer (64 kB)")]);
        assert!(
            t.contains("\n          calibrated: the buffer (64 kB), so"),
            "{t}"
        );
        let open = Claim::new("x", "y").at_least("s", t_est(), 0.7);
        let t = claims_table(&[open]);
        assert!(t.starts_with("[OPEN   ] x: y\n"), "{t}");
        assert!(t.contains("(inconclusive: an interval straddles"), "{t}");
    }

    fn t_est() -> Estimate {
        Estimate::mean_t90(&[0.72, 0.70, 0.71, 0.69, 0.68])
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(sig3(0.68642), "0.686");
        assert_eq!(sig3(12.345), "12.3");
        assert_eq!(sig3(1450.2), "1450");
        assert_eq!(sig3(2.0), "2");
        assert_eq!(sig3(f64::NAN), "-");
        assert_eq!(num(0.9), "0.9");
        assert_eq!(num(15000.0), "15000");
        assert_eq!(num(32.90173410404624), "32.9017");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(1234567.8), "1234568");
    }

    #[test]
    fn summary_json_carries_value_interval_and_method() {
        let c = Claim::new("Fig. 1", "y").at_least("s", t_est(), 0.6);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["verdict"], "holds");
        assert_eq!(v["criterion"], "s ≥ 0.6");
        let item = &v["checks"][0]["items"][0];
        assert_eq!(item["method"], "t");
        assert_eq!(item["n"], 5);
        assert!(item["ci90"][0].as_f64().unwrap() < 0.7);
        let inconclusive = Claim::new("x", "y").at_least("s", t_est(), 0.7);
        assert_eq!(
            serde_json::to_value(&inconclusive).unwrap()["verdict"],
            "inconclusive"
        );
    }
}
