//! `hopwise otcp relay` and `forward` on loopback: bytes cross two relays
//! both ways, byte-exact, with half-closes passed on; refused next hops,
//! bad headers and missing headers end the connection and are counted,
//! and the relay goes on serving.

// Tests of a real-time daemon: they sleep and read the wall clock.
use hopwise_net::otcp::{
    choose, select_relay, spawn_otcp_forward, spawn_otcp_relay, Candidate, ForwardOptions,
    OtcpHandle, RelayOptions,
};
use hopwise_proto::circuit::policy::{ExitPolicy, Rule};
use hopwise_proto::time::Dur;
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => panic!("IPv4 expected"),
    }
}

/// An echo server: every connection gets its bytes back, and a FIN after
/// the client's.
fn echo_server() -> SocketAddrV4 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = v4(l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut w = s.try_clone().unwrap();
                let _ = std::io::copy(&mut s, &mut w);
                let _ = w.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    a
}

/// A port that refuses connections for as long as the socket is kept: bound
/// but not listening, so no other test can take it meanwhile.
fn dead_port() -> (socket2::Socket, SocketAddrV4) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    let a = s.local_addr().unwrap().as_socket().unwrap();
    (s, v4(a))
}

/// A forwarder on a free loopback port through `relays` to `to`.
fn forward(relays: Vec<SocketAddrV4>, to: SocketAddrV4) -> OtcpHandle {
    spawn_otcp_forward(ForwardOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        relays,
        to,
    ))
    .unwrap()
}

/// Loopback relays must be allowed to connect to loopback.
fn open_relay() -> RelayOptions {
    let mut o = RelayOptions::new("127.0.0.1:0".parse().unwrap());
    o.policy = ExitPolicy {
        reject_private: false,
        ..ExitPolicy::default()
    };
    o
}

fn pattern(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn client(to: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(to).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Waits until `f` holds (the relays count on their own thread).
fn eventually(what: &str, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{what}: not within 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn bytes_cross_two_relays_both_ways_byte_exact() {
    let echo = echo_server();
    let r1 = spawn_otcp_relay(open_relay()).unwrap();
    let mut o2 = open_relay();
    // A small splice: the copy must work through many refills of it.
    o2.splice_bytes = 4096;
    let r2 = spawn_otcp_relay(o2).unwrap();
    let fw = forward(vec![v4(r1.addr), v4(r2.addr)], echo);

    let data = pattern(4 << 20);
    let mut s = client(fw.addr);
    let mut w = s.try_clone().unwrap();
    let sent = data.clone();
    let writer = std::thread::spawn(move || {
        w.write_all(&sent).unwrap();
        // Our FIN must reach the echo server through both relays, and its
        // FIN come back, or the read below never ends.
        w.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    writer.join().unwrap();
    assert_eq!(back.len(), data.len());
    assert!(back == data, "the echo differs from what was sent");

    for (name, h) in [("r1", &r1), ("r2", &r2), ("forward", &fw)] {
        eventually(name, || h.stats().open == 0);
        let st = h.stats();
        assert_eq!(st.spliced, 1, "{name}: {st:?}");
        assert_eq!(st.bytes_forward, data.len() as u64, "{name}: {st:?}");
        assert_eq!(st.bytes_back, data.len() as u64, "{name}: {st:?}");
        assert_eq!(st.reset + st.bad_header + st.refused, 0, "{name}: {st:?}");
    }
}

/// Reads until the relay closes; true if it sent no byte.
fn closed_without_data(mut s: TcpStream) -> bool {
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

/// Connects to `to`, sends `bytes`, and reads until the relay closes; true
/// if it sent nothing back.
fn closed_after(to: SocketAddr, bytes: &[u8]) -> bool {
    let mut s = client(to);
    match s.write_all(bytes) {
        Ok(()) => closed_without_data(s),
        // The relay refused and reset the connection before the whole
        // header was written (seen under load): closed, and nothing sent.
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
    }
}

#[test]
fn refused_hops_and_bad_headers_end_the_connection_and_the_relay_goes_on() {
    let echo = echo_server();
    let mut o = open_relay();
    o.policy.rules = vec![Rule::parse(&format!("reject 127.0.0.1:{}", echo.port())).unwrap()];
    let r = spawn_otcp_relay(o.clone()).unwrap();
    // The header timeout on a relay of its own, so that it cannot cut the
    // other cases short on a slow machine.
    o.header_timeout = Duration::from_millis(300);
    let r_quick = spawn_otcp_relay(o).unwrap();

    // The policy refuses the echo server as the next hop.
    let fw = forward(vec![v4(r.addr)], echo);
    assert!(closed_after(fw.addr, b"hello"));
    eventually("refused", || r.stats().refused == 1);

    // Not an oTCP header.
    assert!(closed_after(r.addr, b"GET / HTTP/1.1\r\n\r\n"));
    eventually("bad header", || r.stats().bad_header == 1);

    // A header with an empty route: nowhere to go.
    assert!(closed_after(r.addr, b"oT\x01\x00"));
    eventually("empty route", || r.stats().bad_header == 2);

    // Half a header, then silence: closed after the header timeout.
    assert!(closed_after(r_quick.addr, b"oT\x01"));
    eventually("header timeout", || r_quick.stats().header_timeout == 1);

    // A next hop nobody listens on.
    let (_hold, dead) = dead_port();
    let fw_dead = forward(vec![v4(r.addr)], dead);
    assert!(closed_after(fw_dead.addr, b"hello"));
    eventually("connect failed", || r.stats().connect_failed == 1);

    // Still serving: a second relay behind it reaches the echo server
    // (the policy refuses only the echo server itself as r's next hop).
    let r2 = spawn_otcp_relay(open_relay()).unwrap();
    let fw_ok = forward(vec![v4(r.addr), v4(r2.addr)], echo);
    let mut s = client(fw_ok.addr);
    s.write_all(b"still here").unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"still here");
    let st = r.stats();
    assert_eq!((st.spliced, st.reset), (1, 0), "{st:?}");
}

#[test]
fn bad_options_are_refused_at_start() {
    let mut o = open_relay();
    o.splice_bytes = 100;
    let e = spawn_otcp_relay(o).unwrap_err();
    assert!(e.0.contains("--buffer") && e.0.contains("4096"), "{e}");
    let mut o = open_relay();
    o.max_connections = 0;
    let e = spawn_otcp_relay(o).unwrap_err();
    assert!(e.0.contains("--max-connections"), "{e}");
    let relays = vec![v4("127.0.0.1:1".parse().unwrap()); 17];
    let e = spawn_otcp_forward(ForwardOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        relays,
        v4("127.0.0.1:2".parse().unwrap()),
    ))
    .unwrap_err();
    assert!(e.0.contains("--via"), "{e}");
    let mut o = open_relay();
    o.congestion = Some("no-such-cc".into());
    let e = spawn_otcp_relay(o).unwrap_err();
    assert!(e.0.contains("--cc no-such-cc"), "{e}");
}

/// `--cc`: the connections the relay makes get the congestion control
/// (reno, which every kernel has and every namespace may use), as `ss`
/// shows while the connection is open, and the bytes still cross. (With a
/// system default of reno the check cannot tell; this machine's is not.)
#[test]
fn the_congestion_control_goes_on_the_connections_a_relay_makes() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let to = v4(l.local_addr().unwrap());
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = wait.recv();
        s.write_all(b"hello").unwrap();
    });
    let mut o = open_relay();
    o.congestion = Some("reno".into());
    let r = spawn_otcp_relay(o).unwrap();
    let mut f = ForwardOptions::new("127.0.0.1:0".parse().unwrap(), vec![v4(r.addr)], to);
    f.congestion = Some("reno".into());
    let fw = spawn_otcp_forward(f).unwrap();
    let mut s = client(fw.addr);
    // The relay's connection to the server: its local end is the one
    // whose peer is the server's port.
    let ss = |filter: &str| {
        let out = std::process::Command::new("ss")
            .args(["-tin", "state", "established", filter])
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let mut seen = None;
    for _ in 0..100 {
        if let Ok(text) = ss(&format!("dport = :{}", to.port())) {
            if text.lines().count() > 1 {
                seen = Some(text);
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    go.send(()).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hello");
    server.join().unwrap();
    match seen {
        Some(text) => assert!(text.contains(" reno "), "{text}"),
        // No `ss` here: nothing to look at.
        None => eprintln!("ss not available or saw no connection; congestion control unchecked"),
    }
}

#[test]
fn probes_measure_what_a_relay_reaches_and_selection_uses_them() {
    let echo = echo_server();
    let ok = spawn_otcp_relay(open_relay()).unwrap();
    // Default policy: refuses loopback destinations.
    let strict = spawn_otcp_relay(RelayOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    let (_hold, dead) = dead_port();
    let sel = select_relay(
        &[dead, v4(strict.addr), v4(ok.addr)],
        echo,
        Duration::from_secs(2),
        3,
    )
    .unwrap();
    assert!(sel.direct.is_ok(), "{sel:?}");
    let c = &sel.candidates;
    assert!(
        c[0].to_relay.is_err() && c[0].to_destination.is_err(),
        "{c:?}"
    );
    assert!(c[1].to_relay.is_ok(), "{c:?}");
    assert!(
        c[1].to_destination
            .as_ref()
            .is_err_and(|e| e.contains("refuses")),
        "{c:?}"
    );
    assert!(
        c[2].to_relay.is_ok() && c[2].to_destination.is_ok(),
        "{c:?}"
    );
    // Loopback RTTs are all alike: the choice is direct or the open relay,
    // and its path RTT is that path's largest hop.
    let expect = match sel.chosen {
        None => *sel.direct.as_ref().unwrap(),
        Some(r) if r == v4(ok.addr) => {
            let (a, b) = (&c[2].to_relay, &c[2].to_destination);
            (*a.as_ref().unwrap()).max(*b.as_ref().unwrap())
        }
        Some(r) => panic!("chose {r}, which cannot reach the destination"),
    };
    assert_eq!(sel.path_rtt, expect);
    assert!(sel.path_rtt < Dur::from_secs(1), "{sel:?}");
    // Each probe is counted where it was answered: three per reachable relay.
    eventually("probes", || {
        ok.stats().probes == 3 && strict.stats().probes == 3
    });
    assert_eq!(ok.stats().spliced, 0);

    // Nothing reaches a dead destination.
    let e = select_relay(&[v4(ok.addr)], dead, Duration::from_secs(2), 1).unwrap_err();
    assert!(e.0.contains("reachable neither"), "{e}");
}

#[test]
fn the_path_with_the_lowest_largest_hop_rtt_is_chosen() {
    let ms = |x: u64| Ok(Dur::from_millis(x));
    let cand = |port: u16, a: Result<Dur, String>, b: Result<Dur, String>| Candidate {
        relay: SocketAddrV4::new([192, 0, 2, 1].into(), port),
        to_relay: a,
        to_destination: b,
    };
    // Direct 200 ms; through A 120 + 90 = 210 ms in all but a path RTT of
    // 120 ms (seed 001 §2: the slowest hop sets the rate); B is faster per
    // hop but cannot reach the destination.
    let cs = vec![
        cand(1, ms(120), ms(90)),
        cand(2, ms(10), Err("unreachable".into())),
        cand(3, ms(150), ms(100)),
    ];
    assert_eq!(
        choose(&ms(200), &cs),
        Some((Some(cs[0].relay), Dur::from_millis(120)))
    );
    // A direct path as good as the best relay wins the tie.
    assert_eq!(choose(&ms(120), &cs), Some((None, Dur::from_millis(120))));
    // Unreachable directly: the relay path is the only one.
    assert_eq!(
        choose(&Err("unreachable".into()), &cs[2..]),
        Some((Some(cs[2].relay), Dur::from_millis(150)))
    );
    assert_eq!(choose(&Err("unreachable".into()), &cs[1..2]), None);
}

/// A server that accepts and then sends `n` bytes (forever if `None`),
/// never reading.
fn source_server(n: Option<usize>) -> SocketAddrV4 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = v4(l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let chunk = vec![7u8; 64 * 1024];
                let mut left = n.unwrap_or(usize::MAX);
                while left > 0 {
                    let k = left.min(chunk.len());
                    if s.write_all(&chunk[..k]).is_err() {
                        return;
                    }
                    left -= k;
                }
                // Then hold the connection open, silent.
                std::thread::sleep(Duration::from_secs(30));
            });
        }
    });
    a
}

/// Reads until the end; Ok(bytes) on a FIN, Err on a reset.
fn read_until_end(mut s: TcpStream) -> std::io::Result<usize> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match s.read(&mut buf)? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

#[test]
fn a_relay_stopped_mid_transfer_resets_rather_than_ends_the_stream() {
    let src = source_server(None);
    let r = spawn_otcp_relay(open_relay()).unwrap();
    let fw = forward(vec![v4(r.addr)], src);
    let mut s = client(fw.addr);
    let mut buf = vec![0u8; 1 << 20];
    s.read_exact(&mut buf).unwrap();
    eventually("spliced", || r.stats().open == 1);
    r.shutdown();
    // A FIN here would make a stream without its own framing look complete.
    let end = read_until_end(s);
    assert!(end.is_err(), "the client saw a clean end: {end:?}");
    eventually("forwarder counted the reset", || fw.stats().reset == 1);
}

#[test]
fn a_connection_silent_both_ways_is_reset_after_the_idle_timeout() {
    // The source sends 1 MiB, then holds the connection open without a byte.
    let src = source_server(Some(1 << 20));
    let mut o = open_relay();
    // Long enough that the 1 MiB never pauses this long on a slow machine.
    o.idle_timeout = Duration::from_secs(2);
    let r = spawn_otcp_relay(o).unwrap();
    let fw = forward(vec![v4(r.addr)], src);
    let s = client(fw.addr);
    let end = read_until_end(s);
    assert!(end.is_err(), "expected a reset, got {end:?}");
    let st = r.stats();
    assert_eq!((st.idle, st.reset), (1, 1), "{st:?}");
    assert_eq!(st.bytes_back, 1 << 20, "{st:?}");
}
