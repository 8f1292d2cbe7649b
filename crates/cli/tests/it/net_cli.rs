//! `hopwise quickstart --self-test` end to end, the relay's error exits and
//! its graceful shutdown.

// Tests of real processes: they sleep.
use std::process::Command;

fn hopwise() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hopwise"))
}

/// `hopwise quickstart --self-test --size SIZE` in `dir`, on any free SOCKS port.
fn quickstart_self_test(dir: &std::path::Path, size: &str) -> Command {
    let mut c = hopwise();
    c.args([
        "quickstart",
        "--self-test",
        "--size",
        size,
        "--socks",
        "127.0.0.1:0",
        "--dir",
    ])
    .arg(dir);
    c
}

#[test]
fn quickstart_self_test_passes() {
    let d = tempfile_dir("qs");
    let out = quickstart_self_test(&d, "8MiB")
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // stderr is a pipe, not a terminal: logs without colour codes.
    assert!(stderr.contains("relay starting"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
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
    std::fs::write(
        d.join("dir.toml"),
        "[[relay]]\nname = \"r\"\naddress = \"127.0.0.1:1\"\nkey = \"0101010101010101010101010101010101010101010101010101010101010101\"\n",
    )
    .unwrap();
    let auth = sign(&d, "dir.toml");
    std::fs::write(&cfg, format!("name = \"r\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"r.key\"\ndirectory = \"dir.toml\"\n{auth}[bandwidth]\nrate = \"fast\"\n")).unwrap();
    let out = hopwise()
        .args(["relay", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("relay.toml: bandwidth.rate: invalid rate: `fast`"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn relay_shuts_down_gracefully_on_sigterm() {
    let d = tempfile_dir("term");
    // Let the quick start write a relay's files, then run that relay alone.
    let out = quickstart_self_test(&d, "1MiB")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success());
    let child = hopwise()
        .args(["relay", "--config"])
        .arg(d.join("relay1.toml"))
        .env_remove("NO_COLOR")
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
    assert!(!err.contains('\x1b'), "colour codes in a pipe: {err:?}");
    let _ = std::fs::remove_dir_all(&d);
}

const KEY1: &str = "0101010101010101010101010101010101010101010101010101010101010101";
const KEY2: &str = "0202020202020202020202020202020202020202020202020202020202020202";
const KEY3: &str = "0303030303030303030303030303030303030303030303030303030303030303";

/// Signs `d/file` with the authority key `d/authority.key` (created the
/// first time) through the CLI, valid for a day; returns the config line
/// `authority = "<its public key>"`.
fn sign(d: &std::path::Path, file: &str) -> String {
    let key = d.join("authority.key");
    if !key.exists() {
        let out = hopwise()
            .args(["authority", "keygen", "--out"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = hopwise()
        .args(["directory", "sign", "--valid-for", "1", "--key"])
        .arg(&key)
        .arg(d.join(file))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let public = stdout
        .split("(authority ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no authority in {stdout}"));
    format!("authority = \"{public}\"\n")
}

/// A directory of relay1 (guard), relay2 and relay3 (exit) in `d`, signed
/// (`sign`); nothing listens at their addresses. Returns the `authority`
/// line for the configs.
fn write_directory(d: &std::path::Path) -> String {
    std::fs::create_dir_all(d).unwrap();
    std::fs::write(
        d.join("directory.toml"),
        format!(
            "[[relay]]\nname = \"relay1\"\naddress = \"127.0.0.1:9\"\nkey = \"{KEY1}\"\nflags = [\"guard\"]\n\n\
             [[relay]]\nname = \"relay2\"\naddress = \"127.0.0.1:10\"\nkey = \"{KEY2}\"\n\n\
             [[relay]]\nname = \"relay3\"\naddress = \"127.0.0.1:11\"\nkey = \"{KEY3}\"\nflags = [\"exit\"]\n"
        ),
    )
    .unwrap();
    sign(d, "directory.toml")
}

/// Runs `hopwise <cmd> --config <file with text>`; it must fail at once.
fn config_error(d: &std::path::Path, cmd: &str, file: &str, text: &str) -> String {
    let cfg = d.join(file);
    std::fs::write(&cfg, text).unwrap();
    let out = hopwise()
        .args([cmd, "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{cmd} {file} started: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn zero_timeouts_bad_paths_and_directory_key_files_are_config_errors() {
    let d = tempfile_dir("cfg");
    let auth = write_directory(&d);
    let relay = &format!("name = \"relay1\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"relay1.key\"\ndirectory = \"directory.toml\"\n{auth}");
    let err = config_error(
        &d,
        "relay",
        "relay.toml",
        &format!("{relay}[link]\nhandshake_timeout = \"0s\"\n"),
    );
    assert!(
        err.contains("relay.toml: link.handshake_timeout: must be positive (1ms to 1h), got `0s`"),
        "{err}"
    );
    let err = config_error(
        &d,
        "relay",
        "relay.toml",
        &format!("{relay}[exit]\nenabled = true\nconnect_timeout = \"0s\"\n"),
    );
    assert!(
        err.contains("relay.toml: exit.connect_timeout: must be positive"),
        "{err}"
    );
    // key_file names a directory (mode 755): that, not the mode, is the error.
    let err = config_error(
        &d,
        "relay",
        "relay.toml",
        &relay.replace("\"relay1.key\"", "\".\""),
    );
    assert!(err.contains("is a directory, not a key file"), "{err}");
    assert!(!err.contains("chmod"), "{err}");

    let proxy = &format!("socks = \"127.0.0.1:0\"\ndirectory = \"directory.toml\"\n{auth}");
    let err = config_error(
        &d,
        "proxy",
        "proxy.toml",
        &format!("{proxy}connect_timeout = \"0s\"\n"),
    );
    assert!(
        err.contains("proxy.toml: connect_timeout: must be positive"),
        "{err}"
    );
    for (path, want) in [
        (
            "[\"relay1\", \"relay1\", \"relay3\"]",
            "proxy.toml: path[1]: `relay1` is already path[0]",
        ),
        (
            "[\"relay1\", \"relay3\", \"relay2\"]",
            "proxy.toml: path[2]: `relay2` is not an exit",
        ),
        (
            "[\"relay1\"]",
            "proxy.toml: path[0]: `relay1` is not an exit",
        ),
    ] {
        let err = config_error(
            &d,
            "proxy",
            "proxy.toml",
            &format!("{proxy}path = {path}\n"),
        );
        assert!(err.contains(want), "{path}: {err}");
        assert!(!err.contains("building a circuit"), "{path}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--show-key` needs only `key_file`: a new relay's key is printed before
/// any directory lists it. The same key comes back the second time.
#[test]
fn show_key_works_before_the_directory_exists() {
    let d = tempfile_dir("show-key");
    std::fs::create_dir_all(d.join("keys")).unwrap();
    std::fs::write(
        d.join("relay.toml"),
        "name = \"relay1\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"keys/r1.key\"\ndirectory = \"missing.toml\"\n\
         authority = \"ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22c\"\n",
    )
    .unwrap();
    let show = || show_key(&d.join("relay.toml"));
    let key = show();
    assert_eq!(key.len(), 64, "{key}");
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
    assert!(d.join("keys/r1.key").exists());
    assert_eq!(show(), key);
    // Running the relay still needs the directory.
    let out = hopwise()
        .args(["relay", "--config"])
        .arg(d.join("relay.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.toml"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[cfg(unix)]
#[test]
fn logs_redirected_to_a_file_carry_no_colour_codes() {
    let d = tempfile_dir("colour");
    let auth = write_directory(&d);
    let log = d.join("stderr.log");
    // A relay that creates its key logs it.
    std::fs::write(
        d.join("relay.toml"),
        "name = \"relay1\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"new.key\"\ndirectory = \"directory.toml\"\n",
    )
    .unwrap();
    let out = hopwise()
        .args(["relay", "--show-key", "--config"])
        .arg(d.join("relay.toml"))
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stderr(std::fs::File::create(&log).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(err.contains("generated a new static key"), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");

    // A proxy, until it has said where it listens.
    std::fs::write(
        d.join("proxy.toml"),
        format!("socks = \"127.0.0.1:0\"\ndirectory = \"directory.toml\"\n{auth}"),
    )
    .unwrap();
    let mut child = hopwise()
        .args(["proxy", "--config"])
        .arg(d.join("proxy.toml"))
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let err = stop_after_log(&mut child, &log, "SOCKS5 proxy on");
    assert!(err.contains("SOCKS5 proxy on"), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn quickstart_refuses_size_zero_and_a_file_as_dir() {
    let d = tempfile_dir("qsargs");
    std::fs::create_dir_all(&d).unwrap();
    for size in ["0", "0B"] {
        let out = hopwise()
            .args(["quickstart", "--self-test", "--socks", "127.0.0.1:0"])
            .args(["--size", size, "--dir"])
            .arg(&d)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "--size {size}: {err}");
        assert!(
            err.contains(&format!("--size: `{size}`: must be at least 1 byte")),
            "{err}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("passed"));
    }
    let file = d.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let out = hopwise()
        .args(["quickstart", "--socks", "127.0.0.1:0", "--dir"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("--dir {}: not a directory", file.display())),
        "{err}"
    );
    assert!(!err.contains("in use"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `hopwise relay --show-key --config cfg`: the key it prints.
fn show_key(cfg: &std::path::Path) -> String {
    let out = hopwise()
        .args(["relay", "--show-key", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Waits (up to 20 s) until `log` contains `needle`, stops `child` with
/// SIGTERM and returns the log.
fn stop_after_log(child: &mut std::process::Child, log: &std::path::Path, needle: &str) -> String {
    let t0 = std::time::Instant::now();
    let err = loop {
        let err = std::fs::read_to_string(log).unwrap();
        if err.contains(needle) || t0.elapsed() > std::time::Duration::from_secs(20) {
            break err;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    err
}

fn tempfile_dir(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hopwise-cli-test-{tag}-{}", std::process::id()))
}

/// The bootstrap order the docs give (key first, then the directory) works,
/// and a relay the directory flags `guard` that takes no clients warns at
/// start that proxies picking it as their entry are refused.
#[test]
fn a_guard_that_takes_no_clients_warns_at_start() {
    let d = tempfile_dir("guard-warn");
    std::fs::create_dir_all(&d).unwrap();
    let cfg = d.join("relay.toml");
    let relay = "name = \"g\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"g.key\"\ndirectory = \"directory.toml\"\naccept_clients = false\n";
    std::fs::write(&cfg, relay).unwrap();
    let key = show_key(&cfg);
    std::fs::write(
        d.join("directory.toml"),
        format!(
            "[[relay]]\nname = \"g\"\naddress = \"127.0.0.1:9\"\nkey = \"{key}\"\nflags = [\"guard\"]\n\n\
             [[relay]]\nname = \"x\"\naddress = \"127.0.0.1:10\"\nkey = \"{KEY3}\"\nflags = [\"exit\"]\n"
        ),
    )
    .unwrap();
    let auth = sign(&d, "directory.toml");
    std::fs::write(&cfg, format!("{relay}{auth}")).unwrap();
    let log = d.join("stderr.log");
    let mut child = hopwise()
        .args(["relay", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let err = stop_after_log(&mut child, &log, "relay starting");
    assert!(
        err.contains("flags g as a guard, but accept_clients = false"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A relay started with `--exit-with-parent` (as `hopwise lab` starts its
/// daemons) shuts down once its parent is gone, even if that parent was
/// killed and could not stop it; without the flag it would run on.
#[test]
fn a_relay_started_with_exit_with_parent_stops_with_its_parent() {
    let d = tempfile_dir("orphan");
    std::fs::create_dir_all(&d).unwrap();
    let cfg = d.join("relay.toml");
    let relay = "name = \"o\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"o.key\"\ndirectory = \"directory.toml\"\n";
    std::fs::write(&cfg, relay).unwrap();
    let key = show_key(&cfg);
    std::fs::write(
        d.join("directory.toml"),
        format!("[[relay]]\nname = \"o\"\naddress = \"127.0.0.1:9\"\nkey = \"{key}\"\n"),
    )
    .unwrap();
    let auth = sign(&d, "directory.toml");
    std::fs::write(&cfg, format!("{relay}{auth}")).unwrap();
    let log = d.join("relay.log");
    // A shell starts the relay, prints its PID and exits: the relay is
    // orphaned.
    let out = Command::new("sh")
        .arg("-c")
        .arg("\"$0\" relay --config \"$1\" --exit-with-parent >\"$2\" 2>&1 & echo $!; sleep 0.5")
        .arg(env!("CARGO_BIN_EXE_hopwise"))
        .arg(&cfg)
        .arg(&log)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success());
    let pid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // A zombie has no cmdline left (whoever adopted the relay may not reap
    // it at once).
    let running = || std::fs::read(proc_dir.join("cmdline")).is_ok_and(|c| !c.is_empty());
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if running() {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        panic!("the relay outlived its parent by 10 s: {text}");
    }
    assert!(text.contains("the parent process is gone"), "{text}");
    assert!(text.contains("shutting down"), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `hopwise otcp`'s bad flags end with an error that names the flag, before
/// anything listens.
#[test]
fn otcp_flag_errors_name_the_flag() {
    for (args, msg) in [
        (
            vec!["relay", "--buffer", "1KiB"],
            "--buffer: `1KiB`: must be 4096 B",
        ),
        (
            vec!["relay", "--header-timeout", "0s"],
            "--header-timeout: `0s`",
        ),
        (
            vec!["relay", "--policy", "reject foo"],
            "--policy: `reject foo`: missing `:PORTS`",
        ),
        (
            vec!["relay", "--max-connections", "0"],
            "--max-connections: must be at least 1",
        ),
        (
            vec!["forward", "--to", "[::1]:80"],
            "--to: `[::1]:80`: no IPv4 address",
        ),
        (vec!["forward", "--to", "127.0.0.1"], "--to: `127.0.0.1`"),
        (
            vec!["forward", "--to", "127.0.0.1:80", "--via", "127.0.0.1:1,"],
            "--via: an empty entry",
        ),
        (
            vec!["relay", "--idle-timeout", "0s"],
            "--idle-timeout: `0s`",
        ),
        (
            vec![
                "forward",
                "--to",
                "127.0.0.1:80",
                "--candidates",
                "127.0.0.1:1",
                "--probes",
                "0",
            ],
            "--probes: 0: must be 1 to 100",
        ),
    ] {
        let o = hopwise()
            .arg("otcp")
            .args(&args)
            .args(["--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

/// `hopwise authority keygen` writes a private key file it never
/// overwrites; `hopwise directory sign` signs a directory in place or into
/// `--out`; a relay refuses an unsigned directory and one signed by another
/// authority, naming the file and the key.
#[test]
fn authority_keygen_and_directory_sign() {
    let d = tempfile_dir("sign");
    std::fs::create_dir_all(&d).unwrap();
    let key = d.join("authority.key");
    let out = hopwise()
        .args(["authority", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let public = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(public.len(), 64, "{public}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let before = std::fs::read(&key).unwrap();
    let out = hopwise()
        .args(["authority", "keygen", "--out"])
        .arg(&key)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("authority.key: exists; not overwriting it"),
        "{err}"
    );
    assert_eq!(std::fs::read(&key).unwrap(), before);

    // An unsigned directory: the relay names the file and the problem.
    let unsigned = format!(
        "[[relay]]\nname = \"relay1\"\naddress = \"127.0.0.1:9\"\nkey = \"{KEY1}\"\nflags = [\"guard\", \"exit\"]\n"
    );
    std::fs::write(d.join("directory.toml"), &unsigned).unwrap();
    let relay = format!("name = \"relay1\"\nlisten = \"127.0.0.1:0\"\nkey_file = \"relay1.key\"\ndirectory = \"directory.toml\"\nauthority = \"{public}\"\n");
    let err = config_error(&d, "relay", "relay.toml", &relay);
    assert!(
        err.contains("directory.toml: directory: the directory is not signed"),
        "{err}"
    );

    // Signed into --out: the input stays as it was.
    let out = hopwise()
        .args(["directory", "sign", "--valid-for", "12h", "--key"])
        .arg(&key)
        .arg("--out")
        .arg(d.join("signed.toml"))
        .arg(d.join("directory.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("(authority {public})")),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("directory.toml")).unwrap(),
        unsigned
    );
    let signed = std::fs::read_to_string(d.join("signed.toml")).unwrap();
    assert!(
        signed.starts_with("[directory]\nvalid_after = \""),
        "{signed}"
    );
    assert!(signed.ends_with(&unsigned), "{signed}");

    // Another authority's key in the relay's config.
    let other = d.join("other.key");
    let out = hopwise()
        .args(["authority", "keygen", "--out"])
        .arg(&other)
        .output()
        .unwrap();
    let other_public = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let wrong = relay
        .replace(&public, &other_public)
        .replace("directory.toml", "signed.toml");
    let err = config_error(&d, "relay", "relay.toml", &wrong);
    assert!(
        err.contains("relay.toml: authority: the directory ")
            && err.contains("signed.toml is not signed by this key"),
        "{err}"
    );

    // Bad arguments.
    let out = hopwise()
        .args(["directory", "sign", "--valid-for", "30s", "--key"])
        .arg(&key)
        .arg(d.join("directory.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("--valid-for") && err.contains("one minute to 3650 days"),
        "{err}"
    );
    let out = hopwise()
        .args(["directory", "sign", "--valid-for", "7", "--key"])
        .arg(d.join("relay.toml"))
        .arg(d.join("directory.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("relay.toml"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A `hopwise quickstart` left running: its SOCKS address (from its
/// stdout, once the circuit is built) and its stdout so far.
struct Quickstart {
    child: std::process::Child,
    socks: std::net::SocketAddr,
    stdout: String,
}

impl Quickstart {
    fn start(dir: &std::path::Path, extra: &[&str]) -> Quickstart {
        use std::io::BufRead;
        let mut child = hopwise()
            .args(["quickstart", "--socks", "127.0.0.1:0", "--dir"])
            .arg(dir)
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut stdout = String::new();
        let mut socks = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(a) = line.trim().strip_prefix("SOCKS5 proxy: ") {
                socks = Some(a.parse().unwrap());
            }
            stdout.push_str(&line);
            stdout.push('\n');
            if line.contains("Press Ctrl-C") {
                break;
            }
        }
        // Keep reading, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let socks = socks.unwrap_or_else(|| panic!("no SOCKS address in:\n{stdout}"));
        Quickstart {
            child,
            socks,
            stdout,
        }
    }
}

impl Drop for Quickstart {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// `quickstart --allow-local` lets its exit reach a local HTTP server, with
/// a warning; without the flag the exit refuses it (SOCKS reply 0x02).
#[test]
fn quickstart_allow_local_reaches_a_local_server() {
    use hopwise_net::testbed;
    let d = tempfile_dir("allow-local");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (seed, size) = (11, 3_000_000);
    let server = rt.block_on(testbed::start_file_server(seed, size)).unwrap();
    let limit = std::time::Duration::from_secs(120);
    {
        let qs = Quickstart::start(&d, &[]);
        assert!(!qs.stdout.contains("WARNING"), "{}", qs.stdout);
        assert!(
            qs.stdout.contains("--allow-local lets it reach them"),
            "{}",
            qs.stdout
        );
        let r = rt.block_on(async {
            tokio::time::timeout(
                limit,
                hopwise_net::socks::connect(qs.socks, "127.0.0.1", server.port()),
            )
            .await
        });
        match r.expect("an answer in time") {
            Err(hopwise_net::socks::SocksClientError::Reply(2)) => {}
            r => panic!("expected reply 0x02 (not allowed), got {:?}", r.map(|_| ())),
        }
    }
    let qs = Quickstart::start(&d, &["--allow-local"]);
    assert!(
        qs.stdout.contains(
            "WARNING: --allow-local: the exit connects to loopback and private addresses"
        ),
        "{}",
        qs.stdout
    );
    assert!(qs.stdout.contains(&qs.socks.to_string()), "{}", qs.stdout);
    let want = testbed::expected_hash(seed, size);
    // The Rust client.
    let got = rt
        .block_on(async {
            tokio::time::timeout(
                limit,
                testbed::download(qs.socks, "127.0.0.1", server.port()),
            )
            .await
        })
        .expect("download in time")
        .expect("download");
    assert_eq!((got.bytes, got.hash), (size, want));
    // curl, with the name resolved at the exit.
    let out = d.join("curl.out");
    let curl = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "120", "--socks5-hostname"])
        .arg(qs.socks.to_string())
        .arg(format!("http://localhost:{}/file", server.port()))
        .arg("-o")
        .arg(&out)
        .output();
    match curl {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("curl is not installed: only the Rust SOCKS5 client was checked");
        }
        Err(e) => panic!("curl: {e}"),
        Ok(o) => {
            assert!(
                o.status.success(),
                "curl: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(std::fs::metadata(&out).unwrap().len(), size);
            assert_eq!(testbed::sha256_file(&out).unwrap(), want, "curl's file");
        }
    }
    drop(qs);
    let _ = std::fs::remove_dir_all(&d);
}

/// `hopwise quickstart --self-test` in `dir`: its stdout (it must pass).
fn self_test_in(dir: &std::path::Path) -> String {
    let out = quickstart_self_test(dir, "1MiB")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("self-test passed"), "{stdout}");
    stdout
}

/// A rerun of quickstart keeps the config files the user edited (and files
/// it has no record of writing), starts from them, and rewrites the others;
/// an edited directory is not signed anew, and works once the user signs it.
#[test]
fn quickstart_never_overwrites_edited_files() {
    let d = tempfile_dir("keep");
    let _ = std::fs::remove_dir_all(&d);
    let read = |name: &str| std::fs::read_to_string(d.join(name)).unwrap();
    let first = self_test_in(&d);
    assert!(!first.contains("keeps"), "{first}");
    let state = read("quickstart.sha256");
    assert_eq!(state.lines().count(), 5, "{state}");
    // Unedited: written anew (fresh ports), no message.
    let relay1 = read("relay1.toml");
    let again = self_test_in(&d);
    assert!(!again.contains("keeps"), "{again}");
    let relay1_again = read("relay1.toml");
    assert_ne!(relay1, relay1_again, "rewritten with new ports");
    // An edited exit file is kept, and the relays keep their addresses.
    let mut exit = read("relay3.toml");
    exit.push_str("\n# my edit\n[limits]\nmax_streams = 7\n");
    std::fs::write(d.join("relay3.toml"), &exit).unwrap();
    let out = self_test_in(&d);
    assert!(
        out.contains("quickstart keeps these files as they are")
            && out.contains("relay3.toml: edited since quickstart wrote it"),
        "{out}"
    );
    assert!(!out.contains("relay1.toml:"), "{out}");
    assert_eq!(read("relay3.toml"), exit);
    assert_eq!(read("relay1.toml"), relay1_again, "same address, same file");
    // Still counted as edited the next time.
    let out = self_test_in(&d);
    assert!(out.contains("relay3.toml: edited since"), "{out}");
    assert_eq!(read("relay3.toml"), exit);
    // An edited directory is kept and not signed anew: refused until the
    // user signs it.
    let mut dir_text = read("directory.toml");
    dir_text.push_str("# my comment\n");
    std::fs::write(d.join("directory.toml"), &dir_text).unwrap();
    let out = quickstart_self_test(&d, "1MiB").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("directory.toml: edited since"), "{stdout}");
    assert!(stdout.contains("hopwise directory sign --key"), "{stdout}");
    assert!(stderr.contains("directory.toml"), "{stderr}");
    assert_eq!(read("directory.toml"), dir_text, "not rewritten");
    let signed = hopwise()
        .args(["directory", "sign", "--valid-for", "1d", "--key"])
        .arg(d.join("authority.key"))
        .arg(d.join("directory.toml"))
        .output()
        .unwrap();
    assert!(
        signed.status.success(),
        "{}",
        String::from_utf8_lossy(&signed.stderr)
    );
    let out = self_test_in(&d);
    assert!(out.contains("directory.toml: edited since"), "{out}");
    assert!(read("directory.toml").contains("# my comment"));
    // Files with no record (an older quickstart, or the user's own) are kept.
    std::fs::remove_file(d.join("quickstart.sha256")).unwrap();
    let out = self_test_in(&d);
    assert!(
        out.contains("proxy.toml: not written by quickstart"),
        "{out}"
    );
    // Deleting the files gets fresh ones.
    for f in [
        "relay1.toml",
        "relay2.toml",
        "relay3.toml",
        "proxy.toml",
        "directory.toml",
    ] {
        std::fs::remove_file(d.join(f)).unwrap();
    }
    let out = self_test_in(&d);
    assert!(!out.contains("keeps"), "{out}");
    assert!(!read("relay3.toml").contains("my edit"));
    let _ = std::fs::remove_dir_all(&d);
}
