//! # hopwise-repro
//!
//! Reproductions of the seed papers' key experiments. Each reproduction is a
//! module with built-in scenarios; `hopwise reproduce <name>` runs it, writes
//! `summary.json`, CSVs and SVG figures into the output directory, and prints
//! each paper claim beside the value we measured.
//!
//! A reproduction module exposes one [`Experiment`] in [`registry`]. It uses
//! [`par_map`] to spread independent runs over the available cores with
//! results in a deterministic order, reports progress through [`Progress`],
//! and returns its [`Claim`]s.

#![forbid(unsafe_code)]

pub mod backtap_circuit;
pub mod backtap_network;
mod figs;
pub mod ledbat_flow;
pub mod ledbat_swarm;
pub mod otcp;
pub mod overlay_ack;
pub mod pendulum;
pub mod report;

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Options shared by every reproduction.
#[derive(Clone, Debug)]
pub struct ReproOpts {
    /// A short variant (a couple of minutes at most) for CI and a first look.
    pub quick: bool,
    /// Seeds (or runs) per data point; `None` = the reproduction's default
    /// (which `quick` may lower).
    pub seeds: Option<u32>,
    /// Output directory.
    pub out: PathBuf,
    /// Worker threads for independent runs (default: available cores).
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

/// Whether a measurement supports a paper's claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The measurement meets the claim (as the "must show" states it).
    Holds,
    /// It does not.
    Differs,
    /// Reported for comparison only; no pass/fail criterion.
    Info,
}

/// One line of the claim-versus-measurement table.
#[derive(Clone, Debug, Serialize)]
pub struct Claim {
    /// Where the claim comes from, e.g. "Fig. 4".
    pub figure: String,
    /// What the paper (or the acceptance criterion) says.
    pub claim: String,
    /// What we measured, with numbers.
    pub measured: String,
    pub verdict: Verdict,
    /// A parameter that the paper does not give and that we fitted so that
    /// this claim's level is met (the verdict then says little about the
    /// model): which one, and to what.
    pub calibrated: Option<String>,
}

impl Claim {
    pub fn new(
        figure: impl Into<String>,
        claim: impl Into<String>,
        measured: impl Into<String>,
        holds: bool,
    ) -> Claim {
        Claim {
            figure: figure.into(),
            claim: claim.into(),
            measured: measured.into(),
            verdict: if holds {
                Verdict::Holds
            } else {
                Verdict::Differs
            },
            calibrated: None,
        }
    }

    /// Marks the claim as one that `what`, a parameter the paper does not
    /// give, was fitted to.
    pub fn calibrated(mut self, what: impl Into<String>) -> Claim {
        self.calibrated = Some(what.into());
        self
    }
    pub fn info(
        figure: impl Into<String>,
        claim: impl Into<String>,
        measured: impl Into<String>,
    ) -> Claim {
        Claim {
            figure: figure.into(),
            claim: claim.into(),
            measured: measured.into(),
            verdict: Verdict::Info,
            calibrated: None,
        }
    }
}

/// What a reproduction returns.
#[derive(Debug, Default)]
pub struct Outcome {
    pub claims: Vec<Claim>,
    /// Files written, relative to the output directory, in the order
    /// `report.html` shows them.
    pub files: Vec<String>,
    /// Figure → CSV pairs for `report.html` beyond the naming rule of
    /// [`report::data_files`] (a CSV named after its figure needs none).
    pub data: Vec<(String, String)>,
}

/// `data` pairs: each of `figs` with each of `csvs`.
pub fn data_pairs(figs: &[&str], csvs: &[&str]) -> Vec<(String, String)> {
    figs.iter()
        .flat_map(|f| csvs.iter().map(move |c| (f.to_string(), c.to_string())))
        .collect()
}

/// Progress reporting, implemented by the CLI (a progress bar) or by tests (nothing).
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

/// A reproduction that `hopwise reproduce` can run.
pub struct Experiment {
    /// The name on the command line, e.g. "pendulum".
    pub name: &'static str,
    /// Which seed paper and what it shows, one line.
    pub about: &'static str,
    /// Wall time on the 2-core reference machine, quick and full, as
    /// measured for its doc in docs/reproductions/ (shown by `--list`).
    pub wall: &'static str,
    pub run: fn(&ReproOpts, &dyn Progress) -> anyhow::Result<Outcome>,
}

/// Every reproduction, in the order `--list` shows them.
pub fn registry() -> Vec<Experiment> {
    vec![
        pendulum::experiment(),
        ledbat_flow::experiment(),
        ledbat_swarm::experiment(),
        overlay_ack::experiment(),
        backtap_circuit::experiment(),
        backtap_network::experiment(),
        otcp::experiment(),
    ]
}

/// Finds a reproduction by name.
pub fn find(name: &str) -> Option<Experiment> {
    registry().into_iter().find(|e| e.name == name)
}

/// Maps `f` over `items` on up to `jobs` threads. Results come back in the
/// order of `items`, whatever order the work finished in, so reproductions
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

/// Writes `value` as pretty JSON to `dir/summary.json`.
pub fn write_summary<T: Serialize>(dir: &Path, value: &T) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let s = serde_json::to_string_pretty(value)?;
    std::fs::write(dir.join("summary.json"), s + "\n")?;
    Ok(())
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

/// A CSV cell as RFC 4180 writes it: quoted, with quotes doubled, when it
/// holds a comma, a quote or a line break; otherwise as it is.
pub fn csv_cell(c: &str) -> std::borrow::Cow<'_, str> {
    if c.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", c.replace('"', "\"\"")).into()
    } else {
        c.into()
    }
}

/// Writes a CSV file from a header and rows of already-formatted cells
/// (quoted where needed, [`csv_cell`]). A missing value, formatted from
/// NaN (no sample, an undefined ratio), is written as an empty cell, as
/// every CSV of the reproductions has it (summary.json has `null`).
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> anyhow::Result<()> {
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        cells
            .map(|c| if c == "NaN" { "".into() } else { csv_cell(c) })
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

/// Mean and sample standard deviation; `(NaN, NaN)` for no samples.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (m, 0.0);
    }
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
    (m, v.sqrt())
}

/// Two-sided Student-t critical value for a 90 % confidence interval with
/// `df` degrees of freedom (table for small df, normal limit beyond).
pub fn t90(df: usize) -> f64 {
    const T: [f64; 30] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
        1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
        1.703, 1.701, 1.699, 1.697,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        31..=60 => 1.671,
        61..=120 => 1.658,
        _ => 1.645,
    }
}

/// Mean with the half-width of its 90 % confidence interval.
pub fn mean_ci90(xs: &[f64]) -> (f64, f64) {
    let (m, sd) = mean_sd(xs);
    if xs.len() < 2 {
        return (m, f64::NAN);
    }
    (m, t90(xs.len() - 1) * sd / (xs.len() as f64).sqrt())
}

/// A 90 % percentile-bootstrap interval (Efron and Tibshirani 1993, §13.3)
/// of a statistic over `n` independent units (runs): `stat` gets the indices
/// of one resample, `n` draws with replacement, and the interval is the 5th
/// and 95th percentile over `reps` resamples. The draws come from the named
/// stream `name` (xoshiro256++, seeded from the name), so the interval is
/// deterministic. Resamples whose statistic is not finite (NaN or ±∞, say a
/// ratio over a zero variance) are left out, which narrows the interval;
/// `(NaN, NaN)` for `n == 0` or no finite resample.
pub fn bootstrap_ci90(
    n: usize,
    reps: usize,
    name: &str,
    stat: impl Fn(&[usize]) -> f64,
) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = hopwise_sim::rng::Rng::for_component(0, name);
    let mut idx = vec![0usize; n];
    let mut vals = Vec::with_capacity(reps);
    for _ in 0..reps {
        for i in idx.iter_mut() {
            *i = rng.below(n as u64) as usize;
        }
        let v = stat(&idx);
        if v.is_finite() {
            vals.push(v);
        }
    }
    (quantile(&vals, 0.05), quantile(&vals, 0.95))
}

/// The `q`-quantile (0..=1) by linear interpolation; NaN for no samples.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Formats a table of claims for the terminal.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::new();
    for c in claims {
        let mark = match c.verdict {
            Verdict::Holds => "holds  ",
            Verdict::Differs => "DIFFERS",
            Verdict::Info => "info   ",
        };
        // The headline, then what it left out (our criterion, the paper's
        // numbers) on a line of its own, without repeating the headline.
        let head = short(&c.claim);
        s.push_str(&format!("[{mark}] {}: {head}\n", c.figure));
        let rest = c.claim[head.len()..].trim_start_matches([';', '.', ' ']);
        if !rest.trim_end().is_empty() {
            s.push_str(&format!("          {}\n", rest.trim_end()));
        }
        s.push_str(&format!("          ours:  {}\n", c.measured));
        if let Some(what) = &c.calibrated {
            s.push_str(&format!(
                "          calibrated: {what}, so the verdict follows from the fit\n"
            ));
        }
    }
    s
}

/// The headline of a claim: up to the first `;` or the first full stop that
/// ends a sentence (". " before a capital letter, not after "Fig", "Eq" or
/// another abbreviation), so that decimals ("0.7", "2.4 Mbit/s") and
/// references ("Eq. 11") stay whole; never inside parentheses.
fn short(s: &str) -> &str {
    const ABBREVIATIONS: [&str; 8] = ["Fig", "Figs", "Eq", "Eqs", "Sec", "e.g", "i.e", "cf"];
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            ';' => return s[..i].trim_end(),
            '.' => {
                let mut rest = s[i + 1..].chars();
                let ends_sentence = rest.next() == Some(' ')
                    && rest.next().is_some_and(char::is_uppercase)
                    && !ABBREVIATIONS.iter().any(|a| s[..i].ends_with(a));
                if ends_sentence {
                    return &s[..i];
                }
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headlines_stop_at_a_sentence_or_semicolon_outside_parentheses() {
        assert_eq!(short("A holds; criterion: x"), "A holds");
        assert_eq!(short("Eq. 11 fits. More text"), "Eq. 11 fits");
        assert_eq!(
            short("Late-comer (bucket, 10 ms refill; RTT 120 ms); more"),
            "Late-comer (bucket, 10 ms refill; RTT 120 ms)"
        );
        let c = |claim: &str| Claim {
            figure: "Fig. 1".into(),
            claim: claim.into(),
            measured: "3".into(),
            verdict: Verdict::Holds,
            calibrated: None,
        };
        let t = claims_table(&[c("r is 3"), c("r is 3; paper: about 3")]);
        assert_eq!(t.matches("r is 3").count(), 2, "each headline once: {t}");
        assert_eq!(t.matches("paper: about 3").count(), 1, "{t}");
        assert!(t.contains("\n          paper: about 3\n"), "{t}");
        let t = claims_table(&[c("Eq. 11 fits. More text.")]);
        assert!(
            t.contains("] Fig. 1: Eq. 11 fits\n          More text.\n"),
            "{t}"
        );
        let t = claims_table(&[c("r is 3").calibrated("the buffer (64 kB)")]);
        assert!(
            t.contains("\n          calibrated: the buffer (64 kB), so"),
            "{t}"
        );
    }

    #[test]
    fn counts_take_the_singular_only_for_one() {
        assert_eq!(plural(0, "run"), "0 runs");
        assert_eq!(plural(1, "run"), "1 run");
        assert_eq!(plural(16, "circuit"), "16 circuits");
    }

    #[test]
    fn csv_cells_with_commas_and_quotes_are_quoted() {
        assert_eq!(csv_cell("plain"), "plain");
        assert_eq!(csv_cell("bucket, 10 ms refill"), "\"bucket, 10 ms refill\"");
        assert_eq!(csv_cell("a \"b\""), "\"a \"\"b\"\"\"");
        let dir = std::env::temp_dir().join(format!("hopwise-csv-cell-{}", std::process::id()));
        let path = dir.join("t.csv");
        write_csv(
            &path,
            &["case", "x"],
            &[
                vec!["equal delays, no delayed ACKs".into(), "1".into()],
                vec!["none".into(), format!("{}", f64::NAN)],
            ],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "case,x\n\"equal delays, no delayed ACKs\",1\nnone,\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

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

    #[test]
    fn bootstrap_interval_covers_the_mean_and_narrows_with_more_units() {
        // Unit i has the value i % 10: over 0..20 or 0..200 the mean is
        // 4.5 and the sd about 2.9.
        let mean =
            |idx: &[usize]| idx.iter().map(|&i| (i % 10) as f64).sum::<f64>() / idx.len() as f64;
        let (lo20, hi20) = bootstrap_ci90(20, 2000, "t", mean);
        let (lo200, hi200) = bootstrap_ci90(200, 2000, "t", mean);
        assert!(lo20 < 4.5 && 4.5 < hi20, "{lo20}..{hi20}");
        assert!(lo200 < 4.5 && 4.5 < hi200, "{lo200}..{hi200}");
        // The normal approximation gives ±1.645·2.87/√n: ±1.06 and ±0.33.
        assert!((hi20 - lo20 - 2.1).abs() < 0.5, "{lo20}..{hi20}");
        assert!((hi200 - lo200 - 0.67).abs() < 0.15, "{lo200}..{hi200}");
        // Deterministic per stream name; another name draws other resamples.
        assert_eq!(
            bootstrap_ci90(20, 500, "t", mean),
            bootstrap_ci90(20, 500, "t", mean)
        );
        assert_ne!(
            bootstrap_ci90(20, 500, "t", mean),
            bootstrap_ci90(20, 500, "u", mean)
        );
        assert!(bootstrap_ci90(0, 10, "t", mean).0.is_nan());
    }

    #[test]
    fn claim_headline_keeps_decimals_and_references() {
        assert_eq!(
            short("Without uploads the download gets nearly all of the 2.4 Mbit/s (>= 90 %)"),
            "Without uploads the download gets nearly all of the 2.4 Mbit/s (>= 90 %)"
        );
        assert_eq!(
            short("Tp = 100 ms: simulation follows Eq. 11 (within +-40 %)"),
            "Tp = 100 ms: simulation follows Eq. 11 (within +-40 %)"
        );
        assert_eq!(
            short("NewReno keeps most of the link; criterion: share >= 0.7"),
            "NewReno keeps most of the link"
        );
        assert_eq!(short("As in Fig. 4. Then more"), "As in Fig. 4");
        assert_eq!(short("share >= 0.7. Paper: 0.9"), "share >= 0.7");
    }

    #[test]
    fn statistics() {
        let (m, sd) = mean_sd(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m - 2.5).abs() < 1e-12 && (sd - 1.290_994_448_735_805_6).abs() < 1e-12);
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.25), 1.25);
        let (_, hw) = mean_ci90(&[1.0, 2.0, 3.0, 4.0]);
        assert!((hw - 2.353 * 1.290_994_448_735_805_6 / 2.0).abs() < 1e-9);
        assert!(t90(1000) < t90(10));
    }
}
