//! Node settings: every field has a documented default, so a node runs with no file at all;
//! `--config FILE` reads a TOML file of the same shape (unknown keys are an error), and the
//! command line overrides it. `scalechain node --print-config` prints the defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use scalechain_consensus::params::{SigMode, DEVNET_GENESIS_TIME};
use scalechain_consensus::VerifyMode;
use scalechain_mempool::{MempoolConfig, OrphanConfig};
use scalechain_p2p::msg::Role;
use scalechain_store::StoreMemory;
use scalechain_types::{Amount, HashKind};

/// Everything a node needs to start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NodeConfig {
    /// `bootstrap`, `peer` or `miner`.
    #[serde(with = "role_name")]
    pub role: Role,
    /// Data directory (chain store, node key, API token, `node.json`).
    pub data_dir: PathBuf,
    /// Chain parameters (the devnet family: hash function and signature schemes).
    pub chain: ChainSection,
    /// Peer-to-peer settings.
    pub p2p: P2pSection,
    /// HTTP API settings.
    pub api: ApiSection,
    /// Transaction pipeline and mempool.
    pub mempool: MempoolSection,
    /// Mining (role `miner` only).
    pub miner: MinerSection,
    /// The chain store's memory, and the free space its filesystem keeps.
    pub store: StoreSection,
    /// The function profiler (seed 001's), `GET /profile`.
    pub profile: ProfileSection,
    /// The log of when transactions and blocks arrived, `GET /arrivals`.
    pub arrivals: ArrivalsSection,
    /// The web explorer, `/explorer`.
    pub explorer: ExplorerSection,
    /// Shifts this node's clock by this many ms (positive: ahead) wherever it decides by time
    /// (blocks' times when mining, the future-drift rule when accepting, the peer protocol).
    /// For tests of a wrong clock only; 0 by default.
    pub clock_offset_ms: i64,
}

/// The web explorer: read-only pages served on the API's address under `/explorer` (the
/// [`Pages`](crate::Pages) the node's caller mounts there: `scalechain node` mounts the
/// explorer's).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ExplorerSection {
    /// Serve it? Unset (the default): yes when the API listens on loopback, no otherwise
    /// (serving it beyond loopback is a choice made with `true`). When the API has a token,
    /// every explorer page asks for it.
    pub enabled: Option<bool>,
    /// A `scalechain study` output directory (its `report.md`, CSV and SVG files) shown at
    /// `/explorer/study`, with the directories below it that hold a report of their own.
    pub study_dir: Option<PathBuf>,
}

impl ExplorerSection {
    /// Is the explorer served when the API listens on `api`?
    pub fn serves(&self, api: &SocketAddr) -> bool {
        self.enabled.unwrap_or(api.ip().is_loopback())
    }
}

/// The arrival log: when each transaction was first admitted and each block first taken, and
/// from where (seed 001's propagation data).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ArrivalsSection {
    /// Arrivals kept, the newest (about 100 bytes each; 0 keeps none). Default 100,000.
    pub capacity: usize,
}

impl Default for ArrivalsSection {
    fn default() -> Self {
        ArrivalsSection { capacity: 100_000 }
    }
}

/// The function profiler: spans on the node's hot paths aggregated per call path, persisted in
/// `DATA_DIR/profile.json` and merged back at the next start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileSection {
    /// Record from the start (`POST /profile` turns it on and off at run time). Off, a span
    /// costs one atomic load. Default off.
    pub enabled: bool,
    /// Seconds between writes of the statistics to `DATA_DIR/profile.json` while recording
    /// (and once at shutdown); at least 1. Default 30.
    pub save_every_s: u64,
}

impl Default for ProfileSection {
    fn default() -> Self {
        ProfileSection { enabled: false, save_every_s: 30 }
    }
}

/// The chain store and its indexes: the store's memory bounds, the free space it keeps, and
/// which indexes the node keeps (the txid index in the store, the owner index in memory).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    /// Block cache: bytes of on-disk tables kept decoded in memory. Default 16 MiB.
    pub cache_bytes: u64,
    /// Memtables (writes not yet in on-disk tables), as the store engine counts them; past it
    /// they are written out (the heap they take is up to about twice this). At least 1 MiB.
    /// Default 32 MiB.
    pub memtable_bytes: u64,
    /// Free space the data directory's filesystem keeps: below it the node stops taking blocks
    /// and transactions (`GET /status` says so under `storage`) until space is freed. Default
    /// 50 MiB (Bitcoin Core's margin); 0 turns the check off (a full disk is still caught
    /// when a write fails).
    pub min_free_bytes: u64,
    /// Keep the txid index (txid → block, for `GET /txs/{txid}`, the explorer, wallets and the
    /// mempool's "already confirmed" answer). Default true. Off, the node spends nothing on it,
    /// `GET /txs/{txid}` finds mempool transactions only, and a transaction spending outputs of
    /// a confirmed transaction that are all spent waits as an orphan (until it expires) instead
    /// of being refused at once, as in a node without the index in Bitcoin Core. Switched on
    /// again, the index is brought up to date from where it stopped when the node starts.
    pub tx_index: bool,
    /// Keep the owner index (pubkey hash → its coins, for `GET /utxos/{owner}`, the explorer's
    /// address pages and wallets). Default true. It lives in memory beside the UTXO set, is built
    /// from it when the node starts and changes with every block. Off, the node never builds it
    /// and spends nothing on it, and lookups by owner answer 404 saying so (the explorer's
    /// address pages show the history only).
    pub owner_index: bool,
}

impl Default for StoreSection {
    fn default() -> Self {
        let d = StoreMemory::default();
        StoreSection {
            cache_bytes: d.cache_bytes,
            memtable_bytes: d.memtable_bytes,
            min_free_bytes: 50 << 20,
            tx_index: true,
            owner_index: true,
        }
    }
}

impl StoreSection {
    /// The store's memory bounds, or what is wrong with the settings.
    pub fn memory(&self) -> Result<StoreMemory, String> {
        if self.memtable_bytes < 1 << 20 {
            return Err(format!(
                "store.memtable_bytes = {} is below the minimum 1048576 (1 MiB)",
                self.memtable_bytes
            ));
        }
        Ok(StoreMemory { cache_bytes: self.cache_bytes, memtable_bytes: self.memtable_bytes })
    }
}

/// Which chain.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ChainSection {
    /// Hash function: `sha256`, `sha512_256` or `blake3`. Default `sha256`.
    pub hash: HashKind,
    /// Signature schemes: `ed25519`, `secp256k1` or `mixed`. Default `ed25519`.
    pub sig: SigMode,
    /// Signature verification strategy. Default `parallel`.
    pub verify_mode: VerifyMode,
    /// Worker threads for verification (0 = one per core). Default 0.
    pub verify_threads: usize,
    /// The chain's target interval between blocks, ms. A consensus parameter: any other value
    /// than the devnet's makes another chain, with another id, that only nodes configured the
    /// same join. Default 1000 (the devnet's).
    pub target_block_ms: u64,
    /// The chain's genesis time, ms since the Unix epoch. A consensus parameter, like
    /// `target_block_ms`: another value makes another chain, with another id. For networks
    /// whose clocks start elsewhere than today's, such as a network simulator's (Shadow's
    /// starts at 2000-01-01): a miner paces its blocks from its parent's time, so a clock
    /// before genesis mines nothing. Default 1767225600000 (the devnet's, 2026-01-01).
    pub genesis_time_ms: u64,
    /// Study only: a chain whose genesis declares that input signatures are not verified
    /// (`docs/PROTOCOL.md` §3.4), to measure what signatures cost end to end. Another chain,
    /// with another id; no chain that does not declare it ever skips a signature. Default
    /// false.
    pub skip_signatures: bool,
}

/// Peer-to-peer settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct P2pSection {
    /// Listen addresses. Default `/ip4/127.0.0.1/tcp/0` (an OS-chosen port on loopback).
    pub listen: Vec<String>,
    /// Nodes to join through (multiaddrs ending in `/p2p/<peer id>`). Default none.
    pub bootstrap: Vec<String>,
    /// Find and dial peers beyond `bootstrap` (Kademlia, addresses peers announce, the peer
    /// book). Off, the node connects only to its bootstrap addresses and to who dials it: a
    /// fixed topology, as the study's emulated WAN builds (every link through a delaying
    /// relay). Default on.
    pub discover: bool,
    /// Most connected peers (established connections: this plus 16 of room, in which a
    /// newcomer connects while an idle or low-scored peer is evicted for it). Default 64.
    pub max_connections: u32,
    /// Seconds a connection may take to be set up (noise and yamux) and then to complete the
    /// handshake (`Hello`); past either it is closed. Default 5.
    pub handshake_timeout_s: u64,
    /// Inbound connections one IP address may have being set up at once. Default 16.
    pub max_pending_per_ip: u32,
    /// Established inbound connections one IP address may have. Default 32.
    pub max_connections_per_ip: u32,
    /// Largest gossip message in bytes. Default 16 MiB.
    pub max_message_bytes: usize,
    /// Transactions per gossip message, at most. Default 2,000.
    pub max_txs_per_message: usize,
    /// Inbound sync requests per second per peer (burst 4× this). Default 50.
    pub requests_per_s: f64,
    /// Transactions fetched of a peer's mempool per mempool sync (after the handshake, and
    /// after a block once the pool had no room for gossip), at most; 0 turns it off. Default
    /// 100,000.
    pub mempool_sync_txs: usize,
    /// Bytes of transactions fetched of a peer's mempool per sync, at most. Default 64 MiB.
    pub mempool_sync_bytes: usize,
    /// Publish mined blocks in compact form (header, coinbase, and each other transaction's
    /// txid and wtxid: receivers rebuild them from their mempools and fetch what they lack)
    /// rather than whole. Either form is
    /// received and relayed regardless. Default on.
    pub compact_blocks: bool,
}

/// HTTP API settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApiSection {
    /// Listen address; `127.0.0.1:0` picks a free port. Default `127.0.0.1:8645`. Set to
    /// `off` to disable.
    pub listen: String,
    /// Token that write endpoints require as `Authorization: Bearer <token>`. When the API
    /// listens beyond loopback and no token is set, one is generated into `DATA_DIR/api_token`.
    pub token: Option<String>,
    /// Largest request body in bytes. Default 32 MiB.
    pub max_body_bytes: usize,
    /// Transactions per submission, at most. Default 10,000.
    pub max_txs_per_request: usize,
    /// Connections served at once, at most (never more than the open-file limit leaves the API
    /// once the peer-to-peer sockets and the store have theirs); at the cap a newcomer closes
    /// the connection idle longest, and waits in the listen backlog only while every
    /// connection is busy. Default 16,384.
    pub max_connections: usize,
    /// Seconds a client has to send a request's headers (and to start the next request on an
    /// idle connection) before the connection is closed. Default 10.
    pub header_timeout_s: u64,
    /// Seconds a request body may send nothing before the request fails (400). Default 10.
    pub body_timeout_s: u64,
    /// Seconds a request may take in all before it is answered 408 (`timeout`). Default 60.
    pub request_timeout_s: u64,
}

/// Transaction pipeline and mempool settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MempoolSection {
    /// Batches waiting between the receive and verify stages; a full buffer makes senders
    /// wait (back-pressure). Default 256.
    pub buffer: usize,
    /// Most transactions verified together. Default 4,096.
    pub max_batch: usize,
    /// Seed 000's group size: transactions collected from the buffer before verification
    /// starts (at most `max_batch`), waiting up to `group_wait_ms` for them. Default 1: verify
    /// whatever is queued at once, which serves latency best (a lone transaction never waits);
    /// under load the queue fills groups by itself.
    pub group_size: usize,
    /// Longest wait for a group to fill, ms, after its first transaction. Default 5.
    pub group_wait_ms: u64,
    /// Most pooled transactions. Default 500,000.
    pub max_txs: usize,
    /// Most pooled bytes. Default 300 MB.
    pub max_bytes: usize,
    /// Minimum fee per 1,000 bytes. Default 1.
    pub min_fee_rate: u64,
    /// Most bytes of fee-less application transactions (ballots: no inputs, so no fee) held
    /// below `min_fee_rate`; their module's rules bound how many can exist. 0 refuses them.
    /// Default 8 MB.
    pub max_fee_less_bytes: u64,
    /// Most of those bytes one group (the ballots of one election) may hold, so that no
    /// election's ballots crowd out another's. Default 2 MB.
    pub max_fee_less_group_bytes: u64,
    /// Outputs below this value are dust and refused. Default 1.
    pub dust_limit: u64,
    /// Longest chain of unconfirmed ancestors. Default 25.
    pub max_ancestors: usize,
    /// Largest set of unconfirmed descendants (itself included) a pooled transaction may
    /// reach. Default 25.
    pub max_descendants: usize,
    /// Transactions whose parent is unknown held in the orphan pool until it comes, at most
    /// (0: refuse them as `missing-input`). Default 5,000.
    pub orphans: usize,
    /// Bytes the orphan pool holds, at most. Default 10 MB.
    pub orphan_bytes: u64,
    /// Orphans one peer (or the API) may have in the pool, at most; its byte share is the
    /// same fraction of `orphan_bytes`. Default 1,250.
    pub orphans_per_peer: usize,
    /// Seconds an orphan waits for its parent before it leaves. Default 600.
    pub orphan_expiry_s: u64,
    /// Transactions that left the pool unconfirmed (evicted, conflicted, expired, dropped)
    /// remembered for `GET /mempool/removed`, newest kept; 0 keeps none. Default 50,000
    /// (about 3 MB).
    pub removed_log: usize,
    /// Signature verdicts remembered (wtxids of admitted transactions, so block connection does
    /// not verify their signatures again), first in, first out; about 100 bytes each. Default
    /// 200,000.
    pub sig_cache: usize,
    /// Study only: every reader of the pool (block templates, the API, the peer protocol's
    /// lookups) waits for the writers' lock and reads under it, as a pool guarded by one lock
    /// would, instead of reading the last published snapshot without locking (seed 003 §5.4,
    /// the study's `contention` experiment). Default false.
    pub single_lock: bool,
    /// Study only: each admission round of the verify stage first "executes" for this many
    /// ms, as seed 003's chaincode ran for a fixed time in every endorsement (§5.4, Tables 6.1
    /// / 6.2: 50, 200 and 500 ms; the study's `contention` experiment). 0 turns it off; at most
    /// [`MAX_EXECUTE_MS`]. Default 0.
    ///
    /// The execution is a sleep, not a computation: the seed's execution time was a fixed
    /// setting of its experiment, and what its lock cost was a commit waiting for that time to
    /// pass, not processor time. A busy loop that long in every round of four nodes sharing
    /// two cores would measure the cores taken from the rest of the node, with the lock and
    /// without it alike; a sleep holds the lock just as long and leaves the cores to the node.
    /// The verify stage runs one round at a time, so the sleep also bounds admission to
    /// `max_batch` transactions per round, with the lock and without it alike.
    pub execute_ms: u64,
    /// Study only: run that execution while admission holds the chain's read lock, inside the
    /// guard its judgement runs in, so a block's acceptance (the chain's only writer) waits for
    /// it — seed 003's baseline, where a commit waits for the transactions executing under
    /// the state database's read-write lock. Off, the execution runs before the read lock is
    /// taken and a block's acceptance never waits for it — the seed's lock-free change. Ours
    /// keeps a short read lock for the judgement itself (the chain must not move under a
    /// batch being judged), where the seed's single-key transactions needed none. Needs
    /// `execute_ms` above 0. Default false.
    pub execute_under_lock: bool,
}

/// The longest `mempool.execute_ms` a node takes, ms: a round longer than 10 s would outlast
/// the API's patience with a submission.
pub const MAX_EXECUTE_MS: u64 = 10_000;

/// The study's execution analogue of a node's admission rounds (`mempool.execute_ms`,
/// `mempool.execute_under_lock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Execution {
    /// How long each admission round executes, ms (above 0).
    pub ms: u64,
    /// Whether it runs under the chain's read lock (inside the judgement's guard) or before
    /// the lock is taken.
    pub under_lock: bool,
}

/// Why the execution settings were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    /// `execute_ms` above [`MAX_EXECUTE_MS`].
    #[error("mempool.execute_ms = {0} is above the most a node takes, {MAX_EXECUTE_MS}")]
    TooLong(u64),
    /// `execute_under_lock` without an execution to hold the lock for.
    #[error("mempool.execute_under_lock = true needs mempool.execute_ms above 0")]
    LockWithoutExecution,
}

/// Mining settings.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MinerSection {
    /// Hashing threads. Default 1.
    pub threads: usize,
    /// Wait about the chain's target interval after the parent before mining (drawn between
    /// 0.75 and 1.25 intervals, so competing miners do not stay in step), so an easy devnet
    /// does not burn CPU racing ahead of its schedule. Default true.
    pub pace: bool,
    /// Most transactions per block (besides the coinbase). Default 100,000.
    pub max_block_txs: usize,
    /// Seed of the key the rewards pay to (hex, 32 bytes); random if unset.
    pub reward_key: Option<String>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            role: Role::Peer,
            data_dir: PathBuf::from("./data/node"),
            chain: ChainSection::default(),
            p2p: P2pSection::default(),
            api: ApiSection::default(),
            mempool: MempoolSection::default(),
            miner: MinerSection::default(),
            store: StoreSection::default(),
            profile: ProfileSection::default(),
            arrivals: ArrivalsSection::default(),
            explorer: ExplorerSection::default(),
            clock_offset_ms: 0,
        }
    }
}

impl Default for ChainSection {
    fn default() -> Self {
        ChainSection {
            hash: HashKind::Sha256,
            sig: SigMode::Ed25519,
            verify_mode: VerifyMode::Parallel,
            verify_threads: 0,
            target_block_ms: 1_000,
            genesis_time_ms: DEVNET_GENESIS_TIME,
            skip_signatures: false,
        }
    }
}

impl Default for P2pSection {
    fn default() -> Self {
        P2pSection {
            listen: vec!["/ip4/127.0.0.1/tcp/0".into()],
            bootstrap: vec![],
            discover: true,
            max_connections: 64,
            handshake_timeout_s: 5,
            max_pending_per_ip: 16,
            max_connections_per_ip: 32,
            max_message_bytes: 16 << 20,
            max_txs_per_message: 2_000,
            requests_per_s: 50.0,
            mempool_sync_txs: 100_000,
            compact_blocks: true,
            mempool_sync_bytes: 64 << 20,
        }
    }
}

impl Default for ApiSection {
    fn default() -> Self {
        ApiSection {
            listen: "127.0.0.1:8645".into(),
            token: None,
            max_body_bytes: 32 << 20,
            max_txs_per_request: 10_000,
            max_connections: 16_384,
            header_timeout_s: 10,
            body_timeout_s: 10,
            request_timeout_s: 60,
        }
    }
}

impl Default for MempoolSection {
    fn default() -> Self {
        MempoolSection {
            buffer: 256,
            max_batch: 4_096,
            group_size: 1,
            group_wait_ms: 5,
            max_txs: 500_000,
            max_bytes: 300_000_000,
            min_fee_rate: 1,
            max_fee_less_bytes: 8_000_000,
            max_fee_less_group_bytes: 2_000_000,
            dust_limit: 1,
            max_ancestors: 25,
            max_descendants: 25,
            orphans: 5_000,
            orphan_bytes: 10_000_000,
            orphans_per_peer: 1_250,
            orphan_expiry_s: 600,
            removed_log: 50_000,
            sig_cache: 200_000,
            single_lock: false,
            execute_ms: 0,
            execute_under_lock: false,
        }
    }
}

impl Default for MinerSection {
    fn default() -> Self {
        MinerSection { threads: 1, pace: true, max_block_txs: 100_000, reward_key: None }
    }
}

impl MempoolSection {
    /// The study's execution these settings ask for: `None` when `execute_ms` is 0 (the
    /// default), an error for a value the node does not take.
    pub fn execution(&self) -> Result<Option<Execution>, ExecutionError> {
        match (self.execute_ms, self.execute_under_lock) {
            (0, true) => Err(ExecutionError::LockWithoutExecution),
            (0, false) => Ok(None),
            (ms, _) if ms > MAX_EXECUTE_MS => Err(ExecutionError::TooLong(ms)),
            (ms, under_lock) => Ok(Some(Execution { ms, under_lock })),
        }
    }

    /// The pool's settings these give (an error names a value the pool cannot take).
    pub fn pool_config(&self) -> Result<MempoolConfig, String> {
        Ok(MempoolConfig {
            max_bytes: self.max_bytes as u64,
            max_txs: self.max_txs,
            max_ancestors: self.max_ancestors,
            max_descendants: self.max_descendants,
            min_fee_rate: self.min_fee_rate,
            max_fee_less_bytes: self.max_fee_less_bytes,
            max_fee_less_group_bytes: self.max_fee_less_group_bytes,
            dust_limit: Amount::new(self.dust_limit).map_err(|e| format!("mempool.dust_limit: {e}"))?,
            orphans: self.orphan_config(),
            removed_log: self.removed_log,
            sig_cache_capacity: self.sig_cache,
            single_lock: self.single_lock,
            ..MempoolConfig::default()
        })
    }

    /// The orphan pool's limits these settings give.
    pub fn orphan_config(&self) -> OrphanConfig {
        let per_peer = self.orphans_per_peer.min(self.orphans);
        let share = if self.orphans == 0 {
            0
        } else {
            u64::try_from(u128::from(self.orphan_bytes) * per_peer as u128 / self.orphans as u128)
                .unwrap_or(u64::MAX)
        };
        OrphanConfig {
            max_txs: self.orphans,
            max_bytes: self.orphan_bytes,
            max_per_source: per_peer,
            max_bytes_per_source: share,
            expiry_ms: self.orphan_expiry_s.saturating_mul(1000),
        }
    }
}

impl NodeConfig {
    /// Reads a TOML file; fields it leaves out keep their defaults.
    pub fn from_toml(text: &str) -> Result<NodeConfig, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The defaults as TOML.
    pub fn default_toml() -> String {
        NodeConfig::default().to_toml()
    }

    /// These settings as TOML (what `from_toml` reads back).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }

    /// The API address, or `None` when the API is off.
    pub fn api_addr(&self) -> Result<Option<SocketAddr>, String> {
        if self.api.listen == "off" {
            return Ok(None);
        }
        self.api.listen.parse().map(Some).map_err(|e| format!("api.listen {:?}: {e}", self.api.listen))
    }
}

mod role_name {
    use super::Role;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(r: &Role, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_round_trip_through_toml_and_partial_files_keep_defaults() {
        let text = NodeConfig::default_toml();
        assert_eq!(NodeConfig::from_toml(&text).unwrap(), NodeConfig::default());
        let c = NodeConfig::from_toml("role = \"miner\"\n[miner]\nthreads = 3\n").unwrap();
        assert_eq!(c.role, Role::Miner);
        assert_eq!(c.miner.threads, 3);
        assert_eq!(c.mempool, MempoolSection::default());
    }

    #[test]
    fn the_explorer_is_served_on_loopback_unless_set_otherwise() {
        let (lo, any): (SocketAddr, SocketAddr) =
            ("127.0.0.1:8645".parse().unwrap(), "0.0.0.0:8645".parse().unwrap());
        let auto = ExplorerSection::default();
        assert!(auto.serves(&lo) && !auto.serves(&any));
        let on = NodeConfig::from_toml("[explorer]\nenabled = true\n").unwrap().explorer;
        assert!(on.serves(&lo) && on.serves(&any));
        let off = ExplorerSection { enabled: Some(false), ..ExplorerSection::default() };
        assert!(!off.serves(&lo) && !off.serves(&any));
    }

    #[test]
    fn orphan_settings_give_the_pools_limits_and_a_proportional_byte_share() {
        let o = MempoolSection::default().orphan_config();
        assert_eq!(
            (o.max_txs, o.max_bytes, o.max_per_source, o.max_bytes_per_source, o.expiry_ms),
            (5_000, 10_000_000, 1_250, 2_500_000, 600_000)
        );
        let off = MempoolSection { orphans: 0, ..MempoolSection::default() }.orphan_config();
        assert_eq!((off.max_txs, off.max_per_source, off.max_bytes_per_source), (0, 0, 0));
    }

    #[test]
    fn every_pool_setting_reaches_the_pool() {
        let m = MempoolSection {
            max_txs: 11,
            max_bytes: 12,
            min_fee_rate: 13,
            max_fee_less_bytes: 14,
            max_fee_less_group_bytes: 15,
            dust_limit: 16,
            max_ancestors: 17,
            max_descendants: 18,
            orphans: 19,
            removed_log: 20,
            sig_cache: 21,
            ..MempoolSection::default()
        };
        let c = m.pool_config().unwrap();
        assert_eq!(
            (
                c.max_txs,
                c.max_bytes,
                c.min_fee_rate,
                c.max_fee_less_bytes,
                c.max_fee_less_group_bytes,
                c.dust_limit.get(),
                c.max_ancestors,
                c.max_descendants,
                c.orphans.max_txs,
                c.removed_log,
                c.sig_cache_capacity
            ),
            (11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)
        );
        assert_eq!(c.orphans, m.orphan_config());
        let bad = MempoolSection { dust_limit: u64::MAX, ..MempoolSection::default() }.pool_config();
        assert!(bad.unwrap_err().starts_with("mempool.dust_limit"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors() {
        assert!(NodeConfig::from_toml("rol = \"miner\"").unwrap_err().contains("rol"));
        assert!(NodeConfig::from_toml("role = \"king\"").unwrap_err().contains("king"));
        let mut c = NodeConfig::default();
        c.api.listen = "nowhere".into();
        assert!(c.api_addr().is_err());
        c.api.listen = "off".into();
        assert_eq!(c.api_addr().unwrap(), None);
    }

    #[test]
    fn the_execution_settings_parse_and_bad_values_are_refused() {
        assert_eq!(NodeConfig::default().mempool.execution(), Ok(None));
        let read = |toml: &str| NodeConfig::from_toml(toml).unwrap().mempool.execution();
        assert_eq!(
            read("[mempool]\nexecute_ms = 200\nexecute_under_lock = true\n"),
            Ok(Some(Execution { ms: 200, under_lock: true }))
        );
        assert_eq!(read("[mempool]\nexecute_ms = 50\n"), Ok(Some(Execution { ms: 50, under_lock: false })));
        assert_eq!(read("[mempool]\nexecute_ms = 10000\n").unwrap().unwrap().ms, MAX_EXECUTE_MS);
        assert_eq!(read("[mempool]\nexecute_ms = 10001\n"), Err(ExecutionError::TooLong(10_001)));
        assert_eq!(read("[mempool]\nexecute_under_lock = true\n"), Err(ExecutionError::LockWithoutExecution));
        let e = ExecutionError::TooLong(10_001).to_string();
        assert!(e.starts_with("mempool.execute_ms = 10001"), "{e}");
        // Not a number of ms, or a negative one: refused when the file is read.
        assert!(NodeConfig::from_toml("[mempool]\nexecute_ms = -5\n").is_err());
        assert!(NodeConfig::from_toml("[mempool]\nexecute_ms = \"200ms\"\n").is_err());
        assert!(NodeConfig::from_toml("[mempool]\nexecute_under_lock = 1\n").is_err());
    }

    #[test]
    fn store_memory_settings_reach_the_store_and_a_budget_below_the_minimum_is_refused() {
        let c =
            NodeConfig::from_toml("[store]\ncache_bytes = 1048576\nmemtable_bytes = 134217728\n").unwrap();
        assert_eq!(
            c.store.memory().unwrap(),
            StoreMemory { cache_bytes: 1 << 20, memtable_bytes: 128 << 20 }
        );
        assert_eq!(NodeConfig::default().store.memory().unwrap(), StoreMemory::default());
        let low = NodeConfig::from_toml("[store]\nmemtable_bytes = 1000\n").unwrap();
        let e = low.store.memory().unwrap_err();
        assert!(e.starts_with("store.memtable_bytes = 1000 is below"), "{e}");
        assert!(NodeConfig::from_toml("[store]\ncache = 1\n").unwrap_err().contains("cache"));
    }
}
