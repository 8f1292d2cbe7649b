//! A sweep's plan, DIR/plan.json (`hopwise sweep ... --plan DIR`): all that
//! the shards and `merge` need to know, so that they never read the
//! scenario file again — the scenario's text, the `--set` and `--vary`
//! values and the seeds — with a hash over exactly those (the plan hash),
//! and the SHA-256 of the binary that wrote it, which every shard must be.

use super::axes::{grid, Axis};
use super::{check, Checked, Grid};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The version of plan.json's format this hopwise reads and writes.
const FORMAT: u32 = 1;

/// DIR/plan.json.
#[derive(Serialize, Deserialize)]
pub(super) struct Plan {
    pub(super) format: u32,
    pub(super) hopwise_version: String,
    /// The sweep as one command on one machine (summary.json's `command`).
    pub(super) command: String,
    pub(super) points: usize,
    pub(super) runs: usize,
    /// SHA-256 over what determines the results: the compact JSON of
    /// scenario, origin, sets, vary and seeds, in that order.
    pub(super) plan_sha256: String,
    /// SHA-256 of the binary that wrote the plan; shards must be run by it.
    pub(super) binary_sha256: String,
    pub(super) binary_path: String,
    /// Where the scenario came from, as given.
    pub(super) origin: String,
    pub(super) sets: Vec<String>,
    pub(super) vary: Vec<Axis>,
    pub(super) seeds: Vec<u64>,
    /// The scenario file's text.
    pub(super) scenario: String,
}

/// What the plan hash covers.
#[derive(Serialize)]
struct Hashed<'a> {
    scenario: &'a str,
    origin: &'a str,
    sets: &'a [String],
    vary: &'a [Axis],
    seeds: &'a [u64],
}

/// Lower-case hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The path and the SHA-256 of the running binary.
pub(super) fn this_binary() -> Result<(PathBuf, String)> {
    let path = std::env::current_exe().context("finding this program's file, to hash it")?;
    let mut f = std::fs::File::open(&path)
        .with_context(|| format!("{}: cannot read this program, to hash it", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)
        .with_context(|| format!("{}: cannot read this program, to hash it", path.display()))?;
    Ok((path, hex(&h.finalize())))
}

/// The first 12 hex digits of a hash, for messages that name several.
pub(super) fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

impl Plan {
    /// The plan hash of this plan's contents.
    fn hash(&self) -> String {
        let h = Hashed {
            scenario: &self.scenario,
            origin: &self.origin,
            sets: &self.sets,
            vary: &self.vary,
            seeds: &self.seeds,
        };
        let bytes = serde_json::to_vec(&h).expect("a plan serialises");
        hex(&Sha256::digest(bytes))
    }

    /// The plan of a checked sweep, written by this binary.
    fn of(c: &Checked) -> Result<Plan> {
        let (bin, binary_sha256) = this_binary()?;
        let mut p = Plan {
            format: FORMAT,
            hopwise_version: env!("CARGO_PKG_VERSION").to_string(),
            command: c.command(),
            points: c.points.len(),
            runs: c.runs(),
            plan_sha256: String::new(),
            binary_sha256,
            binary_path: bin.display().to_string(),
            origin: c.grid.origin.clone(),
            sets: c.grid.sets.clone(),
            vary: c.grid.axes.clone(),
            seeds: c.seeds.clone(),
            scenario: c.grid.text.clone(),
        };
        p.plan_sha256 = p.hash();
        Ok(p)
    }

    /// Reads DIR/plan.json and checks that it still hashes to its plan hash.
    pub(super) fn read(dir: &Path) -> Result<Plan> {
        let path = dir.join("plan.json");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{}: cannot read the plan (write one with `hopwise sweep [FILE] --vary ... \
                 --plan {}`)",
                path.display(),
                dir.display()
            )
        })?;
        let format = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("format").and_then(|f| f.as_u64()));
        if format.is_some_and(|f| f != FORMAT as u64) {
            bail!(
                "{}: plan format {}, but this hopwise ({}) reads format {FORMAT}: \
                 use the hopwise that wrote the plan, or plan again",
                path.display(),
                format.unwrap_or_default(),
                env!("CARGO_PKG_VERSION")
            );
        }
        let plan: Plan = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a sweep plan", path.display()))?;
        let h = plan.hash();
        if h != plan.plan_sha256 {
            bail!(
                "{}: the plan was changed after it was written: its contents hash to {h}, \
                 not to its plan_sha256 {}; plan again (into another directory if shards \
                 of the old plan are to be kept)",
                path.display(),
                plan.plan_sha256
            );
        }
        let points = grid(&plan.vary).len();
        if points != plan.points || points * plan.seeds.len() != plan.runs {
            bail!(
                "{}: points {} and runs {} do not match the --vary values and seeds \
                 ({points} points × {} seeds); plan again",
                path.display(),
                plan.points,
                plan.runs,
                plan.seeds.len()
            );
        }
        Ok(plan)
    }

    /// Refuses unless this binary is the one that wrote the plan: results
    /// may differ between builds (see docs/sweeps-on-a-cluster.md).
    pub(super) fn check_binary(&self, dir: &Path, what: &str) -> Result<()> {
        let (me, mine) = this_binary()?;
        if mine != self.binary_sha256 {
            bail!(
                "{what}: this hopwise ({}, SHA-256 {mine}) is not the binary that wrote \
                 {} (SHA-256 {}, at {}); results can differ between builds, so every shard \
                 must run the plan's binary: run that one (copy it to every node), or plan \
                 again with this one into another directory",
                me.display(),
                dir.join("plan.json").display(),
                self.binary_sha256,
                self.binary_path
            );
        }
        Ok(())
    }

    /// The grid the plan runs (points are `grid(&vary)`).
    pub(super) fn grid(&self) -> Grid {
        Grid {
            text: self.scenario.clone(),
            origin: self.origin.clone(),
            sets: self.sets.clone(),
            axes: self.vary.clone(),
        }
    }

    /// The sweep checked again from the plan's text, as `merge` needs it
    /// (the scenario's name, the replicated flows).
    pub(super) fn check(&self, dir: &Path, jobs: usize, quiet: bool) -> Result<Checked> {
        let c = check(
            (self.scenario.clone(), self.origin.clone()),
            &self.vary,
            self.seeds.len() as u32,
            &self.sets,
            jobs,
            quiet,
            u64::MAX,
        )
        .with_context(|| format!("{}", dir.join("plan.json").display()))?;
        if c.seeds != self.seeds {
            bail!(
                "{}: the plan's seeds {:?} are not the scenario's ({:?})",
                dir.join("plan.json").display(),
                self.seeds,
                c.seeds
            );
        }
        Ok(c)
    }
}

/// `hopwise sweep ... --plan DIR`: writes DIR/plan.json for the checked
/// sweep `c` and says what to run next.
pub(super) fn write(dir: &Path, c: &Checked) -> Result<()> {
    let plan = Plan::of(c)?;
    let path = dir.join("plan.json");
    let shards = dir.join("shards");
    let has_shards = std::fs::read_dir(&shards).is_ok_and(|mut d| d.next().is_some());
    if has_shards && path.exists() {
        let old = Plan::read(dir);
        let same = old.as_ref().is_ok_and(|o| {
            o.plan_sha256 == plan.plan_sha256 && o.binary_sha256 == plan.binary_sha256
        });
        if !same {
            let why = match &old {
                Ok(o) if o.plan_sha256 != plan.plan_sha256 => format!(
                    "it holds shards of another plan (plan sha256 {}…, this one {}…)",
                    short(&o.plan_sha256),
                    short(&plan.plan_sha256)
                ),
                Ok(o) => format!(
                    "its shards were run by another binary (SHA-256 {}…, this one {}…)",
                    short(&o.binary_sha256),
                    short(&plan.binary_sha256)
                ),
                Err(e) => format!("it holds shards, and its plan.json is unusable ({e:#})"),
            };
            bail!(
                "--plan {}: {why}; plan into another directory, or remove {} to start over",
                dir.display(),
                shards.display()
            );
        }
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--plan {}: cannot create the directory", dir.display()))?;
    let tmp = dir.join("plan.json.partial");
    let mut text = serde_json::to_string_pretty(&plan)?;
    text.push('\n');
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
    let d = crate::run::shell_word(&dir.display().to_string());
    println!(
        "plan: {} ({} × {} = {} of `{}`, plan sha256 {}…)\n\
         run its shards on one machine:  hopwise sweep shard {d} --shard 0/1\n\
         or as a Slurm job array:        hopwise sweep slurm {d} --shards N\n\
         then:                           hopwise sweep merge {d}",
        path.display(),
        hopwise_experiment::plural(c.points.len(), "point"),
        hopwise_experiment::plural(c.seeds.len(), "seed"),
        hopwise_experiment::plural(c.runs(), "run"),
        c.name,
        short(&plan.plan_sha256)
    );
    Ok(())
}
