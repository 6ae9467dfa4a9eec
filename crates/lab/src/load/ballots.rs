//! Seed 003's ballots as a load: an election published by a funded transaction, its voters
//! registered by the authority (tokens signed off-chain, as `scalechain vote register` does),
//! and one ballot per voter — encrypted under the election's scheme with its proofs, signed by
//! the voter — every one made before the clock starts (in parallel).

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;

use scalechain_types::{Amount, Hash, HashKind, OutPoint, Scheme, SecretKey, Tx, TxIn, TxOut, Witness};
use scalechain_voting::app::{CastBallot, Election, Message, SchemeKey, VOTE_KIND};
use scalechain_voting::tally::EaKeys;
use scalechain_voting::{elgamal, paillier, BallotScheme, Statement};

use super::prepare::FEE;

/// An election and its ballots.
pub struct Ballots {
    /// The transaction publishing the election (a funding transaction: confirmed before the
    /// ballots are offered).
    pub election_tx: Tx,
    /// The election's id.
    pub id: Hash,
    /// One ballot per voter.
    pub ballots: Vec<Tx>,
}

/// Why ballots could not be made.
#[derive(Debug, thiserror::Error)]
#[error("ballots: {0}")]
pub struct BallotError(pub String);

/// A deterministic key for voter `i` of load `seed`.
fn voter_key(seed: u64, i: u64) -> SecretKey {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&i.to_le_bytes());
    s[16..24].copy_from_slice(b"bench-vt");
    SecretKey::from_seed(Scheme::Ed25519, s)
}

/// The random source of item `i` of load `seed` (ballots are made in parallel, each with its
/// own).
fn rng(seed: u64, i: u64) -> ChaCha20Rng {
    ChaCha20Rng::from_seed(
        HashKind::Sha256.hash_parts(&[b"bench-ballot", &seed.to_le_bytes(), &i.to_le_bytes()]).0,
    )
}

/// An election of `candidates` under `scheme` with `count` voters, published by a transaction
/// spending `coin` (locked to `payer`) back to it, and every voter's ballot (choices spread
/// over the candidates). `seed` derives the voters' keys and the ballots' randomness.
#[allow(clippy::too_many_arguments)]
pub fn ballots(
    kind: HashKind,
    chain_id: &Hash,
    scheme: BallotScheme,
    candidates: usize,
    count: usize,
    seed: u64,
    payer: &SecretKey,
    coin: (OutPoint, TxOut),
) -> Result<Ballots, BallotError> {
    let e = |x: &dyn std::fmt::Display| BallotError(x.to_string());
    let keys = EaKeys::generate(scheme, &mut rng(seed, u64::MAX)).map_err(|x| e(&x))?;
    let voters = u64::try_from(count.max(1)).map_err(|x| e(&x))?;
    let election: Election =
        keys.election(candidates, 0, u64::MAX, voters, &format!("bench {seed}")).map_err(|x| e(&x))?;
    let id = election.id(kind);
    let key = election.check().map_err(|x| e(&format!("{}: {}", x.rule, x.detail)))?;
    // The publishing transaction: its fee covers its size many times over, as a split's does.
    let data = Message::Election(election.clone()).encode();
    let fee = 100 * FEE + data.len() as u64 + 300;
    let change = coin
        .1
        .value
        .get()
        .checked_sub(fee)
        .ok_or_else(|| BallotError("the payer's coin cannot pay the election's fee".into()))?;
    let mut election_tx = Tx {
        version: 1,
        kind: VOTE_KIND,
        inputs: vec![TxIn { prev: coin.0, witness: Witness { pubkey: payer.public(), signature: [0; 64] } }],
        outputs: vec![TxOut { value: Amount::new(change).map_err(|x| e(&x))?, lock: coin.1.lock }],
        data,
    };
    election_tx.sign_inputs_with(kind, chain_id, payer);
    let l = candidates;
    let ballots = (0..count as u64)
        .into_par_iter()
        .map(|i| {
            let mut r = rng(seed, i);
            let voter = voter_key(seed, i);
            let mut vk = [0u8; 32];
            vk.copy_from_slice(voter.public().as_bytes());
            let vid = kind.hash(&vk);
            let st = Statement { election: &id.0, voter: &vid.0 };
            let choice = (i as usize) % l;
            let ballot = match &key {
                SchemeKey::Elgamal(k) => {
                    elgamal::cast(k, &st, choice, l, &mut r).map_err(|x| e(&x))?.encode()
                }
                SchemeKey::Paillier(k) => paillier::cast(k, &st, choice, l, &mut r)
                    .map_err(|x| e(&x))?
                    .encode(k.public.modulus_bytes())
                    .map_err(|x| e(&x))?,
            };
            let token = keys.register(kind, &id, &vk);
            let mut b =
                CastBallot { election: election.clone(), voter_key: vk, token, ballot, signature: [0; 64] };
            b.signature = voter.sign(&b.signing_message(kind));
            Ok(Message::Ballot(b).into_tx())
        })
        .collect::<Result<Vec<Tx>, BallotError>>()?;
    Ok(Ballots { election_tx, id, ballots })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use scalechain_consensus::params::{devnet_premine_key, SigMode};
    use scalechain_consensus::{genesis_block, Params};
    use scalechain_voting::app::check_ballot;

    #[test]
    fn every_ballot_passes_the_checks_a_node_makes_for_its_election() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let payer = devnet_premine_key(SigMode::Ed25519, 7);
        let coin = (OutPoint { txid: genesis_block(&p).txs[0].txid(p.hash), index: 7 }, p.premine[7]);
        for scheme in [BallotScheme::Elgamal, BallotScheme::Paillier] {
            let b = ballots(p.hash, &p.chain_id(), scheme, 3, 4, 9, &payer, coin).unwrap();
            assert_eq!(b.ballots.len(), 4);
            let Message::Election(e) = Message::decode(&b.election_tx.data).unwrap() else {
                panic!("an election")
            };
            assert_eq!(e.id(p.hash), b.id);
            assert_eq!(b.election_tx.inputs[0].prev, coin.0);
            let msg = scalechain_types::keys::sighash(p.hash, &p.chain_id(), &b.election_tx.txid(p.hash));
            let w = &b.election_tx.inputs[0].witness;
            assert!(scalechain_types::keys::verify(&w.pubkey, &msg, &w.signature).is_ok());
            let paid: u64 = b.election_tx.outputs.iter().map(|o| o.value.get()).sum();
            assert!(
                coin.1.value.get() - paid >= b.election_tx.encoded_len() as u64,
                "its fee covers its size"
            );
            let mut voters = std::collections::HashSet::new();
            for t in &b.ballots {
                let Message::Ballot(c) = Message::decode(&t.data).unwrap() else { panic!("a ballot") };
                check_ballot(p.hash, &c).unwrap_or_else(|x| panic!("{scheme:?}: {}: {}", x.rule, x.detail));
                assert!(voters.insert(c.voter_key), "one ballot per voter");
            }
        }
    }
}
