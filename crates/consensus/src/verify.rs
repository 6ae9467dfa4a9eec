//! The signature verification engine: `sequential`, `batch` and `parallel` strategies.
//!
//! - `sequential`: one single verification per signature, in order.
//! - `batch`: Ed25519 signatures in ZIP-215 batches of `batch_size` on the calling thread;
//!   secp256k1 (no batch verification exists for ECDSA) singly.
//! - `parallel`: the same batches, and the secp256k1 checks, spread over the current rayon pool
//!   (callers choose its thread count with `ThreadPool::install`).
//!
//! All three return the same verdict: ZIP-215 makes batch and single Ed25519 verification accept
//! exactly the same signatures, and when a batch fails its signatures are re-verified singly to
//! name the culprit. The reported failure is always the lowest-indexed bad job, whatever the mode.
//!
//! Batch coefficients come from `VerifyConfig::seed`, which the caller draws from the OS: an
//! adversary who could predict them could make a bad batch pass.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use scalechain_types::keys::{self, Ed25519Item};
use scalechain_types::profile;
use scalechain_types::{Hash, HashKind, PubKey, Scheme, SigError, Signature};

/// How signatures are verified.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum VerifyMode {
    /// One at a time.
    Sequential,
    /// ZIP-215 batches on one thread.
    Batch,
    /// Batches over the rayon pool.
    #[default]
    Parallel,
}

impl VerifyMode {
    /// Every mode.
    pub const ALL: [VerifyMode; 3] = [VerifyMode::Sequential, VerifyMode::Batch, VerifyMode::Parallel];

    /// The name used on the command line and in benchmark ids.
    pub fn name(self) -> &'static str {
        match self {
            VerifyMode::Sequential => "sequential",
            VerifyMode::Batch => "batch",
            VerifyMode::Parallel => "parallel",
        }
    }
}

impl std::str::FromStr for VerifyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VerifyMode::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            format!("unknown verification mode {s:?} (expected sequential, batch or parallel)")
        })
    }
}

/// Transactions whose signatures were already verified, by wtxid: a node's mempool checks every
/// signature at admission, so connecting a block skips the signature jobs of the transactions
/// it already holds. The wtxid commits to the whole encoding (witnesses included) and the
/// sighash depends only on the chain id and the txid, so a cached verdict is the verdict the
/// engine would reach again; the contextual rules (coins, locks, values) still run.
pub trait SigCache: Sync {
    /// True if every signature of the transaction with this wtxid verified.
    fn contains(&self, wtxid: &Hash) -> bool;
}

/// Engine settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyConfig {
    /// The strategy.
    pub mode: VerifyMode,
    /// Secret seed for batch coefficients (draw it from the OS in production).
    pub seed: [u8; 32],
    /// Signatures per Ed25519 batch.
    pub batch_size: usize,
}

impl VerifyConfig {
    /// Parallel batches of 256 with the given seed.
    pub fn parallel(seed: [u8; 32]) -> Self {
        VerifyConfig { mode: VerifyMode::Parallel, seed, batch_size: 256 }
    }

    /// The same settings with another mode.
    pub fn with_mode(self, mode: VerifyMode) -> Self {
        VerifyConfig { mode, ..self }
    }
}

/// One signature to check.
#[derive(Clone, Copy, Debug)]
pub struct SigJob {
    /// Transaction index in the block.
    pub tx: usize,
    /// Input index in the transaction.
    pub input: usize,
    /// The key.
    pub pubkey: PubKey,
    /// The signature.
    pub sig: Signature,
    /// The signed message (the sighash).
    pub msg: Hash,
}

/// A job that failed: its index in the job list and why.
pub type JobFailure = (usize, SigError);

fn single(job: &SigJob) -> Result<(), SigError> {
    keys::verify(&job.pubkey, &job.msg, &job.sig)
}

fn chunk_rng(seed: &[u8; 32], chunk: usize) -> ChaCha20Rng {
    ChaCha20Rng::from_seed(HashKind::Sha256.hash_parts(&[seed, &(chunk as u64).to_le_bytes()]).0)
}

/// Verifies a batch of Ed25519 jobs (`idx` are indices into `jobs`); on failure returns the
/// lowest failing index, found by single verification.
fn ed_batch(jobs: &[SigJob], idx: &[usize], seed: &[u8; 32], chunk: usize) -> Option<JobFailure> {
    if batch_ok(jobs, idx, chunk_rng(seed, chunk)) {
        return None;
    }
    idx.iter().find_map(|&i| single(&jobs[i]).err().map(|e| (i, e)))
}

/// Does the ZIP-215 batch of the Ed25519 jobs `idx` verify?
fn batch_ok(jobs: &[SigJob], idx: &[usize], rng: ChaCha20Rng) -> bool {
    let keys: Vec<[u8; 32]> = idx
        .iter()
        .map(|&i| jobs[i].pubkey.as_bytes().try_into().expect("ed25519 keys are 32 bytes"))
        .collect();
    let items: Vec<Ed25519Item<'_>> = idx
        .iter()
        .zip(&keys)
        .map(|(&i, key)| Ed25519Item { key, sig: &jobs[i].sig, msg: jobs[i].msg.as_bytes() })
        .collect();
    keys::verify_ed25519_batch(&items, rng).is_ok()
}

/// How many items each parallel chunk gets: `len` spread evenly over the current rayon pool's
/// threads, but never more than `batch_size` nor fewer than 64 (a smaller batch loses most of
/// batching's gain). The engine, `verify_txs` and the study's raw bound all chunk this way.
pub fn parallel_chunk(len: usize, batch_size: usize) -> usize {
    let bs = batch_size.max(1);
    let threads = rayon::current_num_threads().max(1);
    len.div_ceil(threads).clamp(64.min(bs), bs)
}

/// Verifies `jobs` on the calling thread the way `batch` mode does (Ed25519 in ZIP-215 batches
/// of `cfg.batch_size`, secp256k1 singly) and returns **every** failure in job order: a failed
/// batch is re-verified singly. `stream` keeps the batch coefficients of concurrent callers
/// independent (pass a distinct value per call that shares `cfg.seed`).
pub fn batch_failures(cfg: &VerifyConfig, jobs: &[SigJob], stream: u64) -> Vec<JobFailure> {
    let mut failures = Vec::new();
    let ed: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].pubkey.scheme() == Scheme::Ed25519).collect();
    for (c, idx) in ed.chunks(cfg.batch_size.max(1)).enumerate() {
        let rng = ChaCha20Rng::from_seed(
            HashKind::Sha256.hash_parts(&[&cfg.seed, &stream.to_le_bytes(), &(c as u64).to_le_bytes()]).0,
        );
        if batch_ok(jobs, idx, rng) {
            continue;
        }
        failures.extend(idx.iter().filter_map(|&i| single(&jobs[i]).err().map(|e| (i, e))));
    }
    for (i, job) in jobs.iter().enumerate() {
        if job.pubkey.scheme() != Scheme::Ed25519 {
            if let Err(e) = single(job) {
                failures.push((i, e));
            }
        }
    }
    failures.sort_unstable_by_key(|(i, _)| *i);
    failures
}

/// Verifies every job; `Err` names the lowest-indexed failure.
pub fn verify_jobs(cfg: &VerifyConfig, jobs: &[SigJob]) -> Result<(), JobFailure> {
    let _s = profile::span("verify.jobs");
    if cfg.mode == VerifyMode::Sequential {
        return match jobs.iter().enumerate().find_map(|(i, j)| single(j).err().map(|e| (i, e))) {
            Some(f) => Err(f),
            None => Ok(()),
        };
    }
    let (ed, secp): (Vec<usize>, Vec<usize>) =
        (0..jobs.len()).partition(|&i| jobs[i].pubkey.scheme() == Scheme::Ed25519);
    let bs = cfg.batch_size.max(1);
    let failure = match cfg.mode {
        VerifyMode::Batch => {
            let a = ed.chunks(bs).enumerate().filter_map(|(c, idx)| ed_batch(jobs, idx, &cfg.seed, c)).min();
            let b = secp.iter().filter_map(|&i| single(&jobs[i]).err().map(|e| (i, e))).min();
            a.into_iter().chain(b).min()
        }
        _ => {
            let per = parallel_chunk(ed.len(), bs);
            let (a, b) = rayon::join(
                || {
                    ed.par_chunks(per)
                        .enumerate()
                        .filter_map(|(c, idx)| ed_batch(jobs, idx, &cfg.seed, c))
                        .min()
                },
                || secp.par_iter().filter_map(|&i| single(&jobs[i]).err().map(|e| (i, e))).min(),
            );
            a.into_iter().chain(b).min()
        }
    };
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::SecretKey;

    fn jobs(n: usize, bad: &[usize]) -> Vec<SigJob> {
        (0..n)
            .map(|i| {
                let scheme = if i % 3 == 2 { Scheme::Secp256k1 } else { Scheme::Ed25519 };
                let k = SecretKey::from_seed(scheme, [i as u8 + 1; 32]);
                let msg = HashKind::Sha256.hash(&i.to_le_bytes());
                let mut sig = k.sign(&msg);
                if bad.contains(&i) {
                    sig[5] ^= 0x40;
                }
                SigJob { tx: i, input: 0, pubkey: k.public(), sig, msg }
            })
            .collect()
    }

    #[test]
    fn mode_names_parse_back() {
        for m in VerifyMode::ALL {
            assert_eq!(m.name().parse::<VerifyMode>(), Ok(m));
        }
        assert!("fast".parse::<VerifyMode>().is_err());
    }

    #[test]
    fn all_modes_agree_and_name_the_lowest_culprit() {
        let cfg = VerifyConfig { mode: VerifyMode::Sequential, seed: [9; 32], batch_size: 8 };
        for bad in [vec![], vec![0], vec![17], vec![40, 5], vec![2, 33]] {
            let js = jobs(50, &bad);
            let verdicts: Vec<_> = [VerifyMode::Sequential, VerifyMode::Batch, VerifyMode::Parallel]
                .into_iter()
                .map(|m| verify_jobs(&cfg.with_mode(m), &js).map_err(|(i, _)| i))
                .collect();
            let expect = bad.iter().min().copied().map_or(Ok(()), Err);
            for v in verdicts {
                assert_eq!(v, expect, "bad = {bad:?}");
            }
        }
    }
}
