//! `hopwise utp recv` and `hopwise utp send` over loopback: 1 MB, JSON summaries.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};

#[test]
fn utp_send_and_recv_move_one_megabyte() {
    // A free UDP port (released before the receiver binds it).
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let recv = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(["utp", "recv", "--listen", &addr, "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The sender's SYN is resent until the receiver is bound.
    let send = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args(["utp", "send", "--to", &addr, "--bytes", "1MB", "--json"])
        .output()
        .unwrap();
    assert!(
        send.status.success(),
        "{}",
        String::from_utf8_lossy(&send.stderr)
    );
    let out = recv.wait_with_output().unwrap();
    assert!(out.status.success());
    let line = BufReader::new(&out.stdout[..])
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["bytes"], 1_000_000);
    let s: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&send.stdout).trim()).unwrap();
    assert_eq!(s["bytes"], 1_000_000);
    assert!(s["goodput_bps"].as_f64().unwrap() > 0.0);
}

#[test]
fn utp_send_rejects_a_bad_loss() {
    let out = Command::new(env!("CARGO_BIN_EXE_hopwise"))
        .args([
            "utp",
            "send",
            "--to",
            "127.0.0.1:9",
            "--bytes",
            "1",
            "--loss",
            "150%",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--loss"));
}
