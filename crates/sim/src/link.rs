//! Realistic links: a direction's departures and arrivals beyond a fixed
//! rate, a fixed delay and independent loss. A delivery trace in Mahimahi's
//! format replaces the rate; Gilbert-Elliott loss adds bursty losses; delay
//! jitter adds a random delay per packet, keeping the packets' order or not.
//! All are off by default, and a direction without any pays one branch per
//! packet.

use hopwise_proto::rng::Rng;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use std::sync::Arc;

/// Bytes one delivery opportunity of a Mahimahi trace carries (Mahimahi's
/// `PACKET_SIZE`, a full Ethernet-sized IP packet).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A packet-delivery trace in Mahimahi's format (`mm-link`): one line per
/// delivery opportunity, the millisecond at which up to
/// [`OPPORTUNITY_BYTES`] may leave; several lines may name the same
/// millisecond. The trace repeats with a period of its last timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// Where it was read from (for messages).
    pub name: String,
    /// Opportunity times in ms, non-decreasing, the last one positive.
    pub ops_ms: Vec<u64>,
}

/// The largest delivery time a trace may have, in ms: with it, times in ns
/// stay far from `u64`'s limit for any simulated duration up to centuries.
const MAX_TRACE_MS: u64 = 1_000_000_000;

impl DeliveryTrace {
    /// Reads the text of a trace: one whole number of milliseconds per line
    /// (blank lines are skipped). The error names the line.
    pub fn parse(name: &str, text: &str) -> Result<DeliveryTrace, String> {
        let mut ops = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() {
                continue;
            }
            let t: u64 = l.parse().map_err(|_| {
                format!(
                    "line {}: `{l}` is not a whole number of milliseconds (a Mahimahi trace has \
                     one delivery time per line)",
                    i + 1
                )
            })?;
            if t > MAX_TRACE_MS {
                return Err(format!(
                    "line {}: {t} ms is more than {MAX_TRACE_MS} ms (about 11.6 days), the \
                     longest trace period accepted",
                    i + 1
                ));
            }
            if ops.last().is_some_and(|&p| t < p) {
                return Err(format!(
                    "line {}: {t} ms is before the previous line's {} ms; the times must not \
                     decrease",
                    i + 1,
                    ops.last().unwrap()
                ));
            }
            ops.push(t);
        }
        match ops.last() {
            None => Err("no delivery opportunities: the trace is empty".into()),
            Some(0) => Err(
                "the last time is 0 ms: the trace repeats with a period of its last \
                            time, which must be positive"
                    .into(),
            ),
            Some(_) => Ok(DeliveryTrace {
                name: name.to_string(),
                ops_ms: ops,
            }),
        }
    }

    /// The period after which the trace repeats.
    pub fn period(&self) -> Dur {
        Dur::from_millis(*self.ops_ms.last().expect("not empty"))
    }

    /// The mean rate the trace offers.
    pub fn mean_rate(&self) -> Rate {
        let bytes = self.ops_ms.len() as u64 * OPPORTUNITY_BYTES as u64;
        Rate::from_bps((bytes * 8 * 1000 / self.ops_ms.last().expect("not empty")).max(1))
    }
}

/// The Gilbert-Elliott channel: a Markov chain of a good and a bad state,
/// stepped once per packet, each state losing packets with its own
/// probability (E. N. Gilbert, "Capacity of a burst-noise channel", 1960;
/// E. O. Elliott, "Estimates of error rates for codes on burst-noise
/// channels", 1963).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad, per packet.
    pub p: f64,
    /// Probability of moving from bad to good, per packet.
    pub r: f64,
    /// Loss probability in the good state (Gilbert's model: 0).
    pub loss_good: f64,
    /// Loss probability in the bad state (Gilbert's model: 1).
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The long-run loss rate: the bad state's share `p / (p + r)` weighs
    /// the two loss probabilities.
    pub fn mean_loss(&self) -> f64 {
        let bad = if self.p + self.r > 0.0 {
            self.p / (self.p + self.r)
        } else {
            0.0
        };
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

/// A random extra delay per packet, uniform in `[0, max)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jitter {
    pub max: Dur,
    /// Whether a packet may overtake an earlier one. Without reordering a
    /// packet never arrives before the one sent ahead of it (it waits for
    /// it, as on a link whose delay varies but which stays FIFO).
    pub reorder: bool,
}

/// A direction's realistic-link options (all off by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkModel {
    pub trace: Option<Arc<DeliveryTrace>>,
    pub gilbert_elliott: Option<GilbertElliott>,
    pub jitter: Option<Jitter>,
}

impl LinkModel {
    pub fn is_plain(&self) -> bool {
        self.trace.is_none() && self.gilbert_elliott.is_none() && self.jitter.is_none()
    }
}

/// The running state of a direction's [`LinkModel`].
#[derive(Debug)]
pub(crate) struct LinkState {
    trace: Option<TraceCursor>,
    ge: Option<(GilbertElliott, bool)>,
    jitter: Option<Jitter>,
    /// The latest arrival time scheduled (for jitter without reordering).
    last_arrival: Time,
}

/// Where a packet departing now may use the trace: opportunity `next`
/// (counted from the start, over repetitions), with `left` of its bytes
/// when a packet used part of it (0: untouched).
#[derive(Debug)]
struct TraceCursor {
    trace: Arc<DeliveryTrace>,
    period_ns: u64,
    next: u64,
    left: u32,
}

impl TraceCursor {
    fn time_ns(&self, idx: u64) -> u64 {
        let n = self.trace.ops_ms.len() as u64;
        (idx / n)
            .saturating_mul(self.period_ns)
            .saturating_add(self.trace.ops_ms[(idx % n) as usize] * 1_000_000)
    }

    /// When a packet of `size` bytes that may start at `now` has been
    /// delivered: the opportunity that carries its last byte. Opportunities
    /// that passed while the link had nothing to send are lost, as in
    /// Mahimahi; what a packet leaves of one serves the next packets at the
    /// same instant.
    fn depart(&mut self, now: u64, size: u32) -> u64 {
        if self.time_ns(self.next) < now {
            // Skip whole periods, then the opportunities of this one.
            let n = self.trace.ops_ms.len() as u64;
            let cycle = now / self.period_ns;
            let in_cycle = now - cycle * self.period_ns;
            let k = self
                .trace
                .ops_ms
                .partition_point(|&t| t * 1_000_000 < in_cycle) as u64;
            self.next = cycle * n + k;
            self.left = 0;
        }
        let mut need = size.max(1);
        loop {
            let avail = if self.left > 0 {
                self.left
            } else {
                OPPORTUNITY_BYTES
            };
            let at = self.time_ns(self.next);
            if need <= avail {
                self.left = avail - need;
                if self.left == 0 {
                    self.next += 1;
                }
                return at;
            }
            need -= avail;
            self.next += 1;
            self.left = 0;
        }
    }
}

impl LinkState {
    /// The state of `m`, or `None` for a plain direction.
    pub(crate) fn of(m: &LinkModel) -> Option<Box<LinkState>> {
        if m.is_plain() {
            return None;
        }
        Some(Box::new(LinkState {
            trace: m.trace.as_ref().map(|t| TraceCursor {
                period_ns: t.period().as_nanos(),
                trace: Arc::clone(t),
                next: 0,
                left: 0,
            }),
            ge: m.gilbert_elliott.map(|g| (g, false)),
            jitter: m.jitter,
            last_arrival: Time::ZERO,
        }))
    }

    /// Whether packets may overtake each other.
    pub(crate) fn reorders(&self) -> bool {
        self.jitter.is_some_and(|j| j.reorder)
    }

    /// A packet of `size` bytes starts transmission at `now` on a direction
    /// of `rate`, `delay` and independent `loss`: when the transmitter is
    /// free again, whether the packet is lost, and when it arrives.
    pub(crate) fn depart(
        &mut self,
        now: Time,
        size: u32,
        (rate, delay, loss): (Rate, Dur, f64),
        rng: &mut Rng,
    ) -> (Time, bool, Time) {
        let done = match &mut self.trace {
            Some(c) => Time::from_nanos(c.depart(now.as_nanos(), size)),
            None => now + rate.tx_time(size as u64),
        };
        let mut lost = rng.chance(loss);
        if let Some((g, bad)) = &mut self.ge {
            *bad = if *bad {
                !rng.chance(g.r)
            } else {
                rng.chance(g.p)
            };
            let p = if *bad { g.loss_bad } else { g.loss_good };
            lost |= rng.chance(p);
        }
        let mut at = done + delay;
        if let Some(j) = self.jitter {
            if !j.max.is_zero() {
                at += Dur::from_nanos(rng.below(j.max.as_nanos()));
            }
            if !j.reorder {
                at = at.max(self.last_arrival);
            }
        }
        if !lost {
            self.last_arrival = self.last_arrival.max(at);
        }
        (done, lost, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(text: &str) -> TraceCursor {
        let t = Arc::new(DeliveryTrace::parse("t", text).unwrap());
        TraceCursor {
            period_ns: t.period().as_nanos(),
            trace: t,
            next: 0,
            left: 0,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn trace_opportunities_carry_1500_bytes_and_repeat() {
        // Two opportunities at 1 ms, one at 4 ms; period 4 ms.
        let mut c = cursor("1\n1\n4\n");
        assert_eq!(c.depart(0, 1500), MS);
        // Two small packets share the second opportunity at 1 ms.
        assert_eq!(c.depart(MS, 52), MS);
        assert_eq!(c.depart(MS, 1448), MS);
        assert_eq!(c.depart(MS, 1500), 4 * MS);
        // The next repetition: 4 + 1 ms.
        assert_eq!(c.depart(4 * MS, 1500), 5 * MS);
        // Idle until 7 ms: the 5 ms opportunity is lost; the next is 8 ms.
        assert_eq!(c.depart(7 * MS, 1500), 8 * MS);
        // A packet larger than one opportunity takes two.
        assert_eq!(c.depart(8 * MS + 1, 3000), 9 * MS);
        // Far in the future: whole periods skipped.
        assert_eq!(c.depart(4_000 * MS + 2 * MS, 100), 4_000 * MS + 4 * MS);
    }

    #[test]
    fn trace_errors_name_the_line() {
        let e = DeliveryTrace::parse("t", "1\n2\nx\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = DeliveryTrace::parse("t", "5\n3\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("decrease"), "{e}");
        assert!(DeliveryTrace::parse("t", "\n")
            .unwrap_err()
            .contains("empty"));
        assert!(DeliveryTrace::parse("t", "0\n0\n").is_err());
        // A time that would overflow nanoseconds is refused, by line.
        let e = DeliveryTrace::parse("t", "1\n99999999999999\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("longest"), "{e}");
        let t = DeliveryTrace::parse("t", "1\n2\n3\n4\n").unwrap();
        assert_eq!(t.mean_rate(), Rate::from_mbps(12));
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts() {
        let g = GilbertElliott {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut s = LinkState::of(&LinkModel {
            gilbert_elliott: Some(g),
            ..Default::default()
        })
        .unwrap();
        let mut rng = Rng::from_seed(1);
        let n = 200_000;
        let (mut lost, mut runs, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let (_, l, _) = s.depart(
                Time::ZERO,
                1500,
                (Rate::from_mbps(10), Dur::ZERO, 0.0),
                &mut rng,
            );
            lost += l as u64;
            runs += (l && !prev) as u64;
            prev = l;
        }
        let rate = lost as f64 / n as f64;
        let mean = g.mean_loss();
        assert!((rate - mean).abs() < 0.1 * mean, "{rate} vs {mean}");
        // Mean burst length 1 / r = 4 packets, where independent losses of
        // the same rate would give runs of about 1.
        let burst = lost as f64 / runs as f64;
        assert!((3.5..4.5).contains(&burst), "mean burst {burst}");
    }

    #[test]
    fn jitter_keeps_order_unless_reordering_is_allowed() {
        for reorder in [false, true] {
            let mut s = LinkState::of(&LinkModel {
                jitter: Some(Jitter {
                    max: Dur::from_millis(10),
                    reorder,
                }),
                ..Default::default()
            })
            .unwrap();
            let mut rng = Rng::from_seed(2);
            let mut now = Time::ZERO;
            let (mut overtaken, mut last, mut extra) = (0, Time::ZERO, Dur::ZERO);
            for _ in 0..1000 {
                let (done, _, at) = s.depart(
                    now,
                    1500,
                    (Rate::from_mbps(12), Dur::from_millis(5), 0.0),
                    &mut rng,
                );
                assert!(at >= done + Dur::from_millis(5));
                assert!(at < done + Dur::from_millis(15) || !reorder);
                overtaken += (at < last) as u32;
                last = last.max(at);
                extra += at - (done + Dur::from_millis(5));
                now = done;
            }
            if reorder {
                assert!(overtaken > 100, "{overtaken} packets overtaken");
                let mean = extra.as_secs_f64() / 1000.0;
                assert!((0.004..0.006).contains(&mean), "mean jitter {mean}");
            } else {
                assert_eq!(overtaken, 0);
            }
        }
    }
}
