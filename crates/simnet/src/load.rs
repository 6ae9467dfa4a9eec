//! Transfers to submit: devnet's load shape, independent transactions spending the premine.
//!
//! Each transaction spends one premine output (in an order the seed shuffles) back to the key
//! that owns it, less a fee drawn from the seed. No transaction depends on another, so any
//! split of them between nodes, in any order, is valid: every one a node admits must end up
//! confirmed.

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Params};
use scalechain_types::{Amount, Hash, OutPoint, Tx, TxIn, TxKind, TxOut, Witness};

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
