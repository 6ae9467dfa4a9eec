//! The fjall engine.
//!
//! On-disk format (version [`FORMAT_VERSION`]), one fjall keyspace each:
//!
//! | keyspace  | key                                   | value                              |
//! |-----------|---------------------------------------|------------------------------------|
//! | `meta`    | `format_version`                      | `u32` LE                           |
//! | `meta`    | `params`                              | the parameters' canonical encoding |
//! | `meta`    | `chain_id`, `tip`                     | 32-byte hash                       |
//! | `meta`    | `tip_height`, `utxo_count`            | `u64` LE                           |
//! | `meta`    | `total_value`                         | `u128` LE                          |
//! | `blocks`  | block hash                            | block encoding                     |
//! | `headers` | block hash                            | 124-byte header encoding           |
//! | `undo`    | block hash                            | `BlockUndo` encoding               |
//! | `heights` | height, `u64` **big**-endian (sorted) | main-chain block hash              |
//! | `meta`    | `utxo_snapshot`                       | block hash, height `u64` LE, count `u64` LE, total `u128` LE |
//! | `meta`    | `txindex_tip`                         | block hash, height `u64` LE: the block the txid index covers through |
//! | `utxos`   | commit sequence number, `u64` **big**-endian | that commit's UTXO changes (`UtxoLog`) |
//! | `app`     | application key                       | application value                  |
//! | `txids`   | txid                                  | [`TxLocation`] (44 bytes)          |
//!
//! `meta`'s `commit_seq` (`u64` LE) counts the synced writes (`init`, `commit`,
//! `write_txindex`); after each, the commit marker beside the database (`commit.mark`, see
//! [`crate::marker`]) records the count, the chain id, the tip and its height. On open the
//! database must not be behind the marker: a store that lost committed writes (a damaged
//! journal is cut short by the engine when it opens) is refused with [`StoreError::Damaged`]
//! instead of opening short. A directory written before markers has neither, and gets both at
//! its next commit.
//!
//! The UTXO set is the snapshot file `meta`'s `utxo_snapshot` names (see [`crate::snapshot`];
//! `utxos-<block hash>.snap` beside the database) plus the log in `utxos`: one record per commit
//! since the snapshot, applied in order on load. A snapshot removes the records it covers in the
//! synced batch that records it.
//!
//! The txid index is written by the store's index writer ([`crate::txindex`]) after each
//! commit, in a batch of its own that also records `txindex_tip`; `init` and `write_txindex`
//! write it synchronously.
//!
//! Version 1 had no `txids` keyspace. Such a directory opens with no index tip;
//! [`ChainStore::write_txindex`] fills it and writes the current `format_version` in the same
//! batch. Versions 2 and 3 wrote the index inside each commit, so it matched the tip: opening
//! one records the tip as `txindex_tip` and writes the current version, in one synced batch.
//! Versions 1 and 2 kept one `utxos` entry per output (36-byte outpoint → 50-byte coin); opening
//! one converts it: the set becomes the snapshot of its tip and the entries go, in one synced
//! commit (version 2 becomes 3; version 1 stays 1 until its index is built).
//!
//! A store holds a chain exactly when `meta` holds `chain_id`; `init` writes it together with
//! everything else in one batch.
//!
//! `blocks`, `undo` and `utxos` are created with key-value separation: values over 1 KiB live in
//! uncompressed blob files, written once and never rewritten by compaction (see
//! [`keyspace_options`]); the engine runs one background worker ([`engine_builder`]).
//!
//! Durability: `init` and `commit` are each one write batch committed with
//! [`PersistMode::SyncData`], so they are atomic and on disk when they return. `put_block` is a
//! batch without a sync: it reaches the OS but may be lost in a crash. That is safe because
//! fjall's journal is one sequential log (sealed journals are fully synced before rotation), so
//! the next synced commit also persists every earlier write, in order; and a block is only ever
//! referenced by a later commit.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use fjall::{
    CompressionType, Database, Keyspace, KeyspaceCreateOptions, KvSeparationOptions, OwnedWriteBatch,
    PersistMode, Readable,
};
use scalechain_consensus::{BlockUndo, Coin, UtxoSet};
use scalechain_types::codec::{put_count, Decode, DecodeError, Encode, Reader};
use scalechain_types::{Block, Hash, Header, OutPoint};

use crate::mem::{
    check_commit, check_totals, check_value_len, main_chain_from, no_chain, outpoint_order, totals,
};
use crate::snapshot::{self, SnapshotMeta};
use crate::txindex::{self, Job};
use crate::{archive, marker};
use crate::{ChainStore, Commit, StoreError, StoredState, TxLocation, FORMAT_VERSION, OLDEST_FORMAT_VERSION};

/// A commit's UTXO changes, as the `utxos` keyspace logs them (format 3): removals, then
/// additions, applied in that order. Encoded from the commit's own lists, decoded into owned
/// ones.
struct UtxoLog<'a> {
    remove: Cow<'a, [OutPoint]>,
    add: Cow<'a, [(OutPoint, Coin)]>,
}

impl Encode for UtxoLog<'_> {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(8 + self.remove.len() * 36 + self.add.len() * (36 + Coin::LEN));
        put_count(out, self.remove.len());
        for op in self.remove.iter() {
            op.encode_to(out);
        }
        put_count(out, self.add.len());
        for (op, c) in self.add.iter() {
            op.encode_to(out);
            c.encode_to(out);
        }
    }
}

impl Decode for UtxoLog<'static> {
    const MIN_LEN: usize = 2;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.count("utxo_log.remove", 36)?;
        let mut remove = Vec::with_capacity(n);
        for _ in 0..n {
            remove.push(OutPoint::decode_from(r)?);
        }
        let n = r.count("utxo_log.add", 36 + Coin::LEN)?;
        let mut add = Vec::with_capacity(n);
        for _ in 0..n {
            add.push((OutPoint::decode_from(r)?, Coin::decode_from(r)?));
        }
        Ok(UtxoLog { remove: Cow::Owned(remove), add: Cow::Owned(add) })
    }
}

/// What a commit marker records, for messages.
fn recorded(m: &marker::Mark) -> String {
    format!("its commit marker records commit #{} (tip {} at height {})", m.seq, m.tip, m.tip_height)
}

/// Keyspace names (part of the on-disk format).
mod ks {
    pub const META: &str = "meta";
    pub const BLOCKS: &str = "blocks";
    pub const HEADERS: &str = "headers";
    pub const UNDO: &str = "undo";
    pub const HEIGHTS: &str = "heights";
    pub const UTXOS: &str = "utxos";
    pub const APP: &str = "app";
    pub const TXIDS: &str = "txids";
    /// Every keyspace, in creation order.
    pub const ALL: [&str; 8] = [META, BLOCKS, HEADERS, UNDO, HEIGHTS, UTXOS, APP, TXIDS];
}

/// Keys of the `meta` keyspace (part of the on-disk format).
mod meta {
    pub const FORMAT_VERSION: &str = "format_version";
    pub const PARAMS: &str = "params";
    pub const CHAIN_ID: &str = "chain_id";
    pub const TIP: &str = "tip";
    pub const TIP_HEIGHT: &str = "tip_height";
    pub const UTXO_COUNT: &str = "utxo_count";
    pub const TOTAL_VALUE: &str = "total_value";
    pub const COMMIT_SEQ: &str = "commit_seq";
    pub const UTXO_SNAPSHOT: &str = "utxo_snapshot";
    pub const TXINDEX_TIP: &str = "txindex_tip";
}

/// An engine failure of the store in `path`: damage (a journal or table that fails its
/// checksums or does not parse, a file of the database missing) or another failure (the
/// directory in use, a full disk, permissions).
fn engine_at(path: &Path) -> impl Fn(fjall::Error) -> StoreError + '_ {
    move |e| {
        use fjall::{Error as F, LsmError as L};
        let io_damage = |e: &std::io::Error| {
            matches!(
                e.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::UnexpectedEof
            )
        };
        let damaged = match &e {
            F::Locked => {
                return StoreError::Engine(format!("{} is in use by another process", path.display()))
            }
            F::Io(io) | F::Storage(L::Io(io)) => io_damage(io),
            F::Poisoned | F::KeyspaceDeleted => false,
            F::JournalRecovery(_)
            | F::InvalidVersion(_)
            | F::Decompress(_)
            | F::InvalidTrailer
            | F::InvalidTag(_)
            | F::Unrecoverable
            | F::Storage(_) => true,
            _ => false,
        };
        if damaged {
            StoreError::Damaged {
                path: path.to_path_buf(),
                detail: format!("the database fails to read: {e}"),
            }
        } else {
            StoreError::Engine(format!("{}: {e}", path.display()))
        }
    }
}

/// Stored bytes that must have exactly `N` bytes.
fn fixed<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N], StoreError> {
    <[u8; N]>::try_from(bytes)
        .map_err(|_| StoreError::Corrupt(format!("{what}: expected {N} bytes, found {}", bytes.len())))
}

/// Stored bytes that must decode as a `T`.
fn decode<T: Decode>(bytes: &[u8], what: impl FnOnce() -> String) -> Result<T, StoreError> {
    T::decode(bytes).map_err(|e| StoreError::Corrupt(format!("{}: {e}", what())))
}

/// A `meta` value that must be present once a chain is.
fn required(v: Option<fjall::Slice>, key: &str) -> Result<fjall::Slice, StoreError> {
    v.ok_or_else(|| StoreError::Corrupt(format!("meta: `{key}` is missing")))
}

fn height_key(height: u64) -> [u8; 8] {
    height.to_be_bytes()
}

/// A [`ChainStore`] on disk, in a fjall database (see the module documentation for the format).
///
/// Semantics are those of [`MemStore`](crate::MemStore): `init` makes the genesis block the
/// tip at height 0 under `chain_id` and applies the undo, UTXO and application changes and the
/// UTXO count and total of `first` (ignoring its `tip`, `tip_height` and `main_chain`);
/// application keys must be 1 to 65535 bytes long.
pub struct DiskStore {
    path: PathBuf,
    db: Database,
    meta: Keyspace,
    blocks: Keyspace,
    headers: Keyspace,
    undo: Keyspace,
    heights: Keyspace,
    utxos: Keyspace,
    app: Keyspace,
    txids: Keyspace,
    /// The directory is of a format before the txid index (until `write_txindex`).
    txindex_missing: bool,
    /// The txid index is switched off ([`DiskStore::set_txindex`]).
    txindex_off: bool,
    /// The txid index's writer (its thread writes each commit's index changes after it).
    index: txindex::Writer,
    /// Synced writes so far (`meta`'s `commit_seq`).
    seq: u64,
    /// The commit marker.
    marker: marker::Writer,
    poisoned: bool,
    /// Its memory bounds.
    mem: StoreMemory,
    /// UTXO changes since the snapshot: those the last `load` replayed, plus those committed
    /// since.
    pending_changes: AtomicU64,
    /// Changes after which a snapshot is due, if set ([`DiskStore::set_snapshot_every`]);
    /// else the default rule of [`DiskStore::snapshot_due`].
    snapshot_every: Option<u64>,
}

/// The engine's settings: the block cache, and one background worker. With more, fjall's first
/// worker hands every compaction request back to the queue for another worker and takes the
/// next message at once, so while another worker compacts it spins on the same request: on two
/// cores, 6.6% of a syncing node's CPU (`docs/PERFORMANCE.md`). One worker flushes and compacts
/// in turn.
fn engine_builder(dir: &Path, mem: StoreMemory) -> fjall::DatabaseBuilder<Database> {
    Database::builder(dir).cache_size(mem.cache_bytes).worker_threads(1)
}

/// How a keyspace is created. The keyspaces of large values written once (block bodies, undo
/// data, the UTXO log's records: a block's worth each) keep their values out of the LSM tree,
/// in blob files written once at flush and never again by compaction, and uncompressed (their
/// hashes, keys and signatures do not compress, and LZ4 cost CPU on every flush and read).
/// The engine records a keyspace's options when it creates it; a directory created before
/// keeps its own.
fn keyspace_options(name: &str) -> KeyspaceCreateOptions {
    let opts = KeyspaceCreateOptions::default();
    if [ks::BLOCKS, ks::UNDO, ks::UTXOS].contains(&name) {
        let blobs = KvSeparationOptions::default().compression(CompressionType::None);
        opts.with_kv_separation(Some(blobs))
    } else {
        opts
    }
}

/// UTXO changes after which a snapshot is due by default: with the rule "and at least half the
/// set", a snapshot costs at most two sequential entry writes per change, and opening replays
/// at most this many changes (or half the set).
pub const SNAPSHOT_EVERY: u64 = 1 << 20;

impl fmt::Debug for DiskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiskStore").field("path", &self.path).field("poisoned", &self.poisoned).finish()
    }
}

/// A commit's removals and additions to one keyspace, each key once: an addition wins over a
/// removal of the same key (in a reorganisation, an output or txid that a disconnected block
/// takes away and a connected block brings back).
fn net_changes<'a, K: Copy + Eq + std::hash::Hash, V>(
    remove: &[K],
    add: &'a [(K, V)],
) -> HashMap<K, Option<&'a V>> {
    let mut m = HashMap::with_capacity(remove.len() + add.len());
    m.extend(remove.iter().map(|k| (*k, None)));
    m.extend(add.iter().map(|(k, v)| (*k, Some(v))));
    m
}

/// The memory a [`DiskStore`] may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreMemory {
    /// The block cache (bytes of on-disk tables kept decoded in memory).
    pub cache_bytes: u64,
    /// The memtables (writes not yet in on-disk tables), as the engine counts them: once a
    /// write leaves more than this, and earlier memtables have been written out, every
    /// keyspace's memtable is sealed and written out. The engine's own bound is 64 MiB per
    /// keyspace (eight keyspaces). The engine's count leaves out its index overhead, so the
    /// heap they take is up to about twice this.
    pub memtable_bytes: u64,
}

impl Default for StoreMemory {
    /// A 16 MiB cache and 32 MiB of memtables.
    fn default() -> Self {
        StoreMemory { cache_bytes: 16 << 20, memtable_bytes: 32 << 20 }
    }
}

/// What a [`DiskStore`] holds in memory now ([`DiskStore::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreMemoryUse {
    /// Bytes in memtables (active and sealed, not yet written out).
    pub write_buffer: u64,
    /// Bytes in the block cache.
    pub cache: u64,
    /// Bytes of journal files on disk.
    pub journal: u64,
}

impl DiskStore {
    /// [`DiskStore::open_with`] the default [`StoreMemory`].
    pub fn open(dir: &Path) -> Result<DiskStore, StoreError> {
        DiskStore::open_with(dir, StoreMemory::default())
    }

    /// What the store holds in memory now, and its journals on disk.
    pub fn memory(&self) -> StoreMemoryUse {
        StoreMemoryUse {
            write_buffer: self.db.write_buffer_size(),
            cache: self.db.cache_size(),
            journal: self.db.journal_disk_space().unwrap_or(0),
        }
    }

    /// Opens the store in `dir`, creating the directory and an empty store if needed, with the
    /// memory bounds `mem`.
    ///
    /// Fails with [`StoreError::Version`] if the directory holds another format version, with
    /// [`StoreError::Damaged`] if the database does not read or has lost commits that its
    /// commit marker records, and with [`StoreError::Engine`] if it cannot be opened for
    /// another reason (for instance, another process holds it).
    pub fn open_with(dir: &Path, mem: StoreMemory) -> Result<DiskStore, StoreError> {
        let engine = engine_at(dir);
        let mark = marker::read(dir).map_err(|e| {
            let path = dir.join(marker::FILE);
            match e {
                marker::ReadError::Io(e) => StoreError::Engine(format!("reading {}: {e}", path.display())),
                marker::ReadError::Invalid(why) => StoreError::Damaged {
                    path: dir.to_path_buf(),
                    detail: format!("its commit marker {} is damaged ({why})", path.display()),
                },
            }
        })?;
        if !DiskStore::exists(dir) {
            // A marker without a database: the database's files are gone, not a new store.
            if let Some(m) = &mark {
                return Err(StoreError::Damaged {
                    path: dir.to_path_buf(),
                    detail: format!("the database holds no chain, but {}", recorded(m)),
                });
            }
            DiskStore::create(dir, mem)?;
        }
        // Before the engine reads its archives: a damaged count in one would abort the process.
        archive::check_dir(dir).map_err(|b| StoreError::Damaged {
            path: dir.to_path_buf(),
            detail: format!("{}: {}", b.path.display(), b.why),
        })?;
        let db = engine_builder(dir, mem).open().map_err(&engine)?;
        let open = |name: &str| db.keyspace(name, || keyspace_options(name)).map_err(&engine);
        // The index writer shares these two with the store.
        let (meta_ks, txids) = (open(ks::META)?, open(ks::TXIDS)?);
        let mut store = DiskStore {
            path: dir.to_path_buf(),
            blocks: open(ks::BLOCKS)?,
            headers: open(ks::HEADERS)?,
            undo: open(ks::UNDO)?,
            heights: open(ks::HEIGHTS)?,
            utxos: open(ks::UTXOS)?,
            app: open(ks::APP)?,
            index: txindex::Writer::start(txindex::Target {
                db: db.clone(),
                txids: txids.clone(),
                meta: meta_ks.clone(),
                tip_key: meta::TXINDEX_TIP,
                path: dir.to_path_buf(),
            })?,
            txids,
            meta: meta_ks,
            db,
            txindex_missing: false,
            txindex_off: false,
            seq: 0,
            marker: marker::Writer::new(dir),
            poisoned: false,
            mem,
            pending_changes: AtomicU64::new(0),
            snapshot_every: None,
        };
        match store.meta.get(meta::FORMAT_VERSION).map_err(&engine)? {
            Some(v) => {
                let found = u32::from_le_bytes(fixed(&v, "meta: `format_version`")?);
                if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&found) {
                    return Err(StoreError::Version { found });
                }
                store.txindex_missing = found < 2;
            }
            None => {
                if store.meta.get(meta::CHAIN_ID).map_err(&engine)?.is_some() {
                    return Err(StoreError::Corrupt("meta: `format_version` is missing".into()));
                }
            }
        }
        store.seq = match store.meta.get(meta::COMMIT_SEQ).map_err(&engine)? {
            Some(v) => u64::from_le_bytes(fixed(&v, "meta: `commit_seq`")?),
            None => 0,
        };
        if let Some(m) = mark {
            store.check_mark(&m)?;
        }
        if store.chain_id()?.is_some() && store.meta.get(meta::UTXO_SNAPSHOT).map_err(&engine)?.is_none() {
            store.convert_utxos()?;
        }
        if let Some(chain_id) = store.chain_id()? {
            if !store.txindex_missing && store.meta.get(meta::TXINDEX_TIP).map_err(&engine)?.is_none() {
                // Formats 2 and 3 wrote the index inside each commit: it matches the tip.
                let (tip, height) = store.committed_tip()?;
                let mut batch = store.db.batch();
                batch.insert(&store.meta, meta::TXINDEX_TIP, &txindex::tip_bytes((tip, height))[..]);
                batch.insert(&store.meta, meta::FORMAT_VERSION, &FORMAT_VERSION.to_le_bytes()[..]);
                store.write_commit(batch, chain_id, tip, height)?;
            }
        }
        Ok(store)
    }

    /// Makes a snapshot due after exactly this many UTXO changes (at least 1) instead of the
    /// default rule, for tests and experiments.
    pub fn set_snapshot_every(&mut self, changes: u64) {
        self.snapshot_every = Some(changes.max(1));
    }

    /// Converts a directory of format 1 or 2 (the UTXO set as one entry per output): its set
    /// becomes the snapshot of its tip and the entries go, in one synced commit. A version-2
    /// directory becomes version 3; a version-1 one stays 1 until its txid index is built.
    fn convert_utxos(&mut self) -> Result<(), StoreError> {
        let Some(state) = self.load()? else { return Ok(()) };
        let (count, total) = totals(state.utxos.iter().map(|(_, c)| c));
        let m = SnapshotMeta { hash: state.tip, height: state.tip_height, count, total };
        self.write_snapshot_file(m, state.utxos.iter().copied())?;
        let mut batch = self.db.batch();
        self.stage_clear_utxos(&mut batch)?;
        batch.insert(&self.meta, meta::UTXO_SNAPSHOT, &m.to_bytes()[..]);
        if !self.txindex_missing {
            batch.insert(&self.meta, meta::FORMAT_VERSION, &FORMAT_VERSION.to_le_bytes()[..]);
        }
        self.write_commit(batch, state.chain_id, state.tip, state.tip_height)
    }

    /// Stages the removal of every `utxos` entry: the per-output entries of format 1 and 2 when
    /// a directory is converted, the log records a new snapshot covers.
    fn stage_clear_utxos(&self, batch: &mut OwnedWriteBatch) -> Result<(), StoreError> {
        for g in self.utxos.iter() {
            batch.remove(&self.utxos, g.key().map_err(engine_at(&self.path))?);
        }
        Ok(())
    }

    /// Writes a snapshot file; a failure poisons nothing (the previous snapshot stays in force).
    fn write_snapshot_file(
        &self,
        m: SnapshotMeta,
        entries: impl Iterator<Item = (OutPoint, Coin)>,
    ) -> Result<(), StoreError> {
        snapshot::write(&self.path, m, entries).map_err(|e| {
            if crate::out_of_space(&e) {
                StoreError::Full {
                    path: self.path.clone(),
                    detail: format!("writing the UTXO snapshot: {e}"),
                }
            } else {
                StoreError::Engine(format!("{}: writing the UTXO snapshot: {e}", self.path.display()))
            }
        })
    }

    /// The UTXO set as of the committed tip: the snapshot, then the UTXO log's records (one
    /// per commit since the snapshot) in commit order.
    fn replay_utxos<R: Readable>(
        &self,
        snap: &R,
        m: &SnapshotMeta,
    ) -> Result<Vec<(OutPoint, Coin)>, StoreError> {
        let mut set: HashMap<OutPoint, Coin> = snapshot::read(&self.path, m)?.into_iter().collect();
        let mut changes = 0u64;
        for g in snap.iter(&self.utxos) {
            let (k, v) = g.into_inner().map_err(engine_at(&self.path))?;
            let seq = u64::from_be_bytes(fixed(&k, "utxos: log key")?);
            let rec = decode::<UtxoLog>(&v, || format!("utxos: log record of commit #{seq}"))?;
            for op in rec.remove.iter() {
                set.remove(op);
            }
            set.extend(rec.add.iter().copied());
            changes = changes.saturating_add((rec.remove.len() + rec.add.len()) as u64);
        }
        self.pending_changes.store(changes, Ordering::Relaxed);
        // In the order of their encodings, as the set's entries were listed before format 3.
        let mut utxos: Vec<(OutPoint, Coin)> = set.into_iter().collect();
        utxos.sort_unstable_by_key(|(op, _)| outpoint_order(op));
        Ok(utxos)
    }

    /// The database's last commit against the marker's record of it: the database may be ahead
    /// (the marker is written after each commit and not synced), never behind, and at the same
    /// commit it must hold the same chain and tip.
    fn check_mark(&self, m: &marker::Mark) -> Result<(), StoreError> {
        let engine = engine_at(&self.path);
        let recorded = recorded(m);
        let damaged = |detail: String| StoreError::Damaged { path: self.path.clone(), detail };
        let Some(chain_id) = self.meta.get(meta::CHAIN_ID).map_err(&engine)? else {
            return Err(damaged(format!("the database holds no chain, but {recorded}")));
        };
        let chain_id = Hash(fixed(&chain_id, "meta: `chain_id`")?);
        if chain_id != m.chain_id {
            return Err(damaged(format!(
                "the database holds chain {chain_id}, but its commit marker records chain {}",
                m.chain_id
            )));
        }
        let (tip, tip_height) = self.committed_tip()?;
        let held = format!("the database's last commit is #{} (tip {tip} at height {tip_height})", self.seq);
        if self.seq < m.seq {
            let lost = if tip_height < m.tip_height {
                format!("; the main chain above height {tip_height} (up to {}) is missing", m.tip_height)
            } else {
                String::new()
            };
            return Err(damaged(format!("{held}, but {recorded}: committed writes were lost{lost}")));
        }
        if self.seq == m.seq && (tip, tip_height) != (m.tip, m.tip_height) {
            return Err(damaged(format!("{held}, but {recorded}")));
        }
        Ok(())
    }

    /// Creates an empty store in `dir` (absent or empty): its files are made in a directory
    /// beside it and renamed into place once every keyspace exists, so a process killed while
    /// creating leaves no half-made store (the engine cannot reopen a keyspace whose creation
    /// was cut short: its directory exists, its record does not). A staging directory such a
    /// kill left is removed first.
    fn create(dir: &Path, mem: StoreMemory) -> Result<(), StoreError> {
        let staging = dir.with_extension("creating");
        let fail = |what: &str, p: &Path, e: std::io::Error| {
            StoreError::Engine(format!(
                "creating the store in {}: {what} {}: {e}",
                dir.display(),
                p.display()
            ))
        };
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| fail("removing", &staging, e))?;
        }
        std::fs::create_dir_all(&staging).map_err(|e| fail("creating", &staging, e))?;
        {
            let engine = engine_at(&staging);
            let db = engine_builder(&staging, mem).open().map_err(&engine)?;
            for name in ks::ALL {
                db.keyspace(name, || keyspace_options(name)).map_err(&engine)?;
            }
            db.persist(PersistMode::SyncAll).map_err(&engine)?;
        }
        if dir.exists() {
            // Only an empty directory gives way; anything in it is not ours to remove.
            std::fs::remove_dir(dir).map_err(|e| fail("replacing", dir, e))?;
        }
        std::fs::rename(&staging, dir).map_err(|e| fail("renaming", &staging, e))?;
        Ok(())
    }

    /// True if `dir` holds a store (the engine's files), without creating or changing anything.
    pub fn exists(dir: &Path) -> bool {
        dir.join("version").is_file() && dir.join("keyspaces").is_dir()
    }

    /// Moves the store in `from` (its files only: the engine's and the commit marker) into
    /// `to`, which must not exist yet; returns false, changing nothing, if `from` holds no
    /// store. Used to move a data directory of the old layout (the store directly in the data
    /// directory) to the one every command uses (`DATA_DIR/chain`).
    pub fn relocate(from: &Path, to: &Path) -> Result<bool, StoreError> {
        // Files go into a directory beside `to`, renamed into place once whole; a move that
        // was interrupted left that directory, and is finished here.
        let staging = to.with_extension("moving");
        if !DiskStore::exists(from) && !staging.is_dir() {
            return Ok(false);
        }
        if to.exists() {
            return Err(StoreError::Engine(format!(
                "cannot move the store in {} to {}: it exists",
                from.display(),
                to.display()
            )));
        }
        let fail = |what: &str, p: &Path, e: std::io::Error| {
            StoreError::Engine(format!("moving the store to {}: {what} {}: {e}", to.display(), p.display()))
        };
        let entries = std::fs::read_dir(from).map_err(|e| fail("reading", from, e))?;
        let mut names = Vec::new();
        for e in entries {
            let name = e.map_err(|e| fail("reading", from, e))?.file_name();
            let n = name.to_string_lossy();
            if matches!(n.as_ref(), "version" | "lock" | "keyspaces" | marker::FILE)
                || n.ends_with(".jnl")
                || snapshot::is_snapshot_file(&n)
            {
                names.push(name);
            }
        }
        std::fs::create_dir_all(&staging).map_err(|e| fail("creating", &staging, e))?;
        for name in &names {
            let (src, dst) = (from.join(name), staging.join(name));
            std::fs::rename(&src, &dst).map_err(|e| fail("moving", &src, e))?;
        }
        std::fs::rename(&staging, to).map_err(|e| fail("renaming", &staging, e))?;
        Ok(true)
    }

    /// The directory the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_poisoned(&self) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        // A store whose index writer failed is as poisoned as one whose commit failed; its
        // error says why.
        match self.index.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Holds the txid index's writer (`true`: nothing more is written, and closing the store
    /// leaves the queued changes unwritten, as a crash would) or lets it go on. For tests of an
    /// index behind its chain.
    #[doc(hidden)]
    pub fn debug_hold_txindex(&self, held: bool) {
        self.index.hold(held);
    }

    /// Switches the txid index on (the default) or off (see [`ChainStore::txindex_on`]): for
    /// nodes that serve no lookups by txid, which then spend nothing on the index. Set it
    /// before the chain opens the store.
    pub fn set_txindex(&mut self, on: bool) {
        self.txindex_off = !on;
    }

    /// Commits whose txid-index changes are not written yet.
    pub fn txindex_queued(&self) -> usize {
        self.index.queued()
    }

    /// Waits until the txid index's writer has written every commit's changes.
    pub fn flush_txindex(&self) -> Result<(), StoreError> {
        self.index.flush()
    }

    /// The chain id, if the store holds a chain.
    fn chain_id(&self) -> Result<Option<Hash>, StoreError> {
        match self.meta.get(meta::CHAIN_ID).map_err(engine_at(&self.path))? {
            Some(v) => Ok(Some(Hash(fixed(&v, "meta: `chain_id`")?))),
            None => Ok(None),
        }
    }

    /// The committed tip and its height.
    fn committed_tip(&self) -> Result<(Hash, u64), StoreError> {
        let engine = engine_at(&self.path);
        let tip =
            Hash(fixed(&required(self.meta.get(meta::TIP).map_err(&engine)?, meta::TIP)?, "meta: `tip`")?);
        let height = required(self.meta.get(meta::TIP_HEIGHT).map_err(&engine)?, meta::TIP_HEIGHT)?;
        Ok((tip, u64::from_le_bytes(fixed(&height, "meta: `tip_height`")?)))
    }

    /// Commits a batch without waiting for the disk, then keeps the memtables within
    /// [`StoreMemory::memtable_bytes`]. Any failure poisons the store.
    fn write(&mut self, batch: OwnedWriteBatch) -> Result<(), StoreError> {
        batch.commit().map_err(|e| {
            self.poisoned = true;
            self.write_error("write failed", &e)
        })?;
        self.bound_memtables()
    }

    /// The error of a failed write (`what`): [`StoreError::Full`] when the filesystem is out of
    /// space, [`StoreError::Engine`] otherwise.
    fn write_error(&self, what: &str, e: &fjall::Error) -> StoreError {
        crate::write_error_at(&self.path, what, e)
    }

    /// Every keyspace, for the engine-wide operations.
    fn keyspaces(&self) -> [&Keyspace; 8] {
        [
            &self.meta,
            &self.blocks,
            &self.headers,
            &self.undo,
            &self.heights,
            &self.utxos,
            &self.app,
            &self.txids,
        ]
    }

    /// Past the memtable budget, and with no earlier memtable still waiting to be written out,
    /// seals every keyspace's memtable so the engine writes it out (its own trigger is 64 MiB
    /// per keyspace). The data stays readable throughout: sealed memtables are read until
    /// their tables are in place.
    fn bound_memtables(&mut self) -> Result<(), StoreError> {
        if self.db.write_buffer_size() <= self.mem.memtable_bytes
            || self.keyspaces().iter().any(|k| k.sealed_memtable_count() > 0)
        {
            return Ok(());
        }
        let failed = self.keyspaces().iter().find_map(|k| k.rotate_memtable().err());
        match failed {
            None => Ok(()),
            Some(e) => {
                self.poisoned = true;
                Err(self.write_error("sealing a memtable failed", &e))
            }
        }
    }

    /// Commits a batch durably as the next commit and records it in the commit marker;
    /// `chain_id`, `tip` and `tip_height` describe the state after it. Any failure poisons the
    /// store.
    fn write_commit(
        &mut self,
        mut batch: OwnedWriteBatch,
        chain_id: Hash,
        tip: Hash,
        tip_height: u64,
    ) -> Result<(), StoreError> {
        let seq = self.seq + 1;
        batch.insert(&self.meta, meta::COMMIT_SEQ, &seq.to_le_bytes()[..]);
        self.write(batch.durability(Some(PersistMode::SyncData)))?;
        self.seq = seq;
        self.marker.write(&marker::Mark { seq, chain_id, tip, tip_height }).map_err(|e| {
            self.poisoned = true;
            let what = format!("writing {}: {e}", self.marker.path().display());
            if crate::out_of_space(&e) {
                StoreError::Full { path: self.path.clone(), detail: what }
            } else {
                StoreError::Engine(what)
            }
        })
    }

    /// Stages a block's data (`blocks` and `headers`).
    fn stage_block(&self, batch: &mut OwnedWriteBatch, hash: &Hash, block: &Block) -> Result<(), StoreError> {
        let bytes = block.encode();
        check_value_len("block", bytes.len())?;
        batch.insert(&self.blocks, &hash.0[..], bytes);
        batch.insert(&self.headers, &hash.0[..], block.header.encode());
        Ok(())
    }

    /// Stages the UTXO log record (the commit's UTXO changes, keyed by the commit's sequence
    /// number), and the undo and application changes of a commit (not its txid-index changes:
    /// the index writer's). Each key is
    /// written once (all items of a batch share one sequence number), with the effect of
    /// applying the changes in order; a later write of the same key wins.
    fn stage_changes(&self, batch: &mut OwnedWriteBatch, c: &Commit, log: bool) -> Result<(), StoreError> {
        if log && (!c.utxo_remove.is_empty() || !c.utxo_add.is_empty()) {
            let log =
                UtxoLog { remove: Cow::Borrowed(&c.utxo_remove), add: Cow::Borrowed(&c.utxo_add) }.encode();
            check_value_len("UTXO log record", log.len())?;
            batch.insert(&self.utxos, &(self.seq + 1).to_be_bytes()[..], log);
        }
        let undo: BTreeMap<Hash, &BlockUndo> = c.undo.iter().map(|(h, u)| (*h, u)).collect();
        for (hash, u) in undo {
            let bytes = u.encode();
            check_value_len("undo data", bytes.len())?;
            batch.insert(&self.undo, &hash.0[..], bytes);
        }
        let app: BTreeMap<&[u8], Option<&[u8]>> =
            c.app.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect();
        for (k, v) in app {
            match v {
                Some(v) => batch.insert(&self.app, k, v),
                None => batch.remove(&self.app, k),
            }
        }
        Ok(())
    }

    /// Stages the txid-index changes of `remove` and `add` (removals first) and the index tip.
    fn stage_txindex(
        &self,
        batch: &mut OwnedWriteBatch,
        remove: &[Hash],
        add: &[(Hash, TxLocation)],
        tip: (Hash, u64),
    ) {
        let changes = net_changes(remove, add).into_iter().map(|(t, l)| (t, l.copied()));
        txindex::stage(batch, &self.txids, &self.meta, meta::TXINDEX_TIP, changes, tip);
    }

    /// Stages the tip and the UTXO totals.
    fn stage_tip(&self, batch: &mut OwnedWriteBatch, tip: &Hash, tip_height: u64, c: &Commit) {
        batch.insert(&self.meta, meta::TIP, &tip.0[..]);
        batch.insert(&self.meta, meta::TIP_HEIGHT, &tip_height.to_le_bytes()[..]);
        batch.insert(&self.meta, meta::UTXO_COUNT, &c.utxo_count.to_le_bytes()[..]);
        batch.insert(&self.meta, meta::TOTAL_VALUE, &c.total_value.to_le_bytes()[..]);
    }

    /// Reads one height-index entry from an iterator item.
    fn height_entry(&self, g: fjall::Guard) -> Result<(u64, Hash), StoreError> {
        let (k, v) = g.into_inner().map_err(engine_at(&self.path))?;
        let height = u64::from_be_bytes(fixed(&k, "heights: key")?);
        let hash = Hash(fixed(&v, &format!("heights: entry at height {height}"))?);
        Ok((height, hash))
    }
}

impl ChainStore for DiskStore {
    fn load(&self) -> Result<Option<StoredState>, StoreError> {
        self.check_poisoned()?;
        // One snapshot, so every keyspace is read at the same point.
        let snap = self.db.snapshot();
        let get = |key: &str| snap.get(&self.meta, key).map_err(engine_at(&self.path));
        let Some(chain_id) = get(meta::CHAIN_ID)? else {
            return Ok(None);
        };
        let chain_id = Hash(fixed(&chain_id, "meta: `chain_id`")?);
        let params = required(get(meta::PARAMS)?, meta::PARAMS)?.to_vec();
        let tip = Hash(fixed(&required(get(meta::TIP)?, meta::TIP)?, "meta: `tip`")?);
        let tip_height = u64::from_le_bytes(fixed(
            &required(get(meta::TIP_HEIGHT)?, meta::TIP_HEIGHT)?,
            "meta: `tip_height`",
        )?);
        let utxo_count = u64::from_le_bytes(fixed(
            &required(get(meta::UTXO_COUNT)?, meta::UTXO_COUNT)?,
            "meta: `utxo_count`",
        )?);
        let total_value = u128::from_le_bytes(fixed(
            &required(get(meta::TOTAL_VALUE)?, meta::TOTAL_VALUE)?,
            "meta: `total_value`",
        )?);

        let main_chain =
            main_chain_from(snap.iter(&self.heights).map(|g| self.height_entry(g)), &tip, tip_height)?;

        let mut headers = Vec::new();
        for g in snap.iter(&self.headers) {
            let (k, v) = g.into_inner().map_err(engine_at(&self.path))?;
            let hash = Hash(fixed(&k, "headers: key")?);
            headers.push(decode::<Header>(&v, || format!("headers: entry {hash}"))?);
        }

        let utxos = match get(meta::UTXO_SNAPSHOT)? {
            Some(v) => {
                let m = SnapshotMeta::from_bytes(&v).ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "meta: `utxo_snapshot`: expected {} bytes, found {}",
                        SnapshotMeta::LEN,
                        v.len()
                    ))
                })?;
                self.replay_utxos(&snap, &m)?
            }
            // A directory of format 1 or 2, until `open` converts it.
            None => {
                let mut utxos = Vec::new();
                for g in snap.iter(&self.utxos) {
                    let (k, v) = g.into_inner().map_err(engine_at(&self.path))?;
                    let op = decode::<OutPoint>(&k, || "utxos: key".into())?;
                    utxos.push((op, decode::<Coin>(&v, || format!("utxos: entry {op}"))?));
                }
                utxos
            }
        };
        check_totals(&utxos, utxo_count, total_value)?;

        let mut app = Vec::new();
        for g in snap.iter(&self.app) {
            let (k, v) = g.into_inner().map_err(engine_at(&self.path))?;
            app.push((k.to_vec(), v.to_vec()));
        }

        Ok(Some(StoredState { params, chain_id, tip, tip_height, main_chain, headers, utxos, app }))
    }

    fn init(
        &mut self,
        params: &[u8],
        genesis: &Block,
        chain_id: Hash,
        first: &Commit,
    ) -> Result<(), StoreError> {
        self.check_poisoned()?;
        if self.chain_id()?.is_some() {
            return Err(StoreError::AlreadyInitialised);
        }
        check_value_len("parameters", params.len())?;
        check_commit(first)?;
        let utxos: HashMap<OutPoint, Coin> = net_changes(&first.utxo_remove, &first.utxo_add)
            .into_iter()
            .filter_map(|(op, c)| c.map(|c| (op, *c)))
            .collect();
        let (count, total) = totals(utxos.values());
        let m = SnapshotMeta { hash: chain_id, height: 0, count, total };
        self.write_snapshot_file(m, utxos.into_iter())?;
        let mut batch = self.db.batch();
        batch.insert(&self.meta, meta::FORMAT_VERSION, &FORMAT_VERSION.to_le_bytes()[..]);
        batch.insert(&self.meta, meta::UTXO_SNAPSHOT, &m.to_bytes()[..]);
        batch.insert(&self.meta, meta::PARAMS, params);
        batch.insert(&self.meta, meta::CHAIN_ID, &chain_id.0[..]);
        self.stage_block(&mut batch, &chain_id, genesis)?;
        batch.insert(&self.heights, &height_key(0)[..], &chain_id.0[..]);
        // The genesis snapshot holds `first`'s UTXO changes.
        self.stage_changes(&mut batch, first, false)?;
        self.stage_txindex(&mut batch, &first.txids_remove, &first.txids_add, (chain_id, 0));
        self.stage_tip(&mut batch, &chain_id, 0, first);
        self.write_commit(batch, chain_id, chain_id, 0)
    }

    fn put_block(&mut self, hash: &Hash, block: &Block) -> Result<(), StoreError> {
        self.check_poisoned()?;
        let mut batch = self.db.batch();
        self.stage_block(&mut batch, hash, block)?;
        // Not synced: see the module documentation.
        self.write(batch)
    }

    fn get_block(&self, hash: &Hash) -> Result<Option<Block>, StoreError> {
        self.check_poisoned()?;
        match self.blocks.get(hash.0).map_err(engine_at(&self.path))? {
            None => Ok(None),
            Some(v) => decode(&v, || format!("blocks: entry {hash}")).map(Some),
        }
    }

    fn get_undo(&self, hash: &Hash) -> Result<Option<BlockUndo>, StoreError> {
        self.check_poisoned()?;
        match self.undo.get(hash.0).map_err(engine_at(&self.path))? {
            None => Ok(None),
            Some(v) => decode(&v, || format!("undo: entry {hash}")).map(Some),
        }
    }

    fn commit(&mut self, c: &Commit) -> Result<(), StoreError> {
        let _s = scalechain_types::profile::span("store.commit");
        self.check_poisoned()?;
        let Some(chain_id) = self.chain_id()? else {
            return Err(no_chain());
        };
        check_commit(c)?;

        // Height index: set the new entries, then remove every entry above the new tip (those
        // the old tip had, found by a range scan, and any the commit itself set above it).
        let mut heights: BTreeMap<u64, Option<Hash>> =
            c.main_chain.iter().map(|(h, x)| (*h, Some(*x))).collect();
        if let Some(above) = c.tip_height.checked_add(1) {
            for (_, v) in heights.range_mut(above..) {
                *v = None;
            }
            for g in self.heights.range(height_key(above)..) {
                let k = g.key().map_err(engine_at(&self.path))?;
                heights.insert(u64::from_be_bytes(fixed(&k, "heights: key")?), None);
            }
        }

        let mut batch = self.db.batch();
        for (height, hash) in heights {
            match hash {
                Some(hash) => batch.insert(&self.heights, &height_key(height)[..], &hash.0[..]),
                None => batch.remove(&self.heights, &height_key(height)[..]),
            }
        }
        self.stage_changes(&mut batch, c, true)?;
        self.stage_tip(&mut batch, &c.tip, c.tip_height, c);
        self.write_commit(batch, chain_id, c.tip, c.tip_height)?;
        self.pending_changes.fetch_add((c.utxo_remove.len() + c.utxo_add.len()) as u64, Ordering::Relaxed);
        if !self.txindex_missing && !self.txindex_off {
            // An index not built yet stays so until `write_txindex` builds it whole; one
            // switched off stays where it stopped.
            let job = Job::new((c.tip, c.tip_height), &c.txids_remove, &c.txids_add);
            self.index.push(job).inspect_err(|_| self.poisoned = true)?;
        }
        Ok(())
    }

    fn hash_at(&self, height: u64) -> Result<Option<Hash>, StoreError> {
        self.check_poisoned()?;
        match self.heights.get(height_key(height)).map_err(engine_at(&self.path))? {
            None => Ok(None),
            Some(v) => Ok(Some(Hash(fixed(&v, &format!("heights: entry at height {height}"))?))),
        }
    }

    fn tx_location(&self, txid: &Hash) -> Result<Option<TxLocation>, StoreError> {
        self.check_poisoned()?;
        if self.txindex_off {
            return Err(StoreError::TxIndexOff);
        }
        // The commits whose index changes are not written yet, newest first. Checked before
        // the keyspace: the writer drops a job from the queue only after writing it.
        if let Some(answer) = self.index.lookup(txid) {
            return Ok(answer);
        }
        match self.txids.get(txid.0).map_err(engine_at(&self.path))? {
            None => Ok(None),
            Some(v) => TxLocation::from_bytes(&v).map(Some).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "txids: entry {txid}: expected {} bytes, found {}",
                    TxLocation::LEN,
                    v.len()
                ))
            }),
        }
    }

    fn txindex_tip(&self) -> Result<Option<(Hash, u64)>, StoreError> {
        self.check_poisoned()?;
        if self.txindex_missing {
            return Ok(None);
        }
        if let Some(tip) = self.index.queued_tip() {
            return Ok(Some(tip));
        }
        let v = self.meta.get(meta::TXINDEX_TIP).map_err(engine_at(&self.path))?;
        let v = required(v, meta::TXINDEX_TIP)?;
        txindex::tip_from_bytes(&v).map(Some).ok_or_else(|| {
            StoreError::Corrupt(format!("meta: `txindex_tip`: expected 40 bytes, found {}", v.len()))
        })
    }

    fn txindex_on(&self) -> bool {
        !self.txindex_off
    }

    fn write_txindex(
        &mut self,
        remove: &[Hash],
        add: &[(Hash, TxLocation)],
        tip: (Hash, u64),
    ) -> Result<(), StoreError> {
        self.check_poisoned()?;
        let Some(chain_id) = self.chain_id()? else {
            return Err(no_chain());
        };
        // After every queued commit's changes, which it moves past.
        self.index.flush()?;
        if self.index.queued() > 0 {
            return Err(StoreError::Engine("the txid index's writer is held with changes queued".into()));
        }
        let (chain_tip, chain_height) = self.committed_tip()?;
        let mut batch = self.db.batch();
        self.stage_txindex(&mut batch, remove, add, tip);
        batch.insert(&self.meta, meta::FORMAT_VERSION, &FORMAT_VERSION.to_le_bytes()[..]);
        self.write_commit(batch, chain_id, chain_tip, chain_height)?;
        self.txindex_missing = false;
        Ok(())
    }

    /// Due once the changes since the snapshot reach [`SNAPSHOT_EVERY`] and half the set (or
    /// the number [`DiskStore::set_snapshot_every`] set).
    fn snapshot_due(&self, utxo_count: u64) -> bool {
        let every = self.snapshot_every.unwrap_or_else(|| SNAPSHOT_EVERY.max(utxo_count / 2));
        self.pending_changes.load(Ordering::Relaxed) >= every
    }

    fn snapshot_utxos(&mut self, tip: Hash, height: u64, utxos: &UtxoSet) -> Result<(), StoreError> {
        let _s = scalechain_types::profile::span("store.snapshot");
        self.check_poisoned()?;
        let Some(chain_id) = self.chain_id()? else {
            return Err(no_chain());
        };
        let (committed, committed_height) = self.committed_tip()?;
        if (committed, committed_height) != (tip, height) {
            return Err(StoreError::Engine(format!(
                "a UTXO snapshot of block {tip} at height {height}, but the committed tip is {committed} at {committed_height}"
            )));
        }
        let m = SnapshotMeta { hash: tip, height, count: utxos.len() as u64, total: utxos.total_value() };
        if let Err(e) = self.write_snapshot_file(m, utxos.iter()) {
            // Tried again after another interval of changes, not at every commit.
            self.pending_changes.store(0, Ordering::Relaxed);
            return Err(e);
        }
        let mut batch = self.db.batch();
        batch.insert(&self.meta, meta::UTXO_SNAPSHOT, &m.to_bytes()[..]);
        self.stage_clear_utxos(&mut batch)?;
        self.write_commit(batch, chain_id, tip, height)?;
        self.pending_changes.store(0, Ordering::Relaxed);
        // Superseded files: leaving one behind costs disk, not correctness.
        let _ = snapshot::remove_others(&self.path, &tip);
        Ok(())
    }
}
