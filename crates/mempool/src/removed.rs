//! A bounded log of transactions that left the pool without being confirmed, so that nothing
//! the node accepted vanishes without a word: a client that submitted a transaction can learn
//! that it was evicted, conflicted, expired or dropped, and why ([`crate::Mempool::removed`]).

use std::collections::VecDeque;

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

/// A page of the log ([`crate::Mempool::removed`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemovedPage {
    /// Entries after the asked position, oldest first.
    pub entries: Vec<Removal>,
    /// The oldest position still kept (1 while nothing has been forgotten): a reader that
    /// asked for entries after a position below `oldest − 1` missed some.
    pub oldest: u64,
    /// The last position written (0 while the log is empty).
    pub last: u64,
}

/// The log: the newest `cap` removals.
#[derive(Debug)]
pub(crate) struct RemovalLog {
    entries: VecDeque<Removal>,
    last: u64,
    cap: usize,
}

impl RemovalLog {
    pub(crate) fn new(cap: usize) -> RemovalLog {
        RemovalLog { entries: VecDeque::new(), last: 0, cap }
    }

    pub(crate) fn push(&mut self, txid: Hash, why: Departure) {
        if self.cap == 0 {
            return;
        }
        if self.entries.len() == self.cap {
            self.entries.pop_front();
        }
        self.last += 1;
        self.entries.push_back(Removal { seq: self.last, txid, why });
    }

    /// At most `limit` entries after position `after`, oldest first.
    pub(crate) fn page(&self, after: u64, limit: usize) -> RemovedPage {
        let oldest = self.entries.front().map_or(self.last + 1, |e| e.seq);
        let skip = usize::try_from(after.saturating_add(1).saturating_sub(oldest)).unwrap_or(usize::MAX);
        RemovedPage {
            entries: self.entries.iter().skip(skip).take(limit).copied().collect(),
            oldest: oldest.min(self.last.max(1)),
            last: self.last,
        }
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
