//! BBR v1: a model-based controller that paces at its estimate of the
//! bottleneck bandwidth and caps the data in flight at a multiple of the
//! estimated bandwidth-delay product.
//!
//! Sources (read, not copied): Linux `net/ipv4/tcp_bbr.c` (the v1 code as
//! of Linux 4.9–5.x) and draft-cardwell-iccrg-bbr-congestion-control-00
//! (§4 of the draft describes the same state machine). This is BBR **v1**;
//! BBRv3 (draft-ietf-ccwg-bbr) is not implemented.
//!
//! * Model (draft §4.1; `bbr_update_bw`, `bbr_update_min_rtt`): `BtlBw` is
//!   the maximum delivery rate ([`RateSample`]) over the last 10 round
//!   trips, kept by a windowed max filter (Kathleen Nichols' three-sample
//!   algorithm, Linux `lib/win_minmax.c`); samples taken while
//!   application-limited only count if they raise the estimate. `RTprop` is
//!   the minimum RTT over 10 s.
//! * Rounds (draft §4.1.1.3): a round ends when a segment sent after the
//!   previous round ended is delivered (`prior_delivered` ≥ the delivered
//!   count at the round's start).
//! * Startup (§4.3.2): pacing and window gain 2/ln 2 ≈ 2.885; the pipe is
//!   "full" once three rounds in a row raised `BtlBw` by less than 25 %
//!   (`bbr_check_full_bw_reached`).
//! * Drain (§4.3.3): pacing gain ln 2/2 until the data in flight is at most
//!   one BDP.
//! * ProbeBW (§4.3.4): the eight-phase gain cycle 5/4, 3/4, 1 × 6, each
//!   phase lasting about one `RTprop`; the 5/4 phase also runs until the
//!   flight reaches 5/4 BDP (or a loss), the 3/4 phase ends early once the
//!   flight is down to one BDP (`bbr_is_next_cycle_phase`). Linux starts at
//!   a random phase other than 3/4; we derive that phase from the time and
//!   the bytes delivered on entry instead (deterministic, and different for
//!   different flows) since a controller is given no random numbers.
//! * ProbeRTT (§4.3.5): when `RTprop` is 10 s old the window drops to four
//!   segments for at least 200 ms and one round trip, then the old window
//!   comes back.
//! * Window (`bbr_set_cwnd`): target = gain × BDP + 3 segments (Linux's
//!   quantisation budget for TSO and delayed ACKs, plus 2 in the 5/4 phase);
//!   before the pipe is full the window grows by the bytes acknowledged,
//!   afterwards it grows towards the target and never above it; never below
//!   four segments. Before any RTT sample the BDP is the initial window.
//! * Loss (`bbr_set_cwnd_to_recover_or_restore`): on entering recovery the
//!   window is cut to the data in flight and follows packet conservation
//!   for one round (window ≥ in flight + acknowledged); on leaving recovery
//!   the window before the loss is restored. A timeout leaves one segment
//!   and the window regrows from there by the bytes acknowledged. Linux
//!   restores the saved window when it leaves its loss state; here nothing
//!   restores it after a timeout (the transport tells no controller when a
//!   timeout's recovery ends), so BBR takes a few rounds longer to regain
//!   its window after one.
//! * Pacing (`bbr_set_pacing_rate`): pacing gain × `BtlBw`, less a 1 %
//!   margin; before the first bandwidth sample, high gain × initial window /
//!   SRTT. In startup the rate only rises.
//!
//! * ECN: ignored, as by Linux's BBR v1.
//!
//! Not modelled: the long-term ("policer") bandwidth estimate (`lt_bw`),
//! the restart from idle (`idle_restart`), the ACK-aggregation extra window
//! of later kernels, TSO autosizing (the budget uses one segment per TSO
//! burst).
//!
//! Differs from `tcp_bbr.c` (known, not yet changed): Linux also takes each
//! ACK's newly lost packets off the window (`cwnd -= rs->losses`), where
//! here only the entry into recovery cuts it, so under repeated losses this
//! BBR backs off less; the 5/4 phase here ends on any loss since the phase
//! began, in Linux on a loss reported by the current ACK; the in-flight
//! targets that end drain and the 5/4 phase leave out the quantisation
//! budget Linux's `bbr_inflight` adds (3 segments, 2 more in the 5/4
//! phase); and ProbeRTT's low-rate samples are not marked
//! application-limited as Linux marks them.

use super::{AckSample, CcInit, CongestionControl, LossEvent, ParamValue, RateSample};
use crate::time::{Dur, Time};

/// Startup's gain, 2/ln 2 (draft §4.3.2.1: the smallest that doubles the
/// rate each round).
pub const HIGH_GAIN: f64 = 2.885;
/// ProbeBW's pacing gains, one per phase of about one `RTprop`.
pub const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// The minimum window, in segments (`bbr_cwnd_min_target`).
const MIN_SEGMENTS: u64 = 4;
/// Full-pipe detection: rounds without 25 % growth (`bbr_full_bw_cnt`).
const FULL_BW_ROUNDS: u32 = 3;
const FULL_BW_THRESH: f64 = 1.25;
/// Pacing-rate margin below the estimate, per cent (`bbr_pacing_margin_percent`).
const PACING_MARGIN: f64 = 0.01;

/// BBR's constants.
#[derive(Clone, Debug, PartialEq)]
pub struct BbrConfig {
    /// Window gain in ProbeBW (draft §4.3.4: 2).
    pub cwnd_gain: f64,
    /// Length of the bandwidth filter in round trips (draft: 10).
    pub bw_window: u64,
    /// Length of the min-RTT filter (draft: 10 s).
    pub min_rtt_window: Dur,
    /// Time held in ProbeRTT (draft: 200 ms).
    pub probe_rtt_time: Dur,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            cwnd_gain: 2.0,
            bw_window: 10,
            min_rtt_window: Dur::from_secs(10),
            probe_rtt_time: Dur::from_millis(200),
        }
    }
}

impl BbrConfig {
    pub const PARAMS: &'static [&'static str] =
        &["cwnd_gain", "bw_window", "min_rtt_window", "probe_rtt_time"];

    /// `Ok(false)` if `key` is not a BBR parameter.
    pub(crate) fn set(&mut self, key: &str, v: ParamValue<'_>) -> Result<bool, String> {
        match key {
            "cwnd_gain" => self.cwnd_gain = v.in_range(1.0, 16.0)?,
            "bw_window" => self.bw_window = v.in_range(1.0, 1000.0)?.round() as u64,
            "min_rtt_window" => {
                let d = v.duration()?;
                if d.is_zero() {
                    return Err("must be positive".into());
                }
                self.min_rtt_window = d;
            }
            "probe_rtt_time" => self.probe_rtt_time = v.duration()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// BBR's state machine (draft §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// A windowed running maximum over a count (here: round trips), keeping the
/// best, second-best and third-best samples of sub-windows (Nichols'
/// algorithm, as Linux `lib/win_minmax.c`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct MaxFilter {
    s: [(u64, f64); 3],
}

impl MaxFilter {
    fn get(&self) -> f64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: f64) {
        self.s = [(t, v); 3];
    }

    fn update(&mut self, win: u64, t: u64, v: f64) {
        if v >= self.s[0].1 || t.saturating_sub(self.s[2].0) > win {
            self.reset(t, v);
            return;
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // Age the sub-window samples so the maximum expires after `win`.
        let dt = t.saturating_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t.saturating_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
    }
}

#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: BbrConfig,
    mss: u64,
    init_cwnd: u64,
    cwnd: u64,
    mode: BbrMode,
    /// `BtlBw`, bytes per second, over rounds.
    bw: MaxFilter,
    /// `RTprop` and when it was last lowered or refreshed.
    min_rtt: Option<Dur>,
    min_rtt_stamp: Time,
    /// Round counting (draft §4.1.1.3).
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    /// Full-pipe detection.
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    cycle_idx: usize,
    cycle_stamp: Time,
    /// A loss since the current ProbeBW phase began.
    loss_in_phase: bool,
    /// ProbeRTT: when it may end (once the flight is down), and whether a
    /// round has passed since.
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    /// Window saved on loss and ProbeRTT, restored afterwards.
    prior_cwnd: u64,
    packet_conservation: bool,
    in_recovery: bool,
    /// Bytes per second; zero before it is first set.
    pacing_rate: f64,
    /// The rate sample handed over for the coming `on_ack`.
    rs: Option<RateSample>,
    /// The transport's delivered count (`C.delivered`) at the latest ACK.
    delivered: u64,
}

impl Bbr {
    pub fn new(cfg: BbrConfig, init: CcInit) -> Self {
        let mss = init.mss.max(1);
        let init_cwnd = init.initial_window.max(1) * mss;
        Bbr {
            cfg,
            mss,
            init_cwnd,
            cwnd: init_cwnd,
            mode: BbrMode::Startup,
            bw: MaxFilter::default(),
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            loss_in_phase: false,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            packet_conservation: false,
            in_recovery: false,
            pacing_rate: 0.0,
            rs: None,
            delivered: 0,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    /// The bottleneck-bandwidth estimate in bytes per second.
    pub fn btl_bw(&self) -> f64 {
        self.bw.get()
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    fn min_cwnd(&self) -> u64 {
        MIN_SEGMENTS * self.mss
    }

    /// `gain` × BDP in bytes (`bbr_bdp`); the initial window before an RTT
    /// sample.
    fn bdp(&self, gain: f64) -> u64 {
        match self.min_rtt {
            Some(r) if self.bw.get() > 0.0 => {
                let b = self.bw.get() * r.as_secs_f64() * gain;
                if b >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    b as u64
                }
            }
            _ => (self.init_cwnd as f64 * gain) as u64,
        }
    }

    /// The flight a phase with `gain` aims at (`bbr_inflight`).
    fn inflight_target(&self, gain: f64) -> u64 {
        self.bdp(gain)
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.in_recovery || self.mode == BbrMode::ProbeRtt {
            self.prior_cwnd.max(self.cwnd)
        } else {
            self.cwnd
        };
    }

    fn enter_probe_bw(&mut self, now: Time, delivered: u64) {
        self.mode = BbrMode::ProbeBw;
        self.cwnd_gain = self.cfg.cwnd_gain;
        // Linux: CYCLE_LEN − 1 − random(0..7), i.e. any phase but 3/4.
        let h = (now.as_nanos() ^ delivered.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let r = ((h >> 32) % 7) as usize;
        self.cycle_idx = CYCLE.len() - 1 - r;
        self.advance_cycle(now);
    }

    fn advance_cycle(&mut self, now: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE.len();
        self.cycle_stamp = now;
        self.loss_in_phase = false;
        self.pacing_gain = CYCLE[self.cycle_idx];
    }

    /// `bbr_is_next_cycle_phase`.
    fn phase_done(&self, now: Time, prior_in_flight: u64) -> bool {
        let full_length = self.min_rtt.is_none_or(|r| now.since(self.cycle_stamp) > r);
        if self.pacing_gain > 1.0 {
            full_length
                && (self.loss_in_phase || prior_in_flight >= self.inflight_target(self.pacing_gain))
        } else if self.pacing_gain < 1.0 {
            full_length || prior_in_flight <= self.inflight_target(1.0)
        } else {
            full_length
        }
    }

    fn update_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        if rs.interval.is_zero() {
            return;
        }
        if rs.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = rs.delivered_total;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        if let Some(bw) = rs.rate() {
            if !rs.is_app_limited || bw >= self.bw.get() {
                self.bw.update(self.cfg.bw_window, self.round_count, bw);
            }
        }
    }

    fn check_full_bw(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw = self.bw.get();
        if bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_ROUNDS;
    }

    fn check_drain(&mut self, now: Time, in_flight: u64, delivered: u64) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            self.pacing_gain = 1.0 / HIGH_GAIN;
            self.cwnd_gain = HIGH_GAIN;
        }
        if self.mode == BbrMode::Drain && in_flight <= self.inflight_target(1.0) {
            self.enter_probe_bw(now, delivered);
        }
    }

    fn update_min_rtt(&mut self, ack: &AckSample, in_flight: u64) {
        let expired = self
            .min_rtt
            .is_some_and(|_| ack.now.since(self.min_rtt_stamp) > self.cfg.min_rtt_window);
        if let Some(r) = ack.rtt {
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = ack.now;
            }
        }
        if expired && self.mode != BbrMode::ProbeRtt && !self.cfg.probe_rtt_time.is_zero() {
            self.mode = BbrMode::ProbeRtt;
            self.pacing_gain = 1.0;
            self.cwnd_gain = 1.0;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        if self.mode == BbrMode::ProbeRtt {
            match self.probe_rtt_done {
                None if in_flight <= self.min_cwnd() => {
                    self.probe_rtt_done = Some(ack.now + self.cfg.probe_rtt_time);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = self.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && ack.now >= done {
                        self.min_rtt_stamp = ack.now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        if self.full_bw_reached {
                            self.enter_probe_bw(ack.now, self.delivered);
                        } else {
                            self.mode = BbrMode::Startup;
                            self.pacing_gain = HIGH_GAIN;
                            self.cwnd_gain = HIGH_GAIN;
                        }
                    }
                }
                None => {}
            }
        }
    }

    fn set_pacing_rate(&mut self, srtt: Dur) {
        let bw = self.bw.get();
        let rate = if bw > 0.0 {
            bw * self.pacing_gain * (1.0 - PACING_MARGIN)
        } else {
            // `bbr_init_pacing_rate_from_rtt`: 1 ms when there is no RTT yet.
            let rtt = if srtt.is_zero() {
                Dur::MILLISECOND
            } else {
                srtt
            };
            HIGH_GAIN * self.init_cwnd as f64 / rtt.as_secs_f64()
        };
        if self.full_bw_reached || rate > self.pacing_rate || bw <= 0.0 {
            self.pacing_rate = rate;
        }
    }

    fn set_cwnd(&mut self, ack: &AckSample, in_flight: u64) {
        let acked = ack.bytes_acked;
        let floor = self.min_cwnd();
        if !(self.in_recovery && self.packet_conservation) {
            let mut target = self.bdp(self.cwnd_gain).saturating_add(3 * self.mss);
            if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
                target = target.saturating_add(2 * self.mss);
            }
            if self.full_bw_reached {
                self.cwnd = self.cwnd.saturating_add(acked).min(target);
            } else if self.cwnd < target || ack.delivered < self.init_cwnd {
                self.cwnd = self.cwnd.saturating_add(acked);
            }
        } else {
            self.cwnd = self.cwnd.max(in_flight.saturating_add(acked));
        }
        self.cwnd = self.cwnd.max(floor);
        if self.mode == BbrMode::ProbeRtt {
            self.cwnd = self.cwnd.min(floor);
        }
    }
}

impl CongestionControl for Bbr {
    fn wants_rate_samples(&self) -> bool {
        true
    }

    fn on_rate_sample(&mut self, rs: &RateSample) {
        self.rs = Some(*rs);
    }

    fn on_ack(&mut self, ack: &AckSample) {
        // Without a sample from the transport, an invalid one: the window
        // and gains still follow the ACK, the model does not move.
        let rs = self.rs.take().unwrap_or(RateSample {
            delivered: 0,
            interval: Dur::ZERO,
            prior_delivered: 0,
            delivered_total: ack.delivered,
            is_app_limited: true,
        });
        self.delivered = rs.delivered_total;
        let prior_in_flight = ack.in_flight;
        let in_flight = ack.in_flight.saturating_sub(ack.bytes_acked);
        self.update_bw(&rs);
        if self.mode == BbrMode::ProbeBw && self.phase_done(ack.now, prior_in_flight) {
            self.advance_cycle(ack.now);
        }
        self.check_full_bw(&rs);
        self.check_drain(ack.now, in_flight, self.delivered);
        self.update_min_rtt(ack, in_flight);
        self.set_pacing_rate(ack.srtt);
        self.set_cwnd(ack, in_flight);
    }

    fn on_loss(&mut self, loss: &LossEvent) {
        self.loss_in_phase = true;
        self.save_cwnd();
        self.in_recovery = true;
        self.packet_conservation = true;
        // Start a round now: conservation lasts until data sent from here is delivered.
        self.next_round_delivered = self.delivered;
        self.cwnd = self.cwnd.min(loss.in_flight.max(self.min_cwnd()));
    }

    /// BBR v1 does not answer ECN (Linux's `tcp_bbr.c` leaves the CWR
    /// state's reduction out, as its `cong_control` replaces it).
    fn on_ecn_echo(&mut self, _ev: &LossEvent) {}

    fn on_recovery_exit(&mut self, _now: Time) {
        self.in_recovery = false;
        self.packet_conservation = false;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    fn on_timeout(&mut self, _now: Time, _in_flight: u64) {
        self.save_cwnd();
        self.in_recovery = false;
        self.packet_conservation = false;
        self.loss_in_phase = true;
        // Linux resets full-pipe growth tracking and treats the RTO as the
        // end of a round.
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.round_start = true;
        self.cwnd = self.mss;
    }

    fn pacing_rate(&self) -> Option<u64> {
        (self.pacing_rate > 0.0).then(|| {
            if self.pacing_rate >= u64::MAX as f64 {
                u64::MAX
            } else {
                (self.pacing_rate as u64).max(1)
            }
        })
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        // BBR keeps no slow-start threshold; Linux reports the BDP once the
        // pipe is full (set on entering Drain).
        if self.full_bw_reached {
            self.bdp(1.0).max(self.min_cwnd())
        } else {
            u64::MAX
        }
    }

    fn in_slow_start(&self) -> bool {
        self.mode == BbrMode::Startup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_filter_expires_old_maxima() {
        let mut f = MaxFilter::default();
        f.update(10, 1, 100.0);
        f.update(10, 2, 50.0);
        assert_eq!(f.get(), 100.0);
        for t in 3..=11 {
            f.update(10, t, 50.0);
        }
        assert_eq!(f.get(), 100.0, "still inside the window");
        f.update(10, 13, 40.0);
        assert!(
            f.get() < 100.0,
            "the maximum of round 1 expired: {}",
            f.get()
        );
        f.update(10, 14, 200.0);
        assert_eq!(f.get(), 200.0);
    }

    /// Feeds a steady path: `rate` bytes/s, `rtt`, one ACK per segment.
    fn drive(b: &mut Bbr, rate: f64, rtt: Dur, secs: f64) -> Time {
        let start = Time::ZERO + Dur::from_millis(1);
        feed(b, rate, rtt, start, 0, Time::from_secs_f64(secs), 0)
    }

    /// [`drive`] over `[from, to)` seconds of a path running since 0, with
    /// each sample's `prior_delivered` one segment further back.
    fn drive_from(b: &mut Bbr, rate: f64, rtt: Dur, from: f64, to: f64) {
        let (start, end) = (Time::from_secs_f64(from), Time::from_secs_f64(to));
        feed(b, rate, rtt, start, (from * rate) as u64, end, 1448);
    }

    /// One ACK of a 1448 B segment every 1448 / `rate` s from `now` to
    /// `end`, with its delivery-rate sample; returns the time after the last.
    fn feed(
        b: &mut Bbr,
        rate: f64,
        rtt: Dur,
        mut now: Time,
        mut delivered: u64,
        end: Time,
        lag: u64,
    ) -> Time {
        let mss = 1448u64;
        let per_ack = Dur::from_secs_f64(mss as f64 / rate);
        while now < end {
            delivered += mss;
            let in_flight = b.cwnd().min((rate * rtt.as_secs_f64()) as u64);
            b.on_rate_sample(&RateSample {
                delivered: (rate * rtt.as_secs_f64()) as u64,
                interval: rtt,
                prior_delivered: delivered.saturating_sub(in_flight + lag),
                delivered_total: delivered,
                is_app_limited: false,
            });
            b.on_ack(&AckSample {
                now,
                bytes_acked: mss,
                in_flight,
                rtt: Some(rtt),
                srtt: rtt,
                min_rtt: rtt,
                owd: None,
                delivered,
                sent: delivered + in_flight,
                in_recovery: false,
                cwnd_limited: true,
            });
            now += per_ack;
        }
        now
    }

    #[test]
    fn leaves_startup_and_settles_near_the_bdp() {
        let mut b = Bbr::new(BbrConfig::default(), CcInit::new(1448));
        assert_eq!(b.mode(), BbrMode::Startup);
        let rate = 1.25e6; // 10 Mbit/s
        let rtt = Dur::from_millis(40);
        drive(&mut b, rate, rtt, 3.0);
        assert!(b.full_bw_reached());
        assert_eq!(b.mode(), BbrMode::ProbeBw);
        let bdp = rate * 0.04;
        let w = b.cwnd() as f64;
        assert!(
            w >= 1.9 * bdp && w <= 2.0 * bdp + 5.0 * 1448.0,
            "cwnd {w} vs BDP {bdp}"
        );
        let p = b.pacing_rate().unwrap() as f64;
        assert!(p >= 0.74 * rate * 0.99 && p <= 1.25 * rate, "pacing {p}");
    }

    #[test]
    fn probes_rtt_after_ten_seconds() {
        let mut b = Bbr::new(BbrConfig::default(), CcInit::new(1448));
        let rate = 1.25e6;
        let rtt = Dur::from_millis(40);
        let mut saw_probe_rtt = false;
        let mut now_s = 0.5;
        while now_s < 12.0 {
            drive_from(&mut b, rate, rtt, now_s, now_s + 0.05);
            saw_probe_rtt |= b.mode() == BbrMode::ProbeRtt;
            if b.mode() == BbrMode::ProbeRtt {
                assert_eq!(b.cwnd(), 4 * 1448);
            }
            now_s += 0.05;
        }
        assert!(saw_probe_rtt);
        assert_ne!(b.mode(), BbrMode::ProbeRtt, "ProbeRTT ends");
    }

    #[test]
    fn loss_conserves_and_exit_restores() {
        let mut b = Bbr::new(BbrConfig::default(), CcInit::new(1448));
        drive(&mut b, 1.25e6, Dur::from_millis(40), 2.0);
        let before = b.cwnd();
        b.on_loss(&LossEvent {
            now: Time::from_secs_f64(2.0),
            in_flight: before / 2,
        });
        assert_eq!(b.cwnd(), before / 2);
        b.on_recovery_exit(Time::from_secs_f64(2.1));
        assert_eq!(b.cwnd(), before);
        b.on_timeout(Time::from_secs_f64(3.0), before);
        assert_eq!(b.cwnd(), 1448);
    }
}
