//! The integration tests of this crate, one test binary (one link step
//! instead of one per file): a module per area.

mod backtap;
mod baselines;
mod common;
mod merge;
mod scale;
mod star_diag;
mod vanilla;
