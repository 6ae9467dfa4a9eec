//! `GET /explorer/live`: what the overview's charts and block list are fed with, as server-sent
//! events, at most once per [`TICK`] (however fast blocks come):
//! - `status`: [`Status`], every tick;
//! - `block`: [`BlockSummary`] of each main-chain block that became the tip's ancestor since the
//!   last tick, oldest first, at most [`BLOCKS_PER_TICK`] a tick (the newest of them); after a
//!   reorganisation, the new tip's (a page drops what it showed from that height on).
//!
//! The stream ends when the node stops.

use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use scalechain_types::Hash;

use crate::api::{status_of, ApiState};
use crate::state::Shared;

/// How often the stream sends.
pub const TICK: Duration = Duration::from_secs(1);
/// Blocks one tick reports, at most.
pub const BLOCKS_PER_TICK: u64 = 8;

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

/// The summary of the main-chain block at `height`, if there is one.
pub fn summary(sh: &Shared, height: u64) -> Option<BlockSummary> {
    let b = sh.chain.read().block_at(height).ok()??;
    // Genesis has a fixed time: the first block's distance from it is no interval.
    let parent_time = match height {
        0 | 1 => b.header.time,
        h => sh.chain.read().block_at(h - 1).ok()?.map_or(b.header.time, |p| p.header.time),
    };
    Some(BlockSummary {
        height,
        hash: b.hash(sh.params.hash),
        time: b.header.time,
        txs: b.txs.len(),
        interval_ms: b.header.time.saturating_sub(parent_time),
    })
}

/// The stream.
pub async fn stream(State(s): State<ApiState>) -> Response {
    let stop = s.stop.clone();
    let state = (s, stop, None::<(u64, Hash)>, tokio::time::interval(TICK), Vec::<Event>::new());
    let events = futures::stream::unfold(state, |(s, mut stop, mut last, mut tick, mut queue)| async move {
        loop {
            if let Some(ev) = queue.pop() {
                return Some((Ok::<Event, std::convert::Infallible>(ev), (s, stop, last, tick, queue)));
            }
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.wait_for(|v| *v) => return None,
            }
            if *stop.borrow() {
                return None;
            }
            let sh = s.shared.clone();
            let from = last;
            let (status, blocks) = tokio::task::spawn_blocking(move || {
                let status = status_of(&sh);
                let tip = status.height;
                // New blocks on top of the last tip sent, or after a reorganisation the tip again
                // (the page then drops what it showed at and above that height).
                let first = match from {
                    None => Some(tip),
                    Some((l, _)) if tip > l => {
                        Some(l.saturating_add(1).max(tip.saturating_sub(BLOCKS_PER_TICK - 1)))
                    }
                    Some((_, hash)) if hash != status.tip => Some(tip),
                    Some(_) => None,
                };
                let blocks: Vec<BlockSummary> =
                    first.map_or_else(Vec::new, |f| (f..=tip).filter_map(|h| summary(&sh, h)).collect());
                (status, blocks)
            })
            .await
            .ok()?;
            last = Some((status.height, status.tip));
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
    Sse::new(events).keep_alive(KeepAlive::new().interval(crate::api::EVENTS_KEEP_ALIVE)).into_response()
}
