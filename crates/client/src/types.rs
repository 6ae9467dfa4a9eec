//! Every request and response body of the node's HTTP API, defined once: the node's handlers
//! build them, its OpenAPI document describes them (`utoipa::ToSchema`), and every client
//! decodes them. Hashes, amounts and schemes are typed (their JSON forms are the hex strings,
//! integers and names the API has always used), so a client holds checked values.
//!
//! The blocks and transactions of `/blocks/{id}` and `/txs/{txid}` are the chain's own JSON
//! forms, [`BlockJson`] and [`TxJson`] from `scalechain_chain::export`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use scalechain_chain::export::{BlockJson, HeaderJson, InputJson, OutputJson, TxJson};
use scalechain_types::codec::Encode;
use scalechain_types::{Amount, Hash, Lock, OutPoint, Scheme, Tx, TxOut};

/// The body of every error answer (4xx and 5xx).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ApiError {
    /// A stable code: `bad-request`, `not-found`, `unauthorized`, `too-large`, `busy`,
    /// `unavailable`, `storage` (the node takes nothing while it cannot write its data
    /// directory: [`StorageStatus`]).
    pub error: String,
    /// What was wrong, and where.
    pub message: String,
}

/// `GET /status`: the node at a glance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// The chain id (genesis hash).
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub chain_id: Hash,
    /// `bootstrap`, `peer` or `miner`.
    pub role: String,
    /// This node's libp2p peer id.
    pub peer_id: String,
    /// P2P listen addresses (with `/p2p/<peer id>`).
    pub listen: Vec<String>,
    /// Tip height.
    pub height: u64,
    /// Tip hash.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub tip: Hash,
    /// Pooled transactions.
    pub mempool_txs: usize,
    /// Pooled bytes.
    pub mempool_bytes: u64,
    /// Connected peers.
    pub peers: usize,
    /// Blocks held as orphans (parent unknown).
    pub orphans: usize,
    /// Seconds since start.
    pub uptime_s: f64,
    /// The median of the connected peers' clock offsets, ms: each peer's clock less this
    /// node's, as the time of the latest block it relayed by gossip shows it; none while no
    /// peer has relayed one.
    #[serde(default)]
    pub clock_offset_ms: Option<i64>,
    /// True while that median is further from this node's clock (either way) than a block's
    /// time may be ahead of it (the chain's `max_future_drift_ms`): this node's clock, or its
    /// peers', is wrong. The node logs a warning when it turns true.
    #[serde(default)]
    pub clock_warning: bool,
    /// Whether the node can write its data directory.
    #[serde(default)]
    pub storage: StorageStatus,
}

/// `GET /status`'s `storage`: whether the node can write its data directory. In any state but
/// `ok` it takes no blocks and no transactions (`POST /txs` answers 503, code `storage`) and
/// mines nothing; `/status` keeps answering. After a failed write the store refuses reads as
/// well until the node restarts (what it answers from memory — status, tip, mempool — it
/// still answers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StorageStatus {
    /// `ok`; `low`: the data directory's filesystem has less free space than
    /// `min_free_bytes` (the node goes on by itself once space is freed); `full`: a write
    /// failed for want of space; `failed`: a write failed otherwise. After `full` or `failed`
    /// the node holds every block it had committed and goes on once restarted (with space
    /// freed).
    pub state: String,
    /// Free bytes on the data directory's filesystem (available to the node's user) at the
    /// last check, if it could be read.
    #[serde(default)]
    pub free_bytes: Option<u64>,
    /// The free space the node keeps (`store.min_free_bytes`; 0: not checked).
    #[serde(default)]
    pub min_free_bytes: u64,
    /// Why the node stopped taking blocks and transactions, in any state but `ok`.
    #[serde(default)]
    pub error: Option<String>,
}

impl Default for StorageStatus {
    fn default() -> Self {
        StorageStatus { state: "ok".into(), free_bytes: None, min_free_bytes: 0, error: None }
    }
}

/// `GET /tip`: a main-chain position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Tip {
    /// Height.
    pub height: u64,
    /// Block hash.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub hash: Hash,
}

/// One event of `GET /events` (server-sent events: `event: <kind>`, `data: <JSON>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// `event: tip`, data a [`Tip`]: the main chain's tip when the stream opened, then after
    /// every change. Changes close together may come as one event (the newest tip), so a
    /// reader that needs every block reads the heights between two events.
    Tip(Tip),
}

impl NodeEvent {
    /// The event of kind `event` with `data`; `Ok(None)` for a kind this client does not know
    /// (a newer node may send more kinds).
    pub fn parse(event: &str, data: &str) -> Result<Option<NodeEvent>, String> {
        match event {
            "tip" => crate::decode::decode_json(data.as_bytes())
                .map(|t| Some(NodeEvent::Tip(t)))
                .map_err(|e| format!("event `tip`: {e}")),
            _ => Ok(None),
        }
    }
}

/// `GET /peers`: what the node knows of one connected peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PeerInfo {
    /// Its peer id.
    pub peer_id: String,
    /// The address of the connection.
    pub addr: String,
    /// Its role from the handshake (unknown until it answers).
    pub role: Option<String>,
    /// The tip height it last claimed: in its handshake, in the `Hello` the node asks of it
    /// again every 5 s, or by a block it relayed or served.
    pub height: u64,
    /// Its score (0 is good; bans happen at -100).
    pub score: i32,
    /// The round trip of the last ping answered (libp2p's ping, every 15 s), µs; none before
    /// the first.
    #[serde(default)]
    pub rtt_us: Option<u64>,
    /// When it last gave this node a block the node did not have (by gossip or sync) that was
    /// connected or stored on a side branch, ms since the Unix epoch; none before the first.
    #[serde(default)]
    pub last_block_ms: Option<u64>,
}

/// `GET /blocks/{id}/txids`: a block's transaction ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BlockTxids {
    /// Height.
    pub height: u64,
    /// Block hash.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub hash: Hash,
    /// Block time, ms since the Unix epoch.
    pub time: u64,
    /// Txids in block order (the coinbase first).
    #[schema(value_type = Vec<String>)]
    pub txids: Vec<Hash>,
}

/// Where a transaction is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TxState {
    /// In the mempool.
    Mempool,
    /// In a block of the main chain.
    Confirmed,
}

impl fmt::Display for TxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TxState::Mempool => "mempool",
            TxState::Confirmed => "confirmed",
        })
    }
}

/// `GET /txs/{txid}`: a transaction and where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TxStatus {
    /// `mempool` or `confirmed`.
    pub status: TxState,
    /// Height of the confirming block.
    pub height: Option<u64>,
    /// The transaction (the chain's JSON form; `raw` is authoritative).
    pub tx: TxJson,
}

/// `POST /txs` body: transactions to submit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SubmitTxs {
    /// Canonical encodings, hex.
    pub txs: Vec<String>,
}

impl SubmitTxs {
    /// The body submitting `txs`, in order.
    pub fn encode(txs: &[Tx]) -> SubmitTxs {
        SubmitTxs { txs: txs.iter().map(|t| hex::encode(t.encode())).collect() }
    }
}

/// The verdict on one submitted transaction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TxResult {
    /// Txid (absent if the transaction did not decode).
    #[schema(value_type = Option<String>, pattern = "^[0-9a-f]{64}$")]
    pub txid: Option<Hash>,
    /// Taken into the mempool?
    pub accepted: bool,
    /// Rule or policy that refused it.
    pub reason: Option<String>,
    /// Details of the refusal.
    pub detail: Option<String>,
}

/// `POST /txs` answer: the verdicts of a submission, in the order sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SubmitResult {
    /// How many were accepted.
    pub accepted: usize,
    /// One verdict per transaction.
    pub results: Vec<TxResult>,
}

/// `GET /utxos/{owner}`: one unspent output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UtxoJson {
    /// Txid of the creating transaction.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub txid: Hash,
    /// Output index.
    pub index: u32,
    /// Value.
    #[schema(value_type = u64)]
    pub value: Amount,
    /// Lock scheme.
    #[schema(value_type = String, example = "ed25519")]
    pub scheme: Scheme,
    /// `H(pubkey)`.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub pubkey_hash: Hash,
    /// Height of the creating block.
    pub height: u64,
    /// Created by a coinbase?
    pub coinbase: bool,
}

impl UtxoJson {
    /// Where the output is.
    pub fn outpoint(&self) -> OutPoint {
        OutPoint { txid: self.txid, index: self.index }
    }

    /// The output.
    pub fn txout(&self) -> TxOut {
        TxOut { value: self.value, lock: Lock { scheme: self.scheme, pubkey_hash: self.pubkey_hash } }
    }
}

/// `GET /mempool`: mempool contents and counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MempoolJson {
    /// Transactions held.
    pub count: usize,
    /// Bytes held.
    pub bytes: u64,
    /// Txids (at most `limit`).
    #[schema(value_type = Vec<String>)]
    pub txids: Vec<Hash>,
    /// Admitted since start.
    pub admitted: u64,
    /// Refused since start, by reason.
    pub rejected: BTreeMap<String, u64>,
    /// Evicted since start.
    pub evicted: u64,
}

/// `GET /mempool/removed`: one transaction that left the mempool unconfirmed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RemovalJson {
    /// Position in the node's removal log (the first is 1).
    pub seq: u64,
    /// The transaction.
    #[schema(value_type = String, pattern = "^[0-9a-f]{64}$")]
    pub txid: Hash,
    /// Why it left: `evicted` (for transactions paying a higher fee rate), `conflict` (a block
    /// spent its input or took its application key), `expired` (no later block may include
    /// it), `dropped` (it failed re-admission after a reorganisation), `not-returned` (it was
    /// in a disconnected block and was refused back).
    pub kind: String,
    /// For `dropped` and `not-returned`: the refusal's reason (as `POST /txs` names it).
    pub reason: Option<String>,
}

/// `GET /mempool/removed?after=&limit=`: a page of the node's log of transactions that left the
/// mempool unconfirmed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RemovedJson {
    /// Entries after the position asked for, oldest first.
    pub entries: Vec<RemovalJson>,
    /// The oldest position the log still keeps: entries before it were forgotten.
    pub oldest: u64,
    /// The last position written (0: nothing has left unconfirmed since the node started).
    pub last: u64,
}

/// One entry of the arrival log: when a transaction was first admitted to the node's mempool,
/// or a block first taken by its chain, and from where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ArrivalJson {
    /// Its position in the log (from 1).
    pub seq: u64,
    /// `tx` or `block`.
    pub kind: String,
    /// The txid or block hash.
    #[schema(value_type = String)]
    pub id: Hash,
    /// A block's height (none for a transaction).
    pub height: Option<u64>,
    /// For a block: µs its acceptance waited for the chain's write lock (readers held it:
    /// admission rounds, the miner's template, the API). None for a transaction, and from a
    /// node that does not say.
    #[serde(default)]
    pub lock_wait_us: Option<u64>,
    /// For a block: µs its acceptance then held the write lock (validation, commit, the
    /// mempool brought up to date); with `lock_wait_us`, the block's commit time.
    #[serde(default)]
    pub lock_held_us: Option<u64>,
    /// The node's wall clock when it arrived, µs since the Unix epoch (for a block, when its
    /// acceptance ended).
    pub at_us: u64,
    /// `api`, `gossip` (forwarded by `peer`), `pool` (fetched from `peer`'s mempool), `sync`
    /// (a sync response from `peer`), `released` (from the orphan pool) or `mined` (this node's
    /// miner).
    pub source: String,
    /// The peer it came through, for `gossip`, `pool` and `sync`.
    pub peer: Option<String>,
}

/// `GET /arrivals?after=&limit=`: a page of the node's arrival log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ArrivalsJson {
    /// Entries after the position asked for, oldest first.
    pub entries: Vec<ArrivalJson>,
    /// The oldest position the log still keeps: entries before it were forgotten.
    pub oldest: u64,
    /// The last position written (0: nothing arrived yet).
    pub last: u64,
    /// The node's wall clock when it answered, µs since the Unix epoch (to estimate its offset
    /// from the reader's clock over the request's round trip).
    pub now_us: u64,
}

/// `GET /profile`: the node's function profile (seed 001's profiler), call paths in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProfileJson {
    /// Is the profiler recording now?
    pub enabled: bool,
    /// Seconds it has recorded, over every run whose statistics were kept.
    pub recorded_s: f64,
    /// Starts of the node that merged earlier statistics back from the data directory.
    pub restarts: u64,
    /// Call paths (`outer -> inner`), in path order, after `after` if given.
    pub paths: Vec<ProfilePath>,
    /// More paths follow the last one listed (ask again with `after` = its path).
    pub more: bool,
}

/// The statistics of one call path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProfilePath {
    /// The names of the nested spans, outermost first, joined by ` -> `.
    pub path: String,
    /// Times it ran.
    pub count: u64,
    /// Total time, ns.
    pub total_ns: u64,
    /// Total time minus the time of nested profiled spans, ns.
    pub exclusive_ns: u64,
    /// Longest run, ns.
    pub max_ns: u64,
    /// Runs by duration: entry `i` counts those of `[2^i, 2^(i+1))` ns; 40 entries.
    pub log2: Vec<u64>,
    /// Seed 001's histogram centred on the mean of the first 100 runs, once there were 100.
    pub centred: Option<CentredJson>,
}

/// Seed 001's centred histogram: 100 buckets of `width_ns` from `low_ns`, 50 on each side of
/// `centre_ns`, and the runs that fell outside.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CentredJson {
    /// The centre: the mean of the first 100 runs, ns.
    pub centre_ns: u64,
    /// Bucket width, ns (at least 1).
    pub width_ns: u64,
    /// Counts, lowest bucket first (100).
    pub buckets: Vec<u64>,
    /// Runs below the first bucket.
    pub under: u64,
    /// Runs at or past the end of the last bucket.
    pub over: u64,
}

/// `POST /profile`: what to change (absent fields change nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileControl {
    /// Turn recording on or off.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Forget every statistic and the recorded time (in memory and in the data directory).
    #[serde(default)]
    pub reset: bool,
}

/// The profiler's state after a `POST /profile`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProfileStatus {
    /// Is it recording?
    pub enabled: bool,
    /// Seconds recorded.
    pub recorded_s: f64,
    /// Call paths held.
    pub paths: usize,
}

/// `GET /apps/{kind}/state/{key}`: one application state entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppEntry {
    /// Key inside the module's namespace, hex.
    pub key: String,
    /// Value, hex.
    pub value: String,
}

impl AppEntry {
    /// The key's bytes.
    pub fn key_bytes(&self) -> Result<Vec<u8>, hex::FromHexError> {
        hex::decode(&self.key)
    }

    /// The value's bytes.
    pub fn value_bytes(&self) -> Result<Vec<u8>, hex::FromHexError> {
        hex::decode(&self.value)
    }
}

/// `GET /apps/{kind}/state`: a page of application state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppEntries {
    /// The module's transaction kind.
    pub kind: u8,
    /// Tip height the entries were read at.
    pub height: u64,
    /// Entries in key order.
    pub entries: Vec<AppEntry>,
    /// More entries follow the last one (ask again with `after` = its key).
    pub more: bool,
}

/// The query of `GET /apps/{kind}/state`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppRange {
    /// Only keys starting with these bytes (inside the module's namespace).
    pub prefix: Vec<u8>,
    /// Only keys after this one.
    pub after: Option<Vec<u8>>,
    /// At most this many entries (the node's default is 100, its maximum 1,000).
    pub limit: Option<usize>,
}

/// What `DATA_DIR/node.json` says once a node is up (read by the launcher and scripts).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NodeInfo {
    /// libp2p peer id.
    pub peer_id: String,
    /// P2P addresses with `/p2p/<peer id>`.
    pub p2p: Vec<String>,
    /// API address (`host:port`), if the API is on.
    pub api: Option<String>,
    /// Role.
    pub role: String,
    /// Process id.
    pub pid: u32,
}

/// A block named by its height or its hash (`/blocks/{id}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockId {
    /// A main-chain height.
    Height(u64),
    /// A block hash.
    Hash(Hash),
}

impl From<u64> for BlockId {
    fn from(h: u64) -> BlockId {
        BlockId::Height(h)
    }
}

impl From<Hash> for BlockId {
    fn from(h: Hash) -> BlockId {
        BlockId::Hash(h)
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockId::Height(h) => write!(f, "{h}"),
            BlockId::Hash(h) => write!(f, "{h}"),
        }
    }
}

/// Why a string names no block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: give a height or a block hash (64 lowercase hex digits)")]
pub struct ParseBlockIdError(pub String);

impl FromStr for BlockId {
    type Err = ParseBlockIdError;
    fn from_str(s: &str) -> Result<BlockId, ParseBlockIdError> {
        if let Ok(h) = s.parse::<u64>() {
            return Ok(BlockId::Height(h));
        }
        s.parse::<Hash>().map(BlockId::Hash).map_err(|_| ParseBlockIdError(s.chars().take(80).collect()))
    }
}

/// Whose outputs `GET /utxos/{owner}` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// `H(pubkey)` of the lock.
    PubkeyHash(Hash),
    /// A bech32m address (`scdev1...`); the node decodes it.
    Address(String),
}

impl From<Hash> for Owner {
    fn from(h: Hash) -> Owner {
        Owner::PubkeyHash(h)
    }
}

impl From<&Lock> for Owner {
    fn from(l: &Lock) -> Owner {
        Owner::PubkeyHash(l.pubkey_hash)
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::PubkeyHash(h) => write!(f, "{h}"),
            Owner::Address(a) => f.write_str(a),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn events_parse_by_kind_skip_unknown_kinds_and_name_what_does_not_parse() {
        let hash = "ab".repeat(32);
        let tip = NodeEvent::parse("tip", &format!("{{\"height\": 7, \"hash\": \"{hash}\"}}")).unwrap();
        assert_eq!(tip, Some(NodeEvent::Tip(Tip { height: 7, hash: hash.parse().unwrap() })));
        assert_eq!(NodeEvent::parse("mempool", "{}").unwrap(), None, "a newer node's kind is skipped");
        let e = NodeEvent::parse("tip", "{\"height\": 7}").unwrap_err();
        assert!(e.starts_with("event `tip`: ") && e.contains("hash"), "{e}");
    }

    #[test]
    fn block_ids_parse_heights_and_hashes_and_name_what_is_neither() {
        assert_eq!("12".parse::<BlockId>(), Ok(BlockId::Height(12)));
        let h = "ab".repeat(32);
        assert_eq!(h.parse::<BlockId>().unwrap().to_string(), h);
        let e = "nope".parse::<BlockId>().unwrap_err();
        assert_eq!(e.to_string(), "\"nope\": give a height or a block hash (64 lowercase hex digits)");
        assert!("AB".repeat(32).parse::<BlockId>().is_err(), "hashes are lowercase");
    }

    #[test]
    fn typed_fields_keep_the_api_json_forms() {
        let t = Tip { height: 3, hash: Hash([0xab; 32]) };
        assert_eq!(
            serde_json::to_value(t).unwrap(),
            serde_json::json!({"height": 3, "hash": "ab".repeat(32)})
        );
        let u = UtxoJson {
            txid: Hash([1; 32]),
            index: 2,
            value: Amount::new(5).unwrap(),
            scheme: Scheme::Secp256k1,
            pubkey_hash: Hash([2; 32]),
            height: 7,
            coinbase: true,
        };
        let v = serde_json::to_value(u).unwrap();
        assert_eq!((v["value"].as_u64(), v["scheme"].as_str()), (Some(5), Some("secp256k1")));
        assert_eq!(serde_json::from_value::<UtxoJson>(v).unwrap(), u);
        let s = TxState::Confirmed;
        assert_eq!(serde_json::to_value(s).unwrap(), "confirmed");
        assert_eq!(s.to_string(), "confirmed");
        // An amount beyond 2^53 - 1 does not decode.
        let mut bad = serde_json::to_value(u).unwrap();
        bad["value"] = serde_json::json!(1u64 << 60);
        assert!(serde_json::from_value::<UtxoJson>(bad).is_err());
    }
}
