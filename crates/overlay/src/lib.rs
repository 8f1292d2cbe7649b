//! # hopwise-overlay
//!
//! Overlays written in scenario files. A scenario's `[tor]`, `[[relay]]`
//! and `[[circuit]]` sections place a Tor network (any of `hopwise-tor`'s
//! transports), `[swarm]` a BitTorrent swarm and `[[otcp]]` split-TCP
//! paths on the topology of its `[[node]]` and `[[link]]` sections, beside
//! its `[[flow]]`s: a circuit can share a bottleneck with a TCP download.
//! [`scenario`] reads and checks those sections, builds the simulation and
//! writes what the overlays measured next to `hopwise sim`'s own outputs.

#![forbid(unsafe_code)]

pub mod otcp;
pub mod scenario;
pub mod swarm;
