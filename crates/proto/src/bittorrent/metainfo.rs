//! Metainfo (`.torrent` files, BEP 3 section "metainfo files"): what
//! hopwise reads and writes is the single-file v1 form,
//!
//! ```text
//! d 8:announce <url, optional>
//!   4:info d 6:length <bytes> 4:name <name> 12:piece length <bytes>
//!            6:pieces <20-byte SHA-1 per piece> e e
//! ```
//!
//! The info-hash is SHA-1 over the bytes of the `info` dictionary exactly
//! as they appear in the file ([`bencode::Entry::raw`]). A hybrid torrent
//! (BEP 52, <https://www.bittorrent.org/beps/bep_0052.html>: `meta version`
//! 2 and `file tree` next to the v1 keys, libtorrent 2.x's default) is read
//! as its v1 half; its v1 info-hash covers the v2 keys too, since they sit
//! in the same dictionary. Multi-file torrents (`info.files`) and v2-only
//! torrents (no `info.pieces`) are refused with an error saying so.
//!
//! Sans-IO: [`Metainfo::parse`] takes the file's bytes and [`Builder`] is
//! fed the content's bytes; reading files is the caller's job.

use sha1::{Digest, Sha1};

use super::bencode::{self, put_bytes, put_int, Value};
use super::BLOCK;

/// Why a torrent was refused: the key (e.g. `info.piece length`), the byte
/// offset in the file and the problem.
pub type MetainfoError = bencode::Error;

/// The piece size [`Builder`] uses unless told otherwise.
pub const DEFAULT_PIECE_LENGTH: u32 = 256 << 10;
/// The largest `piece length` accepted. The client assembles a piece in
/// memory before checking its hash, so this bounds its memory per piece
/// (hopwise's choice; libtorrent creates pieces of at most 16 MiB by
/// default, `create_torrent`'s automatic piece size).
pub const MAX_PIECE_LENGTH: u32 = 64 << 20;

/// A single-file v1 torrent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metainfo {
    /// The tracker URL, if any (hopwise does not contact trackers).
    pub announce: Option<String>,
    /// SHA-1 over the raw `info` dictionary.
    pub info_hash: [u8; 20],
    /// `info.name` (lossily UTF-8): the suggested file name. hopwise never
    /// uses it as a path.
    pub name: String,
    /// `info.length`: the file's size in bytes (at least 1).
    pub length: u64,
    /// `info.piece length` (1 ..= [`MAX_PIECE_LENGTH`]).
    pub piece_length: u32,
    /// `info.pieces`, one SHA-1 per piece.
    pub pieces: Vec<[u8; 20]>,
}

fn err(key: &str, at: usize, problem: impl Into<String>) -> MetainfoError {
    MetainfoError {
        key: key.into(),
        at,
        problem: problem.into(),
    }
}

/// An integer entry of `dict` at `key` (`None` if absent).
fn int(dict: &Value<'_>, key: &str, path: &str) -> Result<Option<(i64, usize)>, MetainfoError> {
    match dict.get(key.as_bytes()) {
        None => Ok(None),
        Some(e) => match e.value {
            Value::Int(i) => Ok(Some((i, e.at))),
            ref v => Err(err(
                path,
                e.at,
                format!("expected an integer, found {}", v.kind()),
            )),
        },
    }
}

/// A byte-string entry of `dict` at `key` (`None` if absent).
fn bytes<'a>(
    dict: &Value<'a>,
    key: &str,
    path: &str,
) -> Result<Option<(&'a [u8], usize)>, MetainfoError> {
    match dict.get(key.as_bytes()) {
        None => Ok(None),
        Some(e) => match e.value {
            Value::Bytes(b) => Ok(Some((b, e.at))),
            ref v => Err(err(
                path,
                e.at,
                format!("expected a byte string, found {}", v.kind()),
            )),
        },
    }
}

impl Metainfo {
    /// Reads a torrent file's bytes.
    pub fn parse(file: &[u8]) -> Result<Metainfo, MetainfoError> {
        let root = bencode::decode(file)?;
        if !matches!(root, Value::Dict(_)) {
            return Err(err(
                "",
                0,
                format!("a torrent is a dictionary, found {}", root.kind()),
            ));
        }
        let announce = bytes(&root, "announce", "announce")?
            .map(|(b, _)| String::from_utf8_lossy(b).into_owned());
        let Some(info) = root.get(b"info") else {
            return Err(err("info", file.len(), "missing"));
        };
        let info_at = info.at;
        let info_hash: [u8; 20] = Sha1::digest(info.raw).into();
        let info = &info.value;
        if !matches!(info, Value::Dict(_)) {
            return Err(err(
                "info",
                info_at,
                format!("expected a dictionary, found {}", info.kind()),
            ));
        }
        if let Some(files) = info.get(b"files") {
            return Err(err(
                "info.files",
                files.at,
                "multi-file torrents are not supported (hopwise fetches single-file torrents)",
            ));
        }
        let version = int(info, "meta version", "info.meta version")?;
        if let Some((v, at)) = version {
            if v != 2 {
                return Err(err(
                    "info.meta version",
                    at,
                    format!("version {v} is not supported (BEP 52 defines 2)"),
                ));
            }
        }
        let Some((pieces, pieces_at)) = bytes(info, "pieces", "info.pieces")? else {
            let problem = if version.is_some() {
                "missing: a v2-only torrent (BEP 52) is not supported; hopwise checks v1 \
                 SHA-1 pieces (a hybrid torrent works)"
            } else {
                "missing"
            };
            return Err(err("info.pieces", info_at, problem));
        };
        let Some((name, name_at)) = bytes(info, "name", "info.name")? else {
            return Err(err("info.name", info_at, "missing"));
        };
        if name.is_empty() {
            return Err(err("info.name", name_at, "empty"));
        }
        let Some((length, length_at)) = int(info, "length", "info.length")? else {
            return Err(err("info.length", info_at, "missing"));
        };
        if length < 1 {
            return Err(err(
                "info.length",
                length_at,
                format!("{length}: the file must have at least 1 byte"),
            ));
        }
        let Some((plen, plen_at)) = int(info, "piece length", "info.piece length")? else {
            return Err(err("info.piece length", info_at, "missing"));
        };
        let piece_length = u32::try_from(plen)
            .ok()
            .filter(|p| (1..=MAX_PIECE_LENGTH).contains(p))
            .ok_or_else(|| {
                err(
                    "info.piece length",
                    plen_at,
                    format!("{plen} B, expected 1 ..= {MAX_PIECE_LENGTH}"),
                )
            })?;
        let length = length as u64;
        let want = length.div_ceil(piece_length as u64);
        if !pieces.len().is_multiple_of(20) || pieces.len() as u64 / 20 != want {
            return Err(err(
                "info.pieces",
                pieces_at,
                format!(
                    "{} bytes, expected 20 per piece: {want} pieces of {piece_length} B \
                     for a file of {length} B",
                    pieces.len()
                ),
            ));
        }
        Ok(Metainfo {
            announce,
            info_hash,
            name: String::from_utf8_lossy(name).into_owned(),
            length,
            piece_length,
            pieces: pieces
                .chunks_exact(20)
                .map(|c| c.try_into().expect("20 bytes"))
                .collect(),
        })
    }

    /// The number of pieces.
    pub fn piece_count(&self) -> u32 {
        self.pieces.len() as u32
    }

    /// The length of piece `i` (the last one may be short; 0 out of range).
    pub fn piece_len(&self, i: u32) -> u32 {
        let start = i as u64 * self.piece_length as u64;
        if i >= self.piece_count() {
            return 0;
        }
        (self.length - start).min(self.piece_length as u64) as u32
    }

    /// Where piece `i` starts in the file.
    pub fn piece_offset(&self, i: u32) -> u64 {
        i as u64 * self.piece_length as u64
    }

    /// The number of [`BLOCK`]-sized requests piece `i` takes.
    pub fn blocks_in(&self, i: u32) -> u32 {
        self.piece_len(i).div_ceil(BLOCK)
    }

    /// Whether `data` is piece `i` (its length and SHA-1 match).
    pub fn check_piece(&self, i: u32, data: &[u8]) -> bool {
        let Some(h) = self.pieces.get(i as usize) else {
            return false;
        };
        data.len() == self.piece_len(i) as usize && Sha1::digest(data)[..] == h[..]
    }

    /// The info-hash in hex, as clients show it.
    pub fn info_hash_hex(&self) -> String {
        self.info_hash.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Makes a single-file v1 torrent from the file's content, fed in order.
#[derive(Clone, Debug)]
pub struct Builder {
    name: String,
    piece_length: u32,
    hasher: Sha1,
    /// Bytes hashed into the current piece.
    in_piece: u32,
    pieces: Vec<u8>,
    length: u64,
}

impl Builder {
    /// A builder for a file called `name` cut into pieces of
    /// `piece_length` bytes (1 ..= [`MAX_PIECE_LENGTH`]).
    pub fn new(name: &str, piece_length: u32) -> Result<Builder, MetainfoError> {
        if name.is_empty() {
            return Err(err("info.name", 0, "empty"));
        }
        if !(1..=MAX_PIECE_LENGTH).contains(&piece_length) {
            return Err(err(
                "info.piece length",
                0,
                format!("{piece_length} B, expected 1 ..= {MAX_PIECE_LENGTH}"),
            ));
        }
        Ok(Builder {
            name: name.into(),
            piece_length,
            hasher: Sha1::new(),
            in_piece: 0,
            pieces: Vec::new(),
            length: 0,
        })
    }

    /// Feeds the next bytes of the file.
    pub fn update(&mut self, mut data: &[u8]) {
        self.length += data.len() as u64;
        while !data.is_empty() {
            let n = ((self.piece_length - self.in_piece) as usize).min(data.len());
            self.hasher.update(&data[..n]);
            self.in_piece += n as u32;
            data = &data[n..];
            if self.in_piece == self.piece_length {
                self.pieces.extend_from_slice(&self.hasher.finalize_reset());
                self.in_piece = 0;
            }
        }
    }

    /// The torrent file's bytes (keys sorted, as BEP 3 asks).
    pub fn finish(mut self, announce: Option<&str>) -> Result<Vec<u8>, MetainfoError> {
        if self.length == 0 {
            return Err(err(
                "info.length",
                0,
                "0: the file must have at least 1 byte",
            ));
        }
        let length = i64::try_from(self.length)
            .map_err(|_| err("info.length", 0, "does not fit a bencoded integer"))?;
        if self.in_piece > 0 {
            self.pieces.extend_from_slice(&self.hasher.finalize());
        }
        let mut out = Vec::with_capacity(self.pieces.len() + 200);
        out.push(b'd');
        if let Some(a) = announce {
            put_bytes(&mut out, b"announce");
            put_bytes(&mut out, a.as_bytes());
        }
        put_bytes(&mut out, b"info");
        out.push(b'd');
        put_bytes(&mut out, b"length");
        put_int(&mut out, length);
        put_bytes(&mut out, b"name");
        put_bytes(&mut out, self.name.as_bytes());
        put_bytes(&mut out, b"piece length");
        put_int(&mut out, self.piece_length as i64);
        put_bytes(&mut out, b"pieces");
        put_bytes(&mut out, &self.pieces);
        out.extend_from_slice(b"ee");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn content(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
            .collect()
    }

    fn make(data: &[u8], plen: u32, announce: Option<&str>) -> Vec<u8> {
        let mut b = Builder::new("file.bin", plen).unwrap();
        b.update(data);
        b.finish(announce).unwrap()
    }

    proptest! {
        /// A made torrent parses back to what it describes, whatever the
        /// feeding's chunking; every piece checks, and a changed byte fails.
        #[test]
        fn builder_round_trip(
            len in 1usize..5000,
            plen in 1u32..1500,
            cut in 1usize..700,
            seed in any::<u8>(),
            announce in proptest::option::of("[a-z:/.]{0,20}"),
        ) {
            let data = content(len, seed);
            let mut b = Builder::new("file.bin", plen).unwrap();
            data.chunks(cut).for_each(|c| b.update(c));
            let file = b.finish(announce.as_deref()).unwrap();
            prop_assert_eq!(&file, &make(&data, plen, announce.as_deref()));
            let m = Metainfo::parse(&file).unwrap();
            prop_assert_eq!(m.length, len as u64);
            prop_assert_eq!(m.piece_length, plen);
            prop_assert_eq!(&m.name, "file.bin");
            prop_assert_eq!(&m.announce, &announce);
            prop_assert_eq!(m.piece_count() as usize, len.div_ceil(plen as usize));
            let mut total = 0u64;
            for i in 0..m.piece_count() {
                let at = m.piece_offset(i) as usize;
                let p = &data[at..at + m.piece_len(i) as usize];
                prop_assert!(m.check_piece(i, p));
                let mut bad = p.to_vec();
                bad[p.len() / 2] ^= 1;
                prop_assert!(!m.check_piece(i, &bad));
                total += p.len() as u64;
            }
            prop_assert_eq!(total, len as u64);
            prop_assert!(!m.check_piece(m.piece_count(), &[]));
        }

        /// Every truncation of a torrent is refused with an error inside
        /// the input, and arbitrary bytes never panic.
        #[test]
        fn truncations_are_refused(len in 1usize..3000, plen in 1u32..1000) {
            let file = make(&content(len, 1), plen, Some("http://x/a"));
            for n in 0..file.len() {
                let e = Metainfo::parse(&file[..n]).unwrap_err();
                prop_assert!(e.at <= n, "{}", e);
            }
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Metainfo::parse(&b);
        }
    }

    /// The info-hash is SHA-1 over the `info` bytes as found, here a
    /// dictionary with its keys out of order (a re-encoding would sort
    /// them and hash differently).
    #[test]
    fn info_hash_over_the_raw_span() {
        let pieces = Sha1::digest(b"abc");
        let mut info = b"d4:name1:x6:lengthi3e12:piece lengthi16384e6:pieces20:".to_vec();
        info.extend_from_slice(&pieces);
        info.push(b'e');
        let mut file = b"d4:info".to_vec();
        file.extend_from_slice(&info);
        file.push(b'e');
        let m = Metainfo::parse(&file).unwrap();
        assert_eq!(m.info_hash, <[u8; 20]>::from(Sha1::digest(&info)));
        assert!(m.check_piece(0, b"abc"));
        assert_eq!(m.announce, None);
        assert_eq!(m.info_hash_hex().len(), 40);
    }

    /// A known torrent's info-hash, computed independently: the SHA-1 of
    /// the info dictionary below (`printf '...' | sha1sum`).
    #[test]
    fn known_info_hash() {
        let file = make(b"hello\n", 16384, None);
        let m = Metainfo::parse(&file).unwrap();
        // info = d6:lengthi6e4:name8:file.bin12:piece lengthi16384e6:pieces20:<sha1("hello\n")>e
        let mut info = b"d6:lengthi6e4:name8:file.bin12:piece lengthi16384e6:pieces20:".to_vec();
        info.extend_from_slice(&hex("f572d396fae9206628714fb2ce00f72e94f2258f"));
        info.push(b'e');
        assert_eq!(&file[7..file.len() - 1], &info[..]);
        assert_eq!(
            m.pieces[0][..],
            hex("f572d396fae9206628714fb2ce00f72e94f2258f")[..]
        );
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A hybrid torrent (BEP 52 keys beside the v1 ones) reads as v1; a
    /// v2-only one and a multi-file one are refused, saying why.
    #[test]
    fn hybrid_v2_and_multi_file() {
        let p = Sha1::digest(b"abc");
        let root = [7u8; 32];
        let mut info = b"d9:file treed1:xd0:d6:lengthi3e11:pieces root32:".to_vec();
        info.extend_from_slice(&root);
        info.extend_from_slice(
            b"eee6:lengthi3e12:meta versioni2e4:name1:x12:piece lengthi16384e6:pieces20:",
        );
        info.extend_from_slice(&p);
        info.push(b'e');
        let mut file = b"d8:announce10:http://x/a4:info".to_vec();
        file.extend_from_slice(&info);
        file.extend_from_slice(b"12:piece layersdee");
        let m = Metainfo::parse(&file).unwrap();
        assert_eq!(m.info_hash, <[u8; 20]>::from(Sha1::digest(&info)));
        assert_eq!(m.length, 3);
        assert_eq!(m.announce.as_deref(), Some("http://x/a"));

        let v2 =
            b"d4:infod9:file treede6:lengthi3e12:meta versioni2e4:name1:x12:piece lengthi16384eee";
        let e = Metainfo::parse(v2).unwrap_err();
        assert_eq!(e.key, "info.pieces");
        assert!(e.to_string().contains("v2-only"), "{e}");

        let multi =
            b"d4:infod5:filesld6:lengthi3e4:pathl1:aeee4:name1:x12:piece lengthi16384e6:pieces0:ee";
        let e = Metainfo::parse(multi).unwrap_err();
        assert_eq!(e.key, "info.files");
        assert!(e.to_string().contains("multi-file"), "{e}");
    }

    #[test]
    fn malformed_fields_are_named() {
        let cases: &[(&[u8], &str)] = &[
            (b"le", ""),
            (b"d8:announcei1ee", "announce"),
            (b"de", "info"),
            (b"d4:infoi1ee", "info"),
            (b"d4:infod6:pieces0:ee", "info.name"),
            (b"d4:infod4:name1:x6:pieces0:ee", "info.length"),
            (b"d4:infod6:lengthi0e4:name1:x6:pieces0:ee", "info.length"),
            (
                b"d4:infod6:lengthi3e4:name1:x6:pieces0:ee",
                "info.piece length",
            ),
            (
                b"d4:infod6:lengthi3e4:name1:x12:piece lengthi0e6:pieces0:ee",
                "info.piece length",
            ),
            (
                b"d4:infod6:lengthi3e4:name1:x12:piece lengthi2e6:pieces20:aaaaaaaaaaaaaaaaaaaaee",
                "info.pieces",
            ),
            (
                b"d4:infod6:lengthi3e4:name1:x12:piece lengthi4e6:pieces3:abcee",
                "info.pieces",
            ),
            (b"d4:infod6:lengthi3e4:name0:ee", "info.pieces"),
            (
                b"d4:infod6:lengthi3e4:name1:x12:piece lengthi4e6:piecesee",
                "info.pieces",
            ),
        ];
        for (file, key) in cases {
            let e = Metainfo::parse(file).unwrap_err();
            assert_eq!(e.key, *key, "{}: {e}", String::from_utf8_lossy(file));
            assert!(e.at <= file.len());
        }
        assert!(Builder::new("", 1).is_err());
        assert!(Builder::new("x", 0).is_err());
        assert!(Builder::new("x", 1).unwrap().finish(None).is_err());
    }
}
