//! [`Chain`]: accept, reorganise, query, re-verify.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use scalechain_consensus::check::{check_block, check_header_context, CheckedBlock};
use scalechain_consensus::connect::{connect_block, disconnect_block, genesis_changes, Changes, ConnectCtx};
use scalechain_consensus::params::params_from_genesis;
use scalechain_consensus::pow::target_to_u256;
use scalechain_consensus::utxo::UtxoOverlay;
use scalechain_consensus::{
    genesis_block, AppStateView, Apps, BlockError, BlockRejection, BlockTree, BlockUndo, Coin, Params,
    SigCache, TxEnv, UtxoSet, UtxoView, VerifyConfig,
};
use scalechain_store::{ChainStore, Commit, StoreError, TxLocation};
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Block, Hash, Header, OutPoint, Tx};

use crate::orphans::OrphanPool;

/// Most orphan blocks held at once.
pub const MAX_ORPHANS: usize = 256;

/// Why the chain could not take a block or could not open.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The block breaks a consensus rule.
    #[error("{0}")]
    Rejected(Box<BlockRejection>),
    /// The block descends from a block known to be invalid.
    #[error("block {height} {hash}: descends from invalid block {parent}")]
    InvalidAncestor {
        /// The block's height.
        height: u64,
        /// The block's hash.
        hash: Hash,
        /// Its invalid parent.
        parent: Hash,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store belongs to another chain.
    #[error("data directory holds chain {found}, not {expected}")]
    WrongChain {
        /// The chain asked for.
        expected: Hash,
        /// The chain stored.
        found: Hash,
    },
    /// The store holds no chain.
    #[error("data directory holds no chain (run `scalechain simulate` or `chain import` first)")]
    Empty,
    /// The parameters describe no usable chain.
    #[error("invalid chain parameters: {0}")]
    BadParams(String),
    /// Stored state disagrees with itself.
    #[error("stored chain is inconsistent: {0}")]
    Corrupt(String),
    /// A lookup of coins by owner on a chain whose owner index is switched off
    /// ([`Chain::set_owner_index`], the node's `store.owner_index = false`).
    #[error("this node keeps no owner index (store.owner_index = false): coins are not looked up by owner")]
    OwnerIndexOff,
}

impl ChainError {
    fn rejected(block: &Block, hash: Hash, error: BlockError) -> ChainError {
        ChainError::Rejected(Box::new(BlockRejection { height: block.header.height, hash, error }))
    }

    /// The consensus rejection, if that is what this is.
    pub fn rejection(&self) -> Option<&BlockRejection> {
        match self {
            ChainError::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

/// A change of main chain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reorg {
    /// The last block both chains share.
    pub fork: Hash,
    /// Blocks that left the main chain, newest first.
    pub disconnected: Vec<Hash>,
    /// Blocks that joined it, oldest first.
    pub connected: Vec<Hash>,
    /// Non-coinbase transactions of the disconnected blocks (for the mempool to re-admit).
    pub returned: Vec<Tx>,
}

/// What happened to an accepted block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// The main chain changed (a plain extension has an empty `disconnected` list).
    Connected(Reorg),
    /// Valid so far, stored on a branch with less work than the main chain.
    SideBranch,
    /// Parent unknown: held until it arrives.
    Orphan,
    /// Already known.
    Duplicate,
}

/// The outcome of re-verifying a stored chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Blocks re-validated (genesis included).
    pub blocks: u64,
    /// Transactions re-validated.
    pub txs: u64,
    /// Unspent outputs after replay.
    pub utxo_count: u64,
}

/// What one attempt to move the main chain did ([`Chain::try_reorg`]).
struct ReorgAttempt {
    /// The change of main chain, if it moved.
    moved: Option<Reorg>,
    /// The first invalid block found on the way, if any.
    failure: Option<InvalidBlock>,
}

/// A block of a branch found invalid while the chain moved to it.
struct InvalidBlock {
    /// Its hash (to mark it invalid in the block tree).
    hash: Hash,
    /// Why it is invalid.
    rejection: BlockRejection,
}

/// A block connected on the way to a new tip, with what disconnecting it again needs.
struct ConnectedBlock {
    height: u64,
    hash: Hash,
    undo: BlockUndo,
}

/// An application state write: the key and its new value (`None` deletes it).
type AppWrite = (Vec<u8>, Option<Vec<u8>>);

/// Application state changes layered over committed state.
struct AppLayer<'a> {
    base: &'a BTreeMap<Vec<u8>, Vec<u8>>,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl AppStateView for AppLayer<'_> {
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(key) {
            Some(v) => v.clone(),
            None => self.base.get(key).cloned(),
        }
    }
}

/// How a chain opens ([`Chain::open_with`], [`Chain::open_or_init_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Build and keep the owner index (coins by pubkey hash, for [`Chain::utxos_of`]); default
    /// true. False opens without building it at all (see [`Chain::set_owner_index`]).
    pub owner_index: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { owner_index: true }
    }
}

/// The chain state.
pub struct Chain<S: ChainStore> {
    params: Params,
    chain_id: Hash,
    apps: Apps,
    verify: VerifyConfig,
    tree: BlockTree,
    main: Vec<Hash>,
    utxos: UtxoSet,
    /// The UTXO set's outpoints by owner (pubkey hash): always exactly the set's entries, or
    /// `None` while switched off ([`Chain::set_owner_index`]).
    by_owner: Option<OwnerIndex>,
    app_state: BTreeMap<Vec<u8>, Vec<u8>>,
    store: S,
    orphans: OrphanPool,
    sig_cache: Option<Arc<dyn SigCache + Send>>,
    /// Why the last UTXO snapshot failed, until taken.
    snapshot_failure: Option<String>,
    /// The txids of the blocks the last [`Chain::accept_block`] connected, in connection order,
    /// as their validation computed them, until taken ([`Chain::take_connected_txids`]).
    connected_txids: Vec<(Hash, Vec<Hash>)>,
}

impl<S: ChainStore> Chain<S> {
    /// Opens the chain in `store`, creating it from `params` if the store is empty; fails if
    /// the store holds another chain.
    pub fn open_or_init(
        store: S,
        params: &Params,
        apps: Apps,
        verify: VerifyConfig,
    ) -> Result<Self, ChainError> {
        Self::open_or_init_with(store, params, apps, verify, OpenOptions::default())
    }

    /// [`Chain::open_or_init`] with `options`.
    pub fn open_or_init_with(
        store: S,
        params: &Params,
        apps: Apps,
        verify: VerifyConfig,
        options: OpenOptions,
    ) -> Result<Self, ChainError> {
        params.validate().map_err(ChainError::BadParams)?;
        let mut store = store;
        let genesis = genesis_block(params);
        let chain_id = genesis.hash(params.hash);
        if store.load()?.is_none() {
            let changes = genesis_changes(params, &genesis);
            let total: u128 = changes.add.iter().map(|(_, c)| u128::from(c.out.value.get())).sum();
            let first = Commit {
                tip: chain_id,
                tip_height: 0,
                main_chain: vec![(0, chain_id)],
                utxo_add: changes.add,
                txids_add: txid_entries(chain_id, 0, genesis.txs.iter().map(|t| t.txid(params.hash)))
                    .collect(),
                utxo_count: params.premine.len() as u64,
                total_value: total,
                ..Commit::default()
            };
            store.init(&params.encode(), &genesis, chain_id, &first)?;
        }
        let chain = Self::open_with(store, apps, verify, options)?;
        if chain.chain_id != chain_id {
            return Err(ChainError::WrongChain { expected: chain_id, found: chain.chain_id });
        }
        Ok(chain)
    }

    /// Opens the chain a store holds.
    pub fn open(store: S, apps: Apps, verify: VerifyConfig) -> Result<Self, ChainError> {
        Self::open_with(store, apps, verify, OpenOptions::default())
    }

    /// [`Chain::open`] with `options`.
    pub fn open_with(
        store: S,
        apps: Apps,
        verify: VerifyConfig,
        options: OpenOptions,
    ) -> Result<Self, ChainError> {
        let state = store.load()?.ok_or(ChainError::Empty)?;
        let params =
            Params::decode(&state.params).map_err(|e| ChainError::Corrupt(format!("parameters: {e}")))?;
        let genesis = store
            .get_block(&state.chain_id)?
            .ok_or_else(|| ChainError::Corrupt("genesis block missing".into()))?;
        if genesis != genesis_block(&params) || genesis.hash(params.hash) != state.chain_id {
            return Err(ChainError::Corrupt("genesis block does not match the stored parameters".into()));
        }
        let mut tree = BlockTree::new(params.hash, genesis.header);
        let mut headers: Vec<Header> = state.headers;
        headers.sort_by_key(|h| h.height);
        for h in headers.into_iter().filter(|h| h.height > 0) {
            // Side blocks whose branch was never completed are skipped, not fatal.
            let _ = tree.insert(h);
        }
        for (height, hash) in state.main_chain.iter().enumerate() {
            match tree.get(hash) {
                Some(e) if e.header.height == height as u64 => {}
                _ => {
                    return Err(ChainError::Corrupt(format!(
                        "main-chain block {height} {hash} has no header"
                    )))
                }
            }
        }
        let by_owner = options.owner_index.then(|| OwnerIndex::build(state.utxos.iter().copied()));
        let mut chain = Chain {
            chain_id: state.chain_id,
            apps,
            verify,
            tree,
            main: state.main_chain,
            by_owner,
            utxos: state.utxos.into_iter().collect(),
            app_state: state.app.into_iter().collect(),
            store,
            orphans: OrphanPool::new(MAX_ORPHANS),
            params,
            sig_cache: None,
            snapshot_failure: None,
            connected_txids: Vec::new(),
        };
        // The txid index follows the chain and may be behind it after a crash (or missing, in
        // a data directory written before it existed): bring it to the tip before anything
        // reads it.
        if chain.store.txindex_on() {
            chain.catch_up_txindex()?;
        }
        // Recovery: blocks stored (each passed the stateless and header checks) but not yet
        // committed when the process stopped may form a branch with more work than the committed
        // tip. Connect it now, as the interrupted run would have; otherwise those blocks would
        // count as known and never be connected when they arrive again.
        chain.activate_best(None)?;
        // What recovery connected is no accept's: nothing is handed over for it.
        chain.connected_txids.clear();
        Ok(chain)
    }

    /// Why the store's last UTXO snapshot failed, if it did since the last call (the block
    /// that triggered it stayed connected; the store tries again after more changes).
    pub fn take_snapshot_failure(&mut self) -> Option<String> {
        self.snapshot_failure.take()
    }

    /// The txids of the blocks the last call of [`Chain::accept_block`] connected (block hash,
    /// every txid in block order, coinbase first), in the order they connected: what their
    /// validation computed, so a caller bringing a mempool up to date does not hash the
    /// transactions again. Look them up by hash: when one call moves the tip twice (orphans
    /// completing one branch, then another, or an invalid block cutting a branch short), the
    /// list may also hold blocks that left the main chain again within the call. Empty after
    /// it is taken, and after a call that connected nothing.
    pub fn take_connected_txids(&mut self) -> Vec<(Hash, Vec<Hash>)> {
        std::mem::take(&mut self.connected_txids)
    }

    /// Brings the store's txid index to the committed tip in one atomic write: the
    /// transactions of the blocks it covers off the main chain (a branch a later commit left)
    /// go, those of the main-chain blocks above where it joins the main chain come. An index
    /// that was never built is built from genesis. Reads each of those blocks once.
    pub fn catch_up_txindex(&mut self) -> Result<(), ChainError> {
        let kind = self.params.hash;
        let tip_height = self.tip_height();
        let tip = self.tip();
        let indexed = self.store.txindex_tip()?;
        if indexed == Some((tip, tip_height)) {
            return Ok(());
        }
        let read = |hash: &Hash, what: &str| -> Result<Block, ChainError> {
            self.store
                .get_block(hash)?
                .ok_or_else(|| ChainError::Corrupt(format!("{what} block {hash} missing")))
        };
        let mut remove = Vec::new();
        let from = match indexed {
            None => 0,
            Some((mut at, mut height)) => {
                while self.main.get(height as usize) != Some(&at) {
                    let block = read(&at, "txid index: indexed")?;
                    if block.header.height != height || height == 0 {
                        return Err(ChainError::Corrupt(format!(
                            "txid index: its tip's branch does not lead to this chain's genesis (block {at} at height {height})"
                        )));
                    }
                    remove.extend(block.txs.iter().map(|t| t.txid(kind)));
                    (at, height) = (block.header.prev_hash, height - 1);
                }
                height + 1
            }
        };
        let mut add = Vec::new();
        for height in from..=tip_height {
            let hash = self.main[height as usize];
            let block = read(&hash, &format!("main-chain {height}"))?;
            add.extend(txid_entries(hash, height, block.txs.iter().map(|t| t.txid(kind))));
        }
        self.store.write_txindex(&remove, &add, (tip, tip_height))?;
        Ok(())
    }

    /// Where the main chain holds transaction `txid` (from the store's txid index).
    pub fn tx_location(&self, txid: &Hash) -> Result<Option<TxLocation>, ChainError> {
        Ok(self.store.tx_location(txid)?)
    }

    /// A main-chain transaction by txid, with where it is: one index lookup and one block read.
    pub fn confirmed_tx(&self, txid: &Hash) -> Result<Option<(TxLocation, Tx)>, ChainError> {
        let Some(loc) = self.tx_location(txid)? else { return Ok(None) };
        let corrupt = |what: &str| {
            ChainError::Corrupt(format!(
                "txid index: {txid} at block {} {} position {}: {what}",
                loc.height, loc.block, loc.position
            ))
        };
        if self.main.get(loc.height as usize) != Some(&loc.block) {
            return Err(corrupt("not that main-chain block"));
        }
        let block = self.block(&loc.block)?.ok_or_else(|| corrupt("block missing"))?;
        let tx =
            block.txs.into_iter().nth(loc.position as usize).ok_or_else(|| corrupt("no such position"))?;
        if tx.txid(self.params.hash) != *txid {
            return Err(corrupt("a different transaction is there"));
        }
        Ok(Some((loc, tx)))
    }

    /// Transactions whose signatures were verified before (a node's mempool): connecting a
    /// block skips their signature jobs. `verify_all` never uses the cache.
    pub fn set_sig_cache(&mut self, cache: Option<Arc<dyn SigCache + Send>>) {
        self.sig_cache = cache;
    }

    /// Where transactions outside a block are judged (mempool admission): as if alone in the
    /// next block on the tip, at `time` (the validator's clock), against the committed UTXO set
    /// and application state, with this chain's engine settings and no signature cache.
    pub fn next_block_env(&self, time: u64) -> TxEnv<'_> {
        TxEnv {
            ctx: ConnectCtx::new(&self.params, &self.chain_id, &self.apps, &self.verify),
            view: &self.utxos,
            app_state: &self.app_state,
            height: self.tip_height() + 1,
            time,
        }
    }

    /// The application modules.
    pub fn apps(&self) -> &Apps {
        &self.apps
    }

    /// The signature engine settings.
    pub fn verify_config(&self) -> &VerifyConfig {
        &self.verify
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The chain id (genesis hash).
    pub fn chain_id(&self) -> Hash {
        self.chain_id
    }

    /// The tip's hash.
    pub fn tip(&self) -> Hash {
        *self.main.last().expect("the main chain always holds genesis")
    }

    /// The tip's height.
    pub fn tip_height(&self) -> u64 {
        self.main.len() as u64 - 1
    }

    /// The tip's header.
    pub fn tip_header(&self) -> Header {
        self.tree.get(&self.tip()).expect("the tip is in the tree").header
    }

    /// Main-chain hashes by height.
    pub fn main_chain(&self) -> &[Hash] {
        &self.main
    }

    /// The UTXO set.
    pub fn utxos(&self) -> &UtxoSet {
        &self.utxos
    }

    /// Unspent outputs locked to `pubkey_hash`, in outpoint order: O(log n + k) through the
    /// owner index, not a scan of the UTXO set. [`ChainError::OwnerIndexOff`] while the index
    /// is switched off.
    pub fn utxos_of(
        &self,
        pubkey_hash: &Hash,
    ) -> Result<impl Iterator<Item = (OutPoint, Coin)> + '_, ChainError> {
        let ix = self.by_owner.as_ref().ok_or(ChainError::OwnerIndexOff)?;
        Ok(ix.outpoints(pubkey_hash).filter_map(|op| self.utxos.coin(&op).map(|c| (op, c))))
    }

    /// Switches the owner index on (the default: it is built when the chain opens, unless
    /// [`OpenOptions::owner_index`] says not to) or off. Off, its memory is freed, blocks no
    /// longer update it and [`Chain::utxos_of`] answers [`ChainError::OwnerIndexOff`]: for
    /// nodes that serve no lookups by owner (no wallets, no explorer). Switched on again, it is
    /// rebuilt from the UTXO set, which the chain holds whole, so it is exact at once.
    pub fn set_owner_index(&mut self, on: bool) {
        match (on, self.by_owner.is_some()) {
            (true, false) => self.by_owner = Some(OwnerIndex::build(self.utxos.iter())),
            (false, true) => self.by_owner = None,
            _ => {}
        }
    }

    /// Is the owner index kept ([`Chain::set_owner_index`])?
    pub fn owner_index_on(&self) -> bool {
        self.by_owner.is_some()
    }

    /// Application state.
    pub fn app_state(&self) -> &BTreeMap<Vec<u8>, Vec<u8>> {
        &self.app_state
    }

    /// The block tree.
    pub fn tree(&self) -> &BlockTree {
        &self.tree
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Orphans held.
    pub fn orphan_count(&self) -> usize {
        self.orphans.len()
    }

    /// A stored block by hash.
    pub fn block(&self, hash: &Hash) -> Result<Option<Block>, ChainError> {
        Ok(self.store.get_block(hash)?)
    }

    /// The main-chain block at `height`.
    pub fn block_at(&self, height: u64) -> Result<Option<Block>, ChainError> {
        match self.main.get(height as usize) {
            Some(h) => self.block(h),
            None => Ok(None),
        }
    }

    /// The target the next block on the tip must carry.
    pub fn next_target(&self) -> scalechain_types::Target {
        let tip = self.tip_header();
        scalechain_consensus::pow::next_target(&self.params, &tip, &self.tree.branch(self.tip()))
    }

    /// The target a child of `parent` must carry; `None` if `parent` is not a known block.
    pub fn target_after(&self, parent: &Hash) -> Option<scalechain_types::Target> {
        let header = self.tree.get(parent)?.header;
        Some(scalechain_consensus::pow::next_target(&self.params, &header, &self.tree.branch(*parent)))
    }

    /// The median time past at the tip (the next block's time must exceed it).
    pub fn median_time_past(&self) -> u64 {
        let tip = self.tip_header();
        scalechain_consensus::pow::median_time_past(&self.params, &tip, &self.tree.branch(self.tip()))
    }

    /// Takes a block: validates it, stores it, and moves the main chain to the branch with the
    /// most work. `now_ms` is the validator's clock (for the future-drift rule).
    pub fn accept_block(&mut self, block: Block, now_ms: u64) -> Result<Accepted, ChainError> {
        let _s = scalechain_types::profile::span("chain.accept_block");
        self.connected_txids.clear();
        let hash = block.hash(self.params.hash);
        let outcome = self.accept_one(hash, block, now_ms)?;
        // Children that were waiting for this block may now connect.
        if outcome != Accepted::Orphan && outcome != Accepted::Duplicate {
            let mut queue = vec![hash];
            while let Some(parent) = queue.pop() {
                for (h, b) in self.orphans.take_children(&parent) {
                    if self.accept_one(h, b, now_ms).is_ok() {
                        queue.push(h);
                    }
                }
            }
        }
        Ok(outcome)
    }

    fn accept_one(&mut self, hash: Hash, block: Block, now_ms: u64) -> Result<Accepted, ChainError> {
        if let Some(e) = self.tree.get(&hash) {
            if e.invalid {
                return Err(ChainError::InvalidAncestor { height: block.header.height, hash, parent: hash });
            }
            return Ok(Accepted::Duplicate);
        }
        let Some(parent) = self.tree.get(&block.header.prev_hash).cloned() else {
            // Cheap proof-of-work check before holding anything for an unknown parent.
            let pow_ok = block.header.target.is_met_by(&hash)
                && target_to_u256(&block.header.target) <= target_to_u256(&self.params.pow_limit);
            if !pow_ok {
                return Err(ChainError::rejected(
                    &block,
                    hash,
                    BlockError::BadProofOfWork { hash, target: block.header.target },
                ));
            }
            self.orphans.insert(hash, block);
            return Ok(Accepted::Orphan);
        };
        if parent.invalid {
            return Err(ChainError::InvalidAncestor {
                height: block.header.height,
                hash,
                parent: parent.hash,
            });
        }
        let checked = check_block(&block, &self.params, &self.apps)
            .map_err(|e| ChainError::rejected(&block, hash, e))?;
        check_header_context(
            &self.params,
            &block.header,
            &parent.header,
            &self.tree.branch(parent.hash),
            now_ms,
        )
        .map_err(|e| ChainError::rejected(&block, hash, e))?;
        {
            let _s = scalechain_types::profile::span("store.put_block");
            self.store.put_block(&hash, &block)?;
        }
        self.tree.insert(block.header).map_err(|e| ChainError::Corrupt(e.to_string()))?;
        self.activate_best(Some(&checked))
    }

    /// Moves the main chain to the best valid branch. `fresh` is the block that just arrived,
    /// already checked, so it is neither re-read nor checked again.
    fn activate_best(&mut self, fresh: Option<&CheckedBlock<'_>>) -> Result<Accepted, ChainError> {
        let _s = scalechain_types::profile::span("chain.activate_best");
        let fresh_hash = fresh.map(CheckedBlock::hash);
        let mut result = Accepted::SideBranch;
        loop {
            let (best, tip) = (self.tree.best(), self.tip());
            // Only strictly more work moves the tip: on a tie the block we have stays.
            if best == tip || self.work(&best) <= self.work(&tip) {
                return Ok(result);
            }
            let ReorgAttempt { moved, failure } = self.try_reorg(tip, best, fresh)?;
            if let Some(reorg) = moved {
                if fresh_hash.is_some_and(|h| reorg.connected.contains(&h)) {
                    result = Accepted::Connected(reorg);
                }
            }
            if let Some(InvalidBlock { hash: bad, rejection }) = failure {
                self.tree.mark_invalid(&bad);
                if Some(bad) == fresh_hash {
                    return Err(ChainError::Rejected(Box::new(rejection)));
                }
            }
        }
    }

    fn work(&self, h: &Hash) -> ruint::aliases::U256 {
        self.tree.get(h).map(|e| e.chain_work).unwrap_or_default()
    }

    /// Tries to move from `tip` to `target` (which has more work). Returns the reorg if the main
    /// chain moved (to `target`, or to the valid prefix of its branch if that still has more
    /// work than `tip`), and the first invalid block found on the way, if any.
    fn try_reorg(
        &mut self,
        tip: Hash,
        target: Hash,
        fresh: Option<&CheckedBlock<'_>>,
    ) -> Result<ReorgAttempt, ChainError> {
        let p = self.params.clone();
        let fork =
            self.tree.fork_point(&tip, &target).ok_or_else(|| ChainError::Corrupt("no fork point".into()))?;
        let fork_height = self.tree.get(&fork).map(|e| e.header.height).unwrap_or(0);
        let to_disconnect: Vec<Hash> = self.main[fork_height as usize + 1..].iter().rev().copied().collect();
        let to_connect = self.tree.path(&fork, &target);

        let mut overlay = UtxoOverlay::new(&self.utxos);
        let mut app = AppLayer { base: &self.app_state, writes: BTreeMap::new() };
        let apply = |overlay: &mut UtxoOverlay<'_, UtxoSet>, app: &mut AppLayer<'_>, c: &Changes| {
            for op in &c.remove {
                overlay.spend(*op);
            }
            for (op, coin) in &c.add {
                overlay.add(*op, *coin);
            }
            for (k, v) in &c.app {
                app.writes.insert(k.clone(), v.clone());
            }
        };
        let mut returned = Vec::new();
        let mut txids_remove = Vec::new();
        for h in &to_disconnect {
            let block =
                self.store.get_block(h)?.ok_or_else(|| ChainError::Corrupt(format!("block {h} missing")))?;
            let undo =
                self.store.get_undo(h)?.ok_or_else(|| ChainError::Corrupt(format!("undo of {h} missing")))?;
            apply(&mut overlay, &mut app, &disconnect_block(&p, &block, &undo));
            txids_remove.extend(block.txs.iter().map(|t| t.txid(p.hash)));
            returned.extend(block.txs.into_iter().skip(1));
        }
        let mut ctx = ConnectCtx::new(&p, &self.chain_id, &self.apps, &self.verify);
        ctx.sig_cache = self.sig_cache.as_deref().map(|c| c as &dyn SigCache);
        let mut connected: Vec<ConnectedBlock> = Vec::new();
        let mut connected_txids = Vec::new();
        let mut txids_add = Vec::new();
        let mut failure = None;
        for h in &to_connect {
            let stored;
            let checked_here;
            let checked = match fresh {
                Some(f) if f.hash() == *h => f,
                _ => {
                    stored = self
                        .store
                        .get_block(h)?
                        .ok_or_else(|| ChainError::Corrupt(format!("block {h} missing")))?;
                    match check_block(&stored, &p, &self.apps) {
                        Ok(c) => {
                            checked_here = c;
                            &checked_here
                        }
                        Err(e) => {
                            let height = stored.header.height;
                            let rejection = BlockRejection { height, hash: *h, error: e };
                            failure = Some(InvalidBlock { hash: *h, rejection });
                            break;
                        }
                    }
                }
            };
            let height = checked.block().header.height;
            match connect_block(&ctx, checked, &overlay, &app) {
                Ok(diff) => {
                    apply(&mut overlay, &mut app, &diff.changes);
                    txids_add.extend(txid_entries(*h, height, checked.txids().iter().copied()));
                    connected_txids.push((*h, checked.txids().to_vec()));
                    connected.push(ConnectedBlock { height, hash: *h, undo: diff.undo });
                }
                Err(e) => {
                    let rejection = BlockRejection { height, hash: *h, error: e };
                    failure = Some(InvalidBlock { hash: *h, rejection });
                    break;
                }
            }
        }
        let new_tip = connected.last().map(|c| c.hash).unwrap_or(fork);
        if self.work(&new_tip) <= self.work(&tip) {
            // Nothing better than what we had: leave state exactly as it was.
            return Ok(ReorgAttempt { moved: None, failure });
        }
        let changes = overlay.into_changes();
        let app_writes: Vec<AppWrite> = app.writes.into_iter().collect();
        let (mut count, mut total) = (self.utxos.len() as i128, self.utxos.total_value() as i128);
        let mut utxo_remove = Vec::new();
        let mut utxo_add = Vec::new();
        for (op, c) in &changes {
            if let Some(old) = self.utxos.coin(op) {
                count -= 1;
                total -= i128::from(old.out.value.get());
                utxo_remove.push(*op);
            }
            if let Some(new) = c {
                count += 1;
                total += i128::from(new.out.value.get());
                utxo_add.push((*op, *new));
            }
        }
        let new_height = self.tree.get(&new_tip).map(|e| e.header.height).unwrap_or(0);
        let commit = Commit {
            tip: new_tip,
            tip_height: new_height,
            main_chain: connected.iter().map(|c| (c.height, c.hash)).collect(),
            undo: connected.iter().map(|c| (c.hash, c.undo.clone())).collect(),
            utxo_remove,
            utxo_add,
            app: app_writes.clone(),
            txids_remove,
            txids_add,
            utxo_count: count.max(0) as u64,
            total_value: total.max(0) as u128,
        };
        self.store.commit(&commit)?;
        self.connected_txids.extend(connected_txids);
        apply_to_memory(&mut self.utxos, self.by_owner.as_mut(), &mut self.app_state, &changes, &app_writes);
        self.main.truncate(fork_height as usize + 1);
        self.main.extend(connected.iter().map(|c| c.hash));
        // A store that keeps the set as a snapshot plus a log of the commits since: a new
        // snapshot now and then bounds what opening replays. A failed snapshot loses nothing
        // (the previous one and the log stay in force): the block stays connected, and the
        // failure is reported (`take_snapshot_failure`).
        if self.store.snapshot_due(self.utxos.len() as u64) {
            if let Err(e) = self.store.snapshot_utxos(new_tip, new_height, &self.utxos) {
                self.snapshot_failure = Some(e.to_string());
            }
        }
        let reorg = Reorg {
            fork,
            disconnected: to_disconnect,
            connected: connected.into_iter().map(|c| c.hash).collect(),
            returned,
        };
        Ok(ReorgAttempt { moved: Some(reorg), failure })
    }

    /// Re-validates every main-chain block from genesis on a fresh UTXO set (signatures, PoW,
    /// Merkle roots, every rule), and checks that the result equals the stored UTXO set and
    /// application state.
    pub fn verify_all(
        &self,
        now_ms: u64,
        mut progress: impl FnMut(u64, u64),
    ) -> Result<VerifyReport, ChainError> {
        let p = &self.params;
        let genesis = self.block_at(0)?.ok_or_else(|| ChainError::Corrupt("genesis missing".into()))?;
        if params_from_genesis(&genesis).as_ref() != Ok(p) {
            return Err(ChainError::Corrupt("genesis does not carry the chain parameters".into()));
        }
        let mut utxos = UtxoSet::new();
        let mut app_state = BTreeMap::new();
        let g = genesis_changes(p, &genesis);
        apply_to_memory(&mut utxos, None, &mut app_state, &changes_map(&g), &[]);
        let mut tree = BlockTree::new(p.hash, genesis.header);
        let ctx = ConnectCtx::new(p, &self.chain_id, &self.apps, &self.verify);
        let mut txs = 1u64;
        let mut parent = genesis.header;
        for height in 1..self.main.len() as u64 {
            let hash = self.main[height as usize];
            let block = self
                .block_at(height)?
                .ok_or_else(|| ChainError::Corrupt(format!("block {height} missing")))?;
            let bh = block.hash(p.hash);
            if bh != hash {
                return Err(ChainError::Corrupt(format!(
                    "block {height}: stored bytes hash to {bh}, index says {hash}"
                )));
            }
            let rej = |e| ChainError::rejected(&block, hash, e);
            let checked = check_block(&block, p, &self.apps).map_err(rej)?;
            check_header_context(p, &block.header, &parent, &tree.branch(parent.hash(p.hash)), now_ms)
                .map_err(rej)?;
            let diff = connect_block(&ctx, &checked, &utxos, &app_state).map_err(rej)?;
            diff.changes.apply_utxos(&mut utxos);
            diff.changes.apply_app(&mut app_state);
            tree.insert(block.header).map_err(|e| ChainError::Corrupt(e.to_string()))?;
            txs += block.txs.len() as u64;
            parent = block.header;
            progress(height, self.tip_height());
        }
        if utxos != self.utxos {
            return Err(ChainError::Corrupt(format!(
                "replayed UTXO set ({} outputs) differs from the stored one ({} outputs)",
                utxos.len(),
                self.utxos.len()
            )));
        }
        if app_state != self.app_state {
            return Err(ChainError::Corrupt("replayed application state differs from the stored one".into()));
        }
        Ok(VerifyReport { blocks: self.main.len() as u64, txs, utxo_count: utxos.len() as u64 })
    }
}

/// Txid-index entries of a block's transactions, in block order.
fn txid_entries(
    block: Hash,
    height: u64,
    txids: impl Iterator<Item = Hash>,
) -> impl Iterator<Item = (Hash, TxLocation)> {
    txids.enumerate().map(move |(i, t)| (t, TxLocation { block, height, position: i as u32 }))
}

fn changes_map(c: &Changes) -> HashMap<OutPoint, Option<Coin>> {
    let mut m: HashMap<OutPoint, Option<Coin>> = c.remove.iter().map(|op| (*op, None)).collect();
    m.extend(c.add.iter().map(|(op, coin)| (*op, Some(*coin))));
    m
}

/// Outpoints by owner: per pubkey hash, that owner's outpoints in order (a hash lookup, then
/// a set of that owner's coins only, so a change costs O(log k) in the owner's k coins, and
/// compares outpoints, not owner and outpoint). Built from the UTXO set when the chain opens
/// (the set is loaded whole anyway) and changed with it, so it is never persisted; while
/// switched off ([`OpenOptions::owner_index`], [`Chain::set_owner_index`]) it does not exist.
///
/// Most owners hold one coin: theirs is kept inline (an ordered set's first node alone takes
/// hundreds of bytes), a set only from the second coin on.
#[derive(Debug, Default)]
struct OwnerIndex(HashMap<Hash, Owned>);

/// One owner's outpoints.
#[derive(Debug)]
enum Owned {
    One(OutPoint),
    Many(BTreeSet<OutPoint>),
}

impl OwnerIndex {
    fn build(utxos: impl Iterator<Item = (OutPoint, Coin)>) -> OwnerIndex {
        let mut ix = OwnerIndex::default();
        for (op, c) in utxos {
            ix.insert(c.out.lock.pubkey_hash, op);
        }
        ix
    }

    fn insert(&mut self, owner: Hash, op: OutPoint) {
        match self.0.get_mut(&owner) {
            None => {
                self.0.insert(owner, Owned::One(op));
            }
            Some(Owned::One(first)) if *first != op => {
                let set = BTreeSet::from([*first, op]);
                self.0.insert(owner, Owned::Many(set));
            }
            Some(Owned::One(_)) => {}
            Some(Owned::Many(set)) => {
                set.insert(op);
            }
        }
    }

    fn remove(&mut self, owner: &Hash, op: &OutPoint) {
        let empty = match self.0.get_mut(owner) {
            None => false,
            Some(Owned::One(only)) => only == op,
            Some(Owned::Many(set)) => {
                set.remove(op);
                // A set holds two coins or more: down to one, it goes back inline.
                if let (1, Some(&last)) = (set.len(), set.first()) {
                    self.0.insert(*owner, Owned::One(last));
                }
                false
            }
        };
        if empty {
            self.0.remove(owner);
        }
    }

    fn outpoints(&self, owner: &Hash) -> impl Iterator<Item = OutPoint> + '_ {
        let (one, many) = match self.0.get(owner) {
            None => (None, None),
            Some(Owned::One(op)) => (Some(*op), None),
            Some(Owned::Many(set)) => (None, Some(set)),
        };
        one.into_iter().chain(many.into_iter().flat_map(|set| set.iter().copied()))
    }
}

fn apply_to_memory(
    utxos: &mut UtxoSet,
    mut by_owner: Option<&mut OwnerIndex>,
    app_state: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    changes: &HashMap<OutPoint, Option<Coin>>,
    app: &[AppWrite],
) {
    for (op, c) in changes {
        if let Some(old) = utxos.remove(op) {
            if let Some(ix) = by_owner.as_deref_mut() {
                ix.remove(&old.out.lock.pubkey_hash, op);
            }
        }
        if let Some(c) = c {
            utxos.insert(*op, *c);
            if let Some(ix) = by_owner.as_deref_mut() {
                ix.insert(c.out.lock.pubkey_hash, *op);
            }
        }
    }
    for (k, v) in app {
        match v {
            Some(v) => app_state.insert(k.clone(), v.clone()),
            None => app_state.remove(k),
        };
    }
}

#[cfg(test)]
mod owner_index_tests {
    use super::*;

    fn op(n: u32) -> OutPoint {
        OutPoint { txid: Hash([n as u8; 32]), index: n }
    }

    #[test]
    fn an_owner_s_outpoints_come_in_order_through_one_coin_and_many() {
        let mut ix = OwnerIndex::default();
        let (alice, bob) = (Hash([1; 32]), Hash([2; 32]));
        let list = |ix: &OwnerIndex, who| ix.outpoints(&who).collect::<Vec<_>>();
        ix.insert(alice, op(5));
        ix.insert(alice, op(5));
        assert_eq!(list(&ix, alice), [op(5)]);
        ix.insert(alice, op(2));
        ix.insert(alice, op(9));
        ix.insert(bob, op(7));
        assert_eq!(list(&ix, alice), [op(2), op(5), op(9)]);
        ix.remove(&alice, &op(5));
        ix.remove(&alice, &op(2));
        assert!(matches!(ix.0.get(&alice), Some(Owned::One(o)) if *o == op(9)), "back to one coin inline");
        ix.remove(&alice, &op(3));
        assert_eq!(list(&ix, alice), [op(9)]);
        ix.remove(&alice, &op(9));
        assert!(list(&ix, alice).is_empty() && !ix.0.contains_key(&alice));
        assert_eq!(list(&ix, bob), [op(7)]);
        ix.remove(&bob, &op(8));
        assert_eq!(list(&ix, bob), [op(7)], "another coin's removal leaves the one there");
    }
}
