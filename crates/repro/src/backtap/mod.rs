//! Seed 002: F. Tschorsch and B. Scheuermann, "Mind the Gap: Towards a
//! Backpressure-Based Transport Protocol for the Tor Network" (NSDI 2016):
//! BackTap, hop-by-hop backpressure for circuit overlays.
//!
//! * [`circuit`]: `backtap-circuit`, one circuit (Fig. 5), multiplexing and
//!   the late-comer (§4);
//! * [`network`]: `backtap-network`, Tor networks: fairness, overhead,
//!   backlog, TTFB/TTLB (§5);
//! * `lab` (feature `lab`): a BackTap circuit of `hopwise relay` processes
//!   against kernel TCP at one shaped bottleneck.

pub mod circuit;
#[cfg(feature = "lab")]
pub mod lab;
pub mod network;
