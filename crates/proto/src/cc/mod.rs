//! Congestion control: one small trait, and the built-in algorithms behind an
//! enum (static dispatch, no allocation, deterministic).
//!
//! # The contract
//! A transport (the TCP model, later BackTap) owns a [`Controller`] and feeds
//! it every signal any of our algorithms needs:
//!
//! * [`CongestionControl::on_ack`]: an ACK newly acknowledged data. The
//!   [`AckSample`] carries the bytes acknowledged, bytes in flight, an RTT
//!   sample, a one-way-delay sample (when timestamps allow one), cumulative
//!   delivered/sent counters for per-round bookkeeping, and whether the sender
//!   is in loss recovery or was limited by the window. Controllers must not
//!   grow the window while `in_recovery` is set (RFC 5681 §3.2, RFC 6675 §5),
//!   but delay-based ones still consume the delay samples.
//! * [`CongestionControl::on_loss`]: loss detected by fast retransmit / SACK
//!   (once per recovery episode).
//! * [`CongestionControl::on_recovery_exit`]: the recovery episode ended.
//! * [`CongestionControl::on_timeout`]: the retransmission timer expired.
//! * [`CongestionControl::on_hop_feedback`]: hop-by-hop feedback (BackTap's
//!   FORWARD messages) for per-hop windows.
//! * [`CongestionControl::on_rate_sample`]: a delivery-rate sample
//!   (draft-cheng-iccrg-delivery-rate-estimation), just before `on_ack`, for
//!   controllers whose [`CongestionControl::wants_rate_samples`] says so
//!   (BBR); the transport skips the bookkeeping for the others.
//! * [`CongestionControl::on_ecn_ack`] and [`CongestionControl::on_ecn_echo`]:
//!   ECN feedback (RFC 3168 §6.1.2; DCTCP, RFC 8257 §3.3) on connections
//!   that negotiated ECN. The default response to an echo is the loss
//!   response, as RFC 3168 §6.1.2 asks.
//!
//! A controller may also set its own pacing rate
//! ([`CongestionControl::pacing_rate`], BBR does); otherwise a transport
//! that paces derives one from the window and the smoothed RTT.
//!
//! The window is in bytes and may be smaller than one segment (TCP-NICE); the
//! transport then sends one segment per `mss / cwnd` round-trip times.
//!
//! # Built-in algorithms
//! NewReno (RFC 5681/6582), CUBIC (RFC 9438), Vegas (Brakmo & Peterson
//! 1995), LEDBAT with its RFC 6817, µTP and LEDBAT++ profiles, TCP-LP
//! (Kuzmanovic & Knightly 2003) and TCP-NICE (Venkataramani et al. 2002);
//! each module cites its sources next to the code, and
//! `docs/congestion-control.md` tabulates every constant. Shared rules:
//! "once per RTT" means once per round of the delivered/sent counters
//! (`RoundTracker`); controllers that want one-way delays fall back to the
//! RTT when timestamps are off (`DelaySource`); [`CcConfig::min_cwnd`] is
//! the floor each controller documents.

use crate::time::{Dur, Time};

mod bbr;
mod cubic;
mod dctcp;
mod hystart;
mod ledbat;
mod lp;
mod newreno;
mod nice;
mod vegas;

pub use bbr::{Bbr, BbrConfig, BbrMode};
pub use cubic::{Cubic, CubicConfig};
pub use dctcp::{Dctcp, DctcpConfig};
pub use ledbat::{Gain, Ledbat, LedbatConfig, LedbatParams, LedbatVariant};
pub use lp::{Inference, Lp, LpConfig};
pub use newreno::NewReno;
pub use nice::{Nice, NiceConfig};
pub use vegas::{Vegas, VegasConfig};

/// What one ACK told the sender. Times are the transport's `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckSample {
    pub now: Time,
    /// Bytes newly acknowledged by this ACK, cumulatively or by SACK.
    pub bytes_acked: u64,
    /// Bytes in flight (RFC 6675 "pipe") before this ACK was processed.
    pub in_flight: u64,
    /// RTT measured from this ACK, if it yielded one.
    pub rtt: Option<Dur>,
    /// The transport's smoothed RTT (RFC 6298 SRTT); zero before the first sample.
    pub srtt: Dur,
    /// The minimum RTT the transport has observed so far.
    pub min_rtt: Dur,
    /// One-way delay of the data direction, from timestamps (receiver's
    /// TSval minus echoed TSecr). It includes any constant clock offset between
    /// the two hosts and the receiver's ACK delay; delay-based controllers use
    /// differences to a base, so the offset cancels (RFC 6817 §3.4.1).
    pub owd: Option<Dur>,
    /// Cumulative bytes acknowledged since the connection began (after this ACK).
    pub delivered: u64,
    /// Cumulative bytes sent (the highest sequence offset sent so far).
    pub sent: u64,
    /// The sender is in fast recovery.
    pub in_recovery: bool,
    /// The window, not the application, limited sending recently (RFC 7661).
    /// Loss-based controllers grow only when this is set.
    pub cwnd_limited: bool,
}

/// A loss detected by duplicate ACKs or SACK (not by timeout).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossEvent {
    pub now: Time,
    /// Bytes in flight when the loss was detected (FlightSize, RFC 5681 eq. 4).
    pub in_flight: u64,
}

/// Per-hop feedback: a FORWARD message told the sender that the next hop
/// has forwarded `bytes` further downstream, `rtt` after they were sent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopFeedback {
    pub now: Time,
    pub bytes: u64,
    pub rtt: Dur,
    /// Minimum RTT over every flow sharing the next hop (BackTap's shared baseRtt).
    pub base_rtt: Dur,
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation-00
/// §3.3, Linux `tcp_rate.c`): the data delivered between the transmission
/// of the most recently sent segment this ACK delivered and its
/// acknowledgement, over the longer of the send and ACK intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered (acknowledged or SACKed) over `interval`.
    pub delivered: u64,
    /// The sampling interval; zero when the ACK gave no valid sample.
    pub interval: Dur,
    /// The connection's delivered count when that segment was sent
    /// (`P.delivered`): BBR's round counting compares it.
    pub prior_delivered: u64,
    /// The connection's delivered count after this ACK (`C.delivered`).
    pub delivered_total: u64,
    /// The segment was sent while the application, not the window,
    /// limited sending (§3.4), so the rate may understate the path.
    pub is_app_limited: bool,
}

impl RateSample {
    /// Bytes per second, if the sample is valid.
    pub fn rate(&self) -> Option<f64> {
        (!self.interval.is_zero() && self.delivered > 0)
            .then(|| self.delivered as f64 / self.interval.as_secs_f64())
    }
}

/// The signals a congestion controller reacts to. All windows are bytes.
pub trait CongestionControl {
    /// Data was newly acknowledged.
    fn on_ack(&mut self, ack: &AckSample);
    /// Loss detected by fast retransmit (entering recovery).
    fn on_loss(&mut self, loss: &LossEvent);
    /// Fast recovery finished (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, _now: Time) {}
    /// The retransmission timer expired with `in_flight` bytes outstanding.
    fn on_timeout(&mut self, now: Time, in_flight: u64);
    /// Hop-by-hop forwarding feedback; loss- and end-to-end delay-based
    /// algorithms ignore it.
    fn on_hop_feedback(&mut self, _fb: &HopFeedback) {}
    /// Whether the transport should measure delivery rates and call
    /// [`CongestionControl::on_rate_sample`].
    fn wants_rate_samples(&self) -> bool {
        false
    }
    /// A delivery-rate sample, given just before the `on_ack` of the same ACK.
    fn on_rate_sample(&mut self, _rs: &RateSample) {}
    /// The controller's own pacing rate in bytes per second, if it sets one.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// ECN feedback of one ACK that acknowledged `bytes_acked` new bytes
    /// (`ece`: it carried ECN-Echo), before its `on_ack`. DCTCP counts these
    /// (RFC 8257 §3.3); the others ignore it.
    fn on_ecn_ack(&mut self, _now: Time, _bytes_acked: u64, _ece: bool) {}
    /// ECN-Echo outside loss recovery, at most once per window of data
    /// (RFC 3168 §6.1.2: "the same response as for a single dropped
    /// packet", without a retransmission). The default is the loss response
    /// followed by the end of that (empty) recovery.
    fn on_ecn_echo(&mut self, ev: &LossEvent) {
        self.on_loss(ev);
        self.on_recovery_exit(ev.now);
    }
    /// The congestion window in bytes. May be below one segment.
    fn cwnd(&self) -> u64;
    /// The slow-start threshold in bytes (`u64::MAX` before the first loss).
    fn ssthresh(&self) -> u64;
    /// Whether the controller is in slow start.
    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh()
    }
}

/// Parameters every controller is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcInit {
    /// Sender maximum segment size in bytes (payload per segment).
    pub mss: u64,
    /// Initial window in segments (RFC 6928: 10). A controller's own
    /// configuration may override it (LEDBAT's RFC 6817 profile uses 2).
    pub initial_window: u64,
    /// HyStart++ (RFC 9406) in the initial slow start; NewReno and CUBIC
    /// honour it, the other controllers have their own start-up.
    pub hystart: bool,
}

impl CcInit {
    pub fn new(mss: u64) -> Self {
        CcInit {
            mss,
            initial_window: 10,
            hystart: false,
        }
    }
}

/// A parameter value for [`CcConfig::set`]: scenario files and command lines
/// hand these over without the protocol crate knowing their syntax.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue<'a> {
    Num(f64),
    Bool(bool),
    Str(&'a str),
}

impl ParamValue<'_> {
    /// A number, or an error naming what was expected.
    pub fn num(&self) -> Result<f64, String> {
        match self {
            ParamValue::Num(x) if x.is_finite() => Ok(*x),
            other => Err(format!("expected a number, got {other}")),
        }
    }
    /// A positive number.
    pub fn positive(&self) -> Result<f64, String> {
        let x = self.num()?;
        if x > 0.0 {
            Ok(x)
        } else {
            Err(format!("must be positive, got {x}"))
        }
    }
    /// A positive number no larger than `hi`.
    pub fn positive_at_most(&self, hi: f64) -> Result<f64, String> {
        let x = self.positive()?;
        if x <= hi {
            Ok(x)
        } else {
            Err(format!("must be at most {hi}, got {x}"))
        }
    }
    /// A number in `[lo, hi]`.
    pub fn in_range(&self, lo: f64, hi: f64) -> Result<f64, String> {
        let x = self.num()?;
        if (lo..=hi).contains(&x) {
            Ok(x)
        } else {
            Err(format!("must be between {lo} and {hi}, got {x}"))
        }
    }
    pub fn boolean(&self) -> Result<bool, String> {
        match self {
            ParamValue::Bool(b) => Ok(*b),
            other => Err(format!("expected true or false, got {other}")),
        }
    }
    /// A duration written as a string such as `"100ms"`.
    pub fn duration(&self) -> Result<Dur, String> {
        match self {
            ParamValue::Str(s) => crate::units::parse_duration(s).map_err(|e| e.to_string()),
            other => Err(format!(
                "expected a duration such as \"100ms\", got {other}"
            )),
        }
    }
}

impl std::fmt::Display for ParamValue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Num(x) => write!(f, "{x}"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Str(s) => write!(f, "\"{s}\""),
        }
    }
}

/// Configuration of a built-in controller: which algorithm, and its constants.
#[derive(Clone, Debug, PartialEq)]
pub enum CcConfig {
    NewReno,
    Cubic(CubicConfig),
    Vegas(VegasConfig),
    /// LEDBAT and its variants (RFC 6817, µTP, LEDBAT++): one controller,
    /// configured per variant.
    Ledbat(LedbatConfig),
    Lp(LpConfig),
    Nice(NiceConfig),
    /// BBR v1 (Linux `tcp_bbr.c`, draft-cardwell-iccrg-bbr-congestion-control-00).
    Bbr(BbrConfig),
    /// DCTCP (RFC 8257): needs ECN ([`crate::tcp::TcpConfig::ecn`]).
    Dctcp(DctcpConfig),
}

impl CcConfig {
    /// Every name [`CcConfig::from_name`] accepts as canonical (aliases are
    /// listed in [`CcConfig::from_name`]). The LEDBAT variants are separate names.
    pub const NAMES: &'static [&'static str] = &[
        "newreno",
        "cubic",
        "vegas",
        "ledbat",
        "ledbat-utp",
        "ledbat++",
        "lp",
        "nice",
        "bbr",
        "dctcp",
    ];

    /// The configuration of an algorithm by name, with default constants.
    ///
    /// Aliases: `reno` (newreno), `ledbat-rfc6817` (ledbat), `utp`
    /// (ledbat-utp), `ledbat-plus-plus` / `ledbatpp` (ledbat++), `tcp-lp`,
    /// `tcp-nice`, `bbr1` / `bbrv1` (bbr).
    pub fn from_name(name: &str) -> Result<CcConfig, String> {
        match name {
            "newreno" | "reno" => Ok(CcConfig::NewReno),
            "cubic" => Ok(CcConfig::Cubic(CubicConfig::default())),
            "vegas" => Ok(CcConfig::Vegas(VegasConfig::default())),
            "ledbat" | "ledbat-rfc6817" => {
                Ok(CcConfig::Ledbat(LedbatConfig::new(LedbatVariant::Rfc6817)))
            }
            "ledbat-utp" | "utp" => Ok(CcConfig::Ledbat(LedbatConfig::new(LedbatVariant::Utp))),
            "ledbat++" | "ledbat-plus-plus" | "ledbatpp" => {
                Ok(CcConfig::Ledbat(LedbatConfig::new(LedbatVariant::PlusPlus)))
            }
            "lp" | "tcp-lp" => Ok(CcConfig::Lp(LpConfig::default())),
            "nice" | "tcp-nice" => Ok(CcConfig::Nice(NiceConfig::default())),
            "bbr" | "bbr1" | "bbrv1" => Ok(CcConfig::Bbr(BbrConfig::default())),
            "dctcp" => Ok(CcConfig::Dctcp(DctcpConfig::default())),
            other => Err(format!(
                "unknown congestion control `{other}` (known: {})",
                CcConfig::NAMES.join(", ")
            )),
        }
    }

    /// The canonical name of the configured algorithm.
    pub fn name(&self) -> &'static str {
        match self {
            CcConfig::NewReno => "newreno",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Ledbat(c) => c.variant.name(),
            CcConfig::Lp(_) => "lp",
            CcConfig::Nice(_) => "nice",
            CcConfig::Bbr(_) => "bbr",
            CcConfig::Dctcp(_) => "dctcp",
        }
    }

    /// Names of the parameters [`CcConfig::set`] accepts for this algorithm.
    pub fn param_names(&self) -> &'static [&'static str] {
        match self {
            CcConfig::NewReno => &[],
            CcConfig::Cubic(_) => CubicConfig::PARAMS,
            CcConfig::Vegas(_) => VegasConfig::PARAMS,
            CcConfig::Ledbat(_) => LedbatConfig::PARAMS,
            CcConfig::Lp(_) => LpConfig::PARAMS,
            CcConfig::Nice(_) => NiceConfig::PARAMS,
            CcConfig::Bbr(_) => BbrConfig::PARAMS,
            CcConfig::Dctcp(_) => DctcpConfig::PARAMS,
        }
    }

    /// A problem between parameters that [`CcConfig::set`], which sees one
    /// at a time, cannot catch: Vegas's and NICE's α must not exceed β (the
    /// window would grow and shrink on the same queue).
    pub fn problem(&self) -> Option<String> {
        let (alpha, beta) = match self {
            CcConfig::Vegas(c) => (c.alpha, c.beta),
            CcConfig::Nice(c) => (c.alpha, c.beta),
            _ => return None,
        };
        (alpha > beta).then(|| {
            format!(
                "`alpha` ({alpha}) exceeds `beta` ({beta}); {} needs alpha ≤ beta",
                self.name()
            )
        })
    }

    /// Sets one parameter. The error names the problem; the caller adds the key's location.
    pub fn set(&mut self, key: &str, value: ParamValue<'_>) -> Result<(), String> {
        let handled = match self {
            CcConfig::NewReno => Ok(false),
            CcConfig::Cubic(c) => c.set(key, value),
            CcConfig::Vegas(c) => c.set(key, value),
            CcConfig::Ledbat(c) => c.set(key, value),
            CcConfig::Lp(c) => c.set(key, value),
            CcConfig::Nice(c) => c.set(key, value),
            CcConfig::Bbr(c) => c.set(key, value),
            CcConfig::Dctcp(c) => c.set(key, value),
        };
        match handled {
            Ok(true) => Ok(()),
            Err(e) => Err(format!("`{key}`: {e}")),
            Ok(false) => {
                let known = self.param_names();
                Err(if known.is_empty() {
                    format!("`{}` takes no parameters (got `{key}`)", self.name())
                } else {
                    format!(
                        "unknown parameter `{key}` for `{}` (known: {})",
                        self.name(),
                        known.join(", ")
                    )
                })
            }
        }
    }

    /// The smallest window, in bytes, the configured controller ever reports
    /// for a sender with segment size `mss` (its documented floor). One
    /// segment for every algorithm except TCP-NICE, whose window may fall to
    /// `min_cwnd_fraction` of a segment. (LEDBAT keeps `MIN_CWND` segments
    /// while acknowledgements arrive but, as RFC 6817 §2.4.2 says, drops to
    /// one segment on a retransmission timeout.)
    pub fn min_cwnd(&self, mss: u64) -> u64 {
        match self {
            CcConfig::Nice(c) => c.floor_bytes(mss),
            _ => mss,
        }
    }

    /// Whether the controller can use HyStart++ ([`CcInit::hystart`]).
    pub fn supports_hystart(&self) -> bool {
        matches!(self, CcConfig::NewReno | CcConfig::Cubic(_))
    }

    /// Builds the controller.
    pub fn build(&self, init: CcInit) -> Controller {
        match self {
            CcConfig::NewReno => Controller::NewReno(NewReno::new(init)),
            CcConfig::Cubic(c) => Controller::Cubic(Cubic::new(c.clone(), init)),
            CcConfig::Vegas(c) => Controller::Vegas(Vegas::new(c.clone(), init)),
            CcConfig::Ledbat(c) => Controller::Ledbat(Box::new(Ledbat::new(c, init))),
            CcConfig::Lp(c) => Controller::Lp(Lp::new(c.clone(), init)),
            CcConfig::Nice(c) => Controller::Nice(Nice::new(c.clone(), init)),
            CcConfig::Bbr(c) => Controller::Bbr(Box::new(Bbr::new(c.clone(), init))),
            CcConfig::Dctcp(c) => Controller::Dctcp(Dctcp::new(c.clone(), init)),
        }
    }
}

/// A built-in congestion controller (enum dispatch).
///
/// LEDBAT keeps its delay history inline (fixed-size arrays, about 1 KiB)
/// and BBR's model is 280 bytes; both are boxed, so that the enum, and
/// every connection, is as small as the largest of the others (about
/// 220 bytes rather than 1000). A Tor-sized simulation holds hundreds of
/// thousands of connections, most of them NewReno or CUBIC.
#[derive(Clone, Debug)]
pub enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
    Vegas(Vegas),
    Ledbat(Box<Ledbat>),
    Lp(Lp),
    Nice(Nice),
    Bbr(Box<Bbr>),
    Dctcp(Dctcp),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::NewReno($c) => $e,
            Controller::Cubic($c) => $e,
            Controller::Vegas($c) => $e,
            Controller::Ledbat($c) => $e,
            Controller::Lp($c) => $e,
            Controller::Nice($c) => $e,
            Controller::Bbr($c) => $e,
            Controller::Dctcp($c) => $e,
        }
    };
}

impl Controller {
    /// The algorithm's canonical name.
    pub fn name(&self) -> &'static str {
        match self {
            Controller::NewReno(_) => "newreno",
            Controller::Cubic(_) => "cubic",
            Controller::Vegas(_) => "vegas",
            Controller::Ledbat(c) => c.name(),
            Controller::Lp(_) => "lp",
            Controller::Nice(_) => "nice",
            Controller::Bbr(_) => "bbr",
            Controller::Dctcp(_) => "dctcp",
        }
    }

    /// Whether the receiver echoes CE marks as DCTCP's does (RFC 8257
    /// §3.2: ECE mirrors each segment's mark) rather than as RFC 3168's
    /// (ECE from the first mark until CWR).
    pub fn dctcp_echo(&self) -> bool {
        matches!(self, Controller::Dctcp(_))
    }
}

impl CongestionControl for Controller {
    fn on_ack(&mut self, ack: &AckSample) {
        dispatch!(self, c => c.on_ack(ack))
    }
    fn on_loss(&mut self, loss: &LossEvent) {
        dispatch!(self, c => c.on_loss(loss))
    }
    fn on_recovery_exit(&mut self, now: Time) {
        dispatch!(self, c => c.on_recovery_exit(now))
    }
    fn on_timeout(&mut self, now: Time, in_flight: u64) {
        dispatch!(self, c => c.on_timeout(now, in_flight))
    }
    fn on_hop_feedback(&mut self, fb: &HopFeedback) {
        dispatch!(self, c => c.on_hop_feedback(fb))
    }
    fn wants_rate_samples(&self) -> bool {
        matches!(self, Controller::Bbr(_))
    }
    fn on_rate_sample(&mut self, rs: &RateSample) {
        dispatch!(self, c => c.on_rate_sample(rs))
    }
    fn pacing_rate(&self) -> Option<u64> {
        match self {
            Controller::Bbr(c) => c.pacing_rate(),
            _ => None,
        }
    }
    fn on_ecn_ack(&mut self, now: Time, bytes_acked: u64, ece: bool) {
        if let Controller::Dctcp(c) = self {
            c.on_ecn_ack(now, bytes_acked, ece)
        }
    }
    fn on_ecn_echo(&mut self, ev: &LossEvent) {
        dispatch!(self, c => c.on_ecn_echo(ev))
    }
    fn cwnd(&self) -> u64 {
        dispatch!(self, c => c.cwnd())
    }
    fn ssthresh(&self) -> u64 {
        dispatch!(self, c => c.ssthresh())
    }
    fn in_slow_start(&self) -> bool {
        dispatch!(self, c => c.in_slow_start())
    }
}

/// RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2*SMSS).
pub(crate) fn half_flight(in_flight: u64, mss: u64) -> u64 {
    (in_flight / 2).max(2 * mss)
}

/// Slow-start growth with optional HyStart++ (RFC 9406), as NewReno and
/// CUBIC share it: feeds the ACK to HyStart++ while in slow start and
/// returns the new (cwnd, ssthresh), or `None` when the ACK is not a
/// slow-start ACK the caller should handle itself (congestion avoidance,
/// recovery, application-limited).
pub(crate) fn slow_start_step(
    hystart: &mut Option<hystart::HyStart>,
    growth: &mut RenoGrowth,
    cwnd: u64,
    ssthresh: u64,
    ack: &AckSample,
    mss: u64,
) -> Option<(u64, u64)> {
    if cwnd >= ssthresh {
        return None;
    }
    let phase = hystart.as_mut().map(|h| h.on_ack(ack));
    if phase == Some(hystart::Phase::Exit) {
        // RFC 9406 §4.2: ssthresh ← cwnd; congestion avoidance from here.
        *hystart = None;
        return Some((cwnd, cwnd));
    }
    if ack.in_recovery || !ack.cwnd_limited {
        return Some((cwnd, ssthresh));
    }
    let grown = growth.grow(cwnd, ssthresh, ack.bytes_acked, mss);
    if phase == Some(hystart::Phase::Css) {
        return Some((
            cwnd + (grown - cwnd) / hystart::CSS_GROWTH_DIVISOR,
            ssthresh,
        ));
    }
    Some((grown, ssthresh))
}

/// Standard Reno-style window growth shared by several controllers:
/// slow start (RFC 5681 §3.1, with appropriate byte counting, RFC 3465 L = 2)
/// and congestion avoidance by one SMSS per window of acknowledged bytes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RenoGrowth {
    /// Bytes acknowledged since the last congestion-avoidance increment.
    pub acked_acc: u64,
}

impl RenoGrowth {
    pub fn new() -> Self {
        RenoGrowth { acked_acc: 0 }
    }

    /// Returns the new cwnd after `bytes_acked`, given `cwnd` and `ssthresh`.
    pub fn grow(&mut self, cwnd: u64, ssthresh: u64, bytes_acked: u64, mss: u64) -> u64 {
        if cwnd < ssthresh {
            // RFC 3465 §2.2: increase by at most L*SMSS per ACK, L = 2.
            // cwnd may overshoot ssthresh by less than one increment, as RFC 5681 allows.
            cwnd + bytes_acked.min(2 * mss)
        } else {
            // RFC 5681 §3.1 (eq. 3 alternative): +SMSS once cwnd bytes are acknowledged.
            self.acked_acc += bytes_acked;
            if self.acked_acc >= cwnd {
                self.acked_acc -= cwnd;
                cwnd + mss
            } else {
                cwnd
            }
        }
    }
}

/// Reno's multiplicative decrease for the delay-based controllers that fall
/// back to Reno on loss (Vegas, TCP-LP): RFC 5681 §3.1 eq. (4),
/// ssthresh = max(FlightSize / 2, 2·SMSS), cwnd = ssthresh.
///
/// Two guards that RFC 5681 does not need (its window only shrinks on loss):
/// the flight size is capped at cwnd, and cwnd is never *raised* to
/// ssthresh. A delay-based window may have been cut below the data still in
/// flight, or below 2·SMSS, before the loss was detected; halving must not
/// undo that.
pub(crate) fn reno_halving(cwnd: u64, in_flight: u64, mss: u64) -> (u64, u64) {
    let ssthresh = half_flight(in_flight.min(cwnd), mss);
    (cwnd.min(ssthresh), ssthresh)
}

/// Per-round ("once per RTT") bookkeeping from the cumulative byte counters
/// of [`AckSample`]: a round that began when `sent` was S ends on the first
/// ACK with `delivered >= S`, and the next round begins there.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct RoundTracker {
    /// `sent` when the current round began; `None` before the first ACK.
    end: Option<u64>,
}

impl RoundTracker {
    pub fn new() -> Self {
        RoundTracker { end: None }
    }

    /// Feeds one ACK; returns true if it completed a round.
    pub fn on_ack(&mut self, delivered: u64, sent: u64) -> bool {
        match self.end {
            None => {
                self.end = Some(sent);
                false
            }
            Some(end) if delivered >= end => {
                self.end = Some(sent);
                true
            }
            Some(_) => false,
        }
    }

    /// Forgets the current round: the next ACK starts a new one.
    pub fn restart(&mut self) {
        self.end = None;
    }
}

/// Which delay measurement a delay-based controller works from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelaySignal {
    /// The one-way delay of the data direction ([`AckSample::owd`]).
    Owd,
    /// The round-trip time ([`AckSample::rtt`]).
    Rtt,
}

impl DelaySignal {
    pub fn name(self) -> &'static str {
        match self {
            DelaySignal::Owd => "owd",
            DelaySignal::Rtt => "rtt",
        }
    }
}

/// Picks delay samples out of ACKs for controllers that prefer one-way
/// delays (LEDBAT, TCP-LP).
///
/// Without timestamps there is no OWD; then the controller works from the
/// full RTT sample instead. Not RTT/2: these controllers only use
/// differences from a base (queuing delay = current − base), and RTT − base
/// RTT is the forward queuing delay (plus any reverse-path queuing), while
/// RTT/2 would halve it and make, say, LEDBAT build twice its target.
///
/// The first ACK that carries a usable sample decides the signal for the
/// rest of the connection, so that samples with different offsets (an OWD
/// includes the clock offset between the hosts) are never mixed in one
/// minimum or average.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DelaySource {
    prefer: DelaySignal,
    latched: Option<DelaySignal>,
}

impl DelaySource {
    pub fn new(prefer: DelaySignal) -> Self {
        DelaySource {
            prefer,
            latched: None,
        }
    }

    /// The delay sample of this ACK in the latched signal, if it has one.
    pub fn sample(&mut self, ack: &AckSample) -> Option<Dur> {
        match self.latched {
            Some(DelaySignal::Owd) => ack.owd,
            Some(DelaySignal::Rtt) => ack.rtt,
            None => {
                if self.prefer == DelaySignal::Owd && ack.owd.is_some() {
                    self.latched = Some(DelaySignal::Owd);
                    ack.owd
                } else if ack.rtt.is_some() {
                    self.latched = Some(DelaySignal::Rtt);
                    ack.rtt
                } else {
                    None
                }
            }
        }
    }
}

/// The best RTT estimate an ACK offers: SRTT, else this ACK's sample, else
/// the minimum.
pub(crate) fn rtt_estimate(ack: &AckSample) -> Dur {
    if !ack.srtt.is_zero() {
        ack.srtt
    } else {
        ack.rtt.unwrap_or(ack.min_rtt)
    }
}

/// Converts a window in bytes held as `f64` back to the trait's `u64`,
/// never below `floor` (NaN, negative and infinite values cannot leak out).
pub(crate) fn bytes_of(w: f64, floor: u64) -> u64 {
    if w.is_nan() {
        floor
    } else if w >= u64::MAX as f64 {
        u64::MAX
    } else {
        (w as u64).max(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_builds_and_round_trips() {
        for &name in CcConfig::NAMES {
            let cfg = CcConfig::from_name(name).unwrap();
            assert_eq!(cfg.name(), name);
            let c = cfg.build(CcInit::new(1000));
            assert_eq!(c.name(), name);
            assert!(c.cwnd() >= cfg.min_cwnd(1000));
        }
        assert!(CcConfig::from_name("bbr2").is_err());
        assert_eq!(CcConfig::from_name("utp").unwrap().name(), "ledbat-utp");
        // Every default is consistent.
        for &name in CcConfig::NAMES {
            assert_eq!(CcConfig::from_name(name).unwrap().problem(), None, "{name}");
        }
    }

    #[test]
    fn alpha_above_beta_is_a_problem() {
        for name in ["vegas", "nice"] {
            let mut c = CcConfig::from_name(name).unwrap();
            c.set("alpha", ParamValue::Num(5.0)).unwrap();
            let m = c.problem().expect("alpha 5 > beta 4");
            assert!(m.contains("exceeds"), "{m}");
            c.set("beta", ParamValue::Num(5.0)).unwrap();
            assert_eq!(c.problem(), None);
        }
    }

    #[test]
    fn set_reports_unknown_and_bad_values() {
        let mut c = CcConfig::from_name("cubic").unwrap();
        c.set("beta", ParamValue::Num(0.8)).unwrap();
        assert_eq!(
            c,
            CcConfig::Cubic(CubicConfig {
                beta: 0.8,
                ..CubicConfig::default()
            })
        );
        let e = c.set("beta", ParamValue::Num(1.5)).unwrap_err();
        assert!(e.contains("beta") && e.contains("between"), "{e}");
        let e = c.set("gamma", ParamValue::Num(1.0)).unwrap_err();
        assert!(e.contains("unknown parameter `gamma`"), "{e}");
        let mut r = CcConfig::NewReno;
        assert!(r
            .set("x", ParamValue::Bool(true))
            .unwrap_err()
            .contains("no parameters"));
        for &name in CcConfig::NAMES {
            let cfg = CcConfig::from_name(name).unwrap();
            for p in cfg.param_names() {
                // Every advertised parameter is recognised (it may reject the value).
                let mut c = cfg.clone();
                let e = c.set(p, ParamValue::Bool(true));
                assert!(
                    e.as_ref()
                        .map_or_else(|e| !e.contains("unknown parameter"), |_| true),
                    "{name}.{p}: {e:?}"
                );
            }
        }
    }

    #[test]
    fn rounds_end_when_the_round_start_is_delivered() {
        let mut r = RoundTracker::new();
        assert!(!r.on_ack(1000, 10_000)); // starts a round ending at 10 000
        assert!(!r.on_ack(9_999, 12_000));
        assert!(r.on_ack(10_000, 20_000));
        assert!(!r.on_ack(15_000, 25_000));
        assert!(r.on_ack(20_000, 25_000));
    }

    #[test]
    fn delay_source_latches_its_signal() {
        let mut ack = AckSample {
            now: Time::ZERO,
            bytes_acked: 1,
            in_flight: 1,
            rtt: Some(Dur::from_millis(40)),
            srtt: Dur::ZERO,
            min_rtt: Dur::from_millis(40),
            owd: None,
            delivered: 1,
            sent: 1,
            in_recovery: false,
            cwnd_limited: true,
        };
        let mut s = DelaySource::new(DelaySignal::Owd);
        assert_eq!(s.sample(&ack), Some(Dur::from_millis(40)));
        ack.owd = Some(Dur::from_secs(5));
        // Latched on RTT: a late OWD (with its clock offset) is not mixed in.
        assert_eq!(s.sample(&ack), Some(Dur::from_millis(40)));
        let mut s = DelaySource::new(DelaySignal::Owd);
        assert_eq!(s.sample(&ack), Some(Dur::from_secs(5)));
        ack.owd = None;
        assert_eq!(s.sample(&ack), None);
    }

    #[test]
    fn reno_halving_never_raises_the_window() {
        assert_eq!(reno_halving(20_000, 20_000, 1000), (10_000, 10_000));
        assert_eq!(reno_halving(20_000, 40_000, 1000), (10_000, 10_000));
        assert_eq!(reno_halving(1_500, 1_500, 1000), (1_500, 2_000));
        assert_eq!(bytes_of(f64::NAN, 7), 7);
        assert_eq!(bytes_of(-3.0, 7), 7);
        assert_eq!(bytes_of(1e30, 7), u64::MAX);
    }
}
