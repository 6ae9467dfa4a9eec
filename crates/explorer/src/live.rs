//! `GET /explorer/live`: what the overview's charts and block list are fed with, as server-sent
//! events, at most once per [`TICK`] (however fast blocks come):
//! - `status`: [`Status`], every tick;
//! - `block`: [`BlockSummary`] of each main-chain block that became the tip's ancestor since the
//!   last tick, oldest first, at most [`BLOCKS_PER_TICK`] a tick (the newest of them); after a
//!   reorganisation among the blocks sent, the main chain's from the lowest height that
//!   changed (a page drops what it showed from that height on).
//!
//! The stream ends when the node stops.

use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use scalechain_types::Hash;

use scalechain_chain::DiskStore;
use scalechain_replica::Replica;

use super::data::{self, ReadError};
use super::View;

/// How often the stream sends.
pub const TICK: Duration = Duration::from_secs(1);
/// Blocks one tick reports, at most.
pub const BLOCKS_PER_TICK: u64 = 8;
/// How often an idle stream carries a keep-alive comment (as the API's `GET /events`).
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A main-chain block in brief.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSummary {
    /// Height.
    pub height: u64,
    /// Hash.
    pub hash: Hash,
    /// Time, ms since the Unix epoch.
    pub time: u64,
    /// Transactions (the coinbase included).
    pub txs: usize,
    /// Milliseconds since its parent's time (0 for genesis and block 1: genesis has a fixed
    /// time).
    pub interval_ms: u64,
}

/// Summaries of the main-chain blocks at heights `from..=to` (fewer where the chain is
/// shorter), oldest first: each block read once, and the first one's parent for its interval.
pub fn summaries(r: &Replica<DiskStore>, from: u64, to: u64) -> Result<Vec<BlockSummary>, ReadError> {
    let kind = r.params.hash;
    let mut out = Vec::new();
    let mut parent_time = None;
    for h in from.saturating_sub(1)..=to {
        let Some(b) = data::block_at(r, h)? else { break };
        // Genesis has a fixed time: the first block's distance from it is no interval.
        let interval_ms = match parent_time {
            Some(p) if h > 1 => b.header.time.saturating_sub(p),
            _ => 0,
        };
        parent_time = Some(b.header.time);
        if h >= from {
            out.push(BlockSummary {
                height: h,
                hash: b.hash(kind),
                time: b.header.time,
                txs: b.txs.len(),
                interval_ms,
            });
        }
    }
    Ok(out)
}

/// Blocks a stream remembers having sent (to see a reorganisation among them).
const REMEMBERED: usize = 16;

/// The first height to send, given what was `sent` (oldest first) and the main chain `main`
/// up to `tip`: after the last sent block when the sent ones are all still on the main chain;
/// from the lowest one that is not after a reorganisation (at most the tip: a shorter chain
/// sends its tip again); the tip on the first tick; `None` when nothing changed. Never more
/// than [`BLOCKS_PER_TICK`] blocks.
pub fn first_to_send(sent: &[(u64, Hash)], main: impl Fn(u64) -> Option<Hash>, tip: u64) -> Option<u64> {
    let Some(&(last, _)) = sent.last() else { return Some(tip) };
    let first = match sent.iter().find(|(h, hash)| main(*h) != Some(*hash)) {
        Some(&(h, _)) => h.min(tip),
        None if tip > last => last + 1,
        None => return None,
    };
    Some(first.max(tip.saturating_sub(BLOCKS_PER_TICK - 1)))
}

/// The stream.
pub async fn stream(State(node): State<View>) -> Response {
    let stop = node.api_stopped();
    let state = (node, stop, Vec::<(u64, Hash)>::new(), tokio::time::interval(TICK), Vec::<Event>::new());
    let events =
        futures::stream::unfold(state, |(node, mut stop, mut sent, mut tick, mut queue)| async move {
            loop {
                if let Some(ev) = queue.pop() {
                    return Some((
                        Ok::<Event, std::convert::Infallible>(ev),
                        (node, stop, sent, tick, queue),
                    ));
                }
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.wait_for(|v| *v) => return None,
                }
                if *stop.borrow() {
                    return None;
                }
                let sh = node.clone();
                let before = sent.clone();
                let (status, blocks) = tokio::task::spawn_blocking(move || {
                    let status = sh.status();
                    let first = {
                        let c = sh.replica().chain.read();
                        let main = c.main_chain();
                        first_to_send(
                            &before,
                            |h| usize::try_from(h).ok().and_then(|h| main.get(h)).copied(),
                            status.height,
                        )
                    };
                    let blocks = first
                        .and_then(|f| summaries(sh.replica(), f, status.height).ok())
                        .unwrap_or_default();
                    (status, blocks)
                })
                .await
                .ok()?;
                if let Some(b) = blocks.first() {
                    sent.retain(|(h, _)| *h < b.height);
                }
                sent.extend(blocks.iter().map(|b| (b.height, b.hash)));
                let excess = sent.len().saturating_sub(REMEMBERED);
                sent.drain(..excess);
                // Queued in reverse: popped oldest block first, then the status.
                if let Ok(d) = serde_json::to_string(&status) {
                    queue.push(Event::default().event("status").data(d));
                }
                for b in blocks.iter().rev() {
                    if let Ok(d) = serde_json::to_string(b) {
                        queue.push(Event::default().event("block").data(d));
                    }
                }
            }
        });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: u8) -> Hash {
        Hash([n; 32])
    }

    #[test]
    fn new_blocks_and_reorganisations_choose_what_is_sent() {
        let chain = |tip: u8, fork_at: Option<u8>| {
            move |height: u64| {
                let height = u8::try_from(height).ok()?;
                (height <= tip).then(|| {
                    if fork_at.is_some_and(|f| height >= f) {
                        h(100 + height)
                    } else {
                        h(height)
                    }
                })
            }
        };
        assert_eq!(first_to_send(&[], chain(5, None), 5), Some(5), "the first tick: the tip");
        let sent = [(4, h(4)), (5, h(5))];
        assert_eq!(first_to_send(&sent, chain(5, None), 5), None, "nothing new");
        assert_eq!(first_to_send(&sent, chain(7, None), 7), Some(6), "on top: after the last sent");
        assert_eq!(first_to_send(&sent, chain(30, None), 30), Some(23), "at most a tick's worth");
        assert_eq!(first_to_send(&sent, chain(5, Some(5)), 5), Some(5), "same height, another block");
        assert_eq!(first_to_send(&sent, chain(7, Some(4)), 7), Some(4), "a reorganisation that also grew");
        assert_eq!(first_to_send(&sent, chain(3, Some(9)), 3), Some(3), "a shorter chain: its tip again");
    }
}
