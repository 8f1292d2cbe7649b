//! Encrypted and authenticated links between neighbours, sans-IO
//! (`docs/relay.md`, "Links"). Feature `link`.
//!
//! Every node has a long-term static X25519 key; relays publish theirs in
//! the directory. A link is a Noise `IK` handshake (the initiator knows the
//! responder's static key from the directory and sends its own, encrypted,
//! in the first message) followed by AES-256-GCM on every datagram with an
//! explicit 64-bit counter as the nonce and a 2048-datagram replay window.
//!
//! ```text
//! INIT   := 0x01 sender_idx:u32 noise_msg1 mac:16   (e, es, s, ss; payload: flags)
//! RESP   := 0x02 sender_idx:u32 receiver_idx:u32 noise_msg2   (e, ee, se; payload: flags)
//! DATA   := 0x03 receiver_idx:u32 counter:u64 AEAD(frame)     (frame + 16-byte tag)
//! PLAIN  := 0x04 receiver_idx:u32 counter:u64 frame           (test-only: encryption off)
//! COOKIE := 0x05 receiver_idx:u32 cookie:16 tag:16
//! ```
//!
//! * Indices name sessions (as in WireGuard), so a datagram finds its keys
//!   without trial decryption; it must also come from the session's address.
//! * A datagram is dropped and counted, never processed, if it is malformed,
//!   names no session, comes from the wrong address, fails authentication,
//!   or repeats (or is older than the window of) a counter already accepted.
//! * The initiator retransmits INIT (the same bytes) with exponential backoff
//!   until RESP arrives or `handshake_timeout` passes; a responder answers a
//!   repeated INIT with the RESP it already sent, without new crypto.
//! * A responder that already has a session keeps using it until the new one
//!   is *confirmed* by an authenticated DATA datagram, so a replayed INIT
//!   cannot take a working link down. The initiator confirms at once (a
//!   keepalive if it has nothing queued).
//! * A new client (a key not in the directory and not linked) gets a link
//!   slot only when it confirms: until then its answered handshake waits in
//!   a bounded table (`max_half_open`, oldest evicted first, expired after
//!   `handshake_timeout`). INITs are replayable and cost nothing to forge
//!   from spoofed addresses, so counting them against `max_clients` would
//!   let anyone lock new clients out. A copy of an answered INIT from
//!   another address is dropped before any Diffie-Hellman work, so it
//!   cannot replace the real initiator's session. A new client's INIT when
//!   `max_clients` is reached (or `accept_clients` is off) is answered with
//!   a RESP whose authenticated flags refuse it ([`CloseReason`] `Full` or
//!   `NoClients`), keeping nothing, so a copy of it is answered again (with
//!   new Diffie-Hellman work, within the handshake budget); a client that
//!   confirms after the last slot went to another gets a CLOSE.
//! * **Closing:** the link layer's own frame, `CLOSE := 0xff reason:u8`
//!   ([`CloseReason`]), sealed like any frame, takes the link down at the
//!   receiver at once ([`LinkEvent::Closed`]); a refusing RESP does the
//!   same. A node that stops sends CLOSE on every link
//!   ([`Links::close_all`]). On plaintext sessions (`encrypt` off) a CLOSE
//!   is as unauthenticated as every other frame there. Until a link to it
//!   comes up again, every handshake to a peer that closed our last link
//!   gives up after [`CLOSED_PEER_GIVE_UP`].
//! * **Cookies under load** (after WireGuard's cookie reply, simplified).
//!   Answering an INIT costs Diffie-Hellman work, and INITs from spoofed
//!   addresses cost an attacker nothing. A responder that has done the
//!   Diffie-Hellman work for INITs faster than `handshakes_per_second`
//!   (a token bucket that holds one second's worth, see [`Gcra`]) answers
//!   further INITs that carry no valid cookie with a COOKIE instead, without
//!   any Diffie-Hellman work. The cookie is a keyed BLAKE2s-128 of the
//!   INIT's source address and port under a secret that changes every
//!   [`COOKIE_EPOCH`] (`cookie_secret` hashed with the epoch number); the
//!   current and the previous epoch's cookies are valid. Only who receives
//!   datagrams at that address learns its cookie. The initiator checks the
//!   COOKIE's tag (a keyed BLAKE2s-128 under the responder's public key of
//!   the cookie, its session index and its INIT's ephemeral key, which an
//!   off-path sender cannot know; an on-path observer can forge one), takes
//!   one COOKIE per INIT, sets the INIT's `mac` to the keyed
//!   BLAKE2s-128 of the INIT's other bytes under the cookie and sends it
//!   again at once. An INIT with a valid `mac` is answered whatever the
//!   load, up to [`SOURCE_INITS_PER_SECOND`] per source (an IPv4 address
//!   or an IPv6 /64; burst [`SOURCE_INIT_BURST`]) while the responder is
//!   loaded, as WireGuard's `ratelimiter.c` limits handshakes whose cookie
//!   checked out; beyond that, and when [`MAX_SOURCES`] sources are being
//!   limited, they are dropped (`rate_limited`). Without a cookie `mac` is
//!   zero and is not looked at while the responder is not loaded. Unlike
//!   WireGuard there is no `mac1` (a hash proving the sender knows the
//!   responder's key), and the cookie travels in clear, bound to the INIT
//!   by the tag.
//! * Both sides initiating at once: the side with the smaller static key
//!   drops the peer's INIT and keeps its own handshake; the other answers.
//! * Keepalives (the empty frame) every `keepalive` of silence; a link that
//!   hears nothing for `idle_timeout` is down.
//! * PLAIN is accepted only when both sides turned encryption off (the flag
//!   is authenticated in the handshake); it is for measuring what the crypto
//!   costs, never for use.

mod replay;

pub use replay::{ReplayWindow, WINDOW as REPLAY_WINDOW};

use crate::circuit::{Identity, LinkId};
use crate::time::{Dur, Time};
use snow::params::NoiseParams;
use snow::{HandshakeState, StatelessTransportState};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// The Noise protocol name.
pub const NOISE_PARAMS: &str = "Noise_IK_25519_AESGCM_BLAKE2s";
/// Bound into every handshake: a different version cannot complete one.
pub const PROLOGUE: &[u8] = b"hopwise link v2";
pub const TYPE_INIT: u8 = 0x01;
pub const TYPE_RESP: u8 = 0x02;
pub const TYPE_DATA: u8 = 0x03;
pub const TYPE_PLAIN: u8 = 0x04;
pub const TYPE_COOKIE: u8 = 0x05;
/// Length of an INIT's `mac`, a cookie and a COOKIE's tag.
pub const MAC_LEN: usize = 16;
/// A COOKIE datagram: type, receiver index, cookie, tag.
const COOKIE_MSG_LEN: usize = 5 + 2 * MAC_LEN;
/// A responder's cookie secret changes this often; a cookie stays valid
/// through the next epoch too, so an initiator uses one for this long.
pub const COOKIE_EPOCH: Dur = Dur::from_secs(120);
/// Bytes before the ciphertext of a DATA datagram.
pub const DATA_HEADER_LEN: usize = 13;
/// The AEAD tag.
pub const TAG_LEN: usize = 16;
/// Overhead of a DATA datagram over its frame.
pub const OVERHEAD: usize = DATA_HEADER_LEN + TAG_LEN;
const FLAG_PLAIN: u8 = 0x01;
/// Bits 1-2 of a RESP's flags: a refusal, [`CloseReason`] 1 (full) or 2
/// (no clients) shifted left by one. A refusing RESP completes the
/// handshake (it proves the responder's key) but no session follows.
const FLAGS_REFUSED: u8 = 0x06;
/// Noise message 1 of IK with a one-byte payload: e (32), s (32 + 16), payload (1 + 16).
const MSG1_LEN: usize = 32 + 48 + 17;
/// Noise message 2: e (32), payload (1 + 16).
const MSG2_LEN: usize = 32 + 17;
/// An INIT: type, sender index, Noise message 1, mac.
const INIT_LEN: usize = 5 + MSG1_LEN + MAC_LEN;
/// First byte of the link layer's own frame, CLOSE := 0xff reason:u8: the
/// sender closes the link ([`CloseReason`]). Frames with this first byte
/// never reach the node above, and `seal` refuses them.
pub const FRAME_CLOSE: u8 = 0xff;
/// How long a handshake to a peer that closed our last link is retried
/// (instead of `handshake_timeout`): INITs at 0, 0.25, 0.75 and 1.75 s with
/// the default `handshake_rto`, enough for a relay that restarts at once,
/// short enough that circuits through one that shut down fail fast.
pub const CLOSED_PEER_GIVE_UP: Dur = Dur::from_millis(2000);
/// Under load, INITs with a valid cookie answered per second and source,
/// and the burst allowed: WireGuard's `PACKETS_PER_SECOND` and
/// `PACKETS_BURSTABLE` (`drivers/net/wireguard/ratelimiter.c`).
pub const SOURCE_INITS_PER_SECOND: u64 = 20;
pub const SOURCE_INIT_BURST: u64 = 5;
/// Sources limited at once; when the table is full (after forgetting idle
/// ones), INITs from new sources are dropped while the node is loaded.
/// WireGuard's ratelimiter caps its table the same way, at a size that
/// depends on memory (8192 buckets, 8 entries each, on large machines).
pub const MAX_SOURCES: usize = 8192;

/// A token bucket in the form of the generic cell rate algorithm (ITU-T
/// I.371's "virtual scheduling"): it admits `burst` events at once and
/// then one per `1/rate` s. `tat` is the theoretical arrival time of the
/// next event; an event is admitted if `tat` is at most `burst - 1`
/// intervals ahead of `now`. Integer nanoseconds: the interval is rounded
/// down, so the rate is met or slightly exceeded.
#[derive(Clone, Copy, Debug, Default)]
struct Gcra {
    tat: Time,
}

impl Gcra {
    fn interval(rate: u64) -> Dur {
        Dur::from_nanos(1_000_000_000 / rate.max(1))
    }

    /// Takes a token if there is one.
    fn admit(&mut self, now: Time, rate: u64, burst: u64) -> bool {
        let t = Self::interval(rate);
        let ahead = self.tat.checked_since(now).unwrap_or(Dur::ZERO);
        if ahead.as_nanos() > t.as_nanos().saturating_mul(burst.saturating_sub(1)) {
            return false;
        }
        self.tat = self.tat.max(now) + t;
        true
    }

    /// Takes a token whether or not there is one, going into debt by at
    /// most one interval more than `admit` allows, so that a bucket charged
    /// beyond its rate admits again one interval after the charges stop.
    fn charge(&mut self, now: Time, rate: u64, burst: u64) {
        let t = Self::interval(rate);
        let cap = now + Dur::from_nanos(t.as_nanos().saturating_mul(burst));
        self.tat = (self.tat.max(now) + t).min(cap);
    }

    /// Whether the bucket has refilled completely.
    fn is_full(&self, now: Time) -> bool {
        self.tat <= now
    }
}

/// Where an INIT comes from, for the per-source limit: an IPv4 address or
/// an IPv6 /64 (one host's share of addresses), not the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    V4(u32),
    V6(u64),
}

impl Source {
    fn of(a: SocketAddr) -> Source {
        match a.ip() {
            IpAddr::V4(ip) => Source::V4(u32::from(ip)),
            IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                Some(v4) => Source::V4(u32::from(v4)),
                None => Source::V6((u128::from(ip) >> 64) as u64),
            },
        }
    }
}

/// Keyed BLAKE2s with a 128-bit output over the concatenated `parts`.
fn mac16(key: &[u8], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    use blake2::digest::{consts::U16, Mac};
    let mut m = <blake2::Blake2sMac<U16> as blake2::digest::KeyInit>::new_from_slice(key)
        .expect("keys of at most 32 bytes");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// The bytes of an address a cookie covers: IP and port.
fn addr_bytes(a: SocketAddr) -> Vec<u8> {
    let mut v = match a.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    v.extend_from_slice(&a.port().to_be_bytes());
    v
}

/// A COOKIE's tag: binds the cookie to the INIT it answers (the initiator's
/// session index and ephemeral key) under the responder's public key.
fn cookie_tag(responder: &Identity, cookie: &[u8], sender: u32, e: &[u8]) -> [u8; MAC_LEN] {
    mac16(responder, &[cookie, &sender.to_be_bytes(), e])
}

fn params() -> NoiseParams {
    NOISE_PARAMS.parse().expect("valid noise parameters")
}

/// A static key pair.
#[derive(Clone, PartialEq, Eq)]
pub struct Keypair {
    pub private: [u8; 32],
    pub public: [u8; 32],
}

impl fmt::Debug for Keypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Keypair {{ public: {} }}", hex(&self.public))
    }
}

impl Keypair {
    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> Keypair {
        let kp = snow::Builder::new(params())
            .generate_keypair()
            .expect("the OS random source works");
        let mut k = Keypair {
            private: [0; 32],
            public: [0; 32],
        };
        k.private.copy_from_slice(&kp.private);
        k.public.copy_from_slice(&kp.public);
        k
    }

    /// The key pair of a private key.
    pub fn from_private(private: [u8; 32]) -> Keypair {
        use snow::params::DHChoice;
        use snow::resolvers::{CryptoResolver, DefaultResolver};
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("curve25519 is built in");
        dh.set(&private);
        let mut public = [0u8; 32];
        public.copy_from_slice(dh.pubkey());
        Keypair { private, public }
    }
}

/// Whether `public` is an X25519 public key of small order (0, 1, the
/// points of order 2, 4 and 8, and their other encodings): every
/// Diffie-Hellman result with it is zero, whatever the private key
/// (RFC 7748 §6.1). X25519 clamps every private key to a multiple of the
/// cofactor 8, which takes such a point, and only such a point, to the
/// identity, encoded as all zeros; so one X25519 with a fixed private key
/// finds them all.
pub fn is_small_order(public: &[u8; 32]) -> bool {
    use snow::params::DHChoice;
    use snow::resolvers::{CryptoResolver, DefaultResolver};
    let mut dh = DefaultResolver
        .resolve_dh(&DHChoice::Curve25519)
        .expect("curve25519 is built in");
    // Any private key will do; clamping makes it a multiple of 8.
    dh.set(&[0x5a; 32]);
    let mut shared = [0u8; 32];
    dh.dh(public, &mut shared).is_err() || shared == [0; 32]
}

/// 32 bytes from the operating system's random source (a cookie secret).
pub fn random_secret() -> [u8; 32] {
    use snow::resolvers::{CryptoResolver, DefaultResolver};
    let mut s = [0u8; 32];
    DefaultResolver
        .resolve_rng()
        .expect("the default resolver has an RNG")
        .try_fill_bytes(&mut s)
        .expect("the OS random source works");
    s
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Parses 64 hex digits into a key.
pub fn parse_key(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, k) in k.iter_mut().enumerate() {
        *k = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(k)
}

/// Settings of a node's links.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    pub keypair: Keypair,
    /// The relays: `LinkId(i)` is entry `i` (identity and address). This
    /// node's own entry, if present, is never linked.
    pub directory: Vec<(Identity, SocketAddr)>,
    /// Accept handshakes from keys not in the directory (clients).
    pub accept_clients: bool,
    /// Client links at most.
    pub max_clients: usize,
    /// Answered handshakes of new clients that have not confirmed yet, at
    /// most; beyond it the oldest is forgotten.
    pub max_half_open: usize,
    /// AEAD on every datagram. Off is test-only (measuring crypto cost):
    /// both ends must agree or the handshake is refused.
    pub encrypt: bool,
    pub handshake_rto: Dur,
    pub handshake_timeout: Dur,
    pub keepalive: Dur,
    pub idle_timeout: Dur,
    /// Frames held per link while its handshake runs.
    pub max_queued: usize,
    /// First session index (any value; makes runs reproducible in tests).
    pub index_seed: u32,
    /// INITs given Diffie-Hellman work per second (a token bucket holding
    /// one second's worth) before INITs need a cookie (see the module
    /// documentation).
    pub handshakes_per_second: u32,
    /// The secret cookies derive from. Drivers draw it at random; the
    /// default (zeros) is for tests.
    pub cookie_secret: [u8; 32],
}

impl LinkConfig {
    pub fn new(keypair: Keypair, directory: Vec<(Identity, SocketAddr)>) -> LinkConfig {
        LinkConfig {
            keypair,
            directory,
            accept_clients: true,
            max_clients: 10_000,
            max_half_open: 1024,
            encrypt: true,
            handshake_rto: Dur::from_millis(250),
            handshake_timeout: Dur::from_secs(15),
            keepalive: Dur::from_secs(5),
            idle_timeout: Dur::from_secs(30),
            max_queued: 256,
            index_seed: 1,
            handshakes_per_second: 200,
            cookie_secret: [0; 32],
        }
    }
}

/// What the node above should know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// A session is up. `replaced`: it replaced a working one (the peer
    /// restarted); everything that depended on the old one is gone.
    Up {
        link: LinkId,
        key: Identity,
        replaced: bool,
    },
    /// The handshake failed, the peer went silent, or this node closed the
    /// link.
    Down { link: LinkId },
    /// The peer closed the link with a CLOSE frame: it is down, as after
    /// `Down`.
    Closed { link: LinkId, reason: CloseReason },
}

/// Why a peer closed a link (the byte after [`FRAME_CLOSE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The node is shutting down.
    Shutdown,
    /// A new client's handshake when the node already had `max_clients`.
    Full,
    /// A new client's handshake at a node that takes no clients
    /// (`accept_clients` is off).
    NoClients,
    /// A reason this version does not know.
    Other(u8),
}

impl CloseReason {
    pub fn to_u8(self) -> u8 {
        match self {
            CloseReason::Shutdown => 0,
            CloseReason::Full => 1,
            CloseReason::NoClients => 2,
            CloseReason::Other(b) => b,
        }
    }
    pub fn from_u8(b: u8) -> CloseReason {
        match b {
            0 => CloseReason::Shutdown,
            1 => CloseReason::Full,
            2 => CloseReason::NoClients,
            b => CloseReason::Other(b),
        }
    }
}

/// Counters; every dropped datagram is in exactly one of the drop counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub datagrams_in: u64,
    pub bytes_in: u64,
    pub datagrams_out: u64,
    pub bytes_out: u64,
    pub handshakes_initiated: u64,
    pub handshakes_completed: u64,
    pub handshakes_answered: u64,
    pub handshake_retransmits: u64,
    pub handshake_timeouts: u64,
    /// Simultaneous initiations resolved by the key order.
    pub handshake_collisions: u64,
    pub keepalives_out: u64,
    pub links_down: u64,
    // Drops:
    /// Too short, unknown type, wrong length.
    pub malformed: u64,
    /// Handshake messages that did not authenticate or decrypt.
    pub handshake_failures: u64,
    /// Handshakes refused: encryption mode mismatch, own key, client limit
    /// or no clients taken (such a client is answered and sent a CLOSE).
    pub handshake_refused: u64,
    /// DATA for no session or from the wrong address, INIT from a key we do
    /// not accept, or a copy of an answered INIT from another address.
    pub unknown_peer: u64,
    /// DATA that failed authentication.
    pub auth_failures: u64,
    /// DATA whose counter was seen before or is older than the window; a
    /// second COOKIE for one INIT.
    pub replays: u64,
    /// PLAIN datagrams at an encrypting node, or DATA at a plaintext session.
    pub plaintext_rejected: u64,
    /// Frames dropped: no session could be had, or the queue was full.
    pub frames_dropped: u64,
    // Not datagram drops:
    /// Answered handshakes of new clients forgotten unconfirmed: evicted
    /// from a full table or expired.
    pub half_open_dropped: u64,
    /// INITs answered with a COOKIE (under load, without a valid cookie).
    pub cookies_sent: u64,
    /// COOKIEs accepted; the INIT went out again with the cookie.
    pub cookies_received: u64,
    /// INITs with a valid cookie dropped under load: their source sent
    /// more than [`SOURCE_INITS_PER_SECOND`], or [`MAX_SOURCES`] others
    /// were being limited. (A drop counter.)
    pub rate_limited: u64,
    // Not datagram drops:
    /// CLOSE frames sent (shutdown, or a client confirming past
    /// `max_clients`).
    pub closes_sent: u64,
    /// CLOSE frames and refusing RESPs received; their links went down at
    /// once.
    pub closes_received: u64,
}

struct Session {
    ts: StatelessTransportState,
    local: u32,
    remote: u32,
    tx: u64,
    replay: ReplayWindow,
    addr: SocketAddr,
    plain: bool,
    /// Responder: the initiator's ephemeral key and our RESP, to answer a
    /// repeated INIT without new crypto.
    resp: Option<([u8; 32], Vec<u8>)>,
}

struct Initiation {
    hs: HandshakeState,
    local: u32,
    msg: Vec<u8>,
    next_at: Time,
    rto: Dur,
    give_up: Time,
    /// A COOKIE was taken for this INIT; later ones are ignored (a
    /// replayed COOKIE must not make us send the INIT again and again).
    cookie_taken: bool,
}

struct Peer {
    key: Identity,
    addr: SocketAddr,
    client: bool,
    current: Option<Session>,
    previous: Option<Session>,
    pending: Option<Session>,
    pending_since: Time,
    init: Option<Initiation>,
    queue: VecDeque<Vec<u8>>,
    last_recv: Time,
    last_sent: Time,
    /// The responder's cookie for our address, and when it came.
    cookie: Option<([u8; MAC_LEN], Time)>,
    /// The peer closed our last link (a CLOSE frame) and no link has come
    /// up since: the next handshake gives up after [`CLOSED_PEER_GIVE_UP`].
    closed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Current,
    Previous,
    Pending,
    Init,
    /// A new client's answered handshake (in `Links::half`; no link yet).
    HalfOpen,
}

/// The link id `by_index` holds for a half-open session, which has none.
const NO_LINK: LinkId = LinkId(u32::MAX);

/// A new client's session, answered and not yet confirmed.
struct HalfOpen {
    key: Identity,
    s: Session,
    since: Time,
}

/// All links of a node. See the module documentation.
pub struct Links {
    cfg: LinkConfig,
    params: NoiseParams,
    peers: Vec<Option<Peer>>,
    by_key: HashMap<Identity, LinkId>,
    by_index: HashMap<u32, (LinkId, Slot)>,
    next_index: u32,
    clients: usize,
    /// New clients' answered handshakes by session index, and the indices
    /// in the order they were answered (entries removed from `half` stay in
    /// `half_order` until they reach its front).
    half: HashMap<u32, HalfOpen>,
    half_order: VecDeque<u32>,
    half_by_key: HashMap<Identity, u32>,
    /// Client slots whose link went down; a new client takes one of these
    /// before `peers` grows, so `peers` holds at most the directory plus
    /// `max_clients` entries however many clients come and go.
    free: Vec<LinkId>,
    out: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<LinkEvent>,
    next_check: Option<Time>,
    stats: LinkStats,
    /// INITs given Diffie-Hellman work: at most `handshakes_per_second`.
    handshakes: Gcra,
    /// While loaded, INITs admitted by their cookie, per source.
    sources: BTreeMap<Source, Gcra>,
    /// When `sources` was last swept of idle entries.
    sources_swept: Time,
}

impl fmt::Debug for Links {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Links")
            .field("peers", &self.peers.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Links {
    pub fn new(cfg: LinkConfig) -> Links {
        let mut peers = Vec::new();
        let mut by_key = HashMap::new();
        for (i, (key, addr)) in cfg.directory.iter().enumerate() {
            by_key.insert(*key, LinkId(i as u32));
            peers.push(Some(Peer::new(*key, *addr, false)));
        }
        Links {
            next_index: cfg.index_seed,
            cfg,
            params: params(),
            peers,
            by_key,
            by_index: HashMap::new(),
            clients: 0,
            half: HashMap::new(),
            half_order: VecDeque::new(),
            half_by_key: HashMap::new(),
            free: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            next_check: None,
            stats: LinkStats::default(),
            handshakes: Gcra::default(),
            sources: BTreeMap::new(),
            sources_swept: Time::ZERO,
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }
    pub fn public_key(&self) -> Identity {
        self.cfg.keypair.public
    }
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
    /// Links with a working session.
    pub fn links_up(&self) -> usize {
        self.peers
            .iter()
            .flatten()
            .filter(|p| p.current.is_some())
            .count()
    }
    pub fn client_count(&self) -> usize {
        self.clients
    }
    /// The peer's static key.
    pub fn peer_key(&self, l: LinkId) -> Option<Identity> {
        self.peer(l).map(|p| p.key)
    }
    /// Where datagrams for the link go.
    pub fn peer_addr(&self, l: LinkId) -> Option<SocketAddr> {
        self.peer(l)
            .map(|p| p.current.as_ref().map_or(p.addr, |s| s.addr))
    }
    pub fn is_up(&self, l: LinkId) -> bool {
        self.peer(l).is_some_and(|p| p.current.is_some())
    }

    fn peer(&self, l: LinkId) -> Option<&Peer> {
        self.peers.get(l.0 as usize).and_then(|p| p.as_ref())
    }

    fn wake_at(&mut self, t: Time) {
        if self.next_check.is_none_or(|n| t < n) {
            self.next_check = Some(t);
        }
    }

    fn alloc_index(&mut self, l: LinkId, slot: Slot) -> u32 {
        loop {
            let i = self.next_index;
            self.next_index = self.next_index.wrapping_add(1);
            if i != 0 && !self.by_index.contains_key(&i) {
                self.by_index.insert(i, (l, slot));
                return i;
            }
        }
    }

    fn flags(&self) -> u8 {
        if self.cfg.encrypt {
            0
        } else {
            FLAG_PLAIN
        }
    }

    // ------------------------------------------------------------------
    // Input

    /// A datagram arrived from `from`. If it carried a frame for the node
    /// above, the frame is in `frame` and its link is returned.
    pub fn handle_datagram(
        &mut self,
        now: Time,
        from: SocketAddr,
        data: &[u8],
        frame: &mut Vec<u8>,
    ) -> Option<LinkId> {
        self.stats.datagrams_in += 1;
        self.stats.bytes_in += data.len() as u64;
        match data.first() {
            Some(&TYPE_DATA) | Some(&TYPE_PLAIN) => self.on_data(now, from, data, frame),
            Some(&TYPE_INIT) => {
                self.on_init(now, from, data);
                None
            }
            Some(&TYPE_RESP) => {
                self.on_resp(now, from, data);
                None
            }
            Some(&TYPE_COOKIE) => {
                self.on_cookie(now, from, data);
                None
            }
            _ => {
                self.stats.malformed += 1;
                None
            }
        }
    }

    fn on_data(
        &mut self,
        now: Time,
        from: SocketAddr,
        data: &[u8],
        frame: &mut Vec<u8>,
    ) -> Option<LinkId> {
        if data.len() < DATA_HEADER_LEN {
            self.stats.malformed += 1;
            return None;
        }
        let idx = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        let mut c = [0u8; 8];
        c.copy_from_slice(&data[5..13]);
        let ctr = u64::from_be_bytes(c);
        let Some(&(l, slot)) = self.by_index.get(&idx) else {
            self.stats.unknown_peer += 1;
            return None;
        };
        if slot == Slot::HalfOpen {
            return self.on_half_open_data(now, from, idx, ctr, data, frame);
        }
        let peer = self.peers[l.0 as usize].as_mut().expect("indexed peer");
        let s = match slot {
            Slot::Current => peer.current.as_mut(),
            Slot::Previous => peer.previous.as_mut(),
            Slot::Pending => peer.pending.as_mut(),
            Slot::Init | Slot::HalfOpen => None,
        };
        let Some(s) = s else {
            self.stats.unknown_peer += 1;
            return None;
        };
        open_data(&mut self.stats, s, from, ctr, data, frame)?;
        peer.last_recv = now;
        if slot == Slot::Pending {
            self.promote_pending(now, l);
        }
        if frame.first() == Some(&FRAME_CLOSE) {
            self.on_close(l, frame);
            return None;
        }
        if frame.is_empty() {
            return None;
        }
        Some(l)
    }

    /// A CLOSE frame on link `l`: the link goes down at once.
    fn on_close(&mut self, l: LinkId, frame: &[u8]) {
        let &[_, reason] = frame else {
            self.stats.malformed += 1;
            return;
        };
        self.closed_by_peer(l, CloseReason::from_u8(reason));
    }

    /// The peer closed link `l` (a CLOSE, or a RESP that refuses us): down
    /// at once, and the next handshake to it is short.
    fn closed_by_peer(&mut self, l: LinkId, reason: CloseReason) {
        self.stats.closes_received += 1;
        if let Some(peer) = self.peers.get_mut(l.0 as usize).and_then(|p| p.as_mut()) {
            peer.closed = true;
        }
        self.take_down_as(l, LinkEvent::Closed { link: l, reason });
    }

    /// DATA for a new client's answered handshake: if it authenticates, the
    /// client is confirmed and gets its link.
    fn on_half_open_data(
        &mut self,
        now: Time,
        from: SocketAddr,
        idx: u32,
        ctr: u64,
        data: &[u8],
        frame: &mut Vec<u8>,
    ) -> Option<LinkId> {
        let Some(h) = self.half.get_mut(&idx) else {
            self.stats.unknown_peer += 1;
            return None;
        };
        open_data(&mut self.stats, &mut h.s, from, ctr, data, frame)?;
        let mut h = self.forget_half_open(idx).expect("present");
        if frame.first() == Some(&FRAME_CLOSE) {
            // The client gave up before it used its link.
            if frame.len() == 2 {
                self.stats.closes_received += 1;
            } else {
                self.stats.malformed += 1;
            }
            return None;
        }
        if self.by_key.contains_key(&h.key) {
            self.stats.handshake_refused += 1;
            return None;
        }
        if self.clients >= self.cfg.max_clients {
            // Tell the client, so that it does not wait for its link to
            // time out.
            self.stats.handshake_refused += 1;
            self.send_close(&mut h.s, CloseReason::Full);
            return None;
        }
        let mut peer = Peer::new(h.key, from, true);
        peer.last_recv = now;
        peer.last_sent = now;
        peer.current = Some(h.s);
        let l = match self.free.pop() {
            Some(l) => {
                self.peers[l.0 as usize] = Some(peer);
                l
            }
            None => {
                self.peers.push(Some(peer));
                LinkId(self.peers.len() as u32 - 1)
            }
        };
        self.by_key.insert(h.key, l);
        self.by_index.insert(idx, (l, Slot::Current));
        self.clients += 1;
        self.events.push_back(LinkEvent::Up {
            link: l,
            key: h.key,
            replaced: false,
        });
        self.wake_at(now + self.cfg.keepalive.min(self.cfg.idle_timeout));
        if frame.is_empty() {
            return None;
        }
        Some(l)
    }

    /// Removes a half-open session (its index stays in `half_order` until
    /// it reaches the front).
    fn forget_half_open(&mut self, idx: u32) -> Option<HalfOpen> {
        let h = self.half.remove(&idx)?;
        self.by_index.remove(&idx);
        if self.half_by_key.get(&h.key) == Some(&idx) {
            self.half_by_key.remove(&h.key);
        }
        Some(h)
    }

    /// Drops half-open sessions beyond `max_half_open` (oldest first) and
    /// those older than `handshake_timeout`; returns when the next expires.
    fn prune_half_open(&mut self, now: Time) -> Option<Time> {
        while let Some(&idx) = self.half_order.front() {
            let Some(h) = self.half.get(&idx) else {
                self.half_order.pop_front();
                continue;
            };
            let expires = h.since + self.cfg.handshake_timeout;
            if self.half.len() <= self.cfg.max_half_open && expires > now {
                return Some(expires);
            }
            self.half_order.pop_front();
            self.forget_half_open(idx);
            self.stats.half_open_dropped += 1;
        }
        None
    }

    fn promote_pending(&mut self, now: Time, l: LinkId) {
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        let Some(new) = peer.pending.take() else {
            return;
        };
        let replaced = peer.current.is_some();
        if let Some(old) = peer.previous.take() {
            self.by_index.remove(&old.local);
        }
        if let Some(cur) = peer.current.take() {
            self.by_index.insert(cur.local, (l, Slot::Previous));
            peer.previous = Some(cur);
        }
        self.by_index.insert(new.local, (l, Slot::Current));
        peer.current = Some(new);
        peer.closed = false;
        let key = peer.key;
        self.events.push_back(LinkEvent::Up {
            link: l,
            key,
            replaced,
        });
        self.flush_queue(now, l);
        self.wake_at(now + self.cfg.keepalive.min(self.cfg.idle_timeout));
    }

    fn on_init(&mut self, now: Time, from: SocketAddr, data: &[u8]) {
        if data.len() != INIT_LEN {
            self.stats.malformed += 1;
            return;
        }
        let sender = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        let msg1 = &data[5..5 + MSG1_LEN];
        let mut e = [0u8; 32];
        e.copy_from_slice(&msg1[..32]);
        // A repeated INIT (our RESP was lost): answer with the same RESP.
        let sessions = self
            .peers
            .iter()
            .flatten()
            .flat_map(|p| [&p.current, &p.pending].into_iter().flatten())
            .chain(self.half.values().map(|h| &h.s));
        for s in sessions {
            if let Some((e2, resp)) = &s.resp {
                if *e2 == e && s.remote == sender {
                    if s.addr == from {
                        self.out.push_back((from, resp.clone()));
                    } else {
                        // A copy from elsewhere (only the key's holder can
                        // make an INIT with a fresh `e`): answering it would
                        // replace the real initiator's session.
                        self.stats.unknown_peer += 1;
                    }
                    return;
                }
            }
        }
        if !self.admit_init(now, from, data) {
            return;
        }
        let mut hs = match snow::Builder::new(self.params.clone())
            .local_private_key(&self.cfg.keypair.private)
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.build_responder())
        {
            Ok(hs) => hs,
            Err(_) => return,
        };
        let mut payload = [0u8; 64];
        let n = match hs.read_message(msg1, &mut payload) {
            Ok(n) => n,
            Err(_) => {
                self.stats.handshake_failures += 1;
                return;
            }
        };
        if n != 1 || payload[0] & !FLAG_PLAIN != 0 {
            self.stats.handshake_failures += 1;
            return;
        }
        if payload[0] != self.flags() {
            self.stats.handshake_refused += 1;
            return;
        }
        let Some(rs) = hs.get_remote_static() else {
            self.stats.handshake_failures += 1;
            return;
        };
        let mut key = [0u8; 32];
        key.copy_from_slice(rs);
        if key == self.cfg.keypair.public {
            self.stats.handshake_refused += 1;
            return;
        }
        let l = match self.by_key.get(&key) {
            Some(&l) => l,
            None if self.cfg.accept_clients && self.clients < self.cfg.max_clients => {
                return self.answer_new_client(now, from, sender, e, hs, key);
            }
            None => {
                let reason = if self.cfg.accept_clients {
                    CloseReason::Full
                } else {
                    CloseReason::NoClients
                };
                return self.refuse_new_client(from, sender, e, hs, reason);
            }
        };
        // Both sides initiating: the smaller key keeps its own handshake.
        let ours_wins = self.cfg.keypair.public < key;
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        if let Some(init) = &peer.init {
            self.stats.handshake_collisions += 1;
            if ours_wins {
                return;
            }
            let idx = init.local;
            peer.init = None;
            self.by_index.remove(&idx);
        }
        let flags = self.flags();
        let Some(session) = self.respond(from, sender, e, hs, (l, Slot::Pending), flags) else {
            return;
        };
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        if let Some(old) = peer.pending.replace(session) {
            self.by_index.remove(&old.local);
        }
        peer.pending_since = now;
        let has_current = peer.current.is_some();
        if !has_current {
            peer.last_recv = now;
            peer.last_sent = now;
            // Nothing to protect: use the new session at once.
            self.promote_pending(now, l);
        } else {
            self.wake_at(now + self.cfg.idle_timeout);
        }
    }

    /// The cookie of address `a` in the epoch `back` epochs before `now`'s.
    fn cookie(&self, now: Time, a: SocketAddr, back: u64) -> [u8; MAC_LEN] {
        let epoch = (now.as_nanos() / COOKIE_EPOCH.as_nanos()).wrapping_sub(back);
        let secret = mac16(&self.cfg.cookie_secret, &[&epoch.to_be_bytes()]);
        mac16(&secret, &[&addr_bytes(a)])
    }

    /// Whether an INIT (not a repeat of an answered one) may have the
    /// Diffie-Hellman work done: yes while the node is not loaded (INITs
    /// come no faster than `handshakes_per_second`), or if its `mac`
    /// carries a valid cookie for `from` and its source is within
    /// [`SOURCE_INITS_PER_SECOND`]. Otherwise a COOKIE goes back, or, for a
    /// source over its limit, nothing.
    fn admit_init(&mut self, now: Time, from: SocketAddr, data: &[u8]) -> bool {
        let rate = u64::from(self.cfg.handshakes_per_second.max(1));
        if self.handshakes.admit(now, rate, rate) {
            return true;
        }
        let cookie = self.cookie(now, from, 0);
        let (body, mac) = data.split_at(data.len() - MAC_LEN);
        let valid = |c: &[u8; MAC_LEN]| mac16(c, &[body]) == mac;
        if !valid(&cookie) && !valid(&self.cookie(now, from, 1)) {
            self.send_cookie(from, data, cookie);
            return false;
        }
        if !self.source_admits(now, Source::of(from)) {
            self.stats.rate_limited += 1;
            return false;
        }
        // Admitted by its cookie: it still counts towards the load.
        self.handshakes.charge(now, rate, rate);
        true
    }

    /// The per-source limit on cookie-bearing INITs under load.
    fn source_admits(&mut self, now: Time, src: Source) -> bool {
        if !self.sources.contains_key(&src) && self.sources.len() >= MAX_SOURCES {
            // Forget the sources whose bucket has refilled, at most once a
            // second (each sweep walks the whole table).
            if now >= self.sources_swept + Dur::SECOND {
                self.sources_swept = now;
                self.sources.retain(|_, g| !g.is_full(now));
            }
            if self.sources.len() >= MAX_SOURCES {
                return false;
            }
        }
        self.sources
            .entry(src)
            .or_default()
            .admit(now, SOURCE_INITS_PER_SECOND, SOURCE_INIT_BURST)
    }

    /// Answers an INIT with a COOKIE carrying `cookie`.
    fn send_cookie(&mut self, from: SocketAddr, data: &[u8], cookie: [u8; MAC_LEN]) {
        let sender = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        let tag = cookie_tag(&self.cfg.keypair.public, &cookie, sender, &data[5..37]);
        let mut d = Vec::with_capacity(COOKIE_MSG_LEN);
        d.push(TYPE_COOKIE);
        d.extend_from_slice(&sender.to_be_bytes());
        d.extend_from_slice(&cookie);
        d.extend_from_slice(&tag);
        self.stats.cookies_sent += 1;
        self.out.push_back((from, d));
    }

    /// A COOKIE for one of our handshakes: keep the cookie, put it in the
    /// INIT's `mac` and send the INIT again.
    fn on_cookie(&mut self, now: Time, from: SocketAddr, data: &[u8]) {
        if data.len() != COOKIE_MSG_LEN {
            self.stats.malformed += 1;
            return;
        }
        let receiver = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        let Some(&(l, Slot::Init)) = self.by_index.get(&receiver) else {
            self.stats.unknown_peer += 1;
            return;
        };
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        let Some(init) = peer.init.as_mut().filter(|_| peer.addr == from) else {
            self.stats.unknown_peer += 1;
            return;
        };
        if init.cookie_taken {
            self.stats.replays += 1;
            return;
        }
        let (cookie, tag) = data[5..].split_at(MAC_LEN);
        if cookie_tag(&peer.key, cookie, receiver, &init.msg[5..37]) != tag {
            self.stats.handshake_failures += 1;
            return;
        }
        init.cookie_taken = true;
        let mut c = [0u8; MAC_LEN];
        c.copy_from_slice(cookie);
        peer.cookie = Some((c, now));
        set_mac(&mut init.msg, Some(&c));
        self.stats.cookies_received += 1;
        self.out.push_back((peer.addr, init.msg.clone()));
    }

    /// Writes and queues the RESP to an INIT; the responder's session, its
    /// index registered as `(l, slot)`.
    fn respond(
        &mut self,
        from: SocketAddr,
        sender: u32,
        e: [u8; 32],
        mut hs: HandshakeState,
        (l, slot): (LinkId, Slot),
        flags: u8,
    ) -> Option<Session> {
        let local = self.alloc_index(l, slot);
        let mut msg2 = vec![0u8; 9 + MSG2_LEN];
        msg2[0] = TYPE_RESP;
        msg2[1..5].copy_from_slice(&local.to_be_bytes());
        msg2[5..9].copy_from_slice(&sender.to_be_bytes());
        let flags = [flags];
        let ts = match hs
            .write_message(&flags, &mut msg2[9..])
            .and_then(|_| hs.into_stateless_transport_mode())
        {
            Ok(ts) => ts,
            Err(_) => {
                self.by_index.remove(&local);
                self.stats.handshake_failures += 1;
                return None;
            }
        };
        self.out.push_back((from, msg2.clone()));
        self.stats.handshakes_answered += 1;
        Some(Session {
            ts,
            local,
            remote: sender,
            tx: 0,
            replay: ReplayWindow::default(),
            addr: from,
            plain: !self.cfg.encrypt,
            resp: Some((e, msg2)),
        })
    }

    /// Answers a new client's INIT with a RESP that refuses it (`reason`
    /// in the RESP's authenticated flags) and keeps nothing: the client
    /// learns in one round trip why it gets no link, instead of retrying
    /// until `handshake_timeout`. One datagram, smaller than the INIT.
    fn refuse_new_client(
        &mut self,
        from: SocketAddr,
        sender: u32,
        e: [u8; 32],
        hs: HandshakeState,
        reason: CloseReason,
    ) {
        self.stats.handshake_refused += 1;
        let flags = self.flags() | ((reason.to_u8() << 1) & FLAGS_REFUSED);
        if let Some(s) = self.respond(from, sender, e, hs, (NO_LINK, Slot::HalfOpen), flags) {
            self.by_index.remove(&s.local);
        }
    }

    /// Seals a CLOSE with `reason` in session `s` and queues it.
    fn send_close(&mut self, s: &mut Session, reason: CloseReason) {
        self.stats.closes_sent += 1;
        queue_sealed(
            &mut self.stats,
            &mut self.out,
            s,
            &[FRAME_CLOSE, reason.to_u8()],
        );
    }

    /// Answers a new client's INIT; it gets a link once it confirms.
    fn answer_new_client(
        &mut self,
        now: Time,
        from: SocketAddr,
        sender: u32,
        e: [u8; 32],
        hs: HandshakeState,
        key: Identity,
    ) {
        let flags = self.flags();
        let Some(s) = self.respond(from, sender, e, hs, (NO_LINK, Slot::HalfOpen), flags) else {
            return;
        };
        let idx = s.local;
        // A newer handshake of the same key replaces the older one.
        if let Some(&old) = self.half_by_key.get(&key) {
            self.forget_half_open(old);
        }
        self.half.insert(idx, HalfOpen { key, s, since: now });
        self.half_by_key.insert(key, idx);
        self.half_order.push_back(idx);
        if self.half_order.len() > 2 * self.cfg.max_half_open.max(1) {
            // Replaced and confirmed entries pile up behind a live front.
            let half = &self.half;
            self.half_order.retain(|i| half.contains_key(i));
        }
        if let Some(t) = self.prune_half_open(now) {
            self.wake_at(t);
        }
    }

    fn on_resp(&mut self, now: Time, from: SocketAddr, data: &[u8]) {
        if data.len() != 9 + MSG2_LEN {
            self.stats.malformed += 1;
            return;
        }
        let sender = u32::from_be_bytes([data[1], data[2], data[3], data[4]]);
        let receiver = u32::from_be_bytes([data[5], data[6], data[7], data[8]]);
        let Some(&(l, Slot::Init)) = self.by_index.get(&receiver) else {
            self.stats.unknown_peer += 1;
            return;
        };
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        if peer.addr != from {
            self.stats.unknown_peer += 1;
            return;
        }
        let Some(mut init) = peer.init.take() else {
            self.stats.unknown_peer += 1;
            return;
        };
        self.by_index.remove(&init.local);
        let mut payload = [0u8; 64];
        let (ok, refused) = match init.hs.read_message(&data[9..], &mut payload) {
            Ok(1) => (
                payload[0] & !FLAGS_REFUSED == self.flags(),
                (payload[0] & FLAGS_REFUSED) >> 1,
            ),
            _ => (false, 0),
        };
        if ok && refused != 0 {
            // The responder (its key proven) takes no more clients.
            self.closed_by_peer(l, CloseReason::from_u8(refused));
            return;
        }
        let ts = if ok {
            init.hs.into_stateless_transport_mode().ok()
        } else {
            None
        };
        let Some(ts) = ts else {
            // Forged or mangled: start over with a fresh handshake (the
            // state of this one is spent).
            self.stats.handshake_failures += 1;
            let give_up = init.give_up;
            self.start_init(now, l);
            if let Some(i) = self.peers[l.0 as usize]
                .as_mut()
                .and_then(|p| p.init.as_mut())
            {
                i.give_up = give_up;
            }
            return;
        };
        let local = init.local;
        self.by_index.insert(local, (l, Slot::Pending));
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        if let Some(old) = peer.pending.take() {
            self.by_index.remove(&old.local);
        }
        peer.pending = Some(Session {
            ts,
            local,
            remote: sender,
            tx: 0,
            replay: ReplayWindow::default(),
            addr: from,
            plain: !self.cfg.encrypt,
            resp: None,
        });
        peer.last_recv = now;
        self.stats.handshakes_completed += 1;
        let queued = !peer.queue.is_empty();
        self.promote_pending(now, l);
        if !queued {
            // Confirm the session to the responder.
            self.send_keepalive(now, l);
        }
    }

    // ------------------------------------------------------------------
    // Output

    /// Seals a frame for link `l`: the datagram and where to send it, or
    /// `None` if the frame was queued behind a handshake (or dropped: no
    /// session can be had, or the queue is full).
    pub fn seal(&mut self, now: Time, l: LinkId, frame: &[u8]) -> Option<(SocketAddr, Vec<u8>)> {
        let mut d = Vec::new();
        let to = self.seal_into(now, l, frame, &mut d)?;
        Some((to, d))
    }

    /// [`Links::seal`] that appends the datagram to `out` (a driver's send
    /// buffer, reused from datagram to datagram) instead of allocating it;
    /// `out` is unchanged when `None` is returned.
    pub fn seal_into(
        &mut self,
        now: Time,
        l: LinkId,
        frame: &[u8],
        out: &mut Vec<u8>,
    ) -> Option<SocketAddr> {
        let peer = self.peers.get_mut(l.0 as usize).and_then(|p| p.as_mut());
        let Some(peer) = peer.filter(|_| frame.first() != Some(&FRAME_CLOSE)) else {
            // No such link, or the link layer's own frame type.
            self.stats.frames_dropped += 1;
            return None;
        };
        if let Some(s) = peer.current.as_mut() {
            peer.last_sent = now;
            let n = encrypt_into(s, frame, out);
            self.stats.datagrams_out += 1;
            self.stats.bytes_out += n as u64;
            return Some(s.addr);
        }
        if peer.client && peer.pending.is_none() {
            // We cannot reach a client that has no session.
            self.stats.frames_dropped += 1;
            return None;
        }
        if peer.queue.len() >= self.cfg.max_queued {
            self.stats.frames_dropped += 1;
            return None;
        }
        peer.queue.push_back(frame.to_vec());
        if peer.init.is_none() && peer.pending.is_none() && !peer.client {
            self.start_init(now, l);
        }
        None
    }

    fn start_init(&mut self, now: Time, l: LinkId) {
        let Some(peer) = self.peers.get(l.0 as usize).and_then(|p| p.as_ref()) else {
            return;
        };
        let key = peer.key;
        let addr = peer.addr;
        let closed = peer.closed;
        let hs = snow::Builder::new(self.params.clone())
            .local_private_key(&self.cfg.keypair.private)
            .and_then(|b| b.remote_public_key(&key))
            .and_then(|b| b.prologue(PROLOGUE))
            .and_then(|b| b.build_initiator());
        let Ok(mut hs) = hs else {
            return;
        };
        // A cookie from this responder in the last epoch is still valid.
        let cookie = peer
            .cookie
            .filter(|(_, at)| now.since(*at) < COOKIE_EPOCH)
            .map(|(c, _)| c);
        let local = self.alloc_index(l, Slot::Init);
        let mut msg = vec![0u8; INIT_LEN];
        msg[0] = TYPE_INIT;
        msg[1..5].copy_from_slice(&local.to_be_bytes());
        let flags = [self.flags()];
        if hs.write_message(&flags, &mut msg[5..5 + MSG1_LEN]).is_err() {
            self.by_index.remove(&local);
            return;
        }
        set_mac(&mut msg, cookie.as_ref());
        let rto = self.cfg.handshake_rto;
        let init = Initiation {
            hs,
            local,
            msg: msg.clone(),
            next_at: now + rto,
            rto,
            give_up: now
                + if closed {
                    self.cfg.handshake_timeout.min(CLOSED_PEER_GIVE_UP)
                } else {
                    self.cfg.handshake_timeout
                },
            cookie_taken: false,
        };
        self.peers[l.0 as usize].as_mut().expect("peer").init = Some(init);
        self.out.push_back((addr, msg));
        self.stats.handshakes_initiated += 1;
        self.wake_at(now + rto);
    }

    fn flush_queue(&mut self, now: Time, l: LinkId) {
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        let Some(s) = peer.current.as_mut() else {
            return;
        };
        while let Some(f) = peer.queue.pop_front() {
            queue_sealed(&mut self.stats, &mut self.out, s, &f);
            peer.last_sent = now;
        }
    }

    fn send_keepalive(&mut self, now: Time, l: LinkId) {
        let peer = self.peers[l.0 as usize].as_mut().expect("peer");
        if let Some(s) = peer.current.as_mut() {
            self.stats.keepalives_out += 1;
            queue_sealed(&mut self.stats, &mut self.out, s, &[]);
            peer.last_sent = now;
        }
    }

    /// Handshake messages and keepalives to send. Call until `None`.
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        self.out.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.next_check
    }

    /// Handshake retransmissions and timeouts, keepalives, idle links.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.next_check.is_some_and(|t| t > now) {
            return;
        }
        self.next_check = None;
        let mut next: Option<Time> = self.prune_half_open(now);
        let mut at = |t: Time| next = Some(next.map_or(t, |n: Time| n.min(t)));
        let mut keepalive = Vec::new();
        let mut down = Vec::new();
        for i in 0..self.peers.len() {
            let l = LinkId(i as u32);
            let Some(peer) = self.peers[i].as_mut() else {
                continue;
            };
            if let Some(init) = peer.init.as_mut() {
                if now >= init.give_up {
                    self.stats.handshake_timeouts += 1;
                    let idx = init.local;
                    peer.init = None;
                    self.by_index.remove(&idx);
                    self.stats.frames_dropped += peer.queue.len() as u64;
                    peer.queue.clear();
                    if peer.current.is_none() {
                        down.push(l);
                    }
                } else {
                    if now >= init.next_at {
                        self.out.push_back((peer.addr, init.msg.clone()));
                        self.stats.handshake_retransmits += 1;
                        init.rto = (init.rto + init.rto).min(Dur::from_secs(2));
                        init.next_at = now + init.rto;
                    }
                    at(init.next_at.min(init.give_up));
                }
            }
            if peer.pending.is_some() && peer.current.is_some() {
                let t = peer.pending_since + self.cfg.idle_timeout;
                if now >= t {
                    let s = peer.pending.take().expect("pending");
                    self.by_index.remove(&s.local);
                } else {
                    at(t);
                }
            }
            if peer.current.is_some() {
                let idle_at = peer.last_recv + self.cfg.idle_timeout;
                if now >= idle_at {
                    down.push(l);
                    continue;
                }
                at(idle_at);
                let ka = peer.last_sent + self.cfg.keepalive;
                if now >= ka {
                    keepalive.push(l);
                    at(now + self.cfg.keepalive);
                } else {
                    at(ka);
                }
            }
        }
        for l in keepalive {
            self.send_keepalive(now, l);
        }
        for l in down {
            self.take_down(l);
        }
        if let Some(t) = next {
            self.wake_at(t);
        }
    }

    fn take_down(&mut self, l: LinkId) {
        self.take_down_as(l, LinkEvent::Down { link: l });
    }

    /// Sends CLOSE with `reason` on every link that has a session and takes
    /// all links down (`Down` events follow). For a node that stops: its
    /// peers learn at once instead of after `idle_timeout`. Best effort: a
    /// lost CLOSE leaves the peer to time out as before.
    pub fn close_all(&mut self, now: Time, reason: CloseReason) {
        for i in 0..self.peers.len() {
            let l = LinkId(i as u32);
            let Some(peer) = self.peers[i].as_mut() else {
                continue;
            };
            let linked = peer.current.is_some() || peer.pending.is_some() || peer.init.is_some();
            if let Some(s) = peer.current.as_mut() {
                peer.last_sent = now;
                self.stats.closes_sent += 1;
                let close = [FRAME_CLOSE, reason.to_u8()];
                queue_sealed(&mut self.stats, &mut self.out, s, &close);
            }
            if linked {
                self.take_down(l);
            }
        }
    }

    /// Takes link `l` down and reports it with `event`.
    fn take_down_as(&mut self, l: LinkId, event: LinkEvent) {
        let Some(peer) = self.peers.get_mut(l.0 as usize).and_then(|p| p.as_mut()) else {
            return;
        };
        for s in [
            peer.current.take(),
            peer.previous.take(),
            peer.pending.take(),
        ]
        .into_iter()
        .flatten()
        {
            self.by_index.remove(&s.local);
        }
        if let Some(init) = peer.init.take() {
            self.by_index.remove(&init.local);
        }
        self.stats.frames_dropped += peer.queue.len() as u64;
        peer.queue.clear();
        let client = peer.client;
        let key = peer.key;
        self.stats.links_down += 1;
        self.events.push_back(event);
        if client {
            // The slot is free for the next new client (which may be this
            // one coming back). The node above has seen `Down` by then: it
            // takes events in order, before frames of a later handshake.
            self.peers[l.0 as usize] = None;
            self.by_key.remove(&key);
            self.clients -= 1;
            self.free.push(l);
        }
    }
}

impl Peer {
    fn new(key: Identity, addr: SocketAddr, client: bool) -> Peer {
        Peer {
            key,
            addr,
            client,
            current: None,
            previous: None,
            pending: None,
            pending_since: Time::ZERO,
            init: None,
            queue: VecDeque::new(),
            last_recv: Time::ZERO,
            last_sent: Time::ZERO,
            cookie: None,
            closed: false,
        }
    }
}

/// Sets an INIT's `mac`: under `cookie` over the other bytes, or zeros.
fn set_mac(init: &mut [u8], cookie: Option<&[u8; MAC_LEN]>) {
    let (body, mac) = init.split_at_mut(init.len() - MAC_LEN);
    match cookie {
        Some(c) => mac.copy_from_slice(&mac16(c, &[body])),
        None => mac.fill(0),
    }
}

/// Checks and opens a DATA (or PLAIN) datagram for session `s` into
/// `frame`; `None` (counted) if it comes from the wrong address, is in the
/// wrong mode, repeats a counter, or does not authenticate.
fn open_data(
    stats: &mut LinkStats,
    s: &mut Session,
    from: SocketAddr,
    ctr: u64,
    data: &[u8],
    frame: &mut Vec<u8>,
) -> Option<()> {
    let plain = data[0] == TYPE_PLAIN;
    if s.addr != from {
        stats.unknown_peer += 1;
        return None;
    }
    if plain != s.plain {
        stats.plaintext_rejected += 1;
        return None;
    }
    if !s.replay.check(ctr) {
        stats.replays += 1;
        return None;
    }
    let body = &data[DATA_HEADER_LEN..];
    frame.clear();
    if plain {
        frame.extend_from_slice(body);
    } else {
        if body.len() < TAG_LEN {
            stats.malformed += 1;
            return None;
        }
        frame.resize(body.len() - TAG_LEN, 0);
        match s.ts.read_message(ctr, body, frame) {
            Ok(n) => frame.truncate(n),
            Err(_) => {
                stats.auth_failures += 1;
                return None;
            }
        }
    }
    s.replay.insert(ctr);
    Some(())
}

/// Seals `frame` in session `s`, counts it and queues it for `s`'s address.
fn queue_sealed(
    stats: &mut LinkStats,
    out: &mut VecDeque<(SocketAddr, Vec<u8>)>,
    s: &mut Session,
    frame: &[u8],
) {
    let d = encrypt(s, frame);
    stats.datagrams_out += 1;
    stats.bytes_out += d.len() as u64;
    out.push_back((s.addr, d));
}

fn encrypt(s: &mut Session, frame: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(OVERHEAD + frame.len());
    encrypt_into(s, frame, &mut d);
    d
}

/// Appends the DATA (or PLAIN) datagram carrying `frame` to `out`; its
/// length.
fn encrypt_into(s: &mut Session, frame: &[u8], out: &mut Vec<u8>) -> usize {
    let ctr = s.tx;
    s.tx += 1;
    let start = out.len();
    out.push(if s.plain { TYPE_PLAIN } else { TYPE_DATA });
    out.extend_from_slice(&s.remote.to_be_bytes());
    out.extend_from_slice(&ctr.to_be_bytes());
    if s.plain {
        out.extend_from_slice(frame);
    } else {
        let body = start + DATA_HEADER_LEN;
        out.resize(body + frame.len() + TAG_LEN, 0);
        let n =
            s.ts.write_message(ctr, frame, &mut out[body..])
                .expect("frame fits a Noise message");
        out.truncate(body + n);
    }
    out.len() - start
}

#[cfg(test)]
mod tests;
