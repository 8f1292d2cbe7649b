//! A relay drops forged, replayed, misaddressed and malformed datagrams and
//! counts them; none reaches the circuit layer, and the relay keeps working.
//! The attacker here is a test client with the protocol crate's own link
//! code, talking to relay1 of a running overlay over real UDP.

// Tests of a real-time daemon: they sleep and read the wall clock.
use crate::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use hopwise_proto::circuit::control::{encode_ctl, CtlMsg, DestroyReason};
use hopwise_proto::circuit::LinkId;
use hopwise_proto::link::{Keypair, LinkConfig, Links};
use hopwise_proto::time::Time;
use std::net::UdpSocket;
use std::time::Duration;

fn recv(s: &UdpSocket) -> Option<Vec<u8>> {
    let mut b = vec![0u8; 65536];
    match s.recv_from(&mut b) {
        Ok((n, _)) => Some(b[..n].to_vec()),
        Err(_) => None,
    }
}

#[test]
fn relay_rejects_forged_and_replayed_datagrams() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    let lab = Lab::start(&o).unwrap();
    let relay = &lab.relays[0];
    let dir = hopwise_net::config::Directory::load(&lab.files.directory).unwrap();
    let directory: Vec<_> = dir.relays.iter().map(|r| (r.key, r.address)).collect();

    // A client of our own, with a real session to relay1.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut me = Links::new(LinkConfig::new(Keypair::generate(), directory.clone()));
    let t = Time::ZERO;
    let r1 = LinkId(0);
    // A DESTROY for a circuit that does not exist: harmless, but it counts
    // as a control message received when it gets through.
    let frame = encode_ctl(
        0,
        &CtlMsg::Destroy {
            circ_id: 12345,
            reason: DestroyReason::Requested,
        },
    );
    assert!(
        me.seal(t, r1, &frame).is_none(),
        "queued behind the handshake"
    );
    let (to, init) = me.poll_transmit().unwrap();
    assert_eq!(to, relay.addr);
    sock.send_to(&init, to).unwrap();
    let resp = recv(&sock).expect("RESP");
    let mut f = Vec::new();
    assert!(me.handle_datagram(t, relay.addr, &resp, &mut f).is_none());
    let (_, genuine) = me.poll_transmit().expect("the queued frame, sealed");
    sock.send_to(&genuine, relay.addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let s0 = relay.snapshot().unwrap();
    assert_eq!(s0.links.handshakes_answered, 1 + 1, "the proxy's and ours");
    let ctl0 = s0.node.ctl_in;

    // 1. Replays of the genuine datagram.
    for _ in 0..5 {
        sock.send_to(&genuine, relay.addr).unwrap();
    }
    // 2. Forgeries: every single-byte change of a fresh genuine datagram.
    let next = encode_ctl(
        1,
        &CtlMsg::Destroy {
            circ_id: 1,
            reason: DestroyReason::Requested,
        },
    );
    let (_, fresh) = me.seal(t, r1, &next).unwrap();
    let mut forged = 0;
    for i in 13..fresh.len() {
        let mut x = fresh.clone();
        x[i] ^= 0x5a;
        sock.send_to(&x, relay.addr).unwrap();
        forged += 1;
    }
    // 3. From another address (a stolen datagram sent from elsewhere).
    let other = UdpSocket::bind("127.0.0.1:0").unwrap();
    other.send_to(&fresh, relay.addr).unwrap();
    // 4. Garbage, and data for a session index that does not exist.
    other
        .send_to(
            b"\x03\xde\xad\xbe\xef0123456789abcdef0123456789",
            relay.addr,
        )
        .unwrap();
    other.send_to(b"hello relay", relay.addr).unwrap();
    other.send_to(&[], relay.addr).unwrap();
    // 5. A handshake from a client whose INIT was tampered with.
    let mut them = Links::new(LinkConfig::new(Keypair::generate(), directory));
    assert!(them.seal(t, r1, b"x").is_none());
    let (_, mut bad_init) = them.poll_transmit().unwrap();
    // The last byte of the Noise message (the `mac` after it is looked at
    // only under load).
    let n = bad_init.len() - hopwise_proto::link::MAC_LEN;
    bad_init[n - 1] ^= 1;
    other.send_to(&bad_init, relay.addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    let s = relay.snapshot().unwrap();
    eprintln!("relay1 link counters after the attack: {:?}", s.links);
    assert_eq!(s.links.replays - s0.links.replays, 5, "replays");
    assert_eq!(
        s.links.auth_failures - s0.links.auth_failures,
        forged,
        "forgeries"
    );
    assert!(
        s.links.unknown_peer - s0.links.unknown_peer >= 2,
        "wrong address, unknown index"
    );
    assert!(s.links.malformed - s0.links.malformed >= 2, "garbage");
    assert_eq!(
        s.links.handshake_failures - s0.links.handshake_failures,
        1,
        "tampered INIT"
    );
    assert_eq!(s.node.ctl_in, ctl0, "nothing reached the circuit layer");
    assert_eq!(s.node.protocol_errors, s0.node.protocol_errors);

    // The genuine follow-up still gets through, and the overlay still works.
    sock.send_to(&fresh, relay.addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(relay.snapshot().unwrap().node.ctl_in, ctl0 + 1);
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let server = testbed::start_file_server(3, 1_000_000).await.unwrap();
        let d = testbed::download(lab.socks(), "127.0.0.1", server.port())
            .await
            .unwrap();
        assert_eq!(d.hash, testbed::expected_hash(3, 1_000_000));
    });
    lab.shutdown();
}
