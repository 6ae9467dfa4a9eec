//! Workload generators (the simulator is `scalechain-simnet`; this crate only makes inputs).
//!
//! Deterministic generators: keys, many-input/many-output transactions spending earlier
//! outputs, and mined blocks. Everything derives from a `u64` seed, so a simulation can be
//! replayed bit for bit; nothing reads a clock (block times are parent time + interval).
//!
//! The [`Generator`] starts from a devnet's premine (whose keys are public, see
//! [`scalechain_consensus::params::devnet_premine_key`]) and keeps the outputs it controls in a
//! pool. Each transaction spends 1–3 of them — including outputs created earlier in the same
//! block, which the rules allow — and pays 1–4 new outputs to keys of its own key ring, with a
//! small fee that the block's coinbase collects. Coinbase outputs join the pool once mature.

pub mod fixed;

use std::collections::HashMap;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::Params;
use scalechain_types::{
    Amount, Block, Hash, HashKind, Header, Lock, OutPoint, PubKey, SecretKey, Target, Tx, TxIn, TxKind,
    TxOut, Witness,
};

/// Keys in a generator's ring (outputs are paid to these).
pub const KEY_RING: usize = 64;

/// An output the generator can spend.
#[derive(Clone, Copy, Debug)]
struct Owned {
    op: OutPoint,
    value: Amount,
    key: usize,
    /// First height at which it may be spent.
    spendable_at: u64,
}

/// A deterministic generator of transactions and blocks for one chain.
#[derive(Clone)]
pub struct Generator {
    params: Params,
    chain_id: Hash,
    rng: ChaCha20Rng,
    keys: Vec<(SecretKey, PubKey)>,
    key_of: HashMap<Hash, usize>,
    pool: Vec<Owned>,
    waiting: Vec<Owned>,
    miner: usize,
}

impl Generator {
    /// A generator for a devnet of `sig` mode, owning the premine, seeded by `seed`.
    ///
    /// `params` must be `Params::devnet(_, sig)` (or share its premine keys).
    pub fn new(params: &Params, sig: SigMode, seed: u64) -> Generator {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let premine_keys: Vec<SecretKey> =
            (0..params.premine.len() as u64).map(|i| devnet_premine_key(sig, i)).collect();
        let mut keys: Vec<(SecretKey, PubKey)> = Vec::new();
        for i in 0..KEY_RING {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            let k = SecretKey::from_seed(sig.scheme_for(i as u64), s);
            let pk = k.public();
            keys.push((k, pk));
        }
        let ring = keys.len();
        for k in premine_keys {
            let pk = k.public();
            keys.push((k, pk));
        }
        let key_of = keys.iter().enumerate().map(|(i, (_, pk))| (pk.hash(params.hash), i)).collect();
        let genesis = scalechain_consensus::genesis_block(params);
        let txid = genesis.txs[0].txid(params.hash);
        let pool = params
            .premine
            .iter()
            .enumerate()
            .map(|(i, o)| Owned {
                op: OutPoint { txid, index: i as u32 },
                value: o.value,
                key: ring + i,
                spendable_at: 1,
            })
            .collect();
        Generator {
            chain_id: genesis.hash(params.hash),
            params: params.clone(),
            rng,
            keys,
            key_of,
            pool,
            waiting: Vec::new(),
            miner: 0,
        }
    }

    /// Re-seeds the random choices (a cloned generator then builds a different branch).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = ChaCha20Rng::seed_from_u64(seed);
    }

    /// Outputs currently spendable.
    pub fn pool_len(&self) -> usize {
        self.pool.len()
    }

    /// The chain id the generator signs for.
    pub fn chain_id(&self) -> Hash {
        self.chain_id
    }

    fn below(&mut self, n: usize) -> usize {
        (self.rng.next_u64() % n.max(1) as u64) as usize
    }

    fn lock_for(&self, key: usize) -> Lock {
        let pk = &self.keys[key].1;
        Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(self.params.hash) }
    }

    /// Makes coins that mature by `height` spendable.
    fn mature(&mut self, height: u64) {
        let (ready, wait): (Vec<Owned>, Vec<Owned>) =
            self.waiting.drain(..).partition(|o| o.spendable_at <= height);
        self.waiting = wait;
        self.pool.extend(ready);
    }

    /// Signs `tx` in place: every input with the key that owns its output.
    pub fn sign(&self, tx: &mut Tx, owners: &[usize]) {
        let Ok(()) = tx.sign_inputs::<std::convert::Infallible>(self.params.hash, &self.chain_id, |i, m| {
            Ok(self.keys[owners[i]].0.sign(m))
        });
    }

    /// One transfer valid in a block at `height`, spending pooled outputs, or `None` if the
    /// pool is empty. Its outputs join the pool at once (later transactions may spend them).
    pub fn next_tx(&mut self, height: u64) -> Option<Tx> {
        self.gen_tx(height).map(|(tx, _)| tx)
    }

    /// [`Generator::next_tx`] with the fee it pays.
    fn gen_tx(&mut self, height: u64) -> Option<(Tx, u64)> {
        self.mature(height);
        if self.pool.is_empty() {
            return None;
        }
        let n_in = (1 + self.below(3)).min(self.pool.len());
        // Grow the pool while it is small; otherwise keep it roughly stable.
        let n_out = if self.pool.len() < 4096 { 2 + self.below(3) } else { 1 + self.below(3) };
        let mut inputs = Vec::with_capacity(n_in);
        let mut owners = Vec::with_capacity(n_in);
        let mut total = 0u64;
        for _ in 0..n_in {
            let i = self.below(self.pool.len());
            let o = self.pool.swap_remove(i);
            total += o.value.get();
            owners.push(o.key);
            inputs.push(TxIn {
                prev: o.op,
                witness: Witness { pubkey: self.keys[o.key].1, signature: [0; 64] },
            });
        }
        let fee = (100 * n_in as u64).min(total);
        let mut left = total - fee;
        let mut outputs = Vec::with_capacity(n_out);
        let mut out_keys = Vec::with_capacity(n_out);
        for j in 0..n_out {
            let v = if j + 1 == n_out {
                left
            } else {
                left / (n_out - j) as u64 / 2 + self.rng.next_u64() % (left / (n_out - j) as u64 + 1)
            };
            let v = v.min(left);
            left -= v;
            let key = self.below(KEY_RING);
            out_keys.push(key);
            outputs.push(TxOut {
                value: Amount::new(v).expect("split of an in-range amount"),
                lock: self.lock_for(key),
            });
        }
        let mut tx = Tx { version: 1, kind: TxKind::TRANSFER, inputs, outputs, data: vec![] };
        self.sign(&mut tx, &owners);
        let txid = tx.txid(self.params.hash);
        for (j, key) in out_keys.into_iter().enumerate() {
            self.pool.push(Owned {
                op: OutPoint { txid, index: j as u32 },
                value: tx.outputs[j].value,
                key,
                spendable_at: height,
            });
        }
        Some((tx, fee))
    }

    /// A block on `parent` with up to `m` generated transfers, a coinbase paying subsidy + fees
    /// to the generator, the given target and time, mined.
    pub fn build_block(&mut self, parent: &Header, target: Target, time: u64, m: usize) -> Block {
        let height = parent.height + 1;
        let mut txs = Vec::with_capacity(m + 1);
        txs.push(Tx::coinbase(height, vec![]));
        let mut fees = 0u64;
        for _ in 0..m {
            let Some((tx, fee)) = self.gen_tx(height) else { break };
            fees += fee;
            txs.push(tx);
        }
        let reward = self.params.subsidy(height).get() + fees;
        let miner = self.miner;
        self.miner = (self.miner + 1) % KEY_RING;
        txs[0] = Tx::coinbase(
            height,
            vec![TxOut { value: Amount::new(reward).expect("reward in range"), lock: self.lock_for(miner) }],
        );
        let coinbase_txid = txs[0].txid(self.params.hash);
        self.waiting.push(Owned {
            op: OutPoint { txid: coinbase_txid, index: 0 },
            value: txs[0].outputs[0].value,
            key: miner,
            spendable_at: height + self.params.coinbase_maturity,
        });
        let mut header = Header {
            version: 1,
            height,
            prev_hash: parent.hash(self.params.hash),
            merkle_root: scalechain_types::merkle::root_of_txs(self.params.hash, &txs),
            time,
            target,
            nonce: 0,
        };
        mine(&mut header, self.params.hash);
        Block { header, txs }
    }

    /// The key index that owns a lock, if it is one of ours.
    pub fn owns(&self, lock: &Lock) -> Option<usize> {
        self.key_of.get(&lock.pubkey_hash).copied()
    }
}

/// Premine output `i` of a devnet of `params` (`Params::devnet(_, sig)`) paid back to its own
/// key, less `fee`: a transfer that depends on no other and conflicts with none but another
/// spend of the same output, so disjoint ranges of `i` make independent loads. `None` if the
/// premine has no output `i` or it is worth less than `fee`.
pub fn premine_transfer(params: &Params, sig: SigMode, i: u32, fee: u64) -> Option<Tx> {
    let out = params.premine.get(i as usize)?;
    let value = Amount::new(out.value.get().checked_sub(fee)?).ok()?;
    let genesis = scalechain_consensus::genesis_block(params);
    let key = devnet_premine_key(sig, u64::from(i));
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn {
            prev: OutPoint { txid: genesis.txs[0].txid(params.hash), index: i },
            witness: Witness { pubkey: key.public(), signature: [0; 64] },
        }],
        outputs: vec![TxOut { value, lock: out.lock }],
        data: vec![],
    };
    tx.sign_inputs_with(params.hash, &genesis.hash(params.hash), &key);
    Some(tx)
}

/// Finds a nonce that makes the header meet its target (tries nonces from the current one).
pub fn mine(header: &mut Header, kind: HashKind) {
    while !header.target.is_met_by(&header.hash(kind)) {
        header.nonce = header.nonce.wrapping_add(1);
    }
}
