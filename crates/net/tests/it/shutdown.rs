//! A relay that stops closes its links: its neighbours take their links
//! down at once (not after `idle_timeout`), and a circuit rebuilt through
//! it fails within seconds.

use crate::common;
use hopwise_net::testbed::{Lab, LabOptions};
use std::time::Duration;

#[test]
fn a_relay_that_stops_closes_its_links() {
    let d = tempfile::tempdir().unwrap();
    let o = LabOptions::new(d.path());
    let mut lab = Lab::start(&o).unwrap();
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let before = lab.relays[0].snapshot_async().await.unwrap();
        assert_eq!(before.links.closes_received, 0);
        assert!(before.links_up >= 2, "the proxy and the middle");
    });
    let middle = lab.relays.remove(1);
    middle.shutdown();
    rt.block_on(async {
        let t0 = tokio::time::Instant::now();
        // The entry and the exit hear the middle's CLOSE. Without it they
        // would wait for `idle_timeout` (30 s).
        loop {
            let entry = lab.relays[0].snapshot_async().await.unwrap();
            let exit = lab.relays[1].snapshot_async().await.unwrap();
            if entry.links.closes_received == 1 && exit.links.closes_received == 1 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "no CLOSE: entry {:?}, exit {:?}",
                entry.links,
                exit.links
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The proxy rebuilds its circuit through the middle (its path is
        // fixed); the entry's handshake to the stopped middle gives up after
        // 2 s instead of `handshake_timeout` (15 s).
        loop {
            let entry = lab.relays[0].snapshot_async().await.unwrap();
            if entry.links.handshake_timeouts >= 1 {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the entry still tries: {:?}",
                entry.links
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    lab.shutdown();
}
