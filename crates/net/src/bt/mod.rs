//! A minimal BitTorrent client and seeder (`hopwise bt`): one peer, one
//! file, v1 info-hash, over any byte stream (`AsyncRead + AsyncWrite`: TCP
//! or a µTP stream).
//!
//! * [`download`]: handshake, interest, pipelined 16 KiB requests, every
//!   piece SHA-1-checked before it is written; a piece that fails is
//!   counted and fetched again, never written.
//! * [`seed`]: answer the handshake, announce every piece, unchoke an
//!   interested peer and serve its requests until it closes.
//! * [`Storage`]: the file on disk; a download goes to `PATH.part`, renamed
//!   to `PATH` once every piece is verified.
//!
//! The wire format and the metainfo are `hopwise_proto::bittorrent`'s
//! (sans-IO); this module moves their bytes and reads the clock. Not
//! implemented: trackers, DHT, PEX, the extension protocol (BEP 10; its
//! messages are skipped), the Fast Extension (our reserved bytes are all
//! zero), encryption, several peers or files.
//!
//! Piece picking is the client's own (in order, over one peer) rather than
//! the swarm simulator's (`crates/overlay/src/swarm/peer/transfer.rs`):
//! that one is random-first then rarest-first over many neighbours, draws
//! from the simulation's RNG and runs an end game across neighbours. With
//! one peer every piece is equally rare and an end game has no second peer
//! to ask, so what the two could share is a loop over "blocks of started
//! pieces first", and sharing it would tie the simulator's RNG draws to a
//! client's needs.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

mod download;
mod seed;
mod storage;

pub use download::{
    download, DownloadOptions, DownloadReport, Progress, DEFAULT_MAX_HASH_FAILURES,
};
pub use seed::{seed, SeedOptions, SeedReport};
pub use storage::Storage;

/// Requests kept outstanding by default: 128 × 16 KiB = 2 MiB in flight,
/// a bandwidth-delay product of e.g. 100 Mbit/s × 160 ms.
pub const DEFAULT_PIPELINE: usize = 128;
/// The most requests [`DownloadOptions::pipeline`] may ask for: 2000, as
/// libtorrent queues at most `max_allowed_in_request_queue` (2000 in
/// libtorrent 2.1.1's `default_settings()`) requests per peer and drops the
/// rest without a reject, as our seeder does beyond
/// [`MAX_QUEUED_REQUESTS`]; requests beyond would never be answered.
pub const MAX_PIPELINE: usize = 2000;
/// How long a peer may stay silent before the connection is given up
/// (BEP 3: "Keepalives are generally sent once every two minutes").
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests a seeder keeps queued for one peer; more are dropped, as
/// libtorrent drops requests beyond its `max_allowed_in_request_queue`
/// (the peer asks again after its own timeout).
pub const MAX_QUEUED_REQUESTS: usize = 2000;

/// A peer id (BEP 20's Azureus style): `-HW0001-` and 12 random
/// alphanumerics.
pub fn peer_id() -> [u8; 20] {
    const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut id = *b"-HW0001-000000000000";
    let mut r = [0u8; 12];
    // An all-zero tail if the OS has no randomness: a peer id is a label.
    let _ = getrandom::fill(&mut r);
    for (d, x) in id[8..].iter_mut().zip(r) {
        *d = ALNUM[x as usize % ALNUM.len()];
    }
    id
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a download or a seeding session failed. Every variant names the
/// peer (as given in the options) or the file.
#[derive(Debug)]
pub enum BtError {
    /// The peer's handshake names another torrent.
    InfoHash {
        peer: String,
        ours: [u8; 20],
        theirs: [u8; 20],
    },
    /// The peer broke the protocol (malformed message, piece out of range,
    /// a block of the wrong size ...).
    Protocol { peer: String, problem: String },
    /// Nothing came from the peer for `secs` seconds.
    Timeout {
        peer: String,
        secs: u64,
        waiting_for: &'static str,
    },
    /// The peer closed the connection before the download completed.
    Closed { peer: String, pieces_left: u32 },
    /// Reading from or writing to the peer failed.
    Io { peer: String, source: io::Error },
    /// The connection failed before the peer's handshake arrived: not a
    /// BitTorrent peer, or one that tried an encrypted handshake (MSE)
    /// first, which libtorrent does by default before retrying in plain
    /// text.
    BeforeHandshake(Box<BtError>),
    /// Reading or writing the file failed.
    Storage {
        path: PathBuf,
        piece: Option<u32>,
        source: io::Error,
    },
}

impl fmt::Display for BtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BtError::InfoHash { peer, ours, theirs } => write!(
                f,
                "peer {peer}: handshake field `info_hash` is {}, not this torrent's {}",
                hex(theirs),
                hex(ours)
            ),
            BtError::Protocol { peer, problem } => write!(f, "peer {peer}: {problem}"),
            BtError::BeforeHandshake(e) => write!(f, "{e} (before its BitTorrent handshake)"),
            BtError::Timeout {
                peer,
                secs,
                waiting_for,
            } => write!(
                f,
                "peer {peer}: silent for {secs} s while waiting for {waiting_for}"
            ),
            BtError::Closed { peer, pieces_left } => write!(
                f,
                "peer {peer}: closed the connection with {pieces_left} pieces still missing"
            ),
            BtError::Io { peer, source } => write!(f, "peer {peer}: {source}"),
            BtError::Storage {
                path,
                piece: Some(p),
                source,
            } => write!(f, "{} (piece {p}): {source}", path.display()),
            BtError::Storage {
                path,
                piece: None,
                source,
            } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for BtError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BtError::Io { source, .. } | BtError::Storage { source, .. } => Some(source),
            _ => None,
        }
    }
}
