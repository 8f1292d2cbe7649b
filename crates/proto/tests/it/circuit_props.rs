//! Property-based fuzzing of everything a peer or a SOCKS client controls:
//! relay-cell and frame decoding, SOCKS5 parsing, exit-policy rules, a node
//! fed arbitrary frames, and (with the `link` feature) links fed arbitrary
//! datagrams. Nothing may panic; what decodes must re-encode to itself.

use hopwise_proto::backtap::wire::CELL_BODY_LEN;
use hopwise_proto::circuit::cell::{self, EndReason, RelayMsg};
use hopwise_proto::circuit::control::{self, CtlMsg, DestroyReason, Frame};
use hopwise_proto::circuit::policy::Rule;
use hopwise_proto::circuit::socks;
use hopwise_proto::circuit::{onion, LinkId, Node, NodeConfig};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

fn body() -> impl Strategy<Value = [u8; CELL_BODY_LEN]> {
    (
        proptest::collection::vec(any::<u8>(), 0..CELL_BODY_LEN),
        any::<u8>(),
        0u16..600,
    )
        .prop_map(|(v, cmd, len)| {
            let mut b = [0u8; CELL_BODY_LEN];
            b[..v.len()].copy_from_slice(&v);
            // Bias towards plausible headers so that the decoder's deeper
            // checks are reached.
            b[0] = cmd % 7;
            b[1] = 0;
            b[2] = 0;
            b[9..11].copy_from_slice(&len.to_be_bytes());
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn relay_cells_decode_without_panic_and_round_trip(b in body(), raw in proptest::collection::vec(any::<u8>(), CELL_BODY_LEN)) {
        for b in [b, <[u8; CELL_BODY_LEN]>::try_from(raw.as_slice()).unwrap()] {
            if let Ok((id, msg)) = cell::decode(&b) {
                let mut again = [0u8; CELL_BODY_LEN];
                cell::encode(id, &msg, &mut again);
                prop_assert_eq!(cell::decode(&again).unwrap(), (id, msg));
            }
        }
    }

    #[test]
    fn relay_cells_round_trip(id in any::<u16>(), kind in 0u8..5, n in any::<u32>(), data in proptest::collection::vec(any::<u8>(), 1..=498), host in "[a-z0-9.-]{1,255}", port in any::<u16>()) {
        let msg = match kind {
            0 => RelayMsg::Begin { window: n, host: &host, port },
            1 => RelayMsg::Data(&data),
            2 => RelayMsg::End(EndReason::from_u8(n as u8)),
            3 => RelayMsg::Connected { window: n },
            _ => RelayMsg::Sendme { increment: n },
        };
        let mut b = [0u8; CELL_BODY_LEN];
        cell::encode(id, &msg, &mut b);
        prop_assert_eq!(cell::decode(&b).unwrap(), (id, msg));
    }

    #[test]
    fn frames_decode_without_panic_and_round_trip(d in proptest::collection::vec(any::<u8>(), 0..400), t in prop_oneof![Just(0x40u8), Just(0x41), Just(0x01), any::<u8>()]) {
        let mut d = d;
        if !d.is_empty() { d[0] = t; }
        match control::decode_frame(&d) {
            Ok(Frame::Ctl { seq, msg }) => prop_assert_eq!(control::encode_ctl(seq, &msg), d),
            Ok(Frame::CtlAck { next }) => prop_assert_eq!(control::encode_ack(next).to_vec(), d),
            _ => {}
        }
    }

    #[test]
    fn control_messages_round_trip(seq in any::<u32>(), circ_id in any::<u32>(), kind in 0u8..4, b in any::<u8>(), r in any::<u8>()) {
        let msg = match kind {
            0 => CtlMsg::Create { circ_id, htype: r, onionskin: [b; control::HANDSHAKE_LEN] },
            1 => CtlMsg::Created { circ_id, reply: [b; control::HANDSHAKE_LEN] },
            2 => CtlMsg::Relay { circ_id, body: Box::new([b; CELL_BODY_LEN]) },
            _ => CtlMsg::Destroy { circ_id, reason: DestroyReason::from_u8(r) },
        };
        let f = control::encode_ctl(seq, &msg);
        prop_assert_eq!(control::decode_frame(&f).unwrap(), Frame::Ctl { seq, msg });
    }

    #[test]
    fn socks_parsers_never_panic(d in proptest::collection::vec(any::<u8>(), 0..300), v5 in any::<bool>()) {
        let mut d = d;
        if v5 && !d.is_empty() { d[0] = 5; }
        if let Ok(Some((_, n))) = socks::parse_greeting(&d) { prop_assert!(n <= d.len()); }
        match socks::parse_request(&d) {
            Ok(Some((req, n))) => {
                prop_assert!(n <= d.len());
                prop_assert_eq!(socks::encode_request(socks::CMD_CONNECT, &req.addr, req.port), d[..n].to_vec());
            }
            Ok(None) => prop_assert!(d.len() < 4 + 255 + 3),
            Err(_) => {}
        }
    }

    #[test]
    fn socks_requests_round_trip(cmd in 1u8..4, kind in 0u8..3, a in any::<[u8; 16]>(), host in "[a-zA-Z0-9.-]{1,255}", port in any::<u16>()) {
        let addr = match kind {
            0 => socks::Addr::Ip(std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).into()),
            1 => socks::Addr::Ip(std::net::Ipv6Addr::from(a).into()),
            _ => socks::Addr::Domain(host),
        };
        let r = socks::encode_request(cmd, &addr, port);
        match socks::parse_request(&r) {
            Ok(Some((req, n))) => {
                prop_assert_eq!(cmd, socks::CMD_CONNECT);
                prop_assert_eq!((req.addr, req.port, n), (addr, port, r.len()));
            }
            Err(e) => {
                prop_assert_ne!(cmd, socks::CMD_CONNECT);
                prop_assert_eq!(e.reply, Some(socks::Reply::CommandNotSupported));
            }
            Ok(None) => prop_assert!(false, "complete request not parsed"),
        }
    }

    #[test]
    fn policy_rules_never_panic(s in "\\PC{0,60}", t in "(accept|reject) (\\*|private|[0-9./]{1,20}|\\[[0-9a-f:]{0,20}\\](/[0-9]{1,3})?):(\\*|[0-9]{1,6}(-[0-9]{1,6})?)") {
        let _ = Rule::parse(&s);
        if let Ok(r) = Rule::parse(&t) {
            prop_assert_eq!(Rule::parse(&r.to_string()).unwrap(), r);
        }
    }

    #[test]
    fn a_node_survives_arbitrary_frames(frames in proptest::collection::vec((0u32..4, proptest::collection::vec(any::<u8>(), 0..600), prop_oneof![Just(0x02u8), Just(0x40), Just(0x41)]), 1..60)) {
        let secret = [9u8; 32];
        let me = onion::public_key(&secret);
        let dir = vec![[1u8; 32], [2u8; 32], me];
        let mut cfg = NodeConfig::new(me, secret, dir);
        cfg.exit = true;
        let mut n = Node::new(cfg, Box::new(onion::SeededKeys::new(1)));
        n.link_up(LinkId(3), [7u8; 32]);
        let mut now = Time::ZERO;
        for (l, mut f, t) in frames {
            if !f.is_empty() { f[0] = t; }
            n.handle_frame(now, LinkId(l), &f);
            while n.poll_frame(now).is_some() {}
            while n.poll_event().is_some() {}
            now += Dur::from_millis(3);
            n.handle_timeout(now);
        }
        prop_assert!(n.circuit_count() <= n.config().max_circuits);
    }
}

#[cfg(feature = "link")]
mod link {
    use super::*;
    use hopwise_proto::link::{Keypair, LinkConfig, Links};
    use std::net::SocketAddr;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn links_survive_arbitrary_datagrams(ds in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..300), 0u8..5, any::<u16>()), 1..40)) {
            let me = Keypair::from_private([3u8; 32]);
            let other = Keypair::from_private([4u8; 32]);
            let a: SocketAddr = "127.0.0.1:9".parse().unwrap();
            let mut l = Links::new(LinkConfig::new(me, vec![(other.public, a)]));
            let mut f = Vec::new();
            let mut now = Time::ZERO;
            for (mut d, t, port) in ds {
                if !d.is_empty() { d[0] = t; }
                let from = SocketAddr::from(([127, 0, 0, 1], port));
                prop_assert!(l.handle_datagram(now, from, &d, &mut f).is_none());
                now += Dur::from_millis(100);
                l.handle_timeout(now);
                while l.poll_transmit().is_some() {}
            }
        }
    }
}
