//! One behavioural suite for both engines, plus disk-only checks (reopen, corruption, format
//! version) that reach into the documented on-disk format through fjall directly.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Instant;

use scalechain_consensus::{BlockUndo, Coin, UtxoSet};
use scalechain_store::{
    ChainStore, Commit, DiskStore, MemStore, Shelf, StoreError, StoreMemory, StoredState, TxLocation,
    FORMAT_VERSION,
};
use scalechain_types::codec::Encode;
use scalechain_types::{Amount, Block, Hash, HashKind, Header, Lock, OutPoint, Scheme, Target, Tx, TxOut};

// ---------------------------------------------------------------------------------------------
// Builders

fn block(height: u64, prev: Hash, nonce: u64) -> (Hash, Block) {
    let header = Header {
        version: 1,
        height,
        prev_hash: prev,
        merkle_root: Hash([height as u8; 32]),
        time: 1_700_000_000_000 + height * 1000,
        target: Target(Hash([0xff; 32])),
        nonce,
    };
    let b = Block { header, txs: vec![Tx::coinbase(height, vec![])] };
    (b.hash(HashKind::Sha256), b)
}

fn op(n: u32) -> OutPoint {
    OutPoint { txid: Hash([(n % 251) as u8; 32]), index: n }
}

fn coin(value: u64, height: u64) -> Coin {
    Coin {
        out: TxOut {
            value: Amount::new(value).unwrap(),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([7; 32]) },
        },
        height,
        coinbase: height > 0,
    }
}

const PARAMS: &[u8] = b"test-params-v1";

/// The genesis block and a first commit with two UTXOs and one application entry.
fn genesis() -> (Hash, Block, Commit) {
    let (gid, g) = block(0, Hash::ZERO, 0);
    let first = Commit {
        tip: gid,
        tip_height: 0,
        main_chain: vec![(0, gid)],
        undo: vec![],
        utxo_remove: vec![],
        utxo_add: vec![(op(0), coin(50, 0)), (op(1), coin(25, 0))],
        app: vec![(b"\x01name".to_vec(), Some(b"alice".to_vec()))],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 2,
        total_value: 75,
    };
    (gid, g, first)
}

fn assert_same(a: &StoredState, b: &StoredState) {
    assert_eq!(a.params, b.params);
    assert_eq!(a.chain_id, b.chain_id);
    assert_eq!(a.tip, b.tip);
    assert_eq!(a.tip_height, b.tip_height);
    assert_eq!(a.main_chain, b.main_chain);
    let mut ha: Vec<_> = a.headers.iter().map(|h| h.encode()).collect();
    let mut hb: Vec<_> = b.headers.iter().map(|h| h.encode()).collect();
    ha.sort();
    hb.sort();
    assert_eq!(ha, hb);
    assert_eq!(a.utxos, b.utxos);
    assert_eq!(a.app, b.app);
}

fn utxo_map(s: &StoredState) -> std::collections::HashMap<OutPoint, Coin> {
    s.utxos.iter().copied().collect()
}

// ---------------------------------------------------------------------------------------------
// The shared suite

/// Runs the whole scenario on a store; `reopen` closes and reopens it (identity for memory).
/// Returns every loaded state, so the engines can be compared step by step.
fn suite<S: ChainStore>(mut s: S, reopen: impl Fn(S) -> S) -> Vec<StoredState> {
    let mut states = Vec::new();

    // Empty store.
    assert!(s.load().unwrap().is_none());
    assert_eq!(s.hash_at(0).unwrap(), None);
    let (gid, g, first) = genesis();
    assert_eq!(s.get_block(&gid).unwrap(), None);
    assert!(matches!(s.commit(&first), Err(StoreError::Engine(_))), "commit before init must fail");
    assert!(s.load().unwrap().is_none(), "a refused commit is not poisoning and writes nothing");

    // Init.
    s.init(PARAMS, &g, gid, &first).unwrap();
    let st = s.load().unwrap().expect("initialised");
    assert_eq!(st.params, PARAMS);
    assert_eq!(st.chain_id, gid);
    assert_eq!((st.tip, st.tip_height), (gid, 0));
    assert_eq!(st.main_chain, vec![gid]);
    assert_eq!(st.headers, vec![g.header]);
    assert_eq!(utxo_map(&st).len(), 2);
    assert_eq!(utxo_map(&st)[&op(0)], coin(50, 0));
    assert_eq!(st.app, vec![(b"\x01name".to_vec(), b"alice".to_vec())]);
    assert_eq!(s.get_block(&gid).unwrap(), Some(g.clone()));
    assert_eq!(s.hash_at(0).unwrap(), Some(gid));
    states.push(st);

    // A second init fails and changes nothing.
    assert!(matches!(s.init(PARAMS, &g, gid, &first), Err(StoreError::AlreadyInitialised)));
    assert_same(&s.load().unwrap().unwrap(), &states[0]);

    // Extend by two blocks.
    let (b1, blk1) = block(1, gid, 1);
    let (b2, blk2) = block(2, b1, 2);
    s.put_block(&b1, &blk1).unwrap();
    s.put_block(&b2, &blk2).unwrap();
    let undo1 = BlockUndo {
        spent: vec![(op(0), coin(50, 0))],
        app: vec![(b"\x01name".to_vec(), Some(b"alice".to_vec()))],
    };
    s.commit(&Commit {
        tip: b1,
        tip_height: 1,
        main_chain: vec![(1, b1)],
        undo: vec![(b1, undo1.clone())],
        utxo_remove: vec![op(0)],
        utxo_add: vec![(op(2), coin(30, 1)), (op(3), coin(20, 1))],
        app: vec![(b"\x01name".to_vec(), None), (b"\x01other".to_vec(), Some(b"x".to_vec()))],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 3,
        total_value: 75,
    })
    .unwrap();
    let st = s.load().unwrap().unwrap();
    assert_eq!((st.tip, st.tip_height), (b1, 1));
    assert_eq!(st.main_chain, vec![gid, b1]);
    assert_eq!(st.headers.len(), 3, "every stored block's header, committed or not");
    let u = utxo_map(&st);
    assert!(!u.contains_key(&op(0)));
    assert_eq!(u[&op(2)], coin(30, 1));
    assert_eq!(u.len(), 3);
    assert_eq!(st.app, vec![(b"\x01other".to_vec(), b"x".to_vec())]);
    assert_eq!(s.get_undo(&b1).unwrap(), Some(undo1.clone()));
    assert_eq!(s.get_undo(&b2).unwrap(), None);
    assert_eq!(s.get_block(&b2).unwrap(), Some(blk2.clone()));
    assert_eq!(s.hash_at(1).unwrap(), Some(b1));
    states.push(st);

    let undo2 = BlockUndo { spent: vec![(op(2), coin(30, 1))], app: vec![] };
    s.commit(&Commit {
        tip: b2,
        tip_height: 2,
        main_chain: vec![(2, b2)],
        undo: vec![(b2, undo2.clone())],
        utxo_remove: vec![op(2)],
        utxo_add: vec![(op(4), coin(40, 2))],
        app: vec![],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 3,
        total_value: 85,
    })
    .unwrap();
    let st = s.load().unwrap().unwrap();
    assert_eq!(st.main_chain, vec![gid, b1, b2]);
    states.push(st);

    // Reopen: same state.
    s = reopen(s);
    let st = s.load().unwrap().unwrap();
    assert_same(&st, states.last().unwrap());
    assert_eq!(s.get_undo(&b2).unwrap(), Some(undo2.clone()));

    // Reorganise to a side branch at height 1: entries above the new tip go.
    let (c1, blkc1) = block(1, gid, 99);
    s.put_block(&c1, &blkc1).unwrap();
    s.commit(&Commit {
        tip: c1,
        tip_height: 1,
        main_chain: vec![(1, c1)],
        undo: vec![(c1, BlockUndo::default())],
        // Disconnect b2 and b1 (restore op0, op2; drop their outputs), connect c1.
        utxo_remove: vec![op(4), op(2), op(3)],
        utxo_add: vec![(op(0), coin(50, 0)), (op(5), coin(1, 1))],
        app: vec![(b"\x01other".to_vec(), None), (b"\x01name".to_vec(), Some(b"alice".to_vec()))],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 3,
        total_value: 76,
    })
    .unwrap();
    let st = s.load().unwrap().unwrap();
    assert_eq!((st.tip, st.tip_height), (c1, 1));
    assert_eq!(st.main_chain, vec![gid, c1]);
    assert_eq!(s.hash_at(2).unwrap(), None);
    assert_eq!(s.hash_at(1).unwrap(), Some(c1));
    assert_eq!(st.headers.len(), 4);
    let u = utxo_map(&st);
    assert_eq!(u.keys().copied().collect::<std::collections::BTreeSet<_>>(), [op(0), op(1), op(5)].into());
    assert_eq!(st.app, vec![(b"\x01name".to_vec(), b"alice".to_vec())]);
    assert_eq!(s.get_undo(&b2).unwrap(), Some(undo2), "undo of disconnected blocks is kept");
    states.push(st);

    // Within one commit: removes come before adds, and a later write of a key wins.
    s.commit(&Commit {
        tip: c1,
        tip_height: 1,
        main_chain: vec![],
        undo: vec![(c1, undo1.clone()), (c1, BlockUndo::default())],
        utxo_remove: vec![op(5), op(1)],
        utxo_add: vec![(op(5), coin(2, 1)), (op(6), coin(3, 1)), (op(6), coin(4, 1))],
        app: vec![
            (b"\x02k".to_vec(), Some(b"1".to_vec())),
            (b"\x02k".to_vec(), Some(b"2".to_vec())),
            (b"\x02gone".to_vec(), Some(b"1".to_vec())),
            (b"\x02gone".to_vec(), None),
        ],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 3,
        total_value: 56,
    })
    .unwrap();
    let st = s.load().unwrap().unwrap();
    let u = utxo_map(&st);
    assert_eq!(u.len(), 3);
    assert_eq!(u[&op(5)], coin(2, 1));
    assert_eq!(u[&op(6)], coin(4, 1));
    assert!(!u.contains_key(&op(1)));
    assert_eq!(st.app, vec![(b"\x01name".to_vec(), b"alice".to_vec()), (b"\x02k".to_vec(), b"2".to_vec())]);
    assert_eq!(s.get_undo(&c1).unwrap(), Some(BlockUndo::default()));
    states.push(st);

    // An application key the engines cannot store is refused before anything is written, and
    // does not poison the store.
    for bad in [vec![], vec![1u8; 65536]] {
        let r = s.commit(&Commit {
            tip: gid,
            tip_height: 0,
            app: vec![(b"\x03ok".to_vec(), Some(vec![])), (bad, Some(b"v".to_vec()))],
            ..Commit::default()
        });
        assert!(matches!(r, Err(StoreError::Engine(_))), "{r:?}");
    }
    assert_same(&s.load().unwrap().unwrap(), states.last().unwrap());

    // Reopen again.
    s = reopen(s);
    assert_same(&s.load().unwrap().unwrap(), states.last().unwrap());
    assert_eq!(s.get_block(&b1).unwrap(), Some(blk1));
    states
}

fn reopen_disk(s: DiskStore) -> DiskStore {
    let path = s.path().to_path_buf();
    drop(s);
    DiskStore::open(&path).unwrap()
}

#[test]
fn suite_mem() {
    suite(MemStore::new(), |s| s);
}

#[test]
fn suite_mem_on_a_shelf() {
    let shelf = std::sync::Arc::new(Shelf::new());
    let alone = suite(MemStore::new(), |s| s);
    let shelved = suite(MemStore::on_shelf(shelf.clone()), |s| s);
    for (a, b) in alone.iter().zip(&shelved) {
        assert_same(a, b);
    }
    assert!(shelf.blocks() > 1);
}

#[test]
fn stores_on_a_shelf_hold_a_block_once_but_keep_a_forged_body_their_own() {
    let shelf = std::sync::Arc::new(Shelf::new());
    let (mut a, mut b) = (MemStore::on_shelf(shelf.clone()), MemStore::on_shelf(shelf.clone()));
    let (gid, g, first) = genesis();
    a.init(PARAMS, &g, gid, &first).unwrap();
    b.init(PARAMS, &g, gid, &first).unwrap();
    let (h1, b1) = block(1, gid, 1);
    a.put_block(&h1, &b1).unwrap();
    b.put_block(&h1, &b1).unwrap();
    assert_eq!(shelf.blocks(), 2, "genesis and block 1, once each");
    // Another body under the same header's hash: the store that got it keeps it.
    let mut forged = b1.clone();
    forged.txs.push(Tx::coinbase(9, vec![coin(1, 9).out]));
    let mut c = MemStore::on_shelf(shelf.clone());
    c.init(PARAMS, &g, gid, &first).unwrap();
    c.put_block(&h1, &forged).unwrap();
    assert_eq!(c.get_block(&h1).unwrap(), Some(forged));
    assert_eq!(a.get_block(&h1).unwrap(), Some(b1.clone()));
    assert_eq!(shelf.blocks(), 2);
}

#[test]
fn suite_disk() {
    let dir = tempfile::tempdir().unwrap();
    suite(DiskStore::open(&dir.path().join("db")).unwrap(), reopen_disk);
}

/// Closes and reopens a disk store after recording its UTXO set as a snapshot at its tip, so
/// the reopened store starts from that snapshot and replays the log of later commits.
fn snapshot_and_reopen(mut s: DiskStore) -> DiskStore {
    let st = s.load().unwrap().unwrap();
    let set: UtxoSet = st.utxos.iter().copied().collect();
    s.snapshot_utxos(st.tip, st.tip_height, &set).unwrap();
    assert!(!s.snapshot_due(0), "a snapshot clears the changes it covers");
    let snaps = std::fs::read_dir(s.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".snap"))
        .count();
    assert_eq!(snaps, 1, "superseded snapshot files are removed");
    reopen_disk(s)
}

/// The suite on both engines, `between` after each step of the disk's: the same states, in
/// the same order (not just the same sets).
fn engines_agree(between: fn(DiskStore) -> DiskStore) {
    let dir = tempfile::tempdir().unwrap();
    let mem = suite(MemStore::new(), |s| s);
    let disk = suite(DiskStore::open(dir.path()).unwrap(), between);
    assert_eq!(mem.len(), disk.len());
    for (m, d) in mem.iter().zip(&disk) {
        assert_same(m, d);
        assert_eq!(m.utxos, d.utxos);
        assert_eq!(m.headers, d.headers);
    }
}

#[test]
fn engines_agree_with_snapshots_between_steps() {
    engines_agree(snapshot_and_reopen);
}

#[test]
fn disk_snapshots_fall_due_after_enough_changes_and_only_of_the_committed_tip() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = DiskStore::open(dir.path()).unwrap();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    s.set_snapshot_every(3);
    assert!(!s.snapshot_due(2));
    let (b1, blk1) = block(1, gid, 0);
    s.put_block(&b1, &blk1).unwrap();
    let c = Commit {
        tip: b1,
        tip_height: 1,
        main_chain: vec![(1, b1)],
        undo: vec![(b1, BlockUndo::default())],
        utxo_remove: vec![op(0)],
        utxo_add: vec![(op(3), coin(20, 1)), (op(4), coin(30, 1))],
        utxo_count: 3,
        total_value: 75,
        ..Commit::default()
    };
    s.commit(&c).unwrap();
    assert!(s.snapshot_due(2), "three changes");
    let set: UtxoSet = s.load().unwrap().unwrap().utxos.into_iter().collect();
    assert!(s.snapshot_utxos(gid, 0, &set).is_err(), "only the committed tip's set is a snapshot");
    // Loading replays the log: the count of changes since the snapshot survives a reopening.
    let mut s = reopen_disk(s);
    s.set_snapshot_every(3);
    assert_eq!(utxo_map(&s.load().unwrap().unwrap()).len(), 3);
    assert!(s.snapshot_due(2));
}

#[test]
fn engines_agree_step_by_step() {
    engines_agree(reopen_disk);
}

// ---------------------------------------------------------------------------------------------
// Memory-only

#[test]
fn mem_clone_is_a_snapshot() {
    let mut s = MemStore::new();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    let snap = s.clone();
    s.commit(&Commit {
        tip: gid,
        utxo_remove: vec![op(1)],
        utxo_count: 1,
        total_value: 50,
        ..Commit::default()
    })
    .unwrap();
    assert_eq!(snap.load().unwrap().unwrap().utxos.len(), 2);
    assert_eq!(s.load().unwrap().unwrap().utxos.len(), 1);
}

#[test]
fn mem_corrupt_count_is_detected() {
    let mut s = MemStore::new();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    s.debug_set_utxo_count(3);
    let e = s.load().unwrap_err();
    assert!(matches!(&e, StoreError::Corrupt(m) if m.contains('2') && m.contains('3')), "{e}");
}

#[test]
fn mem_failed_write_poisons() {
    let mut s = MemStore::new();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    s.inject_write_failure();
    let (b1, blk1) = block(1, gid, 1);
    assert!(matches!(s.put_block(&b1, &blk1), Err(StoreError::Engine(_))));
    assert!(matches!(s.load(), Err(StoreError::Poisoned)));
    assert!(matches!(s.get_block(&gid), Err(StoreError::Poisoned)));
    assert!(matches!(s.hash_at(0), Err(StoreError::Poisoned)));
    assert!(matches!(s.commit(&first), Err(StoreError::Poisoned)));
}

// ---------------------------------------------------------------------------------------------
// Disk-only: tamper with the documented format through fjall, with the store closed.

fn with_keyspace(dir: &Path, name: &str, f: impl FnOnce(&fjall::Keyspace)) {
    let db = fjall::Database::builder(dir).open().unwrap();
    let ks = db.keyspace(name, fjall::KeyspaceCreateOptions::default).unwrap();
    f(&ks);
    db.persist(fjall::PersistMode::SyncAll).unwrap();
}

/// A closed disk store holding genesis and one block on top.
fn disk_with_two_blocks(dir: &Path) -> (Hash, Hash) {
    let mut s = DiskStore::open(dir).unwrap();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    let (b1, blk1) = block(1, gid, 1);
    s.put_block(&b1, &blk1).unwrap();
    s.commit(&Commit {
        tip: b1,
        tip_height: 1,
        main_chain: vec![(1, b1)],
        utxo_add: vec![(op(2), coin(5, 1))],
        utxo_count: 3,
        total_value: 80,
        ..Commit::default()
    })
    .unwrap();
    assert!(s.load().unwrap().is_some());
    (gid, b1)
}

/// The refusal of a tampered store, at open (which checks the commit marker against `meta`)
/// or at load.
fn corrupt_message(dir: &Path) -> String {
    match DiskStore::open(dir).and_then(|s| s.load()) {
        Err(StoreError::Corrupt(m)) => m,
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn disk_wrong_utxo_count_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| m.insert("utxo_count", 7u64.to_le_bytes()).unwrap());
    let m = corrupt_message(dir.path());
    assert!(m.contains('3') && m.contains('7'), "{m}");
}

#[test]
fn disk_wrong_total_value_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| m.insert("total_value", 81u128.to_le_bytes()).unwrap());
    let m = corrupt_message(dir.path());
    assert!(m.contains("80") && m.contains("81"), "{m}");
}

#[test]
fn disk_missing_height_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "heights", |h| h.remove(0u64.to_be_bytes()).unwrap());
    let m = corrupt_message(dir.path());
    assert!(m.contains("height 0"), "{m}");
}

#[test]
fn disk_tip_mismatch_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (gid, _) = disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "heights", |h| h.insert(1u64.to_be_bytes(), gid.0).unwrap());
    let m = corrupt_message(dir.path());
    assert!(m.contains("tip height 1"), "{m}");
}

#[test]
fn disk_bad_bytes_are_corrupt_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (gid, b1) = disk_with_two_blocks(dir.path());
    // A coin with an invalid coinbase flag.
    let mut bad = coin(5, 1).encode();
    *bad.last_mut().unwrap() = 9;
    with_keyspace(dir.path(), "utxos", |u| u.insert(op(2).encode(), bad).unwrap());
    assert!(corrupt_message(dir.path()).contains("utxos"));

    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "headers", |h| h.insert(gid.0, &b"short"[..]).unwrap());
    assert!(corrupt_message(dir.path()).contains("headers"));

    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| m.insert("tip_height", &b"\x01"[..]).unwrap());
    assert!(corrupt_message(dir.path()).contains("tip_height"));

    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "blocks", |b| b.insert(b1.0, &b"\x00\x01"[..]).unwrap());
    with_keyspace(dir.path(), "undo", |u| u.insert(b1.0, &b"\xff"[..]).unwrap());
    let s = DiskStore::open(dir.path()).unwrap();
    assert!(matches!(s.get_block(&b1), Err(StoreError::Corrupt(_))));
    assert!(matches!(s.get_undo(&b1), Err(StoreError::Corrupt(_))));
    assert!(s.load().is_ok(), "load reads headers, not blocks");
}

#[test]
fn disk_other_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| {
        assert_eq!(&*m.get("format_version").unwrap().unwrap(), FORMAT_VERSION.to_le_bytes());
        m.insert("format_version", (FORMAT_VERSION + 1).to_le_bytes()).unwrap();
    });
    match DiskStore::open(dir.path()) {
        Err(StoreError::Version { found }) if found == FORMAT_VERSION + 1 => {}
        other => panic!("expected Version, got {other:?}"),
    }
}

#[test]
fn disk_creates_missing_directories() {
    let dir = tempfile::tempdir().unwrap();
    let s = DiskStore::open(&dir.path().join("a/b/c")).unwrap();
    assert!(s.load().unwrap().is_none());
}

#[test]
fn disk_is_locked_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let _s = DiskStore::open(dir.path()).unwrap();
    assert!(matches!(DiskStore::open(dir.path()), Err(StoreError::Engine(_))));
}

/// A process that dies without dropping the store (no destructor, no final persist) loses
/// nothing it committed. The test re-runs its own binary as the child that dies.
#[test]
fn disk_commit_survives_process_death() {
    const CHILD: &str = "SCALECHAIN_STORE_TEST_CRASH_DIR";
    let (gid, g, first) = genesis();
    let (b1, blk1) = block(1, gid, 1);
    let (b2, blk2) = block(2, b1, 2);
    if let Some(dir) = std::env::var_os(CHILD) {
        let mut s = DiskStore::open(Path::new(&dir)).unwrap();
        s.init(PARAMS, &g, gid, &first).unwrap();
        s.put_block(&b1, &blk1).unwrap();
        s.commit(&Commit { tip: b1, tip_height: 1, main_chain: vec![(1, b1)], ..first.clone() }).unwrap();
        s.put_block(&b2, &blk2).unwrap();
        // Exits without running destructors: the store is never dropped.
        std::process::exit(42);
    }
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "disk_commit_survives_process_death", "--test-threads=1", "--nocapture"])
        .env(CHILD, dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(42), "the child must reach its exit");
    let s = DiskStore::open(dir.path()).unwrap();
    let st = s.load().unwrap().unwrap();
    assert_eq!((st.tip, st.tip_height), (b1, 1));
    assert_eq!(st.main_chain, vec![gid, b1]);
    assert_eq!(st.utxos.len(), 2);
    // The block written after the last commit reached the OS, so a process death keeps it (a
    // power loss might not).
    assert_eq!(s.get_block(&b2).unwrap(), Some(blk2));
}

/// Reopen with a few thousand UTXOs; prints the timing (`--nocapture` to see it).
#[test]
fn disk_reopen_with_many_utxos() {
    const N: u32 = 5000;
    let dir = tempfile::tempdir().unwrap();
    let (gid, g, mut first) = genesis();
    first.utxo_add = (0..N).map(|i| (op(i), coin(u64::from(i) + 1, 0))).collect();
    first.utxo_count = u64::from(N);
    first.total_value = (1..=u128::from(N)).sum();
    {
        let mut s = DiskStore::open(dir.path()).unwrap();
        let t = Instant::now();
        s.init(PARAMS, &g, gid, &first).unwrap();
        eprintln!("init with {N} UTXOs: {:?}", t.elapsed());
        // A few blocks on top, each spending one and adding one.
        let mut prev = gid;
        for h in 1..=20u64 {
            let (id, b) = block(h, prev, h);
            s.put_block(&id, &b).unwrap();
            let t = Instant::now();
            s.commit(&Commit {
                tip: id,
                tip_height: h,
                main_chain: vec![(h, id)],
                undo: vec![(id, BlockUndo { spent: vec![(op(h as u32), coin(h + 1, 0))], app: vec![] })],
                utxo_remove: vec![op(h as u32)],
                utxo_add: vec![(op(N + h as u32), coin(h + 1, h))],
                utxo_count: u64::from(N),
                total_value: first.total_value,
                ..Commit::default()
            })
            .unwrap();
            if h == 20 {
                eprintln!("one synced commit: {:?}", t.elapsed());
            }
            prev = id;
        }
    }
    let t = Instant::now();
    let s = DiskStore::open(dir.path()).unwrap();
    let opened = t.elapsed();
    let st = s.load().unwrap().unwrap();
    let total = t.elapsed();
    eprintln!("reopen with {N} UTXOs: open {opened:?}, open + load {total:?}");
    assert_eq!(st.utxos.len(), N as usize);
    assert_eq!(st.tip_height, 20);
    assert_eq!(st.main_chain.len(), 21);
}

// ---------------------------------------------------------------------------------------------
// The txid index

/// A stand-in txid for a test block's only transaction (the store does not look inside).
fn txid_of(block: &Hash) -> Hash {
    let mut t = block.0;
    t[0] ^= 0xff;
    Hash(t)
}

fn loc(block: Hash, height: u64, position: u32) -> TxLocation {
    TxLocation { block, height, position }
}

/// The txid index on either engine: written with the commits that connect and disconnect
/// blocks, removals before additions, kept across a reopen.
fn txindex_suite<S: ChainStore>(mut s: S, reopen: impl Fn(S) -> S) {
    let (gid, g, mut first) = genesis();
    let shared = Hash([0x5a; 32]);
    first.txids_add = vec![(txid_of(&gid), loc(gid, 0, 0))];
    s.init(PARAMS, &g, gid, &first).unwrap();
    assert_eq!(s.txindex_tip().unwrap(), Some((gid, 0)));
    assert_eq!(s.tx_location(&txid_of(&gid)).unwrap(), Some(loc(gid, 0, 0)));
    assert_eq!(s.tx_location(&shared).unwrap(), None);

    let totals = Commit { utxo_count: 2, total_value: 75, ..Commit::default() };
    let (b1, blk1) = block(1, gid, 1);
    s.put_block(&b1, &blk1).unwrap();
    s.commit(&Commit {
        tip: b1,
        tip_height: 1,
        main_chain: vec![(1, b1)],
        txids_add: vec![(txid_of(&b1), loc(b1, 1, 0)), (shared, loc(b1, 1, 1))],
        ..totals.clone()
    })
    .unwrap();
    assert_eq!(s.tx_location(&txid_of(&b1)).unwrap(), Some(loc(b1, 1, 0)));
    assert_eq!(s.tx_location(&shared).unwrap(), Some(loc(b1, 1, 1)));
    assert_eq!(s.txindex_tip().unwrap(), Some((b1, 1)));
    s = reopen(s);
    assert_eq!(s.txindex_tip().unwrap(), Some((b1, 1)));
    assert_eq!(s.tx_location(&shared).unwrap(), Some(loc(b1, 1, 1)));

    // Reorganise to c1: b1's transactions leave, c1's enter; one transaction is in both and
    // ends at c1.
    let (c1, blkc1) = block(1, gid, 77);
    s.put_block(&c1, &blkc1).unwrap();
    s.commit(&Commit {
        tip: c1,
        tip_height: 1,
        main_chain: vec![(1, c1)],
        txids_remove: vec![txid_of(&b1), shared],
        txids_add: vec![(shared, loc(c1, 1, 2)), (txid_of(&c1), loc(c1, 1, 0))],
        ..totals.clone()
    })
    .unwrap();
    assert_eq!(s.tx_location(&txid_of(&b1)).unwrap(), None);
    assert_eq!(s.tx_location(&shared).unwrap(), Some(loc(c1, 1, 2)));
    assert_eq!(s.tx_location(&txid_of(&c1)).unwrap(), Some(loc(c1, 1, 0)));
    s = reopen(s);
    assert_eq!(s.tx_location(&txid_of(&b1)).unwrap(), None);
    assert_eq!(s.tx_location(&shared).unwrap(), Some(loc(c1, 1, 2)));

    // A write of the index alone: removals, then additions, and its tip.
    s.write_txindex(&[shared, txid_of(&c1)], &[(txid_of(&c1), loc(c1, 1, 5))], (gid, 0)).unwrap();
    assert_eq!(s.tx_location(&shared).unwrap(), None);
    assert_eq!(s.tx_location(&txid_of(&c1)).unwrap(), Some(loc(c1, 1, 5)));
    assert_eq!(s.txindex_tip().unwrap(), Some((gid, 0)));
    s = reopen(s);
    assert_eq!(s.tx_location(&shared).unwrap(), None);
    assert_eq!(s.txindex_tip().unwrap(), Some((gid, 0)));
}

#[test]
fn txindex_mem() {
    txindex_suite(MemStore::new(), |s| s);
}

#[test]
fn txindex_disk() {
    let dir = tempfile::tempdir().unwrap();
    txindex_suite(DiskStore::open(dir.path()).unwrap(), reopen_disk);
}

#[test]
fn mem_dropped_txindex_is_not_ready_until_rebuilt() {
    let mut s = MemStore::new();
    let (gid, g, mut first) = genesis();
    first.txids_add = vec![(txid_of(&gid), loc(gid, 0, 0))];
    s.init(PARAMS, &g, gid, &first).unwrap();
    s.debug_drop_txindex();
    assert_eq!(s.txindex_tip().unwrap(), None);
    assert_eq!(s.tx_location(&txid_of(&gid)).unwrap(), None);
    s.write_txindex(&[], &[(txid_of(&gid), loc(gid, 0, 0))], (gid, 0)).unwrap();
    assert_eq!(s.txindex_tip().unwrap(), Some((gid, 0)));
    assert_eq!(s.tx_location(&txid_of(&gid)).unwrap(), Some(loc(gid, 0, 0)));
}

/// A directory of format 1 (no txid index) opens with no index tip; writing the index writes the
/// current format in the same batch, so the next open finds it.
#[test]
fn disk_format_1_opens_and_upgrades_with_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (gid, b1) = disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| m.insert("format_version", 1u32.to_le_bytes()).unwrap());
    {
        let mut s = DiskStore::open(dir.path()).unwrap();
        assert_eq!(s.txindex_tip().unwrap(), None);
        assert!(s.load().unwrap().is_some());
        s.write_txindex(&[], &[(txid_of(&gid), loc(gid, 0, 0)), (txid_of(&b1), loc(b1, 1, 0))], (b1, 1))
            .unwrap();
        assert_eq!(s.txindex_tip().unwrap(), Some((b1, 1)));
    }
    with_keyspace(dir.path(), "meta", |m| {
        assert_eq!(&*m.get("format_version").unwrap().unwrap(), FORMAT_VERSION.to_le_bytes());
    });
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.txindex_tip().unwrap(), Some((b1, 1)));
    assert_eq!(s.tx_location(&txid_of(&b1)).unwrap(), Some(loc(b1, 1, 0)));
}

/// A directory of format 3 (the index written inside each commit, no index tip) opens with its
/// tip recorded as the index tip and the current format.
#[test]
fn disk_format_3_gets_its_index_tip() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b1) = disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "meta", |m| {
        m.insert("format_version", 3u32.to_le_bytes()).unwrap();
        m.remove("txindex_tip").unwrap();
    });
    drop(DiskStore::open(dir.path()).unwrap());
    with_keyspace(dir.path(), "meta", |m| {
        assert_eq!(&*m.get("format_version").unwrap().unwrap(), FORMAT_VERSION.to_le_bytes());
    });
    assert_eq!(DiskStore::open(dir.path()).unwrap().txindex_tip().unwrap(), Some((b1, 1)));
}

/// The index follows the commits on the store's writer: while it is held, every lookup still
/// sees every commit (from the queue), and the index tip is the chain's; a store closed with
/// its writer held (as a crash would) reopens with the index behind, as it was before them,
/// and `write_txindex` moves it to the tip.
#[test]
fn disk_txindex_behind_after_a_held_writer_and_moved_to_the_tip() {
    let dir = tempfile::tempdir().unwrap();
    let (gid, g, mut first) = genesis();
    first.txids_add = vec![(txid_of(&gid), loc(gid, 0, 0))];
    let totals = Commit { utxo_count: 2, total_value: 75, ..Commit::default() };
    let mut ids = Vec::new();
    {
        let mut s = DiskStore::open(dir.path()).unwrap();
        s.init(PARAMS, &g, gid, &first).unwrap();
        s.debug_hold_txindex(true);
        let mut tip = gid;
        for height in 1..=3u64 {
            let (id, b) = block(height, tip, height);
            s.put_block(&id, &b).unwrap();
            s.commit(&Commit {
                tip: id,
                tip_height: height,
                main_chain: vec![(height, id)],
                txids_add: vec![(txid_of(&id), loc(id, height, 0))],
                ..totals.clone()
            })
            .unwrap();
            ids.push(id);
            tip = id;
        }
        assert_eq!(s.txindex_queued(), 3);
        assert_eq!(s.txindex_tip().unwrap(), Some((ids[2], 3)));
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(s.tx_location(&txid_of(id)).unwrap(), Some(loc(*id, i as u64 + 1, 0)));
        }
    }
    let mut s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.load().unwrap().unwrap().tip_height, 3);
    assert_eq!(s.txindex_tip().unwrap(), Some((gid, 0)));
    assert_eq!(s.tx_location(&txid_of(&ids[0])).unwrap(), None);
    let add: Vec<(Hash, TxLocation)> =
        ids.iter().enumerate().map(|(i, id)| (txid_of(id), loc(*id, i as u64 + 1, 0))).collect();
    s.write_txindex(&[], &add, (ids[2], 3)).unwrap();
    drop(s);
    let s = DiskStore::open(dir.path()).unwrap();
    assert_eq!(s.txindex_tip().unwrap(), Some((ids[2], 3)));
    assert_eq!(s.tx_location(&txid_of(&ids[1])).unwrap(), Some(loc(ids[1], 2, 0)));
}

/// Without a hold the writer writes each commit's changes: once flushed nothing is queued and
/// the index tip is on disk.
#[test]
fn disk_txindex_writer_writes_each_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b1) = disk_with_two_blocks(dir.path());
    let s = DiskStore::open(dir.path()).unwrap();
    s.flush_txindex().unwrap();
    assert_eq!(s.txindex_queued(), 0);
    drop(s);
    with_keyspace(dir.path(), "meta", |m| {
        assert_eq!(&m.get("txindex_tip").unwrap().unwrap()[..32], &b1.0[..]);
    });
}

#[test]
fn disk_bad_txindex_entry_is_corrupt_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (_, b1) = disk_with_two_blocks(dir.path());
    with_keyspace(dir.path(), "txids", |t| t.insert(txid_of(&b1).0, &b"short"[..]).unwrap());
    let s = DiskStore::open(dir.path()).unwrap();
    assert!(matches!(s.tx_location(&txid_of(&b1)), Err(StoreError::Corrupt(m)) if m.contains("txids")));
}

/// Brings the index of a store of this file's blocks (each with the one transaction
/// [`txid_of`] names) to the committed tip, as the chain layer does when it opens a store.
fn catch_up_txindex(s: &mut DiskStore) {
    let st = s.load().unwrap().unwrap();
    let headers: std::collections::HashMap<Hash, Header> =
        st.headers.iter().map(|h| (h.hash(HashKind::Sha256), *h)).collect();
    let (mut at, mut height) = s.txindex_tip().unwrap().unwrap();
    let mut remove = Vec::new();
    while st.main_chain.get(height as usize) != Some(&at) {
        remove.push(txid_of(&at));
        (at, height) = (headers[&at].prev_hash, height - 1);
    }
    let add: Vec<(Hash, TxLocation)> = (height + 1..=st.tip_height)
        .map(|h| {
            let id = st.main_chain[h as usize];
            (txid_of(&id), loc(id, h, 0))
        })
        .collect();
    s.write_txindex(&remove, &add, (st.tip, st.tip_height)).unwrap();
}

/// SIGKILL at random moments while a child commits blocks (with reorganisations) and their
/// txid-index changes: after every kill the committed tip never went back, and the index is
/// the index of the chain ending at its own tip (never ahead of the chain): every block of that
/// chain found where it is, no other block indexed.
#[test]
fn disk_txindex_and_tip_agree_after_sigkill() {
    const CHILD: &str = "SCALECHAIN_STORE_TEST_TXINDEX_KILL_DIR";
    let (gid, g, mut first) = genesis();
    first.txids_add = vec![(txid_of(&gid), loc(gid, 0, 0))];
    let totals = Commit { utxo_count: 2, total_value: 75, ..Commit::default() };
    if let Some(dir) = std::env::var_os(CHILD) {
        let mut s = DiskStore::open(Path::new(&dir)).unwrap();
        if s.load().unwrap().is_none() {
            s.init(PARAMS, &g, gid, &first).unwrap();
        }
        // What the chain layer does when it opens a store: the index to the tip first.
        catch_up_txindex(&mut s);
        let st = s.load().unwrap().unwrap();
        let (mut tip, mut height) = (st.tip, st.tip_height);
        for nonce in 1u64.. {
            let (id, b) = block(height + 1, tip, nonce);
            s.put_block(&id, &b).unwrap();
            s.commit(&Commit {
                tip: id,
                tip_height: height + 1,
                main_chain: vec![(height + 1, id)],
                txids_add: vec![(txid_of(&id), loc(id, height + 1, 0))],
                ..totals.clone()
            })
            .unwrap();
            if nonce % 3 == 0 {
                // Replace the new tip by a sibling: its transaction leaves the index.
                let (sib, sb) = block(height + 1, tip, nonce + (1 << 40));
                s.put_block(&sib, &sb).unwrap();
                s.commit(&Commit {
                    tip: sib,
                    tip_height: height + 1,
                    main_chain: vec![(height + 1, sib)],
                    txids_remove: vec![txid_of(&id)],
                    txids_add: vec![(txid_of(&sib), loc(sib, height + 1, 0))],
                    ..totals.clone()
                })
                .unwrap();
                tip = sib;
            } else {
                tip = id;
            }
            height += 1;
        }
        unreachable!("the parent kills this process");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut last_height = 0;
    for round in 0..5 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "disk_txindex_and_tip_agree_after_sigkill", "--test-threads=1"])
            .env(CHILD, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150 + seed % 400));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let s = DiskStore::open(dir.path()).unwrap();
        let Some(st) = s.load().unwrap() else { continue };
        assert!(st.tip_height >= last_height, "round {round}: the committed tip went back");
        last_height = st.tip_height;
        // The index (written after each commit, by the store's writer) may be behind the
        // chain or on a branch a later commit left, but it is exactly the index of the chain
        // ending at its tip: every block on that chain indexed where it is, no other.
        let (itip, iheight) = s.txindex_tip().unwrap().expect("an index tip");
        assert!(iheight <= st.tip_height, "round {round}: the index is ahead of the chain");
        let headers: std::collections::HashMap<Hash, Header> =
            st.headers.iter().map(|h| (h.hash(HashKind::Sha256), *h)).collect();
        let mut on_path = std::collections::HashSet::new();
        let (mut at, mut height) = (itip, iheight);
        loop {
            on_path.insert(at);
            assert_eq!(s.tx_location(&txid_of(&at)).unwrap(), Some(loc(at, height, 0)), "round {round}");
            if height == 0 {
                assert_eq!(at, gid, "round {round}: the index's chain ends at genesis");
                break;
            }
            let h = headers.get(&at).unwrap_or_else(|| panic!("round {round}: index tip {at} not stored"));
            (at, height) = (h.prev_hash, height - 1);
        }
        for id in headers.keys().filter(|id| !on_path.contains(*id)) {
            assert_eq!(
                s.tx_location(&txid_of(id)).unwrap(),
                None,
                "round {round}: {id} is off the index's chain"
            );
        }
    }
    assert!(last_height > 0, "the child never committed a block");
}

// ---------------------------------------------------------------------------------------------
// The commit marker: a database that lost commits is refused, never opened short.

/// Copies every file of `from` into `to` (a closed store's directory).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn damaged_detail(dir: &Path) -> String {
    match DiskStore::open(dir) {
        Err(e @ StoreError::Damaged { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&dir.display().to_string()), "names the directory: {text}");
            assert!(text.contains("To recover"), "says what to do: {text}");
            match e {
                StoreError::Damaged { detail, .. } => detail,
                _ => unreachable!(),
            }
        }
        other => panic!("expected Damaged, got {other:?}"),
    }
}

#[test]
fn disk_a_database_behind_its_commit_marker_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, old) = (tmp.path().join("live"), tmp.path().join("old"));
    let (_, b1) = disk_with_two_blocks(&dir);
    copy_dir(&dir, &old);
    // One more commit: block 2 on block 1.
    let (b2, blk2) = block(2, b1, 2);
    {
        let mut s = DiskStore::open(&dir).unwrap();
        s.put_block(&b2, &blk2).unwrap();
        s.commit(&Commit {
            tip: b2,
            tip_height: 2,
            main_chain: vec![(2, b2)],
            utxo_add: vec![(op(3), coin(5, 2))],
            utxo_count: 4,
            total_value: 85,
            ..Commit::default()
        })
        .unwrap();
    }
    // The database as it was one commit earlier, with the new marker: the commit is lost.
    let marker = std::fs::read(dir.join(scalechain_store::marker::FILE)).unwrap();
    std::fs::write(old.join(scalechain_store::marker::FILE), &marker).unwrap();
    let d = damaged_detail(&old);
    assert!(d.contains("height 1") && d.contains("height 2") && d.contains("lost"), "{d}");
    assert!(d.contains(&b2.to_string()), "names the lost tip: {d}");
    // Without a marker (a directory written before markers) it opens as it is.
    std::fs::remove_file(old.join(scalechain_store::marker::FILE)).unwrap();
    let st = DiskStore::open(&old).unwrap().load().unwrap().unwrap();
    assert_eq!((st.tip, st.tip_height), (b1, 1));
}

#[test]
fn disk_a_database_one_commit_ahead_of_its_marker_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let (gid, g, first) = genesis();
    let mut s = DiskStore::open(&dir).unwrap();
    s.init(PARAMS, &g, gid, &first).unwrap();
    let after_init = std::fs::read(dir.join(scalechain_store::marker::FILE)).unwrap();
    let (b1, blk1) = block(1, gid, 1);
    s.put_block(&b1, &blk1).unwrap();
    s.commit(&Commit { tip: b1, tip_height: 1, main_chain: vec![(1, b1)], ..first.clone() }).unwrap();
    drop(s);
    // A crash between the database's commit and the marker's: the marker is one behind.
    std::fs::write(dir.join(scalechain_store::marker::FILE), &after_init).unwrap();
    let mut s = DiskStore::open(&dir).unwrap();
    assert_eq!(s.load().unwrap().unwrap().tip, b1);
    // The next commit brings the marker up to date.
    let (b2, blk2) = block(2, b1, 2);
    s.put_block(&b2, &blk2).unwrap();
    s.commit(&Commit { tip: b2, tip_height: 2, main_chain: vec![(2, b2)], ..first }).unwrap();
    drop(s);
    let m = scalechain_store::marker::read(&dir).unwrap().unwrap();
    assert_eq!((m.tip, m.tip_height, m.seq), (b2, 2, 3));
}

#[test]
fn disk_an_empty_database_with_a_marker_is_not_a_new_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    disk_with_two_blocks(&dir);
    let marker = std::fs::read(dir.join(scalechain_store::marker::FILE)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(scalechain_store::marker::FILE), &marker).unwrap();
    let d = damaged_detail(&dir);
    assert!(d.contains("holds no chain") && d.contains("height 1"), "{d}");
    // A damaged marker is refused too, naming the file.
    let mut bad = marker.clone();
    bad[10] ^= 1;
    bad[scalechain_store::marker::SLOT + 10] ^= 1;
    std::fs::write(dir.join(scalechain_store::marker::FILE), &bad).unwrap();
    let d = damaged_detail(&dir);
    assert!(d.contains("commit.mark") && d.contains("neither slot"), "{d}");
}

#[test]
fn disk_a_store_moves_to_its_new_directory_even_after_an_interrupted_move() {
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("d"), tmp.path().join("d/chain"));
    let (_, b1) = disk_with_two_blocks(&old);
    std::fs::write(old.join("node_key"), [7u8; 32]).unwrap();
    // Interrupted: part of the store already went to the staging directory.
    let staging = new.with_extension("moving");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::rename(old.join("keyspaces"), staging.join("keyspaces")).unwrap();
    assert!(DiskStore::relocate(&old, &new).unwrap(), "the move is finished");
    assert!(!staging.exists() && !old.join("version").exists() && old.join("node_key").exists());
    let st = DiskStore::open(&new).unwrap().load().unwrap().unwrap();
    assert_eq!((st.tip, st.tip_height), (b1, 1));
    // Nothing left to move; a second call changes nothing.
    assert!(!DiskStore::relocate(&old, &new).unwrap());
    assert!(!DiskStore::relocate(&tmp.path().join("none"), &tmp.path().join("none/chain")).unwrap());
}

// ---------------------------------------------------------------------------------------------
// Memory

/// Blocks of about 1 MB each (a coinbase carrying the bytes).
fn big_block(height: u64, prev: Hash) -> (Hash, Block) {
    let (_, mut b) = block(height, prev, height);
    b.txs[0].data = vec![height as u8; 1 << 20];
    (b.hash(HashKind::Sha256), b)
}

/// Writes 24 blocks of 1 MB and returns the most the memtables held once the engine's
/// writes-out had caught up after each.
fn memtable_peak(mem: StoreMemory) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let mut s = DiskStore::open_with(dir.path(), mem).unwrap();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    let mut prev = gid;
    let mut peak = 0;
    for h in 1..=24 {
        let (id, b) = big_block(h, prev);
        s.put_block(&id, &b).unwrap();
        prev = id;
        let deadline = Instant::now() + std::time::Duration::from_secs(2);
        while s.memory().write_buffer > mem.memtable_bytes + (2 << 20) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        peak = peak.max(s.memory().write_buffer);
    }
    // Everything written is still there.
    assert_eq!(s.get_block(&prev).unwrap().unwrap().txs[0].data.len(), 1 << 20);
    peak
}

#[test]
fn memtables_stay_within_their_budget() {
    let budget = StoreMemory { cache_bytes: 1 << 20, memtable_bytes: 4 << 20 };
    let bounded = memtable_peak(budget);
    // The budget, plus what was written while an earlier write-out was still running.
    assert!(bounded <= 8 << 20, "{bounded} bytes in memtables against a 4 MiB budget");
    // Without the bound the engine keeps up to 64 MiB per keyspace: all 24 MB stay in memory.
    let unbounded = memtable_peak(StoreMemory { cache_bytes: 1 << 20, memtable_bytes: 1 << 40 });
    assert!(unbounded > 20 << 20, "{unbounded}");
}

#[test]
fn a_store_is_created_whole_and_a_creation_cut_short_leaves_nothing_in_the_way() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("chain");
    // What a process killed while creating the store leaves: a half-made staging directory
    // (here: an engine directory with one keyspace folder and no record of it).
    let staging = tmp.path().join("chain.creating");
    std::fs::create_dir_all(staging.join("keyspaces").join("3")).unwrap();
    std::fs::write(staging.join("version"), b"junk").unwrap();
    let mut s = DiskStore::open(&dir).unwrap();
    assert!(!staging.exists(), "the leftover is removed");
    assert!(DiskStore::exists(&dir));
    assert!(s.load().unwrap().is_none(), "a new store holds no chain");
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    drop(s);
    // An existing empty directory is taken; one holding anything else is not touched.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(DiskStore::open(&empty).is_ok());
    let busy = tmp.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), b"mine").unwrap();
    let e = DiskStore::open(&busy).unwrap_err().to_string();
    assert!(e.contains("creating the store in") && e.contains("busy"), "{e}");
    assert_eq!(std::fs::read(busy.join("notes.txt")).unwrap(), b"mine");
    let reopened = DiskStore::open(&dir).unwrap();
    assert_eq!(reopened.load().unwrap().unwrap().chain_id, gid);
}

/// Every file under `dir` whose parent directory is named `blobs`.
fn blob_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(blob_files(&p));
        } else if p.parent().and_then(|d| d.file_name()).is_some_and(|n| n == "blobs") {
            out.push(p);
        }
    }
    out
}

#[test]
fn large_values_live_in_blob_files_survive_reopening_and_damage_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mem = StoreMemory { cache_bytes: 1 << 20, memtable_bytes: 1 << 20 };
    let mut s = DiskStore::open_with(dir.path(), mem).unwrap();
    let (gid, g, first) = genesis();
    s.init(PARAMS, &g, gid, &first).unwrap();
    let mut blocks = Vec::new();
    let mut prev = gid;
    for h in 1..=3 {
        let (id, b) = big_block(h, prev);
        s.put_block(&id, &b).unwrap();
        blocks.push((id, b));
        prev = id;
    }
    // A commit whose UTXO log record and undo data are large too.
    let coins: Vec<(OutPoint, Coin)> = (10..200).map(|n| (op(n), coin(u64::from(n), 1))).collect();
    let (b1, _) = &blocks[0];
    let undo = BlockUndo { spent: coins.clone(), app: vec![] };
    let c = Commit {
        tip: *b1,
        tip_height: 1,
        main_chain: vec![(1, *b1)],
        undo: vec![(*b1, undo.clone())],
        utxo_remove: vec![],
        utxo_add: coins.clone(),
        app: vec![],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: 2 + coins.len() as u64,
        total_value: 75 + coins.iter().map(|(_, c)| u128::from(c.out.value.get())).sum::<u128>(),
    };
    s.commit(&c).unwrap();
    // The engine writes sealed memtables out in the background.
    let blob_bytes =
        |d: &Path| blob_files(d).iter().map(|p| std::fs::metadata(p).unwrap().len()).sum::<u64>();
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    while blob_bytes(dir.path()) < 1 << 20 && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(s);
    // The block bodies the engine wrote out went to blob files (uncompressed: 1 MiB of one byte
    // stays 1 MiB); what it had not written out yet is in its journal.
    let blobs = blob_files(dir.path());
    let written = blob_bytes(dir.path());
    assert!(written >= 1 << 20, "{written} bytes in {} blob files", blobs.len());
    let s = DiskStore::open_with(dir.path(), mem).unwrap();
    for (id, b) in &blocks {
        assert_eq!(s.get_block(id).unwrap().as_ref(), Some(b));
    }
    assert_eq!(s.get_undo(b1).unwrap(), Some(undo));
    let st = s.load().unwrap().unwrap();
    assert_eq!(st.utxos.len(), 2 + coins.len());
    drop(s);
    // Damage in the middle of every blob file: reading the blocks gives an error, never a panic
    // and never other bytes.
    for p in &blobs {
        let mut bytes = std::fs::read(p).unwrap();
        let mid = bytes.len() / 2;
        for b in &mut bytes[mid..mid + 64] {
            *b ^= 0x5a;
        }
        std::fs::write(p, bytes).unwrap();
    }
    match DiskStore::open_with(dir.path(), mem) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(s) => {
            let mut errors = 0;
            for (id, b) in &blocks {
                match s.get_block(id) {
                    Ok(Some(got)) => assert_eq!(&got, b, "damaged bytes read back as a block"),
                    Ok(None) => panic!("a stored block vanished"),
                    Err(e) => {
                        println!("{e}");
                        errors += 1;
                    }
                }
            }
            assert!(errors > 0, "no damage was noticed");
        }
    }
}
