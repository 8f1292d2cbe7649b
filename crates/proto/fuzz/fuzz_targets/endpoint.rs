//! A relay endpoint fed a fuzzer-chosen sequence of datagrams from both of
//! its neighbours, with time steps, application reads and timeouts in
//! between. It must never panic, must keep the fused-queue invariants, must
//! honour `circuit_limit`, must keep its running count of held cells right,
//! and must only emit datagrams that decode. Both ends of the relay circuit
//! send SACK items (`Config::sack`), and a control-bit mode feeds SACK and
//! FEEDBACK items with sequence numbers near what was sent, some forged
//! beyond it: SACKed cells stay within those in flight, and forged blocks are
//! counted. Seeds: `seeds/endpoint`.
#![no_main]

use hopwise_proto::backtap::{wire, Config, Direction, Endpoint};
use hopwise_proto::time::{Dur, Time};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        circuit_limit: 32,
        sack: true,
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
        // into cells with fuzzer-chosen preambles (first byte even) or into
        // SACK and FEEDBACK items about the cells sent (first byte odd).
        let owned;
        let dg = if ctl & 0x20 != 0 && dg.len() >= 6 && dg[0] & 1 == 1 {
            let mut v = vec![wire::VERSION];
            for ch in dg[1..].chunks(6) {
                if ch.len() < 6 {
                    break;
                }
                let (c, d) =
                    [(relay, 1u32), (relay, 2), (edge, 3), (relay, 9)][(ch[0] & 3) as usize];
                let dir = if d == 2 {
                    Direction::Forward
                } else {
                    Direction::Backward
                };
                let next_tx = ep.circuit_stats(c, dir).next_tx;
                // Mostly at or below next_tx; bit 7 forges an ACK beyond it.
                let ack = next_tx.saturating_sub((ch[1] & 0x0f) as u32) + (ch[1] >> 7) as u32 * 3;
                if ch[2] & 1 == 0 {
                    let f = wire::Feedback {
                        circ_id: d,
                        ack: (ch[2] & 2 != 0).then_some(ack),
                        fwd: (ch[2] & 4 != 0).then_some(ack.saturating_sub((ch[2] >> 4) as u32)),
                    };
                    wire::put_feedback(&mut v, &f);
                    continue;
                }
                let mut s = wire::Sack::new(d, ack);
                let mut at = ack;
                for i in 0..1 + (ch[3] & 7) as usize {
                    let bits = ch[4 + (i & 1)] >> (4 * (i >> 1 & 1));
                    let start = at + 1 + (bits & 3) as u32;
                    at = start + 1 + ((bits >> 2) & 3) as u32;
                    s.push(start, at);
                }
                wire::put_sack(&mut v, &s);
            }
            owned = v;
            &owned[..]
        } else if ctl & 0x20 != 0 && dg.len() >= 6 {
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
        // The exact count of rejected blocks is a property test
        // (tests/it/backtap_sack.rs); here: no panic, and the invariants below.
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
                assert!(s.sacked <= s.in_flight, "{s:?}");
            }
        }
        let held: usize = ep.held_cells().map(|h| h.1).sum();
        assert_eq!(ep.total_held(), held);
    }
    ep.remove_circuit(relay);
    ep.remove_circuit(edge);
    assert_eq!(ep.total_held(), 0);
});
