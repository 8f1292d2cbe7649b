//! CUBIC congestion control, RFC 9438.
//!
//! * Window growth in congestion avoidance follows the cubic function
//!   `W_cubic(t) = C·(t − K)³ + W_max` (RFC 9438 §4.2, Figure 1) with
//!   `K = ∛((W_max − cwnd_epoch) / C)` (Figure 2). `t` is the time since the
//!   start of the current congestion-avoidance stage (the epoch) and the
//!   window aims at `W_cubic(t + RTT)` with RTT the smoothed RTT, clamped to
//!   `[cwnd, 1.5·cwnd]` (§4.2, target), growing by `(target − cwnd)/cwnd` per
//!   acknowledged segment (§4.4, §4.5).
//! * Reno-friendly region (§4.3): a Reno estimate `W_est` grows by
//!   `α_cubic · segments_acked / cwnd`, `α_cubic = 3(1 − β)/(1 + β)`,
//!   switching to 1 once `W_est ≥ cwnd_prior`; while `W_cubic(t) < W_est`
//!   the window follows `W_est`.
//! * Multiplicative decrease (§4.6, Figure 5): `ssthresh = max(flight_size ·
//!   β_cubic, 2·SMSS)`, `cwnd = ssthresh`, `cwnd_prior = cwnd`; fast
//!   convergence (§4.7) lowers `W_max` to `cwnd·(1 + β)/2` when the window
//!   had not regained the previous `W_max`.
//! * Timeout (§4.8): cwnd = one segment, ssthresh as on loss; the first
//!   congestion-avoidance stage afterwards uses `K = 0` and `W_max` = the
//!   window at the start of that stage. The same applies before the first
//!   loss (§4.10: `W_max` undefined).
//! * Slow start is Reno's (§4.10; RFC 5681 with RFC 3465 L = 2), with
//!   HyStart++ (RFC 9406, `hystart.rs`) in the initial slow start when
//!   [`CcInit::hystart`] is set; otherwise it ends at ssthresh or on loss.
//! * Application-limited flows (§5.8): no growth while the application, not
//!   the window, limits sending, and `t` excludes those periods (the epoch
//!   start moves forward by the time spent application-limited).
//!
//! Windows are kept in bytes as `f64`; the cubic arithmetic is in segments
//! and seconds as the RFC writes it. Cross-checked against s2n-quic's
//! `recovery/cubic.rs` and Linux `tcp_cubic.c` (reading only).

use super::hystart::HyStart;
use super::{
    bytes_of, rtt_estimate, slow_start_step, AckSample, CcInit, CongestionControl, LossEvent,
    ParamValue, RenoGrowth,
};
use crate::time::{Dur, Time};

/// CUBIC's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct CubicConfig {
    /// `C`, the aggressiveness of the cubic function, in segments/s³.
    /// RFC 9438 §5.1: "C SHOULD be set to 0.4".
    pub c: f64,
    /// `β_cubic`, the multiplicative-decrease factor. RFC 9438 §4.6: 0.7.
    pub beta: f64,
    /// Fast convergence, RFC 9438 §4.7 (on by default).
    pub fast_convergence: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
        }
    }
}

impl CubicConfig {
    pub const PARAMS: &'static [&'static str] = &["c", "beta", "fast_convergence"];

    /// `Ok(false)` if `key` is not a CUBIC parameter.
    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            // 250 times RFC 9438's 0.4: beyond any experiment, and far
            // from the values where W_cubic overflows to infinity.
            "c" => self.c = v.positive_at_most(100.0)?,
            "beta" => {
                let b = v.in_range(0.0, 1.0)?;
                if b == 0.0 || b == 1.0 {
                    return Err(format!("must be strictly between 0 and 1, got {b}"));
                }
                self.beta = b;
            }
            "fast_convergence" => self.fast_convergence = v.boolean()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `α_cubic = 3·(1 − β)/(1 + β)` (RFC 9438 §4.3, Figure 4).
    pub fn alpha(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }
}

/// `W_cubic(t) = C·(t − K)³ + W_max` (RFC 9438 §4.2, Figure 1), in segments.
pub fn w_cubic(c: f64, t: f64, k: f64, w_max: f64) -> f64 {
    c * (t - k).powi(3) + w_max
}

/// `K = ∛((W_max − cwnd_epoch) / C)` (RFC 9438 §4.2, Figure 2), in seconds;
/// zero if the epoch starts at or above `W_max`.
pub fn cubic_k(c: f64, w_max: f64, cwnd_epoch: f64) -> f64 {
    if w_max > cwnd_epoch {
        ((w_max - cwnd_epoch) / c).cbrt()
    } else {
        0.0
    }
}

/// The state of one congestion-avoidance stage.
#[derive(Clone, Debug, PartialEq)]
struct Epoch {
    /// `t_epoch`, moved forward over application-limited periods (§5.8).
    start: Time,
    /// `K`, seconds.
    k: f64,
    /// `W_max` for this stage, segments.
    w_max: f64,
    /// `W_est`, segments (§4.3).
    w_est: f64,
}

#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    mss: u64,
    /// Bytes.
    cwnd: f64,
    ssthresh: u64,
    growth: RenoGrowth,
    /// `W_max` in segments; `None` while undefined (before the first loss,
    /// and after a timeout, §4.8/§4.10).
    w_max: Option<f64>,
    /// `cwnd_prior` in segments (§4.6), for the α switch of §4.3.
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    last_ack: Option<Time>,
    hystart: Option<HyStart>,
}

impl Cubic {
    pub fn new(cfg: CubicConfig, init: CcInit) -> Self {
        Cubic {
            cfg,
            mss: init.mss.max(1),
            cwnd: (init.initial_window.max(1) * init.mss.max(1)) as f64,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            last_ack: None,
            hystart: init.hystart.then(HyStart::new),
        }
    }

    fn seg(&self) -> f64 {
        self.mss as f64
    }

    /// Starts a congestion-avoidance stage at `now` (RFC 9438 §4.2).
    fn start_epoch(&mut self, now: Time) -> Epoch {
        let cwnd_epoch = self.cwnd / self.seg();
        let (w_max, k) = match self.w_max {
            Some(w_max) => (w_max, cubic_k(self.cfg.c, w_max, cwnd_epoch)),
            None => {
                // §4.8 / §4.10: K = 0 and W_max = cwnd at the start of the
                // stage; cwnd_prior = cwnd as §4.10 says for the lossless case.
                self.cwnd_prior = cwnd_epoch;
                (cwnd_epoch, 0.0)
            }
        };
        Epoch {
            start: now,
            k,
            w_max,
            // §4.3: W_est starts at cwnd_epoch.
            w_est: cwnd_epoch,
        }
    }

    #[cfg(test)]
    fn w_max(&self) -> Option<f64> {
        self.w_max
    }

    #[cfg(test)]
    fn k(&self) -> Option<f64> {
        self.epoch.as_ref().map(|e| e.k)
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, ack: &AckSample) {
        let since_last = self.last_ack.map_or(Dur::ZERO, |t| ack.now.since(t));
        self.last_ack = Some(ack.now);
        if self.hystart.is_some() {
            let (cwnd_u, ss) = (self.cwnd as u64, self.ssthresh);
            if let Some((c, s)) = slow_start_step(
                &mut self.hystart,
                &mut self.growth,
                cwnd_u,
                ss,
                ack,
                self.mss,
            ) {
                if c != cwnd_u {
                    self.cwnd = c as f64;
                }
                self.ssthresh = s;
                return;
            }
        }
        if ack.in_recovery {
            return;
        }
        if !ack.cwnd_limited {
            // §5.8: no growth, and t must not include this period.
            if let Some(e) = &mut self.epoch {
                e.start += since_last;
            }
            return;
        }
        let cwnd_u = self.cwnd as u64;
        if cwnd_u < self.ssthresh {
            // §4.10: slow start as in Reno.
            self.cwnd =
                self.growth
                    .grow(cwnd_u, self.ssthresh, ack.bytes_acked, self.mss) as f64;
            return;
        }

        let seg = self.seg();
        let epoch = match self.epoch.take() {
            Some(e) => e,
            None => self.start_epoch(ack.now),
        };
        let mut e = epoch;
        let cw = self.cwnd / seg;
        let t = ack.now.since(e.start).as_secs_f64();
        let rtt = rtt_estimate(ack).as_secs_f64();

        // §4.3 Reno-friendly region: W_est += α·segments_acked/cwnd, with
        // α = 1 once W_est has reached cwnd_prior.
        let alpha = if e.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.cfg.alpha()
        };
        e.w_est += alpha * (ack.bytes_acked as f64 / seg) / cw;

        if w_cubic(self.cfg.c, t, e.k, e.w_max) < e.w_est {
            // Reno-friendly: follow W_est. (Never shrink on an ACK: the
            // window may already be above W_est from the cubic target.)
            self.cwnd = self.cwnd.max(e.w_est * seg);
        } else {
            // §4.4/§4.5 concave and convex regions: aim at W_cubic(t + RTT),
            // clamped to [cwnd, 1.5·cwnd] (§4.2), growing (target − cwnd)/cwnd
            // per acknowledged segment.
            let target = w_cubic(self.cfg.c, t + rtt, e.k, e.w_max).clamp(cw, 1.5 * cw);
            self.cwnd += (target - cw) / cw * ack.bytes_acked as f64;
        }
        self.epoch = Some(e);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        let seg = self.seg();
        let cw = self.cwnd / seg;
        // §4.7 fast convergence.
        self.w_max = Some(match self.w_max {
            Some(w_max) if self.cfg.fast_convergence && cw < w_max => {
                cw * (1.0 + self.cfg.beta) / 2.0
            }
            _ => cw,
        });
        // §4.6 Figure 5: ssthresh = flight_size · β_cubic. The transport's
        // in-flight count can exceed the window after a long recovery
        // without SACK; like Linux (which uses cwnd), never let it raise the
        // window.
        self.cwnd_prior = cw;
        let ss = (loss.in_flight as f64).min(self.cwnd) * self.cfg.beta;
        let floor = (2 * self.mss) as f64;
        self.cwnd = ss.max(floor);
        self.ssthresh = bytes_of(ss, 2 * self.mss);
        self.epoch = None;
        self.growth.acked_acc = 0;
        self.hystart = None;
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        // §4.8: Reno's loss window, ssthresh with β_cubic; the next stage
        // uses K = 0 and W_max = cwnd at its start.
        self.ssthresh = bytes_of(in_flight as f64 * self.cfg.beta, 2 * self.mss);
        self.cwnd = self.seg();
        self.w_max = None;
        self.epoch = None;
        self.growth.acked_acc = 0;
        self.hystart = None;
    }

    fn cwnd(&self) -> u64 {
        bytes_of(self.cwnd, 1)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(now: Time, bytes: u64, srtt: Dur) -> AckSample {
        AckSample {
            now,
            bytes_acked: bytes,
            in_flight: 0,
            rtt: Some(srtt),
            srtt,
            min_rtt: srtt,
            owd: None,
            delivered: 0,
            sent: 0,
            in_recovery: false,
            cwnd_limited: true,
        }
    }

    /// A controller that has just lost at `w` segments (W_max = w).
    fn after_loss_at(w: u64) -> Cubic {
        let mut c = Cubic::new(CubicConfig::default(), CcInit::new(MSS));
        c.cwnd = (w * MSS) as f64;
        c.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: w * MSS,
        });
        c
    }

    #[test]
    fn k_and_w_cubic_match_the_rfc_formulas() {
        // W_max = 100, cwnd_epoch = β·W_max = 70, C = 0.4:
        // K = ∛(30/0.4) = ∛75.
        let k = cubic_k(0.4, 100.0, 70.0);
        assert!((k - 4.217_163_326_508_746).abs() < 1e-12, "{k}");
        assert!((w_cubic(0.4, 0.0, k, 100.0) - 70.0).abs() < 1e-9);
        assert!((w_cubic(0.4, k, k, 100.0) - 100.0).abs() < 1e-12);
        assert!((w_cubic(0.4, k + 1.0, k, 100.0) - 100.4).abs() < 1e-9);
        assert!((w_cubic(0.4, k + 2.0, k, 100.0) - 103.2).abs() < 1e-9);
        assert!((w_cubic(0.4, 1.0, k, 100.0) - (100.0 - 0.4 * (k - 1.0).powi(3))).abs() < 1e-9);
        assert_eq!(cubic_k(0.4, 50.0, 60.0), 0.0);
        // α_cubic for β = 0.7 (RFC 9438 §4.3): 0.9/1.7.
        assert!((CubicConfig::default().alpha() - 0.9 / 1.7).abs() < 1e-12);
    }

    #[test]
    fn loss_sets_beta_window_and_k() {
        let mut c = after_loss_at(100);
        assert_eq!(c.cwnd(), 70 * MSS);
        assert_eq!(c.ssthresh(), 70 * MSS);
        assert_eq!(c.w_max(), Some(100.0));
        // The first CA ACK starts the epoch with K from Figure 2.
        c.on_ack(&ack(Time::from_secs_f64(1.0), MSS, Dur::from_millis(100)));
        let k = c.k().unwrap();
        assert!((k - 75f64.cbrt()).abs() < 1e-9, "{k}");
    }

    #[test]
    fn window_tracks_w_cubic_in_the_concave_and_convex_regions() {
        // A large window and a long RTT keep the Reno-friendly estimate below
        // the cubic curve (RFC 9438 §4.3: W_est gains only ~0.53 segment per
        // RTT), so the window follows W_cubic(t + RTT).
        let srtt = Dur::from_millis(100);
        let mut c = after_loss_at(1000);
        assert_eq!(c.cwnd(), 700 * MSS);
        let t0 = Time::ZERO + Dur::from_secs(10);
        let k = (300.0f64 / 0.4).cbrt();
        // One ACK of ten segments every millisecond: about one window per RTT.
        let mut now = t0;
        for step in 1..=12_000u64 {
            now = t0 + Dur::from_millis(step);
            c.on_ack(&ack(now, 10 * MSS, srtt));
            let t = now.since(t0).as_secs_f64();
            if step % 1000 == 0 {
                let want = w_cubic(0.4, t + 0.1, k, 1000.0);
                let got = c.cwnd() as f64 / MSS as f64;
                assert!(
                    (got - want).abs() / want < 0.01,
                    "t={t}: cwnd {got} vs W_cubic(t+RTT) {want}"
                );
            }
        }
        // Past K the window is convex and above W_max.
        assert!(now.since(t0).as_secs_f64() > k + 1.0);
        assert!(c.cwnd() > 1000 * MSS);
    }

    #[test]
    fn reno_friendly_region_follows_w_est() {
        // Short RTT: Reno's estimate outgrows the (flat) cubic curve.
        let srtt = Dur::from_millis(1);
        let mut c = after_loss_at(10);
        assert_eq!(c.cwnd(), 7 * MSS);
        let alpha = CubicConfig::default().alpha();
        let t0 = Time::ZERO + Dur::from_secs(1);
        let mut w_est = 7.0f64;
        let mut now = t0;
        for i in 0..40u64 {
            now = t0 + Dur::from_micros(100 * i);
            c.on_ack(&ack(now, MSS, srtt));
            // The RFC's per-ACK W_est update, with cwnd = W_est in this region.
            let a = if w_est >= 10.0 { 1.0 } else { alpha };
            w_est += a * 1.0 / w_est;
        }
        let t = now.since(t0).as_secs_f64();
        assert!(w_cubic(0.4, t, (3.0f64 / 0.4).cbrt(), 10.0) < w_est);
        let got = c.cwnd() as f64 / MSS as f64;
        assert!((got - w_est).abs() < 0.01, "cwnd {got} vs W_est {w_est}");
        assert!(got > 9.0);
    }

    #[test]
    fn alpha_becomes_one_once_w_est_reaches_cwnd_prior() {
        let srtt = Dur::from_millis(1);
        let mut c = after_loss_at(10);
        let t0 = Time::ZERO + Dur::from_secs(1);
        let mut i = 0u64;
        while c.cwnd() < 10 * MSS {
            c.on_ack(&ack(t0 + Dur::from_micros(10 * i), MSS, srtt));
            i += 1;
        }
        // From here on W_est grows by 1/cwnd per segment: one window of
        // acknowledgements adds one segment (Reno).
        let before = c.cwnd() as f64 / MSS as f64;
        let n = before.round() as u64;
        for j in 0..n {
            c.on_ack(&ack(t0 + Dur::from_micros(10 * (i + j)), MSS, srtt));
        }
        let after = c.cwnd() as f64 / MSS as f64;
        assert!((after - before - 1.0).abs() < 0.1, "{before} -> {after}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = after_loss_at(100);
        c.cwnd = (80 * MSS) as f64;
        c.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: 80 * MSS,
        });
        assert!((c.w_max().unwrap() - 80.0 * 1.7 / 2.0).abs() < 1e-9);
        let mut d = Cubic::new(
            CubicConfig {
                fast_convergence: false,
                ..CubicConfig::default()
            },
            CcInit::new(MSS),
        );
        d.cwnd = (100 * MSS) as f64;
        d.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: 100 * MSS,
        });
        d.cwnd = (80 * MSS) as f64;
        d.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: 80 * MSS,
        });
        assert_eq!(d.w_max(), Some(80.0));
    }

    #[test]
    fn timeout_resets_to_one_segment_and_k_zero() {
        let mut c = after_loss_at(100);
        c.on_timeout(Time::ZERO, 50 * MSS);
        assert_eq!(c.cwnd(), MSS);
        assert_eq!(c.ssthresh(), 35 * MSS);
        // Slow start up to ssthresh, then the epoch begins with K = 0.
        let mut now = Time::ZERO + Dur::from_secs(1);
        while c.cwnd() < c.ssthresh() {
            c.on_ack(&ack(now, MSS, Dur::from_millis(50)));
            now += Dur::from_millis(1);
        }
        c.on_ack(&ack(now, MSS, Dur::from_millis(50)));
        assert_eq!(c.k(), Some(0.0));
    }

    #[test]
    fn no_growth_when_application_limited_or_in_recovery() {
        let mut c = after_loss_at(100);
        let mut a = ack(Time::ZERO + Dur::from_secs(1), MSS, Dur::from_millis(100));
        c.on_ack(&a);
        let w = c.cwnd();
        a.cwnd_limited = false;
        for i in 0..1000 {
            a.now = Time::ZERO + Dur::from_secs(1) + Dur::from_millis(10 * i);
            c.on_ack(&a);
        }
        assert_eq!(c.cwnd(), w);
        // The ten application-limited seconds do not count towards t: the
        // window is still concave (below W_max) right afterwards.
        a.cwnd_limited = true;
        for _ in 0..100 {
            a.now += Dur::from_millis(1);
            c.on_ack(&a);
        }
        // Counting them, t ≈ 10 s > K and every ACK would add half a segment.
        assert!(c.cwnd() < 80 * MSS, "{}", c.cwnd());
        a.in_recovery = true;
        let w = c.cwnd();
        for _ in 0..100 {
            a.now += Dur::from_millis(10);
            c.on_ack(&a);
        }
        assert_eq!(c.cwnd(), w);
    }
}
