//! `hopwise sweep` end to end: the grid, the seeds, the files, agreement
//! with `hopwise sim` at the same point, and the errors users meet.

use super::common::{hopwise, json};
use std::path::Path;

/// The example scenario the sweeps below run (no randomness of its own).
const NEWRENO_VS_LEDBAT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scenarios/newreno-vs-ledbat.toml"
);

fn scratch(tag: &str) -> std::path::PathBuf {
    super::common::scratch("sweep", tag)
}

#[test]
fn sweep_runs_every_point_and_seed_and_matches_sim() {
    let d = scratch("grid");
    let out = d.join("sw");
    let o = hopwise(&[
        "sweep",
        "--vary",
        "link.bottleneck.queue=20pkt,100pkt",
        "--seeds",
        "2",
        "--set",
        "duration=40s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&out.join("summary.json"));
    assert_eq!(s["runs"], 4);
    assert_eq!(s["seeds"].as_array().unwrap().len(), 2);
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[1]["params"][0][1], "100pkt");
    let metric = |p: &serde_json::Value, m: &str, subj: &str| -> f64 {
        p["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["metric"] == m && x["subject"] == subj)
            .unwrap_or_else(|| panic!("{m} {subj}"))["mean"]
            .as_f64()
            .unwrap()
    };
    // A deeper buffer holds a longer queue.
    let q = |p| metric(p, "mean_queue_packets", "bottleneck:ab");
    assert!(
        q(&points[1]) > 2.0 * q(&points[0]),
        "{} vs {}",
        q(&points[0]),
        q(&points[1])
    );
    // And the flows wait longer in it: a buffer sweep shows delay too.
    for m in ["queue_delay_p95_ms", "rtt_median_ms"] {
        let (a, b) = (
            metric(&points[0], m, "cubic"),
            metric(&points[1], m, "cubic"),
        );
        assert!(b > 1.5 * a, "{m}: {a} vs {b}");
    }
    for f in ["sweep.svg", "points.csv", "runs.csv", "report.html"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(svg.contains("queueing delay per flow"), "no delay panel");
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert!(runs.starts_with("link.bottleneck.queue,seed,metric,subject,value\n"));

    // The first seed of a point is the scenario's own seed: `hopwise sim`
    // with the same settings gives that run's numbers exactly.
    let sim = d.join("sim");
    let o = hopwise(&[
        "sim",
        "--set",
        "duration=40s",
        "--set",
        "link.bottleneck.queue=20pkt",
        "--quiet",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = json(&sim.join("summary.json"));
    // summary.json says how it was made.
    let cmd = one["command"]
        .as_str()
        .expect("command in sim's summary.json");
    assert!(cmd.contains(" sim --set duration=40s"), "{cmd}");
    let seed = one["seed"].as_u64().unwrap().to_string();
    let ledbat = one["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["flow"] == "ledbat")
        .unwrap()["goodput_bps"]
        .as_f64()
        .unwrap();
    let row = runs
        .lines()
        .find(|l| l.starts_with(&format!("20pkt,{seed},goodput_bps,ledbat,")))
        .expect("the run with the scenario's seed");
    let v: f64 = row.rsplit(',').next().unwrap().parse().unwrap();
    assert!((v - ledbat).abs() <= 1e-9 * ledbat, "{v} vs {ledbat}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_errors_name_the_key_and_point() {
    let d = scratch("err");
    let out = d.join("o");
    let out = out.to_str().unwrap();
    let err = |args: &[&str]| {
        let o = hopwise(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err(&["sweep", "--out", out]);
    assert!(e.contains("--vary"), "{e}");
    // A missing file is reported before the missing --vary.
    let missing = d.join("nonexistent.toml");
    let e = err(&["sweep", missing.to_str().unwrap(), "--out", out]);
    assert!(
        e.contains("nonexistent.toml: cannot read") && !e.contains("--vary"),
        "{e}"
    );
    let e = err(&[
        "sweep",
        "--vary",
        "link.bottleneck.queue=10pkt,20pkt,30pkt",
        "--seeds",
        "2",
        "--max-runs",
        "5",
        "--out",
        out,
    ]);
    assert!(
        e.contains("3 values × 2 seeds = 6 runs") && e.contains("--max-runs 5"),
        "{e}"
    );
    assert!(
        !Path::new(out).exists(),
        "nothing is written for a refused grid"
    );
    // Over 100 000 points is refused whatever --max-runs allows: a point's
    // means stay in memory.
    let many = |n: usize, unit: &str| {
        (1..=n)
            .map(|i| format!("{i}{unit}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let e = err(&[
        "sweep",
        "--vary",
        &format!("link.bottleneck.delay={}", many(400, "ms")),
        "--vary",
        &format!("link.bottleneck.queue={}", many(300, "pkt")),
        "--max-runs",
        "1000000",
        "--out",
        out,
    ]);
    assert!(
        e.contains("400 × 300 = 120000 points, more than 100000") && e.contains("in memory"),
        "{e}"
    );
    assert!(!Path::new(out).exists());
    let e = err(&["sweep", "--vary", "link.bottleneck.queue", "--out", out]);
    assert!(e.contains("KEY=V1,V2"), "{e}");
    let e = err(&[
        "sweep",
        "--vary",
        "flow.cubic.cc=cubic,compound",
        "--out",
        out,
    ]);
    assert!(
        e.contains("flow.cubic.cc=compound") && e.contains("unknown congestion control"),
        "{e}"
    );
    let e = err(&[
        "sweep",
        "--vary",
        "duration=10s,20s",
        "--set",
        "duration=5s",
        "--out",
        out,
    ]);
    assert!(e.contains("also given with --set"), "{e}");
    // An unknown key is named as the --vary value it came from.
    let e = err(&[
        "sweep",
        "--vary",
        "link.nope.rate=1Mbit,2Mbit",
        "--out",
        out,
    ]);
    assert!(
        e.contains("--vary link.nope.rate=1Mbit") && !e.contains("--set"),
        "{e}"
    );
    let e = err(&["sweep", "--vary", "seed=1,2", "--out", out]);
    assert!(e.contains("--seeds"), "{e}");
    // A mistake in --set is not blamed on a --vary point, and nothing is
    // written before the points are checked.
    let e = err(&[
        "sweep",
        "--set",
        "duration=20s",
        "--vary",
        "link.bottleneck.loss=0,0.01",
        "--out",
        out,
    ]);
    assert!(
        e.contains("with its --set values") && !e.contains("--vary point"),
        "{e}"
    );
    assert!(!Path::new(out).exists());
    let e = err(&[
        "sweep",
        "--vary",
        "duration=40s",
        "--vary",
        "duration=40s",
        "--out",
        out,
    ]);
    assert!(e.contains("given twice"), "{e}");
    // A value given twice is refused before anything runs.
    let e = err(&[
        "sweep",
        "--vary",
        "link.bottleneck.queue=20pkt,20 pkt",
        "--out",
        out,
    ]);
    assert!(
        e.contains("link.bottleneck.queue")
            && e.contains("`20pkt` and `20 pkt` are the same value"),
        "{e}"
    );
    assert!(!Path::new(out).exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// Results that look like a mistake are flagged: seeds that change nothing
/// and values that change nothing.
#[test]
fn sweep_warns_when_seeds_or_values_change_nothing() {
    let d = scratch("warn");
    let out = d.join("o");
    let sc = NEWRENO_VS_LEDBAT;
    let o = hopwise(&[
        "sweep",
        sc,
        "--vary",
        "link.bottleneck.queue=50pkt,80pkt",
        "--set",
        "link.bottleneck.ab.queue=30pkt",
        "--set",
        "link.bottleneck.ba.queue=30pkt",
        "--seeds",
        "2",
        "--set",
        "duration=20s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no randomness"), "{e}");
    // Both directions have their own queue, so link.bottleneck.queue does
    // nothing.
    assert!(e.contains("identical results (50pkt and 80pkt)"), "{e}");
    let s = json(&out.join("summary.json"));
    assert_eq!(s["warnings"].as_array().unwrap().len(), 2, "{s}");
    assert!(s["command"]
        .as_str()
        .unwrap()
        .contains("--vary link.bottleneck.queue=50pkt,80pkt"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A sweep over `count` sums the replicas (`ledbat-0` …) into one subject,
/// `ledbat-*`, at every point.
#[test]
fn sweep_over_count_sums_the_replicas() {
    let d = scratch("count");
    let out = d.join("sw");
    let scenario = NEWRENO_VS_LEDBAT;
    let o = hopwise(&[
        "sweep",
        scenario,
        "--vary",
        "flow.ledbat.count=1,3",
        "--set",
        "duration=20s",
        "--set",
        "measure.warmup=2s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The table shows the sum in place of the replicas.
    let table = String::from_utf8_lossy(&o.stdout);
    let head = table
        .lines()
        .find(|l| l.starts_with("flow.ledbat.count"))
        .expect("the table's header");
    assert!(
        head.contains("ledbat-*") && !head.contains("ledbat-0"),
        "{table}"
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let value = |count: &str, subject: &str| -> Option<f64> {
        runs.lines()
            .find(|l| {
                l.starts_with(&format!("{count},"))
                    && l.contains(&format!(",goodput_bps,{subject},"))
            })
            .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
    };
    for (count, n) in [("1", 1), ("3", 3)] {
        let parts: Vec<f64> = (0..n)
            .map(|i| value(count, &format!("ledbat-{i}")).expect("each replica"))
            .collect();
        assert!(parts.iter().all(|&g| g > 0.0), "{parts:?}");
        let sum = value(count, "ledbat-*").expect("the sum");
        let want: f64 = parts.iter().sum();
        assert!((sum - want).abs() <= 1e-9 * want, "{sum} vs {want}");
        // The flow that is not replicated is not summed.
        assert!(value(count, "newreno").is_some() && value(count, "newreno-*").is_none());
    }
    assert!(value("3", "ledbat-3").is_none());
    let _ = std::fs::remove_dir_all(&d);
}

/// Without --vary, a sweep repeats the scenario over seeds: one point with
/// its mean and interval. With one seed that would be `hopwise sim`, and
/// it says so.
#[test]
fn sweep_without_vary_repeats_the_scenario_over_seeds() {
    let d = scratch("seeds");
    let out = d.join("sw");
    let scenario = NEWRENO_VS_LEDBAT;
    let o = hopwise(&[
        "sweep",
        scenario,
        "--seeds",
        "3",
        "--set",
        "duration=20s",
        "--set",
        "start_jitter=100ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("as is") && table.contains('±'), "{table}");
    // The ± cells stay under their headers.
    let head = table.lines().find(|l| l.starts_with("point")).unwrap();
    let row = table.lines().find(|l| l.starts_with("as is")).unwrap();
    assert_eq!(head.chars().count(), row.chars().count(), "{table}");
    let points = std::fs::read_to_string(out.join("points.csv")).unwrap();
    assert!(points.starts_with("metric,subject,mean,ci90_low,ci90_high,runs\n"));
    let row = points
        .lines()
        .find(|l| l.starts_with("goodput_bps,newreno,"))
        .expect("newreno's goodput");
    let f: Vec<&str> = row.split(',').collect();
    let (mean, lo, hi): (f64, f64, f64) = (
        f[2].parse().unwrap(),
        f[3].parse().unwrap(),
        f[4].parse().unwrap(),
    );
    assert_eq!(f[5], "3");
    // The jitter makes the seeds differ, so the interval has a width.
    assert!(lo < mean && mean < hi, "{row}");
    assert!(std::fs::read_to_string(out.join("sweep.svg"))
        .unwrap()
        .contains("error-bars"));

    let o = hopwise(&["sweep", "--seeds", "1", "--out", out.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--seeds N") && e.contains("hopwise sim"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Values of one kind of quantity in different units make a numeric axis,
/// in the unit most of them use: lines against the rate, not bars.
#[test]
fn sweep_converts_units_for_a_numeric_axis() {
    let d = scratch("units");
    let out = d.join("sw");
    let o = hopwise(&[
        "sweep",
        NEWRENO_VS_LEDBAT,
        "--vary",
        "link.bottleneck.rate=5Mbit,10000kbit,20Mbit",
        "--set",
        "duration=5s",
        "--set",
        "measure.warmup=1s",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(
        svg.contains("link.bottleneck.rate (Mbit)"),
        "no numeric x label"
    );
    // The values as written stay in the files.
    let points = std::fs::read_to_string(out.join("points.csv")).unwrap();
    assert!(
        points.lines().any(|l| l.starts_with("10000kbit,")),
        "{points}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Seeds above i64::MAX: the sweep records them, and each run is the one
/// `hopwise sim --set seed=S` (or `--seed S`) gives.
#[test]
fn sweep_seeds_above_i64_can_be_rerun() {
    let d = scratch("bigseed");
    let out = d.join("sw");
    let o = hopwise(&[
        "sweep",
        NEWRENO_VS_LEDBAT,
        "--seeds",
        "2",
        "--set",
        "seed=9223372036854775807",
        "--set",
        "duration=5s",
        "--set",
        "measure.warmup=1s",
        "--set",
        "start_jitter=100ms",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&out.join("summary.json"));
    let seeds: Vec<u64> = s["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [i64::MAX as u64, 1 << 63]);
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    for how in [
        ["--set", "seed=9223372036854775808"],
        ["--seed", "9223372036854775808"],
    ] {
        let sim = d.join("sim");
        let o = hopwise(&[
            "sim",
            NEWRENO_VS_LEDBAT,
            how[0],
            how[1],
            "--set",
            "duration=5s",
            "--set",
            "measure.warmup=1s",
            "--set",
            "start_jitter=100ms",
            "--quiet",
            "--out",
            sim.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{how:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let one = json(&sim.join("summary.json"));
        assert_eq!(one["seed"].as_u64(), Some(1 << 63));
        let newreno = one["flows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["flow"] == "newreno")
            .unwrap()["goodput_bps"]
            .as_f64()
            .unwrap();
        let row = runs
            .lines()
            .find(|l| l.starts_with("9223372036854775808,goodput_bps,newreno,"))
            .expect("the run with the second seed");
        let v: f64 = row.rsplit(',').next().unwrap().parse().unwrap();
        assert_eq!(v, newreno, "{how:?}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A grid larger than one batch of runs (64 per thread): every point's
/// rows land under its own values, in grid order, and a point in a later
/// batch still gives `hopwise sim`'s numbers.
#[test]
fn sweep_batches_keep_points_and_runs_together() {
    let d = scratch("batches");
    let out = d.join("sw");
    let delays: Vec<String> = (1..=150).map(|i| format!("{i}ms")).collect();
    let o = hopwise(&[
        "sweep",
        NEWRENO_VS_LEDBAT,
        "--vary",
        &format!("link.bottleneck.delay={}", delays.join(",")),
        "--set",
        "duration=3s",
        "--set",
        "measure.warmup=1s",
        "--jobs",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!out.join(".runs.csv.tmp").exists());
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let points = std::fs::read_to_string(out.join("points.csv")).unwrap();
    let order = |text: &str, metric: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains(&format!(",{metric},ledbat,")))
            .map(|l| l.split(',').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(order(&runs, "goodput_bps"), delays);
    assert_eq!(order(&points, "goodput_bps"), delays);
    // With one seed a point's mean is its run's value.
    let value = |text: &str, point: &str, col: usize| -> f64 {
        let l = text
            .lines()
            .find(|l| l.starts_with(&format!("{point},")) && l.contains(",goodput_bps,ledbat,"))
            .unwrap();
        l.split(',').nth(col).unwrap().parse().unwrap()
    };
    for p in ["1ms", "64ms", "65ms", "150ms"] {
        assert_eq!(value(&runs, p, 4), value(&points, p, 3), "{p}");
    }
    let sim = d.join("sim");
    let o = hopwise(&[
        "sim",
        NEWRENO_VS_LEDBAT,
        "--set",
        "duration=3s",
        "--set",
        "measure.warmup=1s",
        "--set",
        "link.bottleneck.delay=140ms",
        "--quiet",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = json(&sim.join("summary.json"));
    let ledbat = one["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["flow"] == "ledbat")
        .unwrap()["goodput_bps"]
        .as_f64()
        .unwrap();
    assert_eq!(value(&runs, "140ms", 4), ledbat);
    // Different delays give different results here: no false warning
    // from the points' fingerprints.
    let s = json(&out.join("summary.json"));
    assert_eq!(s["points"].as_array().unwrap().len(), 150);
    assert_eq!(s["warnings"], serde_json::json!([]));
    let _ = std::fs::remove_dir_all(&d);
}

/// Several seeds per point across batch boundaries (one job: 21 points a
/// batch at 3 seeds): the CSVs are the same whatever `--jobs`, so batches
/// and threads neither reorder nor lose runs.
#[test]
fn sweep_outputs_do_not_depend_on_jobs_or_batches() {
    let d = scratch("jobs");
    let delays: Vec<String> = (1..=50).map(|i| format!("{i}ms")).collect();
    let run = |jobs: &str| {
        let out = d.join(format!("sw{jobs}"));
        let o = hopwise(&[
            "sweep",
            NEWRENO_VS_LEDBAT,
            "--vary",
            &format!("link.bottleneck.delay={}", delays.join(",")),
            "--seeds",
            "3",
            "--set",
            "duration=2s",
            "--set",
            "measure.warmup=1s",
            "--jobs",
            jobs,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            std::fs::read_to_string(out.join("runs.csv")).unwrap(),
            std::fs::read_to_string(out.join("points.csv")).unwrap(),
        )
    };
    let (runs1, points1) = run("1");
    let (runs2, points2) = run("2");
    assert_eq!(runs1, runs2);
    assert_eq!(points1, points2);
    // Every point has its three seeds, in order.
    let seeds: Vec<&str> = runs1
        .lines()
        .filter(|l| l.starts_with("17ms,") && l.contains(",goodput_bps,ledbat,"))
        .collect();
    assert_eq!(seeds.len(), 3, "{seeds:?}");
    let _ = std::fs::remove_dir_all(&d);
}
