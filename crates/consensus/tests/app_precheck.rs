//! The application modules' batch pre-check hook: `connect_block` and `verify_txs` run it in
//! `batch` and `parallel` modes (never in `sequential`), `apply` takes the verdicts from it, and
//! every mode reaches the same verdicts — the same failing transaction and rule for a block.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use scalechain_consensus::app::Precheck;
use scalechain_consensus::check::check_block;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{
    connect_block, verify_txs, AppContext, AppError, AppModule, AppOverlay, Apps, BlockError, Params, TxEnv,
    UtxoSet, VerifyConfig, VerifyMode,
};
use scalechain_types::{Block, Hash, HashKind, Header, Lock, Scheme, SecretKey, Target, Tx, TxKind, TxOut};

/// Kind 9: `data = [proof, name...]`. The "proof" (stateless, batchable) is valid iff its byte
/// is even; the state rule is that a name is registered once.
#[derive(Default)]
struct Proofs {
    batches: AtomicUsize,
    batched: AtomicUsize,
    singles: AtomicUsize,
}

fn proof_ok(tx: &Tx) -> Result<(), AppError> {
    if tx.data[0].is_multiple_of(2) {
        Ok(())
    } else {
        Err(AppError::invalid("bad-proof", format!("odd proof {}", tx.data[0])))
    }
}

impl AppModule for Proofs {
    fn kind(&self) -> TxKind {
        TxKind(9)
    }
    fn name(&self) -> &str {
        "proofs"
    }
    fn check_stateless(&self, tx: &Tx, _: &Params) -> Result<(), AppError> {
        if tx.data.len() < 2 {
            return Err(AppError::invalid("too-short", ""));
        }
        Ok(())
    }
    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError> {
        if state.get(&tx.data[1..]).is_some() {
            return Err(AppError::on_state("name-taken", ""));
        }
        match ctx.precheck {
            Precheck::Passed => {}
            Precheck::Failed(e) => return Err(e.clone()),
            Precheck::None => {
                self.singles.fetch_add(1, Ordering::Relaxed);
                proof_ok(tx)?;
            }
        }
        state.put(&tx.data[1..], vec![1]);
        Ok(())
    }
    fn precheck_batch(&self, txs: &[&Tx], _: &Params, _: &[u8; 32]) -> Option<Vec<Result<(), AppError>>> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batched.fetch_add(txs.len(), Ordering::Relaxed);
        Some(txs.iter().map(|tx| proof_ok(tx)).collect())
    }
}

fn app_tx(proof: u8, name: u16) -> Tx {
    let mut data = vec![proof];
    data.extend_from_slice(&name.to_le_bytes());
    Tx { version: 1, kind: TxKind(9), inputs: vec![], outputs: vec![], data }
}

fn connect(mode: VerifyMode, txs: &[Tx]) -> (Result<(), BlockError>, Arc<Proofs>) {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let key = SecretKey::from_seed(Scheme::Ed25519, [3; 32]);
    let lock = Lock { scheme: Scheme::Ed25519, pubkey_hash: key.public().hash(p.hash) };
    let header = Header {
        version: 1,
        height: 100,
        prev_hash: Hash::ZERO,
        merkle_root: Hash::ZERO,
        time: 0,
        target: Target(Hash([0xff; 32])),
        nonce: 0,
    };
    let mut block = Block { header, txs: txs.to_vec() };
    block.txs.insert(0, Tx::coinbase(100, vec![TxOut { value: p.subsidy(100), lock }]));
    block.header.merkle_root = block.compute_merkle_root(p.hash);
    let module = Arc::new(Proofs::default());
    let mut apps = Apps::none();
    apps.register(module.clone());
    let mut verify = VerifyConfig::parallel([1; 32]).with_mode(mode);
    verify.batch_size = 64;
    let chain_id = Hash([9; 32]);
    let ctx = ConnectCtx::new(&p, &chain_id, &apps, &verify);
    let res = check_block(&block, &p, &apps)
        .and_then(|checked| connect_block(&ctx, &checked, &UtxoSet::new(), &BTreeMap::new()))
        .map(|_| ());
    (res, module)
}

fn failure(r: &Result<(), BlockError>) -> Option<(usize, &'static str)> {
    match r {
        Ok(()) => None,
        Err(e @ BlockError::Tx { index, .. }) => Some((*index, e.rule())),
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn connect_block_uses_the_batch_and_every_mode_agrees() {
    let valid: Vec<Tx> = (0..300u16).map(|i| app_tx(2, i)).collect();
    // All valid: batches in batch and parallel modes, single checks in sequential mode.
    for mode in VerifyMode::ALL {
        let (r, m) = connect(mode, &valid);
        assert!(r.is_ok(), "{mode:?}");
        let (batches, batched, singles) = (
            m.batches.load(Ordering::Relaxed),
            m.batched.load(Ordering::Relaxed),
            m.singles.load(Ordering::Relaxed),
        );
        if mode == VerifyMode::Sequential {
            assert_eq!((batches, singles), (0, 300));
        } else {
            assert_eq!((batched, singles), (300, 0), "{mode:?}");
            assert!(batches >= 300 / 64, "{mode:?}: chunks of at most 64");
        }
    }
    // One bad proof among many: named with its index in every mode.
    let mut txs = valid.clone();
    txs.insert(200, app_tx(3, 1000));
    for mode in VerifyMode::ALL {
        assert_eq!(failure(&connect(mode, &txs).0), Some((201, "bad-proof")), "{mode:?}");
    }
    // A state rule earlier in the block than a bad proof comes first, in every mode (another
    // valid proof for a name already taken: a different transaction, so not a duplicate txid,
    // which the stateless rules would refuse before any state rule).
    txs.insert(50, app_tx(4, 7));
    for mode in VerifyMode::ALL {
        assert_eq!(failure(&connect(mode, &txs).0), Some((51, "name-taken")), "{mode:?}");
    }
}

#[test]
fn verify_txs_uses_the_batch_and_every_mode_agrees() {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let mut txs: Vec<Tx> = (0..200u16).map(|i| app_tx(if i % 37 == 5 { 1 } else { 0 }, i)).collect();
    txs.push(app_tx(0, 1)); // a name taken by no committed state: fine alone
    txs.push(Tx { version: 1, kind: TxKind(9), inputs: vec![], outputs: vec![], data: vec![1] }); // too short
    let mut all = Vec::new();
    for mode in VerifyMode::ALL {
        let module = Arc::new(Proofs::default());
        let mut apps = Apps::none();
        apps.register(module.clone());
        let mut verify = VerifyConfig::parallel([2; 32]).with_mode(mode);
        verify.batch_size = 64;
        let chain_id = Hash([9; 32]);
        let state = BTreeMap::new();
        let utxos = UtxoSet::new();
        let env = TxEnv {
            ctx: ConnectCtx::new(&p, &chain_id, &apps, &verify),
            view: &utxos,
            app_state: &state,
            height: 5,
            time: 0,
        };
        let verdicts: Vec<Option<&'static str>> =
            verify_txs(&env, &txs).iter().map(|v| v.as_ref().err().map(|e| e.rule())).collect();
        let batched = module.batched.load(Ordering::Relaxed);
        if mode == VerifyMode::Sequential {
            assert_eq!(batched, 0);
        } else {
            assert_eq!(batched, txs.len() - 1, "{mode:?}: all but the one failing a stateless rule");
            assert_eq!(module.singles.load(Ordering::Relaxed), 0);
        }
        all.push(verdicts);
    }
    assert_eq!(all[0], all[1]);
    assert_eq!(all[0], all[2]);
    for (i, v) in all[0].iter().enumerate() {
        let expected = if i == txs.len() - 1 {
            Some("too-short")
        } else if i < 200 && i % 37 == 5 {
            Some("bad-proof")
        } else {
            None
        };
        assert_eq!(*v, expected, "tx {i}");
    }
}
