//! SOCKS5 protocol errors get the reply codes of RFC 1928 §6, and the exit
//! policy refuses loopback, private and link-local destinations by default
//! (SOCKS reply 0x02, "not allowed by ruleset").

mod common;

use hopwise_net::testbed::{self, Lab, LabOptions};
use hopwise_proto::circuit::socks::{
    encode_request, Addr, CMD_BIND, CMD_CONNECT, CMD_UDP_ASSOCIATE,
};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `greeting` then (if the method was accepted) `request`; returns the
/// method byte and the reply code (`None`: the proxy closed without one).
async fn exchange(
    socks: std::net::SocketAddr,
    greeting: &[u8],
    request: &[u8],
) -> (Option<u8>, Option<u8>) {
    let mut s = TcpStream::connect(socks).await.unwrap();
    s.write_all(greeting).await.unwrap();
    let mut m = [0u8; 2];
    let method = match tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut m)).await {
        Ok(Ok(_)) => Some(m[1]),
        _ => return (None, None),
    };
    if method != Some(0) {
        return (method, None);
    }
    s.write_all(request).await.unwrap();
    let mut r = [0u8; 10];
    match tokio::time::timeout(Duration::from_secs(30), s.read_exact(&mut r)).await {
        Ok(Ok(_)) => (method, Some(r[1])),
        _ => (method, None),
    }
}

fn connect(host: &str, port: u16) -> Vec<u8> {
    let addr = match host.parse() {
        Ok(ip) => Addr::Ip(ip),
        Err(_) => Addr::Domain(host.into()),
    };
    encode_request(CMD_CONNECT, &addr, port)
}

#[test]
fn socks_errors_get_the_right_reply_codes() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true; // accept 127.0.0.1/32, refuse the rest of the private ranges
    let lab = Lab::start(&o).unwrap();
    let socks = lab.socks();
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let ok = [5u8, 1, 0];
        let x = Addr::Domain("example.org".into());
        // Not SOCKS5: closed without a reply.
        assert_eq!(
            exchange(socks, &[4, 1, 0, 80, 127, 0, 0, 1, 0], &[]).await,
            (None, None)
        );
        // Only username/password offered: no acceptable method.
        assert_eq!(exchange(socks, &[5, 1, 2], &[]).await, (Some(0xFF), None));
        // BIND and UDP ASSOCIATE: command not supported.
        assert_eq!(
            exchange(socks, &ok, &encode_request(CMD_BIND, &x, 80)).await,
            (Some(0), Some(0x07))
        );
        assert_eq!(
            exchange(socks, &ok, &encode_request(CMD_UDP_ASSOCIATE, &x, 80)).await,
            (Some(0), Some(0x07))
        );
        assert_eq!(
            exchange(socks, &ok, &[5, 9, 0, 1, 1, 2, 3, 4, 0, 80]).await,
            (Some(0), Some(0x07))
        );
        // Unknown address type.
        assert_eq!(
            exchange(socks, &ok, &[5, 1, 0, 7, 1, 2, 3, 4, 0, 80]).await,
            (Some(0), Some(0x08))
        );
        // Reserved byte set; empty domain name: general failure.
        assert_eq!(
            exchange(socks, &ok, &[5, 1, 1, 1, 1, 2, 3, 4, 0, 80]).await,
            (Some(0), Some(0x01))
        );
        assert_eq!(
            exchange(socks, &ok, &[5, 1, 0, 3, 0, 0, 80]).await,
            (Some(0), Some(0x01))
        );
        // Refused by the exit policy: private, link-local and other loopback addresses.
        for host in [
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.4",
            "169.254.169.254",
            "127.0.0.2",
            "::1",
            "fe80::1",
        ] {
            assert_eq!(
                exchange(socks, &ok, &connect(host, 80)).await,
                (Some(0), Some(0x02)),
                "{host}"
            );
        }
        // Allowed, but nothing listens there: connection refused.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        assert_eq!(
            exchange(socks, &ok, &connect("127.0.0.1", port)).await,
            (Some(0), Some(0x05))
        );
        // And a real request succeeds.
        let server = testbed::start_file_server(5, 1000).await.unwrap();
        assert_eq!(
            exchange(socks, &ok, &connect("127.0.0.1", server.port())).await,
            (Some(0), Some(0x00))
        );
    });
    lab.shutdown();
}

#[test]
fn default_exit_policy_refuses_private_ranges() {
    let d = tempfile::tempdir().unwrap();
    let o = LabOptions::new(d.path()); // the default policy, nothing allowed explicitly
    let lab = Lab::start(&o).unwrap();
    let socks = lab.socks();
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let server = testbed::start_file_server(5, 1000).await.unwrap();
        let e = testbed::download(socks, "127.0.0.1", server.port())
            .await
            .unwrap_err();
        assert!(e.contains("0x02"), "{e}");
        // A name that resolves to loopback is refused like the literal.
        let e = testbed::download(socks, "localhost", server.port())
            .await
            .unwrap_err();
        assert!(e.contains("0x02"), "{e}");
        for host in [
            "10.0.0.1",
            "172.31.0.1",
            "192.168.1.1",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            let ok = [5u8, 1, 0];
            assert_eq!(
                exchange(socks, &ok, &connect(host, 80)).await,
                (Some(0), Some(0x02)),
                "{host}"
            );
        }
    });
    let exit = lab.relays[2].snapshot().unwrap();
    assert_eq!(exit.streams, 0);
    lab.shutdown();
}
