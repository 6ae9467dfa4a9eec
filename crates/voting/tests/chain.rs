//! Both schemes on a chain: a Paillier election end to end, every kind of invalid Paillier
//! ballot refused by consensus with its own rule, and the batch pre-check of block validation
//! and mempool admission giving exactly the verdicts of single verification (`sequential`
//! mode), down to the index and rule of a bad ballot among many valid ones.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, OnceLock};

use openssl::bn::{BigNum, BigNumContext};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_chain::{Accepted, Chain, MemStore};
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{verify_txs, Apps, BlockError, Params, TxEnv, VerifyConfig, VerifyMode};
use scalechain_types::{Block, Hash, HashKind, Scheme, SecretKey, Tx};
use scalechain_voting::app::{
    ballots_prefix, elgamal_election_key, token_message, CastBallot, Election, Message, VotingModule,
    SCHEME_ELGAMAL, SCHEME_PAILLIER,
};
use scalechain_voting::{elgamal, paillier, Statement};
use scalechain_workload::fixed::block_paying;

const NOW: u64 = u64::MAX / 2;

fn paillier_secret() -> &'static paillier::SecretKey {
    static KEY: OnceLock<paillier::SecretKey> = OnceLock::new();
    KEY.get_or_init(|| paillier::keygen(2048, &mut ChaCha20Rng::seed_from_u64(77)).unwrap())
}

enum Keys {
    Elgamal(elgamal::PublicKey),
    Paillier(paillier::ElectionKey),
}

/// How to spoil a ballot before the voter signs it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Spoil {
    None,
    BadProof,
    OutsideSet,
    NotUnit,
}

struct Vote {
    chain: Chain<MemStore>,
    p: Params,
    ea_token: SecretKey,
    keys: Keys,
    election: Election,
    id: Hash,
    l: usize,
}

fn voter_key(i: u64) -> SecretKey {
    let mut s = [0x55u8; 32];
    s[..8].copy_from_slice(&i.to_le_bytes());
    SecretKey::from_seed(Scheme::Ed25519, s)
}

fn pk32(k: &SecretKey) -> [u8; 32] {
    k.public().as_bytes().try_into().unwrap()
}

impl Vote {
    fn new(scheme: u8, l: usize, start: u64, end: u64, mode: VerifyMode) -> Vote {
        let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        p.max_block_txs = 10_000;
        let mut apps = Apps::none();
        apps.register(Arc::new(VotingModule));
        let verify = VerifyConfig::parallel([9; 32]).with_mode(mode);
        let chain = Chain::open_or_init(MemStore::new(), &p, apps, verify).unwrap();
        let ea_token = SecretKey::from_seed(Scheme::Ed25519, [0xea; 32]);
        let (keys, election_key) = if scheme == SCHEME_PAILLIER {
            let key = paillier::ElectionKey { public: paillier_secret().public().clone(), voters: 100 };
            let bytes = key.encode();
            (Keys::Paillier(key), bytes)
        } else {
            let (_, k) = elgamal::keygen(&mut ChaCha20Rng::seed_from_u64(5));
            (Keys::Elgamal(k), elgamal_election_key(1000, &k))
        };
        let election = Election {
            candidates: l as u8,
            start,
            end,
            scheme,
            token_key: pk32(&ea_token),
            election_key,
            label: b"chain test".to_vec(),
        };
        let id = election.id(p.hash);
        Vote { chain, p, ea_token, keys, election, id, l }
    }

    fn block(&self, txs: &[Tx]) -> Block {
        block_paying(&self.p, &self.chain.tip_header(), txs, self.chain.next_target(), 0)
    }

    fn mine(&mut self, txs: &[Tx]) {
        let b = self.block(txs);
        assert!(matches!(self.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
    }

    /// Voter `i`'s ballot for `choice`, spoilt as asked, signed by the voter.
    fn ballot(&self, i: u64, choice: usize, spoil: Spoil, rng: &mut ChaCha20Rng) -> CastBallot {
        let voter = voter_key(i);
        let kind = self.p.hash;
        let vid = kind.hash(&pk32(&voter));
        let st = Statement { election: &self.id.0, voter: &vid.0 };
        let bytes = match &self.keys {
            Keys::Elgamal(k) => {
                let mut b = elgamal::cast(k, &st, choice, self.l, rng).unwrap();
                match spoil {
                    Spoil::BadProof => b.bits[0].s[1] += curve25519_dalek::scalar::Scalar::ONE,
                    Spoil::OutsideSet => {
                        b.cts[0].beta += curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT
                    }
                    Spoil::None | Spoil::NotUnit => {}
                }
                b.encode()
            }
            Keys::Paillier(key) => {
                let mut b = if spoil == Spoil::OutsideSet {
                    let m = &key.encoding(0).unwrap() + &key.encoding(1).unwrap();
                    let (c, r) = key.public.encrypt(&m, rng).unwrap();
                    let proof = paillier::prove(key, &st, &c, &r, choice, self.l, rng).unwrap();
                    paillier::Ballot { c, proof }
                } else {
                    paillier::cast(key, &st, choice, self.l, rng).unwrap()
                };
                match spoil {
                    Spoil::BadProof => {
                        let mut z = BigNum::new().unwrap();
                        let mut ctx = BigNumContext::new().unwrap();
                        z.mod_add(&b.proof.z[1], &b.proof.z[1], key.public.n(), &mut ctx).unwrap();
                        b.proof.z[1] = z;
                    }
                    Spoil::NotUnit => b.c = paillier::Ciphertext(key.public.n().to_owned().unwrap()),
                    Spoil::None | Spoil::OutsideSet => {}
                }
                b.encode(key.public.modulus_bytes()).unwrap()
            }
        };
        let token = self.ea_token.sign(&token_message(kind, &self.id, &pk32(&voter)));
        let mut b = CastBallot {
            election: self.election.clone(),
            voter_key: pk32(&voter),
            token,
            ballot: bytes,
            signature: [0; 64],
        };
        b.signature = voter.sign(&b.signing_message(kind));
        b
    }

    /// The rejection of a block of `txs`: (transaction index, rule); the state must not change.
    fn rejection(&mut self, txs: &[Tx]) -> (usize, String) {
        let before = (self.chain.tip(), self.chain.app_state().clone());
        let err = self.chain.accept_block(self.block(txs), NOW).unwrap_err();
        let rej = err.rejection().unwrap_or_else(|| panic!("expected a rejection, got {err}"));
        assert_eq!((self.chain.tip(), self.chain.app_state().clone()), before);
        match &rej.error {
            BlockError::Tx { index, .. } => (*index, rej.error.rule().to_string()),
            other => panic!("not a transaction's rule: {other}"),
        }
    }

    fn refuse(&mut self, txs: &[Tx], rule: &str) {
        assert_eq!(self.rejection(txs).1, rule);
    }

    /// Mempool admission verdicts (rule names, "ok" for admitted).
    fn admission(&self, txs: &[Tx], mode: VerifyMode) -> Vec<String> {
        let mut apps = Apps::none();
        apps.register(Arc::new(VotingModule));
        let cfg = VerifyConfig::parallel([4; 32]).with_mode(mode);
        let chain_id = self.chain.chain_id();
        let ctx = ConnectCtx::new(&self.p, &chain_id, &apps, &cfg);
        let env = TxEnv {
            ctx,
            view: self.chain.utxos(),
            app_state: self.chain.app_state(),
            height: self.chain.tip_height() + 1,
            time: 0,
        };
        verify_txs(&env, txs)
            .iter()
            .map(|v| v.as_ref().map_or_else(|e| e.rule().to_string(), |_| "ok".into()))
            .collect()
    }
}

fn tx(b: CastBallot) -> Tx {
    Message::Ballot(b).into_tx()
}

#[test]
fn a_paillier_election_on_chain_tallies_to_the_truth() {
    let mut v = Vote::new(SCHEME_PAILLIER, 3, 2, 100, VerifyMode::Parallel);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    v.mine(&[Message::Election(v.election.clone()).into_tx()]);
    let mut truth = [0u64; 3];
    for round in 0..3u64 {
        let mut txs = Vec::new();
        for i in round * 8..round * 8 + 8 {
            let choice = (rng.next_u64() % 3) as usize;
            truth[choice] += 1;
            txs.push(tx(v.ballot(i, choice, Spoil::None, &mut rng)));
        }
        v.mine(&txs);
    }
    let Keys::Paillier(key) = &v.keys else { unreachable!() };
    let prefix = ballots_prefix(&v.id);
    let ballots: Vec<paillier::Ballot> = v
        .chain
        .app_state()
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(_, b)| paillier::Ballot::decode(b, key).unwrap())
        .collect();
    assert_eq!(ballots.len(), 24);
    let c = paillier::tally(key, &ballots).unwrap();
    let (counts, proof) = paillier::decrypt_tally(paillier_secret(), key, &c, 3, 24).unwrap();
    assert_eq!(counts, truth);
    paillier::verify_tally(key, &c, &counts, 24, &proof).unwrap();
}

#[test]
fn every_kind_of_invalid_paillier_ballot_is_refused_by_consensus_with_its_own_rule() {
    let mut v = Vote::new(SCHEME_PAILLIER, 4, 3, 6, VerifyMode::Parallel);
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let early = tx(v.ballot(1, 0, Spoil::None, &mut rng));
    v.mine(&[Message::Election(v.election.clone()).into_tx()]); // height 1
    v.refuse(&[Message::Election(v.election.clone()).into_tx()], "vote-election-exists");
    v.refuse(&[early], "vote-outside-window"); // height 2 < start 3
    v.mine(&[]); // height 2
    let first = v.ballot(1, 0, Spoil::None, &mut rng);
    v.refuse(&[tx(first.clone()), tx(v.ballot(1, 2, Spoil::None, &mut rng))], "vote-double-vote");
    v.mine(&[tx(first)]); // height 3
    v.refuse(&[tx(v.ballot(1, 1, Spoil::None, &mut rng))], "vote-double-vote");
    v.refuse(&[tx(v.ballot(2, 0, Spoil::BadProof, &mut rng))], "vote-bad-choice-proof");
    v.refuse(&[tx(v.ballot(3, 1, Spoil::OutsideSet, &mut rng))], "vote-bad-choice-proof");
    v.refuse(&[tx(v.ballot(4, 1, Spoil::NotUnit, &mut rng))], "vote-ciphertext-not-unit");
    // Replayed under another voter's key (that voter's own token and signature).
    let a = v.ballot(6, 2, Spoil::None, &mut rng);
    let mut replay = v.ballot(7, 0, Spoil::None, &mut rng);
    replay.ballot = a.ballot.clone();
    replay.signature = voter_key(7).sign(&replay.signing_message(v.p.hash));
    v.refuse(&[tx(replay)], "vote-bad-choice-proof");
    // A wrong token.
    let mut forged = v.ballot(8, 0, Spoil::None, &mut rng);
    forged.token = SecretKey::from_seed(Scheme::Ed25519, [1; 32]).sign(&token_message(
        v.p.hash,
        &v.id,
        &forged.voter_key,
    ));
    forged.signature = voter_key(8).sign(&forged.signing_message(v.p.hash));
    v.refuse(&[tx(forged)], "vote-bad-token");
    // Malformed: truncated, a response ≥ N; another number of candidates.
    let mut cut = v.ballot(9, 0, Spoil::None, &mut rng);
    cut.ballot.pop();
    cut.signature = voter_key(9).sign(&cut.signing_message(v.p.hash));
    v.refuse(&[tx(cut)], "vote-malformed");
    let mut big = v.ballot(10, 0, Spoil::None, &mut rng);
    let z0 = 4 + 512 + 512 + 16;
    big.ballot[z0..z0 + 256].copy_from_slice(&[0xff; 256]);
    big.signature = voter_key(10).sign(&big.signing_message(v.p.hash));
    v.refuse(&[tx(big)], "vote-malformed");
    let mut three = v.ballot(11, 0, Spoil::None, &mut rng);
    let Keys::Paillier(key) = &v.keys else { unreachable!() };
    let vid = v.p.hash.hash(&three.voter_key);
    let st = Statement { election: &v.id.0, voter: &vid.0 };
    three.ballot = paillier::cast(key, &st, 0, 3, &mut rng).unwrap().encode(256).unwrap();
    three.signature = voter_key(11).sign(&three.signing_message(v.p.hash));
    v.refuse(&[tx(three)], "vote-wrong-candidates");
    // After the window closes.
    v.mine(&[]);
    v.mine(&[]);
    v.mine(&[]); // height 6 = end
    v.refuse(&[tx(v.ballot(14, 0, Spoil::None, &mut rng))], "vote-outside-window");
}

/// A block of `n` valid ballots with spoilt ones at some indices: every mode must reject it
/// naming the same transaction and rule, and admission must give the same verdicts.
fn verdicts_alike_in_every_mode(scheme: u8, n: u64) {
    let l = 3;
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut chains: Vec<Vote> = VerifyMode::ALL.iter().map(|&m| Vote::new(scheme, l, 1, 100, m)).collect();
    for v in &mut chains {
        v.mine(&[Message::Election(v.election.clone()).into_tx()]);
    }
    let v0 = &chains[0];
    let valid: Vec<Tx> = (0..n).map(|i| tx(v0.ballot(i, (i % 3) as usize, Spoil::None, &mut rng))).collect();
    let bad_proof = tx(v0.ballot(1000, 1, Spoil::BadProof, &mut rng));
    let outside = tx(v0.ballot(1001, 2, Spoil::OutsideSet, &mut rng));
    let double = tx(v0.ballot(3, 0, Spoil::None, &mut rng)); // voter 3 votes again

    // One bad proof among many valid ballots (block index 1 + position: the coinbase is 0).
    let at = (n as usize) * 2 / 3;
    let mut txs = valid.clone();
    txs.insert(at, bad_proof.clone());
    for v in &mut chains {
        assert_eq!(v.rejection(&txs), (at + 1, "vote-bad-choice-proof".to_string()));
    }
    // A state rule before a bad proof: the state rule, in block order, in every mode.
    let mut txs = valid.clone();
    txs.insert(at, outside.clone());
    txs.insert(at / 2, double.clone());
    for v in &mut chains {
        assert_eq!(v.rejection(&txs), (at / 2 + 1, "vote-double-vote".to_string()));
    }
    // Admission: the same verdicts in every mode, bad ballots named one by one.
    let mut pool = valid.clone();
    pool.insert(at, bad_proof);
    pool.insert(1, outside);
    let verdicts: Vec<Vec<String>> = VerifyMode::ALL.iter().map(|&m| chains[0].admission(&pool, m)).collect();
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], verdicts[2]);
    let bad: Vec<usize> = (0..pool.len()).filter(|&i| verdicts[0][i] != "ok").collect();
    assert_eq!(bad, [1, at + 1]);
    assert!(bad.iter().all(|&i| verdicts[0][i] == "vote-bad-choice-proof"));
    // And the valid ones connect in every mode.
    for v in &mut chains {
        v.mine(&valid);
    }
}

#[test]
fn elgamal_batch_pre_check_gives_the_single_verdicts() {
    verdicts_alike_in_every_mode(SCHEME_ELGAMAL, 150);
}

#[test]
fn paillier_batch_pre_check_gives_the_single_verdicts() {
    verdicts_alike_in_every_mode(SCHEME_PAILLIER, 24);
}
