//! Any bytes: the decoder must not panic, and a datagram it accepts must
//! re-encode to exactly the same bytes (the encoding is canonical); a SACK
//! item it accepts has 1 to 8 blocks, each above the ACK, no two
//! overlapping or touching. Seeds with every item type: `seeds/decode`.
#![no_main]

use hopwise_proto::backtap::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match wire::decode(data) {
        Ok(d) => {
            let items: Vec<wire::Item> = d.items().collect();
            assert_eq!(items.len(), d.len());
            assert_eq!(wire::encode(&items), data);
            for it in &items {
                if let wire::Item::Sack(s) = it {
                    let b = s.blocks();
                    assert!((1..=wire::MAX_SACK_BLOCKS).contains(&b.len()));
                    for (i, &(a, e)) in b.iter().enumerate() {
                        assert!(s.ack < a && a < e);
                        assert!(b[..i].iter().all(|&(a2, e2)| e < a2 || e2 < a));
                    }
                }
            }
        }
        Err(e) => {
            assert!(e.offset < data.len().max(1));
            let _ = e.to_string();
        }
    }
});
