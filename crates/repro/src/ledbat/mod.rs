//! Seed 003: C. Testa and D. Rossi, "Delay-based congestion control:
//! flow vs. BitTorrent swarm perspectives" (Computer Networks 2014), and
//! its swarm study: LEDBAT, Vegas, LP and NICE against NewReno.
//!
//! * [`flow`]: `ledbat-flow`, flows at one bottleneck (§3-4);
//! * [`swarm`]: `ledbat-swarm`, BitTorrent swarms uploading with each (§5);
//! * `lab` (feature `lab`): `hopwise lab utp`, µTP on real sockets (hopwise's
//!   and libtorrent's) alone and beside kernel CUBIC at a shaped bottleneck.

pub mod flow;
#[cfg(feature = "lab")]
pub mod lab;
pub mod swarm;
