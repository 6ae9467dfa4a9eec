//! The miner thread: builds the replica's block template on the current tip, searches nonces
//! on its threads (`scalechain_replica::solve`), and hands a solved block to the block worker
//! like any other block.
//!
//! With `pace` on (the default), it waits until about the chain's target interval has passed
//! since the parent before mining: an easy devnet then produces a block per interval without one
//! core spent racing ahead. The wait is drawn anew for each block, uniformly between 0.75 and
//! 1.25 intervals (the mean stays one interval): with a fixed wait, two miners on competing
//! branches of equal work would mine their next blocks at the same moment round after round,
//! each keeping its own (first seen wins), and the fork would never settle; real proof of work
//! has this randomness by nature. The search stops as soon as the tip moves.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scalechain_p2p::msg::block_payload;
use scalechain_p2p::protocol::{BlockOrigin, BlockVerdict};
use scalechain_replica::solve;
use scalechain_types::{Hash, Lock};
use tokio::sync::{mpsc, oneshot};

use crate::blocks::{BlockJob, Outcome};
use crate::state::Shared;

/// The wait after the parent before mining: `interval × (0.75 + 0.5 × draw / 2^32)`.
fn paced_wait(interval: u64, draw: u32) -> u64 {
    let quarter = interval / 4;
    let spread = (u128::from(interval / 2) * u128::from(draw)) >> 32;
    interval - quarter + spread as u64
}

/// Runs the miner until the node stops.
pub fn run(
    shared: Arc<Shared>,
    reward: Lock,
    jobs: mpsc::Sender<BlockJob>,
    done: mpsc::UnboundedSender<Outcome>,
) {
    let mut tip_rx = shared.tip_changed.subscribe();
    let interval = shared.replica.params.target_block_ms;
    while !shared.is_stopping() {
        // Nothing is mined while the node cannot store it.
        if shared.storage.halted() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let parent = shared.replica.chain.read().tip_header();
        let parent_hash: Hash = parent.hash(shared.replica.params.hash);
        if shared.cfg.miner.pace {
            let due = parent.time.saturating_add(paced_wait(interval, getrandom::u32().unwrap_or(0)));
            while shared.now_ms() < due
                && !shared.is_stopping()
                && shared.replica.chain.read().tip() == parent_hash
            {
                std::thread::sleep(Duration::from_millis((due.saturating_sub(shared.now_ms())).clamp(1, 20)));
            }
            if shared.replica.chain.read().tip() != parent_hash {
                continue;
            }
        }
        let mut block = {
            let _s = scalechain_types::profile::span("miner.template");
            shared.replica.block_template(reward, shared.cfg.miner.max_block_txs, shared.now_ms())
        };
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
            let ok = solve(&mut block.header, shared.replica.params.hash, shared.cfg.miner.threads, &stale);
            stale.store(true, Ordering::Relaxed);
            let _ = watcher.join();
            ok
        });
        if !solved || shared.replica.chain.read().tip() != parent_hash {
            continue;
        }
        let (tx, rx) = oneshot::channel();
        let bytes = block.encoded_len();
        let (topic, payload) =
            block_payload(&block, shared.replica.params.hash, shared.cfg.p2p.compact_blocks);
        let origin = BlockOrigin::Local { topic, payload };
        if jobs.blocking_send(BlockJob { block, origin, reply: Some(tx) }).is_err() {
            break;
        }
        match rx.blocking_recv() {
            Ok(outcome) => {
                if outcome.outcome.verdict() == BlockVerdict::Connected {
                    shared.metrics.blocks_mined.add(1);
                    let o = &outcome.outcome;
                    tracing::info!("mined block {} {} ({bytes} bytes)", o.height, o.hash);
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
    use super::paced_wait;

    #[test]
    fn paced_waits_spread_around_the_interval_with_the_interval_as_mean() {
        assert_eq!(paced_wait(1000, 0), 750);
        assert_eq!(paced_wait(1000, u32::MAX), 1249);
        assert_eq!(paced_wait(1000, 1 << 31), 1000);
        let mean = (0..1000u32).map(|i| paced_wait(1000, i.wrapping_mul(4_294_967))).sum::<u64>() / 1000;
        assert!((990..=1010).contains(&mean), "{mean}");
        assert_eq!(paced_wait(0, u32::MAX), 0);
    }
}
