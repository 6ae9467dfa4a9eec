//! The signature cache: wtxids of transactions whose every signature verified at admission.
//!
//! The pool hands it to `verify_txs` (through `ConnectCtx::sig_cache`) and the node hands the
//! same `Arc` to `Chain::set_sig_cache`, so each signature is checked once per node: at
//! admission, not again when a block confirms the transaction, nor when a reorganisation
//! returns it to the pool. A wtxid commits to the whole encoding, witnesses included, and the
//! signed message depends only on the chain id and the txid, so a remembered verdict is the one
//! the engine would reach again (one cache serves one chain).
//!
//! Bounded: at capacity the oldest wtxid leaves (first in, first out), so entries outlive a
//! transaction's stay in the pool but not forever. Lookups take a shared lock (many verifier
//! threads at once); only the pool's writer inserts, once per admitted batch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

// Keys are hashes: foldhash, seeded per process, as in the pool.
use foldhash::HashSet;
use scalechain_consensus::SigCache;
use scalechain_types::Hash;

#[derive(Default)]
struct Inner {
    set: HashSet<Hash>,
    order: VecDeque<Hash>,
}

/// A bounded set of wtxids whose signatures verified.
pub struct SignatureCache {
    inner: RwLock<Inner>,
    capacity: usize,
    hits: AtomicU64,
    lookups: AtomicU64,
}

impl SignatureCache {
    /// An empty cache remembering at most `capacity` wtxids (0 remembers nothing).
    pub fn new(capacity: usize) -> SignatureCache {
        SignatureCache {
            inner: RwLock::new(Inner::default()),
            capacity,
            hits: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
        }
    }

    /// Most wtxids held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Wtxids held.
    pub fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(PoisonError::into_inner).set.len()
    }

    /// Holds nothing?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lookups that found their wtxid (each a transaction whose signatures were not checked
    /// again), since creation.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups since creation.
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    /// Remembers wtxids whose signatures verified, evicting the oldest past capacity. Only the
    /// pool calls this, for transactions it admitted.
    pub(crate) fn insert_many(&self, wtxids: impl IntoIterator<Item = Hash>) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        for w in wtxids {
            if !inner.set.insert(w) {
                continue;
            }
            inner.order.push_back(w);
            while inner.order.len() > self.capacity {
                if let Some(old) = inner.order.pop_front() {
                    inner.set.remove(&old);
                }
            }
        }
    }
}

impl SigCache for SignatureCache {
    fn contains(&self, wtxid: &Hash) -> bool {
        let found = self.inner.read().unwrap_or_else(PoisonError::into_inner).set.contains(wtxid);
        self.lookups.fetch_add(1, Ordering::Relaxed);
        if found {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        found
    }
}

impl std::fmt::Debug for SignatureCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignatureCache")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .field("hits", &self.hits())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u8) -> Hash {
        Hash([i; 32])
    }

    #[test]
    fn first_in_first_out_within_capacity() {
        let c = SignatureCache::new(3);
        c.insert_many([h(1), h(2), h(3)]);
        assert_eq!(c.len(), 3);
        c.insert_many([h(2)]); // already held: keeps its place
        c.insert_many([h(4)]);
        assert!(!c.contains(&h(1)), "the oldest leaves first");
        assert!(c.contains(&h(2)) && c.contains(&h(3)) && c.contains(&h(4)));
        assert_eq!(c.len(), 3);
        assert_eq!((c.hits(), c.lookups()), (3, 4));
    }

    #[test]
    fn zero_capacity_remembers_nothing() {
        let c = SignatureCache::new(0);
        c.insert_many([h(1)]);
        assert!(c.is_empty());
        assert!(!c.contains(&h(1)));
    }

    #[test]
    fn shared_across_threads() {
        let c = std::sync::Arc::new(SignatureCache::new(1000));
        c.insert_many((0..100u8).map(h));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || (0..100u8).filter(|&i| c.contains(&h(i))).count())
            })
            .collect();
        for t in handles {
            assert_eq!(t.join().ok(), Some(100));
        }
        assert_eq!(c.hits(), 400);
    }
}
