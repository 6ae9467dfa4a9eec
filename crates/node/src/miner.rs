//! The miner: builds a block from the mempool's template on the current tip, searches nonces
//! on its threads, and hands a solved block to the block worker like any other block.
//!
//! With `pace` on (the default), it waits until the chain's target interval has passed since
//! the parent before mining: an easy devnet then produces a block per interval without one core
//! spent racing ahead. The search stops as soon as the tip moves.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scalechain_types::codec::Encode;
use scalechain_types::merkle::root_of_txs;
use scalechain_types::{Block, Hash, Header, Lock, Tx, TxOut};
use tokio::sync::{mpsc, oneshot};

use crate::blocks::{BlockJob, Origin, Outcome};
use crate::state::{now_ms, Shared};

/// Hashes tried between checks of the tip.
const CHECK_EVERY: u64 = 1 << 14;

/// Builds the next block on the current tip: the template's transactions, a coinbase paying
/// the subsidy plus their fees to `reward`, a time past the median time past.
pub fn build(shared: &Shared, reward: Lock) -> Block {
    let (parent, target, mtp) = {
        let c = shared.chain.read();
        (c.tip_header(), c.next_target(), c.median_time_past())
    };
    let p = &shared.params;
    let max_txs = shared.cfg.miner.max_block_txs.min(p.max_block_txs.saturating_sub(1) as usize);
    let tpl = shared.mempool.template(p.max_block_bytes.saturating_sub(4096), max_txs);
    let height = parent.height + 1;
    let value = p.subsidy(height).checked_add(tpl.fees).unwrap_or(p.subsidy(height));
    let mut txs = Vec::with_capacity(tpl.txs.len() + 1);
    txs.push(Tx::coinbase(height, vec![TxOut { value, lock: reward }]));
    txs.extend(tpl.txs.iter().map(|t| (**t).clone()));
    let header = Header {
        version: 1,
        height,
        prev_hash: parent.hash(p.hash),
        merkle_root: root_of_txs(p.hash, &txs),
        time: now_ms().max(mtp + 1).max(parent.time + 1),
        target,
        nonce: 0,
    };
    Block { header, txs }
}

/// Searches nonces on `threads` threads until one meets the target or `stale` turns true.
pub fn solve(
    header: &mut Header,
    kind: scalechain_types::HashKind,
    threads: usize,
    stale: &AtomicBool,
) -> bool {
    let found = AtomicU64::new(u64::MAX);
    let threads = threads.max(1) as u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            let found = &found;
            let mut h = *header;
            s.spawn(move || {
                let mut nonce = t;
                loop {
                    for _ in 0..CHECK_EVERY {
                        h.nonce = nonce;
                        if h.target.is_met_by(&h.hash(kind)) {
                            found.fetch_min(nonce, Ordering::Relaxed);
                            return;
                        }
                        nonce = nonce.wrapping_add(threads);
                    }
                    if found.load(Ordering::Relaxed) != u64::MAX || stale.load(Ordering::Relaxed) {
                        return;
                    }
                }
            });
        }
    });
    let n = found.load(Ordering::Relaxed);
    if n == u64::MAX {
        return false;
    }
    header.nonce = n;
    true
}

/// Runs the miner until the node stops.
pub fn run(
    shared: Arc<Shared>,
    reward: Lock,
    jobs: mpsc::Sender<BlockJob>,
    done: mpsc::UnboundedSender<Outcome>,
) {
    let mut tip_rx = shared.tip_changed.subscribe();
    let interval = shared.params.target_block_ms;
    while !shared.is_stopping() {
        let parent = shared.chain.read().tip_header();
        let parent_hash: Hash = parent.hash(shared.params.hash);
        if shared.cfg.miner.pace {
            let due = parent.time.saturating_add(interval);
            while now_ms() < due && !shared.is_stopping() && shared.chain.read().tip() == parent_hash {
                std::thread::sleep(Duration::from_millis((due - now_ms()).clamp(1, 20)));
            }
            if shared.chain.read().tip() != parent_hash {
                continue;
            }
        }
        let mut block = build(&shared, reward);
        let stale = AtomicBool::new(false);
        let _ = tip_rx.borrow_and_update();
        let solved = std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                while !stale.load(Ordering::Relaxed) {
                    if tip_rx.has_changed().unwrap_or(true) || shared.is_stopping() {
                        stale.store(true, Ordering::Relaxed);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let ok = solve(&mut block.header, shared.params.hash, shared.cfg.miner.threads, &stale);
            stale.store(true, Ordering::Relaxed);
            let _ = watcher.join();
            ok
        });
        if !solved || shared.chain.read().tip() != parent_hash {
            continue;
        }
        let (tx, rx) = oneshot::channel();
        let encoded = block.encode();
        if jobs.blocking_send(BlockJob { block, origin: Origin::Local(encoded), reply: Some(tx) }).is_err() {
            break;
        }
        match rx.blocking_recv() {
            Ok(outcome) => {
                if matches!(outcome.result, Ok(scalechain_chain::Accepted::Connected(_))) {
                    shared.metrics.blocks_mined.add(1);
                }
                if done.send(outcome).is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::{HashKind, Target};

    #[test]
    fn solve_finds_a_nonce_meeting_the_target_and_stops_when_stale() {
        let mut h = Header {
            version: 1,
            height: 1,
            prev_hash: Hash([1; 32]),
            merkle_root: Hash([2; 32]),
            time: 5,
            target: Target::from_bits(248),
            nonce: 0,
        };
        let stale = AtomicBool::new(false);
        assert!(solve(&mut h, HashKind::Sha256, 2, &stale));
        assert!(h.target.is_met_by(&h.hash(HashKind::Sha256)));
        // An impossible target with the stale flag already set returns without a block.
        let mut hard = Header { target: Target::from_bits(0), ..h };
        stale.store(true, Ordering::Relaxed);
        assert!(!solve(&mut hard, HashKind::Sha256, 2, &stale));
    }
}
