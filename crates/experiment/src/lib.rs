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
    fn counts_take_the_singular_only_for_one() {
        assert_eq!(super::plural(0, "run"), "0 runs");
        assert_eq!(super::plural(1, "run"), "1 run");
        assert_eq!(super::plural(16, "circuit"), "16 circuits");
    }
}
