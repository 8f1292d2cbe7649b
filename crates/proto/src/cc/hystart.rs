//! HyStart++ (RFC 9406): leaving slow start on a rise of the per-round
//! minimum RTT rather than on the first loss, through a cautious phase
//! ("Conservative Slow Start", CSS) that can return to slow start if the
//! rise was spurious. An option of NewReno and CUBIC
//! ([`CcInit::hystart`](super::CcInit)).
//!
//! * Rounds (§4.2): a round ends when data sent after its start is
//!   acknowledged (our `RoundTracker`, on the delivered/sent counters, in
//!   place of the RFC's `windowEnd` sequence number). At each round's start
//!   `lastRoundMinRTT ← currentRoundMinRTT` and the minimum restarts.
//! * Slow start: after at least `N_RTT_SAMPLE` = 8 RTT samples in a round,
//!   if `currentRoundMinRTT ≥ lastRoundMinRTT + RttThresh`, with
//!   `RttThresh = clamp(lastRoundMinRTT / 8, 4 ms, 16 ms)`, enter CSS with
//!   `cssBaselineMinRtt = currentRoundMinRTT`.
//! * CSS: the window grows by a quarter of slow start's increase
//!   (`CSS_GROWTH_DIVISOR` = 4); if a round's minimum falls below the
//!   baseline, back to slow start (checked when the round ends and with
//!   any number of samples; RFC 9406 §4.2 checks on every ACK once
//!   `N_RTT_SAMPLE` samples are in, so it returns up to a round sooner and
//!   is not triggered by one or two low samples); after `CSS_ROUNDS` = 5 rounds, slow start
//!   ends (ssthresh ← cwnd, the controller's congestion avoidance takes over).
//! * A loss or timeout ends slow start as it would without HyStart++ (the
//!   controller sets ssthresh), and HyStart++ is used for the initial slow
//!   start only (§4.3): later slow starts (after a timeout) are standard.
//!
//! The per-ACK increase inside slow start stays the controller's (RFC 3465
//! with L = 2); RFC 9406 §4.2's larger L for unpaced senders is not used,
//! so the option changes only where slow start ends.

use super::{AckSample, RoundTracker};
use crate::time::Dur;

const MIN_RTT_THRESH: Dur = Dur::from_millis(4);
const MAX_RTT_THRESH: Dur = Dur::from_millis(16);
const MIN_RTT_DIVISOR: u64 = 8;
const N_RTT_SAMPLE: u32 = 8;
pub(crate) const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

/// What the controller should do with this ACK's slow-start increase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Ordinary slow start.
    SlowStart,
    /// Conservative slow start: a quarter of the increase.
    Css,
    /// Slow start is over: set ssthresh to the current window.
    Exit,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HyStart {
    round: RoundTracker,
    last_round_min: Option<Dur>,
    current_round_min: Option<Dur>,
    samples: u32,
    /// `cssBaselineMinRtt` while in CSS.
    css_baseline: Option<Dur>,
    css_rounds: u32,
}

impl HyStart {
    pub fn new() -> Self {
        HyStart {
            round: RoundTracker::new(),
            last_round_min: None,
            current_round_min: None,
            samples: 0,
            css_baseline: None,
            css_rounds: 0,
        }
    }

    /// Whether the sender is in conservative slow start.
    pub fn in_css(&self) -> bool {
        self.css_baseline.is_some()
    }

    /// Feeds an ACK received in slow start; returns the phase it falls in.
    pub fn on_ack(&mut self, ack: &AckSample) -> Phase {
        if self.round.on_ack(ack.delivered, ack.sent) {
            if let Some(base) = self.css_baseline {
                self.css_rounds += 1;
                if self.current_round_min.is_some_and(|m| m < base) {
                    // §4.2: the RTT rise was spurious; back to slow start.
                    self.css_baseline = None;
                    self.css_rounds = 0;
                } else if self.css_rounds >= CSS_ROUNDS {
                    return Phase::Exit;
                }
            }
            self.last_round_min = self.current_round_min;
            self.current_round_min = None;
            self.samples = 0;
        }
        if let Some(r) = ack.rtt {
            self.current_round_min = Some(self.current_round_min.map_or(r, |m| m.min(r)));
            self.samples += 1;
        }
        if self.css_baseline.is_none() && self.samples >= N_RTT_SAMPLE {
            if let (Some(cur), Some(last)) = (self.current_round_min, self.last_round_min) {
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if cur >= last + thresh {
                    self.css_baseline = Some(cur);
                    self.css_rounds = 0;
                }
            }
        }
        if self.in_css() {
            Phase::Css
        } else {
            Phase::SlowStart
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Time;

    fn ack(delivered: u64, sent: u64, rtt_ms: u64) -> AckSample {
        AckSample {
            now: Time::ZERO,
            bytes_acked: 1000,
            in_flight: 10_000,
            rtt: Some(Dur::from_millis(rtt_ms)),
            srtt: Dur::from_millis(rtt_ms),
            min_rtt: Dur::from_millis(20),
            owd: None,
            delivered,
            sent,
            in_recovery: false,
            cwnd_limited: true,
        }
    }

    /// Rounds of `n` ACKs each with the given RTTs; returns the phases.
    fn rounds(h: &mut HyStart, rtts: &[u64], n: u64) -> Vec<Phase> {
        let mut delivered = 0;
        let mut out = vec![];
        for (k, &r) in rtts.iter().enumerate() {
            let end = (k as u64 + 1) * n * 1000;
            for _ in 0..n {
                delivered += 1000;
                out.push(h.on_ack(&ack(delivered, end + n * 1000, r)));
            }
        }
        out
    }

    #[test]
    fn a_lasting_rtt_rise_ends_slow_start_after_css() {
        let mut h = HyStart::new();
        let p = rounds(&mut h, &[20, 20, 30, 30, 30, 30, 30, 30, 30], 10);
        assert!(p.contains(&Phase::Css));
        assert!(p.contains(&Phase::Exit), "{p:?}");
    }

    #[test]
    fn a_spurious_rise_returns_to_slow_start() {
        let mut h = HyStart::new();
        let p = rounds(&mut h, &[20, 20, 30, 30, 20, 20], 10);
        assert!(p.contains(&Phase::Css));
        assert!(!p.contains(&Phase::Exit));
        assert_eq!(*p.last().unwrap(), Phase::SlowStart);
    }

    #[test]
    fn small_rises_stay_in_slow_start() {
        let mut h = HyStart::new();
        // +3 ms is below the 4 ms floor of RttThresh.
        let p = rounds(&mut h, &[20, 23, 23, 23], 10);
        assert!(p.iter().all(|&x| x == Phase::SlowStart));
    }
}
