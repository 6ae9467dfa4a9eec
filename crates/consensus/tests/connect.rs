//! `connect_block` against hand-built UTXO views: the overflow rules that no chain whose
//! parameters pass `Params::validate` can reach (its total supply stays below 2^53), so they are
//! exercised here with coins that could only exist in a corrupted or foreign UTXO set; and the
//! study-only chains that skip signatures.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use scalechain_consensus::check::check_block;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::txverify::{verify_txs, TxEnv};
use scalechain_consensus::{
    connect_block, Apps, BlockError, Coin, Params, TxRule, UtxoSet, VerifyConfig, VerifyMode,
};
use scalechain_types::{
    Amount, Block, Hash, HashKind, Header, Lock, OutPoint, Scheme, SecretKey, Target, Tx, TxIn, TxKind,
    TxOut, Witness,
};

struct Fixture {
    p: Params,
    chain_id: Hash,
    key: SecretKey,
    utxos: UtxoSet,
}

fn outpoint(i: usize) -> OutPoint {
    OutPoint { txid: Hash([i as u8 + 1; 32]), index: 0 }
}

fn self_out(p: &Params, key: &SecretKey, value: u64) -> TxOut {
    TxOut {
        value: Amount::new(value).unwrap(),
        lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: key.public().hash(p.hash) },
    }
}

impl Fixture {
    /// A UTXO set holding one coin per value, all locked to one Ed25519 key.
    fn new(values: &[u64]) -> Fixture {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let key = SecretKey::from_seed(Scheme::Ed25519, [3; 32]);
        let mut utxos = UtxoSet::new();
        for (i, &v) in values.iter().enumerate() {
            utxos.insert(outpoint(i), Coin { out: self_out(&p, &key, v), height: 0, coinbase: false });
        }
        Fixture { chain_id: Hash([9; 32]), p, key, utxos }
    }

    /// A signed transfer spending the coins at positions `spend` of the fixture's values.
    fn transfer(&self, spend: &[usize], out: u64) -> Tx {
        let witness = Witness { pubkey: self.key.public(), signature: [0; 64] };
        let inputs = spend.iter().map(|&i| TxIn { prev: outpoint(i), witness }).collect();
        let mut tx = Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs,
            outputs: vec![self_out(&self.p, &self.key, out)],
            data: vec![],
        };
        tx.sign_inputs_with(self.p.hash, &self.chain_id, &self.key);
        tx
    }

    /// Connects a block of `txs` (after a coinbase) and checks the view was not touched.
    fn connect(&self, txs: Vec<Tx>) -> Result<(), BlockError> {
        self.connect_in(VerifyMode::Parallel, txs)
    }

    /// [`Fixture::connect`] verifying in `mode`.
    fn connect_in(&self, mode: VerifyMode, txs: Vec<Tx>) -> Result<(), BlockError> {
        let header = Header {
            version: 1,
            height: 100,
            prev_hash: Hash::ZERO,
            merkle_root: Hash::ZERO,
            time: 0,
            target: Target(Hash([0xff; 32])),
            nonce: 0,
        };
        let mut block = Block { header, txs };
        block.txs.insert(0, Tx::coinbase(100, vec![self_out(&self.p, &self.key, 1)]));
        block.header.merkle_root = block.compute_merkle_root(self.p.hash);
        let (apps, verify) = (Apps::none(), VerifyConfig::parallel([1; 32]).with_mode(mode));
        let ctx = ConnectCtx::new(&self.p, &self.chain_id, &apps, &verify);
        let before = self.utxos.clone();
        let res = check_block(&block, &self.p, &apps)
            .and_then(|checked| connect_block(&ctx, &checked, &self.utxos, &BTreeMap::new()))
            .map(|_| ());
        assert_eq!(self.utxos, before, "connect_block must not mutate the view");
        res
    }
}

#[test]
fn a_valid_block_over_the_fixture_connects() {
    let f = Fixture::new(&[1_000, 2_000]);
    f.connect(vec![f.transfer(&[0, 1], 2_500)]).unwrap();
}

#[test]
fn input_values_that_overflow_are_refused() {
    let f = Fixture::new(&[Amount::MAX.get(), 1]);
    match f.connect(vec![f.transfer(&[0, 1], 10)]).unwrap_err() {
        BlockError::Tx { index: 1, error: TxRule::InputOverflow { input: 1 }, .. } => {}
        e => panic!("expected input-overflow at tx 1 input 1, got {e}"),
    }
}

#[test]
fn fees_that_overflow_are_refused() {
    let max = Amount::MAX.get();
    // Each transaction alone is fine (fee MAX − 1); their fees together pass 2^53 − 1.
    let f = Fixture::new(&[max, max]);
    let e = f.connect(vec![f.transfer(&[0], 1), f.transfer(&[1], 1)]).unwrap_err();
    assert!(matches!(e, BlockError::FeeOverflow), "expected fee-overflow, got {e}");
    assert_eq!(e.rule(), "fee-overflow");
}

/// An environment over the fixture's coins at height 100.
fn env_of<'a>(
    f: &'a Fixture,
    apps: &'a Apps,
    verify: &'a VerifyConfig,
    state: &'a BTreeMap<Vec<u8>, Vec<u8>>,
) -> TxEnv<'a> {
    TxEnv {
        ctx: ConnectCtx::new(&f.p, &f.chain_id, apps, verify),
        view: &f.utxos,
        app_state: state,
        height: 100,
        time: 0,
    }
}

/// The verdicts of `verify_txs` on `txs` against the fixture, in `mode`, as rule names.
fn admit_in(f: &Fixture, mode: VerifyMode, txs: &[Tx]) -> Vec<Option<&'static str>> {
    let (apps, verify) = (Apps::none(), VerifyConfig::parallel([1; 32]).with_mode(mode));
    let state = BTreeMap::new();
    let env = env_of(f, &apps, &verify, &state);
    verify_txs(&env, txs).iter().map(|v| v.as_ref().err().map(|e| e.rule())).collect()
}

#[test]
fn signatures_are_skipped_only_on_a_chain_that_declares_it() {
    let mut f = Fixture::new(&[1_000, 2_000]);
    let mut forged = f.transfer(&[0], 900);
    forged.inputs[0].witness.signature = [7; 64];
    // Another key's witness: the key does not hash to the lock, signature or not.
    let other = SecretKey::from_seed(Scheme::Ed25519, [4; 32]);
    let mut stranger = f.transfer(&[1], 1_900);
    stranger.inputs[0].witness.pubkey = other.public();
    for mode in VerifyMode::ALL {
        let e = f.connect_in(mode, vec![forged.clone()]).unwrap_err();
        assert!(
            matches!(e, BlockError::Tx { error: TxRule::BadSignature { input: 0, .. }, .. }),
            "{mode:?}: {e}"
        );
        assert_eq!(admit_in(&f, mode, &[forged.clone()]), vec![Some("bad-signature")], "{mode:?}");
    }
    f.p.skip_signatures = true;
    for mode in VerifyMode::ALL {
        f.connect_in(mode, vec![forged.clone()]).unwrap();
        assert_eq!(admit_in(&f, mode, &[forged.clone(), stranger.clone()])[0], None, "{mode:?}");
        let e = f.connect_in(mode, vec![stranger.clone()]).unwrap_err();
        assert!(!matches!(e, BlockError::Tx { error: TxRule::BadSignature { .. }, .. }), "{mode:?}: {e}");
    }
}

/// A signature cache vouching for the wtxids it holds.
struct Vouch(std::collections::HashSet<Hash>);

impl scalechain_consensus::SigCache for Vouch {
    fn contains(&self, wtxid: &Hash) -> bool {
        self.0.contains(wtxid)
    }
}

#[test]
fn signatures_verified_ahead_vouch_for_exactly_the_transactions_verify_txs_would_pass_on_them() {
    use scalechain_consensus::txverify::{verify_signatures, TxIds};
    let f = Fixture::new(&[1_000, 2_000, 3_000]);
    let good = f.transfer(&[0], 900);
    let mut forged = f.transfer(&[1], 1_900);
    forged.inputs[0].witness.signature = [7; 64];
    // Signed, but spends a coin the view lacks: its signature is good all the same.
    let unfunded = f.transfer(&[7], 10);
    // Signed by the fixture's key, witnessed with another: the signature fails.
    let mut stranger = f.transfer(&[2], 2_900);
    stranger.inputs[0].witness.pubkey = SecretKey::from_seed(Scheme::Ed25519, [4; 32]).public();
    let txs = vec![good, forged, unfunded, stranger];
    let ids: Vec<TxIds> =
        txs.iter().map(|t| TxIds { txid: t.txid(f.p.hash), wtxid: t.wtxid(f.p.hash) }).collect();
    let (apps, state) = (Apps::none(), BTreeMap::new());
    for mode in VerifyMode::ALL {
        let verify = VerifyConfig::parallel([1; 32]).with_mode(mode);
        let env = env_of(&f, &apps, &verify, &state);
        let ok = verify_signatures(&env.ctx, &txs, &ids);
        assert_eq!(ok, [true, false, true, false], "{mode:?}");
        assert_eq!(
            verify_signatures(&env.ctx, &txs, &ids[1..]),
            [false; 4],
            "{mode:?}: ids of another length"
        );
        // Vouching for the `true` ones changes no verdict.
        let vouched = Vouch(ids.iter().zip(&ok).filter(|(_, ok)| **ok).map(|(i, _)| i.wtxid).collect());
        let with = TxEnv { ctx: ConnectCtx { sig_cache: Some(&vouched), ..env.ctx }, ..env };
        let rules = |e: &TxEnv<'_>| -> Vec<Option<&'static str>> {
            verify_txs(e, &txs).iter().map(|v| v.as_ref().err().map(|e| e.rule())).collect()
        };
        assert_eq!(rules(&with), rules(&env), "{mode:?}");
        assert_eq!(rules(&env), [None, Some("bad-signature"), Some("missing-input"), Some("wrong-key")]);
    }
}
