//! Reloading a running relay's configuration (what `SIGHUP` does): the exit
//! policy and the bandwidth change for new streams while the circuit and a
//! stream already open carry on; a file that does not load is refused and
//! the relay keeps serving with what it ran; keys that need a restart are
//! named and keep their running values.

use crate::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SIZE: u64 = 256 << 10;
const SEED: u64 = 0x5eed;

#[test]
fn a_reload_changes_the_exit_policy_for_new_streams_and_keeps_the_circuit() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    let lab = Lab::start(&o).unwrap();
    let exit = &lab.relays[2];
    let file = lab.files.relays[2].clone();
    let original = std::fs::read_to_string(&file).unwrap();
    let accepts = "policy = [\"accept 127.0.0.1/32:*\", \"reject private:*\"]";
    assert!(original.contains(accepts), "{original}");
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let server = testbed::start_file_server(SEED, SIZE).await.unwrap();
        let fetch = || testbed::download(lab.socks(), "127.0.0.1", server.port());
        // A stream opened (the exit connected) under the old policy.
        let mut held = hopwise_net::socks::connect(lab.socks(), "127.0.0.1", server.port())
            .await
            .unwrap();
        let before = lab.proxy.snapshot_async().await.unwrap();
        assert!(before.client_ready);

        // A file that does not load is refused; the old policy stays.
        std::fs::write(
            &file,
            original.replace("enabled = true", "enabled = \"maybe\""),
        )
        .unwrap();
        let e = exit.reload_async(&file).await.unwrap_err();
        assert!(e.0.contains("exit.enabled"), "{e}");
        let ok = fetch().await.expect("still served under the old policy");
        assert_eq!(ok.bytes, SIZE);

        // The loopback rule goes: new streams to 127.0.0.1 are refused.
        let refusing = original.replace(accepts, "policy = [\"reject private:*\"]");
        std::fs::write(&file, &refusing).unwrap();
        let r = exit.reload_async(&file).await.unwrap();
        assert_eq!(r.applied.len(), 1, "{r}");
        assert!(
            r.applied[0].starts_with(
                "exit.policy: [\"accept 127.0.0.1/32:*\", \"reject private:*\"] \
                 (reject_private = false, default = accept) -> [\"reject private:*\"]"
            ),
            "{r}"
        );
        assert!(r.needs_restart.is_empty(), "{r}");
        assert!(r.to_string().contains("applied exit.policy"), "{r}");
        let e = fetch().await.expect_err("refused by the new policy");
        assert!(e.contains("SOCKS"), "{e}");

        // The stream opened before carries on over the same circuit.
        held.write_all(b"GET /file HTTP/1.0\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), held.read_to_end(&mut got))
            .await
            .expect("the held stream finishes")
            .unwrap();
        let body = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!((got.len() - body) as u64, SIZE, "the whole file");
        let after = lab.proxy.snapshot_async().await.unwrap();
        assert_eq!(after.client_circuit, before.client_circuit);
        assert_eq!(after.circuits_built, before.circuits_built, "no rebuild");

        // Bandwidth applies at once; `listen` needs a restart and keeps its
        // running value (reported again at the next reload).
        assert_eq!(exit.snapshot_async().await.unwrap().bandwidth, None);
        let limited = refusing.replace("listen = ", "listen = \"127.0.0.1:1\"\n#")
            + "\n[bandwidth]\nrate = \"50MB/s\"\n";
        std::fs::write(&file, &limited).unwrap();
        let r = exit.reload_async(&file).await.unwrap();
        assert_eq!(r.needs_restart, ["listen"], "{r}");
        assert_eq!(r.applied.len(), 1, "{r}");
        assert!(r.applied[0].starts_with("bandwidth: unlimited -> rate 50000000 B/s"));
        let bucket = exit.snapshot_async().await.unwrap().bandwidth.unwrap();
        assert_eq!(bucket.rate, 50_000_000);
        let r = exit.reload_async(&file).await.unwrap();
        assert!(r.applied.is_empty(), "{r}");
        assert_eq!(r.needs_restart, ["listen"], "{r}");

        // And back: the loopback rule returns, streams flow again.
        std::fs::write(&file, &original).unwrap();
        exit.reload_async(&file).await.unwrap();
        assert_eq!(exit.snapshot_async().await.unwrap().bandwidth, None);
        let d = fetch().await.expect("accepted again");
        assert_eq!(d.hash, testbed::expected_hash(SEED, SIZE));
        let last = lab.proxy.snapshot_async().await.unwrap();
        assert_eq!(last.client_circuit, before.client_circuit);
    });
    // A proxy has nothing to reload.
    assert!(lab.proxy.reload(&lab.files.proxy).is_err());
    lab.shutdown();
}
