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

/// sbatch blanks out these words wherever they are in an `#SBATCH` line
/// (they separate the components of a heterogeneous job).
const HETJOB: [&str; 2] = ["packjob", "hetjob"];

/// `#SBATCH` lines for the options given; refuses values that sbatch would
/// read otherwise: it splits an `#SBATCH` line's arguments at whitespace,
/// takes `'`, `"` and `\` as quoting and a `#` as the start of a comment.
fn sbatch_lines(o: &SlurmOpts) -> Result<String> {
    let mut s = String::new();
    for (flag, v) in [
        ("time", &o.time),
        ("partition", &o.partition),
        ("account", &o.account),
    ] {
        if let Some(v) = v {
            let lower = v.to_ascii_lowercase();
            if v.is_empty()
                || v.chars().any(|c| {
                    c.is_whitespace() || c.is_control() || matches!(c, '#' | '\'' | '"' | '\\')
                })
                || HETJOB.iter().any(|w| lower.contains(w))
            {
                bail!(
                    "--{flag} {v:?}: expected one word without quotes, backslashes or `#`, \
                     as an `#SBATCH --{flag}=` line takes it"
                );
            }
            s.push_str(&format!("#SBATCH --{flag}={v}\n"));
        }
    }
    Ok(s)
}

/// An `#SBATCH --output=` file name for the path `p`, which may hold
/// Slurm's `%` patterns (`%A`, `%a`, `%j`): in double quotes (so that
/// whitespace, `'` and `#` stay in it), every character but letters,
/// digits, `/`, `.`, `_`, `-` and `%` escaped with a backslash (`"`, `\`
/// and `#` must be, in every Slurm version), and each `%` of `dir` doubled,
/// so that Slurm reads it as a `%`.
fn sbatch_output(dir: &Path, pattern: &str) -> String {
    let literal = dir.display().to_string().replace('%', "%%");
    let mut s = String::from("\"");
    for c in format!("{literal}/{pattern}").chars() {
        if !(c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '%')) {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// Refuses a directory that cannot go into the scripts: sbatch reads one
/// line at a time and turns off the `%` patterns of an output file name
/// that has a backslash.
fn check_dir(abs: &Path) -> Result<()> {
    let text = abs.display().to_string();
    let lower = text.to_ascii_lowercase();
    let bad = if text.chars().any(|c| c.is_control()) {
        Some("a control character (e.g. a newline)")
    } else if text.contains('\\') {
        Some("a backslash")
    } else if HETJOB.iter().any(|w| lower.contains(w)) {
        Some("`hetjob` or `packjob`, which sbatch blanks out of #SBATCH lines")
    } else {
        None
    };
    if let Some(what) = bad {
        bail!(
            "{}: the path has {what}, which the job scripts' #SBATCH --output line cannot \
             hold; plan into a directory without it (or move this one and give its new \
             path)",
            abs.display()
        );
    }
    Ok(())
}

/// The scripts' paths are in single quotes, to be taken literally, so
/// shellcheck's note that `$` does not expand there is beside the point.
const NOLINT: &str = "# shellcheck disable=SC2016 # paths are in single quotes: taken literally\n";

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
    check_dir(&abs)?;
    let bin = std::env::current_exe().context("finding this program's path")?;
    if bin.display().to_string().chars().any(|c| c.is_control()) {
        bail!(
            "{:?}: this program's path has a control character; install it elsewhere",
            bin.display()
        );
    }
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
             {nolint}\
             # Written by `hopwise sweep slurm`: task I of this array runs shard I of {n} of\n\
             # the sweep planned in {dir}: {runs} runs, about {per} a shard.\n\
             #SBATCH --job-name=hopwise-sweep\n\
             #SBATCH --array=0-{last}\n\
             #SBATCH --cpus-per-task={cpus}\n\
             #SBATCH --output={log}\n\
             {extra}\
             exec {bin} sweep shard {dir} --shard slurm --shards {n}\n",
            per = runs.div_ceil(n),
            last = n - 1,
            cpus = o.cpus_per_task,
            log = sbatch_output(&logs, "%A_%a.out"),
            bin = q(&bin),
            dir = q(&abs),
            nolint = NOLINT,
        ),
        false,
    )?;
    write(
        &merge,
        &format!(
            "#!/bin/sh\n\
             {nolint}\
             # Written by `hopwise sweep slurm`: merges the shards of {dir} into\n\
             # runs.csv, points.csv, summary.json, the figures and report.html there.\n\
             #SBATCH --job-name=hopwise-merge\n\
             #SBATCH --cpus-per-task={cpus}\n\
             #SBATCH --output={log}\n\
             {extra}\
             exec {bin} sweep merge {dir}\n",
            cpus = o.cpus_per_task,
            log = sbatch_output(&logs, "merge_%j.out"),
            bin = q(&bin),
            dir = q(&abs),
            nolint = NOLINT,
        ),
        false,
    )?;
    write(
        &submit,
        &format!(
            "#!/bin/bash\n\
             {nolint}\
             # Written by `hopwise sweep slurm`: submits the job array, then the merge,\n\
             # which starts once every task has succeeded (and is cancelled if one fails).\n\
             # Arguments go to both sbatch calls (e.g. --qos=...), except --wait, which\n\
             # goes to the merge only: `submit.sh --wait` returns when the merge is over,\n\
             # with its exit status.\n\
             set -euo pipefail\n\
             dir={dir}\n\
             bin={bin}\n\
             printf -v shown '%q sweep status %q' \"$bin\" \"$dir\"\n\
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
             mark=\"$dir/slurm/submitted\"\n\
             touch \"$mark\"\n\
             array=$(sbatch --parsable ${{both[@]+\"${{both[@]}}\"}} \"$dir/slurm/array.sbatch\")\n\
             array=${{array%%;*}}\n\
             echo \"job array $array: {n} shards of $dir; progress: $shown\"\n\
             echo \"merge job: after the array succeeds$waiting\"\n\
             sbatch --parsable ${{wait[@]+\"${{wait[@]}}\"}} --dependency=afterok:\"$array\" \\\n\
             \x20 --kill-on-invalid-dep=yes ${{both[@]+\"${{both[@]}}\"}} \"$dir/slurm/merge.sbatch\"\n\
             if [ -n \"$waiting\" ] && ! [ \"$dir/summary.json\" -nt \"$mark\" ]; then\n\
             \x20 echo \"the merge did not run: a shard failed (its log is in $dir/slurm/logs); what is missing:\" >&2\n\
             \x20 \"$bin\" sweep status \"$dir\" >&2 || true\n\
             \x20 exit 1\n\
             fi\n",
            bin = q(&bin),
            dir = q(&abs),
            nolint = NOLINT,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The arguments of an `#SBATCH` line as sbatch reads them (its
    /// `_get_argument`): split at whitespace outside quotes, `'` and `"`
    /// quote (`"` only before Slurm 18.08), `\` escapes the next character,
    /// an unescaped `#` outside quotes (anywhere, before 18.08) ends the line.
    fn sbatch_args(line: &str, old: bool) -> Vec<String> {
        let mut args = Vec::new();
        let mut it = line.chars().peekable();
        loop {
            while it.peek().is_some_and(|c| c.is_whitespace()) {
                it.next();
            }
            if it.peek().is_none() {
                return args;
            }
            let (mut arg, mut quote, mut escape) = (String::new(), None, false);
            while let Some(&c) = it.peek() {
                if quote.is_none() && c.is_whitespace() {
                    break;
                }
                it.next();
                if escape {
                    escape = false;
                } else if c == '\\' {
                    escape = true;
                    continue;
                } else if old && c == '#' {
                    return args;
                } else if let Some(q) = quote {
                    if c == q {
                        quote = None;
                        continue;
                    }
                } else if c == '"' || (!old && c == '\'') {
                    quote = Some(c);
                    continue;
                } else if c == '#' {
                    return args;
                }
                arg.push(c);
            }
            assert!(quote.is_none(), "unmatched quote in {line}");
            args.push(arg);
        }
    }

    /// An output file name's patterns expanded as Slurm does, for job
    /// array 7, task 3 (job 9): none at all if it has a backslash.
    fn expand(name: &str) -> String {
        if name.contains('\\') {
            return name.to_string();
        }
        let mut out = String::new();
        let mut it = name.chars();
        while let Some(c) = it.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match it.next() {
                Some('%') => out.push('%'),
                Some('A') => out.push('7'),
                Some('a') => out.push('3'),
                Some('j') => out.push('9'),
                Some(c) => panic!("pattern %{c} in {name}"),
                None => panic!("a lone % ends {name}"),
            }
        }
        out
    }

    /// Whatever the directory's name, sbatch (old and new) reads the
    /// `--output` line back as that directory's log file.
    #[test]
    fn output_lines_read_back_as_the_path() {
        for dir in [
            "/plain/dir",
            "/with space/and  two",
            "/it's/\"quoted\"/$(touch x)/`id`",
            "/100%/%A_%a/%%",
            "/hash#tag/ #not a comment",
            "/sémantique/☃",
        ] {
            let line = format!("--output={}", sbatch_output(Path::new(dir), "%A_%a.out"));
            for old in [false, true] {
                let args = sbatch_args(&line, old);
                assert_eq!(args.len(), 1, "{dir}: {line} read as {args:?}");
                let name = args[0].strip_prefix("--output=").unwrap();
                assert_eq!(expand(name), format!("{dir}/7_3.out"), "{dir}: {line}");
            }
            check_dir(Path::new(dir)).unwrap();
        }
        for dir in ["/a\\b", "/a\nb", "/a\tb", "/x/hetjob", "/x/PackJob"] {
            let e = check_dir(Path::new(dir)).unwrap_err().to_string();
            assert!(e.contains("plan into a directory without it"), "{dir}: {e}");
        }
    }

    #[test]
    fn option_values_that_sbatch_would_split_are_refused() {
        let opts = |time: &str| SlurmOpts {
            shards: 1,
            cpus_per_task: 1,
            time: Some(time.into()),
            partition: None,
            account: None,
            max_array_size: 1001,
        };
        assert_eq!(
            sbatch_lines(&opts("1:00:00")).unwrap(),
            "#SBATCH --time=1:00:00\n"
        );
        for bad in ["1 h", "1#2", "'1'", "\"1\"", "1\\0", "", "hetjob"] {
            let e = sbatch_lines(&opts(bad)).unwrap_err().to_string();
            assert!(
                e.contains("--time") && e.contains("expected one word"),
                "{bad}: {e}"
            );
        }
    }
}
