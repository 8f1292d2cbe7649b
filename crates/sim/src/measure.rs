//! Measurement primitives: binned counters, sampled traces, time-weighted
//! queue statistics and ACK-burst runs.

use hopwise_proto::time::{Dur, Time};
use serde::Serialize;

/// A TCP sender's state at one trace tick (`measure.trace_interval`). Every
/// field is NaN while the connection is not open (before it starts and once
/// it closed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TraceSample {
    /// Congestion window, bytes.
    pub cwnd: f64,
    /// Slow-start threshold, bytes; NaN while it is still unbounded.
    pub ssthresh: f64,
    /// Smoothed RTT, milliseconds (0 before the first RTT sample).
    pub srtt_ms: f64,
    /// Bytes the sender believes in flight (RFC 6675's pipe).
    pub pipe: f64,
}

impl TraceSample {
    /// The sample of a connection that is not open.
    pub const CLOSED: TraceSample = TraceSample {
        cwnd: f64::NAN,
        ssthresh: f64::NAN,
        srtt_ms: f64::NAN,
        pipe: f64::NAN,
    };

    /// Whether the connection was open at this tick.
    pub fn is_open(&self) -> bool {
        !self.cwnd.is_nan()
    }
}

/// A queue's occupancy at one trace tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueSample {
    /// Bytes queued (not counting the packet being transmitted).
    pub bytes: u64,
    /// Packets queued.
    pub packets: u64,
}

/// A counter accumulated into fixed-width time bins: bin `i` covers
/// `[i·interval, (i+1)·interval)`.
#[derive(Clone, Debug)]
pub struct Binned {
    pub interval: Dur,
    pub bins: Vec<u64>,
    /// The end of the series once [`Binned::pad_to`] closed it: the last bin
    /// may then cover only part of an interval.
    pub end: Option<Time>,
}

impl Binned {
    pub fn new(interval: Dur) -> Self {
        Binned {
            interval,
            bins: Vec::new(),
            end: None,
        }
    }
    pub fn add(&mut self, now: Time, n: u64) {
        let i = (now.as_nanos() / self.interval.as_nanos().max(1)) as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, 0);
        }
        self.bins[i] += n;
    }
    /// Extends with empty bins so that the series covers `[0, end)`, and
    /// records `end`.
    pub fn pad_to(&mut self, end: Time) {
        let n = end.as_nanos().div_ceil(self.interval.as_nanos().max(1)) as usize;
        if self.bins.len() < n {
            self.bins.resize(n, 0);
        }
        self.end = Some(end);
    }
    /// How much of bin `i` the series covers: the whole interval, except for
    /// a last bin cut short by the end.
    fn width(&self, i: usize) -> Dur {
        let iv = self.interval.as_nanos();
        match self.end {
            Some(end) => {
                let from = i as u64 * iv;
                Dur::from_nanos(end.as_nanos().saturating_sub(from).min(iv))
            }
            None => self.interval,
        }
    }
    /// Bin values as bit rates (bits per second), assuming the counter counts
    /// bytes. A last bin that the end cuts short is divided by the part it
    /// covers, not by the whole interval.
    pub fn rates_bps(&self) -> Vec<f64> {
        (0..self.bins.len())
            .map(|i| {
                let w = self.width(i);
                let w = if w.is_zero() { self.interval } else { w };
                self.bins[i] as f64 * 8.0 / w.as_secs_f64()
            })
            .collect()
    }
}

/// Queue occupancy statistics of one output port, plus what left it.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    last_change: Time,
    cur_bytes: u64,
    cur_packets: u64,
    /// ∫ bytes dt and ∫ packets dt over the measured window, in byte·ns.
    int_bytes: u128,
    int_packets: u128,
    pub max_bytes: u64,
    pub max_packets: u64,
    pub enqueued: u64,
    /// Packets refused by the queue at enqueue (buffer overflow, or an
    /// AQM's early drop); the packets an AQM dropped after queueing them
    /// are in [`crate::sim::Iface::aqm_counts`].
    pub drops: u64,
    /// Packets lost on the wire by the random-loss process.
    pub wire_losses: u64,
    /// Bytes and packets sent after the warm-up (for utilisation).
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes_total: u64,
    /// Whether a data packet (one with payload) has left yet.
    seen_data: bool,
    /// Consecutive pure ACKs seen leaving since the last data packet (only
    /// counted once a data packet has left).
    ack_run: u32,
    /// `ack_bursts[n]` = how many runs of exactly `n` pure ACKs left the queue
    /// after a data packet (seed 004 §2.1): each run ended by the next data
    /// packet, plus the run still open when the simulation ends (a truncated
    /// burst, added by [`QueueStats::close_ack_run`]). ACKs before the first
    /// data packet are no burst, so a queue that carries only ACKs has none.
    /// SYN, FIN and RST without payload neither extend nor end a run.
    /// Index 0 is unused.
    pub ack_bursts: Vec<u64>,
}

impl QueueStats {
    /// Accounts occupancy up to `now`, counting only time after `warmup`.
    pub fn advance(&mut self, now: Time, warmup: Time) {
        let from = self.last_change.max(warmup);
        if now > from {
            let dt = (now - from).as_nanos() as u128;
            self.int_bytes += self.cur_bytes as u128 * dt;
            self.int_packets += self.cur_packets as u128 * dt;
        }
        self.last_change = now;
    }

    /// Sets the occupancy after a change (call [`QueueStats::advance`] first).
    pub fn set(&mut self, bytes: u64, packets: u64) {
        self.cur_bytes = bytes;
        self.cur_packets = packets;
        self.max_bytes = self.max_bytes.max(bytes);
        self.max_packets = self.max_packets.max(packets);
    }

    /// The occupancy now.
    pub fn current(&self) -> QueueSample {
        QueueSample {
            bytes: self.cur_bytes,
            packets: self.cur_packets,
        }
    }

    /// Records a departure (start of transmission) of a packet of `size`
    /// bytes carrying `payload` bytes of transport payload.
    pub fn departed(&mut self, now: Time, warmup: Time, size: u32, payload: u32, pure_ack: bool) {
        self.tx_bytes_total += size as u64;
        if now >= warmup {
            self.tx_bytes += size as u64;
            self.tx_packets += 1;
        }
        if pure_ack {
            if self.seen_data {
                self.ack_run += 1;
            }
        } else if payload > 0 {
            self.close_ack_run();
            self.seen_data = true;
        }
    }

    /// Records the run of pure ACKs still open, if any (at the end of the
    /// simulation: a truncated burst). Calling it again records nothing.
    pub fn close_ack_run(&mut self) {
        if self.ack_run > 0 {
            let n = self.ack_run as usize;
            if self.ack_bursts.len() <= n {
                self.ack_bursts.resize(n + 1, 0);
            }
            self.ack_bursts[n] += 1;
            self.ack_run = 0;
        }
    }

    /// Time-weighted mean occupancy `(bytes, packets)` over `window`.
    pub fn means(&self, window: Dur) -> (f64, f64) {
        let w = window.as_nanos().max(1) as f64;
        (self.int_bytes as f64 / w, self.int_packets as f64 / w)
    }

    /// Median ACK-burst length, if any burst was seen.
    pub fn median_ack_burst(&self) -> Option<u64> {
        let total: u64 = self.ack_bursts.iter().sum();
        if total == 0 {
            return None;
        }
        let mut acc = 0;
        for (n, &c) in self.ack_bursts.iter().enumerate() {
            acc += c;
            if acc * 2 >= total {
                return Some(n as u64);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binned_rates_cover_each_bin() {
        let mut b = Binned::new(Dur::SECOND);
        b.add(Time::ZERO + Dur::from_millis(1500), 125_000);
        b.pad_to(Time::ZERO + Dur::from_secs(3));
        assert_eq!(b.rates_bps(), vec![0.0, 1e6, 0.0]);
        // A run that ends half way through a bin: the last bin's rate is
        // over the half it covers.
        let mut b = Binned::new(Dur::SECOND);
        b.add(Time::ZERO + Dur::from_millis(500), 125_000);
        b.add(Time::ZERO + Dur::from_millis(1200), 62_500);
        b.pad_to(Time::ZERO + Dur::from_millis(1500));
        assert_eq!(b.rates_bps(), vec![1e6, 1e6]);
    }

    #[test]
    fn time_weighted_mean_respects_warmup() {
        let mut q = QueueStats::default();
        let w = Time::ZERO + Dur::SECOND;
        q.advance(Time::ZERO, w);
        q.set(1000, 1);
        q.advance(Time::ZERO + Dur::from_secs(2), w);
        q.set(0, 0);
        q.advance(Time::ZERO + Dur::from_secs(3), w);
        // 1000 B for the 1 s after warm-up, 0 for the next second: mean 500 B over 2 s.
        let (b, p) = q.means(Dur::from_secs(2));
        assert!((b - 500.0).abs() < 1e-9 && (p - 0.5).abs() < 1e-12);
        assert_eq!(q.max_bytes, 1000);
    }

    /// Feeds departures: `a` a pure ACK, `d` a data packet, `c` a SYN, FIN
    /// or RST without payload.
    fn feed(q: &mut QueueStats, kinds: &str) {
        for k in kinds.chars() {
            let (size, payload, ack) = match k {
                'a' => (52, 0, true),
                'd' => (1500, 1448, false),
                'c' => (52, 0, false),
                _ => unreachable!(),
            };
            q.departed(Time::ZERO, Time::ZERO, size, payload, ack);
        }
    }

    #[test]
    fn ack_bursts_are_runs_between_data() {
        let mut q = QueueStats::default();
        // The two ACKs before the first data packet are no burst.
        feed(&mut q, "aadadaaadd");
        assert_eq!(q.ack_bursts, vec![0, 1, 0, 1]);
        q.close_ack_run();
        assert_eq!(q.ack_bursts, vec![0, 1, 0, 1]);
        assert_eq!(q.median_ack_burst(), Some(1));
    }

    #[test]
    fn the_run_open_at_the_end_is_a_truncated_burst() {
        let mut q = QueueStats::default();
        feed(&mut q, "daadaaaa");
        assert_eq!(q.ack_bursts, vec![0, 0, 1]);
        q.close_ack_run();
        assert_eq!(q.ack_bursts, vec![0, 0, 1, 0, 1]);
        // A second close (the run ended twice) records nothing more.
        q.close_ack_run();
        assert_eq!(q.ack_bursts, vec![0, 0, 1, 0, 1]);
        assert_eq!(q.median_ack_burst(), Some(2));
    }

    #[test]
    fn a_queue_with_only_acks_has_no_bursts() {
        let mut q = QueueStats::default();
        // A SYN-ACK, thousands of ACKs, a FIN: no data ever left.
        feed(&mut q, "c");
        for _ in 0..5000 {
            feed(&mut q, "a");
        }
        feed(&mut q, "ca");
        q.close_ack_run();
        assert!(q.ack_bursts.iter().all(|&c| c == 0), "{:?}", q.ack_bursts);
        assert_eq!(q.median_ack_burst(), None);
    }

    #[test]
    fn control_packets_neither_extend_nor_end_a_run() {
        let mut q = QueueStats::default();
        feed(&mut q, "dacaad");
        assert_eq!(q.ack_bursts, vec![0, 0, 0, 1]);
    }
}
