//! Seed 002 §4 (backtap-circuit): must-show properties on shortened runs,
//! the helpers, and a tiny end-to-end run that writes summary.json.

use hopwise_experiment::stats::jain;
use hopwise_experiment::{Opts, Silent};
use hopwise_proto::time::Dur;
use hopwise_repro::backtap::circuit::{fig5, fig5_claims, latecomer, mux, *};
use hopwise_repro::backtap::common::{self, *};

/// A plan small enough for the test profile: one RTT, one run per point,
/// short measurements, no sensitivity runs.
fn tiny_plan() -> Plan {
    Plan {
        quick: true,
        fig5_rtts_ms: vec![100],
        fig5_seeds: 1,
        fig5_refill_variants: false,
        fig5_refill_seeds: 1,
        vanilla_secs: 15,
        vanilla_fit_from: 5,
        backtap_measure_secs: 10,
        ramp_rtts_ms: vec![],
        mux_rtt_ms: 120,
        mux_sensitivity_rtts_ms: vec![],
        mux_secs: 30,
        mux_seeds: 1,
        late_rtt_ms: 120,
        late_join_secs: 10,
        late_secs: 40,
        late_measure_secs: 10,
        late_seeds: 1,
        late_sensitivity: false,
        late_sensitivity_rtts_ms: vec![],
    }
}

fn variant(key: &str) -> Variant {
    common::variant(key).expect("known variant")
}

#[test]
fn backtap_fills_the_bottleneck_with_a_bounded_queue() {
    // Fig. 5 at 100 ms after ramp-up: rate, delay and the bottleneck's queue.
    let plan = tiny_plan();
    let v = variant("backtap");
    let (r, _) = fig5::run_point(&v, 100, 1, &plan, false).unwrap();
    assert_eq!(r.corrupt, 0);
    let payload = payload_rate(BACKTAP_CELL);
    assert!(
        r.rate >= 0.95 * payload,
        "rate {:.0} < 95 % of {payload:.0}",
        r.rate
    );
    assert!(
        r.delay_ms >= 50.0 && r.delay_ms <= 80.0,
        "delay {:.1} ms not in [RTT/2, RTT/2 + 30 ms]",
        r.delay_ms
    );
    // α–β band plus one 10 ms refill of 519-byte cells.
    let hi = BETA as f64 + C as f64 * 0.010 / BACKTAP_CELL;
    assert!(
        r.bottleneck_queue_cells >= ALPHA as f64 && r.bottleneck_queue_cells <= hi,
        "mean queue {:.1} cells outside [{ALPHA}, {hi:.1}]",
        r.bottleneck_queue_cells
    );
    // No end-to-end window, yet the backlog stays near rate × RTT/2.
    assert!(r.backlog < 0.2 * payload, "backlog {:.0} B", r.backlog);
    // The delay above RTT/2 is the wait at the middle: its time-averaged
    // queue is that wait times the rate. (Sampled at the 10 ms refill
    // period, the queue would read one phase of the refill cycle instead.)
    let waiting = (r.delay_ms - 50.0) / 1e3 * r.rate / 498.0;
    assert!(
        (r.bottleneck_queue_cells - waiting).abs() <= 5.0,
        "mean queue {:.1} cells, delay over RTT/2 worth {waiting:.1} cells",
        r.bottleneck_queue_cells
    );
}

#[test]
fn a_late_comer_with_shared_base_rtt_ends_at_the_first_circuits_rate() {
    // The late-comer at nstor's 120 ms RTT and 10 ms refill.
    let plan = Plan {
        late_join_secs: 10,
        late_secs: 60,
        late_measure_secs: 10,
        ..tiny_plan()
    };
    let cfg = latecomer::configs(&plan)
        .into_iter()
        .find(|c| c.headline && c.shared)
        .expect("the headline setting with shared baseRtt");
    assert_eq!(cfg.rtt_ms, 120);
    let r = latecomer::run_one(&cfg, &plan, 1).unwrap();
    let total = r.rate_first + r.rate_late;
    let payload = payload_rate(BACKTAP_CELL);
    let rates = (r.rate_first, r.rate_late);
    assert!(total >= 0.95 * payload, "rates {rates:?}");
    let ratio = r.rate_late.min(r.rate_first) / r.rate_late.max(r.rate_first);
    assert!(ratio >= 0.9, "min/max {ratio:.3}: rates {rates:?}");
}

#[test]
fn vanilla_backlog_is_bounded_by_the_window_and_plateaus_near_350_kb() {
    let plan = tiny_plan();
    let (r, _) = fig5::run_point(&variant("vanilla-circuit"), 60, 2, &plan, false).unwrap();
    assert_eq!(r.corrupt, 0);
    assert!(r.max_backlog <= 1000 * 498, "{}", r.max_backlog);
    assert!(
        r.rate >= 0.95 * payload_rate(VANILLA_CELL),
        "rate {:.0}",
        r.rate
    );
    assert!(
        (r.backlog / 350e3 - 1.0).abs() <= 0.15,
        "backlog {:.0} B",
        r.backlog
    );
    let (s, _) = fig5::run_point(&variant("vanilla-stream"), 60, 2, &plan, false).unwrap();
    assert!(s.max_backlog <= 500 * 498, "{}", s.max_backlog);
}

#[test]
fn tor_vegas_is_measured_after_its_ramp_and_its_queue_is_counted_at_the_middle() {
    // At 683 ms Tor Vegas needs about 16 s to reach the payload rate; its
    // runs are lengthened by 80 RTTs so the fit starts after that.
    let plan = tiny_plan();
    let v = variant("tor-vegas");
    let (dur, from) = fig5::lengths(&v, Dur::from_millis(683), &plan);
    let extra = (fig5::END_TO_END_RAMP_RTTS * 0.683).ceil() as u64;
    assert_eq!(from, Dur::from_secs(plan.vanilla_fit_from + extra));
    assert_eq!(dur, Dur::from_secs(plan.vanilla_secs + extra));
    let (r, _) = fig5::run_point(&v, 683, 1, &plan, false).unwrap();
    assert_eq!(r.corrupt, 0);
    assert!(
        r.ramp_s + r.start_s <= r.fit_from_s,
        "ramp {:.1} s ends after the fit starts at {} s",
        r.ramp_s,
        r.fit_from_s
    );
    let payload = payload_rate(VANILLA_CELL);
    assert!(r.rate >= 0.95 * payload, "rate {:.0}", r.rate);
    // Its backlog waits in the middle's TCP buffers, not in a circuit
    // queue; what the middle holds must account for the delay above RTT/2.
    let waiting = (r.delay_ms - 683.0 / 2.0) / 1e3 * r.rate / 498.0;
    assert!(
        waiting >= 20.0,
        "delay {:.1} ms: no standing queue",
        r.delay_ms
    );
    assert!(
        (r.bottleneck_queue_cells - waiting).abs() <= 0.15 * waiting,
        "middle holds {:.1} cells, delay over RTT/2 worth {waiting:.1} cells",
        r.bottleneck_queue_cells
    );
}

#[test]
fn multiplexing_vanilla_is_unfair_backtap_is_fair() {
    let cfgs = mux::configs();
    let get = |k: &str| cfgs.iter().find(|c| c.key == k).unwrap().clone();
    let v = mux::run_one(&get("vanilla"), 120, 1, 30).unwrap();
    let b = mux::run_one(&get("backtap"), 120, 1, 30).unwrap();
    assert!(v.jain <= 0.5, "vanilla Jain {:.3}: {:?}", v.jain, v.rates);
    assert!(b.jain >= 0.95, "BackTap Jain {:.3}: {:?}", b.jain, b.rates);
    // Circuit A alone on its connection gets about what the other nine get together.
    let others: f64 = v.rates[1..].iter().sum();
    assert!(v.rates[0] > 0.5 * others, "{:?}", v.rates);
}

#[test]
fn helpers() {
    assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
    assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    let (a, b, r2) = fig5_claims::linear_fit(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]).unwrap();
    assert!((a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12 && (r2 - 1.0).abs() < 1e-12);
    // The linear start-up takes C/519 · (RTT/3)² seconds: ≈ 260 s at 900 ms.
    let t = ramp_estimate(Dur::from_millis(900), BACKTAP_CELL);
    assert!((t - 260.1).abs() < 1.0, "{t}");
    let plan = Plan::quick(None);
    let bt = variant("backtap");
    let (d, from) = fig5::lengths(&bt, Dur::from_millis(900), &plan);
    assert!(from.as_secs_f64() > t && d > from);
    let (d, from) = fig5::lengths(&variant("vanilla-circuit"), Dur::from_millis(900), &plan);
    assert_eq!((d, from), (Dur::from_secs(30), Dur::from_secs(10)));
    // The paper's three curves come first; refill variants follow.
    let keys: Vec<&str> = variants()
        .iter()
        .filter(|v| v.main)
        .map(|v| v.key)
        .collect();
    assert_eq!(keys, ["vanilla-circuit", "vanilla-stream", "backtap"]);
    // Start offsets are per run and circuit, in [0.1, 1) s.
    let a = start_offset(1, "c0", Dur::ZERO);
    assert_eq!(a, start_offset(1, "c0", Dur::ZERO));
    assert_ne!(a, start_offset(2, "c0", Dur::ZERO));
    assert!(a >= Dur::from_millis(100) && a < Dur::from_secs(1));
    assert_eq!(w_rate(&[0, 10, 20, 30], 0.5, 0.0, 1.5), 20.0);
}

#[test]
fn tiny_run_writes_summary_with_the_required_keys() {
    let dir = std::env::temp_dir().join(format!("hopwise-backtap-circuit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = Opts {
        jobs: 2,
        ..Opts::new(&dir, true)
    };
    let out = hopwise_experiment::run(&BacktapCircuit, &tiny_plan(), &opts, &Silent).unwrap();
    assert!(!out.claims.is_empty());
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let fig5 = s["fig5"].as_array().unwrap();
    assert_eq!(fig5.len(), 3, "three curves at one RTT");
    for row in fig5 {
        for k in [
            "transport",
            "window",
            "rtt_ms",
            "rate_Bps",
            "backlog_B",
            "delay_ms",
        ] {
            assert!(!row[k].is_null(), "fig5 row without {k}: {row}");
        }
    }
    let transports: Vec<&str> = fig5
        .iter()
        .map(|r| r["transport"].as_str().unwrap())
        .collect();
    assert!(transports.contains(&"vanilla") && transports.contains(&"backtap"));
    let mf = s["mux_fairness"].as_object().unwrap();
    for t in ["vanilla", "backtap"] {
        let j = mf[t].as_f64().unwrap();
        assert!(j > 0.0 && j <= 1.0 + 1e-9, "{t}: {j}");
    }
    let lc = s["latecomer"].as_array().unwrap();
    assert_eq!(lc.len(), 2);
    let shared: Vec<bool> = lc
        .iter()
        .map(|r| r["shared_base_rtt"].as_bool().unwrap())
        .collect();
    assert!(shared.contains(&true) && shared.contains(&false));
    assert!(lc.iter().all(|r| r["rate_ratio"].as_f64().unwrap() > 0.0));
    for f in [
        "fig5.svg",
        "fig5.csv",
        "mux.svg",
        "latecomer.svg",
        "latecomer.csv",
    ] {
        assert!(dir.join(f).exists(), "{f} missing");
        assert!(out.files.iter().any(|x| x == f), "{f} not listed");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
