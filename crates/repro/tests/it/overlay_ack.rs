//! `hopwise reproduce overlay-ack` (seed 000) on shortened setups: the
//! collapse without prioritisation and its fix, the dynamic split policy's
//! splits and merges, and the outputs of a quick run.

use hopwise_experiment::{Opts, Silent, Verdict};
use hopwise_proto::time::Time;
use hopwise_repro::overlay_ack::{
    mean_between, DynPolicy, Mode, OverlayAck, OverlayNode, Params, PeerPlan, PolicyEventKind,
    Setup, Timeline,
};
use hopwise_sim::Sim;

/// The paper's timeline at 40 %: A→B 0–100 s, B→C 20–120 s.
fn short(mode: Mode, seed: u64) -> Setup {
    let mut s = Setup::paper(mode, seed);
    s.timeline = Timeline::scaled(0.4);
    s
}

fn ratio(mode: Mode, seed: u64) -> (f64, f64) {
    let s = short(mode, seed);
    let r = s.run().expect("run");
    assert_eq!(r.corrupt, 0);
    let (p1, p2) = (s.timeline.phase1(), s.timeline.phase2());
    let a = mean_between(&r.ab, p1.0, p1.1);
    let b = mean_between(&r.ab, p2.0, p2.1);
    (b / a, mean_between(&r.bc, p2.0, p2.1))
}

#[test]
fn plain_collapses_and_ack_priority_fixes_it() {
    for seed in [1, 2] {
        let (plain, _) = ratio(Mode::Plain, seed);
        let (prio, bc) = ratio(Mode::AckPrio, seed);
        assert!(
            plain <= 0.8,
            "seed {seed}: without prioritisation A→B keeps {plain:.2} of its rate"
        );
        assert!(
            prio >= 0.9,
            "seed {seed}: with ACKs first A→B keeps only {prio:.2} of its rate"
        );
        // B→C near the throttled link: 0.95 × 10 Mbit/s × 1448/1500 = 9.17 Mbit/s.
        assert!(bc >= 0.9 * 9.17e6, "seed {seed}: B→C {bc:.0} bit/s");
    }
}

#[test]
fn dynamic_policy_splits_and_merges() {
    // Only the A–B pair: A writes 0–60 s, B writes back 0–15 s. The policy
    // should split once both directions are busy, and merge once B's
    // direction has been idle for `idle` (20 s), with A's stream continuing
    // on the primary connection, in order.
    let mut s = Setup::paper(Mode::SplitDynamic, 7);
    s.timeline = Timeline {
        ab: (0.0, 60.0),
        bc: (65.0, 65.0),
        duration: 65.0,
        jitter: 0.0,
        warmup: 5.0,
    };
    let sc = s.scenario();
    let mut sim = Sim::new(&sc).expect("sim");
    let at = |x: f64| Time::from_secs_f64(x);
    let policy = DynPolicy::default();
    let a = sim
        .add_agent(
            "A",
            "overlay/A",
            Time::ZERO,
            Box::new(OverlayNode::new(
                "A",
                vec![PeerPlan {
                    peer: "B".into(),
                    decider: true,
                    start: at(0.0),
                    stop: at(60.0),
                }],
                s.tcp.clone(),
                s.cc.clone(),
                policy.clone(),
            )),
        )
        .expect("agent A");
    let b = sim
        .add_agent(
            "B",
            "overlay/B",
            Time::ZERO,
            Box::new(OverlayNode::new(
                "B",
                vec![PeerPlan {
                    peer: "A".into(),
                    decider: false,
                    start: at(0.0),
                    stop: at(15.0),
                }],
                s.tcp.clone(),
                s.cc.clone(),
                policy.clone(),
            )),
        )
        .expect("agent B");
    sim.run();
    let na: &OverlayNode = sim.agent(a).expect("A");
    let nb: &OverlayNode = sim.agent(b).expect("B");
    let kinds: Vec<(PolicyEventKind, f64)> = na.events.iter().map(|e| (e.kind, e.t)).collect();
    assert!(
        matches!(kinds.as_slice(), [(PolicyEventKind::Split, t1), (PolicyEventKind::Merge, t2)]
            if *t1 < 8.0 && *t2 > 35.0 && *t2 < 40.0),
        "events: {:?}",
        na.events
    );
    assert!(na.events[1].reason.contains("peer"), "{:?}", na.events[1]);
    assert_eq!(na.corrupt() + nb.corrupt(), 0, "streams arrive in order");
    // A's stream kept flowing after the merge, on the primary.
    let ab = nb.incoming_bps("A", sim.end_time());
    let after = mean_between(&ab, 45.0, 60.0);
    assert!(after > 8e6, "A→B after the merge: {after:.0} bit/s");
    // B's 15 s of data arrived.
    assert!(
        na.received_from("B") > 10_000_000,
        "{}",
        na.received_from("B")
    );
}

#[test]
fn quick_run_writes_summary_and_figures() {
    let dir = std::env::temp_dir().join(format!("hopwise-overlay-ack-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut params = Params::quick(1);
    // 20 % of the paper's timeline: A→B 0–50 s, B→C 10–60 s.
    params.base.timeline = Timeline::scaled(0.2);
    let opts = Opts {
        seeds: Some(1),
        jobs: 2,
        ..Opts::new(&dir, true)
    };
    let outcome = hopwise_experiment::run(&OverlayAck, &params, &opts, &Silent).expect("run");
    assert!(!outcome.claims.is_empty());
    // One run per mode: every value is exact, so every claim is decided.
    assert!(outcome
        .claims
        .iter()
        .all(|c| c.verdict != Verdict::Inconclusive));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let modes = v["modes"].as_array().expect("modes");
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        Mode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>()
    );
    for m in modes {
        for key in [
            "ab_phase1_bps",
            "ab_phase2_bps",
            "ab_phase2_cov",
            "bc_phase2_bps",
            "var_10s",
        ] {
            assert!(m[key].is_number(), "{}: {key} = {}", m["mode"], m[key]);
        }
    }
    // The bootstrapped ratio pools the same samples as the modes' var_10s;
    // with one run every resample is that run.
    let var = |name: &str| {
        modes.iter().find(|m| m["mode"] == name).unwrap()["var_10s"]
            .as_f64()
            .unwrap()
    };
    let r = &v["var_10s_ratio"];
    let ratio = r["ratio"].as_f64().unwrap();
    let want = var("bidir-ackprio") / var("split-ackprio");
    assert!((ratio - want).abs() <= 1e-9 * want, "{ratio} vs {want}");
    for end in r["ci90"].as_array().unwrap() {
        assert!((end.as_f64().unwrap() - ratio).abs() <= 1e-9 * ratio, "{r}");
    }
    for f in [
        "fig2a.svg",
        "fig2b.svg",
        "fig2b_packets.csv",
        "fig3.svg",
        "fig5.svg",
        "fig6.svg",
        "fig7.svg",
        "fig8.svg",
        "fig9.svg",
        "split_dynamic.svg",
        "goodput_10s.csv",
        "goodput_1s.csv",
        "runs.csv",
        "splits.csv",
        "report.html",
    ] {
        assert!(dir.join(f).exists(), "{f} missing");
        assert!(outcome.files.iter().any(|x| x == f), "{f} not listed");
    }
    // Fig. 2b per packet: the counts in the summary are the CSV's; ACKs
    // towards A leave the switch in order, so their offsets never fall; and
    // the last one acknowledges nothing beyond the data A has sent (both
    // directions' offsets share one origin).
    let f2 = &v["fig2b"];
    let csv = std::fs::read_to_string(dir.join("fig2b_packets.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let count = |seg: &str, retx: &str| {
        rows.iter()
            .filter(|r| r[1] == seg && (retx.is_empty() || r[5] == retx))
            .count() as u64
    };
    assert!(count("data", "0") > 1000, "{f2}");
    assert!(count("ack", "") > 500, "{f2}");
    assert_eq!(f2["captured_data_segments"], count("data", ""));
    assert_eq!(f2["captured_retransmissions"], count("data", "1"));
    assert_eq!(f2["captured_acks"], count("ack", ""));
    let highest_sent = rows
        .iter()
        .filter(|r| r[1] == "data")
        .map(|r| r[2].parse::<i64>().unwrap() + r[3].parse::<i64>().unwrap())
        .max()
        .unwrap();
    let acks: Vec<i64> = rows
        .iter()
        .filter(|r| r[1] == "ack")
        .map(|r| r[4].parse().unwrap())
        .collect();
    assert_eq!(acks[0], 0, "offsets start at the first ACK");
    assert!(acks.windows(2).all(|w| w[0] <= w[1]));
    assert!(*acks.last().unwrap() <= highest_sent);
    assert!(*acks.last().unwrap() > 1_000_000, "A→B made progress");
    assert!(f2["longest_ack_gap_s"].as_f64().unwrap() > 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}
