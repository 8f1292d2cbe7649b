//! Any datagrams, from any of a few addresses, at a relay that accepts
//! clients, after one client has completed its handshake, so that DATA,
//! INIT and RESP with valid indices and near-valid bytes are reachable.
//! The relay answers two handshakes per second, so a second client's INIT
//! gets a real COOKIE: that client keeps its handshake open, and the COOKIE
//! (xored with the input) and raw datagrams reach it, so the initiator's
//! COOKIE handling is fuzzed too.
//! Nothing may panic, the client count stays within `max_clients`, and the
//! confirmed client's link stays usable.
#![no_main]

use hopwise_proto::circuit::LinkId;
use hopwise_proto::link::{Keypair, LinkConfig, Links};
use hopwise_proto::{Dur, Time};
use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;

fn addr(p: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], p))
}

fuzz_target!(|data: &[u8]| {
    let relay = Keypair::from_private([1; 32]);
    let other = Keypair::from_private([2; 32]);
    let dir = vec![(relay.public, addr(1)), (other.public, addr(2))];
    let mut cfg = LinkConfig::new(relay, dir.clone());
    cfg.max_clients = 3;
    cfg.max_half_open = 4;
    cfg.handshakes_per_second = 2;
    let mut r = Links::new(cfg);
    let mut c = Links::new(LinkConfig::new(Keypair::from_private([3; 32]), dir.clone()));
    let mut now = Time::ZERO;
    let mut f = Vec::new();
    assert!(c.seal(now, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().expect("INIT");
    assert!(r.handle_datagram(now, addr(3), &init, &mut f).is_none());
    let (_, resp) = r.poll_transmit().expect("RESP");
    assert!(c.handle_datagram(now, addr(1), &resp, &mut f).is_none());
    let (_, d) = c.poll_transmit().expect("DATA");
    let client = r.handle_datagram(now, addr(3), &d, &mut f).expect("confirmed");
    // A second client while the relay is loaded (its second INIT this
    // second was the first client's; a spoofed one makes two).
    let mut spoof = Links::new(LinkConfig::new(Keypair::from_private([4; 32]), dir.clone()));
    assert!(spoof.seal(now, LinkId(0), b"x").is_none());
    let (_, sinit) = spoof.poll_transmit().expect("INIT");
    let _ = r.handle_datagram(now, addr(6), &sinit, &mut f);
    while r.poll_transmit().is_some() {}
    let mut c2 = Links::new(LinkConfig::new(Keypair::from_private([5; 32]), dir));
    assert!(c2.seal(now, LinkId(0), b"hi").is_none());
    let (_, init2) = c2.poll_transmit().expect("INIT");
    let _ = r.handle_datagram(now, addr(4), &init2, &mut f);
    let (_, cookie) = r.poll_transmit().expect("COOKIE");
    assert_eq!(cookie[0], 0x05, "the relay is loaded");
    let known = [init, resp, d, cookie];

    // Records: op, a, len, then len bytes.
    let mut i = 0;
    while i + 3 <= data.len() {
        let (op, a, len) = (data[i], data[i + 1], data[i + 2] as usize);
        i += 3;
        let body = &data[i..(i + len).min(data.len())];
        i += body.len();
        match op % 4 {
            0 => {
                now += Dur::from_millis(a as u64 * 50);
                r.handle_timeout(now);
                c2.handle_timeout(now);
                while c2.poll_transmit().is_some() {}
            }
            1 => {
                // A datagram seen in the handshake, with the input xored in;
                // the COOKIE goes to the second client, the rest to the relay.
                let which = a as usize % 4;
                let mut k = known[which].clone();
                let n = k.len();
                for (j, b) in body.iter().enumerate() {
                    k[j % n] ^= b;
                }
                if which == 3 {
                    let _ = c2.handle_datagram(now, addr(1 + (a as u16 >> 7)), &k, &mut f);
                    while c2.poll_transmit().is_some() {}
                } else {
                    let _ = r.handle_datagram(now, addr(3 + (a as u16 >> 6)), &k, &mut f);
                }
            }
            2 => {
                let _ = r.seal(now, LinkId(a as u32 % 5), body);
            }
            _ if a & 0x80 != 0 => {
                let _ = c.handle_datagram(now, addr(1 + (a as u16 & 1)), body, &mut f);
                while c.poll_transmit().is_some() {}
            }
            _ => {
                let _ = r.handle_datagram(now, addr(3 + (a as u16 % 4)), body, &mut f);
            }
        }
        while r.poll_transmit().is_some() {}
        while r.poll_event().is_some() {}
        assert!(r.client_count() <= 3);
    }
    // Unless it went idle, the confirmed client's frames still get through.
    if r.is_up(client) {
        let (to, sealed) = r.seal(now, client, b"x").expect("up");
        assert_eq!(to, addr(3));
        let got = c.handle_datagram(now, addr(1), &sealed, &mut f);
        assert!(got.is_some() && f == b"x");
    }
});
