//! Any bytes as an onionskin (raw, and after the relay's own identity so
//! that the ephemeral-key checks are reached), as a CREATED/EXTENDED reply,
//! as a difference XORed into an honest reply, and as a cell body arriving
//! at an established hop in either direction. Nothing may panic, and a
//! changed reply is never accepted.
#![no_main]

use hopwise_proto::backtap::wire::CellBody;
use hopwise_proto::backtap::CELL_BODY_LEN;
use hopwise_proto::circuit::onion::{self, ClientCrypto, ClientHandshake, SeededKeys, REPLY_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let secret = [7u8; 32];
    let identity = onion::public_key(&secret);
    let mut keys = SeededKeys::new(1);

    let _ = onion::onionskin_ephemeral(data);
    let _ = onion::server_handshake(&identity, &secret, data, &mut keys);
    let mut skin = identity.to_vec();
    skin.extend_from_slice(data);
    let _ = onion::server_handshake(&identity, &secret, &skin, &mut keys);

    let (hs, _) = ClientHandshake::start(&identity, &mut keys);
    let _ = hs.finish(data);

    // An honest exchange, with the reply changed by the input.
    let (hs, skin) = ClientHandshake::start(&identity, &mut keys);
    let (mut reply, mut relay) =
        onion::server_handshake(&identity, &secret, &skin, &mut keys).expect("honest onionskin");
    let mut changed = false;
    for (r, d) in reply.iter_mut().zip(data.iter().take(REPLY_LEN)) {
        *r ^= d;
        changed |= *d != 0;
    }
    let result = hs.finish(&reply);
    assert!(result.is_ok() != changed, "a changed reply was accepted");
    let Ok(hop) = result else { return };

    // The input as a cell body at the relay and at the client.
    let mut body: CellBody = [0; CELL_BODY_LEN];
    let n = data.len().min(CELL_BODY_LEN);
    body[..n].copy_from_slice(&data[..n]);
    let mut client = ClientCrypto::new();
    client.push(hop);
    let mut b = body;
    let _ = relay.relay_forward(&mut b);
    let mut b = body;
    let _ = client.decrypt_backward(&mut b);
});
