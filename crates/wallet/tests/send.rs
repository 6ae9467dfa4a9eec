//! Transfers built and signed by the wallet are valid: `verify_txs` accepts them against a UTXO
//! set holding the coins, on devnets of each signature mode. Also the fee/size relationship,
//! change and dust, and the refusals (insufficient funds, zero amount, input cap, foreign coins).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{
    genesis_block, verify_txs, Apps, Coin, Params, TxEnv, TxRule, TxVerdict, UtxoSet, VerifyConfig,
    VerifyMode,
};
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, Scheme, Tx, TxOut};
use scalechain_wallet::build::default_dust_limit;
use scalechain_wallet::*;

struct Devnet {
    params: Params,
    mode: SigMode,
    chain: ChainContext,
    premine_txid: Hash,
}

impl Devnet {
    fn new(hash: HashKind, mode: SigMode) -> Devnet {
        let params = Params::devnet(hash, mode);
        let genesis = genesis_block(&params);
        let chain = ChainContext { hash, chain_id: genesis.hash(hash) };
        let premine_txid = genesis.txs[0].txid(hash);
        Devnet { params, mode, chain, premine_txid }
    }

    /// Premine output `i` as the node would list it.
    fn premine_coin(&self, i: u32) -> (OutPoint, TxOut) {
        (OutPoint { txid: self.premine_txid, index: i }, self.params.premine[i as usize])
    }

    /// Imports the seed of devnet premine key `i` (public knowledge) into the wallet.
    fn import_premine_key(&self, wallet: &mut Wallet, i: u64) -> KeyInfo {
        let seed = HashKind::Sha256.hash_parts(&[b"scalechain/devnet/premine", &i.to_le_bytes()]);
        let info = wallet.import_seed(self.mode.scheme_for(i), Seed::from_bytes(seed.0)).unwrap();
        assert_eq!(info.pubkey, devnet_premine_key(self.mode, i).public(), "same key as the premine's");
        info
    }

    fn verify(&self, coins: &[(OutPoint, TxOut)], txs: &[Tx]) -> Vec<Result<TxVerdict, TxRule>> {
        let mut utxos = UtxoSet::new();
        for (op, out) in coins {
            utxos.insert(*op, Coin { out: *out, height: 0, coinbase: false });
        }
        let apps = Apps::none();
        let mut results = Vec::new();
        for mode in VerifyMode::ALL {
            let verify = VerifyConfig { mode, seed: [7; 32], batch_size: 16 };
            let ctx = ConnectCtx::new(&self.params, &self.chain.chain_id, &apps, &verify);
            let app_state = BTreeMap::new();
            let env = TxEnv { ctx, view: &utxos, app_state: &app_state, height: 1, time: 0 };
            results.push(verify_txs(&env, txs));
        }
        assert!(results.windows(2).all(|w| w[0] == w[1]), "every verification mode agrees");
        results.swap_remove(0)
    }
}

fn wallet_in(dir: &tempfile::TempDir) -> Wallet {
    Wallet::create(&dir.path().join("wallet.json"), &Passphrase::from("pw"), KdfParams::INSECURE_FAST)
        .unwrap()
}

fn amount(v: u64) -> Amount {
    Amount::new(v).unwrap()
}

fn rate(v: u64) -> FeeRate {
    FeeRate::per_kb(amount(v))
}

/// Builds a transfer of `value` from premine keys `keys` to a fresh key, and checks it against
/// the consensus rules and the fee rules.
fn send_and_verify(net: &Devnet, keys: &[u64], value: u64, fee_rate: u64) -> BuiltTransfer {
    let dir = tempfile::tempdir().unwrap();
    let mut w = wallet_in(&dir);
    let coins: Vec<_> = keys
        .iter()
        .map(|&i| {
            net.import_premine_key(&mut w, i);
            net.premine_coin(i as u32)
        })
        .collect();
    let to = w.new_key(net.mode.scheme_for(7)).unwrap().lock(net.chain.hash);
    let change = w.keys()[0].lock(net.chain.hash);
    let options = BuildOptions::new(rate(fee_rate));
    let req = TransferRequest { coins: &coins, to, amount: amount(value), change, options };
    let built = build_transfer(&w.keyring(net.chain.hash), &net.chain, &req).unwrap();

    let verdicts = net.verify(&coins, std::slice::from_ref(&built.tx));
    let verdict = verdicts[0].clone().unwrap_or_else(|e| panic!("{}: {e}", e.rule()));
    assert_eq!(verdict.fee, built.fee);
    assert_eq!(verdict.txid, built.txid);
    assert_eq!(built.txid, built.tx.txid(net.chain.hash));

    // Fee and size.
    use scalechain_types::Encode;
    assert_eq!(built.size, built.tx.encode().len());
    let min_fee = options.fee_rate.fee_for(built.size).unwrap();
    assert!(built.fee >= min_fee);
    let spent = Amount::checked_sum(built.spent.iter().map(|c| c.1.value)).unwrap();
    assert_eq!(built.tx.outputs[0], TxOut { value: amount(value), lock: to });
    match built.change {
        Some(c) => {
            assert_eq!(built.fee, min_fee, "with change the fee is exactly the rate's");
            assert!(c >= options.dust_limit);
            assert_eq!(built.tx.outputs[1], TxOut { value: c, lock: change });
            assert_eq!(spent.get(), value + built.fee.get() + c.get());
        }
        None => {
            assert_eq!(built.tx.outputs.len(), 1);
            assert_eq!(spent.get(), value + built.fee.get());
        }
    }
    built
}

#[test]
fn ed25519_transfer_on_the_sha256_devnet_is_valid() {
    let net = Devnet::new(HashKind::Sha256, SigMode::Ed25519);
    // Three premine coins of 1e9 each; 2.5e9 needs all three, largest-first.
    let built = send_and_verify(&net, &[0, 1, 2], 2_500_000_000, 1_000);
    assert_eq!(built.tx.inputs.len(), 3);
    assert_eq!(built.size, 17 + 3 * 133 + 2 * 41);
    assert_eq!(built.fee.get(), built.size as u64, "1000 per 1000 bytes is one per byte");
    assert_eq!(built.change, Some(amount(3_000_000_000 - 2_500_000_000 - built.size as u64)));
}

#[test]
fn secp256k1_transfer_is_valid() {
    let net = Devnet::new(HashKind::Sha512_256, SigMode::Secp256k1);
    let built = send_and_verify(&net, &[3, 4], 1_200_000_000, 2_500);
    assert_eq!(built.tx.inputs.len(), 2);
    assert_eq!(built.size, 17 + 2 * 134 + 2 * 41);
    assert_eq!(built.fee.get(), (built.size as u64 * 2_500).div_ceil(1000));
}

#[test]
fn mixed_scheme_inputs_in_one_transfer_are_valid() {
    let net = Devnet::new(HashKind::Blake3, SigMode::Mixed);
    let built = send_and_verify(&net, &[0, 1], 1_500_000_000, 1_000);
    let schemes: Vec<Scheme> = built.tx.inputs.iter().map(|i| i.witness.pubkey.scheme()).collect();
    assert!(schemes.contains(&Scheme::Ed25519) && schemes.contains(&Scheme::Secp256k1));
}

#[test]
fn only_as_many_coins_as_needed_are_spent() {
    let net = Devnet::new(HashKind::Sha256, SigMode::Ed25519);
    let built = send_and_verify(&net, &[0, 1, 2, 3], 400_000_000, 1_000);
    assert_eq!(built.tx.inputs.len(), 1);
}

#[test]
fn change_below_the_dust_limit_goes_to_the_fee() {
    let net = Devnet::new(HashKind::Sha256, SigMode::Ed25519);
    // One coin of 1e9: leave 100 units above the one-output fee, below the dust limit.
    let fee1 = transfer_size([Scheme::Ed25519], 1) as u64;
    let built = send_and_verify(&net, &[5], 1_000_000_000 - fee1 - 100, 1_000);
    assert_eq!(built.change, None);
    assert_eq!(built.fee.get(), fee1 + 100);
    // Exactly spendable with nothing left over.
    let built = send_and_verify(&net, &[5], 1_000_000_000 - fee1, 1_000);
    assert_eq!(built.change, None);
    assert_eq!(built.fee.get(), fee1);
    // Zero fee rate: everything goes to recipient and change.
    let built = send_and_verify(&net, &[5], 999_000_000, 0);
    assert_eq!((built.fee, built.change), (Amount::ZERO, Some(amount(1_000_000))));
}

#[test]
fn refusals_are_typed() {
    let net = Devnet::new(HashKind::Sha256, SigMode::Ed25519);
    let dir = tempfile::tempdir().unwrap();
    let mut w = wallet_in(&dir);
    let coins: Vec<_> = (0..3)
        .map(|i| {
            net.import_premine_key(&mut w, i);
            net.premine_coin(i as u32)
        })
        .collect();
    let lock = w.keys()[0].lock(net.chain.hash);
    let keyring = w.keyring(net.chain.hash);
    let mut req = TransferRequest {
        coins: &coins,
        to: lock,
        amount: amount(3_000_000_000),
        change: lock,
        options: BuildOptions::new(rate(1_000)),
    };
    let fee_all = rate(1_000).fee_for(transfer_size([Scheme::Ed25519; 3], 1)).unwrap().get();
    assert_eq!(
        build_transfer(&keyring, &net.chain, &req),
        Err(BuildError::InsufficientFunds { have: 3_000_000_000, need: 3_000_000_000 + fee_all })
    );
    let e = build_transfer(&keyring, &net.chain, &req).unwrap_err().to_string();
    assert!(e.contains("have 3000000000") && e.contains("need"), "{e}");

    req.amount = Amount::ZERO;
    assert_eq!(build_transfer(&keyring, &net.chain, &req), Err(BuildError::ZeroAmount));

    req.amount = amount(2_500_000_000);
    req.options.max_inputs = 2;
    assert!(matches!(
        build_transfer(&keyring, &net.chain, &req),
        Err(BuildError::TooManyInputs { max: 2, reachable: 2_000_000_000, .. })
    ));

    // A coin of a key the wallet lacks.
    let mut with_foreign = coins.clone();
    with_foreign.push(net.premine_coin(9));
    req.coins = &with_foreign;
    req.options.max_inputs = 10;
    assert!(matches!(
        build_transfer(&keyring, &net.chain, &req),
        Err(BuildError::NotOurs { outpoint, .. }) if outpoint.index == 9
    ));
}

#[test]
fn a_signature_for_another_chain_or_a_tampered_one_is_rejected() {
    let net = Devnet::new(HashKind::Sha256, SigMode::Ed25519);
    let dir = tempfile::tempdir().unwrap();
    let mut w = wallet_in(&dir);
    net.import_premine_key(&mut w, 0);
    let coins = [net.premine_coin(0)];
    let lock = w.keys()[0].lock(net.chain.hash);
    let req = TransferRequest {
        coins: &coins,
        to: lock,
        amount: amount(1_000),
        change: lock,
        options: BuildOptions::new(rate(1_000)),
    };
    let other_chain = ChainContext { hash: net.chain.hash, chain_id: Hash([1; 32]) };
    let wrong = build_transfer(&w.keyring(net.chain.hash), &other_chain, &req).unwrap();
    let mut tampered = build_transfer(&w.keyring(net.chain.hash), &net.chain, &req).unwrap().tx;
    tampered.inputs[0].witness.signature[5] ^= 1;
    for v in net.verify(&coins, &[wrong.tx, tampered]) {
        assert_eq!(v.unwrap_err().rule(), "bad-signature");
    }
}

/// A signer holding keys 0..n of a fixed seed, for the property test (no file, no Argon2).
struct TestSigner {
    keys: Vec<(Lock, scalechain_types::SecretKey)>,
}

impl Signer for TestSigner {
    fn pubkey_for(&self, lock: &Lock) -> Option<scalechain_types::PubKey> {
        self.keys.iter().find(|(l, _)| l == lock).map(|(_, k)| k.public())
    }
    fn sign_for(&self, lock: &Lock, msg: &Hash) -> Option<scalechain_types::Signature> {
        self.keys.iter().find(|(l, _)| l == lock).map(|(_, k)| k.sign(msg))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For random coins, amounts and fee rates: either a valid transfer whose fee pays the rate
    /// for its exact size (exactly, when there is change; with less than the dust limit plus one
    /// output's fee on top, when not), or a refusal that is right about the funds.
    #[test]
    fn fee_and_size_relationship(
        values in proptest::collection::vec(0u64..5_000_000, 1..12),
        schemes in proptest::collection::vec(any::<bool>(), 12),
        pay in 1u64..20_000_000,
        fee_rate in 0u64..20_000,
        dust in 0u64..100_000,
    ) {
        let net = Devnet::new(HashKind::Sha256, SigMode::Mixed);
        let hk = net.chain.hash;
        let keys: Vec<(Lock, scalechain_types::SecretKey)> = (0..values.len())
            .map(|i| {
                let scheme = if schemes[i] { Scheme::Secp256k1 } else { Scheme::Ed25519 };
                let k = scalechain_types::SecretKey::from_seed(scheme, [i as u8 + 1; 32]);
                let pk = k.public();
                (Lock { scheme, pubkey_hash: pk.hash(hk) }, k)
            })
            .collect();
        let coins: Vec<(OutPoint, TxOut)> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                (OutPoint { txid: Hash([0xc0 ^ i as u8; 32]), index: i as u32 }, TxOut { value: amount(v), lock: keys[i].0 })
            })
            .collect();
        let signer = TestSigner { keys };
        let options = BuildOptions { fee_rate: rate(fee_rate), dust_limit: amount(dust), max_inputs: 100 };
        let to = Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([0xee; 32]) };
        let req = TransferRequest { coins: &coins, to, amount: amount(pay), change: signer.keys[0].0, options };
        let have: u64 = values.iter().sum();
        match build_transfer(&signer, &net.chain, &req) {
            Ok(b) => {
                use scalechain_types::Encode;
                prop_assert_eq!(b.size, b.tx.encode().len());
                let min = options.fee_rate.fee_for(b.size).unwrap();
                let spent: u64 = b.spent.iter().map(|c| c.1.value.get()).sum();
                prop_assert_eq!(spent, pay + b.fee.get() + b.change.map_or(0, |c| c.get()));
                match b.change {
                    Some(c) => {
                        prop_assert_eq!(b.fee, min);
                        prop_assert!(c.get() >= dust && c.get() > 0);
                    }
                    None => {
                        prop_assert!(b.fee >= min);
                        let with_change = options.fee_rate.fee_for(b.size + TxOut::LEN).unwrap();
                        prop_assert!(b.fee.get() < with_change.get() + dust.max(1));
                    }
                }
                // No coin is spent needlessly: without the smallest input, it would not pay.
                if b.spent.len() > 1 {
                    let smallest = b.spent.last().unwrap().1.value.get();
                    let fewer = transfer_size(b.spent[..b.spent.len() - 1].iter().map(|c| c.1.lock.scheme), 1);
                    prop_assert!(spent - smallest < pay + options.fee_rate.fee_for(fewer).unwrap().get());
                }
                let v = net.verify(&coins, std::slice::from_ref(&b.tx));
                prop_assert!(v[0].is_ok(), "{:?}", v[0]);
                prop_assert_eq!(v[0].clone().unwrap().fee, b.fee);
            }
            Err(BuildError::InsufficientFunds { have: h, need }) => {
                prop_assert_eq!(h, have);
                prop_assert!(h < need);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

#[test]
fn default_dust_limit_tracks_the_fee_rate() {
    assert_eq!(default_dust_limit(FeeRate::ZERO).get(), 546);
    let r = rate(10_000);
    assert_eq!(default_dust_limit(r).get(), 3 * r.fee_for(41 + 134).unwrap().get());
}
