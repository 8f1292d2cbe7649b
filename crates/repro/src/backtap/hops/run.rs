//! The processes and timed downloads of `hopwise lab hops`: one wan per
//! loss, the relays of both transports, the servers, and the downloads in
//! [`schedule`] order.

use super::{schedule, Plan, Transfer, Transport, HOP_RTT_MS, LOSSY_HOPS, WARMUP_BYTES};
use crate::backtap::lab::{daemon_args, ProxyTemplate};
use crate::otcp::lab::otcp_args;
use anyhow::{Context, Result};
use hopwise_experiment::Progress;
use hopwise_lab::delay::LinkStats;
use hopwise_lab::download::{fetch, spawn_sized_server, Fetched, Fill};
use hopwise_lab::traffic::{enter, Clock, StopOnDrop};
use hopwise_lab::wan::{link_addr, routes_to_neighbours, Wan, WanLink, WanNames, WanSpec};
use hopwise_net::testbed::{expected_hash, fill, write_lab, LabOptions};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The hosts, in chain order.
pub(super) const HOSTS: [&str; 5] = ["client", "relay1", "relay2", "relay3", "server"];
/// BackTap relays' UDP port, oTCP relays' TCP port.
const BACKTAP_PORT: u16 = 9001;
const OTCP_PORT: u16 = 7000;
/// Size `i` (0: the warm-up) is served on SERVER_PORT + i, and forwarded
/// from 127.0.0.1:(FORWARD_PORT + i) in the client.
const SERVER_PORT: u16 = 5000;
const FORWARD_PORT: u16 = 7100;
/// Download `k`'s proxy listens on 127.0.0.1:(SOCKS_PORT + k).
const SOCKS_PORT: u16 = 20000;
/// A pause between downloads, so that the last one's tail has left the
/// line.
const GAP_S: f64 = 0.5;
/// The TCP sysctls read back into summary.json.
const SYSCTLS: [&str; 9] = [
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_ecn",
];

/// The wan of one loss: the chain of [`HOSTS`], three lossy hops of
/// [`HOP_RTT_MS`] and a clean last one, routes through the neighbours (so
/// that each BackTap relay, bound to the address its predecessor reaches,
/// can answer from it), and the kernel's settings.
pub(super) fn spec(loss: f64) -> WanSpec {
    let links: Vec<WanLink> = (0..HOSTS.len() - 1)
        .map(|i| {
            let lossy = i < LOSSY_HOPS;
            WanLink {
                a: i,
                b: i + 1,
                rtt: if lossy {
                    Duration::from_secs_f64(HOP_RTT_MS / 1e3)
                } else {
                    Duration::ZERO
                },
                loss: if lossy { loss } else { 0.0 },
            }
        })
        .collect();
    WanSpec {
        hosts: HOSTS.iter().map(|h| h.to_string()).collect(),
        routes: routes_to_neighbours(HOSTS.len(), &links),
        links,
        // Linux's default initial window.
        initcwnd: None,
        // The congestion control goes on every socket instead (`otcp
        // --cc`, the servers): a namespace may only default to one of
        // net.ipv4.tcp_allowed_congestion_control, and on some machines
        // that leaves out CUBIC.
        sysctls: vec![
            "net.ipv4.tcp_sack=1".into(),
            // Every connection starts afresh.
            "net.ipv4.tcp_no_metrics_save=1".into(),
        ],
    }
}

/// Where the server of size `i` listens (the server's end of the last link).
fn server_addr(i: usize) -> SocketAddr {
    SocketAddr::from((link_addr(HOSTS.len() - 2, true), SERVER_PORT + i as u16))
}

/// Relay `r`'s (0-based) address: its end of the link from its predecessor.
fn relay_ip(r: usize) -> Ipv4Addr {
    link_addr(r, true)
}

/// The SHA-256 of each size's body (index 0: the warm-up), computed once.
pub(super) fn hashes(plan: &Plan) -> Vec<[u8; 32]> {
    std::iter::once(WARMUP_BYTES)
        .chain(plan.sizes.iter().copied())
        .map(|s| expected_hash(plan.seed, s))
        .collect()
}

/// What one wan measured.
pub(super) struct LossRun {
    pub transfers: Vec<Transfer>,
    pub links: Vec<LinkStats>,
    pub cpu: Vec<(String, f64)>,
    pub sysctls: BTreeMap<String, String>,
}

/// Everything a download needs from the running wan.
struct Lab<'a> {
    plan: &'a Plan,
    wan: Wan,
    clock: Clock,
    client: usize,
    proxy: ProxyTemplate,
    dir: &'a Path,
    hashes: &'a [[u8; 32]],
    /// Downloads so far (each proxy's SOCKS5 port and file).
    count: usize,
}

/// One wan: builds it, starts both transports' relays, the forwarders and
/// the servers, makes a warm-up download over each transport, then the
/// plan's downloads. Returns them with what the delay line did.
pub(super) fn run_loss(
    plan: &Plan,
    out: &Path,
    loss: f64,
    clock: Clock,
    progress: &dyn Progress,
    hashes: &[[u8; 32]],
) -> Result<LossRun> {
    let wspec = spec(loss);
    let names = WanNames::new_instance(&wspec);
    // Each loss draws its own frames.
    let seed = plan.seed ^ hopwise_proto::rng::fnv1a(format!("hops/{loss}").as_bytes());
    let mut wan = Wan::build(&names, &wspec, seed, clock)?;
    let mut sysctls = BTreeMap::new();
    for k in SYSCTLS {
        let v = hopwise_lab::cmd::run(
            "ip",
            &hopwise_lab::cmd::args(&["netns", "exec", &names.hosts[0], "sysctl", "-n", k]),
        )
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|e| format!("(unread: {e:#})"));
        sysctls.insert(k.to_string(), v);
    }
    let dir = out.join(format!(
        "hops-p{}",
        super::pct(loss).replace([' ', '%'], "")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    // BackTap: three relays (relay3 the exit) and a proxy file to copy.
    let mut o = LabOptions::new(&dir);
    o.socks = SocketAddr::from((Ipv4Addr::LOCALHOST, SOCKS_PORT));
    o.relay_addresses = Some([0, 1, 2].map(|r| SocketAddr::from((relay_ip(r), BACKTAP_PORT))));
    o.exit_policy = vec!["accept 10.203.0.0/16:*".into()];
    o.relay_extra = plan.config_lines();
    o.proxy_extra = plan.config_lines();
    let files = write_lab(&o).map_err(|e| anyhow::anyhow!("{e}"))?;
    let proxy = ProxyTemplate::read(&files.proxy, o.socks)?;
    let _ = std::fs::remove_file(&files.proxy);
    let (mut relays, mut otcps) = (Vec::new(), Vec::new());
    for (r, f) in files.relays.iter().enumerate() {
        let host = r + 1;
        let log = dir.join(format!("relay{host}.log"));
        relays.push(wan.start(host, &plan.exe, &daemon_args("relay", f), &log)?);
        let mut a = otcp_args("relay", &format!("0.0.0.0:{OTCP_PORT}"), plan.otcp_buffer);
        a.extend(["--allow-private".into(), "--cc".into(), plan.cc.clone()]);
        let log = dir.join(format!("otcp-relay{host}.log"));
        otcps.push(wan.start(host, &plan.exe, &a, &log)?);
    }
    // oTCP: a forwarder per size, through the three relays.
    let client = wan.host("client")?;
    let via: Vec<String> = (0..3)
        .map(|r| SocketAddr::from((relay_ip(r), OTCP_PORT)).to_string())
        .collect();
    for i in 0..=plan.sizes.len() {
        let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, FORWARD_PORT + i as u16));
        let mut a = otcp_args("forward", &listen.to_string(), plan.otcp_buffer);
        a.extend([
            "--cc".into(),
            plan.cc.clone(),
            "--via".into(),
            via.join(","),
            "--to".into(),
            server_addr(i).to_string(),
        ]);
        let log = dir.join(format!("otcp-forward{i}.log"));
        otcps.push(wan.start(client, &plan.exe, &a, &log)?);
    }
    let within = Duration::from_secs(10);
    wan.wait_for_logs_of(&relays, "relay starting", within, clock)
        .context("starting the BackTap relays")?;
    wan.wait_for_logs_of(&otcps, "listening on", within, clock)
        .context("starting the oTCP relays and forwarders")?;

    // The servers, one per size.
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_servers = StopOnDrop(stop.clone());
    let server = wan.host("server")?;
    let body_seed = plan.seed;
    let fill: Fill = Arc::new(move |off, buf: &mut [u8]| fill(body_seed, off, buf));
    let mut servers = Vec::new();
    for (i, size) in std::iter::once(WARMUP_BYTES)
        .chain(plan.sizes.iter().copied())
        .enumerate()
    {
        servers.push(spawn_sized_server(
            wan.hosts[server].open()?,
            SERVER_PORT + i as u16,
            size,
            fill.clone(),
            Some(plan.cc.clone()),
            stop.clone(),
            format!("{size} B"),
        )?);
    }

    let mut lab = Lab {
        plan,
        wan,
        clock,
        client,
        proxy,
        dir: &dir,
        hashes,
        count: 0,
    };
    // Warm-ups: ARP across the line, the relays' links; not measured.
    for tr in [Transport::Backtap, Transport::Tcp] {
        let t = lab.download(loss, 0, 0, tr, u32::MAX)?;
        if !t.finished || t.hash_ok != Some(true) {
            anyhow::bail!(
                "p = {loss}: the {} warm-up download failed ({} of {WARMUP_BYTES} B{}; logs in {})",
                tr.name(),
                t.bytes,
                if t.error.is_empty() {
                    String::new()
                } else {
                    format!(": {}", t.error)
                },
                dir.display()
            );
        }
    }
    let mut transfers = Vec::new();
    for (order, (i, run, tr)) in schedule(plan.sizes.len(), plan.runs)
        .into_iter()
        .enumerate()
    {
        let t = lab
            .download(loss, i + 1, run, tr, order as u32)
            .with_context(|| format!("(logs in {})", dir.display()))?;
        progress.inc();
        progress.note(&format!(
            "p = {}, {}, run {}, {}: {} MB/s{} (setup {:.2} s, transfer {:.1} s)",
            super::pct(loss),
            super::mb(t.size),
            run + 1,
            tr.name(),
            hopwise_experiment::sig(t.goodput_mbs, 3),
            if t.finished {
                String::new()
            } else {
                format!(", unfinished at {} B", t.bytes)
            },
            t.setup_s,
            t.transfer_s,
        ));
        transfers.push(t);
    }
    let cpu = lab.wan.cpu_seconds();
    drop(_stop_servers);
    for s in servers {
        let _ = s.join();
    }
    let links = lab.wan.finish()?;
    Ok(LossRun {
        transfers,
        links,
        cpu,
        sysctls,
    })
}

impl Lab<'_> {
    /// One download of size `i` (0: the warm-up) over `tr`: for BackTap a
    /// fresh proxy first. Fails only if a daemon or the delay line died;
    /// a slow or broken download is reported in the row.
    fn download(
        &mut self,
        loss: f64,
        i: usize,
        run: u32,
        tr: Transport,
        order: u32,
    ) -> Result<Transfer> {
        let k = self.count;
        self.count += 1;
        let size = if i == 0 {
            WARMUP_BYTES
        } else {
            self.plan.sizes[i - 1]
        };
        let start = self.clock.now_s();
        let deadline = start + self.plan.limit_s as f64;
        let (to, socks, proxy) = match tr {
            Transport::Backtap => {
                let socks = SocketAddr::from((Ipv4Addr::LOCALHOST, SOCKS_PORT + k as u16));
                let f = self
                    .proxy
                    .write(&self.dir.join(format!("proxy{k}.toml")), socks)?;
                let log = self.dir.join(format!("proxy{k}.log"));
                let id =
                    self.wan
                        .start(self.client, &self.plan.exe, &daemon_args("proxy", &f), &log)?;
                (server_addr(i), Some(socks), Some(id))
            }
            Transport::Tcp => (
                SocketAddr::from((Ipv4Addr::LOCALHOST, FORWARD_PORT + i as u16)),
                None,
                None,
            ),
        };
        let ns = self.wan.hosts[self.client].open()?;
        let clock = self.clock;
        let (tx, rx) = mpsc::channel::<Result<(Fetched, [u8; 32])>>();
        std::thread::Builder::new()
            .name("hops client".into())
            .spawn(move || {
                let r = enter(&ns, "hops client").map(|()| {
                    let mut h = Sha256::new();
                    let f = fetch(to, socks, clock, start, deadline, &mut |b| h.update(b));
                    (f, h.finalize().into())
                });
                let _ = tx.send(r);
            })?;
        // Wait, checking the daemons and the delay line meanwhile.
        let got = loop {
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(r) => break r,
                Err(mpsc::RecvTimeoutError::Timeout) => self.wan.check_daemons()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    anyhow::bail!("the client thread ended without a result")
                }
            }
        };
        let proxy_cpu_s = proxy.and_then(|id| self.wan.stop(id)).map(|(_, s)| s);
        let (f, hash) = got?;
        let complete = f.complete && f.bytes == size;
        let mut error = f.error.clone().unwrap_or_default();
        if f.complete && f.bytes != size {
            error = format!("the stream ended after {} of {size} B", f.bytes);
        }
        self.clock.sleep_until(self.clock.now_s() + GAP_S);
        Ok(Transfer {
            loss,
            size,
            transport: tr,
            run,
            order,
            setup_s: f.setup_s(),
            transfer_s: f.transfer_s(),
            total_s: f.end_s - f.start_s,
            bytes: f.bytes,
            goodput_mbs: f.goodput_bytes_per_s() / 1e6,
            finished: complete,
            hash_ok: complete.then(|| hash == self.hashes[i]),
            proxy_cpu_s,
            error,
        })
    }
}
