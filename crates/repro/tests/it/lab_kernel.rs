//! The papers' lab experiments on this machine's kernel. These tests need
//! root, iproute2 and the HTB/FIFO qdiscs (`hopwise lab check`), and take
//! real time, so they are ignored by default:
//! `cargo test -p hopwise-repro --features lab --test it -- --ignored lab_kernel::`.

use hopwise_experiment::{Opts, Reproduction};
use hopwise_experiment::{Silent, Verdict};
use hopwise_lab::topology::{self, PREFIX};
use hopwise_repro::pendulum::lab_fig1::{LabPendulum, Plan};
use std::sync::Mutex;

/// Fails unless every file in `files` exists in `out` and is not empty.
fn assert_written(out: &std::path::Path, files: &[&str]) {
    for f in files {
        let ok = out.join(f).metadata().map(|m| m.len() > 0).unwrap_or(false);
        assert!(ok, "{f} missing or empty in {}", out.display());
    }
}

/// The experiments run in real time and measure the machine: one at a time.
static REAL_TIME: Mutex<()> = Mutex::new(());

#[test]
#[ignore = "needs root and network namespaces; 40 s of real time"]
fn quick_pendulum_on_kernel_tcp_shows_the_collapse_and_cleans_up() {
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    topology::require().expect("the lab can run here");
    let out = std::env::temp_dir().join(format!("hopwise-lab-test-{}", std::process::id()));
    let plan = Plan {
        sim_seeds: 1,
        ..LabPendulum.plan(true, None)
    };
    let outcome = hopwise_experiment::run(&LabPendulum, &plan, &Opts::new(&out, true), &Silent)
        .expect("lab run");
    // The three Fig. 1 claims are judged on kernel TCP.
    let judged: Vec<_> = outcome
        .claims
        .iter()
        .filter(|c| c.verdict != Verdict::Info)
        .collect();
    assert_eq!(judged.len(), 3);
    for c in &judged {
        assert_eq!(c.verdict, Verdict::Holds, "{}: {}", c.claim, c.measured);
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let k = &summary["kernel_tcp"];
    let alone = k["download_alone_bps"].as_f64().unwrap();
    let with_upload = k["download_one_upload_bps"].as_f64().unwrap();
    assert!(alone > 0.9 * 2.4e6, "{alone}");
    assert!(with_upload < alone / 2.0, "{with_upload} against {alone}");
    // The uplink queue held data through the upload phase and dropped some.
    let up = &summary["queues"][1];
    assert_eq!(up["queue"], "uplink");
    assert!(up["mean_bytes"][1].as_f64().unwrap() > 10_000.0, "{up}");
    assert!(up["drops"].as_u64().unwrap() > 0, "{up}");
    assert_eq!(summary["simulator"].as_array().unwrap().len(), 3);
    assert_written(
        &out,
        &[
            "fig1.svg",
            "phases.svg",
            "goodput.csv",
            "queues.csv",
            "phases.csv",
        ],
    );
    // Nothing is left behind.
    let own = format!("{PREFIX}{}-", std::process::id());
    assert!(hopwise_lab::netns::list(&own).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[ignore = "needs root and network namespaces; 2 × 14 s of real time"]
fn ack_compression_capture_agrees_with_the_qdiscs() {
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use hopwise_repro::pendulum::lab_acks::{LabAckCompression, Plan};
    topology::require().expect("the lab can run here");
    let out = std::env::temp_dir().join(format!("hopwise-lab-acks-{}", std::process::id()));
    let plan = Plan {
        secs: 12,
        sim: false,
        ..LabAckCompression.plan(false, None)
    };
    let outcome =
        hopwise_experiment::run(&LabAckCompression, &plan, &Opts::new(&out, false), &Silent)
            .expect("lab run");
    assert_eq!(
        outcome
            .claims
            .iter()
            .filter(|c| c.verdict != Verdict::Info)
            .count(),
        3
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for c in summary["capture"].as_array().unwrap() {
        // Every departure was seen arriving, and the arrivals that never
        // left are exactly the buffers' drops.
        assert_eq!(c["unmatched"], 0, "{c}");
        assert_eq!(c["dropped_downlink"], c["tc_drops_downlink"], "{c}");
        assert_eq!(c["dropped_uplink"], c["tc_drops_uplink"], "{c}");
        // 12 s of two 2.4 Mbit/s directions: thousands of packets each way.
        assert!(c["packets_downlink"].as_u64().unwrap() > 2000, "{c}");
        assert!(c["packets_uplink"].as_u64().unwrap() > 2000, "{c}");
    }
    let cases = summary["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2, "kernel only");
    for c in cases {
        // Both directions near the link rate, and ACKs seen leaving both queues.
        for k in ["download_bps", "upload_bps"] {
            let v = c[k].as_f64().unwrap();
            assert!(v > 0.7 * 2.4e6, "{k} {v}: {c}");
        }
        assert!(c["median_burst"].as_u64().is_some(), "{c}");
    }
    assert_written(&out, &["acks.svg", "bursts.csv", "queues.csv"]);
    let own = format!("{PREFIX}{}-", std::process::id());
    assert!(hopwise_lab::netns::list(&own).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[ignore = "needs root and network namespaces; 2 × 60 s of real time"]
fn overlay_ack_prioritising_acks_at_b_keeps_a_to_b_going() {
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use hopwise_repro::overlay_ack::lab::{Options, OverlayAckLab};
    use hopwise_repro::overlay_ack::Mode;
    topology::require().expect("the lab can run here");
    let out = std::env::temp_dir().join(format!("hopwise-lab-oa-{}", std::process::id()));
    let plan = Options {
        secs: 60,
        modes: vec![Mode::Plain, Mode::AckPrio],
        sim_runs: 1,
        ..Options::new(true)
    };
    let opts = hopwise_experiment::Opts::new(&out, true);
    hopwise_experiment::run(&OverlayAckLab, &plan, &opts, &Silent).expect("lab run");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let modes = summary["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 2);
    let get = |m: &str, k: &str| {
        modes.iter().find(|x| x["mode"] == m).unwrap()[k]
            .as_f64()
            .unwrap()
    };
    // Alone, A→B fills its 10 Mbit/s link either way.
    for m in ["plain", "ackprio"] {
        assert!(
            get(m, "ab_phase1_bps") > 8e6,
            "{m}: {}",
            get(m, "ab_phase1_bps")
        );
    }
    // Once B→C fills B's uplink, A→B's ACKs wait behind its data in the
    // plain FIFO, not with ACKs first: A→B's RTT and goodput show it.
    assert!(
        get("plain", "ab_srtt_phase2_ms") > 2.0 * get("ackprio", "ab_srtt_phase2_ms"),
        "{summary}"
    );
    assert!(
        get("plain", "ab_phase2_bps") < 0.9 * get("ackprio", "ab_phase2_bps"),
        "{summary}"
    );
    // B→C kept B's uplink busy in both.
    for m in ["plain", "ackprio"] {
        assert!(get(m, "bc_phase2_bps") > 7e6, "{m}: {summary}");
    }
    assert_eq!(summary["simulator"].as_array().unwrap().len(), 2);
    assert_written(
        &out,
        &[
            "goodput.svg",
            "rtt.svg",
            "modes.svg",
            "goodput.csv",
            "queues.csv",
            "rtt.csv",
            "modes.csv",
            "report.html",
        ],
    );
    assert_eq!(summary["complete"], true);
    assert!(summary["modes_not_run"].as_array().unwrap().is_empty());
    let own = format!("{PREFIX}{}-", std::process::id());
    assert!(hopwise_lab::netns::list(&own).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[ignore = "needs root and network namespaces; a few seconds of real time"]
fn the_delay_line_delays_both_ways_and_loses_nothing_at_zero_loss() {
    use hopwise_lab::traffic::Clock;
    use hopwise_lab::wan::{link_addr, Wan, WanLink, WanNames, WanSpec};
    use std::time::Duration;
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    topology::require().expect("the lab can run here");
    let spec = WanSpec {
        hosts: vec!["a".into(), "b".into()],
        links: vec![WanLink {
            a: 0,
            b: 1,
            rtt: Duration::from_millis(60),
            loss: 0.0,
        }],
        initcwnd: None,
        sysctls: vec![],
        routes: vec![],
    };
    let clock = Clock::start();
    let wan = Wan::build(&WanNames::new_instance(&spec), &spec, 1, clock).unwrap();
    // A TCP handshake from a to b takes one round trip; the first also
    // waits for ARP across the line (one more).
    let enter = |ns: &hopwise_lab::netns::Netns| {
        let f = ns.open().unwrap();
        nix::sched::setns(f, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
    };
    let (bns, ans) = (wan.hosts[1].open().unwrap(), wan.hosts[0].open().unwrap());
    let listener = std::thread::spawn(move || {
        nix::sched::setns(bns, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let l = std::net::TcpListener::bind((link_addr(0, true), 5000)).unwrap();
        let mut kept = Vec::new();
        for _ in 0..6 {
            kept.push(l.accept().unwrap().0);
        }
    });
    let _ = enter;
    let rtts = std::thread::spawn(move || {
        nix::sched::setns(ans, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let to = std::net::SocketAddr::from((link_addr(0, true), 5000));
        let mut rtts = Vec::new();
        for _ in 0..6 {
            let t = clock.now_s();
            let mut tries = 0;
            let s = loop {
                match std::net::TcpStream::connect_timeout(&to, Duration::from_secs(3)) {
                    Ok(s) => break s,
                    // The listener may not be bound yet.
                    Err(_) if tries < 20 => {
                        tries += 1;
                        clock.sleep_until(clock.now_s() + 0.05);
                    }
                    Err(e) => panic!("connect: {e}"),
                }
            };
            rtts.push((clock.now_s() - t) * 1e3);
            drop(s);
        }
        rtts
    })
    .join()
    .unwrap();
    listener.join().unwrap();
    let stats = wan.finish().unwrap();
    let l = &stats[0];
    eprintln!("handshakes (ms): {rtts:.2?}\n{:?}\n{:?}", l.ab, l.ba);
    // After the first (ARP), each handshake takes the 60 ms round trip.
    for r in &rtts[1..] {
        assert!(
            (59.9..62.0).contains(r),
            "handshake {r:.2} ms on a 60 ms link: {rtts:?}"
        );
    }
    assert!(
        rtts[0] > 119.0,
        "the first handshake also resolves ARP: {rtts:?}"
    );
    for s in [&l.ab, &l.ba] {
        assert!(
            s.frames >= 12 && s.sent + s.in_flight_at_stop == s.frames,
            "{s:?}"
        );
        assert_eq!(
            s.lost + s.overflow + s.send_errors + s.socket_drops + s.too_big,
            0
        );
        assert!(s.late_max_us < 1000.0, "{s:?}");
    }
}

#[test]
#[ignore = "needs root and network namespaces; 30 s of real time"]
fn a_delayed_pendulum_point_runs_through_the_line_and_cleans_up() {
    use hopwise_repro::pendulum::lab_fig10::{LabPendulumFig10, Plan};
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    topology::require().expect("the lab can run here");
    let out = std::env::temp_dir().join(format!("hopwise-lab-fig10-test-{}", std::process::id()));
    let plan = Plan {
        secs: 30,
        sim_seeds: 1,
        ..LabPendulumFig10.plan(true, None)
    };
    let outcome =
        hopwise_experiment::run(&LabPendulumFig10, &plan, &Opts::new(&out, true), &Silent)
            .expect("lab run");
    // 30 s is too short for a verdict.
    assert!(outcome.claims.iter().all(|c| c.verdict == Verdict::Info));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true);
    let p = &summary["points"][0];
    let (xd, xu) = (
        p["kernel"]["download_bps"].as_f64().unwrap(),
        p["kernel"]["upload_bps"].as_f64().unwrap(),
    );
    // Both flows ran; the upload keeps the uplink queue occupied.
    assert!(xd > 300e3 && xu > 50e3, "{p}");
    assert!(
        p["queues"]["uplink_mean_bytes"].as_f64().unwrap() > 10_000.0,
        "{p}"
    );
    assert_eq!(p["simulator"].as_array().unwrap().len(), 3);
    // The line held the download's frames for the INET side's delay
    // (about 53 ms of a flow of at least 300 kbit/s is 2 kB and more;
    // without delay it would hold one frame at a time), and lost none.
    let links = p["links"].as_array().unwrap();
    assert_eq!(links.len(), 2);
    let held = links[0]["ab"]["max_held_bytes"].as_u64().unwrap();
    assert!(held > 2_000, "{}", links[0]);
    for l in links {
        for d in ["ab", "ba"] {
            let s = &l[d];
            assert!(s["frames"].as_u64().unwrap() > 100, "{s}");
            for k in ["lost", "overflow", "send_errors", "socket_drops", "too_big"] {
                assert_eq!(s[k], 0, "{k}: {s}");
            }
        }
    }
    assert_written(
        &out,
        &[
            "r.svg",
            "series.svg",
            "points.csv",
            "queues.csv",
            "goodput.csv",
            "links.csv",
        ],
    );
    let own = format!("{PREFIX}{}-", std::process::id());
    assert!(hopwise_lab::netns::list(&own).unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[ignore = "needs root and network namespaces; 20 s of real time"]
fn quick_bbr_cross_check_has_kernel_and_simulator_rows() {
    use hopwise_repro::kernel_check::{Check, LabCcCheck, Plan as CcPlan};
    let _one = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    topology::require().expect("the lab can run here");
    let out = std::env::temp_dir().join(format!("hopwise-lab-cc-check-{}", std::process::id()));
    let plan = CcPlan::new(Check::Bbr, true, Some(2));
    let outcome = hopwise_experiment::run(&LabCcCheck, &plan, &Opts::new(&out, true), &Silent)
        .expect("lab run");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let case = &summary["cases"][0];
    let k = &case["kernel"]["measured"];
    // The kernel's BBR fills the link and keeps the 4-BDP buffer far from full.
    let util = k["utilisation"].as_f64().unwrap();
    let delay = k["queue_delay_ms"].as_f64().unwrap();
    assert!(util > 0.8, "{k}");
    assert!(delay < 4.0 * 40.0, "{k}");
    // ss saw the sender, with BBR's own state.
    assert!(
        case["kernel"]["ss"][0]["bbr_bw_bps"].as_f64().unwrap() > 1e6,
        "{case}"
    );
    // Both simulator seeds ran, and the model's BBR fills the link too.
    let sim = case["sim"].as_array().unwrap();
    assert_eq!(sim.len(), 2);
    for s in sim {
        assert!(s["utilisation"].as_f64().unwrap() > 0.8, "{s}");
    }
    assert!(outcome
        .claims
        .iter()
        .any(|c| c.claim.contains("kernel beside simulator")));
    assert_written(
        &out,
        &[
            "summary.json",
            "report.html",
            "results.csv",
            "flows.csv",
            "queue.csv",
            "ss.csv",
            "queue.svg",
        ],
    );
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(csv.lines().any(|l| l.contains(",kernel,")), "{csv}");
    assert!(
        csv.lines().any(|l| l.contains(",simulator,defaults,2,")),
        "{csv}"
    );
    let _ = std::fs::remove_dir_all(&out);
    let own = format!("{PREFIX}{}-", std::process::id());
    assert!(hopwise_lab::netns::list(&own).unwrap().is_empty());
}
