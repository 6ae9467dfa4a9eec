//! Compact-block rebuilding (`docs/PROTOCOL.md` §13.2.2): a compact block from gossip names
//! its transactions by txid and wtxid; the receiver rebuilds the block from its mempool and,
//! when the mempool lacks some, asks the peer that relayed it for them (`GetBlockTxs`) and
//! waits.
//!
//! [`Rebuilds`] holds the waiting blocks, by gossip message: two messages claiming one block
//! are rebuilt apart, so a peer relaying a copy with wrong references first cannot hold the
//! block up. It decides what becomes of a compact block ([`Rebuilds::on_compact`]) and of the
//! answer to its request ([`Rebuilds::on_answer`]); the machine turns each decision into
//! outputs (the gossip verdict, the block for the block worker, the request, a penalty).
//!
//! - **Bounds.** At most [`MAX_REBUILDS`] rebuilds wait at once and at most
//!   [`MAX_REBUILDS_PER_PEER`] for one relaying peer; one asks for at most
//!   `msg::MAX_BLOCK_TXS_PER_REQUEST` transactions; one lives at most [`REBUILD_TIMEOUT_MS`]
//!   (the machine's tick expires it, [`Rebuilds::expire`]). Past a bound the message is
//!   dropped and sync fetches the whole block.
//! - **Invariants.** A rebuild is only started for a block not stored here, from a peer still
//!   connected, whose header carries the target consensus requires after its parent (or, for
//!   a parent being rebuilt itself, that parent's target) and meets it. Every rebuild ends
//!   once, in exactly one of: the block (a verdict from the block worker), a drop (`Ignore`)
//!   or a malformed answer. The rebuilt block is the sender's byte for byte: each fetched
//!   transaction must be the one referenced at its position (txid and wtxid).
//! - **Must not.** Push outputs, penalise, read a clock or send anything: the machine does,
//!   with the caller's clock passed in. It reads the chain only through [`ChainView`], in the
//!   order the machine did before: stored block, mempool lookup, required target.

use std::collections::BTreeMap;

use scalechain_types::{Block, Hash, HashKind, Header, Tx};

use super::ChainView;
use crate::msg::{CompactBlock, MsgId, TxRef, MAX_BLOCK_TXS_PER_REQUEST};

/// Most compact blocks being rebuilt at once (each waits for one `GetBlockTxs`); past it a
/// compact block that needs fetching is ignored and sync fetches the whole block.
pub const MAX_REBUILDS: usize = 16;
/// Most of those relayed by one peer.
pub const MAX_REBUILDS_PER_PEER: usize = 2;
/// A rebuild whose transactions have not come this long after the compact block is dropped
/// (sync fetches the block), ms. Gossipsub forgets a message waiting for its verdict after
/// about 3.5 s (5 heartbeats of 700 ms), so a later verdict could not forward it anyway.
pub const REBUILD_TIMEOUT_MS: u64 = 3_000;

/// A compact block's gossip message: what its verdict answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Relayed<K> {
    /// The message id.
    pub id: MsgId,
    /// The peer that relayed it (and is asked for the rest).
    pub source: K,
}

/// A compact block waiting for the transactions this node's mempool lacked.
#[derive(Clone, Debug)]
struct Rebuild<K> {
    /// Its gossip message.
    msg: Relayed<K>,
    /// The block's hash.
    hash: Hash,
    header: Header,
    /// Its transactions in block order (the coinbase first); `None` where fetched.
    txs: Vec<Option<Tx>>,
    /// Each position's reference (position 0, the coinbase, included).
    refs: Vec<TxRef>,
    /// The positions asked for.
    missing: Vec<u32>,
    /// The caller's clock when it came.
    since_ms: u64,
}

/// What becomes of a compact block from gossip ([`Rebuilds::on_compact`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Arrival {
    /// Dropped (`Ignore`): the block is stored here or its message is being rebuilt already;
    /// or transactions lack and are not fetched (its parent is unknown here or its target
    /// cannot be judged yet, a bound is reached, its relaying peer is gone). Sync fetches
    /// what it needs.
    Ignore,
    /// The mempool held every transaction: the block, for the block worker.
    Complete(Block),
    /// Transactions lack and the header (of this hash) lacks the work consensus requires after
    /// its stored parent: no honest node relays it, so the message is rejected and its
    /// relaying peer penalised.
    BadWork(Hash),
    /// The rebuild waits: ask the relaying peer for these positions of block `hash`.
    Fetch {
        /// The block's hash.
        hash: Hash,
        /// The positions lacking (0 is the coinbase; the others count from 1), ascending.
        missing: Vec<u32>,
    },
}

/// How the answer to a rebuild's `GetBlockTxs` ended it ([`Rebuilds::on_answer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Answered<K> {
    /// Every transaction came: the block, for the block worker, with its message.
    Block {
        /// The rebuilt block.
        block: Block,
        /// Its gossip message.
        msg: Relayed<K>,
    },
    /// Fewer came than asked (cut at the response bound): the message is dropped (`Ignore`)
    /// and sync fetches the whole block; no penalty.
    Short(Relayed<K>),
    /// More came than asked, or one that was not asked for (txid or wtxid): the message is
    /// dropped (`Ignore`) and the answering peer penalised `malformed`.
    Malformed(Relayed<K>),
}

/// The compact blocks waiting for transactions, by gossip message (see the module
/// documentation).
#[derive(Clone, Debug)]
pub(super) struct Rebuilds<K> {
    by_msg: BTreeMap<MsgId, Rebuild<K>>,
}

impl<K: Clone + PartialEq> Rebuilds<K> {
    /// None waiting.
    pub fn new() -> Self {
        Rebuilds { by_msg: BTreeMap::new() }
    }

    /// How many wait.
    pub fn len(&self) -> usize {
        self.by_msg.len()
    }

    /// A compact block (message `id`, relayed by `source`, which is `askable` if still
    /// connected) from gossip: rebuilt from the mempool when the mempool holds every
    /// transaction it names (txid and wtxid); otherwise, once its parent is known here and its
    /// header carries the target consensus requires after it and meets it, the missing ones
    /// are to be asked of the peer that relayed it (which stored the block before relaying it),
    /// and the rebuild waits from `now_ms`. What cannot be fetched so is left to sync, which
    /// fetches the whole block from the peer claiming it. The rebuilt block is the sender's
    /// byte for byte, so the block worker's verdict on it is a verdict on the sender.
    pub fn on_compact(
        &mut self,
        now_ms: u64,
        id: MsgId,
        source: &K,
        askable: bool,
        compact: CompactBlock,
        chain: &impl ChainView,
    ) -> Arrival {
        let CompactBlock { header, coinbase, txs: refs } = compact;
        let kind = chain.hash_kind();
        let hash = header.hash(kind);
        if chain.has_block(&hash) || self.by_msg.contains_key(&id) {
            return Arrival::Ignore;
        }
        let found = chain.pooled_for_block(&refs);
        let missing: Vec<u32> = found
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_none())
            .filter_map(|(i, _)| u32::try_from(i + 1).ok())
            .collect();
        if missing.is_empty() {
            let mut txs = Vec::with_capacity(found.len() + 1);
            txs.push(coinbase);
            txs.extend(found.into_iter().flatten());
            return Arrival::Complete(Block { header, txs });
        }
        // The target consensus requires after a stored parent. A parent being rebuilt itself
        // (a chain of compact blocks over a slow link) passes its target on, as it does
        // between retargets; a child whose target differs (a retarget) waits for sync.
        if let Some(target) = chain.target_after(&header.prev_hash) {
            if header.target != target || !target.is_met_by(&hash) {
                // No honest node relays it: every node checks a block before it forwards it.
                return Arrival::BadWork(hash);
            }
        } else {
            let parent = self.by_msg.values().find(|r| r.hash == header.prev_hash);
            if !parent.is_some_and(|r| r.header.target == header.target && header.target.is_met_by(&hash)) {
                // Its parent is unknown here, or the work cannot be judged yet: sync fetches.
                return Arrival::Ignore;
            }
        }
        let from_source = self.by_msg.values().filter(|r| r.msg.source == *source).count();
        if !askable
            || missing.len() > MAX_BLOCK_TXS_PER_REQUEST
            || self.by_msg.len() >= MAX_REBUILDS
            || from_source >= MAX_REBUILDS_PER_PEER
        {
            return Arrival::Ignore;
        }
        let mut all = Vec::with_capacity(refs.len() + 1);
        all.push(TxRef::of(&coinbase, kind));
        all.extend(refs);
        let mut txs = Vec::with_capacity(found.len() + 1);
        txs.push(Some(coinbase));
        txs.extend(found);
        let fetch = Arrival::Fetch { hash, missing: missing.clone() };
        let msg = Relayed { id, source: source.clone() };
        self.by_msg.insert(id, Rebuild { msg, hash, header, txs, refs: all, missing, since_ms: now_ms });
        fetch
    }

    /// The transactions the rebuild of message `id` asked for came (`got`, hashed with
    /// `kind`): the block, or, if the answer is short (cut at the response bound), a drop; an
    /// answer with a transaction that was not asked for (txid or wtxid) is malformed. `None`
    /// if no rebuild waits for `id`. The rebuild ends either way.
    pub fn on_answer(&mut self, id: &MsgId, got: Vec<Tx>, kind: HashKind) -> Option<Answered<K>> {
        let mut rb = self.by_msg.remove(id)?;
        if got.len() > rb.missing.len() {
            return Some(Answered::Malformed(rb.msg));
        }
        let complete = got.len() == rb.missing.len();
        for (tx, &i) in got.into_iter().zip(&rb.missing) {
            let slot = usize::try_from(i).ok().filter(|i| *i < rb.txs.len());
            match slot {
                Some(slot) if TxRef::of(&tx, kind) == rb.refs[slot] => rb.txs[slot] = Some(tx),
                _ => return Some(Answered::Malformed(rb.msg)),
            }
        }
        let txs = rb.txs.into_iter().collect::<Option<Vec<Tx>>>().filter(|_| complete);
        let Some(txs) = txs else { return Some(Answered::Short(rb.msg)) };
        Some(Answered::Block { block: Block { header: rb.header, txs }, msg: rb.msg })
    }

    /// Ends the rebuild of message `id` (its request was refused or failed, or its peer left):
    /// its message, to drop, if it was waiting.
    pub fn remove(&mut self, id: &MsgId) -> Option<Relayed<K>> {
        self.by_msg.remove(id).map(|rb| rb.msg)
    }

    /// Ends the rebuilds whose transactions have not come [`REBUILD_TIMEOUT_MS`] after their
    /// compact block, at `now_ms`: their messages, to drop, in message order.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Relayed<K>> {
        let late: Vec<MsgId> = self
            .by_msg
            .iter()
            .filter(|(_, r)| now_ms.saturating_sub(r.since_ms) >= REBUILD_TIMEOUT_MS)
            .map(|(id, _)| *id)
            .collect();
        late.iter().filter_map(|id| self.remove(id)).collect()
    }
}
