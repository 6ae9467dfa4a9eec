//! When each transaction and block first reached this node, and from where: the data of seed
//! 001's propagation experiment. A transaction is logged when the mempool first admits it, a
//! block when the chain first takes it (connected, on a side branch, or held for its parent),
//! with how long its acceptance waited for the chain's write lock and then held it; each with
//! the node's wall clock in microseconds and its source. The log keeps the newest
//! `arrivals.capacity` entries and is read in pages (`GET /arrivals?after=&limit=`), so an
//! experiment collects them from every node.

use parking_lot::Mutex;
use scalechain_p2p::net::PeerId;
use scalechain_types::seqlog::{Page, SeqLog, Sequenced};
use scalechain_types::Hash;

/// What arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A transaction, admitted to the mempool.
    Tx,
    /// A block, taken by the chain.
    Block {
        /// Its height.
        height: u64,
        /// µs its acceptance waited for the chain's write lock.
        lock_wait_us: u64,
        /// µs it then held the lock (validation, commit, the mempool brought up to date).
        lock_held_us: u64,
    },
}

/// Where it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// `POST /txs` on this node.
    Api,
    /// Gossip, forwarded by this peer.
    Gossip(PeerId),
    /// Another node's mempool, fetched after a handshake.
    Pool(PeerId),
    /// A sync response from this peer.
    Sync(PeerId),
    /// The orphan pool: its parent arrived (or a block confirmed it).
    Released,
    /// This node's miner.
    Mined,
}

impl Via {
    /// The API's name of the source: `api`, `gossip`, `pool`, `sync`, `released`, `mined`.
    pub fn name(&self) -> &'static str {
        match self {
            Via::Api => "api",
            Via::Gossip(_) => "gossip",
            Via::Pool(_) => "pool",
            Via::Sync(_) => "sync",
            Via::Released => "released",
            Via::Mined => "mined",
        }
    }

    /// The peer it came through, if any.
    pub fn peer(&self) -> Option<PeerId> {
        match self {
            Via::Gossip(p) | Via::Pool(p) | Via::Sync(p) => Some(*p),
            _ => None,
        }
    }
}

/// One entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Its position in the log (from 1).
    pub seq: u64,
    /// Transaction or block.
    pub kind: Kind,
    /// The txid or block hash.
    pub id: Hash,
    /// The node's wall clock when it arrived, µs since the Unix epoch.
    pub at_us: u64,
    /// Where it came from.
    pub from: Via,
}

impl Sequenced for Arrival {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// The node's arrival log.
#[derive(Debug)]
pub struct Arrivals(Mutex<SeqLog<Arrival>>);

impl Arrivals {
    /// A log keeping the newest `capacity` arrivals (0: none).
    pub fn new(capacity: usize) -> Arrivals {
        Arrivals(Mutex::new(SeqLog::new(capacity)))
    }

    /// Logs `ids` (in order), all arrived at `at_us` from `from`.
    pub fn record(&self, kind: Kind, ids: impl IntoIterator<Item = Hash>, at_us: u64, from: Via) {
        // Most rounds of the pipeline release no orphan: no lock for nothing.
        let mut ids = ids.into_iter().peekable();
        if ids.peek().is_none() {
            return;
        }
        let mut log = self.0.lock();
        for id in ids {
            log.push_with(|seq| Arrival { seq, kind, id, at_us, from });
        }
    }

    /// At most `limit` arrivals after position `after`, oldest first.
    pub fn page(&self, after: u64, limit: usize) -> Page<Arrival> {
        self.0.lock().page(after, limit)
    }
}

/// The wall clock, µs since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_logged_in_order_with_their_source_and_bounded() {
        let log = Arrivals::new(3);
        let peer = PeerId::random();
        log.record(Kind::Tx, [Hash([1; 32]), Hash([2; 32])], 10, Via::Gossip(peer));
        let block = Kind::Block { height: 7, lock_wait_us: 5, lock_held_us: 6 };
        log.record(block, [Hash([3; 32])], 20, Via::Mined);
        log.record(Kind::Tx, [Hash([4; 32])], 30, Via::Api);
        let p = log.page(0, 10);
        assert_eq!((p.oldest, p.last), (2, 4));
        assert_eq!(p.entries.iter().map(|a| a.id.0[0]).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!((p.entries[0].from.name(), p.entries[0].from.peer()), ("gossip", Some(peer)));
        assert_eq!(p.entries[1].kind, block);
        assert_eq!((p.entries[2].at_us, p.entries[2].from.peer()), (30, None));
        assert!(now_us() > 1_700_000_000_000_000);
    }
}
