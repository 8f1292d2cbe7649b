//! TCP-LP (low priority): A. Kuzmanovic and E. W. Knightly, "TCP-LP: A
//! Distributed Algorithm for Low Priority Data Transfer", IEEE INFOCOM 2003,
//! and "TCP-LP: Low-Priority Service via End-Point Congestion Control",
//! IEEE/ACM ToN 14(4), 2006 (summarised in Testa & Rossi, Computer Networks
//! 2014, §3.2, eqs. (3)–(4)).
//!
//! * Early congestion detection from one-way delays (INFOCOM §III-A/B):
//!   the smoothed one-way delay `sowd ← (1 − α)·sowd + α·owd`, α = 1/8,
//!   indicates congestion when `sowd > owd_min + δ·(owd_max − owd_min)`,
//!   δ = 0.15. `owd_min`/`owd_max` are taken over the raw samples; as in
//!   Linux `tcp_lp.c`, the single largest sample is held in reserve (the
//!   maximum used is the second largest), so one outlier cannot stretch
//!   the range. OWD comes from [`AckSample::owd`]; without timestamps the
//!   controller uses the RTT instead (the threshold is relative to the
//!   observed range, so the scale does not matter; see
//!   [`super::DelaySource`]).
//! * Reaction (INFOCOM §III-C): on the first early indication halve the
//!   window and start the *inference phase* (a timer of `inference`, by
//!   default 3·SRTT). During the inference phase the window does not grow.
//!   Another early indication during the inference phase sets the window to
//!   one segment (the ssthresh of the first halving is kept, so the sender
//!   slow-starts back to it). Linux `tcp_lp.c` uses 3× the RTT measured from
//!   the timestamp echo, the same quantity.
//! * An indication is *another* one only if it concerns data sent after
//!   the previous reaction: ACKs for data that was already queued when the
//!   window was cut still carry the old delay. By default we therefore
//!   react at most once per round of data (using the delivered/sent
//!   counters). Linux instead re-bases `owd_min`/`owd_max` on the smoothed
//!   delay after each reaction (a heuristic its source marks FIXME; option
//!   `rebase`, below).
//! * Otherwise TCP-LP is NewReno: Reno slow start and congestion avoidance,
//!   RFC 5681 halving on loss (no early reaction is taken while in loss
//!   recovery, as in current Linux), one segment on timeout.
//!
//! After the first halving ssthresh is set to the halved window, so growth
//! resumes additively once the inference phase ends (Linux leaves ssthresh
//! alone, which slow-starts again if no loss happened before).
//!
//! # Calibrating the delay range (deviation, parameter `calibrate`)
//!
//! δ is a fraction of the flow's queuing-delay range: the threshold is meant
//! to sit at δ of the way from an empty to a full bottleneck queue. A sender
//! only learns where "full" is once it has seen the buffer overflow (or
//! cross traffic fill it); before that, `owd_max` is whatever its own first
//! bursts produced. By default we therefore take no early-congestion action
//! until the first loss or retransmission timeout; until then TCP-LP is
//! NewReno (which is what it is anyway in the absence of indications). The
//! samples are recorded all along, so the loss episode's own samples set
//! `owd_max` to the full-queue delay.
//!
//! Without this, the simulator showed a self-confirming trap: a lone TCP-LP
//! flow's range came from its initial window of ten back-to-back segments
//! (about 7 ms on a 10 Mbit/s bottleneck, the reserve rule dropping the
//! largest sample), so the threshold was about 1 ms above the minimum —
//! less than one packet's transmission time. The 1.2–2.4 ms of self-queuing
//! that every delayed ACK's pair or triple of back-to-back segments causes
//! kept `sowd` above it, so the flow halved every few hundred ms, never
//! built the queue that would have taught it a larger maximum, and used
//! 12 % of the link (40 % with per-segment ACKs). The same problem is why
//! the Nice prototype starts maxRTT at 2·minRTT (Venkataramani et al., OSDI
//! 2002, §2.3) and why Linux re-bases the range after each reaction (see
//! above); neither is our default (a range of at least one minRTT still
//! makes a lone flow halve at about six packets of queue on that link,
//! utilisation 0.58; Linux's re-basing uses the absolute OWD, which in a
//! real stack includes the hosts' clock offset, see "Re-basing"). `calibrate = false` restores the literal rule (indications
//! from the first sample).
//!
//! # Re-basing (option `rebase`, Linux `tcp_lp.c`)
//!
//! With `rebase = true` the controller takes Linux's re-basing rule from
//! `tcp_lp_pkts_acked`: every ACK whose smoothed delay is above the
//! threshold is a reaction (no once-per-round rule), and each reaction
//! restarts the range at `owd_min = sowd`, `owd_max = owd_max_rsv = 2·sowd`.
//! The threshold then sits 15 % above the delay at the last reaction, so a
//! flow that has reacted to a standing queue grows again on it, as NewReno
//! does. ns-2's TCP-Linux runs Linux's modules, so this rule is likely part
//! of the TCP-LP in Testa & Rossi's ns-2 study. The rule needs a delay without a clock
//! offset between the hosts, as the simulator's (and ns-2's) shared clock
//! gives; a real stack's timestamp difference contains the offset, which
//! makes `2·sowd` meaningless. With `calibrate = false` it acts from the
//! first ACK. It is not all of Linux's TCP-LP: a halving still sets
//! ssthresh (Linux leaves it, so it slow-starts back after the inference
//! phase), no reaction is taken during loss recovery, and an empty range
//! (`owd_max ≤ owd_min`) is never congestion.

use super::{
    half_flight, reno_halving, rtt_estimate, AckSample, CcInit, CongestionControl, DelaySignal,
    DelaySource, LossEvent, ParamValue, RenoGrowth,
};
use crate::time::{Dur, Time};

/// Length of TCP-LP's inference phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Inference {
    /// A multiple of the smoothed RTT (default 3).
    SrttMultiple(f64),
    /// A fixed duration.
    Fixed(Dur),
}

/// TCP-LP's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct LpConfig {
    /// EWMA weight α of a new one-way-delay sample (default 1/8).
    pub smoothing: f64,
    /// Threshold δ as a fraction of the [min, max] delay range (default 0.15).
    pub delta: f64,
    /// Inference-phase length (default 3·SRTT). Parameter `inference`: a
    /// number is a multiple of SRTT, a string such as `"500ms"` a duration.
    pub inference: Inference,
    /// Take no early-congestion action before the first loss or timeout has
    /// shown the full queue's delay (default true; see the module docs).
    pub calibrate: bool,
    /// Linux `tcp_lp.c`'s rule instead of one reaction per round: after every
    /// early-congestion reaction set `owd_min` to the smoothed delay and
    /// `owd_max` to twice it, and react again on any later ACK that is still
    /// above the threshold (default false; see the module docs, "Re-basing").
    pub rebase: bool,
}

impl Default for LpConfig {
    fn default() -> Self {
        LpConfig {
            smoothing: 1.0 / 8.0,
            delta: 0.15,
            inference: Inference::SrttMultiple(3.0),
            calibrate: true,
            rebase: false,
        }
    }
}

impl LpConfig {
    pub const PARAMS: &'static [&'static str] =
        &["smoothing", "delta", "inference", "calibrate", "rebase"];

    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "smoothing" => {
                let a = v.in_range(0.0, 1.0)?;
                if a == 0.0 {
                    return Err("must be positive".into());
                }
                self.smoothing = a;
            }
            "delta" => self.delta = v.in_range(0.0, 1.0)?,
            "inference" => {
                self.inference = match v {
                    ParamValue::Str(_) => Inference::Fixed(v.duration()?),
                    _ => Inference::SrttMultiple(v.positive_at_most(1000.0).map_err(|e| {
                        format!("{e} (a multiple of SRTT, or a duration such as \"500ms\")")
                    })?),
                }
            }
            "calibrate" => self.calibrate = v.boolean()?,
            "rebase" => self.rebase = v.boolean()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[derive(Clone, Debug)]
pub struct Lp {
    cfg: LpConfig,
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    growth: RenoGrowth,
    source: DelaySource,
    /// Smoothed delay, nanoseconds.
    sowd: Option<f64>,
    owd_min: Option<Dur>,
    owd_max: Dur,
    /// The largest sample, held back from `owd_max` (Linux `owd_max_rsv`).
    owd_max_rsv: Dur,
    /// End of the current inference phase.
    inference_until: Option<Time>,
    /// Only ACKs with `delivered` beyond this (data sent after the last
    /// reaction) may trigger another reaction.
    react_after: u64,
    /// Early indications are acted on (after the first loss or timeout when
    /// `calibrate` is set; from the start otherwise).
    calibrated: bool,
}

impl Lp {
    pub fn new(cfg: LpConfig, init: CcInit) -> Self {
        let mss = init.mss.max(1);
        Lp {
            calibrated: !cfg.calibrate,
            cfg,
            mss,
            cwnd: init.initial_window.max(1) * mss,
            ssthresh: u64::MAX,
            growth: RenoGrowth::new(),
            source: DelaySource::new(DelaySignal::Owd),
            sowd: None,
            owd_min: None,
            owd_max: Dur::ZERO,
            owd_max_rsv: Dur::ZERO,
            inference_until: None,
            react_after: 0,
        }
    }

    fn record(&mut self, d: Dur) {
        self.owd_min = Some(self.owd_min.map_or(d, |m| m.min(d)));
        // Linux tcp_lp_owd_calculator: forget the max of the max.
        if d > self.owd_max {
            if d > self.owd_max_rsv {
                self.owd_max = if self.owd_max_rsv.is_zero() {
                    d
                } else {
                    self.owd_max_rsv
                };
                self.owd_max_rsv = d;
            } else {
                self.owd_max = d;
            }
        }
        let x = d.as_nanos() as f64;
        self.sowd = Some(match self.sowd {
            Some(s) => s + self.cfg.smoothing * (x - s),
            None => x,
        });
    }

    /// INFOCOM 2003 eq. (4) (Testa & Rossi eq. (4)).
    fn early_congestion(&self) -> bool {
        let (Some(sowd), Some(min)) = (self.sowd, self.owd_min) else {
            return false;
        };
        let min = min.as_nanos() as f64;
        let max = self.owd_max.as_nanos() as f64;
        max > min && sowd > min + self.cfg.delta * (max - min)
    }

    fn inference_len(&self, ack: &AckSample) -> Dur {
        match self.cfg.inference {
            Inference::SrttMultiple(k) => rtt_estimate(ack).mul_f64(k),
            Inference::Fixed(d) => d,
        }
    }

    fn in_inference(&self, now: Time) -> bool {
        self.inference_until.is_some_and(|t| now < t)
    }
}

impl CongestionControl for Lp {
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(d) = self.source.sample(ack) {
            self.record(d);
        }
        if ack.in_recovery {
            return;
        }
        let fresh = self.cfg.rebase || ack.delivered > self.react_after;
        if self.calibrated && fresh && self.early_congestion() {
            if self.in_inference(ack.now) {
                // Persistent congestion: back off to one segment.
                self.cwnd = self.mss;
            } else {
                self.cwnd = (self.cwnd / 2).max(self.mss);
                self.ssthresh = self.cwnd;
            }
            self.inference_until = Some(ack.now + self.inference_len(ack));
            self.react_after = ack.sent;
            if self.cfg.rebase {
                // Linux tcp_lp_pkts_acked: the range restarts at [sowd, 2·sowd].
                if let Some(s) = self.sowd {
                    let s = Dur::from_nanos(s as u64);
                    self.owd_min = Some(s);
                    self.owd_max = s * 2;
                    self.owd_max_rsv = s * 2;
                }
            }
            self.growth.acked_acc = 0;
            return;
        }
        if !ack.cwnd_limited || self.in_inference(ack.now) {
            return;
        }
        self.cwnd = self
            .growth
            .grow(self.cwnd, self.ssthresh, ack.bytes_acked, self.mss);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.calibrated = true;
        (self.cwnd, self.ssthresh) = reno_halving(self.cwnd, loss.in_flight, self.mss);
        self.growth.acked_acc = 0;
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.calibrated = true;
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

    const MSS: u64 = 1000;
    /// An arbitrary clock offset between the hosts: OWD samples include it.
    const OFFSET: Dur = Dur::from_secs(1234);

    struct Feed {
        now: Time,
        delivered: u64,
        offset: Dur,
    }

    impl Feed {
        fn new() -> Self {
            Feed {
                now: Time::ZERO + Dur::from_secs(10),
                delivered: 0,
                offset: OFFSET,
            }
        }
        /// One ACK of one segment with the given one-way queuing delay; the
        /// window's worth of data is in flight (ACKs every 4 ms: about one
        /// window of 40 segments per RTT).
        fn ack(&mut self, lp: &mut Lp, queue_ms: u64) {
            self.ack_us(lp, queue_ms * 1000);
        }

        fn ack_us(&mut self, lp: &mut Lp, queue_us: u64) {
            self.now += Dur::from_millis(4);
            self.delivered += MSS;
            let queue = Dur::from_micros(queue_us);
            let owd = self.offset + Dur::from_millis(50) + queue;
            lp.on_ack(&AckSample {
                now: self.now,
                bytes_acked: MSS,
                in_flight: lp.cwnd(),
                rtt: Some(Dur::from_millis(100) + queue),
                srtt: Dur::from_millis(100),
                min_rtt: Dur::from_millis(100),
                owd: Some(owd),
                delivered: self.delivered,
                sent: self.delivered + lp.cwnd(),
                in_recovery: false,
                cwnd_limited: true,
            });
        }
    }

    fn lp_in_ca() -> (Lp, Feed) {
        lp_in_ca_with(LpConfig::default(), OFFSET)
    }

    fn lp_in_ca_with(cfg: LpConfig, offset: Dur) -> (Lp, Feed) {
        let mut lp = Lp::new(cfg, CcInit::new(MSS));
        lp.cwnd = 40 * MSS;
        lp.ssthresh = 40 * MSS;
        let mut f = Feed::new();
        f.offset = offset;
        // Calibrate the range: empty queue, then a 100 ms excursion that
        // only moves the smoothed delay part of the way.
        // (Two separate excursions: the first only fills the reserve slot.)
        for _ in 0..20 {
            f.ack(&mut lp, 0);
        }
        for _ in 0..2 {
            f.ack(&mut lp, 100);
            for _ in 0..40 {
                f.ack(&mut lp, 0);
            }
        }
        // A loss ends the calibration (`calibrate`, the default).
        loss(&mut lp);
        lp.cwnd = 40 * MSS;
        lp.ssthresh = 40 * MSS;
        (lp, f)
    }

    fn loss(lp: &mut Lp) {
        lp.on_loss(&LossEvent {
            now: Time::ZERO,
            in_flight: lp.cwnd(),
        });
    }

    /// What a lone flow sees on a 10 Mbit/s bottleneck (1.2 ms per segment)
    /// with delayed ACKs and no standing queue (as traced in the simulator):
    /// its initial window's burst, one ACK per two segments echoing the
    /// first of them (0 … 9.6 ms), then every ACK releasing two or three
    /// back-to-back segments, which queue behind each other for 0, 1.2 or
    /// 2.4 ms.
    fn self_queuing(lp: &mut Lp, f: &mut Feed, rounds: usize) {
        for i in 0..5 {
            f.ack_us(lp, i * 2400);
        }
        for _ in 0..rounds {
            for q in [1200, 2400, 0, 1200, 2400] {
                f.ack_us(lp, q);
            }
        }
    }

    #[test]
    fn burst_jitter_is_not_congestion_before_calibration() {
        // Literal rule: the range is the initial burst's (≈ 7 ms after the
        // reserve rule), its 15 % is ≈ 1 ms, and the flow's own 1.2–2.4 ms
        // bursts keep the smoothed delay above it: the window collapses.
        let literal = LpConfig {
            calibrate: false,
            ..LpConfig::default()
        };
        let mut lp = Lp::new(literal, CcInit::new(MSS));
        lp.ssthresh = 10 * MSS;
        let mut f = Feed::new();
        self_queuing(&mut lp, &mut f, 40);
        assert!(lp.cwnd() < 10 * MSS, "literal rule: {}", lp.cwnd());

        // Default: no early action before a loss; NewReno growth.
        let mut lp = Lp::new(LpConfig::default(), CcInit::new(MSS));
        lp.ssthresh = 10 * MSS;
        let mut f = Feed::new();
        self_queuing(&mut lp, &mut f, 40);
        assert!(lp.cwnd() > 10 * MSS, "calibrating: {}", lp.cwnd());
        assert!(lp.inference_until.is_none());
    }

    #[test]
    fn a_loss_calibrates_the_range_to_the_full_queue() {
        let mut lp = Lp::new(LpConfig::default(), CcInit::new(MSS));
        lp.ssthresh = 10 * MSS;
        let mut f = Feed::new();
        self_queuing(&mut lp, &mut f, 5);
        // Slow start fills a 100 ms buffer, then overflows it.
        for q in 0..=100 {
            f.ack(&mut lp, q);
        }
        for _ in 0..20 {
            f.ack(&mut lp, 100);
        }
        assert!(lp.inference_until.is_none(), "no early action yet");
        loss(&mut lp);
        assert!(lp.calibrated);
        assert_eq!(lp.owd_max, OFFSET + Dur::from_millis(150));
        // The queue drains (the still-high smoothed delay may trigger one
        // early reaction), and the inference phase ends.
        for _ in 0..200 {
            f.ack(&mut lp, 0);
        }
        assert!(!lp.in_inference(f.now));
        let last = lp.inference_until;
        // Self-queuing jitter is far below 0.15 × 100 ms: growth, no reaction.
        let w = lp.cwnd();
        self_queuing(&mut lp, &mut f, 40);
        assert!(lp.cwnd() > w, "jitter stopped growth: {} vs {w}", lp.cwnd());
        assert_eq!(lp.inference_until, last);
        // A standing queue of 20 ms (> 15 ms) is congestion.
        let w = lp.cwnd();
        while lp.inference_until == last {
            f.ack(&mut lp, 20);
            assert!(f.now < Time::ZERO + Dur::from_secs(60));
        }
        assert_eq!(lp.cwnd(), w / 2);
    }

    #[test]
    fn rebasing_lets_a_flow_grow_again_on_a_standing_queue() {
        // A standing queue of 60 ms on a learned 0–100 ms range (threshold
        // 15 ms), for 8 s. Without a clock offset, as in the simulator.
        let run = |rebase: bool| {
            let cfg = LpConfig {
                rebase,
                ..LpConfig::default()
            };
            let (mut lp, mut f) = lp_in_ca_with(cfg, Dur::ZERO);
            for _ in 0..2000 {
                f.ack(&mut lp, 60);
            }
            lp
        };
        // One reaction per round keeps the window at one segment.
        let plain = run(false);
        assert_eq!(plain.cwnd(), MSS);
        // Re-basing reacts while the smoothed delay climbs to the new level
        // (each reaction moves the range to [sowd, 2·sowd]), then grows on
        // the standing queue as NewReno would.
        let rebased = run(true);
        let min = rebased.owd_min.unwrap();
        assert!(min >= Dur::from_millis(90), "range rebased to {min:?}");
        assert_eq!(rebased.owd_max, min * 2);
        assert!(!rebased.early_congestion());
        assert!(rebased.cwnd() >= 20 * MSS, "cwnd {}", rebased.cwnd());
    }

    #[test]
    fn smoothing_and_threshold_follow_the_paper() {
        let (lp, _) = lp_in_ca();
        assert!(!lp.early_congestion());
        let min = lp.owd_min.unwrap();
        assert_eq!(min, OFFSET + Dur::from_millis(50));
        assert_eq!(lp.owd_max, OFFSET + Dur::from_millis(150));
        // EWMA with α = 1/8: one 80 ms sample moves sowd by 10 ms.
        let mut l = Lp::new(LpConfig::default(), CcInit::new(MSS));
        l.record(Dur::from_millis(100));
        l.record(Dur::from_millis(180));
        assert!((l.sowd.unwrap() - 110e6).abs() < 1.0);
    }

    #[test]
    fn early_indication_halves_then_inference_drops_to_one_segment() {
        let (mut lp, mut f) = lp_in_ca();
        let w0 = lp.cwnd();
        // Persistent 60 ms queuing: sowd crosses 0.15 of the 100 ms range.
        let mut halved_at = None;
        for _ in 0..400 {
            f.ack(&mut lp, 60);
            if lp.cwnd() < w0 && halved_at.is_none() {
                halved_at = Some(f.now);
                assert_eq!(lp.cwnd(), w0 / 2);
                assert_eq!(lp.ssthresh(), w0 / 2);
            }
            if let Some(h) = halved_at {
                if f.now.since(h) < Dur::from_millis(160) {
                    // ACKs for data sent before the cut do not count again.
                    assert_eq!(lp.cwnd(), w0 / 2);
                }
            }
            if lp.cwnd() == MSS {
                // The second indication came from new data, within the
                // inference phase (3·SRTT = 300 ms).
                let d = f.now.since(halved_at.unwrap());
                assert!(d <= Dur::from_millis(300), "after {d}");
                assert_eq!(lp.ssthresh(), w0 / 2);
                return;
            }
        }
        panic!("never dropped to one segment: cwnd {}", lp.cwnd());
    }

    #[test]
    fn no_growth_during_inference_and_recovery_after_it() {
        let (mut lp, mut f) = lp_in_ca();
        // A short excursion: the first indication halves...
        let w0 = lp.cwnd();
        while lp.cwnd() >= w0 {
            f.ack(&mut lp, 60);
        }
        let w = lp.cwnd();
        assert_eq!(w, w0 / 2);
        // ...then the queue drains; during the inference phase no growth.
        for _ in 0..10 {
            f.ack(&mut lp, 0);
        }
        assert!(lp.in_inference(f.now));
        assert_eq!(lp.cwnd(), w);
        // Let the smoothed delay settle and the phase end: NewReno growth.
        for _ in 0..200 {
            f.ack(&mut lp, 0);
        }
        assert!(!lp.in_inference(f.now));
        assert!(lp.cwnd() > w);
    }

    #[test]
    fn fixed_inference_and_parameter_parsing() {
        let mut c = LpConfig::default();
        assert_eq!(c.set("inference", ParamValue::Str("500ms")), Ok(true));
        assert_eq!(c.inference, Inference::Fixed(Dur::from_millis(500)));
        assert_eq!(c.set("inference", ParamValue::Num(4.0)), Ok(true));
        assert_eq!(c.inference, Inference::SrttMultiple(4.0));
        assert!(c.set("inference", ParamValue::Num(-1.0)).is_err());
        assert!(c.set("delta", ParamValue::Num(1.5)).is_err());
        assert_eq!(c.set("calibrate", ParamValue::Bool(false)), Ok(true));
        assert!(!c.calibrate);
        assert!(c.set("calibrate", ParamValue::Num(1.0)).is_err());
        assert!(!c.rebase);
        assert_eq!(c.set("rebase", ParamValue::Bool(true)), Ok(true));
        assert!(c.rebase);
        assert_eq!(c.set("nope", ParamValue::Num(1.0)), Ok(false));
    }

    #[test]
    fn falls_back_to_rtt_without_timestamps() {
        let mut lp = Lp::new(LpConfig::default(), CcInit::new(MSS));
        lp.cwnd = 40 * MSS;
        lp.ssthresh = 40 * MSS;
        let mut now = Time::ZERO + Dur::from_secs(1);
        let mut delivered = 0;
        let mut feed = |lp: &mut Lp, rtt_ms: u64| {
            now += Dur::from_millis(10);
            delivered += MSS;
            lp.on_ack(&AckSample {
                now,
                bytes_acked: MSS,
                in_flight: lp.cwnd(),
                rtt: Some(Dur::from_millis(rtt_ms)),
                srtt: Dur::from_millis(100),
                min_rtt: Dur::from_millis(100),
                owd: None,
                delivered,
                sent: delivered + lp.cwnd(),
                in_recovery: false,
                cwnd_limited: true,
            });
        };
        for _ in 0..20 {
            feed(&mut lp, 100);
        }
        for _ in 0..2 {
            feed(&mut lp, 200);
            for _ in 0..40 {
                feed(&mut lp, 100);
            }
        }
        loss(&mut lp);
        lp.cwnd = 40 * MSS;
        let w = lp.cwnd();
        for _ in 0..20 {
            feed(&mut lp, 170);
        }
        assert!(lp.cwnd() <= w / 2);
    }
}
