//! Any bytes on a BitTorrent peer connection, in any chunking: the decoder
//! must not panic, must refuse everything after an error, and must decode
//! the same events whether the bytes come at once or split in two.
#![no_main]

use hopwise_proto::bittorrent::{Reader, WireError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let cut = (first as usize).min(rest.len());
    let mut whole = Reader::with_handshake(None);
    let mut a = Vec::new();
    let ra = whole.push(rest, &mut a);
    let mut split = Reader::with_handshake(None);
    let mut b = Vec::new();
    let rb = split
        .push(&rest[..cut], &mut b)
        .and_then(|()| split.push(&rest[cut..], &mut b));
    assert_eq!(a, b);
    assert_eq!(ra.is_err(), rb.is_err());
    if ra.is_err() {
        assert_eq!(whole.push(&[0], &mut a), Err(WireError::Failed));
    }
});
