//! Transitional: the reproductions' old entry points, adapted to the
//! toolkit's driver until each paper implements `Reproduction`.

use hopwise_experiment::{report, Claim, Opts, Progress};
use std::path::{Path, PathBuf};

/// Options shared by every reproduction.
#[derive(Clone, Debug)]
pub struct ReproOpts {
    pub quick: bool,
    pub seeds: Option<u32>,
    pub out: PathBuf,
    pub jobs: usize,
}

impl ReproOpts {
    /// Seeds per point: the user's choice, else `full` or `quick`.
    pub fn seeds_or(&self, full: u32, quick: u32) -> u32 {
        self.seeds
            .unwrap_or(if self.quick { quick } else { full })
            .max(1)
    }
}

/// What a reproduction returns.
#[derive(Debug, Default)]
pub struct Outcome {
    pub claims: Vec<Claim>,
    pub files: Vec<String>,
    pub data: Vec<(String, String)>,
}

/// `data` pairs: each of `figs` with each of `csvs`.
pub fn data_pairs(figs: &[&str], csvs: &[&str]) -> Vec<(String, String)> {
    figs.iter()
        .flat_map(|f| csvs.iter().map(move |c| (f.to_string(), c.to_string())))
        .collect()
}

/// A claim judged by a condition written in its own words.
pub fn legacy_claim(
    figure: impl Into<String>,
    claim: impl Into<String>,
    measured: impl Into<String>,
    holds: bool,
) -> Claim {
    Claim::new(figure, claim)
        .measured(measured)
        .fact("(criterion in the claim's words)", holds)
}

/// Writes a CSV file from a header and rows of formatted cells.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> anyhow::Result<()> {
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        cells
            .map(|c| {
                if c == "NaN" {
                    "".into()
                } else {
                    hopwise_experiment::csv::cell(c)
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut s = line(&mut header.iter().copied());
    s.push('\n');
    for r in rows {
        s.push_str(&line(&mut r.iter().map(String::as_str)));
        s.push('\n');
    }
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(path, s)?;
    Ok(())
}

/// A reproduction that `hopwise reproduce` can run.
pub struct Experiment {
    pub name: &'static str,
    pub about: &'static str,
    pub wall: &'static str,
    pub run: fn(&ReproOpts, &dyn Progress) -> anyhow::Result<Outcome>,
}

impl hopwise_experiment::Experiment for Experiment {
    fn name(&self) -> &'static str {
        self.name
    }
    fn about(&self) -> &'static str {
        self.about
    }
    fn wall(&self) -> &'static str {
        self.wall
    }
    fn doc(&self) -> String {
        format!("docs/reproductions/{}.md", self.name)
    }
    fn run(
        &self,
        opts: &Opts,
        progress: &dyn Progress,
    ) -> anyhow::Result<hopwise_experiment::Outcome> {
        #[allow(clippy::disallowed_methods)] // wall time for the report only
        let t0 = std::time::Instant::now();
        let o = (self.run)(
            &ReproOpts {
                quick: opts.quick,
                seeds: opts.seeds,
                out: opts.out.clone(),
                jobs: opts.jobs,
            },
            progress,
        )?;
        progress.finish();
        let wall_s = t0.elapsed().as_secs_f64();
        let mut facts = vec![
            format!("command: {}", opts.command),
            format!(
                "{} variant, {}, {wall_s:.1} s wall, hopwise {}",
                if opts.quick { "quick" } else { "full" },
                hopwise_experiment::plural(opts.jobs, "worker thread"),
                env!("CARGO_PKG_VERSION")
            ),
        ];
        if opts.quick {
            facts.push(hopwise_experiment::driver::quick_caveat(&format!(
                "docs/reproductions/{}.md",
                self.name
            )));
        }
        let data: Vec<(&str, &str)> = o
            .data
            .iter()
            .map(|(f, c)| (f.as_str(), c.as_str()))
            .collect();
        let title = format!("hopwise {}", self.name);
        report::write(
            &opts.out,
            &report::ReportMeta {
                title: &title,
                about: self.about,
                facts: &facts,
                text: None,
                data: &data,
            },
            &o.claims,
            &o.files,
        )?;
        let mut files = o.files;
        files.push("report.html".into());
        Ok(hopwise_experiment::Outcome {
            claims: o.claims,
            files,
            wall_s,
        })
    }
}
