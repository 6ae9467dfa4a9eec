//! Transactions to submit, as clients of the nodes would.
//!
//! - [`Load`]: devnet's load shape, independent transactions spending the premine. Each
//!   transaction spends one premine output (in an order the seed shuffles) back to the key that
//!   owns it, less a fee drawn from the seed. No transaction depends on another, so any split of
//!   them between nodes, in any order, is valid: every one a node admits must end up confirmed.
//! - [`Accounts`]: a sustained load of any length. Each premine output is an account whose
//!   coin is spent back to its key again and again, the accounts taken in turn, so the UTXO set
//!   stays as small as the premine however many transactions are made (a node of a 1,000-node
//!   run holds a few thousand coins, not one per transaction). A transaction spends the
//!   account's previous one: with many accounts the parent is long confirmed when its child
//!   comes.
//! - [`LoadPlan`]: when and where: a rate, per submission one or more transactions, targets
//!   in turn, fixed or exponential (Poisson) gaps, a start and an end.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Params};
use scalechain_types::{Amount, Hash, OutPoint, SecretKey, Tx, TxIn, TxKind, TxOut, Witness};

use crate::net::unit_open;
use crate::wire::NodeId;

/// A deterministic source of independent transfers on a devnet.
pub struct Load {
    params: Params,
    sig: SigMode,
    chain_id: Hash,
    premine_txid: Hash,
    order: Vec<u32>,
    next: usize,
    rng: ChaCha20Rng,
}

impl Load {
    /// Transfers for `params` (a devnet of `sig` mode), shuffled and priced by `seed`.
    pub fn new(params: &Params, sig: SigMode, seed: u64) -> Load {
        let genesis = genesis_block(params);
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut order: Vec<u32> = (0..params.premine.len() as u32).collect();
        for i in (1..order.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        Load {
            params: params.clone(),
            sig,
            chain_id: genesis.hash(params.hash),
            premine_txid: genesis.txs[0].txid(params.hash),
            order,
            next: 0,
            rng,
        }
    }

    /// Transfers not handed out yet.
    pub fn remaining(&self) -> usize {
        self.order.len() - self.next
    }

    /// The next `n` transfers (fewer when the premine runs out).
    pub fn take(&mut self, n: usize) -> Vec<Tx> {
        let end = (self.next + n).min(self.order.len());
        let picked: Vec<u32> = self.order[self.next..end].to_vec();
        self.next = end;
        picked.into_iter().filter_map(|i| self.transfer(i)).collect()
    }

    /// The next `n` transfers (fewer when the premine runs out), each with a child spending
    /// its output back to the same key: `(parents, children)`, child `k` spending parent `k`.
    pub fn take_families(&mut self, n: usize) -> (Vec<Tx>, Vec<Tx>) {
        let parents = self.take(n);
        let children = parents
            .iter()
            .filter_map(|p| {
                let i = p.inputs[0].prev.index;
                let prev = OutPoint { txid: p.txid(self.params.hash), index: 0 };
                self.spend(i, prev, p.outputs[0])
            })
            .collect();
        (parents, children)
    }

    fn transfer(&mut self, i: u32) -> Option<Tx> {
        let out = *self.params.premine.get(i as usize)?;
        self.spend(i, OutPoint { txid: self.premine_txid, index: i }, out)
    }

    /// `prev` (holding `out`, locked to premine key `i`) back to the same key, less a fee.
    fn spend(&mut self, i: u32, prev: OutPoint, out: TxOut) -> Option<Tx> {
        let fee = 1_000 + self.rng.next_u64() % 1_000;
        let key = devnet_premine_key(self.sig, u64::from(i));
        let mut tx = Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs: vec![TxIn { prev, witness: Witness { pubkey: key.public(), signature: [0; 64] } }],
            outputs: vec![TxOut {
                value: Amount::new(out.value.get().checked_sub(fee)?).ok()?,
                lock: out.lock,
            }],
            data: vec![],
        };
        tx.sign_inputs_with(self.params.hash, &self.chain_id, &key);
        Some(tx)
    }
}

/// A sustained load: each premine output an account spent back to itself, again and again.
pub struct Accounts {
    hash: scalechain_types::HashKind,
    chain_id: Hash,
    keys: Vec<SecretKey>,
    coins: Vec<(OutPoint, TxOut)>,
    next: usize,
    rng: ChaCha20Rng,
    /// Bytes of `data` each transaction carries (0: a plain transfer of about 190 bytes).
    data_bytes: usize,
}

impl Accounts {
    /// `accounts` accounts (at most the premine's outputs) of a devnet of `sig` mode, fees
    /// drawn from `seed`.
    pub fn new(params: &Params, sig: SigMode, seed: u64, accounts: usize) -> Accounts {
        let genesis = genesis_block(params);
        let premine_txid = genesis.txs[0].txid(params.hash);
        let k = accounts.min(params.premine.len()).max(1);
        Accounts {
            hash: params.hash,
            chain_id: genesis.hash(params.hash),
            keys: (0..k as u64).map(|i| devnet_premine_key(sig, i)).collect(),
            coins: (0..k)
                .map(|i| (OutPoint { txid: premine_txid, index: i as u32 }, params.premine[i]))
                .collect(),
            next: 0,
            rng: ChaCha20Rng::seed_from_u64(seed),
            data_bytes: 0,
        }
    }

    /// The same accounts whose transactions each carry `bytes` of data (at most the chain's
    /// `max_tx_data`), paying 200 more fee per 1,000 of them (twice the node's minimum fee
    /// rate): larger transactions, so larger blocks, for the same count.
    pub fn with_data(mut self, bytes: usize) -> Accounts {
        self.data_bytes = bytes;
        self
    }

    /// The next `n` transactions, each spending its account's coin back to it less a fee of
    /// 1,000–1,999 plus what its data pays (fewer if an account's coin cannot pay the fee any
    /// more).
    pub fn next(&mut self, n: usize) -> Vec<Tx> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let i = self.next % self.coins.len();
            self.next += 1;
            let (prev, coin) = self.coins[i];
            let fee = 1_000 + self.rng.next_u64() % 1_000 + (self.data_bytes as u64).div_ceil(5);
            let Some(value) = coin.value.get().checked_sub(fee).and_then(|v| Amount::new(v).ok()) else {
                continue;
            };
            let key = &self.keys[i];
            let mut tx = Tx {
                version: 1,
                kind: TxKind::TRANSFER,
                inputs: vec![TxIn { prev, witness: Witness { pubkey: key.public(), signature: [0; 64] } }],
                outputs: vec![TxOut { value, lock: coin.lock }],
                data: vec![0; self.data_bytes],
            };
            tx.sign_inputs_with(self.hash, &self.chain_id, key);
            self.coins[i] = (OutPoint { txid: tx.txid(self.hash), index: 0 }, tx.outputs[0]);
            out.push(tx);
        }
        out
    }
}

/// When and where a load is submitted.
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// Transactions per second offered.
    pub rate_tps: f64,
    /// When the load starts, ms (virtual).
    pub start_ms: u64,
    /// When it ends, ms (virtual): nothing is submitted from then on.
    pub end_ms: u64,
    /// Transactions per submission (1: one request per transaction, as seed 001's client).
    pub per_submit: usize,
    /// The nodes submitted to, in turn.
    pub targets: Vec<NodeId>,
    /// Exponential gaps (a Poisson process) instead of fixed ones.
    pub poisson: bool,
    next: usize,
}

impl LoadPlan {
    /// `rate_tps` one transaction at a time, fixed gaps, to `targets` in turn, from `start_ms`
    /// to `end_ms`.
    pub fn new(rate_tps: f64, start_ms: u64, end_ms: u64, targets: Vec<NodeId>) -> LoadPlan {
        LoadPlan { rate_tps, start_ms, end_ms, per_submit: 1, targets, poisson: false, next: 0 }
    }

    /// The next submission's node.
    pub(crate) fn target(&mut self) -> NodeId {
        let t = self.targets.get(self.next % self.targets.len().max(1)).copied().unwrap_or(NodeId(0));
        self.next += 1;
        t
    }

    /// The gap to the next submission, µs.
    pub(crate) fn gap_us(&mut self, rng: &mut ChaCha20Rng) -> u64 {
        let mean_us = self.per_submit.max(1) as f64 / self.rate_tps.max(1e-9) * 1e6;
        let gap = if self.poisson { -unit_open(rng).ln() * mean_us } else { mean_us };
        (gap.round() as u64).max(1)
    }
}
