//! The middle relay's token bucket (BandwidthRate 10 MB/s): the circuit runs
//! at the bucket's rate and the relay's queues stay bounded.
//!
//! The default run checks what does not depend on the machine's speed (the
//! middle never sends above its bucket, its queues stay bounded, the bytes
//! arrive intact). That the circuit *reaches* ≥ 95 % of the bucket is a
//! throughput claim, made in release mode:
//! `cargo test --release -p hopwise-net --test it bandwidth:: -- --ignored --nocapture`.

// Tests of a real-time daemon: they sleep and read the wall clock.
use crate::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RATE: u64 = 10_000_000;
const CELL: u64 = 519;

#[test]
fn middle_never_exceeds_its_bucket_and_queues_stay_bounded() {
    run(false);
}

#[test]
#[ignore = "a throughput claim: run in release mode on an otherwise idle machine"]
fn middle_limited_to_10_mb_per_s_reaches_95_percent() {
    run(true);
}

fn run(assert_rate: bool) {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    o.middle_rate = Some(RATE);
    // The paper's linear start, which never overshoots, so that the queue
    // bound is the bucket's and Eq. 1's alone. The daemon's default HyStart
    // overshoots while it looks for the delay rise (256 to 385 cells at the
    // middle here on 2026-11-29, 13 to 20 ms of the bucket); its queue is
    // tested deterministically in hopwise-proto's `backtap_window`.
    let linear = "\n[transport]\nstartup = \"linear\"\n";
    o.relay_extra = linear.into();
    o.proxy_extra = linear.into();
    let lab = Arc::new(Lab::start(&o).unwrap());
    let rt = common::runtime();
    let size: u64 = 40_000_000;
    let seed = 11;
    let server = rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        testbed::start_file_server(seed, size).await.unwrap()
    });
    // Sample the middle relay (cells sent, queues) while the download runs.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let lab = lab.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            let t0 = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let s = lab.relays[1].snapshot().unwrap();
                let q = s
                    .circuits
                    .iter()
                    .map(|c| c.forward.queued.max(c.backward.queued))
                    .max()
                    .unwrap_or(0);
                let e = lab.relays[2].snapshot().unwrap();
                let qe = e
                    .circuits
                    .iter()
                    .map(|c| c.forward.queued.max(c.backward.queued))
                    .max()
                    .unwrap_or(0);
                samples.push((t0.elapsed().as_secs_f64(), s.transport.cells_out, q, qe));
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        })
    };
    let dl = rt
        .block_on(async {
            tokio::time::timeout(
                Duration::from_secs(120),
                testbed::download(lab.socks(), "127.0.0.1", server.port()),
            )
            .await
        })
        .expect("download within 120 s")
        .expect("download");
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    assert_eq!(dl.bytes, size);
    assert_eq!(dl.hash, testbed::expected_hash(seed, size));
    // The middle's sending rate in the steady state: skip the first second
    // (the bucket's burst and the window opening) and the last sample.
    let steady: Vec<_> = samples.iter().filter(|s| s.0 >= 1.0).collect();
    assert!(steady.len() >= 10, "{} samples", steady.len());
    let (a, b) = (steady[0], steady[steady.len() - 2]);
    let rate = (b.1 - a.1) as f64 * CELL as f64 / (b.0 - a.0);
    let goodput = dl.bytes as f64 / dl.secs;
    let max_q = samples.iter().map(|s| s.2).max().unwrap();
    let max_qe = samples.iter().map(|s| s.3).max().unwrap();
    eprintln!(
        "middle at 10 MB/s: sends {:.2} MB/s of cells ({:.1} %), goodput {:.2} MB/s, \
         longest queue at the middle {max_q} cells, at the exit (upstream of it) {max_qe} cells",
        rate / 1e6,
        rate / RATE as f64 * 100.0,
        goodput / 1e6
    );
    if assert_rate {
        assert!(rate >= 0.95 * RATE as f64, "middle sends {rate:.0} B/s");
        // Payload is 498 of every 519 bytes of a cell: 95.9 % of the rate at best.
        assert!(goodput >= 0.90 * RATE as f64, "goodput {goodput:.0} B/s");
    }
    assert!(
        rate <= 1.02 * RATE as f64,
        "middle sends {rate:.0} B/s: above its bucket"
    );
    assert!(
        max_q <= 200 && max_qe <= 200,
        "queues {max_q} and {max_qe} cells"
    );
    if let Ok(lab) = Arc::try_unwrap(lab) {
        lab.shutdown();
    }
}
