//! Block acceptance: the chain's only write, with the mempool brought up to date before the
//! write lock is released.

use scalechain_chain::{Accepted, Chain, ChainError, ChainStore};
use scalechain_mempool::{Removed, ReorgOutcome};
use std::sync::Arc;

use scalechain_types::{Block, Hash, Tx};

use crate::{BlockVerdict, Replica};

/// What accepting one block did.
#[derive(Debug)]
pub struct BlockOutcome {
    /// The block's hash.
    pub hash: Hash,
    /// Its height (as its header claims).
    pub height: u64,
    /// What the chain did, or why it refused.
    pub result: Result<Accepted, ChainError>,
    /// The tip after the block, if the block moved it.
    pub new_tip: Option<(u64, Hash)>,
    /// Blocks that joined the main chain.
    pub connected: usize,
    /// Blocks that left it (a reorganisation if not 0).
    pub disconnected: usize,
    /// What the connected blocks took out of the mempool, summed.
    pub removed: Removed,
    /// What re-admitting a reorganisation's transactions did (empty without one).
    pub reorg: ReorgOutcome,
    /// Orphan transactions admitted because the connected blocks confirmed their parents
    /// (parents first). Nobody relayed them yet: the caller publishes them.
    pub released: Vec<Arc<Tx>>,
    /// Why the store's UTXO snapshot failed while this block was accepted, if it did (nothing
    /// was lost: the block stays connected; the caller reports it).
    pub snapshot_failure: Option<String>,
}

impl BlockOutcome {
    /// The protocol's verdict: consensus failures are permanent except `time-too-new` (the
    /// block may be valid by a clock that is not ours); a block descending from an invalid one
    /// is permanently invalid; store failures are ours, not the sender's.
    pub fn verdict(&self) -> BlockVerdict {
        match &self.result {
            Ok(Accepted::Connected(_)) => BlockVerdict::Connected,
            Ok(Accepted::SideBranch) => BlockVerdict::SideBranch,
            Ok(Accepted::Orphan) => BlockVerdict::Orphan,
            Ok(Accepted::Duplicate) => BlockVerdict::Known,
            Err(e @ ChainError::Rejected(r)) => {
                BlockVerdict::Invalid { permanent: r.error.is_permanent(), reason: e.to_string() }
            }
            Err(e @ ChainError::InvalidAncestor { .. }) => {
                BlockVerdict::Invalid { permanent: true, reason: e.to_string() }
            }
            Err(e) => BlockVerdict::Invalid { permanent: false, reason: e.to_string() },
        }
    }

    /// True if the block broke a consensus rule (not: descends from a block that did).
    pub fn rejected(&self) -> bool {
        matches!(&self.result, Err(e) if e.rejection().is_some())
    }
}

impl<S: ChainStore> Replica<S> {
    /// Accepts one block at the validator's clock `now_ms`. If the main chain moves, the
    /// blocks that joined it take their transactions (and those conflicting with them) out of
    /// the mempool, and the transactions of blocks that left it are judged again, all under the
    /// chain's write lock.
    ///
    /// The change is read from the tip before and after, not from the chain's answer for this
    /// block: orphans waiting for it connect in the same call, and a block stored on a side
    /// branch can make that branch win through them.
    pub fn accept_block(&self, block: Block, now_ms: u64) -> BlockOutcome {
        self.accept_block_observed(block, now_ms, &mut || {})
    }

    /// [`Replica::accept_block`], calling `locked` as soon as the chain's write lock is held:
    /// the caller tells the wait for the lock (readers holding it, such as an admission
    /// round's execution) from the time the block holds it, without the replica reading a
    /// clock. The wait is also profiled (`chain.write_lock`).
    pub fn accept_block_observed(&self, block: Block, now_ms: u64, locked: &mut dyn FnMut()) -> BlockOutcome {
        let mut chain = {
            let _s = scalechain_types::profile::span("chain.write_lock");
            self.chain.write()
        };
        locked();
        let mut out = self.accept_locked(&mut chain, block, now_ms);
        out.snapshot_failure = chain.take_snapshot_failure();
        self.publish(&chain);
        out
    }

    fn accept_locked(&self, chain: &mut Chain<S>, block: Block, now_ms: u64) -> BlockOutcome {
        let hash = block.header.hash(self.params.hash);
        let height = block.header.height;
        let (old_height, old_tip) = (chain.tip_height(), chain.tip());
        // Kept for the mempool if the block connects (one copy, moved out below).
        let mut kept = Some(block.clone());
        let result = chain.accept_block(block, now_ms);
        let mut out = BlockOutcome {
            hash,
            height,
            result,
            new_tip: None,
            connected: 0,
            disconnected: 0,
            removed: Removed::default(),
            reorg: ReorgOutcome::default(),
            released: Vec::new(),
            snapshot_failure: None,
        };
        if chain.tip() == old_tip {
            return out;
        }
        let (new_height, new_tip) = (chain.tip_height(), chain.tip());
        // Walk back from the old tip to the new main chain: the blocks passed left it.
        let main = chain.main_chain();
        let mut left = Vec::new();
        let (mut at, mut at_height) = (old_tip, old_height);
        while main.get(at_height as usize) != Some(&at) {
            let Some(e) = chain.tree().get(&at) else { break };
            left.push(at);
            at = e.header.prev_hash;
            let Some(up) = at_height.checked_sub(1) else { break };
            at_height = up;
        }
        let joined: Vec<Hash> =
            main.get(at_height as usize + 1..=new_height as usize).map(<[Hash]>::to_vec).unwrap_or_default();
        let mut fetch = |h: &Hash| -> Option<Block> {
            match kept.take() {
                Some(b) if *h == hash => Some(b),
                other => {
                    kept = other;
                    chain.block(h).ok().flatten()
                }
            }
        };
        let connected: Vec<(Hash, Block)> = joined.iter().filter_map(|h| Some((*h, fetch(h)?))).collect();
        // The connected blocks' txids as their validation computed them (hashed here only for a
        // block the chain did not connect in this call, which does not happen).
        let mut validated: std::collections::HashMap<Hash, Vec<Hash>> =
            chain.take_connected_txids().into_iter().collect();
        let txids: Vec<Vec<Hash>> = connected
            .iter()
            .map(|(h, b)| {
                validated
                    .remove(h)
                    .unwrap_or_else(|| b.txs.iter().map(|t| t.txid(self.params.hash)).collect())
            })
            .collect();
        // Oldest first, coinbases left out.
        let returned: Vec<_> = left
            .iter()
            .rev()
            .filter_map(|h| chain.block(h).ok().flatten())
            .flat_map(|b| b.txs.into_iter().skip(1))
            .collect();
        for ((_, b), ids) in connected.iter().zip(&txids) {
            let r = self.mempool.remove_block_txids(b, ids, chain.apps(), chain.params());
            out.removed.confirmed += r.confirmed;
            out.removed.conflicted.extend(r.conflicted);
            out.removed.expired.extend(r.expired);
        }
        let env = chain.next_block_env(now_ms);
        if !left.is_empty() {
            out.reorg = self.mempool.reorg(&env, returned);
        }
        // Orphans waiting for a transaction these blocks confirmed may join now.
        let confirmed_txids: Vec<Hash> = txids.iter().flat_map(|ids| ids.iter().skip(1).copied()).collect();
        let confirmed = |t: &Hash| chain.tx_location(t).ok().flatten().is_some();
        let released = self.mempool.offer_orphans_of(&env, &confirmed_txids, now_ms, &confirmed);
        let evicted = crate::evicted_by(&released);
        out.released = released.into_iter().filter(|a| !evicted.contains(&a.txid)).map(|a| a.tx).collect();
        out.connected = connected.len();
        out.disconnected = left.len();
        out.new_tip = Some((new_height, new_tip));
        out
    }
}
