//! The µTP header and extension parser: never panics, and whatever it
//! accepts is written back by `wire::write` into something that parses to
//! the same header, selective ACK (padded) and payload.
#![no_main]

use hopwise_proto::utp::wire;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = wire::parse(data) else {
        return;
    };
    assert!(wire::HEADER_LEN + p.payload.len() <= data.len());
    let sack = p.sack.unwrap_or(&[]);
    let mut out = Vec::new();
    wire::write(&p.header, sack, p.payload, &mut out);
    let q = wire::parse(&out).expect("re-encoded packet parses");
    assert_eq!(q.header, p.header);
    assert_eq!(q.payload, p.payload);
    let qs = q.sack.unwrap_or(&[]);
    let n = sack.len().min(252);
    assert_eq!(&qs[..n.min(qs.len())], &sack[..n.min(qs.len())]);
});
