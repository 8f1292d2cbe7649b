//! Handshakes, retransmission, replay and forgery rejection, restarts and
//! collisions between two or three `Links`, datagrams handed over by hand.

use super::*;

fn addr(p: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], p))
}

struct Pair {
    a: Links,
    b: Links,
    ka: Keypair,
    kb: Keypair,
    now: Time,
}

const A: u16 = 1000;
const B: u16 = 2000;

fn pair_with(encrypt_a: bool, encrypt_b: bool) -> Pair {
    let ka = Keypair::generate();
    let kb = Keypair::generate();
    let dir = vec![(ka.public, addr(A)), (kb.public, addr(B))];
    let mut ca = LinkConfig::new(ka.clone(), dir.clone());
    ca.encrypt = encrypt_a;
    let mut cb = LinkConfig::new(kb.clone(), dir);
    cb.encrypt = encrypt_b;
    cb.index_seed = 1000;
    Pair {
        a: Links::new(ca),
        b: Links::new(cb),
        ka,
        kb,
        now: Time::ZERO,
    }
}

fn pair() -> Pair {
    pair_with(true, true)
}

/// Moves every queued datagram across (optionally dropping some), returns
/// the frames each side received.
fn exchange(
    p: &mut Pair,
    mut drop: impl FnMut(u16, &[u8]) -> bool,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut fa = Vec::new();
    let mut fb = Vec::new();
    for _ in 0..10 {
        let mut moved = false;
        while let Some((to, d)) = p.a.poll_transmit() {
            moved = true;
            assert_eq!(to, addr(B));
            if drop(A, &d) {
                continue;
            }
            let mut f = Vec::new();
            if p.b.handle_datagram(p.now, addr(A), &d, &mut f).is_some() {
                fb.push(f);
            }
        }
        while let Some((to, d)) = p.b.poll_transmit() {
            moved = true;
            assert_eq!(to, addr(A));
            if drop(B, &d) {
                continue;
            }
            let mut f = Vec::new();
            if p.a.handle_datagram(p.now, addr(B), &d, &mut f).is_some() {
                fa.push(f);
            }
        }
        if !moved {
            break;
        }
    }
    (fa, fb)
}

fn send(p: &mut Pair, from_a: bool, frame: &[u8]) -> Option<Vec<u8>> {
    let now = p.now;
    let (links, l) = if from_a {
        (&mut p.a, LinkId(1))
    } else {
        (&mut p.b, LinkId(0))
    };
    let (to, d) = links.seal(now, l, frame)?;
    assert_eq!(to, addr(if from_a { B } else { A }));
    Some(d)
}

fn up(p: &mut Pair) {
    assert!(
        send(p, true, b"hello").is_none(),
        "queued behind the handshake"
    );
    let (_, fb) = exchange(p, |_, _| false);
    assert_eq!(fb, vec![b"hello".to_vec()]);
    assert!(p.a.is_up(LinkId(1)) && p.b.is_up(LinkId(0)));
    assert_eq!(
        p.a.poll_event(),
        Some(LinkEvent::Up {
            link: LinkId(1),
            key: p.kb.public,
            replaced: false
        })
    );
    assert_eq!(
        p.b.poll_event(),
        Some(LinkEvent::Up {
            link: LinkId(0),
            key: p.ka.public,
            replaced: false
        })
    );
}

fn deliver_b(p: &mut Pair, d: &[u8]) -> Option<Vec<u8>> {
    let mut f = Vec::new();
    p.b.handle_datagram(p.now, addr(A), d, &mut f).map(|_| f)
}

#[test]
fn handshake_then_frames_both_ways() {
    let mut p = pair();
    up(&mut p);
    let d = send(&mut p, false, b"back").unwrap();
    let mut f = Vec::new();
    assert_eq!(
        p.a.handle_datagram(p.now, addr(B), &d, &mut f),
        Some(LinkId(1))
    );
    assert_eq!(f, b"back");
    assert_eq!(d.len(), 4 + OVERHEAD);
    assert_eq!(p.a.stats().handshakes_completed, 1);
    assert_eq!(p.b.stats().handshakes_answered, 1);
}

#[test]
fn forged_replayed_and_misaddressed_datagrams_are_dropped() {
    let mut p = pair();
    up(&mut p);
    let d = send(&mut p, true, b"frame one").unwrap();
    assert_eq!(deliver_b(&mut p, &d).as_deref(), Some(&b"frame one"[..]));
    // Replay.
    assert_eq!(deliver_b(&mut p, &d), None);
    assert_eq!(p.b.stats().replays, 1);
    // Every single-bit flip of the ciphertext or tag fails authentication;
    // flips in the header name another session or counter.
    let d2 = send(&mut p, true, b"frame two").unwrap();
    let before = *p.b.stats();
    for i in 0..d2.len() {
        let mut x = d2.clone();
        x[i] ^= 0x01;
        assert_eq!(deliver_b(&mut p, &x), None, "flip at byte {i}");
    }
    let after = *p.b.stats();
    let dropped = (after.auth_failures - before.auth_failures)
        + (after.unknown_peer - before.unknown_peer)
        + (after.malformed - before.malformed)
        + (after.plaintext_rejected - before.plaintext_rejected)
        + (after.replays - before.replays);
    assert_eq!(dropped, d2.len() as u64);
    assert!(after.auth_failures - before.auth_failures >= 9 + 16);
    // The genuine datagram still goes through afterwards.
    assert_eq!(deliver_b(&mut p, &d2).as_deref(), Some(&b"frame two"[..]));
    // From another address.
    let d3 = send(&mut p, true, b"x").unwrap();
    let mut f = Vec::new();
    assert_eq!(p.b.handle_datagram(p.now, addr(9), &d3, &mut f), None);
    // Garbage and plaintext.
    for g in [&[][..], &[0x03, 1, 2][..], &[0x77; 40][..]] {
        assert_eq!(p.b.handle_datagram(p.now, addr(A), g, &mut f), None);
    }
    let mut plain = d3.clone();
    plain[0] = TYPE_PLAIN;
    assert_eq!(deliver_b(&mut p, &plain), None);
    assert!(p.b.stats().plaintext_rejected >= 1);
    // An old datagram far behind the window is refused even if never seen.
    let old = send(&mut p, true, b"old").unwrap();
    for _ in 0..REPLAY_WINDOW + 10 {
        let d = send(&mut p, true, b"n").unwrap();
        deliver_b(&mut p, &d).unwrap();
    }
    assert_eq!(deliver_b(&mut p, &old), None);
}

#[test]
fn lost_handshake_messages_are_retransmitted() {
    let mut p = pair();
    assert!(send(&mut p, true, b"hi").is_none());
    // Lose INIT and RESP once each.
    let mut lost_init = false;
    let mut lost_resp = false;
    let (_, fb) = exchange(&mut p, |from, d| match (from, d[0]) {
        (A, TYPE_INIT) if !lost_init => {
            lost_init = true;
            true
        }
        _ => false,
    });
    assert!(fb.is_empty());
    for _ in 0..20 {
        p.now += Dur::from_millis(300);
        p.a.handle_timeout(p.now);
        p.b.handle_timeout(p.now);
        let (_, fb) = exchange(&mut p, |from, d| match (from, d[0]) {
            (B, TYPE_RESP) if !lost_resp => {
                lost_resp = true;
                true
            }
            _ => false,
        });
        if !fb.is_empty() {
            assert_eq!(fb, vec![b"hi".to_vec()]);
            assert!(p.a.stats().handshake_retransmits >= 2);
            // The second INIT was answered from the cache, not a new handshake.
            assert_eq!(p.b.stats().handshakes_answered, 1);
            return;
        }
    }
    panic!("no handshake");
}

#[test]
fn handshake_gives_up_and_reports_down() {
    let mut p = pair();
    assert!(send(&mut p, true, b"hi").is_none());
    for _ in 0..100 {
        p.now += Dur::from_millis(500);
        p.a.handle_timeout(p.now);
        while p.a.poll_transmit().is_some() {}
    }
    assert_eq!(p.a.poll_event(), Some(LinkEvent::Down { link: LinkId(1) }));
    assert_eq!(p.a.stats().handshake_timeouts, 1);
}

#[test]
fn simultaneous_initiation_ends_with_one_session() {
    let mut p = pair();
    assert!(send(&mut p, true, b"from a").is_none());
    assert!(send(&mut p, false, b"from b").is_none());
    let (fa, fb) = exchange(&mut p, |_, _| false);
    assert_eq!(fa, vec![b"from b".to_vec()]);
    assert_eq!(fb, vec![b"from a".to_vec()]);
    assert_eq!(p.a.stats().handshake_collisions, 1);
    assert_eq!(p.b.stats().handshake_collisions, 1);
    let d = send(&mut p, true, b"again").unwrap();
    assert_eq!(deliver_b(&mut p, &d).as_deref(), Some(&b"again"[..]));
}

#[test]
fn replayed_init_does_not_break_a_working_link_but_a_restart_replaces_it() {
    let mut p = pair();
    let mut init = None;
    assert!(send(&mut p, true, b"x").is_none());
    let _ = exchange(&mut p, |from, d| {
        if from == A && d[0] == TYPE_INIT {
            init = Some(d.to_vec());
        }
        false
    });
    while p.a.poll_event().is_some() {}
    while p.b.poll_event().is_some() {}
    // Replay the INIT later (as an attacker would, from A's address).
    p.now += Dur::from_secs(1);
    let init = init.unwrap();
    let mut f = Vec::new();
    assert_eq!(p.b.handle_datagram(p.now, addr(A), &init, &mut f), None);
    // B answered from its cache; the link still works and nothing changed.
    assert_eq!(p.b.poll_event(), None);
    let d = send(&mut p, true, b"still").unwrap();
    assert_eq!(deliver_b(&mut p, &d).as_deref(), Some(&b"still"[..]));
    // A restarts (same key, new state): B switches once the new session is
    // confirmed, and says the old one was replaced.
    let dir = p.a.config().directory.clone();
    p.a = Links::new(LinkConfig::new(p.ka.clone(), dir));
    assert!(send(&mut p, true, b"new").is_none());
    let (_, fb) = exchange(&mut p, |_, _| false);
    assert_eq!(fb, vec![b"new".to_vec()]);
    assert_eq!(
        p.b.poll_event(),
        Some(LinkEvent::Up {
            link: LinkId(0),
            key: p.ka.public,
            replaced: true
        })
    );
}

#[test]
fn idle_links_go_down_and_keepalives_keep_them_up() {
    let mut p = pair();
    up(&mut p);
    // Both run their timers and exchange keepalives for a minute.
    for _ in 0..60 {
        p.now += Dur::from_secs(1);
        p.a.handle_timeout(p.now);
        p.b.handle_timeout(p.now);
        let _ = exchange(&mut p, |_, _| false);
    }
    assert!(p.a.is_up(LinkId(1)) && p.b.is_up(LinkId(0)));
    assert!(p.a.stats().keepalives_out >= 5);
    // B goes silent.
    for _ in 0..40 {
        p.now += Dur::from_secs(1);
        p.a.handle_timeout(p.now);
        while p.a.poll_transmit().is_some() {}
    }
    assert_eq!(p.a.poll_event(), Some(LinkEvent::Down { link: LinkId(1) }));
}

#[test]
fn encryption_modes_must_match() {
    let mut p = pair_with(true, false);
    assert!(send(&mut p, true, b"x").is_none());
    let (_, fb) = exchange(&mut p, |_, _| false);
    assert!(fb.is_empty());
    assert_eq!(p.b.stats().handshake_refused, 1);
    // Both off: plaintext frames flow, with the header and counter.
    let mut p = pair_with(false, false);
    up(&mut p);
    let d = send(&mut p, true, b"clear").unwrap();
    assert_eq!(d[0], TYPE_PLAIN);
    assert_eq!(&d[DATA_HEADER_LEN..], b"clear");
    assert_eq!(deliver_b(&mut p, &d).as_deref(), Some(&b"clear"[..]));
    assert_eq!(deliver_b(&mut p, &d), None, "replays are still refused");
}

#[test]
fn clients_need_permission_and_get_their_own_links() {
    let relay = Keypair::generate();
    let client = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut cr = LinkConfig::new(relay.clone(), dir.clone());
    cr.accept_clients = false;
    let mut r = Links::new(cr);
    let mut c = Links::new(LinkConfig::new(client.clone(), dir.clone()));
    assert!(c.seal(Time::ZERO, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().unwrap();
    let mut f = Vec::new();
    assert_eq!(r.handle_datagram(Time::ZERO, addr(A), &init, &mut f), None);
    // Refused: answered and closed at once (a_refused_client_is_told_why).
    assert_eq!(r.stats().handshake_refused, 1);
    assert_eq!(r.client_count(), 0);
    assert_eq!(r.poll_event(), None, "no link");
    // A relay that accepts clients gives it link id 1 (after the directory).
    let mut r = Links::new(LinkConfig::new(relay, dir));
    assert_eq!(r.handle_datagram(Time::ZERO, addr(A), &init, &mut f), None);
    let (_, resp) = r.poll_transmit().unwrap();
    assert_eq!(c.handle_datagram(Time::ZERO, addr(B), &resp, &mut f), None);
    let (_, d) = c.poll_transmit().unwrap();
    assert_eq!(
        r.handle_datagram(Time::ZERO, addr(A), &d, &mut f),
        Some(LinkId(1))
    );
    assert_eq!(f, b"hi");
    assert_eq!(r.peer_key(LinkId(1)), Some(client.public));
    assert_eq!(r.client_count(), 1);
}

#[test]
fn keys_round_trip_through_hex() {
    let k = Keypair::generate();
    assert_eq!(Keypair::from_private(k.private), k);
    assert_eq!(parse_key(&hex(&k.public)), Some(k.public));
    assert_eq!(parse_key("zz"), None);
    assert_eq!(parse_key(&"g".repeat(64)), None);
}

/// Runs the handshake of a fresh client (its own keypair) at `from` with
/// `r`, then one frame; returns the client's `Links` and the link id `r`
/// gives it.
fn connect_client(r: &mut Links, now: Time, from: SocketAddr) -> (Links, LinkId) {
    let dir = r.config().directory.clone();
    let relay_addr = dir[0].1;
    let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir));
    let mut f = Vec::new();
    assert!(c.seal(now, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().unwrap();
    assert_eq!(r.handle_datagram(now, from, &init, &mut f), None);
    let (_, resp) = r.poll_transmit().unwrap();
    assert_eq!(c.handle_datagram(now, relay_addr, &resp, &mut f), None);
    let (_, d) = c.poll_transmit().unwrap();
    let l = r.handle_datagram(now, from, &d, &mut f).expect("the frame");
    assert_eq!(f, b"hi");
    (c, l)
}

#[test]
fn a_client_slot_is_reused_once_its_link_is_down() {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut r = Links::new(LinkConfig::new(relay, dir));
    let mut now = Time::ZERO;
    let (_c1, l1) = connect_client(&mut r, now, addr(A));
    let (_c2, l2) = connect_client(&mut r, now, addr(A + 1));
    assert_eq!((l1, l2), (LinkId(1), LinkId(2)));
    while r.poll_event().is_some() {}
    // Both go silent and time out.
    for _ in 0..40 {
        now += Dur::from_secs(1);
        r.handle_timeout(now);
        while r.poll_transmit().is_some() {}
    }
    let mut down = Vec::new();
    while let Some(e) = r.poll_event() {
        down.push(e);
    }
    assert_eq!(
        down,
        vec![LinkEvent::Down { link: l1 }, LinkEvent::Down { link: l2 }]
    );
    assert_eq!(r.client_count(), 0);
    // Newcomers take the freed ids instead of new ones, and a third one
    // gets the next id.
    let mut ids: Vec<(LinkId, SocketAddr)> = (0..3)
        .map(|i| {
            let from = addr(A + 10 + i);
            (connect_client(&mut r, now, from).1, from)
        })
        .collect();
    ids.sort();
    let got: Vec<LinkId> = ids.iter().map(|x| x.0).collect();
    assert_eq!(got, vec![LinkId(1), LinkId(2), LinkId(3)]);
    assert_eq!(r.client_count(), 3);
    // Frames for a reused id go to the newcomer that holds it.
    for (l, from) in ids {
        assert_eq!(r.seal(now, l, b"x").map(|d| d.0), Some(from));
    }
}

#[test]
fn unconfirmed_handshakes_take_no_client_slot() {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut cfg = LinkConfig::new(relay, dir.clone());
    cfg.max_clients = 2;
    cfg.max_half_open = 8;
    let mut r = Links::new(cfg);
    let now = Time::ZERO;
    // 100 INITs from fresh keys at (spoofed) addresses that never confirm.
    let mut f = Vec::new();
    for i in 0..100u16 {
        let init = fresh_init(&dir, now);
        assert_eq!(r.handle_datagram(now, addr(5000 + i), &init, &mut f), None);
        assert!(r.poll_transmit().is_some(), "answered");
    }
    assert_eq!(r.stats().handshakes_answered, 100);
    assert_eq!(r.stats().half_open_dropped, 92, "all but the newest 8");
    assert_eq!(r.client_count(), 0);
    assert_eq!(r.poll_event(), None, "no link came up");
    // Real clients still get in, up to max_clients; each INIT evicts the
    // oldest unconfirmed one while the table is full.
    let (_c1, l1) = connect_client(&mut r, now, addr(A));
    let (_c2, l2) = connect_client(&mut r, now, addr(A + 1));
    assert_eq!((l1, l2), (LinkId(1), LinkId(2)));
    assert_eq!(r.client_count(), 2);
    assert_eq!(r.stats().half_open_dropped, 93);
    // The other seven expire after handshake_timeout.
    r.handle_timeout(now + Dur::from_secs(16));
    assert_eq!(r.stats().half_open_dropped, 100);
    assert!(r.is_up(l1) && r.is_up(l2));
}

/// Someone who saw a new client's INIT sends a copy from elsewhere before
/// the client confirms: the copy is not answered, and the client's link
/// comes up.
#[test]
fn a_copied_init_from_elsewhere_does_not_displace_a_new_client() {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut r = Links::new(LinkConfig::new(relay, dir.clone()));
    let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir));
    let now = Time::ZERO;
    let mut f = Vec::new();
    assert!(c.seal(now, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().unwrap();
    assert_eq!(r.handle_datagram(now, addr(A), &init, &mut f), None);
    let (_, resp) = r.poll_transmit().unwrap();
    assert_eq!(r.handle_datagram(now, addr(A + 7), &init, &mut f), None);
    assert!(r.poll_transmit().is_none(), "the copy is not answered");
    assert_eq!(r.stats().unknown_peer, 1);
    // The same INIT again from the client's address gets the same RESP.
    assert_eq!(r.handle_datagram(now, addr(A), &init, &mut f), None);
    assert_eq!(r.poll_transmit().map(|x| x.1), Some(resp.clone()));
    assert_eq!(c.handle_datagram(now, addr(B), &resp, &mut f), None);
    let (_, d) = c.poll_transmit().unwrap();
    assert_eq!(r.handle_datagram(now, addr(A), &d, &mut f), Some(LinkId(1)));
    assert_eq!(f, b"hi");
}

/// An INIT from a fresh client key, as sent (the client is dropped).
fn fresh_init(dir: &[(Identity, SocketAddr)], now: Time) -> Vec<u8> {
    let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir.to_vec()));
    assert!(c.seal(now, LinkId(0), b"x").is_none());
    c.poll_transmit().unwrap().1
}

/// Past `handshakes_per_second`, INITs without a cookie get a COOKIE and no
/// Diffie-Hellman work; a real client comes back with its cookie and gets
/// its link; a cookie is good only for its address and for two epochs.
#[test]
fn under_load_inits_need_a_cookie() {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut cfg = LinkConfig::new(relay, dir.clone());
    cfg.handshakes_per_second = 3;
    cfg.cookie_secret = [7; 32];
    let mut r = Links::new(cfg);
    let now = Time::ZERO + Dur::from_secs(10);
    let mut f = Vec::new();
    // A spoofed flood: the first three are answered, the rest get cookies.
    for i in 0..50u16 {
        let init = fresh_init(&dir, now);
        r.handle_datagram(now, addr(5000 + i), &init, &mut f);
        let (to, d) = r.poll_transmit().expect("an answer");
        assert_eq!(to, addr(5000 + i));
        assert_eq!(d[0], if i < 3 { TYPE_RESP } else { TYPE_COOKIE }, "{i}");
        assert_eq!(d.len(), if i < 3 { 9 + MSG2_LEN } else { COOKIE_MSG_LEN });
    }
    assert_eq!(r.stats().handshakes_answered, 3);
    assert_eq!(r.stats().cookies_sent, 47);
    // A real client: INIT, COOKIE, the INIT again with its mac, RESP.
    let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir.clone()));
    assert!(c.seal(now, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().unwrap();
    assert_eq!(
        &init[init.len() - MAC_LEN..],
        &[0; MAC_LEN],
        "no cookie yet"
    );
    r.handle_datagram(now, addr(A), &init, &mut f);
    let (_, cookie) = r.poll_transmit().unwrap();
    assert_eq!(cookie[0], TYPE_COOKIE);
    // A COOKIE with a changed byte (cookie or tag) is not taken.
    for at in [5, COOKIE_MSG_LEN - 1] {
        let mut forged = cookie.clone();
        forged[at] ^= 1;
        let failures = c.stats().handshake_failures;
        c.handle_datagram(now, addr(B), &forged, &mut f);
        assert_eq!(c.stats().handshake_failures, failures + 1);
        assert!(c.poll_transmit().is_none(), "nothing resent");
    }
    // From another address the COOKIE names no handshake of ours.
    let unknown = c.stats().unknown_peer;
    c.handle_datagram(now, addr(B + 1), &cookie, &mut f);
    assert!(c.poll_transmit().is_none());
    assert_eq!(c.stats().unknown_peer, unknown + 1);
    assert_eq!(c.stats().cookies_received, 0);
    c.handle_datagram(now, addr(B), &cookie, &mut f);
    assert_eq!(c.stats().cookies_received, 1);
    let (_, init2) = c.poll_transmit().expect("the INIT again, at once");
    // The same COOKIE again (a replay) is ignored: no INIT goes out.
    c.handle_datagram(now, addr(B), &cookie, &mut f);
    assert!(c.poll_transmit().is_none());
    assert_eq!((c.stats().cookies_received, c.stats().replays), (1, 1));
    // The retransmission timer resends the INIT with its mac.
    c.handle_timeout(now + Dur::from_secs(1));
    assert_eq!(c.poll_transmit().map(|d| d.1), Some(init2.clone()));
    assert_eq!(init2[..init.len() - MAC_LEN], init[..init.len() - MAC_LEN]);
    assert_ne!(init2[init.len() - MAC_LEN..], init[init.len() - MAC_LEN..]);
    // The cookie is for the client's address only.
    r.handle_datagram(now, addr(A + 1), &init2, &mut f);
    assert_eq!(r.poll_transmit().map(|d| d.1[0]), Some(TYPE_COOKIE));
    assert_eq!(r.stats().handshakes_answered, 3);
    r.handle_datagram(now, addr(A), &init2, &mut f);
    let (_, resp) = r.poll_transmit().unwrap();
    assert_eq!(resp[0], TYPE_RESP);
    assert_eq!(r.stats().handshakes_answered, 4);
    c.handle_datagram(now, addr(B), &resp, &mut f);
    let (_, d) = c.poll_transmit().unwrap();
    assert_eq!(r.handle_datagram(now, addr(A), &d, &mut f), Some(LinkId(1)));
    assert_eq!(f, b"hi");
    // A cookie stays valid in the next epoch, not in the one after.
    let cookie_bytes: [u8; MAC_LEN] = cookie[5..5 + MAC_LEN].try_into().unwrap();
    for (later, valid) in [(COOKIE_EPOCH, true), (COOKIE_EPOCH + COOKIE_EPOCH, false)] {
        let t = now + later;
        // Load the relay in that second first.
        for i in 0..3u16 {
            r.handle_datagram(t, addr(6000 + i), &fresh_init(&dir, t), &mut f);
        }
        while r.poll_transmit().is_some() {}
        let answered = r.stats().handshakes_answered;
        // A new INIT from the client's address with the old cookie.
        let mut c2 = Links::new(LinkConfig::new(Keypair::generate(), dir.clone()));
        assert!(c2.seal(t, LinkId(0), b"x").is_none());
        let (_, mut i2) = c2.poll_transmit().unwrap();
        let n = i2.len();
        let mac = mac16(&cookie_bytes, &[&i2[..n - MAC_LEN]]);
        i2[n - MAC_LEN..].copy_from_slice(&mac);
        r.handle_datagram(t, addr(A), &i2, &mut f);
        let kind = r.poll_transmit().map(|d| d.1[0]);
        assert_eq!(
            kind,
            Some(if valid { TYPE_RESP } else { TYPE_COOKIE }),
            "{later:?}"
        );
        assert_eq!(r.stats().handshakes_answered, answered + valid as u64);
    }
    // The budget refills at `handshakes_per_second`: after the last three
    // (at 250 s), one INIT is answered a third of a second later, not
    // before, and not two.
    let last = now + COOKIE_EPOCH + COOKIE_EPOCH;
    for (t, kind) in [
        (last + Dur::from_millis(333), TYPE_COOKIE),
        (last + Dur::from_millis(334), TYPE_RESP),
        (last + Dur::from_millis(334), TYPE_COOKIE),
    ] {
        r.handle_datagram(t, addr(7000), &fresh_init(&dir, t), &mut f);
        assert_eq!(r.poll_transmit().map(|d| d.1[0]), Some(kind), "{t:?}");
    }
}

/// A relay at `handshakes_per_second` = `rate`, and its directory.
fn loaded_relay(rate: u32) -> (Links, Vec<(Identity, SocketAddr)>) {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut cfg = LinkConfig::new(relay, dir.clone());
    cfg.handshakes_per_second = rate;
    cfg.cookie_secret = [9; 32];
    (Links::new(cfg), dir)
}

/// What `r` sends back to an INIT from `from` at `now`: the message type,
/// or `None`.
fn answer(r: &mut Links, now: Time, from: SocketAddr, init: &[u8]) -> Option<u8> {
    let mut f = Vec::new();
    r.handle_datagram(now, from, init, &mut f);
    let kind = r.poll_transmit().map(|d| d.1[0]);
    assert!(r.poll_transmit().is_none());
    kind
}

/// A fresh INIT carrying `r`'s current cookie for `from`.
fn init_with_cookie(
    r: &Links,
    dir: &[(Identity, SocketAddr)],
    now: Time,
    from: SocketAddr,
) -> Vec<u8> {
    let mut init = fresh_init(dir, now);
    let n = init.len();
    let mac = mac16(&r.cookie(now, from, 0), &[&init[..n - MAC_LEN]]);
    init[n - MAC_LEN..].copy_from_slice(&mac);
    init
}

/// The handshake budget is a token bucket, not a count per whole second:
/// a second boundary does not give a second budget.
#[test]
fn a_second_boundary_does_not_double_the_budget() {
    let (mut r, dir) = loaded_relay(3);
    let t = Time::ZERO + Dur::from_millis(10_999);
    for _ in 0..3 {
        assert_eq!(
            answer(&mut r, t, addr(5000), &fresh_init(&dir, t)),
            Some(TYPE_RESP)
        );
    }
    let t1 = Time::ZERO + Dur::from_secs(11);
    for _ in 0..3 {
        assert_eq!(
            answer(&mut r, t1, addr(5000), &fresh_init(&dir, t1)),
            Some(TYPE_COOKIE)
        );
    }
    assert_eq!(r.stats().handshakes_answered, 3);
}

/// Under load, INITs with a valid cookie are answered at most
/// `SOURCE_INITS_PER_SECOND` per source (burst `SOURCE_INIT_BURST`); a
/// source is an IPv4 address, whatever the port; other sources are not
/// affected; without load there is no per-source limit.
#[test]
fn cookie_bearing_inits_are_limited_per_source() {
    let (mut r, dir) = loaded_relay(1);
    let t = Time::ZERO + Dur::from_secs(10);
    // Unloaded: the first INIT is answered without a cookie.
    assert_eq!(
        answer(&mut r, t, addr(5000), &fresh_init(&dir, t)),
        Some(TYPE_RESP)
    );
    let a = addr(A);
    for i in 0..SOURCE_INIT_BURST {
        let init = init_with_cookie(&r, &dir, t, a);
        assert_eq!(answer(&mut r, t, a, &init), Some(TYPE_RESP), "{i}");
    }
    let init = init_with_cookie(&r, &dir, t, a);
    assert_eq!(answer(&mut r, t, a, &init), None, "over the burst");
    assert_eq!(r.stats().rate_limited, 1);
    // Another port of the same address is the same source.
    let a2 = addr(A + 1);
    let init = init_with_cookie(&r, &dir, t, a2);
    assert_eq!(answer(&mut r, t, a2, &init), None);
    assert_eq!(r.stats().rate_limited, 2);
    // Another address is not limited.
    let other = SocketAddr::from(([127, 0, 0, 2], A));
    let init = init_with_cookie(&r, &dir, t, other);
    assert_eq!(answer(&mut r, t, other, &init), Some(TYPE_RESP));
    // One interval later, one more from the first source.
    let t2 = t + Dur::from_millis(1000 / SOURCE_INITS_PER_SECOND);
    let init = init_with_cookie(&r, &dir, t2, a);
    assert_eq!(answer(&mut r, t2, a, &init), Some(TYPE_RESP));
    let init = init_with_cookie(&r, &dir, t2, a);
    assert_eq!(answer(&mut r, t2, a, &init), None);
    assert_eq!(r.stats().handshakes_answered, 1 + SOURCE_INIT_BURST + 2);
    // The cookie-bearing INITs count towards the load, which they carry at
    // most one interval of the relay's rate (1 s) past the last of them:
    // a plain INIT just before that still needs a cookie (the first INIT's
    // token alone would have refilled at t + 1 s), and then it is answered.
    let t3 = t2 + Dur::from_millis(999);
    assert_eq!(
        answer(&mut r, t3, addr(5001), &fresh_init(&dir, t3)),
        Some(TYPE_COOKIE)
    );
    let t4 = t2 + Dur::from_secs(1);
    assert_eq!(
        answer(&mut r, t4, addr(5001), &fresh_init(&dir, t4)),
        Some(TYPE_RESP)
    );
}

/// The table of limited sources holds `MAX_SOURCES`; when it is full, a
/// new source is refused until idle entries are swept, at most once a
/// second.
#[test]
fn the_source_table_is_bounded() {
    let (mut r, _) = loaded_relay(1);
    let t = Time::ZERO + Dur::from_secs(10);
    let src = |i: usize| Source::V4(0x0a00_0000 + i as u32);
    for i in 0..MAX_SOURCES {
        assert!(r.source_admits(t, src(i)));
    }
    assert!(!r.source_admits(t, src(MAX_SOURCES)), "full");
    // A source already in the table is still served.
    assert!(r.source_admits(t, src(0)));
    // Idle entries are swept at most once a second: not yet at +0.5 s.
    assert!(!r.source_admits(t + Dur::from_millis(500), src(MAX_SOURCES)));
    assert!(r.source_admits(t + Dur::from_secs(1), src(MAX_SOURCES)));
    assert_eq!(r.sources.len(), 1, "the idle ones are gone");
}

#[test]
fn a_source_is_an_ipv4_address_or_an_ipv6_slash_64() {
    let v6 = |s: &str| Source::of(SocketAddr::new(s.parse().unwrap(), 1));
    assert_eq!(v6("2001:db8::1"), v6("2001:db8::ffff:1:2"));
    assert_ne!(v6("2001:db8::1"), v6("2001:db8:0:1::1"));
    assert_eq!(v6("::ffff:10.0.0.1"), v6("10.0.0.1"));
    assert_ne!(v6("10.0.0.1"), v6("10.0.0.2"));
}

#[test]
fn the_token_bucket_admits_a_burst_then_the_rate() {
    let mut g = Gcra::default();
    let t = Time::ZERO + Dur::from_secs(5);
    for _ in 0..5 {
        assert!(g.admit(t, 20, 5));
    }
    assert!(!g.admit(t, 20, 5));
    assert!(!g.admit(t + Dur::from_millis(49), 20, 5));
    assert!(g.admit(t + Dur::from_millis(50), 20, 5));
    assert!(!g.admit(t + Dur::from_millis(50), 20, 5));
    assert!(!g.is_full(t + Dur::from_millis(299)));
    assert!(g.is_full(t + Dur::from_millis(300)));
    // Charged far past its rate, it owes at most one interval more than a
    // full burst.
    for _ in 0..1000 {
        g.charge(t, 20, 5);
    }
    assert!(!g.admit(t + Dur::from_millis(49), 20, 5));
    assert!(g.admit(t + Dur::from_millis(50), 20, 5));
}

/// An initiator that got a cookie puts it in its next INITs to that relay
/// for one epoch.
#[test]
fn a_cookie_is_reused_for_an_epoch() {
    let mut p = pair();
    p.b.cfg.handshakes_per_second = 1;
    // Load b in this second.
    let dir = p.b.config().directory.clone();
    let mut f = Vec::new();
    p.b.handle_datagram(p.now, addr(9000), &fresh_init(&dir, p.now), &mut f);
    while p.b.poll_transmit().is_some() {}
    up(&mut p);
    assert_eq!(
        (p.b.stats().cookies_sent, p.a.stats().cookies_received),
        (1, 1)
    );
    // a takes its link down and starts again: its next INIT carries the
    // cookie and is answered at once, with b still loaded.
    let zero = [0u8; MAC_LEN];
    p.a.take_down(LinkId(1));
    while p.a.poll_event().is_some() {}
    p.now += Dur::from_millis(100);
    assert!(send(&mut p, true, b"again").is_none());
    let (_, init) = p.a.poll_transmit().unwrap();
    assert_ne!(&init[init.len() - MAC_LEN..], &zero, "the cookie is reused");
    p.b.handle_datagram(p.now, addr(A), &init, &mut f);
    assert_eq!(p.b.poll_transmit().map(|d| d.1[0]), Some(TYPE_RESP));
    assert_eq!(p.b.stats().cookies_sent, 1);
    // After an epoch it is not used any more.
    p.a.take_down(LinkId(1));
    p.now += COOKIE_EPOCH;
    assert!(send(&mut p, true, b"later").is_none());
    let (_, init) = p.a.poll_transmit().unwrap();
    assert_eq!(&init[init.len() - MAC_LEN..], &zero);
}

/// A node that stops closes its links: the peer takes its link down at
/// once (not after `idle_timeout`), learns why, and gives its next
/// handshake to that node `CLOSED_PEER_GIVE_UP` instead of
/// `handshake_timeout`; a link that comes up again clears that.
#[test]
fn a_close_takes_the_peer_s_link_down_at_once() {
    let mut p = pair();
    up(&mut p);
    p.a.close_all(p.now, CloseReason::Shutdown);
    assert_eq!(p.a.poll_event(), Some(LinkEvent::Down { link: LinkId(1) }));
    assert!(!p.a.is_up(LinkId(1)));
    let (to, close) = p.a.poll_transmit().expect("a CLOSE");
    assert_eq!(to, addr(B));
    assert!(p.a.poll_transmit().is_none());
    assert_eq!(p.a.stats().closes_sent, 1);
    assert_eq!(deliver_b(&mut p, &close), None, "not a frame for the node");
    assert_eq!(
        p.b.poll_event(),
        Some(LinkEvent::Closed {
            link: LinkId(0),
            reason: CloseReason::Shutdown
        })
    );
    assert!(!p.b.is_up(LinkId(0)));
    assert_eq!(p.b.stats().closes_received, 1);
    // A replay finds no session.
    let unknown = p.b.stats().unknown_peer;
    assert_eq!(deliver_b(&mut p, &close), None);
    assert_eq!(p.b.stats().unknown_peer, unknown + 1);
    assert_eq!(p.b.poll_event(), None);
    // b's next handshake to a gives up after CLOSED_PEER_GIVE_UP.
    let t0 = p.now;
    assert!(send(&mut p, false, b"anyone?").is_none());
    while p.b.poll_transmit().is_some() {}
    p.b.handle_timeout(t0 + CLOSED_PEER_GIVE_UP - Dur::from_millis(1));
    assert_eq!(p.b.poll_event(), None);
    p.b.handle_timeout(t0 + CLOSED_PEER_GIVE_UP);
    assert_eq!(p.b.poll_event(), Some(LinkEvent::Down { link: LinkId(0) }));
    assert_eq!(p.b.stats().handshake_timeouts, 1);
    // a comes back: the link is up again, and b's handshakes get the full
    // handshake_timeout again.
    while p.b.poll_transmit().is_some() {}
    up(&mut p);
    assert!(!p.b.peers[0].as_ref().unwrap().closed);
    p.b.close_all(p.now, CloseReason::Shutdown);
    while p.b.poll_event().is_some() {}
    let t1 = p.now;
    assert!(send(&mut p, false, b"x").is_none());
    p.b.handle_timeout(t1 + CLOSED_PEER_GIVE_UP);
    assert_eq!(p.b.poll_event(), None, "b closed the link itself");
}

/// A new client's handshake at a relay that has `max_clients` already is
/// answered with a RESP that refuses it (`Full`), and the relay keeps
/// nothing; at a relay that takes no clients, `NoClients`. One datagram,
/// smaller than the INIT; the client's link goes down at once.
#[test]
fn a_refused_client_is_told_why() {
    for accept in [true, false] {
        let relay = Keypair::generate();
        let dir = vec![(relay.public, addr(B))];
        let mut cfg = LinkConfig::new(relay, dir.clone());
        cfg.max_clients = 1;
        cfg.accept_clients = accept;
        let mut r = Links::new(cfg);
        let now = Time::ZERO;
        let first = accept.then(|| connect_client(&mut r, now, addr(A)).1);
        while r.poll_event().is_some() {}
        let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir));
        let mut f = Vec::new();
        assert!(c.seal(now, LinkId(0), b"hi").is_none());
        let (_, init) = c.poll_transmit().unwrap();
        r.handle_datagram(now, addr(A + 1), &init, &mut f);
        assert_eq!(r.stats().handshake_refused, 1);
        assert_eq!(r.client_count(), accept as usize);
        assert!(r.half.is_empty(), "nothing kept");
        let (to, resp) = r.poll_transmit().expect("a RESP");
        assert!(r.poll_transmit().is_none(), "one datagram");
        assert_eq!((to, resp[0]), (addr(A + 1), TYPE_RESP));
        assert!(resp.len() < init.len());
        while c.poll_event().is_some() {}
        assert_eq!(c.handle_datagram(now, addr(B), &resp, &mut f), None);
        let reason = if accept {
            CloseReason::Full
        } else {
            CloseReason::NoClients
        };
        assert_eq!(
            c.poll_event(),
            Some(LinkEvent::Closed {
                link: LinkId(0),
                reason
            })
        );
        assert!(!c.is_up(LinkId(0)));
        assert!(c.poll_transmit().is_none(), "no session, nothing sent");
        assert_eq!(c.stats().closes_received, 1);
        assert_eq!(c.stats().frames_dropped, 1, "the queued frame");
        // Its next handshake to this relay gives up after 2 s.
        assert!(c.seal(now, LinkId(0), b"again").is_none());
        c.handle_timeout(now + CLOSED_PEER_GIVE_UP);
        assert_eq!(c.poll_event(), Some(LinkEvent::Down { link: LinkId(0) }));
        if let Some(l1) = first {
            assert!(r.is_up(l1), "the first client keeps its link");
        }
    }
}

/// Two new clients answered while one slot was free: the one that confirms
/// second is told `Full` (a CLOSE in its own session).
#[test]
fn a_client_confirming_past_max_clients_is_told() {
    let relay = Keypair::generate();
    let dir = vec![(relay.public, addr(B))];
    let mut cfg = LinkConfig::new(relay, dir.clone());
    cfg.max_clients = 1;
    let mut r = Links::new(cfg);
    let now = Time::ZERO;
    let mut f = Vec::new();
    let mut clients = Vec::new();
    for i in 0..2u16 {
        let mut c = Links::new(LinkConfig::new(Keypair::generate(), dir.clone()));
        assert!(c.seal(now, LinkId(0), b"hi").is_none());
        let (_, init) = c.poll_transmit().unwrap();
        r.handle_datagram(now, addr(A + i), &init, &mut f);
        let (_, resp) = r.poll_transmit().unwrap();
        c.handle_datagram(now, addr(B), &resp, &mut f);
        clients.push(c);
    }
    let mut confirm = |c: &mut Links, from| {
        let (_, d) = c.poll_transmit().unwrap();
        r.handle_datagram(now, from, &d, &mut f)
    };
    assert_eq!(confirm(&mut clients[0], addr(A)), Some(LinkId(1)));
    assert_eq!(confirm(&mut clients[1], addr(A + 1)), None);
    assert_eq!(r.stats().handshake_refused, 1);
    let (to, close) = r.poll_transmit().expect("a CLOSE");
    assert_eq!(to, addr(A + 1));
    let c = &mut clients[1];
    while c.poll_event().is_some() {}
    assert_eq!(c.handle_datagram(now, addr(B), &close, &mut f), None);
    assert_eq!(
        c.poll_event(),
        Some(LinkEvent::Closed {
            link: LinkId(0),
            reason: CloseReason::Full
        })
    );
    assert!(r.is_up(LinkId(1)));
}

/// The link layer's own frame type cannot be sealed by the node above, so
/// a peer never mistakes a node's frame for a CLOSE; a CLOSE of the wrong
/// length is malformed and leaves the link up.
#[test]
fn close_frames_belong_to_the_link_layer() {
    let mut p = pair();
    up(&mut p);
    let dropped = p.a.stats().frames_dropped;
    assert!(send(&mut p, true, &[FRAME_CLOSE, 0]).is_none());
    assert_eq!(p.a.stats().frames_dropped, dropped + 1);
    let s = p.a.peers[1].as_mut().unwrap().current.as_mut().unwrap();
    let bad = encrypt(s, &[FRAME_CLOSE, 0, 0]);
    let malformed = p.b.stats().malformed;
    assert_eq!(deliver_b(&mut p, &bad), None);
    assert_eq!(p.b.stats().malformed, malformed + 1);
    assert!(p.b.is_up(LinkId(0)));
    assert_eq!(p.b.poll_event(), None);
}

#[test]
fn close_reasons_round_trip() {
    for b in 0..=255u8 {
        assert_eq!(CloseReason::from_u8(b).to_u8(), b);
    }
    assert_eq!(CloseReason::from_u8(0), CloseReason::Shutdown);
    assert_eq!(CloseReason::from_u8(1), CloseReason::Full);
    assert_eq!(CloseReason::from_u8(2), CloseReason::NoClients);
}

#[test]
fn small_order_keys_are_recognised() {
    // libsodium's list of X25519 points of small order (and non-canonical
    // encodings of them): u = 0, 1, the two points of order 8, p - 1, p,
    // p + 1, and the same with the top bit set (which X25519 ignores).
    for h in [
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "0100000000000000000000000000000000000000000000000000000000000080",
    ] {
        let k = parse_key(h).unwrap();
        assert!(is_small_order(&k), "{h}");
    }
    // Real keys are not, and neither is u = 9 (the base point).
    for _ in 0..32 {
        let k = Keypair::generate().public;
        assert!(!is_small_order(&k), "{}", hex(&k));
    }
    let mut nine = [0u8; 32];
    nine[0] = 9;
    assert!(!is_small_order(&nine));
}
