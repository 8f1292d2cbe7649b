//! Output queue disciplines: drop-tail FIFO, seed 000's "ACKs first"
//! (an HTB-like two-class shaper), a token-bucket shaper, and the AQMs of
//! [`crate::aqm`] (CoDel, FQ-CoDel, PIE, RED).
//!
//! A discipline may be non-work-conserving: [`Qdisc::dequeue`] then answers
//! [`Dequeue::WaitUntil`] and the port asks again at that time.

use crate::aqm::{AqmCounts, Codel, CodelParams, FqCodel, Pie, PieParams, Red, RedParams};
use crate::packet::Packet;
use crate::spec::{AckClassifier, Limit, QueueSpec};
use hopwise_proto::ring;
use hopwise_proto::rng::Rng;
use hopwise_proto::time::{Dur, Time};
use hopwise_proto::units::Rate;
use std::collections::VecDeque;

/// Packets a drained queue keeps room for
/// ([`hopwise_proto::ring::release_if_drained`]).
const KEEP_IDLE: usize = 16;

/// A drop-tail FIFO limited in bytes or packets.
#[derive(Debug)]
pub struct Fifo {
    q: VecDeque<Packet>,
    bytes: u64,
    limit: Limit,
}

impl Fifo {
    pub fn new(limit: Limit) -> Self {
        Fifo {
            q: VecDeque::new(),
            bytes: 0,
            limit,
        }
    }
    fn fits(&self, size: u32) -> bool {
        match self.limit {
            Limit::Bytes(b) => self.bytes + size as u64 <= b,
            Limit::Packets(n) => (self.q.len() as u64) < n,
        }
    }
    /// Queues `p`; `false` if it was dropped for lack of room.
    #[must_use]
    pub fn push(&mut self, p: Packet) -> bool {
        if !self.fits(p.size) {
            return false;
        }
        self.bytes += p.size as u64;
        self.q.push_back(p);
        true
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        ring::release_if_drained(&mut self.q, KEEP_IDLE);
        Some(p)
    }
    pub fn front_size(&self) -> Option<u32> {
        self.q.front().map(|p| p.size)
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn packets(&self) -> u64 {
        self.q.len() as u64
    }
}

/// A token bucket as a generic cell rate algorithm (GCRA): exact integer
/// arithmetic, equivalent to a bucket of depth `burst` bytes filling at `rate`.
#[derive(Clone, Copy, Debug)]
pub struct Bucket {
    rate: Rate,
    burst: u64,
    /// Theoretical arrival time: when the bucket would be full again.
    tat: Time,
}

impl Bucket {
    pub fn new(rate: Rate, burst: u64) -> Self {
        Bucket {
            rate,
            burst,
            tat: Time::ZERO,
        }
    }
    /// Earliest time a packet of `size` bytes conforms.
    pub fn conform_at(&self, size: u32) -> Time {
        let slack = self.rate.tx_time(self.burst.saturating_sub(size as u64));
        self.tat - slack
    }
    pub fn conforms(&self, now: Time, size: u32) -> bool {
        now >= self.conform_at(size)
    }
    pub fn charge(&mut self, now: Time, size: u32) {
        self.tat = self.tat.max(now) + self.rate.tx_time(size as u64);
    }
}

/// HTB's default burst: one timer tick (1 ms) of rate, but at least two full frames.
fn default_burst(rate: Rate) -> u64 {
    (rate.bytes_in(Dur::MILLISECOND)).max(2 * 1514)
}

/// One class of the "ACKs first" discipline.
#[derive(Debug)]
struct Class {
    q: Fifo,
    rate: Bucket,
    ceil: Bucket,
}

/// Seed 000 §IV, modelled on Linux HTB: an ACK class at priority 0 and a data
/// class at priority 1. Each class has a guaranteed rate and may borrow up to
/// its ceiling; the parent throttles the sum to `throttle` × link rate.
/// Classes under their guaranteed rate are served first, in priority order;
/// then classes that can borrow, in priority order (HTB's scheduling rule).
#[derive(Debug)]
pub struct AckFirst {
    classifier: AckClassifier,
    classes: [Class; 2],
    parent: Bucket,
}

impl AckFirst {
    pub fn new(
        link: Rate,
        classifier: AckClassifier,
        data_share: f64,
        throttle: f64,
        ack_limit: Limit,
        data_limit: Limit,
    ) -> Self {
        let ceil = link.scale(throttle);
        let data_rate = link.scale(data_share.min(throttle));
        let ack_rate = link
            .scale((throttle - data_share).max(0.0))
            .max(Rate::from_bps(1));
        let class = |limit, rate: Rate| Class {
            q: Fifo::new(limit),
            rate: Bucket::new(rate, default_burst(rate)),
            ceil: Bucket::new(ceil, default_burst(ceil)),
        };
        AckFirst {
            classifier,
            classes: [class(ack_limit, ack_rate), class(data_limit, data_rate)],
            parent: Bucket::new(ceil, default_burst(ceil)),
        }
    }

    fn is_ack(&self, p: &Packet) -> bool {
        match self.classifier {
            AckClassifier::Len64 => p.payload == 0 && p.size < 64,
            AckClassifier::NoPayload => p.payload == 0,
        }
    }
}

/// What a discipline offers the link.
#[derive(Debug)]
pub enum Dequeue {
    Packet(Packet),
    /// Backlogged but shaped: ask again at this time.
    WaitUntil(Time),
    Empty,
}

/// A queue discipline.
#[derive(Debug)]
pub enum Qdisc {
    DropTail(Fifo),
    AckFirst(Box<AckFirst>),
    TokenBucket { q: Fifo, bucket: Bucket },
    Codel(Box<Codel>),
    FqCodel(Box<FqCodel>),
    Pie(Box<Pie>),
    Red(Box<Red>),
}

impl Qdisc {
    /// Builds the discipline for an output port of rate `link`; the
    /// disciplines that draw random numbers (PIE, RED) or key a hash
    /// (FQ-CoDel) take them from `rng`.
    pub fn from_spec(spec: &QueueSpec, link: Rate, rng: Rng) -> Self {
        let codel = |target: Dur, interval: Dur, ecn| CodelParams {
            target_ns: target.as_nanos(),
            interval_ns: interval.as_nanos(),
            ecn,
        };
        match *spec {
            QueueSpec::DropTail { limit } => Qdisc::DropTail(Fifo::new(limit)),
            QueueSpec::AckFirst {
                classifier,
                data_share,
                throttle,
                ack_limit,
                data_limit,
            } => Qdisc::AckFirst(Box::new(AckFirst::new(
                link, classifier, data_share, throttle, ack_limit, data_limit,
            ))),
            QueueSpec::TokenBucket { rate, burst, limit } => Qdisc::TokenBucket {
                q: Fifo::new(limit),
                bucket: Bucket::new(rate, burst),
            },
            QueueSpec::Codel {
                target,
                interval,
                limit,
                ecn,
            } => Qdisc::Codel(Box::new(Codel::new(codel(target, interval, ecn), limit))),
            QueueSpec::FqCodel {
                target,
                interval,
                limit,
                flows,
                quantum,
                ecn,
            } => Qdisc::FqCodel(Box::new(FqCodel::new(
                codel(target, interval, ecn),
                limit,
                flows,
                quantum,
                rng,
            ))),
            QueueSpec::Pie {
                target,
                tupdate,
                alpha,
                beta,
                max_burst,
                limit,
                ecn,
            } => Qdisc::Pie(Box::new(Pie::new(
                PieParams {
                    target_ns: target.as_nanos(),
                    tupdate_ns: tupdate.as_nanos().max(1),
                    alpha,
                    beta,
                    max_burst_ns: max_burst.as_nanos(),
                    ecn,
                    ecn_threshold: 0.1,
                },
                limit,
                rng,
            ))),
            QueueSpec::Red {
                min_th,
                max_th,
                max_p,
                weight,
                gentle,
                limit,
                ecn,
            } => Qdisc::Red(Box::new(Red::new(
                RedParams {
                    min_th,
                    max_th,
                    max_p,
                    weight,
                    gentle,
                    ecn,
                },
                limit,
                link.tx_time(1500).as_nanos(),
                rng,
            ))),
        }
    }

    /// What the AQM dropped and marked (zero for the other disciplines).
    pub fn aqm_counts(&self) -> AqmCounts {
        match self {
            Qdisc::Codel(q) => q.counts,
            Qdisc::FqCodel(q) => q.counts,
            Qdisc::Pie(q) => q.counts,
            Qdisc::Red(q) => q.counts,
            Qdisc::DropTail(_) | Qdisc::AckFirst(_) | Qdisc::TokenBucket { .. } => {
                AqmCounts::default()
            }
        }
    }

    /// Whether a packet of `size` bytes would leave unchanged if it were
    /// queued now and dequeued right after: a drop-tail FIFO that is empty
    /// and has room for it. An idle port may then send it without queueing.
    pub fn passes_through(&self, size: u32) -> bool {
        match self {
            Qdisc::DropTail(q) => q.q.is_empty() && q.fits(size),
            _ => false,
        }
    }

    /// Queues a packet arriving at `now`; `false` if it was dropped.
    #[must_use]
    pub fn enqueue(&mut self, now: Time, p: Packet) -> bool {
        match self {
            Qdisc::DropTail(q) => q.push(p),
            Qdisc::AckFirst(a) => {
                let c = if a.is_ack(&p) { 0 } else { 1 };
                a.classes[c].q.push(p)
            }
            Qdisc::TokenBucket { q, .. } => q.push(p),
            Qdisc::Codel(q) => q.enqueue(now.as_nanos(), p),
            Qdisc::FqCodel(q) => q.enqueue(now.as_nanos(), p),
            Qdisc::Pie(q) => q.enqueue(now.as_nanos(), p),
            Qdisc::Red(q) => q.enqueue(now.as_nanos(), p),
        }
    }

    pub fn dequeue(&mut self, now: Time) -> Dequeue {
        match self {
            Qdisc::DropTail(q) => q.pop().map_or(Dequeue::Empty, Dequeue::Packet),
            Qdisc::Codel(q) => q
                .dequeue(now.as_nanos())
                .map_or(Dequeue::Empty, Dequeue::Packet),
            Qdisc::FqCodel(q) => q
                .dequeue(now.as_nanos())
                .map_or(Dequeue::Empty, Dequeue::Packet),
            Qdisc::Pie(q) => q
                .dequeue(now.as_nanos())
                .map_or(Dequeue::Empty, Dequeue::Packet),
            Qdisc::Red(q) => q
                .dequeue(now.as_nanos())
                .map_or(Dequeue::Empty, Dequeue::Packet),
            Qdisc::TokenBucket { q, bucket } => match q.front_size() {
                None => Dequeue::Empty,
                Some(s) if bucket.conforms(now, s) => {
                    bucket.charge(now, s);
                    Dequeue::Packet(q.pop().expect("front exists"))
                }
                Some(s) => Dequeue::WaitUntil(bucket.conform_at(s)),
            },
            Qdisc::AckFirst(a) => {
                let a = &mut **a;
                // Pass 1: classes within their guaranteed rate; pass 2: borrowing.
                for borrow in [false, true] {
                    for c in 0..2 {
                        let Some(s) = a.classes[c].q.front_size() else {
                            continue;
                        };
                        let cl = &a.classes[c];
                        let ok = a.parent.conforms(now, s)
                            && cl.ceil.conforms(now, s)
                            && (borrow || cl.rate.conforms(now, s));
                        if ok {
                            let cl = &mut a.classes[c];
                            cl.rate.charge(now, s);
                            cl.ceil.charge(now, s);
                            a.parent.charge(now, s);
                            return Dequeue::Packet(cl.q.pop().expect("front exists"));
                        }
                    }
                }
                let mut wake: Option<Time> = None;
                for cl in &a.classes {
                    if let Some(s) = cl.q.front_size() {
                        let t = cl.ceil.conform_at(s).max(a.parent.conform_at(s));
                        wake = Some(wake.map_or(t, |w| w.min(t)));
                    }
                }
                wake.map_or(Dequeue::Empty, Dequeue::WaitUntil)
            }
        }
    }

    /// Backlog in bytes.
    pub fn bytes(&self) -> u64 {
        match self {
            Qdisc::DropTail(q) | Qdisc::TokenBucket { q, .. } => q.bytes(),
            Qdisc::AckFirst(a) => a.classes.iter().map(|c| c.q.bytes()).sum(),
            Qdisc::Codel(q) => q.bytes(),
            Qdisc::FqCodel(q) => q.bytes(),
            Qdisc::Pie(q) => q.bytes(),
            Qdisc::Red(q) => q.bytes(),
        }
    }

    /// Backlog in packets.
    pub fn packets(&self) -> u64 {
        match self {
            Qdisc::DropTail(q) | Qdisc::TokenBucket { q, .. } => q.packets(),
            Qdisc::AckFirst(a) => a.classes.iter().map(|c| c.q.packets()).sum(),
            Qdisc::Codel(q) => q.packets(),
            Qdisc::FqCodel(q) => q.packets(),
            Qdisc::Pie(q) => q.packets(),
            Qdisc::Red(q) => q.packets(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::NodeId;
    use hopwise_proto::tcp::{Flags, Segment};

    const T0: Time = Time::ZERO;

    fn pkt(payload: usize, sack_blocks: usize) -> Packet {
        let mut seg = Segment {
            flags: Flags::ACK,
            ts: Some((0, 0)),
            payload: bytes::Bytes::from(vec![0u8; payload]),
            ..Default::default()
        };
        for i in 0..sack_blocks {
            seg.sack.push(i as u32 * 10, i as u32 * 10 + 5);
        }
        Packet::tcp(NodeId(0), NodeId(1), 0, seg)
    }

    #[test]
    fn a_drained_fifo_gives_its_room_back() {
        let mut f = Fifo::new(Limit::Packets(1000));
        for _ in 0..500 {
            assert!(f.push(pkt(100, 0)));
        }
        for _ in 0..499 {
            f.pop().expect("queued");
        }
        assert!(f.q.capacity() >= 500, "one packet still queued");
        f.pop().expect("queued");
        assert!(f.pop().is_none());
        assert!(f.q.capacity() <= 2 * KEEP_IDLE, "{}", f.q.capacity());
        assert_eq!((f.bytes(), f.packets()), (0, 0));
    }

    #[test]
    fn drop_tail_limits() {
        let mut q = Qdisc::from_spec(
            &QueueSpec::DropTail {
                limit: Limit::Bytes(3000),
            },
            Rate::from_mbps(1),
            Rng::from_seed(0),
        );
        assert!(q.enqueue(T0, pkt(1448, 0)));
        assert!(q.enqueue(T0, pkt(1448, 0)));
        assert!(!q.enqueue(T0, pkt(0, 0)), "3000 B full even for a 52 B ACK");
        let mut q = Qdisc::from_spec(
            &QueueSpec::DropTail {
                limit: Limit::Packets(2),
            },
            Rate::from_mbps(1),
            Rng::from_seed(0),
        );
        assert!(q.enqueue(T0, pkt(0, 0)) && q.enqueue(T0, pkt(0, 0)));
        assert!(!q.enqueue(T0, pkt(0, 0)));
        assert_eq!(q.packets(), 2);
        assert_eq!(q.bytes(), 104);
    }

    #[test]
    fn token_bucket_shapes_to_rate() {
        let rate = Rate::from_mbps(1);
        let mut q = Qdisc::from_spec(
            &QueueSpec::TokenBucket {
                rate,
                burst: 1500,
                limit: Limit::Packets(100),
            },
            Rate::from_mbps(100),
            Rng::from_seed(0),
        );
        for _ in 0..10 {
            assert!(q.enqueue(T0, pkt(1448, 0)));
        }
        let mut now = Time::ZERO;
        let mut sent = 0;
        while sent < 10 {
            match q.dequeue(now) {
                Dequeue::Packet(_) => sent += 1,
                Dequeue::WaitUntil(t) => {
                    assert!(t > now);
                    now = t
                }
                Dequeue::Empty => unreachable!(),
            }
        }
        // First packet free (burst), nine more at 12 ms each.
        assert_eq!(now, Time::ZERO + rate.tx_time(1500) * 9);
    }

    #[test]
    fn ack_first_serves_acks_before_data_and_classifies_by_length() {
        let link = Rate::from_mbps(10);
        let spec = |classifier| QueueSpec::AckFirst {
            classifier,
            data_share: 0.9,
            throttle: 0.95,
            ack_limit: Limit::Packets(100),
            data_limit: Limit::Packets(100),
        };
        let mut q = Qdisc::from_spec(&spec(AckClassifier::NoPayload), link, Rng::from_seed(0));
        for _ in 0..5 {
            assert!(q.enqueue(T0, pkt(1448, 0)));
        }
        assert!(q.enqueue(T0, pkt(0, 2)));
        match q.dequeue(Time::ZERO) {
            Dequeue::Packet(p) => assert_eq!(p.payload, 0, "the ACK jumps the data"),
            other => panic!("{other:?}"),
        }
        // With the paper's "< 64 B" classifier an ACK with one SACK block is data.
        let mut q = Qdisc::from_spec(&spec(AckClassifier::Len64), link, Rng::from_seed(0));
        assert!(q.enqueue(T0, pkt(1448, 0)));
        assert!(q.enqueue(T0, pkt(0, 1)));
        assert!(q.enqueue(T0, pkt(0, 0)));
        let mut order = vec![];
        let mut now = Time::ZERO;
        while order.len() < 3 {
            match q.dequeue(now) {
                Dequeue::Packet(p) => order.push(p.size),
                Dequeue::WaitUntil(t) => now = t,
                Dequeue::Empty => unreachable!(),
            }
        }
        assert_eq!(order, vec![52, 1500, 64]);
    }

    #[test]
    fn ack_first_throttles_the_sum() {
        let link = Rate::from_mbps(10);
        let mut q = Qdisc::from_spec(
            &QueueSpec::AckFirst {
                classifier: AckClassifier::NoPayload,
                data_share: 0.9,
                throttle: 0.95,
                ack_limit: Limit::Packets(1000),
                data_limit: Limit::Packets(1000),
            },
            link,
            Rng::from_seed(0),
        );
        for _ in 0..1000 {
            assert!(q.enqueue(T0, pkt(1448, 0)));
        }
        let mut now = Time::ZERO;
        let mut bytes = 0u64;
        let mut link_free = Time::ZERO;
        // Serve as a 10 Mbit/s link would for 1 s.
        while now < Time::ZERO + Dur::SECOND {
            match q.dequeue(now) {
                Dequeue::Packet(p) => {
                    bytes += p.size as u64;
                    link_free = now + link.tx_time(p.size as u64);
                    now = link_free;
                }
                Dequeue::WaitUntil(t) => now = t.max(link_free),
                Dequeue::Empty => break,
            }
        }
        let rate = bytes as f64 * 8.0;
        assert!(
            (rate / 9.5e6 - 1.0).abs() < 0.02,
            "throttled to 95 %: {rate}"
        );
    }
}
