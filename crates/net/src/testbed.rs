//! A local overlay for the quick start, the self-test, the benchmark and the
//! tests: three relays and a proxy on loopback with generated keys, a
//! directory signed by a generated authority key, and config files, plus a local HTTP server of a deterministic
//! file and a downloader that fetches it through SOCKS5 and hashes it.

use crate::config::{Directory, Emulation, ProxyConfig, RelayConfig, RelayEntry};
use crate::daemon::{spawn_proxy_observed, spawn_relay_observed, Handle, StartError};
use crate::{authority, keys};
use hopwise_proto::circuit::policy::{ExitPolicy, Rule, Verdict};
use hopwise_proto::circuit::Observer;
use hopwise_proto::link::hex;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the local overlay looks like.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// Where keys, the directory and config files go.
    pub dir: PathBuf,
    /// The proxy's SOCKS5 address (port 0: any free port).
    pub socks: SocketAddr,
    /// Let the exit connect to 127.0.0.1 (the self-test's server).
    pub allow_loopback_exit: bool,
    pub encrypt: bool,
    /// `[emulation."*"]` on every relay and the proxy.
    pub emulation: Option<Emulation>,
    /// `[bandwidth]` of the middle relay: rate in bytes per second.
    pub middle_rate: Option<u64>,
    /// Extra lines for every relay file (after the generated ones).
    pub relay_extra: String,
    /// Extra lines for the proxy file, right after its top-level keys (so
    /// it may add top-level keys, then tables).
    pub proxy_extra: String,
    /// The relays' UDP addresses (default: free ports on 127.0.0.1), e.g.
    /// one network namespace each in the lab.
    pub relay_addresses: Option<[SocketAddr; 3]>,
    /// Exit-policy rules, e.g. `"accept 10.0.0.0/8:*"`. If one of them (or
    /// `allow_loopback_exit`) accepts private addresses, the exit's file
    /// turns `reject_private` off and puts the rules for private ranges
    /// first, then `reject private:*`, then the others (`private_first`),
    /// so that those rules reach those addresses and nothing else does.
    pub exit_policy: Vec<String>,
    /// Makes the middle relay an exit too, with these rules (as
    /// `exit_policy`, without `allow_loopback_exit`).
    pub middle_exit_policy: Option<Vec<String>>,
    /// The proxy file names no `path`: the proxy chooses its paths, and
    /// keeps its guard in `proxy.state.toml` (it gets `key_file =
    /// "proxy.key"`).
    pub random_paths: bool,
    /// Files of `dir` (`relay1.toml`, `proxy.toml`, `directory.toml`, ...)
    /// that exist and are left as they are (the quick start keeps files the
    /// user edited). With any, each relay keeps the `listen` address its
    /// file names (unless `relay_addresses` says otherwise), so that the
    /// directory and the kept files agree.
    pub keep: Vec<String>,
}

impl LabOptions {
    pub fn new(dir: &Path) -> LabOptions {
        LabOptions {
            dir: dir.to_path_buf(),
            socks: SocketAddr::from(([127, 0, 0, 1], 0)),
            allow_loopback_exit: false,
            encrypt: true,
            emulation: None,
            middle_rate: None,
            relay_extra: String::new(),
            proxy_extra: String::new(),
            relay_addresses: None,
            exit_policy: Vec::new(),
            middle_exit_policy: None,
            random_paths: false,
            keep: Vec::new(),
        }
    }
}

/// The files of a local overlay.
#[derive(Clone, Debug)]
pub struct LabFiles {
    pub directory: PathBuf,
    pub relays: Vec<PathBuf>,
    pub proxy: PathBuf,
}

/// Relay names of the local overlay.
pub const NAMES: [&str; 3] = ["relay1", "relay2", "relay3"];

/// The authority key file in the overlay's folder.
pub const AUTHORITY_KEY: &str = "authority.key";

/// How long the overlay's directory is valid from when it is written.
pub const DIRECTORY_VALIDITY: Duration = Duration::from_secs(30 * 24 * 3600);

fn free_udp_port() -> std::io::Result<u16> {
    let s = std::net::UdpSocket::bind(("127.0.0.1", 0))?;
    Ok(s.local_addr()?.port())
}

fn emulation_toml(e: &Emulation) -> String {
    let mut s = String::from("\n[emulation.\"*\"]\n");
    let _ = writeln!(s, "delay = \"{}us\"", e.delay.as_micros());
    let _ = writeln!(s, "loss = {}", e.loss);
    if let Some(r) = e.rate {
        let _ = writeln!(s, "rate = \"{}B/s\"", r);
        let _ = writeln!(s, "queue = {}", e.queue);
    }
    let _ = writeln!(s, "seed = {}", e.seed);
    s
}

/// `None` if no rule of `rules` accepts a private range (`reject_private`
/// can stay on). Otherwise the rules for a policy with `reject_private`
/// off that means what they mean with it on, except that the rules for
/// private ranges decide the private addresses: those rules first (in their
/// order), then `reject private:*`, then the other rules (in their order),
/// which so reach only public addresses, as with `reject_private` on.
fn private_first(rules: &[String]) -> Result<Option<Vec<String>>, StartError> {
    let mut accepts = false;
    let mut private = Vec::new();
    let mut public = Vec::new();
    for text in rules {
        let r = Rule::parse(text).map_err(|e| StartError(format!("exit policy: {e}")))?;
        if r.addr.private_range().is_some() {
            accepts |= r.verdict == Verdict::Accept;
            private.push(text.clone());
        } else {
            public.push(text.clone());
        }
    }
    if !accepts {
        return Ok(None);
    }
    private.push("reject private:*".to_string());
    private.extend(public);
    Ok(Some(private))
}

/// An exit's `[exit]` section for `rules`, and the same policy as the
/// directory lists it.
fn exit_section(rules: &[String], loopback: bool) -> Result<(String, ExitPolicy), StartError> {
    let mut s = String::from("\n[exit]\nenabled = true\n");
    if loopback {
        s.push_str(
            "# The self-test's file server is on 127.0.0.1, which the default policy refuses.\n",
        );
    }
    let reordered = private_first(rules)?;
    let reject_private = reordered.is_none();
    if !reject_private {
        // reject_private would refuse private addresses before the
        // rules; other rules must not reach them instead.
        s.push_str(
            "# A rule accepts private addresses, which reject_private would refuse first,\n\
             # so it is off: the rules for private ranges come first, then `reject private:*`.\n\
             reject_private = false\n",
        );
    }
    let rules = reordered.unwrap_or_else(|| rules.to_vec());
    if !rules.is_empty() {
        let quoted: Vec<String> = rules.iter().map(|r| format!("{r:?}")).collect();
        let _ = writeln!(s, "policy = [{}]", quoted.join(", "));
    }
    let mut policy = ExitPolicy {
        reject_private,
        ..ExitPolicy::default()
    };
    for r in &rules {
        policy
            .rules
            .push(Rule::parse(r).map_err(|e| StartError(format!("exit policy: {e}")))?);
    }
    Ok((s, policy))
}

/// Writes keys, the directory (signed by the authority key `authority.key`,
/// created if missing, valid for [`DIRECTORY_VALIDITY`] from now) and the
/// config files of three relays (the third an exit, the second one too with
/// `middle_exit_policy`) and a proxy into `o.dir`.
pub fn write_lab(o: &LabOptions) -> Result<LabFiles, StartError> {
    let io = |e: std::io::Error| StartError(format!("{}: {e}", o.dir.display()));
    if o.dir.exists() && !o.dir.is_dir() {
        return Err(StartError(format!("{}: not a directory", o.dir.display())));
    }
    std::fs::create_dir_all(&o.dir).map_err(|e| {
        StartError(format!(
            "{}: cannot create the directory: {e}",
            o.dir.display()
        ))
    })?;
    // The exits' policies, in their files and (for proxies) in the directory.
    let mut rules = Vec::new();
    if o.allow_loopback_exit {
        rules.push("accept 127.0.0.1/32:*".to_string());
    }
    rules.extend(o.exit_policy.iter().cloned());
    let exits = [
        o.middle_exit_policy
            .as_deref()
            .map(|r| exit_section(r, false))
            .transpose()?,
        Some(exit_section(&rules, o.allow_loopback_exit)?),
    ];
    let mut dir = Directory::default();
    for (i, name) in NAMES.iter().enumerate() {
        let kp = keys::load_or_create(&o.dir.join(format!("{name}.key")))?;
        let file = o.dir.join(format!("{name}.toml"));
        let kept = (!o.keep.is_empty()).then(|| listen_of(&file)).flatten();
        let address = match (o.relay_addresses, kept) {
            (Some(a), _) => a[i],
            (None, Some(a)) => a,
            (None, None) => SocketAddr::from(([127, 0, 0, 1], free_udp_port().map_err(io)?)),
        };
        let mut r = RelayEntry::new(name, address, kp.public);
        r.guard = i == 0;
        if let Some((_, policy)) = i.checked_sub(1).and_then(|j| exits[j].as_ref()) {
            r.exit = true;
            r.exit_policy = policy.clone();
        }
        dir.relays.push(r);
    }
    let keep = |name: &str| o.keep.iter().any(|k| k == name);
    let directory = o.dir.join("directory.toml");
    let authority = authority::load_or_create(&o.dir.join(AUTHORITY_KEY))?;
    if !keep("directory.toml") {
        let now = crate::clock::wall_now();
        let file = directory.display().to_string();
        let signed = authority::sign_directory(
            &dir.to_toml(),
            &file,
            &authority,
            now,
            now + DIRECTORY_VALIDITY,
        )?;
        std::fs::write(&directory, signed).map_err(io)?;
    }
    let authority = authority.public();
    let mut relays = Vec::new();
    for (i, r) in dir.relays.iter().enumerate() {
        let mut s = format!(
            "# hopwise relay configuration (reference: docs/relay.md).\n\
             name = \"{}\"\nlisten = \"{}\"\nkey_file = \"{}.key\"\ndirectory = \"directory.toml\"\n\
             authority = \"{authority}\"\n",
            r.name, r.address, r.name
        );
        if let Some((text, _)) = i.checked_sub(1).and_then(|j| exits[j].as_ref()) {
            s.push_str(text);
        }
        if !o.encrypt {
            s.push_str("\n[link]\nencrypt = false  # test-only\n");
        }
        if let (1, Some(rate)) = (i, o.middle_rate) {
            // A burst of 100 ms at the rate (Tor's refill interval).
            let _ = write!(
                s,
                "\n[bandwidth]\nrate = \"{rate}B/s\"\nburst = \"{}B\"\n",
                (rate / 10).max(1038)
            );
        }
        if let Some(e) = &o.emulation {
            s.push_str(&emulation_toml(e));
        }
        s.push_str(&o.relay_extra);
        let p = o.dir.join(format!("{}.toml", r.name));
        if !keep(&format!("{}.toml", r.name)) {
            std::fs::write(&p, s).map_err(io)?;
        }
        relays.push(p);
    }
    let mut s = format!(
        "# hopwise proxy configuration (reference: docs/relay.md).\n\
         socks = \"{}\"\ndirectory = \"directory.toml\"\nauthority = \"{authority}\"\n{}\
         # Random paths (without `path`): the relays share a /16 (127.0.0.0/16 on loopback).\n\
         path_subnet_rule = false\n",
        o.socks,
        if o.random_paths {
            "key_file = \"proxy.key\"\n"
        } else {
            "path = [\"relay1\", \"relay2\", \"relay3\"]\n"
        }
    );
    s.push_str(&o.proxy_extra);
    if !o.encrypt {
        s.push_str("\n[link]\nencrypt = false  # test-only\n");
    }
    if let Some(e) = &o.emulation {
        s.push_str(&emulation_toml(e));
    }
    let proxy = o.dir.join("proxy.toml");
    if !keep("proxy.toml") {
        std::fs::write(&proxy, s).map_err(io)?;
    }
    Ok(LabFiles {
        directory,
        relays,
        proxy,
    })
}

/// The top-level `listen = "ADDRESS"` of a relay file, if it has one.
fn listen_of(file: &Path) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(file).ok()?;
    let t: toml::Table = text.parse().ok()?;
    t.get("listen")?.as_str()?.parse().ok()
}

/// A running local overlay.
pub struct Lab {
    pub files: LabFiles,
    pub relays: Vec<Handle>,
    pub proxy: Handle,
}

impl Lab {
    /// Writes the files and starts everything from them, in this process.
    pub fn start(o: &LabOptions) -> Result<Lab, StartError> {
        Lab::start_observed(o, Vec::new(), None)
    }

    /// [`Lab::start`], with observers of what each relay's circuit layer
    /// (in order relay1, relay2, relay3) and the proxy's handle
    /// ([`hopwise_proto::circuit::Node::set_observer`]).
    pub fn start_observed(
        o: &LabOptions,
        relay_observers: Vec<Observer>,
        proxy_observer: Option<Observer>,
    ) -> Result<Lab, StartError> {
        Lab::start_files_observed(write_lab(o)?, relay_observers, proxy_observer)
    }

    /// Starts everything from files [`write_lab`] wrote (and someone may
    /// have edited since), in this process.
    pub fn start_files(files: LabFiles) -> Result<Lab, StartError> {
        Lab::start_files_observed(files, Vec::new(), None)
    }

    fn start_files_observed(
        files: LabFiles,
        relay_observers: Vec<Observer>,
        proxy_observer: Option<Observer>,
    ) -> Result<Lab, StartError> {
        let mut relays = Vec::new();
        let mut obs = relay_observers.into_iter();
        for p in &files.relays {
            relays.push(spawn_relay_observed(RelayConfig::load(p)?, obs.next())?);
        }
        let proxy = spawn_proxy_observed(ProxyConfig::load(&files.proxy)?, proxy_observer)?;
        Ok(Lab {
            files,
            relays,
            proxy,
        })
    }

    pub fn socks(&self) -> SocketAddr {
        self.proxy.socks.expect("a proxy has a SOCKS address")
    }

    /// Waits until the proxy's circuit is built.
    pub async fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let t0 = tokio::time::Instant::now();
        loop {
            if let Some(s) = self.proxy.snapshot_async().await {
                if s.client_ready {
                    return Ok(());
                }
            }
            if t0.elapsed() > limit {
                return Err(format!("the circuit was not built within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn shutdown(self) {
        let Lab { relays, proxy, .. } = self;
        drop(proxy);
        for r in relays {
            r.shutdown();
        }
    }
}

/// Fills `buf` with bytes `offset..` of the deterministic file `seed`
/// (`offset` a multiple of 8).
pub fn fill(seed: u64, offset: u64, buf: &mut [u8]) {
    debug_assert_eq!(offset % 8, 0);
    for (i, chunk) in (offset / 8..).zip(buf.chunks_mut(8)) {
        // splitmix64 of the word index: any offset can be generated directly.
        let mut z = i.wrapping_add(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let b = z.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

/// SHA-256 of the deterministic file.
pub fn expected_hash(seed: u64, size: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut off = 0;
    while off < size {
        let n = ((size - off) as usize).min(buf.len());
        fill(seed, off, &mut buf[..n]);
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.finalize().into()
}

/// Serves the deterministic file of `size` bytes to every HTTP request
/// (any path), HTTP/1.0 style: the body, then close.
pub async fn serve_file(listener: TcpListener, seed: u64, size: u64) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b).await {
                    Ok(n) if n > 0 && req.len() < 16384 => req.extend_from_slice(&b[..n]),
                    _ => return,
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut buf = vec![0u8; 1 << 16];
            let mut off = 0;
            while off < size {
                let n = ((size - off) as usize).min(buf.len());
                fill(seed, off, &mut buf[..n]);
                if s.write_all(&buf[..n]).await.is_err() {
                    return;
                }
                off += n as u64;
            }
            let _ = s.shutdown().await;
        });
    }
}

/// A finished download.
#[derive(Clone, Debug)]
pub struct Download {
    pub bytes: u64,
    pub hash: [u8; 32],
    /// From the first body byte to the last.
    pub secs: f64,
    /// Including the SOCKS and HTTP exchange.
    pub total_secs: f64,
}

impl Download {
    pub fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / (1 << 20) as f64 / self.secs.max(1e-9)
    }
}

/// Fetches `http://host:port/file` through the SOCKS5 proxy, hashing the body.
pub async fn download(socks: SocketAddr, host: &str, port: u16) -> Result<Download, String> {
    let t0 = tokio::time::Instant::now();
    let mut s = crate::socks::connect(socks, host, port)
        .await
        .map_err(|e| format!("SOCKS connect to {host}:{port}: {e}"))?;
    s.write_all(format!("GET /file HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 16];
    let mut head = Vec::new();
    let body_start;
    loop {
        let n = s.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before the HTTP header ended".into());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            body_start = p + 4;
            break;
        }
    }
    let status =
        String::from_utf8_lossy(&head[..head.iter().position(|&b| b == b'\r').unwrap_or(0)])
            .to_string();
    if !status.contains(" 200 ") {
        return Err(format!("HTTP status: {status}"));
    }
    let t1 = tokio::time::Instant::now();
    let mut h = Sha256::new();
    let first = &head[body_start..];
    h.update(first);
    let mut bytes = first.len() as u64;
    loop {
        let n = s
            .read(&mut buf)
            .await
            .map_err(|e| format!("after {bytes} bytes: {e}"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok(Download {
        bytes,
        hash: h.finalize().into(),
        secs: t1.elapsed().as_secs_f64(),
        total_secs: t0.elapsed().as_secs_f64(),
    })
}

/// Starts the file server on loopback; returns its address.
pub async fn start_file_server(seed: u64, size: u64) -> std::io::Result<SocketAddr> {
    let l = TcpListener::bind(("127.0.0.1", 0)).await?;
    let a = l.local_addr()?;
    tokio::spawn(serve_file(l, seed, size));
    Ok(a)
}

/// SHA-256 of a file's bytes.
pub fn sha256_file(path: &Path) -> std::io::Result<[u8; 32]> {
    Ok(Sha256::digest(std::fs::read(path)?).into())
}

/// Hex of a hash.
pub fn hash_hex(h: &[u8; 32]) -> String {
    hex(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_addresses_and_exit_rules_reach_the_config_files() {
        let dir = std::env::temp_dir().join(format!("hopwise-testbed-{}", std::process::id()));
        let mut o = LabOptions::new(&dir);
        let addrs: [SocketAddr; 3] = [
            "10.202.0.2:9001".parse().unwrap(),
            "10.202.0.3:9001".parse().unwrap(),
            "10.202.0.4:9001".parse().unwrap(),
        ];
        o.relay_addresses = Some(addrs);
        o.allow_loopback_exit = true;
        o.exit_policy = vec!["accept 10.202.0.0/24:*".into()];
        let files = write_lab(&o).unwrap();
        let relays: Vec<RelayConfig> = files
            .relays
            .iter()
            .map(|p| RelayConfig::load(p).unwrap())
            .collect();
        for (r, a) in relays.iter().zip(addrs) {
            assert_eq!(r.listen, a);
        }
        let exit = &relays[2];
        assert!(exit.exit.enabled);
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        // Both rules, and the refusal of the other private ranges (by the
        // rule that follows them: reject_private is off to let them through).
        assert!(!exit.exit.policy.reject_private);
        assert!(exit.exit.policy.allows(ip("10.202.0.5"), 5001));
        assert!(exit.exit.policy.allows(ip("127.0.0.1"), 80));
        assert!(!exit.exit.policy.allows(ip("10.1.0.1"), 80));
        assert!(!exit.exit.policy.allows(ip("169.254.169.254"), 80));
        let proxy = ProxyConfig::load(&files.proxy).unwrap();
        assert_eq!(proxy.directory.relays[0].address, addrs[0]);
        // The proxy's links are not bound to loopback, so that it can reach relays elsewhere.
        assert!(proxy.listen.ip().is_unspecified());
        // Rules that accept no private range leave reject_private on.
        o.allow_loopback_exit = false;
        o.exit_policy = vec!["reject *:25".into(), "accept *:*".into()];
        let files = write_lab(&o).unwrap();
        let exit = RelayConfig::load(&files.relays[2]).unwrap();
        assert!(exit.exit.policy.reject_private);
        assert_eq!(exit.exit.policy.rules.len(), 2);
        assert!(!exit.exit.policy.allows(ip("127.0.0.1"), 80));
        // With a private range accepted, the other rules still do not reach
        // the other private ranges: not a catch-all (which would otherwise
        // make the closing `reject private:*` unreachable, an error) ...
        o.exit_policy = vec!["accept 10.202.0.0/24:*".into(), "accept *:*".into()];
        let files = write_lab(&o).unwrap();
        let p = RelayConfig::load(&files.relays[2]).unwrap().exit.policy;
        assert!(!p.reject_private);
        assert!(p.allows(ip("10.202.0.5"), 80));
        assert!(p.allows(ip("8.8.8.8"), 80));
        assert!(!p.allows(ip("10.1.0.1"), 80));
        assert!(!p.allows(ip("::ffff:127.0.0.1"), 80));
        // ... nor a port rule before the private accept.
        o.exit_policy = vec!["accept *:80".into(), "accept 10.202.0.0/24:*".into()];
        let files = write_lab(&o).unwrap();
        let p = RelayConfig::load(&files.relays[2]).unwrap().exit.policy;
        assert!(p.allows(ip("8.8.8.8"), 80));
        assert!(!p.allows(ip("192.168.1.1"), 80));
        assert!(p.allows(ip("10.202.0.5"), 81));
        assert!(p.allows(ip("10.202.0.5"), 80));
        // Rules for private ranges keep their order, and decide alone.
        o.exit_policy = vec![
            "accept *:80".into(),
            "reject 10.202.0.9/32:*".into(),
            "accept 10.202.0.0/24:*".into(),
        ];
        let files = write_lab(&o).unwrap();
        let p = RelayConfig::load(&files.relays[2]).unwrap().exit.policy;
        assert!(!p.allows(ip("10.202.0.9"), 80));
        assert!(p.allows(ip("10.202.0.8"), 80));
        assert!(!p.allows(ip("172.16.0.1"), 80));
        // A public rule for the port does not refuse a private accept ...
        o.exit_policy = vec!["reject *:25".into(), "accept 10.202.0.0/24:*".into()];
        let files = write_lab(&o).unwrap();
        let p = RelayConfig::load(&files.relays[2]).unwrap().exit.policy;
        assert!(p.allows(ip("10.202.0.5"), 25));
        assert!(!p.allows(ip("8.8.8.8"), 25));
        // ... and a catch-all before it still makes a valid file.
        for first in ["accept *:*", "reject *:*"] {
            o.exit_policy = vec![first.into(), "accept 10.202.0.0/24:*".into()];
            let files = write_lab(&o).unwrap();
            let p = RelayConfig::load(&files.relays[2]).unwrap().exit.policy;
            assert!(p.allows(ip("10.202.0.5"), 80), "{first}");
            assert!(!p.allows(ip("10.1.0.5"), 80), "{first}");
            assert_eq!(p.allows(ip("8.8.8.8"), 80), first.starts_with("accept"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
