//! # hopwise-tor
//!
//! A Tor relay and circuit model on the hopwise simulator: onion proxies,
//! guard/middle/exit relays and servers as simulation agents; circuits and
//! streams with Tor's relay cells and end-to-end windows; per-relay token
//! buckets; request/response applications; and the measurements of seed 002
//! §4 (R(t), W(t), rate, backlog, delay, TTFB, TTLB, per-hop queues).
//!
//! Cells move between nodes through a pluggable [`transport`]: vanilla Tor
//! (TCP connections multiplexing circuits; PCTCP with one connection per
//! circuit) or BackTap (hop-by-hop over UDP). [`TorNet`] builds a network and
//! its circuits into a simulation; [`TorResults`] holds what it measured. See
//! the crate README for what is modelled and every constant's source.

#![forbid(unsafe_code)]

pub mod buckets;
pub mod cell;
pub mod config;
pub mod edge;
pub mod net;
pub mod node;
pub mod plan;
pub mod results;
pub mod server;
pub mod tor_vegas;
pub mod torps;
pub mod transport;

pub use config::{
    BacktapTransportConfig, BucketScope, BucketSpec, Dir, LinkSharing, N23Config, N23Gating,
    ResponseDelay, ServerSpec, TcpTransportConfig, Think, TorConfig, TorVegasConfig, Traffic,
    TransportConfig, Window, WritePolicy,
};
pub use hopwise_proto::bucket::Refill;
pub use net::{Access, CircuitSpec, Installed, TorNet, TorSim};
pub use results::{
    fit_rw, CircuitResult, Fit, HopLosses, HopSample, HopTrace, NodeResult, NodeSample,
    RequestRecord, TorResults, TransportStats,
};
pub use tor_vegas::{TorVegas, TorVegasStats};
pub use torps::{TorpsCircuit, TorpsPaths, TorpsRelay};
