//! Properties every built-in congestion controller must keep, whatever the
//! network does: each generated scenario (random ACKs with RTT/OWD samples
//! and spikes, recovery episodes, application-limited periods, timeouts and
//! idle gaps) is replayed against every name in `CcConfig::NAMES`, through a
//! small fake transport that keeps the clock, the delivered/sent counters,
//! SRTT and the minimum RTT consistent.
//!
//! Per step we check:
//! * the window is positive, never below the controller's documented floor
//!   (`CcConfig::min_cwnd`) and never absurd: it can only have grown by a
//!   bounded amount per acknowledged byte since the start (no overflow, no
//!   NaN turned into zero or `u64::MAX`);
//! * `on_loss` never increases the window (NewReno and CUBIC may raise a
//!   window below 2·SMSS to 2·SMSS: RFC 5681 eq. (4), RFC 9438 Figure 5),
//!   and any new ssthresh is at most max(previous cwnd, in_flight, 2·SMSS);
//! * after `on_timeout` the window is at most one segment;
//! * ACKs received in recovery never increase the window, and neither does
//!   the end of recovery, except under BBR (model-based: packet
//!   conservation in recovery, the pre-loss window restored at its end);
//! * ACKs with `cwnd_limited == false` never increase the window, for every
//!   controller except the LEDBAT profiles that use RFC 6817's
//!   `cwnd ≤ flightsize + ALLOWED_INCREASE·MSS` rule instead, and BBR,
//!   which grows towards its BDP target whatever limited the sender;
//! * an ECN-Echo (`on_ecn_echo`) never increases the window;
//! * replaying the same scenario gives the identical (cwnd, ssthresh) trace.

use hopwise_proto::cc::{AckSample, CcConfig, CcInit, CongestionControl, LossEvent, RateSample};
use hopwise_proto::time::{Dur, Time};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Ack {
        /// Bytes acknowledged, in thousandths of a segment (1..=3000).
        size_permille: u16,
        queue_ms: u16,
        spike: bool,
        no_owd: bool,
        no_rtt: bool,
        app_limited: bool,
        dt_us: u32,
        /// The ACK carried ECN-Echo.
        ece: bool,
    },
    /// ECN-Echo answered by the transport (once per window).
    EcnEcho {
        dt_us: u32,
        flight_permille: u16,
    },
    Loss {
        dt_us: u32,
        /// In-flight bytes as thousandths of the current window (may exceed it).
        flight_permille: u16,
    },
    RecoveryExit {
        dt_us: u32,
    },
    Timeout {
        dt_us: u32,
        flight_permille: u16,
    },
    /// A silent gap of whole minutes (rolls LEDBAT's base history).
    Idle {
        minutes: u8,
    },
}

#[derive(Clone, Debug)]
struct Scenario {
    mss: u64,
    initial_window: u64,
    base_rtt_ms: u32,
    /// Clock offset between the hosts, seen in every OWD sample.
    owd_offset_ms: u32,
    /// HyStart++ on (NewReno and CUBIC use it, the others ignore it).
    hystart: bool,
    ops: Vec<Op>,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        85 => (
            1u16..=3000,
            0u16..=400,
            prop::bool::weighted(0.03),
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.05),
            prop::bool::weighted(0.15),
            0u32..=30_000,
            prop::bool::weighted(0.2),
        )
            .prop_map(|(size_permille, queue_ms, spike, no_owd, no_rtt, app_limited, dt_us, ece)| {
                Op::Ack {
                    size_permille,
                    queue_ms,
                    spike,
                    no_owd,
                    no_rtt,
                    app_limited,
                    dt_us,
                    ece,
                }
            }),
        2 => (0u32..=50_000, 0u16..=4000)
            .prop_map(|(dt_us, flight_permille)| Op::EcnEcho { dt_us, flight_permille }),
        4 => (0u32..=50_000, 0u16..=4000)
            .prop_map(|(dt_us, flight_permille)| Op::Loss { dt_us, flight_permille }),
        5 => (0u32..=50_000).prop_map(|dt_us| Op::RecoveryExit { dt_us }),
        2 => (0u32..=1_000_000, 0u16..=4000)
            .prop_map(|(dt_us, flight_permille)| Op::Timeout { dt_us, flight_permille }),
        1 => (1u8..=15).prop_map(|minutes| Op::Idle { minutes }),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::sample::select(vec![100u64, 536, 1200, 1448, 8948]),
        1u64..=10,
        1u32..=400,
        any::<u32>(),
        any::<bool>(),
        prop::collection::vec(op(), 1..400),
    )
        .prop_map(
            |(mss, initial_window, base_rtt_ms, owd_offset_ms, hystart, ops)| Scenario {
                mss,
                initial_window,
                base_rtt_ms,
                owd_offset_ms,
                hystart,
                ops,
            },
        )
}

/// Controllers whose window may grow on application-limited ACKs: the
/// LEDBAT profiles bounded by RFC 6817's flightsize cap (and whose MIN_CWND
/// is restored on the first ACK after a timeout).
fn may_grow_when_app_limited(cfg: &CcConfig) -> bool {
    matches!(cfg, CcConfig::Ledbat(l) if l.params().flight_cap) || model_based(cfg)
}

/// BBR's window follows its model, not loss recovery: it may grow in
/// recovery (packet conservation) and at its end (the saved window).
fn model_based(cfg: &CcConfig) -> bool {
    matches!(cfg, CcConfig::Bbr(_))
}

/// How far `on_loss` may raise a small window (RFC 5681 eq. (4) and RFC
/// 9438 Figure 5 set cwnd to at least 2·SMSS).
fn loss_may_raise_to(cfg: &CcConfig, mss: u64) -> u64 {
    match cfg {
        CcConfig::NewReno | CcConfig::Cubic(_) => 2 * mss,
        // BBR's floor of four segments (`bbr_cwnd_min_target`).
        CcConfig::Bbr(_) => 4 * mss,
        _ => 0,
    }
}

/// Replays `sc` against a fresh controller built from `cfg`, checking the
/// invariants; returns the (cwnd, ssthresh) trace.
fn run(cfg: &CcConfig, sc: &Scenario) -> Result<Vec<(u64, u64)>, TestCaseError> {
    let name = cfg.name();
    let mss = sc.mss;
    let mut cc = cfg.build(CcInit {
        mss,
        initial_window: sc.initial_window,
        hystart: sc.hystart,
    });
    let floor = cfg.min_cwnd(mss);
    let base_rtt = Dur::from_millis(sc.base_rtt_ms.into());
    let offset = Dur::from_millis(sc.owd_offset_ms.into());

    let mut now = Time::ZERO + Dur::from_secs(1);
    let mut delivered = 0u64;
    let mut sent = 0u64;
    let mut in_recovery = false;
    let mut srtt = Dur::ZERO;
    let mut min_rtt = Dur::ZERO;
    // Upper bound on the window: the start, plus per ACK twice the bytes
    // acknowledged and a few segments (slow start at most doubles per
    // round; Vegas-style controllers add one segment per round; µTP's
    // linear gain is at most 3000 B).
    let mut bound = cc.cwnd().max(2 * mss) + 2 * mss;

    let mut trace = Vec::with_capacity(sc.ops.len());
    let check_window = |cc: &dyn CongestionControl, bound: u64, step: usize| {
        let w = cc.cwnd();
        prop_assert!(w > 0, "{name} step {step}: zero window");
        prop_assert!(
            w >= floor,
            "{name} step {step}: cwnd {w} below floor {floor}"
        );
        prop_assert!(
            w <= bound,
            "{name} step {step}: cwnd {w} above bound {bound}"
        );
        prop_assert!(cc.ssthresh() > 0, "{name} step {step}: zero ssthresh");
        Ok(())
    };

    for (step, op) in sc.ops.iter().enumerate() {
        let before = cc.cwnd();
        let before_ss = cc.ssthresh();
        match *op {
            Op::Ack {
                size_permille,
                queue_ms,
                spike,
                no_owd,
                no_rtt,
                app_limited,
                dt_us,
                ece,
            } => {
                let bytes = (mss * u64::from(size_permille) / 1000).max(1);
                let cwnd_limited = !app_limited;
                let in_flight = if cwnd_limited {
                    before.max(bytes)
                } else {
                    bytes + before.saturating_sub(bytes) / 2
                };
                sent = sent.max(delivered + in_flight);
                delivered += bytes;
                now += Dur::from_micros(dt_us.into());
                let mut delay = base_rtt + Dur::from_millis(queue_ms.into());
                if spike {
                    delay += Dur::from_secs(2);
                }
                let rtt = (!no_rtt).then_some(delay);
                if let Some(r) = rtt {
                    srtt = if srtt.is_zero() {
                        r
                    } else {
                        (srtt * 7 + r) / 8
                    };
                    min_rtt = if min_rtt.is_zero() { r } else { min_rtt.min(r) };
                }
                let owd =
                    (!no_owd).then(|| offset + base_rtt / 2 + Dur::from_millis(queue_ms.into()));
                if cc.wants_rate_samples() {
                    // About a window delivered over the path's RTT.
                    cc.on_rate_sample(&RateSample {
                        delivered: in_flight,
                        interval: delay,
                        prior_delivered: delivered.saturating_sub(in_flight),
                        delivered_total: delivered,
                        is_app_limited: app_limited,
                    });
                }
                cc.on_ecn_ack(now, bytes, ece);
                cc.on_ack(&AckSample {
                    now,
                    bytes_acked: bytes,
                    in_flight,
                    rtt,
                    srtt,
                    min_rtt,
                    owd,
                    delivered,
                    sent,
                    in_recovery,
                    cwnd_limited,
                });
                bound = bound.saturating_add(2 * bytes + 2 * mss + 4096);
                let after = cc.cwnd();
                if in_recovery && !model_based(cfg) {
                    prop_assert!(
                        after <= before,
                        "{name} step {step}: ACK in recovery grew cwnd {before} -> {after}"
                    );
                }
                if !cwnd_limited && !may_grow_when_app_limited(cfg) {
                    prop_assert!(
                        after <= before,
                        "{name} step {step}: application-limited ACK grew cwnd {before} -> {after}"
                    );
                }
                if cwnd_limited {
                    // The transport fills the new window.
                    sent = sent.max(delivered + after);
                } else {
                    sent = sent.max(delivered + bytes / 2);
                }
            }
            Op::Loss {
                dt_us,
                flight_permille,
            } => {
                if in_recovery {
                    // One on_loss per recovery episode.
                    trace.push((cc.cwnd(), cc.ssthresh()));
                    continue;
                }
                now += Dur::from_micros(dt_us.into());
                let in_flight = before * u64::from(flight_permille) / 1000;
                sent = sent.max(delivered + in_flight);
                cc.on_loss(&LossEvent { now, in_flight });
                in_recovery = true;
                let after = cc.cwnd();
                let ss = cc.ssthresh();
                // A loss never raises the window, however large the
                // transport's in-flight count (RFC 5681's FlightSize can be
                // several windows after a long recovery without SACK).
                let allowed = before.max(loss_may_raise_to(cfg, mss));
                prop_assert!(
                    after <= allowed,
                    "{name} step {step}: on_loss raised cwnd {before} -> {after} (in_flight {in_flight})"
                );
                if ss != before_ss {
                    prop_assert!(
                        ss <= before.max(in_flight).max(2 * mss),
                        "{name} step {step}: on_loss set ssthresh {ss} (cwnd {before}, in_flight {in_flight})"
                    );
                }
            }
            Op::RecoveryExit { dt_us } => {
                now += Dur::from_micros(dt_us.into());
                if in_recovery {
                    cc.on_recovery_exit(now);
                    in_recovery = false;
                }
                prop_assert!(
                    cc.cwnd() <= before || model_based(cfg),
                    "{name} step {step}: recovery exit grew cwnd"
                );
            }
            Op::EcnEcho {
                dt_us,
                flight_permille,
            } => {
                if in_recovery {
                    // The transport does not answer ECN-Echo in recovery.
                    trace.push((cc.cwnd(), cc.ssthresh()));
                    continue;
                }
                now += Dur::from_micros(dt_us.into());
                let in_flight = before * u64::from(flight_permille) / 1000;
                sent = sent.max(delivered + in_flight);
                cc.on_ecn_echo(&LossEvent { now, in_flight });
                let allowed = before.max(loss_may_raise_to(cfg, mss));
                prop_assert!(
                    cc.cwnd() <= allowed,
                    "{name} step {step}: ECN-Echo raised cwnd {before} -> {}",
                    cc.cwnd()
                );
            }
            Op::Timeout {
                dt_us,
                flight_permille,
            } => {
                now += Dur::from_micros(dt_us.into());
                let in_flight = before * u64::from(flight_permille) / 1000;
                cc.on_timeout(now, in_flight);
                in_recovery = false;
                prop_assert!(
                    cc.cwnd() <= mss,
                    "{name} step {step}: cwnd {} after timeout",
                    cc.cwnd()
                );
            }
            Op::Idle { minutes } => {
                now += Dur::from_secs(60 * u64::from(minutes));
            }
        }
        check_window(&cc, bound, step)?;
        trace.push((cc.cwnd(), cc.ssthresh()));
    }
    Ok(trace)
}

fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    // Keep `cargo test` fast; PROPTEST_CASES raises it for a deeper run.
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 256;
    }
    c
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_controller_keeps_its_invariants(sc in scenario()) {
        for &name in CcConfig::NAMES {
            let cfg = CcConfig::from_name(name).map_err(TestCaseError::fail)?;
            let first = run(&cfg, &sc)?;
            let second = run(&cfg, &sc)?;
            prop_assert_eq!(first, second, "{} is not deterministic", name);
        }
    }
}

/// The harness covers every canonical name (and thus every LEDBAT variant).
#[test]
fn names_cover_all_variants() {
    for want in [
        "newreno",
        "cubic",
        "vegas",
        "ledbat",
        "ledbat-utp",
        "ledbat++",
        "lp",
        "nice",
        "bbr",
        "dctcp",
    ] {
        assert!(CcConfig::NAMES.contains(&want), "{want}");
    }
}
