//! Properties of onion encryption (`circuit::onion`): handshakes agree and
//! refuse tampering; on circuits of 1 to 4 hops, every forward cell is
//! recognized by exactly the hop it was sealed for and every backward cell by
//! the client as coming from the hop that sent it, with the payload intact,
//! in any interleaving; a flipped bit is recognized nowhere; peer bytes never
//! panic; the replay cache matches a naive model.

use hopwise_proto::backtap::wire::{CellBody, CELL_BODY_LEN};
use hopwise_proto::circuit::onion::{
    self, ClientCrypto, ClientHandshake, HopCrypto, KeySource, OnionError, ReplayCache, SeededKeys,
    ONIONSKIN_LEN, REPLY_LEN,
};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

fn relay_secret(seed: u64, i: usize) -> ([u8; 32], [u8; 32]) {
    let mut secret = [0u8; 32];
    SeededKeys::new(seed ^ (0x5eed_0000 + i as u64)).fill_bytes(&mut secret);
    (onion::public_key(&secret), secret)
}

fn circuit(hops: usize, seed: u64) -> (ClientCrypto, Vec<HopCrypto>) {
    let mut client_keys = SeededKeys::new(seed);
    let mut relay_keys = SeededKeys::new(!seed);
    let mut client = ClientCrypto::new();
    let mut relays = Vec::new();
    for i in 0..hops {
        let (id, secret) = relay_secret(seed, i);
        let (hs, skin) = ClientHandshake::start(&id, &mut client_keys);
        let (reply, relay) = onion::server_handshake(&id, &secret, &skin, &mut relay_keys)
            .expect("an honest onionskin");
        client.push(hs.finish(&reply).expect("an honest reply"));
        relays.push(relay);
    }
    (client, relays)
}

fn cell(cmd: u8, stream: u16, data: &[u8]) -> CellBody {
    let mut b = [0u8; CELL_BODY_LEN];
    b[0] = cmd;
    b[3..5].copy_from_slice(&stream.to_be_bytes());
    b[9..11].copy_from_slice(&(data.len() as u16).to_be_bytes());
    b[11..11 + data.len()].copy_from_slice(data);
    b
}

/// What the destination must see: everything but `recognized` and `digest`
/// as sent (those two are the sealing's).
fn same_payload(a: &CellBody, b: &CellBody) -> bool {
    a[0] == b[0] && a[3..5] == b[3..5] && a[9..] == b[9..]
}

/// Forward through relays `0..`: the first that recognizes the body.
fn forward(relays: &mut [HopCrypto], b: &mut CellBody) -> Option<usize> {
    relays.iter_mut().position(|r| r.relay_forward(b))
}

fn backward(relays: &mut [HopCrypto], from: usize, b: &mut CellBody) {
    relays[from].originate_backward(b);
    for r in relays[..from].iter_mut().rev() {
        r.relay_backward(b);
    }
}

#[derive(Clone, Debug)]
struct Op {
    forward: bool,
    hop: usize,
    cmd: u8,
    stream: u16,
    data: Vec<u8>,
}

fn op() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        0usize..4,
        any::<u8>(),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..=498),
    )
        .prop_map(|(forward, hop, cmd, stream, data)| Op {
            forward,
            hop,
            cmd,
            stream,
            data,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn cells_reach_exactly_their_hop(
        hops in 1usize..=4,
        seed in any::<u64>(),
        ops in proptest::collection::vec(op(), 1..24),
        tamper_forward in any::<bool>(),
        tamper_bit in 0usize..CELL_BODY_LEN * 8,
    ) {
        let (mut client, mut relays) = circuit(hops, seed);
        prop_assert_eq!(client.len(), hops);
        for op in &ops {
            let hop = op.hop % hops;
            let plain = cell(op.cmd, op.stream, &op.data);
            let mut b = plain;
            if op.forward {
                client.encrypt_forward(hop, &mut b);
                // Cells travel no further than the hop that recognizes them.
                prop_assert_eq!(forward(&mut relays[..=hop], &mut b), Some(hop));
            } else {
                backward(&mut relays, hop, &mut b);
                prop_assert_eq!(client.decrypt_backward(&mut b), Some(hop));
            }
            prop_assert!(same_payload(&b, &plain));
            prop_assert_eq!(&b[1..3], &[0, 0]);
        }
        // One tampered cell: no hop recognizes it (a 2^-48 chance per hop
        // that one would).
        let mut b = cell(2, 1, b"tampered");
        let last = hops - 1;
        if tamper_forward {
            client.encrypt_forward(last, &mut b);
            b[tamper_bit / 8] ^= 1 << (tamper_bit % 8);
            prop_assert_eq!(forward(&mut relays, &mut b), None);
        } else {
            backward(&mut relays, last, &mut b);
            b[tamper_bit / 8] ^= 1 << (tamper_bit % 8);
            prop_assert_eq!(client.decrypt_backward(&mut b), None);
        }
    }

    #[test]
    fn handshakes_agree_and_are_deterministic(seed in any::<u64>(), relay in any::<u64>()) {
        let run = || {
            let (id, secret) = relay_secret(relay, 0);
            let mut keys = SeededKeys::new(seed);
            let (hs, skin) = ClientHandshake::start(&id, &mut keys);
            let (reply, mut server) =
                onion::server_handshake(&id, &secret, &skin, &mut keys).unwrap();
            let mut client = ClientCrypto::new();
            client.push(hs.finish(&reply).unwrap());
            let mut b = cell(2, 7, b"hello");
            client.encrypt_forward(0, &mut b);
            let wire = b;
            assert!(server.relay_forward(&mut b));
            (skin, reply, wire)
        };
        let (skin, reply, wire) = run();
        prop_assert_eq!((skin, reply, wire), run());
        prop_assert_eq!(&onion::onionskin_ephemeral(&skin).unwrap()[..], &skin[32..]);
    }

    #[test]
    fn tampered_handshakes_are_refused(seed in any::<u64>(), at in 0usize..64, flip in 1u8..=255) {
        let (id, secret) = relay_secret(seed, 0);
        let mut keys = SeededKeys::new(seed);
        // A changed onionskin: B names another relay, or X is not the
        // client's, so its AUTH check fails.
        let (hs, mut skin) = ClientHandshake::start(&id, &mut keys);
        skin[at] ^= flip;
        match onion::server_handshake(&id, &secret, &skin, &mut keys) {
            Err(e) => {
                prop_assert!(at < 32);
                prop_assert_eq!(e, OnionError::WrongRelay);
            }
            Ok((reply, _)) => {
                prop_assert!(at >= 32);
                let e = hs.finish(&reply).unwrap_err();
                prop_assert!(e == OnionError::AuthFailed || e == OnionError::WeakKey);
            }
        }
        // A changed reply.
        let (hs, skin) = ClientHandshake::start(&id, &mut keys);
        let (mut reply, _) = onion::server_handshake(&id, &secret, &skin, &mut keys).unwrap();
        reply[at] ^= flip;
        let e = hs.finish(&reply).unwrap_err();
        prop_assert!(e == OnionError::AuthFailed || e == OnionError::WeakKey);
    }

    #[test]
    fn peer_bytes_never_panic(
        seed in any::<u64>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..130),
        with_identity in any::<bool>(),
    ) {
        let (id, secret) = relay_secret(seed, 0);
        let mut keys = SeededKeys::new(seed);
        let mut skin = if with_identity { id.to_vec() } else { Vec::new() };
        skin.extend_from_slice(&bytes);
        let r = onion::server_handshake(&id, &secret, &skin, &mut keys);
        if skin.len() != ONIONSKIN_LEN {
            prop_assert_eq!(r.err(), Some(OnionError::BadLength));
        }
        let (hs, _) = ClientHandshake::start(&id, &mut keys);
        let r = hs.finish(&bytes);
        prop_assert!(r.is_err());
        if bytes.len() != REPLY_LEN {
            prop_assert_eq!(r.err(), Some(OnionError::BadLength));
        }
    }

    #[test]
    fn arbitrary_bodies_are_not_recognized(
        seed in any::<u64>(),
        bytes in proptest::collection::vec(any::<u8>(), CELL_BODY_LEN),
    ) {
        let (mut client, mut relays) = circuit(2, seed);
        let mut b: CellBody = bytes.clone().try_into().unwrap();
        prop_assert_eq!(client.decrypt_backward(&mut b), None);
        let mut b: CellBody = bytes.try_into().unwrap();
        prop_assert_eq!(forward(&mut relays, &mut b), None);
    }

    #[test]
    fn replay_cache_matches_a_naive_model(
        capacity in 0usize..6,
        window in 1u64..20,
        steps in proptest::collection::vec((0u64..6, 0u8..8), 1..80),
    ) {
        let mut cache = ReplayCache::new(capacity, Dur::from_secs(window));
        // (seen at, key), oldest first.
        let mut model: Vec<(u64, u8)> = Vec::new();
        let mut now = 0u64;
        for (dt, k) in steps {
            now += dt;
            model.retain(|&(t, _)| now < t + window);
            let fresh = !model.iter().any(|&(_, m)| m == k);
            if fresh && capacity > 0 {
                if model.len() == capacity {
                    model.remove(0);
                }
                model.push((now, k));
            }
            let got = cache.check_and_insert(Time::ZERO + Dur::from_secs(now), &[k; 32]);
            prop_assert_eq!(got, fresh, "key {} at {}s", k, now);
            prop_assert_eq!(cache.len(), model.len());
        }
    }
}
