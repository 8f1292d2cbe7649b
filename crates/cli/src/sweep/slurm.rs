//! `hopwise sweep slurm DIR --shards N`: a Slurm job array for the sweep
//! planned in DIR. It writes DIR/slurm/array.sbatch (task I runs
//! `hopwise sweep shard DIR --shard slurm --shards N`), merge.sbatch (runs
//! `hopwise sweep merge DIR`), submit.sh (submits the array, then the
//! merge once every task has succeeded) and slurm.json (N, for `status`).

use super::merge::slurm_record;
use super::plan::Plan;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// The job array's settings.
pub struct SlurmOpts {
    pub shards: usize,
    pub cpus_per_task: usize,
    pub time: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub max_array_size: usize,
}

/// `#SBATCH` lines for the options given; refuses values that would break
/// the line.
fn sbatch_lines(o: &SlurmOpts) -> Result<String> {
    let mut s = String::new();
    for (flag, v) in [
        ("time", &o.time),
        ("partition", &o.partition),
        ("account", &o.account),
    ] {
        if let Some(v) = v {
            if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
                bail!("--{flag} {v:?}: expected one word, as sbatch takes it");
            }
            s.push_str(&format!("#SBATCH --{flag}={v}\n"));
        }
    }
    Ok(s)
}

/// Writes `text` to `path` (mode 0755 when `exec`).
fn write(path: &Path, text: &str, exec: bool) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    if exec {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("{}: cannot make it executable", path.display()))?;
    }
    Ok(())
}

/// `hopwise sweep slurm DIR --shards N ...`.
pub fn slurm(dir: &Path, o: &SlurmOpts) -> Result<()> {
    let plan = Plan::read(dir)?;
    let n = o.shards;
    if n == 0 {
        bail!("--shards 0: a job array needs at least one shard");
    }
    if o.cpus_per_task == 0 {
        bail!("--cpus-per-task 0: a task needs at least one CPU");
    }
    if n > o.max_array_size {
        bail!(
            "--shards {n}: a job array's task IDs (0 to {}) must be below the cluster's \
             MaxArraySize, {} by default (--max-array-size {}); use fewer shards (each a few \
             minutes of runs or more), or raise --max-array-size if the cluster allows it \
             (`scontrol show config | grep MaxArraySize`)",
            n - 1,
            1001,
            o.max_array_size
        );
    }
    // This binary goes into the scripts; a shard run by another would be
    // refused on the cluster, so refuse now.
    plan.check_binary(dir, "hopwise sweep slurm")?;
    let extra = sbatch_lines(o)?;
    let abs = std::path::absolute(dir)
        .with_context(|| format!("{}: cannot make the path absolute", dir.display()))?;
    let bin = std::env::current_exe().context("finding this program's path")?;
    let q = |p: &Path| crate::run::shell_word(&p.display().to_string());
    let sdir = abs.join("slurm");
    let logs = sdir.join("logs");
    std::fs::create_dir_all(&logs)
        .with_context(|| format!("{}: cannot create the directory", logs.display()))?;
    let array = sdir.join("array.sbatch");
    let merge = sdir.join("merge.sbatch");
    let submit = sdir.join("submit.sh");
    let runs = plan.runs;
    write(
        &array,
        &format!(
            "#!/bin/sh\n\
             # Written by `hopwise sweep slurm`: task I of this array runs shard I of {n} of\n\
             # the sweep planned in {dir_}: {runs} runs, about {per} a shard.\n\
             #SBATCH --job-name=hopwise-sweep\n\
             #SBATCH --array=0-{last}\n\
             #SBATCH --cpus-per-task={cpus}\n\
             #SBATCH --output={log}\n\
             {extra}\
             exec {bin} sweep shard {dir} --shard slurm --shards {n}\n",
            dir_ = abs.display(),
            per = runs.div_ceil(n),
            last = n - 1,
            cpus = o.cpus_per_task,
            log = logs.join("%A_%a.out").display(),
            bin = q(&bin),
            dir = q(&abs),
        ),
        false,
    )?;
    write(
        &merge,
        &format!(
            "#!/bin/sh\n\
             # Written by `hopwise sweep slurm`: merges the shards of {dir_} into\n\
             # runs.csv, points.csv, summary.json, the figures and report.html there.\n\
             #SBATCH --job-name=hopwise-merge\n\
             #SBATCH --cpus-per-task={cpus}\n\
             #SBATCH --output={log}\n\
             {extra}\
             exec {bin} sweep merge {dir}\n",
            dir_ = abs.display(),
            cpus = o.cpus_per_task,
            log = logs.join("merge_%j.out").display(),
            bin = q(&bin),
            dir = q(&abs),
        ),
        false,
    )?;
    write(
        &submit,
        &format!(
            "#!/bin/bash\n\
             # Written by `hopwise sweep slurm`: submits the job array, then the merge,\n\
             # which starts once every task has succeeded (and is cancelled if one fails).\n\
             # Arguments go to both sbatch calls (e.g. --qos=...), except --wait, which\n\
             # goes to the merge only: `submit.sh --wait` returns when the merge is over,\n\
             # with its exit status.\n\
             set -euo pipefail\n\
             both=()\n\
             wait=()\n\
             waiting=\"\"\n\
             for a in \"$@\"; do\n\
             \x20 case \"$a\" in\n\
             \x20   --wait|-W) wait=(--wait); waiting=\" (waiting for it)\" ;;\n\
             \x20   *) both+=(\"$a\") ;;\n\
             \x20 esac\n\
             done\n\
             # A merge that Slurm cancels (a task failed) still lets `sbatch --wait`\n\
             # return 0, so with --wait the merged summary.json is checked instead.\n\
             mark={mark}\n\
             touch \"$mark\"\n\
             array=$(sbatch --parsable ${{both[@]+\"${{both[@]}}\"}} {array})\n\
             array=${{array%%;*}}\n\
             echo \"job array $array: {n} shards of {dir_}; progress: {bin} sweep status {dir}\"\n\
             echo \"merge job: after the array succeeds$waiting\"\n\
             sbatch --parsable ${{wait[@]+\"${{wait[@]}}\"}} --dependency=afterok:\"$array\" \\\n\
             \x20 --kill-on-invalid-dep=yes ${{both[@]+\"${{both[@]}}\"}} {array_dep}\n\
             if [ -n \"$waiting\" ] && ! [ {summary} -nt \"$mark\" ]; then\n\
             \x20 echo \"the merge did not run: a shard failed (its log is in {logs}); what is missing:\" >&2\n\
             \x20 {bin} sweep status {dir} >&2 || true\n\
             \x20 exit 1\n\
             fi\n",
            mark = q(&sdir.join("submitted")),
            summary = q(&abs.join("summary.json")),
            logs = logs.display(),
            array = q(&array),
            array_dep = q(&merge),
            dir_ = abs.display(),
            bin = q(&bin),
            dir = q(&abs),
        ),
        true,
    )?;
    let rec = slurm_record(&abs);
    write(
        &rec,
        &format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "shards": n,
                "plan_sha256": plan.plan_sha256,
            }))?
        ),
        false,
    )?;
    println!(
        "wrote {}, {} and {} ({n} shards of {}, about {} each)\nsubmit: {}",
        array.display(),
        merge.display(),
        submit.display(),
        hopwise_experiment::plural(runs, "run"),
        hopwise_experiment::plural(runs.div_ceil(n), "run"),
        q(&submit)
    );
    if n > runs {
        eprintln!(
            "note: {n} shards for {runs} runs: {} of them have no runs; a shard should \
             take minutes (scheduling a task costs seconds or more), not one run",
            n - runs
        );
    }
    Ok(())
}
