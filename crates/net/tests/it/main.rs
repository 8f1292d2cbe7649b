//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

#[allow(clippy::disallowed_methods)]
mod bandwidth;
mod bt;
mod common;
mod config_errors;
mod config_props;
#[allow(clippy::disallowed_methods)]
mod forgery;
mod metrics;
#[allow(clippy::disallowed_methods)]
mod otcp;
mod paths;
mod refusals;
mod relay_view;
mod reload;
mod shutdown;
mod socks;
mod transfer;
mod utp;
