//! DCTCP, RFC 8257: Reno's window, cut in proportion to the fraction of
//! ECN-marked bytes.
//!
//! * The sender (RFC 8257 §3.3) counts the bytes acknowledged and those
//!   acknowledged by ACKs carrying ECN-Echo; once per window of data (when
//!   the data outstanding at the start of the window has been
//!   acknowledged: `RoundTracker`) it updates `α ← (1 − g)·α + g·M`, with
//!   `M` the marked fraction and `g` = 1/16 (§4.2), `α` starting at 1 (as
//!   Linux's `dctcp_alpha_on_init` default).
//! * On ECN-Echo, at most once per window (the transport's rule, RFC 3168
//!   §6.1.2): `cwnd ← cwnd·(1 − α/2)` and ssthresh to the new window
//!   (§3.3, step 9), never below two segments.
//! * Loss and timeouts are answered as by NewReno (§3.5); growth is
//!   Reno's (slow start, RFC 3465 L = 2, and congestion avoidance).
//! * The receiver's echo (§3.2: ECE mirrors each segment's CE mark,
//!   with an immediate ACK whenever the mark changes) is the transport's
//!   (see `Controller::dctcp_echo`).

use super::{
    half_flight, reno_halving, AckSample, CcInit, CongestionControl, LossEvent, ParamValue,
    RenoGrowth, RoundTracker,
};
use crate::time::Time;

/// DCTCP's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct DctcpConfig {
    /// `g`, the weight of a new marked fraction (RFC 8257 §4.2: 1/16).
    pub g: f64,
    /// The initial `α` (Linux: 1).
    pub alpha_init: f64,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            g: 1.0 / 16.0,
            alpha_init: 1.0,
        }
    }
}

impl DctcpConfig {
    pub const PARAMS: &'static [&'static str] = &["g", "alpha_init"];

    /// `Ok(false)` if `key` is not a DCTCP parameter.
    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "g" => self.g = v.positive_at_most(1.0)?,
            "alpha_init" => self.alpha_init = v.in_range(0.0, 1.0)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    cfg: DctcpConfig,
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
    alpha: f64,
    acked: u64,
    marked: u64,
    window: RoundTracker,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig, init: CcInit) -> Self {
        Dctcp {
            alpha: cfg.alpha_init,
            cfg,
            mss: init.mss.max(1),
            cwnd: init.initial_window.max(1) * init.mss.max(1),
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            acked: 0,
            marked: 0,
            window: RoundTracker::new(),
        }
    }

    /// The current estimate of the marked fraction, `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl CongestionControl for Dctcp {
    fn on_ecn_ack(&mut self, _now: Time, bytes_acked: u64, ece: bool) {
        self.acked += bytes_acked;
        if ece {
            self.marked += bytes_acked;
        }
    }

    fn on_ack(&mut self, ack: &AckSample) {
        if self.window.on_ack(ack.delivered, ack.sent) && self.acked > 0 {
            // RFC 8257 §3.3 steps 4–7.
            let m = self.marked as f64 / self.acked as f64;
            self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g * m;
            self.acked = 0;
            self.marked = 0;
        }
        if ack.in_recovery || !ack.cwnd_limited {
            return;
        }
        self.cwnd = self
            .growth
            .grow(self.cwnd, self.ssthresh, ack.bytes_acked, self.mss);
    }

    fn on_ecn_echo(&mut self, _ev: &LossEvent) {
        // RFC 8257 §3.3 step 9.
        let w = (self.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
        self.cwnd = w.max(2 * self.mss).min(self.cwnd);
        self.ssthresh = self.cwnd;
        self.growth.acked_acc = 0;
    }

    fn on_loss(&mut self, loss: &LossEvent) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn ack(delivered: u64, sent: u64, now: Time) -> AckSample {
        AckSample {
            now,
            bytes_acked: 1000,
            in_flight: 10_000,
            rtt: Some(Dur::from_millis(10)),
            srtt: Dur::from_millis(10),
            min_rtt: Dur::from_millis(10),
            owd: None,
            delivered,
            sent,
            in_recovery: false,
            cwnd_limited: false,
        }
    }

    #[test]
    fn alpha_follows_the_marked_fraction_and_sets_the_cut() {
        let mut d = Dctcp::new(DctcpConfig::default(), CcInit::new(1000));
        let t = Time::ZERO;
        // Many windows with a quarter of the bytes marked: α → 0.25.
        let mut delivered = 0;
        for _ in 0..200 {
            for i in 0..4 {
                d.on_ecn_ack(t, 1000, i == 0);
                delivered += 1000;
                d.on_ack(&ack(delivered, delivered + 4000, t));
            }
        }
        assert!((d.alpha() - 0.25).abs() < 0.01, "alpha {}", d.alpha());
        let before = d.cwnd();
        d.on_ecn_echo(&LossEvent {
            now: t,
            in_flight: before,
        });
        let want = (before as f64 * (1.0 - d.alpha() / 2.0)) as u64;
        assert_eq!(d.cwnd(), want.max(2000));
        assert_eq!(d.ssthresh(), d.cwnd());
    }
}
