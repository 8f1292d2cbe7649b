//! Command-line checks that must happen before any simulation runs: the
//! output directory, counts of zero, and seeds across the whole u64 range;
//! and what `reproduce --list` shows.

use std::process::{Command, Output};

fn hopwise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(args)
        .output()
        .expect("hopwise runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-cli-args-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn out_that_is_a_file_is_refused_before_the_run() {
    let d = scratch("out");
    let file = d.join("afile");
    std::fs::write(&file, "not a directory").unwrap();
    let out = file.to_str().unwrap();
    // A 10-hour demo would take minutes: the error must come first.
    let o = hopwise(&["sim", "--set", "duration=36000s", "--out", out]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--out") && e.contains("not a directory"), "{e}");
    assert!(!e.contains("running `"), "the run started: {e}");

    let o = hopwise(&["reproduce", "ledbat-flow", "--quick", "--out", out]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--out") && e.contains(out), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn zero_counts_are_refused() {
    for args in [
        &["reproduce", "ledbat-flow", "--quick", "--seeds", "0"][..],
        &["reproduce", "ledbat-flow", "--quick", "--jobs", "0"][..],
        &["bench", "--repeat", "0"][..],
    ] {
        let o = hopwise(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("0"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn any_u64_seed_is_accepted() {
    let d = scratch("seed");
    let o = hopwise(&[
        "sim",
        "--seed",
        "18446744073709551615",
        "--out",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["seed"].as_u64(), Some(u64::MAX));
    // The demo's 60 s, exactly.
    assert_eq!(s["duration_s"].as_f64(), Some(60.0));
    let _ = std::fs::remove_dir_all(&d);
}

/// `bench --tor` refuses bad flags before it prints its header or creates
/// `--out`, naming the flag.
#[test]
fn bench_tor_flags_are_checked_before_anything_happens() {
    let d = scratch("bench-tor");
    let out = d.join("results");
    for (args, flag) in [
        (vec!["--relays", "2"], "--relays 2:"),
        (vec!["--circuits", "0"], "--circuits 0:"),
        (vec!["--secs", "0"], "--secs 0:"),
        (
            vec!["--transport", "foo"],
            "--transport: unknown transport `foo`",
        ),
        (
            vec!["--grow", "600,x"],
            "--grow 600,x: `x` is not a number of relays",
        ),
        (
            vec!["--grow", "600", "--transport", "foo"],
            "--transport: unknown transport `foo`",
        ),
        (vec!["--grow", "600", "--secs", "0"], "--secs 0:"),
    ] {
        let mut a = vec!["bench", "--tor", "--out", out.to_str().unwrap()];
        a.extend(args);
        let o = hopwise(&a);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(flag), "{}", stderr(&o));
        assert!(
            o.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(!out.exists(), "--out was created");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Output into a pipe whose reader has gone (`hopwise ... | head`) ends the
/// process quietly, as SIGPIPE ends a Unix tool (status 141), not with a
/// panic.
#[test]
fn a_closed_stdout_pipe_is_not_a_panic() {
    // The reader is gone before the child starts: closing it after the
    // spawn raced with a child fast enough to write first (exit 0).
    let (reader, closed) = std::io::pipe().unwrap();
    drop(reader);
    let child = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args([
            "model",
            "pendulum",
            "--down-rate",
            "2.4Mbit",
            "--up-rate",
            "196kbit",
            "--rtt",
            "200ms",
            "--down-buffer",
            "60kB",
            "--up-buffer",
            "9kB",
        ])
        .stdout(closed)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}

/// The lab's bad flags are refused before its banner is printed (and
/// before it asks for root and network namespaces).
#[test]
fn lab_flags_are_checked_before_the_banner() {
    for (args, msg) in [
        (vec!["lab", "ack-compression", "--secs", "0"], "--secs 0:"),
        (
            vec!["lab", "cc-check", "bbr", "--secs", "8"],
            "--secs 8: more than the 5 s warm-up plus 5 s",
        ),
        (
            vec!["lab", "cc-check", "bbr2"],
            "unknown check \"bbr2\": one of bbr, bbr-cubic, cubic-buffers, drops",
        ),
        (vec!["lab", "backtap", "--circuits", "0"], "--circuits 0:"),
        (vec!["lab", "overlay-ack", "--secs", "10"], "--secs 10:"),
        (
            vec!["lab", "overlay-ack", "--modes", "plain,split-dynamic"],
            "split-dynamic needs the overlay's connection policy",
        ),
        (vec!["lab", "otcp", "--runs", "0"], "--runs 0: 1 to 50"),
        (
            vec!["lab", "otcp", "--size", "10kB"],
            "--size 10000: 100000 B to 1 GB",
        ),
        (
            vec!["lab", "otcp", "--regimes", "window,lossy"],
            "unknown regime \"lossy\" (loss, loss-rtt or window)",
        ),
        (
            vec!["lab", "otcp", "--regimes", "loss,loss"],
            "regime \"loss\" given twice",
        ),
        (vec!["lab", "otcp", "--size", "4 parsecs"], "--size"),
        (
            vec!["lab", "pendulum-fig10", "--tp", "5s"],
            "--tp 5000 ms: at most 1000 ms",
        ),
        (
            vec!["lab", "pendulum-fig10", "--tp", "0.5ms"],
            "whole milliseconds only",
        ),
        (
            vec!["lab", "pendulum-fig10", "--up-buffers", "45kB,50pkt"],
            "give this buffer in bytes",
        ),
        (
            vec!["lab", "pendulum-fig10", "--up-buffers", "2000B"],
            "--up-buffers 2000 B: 3000 B (two frames) to 10 MB",
        ),
        (vec!["lab", "pendulum-fig10", "--secs", "20"], "--secs 20:"),
    ] {
        let o = hopwise(&args);
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(msg), "{err}");
    }
}

#[test]
fn the_list_names_every_reproduction_with_its_wall_time() {
    let o = hopwise(&["reproduce", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = s.lines().collect();
    for name in [
        "pendulum",
        "ledbat-flow",
        "ledbat-swarm",
        "overlay-ack",
        "backtap-circuit",
        "backtap-network",
        "otcp",
    ] {
        let i = lines
            .iter()
            .position(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{s}"));
        let next = lines.get(i + 1).copied().unwrap_or_default();
        assert!(
            next.contains("quick") && next.contains("full"),
            "{name}: no wall time on the next line:\n{s}"
        );
    }
    // A name beside --list is a mistake, not ignored.
    let o = hopwise(&["reproduce", "--list", "pendulum"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'--list' cannot be used"),
        "{}",
        stderr(&o)
    );
}
