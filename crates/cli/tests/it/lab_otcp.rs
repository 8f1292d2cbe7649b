//! `hopwise lab otcp` on this machine: `hopwise otcp relay` and `forward`
//! processes in network namespaces, over links delayed in user space.
//! Needs root and real time, so it is ignored by default:
//! `cargo test -p hopwise --test it -- --ignored lab_otcp::`.

use crate::common;
#[test]
#[ignore = "needs root and network namespaces; about 30 s of real time"]
fn otcp_chains_on_kernel_tcp_run_at_window_over_rtt_and_clean_up() {
    let out = std::env::temp_dir().join(format!("hopwise-lab-otcp-{}", std::process::id()));
    let (summary, own) = common::run_lab(&["lab", "otcp", "--quick", "--sim-seeds", "0"], &out);
    let points = summary["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "the direct path and 2, 3, 4 hops");
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    // Without loss each hop runs at window / RTT, so the rate follows the
    // path RTT: 75.7 / 39.3 = 1.93 at four hops, less what the relays cost.
    let gains: Vec<f64> = points.iter().map(|p| f(p, "lab_gain")).collect();
    assert!((gains[0] - 1.0).abs() < 1e-9);
    assert!(
        gains.windows(2).all(|w| w[1] > w[0]),
        "gains grow with the hops: {gains:?}"
    );
    assert!((1.6..2.0).contains(&gains[3]), "four hops: {gains:?}");
    // Every byte arrived (a short transfer would have failed the run), and
    // the delay line held every frame for its delay: the first byte comes
    // after one handshake and the header's trip over every hop, so at
    // least 1.5 path RTTs.
    for t in summary["transfers"].as_array().unwrap() {
        let hops = t["hops"].as_u64().unwrap() as usize;
        let rtt = f(&points[hops - 1], "path_rtt_ms") / 1e3;
        assert!(f(t, "first_byte_s") > 1.5 * rtt, "{t}");
    }
    let lanes: Vec<&serde_json::Value> = summary["links"][0]["links"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| [&l["ab"], &l["ba"]])
        .collect();
    assert_eq!(lanes.len(), 20, "ten links, two directions");
    for s in lanes {
        assert!(f(s, "frames") > 0.0, "every link carried its path: {s}");
        assert_eq!(f(s, "lost") + f(s, "overflow") + f(s, "send_errors"), 0.0);
    }
    for f in ["report.html", "gains.svg", "points.csv", "links.csv"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    common::assert_no_namespaces(&own);
    let _ = std::fs::remove_dir_all(&out);
}
