//! Integration tests of the chain: one rejection test per consensus rule (each asserting the
//! error variant and that state is unchanged), reorganisations, orphans, application modules.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use scalechain_chain::{Accepted, Chain, ChainError, ChainStore, MemStore};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{
    AppContext, AppError, AppModule, AppOverlay, Apps, BlockError, Coin, Params, TxRule, UtxoSet, UtxoView,
    VerifyConfig,
};
use scalechain_types::{
    Amount, Block, Hash, HashKind, OutPoint, Scheme, SecretKey, Target, Tx, TxKind, TxOut,
};
use scalechain_workload::{mine, Generator};

const NOW: u64 = u64::MAX / 2;

struct T<S: ChainStore = MemStore> {
    chain: Chain<S>,
    gen: Generator,
    p: Params,
}

fn setup_with(p: Params, apps: Apps) -> T {
    let chain = Chain::open_or_init(MemStore::new(), &p, apps, VerifyConfig::parallel([7; 32])).unwrap();
    let gen = Generator::new(&p, SigMode::Ed25519, 1);
    T { chain, gen, p }
}

fn setup() -> T {
    setup_with(Params::devnet(HashKind::Sha256, SigMode::Ed25519), Apps::none())
}

impl<S: ChainStore> T<S> {
    fn next(&mut self, m: usize) -> Block {
        let parent = self.chain.tip_header();
        self.gen.build_block(&parent, self.chain.next_target(), parent.time + 1000, m)
    }

    fn extend(&mut self, n: usize, m: usize) {
        for _ in 0..n {
            let b = self.next(m);
            assert!(matches!(self.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
        }
    }

    /// The coin an input spends: from the UTXO set or from an earlier tx of `block`.
    fn coin(&self, block: &Block, before: usize, op: &OutPoint) -> Coin {
        if let Some(c) = self.chain.utxos().coin(op) {
            return c;
        }
        for tx in &block.txs[..before] {
            if tx.txid(self.p.hash) == op.txid {
                return Coin { out: tx.outputs[op.index as usize], height: 0, coinbase: false };
            }
        }
        panic!("no coin for {op}");
    }

    /// Re-signs tx `i` of `block` with the generator's keys.
    fn resign(&self, block: &mut Block, i: usize) {
        let owners: Vec<usize> = block.txs[i]
            .inputs
            .iter()
            .map(|inp| self.gen.owns(&self.coin(block, i, &inp.prev).out.lock).unwrap())
            .collect();
        let mut tx = block.txs[i].clone();
        self.gen.sign(&mut tx, &owners);
        block.txs[i] = tx;
    }

    /// Recomputes the Merkle root and re-mines.
    fn reseal(&self, block: &mut Block) {
        block.header.merkle_root = block.compute_merkle_root(self.p.hash);
        block.header.nonce = 0;
        mine(&mut block.header, self.p.hash);
    }

    fn snapshot(&self) -> (Hash, UtxoSet, usize) {
        (self.chain.tip(), self.chain.utxos().clone(), self.chain.app_state().len())
    }

    /// Asserts `block` is rejected with a rule that `check` accepts, and nothing changed.
    fn reject(&mut self, block: Block, check: impl Fn(&BlockError) -> bool) {
        let before = self.snapshot();
        let err = self.chain.accept_block(block, NOW).unwrap_err();
        let rej = err.rejection().unwrap_or_else(|| panic!("expected a rejection, got {err}"));
        assert!(check(&rej.error), "unexpected error: {rej}");
        assert_eq!(self.snapshot(), before, "a rejected block must not change state");
    }
}

fn tx_rule(e: &BlockError) -> Option<&TxRule> {
    e.tx_rule()
}

#[test]
fn double_spend_across_blocks() {
    let mut t = setup();
    t.extend(1, 20);
    let spent = t.chain.block_at(1).unwrap().unwrap().txs[1].inputs[0].prev;
    let mut b = t.next(5);
    b.txs[1].inputs[0].prev = spent;
    t.resign_with_premine(&mut b, 1, spent);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::MissingInput { input: 0, .. })));
}

impl T {
    /// Re-signs tx `i` whose input 0 now spends an output that is no longer in the set: the
    /// generator still knows the key by its premine index.
    fn resign_with_premine(&self, block: &mut Block, i: usize, op: OutPoint) {
        let genesis = self.chain.block_at(0).unwrap().unwrap();
        let lock = genesis.txs[0].outputs[op.index as usize].lock;
        let k = self.gen.owns(&lock).unwrap();
        let mut owners = vec![k];
        for inp in &block.txs[i].inputs[1..] {
            owners.push(self.gen.owns(&self.coin(block, i, &inp.prev).out.lock).unwrap());
        }
        let mut tx = block.txs[i].clone();
        tx.inputs[0].witness.pubkey = self.gen_pubkey(k);
        self.gen.sign(&mut tx, &owners);
        block.txs[i] = tx;
    }

    fn gen_pubkey(&self, k: usize) -> scalechain_types::PubKey {
        // The generator's key ring: premine keys follow the first KEY_RING keys.
        let i = (k - scalechain_workload::KEY_RING) as u64;
        scalechain_consensus::params::devnet_premine_key(SigMode::Ed25519, i).public()
    }
}

#[test]
fn double_spend_inside_one_block() {
    let mut t = setup();
    let mut b = t.next(10);
    let prev = b.txs[1].inputs[0].prev;
    // Make tx 3 spend what tx 1 spends, keeping its other inputs.
    let creator_is_block = b.txs.iter().any(|x| x.txid(t.p.hash) == prev.txid);
    assert!(!creator_is_block);
    b.txs[3].inputs[0].prev = prev;
    let genesis_owned = t.chain.utxos().coin(&prev).is_some();
    assert!(genesis_owned);
    t.resign(&mut b, 3);
    t.reseal(&mut b);
    t.reject(b, |e| {
        matches!(e, BlockError::Tx { index: 3, error: TxRule::DoubleSpendInBlock { first_tx: 1, .. }, .. })
    });
}

#[test]
fn spending_an_output_created_later_in_the_block() {
    let mut t = setup();
    let mut b = t.next(300);
    // Move the last transaction to the front (after the coinbase): if it spends an output of
    // an earlier transaction, that output is now created later.
    let spender = (2..b.txs.len())
        .rev()
        .find(|&i| {
            b.txs[i].inputs.iter().any(|inp| b.txs[1..i].iter().any(|x| x.txid(t.p.hash) == inp.prev.txid))
        })
        .expect("the generator chains transactions inside a block");
    let tx = b.txs.remove(spender);
    b.txs.insert(1, tx);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::Tx { index: 1, error: TxRule::SpendsLaterOutput { .. }, .. }));
}

#[test]
fn immature_coinbase() {
    let mut t = setup();
    t.extend(2, 2);
    let cb = t.chain.block_at(1).unwrap().unwrap().txs[0].clone();
    let op = OutPoint { txid: cb.txid(t.p.hash), index: 0 };
    let mut b = t.next(3);
    b.txs[1].inputs.truncate(1);
    b.txs[1].inputs[0].prev = op;
    let k = t.gen.owns(&cb.outputs[0].lock).unwrap();
    let total = cb.outputs[0].value.get();
    b.txs[1].outputs = vec![TxOut { value: Amount::new(total / 2).unwrap(), lock: cb.outputs[0].lock }];
    let mut tx = b.txs[1].clone();
    tx.inputs[0].witness.pubkey = b.txs[1].inputs[0].witness.pubkey;
    let _ = k;
    b.txs[1] = tx;
    t.resign(&mut b, 1);
    // Later txs may spend tx 1's old outputs: keep only the coinbase and tx 1.
    b.txs.truncate(2);
    b.txs[0].outputs[0].value = t.p.subsidy(3);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::ImmatureCoinbase { created: 1, mature: 11, .. })));
}

#[test]
fn output_overflow() {
    let mut t = setup();
    let mut b = t.next(3);
    let lock = b.txs[1].outputs[0].lock;
    b.txs[1].outputs = vec![TxOut { value: Amount::MAX, lock }, TxOut { value: Amount::MAX, lock }];
    b.txs.truncate(2);
    t.resign(&mut b, 1);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::OutputOverflow { output: 1 })));
}

#[test]
fn outputs_exceed_inputs() {
    let mut t = setup();
    let mut b = t.next(3);
    b.txs.truncate(2);
    b.txs[1].outputs[0].value = Amount::new(b.txs[1].outputs[0].value.get() + 1_000_000).unwrap();
    t.resign(&mut b, 1);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::OutputsExceedInputs { .. })));
}

#[test]
fn wrong_key_and_bad_signature_and_scheme_mismatch() {
    let mut t = setup();
    let base = t.next(3);
    // Wrong key: a valid signature by a key that is not the lock's.
    let mut b = base.clone();
    let other = SecretKey::from_seed(Scheme::Ed25519, [42; 32]);
    b.txs[1].inputs[0].witness.pubkey = other.public();
    b.txs[1].sign_inputs_with(t.p.hash, &t.chain.chain_id(), &other);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::WrongKey { input: 0 })));
    // Bad signature: one flipped bit.
    let mut b = base.clone();
    b.txs[1].inputs[0].witness.signature[3] ^= 1;
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::BadSignature { input: 0, .. })));
    // Scheme mismatch on a mixed chain: an ed25519 lock spent with a secp256k1 key.
    let mut m = setup_with(Params::devnet(HashKind::Sha256, SigMode::Mixed), Apps::none());
    m.gen = Generator::new(&m.p, SigMode::Mixed, 1);
    let mut b = m.next(20);
    let k = SecretKey::from_seed(Scheme::Secp256k1, [5; 32]);
    let (ti, ii) = (1..b.txs.len())
        .find_map(|ti| {
            b.txs[ti]
                .inputs
                .iter()
                .position(|i| i.witness.pubkey.scheme() == Scheme::Ed25519)
                .map(|ii| (ti, ii))
        })
        .expect("a mixed chain spends ed25519 outputs");
    b.txs[ti].inputs[ii].witness.pubkey = k.public();
    b.txs.truncate(ti + 1);
    let fees_ok = b.txs[0].outputs[0].value.get() >= m.p.subsidy(1).get();
    assert!(fees_ok);
    b.txs[0].outputs[0].value = m.p.subsidy(1);
    m.reseal(&mut b);
    m.reject(b, |e| {
        matches!(
            e,
            BlockError::Tx {
                error: TxRule::SchemeMismatch { expected: Scheme::Ed25519, got: Scheme::Secp256k1, .. },
                ..
            }
        )
    });
}

#[test]
fn scheme_not_allowed_on_this_chain() {
    let mut t = setup();
    let mut b = t.next(3);
    b.txs[1].outputs[0].lock.scheme = Scheme::Secp256k1;
    t.resign(&mut b, 1);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::OutputSchemeNotAllowed { output: 0, .. })));
}

#[test]
fn bad_merkle_root_bad_pow_wrong_prev() {
    let mut t = setup();
    let base = t.next(3);
    let mut b = base.clone();
    b.header.merkle_root = Hash([1; 32]);
    b.header.nonce = 0;
    mine(&mut b.header, t.p.hash);
    t.reject(b, |e| matches!(e, BlockError::BadMerkleRoot { .. }));
    // Bad PoW: find a nonce whose hash misses the target.
    let mut b = base.clone();
    while b.header.target.is_met_by(&b.hash(t.p.hash)) {
        b.header.nonce += 1;
    }
    t.reject(b, |e| matches!(e, BlockError::BadProofOfWork { .. }));
    // Wrong prev: an unknown parent is an orphan, never connected.
    let mut b = base.clone();
    b.header.prev_hash = Hash([9; 32]);
    mine(&mut b.header, t.p.hash);
    let before = t.snapshot();
    assert_eq!(t.chain.accept_block(b, NOW).unwrap(), Accepted::Orphan);
    assert_eq!(t.snapshot(), before);
    // Wrong prev for its height: the header's height does not follow its parent.
    let mut b = base;
    b.header.height += 1;
    b.txs[0] = Tx::coinbase(b.header.height, b.txs[0].outputs.clone());
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::BadHeight { expected: 1, got: 2 }));
}

#[test]
fn header_context_rules() {
    let mut t = setup();
    let base = t.next(2);
    let mut b = base.clone();
    b.header.target = Target::from_bits(250);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::BadTarget { .. }));
    let mut b = base.clone();
    b.header.time = t.p.genesis_time;
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::TimeTooOld { .. }));
    let b = base;
    let before = t.snapshot();
    let err = t.chain.accept_block(b.clone(), b.header.time - t.p.max_future_drift_ms - 1).unwrap_err();
    assert!(matches!(err.rejection().unwrap().error, BlockError::TimeTooNew { .. }));
    assert_eq!(t.snapshot(), before);
}

#[test]
fn coinbase_rules() {
    let mut t = setup();
    let base = t.next(3);
    let mut b = base.clone();
    b.txs[0].outputs[0].value = Amount::new(b.txs[0].outputs[0].value.get() + 1).unwrap();
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::CoinbaseOverpay { .. }));
    let mut b = base.clone();
    b.txs[0] = Tx::coinbase(7, b.txs[0].outputs.clone());
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::CoinbaseHeight { expected: 1, got: 7 }));
    let mut b = base.clone();
    b.txs.swap(0, 1);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::FirstNotCoinbase));
    let mut b = base.clone();
    b.txs.push(Tx::coinbase(1, vec![]));
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::ExtraCoinbase(4)));
    let mut b = base.clone();
    let dup = b.txs[1].clone();
    b.txs.push(dup);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::DuplicateTx { index: 4, .. }));
    let mut b = base;
    b.txs.truncate(0);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(e, BlockError::NoTransactions));
}

#[test]
fn transaction_shape_rules() {
    let mut t = setup();
    let base = t.next(3);
    type Mutation = Box<dyn Fn(&mut Tx)>;
    type Expect = Box<dyn Fn(&TxRule) -> bool>;
    let cases: Vec<(Mutation, Expect)> = vec![
        (Box::new(|tx| tx.outputs.clear()), Box::new(|r| matches!(r, TxRule::NoOutputs))),
        (Box::new(|tx| tx.inputs.clear()), Box::new(|r| matches!(r, TxRule::NoInputs))),
        (Box::new(|tx| tx.version = 2), Box::new(|r| matches!(r, TxRule::UnsupportedVersion(2)))),
        (Box::new(|tx| tx.kind = TxKind(9)), Box::new(|r| matches!(r, TxRule::UnknownKind(9)))),
        (
            Box::new(|tx| {
                let i = tx.inputs[0];
                tx.inputs.push(i)
            }),
            Box::new(|r| matches!(r, TxRule::DuplicateInput { first: 0, .. })),
        ),
    ];
    for (mutate, check) in cases {
        let mut b = base.clone();
        mutate(&mut b.txs[1]);
        t.reseal(&mut b);
        t.reject(b, |e| tx_rule(e).is_some_and(&check));
    }
}

#[test]
fn limits() {
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.max_block_txs = 4;
    p.max_tx_outputs = 3;
    p.max_tx_data = 10;
    let mut t = setup_with(p, Apps::none());
    let b = t.next(5);
    t.reject(b, |e| matches!(e, BlockError::TooManyTxs { count: 6, max: 4 }));
    let mut b = t.next(2);
    let o = b.txs[1].outputs[0];
    b.txs[1].outputs = vec![o, o, o, o];
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::TooManyOutputs { count: 4, max: 3 })));
    let mut b = t.next(1);
    b.txs[0].data.extend_from_slice(&[0; 8]);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::DataTooLarge { size: 16, max: 10 })));
}

#[test]
fn transaction_size_and_input_limits() {
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.max_tx_inputs = 2;
    p.max_tx_bytes = 1_000;
    p.max_tx_data = 4_000;
    let mut t = setup_with(p, Apps::none());
    let mut b = t.next(1);
    let i = b.txs[1].inputs[0];
    b.txs[1].inputs = vec![i; 3];
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::TooManyInputs { count: 3, max: 2 })));
    let mut b = t.next(1);
    b.txs[1].data = vec![7; 1_000];
    t.resign(&mut b, 1);
    t.reseal(&mut b);
    let size = b.txs[1].encoded_len() as u64;
    t.reject(b, |e| {
        e.tx_rule().map(|r| r.rule()) == Some("tx-too-large")
            && matches!(tx_rule(e), Some(TxRule::TooLarge { size: s, max: 1_000 }) if *s == size)
    });
}

#[test]
fn block_size_limit() {
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.max_block_bytes = 100_000;
    p.max_tx_bytes = 40_000;
    p.max_tx_data = 30_000;
    let mut t = setup_with(p, Apps::none());
    let mut b = t.next(4);
    for i in 1..=4 {
        b.txs[i].data = vec![i as u8; 26_000];
        t.resign(&mut b, i);
    }
    t.reseal(&mut b);
    let size = b.encoded_len() as u64;
    assert!(size > 100_000);
    t.reject(b, |e| matches!(e, BlockError::TooLarge { size: s, max: 100_000 } if *s == size));
    // Three of them fit.
    let mut b = t.next(3);
    for i in 1..=3 {
        b.txs[i].data = vec![i as u8; 26_000];
        t.resign(&mut b, i);
    }
    t.reseal(&mut b);
    assert!(matches!(t.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
}

#[test]
fn input_scheme_not_allowed_and_unsupported_header_version() {
    let mut t = setup();
    let mut b = t.next(2);
    let foreign = SecretKey::from_seed(Scheme::Secp256k1, [5; 32]);
    b.txs[1].inputs[0].witness.pubkey = foreign.public();
    t.reseal(&mut b);
    t.reject(b, |e| {
        matches!(tx_rule(e), Some(TxRule::InputSchemeNotAllowed { input: 0, scheme: Scheme::Secp256k1 }))
    });
    let mut b = t.next(2);
    b.header.version = 2;
    t.reseal(&mut b);
    t.reject(b, |e| {
        matches!(e, BlockError::UnsupportedVersion(2)) && e.rule() == "unsupported-header-version"
    });
}

/// Builds `n` blocks on `parent_height` of the main chain using a fork of the generator.
fn branch<S: ChainStore>(
    t: &T<S>,
    gen: &mut Generator,
    parent: &Block,
    n: usize,
    m: usize,
    spacing: u64,
) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut hdr = parent.header;
    let mut tree = t.chain.tree().clone();
    for _ in 0..n {
        let target = scalechain_consensus::pow::next_target(&t.p, &hdr, &tree.branch(hdr.hash(t.p.hash)));
        let b = gen.build_block(&hdr, target, hdr.time + spacing, m);
        tree.insert(b.header).unwrap();
        hdr = b.header;
        out.push(b);
    }
    out
}

#[test]
fn deeper_branch_out_of_order_reorgs_to_the_same_state_as_from_scratch() {
    let mut t = setup();
    t.extend(2, 8);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(3, 8); // main chain to height 5
    let mut g = fork_gen.clone();
    g.reseed(99);
    let side = branch(&t, &mut g, &fork_block, 5, 8, 900); // heights 3..7
                                                           // Deliver the branch in reverse: orphans until the first block arrives.
    for b in side.iter().skip(1).rev() {
        assert_eq!(t.chain.accept_block(b.clone(), NOW).unwrap(), Accepted::Orphan);
    }
    let r = t.chain.accept_block(side[0].clone(), NOW).unwrap();
    // Block 3 alone has less work than the main chain: it is a side branch, but the orphans it
    // releases complete the heavier branch and move the tip.
    assert_eq!(r, Accepted::SideBranch);
    assert_eq!(t.chain.tip(), side[4].hash(t.p.hash));
    assert_eq!(t.chain.tip_height(), 7);
    // From scratch on the winning branch.
    let mut fresh = setup();
    for h in 1..=2 {
        fresh.chain.accept_block(t.chain.block_at(h).unwrap().unwrap(), NOW).unwrap();
    }
    for b in &side {
        fresh.chain.accept_block(b.clone(), NOW).unwrap();
    }
    assert_eq!(fresh.chain.tip(), t.chain.tip());
    assert_eq!(fresh.chain.utxos(), t.chain.utxos());
    t.chain.verify_all(NOW, |_, _| {}).unwrap();
}

#[test]
fn lighter_branch_never_moves_the_tip_and_reorg_returns_transactions() {
    let mut t = setup();
    t.extend(2, 5);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(3, 5);
    let before = t.snapshot();
    let mut g = fork_gen;
    g.reseed(5);
    let side = branch(&t, &mut g, &fork_block, 3, 5, 1000);
    for b in &side[..2] {
        assert_eq!(t.chain.accept_block(b.clone(), NOW).unwrap(), Accepted::SideBranch);
        assert_eq!(t.snapshot(), before);
    }
    // Equal work: first seen stays.
    assert_eq!(t.chain.accept_block(side[2].clone(), NOW).unwrap(), Accepted::SideBranch);
    assert_eq!(t.snapshot(), before);
    // One more makes it heavier: reorg, and the old branch's transactions come back.
    let more = branch(&t, &mut g, &side[2], 1, 5, 1000);
    match t.chain.accept_block(more[0].clone(), NOW).unwrap() {
        Accepted::Connected(r) => {
            assert_eq!(r.disconnected.len(), 3);
            assert_eq!(r.connected.len(), 4);
            assert_eq!(r.returned.len(), 15);
        }
        other => panic!("expected a reorg, got {other:?}"),
    }
}

#[test]
fn invalid_block_in_heavier_branch_keeps_the_valid_chain() {
    let mut t = setup();
    t.extend(1, 4);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(1).unwrap().unwrap();
    t.extend(2, 4);
    let before = t.snapshot();
    let mut g = fork_gen;
    g.reseed(11);
    let mut side = branch(&t, &mut g, &fork_block, 4, 4, 1000);
    // Break block 2 of the branch (a bad signature) and re-mine the rest on top of it.
    side[1].txs[1].inputs[0].witness.signature[0] ^= 1;
    t.reseal(&mut side[1]);
    for i in 2..side.len() {
        side[i].header.prev_hash = side[i - 1].hash(t.p.hash);
        t.reseal(&mut side[i]);
    }
    let mut results = Vec::new();
    for b in &side {
        results.push(t.chain.accept_block(b.clone(), NOW));
    }
    assert!(results
        .iter()
        .any(|r| matches!(r, Err(ChainError::Rejected(_)) | Err(ChainError::InvalidAncestor { .. }))));
    assert_eq!(t.snapshot(), before, "the valid main chain stays");
    t.chain.verify_all(NOW, |_, _| {}).unwrap();
}

/// A test application: kind 7, `data` is a name; each name may be registered once.
struct Names;

impl AppModule for Names {
    fn kind(&self) -> TxKind {
        TxKind(7)
    }
    fn name(&self) -> &str {
        "names"
    }
    fn check_stateless(&self, tx: &Tx, _: &Params) -> Result<(), AppError> {
        if tx.data.is_empty() || tx.data.len() > 32 {
            return Err(AppError::invalid("bad-name", format!("name of {} bytes", tx.data.len())));
        }
        Ok(())
    }
    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError> {
        if state.get(&tx.data).is_some() {
            return Err(AppError::on_state("name-taken", "name already registered"));
        }
        state.put(&tx.data, ctx.height.to_le_bytes().to_vec());
        Ok(())
    }
}

fn name_tx(name: &[u8]) -> Tx {
    Tx { version: 1, kind: TxKind(7), inputs: vec![], outputs: vec![], data: name.to_vec() }
}

#[test]
fn application_module_state_rules_and_undo() {
    let mut apps = Apps::none();
    apps.register(Arc::new(Names));
    let mut t = setup_with(Params::devnet(HashKind::Sha256, SigMode::Ed25519), apps);
    let fork_gen = t.gen.clone();
    let mut b = t.next(2);
    b.txs.push(name_tx(b"alice"));
    t.reseal(&mut b);
    assert!(matches!(t.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
    assert_eq!(t.chain.app_state().len(), 1);
    // The same name again, in a later block: rejected by the module, state unchanged.
    let mut b = t.next(1);
    b.txs.push(name_tx(b"alice"));
    t.reseal(&mut b);
    t.reject(b, |e| e.rule() == "name-taken");
    // Twice in one block.
    let mut b = t.next(1);
    b.txs.push(name_tx(b"bob"));
    // Same name, different txid (a zero-value output).
    let mut again = name_tx(b"bob");
    let lock = t.chain.block_at(0).unwrap().unwrap().txs[0].outputs[0].lock;
    again.outputs.push(TxOut { value: Amount::ZERO, lock });
    b.txs.push(again);
    t.reseal(&mut b);
    t.reject(b, |e| e.rule() == "name-taken");
    // Stateless module rule.
    let mut b = t.next(1);
    b.txs.push(name_tx(b""));
    t.reseal(&mut b);
    t.reject(b, |e| e.rule() == "bad-name");
    // A heavier branch without the registration undoes it.
    let genesis = t.chain.block_at(0).unwrap().unwrap();
    let mut g = fork_gen;
    g.reseed(3);
    let side = branch(&t, &mut g, &genesis, 2, 1, 1000);
    for b in side {
        t.chain.accept_block(b, NOW).unwrap();
    }
    assert_eq!(t.chain.tip_height(), 2);
    assert!(t.chain.app_state().is_empty(), "the reorg undid the registration");
}

#[test]
fn wrong_chain_is_refused() {
    let t = setup();
    let store = t.chain.store().clone();
    let other = Params::devnet(HashKind::Blake3, SigMode::Ed25519);
    let r = Chain::open_or_init(store, &other, Apps::none(), VerifyConfig::parallel([0; 32]));
    assert!(matches!(r, Err(ChainError::WrongChain { .. })));
}

/// A module that accepts any transaction of kind 8.
struct Anything;

impl AppModule for Anything {
    fn kind(&self) -> TxKind {
        TxKind(8)
    }
    fn name(&self) -> &str {
        "anything"
    }
    fn check_stateless(&self, _: &Tx, _: &Params) -> Result<(), AppError> {
        Ok(())
    }
    fn apply(&self, _: &Tx, _: &AppContext<'_>, _: &mut AppOverlay<'_>) -> Result<(), AppError> {
        Ok(())
    }
}

#[test]
fn a_replayed_input_less_transaction_cannot_overwrite_an_unspent_output() {
    let mut apps = Apps::none();
    apps.register(Arc::new(Anything));
    let mut t = setup_with(Params::devnet(HashKind::Sha256, SigMode::Ed25519), apps);
    let lock = t.chain.block_at(0).unwrap().unwrap().txs[0].outputs[0].lock;
    let app_tx = Tx {
        version: 1,
        kind: TxKind(8),
        inputs: vec![],
        outputs: vec![TxOut { value: Amount::ZERO, lock }],
        data: b"note".to_vec(),
    };
    let mut b = t.next(1);
    b.txs.push(app_tx.clone());
    t.reseal(&mut b);
    assert!(matches!(t.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
    let mut b = t.next(1);
    b.txs.push(app_tx);
    t.reseal(&mut b);
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::OverwritesUnspent { output: 0, .. })));
}

#[test]
fn header_context_refuses_a_prev_hash_that_is_not_the_parent() {
    // Through accept_block an unknown prev_hash makes an orphan; the stage itself must still
    // refuse a header checked against the wrong parent.
    let mut t = setup();
    t.extend(1, 1);
    let b = t.next(1);
    let genesis = t.chain.block_at(0).unwrap().unwrap().header;
    let tree = t.chain.tree();
    let r = scalechain_consensus::check::check_header_context(
        &t.p,
        &b.header,
        &genesis,
        &tree.branch(tree.genesis()),
        NOW,
    );
    assert!(matches!(r, Err(BlockError::BadPrev { .. })), "{r:?}");
}

/// A crash between storing a block and committing it leaves a stored, unconnected block with
/// more work than the committed tip. Reopening connects it (recovery), so the block arriving
/// again is a duplicate of the tip rather than a known block that never connects.
#[test]
fn reopening_connects_blocks_stored_but_not_committed_before_a_crash() {
    use scalechain_chain::ChainStore;
    let mut t = setup();
    t.extend(3, 4);
    let b1 = t.next(5);
    let h1 = b1.hash(t.p.hash);
    // The interrupted run: the block reached the store, its commit did not.
    let mut crashed = t.chain.store().clone();
    crashed.put_block(&h1, &b1).unwrap();
    let committed_tip = t.chain.tip();
    let reopened = Chain::open(crashed, Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    assert_ne!(reopened.tip(), committed_tip);
    assert_eq!(reopened.tip(), h1, "the stored block with more work is connected on reopen");
    // It is the state the uninterrupted run reaches.
    assert!(matches!(t.chain.accept_block(b1.clone(), NOW).unwrap(), Accepted::Connected(_)));
    assert_eq!(reopened.utxos(), t.chain.utxos());
    let mut reopened = reopened;
    assert_eq!(reopened.accept_block(b1, NOW).unwrap(), Accepted::Duplicate);
    reopened.verify_all(NOW, |_, _| {}).unwrap();
}

/// A set of wtxids standing in for a mempool's record of verified signatures.
struct Cache(std::collections::HashSet<Hash>);

impl scalechain_consensus::SigCache for Cache {
    fn contains(&self, wtxid: &Hash) -> bool {
        self.0.contains(wtxid)
    }
}

#[test]
fn signature_cache_skips_the_signature_jobs_of_known_transactions_only() {
    let bad_block = |t: &mut T| {
        let mut b = t.next(3);
        b.txs[1].inputs[0].witness.signature[3] ^= 1;
        t.reseal(&mut b);
        b
    };
    // A cache that holds another transaction does not save the bad signature.
    let mut t = setup();
    let b = bad_block(&mut t);
    let other = b.txs[2].wtxid(t.p.hash);
    t.chain.set_sig_cache(Some(Arc::new(Cache([other].into_iter().collect()))));
    t.reject(b, |e| matches!(tx_rule(e), Some(TxRule::BadSignature { input: 0, .. })));
    // A cache that vouches for the bad transaction skips its signatures: the cache is trusted,
    // which is why only the mempool's own admission may fill it.
    let mut t = setup();
    let b = bad_block(&mut t);
    let bad = b.txs[1].wtxid(t.p.hash);
    t.chain.set_sig_cache(Some(Arc::new(Cache([bad].into_iter().collect()))));
    assert!(matches!(t.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
    // The full re-verification ignores the cache and finds the bad signature.
    assert!(t.chain.verify_all(NOW, |_, _| {}).is_err());
}

/// The txid index equals the main chain's transactions: every one found at its block, height
/// and position, and none of a disconnected block.
fn assert_txindex_matches_main_chain<S: ChainStore>(t: &T<S>, gone: &[Block]) {
    for (height, hash) in t.chain.main_chain().iter().enumerate() {
        let b = t.chain.block(hash).unwrap().unwrap();
        for (i, tx) in b.txs.iter().enumerate() {
            let txid = tx.txid(t.p.hash);
            let (loc, found) = t.chain.confirmed_tx(&txid).unwrap().unwrap();
            assert_eq!((loc.block, loc.height, loc.position), (*hash, height as u64, i as u32));
            assert_eq!(&found, tx);
        }
    }
    let main: std::collections::HashSet<Hash> = t.chain.main_chain().iter().copied().collect();
    for b in gone {
        assert!(!main.contains(&b.hash(t.p.hash)));
        for tx in &b.txs {
            let txid = tx.txid(t.p.hash);
            if let Some((loc, _)) = t.chain.confirmed_tx(&txid).unwrap() {
                // Only a transaction the new branch confirmed again may still be found.
                assert!(main.contains(&loc.block), "{txid} indexed at a disconnected block");
            }
        }
    }
}

#[test]
fn txid_index_follows_connects_and_reorgs_and_rebuilds_the_same() {
    let mut t = setup();
    t.extend(2, 6);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(2, 6);
    assert_txindex_matches_main_chain(&t, &[]);
    let old: Vec<Block> = (3..=4).map(|h| t.chain.block_at(h).unwrap().unwrap()).collect();
    let mut g = fork_gen;
    g.reseed(41);
    let side = branch(&t, &mut g, &fork_block, 3, 6, 1000);
    for b in &side {
        t.chain.accept_block(b.clone(), NOW).unwrap();
    }
    assert_eq!(t.chain.tip(), side[2].hash(t.p.hash));
    assert_txindex_matches_main_chain(&t, &old);
    let coinbase = old[0].txs[0].txid(t.p.hash);
    assert!(t.chain.confirmed_tx(&coinbase).unwrap().is_none(), "a disconnected coinbase leaves the index");

    // A store written before the index existed: opening builds it, to the same entries.
    let mut store = t.chain.store().clone();
    let mut want = store.debug_txindex();
    store.debug_drop_txindex();
    let reopened = Chain::open(store, Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    let mut got = reopened.store().debug_txindex();
    want.sort_by_key(|(t, _)| *t);
    got.sort_by_key(|(t, _)| *t);
    assert_eq!(got, want);
}

/// A chain of the devnet parameters on disk store `store` (created there if it is empty),
/// built on by `gen` or a fresh generator.
fn on_disk(store: scalechain_chain::DiskStore, gen: Option<Generator>) -> T<scalechain_chain::DiskStore> {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain = Chain::open_or_init(store, &p, Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    let gen = gen.unwrap_or_else(|| Generator::new(&p, SigMode::Ed25519, 1));
    T { chain, gen, p }
}

/// The disk store writes the txid index after each commit, so a crash can leave it behind the
/// chain, on a branch a later commit left: reopening brings it to the tip (the branch's
/// transactions out, the main chain's in) before anything reads it.
#[test]
fn a_txid_index_left_behind_on_an_old_branch_catches_up_when_the_chain_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = on_disk(scalechain_chain::DiskStore::open(dir.path()).unwrap(), None);
    let p = t.p.clone();
    t.extend(2, 6);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(2, 6);
    let old: Vec<Block> = (3..=4).map(|h| t.chain.block_at(h).unwrap().unwrap()).collect();
    t.chain.store().flush_txindex().unwrap();
    // From here on nothing reaches the index on disk: as after a crash right after each commit.
    t.chain.store().debug_hold_txindex(true);
    let mut g = fork_gen;
    g.reseed(43);
    for b in branch(&t, &mut g, &fork_block, 3, 6, 1000) {
        t.chain.accept_block(b, NOW).unwrap();
    }
    t.gen = g;
    t.extend(1, 6);
    assert_eq!(t.chain.tip_height(), 6);
    // Lookups see every commit while the writer is held.
    assert_txindex_matches_main_chain(&t, &old);
    drop(t);
    let store = scalechain_chain::DiskStore::open(dir.path()).unwrap();
    assert_eq!(
        store.txindex_tip().unwrap(),
        Some((old[1].hash(p.hash), 4)),
        "the index stayed on the old branch"
    );
    let t = on_disk(store, None);
    assert_eq!(t.chain.store().txindex_tip().unwrap(), Some((t.chain.tip(), 6)));
    assert_txindex_matches_main_chain(&t, &old);
}

/// A node that serves no lookups by txid switches the index off: commits leave it where it
/// stopped and lookups say it is off; switched on again, opening brings it to the tip.
#[test]
fn a_txid_index_switched_off_is_left_behind_and_rebuilt_when_switched_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = on_disk(scalechain_chain::DiskStore::open(dir.path()).unwrap(), None);
    let p = t.p.clone();
    t.extend(2, 6);
    let gen = t.gen.clone();
    drop(t);
    let mut store = scalechain_chain::DiskStore::open(dir.path()).unwrap();
    store.set_txindex(false);
    let mut t = on_disk(store, Some(gen));
    t.extend(3, 6);
    let last = t.chain.block_at(5).unwrap().unwrap();
    let txid = last.txs[1].txid(p.hash);
    assert!(matches!(
        t.chain.tx_location(&txid),
        Err(scalechain_chain::ChainError::Store(scalechain_chain::StoreError::TxIndexOff))
    ));
    let at_two = t.chain.block_at(2).unwrap().unwrap().hash(p.hash);
    drop(t);
    let store = scalechain_chain::DiskStore::open(dir.path()).unwrap();
    assert_eq!(
        store.txindex_tip().unwrap(),
        Some((at_two, 2)),
        "the index stopped where it was switched off"
    );
    let t = on_disk(store, None);
    assert_eq!(t.chain.tx_location(&txid).unwrap().map(|l| l.height), Some(5));
    assert_txindex_matches_main_chain(&t, &[]);
}

/// The owner index answers exactly what a scan of the UTXO set finds, for every owner.
fn assert_owner_index_matches_scan(chain: &Chain<MemStore>) {
    let mut scan: std::collections::BTreeMap<Hash, Vec<(OutPoint, Coin)>> = Default::default();
    for (op, c) in chain.utxos().iter() {
        scan.entry(c.out.lock.pubkey_hash).or_default().push((op, c));
    }
    assert!(scan.len() > 3, "the test needs several owners");
    for (owner, mut coins) in scan {
        coins.sort_by_key(|(op, _)| *op);
        assert_eq!(chain.utxos_of(&owner).unwrap().collect::<Vec<_>>(), coins, "owner {owner}");
    }
    assert_eq!(chain.utxos_of(&Hash([0xee; 32])).unwrap().count(), 0);
}

#[test]
fn an_owner_index_switched_off_answers_so_and_switched_on_again_is_exact() {
    let mut t = setup();
    t.extend(2, 8);
    assert!(t.chain.owner_index_on(), "on by default");
    t.chain.set_owner_index(false);
    assert!(!t.chain.owner_index_on());
    let owner = t.chain.utxos().iter().next().map(|(_, c)| c.out.lock.pubkey_hash).unwrap();
    assert!(matches!(t.chain.utxos_of(&owner), Err(scalechain_chain::ChainError::OwnerIndexOff)));
    // Blocks connect without it; switched on again, it is rebuilt from the UTXO set, and
    // blocks keep it exact.
    t.extend(2, 8);
    t.chain.set_owner_index(true);
    assert_owner_index_matches_scan(&t.chain);
    t.extend(2, 8);
    assert_owner_index_matches_scan(&t.chain);
    // A reorganisation while it is off.
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(t.chain.tip_height()).unwrap().unwrap();
    t.extend(2, 8);
    t.chain.set_owner_index(false);
    let mut g = fork_gen;
    g.reseed(78);
    let side = branch(&t, &mut g, &fork_block, 3, 8, 1000);
    for b in &side {
        t.chain.accept_block(b.clone(), NOW).unwrap();
    }
    assert_eq!(t.chain.tip(), side[2].hash(t.p.hash), "the heavier branch won");
    assert!(matches!(t.chain.utxos_of(&owner), Err(scalechain_chain::ChainError::OwnerIndexOff)));
    t.chain.set_owner_index(true);
    assert_owner_index_matches_scan(&t.chain);
    // Opened without it, the chain builds none; switched on, it is exact.
    let options = scalechain_chain::OpenOptions { owner_index: false };
    let mut reopened =
        Chain::open_with(t.chain.store().clone(), Apps::none(), VerifyConfig::parallel([7; 32]), options)
            .unwrap();
    assert!(!reopened.owner_index_on());
    assert!(matches!(reopened.utxos_of(&owner), Err(scalechain_chain::ChainError::OwnerIndexOff)));
    reopened.set_owner_index(true);
    assert_owner_index_matches_scan(&reopened);
}

#[test]
fn owner_index_equals_a_scan_after_blocks_a_reorg_and_a_reopen() {
    let mut t = setup();
    assert_owner_index_matches_scan(&t.chain);
    t.extend(3, 8);
    assert_owner_index_matches_scan(&t.chain);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(3).unwrap().unwrap();
    t.extend(2, 8);
    let before = t.chain.utxos().len();
    let mut g = fork_gen;
    g.reseed(77);
    let side = branch(&t, &mut g, &fork_block, 3, 8, 1000);
    for b in &side {
        t.chain.accept_block(b.clone(), NOW).unwrap();
    }
    assert_eq!(t.chain.tip(), side[2].hash(t.p.hash), "the heavier branch won");
    assert!(before > 0);
    assert_owner_index_matches_scan(&t.chain);
    // Reopened from the store, the index is rebuilt to the same answers.
    let reopened =
        Chain::open(t.chain.store().clone(), Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    assert_owner_index_matches_scan(&reopened);
}

#[test]
fn a_disk_store_with_snapshots_and_a_reorganisation_reopens_to_the_same_utxo_set() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = scalechain_chain::DiskStore::open(dir.path()).unwrap();
    // A snapshot after every 40 changes: several during the run, so reopening replays a log
    // that holds the reorganisation from a snapshot taken before it.
    store.set_snapshot_every(40);
    let mut t = on_disk(store, None);
    let mut mem = setup();
    let follow = |mem: &mut T, t: &T<scalechain_chain::DiskStore>| {
        for h in mem.chain.tip_height() + 1..=t.chain.tip_height() {
            mem.chain.accept_block(t.chain.block_at(h).unwrap().unwrap(), NOW).unwrap();
        }
    };
    t.extend(2, 8);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(3, 8);
    let snapshots = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("snap".as_ref()))
            .count()
    };
    assert_eq!(snapshots(dir.path()), 1, "one snapshot file at a time");
    let genesis_snap = dir.path().join(format!("utxos-{}.snap", t.chain.chain_id()));
    assert!(!genesis_snap.exists(), "snapshots were taken after the genesis one");
    let mut g = fork_gen.clone();
    g.reseed(99);
    for b in branch(&t, &mut g, &fork_block, 5, 8, 900) {
        t.chain.accept_block(b, NOW).unwrap();
    }
    assert_eq!(t.chain.tip_height(), 7);
    t.gen = g;
    t.extend(2, 8);
    // The same blocks on a memory store, which writes the set at every commit.
    let before = t.chain.utxos().clone();
    follow(&mut mem, &t);
    assert_eq!(mem.chain.utxos(), &before);
    // Reopened: the snapshot plus the log of the commits since.
    drop(t);
    let store = scalechain_chain::DiskStore::open(dir.path()).unwrap();
    let chain = Chain::open(store, Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    assert_eq!(chain.utxos(), &before);
    assert_eq!(chain.utxos(), mem.chain.utxos());
    chain.verify_all(NOW, |_, _| {}).unwrap();
}

#[test]
fn the_txids_of_the_blocks_an_accept_connected_are_handed_over_once() {
    let mut t = setup();
    t.extend(2, 4);
    let fork_gen = t.gen.clone();
    let fork_block = t.chain.block_at(2).unwrap().unwrap();
    t.extend(1, 4); // main chain to height 3 (5 after the two blocks below)
    let kind = t.p.hash;
    let ids = |b: &Block| (b.hash(kind), b.txs.iter().map(|x| x.txid(kind)).collect::<Vec<_>>());
    // A plain extension: its one block.
    let b = t.next(4);
    let expect = vec![ids(&b)];
    assert!(matches!(t.chain.accept_block(b.clone(), NOW).unwrap(), Accepted::Connected(_)));
    assert_eq!(t.chain.take_connected_txids(), expect);
    assert!(t.chain.take_connected_txids().is_empty(), "taken once");
    // Left untaken, a block's txids are not carried into the next accept: a duplicate
    // connects nothing and hands nothing over.
    let c = t.next(4);
    assert!(matches!(t.chain.accept_block(c.clone(), NOW).unwrap(), Accepted::Connected(_)));
    assert_eq!(t.chain.accept_block(c, NOW).unwrap(), Accepted::Duplicate);
    assert!(t.chain.take_connected_txids().is_empty());
    // A heavier branch delivered newest first: the last accept connects all of it, oldest first.
    let mut g = fork_gen;
    g.reseed(41);
    let side = branch(&t, &mut g, &fork_block, 4, 4, 900); // heights 3..6: more work than 5
    for s in side.iter().skip(1).rev() {
        assert_eq!(t.chain.accept_block(s.clone(), NOW).unwrap(), Accepted::Orphan);
        assert!(t.chain.take_connected_txids().is_empty());
    }
    t.chain.accept_block(side[0].clone(), NOW).unwrap();
    assert_eq!(t.chain.tip(), side[3].hash(t.p.hash));
    assert_eq!(t.chain.take_connected_txids(), side.iter().map(ids).collect::<Vec<_>>());
}
