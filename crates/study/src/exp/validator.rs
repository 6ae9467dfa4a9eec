//! Seed 004's validator unit (its last benchmark): N threads validate transactions drawn at
//! random from a 100,000-transaction mempool for one second, each through its own read handle
//! (for us, a snapshot of the pool: `Mempool::snapshot`), and send their confirmations in
//! batches of 300 to a writer thread that commits each batch to a store (a fjall keyspace in a
//! temporary directory, one write batch per confirmation batch, not synced, as seed 004 wrote
//! through a `BufWriter`). Seed 004 ran 50 threads and counted 272,624 validations and 92,831
//! distinct confirmed transactions written; the sweep over thread counts shows what the
//! threads buy on this machine's cores.

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand_chacha::rand_core::{Rng, SeedableRng};
use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_mempool::Mempool;
use scalechain_types::{Hash, Tx};

use super::{open_pool_config, verify_config, with_env};
use crate::StudyError;

/// Confirmations a validator thread sends at once (seed 004: 300).
pub const CONFIRM_BATCH: usize = 300;
/// Transactions in the mempool (seed 004: 100,000).
pub const POOL_TXS: usize = 100_000;
/// Thread counts of the sweep (seed 004 ran 50; "30–50 is the typical optimization").
pub const THREADS: &[usize] = &[1, 2, 4, 8, 16, 32, 50];

/// What one run of the unit did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitRun {
    /// Validations in the window, all threads.
    pub validations: u64,
    /// Distinct transactions the writer committed.
    pub written: u64,
    /// The writer's time committing, per distinct transaction written, ns.
    pub write_ns: f64,
    /// The window's length, s.
    pub window_s: f64,
}

/// A pool holding the first [`POOL_TXS`] (or all) of `txs`, admitted against the workload's
/// coins: what the validator threads read.
pub fn pool_of(
    p: &scalechain_consensus::Params,
    utxos: &scalechain_consensus::UtxoSet,
    txs: &[Tx],
) -> Mempool {
    let pool = Mempool::new(p.hash, open_pool_config());
    let cfg = verify_config(VerifyMode::Parallel);
    let n = txs.len().min(POOL_TXS);
    for chunk in txs[..n].chunks(4096) {
        with_env(p, &cfg, utxos, |env| pool.admit(env, chunk.to_vec()));
    }
    pool
}

/// Runs the unit once: `threads` validators over `pool` for `window`, the writer committing
/// into a fresh keyspace under `dir`. `seed` makes the draws reproducible.
pub fn run_unit(
    p: &scalechain_consensus::Params,
    utxos: &scalechain_consensus::UtxoSet,
    pool: &Mempool,
    threads: usize,
    window: Duration,
    dir: &std::path::Path,
    seed: u64,
) -> Result<UnitRun, StudyError> {
    let txids: Vec<Hash> = pool.snapshot().iter().map(|e| e.txid).collect();
    if txids.is_empty() {
        return Err(StudyError::Wrong("the validator unit's mempool is empty".into()));
    }
    let db = fjall::Database::builder(dir)
        .open()
        .map_err(|e| StudyError::Wrong(format!("opening a store in {}: {e}", dir.display())))?;
    let ks = db
        .keyspace("confirmations", fjall::KeyspaceCreateOptions::default)
        .map_err(|e| StudyError::Wrong(format!("store keyspace: {e}")))?;
    let (send, recv) = mpsc::channel::<Vec<Hash>>();
    let cfg = verify_config(VerifyMode::Sequential);
    let writer = std::thread::spawn(move || -> Result<(u64, Duration), String> {
        let mut seen: HashSet<Hash> = HashSet::new();
        let mut busy = Duration::ZERO;
        while let Ok(batch) = recv.recv() {
            let t = Instant::now();
            let mut b = db.batch();
            for h in batch.iter().filter(|h| seen.insert(**h)) {
                b.insert(&ks, &h.0[..], &[][..]);
            }
            b.commit().map_err(|e| format!("committing confirmations: {e}"))?;
            busy += t.elapsed();
        }
        Ok((seen.len() as u64, busy))
    });
    let start = Instant::now();
    let end = start + window;
    let counts: Vec<Result<u64, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let send = send.clone();
                let (txids, cfg) = (&txids, &cfg);
                s.spawn(move || -> Result<u64, String> {
                    // This thread's read handle.
                    let snap = pool.snapshot();
                    let mut rng =
                        rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37));
                    let (mut done, mut confs) = (0u64, Vec::with_capacity(CONFIRM_BATCH));
                    while Instant::now() < end {
                        let id = txids[(rng.next_u64() % txids.len() as u64) as usize];
                        let entry = snap.get(&id).ok_or_else(|| format!("{id} left the snapshot"))?;
                        let ok = with_env(p, cfg, utxos, |env| {
                            verify_txs(env, std::slice::from_ref(&*entry.tx))[0].is_ok()
                        });
                        if !ok {
                            return Err(format!("a pooled transaction failed validation: {id}"));
                        }
                        done += 1;
                        confs.push(id);
                        if confs.len() == CONFIRM_BATCH {
                            let _ =
                                send.send(std::mem::replace(&mut confs, Vec::with_capacity(CONFIRM_BATCH)));
                        }
                    }
                    if !confs.is_empty() {
                        let _ = send.send(confs);
                    }
                    Ok(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a validator thread panicked".into())))
            .collect()
    });
    let window_s = start.elapsed().as_secs_f64();
    drop(send);
    let (written, busy) = writer
        .join()
        .map_err(|_| StudyError::Wrong("the writer thread panicked".into()))?
        .map_err(StudyError::Wrong)?;
    let mut validations = 0;
    for c in counts {
        validations += c.map_err(StudyError::Wrong)?;
    }
    Ok(UnitRun {
        validations,
        written,
        write_ns: if written == 0 { 0.0 } else { busy.as_nanos() as f64 / written as f64 },
        window_s,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::exp::{study_params, CHAIN_ID};
    use scalechain_workload::fixed::{transfers, Spec};

    #[test]
    fn the_unit_validates_pooled_transactions_and_writes_each_confirmation_once() {
        let p = study_params();
        let w = transfers(&p, &CHAIN_ID, &Spec::simple(64, 7));
        let pool = pool_of(&p, &w.utxos, &w.txs);
        assert_eq!(pool.len(), 64);
        let dir = tempfile::tempdir().unwrap();
        let r = run_unit(&p, &w.utxos, &pool, 2, Duration::from_millis(50), dir.path(), 1).unwrap();
        assert!(r.validations > 0, "{r:?}");
        // Draws repeat, writes do not: at most one per pooled transaction.
        assert!(r.written >= 1 && r.written <= 64 && r.written <= r.validations, "{r:?}");
        assert!(r.window_s >= 0.05, "{r:?}");
    }
}
