//! A µTP listener with one connection it opened and one it accepted, fed a
//! fuzzer-chosen sequence of datagrams (raw, or built from fuzzer-chosen
//! header fields on the live connection ids so that they get past the
//! demultiplexer), time steps, application reads and writes, and timeouts.
//! It must never panic, must keep its connection count and buffers within
//! the configured bounds, and must only emit datagrams that parse.
#![no_main]

use hopwise_proto::time::{Dur, Time};
use hopwise_proto::utp::{wire, Config, Listener};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        recv_buffer: 16 * 1400,
        send_buffer: 16 * 1400,
        max_connections: 4,
        ..Config::default()
    };
    let mut l: Listener<u8> = Listener::new(cfg.clone(), 1);
    let mut now = Time::from_nanos(1_000);
    let out_conn = l.connect(1).expect("room for one");
    let out_id = l.socket(out_conn).map(|s| s.recv_id()).unwrap_or(0);
    // An incoming SYN from address 2 with conn id 100.
    let syn = wire::Header {
        ty: wire::PacketType::Syn,
        conn_id: 100,
        timestamp_us: 5,
        timestamp_diff_us: 0,
        wnd_size: 1 << 20,
        seq_nr: 65530,
        ack_nr: 0,
    };
    let mut d = Vec::new();
    wire::write(&syn, &[], &[], &mut d);
    let _ = l.handle_datagram(now, 2, &d);
    let mut rest = data;
    let mut buf = [0u8; 4096];
    while rest.len() >= 2 {
        let (ctl, len) = (rest[0], rest[1] as usize);
        rest = &rest[2..];
        let len = len.min(rest.len());
        let (chunk, tail) = rest.split_at(len);
        rest = tail;
        now += Dur::from_micros((ctl as u64 & 0x0f) * 37_000);
        let from = (ctl >> 4) & 3;
        let dg = if ctl & 0x40 != 0 && chunk.len() >= 10 {
            // A packet on a live id with fuzzer-chosen fields.
            let h = wire::Header {
                ty: wire::PacketType::from_nibble(chunk[0] % 5).unwrap_or(wire::PacketType::State),
                conn_id: if chunk[0] & 0x80 != 0 { out_id } else { 101 },
                timestamp_us: u32::from_be_bytes([chunk[1], chunk[2], chunk[3], chunk[4]]),
                timestamp_diff_us: u32::from_be_bytes([chunk[5], 0, chunk[6], 0]),
                wnd_size: u32::from(chunk[7]) * 512,
                seq_nr: u16::from_be_bytes([chunk[8], chunk[9]]),
                ack_nr: u16::from_be_bytes([chunk[9], chunk[8]]),
            };
            let body = &chunk[10..];
            let (sack, payload) = if chunk[0] & 0x40 != 0 {
                body.split_at(body.len().min(8))
            } else {
                (&[][..], body)
            };
            let mut d = Vec::new();
            wire::write(&h, sack, payload, &mut d);
            d
        } else {
            chunk.to_vec()
        };
        let _ = l.handle_datagram(now, from, &dg);
        let ids: Vec<_> = l.ids().collect();
        for id in ids {
            if let Some(s) = l.socket_mut(id) {
                if ctl & 0x80 != 0 {
                    s.send(chunk);
                }
                s.recv(&mut buf);
                if ctl == 0xff {
                    s.close();
                }
            }
        }
        if l.poll_timeout().is_some_and(|t| t <= now) {
            l.handle_timeout(now);
        }
        let mut n = 0;
        while let Some((_, out)) = l.poll_transmit(now) {
            assert!(wire::parse(&out).is_ok());
            n += 1;
            assert!(n < 100_000, "poll_transmit must run dry");
        }
        while l.poll_event().is_some() {}
        assert!(l.connection_count() <= cfg.max_connections);
        for id in l.ids() {
            if let Some(s) = l.socket(id) {
                let (_, bytes) = s.buffered();
                assert!(bytes <= cfg.recv_buffer + cfg.send_buffer);
            }
        }
    }
});
