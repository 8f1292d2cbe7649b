//! # hopwise-models
//!
//! Closed-form and numerical models from the seed papers, as pure functions
//! that the reproductions compare simulations against and that the
//! `hopwise model ...` commands expose.

#![forbid(unsafe_code)]

pub mod pendulum;

/// The README's example runs as a doctest, so that it stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
