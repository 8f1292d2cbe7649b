//! NewReno window management.
//!
//! * Slow start and congestion avoidance: RFC 5681 §3.1, with appropriate
//!   byte counting (RFC 3465, L = 2).
//! * Multiplicative decrease on fast retransmit: ssthresh = max(FlightSize/2,
//!   2·SMSS), cwnd = ssthresh (RFC 5681 §3.2 step 2; RFC 6582 §3.2 step 2
//!   sets cwnd = ssthresh + 3·SMSS, that inflation is handled by the
//!   transport's recovery logic, not here).
//! * Retransmission timeout: ssthresh as above, cwnd = one segment, the loss
//!   window (RFC 5681 §3.1, eq. 4 and the paragraph after it).
//!
//! The recovery machinery itself (partial ACKs, RFC 6582; SACK pipe, RFC
//! 6675) lives in the transport; this type only holds the window.

use super::{
    half_flight, reno_halving, AckSample, CcInit, CongestionControl, LossEvent, RenoGrowth,
};
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
}

impl NewReno {
    pub fn new(init: CcInit) -> Self {
        NewReno {
            mss: init.mss,
            cwnd: init.initial_window.max(1) * init.mss,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
        }
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, ack: &AckSample) {
        if ack.in_recovery || !ack.cwnd_limited {
            return;
        }
        self.cwnd = self
            .growth
            .grow(self.cwnd, self.ssthresh, ack.bytes_acked, self.mss);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        // FlightSize / 2, but never above the window: without SACK the
        // transport's in-flight count can be several windows after a long
        // recovery (Linux uses cwnd / 2 for the same reason).
        (self.cwnd, self.ssthresh) = reno_halving(self.cwnd, loss.in_flight, self.mss);
        self.growth.acked_acc = 0;
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = half_flight(in_flight, self.mss);
        self.cwnd = self.mss;
        self.growth.acked_acc = 0;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
}
