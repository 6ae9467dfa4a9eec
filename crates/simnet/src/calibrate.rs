//! The cost model's calibration: times the engine's own code on this machine, one core at a
//! time, and derives the per-operation costs of [`CostModel`] from the differences between
//! runs that differ in one thing.
//!
//! On a devnet (SHA-256, Ed25519) with `n` independent one-input transfers of the premine:
//! - `byte_ns`: decoding the transfers' bytes and hashing their txids, per byte;
//! - `sig_ns`: admitting all `n` in one round into a fresh replica, minus the same with every
//!   signature already in the signature cache, per signature;
//! - `tx_ns`: that warm round, less its bytes, per transaction;
//! - `round_ns`: admitting them in `n` rounds of one, minus the one warm round, per extra round;
//! - `block_ns`: a block of the coinbase alone accepted by a node on a disk store (the node's
//!   store engine, in a directory of the system's temporary space);
//! - `block_tx_ns`: a block of all `n` accepted by a node that admitted them, minus the empty
//!   block, less their bytes, per transaction.
//!
//! Each measurement is the fastest of a few repetitions (the least disturbed by the rest of
//! the machine). Everything runs on a pool of one thread, so parallel code costs what one core
//! takes.
//!
//! Must not: be fitted to a simulation. It measures operations, never scenarios.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use scalechain_chain::{Chain, ChainStore, DiskStore, MemStore};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_mempool::{MempoolConfig, SignatureCache};
use scalechain_replica::{solve, Replica};
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Block, HashKind, Lock, Scheme, Tx};

use crate::cost::CostModel;
use crate::load::Load;
use crate::replica_of;

/// What went wrong in a calibration.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The machine could not start the calibration's thread.
    #[error("calibration: cannot start its thread: {0}")]
    Thread(String),
    /// The disk store could not be made or opened.
    #[error("calibration: the disk store in {dir}: {what}")]
    Store {
        /// Where.
        dir: PathBuf,
        /// What failed.
        what: String,
    },
    /// The engine did not do what the calibration needs (a transfer or block refused).
    #[error("calibration: {0}")]
    Engine(String),
}

/// Measures the cost model on this machine with `n` transfers (at most the devnet's premine,
/// 1,024) and `reps` repetitions of each measurement; `source` says where it ran.
pub fn calibrate(n: usize, reps: usize, source: &str) -> Result<CostModel, CalibrationError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .map_err(|e| CalibrationError::Thread(e.to_string()))?;
    pool.install(|| Calibration::new(n).run(reps.max(1), source))
}

struct Calibration {
    params: Params,
    txs: Vec<Tx>,
    reward: Lock,
    now: u64,
}

fn fastest<T>(
    reps: usize,
    mut f: impl FnMut() -> Result<(f64, T), CalibrationError>,
) -> Result<f64, CalibrationError> {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        best = best.min(f()?.0);
    }
    Ok(best)
}

fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed().as_nanos() as f64, out)
}

impl Calibration {
    fn new(n: usize) -> Calibration {
        let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let txs = Load::new(&params, SigMode::Ed25519, 0xca11b).take(n.max(2));
        let reward = Lock { scheme: Scheme::Ed25519, pubkey_hash: params.hash.hash(b"calibration miner") };
        let now = params.genesis_time + 60_000;
        Calibration { params, txs, reward, now }
    }

    fn replica(&self, cache: Option<Arc<SignatureCache>>) -> Replica<MemStore> {
        let chain =
            Chain::open_or_init(MemStore::new(), &self.params, Apps::none(), VerifyConfig::parallel([1; 32]))
                .expect("a devnet's parameters open a memory store");
        replica_of(chain, MempoolConfig::default(), cache.as_ref())
    }

    /// Admits `txs` in rounds of `per_round`; the time, and how many were admitted.
    fn admit<S: ChainStore>(&self, r: &Replica<S>, per_round: usize) -> (f64, usize) {
        timed(|| {
            let mut admitted = 0;
            for chunk in self.txs.chunks(per_round.max(1)) {
                let a = r.admit_batches(vec![(chunk.to_vec(), None)], self.now);
                admitted += a.batches.iter().map(|b| b.admitted.len()).sum::<usize>();
            }
            admitted
        })
    }

    fn all_admitted(&self, (t, admitted): (f64, usize)) -> Result<(f64, ()), CalibrationError> {
        if admitted != self.txs.len() {
            return Err(CalibrationError::Engine(format!(
                "{admitted} of {} transfers admitted",
                self.txs.len()
            )));
        }
        Ok((t, ()))
    }

    fn block(&self, from: &Replica<MemStore>, max_txs: usize) -> Block {
        let mut b = from.block_template(self.reward, max_txs, self.now);
        solve(&mut b.header, self.params.hash, 1, &AtomicBool::new(false));
        b
    }

    fn run(&self, reps: usize, source: &str) -> Result<CostModel, CalibrationError> {
        let n = self.txs.len() as f64;
        let encoded: Vec<Vec<u8>> = self.txs.iter().map(Encode::encode).collect();
        let bytes: f64 = encoded.iter().map(|e| e.len() as f64).sum();
        let decode = fastest(reps, || {
            Ok(timed(|| {
                for e in &encoded {
                    if let Ok(t) = Tx::decode(e) {
                        std::hint::black_box(t.txid(self.params.hash));
                    }
                }
            }))
        })?;
        let byte_ns = decode / bytes;

        let cache = Arc::new(SignatureCache::new(1 << 16));
        self.all_admitted(self.admit(&self.replica(Some(cache.clone())), self.txs.len()))?;
        let cold = fastest(reps, || self.all_admitted(self.admit(&self.replica(None), self.txs.len())))?;
        let warm = fastest(reps, || {
            self.all_admitted(self.admit(&self.replica(Some(cache.clone())), self.txs.len()))
        })?;
        let single = fastest(reps, || self.all_admitted(self.admit(&self.replica(Some(cache.clone())), 1)))?;
        let sigs: f64 = self.txs.iter().map(|t| t.inputs.len() as f64).sum();
        let sig_ns = ((cold - warm) / sigs).max(0.0);
        let tx_ns = ((warm - bytes * byte_ns) / n).max(0.0);
        let round_ns = ((single - warm) / (n - 1.0)).max(0.0);

        let miner = self.replica(Some(cache.clone()));
        self.all_admitted(self.admit(&miner, self.txs.len()))?;
        let (empty, full) = (self.block(&miner, 0), self.block(&miner, self.txs.len()));
        if full.txs.len() != self.txs.len() + 1 {
            return Err(CalibrationError::Engine(format!(
                "a template took {} of {} transfers",
                full.txs.len() - 1,
                n
            )));
        }
        let block_bytes = full.encoded_len() as f64;
        let empty_ns = fastest(reps, || self.accept_on_disk(&empty, None))?;
        let full_ns = fastest(reps, || self.accept_on_disk(&full, Some(&cache)))?;
        let block_tx_ns = ((full_ns - empty_ns - block_bytes * byte_ns) / n).max(0.0);
        Ok(CostModel {
            round_ns,
            tx_ns,
            sig_ns,
            byte_ns,
            block_ns: empty_ns,
            block_tx_ns,
            source: source.into(),
        })
    }

    /// A node on a disk store (that admitted the transfers, if `cache` is given, with their
    /// signatures in its cache) accepts `block`: the time of the acceptance alone.
    fn accept_on_disk(
        &self,
        block: &Block,
        cache: Option<&Arc<SignatureCache>>,
    ) -> Result<(f64, ()), CalibrationError> {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("scalechain-calibrate-{}-{run}", std::process::id()));
        let store_err = |what: String| CalibrationError::Store { dir: dir.clone(), what };
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| store_err(e.to_string()))?;
        let result = (|| {
            let store = DiskStore::open(&dir).map_err(|e| store_err(e.to_string()))?;
            let chain =
                Chain::open_or_init(store, &self.params, Apps::none(), VerifyConfig::parallel([1; 32]))
                    .map_err(|e| store_err(e.to_string()))?;
            let r = replica_of(chain, MempoolConfig::default(), cache);
            if cache.is_some() {
                self.all_admitted(self.admit(&r, self.txs.len()))?;
            }
            let (t, out) = timed(|| r.accept_block(block.clone(), self.now));
            if let Err(e) = &out.result {
                return Err(CalibrationError::Engine(format!("the calibration block was refused: {e}")));
            }
            Ok((t, ()))
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_measures_every_cost() {
        // The fastest of three: cold rounds verify 64 signatures, warm ones none, so even a loaded
        // machine shows the difference.
        let m = calibrate(64, 3, "test").unwrap();
        assert!(m.sig_ns > 0.0, "{m:?}");
        assert!(m.tx_ns > 0.0 && m.byte_ns > 0.0 && m.block_ns > 0.0, "{m:?}");
        assert_eq!(m.source, "test");
    }
}
