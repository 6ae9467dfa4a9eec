//! What the pool's operations return: the verdict on a transaction ([`Admitted`],
//! [`TxVerdict`], [`HeldOrphan`]), on a batch offered ([`Offered`]), on a connected block
//! ([`Removed`]) and on a reorganisation ([`ReorgOutcome`]).
//!
//! Plain values, built by the admission engine (`crate::admission`), the policy
//! (`crate::policy`) and the facade ([`Mempool`](crate::Mempool)), read by the node, the
//! simulator and the tests. They sit apart from all three so that the engine and the policy,
//! which both build [`Admitted`], need not import each other's modules or the facade.
//!
//! - **Invariants.** Every list of verdicts is in the order of the transactions given; an
//!   [`Admitted`] describes the entry as the pool holds it (its `tx` is the pooled `Arc`), and
//!   its `evicted` lists every pooled transaction that left to make room, descendants
//!   included.
//! - **Must not.** Hold no logic beyond reading a verdict (no pool, no lock, no policy): a
//!   type here never decides what the pool takes.

use std::sync::Arc;

use scalechain_types::{Amount, Hash, OutPoint, Tx};

use crate::error::MempoolError;

/// A transaction the pool took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// The transaction, as the pool holds it.
    pub tx: Arc<Tx>,
    /// Its txid.
    pub txid: Hash,
    /// Its wtxid.
    pub wtxid: Hash,
    /// The fee it pays.
    pub fee: Amount,
    /// Bytes of its encoding.
    pub size: u64,
    /// Pooled transactions evicted to make room for it (descendants included).
    pub evicted: Vec<Hash>,
}

/// What a connected block took out of the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Pooled transactions the block confirmed.
    pub confirmed: usize,
    /// Pooled transactions that spent an output the block spends, or held an application key a
    /// transaction of the block holds, with their descendants.
    pub conflicted: Vec<Hash>,
    /// Pooled transactions that no later block may include (a ballot past its voting window:
    /// [`scalechain_consensus::AppModule::last_height`]), with their descendants.
    pub expired: Vec<Hash>,
}

/// What a reorganisation did to the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReorgOutcome {
    /// The verdict on each returned transaction, in the order given.
    pub returned: Vec<Result<Admitted, MempoolError>>,
    /// Pooled transactions that no longer pass against the new tip, with the reason.
    pub dropped: Vec<(Hash, MempoolError)>,
}

/// The verdict on one transaction offered to the node ([`Mempool::offer`](crate::Mempool::offer)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxVerdict {
    /// Taken into the pool.
    Admitted(Admitted),
    /// Not refused: some of its inputs spend outputs of transactions unknown here, so it waits
    /// in the orphan pool and is offered again when they come.
    Orphan(HeldOrphan),
    /// Refused.
    Refused(MempoolError),
}

impl TxVerdict {
    /// The verdict for callers that speak `Result`: an orphan is `Err(MempoolError::Orphan)`
    /// (reason `orphan`), which says it is held, not refused.
    pub fn into_result(self) -> Result<Admitted, MempoolError> {
        match self {
            TxVerdict::Admitted(a) => Ok(a),
            TxVerdict::Orphan(o) => Err(MempoolError::Orphan { input: o.input, prev: o.prev }),
            TxVerdict::Refused(e) => Err(e),
        }
    }

    /// True if the transaction was taken into the pool.
    pub fn is_admitted(&self) -> bool {
        matches!(self, TxVerdict::Admitted(_))
    }

    /// True if it is held as an orphan.
    pub fn is_orphan(&self) -> bool {
        matches!(self, TxVerdict::Orphan(_))
    }

    /// The refusal, if it was refused.
    pub fn refusal(&self) -> Option<&MempoolError> {
        match self {
            TxVerdict::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// True if refused for want of room ([`MempoolError::may_fit_later`]).
    pub fn crowded_out(&self) -> bool {
        self.refusal().is_some_and(MempoolError::may_fit_later)
    }
}

/// A transaction held in the orphan pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldOrphan {
    /// Its txid.
    pub txid: Hash,
    /// Its first input whose output is unknown here.
    pub input: usize,
    /// What that input spends.
    pub prev: OutPoint,
    /// The txids of the parents it waits for.
    pub parents: Vec<Hash>,
    /// Orphans sent away to make room for it.
    pub evicted: Vec<Hash>,
}

/// What [`Mempool::offer`](crate::Mempool::offer) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// One verdict per transaction offered, in order.
    pub verdicts: Vec<TxVerdict>,
    /// The txid of each transaction offered, in order (hashed once, for the pool's keys:
    /// callers need not hash again).
    pub txids: Vec<Hash>,
    /// Orphans admitted because a transaction admitted here was their parent (children after
    /// their parents).
    pub released: Vec<Admitted>,
}
