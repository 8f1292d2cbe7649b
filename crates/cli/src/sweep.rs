//! `hopwise sweep`: one scenario over a grid of parameter values and seeds,
//! with means and 90 % confidence intervals per grid point.
//!
//! This file holds the command itself: its checks of the grid, building and
//! checking each point's scenario (and blaming an error on the scenario, a
//! `--set` or a `--vary` value), running the points in batches, folding
//! each point's runs into means (runs.csv, points.csv) and writing
//! summary.json and the report. The axes and their points are in `axes`,
//! what a run measured in `samples`, the figure in `plots`, the terminal
//! table in `table`, and overlays (Tor circuits) in `overlay`.

use anyhow::{bail, Context, Result};
use axes::{grid, label, Point};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::{csv, par_map, Progress, Silent};
use hopwise_sim::scenario::{self, ScenarioError};
use hopwise_sim::spec::Scenario;
use plots::{plots, subjects};
use samples::{fingerprint, same, sameness, Sample};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;
use table::table;

mod axes;
mod overlay;
mod plots;
mod samples;
mod table;

pub use axes::{parse_vary, Axis};

#[derive(Serialize)]
struct MetricOut {
    metric: &'static str,
    subject: String,
    mean: f64,
    /// Half-width of the 90 % confidence interval (Student t over seeds);
    /// absent with one seed.
    ci90: Option<f64>,
    runs: usize,
}

#[derive(Serialize)]
struct PointOut {
    params: Vec<(String, String)>,
    metrics: Vec<MetricOut>,
}

#[derive(Serialize)]
struct AxisOut<'a> {
    key: &'a str,
    values: &'a [String],
}

#[derive(Serialize)]
struct SweepSummary<'a> {
    scenario: String,
    origin: String,
    /// The command line, and the `--set` overrides every run had.
    command: String,
    sets: &'a [String],
    vary: Vec<AxisOut<'a>>,
    seeds: Vec<u64>,
    /// What the sweep noticed about its own results (also printed).
    warnings: Vec<String>,
    runs: usize,
    wall_s: f64,
    points: Vec<PointOut>,
    /// Flows that `count` expanded (`<name>-0` …, and their `/rev`), each
    /// with its sum (`<name>-*`, `<name>-*/rev`), which the plot and the
    /// table show in its place. Only looked up, never iterated.
    #[serde(skip)]
    replicas: HashMap<String, String>,
}

/// The scenario text and what a sweep sets in it: builds each point's
/// scenario, and says whose fault an error is.
struct Grid<'a> {
    text: String,
    origin: String,
    sets: &'a [String],
    axes: &'a [Axis],
}

impl Grid<'_> {
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

/// A point's parameters, as the leading columns of runs.csv and
/// points.csv (one per `--vary` axis, named by its key).
struct Params<'a>(&'a [Axis], &'a [String]);

impl Serialize for Params<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (a, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(&a.key, v)?;
        }
        m.end()
    }
}

/// A row of runs.csv: one metric of one run.
#[derive(Serialize)]
struct RunRow<'a> {
    #[serde(flatten)]
    point: Params<'a>,
    seed: u64,
    metric: &'a str,
    subject: &'a str,
    value: f64,
}

/// A row of points.csv: one metric's mean over a point's runs.
#[derive(Serialize)]
struct PointRow<'a> {
    #[serde(flatten)]
    point: Params<'a>,
    metric: &'a str,
    subject: &'a str,
    mean: f64,
    ci90_low: f64,
    ci90_high: f64,
    runs: usize,
}

/// Mean and CI per metric and subject of one point's runs (one per seed):
/// a row each in points.csv, and the point for summary.json.
fn fold_point(
    axes: &[Axis],
    p: &Point,
    mine: &[Vec<Sample>],
    csv: &mut csv::Writer,
) -> Result<PointOut> {
    // (metric, subject) in the order the first run reported them, then any
    // that only later runs have. Indexed, for scenarios with many flows;
    // the order comes from the runs, never from a map.
    let mut keys: Vec<(&'static str, &str)> = Vec::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let index: Vec<HashMap<(&str, &str), f64>> = mine
        .iter()
        .map(|r| {
            r.iter()
                .rev()
                .map(|s| ((s.metric, s.subject.as_str()), s.value))
                .collect()
        })
        .collect();
    for r in mine {
        for s in r.iter() {
            if seen.insert((s.metric, s.subject.as_str())) {
                keys.push((s.metric, s.subject.as_str()));
            }
        }
    }
    let mut metrics = Vec::with_capacity(keys.len());
    for (metric, subject) in keys {
        let xs: Vec<f64> = index
            .iter()
            .filter_map(|r| r.get(&(metric, subject)).copied())
            .filter(|x| x.is_finite())
            .collect();
        let (m, h) = mean_ci90(&xs);
        csv.row(&PointRow {
            point: Params(axes, p),
            metric,
            subject,
            mean: m,
            ci90_low: m - h,
            ci90_high: m + h,
            runs: xs.len(),
        })?;
        metrics.push(MetricOut {
            metric,
            subject: subject.to_string(),
            mean: m,
            ci90: h.is_finite().then_some(h),
            runs: xs.len(),
        });
    }
    Ok(PointOut {
        params: axes
            .iter()
            .map(|a| a.key.clone())
            .zip(p.iter().cloned())
            .collect(),
        metrics,
    })
}

/// Most grid points a sweep takes, whatever --max-runs says: a point's
/// means stay in memory until the end (for the plot, the table and
/// summary.json), about 12 KB for the demo's 100 metrics, where a run is
/// written out and dropped as soon as its batch has finished.
const MAX_POINTS: u128 = 100_000;

/// How a sweep runs: worker threads, output, and the largest grid accepted.
pub struct RunOpts {
    pub jobs: Option<usize>,
    pub quiet: bool,
    pub max_runs: u64,
}

pub fn sweep(
    file: Option<&Path>,
    axes: &[Axis],
    seeds: u32,
    sets: &[String],
    out: &Path,
    run: RunOpts,
) -> Result<()> {
    let RunOpts {
        jobs,
        quiet,
        max_runs,
    } = run;
    // A file that cannot be read is the first thing to report, before how
    // the sweep is asked for. It is read once; every run parses this text.
    let (text, origin) = match file {
        Some(f) => (scenario::read(f)?, f.display().to_string()),
        None => (crate::run::DEMO.to_string(), "<built-in demo>".to_string()),
    };
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
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let sweep = Grid {
        text,
        origin,
        sets,
        axes,
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
    let origin = sweep.origin.clone();
    let seed_list: Vec<u64> = (0..seeds as u64).map(|k| seed0.wrapping_add(k)).collect();
    let n_runs = points.len() * seed_list.len();
    if !quiet {
        eprintln!(
            "sweeping `{name}` ({origin}): {} × {} = {} on {jobs} thread{}",
            hopwise_experiment::plural(points.len(), "point"),
            hopwise_experiment::plural(seed_list.len(), "seed"),
            hopwise_experiment::plural(n_runs, "run"),
            if jobs == 1 { "" } else { "s" }
        );
    }

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
    crate::run::prepare_out(out)?;

    // The runs go in batches of points; each batch's results are written to
    // runs.csv and folded into its points' means before the next batch
    // runs, so that memory grows with the points, not with the runs.
    let t0 = Instant::now();
    let bars = crate::reproduce::Bars::new();
    let progress: &dyn Progress = if quiet { &Silent } else { &bars };
    // The tables are written under temporary names and put in place only
    // once complete (csv::Writer), so a sweep that fails leaves the
    // previous results alone.
    let mut runs_csv = csv::Writer::create(&out.join("runs.csv"))?;
    let mut points_csv = csv::Writer::create(&out.join("points.csv"))?;
    runs_csv.header_of(&RunRow {
        point: Params(axes, &points[0]),
        seed: 0,
        metric: "",
        subject: "",
        value: 0.0,
    })?;
    points_csv.header_of(&PointRow {
        point: Params(axes, &points[0]),
        metric: "",
        subject: "",
        mean: 0.0,
        ci90_low: 0.0,
        ci90_high: 0.0,
        runs: 0,
    })?;
    let mut point_out = Vec::with_capacity(points.len());
    let mut first_runs = Vec::with_capacity(points.len());
    let mut flat = 0;
    let per_batch = jobs.saturating_mul(64).div_ceil(seed_list.len()).max(1);
    progress.start("sweep", n_runs as u64);
    let ran: Result<()> = (|| {
        for b in (0..points.len()).step_by(per_batch) {
            let batch = b..(b + per_batch).min(points.len());
            let items: Vec<(usize, u64)> = batch
                .clone()
                .flat_map(|i| seed_list.iter().map(move |&s| (i, s)))
                .collect();
            let mut results = par_map(items, jobs, progress, |(i, seed)| {
                let mut sc = sweep.build(&points[i]).map_err(|e| e.to_string())?;
                sc.seed = seed;
                overlay::run(sc, &sweep.origin)
            })
            .into_iter();
            for i in batch {
                let mut mine = Vec::with_capacity(seed_list.len());
                for &seed in &seed_list {
                    let r = results
                        .next()
                        .expect("a result per run")
                        .map_err(anyhow::Error::msg)
                        .with_context(|| {
                            format!("point {} with seed {seed}", label(axes, &points[i]))
                        })?;
                    for x in &r {
                        runs_csv.row(&RunRow {
                            point: Params(axes, &points[i]),
                            seed,
                            metric: x.metric,
                            subject: &x.subject,
                            value: x.value,
                        })?;
                    }
                    mine.push(r);
                }
                if mine.iter().all(|x| same(x, &mine[0])) {
                    flat += 1;
                }
                let p = fold_point(axes, &points[i], &mine, &mut points_csv)?;
                point_out.push(p);
                first_runs.push(fingerprint(&mine[0]));
            }
        }
        runs_csv.finish()?;
        points_csv.finish()
    })();
    progress.finish();
    ran?;
    let wall = t0.elapsed().as_secs_f64();
    let warnings = sameness(axes, &points, seed_list.len(), flat, &first_runs);
    for w in &warnings {
        eprintln!("warning: {w}");
    }

    let command = crate::run::command_line();
    let summary = SweepSummary {
        scenario: name.clone(),
        origin: origin.clone(),
        command: command.clone(),
        sets,
        warnings: warnings.clone(),
        vary: axes
            .iter()
            .map(|a| AxisOut {
                key: &a.key,
                values: &a.values,
            })
            .collect(),
        seeds: seed_list.clone(),
        runs: n_runs,
        wall_s: wall,
        points: point_out,
        replicas,
    };
    // Written as it is serialised: a large grid's summary.json would
    // otherwise be held whole in memory first.
    let path = out.join("summary.json");
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("writing {}", path.display()))?,
    );
    serde_json::to_writer_pretty(&mut w, &summary)?;
    w.write_all(b"\n")?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;

    let mut figs = plots(out, axes, &points, &summary)?;
    figs.extend(overlay::plot(out, axes, &points, &summary)?);
    // A scenario of overlays alone has no flow columns to show.
    let flows_table = if subjects(&summary, "goodput_bps").is_empty() {
        String::new()
    } else {
        table(axes, &points, &summary)
    };
    let table = [flows_table, overlay::table(axes, &points, &summary)]
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    if !quiet {
        print!("{table}");
    }
    let mut files = figs;
    files.extend(["summary.json", "points.csv", "runs.csv"].map(String::from));
    let mut facts = vec![
        format!("command: {command}"),
        format!("scenario: {name} ({origin})"),
        format!(
            "{} × {} = {}, {wall:.1} s wall, hopwise {}",
            hopwise_experiment::plural(points.len(), "point"),
            hopwise_experiment::plural(seed_list.len(), "seed"),
            hopwise_experiment::plural(n_runs, "run"),
            env!("CARGO_PKG_VERSION")
        ),
    ];
    facts.extend(warnings.iter().map(|w| format!("warning: {w}")));
    crate::run::text_report(
        out,
        &format!("hopwise sweep: {name}"),
        &facts,
        &table,
        &[("sweep.svg", "points.csv"), ("sweep_tor.svg", "points.csv")],
        &files,
    )?;
    println!(
        "results: {} (open {})",
        out.join("summary.json").display(),
        out.join("report.html").display()
    );
    if let Some(note) = crate::run::leftovers(out, &files) {
        eprintln!("{note}");
    }
    Ok(())
}
