//! TCP Nice: A. Venkataramani, R. Kokku and M. Dahlin, "TCP Nice: A
//! Mechanism for Background Transfers", OSDI 2002, §2.2–§2.3 (summarised in
//! Testa & Rossi, Computer Networks 2014, §3.3, eq. (5)).
//!
//! Nice is Vegas (see [`super::Vegas`]) with two changes (OSDI §2.2):
//!
//! * A more sensitive congestion signal. Nice tracks the minimum and maximum
//!   RTT; an ACK is *congested* if its RTT exceeds
//!   `minRTT + δ·(maxRTT − minRTT)` (δ = "threshold" t = 0.2, OSDI §2.3).
//!   At the end of each round (once per RTT, from the delivered/sent
//!   counters) Nice halves its window if more than a fraction φ = 0.5 of the
//!   round's delay-carrying ACKs were congested, and otherwise performs
//!   Vegas's adjustment. The paper compares the congested count with `f·W`
//!   (W the window in packets); we compare with the number of ACKs of the
//!   round, which is the same with one ACK per segment and stays meaningful
//!   with delayed or stretched ACKs. The halving happens at most once per
//!   round.
//! * The window may fall below one segment, down to `min_cwnd_fraction` of
//!   one (the prototype's floor is 1/48, OSDI §2.3): the transport then sends
//!   one segment every `mss/cwnd` round-trip times. A round then spans one
//!   segment, so Vegas's "+1 segment per round" takes a window of 1/48 back
//!   to just over one segment after one uncongested round (OSDI §2.2 gives no
//!   other rule for leaving fractional windows).
//!
//! # How maxRTT starts
//!
//! OSDI §2.3 (prototype): "after the first round-trip delay estimate, maxRTT
//! is initialized to 2·minRTT" (parameter `max_rtt_init`, default 2); it then
//! grows with every larger sample. Without this the range starts at zero and
//! only ever covers what the flow itself has queued: a lone Nice flow whose
//! largest sample came from its initial-window burst (about 11 ms on a
//! 10 Mbit/s path) calls 2 ms of queuing congestion, so Vegas's own α…β
//! backlog triggers a halving every ~1.8 s (utilisation 0.66 at 10 Mbit/s
//! with per-segment ACKs, before this rule was added).
//!
//! # Delay signal (deviation, parameter `delay`)
//!
//! The congestion detector works on the one-way delay of [`AckSample::owd`]
//! by default, not on the RTT: the RTT of a lone segment includes the
//! receiver's delayed-ACK wait (40 ms in Linux, up to 500 ms by RFC 5681
//! §4.2), which exceeds `δ·(maxRTT − minRTT)` and makes every such sample
//! "congested". A Nice window below two segments consists only of such
//! samples, so a flow that reached the floor could never leave it (seen in
//! the simulator: of two Nice flows on 10 Mbit/s, one stayed at 1/48 of a
//! segment for 60 s). The OSDI prototype avoided the artefact by sending two
//! segments at a time whenever its window was below two ("Linux ... maintains
//! a minimum window size of two in order to avoid delayed acknowledgements",
//! §2.3); our transport sends single segments, but it can report the
//! receiver's ACK delay with the timestamp echo and then excludes it from the
//! OWD ([`crate::tcp::TcpConfig::report_ack_delay`]). The detector only uses
//! differences between samples, so the OWD's clock offset cancels, and
//! forward queuing is what it measures in either case (TCP-LP and LEDBAT use
//! one-way delays for the same reason, and to ignore reverse-path queuing).
//! Without timestamps it falls back to the RTT ([`super::DelaySource`]);
//! `delay = "rtt"` restores the paper's RTT detector. With OWD, `maxRTT`'s
//! initial value becomes `first OWD + (max_rtt_init − 1)·first RTT` (the same
//! range of one minRTT). Vegas's own rule keeps using the RTT (it needs the
//! ratio BaseRTT/RTT); it filters delayed ACKs by taking the round's minimum
//! RTT, and with a window of a few segments its `diff` stays below α
//! anyway.
//!
//! On loss Nice reacts like Reno by halving its window, but, as its window
//! may be a fraction of a segment, it halves the window itself (floored at
//! the fraction) rather than setting it to 2·SMSS. On a retransmission
//! timeout the window becomes one segment, or stays where it is if already
//! smaller.

use super::vegas::VegasCore;
use super::{
    half_flight, rtt_estimate, AckSample, CcInit, CongestionControl, DelaySignal, DelaySource,
    LossEvent, ParamValue, RenoGrowth,
};
use crate::time::{Dur, Time};

/// TCP Nice's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct NiceConfig {
    /// Congestion threshold δ as a fraction of the [minRTT, maxRTT] range
    /// (the paper's `t`; default 0.2).
    pub delta: f64,
    /// Fraction φ of a round's ACKs that must be congested to halve the
    /// window (the paper's `f`; default 0.5).
    pub phi: f64,
    /// Vegas α, packets (default 2).
    pub alpha: f64,
    /// Vegas β, packets (default 4).
    pub beta: f64,
    /// Vegas γ, packets (default 1).
    pub gamma: f64,
    /// Smallest window as a fraction of a segment (default 1/48).
    pub min_cwnd_fraction: f64,
    /// maxRTT after the first sample, as a multiple of that sample
    /// (OSDI §2.3: 2); at least 1.
    pub max_rtt_init: f64,
    /// Delay signal of the congestion detector (default OWD, which excludes
    /// the receiver's ACK delay; `Rtt` is the paper's).
    pub delay: DelaySignal,
}

impl Default for NiceConfig {
    fn default() -> Self {
        NiceConfig {
            delta: 0.2,
            phi: 0.5,
            alpha: 2.0,
            beta: 4.0,
            gamma: 1.0,
            min_cwnd_fraction: 1.0 / 48.0,
            max_rtt_init: 2.0,
            delay: DelaySignal::Owd,
        }
    }
}

impl NiceConfig {
    pub const PARAMS: &'static [&'static str] = &[
        "delta",
        "phi",
        "alpha",
        "beta",
        "gamma",
        "min_cwnd_fraction",
        "max_rtt_init",
        "delay",
    ];

    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "delta" => self.delta = v.in_range(0.0, 1.0)?,
            "phi" => self.phi = v.in_range(0.0, 1.0)?,
            "alpha" => self.alpha = v.in_range(0.0, 1e6)?,
            "beta" => self.beta = v.in_range(0.0, 1e6)?,
            "gamma" => self.gamma = v.in_range(0.0, 1e6)?,
            "min_cwnd_fraction" => {
                let f = v.in_range(0.0, 1.0)?;
                if f == 0.0 {
                    return Err("must be positive".into());
                }
                self.min_cwnd_fraction = f;
            }
            "max_rtt_init" => self.max_rtt_init = v.in_range(1.0, 1e3)?,
            "delay" => {
                self.delay = match v {
                    ParamValue::Str("owd") => DelaySignal::Owd,
                    ParamValue::Str("rtt") => DelaySignal::Rtt,
                    other => return Err(format!("expected \"owd\" or \"rtt\", got {other}")),
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The window floor in bytes for segment size `mss` (at least one byte).
    pub fn floor_bytes(&self, mss: u64) -> u64 {
        ((mss as f64 * self.min_cwnd_fraction).ceil() as u64).clamp(1, mss.max(1))
    }
}

#[derive(Clone, Debug)]
pub struct Nice {
    cfg: NiceConfig,
    mss: u64,
    floor: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
    core: VegasCore,
    /// Where the detector's samples come from (OWD or RTT, latched).
    source: DelaySource,
    /// Smallest and largest detector sample ("minRTT", "maxRTT"; one-way
    /// delays with their clock offset when the signal is OWD).
    min_delay: Option<Dur>,
    max_delay: Dur,
    /// maxRTT has received its initial value (needs an RTT estimate).
    max_initialised: bool,
    /// ACKs with a delay sample in the current round, and how many of those
    /// were congested.
    round_acks: u32,
    round_congested: u32,
}

impl Nice {
    pub fn new(cfg: NiceConfig, init: CcInit) -> Self {
        let mss = init.mss.max(1);
        Nice {
            floor: cfg.floor_bytes(mss),
            core: VegasCore::new(cfg.alpha, cfg.beta, cfg.gamma),
            source: DelaySource::new(cfg.delay),
            cfg,
            mss,
            cwnd: init.initial_window.max(1) * mss,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            min_delay: None,
            max_delay: Dur::ZERO,
            max_initialised: false,
            round_acks: 0,
            round_congested: 0,
        }
    }

    /// Records a detector sample. After the first RTT estimate, maxRTT is
    /// raised to `max_rtt_init` × that RTT (OSDI §2.3), expressed as a range
    /// of `(max_rtt_init − 1)` RTTs above the sample so that it also holds
    /// for one-way delays.
    fn record(&mut self, d: Dur, ack: &AckSample) {
        self.min_delay = Some(self.min_delay.map_or(d, |m| m.min(d)));
        self.max_delay = self.max_delay.max(d);
        if !self.max_initialised {
            let rtt = ack.rtt.unwrap_or_else(|| rtt_estimate(ack));
            if !rtt.is_zero() {
                let init = d + rtt.mul_f64(self.cfg.max_rtt_init - 1.0);
                self.max_delay = self.max_delay.max(init);
                self.max_initialised = true;
            }
        }
    }

    /// OSDI 2002 §2.2: RTT > minRTT + δ·(maxRTT − minRTT).
    fn congested(&self, d: Dur) -> bool {
        let Some(min) = self.min_delay else {
            return false;
        };
        let range = self.max_delay.saturating_sub(min);
        d > min + range.mul_f64(self.cfg.delta)
    }

    fn restart_round(&mut self) {
        self.core.restart();
        self.round_acks = 0;
        self.round_congested = 0;
    }
}

impl CongestionControl for Nice {
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(d) = self.source.sample(ack) {
            self.record(d, ack);
            self.round_acks = self.round_acks.saturating_add(1);
            if self.congested(d) {
                self.round_congested = self.round_congested.saturating_add(1);
            }
        }
        let end = self.core.on_ack(ack);
        let (acks, congested) = if end.ended {
            let c = (self.round_acks, self.round_congested);
            self.round_acks = 0;
            self.round_congested = 0;
            c
        } else {
            (0, 0)
        };
        if ack.in_recovery {
            return;
        }
        if end.ended && acks > 0 && f64::from(congested) > self.cfg.phi * f64::from(acks) {
            // Nice's early reaction: halve, once per round, below one
            // segment if need be; leave slow start.
            self.cwnd = (self.cwnd / 2).max(self.floor).min(self.cwnd);
            self.ssthresh = self.ssthresh.min(self.cwnd);
            self.growth.acked_acc = 0;
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
        self.ssthresh = half_flight(loss.in_flight.min(self.cwnd), self.mss);
        self.cwnd = (self.cwnd / 2).max(self.floor).min(self.cwnd);
        self.growth.acked_acc = 0;
        self.restart_round();
    }

    fn on_recovery_exit(&mut self, _now: Time) {
        self.restart_round();
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = half_flight(in_flight, self.mss);
        self.cwnd = self.cwnd.min(self.mss);
        self.growth.acked_acc = 0;
        self.restart_round();
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
    use super::super::vegas::testpath::Path;
    use super::*;

    const MSS: u64 = 1440;

    fn ack(now: Time, rtt: Dur, delivered: u64, sent: u64) -> AckSample {
        AckSample {
            now,
            bytes_acked: MSS,
            in_flight: sent - delivered + MSS,
            rtt: Some(rtt),
            srtt: rtt,
            min_rtt: rtt,
            owd: None,
            delivered,
            sent,
            in_recovery: false,
            cwnd_limited: true,
        }
    }

    /// Teaches the controller minRTT = 100 ms and maxRTT = 300 ms.
    fn calibrated() -> (Nice, Time, u64) {
        let mut n = Nice::new(NiceConfig::default(), CcInit::new(MSS));
        n.ssthresh = 4 * MSS; // congestion avoidance
        let now = Time::ZERO + Dur::from_secs(1);
        n.on_ack(&ack(now, Dur::from_millis(100), MSS, 10 * MSS));
        n.on_ack(&ack(now, Dur::from_millis(300), 2 * MSS, 10 * MSS));
        (n, now, 2 * MSS)
    }

    #[test]
    fn halves_at_most_once_per_round() {
        let (mut n, now, mut delivered) = calibrated();
        n.cwnd = 32 * MSS;
        n.restart_round();
        // Persistent queuing: every ACK is congested (200 ms > 100 + 0.2·200).
        let rtt = Dur::from_millis(200);
        delivered += MSS;
        let start_sent = delivered + 32 * MSS;
        n.on_ack(&ack(now, rtt, delivered, start_sent)); // starts the round
        while delivered + MSS < start_sent {
            delivered += MSS;
            n.on_ack(&ack(now, rtt, delivered, delivered + n.cwnd()));
            assert_eq!(n.cwnd(), 32 * MSS, "no reaction inside the round");
        }
        delivered += MSS;
        let sent = delivered + n.cwnd();
        n.on_ack(&ack(now, rtt, delivered, sent));
        assert_eq!(n.cwnd(), 16 * MSS, "one halving at the round's end");
        // The next round ends when `sent` (taken at the end of the last one) is delivered.
        while delivered + MSS < sent {
            delivered += MSS;
            n.on_ack(&ack(now, rtt, delivered, delivered + n.cwnd()));
            assert_eq!(n.cwnd(), 16 * MSS);
        }
        delivered += MSS;
        n.on_ack(&ack(now, rtt, delivered, delivered + n.cwnd()));
        assert_eq!(n.cwnd(), 8 * MSS);
    }

    #[test]
    fn goes_below_one_segment_under_persistent_delay() {
        let (mut n, mut now, mut delivered) = calibrated();
        let rtt = Dur::from_millis(250);
        let mut seen_fraction = false;
        for _ in 0..200 {
            // With a window below one segment, each round is a single segment.
            delivered += MSS;
            now += rtt;
            n.on_ack(&ack(now, rtt, delivered, delivered + n.cwnd().max(1)));
            assert!(n.cwnd() >= n.floor);
            seen_fraction |= n.cwnd() < MSS;
        }
        assert!(seen_fraction);
        assert_eq!(n.cwnd(), NiceConfig::default().floor_bytes(MSS));
        assert_eq!(n.cwnd(), MSS / 48);
    }

    #[test]
    fn below_phi_it_behaves_like_vegas() {
        // 20-packet pipe, never more than a few packets queued relative to a
        // calibration that saw a 1 s spike: no ACK crosses the threshold.
        let mut p = Path::new(MSS, Dur::from_millis(100), 20);
        let mut n = Nice::new(NiceConfig::default(), CcInit::new(MSS));
        n.on_ack(&ack(p.now, Dur::from_millis(1000), 1, 1));
        for _ in 0..100 {
            p.round(&mut n);
        }
        assert!((22..=24).contains(&(n.cwnd() / MSS)), "{}", n.cwnd() / MSS);
    }

    #[test]
    fn loss_halves_below_two_segments_and_timeout_keeps_small_windows() {
        let mut n = Nice::new(NiceConfig::default(), CcInit::new(MSS));
        n.cwnd = MSS / 2;
        n.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: MSS,
        });
        assert_eq!(n.cwnd(), MSS / 4);
        n.on_timeout(Time::ZERO, MSS);
        assert_eq!(n.cwnd(), MSS / 4);
        n.cwnd = 10 * MSS;
        n.on_timeout(Time::ZERO, 10 * MSS);
        assert_eq!((n.cwnd(), n.ssthresh()), (MSS, 5 * MSS));
    }

    #[test]
    fn max_rtt_starts_at_twice_the_first_sample() {
        // OSDI §2.3. With one sample only, a 10 % longer RTT is not
        // congestion (threshold 100 + 0.2·100 = 120 ms); with maxRTT starting
        // at the sample (max_rtt_init = 1, the range is empty) it is, and a
        // Vegas-sized backlog halves the window every round.
        let run = |init: f64| {
            let cfg = NiceConfig {
                max_rtt_init: init,
                ..NiceConfig::default()
            };
            let mut n = Nice::new(cfg, CcInit::new(MSS));
            n.cwnd = 20 * MSS;
            n.ssthresh = 20 * MSS;
            let mut now = Time::ZERO + Dur::from_secs(1);
            n.on_ack(&ack(now, Dur::from_millis(100), MSS, 21 * MSS));
            let mut delivered = MSS;
            for _ in 0..20 * 10 {
                now += Dur::from_millis(5);
                delivered += MSS;
                n.on_ack(&ack(
                    now,
                    Dur::from_millis(110),
                    delivered,
                    delivered + n.cwnd(),
                ));
            }
            n
        };
        let n = run(2.0);
        assert_eq!(n.max_delay, Dur::from_millis(200));
        assert!(n.cwnd() >= 20 * MSS, "{}", n.cwnd());
        let n = run(1.0);
        assert_eq!(n.max_delay, Dur::from_millis(110));
        assert!(n.cwnd() < 5 * MSS, "{}", n.cwnd());
    }

    /// A flow at the floor on an idle path whose receiver delays every lone
    /// segment's ACK by 40 ms: the RTT says base + 40 ms, the OWD (from which
    /// the transport removed the reported ACK delay) says no queue.
    fn at_floor_with_delayed_acks(delay: DelaySignal) -> Nice {
        let cfg = NiceConfig {
            delay,
            ..NiceConfig::default()
        };
        let mut n = Nice::new(cfg, CcInit::new(MSS));
        let base = Dur::from_millis(50);
        let owd = Dur::from_secs(7) + Dur::from_millis(25); // clock offset + 25 ms
        let mut now = Time::ZERO + Dur::from_secs(1);
        let mut delivered = 0;
        // Calibration: an earlier congested period (RTT up to 150 ms).
        for q in [0, 100, 0] {
            delivered += MSS;
            let mut a = ack(now, base + Dur::from_millis(q), delivered, delivered + MSS);
            a.owd = Some(owd + Dur::from_millis(q));
            n.on_ack(&a);
        }
        n.cwnd = n.floor;
        n.ssthresh = n.floor;
        n.restart_round();
        // One segment per round; each ACK delayed by the receiver.
        for _ in 0..30 {
            now += base
                .mul_f64(MSS as f64 / n.cwnd() as f64)
                .min(Dur::from_secs(5));
            delivered += MSS;
            let mut a = ack(now, base + Dur::from_millis(40), delivered, delivered);
            a.in_flight = MSS;
            a.owd = Some(owd);
            n.on_ack(&a);
        }
        n
    }

    #[test]
    fn delayed_acks_do_not_pin_the_window_at_the_floor() {
        let n = at_floor_with_delayed_acks(DelaySignal::Owd);
        assert!(n.cwnd() >= 4 * MSS, "OWD detector: {}", n.cwnd());
        // The paper's RTT detector reads the ACK delay as congestion
        // (90 ms > 50 + 0.2·100 ms) and never leaves the floor.
        let n = at_floor_with_delayed_acks(DelaySignal::Rtt);
        assert_eq!(n.cwnd(), n.floor);
    }

    #[test]
    fn delay_and_max_rtt_init_parameters() {
        let mut c = NiceConfig::default();
        assert_eq!(c.delay, DelaySignal::Owd);
        assert_eq!(c.set("delay", ParamValue::Str("rtt")), Ok(true));
        assert_eq!(c.delay, DelaySignal::Rtt);
        assert!(c.set("delay", ParamValue::Str("owd2")).is_err());
        assert_eq!(c.set("max_rtt_init", ParamValue::Num(3.0)), Ok(true));
        assert_eq!(c.max_rtt_init, 3.0);
        assert!(c.set("max_rtt_init", ParamValue::Num(0.5)).is_err());
        assert_eq!(c.set("nope", ParamValue::Num(1.0)), Ok(false));
    }
}
