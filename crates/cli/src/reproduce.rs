//! `hopwise reproduce <name>`.

use anyhow::{bail, Context, Result};
use hopwise_repro::{claims_table, registry, Progress, ReproOpts, Verdict};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

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
            Some(b) => b.println(msg),
            None => eprintln!("{msg}"),
        }
    }
}

pub fn list() {
    println!("reproductions (hopwise reproduce <name> [--quick] [--seeds N] [--out DIR]):");
    for e in registry() {
        println!("  {:<20} {}", e.name, e.about);
        println!("  {:<20} ({}, on 2 cores)", "", e.wall);
    }
    println!(
        "  {:<20} every one of the above in turn, each into OUT/<name>, and OUT/index.html (OUT: --out, default out)",
        "all"
    );
}

use hopwise_repro::report::IndexRow;

pub fn run(
    name: &str,
    quick: bool,
    seeds: Option<u32>,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    strict: bool,
) -> Result<()> {
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if name == "all" {
        let root = out.unwrap_or_else(|| PathBuf::from("out"));
        crate::run::prepare_out(&root)?;
        let exps = registry();
        let mut ran = Vec::new();
        for (i, exp) in exps.iter().enumerate() {
            eprintln!("\n[{}/{}] {}", i + 1, exps.len(), exp.name);
            let dir = root.join(exp.name);
            // The command that redoes this directory alone.
            let mut cmd = format!("hopwise reproduce {}", exp.name);
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
            match run_one(exp, quick, seeds, dir, jobs, &cmd) {
                Ok(r) => ran.push(r),
                Err(e) => {
                    eprintln!("error: {}: {e:#}", exp.name);
                    ran.push(IndexRow {
                        name: exp.name,
                        about: exp.about,
                        holds: 0,
                        differs: 0,
                        info: 0,
                        wall_s: f64::NAN,
                        error: Some(format!("{e:#}")),
                    });
                }
            }
        }
        let index = root.join("index.html");
        std::fs::write(&index, hopwise_repro::report::index(quick, &ran))
            .with_context(|| format!("writing {}", index.display()))?;
        println!();
        for r in &ran {
            match &r.error {
                None => println!(
                    "{:<18} {:>3} hold, {:>2} differ, {:>2} for information  {:>8.1} s",
                    r.name, r.holds, r.differs, r.info, r.wall_s
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
                hopwise_repro::plural(failed.len(), "reproduction"),
                failed.join(", ")
            );
        }
        let differs: usize = ran.iter().map(|r| r.differs).sum();
        if strict && differs > 0 {
            bail!("{differs} claim(s) differ from the papers (--strict)");
        }
        return Ok(());
    }
    let Some(exp) = hopwise_repro::find(name) else {
        let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        bail!(
            "unknown reproduction `{name}` (known: {}, or all)",
            names.join(", ")
        );
    };
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(name));
    crate::run::prepare_out(&out)?;
    let r = run_one(&exp, quick, seeds, out, jobs, &crate::run::command_line())?;
    if strict && r.differs > 0 {
        bail!("{} claim(s) differ from the paper (--strict)", r.differs);
    }
    Ok(())
}

/// Runs `exp` into `out`: progress bars, the claims table, report.html.
fn run_one(
    exp: &hopwise_repro::Experiment,
    quick: bool,
    seeds: Option<u32>,
    out: PathBuf,
    jobs: usize,
    command: &str,
) -> Result<IndexRow<'static>> {
    crate::run::prepare_out(&out)?;
    let opts = ReproOpts {
        quick,
        seeds,
        out: out.clone(),
        jobs,
    };
    eprintln!(
        "{}: {}{}",
        exp.name,
        exp.about,
        if quick { " (quick variant)" } else { "" }
    );
    let t0 = Instant::now();
    let bars = Bars::new();
    let outcome = (exp.run)(&opts, &bars)?;
    bars.finish();
    let wall = t0.elapsed().as_secs_f64();
    // Quick verdicts can differ from the full run's either way; each
    // reproduction's doc has the full run's.
    let caveat = format!(
        "quick variant: fewer and shorter runs, so a verdict can differ from the full run's \
         (docs/reproductions/{}.md has the full run's)",
        exp.name
    );
    let mut facts = vec![
        format!("command: {command}"),
        format!(
            "{} variant, {} worker thread{}, {wall:.1} s wall, hopwise {}",
            if quick { "quick" } else { "full" },
            jobs,
            if jobs == 1 { "" } else { "s" },
            env!("CARGO_PKG_VERSION")
        ),
    ];
    if quick {
        facts.push(caveat.clone());
    }
    let title = format!("hopwise reproduce {}", exp.name);
    let (holds, differs, info) = present(&out, &title, exp.about, &facts, &outcome, wall)?;
    if quick {
        println!("{caveat}");
    }
    if let Some(note) = crate::run::leftovers(&out, &outcome.files) {
        eprintln!("{note}");
    }
    Ok(IndexRow {
        name: exp.name,
        about: exp.about,
        holds,
        differs,
        info,
        wall_s: wall,
        error: None,
    })
}

/// Prints the claims table, writes `report.html` into `out` and prints the
/// verdict count. Returns (holds, differs, info).
pub(crate) fn present(
    out: &std::path::Path,
    title: &str,
    about: &str,
    facts: &[String],
    outcome: &hopwise_repro::Outcome,
    wall: f64,
) -> Result<(usize, usize, usize)> {
    println!();
    print!("{}", claims_table(&outcome.claims));
    let count = |v: Verdict| outcome.claims.iter().filter(|c| c.verdict == v).count();
    let (holds, differs, info) = (
        count(Verdict::Holds),
        count(Verdict::Differs),
        count(Verdict::Info),
    );
    let data: Vec<(&str, &str)> = outcome
        .data
        .iter()
        .map(|(f, c)| (f.as_str(), c.as_str()))
        .collect();
    hopwise_repro::report::write(
        out,
        &hopwise_repro::report::ReportMeta {
            title,
            about,
            facts,
            text: None,
            data: &data,
        },
        &outcome.claims,
        &outcome.files,
    )?;
    println!();
    // "1 claim holds, 2 differ".
    let verb = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let calibrated = outcome
        .claims
        .iter()
        .filter(|c| c.verdict == Verdict::Holds && c.calibrated.is_some())
        .count();
    println!(
        "{}{}, {}, {} for information; {wall:.1} s wall; results in {} (open report.html)",
        verb(holds, "claim holds", "claims hold"),
        if calibrated > 0 {
            format!(" ({calibrated} of them on a calibrated parameter)")
        } else {
            String::new()
        },
        verb(differs, "differs", "differ"),
        info,
        out.display()
    );
    Ok((holds, differs, info))
}
