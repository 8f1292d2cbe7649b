//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

mod ack_bursts;
mod agents;
mod aqm_scenarios;
mod capture;
mod common;
mod determinism;
mod examples;
mod latency;
mod links;
mod rack;
mod routing;
mod scenario_errors;
