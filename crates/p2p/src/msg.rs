//! Wire messages: gossip payloads and the sync protocol's requests and responses.
//!
//! Every message uses the chain's canonical codec (`scalechain_types::codec`): bounded before
//! allocating, no trailing bytes, errors that name the field and offset. Gossip carries
//! transaction batches (one message may hold many transactions: gossip costs per message, not
//! per signature) and whole blocks. The request-response protocol carries the version
//! handshake, headers-first sync and the re-fetching of what gossip dropped.

use scalechain_types::codec::{put_count, put_var_bytes, Decode, DecodeError, Encode, Reader};
use scalechain_types::{Block, Hash, Header, Tx};

/// The transaction batch encoding (PROTOCOL.md §13.2), shared with the API and its client.
pub use scalechain_types::tx::{decode_tx_batch, encode_tx_batch};

/// The protocol version this build speaks; a peer with another version is refused.
pub const PROTOCOL_VERSION: u32 = 1;
/// Most hashes in a block locator.
pub const MAX_LOCATOR: usize = 64;
/// Most headers in one `Headers` response.
pub const MAX_HEADERS: usize = 2_000;
/// Most blocks asked for (and sent) in one request.
pub const MAX_BLOCKS_PER_REQUEST: usize = 16;
/// Most transactions asked for in one request.
pub const MAX_TXS_PER_REQUEST: usize = 4_096;
/// Most txids in one `PoolTxids` response.
pub const MAX_POOL_TXIDS: usize = 4_096;
/// Largest request frame, bytes.
pub const MAX_REQUEST_BYTES: usize = 1 << 20;
/// Largest response frame, bytes (enough for `MAX_BLOCKS_PER_REQUEST` large blocks).
pub const MAX_RESPONSE_BYTES: usize = 96 << 20;
/// Longest agent string in a handshake.
pub const MAX_AGENT: usize = 64;
/// Longest refusal reason.
pub const MAX_REASON: usize = 256;
/// Most transactions a compact block names besides its coinbase (its gossip message is bounded
/// by `p2p.max_message_bytes` besides).
pub const MAX_COMPACT_TXS: usize = 1 << 20;
/// Most transaction indexes in one `GetBlockTxs` (and transactions in its answer).
pub const MAX_BLOCK_TXS_PER_REQUEST: usize = 65_536;

/// The names every protocol of one chain uses: peers of another chain cannot even negotiate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolNames {
    /// Gossipsub topic for transaction batches.
    pub txs_topic: String,
    /// Gossipsub topic for whole blocks.
    pub blocks_topic: String,
    /// Gossipsub topic for compact blocks (header, coinbase, and each other transaction's txid
    /// and wtxid).
    pub compact_blocks_topic: String,
    /// Request-response protocol.
    pub sync: String,
    /// Kademlia protocol (private: never shares routing tables with other networks).
    pub kad: String,
    /// Identify protocol version string.
    pub identify: String,
}

impl ProtocolNames {
    /// The names for the chain whose genesis hash is `chain_id`.
    pub fn for_chain(chain_id: &Hash) -> ProtocolNames {
        let id = hex::encode(&chain_id.0[..8]);
        ProtocolNames {
            txs_topic: format!("scalechain/{id}/txs/{PROTOCOL_VERSION}"),
            blocks_topic: format!("scalechain/{id}/blocks/{PROTOCOL_VERSION}"),
            compact_blocks_topic: format!("scalechain/{id}/cblocks/{PROTOCOL_VERSION}"),
            sync: format!("/scalechain/{id}/sync/{PROTOCOL_VERSION}"),
            kad: format!("/scalechain/{id}/kad/{PROTOCOL_VERSION}"),
            identify: format!("/scalechain/{id}/{PROTOCOL_VERSION}"),
        }
    }
}

/// A gossip topic (its name on the wire: [`ProtocolNames`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Topic {
    /// Transaction batches.
    Txs,
    /// Whole blocks.
    Blocks,
    /// Compact blocks ([`CompactBlock`]): rebuilt from the mempool, what it lacks fetched.
    CompactBlocks,
}

/// A node's role, announced in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The well-known node new peers join through.
    Bootstrap,
    /// Validates, relays and serves the API.
    Peer,
    /// A peer that also mines.
    Miner,
}

impl Role {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::Bootstrap => "bootstrap",
            Role::Peer => "peer",
            Role::Miner => "miner",
        }
    }

    fn code(self) -> u8 {
        match self {
            Role::Bootstrap => 0,
            Role::Peer => 1,
            Role::Miner => 2,
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Role::Bootstrap, Role::Peer, Role::Miner]
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| format!("unknown role {s:?} (expected bootstrap, peer or miner)"))
    }
}

/// The version handshake, sent by both sides when a connection opens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u32,
    /// The sender's chain id (genesis hash).
    pub chain_id: Hash,
    /// The sender's role.
    pub role: Role,
    /// Height of the sender's tip.
    pub tip_height: u64,
    /// Hash of the sender's tip.
    pub tip_hash: Hash,
    /// Free-form software name, at most [`MAX_AGENT`] bytes.
    pub agent: String,
}

impl Encode for Hello {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.version.to_le_bytes());
        self.chain_id.encode_to(out);
        out.push(self.role.code());
        out.extend_from_slice(&self.tip_height.to_le_bytes());
        self.tip_hash.encode_to(out);
        put_var_bytes(out, self.agent.as_bytes());
    }
}

impl Decode for Hello {
    const MIN_LEN: usize = 4 + 32 + 1 + 8 + 32 + 4;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let version = r.u32("hello.version")?;
        let chain_id = r.hash("hello.chain_id")?;
        let role = match r.u8("hello.role")? {
            0 => Role::Bootstrap,
            1 => Role::Peer,
            2 => Role::Miner,
            n => return Err(r.invalid("hello.role", format!("unknown role {n}"))),
        };
        let tip_height = r.u64("hello.tip_height")?;
        let tip_hash = r.hash("hello.tip_hash")?;
        let agent = string(r, "hello.agent", MAX_AGENT)?;
        Ok(Hello { version, chain_id, role, tip_height, tip_hash, agent })
    }
}

fn string(r: &mut Reader<'_>, field: &'static str, max: usize) -> Result<String, DecodeError> {
    let n = r.count(field, 1)?;
    if n > max {
        return Err(r.invalid(field, format!("{n} bytes, at most {max}")));
    }
    let b = r.bytes(field, n)?;
    String::from_utf8(b.to_vec()).map_err(|_| r.invalid(field, "not UTF-8"))
}

fn bounded_vec<T: Decode>(
    r: &mut Reader<'_>,
    field: &'static str,
    max: usize,
) -> Result<Vec<T>, DecodeError> {
    let n = r.count(field, T::MIN_LEN)?;
    if n > max {
        return Err(r.invalid(field, format!("{n} items, at most {max}")));
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(T::decode_from(r)?);
    }
    Ok(v)
}

fn put_vec<T: Encode>(out: &mut Vec<u8>, items: &[T]) {
    put_count(out, items.len());
    for i in items {
        i.encode_to(out);
    }
}

/// A request of the sync protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The handshake; the answer is the responder's `Hello`.
    Hello(Hello),
    /// Headers after the first locator hash the responder knows on its main chain.
    GetHeaders {
        /// Hashes from the requester's tip back to genesis, densest near the tip.
        locator: Vec<Hash>,
        /// Most headers wanted (capped at [`MAX_HEADERS`]).
        max: u32,
    },
    /// Whole blocks by hash.
    GetBlocks(Vec<Hash>),
    /// Transactions by txid from the responder's mempool.
    GetTxs(Vec<Hash>),
    /// A page of the responder's mempool inventory: its pooled txids from `from` on (inclusive,
    /// ascending), at most `max` (capped at [`MAX_POOL_TXIDS`]).
    GetPoolTxids {
        /// The first txid of the page (all zeros for the first page).
        from: Hash,
        /// Most txids wanted.
        max: u32,
    },
    /// Transactions of a stored block by position: what a compact block named and the
    /// requester's mempool lacked.
    GetBlockTxs {
        /// The block.
        block: Hash,
        /// Positions in the block, strictly ascending (at most [`MAX_BLOCK_TXS_PER_REQUEST`]).
        indexes: Vec<u32>,
    },
}

/// A response of the sync protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The responder's handshake.
    Hello(Hello),
    /// Consecutive main-chain headers.
    Headers(Vec<Header>),
    /// The blocks found, in the order asked (missing ones left out).
    Blocks(Vec<Block>),
    /// The transactions found.
    Txs(Vec<Tx>),
    /// Pooled txids, ascending.
    PoolTxids(Vec<Hash>),
    /// The request was refused (wrong chain, rate limit, malformed).
    Refused(String),
    /// The transactions of a block at the positions asked, in that order.
    BlockTxs(Vec<Tx>),
}

impl Encode for Request {
    fn encode_to(&self, out: &mut Vec<u8>) {
        match self {
            Request::Hello(h) => {
                out.push(0);
                h.encode_to(out);
            }
            Request::GetHeaders { locator, max } => {
                out.push(1);
                put_vec(out, locator);
                out.extend_from_slice(&max.to_le_bytes());
            }
            Request::GetBlocks(h) => {
                out.push(2);
                put_vec(out, h);
            }
            Request::GetTxs(h) => {
                out.push(3);
                put_vec(out, h);
            }
            Request::GetPoolTxids { from, max } => {
                out.push(4);
                from.encode_to(out);
                out.extend_from_slice(&max.to_le_bytes());
            }
            Request::GetBlockTxs { block, indexes } => {
                out.push(5);
                block.encode_to(out);
                put_count(out, indexes.len());
                for i in indexes {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
        }
    }
}

impl Decode for Request {
    const MIN_LEN: usize = 1;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match r.u8("request.tag")? {
            0 => Request::Hello(Hello::decode_from(r)?),
            1 => {
                let locator = bounded_vec(r, "get_headers.locator", MAX_LOCATOR)?;
                let max = r.u32("get_headers.max")?;
                Request::GetHeaders { locator, max }
            }
            2 => Request::GetBlocks(bounded_vec(r, "get_blocks.hashes", MAX_BLOCKS_PER_REQUEST)?),
            3 => Request::GetTxs(bounded_vec(r, "get_txs.txids", MAX_TXS_PER_REQUEST)?),
            4 => {
                let from = r.hash("get_pool_txids.from")?;
                let max = r.u32("get_pool_txids.max")?;
                Request::GetPoolTxids { from, max }
            }
            5 => {
                let block = r.hash("get_block_txs.block")?;
                let n = r.count("get_block_txs.indexes", 4)?;
                if n > MAX_BLOCK_TXS_PER_REQUEST {
                    let why = format!("{n} items, at most {MAX_BLOCK_TXS_PER_REQUEST}");
                    return Err(r.invalid("get_block_txs.indexes", why));
                }
                let mut indexes = Vec::with_capacity(n);
                for _ in 0..n {
                    let i = r.u32("get_block_txs.indexes")?;
                    if indexes.last().is_some_and(|last| *last >= i) {
                        return Err(r.invalid("get_block_txs.indexes", "not strictly ascending"));
                    }
                    indexes.push(i);
                }
                Request::GetBlockTxs { block, indexes }
            }
            n => return Err(r.invalid("request.tag", format!("unknown request {n}"))),
        })
    }
}

impl Encode for Response {
    fn encode_to(&self, out: &mut Vec<u8>) {
        match self {
            Response::Hello(h) => {
                out.push(0);
                h.encode_to(out);
            }
            Response::Headers(h) => {
                out.push(1);
                put_vec(out, h);
            }
            Response::Blocks(b) => {
                out.push(2);
                put_vec(out, b);
            }
            Response::Txs(t) => {
                out.push(3);
                put_vec(out, t);
            }
            Response::Refused(s) => {
                out.push(4);
                put_var_bytes(out, s.as_bytes());
            }
            Response::PoolTxids(h) => {
                out.push(5);
                put_vec(out, h);
            }
            Response::BlockTxs(t) => {
                out.push(6);
                put_vec(out, t);
            }
        }
    }
}

impl Decode for Response {
    const MIN_LEN: usize = 1;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match r.u8("response.tag")? {
            0 => Response::Hello(Hello::decode_from(r)?),
            1 => Response::Headers(bounded_vec(r, "headers", MAX_HEADERS)?),
            2 => Response::Blocks(bounded_vec(r, "blocks", MAX_BLOCKS_PER_REQUEST)?),
            3 => Response::Txs(bounded_vec(r, "txs", MAX_TXS_PER_REQUEST)?),
            4 => Response::Refused(string(r, "refused.reason", MAX_REASON)?),
            5 => Response::PoolTxids(bounded_vec(r, "pool_txids", MAX_POOL_TXIDS)?),
            6 => Response::BlockTxs(bounded_vec(r, "block_txs", MAX_BLOCK_TXS_PER_REQUEST)?),
            n => return Err(r.invalid("response.tag", format!("unknown response {n}"))),
        })
    }
}

/// A transaction as a compact block names it: its txid (the mempool's key) and its wtxid (the
/// hash of its whole encoding, witnesses included, which the header's Merkle root commits to).
/// A pooled transaction with the txid but another witness is not the block's: it is fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxRef {
    /// `Tx::txid`.
    pub txid: Hash,
    /// `Tx::wtxid`.
    pub wtxid: Hash,
}

impl TxRef {
    /// The reference of a transaction.
    pub fn of(tx: &Tx, kind: scalechain_types::HashKind) -> TxRef {
        TxRef { txid: tx.txid(kind), wtxid: tx.wtxid(kind) }
    }
}

impl Encode for TxRef {
    fn encode_to(&self, out: &mut Vec<u8>) {
        self.txid.encode_to(out);
        self.wtxid.encode_to(out);
    }
}

impl Decode for TxRef {
    const MIN_LEN: usize = 64;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(TxRef { txid: r.hash("tx_ref.txid")?, wtxid: r.hash("tx_ref.wtxid")? })
    }
}

/// A block as the compact-blocks topic carries it: the header, the coinbase, and a reference
/// to each other transaction in block order. The receiver takes those from its mempool and asks
/// the sender for what it lacks (`GetBlockTxs`). A rebuilt block is byte for byte the sender's
/// (txid and wtxid both match), so one whose Merkle root is wrong was relayed wrong, and its
/// sender is penalised like the sender of any invalid block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactBlock {
    /// The header.
    pub header: Header,
    /// The first transaction (the coinbase: no other node can have it).
    pub coinbase: Tx,
    /// The other transactions, in block order.
    pub txs: Vec<TxRef>,
}

impl CompactBlock {
    /// The compact form of a block; `None` for a block without transactions.
    pub fn of(block: &Block, kind: scalechain_types::HashKind) -> Option<CompactBlock> {
        let (coinbase, rest) = block.txs.split_first()?;
        Some(CompactBlock {
            header: block.header,
            coinbase: coinbase.clone(),
            txs: rest.iter().map(|t| TxRef::of(t, kind)).collect(),
        })
    }
}

impl Encode for CompactBlock {
    fn encode_to(&self, out: &mut Vec<u8>) {
        self.header.encode_to(out);
        self.coinbase.encode_to(out);
        put_vec(out, &self.txs);
    }
}

impl Decode for CompactBlock {
    const MIN_LEN: usize = scalechain_types::block::HEADER_LEN + Tx::MIN_LEN + 4;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let header = Header::decode_from(r)?;
        let coinbase = Tx::decode_from(r)?;
        let txs = bounded_vec(r, "compact_block.txs", MAX_COMPACT_TXS)?;
        Ok(CompactBlock { header, coinbase, txs })
    }
}

/// The payload and topic a node publishes its own block with: the compact form when
/// `compact` (and the block has a coinbase and at most [`MAX_COMPACT_TXS`] other
/// transactions, which a receiver decodes), else the whole block.
pub fn block_payload(block: &Block, kind: scalechain_types::HashKind, compact: bool) -> (Topic, Vec<u8>) {
    let fits = block.txs.len() <= MAX_COMPACT_TXS.saturating_add(1);
    match CompactBlock::of(block, kind).filter(|_| compact && fits) {
        Some(c) => (Topic::CompactBlocks, c.encode()),
        None => (Topic::Blocks, block.encode()),
    }
}

/// A gossiped batch of transactions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxBatch(pub Vec<Tx>);

impl Encode for TxBatch {
    fn encode_to(&self, out: &mut Vec<u8>) {
        put_vec(out, &self.0);
    }
}

impl Decode for TxBatch {
    const MIN_LEN: usize = 4;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(TxBatch(r.vec("tx_batch")?))
    }
}

/// Splits transactions into groups whose batch encodings stay under `max_bytes` and hold at
/// most `max_txs` each (a transaction larger than `max_bytes` travels alone).
pub fn group_for_batches<T: std::borrow::Borrow<Tx>>(
    txs: &[T],
    max_bytes: usize,
    max_txs: usize,
) -> Vec<&[T]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 4;
    for (i, tx) in txs.iter().enumerate() {
        let n = tx.borrow().encoded_len();
        if i > start && (size + n > max_bytes || i - start >= max_txs.max(1)) {
            out.push(&txs[start..i]);
            start = i;
            size = 4;
        }
        size += n;
    }
    if start < txs.len() {
        out.push(&txs[start..]);
    }
    out
}

/// A `Refused` response, its reason cut to [`MAX_REASON`] bytes (on a character boundary) so
/// that it always decodes.
pub fn refused(reason: impl Into<String>) -> Response {
    let mut reason = reason.into();
    if reason.len() > MAX_REASON {
        let mut end = MAX_REASON;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason.truncate(end);
    }
    Response::Refused(reason)
}

/// A gossip message id: the first 20 bytes of BLAKE3 of the payload.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgId(pub [u8; 20]);

impl MsgId {
    /// The id of a payload.
    pub fn of(payload: &[u8]) -> MsgId {
        message_id(payload)
    }

    /// An id from its bytes, if there are exactly 20.
    pub fn from_slice(b: &[u8]) -> Option<MsgId> {
        b.try_into().ok().map(MsgId)
    }
}

impl std::fmt::Debug for MsgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MsgId({})", hex::encode(self.0))
    }
}

impl std::fmt::Display for MsgId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

/// The gossipsub message id of a payload: its BLAKE3 hash, so the same content from two peers
/// is one message (a block's payload starts with its header, so each block has one id).
pub fn message_id(payload: &[u8]) -> MsgId {
    let mut id = [0u8; 20];
    id.copy_from_slice(&blake3::hash(payload).as_bytes()[..20]);
    MsgId(id)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn hello() -> Hello {
        Hello {
            version: PROTOCOL_VERSION,
            chain_id: Hash([3; 32]),
            role: Role::Miner,
            tip_height: 9,
            tip_hash: Hash([4; 32]),
            agent: "scalechain/0.1".into(),
        }
    }

    #[test]
    fn requests_and_responses_round_trip() {
        let reqs = [
            Request::Hello(hello()),
            Request::GetHeaders { locator: vec![Hash([1; 32]), Hash([2; 32])], max: 100 },
            Request::GetBlocks(vec![Hash([5; 32])]),
            Request::GetTxs(vec![]),
            Request::GetPoolTxids { from: Hash([6; 32]), max: 7 },
        ];
        for r in reqs {
            assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        }
        let resps = [
            Response::Hello(hello()),
            Response::Headers(vec![]),
            Response::Refused("no".into()),
            Response::PoolTxids(vec![Hash([8; 32])]),
        ];
        for r in resps {
            assert_eq!(Response::decode(&r.encode()).unwrap(), r);
        }
    }

    #[test]
    fn oversized_lists_and_unknown_tags_are_refused() {
        let big = Request::GetBlocks(vec![Hash([0; 32]); MAX_BLOCKS_PER_REQUEST + 1]);
        let e = Request::decode(&big.encode()).unwrap_err();
        assert_eq!(e.field, "get_blocks.hashes");
        assert_eq!(Request::decode(&[9]).unwrap_err().field, "request.tag");
        let mut h = Request::Hello(Hello { agent: "x".repeat(MAX_AGENT + 1), ..hello() }).encode();
        assert_eq!(Request::decode(&h).unwrap_err().field, "hello.agent");
        h.truncate(10);
        assert!(Request::decode(&h).is_err());
    }

    #[test]
    fn names_differ_between_chains() {
        let a = ProtocolNames::for_chain(&Hash([1; 32]));
        let b = ProtocolNames::for_chain(&Hash([2; 32]));
        assert_ne!(a.sync, b.sync);
        assert_ne!(a.txs_topic, b.txs_topic);
        assert!(a.kad.starts_with("/scalechain/"));
    }

    #[test]
    fn groups_respect_both_bounds_and_encode_like_owned_batches() {
        let tx = Tx::coinbase(1, vec![]);
        let n = tx.encoded_len();
        let txs = vec![tx; 10];
        let g = group_for_batches(&txs, 4 + 3 * n, 100);
        assert_eq!(g.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![3, 3, 3, 1]);
        for x in &g {
            assert!(encode_tx_batch(x.iter()).len() <= 4 + 3 * n);
        }
        let g = group_for_batches(&txs, 1 << 20, 4);
        assert_eq!(g.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(encode_tx_batch(g[0].iter()), TxBatch(g[0].to_vec()).encode());
    }

    #[test]
    fn tx_batches_are_bounded_before_allocating() {
        let txs = vec![Tx::coinbase(1, vec![]); 3];
        let data = TxBatch(txs.clone()).encode();
        assert_eq!(decode_tx_batch(&data, 3).unwrap(), txs);
        assert!(decode_tx_batch(&data, 2).unwrap_err().to_string().contains("3 transactions, at most 2"));
        let mut trailing = data.clone();
        trailing.push(0);
        assert!(decode_tx_batch(&trailing, 3).is_err());
        // A count that cannot fit in the bytes is refused before any allocation.
        assert!(decode_tx_batch(&[0xff, 0xff, 0xff, 0xff], usize::MAX).is_err());
    }

    #[test]
    fn refusals_always_decode_and_ids_are_twenty_bytes_of_blake3() {
        let long = "é".repeat(MAX_REASON);
        let r = refused(long);
        assert!(matches!(&r, Response::Refused(s) if s.len() <= MAX_REASON && !s.is_empty()));
        assert_eq!(Response::decode(&r.encode()).unwrap(), r);
        assert_eq!(message_id(b"x").0[..], blake3::hash(b"x").as_bytes()[..20]);
        assert_eq!(MsgId::from_slice(&message_id(b"x").0), Some(message_id(b"x")));
        assert_eq!(MsgId::from_slice(&[0; 19]), None);
    }
}
