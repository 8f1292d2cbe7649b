//! The one driver every reproduction and lab experiment runs under.
//!
//! An experiment implements [`Reproduction`]: its plan (serializable, with
//! a full and a quick variant), its runs, its claims and its outputs. The
//! driver does the rest, the same way for all of them: the output
//! directory, timing, progress, `summary.json` (the plan, the results and
//! the claims), `report.html`, and, while a long experiment runs, the
//! outputs of what it has finished so far ([`Ctx::checkpoint`]).
//!
//! ```text
//! plan ──▶ run ──▶ results ──┬─▶ claims ──┐
//!                            └─▶ outputs ─┴─▶ summary.json, report.html
//! ```

use crate::claim::{Claim, Tally};
use crate::report::{self, ReportMeta};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Progress reporting, implemented by the CLI (a progress bar) or by tests
/// (nothing).
pub trait Progress: Sync {
    /// A phase with `total` units of work begins.
    fn start(&self, label: &str, total: u64);
    /// One unit finished.
    fn inc(&self);
    /// The phase is over.
    fn finish(&self);
    /// A line of text for the user (e.g. which figure is running).
    fn note(&self, _msg: &str) {}
}

/// Progress that goes nowhere.
pub struct Silent;
impl Progress for Silent {
    fn start(&self, _: &str, _: u64) {}
    fn inc(&self) {}
    fn finish(&self) {}
}

/// A paper's experiment, as the driver runs it.
pub trait Reproduction: Sync {
    /// What to run: serializable (summary.json records it), with a full and
    /// a quick variant ([`Reproduction::plan`]).
    type Plan: Serialize + Sync;
    /// What the runs measured: summary.json holds its fields beside the
    /// plan and the claims (skip bulky traces with `#[serde(skip)]`).
    type Results: Serialize;

    /// The name on the command line and of the output folder.
    const NAME: &'static str;
    /// Which paper and what it shows, one line.
    const ABOUT: &'static str;
    /// The paper, as summary.json names it.
    const PAPER: &'static str;
    /// Wall time on the 2-core reference machine, quick and full.
    const WALL: &'static str;

    /// The paper's plan, or the quick one; `seeds` overrides the seeds (or
    /// runs) per point.
    fn plan(&self, quick: bool, seeds: Option<u32>) -> Self::Plan;
    /// Runs the plan.
    fn run(&self, plan: &Self::Plan, ctx: &Ctx<'_, Self::Results>)
        -> anyhow::Result<Self::Results>;
    /// The paper's claims beside our values.
    fn claims(&self, plan: &Self::Plan, results: &Self::Results) -> Vec<Claim>;
    /// CSVs and figures.
    fn outputs(
        &self,
        plan: &Self::Plan,
        results: &Self::Results,
        out: &mut Outputs,
    ) -> anyhow::Result<()>;
    /// Lines of run facts for report.html beyond the command, variant and
    /// wall time (a kernel's settings, say).
    fn facts(&self, _plan: &Self::Plan) -> Vec<String> {
        Vec::new()
    }
    /// report.html's title.
    fn title(&self) -> String {
        format!("hopwise reproduce {}", Self::NAME)
    }
    /// Where the full run's results are documented (a quick run points
    /// there).
    fn doc(&self) -> String {
        format!("docs/reproductions/{}.md", Self::NAME)
    }
}

/// Options of one run, from the command line.
#[derive(Clone, Debug)]
pub struct Opts {
    /// The short variant (a couple of minutes at most) for CI and a first look.
    pub quick: bool,
    /// Seeds (or runs) per point; `None`: the plan's default.
    pub seeds: Option<u32>,
    /// The output directory.
    pub out: PathBuf,
    /// Worker threads for independent runs.
    pub jobs: usize,
    /// The command that redoes this run, for report.html.
    pub command: String,
}

impl Opts {
    /// Options with the machine's cores as jobs and no command line.
    pub fn new(out: impl Into<PathBuf>, quick: bool) -> Opts {
        Opts {
            quick,
            seeds: None,
            out: out.into(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            command: String::new(),
        }
    }
}

/// What a run gets besides its plan.
pub struct Ctx<'a, T> {
    /// The output directory, for files a run writes as it goes (captures,
    /// logs); the driver writes everything else.
    pub out: &'a Path,
    pub jobs: usize,
    pub progress: &'a dyn Progress,
    checkpoint: &'a dyn Fn(&T) -> anyhow::Result<()>,
}

impl<'a, T> Ctx<'a, T> {
    /// A context that saves nothing (for tests and for runs nested in
    /// another experiment).
    pub fn new(out: &'a Path, jobs: usize, progress: &'a dyn Progress) -> Ctx<'a, T> {
        Ctx {
            out,
            jobs,
            progress,
            checkpoint: &nothing::<T>,
        }
    }

    /// Writes the outputs of what is finished so far (summary.json with
    /// `complete: false`), so that an interrupted run keeps them.
    pub fn checkpoint(&self, partial: &T) -> anyhow::Result<()> {
        (self.checkpoint)(partial)
    }

    /// [`par_map`] on this run's jobs and progress.
    pub fn par_map<I: Send, R: Send>(&self, items: Vec<I>, f: impl Fn(I) -> R + Sync) -> Vec<R> {
        par_map(items, self.jobs, self.progress, f)
    }

    /// The same context for other results (a part of the experiment that
    /// returns its own type); it saves nothing.
    pub fn part<U>(&self) -> Ctx<'a, U> {
        Ctx::new(self.out, self.jobs, self.progress)
    }
}

fn nothing<T>(_: &T) -> anyhow::Result<()> {
    Ok(())
}

/// A figure that can be drawn as SVG.
pub trait Svg {
    fn svg(&self) -> String;
}
impl Svg for hopwise_plot::Chart {
    fn svg(&self) -> String {
        self.to_svg()
    }
}
impl Svg for hopwise_plot::BarChart {
    fn svg(&self) -> String {
        self.to_svg()
    }
}
impl Svg for hopwise_plot::Figure {
    fn svg(&self) -> String {
        self.to_svg()
    }
}

/// The files an experiment writes, in the order report.html shows them.
pub struct Outputs {
    dir: PathBuf,
    files: Vec<String>,
    /// Figure → CSV pairs beyond the naming rule of [`report::data_files`].
    data: Vec<(String, String)>,
}

impl Outputs {
    pub fn new(dir: impl Into<PathBuf>) -> Outputs {
        Outputs {
            dir: dir.into(),
            files: Vec::new(),
            data: Vec::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn add(&mut self, name: &str) {
        if !self.files.iter().any(|f| f == name) {
            self.files.push(name.to_string());
        }
    }

    /// A tidy CSV of `rows` ([`crate::csv::write`]).
    pub fn csv<T: Serialize + Default>(&mut self, name: &str, rows: &[T]) -> anyhow::Result<()> {
        crate::csv::write(&self.dir.join(name), rows)?;
        self.add(name);
        Ok(())
    }

    /// A CSV written row by row.
    pub fn csv_writer(&mut self, name: &str) -> anyhow::Result<crate::csv::Writer> {
        let w = crate::csv::Writer::create(&self.dir.join(name))?;
        self.add(name);
        Ok(w)
    }

    /// A figure.
    pub fn svg(&mut self, name: &str, fig: &impl Svg) -> anyhow::Result<()> {
        self.file(name, fig.svg())
    }

    /// Any other file.
    pub fn file(&mut self, name: &str, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
        let p = self.dir.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", d.display()))?;
        }
        std::fs::write(&p, contents)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        self.add(name);
        Ok(())
    }

    /// Each of `figs` shows the data of each of `csvs`.
    pub fn data(&mut self, figs: &[&str], csvs: &[&str]) {
        for f in figs {
            for c in csvs {
                self.data.push((f.to_string(), c.to_string()));
            }
        }
    }

    /// The files written so far.
    pub fn files(&self) -> &[String] {
        &self.files
    }
}

/// What a run of an experiment left.
#[derive(Debug)]
pub struct Outcome {
    pub claims: Vec<Claim>,
    /// Files written, relative to the output directory, in report order.
    pub files: Vec<String>,
    pub wall_s: f64,
}

impl Outcome {
    pub fn tally(&self) -> Tally {
        Tally::of(&self.claims)
    }
}

/// A reproduction as the registry and the CLI see it, whatever its plan
/// and results.
pub trait Experiment: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn wall(&self) -> &'static str;
    /// Where the full run's results are documented.
    fn doc(&self) -> String;
    /// Runs the default (or quick) plan into `opts.out`.
    fn run(&self, opts: &Opts, progress: &dyn Progress) -> anyhow::Result<Outcome>;
}

impl<R: Reproduction> Experiment for R {
    fn name(&self) -> &'static str {
        R::NAME
    }
    fn about(&self) -> &'static str {
        R::ABOUT
    }
    fn wall(&self) -> &'static str {
        R::WALL
    }
    fn doc(&self) -> String {
        Reproduction::doc(self)
    }
    fn run(&self, opts: &Opts, progress: &dyn Progress) -> anyhow::Result<Outcome> {
        run(self, &self.plan(opts.quick, opts.seeds), opts, progress)
    }
}

/// summary.json: `paper`, `complete` (false while the experiment is
/// still running, or was interrupted), `wall_s` (so far), `plan`, the
/// results' fields, and `claims`. A results field with one of the
/// driver's names is an error, not a key written twice.
fn summary<P: Serialize, T: Serialize>(
    paper: &str,
    complete: bool,
    wall_s: f64,
    plan: &P,
    results: &T,
    claims: &[Claim],
) -> anyhow::Result<serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("paper".into(), paper.into());
    m.insert("complete".into(), complete.into());
    m.insert("wall_s".into(), wall_s.into());
    m.insert("plan".into(), serde_json::to_value(plan)?);
    match serde_json::to_value(results)? {
        serde_json::Value::Object(fields) => {
            for (k, v) in fields {
                if m.contains_key(&k) || k == "claims" {
                    anyhow::bail!("summary.json: the results have a field `{k}`, which the driver writes itself");
                }
                m.insert(k, v);
            }
        }
        serde_json::Value::Null => {}
        _ => anyhow::bail!("summary.json: the results must serialize as a struct"),
    }
    m.insert("claims".into(), serde_json::to_value(claims)?);
    Ok(serde_json::Value::Object(m))
}

/// Runs `plan` of `r` into `opts.out`: the runs, then claims, outputs,
/// summary.json and report.html (also at every checkpoint).
pub fn run<R: Reproduction>(
    r: &R,
    plan: &R::Plan,
    opts: &Opts,
    progress: &dyn Progress,
) -> anyhow::Result<Outcome> {
    let dir = opts.out.as_path();
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    // An earlier run's summary and report would speak for this one until
    // its first checkpoint (or for good, if it fails before).
    for stale in ["summary.json", "report.html"] {
        match std::fs::remove_file(dir.join(stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                anyhow::bail!("removing {}: {e}", dir.join(stale).display())
            }
            _ => {}
        }
    }
    #[allow(clippy::disallowed_methods)] // wall time for summary.json and the report only
    let t0 = Instant::now();
    let save = |results: &R::Results, complete: bool| -> anyhow::Result<Outcome> {
        let claims = r.claims(plan, results);
        let mut out = Outputs::new(dir);
        out.add("summary.json");
        r.outputs(plan, results, &mut out)?;
        let json = summary(
            R::PAPER,
            complete,
            t0.elapsed().as_secs_f64(),
            plan,
            results,
            &claims,
        )?;
        write_summary(dir, &json)?;
        let wall_s = t0.elapsed().as_secs_f64();
        let mut facts = vec![
            format!("command: {}", opts.command),
            format!(
                "{} variant, {}, {wall_s:.1} s wall{}, hopwise {}",
                if opts.quick { "quick" } else { "full" },
                crate::plural(opts.jobs, "worker thread"),
                if complete { "" } else { " so far" },
                env!("CARGO_PKG_VERSION")
            ),
        ];
        facts.extend(r.facts(plan));
        if opts.quick {
            facts.push(quick_caveat(&r.doc()));
        }
        if !complete {
            facts
                .push("still running or interrupted: these are the results finished so far".into());
        }
        let data: Vec<(&str, &str)> = out
            .data
            .iter()
            .map(|(f, c)| (f.as_str(), c.as_str()))
            .collect();
        let title = r.title();
        report::write(
            dir,
            &ReportMeta {
                title: &title,
                about: R::ABOUT,
                facts: &facts,
                text: None,
                data: &data,
            },
            &claims,
            &out.files,
        )?;
        let mut files = out.files;
        files.push("report.html".into());
        Ok(Outcome {
            claims,
            files,
            wall_s,
        })
    };
    let checkpoint = |partial: &R::Results| save(partial, false).map(|_| ());
    let ctx = Ctx {
        out: dir,
        jobs: opts.jobs,
        progress,
        checkpoint: &checkpoint,
    };
    let results = r.run(plan, &ctx)?;
    progress.finish();
    save(&results, true)
}

/// What report.html and the terminal say of a quick variant; `doc` has
/// the full run's results.
pub fn quick_caveat(doc: &str) -> String {
    format!(
        "quick variant: fewer and shorter runs, so a verdict can differ from the full run's \
         ({doc} has the full run's)"
    )
}

/// Maps `f` over `items` on up to `jobs` threads. Results come back in the
/// order of `items`, whatever order the work finished in, so experiments
/// stay deterministic. Each finished item ticks `progress`.
pub fn par_map<T, R, F>(items: Vec<T>, jobs: usize, progress: &dyn Progress, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let n = items.len();
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = jobs.clamp(1, n.max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let item = slots[i]
                    .lock()
                    .expect("no poisoned slot")
                    .take()
                    .expect("each item taken once");
                let r = f(item);
                *results[i].lock().expect("no poisoned slot") = Some(r);
                progress.inc();
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .expect("no poisoned slot")
                .expect("every item ran")
        })
        .collect()
}

/// Writes `value` as pretty JSON to `dir/summary.json` (through
/// [`crate::write_atomic`], so a reader never sees half of it).
pub fn write_summary<T: Serialize>(dir: &Path, value: &T) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    let s = serde_json::to_string_pretty(value)?;
    let tmp = dir.join(".summary.json.tmp");
    std::fs::write(&tmp, s + "\n")
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    let to = dir.join("summary.json");
    std::fs::rename(&tmp, &to).map_err(|e| anyhow::anyhow!("writing {}: {e}", to.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Claim, Verdict};

    #[test]
    fn par_map_keeps_order() {
        let v: Vec<u64> = (0..100).collect();
        let r = par_map(v, 4, &Silent, |x| {
            // Uneven work so that completion order differs from item order.
            let mut a = 0u64;
            for i in 0..(100 - x) * 1000 {
                a = a.wrapping_add(i);
            }
            (x, a)
        });
        assert_eq!(
            r.iter().map(|p| p.0).collect::<Vec<_>>(),
            (0..100).collect::<Vec<_>>()
        );
    }

    /// A toy: sums the seeds, claims the sum is at least 3.
    struct Toy {
        fail_after: Option<u32>,
    }
    #[derive(Serialize)]
    struct ToyPlan {
        seeds: u32,
    }
    #[derive(Serialize, Default)]
    struct ToyResults {
        values: Vec<f64>,
    }
    #[derive(Serialize, Default)]
    struct Row {
        seed: usize,
        value: f64,
    }

    impl Reproduction for Toy {
        type Plan = ToyPlan;
        type Results = ToyResults;
        const NAME: &'static str = "toy";
        const ABOUT: &'static str = "a toy <experiment>";
        const PAPER: &'static str = "none";
        const WALL: &'static str = "instant";
        fn plan(&self, quick: bool, seeds: Option<u32>) -> ToyPlan {
            ToyPlan {
                seeds: seeds.unwrap_or(if quick { 2 } else { 4 }),
            }
        }
        fn run(&self, plan: &ToyPlan, ctx: &Ctx<'_, ToyResults>) -> anyhow::Result<ToyResults> {
            let mut r = ToyResults::default();
            for s in 0..plan.seeds {
                if Some(s) == self.fail_after {
                    anyhow::bail!("seed {s} failed");
                }
                r.values.push(s as f64);
                ctx.checkpoint(&r)?;
            }
            Ok(r)
        }
        fn claims(&self, _: &ToyPlan, r: &ToyResults) -> Vec<Claim> {
            vec![Claim::new("Fig. 0", "the sum is large").at_least(
                "sum",
                r.values.iter().sum::<f64>(),
                3.0,
            )]
        }
        fn outputs(&self, _: &ToyPlan, r: &ToyResults, out: &mut Outputs) -> anyhow::Result<()> {
            let rows: Vec<Row> = r
                .values
                .iter()
                .enumerate()
                .map(|(seed, &value)| Row { seed, value })
                .collect();
            out.csv("values.csv", &rows)
        }
    }

    #[test]
    fn the_driver_writes_summary_csvs_and_report_and_keeps_partial_results() {
        let dir = std::env::temp_dir().join(format!("hopwise-driver-{}", std::process::id()));
        let opts = Opts {
            command: "hopwise reproduce toy".into(),
            ..Opts::new(&dir, false)
        };
        let o = Experiment::run(&Toy { fail_after: None }, &opts, &Silent).unwrap();
        assert_eq!(o.claims[0].verdict, Verdict::Holds);
        assert_eq!(o.files, ["summary.json", "values.csv", "report.html"]);
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["complete"], true);
        assert_eq!(s["plan"]["seeds"], 4);
        assert_eq!(s["values"][3], 3.0);
        assert_eq!(s["claims"][0]["criterion"], "sum ≥ 3");
        let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(page.contains("a toy &lt;experiment&gt;"), "{page}");
        assert!(page.contains("hopwise reproduce toy"), "{page}");
        // A run that fails after two seeds leaves what it finished.
        let e = Experiment::run(
            &Toy {
                fail_after: Some(2),
            },
            &opts,
            &Silent,
        )
        .unwrap_err();
        assert!(e.to_string().contains("seed 2 failed"));
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["complete"], false);
        assert_eq!(s["values"].as_array().unwrap().len(), 2);
        assert_eq!(s["claims"][0]["verdict"], "differs");
        assert_eq!(
            std::fs::read_to_string(dir.join("values.csv")).unwrap(),
            "seed,value\n0,0\n1,1\n"
        );
        let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(page.contains("still running or interrupted"), "{page}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
