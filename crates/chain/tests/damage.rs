//! A damaged store is never opened short and never taken for a new one: bytes flipped at
//! seeded offsets of every file of a simulated chain's store either make the open fail with
//! an error that says where, or leave it opening at exactly the committed tip. And a store
//! refused as damaged is not initialised over.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use rand_chacha::rand_core::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scalechain_chain::{Accepted, Chain, ChainError, DiskStore};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_store::StoreError;
use scalechain_types::{Hash, HashKind};
use scalechain_workload::Generator;

fn params() -> Params {
    Params::devnet(HashKind::Sha256, SigMode::Ed25519)
}

fn verify() -> VerifyConfig {
    VerifyConfig::parallel([5; 32])
}

/// A closed store of `blocks` blocks of `txs` generated transactions; its tip and height.
fn simulate(dir: &Path, blocks: u64, txs: usize) -> (Hash, u64) {
    let p = params();
    let mut chain = Chain::open_or_init(DiskStore::open(dir).unwrap(), &p, Apps::none(), verify()).unwrap();
    let mut generator = Generator::new(&p, SigMode::Ed25519, 3);
    for _ in 0..blocks {
        let parent = chain.tip_header();
        let b = generator.build_block(&parent, chain.next_target(), parent.time + p.target_block_ms, txs);
        let t = b.header.time;
        assert!(matches!(chain.accept_block(b, t).unwrap(), Accepted::Connected(_)));
    }
    (chain.tip(), chain.tip_height())
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(files(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

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

/// Overwrites 8 bytes at `offset` (clamped to the file) with their complement, in place.
fn flip(path: &Path, offset: u64) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let len = f.metadata().unwrap().len();
    let start = offset.min(len.saturating_sub(8));
    let n = (len - start).min(8) as usize;
    let mut b = [0u8; 8];
    f.seek(SeekFrom::Start(start)).unwrap();
    f.read_exact(&mut b[..n]).unwrap();
    for x in &mut b[..n] {
        *x = !*x;
    }
    f.seek(SeekFrom::Start(start)).unwrap();
    f.write_all(&b[..n]).unwrap();
}

/// Bytes up to the last non-zero one (the engine preallocates its journal with zeros).
fn used_len(path: &Path) -> u64 {
    let b = std::fs::read(path).unwrap();
    b.iter().rposition(|x| *x != 0).map_or(0, |i| i as u64 + 1)
}

/// What opening one damaged copy gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Opened at exactly the committed tip.
    Exact,
    /// Refused as damaged, naming the directory.
    Damaged,
    /// Refused by a consistency check that says what disagrees.
    Corrupt,
    /// Refused as an engine failure (not damage: a wrong answer for a damaged store).
    Engine,
}

/// Copies the pristine store to `dir`, flips 8 bytes at `offset` of `rel`, opens the chain.
fn open_flipped(pristine: &Path, dir: &Path, rel: &Path, offset: u64, tip: (Hash, u64)) -> Outcome {
    copy_dir(pristine, dir);
    flip(&dir.join(rel), offset);
    let what = format!("{} at {offset}", rel.display());
    let opened = DiskStore::open(dir).map_err(ChainError::from);
    let outcome = match opened.and_then(|s| Chain::open(s, Apps::none(), verify())) {
        Ok(c) => {
            assert_eq!((c.tip(), c.tip_height()), tip, "{what}: opened short");
            Outcome::Exact
        }
        Err(ChainError::Store(e)) => {
            let text = e.to_string();
            match &e {
                StoreError::Damaged { path, .. } => {
                    assert_eq!(path, dir, "{what}: {text}");
                    Outcome::Damaged
                }
                StoreError::Corrupt(m) => {
                    assert!(m.contains(':'), "{what}: says what disagrees: {text}");
                    Outcome::Corrupt
                }
                StoreError::Engine(_) => {
                    eprintln!("{what}: {text}");
                    Outcome::Engine
                }
                other => panic!("{what}: unexpected {other:?}"),
            }
        }
        // The chain layer's own consistency checks (headers that do not form a tree,
        // parameters that do not decode) name what they found.
        Err(ChainError::Corrupt(m)) => {
            assert!(!m.is_empty(), "{what}");
            Outcome::Corrupt
        }
        // Above all not `Empty`: a damaged store read as a new one.
        Err(e) => panic!("{what}: {e}"),
    };
    std::fs::remove_dir_all(dir).unwrap();
    outcome
}

#[test]
fn flipped_bytes_in_any_store_file_are_refused_with_a_located_error_or_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    let (tip, height) = simulate(&pristine, 12, 30);
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    // The start of each file, the end of its data, and seeded offsets in between.
    let mut cases = Vec::new();
    for file in files(&pristine) {
        let rel = file.strip_prefix(&pristine).unwrap().to_path_buf();
        let len = used_len(&file);
        let mut offsets = vec![0, len.saturating_sub(8)];
        offsets.extend((0..2).map(|_| if len == 0 { 0 } else { rng.next_u64() % len }));
        cases.extend(offsets.into_iter().map(|o| (rel.clone(), o)));
    }
    // Opening waits on the disk more than it computes: four at a time.
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (cases, pristine, tmp) = (&cases, &pristine, tmp.path());
                s.spawn(move || {
                    (w..cases.len())
                        .step_by(4)
                        .map(|i| {
                            let (rel, offset) = &cases[i];
                            let dir = tmp.join(format!("case{i}"));
                            open_flipped(pristine, &dir, rel, *offset, (tip, height))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let count = |o: Outcome| outcomes.iter().filter(|x| **x == o).count();
    let tally = [Outcome::Exact, Outcome::Damaged, Outcome::Corrupt, Outcome::Engine].map(|o| (o, count(o)));
    eprintln!("{} flips: {tally:?}", cases.len());
    assert!(count(Outcome::Damaged) > 0, "some flips hit the journal or the marker: {tally:?}");
    assert_eq!(count(Outcome::Engine), 0, "damage is reported as damage, with what to do: {tally:?}");
}

#[test]
fn a_store_whose_journal_lost_its_commits_is_refused_and_not_initialised_over() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let (tip, height) = simulate(&dir, 5, 10);
    // The first bytes of the journal: the engine cuts the journal at the damage, and the
    // database alone would read as empty.
    let journal = files(&dir).into_iter().find(|f| f.extension().is_some_and(|e| e == "jnl")).unwrap();
    flip(&journal, 0);
    for attempt in 0..2 {
        let e = DiskStore::open(&dir).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, StoreError::Damaged { .. }), "attempt {attempt}: {text}");
        assert!(text.contains("holds no chain"), "attempt {attempt}: {text}");
        assert!(text.contains(&tip.to_string()) && text.contains(&format!("height {height}")), "{text}");
    }
    // The chain layer refuses it too, instead of writing a new genesis over it.
    let e = DiskStore::open(&dir)
        .map_err(ChainError::from)
        .and_then(|s| Chain::open_or_init(s, &params(), Apps::none(), verify()));
    assert!(matches!(e, Err(ChainError::Store(StoreError::Damaged { .. }))));
    let m = scalechain_store::marker::read(&dir).unwrap().unwrap();
    assert_eq!((m.tip, m.tip_height), (tip, height), "the marker still records the lost tip");
}
