//! Tor's end-to-end congestion control: TOR_VEGAS of Tor proposal 324
//! ("RTT-based Congestion Control for Tor", §2 RTT measurement, §3.3
//! TOR_VEGAS), as Tor ≥ 0.4.7 implements it in `congestion_control_vegas.c`
//! and `congestion_control_common.c`. Written from the proposal and that
//! code's documented behaviour; the constants are [`TorVegasConfig`]'s.
//!
//! The packaging edge of a circuit keeps a congestion window `cwnd` and the
//! cells `inflight` (DATA cells sent and not yet acknowledged by a SENDME).
//! It may package while `inflight < cwnd`. The delivering edge sends a
//! circuit SENDME after every `sendme_inc` DATA cells. The packaging edge
//! notes the time it sends each cell that will trigger a SENDME (the cell
//! that makes `inflight` a multiple of `sendme_inc`); the SENDME's arrival
//! gives an RTT sample. Per SENDME:
//!
//! * RTT: an N-EWMA of the samples (N = 2 in slow start, else half the
//!   SENDMEs per update, at most 10); `min_rtt` is the lowest EWMA seen
//!   (reset towards the EWMA while `cwnd` sits at `cwnd_min`);
//! * BDP = `cwnd · min_rtt / ewma_rtt`, `queue_use = cwnd − BDP`;
//! * "cwnd full" when `inflight + gap · sendme_inc ≥ cwnd`, not full again
//!   below `minpct` % of `cwnd`, and reset once per cwnd worth of SENDMEs;
//! * slow start: while `queue_use < γ`, grow (only when full) by
//!   `sendme_inc · pct_ss/100` per SENDME up to `ss_cwnd_cap`, then by RFC
//!   3742's limited slow start; on `queue_use ≥ γ` set `cwnd = BDP + γ` and
//!   leave; leave at `ss_cwnd_max` at the latest;
//! * steady state, once per `round(cwnd / (inc_rate · sendme_inc))` SENDMEs:
//!   `queue_use > δ` → `cwnd = BDP + δ − inc`; `> β` → `cwnd −= inc`;
//!   `< α` and full → `cwnd += inc`; then `cwnd ≥ cwnd_min`.
//!
//! Not modelled: Tor's "blocked channel" congestion signal (the exit's OR
//! connection to the middle never blocks here: its 4 MiB send buffer
//! absorbs what the window allows), the clock-stall heuristics (the
//! simulation clock never stalls), and the SENDME-rate BDP estimators that
//! TOR_VEGAS does not use.

use crate::config::TorVegasConfig;
use hopwise_proto::time::Time;
use std::collections::VecDeque;

/// Counters of one controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TorVegasStats {
    pub sendmes: u64,
    /// Window updates outside slow start that grew, shrank (β) or cut (δ) it.
    pub increments: u64,
    pub decrements: u64,
    pub delta_cuts: u64,
    /// When slow start ended (`None`: still in it).
    pub ss_exit: Option<Time>,
    /// The window when slow start ended.
    pub ss_exit_cwnd: u64,
    /// RTT samples (SENDMEs that timed a cell), and the sums over them of
    /// `queue_use` (cells) and of `ewma_rtt − min_rtt` (ns), for the means
    /// the controller acted on.
    pub rtt_samples: u64,
    pub queue_use_sum: u64,
    pub rtt_excess_sum_ns: u64,
}

impl TorVegasStats {
    /// Mean `queue_use` over the RTT samples (cells); NaN without one.
    pub fn mean_queue_use(&self) -> f64 {
        self.queue_use_sum as f64 / self.rtt_samples as f64
    }
    /// Mean `ewma_rtt − min_rtt` over the RTT samples; NaN without one.
    pub fn mean_rtt_excess_s(&self) -> f64 {
        self.rtt_excess_sum_ns as f64 / 1e9 / self.rtt_samples as f64
    }
}

/// One packaging edge's TOR_VEGAS state.
#[derive(Clone, Debug)]
pub struct TorVegas {
    cfg: TorVegasConfig,
    cwnd: u64,
    inflight: u64,
    in_slow_start: bool,
    cwnd_full: bool,
    /// SENDMEs until the next steady-state update / until a cwnd's worth.
    next_cc_event: u64,
    next_cwnd_event: u64,
    /// RTTs in nanoseconds (0: no sample yet).
    ewma_rtt: u64,
    min_rtt: u64,
    max_rtt: u64,
    last_rtt: u64,
    bdp: u64,
    /// Send times of the cells that will trigger SENDMEs, oldest first.
    pending: VecDeque<Time>,
    stats: TorVegasStats,
}

/// `(2·curr + (n − 1)·prev) / (n + 1)`; the first sample is taken as is.
fn n_ewma(curr: u64, prev: u64, n: u64) -> u64 {
    if prev == 0 {
        curr
    } else {
        (2 * curr + (n - 1) * prev) / (n + 1)
    }
}

impl TorVegas {
    pub fn new(cfg: TorVegasConfig) -> TorVegas {
        let inc = cfg.sendme_inc.max(1) as u64;
        let mut v = TorVegas {
            cfg,
            cwnd: cfg.cwnd_init as u64,
            inflight: 0,
            in_slow_start: true,
            cwnd_full: false,
            next_cc_event: 0,
            next_cwnd_event: 0,
            ewma_rtt: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_rtt: 0,
            bdp: 0,
            pending: VecDeque::new(),
            stats: TorVegasStats::default(),
        };
        v.cfg.sendme_inc = inc as u32;
        v.next_cc_event = v.update_rate();
        v.next_cwnd_event = v.sendmes_per_cwnd();
        v
    }

    fn inc(&self) -> u64 {
        self.cfg.sendme_inc as u64
    }

    /// SENDMEs between steady-state updates (1 in slow start; 0 means every
    /// SENDME as well).
    fn update_rate(&self) -> u64 {
        if self.in_slow_start {
            return 1;
        }
        let per = self.cfg.cwnd_inc_rate.max(1) as u64 * self.inc();
        (self.cwnd + per / 2) / per
    }

    /// SENDMEs in one congestion window, rounded.
    fn sendmes_per_cwnd(&self) -> u64 {
        (self.cwnd + self.inc() / 2) / self.inc()
    }

    fn ewma_count(&self) -> u64 {
        let n = if self.in_slow_start {
            self.cfg.n_ewma_ss as u64
        } else {
            (self.update_rate() * self.cfg.n_ewma_cwnd_pct as u64 / 100)
                .min(self.cfg.n_ewma_max as u64)
        };
        n.max(2)
    }

    /// The slow-start increment per SENDME: `pct_ss` % of a SENDME's worth
    /// up to the cap, then RFC 3742 (`sendme_inc · cap / (2·cwnd)`, ≥ 1).
    fn ss_inc(&self) -> u64 {
        if self.cwnd <= self.cfg.ss_cwnd_cap as u64 {
            (self.cfg.cwnd_inc_pct_ss as u64 * self.inc() + 50) / 100
        } else {
            ((self.inc() * self.cfg.ss_cwnd_cap as u64 + self.cwnd) / (2 * self.cwnd)).max(1)
        }
    }

    fn leave_slow_start(&mut self, now: Time) {
        self.in_slow_start = false;
        self.stats.ss_exit = Some(now);
        self.stats.ss_exit_cwnd = self.cwnd;
    }

    /// Whether the edge may package another DATA cell.
    pub fn may_send(&self) -> bool {
        self.inflight < self.cwnd
    }

    /// A DATA cell was packaged at `now`.
    pub fn on_sent(&mut self, now: Time) {
        // The cell that brings `inflight` to a multiple of `sendme_inc`
        // makes the other end send a SENDME (Tor skips the very first cell).
        if self.inflight > 0 && (self.inflight + 1).is_multiple_of(self.inc()) {
            self.pending.push_back(now);
        }
        self.inflight += 1;
    }

    /// A circuit-level SENDME arrived at `now`.
    pub fn on_sendme(&mut self, now: Time) {
        self.stats.sendmes += 1;
        self.next_cc_event = self.next_cc_event.saturating_sub(1);
        self.next_cwnd_event = self.next_cwnd_event.saturating_sub(1);
        let Some(sent) = self.pending.pop_front() else {
            // A SENDME we did not expect (nothing timed): only the ack.
            self.inflight = self.inflight.saturating_sub(self.inc());
            return;
        };
        let rtt = now.since(sent).as_nanos().max(1);
        self.last_rtt = rtt;
        self.ewma_rtt = n_ewma(rtt, self.ewma_rtt, self.ewma_count());
        self.max_rtt = self.max_rtt.max(rtt);
        if self.min_rtt == 0 {
            self.min_rtt = self.ewma_rtt;
        } else if self.cwnd == self.cfg.cwnd_min as u64 && !self.in_slow_start {
            // Out of a wedge at cwnd_min: move min towards the EWMA.
            let (hi, lo) = (
                self.ewma_rtt.max(self.min_rtt),
                self.ewma_rtt.min(self.min_rtt),
            );
            let p = self.cfg.rtt_reset_pct.min(100) as u64;
            self.min_rtt = p * hi / 100 + (100 - p) * lo / 100;
        } else if self.ewma_rtt < self.min_rtt {
            self.min_rtt = self.ewma_rtt;
        }
        self.bdp = (self.cwnd as u128 * self.min_rtt as u128 / self.ewma_rtt.max(1) as u128) as u64;
        let queue_use = self.cwnd.saturating_sub(self.bdp);
        self.stats.rtt_samples += 1;
        self.stats.queue_use_sum += queue_use;
        self.stats.rtt_excess_sum_ns += self.ewma_rtt.saturating_sub(self.min_rtt);

        if self.inflight + self.cfg.cwnd_full_gap as u64 * self.inc() >= self.cwnd {
            self.cwnd_full = true;
        } else if 100 * self.inflight < self.cfg.cwnd_full_minpct as u64 * self.cwnd {
            self.cwnd_full = false;
        }

        let (alpha, beta, gamma, delta) = (
            self.cfg.alpha as u64,
            self.cfg.beta as u64,
            self.cfg.gamma as u64,
            self.cfg.delta as u64,
        );
        let step = self.cfg.cwnd_inc as u64;
        if self.in_slow_start {
            if queue_use < gamma {
                if self.cwnd_full {
                    let inc = self.ss_inc();
                    self.cwnd += inc;
                    // Leave once the slow-start step is no larger than
                    // what steady state would add per cwnd.
                    if inc * self.sendmes_per_cwnd() <= step * self.cfg.cwnd_inc_rate as u64 {
                        self.leave_slow_start(now);
                    }
                }
            } else {
                self.cwnd = self.bdp + gamma;
                self.leave_slow_start(now);
            }
            if self.cwnd >= self.cfg.ss_cwnd_max as u64 {
                self.cwnd = self.cfg.ss_cwnd_max as u64;
                if self.in_slow_start {
                    self.leave_slow_start(now);
                }
            }
        } else if self.next_cc_event == 0 {
            if queue_use > delta {
                self.cwnd = (self.bdp + delta).saturating_sub(step);
                self.stats.delta_cuts += 1;
            } else if queue_use > beta {
                self.cwnd = self.cwnd.saturating_sub(step);
                self.stats.decrements += 1;
            } else if self.cwnd_full && queue_use < alpha {
                self.cwnd += step;
                self.stats.increments += 1;
            }
            self.cwnd = self.cwnd.max(self.cfg.cwnd_min as u64);
        }

        if self.next_cwnd_event == 0 {
            self.next_cwnd_event = self.sendmes_per_cwnd();
        }
        if self.next_cc_event == 0 {
            self.next_cc_event = self.update_rate();
        }
        let reset = if self.cfg.cwnd_full_per_cwnd {
            self.next_cwnd_event == self.sendmes_per_cwnd()
        } else {
            self.next_cc_event == self.update_rate()
        };
        if reset {
            self.cwnd_full = false;
        }
        self.inflight = self.inflight.saturating_sub(self.inc());
    }

    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn inflight(&self) -> u64 {
        self.inflight
    }
    pub fn in_slow_start(&self) -> bool {
        self.in_slow_start
    }
    /// Smoothed, minimum and latest RTT (0 before the first SENDME).
    pub fn ewma_rtt(&self) -> hopwise_proto::time::Dur {
        hopwise_proto::time::Dur::from_nanos(self.ewma_rtt)
    }
    pub fn min_rtt(&self) -> hopwise_proto::time::Dur {
        hopwise_proto::time::Dur::from_nanos(self.min_rtt)
    }
    pub fn last_rtt(&self) -> hopwise_proto::time::Dur {
        hopwise_proto::time::Dur::from_nanos(self.last_rtt)
    }
    /// The Vegas BDP estimate `cwnd · min_rtt / ewma_rtt` of the last SENDME.
    pub fn bdp(&self) -> u64 {
        self.bdp
    }
    /// `cwnd − BDP`: the cells the controller believes are queued.
    pub fn queue_use(&self) -> u64 {
        self.cwnd.saturating_sub(self.bdp)
    }
    pub fn stats(&self) -> TorVegasStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopwise_proto::time::Dur;

    fn at(ms: u64) -> Time {
        Time::ZERO + Dur::from_millis(ms)
    }

    /// A fluid path: `rate` cells per second, base RTT `base_ms`; the queue
    /// is what is in flight beyond the BDP. Sends whenever allowed, one
    /// SENDME per 31 cells after the queue and propagation delay.
    fn drive(v: &mut TorVegas, rate: f64, base_ms: f64, secs: f64) -> Vec<(f64, u64)> {
        let dt = 1.0 / rate; // one cell per service time
        let mut t = 0.0;
        let mut sent = 0u64;
        // Delivery times of cells in flight (FIFO bottleneck).
        let mut last_depart: f64 = 0.0;
        let mut sendmes: VecDeque<f64> = VecDeque::new();
        let mut trace = Vec::new();
        while t < secs {
            while sendmes.front().is_some_and(|&x| x <= t) {
                sendmes.pop_front();
                v.on_sendme(Time::ZERO + Dur::from_secs_f64(t));
            }
            while v.may_send() {
                sent += 1;
                v.on_sent(Time::ZERO + Dur::from_secs_f64(t));
                let arrive = t + base_ms / 2e3;
                let depart = arrive.max(last_depart) + dt;
                last_depart = depart;
                if sent.is_multiple_of(31) {
                    sendmes.push_back(depart + base_ms / 2e3);
                }
            }
            trace.push((t, v.cwnd()));
            t += dt;
        }
        trace
    }

    #[test]
    fn slow_start_then_holds_a_queue_between_alpha_and_delta() {
        // 2000 cells/s (1 MB/s), 200 ms: BDP = 400 cells.
        let mut v = TorVegas::new(TorVegasConfig::default());
        assert_eq!(v.cwnd(), 124);
        let tr = drive(&mut v, 2000.0, 200.0, 60.0);
        assert!(!v.in_slow_start());
        let end = v.cwnd();
        let bdp = 400.0;
        let q = end as f64 - bdp;
        assert!(
            (150.0..=320.0).contains(&q),
            "cwnd {end}: queue {q:.0} cells not near α–β"
        );
        // It holds: over the last 20 s the window moves by a few cells only.
        let late: Vec<u64> = tr.iter().filter(|p| p.0 > 40.0).map(|p| p.1).collect();
        let (lo, hi) = (late.iter().min().unwrap(), late.iter().max().unwrap());
        assert!(hi - lo <= 40, "cwnd wanders {lo}..{hi}");
        let s = v.stats();
        assert!(s.ss_exit.is_some() && s.sendmes > 100, "{s:?}");
        // Every SENDME here timed a cell; on a smooth FIFO bottleneck the mean
        // queue estimate is the mean extra delay at the bottleneck's rate.
        assert_eq!(s.rtt_samples, s.sendmes);
        let (qu, excess) = (s.mean_queue_use(), s.mean_rtt_excess_s() * 2000.0);
        assert!(
            qu > 100.0 && (qu / excess - 1.0).abs() < 0.15,
            "mean queue_use {qu:.1} cells against {excess:.1} cells of extra delay"
        );
        assert!(
            v.min_rtt() >= Dur::from_millis(199) && v.min_rtt() <= Dur::from_millis(220),
            "min {:?} ewma {:?} cwnd {} stats {:?}",
            v.min_rtt(),
            v.ewma_rtt(),
            v.cwnd(),
            v.stats()
        );
    }

    #[test]
    fn limited_slow_start_above_the_cap() {
        let v = TorVegas {
            cwnd: 1200,
            ..TorVegas::new(TorVegasConfig::default())
        };
        // 31 · 600 / (2 · 1200) rounded: 7 cells per SENDME.
        assert_eq!(v.ss_inc(), (31 * 600 + 1200) / 2400);
        let v = TorVegas::new(TorVegasConfig::default());
        assert_eq!(v.ss_inc(), 31);
        assert_eq!(n_ewma(10, 0, 2), 10);
        assert_eq!(n_ewma(10, 40, 2), (20 + 40) / 3);
    }

    #[test]
    fn sendme_timestamps_pair_with_every_31st_cell() {
        let mut v = TorVegas::new(TorVegasConfig::default());
        for i in 0..62 {
            v.on_sent(at(i));
        }
        // Cells 31 and 62 (inflight 30 → 31 and 61 → 62) were timed.
        assert_eq!(v.pending, [at(30), at(61)]);
        v.on_sendme(at(130));
        assert_eq!(v.last_rtt(), Dur::from_millis(100));
        assert_eq!(v.inflight(), 31);
    }
}
