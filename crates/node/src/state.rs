//! The state a node shares between its tasks: its replica (the chain behind a read-write lock —
//! readers are the API, the admission stage, the miner and the peer protocol; the only writer is
//! the block worker — and the mempool, lock-free for readers), peers and metrics. Confirmed
//! transactions are found through the chain store's persisted txid index.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use scalechain_chain::DiskStore;
use scalechain_p2p::msg::Role;
use scalechain_p2p::net::{Multiaddr, NetStats, PeerId};
use scalechain_replica::Replica;
use scalechain_types::Hash;

use crate::config::NodeConfig;
use crate::metrics::Metrics;

pub use scalechain_client::types::PeerInfo;

/// Everything the node's tasks share (the pages beside the API read it as a
/// [`NodeView`](crate::view::NodeView)).
pub struct Shared {
    /// The configuration it started with.
    pub cfg: NodeConfig,
    /// The chain and the mempool, with their synchronous steps.
    pub replica: Replica<DiskStore>,
    /// Metrics.
    pub metrics: Metrics,
    /// The function profiler's persisted statistics.
    pub profile: crate::profile::Persisted,
    /// When transactions and blocks arrived.
    pub arrivals: crate::arrivals::Arrivals,
    /// Network counters.
    pub net_stats: RwLock<Option<Arc<NetStats>>>,
    /// Connected peers.
    pub peers: RwLock<BTreeMap<PeerId, PeerInfo>>,
    /// This node's peer id.
    pub peer_id: PeerId,
    /// Addresses it listens on (with `/p2p/<id>`).
    pub listen: RwLock<Vec<Multiaddr>>,
    /// Start time.
    pub started: Instant,
    /// Set when the node is stopping.
    pub stopping: AtomicBool,
    /// Bumped on every change of tip, so waiters (miner, API) notice.
    pub tip_changed: tokio::sync::watch::Sender<(u64, Hash)>,
    /// The API's token, if it has one (`api.token`, or the one generated when it listens
    /// beyond loopback): write endpoints and every page ask for it.
    pub api_token: Option<Arc<str>>,
    /// Turns true when the API stops: open event streams end then.
    pub api_stop: tokio::sync::watch::Sender<bool>,
    /// The median of the peers' clock offsets and how many peers it is of (the peer
    /// protocol's [`clock_offset`](scalechain_p2p::protocol::Protocol::clock_offset), updated
    /// every tick); none while no peer relayed a block.
    pub clock: RwLock<Option<(i64, usize)>>,
    /// Whether the node can write its data directory (blocks and transactions are refused
    /// while it cannot).
    pub storage: crate::storage::Storage,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Shared {
    /// The node's clock: [`now_ms`] shifted by `clock_offset_ms` (0 but in tests).
    pub fn now_ms(&self) -> u64 {
        now_ms().saturating_add_signed(self.cfg.clock_offset_ms)
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.cfg.role
    }

    /// True once shutdown began.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }
}
