//! # hopwise-proto
//!
//! Sans-IO implementations of the transports hopwise studies. Nothing in this
//! crate reads a clock, opens a socket or spawns a task: every entry point
//! takes `now: Time` and returns what should be sent and when to be woken.
//! The packet-level simulator (`hopwise-sim`) and the UDP daemon drive the
//! same code.

#![forbid(unsafe_code)]

pub mod backtap;
pub mod bittorrent;
pub mod bucket;
pub mod cc;
pub mod circuit;
#[cfg(feature = "link")]
pub mod link;
pub mod otcp;
#[cfg(feature = "link")]
pub mod overlay;
pub mod ring;
pub mod rng;
pub mod rtt;
pub mod slab;
pub mod tcp;
pub mod utp;

pub mod time;
pub mod units;

pub use time::{Dur, Time};
