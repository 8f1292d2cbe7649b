//! Any bytes at the start of a connection to an oTCP relay (a route header
//! or an RTT probe), and any probe reply: the decoders must not panic, must
//! consume no more than they were given, and what they accept must encode
//! back to the bytes they read.
#![no_main]

use hopwise_proto::otcp::{Opening, ProbeReply, REPLY_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((opening, n))) = Opening::decode(data) {
        assert!(n <= data.len());
        assert_eq!(opening.encode().expect("decoded openings encode"), &data[..n]);
    }
    if let Ok(reply) = <&[u8; REPLY_LEN]>::try_from(&data[..data.len().min(REPLY_LEN)]) {
        if let Ok(r) = ProbeReply::decode(reply) {
            assert_eq!(r.encode()[0], reply[0]);
        }
    }
});
