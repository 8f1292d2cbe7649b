//! # hopwise-repro
//!
//! Reproductions of the seed papers' key experiments, one folder per paper:
//!
//! | folder | seed paper | reproductions |
//! | --- | --- | --- |
//! | [`overlay_ack`] | 000: ACKs in overlays | `overlay-ack` |
//! | [`otcp`] | 001: Overlay TCP | `otcp` |
//! | [`backtap`] | 002: BackTap | `backtap-circuit`, `backtap-network` |
//! | [`ledbat`] | 003: LEDBAT and other low-priority transports | `ledbat-flow`, `ledbat-swarm` |
//! | [`pendulum`] | 004: two-way TCP, the data pendulum | `pendulum` |
//!
//! Each reproduction implements [`hopwise_experiment::Reproduction`]: its
//! plan, runs, claims and outputs; the toolkit's driver does the rest.
//! With the `lab` feature, a paper's folder also holds its experiments on
//! kernel TCP and the daemons, on `hopwise-lab`'s namespaces, and
//! `kernel_check` (no paper) checks the simulator's congestion controls
//! against the host's kernel (`hopwise lab cc-check`).

#![forbid(unsafe_code)]

pub mod backtap;
/// The simulator's models against the host's kernel, on the lab's namespaces.
#[cfg(feature = "lab")]
pub mod kernel_check;
pub mod ledbat;
pub mod otcp;
pub mod overlay_ack;
pub mod pendulum;

/// Every reproduction, in the order `--list` shows them.
pub fn registry() -> Vec<Box<dyn hopwise_experiment::Experiment>> {
    vec![
        Box::new(pendulum::Pendulum),
        Box::new(ledbat::flow::LedbatFlow),
        Box::new(ledbat::swarm::LedbatSwarm),
        Box::new(overlay_ack::OverlayAck),
        Box::new(backtap::circuit::BacktapCircuit),
        Box::new(backtap::network::BacktapNetwork),
        Box::new(otcp::Otcp),
    ]
}

/// Finds a reproduction by name.
pub fn find(name: &str) -> Option<Box<dyn hopwise_experiment::Experiment>> {
    registry().into_iter().find(|e| e.name() == name)
}
