//! Onion encryption of relay-cell bodies: the ntor key agreement with each
//! hop and the per-hop layers, sans-IO (key material comes in through a
//! [`KeySource`]; nothing here reads a clock or OS randomness).
//!
//! # How it works
//!
//! **Handshake (ntor, tor-spec §5.1.4).** The client knows the relay's
//! static X25519 key `B` from the directory; it is also the relay's identity
//! (`ID = B`), so the onionskin is `B ‖ X` ([`ONIONSKIN_LEN`] = 64 bytes),
//! with `X = x·G` a fresh ephemeral key ([`ClientHandshake::start`]). The
//! relay checks that `B` is its own key ([`OnionError::WrongRelay`]), draws
//! `y`, and computes, with `H(x, t) = HMAC-SHA256(key = t, message = x)`:
//!
//! ```text
//! secret_input = X·y ‖ X·b ‖ ID ‖ B ‖ X ‖ Y ‖ PROTOID
//! KEY_SEED     = H(secret_input, t_key)
//! verify       = H(secret_input, t_verify)
//! auth_input   = verify ‖ ID ‖ B ‖ Y ‖ X ‖ PROTOID ‖ "Server"
//! AUTH         = H(auth_input, t_mac)           reply = Y ‖ AUTH  (REPLY_LEN = 64)
//! ```
//!
//! with `PROTOID = "hopwise-ntor-x25519-sha256-1"`, `t_mac = PROTOID ‖
//! ":mac"`, `t_key = PROTOID ‖ ":key_extract"`, `t_verify = PROTOID ‖
//! ":verify"`, `m_expand = PROTOID ‖ ":key_expand"` (tor-spec's labels with
//! our PROTOID; `ID` is 32 bytes here, not Tor's 20-byte fingerprint). The
//! client computes the same `secret_input` from `Y·x ‖ B·x` and compares
//! `AUTH` in constant time ([`OnionError::AuthFailed`]). Either side refuses
//! a Diffie-Hellman result that is all zero (a low-order point from the
//! peer: [`OnionError::WeakKey`]). Both then expand the key seed with
//! HKDF-SHA256 (RFC 5869 Expand with `PRK = KEY_SEED`, `info = m_expand`,
//! which is tor-spec §5.2.2's KDF-RFC5869) into [`KEY_MATERIAL_LEN`] bytes:
//!
//! | bytes | name | use |
//! | --- | --- | --- |
//! | 0..32 | `Df` | seeds the forward running digest (client → relay) |
//! | 32..64 | `Db` | seeds the backward running digest (relay → client) |
//! | 64..80 | `Kf` | AES-128-CTR key of the forward layer |
//! | 80..96 | `Kb` | AES-128-CTR key of the backward layer |
//!
//! [`onionskin_ephemeral`] and [`ReplayCache`] let a relay remember the `X`
//! of recent onionskins and refuse a replayed CREATE or EXTEND.
//!
//! **Layers ("tor1", tor-spec §6.1 "Relay cells", with SHA-256 for SHA-1).**
//! Each hop has a [`Layer`] per direction: an AES-128-CTR keystream (all-zero
//! initial counter block) of which every cell consumes the next 509 bytes, so
//! both ends must process a direction's cells in the same order. Encrypting
//! and decrypting are the same XOR. To send a forward cell to hop `i` the
//! client sets `recognized` (`body[1..3]`) to zero, writes the first four
//! bytes of hop `i`'s running forward digest into `digest` (`body[5..9]`),
//! and adds the layers of hops `i`, `i-1`, …, 0 ([`ClientCrypto::encrypt_forward`]).
//! The running digest is a SHA-256 state seeded with `Df` and updated with
//! every 509-byte body sent to that hop, taken with the digest field zeroed.
//! Each relay removes its layer ([`HopCrypto::relay_forward`]); the body is
//! for it if `recognized` is zero *and* the digest matches its own running
//! forward digest (only then does that digest advance). Backward cells are
//! the mirror image: the originating hop fills `recognized`/`digest` from its
//! backward digest and adds its layer ([`HopCrypto::originate_backward`]),
//! each relay closer to the client adds its own ([`HopCrypto::relay_backward`],
//! or the transport through [`HopCrypto::into_layers`]), and the client
//! removes layers from the entry outward until a hop's digest matches
//! ([`ClientCrypto::decrypt_backward`]). A false match needs `recognized`
//! (16 bits) and the digest (32 bits) to match by chance.
//!
//! **Retransmission never re-encrypts.** A forwarding relay hands its two
//! layers to BackTap ([`crate::backtap::CellLayer`]), which applies a layer
//! exactly once per cell, in sequence order, when the cell joins the
//! in-order part of its queue; the queue keeps the transformed body and a
//! retransmission resends those bytes. That is required, not just cheaper:
//! the keystream position is the cell's place in the sequence, so applying
//! a layer again (or out of order) would consume keystream meant for another
//! cell and desynchronise every later cell of the circuit.
//!
//! # Why this design, and what it does not protect against
//!
//! tor1 is Tor's deployed relay crypto, well analysed, and built only from
//! primitives with well-kept implementations (RustCrypto's `aes`, `ctr`,
//! `sha2`, `hmac`, `hkdf`; `x25519-dalek`); SHA-256 replaces SHA-1 because
//! there is no reason to start a new protocol on SHA-1. Its known weakness
//! remains: CTR mode is malleable and only the last hop checks a digest, so
//! an adversary at the entry can XOR a pattern into a cell and a colluding
//! exit can look for (and undo) it — a *tagging* attack that confirms the
//! two ends share a circuit. A tampered cell that reaches an honest
//! destination fails the digest check, and the circuit must then be torn
//! down (the keystreams and digests cannot be resynchronised). Tor proposal
//! 359 (Counter Galois Onion, CGO) would fix tagging with a wide-block
//! construction (UIV+) in which a changed bit garbles the whole cell and all
//! later ones. It was not chosen because no well-kept crate implements it,
//! and using it would mean writing the UIV+ construction and its tweakable
//! block cipher by hand.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;

use aes::Aes128;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

use crate::backtap::wire::CellBody;
use crate::backtap::CellLayer;
use crate::time::{Dur, Time};

/// Length of a CREATE/EXTEND onionskin: the relay's identity `B` (32 bytes)
/// ‖ the client's ephemeral key `X` (32 bytes).
pub const ONIONSKIN_LEN: usize = 64;
/// Length of a CREATED/EXTENDED reply: the relay's ephemeral key `Y` (32
/// bytes) ‖ `AUTH` (32 bytes).
pub const REPLY_LEN: usize = 64;
/// Bytes of key material per hop: `Df` 32 ‖ `Db` 32 ‖ `Kf` 16 ‖ `Kb` 16.
pub const KEY_MATERIAL_LEN: usize = 96;

macro_rules! protoid {
    () => {
        "hopwise-ntor-x25519-sha256-1"
    };
}
/// The ntor protocol identifier (tor-spec §5.1.4's `PROTOID`).
pub const PROTOID: &str = protoid!();
const T_MAC: &[u8] = concat!(protoid!(), ":mac").as_bytes();
const T_KEY: &[u8] = concat!(protoid!(), ":key_extract").as_bytes();
const T_VERIFY: &[u8] = concat!(protoid!(), ":verify").as_bytes();
const M_EXPAND: &[u8] = concat!(protoid!(), ":key_expand").as_bytes();

/// `recognized` within the body.
const RECOGNIZED: std::ops::Range<usize> = 1..3;
/// `digest` within the body.
const DIGEST: std::ops::Range<usize> = 5..9;

type Aes128Ctr = ctr::Ctr128BE<Aes128>;
type HmacSha256 = Hmac<Sha256>;

/// Where key material comes from: secret random bytes. The daemon passes an
/// OS-backed source; simulations and tests pass [`SeededKeys`].
pub trait KeySource {
    /// Fill `out` with fresh secret bytes.
    fn fill_bytes(&mut self, out: &mut [u8]);
}

/// A deterministic [`KeySource`] for simulations and tests: the ChaCha20
/// keystream under a key derived from `seed` (SHA-256 of a label and the
/// seed). Not secret; never use it for real keys.
pub struct SeededKeys {
    stream: chacha20::ChaCha20,
}

impl SeededKeys {
    pub fn new(seed: u64) -> Self {
        let mut h = Sha256::new();
        h.update(b"hopwise SeededKeys v1\0");
        h.update(seed.to_le_bytes());
        let key = h.finalize();
        let stream = chacha20::ChaCha20::new(&key, &[0u8; 12].into());
        SeededKeys { stream }
    }
}

impl KeySource for SeededKeys {
    fn fill_bytes(&mut self, out: &mut [u8]) {
        out.fill(0);
        self.stream.apply_keystream(out);
    }
}

impl fmt::Debug for SeededKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeededKeys { .. }")
    }
}

/// The X25519 public key of `secret` (clamped as X25519 does).
pub fn public_key(secret: &[u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(*secret)).to_bytes()
}

/// Why a handshake message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnionError {
    /// An onionskin that is not [`ONIONSKIN_LEN`] bytes, or a reply that is
    /// not [`REPLY_LEN`] bytes.
    BadLength,
    /// The onionskin names another relay's key.
    WrongRelay,
    /// The peer's ephemeral key (or the relay's key) gives an all-zero
    /// shared secret: a low-order point.
    WeakKey,
    /// The reply's `AUTH` does not match: not from the relay whose key the
    /// client used, or modified.
    AuthFailed,
}

impl fmt::Display for OnionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnionError::BadLength => "onion handshake message has the wrong length",
            OnionError::WrongRelay => "onionskin is for another relay's key",
            OnionError::WeakKey => "onion handshake key is a low-order point (zero shared secret)",
            OnionError::AuthFailed => "onion handshake reply failed authentication",
        })
    }
}
impl std::error::Error for OnionError {}

/// `H(parts, key)`: HMAC-SHA256 keyed with `key` over the concatenation.
fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// The shared part of both sides: from the two Diffie-Hellman results and
/// the public values, `AUTH` and the hop's keys.
fn ntor_keys(
    dh_ephemeral: &[u8; 32],
    dh_static: &[u8; 32],
    b: &[u8; 32],
    x: &[u8; 32],
    y: &[u8; 32],
) -> ([u8; 32], HopCrypto) {
    let id = b;
    let secret_input: [&[u8]; 7] = [dh_ephemeral, dh_static, id, b, x, y, PROTOID.as_bytes()];
    let key_seed = Zeroizing::new(hmac(T_KEY, &secret_input));
    let verify = Zeroizing::new(hmac(T_VERIFY, &secret_input));
    let auth = hmac(
        T_MAC,
        &[&verify[..], id, b, y, x, PROTOID.as_bytes(), b"Server"],
    );
    let hk = Hkdf::<Sha256>::from_prk(&key_seed[..]).expect("a 32-byte PRK is long enough");
    let mut okm = Zeroizing::new([0u8; KEY_MATERIAL_LEN]);
    hk.expand(M_EXPAND, &mut okm[..])
        .expect("96 bytes is within HKDF-SHA256's output limit");
    (auth, HopCrypto::from_key_material(&okm))
}

/// A client's half-done handshake with one relay: keep it until the reply
/// (CREATED or EXTENDED) arrives.
pub struct ClientHandshake {
    relay: [u8; 32],
    x: StaticSecret,
    x_pub: [u8; 32],
}

impl ClientHandshake {
    /// Start a handshake with the relay whose static key (identity) is
    /// `relay`: draws the ephemeral secret from `keys` and returns the
    /// onionskin to send.
    pub fn start(
        relay: &[u8; 32],
        keys: &mut dyn KeySource,
    ) -> (ClientHandshake, [u8; ONIONSKIN_LEN]) {
        let mut raw = Zeroizing::new([0u8; 32]);
        keys.fill_bytes(&mut raw[..]);
        let x = StaticSecret::from(*raw);
        let x_pub = PublicKey::from(&x).to_bytes();
        let mut skin = [0u8; ONIONSKIN_LEN];
        skin[..32].copy_from_slice(relay);
        skin[32..].copy_from_slice(&x_pub);
        (
            ClientHandshake {
                relay: *relay,
                x,
                x_pub,
            },
            skin,
        )
    }

    /// Check the relay's reply and derive the hop's keys.
    pub fn finish(self, reply: &[u8]) -> Result<HopCrypto, OnionError> {
        let reply: &[u8; REPLY_LEN] = reply.try_into().map_err(|_| OnionError::BadLength)?;
        let mut y = [0u8; 32];
        y.copy_from_slice(&reply[..32]);
        let dh_ephemeral = self.x.diffie_hellman(&PublicKey::from(y));
        let dh_static = self.x.diffie_hellman(&PublicKey::from(self.relay));
        if !dh_ephemeral.was_contributory() || !dh_static.was_contributory() {
            return Err(OnionError::WeakKey);
        }
        let (auth, hop) = ntor_keys(
            dh_ephemeral.as_bytes(),
            dh_static.as_bytes(),
            &self.relay,
            &self.x_pub,
            &y,
        );
        if bool::from(auth[..].ct_eq(&reply[32..])) {
            Ok(hop)
        } else {
            Err(OnionError::AuthFailed)
        }
    }
}

impl fmt::Debug for ClientHandshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandshake")
            .field("relay", &Hex(&self.relay))
            .finish_non_exhaustive()
    }
}

/// The relay's side: answer an onionskin. `identity` is this relay's static
/// public key `B` (the public key of `secret`, as the directory lists it);
/// the ephemeral secret is drawn from `keys`. Returns the reply to send back
/// and the hop's keys.
pub fn server_handshake(
    identity: &[u8; 32],
    secret: &[u8; 32],
    onionskin: &[u8],
    keys: &mut dyn KeySource,
) -> Result<([u8; REPLY_LEN], HopCrypto), OnionError> {
    let skin: &[u8; ONIONSKIN_LEN] = onionskin.try_into().map_err(|_| OnionError::BadLength)?;
    if skin[..32] != identity[..] {
        return Err(OnionError::WrongRelay);
    }
    let mut x = [0u8; 32];
    x.copy_from_slice(&skin[32..]);
    let x_point = PublicKey::from(x);
    let mut raw = Zeroizing::new([0u8; 32]);
    keys.fill_bytes(&mut raw[..]);
    let y_secret = StaticSecret::from(*raw);
    let y = PublicKey::from(&y_secret).to_bytes();
    let b_secret = StaticSecret::from(*secret);
    let dh_ephemeral = y_secret.diffie_hellman(&x_point);
    let dh_static = b_secret.diffie_hellman(&x_point);
    if !dh_ephemeral.was_contributory() || !dh_static.was_contributory() {
        return Err(OnionError::WeakKey);
    }
    let (auth, hop) = ntor_keys(
        dh_ephemeral.as_bytes(),
        dh_static.as_bytes(),
        identity,
        &x,
        &y,
    );
    let mut reply = [0u8; REPLY_LEN];
    reply[..32].copy_from_slice(&y);
    reply[32..].copy_from_slice(&auth);
    Ok((reply, hop))
}

/// The client's ephemeral key `X` of an onionskin (for a [`ReplayCache`]),
/// or `None` if it is not [`ONIONSKIN_LEN`] bytes.
pub fn onionskin_ephemeral(onionskin: &[u8]) -> Option<[u8; 32]> {
    if onionskin.len() != ONIONSKIN_LEN {
        return None;
    }
    let mut x = [0u8; 32];
    x.copy_from_slice(&onionskin[32..]);
    // X25519 ignores the top bit of a u-coordinate (RFC 7748 §5): both
    // encodings are the same key, so a replay cache must see one.
    x[31] &= 0x7f;
    Some(x)
}

/// The client ephemeral keys a relay has seen recently, to refuse replayed
/// onionskins. A key is remembered for `window` after it was first seen
/// (until `now >= seen + window`), and at most `capacity` keys are kept: when
/// full, the oldest is forgotten first, so a relay under a flood of fresh
/// onionskins can be made to forget (size `capacity` for the expected
/// CREATE/EXTEND rate times `window`). `now` should not decrease; if it does,
/// entries simply live longer. Deterministic (no hashing with random keys).
#[derive(Clone, Debug)]
pub struct ReplayCache {
    capacity: usize,
    window: Dur,
    /// In insertion order, with the time each was seen.
    order: VecDeque<(Time, [u8; 32])>,
    seen: BTreeSet<[u8; 32]>,
}

impl ReplayCache {
    pub fn new(capacity: usize, window: Dur) -> Self {
        ReplayCache {
            capacity,
            window,
            order: VecDeque::new(),
            seen: BTreeSet::new(),
        }
    }

    /// `true` if `x` is fresh (not seen within the window), and remembers
    /// it; `false` for a replay.
    pub fn check_and_insert(&mut self, now: Time, x: &[u8; 32]) -> bool {
        while let Some(&(t, old)) = self.order.front() {
            if now.since(t) < self.window {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&old);
        }
        if self.seen.contains(x) {
            return false;
        }
        if self.capacity == 0 {
            return true;
        }
        while self.order.len() >= self.capacity {
            if let Some((_, old)) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        self.order.push_back((now, *x));
        self.seen.insert(*x);
        true
    }

    /// Keys currently remembered (expired ones are dropped on the next
    /// [`check_and_insert`](Self::check_and_insert)).
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// One direction's layer at one hop: an AES-128-CTR keystream of which each
/// cell body takes the next 509 bytes. Adding and removing the layer are the
/// same operation.
pub struct Layer {
    cipher: Aes128Ctr,
}

impl Layer {
    fn new(key: &[u8]) -> Self {
        Layer {
            cipher: Aes128Ctr::new(key.into(), &[0u8; 16].into()),
        }
    }

    /// XOR the next 509 bytes of keystream into `body`.
    pub fn apply(&mut self, body: &mut CellBody) {
        self.cipher.apply_keystream(&mut body[..]);
    }
}

impl CellLayer for Layer {
    fn apply(&mut self, body: &mut CellBody) {
        Layer::apply(self, body);
    }
}

impl fmt::Debug for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Layer { .. }")
    }
}

/// A running digest: SHA-256 seeded with `Df` or `Db`, updated with every
/// body (digest field zeroed) of its hop and direction.
#[derive(Clone)]
struct RunningDigest(Sha256);

impl RunningDigest {
    fn new(seed: &[u8]) -> Self {
        RunningDigest(Sha256::new_with_prefix(seed))
    }

    /// Mark `body` as ours: `recognized` = 0, `digest` = the first four
    /// bytes of the updated running digest.
    fn seal(&mut self, body: &mut CellBody) {
        body[RECOGNIZED].fill(0);
        body[DIGEST].fill(0);
        self.0.update(&body[..]);
        let d = self.0.clone().finalize();
        body[DIGEST].copy_from_slice(&d[..4]);
    }

    /// Whether a decrypted `body` is ours; advances the digest only if so.
    /// `body` is unchanged either way.
    fn recognizes(&mut self, body: &mut CellBody) -> bool {
        if body[RECOGNIZED] != [0, 0] {
            return false;
        }
        let mut got = [0u8; 4];
        got.copy_from_slice(&body[DIGEST]);
        body[DIGEST].fill(0);
        let mut next = self.0.clone();
        next.update(&body[..]);
        body[DIGEST].copy_from_slice(&got);
        let d = next.clone().finalize();
        if bool::from(d[..4].ct_eq(&got)) {
            self.0 = next;
            true
        } else {
            false
        }
    }
}

/// The keys and state of one hop of a circuit, at the client or at that
/// relay: a forward and a backward [`Layer`] and the two running digests.
pub struct HopCrypto {
    forward: Layer,
    backward: Layer,
    forward_digest: RunningDigest,
    backward_digest: RunningDigest,
}

impl HopCrypto {
    fn from_key_material(k: &[u8; KEY_MATERIAL_LEN]) -> Self {
        HopCrypto {
            forward_digest: RunningDigest::new(&k[0..32]),
            backward_digest: RunningDigest::new(&k[32..64]),
            forward: Layer::new(&k[64..80]),
            backward: Layer::new(&k[80..96]),
        }
    }

    /// Relay/exit: a forward cell arrived: remove this hop's layer; `true`
    /// if it is for this hop (`recognized` == 0 and `digest` matches the
    /// running forward digest; the digest advances only then). If `false`,
    /// the body is to be forwarded (or, at the last hop, it was tampered
    /// with and the circuit must be closed).
    pub fn relay_forward(&mut self, body: &mut CellBody) -> bool {
        self.forward.apply(body);
        self.forward_digest.recognizes(body)
    }

    /// Relay/exit: originate a backward cell: `recognized` = 0, `digest`
    /// from the running backward digest, then add this hop's layer.
    pub fn originate_backward(&mut self, body: &mut CellBody) {
        self.backward_digest.seal(body);
        self.backward.apply(body);
    }

    /// Relay: a backward cell from a later hop passes through: add this
    /// hop's layer (what the transport does with the backward [`Layer`]).
    pub fn relay_backward(&mut self, body: &mut CellBody) {
        self.backward.apply(body);
    }

    /// Hand the two layers to the transport: `(forward, backward)`. The
    /// digests are dropped; the layers continue from where this hop's
    /// keystreams are.
    pub fn into_layers(self) -> (Layer, Layer) {
        (self.forward, self.backward)
    }
}

impl fmt::Debug for HopCrypto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HopCrypto { .. }")
    }
}

/// The client's [`HopCrypto`] of each hop of a circuit, entry first.
#[derive(Debug, Default)]
pub struct ClientCrypto {
    hops: Vec<HopCrypto>,
}

impl ClientCrypto {
    pub fn new() -> Self {
        ClientCrypto { hops: Vec::new() }
    }

    /// Add the next hop (after its handshake finished).
    pub fn push(&mut self, h: HopCrypto) {
        self.hops.push(h);
    }

    pub fn len(&self) -> usize {
        self.hops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hops.is_empty()
    }

    /// Seal a forward cell for hop `target` (0 = entry): set `recognized` =
    /// 0 and `digest` from that hop's running forward digest, then add that
    /// hop's layer and every layer before it (target first, entry last).
    ///
    /// # Panics
    ///
    /// If `target >= self.len()` (a caller bug, never peer input).
    pub fn encrypt_forward(&mut self, target: usize, body: &mut CellBody) {
        assert!(
            target < self.hops.len(),
            "encrypt_forward to hop {target} of a {}-hop circuit",
            self.hops.len()
        );
        self.hops[target].forward_digest.seal(body);
        for hop in self.hops[..=target].iter_mut().rev() {
            hop.forward.apply(body);
        }
    }

    /// A backward cell arrived: remove layers from the entry outward until
    /// a hop recognizes it (`recognized` == 0 and `digest` matches that
    /// hop's running backward digest): `Some(hop)`, with `body` the
    /// plaintext; or `None` if no hop does (tampered with, or not onion
    /// encrypted: the circuit must be closed, its keystreams are now out of
    /// step).
    pub fn decrypt_backward(&mut self, body: &mut CellBody) -> Option<usize> {
        for (i, hop) in self.hops.iter_mut().enumerate() {
            hop.backward.apply(body);
            if hop.backward_digest.recognizes(body) {
                return Some(i);
            }
        }
        None
    }
}

struct Hex<'a>(&'a [u8]);
impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backtap::CELL_BODY_LEN;

    fn relay_key(n: u8) -> ([u8; 32], [u8; 32]) {
        let mut secret = [0u8; 32];
        SeededKeys::new(1000 + n as u64).fill_bytes(&mut secret);
        (public_key(&secret), secret)
    }

    /// A client and relay that completed a handshake.
    fn pair(seed: u64) -> (HopCrypto, HopCrypto) {
        let (id, secret) = relay_key(0);
        let mut keys = SeededKeys::new(seed);
        let (hs, skin) = ClientHandshake::start(&id, &mut keys);
        let (reply, relay) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
        (hs.finish(&reply).unwrap(), relay)
    }

    /// A circuit: the client's crypto and each relay's hop, entry first.
    fn circuit(n: u8, seed: u64) -> (ClientCrypto, Vec<HopCrypto>) {
        let mut keys = SeededKeys::new(seed);
        let mut client = ClientCrypto::new();
        let mut relays = Vec::new();
        for i in 0..n {
            let (id, secret) = relay_key(i);
            let (hs, skin) = ClientHandshake::start(&id, &mut keys);
            let (reply, relay) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
            client.push(hs.finish(&reply).unwrap());
            relays.push(relay);
        }
        (client, relays)
    }

    fn body(fill: u8) -> CellBody {
        let mut b = [fill; CELL_BODY_LEN];
        b[0] = 2;
        b
    }

    /// Forward a sealed body through the relays: the index of the first
    /// that recognizes it.
    fn forward(relays: &mut [HopCrypto], b: &mut CellBody) -> Option<usize> {
        relays.iter_mut().position(|r| r.relay_forward(b))
    }

    /// Hop `from` originates; the hops before it add their layers.
    fn backward(relays: &mut [HopCrypto], from: usize, b: &mut CellBody) {
        relays[from].originate_backward(b);
        for r in relays[..from].iter_mut().rev() {
            r.relay_backward(b);
        }
    }

    #[test]
    fn handshake_agrees() {
        let (client, mut relay) = pair(1);
        let mut c = ClientCrypto::new();
        c.push(client);
        assert_eq!(c.len(), 1);
        for fill in 0..4u8 {
            let plain = body(fill);
            let mut b = plain;
            c.encrypt_forward(0, &mut b);
            assert_ne!(b, plain);
            assert!(relay.relay_forward(&mut b));
            assert_eq!(b[0], plain[0]);
            assert_eq!(b[RECOGNIZED], [0, 0]);
            assert_eq!(b[3..5], plain[3..5]);
            assert_eq!(b[9..], plain[9..]);
            let reply = body(fill ^ 0x55);
            let mut back = reply;
            relay.originate_backward(&mut back);
            assert_ne!(back, reply);
            assert_eq!(c.decrypt_backward(&mut back), Some(0));
            assert_eq!(back[9..], reply[9..]);
        }
    }

    #[test]
    fn wrong_relay_and_lengths() {
        let (id, secret) = relay_key(0);
        let (other, _) = relay_key(1);
        let mut keys = SeededKeys::new(2);
        let (_, skin) = ClientHandshake::start(&other, &mut keys);
        assert_eq!(
            server_handshake(&id, &secret, &skin, &mut keys).unwrap_err(),
            OnionError::WrongRelay
        );
        let (hs, skin) = ClientHandshake::start(&id, &mut keys);
        for n in [0, 32, 63, 65, 128] {
            let mut v = skin.to_vec();
            v.resize(n, 7);
            assert_eq!(
                server_handshake(&id, &secret, &v, &mut keys).unwrap_err(),
                OnionError::BadLength
            );
            assert_eq!(onionskin_ephemeral(&v), None);
        }
        assert_eq!(onionskin_ephemeral(&skin).unwrap()[..], skin[32..]);
        let (reply, _) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
        assert_eq!(hs.finish(&reply[..63]).unwrap_err(), OnionError::BadLength);
    }

    #[test]
    fn flipped_reply_byte_fails_auth() {
        let (id, secret) = relay_key(0);
        for i in 0..REPLY_LEN {
            let mut keys = SeededKeys::new(3);
            let (hs, skin) = ClientHandshake::start(&id, &mut keys);
            let (mut reply, _) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
            reply[i] ^= 0x80;
            assert_eq!(
                hs.finish(&reply).unwrap_err(),
                OnionError::AuthFailed,
                "byte {i}"
            );
        }
    }

    #[test]
    fn reply_from_another_relay_key_fails_auth() {
        let (id, secret) = relay_key(0);
        let (_, other_secret) = relay_key(1);
        let mut keys = SeededKeys::new(4);
        let (hs, skin) = ClientHandshake::start(&id, &mut keys);
        // A relay that claims `id` but holds another secret.
        let (reply, _) = server_handshake(&id, &other_secret, &skin, &mut keys).unwrap();
        assert_eq!(hs.finish(&reply).unwrap_err(), OnionError::AuthFailed);
        // The real holder's reply is accepted.
        let (hs, skin) = ClientHandshake::start(&id, &mut keys);
        let (reply, _) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
        assert!(hs.finish(&reply).is_ok());
    }

    #[test]
    fn low_order_points_are_weak() {
        let (id, secret) = relay_key(0);
        let mut keys = SeededKeys::new(5);
        // The identity element (u = 0) and the order-2 point (u = 1) give an
        // all-zero shared secret with any scalar.
        for u in [0u8, 1] {
            let mut skin = [0u8; ONIONSKIN_LEN];
            skin[..32].copy_from_slice(&id);
            skin[32] = u;
            assert_eq!(
                server_handshake(&id, &secret, &skin, &mut keys).unwrap_err(),
                OnionError::WeakKey
            );
            let (hs, _) = ClientHandshake::start(&id, &mut keys);
            let mut reply = [0u8; REPLY_LEN];
            reply[0] = u;
            assert_eq!(hs.finish(&reply).unwrap_err(), OnionError::WeakKey);
        }
    }

    #[test]
    fn seeded_keys_are_deterministic() {
        let run = |seed| {
            let (id, secret) = relay_key(0);
            let mut keys = SeededKeys::new(seed);
            let (hs, skin) = ClientHandshake::start(&id, &mut keys);
            let (reply, _) = server_handshake(&id, &secret, &skin, &mut keys).unwrap();
            let mut c = ClientCrypto::new();
            c.push(hs.finish(&reply).unwrap());
            let mut b = body(9);
            c.encrypt_forward(0, &mut b);
            (skin, reply, b)
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7).0, run(8).0);
        let mut a = [0u8; 40];
        let mut b = [0u8; 40];
        SeededKeys::new(1).fill_bytes(&mut a);
        let mut k = SeededKeys::new(1);
        k.fill_bytes(&mut b[..13]);
        k.fill_bytes(&mut b[13..]);
        assert_eq!(a, b, "the stream does not depend on how it is read");
    }

    #[test]
    fn public_key_matches_the_base_point_multiple() {
        // RFC 7748 §6.1: Alice's private and public key.
        let sk = hex32("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let pk = hex32("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_eq!(public_key(&sk), pk);
    }

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    #[test]
    fn layer_is_aes128_ctr_from_a_zero_counter_across_cells() {
        use aes::cipher::{BlockEncrypt, KeyInit};
        let key = [0x2bu8; 16];
        let aes = Aes128::new(&key.into());
        let mut expect = vec![0u8; 3 * CELL_BODY_LEN];
        for (i, chunk) in expect.chunks_mut(16).enumerate() {
            let mut block: aes::Block = (i as u128).to_be_bytes().into();
            aes.encrypt_block(&mut block);
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
        let mut layer = Layer::new(&key);
        let dynamic: &mut dyn CellLayer = &mut layer;
        for cell in 0..3 {
            let mut b = [0u8; CELL_BODY_LEN];
            dynamic.apply(&mut b);
            assert_eq!(
                b[..],
                expect[cell * CELL_BODY_LEN..(cell + 1) * CELL_BODY_LEN]
            );
        }
    }

    #[test]
    fn three_hops_forward_only_the_target_recognizes() {
        let (mut client, mut relays) = circuit(3, 10);
        for round in 0..3u8 {
            for target in 0..3 {
                let plain = body(round * 3 + target as u8);
                let mut b = plain;
                client.encrypt_forward(target, &mut b);
                assert_eq!(forward(&mut relays[..=target], &mut b), Some(target));
                assert_eq!(b[9..], plain[9..]);
            }
        }
    }

    #[test]
    fn backward_from_each_hop_is_recognized_at_that_hop() {
        let (mut client, mut relays) = circuit(3, 11);
        for round in 0..3u8 {
            for from in [2, 0, 1] {
                let plain = body(round + 40);
                let mut b = plain;
                backward(&mut relays, from, &mut b);
                assert_eq!(client.decrypt_backward(&mut b), Some(from));
                assert_eq!(b[9..], plain[9..]);
            }
        }
    }

    #[test]
    fn a_flipped_bit_is_not_recognized() {
        for bit in [0, 8, 12, 40, 50, 100, 4071] {
            let (mut client, mut relays) = circuit(3, 12);
            let mut b = body(1);
            client.encrypt_forward(2, &mut b);
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(forward(&mut relays, &mut b), None, "forward bit {bit}");

            let (mut client, mut relays) = circuit(3, 13);
            let mut b = body(2);
            backward(&mut relays, 2, &mut b);
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(client.decrypt_backward(&mut b), None, "backward bit {bit}");
        }
    }

    #[test]
    fn an_unsealed_or_replayed_cell_is_not_recognized() {
        let (mut client, mut relays) = circuit(1, 14);
        let mut b = body(3);
        client.encrypt_forward(0, &mut b);
        let copy = b;
        assert!(relays[0].relay_forward(&mut b));
        // The same ciphertext again meets the next keystream and digest.
        let mut again = copy;
        assert!(!relays[0].relay_forward(&mut again));
        // A layer that was never added.
        let (_, mut relays) = circuit(1, 15);
        let mut plain = body(0);
        plain[RECOGNIZED].fill(0);
        assert!(!relays[0].relay_forward(&mut plain));
    }

    #[test]
    fn into_layers_continue_the_keystreams() {
        let (mut client, mut relays) = circuit(2, 16);
        // Exchange a cell with hop 0 through its HopCrypto, then hand the
        // layers to a "transport".
        let mut b = body(5);
        client.encrypt_forward(0, &mut b);
        assert!(relays[0].relay_forward(&mut b));
        let entry = relays.remove(0);
        let (mut fwd, mut bwd) = entry.into_layers();
        let mut b = body(6);
        client.encrypt_forward(1, &mut b);
        fwd.apply(&mut b);
        assert!(relays[0].relay_forward(&mut b));
        assert_eq!(b[9..], body(6)[9..]);
        let mut b = body(7);
        relays[0].originate_backward(&mut b);
        bwd.apply(&mut b);
        assert_eq!(client.decrypt_backward(&mut b), Some(1));
        assert_eq!(b[9..], body(7)[9..]);
    }

    #[test]
    #[should_panic(expected = "encrypt_forward to hop 1 of a 1-hop circuit")]
    fn encrypt_forward_past_the_last_hop_panics() {
        let (mut client, _) = circuit(1, 17);
        client.encrypt_forward(1, &mut body(0));
    }

    #[test]
    fn replay_cache() {
        let s = Dur::SECOND;
        let t = |secs: u64| Time::ZERO + Dur::from_secs(secs);
        let mut c = ReplayCache::new(3, Dur::from_secs(10));
        assert!(c.is_empty());
        assert!(c.check_and_insert(t(0), &[1; 32]), "fresh");
        assert!(!c.check_and_insert(t(1), &[1; 32]), "replayed");
        assert!(!c.check_and_insert(t(0) + Dur::from_secs(10) - Dur::NANOSECOND, &[1; 32]));
        assert!(
            c.check_and_insert(t(10), &[1; 32]),
            "expired after the window"
        );
        assert_eq!(c.len(), 1);
        // Capacity: the oldest is forgotten first.
        assert!(c.check_and_insert(t(11), &[2; 32]));
        assert!(c.check_and_insert(t(12), &[3; 32]));
        assert!(c.check_and_insert(t(13), &[4; 32]));
        assert_eq!(c.len(), 3);
        assert!(c.check_and_insert(t(14), &[1; 32]), "evicted for [4]");
        assert!(!c.check_and_insert(t(14), &[3; 32]));
        assert!(!c.check_and_insert(t(14), &[4; 32]));
        // Everything expires.
        assert!(c.check_and_insert(t(100), &[9; 32]));
        assert_eq!(c.len(), 1);
        // Zero capacity remembers nothing.
        let mut z = ReplayCache::new(0, s);
        assert!(z.check_and_insert(t(0), &[1; 32]));
        assert!(z.check_and_insert(t(0), &[1; 32]));
        assert!(z.is_empty());
    }

    #[test]
    fn errors_display() {
        for e in [
            OnionError::BadLength,
            OnionError::WrongRelay,
            OnionError::WeakKey,
            OnionError::AuthFailed,
        ] {
            assert!(!e.to_string().is_empty());
        }
    }
}
