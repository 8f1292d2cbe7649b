//! `hopwise quickstart --self-test` end to end, the relay's error exits and
//! its graceful shutdown.

// Tests of real processes: they sleep.
#![allow(clippy::disallowed_methods)]

use std::process::Command;

fn hopwise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hopwise"))
}

#[test]
fn quickstart_self_test_passes() {
    let d = tempfile_dir("qs");
    let out = hopwise()
        .args([
            "quickstart",
            "--self-test",
            "--size",
            "8MiB",
            "--socks",
            "127.0.0.1:0",
            "--dir",
        ])
        .arg(&d)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("self-test passed"), "{stdout}");
    assert!(stdout.contains("MiB/s"), "{stdout}");
    assert!(stdout.contains("curl --socks5-hostname"), "{stdout}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn relay_config_errors_exit_non_zero_without_panicking() {
    let d = tempfile_dir("err");
    std::fs::create_dir_all(&d).unwrap();
    let missing = d.join("missing.toml");
    let out = hopwise()
        .args(["relay", "--config"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error: ") && err.contains("missing.toml: cannot read"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let cfg = d.join("relay.toml");
    std::fs::write(&cfg, "name = \"r\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"r.key\"\ndirectory = \"dir.toml\"\n[bandwidth]\nrate = \"fast\"\n").unwrap();
    std::fs::write(
        d.join("dir.toml"),
        "[[relay]]\nname = \"r\"\naddress = \"127.0.0.1:1\"\nkey = \"0101010101010101010101010101010101010101010101010101010101010101\"\n",
    )
    .unwrap();
    let out = hopwise()
        .args(["relay", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("relay.toml: bandwidth.rate: `fast`"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn relay_shuts_down_gracefully_on_sigterm() {
    let d = tempfile_dir("term");
    // Let the quick start write a relay's files, then run that relay alone.
    let out = hopwise()
        .args([
            "quickstart",
            "--self-test",
            "--size",
            "1MiB",
            "--socks",
            "127.0.0.1:0",
            "--dir",
        ])
        .arg(&d)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success());
    let child = hopwise()
        .args(["relay", "--config"])
        .arg(d.join("relay1.toml"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Give it a moment to start, then SIGTERM.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit status {:?}: {err}", out.status);
    assert!(
        err.contains("relay starting") && err.contains("shutting down"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hopwise-cli-test-{tag}-{}", std::process::id()))
}
