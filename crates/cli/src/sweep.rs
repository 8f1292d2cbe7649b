//! `hopwise sweep`: one scenario over a grid of parameter values and seeds,
//! with means and 90 % confidence intervals per grid point.
//!
//! This file holds the command itself: its checks of the grid, building and
//! checking each point's scenario (and blaming an error on the scenario, a
//! `--set` or a `--vary` value), and running a range of runs in batches.
//! Folding each point's runs into means and writing runs.csv, points.csv,
//! summary.json, the figures and the report is `output`, which the sweep
//! on one machine and `merge` share. The axes and their points are in
//! `axes`, what a run measured in `samples`, the figure in `plots`, the
//! terminal table in `table`, and overlays (Tor circuits) in `overlay`.
//!
//! A sweep can also run on many machines: `plan` writes what it would run
//! (`--plan DIR`), `shard` runs a slice of its runs, `merge` writes what
//! the sweep on one machine would have from the shards' runs, `status`
//! says which shards are done, and `slurm` writes a Slurm job array for it.

use anyhow::{bail, Context, Result};
use axes::{grid, label, Point};
use hopwise_experiment::{par_map, Progress, Silent};
use hopwise_sim::scenario::{self, ScenarioError};
use hopwise_sim::spec::Scenario;
use samples::Sample;
use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod axes;
mod merge;
mod output;
mod overlay;
mod plan;
mod plots;
mod samples;
mod shard;
mod slurm;
mod table;

pub use axes::{parse_vary, Axis};
pub use merge::{merge, status};
pub use shard::shard;
pub use slurm::{slurm, SlurmOpts};

/// The scenario text and what a sweep sets in it: builds each point's
/// scenario, and says whose fault an error is.
struct Grid {
    text: String,
    /// Where the text came from, as given (a path, or `<built-in demo>`).
    origin: String,
    sets: Vec<String>,
    axes: Vec<Axis>,
}

impl Grid {
    /// The scenario at point `p` (`&[]`: with the --set values alone).
    fn build(&self, p: &[String]) -> Result<Scenario, ScenarioError> {
        let mut s = self.sets.to_vec();
        s.extend(
            self.axes
                .iter()
                .zip(p)
                .map(|(a, v)| format!("{}={v}", a.key)),
        );
        scenario::parse(&self.text, &self.origin, &s)
            .and_then(|sc| overlay::check(sc, &self.origin))
    }

    /// The error of point `p`, attributed: to the scenario (or its --set
    /// values) when they alone give it too, to the --vary value when the
    /// loader names its override, else to the point.
    fn blame(&self, e: ScenarioError, p: &Point, base: Option<&ScenarioError>) -> anyhow::Error {
        if base.is_some_and(|b| b.to_string() == e.to_string()) {
            let what = if self.sets.is_empty() {
                "the scenario itself"
            } else {
                "the scenario with its --set values"
            };
            return anyhow::Error::new(e).context(if self.axes.is_empty() {
                what.to_string()
            } else {
                format!("{what} (before any --vary value)")
            });
        }
        // A bad --vary value: the loader names it as the override it
        // applied (`--set KEY=V`); name the flag it came from.
        if let Some(o) = e.key.strip_prefix("--set ") {
            if !self.sets.iter().any(|x| scenario::shorten(x) == o) {
                let mut e = e.clone();
                e.key = format!("--vary {o}");
                return e.into();
            }
        }
        anyhow::Error::new(e).context(format!(
            "--vary point {}",
            self.axes
                .iter()
                .zip(p)
                .map(|(a, v)| format!("{}={v}", a.key))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    }
}

/// Most grid points a sweep takes, whatever --max-runs says: a point's
/// means stay in memory until the end (for the plot, the table and
/// summary.json), about 12 KB for the demo's 100 metrics, where a run is
/// written out and dropped as soon as its batch has finished.
const MAX_POINTS: u128 = 100_000;

/// The largest grid a sweep takes without `--max-runs`, in runs.
pub const DEFAULT_MAX_RUNS: u64 = 2000;

/// How a sweep runs: worker threads, output, and the largest grid accepted.
pub struct RunOpts {
    pub jobs: Option<usize>,
    pub quiet: bool,
    pub max_runs: u64,
}

/// A sweep whose every point's scenario builds: its grid, points and
/// seeds, and what the outputs need to know about the scenario.
struct Checked {
    grid: Grid,
    points: Vec<Point>,
    seeds: Vec<u64>,
    /// The scenario's name (the first point's).
    name: String,
    /// Flows that `count` expanded, each with its sum's subject (see
    /// `output::SweepSummary`).
    replicas: HashMap<String, String>,
}

impl Checked {
    /// Runs in the sweep: points × seeds.
    fn runs(&self) -> usize {
        self.points.len() * self.seeds.len()
    }

    /// The sweep as a command that runs it on one machine (without the
    /// output directory and the threads, which do not change the results;
    /// `--max-runs` only when the runs are more than it allows by default):
    /// the `command` of summary.json and of the plan.
    fn command(&self) -> String {
        let mut v = vec!["hopwise".to_string(), "sweep".to_string()];
        if self.grid.origin != DEMO_ORIGIN {
            v.push(self.grid.origin.clone());
        }
        for a in &self.grid.axes {
            v.push("--vary".into());
            v.push(format!("{}={}", a.key, a.values.join(",")));
        }
        v.push("--seeds".into());
        v.push(self.seeds.len().to_string());
        for s in &self.grid.sets {
            v.push("--set".into());
            v.push(s.clone());
        }
        if self.runs() as u64 > DEFAULT_MAX_RUNS {
            v.push("--max-runs".into());
            v.push(self.runs().to_string());
        }
        v.iter()
            .map(|a| crate::run::shell_word(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The origin of the built-in demo scenario.
const DEMO_ORIGIN: &str = "<built-in demo>";

/// The scenario's text, read once (every run parses it), and its origin:
/// the file as given, or the built-in demo.
fn read_scenario(file: Option<&Path>) -> Result<(String, String)> {
    Ok(match file {
        Some(f) => (scenario::read(f)?, f.display().to_string()),
        None => (crate::run::DEMO.to_string(), DEMO_ORIGIN.to_string()),
    })
}

/// Checks a sweep of the scenario `text` from `origin`: the axes, its
/// size, and that every point's scenario builds (`jobs` threads; a
/// progress bar for large grids unless `quiet`).
fn check(
    (text, origin): (String, String),
    axes: &[Axis],
    seeds: u32,
    sets: &[String],
    jobs: usize,
    quiet: bool,
    max_runs: u64,
) -> Result<Checked> {
    if axes.is_empty() && seeds < 2 {
        bail!(
            "--vary: give at least one KEY=V1,V2,... to sweep over, or --seeds N (N ≥ 2) \
             to repeat the scenario over seeds (one run is `hopwise sim`)"
        );
    }
    for (i, a) in axes.iter().enumerate() {
        if a.key == "seed" {
            bail!(
                "--vary seed: the seeds are not a scenario parameter here; use --seeds N \
                 (runs every point with the scenario's seed and the next N - 1), and \
                 --set seed=S to start from S"
            );
        }
        if axes[..i].iter().any(|b| b.key == a.key) {
            bail!("--vary {}: the key is given twice", a.key);
        }
        if sets
            .iter()
            .any(|s| s.split_once('=').is_some_and(|(k, _)| k.trim() == a.key))
        {
            bail!("--vary {}: the key is also given with --set", a.key);
        }
    }
    // The size is checked before the grid is built: a mistyped range can ask
    // for millions of runs, each a row of runs.csv and summary.json.
    let n_points: u128 = axes.iter().map(|a| a.values.len() as u128).product();
    let dims: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
    if n_points > MAX_POINTS {
        bail!(
            "the grid is {} = {n_points} points, more than {MAX_POINTS}, the most a sweep \
             takes: each point's means stay in memory until the end (about 100 B per flow or \
             link metric, 12 KB a point for the demo) and go into summary.json; split the grid \
             (the runs of one point are held together while its means are computed, so \
             --seeds costs memory per point, not per grid)",
            dims.join(" × ")
        );
    }
    let runs = n_points * seeds as u128;
    if runs > max_runs as u128 {
        bail!(
            "the grid is {}{} = {runs} runs, more than --max-runs {max_runs}; \
             raise --max-runs (up to 1000000) or split the grid",
            if dims.is_empty() {
                String::new()
            } else {
                format!("{} values × ", dims.join(" × "))
            },
            hopwise_experiment::plural(seeds as usize, "seed")
        );
    }
    let points = grid(axes);
    let sweep = Grid {
        text,
        origin,
        sets: sets.to_vec(),
        axes: axes.to_vec(),
    };
    // An error that the scenario with --set alone gives too is not the
    // point's fault.
    let base_err = sweep.build(&[]).err();
    // The name and the first seed come from the first point (a scenario
    // that is only valid with the --vary values has them too).
    let (name, seed0) = match sweep.build(&points[0]) {
        Ok(sc) => (sc.name, sc.seed),
        Err(e) => return Err(sweep.blame(e, &points[0], base_err.as_ref())),
    };
    let seed_list: Vec<u64> = (0..seeds as u64).map(|k| seed0.wrapping_add(k)).collect();

    // Every point's scenario is checked before anything runs (and built
    // again when it runs: kept, a large grid's scenarios would take
    // gigabytes). The check also finds the flows that `count` replicated.
    let checking = crate::reproduce::Bars::counting("points");
    let progress: &dyn Progress = if quiet || points.len() < 1000 {
        &Silent
    } else {
        &checking
    };
    progress.start("check", points.len() as u64);
    let checked = par_map((0..points.len()).collect(), jobs, progress, |i| {
        sweep.build(&points[i]).map(|sc| {
            sc.flows
                .iter()
                .filter_map(|f| f.group.clone().map(|g| (f.name.clone(), g)))
                .collect::<Vec<_>>()
        })
    });
    progress.finish();
    let mut replicas = HashMap::new();
    for (i, r) in checked.into_iter().enumerate() {
        match r {
            Ok(groups) => {
                for (f, g) in groups {
                    replicas.insert(format!("{f}/rev"), format!("{g}-*/rev"));
                    replicas.insert(f, format!("{g}-*"));
                }
            }
            Err(e) => return Err(sweep.blame(e, &points[i], base_err.as_ref())),
        }
    }
    Ok(Checked {
        grid: sweep,
        points,
        seeds: seed_list,
        name,
        replicas,
    })
}

/// Threads to run on: `jobs`, else every core.
fn threads(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs the runs in `range` on `jobs` threads and hands each run's samples
/// to `each`, in run order. Run `r` is point `r / seeds` with seed
/// `seeds[r % seeds]`: the order of runs.csv. The runs go in batches of
/// whole points' worth of runs, each handed on before the next batch runs,
/// so that memory grows with the batch, not with the range.
fn execute(
    grid: &Grid,
    points: &[Point],
    seeds: &[u64],
    range: Range<usize>,
    jobs: usize,
    progress: &dyn Progress,
    mut each: impl FnMut(usize, Vec<Sample>) -> Result<()>,
) -> Result<()> {
    let n = seeds.len();
    let per_batch = jobs.saturating_mul(64).div_ceil(n).max(1) * n;
    let mut start = range.start;
    while start < range.end {
        let end = range.end.min(start.saturating_add(per_batch));
        let results = par_map((start..end).collect(), jobs, progress, |r: usize| {
            let mut sc = grid.build(&points[r / n]).map_err(|e| e.to_string())?;
            sc.seed = seeds[r % n];
            overlay::run(sc, &grid.origin)
        });
        for (r, res) in (start..end).zip(results) {
            let samples = res.map_err(anyhow::Error::msg).with_context(|| {
                format!(
                    "point {} with seed {}",
                    label(&grid.axes, &points[r / n]),
                    seeds[r % n]
                )
            })?;
            each(r, samples)?;
        }
        start = end;
    }
    Ok(())
}

pub fn sweep(
    file: Option<&Path>,
    axes: &[Axis],
    seeds: u32,
    sets: &[String],
    out: &Path,
    plan: Option<&Path>,
    run: RunOpts,
) -> Result<()> {
    let RunOpts {
        jobs,
        quiet,
        max_runs,
    } = run;
    // A file that cannot be read is the first thing to report, before how
    // the sweep is asked for.
    let scenario = read_scenario(file)?;
    let jobs = threads(jobs);
    let c = check(scenario, axes, seeds, sets, jobs, quiet, max_runs)?;
    if let Some(dir) = plan {
        return plan::write(dir, &c);
    }
    let n_runs = c.runs();
    if !quiet {
        eprintln!(
            "sweeping `{}` ({}): {} × {} = {} on {jobs} thread{}",
            c.name,
            c.grid.origin,
            hopwise_experiment::plural(c.points.len(), "point"),
            hopwise_experiment::plural(c.seeds.len(), "seed"),
            hopwise_experiment::plural(n_runs, "run"),
            if jobs == 1 { "" } else { "s" }
        );
    }
    // The tables are written under temporary names and put in place only
    // once complete (csv::Writer), so a sweep that fails leaves the
    // previous results alone.
    let mut o = output::Output::create(out, &c)?;
    let t0 = Instant::now();
    let bars = crate::reproduce::Bars::new();
    let progress: &dyn Progress = if quiet { &Silent } else { &bars };
    progress.start("sweep", n_runs as u64);
    let ran = execute(
        &c.grid,
        &c.points,
        &c.seeds,
        0..n_runs,
        jobs,
        progress,
        |r, s| o.run(r, s),
    );
    progress.finish();
    ran?;
    o.finish(t0.elapsed().as_secs_f64(), quiet, &[])
}

/// The subcommands of `hopwise sweep`: a sweep on many machines.
#[derive(clap::Subcommand)]
pub enum SweepCmd {
    /// Run shard I of N of the sweep planned in DIR (`--plan DIR`): a contiguous slice of its
    /// runs, written to DIR/shards/. A shard already done is skipped.
    Shard {
        /// The plan's directory.
        dir: PathBuf,
        /// I/N (shard I of N, from 0), or `slurm`: I from SLURM_ARRAY_TASK_ID, N from --shards
        /// or else SLURM_ARRAY_TASK_COUNT, and --jobs from SLURM_CPUS_PER_TASK.
        #[arg(long, value_name = "I/N|slurm")]
        shard: String,
        /// The number of shards, with `--shard slurm` (resubmitting some tasks keeps N).
        #[arg(long, value_name = "N")]
        shards: Option<usize>,
        /// Worker threads (default: all cores; with `--shard slurm`, the task's CPUs).
        #[arg(long, value_parser = crate::at_least_one)]
        jobs: Option<usize>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Merge the shards in DIR into runs.csv, points.csv, summary.json, the plots and
    /// report.html: what `hopwise sweep` writes on one machine. Refuses missing, overlapping
    /// and foreign shards.
    Merge {
        /// The plan's directory.
        dir: PathBuf,
        /// Output directory (default: DIR).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads to check the points (default: all cores).
        #[arg(long, value_parser = crate::at_least_one)]
        jobs: Option<usize>,
        /// Print only the results path (no table).
        #[arg(long)]
        quiet: bool,
    },
    /// List the done, started and missing shards of DIR, and the sbatch line that resubmits
    /// the missing ones. Exits with 0 when every run is done and `merge` can run, 2 when not.
    Status {
        /// The plan's directory.
        dir: PathBuf,
        /// The number of shards (default: from DIR/slurm, or the shards that ran).
        #[arg(long, value_name = "N")]
        shards: Option<usize>,
    },
    /// Write a Slurm job array for the sweep planned in DIR: DIR/slurm/array.sbatch (one shard
    /// per task), merge.sbatch and submit.sh (the array, then the merge after it succeeds).
    Slurm {
        /// The plan's directory.
        dir: PathBuf,
        /// Shards, one per array task: size them to minutes of runs each, not single runs.
        #[arg(long, value_name = "N")]
        shards: usize,
        /// CPUs per task (the shard's threads).
        #[arg(long, default_value_t = 1, value_parser = crate::at_least_one)]
        cpus_per_task: usize,
        /// The tasks' time limit (sbatch --time), e.g. 30:00.
        #[arg(long)]
        time: Option<String>,
        /// Partition (sbatch --partition).
        #[arg(long)]
        partition: Option<String>,
        /// Account (sbatch --account).
        #[arg(long)]
        account: Option<String>,
        /// The cluster's MaxArraySize: task IDs must be below it, so N is at most this.
        #[arg(long, default_value_t = 1001, value_parser = crate::at_least_one)]
        max_array_size: usize,
    },
}

/// Runs a subcommand of `hopwise sweep`.
pub fn run_cmd(cmd: SweepCmd) -> Result<()> {
    match cmd {
        SweepCmd::Shard {
            dir,
            shard: spec,
            shards,
            jobs,
            quiet,
        } => shard(&dir, &spec, shards, jobs, quiet),
        SweepCmd::Merge {
            dir,
            out,
            jobs,
            quiet,
        } => merge(&dir, out.as_deref(), jobs, quiet),
        SweepCmd::Status { dir, shards } => {
            if !status(&dir, shards)? {
                // Runs are missing (or shards must be removed): exit 2, so
                // that scripts can wait for the campaign.
                use std::io::Write as _;
                let _ = std::io::stdout().flush();
                std::process::exit(2);
            }
            Ok(())
        }
        SweepCmd::Slurm {
            dir,
            shards,
            cpus_per_task,
            time,
            partition,
            account,
            max_array_size,
        } => slurm(
            &dir,
            &SlurmOpts {
                shards,
                cpus_per_task,
                time,
                partition,
                account,
                max_array_size,
            },
        ),
    }
}
