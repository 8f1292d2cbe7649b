//! `hopwise model pendulum` end to end: exit codes and what clap reports
//! (the model's numbers are tested in `hopwise-models` and `src/model.rs`).

use std::process::{Command, Output};

fn pendulum(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args([
            "model",
            "pendulum",
            "--down-rate",
            "2.4Mbit",
            "--up-rate",
            "196kbit",
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn unreachable_target_exits_non_zero() {
    let out = pendulum(&[
        "--rtt",
        "200ms",
        "--down-buffer",
        "60kB",
        "--target-r",
        "30",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("--target-r: r = 30 is unreachable") && stderr.contains("largest ratio"),
        "{stderr}"
    );
    // The capacity ratio is reachable: Eq. 6-10 are solved for B_u.
    let out = pendulum(&["--rtt", "200ms", "--down-buffer", "60kB", "--target-r", "k"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("solving Eq. 6-10 for B_u"), "{stdout}");
}

#[test]
fn undefined_model_exits_non_zero_naming_the_flags() {
    let out = pendulum(&["--rtt", "0ms", "--down-buffer", "0B", "--up-buffer", "0B"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{stdout}");
    assert!(
        !stdout.contains("NaN") && !stdout.contains("inf"),
        "{stdout}"
    );
    assert!(
        stderr.contains("--rtt 0ms with --down-buffer 0B"),
        "{stderr}"
    );
    let out = pendulum(&["--rtt", "1e9s", "--down-buffer", "0B", "--up-buffer", "0B"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("--rtt: `1e9s` is too large"), "{stderr}");
}

#[test]
fn clap_names_the_alternatives_and_conflicts() {
    let out = pendulum(&["--rtt", "200ms", "--down-buffer", "60kB"]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--up-buffer") && stderr.contains("--target-r"),
        "{stderr}"
    );
    let out = pendulum(&[
        "--rtt",
        "200ms",
        "--down-buffer",
        "60kB",
        "--up-buffer",
        "15kB",
        "--delayed-ack",
        "--no-delayed-ack",
    ]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("'--delayed-ack' cannot be used with '--no-delayed-ack'"),
        "{stderr}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args([
            "model",
            "pendulum",
            "--down-rate",
            "10",
            "--up-rate",
            "196kbit",
        ])
        .args([
            "--rtt",
            "200ms",
            "--down-buffer",
            "60kB",
            "--up-buffer",
            "15kB",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--down-rate: a rate needs a unit"),
        "{stderr}"
    );
}

/// A negative number given as its own word reaches the model's checks
/// (clap would otherwise take it for a flag: "unexpected argument '-1'").
/// A negative value with a unit must be attached (`--rtt=-5ms`): taking
/// any word that starts with `-` as a value would also take the next flag
/// (`--rtt --down-rate 2Mbit`) and make clap's messages worse.
#[test]
fn a_negative_number_gets_the_model_s_message() {
    let out = pendulum(&[
        "--rtt",
        "200ms",
        "--down-buffer",
        "60kB",
        "--target-r",
        "-1",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("--target-r: `-1` is not a positive number"),
        "{err}"
    );
    let out = pendulum(&["--rtt=-5ms", "--down-buffer", "60kB", "--up-buffer", "30kB"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("--rtt: `-5ms` is negative"), "{err}");
}
