//! A bounded log of transactions that left the pool without being confirmed, so that nothing
//! the node accepted vanishes without a word: a client that submitted a transaction can learn
//! that it was evicted, conflicted, expired or dropped, and why ([`crate::Mempool::removed`]).

use scalechain_types::seqlog::{Page, SeqLog, Sequenced};
use scalechain_types::Hash;

/// Why a transaction left the pool unconfirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departure {
    /// Evicted to make room for transactions paying a higher fee rate (descendants included).
    Evicted,
    /// A block spent one of its inputs or took one of its application keys (descendants
    /// included).
    Conflict,
    /// No later block may include it (an application's window closed).
    Expired,
    /// It failed re-admission after a reorganisation; `reason` is the refusal's
    /// ([`crate::MempoolError::reason`]).
    Dropped(&'static str),
    /// It was in a disconnected block and the pool refused it back (`reason` as above).
    NotReturned(&'static str),
}

impl Departure {
    /// The kind, as the API names it: `evicted`, `conflict`, `expired`, `dropped`,
    /// `not-returned`.
    pub fn kind(&self) -> &'static str {
        match self {
            Departure::Evicted => "evicted",
            Departure::Conflict => "conflict",
            Departure::Expired => "expired",
            Departure::Dropped(_) => "dropped",
            Departure::NotReturned(_) => "not-returned",
        }
    }

    /// The refusal reason of a re-admission that failed, if that is why.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Departure::Dropped(r) | Departure::NotReturned(r) => Some(r),
            _ => None,
        }
    }
}

/// One entry of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Removal {
    /// Its position in the log since the node started (the first is 1).
    pub seq: u64,
    /// The transaction.
    pub txid: Hash,
    /// Why it left.
    pub why: Departure,
}

impl Sequenced for Removal {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// A page of the log ([`crate::Mempool::removed`]).
pub type RemovedPage = Page<Removal>;

/// The log: the newest `cap` removals.
#[derive(Debug)]
pub(crate) struct RemovalLog(SeqLog<Removal>);

impl RemovalLog {
    pub(crate) fn new(cap: usize) -> RemovalLog {
        RemovalLog(SeqLog::new(cap))
    }

    pub(crate) fn push(&mut self, txid: Hash, why: Departure) {
        self.0.push_with(|seq| Removal { seq, txid, why });
    }

    /// At most `limit` entries after position `after`, oldest first.
    pub(crate) fn page(&self, after: u64, limit: usize) -> RemovedPage {
        self.0.page(after, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_newest_entries_and_pages_by_position() {
        let mut log = RemovalLog::new(3);
        assert_eq!(log.page(0, 10), RemovedPage { entries: vec![], oldest: 1, last: 0 });
        for b in 1..=5u8 {
            log.push(
                Hash([b; 32]),
                if b % 2 == 0 { Departure::Evicted } else { Departure::Dropped("low-fee") },
            );
        }
        let p = log.page(0, 10);
        assert_eq!((p.oldest, p.last), (3, 5));
        assert_eq!(p.entries.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(p.entries[0].txid, Hash([3; 32]));
        assert_eq!((p.entries[1].why.kind(), p.entries[0].why.reason()), ("evicted", Some("low-fee")));
        assert_eq!(log.page(3, 1).entries.iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);
        assert!(log.page(5, 10).entries.is_empty());
        assert!(log.page(u64::MAX, 10).entries.is_empty());
        let mut off = RemovalLog::new(0);
        off.push(Hash([1; 32]), Departure::Expired);
        assert_eq!(off.page(0, 10).last, 0);
    }
}
