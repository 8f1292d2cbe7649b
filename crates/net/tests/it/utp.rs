//! µTP over loopback UDP: two sockets, 4 MB byte-exact, clean and with
//! emulated delay and loss.

use hopwise_net::config::{Emulation, PeerSel};
use hopwise_net::utp::{UtpOptions, UtpSocket};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn pattern(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn transfer(opts: UtpOptions) {
    let data = pattern(4 << 20);
    let server = UtpSocket::bind("127.0.0.1:0".parse().unwrap(), opts.clone())
        .await
        .unwrap();
    let client = UtpSocket::bind("127.0.0.1:0".parse().unwrap(), opts)
        .await
        .unwrap();
    let to = server.local_addr();
    let recv = tokio::spawn(async move {
        let (mut s, peer) = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        s.shutdown().await.unwrap();
        (got, peer, server.stats())
    });
    let mut c = client.connect(to).await.unwrap();
    assert_eq!(c.peer_addr(), to);
    c.write_all(&data).await.unwrap();
    c.shutdown().await.unwrap();
    let (got, peer, _) = recv.await.unwrap();
    assert_eq!(peer, client.local_addr());
    assert_eq!(got.len(), data.len());
    assert!(got == data, "byte-exact");
    let st = c.stats();
    assert_eq!(st.bytes_acked, data.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utp_transfers_4mb_clean() {
    tokio::time::timeout(Duration::from_secs(120), transfer(UtpOptions::default()))
        .await
        .expect("finishes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn utp_transfers_4mb_with_delay_and_loss() {
    let emu = Emulation {
        delay: Duration::from_millis(10),
        loss: 0.02,
        seed: 7,
        ..Emulation::default()
    };
    let opts = UtpOptions {
        emulation: vec![(PeerSel::All, emu)],
        ..UtpOptions::default()
    };
    tokio::time::timeout(Duration::from_secs(300), transfer(opts))
        .await
        .expect("finishes");
}
