//! Any bytes at the start of an oTCP connection: the route-header decoder
//! must not panic, must consume no more than it was given, and what it
//! accepts must encode back to the bytes it read.
#![no_main]

use hopwise_proto::otcp::Route;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((route, n))) = Route::decode(data) {
        assert!(n <= data.len());
        assert_eq!(route.encode().expect("decoded routes encode"), &data[..n]);
    }
});
