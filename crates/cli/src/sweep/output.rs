//! What a sweep writes, from its runs in order: runs.csv (a row per
//! metric of each run), points.csv and summary.json (each point's means
//! and 90 % intervals over its seeds), the figures, the terminal table and
//! report.html. The sweep on one machine hands it the runs as they finish,
//! `merge` as it reads them from the shards' files: one code path, so
//! both write the same bytes.

use super::axes::{Axis, Point};
use super::plots::{plots, subjects};
use super::samples::{fingerprint, same, sameness, Sample};
use super::table::table;
use super::{overlay, Checked};
use anyhow::{Context, Result};
use hopwise_experiment::csv;
use hopwise_experiment::stats::mean_ci90;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;

#[derive(Serialize)]
pub(super) struct MetricOut {
    pub(super) metric: &'static str,
    pub(super) subject: String,
    pub(super) mean: f64,
    /// Half-width of the 90 % confidence interval (Student t over seeds);
    /// absent with one seed.
    pub(super) ci90: Option<f64>,
    runs: usize,
}

#[derive(Serialize)]
pub(super) struct PointOut {
    params: Vec<(String, String)>,
    pub(super) metrics: Vec<MetricOut>,
}

#[derive(Serialize)]
struct AxisOut<'a> {
    key: &'a str,
    values: &'a [String],
}

#[derive(Serialize)]
pub(super) struct SweepSummary<'a> {
    pub(super) scenario: String,
    origin: String,
    /// The sweep as one command (no --out or --jobs, which do not change
    /// the results; the same from `merge`), and the `--set` overrides
    /// every run had.
    command: String,
    sets: &'a [String],
    vary: Vec<AxisOut<'a>>,
    pub(super) seeds: Vec<u64>,
    /// What the sweep noticed about its own results (also printed).
    warnings: Vec<String>,
    runs: usize,
    wall_s: f64,
    pub(super) points: Vec<PointOut>,
    /// Flows that `count` expanded (`<name>-0` …, and their `/rev`), each
    /// with its sum (`<name>-*`, `<name>-*/rev`), which the plot and the
    /// table show in its place. Only looked up, never iterated.
    #[serde(skip)]
    pub(super) replicas: &'a HashMap<String, String>,
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

/// The sweep's outputs, being written: runs go in one at a time, in run
/// order; a point's means are computed when its last seed's run is in.
pub(super) struct Output<'a> {
    out: &'a Path,
    c: &'a Checked,
    runs_csv: csv::Writer,
    points_csv: csv::Writer,
    /// The runs of the point being filled.
    mine: Vec<Vec<Sample>>,
    next: usize,
    point_out: Vec<PointOut>,
    first_runs: Vec<u64>,
    /// Points whose seeds all gave the same results.
    flat: usize,
}

impl<'a> Output<'a> {
    /// Starts the outputs in `out` (created if needed). The tables are
    /// written under temporary names and put in place only once complete
    /// (csv::Writer), so a sweep that fails leaves earlier results alone.
    pub(super) fn create(out: &'a Path, c: &'a Checked) -> Result<Self> {
        crate::run::prepare_out(out)?;
        let axes = &c.grid.axes;
        let mut runs_csv = csv::Writer::create(&out.join("runs.csv"))?;
        let mut points_csv = csv::Writer::create(&out.join("points.csv"))?;
        runs_csv.header_of(&RunRow {
            point: Params(axes, &c.points[0]),
            seed: 0,
            metric: "",
            subject: "",
            value: 0.0,
        })?;
        points_csv.header_of(&PointRow {
            point: Params(axes, &c.points[0]),
            metric: "",
            subject: "",
            mean: 0.0,
            ci90_low: 0.0,
            ci90_high: 0.0,
            runs: 0,
        })?;
        Ok(Output {
            out,
            c,
            runs_csv,
            points_csv,
            mine: Vec::with_capacity(c.seeds.len()),
            next: 0,
            point_out: Vec::with_capacity(c.points.len()),
            first_runs: Vec::with_capacity(c.points.len()),
            flat: 0,
        })
    }

    /// Run `r`'s samples; runs come in order, from 0.
    pub(super) fn run(&mut self, r: usize, samples: Vec<Sample>) -> Result<()> {
        assert_eq!(r, self.next, "runs are written in order");
        self.next += 1;
        let n = self.c.seeds.len();
        let (p, seed) = (&self.c.points[r / n], self.c.seeds[r % n]);
        for x in &samples {
            self.runs_csv.row(&RunRow {
                point: Params(&self.c.grid.axes, p),
                seed,
                metric: x.metric,
                subject: &x.subject,
                value: x.value,
            })?;
        }
        self.mine.push(samples);
        if self.mine.len() == n {
            let mine = std::mem::take(&mut self.mine);
            if mine.iter().all(|x| same(x, &mine[0])) {
                self.flat += 1;
            }
            let po = fold_point(&self.c.grid.axes, p, &mine, &mut self.points_csv)?;
            self.point_out.push(po);
            self.first_runs.push(fingerprint(&mine[0]));
        }
        Ok(())
    }

    /// Writes what needs every run: summary.json (with `wall` seconds),
    /// the figures, the table (printed unless `quiet`) and report.html.
    /// `known` are files of `out` that are not leftovers of another run.
    pub(super) fn finish(self, wall: f64, quiet: bool, known: &[&str]) -> Result<()> {
        let Output {
            out,
            c,
            runs_csv,
            points_csv,
            point_out,
            first_runs,
            flat,
            next,
            ..
        } = self;
        assert_eq!(next, c.runs(), "every run was written");
        runs_csv.finish()?;
        points_csv.finish()?;
        let (axes, points) = (&c.grid.axes[..], &c.points[..]);
        let warnings = sameness(axes, points, c.seeds.len(), flat, &first_runs);
        for w in &warnings {
            eprintln!("warning: {w}");
        }
        let command = c.command();
        let (name, origin) = (&c.name, &c.grid.origin);
        let summary = SweepSummary {
            scenario: name.clone(),
            origin: origin.clone(),
            command: command.clone(),
            sets: &c.grid.sets,
            warnings: warnings.clone(),
            vary: axes
                .iter()
                .map(|a| AxisOut {
                    key: &a.key,
                    values: &a.values,
                })
                .collect(),
            seeds: c.seeds.clone(),
            runs: c.runs(),
            wall_s: wall,
            points: point_out,
            replicas: &c.replicas,
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

        let mut figs = plots(out, axes, points, &summary)?;
        figs.extend(overlay::plot(out, axes, points, &summary)?);
        // A scenario of overlays alone has no flow columns to show.
        let flows_table = if subjects(&summary, "goodput_bps").is_empty() {
            String::new()
        } else {
            table(axes, points, &summary)
        };
        let table = [flows_table, overlay::table(axes, points, &summary)]
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
                hopwise_experiment::plural(c.seeds.len(), "seed"),
                hopwise_experiment::plural(c.runs(), "run"),
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
        let mut written = files.clone();
        written.extend(known.iter().map(|k| k.to_string()));
        if let Some(note) = crate::run::leftovers(out, &written) {
            eprintln!("{note}");
        }
        Ok(())
    }
}
