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
//! * HyStart++ (RFC 9406) in the initial slow start when
//!   [`CcInit::hystart`] is set (`hystart.rs`).
//!
//! The recovery machinery itself (partial ACKs, RFC 6582; SACK pipe, RFC
//! 6675) lives in the transport; this type only holds the window.

use super::hystart::HyStart;
use super::{
    half_flight, reno_halving, slow_start_step, AckSample, CcInit, CongestionControl, LossEvent,
    RenoGrowth,
};
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
    hystart: Option<HyStart>,
}

impl NewReno {
    pub fn new(init: CcInit) -> Self {
        NewReno {
            mss: init.mss,
            cwnd: init.initial_window.max(1) * init.mss,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            hystart: init.hystart.then(HyStart::new),
        }
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, ack: &AckSample) {
        if self.hystart.is_some() {
            if let Some((c, s)) = slow_start_step(
                &mut self.hystart,
                &mut self.growth,
                self.cwnd,
                self.ssthresh,
                ack,
                self.mss,
            ) {
                (self.cwnd, self.ssthresh) = (c, s);
                return;
            }
        }
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
        self.hystart = None;
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = half_flight(in_flight, self.mss);
        self.cwnd = self.mss;
        self.growth.acked_acc = 0;
        self.hystart = None;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
}
