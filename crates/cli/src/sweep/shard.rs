//! `hopwise sweep shard DIR --shard I/N`: runs shard I of N of the sweep
//! planned in DIR, the contiguous slice of run indices
//! [⌊I·R/N⌋, ⌊(I+1)·R/N⌋) of its R runs, and writes each run's samples
//! under DIR/shards/ (`I-of-N.runs.jsonl`, under a `.partial` name until
//! complete) and then its done record (`I-of-N.done.json`), which `merge`
//! and `status` read. A shard already done is skipped.

use super::axes::grid;
use super::plan::{short, Plan};
use super::samples::{metric_name, Sample};
use super::{execute, threads};
use anyhow::{bail, Context, Result};
use hopwise_experiment::{Progress, Silent};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::io::{BufWriter, Write as _};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// The runs of shard `i` of `n` among `runs`.
pub(super) fn slice(i: usize, n: usize, runs: usize) -> Range<usize> {
    let at = |k: usize| (k as u128 * runs as u128 / n as u128) as usize;
    at(i)..at(i + 1)
}

/// Runs `a..b` as people count them: "runs 3-5", "run 3", "no runs".
pub(super) fn show_range(r: &Range<usize>) -> String {
    match r.len() {
        0 => format!("no runs (empty, at {})", r.start),
        1 => format!("run {}", r.start),
        _ => format!("runs {}-{}", r.start, r.end - 1),
    }
}

/// `I-of-N`, the shard's files' stem.
pub(super) fn stem(i: usize, n: usize) -> String {
    format!("{i}-of-{n}")
}

/// `I-of-N` parsed from a shard file's stem.
pub(super) fn parse_stem(s: &str) -> Option<(usize, usize)> {
    let (i, n) = s.split_once("-of-")?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// DIR/shards/I-of-N.<ext>.
pub(super) fn file(dir: &Path, i: usize, n: usize, ext: &str) -> PathBuf {
    dir.join("shards").join(format!("{}.{ext}", stem(i, n)))
}

/// A shard's done record, `I-of-N.done.json`: written once its runs file
/// is complete.
#[derive(Serialize, Deserialize)]
pub(super) struct Done {
    pub(super) plan_sha256: String,
    pub(super) binary_sha256: String,
    pub(super) shard: usize,
    pub(super) shards: usize,
    /// The run indices [first, end) the shard ran (runs.csv's order).
    pub(super) run_range: [usize; 2],
    pub(super) runs: usize,
    /// The runs file's length in bytes and SHA-256, which tie the record
    /// to that file: `merge` checks them.
    pub(super) runs_bytes: u64,
    pub(super) runs_sha256: String,
    pub(super) wall_s: f64,
    pub(super) host: String,
    pub(super) started: String,
    pub(super) ended: String,
}

impl Done {
    pub(super) fn range(&self) -> Range<usize> {
        self.run_range[0]..self.run_range[1]
    }

    /// Reads a done record.
    pub(super) fn read(path: &Path) -> Result<Done> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read the done record", path.display()))?;
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a shard's done record; remove it and run the shard again",
                path.display()
            )
        })
    }
}

/// The length in bytes and the SHA-256 of a file.
pub(super) fn hash_file(path: &Path) -> Result<(u64, String)> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let mut h = sha2::Sha256::new();
    let n = std::io::copy(&mut f, &mut h)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    Ok((n, super::plan::hex(&h.finalize())))
}

/// One line of `I-of-N.runs.jsonl`: a run and what it measured.
#[derive(Serialize, Deserialize)]
pub(super) struct RunLine {
    pub(super) run: usize,
    pub(super) point: Vec<String>,
    pub(super) seed: u64,
    /// (metric, subject, value), in the order the run reported them.
    pub(super) samples: Vec<SampleRec>,
}

/// One sample, its value exact (see [`exact`]).
#[derive(Serialize, Deserialize)]
pub(super) struct SampleRec(String, String, #[serde(with = "exact")] f64);

impl SampleRec {
    pub(super) fn of(s: &Sample) -> SampleRec {
        SampleRec(s.metric.to_string(), s.subject.clone(), s.value)
    }
    pub(super) fn sample(self) -> Sample {
        Sample {
            metric: metric_name(&self.0),
            subject: self.1,
            value: self.2,
        }
    }
}

/// An f64 that reads back with the same bits: a finite value as JSON's
/// shortest round-trip number (read with serde_json's `float_roundtrip`),
/// else a string: `inf`, `-inf`, `NaN`, or `NaN:<bits in hex>` for a NaN
/// other than Rust's `f64::NAN`.
mod exact {
    use serde::de::{self, Visitor};
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *x {
            x if x.is_finite() => s.serialize_f64(x),
            f64::INFINITY => s.serialize_str("inf"),
            f64::NEG_INFINITY => s.serialize_str("-inf"),
            x if x.to_bits() == f64::NAN.to_bits() => s.serialize_str("NaN"),
            x => s.serialize_str(&format!("NaN:{:016x}", x.to_bits())),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(Exact)
    }

    struct Exact;

    impl Visitor<'_> for Exact {
        type Value = f64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a number, or inf, -inf, NaN or NaN:<hex bits>")
        }
        fn visit_f64<E>(self, x: f64) -> Result<f64, E> {
            Ok(x)
        }
        fn visit_u64<E>(self, x: u64) -> Result<f64, E> {
            Ok(x as f64)
        }
        fn visit_i64<E>(self, x: i64) -> Result<f64, E> {
            Ok(x as f64)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<f64, E> {
            match s {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "NaN" => Ok(f64::NAN),
                _ => s
                    .strip_prefix("NaN:")
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .map(f64::from_bits)
                    .filter(|x| x.is_nan())
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(s), &self)),
            }
        }
    }
}

/// The host's name, for the done record.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Now, as RFC 3339 in UTC to the second.
fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// A number from the environment variable `var`, for `--shard slurm`.
fn slurm_var(var: &str) -> Result<usize> {
    match std::env::var(var) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--shard slurm: {var}={v} is not a whole number")),
        Err(_) => bail!(
            "--shard slurm: {var} is not set, so this is not a task of a Slurm job array: \
             submit it with `sbatch --array=...` (`hopwise sweep slurm DIR --shards N` writes \
             the script), or give the shard as --shard I/N"
        ),
    }
}

/// Shard I of N from `--shard I/N` or `--shard slurm` (`shards`: `--shards N`).
fn which(spec: &str, shards: Option<usize>) -> Result<(usize, usize)> {
    let (i, n) = if spec == "slurm" {
        let i = slurm_var("SLURM_ARRAY_TASK_ID")?;
        let n = match shards {
            Some(n) => n,
            None => slurm_var("SLURM_ARRAY_TASK_COUNT")?,
        };
        (i, n)
    } else {
        let parsed = spec
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        let Some((i, n)) = parsed else {
            bail!(
                "--shard {spec}: expected I/N, shard I of N counted from 0 (e.g. 0/4 … 3/4), \
                 or `slurm` for a task of a Slurm job array"
            );
        };
        if shards.is_some_and(|s| s != n) {
            bail!(
                "--shard {spec} --shards {}: two numbers of shards; --shards goes with \
                 --shard slurm",
                shards.unwrap_or_default()
            );
        }
        (i, n)
    };
    if n == 0 {
        bail!("--shard: the number of shards must be at least 1");
    }
    if i >= n {
        bail!(
            "--shard: shard {i} of {n} does not exist: shards are counted from 0 to {}{}",
            n - 1,
            if spec == "slurm" {
                " (the array's task IDs must be 0 to N - 1, as `hopwise sweep slurm` writes them)"
            } else {
                ""
            }
        );
    }
    Ok((i, n))
}

/// `hopwise sweep shard DIR --shard I/N|slurm [--shards N] [--jobs J] [--quiet]`.
pub fn shard(
    dir: &Path,
    spec: &str,
    shards: Option<usize>,
    jobs: Option<usize>,
    quiet: bool,
) -> Result<()> {
    let (i, n) = which(spec, shards)?;
    let plan = Plan::read(dir)?;
    let name = stem(i, n);
    plan.check_binary(dir, &format!("shard {name}"))?;
    let range = slice(i, n, plan.runs);
    let done_path = file(dir, i, n, "done.json");
    if done_path.exists() {
        let d = Done::read(&done_path)?;
        if d.plan_sha256 != plan.plan_sha256 || d.binary_sha256 != plan.binary_sha256 {
            bail!(
                "{}: a done record of another plan or binary (plan sha256 {}…, binary {}…; \
                 {} has {}… and {}…): remove {} to start over, or plan into another directory",
                done_path.display(),
                short(&d.plan_sha256),
                short(&d.binary_sha256),
                dir.join("plan.json").display(),
                short(&plan.plan_sha256),
                short(&plan.binary_sha256),
                dir.join("shards").display()
            );
        }
        println!(
            "shard {name}: done already ({}, on {} at {}); skipped",
            show_range(&d.range()),
            d.host,
            d.ended
        );
        return Ok(());
    }
    let jobs = match jobs {
        Some(j) => j,
        None if spec == "slurm" => match std::env::var("SLURM_CPUS_PER_TASK") {
            Ok(_) => slurm_var("SLURM_CPUS_PER_TASK")?.max(1),
            Err(_) => threads(None),
        },
        None => threads(None),
    };
    let shards_dir = dir.join("shards");
    std::fs::create_dir_all(&shards_dir)
        .with_context(|| format!("{}: cannot create the directory", shards_dir.display()))?;
    let runs_path = file(dir, i, n, "runs.jsonl");
    let partial = file(dir, i, n, "runs.jsonl.partial");
    if !quiet {
        eprintln!(
            "shard {name} of {}: {} on {jobs} thread{}",
            dir.display(),
            show_range(&range),
            if jobs == 1 { "" } else { "s" }
        );
    }
    let started = now();
    let t0 = Instant::now();
    let mut w = BufWriter::new(
        std::fs::File::create(&partial)
            .with_context(|| format!("{}: cannot create", partial.display()))?,
    );
    let g = plan.grid();
    let points = grid(&plan.vary);
    let nseeds = plan.seeds.len();
    let bars = crate::reproduce::Bars::new();
    let progress: &dyn Progress = if quiet { &Silent } else { &bars };
    progress.start(&format!("shard {name}"), range.len() as u64);
    let ran = execute(
        &g,
        &points,
        &plan.seeds,
        range.clone(),
        jobs,
        progress,
        |r, samples| {
            let line = RunLine {
                run: r,
                point: points[r / nseeds].clone(),
                seed: plan.seeds[r % nseeds],
                samples: samples.iter().map(SampleRec::of).collect(),
            };
            serde_json::to_writer(&mut w, &line)?;
            w.write_all(b"\n")
                .with_context(|| format!("writing {}", partial.display()))
        },
    );
    progress.finish();
    ran.with_context(|| format!("shard {name}"))?;
    w.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &runs_path)
        .with_context(|| format!("renaming {} to {}", partial.display(), runs_path.display()))?;
    let wall = t0.elapsed().as_secs_f64();
    let (runs_bytes, runs_sha256) = hash_file(&runs_path)?;
    let done = Done {
        plan_sha256: plan.plan_sha256.clone(),
        binary_sha256: plan.binary_sha256.clone(),
        shard: i,
        shards: n,
        run_range: [range.start, range.end],
        runs: range.len(),
        runs_bytes,
        runs_sha256,
        wall_s: wall,
        host: host(),
        started,
        ended: now(),
    };
    let tmp = file(dir, i, n, "done.json.partial");
    let mut text = serde_json::to_string_pretty(&done)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &done_path)
        .with_context(|| format!("writing {}", done_path.display()))?;
    println!(
        "shard {name}: {} in {wall:.1} s: {}",
        show_range(&range),
        runs_path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_the_runs_once_in_order() {
        for runs in [0, 1, 7, 12, 100] {
            for n in 1..=15 {
                let mut next = 0;
                for i in 0..n {
                    let r = slice(i, n, runs);
                    assert_eq!(r.start, next, "{i}/{n} of {runs}");
                    assert!(r.len() <= runs.div_ceil(n));
                    next = r.end;
                }
                assert_eq!(next, runs, "{n} shards of {runs}");
            }
        }
        assert_eq!(slice(1, 4, 10), 2..5);
        // More shards than runs: some are empty.
        assert_eq!(slice(0, 8, 3), 0..0);
        assert_eq!(slice(7, 8, 3), 2..3);
    }

    #[test]
    fn shard_specs_parse_and_name_mistakes() {
        assert_eq!(which("2/5", None).unwrap(), (2, 5));
        assert_eq!(which("0/1", Some(1)).unwrap(), (0, 1));
        for (spec, shards, want) in [
            ("5/5", None, "shard 5 of 5 does not exist"),
            ("1/0", None, "at least 1"),
            ("1-4", None, "expected I/N"),
            ("a/4", None, "expected I/N"),
            ("1/4", Some(2), "two numbers of shards"),
        ] {
            let e = which(spec, shards).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
        assert_eq!(parse_stem("3-of-10"), Some((3, 10)));
        assert_eq!(parse_stem("3of10"), None);
    }

    /// Values read back from a runs file have the bits they were written with.
    #[test]
    fn sample_values_round_trip_exactly() {
        let mut xs = vec![
            0.1 + 0.2,
            -0.0,
            0.0,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            1e22,
            123_456_789.123_456_79,
            2.0f64.sqrt(),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
        ];
        // Pseudo-random bit patterns (a fixed LCG), finite ones only.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            xs.push(f64::from_bits(s));
        }
        for x in xs {
            let line = serde_json::to_string(&SampleRec("m".into(), "s".into(), x)).unwrap();
            let back: SampleRec = serde_json::from_str(&line).unwrap();
            assert_eq!(back.2.to_bits(), x.to_bits(), "{x:e} via {line}");
        }
        assert!(serde_json::from_str::<SampleRec>(r#"["m","s","NaN:0"]"#).is_err());
    }
}
