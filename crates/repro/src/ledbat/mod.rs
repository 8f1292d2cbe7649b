//! Seed 003: C. Testa and D. Rossi, "Delay-based congestion control:
//! flow vs. BitTorrent swarm perspectives" (Computer Networks 2014), and
//! its swarm study: LEDBAT, Vegas, LP and NICE against NewReno.
//!
//! * [`flow`]: `ledbat-flow`, flows at one bottleneck (§3-4);
//! * [`swarm`]: `ledbat-swarm`, BitTorrent swarms uploading with each (§5).

pub mod flow;
pub mod swarm;
