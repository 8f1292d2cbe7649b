//! LEDBAT (Low Extra Delay Background Transport) and its deployed variants,
//! as configurations of one controller.
//!
//! # RFC 6817 (`ledbat`, variant `rfc6817`)
//! * Delay estimation (§2.4.2 pseudo-code): `queuing_delay =
//!   FILTER(current_delays) − MIN(base_delays)`. `current_delays` holds the
//!   last `CURRENT_FILTER` samples and FILTER is their minimum (the MIN
//!   filter is the RFC's example; default 4 samples). `base_delays` holds
//!   `BASE_HISTORY` (10, §2.5) per-minute minima; a new bucket starts whenever
//!   the sample's minute differs from the last rollover's
//!   (`update_base_delay`).
//! * Window (§2.4.2): per ACK, `off_target = (TARGET − queuing_delay)/TARGET`,
//!   `cwnd += GAIN · off_target · bytes_newly_acked · MSS / cwnd`, then
//!   `cwnd ≤ flightsize + ALLOWED_INCREASE·MSS` (flightsize before the ACK)
//!   and `cwnd ≥ MIN_CWND·MSS`. TARGET = 100 ms (the RFC's maximum), GAIN = 1,
//!   ALLOWED_INCREASE = 1, MIN_CWND = 2, INIT_CWND = 2 (§2.5). No slow start.
//!   One deviation: the ACK's share `bytes_newly_acked / cwnd` is capped at
//!   one window (as libutp does), which only matters for a single ACK that
//!   covers more than the whole window.
//! * Loss (§2.4.2): at most once per RTT, `cwnd = min(cwnd, max(cwnd/2,
//!   MIN_CWND·MSS))`. Timeout (the RFC's congestion timeout): `cwnd = 1·MSS`.
//! * Delay samples: one-way delays ([`AckSample::owd`]); the constant clock
//!   offset cancels in the difference from the base. Without timestamps we
//!   use the RTT (see [`super::DelaySource`]).
//!
//! # µTP (`ledbat-utp`, variant `utp`): libutp / libtorrent
//! The profile BitTorrent deploys (libutp `utp_internal.cpp`, libtorrent
//! `src/utp_stream.cpp`):
//! * Gain: at most `MAX_CWND_INCREASE_BYTES_PER_RTT` = 3000 bytes per RTT
//!   (libutp; libtorrent `utp_gain_factor` = 3000), scaled by
//!   `off_target` and by the fraction of the window this ACK covers, capped
//!   at one window (libutp's `window_factor = min(acked, cwnd)/max(cwnd,
//!   acked)`). TARGET 100 ms (libutp `CCONTROL_TARGET`, libtorrent
//!   `utp_target_delay`).
//! * Delay filter: minimum of the last 3 samples (libutp `CUR_DELAY_SIZE`,
//!   libtorrent `m_delay_sample_hist`), clamped to this ACK's RTT (both: a
//!   one-way delay cannot exceed the round trip). Base history: 13 one-minute
//!   buckets (libutp `DELAY_BASE_HISTORY`; libtorrent uses 20).
//! * Slow start (libtorrent `do_ledbat`): TCP-like, `cwnd += max(bytes_acked,
//!   linear gain)`, left when the queuing delay reaches `slow_start_exit ×
//!   TARGET` (libtorrent: the full target, with ssthresh = cwnd/2; libutp
//!   leaves at 0.9·TARGET), when cwnd would exceed ssthresh, or on loss
//!   (ssthresh = the reduced window). Re-entered after a timeout.
//! * Application-limited ACKs never grow the window (libutp zeroes a
//!   positive gain when the window was not full; libtorrent skips the
//!   update). There is no flightsize cap.
//! * Loss: `cwnd × 0.5` (libtorrent `utp_loss_multiplier` = 50 %), at most
//!   once per RTT (libtorrent cuts once per window of sequence numbers),
//!   never below one segment (libtorrent keeps ≥ 1 MSS, as RFC 6817 does;
//!   libutp allows `MIN_WINDOW_SIZE` = 10 bytes). INIT_CWND = 1 segment
//!   (libutp and libtorrent start from one packet). Timeout: one segment.
//!
//! # LEDBAT++ (`ledbat++`, variant `ledbat++`): draft-irtf-iccrg-ledbat-plus-plus-01
//! * RTT instead of one-way delay (§3), TARGET = 60 ms (§4.5).
//! * Dynamic gain (§4.2): `GAIN = 1 / min(16, ⌈2·TARGET/base⌉)`, `base` the
//!   base delay.
//! * Slow start (§4.1): the window grows by `GAIN × bytes acknowledged` and
//!   the initial slow start ends when the queuing delay exceeds ¾·TARGET.
//! * Multiplicative decrease (§4.3), per RTT in packets: `W += GAIN` when the
//!   delay is at most TARGET, otherwise `W += max(GAIN − C·W·(delay/TARGET −
//!   1), −W/2)` with C = 1; applied per ACK in proportion to the bytes
//!   acknowledged, floored at MIN_CWND = 2.
//! * Periodic slowdowns (§4.4): two RTTs after the initial slow start ends,
//!   ssthresh = cwnd and cwnd = 2 packets for two RTTs; then slow start
//!   (with the dynamic gain, as Apple's XNU `tcp_ledbat.c` does) back up to
//!   ssthresh, leaving early if the delay exceeds TARGET (XNU). The next
//!   slowdown starts 9 × the last slowdown's duration (from its start to
//!   the end of its ramp) later.
//! * Loss and timeout as RFC 6817; after a timeout the controller slow-starts
//!   again, as XNU does, with ssthresh = max(FlightSize/2, 2·SMSS) (RFC 5681
//!   eq. 4; XNU takes min(cwnd, rwnd)/2). In congestion avoidance below
//!   TARGET the window grows by GAIN per RTT as the draft says (XNU adds one
//!   MSS per RTT there).
//!
//! Every variant freezes the window while the transport is in fast recovery
//! (delay samples are still recorded). The window is kept in bytes as `f64`.

use super::{
    bytes_of, half_flight, rtt_estimate, AckSample, CcInit, CongestionControl, DelaySignal,
    DelaySource, LossEvent, ParamValue,
};
use crate::time::{Dur, Time};

/// Most per-minute base-delay buckets a configuration may ask for.
pub const MAX_BASE_HISTORY: usize = 60;
/// Most current-delay samples a configuration may filter over.
pub const MAX_CURRENT_FILTER: usize = 32;
/// Largest `gain` in segments per RTT (100 times RFC 6817's ceiling of 1).
pub const MAX_GAIN: f64 = 100.0;
/// Largest `gain` in bytes per RTT (about 100 segments of 1448 B; µTP uses 3000 B).
pub const MAX_GAIN_BYTES: u64 = 150_000;

/// The LEDBAT profile a controller starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedbatVariant {
    /// RFC 6817 as written.
    Rfc6817,
    /// µTP as deployed by libutp / libtorrent.
    Utp,
    /// draft-irtf-iccrg-ledbat-plus-plus-01.
    PlusPlus,
}

impl LedbatVariant {
    /// The congestion-control name of this variant.
    pub fn name(self) -> &'static str {
        match self {
            LedbatVariant::Rfc6817 => "ledbat",
            LedbatVariant::Utp => "ledbat-utp",
            LedbatVariant::PlusPlus => "ledbat++",
        }
    }

    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "rfc6817" | "ledbat" | "ledbat-rfc6817" => Ok(LedbatVariant::Rfc6817),
            "utp" | "ledbat-utp" => Ok(LedbatVariant::Utp),
            "ledbat++" | "plusplus" | "ledbat-plus-plus" | "ledbatpp" => {
                Ok(LedbatVariant::PlusPlus)
            }
            other => Err(format!(
                "unknown LEDBAT variant `{other}` (known: rfc6817, utp, ledbat++)"
            )),
        }
    }

    /// The variant's documented constants.
    pub fn params(self) -> LedbatParams {
        match self {
            LedbatVariant::Rfc6817 => LedbatParams {
                variant: self,
                target: Dur::from_millis(100),
                gain: Gain::Mss(1.0),
                base_history: 10,
                current_filter: 4,
                min_cwnd: 2,
                init_cwnd: 2,
                slow_start: false,
                slow_start_exit: 1.0,
                allowed_increase: 1,
                flight_cap: true,
                clamp_to_rtt: false,
                multiplicative_decrease: false,
                decrease_constant: 1.0,
                periodic_slowdown: false,
                delay: DelaySignal::Owd,
                loss_factor: 0.5,
            },
            LedbatVariant::Utp => LedbatParams {
                variant: self,
                target: Dur::from_millis(100),
                gain: Gain::Bytes(3000.0),
                base_history: 13,
                current_filter: 3,
                min_cwnd: 1,
                init_cwnd: 1,
                slow_start: true,
                slow_start_exit: 1.0,
                allowed_increase: 1,
                flight_cap: false,
                clamp_to_rtt: true,
                multiplicative_decrease: false,
                decrease_constant: 1.0,
                periodic_slowdown: false,
                delay: DelaySignal::Owd,
                loss_factor: 0.5,
            },
            LedbatVariant::PlusPlus => LedbatParams {
                variant: self,
                target: Dur::from_millis(60),
                gain: Gain::Dynamic,
                base_history: 10,
                current_filter: 4,
                min_cwnd: 2,
                init_cwnd: 2,
                slow_start: true,
                slow_start_exit: 0.75,
                allowed_increase: 1,
                flight_cap: true,
                clamp_to_rtt: false,
                multiplicative_decrease: true,
                decrease_constant: 1.0,
                periodic_slowdown: true,
                delay: DelaySignal::Rtt,
                loss_factor: 0.5,
            },
        }
    }
}

/// LEDBAT's GAIN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gain {
    /// Segments per RTT at zero queuing delay (RFC 6817's GAIN).
    Mss(f64),
    /// Bytes per RTT at zero queuing delay (µTP's MAX_CWND_INCREASE_BYTES_PER_RTT).
    Bytes(f64),
    /// LEDBAT++'s `1 / min(16, ⌈2·TARGET/base⌉)` segments per RTT.
    Dynamic,
}

/// The resolved constants of a LEDBAT controller.
#[derive(Clone, Debug, PartialEq)]
pub struct LedbatParams {
    pub variant: LedbatVariant,
    /// TARGET queuing delay.
    pub target: Dur,
    pub gain: Gain,
    /// BASE_HISTORY: number of one-minute base-delay buckets.
    pub base_history: usize,
    /// CURRENT_FILTER: number of recent samples the MIN filter covers.
    pub current_filter: usize,
    /// MIN_CWND, segments.
    pub min_cwnd: u64,
    /// INIT_CWND, segments.
    pub init_cwnd: u64,
    /// Whether the connection starts in slow start.
    pub slow_start: bool,
    /// The initial slow start ends once the queuing delay reaches this
    /// fraction of TARGET.
    pub slow_start_exit: f64,
    /// ALLOWED_INCREASE, segments (for the flightsize cap).
    pub allowed_increase: u64,
    /// Apply RFC 6817's `cwnd ≤ flightsize + ALLOWED_INCREASE·MSS`.
    pub flight_cap: bool,
    /// Clamp the queuing delay to the ACK's RTT sample (µTP).
    pub clamp_to_rtt: bool,
    /// LEDBAT++ §4.3 multiplicative decrease (else RFC 6817's linear rule).
    pub multiplicative_decrease: bool,
    /// LEDBAT++'s decrease constant C.
    pub decrease_constant: f64,
    /// LEDBAT++ §4.4 periodic slowdowns.
    pub periodic_slowdown: bool,
    /// Which delay the controller measures.
    pub delay: DelaySignal,
    /// Multiplicative decrease on loss.
    pub loss_factor: f64,
}

/// LEDBAT configuration: a variant plus any constants overridden by name.
/// Overrides survive a later change of `variant`.
#[derive(Clone, Debug, PartialEq)]
pub struct LedbatConfig {
    pub variant: LedbatVariant,
    pub target: Option<Dur>,
    pub gain: Option<Gain>,
    pub base_history: Option<usize>,
    pub current_filter: Option<usize>,
    pub min_cwnd: Option<u64>,
    pub init_cwnd: Option<u64>,
    pub slow_start: Option<bool>,
    pub slow_start_exit: Option<f64>,
    pub delay: Option<DelaySignal>,
}

impl Default for LedbatConfig {
    fn default() -> Self {
        LedbatConfig::new(LedbatVariant::Rfc6817)
    }
}

fn count(v: ParamValue<'_>, lo: f64, hi: f64) -> Result<u64, String> {
    let x = v.in_range(lo, hi)?;
    if x.fract() != 0.0 {
        return Err(format!("must be a whole number, got {x}"));
    }
    Ok(x as u64)
}

impl LedbatConfig {
    pub const PARAMS: &'static [&'static str] = &[
        "variant",
        "target",
        "gain",
        "base_history",
        "current_filter",
        "min_cwnd",
        "init_cwnd",
        "slow_start",
        "slow_start_exit",
        "delay",
    ];

    pub fn new(variant: LedbatVariant) -> Self {
        LedbatConfig {
            variant,
            target: None,
            gain: None,
            base_history: None,
            current_filter: None,
            min_cwnd: None,
            init_cwnd: None,
            slow_start: None,
            slow_start_exit: None,
            delay: None,
        }
    }

    /// The variant's constants with the overrides applied.
    pub fn params(&self) -> LedbatParams {
        let mut p = self.variant.params();
        if let Some(x) = self.target {
            p.target = x;
        }
        if let Some(x) = self.gain {
            p.gain = x;
        }
        if let Some(x) = self.base_history {
            p.base_history = x;
        }
        if let Some(x) = self.current_filter {
            p.current_filter = x;
        }
        if let Some(x) = self.min_cwnd {
            p.min_cwnd = x;
        }
        if let Some(x) = self.init_cwnd {
            p.init_cwnd = x;
        }
        if let Some(x) = self.slow_start {
            p.slow_start = x;
        }
        if let Some(x) = self.slow_start_exit {
            p.slow_start_exit = x;
        }
        if let Some(x) = self.delay {
            p.delay = x;
        }
        p
    }

    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "variant" => match v {
                ParamValue::Str(s) => self.variant = LedbatVariant::parse(s)?,
                other => return Err(format!("expected rfc6817, utp or ledbat++, got {other}")),
            },
            "target" => {
                let d = v.duration()?;
                if d.is_zero() {
                    return Err("must be positive".into());
                }
                self.target = Some(d);
            }
            "gain" => {
                self.gain = Some(match v {
                    // RFC 6817 §2.5 asks GAIN ≤ 1; experiments may go
                    // beyond, up to MAX_GAIN segments per RTT.
                    ParamValue::Num(_) => Gain::Mss(v.positive_at_most(MAX_GAIN)?),
                    ParamValue::Str("dynamic") => Gain::Dynamic,
                    ParamValue::Str(s) => {
                        let b = crate::units::parse_bytes(s).map_err(|e| {
                            format!("{e} (a number of segments, bytes such as \"3000B\", or \"dynamic\")")
                        })?;
                        if b.get() == 0 {
                            return Err("must be positive".into());
                        }
                        if b.get() > MAX_GAIN_BYTES {
                            return Err(format!(
                                "must be at most {MAX_GAIN_BYTES} B per RTT, got {}",
                                b.get()
                            ));
                        }
                        Gain::Bytes(b.get() as f64)
                    }
                    other => {
                        return Err(format!(
                            "expected segments per RTT, bytes such as \"3000B\", or \"dynamic\"; got {other}"
                        ))
                    }
                })
            }
            "base_history" => {
                self.base_history = Some(count(v, 1.0, MAX_BASE_HISTORY as f64)? as usize)
            }
            "current_filter" => {
                self.current_filter = Some(count(v, 1.0, MAX_CURRENT_FILTER as f64)? as usize)
            }
            "min_cwnd" => self.min_cwnd = Some(count(v, 1.0, 1e6)?),
            "init_cwnd" => self.init_cwnd = Some(count(v, 1.0, 1e6)?),
            "slow_start" => self.slow_start = Some(v.boolean()?),
            "slow_start_exit" => self.slow_start_exit = Some(v.in_range(0.0, 10.0)?),
            "delay" => {
                self.delay = Some(match v {
                    ParamValue::Str("owd") => DelaySignal::Owd,
                    ParamValue::Str("rtt") => DelaySignal::Rtt,
                    other => return Err(format!("expected \"owd\" or \"rtt\", got {other}")),
                })
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// RFC 6817 §2.4.2 `base_delays`: per-minute minima, oldest first.
#[derive(Clone, Debug, PartialEq)]
struct BaseHistory {
    buckets: [Dur; MAX_BASE_HISTORY],
    cap: usize,
    len: usize,
    /// Index of the oldest bucket.
    head: usize,
    /// The minute (since the epoch of `Time`) of the last rollover.
    last_minute: Option<u64>,
}

impl BaseHistory {
    fn new(cap: usize) -> Self {
        BaseHistory {
            buckets: [Dur::MAX; MAX_BASE_HISTORY],
            cap: cap.clamp(1, MAX_BASE_HISTORY),
            len: 0,
            head: 0,
            last_minute: None,
        }
    }

    /// `update_base_delay`: a new bucket whenever the minute changes, else
    /// the minimum into the newest bucket.
    fn update(&mut self, delay: Dur, now: Time) {
        let minute = now.as_nanos() / Dur::from_secs(60).as_nanos();
        if self.last_minute != Some(minute) {
            self.last_minute = Some(minute);
            if self.len == self.cap {
                self.head = (self.head + 1) % self.cap;
                self.len -= 1;
            }
            self.buckets[(self.head + self.len) % self.cap] = delay;
            self.len += 1;
        } else {
            let tail = (self.head + self.len - 1) % self.cap;
            self.buckets[tail] = self.buckets[tail].min(delay);
        }
    }

    fn min(&self) -> Option<Dur> {
        (0..self.len)
            .map(|i| self.buckets[(self.head + i) % self.cap])
            .min()
    }
}

/// `current_delays`: the last `cap` samples; FILTER is their minimum.
#[derive(Clone, Debug, PartialEq)]
struct CurrentDelays {
    samples: [Dur; MAX_CURRENT_FILTER],
    cap: usize,
    len: usize,
    next: usize,
}

impl CurrentDelays {
    fn new(cap: usize) -> Self {
        CurrentDelays {
            samples: [Dur::MAX; MAX_CURRENT_FILTER],
            cap: cap.clamp(1, MAX_CURRENT_FILTER),
            len: 0,
            next: 0,
        }
    }

    fn push(&mut self, d: Dur) {
        self.samples[self.next] = d;
        self.next = (self.next + 1) % self.cap;
        self.len = (self.len + 1).min(self.cap);
    }

    fn filter(&self) -> Option<Dur> {
        self.samples[..self.len].iter().copied().min()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Slow start; `initial` is false for LEDBAT++'s ramp after a slowdown.
    SlowStart { initial: bool },
    /// Congestion avoidance (the LEDBAT controller proper).
    Steady,
    /// LEDBAT++ slowdown: window held at two segments until `until`.
    Frozen { until: Time },
}

#[derive(Clone, Debug)]
pub struct Ledbat {
    p: LedbatParams,
    mss: u64,
    /// Bytes.
    cwnd: f64,
    ssthresh: u64,
    phase: Phase,
    source: DelaySource,
    base: BaseHistory,
    current: CurrentDelays,
    /// Latest RTT estimate (for "once per RTT" and the slowdown timers).
    rtt: Dur,
    /// The transport's minimum RTT, for the dynamic gain when measuring OWD.
    min_rtt: Dur,
    /// A loss before this time does not cut the window again.
    loss_guard: Option<Time>,
    next_slowdown: Option<Time>,
    slowdown_start: Time,
}

impl Ledbat {
    pub fn new(cfg: &LedbatConfig, init: CcInit) -> Self {
        let p = cfg.params();
        let mss = init.mss.max(1);
        Ledbat {
            mss,
            cwnd: (p.init_cwnd.max(1) * mss) as f64,
            ssthresh: u64::MAX,
            phase: if p.slow_start {
                Phase::SlowStart { initial: true }
            } else {
                Phase::Steady
            },
            source: DelaySource::new(p.delay),
            base: BaseHistory::new(p.base_history),
            current: CurrentDelays::new(p.current_filter),
            rtt: Dur::ZERO,
            min_rtt: Dur::ZERO,
            loss_guard: None,
            next_slowdown: None,
            slowdown_start: Time::ZERO,
            p,
        }
    }

    /// The variant's congestion-control name.
    pub fn name(&self) -> &'static str {
        self.p.variant.name()
    }

    /// The constants this controller runs with.
    pub fn params(&self) -> &LedbatParams {
        &self.p
    }

    fn seg(&self) -> f64 {
        self.mss as f64
    }

    fn min_bytes(&self) -> f64 {
        (self.p.min_cwnd.max(1) * self.mss) as f64
    }

    /// `FILTER(current_delays) − MIN(base_delays)`.
    fn queuing_delay(&self) -> Option<Dur> {
        Some(self.current.filter()?.saturating_sub(self.base.min()?))
    }

    /// GAIN in segments per RTT at zero queuing delay.
    fn gain_segments(&self) -> f64 {
        match self.p.gain {
            Gain::Mss(g) => g,
            Gain::Bytes(b) => b / self.seg(),
            Gain::Dynamic => {
                // LEDBAT++ §4.2; `base` is the base delay of the RTT signal
                // (the transport's minimum RTT when measuring one-way delays).
                let base = match self.p.delay {
                    DelaySignal::Rtt => self.base.min().unwrap_or(self.min_rtt),
                    DelaySignal::Owd => self.min_rtt,
                };
                let ratio = 2.0 * self.p.target.as_secs_f64() / base.as_secs_f64();
                1.0 / ratio.ceil().clamp(1.0, 16.0)
            }
        }
    }

    fn schedule_after_ramp(&mut self, now: Time) {
        if self.p.periodic_slowdown {
            // §4.4: the next slowdown 9 × this one's duration later.
            let d = now.since(self.slowdown_start);
            self.next_slowdown = Some(now + d * 9);
        }
    }

    fn leave_slow_start(&mut self, now: Time, initial: bool) {
        self.phase = Phase::Steady;
        if !initial {
            self.schedule_after_ramp(now);
        }
    }

    fn slow_start(&mut self, ack: &AckSample, initial: bool, qd: Dur) {
        let target = self.p.target.as_secs_f64();
        let exit = if initial {
            self.p.slow_start_exit * target
        } else {
            target
        };
        if qd.as_secs_f64() >= exit {
            if initial && self.p.variant == LedbatVariant::Utp {
                // libtorrent: ssthres = cwnd / 2 when the delay ends slow start.
                self.ssthresh = bytes_of(self.cwnd / 2.0, self.mss);
            } else {
                self.ssthresh = bytes_of(self.cwnd, self.mss);
            }
            self.leave_slow_start(ack.now, initial);
            return;
        }
        if !ack.cwnd_limited {
            return;
        }
        let acked = ack.bytes_acked as f64;
        let mut inc = match self.p.gain {
            Gain::Dynamic => acked * self.gain_segments(),
            _ => acked,
        };
        if self.p.variant == LedbatVariant::Utp {
            // libtorrent: max(exponential gain, linear gain).
            inc = inc.max(self.linear_delta(ack, qd));
        }
        let ssthresh = self.ssthresh as f64;
        if self.cwnd + inc >= ssthresh {
            self.cwnd = self.cwnd.max(ssthresh);
            self.leave_slow_start(ack.now, initial);
        } else {
            self.cwnd += inc;
        }
    }

    /// RFC 6817's per-ACK change, `GAIN·off_target·bytes_acked·MSS/cwnd`
    /// (the ACK's share of the window capped at one window, as libutp does).
    fn linear_delta(&self, ack: &AckSample, qd: Dur) -> f64 {
        let target = self.p.target.as_secs_f64();
        let off_target = (target - qd.as_secs_f64()) / target;
        let share = (ack.bytes_acked as f64 / self.cwnd.max(1.0)).min(1.0);
        self.gain_segments() * self.seg() * off_target * share
    }

    /// LEDBAT++ §4.3 per-ACK change.
    fn plusplus_delta(&self, ack: &AckSample, qd: Dur) -> f64 {
        let w = self.cwnd / self.seg();
        let g = self.gain_segments();
        let r = qd.as_secs_f64() / self.p.target.as_secs_f64();
        let per_rtt = if r <= 1.0 {
            g
        } else {
            (g - self.p.decrease_constant * w * (r - 1.0)).max(-w / 2.0)
        };
        let share = (ack.bytes_acked as f64 / self.cwnd.max(1.0)).min(1.0);
        per_rtt * self.seg() * share
    }

    #[cfg(test)]
    fn base_delay(&self) -> Option<Dur> {
        self.base.min()
    }
}

impl CongestionControl for Ledbat {
    fn on_ack(&mut self, ack: &AckSample) {
        self.rtt = rtt_estimate(ack);
        self.min_rtt = ack.min_rtt;
        if let Some(d) = self.source.sample(ack) {
            self.base.update(d, ack.now);
            self.current.push(d);
        }
        if ack.in_recovery {
            return;
        }
        let Some(mut qd) = self.queuing_delay() else {
            return;
        };
        if self.p.clamp_to_rtt {
            if let Some(r) = ack.rtt {
                qd = qd.min(r);
            }
        }

        if self.p.periodic_slowdown {
            match self.phase {
                Phase::Steady => match self.next_slowdown {
                    None => {
                        // §4.4: the first slowdown two RTTs after the
                        // initial slow start (or the first steady ACK).
                        self.next_slowdown = Some(ack.now + self.rtt * 2);
                    }
                    Some(t) if ack.now >= t => {
                        self.ssthresh = bytes_of(self.cwnd, self.mss);
                        self.cwnd = self.cwnd.min(2.0 * self.seg());
                        self.slowdown_start = ack.now;
                        self.next_slowdown = None;
                        self.phase = Phase::Frozen {
                            until: ack.now + self.rtt * 2,
                        };
                        return;
                    }
                    Some(_) => {}
                },
                Phase::Frozen { until } => {
                    if ack.now < until {
                        return;
                    }
                    self.phase = Phase::SlowStart { initial: false };
                }
                Phase::SlowStart { .. } => {}
            }
        }

        if let Phase::SlowStart { initial } = self.phase {
            self.slow_start(ack, initial, qd);
            return;
        }

        let mut delta = if self.p.multiplicative_decrease {
            self.plusplus_delta(ack, qd)
        } else {
            self.linear_delta(ack, qd)
        };
        if delta > 0.0 && !ack.cwnd_limited && !self.p.flight_cap {
            delta = 0.0;
        }
        self.cwnd += delta;
        if self.p.flight_cap {
            let cap = ack.in_flight as f64 + (self.p.allowed_increase * self.mss) as f64;
            self.cwnd = self.cwnd.min(cap);
        }
        self.cwnd = self.cwnd.max(self.min_bytes());
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        if self.loss_guard.is_some_and(|t| loss.now < t) {
            return;
        }
        self.loss_guard = Some(loss.now + self.rtt);
        // RFC 6817 §2.4.2: cwnd = min(cwnd, max(cwnd/2, MIN_CWND·MSS)).
        self.cwnd = self
            .cwnd
            .min((self.cwnd * self.p.loss_factor).max(self.min_bytes()));
        self.ssthresh = bytes_of(self.cwnd, 1);
        match self.phase {
            Phase::SlowStart { initial } => self.leave_slow_start(loss.now, initial),
            Phase::Steady | Phase::Frozen { .. } => {}
        }
    }

    fn on_timeout(&mut self, _now: Time, in_flight: u64) {
        self.cwnd = self.seg();
        self.loss_guard = None;
        if self.p.variant == LedbatVariant::PlusPlus {
            self.ssthresh = half_flight(in_flight, self.mss);
            self.next_slowdown = None;
        }
        self.phase = if self.p.slow_start {
            Phase::SlowStart { initial: true }
        } else {
            Phase::Steady
        };
    }

    fn cwnd(&self) -> u64 {
        bytes_of(self.cwnd, 1)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn in_slow_start(&self) -> bool {
        matches!(self.phase, Phase::SlowStart { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const OFFSET: Dur = Dur::from_secs(3600);
    const BASE: Dur = Dur::from_millis(20);

    /// Feeds ACKs to a LEDBAT controller over a path with a fixed base
    /// one-way delay (plus a clock offset) and a chosen queuing delay.
    struct Feed {
        now: Time,
        delivered: u64,
    }

    impl Feed {
        fn new() -> Self {
            Feed {
                now: Time::ZERO + Dur::from_secs(1),
                delivered: 0,
            }
        }

        fn ack_at(&mut self, l: &mut Ledbat, dt: Dur, queue: Dur, bytes: u64) {
            self.now += dt;
            self.delivered += bytes;
            let flight = l.cwnd().max(bytes);
            l.on_ack(&AckSample {
                now: self.now,
                bytes_acked: bytes,
                in_flight: flight,
                rtt: Some(BASE * 2 + queue),
                srtt: BASE * 2 + queue,
                min_rtt: BASE * 2,
                owd: Some(OFFSET + BASE + queue),
                delivered: self.delivered,
                sent: self.delivered + flight,
                in_recovery: false,
                cwnd_limited: true,
            });
        }

        /// One window's worth of one-segment ACKs spread over one RTT.
        fn window(&mut self, l: &mut Ledbat, queue: Dur) {
            let n = l.cwnd().div_ceil(MSS).max(1);
            let rtt = BASE * 2 + queue;
            for _ in 0..n {
                self.ack_at(l, rtt / n, queue, MSS);
            }
        }
    }

    fn ledbat(v: LedbatVariant) -> Ledbat {
        Ledbat::new(&LedbatConfig::new(v), CcInit::new(MSS))
    }

    #[test]
    fn rfc_defaults() {
        let l = ledbat(LedbatVariant::Rfc6817);
        assert_eq!(l.cwnd(), 2 * MSS);
        assert!(!l.in_slow_start());
        let p = l.params();
        assert_eq!(p.target, Dur::from_millis(100));
        assert_eq!((p.base_history, p.current_filter, p.min_cwnd), (10, 4, 2));
        assert_eq!(ledbat(LedbatVariant::Utp).cwnd(), MSS);
        assert_eq!(
            ledbat(LedbatVariant::PlusPlus).params().target,
            Dur::from_millis(60)
        );
    }

    #[test]
    fn rises_below_target_and_falls_above() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        let mut f = Feed::new();
        // Empty queue: about GAIN = 1 segment per window of ACKs.
        for _ in 0..20 {
            f.window(&mut l, Dur::ZERO);
        }
        let w = l.cwnd();
        assert!((20 * MSS..=23 * MSS).contains(&w), "{w}");
        f.window(&mut l, Dur::ZERO);
        assert!(
            (l.cwnd() as i64 - w as i64 - MSS as i64).abs() < 100,
            "{}",
            l.cwnd()
        );
        // Half the target: half the growth.
        f.window(&mut l, Dur::from_millis(50)); // fills the 4-sample filter
        let w = l.cwnd();
        f.window(&mut l, Dur::from_millis(50));
        let d = l.cwnd() - w;
        assert!((450..550).contains(&d), "{d}");
        // Above target: the window shrinks, by 0.5 segment per window at 1.5·TARGET.
        let w = l.cwnd();
        for _ in 0..3 {
            f.window(&mut l, Dur::from_millis(150));
        }
        assert!(l.cwnd() < w);
        let w = l.cwnd();
        f.window(&mut l, Dur::from_millis(150));
        let d = w - l.cwnd();
        assert!((400..600).contains(&d), "{d}");
        // Far above target it still never goes below MIN_CWND.
        for _ in 0..200 {
            f.window(&mut l, Dur::from_millis(1000));
        }
        assert_eq!(l.cwnd(), 2 * MSS);
    }

    #[test]
    fn base_history_rolls_over_after_base_history_minutes() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        let mut f = Feed::new();
        f.now = Time::ZERO + Dur::from_secs(600); // minute 10, start of a bucket
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        assert_eq!(l.base_delay(), Some(OFFSET + BASE));
        // Every later minute only sees 30 ms of queuing.
        for minute in 1..=10 {
            f.ack_at(&mut l, Dur::from_secs(60), Dur::from_millis(30), MSS);
            if minute < 10 {
                assert_eq!(l.base_delay(), Some(OFFSET + BASE), "minute {minute}");
            } else {
                // Ten newer buckets: the minute-0 minimum has been forgotten.
                assert_eq!(l.base_delay(), Some(OFFSET + BASE + Dur::from_millis(30)));
            }
        }
        // Samples within one minute share a bucket.
        f.ack_at(&mut l, Dur::from_secs(1), Dur::from_millis(5), MSS);
        assert_eq!(l.base_delay(), Some(OFFSET + BASE + Dur::from_millis(5)));
        // µTP keeps 13 minutes.
        let mut u = ledbat(LedbatVariant::Utp);
        let mut f = Feed::new();
        f.ack_at(&mut u, Dur::ZERO, Dur::ZERO, MSS);
        for _ in 1..=12 {
            f.ack_at(&mut u, Dur::from_secs(60), Dur::from_millis(30), MSS);
        }
        assert_eq!(u.base_delay(), Some(OFFSET + BASE));
        f.ack_at(&mut u, Dur::from_secs(60), Dur::from_millis(30), MSS);
        assert_eq!(u.base_delay(), Some(OFFSET + BASE + Dur::from_millis(30)));
    }

    #[test]
    fn current_filter_is_the_minimum_of_the_last_samples() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        let mut f = Feed::new();
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        // One low sample among high ones dominates for CURRENT_FILTER samples.
        for i in 0..3 {
            f.ack_at(&mut l, Dur::from_millis(1), Dur::from_millis(80), MSS);
            assert_eq!(l.queuing_delay(), Some(Dur::ZERO), "sample {i}");
        }
        f.ack_at(&mut l, Dur::from_millis(1), Dur::from_millis(80), MSS);
        assert_eq!(l.queuing_delay(), Some(Dur::from_millis(80)));
        f.ack_at(&mut l, Dur::from_millis(1), Dur::from_millis(60), MSS);
        assert_eq!(l.queuing_delay(), Some(Dur::from_millis(60)));
        // A single spike does not register while smaller samples remain.
        f.ack_at(&mut l, Dur::from_millis(1), Dur::from_millis(900), MSS);
        assert_eq!(l.queuing_delay(), Some(Dur::from_millis(60)));
    }

    #[test]
    fn flightsize_cap_and_min_cwnd() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        l.cwnd = (20 * MSS) as f64;
        let mut f = Feed::new();
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        // Only 5 segments in flight: cwnd ≤ flightsize + ALLOWED_INCREASE·MSS.
        f.now += Dur::from_millis(1);
        l.on_ack(&AckSample {
            now: f.now,
            bytes_acked: MSS,
            in_flight: 5 * MSS,
            rtt: Some(BASE * 2),
            srtt: BASE * 2,
            min_rtt: BASE * 2,
            owd: Some(OFFSET + BASE),
            delivered: 2 * MSS,
            sent: 6 * MSS,
            in_recovery: false,
            cwnd_limited: false,
        });
        assert_eq!(l.cwnd(), 6 * MSS);
    }

    #[test]
    fn loss_halves_at_most_once_per_rtt_and_timeout_goes_to_one_segment() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        let mut f = Feed::new();
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS); // RTT 40 ms
        l.cwnd = (40 * MSS) as f64;
        let at = |ms: u64| LossEvent {
            now: f.now + Dur::from_millis(ms),
            in_flight: 40 * MSS,
        };
        l.on_loss(&at(0));
        assert_eq!(l.cwnd(), 20 * MSS);
        l.on_loss(&at(39));
        assert_eq!(l.cwnd(), 20 * MSS, "second loss within one RTT ignored");
        l.on_loss(&at(41));
        assert_eq!(l.cwnd(), 10 * MSS);
        l.cwnd = (3 * MSS) as f64;
        l.on_loss(&at(100));
        assert_eq!(l.cwnd(), 2 * MSS, "floored at MIN_CWND");
        l.on_timeout(f.now, 2 * MSS);
        assert_eq!(l.cwnd(), MSS);
        // The next ACK restores MIN_CWND.
        f.ack_at(&mut l, Dur::from_millis(200), Dur::ZERO, MSS);
        assert_eq!(l.cwnd(), 2 * MSS);
    }

    #[test]
    fn utp_gains_3000_bytes_per_rtt_after_slow_start() {
        let mut u = ledbat(LedbatVariant::Utp);
        assert!(u.in_slow_start());
        let mut f = Feed::new();
        // Slow start: the first ACK of a one-packet window earns the full
        // 3000 B linear gain (libtorrent takes the larger of the two), then
        // the window doubles per RTT while the queue is empty.
        f.window(&mut u, Dur::ZERO);
        assert_eq!(u.cwnd(), 4 * MSS);
        for _ in 0..3 {
            f.window(&mut u, Dur::ZERO);
        }
        assert_eq!(u.cwnd(), 32 * MSS);
        // Reaching the target ends slow start, with ssthresh = cwnd/2.
        f.window(&mut u, Dur::from_millis(100));
        assert!(!u.in_slow_start());
        assert_eq!(u.ssthresh(), u.cwnd() / 2);
        // In congestion avoidance at zero delay: ~3000 B per window.
        for _ in 0..3 {
            f.window(&mut u, Dur::ZERO);
        }
        let w = u.cwnd();
        f.window(&mut u, Dur::ZERO);
        let d = u.cwnd() - w;
        assert!((2900..=3100).contains(&d), "{d}");
        // The queuing delay is clamped to the ACK's RTT.
        assert_eq!(u.params().current_filter, 3);
    }

    #[test]
    fn utp_slow_start_exit_fraction_is_configurable() {
        let mut c = LedbatConfig::new(LedbatVariant::Utp);
        c.set("slow_start_exit", ParamValue::Num(0.5)).unwrap();
        let mut u = Ledbat::new(&c, CcInit::new(MSS));
        let mut f = Feed::new();
        f.window(&mut u, Dur::ZERO);
        f.window(&mut u, Dur::from_millis(40));
        assert!(u.in_slow_start());
        f.window(&mut u, Dur::from_millis(55));
        assert!(!u.in_slow_start());
    }

    #[test]
    fn plusplus_dynamic_gain() {
        let mut l = ledbat(LedbatVariant::PlusPlus);
        let mut f = Feed::new();
        // RTT base 40 ms, TARGET 60 ms: ⌈120/40⌉ = 3.
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        assert!((l.gain_segments() - 1.0 / 3.0).abs() < 1e-12);
        for (base_ms, want) in [(10u64, 12.0), (100, 2.0), (1, 16.0), (200, 1.0), (119, 2.0)] {
            let mut l = ledbat(LedbatVariant::PlusPlus);
            l.base.update(Dur::from_millis(base_ms), Time::ZERO);
            assert!(
                (l.gain_segments() - 1.0 / want).abs() < 1e-12,
                "base {base_ms} ms: {}",
                l.gain_segments()
            );
        }
    }

    #[test]
    fn plusplus_multiplicative_decrease() {
        let mut l = ledbat(LedbatVariant::PlusPlus);
        l.phase = Phase::Steady;
        l.next_slowdown = Some(Time::MAX);
        l.cwnd = (40 * MSS) as f64;
        let mut f = Feed::new();
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        let g = l.gain_segments();
        // Below target: W += GAIN per window, independent of the delay.
        for _ in 0..4 {
            f.window(&mut l, Dur::from_millis(30));
        }
        let w = l.cwnd() as f64 / MSS as f64;
        f.window(&mut l, Dur::from_millis(50));
        let d = l.cwnd() as f64 / MSS as f64 - w;
        assert!((d - g).abs() < 0.05, "{d} vs {g}");
        // 10 % above target: W += GAIN − W·0.1 per window.
        for _ in 0..4 {
            f.window(&mut l, Dur::from_millis(66));
        }
        let w = l.cwnd() as f64 / MSS as f64;
        f.window(&mut l, Dur::from_millis(66));
        let got = l.cwnd() as f64 / MSS as f64;
        let want = w + g - 0.1 * w;
        assert!((got - want).abs() / want < 0.02, "{got} vs {want}");
        // Far above: at most half the window per RTT, floored at 2 segments.
        let w = l.cwnd() as f64 / MSS as f64;
        f.window(&mut l, Dur::from_millis(600));
        let got = l.cwnd() as f64 / MSS as f64;
        assert!(got >= w / 2.0 * 0.9 && got < w * 0.75, "{w} -> {got}");
        for _ in 0..30 {
            f.window(&mut l, Dur::from_millis(600));
        }
        assert_eq!(l.cwnd(), 2 * MSS);
    }

    #[test]
    fn plusplus_slow_start_exits_at_three_quarters_of_target_then_slows_down() {
        let mut l = ledbat(LedbatVariant::PlusPlus);
        let mut f = Feed::new();
        assert!(l.in_slow_start());
        f.window(&mut l, Dur::ZERO);
        f.window(&mut l, Dur::from_millis(40));
        assert!(l.in_slow_start(), "40 ms < 45 ms");
        // Gain-scaled slow start: growth by GAIN (1/3 at 40 ms base) per acked byte.
        let w = l.cwnd();
        f.window(&mut l, Dur::from_millis(40));
        let n = w.div_ceil(MSS);
        assert!(((l.cwnd() - w) as f64 / (n * MSS) as f64 - 1.0 / 3.0).abs() < 0.01);
        f.window(&mut l, Dur::from_millis(46));
        assert!(!l.in_slow_start(), "46 ms > ¾·60 ms");
        let w_ss = l.cwnd();
        // Two RTTs later the window drops to 2 segments and stays for 2 RTTs.
        let rtt = BASE * 2;
        let mut t_slow = None;
        for _ in 0..400 {
            f.ack_at(&mut l, rtt / 10, Dur::ZERO, MSS);
            if l.cwnd() == 2 * MSS {
                t_slow = Some(f.now);
                break;
            }
        }
        let t_slow = t_slow.expect("slowdown");
        assert!(l.ssthresh() >= w_ss);
        let held_until = t_slow + rtt * 2;
        while f.now + rtt / 10 < held_until {
            f.ack_at(&mut l, rtt / 10, Dur::ZERO, MSS);
            assert_eq!(l.cwnd(), 2 * MSS, "held during the slowdown");
        }
        // Then slow start back up to ssthresh, and the next slowdown is
        // scheduled 9 × the slowdown's duration later.
        let ss = l.ssthresh();
        let mut t_back = None;
        for _ in 0..10_000 {
            f.ack_at(&mut l, rtt / 10, Dur::ZERO, MSS);
            if l.cwnd() >= ss {
                t_back = Some(f.now);
                break;
            }
        }
        let t_back = t_back.expect("ramp back to ssthresh");
        assert!(!l.in_slow_start());
        let duration = t_back.since(t_slow);
        assert_eq!(l.next_slowdown, Some(t_back + duration * 9));
    }

    #[test]
    fn no_growth_in_recovery_and_overrides_survive_variant_change() {
        let mut l = ledbat(LedbatVariant::Rfc6817);
        let mut f = Feed::new();
        f.ack_at(&mut l, Dur::ZERO, Dur::ZERO, MSS);
        let w = l.cwnd();
        f.now += Dur::from_millis(1);
        l.on_ack(&AckSample {
            now: f.now,
            bytes_acked: MSS,
            in_flight: 10 * MSS,
            rtt: Some(BASE * 2),
            srtt: BASE * 2,
            min_rtt: BASE * 2,
            owd: Some(OFFSET + BASE),
            delivered: 2 * MSS,
            sent: 10 * MSS,
            in_recovery: true,
            cwnd_limited: true,
        });
        assert_eq!(l.cwnd(), w);

        let mut c = LedbatConfig::default();
        c.set("target", ParamValue::Str("25ms")).unwrap();
        c.set("variant", ParamValue::Str("utp")).unwrap();
        let p = c.params();
        assert_eq!(p.target, Dur::from_millis(25));
        assert_eq!(p.current_filter, 3);
        c.set("gain", ParamValue::Str("dynamic")).unwrap();
        assert_eq!(c.params().gain, Gain::Dynamic);
        c.set("gain", ParamValue::Str("1500B")).unwrap();
        assert_eq!(c.params().gain, Gain::Bytes(1500.0));
        c.set("gain", ParamValue::Num(0.5)).unwrap();
        assert_eq!(c.params().gain, Gain::Mss(0.5));
        assert!(c.set("base_history", ParamValue::Num(0.0)).is_err());
        assert!(c.set("current_filter", ParamValue::Num(2.5)).is_err());
        assert!(c.set("variant", ParamValue::Str("bbr")).is_err());
        c.set("delay", ParamValue::Str("rtt")).unwrap();
        assert_eq!(c.params().delay, DelaySignal::Rtt);
    }
}
