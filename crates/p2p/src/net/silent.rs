//! Inbound connections that have not said anything yet. A peer that dials speaks first (the
//! protocol negotiation's header, then noise), within a round trip; a connection that has sent
//! nothing is either about to or is holding a slot it will never use. At most a budget of such
//! *silent* connections is kept: when a new inbound connection arrives with the budget full,
//! the one silent longest is closed for it. The connections being set up are limited to twice
//! the budget (`connection_limits`), so at least half of those slots stay for connections that
//! speak — a newcomer is never refused for want of a slot held by silent sockets, however many
//! addresses they come from, and it is the newest silent connection, so the last to be closed.
//!
//! It works on the TCP stream under the transport upgrade ([`Silent::watch`] wraps each one):
//! the first byte read takes a connection off the list; closing one makes its next read fail,
//! which fails its upgrade, and the swarm drops it.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures::io::{AsyncRead, AsyncWrite};

use super::NetStats;

/// Locks `m`; a panic elsewhere while it was held leaves nothing half-done here.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One silent connection.
#[derive(Default)]
struct Entry {
    closed: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

/// The silent inbound connections, oldest first.
pub struct Silent {
    max: usize,
    next: AtomicU64,
    open: Mutex<BTreeMap<u64, Arc<Entry>>>,
    stats: Arc<NetStats>,
}

impl Silent {
    /// Keeps at most `max` (at least 1) silent inbound connections, counting those closed in
    /// `stats` ([`NetStats::silent_closed`]).
    pub fn new(max: usize, stats: Arc<NetStats>) -> Arc<Silent> {
        Arc::new(Silent {
            max: max.max(1),
            next: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
            stats,
        })
    }

    /// Silent connections held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        lock(&self.open).len()
    }

    /// Wraps a new connection's stream; an inbound one joins the silent ones (the one silent
    /// longest closed if they are at the budget) until it reads its first byte.
    pub fn watch<S>(self: &Arc<Self>, inner: S, inbound: bool) -> Watched<S> {
        if !inbound {
            return Watched { inner, entry: None };
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Entry::default());
        let mut open = lock(&self.open);
        while open.len() >= self.max {
            let Some((_, oldest)) = open.pop_first() else { break };
            oldest.closed.store(true, Ordering::Release);
            if let Some(w) = lock(&oldest.waker).take() {
                w.wake();
            }
            self.stats.silent_closed.fetch_add(1, Ordering::Relaxed);
        }
        open.insert(id, entry.clone());
        drop(open);
        Watched { inner, entry: Some((self.clone(), id, entry)) }
    }

    fn forget(&self, id: u64) {
        lock(&self.open).remove(&id);
    }
}

/// A connection's stream, watched while it is silent ([`Silent::watch`]).
pub struct Watched<S> {
    inner: S,
    /// While silent: the list, its id there and its entry.
    entry: Option<(Arc<Silent>, u64, Arc<Entry>)>,
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        if let Some((silent, id, _)) = self.entry.take() {
            silent.forget(id);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some((_, _, e)) = &this.entry {
            if e.closed.load(Ordering::Acquire) {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "closed for a newcomer: the connection had sent nothing",
                )));
            }
            *lock(&e.waker) = Some(cx.waker().clone());
        }
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            if *n > 0 {
                if let Some((silent, id, _)) = this.entry.take() {
                    silent.forget(id);
                }
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use futures::io::{AsyncReadExt, Cursor};

    #[test]
    fn the_silent_longest_is_closed_for_a_newcomer_and_a_speaker_leaves_the_list() {
        futures::executor::block_on(async {
            let stats = Arc::new(NetStats::default());
            let s = Silent::new(2, stats.clone());
            // Outbound connections are not watched.
            let _out = s.watch(Cursor::new(vec![1u8]), false);
            assert_eq!(s.held(), 0);
            let mut a = s.watch(Cursor::new(Vec::<u8>::new()), true);
            let mut b = s.watch(Cursor::new(vec![7u8, 8]), true);
            assert_eq!(s.held(), 2);
            // b speaks: off the list.
            let mut buf = [0u8; 1];
            assert_eq!(b.read(&mut buf).await.unwrap(), 1);
            assert_eq!(s.held(), 1);
            let c = s.watch(Cursor::new(Vec::<u8>::new()), true);
            let d = s.watch(Cursor::new(Vec::<u8>::new()), true);
            // a was the silent longest: closed for d; its read fails.
            assert_eq!(stats.silent_closed.load(Ordering::Relaxed), 1);
            assert_eq!(a.read(&mut buf).await.unwrap_err().kind(), io::ErrorKind::ConnectionAborted);
            // b, which spoke, reads on.
            assert_eq!(b.read(&mut buf).await.unwrap(), 1);
            drop((c, d));
            assert_eq!(s.held(), 0);
        });
    }
}
