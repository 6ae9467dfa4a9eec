//! A bounded log of numbered entries, read in pages by position: the newest `cap` entries are
//! kept, each numbered from 1 in the order written, and a reader asks for the entries after the
//! last position it saw. A reader that falls behind by more than `cap` learns it from
//! [`Page::oldest`]. The mempool's removal log and the node's arrival log are such logs.

use std::collections::VecDeque;

/// An entry that knows its position in its log.
pub trait Sequenced {
    /// Its position (the first entry written is 1).
    fn seq(&self) -> u64;
}

/// A page of a [`SeqLog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    /// Entries after the asked position, oldest first.
    pub entries: Vec<T>,
    /// The oldest position still kept (1 while nothing has been forgotten): a reader that
    /// asked for entries after a position below `oldest − 1` missed some.
    pub oldest: u64,
    /// The last position written (0 while the log is empty).
    pub last: u64,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page { entries: Vec::new(), oldest: 1, last: 0 }
    }
}

/// The log: the newest `cap` entries (none if `cap` is 0).
#[derive(Clone, Debug)]
pub struct SeqLog<T> {
    entries: VecDeque<T>,
    last: u64,
    cap: usize,
}

impl<T: Sequenced + Clone> SeqLog<T> {
    /// An empty log keeping at most `cap` entries.
    pub fn new(cap: usize) -> SeqLog<T> {
        SeqLog { entries: VecDeque::new(), last: 0, cap }
    }

    /// Appends the entry `make(position)` (unless the log keeps none), forgetting the oldest
    /// if the log is full.
    pub fn push_with(&mut self, make: impl FnOnce(u64) -> T) {
        if self.cap == 0 {
            return;
        }
        if self.entries.len() == self.cap {
            self.entries.pop_front();
        }
        self.last += 1;
        self.entries.push_back(make(self.last));
    }

    /// At most `limit` entries after position `after`, oldest first.
    pub fn page(&self, after: u64, limit: usize) -> Page<T> {
        let oldest = self.entries.front().map_or(self.last + 1, Sequenced::seq);
        let skip = usize::try_from(after.saturating_add(1).saturating_sub(oldest)).unwrap_or(usize::MAX);
        Page {
            entries: self.entries.iter().skip(skip).take(limit).cloned().collect(),
            oldest: oldest.min(self.last.max(1)),
            last: self.last,
        }
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Nothing kept?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct E(u64, char);

    impl Sequenced for E {
        fn seq(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn the_log_keeps_the_newest_entries_and_pages_by_position() {
        let mut log = SeqLog::new(3);
        assert_eq!(log.page(0, 10), Page { entries: vec![], oldest: 1, last: 0 });
        for c in ['a', 'b', 'c', 'd', 'e'] {
            log.push_with(|seq| E(seq, c));
        }
        let p = log.page(0, 10);
        assert_eq!((p.oldest, p.last, log.len()), (3, 5, 3));
        assert_eq!(p.entries, [E(3, 'c'), E(4, 'd'), E(5, 'e')]);
        assert_eq!(log.page(3, 1).entries, [E(4, 'd')]);
        assert!(log.page(5, 10).entries.is_empty());
        assert!(log.page(u64::MAX, 10).entries.is_empty());
        let mut off = SeqLog::new(0);
        off.push_with(|seq| E(seq, 'x'));
        assert_eq!((off.page(0, 10).last, off.is_empty()), (0, true));
    }
}
