//! Any 509-byte relay cell body (the circuit layer's stream messages): the
//! decoder must not panic, and a message it accepts must re-encode to a
//! body that decodes to the same message.
#![no_main]

use hopwise_proto::backtap::wire::CellBody;
use hopwise_proto::backtap::CELL_BODY_LEN;
use hopwise_proto::circuit::cell;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut body: CellBody = [0; CELL_BODY_LEN];
    let n = data.len().min(CELL_BODY_LEN);
    body[..n].copy_from_slice(&data[..n]);
    if let Ok((id, msg)) = cell::decode(&body) {
        let mut again: CellBody = [0; CELL_BODY_LEN];
        cell::encode(id, &msg, &mut again);
        let (id2, msg2) = cell::decode(&again).expect("a re-encoded cell decodes");
        assert_eq!(id, id2);
        assert_eq!(msg, msg2);
    }
});
