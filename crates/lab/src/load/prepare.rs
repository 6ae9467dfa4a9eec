//! The load before the clock starts: each fund's coins are split into as many outputs as the
//! load spends from it, and every load transaction spends one split output back to its owner,
//! signed in advance (in parallel).
//!
//! A split pays out at most [`MAX_SPLIT_OUTPUTS`] outputs, so every funding transaction stays
//! far below the mempool's size limit; a fund whose share is larger is split in a tree, level by
//! level (each level spends the outputs of the one before), and [`fund`](super::fund::fund)
//! submits the levels in requests that fit the API's limits.

use rayon::prelude::*;

use scalechain_client::types::Owner;
use scalechain_client::{Client, ClientError};
use scalechain_consensus::params::{devnet_premine_key, SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::{genesis_block, Params};
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, SecretKey, Tx, TxIn, TxKind, TxOut, Witness};

/// The fee of each load transaction.
pub const FEE: u64 = 1_000;

/// The most outputs one funding transaction pays (≈ 41 KB of outputs).
pub const MAX_SPLIT_OUTPUTS: usize = 1_000;

/// A transfer of `prevs` (all locked to `key`) to `outputs`, signed.
fn transfer(prevs: &[OutPoint], key: &SecretKey, outputs: Vec<TxOut>, kind: HashKind, chain_id: &Hash) -> Tx {
    let witness = Witness { pubkey: key.public(), signature: [0; 64] };
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: prevs.iter().map(|&prev| TxIn { prev, witness }).collect(),
        outputs,
        data: vec![],
    };
    tx.sign_inputs_with(kind, chain_id, key);
    tx
}

/// Coins of one key that a load may spend.
pub struct Fund {
    /// The key the coins are locked to.
    pub key: SecretKey,
    /// Its coins (all locked to `key`), with their values.
    pub coins: Vec<(OutPoint, TxOut)>,
}

/// A prepared load.
pub struct Prepared {
    /// The funding transactions by level: level 0 spends the funds' coins, each later level
    /// spends outputs of the level before. Each level must be confirmed before the next is
    /// offered, and the last before the load.
    pub funding: Vec<Vec<Tx>>,
    /// The load, funds interleaved so consecutive transactions spend different splits.
    pub load: Vec<Tx>,
}

/// The fee a split of `inputs` coins into `outputs` outputs pays: at least one unit per byte
/// of an upper bound of its size, on top of a fixed fee.
fn split_fee(inputs: usize, outputs: usize) -> u64 {
    let size = 17 + inputs * (36 + 1 + 33 + 64) + outputs * TxOut::LEN;
    100 * FEE + size as u64
}

/// How many leaves each child of a split that must yield `n > fan` leaves yields: the
/// smallest power of `fan` that `fan` children cover `n` with.
fn group(n: usize, fan: usize) -> usize {
    let mut g = 1usize;
    while g.saturating_mul(fan) < n {
        g = g.saturating_mul(fan);
    }
    g
}

/// The fees of the whole tree that turns `inputs` coins into `n` leaves, `fan` outputs at most
/// per transaction (`None` on overflow).
fn tree_fees(n: usize, inputs: usize, fan: usize) -> Option<u64> {
    if n <= fan {
        return Some(split_fee(inputs, n));
    }
    let g = group(n, fan);
    let c = n.div_ceil(g);
    let full = tree_fees(g, 1, fan)?.checked_mul(c as u64 - 1)?;
    let last = tree_fees(n - g * (c - 1), 1, fan)?;
    split_fee(inputs, c).checked_add(full)?.checked_add(last)
}

/// One fund's tree of splits.
struct Tree<'a> {
    key: &'a SecretKey,
    lock: Lock,
    leaf: u64,
    fan: usize,
    kind: HashKind,
    chain_id: &'a Hash,
    levels: Vec<Vec<Tx>>,
}

impl Tree<'_> {
    /// Splits `prevs` into `n` leaves of `self.leaf` each, at `level`; returns the leaves.
    fn split(&mut self, prevs: &[OutPoint], n: usize, level: usize) -> Option<Vec<OutPoint>> {
        let sizes: Vec<usize> = if n <= self.fan {
            vec![1; n]
        } else {
            let g = group(n, self.fan);
            let c = n.div_ceil(g);
            (0..c).map(|i| if i + 1 < c { g } else { n - g * (c - 1) }).collect()
        };
        let outputs = sizes
            .iter()
            .map(|&m| {
                let fees = if n <= self.fan { 0 } else { tree_fees(m, 1, self.fan)? };
                let value = self.leaf.checked_mul(m as u64)?.checked_add(fees)?;
                Some(TxOut { value: Amount::new(value).ok()?, lock: self.lock })
            })
            .collect::<Option<Vec<TxOut>>>()?;
        let tx = transfer(prevs, self.key, outputs, self.kind, self.chain_id);
        let txid = tx.txid(self.kind);
        if self.levels.len() <= level {
            self.levels.resize_with(level + 1, Vec::new);
        }
        self.levels[level].push(tx);
        let mut leaves = Vec::with_capacity(n);
        for (i, &m) in sizes.iter().enumerate() {
            let out = OutPoint { txid, index: u32::try_from(i).ok()? };
            if n <= self.fan {
                leaves.push(out);
            } else {
                leaves.extend(self.split(&[out], m, level + 1)?);
            }
        }
        Some(leaves)
    }
}

/// Splits each fund's coins into as many outputs as the load spends from it, and signs the
/// load: `total` transactions, each spending one split output back to its owner and paying
/// [`FEE`]. Funds whose coins cannot pay for their share are left out (the load is then
/// shorter than `total`).
pub fn prepare(kind: HashKind, chain_id: &Hash, funds: &[Fund], total: usize) -> Prepared {
    prepare_with(kind, chain_id, funds, total, MAX_SPLIT_OUTPUTS)
}

/// [`prepare`] with at most `fan` (≥ 2) outputs per funding transaction.
pub fn prepare_with(kind: HashKind, chain_id: &Hash, funds: &[Fund], total: usize, fan: usize) -> Prepared {
    let (funding, mut loads) = prepare_shaped(kind, chain_id, funds, &[(total, Shape::ONE_TO_ONE)], fan);
    Prepared { funding, load: loads.pop().unwrap_or_default() }
}

/// The shape of a transfer: how many coins it spends and how many it pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Inputs (≥ 1).
    pub inputs: usize,
    /// Outputs (≥ 1).
    pub outputs: usize,
}

impl Shape {
    /// One coin in, one out.
    pub const ONE_TO_ONE: Shape = Shape { inputs: 1, outputs: 1 };
}

/// One fund's leaves: the split outputs a load spends, each worth `leaf`.
struct Leaves {
    leaf: u64,
    outs: Vec<OutPoint>,
}

/// Splits the funds' coins for several loads at once and signs them: load `i` is `parts[i].0`
/// transfers of shape `parts[i].1`, each spending `inputs` leaves of one fund back to that
/// fund's key in `outputs` equal outputs, paying [`FEE`]. Consecutive transfers spend
/// different funds (taken in turn). Returns the funding levels and the loads (shorter than
/// asked when a fund cannot pay for its share: its transfers are left out).
pub fn prepare_shaped(
    kind: HashKind,
    chain_id: &Hash,
    funds: &[Fund],
    parts: &[(usize, Shape)],
    fan: usize,
) -> (Vec<Vec<Tx>>, Vec<Vec<Tx>>) {
    let fan = fan.max(2);
    if funds.is_empty() {
        return (Vec::new(), parts.iter().map(|_| Vec::new()).collect());
    }
    // Which leaves of which fund each transfer spends: funds in turn.
    let mut share = vec![0usize; funds.len()];
    let mut turn = 0usize;
    let plans: Vec<Vec<(usize, std::ops::Range<usize>)>> = parts
        .iter()
        .map(|&(count, shape)| {
            let k = shape.inputs.max(1);
            (0..count)
                .map(|_| {
                    let f = turn % funds.len();
                    turn += 1;
                    share[f] += k;
                    (f, share[f] - k..share[f])
                })
                .collect()
        })
        .collect();
    let built: Vec<Option<(Vec<Vec<Tx>>, Leaves)>> = funds
        .par_iter()
        .zip(&share)
        .map(|(f, &share)| {
            if share == 0 {
                return None;
            }
            let have = Amount::checked_sum(f.coins.iter().map(|c| c.1.value)).ok()?.get();
            let lock = f.coins.first()?.1.lock;
            let fees = tree_fees(share, f.coins.len(), fan)?;
            let leaf = have.checked_sub(fees)? / share as u64;
            if leaf <= FEE {
                return None;
            }
            let mut tree = Tree { key: &f.key, lock, leaf, fan, kind, chain_id, levels: Vec::new() };
            let prevs: Vec<OutPoint> = f.coins.iter().map(|c| c.0).collect();
            let outs = tree.split(&prevs, share, 0)?;
            Some((tree.levels, Leaves { leaf, outs }))
        })
        .collect();
    let mut funding: Vec<Vec<Tx>> = Vec::new();
    let mut leaves: Vec<Option<Leaves>> = Vec::with_capacity(funds.len());
    for b in built {
        let Some((levels, l)) = b else {
            leaves.push(None);
            continue;
        };
        if funding.len() < levels.len() {
            funding.resize_with(levels.len(), Vec::new);
        }
        for (level, txs) in levels.into_iter().enumerate() {
            funding[level].extend(txs);
        }
        leaves.push(Some(l));
    }
    // Every transfer signed in parallel.
    let loads = plans
        .into_iter()
        .zip(parts)
        .map(|(plan, &(_, shape))| {
            let (k, m) = (shape.inputs.max(1) as u64, shape.outputs.max(1));
            plan.into_par_iter()
                .filter_map(|(f, range)| {
                    let l = leaves[f].as_ref()?;
                    let fund = &funds[f];
                    let lock = fund.coins.first()?.1.lock;
                    let value = l.leaf.checked_mul(k)?.checked_sub(FEE)?;
                    let each = value / m as u64;
                    if each == 0 {
                        return None;
                    }
                    let outputs = (0..m)
                        .map(|o| {
                            let v = if o == 0 { each + value % m as u64 } else { each };
                            Some(TxOut { value: Amount::new(v).ok()?, lock })
                        })
                        .collect::<Option<Vec<TxOut>>>()?;
                    Some(transfer(l.outs.get(range)?, &fund.key, outputs, kind, chain_id))
                })
                .collect()
        })
        .collect();
    (funding, loads)
}

/// The devnet's funds from its genesis: every premine output, with its key.
pub fn premine_funds(p: &Params, sig: SigMode) -> Vec<Fund> {
    let coinbase = genesis_block(p).txs[0].txid(p.hash);
    (0..DEVNET_PREMINE_OUTPUTS as usize)
        .filter_map(|i| {
            let out = *p.premine.get(i)?;
            Some(Fund {
                key: devnet_premine_key(sig, i as u64),
                coins: vec![(OutPoint { txid: coinbase, index: u32::try_from(i).ok()? }, out)],
            })
        })
        .collect()
}

/// The most coins of one key a split spends (so that a split of them into
/// [`MAX_SPLIT_OUTPUTS`] outputs stays below the mempool's 100,000-byte default limit).
pub const MAX_FUND_COINS: usize = 400;

/// The spendable coins the node lists for premine keys `0..keys` at tip height `tip` (at most
/// [`MAX_FUND_COINS`] each, largest first); keys without coins are left out.
pub async fn premine_funds_on(
    node: &Client,
    p: &Params,
    sig: SigMode,
    keys: usize,
    tip: u64,
) -> Result<Vec<Fund>, ClientError> {
    let mut funds = Vec::with_capacity(keys);
    for i in 0..keys {
        let key = devnet_premine_key(sig, i as u64);
        let pk = key.public();
        let lock = Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(p.hash) };
        let mut coins: Vec<_> = node
            .utxos(&Owner::from(&lock), Some(100_000))
            .await?
            .into_iter()
            .filter(|u| u.scheme == lock.scheme && u.value.get() > 0)
            .filter(|u| !u.coinbase || tip.saturating_add(1) >= u.height.saturating_add(p.coinbase_maturity))
            .collect();
        coins.sort_by(|a, b| b.value.cmp(&a.value).then(a.outpoint().cmp(&b.outpoint())));
        coins.truncate(MAX_FUND_COINS);
        if !coins.is_empty() {
            funds.push(Fund { key, coins: coins.iter().map(|u| (u.outpoint(), u.txout())).collect() });
        }
    }
    Ok(funds)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::{HashMap, HashSet};

    use super::*;

    /// Checks a prepared load as a chain would: every funding transaction spends outputs that
    /// exist (the funds' coins or an earlier level's) once, pays at least its size, and every
    /// load transaction spends one leaf, pays [`FEE`] and is signed.
    fn check(p: &Params, funds: &[Fund], prepared: &Prepared, fan: usize) -> usize {
        let chain_id = p.chain_id();
        let mut coins: HashMap<OutPoint, u64> =
            funds.iter().flat_map(|f| f.coins.iter().map(|c| (c.0, c.1.value.get()))).collect();
        for level in &prepared.funding {
            let mut next = HashMap::new();
            for t in level {
                assert!(t.outputs.len() <= fan, "{} outputs", t.outputs.len());
                let size = t.encoded_len() as u64;
                assert!(size <= 100_000, "a funding transaction of {size} bytes");
                let spent: u64 =
                    t.inputs.iter().map(|i| coins.remove(&i.prev).expect("an unspent coin")).sum();
                let paid: u64 = t.outputs.iter().map(|o| o.value.get()).sum();
                assert!(spent - paid >= size, "fee {} for {size} bytes", spent - paid);
                let txid = t.txid(p.hash);
                for (i, o) in t.outputs.iter().enumerate() {
                    next.insert(OutPoint { txid, index: i as u32 }, o.value.get());
                }
            }
            coins.extend(next);
        }
        for t in &prepared.load {
            let input = coins.remove(&t.inputs[0].prev).expect("a leaf spent once");
            assert_eq!(input - t.outputs[0].value.get(), FEE);
            let msg = scalechain_types::keys::sighash(p.hash, &chain_id, &t.txid(p.hash));
            assert!(scalechain_types::keys::verify(
                &t.inputs[0].witness.pubkey,
                &msg,
                &t.inputs[0].witness.signature
            )
            .is_ok());
        }
        prepared.load.len()
    }

    #[test]
    fn the_load_spends_each_split_output_once_interleaving_the_funds() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<Fund> = premine_funds(&p, SigMode::Ed25519).into_iter().take(3).collect();
        let chain_id = p.chain_id();
        let prepared = prepare(p.hash, &chain_id, &funds, 10);
        assert_eq!((prepared.funding.len(), prepared.funding.iter().map(Vec::len).sum::<usize>()), (1, 3));
        assert_eq!(check(&p, &funds, &prepared, MAX_SPLIT_OUTPUTS), 10);
        // 10 over 3 funds in turn: 4, 3 and 3 outputs.
        let outs: Vec<usize> = prepared.funding[0].iter().map(|s| s.outputs.len()).collect();
        assert_eq!(outs, [4, 3, 3]);
        let spent: Vec<OutPoint> = prepared.load.iter().map(|t| t.inputs[0].prev).collect();
        assert_eq!(spent.iter().collect::<HashSet<_>>().len(), 10, "no output spent twice");
        assert_ne!(spent[0].txid, spent[1].txid, "consecutive transactions spend different splits");
        // A fund too small for its share is left out.
        let mut poor = premine_funds(&p, SigMode::Ed25519).into_iter().take(1).collect::<Vec<_>>();
        poor[0].coins[0].1.value = Amount::new(50_000).unwrap();
        let none = prepare(p.hash, &chain_id, &poor, 100);
        assert!(none.funding.is_empty() && none.load.is_empty());
    }

    #[test]
    fn shaped_loads_spend_their_inputs_from_one_fund_and_pay_equal_outputs_back() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<Fund> = premine_funds(&p, SigMode::Ed25519).into_iter().take(3).collect();
        let chain_id = p.chain_id();
        let two_by_three = Shape { inputs: 2, outputs: 3 };
        let parts = [(5, Shape::ONE_TO_ONE), (7, two_by_three)];
        let (funding, loads) = prepare_shaped(p.hash, &chain_id, &funds, &parts, MAX_SPLIT_OUTPUTS);
        assert_eq!(funding.iter().map(Vec::len).sum::<usize>(), 3);
        assert_eq!(loads.iter().map(Vec::len).collect::<Vec<_>>(), [5, 7]);
        // The leaves, by outpoint, with their values and keys.
        let mut leaves: HashMap<OutPoint, TxOut> = HashMap::new();
        for t in &funding[0] {
            let txid = t.txid(p.hash);
            for (i, o) in t.outputs.iter().enumerate() {
                leaves.insert(OutPoint { txid, index: i as u32 }, *o);
            }
        }
        assert_eq!(leaves.len(), 5 + 7 * 2, "as many leaves as inputs");
        for (t, shape) in
            loads[0].iter().map(|t| (t, Shape::ONE_TO_ONE)).chain(loads[1].iter().map(|t| (t, two_by_three)))
        {
            assert_eq!((t.inputs.len(), t.outputs.len()), (shape.inputs, shape.outputs));
            let ins: Vec<TxOut> =
                t.inputs.iter().map(|i| leaves.remove(&i.prev).expect("a leaf spent once")).collect();
            assert!(ins.iter().all(|o| o.lock == ins[0].lock), "one fund's coins");
            assert!(t.outputs.iter().all(|o| o.lock == ins[0].lock), "paid back to its key");
            let paid: u64 = t.outputs.iter().map(|o| o.value.get()).sum();
            let spent: u64 = ins.iter().map(|o| o.value.get()).sum();
            assert_eq!(spent - paid, FEE);
            let (lo, hi) = (
                t.outputs.iter().map(|o| o.value.get()).min(),
                t.outputs.iter().map(|o| o.value.get()).max(),
            );
            assert!(hi.unwrap() - lo.unwrap() < shape.outputs as u64, "equal outputs");
            let msg = scalechain_types::keys::sighash(p.hash, &chain_id, &t.txid(p.hash));
            for i in &t.inputs {
                assert!(scalechain_types::keys::verify(&i.witness.pubkey, &msg, &i.witness.signature).is_ok());
            }
        }
        assert!(leaves.is_empty());
        let a = &loads[1];
        assert_ne!(a[0].inputs[0].witness.pubkey, a[1].inputs[0].witness.pubkey, "funds taken in turn");
    }

    #[test]
    fn a_share_larger_than_one_split_is_funded_by_a_tree_of_bounded_splits() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<Fund> = premine_funds(&p, SigMode::Ed25519).into_iter().take(2).collect();
        // 2 × 50 leaves, 4 outputs a split: 4 × 16 per fund, so three levels.
        let prepared = prepare_with(p.hash, &p.chain_id(), &funds, 100, 4);
        assert_eq!(prepared.funding.len(), 3);
        assert_eq!(check(&p, &funds, &prepared, 4), 100);
        // An uneven share: the last child yields fewer leaves.
        let prepared = prepare_with(p.hash, &p.chain_id(), &funds[..1], 7, 2);
        assert_eq!(check(&p, &funds[..1], &prepared, 2), 7);
        // Several coins of one key go into the first split.
        let mut two: Vec<Fund> = premine_funds(&p, SigMode::Ed25519).into_iter().take(1).collect();
        let coin = two[0].coins[0].1;
        two[0].coins.push((OutPoint { txid: Hash([7; 32]), index: 3 }, coin));
        let prepared = prepare_with(p.hash, &p.chain_id(), &two, 30, 5);
        assert_eq!(prepared.funding[0][0].inputs.len(), 2);
        assert_eq!(check(&p, &two, &prepared, 5), 30);
    }

    #[test]
    fn split_fees_cover_every_level() {
        // One level: one split. Two levels of a fan of 10 for 25 leaves: 3 children (10, 10, 5).
        assert_eq!(tree_fees(5, 1, 10), Some(split_fee(1, 5)));
        assert_eq!(group(25, 10), 10);
        assert_eq!(tree_fees(25, 2, 10), Some(split_fee(2, 3) + 2 * split_fee(1, 10) + split_fee(1, 5)));
        assert_eq!(group(1_500_000 / 1024, MAX_SPLIT_OUTPUTS), MAX_SPLIT_OUTPUTS);
    }
}
