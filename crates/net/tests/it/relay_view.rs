//! What each relay can see: a download through three relays on loopback,
//! with every frame and relay cell each node's circuit layer handles
//! recorded (`Node::set_observer`). Onion layers must keep the path, the
//! destination and the data from every relay but the one that needs them.

use crate::common;
use hopwise_net::testbed::{self, Lab, LabOptions};
use hopwise_proto::backtap::wire::{self, CellBody};
use hopwise_proto::circuit::cell::{self, RelayMsg};
use hopwise_proto::circuit::control::{self, CtlMsg, Frame};
use hopwise_proto::circuit::{Observed, Observer};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one node's circuit layer handled.
#[derive(Default)]
struct Seen {
    /// Frames in and out, with the link's number.
    frames: Vec<(u32, Vec<u8>)>,
    opened: Vec<CellBody>,
    sealed: Vec<CellBody>,
}

fn recorder() -> (Arc<Mutex<Seen>>, Observer) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s = seen.clone();
    let obs: Observer = Box::new(move |o| {
        let mut s = s.lock().unwrap();
        match o {
            Observed::FrameIn { link, frame } | Observed::FrameOut { link, frame } => {
                s.frames.push((link.0, frame.to_vec()))
            }
            Observed::CellOpened { body, .. } => s.opened.push(*body),
            Observed::CellSealed { body, .. } => s.sealed.push(*body),
        }
    });
    (seen, obs)
}

/// The cell bodies a frame carries (BackTap cells and RELAY messages).
fn bodies(frame: &[u8]) -> Vec<CellBody> {
    match control::decode_frame(frame) {
        Ok(Frame::BackTap(d)) => wire::decode(d)
            .map(|dg| {
                dg.items()
                    .filter_map(|i| match i {
                        wire::Item::Cell(c) => Some(*c.body),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Ok(Frame::Ctl {
            msg: CtlMsg::Relay { body, .. },
            ..
        }) => vec![*body],
        _ => Vec::new(),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Every aligned 16-byte block of the file: a cell holding 31 or more
/// bytes of it in a row holds one of these. (Addresses never travel inside
/// frames at all; the address checks below guard against a change that
/// would put them there.)
struct Plain(HashSet<[u8; 16]>);

impl Plain {
    fn new(file: &[u8]) -> Plain {
        Plain(
            file.chunks_exact(16)
                .map(|c| c.try_into().unwrap())
                .collect(),
        )
    }
    fn in_(&self, bytes: &[u8]) -> bool {
        bytes
            .windows(16)
            .any(|w| self.0.contains(<&[u8; 16]>::try_from(w).unwrap()))
    }
}

#[test]
fn each_relay_sees_only_its_neighbours_and_only_the_exit_the_data() {
    let d = tempfile::tempdir().unwrap();
    let mut o = LabOptions::new(d.path());
    o.allow_loopback_exit = true;
    let recs: Vec<(Arc<Mutex<Seen>>, Observer)> = (0..4).map(|_| recorder()).collect();
    let mut seen = Vec::new();
    let mut obs = Vec::new();
    for (s, ob) in recs {
        seen.push(s);
        obs.push(ob);
    }
    let proxy_obs = obs.pop();
    let lab = Lab::start_observed(&o, obs, proxy_obs).expect("lab starts");
    let rt = common::runtime();
    let seed = 0x0b5e_77ed;
    let size = 1_000_000u64;
    let (dl, port) = rt.block_on(async {
        lab.wait_ready(Duration::from_secs(30))
            .await
            .expect("circuit");
        let server = testbed::start_file_server(seed, size).await.unwrap();
        let dl = tokio::time::timeout(
            Duration::from_secs(120),
            testbed::download(lab.socks(), "127.0.0.1", server.port()),
        )
        .await
        .expect("in time")
        .expect("download");
        (dl, server.port())
    });
    assert_eq!(dl.hash, testbed::expected_hash(seed, size));
    let names: Vec<String> = lab.relays.iter().map(|r| r.name.clone()).collect();
    let keys: Vec<[u8; 32]> = lab.relays.iter().map(|r| r.public_key).collect();
    let client_key = lab.proxy.public_key;
    let client_addr = lab.proxy.addr;
    lab.shutdown();

    let mut file = vec![0u8; size as usize];
    testbed::fill(seed, 0, &mut file);
    let plain = Plain::new(&file);
    let host = b"127.0.0.1";
    // The destination as BEGIN writes it: port, host length, host.
    let mut begin = port.to_be_bytes().to_vec();
    begin.push(host.len() as u8);
    begin.extend_from_slice(host);
    let mut client_bin = match client_addr.ip() {
        std::net::IpAddr::V4(a) => a.octets().to_vec(),
        std::net::IpAddr::V6(a) => a.octets().to_vec(),
    };
    client_bin.extend_from_slice(&client_addr.port().to_be_bytes());
    let client_txt = client_addr.to_string().into_bytes();

    let seen: Vec<std::sync::MutexGuard<Seen>> = seen.iter().map(|s| s.lock().unwrap()).collect();
    let (entry, middle, exit, client) = (&seen[0], &seen[1], &seen[2], &seen[3]);
    for (i, s) in seen.iter().enumerate() {
        assert!(!s.frames.is_empty(), "node {i} handled frames");
    }

    // Every relay cell in plaintext: what the client and the exit wrote
    // and read.
    let plaintexts: HashSet<CellBody> = [client, exit]
        .iter()
        .flat_map(|s| s.opened.iter().chain(&s.sealed).copied())
        .collect();
    assert!(plaintexts.len() > 1000, "a megabyte is two thousand cells");

    for (i, s) in [(0, entry), (1, middle)] {
        let who = &names[i];
        let mut cells = 0;
        for (_, f) in &s.frames {
            assert!(!plain.in_(f), "{who} saw file bytes in clear");
            assert!(!contains(f, host), "{who} saw the destination");
            assert!(!contains(f, &begin), "{who} saw the destination");
            assert!(!contains(f, b"GET /"), "{who} saw the request");
            for b in bodies(f) {
                cells += 1;
                assert!(
                    !plaintexts.contains(&b),
                    "{who} handled a cell body equal to its plaintext"
                );
            }
        }
        assert!(cells > 2000, "{who} forwarded the download ({cells} cells)");
        // The only cells a relay opens are the EXTEND for it, naming its
        // successor; the only ones it writes are its EXTENDED.
        assert_eq!(s.opened.len(), 1, "{who} opened one cell");
        match cell::decode(&s.opened[0]) {
            Ok((_, RelayMsg::Extend { relay, .. })) => assert_eq!(relay, keys[i + 1]),
            other => panic!("{who} opened {other:?}"),
        }
        assert_eq!(s.sealed.len(), 1, "{who} wrote one cell");
        assert!(matches!(
            cell::decode(&s.sealed[0]),
            Ok((_, RelayMsg::Extended { .. }))
        ));
    }
    // The entry never learns the exit.
    for (_, f) in &entry.frames {
        assert!(!contains(f, &keys[2]), "the entry saw the exit's key");
    }
    // The middle never talks to the client nor learns of it.
    let dir_len = keys.len() as u32;
    for (l, f) in &middle.frames {
        assert!(*l < dir_len, "the middle has a link to a client");
        assert!(!contains(f, &client_key), "the middle saw the client's key");
        assert!(
            !contains(f, &client_bin),
            "the middle saw the client's address"
        );
        assert!(
            !contains(f, &client_txt),
            "the middle saw the client's address"
        );
    }
    // The exit sees the destination and the data, and not the client.
    assert!(
        exit.opened.iter().any(|b| matches!(
            cell::decode(b),
            Ok((_, RelayMsg::Begin { host: h, port: p, .. })) if h.as_bytes() == host && p == port
        )),
        "the exit read the BEGIN"
    );
    assert!(
        exit.sealed.iter().any(|b| plain.in_(b)),
        "the exit wrote the file in clear"
    );
    for (l, f) in &exit.frames {
        assert!(*l < dir_len, "the exit has a link to a client");
        assert!(!contains(f, &client_key), "the exit saw the client's key");
        assert!(
            !contains(f, &client_bin),
            "the exit saw the client's address"
        );
        assert!(
            !contains(f, &client_txt),
            "the exit saw the client's address"
        );
    }
}
