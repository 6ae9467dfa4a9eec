//! A bound check of the engine's file archives before the engine reads them.
//!
//! The engine's tables and version files are archives in the `sfa` format: a table of contents
//! at `toc_pos`, found through a trailer at the end of the file. `sfa` 1.0.0 reserves memory for
//! as many entries as the table's `u32` count says before reading any (and before its checksum
//! is checked), so one damaged count asks for up to 171 GB and aborts the process. This pass
//! reads each archive's trailer and count and refuses a count that could not fit in the file,
//! so a damaged store is reported as damaged instead of killing the node.
//!
//! Layout read here (little-endian): trailer = `"SFA!" ‖ version u8 ‖ checksum type u8 ‖
//! checksum (16) ‖ toc_pos u64 ‖ toc_len u64` at the end of the file; at `toc_pos`,
//! `"TOC!" ‖ count u32 ‖ entries`, each entry at least `pos u64 ‖ len u64 ‖ name_len u16`.
//! A file that does not end in a trailer is not an archive and is left to the engine.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

const TRAILER_MAGIC: &[u8; 4] = b"SFA!";
const TRAILER_LEN: u64 = 4 + 1 + 1 + 16 + 8 + 8;
const TOC_MAGIC: &[u8; 4] = b"TOC!";
const MIN_ENTRY: u64 = 8 + 8 + 2;

/// An archive whose table of contents cannot be what it claims.
#[derive(Debug, PartialEq, Eq)]
pub struct BadArchive {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub why: String,
}

/// Checks every archive under `dir` (recursively).
pub fn check_dir(dir: &Path) -> Result<(), BadArchive> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for e in entries.flatten() {
        let path = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => check_dir(&path)?,
            Ok(t) if t.is_file() => check_file(&path)?,
            _ => {}
        }
    }
    Ok(())
}

/// Checks one file: if it ends in an archive trailer, its table of contents must start inside
/// the file and its entry count must fit in the bytes after it.
pub fn check_file(path: &Path) -> Result<(), BadArchive> {
    let bad = |why: String| BadArchive { path: path.to_path_buf(), why };
    // Unreadable files are the engine's to report.
    let Ok(mut f) = File::open(path) else { return Ok(()) };
    let Ok(size) = f.metadata().map(|m| m.len()) else { return Ok(()) };
    if size < TRAILER_LEN {
        return Ok(());
    }
    let mut trailer = [0u8; TRAILER_LEN as usize];
    if f.seek(SeekFrom::Start(size - TRAILER_LEN)).and_then(|_| f.read_exact(&mut trailer)).is_err() {
        return Ok(());
    }
    if &trailer[..4] != TRAILER_MAGIC {
        return Ok(());
    }
    let toc_pos = u64::from_le_bytes(trailer[22..30].try_into().unwrap_or_default());
    let toc_end = size - TRAILER_LEN;
    if toc_pos.checked_add(8).is_none_or(|p| p > toc_end) {
        return Err(bad(format!("its table of contents at {toc_pos} lies outside the file ({size} bytes)")));
    }
    let mut head = [0u8; 8];
    if f.seek(SeekFrom::Start(toc_pos)).and_then(|_| f.read_exact(&mut head)).is_err() {
        return Err(bad(format!("its table of contents at {toc_pos} cannot be read")));
    }
    if &head[..4] != TOC_MAGIC {
        // The engine refuses a wrong magic without allocating anything.
        return Ok(());
    }
    let count = u64::from(u32::from_le_bytes(head[4..8].try_into().unwrap_or_default()));
    let room = toc_end - toc_pos - 8;
    if count.saturating_mul(MIN_ENTRY) > room {
        return Err(bad(format!(
            "its table of contents claims {count} entries, but only {room} bytes follow it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An archive with `entries` entries of empty names, its table of contents at `toc_pos`.
    fn archive(entries: u32) -> Vec<u8> {
        let mut b = b"payload".to_vec();
        let toc_pos = b.len() as u64;
        b.extend_from_slice(TOC_MAGIC);
        b.extend_from_slice(&entries.to_le_bytes());
        for i in 0..entries {
            b.extend_from_slice(&u64::from(i).to_le_bytes());
            b.extend_from_slice(&1u64.to_le_bytes());
            b.extend_from_slice(&0u16.to_le_bytes());
        }
        b.extend_from_slice(TRAILER_MAGIC);
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&[0; 16]);
        b.extend_from_slice(&toc_pos.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b
    }

    #[test]
    fn counts_that_cannot_fit_are_refused_and_others_pass() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, archive(3)).unwrap();
        assert_eq!(check_file(&p), Ok(()));
        // The count's high byte damaged: 3 + 2^24 entries.
        let mut b = archive(3);
        b[7 + 4 + 3] = 1;
        std::fs::write(&p, &b).unwrap();
        let e = check_dir(dir.path()).unwrap_err();
        assert!(e.why.contains("16777219 entries"), "{}", e.why);
        // The table's position damaged.
        let mut b = archive(3);
        let at = b.len() - 16;
        b[at + 7] = 0x80;
        std::fs::write(&p, &b).unwrap();
        assert!(check_file(&p).unwrap_err().why.contains("outside the file"));
        // Not an archive: left alone.
        std::fs::write(&p, b"journal bytes that end in no trailer at all.......").unwrap();
        assert_eq!(check_file(&p), Ok(()));
    }
}
