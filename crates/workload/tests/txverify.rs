//! `verify_txs` over generated workloads: every strategy gives the same verdict on every
//! transaction, valid or not, whatever the chunking and thread count.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{
    verify_txs, verify_txs_with_ids, Apps, Params, TxEnv, TxIds, TxRule, TxVerdict, UtxoSet, VerifyConfig,
    VerifyMode,
};
use scalechain_types::{Amount, Hash, HashKind, OutPoint, Scheme, Tx, TxOut};
use scalechain_workload::fixed::{transfers, Spec, FEE};

type Verdicts = Vec<Result<TxVerdict, TxRule>>;

fn verdicts(p: &Params, utxos: &UtxoSet, txs: &[Tx], mode: VerifyMode, batch: usize) -> Verdicts {
    let apps = Apps::none();
    let verify = VerifyConfig { mode, seed: [4; 32], batch_size: batch };
    let chain_id = Hash([1; 32]);
    let ctx = ConnectCtx::new(p, &chain_id, &apps, &verify);
    let app_state = BTreeMap::new();
    let env = TxEnv { ctx, view: utxos, app_state: &app_state, height: 50, time: 0 };
    verify_txs(&env, txs)
}

fn rule(v: &Result<TxVerdict, TxRule>) -> &'static str {
    match v {
        Ok(_) => "ok",
        Err(e) => e.rule(),
    }
}

#[test]
fn every_strategy_gives_the_same_verdicts_on_valid_and_invalid_transactions() {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let w = transfers(&p, &Hash([1; 32]), &Spec::simple(300, 3));
    let mut txs = w.txs.clone();
    for i in [5, 70, 71, 299] {
        txs[i].inputs[0].witness.signature[7] ^= 0x10;
    }
    txs[100].inputs[0].prev = OutPoint { txid: Hash([0xee; 32]), index: 0 };
    txs[150].outputs[0].value = Amount::new(2_000_000).unwrap();
    let lock = w.txs[0].outputs[0].lock;
    txs[200] = Tx::coinbase(50, vec![TxOut { value: Amount::new(1).unwrap(), lock }]);
    let expect = |i: usize| match i {
        5 | 70 | 71 | 299 => "bad-signature",
        100 => "missing-input",
        150 => "outputs-exceed-inputs",
        200 => "loose-coinbase",
        _ => "ok",
    };
    let reference = verdicts(&p, &w.utxos, &txs, VerifyMode::Sequential, 64);
    for (i, v) in reference.iter().enumerate() {
        assert_eq!(rule(v), expect(i), "tx {i}");
        if let Ok(v) = v {
            assert_eq!(v.fee.get(), FEE);
            assert_eq!(v.txid, txs[i].txid(p.hash));
        }
    }
    for mode in [VerifyMode::Batch, VerifyMode::Parallel] {
        for batch in [1, 7, 64, 256] {
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                let got = pool.install(|| verdicts(&p, &w.utxos, &txs, mode, batch));
                assert_eq!(got, reference, "{mode:?} batch {batch} threads {threads}");
            }
        }
    }
}

#[test]
fn secp256k1_and_multi_input_workloads_agree_across_strategies() {
    let p = Params::devnet(HashKind::Blake3, SigMode::Mixed);
    let spec = Spec { n: 80, inputs: 3, outputs: 2, scheme: Scheme::Secp256k1, keys: 16, seed: 9 };
    let w = transfers(&p, &Hash([1; 32]), &spec);
    let mut txs = w.txs.clone();
    txs[10].inputs[2].witness.signature[40] ^= 1;
    let reference = verdicts(&p, &w.utxos, &txs, VerifyMode::Sequential, 16);
    assert!(matches!(reference[10], Err(TxRule::BadSignature { input: 2, .. })), "{:?}", reference[10]);
    assert_eq!(reference.iter().filter(|v| v.is_ok()).count(), 79);
    for mode in [VerifyMode::Batch, VerifyMode::Parallel] {
        assert_eq!(verdicts(&p, &w.utxos, &txs, mode, 16), reference, "{mode:?}");
    }
}

struct Cache(std::collections::HashSet<Hash>);

impl scalechain_consensus::SigCache for Cache {
    fn contains(&self, wtxid: &Hash) -> bool {
        self.0.contains(wtxid)
    }
}

#[test]
fn a_signature_cache_skips_exactly_the_transactions_it_holds_in_every_mode() {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let w = transfers(&p, &Hash([1; 32]), &Spec::simple(40, 5));
    let mut txs = w.txs.clone();
    for i in [3, 9] {
        txs[i].inputs[0].witness.signature[7] ^= 0x10;
    }
    let cache = Cache([txs[3].wtxid(p.hash)].into_iter().collect());
    let apps = Apps::none();
    let chain_id = Hash([1; 32]);
    let app_state = BTreeMap::new();
    for mode in VerifyMode::ALL {
        let verify = VerifyConfig { mode, seed: [4; 32], batch_size: 8 };
        let mut ctx = ConnectCtx::new(&p, &chain_id, &apps, &verify);
        ctx.sig_cache = Some(&cache);
        let env = TxEnv { ctx, view: &w.utxos, app_state: &app_state, height: 50, time: 0 };
        let got: Vec<&str> = verify_txs(&env, &txs).iter().map(rule).collect();
        for (i, r) in got.iter().enumerate() {
            let want = if i == 9 { "bad-signature" } else { "ok" };
            assert_eq!(*r, want, "{mode:?} tx {i}");
        }
        // With the ids the caller computed, the same verdicts: the cache is looked up by the
        // given wtxid, the sighash made from the given txid.
        let ids: Vec<TxIds> =
            txs.iter().map(|t| TxIds { txid: t.txid(p.hash), wtxid: t.wtxid(p.hash) }).collect();
        assert_eq!(verify_txs_with_ids(&env, &txs, &ids), verify_txs(&env, &txs), "{mode:?}");
        // Ids of another length are ignored.
        assert_eq!(verify_txs_with_ids(&env, &txs, &ids[1..]), verify_txs(&env, &txs), "{mode:?}");
        // The ids are what is looked up: given a wtxid the cache holds, tx 9's bad signature is
        // skipped like tx 3's (so a caller must pass each transaction's own).
        let mut vouched = ids.clone();
        vouched[9].wtxid = txs[3].wtxid(p.hash);
        let got: Vec<&str> = verify_txs_with_ids(&env, &txs, &vouched).iter().map(rule).collect();
        assert_eq!(got[9], "ok", "{mode:?}");
    }
}
