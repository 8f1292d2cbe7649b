//! Seed 004 (data pendulum): the model against hand-computed values, short
//! simulations of the must-show properties, and a tiny end-to-end run.

use hopwise_experiment::{Opts, Silent};
use hopwise_models::pendulum::{self, Params};
use hopwise_proto::time::Dur;
use hopwise_repro::pendulum::*;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

/// The paper's link at Tp = 100 ms (RTT 200 ms), Bd = 30 000 B, Bu = 15 000 B.
fn paper_point() -> Params {
    Params::adsl(0.2, 30_000.0, 15_000.0)
}

#[test]
fn eq11_matches_hand_computation() {
    let p = paper_point();
    // P_d = 300 000 B/s · 0.2 s, P_u = 24 500 B/s · 0.2 s.
    assert!(close(p.p_down(), 60_000.0, 1e-12) && close(p.p_up(), 4_900.0, 1e-12));
    // gamma = 90 000 / 19 900; rho = 52/1500; delayed ACKs: rho' = rho/2.
    assert!(close(p.gamma(), 90_000.0 / 19_900.0, 1e-12));
    assert!(close(p.rho(), 52.0 / 1500.0, 1e-12));
    assert!(close(p.rho_eff(), 26.0 / 1500.0, 1e-12));
    // (gamma - 0.013) / (1 - 0.013 gamma), by hand: 4.791313.
    assert!(close(p.ratio(), 4.791_313_4, 1e-7), "{}", p.ratio());
    assert!(close(p.ratio_approx(), 4.805_125_5, 1e-7));
    // Without delayed ACKs, 3/4 rho = 0.026: 5.095820.
    let q = Params {
        delayed_ack: false,
        ..p
    };
    assert!(close(q.ratio(), 5.095_820_0, 1e-7), "{}", q.ratio());
    assert!(close(p.capacity_ratio(), 2400.0 / 196.0, 1e-12));
}

#[test]
fn eq11_inverse_is_consistent() {
    for &(bd, bu, rtt) in &[
        (30_000.0, 15_000.0, 0.2),
        (120_000.0, 6_000.0, 0.04),
        (60_000.0, 45_000.0, 0.2),
    ] {
        for delayed_ack in [true, false] {
            let p = Params {
                delayed_ack,
                ..Params::adsl(rtt, bd, bu)
            };
            let r = p.ratio();
            let g = pendulum::gamma_for_ratio(r, p.rho_eff());
            assert!(close(g, p.gamma(), 1e-12));
            let back = p.up_buffer_for_ratio(r).unwrap();
            assert!((back - bu).abs() < 1e-6, "{back} vs {bu}");
            // The paper's reciprocal relation inverts the approximate form.
            let ra = p.ratio_approx();
            assert!(close(
                pendulum::gamma_for_ratio_approx(ra, p.rho_eff()),
                p.gamma(),
                1e-12
            ));
        }
    }
    // A target above what an empty uplink buffer gives is refused.
    let p = paper_point();
    assert!(matches!(
        p.up_buffer_for_ratio(1e4),
        Err(pendulum::SizingError::Unreachable { .. })
    ));
    assert!(p.up_buffer_for_ratio(-1.0).is_err());
}

#[test]
fn eq6_to_10_fixed_point() {
    // Without delayed ACKs: W_d = (A - cU)/(1 - c^2), W_u = (U - cA)/(1 - c^2),
    // A = 3/4 (B_d + P_d) = 67 500, U = 3/4 (B_u + P_u) = 14 925, c = 0.026.
    let p = Params {
        delayed_ack: false,
        ..paper_point()
    };
    let w = p.solve();
    assert!(close(w.cwnd_down, 67_157.348_367, 1e-8), "{}", w.cwnd_down);
    assert!(close(w.cwnd_up, 13_178.908_942, 1e-8), "{}", w.cwnd_up);
    assert!(close(w.ratio, p.ratio(), 1e-9));
    // B*_u = B_u - rho' W_d (Eq. 8).
    assert!(close(w.b_star_up, 15_000.0 - p.rho() * w.cwnd_down, 1e-9));
    // B_TCP binds for the download: W_d = B_TCP, W_u = 3/4 (B_u - rho' B_TCP + P_u).
    let c = Params {
        tcp_buffer: 40_000.0,
        ..paper_point()
    };
    let w = c.solve();
    assert!(w.down_at_tcp_buffer && !w.up_at_tcp_buffer);
    assert!(close(w.cwnd_down, 40_000.0, 1e-12));
    assert!(close(w.cwnd_up, 14_405.0, 1e-9), "{}", w.cwnd_up);
}

#[test]
fn ack_compression_only_with_exact_symmetry() {
    // Fig. 3: equal delays, no delayed ACKs: long ACK bursts, queues in phase.
    let s = ack_setup(20, false, Dur::from_millis(1));
    let sim = simulate(&s, "a").unwrap();
    let a = ack_measure(&sim, &s, "a", "Fig. 3");
    assert!(a.median_burst.unwrap() >= 5, "{:?}", a.median_burst);
    assert!(a.queue_correlation.unwrap() > 0.0);
    // Fig. 5: 1 ms / 5 ms: short bursts, queues alternate.
    let s = ack_setup(20, false, Dur::from_millis(5));
    let sim = simulate(&s, "c").unwrap();
    let c = ack_measure(&sim, &s, "c", "Fig. 5");
    assert!(c.median_burst.unwrap() <= 2, "{:?}", c.median_burst);
    assert!(
        c.queue_correlation.unwrap() < 0.0,
        "{:?}",
        c.queue_correlation
    );
}

#[test]
fn fig1_download_collapses_under_an_upload() {
    let sim = simulate(&fig1_setup(1), "fig1").unwrap();
    let m = fig1_measure(&sim, 1);
    assert!(m.download_bps_no_upload >= 0.9 * 2.4e6, "{m:?}");
    assert!(
        m.download_bps_one_upload <= 3.0 * m.upload_bps_one_upload,
        "{m:?}"
    );
    assert!(
        m.download_bps_two_uploads <= 3.0 * m.upload_bps_two_uploads,
        "{m:?}"
    );
}

#[test]
fn tiny_run_writes_summary() {
    let out = std::env::temp_dir().join(format!("hopwise-pendulum-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Opts {
        jobs: 2,
        ..Opts::new(&out, true)
    };
    let plan = Plan {
        quick: true,
        fig1_seeds: 1,
        ack_secs: 15,
        ack_sensitivity: false,
        asym_secs: 20,
        fig10_secs: 60,
        fig10_seeds: 1,
        fig10_tp_ms: vec![100],
        fig10_down_buffers: vec![60_000],
        fig10_up_buffers: vec![15_000, 30_000],
        fig11_secs: 60,
        fig11_seeds: 1,
        fig11_tp_ms: vec![100],
        fig11_up_packets: vec![5, 50],
        sizing_demo: false,
    };
    let outcome = hopwise_experiment::run(&Pendulum, &plan, &opts, &Silent).unwrap();
    assert!(!outcome.claims.is_empty());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for k in [
        "download_bps_no_upload",
        "download_bps_one_upload",
        "download_bps_two_uploads",
    ] {
        assert!(v["fig1"][k].as_f64().unwrap() > 0.0, "fig1.{k}");
    }
    let ack = v["ack_bursts"].as_array().unwrap();
    assert_eq!(ack.len(), 4);
    for c in ack {
        assert!(
            c["median_burst"].is_u64() && c["queue_correlation"].is_f64(),
            "{c}"
        );
    }
    let f10 = v["fig10"].as_array().unwrap();
    assert_eq!(f10.len(), 2);
    for r in f10 {
        for k in [
            "tp_ms",
            "down_buffer_bytes",
            "up_buffer_bytes",
            "r_sim",
            "r_model",
        ] {
            assert!(r[k].is_number(), "fig10.{k}: {r}");
        }
    }
    let f11 = v["fig11"].as_array().unwrap();
    assert_eq!(f11.len(), 4);
    for r in f11 {
        assert!(r["up_buffer_packets"].is_u64() && r["delayed_ack"].is_boolean());
        assert!(r["r_sim"].as_f64().unwrap() > 0.0);
    }
    for f in [
        "fig1.svg",
        "fig10.svg",
        "fig11.svg",
        "ack_a.svg",
        "fig10.csv",
        "fig10_model.csv",
        "fig1_queues.csv",
        "ack_windows.csv",
        "asym_series.csv",
        "asym_bursts.csv",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
