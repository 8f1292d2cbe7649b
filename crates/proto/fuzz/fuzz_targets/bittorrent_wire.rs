//! Any bytes on a BitTorrent peer connection, in any chunking: the decoder
//! must not panic, must refuse everything after an error, and must decode
//! the same events whether the bytes come at once or split in two. A reader
//! that keeps blocks reports the same messages, each piece with as many
//! bytes as the length-only reader counts.
#![no_main]

use hopwise_proto::bittorrent::{Event, Msg, Reader, WireError, MAX_BLOCK};
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
    let mut keep = Reader::with_handshake(None).keep_blocks();
    let mut c = Vec::new();
    let rc = keep
        .push(&rest[..cut], &mut c)
        .and_then(|()| keep.push(&rest[cut..], &mut c));
    assert_eq!(ra.is_err(), rc.is_err());
    assert_eq!(a.len(), c.len());
    for (x, y) in a.iter().zip(&c) {
        match (x, y) {
            (
                Event::Msg(Msg::Piece { index, begin, len }),
                Event::Block { index: i, begin: g, data },
            ) => {
                assert_eq!((index, begin, *len as usize), (i, g, data.len()));
                assert!(data.len() <= MAX_BLOCK as usize);
            }
            _ => assert_eq!(x, y),
        }
    }
    assert_eq!(whole.block_bytes, keep.block_bytes);
});
