//! The txid index's writer: a thread of the disk store that writes each commit's txid-index
//! changes after the commit, in order, so that the index is off the commit's critical path
//! (docs/adr/0004-txid-index-follows-the-chain.md).
//!
//! Invariants:
//! - Jobs are written in the order the commits queued them. Each write is one batch: the merged
//!   changes of the jobs it takes and the index tip of the last of them (`meta`'s
//!   `txindex_tip`), so what is on disk is always exactly the index of the chain that ends at
//!   the stored index tip, whatever moment a crash picks.
//! - A job is queued only after its commit's synced write returned, and the engine's journal is
//!   one sequential log: an index write never survives a crash that its commit did not, so the
//!   stored index tip is always a block some commit made the tip.
//! - A job answers lookups ([`Writer::lookup`]) from the moment it is queued until its batch is
//!   written; the store reads the queue, newest job first, before the keyspace, so a lookup
//!   always sees every commit made.
//!
//! Must not:
//! - hold the queue's lock while writing (a lookup or a commit must never wait for the disk);
//! - queue more than [`MAX_QUEUED`] jobs: a commit waits for room instead;
//! - go on after a failed write: the writer stops, keeps the error, and the store answers every
//!   later operation with it (a store whose index stopped is as poisoned as one whose commit
//!   failed).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use fjall::{Database, Keyspace, OwnedWriteBatch};
// Keys are txids (uniform hashes): foldhash is several times faster than SipHash on them, and
// a job's maps are built on the commit's critical path.
use foldhash::{HashMap, HashMapExt, HashSet};
use scalechain_types::Hash;

use crate::{StoreError, TxLocation};

/// Jobs the queue holds at most; a commit that finds it full waits for the writer.
pub const MAX_QUEUED: usize = 64;

/// The txid-index changes of one commit.
#[derive(Debug)]
pub struct Job {
    /// The commit's tip and its height: the index tip once this job is written.
    pub tip: (Hash, u64),
    /// Transactions of the blocks the commit disconnected.
    pub remove: HashSet<Hash>,
    /// Transactions of the blocks it connected, where they are; an entry here wins over the
    /// same txid in `remove` (a transaction in both branches ends at the connected block).
    pub add: HashMap<Hash, TxLocation>,
}

impl Job {
    /// The job of a commit to `tip` with these removals and additions.
    pub fn new(tip: (Hash, u64), remove: &[Hash], add: &[(Hash, TxLocation)]) -> Job {
        let mut a = HashMap::with_capacity(add.len());
        a.extend(add.iter().copied());
        Job { tip, remove: remove.iter().copied().collect(), add: a }
    }

    /// This job's answer for `txid`: `Some(Some(l))` if it indexes it at `l`, `Some(None)` if it
    /// removes it, `None` if it does not touch it.
    fn answer(&self, txid: &Hash) -> Option<Option<TxLocation>> {
        match self.add.get(txid) {
            Some(l) => Some(Some(*l)),
            None if self.remove.contains(txid) => Some(None),
            None => None,
        }
    }
}

/// The queue and the writer's fate.
#[derive(Default)]
struct State {
    /// Jobs not yet written, oldest first.
    queue: VecDeque<Arc<Job>>,
    /// Set when the store closes: the writer writes what is queued and ends.
    closing: bool,
    /// While set, the writer writes nothing (tests: an index behind its chain).
    held: bool,
    /// Why the writer stopped, if a write failed.
    failed: Option<StoreError>,
}

struct Shared {
    state: Mutex<State>,
    /// Notified on every change of `state`.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a queue that is still consistent (every
        // change to it is one push or one drain).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where the writer writes: the database, the `txids` and `meta` keyspaces, the key of the
/// index tip, and the store's directory (for errors).
pub struct Target {
    /// The database.
    pub db: Database,
    /// The `txids` keyspace.
    pub txids: Keyspace,
    /// The `meta` keyspace.
    pub meta: Keyspace,
    /// The `meta` key that holds the index tip.
    pub tip_key: &'static str,
    /// The store's directory.
    pub path: PathBuf,
}

/// The writer thread and its queue.
pub struct Writer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer for `target`.
    pub fn start(target: Target) -> Result<Writer, StoreError> {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("txid-index".into())
            .spawn(move || run(&s, &target))
            .map_err(|e| StoreError::Engine(format!("starting the txid index's writer: {e}")))?;
        Ok(Writer { shared, thread: Some(thread) })
    }

    /// Queues `job` (after its commit was written), waiting while the queue is full. Fails if
    /// the writer has stopped on a failed write.
    pub fn push(&self, job: Job) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        while st.queue.len() >= MAX_QUEUED && st.failed.is_none() && !st.held {
            st = self.shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        st.queue.push_back(Arc::new(job));
        self.shared.changed.notify_all();
        Ok(())
    }

    /// The queued jobs' answer for `txid` (the newest job that touches it), if one touches it.
    pub fn lookup(&self, txid: &Hash) -> Option<Option<TxLocation>> {
        self.shared.lock().queue.iter().rev().find_map(|j| j.answer(txid))
    }

    /// The tip of the newest queued job, if any is queued.
    pub fn queued_tip(&self) -> Option<(Hash, u64)> {
        self.shared.lock().queue.back().map(|j| j.tip)
    }

    /// Jobs queued and not yet written.
    pub fn queued(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// The failure that stopped the writer, if one did.
    pub fn failure(&self) -> Option<StoreError> {
        self.shared.lock().failed.clone()
    }

    /// Waits until every queued job is written (or the writer failed, or is held).
    pub fn flush(&self) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        while !st.queue.is_empty() && st.failed.is_none() && !st.held {
            st = self.shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        match &st.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Holds the writer (nothing more is written while held; a store closed while its writer
    /// is held leaves the queued jobs unwritten, as a crash would) or lets it go on.
    pub fn hold(&self, held: bool) {
        self.shared.lock().held = held;
        self.shared.changed.notify_all();
    }
}

impl Drop for Writer {
    /// Writes what is queued (unless held) and ends the thread.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writer's loop: take every queued job, write them as one batch, then drop them from the
/// queue; end when the store closes.
fn run(shared: &Shared, target: &Target) {
    loop {
        let jobs: Vec<Arc<Job>> = {
            let mut st = shared.lock();
            while (st.queue.is_empty() || st.held) && !st.closing {
                st = shared.changed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.queue.is_empty() || st.held {
                return; // closing
            }
            st.queue.iter().cloned().collect()
        };
        let written = write(target, &jobs);
        let mut st = shared.lock();
        match written {
            Ok(()) => {
                st.queue.drain(..jobs.len());
            }
            Err(e) => st.failed = Some(e),
        }
        let stop = st.failed.is_some();
        drop(st);
        shared.changed.notify_all();
        if stop {
            return;
        }
    }
}

/// Writes `jobs` (oldest first) as one batch: each txid's last change, and the last job's tip.
/// Not synced: the next synced commit persists it (see the module documentation).
fn write(target: &Target, jobs: &[Arc<Job>]) -> Result<(), StoreError> {
    let _s = scalechain_types::profile::span("store.txindex");
    let Some(last) = jobs.last() else { return Ok(()) };
    let mut batch = target.db.batch();
    let (txids, meta) = (&target.txids, &target.meta);
    if let [job] = jobs {
        // One job: its own sets are already one change per txid.
        let removed = job.remove.iter().filter(|t| !job.add.contains_key(t)).map(|t| (*t, None));
        let changes = removed.chain(job.add.iter().map(|(t, l)| (*t, Some(*l))));
        stage(&mut batch, txids, meta, target.tip_key, changes, last.tip);
    } else {
        let mut net: HashMap<Hash, Option<TxLocation>> = HashMap::new();
        for job in jobs {
            net.extend(job.remove.iter().map(|t| (*t, None)));
            net.extend(job.add.iter().map(|(t, l)| (*t, Some(*l))));
        }
        stage(&mut batch, txids, meta, target.tip_key, net, last.tip);
    }
    batch.commit().map_err(|e| crate::write_error_at(&target.path, "writing the txid index", &e))
}

/// Stages txid-index changes, each txid once (`None` removes it), and the index tip under
/// `tip_key` in `meta`: the writer's batches and the disk store's synchronous ones alike.
pub fn stage(
    batch: &mut OwnedWriteBatch,
    txids: &Keyspace,
    meta: &Keyspace,
    tip_key: &str,
    changes: impl IntoIterator<Item = (Hash, Option<TxLocation>)>,
    tip: (Hash, u64),
) {
    for (t, l) in changes {
        match l {
            Some(l) => batch.insert(txids, &t.0[..], &l.to_bytes()[..]),
            None => batch.remove(txids, &t.0[..]),
        }
    }
    batch.insert(meta, tip_key, &tip_bytes(tip)[..]);
}

/// The stored encoding of an index tip: the block's hash, then its height (`u64` LE).
pub fn tip_bytes((hash, height): (Hash, u64)) -> [u8; 40] {
    let mut b = [0u8; 40];
    b[..32].copy_from_slice(&hash.0);
    b[32..].copy_from_slice(&height.to_le_bytes());
    b
}

/// Decodes [`tip_bytes`]'s encoding (exactly 40 bytes).
pub fn tip_from_bytes(b: &[u8]) -> Option<(Hash, u64)> {
    let b: &[u8; 40] = b.try_into().ok()?;
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&b[..32]);
    let mut height = [0u8; 8];
    height.copy_from_slice(&b[32..]);
    Some((Hash(hash), u64::from_le_bytes(height)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(n: u8) -> TxLocation {
        TxLocation { block: Hash([n; 32]), height: u64::from(n), position: 0 }
    }

    #[test]
    fn a_job_answers_for_what_it_adds_and_removes_and_its_addition_wins() {
        let t = Hash([1; 32]);
        let mut j = Job::new((Hash([9; 32]), 9), &[], &[]);
        assert_eq!(j.answer(&t), None);
        j.remove.insert(t);
        assert_eq!(j.answer(&t), Some(None));
        j.add.insert(t, loc(3));
        assert_eq!(j.answer(&t), Some(Some(loc(3))));
    }

    #[test]
    fn tip_encoding_round_trips_and_refuses_other_lengths() {
        let tip = (Hash([7; 32]), 1 << 40);
        assert_eq!(tip_from_bytes(&tip_bytes(tip)), Some(tip));
        assert_eq!(tip_from_bytes(&tip_bytes(tip)[..39]), None);
        assert_eq!(tip_from_bytes(&[0u8; 41]), None);
    }
}
