//! Quick checks of the `ledbat-flow` reproduction (seed 003): shortened runs
//! of its scenarios that must already show the paper's key properties, and
//! a miniature `run` that must write every required `summary.json` key.

use hopwise_experiment::{Opts, Silent, Verdict};
use hopwise_proto::time::Dur;
use hopwise_repro::ledbat::flow::{
    self as ledbat_flow, cc, simulate, tcp_ns2, FlowDef, LedbatFlow, Params, Path, RunSpec,
};

fn run(flows: Vec<FlowDef>, secs: u64, jitter_ms: u64, trace: bool) -> ledbat_flow::RunResult {
    simulate(&RunSpec {
        name: "test".into(),
        path: Path::FIG4,
        flows,
        duration: Dur::from_secs(secs),
        seed: 1,
        jitter: Dur::from_millis(jitter_ms),
        tcp: tcp_ns2(),
        warmup: Dur::ZERO,
        trace: trace.then_some(Dur::SECOND),
    })
}

/// Fig. 6 at τ1/τ2 = 1.2: the flow with the smaller target is pushed down to
/// its minimum window within seconds and ends with at most 15 % of the link.
#[test]
fn fig6_larger_target_starves_the_smaller() {
    let r = run(
        vec![
            FlowDef::new("tau1", cc("ledbat", &[("target", "120ms")])),
            FlowDef::new("tau2", cc("ledbat", &[("target", "100ms")])),
        ],
        50,
        0,
        true,
    );
    let end = r.share_between(1, 35.0, 50.0);
    assert!(end <= 0.15, "smaller-target share at the end: {end:.3}");
    assert!(r.utilization >= 0.9, "utilisation {:.3}", r.utilization);
    // Equal targets started together share fairly.
    let fair = run(
        vec![
            FlowDef::new("a", cc("ledbat", &[])),
            FlowDef::new("b", cc("ledbat", &[])),
        ],
        50,
        0,
        false,
    );
    assert!(
        (fair.share(1) - 0.5).abs() < 0.1,
        "share {:.3}",
        fair.share(1)
    );
}

/// A reduced Fig. 4 point: one NewReno flow keeps most of the link against
/// five LEDBAT flows and against five NICE flows, and the link stays busy.
#[test]
fn fig4_newreno_dominates_low_priority_flows() {
    for (proto, min_share) in [("ledbat", 0.7), ("nice", 0.5)] {
        let mut flows = vec![FlowDef::new("newreno", cc("newreno", &[]))];
        for i in 0..5 {
            flows.push(FlowDef::new(format!("{proto}{i}"), cc(proto, &[])));
        }
        let r = run(flows, 60, 100, false);
        assert!(
            r.share(0) >= min_share,
            "{proto}: NewReno share {:.3}",
            r.share(0)
        );
        assert!(
            r.utilization >= 0.9,
            "{proto}: utilisation {:.3}",
            r.utilization
        );
    }
}

/// Fig. 4(b)'s reference: after the start-up (from 30 s on) the loss rate of
/// N+1 NewReno flows grows with N, while over the whole run NewReno's slow-
/// start overshoot dominates it. Ten LEDBAT flows add far fewer losses than
/// ten NewReno flows.
#[test]
fn fig4_steady_loss_grows_with_newreno_flows() {
    let flows = |proto: &str, n: usize| {
        let mut f = vec![FlowDef::new("newreno", cc("newreno", &[]))];
        f.extend((0..n).map(|i| FlowDef::new(format!("{proto}{i}"), cc(proto, &[]))));
        f
    };
    let one = run(flows("newreno", 1), 120, 100, false);
    let ten = run(flows("newreno", 10), 120, 100, false);
    let led = run(flows("ledbat", 10), 120, 100, false);
    assert!(
        ten.steady_loss_rate > 3.0 * one.steady_loss_rate && ten.steady_loss_rate > 0.005,
        "steady loss, 2 NewReno {:.5}, 11 NewReno {:.5}",
        one.steady_loss_rate,
        ten.steady_loss_rate
    );
    assert!(
        led.steady_loss_rate < 0.25 * ten.steady_loss_rate,
        "steady loss, 10 LEDBAT {:.5}, 10 NewReno {:.5}",
        led.steady_loss_rate,
        ten.steady_loss_rate
    );
    // The whole-run rate includes the start-up's losses.
    assert!(one.loss_rate > one.steady_loss_rate);
}

/// Fig. 5, region II: with τ at 30 % of the buffer delay LEDBAT yields.
#[test]
fn fig5_low_priority_region() {
    let tau = format!("{}ms", (0.3 * Path::FIG4.buffer_delay_ms()).round());
    let r = run(
        vec![
            FlowDef::new("newreno", cc("newreno", &[])),
            FlowDef::new("ledbat", cc("ledbat", &[("target", tau.as_str())])),
        ],
        60,
        100,
        false,
    );
    assert!(r.share(0) >= 0.8, "NewReno share {:.3}", r.share(0));
}

/// A miniature `run` writes summary.json with every key the issue requires,
/// the CSVs and the SVG figures.
#[test]
fn run_writes_summary_with_required_keys() {
    let out = std::env::temp_dir().join(format!("hopwise-ledbat-flow-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Opts {
        jobs: 2,
        ..Opts::new(&out, true)
    };
    let p = Params {
        fig2_secs: 5,
        fig4_ns: vec![1, 2],
        fig4_protocols: ledbat_flow::LOW_PRIORITY.to_vec(),
        fig4_secs: 20,
        fig4_seeds: 2,
        fig4_variant_ns: vec![2],
        fig5_rel: vec![0.3, 0.5, 1.0, 1.5],
        fig5_secs: 20,
        fig5_seeds: 1,
        fig5_long_rel: vec![1.0],
        fig5_long_secs: 30,
        fig6_ratios: vec![1.0, 1.2],
        fig6_secs: 30,
        fig6_jitter_seeds: 1,
        late_flows: 2,
        late_gap_secs: 5,
        late_secs: 20,
        late_seeds: 1,
        late_10m: false,
    };
    let outcome = hopwise_experiment::run(&LedbatFlow, &p, &opts, &Silent).expect("run");
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let has = |key: &str, fields: &[&str]| {
        let list = v[key]
            .as_array()
            .unwrap_or_else(|| panic!("`{key}` is a list"));
        assert!(!list.is_empty(), "`{key}` is empty");
        for row in list {
            for f in fields {
                assert!(row.get(*f).is_some(), "`{key}` row lacks `{f}`: {row}");
            }
        }
    };
    has(
        "fig4",
        &[
            "protocol",
            "n",
            "tcp_share",
            "tcp_share_min",
            "tcp_share_max",
            "utilization",
            "loss_rate",
        ],
    );
    has("fig5", &["target_ms", "tcp_share", "utilization"]);
    has(
        "fig6",
        &[
            "target_ratio",
            "small_target_share",
            "utilization",
            "mean_queue_norm",
        ],
    );
    has("latecomer", &["variant", "jain"]);
    let fig4 = v["fig4"].as_array().unwrap();
    for proto in ["ledbat", "nice", "vegas", "lp", "newreno"] {
        assert!(
            fig4.iter().any(|r| r["protocol"] == proto),
            "fig4 lacks {proto}"
        );
    }
    let variants: Vec<&str> = v["latecomer"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["variant"].as_str())
        .collect();
    assert_eq!(variants, ["rfc6817", "utp", "ledbat++"]);
    assert!(outcome
        .claims
        .iter()
        .any(|c| c.verdict != Verdict::Info && c.figure == "Fig. 6"));
    // Fig. 4 under both controller profiles, and the paper-setup rows: each
    // protocol from the variant that runs its constants.
    for fig in ["Fig. 4 (RFC 6817 profile)", "Fig. 4 (paper-setup profile)"] {
        assert!(
            outcome
                .claims
                .iter()
                .any(|c| c.figure == fig && c.verdict != Verdict::Info),
            "no claim of {fig}"
        );
    }
    let paper: Vec<(&str, &str)> = v["fig4_paper_setup"]
        .as_array()
        .expect("fig4_paper_setup")
        .iter()
        .map(|r| {
            (
                r["protocol"].as_str().unwrap(),
                r["variant"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        paper,
        [
            ("ledbat", "ledbat-min-cwnd-1"),
            ("nice", "vegas-alpha1-beta3"),
            ("vegas", "vegas-alpha1-beta3"),
            ("lp", "lp-linux")
        ]
    );
    let profiles = v["setup"]["profiles"].as_array().expect("profiles");
    assert_eq!(profiles[1]["name"], "paper-setup");
    assert!(profiles[1]["constants"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["source"].as_str().is_some_and(|s| !s.is_empty())));
    for f in &outcome.files {
        let meta = std::fs::metadata(out.join(f)).unwrap_or_else(|_| panic!("{f} missing"));
        assert!(meta.len() > 0, "{f} is empty");
    }
    for f in [
        "fig2_cwnd.svg",
        "fig4.svg",
        "fig5.svg",
        "fig6.svg",
        "latecomer.svg",
        "fig4.csv",
    ] {
        assert!(outcome.files.iter().any(|x| x == f), "{f} not listed");
    }
    let _ = std::fs::remove_dir_all(&out);
}
