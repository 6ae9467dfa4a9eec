//! The peer protocol as one sans-IO state machine (nakamoto's shape).
//!
//! [`Protocol::step`] takes one [`Input`] — a peer connected or left, a gossip message, a sync
//! request or response (raw bytes: the machine decodes them), the verdict of the block worker
//! or the transaction pipeline, a tick — with the caller's clock and a [`ChainView`] to read
//! the chain from, and appends [`Output`]s to an outbox the caller drains in order: requests
//! and responses to send, gossip verdicts, blocks and transactions to submit, bans, events.
//!
//! The machine holds no socket, reads no clock and draws no random number: the node's reactor
//! (`scalechain-node`, over libp2p) and the simulator (`scalechain-simnet`, over a virtual
//! network) drive the same code. Its managers are [`SyncState`](crate::sync::SyncState)
//! (headers-first sync), [`PeerBook`](crate::score::PeerBook) (scores and bans), and in this
//! module `pool` (mempool sync with each peer) and `rebuild` (compact blocks waiting for the
//! transactions the mempool lacked). Every map is ordered, so the same inputs give the same
//! outputs in the same order.
//!
//! What it does is the contract of `docs/PROTOCOL.md` §13: the handshake on connect (refused
//! for another chain or version, and the sender banned after the refusal), headers, blocks and
//! transactions served, per-peer rate limits applied before decoding, request/answer matching
//! by tag, sync, gossip verdicts and penalties (a block penalised only for permanent failures),
//! the relay of locally admitted transactions in batches and of the local miner's blocks.

mod machine;
mod pool;
mod rebuild;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use scalechain_types::{Block, Hash, HashKind, Header, Target, Tx};

pub use crate::msg::MsgId;
use crate::msg::{
    Request, Response, Role, Topic, TxRef, MAX_BLOCKS_PER_REQUEST, MAX_BLOCK_TXS_PER_REQUEST,
    MAX_RESPONSE_BYTES,
};
use crate::score::Offence;
use crate::sync::SyncConfig;
pub use machine::{Peer, Protocol};
pub use pool::{successor, PoolSyncConfig};
pub use rebuild::{MAX_REBUILDS, MAX_REBUILDS_PER_PEER, REBUILD_TIMEOUT_MS};

/// The verdict on a gossip message (gossipsub's validation result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Valid: forward it.
    Accept,
    /// Not invalid, not useful (duplicate, orphan, policy refusal): drop it.
    Ignore,
    /// Invalid: drop it and penalise the sender.
    Reject,
}

/// How often the node asks each handshaken peer for its `Hello` again
/// ([`Config::status_every_ms`], `docs/PROTOCOL.md` §13.3), ms.
pub const STATUS_EVERY_MS: u64 = 5_000;

/// The machine's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// This node's role (announced in the handshake; a bootstrap node never syncs).
    pub role: Role,
    /// Software name announced in the handshake (at most `msg::MAX_AGENT` bytes).
    pub agent: String,
    /// Inbound sync requests per second per peer; bursts of 4× this.
    pub requests_per_s: f64,
    /// Largest gossip message, bytes.
    pub max_message_bytes: usize,
    /// Most transactions in one gossiped batch.
    pub max_txs_per_message: usize,
    /// Sync timeouts and parallelism.
    pub sync: SyncConfig,
    /// Most peers the score book remembers.
    pub book_entries: usize,
    /// What is fetched of a new peer's mempool after the handshake.
    pub pool_sync: PoolSyncConfig,
    /// Most connected peers: past it, a newcomer makes room by the eviction of the idlest
    /// peer that has not completed the handshake, else of the lowest-scored inbound peer below
    /// 0, else it is turned away itself.
    pub max_peers: usize,
    /// A peer whose handshake (its `Hello` or its answer to ours) has not come this long after
    /// it connected is disconnected, ms.
    pub hello_timeout_ms: u64,
    /// A handshaken peer is asked for its `Hello` again this long after it was last asked, so
    /// that its tip stays current (gossip delivers a block once, from the first peer that
    /// relays it: the others' claims never arrive by gossip), ms; 0: never. [`Config::new`]
    /// leaves it 0 (the simulator's traffic stays as it was); the node sets
    /// [`STATUS_EVERY_MS`].
    pub status_every_ms: u64,
    /// The bound on the median of the peers' clock offsets ([`Protocol::clock_offset`]): past
    /// it (either way) the machine reports [`Event::Clock`]. The node sets the chain's
    /// `max_future_drift_ms`, the rule a block's time is held to; ms.
    pub max_clock_offset_ms: u64,
}

impl Config {
    /// The node's defaults (`docs/PROTOCOL.md` §13) for `role`.
    pub fn new(role: Role, agent: impl Into<String>) -> Config {
        Config {
            role,
            agent: agent.into(),
            requests_per_s: 50.0,
            max_message_bytes: 16 << 20,
            max_txs_per_message: 2_000,
            sync: SyncConfig::default(),
            book_entries: 4096,
            pool_sync: PoolSyncConfig::default(),
            max_peers: 64,
            hello_timeout_ms: 5_000,
            status_every_ms: 0,
            max_clock_offset_ms: 2 * 60 * 60 * 1000,
        }
    }
}

/// What the machine reads of the chain and the mempool. The node and the simulator implement
/// it over their replica; every call is short (a read lock at most).
pub trait ChainView {
    /// The chain id (genesis hash).
    fn chain_id(&self) -> Hash;
    /// The chain's hash function.
    fn hash_kind(&self) -> HashKind;
    /// Height and hash of the tip.
    fn tip(&self) -> (u64, Hash);
    /// A locator of the main chain (`sync::locator`).
    fn locator(&self) -> Vec<Hash>;
    /// At most `max` main-chain headers after the first locator hash on the main chain
    /// (genesis if none is).
    fn headers_after(&self, locator: &[Hash], max: usize) -> Vec<Header>;
    /// True if the block is known (stored, on any branch).
    fn has_block(&self, hash: &Hash) -> bool;
    /// The mempool's transactions among `txids`, in that order, stopping before their
    /// encodings pass `max_bytes`.
    fn pooled_txs(&self, txids: &[Hash], max_bytes: usize) -> Vec<Tx>;
    /// True if the mempool holds `txid`.
    fn has_tx(&self, txid: &Hash) -> bool;
    /// At most `max` pooled txids from `from` on (inclusive), ascending.
    fn pool_txids(&self, from: &Hash, max: usize) -> Vec<Hash>;
    /// The target a child of `parent` must carry (consensus retargeting), `None` if `parent`
    /// is not a known block.
    fn target_after(&self, parent: &Hash) -> Option<Target>;
    /// The pooled transaction of each reference (its txid and its wtxid both), `None` where
    /// the mempool lacks it (one snapshot of the mempool for the whole list).
    fn pooled_for_block(&self, refs: &[TxRef]) -> Vec<Option<Tx>>;
}

/// Where a block submitted to the block worker came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockOrigin<K> {
    /// Gossip (the verdict goes back to gossipsub).
    Gossip {
        /// The peer that forwarded it.
        source: K,
        /// The message id.
        id: MsgId,
    },
    /// A sync response from this peer.
    Sync(K),
    /// This node's miner, with the payload to publish once it connects
    /// (`msg::block_payload`: the compact form, or the whole block).
    Local {
        /// The topic.
        topic: Topic,
        /// The payload.
        payload: Vec<u8>,
    },
}

/// Where a batch of transactions submitted to the pipeline came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxOrigin<K> {
    /// A gossip message (the verdict goes back to gossipsub).
    Gossip {
        /// The peer that forwarded it.
        source: K,
        /// The message id.
        id: MsgId,
    },
    /// This node's API: what is admitted is published.
    Local,
    /// Fetched from this peer's mempool after the handshake (mempool sync): no gossip
    /// verdict, not relayed; a transaction breaking a consensus rule costs the peer
    /// `invalid-tx`.
    Pool(K),
    /// Orphans admitted once their parents came (never submitted as such: the pipeline or
    /// the block worker hands them over). They are published together with the parents the
    /// same round admitted, so the message is new to gossip: a peer that held the children
    /// as orphans saw their own message already, and gossipsub drops a payload it has seen.
    Released,
}

/// What the block worker did with a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockVerdict {
    /// It moved the main chain.
    Connected,
    /// Valid so far, stored on a branch with less work.
    SideBranch,
    /// Its parent is unknown; held until it comes.
    Orphan,
    /// Already known.
    Known,
    /// Refused. `permanent` is false when the block may be valid later or elsewhere (its time
    /// is too far ahead of our clock, or our store failed): the sender is not penalised.
    Invalid {
        /// True if no node should ever accept it.
        permanent: bool,
        /// Why, for logs.
        reason: String,
    },
}

/// The pipeline's verdict on one submitted batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxsDone<K> {
    /// Where the batch came from.
    pub origin: TxOrigin<K>,
    /// The transactions the mempool took, in submission order.
    pub admitted: Vec<Arc<Tx>>,
    /// True if any transaction broke a consensus rule.
    pub invalid: bool,
    /// How many were refused for want of room (`MempoolError::may_fit_later`): after the
    /// next block this node fetches its peers' mempools again (§13.5).
    pub crowded: usize,
}

impl<K> TxsDone<K> {
    /// What the node itself brought to be relayed (`origin`: the API's, or orphans released
    /// by their parents): nothing in it can be invalid or crowded out.
    pub fn relay(origin: TxOrigin<K>, admitted: Vec<Arc<Tx>>) -> TxsDone<K> {
        TxsDone { origin, admitted, invalid: false, crowded: 0 }
    }
}

/// Something that happened, for the caller to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input<K> {
    /// A first connection to a peer opened.
    Connected {
        /// The peer.
        peer: K,
        /// Its address, for display.
        addr: String,
        /// True if the peer dialled us.
        inbound: bool,
    },
    /// The last connection to a peer closed.
    Disconnected {
        /// The peer.
        peer: K,
    },
    /// A gossip message to judge.
    Gossip {
        /// Its topic.
        topic: Topic,
        /// Its id.
        id: MsgId,
        /// The peer that forwarded it.
        source: K,
        /// The payload.
        data: Vec<u8>,
    },
    /// An inbound sync request (answered with [`Output::Respond`] or [`Output::ServeBlocks`]).
    Request {
        /// From whom.
        peer: K,
        /// The reactor's id for the answer.
        id: u64,
        /// The request body.
        data: Vec<u8>,
    },
    /// The answer to one of our requests.
    Response {
        /// From whom.
        peer: K,
        /// The tag of [`Output::Request`].
        tag: u64,
        /// The response body.
        data: Vec<u8>,
    },
    /// One of our requests failed (timeout, closed connection, unreadable frame).
    RequestFailed {
        /// To whom it went.
        peer: K,
        /// The tag of [`Output::Request`].
        tag: u64,
        /// Why, for logs.
        error: String,
    },
    /// The block worker judged a block of [`Output::SubmitBlock`].
    BlockDone {
        /// Its hash.
        hash: Hash,
        /// Its height.
        height: u64,
        /// Where it came from.
        origin: BlockOrigin<K>,
        /// What became of it.
        verdict: BlockVerdict,
    },
    /// The pipeline judged batches (one verification round: everything it drained at once).
    TxsDone(Vec<TxsDone<K>>),
    /// Time passes (every 250 ms in the node).
    Tick,
}

/// Something the caller must do (or know).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output<K> {
    /// Send a request; its answer comes back as [`Input::Response`] with `tag`.
    Request {
        /// To whom.
        peer: K,
        /// The machine's tag for the answer.
        tag: u64,
        /// What.
        request: Request,
    },
    /// Answer the inbound request `id`.
    Respond {
        /// The id of [`Input::Request`].
        id: u64,
        /// The answer.
        response: Response,
    },
    /// Load these blocks (off the event loop), answer request `id` with
    /// [`blocks_response`] of them.
    ServeBlocks {
        /// The id of [`Input::Request`].
        id: u64,
        /// The blocks asked for, at most `msg::MAX_BLOCKS_PER_REQUEST`.
        hashes: Vec<Hash>,
    },
    /// Load this block (off the event loop), answer request `id` with
    /// [`block_txs_response`] of it.
    ServeBlockTxs {
        /// The id of [`Input::Request`].
        id: u64,
        /// The block.
        block: Hash,
        /// The positions asked for, strictly ascending.
        indexes: Vec<u32>,
    },
    /// The verdict on a gossip message.
    Validate {
        /// Its id.
        id: MsgId,
        /// The peer it came from.
        source: K,
        /// Forward, drop, or drop and penalise.
        verdict: Verdict,
    },
    /// Publish a payload.
    Publish {
        /// The topic.
        topic: Topic,
        /// The payload.
        data: Vec<u8>,
    },
    /// Hand a block to the block worker; answer with [`Input::BlockDone`].
    SubmitBlock {
        /// The block.
        block: Block,
        /// Where it came from.
        origin: BlockOrigin<K>,
    },
    /// Hand transactions to the pipeline; answer with [`Input::TxsDone`].
    SubmitTxs {
        /// The transactions.
        txs: Vec<Tx>,
        /// Where they came from.
        origin: TxOrigin<K>,
    },
    /// Disconnect the peer and refuse it until `until_ms` (after any answer already given to
    /// it has been written).
    Ban {
        /// The peer.
        peer: K,
        /// The caller's clock when the ban ends.
        until_ms: u64,
    },
    /// The peer's ban ended: let it connect again.
    Unban {
        /// The peer.
        peer: K,
    },
    /// Close the connections to the peer (no ban: it may come back). An
    /// [`Input::Disconnected`] follows.
    Disconnect {
        /// The peer.
        peer: K,
        /// Why, for logs: `handshake timeout` or `evicted for a newcomer`.
        reason: &'static str,
    },
    /// Something to record (metrics, the node's peer list, logs).
    Event(Event<K>),
}

/// What the machine tells the caller about its peers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<K> {
    /// A peer connected.
    Connected {
        /// The peer.
        peer: K,
        /// Its address.
        addr: String,
    },
    /// A peer's handshake: its role and tip height.
    Handshake {
        /// The peer.
        peer: K,
        /// Its role.
        role: Role,
        /// Its tip height.
        height: u64,
    },
    /// The height a peer claims changed (its `Hello` asked again, a block it relayed or
    /// served, headers it sent; or sync found it lacking blocks).
    Height {
        /// The peer.
        peer: K,
        /// The height.
        height: u64,
    },
    /// A peer gave this node a block it did not have (by gossip or sync) that was connected
    /// or stored on a side branch: the peer's last block time.
    Delivered {
        /// The peer.
        peer: K,
        /// The block's height.
        height: u64,
        /// The caller's clock when the block was taken.
        at_ms: u64,
    },
    /// The median of the peers' clock offsets ([`Protocol::clock_offset`]) went past
    /// `Config::max_clock_offset_ms` (either way), or came back within it: reported on the
    /// tick that sees the change.
    Clock {
        /// The median offset: the peers' clocks less this node's, ms.
        median_offset_ms: i64,
        /// Peers it is the median of.
        peers: usize,
        /// True if it is past the bound.
        out_of_bound: bool,
    },
    /// A peer was penalised.
    Penalised {
        /// The peer.
        peer: K,
        /// What it did.
        offence: Offence,
        /// Its score afterwards (bans happen at -100).
        score: i32,
    },
    /// A peer was banned.
    Banned {
        /// The peer.
        peer: K,
        /// When the ban ends.
        until_ms: u64,
    },
    /// A peer left.
    Disconnected {
        /// The peer.
        peer: K,
    },
}

/// Bytes of blocks one `Blocks` response carries at most: the response frame's limit less
/// 1 MiB for the framing and the count.
pub const BLOCKS_RESPONSE_BYTES: usize = MAX_RESPONSE_BYTES - (1 << 20);

/// The answer to `GetBlocks(hashes)`: the blocks `load` finds, in the order asked, at most
/// `msg::MAX_BLOCKS_PER_REQUEST` of them, stopping before their encodings pass `max_bytes`
/// (the node passes [`BLOCKS_RESPONSE_BYTES`]). Both reactors answer
/// [`Output::ServeBlocks`] with it.
pub fn blocks_response(
    hashes: &[Hash],
    max_bytes: usize,
    mut load: impl FnMut(&Hash) -> Option<Block>,
) -> Response {
    let found = hashes.iter().take(MAX_BLOCKS_PER_REQUEST).filter_map(&mut load);
    Response::Blocks(within_bytes(found, max_bytes, Block::encoded_len))
}

/// The answer to `GetBlockTxs(indexes)` of `block` (`None`: not stored here): its
/// transactions at those positions, in that order, stopping before their encodings pass
/// `max_bytes`; `Refused` for a block not stored or a position past its end. Both reactors
/// answer [`Output::ServeBlockTxs`] with it.
pub fn block_txs_response(block: Option<&Block>, indexes: &[u32], max_bytes: usize) -> Response {
    let Some(block) = block else { return crate::msg::refused("unknown block") };
    // The positions ascend, so the last is the largest: a position past the end is refused
    // whatever the byte bound would have cut.
    if let Some(&last) = indexes.last() {
        if usize::try_from(last).map_or(true, |i| i >= block.txs.len()) {
            return crate::msg::refused(format!(
                "position {last} past the block's {} transactions",
                block.txs.len()
            ));
        }
    }
    let asked = indexes
        .iter()
        .filter_map(|&i| usize::try_from(i).ok().and_then(|i| block.txs.get(i)))
        .take(MAX_BLOCK_TXS_PER_REQUEST);
    Response::BlockTxs(within_bytes(asked, max_bytes, |t| t.encoded_len()).into_iter().cloned().collect())
}

/// The leading `items` whose encodings (`len`) together stay within `max_bytes`.
fn within_bytes<T>(items: impl Iterator<Item = T>, max_bytes: usize, len: impl Fn(&T) -> usize) -> Vec<T> {
    let mut bytes = 0usize;
    items
        .take_while(|t| {
            bytes = bytes.saturating_add(len(t));
            bytes <= max_bytes
        })
        .collect()
}
