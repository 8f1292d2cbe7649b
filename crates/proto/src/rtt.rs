//! Round-trip time estimation and the retransmission timeout: RFC 6298, and
//! Linux's variant of it ([`RttEstimatorKind::Linux`]).

use crate::time::Dur;

/// How the deviation term of the RTO is estimated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttEstimatorKind {
    /// RFC 6298 §2: RTTVAR ← ¾ RTTVAR + ¼ |SRTT − R| on every sample.
    #[default]
    Rfc6298,
    /// Linux's estimator (`tcp_rtt_estimator` in net/ipv4/tcp_input.c,
    /// described by Sarolahti and Kuznetsov, "Congestion Control in Linux
    /// TCP", USENIX 2002, §3): the mean deviation moves with gain ¼, but a
    /// sample *below* SRTT can raise it with gain 1/32 only; the RTO's deviation term
    /// is the largest deviation seen during the last window of data, and it
    /// decays towards that by ¼ only once per window (not per ACK), never
    /// below the minimum RTO. With a sample per ACK (timestamps) RFC 6298's
    /// RTTVAR forgets a delay swing within a few ACKs; Linux's keeps it for
    /// several round trips.
    Linux,
}

/// Linux's deviation state, in nanoseconds. `mdev`, `mdev_max` and `rttvar`
/// hold four times the mean deviation, as the kernel's `mdev_us` does, so
/// that RTO = SRTT + `rttvar`.
#[derive(Clone, Debug, Default)]
struct LinuxVar {
    mdev: i128,
    mdev_max: i128,
    rttvar: i128,
    /// Sequence number that ends the current window (`rtt_seq`).
    mark: u64,
}

/// RFC 6298 §2 state: SRTT, RTTVAR and RTO, plus the minimum RTT seen.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    min_rtt: Dur,
    latest: Dur,
    min_rto: Dur,
    max_rto: Dur,
    granularity: Dur,
    /// Apply `min_rto` to the deviation term (Linux) instead of the whole RTO (RFC 6298).
    floor_on_variance: bool,
    /// Exponential backoff exponent (RFC 6298 §5.5), reset by a new sample.
    backoff: u32,
    /// `Some` with [`RttEstimatorKind::Linux`].
    linux: Option<LinuxVar>,
}

impl RttEstimator {
    /// RFC 6298 §2.1: before any sample RTO = 1 s. `min_rto` is the lower bound
    /// of §2.4 (the RFC says 1 s; Linux uses 200 ms); `max_rto` the upper bound
    /// (§2.5 allows any value of at least 60 s).
    pub fn new(min_rto: Dur, max_rto: Dur) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            min_rtt: Dur::MAX,
            latest: Dur::ZERO,
            min_rto,
            max_rto,
            granularity: Dur::MILLISECOND,
            floor_on_variance: false,
            backoff: 0,
            linux: None,
        }
    }

    /// Chooses the estimator. [`RttEstimatorKind::Linux`] bounds the
    /// deviation term by `min_rto` by construction; it needs
    /// [`update_in_window`](Self::update_in_window) to see the sequence space.
    pub fn with_kind(mut self, kind: RttEstimatorKind) -> Self {
        self.linux = (kind == RttEstimatorKind::Linux).then(LinuxVar::default);
        self
    }

    /// Feeds a sample taken from an ACK that moved `snd_una`, with the
    /// sender's `snd_nxt`: the Linux estimator ends a window when `snd_una`
    /// passes the `snd_nxt` of the window's start. The RFC 6298 estimator
    /// ignores both.
    pub fn update_in_window(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        let Some(mut v) = self.linux.take() else {
            return self.update(r);
        };
        self.latest = r;
        self.min_rtt = self.min_rtt.min(r);
        let floor = self.min_rto.as_nanos() as i128;
        let m = r.as_nanos() as i128;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                // RTO = 3·R until more samples arrive.
                v.mdev = 2 * m;
                v.rttvar = v.mdev.max(floor);
                v.mdev_max = v.rttvar;
                v.mark = snd_nxt;
            }
            Some(srtt) => {
                let s = srtt.as_nanos() as i128;
                let err = m - s;
                self.srtt = Some(Dur::from_nanos((s + err / 8).max(1) as u64));
                let step = if err < 0 {
                    // A sample below SRTT: gain 1/32 when it would raise mdev.
                    let e = -err - v.mdev / 4;
                    if e > 0 {
                        e / 8
                    } else {
                        e
                    }
                } else {
                    err - v.mdev / 4
                };
                v.mdev += step;
                if v.mdev > v.mdev_max {
                    v.mdev_max = v.mdev;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                if snd_una > v.mark {
                    // One window ended: decay towards its largest deviation.
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) / 4;
                    }
                    v.mark = snd_nxt;
                    v.mdev_max = floor;
                }
            }
        }
        self.linux = Some(v);
        self.backoff = 0;
    }

    /// Linux's RTO: `min_rto` bounds the deviation term, so RTO ≥ SRTT +
    /// `min_rto` (Linux keeps `mdev_max ≥ tcp_rto_min`). RFC 6298 §2.4 bounds
    /// the whole RTO instead, which on a long, stable queue lets the RTO
    /// shrink to SRTT + a few ms, so that any delay spike fires it spuriously.
    pub fn with_floor_on_variance(mut self, on: bool) -> Self {
        self.floor_on_variance = on;
        self
    }

    /// Feeds one RTT measurement (RFC 6298 §2.2 and §2.3, K = 4,
    /// alpha = 1/8, beta = 1/4). A new sample also clears the backoff (§5.7
    /// lets the RTO be recomputed once a new sample arrives).
    pub fn update(&mut self, r: Dur) {
        if self.linux.is_some() {
            // No sequence space here: the window never ends (use
            // `update_in_window` for Linux's per-window decay).
            return self.update_in_window(r, 0, 0);
        }
        self.latest = r;
        self.min_rtt = self.min_rtt.min(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let diff = if srtt > r { srtt - r } else { r - srtt };
                // RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|
                self.rttvar = Dur::from_nanos((3 * self.rttvar.as_nanos() + diff.as_nanos()) / 4);
                // SRTT <- 7/8 SRTT + 1/8 R'
                self.srtt = Some(Dur::from_nanos((7 * srtt.as_nanos() + r.as_nanos()) / 8));
            }
        }
        self.backoff = 0;
    }

    /// The base RTO before backoff: SRTT + max(G, K*RTTVAR), clamped.
    fn base_rto(&self) -> Dur {
        let rto = match self.srtt {
            None => Dur::SECOND,
            Some(srtt) if self.linux.is_some() => {
                let v = self.linux.as_ref().map_or(0, |v| v.rttvar.max(0) as u64);
                srtt + Dur::from_nanos(v).max(self.granularity)
            }
            Some(srtt) if self.floor_on_variance => {
                srtt + (self.rttvar * 4).max(self.granularity).max(self.min_rto)
            }
            Some(srtt) => srtt + (self.rttvar * 4).max(self.granularity),
        };
        rto.max(self.min_rto).min(self.max_rto)
    }

    /// The current RTO including exponential backoff.
    pub fn rto(&self) -> Dur {
        let b = self.base_rto();
        let factor = 1u64 << self.backoff.min(20);
        (b * factor).min(self.max_rto)
    }

    /// Doubles the RTO after a timeout (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(20);
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }
    /// Smoothed RTT, or zero before the first sample.
    pub fn srtt(&self) -> Dur {
        self.srtt.unwrap_or(Dur::ZERO)
    }
    pub fn has_sample(&self) -> bool {
        self.srtt.is_some()
    }
    /// RTTVAR (RFC 6298), or the Linux estimator's deviation term ÷ 4.
    pub fn rttvar(&self) -> Dur {
        match &self.linux {
            Some(v) => Dur::from_nanos((v.rttvar / 4).max(0) as u64),
            None => self.rttvar,
        }
    }
    /// Smallest sample so far, or zero before the first sample.
    pub fn min_rtt(&self) -> Dur {
        if self.min_rtt == Dur::MAX {
            Dur::ZERO
        } else {
            self.min_rtt
        }
    }
    pub fn latest(&self) -> Dur {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut e = RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60));
        assert_eq!(e.rto(), Dur::SECOND);
        e.update(Dur::from_millis(100));
        // SRTT = 100, RTTVAR = 50, RTO = 100 + 200 = 300 ms.
        assert_eq!(e.srtt(), Dur::from_millis(100));
        assert_eq!(e.rto(), Dur::from_millis(300));
        e.update(Dur::from_millis(100));
        // RTTVAR = 3/4*50 = 37.5, RTO = 100 + 150 = 250 ms.
        assert_eq!(e.rto(), Dur::from_millis(250));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_millis(500));
        e.update(Dur::from_millis(10));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() >= Dur::from_millis(200), "min RTO applies");
        assert_eq!(e.min_rtt(), Dur::from_millis(10));
    }

    #[test]
    fn linux_floor_keeps_rto_above_srtt() {
        let mut rfc = RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60));
        let mut linux = RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60))
            .with_floor_on_variance(true);
        // A long, perfectly stable 1.26 s RTT: RTTVAR decays towards zero.
        for _ in 0..200 {
            rfc.update(Dur::from_millis(1260));
            linux.update(Dur::from_millis(1260));
        }
        assert!(
            rfc.rto() < Dur::from_millis(1262),
            "RFC 6298: {:?}",
            rfc.rto()
        );
        assert_eq!(linux.rto(), Dur::from_millis(1460), "SRTT + 200 ms");
    }

    #[test]
    fn linux_estimator_keeps_a_delay_swing_for_the_window_and_then_decays_to_the_floor() {
        let ms = Dur::from_millis;
        let mut lx =
            RttEstimator::new(ms(200), Dur::from_secs(60)).with_kind(RttEstimatorKind::Linux);
        let mut rfc = RttEstimator::new(ms(200), Dur::from_secs(60)).with_floor_on_variance(true);
        // First sample: RTO = R + max(2R, min_rto) = 100 + 200 ms.
        lx.update_in_window(ms(100), 0, 10);
        rfc.update(ms(100));
        assert_eq!(lx.rto(), ms(300));
        // A spike within the window: SRTT 225 ms, 4·mdev = 200 + (1000 − 50) = 1150 ms.
        lx.update_in_window(ms(1100), 5, 10);
        rfc.update(ms(1100));
        assert_eq!(lx.srtt(), ms(225));
        assert_eq!(lx.rto(), ms(225 + 1150));
        // Twenty short samples in the same window: Linux keeps the window's
        // largest deviation, RFC 6298 forgets it within a few samples.
        for _ in 0..20 {
            lx.update_in_window(ms(100), 5, 10);
            rfc.update(ms(100));
        }
        assert!(lx.rto() >= lx.srtt() + ms(1150), "{:?}", lx.rto());
        assert!(rfc.rto() < rfc.srtt() + ms(300), "{:?}", rfc.rto());
        // Windows end (snd_una passes the mark): the term decays by ¼ per
        // window towards the floor, and never below it.
        let mut una = 10;
        let mut last = lx.rto() - lx.srtt();
        for _ in 0..40 {
            una += 10;
            lx.update_in_window(ms(100), una, una + 5);
            let term = lx.rto() - lx.srtt();
            assert!(term <= last && term >= ms(200), "{term:?} after {last:?}");
            last = term;
        }
        assert!(last < ms(201), "decays to the floor: {last:?}");
        // A sample far below SRTT moves the deviation with gain 1/32 only.
        let before = lx.rttvar();
        lx.update_in_window(ms(1), una, una + 10);
        assert!(
            lx.rttvar() <= before + ms(4),
            "{:?} -> {:?}",
            before,
            lx.rttvar()
        );
    }

    #[test]
    fn backoff_is_capped() {
        let mut e = RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60));
        for _ in 0..100 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_secs(60));
    }
}
