//! The state a node shares between its tasks: the chain (behind a read-write lock: readers are
//! the API, the admission stage and the miner; the only writer is the block worker), the
//! mempool (lock-free reads), peers and metrics. Confirmed transactions are found through the
//! chain store's persisted txid index.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::RwLock;
use scalechain_chain::{Chain, DiskStore};
use scalechain_consensus::Params;
use scalechain_mempool::{AdmitEnv, Mempool};
use scalechain_p2p::msg::{Hello, Role, PROTOCOL_VERSION};
use scalechain_p2p::net::{Multiaddr, NetStats, PeerId};
use scalechain_types::Hash;

use crate::config::NodeConfig;
use crate::metrics::Metrics;

pub use scalechain_client::types::PeerInfo;

/// Everything the node's tasks share.
pub struct Shared {
    /// The configuration it started with.
    pub cfg: NodeConfig,
    /// Chain parameters.
    pub params: Params,
    /// The chain id.
    pub chain_id: Hash,
    /// The chain.
    pub chain: RwLock<Chain<DiskStore>>,
    /// The mempool.
    pub mempool: Arc<Mempool>,
    /// Metrics.
    pub metrics: Metrics,
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
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Admission against `chain`'s tip: transactions are judged for the next block, at the
/// validator's clock.
pub fn admit_env<'a>(chain: &'a Chain<DiskStore>, chain_id: &'a Hash) -> AdmitEnv<'a> {
    AdmitEnv {
        params: chain.params(),
        chain_id,
        apps: chain.apps(),
        verify: chain.verify_config(),
        utxos: chain.utxos(),
        app_state: chain.app_state(),
        height: chain.tip_height() + 1,
        time: now_ms(),
    }
}

impl Shared {
    /// The node's handshake.
    pub fn hello(&self) -> Hello {
        let c = self.chain.read();
        Hello {
            version: PROTOCOL_VERSION,
            chain_id: self.chain_id,
            role: self.cfg.role,
            tip_height: c.tip_height(),
            tip_hash: c.tip(),
            agent: format!("scalechain/{}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.cfg.role
    }

    /// True once shutdown began.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Runs `f` with an admission environment at the current tip (holding the chain's read
    /// lock, so no block connects meanwhile).
    pub fn with_admit_env<R>(&self, f: impl FnOnce(&AdmitEnv<'_>) -> R) -> R {
        let c = self.chain.read();
        f(&admit_env(&c, &self.chain_id))
    }
}
