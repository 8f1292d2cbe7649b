//! `hopwise reproduce <name>`.

use anyhow::{bail, Context, Result};
use hopwise_experiment::report::{self, IndexRow};
use hopwise_experiment::{claims_table, plural, Claim, Experiment, Opts, Progress, Tally, Verdict};
use hopwise_repro::registry;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Mutex;

/// A progress bar per phase, drawn on stderr (hidden when stderr is not a terminal).
pub(crate) struct Bars {
    bar: Mutex<Option<ProgressBar>>,
    /// What the bar counts ("runs", "s").
    unit: &'static str,
}

impl Bars {
    pub(crate) fn new() -> Self {
        Bars::counting("runs")
    }
    pub(crate) fn counting(unit: &'static str) -> Self {
        Bars {
            bar: Mutex::new(None),
            unit,
        }
    }
}

impl Progress for Bars {
    fn start(&self, label: &str, total: u64) {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(&format!(
                "{{prefix:>24}} [{{bar:40}}] {{pos}}/{{len}} {} (elapsed {{elapsed}}, eta {{eta}})",
                self.unit
            ))
            .expect("valid template")
            .progress_chars("=> "),
        );
        b.set_prefix(label.to_string());
        if let Some(old) = self.bar.lock().expect("not poisoned").replace(b) {
            old.finish_and_clear();
        }
    }
    fn inc(&self) {
        if let Some(b) = self.bar.lock().expect("not poisoned").as_ref() {
            b.inc(1);
        }
    }
    fn finish(&self) {
        if let Some(b) = self.bar.lock().expect("not poisoned").take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, msg: &str) {
        match self.bar.lock().expect("not poisoned").as_ref() {
            // A bar that draws nothing (stderr is not a terminal) would
            // swallow the line too.
            Some(b) if !b.is_hidden() => b.println(msg),
            _ => eprintln!("{msg}"),
        }
    }
}

pub fn list() {
    println!("reproductions (hopwise reproduce <name> [--quick] [--seeds N] [--out DIR]):");
    for e in registry() {
        println!("  {:<20} {}", e.name(), e.about());
        println!("  {:<20} ({}, on 2 cores)", "", e.wall());
    }
    println!(
        "  {:<20} every one of the above in turn, each into OUT/<name>, and OUT/index.html (OUT: --out, default out)",
        "all"
    );
}

pub fn run(
    name: &str,
    quick: bool,
    seeds: Option<u32>,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    strict: bool,
) -> Result<()> {
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let opts = |dir: PathBuf, command: String| Opts {
        quick,
        seeds,
        out: dir,
        jobs,
        command,
    };
    if name == "all" {
        let root = out.unwrap_or_else(|| PathBuf::from("out"));
        crate::run::prepare_out(&root)?;
        let exps = registry();
        let mut ran = Vec::new();
        for (i, exp) in exps.iter().enumerate() {
            eprintln!("\n[{}/{}] {}", i + 1, exps.len(), exp.name());
            let dir = root.join(exp.name());
            // The command that redoes this directory alone.
            let mut cmd = format!("hopwise reproduce {}", exp.name());
            if quick {
                cmd.push_str(" --quick");
            }
            if let Some(n) = seeds {
                cmd.push_str(&format!(" --seeds {n}"));
            }
            cmd.push_str(&format!(
                " --out {}",
                crate::run::shell_word(&dir.to_string_lossy())
            ));
            match run_one(exp.as_ref(), &opts(dir, cmd)) {
                Ok(r) => ran.push(r),
                Err(e) => {
                    eprintln!("error: {}: {e:#}", exp.name());
                    ran.push(IndexRow {
                        name: exp.name(),
                        about: exp.about(),
                        tally: Tally::default(),
                        wall_s: f64::NAN,
                        error: Some(format!("{e:#}")),
                    });
                }
            }
        }
        let index = root.join("index.html");
        std::fs::write(&index, report::index(quick, &ran))
            .with_context(|| format!("writing {}", index.display()))?;
        println!();
        for r in &ran {
            match &r.error {
                None => println!(
                    "{:<18} {:>3} hold, {:>2} differ, {:>2} inconclusive, {:>2} for information  {:>8.1} s",
                    r.name,
                    r.tally.holds,
                    r.tally.differs,
                    r.tally.inconclusive,
                    r.tally.info,
                    r.wall_s
                ),
                Some(e) => println!("{:<18} failed: {e}", r.name),
            }
        }
        println!("overview: {}", index.display());
        let failed: Vec<&str> = ran
            .iter()
            .filter(|r| r.error.is_some())
            .map(|r| r.name)
            .collect();
        if !failed.is_empty() {
            bail!(
                "{} failed: {}",
                plural(failed.len(), "reproduction"),
                failed.join(", ")
            );
        }
        let differs: usize = ran.iter().map(|r| r.tally.differs).sum();
        if strict && differs > 0 {
            bail!("{differs} claim(s) differ from the papers (--strict)");
        }
        return Ok(());
    }
    let Some(exp) = hopwise_repro::find(name) else {
        let names: Vec<&str> = registry().iter().map(|e| e.name()).collect();
        bail!(
            "unknown reproduction `{name}` (known: {}, or all)",
            names.join(", ")
        );
    };
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(name));
    let r = run_one(exp.as_ref(), &opts(out, crate::run::command_line()))?;
    if strict && r.tally.differs > 0 {
        bail!(
            "{} claim(s) differ from the paper (--strict)",
            r.tally.differs
        );
    }
    Ok(())
}

/// Runs `exp` into `opts.out` under progress bars, then prints the claims
/// table and the verdict count.
fn run_one(exp: &dyn Experiment, opts: &Opts) -> Result<IndexRow<'static>> {
    crate::run::prepare_out(&opts.out)?;
    eprintln!(
        "{}: {}{}",
        exp.name(),
        exp.about(),
        if opts.quick { " (quick variant)" } else { "" }
    );
    let bars = Bars::new();
    let outcome = exp.run(opts, &bars)?;
    bars.finish();
    let tally = print_outcome(&outcome, opts, &exp.doc());
    Ok(IndexRow {
        name: exp.name(),
        about: exp.about(),
        tally,
        wall_s: outcome.wall_s,
        error: None,
    })
}

/// Prints what a run of a reproduction or lab experiment left: its claims
/// and their count, the quick variant's caveat (`doc` has the full run's
/// results), and files in the output directory that it did not write.
pub(crate) fn print_outcome(
    outcome: &hopwise_experiment::Outcome,
    opts: &Opts,
    doc: &str,
) -> Tally {
    let tally = print_claims(&outcome.claims, &opts.out, outcome.wall_s);
    if opts.quick {
        println!("{}", hopwise_experiment::driver::quick_caveat(doc));
    }
    if let Some(note) = crate::run::leftovers(&opts.out, &outcome.files) {
        eprintln!("{note}");
    }
    tally
}

/// Prints the claims table and the verdict count.
fn print_claims(claims: &[Claim], out: &std::path::Path, wall: f64) -> Tally {
    println!();
    print!("{}", claims_table(claims));
    let t = Tally::of(claims);
    println!();
    // "1 claim holds, 2 differ".
    let verb = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let calibrated = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Holds && c.calibrated.is_some())
        .count();
    println!(
        "{}{}, {}, {} inconclusive, {} for information; {wall:.1} s wall; results in {} (open report.html)",
        verb(t.holds, "claim holds", "claims hold"),
        if calibrated > 0 {
            format!(" ({calibrated} of them on a calibrated parameter)")
        } else {
            String::new()
        },
        verb(t.differs, "differs", "differ"),
        t.inconclusive,
        t.info,
        out.display()
    );
    t
}
