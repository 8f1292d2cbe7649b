//! hopwise against libtorrent over µTP on loopback, with libtorrent's TCP
//! off (interop/libtorrent/ltpeer.py). Needs libtorrent's Python bindings,
//! so ignored by default:
//!
//! ```sh
//! interop/libtorrent/setup.sh
//! HOPWISE_LT_PYTHON=$PWD/.venv-libtorrent/bin/python \
//!   cargo test -p hopwise --test it --locked -- --ignored interop
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The quick variant's torrent: 8 MiB in 256 KiB pieces.
const SIZE: usize = 8 << 20;
/// How long any one process may take (a hang fails the test, with its output).
const LIMIT: Duration = Duration::from_secs(120);

fn python() -> PathBuf {
    match std::env::var_os("HOPWISE_LT_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => panic!(
            "HOPWISE_LT_PYTHON is not set: run interop/libtorrent/setup.sh and set \
             HOPWISE_LT_PYTHON to the python it prints (e.g. $PWD/.venv-libtorrent/bin/python)"
        ),
    }
}

fn ltpeer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/libtorrent/ltpeer.py")
}

fn lt(args: &[&str]) -> Command {
    let mut c = Command::new(python());
    c.arg(ltpeer()).args(args);
    c
}

fn hopwise(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hopwise"));
    c.args(args);
    c
}

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hopwise-interop-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `n` bytes that differ from piece to piece (xorshift64), so a piece
/// served at the wrong offset fails its hash.
fn write_data(path: &Path, n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::File::create(path)
        .unwrap()
        .write_all(&data)
        .unwrap();
    data
}

/// A UDP port free on loopback now.
fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(mut c: Command, what: &str) -> Child {
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"))
}

/// Waits for `child` (killing it after [`LIMIT`]) and fails the test with
/// its stderr unless it succeeded; returns its output.
fn finish(mut child: Child, what: &str) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The last JSON line of a process's stdout.
fn summary(out: &Output, what: &str) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("{what} printed no JSON line: {text}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line}"))
}

/// libtorrent's own view: at least one peer, every one of them µTP.
fn assert_utp_only(s: &serde_json::Value, what: &str) {
    let peers = s["peers"].as_array().expect("peers");
    assert!(!peers.is_empty(), "{what}: libtorrent saw no peer: {s}");
    assert!(
        peers.iter().all(|p| p["utp"] == true),
        "{what}: a peer that is not µTP: {s}"
    );
    assert_eq!(s["tcp_peers"], 0, "{what}: {s}");
}

/// Starts `ltpeer.py seed` and waits until it says it is seeding.
fn lt_seed(torrent: &Path, file: &Path, port: u16) -> Child {
    let listen = format!("127.0.0.1:{port}");
    let mut seed = spawn(
        lt(&[
            "seed",
            torrent.to_str().unwrap(),
            "--file",
            file.to_str().unwrap(),
            "--listen",
            &listen,
            "--once",
        ]),
        "ltpeer.py seed",
    );
    // Its first stderr line says the session is up.
    let mut err = seed.stderr.take().unwrap();
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while std::io::Read::read(&mut err, &mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8_lossy(&line);
    assert!(line.contains("seeding"), "ltpeer.py seed: {line}");
    seed.stderr = Some(err);
    seed
}

#[test]
#[ignore = "needs libtorrent's Python bindings (HOPWISE_LT_PYTHON, interop/libtorrent/setup.sh)"]
fn interop_libtorrent_to_libtorrent_over_utp_only() {
    // The harness itself: both ends libtorrent, TCP off.
    let d = scratch("lt-lt");
    let data = write_data(&d.join("data.bin"), SIZE);
    let torrent = d.join("data.torrent");
    finish(
        spawn(
            lt(&[
                "make",
                d.join("data.bin").to_str().unwrap(),
                "--out",
                torrent.to_str().unwrap(),
            ]),
            "ltpeer.py make",
        ),
        "ltpeer.py make",
    );
    let port = free_port();
    let seed = lt_seed(&torrent, &d.join("data.bin"), port);
    let save = d.join("dl");
    let leech = finish(
        spawn(
            lt(&[
                "leech",
                torrent.to_str().unwrap(),
                "--peer",
                &format!("127.0.0.1:{port}"),
                "--save",
                save.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ]),
            "ltpeer.py leech",
        ),
        "ltpeer.py leech",
    );
    let seed = finish(seed, "ltpeer.py seed");
    let (l, s) = (summary(&leech, "leech"), summary(&seed, "seed"));
    assert_eq!(l["complete"], true, "{l}");
    assert_eq!(l["hash_failures"], 0, "{l}");
    assert_utp_only(&l, "leech");
    assert_utp_only(&s, "seed");
    assert!(std::fs::read(save.join("data.bin")).unwrap() == data);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
#[ignore = "needs libtorrent's Python bindings (HOPWISE_LT_PYTHON, interop/libtorrent/setup.sh)"]
fn interop_hopwise_downloads_from_a_libtorrent_seed_over_utp_only() {
    let d = scratch("lt-seed");
    let file = d.join("data.bin");
    let data = write_data(&file, SIZE);
    let torrent = d.join("data.torrent");
    // libtorrent makes the torrent (v1 only), so hopwise reads libtorrent's metainfo.
    finish(
        spawn(
            lt(&[
                "make",
                file.to_str().unwrap(),
                "--out",
                torrent.to_str().unwrap(),
            ]),
            "ltpeer.py make",
        ),
        "ltpeer.py make",
    );
    let port = free_port();
    let seed = lt_seed(&torrent, &file, port);
    let got = d.join("got.bin");
    let dl = finish(
        spawn(
            hopwise(&[
                "bt",
                "download",
                torrent.to_str().unwrap(),
                "--peer",
                &format!("127.0.0.1:{port}"),
                "--out",
                got.to_str().unwrap(),
                "--transport",
                "utp",
                "--json",
            ]),
            "hopwise bt download",
        ),
        "hopwise bt download",
    );
    let seed = finish(seed, "ltpeer.py seed");
    let h = summary(&dl, "hopwise bt download");
    assert_eq!(h["bytes"], SIZE as u64, "{h}");
    assert_eq!(h["hash_failures"], 0, "{h}");
    assert_eq!(h["pieces"], (SIZE / (256 << 10)) as u64, "{h}");
    assert!(
        std::fs::read(&got).unwrap() == data,
        "hopwise's file differs from the seed's"
    );
    // libtorrent, TCP off, saw hopwise as a µTP peer and nothing over TCP.
    let s = summary(&seed, "ltpeer.py seed");
    assert_utp_only(&s, "libtorrent seed");
    assert_eq!(
        s["bytes"], SIZE as u64,
        "the seed uploaded the file once: {s}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
#[ignore = "needs libtorrent's Python bindings (HOPWISE_LT_PYTHON, interop/libtorrent/setup.sh)"]
fn interop_libtorrent_downloads_from_hopwise_bt_seed_over_utp_only() {
    let d = scratch("hw-seed");
    let file = d.join("data.bin");
    let data = write_data(&file, SIZE);
    let torrent = d.join("data.torrent");
    // hopwise makes the torrent, so libtorrent reads hopwise's metainfo.
    finish(
        spawn(
            hopwise(&[
                "bt",
                "make",
                file.to_str().unwrap(),
                "--out",
                torrent.to_str().unwrap(),
                "--piece-size",
                "256KiB",
            ]),
            "hopwise bt make",
        ),
        "hopwise bt make",
    );
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let seed = spawn(
        hopwise(&[
            "bt",
            "seed",
            file.to_str().unwrap(),
            "--torrent",
            torrent.to_str().unwrap(),
            "--listen",
            &listen,
            "--transport",
            "utp",
            "--once",
            "--json",
        ]),
        "hopwise bt seed",
    );
    // The leecher dials again until the seed answers (ltpeer.py's REDIAL_S).
    let save = d.join("dl");
    let leech = finish(
        spawn(
            lt(&[
                "leech",
                torrent.to_str().unwrap(),
                "--peer",
                &listen,
                "--save",
                save.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--timeout",
                "100",
            ]),
            "ltpeer.py leech",
        ),
        "ltpeer.py leech",
    );
    finish(seed, "hopwise bt seed");
    let l = summary(&leech, "ltpeer.py leech");
    assert_eq!(l["complete"], true, "{l}");
    assert_eq!(l["hash_failures"], 0, "{l}");
    assert_utp_only(&l, "libtorrent leecher");
    let name = l["file"].as_str().expect("file");
    assert!(
        std::fs::read(name).unwrap() == data,
        "libtorrent's file differs from hopwise's"
    );
    let _ = std::fs::remove_dir_all(&d);
}
