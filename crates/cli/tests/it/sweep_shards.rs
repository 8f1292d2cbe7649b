//! A sweep on many machines, without a cluster: `--plan`, shards run one
//! after the other, `merge` (the same bytes as `hopwise sweep` on one
//! machine, apart from the wall time), and what `merge`, `shard`, `status`
//! and `slurm` refuse.

use super::common::{hopwise, json};
use std::path::Path;
use std::process::Output;

const NEWRENO_VS_LEDBAT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/newreno-vs-ledbat.toml"
);

fn scratch(tag: &str) -> std::path::PathBuf {
    super::common::scratch("shards", tag)
}

/// The sweep of these tests: 3 points × 3 seeds = 9 short runs, with
/// random loss so that seeds differ.
fn sweep_args(queues: &str) -> Vec<String> {
    [
        "sweep",
        NEWRENO_VS_LEDBAT,
        "--vary",
        &format!("link.bottleneck.queue={queues}"),
        "--seeds",
        "3",
        "--set",
        "duration=2s",
        "--set",
        "measure.warmup=1s",
        "--set",
        "link.bottleneck.loss=0.01",
    ]
    .map(String::from)
    .to_vec()
}

const QUEUES: &str = "20pkt,50pkt,100pkt";

fn run(args: &[&str]) -> Output {
    hopwise(args)
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The error message of a command that must fail.
fn fails(o: Output) -> String {
    assert!(
        !o.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `hopwise sweep status DIR ARGS`: its exit code and what it printed.
fn status(dir: &Path, args: &[&str]) -> (i32, String) {
    let mut a = vec!["sweep", "status", s(dir)];
    a.extend(args);
    let o = run(&a);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Plans the sweep over `queues` into `dir`.
fn plan(dir: &Path, queues: &str) -> String {
    let mut a = sweep_args(queues);
    a.extend(["--plan".into(), s(dir).into()]);
    ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()))
}

/// Runs shard `i` of `n` of the plan in `dir`.
fn shard(dir: &Path, i: usize, n: usize) -> Output {
    run(&[
        "sweep",
        "shard",
        s(dir),
        "--shard",
        &format!("{i}/{n}"),
        "--jobs",
        "1",
        "--quiet",
    ])
}

/// A file's text with the wall time taken out: summary.json's `wall_s`
/// line, report.html's "N s wall".
fn unwall(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("\"wall_s\":") {
            continue;
        }
        let mut l = line.to_string();
        if let Some(at) = l.find(" s wall") {
            let start = l[..at]
                .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
                .map_or(0, |k| k + 1);
            l.replace_range(start..at, "T");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Every file the sweep wrote in `dir` (by its path under `dir`), wall
/// time taken out; `skip`: the names at the top that are not outputs.
fn outputs(dir: &Path, skip: &[&str]) -> Vec<(String, String)> {
    fn walk(root: &Path, at: &Path, skip: &[&str], v: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(at).unwrap_or_else(|e| panic!("{}: {e}", at.display())) {
            let p = e.unwrap().path();
            let name = p.strip_prefix(root).unwrap().display().to_string();
            if skip.contains(&name.as_str()) {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, skip, v);
            } else {
                let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
                v.push((name, unwall(&t)));
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, dir, skip, &mut v);
    v.sort();
    v
}

/// Shards run in sequence and merged write what the sweep writes on one
/// machine, every file of it: for one shard, a shard per point, shards
/// that split points' seeds, and more shards than runs (some empty); for
/// a sweep of flows, one of a Tor circuit's `count` (the overlay's
/// metrics and figure), and one over seeds only (no `--vary`).
#[test]
fn merged_shards_equal_the_sweep_on_one_machine() {
    let d = scratch("equal");
    let tor = [
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/tor-cubic-bottleneck.toml"
        ),
        "--vary",
        "circuit.tor.count=1,2",
        "--seeds",
        "2",
        "--set",
        "duration=3s",
        "--set",
        "measure.warmup=1s",
        "--set",
        "circuit.tor.size=200KiB",
        "--set",
        "link.access.loss=0.01",
    ];
    let seeds_only = [
        NEWRENO_VS_LEDBAT,
        "--seeds",
        "3",
        "--set",
        "duration=2s",
        "--set",
        "measure.warmup=1s",
        "--set",
        "link.bottleneck.loss=0.01",
    ];
    let mut tor_args = vec!["sweep".to_string()];
    tor_args.extend(tor.map(String::from));
    let mut seeds_args = vec!["sweep".to_string()];
    seeds_args.extend(seeds_only.map(String::from));
    // (case, the sweep's arguments, its runs, the numbers of shards): N = 1,
    // N = the points, N = 4 (9 runs: 2, 2, 2, 3, splitting points' seeds),
    // N = 12 > 9 runs (three empty shards); 3 shards of 4 Tor runs split
    // a point's seeds.
    let cases: [(&str, Vec<String>, u64, &[usize]); 3] = [
        ("flows", sweep_args(QUEUES), 9, &[1, 3, 4, 12]),
        ("tor", tor_args, 4, &[1, 3]),
        ("seeds", seeds_args, 3, &[1, 2, 5]),
    ];
    for (case, args, runs, ns) in cases {
        let one = d.join(format!("{case}-one"));
        let mut a = args.clone();
        a.extend(["--quiet", "--jobs", "2", "--out", s(&one)].map(String::from));
        ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
        let want = outputs(&one, &[]);
        let names: Vec<&str> = want.iter().map(|(f, _)| f.as_str()).collect();
        for f in ["points.csv", "report.html", "runs.csv", "summary.json"] {
            assert!(names.contains(&f), "{case}: {f} not in {names:?}");
        }
        if case == "tor" {
            assert!(names.contains(&"sweep_tor.svg"), "{case}: {names:?}");
            let runs_csv = &want.iter().find(|(f, _)| f == "runs.csv").unwrap().1;
            assert!(runs_csv.contains(",tor-1,"), "{runs_csv}");
        }
        // The seeds matter, so a shard that splits a point's seeds must
        // keep them apart.
        let summary = json(&one.join("summary.json"));
        if case == "flows" {
            let runs_csv = &want.iter().find(|(f, _)| f == "runs.csv").unwrap().1;
            let seeds: Vec<&str> = runs_csv
                .lines()
                .filter(|l| l.starts_with("20pkt,") && l.contains(",goodput_bps,newreno,"))
                .map(|l| l.rsplit(',').next().unwrap())
                .collect();
            assert_eq!(seeds.len(), 3, "{runs_csv}");
            assert!(seeds[0] != seeds[1] || seeds[1] != seeds[2], "{seeds:?}");
            let cmd = summary["command"].as_str().unwrap();
            assert!(
                cmd.starts_with("hopwise sweep ")
                    && cmd.contains(
                        "--vary link.bottleneck.queue=20pkt,50pkt,100pkt --seeds 3 --set"
                    )
                    && !cmd.contains("--out")
                    && !cmd.contains("--jobs"),
                "{cmd}"
            );
        }
        for &n in ns {
            let dir = d.join(format!("{case}-plan{n}"));
            let mut a = args.clone();
            a.extend(["--plan".into(), s(&dir).into()]);
            let printed = ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
            assert!(printed.contains("--shard 0/1"), "{printed}");
            let p = json(&dir.join("plan.json"));
            assert_eq!(p["runs"], runs, "{case}");
            assert_eq!(
                p["command"], summary["command"],
                "{case}: the canonical command"
            );
            for i in 0..n {
                ok(shard(&dir, i, n));
            }
            let done = json(&dir.join(format!("shards/{}-of-{n}.done.json", n - 1)));
            assert_eq!(done["plan_sha256"], p["plan_sha256"]);
            ok(run(&["sweep", "merge", s(&dir), "--quiet"]));
            let got = outputs(&dir, &["plan.json", "shards"]);
            assert_eq!(
                got.iter().map(|(f, _)| f).collect::<Vec<_>>(),
                want.iter().map(|(f, _)| f).collect::<Vec<_>>(),
                "{case}, {n} shards: the files"
            );
            for ((f, w), (_, g)) in want.iter().zip(&got) {
                assert!(
                    w == g,
                    "{case}, {n} shards: {f} differs from the one-machine sweep's"
                );
            }
            // The wall time is there, only different.
            assert!(json(&dir.join("summary.json"))["wall_s"].as_f64().unwrap() > 0.0);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Missing, overlapping and foreign shards are refused, each named; a done
/// shard is skipped; status lists the shards and the sbatch line.
#[test]
fn merge_refuses_missing_overlapping_and_foreign_shards() {
    let d = scratch("refuse");
    let dir = d.join("p");
    plan(&dir, QUEUES);
    // 12 shards of 9 runs: 0, 4 and 8 are empty, not missing.
    let (code, st) = status(&dir, &["--shards", "12"]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("0 done, 0 started, 9 missing, 3 empty; 0 of 9 runs done")
            && st.contains("empty:   0,4,8 ")
            && st.contains("missing: 1-3,5-7,9-11")
            && st.contains("sbatch --array=1-3,5-7,9-11 "),
        "{st}"
    );
    ok(shard(&dir, 0, 3));
    ok(shard(&dir, 2, 3));
    // A shard that died: its runs under the .partial name only.
    std::fs::write(dir.join("shards/1-of-3.runs.jsonl.partial"), "").unwrap();

    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("runs 3-5") && e.contains("1-of-3 (started, not finished)"),
        "{e}"
    );
    // status exits with 2 while runs are missing.
    let (code, st) = status(&dir, &[]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("2 done, 1 started, 0 missing; 6 of 9 runs done")
            && st.contains("started: 1 (running now, or died")
            && st.contains("sbatch --array=1 ")
            && !st.contains("all runs done"),
        "{st}"
    );
    // As merge sees it: of 6 shards, those whose runs the done shards of 3
    // hold are covered; 2 and 3 (runs 3-5) are missing.
    let (code, st) = status(&dir, &["--shards", "6"]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("0 done, 0 started, 2 missing, 4 covered by other shards; 6 of 9 runs done")
            && st.contains("missing: 2-3")
            && st.contains("covered: 0-1,4-5")
            && st.contains("sbatch --array=2-3 "),
        "{st}"
    );

    // Resuming: a done shard is skipped and keeps its files.
    let runs0 = dir.join("shards/0-of-3.runs.jsonl");
    let before = std::fs::read(&runs0).unwrap();
    let o = ok(shard(&dir, 0, 3));
    assert!(o.contains("done already") && o.contains("skipped"), "{o}");
    assert_eq!(std::fs::read(&runs0).unwrap(), before);

    // The missing shard, then a shard of another N over the same runs.
    ok(shard(&dir, 1, 3));
    let (code, st) = status(&dir, &[]);
    assert_eq!(code, 0, "{st}");
    assert!(st.contains("all runs done: hopwise sweep merge"), "{st}");
    // Every run is done even if the job array's N's shards are not.
    let (code, st) = status(&dir, &["--shards", "2"]);
    assert_eq!(code, 0, "{st}");
    assert!(
        st.contains("missing: none") && st.contains("all runs done: hopwise sweep merge"),
        "{st}"
    );
    ok(shard(&dir, 0, 2));
    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("overlap") && e.contains("0-of-2 (runs 0-3)") && e.contains("0-of-3 (runs 0-2)"),
        "{e}"
    );
    let (code, st) = status(&dir, &["--shards", "3"]);
    assert_eq!(code, 2, "{st}");
    assert!(st.contains("shards overlap (merge refuses them"), "{st}");
    for ext in ["done.json", "runs.jsonl"] {
        std::fs::remove_file(dir.join(format!("shards/0-of-2.{ext}"))).unwrap();
    }
    ok(run(&["sweep", "merge", s(&dir), "--quiet"]));

    // A runs file of another plan with the same grid and seeds (another
    // loss rate), put in place of 1-of-3's: the done record's hash ties it
    // to its own runs file.
    let same = d.join("same-grid");
    let mut a = sweep_args(QUEUES);
    a.extend(["--set", "link.bottleneck.loss=0.02", "--plan", s(&same)].map(String::from));
    ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    ok(shard(&same, 1, 3));
    let runs1 = dir.join("shards/1-of-3.runs.jsonl");
    let mine = std::fs::read(&runs1).unwrap();
    std::fs::copy(same.join("shards/1-of-3.runs.jsonl"), &runs1).unwrap();
    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("1-of-3.runs.jsonl: not the runs file its done record")
            && e.contains("1-of-3.done.json"),
        "{e}"
    );
    let (code, st) = status(&dir, &[]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("corrupt: ") && st.contains("1-of-3.runs.jsonl"),
        "{st}"
    );
    std::fs::write(&runs1, mine).unwrap();
    // A done record that does not parse is corrupt, not another plan's.
    let done1 = dir.join("shards/1-of-3.done.json");
    let record = std::fs::read(&done1).unwrap();
    std::fs::write(&done1, "{\"plan_sha256\": ").unwrap();
    let (code, st) = status(&dir, &[]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("corrupt: ")
            && st.contains("1-of-3.done.json: not a shard's done record")
            && st.contains("missing: 1")
            && !st.contains("another plan"),
        "{st}"
    );
    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("1-of-3.done.json: not a shard's done record"),
        "{e}"
    );
    std::fs::write(&done1, record).unwrap();
    ok(run(&["sweep", "merge", s(&dir), "--quiet"]));

    // A shard of another plan, put in place of 1-of-3.
    let other = d.join("other");
    plan(&other, "30pkt,50pkt,100pkt");
    ok(shard(&other, 1, 3));
    for ext in ["done.json", "runs.jsonl"] {
        std::fs::copy(
            other.join(format!("shards/1-of-3.{ext}")),
            dir.join(format!("shards/1-of-3.{ext}")),
        )
        .unwrap();
    }
    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("1-of-3.done.json (runs 3-5): of another plan"),
        "{e}"
    );
    // Running that shard again in this plan refuses the other plan's record.
    let e = fails(shard(&dir, 1, 3));
    assert!(
        e.contains("1-of-3.done.json: a done record of another plan"),
        "{e}"
    );
    // Planning another sweep into a directory with shards is refused;
    // planning the same one again is fine.
    let mut a = sweep_args("30pkt,50pkt,100pkt");
    a.extend(["--plan".into(), s(&dir).into()]);
    let e = fails(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    assert!(
        e.contains("shards of another plan") && e.contains("another directory"),
        "{e}"
    );
    plan(&dir, QUEUES);
    let _ = std::fs::remove_dir_all(&d);
}

/// A shard refuses another binary than the plan's, and a plan changed
/// after it was written; `--shard slurm` reads the array's variables.
#[test]
fn shards_refuse_another_binary_and_a_changed_plan() {
    let d = scratch("binary");
    let dir = d.join("p");
    plan(&dir, QUEUES);
    let path = dir.join("plan.json");
    let good = std::fs::read_to_string(&path).unwrap();
    let p: serde_json::Value = serde_json::from_str(&good).unwrap();
    let mine = p["binary_sha256"].as_str().unwrap();
    let zeros = "0".repeat(64);
    std::fs::write(&path, good.replace(mine, &zeros)).unwrap();
    let e = fails(shard(&dir, 0, 2));
    assert!(
        e.contains(&format!("SHA-256 {mine}"))
            && e.contains(&format!("SHA-256 {zeros}"))
            && e.contains(p["binary_path"].as_str().unwrap()),
        "{e}"
    );
    assert!(!dir.join("shards").exists());
    // The slurm scripts are refused for the same reason.
    let e = fails(run(&["sweep", "slurm", s(&dir), "--shards", "2"]));
    assert!(e.contains("not the binary that wrote"), "{e}");
    // And so is the merge, before it reads any shard.
    let e = fails(run(&["sweep", "merge", s(&dir)]));
    assert!(
        e.contains("hopwise sweep merge: this hopwise")
            && e.contains("not the binary that wrote")
            && e.contains(&format!("SHA-256 {zeros}")),
        "{e}"
    );

    std::fs::write(&path, good.replace("duration=2s", "duration=3s")).unwrap();
    let e = fails(shard(&dir, 0, 2));
    assert!(e.contains("plan.json: the plan was changed"), "{e}");
    std::fs::write(&path, &good).unwrap();

    // --shard slurm: I and N from the array's variables, N from --shards first.
    let slurm = |vars: &[(&str, &str)], extra: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_hopwise"));
        c.args(["sweep", "shard", s(&dir), "--shard", "slurm", "--quiet"])
            .args(extra)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_ARRAY_TASK_COUNT")
            .env_remove("SLURM_CPUS_PER_TASK");
        for (k, v) in vars {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let e = fails(slurm(&[], &[]));
    assert!(e.contains("SLURM_ARRAY_TASK_ID is not set"), "{e}");
    let e = fails(slurm(&[("SLURM_ARRAY_TASK_ID", "1")], &[]));
    assert!(e.contains("SLURM_ARRAY_TASK_COUNT is not set"), "{e}");
    let e = fails(slurm(&[("SLURM_ARRAY_TASK_ID", "4")], &["--shards", "4"]));
    assert!(e.contains("shard 4 of 4 does not exist"), "{e}");
    ok(slurm(
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
            ("SLURM_CPUS_PER_TASK", "1"),
        ],
        &["--shards", "4"],
    ));
    let done = json(&dir.join("shards/2-of-4.done.json"));
    assert_eq!(done["run_range"], serde_json::json!([4, 6]));
    let _ = std::fs::remove_dir_all(&d);
}

/// `sweep slurm` writes the array, the merge job and submit.sh, and refuses
/// more shards than the array may have tasks.
#[test]
fn slurm_writes_the_scripts_and_refuses_too_many_shards() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = scratch("slurm");
    let dir = d.join("p");
    plan(&dir, QUEUES);
    let o = ok(run(&[
        "sweep",
        "slurm",
        s(&dir),
        "--shards",
        "4",
        "--cpus-per-task",
        "2",
        "--time",
        "10:00",
        "--partition",
        "short",
    ]));
    assert!(o.contains("submit.sh"), "{o}");
    let sd = std::path::absolute(&dir).unwrap();
    let array = std::fs::read_to_string(dir.join("slurm/array.sbatch")).unwrap();
    for want in [
        "#SBATCH --array=0-3\n",
        "#SBATCH --cpus-per-task=2\n",
        "#SBATCH --time=10:00\n",
        "#SBATCH --partition=short\n",
        &format!(
            "#SBATCH --output=\"{}/slurm/logs/%A_%a.out\"\n",
            sd.display()
        ),
        &format!(" sweep shard {} --shard slurm --shards 4\n", sd.display()),
    ] {
        assert!(array.contains(want), "{want} not in\n{array}");
    }
    let merge = std::fs::read_to_string(dir.join("slurm/merge.sbatch")).unwrap();
    assert!(
        merge.contains(&format!(" sweep merge {}\n", sd.display())),
        "{merge}"
    );
    let submit = dir.join("slurm/submit.sh");
    let text = std::fs::read_to_string(&submit).unwrap();
    assert!(
        text.contains("--dependency=afterok:\"$array\"") && text.contains("--wait"),
        "{text}"
    );
    assert_ne!(
        std::fs::metadata(&submit).unwrap().permissions().mode() & 0o111,
        0
    );
    assert!(dir.join("slurm/logs").is_dir());
    // submit.sh with a stand-in sbatch that logs its arguments: the array,
    // then the merge after it; --wait goes to the merge only, other
    // arguments to both.
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = d.join("sbatch.log");
    let fake = bin.join("sbatch");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\necho \"$*\" >> {}\necho 4242\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let submit_with = |args: &[&str]| {
        std::process::Command::new(&submit)
            .args(args)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    let printed = ok(submit_with(&["--qos=low"]));
    assert!(printed.contains("job array 4242"), "{printed}");
    // With --wait, a merge that did not write summary.json (Slurm cancels
    // it when a task fails, and `sbatch --wait` still returns 0; here the
    // stand-in runs nothing) makes submit.sh fail and say what is missing.
    let e = fails(submit_with(&["--wait", "--qos=low"]));
    assert!(
        e.contains("the merge did not run") && e.contains("missing: 0-3"),
        "{e}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), 4, "{calls:?}");
    let array = format!("--parsable --qos=low {}/slurm/array.sbatch", sd.display());
    let merge = |wait: &str| {
        format!(
            "--parsable {wait}--dependency=afterok:4242 --kill-on-invalid-dep=yes \
             --qos=low {}/slurm/merge.sbatch",
            sd.display()
        )
    };
    assert_eq!(calls, [&array, &merge(""), &array, &merge("--wait ")]);
    // status takes N from the array.
    let (code, st) = status(&dir, &[]);
    assert_eq!(code, 2, "{st}");
    assert!(
        st.contains("4 shards: 0 done") && st.contains("sbatch --array=0-3 "),
        "{st}"
    );

    let e = fails(run(&["sweep", "slurm", s(&dir), "--shards", "1002"]));
    assert!(
        e.contains("--shards 1002") && e.contains("--max-array-size"),
        "{e}"
    );
    ok(run(&["sweep", "slurm", s(&dir), "--shards", "1001"]));
    let e = fails(run(&[
        "sweep",
        "slurm",
        s(&dir),
        "--shards",
        "5",
        "--max-array-size",
        "4",
    ]));
    assert!(e.contains("fewer shards"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The scripts hold a directory named with a space, quotes, `$(...)`, a
/// backtick, `%` and `#` as it is: `bash -n` passes, nothing in the name
/// runs, and a stand-in sbatch that runs the scripts (the array's tasks,
/// then the merge) gets the paths and the merged results; a backslash,
/// which sbatch would read otherwise, is refused.
#[test]
fn slurm_scripts_hold_any_directory_name() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = scratch("odd");
    let dir = d.join("a b'c\"d$(touch pwned)`touch tick`%e #f");
    let mut a = sweep_args("20pkt,50pkt");
    a[5] = "2".into(); // --seeds 2: 4 runs
    a.extend(["--plan".into(), s(&dir).into()]);
    ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    ok(run(&["sweep", "slurm", s(&dir), "--shards", "2"]));
    let sd = std::path::absolute(&dir).unwrap();
    for f in ["array.sbatch", "merge.sbatch", "submit.sh"] {
        let o = std::process::Command::new("bash")
            .arg("-n")
            .arg(dir.join("slurm").join(f))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // A stand-in sbatch: logs its arguments, then runs the array's tasks or
    // the merge as Slurm would.
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = d.join("sbatch.log");
    let fake = bin.join("sbatch");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n\
             printf '%s\\n' \"$@\" -- >> '{}'\n\
             for last; do :; done\n\
             case \"$last\" in\n\
             *array.sbatch) for i in 0 1; do SLURM_ARRAY_TASK_ID=$i sh \"$last\" >&2 || exit 1; done ;;\n\
             *merge.sbatch) sh \"$last\" >&2 || exit 1 ;;\n\
             esac\n\
             echo 4242\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = std::process::Command::new(dir.join("slurm/submit.sh"))
        .arg("--wait")
        .current_dir(&d)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    let printed = ok(o);
    assert!(
        printed.contains(&format!("job array 4242: 2 shards of {}; ", sd.display())),
        "{printed}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.split("--\n").filter(|c| !c.is_empty()).collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].ends_with(&format!("\n{}/slurm/array.sbatch\n", sd.display()))
            && calls[1].ends_with(&format!("\n{}/slurm/merge.sbatch\n", sd.display())),
        "{calls:?}"
    );
    assert!(json(&dir.join("summary.json"))["runs"].as_u64().is_some());
    assert!(dir.join("shards/1-of-2.done.json").exists());
    for p in [d.join("pwned"), d.join("tick"), dir.join("pwned")] {
        assert!(!p.exists(), "{} was created", p.display());
    }
    // sbatch turns off the log name's %A_%a when it has a backslash.
    let back = d.join("back\\slash");
    let mut a = sweep_args("20pkt");
    a.extend(["--plan".into(), s(&back).into()]);
    ok(hopwise(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    let e = fails(run(&["sweep", "slurm", s(&back), "--shards", "2"]));
    assert!(
        e.contains("the path has a backslash") && e.contains("plan into a directory without it"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `hopwise sweep --help` shows the subcommands; a plan's command runs
/// the sweep as it is, `--max-runs` included when the default is too small.
#[test]
fn sweep_help_lists_the_subcommands() {
    let h = ok(run(&["sweep", "--help"]));
    for c in ["shard", "merge", "status", "slurm", "--plan"] {
        assert!(h.contains(c), "{c} not in\n{h}");
    }
    let d = scratch("maxruns");
    let p = |seeds: &str| {
        let dir = d.join(seeds);
        ok(run(&[
            "sweep",
            "--seeds",
            seeds,
            "--max-runs",
            "5000",
            "--plan",
            s(&dir),
        ]));
        json(&dir.join("plan.json"))["command"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(p("2000"), "hopwise sweep --seeds 2000");
    assert_eq!(p("2001"), "hopwise sweep --seeds 2001 --max-runs 2001");
    let _ = std::fs::remove_dir_all(&d);
}
