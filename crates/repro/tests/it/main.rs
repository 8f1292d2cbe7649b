//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

mod backtap_circuit;
mod backtap_dumbbell;
mod backtap_inter;
mod backtap_network;
#[cfg(feature = "lab")]
mod lab_kernel;
mod ledbat_flow;
mod ledbat_swarm;
mod otcp;
mod overlay_ack;
mod pendulum;
mod tor_scenario;
mod toy_reproduction;
