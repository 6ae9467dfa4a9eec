//! One module per experiment.

pub mod block_validation;
pub mod components;
pub mod contention;
pub mod cpu;
pub mod e2e;
pub mod hash;
pub mod load;
pub mod optimise;
pub mod pipeline;
pub mod profile;
pub mod propagation;
pub mod scale;
pub mod sim_check;
pub mod speedup;
pub mod sync;
pub mod tx_throughput;
pub mod utxo_memory;
pub mod validator;
pub mod voting;

use std::collections::BTreeMap;

use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, TxEnv, UtxoSet, VerifyConfig};
use scalechain_types::keys::{sighash, Ed25519Item};
use scalechain_types::{Hash, HashKind, Signature, Tx};

/// The chain the workloads sign for.
pub const CHAIN_ID: Hash = Hash([0x5c; 32]);

/// Devnet parameters with block limits raised to hold 2^20 transactions.
pub fn study_params() -> Params {
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.max_block_txs = 1 << 22;
    p.max_block_bytes = 1 << 30;
    p
}

/// Verification settings with a fixed seed (the study's workloads are honest).
pub fn verify_config(mode: scalechain_consensus::VerifyMode) -> VerifyConfig {
    VerifyConfig { mode, seed: [0x11; 32], batch_size: 256 }
}

/// A pool that takes any honest group of the study's workloads: no fee floor, no dust, room for
/// millions of transactions.
pub fn open_pool_config() -> scalechain_mempool::MempoolConfig {
    scalechain_mempool::MempoolConfig {
        max_txs: 1 << 22,
        max_bytes: 1 << 32,
        min_fee_rate: 0,
        dust_limit: scalechain_types::Amount::ZERO,
        ..scalechain_mempool::MempoolConfig::default()
    }
}

/// Calls `f` with a transaction environment over `utxos`.
pub fn with_env<R>(p: &Params, cfg: &VerifyConfig, utxos: &UtxoSet, f: impl FnOnce(&TxEnv<'_>) -> R) -> R {
    let apps = Apps::none();
    let app_state = BTreeMap::new();
    let ctx = ConnectCtx::new(p, &CHAIN_ID, &apps, cfg);
    f(&TxEnv { ctx, view: utxos, app_state: &app_state, height: 1_000, time: 0 })
}

/// The raw signature material of transactions: (key bytes, signature, sighash), one per input.
pub fn raw_sigs(p: &Params, txs: &[Tx]) -> Vec<([u8; 32], Signature, Hash)> {
    raw_sigs_on(p, &CHAIN_ID, txs)
}

/// [`raw_sigs`] of transactions of the chain `chain_id`.
pub fn raw_sigs_on(p: &Params, chain_id: &Hash, txs: &[Tx]) -> Vec<([u8; 32], Signature, Hash)> {
    txs.iter()
        .flat_map(|tx| {
            let msg = sighash(p.hash, chain_id, &tx.txid(p.hash));
            tx.inputs.iter().map(move |i| {
                let key: [u8; 32] = i.witness.pubkey.as_bytes().try_into().unwrap_or([0; 32]);
                (key, i.witness.signature, msg)
            })
        })
        .collect()
}

/// The bound: raw ZIP-215 batch verification of `sigs` in chunks spread over the current rayon
/// pool exactly as the engine spreads them (no ledger work). Returns whether all verified.
pub fn raw_batch(sigs: &[([u8; 32], Signature, Hash)], batch_size: usize) -> bool {
    use rand_core::SeedableRng;
    use rayon::prelude::*;
    let per = scalechain_consensus::verify::parallel_chunk(sigs.len(), batch_size);
    sigs.par_chunks(per).enumerate().all(|(c, chunk)| {
        let items: Vec<Ed25519Item<'_>> =
            chunk.iter().map(|(k, s, m)| Ed25519Item { key: k, sig: s, msg: m.as_bytes() }).collect();
        let rng = rand_chacha::ChaCha20Rng::seed_from_u64(c as u64);
        scalechain_types::keys::verify_ed25519_batch(&items, rng).is_ok()
    })
}

/// Signatures [`signature_bound_us`] verifies, at most.
pub const BOUND_SIGS: usize = 4_096;

/// The signature bound of a running network: one core's cost of batch-verifying the Ed25519
/// input signatures of `txs` (transactions of the chain `chain_id`; at most [`BOUND_SIGS`]
/// signatures, in batches of 256 as the engine makes them, the best of three passes), in µs per
/// signature. `None` when they hold no Ed25519 input, or a signature does not verify.
pub fn signature_bound_us(p: &Params, chain_id: &Hash, txs: &[Tx]) -> Option<f64> {
    use scalechain_types::Scheme;
    let ed: Vec<Tx> = txs
        .iter()
        .filter(|t| {
            !t.inputs.is_empty() && t.inputs.iter().all(|i| i.witness.pubkey.scheme() == Scheme::Ed25519)
        })
        .take(BOUND_SIGS)
        .cloned()
        .collect();
    let mut sigs = raw_sigs_on(p, chain_id, &ed);
    sigs.truncate(BOUND_SIGS);
    if sigs.is_empty() {
        return None;
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().ok()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = std::time::Instant::now();
        if !one.install(|| raw_batch(&sigs, 256)) {
            return None;
        }
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Some(best * 1e6 / sigs.len() as f64)
}

/// The single-verification bound: each signature verified alone, on the calling thread.
pub fn raw_single(sigs: &[([u8; 32], Signature, Hash)]) -> bool {
    sigs.iter().all(|(k, s, m)| scalechain_types::keys::verify_ed25519(k, m.as_bytes(), s).is_ok())
}

/// n = 2^0 … 2^max.
pub fn powers(max_log2: u32) -> Vec<usize> {
    (0..=max_log2).map(|k| 1usize << k).collect()
}
