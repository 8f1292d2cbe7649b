//! Seeding a torrent to one peer.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use hopwise_proto::bittorrent::metainfo::Metainfo;
use hopwise_proto::bittorrent::{self as bt, Event, Handshake, Msg, Reader};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::{BtError, Storage, DEFAULT_TIMEOUT, MAX_QUEUED_REQUESTS};
use crate::utp::UtpAckProbe;

/// How [`seed`] behaves.
#[derive(Clone, Debug)]
pub struct SeedOptions {
    /// How errors name the peer (e.g. its address).
    pub peer: String,
    /// Our peer id in the handshake.
    pub peer_id: [u8; 20],
    /// How long the peer may stay silent.
    pub timeout: Duration,
    /// The µTP stream's acknowledgement probe ([`UtpStream::ack_probe`]):
    /// with it the report ends when the peer acknowledged the last block,
    /// not when it closed (TCP cannot tell; leave it `None`).
    ///
    /// [`UtpStream::ack_probe`]: crate::utp::UtpStream::ack_probe
    pub ack_probe: Option<UtpAckProbe>,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions {
            peer: "peer".into(),
            peer_id: super::peer_id(),
            timeout: DEFAULT_TIMEOUT,
            ack_probe: None,
        }
    }
}

/// What a seeding session did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeedReport {
    /// Block bytes sent.
    pub bytes: u64,
    /// Blocks sent.
    pub blocks: u64,
    /// Requests dropped because [`MAX_QUEUED_REQUESTS`] were queued.
    pub dropped_requests: u64,
    /// Requests cancelled before they were served.
    pub cancelled: u64,
    /// From the peer's handshake to the moment it acknowledged the last
    /// block written (µTP, with [`SeedOptions::ack_probe`]) or else, without
    /// a probe or with blocks unwritten or unacknowledged at the end, to the
    /// peer's close. Copying blocks into the transport's send buffer does
    /// not count as sending them.
    pub secs: f64,
}

/// Send no more than this much ahead of the socket (block headers and
/// data read from the file).
const OUT_HIGH: usize = 256 << 10;

/// Whether an I/O error means the peer went away (a normal end of seeding).
fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

/// Serves `meta`'s file from `storage` to the peer at the other end of
/// `stream`: answers its handshake (which must name this torrent), sends a
/// bitfield with every piece, unchokes it once interested and serves its
/// requests in order. Returns when the peer closes the connection.
pub async fn seed<S>(
    stream: S,
    meta: &Metainfo,
    storage: &Storage,
    opts: &SeedOptions,
) -> Result<SeedReport, BtError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut handshaken = false;
    let r = serve(stream, meta, storage, opts, &mut handshaken).await;
    match r {
        Err(e) if !handshaken && !matches!(e, BtError::InfoHash { .. }) => {
            Err(BtError::BeforeHandshake(Box::new(e)))
        }
        r => r,
    }
}

async fn serve<S>(
    stream: S,
    meta: &Metainfo,
    storage: &Storage,
    opts: &SeedOptions,
    handshaken: &mut bool,
) -> Result<SeedReport, BtError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let peer = opts.peer.as_str();
    let io = |source| BtError::Io {
        peer: peer.into(),
        source,
    };
    let protocol = |problem: String| BtError::Protocol {
        peer: peer.into(),
        problem,
    };
    let (mut rd, mut wr) = tokio::io::split(stream);
    // Set at the peer's handshake.
    let mut start = None;
    let mut report = SeedReport::default();
    let mut reader = Reader::with_handshake(None);
    let mut buf = vec![0u8; 64 << 10];
    let mut events = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut sent = 0;
    let mut choking = true;
    let mut queue: VecDeque<(u32, u32, u32)> = VecDeque::new();
    let mut deadline = Instant::now() + opts.timeout;
    let n = meta.piece_count();
    loop {
        if sent == out.len() {
            out.clear();
            sent = 0;
        }
        // Move queued requests into the output, a bounded amount ahead.
        while out.len() - sent < OUT_HIGH && !choking {
            let Some((index, begin, len)) = queue.pop_front() else {
                break;
            };
            Msg::Piece { index, begin, len }.encode(&mut out);
            let at = out.len();
            out.resize(at + len as usize, 0);
            storage.read_at(
                meta.piece_offset(index) + begin as u64,
                &mut out[at..],
                index,
            )?;
            report.bytes += len as u64;
            report.blocks += 1;
        }
        tokio::select! {
            r = rd.read(&mut buf) => {
                let got = match r {
                    Ok(0) => break,
                    Ok(got) => got,
                    Err(e) if *handshaken && closed(&e) => break,
                    Err(e) => return Err(io(e)),
                };
                deadline = Instant::now() + opts.timeout;
                let res = reader.push(&buf[..got], &mut events);
                for ev in events.drain(..) {
                    match ev {
                        Event::Handshake(h) => {
                            if h.info_hash != meta.info_hash {
                                return Err(BtError::InfoHash {
                                    peer: peer.into(),
                                    ours: meta.info_hash,
                                    theirs: h.info_hash,
                                });
                            }
                            *handshaken = true;
                            start.get_or_insert_with(Instant::now);
                            // Reserved bytes all zero: no extension announced.
                            out.extend_from_slice(
                                &Handshake {
                                    info_hash: meta.info_hash,
                                    peer_id: opts.peer_id,
                                    fast: false,
                                }
                                .encode(),
                            );
                            Msg::Bitfield(bt::bitfield(n as usize, |_| true)).encode(&mut out);
                        }
                        Event::Msg(Msg::Interested) => {
                            if choking {
                                choking = false;
                                Msg::Unchoke.encode(&mut out);
                            }
                        }
                        Event::Msg(Msg::Request { index, begin, len }) => {
                            // BEP 3: requests from a choked peer are dropped.
                            if choking {
                                continue;
                            }
                            let plen = meta.piece_len(index);
                            if index >= n || begin.checked_add(len).is_none_or(|end| end > plen) {
                                return Err(protocol(format!(
                                    "request for piece {index}, {len} B at offset {begin}: \
                                     beyond the piece ({n} pieces of {} B)",
                                    meta.piece_length
                                )));
                            }
                            if queue.len() >= MAX_QUEUED_REQUESTS {
                                report.dropped_requests += 1;
                            } else {
                                queue.push_back((index, begin, len));
                            }
                        }
                        Event::Msg(Msg::Cancel { index, begin, len }) => {
                            if let Some(k) = queue.iter().position(|&r| r == (index, begin, len)) {
                                queue.remove(k);
                                report.cancelled += 1;
                            }
                        }
                        // A seed needs nothing from the peer: its have,
                        // bitfield and pieces, keep-alives, loss of
                        // interest (it stays unchoked) and the messages
                        // the codec skips (port, extended ...) are ignored.
                        Event::Msg(
                            Msg::KeepAlive
                            | Msg::Choke
                            | Msg::Unchoke
                            | Msg::NotInterested
                            | Msg::Have(_)
                            | Msg::Bitfield(_)
                            | Msg::HaveAll
                            | Msg::HaveNone
                            | Msg::Piece { .. }
                            | Msg::Reject { .. }
                            | Msg::Unknown { .. },
                        )
                        | Event::Block { .. } => {}
                    }
                }
                if let Err(e) = res {
                    return Err(protocol(e.to_string()));
                }
            }
            w = wr.write(&out[sent..]), if sent < out.len() => {
                match w {
                    Ok(k) => {
                        // A peer that takes our data is not silent.
                        sent += k;
                        deadline = Instant::now() + opts.timeout;
                    }
                    Err(e) if closed(&e) => break,
                    Err(e) => return Err(io(e)),
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(BtError::Timeout {
                    peer: peer.into(),
                    secs: opts.timeout.as_secs(),
                    waiting_for: if *handshaken { "a message" } else { "its handshake" },
                });
            }
        }
    }
    if !*handshaken {
        return Err(protocol(
            "closed the connection before its handshake".into(),
        ));
    }
    let closed_at = Instant::now();
    let drained = opts.ack_probe.as_ref().and_then(|p| p.drained_at());
    let end = match drained {
        Some(d) if sent == out.len() && queue.is_empty() => d.min(closed_at),
        _ => closed_at,
    };
    let _ = wr.shutdown().await;
    report.secs = start.map_or(0.0, |s| end.saturating_duration_since(s).as_secs_f64());
    Ok(report)
}
