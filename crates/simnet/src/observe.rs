//! What a large run keeps of its history when it keeps no events: when each block reached each
//! node, when each tracked transaction did, when transactions were submitted, and what was
//! mined. Propagation percentiles, stale rates and latencies are computed from these.
//!
//! A block "reaches" a node when the node's block worker finished accepting it (connected or
//! stored on a side branch) and told its machine, which then relays it: the moment a measuring
//! peer would see the node announce it. A transaction reaches a node when the node's
//! verification round that admitted it ended.
//!
//! Bounds: blocks are few (one per interval); transactions are followed only as
//! [`Tracking`] says (none by default), so a run of 10,000 nodes keeps a sample.
//!
//! Must not: change what the simulation does.

use std::collections::BTreeMap;

use scalechain_types::Hash;

use crate::wire::NodeId;

/// Which submitted transactions to follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tracking {
    /// None.
    #[default]
    None,
    /// Every one.
    All,
    /// The first submitted and every `n`th after it.
    EveryNth(u64),
}

/// A block a miner solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mined {
    /// Its hash.
    pub hash: Hash,
    /// Its height.
    pub height: u64,
    /// The miner.
    pub miner: NodeId,
    /// When it was solved, µs.
    pub at_us: u64,
    /// Its transactions, the coinbase left out.
    pub txs: usize,
    /// Its encoded size, bytes.
    pub bytes: usize,
}

/// The arrivals kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// Which transactions to follow.
    pub tracking: Tracking,
    /// Transactions submitted so far (tracked or not).
    submitted_count: u64,
    /// Tracked transactions: when they were submitted, µs.
    pub submitted: BTreeMap<Hash, u64>,
    /// Tracked transactions: each node that admitted one, and when, µs (in the order
    /// the simulator learnt of it, not always of time).
    pub txs: BTreeMap<Hash, Vec<(NodeId, u64)>>,
    /// Blocks: each node that accepted one, and when, µs (in the order the
    /// simulator learnt of it).
    pub blocks: BTreeMap<Hash, Vec<(NodeId, u64)>>,
    /// Blocks mined, in order.
    pub mined: Vec<Mined>,
}

impl Arrivals {
    /// A transaction was submitted at `at_us`: followed if the tracking says so.
    pub(crate) fn submitted(&mut self, txid: Hash, at_us: u64) {
        let n = self.submitted_count;
        self.submitted_count += 1;
        let follow = match self.tracking {
            Tracking::None => false,
            Tracking::All => true,
            Tracking::EveryNth(k) => n.is_multiple_of(k.max(1)),
        };
        if follow {
            self.submitted.insert(txid, at_us);
            self.txs.entry(txid).or_default();
        }
    }

    /// Is any transaction followed?
    pub(crate) fn following(&self) -> bool {
        !self.txs.is_empty()
    }

    /// `node` admitted `txid` (kept if it is followed).
    pub(crate) fn admitted(&mut self, node: NodeId, txid: &Hash, at_us: u64) {
        if let Some(v) = self.txs.get_mut(txid) {
            v.push((node, at_us));
        }
    }

    /// `node` accepted block `hash`.
    pub(crate) fn block(&mut self, node: NodeId, hash: Hash, at_us: u64) {
        self.blocks.entry(hash).or_default().push((node, at_us));
    }

    /// A block was mined.
    pub(crate) fn mined(&mut self, m: Mined) {
        self.mined.push(m);
    }

    /// Transactions submitted so far.
    pub fn submitted_count(&self) -> u64 {
        self.submitted_count
    }

    /// How long after it was mined block `hash` had reached `fraction` (0 to 1) of `nodes`
    /// nodes, µs; `None` if it never did (or was not mined here).
    pub fn block_reach_us(&self, hash: &Hash, fraction: f64, nodes: usize) -> Option<u64> {
        let mined = self.mined.iter().find(|m| m.hash == *hash)?;
        reach(self.blocks.get(hash)?, mined.at_us, fraction, nodes)
    }

    /// How long after it was submitted tracked transaction `txid` had reached `fraction` (0 to
    /// 1) of `nodes` nodes, µs; `None` if it never did (or is not tracked).
    pub fn tx_reach_us(&self, txid: &Hash, fraction: f64, nodes: usize) -> Option<u64> {
        reach(self.txs.get(txid)?, *self.submitted.get(txid)?, fraction, nodes)
    }
}

/// The time from `since` until `fraction` of `nodes` appear in `arrivals`.
fn reach(arrivals: &[(NodeId, u64)], since: u64, fraction: f64, nodes: usize) -> Option<u64> {
    let need = ((fraction.clamp(0.0, 1.0) * nodes as f64).ceil() as usize).max(1);
    let mut times: Vec<u64> = arrivals.iter().map(|&(_, t)| t).collect();
    times.sort_unstable();
    times.get(need - 1).map(|t| t.saturating_sub(since))
}
