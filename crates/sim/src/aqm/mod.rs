//! Active queue management: CoDel (RFC 8289), FQ-CoDel (RFC 8290), PIE
//! (RFC 8033) and RED with its gentle variant (Floyd & Jacobson 1993;
//! Floyd 2000). Each marks an ECN-capable packet Congestion Experienced
//! instead of dropping it when its `ecn` option is on (RFC 3168 §5), and
//! counts what it dropped and marked ([`AqmCounts`]).
//!
//! These are [`crate::qdisc::Qdisc`] variants; the drop-tail, ACKs-first
//! and token-bucket disciplines stay in [`crate::qdisc`].

pub mod codel;
pub mod fq_codel;
pub mod pie;
pub mod red;

use crate::packet::Packet;

pub use codel::{Codel, CodelParams};
pub use fq_codel::FqCodel;
pub use pie::{Pie, PieParams};
pub use red::{Red, RedParams};

/// What an AQM did to the packets it was offered, over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AqmCounts {
    /// Packets the AQM chose to drop (its early or control-law drops, not
    /// overflow of its limit).
    pub aqm_drops: u64,
    /// Packets it marked Congestion Experienced instead.
    pub marks: u64,
    /// Packets dropped after they had been queued: CoDel's drops at
    /// dequeue and FQ-CoDel's overflow drops from the fattest queue. (The
    /// simulator counts packets refused at enqueue itself.)
    pub queued_drops: u64,
}

impl AqmCounts {
    /// A packet already queued was dropped by the AQM's decision.
    fn dequeue_drop(&mut self) {
        self.aqm_drops += 1;
        self.queued_drops += 1;
    }
}

/// A queued packet and the time it entered the queue (ns).
#[derive(Debug)]
struct Stamped {
    at_ns: u64,
    p: Packet,
}

#[cfg(test)]
mod tests;
