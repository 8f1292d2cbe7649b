//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

mod backtap_dynamics;
mod backtap_net;
mod backtap_sack;
mod backtap_transfer;
mod backtap_window;
mod backtap_wire;
mod cc_props;
mod circuit_props;
mod onion_props;
mod tcp_rack;
mod tcp_transfer;
