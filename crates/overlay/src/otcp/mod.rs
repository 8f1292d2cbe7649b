//! Overlay TCP (split-TCP paths) on the simulator: the client and relay
//! applications ([`agents`]) and a transfer over a chain of hops built for
//! it ([`chain`]).

pub mod agents;
pub mod chain;
