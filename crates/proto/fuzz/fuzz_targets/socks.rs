//! Any bytes from a SOCKS client: the greeting and request parsers must not
//! panic, and what they consume stays within the input.
#![no_main]

use hopwise_proto::circuit::socks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((_, n))) = socks::parse_greeting(data) {
        assert!(n <= data.len());
    }
    if let Ok(Some((req, n))) = socks::parse_request(data) {
        assert!(n <= data.len());
        let _ = req.addr.host();
    }
});
