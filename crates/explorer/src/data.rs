//! What the pages show, read from the node: where a transaction is, the outputs its inputs
//! spend and who spent its outputs, an address's coins and history, the side branches. Reads
//! take the chain's lock one block at a time, so a page never holds up a block's commit for
//! longer than one block read; the scans without an index are bounded (the constants below).

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use scalechain_types::{Amount, Block, Hash, Header, OutPoint, Tx, TxOut};

use scalechain_chain::DiskStore;
use scalechain_replica::Replica;

/// Blocks after a transaction's own that are searched for the spender of its spent outputs.
pub const SPENDER_BLOCKS: u64 = 200;
/// Blocks one page of an address's history searches, newest first.
pub const HISTORY_BLOCKS: u64 = 200;
/// Side-branch blocks searched for a transaction that is neither pooled nor on the main chain.
pub const SIDE_BLOCKS: usize = 256;
/// How far below the heights asked for the search for side branches starts: a branch that
/// left the main chain further down is not found (the search costs one lookup per main-chain
/// block it passes).
pub const SIDE_REACH: u64 = 1_000;
/// Transactions a history or spender scan reads at most (a few huge blocks end it early).
pub const SCAN_TXS: usize = 400_000;

/// What a bounded scan looked at: main-chain heights `from..=to` (`from > to`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// The first height looked at.
    pub from: u64,
    /// The last height looked at.
    pub to: u64,
}

/// Where a transaction is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// In the mempool, with what admission learnt.
    Pooled {
        /// Its fee.
        fee: Amount,
        /// Its encoding's size.
        size: u64,
    },
    /// In the main chain.
    Confirmed {
        /// The block's height.
        height: u64,
        /// The block.
        block: Hash,
    },
    /// In a block of a side branch (and in neither of the above).
    Side {
        /// The block's height.
        height: u64,
        /// The block.
        block: Hash,
    },
}

/// The chain's read failed (the store): the page says so with a 503.
#[derive(Debug, thiserror::Error)]
#[error("reading the chain: {0}")]
pub struct ReadError(pub String);

fn read<T, E: std::fmt::Display>(r: Result<T, E>) -> Result<T, ReadError> {
    r.map_err(|e| ReadError(e.to_string()))
}

/// The main-chain block at `height`.
pub fn block_at(r: &Replica<DiskStore>, height: u64) -> Result<Option<Block>, ReadError> {
    read(r.chain.read().block_at(height))
}

/// Any stored block by hash (main chain or side branch).
pub fn block(r: &Replica<DiskStore>, hash: &Hash) -> Result<Option<Block>, ReadError> {
    read(r.chain.read().block(hash))
}

/// Is `hash` the main chain's block at `height`?
pub fn on_main(r: &Replica<DiskStore>, height: u64, hash: &Hash) -> bool {
    let c = r.chain.read();
    usize::try_from(height).ok().and_then(|h| c.main_chain().get(h)) == Some(hash)
}

/// A transaction wherever the node has it: the mempool, the main chain, or (searching the
/// newest [`SIDE_BLOCKS`] side-branch blocks within [`SIDE_REACH`] of the tip) a side branch.
pub fn find_tx(r: &Replica<DiskStore>, txid: &Hash) -> Result<Option<(Tx, Place)>, ReadError> {
    if let Some(e) = r.mempool.get(txid) {
        return Ok(Some(((*e.tx).clone(), Place::Pooled { fee: e.fee, size: e.size })));
    }
    if let Some((loc, tx)) = read(r.chain.read().confirmed_tx(txid))? {
        return Ok(Some((tx, Place::Confirmed { height: loc.height, block: loc.block })));
    }
    let kind = r.params.hash;
    let tip = r.chain.read().tip_height();
    let near = side_blocks(r, tip.saturating_sub(SIDE_REACH), u64::MAX);
    for h in near.into_iter().take(SIDE_BLOCKS) {
        let hash = h.hash(kind);
        if let Some(b) = block(r, &hash)? {
            if let Some(t) = b.txs.into_iter().find(|t| t.txid(kind) == *txid) {
                return Ok(Some((t, Place::Side { height: h.height, block: hash })));
            }
        }
    }
    Ok(None)
}

/// Headers of the blocks off the main chain at heights `from..=to` that branch off the main
/// chain at `from − SIDE_REACH` or above, newest (highest) first. Cost: one lookup per
/// main-chain block from there to `to`, and the side blocks found.
pub fn side_blocks(r: &Replica<DiskStore>, from: u64, to: u64) -> Vec<Header> {
    let c = r.chain.read();
    let main = c.main_chain();
    let tree = c.tree();
    let mut out = Vec::new();
    // Every side block descends from a main-chain block: walk the children that are not.
    let mut stack: Vec<Hash> = Vec::new();
    let start = usize::try_from(from.saturating_sub(SIDE_REACH)).unwrap_or(usize::MAX);
    let end = usize::try_from(to).unwrap_or(usize::MAX);
    for (h, hash) in main.iter().enumerate().take(end.saturating_add(1)).skip(start) {
        for child in tree.children(hash) {
            if main.get(h + 1) != Some(child) {
                stack.push(*child);
            }
        }
    }
    while let Some(h) = stack.pop() {
        if let Some(e) = tree.get(&h) {
            if e.header.height > to {
                continue;
            }
            if e.header.height >= from {
                out.push(e.header);
            }
            stack.extend(tree.children(&h).iter().copied());
        }
    }
    out.sort_by(|a, b| b.height.cmp(&a.height).then(b.time.cmp(&a.time)));
    out
}

/// What [`prev_output`] has read: the outputs of transactions by txid, and of the blocks read
/// by block hash (inputs often spend outputs of one transaction, or of one block).
#[derive(Default)]
pub struct PrevCache {
    txs: HashMap<Hash, Option<Vec<TxOut>>>,
    blocks: HashMap<Hash, Vec<(Hash, Vec<TxOut>)>>,
}

/// The output `op` names, if the node can find it: the UTXO set, the mempool, the main chain
/// (one block read per block not read before).
pub fn prev_output(
    r: &Replica<DiskStore>,
    op: &OutPoint,
    cache: &mut PrevCache,
) -> Result<Option<TxOut>, ReadError> {
    use scalechain_consensus::UtxoView;
    if let Some(c) = r.chain.read().utxos().coin(op) {
        return Ok(Some(c.out));
    }
    if !cache.txs.contains_key(&op.txid) {
        let outs = match r.mempool.get(&op.txid) {
            Some(e) => Some(e.tx.outputs.clone()),
            None => match read(r.chain.read().tx_location(&op.txid))? {
                None => None,
                Some(loc) => {
                    if let std::collections::hash_map::Entry::Vacant(slot) = cache.blocks.entry(loc.block) {
                        let kind = r.params.hash;
                        let txs = block(r, &loc.block)?
                            .map(|b| b.txs.into_iter().map(|t| (t.txid(kind), t.outputs)).collect())
                            .unwrap_or_default();
                        slot.insert(txs);
                    }
                    let at = usize::try_from(loc.position).unwrap_or(usize::MAX);
                    cache
                        .blocks
                        .get(&loc.block)
                        .and_then(|b| b.get(at))
                        .filter(|(id, _)| *id == op.txid)
                        .map(|(_, o)| o.clone())
                }
            },
        };
        cache.txs.insert(op.txid, outs);
    }
    let idx = usize::try_from(op.index).unwrap_or(usize::MAX);
    Ok(cache.txs.get(&op.txid).and_then(|o| o.as_ref()).and_then(|o| o.get(idx)).cloned())
}

/// Who spends an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spender {
    /// Nobody: it is in the UTXO set, and nothing pooled spends it.
    Unspent,
    /// A pooled transaction (the output is still in the UTXO set).
    Pooled(Hash),
    /// A main-chain transaction at this height.
    Confirmed(Hash, u64),
    /// Spent on the main chain, by a transaction outside the blocks searched.
    Beyond(Scan),
    /// Not unspent, and nothing searched spends it (its transaction is pooled or on a side
    /// branch and nothing pooled spends it).
    Unknown,
}

/// Marks in `out` (one slot per output of `txid`) the outputs `tx`'s inputs spend as spent by
/// `who`, keeping a spender already found.
fn mark_spent(out: &mut [Option<Spender>], txid: &Hash, tx: &Tx, who: impl Fn() -> Spender) {
    for i in tx.inputs.iter().filter(|i| i.prev.txid == *txid) {
        if let Some(slot) = usize::try_from(i.prev.index).ok().and_then(|x| out.get_mut(x)) {
            slot.get_or_insert_with(&who);
        }
    }
}

/// Who spends each output of `txid` (with `n` outputs), confirmed at `height` if it is: the
/// UTXO set, the mempool, then the [`SPENDER_BLOCKS`] main-chain blocks from `height` on.
pub fn spenders(
    r: &Replica<DiskStore>,
    txid: &Hash,
    n: usize,
    height: Option<u64>,
) -> Result<Vec<Spender>, ReadError> {
    use scalechain_consensus::UtxoView;
    let kind = r.params.hash;
    // A pooled spender first: its output is still in the UTXO set until a block confirms it.
    let mut out: Vec<Option<Spender>> = vec![None; n];
    let snap = r.mempool.snapshot();
    for e in snap.iter() {
        mark_spent(&mut out, txid, &e.tx, || Spender::Pooled(e.txid));
    }
    {
        let c = r.chain.read();
        for (i, slot) in out.iter_mut().enumerate() {
            let op = OutPoint { txid: *txid, index: u32::try_from(i).unwrap_or(u32::MAX) };
            if slot.is_none() && c.utxos().coin(&op).is_some() {
                *slot = Some(Spender::Unspent);
            }
        }
    }
    if let Some(h) = height {
        if out.iter().any(Option::is_none) {
            let tip = r.chain.read().tip_height();
            let last = tip.min(h.saturating_add(SPENDER_BLOCKS));
            let mut read_txs = 0usize;
            let mut scanned_to = h;
            for ht in h..=last {
                let Some(b) = block_at(r, ht)? else { break };
                scanned_to = ht;
                read_txs = read_txs.saturating_add(b.txs.len());
                for t in &b.txs {
                    mark_spent(&mut out, txid, t, || Spender::Confirmed(t.txid(kind), ht));
                }
                if out.iter().all(Option::is_some) || read_txs >= SCAN_TXS {
                    break;
                }
            }
            let scan = Scan { from: h, to: scanned_to };
            return Ok(out.into_iter().map(|s| s.unwrap_or(Spender::Beyond(scan))).collect());
        }
    }
    Ok(out.into_iter().map(|s| s.unwrap_or(Spender::Unknown)).collect())
}

/// One transaction of an address's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The transaction.
    pub txid: Hash,
    /// Its block's height (`None`: pooled).
    pub height: Option<u64>,
    /// Its block's time, ms since the Unix epoch (`None`: pooled).
    pub time: Option<u64>,
    /// What its outputs pay the address.
    pub received: u64,
    /// Inputs it spends with the address's key.
    pub spent_inputs: usize,
}

/// A page of an address's history: its pooled transactions (first page only), then main-chain
/// transactions that pay it or spend with its key, newest first, from height `before − 1` down,
/// until `max` are found, [`HISTORY_BLOCKS`] blocks or [`SCAN_TXS`] transactions were read.
pub fn history(
    r: &Replica<DiskStore>,
    pkh: &Hash,
    before: Option<u64>,
    max: usize,
) -> Result<(Vec<Touch>, Option<Scan>), ReadError> {
    let kind = r.params.hash;
    let touch = |t: &Tx| -> Option<(u64, usize)> {
        let received: u64 =
            t.outputs.iter().filter(|o| o.lock.pubkey_hash == *pkh).map(|o| o.value.get()).sum();
        let paid = t.outputs.iter().any(|o| o.lock.pubkey_hash == *pkh);
        let spent = t.inputs.iter().filter(|i| i.witness.pubkey.hash(kind) == *pkh).count();
        (paid || spent > 0).then_some((received, spent))
    };
    let mut out = Vec::new();
    if before.is_none() {
        let snap = r.mempool.snapshot();
        let mut pooled: Vec<_> =
            snap.iter().filter_map(|e| touch(&e.tx).map(|t| (e.seq, e.txid, t))).collect();
        pooled.sort_by_key(|p| std::cmp::Reverse(p.0));
        out.extend(pooled.into_iter().take(max).map(|(_, txid, (received, spent_inputs))| Touch {
            txid,
            height: None,
            time: None,
            received,
            spent_inputs,
        }));
    }
    let tip = r.chain.read().tip_height();
    let top = before.map_or(tip, |b| b.saturating_sub(1).min(tip));
    if before == Some(0) {
        return Ok((out, None));
    }
    let mut read_txs = 0usize;
    let mut last = top;
    let floor = top.saturating_sub(HISTORY_BLOCKS - 1);
    for ht in (floor..=top).rev() {
        let Some(b) = block_at(r, ht)? else { break };
        last = ht;
        read_txs = read_txs.saturating_add(b.txs.len());
        for t in &b.txs {
            if let Some((received, spent_inputs)) = touch(t) {
                out.push(Touch {
                    txid: t.txid(kind),
                    height: Some(ht),
                    time: Some(b.header.time),
                    received,
                    spent_inputs,
                });
            }
        }
        if out.len() >= max || read_txs >= SCAN_TXS {
            break;
        }
    }
    Ok((out, Some(Scan { from: top, to: last })))
}

/// The node's stage timers (`GET /metrics` histograms) the profile page draws: metric name
/// (after the prefix, before `_seconds`) and what it times.
pub const STAGES: &[(&str, &str)] = &[
    ("pipeline_wait", "a batch waiting in the pipeline's buffer"),
    ("pipeline_verify", "verifying and admitting a batch"),
    ("pipeline_relay", "relaying admitted transactions"),
    ("block_accept", "validating and committing a block"),
    ("api_request", "answering an API request"),
];

/// One stage's latency histogram, read from the node's metrics text.
#[derive(Clone, Debug, PartialEq)]
pub struct StageTimes {
    /// The metric (e.g. `pipeline_verify`).
    pub name: &'static str,
    /// What it times.
    pub what: &'static str,
    /// Observations.
    pub count: u64,
    /// Their sum, seconds.
    pub sum_s: f64,
    /// Per bucket: its upper bound in seconds (infinite for the last) and the observations in
    /// it alone (not cumulative).
    pub buckets: Vec<(f64, u64)>,
}

/// The [`STAGES`] histograms found in `text` (the OpenMetrics text of `GET /metrics`).
pub fn stage_times(text: &str) -> Vec<StageTimes> {
    let prefix = scalechain_node::view::METRICS_PREFIX;
    STAGES
        .iter()
        .filter_map(|&(name, what)| {
            let bucket = format!("{prefix}_{name}_seconds_bucket{{le=\"");
            let count = format!("{prefix}_{name}_seconds_count ");
            let sum = format!("{prefix}_{name}_seconds_sum ");
            let mut cumulative: Vec<(f64, u64)> = Vec::new();
            let (mut n, mut total) = (None, 0.0);
            for line in text.lines() {
                if let Some(rest) = line.strip_prefix(&bucket) {
                    let (le, v) = rest.split_once("\"}")?;
                    let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
                    cumulative.push((le, v.trim().parse().ok()?));
                } else if let Some(v) = line.strip_prefix(&count) {
                    n = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix(&sum) {
                    total = v.trim().parse().unwrap_or(0.0);
                }
            }
            let mut prev = 0u64;
            let buckets = cumulative
                .into_iter()
                .map(|(le, c)| {
                    let own = c.saturating_sub(prev);
                    prev = c;
                    (le, own)
                })
                .collect();
            Some(StageTimes { name, what, count: n?, sum_s: total, buckets })
        })
        .collect()
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC (`2026-11-27T07:00:00.000Z`).
pub fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_histograms_are_read_from_the_metrics_text() {
        let text = "# TYPE scalechain_pipeline_verify_seconds histogram\n\
                    scalechain_pipeline_verify_seconds_sum 0.5\n\
                    scalechain_pipeline_verify_seconds_count 7\n\
                    scalechain_pipeline_verify_seconds_bucket{le=\"1.0e-5\"} 2\n\
                    scalechain_pipeline_verify_seconds_bucket{le=\"4.0e-5\"} 5\n\
                    scalechain_pipeline_verify_seconds_bucket{le=\"+Inf\"} 7\n\
                    scalechain_block_accept_seconds_sum 0.0\n";
        let st = stage_times(text);
        assert_eq!(st.len(), 1, "a stage without its count is left out");
        assert_eq!((st[0].name, st[0].count, st[0].sum_s), ("pipeline_verify", 7, 0.5));
        assert_eq!(st[0].buckets, vec![(1e-5, 2), (4e-5, 3), (f64::INFINITY, 2)]);
    }

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
    }
}
