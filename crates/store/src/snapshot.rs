//! The UTXO snapshot file of a [`DiskStore`](crate::DiskStore): the whole UTXO set as of one
//! block, written now and then instead of an LSM entry per output on every commit.
//!
//! File `utxos-<block hash>.snap` beside the database, referenced by `meta`'s `utxo_snapshot`:
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `SCUTXOS1` |
//! | 64 | [`SnapshotMeta`]: block hash, height `u64` LE, output count `u64` LE, total value `u128` LE |
//! | count × 86 | entries (in the set's own order): outpoint (36 bytes), coin (50 bytes) |
//! | 32 | SHA-256 of every byte before it |
//!
//! A snapshot is written to `utxos.snap.tmp`, synced, renamed into place and the directory
//! synced before `meta` points to it, so a crash leaves either the old reference (and perhaps
//! an unreferenced file, removed by the next snapshot) or the new one. A file whose length,
//! checksum or header disagrees with `meta` is damage ([`StoreError::Damaged`], naming it).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use scalechain_consensus::Coin;
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Hash, HashKind, OutPoint};

use crate::StoreError;

const MAGIC: &[u8; 8] = b"SCUTXOS1";
const ENTRY: usize = 36 + Coin::LEN;
const TMP: &str = "utxos.snap.tmp";

/// What `meta`'s `utxo_snapshot` records, and the file's header repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SnapshotMeta {
    /// The block whose UTXO set the file holds.
    pub hash: Hash,
    /// Its height.
    pub height: u64,
    /// Outputs in the file.
    pub count: u64,
    /// Their total value.
    pub total: u128,
}

impl SnapshotMeta {
    pub const LEN: usize = 32 + 8 + 8 + 16;

    pub fn to_bytes(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..32].copy_from_slice(&self.hash.0);
        b[32..40].copy_from_slice(&self.height.to_le_bytes());
        b[40..48].copy_from_slice(&self.count.to_le_bytes());
        b[48..].copy_from_slice(&self.total.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8]) -> Option<SnapshotMeta> {
        let b: &[u8; Self::LEN] = b.try_into().ok()?;
        Some(SnapshotMeta {
            hash: Hash(b[..32].try_into().ok()?),
            height: u64::from_le_bytes(b[32..40].try_into().ok()?),
            count: u64::from_le_bytes(b[40..48].try_into().ok()?),
            total: u128::from_le_bytes(b[48..].try_into().ok()?),
        })
    }
}

/// The file of the snapshot at block `hash`.
pub(crate) fn path(dir: &Path, hash: &Hash) -> PathBuf {
    dir.join(format!("utxos-{hash}.snap"))
}

/// True for the names of snapshot files (and a half-written one), which belong to the store.
pub(crate) fn is_snapshot_file(name: &str) -> bool {
    name == TMP || (name.starts_with("utxos-") && name.ends_with(".snap"))
}

/// Writes the snapshot `meta` of `entries` (exactly `meta.count` of them) durably, in place
/// once whole.
pub(crate) fn write(
    dir: &Path,
    meta: SnapshotMeta,
    entries: impl Iterator<Item = (OutPoint, Coin)>,
) -> std::io::Result<()> {
    let tmp = dir.join(TMP);
    let file = std::fs::File::create(&tmp)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut hasher = HashKind::Sha256.hasher();
    let mut put = |out: &mut BufWriter<std::fs::File>, bytes: &[u8]| {
        hasher.update(bytes);
        out.write_all(bytes)
    };
    put(&mut out, MAGIC)?;
    put(&mut out, &meta.to_bytes())?;
    let mut buf = Vec::with_capacity(ENTRY);
    let mut n = 0u64;
    for (op, coin) in entries {
        buf.clear();
        op.encode_to(&mut buf);
        coin.encode_to(&mut buf);
        put(&mut out, &buf)?;
        n += 1;
    }
    if n != meta.count {
        return Err(std::io::Error::other(format!("a snapshot of {n} outputs announced as {}", meta.count)));
    }
    out.write_all(&hasher.finish().0)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path(dir, &meta.hash))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Reads the snapshot `meta` refers to: its length, checksum, header and totals must agree
/// with `meta`.
pub(crate) fn read(dir: &Path, meta: &SnapshotMeta) -> Result<Vec<(OutPoint, Coin)>, StoreError> {
    let file = path(dir, &meta.hash);
    let damaged = |detail: String| StoreError::Damaged {
        path: dir.to_path_buf(),
        detail: format!("its UTXO snapshot {}: {detail}", file.display()),
    };
    let want = usize::try_from(meta.count)
        .ok()
        .and_then(|n| n.checked_mul(ENTRY))
        .and_then(|n| n.checked_add(MAGIC.len() + SnapshotMeta::LEN + 32))
        .ok_or_else(|| damaged(format!("{} outputs cannot be held", meta.count)))?;
    let len = std::fs::metadata(&file).map_err(|e| damaged(e.to_string()))?.len();
    if len != want as u64 {
        return Err(damaged(format!("{len} bytes, {want} expected for {} outputs", meta.count)));
    }
    let bytes = std::fs::read(&file).map_err(|e| damaged(e.to_string()))?;
    let (body, sum) = bytes.split_at(bytes.len() - 32);
    if HashKind::Sha256.hash(body).0 != sum {
        return Err(damaged("its checksum does not match its contents".into()));
    }
    if &body[..8] != MAGIC || SnapshotMeta::from_bytes(&body[8..8 + SnapshotMeta::LEN]) != Some(*meta) {
        return Err(damaged("its header does not match the store's record of it".into()));
    }
    let mut entries = Vec::with_capacity(meta.count as usize);
    let mut total = 0u128;
    for e in body[8 + SnapshotMeta::LEN..].chunks_exact(ENTRY) {
        let op = OutPoint::decode(&e[..36]).map_err(|x| damaged(format!("an outpoint: {x}")))?;
        let coin = Coin::decode(&e[36..]).map_err(|x| damaged(format!("the coin of {op}: {x}")))?;
        total = total.saturating_add(u128::from(coin.out.value.get()));
        entries.push((op, coin));
    }
    if total != meta.total {
        return Err(damaged(format!("its outputs total {total}, its header says {}", meta.total)));
    }
    Ok(entries)
}

/// Removes snapshot files other than the one of block `keep` (superseded, or written by a run
/// that stopped before recording them).
pub(crate) fn remove_others(dir: &Path, keep: &Hash) -> std::io::Result<()> {
    let keep = path(dir, keep);
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        if is_snapshot_file(&name.to_string_lossy()) && e.path() != keep {
            std::fs::remove_file(e.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::{Amount, Lock, Scheme, TxOut};

    fn entries(n: u32) -> Vec<(OutPoint, Coin)> {
        (0..n)
            .map(|i| {
                let out = TxOut {
                    value: Amount::new(u64::from(i) + 1).unwrap_or(Amount::ZERO),
                    lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([i as u8; 32]) },
                };
                (OutPoint { txid: Hash([7; 32]), index: i }, Coin { out, height: 3, coinbase: i % 2 == 0 })
            })
            .collect()
    }

    fn meta_of(e: &[(OutPoint, Coin)]) -> SnapshotMeta {
        let total = e.iter().map(|(_, c)| u128::from(c.out.value.get())).sum();
        SnapshotMeta { hash: Hash([1; 32]), height: 3, count: e.len() as u64, total }
    }

    #[test]
    fn a_snapshot_reads_back_and_any_changed_byte_is_damage() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let e = entries(50);
        let m = meta_of(&e);
        write(dir.path(), m, e.clone().into_iter().rev()).unwrap_or_else(|x| panic!("{x}"));
        assert!(!dir.path().join(TMP).exists());
        let mut back = read(dir.path(), &m).unwrap_or_else(|x| panic!("{x}"));
        back.reverse();
        assert_eq!(back, e, "in the order written");
        let file = path(dir.path(), &m.hash);
        let pristine = std::fs::read(&file).unwrap_or_default();
        for at in [0, 9, 80, 500, pristine.len() - 1] {
            let mut b = pristine.clone();
            b[at] ^= 0x40;
            std::fs::write(&file, &b).unwrap_or_else(|x| panic!("{x}"));
            match read(dir.path(), &m) {
                Err(StoreError::Damaged { detail, .. }) => assert!(detail.contains("utxos-"), "{detail}"),
                other => panic!("byte {at}: {other:?}"),
            }
        }
        std::fs::write(&file, &pristine[..pristine.len() - 1]).unwrap_or_else(|x| panic!("{x}"));
        assert!(matches!(read(dir.path(), &m), Err(StoreError::Damaged { .. })));
        // A record that disagrees with the file's header.
        std::fs::write(&file, &pristine).unwrap_or_else(|x| panic!("{x}"));
        let other = SnapshotMeta { height: 4, ..m };
        assert!(matches!(read(dir.path(), &other), Err(StoreError::Damaged { .. })));
        // A count that cannot be allocated is refused before reading.
        let huge = SnapshotMeta { count: u64::MAX, ..m };
        assert!(matches!(read(dir.path(), &huge), Err(StoreError::Damaged { .. })));
        // Superseded files go; the kept one stays.
        std::fs::write(path(dir.path(), &Hash([2; 32])), b"old").unwrap_or_else(|x| panic!("{x}"));
        remove_others(dir.path(), &m.hash).unwrap_or_else(|x| panic!("{x}"));
        assert!(file.exists() && !path(dir.path(), &Hash([2; 32])).exists());
    }
}
