//! A relay endpoint fed a fuzzer-chosen sequence of datagrams from both of
//! its neighbours, with time steps, application reads and timeouts in
//! between. It must never panic, must keep the fused-queue invariants, must
//! honour `circuit_limit`, must keep its running count of held cells right,
//! and must only emit datagrams that decode.
#![no_main]

use hopwise_proto::backtap::{wire, Config, Direction, Endpoint};
use hopwise_proto::time::{Dur, Time};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        circuit_limit: 32,
        ..Config::default()
    };
    let mut ep = Endpoint::new(cfg);
    let prev = ep.add_peer(0);
    let next = ep.add_peer(1);
    let relay = ep.add_circuit(Some((prev, 1)), Some((next, 2)));
    let edge = ep.add_circuit(Some((prev, 3)), None);
    let mut now = Time::ZERO;
    let mut rest = data;
    let mut body = [0u8; wire::CELL_BODY_LEN];
    // Each step: control byte, length byte, then that many bytes of datagram.
    while rest.len() >= 2 {
        let (ctl, len) = (rest[0], rest[1] as usize);
        rest = &rest[2..];
        let len = len.min(rest.len());
        let (dg, tail) = rest.split_at(len);
        rest = tail;
        now += Dur::from_micros((ctl as u64 & 0x0f) * 700);
        let from = if ctl & 0x10 != 0 { next } else { prev };
        // Short inputs rarely form a cell; let bit 5 expand the datagram
        // into cells with fuzzer-chosen preambles.
        let owned;
        let dg = if ctl & 0x20 != 0 && dg.len() >= 6 {
            let mut v = vec![wire::VERSION];
            for ch in dg[1..].chunks(5) {
                if ch.len() < 5 {
                    break;
                }
                let circ = [1u32, 2, 3, 9][(ch[0] & 3) as usize];
                let seq = u32::from_be_bytes([0, 0, ch[1] & 0x3f, ch[2]]) % 80;
                wire::put_cell(&mut v, circ, seq, ch[3] & 3, &body);
            }
            owned = v;
            &owned[..]
        } else {
            dg
        };
        let _ = ep.handle_datagram(now, from, dg);
        if ctl & 0x40 != 0 {
            while ep
                .recv_cell_into(now, edge, Direction::Forward, &mut body)
                .is_some()
            {}
        }
        if let Some(t) = ep.poll_timeout() {
            if t <= now || ctl & 0x80 != 0 {
                now = now.max(t);
                ep.handle_timeout(now);
            }
        }
        while let Some((_, out)) = ep.poll_transmit(now) {
            assert!(out.len() <= ep.config().payload_budget);
            assert!(wire::decode(&out).is_ok());
        }
        while ep.poll_event().is_some() {}
        for c in [relay, edge] {
            for d in Direction::BOTH {
                let s = ep.circuit_stats(c, d);
                assert!(
                    s.fwd_seen <= s.head && s.head <= s.next_tx && s.next_tx <= s.tail + 1,
                    "{s:?}"
                );
                assert!(s.tail + 1 - s.next_tx <= 32, "{s:?}");
            }
        }
        let held: usize = ep.held_cells().map(|h| h.1).sum();
        assert_eq!(ep.total_held(), held);
    }
    ep.remove_circuit(relay);
    ep.remove_circuit(edge);
    assert_eq!(ep.total_held(), 0);
});
