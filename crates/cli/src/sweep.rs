//! `hopwise sweep`: one scenario over a grid of parameter values and seeds,
//! with means and 90 % confidence intervals per grid point.

use anyhow::{bail, Context, Result};
use hopwise_experiment::stats::mean_ci90;
use hopwise_experiment::{csv, par_map, Progress, Silent};
use hopwise_plot::{BarChart, Chart, Figure, Series};
use hopwise_sim::report::Summary;
use hopwise_sim::scenario::{self, ScenarioError};
use hopwise_sim::spec::{FlowSpec, Scenario};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

mod overlay;

/// One `--vary KEY=V1,V2,...`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// Parses `--vary KEY=V1,V2,...`: a key, `=`, and at least one non-empty value.
pub fn parse_vary(s: &str) -> Result<Axis, String> {
    let shown = hopwise_sim::scenario::shorten(s);
    let Some((key, vals)) = s.split_once('=') else {
        return Err(format!(
            "`{shown}`: expected KEY=V1,V2,... (for example link.bottleneck.queue=20pkt,50pkt)"
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("`{shown}`: the key before `=` is empty"));
    }
    let values: Vec<String> = vals.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!(
            "`{shown}`: a value is empty (values are separated by commas)"
        ));
    }
    let unbalanced = |v: &String| {
        v.matches('{').count() != v.matches('}').count()
            || v.matches('[').count() != v.matches(']').count()
    };
    if let Some(v) = values.iter().find(|v| unbalanced(v)) {
        return Err(format!(
            "`{shown}`: values are split at commas, which cuts `{v}` short: an inline table or \
             array with commas cannot be a --vary value. Vary one of its keys instead, \
             e.g. --set {key}=... --vary {key}.KEY=V1,V2"
        ));
    }
    // A value given twice would run the same point twice (and then warn
    // that two points gave identical results): refuse it before running.
    // Values are compared as written, then as quantities, so that `20pkt`
    // and `20 pkt`, or `1s` and `1000ms`, count as the same.
    let mut as_written: HashSet<&str> = HashSet::new();
    let mut as_quantity: HashMap<(u8, u64), &str> = HashMap::new();
    for v in &values {
        if !as_written.insert(v) {
            return Err(format!(
                "{key}: the value `{v}` is given twice; each value is one point \
                 (for repeated runs of a point use --seeds N)"
            ));
        }
        // Beyond 2^53 an f64 no longer tells neighbouring integers apart
        // (the scenario keeps them exact): compare those as written only.
        let exact = |x: f64| x.abs() < 9_007_199_254_740_992.0;
        if let Some((kind, x, _)) = quantity(v).filter(|q| exact(q.1)) {
            // 0.0 and -0.0 are the same value.
            let x = if x == 0.0 { 0.0 } else { x };
            if let Some(w) = as_quantity.insert((kind as u8, x.to_bits()), v) {
                return Err(format!(
                    "{key}: `{w}` and `{v}` are the same value, given twice; each value is \
                     one point (for repeated runs of a point use --seeds N)"
                ));
            }
        }
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// One grid point: a value per axis, in axis order.
type Point = Vec<String>;

fn grid(axes: &[Axis]) -> Vec<Point> {
    let mut pts: Vec<Point> = vec![Vec::new()];
    for a in axes {
        pts = pts
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v.clone());
                    q
                })
            })
            .collect();
    }
    pts
}

fn label(axes: &[Axis], p: &Point) -> String {
    if axes.is_empty() {
        // No --vary: the one point is the scenario as it is.
        return "as is".to_string();
    }
    if axes.len() == 1 {
        return p[0].clone();
    }
    axes.iter()
        .zip(p)
        .map(|(a, v)| format!("{}={v}", a.key))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The length of the number at the start of `v`: an optional sign, digits
/// and a decimal point, and an exponent (`e`, an optional sign, digits) only
/// when digits follow it, so "2e" is 2 with the unit "e" and "1e-3" is 0.001.
fn number_prefix(v: &str) -> usize {
    let b = v.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'-' | b'+')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// What kind of quantity a `--vary` value is, when it is one.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A plain number (no unit).
    Number,
    Packets,
    /// Bytes (`B`, `kB`, `MiB`, …).
    Size,
    /// Bits per second (`bit`, `Mbit`, `kB/s`, …).
    Rate,
    /// Seconds (`ns` … `h`).
    Duration,
}

/// `v` read as a quantity the scenario format knows: its kind, its value in
/// the kind's base unit (1, packets, bytes, bit/s, seconds) and its unit as
/// written. `None` for anything else (names, booleans, tables, unknown units).
fn quantity(v: &str) -> Option<(Kind, f64, &str)> {
    use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate};
    let v = v.trim();
    let split = number_prefix(v);
    let x: f64 = v[..split].parse().ok().filter(|x: &f64| x.is_finite())?;
    let unit = v[split..].trim();
    if unit.is_empty() {
        return Some((Kind::Number, x, unit));
    }
    if ["pkt", "pkts", "packet", "packets"].contains(&unit) {
        return (x >= 0.0).then_some((Kind::Packets, x, unit));
    }
    if let Ok(d) = parse_duration(v) {
        return Some((Kind::Duration, d.as_secs_f64(), unit));
    }
    if let Ok(r) = parse_rate(v) {
        return Some((Kind::Rate, r.bps() as f64, unit));
    }
    if let Ok(b) = parse_bytes(v) {
        return Some((Kind::Size, b.get() as f64, unit));
    }
    None
}

/// The values of a single axis as numbers with one common unit, for a
/// numeric x axis; `None` otherwise. Values written with the same unit
/// keep it ("10pkt", "20pkt" → 10, 20 and "pkt"); values of one kind of
/// quantity in different units are converted to the unit most of them were
/// written in, the first value's on a tie ("5Mbit", "10000kbit", "20Mbit"
/// → 5, 10, 20 and "Mbit").
fn numeric(values: &[String]) -> Option<(Vec<f64>, String)> {
    let as_written = || {
        let mut unit: Option<&str> = None;
        let mut xs = Vec::new();
        for v in values {
            let split = number_prefix(v);
            let x: f64 = v[..split].parse().ok()?;
            let u = v[split..].trim();
            match unit {
                Some(w) if w != u => return None,
                _ => unit = Some(u),
            }
            xs.push(x);
        }
        Some((xs, unit.unwrap_or_default().to_string()))
    };
    if let Some(x) = as_written() {
        return Some(x);
    }
    let qs: Vec<(Kind, f64, &str)> = values.iter().map(|v| quantity(v)).collect::<Option<_>>()?;
    let kind = qs.first()?.0;
    if qs.iter().any(|q| q.0 != kind) {
        return None;
    }
    let count = |u: &str| qs.iter().filter(|q| q.2 == u).count();
    let unit = qs.iter().map(|q| q.2).fold(
        qs[0].2,
        |best, u| if count(u) > count(best) { u } else { best },
    );
    let scale = quantity(&format!("1{unit}"))
        .filter(|q| q.0 == kind && q.1 > 0.0)?
        .1;
    Some((qs.iter().map(|q| q.1 / scale).collect(), unit.to_string()))
}

/// One measured value of a run.
#[derive(Clone, Debug)]
struct Sample {
    metric: &'static str,
    subject: String,
    value: f64,
}

/// What one run measured. `flows` are the scenario's flows: those that
/// `count` expanded into `<name>-0` … are also summed, as subject
/// `<name>-*` (and `<name>-*/rev` for the reverse direction of `bidir`
/// flows), so that a sweep over `count` has one series to plot.
fn samples(s: &Summary, flows: &[FlowSpec]) -> Vec<Sample> {
    let mut v = Vec::new();
    let group_of: HashMap<&str, &str> = flows
        .iter()
        .filter_map(|x| x.group.as_deref().map(|g| (x.name.as_str(), g)))
        .collect();
    let mut groups: Vec<(String, [f64; 3])> = Vec::new();
    for f in &s.flows {
        let (base, rev) = match f.name.strip_suffix("/rev") {
            Some(b) => (b, "/rev"),
            None => (f.name.as_str(), ""),
        };
        if let Some(g) = group_of.get(base) {
            let key = format!("{g}-*{rev}");
            let add = [f.goodput_bps, f.bytes_delivered as f64, f.timeouts as f64];
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, sum)) => sum.iter_mut().zip(add).for_each(|(a, b)| *a += b),
                None => groups.push((key, add)),
            }
        }
    }
    for f in &s.flows {
        v.push(Sample {
            metric: "goodput_bps",
            subject: f.name.clone(),
            value: f.goodput_bps,
        });
        v.push(Sample {
            metric: "bytes_delivered",
            subject: f.name.clone(),
            value: f.bytes_delivered as f64,
        });
        v.push(Sample {
            metric: "timeouts",
            subject: f.name.clone(),
            value: f.timeouts as f64,
        });
        // Latency per flow (not summed over replicas: a sum of delays
        // means nothing); a flow without samples has none.
        for (&metric, value) in LATENCY_METRICS.iter().zip(latency(f)) {
            if let Some(value) = value {
                v.push(Sample {
                    metric,
                    subject: f.name.clone(),
                    value,
                });
            }
        }
    }
    for (key, [goodput, bytes, timeouts]) in groups {
        for (metric, value) in [
            ("goodput_bps", goodput),
            ("bytes_delivered", bytes),
            ("timeouts", timeouts),
        ] {
            v.push(Sample {
                metric,
                subject: key.clone(),
                value,
            });
        }
    }
    v.push(Sample {
        metric: "bytes_delivered",
        subject: "all flows".into(),
        value: s.flows.iter().map(|f| f.bytes_delivered as f64).sum(),
    });
    if let Some(j) = s.jain {
        v.push(Sample {
            metric: "jain",
            subject: "all flows".into(),
            value: j,
        });
    }
    for l in &s.links {
        for (metric, value) in [
            ("utilization", l.utilization),
            ("mean_queue_packets", l.mean_queue_packets),
            ("loss_rate", l.loss_rate),
        ] {
            v.push(Sample {
                metric,
                subject: l.name.clone(),
                value,
            });
        }
    }
    v
}

/// The latency metrics a sweep keeps per flow, in the order of [`latency`].
const LATENCY_METRICS: [&str; 8] = [
    "rtt_mean_ms",
    "rtt_median_ms",
    "rtt_p95_ms",
    "rtt_p99_ms",
    "queue_delay_mean_ms",
    "queue_delay_median_ms",
    "queue_delay_p95_ms",
    "queue_delay_p99_ms",
];

/// A flow's latency summary, in the order of [`LATENCY_METRICS`].
fn latency(f: &hopwise_sim::report::FlowSummary) -> [Option<f64>; 8] {
    [
        f.rtt_mean_ms,
        f.rtt_median_ms,
        f.rtt_p95_ms,
        f.rtt_p99_ms,
        f.queue_delay_mean_ms,
        f.queue_delay_median_ms,
        f.queue_delay_p95_ms,
        f.queue_delay_p99_ms,
    ]
}

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

/// Whether two runs measured exactly the same values.
fn same(a: &[Sample], b: &[Sample]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.metric == y.metric && x.subject == y.subject && x.value.to_bits() == y.value.to_bits()
        })
}

/// A 64-bit hash of a run's values, to find points that measured the same
/// without keeping every point's values (two different runs share one with
/// a chance of about 1 in 10^19 per pair).
fn fingerprint(run: &[Sample]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for x in run {
        x.metric.hash(&mut h);
        x.subject.hash(&mut h);
        x.value.to_bits().hash(&mut h);
    }
    h.finish()
}

/// Warnings about results that look like a mistake: seeds that change
/// nothing (no randomness in the scenario, so the intervals are 0; `flat`
/// points had all seeds identical), and points with different values but
/// identical results (a key that does not take effect), found through the
/// [`fingerprint`] of each point's first run.
fn sameness(
    axes: &[Axis],
    points: &[Point],
    seeds: usize,
    flat: usize,
    first_runs: &[u64],
) -> Vec<String> {
    let mut w = Vec::new();
    if seeds > 1 {
        if flat == points.len() {
            w.push(format!(
                "all {seeds} seeds gave identical results at every point, so the intervals are 0: \
                 the scenario has no randomness (give flows a start_jitter or links a loss)"
            ));
        } else if flat > 0 {
            w.push(format!(
                "at {flat} of {} points all {seeds} seeds gave identical results",
                points.len()
            ));
        }
    }
    let mut by_hash: std::collections::BTreeMap<u64, Vec<usize>> = Default::default();
    for (i, &h) in first_runs.iter().enumerate() {
        by_hash.entry(h).or_default().push(i);
    }
    // How many pairs of points agree, and the first three of them: only
    // those are shown, so each group (indices ascending) gives at most its
    // three first pairs rather than all of them (a key without effect on a
    // long axis makes every pair of its points agree).
    let mut n_pairs: u128 = 0;
    let mut pairs = Vec::new();
    for group in by_hash.values() {
        let n = group.len() as u128;
        n_pairs += n * n.saturating_sub(1) / 2;
        let lex = group
            .iter()
            .enumerate()
            .flat_map(|(k, &j)| group[k + 1..].iter().map(move |&i| (j, i)));
        pairs.extend(lex.take(3));
    }
    pairs.sort_unstable();
    if n_pairs > 0 {
        let shown: Vec<String> = pairs
            .iter()
            .take(3)
            .map(|&(a, b)| {
                format!(
                    "{} and {}",
                    label(axes, &points[a]),
                    label(axes, &points[b])
                )
            })
            .collect();
        w.push(format!(
            "{} gave identical results ({}{}): check that the varied key takes effect \
             (a direction's own value, e.g. link.X.ab.queue, overrides link.X.queue)",
            if n_pairs == 1 { "two points" } else { "points" },
            shown.join("; "),
            if n_pairs > 3 {
                format!("; {} more pairs", n_pairs - 3)
            } else {
                String::new()
            }
        ));
    }
    w
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

/// The mean (± CI) of `metric` for `subject` at each point.
fn series_of(s: &SweepSummary, metric: &str, subject: &str) -> Vec<(f64, Option<f64>)> {
    s.points
        .iter()
        .map(|p| {
            p.metrics
                .iter()
                .find(|m| m.metric == metric && m.subject == subject)
                .map_or((f64::NAN, None), |m| (m.mean, m.ci90))
        })
        .collect()
}

/// Subjects of `metric` in first-seen order.
fn subjects(s: &SweepSummary, metric: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for p in &s.points {
        for m in p.metrics.iter().filter(|m| m.metric == metric) {
            if seen.insert(&m.subject) {
                v.push(m.subject.clone());
            }
        }
    }
    v
}

/// The flows to plot and tabulate: every flow's goodput subject, except
/// that the replicas `count` made are replaced by their sum, placed where
/// the first replica was.
fn shown_flows(s: &SweepSummary) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for f in subjects(s, "goodput_bps") {
        let f = s.replicas.get(&f).cloned().unwrap_or(f);
        if !v.contains(&f) {
            v.push(f);
        }
    }
    v
}

/// Links that carried traffic at some point (utilisation above 1 % or drops).
fn busy_links(s: &SweepSummary) -> Vec<String> {
    subjects(s, "utilization")
        .into_iter()
        .filter(|l| {
            series_of(s, "utilization", l).iter().any(|v| v.0 > 0.01)
                || series_of(s, "loss_rate", l).iter().any(|v| v.0 > 0.0)
        })
        .collect()
}

const MAX_SERIES: usize = 12;
/// Most points a bar chart shows (all are in the CSVs).
const MAX_CLUSTERS: usize = 40;

fn plots(out: &Path, axes: &[Axis], points: &[Point], s: &SweepSummary) -> Result<Vec<String>> {
    let num = if axes.len() == 1 {
        numeric(&axes[0].values)
    } else {
        None
    };
    let x_label = match &num {
        Some((_, u)) if !u.is_empty() => format!("{} ({u})", axes[0].key),
        _ => axes
            .iter()
            .map(|a| a.key.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let links = busy_links(s);
    let flows = shown_flows(s);
    let goodput_title = if s.replicas.is_empty() {
        "goodput per flow"
    } else {
        "goodput per flow (name-*: sum over its replicas)"
    };
    let panels: Vec<(&str, &str, Vec<String>, f64)> = vec![
        (goodput_title, "goodput_bps", flows, 1e-6),
        (
            "Jain's index over flows",
            "jain",
            vec!["all flows".to_string()],
            1.0,
        ),
        ("link utilisation", "utilization", links.clone(), 1.0),
        ("mean queue", "mean_queue_packets", links.clone(), 1.0),
        ("loss rate", "loss_rate", links, 1.0),
        (
            "median RTT per flow",
            "rtt_median_ms",
            subjects(s, "rtt_median_ms"),
            1.0,
        ),
        (
            "95th-percentile queueing delay per flow",
            "queue_delay_p95_ms",
            subjects(s, "queue_delay_p95_ms"),
            1.0,
        ),
    ];
    let y_label = |metric: &str| match metric {
        "goodput_bps" => "goodput (Mbit/s)",
        "jain" => "Jain's index",
        "utilization" => "utilisation",
        "mean_queue_packets" => "mean queue (packets)",
        "rtt_median_ms" => "median RTT (ms)",
        "queue_delay_p95_ms" => "p95 queueing delay (ms)",
        _ => "loss rate",
    };
    let mut fig = Figure::new(
        format!(
            "sweep of `{}`: mean over {} per point{}",
            s.scenario,
            hopwise_experiment::plural(s.seeds.len(), "seed"),
            if s.seeds.len() > 1 {
                ", error bars: 90 % CI"
            } else {
                ""
            }
        ),
        2,
    )
    .panel_size(560, 340);
    for (k, (title, metric, subjects, scale)) in panels.into_iter().enumerate() {
        if subjects.is_empty() {
            continue;
        }
        let letter = (b'a' + k as u8) as char;
        let shown = subjects.len().min(MAX_SERIES);
        let note = if shown < subjects.len() {
            format!(" ({shown} of {} shown)", subjects.len())
        } else {
            String::new()
        };
        let clusters = if num.is_none() && points.len() > MAX_CLUSTERS {
            format!(" (first {MAX_CLUSTERS} of {} points)", points.len())
        } else {
            String::new()
        };
        let title = format!("({letter}) {title}{note}{clusters}");
        match &num {
            Some((xs, _)) => {
                let mut c = Chart::new(title)
                    .x_label(x_label.clone())
                    .y_label(y_label(metric));
                for subj in subjects.iter().take(shown) {
                    // In x order, whatever order the values were given in.
                    let mut v: Vec<(f64, f64, Option<f64>)> = xs
                        .iter()
                        .zip(series_of(s, metric, subj))
                        .map(|(x, (m, h))| (*x, m, h))
                        .collect();
                    v.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let pts = v.iter().map(|&(x, m, _)| (x, m * scale)).collect();
                    let mut ser = Series::line_points(subj.clone(), pts);
                    if s.seeds.len() > 1 {
                        ser = ser.with_error_bars(
                            v.iter()
                                .map(|&(_, m, h)| {
                                    // Every metric here is non-negative.
                                    let h = h.unwrap_or(0.0);
                                    ((m - h).max(0.0) * scale, (m + h) * scale)
                                })
                                .collect(),
                        );
                    }
                    c.push_series(ser);
                }
                fig.push_panel(c);
            }
            None => {
                // One bar colour per subject, one cluster per point (its
                // values; the x label names the keys).
                let mut b = BarChart::new(title)
                    .x_label(x_label.clone())
                    .y_label(y_label(metric));
                for subj in subjects.iter().take(shown) {
                    let v = series_of(s, metric, subj);
                    let bars = points
                        .iter()
                        .zip(&v)
                        .take(MAX_CLUSTERS)
                        .map(|(p, &(m, h))| {
                            let cat = if p.is_empty() {
                                label(axes, p)
                            } else {
                                p.join(", ")
                            };
                            // Every metric here is non-negative.
                            let e = h.map_or((f64::NAN, f64::NAN), |h| ((m - h).max(0.0), m + h));
                            (cat, m * scale, (e.0 * scale, e.1 * scale))
                        })
                        .collect();
                    b = if s.seeds.len() > 1 {
                        b.group_with_errors(subj.clone(), bars)
                    } else {
                        b.group(
                            subj.clone(),
                            bars.into_iter().map(|(c, m, _)| (c, m)).collect(),
                        )
                    };
                }
                fig.push_panel(b);
            }
        }
    }
    fig.write_svg(out.join("sweep.svg"))
        .with_context(|| format!("writing {}", out.join("sweep.svg").display()))?;
    Ok(vec!["sweep.svg".to_string()])
}

/// The terminal table: per point, the bytes all flows delivered, Jain's
/// index and each flow's goodput (means over seeds).
fn table(axes: &[Axis], points: &[Point], s: &SweepSummary) -> String {
    use std::fmt::Write as _;
    const MAX_ROWS: usize = 200;
    let flows = shown_flows(s);
    let shown = flows.len().min(6);
    let head = if axes.len() == 1 {
        axes[0].key.as_str()
    } else {
        "point"
    };
    let w = points
        .iter()
        .map(|p| label(axes, p).chars().count())
        .chain([head.chars().count()])
        .max()
        .unwrap_or(5);
    let num = |x: f64, scale: f64| {
        if x.is_finite() {
            format!("{:.3}", x * scale)
        } else {
            "–".to_string()
        }
    };
    let pad = |t: &str, width: usize| {
        format!("{t}{}", " ".repeat(width.saturating_sub(t.chars().count())))
    };
    let tot = series_of(s, "bytes_delivered", "all flows");
    let jain = series_of(s, "jain", "all flows");
    let per_flow: Vec<Vec<(f64, Option<f64>)>> = flows
        .iter()
        .take(shown)
        .map(|fl| series_of(s, "goodput_bps", fl))
        .collect();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "means over {}; the flow columns are goodput in Mbit/s{} (–: the flow is not in that point)",
        hopwise_experiment::plural(s.seeds.len(), "seed"),
        if s.seeds.len() > 1 { " ± 90 % CI" } else { "" }
    );
    // Each flow column as wide as its widest cell (at least 12).
    let cells: Vec<Vec<String>> = per_flow
        .iter()
        .map(|v| {
            v.iter()
                .map(|&(m, h)| match h {
                    Some(h) if m.is_finite() && h.is_finite() => {
                        format!("{:.3}±{:.3}", m * 1e-6, h * 1e-6)
                    }
                    _ => num(m, 1e-6),
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .map(|c| {
            c.iter()
                .take(MAX_ROWS)
                .map(|x| x.chars().count())
                .fold(12, usize::max)
        })
        .collect();
    let _ = write!(o, "{} {:>12} {:>6}", pad(head, w), "delivered MB", "Jain");
    for (fl, &cw) in flows.iter().take(shown).zip(&widths) {
        let _ = write!(o, " {:>cw$}", fl.chars().take(cw).collect::<String>());
    }
    o.push('\n');
    for (i, p) in points.iter().enumerate().take(MAX_ROWS) {
        let _ = write!(
            o,
            "{} {:>12} {:>6}",
            pad(&label(axes, p), w),
            num(tot[i].0, 1e-6),
            if jain[i].0.is_finite() {
                format!("{:.3}", jain[i].0)
            } else {
                "n/a".into()
            }
        );
        for (c, &cw) in cells.iter().zip(&widths) {
            let _ = write!(o, " {:>cw$}", c[i]);
        }
        o.push('\n');
    }
    if points.len() > MAX_ROWS {
        let _ = writeln!(o, "({} more points in points.csv)", points.len() - MAX_ROWS);
    }
    if shown < flows.len() {
        let _ = writeln!(o, "({} more flows in points.csv)", flows.len() - shown);
    }
    o.push_str(&latency_table(axes, points, s, head, w));
    o
}

/// The latency part of the terminal table: per point and flow, the median
/// RTT and the 95th-percentile queueing delay (means over seeds, in ms);
/// empty if no flow has latency samples.
fn latency_table(
    axes: &[Axis],
    points: &[Point],
    s: &SweepSummary,
    head: &str,
    w: usize,
) -> String {
    use std::fmt::Write as _;
    const MAX_ROWS: usize = 200;
    let flows = subjects(s, "rtt_median_ms");
    if flows.is_empty() {
        return String::new();
    }
    let shown = flows.len().min(6);
    let ms = |v: f64| {
        if v.is_finite() {
            format!("{v:.2}")
        } else {
            "–".to_string()
        }
    };
    let cells: Vec<Vec<String>> = flows
        .iter()
        .take(shown)
        .map(|fl| {
            let rtt = series_of(s, "rtt_median_ms", fl);
            let qd = series_of(s, "queue_delay_p95_ms", fl);
            rtt.iter()
                .zip(&qd)
                .map(|(r, q)| format!("{}/{}", ms(r.0), ms(q.0)))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .zip(&flows)
        .map(|(c, fl)| {
            c.iter()
                .take(MAX_ROWS)
                .map(|x| x.chars().count())
                .fold(fl.chars().count().clamp(12, 24), usize::max)
        })
        .collect();
    let pad = |t: &str| format!("{t}{}", " ".repeat(w.saturating_sub(t.chars().count())));
    let mut o = String::from(
        "\nlatency per flow: median RTT / 95th-percentile queueing delay, ms (means over seeds)\n",
    );
    let _ = write!(o, "{}", pad(head));
    for (fl, &cw) in flows.iter().take(shown).zip(&widths) {
        let _ = write!(o, " {:>cw$}", fl.chars().take(cw).collect::<String>());
    }
    o.push('\n');
    for (i, p) in points.iter().enumerate().take(MAX_ROWS) {
        let _ = write!(o, "{}", pad(&label(axes, p)));
        for (c, &cw) in cells.iter().zip(&widths) {
            let _ = write!(o, " {:>cw$}", c[i]);
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points that agree are counted, not listed: a key without effect on
    /// a long axis makes every pair agree, and only three pairs are shown.
    #[test]
    fn identical_points_are_counted_not_listed() {
        let n = 3000;
        let axes = vec![Axis {
            key: "k".into(),
            values: (0..n).map(|i| i.to_string()).collect(),
        }];
        let points: Vec<Point> = (0..n).map(|i| vec![i.to_string()]).collect();
        // Points 0..n-1 agree, except the last, which agrees with nobody.
        let mut first = vec![7u64; n];
        first[n - 1] = 8;
        let w = sameness(&axes, &points, 1, 0, &first);
        let pairs = (n - 1) * (n - 2) / 2;
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("(0 and 1; 0 and 2; 0 and 3;")
                && w[0].contains(&format!("{} more pairs", pairs - 3)),
            "{}",
            w[0]
        );
        let w = sameness(&axes[..], &points[..2], 1, 0, &[1, 1]);
        assert!(
            w[0].starts_with("two points gave identical results (0 and 1)"),
            "{w:?}"
        );
    }

    #[test]
    fn vary_parses_keys_and_values_and_names_mistakes() {
        assert_eq!(
            parse_vary("link.b.queue=20pkt, 50pkt").unwrap(),
            Axis {
                key: "link.b.queue".into(),
                values: vec!["20pkt".into(), "50pkt".into()]
            }
        );
        assert!(parse_vary("link.b.queue")
            .unwrap_err()
            .contains("KEY=V1,V2"));
        assert!(parse_vary("=1,2").unwrap_err().contains("key"));
        assert!(parse_vary("a=1,,2").unwrap_err().contains("empty"));
        let e = parse_vary("flow.f1.cc={algo=\"vegas\",alpha=1},cubic").unwrap_err();
        assert!(
            e.contains("split at commas") && e.contains("--set flow.f1.cc="),
            "{e}"
        );
        // A value given twice, as written or as the same quantity.
        let e = parse_vary("link.bottleneck.queue=20pkt,20pkt").unwrap_err();
        assert!(
            e.contains("link.bottleneck.queue") && e.contains("`20pkt` is given twice"),
            "{e}"
        );
        for (vals, a, b) in [
            ("20pkt,50pkt,20 pkt", "20pkt", "20 pkt"),
            ("1s,1000ms", "1s", "1000ms"),
            ("10Mbit,10000kbit", "10Mbit", "10000kbit"),
            ("1kB,1000B", "1kB", "1000B"),
            ("0.5,0.50", "0.5", "0.50"),
        ] {
            let e = parse_vary(&format!("k={vals}")).unwrap_err();
            assert!(
                e.starts_with("k: ") && e.contains(&format!("`{a}` and `{b}` are the same value")),
                "{vals}: {e}"
            );
        }
        // Different kinds with the same number are different values.
        assert!(parse_vary("k=1000B,1000pkt,1000").is_ok());
        // Integers beyond 2^53 that an f64 cannot tell apart are different.
        assert!(parse_vary("k=9007199254740992,9007199254740993").is_ok());
        assert!(parse_vary("k=cubic,reno,1Mbit,1MB").is_ok());
        // A one-key inline table has no comma and stays a value.
        assert_eq!(
            parse_vary("flow.f1.cc={algo=\"vegas\"},cubic")
                .unwrap()
                .values,
            vec!["{algo=\"vegas\"}".to_string(), "cubic".to_string()]
        );
    }

    #[test]
    fn grid_is_the_product_with_the_first_key_slowest() {
        let a = |k: &str, v: &[&str]| Axis {
            key: k.into(),
            values: v.iter().map(|s| s.to_string()).collect(),
        };
        let g = grid(&[a("x", &["1", "2"]), a("y", &["a", "b", "c"])]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec!["1", "a"]);
        assert_eq!(g[2], vec!["1", "c"]);
        assert_eq!(g[3], vec!["2", "a"]);
    }

    #[test]
    fn numeric_axes_need_one_unit() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            numeric(&v(&["10pkt", "2.5pkt"])),
            Some((vec![10.0, 2.5], "pkt".into()))
        );
        assert_eq!(
            numeric(&v(&["1e3", "-2"])),
            Some((vec![1000.0, -2.0], String::new()))
        );
        assert_eq!(numeric(&v(&["cubic", "reno"])), None);
        // One kind of quantity in several units: the commonest unit.
        assert_eq!(
            numeric(&v(&["5Mbit", "10000kbit", "20Mbit"])),
            Some((vec![5.0, 10.0, 20.0], "Mbit".into()))
        );
        assert_eq!(
            numeric(&v(&["10ms", "1s"])),
            Some((vec![10.0, 1000.0], "ms".into()))
        );
        assert_eq!(
            numeric(&v(&["64kB", "1MB", "500B", "2MB"])),
            Some((vec![0.064, 1.0, 0.0005, 2.0], "MB".into()))
        );
        assert_eq!(
            numeric(&v(&["20pkt", "50 pkts", "100pkts"])),
            Some((vec![20.0, 50.0, 100.0], "pkts".into()))
        );
        // Different kinds (a packet count and a size) stay categorical.
        assert_eq!(numeric(&v(&["20pkt", "30000B"])), None);
        assert_eq!(numeric(&v(&["10ms", "cubic"])), None);
        assert_eq!(numeric(&v(&["1Mbit", "1MB"])), None);
        // "2e" is a number followed by the unit "e", not an exponent.
        assert_eq!(
            numeric(&v(&["2e", "3e"])),
            Some((vec![2.0, 3.0], "e".into()))
        );
    }
}
