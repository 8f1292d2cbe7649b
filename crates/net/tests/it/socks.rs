//! SOCKS5 protocol errors get the reply codes of RFC 1928 §6, and the exit
//! policy refuses loopback, private and link-local destinations by default
//! (SOCKS reply 0x02, "not allowed by ruleset"). The proxy serves at most
//! `socks_max_connections` at once and bounds each handshake as a whole.

use crate::common;
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

#[test]
fn a_catch_all_accept_does_not_reach_private_addresses() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    // reject_private (the default) refuses private addresses before the rules.
    o.exit_policy = vec!["accept *:*".into()];
    let lab = Lab::start(&o).unwrap();
    let socks = lab.socks();
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        // A server listens, so a connect would succeed: 0x02 is the policy.
        let server = testbed::start_file_server(5, 1000).await.unwrap();
        let ok = [5u8, 1, 0];
        for (host, port) in [
            ("127.0.0.1", server.port()),
            ("169.254.169.254", 80),
            ("10.0.0.1", 80),
            ("::ffff:127.0.0.1", server.port()),
        ] {
            assert_eq!(
                exchange(socks, &ok, &connect(host, port)).await,
                (Some(0), Some(0x02)),
                "{host}"
            );
        }
    });
    lab.shutdown();
}

/// Whether the proxy closes `s` within `limit` (EOF or an error), as opposed
/// to answering with bytes or keeping it open.
async fn closed_within(s: &mut TcpStream, limit: Duration) -> Result<bool, Vec<u8>> {
    let mut b = [0u8; 16];
    match tokio::time::timeout(limit, s.read(&mut b)).await {
        Ok(Ok(0)) | Ok(Err(_)) => Ok(true),
        Ok(Ok(n)) => Err(b[..n].to_vec()),
        Err(_) => Ok(false),
    }
}

/// Connects through SOCKS to `port` and returns the open stream.
async fn open_stream(socks: std::net::SocketAddr, port: u16) -> TcpStream {
    let mut s = TcpStream::connect(socks).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).await.unwrap();
    s.write_all(&connect("127.0.0.1", port)).await.unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).await.unwrap();
    assert_eq!(r[1], 0, "the stream opens");
    s
}

async fn scrape(addr: std::net::SocketAddr, series: &str) -> u64 {
    let body = common::scrape(addr).await;
    body.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{body}"))
}

#[test]
fn socks_connections_are_capped_and_slow_handshakes_time_out() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    o.proxy_extra = "socks_max_connections = 2\nsocks_handshake_timeout = \"1s\"\n\
                     [metrics]\nlisten = \"127.0.0.1:0\"\n"
        .into();
    let lab = Lab::start(&o).unwrap();
    let socks = lab.socks();
    let metrics = lab.proxy.metrics.expect("the proxy's metrics");
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        // A destination that sends nothing and closes when its client has
        // (streams are half-closed until both sides are done): streams to it
        // stay open as long as their SOCKS clients do.
        let sink = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = sink.local_addr().unwrap().port();
        let held = tokio::spawn(async move {
            while let Ok((mut c, _)) = sink.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while matches!(c.read(&mut b).await, Ok(n) if n > 0) {}
                });
            }
        });
        let a = open_stream(socks, port).await;
        let _b = open_stream(socks, port).await;
        // Past the handshake deadline, established streams are not cut.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(scrape(metrics, "hopwise_socks_connections{").await, 2);

        // The third is closed at once, without a method reply.
        let mut c = TcpStream::connect(socks).await.unwrap();
        let _ = c.write_all(&[5, 1, 0]).await;
        assert_eq!(
            closed_within(&mut c, Duration::from_secs(5)).await,
            Ok(true)
        );
        assert_eq!(scrape(metrics, "hopwise_socks_refused_total{").await, 1);

        // A closed stream frees its place.
        drop(a);
        let t0 = tokio::time::Instant::now();
        let mut answered = false;
        while t0.elapsed() < Duration::from_secs(10) && !answered {
            let mut d = TcpStream::connect(socks).await.unwrap();
            let _ = d.write_all(&[5, 1, 0]).await;
            let mut m = [0u8; 2];
            answered = tokio::time::timeout(Duration::from_secs(2), d.read_exact(&mut m))
                .await
                .is_ok_and(|r| r.is_ok());
            if !answered {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        assert!(answered, "a place frees up when a stream closes");

        // A client that dribbles its request a byte at a time, each byte well
        // within the deadline, is still closed when the deadline has passed
        // for the whole exchange (the request below would take 26 s; a
        // deadline per read would never fire).
        drop(_b);
        // Until both places are free (the stream's close goes round the
        // circuit; the last probe's handshake ends when it closes).
        let t0 = tokio::time::Instant::now();
        while scrape(metrics, "hopwise_socks_connections{").await > 0 {
            assert!(t0.elapsed() < Duration::from_secs(10), "places never freed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut e = TcpStream::connect(socks).await.unwrap();
        e.write_all(&[5, 1, 0]).await.unwrap();
        let mut m = [0u8; 2];
        e.read_exact(&mut m).await.unwrap();
        let mut request = vec![5u8, 1, 0, 3, 255];
        request.extend(std::iter::repeat_n(b'a', 255));
        request.extend([0, 80]);
        let mut closed = false;
        for byte in request {
            if e.write_all(&[byte]).await.is_err() {
                closed = true;
                break;
            }
            if closed_within(&mut e, Duration::from_millis(100)).await == Ok(true) {
                closed = true;
                break;
            }
        }
        assert!(closed, "the dribbling client was never closed");
        held.abort();
    });
    lab.shutdown();
}

/// A configured path whose last relay does not exit (its exit is not
/// enabled, though the directory flags it): the circuit builds (a relay
/// does not know it is the last hop), and a SOCKS request gets "not
/// allowed by ruleset" (0x02) as soon as the relay's END comes back, not
/// the timeout reply after `connect_timeout` (30 s).
#[test]
fn a_last_hop_that_does_not_exit_refuses_streams_at_once() {
    let d = tempfile::tempdir().unwrap();
    let o = LabOptions::new(d.path());
    let files = testbed::write_lab(&o).unwrap();
    let exit = &files.relays[2];
    let text = std::fs::read_to_string(exit).unwrap();
    assert!(text.contains("enabled = true"), "{text}");
    std::fs::write(exit, text.replace("enabled = true", "enabled = false")).unwrap();
    let relays: Vec<_> = files
        .relays
        .iter()
        .map(|p| {
            hopwise_net::spawn_relay(hopwise_net::config::RelayConfig::load(p).unwrap()).unwrap()
        })
        .collect();
    let proxy =
        hopwise_net::spawn_proxy(hopwise_net::config::ProxyConfig::load(&files.proxy).unwrap())
            .unwrap();
    let socks = proxy.socks.unwrap();
    let rt = common::runtime();
    rt.block_on(async {
        let t0 = tokio::time::Instant::now();
        let (method, reply) = exchange(socks, &[5, 1, 0], &connect("example.org", 80)).await;
        assert_eq!((method, reply), (Some(0), Some(0x02)));
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "took {:?}",
            t0.elapsed()
        );
    });
    drop(proxy);
    for r in relays {
        r.shutdown();
    }
}

/// A client that goes away (with a reset) while its CONNECT is still being
/// opened: the proxy's reply then fails, and the stream, by now open at the
/// exit, is reset there, so the destination sees its connection close
/// instead of holding it as long as the relays run.
#[test]
fn a_client_gone_before_its_reply_has_its_stream_reset_at_the_exit() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    let lab = Lab::start(&o).unwrap();
    let socks = lab.socks();
    let rt = common::runtime();
    rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        // A destination whose accept queue is full (backlog 0 holds one
        // connection, which a filler takes), so the exit's SYN is dropped
        // and its connect completes only on the SYN's retransmission, about
        // a second later: time for the SOCKS client to leave first.
        let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        l.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        l.listen(0).unwrap();
        let std_l: std::net::TcpListener = l.into();
        std_l.set_nonblocking(true).unwrap();
        let port = std_l.local_addr().unwrap().port();
        let dest = tokio::net::TcpListener::from_std(std_l).unwrap();
        let filler = TcpStream::connect(("127.0.0.1", port)).await.unwrap();

        let mut c = TcpStream::connect(socks).await.unwrap();
        c.write_all(&[5, 1, 0]).await.unwrap();
        let mut m = [0u8; 2];
        c.read_exact(&mut m).await.unwrap();
        c.write_all(&connect("127.0.0.1", port)).await.unwrap();
        // The request is in and the exit is connecting; the client resets.
        tokio::time::sleep(Duration::from_millis(300)).await;
        socket2::SockRef::from(&c)
            .set_linger(Some(Duration::ZERO))
            .unwrap();
        drop(c);

        // Free the queue; the exit's retransmitted SYN gets in.
        let (first, _) = dest.accept().await.unwrap();
        drop((first, filler));
        let (mut conn, _) = tokio::time::timeout(Duration::from_secs(10), dest.accept())
            .await
            .expect("the exit connects once the queue has room")
            .unwrap();
        // The proxy's reply to the vanished client fails, and the stream is
        // reset at the exit: the destination's connection closes.
        assert_eq!(
            closed_within(&mut conn, Duration::from_secs(10)).await,
            Ok(true),
            "the exit kept the stream of a client that had gone"
        );
    });
    lab.shutdown();
}
