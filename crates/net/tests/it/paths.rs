//! Random paths at the proxy: a destination its circuit's exit refuses (by
//! the exit's directory `exit_policy`) goes on a circuit through an exit
//! that accepts it, and the guard is kept in the proxy's state file.

use super::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use std::time::Duration;

#[test]
fn each_destination_goes_through_an_exit_that_accepts_it() {
    let rt = common::runtime();
    let (seed, size) = (0x5eed, 200_000);
    let (a, b) = rt.block_on(async {
        (
            testbed::start_file_server(seed, size).await.unwrap(),
            testbed::start_file_server(seed, size).await.unwrap(),
        )
    });
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.random_paths = true;
    // relay2 reaches only server a, relay3 only server b (of 127.0.0.1).
    o.middle_exit_policy = Some(vec![format!("accept 127.0.0.1/32:{}", a.port())]);
    o.exit_policy = vec![format!("accept 127.0.0.1/32:{}", b.port())];
    let lab = Lab::start(&o).expect("lab starts");
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30))
            .await
            .expect("circuit");
        for server in [a, b, a, b] {
            let got = tokio::time::timeout(
                Duration::from_secs(30),
                testbed::download(lab.socks(), "127.0.0.1", server.port()),
            )
            .await
            .expect("in time")
            .unwrap_or_else(|e| panic!("download from {server}: {e}"));
            assert_eq!(got.hash, testbed::expected_hash(seed, size));
        }
        // A port neither exit accepts: refused at once, no circuit tried.
        let built = lab.proxy.snapshot_async().await.unwrap().circuits_built;
        let e = tokio::time::timeout(
            Duration::from_secs(10),
            testbed::download(lab.socks(), "127.0.0.1", 9),
        )
        .await
        .expect("refused in time")
        .unwrap_err();
        // SOCKS5 reply 2: connection not allowed by ruleset (RFC 1928 §6).
        assert!(e.ends_with("SOCKS reply 0x02"), "{e}");
        let s = lab.proxy.snapshot_async().await.unwrap();
        assert_eq!(
            s.circuits_built, built,
            "no circuit for a refused destination"
        );
        assert!(s.circuits_built >= 2, "one circuit per exit at least");
    });
    // The guard (relay1, the only guard that is not an exit) is stored.
    let state = std::fs::read_to_string(d.path().join("proxy.state.toml")).unwrap();
    let key = hopwise_proto::link::hex(&lab.relays[0].public_key);
    assert!(state.contains(&format!("guard = \"{key}\"")), "{state}");
}
