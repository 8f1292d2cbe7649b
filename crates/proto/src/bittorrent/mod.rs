//! BitTorrent, sans-IO: the peer wire protocol (BEP 3) and the metainfo
//! (`.torrent`) format.
//!
//! * [`wire`]: the handshake and the length-prefixed messages, with a
//!   streaming decoder; its items are re-exported here, so
//!   `hopwise_proto::bittorrent::{Msg, Reader, Event, Handshake, BLOCK}`
//!   name the codec. The simulator's swarm model (`reproduce ledbat-swarm`)
//!   and the real client (`hopwise bt`, crate `hopwise-net`) share it.
//! * [`metainfo`]: bencode and single-file v1 torrents, with the info-hash
//!   taken over the raw bytes of the `info` dictionary.

pub mod bencode;
pub mod metainfo;
pub mod wire;

pub use wire::*;
