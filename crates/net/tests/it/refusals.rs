//! Refused streams are counted per reason in `/metrics`
//! (`hopwise_streams_refused_total`): one of each reason, at the exit and at
//! proxies.

use crate::common;
use hopwise_net::config::ProxyConfig;
use hopwise_net::socks::{self, SocksClientError};
use hopwise_net::testbed::{self, Lab, LabOptions};
use std::net::SocketAddr;
use std::time::Duration;

/// The value of `hopwise_streams_refused_total{node=NODE,reason=REASON}`.
fn refused(body: &str, node: &str, reason: &str) -> u64 {
    let key = format!("hopwise_streams_refused_total{{node=\"{node}\",reason=\"{reason}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&key))
        .unwrap_or_else(|| panic!("no {key}in:\n{body}"))
        .parse()
        .unwrap()
}

/// A SOCKS CONNECT through `proxy` that must fail with reply `code`.
async fn expect_reply(proxy: SocketAddr, host: &str, port: u16, code: u8) {
    match socks::connect(proxy, host, port).await {
        Err(SocksClientError::Reply(r)) => assert_eq!(r, code, "{host}:{port}"),
        Err(e) => panic!("{host}:{port}: {e}"),
        Ok(_) => panic!("{host}:{port}: connected, expected reply {code}"),
    }
}

/// Accepts connections and holds them open without a byte.
async fn start_hold_server() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    a
}

/// A proxy file from the lab's, with `edit` applied, started.
fn extra_proxy(
    files: &testbed::LabFiles,
    name: &str,
    edit: impl Fn(String) -> String,
) -> hopwise_net::daemon::Handle {
    let text = std::fs::read_to_string(&files.proxy).unwrap();
    let p = files.proxy.with_file_name(format!("{name}.toml"));
    std::fs::write(&p, edit(text)).unwrap();
    hopwise_net::spawn_proxy(ProxyConfig::load(&p).unwrap()).unwrap()
}

const PATH_LINE: &str = "path = [\"relay1\", \"relay2\", \"relay3\"]\n";

#[test]
fn every_refusal_reason_is_counted_in_the_metrics() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    // 255.255.255.255: the policy lets it through, the kernel has no route.
    o.exit_policy = vec!["accept 255.255.255.255/32:*".into()];
    let metrics = "\n[metrics]\nlisten = \"127.0.0.1:0\"\n";
    // 33 streams per circuit: one more than the exit connects a circuit may
    // run at once.
    o.relay_extra = format!("\n[limits]\nmax_streams = 33\n{metrics}");
    o.proxy_extra = metrics.into();
    let files = testbed::write_lab(&o).unwrap();
    let edit = |p: &std::path::Path, from: &str, to: &str| {
        let t = std::fs::read_to_string(p).unwrap();
        assert!(t.contains(from), "{from:?} in {t}");
        std::fs::write(p, t.replacen(from, to, 1)).unwrap();
    };
    edit(
        &files.relays[2],
        "[exit]\nenabled = true\n",
        "[exit]\nenabled = true\nconnect_timeout = \"3s\"\n",
    );
    // relay2 takes no clients: a path that enters there cannot be built.
    edit(
        &files.relays[1],
        "directory = \"directory.toml\"\n",
        "directory = \"directory.toml\"\naccept_clients = false\n",
    );
    let lab = Lab::start_files(files.clone()).unwrap();
    // Random paths, one stream per circuit.
    let b = extra_proxy(&files, "proxy-b", |t| {
        t.replace(PATH_LINE, "key_file = \"proxy-b.key\"\n") + "\n[limits]\nmax_streams = 1\n"
    });
    // A configured path whose entry refuses clients.
    let c = extra_proxy(&files, "proxy-c", |t| {
        t.replace(PATH_LINE, "path = [\"relay2\", \"relay1\", \"relay3\"]\n")
    });
    // Every datagram it sends held 10 s (and almost all lost): its circuit
    // takes at least four of them, 40 s, so none is ready within its 1 s.
    let d_proxy = extra_proxy(&files, "proxy-d", |t| {
        t.replace(PATH_LINE, &format!("{PATH_LINE}connect_timeout = \"1s\"\n"))
            + "\n[emulation.\"*\"]\ndelay = \"10s\"\nloss = 0.999\n"
    });
    let rt = common::runtime();
    let exit_metrics = lab.relays[2].metrics.unwrap();
    let (exit, proxy, pb, pc, pd) = rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30)).await.unwrap();
        let socks = lab.socks();
        let hold = start_hold_server().await;
        // exit_policy: a private address.
        expect_reply(socks, "10.1.2.3", 80, 2).await;
        // resolve: a label longer than DNS allows fails without a query.
        let name = format!("{}.invalid", "a".repeat(70));
        expect_reply(socks, &name, 80, 4).await;
        // connect_refused: a port nobody listens on.
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        expect_reply(socks, "127.0.0.1", closed.port(), 5).await;
        // connect_failed: no route.
        expect_reply(socks, "255.255.255.255", 80, 3).await;
        // timeout and connect_limit: 40 at once to a listener whose accept
        // queue is full, so its SYNs go unanswered: 32 connects run until
        // connect_timeout, the others are refused at once.
        let full =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        full.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        full.listen(0).unwrap();
        let full_addr = full.local_addr().unwrap().as_socket().unwrap();
        let _queued = std::net::TcpStream::connect(full_addr).unwrap();
        let tasks: Vec<_> = (0..40)
            .map(|_| tokio::spawn(socks::connect(socks, "127.0.0.1", full_addr.port())))
            .collect();
        let mut replies = Vec::new();
        for t in tasks {
            match t.await.unwrap() {
                Err(SocksClientError::Reply(r)) => replies.push(r),
                r => panic!("expected a refusal, got {:?}", r.map(|_| ())),
            }
        }
        assert!(replies.contains(&6), "timeouts: {replies:?}");
        assert!(replies.contains(&1), "refused at once: {replies:?}");
        // stream_limit at the exit: 33 streams open, then one more.
        let mut open = Vec::new();
        for _ in 0..33 {
            open.push(
                socks::connect(socks, "127.0.0.1", hold.port())
                    .await
                    .unwrap(),
            );
        }
        expect_reply(socks, "127.0.0.1", hold.port(), 1).await;
        drop(open);
        // Proxy B: no exit accepts 10.1.2.3 by the directory; a second stream
        // on its circuit is one too many.
        let bs = b.socks.unwrap();
        let one = socks::connect(bs, "127.0.0.1", hold.port()).await.unwrap();
        expect_reply(bs, "127.0.0.1", hold.port(), 1).await;
        expect_reply(bs, "10.1.2.3", 80, 2).await;
        drop(one);
        // Proxy C: its entry refuses the link.
        expect_reply(c.socks.unwrap(), "127.0.0.1", hold.port(), 1).await;
        // Proxy D: no circuit in time.
        expect_reply(d_proxy.socks.unwrap(), "127.0.0.1", hold.port(), 6).await;
        (
            common::scrape(exit_metrics).await,
            common::scrape(lab.proxy.metrics.unwrap()).await,
            common::scrape(b.metrics.unwrap()).await,
            common::scrape(c.metrics.unwrap()).await,
            common::scrape(d_proxy.metrics.unwrap()).await,
        )
    });
    assert!(exit.contains("# TYPE hopwise_streams_refused_total counter"));
    for (reason, at_least) in [
        ("exit_policy", 1),
        ("resolve", 1),
        ("connect_refused", 1),
        ("connect_failed", 1),
        ("timeout", 1),
        ("connect_limit", 1),
        ("stream_limit", 1),
    ] {
        let n = refused(&exit, "relay3", reason);
        assert!(n >= at_least, "relay3 {reason}: {n}\n{exit}");
    }
    // Exactly one each where one refusal was triggered.
    for reason in [
        "exit_policy",
        "resolve",
        "connect_refused",
        "connect_failed",
    ] {
        assert_eq!(refused(&exit, "relay3", reason), 1, "{reason}\n{exit}");
    }
    // Every refusal at the exit, and only those, reached the proxy as one.
    let at_exit: u64 = [
        "exit_policy",
        "resolve",
        "connect_refused",
        "connect_failed",
        "timeout",
        "connect_limit",
        "stream_limit",
    ]
    .iter()
    .map(|r| refused(&exit, "relay3", r))
    .sum();
    assert_eq!(refused(&proxy, "proxy", "exit_refused"), at_exit, "{proxy}");
    assert_eq!(at_exit, 4 + 40 + 1);
    assert_eq!(refused(&proxy, "proxy", "no_path"), 0);
    assert_eq!(refused(&pb, "proxy", "no_path"), 1, "{pb}");
    assert_eq!(refused(&pb, "proxy", "stream_limit"), 1, "{pb}");
    assert!(refused(&pc, "proxy", "path_failed") >= 1, "{pc}");
    assert!(refused(&pd, "proxy", "circuit_timeout") >= 1, "{pd}");
    // A relay lists the relays' reasons, a proxy the proxies'.
    assert!(!exit.contains("reason=\"no_path\""));
    assert!(!proxy.contains("reason=\"connect_limit\""));
    drop((b, c, d_proxy));
    lab.shutdown();
}
