//! Whether the node can write its data directory, the way Bitcoin Core guards its disk: the
//! free space of the data directory's filesystem is checked every reactor tick against
//! `store.min_free_bytes`, and a store write that fails (for want of space or otherwise) is
//! reported here by the block worker. While either holds the node is *halted*: the block
//! worker refuses blocks (not held against their senders), the miner waits, `POST /txs`
//! answers 503 and gossiped transactions are dropped unjudged; `GET /status` says why under
//! `storage`, and the log says it once, as an error.
//!
//! Low space ends by itself when space is freed (the store never failed). A failed write
//! poisons the store (`scalechain_store::StoreError::Poisoned`), so it ends only with a
//! restart: the store reopens at its last commit (a commit is one atomic batch, so no half
//! block is ever stored) and the node goes on from that tip.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use scalechain_client::types::StorageStatus;
use scalechain_store::StoreError;

/// Why the node is halted.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Halt {
    /// Less free space than the margin.
    Low,
    /// A store write failed: `full` when for want of space.
    Failed { full: bool, error: String },
}

#[derive(Debug)]
struct Inner {
    free_bytes: Option<u64>,
    halt: Option<Halt>,
}

/// The node's storage state (see the module documentation).
#[derive(Debug)]
pub struct Storage {
    dir: PathBuf,
    min_free_bytes: u64,
    halted: AtomicBool,
    inner: Mutex<Inner>,
}

/// Bytes available to the node's user on the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let s = rustix::fs::statvfs(dir)?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

impl Storage {
    /// The state of data directory `dir`, keeping `min_free_bytes` free (0: no check); not
    /// halted until [`check_space`](Self::check_space) or [`write_failed`](Self::write_failed)
    /// says otherwise.
    pub fn new(dir: &Path, min_free_bytes: u64) -> Storage {
        Storage {
            dir: dir.to_path_buf(),
            min_free_bytes,
            halted: AtomicBool::new(false),
            inner: Mutex::new(Inner { free_bytes: None, halt: None }),
        }
    }

    /// True while the node must take no blocks and no transactions.
    pub fn halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }

    /// Reads the filesystem's free space: below the margin the node halts; back above it, a
    /// halt for low space ends (one for a failed write does not). A filesystem that cannot be
    /// read changes nothing.
    pub fn check_space(&self) {
        let Ok(free) = free_bytes(&self.dir) else { return };
        let mut inner = self.inner.lock();
        inner.free_bytes = Some(free);
        let low = free < self.min_free_bytes;
        match (&inner.halt, low) {
            (None, true) => {
                inner.halt = Some(Halt::Low);
                self.halted.store(true, Ordering::Release);
                tracing::error!(
                    free_bytes = free,
                    min_free_bytes = self.min_free_bytes,
                    "disk space is too low: {} has {free} bytes free, less than store.min_free_bytes; \
                     taking no blocks and no transactions until space is freed",
                    self.dir.display()
                );
            }
            (Some(Halt::Low), false) => {
                inner.halt = None;
                self.halted.store(false, Ordering::Release);
                tracing::info!(
                    free_bytes = free,
                    "disk space is sufficient again: taking blocks and transactions"
                );
            }
            _ => {}
        }
    }

    /// A store write failed with `e`: the node halts until it is restarted (the store is
    /// poisoned). Logged once.
    pub fn write_failed(&self, e: &StoreError) {
        let mut inner = self.inner.lock();
        if matches!(inner.halt, Some(Halt::Failed { .. })) {
            return;
        }
        let full = matches!(e, StoreError::Full { .. });
        let error = e.to_string();
        if full {
            tracing::error!("disk space is too low: {error}; taking no blocks and no transactions");
        } else {
            tracing::error!(
                "the store failed to write: {error}; taking no blocks and no transactions until restarted"
            );
        }
        inner.halt = Some(Halt::Failed { full, error });
        self.halted.store(true, Ordering::Release);
    }

    /// Why the node is halted, for an error answer; `None` when it is not.
    pub fn why(&self) -> Option<String> {
        if !self.halted() {
            return None;
        }
        self.status().error
    }

    /// The store error a block refused while halted is given: [`StoreError::Full`] saying why
    /// for low space or a full disk, [`StoreError::Poisoned`] after another failed write.
    pub fn refusal(&self) -> StoreError {
        let st = self.status();
        match (st.state.as_str(), st.error) {
            ("failed", _) => StoreError::Poisoned,
            (_, why) => StoreError::Full { path: self.dir.clone(), detail: why.unwrap_or_default() },
        }
    }

    /// `GET /status`'s `storage`.
    pub fn status(&self) -> StorageStatus {
        let inner = self.inner.lock();
        let (state, error) = match &inner.halt {
            None => ("ok", None),
            Some(Halt::Low) => (
                "low",
                Some(format!(
                    "disk space is too low: {} has {} bytes free, less than store.min_free_bytes {}",
                    self.dir.display(),
                    inner.free_bytes.unwrap_or(0),
                    self.min_free_bytes
                )),
            ),
            Some(Halt::Failed { full: true, error }) => ("full", Some(error.clone())),
            Some(Halt::Failed { full: false, error }) => ("failed", Some(error.clone())),
        };
        StorageStatus {
            state: state.into(),
            free_bytes: inner.free_bytes,
            min_free_bytes: self.min_free_bytes,
            error,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn low_space_halts_until_freed_and_a_failed_write_until_restart() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).unwrap();
        // A margin above what is free: halted, and says why.
        let s = Storage::new(dir.path(), free.saturating_mul(2).max(1));
        assert!(!s.halted());
        s.check_space();
        assert!(s.halted());
        let st = s.status();
        assert_eq!(st.state, "low");
        assert!(st.error.is_some() && st.free_bytes.is_some());
        // No margin: the check lets it go again.
        let s = Storage::new(dir.path(), 0);
        s.check_space();
        assert!(!s.halted());
        assert_eq!(s.status().state, "ok");
        assert_eq!(s.why(), None);
        // A write that failed for want of space: halted whatever the free space says.
        s.write_failed(&StoreError::Full { path: dir.path().into(), detail: "write failed".into() });
        s.check_space();
        assert!(s.halted());
        assert_eq!(s.status().state, "full");
        // The first failure is the one reported.
        s.write_failed(&StoreError::Poisoned);
        assert_eq!(s.status().state, "full");
        let s = Storage::new(dir.path(), 0);
        s.write_failed(&StoreError::Poisoned);
        assert_eq!(s.status().state, "failed");
    }
}
