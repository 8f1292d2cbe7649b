//! `hopwise bt make|seed|download`: a single-file torrent, and a one-peer
//! BitTorrent seeder and client over µTP (the default) or TCP, thin wrappers
//! around `hopwise_net::bt` (docs/bt.md).

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Subcommand, ValueEnum};
use hopwise_net::bt::{
    download, seed, DownloadOptions, DownloadReport, Progress, SeedOptions, SeedReport, Storage,
    DEFAULT_PIPELINE, MAX_PIPELINE,
};
use hopwise_net::utp::{UtpOptions, UtpSocket};
use hopwise_proto::bittorrent::metainfo::{Builder, Metainfo};
use hopwise_proto::units::{parse_bytes, parse_duration};
use tokio::io::{AsyncRead, AsyncWrite};

/// The largest torrent file read (a 64 MiB file in 16 KiB pieces needs
/// 80 KiB of hashes; this leaves room for huge files and hybrid torrents).
const MAX_TORRENT_FILE: u64 = 64 << 20;

#[derive(Subcommand)]
pub enum BtCmd {
    /// Write a single-file torrent (v1) for FILE.
    Make {
        /// The file to describe.
        file: PathBuf,
        /// Where to write the torrent.
        #[arg(long)]
        out: PathBuf,
        /// Piece size, e.g. 256KiB (16KiB ..= 64MiB).
        #[arg(long, default_value = "256KiB")]
        piece_size: String,
        /// The tracker URL written as `announce` (hopwise contacts no tracker;
        /// some clients want one present).
        #[arg(long, default_value = "http://127.0.0.1:6969/announce")]
        announce: String,
    },
    /// Serve FILE to peers that connect (one at a time with --once).
    Seed {
        /// The file the torrent describes (checked against it before serving).
        file: PathBuf,
        /// The torrent file.
        #[arg(long)]
        torrent: PathBuf,
        /// Address to listen on.
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long, value_enum, default_value_t = Transport::Utp)]
        transport: Transport,
        /// Exit after the first peer disconnects.
        #[arg(long)]
        once: bool,
        /// Print a JSON summary line per peer on stdout.
        #[arg(long)]
        json: bool,
        /// Drop a peer silent for this long.
        #[arg(long, default_value = "120s")]
        timeout: String,
    },
    /// Download a torrent from one peer, checking every piece's SHA-1.
    Download {
        /// The torrent file.
        torrent: PathBuf,
        /// The peer, HOST:PORT.
        #[arg(long)]
        peer: String,
        /// Where to write the file (written to OUT.part, renamed when complete).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, value_enum, default_value_t = Transport::Utp)]
        transport: Transport,
        /// Print a JSON summary on stdout at the end.
        #[arg(long)]
        json: bool,
        /// Requests kept outstanding (16 KiB each).
        #[arg(long, default_value_t = DEFAULT_PIPELINE)]
        pipeline: usize,
        /// Give the peer up when it is silent for this long.
        #[arg(long, default_value = "120s")]
        timeout: String,
        /// One-way delay added to what this process sends (µTP transport only).
        #[arg(long)]
        delay: Option<String>,
        /// Loss applied to what this process sends (µTP transport only).
        #[arg(long)]
        loss: Option<String>,
    },
}

/// How peers are reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    Tcp,
    /// µTP (BEP 29) over UDP, through `hopwise_net::utp`.
    Utp,
}

pub fn run(cmd: BtCmd) -> Result<()> {
    match cmd {
        BtCmd::Make {
            file,
            out,
            piece_size,
            announce,
        } => make(&file, &out, &piece_size, &announce),
        BtCmd::Seed {
            file,
            torrent,
            listen,
            transport,
            once,
            json,
            timeout,
        } => {
            let timeout = duration("timeout", &timeout)?;
            runtime()?.block_on(seed_cmd(
                &file, &torrent, listen, transport, once, json, timeout,
            ))
        }
        BtCmd::Download {
            torrent,
            peer,
            out,
            transport,
            json,
            pipeline,
            timeout,
            delay,
            loss,
        } => {
            if !(1..=MAX_PIPELINE).contains(&pipeline) {
                bail!("--pipeline {pipeline}: expected 1 ..= {MAX_PIPELINE}");
            }
            if transport == Transport::Tcp && (delay.is_some() || loss.is_some()) {
                bail!("--delay and --loss apply to --transport utp only (the kernel sends TCP)");
            }
            let o = DownloadOptions {
                peer: peer.clone(),
                pipeline,
                timeout: duration("timeout", &timeout)?,
                ..DownloadOptions::default()
            };
            let u = crate::utp::options(delay.as_deref(), loss.as_deref(), None)?;
            runtime()?.block_on(download_cmd(&torrent, &peer, &out, transport, json, o, u))
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
}

fn duration(flag: &str, s: &str) -> Result<Duration> {
    let d = parse_duration(s).map_err(|e| anyhow!("--{flag} {s:?}: {e}"))?;
    Ok(Duration::from_secs_f64(d.as_secs_f64()))
}

/// Reads and parses a torrent file; errors name the file and the key.
pub fn read_torrent(path: &Path) -> Result<Metainfo> {
    let f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_TORRENT_FILE + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}", path.display()))?;
    if bytes.len() as u64 > MAX_TORRENT_FILE {
        bail!(
            "{}: larger than {} MiB, not a torrent file hopwise reads",
            path.display(),
            MAX_TORRENT_FILE >> 20
        );
    }
    Metainfo::parse(&bytes).map_err(|e| anyhow!("{}: {e}", path.display()))
}

fn make(file: &Path, out: &Path, piece_size: &str, announce: &str) -> Result<()> {
    let plen = parse_bytes(piece_size)
        .map_err(|e| anyhow!("--piece-size {piece_size:?}: {e}"))?
        .0;
    let plen = u32::try_from(plen)
        .ok()
        .filter(|p| (16 << 10..=64 << 20).contains(p))
        .ok_or_else(|| anyhow!("--piece-size {piece_size}: expected 16KiB ..= 64MiB"))?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow!("{}: not a file name", file.display()))?;
    let mut b = Builder::new(&name, plen).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let mut f = std::fs::File::open(file).with_context(|| format!("{}", file.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("{}", file.display()))?;
        if n == 0 {
            break;
        }
        b.update(&buf[..n]);
    }
    let bytes = b
        .finish(Some(announce))
        .map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let meta = Metainfo::parse(&bytes).expect("a torrent just made parses");
    std::fs::write(out, &bytes).with_context(|| format!("{}", out.display()))?;
    eprintln!(
        "bt make: {} ({} B, {} pieces of {} B), info-hash {}",
        out.display(),
        meta.length,
        meta.piece_count(),
        meta.piece_length,
        meta.info_hash_hex()
    );
    Ok(())
}

async fn seed_cmd(
    file: &Path,
    torrent: &Path,
    listen: SocketAddr,
    transport: Transport,
    once: bool,
    json: bool,
    timeout: Duration,
) -> Result<()> {
    let meta = Arc::new(read_torrent(torrent)?);
    let store = Storage::open(file, &meta).map_err(|e| anyhow!("{e}"))?;
    store.verify(&meta).map_err(|e| {
        anyhow!(
            "{e}; is {} the file {} describes?",
            file.display(),
            torrent.display()
        )
    })?;
    let store = Arc::new(store);
    let opts = SeedOptions {
        timeout,
        ..SeedOptions::default()
    };
    match transport {
        Transport::Tcp => {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("--listen {listen}"))?;
            announce_seed(file, &meta, listener.local_addr().unwrap_or(listen), "tcp");
            loop {
                let (stream, addr) = listener.accept().await.context("accepting a peer")?;
                let _ = stream.set_nodelay(true);
                let task = serve(
                    stream,
                    addr,
                    meta.clone(),
                    store.clone(),
                    opts.clone(),
                    json,
                );
                if once {
                    if let Served::Peer = task.await? {
                        return Ok(());
                    }
                    continue;
                }
                tokio::spawn(task);
            }
        }
        Transport::Utp => {
            let sock = UtpSocket::bind(listen, crate::utp::options(None, None, None)?)
                .await
                .with_context(|| format!("--listen {listen}"))?;
            announce_seed(file, &meta, sock.local_addr(), "µTP");
            loop {
                let (stream, addr) = sock.accept().await.context("accepting a peer")?;
                let opts = SeedOptions {
                    ack_probe: Some(stream.ack_probe()),
                    ..opts.clone()
                };
                let task = serve(stream, addr, meta.clone(), store.clone(), opts, json);
                if once {
                    if let Served::Peer = task.await? {
                        return Ok(());
                    }
                    continue;
                }
                tokio::spawn(task);
            }
        }
    }
}

fn announce_seed(file: &Path, meta: &Metainfo, at: SocketAddr, transport: &str) {
    eprintln!(
        "bt seed: serving {} ({} B, info-hash {}) on {at} ({transport})",
        file.display(),
        meta.length,
        meta.info_hash_hex(),
    );
}

/// Serves one peer on `stream` until it leaves.
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    addr: SocketAddr,
    meta: Arc<Metainfo>,
    store: Arc<Storage>,
    mut opts: SeedOptions,
    json: bool,
) -> Result<Served> {
    opts.peer = addr.to_string();
    let r = seed(stream, &meta, &store, &opts).await;
    report_seed(&opts.peer, &r, json);
    r.map(|_| Served::Peer).or_else(|e| match e {
        // libtorrent tries an encrypted handshake first, then plain text on a
        // new connection: that first attempt does not end `--once`.
        hopwise_net::bt::BtError::BeforeHandshake(_) => Ok(Served::NoHandshake),
        e => Err(anyhow!("{e}")),
    })
}

/// How a connection ended that did not fail.
enum Served {
    /// A peer handshook and left.
    Peer,
    /// The connection closed before any BitTorrent handshake.
    NoHandshake,
}

fn report_seed(peer: &str, r: &Result<SeedReport, hopwise_net::bt::BtError>, json: bool) {
    match r {
        Ok(r) => {
            let goodput = r.bytes as f64 * 8.0 / r.secs.max(1e-9);
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "peer": peer, "bytes": r.bytes, "secs": r.secs,
                        "goodput_bps": goodput, "blocks": r.blocks,
                        "dropped_requests": r.dropped_requests, "cancelled": r.cancelled,
                    })
                );
            }
            eprintln!(
                "bt seed: peer {peer}: sent {} B in {:.2} s ({:.1} Mbit/s)",
                r.bytes,
                r.secs,
                goodput / 1e6
            );
        }
        Err(e) => eprintln!("bt seed: {e}"),
    }
}

async fn download_cmd(
    torrent: &Path,
    peer: &str,
    out: &Path,
    transport: Transport,
    json: bool,
    opts: DownloadOptions,
    utp_opts: UtpOptions,
) -> Result<()> {
    let meta = read_torrent(torrent)?;
    let mut store = Storage::create(out, &meta).map_err(|e| anyhow!("{e}"))?;
    match transport {
        Transport::Tcp => {
            let s = tokio::time::timeout(
                Duration::from_secs(10),
                tokio::net::TcpStream::connect(peer),
            )
            .await
            .map_err(|_| anyhow!("--peer {peer}: no connection within 10 s"))?
            .with_context(|| format!("--peer {peer}"))?;
            let _ = s.set_nodelay(true);
            fetch(s, out, &meta, &mut store, transport, json, opts).await
        }
        Transport::Utp => {
            let to = tokio::net::lookup_host(peer)
                .await
                .with_context(|| format!("--peer {peer}: cannot resolve"))?
                .next()
                .with_context(|| format!("--peer {peer}: no address"))?;
            let any: SocketAddr = if to.is_ipv4() {
                (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let sock = UtpSocket::bind(any, utp_opts)
                .await
                .context("binding a UDP socket for µTP")?;
            // The driver gives up a connection attempt after its SYN resends.
            let s = sock
                .connect(to)
                .await
                .with_context(|| format!("--peer {peer}: no µTP connection"))?;
            fetch(s, out, &meta, &mut store, transport, json, opts).await
        }
    }
}

/// Downloads over the connected `stream` and reports.
#[allow(clippy::disallowed_methods)] // progress lines on stderr at most once a second
async fn fetch<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    out: &Path,
    meta: &Metainfo,
    store: &mut Storage,
    transport: Transport,
    json: bool,
    opts: DownloadOptions,
) -> Result<()> {
    let mut last = std::time::Instant::now();
    let mut note = |p: &Progress| {
        if last.elapsed() >= Duration::from_secs(1) || p.pieces == p.total_pieces {
            last = std::time::Instant::now();
            eprintln!(
                "bt download: {:.1} / {:.1} MiB ({:.0} %), {} / {} pieces, {} hash failures",
                p.bytes as f64 / (1 << 20) as f64,
                p.total_bytes as f64 / (1 << 20) as f64,
                100.0 * p.bytes as f64 / p.total_bytes.max(1) as f64,
                p.pieces,
                p.total_pieces,
                p.hash_failures
            );
        }
    };
    let r: DownloadReport = download(stream, meta, store, &opts, &mut note)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let goodput = r.bytes as f64 * 8.0 / r.secs.max(1e-9);
    if json {
        println!(
            "{}",
            serde_json::json!({
                "bytes": r.bytes, "secs": r.secs, "goodput_bps": goodput,
                "pieces": r.pieces, "hash_failures": r.hash_failures,
                "refetched": r.refetched, "wasted_bytes": r.wasted_bytes,
                "transport": format!("{transport:?}").to_lowercase(),
            })
        );
    }
    eprintln!(
        "bt download: {} complete, {} B in {:.2} s ({:.1} Mbit/s), {} pieces verified, \
         {} hash failures",
        out.display(),
        r.bytes,
        r.secs,
        goodput / 1e6,
        r.pieces,
        r.hash_failures
    );
    Ok(())
}
