//! # hopwise-net
//!
//! The daemons behind `hopwise relay`, `hopwise proxy`, `hopwise
//! quickstart` and `hopwise otcp`: tokio drives the sans-IO protocol code of `hopwise-proto`
//! over real sockets. This crate holds no protocol logic of its own:
//!
//! * `hopwise_proto::overlay::Host` (Noise links, circuits, streams, BackTap)
//!   gets every UDP datagram and timer; what it wants sent goes to the socket;
//! * TCP connections (SOCKS clients at the proxy, destinations at the exit)
//!   live in tasks that move bytes to and from the host's streams;
//! * [`otcp`]: `hopwise otcp relay` and `forward`, oTCP (seed 001) over the
//!   kernel's TCP, with `hopwise_proto::otcp`'s header, probe and splice;
//! * around that: configuration files ([`config`]), key files ([`keys`]), the
//!   directory authority's key and signature ([`authority`]), the
//!   link emulator ([`emu`]), Prometheus metrics ([`metrics`]), reloading a
//!   relay's configuration ([`reload`]), and a local
//!   three-relay overlay for the quick start and the tests ([`testbed`]);
//! * [`bt`]: `hopwise bt`, a one-peer BitTorrent client and seeder over any
//!   byte stream; the exception to the rule above, its small session logic
//!   (interest, requests, piece checks) lives there, with the codec and the
//!   metainfo in `hopwise_proto::bittorrent`.
//!
//! `docs/relay.md` is the operator's guide. tokio appears in no crate below
//! this one.

mod accept;
pub mod authority;
pub mod bt;
pub mod check;
pub mod clock;
pub mod config;
mod core;
pub mod daemon;
pub mod emu;
pub mod keys;
pub mod metrics;
pub mod otcp;
pub mod path;
pub mod refusals;
pub mod reload;
pub mod socks;
mod stream;
pub mod testbed;
mod udp;
pub mod utp;

pub use crate::core::{CircuitSnapshot, Snapshot};
pub use daemon::{spawn_proxy, spawn_relay, Handle, StartError};
