//! Circuit building at a relay, from a client that completed a real ntor
//! handshake with it: any sequence of onion-sealed RELAY messages (their
//! plaintext chosen by the fuzzer, so EXTENDs with any fields reach the
//! relay's parser and its extend logic), raw frames (CREATE, CREATED,
//! RELAY, DESTROY with any bytes) and timer steps. No panic, and the relay
//! keeps within its circuit limit.
#![no_main]

use hopwise_proto::backtap::wire::CellBody;
use hopwise_proto::backtap::CELL_BODY_LEN;
use hopwise_proto::circuit::control::{self, CtlMsg, Frame, HTYPE_NTOR};
use hopwise_proto::circuit::onion::{self, ClientCrypto, ClientHandshake, SeededKeys};
use hopwise_proto::circuit::{LinkId, Node, NodeConfig};
use hopwise_proto::time::{Dur, Time};
use libfuzzer_sys::fuzz_target;

fn key(i: u8) -> ([u8; 32], [u8; 32]) {
    let s = [i; 32];
    (onion::public_key(&s), s)
}

fuzz_target!(|data: &[u8]| {
    let (me, secret) = key(3);
    let (other, _) = key(4);
    let (client, _) = key(5);
    let mut cfg = NodeConfig::new(me, secret, vec![me, other]);
    cfg.exit = true;
    cfg.max_circuits = 8;
    let mut relay = Node::new(cfg, Box::new(SeededKeys::new(7)));
    let from = LinkId(2);
    relay.link_up(from, client);
    relay.link_up(LinkId(1), other);
    let mut now = Time::ZERO;
    let mut keys = SeededKeys::new(9);
    let (hs, onionskin) = ClientHandshake::start(&me, &mut keys);
    // Client ids take the half the identities give them.
    let circ_id = if client < me { 0x8000_0001 } else { 1 };
    let mut seq = 0u32;
    let send = |relay: &mut Node, now: Time, msg: &CtlMsg, seq: &mut u32| {
        relay.handle_frame(now, from, &control::encode_ctl(*seq, msg));
        *seq += 1;
    };
    send(
        &mut relay,
        now,
        &CtlMsg::Create {
            circ_id,
            htype: HTYPE_NTOR,
            onionskin,
        },
        &mut seq,
    );
    let mut crypto = ClientCrypto::new();
    let mut hs = Some(hs);
    while let Some((_, f)) = relay.poll_frame(now) {
        if let Ok(Frame::Ctl {
            msg: CtlMsg::Created { reply, .. },
            ..
        }) = control::decode_frame(&f)
        {
            if let Some(h) = hs.take() {
                crypto.push(h.finish(&reply).expect("the relay's own reply"));
            }
        }
    }
    assert_eq!(crypto.len(), 1, "the relay answered CREATE");
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 4 {
            0 | 1 => {
                let mut body: CellBody = [0; CELL_BODY_LEN];
                let n = rest.len().min(CELL_BODY_LEN);
                body[..n].copy_from_slice(&rest[..n]);
                rest = &rest[n..];
                if op % 4 == 0 {
                    crypto.encrypt_forward(0, &mut body);
                }
                let msg = CtlMsg::Relay {
                    circ_id,
                    body: Box::new(body),
                };
                send(&mut relay, now, &msg, &mut seq);
            }
            2 => {
                let n = (rest.first().copied().unwrap_or(0) as usize).min(rest.len());
                let (f, t) = rest.split_at(n);
                rest = t;
                if f.len() > 5 {
                    // As a control message with the next sequence number.
                    let mut frame = vec![control::FRAME_CTL];
                    frame.extend_from_slice(&seq.to_be_bytes());
                    frame.extend_from_slice(&f[1..]);
                    let l = if f[0] & 1 == 0 { from } else { LinkId(1) };
                    relay.handle_frame(now, l, &frame);
                    if l == from {
                        seq += 1;
                    }
                } else {
                    relay.handle_frame(now, from, f);
                }
            }
            _ => {
                now += Dur::from_millis(50 * (1 + rest.first().copied().unwrap_or(0) as u64));
                relay.handle_timeout(now);
            }
        }
        while relay.poll_frame(now).is_some() {}
        while relay.poll_event().is_some() {}
    }
    assert!(relay.circuit_count() <= 8);
});
