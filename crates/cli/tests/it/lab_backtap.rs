//! `hopwise lab backtap` on this machine: three `hopwise relay` processes
//! and `hopwise proxy` in network namespaces. Needs root and real time, so
//! it is ignored by default: `cargo test -p hopwise --test it -- --ignored lab_backtap::`.

use crate::common;
#[test]
#[ignore = "needs root and network namespaces; 3 × 11.5 s of real time"]
fn backtap_circuit_over_real_udp_fills_the_bottleneck_with_a_short_queue() {
    let out = std::env::temp_dir().join(format!("hopwise-lab-backtap-{}", std::process::id()));
    let (summary, own) = common::run_lab(&["lab", "backtap", "--secs", "10"], &out);
    let cases = summary["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    let (tcp, bt) = (&cases[0], &cases[1]);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    // The circuit carried data end to end through the SOCKS5 proxy and three relays.
    assert!(f(bt, "backtap_bps") > 1e6, "{bt}");
    assert!(bt["tcp_bps"].is_null());
    assert_eq!(bt["circuits_bps"].as_array().unwrap().len(), 1);
    assert!(
        bt["jain_circuits"].is_null(),
        "one circuit has no Jain index"
    );
    // Kernel TCP fills the buffer; the circuit keeps it far emptier.
    assert!(f(tcp, "queue_mean_bytes") > 100_000.0, "{tcp}");
    assert!(
        f(bt, "queue_mean_bytes") < f(tcp, "queue_mean_bytes") / 4.0,
        "{bt} against {tcp}"
    );
    for f in [
        "backtap.svg",
        "delay.svg",
        "cases.csv",
        "report.html",
        "overlay/proxy1-backtap-circuit.log",
        "overlay/relay1-both.log",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // The third case ran both downloads, and every claim was judged or noted.
    let both = &cases[2];
    assert!(f(both, "tcp_bps") > 1e6, "{both}");
    assert!(!both["backtap_bps"].is_null(), "{both}");
    assert!(summary["claims"].as_array().unwrap().len() >= 3);
    // No relay or proxy outlived the run: none has the run's config files
    // on its command line.
    let dir = out.join("overlay").display().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            assert!(!cmd.contains(&dir), "still running: {cmd}");
        }
    }
    // Every namespace is gone (the daemons lived in them).
    common::assert_no_namespaces(&own);
    let _ = std::fs::remove_dir_all(&out);
}
