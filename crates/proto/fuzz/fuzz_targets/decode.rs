//! Any bytes: the decoder must not panic, and a datagram it accepts must
//! re-encode to exactly the same bytes (the encoding is canonical).
#![no_main]

use hopwise_proto::backtap::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match wire::decode(data) {
        Ok(d) => {
            let items: Vec<wire::Item> = d.items().collect();
            assert_eq!(items.len(), d.len());
            assert_eq!(wire::encode(&items), data);
        }
        Err(e) => {
            assert!(e.offset < data.len().max(1));
            let _ = e.to_string();
        }
    }
});
