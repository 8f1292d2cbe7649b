//! `hopwise relay`, `hopwise proxy`, `hopwise quickstart` and `hopwise
//! bench-relay`: thin wrappers around `hopwise-net`.

use anyhow::{anyhow, bail, Result};
use hopwise_net::config::{ProxyConfig, RelayConfig};
use hopwise_net::daemon::{wait_for_shutdown_or_hangup, wait_for_shutdown_signal};
use hopwise_net::testbed::{self, Lab, LabOptions};
use hopwise_net::{spawn_proxy, spawn_relay};
use hopwise_proto::link::hex;
use hopwise_proto::units::parse_bytes;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Prints what `--check-config` found: "ok" and the summary, and warnings.
fn print_checked(config: &Path, c: hopwise_net::check::Checked) {
    println!("ok: {}", config.display());
    for l in &c.summary {
        println!("  {l}");
    }
    for w in &c.warnings {
        println!("warning: {w}");
    }
}

pub fn relay(config: &Path, show_key: bool, check: bool, exit_with_parent: bool) -> Result<()> {
    if show_key {
        // Only the key file: the directory may not exist yet.
        let key_file = RelayConfig::load_key_file(config)?;
        let kp = hopwise_net::keys::load_or_create(&key_file)?;
        println!("{}", hex(&kp.public));
        return Ok(());
    }
    if check {
        print_checked(config, hopwise_net::check::relay(config)?);
        return Ok(());
    }
    let cfg = RelayConfig::load(config)?;
    crate::logging::apply_config_level(cfg.log_level.as_deref());
    let h = spawn_relay(cfg)?;
    if let Some(m) = h.metrics {
        tracing::info!("metrics on http://{m}/metrics");
    }
    // SIGHUP: reload what can change without dropping circuits.
    let handle = &h;
    let does = "reloads the exit policy, bandwidth and log_level from the file";
    wait_for_shutdown_or_hangup(exit_with_parent, does, move || async move {
        tracing::info!("SIGHUP: reloading {}", config.display());
        let _ = handle.reload_async(config).await;
    });
    h.shutdown();
    Ok(())
}

pub fn proxy(config: &Path, check: bool, exit_with_parent: bool) -> Result<()> {
    if check {
        print_checked(config, hopwise_net::check::proxy(config)?);
        return Ok(());
    }
    let cfg = ProxyConfig::load(config)?;
    crate::logging::apply_config_level(cfg.log_level.as_deref());
    let h = spawn_proxy(cfg)?;
    let socks = h.socks.expect("a proxy has a SOCKS address");
    tracing::info!("SOCKS5 proxy on {socks}");
    if let Some(m) = h.metrics {
        tracing::info!("metrics on http://{m}/metrics");
    }
    let does = "is logged and ignored (a proxy does not reload)";
    wait_for_shutdown_or_hangup(exit_with_parent, does, || async {
        tracing::warn!(
            "SIGHUP: the proxy does not reload its configuration; restart it to apply changes"
        );
    });
    h.shutdown();
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn default_dir() -> PathBuf {
    std::env::temp_dir().join("hopwise-quickstart")
}

/// `--size` of `quickstart --self-test` and `bench-relay`: at least one byte,
/// or the download proves nothing.
fn parse_size(size: &str) -> Result<u64> {
    match parse_bytes(size) {
        Ok(b) if b.0 >= 1 => Ok(b.0),
        Ok(_) => bail!("--size: `{size}`: must be at least 1 byte"),
        Err(e) => bail!("--size: {e}"),
    }
}

/// `--dir` must be a directory, or a path where one can be created.
fn check_dir(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => bail!(
            "--dir {}: not a directory (it is a file; name a directory, or a path where one can be created)",
            dir.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("--dir {}: cannot create the directory: {e}", dir.display())),
        Err(e) => bail!("--dir {}: {e}", dir.display()),
    }
}

/// Where quickstart records the SHA-256 of each config file it wrote (the
/// format of `sha256sum`), to tell on the next start which ones were edited.
pub const QUICKSTART_STATE: &str = "quickstart.sha256";

/// The files quickstart writes anew at every start, unless they were edited.
/// (Key files are created once and never overwritten.)
const QUICKSTART_FILES: [&str; 5] = [
    "relay1.toml",
    "relay2.toml",
    "relay3.toml",
    "proxy.toml",
    "directory.toml",
];

/// What `--allow-local` lets the exit reach: loopback and the private
/// ranges of a local network (not link-local, where cloud metadata services
/// live, nor the other ranges `reject_private` covers).
const LOCAL_RULES: [&str; 6] = [
    "accept 127.0.0.0/8:*",
    "accept [::1]/128:*",
    "accept 10.0.0.0/8:*",
    "accept 172.16.0.0/12:*",
    "accept 192.168.0.0/16:*",
    "accept [fc00::]/7:*",
];

/// `name -> SHA-256 hex` from the state file; empty if there is none (or it
/// cannot be read: then every existing file counts as the user's).
fn read_quickstart_state(dir: &Path) -> std::collections::HashMap<String, String> {
    let text = std::fs::read_to_string(dir.join(QUICKSTART_STATE)).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (h, name) = l.split_once("  ")?;
            (h.len() == 64).then(|| (name.to_string(), h.to_string()))
        })
        .collect()
}

/// The files of `dir` quickstart must not overwrite, each with why: they
/// differ from what it last wrote, or it has no record of writing them.
fn edited_files(dir: &Path) -> Result<Vec<(String, &'static str)>> {
    let recorded = read_quickstart_state(dir);
    let mut kept = Vec::new();
    for name in QUICKSTART_FILES {
        let p = dir.join(name);
        // A symbolic link, even a dangling one, is the user's: keep it.
        match std::fs::symlink_metadata(&p) {
            Err(_) => continue,
            Ok(m) if m.file_type().is_symlink() => {
                kept.push((
                    name.to_string(),
                    "a symbolic link (quickstart writes plain files)",
                ));
                continue;
            }
            Ok(_) => {}
        }
        let h = testbed::sha256_file(&p).map_err(|e| anyhow!("{}: {e}", p.display()))?;
        match recorded.get(name) {
            Some(r) if *r == hex(&h) => {}
            Some(_) => kept.push((name.to_string(), "edited since quickstart wrote it")),
            None => kept.push((
                name.to_string(),
                "not written by quickstart (no record in quickstart.sha256)",
            )),
        }
    }
    Ok(kept)
}

/// Records the SHA-256 of each file quickstart just wrote; a kept file keeps
/// its earlier record (if any), so it still counts as edited next time.
fn write_quickstart_state(dir: &Path, kept: &[String]) -> Result<()> {
    let recorded = read_quickstart_state(dir);
    let mut out = String::new();
    for name in QUICKSTART_FILES {
        let h = if kept.iter().any(|k| k == name) {
            match recorded.get(name) {
                Some(h) => h.clone(),
                None => continue,
            }
        } else {
            let p = dir.join(name);
            hex(&testbed::sha256_file(&p).map_err(|e| anyhow!("{}: {e}", p.display()))?)
        };
        out.push_str(&format!("{h}  {name}\n"));
    }
    let p = dir.join(QUICKSTART_STATE);
    std::fs::write(&p, out).map_err(|e| anyhow!("{}: {e}", p.display()))
}

pub fn quickstart(
    dir: Option<PathBuf>,
    socks: SocketAddr,
    self_test: bool,
    allow_local: bool,
    size: &str,
) -> Result<()> {
    let size = parse_size(size)?;
    let dir = dir.unwrap_or_else(default_dir);
    check_dir(&dir)?;
    let mut o = LabOptions::new(&dir);
    o.socks = socks;
    o.allow_loopback_exit = self_test;
    if allow_local {
        o.exit_policy = LOCAL_RULES.iter().map(|r| r.to_string()).collect();
    }
    let kept = edited_files(&dir)?;
    o.keep = kept.iter().map(|(n, _)| n.clone()).collect();
    let files = testbed::write_lab(&o).map_err(|e| {
        anyhow!(
            "writing the local overlay's files in {}: {e}",
            dir.display()
        )
    })?;
    write_quickstart_state(&dir, &o.keep)?;
    if !kept.is_empty() {
        println!("quickstart keeps these files as they are and starts from them:");
        for (name, why) in &kept {
            println!("  {}: {why}", dir.join(name).display());
        }
        println!(
            "  (the relays keep the addresses their files name; delete a file to have it written anew)"
        );
        if o.keep.iter().any(|k| k == "directory.toml") {
            println!(
                "  directory.toml is not signed anew: after editing it, sign it with\n    \
                 hopwise directory sign --key {} --valid-for 30d {}",
                dir.join(testbed::AUTHORITY_KEY).display(),
                dir.join("directory.toml").display()
            );
        }
        if o.keep.iter().any(|k| k == "relay3.toml") && (self_test || allow_local) {
            println!("  relay3.toml (the exit) is kept: its exit policy is what that file says, whatever --self-test or --allow-local would write");
        }
        if o.keep.iter().any(|k| k == "proxy.toml") {
            println!("  proxy.toml is kept: its `socks` address applies, not --socks");
        }
    }
    let lab = Lab::start_files(files).map_err(|e| {
        // The hint only where it is the diagnosis: the proxy's `socks` key.
        let hint = if e.0.contains("proxy.toml: socks:") {
            format!(" (is {socks} in use? pick another with --socks)")
        } else {
            String::new()
        };
        anyhow!("starting the local overlay in {}{hint}: {e}", dir.display())
    })?;
    let socks = lab.socks();
    println!("hopwise quick start: three relays and a proxy on loopback");
    println!(
        "  files (keys, the directory signed by authority.key, configs): {}",
        dir.display()
    );
    for (r, f) in lab.relays.iter().zip(&lab.files.relays) {
        println!("  {:<7} udp {}  {}", r.name, r.addr, f.display());
    }
    println!("  SOCKS5 proxy: {socks}");
    if allow_local {
        let warning = format!(
            "--allow-local: the exit connects to loopback and private addresses ({}): \
             whoever can use the SOCKS proxy on {socks} reaches the services of this machine and of its local network",
            LOCAL_RULES
                .iter()
                .map(|r| r.trim_start_matches("accept ").trim_end_matches(":*"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!("WARNING: {warning}");
        tracing::warn!("{warning}");
    }
    let rt = runtime();
    rt.block_on(lab.wait_ready(Duration::from_secs(30)))
        .map_err(|e| anyhow!(e))?;
    println!("  circuit: relay1 -> relay2 -> relay3 (exit) is built");
    if !self_test {
        println!();
        if allow_local {
            println!("Try it (--allow-local: the exit reaches local services too):");
            println!("  curl --socks5-hostname {socks} http://localhost:8000/");
        } else {
            println!("Try it (the exit refuses loopback and private addresses; --allow-local lets it reach them):");
            println!("  curl --socks5-hostname {socks} https://example.org/");
        }
        println!("Press Ctrl-C to stop.");
        wait_for_shutdown_signal();
        lab.shutdown();
        return Ok(());
    }
    let seed = 0x0068_6f70_7769_7365;
    let r = rt.block_on(async {
        let server = testbed::start_file_server(seed, size).await?;
        println!(
            "self-test: downloading {} MiB from http://{server}/file through the circuit",
            size as f64 / (1 << 20) as f64
        );
        println!(
            "  (the same as: curl --socks5-hostname {socks} http://{server}/file -o /dev/null)"
        );
        let d = tokio::time::timeout(
            Duration::from_secs(600),
            testbed::download(socks, "127.0.0.1", server.port()),
        )
        .await
        .map_err(|_| anyhow!("the download did not finish within 10 minutes"))?
        .map_err(|e| anyhow!(e))?;
        anyhow::Ok(d)
    });
    let snaps: Vec<_> = lab.relays.iter().filter_map(|r| r.snapshot()).collect();
    lab.shutdown();
    let d = r?;
    let want = testbed::expected_hash(seed, size);
    println!(
        "  received {} bytes in {:.2} s: {:.1} MiB/s",
        d.bytes,
        d.secs,
        d.mib_per_s()
    );
    println!("  SHA-256 {}", testbed::hash_hex(&d.hash));
    for s in &snaps {
        let retx: u64 = s
            .circuits
            .iter()
            .map(|c| c.forward.retransmits + c.backward.retransmits)
            .sum();
        println!(
            "  {}: {} datagrams in, {} out, {} retransmissions, {} kernel drops, {} authentication failures",
            s.name,
            s.links.datagrams_in,
            s.links.datagrams_out,
            retx,
            s.socket_drops.unwrap_or(0),
            s.links.auth_failures
        );
    }
    if d.bytes != size {
        bail!("self-test FAILED: received {} of {size} bytes", d.bytes);
    }
    if d.hash != want {
        bail!(
            "self-test FAILED: SHA-256 {} differs from the expected {}",
            testbed::hash_hex(&d.hash),
            testbed::hash_hex(&want)
        );
    }
    println!("self-test passed: every byte arrived intact");
    Ok(())
}

/// CPU seconds (user + system) of a process, from /proc.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) of proc(5), counted from after the name.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        // SIGTERM for a graceful stop would need libc; kill is fine here.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Throughput (MB/s) and CPU seconds per GB of each relay.
type BenchResult = (f64, Vec<(String, f64)>);

fn run_bench(encrypt: bool, size: u64, dir: &Path) -> Result<BenchResult> {
    let exe = std::env::current_exe()?;
    let mut o = LabOptions::new(dir);
    o.allow_loopback_exit = true;
    o.encrypt = encrypt;
    let files = testbed::write_lab(&o)?;
    // The proxy's SOCKS port: any free one.
    let socks = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?
    };
    let proxy_cfg = std::fs::read_to_string(&files.proxy)?
        .replace("socks = \"127.0.0.1:0\"", &format!("socks = \"{socks}\""));
    std::fs::write(&files.proxy, proxy_cfg)?;
    let log = |name: &str| -> Result<std::fs::File> {
        Ok(std::fs::File::create(dir.join(format!("{name}.log")))?)
    };
    let mut relays = Vec::new();
    for (f, name) in files.relays.iter().zip(testbed::NAMES) {
        let c = std::process::Command::new(&exe)
            .args(["relay", "--config"])
            .arg(f)
            .stdout(std::process::Stdio::null())
            .stderr(log(name)?)
            .spawn()?;
        relays.push((name.to_string(), Child(c)));
    }
    let proxy = Child(
        std::process::Command::new(&exe)
            .args(["proxy", "--config"])
            .arg(&files.proxy)
            .stdout(std::process::Stdio::null())
            .stderr(log("proxy")?)
            .spawn()?,
    );
    let rt = runtime();
    let seed = 7;
    let r = rt.block_on(async {
        let warm = testbed::start_file_server(seed, 1 << 20).await?;
        let t0 = Instant::now();
        loop {
            match testbed::download(socks, "127.0.0.1", warm.port()).await {
                Ok(_) => break,
                Err(e) if t0.elapsed() > Duration::from_secs(30) => {
                    bail!(
                        "the overlay did not come up: {e} (logs in {})",
                        dir.display()
                    )
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        let server = testbed::start_file_server(seed, size).await?;
        let before: Vec<f64> = relays
            .iter()
            .map(|(_, c)| cpu_seconds(c.0.id()).unwrap_or(0.0))
            .collect();
        let d = testbed::download(socks, "127.0.0.1", server.port())
            .await
            .map_err(|e| anyhow!(e))?;
        let after: Vec<f64> = relays
            .iter()
            .map(|(_, c)| cpu_seconds(c.0.id()).unwrap_or(0.0))
            .collect();
        anyhow::Ok((d, before, after))
    });
    drop(proxy);
    let (d, before, after) = r?;
    if d.bytes != size || d.hash != testbed::expected_hash(seed, size) {
        bail!(
            "the benchmark download arrived damaged ({} of {size} bytes)",
            d.bytes
        );
    }
    let gb = d.bytes as f64 / 1e9;
    let cpu = relays
        .iter()
        .zip(before.iter().zip(&after))
        .map(|((n, _), (b, a))| (n.clone(), (a - b) / gb))
        .collect();
    Ok((d.bytes as f64 / 1e6 / d.secs, cpu))
}

pub fn bench_relay(size: &str, mode: &str, runs: u32) -> Result<()> {
    let size = parse_size(size)?;
    let modes: Vec<bool> = match mode {
        "both" => vec![true, false],
        "encrypted" => vec![true],
        "plaintext" => vec![false],
        m => bail!("--mode: `{m}`: use both, encrypted or plaintext"),
    };
    println!(
        "one circuit through three relays on loopback, {} MB download, no limits, onion layers on, {runs} run(s) per mode",
        size / 1_000_000
    );
    println!(
        "{:<44} {:>8} {:>12} {:>12} {:>12} {:>10}",
        "link", "MB/s", "relay1 s/GB", "relay2 s/GB", "relay3 s/GB", "sum s/GB"
    );
    let row = |label: &str, mbps: f64, cpu: &[f64]| {
        print!("{label:<44} {mbps:>8.1}");
        for c in cpu {
            print!(" {c:>12.2}");
        }
        println!(" {:>10.2}", cpu.iter().sum::<f64>());
    };
    for enc in modes {
        let label = if enc {
            "links AES-256-GCM (Noise), onion AES-128-CTR"
        } else {
            "links plaintext (test-only), onion AES-128-CTR"
        };
        let mut results = Vec::new();
        for i in 0..runs {
            let dir = tempdir_path(&format!("bench-{}-{i}", if enc { "enc" } else { "plain" }));
            let _ = std::fs::remove_dir_all(&dir);
            let (mbps, cpu) = run_bench(enc, size, &dir)?;
            let cpu: Vec<f64> = cpu.into_iter().map(|(_, c)| c).collect();
            if runs > 1 {
                row(&format!("  run {}", i + 1), mbps, &cpu);
            }
            results.push((mbps, cpu));
            let _ = std::fs::remove_dir_all(&dir);
        }
        // The run with the median throughput, with its CPU figures.
        results.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mbps, cpu) = &results[results.len() / 2];
        row(
            &if runs > 1 {
                format!("{label} (median)")
            } else {
                label.to_string()
            },
            *mbps,
            cpu,
        );
    }
    println!(
        "(CPU seconds per GB of payload for each relay process: user + system time from /proc; \
         the median row is the run with the median throughput)"
    );
    Ok(())
}

fn tempdir_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hopwise-{name}-{}", std::process::id()))
}
