//! Waits over several nodes: connected to each other, caught up to a height, converged on one
//! tip with their mempools drained. Every wait is bounded and ends early on the stop flag.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scalechain_client::types::Status;

use super::{Clock, LoadError, NodeApi};

/// Waits until every node reports at least `min_peers` connected peers.
pub async fn wait_connected<A: NodeApi, C: Clock>(
    nodes: &[(String, A)],
    min_peers: usize,
    timeout: Duration,
    interval: Duration,
    clock: &C,
    stop: &AtomicBool,
) -> Result<(), LoadError> {
    let deadline = clock.now() + timeout;
    loop {
        let mut all = true;
        for (_, n) in nodes {
            all &= n.status().await.is_ok_and(|s| s.peers >= min_peers);
        }
        if all {
            return Ok(());
        }
        if stop.load(Ordering::Relaxed) {
            return Err(LoadError::Stopped);
        }
        if clock.now() >= deadline {
            return Err(LoadError::NotConnected(timeout));
        }
        clock.sleep(interval).await;
    }
}

/// Waits until every node's tip is at `height` or above; the error names the first node that
/// was not.
pub async fn wait_height<A: NodeApi, C: Clock>(
    nodes: &[(String, A)],
    height: u64,
    timeout: Duration,
    interval: Duration,
    clock: &C,
    stop: &AtomicBool,
) -> Result<(), LoadError> {
    let deadline = clock.now() + timeout;
    for (name, n) in nodes {
        while !n.status().await.is_ok_and(|s| s.height >= height) {
            if stop.load(Ordering::Relaxed) {
                return Err(LoadError::Stopped);
            }
            if clock.now() >= deadline {
                return Err(LoadError::Behind { name: name.clone(), height, after: timeout });
            }
            clock.sleep(interval).await;
        }
    }
    Ok(())
}

/// Where the nodes ended.
#[derive(Debug)]
pub struct Convergence {
    /// All nodes answered with one tip (and, if asked, empty mempools) before the time-out;
    /// at the time-out, all nodes on one tip.
    pub converged: bool,
    /// The last status of each node that answered.
    pub statuses: Vec<(String, Status)>,
}

/// Polls until every node answers with the same tip and, when `drained` is asked, an empty
/// mempool; at `timeout`, the nodes count as converged if they share a tip.
pub async fn converge<A: NodeApi, C: Clock>(
    nodes: &[(String, A)],
    drained: bool,
    timeout: Duration,
    interval: Duration,
    clock: &C,
    stop: &AtomicBool,
) -> Result<Convergence, LoadError> {
    let deadline = clock.now() + timeout;
    loop {
        let mut statuses = Vec::with_capacity(nodes.len());
        for (name, n) in nodes {
            if let Ok(s) = n.status().await {
                statuses.push((name.clone(), s));
            }
        }
        let same = statuses.len() == nodes.len() && statuses.windows(2).all(|w| w[0].1.tip == w[1].1.tip);
        let empty = statuses.iter().all(|(_, s)| s.mempool_txs == 0);
        if same && (empty || !drained) {
            return Ok(Convergence { converged: true, statuses });
        }
        if stop.load(Ordering::Relaxed) {
            return Err(LoadError::Stopped);
        }
        if clock.now() >= deadline {
            return Ok(Convergence { converged: same, statuses });
        }
        clock.sleep(interval).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use super::*;
    use crate::load::watch::tests::{h, FakeChain};
    use crate::load::VirtualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test]
    async fn nodes_converge_when_their_tips_meet_and_their_mempools_drain() {
        let clock = VirtualClock::new();
        let chain = |blocks: Vec<(Duration, u8)>, mempool| FakeChain {
            clock: &clock,
            blocks: Mutex::new(blocks.into_iter().map(|(t, b)| (t, h(b), vec![])).collect()),
            mempool,
        };
        let stop = AtomicBool::new(false);
        let nodes = vec![
            ("a".to_string(), chain(vec![(ms(0), 1), (ms(0), 2)], 0)),
            ("b".to_string(), chain(vec![(ms(0), 1), (ms(1_200), 2)], 0)),
        ];
        let c = converge(&nodes, true, Duration::from_secs(5), ms(250), &clock, &stop).await.unwrap();
        assert!(c.converged);
        assert_eq!(clock.now(), ms(1_250));
        assert!(c.statuses.iter().all(|(_, s)| s.tip == h(2)));
        wait_height(&nodes, 2, Duration::from_secs(1), ms(100), &clock, &stop).await.unwrap();
        let e = wait_height(&nodes, 3, Duration::from_secs(1), ms(100), &clock, &stop).await.unwrap_err();
        assert_eq!(e.to_string(), "a did not reach the funded height 3 in 1 s");
        wait_connected(&nodes, 2, Duration::from_secs(1), ms(100), &clock, &stop).await.unwrap();
        assert!(matches!(
            wait_connected(&nodes, 3, Duration::from_secs(1), ms(100), &clock, &stop).await,
            Err(LoadError::NotConnected(_))
        ));

        // A mempool that never drains: at the time-out, one tip still counts as converged;
        // different tips do not.
        let t0 = clock.now();
        let busy = vec![
            ("a".to_string(), chain(vec![(ms(0), 1)], 5)),
            ("b".to_string(), chain(vec![(ms(0), 1)], 0)),
        ];
        let c = converge(&busy, true, Duration::from_secs(2), ms(250), &clock, &stop).await.unwrap();
        assert!(c.converged && clock.now() >= t0 + ms(2_000));
        let split = vec![
            ("a".to_string(), chain(vec![(ms(0), 1)], 0)),
            ("b".to_string(), chain(vec![(ms(0), 2)], 0)),
        ];
        let c = converge(&split, false, Duration::from_secs(2), ms(250), &clock, &stop).await.unwrap();
        assert!(!c.converged);
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(
            converge(&split, false, Duration::from_secs(2), ms(250), &clock, &stop).await,
            Err(LoadError::Stopped)
        ));
    }
}
