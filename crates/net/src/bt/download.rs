//! Downloading a torrent from one peer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hopwise_proto::bittorrent::metainfo::Metainfo;
use hopwise_proto::bittorrent::{self as bt, Event, Handshake, Msg, Reader, WireError, BLOCK};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::{BtError, Storage, DEFAULT_PIPELINE, DEFAULT_TIMEOUT, MAX_PIPELINE};

/// [`DownloadOptions::max_hash_failures`] by default (hopwise's choice: a
/// rare corruption in transit is refetched, a bad source is dropped).
pub const DEFAULT_MAX_HASH_FAILURES: u32 = 8;

/// How [`download`] behaves.
#[derive(Clone, Debug)]
pub struct DownloadOptions {
    /// How errors name the peer (e.g. its address).
    pub peer: String,
    /// Our peer id in the handshake.
    pub peer_id: [u8; 20],
    /// Requests kept outstanding (1 ..= [`MAX_PIPELINE`]).
    pub pipeline: usize,
    /// How long the peer may go without progress (its handshake, an
    /// unchoke, our interest, a needed block); messages that make none
    /// (keep-alives, chokes, haves) do not extend it. A quarter of it (at
    /// most 30 s) without a block while requests are outstanding makes us
    /// request the outstanding blocks once more.
    pub timeout: Duration,
    /// Give the peer up once this many pieces failed their SHA-1 check
    /// (a peer serving a wrong file would otherwise be asked forever).
    pub max_hash_failures: u32,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            peer: "peer".into(),
            peer_id: super::peer_id(),
            pipeline: DEFAULT_PIPELINE,
            timeout: DEFAULT_TIMEOUT,
            max_hash_failures: DEFAULT_MAX_HASH_FAILURES,
        }
    }
}

/// A download's progress, reported after every verified piece and every
/// hash failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Verified bytes written.
    pub bytes: u64,
    pub total_bytes: u64,
    pub pieces: u32,
    pub total_pieces: u32,
    pub hash_failures: u32,
}

/// What a completed download did.
#[derive(Clone, Debug, PartialEq)]
pub struct DownloadReport {
    /// The file's size (every byte verified and written).
    pub bytes: u64,
    /// From the first byte sent to the last piece written.
    pub secs: f64,
    pub pieces: u32,
    /// Pieces whose SHA-1 did not match (each fetched again).
    pub hash_failures: u32,
    /// Pieces fetched again after a hash failure.
    pub refetched: u32,
    /// Block bytes received that were not needed (duplicates, unrequested).
    pub wasted_bytes: u64,
    /// Requests sent again because the peer sent no block for a while
    /// (see [`DownloadOptions::timeout`]).
    pub rerequested: u32,
    /// The peer's id from its handshake.
    pub peer_id: [u8; 20],
}

/// A piece being assembled in memory.
struct Partial {
    data: Vec<u8>,
    got: Vec<bool>,
    requested: Vec<bool>,
    got_count: u32,
}

/// The client's picker and piece state: pieces in index order, the blocks
/// of started pieces before a new piece (so pieces complete, and are
/// checked and written, one after another).
struct Pieces {
    n: u32,
    /// Pieces neither started nor verified.
    missing: BTreeSet<u32>,
    active: BTreeMap<u32, Partial>,
    verified: u32,
    verified_bytes: u64,
    /// Requests sent and not yet answered (or voided by a choke/reject).
    outstanding: usize,
    /// Pieces the peer has.
    peer_has: Vec<bool>,
}

impl Pieces {
    fn new(n: u32) -> Pieces {
        Pieces {
            n,
            missing: (0..n).collect(),
            active: BTreeMap::new(),
            verified: 0,
            verified_bytes: 0,
            outstanding: 0,
            peer_has: vec![false; n as usize],
        }
    }

    /// Whether the peer has a piece we still need.
    fn want_any(&self) -> bool {
        self.active.keys().any(|&p| self.peer_has[p as usize])
            || self.missing.iter().any(|&p| self.peer_has[p as usize])
    }

    /// The next block to request: (piece, block index).
    fn pick(&mut self, meta: &Metainfo) -> Option<(u32, u32)> {
        for (&p, part) in self.active.iter_mut() {
            if !self.peer_has[p as usize] {
                continue;
            }
            if let Some(b) = (0..part.got.len()).find(|&b| !part.got[b] && !part.requested[b]) {
                part.requested[b] = true;
                return Some((p, b as u32));
            }
        }
        let p = *self.missing.iter().find(|&&p| self.peer_has[p as usize])?;
        self.missing.remove(&p);
        let blocks = meta.blocks_in(p) as usize;
        let mut part = Partial {
            data: vec![0; meta.piece_len(p) as usize],
            got: vec![false; blocks],
            requested: vec![false; blocks],
            got_count: 0,
        };
        part.requested[0] = true;
        self.active.insert(p, part);
        Some((p, 0))
    }

    /// A choke voids every outstanding request (BEP 3).
    fn void_requests(&mut self) {
        for part in self.active.values_mut() {
            part.requested.iter_mut().for_each(|r| *r = false);
        }
        self.outstanding = 0;
    }
}

fn protocol(peer: &str, problem: String) -> BtError {
    BtError::Protocol {
        peer: peer.into(),
        problem,
    }
}

/// The state of one download.
struct Session<'a> {
    meta: &'a Metainfo,
    opts: &'a DownloadOptions,
    pieces: Pieces,
    choked: bool,
    interested: bool,
    peer_id: Option<[u8; 20]>,
    got_bitfield: bool,
    /// A message other than a keep-alive arrived (a bitfield may only come
    /// first).
    got_msg: bool,
    report: DownloadReport,
    /// Counts events that are progress (handshake, unchoke, interest, a
    /// needed block): the timeout measures time without a change of it.
    progress: u64,
}

impl Session<'_> {
    fn err(&self, problem: String) -> BtError {
        protocol(&self.opts.peer, problem)
    }

    fn check_index(&self, what: &str, index: u32) -> Result<(), BtError> {
        if index >= self.pieces.n {
            return Err(self.err(format!(
                "{what} for piece {index}: the torrent has {} pieces",
                self.pieces.n
            )));
        }
        Ok(())
    }

    /// Handles one event; messages to send go to `out`.
    fn on_event(
        &mut self,
        ev: Event,
        storage: &mut Storage,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), BtError> {
        let n = self.pieces.n as usize;
        let first_msg = !self.got_msg;
        if !matches!(ev, Event::Handshake(_) | Event::Msg(Msg::KeepAlive)) {
            self.got_msg = true;
        }
        match ev {
            Event::Handshake(h) => {
                if h.info_hash != self.meta.info_hash {
                    return Err(BtError::InfoHash {
                        peer: self.opts.peer.clone(),
                        ours: self.meta.info_hash,
                        theirs: h.info_hash,
                    });
                }
                self.peer_id = Some(h.peer_id);
                self.progress += 1;
            }
            Event::Msg(Msg::Bitfield(f)) => {
                if self.got_bitfield {
                    return Err(self.err("a second bitfield message".into()));
                }
                // BEP 3: "'bitfield' is only ever sent as the first
                // message"; a late one would overwrite what have,
                // have-all and blocks told us.
                if !first_msg {
                    return Err(self.err(
                        "a bitfield message after other messages (BEP 3: only ever the first)"
                            .into(),
                    ));
                }
                self.got_bitfield = true;
                if f.len() != n.div_ceil(8) {
                    return Err(self.err(format!(
                        "bitfield of {} bytes, expected {} for {n} pieces",
                        f.len(),
                        n.div_ceil(8)
                    )));
                }
                // BEP 3: "Clients should drop the connection if they receive
                // bitfields that ... have any of the spare bits set."
                if (n..f.len() * 8).any(|i| bt::bit(&f, i)) {
                    return Err(self.err(format!(
                        "bitfield has spare bits set beyond piece {}",
                        n - 1
                    )));
                }
                for (i, h) in self.pieces.peer_has.iter_mut().enumerate() {
                    *h = bt::bit(&f, i);
                }
            }
            Event::Msg(Msg::HaveAll) => self.pieces.peer_has.iter_mut().for_each(|h| *h = true),
            Event::Msg(Msg::HaveNone) => {}
            Event::Msg(Msg::Have(i)) => {
                self.check_index("have message", i)?;
                self.pieces.peer_has[i as usize] = true;
            }
            Event::Msg(Msg::Choke) => {
                self.choked = true;
                self.pieces.void_requests();
            }
            Event::Msg(Msg::Unchoke) => {
                if self.choked {
                    self.progress += 1;
                }
                self.choked = false;
            }
            Event::Msg(Msg::Reject { index, begin, .. }) => {
                // The block goes back to the picker (the Fast Extension's
                // reject; a peer that sets its bit may send it).
                if let Some(part) = self.pieces.active.get_mut(&index) {
                    let b = (begin / BLOCK) as usize;
                    if part.requested.get(b) == Some(&true) {
                        part.requested[b] = false;
                        self.pieces.outstanding = self.pieces.outstanding.saturating_sub(1);
                    }
                }
            }
            Event::Block { index, begin, data } => {
                self.on_block(index, begin, &data, storage, progress)?;
            }
            // We upload nothing (no bitfield sent, never unchoking), so the
            // peer's interest, requests and cancels need no answer;
            // keep-alives and the messages the codec skips neither.
            Event::Msg(
                Msg::KeepAlive
                | Msg::Interested
                | Msg::NotInterested
                | Msg::Request { .. }
                | Msg::Cancel { .. }
                | Msg::Unknown { .. }
                // Not produced by a reader that keeps blocks.
                | Msg::Piece { .. },
            ) => {}
        }
        Ok(())
    }

    fn on_block(
        &mut self,
        index: u32,
        begin: u32,
        data: &[u8],
        storage: &mut Storage,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), BtError> {
        self.check_index("piece message", index)?;
        let plen = self.meta.piece_len(index);
        let want = if begin < plen {
            BLOCK.min(plen - begin) as usize
        } else {
            0
        };
        if !begin.is_multiple_of(BLOCK) || data.len() != want {
            return Err(self.err(format!(
                "piece {index}: a block of {} B at offset {begin}, expected blocks of \
                 {BLOCK} B at multiples of {BLOCK} within the piece's {plen} B",
                data.len()
            )));
        }
        let b = (begin / BLOCK) as usize;
        let Some(part) = self.pieces.active.get_mut(&index) else {
            // A piece already verified, or never requested.
            self.report.wasted_bytes += data.len() as u64;
            return Ok(());
        };
        if part.requested[b] {
            part.requested[b] = false;
            self.pieces.outstanding = self.pieces.outstanding.saturating_sub(1);
        }
        if part.got[b] {
            self.report.wasted_bytes += data.len() as u64;
            return Ok(());
        }
        part.got[b] = true;
        part.got_count += 1;
        self.progress += 1;
        part.data[begin as usize..begin as usize + data.len()].copy_from_slice(data);
        if part.got_count as usize != part.got.len() {
            return Ok(());
        }
        let part = self.pieces.active.remove(&index).expect("active");
        if self.meta.check_piece(index, &part.data) {
            storage.write_piece(self.meta, index, &part.data)?;
            self.pieces.verified += 1;
            self.pieces.verified_bytes += part.data.len() as u64;
        } else {
            // Never written; fetched again, first in line.
            tracing::warn!(peer = %self.opts.peer, piece = index, "piece failed its SHA-1 check; fetching it again");
            self.report.hash_failures += 1;
            if self.report.hash_failures >= self.opts.max_hash_failures {
                return Err(self.err(format!(
                    "piece {index} failed its SHA-1 check; {} pieces failed, giving up \
                     on this peer (nothing that failed was written)",
                    self.report.hash_failures
                )));
            }
            self.report.refetched += 1;
            self.pieces.missing.insert(index);
        }
        let verified = self.pieces.verified;
        progress(&Progress {
            bytes: self.pieces.verified_bytes,
            total_bytes: self.meta.length,
            pieces: verified,
            total_pieces: self.pieces.n,
            hash_failures: self.report.hash_failures,
        });
        Ok(())
    }

    /// Requests every outstanding block again (the peer may have dropped
    /// the requests); returns how many.
    fn rerequest(&mut self, out: &mut Vec<u8>) -> u32 {
        let mut n = 0;
        for (&p, part) in &self.pieces.active {
            for b in (0..part.got.len()).filter(|&b| part.requested[b] && !part.got[b]) {
                let begin = b as u32 * BLOCK;
                Msg::Request {
                    index: p,
                    begin,
                    len: BLOCK.min(self.meta.piece_len(p) - begin),
                }
                .encode(out);
                n += 1;
            }
        }
        self.report.rerequested += n;
        n
    }

    /// Sends interest and requests as the state allows.
    fn fill(&mut self, out: &mut Vec<u8>) {
        if !self.interested && self.pieces.want_any() {
            self.interested = true;
            self.progress += 1;
            Msg::Interested.encode(out);
        }
        if self.choked || !self.interested {
            return;
        }
        while self.pieces.outstanding < self.opts.pipeline {
            let Some((p, b)) = self.pieces.pick(self.meta) else {
                return;
            };
            let begin = b * BLOCK;
            Msg::Request {
                index: p,
                begin,
                len: BLOCK.min(self.meta.piece_len(p) - begin),
            }
            .encode(out);
            self.pieces.outstanding += 1;
        }
    }
}

/// Downloads the torrent `meta` from the peer at the other end of
/// `stream` into `storage`, checking every piece's SHA-1 before writing
/// it; `progress` is called after each piece. On success the storage is
/// finished (`PATH.part` renamed to `PATH`) and the write half of the
/// stream shut down.
pub async fn download<S>(
    stream: S,
    meta: &Metainfo,
    storage: &mut Storage,
    opts: &DownloadOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<DownloadReport, BtError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let peer = opts.peer.as_str();
    if !(1..=MAX_PIPELINE).contains(&opts.pipeline) {
        return Err(protocol(
            peer,
            format!(
                "option pipeline: {} requests, expected 1 ..= {MAX_PIPELINE}",
                opts.pipeline
            ),
        ));
    }
    let io = |source| BtError::Io {
        peer: peer.into(),
        source,
    };
    let (mut rd, mut wr) = tokio::io::split(stream);
    let start = Instant::now();
    let mut s = Session {
        meta,
        opts,
        pieces: Pieces::new(meta.piece_count()),
        choked: true,
        interested: false,
        peer_id: None,
        got_bitfield: false,
        got_msg: false,
        report: DownloadReport {
            bytes: meta.length,
            secs: 0.0,
            pieces: meta.piece_count(),
            hash_failures: 0,
            refetched: 0,
            wasted_bytes: 0,
            rerequested: 0,
            peer_id: [0; 20],
        },
        progress: 0,
    };
    // Reserved bytes all zero: no extension is announced.
    let mut out = Handshake {
        info_hash: meta.info_hash,
        peer_id: opts.peer_id,
        fast: false,
    }
    .encode()
    .to_vec();
    let mut sent = 0;
    let mut reader = Reader::with_handshake(None).keep_blocks();
    let mut buf = vec![0u8; 64 << 10];
    let mut events = Vec::new();
    let mut deadline = Instant::now() + opts.timeout;
    // A stall: no progress for this long while requests are outstanding
    // makes us request them again, once per stall.
    let stall = (opts.timeout / 4).min(Duration::from_secs(30));
    let mut stall_at = Instant::now() + stall;
    let mut rerequested = false;
    let mut seen_progress = s.progress;
    while s.pieces.verified < s.pieces.n {
        if sent == out.len() {
            out.clear();
            sent = 0;
        }
        tokio::select! {
            r = rd.read(&mut buf) => {
                let got = r.map_err(io)?;
                if got == 0 {
                    return Err(BtError::Closed {
                        peer: peer.into(),
                        pieces_left: s.pieces.n - s.pieces.verified,
                    });
                }
                let res = reader.push(&buf[..got], &mut events);
                for ev in events.drain(..) {
                    s.on_event(ev, storage, progress)?;
                }
                if let Err(e) = res {
                    return Err(match e {
                        WireError::Pstrlen(_) | WireError::Pstr => {
                            protocol(peer, format!("{e} (not a BitTorrent peer?)"))
                        }
                        e => protocol(peer, e.to_string()),
                    });
                }
                if s.peer_id.is_some() {
                    s.fill(&mut out);
                }
                if s.progress != seen_progress {
                    seen_progress = s.progress;
                    deadline = Instant::now() + opts.timeout;
                    stall_at = Instant::now() + stall;
                    rerequested = false;
                }
            }
            () = tokio::time::sleep_until(stall_at),
                if !rerequested && !s.choked && s.pieces.outstanding > 0 =>
            {
                rerequested = true;
                let n = s.rerequest(&mut out);
                tracing::debug!(peer, blocks = n, "no block for {stall:?}: requesting again");
            }
            w = wr.write(&out[sent..]), if sent < out.len() => {
                sent += w.map_err(io)?;
            }
            () = tokio::time::sleep_until(deadline) => {
                let waiting_for = if s.peer_id.is_none() {
                    "its handshake"
                } else if !s.interested {
                    "a piece we need (it announced none)"
                } else if s.choked {
                    "an unchoke"
                } else {
                    "requested blocks"
                };
                return Err(BtError::Timeout {
                    peer: peer.into(),
                    secs: opts.timeout.as_secs(),
                    waiting_for,
                });
            }
        }
    }
    s.report.secs = start.elapsed().as_secs_f64();
    s.report.peer_id = s.peer_id.unwrap_or_default();
    storage.finish()?;
    // Done: say so and close our side (a seeder run with --once exits).
    // The file is complete whatever happens to these last bytes.
    Msg::NotInterested.encode(&mut out);
    if wr.write_all(&out[sent..]).await.is_ok() {
        let _ = wr.shutdown().await;
    }
    Ok(s.report)
}
