//! Transfers through three relays on loopback arrive byte-exact (SHA-256),
//! clean and with 5 % loss and 20 ms delay emulated on every hop. The 200 MB
//! versions are `#[ignore]`d (run them with `cargo test --release -p
//! hopwise-net --test it transfer:: -- --ignored`).

use crate::common;
use hopwise_net::config::Emulation;
use hopwise_net::testbed::LabOptions;
use std::time::Duration;

fn opts(dir: &std::path::Path) -> LabOptions {
    let mut o = LabOptions::new(dir);
    o.allow_loopback_exit = true;
    o
}

fn lossy(o: &mut LabOptions) {
    o.emulation = Some(Emulation {
        delay: Duration::from_millis(20),
        loss: 0.05,
        ..Emulation::default()
    });
}

#[test]
fn transfer_20mb_through_three_relays() {
    let d = tempfile::tempdir().unwrap();
    let size = 20_000_000;
    let (dl, lab) = common::transfer(&opts(d.path()), size, Duration::from_secs(120));
    common::report("clean", size, &dl, &lab);
    lab.shutdown();
}

#[test]
fn transfer_1mb_with_loss_and_delay() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    lossy(&mut o);
    let size = 1_000_000;
    let (dl, lab) = common::transfer(&o, size, Duration::from_secs(120));
    common::report("5% loss, 20 ms", size, &dl, &lab);
    let lost: u64 = lab
        .relays
        .iter()
        .filter_map(|r| r.snapshot())
        .map(|s| s.emulation.lost)
        .sum();
    assert!(lost > 0, "the emulator dropped datagrams");
    lab.shutdown();
}

#[test]
#[ignore = "200 MB: about a minute in release mode"]
fn transfer_200mb_through_three_relays() {
    let d = tempfile::tempdir().unwrap();
    let size = 200_000_000;
    let (dl, lab) = common::transfer(&opts(d.path()), size, Duration::from_secs(1200));
    common::report("clean", size, &dl, &lab);
    lab.shutdown();
}

#[test]
#[ignore = "200 MB at 5 % loss: 33 min with the daemon's defaults (1980 s on 2026-11-29), 201 s with loss_response = \"none\" (docs/backtap.md)"]
fn transfer_200mb_with_loss_and_delay() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    lossy(&mut o);
    let size = 200_000_000;
    let (dl, lab) = common::transfer(&o, size, Duration::from_secs(3600));
    common::report("5% loss, 20 ms", size, &dl, &lab);
    lab.shutdown();
}
