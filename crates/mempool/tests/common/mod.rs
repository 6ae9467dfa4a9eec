//! Test fixture: a devnet chain in memory (Sha256, Ed25519), a wallet holding the first premine
//! keys (public knowledge on devnets), and helpers to build real signed transactions and mine
//! blocks on the chain.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use scalechain_chain::{Accepted, Chain, ChainError, MemStore};
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{Apps, Params, TxEnv, VerifyConfig};
use scalechain_mempool::{Mempool, MempoolConfig};
use scalechain_types::{
    Amount, Block, Hash, HashKind, Header, Lock, OutPoint, PubKey, SecretKey, Tx, TxIn, TxKind, TxOut,
    Witness,
};

/// The validator's clock in tests: far past every block time.
pub const NOW: u64 = u64::MAX / 2;

/// Premine keys the wallet holds (and premine outputs it can spend).
pub const KEYS: usize = 64;

/// An output the wallet can spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utxo {
    pub op: OutPoint,
    pub out: TxOut,
    /// Index of the key that owns it.
    pub key: usize,
}

pub struct Net {
    pub p: Params,
    pub chain_id: Hash,
    pub apps: Apps,
    pub verify: VerifyConfig,
    pub chain: Chain<MemStore>,
    pub keys: Vec<(SecretKey, PubKey, Lock)>,
    /// Premine outputs 0..KEYS, each locked to the key of the same index.
    pub premine: Vec<Utxo>,
    next_premine: usize,
}

impl Net {
    pub fn new() -> Net {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let verify = VerifyConfig::parallel([7; 32]);
        let chain = Chain::open_or_init(MemStore::new(), &p, Apps::none(), verify).unwrap();
        let chain_id = chain.chain_id();
        let keys: Vec<(SecretKey, PubKey, Lock)> = (0..KEYS as u64)
            .map(|i| {
                let sk = devnet_premine_key(SigMode::Ed25519, i);
                let pk = sk.public();
                let lock = Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(p.hash) };
                (sk, pk, lock)
            })
            .collect();
        let genesis = chain.block_at(0).unwrap().unwrap();
        let gtxid = genesis.txs[0].txid(p.hash);
        let premine = (0..KEYS)
            .map(|i| {
                let out = genesis.txs[0].outputs[i];
                assert_eq!(out.lock, keys[i].2, "premine output {i} is locked to premine key {i}");
                Utxo { op: OutPoint { txid: gtxid, index: i as u32 }, out, key: i }
            })
            .collect();
        Net { p, chain_id, apps: Apps::none(), verify, chain, keys, premine, next_premine: 0 }
    }

    /// A pool for this chain.
    pub fn pool(&self, cfg: MempoolConfig) -> Mempool {
        Mempool::new(self.p.hash, cfg)
    }

    /// What admission reads from the chain at its tip, with this net's application modules
    /// (tests register modules in `apps` after the chain opened).
    pub fn env(&self) -> TxEnv<'_> {
        TxEnv {
            ctx: ConnectCtx::new(&self.p, &self.chain_id, &self.apps, &self.verify),
            ..self.chain.next_block_env(self.chain.tip_header().time + 1000)
        }
    }

    /// The next premine output nobody spent yet.
    pub fn fresh(&mut self) -> Utxo {
        let u = self.premine[self.next_premine];
        self.next_premine += 1;
        u
    }

    /// A signed transfer spending `ins` into `n_out` equal outputs, paying `fee`.
    pub fn spend(&self, ins: &[Utxo], n_out: usize, fee: u64) -> (Tx, Vec<Utxo>) {
        let total: u64 = ins.iter().map(|u| u.out.value.get()).sum();
        let left = total - fee;
        let each = left / n_out as u64;
        let keys: Vec<usize> = (0..n_out).map(|j| (ins[0].key + j + 1) % KEYS).collect();
        let outputs: Vec<TxOut> = (0..n_out)
            .map(|j| {
                let v = if j + 1 == n_out { left - each * (n_out as u64 - 1) } else { each };
                TxOut { value: Amount::new(v).unwrap(), lock: self.keys[keys[j]].2 }
            })
            .collect();
        let inputs = ins
            .iter()
            .map(|u| TxIn { prev: u.op, witness: Witness { pubkey: self.keys[u.key].1, signature: [0; 64] } })
            .collect();
        let mut tx = Tx { version: 1, kind: TxKind::TRANSFER, inputs, outputs, data: vec![] };
        self.sign(&mut tx, ins);
        let txid = tx.txid(self.p.hash);
        let outs = tx
            .outputs
            .iter()
            .enumerate()
            .map(|(j, o)| Utxo { op: OutPoint { txid, index: j as u32 }, out: *o, key: keys[j] })
            .collect();
        (tx, outs)
    }

    /// Signs every input of `tx` with the key owning the matching coin of `ins`.
    pub fn sign(&self, tx: &mut Tx, ins: &[Utxo]) {
        let Ok(()) = tx.sign_inputs::<std::convert::Infallible>(self.p.hash, &self.chain_id, |i, m| {
            Ok(self.keys[ins[i].key].0.sign(m))
        });
    }

    /// A mined block on `parent` holding `txs` after a coinbase claiming subsidy + `fees`.
    pub fn block_on(&self, parent: &Header, txs: &[Tx], fees: u64) -> Block {
        let target =
            if parent.height == self.chain.tip_height() { self.chain.next_target() } else { parent.target };
        scalechain_workload::fixed::block_paying(&self.p, parent, txs, target, fees)
    }

    /// Mines `txs` (with a coinbase claiming `fees`) on the tip and offers the block.
    pub fn mine(&mut self, txs: &[Tx], fees: u64) -> (Block, Result<Accepted, ChainError>) {
        let b = self.block_on(&self.chain.tip_header(), txs, fees);
        let r = self.chain.accept_block(b.clone(), NOW);
        (b, r)
    }
}

/// Owned copies of pooled transactions.
pub fn owned(txs: &[Arc<Tx>]) -> Vec<Tx> {
    txs.iter().map(|t| Tx::clone(t)).collect()
}

/// Reasons of verdicts ("ok" for admitted).
pub fn reasons<T>(v: &[Result<T, scalechain_mempool::MempoolError>]) -> Vec<&'static str> {
    v.iter().map(|r| r.as_ref().map_or_else(|e| e.reason(), |_| "ok")).collect()
}
