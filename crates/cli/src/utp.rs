//! `hopwise utp send|recv`: a bulk µTP transfer over one UDP socket each
//! way, with the driver's link emulation on what this process sends, and a
//! JSON summary line for scripts (the lab and the interop harness).

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use hopwise_net::config::{Emulation, PeerSel};
use hopwise_net::utp::{UtpOptions, UtpSocket, UtpStats};
use hopwise_proto::units::{parse_bytes, parse_duration, parse_rate};
use hopwise_proto::utp::ConnStats;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Subcommand)]
pub enum UtpCmd {
    /// Accept one µTP connection, read to its FIN and discard the bytes.
    Recv {
        /// UDP address to listen on.
        #[arg(long)]
        listen: SocketAddr,
        #[command(flatten)]
        common: Common,
    },
    /// Upload bulk data over µTP.
    Send {
        /// The receiver's UDP address.
        #[arg(long)]
        to: SocketAddr,
        /// Bytes to send, e.g. 64MiB.
        #[arg(long, conflicts_with = "secs", required_unless_present = "secs")]
        bytes: Option<String>,
        /// Send for this many seconds instead.
        #[arg(long)]
        secs: Option<f64>,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Args)]
pub struct Common {
    /// One-way delay added to what this process sends, e.g. 20ms.
    #[arg(long)]
    delay: Option<String>,
    /// Loss of what this process sends, e.g. 1% or 0.01.
    #[arg(long)]
    loss: Option<String>,
    /// Rate limit of what this process sends, e.g. 10Mbit.
    #[arg(long)]
    rate: Option<String>,
    /// Print one JSON summary line on stdout at the end.
    #[arg(long)]
    json: bool,
}

fn parse_loss(s: &str) -> Result<f64> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .map_err(|_| anyhow!("--loss: `{s}` is not a fraction or a percentage such as 1%"))?;
    if !(0.0..1.0).contains(&v) {
        bail!("--loss: {s} must be at least 0 and below 100 %");
    }
    Ok(v)
}

impl Common {
    fn options(&self) -> Result<UtpOptions> {
        options(
            self.delay.as_deref(),
            self.loss.as_deref(),
            self.rate.as_deref(),
        )
    }
}

/// The driver's options with `--delay`, `--loss` and `--rate` (each
/// optional) emulated on what this process sends; `hopwise bt` uses them too.
pub fn options(delay: Option<&str>, loss: Option<&str>, rate: Option<&str>) -> Result<UtpOptions> {
    let mut emu = Emulation::default();
    let mut any = false;
    if let Some(d) = delay {
        let d = parse_duration(d).map_err(|e| anyhow!("--delay: {e}"))?;
        emu.delay = Duration::from_nanos(d.as_nanos());
        any = true;
    }
    if let Some(l) = loss {
        emu.loss = parse_loss(l)?;
        any = true;
    }
    if let Some(r) = rate {
        let r = parse_rate(r).map_err(|e| anyhow!("--rate: {e}"))?;
        emu.rate = Some(r.bytes_per_sec() as u64);
        any = true;
    }
    // The loss process's seed: any value; the process id keeps two
    // processes on one host from losing in lockstep.
    emu.seed = 0x5eed_0000 ^ u64::from(std::process::id());
    Ok(UtpOptions {
        emulation: if any {
            vec![(PeerSel::All, emu)]
        } else {
            Vec::new()
        },
        ..UtpOptions::default()
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn summary(bytes: u64, secs: f64, conn: &ConnStats, sock: &UtpStats) -> String {
    serde_json::json!({
        "bytes": bytes,
        "secs": secs,
        "goodput_bps": if secs > 0.0 { bytes as f64 * 8.0 / secs } else { 0.0 },
        "resends": conn.resends,
        "fast_resends": conn.fast_resends,
        "timeouts": conn.timeouts,
        "srtt_ms": conn.srtt.as_millis_f64(),
        "cwnd": conn.cwnd,
        "datagrams_out": sock.datagrams_out,
        "datagrams_in": sock.datagrams_in,
        "emulated_losses": sock.emulated_losses,
    })
    .to_string()
}

#[allow(clippy::disallowed_methods)] // wall time of the transfer, for the report
pub fn run(cmd: UtpCmd) -> Result<()> {
    let rt = runtime()?;
    rt.block_on(async move {
        match cmd {
            UtpCmd::Recv { listen, common } => {
                let sock = UtpSocket::bind(listen, common.options()?)
                    .await
                    .with_context(|| format!("binding UDP {listen}"))?;
                let (mut s, peer) = sock.accept().await.context("accepting")?;
                let start = Instant::now();
                let mut buf = vec![0u8; 1 << 16];
                let mut total = 0u64;
                loop {
                    let n = s
                        .read(&mut buf)
                        .await
                        .with_context(|| format!("reading from {peer}"))?;
                    if n == 0 {
                        break;
                    }
                    total += n as u64;
                }
                let secs = start.elapsed().as_secs_f64();
                let conn = s.stats();
                s.shutdown()
                    .await
                    .with_context(|| format!("closing the connection to {peer}"))?;
                if common.json {
                    println!("{}", summary(total, secs, &conn, &sock.stats()));
                } else {
                    eprintln!("received {total} bytes from {peer} in {secs:.3} s");
                }
                Ok(())
            }
            UtpCmd::Send {
                to,
                bytes,
                secs,
                common,
            } => {
                let limit = match &bytes {
                    Some(b) => Some(parse_bytes(b).map_err(|e| anyhow!("--bytes: {e}"))?.0),
                    None => None,
                };
                let dur = match secs {
                    Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
                    Some(s) => bail!("--secs: {s} must be a positive number"),
                    None => None,
                };
                let bind: SocketAddr = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse()?;
                let sock = UtpSocket::bind(bind, common.options()?)
                    .await
                    .context("binding UDP")?;
                let mut s = sock
                    .connect(to)
                    .await
                    .with_context(|| format!("connecting to {to}"))?;
                let start = Instant::now();
                let chunk = vec![0x5au8; 1 << 16];
                let mut total = 0u64;
                loop {
                    let n = match limit {
                        Some(l) if total >= l => break,
                        Some(l) => ((l - total) as usize).min(chunk.len()),
                        None => chunk.len(),
                    };
                    if dur.is_some_and(|d| start.elapsed() >= d) {
                        break;
                    }
                    let w = s
                        .write(&chunk[..n])
                        .await
                        .with_context(|| format!("sending to {to}"))?;
                    total += w as u64;
                }
                s.shutdown()
                    .await
                    .with_context(|| format!("closing the connection to {to}"))?;
                let secs = start.elapsed().as_secs_f64();
                let conn = s.stats();
                if common.json {
                    println!("{}", summary(total, secs, &conn, &sock.stats()));
                } else {
                    eprintln!("sent {total} bytes to {to} in {secs:.3} s");
                }
                Ok(())
            }
        }
    })
}
