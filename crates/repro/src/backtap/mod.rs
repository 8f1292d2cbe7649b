//! Seed 002: F. Tschorsch and B. Scheuermann, "Mind the Gap: Towards a
//! Backpressure-Based Transport Protocol for the Tor Network" (NSDI 2016):
//! BackTap, hop-by-hop backpressure for circuit overlays.
//!
//! * [`common`]: what both reproductions share: the constants, the
//!   relays' refills, the transports' configurations, the circuit of
//!   Fig. 5, and intervals over seeds;
//! * [`circuit`]: `backtap-circuit`, one circuit (Fig. 5), multiplexing and
//!   the late-comer (§4);
//! * [`network`]: `backtap-network`, Tor networks: fairness, overhead,
//!   backlog, TTFB/TTLB (§5);
//! * `lab` (feature `lab`): a BackTap circuit of `hopwise relay` processes
//!   against kernel TCP at one shaped bottleneck;
//! * `hops` (feature `lab`): `hopwise lab hops`, BackTap against kernel TCP
//!   spliced at the same relays, over the same three lossy hops.

pub mod circuit;
pub mod common;
#[cfg(feature = "lab")]
pub mod hops;
#[cfg(feature = "lab")]
pub mod lab;
pub mod network;
