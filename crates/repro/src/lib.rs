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
//! kernel TCP and the daemons, on `hopwise-lab`'s namespaces.

#![forbid(unsafe_code)]

pub mod backtap;
pub mod ledbat;
mod legacy;
pub mod otcp;
pub mod overlay_ack;
pub mod pendulum;

// Transitional: what the papers imported from this crate before the
// toolkit moved out. Removed once every paper implements `Reproduction`.
pub use hopwise_experiment::figs;
pub use hopwise_experiment::stats::{bootstrap_ci90, mean_ci90, mean_sd, quantile, t90};
pub use hopwise_experiment::{
    claims_table, par_map, plural, write_summary, Claim, Progress, Silent, Verdict,
};
pub use legacy::{data_pairs, legacy_claim, write_csv, Experiment, Outcome, ReproOpts};

/// Every reproduction, in the order `--list` shows them.
pub fn registry() -> Vec<Box<dyn hopwise_experiment::Experiment>> {
    vec![
        Box::new(pendulum::experiment()),
        Box::new(ledbat::flow::experiment()),
        Box::new(ledbat::swarm::experiment()),
        Box::new(overlay_ack::experiment()),
        Box::new(backtap::circuit::BacktapCircuit),
        Box::new(backtap::network::BacktapNetwork),
        Box::new(otcp::experiment()),
    ]
}

/// Finds a reproduction by name.
pub fn find(name: &str) -> Option<Box<dyn hopwise_experiment::Experiment>> {
    registry().into_iter().find(|e| e.name() == name)
}
