//! The peer protocol reads the chain and the mempool through [`ChainView`].

use scalechain_chain::ChainStore;
use scalechain_p2p::msg::{TxRef, MAX_TXS_PER_REQUEST};
use scalechain_p2p::sync::{fork_point, locator};
use scalechain_types::{Hash, HashKind, Header, Target, Tx};

use crate::{ChainView, Replica};

impl<S: ChainStore> ChainView for Replica<S> {
    fn chain_id(&self) -> Hash {
        self.chain_id
    }

    fn hash_kind(&self) -> HashKind {
        self.params.hash
    }

    fn tip(&self) -> (u64, Hash) {
        Replica::tip(self)
    }

    fn locator(&self) -> Vec<Hash> {
        locator(self.chain.read().main_chain())
    }

    fn headers_after(&self, loc: &[Hash], max: usize) -> Vec<Header> {
        let c = self.chain.read();
        let main = c.main_chain();
        let start = fork_point(loc, |h| {
            c.tree().get(h).map(|e| e.header.height).filter(|ht| main.get(*ht as usize) == Some(h))
        });
        main.iter()
            .skip(usize::try_from(start).unwrap_or(usize::MAX).saturating_add(1))
            .take(max)
            .filter_map(|h| c.tree().get(h).map(|e| e.header))
            .collect()
    }

    fn has_block(&self, hash: &Hash) -> bool {
        self.chain.read().tree().contains(hash)
    }

    fn pooled_txs(&self, txids: &[Hash], max_bytes: usize) -> Vec<Tx> {
        let mut bytes = 0u64;
        let max = u64::try_from(max_bytes).unwrap_or(u64::MAX);
        txids
            .iter()
            .take(MAX_TXS_PER_REQUEST)
            .filter_map(|t| self.mempool.get(t))
            .take_while(|e| {
                bytes = bytes.saturating_add(e.size);
                bytes <= max
            })
            .map(|e| (*e.tx).clone())
            .collect()
    }

    fn has_tx(&self, txid: &Hash) -> bool {
        self.mempool.contains(txid)
    }

    fn target_after(&self, parent: &Hash) -> Option<Target> {
        self.chain.read().target_after(parent)
    }

    fn pooled_for_block(&self, refs: &[TxRef]) -> Vec<Option<Tx>> {
        let pool = self.mempool.snapshot();
        refs.iter()
            .map(|r| pool.get(&r.txid).filter(|e| e.wtxid == r.wtxid).map(|e| (*e.tx).clone()))
            .collect()
    }

    fn pool_txids(&self, from: &Hash, max: usize) -> Vec<Hash> {
        self.mempool.snapshot().iter_from(from).take(max).map(|e| e.txid).collect()
    }
}
