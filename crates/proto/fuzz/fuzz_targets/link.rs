//! Any datagrams, from any of a few addresses, at a relay that accepts
//! clients, after one client has completed its handshake, so that DATA,
//! INIT and RESP with valid indices and near-valid bytes are reachable.
//! The relay answers two handshakes per second, so that COOKIEs go out and
//! INITs with cookies are checked; raw datagrams also reach the client.
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
    let mut c = Links::new(LinkConfig::new(Keypair::from_private([3; 32]), dir));
    let mut now = Time::ZERO;
    let mut f = Vec::new();
    assert!(c.seal(now, LinkId(0), b"hi").is_none());
    let (_, init) = c.poll_transmit().expect("INIT");
    assert!(r.handle_datagram(now, addr(3), &init, &mut f).is_none());
    let (_, resp) = r.poll_transmit().expect("RESP");
    assert!(c.handle_datagram(now, addr(1), &resp, &mut f).is_none());
    let (_, d) = c.poll_transmit().expect("DATA");
    let client = r.handle_datagram(now, addr(3), &d, &mut f).expect("confirmed");
    let known = [init, resp, d];

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
            }
            1 => {
                // A datagram seen in the handshake, with the input xored in.
                let mut k = known[a as usize % 3].clone();
                let n = k.len();
                for (j, b) in body.iter().enumerate() {
                    k[j % n] ^= b;
                }
                let _ = r.handle_datagram(now, addr(3 + (a as u16 >> 6)), &k, &mut f);
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
