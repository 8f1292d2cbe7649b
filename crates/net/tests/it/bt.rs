//! `hopwise_net::bt`: the one-peer client against the seeder, over
//! in-memory pipes and TCP loopback; a peer with the wrong torrent, a
//! corrupt block, a source serving a wrong piece, a peer that speaks
//! messages the codec skips.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use hopwise_net::bt::{
    download, seed, BtError, DownloadOptions, DownloadReport, Progress, SeedOptions, Storage,
};
use hopwise_proto::bittorrent::metainfo::{Builder, Metainfo};
use hopwise_proto::bittorrent::{encode_piece, Event, Handshake, Msg, Reader, BLOCK};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

fn content(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect()
}

/// A file and its torrent in `dir`.
fn make(dir: &Path, name: &str, data: &[u8], piece: u32) -> (PathBuf, Metainfo) {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    let mut b = Builder::new(name, piece).unwrap();
    b.update(data);
    let meta = Metainfo::parse(&b.finish(Some("http://invalid/announce")).unwrap()).unwrap();
    (path, meta)
}

fn opts(pipeline: usize) -> DownloadOptions {
    DownloadOptions {
        peer: "seeder".into(),
        pipeline,
        ..DownloadOptions::default()
    }
}

/// Runs a seeder of `src` and a download into `out` over `a`/`b`.
async fn pair<A, B>(
    a: A,
    b: B,
    meta: &Metainfo,
    src: &Path,
    out: &Path,
    o: &DownloadOptions,
) -> (Result<DownloadReport, BtError>, Vec<Progress>)
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Unpin,
{
    let seed_store = Storage::open(src, meta).unwrap();
    let mut store = Storage::create(out, meta).unwrap();
    let mut seen = Vec::new();
    let sopts = SeedOptions {
        peer: "leecher".into(),
        ..SeedOptions::default()
    };
    let mut note = |p: &Progress| seen.push(*p);
    let (d, _s) = tokio::join!(
        download(a, meta, &mut store, o, &mut note),
        seed(b, meta, &seed_store, &sopts)
    );
    (d, seen)
}

#[tokio::test]
async fn download_is_byte_exact_over_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    // 17 pieces of 32 KiB (two blocks each) and a short last one.
    let data = content(16 * 32768 + 20_000, 1);
    let (src, meta) = make(dir.path(), "src.bin", &data, 32768);
    let out = dir.path().join("out.bin");
    let (a, b) = tokio::io::duplex(64 << 10);
    let (r, seen) = pair(a, b, &meta, &src, &out, &opts(8)).await;
    let r = r.unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), data);
    assert!(!dir.path().join("out.bin.part").exists());
    assert_eq!((r.bytes, r.pieces), (data.len() as u64, 17));
    assert_eq!((r.hash_failures, r.refetched, r.wasted_bytes), (0, 0, 0));
    assert_eq!(seen.len(), 17);
    assert_eq!(seen.last().unwrap().bytes, data.len() as u64);
    assert!(seen.windows(2).all(|w| w[0].bytes < w[1].bytes));
}

#[tokio::test]
async fn download_is_byte_exact_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(3 << 20, 2);
    let (src, meta) = make(dir.path(), "src.bin", &data, 256 << 10);
    let out = dir.path().join("out.bin");
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (a, b) = tokio::join!(tokio::net::TcpStream::connect(addr), l.accept());
    let (r, _) = pair(a.unwrap(), b.unwrap().0, &meta, &src, &out, &opts(256)).await;
    assert_eq!(r.unwrap().pieces, 12);
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

/// A peer whose handshake names another torrent: the client says so,
/// naming the peer and both hashes; the seeder refuses such a client.
#[tokio::test]
async fn wrong_info_hash_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, meta) = make(dir.path(), "a.bin", &content(5000, 3), 1024);
    let (src_b, other) = make(dir.path(), "b.bin", &content(5000, 4), 1024);
    // The client's side.
    let (a, mut b) = tokio::io::duplex(4096);
    let fake = async move {
        let mut hs = [0u8; 68];
        b.read_exact(&mut hs).await.unwrap();
        let h = Handshake {
            info_hash: other.info_hash,
            peer_id: [1; 20],
            fast: false,
        };
        b.write_all(&h.encode()).await.unwrap();
        b
    };
    let mut store = Storage::create(&dir.path().join("out"), &meta).unwrap();
    let (o, mut note) = (opts(4), |_: &Progress| {});
    let (r, _b) = tokio::join!(download(a, &meta, &mut store, &o, &mut note), fake);
    let e = r.unwrap_err();
    assert!(matches!(e, BtError::InfoHash { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.starts_with("peer seeder: "), "{msg}");
    assert!(
        msg.contains("info_hash") && msg.contains(&meta.info_hash_hex()),
        "{msg}"
    );
    // The seeder's side.
    let (mut a, b) = tokio::io::duplex(4096);
    let hs = Handshake {
        info_hash: meta.info_hash,
        peer_id: [2; 20],
        fast: false,
    };
    a.write_all(&hs.encode()).await.unwrap();
    let st = Storage::open(&src_b, &other).unwrap();
    let e = seed(b, &other, &st, &SeedOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, BtError::InfoHash { .. }), "{e}");
}

/// Flips one byte of what the client reads, at stream offset `at`.
struct Corrupt<S> {
    inner: S,
    read: u64,
    at: u64,
}

impl<S: AsyncRead + Unpin> AsyncRead for Corrupt<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        let (from, at) = (self.read, self.at);
        if (from..from + n).contains(&at) {
            buf.filled_mut()[before + (at - from) as usize] ^= 0x40;
        }
        self.read += n;
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corrupt<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        b: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, b)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One corrupt block: the piece fails its check, is counted and fetched
/// again, and the output is byte-exact.
#[tokio::test]
async fn corrupt_block_is_refetched() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(10 * 32768, 5);
    let (src, meta) = make(dir.path(), "src.bin", &data, 32768);
    let out = dir.path().join("out.bin");
    let (a, b) = tokio::io::duplex(64 << 10);
    // The seeder sends its handshake (68), a bitfield (4 + 1 + 2), an
    // unchoke (5), then piece messages (13-byte header + block): offset
    // 100 of the first block.
    let at = 68 + 7 + 5 + 13 + 100;
    let a = Corrupt {
        inner: a,
        read: 0,
        at,
    };
    let (r, seen) = pair(a, b, &meta, &src, &out, &opts(4)).await;
    let r = r.unwrap();
    assert_eq!((r.hash_failures, r.refetched), (1, 1));
    assert_eq!(std::fs::read(&out).unwrap(), data);
    assert_eq!(seen.last().unwrap().hash_failures, 1);
}

/// A source whose piece 2 is wrong: every copy fails, the client gives up
/// after `max_hash_failures` naming the piece, and the partial file holds
/// nothing of piece 2 (zeros) but the verified pieces before it.
#[tokio::test]
async fn failed_pieces_are_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(6 * 16384, 6);
    let (src, meta) = make(dir.path(), "src.bin", &data, 16384);
    let mut bad = data.clone();
    bad[2 * 16384 + 7] ^= 1;
    std::fs::write(&src, &bad).unwrap();
    let out = dir.path().join("out.bin");
    let (a, b) = tokio::io::duplex(64 << 10);
    let o = DownloadOptions {
        max_hash_failures: 3,
        ..opts(1)
    };
    let (r, _) = pair(a, b, &meta, &src, &out, &o).await;
    let e = r.unwrap_err().to_string();
    assert!(e.contains("peer seeder") && e.contains("piece 2"), "{e}");
    assert!(!out.exists());
    let part = std::fs::read(dir.path().join("out.bin.part")).unwrap();
    assert_eq!(part.len(), data.len());
    assert_eq!(&part[..2 * 16384], &data[..2 * 16384]);
    assert!(part[2 * 16384..3 * 16384].iter().all(|&b| b == 0));
}

/// The seeder tolerates what real clients send besides requests (port,
/// an extended handshake, have all, not interested, a cancel) and serves
/// blocks byte-exact; a request beyond the piece is an error naming it.
#[tokio::test]
async fn seeder_tolerates_other_messages() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(3 * 16384 + 10, 7);
    let (src, meta) = make(dir.path(), "src.bin", &data, 16384);
    let st = Storage::open(&src, &meta).unwrap();
    let (mut a, b) = tokio::io::duplex(1 << 20);
    let mut v = Handshake {
        info_hash: meta.info_hash,
        peer_id: [3; 20],
        fast: false,
    }
    .encode()
    .to_vec();
    v.extend_from_slice(&[0, 0, 0, 3, 9, 0x1a, 0xe1]);
    v.extend_from_slice(&[0, 0, 0, 4, 20, 0, b'd', b'e']);
    for m in [
        Msg::HaveNone,
        Msg::Interested,
        Msg::Request {
            index: 1,
            begin: 0,
            len: BLOCK,
        },
        Msg::Request {
            index: 3,
            begin: 0,
            len: 10,
        },
        Msg::NotInterested,
        Msg::KeepAlive,
    ] {
        m.encode(&mut v);
    }
    a.write_all(&v).await.unwrap();
    let client = async move {
        let mut r = Reader::with_handshake(Some(meta.info_hash)).keep_blocks();
        let mut evs = Vec::new();
        let mut buf = [0u8; 4096];
        while evs
            .iter()
            .filter(|e| matches!(e, Event::Block { .. }))
            .count()
            < 2
        {
            let n = a.read(&mut buf).await.unwrap();
            assert!(n > 0);
            r.push(&buf[..n], &mut evs).unwrap();
        }
        // Now one request too far, which ends the session.
        let mut v = Vec::new();
        Msg::Request {
            index: 3,
            begin: 5,
            len: 10,
        }
        .encode(&mut v);
        a.write_all(&v).await.unwrap();
        (evs, a)
    };
    let so = SeedOptions::default();
    let (e, (evs, _a)) = tokio::join!(seed(b, &meta, &st, &so), client);
    let mut want = Vec::new();
    encode_piece(1, 0, &data[16384..32768], &mut want);
    assert!(matches!(evs[0], Event::Handshake(_)));
    assert!(matches!(&evs[1], Event::Msg(Msg::Bitfield(f)) if f == &vec![0xf0]));
    assert_eq!(evs[2], Event::Msg(Msg::Unchoke));
    assert_eq!(
        evs[3],
        Event::Block {
            index: 1,
            begin: 0,
            data: data[16384..32768].to_vec()
        }
    );
    assert_eq!(
        evs[4],
        Event::Block {
            index: 3,
            begin: 0,
            data: data[3 * 16384..].to_vec()
        }
    );
    let e = e.unwrap_err().to_string();
    assert!(e.contains("piece 3") && e.contains("beyond"), "{e}");
}

/// A torrent file cut short or with a malformed field is refused with an
/// error naming the key.
#[test]
fn malformed_torrent_names_the_key() {
    let mut b = Builder::new("x", 16384).unwrap();
    b.update(&content(40_000, 8));
    let file = b.finish(None).unwrap();
    let e = Metainfo::parse(&file[..file.len() - 30]).unwrap_err();
    assert_eq!(e.key, "info.pieces");
    assert!(e.to_string().contains("truncated"), "{e}");
    let at = file.windows(7).position(|w| w == b"i16384e").unwrap();
    let mut bad = file[..at].to_vec();
    bad.extend_from_slice(b"i-5e");
    bad.extend_from_slice(&file[at + 7..]);
    let e = Metainfo::parse(&bad).unwrap_err();
    assert!(e.to_string().contains("`info.piece length`"), "{e}");
}

/// Over µTP with the stream's acknowledgement probe the seeder's report
/// ends at the peer's acknowledgement of the last block: by then nothing
/// the seeder wrote is unacknowledged.
#[tokio::test]
async fn seed_over_utp_reports_until_the_last_block_is_acknowledged() {
    use hopwise_net::utp::{UtpOptions, UtpSocket};
    let dir = tempfile::tempdir().unwrap();
    let data = content(2 << 20, 9);
    let (src, meta) = make(dir.path(), "src.bin", &data, 256 << 10);
    let out = dir.path().join("out.bin");
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let sa = UtpSocket::bind(any, UtpOptions::default()).await.unwrap();
    let sb = UtpSocket::bind(any, UtpOptions::default()).await.unwrap();
    let (a, b) = tokio::join!(sa.connect(sb.local_addr()), sb.accept());
    let (a, (b, _)) = (a.unwrap(), b.unwrap());
    let probe = b.ack_probe();
    assert_eq!(probe.drained_at(), None, "nothing written yet");
    let seed_store = Storage::open(&src, &meta).unwrap();
    let mut store = Storage::create(&out, &meta).unwrap();
    let sopts = SeedOptions {
        peer: "leecher".into(),
        ack_probe: Some(probe.clone()),
        ..SeedOptions::default()
    };
    let (o, mut note) = (opts(64), |_: &Progress| {});
    let (d, s) = tokio::join!(
        download(a, &meta, &mut store, &o, &mut note),
        seed(b, &meta, &seed_store, &sopts)
    );
    d.unwrap();
    let s = s.unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), data);
    assert_eq!(s.bytes, data.len() as u64);
    assert!(s.secs > 0.0);
}

/// A fake seeder of `data` (pieces of `meta`) on `b`: handshake, `first`
/// (raw messages after the handshake), then requests are handled by
/// `answer(request, seen_before)`: true sends the block, false ignores it.
/// Runs until the client closes.
async fn fake_seeder(
    mut b: tokio::io::DuplexStream,
    meta: Metainfo,
    data: Vec<u8>,
    first: Vec<u8>,
    mut answer: impl FnMut(bool) -> bool,
) {
    let mut reader = Reader::with_handshake(Some(meta.info_hash));
    let mut buf = vec![0u8; 64 << 10];
    let mut events = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let n = match b.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if reader.push(&buf[..n], &mut events).is_err() {
            return;
        }
        let mut out = Vec::new();
        for ev in events.drain(..) {
            match ev {
                Event::Handshake(_) => {
                    let h = Handshake {
                        info_hash: meta.info_hash,
                        peer_id: [3; 20],
                        fast: false,
                    };
                    out.extend_from_slice(&h.encode());
                    out.extend_from_slice(&first);
                }
                Event::Msg(Msg::Request { index, begin, len })
                    if answer(!seen.insert((index, begin))) =>
                {
                    let at = (index as u64 * meta.piece_length as u64 + begin as u64) as usize;
                    encode_piece(index, begin, &data[at..at + len as usize], &mut out);
                }
                _ => {}
            }
        }
        if b.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// Bitfield (all pieces) and unchoke for a torrent of `n` pieces.
fn have_all_unchoke(n: u32) -> Vec<u8> {
    let mut f = vec![0u8; (n as usize).div_ceil(8)];
    for i in 0..n as usize {
        f[i / 8] |= 0x80 >> (i % 8);
    }
    let mut out = Vec::new();
    Msg::Bitfield(f).encode(&mut out);
    Msg::Unchoke.encode(&mut out);
    out
}

/// A peer that drops our first requests (as libtorrent does beyond its
/// request queue) and answers only requests it saw before: the client
/// asks again after a stall, before its timeout, and completes.
#[tokio::test]
async fn dropped_requests_are_sent_again_after_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(4 * BLOCK as usize, 6);
    let (_, meta) = make(dir.path(), "src.bin", &data, BLOCK);
    let (a, b) = tokio::io::duplex(64 << 10);
    let fake = fake_seeder(
        b,
        meta.clone(),
        data.clone(),
        have_all_unchoke(4),
        |again| again,
    );
    let o = DownloadOptions {
        timeout: std::time::Duration::from_secs(2),
        ..opts(8)
    };
    let out = dir.path().join("out.bin");
    let mut store = Storage::create(&out, &meta).unwrap();
    let mut note = |_: &Progress| {};
    let (r, ()) = tokio::join!(download(a, &meta, &mut store, &o, &mut note), fake);
    let r = r.unwrap();
    assert_eq!(r.rerequested, 4);
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

/// A bitfield after a have message would overwrite it (BEP 3: the
/// bitfield only ever comes first): a protocol error naming it.
#[tokio::test]
async fn late_bitfield_is_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(4 * BLOCK as usize, 7);
    let (_, meta) = make(dir.path(), "src.bin", &data, BLOCK);
    let (a, b) = tokio::io::duplex(64 << 10);
    let mut first = Vec::new();
    Msg::Have(0).encode(&mut first);
    Msg::Bitfield(vec![0x70]).encode(&mut first);
    let fake = fake_seeder(b, meta.clone(), data, first, |_| true);
    let mut store = Storage::create(&dir.path().join("out.bin"), &meta).unwrap();
    let mut note = |_: &Progress| {};
    let o = opts(8);
    let (r, ()) = tokio::join!(download(a, &meta, &mut store, &o, &mut note), fake);
    let e = r.unwrap_err();
    assert!(matches!(e, BtError::Protocol { .. }), "{e}");
    assert!(e.to_string().contains("bitfield"), "{e}");
}

/// A peer that keeps us choked and sends only keep-alives (more often than
/// the timeout) still times out: keep-alives are no progress.
#[tokio::test]
async fn keepalives_do_not_extend_a_choke_forever() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(4 * BLOCK as usize, 8);
    let (_, meta) = make(dir.path(), "src.bin", &data, BLOCK);
    let (a, mut b) = tokio::io::duplex(64 << 10);
    let info_hash = meta.info_hash;
    let fake = async move {
        let mut hs = [0u8; 68];
        if b.read_exact(&mut hs).await.is_err() {
            return;
        }
        let h = Handshake {
            info_hash,
            peer_id: [4; 20],
            fast: false,
        };
        let mut out = h.encode().to_vec();
        Msg::Bitfield(vec![0xf0]).encode(&mut out);
        if b.write_all(&out).await.is_err() {
            return;
        }
        let mut sink = vec![0u8; 4096];
        loop {
            tokio::select! {
                r = b.read(&mut sink) => if !matches!(r, Ok(n) if n > 0) { return },
                () = tokio::time::sleep(std::time::Duration::from_millis(20)) => {
                    let mut k = Vec::new();
                    Msg::KeepAlive.encode(&mut k);
                    if b.write_all(&k).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    let o = DownloadOptions {
        timeout: std::time::Duration::from_millis(300),
        ..opts(8)
    };
    let mut store = Storage::create(&dir.path().join("out.bin"), &meta).unwrap();
    let mut note = |_: &Progress| {};
    let run = async { tokio::join!(download(a, &meta, &mut store, &o, &mut note), fake).0 };
    // Without the fix this never ends; the bound only catches that.
    let r = tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the download timed out on its own");
    let e = r.unwrap_err();
    assert!(
        matches!(
            e,
            BtError::Timeout {
                waiting_for: "an unchoke",
                ..
            }
        ),
        "{e}"
    );
}
