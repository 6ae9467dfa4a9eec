//! The voting module on a chain: a whole election end to end, and every kind of invalid ballot
//! refused by consensus with its own rule, leaving the chain unchanged.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT as G;
use curve25519_dalek::scalar::Scalar;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_chain::{Accepted, Chain, MemStore};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{Apps, Params, TxRule, VerifyConfig};
use scalechain_types::{Amount, Hash, HashKind, OutPoint, Scheme, SecretKey, Tx, TxIn, TxOut, Witness};
use scalechain_voting::app::{
    ballots_prefix, elgamal_election_key, token_message, CastBallot, Election, Message, SchemeKey,
    VotingModule, SCHEME_ELGAMAL, VOTE_KIND,
};
use scalechain_voting::elgamal::{self, Ballot, Dlog, Statement};
use scalechain_workload::fixed::block_paying;

const NOW: u64 = u64::MAX / 2;
const L: usize = 3;

struct Vote {
    chain: Chain<MemStore>,
    p: Params,
    ea_token: SecretKey,
    ea_secret: elgamal::SecretKey,
    election: Election,
    id: Hash,
    rng: std::cell::RefCell<ChaCha20Rng>,
}

fn voter_key(i: u64) -> SecretKey {
    let mut s = [0x77u8; 32];
    s[..8].copy_from_slice(&i.to_le_bytes());
    SecretKey::from_seed(Scheme::Ed25519, s)
}

fn pk32(k: &SecretKey) -> [u8; 32] {
    k.public().as_bytes().try_into().unwrap()
}

impl Vote {
    fn new(start: u64, end: u64) -> Vote {
        Vote::counting(start, end, 1000)
    }

    /// An election of window `start..=end` counting at most `voters` ballots.
    fn counting(start: u64, end: u64, voters: u64) -> Vote {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let mut apps = Apps::none();
        apps.register(Arc::new(VotingModule));
        let chain = Chain::open_or_init(MemStore::new(), &p, apps, VerifyConfig::parallel([3; 32])).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let ea_token = SecretKey::from_seed(Scheme::Ed25519, [0xea; 32]);
        let (ea_secret, k) = elgamal::keygen(&mut rng);
        let election = Election {
            candidates: L as u8,
            start,
            end,
            scheme: SCHEME_ELGAMAL,
            token_key: pk32(&ea_token),
            election_key: elgamal_election_key(voters, &k),
            label: b"test election".to_vec(),
        };
        let id = election.id(p.hash);
        Vote { chain, p, ea_token, ea_secret, election, id, rng: std::cell::RefCell::new(rng) }
    }

    fn key(&self) -> elgamal::PublicKey {
        match self.election.check().unwrap() {
            SchemeKey::Elgamal(k) => k,
            SchemeKey::Paillier(_) => unreachable!("an elgamal election"),
        }
    }

    fn block(&self, txs: &[Tx]) -> scalechain_types::Block {
        let prev = self.chain.tip_header();
        block_paying(&self.p, &prev, txs, self.chain.next_target(), 0)
    }

    fn mine(&mut self, txs: &[Tx]) {
        let b = self.block(txs);
        assert!(matches!(self.chain.accept_block(b, NOW).unwrap(), Accepted::Connected(_)));
    }

    /// Voter `i`'s ballot: `edit` may change the encrypted ballot before the voter signs it.
    fn ballot(&self, i: u64, choice: usize, edit: impl FnOnce(&mut Ballot)) -> CastBallot {
        let voter = voter_key(i);
        let kind = self.p.hash;
        let voter_id = kind.hash(&pk32(&voter));
        let st = Statement { election: &self.id.0, voter: &voter_id.0 };
        let mut ballot = elgamal::cast(&self.key(), &st, choice, L, &mut *self.rng.borrow_mut()).unwrap();
        edit(&mut ballot);
        let token = self.ea_token.sign(&token_message(kind, &self.id, &pk32(&voter)));
        let mut b = CastBallot {
            election: self.election.clone(),
            voter_key: pk32(&voter),
            token,
            ballot: ballot.encode(),
            signature: [0; 64],
        };
        sign(&mut b, &voter, kind);
        b
    }

    /// Asserts a block of `txs` is refused with `rule` and the state did not change.
    fn refuse(&mut self, txs: &[Tx], rule: &str) {
        let before = (self.chain.tip(), self.chain.app_state().clone());
        let err = self.chain.accept_block(self.block(txs), NOW).unwrap_err();
        let rej = err.rejection().unwrap_or_else(|| panic!("expected a rejection, got {err}"));
        assert_eq!(rej.error.rule(), rule, "{rej}");
        // The rules that look at the election's state say so: a peer that relays such a
        // ballot may not have seen the block that makes it invalid.
        let on_state = matches!(rej.error.tx_rule(), Some(TxRule::App(a)) if a.on_state);
        assert_eq!(on_state, STATE_RULES.contains(&rule), "{rule}: on_state {on_state}");
        assert_eq!((self.chain.tip(), self.chain.app_state().clone()), before);
    }
}

/// The rules that refuse a ballot or an election for the chain's state, not for itself.
const STATE_RULES: [&str; 6] = [
    "vote-election-exists",
    "vote-unknown-election",
    "vote-outside-window",
    "vote-double-vote",
    "vote-election-full",
    "vote-bad-state",
];

fn sign(b: &mut CastBallot, voter: &SecretKey, kind: HashKind) {
    b.signature = voter.sign(&b.signing_message(kind));
}

fn tx(b: CastBallot) -> Tx {
    Message::Ballot(b).into_tx()
}

/// `election` published by a transaction paying `fee` from premine output `i` of the devnet
/// (its key is public knowledge), the rest back to the same lock.
fn funded(v: &Vote, election: &Election, i: u32, fee: u64) -> Tx {
    let kind = v.p.hash;
    let genesis = v.chain.block_at(0).unwrap().unwrap();
    let coinbase = &genesis.txs[0];
    let key = devnet_premine_key(SigMode::Ed25519, u64::from(i));
    let coin = coinbase.outputs[i as usize];
    let change = TxOut { value: Amount::new(coin.value.get() - fee).unwrap(), lock: coin.lock };
    let mut t = Tx {
        version: 1,
        kind: VOTE_KIND,
        inputs: vec![TxIn {
            prev: OutPoint { txid: coinbase.txid(kind), index: i },
            witness: Witness { pubkey: key.public(), signature: [0; 64] },
        }],
        outputs: vec![change],
        data: Message::Election(election.clone()).encode(),
    };
    let Ok(()) = t.sign_inputs::<std::convert::Infallible>(kind, &v.chain.chain_id(), |_, m| Ok(key.sign(m)));
    t
}

#[test]
fn an_election_on_chain_tallies_to_the_truth() {
    let mut v = Vote::new(2, 100);
    v.mine(&[Message::Election(v.election.clone()).into_tx()]);
    let mut truth = [0u64; L];
    for round in 0..3u64 {
        let mut txs = Vec::new();
        for i in round * 10..round * 10 + 10 {
            let choice = (v.rng.borrow_mut().next_u64() % L as u64) as usize;
            truth[choice] += 1;
            txs.push(tx(v.ballot(i, choice, |_| {})));
        }
        v.mine(&txs);
    }
    // Anyone tallies from chain state.
    let prefix = ballots_prefix(&v.id);
    let ballots: Vec<Ballot> = v
        .chain
        .app_state()
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(_, b)| Ballot::decode(b).unwrap())
        .collect();
    assert_eq!(ballots.len(), 30);
    let sums = elgamal::tally(&ballots, L);
    let st = Statement { election: &v.id.0, voter: &[0; 32] };
    let dlog = Dlog::new(30);
    let k = v.key();
    for (j, ct) in sums.iter().enumerate() {
        let (count, proof) =
            elgamal::decrypt(&v.ea_secret, &st, ct, &dlog, &mut *v.rng.borrow_mut()).unwrap();
        assert_eq!(count, truth[j]);
        elgamal::verify_decryption(&k, &st, ct, count, &proof).unwrap();
    }
}

#[test]
fn every_kind_of_invalid_ballot_is_refused_by_consensus_with_its_own_rule() {
    let mut v = Vote::new(3, 6);
    let early = tx(v.ballot(1, 0, |_| {}));
    v.mine(&[Message::Election(v.election.clone()).into_tx()]); // height 1
    v.refuse(&[Message::Election(v.election.clone()).into_tx()], "vote-election-exists");
    v.refuse(&[early], "vote-outside-window"); // height 2 < start 3
    v.mine(&[]); // height 2
    let first = v.ballot(1, 0, |_| {});
    // Double vote inside one block, then across blocks.
    v.refuse(&[tx(first.clone()), tx(v.ballot(1, 2, |_| {}))], "vote-double-vote");
    v.mine(&[tx(first)]); // height 3
    v.refuse(&[tx(v.ballot(1, 1, |_| {}))], "vote-double-vote");
    // A vote value outside {0, 1}, two votes, no vote.
    v.refuse(&[tx(v.ballot(2, 0, |b| b.cts[0].beta += G))], "vote-bad-choice-proof");
    let other = v.ballot(3, 1, |_| {});
    let other = Ballot::decode(&other.ballot).unwrap();
    v.refuse(
        &[tx(v.ballot(4, 0, |b| {
            b.cts[1] = other.cts[1];
            b.bits[1] = other.bits[1];
        }))],
        "vote-bad-choice-proof", // other's proofs are bound to voter 3, not 4
    );
    v.refuse(&[tx(v.ballot(5, 0, |b| b.sum.s += Scalar::ONE))], "vote-bad-sum-proof");
    v.refuse(&[tx(v.ballot(5, 0, |b| b.bits[2].s[1] += Scalar::ONE))], "vote-bad-choice-proof");
    // A ballot replayed under another voter's key (that voter's own token and signature).
    let a = v.ballot(6, 2, |_| {});
    let mut replay = v.ballot(7, 0, |_| {});
    replay.ballot = a.ballot.clone();
    sign(&mut replay, &voter_key(7), v.p.hash);
    v.refuse(&[tx(replay)], "vote-bad-choice-proof");
    // A wrong token: signed by someone other than the EA, or for another voter.
    let mut forged = v.ballot(8, 0, |_| {});
    forged.token = SecretKey::from_seed(Scheme::Ed25519, [1; 32]).sign(&token_message(
        v.p.hash,
        &v.id,
        &forged.voter_key,
    ));
    sign(&mut forged, &voter_key(8), v.p.hash);
    v.refuse(&[tx(forged)], "vote-bad-token");
    let mut borrowed = v.ballot(9, 0, |_| {});
    borrowed.token = v.ballot(10, 0, |_| {}).token;
    sign(&mut borrowed, &voter_key(9), v.p.hash);
    v.refuse(&[tx(borrowed)], "vote-bad-token");
    // Not signed by the voter.
    let mut unsigned = v.ballot(11, 0, |_| {});
    unsigned.signature[3] ^= 1;
    v.refuse(&[tx(unsigned)], "vote-bad-signature");
    // A malformed ciphertext (a point that does not decompress), signed by the voter.
    let mut bad = v.ballot(12, 0, |_| {});
    bad.ballot[4..36].copy_from_slice(&[0xff; 32]);
    sign(&mut bad, &voter_key(12), v.p.hash);
    v.refuse(&[tx(bad)], "vote-malformed");
    // An election nobody published.
    let mut stranger = v.ballot(13, 0, |_| {});
    stranger.election.label = b"another".to_vec();
    sign(&mut stranger, &voter_key(13), v.p.hash);
    v.refuse(&[tx(stranger)], "vote-bad-token"); // the token names the real election id
                                                 // ... even with a token and proofs made for that unpublished election.
    let kind = v.p.hash;
    let mut unpublished = v.election.clone();
    unpublished.label = b"unpublished".to_vec();
    let uid = unpublished.id(kind);
    let voter = voter_key(13);
    let vid = kind.hash(&pk32(&voter));
    let st = Statement { election: &uid.0, voter: &vid.0 };
    let k = v.key();
    let ballot = elgamal::cast(&k, &st, 0, L, &mut *v.rng.borrow_mut()).unwrap().encode();
    let token = v.ea_token.sign(&token_message(kind, &uid, &pk32(&voter)));
    let mut cb =
        CastBallot { election: unpublished, voter_key: pk32(&voter), token, ballot, signature: [0; 64] };
    sign(&mut cb, &voter, kind);
    v.refuse(&[tx(cb)], "vote-unknown-election");
    // After the window closes.
    v.mine(&[]);
    v.mine(&[]);
    v.mine(&[]); // height 6 = end
    v.refuse(&[tx(v.ballot(14, 0, |_| {}))], "vote-outside-window");
}

/// Mempool admission at the chain's tip, as a node does it.
fn admit(
    v: &Vote,
    pool: &scalechain_mempool::Mempool,
    txs: Vec<Tx>,
) -> Vec<Result<scalechain_mempool::Admitted, scalechain_mempool::MempoolError>> {
    pool.admit(&v.chain.next_block_env(v.chain.tip_header().time + 1000), txs)
}

fn reasons<T>(v: &[Result<T, scalechain_mempool::MempoolError>]) -> Vec<&'static str> {
    v.iter().map(|r| r.as_ref().map_or_else(|e| e.reason(), |_| "ok")).collect()
}

#[test]
fn a_voters_second_ballot_is_refused_at_admission_while_the_first_is_pooled() {
    use scalechain_mempool::{Mempool, MempoolConfig, MempoolError};
    use scalechain_voting::app::ballot_conflict_key;
    let mut v = Vote::new(2, 100);
    let kind = v.p.hash;
    // Ballots are bare: the default policy holds them as fee-less transactions.
    let pool = Mempool::new(kind, MempoolConfig::default());
    let twice = admit(&v, &pool, vec![funded(&v, &v.election, 0, 1_000), funded(&v, &v.election, 1, 1_000)]);
    assert_eq!(reasons(&twice), ["ok", "app-conflict"], "one election id, pooled once");
    let t = pool.template(u64::MAX, usize::MAX);
    v.mine(&owned(&t.txs));
    pool.remove_block(&v.chain.block_at(1).unwrap().unwrap(), v.chain.apps(), v.chain.params());
    assert!(pool.is_empty());

    let first = tx(v.ballot(1, 0, |_| {}));
    let second = tx(v.ballot(1, 2, |_| {}));
    let other = tx(v.ballot(2, 1, |_| {}));
    let voter1 = kind.hash(&pk32(&voter_key(1)));
    let conflict = MempoolError::AppConflict {
        kind: 2,
        key: ballot_conflict_key(kind, &v.id, &voter1),
        pooled: first.txid(kind),
    };
    // In one batch and later on its own, the voter's second ballot is refused naming the first.
    let verdicts = admit(&v, &pool, vec![first.clone(), second.clone(), other.clone()]);
    assert_eq!(reasons(&verdicts), ["ok", "app-conflict", "ok"]);
    assert_eq!(verdicts[1].as_ref().unwrap_err(), &conflict);
    assert_eq!(admit(&v, &pool, vec![second.clone()])[0].as_ref().unwrap_err(), &conflict);
    pool.audit().unwrap();
    // The pool's template is a block consensus accepts.
    let t = pool.template(u64::MAX, usize::MAX);
    assert_eq!(t.txs.len(), 2);
    v.mine(&owned(&t.txs));
    let r = pool.remove_block(&v.chain.block_at(2).unwrap().unwrap(), v.chain.apps(), v.chain.params());
    assert_eq!((r.confirmed, pool.len()), (2, 0));
    // Once the first is in a block, consensus refuses the second, and the first itself when a
    // peer relays it late: neither costs the peer anything (it may not have that block yet).
    let late = admit(&v, &pool, vec![second, first]);
    assert_eq!(reasons(&late), ["vote-double-vote", "vote-double-vote"]);
    assert!(late.iter().all(|r| !scalechain_replica::punishable(r.as_ref().unwrap_err())));
    // A ballot that no chain could hold does.
    let mut forged = v.ballot(4, 0, |_| {});
    forged.signature[0] ^= 1;
    let bad = admit(&v, &pool, vec![tx(forged)]);
    assert_eq!(reasons(&bad), ["vote-bad-signature"]);
    assert!(scalechain_replica::punishable(bad[0].as_ref().unwrap_err()));

    // A voter's pooled ballot leaves when a block from elsewhere holds another ballot of theirs.
    let mine = tx(v.ballot(3, 0, |_| {}));
    let theirs = tx(v.ballot(3, 1, |_| {}));
    assert_eq!(reasons(&admit(&v, &pool, vec![mine.clone()])), ["ok"]);
    v.mine(&[theirs]);
    let r = pool.remove_block(&v.chain.block_at(3).unwrap().unwrap(), v.chain.apps(), v.chain.params());
    assert_eq!((r.confirmed, r.conflicted.clone()), (0, vec![mine.txid(kind)]));
    assert!(pool.is_empty());
    pool.audit().unwrap();
}

#[test]
fn the_ballot_past_an_elections_maximum_is_refused_in_blocks_and_at_admission() {
    use scalechain_mempool::{Mempool, MempoolConfig};
    let mut v = Vote::counting(2, 100, 2);
    v.mine(&[Message::Election(v.election.clone()).into_tx()]);
    v.mine(&[]);
    // Inside one block: the third ballot.
    let three: Vec<Tx> = (1..=3).map(|i| tx(v.ballot(i, 0, |_| {}))).collect();
    v.refuse(&three, "vote-election-full");
    // Across blocks: one, then two more.
    v.mine(&three[..1]);
    v.refuse(&three[1..], "vote-election-full");
    v.mine(&three[1..2]);
    // Full: a voter who voted is still told so; a new voter is refused the place.
    v.refuse(&[tx(v.ballot(1, 2, |_| {}))], "vote-double-vote");
    v.refuse(&three[2..], "vote-election-full");
    // The pool judges against the chain's count: refused at admission too.
    let pool = Mempool::new(v.p.hash, MempoolConfig::default());
    assert_eq!(reasons(&admit(&v, &pool, three[2..].to_vec())), ["vote-election-full"]);
    let prefix = ballots_prefix(&v.id);
    let state = v.chain.app_state();
    assert_eq!(state.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)).count(), 2);
}

/// Two ballots pooled for an election's last place: the pool admits both (it judges each against
/// the chain's count); the miner's template holds the first only, so its block connects, and
/// leaves the second out of every later template.
#[test]
fn a_template_holds_no_ballot_past_the_maximum_when_two_were_pooled_for_the_last_place() {
    use scalechain_mempool::MempoolConfig;
    use scalechain_replica::{solve, BlockVerdict, Replica};
    use scalechain_types::{Lock, TxKind};
    let mut v = Vote::counting(2, 100, 1);
    v.mine(&[Message::Election(v.election.clone()).into_tx()]);
    v.mine(&[]);
    let (first, second) = (tx(v.ballot(1, 0, |_| {})), tx(v.ballot(2, 1, |_| {})));
    // A block holding both is refused: the pool's raw selection would make one.
    v.refuse(&[first.clone(), second.clone()], "vote-election-full");
    let kind = v.p.hash;
    let reward = Lock { scheme: Scheme::Ed25519, pubkey_hash: kind.hash(b"miner") };
    let r = Replica::new(v.chain, MempoolConfig::default());
    let now = r.chain.read().tip_header().time + 1000;
    assert_eq!(reasons(&r.admit(vec![first.clone(), second.clone()], now)), ["ok", "ok"]);
    assert_eq!(r.mempool.template(u64::MAX, usize::MAX).txs.len(), 2);
    let mut b = r.block_template(reward, 1000, now);
    let ballots: Vec<Hash> = b.txs.iter().filter(|t| t.kind == VOTE_KIND).map(|t| t.txid(kind)).collect();
    assert_eq!(ballots, [first.txid(kind)]);
    assert!(solve(&mut b.header, kind, 1, &std::sync::atomic::AtomicBool::new(false)));
    assert_eq!(r.accept_block(b, NOW).verdict(), BlockVerdict::Connected);
    // The second stays pooled (until its window ends) and out of the templates.
    assert!(r.mempool.contains(&second.txid(kind)));
    let next = r.block_template(reward, 1000, now + 1000);
    assert!(next.txs.iter().all(|t| t.kind == TxKind::COINBASE), "{:?}", next.txs.len());
}

fn owned(txs: &[Arc<Tx>]) -> Vec<Tx> {
    txs.iter().map(|t| Tx::clone(t)).collect()
}

#[test]
fn an_election_pays_a_fee_and_one_elections_ballots_cannot_crowd_out_anothers() {
    use scalechain_mempool::{Mempool, MempoolConfig, MempoolError};
    let mut v = Vote::new(2, 100);
    let kind = v.p.hash;
    let ballot_size = tx(v.ballot(1, 0, |_| {})).encoded_len() as u64;
    // Room for three ballots of one election, more in all.
    let cfg = MempoolConfig { max_fee_less_group_bytes: 3 * ballot_size, ..MempoolConfig::default() };
    let pool = Mempool::new(kind, cfg);
    // A bare election pays nothing: the pool refuses it like any transaction below the minimum.
    let bare = Message::Election(v.election.clone()).into_tx();
    let refused = admit(&v, &pool, vec![bare]);
    assert!(matches!(refused[0], Err(MempoolError::LowFee { .. })), "{refused:?}");
    // One paying its fee is pooled, mined, and its change is a coin like any other.
    let paid = funded(&v, &v.election, 0, 1_000);
    assert_eq!(reasons(&admit(&v, &pool, vec![paid.clone()])), ["ok"]);
    let t = pool.template(u64::MAX, usize::MAX);
    assert_eq!(owned(&t.txs), vec![paid.clone()]);
    v.mine(&owned(&t.txs));
    pool.remove_block(&v.chain.block_at(1).unwrap().unwrap(), v.chain.apps(), v.chain.params());
    assert!(v.chain.app_state().keys().any(|k| k.ends_with(&v.id.0)), "the election is on chain");
    let change = OutPoint { txid: paid.txid(kind), index: 0 };
    assert!(
        scalechain_consensus::UtxoView::coin(v.chain.utxos(), &change).is_some(),
        "the election's change is spendable"
    );

    // A ballot spending a coin is not a ballot.
    let mut with_input = tx(v.ballot(9, 0, |_| {}));
    with_input.inputs = paid.inputs.clone();
    let r = admit(&v, &pool, vec![with_input]);
    assert_eq!(reasons(&r), ["vote-not-bare"]);

    // Ballots ride free, each election's within its own share of the fee-less budget.
    let ballots: Vec<Tx> = (1..=4).map(|i| tx(v.ballot(i, 0, |_| {}))).collect();
    let r = admit(&v, &pool, ballots.clone());
    assert_eq!(reasons(&r), ["ok", "ok", "ok", "fee-less-group-full"]);
    assert_eq!(
        r[3],
        Err(MempoolError::FeeLessGroupFull {
            size: ballot_size,
            group: v.id,
            held: 3 * ballot_size,
            max: 3 * ballot_size
        })
    );
    // A second election's ballots still get in.
    let mut other = v.election.clone();
    other.label = b"another election".to_vec();
    let other_paid = funded(&v, &other, 1, 1_000);
    assert_eq!(reasons(&admit(&v, &pool, vec![other_paid.clone()])), ["ok"]);
    v.mine(&[other_paid]);
    pool.remove_block(&v.chain.block_at(2).unwrap().unwrap(), v.chain.apps(), v.chain.params());
    v.id = other.id(kind);
    v.election = other;
    let r = admit(&v, &pool, vec![tx(v.ballot(5, 1, |_| {})), tx(v.ballot(6, 2, |_| {}))]);
    assert_eq!(reasons(&r), ["ok", "ok"]);
    pool.audit().unwrap();
}
