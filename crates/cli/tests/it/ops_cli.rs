//! The operator's basics of `hopwise relay` and `hopwise proxy`:
//! `--check-config`, `SIGHUP` (a relay reloads, a proxy keeps running),
//! JSON logs, and the proxy's metrics address in its log.

// Tests of real processes: they wait for log lines.
use hopwise_net::testbed::{write_lab, LabFiles, LabOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn hopwise() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hopwise"));
    c.env_remove("RUST_LOG").env_remove("HOPWISE_LOG_FORMAT");
    c
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-ops-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn lab(tag: &str) -> (PathBuf, LabFiles) {
    let d = tempdir(tag);
    let mut o = LabOptions::new(&d);
    o.allow_loopback_exit = true;
    let files = write_lab(&o).unwrap();
    (d, files)
}

/// Waits (up to 20 s) until the file `log` has more than `after` lines
/// with `needle`; returns the log.
fn wait_for(log: &Path, needle: &str, after: usize) -> String {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.matches(needle).count() > after || t0.elapsed() > Duration::from_secs(20) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn spawn(args: &[&str], config: &Path, log: &Path) -> Child {
    hopwise()
        .args(args)
        .arg("--config")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[test]
fn check_config_loads_without_binding_or_creating_files() {
    let (d, files) = lab("check");
    // The relay's port is taken and its key file gone: neither is checked
    // by binding or creating.
    let text = std::fs::read_to_string(&files.relays[0]).unwrap();
    let listen = text
        .lines()
        .find_map(|l| l.strip_prefix("listen = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    let _taken = std::net::UdpSocket::bind(&listen).unwrap();
    std::fs::remove_file(d.join("relay1.key")).unwrap();
    let out = hopwise()
        .args(["relay", "--check-config", "--config"])
        .arg(&files.relays[0])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(
        stdout.contains(&format!("relay relay1: listen {listen}")),
        "{stdout}"
    );
    assert!(stdout.contains("does not exist yet"), "{stdout}");
    assert!(
        stdout.contains("directory: 3 relays (1 exit), signature verified, valid until"),
        "{stdout}"
    );
    assert!(!d.join("relay1.key").exists(), "the check created a key");

    let out = hopwise()
        .args(["relay", "--check-config", "--config"])
        .arg(&files.relays[2])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("exit: on, policy [\"accept 127.0.0.1/32:*\", \"reject private:*\"]"),
        "{stdout}"
    );
    assert!(stdout.contains("(public key "), "{stdout}");

    let out = hopwise()
        .args(["proxy", "--check-config", "--config"])
        .arg(&files.proxy)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("path: relay1 -> relay2 -> relay3"),
        "{stdout}"
    );

    // Errors: non-zero, the file, key and problem.
    std::fs::write(&files.relays[1], text.replace("listen = ", "listn = ")).unwrap();
    let out = hopwise()
        .args(["relay", "--check-config", "--config"])
        .arg(&files.relays[1])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("relay2.toml: listn: unknown key; did you mean `listen`?"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // A directory the file does not verify against.
    let dir = std::fs::read_to_string(&files.directory).unwrap();
    std::fs::write(&files.directory, dir.replace("relay2", "relayX")).unwrap();
    let out = hopwise()
        .args(["proxy", "--check-config", "--config"])
        .arg(&files.proxy)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("proxy.toml: authority: the directory"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// One JSON object per log line; the messages of those at `level`.
fn json_messages(log: &str, level: &str) -> Vec<String> {
    log.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
        })
        .filter(|v| v["level"] == level)
        .map(|v| v["fields"]["message"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn sighup_reloads_a_relay_and_refuses_a_bad_file() {
    let (d, files) = lab("hup");
    let exit = &files.relays[2];
    let log = d.join("relay3.log");
    let original = std::fs::read_to_string(exit).unwrap();
    let mut child = spawn(&["--log-format", "json", "relay"], exit, &log);
    // Once this is logged, SIGHUP no longer ends the process.
    wait_for(&log, "SIGHUP reloads", 0);

    let changed = original.replace(
        "policy = [\"accept 127.0.0.1/32:*\", \"reject private:*\"]",
        "policy = [\"reject private:*\"]",
    ) + "\n[bandwidth]\nrate = \"10MB/s\"\n[limits]\nmax_streams = 10\n";
    std::fs::write(exit, changed).unwrap();
    signal(&child, "-HUP");
    let text = wait_for(&log, "configuration reloaded", 0);
    // A key that needs a restart makes the line a warning.
    let warned = json_messages(&text, "WARN");
    let line = warned
        .iter()
        .find(|m| m.starts_with("configuration reloaded"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("applied exit.policy: [\"accept 127.0.0.1/32:*\", \"reject private:*\"]")
            && line.contains("-> [\"reject private:*\"]")
            && line.contains("bandwidth: unlimited -> rate 10000000 B/s")
            && line.contains("need a restart (running values kept): [limits]"),
        "{line}"
    );

    std::fs::write(exit, "name = [\n").unwrap();
    signal(&child, "-HUP");
    let text = wait_for(&log, "reload refused", 0);
    let errors = json_messages(&text, "ERROR");
    assert!(
        errors.iter().any(|m| m.contains("reload refused")
            && m.contains("relay3.toml: line ")
            && m.contains("keeps running")),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(child.try_wait().unwrap().is_none(), "the relay stopped");

    // log_level applies: debug lines appear after a reload to debug.
    std::fs::write(exit, format!("log_level = \"debug\"\n{original}")).unwrap();
    signal(&child, "-HUP");
    let text = wait_for(&log, "configuration reloaded", 1);
    assert!(
        json_messages(&text, "INFO")
            .iter()
            .any(|m| m.contains("log_level: unset -> \"debug\"")),
        "{text}"
    );
    signal(&child, "-TERM");
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status:?}: {text}");
    assert!(
        json_messages(&text, "INFO")
            .iter()
            .any(|m| m == "shutting down"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_proxy_logs_its_metrics_address_and_survives_sighup() {
    let (d, files) = lab("proxy");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(&files.proxy).unwrap();
    std::fs::write(
        &files.proxy,
        format!("{text}\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n"),
    )
    .unwrap();
    let log = d.join("proxy.log");
    let mut child = spawn(&["proxy"], &files.proxy, &log);
    let text = wait_for(&log, "SIGHUP is logged", 0);
    assert!(
        text.contains(&format!("metrics on http://127.0.0.1:{port}/metrics")),
        "{text}"
    );
    signal(&child, "-HUP");
    let text = wait_for(&log, "SIGHUP: the proxy", 0);
    assert!(text.contains("restart it to apply changes"), "{text}");
    assert!(child.try_wait().unwrap().is_none(), "{text}");
    signal(&child, "-TERM");
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&d);
}
