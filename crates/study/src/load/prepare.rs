//! The load before the clock starts: each fund's coins are split into as many outputs as the
//! load spends from it (one split transaction per fund), and every load transaction spends one
//! split output back to its owner, signed in advance (in parallel).

use rayon::prelude::*;

use scalechain_client::types::Owner;
use scalechain_client::{Client, ClientError};
use scalechain_consensus::params::{devnet_premine_key, SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::{genesis_block, Params};
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, SecretKey, Tx, TxIn, TxKind, TxOut, Witness};

/// The fee of each load transaction.
pub const FEE: u64 = 1_000;

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
    /// The split transactions, one per fund that can pay its share; they must be confirmed
    /// before the load is offered.
    pub splits: Vec<Tx>,
    /// The load, funds interleaved so consecutive transactions spend different splits.
    pub load: Vec<Tx>,
}

/// Splits each fund's coins into as many outputs as the load spends from it, and signs the
/// load: `total` transactions, each spending one split output back to its owner and paying
/// [`FEE`]. Funds whose coins cannot pay for their share are left out (the load is then
/// shorter than `total`).
pub fn prepare(kind: HashKind, chain_id: &Hash, funds: &[Fund], total: usize) -> Prepared {
    let n = funds.len().max(1);
    let per = total.div_ceil(n).max(1);
    let built: Vec<Option<(Tx, Vec<Tx>)>> = funds
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let have = Amount::checked_sum(f.coins.iter().map(|c| c.1.value)).ok()?.get();
            let lock = f.coins.first()?.1.lock;
            // The split pays at least one unit per byte on top of the fixed fee.
            let size = 17 + f.coins.len() * (36 + 1 + 33 + 64) + per * TxOut::LEN;
            let split_fee = (100 * FEE).checked_add(size as u64)?;
            let value_each = have.checked_sub(split_fee)? / per as u64;
            if value_each <= FEE {
                return None;
            }
            let out = TxOut { value: Amount::new(value_each).ok()?, lock };
            let prevs: Vec<OutPoint> = f.coins.iter().map(|c| c.0).collect();
            let split = transfer(&prevs, &f.key, vec![out; per], kind, chain_id);
            let sid = split.txid(kind);
            let left = total.saturating_sub(i * per).min(per);
            let back = TxOut { value: Amount::new(value_each - FEE).ok()?, lock };
            let load = (0..left)
                .map(|j| {
                    let prev = OutPoint { txid: sid, index: u32::try_from(j).ok()? };
                    Some(transfer(&[prev], &f.key, vec![back], kind, chain_id))
                })
                .collect::<Option<Vec<Tx>>>()?;
            Some((split, load))
        })
        .collect();
    let mut splits = Vec::with_capacity(n);
    let mut per_key: Vec<Vec<Tx>> = Vec::with_capacity(n);
    for (s, l) in built.into_iter().flatten() {
        splits.push(s);
        per_key.push(l);
    }
    // Interleave keys so consecutive transactions spend different splits.
    let mut load = Vec::with_capacity(total);
    let mut iters: Vec<_> = per_key.into_iter().map(|v| v.into_iter()).collect();
    while load.len() < total {
        let before = load.len();
        for it in &mut iters {
            if let Some(t) = it.next() {
                load.push(t);
            }
        }
        if load.len() == before {
            break;
        }
    }
    Prepared { splits, load }
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

/// The most coins of one key a split spends.
pub const MAX_FUND_COINS: usize = 1_000;

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
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn the_load_spends_each_split_output_once_interleaving_the_funds() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let funds: Vec<Fund> = premine_funds(&p, SigMode::Ed25519).into_iter().take(3).collect();
        let chain_id = p.chain_id();
        let Prepared { splits, load } = prepare(p.hash, &chain_id, &funds, 10);
        assert_eq!((splits.len(), load.len()), (3, 10));
        // 10 over 3 funds: 4 outputs per split.
        assert!(splits.iter().all(|s| s.outputs.len() == 4));
        let split_ids: Vec<Hash> = splits.iter().map(|s| s.txid(p.hash)).collect();
        let spent: Vec<OutPoint> = load.iter().map(|t| t.inputs[0].prev).collect();
        assert_eq!(spent.iter().collect::<HashSet<_>>().len(), 10, "no output spent twice");
        assert!(spent.iter().all(|o| split_ids.contains(&o.txid)));
        assert_ne!(spent[0].txid, spent[1].txid, "consecutive transactions spend different splits");
        for t in &load {
            let input: u64 = splits.iter().find(|s| s.txid(p.hash) == t.inputs[0].prev.txid).unwrap().outputs
                [0]
            .value
            .get();
            assert_eq!(input - t.outputs[0].value.get(), FEE);
            let msg = scalechain_types::keys::sighash(p.hash, &chain_id, &t.txid(p.hash));
            assert!(scalechain_types::keys::verify(
                &t.inputs[0].witness.pubkey,
                &msg,
                &t.inputs[0].witness.signature
            )
            .is_ok());
        }
        // A fund too small for its share is left out.
        let mut poor = premine_funds(&p, SigMode::Ed25519).into_iter().take(1).collect::<Vec<_>>();
        poor[0].coins[0].1.value = Amount::new(50_000).unwrap();
        assert!(prepare(p.hash, &chain_id, &poor, 100).splits.is_empty());
    }
}
