//! Round-trip time estimation and the retransmission timeout, RFC 6298.

use crate::time::Dur;

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
        }
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
    pub fn rttvar(&self) -> Dur {
        self.rttvar
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
    fn backoff_is_capped() {
        let mut e = RttEstimator::new(Dur::from_millis(200), Dur::from_secs(60));
        for _ in 0..100 {
            e.back_off();
        }
        assert_eq!(e.rto(), Dur::from_secs(60));
    }
}
