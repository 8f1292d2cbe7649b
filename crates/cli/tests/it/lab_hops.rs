//! `hopwise lab hops --quick` on this machine: BackTap (`hopwise relay`,
//! a `hopwise proxy` per download) and kernel TCP (`hopwise otcp`) over the
//! same three lossy hops of the lab's delay line. Needs root and real
//! time, so it is ignored by default:
//! `cargo test -p hopwise --test it -- --ignored lab_hops::` (about 2 to
//! 3 minutes; build the binary first, the test runs `hopwise` itself).

use crate::common;

#[test]
#[ignore = "needs root and network namespaces; about 2 to 3 minutes of real time"]
fn both_transports_download_over_the_same_lossy_hops_and_meet_the_same_loss() {
    let out = std::env::temp_dir().join(format!("hopwise-lab-hops-{}", std::process::id()));
    let (summary, own) = common::run_lab(&["lab", "hops", "--quick"], &out);
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let transfers = summary["transfers"].as_array().unwrap();
    assert_eq!(transfers.len(), 4, "p = 0 and 2 %, one download each way");
    for t in transfers {
        // Whatever finished is the server's body, byte for byte; kernel
        // TCP finishes 4 MB at 2 % well within the limit.
        if t["finished"].as_bool().unwrap() {
            assert_eq!(t["hash_ok"].as_bool(), Some(true), "{t}");
        }
        if t["transport"] == "tcp" {
            assert!(t["finished"].as_bool().unwrap(), "{t}");
        }
        assert!(f(t, "goodput_mbs") > 0.0, "{t}");
        // The first byte comes after at least one round trip of the path
        // (three hops of 40 ms).
        assert!(f(t, "setup_s") > 0.12, "{t}");
    }
    let table = summary["table"].as_array().unwrap();
    assert_eq!(table.len(), 2);
    for row in table {
        let ratio = f(row, "backtap_over_tcp");
        let want = f(row, "backtap_median_mbs") / f(row, "tcp_median_mbs");
        assert!((ratio - want).abs() < 1e-9, "{row}");
    }
    // Both transports crossed every lossy hop, and met its loss: none at
    // p = 0, some of each protocol's frames at 2 %.
    for w in summary["links"].as_array().unwrap() {
        let p = f(w, "loss");
        let links = w["links"].as_array().unwrap();
        assert_eq!(links.len(), 4, "three lossy hops and a clean one");
        for l in &links[..3] {
            let sum = |k: &str| f(&l["ab"], k) + f(&l["ba"], k);
            assert!(
                sum("udp_frames") > 1000.0 && sum("tcp_frames") > 1000.0,
                "{l}"
            );
            if p == 0.0 {
                assert_eq!(sum("lost"), 0.0, "{l}");
            } else {
                assert!(sum("udp_lost") > 0.0 && sum("tcp_lost") > 0.0, "{l}");
                assert_eq!(sum("lost"), sum("udp_lost") + sum("tcp_lost"), "{l}");
            }
        }
        assert_eq!(f(&links[3]["ab"], "lost") + f(&links[3]["ba"], "lost"), 0.0);
    }
    assert!(summary["sysctls"]["net.ipv4.tcp_sack"] == "1");
    assert!(summary["sysctls"]["net.ipv4.tcp_no_metrics_save"] == "1");
    for f in [
        "report.html",
        "hops.svg",
        "table.csv",
        "transfers.csv",
        "links.csv",
        "cpu.csv",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    common::assert_no_namespaces(&own);
    let _ = std::fs::remove_dir_all(&out);
}
