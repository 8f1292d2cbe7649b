//! TCP Vegas: L. S. Brakmo and L. L. Peterson, "TCP Vegas: End to End
//! Congestion Avoidance on a Global Internet", IEEE JSAC 13(8), 1995
//! (summarised in Testa & Rossi, Computer Networks 2014, §3.1, eqs. (1)–(2)).
//!
//! * `BaseRTT` is the minimum RTT ever measured (JSAC §3.2: "the minimum of
//!   all measured round trip times").
//! * Once per round trip (a round ends when the data outstanding at its
//!   start has been acknowledged, see [`super::RoundTracker`]) Vegas compares
//!   the expected rate `cwnd/BaseRTT` with the actual rate `cwnd/RTT`, where
//!   RTT is the minimum sample of the round (Linux `tcp_vegas.c`, to filter
//!   out delayed ACKs; the paper times one packet per round). In packets:
//!   `diff = cwnd·(RTT − BaseRTT)/RTT` (JSAC eq. (1) scaled by BaseRTT).
//! * Congestion avoidance (JSAC §3.2, eq. (2) of Testa & Rossi):
//!   `diff < α` → +1 segment next round; `diff > β` → −1 segment; otherwise
//!   hold.
//! * Slow start (JSAC §3.3): grows while `diff < γ`. The paper doubles every
//!   other RTT; like Linux we grow per ACK as Reno does (RFC 5681, RFC 3465
//!   L = 2) and check `γ` once per round. On exit the window is set to the
//!   rate actually achieved, `cwnd·BaseRTT/RTT`, plus one segment (Linux).
//! * Loss and timeout: Reno (RFC 5681 §3.1/§3.2), see [`super::reno_halving`].
//!   Like Linux, the per-round measurement restarts after a loss, after
//!   recovery and after a timeout (stale samples are not used).
//! * Application-limited ACKs (`cwnd_limited == false`) may shrink the
//!   window but never grow it: an idle sender's RTT says nothing about a
//!   larger window, and Linux's Vegas is known to inflate cwnd there.
//! * A round without any RTT sample makes no decision (Linux falls back to
//!   Reno growth when it has fewer than three samples; with timestamps every
//!   ACK carries one, so this only matters without them).
//!
//! Defaults α = 2, β = 4, γ = 1 packets are Linux `tcp_vegas.c`'s module
//! defaults; the JSAC paper evaluated α = 1, β = 3 ("Vegas-1,3") as well as
//! α = 2, β = 4.

use super::{
    half_flight, reno_halving, AckSample, CcInit, CongestionControl, LossEvent, ParamValue,
    RenoGrowth, RoundTracker,
};
use crate::time::{Dur, Time};

/// Vegas's thresholds, in packets (segments) queued in the network.
#[derive(Clone, Debug, PartialEq)]
pub struct VegasConfig {
    /// Grow when fewer than `alpha` packets are queued (default 2).
    pub alpha: f64,
    /// Shrink when more than `beta` packets are queued (default 4).
    pub beta: f64,
    /// Leave slow start when more than `gamma` packets are queued (default 1).
    pub gamma: f64,
}

impl Default for VegasConfig {
    fn default() -> Self {
        VegasConfig {
            alpha: 2.0,
            beta: 4.0,
            gamma: 1.0,
        }
    }
}

impl VegasConfig {
    pub const PARAMS: &'static [&'static str] = &["alpha", "beta", "gamma"];

    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "alpha" => self.alpha = v.in_range(0.0, 1e6)?,
            "beta" => self.beta = v.in_range(0.0, 1e6)?,
            "gamma" => self.gamma = v.in_range(0.0, 1e6)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The measurement and once-per-round decision of Vegas, shared with TCP-NICE.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VegasCore {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    /// BaseRTT: the minimum RTT ever seen.
    pub base_rtt: Option<Dur>,
    round: RoundTracker,
    /// Minimum RTT sample of the current round.
    round_min: Option<Dur>,
}

/// What one ACK meant for the round structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RoundEnd {
    /// This ACK completed a round.
    pub ended: bool,
    /// The minimum RTT sample of the completed round, if it had any.
    pub rtt: Option<Dur>,
}

impl VegasCore {
    pub fn new(alpha: f64, beta: f64, gamma: f64) -> Self {
        VegasCore {
            alpha,
            beta,
            gamma,
            base_rtt: None,
            round: RoundTracker::new(),
            round_min: None,
        }
    }

    /// Records the ACK's RTT sample and reports whether it ended a round.
    pub fn on_ack(&mut self, ack: &AckSample) -> RoundEnd {
        if let Some(r) = ack.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(r, |b| b.min(r)));
            self.round_min = Some(self.round_min.map_or(r, |m| m.min(r)));
        }
        if self.round.on_ack(ack.delivered, ack.sent) {
            RoundEnd {
                ended: true,
                rtt: self.round_min.take(),
            }
        } else {
            RoundEnd {
                ended: false,
                rtt: None,
            }
        }
    }

    /// Discards the current round's samples (after loss, recovery, timeout).
    pub fn restart(&mut self) {
        self.round.restart();
        self.round_min = None;
    }

    /// `diff = cwnd·(RTT − BaseRTT)/RTT` in packets.
    pub fn diff(&self, cwnd: u64, mss: u64, rtt: Dur) -> f64 {
        let base = self.base_rtt.unwrap_or(rtt).min(rtt).as_secs_f64();
        let rtt = rtt.as_secs_f64();
        if rtt <= 0.0 {
            return 0.0;
        }
        cwnd as f64 / mss as f64 * (rtt - base) / rtt
    }

    /// The once-per-round adjustment; returns the new (cwnd, ssthresh).
    pub fn adjust(
        &self,
        cwnd: u64,
        ssthresh: u64,
        rtt: Dur,
        mss: u64,
        cwnd_limited: bool,
    ) -> (u64, u64) {
        let diff = self.diff(cwnd, mss, rtt);
        if cwnd < ssthresh {
            if diff > self.gamma {
                // Leave slow start at the achieved rate plus one segment.
                let base = self.base_rtt.unwrap_or(rtt).min(rtt);
                let achieved =
                    (cwnd as u128 * base.as_nanos() as u128 / rtt.as_nanos().max(1) as u128) as u64;
                let w = cwnd.min((achieved + mss).max(2 * mss));
                return (w, w);
            }
            (cwnd, ssthresh)
        } else if diff > self.beta {
            let w = cwnd.saturating_sub(mss).max(2 * mss).min(cwnd);
            (w, ssthresh.min(w))
        } else if diff < self.alpha && cwnd_limited {
            (cwnd.saturating_add(mss), ssthresh)
        } else {
            (cwnd, ssthresh)
        }
    }
}

#[derive(Clone, Debug)]
pub struct Vegas {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
    core: VegasCore,
}

impl Vegas {
    pub fn new(cfg: VegasConfig, init: CcInit) -> Self {
        let mss = init.mss.max(1);
        Vegas {
            mss,
            cwnd: init.initial_window.max(1) * mss,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            core: VegasCore::new(cfg.alpha, cfg.beta, cfg.gamma),
        }
    }
}

impl CongestionControl for Vegas {
    fn on_ack(&mut self, ack: &AckSample) {
        let end = self.core.on_ack(ack);
        if ack.in_recovery {
            return;
        }
        if let Some(rtt) = end.rtt {
            (self.cwnd, self.ssthresh) =
                self.core
                    .adjust(self.cwnd, self.ssthresh, rtt, self.mss, ack.cwnd_limited);
        }
        if self.cwnd < self.ssthresh && ack.cwnd_limited {
            self.cwnd = self
                .growth
                .grow(self.cwnd, self.ssthresh, ack.bytes_acked, self.mss);
        }
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        (self.cwnd, self.ssthresh) = reno_halving(self.cwnd, loss.in_flight, self.mss);
        self.growth.acked_acc = 0;
        self.core.restart();
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        self.core.restart();
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = half_flight(in_flight, self.mss);
        self.cwnd = self.mss;
        self.growth.acked_acc = 0;
        self.core.restart();
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
}

/// A fluid single-bottleneck path for the Vegas and NICE tests: `bdp`
/// packets fill the pipe, anything beyond queues and adds proportional delay.
#[cfg(test)]
pub(crate) mod testpath {
    use super::*;

    pub struct Path {
        pub mss: u64,
        pub base: Dur,
        pub bdp: u64,
        pub now: Time,
        pub delivered: u64,
        pub sent: u64,
    }

    impl Path {
        pub fn new(mss: u64, base: Dur, bdp: u64) -> Self {
            Path {
                mss,
                base,
                bdp,
                now: Time::ZERO + Dur::from_secs(1),
                delivered: 0,
                sent: 0,
            }
        }

        /// RTT with `cwnd` bytes in flight.
        pub fn rtt(&self, cwnd: u64) -> Dur {
            let pkts = cwnd.div_ceil(self.mss);
            let q = pkts.saturating_sub(self.bdp);
            self.base + self.base * q / self.bdp
        }

        /// Delivers one round: one ACK per segment of the window, each with
        /// the RTT the window produces.
        pub fn round<C: CongestionControl>(&mut self, cc: &mut C) {
            let w = cc.cwnd();
            let rtt = self.rtt(w);
            self.sent = self.sent.max(self.delivered + w.max(1));
            let n = w.div_ceil(self.mss).max(1);
            for _ in 0..n {
                self.now += rtt / n;
                self.delivered += self.mss;
                let a = AckSample {
                    now: self.now,
                    bytes_acked: self.mss,
                    in_flight: self.sent.saturating_sub(self.delivered - self.mss),
                    rtt: Some(rtt),
                    srtt: rtt,
                    min_rtt: self.base,
                    owd: None,
                    delivered: self.delivered,
                    sent: self.sent,
                    in_recovery: false,
                    cwnd_limited: true,
                };
                cc.on_ack(&a);
                self.sent = self.sent.max(self.delivered + cc.cwnd());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testpath::Path;
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn slow_start_exits_and_settles_in_the_alpha_beta_band() {
        // 20-packet pipe: diff = packets queued.
        let mut p = Path::new(MSS, Dur::from_millis(100), 20);
        let mut v = Vegas::new(VegasConfig::default(), CcInit::new(MSS));
        for _ in 0..100 {
            p.round(&mut v);
        }
        assert!(!v.in_slow_start());
        let w = v.cwnd() / MSS;
        assert!((22..=24).contains(&w), "cwnd {w} packets");
        // A fixed point: more rounds do not move it out of the band.
        for _ in 0..20 {
            p.round(&mut v);
            assert!((22..=24).contains(&(v.cwnd() / MSS)));
        }
    }

    #[test]
    fn shrinks_one_segment_per_round_when_above_beta() {
        let mut p = Path::new(MSS, Dur::from_millis(100), 20);
        let mut v = Vegas::new(VegasConfig::default(), CcInit::new(MSS));
        v.cwnd = 40 * MSS;
        v.ssthresh = 10 * MSS;
        v.core.base_rtt = Some(p.base); // as if it had seen the empty path
        p.round(&mut v); // the first ACK only starts a round
        let mut last = v.cwnd();
        for _ in 0..10 {
            p.round(&mut v);
            assert_eq!(v.cwnd(), last - MSS);
            last = v.cwnd();
        }
        for _ in 0..20 {
            p.round(&mut v);
        }
        // Into the band (a round's minimum RTT may still reflect the
        // previous, larger window, so it can stop one below β's edge).
        assert!((22..=24).contains(&(v.cwnd() / MSS)), "{}", v.cwnd() / MSS);
    }

    #[test]
    fn grows_one_segment_per_round_below_alpha() {
        // A huge pipe: no queue, diff = 0 < α.
        let mut p = Path::new(MSS, Dur::from_millis(100), 1000);
        let mut v = Vegas::new(VegasConfig::default(), CcInit::new(MSS));
        v.ssthresh = 5 * MSS;
        v.cwnd = 10 * MSS;
        p.round(&mut v);
        let w0 = v.cwnd();
        for i in 1..=5 {
            p.round(&mut v);
            assert_eq!(v.cwnd(), w0 + i * MSS);
        }
    }

    #[test]
    fn custom_band() {
        let mut p = Path::new(MSS, Dur::from_millis(50), 30);
        let mut v = Vegas::new(
            VegasConfig {
                alpha: 6.0,
                beta: 8.0,
                gamma: 1.0,
            },
            CcInit::new(MSS),
        );
        for _ in 0..150 {
            p.round(&mut v);
        }
        assert!((36..=38).contains(&(v.cwnd() / MSS)), "{}", v.cwnd() / MSS);
    }

    #[test]
    fn loss_halves_and_timeout_resets() {
        let mut v = Vegas::new(VegasConfig::default(), CcInit::new(MSS));
        v.cwnd = 40 * MSS;
        v.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: 40 * MSS,
        });
        assert_eq!((v.cwnd(), v.ssthresh()), (20 * MSS, 20 * MSS));
        v.on_timeout(Time::ZERO, 20 * MSS);
        assert_eq!((v.cwnd(), v.ssthresh()), (MSS, 10 * MSS));
    }
}
