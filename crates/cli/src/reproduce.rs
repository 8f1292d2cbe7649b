//! `hopwise reproduce <name>`.

use anyhow::{bail, Result};
use hopwise_repro::{claims_table, registry, Progress, ReproOpts, Verdict};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

/// A progress bar per phase, drawn on stderr (hidden when stderr is not a terminal).
struct Bars {
    bar: Mutex<Option<ProgressBar>>,
}

impl Progress for Bars {
    fn start(&self, label: &str, total: u64) {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(
                "{prefix:>24} [{bar:40}] {pos}/{len} runs (elapsed {elapsed}, eta {eta})",
            )
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
    }
}

pub fn run(
    name: &str,
    quick: bool,
    seeds: Option<u32>,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    strict: bool,
) -> Result<()> {
    let Some(exp) = hopwise_repro::find(name) else {
        let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
        bail!(
            "unknown reproduction `{name}` (known: {})",
            names.join(", ")
        );
    };
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(name));
    crate::run::prepare_out(&out)?;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
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
    let bars = Bars {
        bar: Mutex::new(None),
    };
    let outcome = (exp.run)(&opts, &bars)?;
    bars.finish();
    println!();
    print!("{}", claims_table(&outcome.claims));
    let differs = outcome
        .claims
        .iter()
        .filter(|c| c.verdict == Verdict::Differs)
        .count();
    let holds = outcome
        .claims
        .iter()
        .filter(|c| c.verdict == Verdict::Holds)
        .count();
    let wall = t0.elapsed().as_secs_f64();
    let command: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| if i == 0 { "hopwise".to_string() } else { a })
        .collect();
    let facts = [
        format!("command: {}", command.join(" ")),
        format!(
            "{} variant, {} worker thread{}, {wall:.1} s wall, hopwise {}",
            if quick { "quick" } else { "full" },
            jobs,
            if jobs == 1 { "" } else { "s" },
            env!("CARGO_PKG_VERSION")
        ),
    ];
    let title = format!("hopwise reproduce {}", exp.name);
    hopwise_repro::report::write(
        &out,
        &hopwise_repro::report::ReportMeta {
            title: &title,
            about: exp.about,
            facts: &facts,
            text: None,
        },
        &outcome.claims,
        &outcome.files,
    )?;
    println!();
    // "1 claim holds, 2 differ".
    let verb = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    println!(
        "{}, {}, {} for information; {wall:.1} s wall; results in {} (open report.html)",
        verb(holds, "claim holds", "claims hold"),
        verb(differs, "differs", "differ"),
        outcome.claims.len() - holds - differs,
        out.display()
    );
    if strict && differs > 0 {
        bail!("{differs} claim(s) differ from the paper (--strict)");
    }
    Ok(())
}
