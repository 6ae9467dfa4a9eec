//! The `elgamal` scheme: completeness, soundness against each kind of invalid ballot, binding
//! to election and voter, tally equals the truth, decryption proofs, and the encoding.
#![allow(clippy::unwrap_used)]

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT as G;
use curve25519_dalek::scalar::Scalar;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_voting::elgamal::{
    cast, decrypt, keygen, tally, verify_ballot, verify_ballots, verify_decryption, Ballot, Dlog, Statement,
};
use scalechain_voting::VoteError;

const ELECTION: [u8; 32] = [7; 32];

fn voter(i: u64) -> [u8; 32] {
    let mut v = [0u8; 32];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

#[test]
fn honest_ballots_verify_for_every_choice_and_size() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (_, k) = keygen(&mut rng);
    let v = voter(1);
    let st = Statement { election: &ELECTION, voter: &v };
    for l in 1..=5 {
        for choice in 0..l {
            let b = cast(&k, &st, choice, l, &mut rng).unwrap();
            assert_eq!(verify_ballot(&k, &st, &b, l), Ok(()), "L={l} choice={choice}");
        }
    }
    assert!(matches!(cast(&k, &st, 4, 4, &mut rng), Err(VoteError::ChoiceOutOfRange { .. })));
    assert!(matches!(cast(&k, &st, 0, 0, &mut rng), Err(VoteError::CandidateCount { .. })));
}

#[test]
fn each_kind_of_invalid_ballot_is_refused_with_its_error() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let (_, k) = keygen(&mut rng);
    let v = voter(2);
    let st = Statement { election: &ELECTION, voter: &v };
    let b0 = cast(&k, &st, 0, 4, &mut rng).unwrap();
    let b1 = cast(&k, &st, 1, 4, &mut rng).unwrap();

    // A vote value outside {0, 1}: candidate 0 now encrypts 2.
    let mut two = b0.clone();
    two.cts[0].beta += G;
    assert_eq!(verify_ballot(&k, &st, &two, 4), Err(VoteError::BadBitProof { candidate: 0 }));

    // Two votes: each bit proof is valid, the sum is not one.
    let mut double = b0.clone();
    double.cts[1] = b1.cts[1];
    double.bits[1] = b1.bits[1];
    assert_eq!(verify_ballot(&k, &st, &double, 4), Err(VoteError::BadSumProof));

    // No vote at all.
    let mut none = b0.clone();
    none.cts[0] = b1.cts[0];
    none.bits[0] = b1.bits[0];
    assert_eq!(verify_ballot(&k, &st, &none, 4), Err(VoteError::BadSumProof));

    // Every scalar and commitment of every proof matters.
    for j in 0..4 {
        for f in 0..7 {
            let mut bad = b0.clone();
            let p = &mut bad.bits[j];
            match f {
                0 => p.c0 += Scalar::ONE,
                1 | 2 => p.s[f - 1] += Scalar::ONE,
                3 | 4 => p.a[f - 3] += G,
                _ => p.b[f - 5] += G,
            }
            assert_eq!(
                verify_ballot(&k, &st, &bad, 4),
                Err(VoteError::BadBitProof { candidate: j }),
                "j={j} f={f}"
            );
        }
    }
    for f in 0..3 {
        let mut bad = b0.clone();
        match f {
            0 => bad.sum.s += Scalar::ONE,
            _ => bad.sum.t[f - 1] += G,
        }
        assert_eq!(verify_ballot(&k, &st, &bad, 4), Err(VoteError::BadSumProof), "f={f}");
    }

    // A ballot for another number of candidates.
    assert_eq!(verify_ballot(&k, &st, &b0, 3), Err(VoteError::WrongLength { expected: 3, got: 4 }));

    // Replayed under another voter's key, or in another election, or under another key.
    let other = voter(3);
    let replay = Statement { election: &ELECTION, voter: &other };
    assert_eq!(verify_ballot(&k, &replay, &b0, 4), Err(VoteError::BadBitProof { candidate: 0 }));
    let elsewhere = Statement { election: &[8; 32], voter: &v };
    assert!(verify_ballot(&k, &elsewhere, &b0, 4).is_err());
    let (_, k2) = keygen(&mut rng);
    assert!(verify_ballot(&k2, &st, &b0, 4).is_err());
}

fn items<'a>(sts: &[Statement<'a>], bs: &'a [Ballot]) -> Vec<(Statement<'a>, &'a Ballot)> {
    sts.iter().copied().zip(bs.iter()).collect()
}

#[test]
fn batch_verification_gives_exactly_the_single_verdicts() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let (_, k) = keygen(&mut rng);
    let voters: Vec<[u8; 32]> = (0..12).map(voter).collect();
    let sts: Vec<Statement<'_>> =
        voters.iter().map(|v| Statement { election: &ELECTION, voter: v }).collect();
    let mut ballots: Vec<Ballot> =
        sts.iter().enumerate().map(|(i, st)| cast(&k, st, i % 3, 3, &mut rng).unwrap()).collect();
    let all_ok = verify_ballots(&k, &items(&sts, &ballots), 3, &mut rng);
    assert!(all_ok.iter().all(Result::is_ok));
    // Break a few in different ways: every verdict must equal the single check's.
    ballots[2].cts[1].beta += G;
    ballots[5].sum.s += Scalar::ONE;
    ballots[7].bits[0].a[1] += G;
    ballots[9].cts.pop();
    ballots[9].bits.pop();
    let got = verify_ballots(&k, &items(&sts, &ballots), 3, &mut rng);
    for (i, (st, b)) in items(&sts, &ballots).iter().enumerate() {
        assert_eq!(got[i], verify_ballot(&k, st, b, 3), "ballot {i}");
        assert_eq!(got[i].is_err(), [2, 5, 7, 9].contains(&i), "ballot {i}");
    }
    // A ballot valid for another voter is invalid here, in a batch too.
    let swapped = vec![ballots[0].clone(), ballots[0].clone()];
    let got = verify_ballots(&k, &items(&sts, &swapped), 3, &mut rng);
    assert!(got[0].is_ok() && got[1].is_err());
}

#[test]
fn tally_of_random_elections_decrypts_to_the_truth_with_verified_proofs() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for (voters, l) in [(1u64, 1usize), (25, 3), (60, 4)] {
        let (sk, k) = keygen(&mut rng);
        let mut truth = vec![0u64; l];
        let mut ballots = Vec::new();
        for i in 0..voters {
            let v = voter(i);
            let st = Statement { election: &ELECTION, voter: &v };
            let choice = (rng.next_u64() % l as u64) as usize;
            truth[choice] += 1;
            let b = cast(&k, &st, choice, l, &mut rng).unwrap();
            verify_ballot(&k, &st, &b, l).unwrap();
            ballots.push(b);
        }
        let sums = tally(&ballots, l);
        let dlog = Dlog::new(voters);
        let tally_st = Statement { election: &ELECTION, voter: &[0; 32] };
        for (j, ct) in sums.iter().enumerate() {
            let (count, proof) = decrypt(&sk, &tally_st, ct, &dlog, &mut rng).unwrap();
            assert_eq!(count, truth[j], "voters {voters} candidate {j}");
            assert_eq!(verify_decryption(&k, &tally_st, ct, count, &proof), Ok(()));
            assert_eq!(
                verify_decryption(&k, &tally_st, ct, count + 1, &proof),
                Err(VoteError::BadDecryptionProof)
            );
            let mut forged = proof;
            forged.s += Scalar::ONE;
            assert_eq!(
                verify_decryption(&k, &tally_st, ct, count, &forged),
                Err(VoteError::BadDecryptionProof)
            );
        }
    }
}

#[test]
fn discrete_logs_within_the_bound_and_none_beyond() {
    let dlog = Dlog::new(1000);
    for t in [0u64, 1, 31, 32, 33, 999, 1000] {
        assert_eq!(dlog.solve(&(G * Scalar::from(t))), Some(t));
    }
    assert_eq!(dlog.solve(&(G * Scalar::from(1001u64))), None);
    assert_eq!(dlog.solve(&(G * Scalar::from(5_000u64))), None);
}

#[test]
fn encoding_round_trips_and_refuses_non_canonical_input() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let (_, k) = keygen(&mut rng);
    let v = voter(9);
    let st = Statement { election: &ELECTION, voter: &v };
    let b = cast(&k, &st, 2, 4, &mut rng).unwrap();
    let bytes = b.encode();
    assert_eq!(bytes.len(), 4 + 4 * 288 + 96);
    let back = Ballot::decode(&bytes).unwrap();
    assert_eq!(back, b);
    assert_eq!(back.encode(), bytes);
    // A non-canonical scalar (c0 of candidate 0, after its six points, set to all 0xff > ℓ).
    let mut bad = bytes.clone();
    bad[4 + 192..4 + 224].copy_from_slice(&[0xff; 32]);
    assert!(Ballot::decode(&bad).unwrap_err().to_string().contains("ballot.bit.c0"));
    // A point that does not decompress.
    let mut bad = bytes.clone();
    bad[4..36].copy_from_slice(&[0xff; 32]);
    assert!(Ballot::decode(&bad).unwrap_err().to_string().contains("ballot.alpha"));
    // Trailing bytes, truncation, an absurd count.
    let mut long = bytes.clone();
    long.push(0);
    assert!(Ballot::decode(&long).is_err());
    assert!(Ballot::decode(&bytes[..bytes.len() - 1]).is_err());
    assert!(Ballot::decode(&[0xff, 0xff, 0xff, 0xff]).is_err());
    assert!(Ballot::decode(&[0, 0, 0, 0]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
        if let Ok(b) = Ballot::decode(&bytes) {
            prop_assert_eq!(b.encode(), bytes);
        }
    }
}
