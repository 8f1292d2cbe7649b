//! `hopwise sweep merge DIR`: the shards' runs, checked to cover every run
//! of the plan exactly once and to come from its plan and binary, handed
//! in run order to the writer the sweep on one machine uses; and
//! `hopwise sweep status DIR`: which shards are done, started or missing.

use super::output::Output;
use super::plan::{short, Plan};
use super::shard::{file, hash_file, parse_stem, show_range, slice, stem, Done, RunLine};
use super::threads;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What DIR/shards holds of one shard I-of-N.
#[derive(Default)]
struct Found {
    done: Option<PathBuf>,
    runs: bool,
    partial: bool,
}

/// The shards' files in DIR/shards, by (N, I).
fn scan(dir: &Path) -> Result<BTreeMap<(usize, usize), Found>> {
    let mut found: BTreeMap<(usize, usize), Found> = BTreeMap::new();
    let shards = dir.join("shards");
    let entries = match std::fs::read_dir(&shards) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot list", shards.display())),
    };
    for e in entries {
        let e = e.with_context(|| format!("{}: cannot list", shards.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((s, ext)) = name.split_once('.') else {
            continue;
        };
        let Some((i, n)) = parse_stem(s) else {
            continue;
        };
        let f = found.entry((n, i)).or_default();
        match ext {
            "done.json" => f.done = Some(e.path()),
            "runs.jsonl" => f.runs = true,
            "runs.jsonl.partial" => f.partial = true,
            _ => {}
        }
    }
    Ok(found)
}

/// A finished shard of the plan.
struct Shard {
    name: String,
    done: Done,
    runs_file: PathBuf,
}

/// What a shard's done record turned out to be.
#[derive(Clone, Copy, PartialEq)]
enum Rec {
    /// Of this plan and binary, and its runs file is the one it recorded.
    Good,
    /// Of another plan or binary.
    Foreign,
    /// Does not parse, or is at odds with its name or its runs file.
    Bad,
}

/// The done records in DIR/shards, each checked against the plan, its own
/// name and its runs file (length and SHA-256).
struct Records {
    /// The good shards.
    shards: Vec<Shard>,
    state: BTreeMap<(usize, usize), Rec>,
    /// What is wrong with the others, a line each naming the file.
    foreign: Vec<String>,
    bad: Vec<String>,
}

fn records(dir: &Path, plan: &Plan, found: &BTreeMap<(usize, usize), Found>) -> Records {
    let mut r = Records {
        shards: Vec::new(),
        state: BTreeMap::new(),
        foreign: Vec::new(),
        bad: Vec::new(),
    };
    for (&(n, i), f) in found {
        let Some(path) = &f.done else { continue };
        let (rec, why) = match check_record(dir, plan, path, i, n, f) {
            Ok(shard) => {
                r.shards.push(shard);
                (Rec::Good, None)
            }
            Err((rec, why)) => (rec, Some(why)),
        };
        r.state.insert((n, i), rec);
        match (rec, why) {
            (Rec::Foreign, Some(w)) => r.foreign.push(w),
            (Rec::Bad, Some(w)) => r.bad.push(w),
            _ => {}
        }
    }
    r
}

/// Shard `i` of `n`'s done record at `path`, checked.
fn check_record(
    dir: &Path,
    plan: &Plan,
    path: &Path,
    i: usize,
    n: usize,
    f: &Found,
) -> Result<Shard, (Rec, String)> {
    let d = Done::read(path).map_err(|e| (Rec::Bad, format!("{e:#}")))?;
    if d.plan_sha256 != plan.plan_sha256 {
        return Err((
            Rec::Foreign,
            format!(
                "{} ({}): of another plan (plan sha256 {}…, plan.json's {}…)",
                path.display(),
                show_range(&d.range()),
                short(&d.plan_sha256),
                short(&plan.plan_sha256)
            ),
        ));
    }
    if d.binary_sha256 != plan.binary_sha256 {
        return Err((
            Rec::Foreign,
            format!(
                "{} ({}): run by another binary (SHA-256 {}…, the plan's {}… at {})",
                path.display(),
                show_range(&d.range()),
                short(&d.binary_sha256),
                short(&plan.binary_sha256),
                plan.binary_path
            ),
        ));
    }
    let want = slice(i, n, plan.runs);
    if (d.shard, d.shards) != (i, n) || d.range() != want {
        return Err((
            Rec::Bad,
            format!(
                "{}: the record is of shard {} ({}), but its name says {} of this plan's \
                 {} runs ({}); remove it and run the shard again",
                path.display(),
                stem(d.shard, d.shards),
                show_range(&d.range()),
                stem(i, n),
                plan.runs,
                show_range(&want)
            ),
        ));
    }
    let runs_file = file(dir, i, n, "runs.jsonl");
    if !f.runs {
        return Err((
            Rec::Bad,
            format!(
                "{}: the shard's runs file is missing, but its done record {} is there; \
                 remove the record and run the shard again",
                runs_file.display(),
                path.display()
            ),
        ));
    }
    let (bytes, sha) = hash_file(&runs_file).map_err(|e| (Rec::Bad, format!("{e:#}")))?;
    if (bytes, sha.as_str()) != (d.runs_bytes, d.runs_sha256.as_str()) {
        return Err((
            Rec::Bad,
            format!(
                "{}: not the runs file its done record {} was written with ({bytes} bytes, \
                 SHA-256 {}…; the record says {} bytes, {}…): it was changed or replaced \
                 (by another plan's?); remove both and run the shard again",
                runs_file.display(),
                path.display(),
                short(&sha),
                d.runs_bytes,
                short(&d.runs_sha256)
            ),
        ));
    }
    Ok(Shard {
        name: stem(i, n),
        done: d,
        runs_file,
    })
}

/// How the good shards cover the plan's runs: the pairs that overlap, and
/// the runs no shard has.
struct Cover {
    overlaps: Vec<String>,
    gaps: Vec<Range<usize>>,
}

impl Cover {
    /// The runs in no good shard.
    fn missing(&self) -> usize {
        self.gaps.iter().map(|g| g.len()).sum()
    }

    fn hits(&self, r: &Range<usize>) -> bool {
        self.gaps.iter().any(|g| g.start < r.end && r.start < g.end)
    }
}

/// Sorts the shards in run order (dropping empty ones) and finds overlaps
/// and gaps.
fn cover(plan: &Plan, shards: &mut Vec<Shard>) -> Cover {
    shards.retain(|s| !s.done.range().is_empty());
    shards.sort_by_key(|s| s.done.run_range);
    let mut overlaps = Vec::new();
    for w in shards.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if a.done.range().end > b.done.range().start {
            overlaps.push(format!(
                "{} ({}) and {} ({})",
                a.name,
                show_range(&a.done.range()),
                b.name,
                show_range(&b.done.range())
            ));
        }
    }
    let mut gaps = Vec::new();
    let mut next = 0;
    for s in shards.iter() {
        if s.done.range().start > next {
            gaps.push(next..s.done.range().start);
        }
        next = next.max(s.done.range().end);
    }
    if next < plan.runs {
        gaps.push(next..plan.runs);
    }
    Cover { overlaps, gaps }
}

/// `hopwise sweep merge`'s checks: refuses bad and foreign done records,
/// shards whose runs overlap and runs no shard has, naming them.
fn check_cover(
    dir: &Path,
    plan: &Plan,
    recs: &mut Records,
    found: &BTreeMap<(usize, usize), Found>,
) -> Result<()> {
    if !recs.bad.is_empty() {
        bail!("{}", recs.bad.join("\n"));
    }
    if !recs.foreign.is_empty() {
        bail!(
            "{} from another plan or binary, which cannot be merged with {}:\n  {}\n\
             remove their .done.json and .runs.jsonl files and run those shards again \
             with the plan's binary",
            hopwise_experiment::plural(recs.foreign.len(), "shard"),
            dir.join("plan.json").display(),
            recs.foreign.join("\n  ")
        );
    }
    let cov = cover(plan, &mut recs.shards);
    if !cov.overlaps.is_empty() {
        bail!(
            "{}: shards overlap (a shard run twice with different numbers of shards): {}; \
             remove the files of one of each pair (its .done.json and .runs.jsonl) and \
             merge again",
            dir.join("shards").display(),
            cov.overlaps.join("; ")
        );
    }
    if !cov.gaps.is_empty() {
        // The shards that would fill the gaps, for each N seen.
        let mut missing = Vec::new();
        for &(n, _) in found.keys() {
            for i in 0..n {
                let r = slice(i, n, plan.runs);
                let f = found.get(&(n, i));
                if !r.is_empty() && f.is_none_or(|f| f.done.is_none()) && cov.hits(&r) {
                    let started = f.is_some_and(|f| f.partial);
                    let name = format!(
                        "{}{}",
                        stem(i, n),
                        if started {
                            " (started, not finished)"
                        } else {
                            ""
                        }
                    );
                    if !missing.contains(&name) {
                        missing.push(name);
                    }
                }
            }
        }
        bail!(
            "{}: {} of {} runs are in no finished shard: {}{}; run them, then merge again \
             (`hopwise sweep status {}` lists the shards and the command to resubmit them)",
            dir.display(),
            cov.missing(),
            plan.runs,
            cov.gaps
                .iter()
                .map(show_range)
                .collect::<Vec<_>>()
                .join(", "),
            if missing.is_empty() {
                String::new()
            } else {
                format!(" (missing shards: {})", missing.join(", "))
            },
            dir.display()
        );
    }
    Ok(())
}

/// `hopwise sweep merge DIR [--out OUT]`.
pub fn merge(dir: &Path, out: Option<&Path>, jobs: Option<usize>, quiet: bool) -> Result<()> {
    let plan = Plan::read(dir)?;
    // Like a shard: the outputs are the plan's binary's.
    plan.check_binary(dir, "hopwise sweep merge")?;
    let found = scan(dir)?;
    let mut recs = records(dir, &plan, &found);
    check_cover(dir, &plan, &mut recs, &found)?;
    let shards = recs.shards;
    let c = plan.check(dir, threads(jobs), quiet)?;
    let out = out.unwrap_or(dir);
    let mut o = Output::create(out, &c)?;
    let n = plan.seeds.len();
    let mut next = 0;
    for s in &shards {
        let f = std::fs::File::open(&s.runs_file)
            .with_context(|| format!("{}: cannot read", s.runs_file.display()))?;
        for (k, line) in std::io::BufReader::new(f).lines().enumerate() {
            let at = || format!("{}:{}", s.runs_file.display(), k + 1);
            let line = line.with_context(|| format!("{}: cannot read", at()))?;
            let r: RunLine = serde_json::from_str(&line)
                .with_context(|| format!("{}: not a run of a shard", at()))?;
            if r.run != next
                || !s.done.range().contains(&r.run)
                || r.point != c.points[r.run / n]
                || r.seed != plan.seeds[r.run % n]
            {
                bail!(
                    "{}: expected run {next} (point {:?}, seed {}), found run {} (point {:?}, \
                     seed {}): the file is damaged; remove the shard's files and run it again",
                    at(),
                    c.points[next.min(c.runs() - 1) / n],
                    plan.seeds[next % n],
                    r.run,
                    r.point,
                    r.seed
                );
            }
            o.run(r.run, r.samples.into_iter().map(|x| x.sample()).collect())?;
            next += 1;
        }
        if next != s.done.range().end {
            bail!(
                "{}: {} of the shard's {} are in the file; it is damaged: remove the \
                 shard's files and run it again",
                s.runs_file.display(),
                next - s.done.range().start,
                show_range(&s.done.range())
            );
        }
    }
    // The sweep's wall time is the shards' summed.
    let wall: f64 = shards.iter().map(|s| s.done.wall_s).sum();
    o.finish(wall, quiet, &["plan.json"])
}

/// Shard numbers as Slurm's `--array` takes them: `1,3,5-7`.
pub(super) fn compress(ids: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut k = 0;
    while k < ids.len() {
        let mut j = k;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j == k {
            ids[k].to_string()
        } else {
            format!("{}-{}", ids[k], ids[j])
        });
        k = j + 1;
    }
    parts.join(",")
}

/// DIR/slurm/slurm.json: the number of shards the job array runs.
pub(super) fn slurm_record(dir: &Path) -> PathBuf {
    dir.join("slurm").join("slurm.json")
}

/// `hopwise sweep status DIR [--shards N]`. Whether every run is in
/// exactly one finished shard of the plan, found as `merge` finds it:
/// `Ok(true)` when `merge` can run, `Ok(false)` when runs are missing or
/// shards must be removed first (the command then exits with status 2).
pub fn status(dir: &Path, shards: Option<usize>) -> Result<bool> {
    let plan = Plan::read(dir)?;
    let found = scan(dir)?;
    let rec = slurm_record(dir);
    let from_slurm = std::fs::read_to_string(&rec)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["shards"].as_u64())
        .map(|n| n as usize);
    let mut ns: Vec<usize> = found.keys().map(|k| k.0).collect();
    ns.dedup();
    let n = match (shards, from_slurm, &ns[..]) {
        (Some(n), ..) | (None, Some(n), _) | (None, None, &[n]) => n,
        (None, None, []) => bail!(
            "{}: no shard has started and no job array was written, so the number of shards \
             is not known: give --shards N",
            dir.display()
        ),
        (None, None, _) => bail!(
            "{}: shards of several numbers of shards ({}); give --shards N",
            dir.display(),
            ns.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if n == 0 {
        bail!("--shards: the number of shards must be at least 1");
    }
    let mut recs = records(dir, &plan, &found);
    let cov = cover(&plan, &mut recs.shards);
    let (mut done, mut started, mut missing, mut empty, mut covered) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let f = found.get(&(n, i));
        let r = slice(i, n, plan.runs);
        match recs.state.get(&(n, i)) {
            Some(Rec::Good) => done.push(i),
            _ if r.is_empty() => empty.push(i),
            _ if !cov.hits(&r) => covered.push(i),
            None if f.is_some_and(|f| f.partial) => started.push(i),
            _ => missing.push(i),
        }
    }
    let runs_done = plan.runs - cov.missing();
    println!(
        "{}: {} ({} × {}); {n} shards: {} done, {} started, {} missing{}{}; {runs_done} of {} \
         runs done",
        dir.display(),
        hopwise_experiment::plural(plan.runs, "run"),
        hopwise_experiment::plural(plan.points, "point"),
        hopwise_experiment::plural(plan.seeds.len(), "seed"),
        done.len(),
        started.len(),
        missing.len(),
        if empty.is_empty() {
            String::new()
        } else {
            format!(", {} empty", empty.len())
        },
        if covered.is_empty() {
            String::new()
        } else {
            format!(", {} covered by other shards", covered.len())
        },
        plan.runs
    );
    let list = |v: &[usize]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            compress(v)
        }
    };
    println!("done:    {}", list(&done));
    println!(
        "started: {}{}",
        list(&started),
        if started.is_empty() {
            ""
        } else {
            " (running now, or died: a shard that died left its .partial file; run it again)"
        }
    );
    println!("missing: {}", list(&missing));
    if !empty.is_empty() {
        println!(
            "empty:   {} (more shards than runs: these have no runs, nothing to wait for)",
            compress(&empty)
        );
    }
    if !covered.is_empty() {
        println!(
            "covered: {} (their runs are in finished shards of another number of shards)",
            compress(&covered)
        );
    }
    for p in &recs.bad {
        println!("  corrupt: {p}");
    }
    for p in &recs.foreign {
        println!("  {p} (merge refuses it: remove it and its runs file to run the shard again)");
    }
    if !cov.overlaps.is_empty() {
        println!(
            "  shards overlap (merge refuses them: remove the files of one of each pair): {}",
            cov.overlaps.join("; ")
        );
    }
    let others: Vec<String> = found
        .iter()
        .filter(|((m, _), f)| *m != n && f.done.is_some())
        .map(|((m, i), _)| stem(*i, *m))
        .collect();
    if !others.is_empty() {
        println!(
            "also done, with another number of shards: {}",
            others.join(", ")
        );
    }
    let script = dir.join("slurm").join("array.sbatch");
    let d = crate::run::shell_word(&dir.display().to_string());
    if !missing.is_empty() {
        println!(
            "resubmit the missing ones: sbatch --array={} {}{}",
            compress(&missing),
            crate::run::shell_word(&script.display().to_string()),
            if script.exists() {
                String::new()
            } else {
                format!(" (write it first: hopwise sweep slurm {d} --shards {n})")
            }
        );
    }
    if !started.is_empty() {
        println!(
            "if the started ones died: sbatch --array={} {}",
            compress(&started),
            crate::run::shell_word(&script.display().to_string())
        );
    }
    let mergeable = cov.gaps.is_empty()
        && cov.overlaps.is_empty()
        && recs.bad.is_empty()
        && recs.foreign.is_empty();
    if mergeable {
        println!("all runs done: hopwise sweep merge {d}");
    } else if cov.gaps.is_empty() {
        println!("all runs done, but merge refuses the records above until they are removed");
    }
    Ok(mergeable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_lists_are_compressed_into_ranges() {
        assert_eq!(compress(&[1, 3, 5, 6, 7]), "1,3,5-7");
        assert_eq!(compress(&[0, 1]), "0-1");
        assert_eq!(compress(&[4]), "4");
        assert_eq!(compress(&[]), "");
    }
}
