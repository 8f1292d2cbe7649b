//! hopwise's BitTorrent peer against libtorrent over µTP, across the lab's
//! delay line: two hosts in network namespaces joined by one link with a
//! propagation delay and random loss each way (no netem needed), so both
//! peers' packets see the same path.
//!
//! Per setting (a clean link, then `rtt`/`loss`), three transfers of one
//! torrent, one after the other on the same link:
//! 1. a libtorrent seed → `hopwise bt download` (hopwise's receiving side);
//! 2. a libtorrent seed → a libtorrent leecher (the reference);
//! 3. `hopwise bt seed` → a libtorrent leecher (hopwise's accepting side and
//!    its LEDBAT sender against libtorrent's receiver).
//!
//! Every downloaded file is compared byte for byte (SHA-256) with the
//! seeded one, and libtorrent's own peer list must show the connection as
//! µTP with no TCP peer. Goodput is each downloader's own figure: payload
//! bytes over the time from the BitTorrent handshake to completion (hopwise
//! counts from its handshake; `ltpeer.py leech` from the first poll, every
//! 20 ms, that shows the peer past its handshake).

use anyhow::{bail, Context, Result};
use hopwise_experiment::{Claim, Ctx, Outputs, Reproduction};
use hopwise_lab::traffic::Clock;
use hopwise_lab::wan::{link_addr, Wan, WanLink, WanNames, WanSpec};
use hopwise_plot::BarChart;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SEED_PORT: u16 = 6881;
/// Host indices in the wan.
const SEED: usize = 0;
const LEECH: usize = 1;

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct Options {
    /// The `hopwise` executable.
    pub exe: PathBuf,
    /// The Python of the libtorrent venv (interop/libtorrent/setup.sh).
    pub python: PathBuf,
    /// interop/libtorrent/ltpeer.py.
    pub ltpeer: PathBuf,
    /// Torrent size in bytes.
    pub size: u64,
    pub piece_size: u64,
    /// The impaired setting: round-trip propagation delay (half each way)
    /// and loss per packet each way.
    pub rtt_ms: f64,
    pub loss: f64,
    /// Longest a transfer may take.
    pub timeout_s: u64,
}

/// One transfer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Transfer {
    pub setting: String,
    pub case: String,
    pub bytes: u64,
    pub secs: f64,
    pub goodput_bps: f64,
    pub byte_exact: bool,
    /// libtorrent's view of its one peer: µTP, and no TCP peers.
    pub lt_utp: bool,
    pub lt_tcp_peers: u64,
    /// hopwise's counters (downloads only): pieces failing SHA-1.
    pub hash_failures: Option<u64>,
    /// libtorrent leeches only: how often the connection dropped before the
    /// file was complete and ltpeer.py dialed the seed again (the time it
    /// took is in `secs`).
    pub redials: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Results {
    pub transfers: Vec<Transfer>,
}

pub struct LabUtpInterop {
    /// The `hopwise` executable (the default plan's).
    pub exe: PathBuf,
    /// The repository, where interop/libtorrent is.
    pub repo: PathBuf,
}

/// The settings: name, rtt, loss.
fn settings(o: &Options) -> [(String, f64, f64); 2] {
    [
        ("clean".to_string(), 0.0, 0.0),
        (
            format!(
                "{} ms each way, {} % loss each way",
                o.rtt_ms / 2.0,
                o.loss * 100.0
            ),
            o.rtt_ms,
            o.loss,
        ),
    ]
}

pub const CASES: [&str; 3] = [
    "libtorrent → hopwise",
    "libtorrent → libtorrent",
    "hopwise → libtorrent",
];

fn sha256_file(p: &Path) -> Result<[u8; 32]> {
    let mut f = std::fs::File::open(p).with_context(|| format!("cannot open {}", p.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", p.display()))?;
    Ok(h.finalize().into())
}

/// `cmd args…` in namespace `ns`, in the background, output to `log`.
fn spawn_in(ns: &str, cmd: &Path, args: &[String], log: &Path) -> Result<Child> {
    let f =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(cmd)
        .args(args)
        .stdout(f.try_clone()?)
        .stderr(f)
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {} in namespace {ns}", cmd.display()))
}

/// Runs `cmd args…` in namespace `ns` to completion; its last stdout line
/// parsed as JSON. Fails naming the command and its stderr.
fn run_json(
    ns: &str,
    cmd: &Path,
    args: &[String],
    timeout: Duration,
    clock: Clock,
) -> Result<serde_json::Value> {
    let line = format!("{} {}", cmd.display(), args.join(" "));
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(cmd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start `{line}`"))?;
    let end = clock.now_s() + timeout.as_secs_f64();
    loop {
        if child.try_wait()?.is_some() {
            break;
        }
        if clock.now_s() > end {
            let _ = child.kill();
            bail!("`{line}` did not finish within {} s", timeout.as_secs());
        }
        clock.sleep_until(clock.now_s() + 0.05);
    }
    let out = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "`{line}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let last = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    let last = last.with_context(|| format!("`{line}` printed no JSON summary"))?;
    serde_json::from_str(last).with_context(|| format!("`{line}`: cannot parse {last:?}"))
}

/// Waits (at most 30 s) until `log` has a line containing `needle`; fails
/// with the log's end if the process exits first.
fn wait_for_line(child: &mut Child, log: &Path, needle: &str, clock: Clock) -> Result<()> {
    let end = clock.now_s() + 30.0;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return Ok(());
        }
        if let Some(st) = child.try_wait()? {
            bail!("the seed exited ({st}) before listening: {}", text.trim());
        }
        if clock.now_s() > end {
            let _ = child.kill();
            bail!("the seed did not listen within 30 s: {}", text.trim());
        }
        clock.sleep_until(clock.now_s() + 0.05);
    }
}

fn num(v: &serde_json::Value, k: &str) -> Result<f64> {
    v.get(k)
        .and_then(serde_json::Value::as_f64)
        .with_context(|| format!("summary has no number `{k}`: {v}"))
}

/// libtorrent's view in a summary: whether every peer was µTP, and the TCP peers.
fn lt_view(v: &serde_json::Value) -> (bool, u64) {
    let peers = v.get("peers").and_then(|p| p.as_array());
    let utp = peers.is_some_and(|p| {
        !p.is_empty()
            && p.iter()
                .all(|x| x.get("utp").and_then(|u| u.as_bool()) == Some(true))
    });
    let tcp = v
        .get("tcp_peers")
        .and_then(|t| t.as_u64())
        .unwrap_or(u64::MAX);
    (utp, tcp)
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

/// The file every transfer moves: its data, its torrent and its SHA-256.
struct Payload<'a> {
    data: &'a Path,
    torrent: &'a Path,
    want: [u8; 32],
}

/// The transfers of one setting (name, round trip in ms, loss each way), on
/// a fresh wan.
fn run_setting(
    o: &Options,
    dir: &Path,
    (setting, rtt_ms, loss): (&str, f64, f64),
    p: &Payload<'_>,
    clock: Clock,
) -> Result<Vec<Transfer>> {
    let (data, torrent, want) = (p.data, p.torrent, &p.want);
    let spec = WanSpec {
        hosts: vec!["seed".into(), "leech".into()],
        links: vec![WanLink {
            a: SEED,
            b: LEECH,
            rtt: Duration::from_secs_f64(rtt_ms / 1e3),
            loss,
        }],
        initcwnd: None,
        sysctls: Vec::new(),
        routes: Vec::new(),
    };
    let names = WanNames::new_instance(&spec);
    let wan = Wan::build(&names, &spec, 1, clock)?;
    let seed_ip = link_addr(0, false);
    let leech_ip = link_addr(0, true);
    let seed_at = format!("{seed_ip}:{SEED_PORT}");
    let timeout = Duration::from_secs(o.timeout_s);
    let (seed_ns, leech_ns) = (names.hosts[SEED].as_str(), names.hosts[LEECH].as_str());
    let mut out = Vec::new();
    let slug = setting.split(' ').next().unwrap_or("run").replace('/', "-");
    for (k, case) in CASES.iter().enumerate() {
        let work = dir.join(format!("{slug}-{k}"));
        std::fs::create_dir_all(&work)?;
        let seed_log = work.join("seed.log");
        let lt_seed = k < 2;
        let mut seeder = if lt_seed {
            let a = vec![
                s(o.ltpeer.display()),
                "seed".into(),
                s(torrent.display()),
                "--file".into(),
                s(data.display()),
                "--listen".into(),
                seed_at.clone(),
                "--once".into(),
            ];
            spawn_in(seed_ns, &o.python, &a, &seed_log)?
        } else {
            let a = vec![
                "bt".into(),
                "seed".into(),
                s(data.display()),
                "--torrent".into(),
                s(torrent.display()),
                "--listen".into(),
                seed_at.clone(),
                "--once".into(),
                "--json".into(),
            ];
            spawn_in(seed_ns, &o.exe, &a, &seed_log)?
        };
        // Wait until the seed listens (both print a line saying so).
        wait_for_line(
            &mut seeder,
            &seed_log,
            if lt_seed { "seeding" } else { "serving" },
            clock,
        )?;
        let got = work.join("download");
        let res = if k == 0 {
            let a = vec![
                "bt".into(),
                "download".into(),
                s(torrent.display()),
                "--peer".into(),
                seed_at.clone(),
                "--out".into(),
                s(got.display()),
                "--json".into(),
            ];
            run_json(leech_ns, &o.exe, &a, timeout, clock).map(|v| (v, got.clone()))
        } else {
            std::fs::create_dir_all(&got)?;
            let a = vec![
                s(o.ltpeer.display()),
                "leech".into(),
                s(torrent.display()),
                "--peer".into(),
                seed_at.clone(),
                "--save".into(),
                s(got.display()),
                "--listen".into(),
                format!("{leech_ip}:0"),
                "--timeout".into(),
                s(o.timeout_s),
            ];
            let name = data.file_name().context("data file has no name")?;
            run_json(leech_ns, &o.python, &a, timeout, clock).map(|v| (v, got.join(name)))
        };
        // The seed exits after its peer leaves (--once); give it a moment, then stop it.
        let deadline = clock.now_s() + 5.0;
        while seeder.try_wait()?.is_none() && clock.now_s() < deadline {
            clock.sleep_until(clock.now_s() + 0.05);
        }
        let _ = seeder.kill();
        let _ = seeder.wait();
        let (v, file) = res.with_context(|| format!("{setting}, {case}"))?;
        let seed_text = std::fs::read_to_string(&seed_log).unwrap_or_default();
        // libtorrent's view: from the leecher's summary, or the seed's.
        let lt_json = if k == 0 {
            seed_text
                .lines()
                .rev()
                .find(|l| l.trim_start().starts_with('{'))
                .and_then(|l| serde_json::from_str(l).ok())
                .unwrap_or(serde_json::Value::Null)
        } else {
            v.clone()
        };
        let (lt_utp, lt_tcp_peers) = lt_view(&lt_json);
        let byte_exact = file.exists() && &sha256_file(&file)? == want;
        out.push(Transfer {
            setting: setting.to_string(),
            case: case.to_string(),
            bytes: num(&v, "bytes")? as u64,
            secs: num(&v, "secs")?,
            goodput_bps: num(&v, "goodput_bps")?,
            byte_exact,
            lt_utp,
            lt_tcp_peers,
            hash_failures: v.get("hash_failures").and_then(|h| h.as_u64()),
            redials: v.get("redials").and_then(|h| h.as_u64()),
        });
        let _ = std::fs::remove_dir_all(&got);
        let _ = std::fs::remove_file(&got);
    }
    wan.finish()?;
    Ok(out)
}

impl Options {
    pub fn new(exe: PathBuf, repo: &Path, quick: bool) -> Options {
        Options {
            exe,
            python: super::default_python(repo),
            ltpeer: repo.join("interop/libtorrent/ltpeer.py"),
            size: if quick { 16 << 20 } else { 64 << 20 },
            piece_size: 256 << 10,
            rtt_ms: 40.0,
            loss: 0.01,
            timeout_s: 600,
        }
    }

    pub fn check(&self) -> Result<()> {
        anyhow::ensure!(
            self.exe.is_file(),
            "{}: not the hopwise executable (it runs `hopwise bt`)",
            self.exe.display()
        );
        anyhow::ensure!(
            (1 << 20..=4 << 30).contains(&self.size),
            "--size {}: 1 MiB to 4 GiB",
            self.size
        );
        anyhow::ensure!(
            (0.0..=2000.0).contains(&self.rtt_ms),
            "--rtt {} ms: 0 to 2000 ms",
            self.rtt_ms
        );
        anyhow::ensure!(
            (0.0..0.5).contains(&self.loss),
            "--loss {}: at least 0 and below 50 %",
            self.loss
        );
        super::check_python(&self.python, &self.ltpeer)
    }
}

impl Reproduction for LabUtpInterop {
    type Plan = Options;
    type Results = Results;
    const NAME: &'static str = "lab-bt-interop";
    const ABOUT: &'static str = "hopwise's BitTorrent peer and libtorrent over µTP, both ways, on a clean link and across a delayed, lossy one, beside libtorrent to libtorrent";
    const PAPER: &'static str =
        "BEP 29 (µTP) and BEP 3 (the peer wire protocol), against libtorrent 2.1";
    const WALL: &'static str = "about 2 min for 64 MiB; 1 min quick (16 MiB)";

    fn plan(&self, quick: bool, _seeds: Option<u32>) -> Options {
        Options::new(self.exe.clone(), &self.repo, quick)
    }

    fn run(&self, o: &Options, ctx: &Ctx<'_, Results>) -> Result<Results> {
        hopwise_lab::topology::require()?;
        o.check()?;
        let dir = ctx.out.join("work");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Random bytes (a file of zeros would compress nothing, but random
        // bytes also make a misplaced block fail its piece's hash).
        let data = dir.join("data.bin");
        {
            let mut rng = hopwise_proto::rng::Rng::for_component(1, "bt-interop data");
            let mut buf = vec![0u8; 1 << 20];
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(&data)
                    .with_context(|| format!("cannot create {}", data.display()))?,
            );
            let mut left = o.size;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                for c in buf[..n].chunks_mut(8) {
                    let w = rng.next_u64().to_le_bytes();
                    c.copy_from_slice(&w[..c.len()]);
                }
                std::io::Write::write_all(&mut f, &buf[..n])?;
                left -= n as u64;
            }
            std::io::Write::flush(&mut f)?;
        }
        let torrent = dir.join("data.torrent");
        hopwise_lab::cmd::run(
            &o.exe.display().to_string(),
            &[
                "bt".into(),
                "make".into(),
                data.display().to_string(),
                "--out".into(),
                torrent.display().to_string(),
                "--piece-size".into(),
                o.piece_size.to_string(),
            ],
        )?;
        let want = sha256_file(&data)?;
        let clock = Clock::start();
        let mut r = Results::default();
        let all = settings(o);
        ctx.progress
            .start("transfers", (all.len() * CASES.len()) as u64);
        for (name, rtt, loss) in all {
            let p = Payload {
                data: &data,
                torrent: &torrent,
                want,
            };
            let t = run_setting(o, &dir, (&name, rtt, loss), &p, clock)?;
            t.iter().for_each(|_| ctx.progress.inc());
            r.transfers.extend(t);
            ctx.checkpoint(&r)?;
        }
        let _ = std::fs::remove_file(&data);
        Ok(r)
    }

    fn claims(&self, o: &Options, r: &Results) -> Vec<Claim> {
        claims(o, r)
    }

    fn outputs(&self, _o: &Options, r: &Results, out: &mut Outputs) -> Result<()> {
        out.csv("transfers.csv", &r.transfers)?;
        let mut bars = BarChart::new("Goodput over µTP, per transfer")
            .y_label("Mbit/s")
            .x_label("setting");
        for case in CASES {
            bars = bars.group(
                case,
                r.transfers
                    .iter()
                    .filter(|t| t.case == case)
                    .map(|t| (t.setting.clone(), t.goodput_bps / 1e6))
                    .collect(),
            );
        }
        out.svg("goodput.svg", &bars)?;
        out.data(&["goodput.svg"], &["transfers.csv"]);
        Ok(())
    }

    fn title(&self) -> String {
        "hopwise lab bt-interop".into()
    }

    fn doc(&self) -> String {
        "docs/utp.md".into()
    }
}

fn claims(o: &Options, r: &Results) -> Vec<Claim> {
    let mut claims = Vec::new();
    let mib = o.size as f64 / (1 << 20) as f64;
    for (setting, _, _) in settings(o) {
        let of = |case: &str| {
            r.transfers
                .iter()
                .find(|t| t.setting == setting && t.case == case)
        };
        let (Some(hw), Some(lt), Some(hs)) = (of(CASES[0]), of(CASES[1]), of(CASES[2])) else {
            continue;
        };
        claims.push(
            Claim::new(
                format!("download ({setting})"),
                format!("hopwise downloads a {mib:.0} MiB torrent from a libtorrent seed over µTP only, byte-exact, every piece SHA-1-checked"),
            )
            .measured(format!(
                "{} B; SHA-256 {}; {} hash failures; libtorrent's peer list: {}, {} TCP peers",
                hw.bytes,
                if hw.byte_exact { "equal" } else { "DIFFERENT" },
                hw.hash_failures.map_or("?".into(), |h| h.to_string()),
                if hw.lt_utp { "µTP" } else { "not µTP" },
                hw.lt_tcp_peers
            ))
            .fact("byte-exact and µTP only", hw.byte_exact && hw.lt_utp && hw.lt_tcp_peers == 0),
        );
        claims.push(
            Claim::new(
                format!("seed ({setting})"),
                format!("a libtorrent leecher downloads a {mib:.0} MiB torrent from hopwise over µTP, byte-exact"),
            )
            .measured(format!(
                "{} B; SHA-256 {}; libtorrent's peer list: {}, {} TCP peers",
                hs.bytes,
                if hs.byte_exact { "equal" } else { "DIFFERENT" },
                if hs.lt_utp { "µTP" } else { "not µTP" },
                hs.lt_tcp_peers
            ))
            .fact("byte-exact and µTP only", hs.byte_exact && hs.lt_utp && hs.lt_tcp_peers == 0),
        );
        claims.push(Claim::info(
            format!("goodput ({setting})"),
            "hopwise's goodput beside libtorrent-to-libtorrent on the same link, in the same run",
            format!(
                "libtorrent → hopwise {:.1} Mbit/s, libtorrent → libtorrent {:.1} Mbit/s ({:.2}×); hopwise → libtorrent {:.1} Mbit/s ({:.2}×)",
                hw.goodput_bps / 1e6,
                lt.goodput_bps / 1e6,
                hw.goodput_bps / lt.goodput_bps.max(1.0),
                hs.goodput_bps / 1e6,
                hs.goodput_bps / lt.goodput_bps.max(1.0),
            ),
        ));
    }
    claims
}
