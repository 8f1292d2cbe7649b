//! The latency metrics of `summary.json` against a case worked out by hand.

use crate::common::*;
use hopwise_experiment::stats::LogHistogram;
use hopwise_proto::cc::CcConfig;
use hopwise_proto::tcp::TcpConfig;
use hopwise_proto::time::Dur;
use hopwise_proto::units::Rate;
use hopwise_sim::report::{FlowSummary, Summary};
use hopwise_sim::spec::*;
use hopwise_sim::Sim;

/// Host `a` sends ten full segments to host `b` over one link of 12 Mbit/s
/// and 10 ms each way, without timestamps or delayed ACKs.
fn burst(warmup: Dur) -> FlowSummary {
    let mut s = Scenario::new("burst", Dur::from_secs(1), 1);
    for n in ["a", "b"] {
        s.nodes.push(NodeSpec {
            name: n.into(),
            kind: NodeKind::Host,
        });
    }
    let d = dir(
        Rate::from_mbps(12),
        Dur::from_millis(10),
        QueueSpec::DropTail {
            limit: Limit::Packets(100),
        },
    );
    s.links.push(LinkSpec {
        name: "l".into(),
        a: "a".into(),
        b: "b".into(),
        ab: d.clone(),
        ba: d,
    });
    let mut f = bulk("f", "a", "b", CcConfig::NewReno);
    f.tcp = TcpConfig {
        mss: 1460,
        timestamps: false,
        delayed_ack: false,
        ..TcpConfig::default()
    };
    f.traffic = Traffic::Fixed(10 * 1460);
    s.flows.push(f);
    s.measure.warmup = warmup;
    let mut sim = Sim::new(&s).unwrap();
    sim.run();
    let mut sum = Summary::of(&sim, "burst", 0.0);
    sum.flows.remove(0)
}

/// `got` is within the histogram's stated precision of `want` (ms).
fn near(got: Option<f64>, want: f64) -> bool {
    got.is_some_and(|g| (g - want).abs() <= want * LogHistogram::RELATIVE_ERROR)
}

/// A 1500-B segment (1460 B of payload and 40 B of headers) takes
/// T = 1500·8 / 12 Mbit/s = 1 ms to send, a 40-B ACK a = 26.667 µs.
///
/// When the SYN-ACK arrives (at t₁ ≈ 20 ms), the initial window of ten
/// segments goes out at once into `a`'s empty queue: segment k = 0…9 waits
/// k ms while the ones before it are sent. Queueing delays 0, 1, …, 9 ms:
/// mean 4.5 ms; nearest rank: median (rank 5) 4 ms, p95 and p99 (rank
/// ⌈9.5⌉ = ⌈9.9⌉ = 10) 9 ms.
///
/// Segment k reaches `b` at t₁ + (k+1)·T + 10 ms; `b` ACKs it at once, the
/// ACK finds the way back empty and arrives at t₁ + (k+1)·T + 20 ms + a.
/// Without timestamps the RTT sample (Karn) runs from the segment's
/// transmission at t₁: 20.026667 + (k+1) ms, i.e. 21.026667 … 30.026667
/// ms: mean 25.526667 ms, median (rank 5) 25.026667 ms, p95 = p99 =
/// 30.026667 ms.
///
/// The 30-ms warm-up leaves out the handshake's RTT sample (taken at t₁)
/// and nothing else: the first segment arrives at t₁ + 11 ms.
#[test]
fn latency_of_a_burst_behind_one_queue() {
    let f = burst(Dur::from_millis(30));
    assert_eq!((f.bytes_delivered, f.retransmits), (14_600, 0));

    assert_eq!(f.queue_delay_samples, 10);
    let mean = f.queue_delay_mean_ms.unwrap();
    assert!((mean - 4.5).abs() < 1e-9, "{mean}");
    assert!(near(f.queue_delay_median_ms, 4.0), "{f:?}");
    // The last rank is the maximum, exact.
    assert!((f.queue_delay_p95_ms.unwrap() - 9.0).abs() < 1e-9, "{f:?}");
    assert!((f.queue_delay_p99_ms.unwrap() - 9.0).abs() < 1e-9, "{f:?}");

    let a = 40.0 * 8.0 / 12e6 * 1e3;
    assert_eq!(f.rtt_samples, 10);
    let mean = f.rtt_mean_ms.unwrap();
    assert!((mean - (25.5 + a)).abs() < 1e-6, "{mean}");
    assert!(near(f.rtt_median_ms, 25.0 + a), "{f:?}");
    assert!((f.rtt_p95_ms.unwrap() - (30.0 + a)).abs() < 1e-6, "{f:?}");
    assert!((f.rtt_p99_ms.unwrap() - (30.0 + a)).abs() < 1e-6, "{f:?}");

    // Without the warm-up the handshake's sample counts too: the SYN (and
    // SYN-ACK) are not data, so the queueing delays stay as they were.
    let all = burst(Dur::ZERO);
    assert_eq!((all.rtt_samples, all.queue_delay_samples), (11, 10));
    assert!(all.rtt_mean_ms.unwrap() < mean, "{all:?}");
    assert_eq!(all.queue_delay_mean_ms, f.queue_delay_mean_ms);
}

/// A flow that moves no data has no latency, not a zero one.
#[test]
fn a_flow_without_samples_reports_none() {
    let f = burst(Dur::from_millis(999));
    assert_eq!((f.rtt_samples, f.queue_delay_samples), (0, 0));
    assert_eq!(f.rtt_median_ms, None);
    assert_eq!(f.queue_delay_p99_ms, None);
}
