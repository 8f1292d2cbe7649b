//! # hopwise-experiment
//!
//! The experiment toolkit: what every reproduction, lab experiment, plain
//! simulation run and sweep shares, and nothing about any paper.
//!
//! * [`driver`]: the [`Reproduction`] trait and the one driver that runs
//!   it (plan, output directory, timing, progress, summary.json,
//!   report.html, checkpoints); [`par_map`] for independent runs.
//! * [`claim`]: claims whose checks write their own criterion, and
//!   verdicts that respect uncertainty (holds, differs, inconclusive).
//! * [`stats`]: means with t and bootstrap intervals, quantiles, Jain's
//!   index, correlation; one copy each.
//! * [`csv`]: tidy CSVs from `#[derive(Serialize)]` rows.
//! * [`report`]: `report.html` and the overview page of `reproduce all`.
//! * [`figs`]: helpers for figures (series that hide one another, CDFs
//!   from zero, shared log ranges).
//!
//! A new reproduction is one folder in `hopwise-repro` that implements
//! [`Reproduction`], and one line in its registry; `docs/architecture.md`
//! has a worked example.

#![forbid(unsafe_code)]

pub mod claim;
pub mod csv;
pub mod driver;
pub mod figs;
pub mod report;
pub mod stats;

pub use claim::{claims_table, Check, Claim, Cmp, Estimate, Interval, Tally, Verdict};
pub use driver::{
    par_map, run, write_summary, Ctx, Experiment, Opts, Outcome, Outputs, Progress, Reproduction,
    Silent, Svg,
};

/// Writes `contents` to `path` through a temporary file beside it and a
/// rename, so that a reader (or a run interrupted while writing, say at a
/// checkpoint) never leaves half a file.
pub fn write_atomic(path: &std::path::Path, contents: &[u8]) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, contents)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// A number with `digits` significant digits, trailing zeros dropped
/// (`sig(0.68642, 3)` is `0.686`, `sig(1450.2, 3)` `1450`); `-` for NaN.
pub fn sig(x: f64, digits: i32) -> String {
    if x.is_nan() {
        return "-".into();
    }
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (digits - 1 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `n` and `noun`, the noun in the plural unless `n` is 1: `plural(1,
/// "run")` is "1 run", `plural(3, "run")` "3 runs" (regular plurals only).
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn significant_digits() {
        assert_eq!(super::sig(0.68642, 3), "0.686");
        assert_eq!(super::sig(12.345, 3), "12.3");
        assert_eq!(super::sig(1450.2, 3), "1450");
        assert_eq!(super::sig(0.021409, 2), "0.021");
        assert_eq!(super::sig(123.4, 2), "123");
        assert_eq!(super::sig(f64::NAN, 3), "-");
    }

    #[test]
    fn counts_take_the_singular_only_for_one() {
        assert_eq!(super::plural(0, "run"), "0 runs");
        assert_eq!(super::plural(1, "run"), "1 run");
        assert_eq!(super::plural(16, "circuit"), "16 circuits");
    }
}
