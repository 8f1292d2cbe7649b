//! The torrent's file on disk.
//!
//! Reads and writes are positional (`pread`/`pwrite`) on a std file, from
//! the async code directly: a block is at most 128 KiB and a piece is
//! written once, after its hash checked, so a local disk answers in far
//! less than a network round trip and the single connection would gain
//! nothing from a blocking-pool hop per block.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use hopwise_proto::bittorrent::metainfo::Metainfo;

use super::BtError;

/// The file a torrent describes: being downloaded (to `PATH.part`) or
/// seeded.
#[derive(Debug)]
pub struct Storage {
    file: File,
    /// The file read and written (the `.part` file while downloading).
    path: PathBuf,
    /// Where [`Storage::finish`] renames the download to.
    dest: Option<PathBuf>,
    length: u64,
}

impl Storage {
    /// A download's storage: creates (or truncates) `out` + `.part` with
    /// the torrent's length. [`Storage::finish`] renames it to `out`.
    pub fn create(out: &Path, meta: &Metainfo) -> Result<Storage, BtError> {
        let mut part = OsString::from(out.as_os_str());
        part.push(".part");
        let path = PathBuf::from(part);
        let fail = |source| BtError::Storage {
            path: path.clone(),
            piece: None,
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(fail)?;
        file.set_len(meta.length).map_err(fail)?;
        Ok(Storage {
            file,
            path: path.clone(),
            dest: Some(out.to_path_buf()),
            length: meta.length,
        })
    }

    /// A seed's storage: opens `path` for reading; its size must be the
    /// torrent's `info.length`.
    pub fn open(path: &Path, meta: &Metainfo) -> Result<Storage, BtError> {
        let fail = |source| BtError::Storage {
            path: path.to_path_buf(),
            piece: None,
            source,
        };
        let file = File::open(path).map_err(fail)?;
        let len = file.metadata().map_err(fail)?.len();
        if len != meta.length {
            return Err(fail(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{len} bytes, but the torrent's `info.length` is {}",
                    meta.length
                ),
            )));
        }
        Ok(Storage {
            file,
            path: path.to_path_buf(),
            dest: None,
            length: len,
        })
    }

    /// The file read and written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks every piece's SHA-1 against the torrent, reading the file a
    /// piece at a time; an error names the first piece that differs.
    pub fn verify(&self, meta: &Metainfo) -> Result<(), BtError> {
        let mut buf = vec![0u8; meta.piece_length as usize];
        for i in 0..meta.piece_count() {
            let b = &mut buf[..meta.piece_len(i) as usize];
            self.read_at(meta.piece_offset(i), b, i)?;
            if !meta.check_piece(i, b) {
                return Err(BtError::Storage {
                    path: self.path.clone(),
                    piece: Some(i),
                    source: io::Error::new(
                        io::ErrorKind::InvalidData,
                        "content does not match the torrent's SHA-1 (`info.pieces`)",
                    ),
                });
            }
        }
        Ok(())
    }

    /// Reads `buf.len()` bytes at `offset` (part of piece `piece`, which
    /// errors name).
    pub fn read_at(&self, offset: u64, buf: &mut [u8], piece: u32) -> Result<(), BtError> {
        self.check_range(offset, buf.len(), piece)?;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|source| BtError::Storage {
                path: self.path.clone(),
                piece: Some(piece),
                source,
            })
    }

    /// Writes verified piece `index` at its offset.
    pub fn write_piece(&mut self, meta: &Metainfo, index: u32, data: &[u8]) -> Result<(), BtError> {
        let offset = meta.piece_offset(index);
        self.check_range(offset, data.len(), index)?;
        self.file
            .write_all_at(data, offset)
            .map_err(|source| BtError::Storage {
                path: self.path.clone(),
                piece: Some(index),
                source,
            })
    }

    /// Flushes a download to disk and renames `PATH.part` to `PATH`;
    /// returns the final path. For a seed's storage, only the path.
    pub fn finish(&mut self) -> Result<PathBuf, BtError> {
        let Some(dest) = self.dest.take() else {
            return Ok(self.path.clone());
        };
        let fail = |path: &Path, source| BtError::Storage {
            path: path.to_path_buf(),
            piece: None,
            source,
        };
        self.file.sync_all().map_err(|e| fail(&self.path, e))?;
        std::fs::rename(&self.path, &dest).map_err(|e| fail(&dest, e))?;
        self.path = dest.clone();
        Ok(dest)
    }

    fn check_range(&self, offset: u64, len: usize, piece: u32) -> Result<(), BtError> {
        if offset
            .checked_add(len as u64)
            .is_none_or(|end| end > self.length)
        {
            return Err(BtError::Storage {
                path: self.path.clone(),
                piece: Some(piece),
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{len} bytes at offset {offset}: beyond the file's {} bytes",
                        self.length
                    ),
                ),
            });
        }
        Ok(())
    }
}
