//! One case of `hopwise lab utp`: the lab, the processes and threads in it,
//! and what was measured.

use super::{Options, Stack};
use anyhow::{bail, Context, Result};
use hopwise_experiment::Progress;
use hopwise_lab::meter::{self, ProtoBins};
use hopwise_lab::netns::Netns;
use hopwise_lab::topology::{self, AccessLab, AccessSpec, Buffer, Names, SideDelays};
use hopwise_lab::traffic::{goodput_bps, join_all, spawn_receiver, spawn_sender, Clock, BIN_S};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// When the flows start: the libtorrent seed or the hopwise receiver is
/// started at 0 and has this long to come up.
pub const START_S: f64 = 2.0;
/// Seconds after the start that the measurement skips (LEDBAT's first
/// base-delay samples and CUBIC's slow start).
pub const WARM_S: f64 = 5.0;
/// How long a µTP process may take to finish after the case's end.
const GRACE_S: f64 = 15.0;
const UTP_PORT: u16 = 6881;
const LEECH_PORT: u16 = 6882;
const TCP_PORT: u16 = 5001;
/// The uplink carries only ACKs: fast and deep enough never to matter.
const UP_RATE_BPS: u64 = 1_000_000_000;
const UP_BUFFER: Buffer = Buffer::Packets(1000);

/// Files shared by the cases: the libtorrent bulk file and its torrent, in
/// a scratch directory removed when dropped.
pub struct Work {
    dir: PathBuf,
    torrent: Option<(PathBuf, PathBuf)>,
}

impl Work {
    /// Makes the scratch directory and, for the libtorrent cases, a sparse
    /// file twice as large as a case can move at the link rate, and its
    /// v1 torrent (so the leecher never completes and the case runs to its
    /// end).
    pub fn new(opts: &Options) -> Result<Work> {
        let dir = std::env::temp_dir().join(format!("hopwise-lab-utp-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut w = Work { dir, torrent: None };
        if opts.libtorrent {
            let size = (opts.rate_bps / 8 * (opts.secs + 10) * 2).max(64 << 20);
            let file = w.dir.join("bulk.bin");
            let torrent = w.dir.join("bulk.torrent");
            let out = Command::new(&opts.python)
                .arg(&opts.ltpeer)
                .arg("make")
                .arg(&file)
                .arg("--out")
                .arg(&torrent)
                .args(["--piece-size", "1MiB", "--create-size", &size.to_string()])
                .output()
                .with_context(|| format!("cannot run {}", opts.python.display()))?;
            if !out.status.success() {
                bail!(
                    "{} make failed ({}): {}",
                    opts.ltpeer.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            w.torrent = Some((file, torrent));
        }
        Ok(w)
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A process in a namespace (`ip netns exec`, which executes the program
/// in place, so the child is the program), stdout and stderr in files;
/// killed when dropped.
struct Proc {
    child: Child,
    what: String,
    stdout: PathBuf,
    log: PathBuf,
}

impl Proc {
    fn spawn(ns: &Netns, what: &str, program: &Path, a: &[String], logs: &Path) -> Result<Proc> {
        let slug: String = what
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let stdout = logs.join(format!("{slug}.json"));
        let log = logs.join(format!("{slug}.log"));
        let out = std::fs::File::create(&stdout)
            .with_context(|| format!("cannot create {}", stdout.display()))?;
        let err = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns.name()])
            .arg(program)
            .args(a)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // The run blocks SIGINT and SIGTERM in its threads
        // (`netns::clean_up_on_interrupt`) and a child inherits the mask:
        // lift it for the spawn, so that SIGTERM stops the child.
        let stop = {
            use nix::sys::signal::{SigSet, Signal};
            let mut s = SigSet::empty();
            s.add(Signal::SIGINT);
            s.add(Signal::SIGTERM);
            s
        };
        let before = stop.thread_swap_mask(nix::sys::signal::SigmaskHow::SIG_UNBLOCK);
        let spawned = cmd.spawn();
        if let Ok(mask) = before {
            let _ = mask.thread_set_mask();
        }
        let child = spawned.with_context(|| {
            format!(
                "cannot start {what}: {} {} in {}",
                program.display(),
                a.join(" "),
                ns.name()
            )
        })?;
        Ok(Proc {
            child,
            what: what.into(),
            stdout,
            log,
        })
    }

    fn tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(6).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n  ")
    }

    /// Fails, with the end of its log, if it has exited unsuccessfully.
    fn check(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(Some(st)) if !st.success() => bail!(
                "{} exited ({st}); the end of {}:\n  {}",
                self.what,
                self.log.display(),
                self.tail()
            ),
            _ => Ok(()),
        }
    }

    /// Sends SIGTERM (the program prints its summary and exits).
    fn terminate(&self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
    }

    /// Waits until `deadline_s` on `clock` for the process to end, then
    /// returns the last JSON line it printed.
    fn finish(&mut self, clock: Clock, deadline_s: f64) -> Result<serde_json::Value> {
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) if st.success() => break,
                Ok(Some(st)) => bail!(
                    "{} exited ({st}); the end of {}:\n  {}",
                    self.what,
                    self.log.display(),
                    self.tail()
                ),
                Ok(None) if clock.now_s() < deadline_s => clock.sleep_until(clock.now_s() + 0.1),
                Ok(None) => bail!(
                    "{} still running {:.0} s after the case's end; the end of {}:\n  {}",
                    self.what,
                    GRACE_S,
                    self.log.display(),
                    self.tail()
                ),
                Err(e) => return Err(e).context(format!("waiting for {}", self.what)),
            }
        }
        let text = std::fs::read_to_string(&self.stdout)
            .with_context(|| format!("cannot read {}", self.stdout.display()))?;
        let line = text
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .with_context(|| {
                format!(
                    "{} printed no JSON summary (in {})",
                    self.what,
                    self.stdout.display()
                )
            })?;
        serde_json::from_str(line)
            .with_context(|| format!("{}: its summary is not JSON: {line}", self.what))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One case's measurements.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub stack: Stack,
    /// Beside a kernel TCP flow.
    pub cubic: bool,
    /// Bytes HTB sent over the measured window ÷ what its rate allows.
    #[serde(rename = "utilization")]
    pub utilisation: f64,
    /// The backlog as queueing delay at the link rate, ms.
    pub queue_mean_delay_ms: f64,
    pub queue_p50_delay_ms: f64,
    pub queue_p95_delay_ms: f64,
    pub queue_samples: usize,
    /// Packets the buffer dropped during the case.
    pub drops: u64,
    /// UDP (the µTP flow) and TCP (the kernel flow, and nothing else in a
    /// case without one) bytes on the link over the window ÷ what the link
    /// can carry.
    pub utp_link_share: f64,
    pub tcp_link_share: f64,
    /// What the receivers counted: the µTP receiver's own summary over the
    /// whole transfer; the TCP receiver's 100 ms bins over the window.
    pub utp_goodput_bps: Option<f64>,
    pub tcp_goodput_bps: Option<f64>,
    /// libtorrent's peer list: µTP and TCP connections it saw.
    pub utp_peers: Option<u64>,
    pub tcp_peers: Option<u64>,
    /// The µTP receiver's and sender's JSON summaries, as printed.
    pub utp_receiver: serde_json::Value,
    pub utp_sender: serde_json::Value,
}

/// Per-case series: queue samples (t, backlog bytes) and the link's bytes
/// by protocol in 100 ms bins; the TCP receiver's goodput bins.
#[derive(Clone, Debug, Default)]
pub struct CaseSeries {
    pub queue: Vec<(f64, u64)>,
    pub link: ProtoBins,
    pub tcp_goodput: Option<Vec<u64>>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64
}

/// Bytes of `bins` ([`BIN_S`] wide) in `[t0, t1)`.
fn bytes_in(bins: &[u64], t0: f64, t1: f64) -> u64 {
    let (a, b) = ((t0 / BIN_S).round() as usize, (t1 / BIN_S).round() as usize);
    bins.iter().take(b).skip(a).sum()
}

fn arg<S: Into<String>>(v: impl IntoIterator<Item = S>) -> Vec<String> {
    v.into_iter().map(Into::into).collect()
}

pub fn run_case(
    opts: &Options,
    work: &Work,
    out: &Path,
    (name, stack, cubic): (&str, Stack, bool),
    progress: &dyn Progress,
) -> Result<(CaseResult, CaseSeries)> {
    let spec = AccessSpec {
        down_rate_bps: opts.rate_bps,
        up_rate_bps: UP_RATE_BPS,
        down_buffer: opts.buffer,
        up_buffer: UP_BUFFER,
        cc: opts.cc.clone(),
        delayed_acks: true,
        delay: Some(SideDelays {
            inet_ms: opts.one_way_ms / 2.0,
            home_ms: opts.one_way_ms / 2.0,
        }),
    };
    let mut lab = AccessLab::build(&Names::new_instance(), &spec)?;
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let slug: String = name
        .replace('µ', "u")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == ' ')
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("-")
        .to_lowercase();
    let stop = START_S + opts.secs as f64;
    let end = stop + 0.5;
    let (inet, home) = (topology::INET_ADDR, topology::HOME_ADDR);
    let clock = Clock::start();
    let secs = opts.secs.to_string();

    // The side that waits for the other: hopwise's receiver, libtorrent's seed.
    let mut server = match stack {
        Stack::Hopwise => Proc::spawn(
            &lab.home,
            &format!("{slug} hopwise utp recv"),
            &opts.exe,
            &arg([
                "utp".to_string(),
                "recv".into(),
                "--listen".into(),
                SocketAddr::from((home, UTP_PORT)).to_string(),
                "--json".into(),
            ]),
            &logs,
        )?,
        Stack::Libtorrent => {
            let (file, torrent) = work
                .torrent
                .as_ref()
                .context("the libtorrent torrent was not made")?;
            let mut a = vec![opts.ltpeer.display().to_string(), "seed".into()];
            a.push(torrent.display().to_string());
            a.extend(arg([
                "--file".to_string(),
                file.display().to_string(),
                "--listen".into(),
                SocketAddr::from((inet, UTP_PORT)).to_string(),
            ]));
            Proc::spawn(
                &lab.inet,
                &format!("{slug} libtorrent seed"),
                &opts.python,
                &a,
                &logs,
            )?
        }
    };
    let meter = meter::spawn(lab.rtr.open()?, topology::DOWN_DEV, clock, end)?;
    let mut tcp = None;
    if cubic {
        let rx = spawn_receiver(
            lab.home.open()?,
            home,
            TCP_PORT,
            clock,
            end,
            opts.cc.clone(),
        )?;
        let tx = spawn_sender(
            lab.inet.open()?,
            SocketAddr::from((home, TCP_PORT)),
            opts.cc.clone(),
            clock,
            START_S,
            stop,
            opts.cc.clone(),
        )?;
        tcp = Some((rx, tx));
    }
    progress.start(&format!("{name} (real time)"), end.ceil() as u64);
    let mut client: Option<Proc> = None;
    // (time, backlog bytes, bytes sent so far, drops so far).
    let mut samples: Vec<(f64, u64, u64, u64)> = Vec::new();
    let mut t = 0.0;
    let mut ticked = 0u64;
    let mut failure = None;
    while t < end {
        clock.sleep_until(t);
        let now = clock.now_s();
        if client.is_none() && now >= START_S {
            let c = match stack {
                Stack::Hopwise => Proc::spawn(
                    &lab.inet,
                    &format!("{slug} hopwise utp send"),
                    &opts.exe,
                    &arg([
                        "utp".to_string(),
                        "send".into(),
                        "--to".into(),
                        SocketAddr::from((home, UTP_PORT)).to_string(),
                        "--secs".into(),
                        secs.clone(),
                        "--json".into(),
                    ]),
                    &logs,
                ),
                Stack::Libtorrent => {
                    let torrent = work.torrent.as_ref().map(|t| t.1.clone());
                    let save = work.dir.join(format!("leech-{slug}"));
                    let mut a = vec![opts.ltpeer.display().to_string(), "leech".into()];
                    a.push(torrent.unwrap_or_default().display().to_string());
                    a.extend(arg([
                        "--peer".to_string(),
                        SocketAddr::from((inet, UTP_PORT)).to_string(),
                        "--listen".into(),
                        SocketAddr::from((home, LEECH_PORT)).to_string(),
                        "--save".into(),
                        save.display().to_string(),
                        "--secs".into(),
                        secs.clone(),
                    ]));
                    Proc::spawn(
                        &lab.home,
                        &format!("{slug} libtorrent leech"),
                        &opts.python,
                        &a,
                        &logs,
                    )
                }
            };
            match c {
                Ok(c) => client = Some(c),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        match lab.qdiscs().and_then(|q| {
            hopwise_lab::tc::find(&q, topology::DOWN_DEV, topology::LEAF)
                .cloned()
                .context("the bottleneck's qdisc is gone")
        }) {
            Ok(b) => samples.push((now, b.backlog, b.bytes, b.drops)),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        let checked = server
            .check()
            .and_then(|_| client.as_mut().map_or(Ok(()), Proc::check))
            .and_then(|_| lab.check_line());
        if let Err(e) = checked {
            failure = Some(e);
            break;
        }
        while (ticked as f64) < now.floor() {
            ticked += 1;
            progress.inc();
        }
        t += BIN_S;
    }
    progress.finish();
    if let Some(e) = failure {
        return Err(e.context(format!("case {name:?} (logs in {})", logs.display())));
    }
    let mut client = client.context("the µTP client never started")?;
    let deadline = stop + GRACE_S;
    let (receiver, sender) = match stack {
        Stack::Hopwise => {
            let sender = client.finish(clock, deadline)?;
            let receiver = server.finish(clock, deadline)?;
            (receiver, sender)
        }
        Stack::Libtorrent => {
            let receiver = client.finish(clock, deadline)?;
            server.terminate();
            let sender = server.finish(clock, clock.now_s() + GRACE_S)?;
            (receiver, sender)
        }
    };
    let mut errors = Vec::new();
    let link = join_all(vec![meter], "meter", &mut errors)
        .pop()
        .unwrap_or_default();
    let tcp_bins = match tcp {
        Some((rx, tx)) => {
            join_all(vec![tx], "sender", &mut errors);
            join_all(vec![rx], "receiver", &mut errors).pop()
        }
        None => None,
    };
    if !errors.is_empty() {
        bail!("case {name:?} failed:\n  {}", errors.join("\n  "));
    }
    drop(lab);

    let (t0, t1) = (START_S + WARM_S, stop);
    let window: Vec<&(f64, u64, u64, u64)> =
        samples.iter().filter(|s| s.0 >= t0 && s.0 < t1).collect();
    let rate = opts.rate_bps as f64;
    let utilisation = match (window.first(), window.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => {
            b.2.saturating_sub(a.2) as f64 * 8.0 / (rate * (b.0 - a.0))
        }
        _ => 0.0,
    };
    let drops = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => b.3.saturating_sub(a.3),
        _ => 0,
    };
    let mut q: Vec<u64> = window.iter().map(|s| s.1).collect();
    let n = q.len();
    let mean = q.iter().sum::<u64>() as f64 / n.max(1) as f64;
    q.sort_unstable();
    let ms = |bytes: f64| bytes * 8.0 / rate * 1e3;
    let share = |bins: &[u64]| bytes_in(bins, t0, t1) as f64 * 8.0 / (rate * (t1 - t0));
    let peers = |v: &serde_json::Value, utp: bool| {
        v.get("peers").and_then(|p| p.as_array()).map(|p| {
            p.iter()
                .filter(|x| x.get("utp").and_then(|u| u.as_bool()) == Some(utp))
                .count() as u64
        })
    };
    let result = CaseResult {
        case: name.into(),
        stack,
        cubic,
        utilisation,
        queue_mean_delay_ms: ms(mean),
        queue_p50_delay_ms: ms(percentile(&q, 0.5)),
        queue_p95_delay_ms: ms(percentile(&q, 0.95)),
        queue_samples: n,
        drops,
        utp_link_share: share(&link.udp),
        tcp_link_share: share(&link.tcp),
        utp_goodput_bps: receiver.get("goodput_bps").and_then(|g| g.as_f64()),
        tcp_goodput_bps: tcp_bins.as_ref().map(|b| goodput_bps(b, t0, t1)),
        utp_peers: (stack == Stack::Libtorrent)
            .then(|| peers(&receiver, true))
            .flatten(),
        tcp_peers: (stack == Stack::Libtorrent)
            .then(|| {
                // Both ends' lists: each must be free of TCP.
                Some(peers(&receiver, false)? + peers(&sender, false)?)
            })
            .flatten(),
        utp_receiver: receiver,
        utp_sender: sender,
    };
    let series = CaseSeries {
        queue: samples.iter().map(|s| (s.0, s.1)).collect(),
        link,
        tcp_goodput: tcp_bins,
    };
    Ok((result, series))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bytes_take_the_bins_inside_it() {
        let bins = vec![1, 2, 3, 4, 5, 6];
        assert_eq!(bytes_in(&bins, 0.1, 0.4), 2 + 3 + 4);
        assert_eq!(bytes_in(&bins, 0.5, 9.0), 6);
        assert_eq!(percentile(&[1, 2, 3, 4, 5], 0.5), 3.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
