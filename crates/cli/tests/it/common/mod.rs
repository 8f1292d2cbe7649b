//! Shared by the live lab tests (`lab_*.rs`).

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `hopwise ARGS --out OUT`, fails the test with its stderr unless it
/// succeeds, and returns OUT/summary.json and the run's namespace prefix
/// (`hwlab-PID-`: the lab names its namespaces after its process).
pub fn run_lab(args: &[&str], out: &Path) -> (serde_json::Value, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hopwise");
    let own = format!("hwlab-{}-", child.id());
    let run = child.wait_with_output().expect("run hopwise");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (summary, own)
}

/// Fails the test if a namespace whose name starts with `own` is left.
pub fn assert_no_namespaces(own: &str) {
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(!left.contains(own), "namespaces left behind: {left}");
}

/// Runs the `hopwise` binary with `args` and waits for it.
pub fn hopwise(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(args)
        .output()
        .expect("hopwise runs")
}

/// A JSON file, parsed.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A fresh scratch directory path for one test (`hopwise-<area>-<tag>-<pid>`
/// under the temp dir; removed if an earlier run left it, not created).
pub fn scratch(area: &str, tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-{area}-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
