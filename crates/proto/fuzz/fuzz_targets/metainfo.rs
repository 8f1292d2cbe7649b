//! Any bytes as a torrent file: bencode decoding and the metainfo checks
//! must not panic, errors must point inside the input, a decoded value must
//! re-encode to exactly the input, and an accepted
//! torrent must be self-consistent (its pieces cover its length).
#![no_main]

use hopwise_proto::bittorrent::bencode;
use hopwise_proto::bittorrent::metainfo::Metainfo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match bencode::decode(data) {
        Ok(v) => {
            let mut again = Vec::new();
            v.encode(&mut again);
            // The decoder accepts only canonical integers and lengths and
            // keeps dictionaries in input order, so what it accepts
            // re-encodes byte for byte.
            assert_eq!(again, data);
        }
        Err(e) => assert!(e.at <= data.len(), "{e}"),
    }
    match Metainfo::parse(data) {
        Ok(m) => {
            let n = m.piece_count() as u64;
            assert!(n >= 1);
            assert_eq!(n, m.length.div_ceil(m.piece_length as u64));
            let total: u64 = (0..m.piece_count()).map(|i| m.piece_len(i) as u64).sum();
            assert_eq!(total, m.length);
        }
        Err(e) => assert!(e.at <= data.len(), "{e}"),
    }
});
