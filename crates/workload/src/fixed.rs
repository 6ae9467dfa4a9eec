//! Fixed workloads for benchmarks and the study: `n` independent transfers, each spending its
//! own coins of a prepared UTXO set, signed in parallel.
//!
//! The shape follows seed 000's isolated-transaction experiment (1 input, 1 output by default).
//! Coins are locked to a ring of `keys` distinct keys, used round-robin, so any batch of up to
//! `keys` consecutive signatures has distinct keys (ZIP-215 batch verifiers merge equal keys,
//! which would flatter the measurement).

use rayon::prelude::*;

use scalechain_consensus::{Coin, Params, UtxoSet};
use scalechain_types::{
    Amount, Block, Hash, Header, Lock, OutPoint, PubKey, Scheme, SecretKey, Target, Tx, TxIn, TxKind, TxOut,
    Witness,
};

/// What to generate.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Number of transactions.
    pub n: usize,
    /// Inputs per transaction.
    pub inputs: usize,
    /// Outputs per transaction.
    pub outputs: usize,
    /// Signature scheme of every key.
    pub scheme: Scheme,
    /// Distinct keys, used round-robin.
    pub keys: usize,
    /// Seed of the keys and coin ids.
    pub seed: u64,
}

impl Spec {
    /// `n` one-input, one-output Ed25519 transfers over 4096 keys.
    pub fn simple(n: usize, seed: u64) -> Spec {
        Spec { n, inputs: 1, outputs: 1, scheme: Scheme::Ed25519, keys: 4096, seed }
    }
}

/// The generated workload.
#[derive(Clone, Debug)]
pub struct Transfers {
    /// The coins the transactions spend (and nothing else).
    pub utxos: UtxoSet,
    /// The signed transactions, independent of each other.
    pub txs: Vec<Tx>,
}

/// Value of every prepared coin.
pub const COIN_VALUE: u64 = 1_000_000;
/// Fee every transaction pays.
pub const FEE: u64 = 1_000;

fn key_seed(seed: u64, k: usize) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&(k as u64).to_le_bytes());
    s[16] = 0x5c;
    s
}

/// Generates `spec.n` signed transfers for the chain `chain_id` under `params`, and the UTXO set
/// they spend (coins at height 0, not coinbase).
pub fn transfers(params: &Params, chain_id: &Hash, spec: &Spec) -> Transfers {
    let hk = params.hash;
    let nkeys = spec.keys.max(1);
    let keys: Vec<(SecretKey, PubKey)> = (0..nkeys)
        .into_par_iter()
        .map(|k| {
            let sk = SecretKey::from_seed(spec.scheme, key_seed(spec.seed, k));
            let pk = sk.public();
            (sk, pk)
        })
        .collect();
    let locks: Vec<Lock> =
        keys.iter().map(|(_, pk)| Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(hk) }).collect();
    let per_out = (spec.inputs as u64 * COIN_VALUE - FEE) / spec.outputs.max(1) as u64;
    let value = |v: u64| Amount::new(v).unwrap_or(Amount::MAX);
    let built: Vec<(Tx, Vec<(OutPoint, Coin)>)> = (0..spec.n)
        .into_par_iter()
        .map(|i| {
            let mut coins = Vec::with_capacity(spec.inputs);
            let mut owners = Vec::with_capacity(spec.inputs);
            let inputs = (0..spec.inputs)
                .map(|j| {
                    let slot = i * spec.inputs + j;
                    let k = slot % nkeys;
                    let prev = OutPoint {
                        txid: hk.hash_parts(&[
                            b"workload",
                            &spec.seed.to_le_bytes(),
                            &(slot as u64).to_le_bytes(),
                        ]),
                        index: (slot % 7) as u32,
                    };
                    let out = TxOut { value: value(COIN_VALUE), lock: locks[k] };
                    coins.push((prev, Coin { out, height: 0, coinbase: false }));
                    owners.push(k);
                    TxIn { prev, witness: Witness { pubkey: keys[k].1, signature: [0; 64] } }
                })
                .collect();
            let outputs = (0..spec.outputs)
                .map(|o| TxOut { value: value(per_out), lock: locks[(i + o + 1) % nkeys] })
                .collect();
            let mut tx = Tx { version: 1, kind: TxKind::TRANSFER, inputs, outputs, data: vec![] };
            let Ok(()) = tx
                .sign_inputs::<std::convert::Infallible>(hk, chain_id, |i, m| Ok(keys[owners[i]].0.sign(m)));
            (tx, coins)
        })
        .collect();
    let mut utxos = UtxoSet::new();
    utxos.reserve(spec.n * spec.inputs);
    let mut txs = Vec::with_capacity(spec.n);
    for (tx, coins) in built {
        for (op, c) in coins {
            utxos.insert(op, c);
        }
        txs.push(tx);
    }
    Transfers { utxos, txs }
}

/// A block at `height` on `prev` holding a coinbase (claiming subsidy plus fees) and `txs`,
/// with its Merkle root set and mined against `target` (pass an easy target).
pub fn block(params: &Params, prev: &Header, txs: &[Tx], target: Target) -> Block {
    block_paying(params, prev, txs, target, txs.len() as u64 * FEE)
}

/// [`block`] for transactions whose fees sum to `fees` (e.g. application transactions, which
/// may pay none).
pub fn block_paying(params: &Params, prev: &Header, txs: &[Tx], target: Target, fees: u64) -> Block {
    let height = prev.height + 1;
    let reward = params.subsidy(height).get().saturating_add(fees);
    let lock = Lock { scheme: Scheme::Ed25519, pubkey_hash: params.hash.hash(b"workload-miner") };
    let coinbase =
        Tx::coinbase(height, vec![TxOut { value: Amount::new(reward).unwrap_or(Amount::MAX), lock }]);
    let mut all = Vec::with_capacity(txs.len() + 1);
    all.push(coinbase);
    all.extend_from_slice(txs);
    let header = Header {
        version: 1,
        height,
        prev_hash: prev.hash(params.hash),
        merkle_root: Hash::ZERO,
        time: prev.time + params.target_block_ms,
        target,
        nonce: 0,
    };
    let mut b = Block { header, txs: all };
    b.header.merkle_root = b.compute_merkle_root(params.hash);
    crate::mine(&mut b.header, params.hash);
    b
}
