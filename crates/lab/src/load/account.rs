//! The account of a load at its end: every transaction an API accepted is confirmed, still
//! pooled (and where), removed from the pools with a reason the nodes logged
//! (`GET /mempool/removed`), or lost — accepted, then gone without a word.

use std::collections::{BTreeMap, HashMap, HashSet};

use scalechain_client::types::{RemovalJson, TxState};
use scalechain_client::{Client, ClientError};
use scalechain_types::Hash;

/// Most txids of one node's pool read in one request (the node's maximum).
const POOL_LISTING: usize = 100_000;
/// Most removal-log entries read in one request (the node's maximum).
const LOG_PAGE: usize = 10_000;
/// Lost txids named in the account.
const SAMPLE: usize = 5;

/// Where the accepted transactions ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Transactions an API accepted.
    pub accepted: usize,
    /// Of them, in a block of the main chain.
    pub confirmed: usize,
    /// Not confirmed, but pooled on at least one node.
    pub pooled: usize,
    /// Those, by node (a transaction pooled on several nodes counts on each).
    pub pooled_at: BTreeMap<String, usize>,
    /// Not confirmed nor pooled, but in a node's removal log: by `kind` (with `: reason` when
    /// the log gives one).
    pub removed: BTreeMap<String, usize>,
    /// Accepted, and now nowhere: not confirmed, not pooled, not logged as removed.
    pub lost: usize,
    /// A few of the lost.
    pub lost_sample: Vec<Hash>,
    /// Nodes whose removal log had forgotten entries (a loss there may be an unlogged removal).
    pub log_overflowed: Vec<String>,
}

impl Accounting {
    /// One line for a report.
    pub fn line(&self) -> String {
        let pooled: Vec<String> = self.pooled_at.iter().map(|(n, c)| format!("{n} {c}")).collect();
        let removed: Vec<String> = self.removed.iter().map(|(k, c)| format!("{k} {c}")).collect();
        format!(
            "accepted {}: confirmed {}, pooled {}{}, removed {}{}, lost {}",
            self.accepted,
            self.confirmed,
            self.pooled,
            if pooled.is_empty() { String::new() } else { format!(" ({})", pooled.join(", ")) },
            self.removed.values().sum::<usize>(),
            if removed.is_empty() { String::new() } else { format!(" ({})", removed.join(", ")) },
            self.lost
        )
    }
}

/// What the nodes say about the unconfirmed: their pools and their removal logs.
#[derive(Debug, Default)]
pub struct Evidence {
    /// Each node's pooled txids.
    pub pools: Vec<(String, HashSet<Hash>)>,
    /// Each node's removal log.
    pub removals: Vec<(String, Vec<RemovalJson>)>,
}

/// The account from the accepted and confirmed txids and the nodes' evidence (pure).
pub fn classify(
    accepted: &HashSet<Hash>,
    confirmed: &HashSet<Hash>,
    ev: &Evidence,
) -> (Accounting, Vec<Hash>) {
    let mut a = Accounting { accepted: accepted.len(), ..Accounting::default() };
    let mut reasons: HashMap<Hash, String> = HashMap::new();
    for (_, log) in &ev.removals {
        for r in log {
            let why = match &r.reason {
                Some(reason) => format!("{}: {reason}", r.kind),
                None => r.kind.clone(),
            };
            reasons.entry(r.txid).or_insert(why);
        }
    }
    let mut lost = Vec::new();
    for t in accepted {
        if confirmed.contains(t) {
            a.confirmed += 1;
            continue;
        }
        let mut pooled = false;
        for (name, pool) in &ev.pools {
            if pool.contains(t) {
                pooled = true;
                *a.pooled_at.entry(name.clone()).or_default() += 1;
            }
        }
        if pooled {
            a.pooled += 1;
        } else if let Some(why) = reasons.get(t) {
            *a.removed.entry(why.clone()).or_default() += 1;
        } else {
            lost.push(*t);
        }
    }
    lost.sort();
    a.lost = lost.len();
    a.lost_sample = lost.iter().take(SAMPLE).copied().collect();
    (a, lost)
}

/// Accounts for `accepted` given the `confirmed` ones, asking every node. A transaction that
/// looks lost is looked up on every node once more (`GET /txs/{txid}`), so one confirmed or
/// pooled after the pools were read is not called lost.
pub async fn account(
    nodes: &[(String, Client)],
    accepted: &HashSet<Hash>,
    confirmed: &HashSet<Hash>,
) -> Result<Accounting, ClientError> {
    let mut ev = Evidence::default();
    let mut overflowed = Vec::new();
    if accepted.len() > confirmed.len() {
        for (name, c) in nodes {
            let m = c.mempool(Some(POOL_LISTING)).await?;
            ev.pools.push((name.clone(), m.txids.into_iter().collect()));
            let mut log = Vec::new();
            let mut after = 0;
            loop {
                let page = c.mempool_removed(after, Some(LOG_PAGE)).await?;
                if after == 0 && page.oldest > 1 {
                    overflowed.push(name.clone());
                }
                let Some(last) = page.entries.last().map(|e| e.seq) else { break };
                after = last;
                log.extend(page.entries);
                if after >= page.last {
                    break;
                }
            }
            ev.removals.push((name.clone(), log));
        }
    }
    let (mut a, lost) = classify(accepted, confirmed, &ev);
    a.log_overflowed = overflowed;
    // A second look at the lost, one by one.
    let mut still = Vec::new();
    for t in lost {
        let mut found = None;
        for (name, c) in nodes {
            match c.tx(&t).await {
                Ok(s) => {
                    found = Some((name.clone(), s.status));
                    if s.status == TxState::Confirmed {
                        break;
                    }
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        match found {
            Some((_, TxState::Confirmed)) => a.confirmed += 1,
            Some((name, TxState::Mempool)) => {
                a.pooled += 1;
                *a.pooled_at.entry(name).or_default() += 1;
            }
            None => still.push(t),
        }
    }
    a.lost = still.len();
    a.lost_sample = still.into_iter().take(SAMPLE).collect();
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(b: u8) -> Hash {
        Hash([b; 32])
    }

    #[test]
    fn every_accepted_transaction_is_confirmed_pooled_removed_or_lost() {
        let accepted: HashSet<Hash> = (1..=6).map(h).collect();
        let confirmed: HashSet<Hash> = [h(1), h(2)].into();
        let removal = |seq, txid, kind: &str, reason: Option<&str>| RemovalJson {
            seq,
            txid,
            kind: kind.into(),
            reason: reason.map(str::to_string),
        };
        let ev = Evidence {
            pools: vec![("peer-0".into(), [h(3), h(9)].into()), ("miner-0".into(), [h(3)].into())],
            removals: vec![
                ("peer-0".into(), vec![removal(1, h(4), "evicted", None)]),
                (
                    "miner-0".into(),
                    vec![
                        removal(1, h(5), "dropped", Some("missing-input")),
                        removal(2, h(4), "evicted", None),
                    ],
                ),
            ],
        };
        let (a, lost) = classify(&accepted, &confirmed, &ev);
        assert_eq!(lost, [h(6)]);
        assert_eq!((a.accepted, a.confirmed, a.pooled, a.lost), (6, 2, 1, 1));
        assert_eq!(a.pooled_at, BTreeMap::from([("miner-0".into(), 1), ("peer-0".into(), 1)]));
        assert_eq!(a.removed, BTreeMap::from([("dropped: missing-input".into(), 1), ("evicted".into(), 1)]));
        assert_eq!(a.lost_sample, [h(6)]);
        assert_eq!(
            a.line(),
            "accepted 6: confirmed 2, pooled 1 (miner-0 1, peer-0 1), removed 2 (dropped: missing-input 1, evicted 1), lost 1"
        );
        let all: HashSet<Hash> = accepted.clone();
        let (a, lost) = classify(&accepted, &all, &Evidence::default());
        assert!(lost.is_empty());
        assert_eq!((a.confirmed, a.lost), (6, 0));
    }
}
