//! Funding a prepared load: each level of splits ([`Prepared::funding`](super::prepare::Prepared))
//! goes to the node in requests that fit the API's limits, and is confirmed before the next
//! level (which spends its outputs) is offered.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use scalechain_types::{Hash, HashKind, Tx};

use super::watch::wait_confirmed;
use super::{Clock, LoadError, NodeApi};

/// The most encoded bytes of transactions one request carries (hex doubles them on the wire;
/// the node's default body limit is 32 MiB).
pub const SUBMIT_BYTES: usize = 4 << 20;

/// The most transactions one request carries (the node's default limit is 10,000).
pub const SUBMIT_TXS: usize = 5_000;

/// The most encoded bytes offered before waiting for their confirmation: half a default
/// block, a quarter of a default mempool, so a large level never overflows either.
pub const WAVE_BYTES: usize = 16 << 20;

/// What [`fund`] achieved.
#[derive(Debug)]
pub struct Funded {
    /// Every funding transaction confirmed, over all levels: a load transaction is funded when
    /// the output it spends is one of theirs.
    pub confirmed: HashSet<Hash>,
    /// The height the last level was confirmed at.
    pub height: u64,
    /// Funding transactions the node refused, with its reason (their levels below were not
    /// offered).
    pub refused: Vec<(Hash, String)>,
}

/// `txs` cut into runs of at most [`SUBMIT_TXS`] transactions and [`SUBMIT_BYTES`] encoded
/// bytes (a larger transaction goes alone).
pub fn chunks(txs: &[Tx]) -> Vec<&[Tx]> {
    by_bytes(txs, SUBMIT_BYTES).into_iter().flat_map(|run| run.chunks(SUBMIT_TXS)).collect()
}

/// `txs` cut into runs of at most `max` encoded bytes (a larger transaction goes alone).
fn by_bytes(txs: &[Tx], max: usize) -> Vec<&[Tx]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0usize);
    for (i, t) in txs.iter().enumerate() {
        let size = t.encoded_len();
        if i > start && bytes + size > max {
            out.push(&txs[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < txs.len() {
        out.push(&txs[start..]);
    }
    out
}

/// Offers the funding level by level to `node` (tip at `from`), in waves of at most
/// [`WAVE_BYTES`], and waits up to `per_level` for each wave's confirmation. A transaction
/// whose parent was refused is not offered. Errors when a whole level is refused or a wave is
/// not confirmed in time.
#[allow(clippy::too_many_arguments)]
pub async fn fund<A: NodeApi, C: Clock>(
    node: &A,
    funding: &[Vec<Tx>],
    kind: HashKind,
    from: u64,
    per_level: Duration,
    poll: Duration,
    clock: &C,
    stop: &AtomicBool,
) -> Result<Funded, LoadError> {
    let mut done = Funded { confirmed: HashSet::new(), height: from, refused: Vec::new() };
    let mut parents: Option<HashSet<Hash>> = None;
    for level in funding {
        let offer: Vec<Tx> = level
            .iter()
            .filter(|t| parents.as_ref().is_none_or(|p| t.inputs.iter().all(|i| p.contains(&i.prev.txid))))
            .cloned()
            .collect();
        if offer.is_empty() {
            break;
        }
        let mut accepted = HashSet::with_capacity(offer.len());
        for wave in by_bytes(&offer, WAVE_BYTES) {
            let mut sent = HashSet::with_capacity(wave.len());
            for part in chunks(wave) {
                if stop.load(Ordering::Relaxed) {
                    return Err(LoadError::Stopped);
                }
                let r = node.submit(part).await?;
                for (t, v) in part.iter().zip(&r.results) {
                    let txid = t.txid(kind);
                    if v.accepted {
                        sent.insert(txid);
                    } else {
                        let why = format!(
                            "{}: {}",
                            v.reason.as_deref().unwrap_or("refused"),
                            v.detail.as_deref().unwrap_or("")
                        );
                        done.refused.push((txid, why));
                    }
                }
            }
            let n = sent.len();
            let (left, height) =
                wait_confirmed(node, sent.clone(), done.height, per_level, poll, clock, stop).await?;
            if stop.load(Ordering::Relaxed) {
                return Err(LoadError::Stopped);
            }
            if !left.is_empty() {
                return Err(LoadError::NotFunded { funded: n - left.len(), total: n, after: per_level });
            }
            done.height = height;
            accepted.extend(sent);
        }
        if accepted.is_empty() {
            let why = done.refused.first().map_or_else(String::new, |r| r.1.clone());
            return Err(LoadError::FundingRefused(format!("every funding transaction was refused: {why}")));
        }
        done.confirmed.extend(accepted.iter().copied());
        parents = Some(accepted);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use scalechain_client::types::{BlockTxids, Status, SubmitResult, Tip, TxResult};
    use scalechain_client::ClientError;
    use scalechain_consensus::params::SigMode;
    use scalechain_consensus::Params;

    use super::*;
    use crate::load::prepare::{premine_funds, prepare_with, Prepared};
    use crate::load::VirtualClock;

    /// A node that accepts what it is sent (but `refuse`), mines everything pooled into one
    /// block whenever its tip is read, and records each request's size.
    struct Miner {
        refuse: HashSet<Hash>,
        kind: HashKind,
        blocks: Mutex<Vec<Vec<Hash>>>,
        pool: Mutex<Vec<Hash>>,
        requests: Mutex<Vec<usize>>,
    }

    impl NodeApi for Miner {
        async fn status(&self) -> Result<Status, ClientError> {
            unreachable!("funding reads tips")
        }
        async fn tip(&self) -> Result<Tip, ClientError> {
            let mut blocks = self.blocks.lock().unwrap();
            let pooled: Vec<Hash> = std::mem::take(&mut *self.pool.lock().unwrap());
            if !pooled.is_empty() {
                blocks.push(pooled);
            }
            Ok(Tip { height: blocks.len() as u64, hash: Hash([blocks.len() as u8; 32]) })
        }
        async fn block_txids(&self, height: u64) -> Result<BlockTxids, ClientError> {
            let txids = self.blocks.lock().unwrap()[height as usize - 1].clone();
            Ok(BlockTxids { height, hash: Hash([height as u8; 32]), time: 0, txids })
        }
        async fn submit(&self, txs: &[Tx]) -> Result<SubmitResult, ClientError> {
            self.requests.lock().unwrap().push(txs.len());
            let results: Vec<TxResult> = txs
                .iter()
                .map(|t| {
                    let txid = t.txid(self.kind);
                    let accepted = !self.refuse.contains(&txid);
                    if accepted {
                        self.pool.lock().unwrap().push(txid);
                    }
                    TxResult {
                        txid: Some(txid),
                        accepted,
                        reason: (!accepted).then(|| "low-fee".into()),
                        detail: (!accepted).then(|| "too little".into()),
                    }
                })
                .collect();
            Ok(SubmitResult { accepted: results.iter().filter(|r| r.accepted).count(), results })
        }
    }

    #[tokio::test]
    async fn levels_are_confirmed_in_order_and_a_refused_parent_takes_its_subtree_out() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<_> = premine_funds(&p, SigMode::Ed25519).into_iter().take(2).collect();
        let Prepared { funding, .. } = prepare_with(p.hash, &p.chain_id(), &funds, 2 * 9, 3);
        assert_eq!(funding.iter().map(Vec::len).collect::<Vec<_>>(), [2, 6]);
        // The second fund's first split is refused: its three children are never offered.
        let refused = funding[0][1].txid(p.hash);
        let node = Miner {
            refuse: HashSet::from([refused]),
            kind: p.hash,
            blocks: Mutex::new(vec![]),
            pool: Mutex::new(vec![]),
            requests: Mutex::new(vec![]),
        };
        let clock = VirtualClock::new();
        let stop = AtomicBool::new(false);
        let ms = Duration::from_millis;
        let f = fund(&node, &funding, p.hash, 0, ms(1_000), ms(10), &clock, &stop).await.unwrap();
        assert_eq!(*node.requests.lock().unwrap(), [2, 3]);
        assert_eq!(f.refused.len(), 1);
        assert_eq!(f.refused[0], (refused, "low-fee: too little".into()));
        assert_eq!(f.confirmed.len(), 4);
        assert_eq!(f.height, 2, "one block a level");
        let blocks = node.blocks.lock().unwrap().clone();
        assert!(blocks[1].iter().all(|t| funding[1].iter().any(|x| x.txid(p.hash) == *t)));

        // Everything refused is an error naming the reason.
        let all: HashSet<Hash> = funding[0].iter().map(|t| t.txid(p.hash)).collect();
        let node = Miner { refuse: all, ..node };
        let e = fund(&node, &funding, p.hash, 0, ms(1_000), ms(10), &clock, &stop).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "funding refused: every funding transaction was refused: low-fee: too little"
        );
    }

    #[test]
    fn requests_stay_within_the_count_and_byte_limits() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<_> = premine_funds(&p, SigMode::Ed25519).into_iter().take(1).collect();
        let Prepared { load, .. } = prepare_with(p.hash, &p.chain_id(), &funds, 3, 1_000);
        let many = vec![load[0].clone(); 12_000];
        let parts = chunks(&many);
        assert_eq!(parts.iter().map(|c| c.len()).collect::<Vec<_>>(), [SUBMIT_TXS, SUBMIT_TXS, 2_000]);
        let big: Vec<Tx> =
            load.iter().take(3).map(|t| Tx { data: vec![0; SUBMIT_BYTES / 2], ..t.clone() }).collect();
        assert_eq!(chunks(&big).iter().map(|c| c.len()).collect::<Vec<_>>(), [1, 1, 1]);
        assert!(chunks(&[]).is_empty());
        // Waves: 3 MiB transactions, five to a 16 MiB wave.
        let huge: Vec<Tx> = (0..7u8).map(|i| Tx { data: vec![i; 3 << 20], ..load[0].clone() }).collect();
        assert_eq!(by_bytes(&huge, WAVE_BYTES).iter().map(|c| c.len()).collect::<Vec<_>>(), [5, 2]);
    }
}
