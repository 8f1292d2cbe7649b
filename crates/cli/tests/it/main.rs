//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

mod bt_cli;
mod cli_args;
mod common;
#[allow(clippy::disallowed_methods)]
mod interop;
mod lab_backtap;
mod lab_hops;
mod lab_otcp;
mod model_cli;
#[allow(clippy::disallowed_methods)]
mod net_cli;
#[allow(clippy::disallowed_methods)]
mod ops_cli;
mod report_html;
mod sim_capture;
mod sim_table;
mod sweep_cli;
mod sweep_shards;
mod tor_cli;
mod utp_cli;
