//! `hopwise bt`: make, seed --once and download over TCP loopback,
//! byte-exact; a bad torrent file is refused naming the file and the key.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn hopwise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(args)
        .output()
        .expect("hopwise runs")
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-bt-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bad_torrent_is_refused_naming_file_and_key() {
    let d = scratch("bad");
    let t = d.join("bad.torrent");
    // `pieces` announces 20 bytes and the file ends after 3.
    std::fs::write(
        &t,
        "d4:infod6:lengthi3e4:name1:x12:piece lengthi16384e6:pieces20:abce",
    )
    .unwrap();
    let out = d.join("out.bin");
    let o = hopwise(&[
        "bt",
        "download",
        t.to_str().unwrap(),
        "--peer",
        "127.0.0.1:9",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("bad.torrent") && err.contains("`info.pieces`"),
        "{err}"
    );
    assert!(!out.exists() && !d.join("out.bin.part").exists());
}

#[test]
fn make_seed_download_round_trip() {
    let d = scratch("rt");
    let data: Vec<u8> = (0..700_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let (f, t, out) = (d.join("f.bin"), d.join("f.torrent"), d.join("o.bin"));
    std::fs::write(&f, &data).unwrap();
    let (fs, ts, os) = (
        f.to_str().unwrap(),
        t.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let o = hopwise(&["bt", "make", fs, "--out", ts, "--piece-size", "64KiB"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut seeder = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args([
            "bt",
            "seed",
            fs,
            "--torrent",
            ts,
            "--listen",
            "127.0.0.1:0",
            "--once",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // "bt seed: serving ... on ADDR (tcp)"
    let mut err = BufReader::new(seeder.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line
        .rsplit(" on ")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let o = hopwise(&["bt", "download", ts, "--peer", &addr, "--out", os, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["bytes"], 700_000);
    assert_eq!(j["pieces"], 11);
    assert_eq!(j["hash_failures"], 0);
    assert_eq!(std::fs::read(&out).unwrap(), data);
    // Keep reading the seeder's stderr so it can write its summary.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let s = seeder.wait_with_output().unwrap();
    assert!(s.status.success(), "{rest}");
    let j: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(j["bytes"], 700_000);
}
