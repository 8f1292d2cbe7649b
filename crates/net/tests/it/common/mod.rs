//! Shared by the loopback tests: a local overlay, a file server and a
//! download through it, all bounded in time.

#![allow(dead_code)]

use hopwise_net::testbed::{self, Download, Lab, LabOptions};
use std::time::Duration;

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts the overlay, downloads `size` bytes through it, checks the hash.
pub fn transfer(o: &LabOptions, size: u64, limit: Duration) -> (Download, Lab) {
    let lab = Lab::start(o).expect("lab starts");
    let rt = runtime();
    let seed = 0x5eed;
    let d = rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30))
            .await
            .expect("circuit");
        let server = testbed::start_file_server(seed, size).await.unwrap();
        tokio::time::timeout(
            limit,
            testbed::download(lab.socks(), "127.0.0.1", server.port()),
        )
        .await
        .unwrap_or_else(|_| panic!("download of {size} bytes not done within {limit:?}"))
        .expect("download")
    });
    assert_eq!(d.bytes, size, "bytes received");
    assert_eq!(
        d.hash,
        testbed::expected_hash(seed, size),
        "SHA-256 of the body"
    );
    (d, lab)
}

pub fn report(label: &str, size: u64, d: &Download, lab: &Lab) {
    eprintln!(
        "{label}: {} MB in {:.2} s ({:.1} MiB/s)",
        size / 1_000_000,
        d.secs,
        d.mib_per_s()
    );
    for r in &lab.relays {
        if let Some(s) = r.snapshot() {
            let retx: u64 = s
                .circuits
                .iter()
                .map(|c| c.forward.retransmits + c.backward.retransmits)
                .sum();
            eprintln!(
                "  {}: datagrams in {} out {}, cells out {}, retransmits {}, emulated loss {}, socket drops {:?}, auth failures {}, replays {}",
                s.name,
                s.links.datagrams_in,
                s.links.datagrams_out,
                s.transport.cells_out,
                retx,
                s.emulation.lost,
                s.socket_drops,
                s.links.auth_failures,
                s.links.replays
            );
        }
    }
}

/// The metrics endpoint's whole HTTP response (status line, headers, body).
pub async fn scrape(addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}
