//! The commit marker: a small file beside the database that records the last commit, so a store
//! whose database lost committed writes (a damaged journal that the engine cuts short on open,
//! files restored from an older copy) is recognised and refused instead of opening short.
//!
//! The database counts its synced writes in `meta`'s `commit_seq`; after each one the marker
//! records that count with the chain id, the tip and its height. On open the database may be
//! ahead of the marker, never behind: the marker is written after the database's commit is on
//! disk, so a marker ahead of its database means the database lost committed writes.
//!
//! The marker is not synced after each commit (the operating system writes it back within
//! seconds): a crash can leave it some commits behind, which is allowed, but never ahead. Only
//! its creation is synced, through a file renamed into place, so a marker file always holds a
//! valid record.
//!
//! Format of `commit.mark`: two slots of [`SLOT`] bytes; a write goes to slot `seq % 2`, so a
//! torn write damages only the slot being written and the other still holds the commit
//! before. A slot is `magic (8) ‖ seq u64 LE ‖ chain_id (32) ‖ tip (32) ‖ tip_height u64
//! LE ‖ SHA-256 of the 88 bytes before (32)`. The valid slot with the highest `seq` counts.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use scalechain_types::{Hash, HashKind};

/// The marker's file name in the store's directory.
pub const FILE: &str = "commit.mark";

const MAGIC: [u8; 8] = *b"SCMARK\x00\x01";
/// Bytes of one slot.
pub const SLOT: usize = 8 + 8 + 32 + 32 + 8 + 32;
const BODY: usize = SLOT - 32;

/// What the marker records of one commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The database's write count after the commit.
    pub seq: u64,
    /// The chain's id.
    pub chain_id: Hash,
    /// The tip after the commit.
    pub tip: Hash,
    /// Its height.
    pub tip_height: u64,
}

impl Mark {
    fn encode(&self) -> [u8; SLOT] {
        let mut b = [0u8; SLOT];
        b[..8].copy_from_slice(&MAGIC);
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..48].copy_from_slice(&self.chain_id.0);
        b[48..80].copy_from_slice(&self.tip.0);
        b[80..88].copy_from_slice(&self.tip_height.to_le_bytes());
        let sum = HashKind::Sha256.hash(&b[..BODY]);
        b[BODY..].copy_from_slice(&sum.0);
        b
    }

    /// The slot's mark, or `None` if its magic or checksum is wrong (never written, torn, damaged).
    fn decode(b: &[u8]) -> Option<Mark> {
        if b.len() != SLOT || b[..8] != MAGIC || HashKind::Sha256.hash(&b[..BODY]).0[..] != b[BODY..] {
            return None;
        }
        let u64_at = |i: usize| b.get(i..i + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
        let hash_at = |i: usize| b.get(i..i + 32).and_then(|s| s.try_into().ok()).map(Hash);
        Some(Mark { seq: u64_at(8)?, chain_id: hash_at(16)?, tip: hash_at(48)?, tip_height: u64_at(80)? })
    }
}

/// Why the marker could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The file exists but cannot be read.
    Io(std::io::Error),
    /// The file is not a marker: its size is wrong or no slot is valid.
    Invalid(String),
}

/// The marker in `dir`: `None` if there is none (a new store, or one written before markers).
pub fn read(dir: &Path) -> Result<Option<Mark>, ReadError> {
    let path = dir.join(FILE);
    let mut f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ReadError::Io(e)),
    };
    let len = f.metadata().map_err(ReadError::Io)?.len();
    if len != 2 * SLOT as u64 {
        return Err(ReadError::Invalid(format!("{len} bytes, a marker has {}", 2 * SLOT)));
    }
    let mut b = vec![0u8; 2 * SLOT];
    f.read_exact(&mut b).map_err(ReadError::Io)?;
    let best = b.chunks(SLOT).filter_map(Mark::decode).max_by_key(|m| m.seq);
    best.map(Some).ok_or_else(|| ReadError::Invalid("neither slot holds a valid record".into()))
}

/// The marker file, open for writing.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    file: Option<File>,
}

impl Writer {
    /// A writer for the marker in `dir` (the file is created at the first write).
    pub fn new(dir: &Path) -> Writer {
        Writer { path: dir.join(FILE), file: None }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `mark` in its slot (not synced: see the module documentation). A marker that
    /// does not exist yet is written whole beside it, synced and renamed into place, so a
    /// crash never leaves a marker file without a valid record.
    pub fn write(&mut self, mark: &Mark) -> std::io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None if self.path.exists() => {
                let f = OpenOptions::new().read(true).write(true).open(&self.path)?;
                if f.metadata()?.len() != 2 * SLOT as u64 {
                    f.set_len(2 * SLOT as u64)?;
                }
                self.file.insert(f)
            }
            None => {
                let tmp = self.path.with_extension("mark.new");
                let mut b = vec![0u8; 2 * SLOT];
                let slot = (mark.seq % 2) as usize * SLOT;
                b[slot..slot + SLOT].copy_from_slice(&mark.encode());
                {
                    let mut f = File::create(&tmp)?;
                    f.write_all(&b)?;
                    f.sync_all()?;
                }
                std::fs::rename(&tmp, &self.path)?;
                if let Some(parent) = self.path.parent() {
                    // The new directory entry must survive a crash too.
                    File::open(parent)?.sync_all()?;
                }
                self.file = Some(OpenOptions::new().read(true).write(true).open(&self.path)?);
                return Ok(());
            }
        };
        let slot = (mark.seq % 2) as usize * SLOT;
        file.seek(SeekFrom::Start(slot as u64))?;
        file.write_all(&mark.encode())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn mark(seq: u64) -> Mark {
        Mark { seq, chain_id: Hash([1; 32]), tip: Hash([seq as u8; 32]), tip_height: seq * 10 }
    }

    #[test]
    fn the_newest_valid_slot_counts_and_a_torn_slot_falls_back_to_the_other() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_none());
        let mut w = Writer::new(dir.path());
        for s in 1..=5 {
            w.write(&mark(s)).unwrap();
            assert_eq!(read(dir.path()).unwrap(), Some(mark(s)));
        }
        // Tear slot 1 (seq 5): the record of seq 4 in slot 0 counts.
        let path = dir.path().join(FILE);
        let mut b = std::fs::read(&path).unwrap();
        b[SLOT + 20] ^= 0x40;
        std::fs::write(&path, &b).unwrap();
        assert_eq!(read(dir.path()).unwrap(), Some(mark(4)));
        // Both damaged, or a wrong size: refused.
        b[20] ^= 0x40;
        std::fs::write(&path, &b).unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::Invalid(_))));
        std::fs::write(&path, &b[..SLOT]).unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::Invalid(m)) if m.contains("120 bytes")));
    }
}
