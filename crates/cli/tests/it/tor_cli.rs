//! Tor sections in `hopwise sim` and `hopwise sweep`: the overlay's
//! summary in summary.json, its files in the report, and a transport
//! comparison over seeds with intervals.

use super::common::{hopwise, json};

fn scratch(tag: &str) -> std::path::PathBuf {
    super::common::scratch("tor", tag)
}

fn scenario(name: &str) -> String {
    format!("{}/../../scenarios/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn sim_runs_a_circuit_beside_a_cubic_flow() {
    let out = scratch("sim");
    let o = hopwise(&[
        "sim",
        &scenario("tor-cubic-bottleneck.toml"),
        "--set",
        "duration=\"12s\"",
        "--set",
        "measure.warmup=\"4s\"",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("Tor (vanilla): 1 circuit over 3 relays"),
        "{stdout}"
    );
    let s = json(&out.join("summary.json"));
    // hopwise sim's summary and the overlay's, side by side.
    assert_eq!(s["flows"][0]["flow"], "cubic");
    let c = &s["tor"]["circuits"][0];
    assert_eq!(c["name"], "tor");
    assert_eq!(c["prop_rtt_ms"].as_f64(), Some(80.0));
    for k in ["rtt_mean_ms", "rtt_median_ms", "rtt_p95_ms", "rtt_p99_ms"] {
        assert!(c[k].as_f64().unwrap() >= 80.0, "{k}: {c}");
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    for f in [
        "tor_goodput.svg",
        "tor_requests.svg",
        "tor_relay_queues.svg",
        "queue.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
        assert!(report.contains(f), "report lacks {f}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn sim_names_a_mistake_in_a_tor_section() {
    let o = hopwise(&[
        "sim",
        &scenario("tor-cubic-bottleneck.toml"),
        "--set",
        "tor.transport=vanila",
        "--out",
        scratch("err").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tor-cubic-bottleneck.toml: tor.transport: unknown transport \"vanila\"; did you mean `vanilla`?"),
        "{err}"
    );
}

/// The sweep the documentation gives, shortened: two transports, two
/// seeds; the table and summary.json have TTLB and Jain's index over the
/// circuits with intervals, the report the figure.
#[test]
fn sweep_compares_transports_with_intervals() {
    let out = scratch("sweep");
    let o = hopwise(&[
        "sweep",
        &scenario("tor-50-relays.toml"),
        "--vary",
        "tor.transport=vanilla,backtap",
        "--seeds",
        "2",
        "--set",
        "duration=\"10s\"",
        "--set",
        "measure.warmup=\"5s\"",
        "--set",
        "tor.torps.circuits=10",
        "--set",
        "tor.torps.start_window=\"1s\"",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&out.join("summary.json"));
    for p in s["points"].as_array().unwrap() {
        for m in ["ttlb_median_s", "circuit_jain", "circuit_goodput_bps"] {
            let x = p["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["metric"] == m && x["subject"] == "all circuits")
                .unwrap_or_else(|| panic!("{m}"));
            assert_eq!(x["runs"], 2, "{x}");
            assert!(x["mean"].as_f64().unwrap() > 0.0, "{x}");
            assert!(x["ci90"].as_f64().is_some(), "{x}");
        }
    }
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("TTLB median s"), "{report}");
    assert!(report.contains("Jain (circuits)"));
    assert!(report.contains("sweep_tor.svg"));
    assert!(out.join("sweep_tor.svg").exists());
    let _ = std::fs::remove_dir_all(&out);
}
