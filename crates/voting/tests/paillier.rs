//! The `paillier` scheme: Milagro known answers, proof completeness, soundness against every
//! invalid branch and every tampered component, binding to election, voter and key, each
//! invalid ballot kind with its own error, batch verdicts equal to single ones, tally equal to
//! the truth over random elections with verified decryption proofs, and the encodings.
#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use openssl::bn::{BigNum, BigNumContext};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_voting::paillier::{
    cast, decrypt_tally, keygen, prove, tally, verify_ballot, verify_ballots, verify_tally, Ballot,
    Ciphertext, ElectionKey, PublicKey, Randomness, SecretKey, TallyProof,
};
use scalechain_voting::{Statement, VoteError};

const ELECTION: [u8; 32] = [7; 32];

/// One 2048-bit key per test binary (generation takes a fraction of a second).
fn secret() -> &'static SecretKey {
    static KEY: OnceLock<SecretKey> = OnceLock::new();
    KEY.get_or_init(|| keygen(2048, &mut ChaCha20Rng::seed_from_u64(2048)).unwrap())
}

fn ekey(voters: u64) -> ElectionKey {
    ElectionKey { public: secret().public().clone(), voters }
}

fn voter(i: u64) -> [u8; 32] {
    let mut v = [0u8; 32];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

fn bn(x: u64) -> BigNum {
    BigNum::from_slice(&x.to_be_bytes()).unwrap()
}

// ---- Known answers (tests/data/milagro, see its README).

fn records(file: &str) -> Vec<std::collections::HashMap<String, BigNum>> {
    let path = format!("{}/tests/data/milagro/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    text.split("\n\n")
        .filter(|r| r.contains('='))
        .map(|r| {
            r.lines()
                .filter_map(|l| l.split_once(" = "))
                .map(|(k, v)| {
                    (k.trim().to_string(), BigNum::from_hex_str(v.trim().trim_end_matches(',')).unwrap())
                })
                .collect()
        })
        .collect()
}

#[test]
fn milagro_known_answers_for_encryption_decryption_and_addition() {
    let enc = records("encrypt.txt");
    assert_eq!(enc.len(), 11);
    for r in &enc {
        let pk = PublicKey::new(r["N"].to_owned().unwrap()).unwrap();
        let mut g = r["N"].to_owned().unwrap();
        g.add_word(1).unwrap();
        assert_eq!(r["G"], g, "g = n + 1");
        let c = pk.encrypt_with(&r["PLAINTEXT"], &Randomness::new(r["R"].to_owned().unwrap())).unwrap();
        assert_eq!(c.0, r["CIPHERTEXT"]);
    }
    let dec = records("decrypt.txt");
    assert_eq!(dec.len(), 10);
    for r in &dec {
        let sk = SecretKey::from_primes(r["P"].to_owned().unwrap(), r["Q"].to_owned().unwrap()).unwrap();
        let m = sk.decrypt(&Ciphertext(r["CIPHERTEXT"].to_owned().unwrap())).unwrap();
        assert_eq!(m, r["PLAINTEXT"]);
    }
    let add = records("add.txt");
    assert_eq!(add.len(), 11);
    for r in &add {
        let pk = PublicKey::new(r["N"].to_owned().unwrap()).unwrap();
        let c1 = Ciphertext(r["CIPHERTEXT1"].to_owned().unwrap());
        let c2 = Ciphertext(r["CIPHERTEXT2"].to_owned().unwrap());
        assert_eq!(pk.add(&c1, &c2).unwrap().0, r["CIPHERTEXT"]);
    }
}

// ---- Completeness.

#[test]
fn honest_ballots_verify_for_every_choice_and_size() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let v = voter(1);
    let st = Statement { election: &ELECTION, voter: &v };
    for (l, voters) in [(1usize, 1u64), (2, 3), (3, 100), (5, 1000)] {
        let key = ekey(voters);
        for choice in 0..l {
            let b = cast(&key, &st, choice, l, &mut rng).unwrap();
            assert_eq!(verify_ballot(&key, &st, &b, l), Ok(()), "L={l} choice={choice}");
            assert_eq!(secret().decrypt(&b.c).unwrap(), key.encoding(choice).unwrap());
        }
    }
    let key = ekey(10);
    assert!(matches!(cast(&key, &st, 4, 4, &mut rng), Err(VoteError::ChoiceOutOfRange { .. })));
    assert!(matches!(cast(&key, &st, 0, 0, &mut rng), Err(VoteError::CandidateCount { .. })));
    // 1,000 voters need 10 bits per candidate: 204 candidates would not fit in 2048 bits.
    assert!(cast(&ekey(1000), &st, 0, 64, &mut rng).is_ok());
    assert!(matches!(cast(&ekey(u64::MAX), &st, 0, 40, &mut rng), Err(VoteError::BadKey(_))));
}

// ---- Soundness.

/// A ballot whose ciphertext encrypts `m` (not necessarily a valid encoding), with the honest
/// prover run for the claimed branch `claim`.
fn dishonest(
    key: &ElectionKey,
    st: &Statement<'_>,
    m: &BigNum,
    claim: usize,
    l: usize,
    rng: &mut ChaCha20Rng,
) -> Ballot {
    let (c, r) = key.public.encrypt(m, rng).unwrap();
    let proof = prove(key, st, &c, &r, claim, l, rng).unwrap();
    Ballot { c, proof }
}

#[test]
fn every_invalid_value_is_refused_whichever_branch_the_prover_claims() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let v = voter(2);
    let st = Statement { election: &ELECTION, voter: &v };
    let l = 4;
    let key = ekey(20);
    let m = |i: usize| key.encoding(i).unwrap();
    let invalid: Vec<BigNum> = vec![
        bn(0),                  // no vote
        &m(0) + &m(1),          // two votes
        &m(2) + &m(2),          // two votes for one candidate (2·m_2, between slots)
        &m(3) + &m(3),          // beyond the last slot
        bn(3),                  // a count of 3 for candidate 0
        &m(1) - &bn(1),         // every bit of slot 0 set
        bn(rng.next_u64() | 1), // a random value
    ];
    for (vi, value) in invalid.iter().enumerate() {
        for claim in 0..l {
            let b = dishonest(&key, &st, value, claim, l, &mut rng);
            assert_eq!(
                verify_ballot(&key, &st, &b, l),
                Err(VoteError::BadMembershipProof),
                "value {vi} claim {claim}"
            );
        }
    }
    // A valid encoding proven as another candidate's.
    for real in 0..l {
        for claim in (0..l).filter(|&c| c != real) {
            let b = dishonest(&key, &st, &m(real), claim, l, &mut rng);
            assert_eq!(
                verify_ballot(&key, &st, &b, l),
                Err(VoteError::BadMembershipProof),
                "{real} as {claim}"
            );
        }
    }
}

#[test]
fn every_component_of_the_proof_matters() {
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut ctx = BigNumContext::new().unwrap();
    let v = voter(3);
    let st = Statement { election: &ELECTION, voter: &v };
    let key = ekey(50);
    let (n, n2) = (key.public.n(), key.public.n_squared());
    let b = cast(&key, &st, 1, 3, &mut rng).unwrap();
    for k in 0..3 {
        for f in 0..4 {
            let mut bad = b.clone();
            match f {
                // a_k times g (still a unit, no longer the commitment)
                0 => {
                    let mut a = BigNum::new().unwrap();
                    a.mod_mul(
                        &bad.proof.a[k],
                        &key.public
                            .n()
                            .to_owned()
                            .map(|mut x| {
                                x.add_word(1).unwrap();
                                x
                            })
                            .unwrap(),
                        n2,
                        &mut ctx,
                    )
                    .unwrap();
                    bad.proof.a[k] = a;
                }
                1 => bad.proof.e[k] = bad.proof.e[k].wrapping_add(1),
                2 => {
                    let mut z = BigNum::new().unwrap();
                    z.mod_add(&bad.proof.z[k], &bad.proof.z[k], n, &mut ctx).unwrap();
                    bad.proof.z[k] = z;
                }
                // challenges moved between branches (the sum is unchanged)
                _ => {
                    let j = (k + 1) % 3;
                    bad.proof.e[k] = bad.proof.e[k].wrapping_add(1);
                    bad.proof.e[j] = bad.proof.e[j].wrapping_sub(1);
                }
            }
            assert_eq!(verify_ballot(&key, &st, &bad, 3), Err(VoteError::BadMembershipProof), "k={k} f={f}");
        }
    }
    // Bound to the voter, the election, the key and the encoding.
    let other = voter(4);
    assert_eq!(
        verify_ballot(&key, &Statement { election: &ELECTION, voter: &other }, &b, 3),
        Err(VoteError::BadMembershipProof)
    );
    assert_eq!(
        verify_ballot(&key, &Statement { election: &[8; 32], voter: &v }, &b, 3),
        Err(VoteError::BadMembershipProof)
    );
    assert_eq!(
        verify_ballot(&ElectionKey { voters: 5000, ..key.clone() }, &st, &b, 3),
        Err(VoteError::BadMembershipProof)
    );
    let other_key = ElectionKey { public: keygen(2048, &mut rng).unwrap().public().clone(), voters: 50 };
    assert!(verify_ballot(&other_key, &st, &b, 3).is_err());
}

#[test]
fn each_invalid_ballot_kind_is_refused_with_its_own_error() {
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let v = voter(5);
    let st = Statement { election: &ELECTION, voter: &v };
    let key = ekey(50);
    let b = cast(&key, &st, 0, 3, &mut rng).unwrap();
    // c ∉ Z*_{N²}: zero, N (shares N's factors), N², a multiple of p.
    let (p, _) = secret().primes();
    let mut p3 = p.to_owned().unwrap();
    p3.mul_word(3).unwrap();
    for c in [bn(0), key.public.n().to_owned().unwrap(), key.public.n_squared().to_owned().unwrap(), p3] {
        let mut bad = b.clone();
        bad.c = Ciphertext(c);
        assert_eq!(verify_ballot(&key, &st, &bad, 3), Err(VoteError::CiphertextNotUnit));
    }
    // Another number of candidates.
    assert_eq!(verify_ballot(&key, &st, &b, 4), Err(VoteError::WrongLength { expected: 4, got: 3 }));
    let mut short = b.clone();
    short.proof.z.pop();
    assert_eq!(verify_ballot(&key, &st, &short, 3), Err(VoteError::WrongLength { expected: 3, got: 3 }));
    // A proof number out of range or not a unit.
    let mut zero = b.clone();
    zero.proof.z[0] = bn(0);
    assert_eq!(verify_ballot(&key, &st, &zero, 3), Err(VoteError::BadMembershipProof));
    let mut big = b.clone();
    big.proof.a[1] = key.public.n_squared().to_owned().unwrap();
    assert_eq!(verify_ballot(&key, &st, &big, 3), Err(VoteError::BadMembershipProof));
    let mut factor = b.clone();
    factor.proof.z[2] = p.to_owned().unwrap();
    assert_eq!(verify_ballot(&key, &st, &factor, 3), Err(VoteError::BadMembershipProof));
}

// ---- Batches.

#[test]
fn batch_verification_gives_exactly_the_single_verdicts() {
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut ctx = BigNumContext::new().unwrap();
    let key = ekey(100);
    let l = 3;
    let voters: Vec<[u8; 32]> = (0..14).map(voter).collect();
    let sts: Vec<Statement<'_>> =
        voters.iter().map(|v| Statement { election: &ELECTION, voter: v }).collect();
    let mut ballots: Vec<Ballot> =
        sts.iter().enumerate().map(|(i, st)| cast(&key, st, i % l, l, &mut rng).unwrap()).collect();
    let items = |bs: &[Ballot]| -> Vec<(Statement<'_>, Ballot)> {
        sts.iter().copied().zip(bs.iter().cloned()).collect()
    };
    let check = |bs: &[Ballot], rng: &mut ChaCha20Rng| {
        let owned = items(bs);
        let refs: Vec<(Statement<'_>, &Ballot)> = owned.iter().map(|(s, b)| (*s, b)).collect();
        let got = verify_ballots(&key, &refs, l, rng);
        let single: Vec<_> = refs.iter().map(|(s, b)| verify_ballot(&key, s, b, l)).collect();
        assert_eq!(got, single);
        got
    };
    assert!(check(&ballots, &mut rng).iter().all(Result::is_ok));
    // One bad response among many valid ballots: found by halving.
    let mut z = BigNum::new().unwrap();
    z.mod_add(&ballots[11].proof.z[0], &ballots[11].proof.z[0], key.public.n(), &mut ctx).unwrap();
    ballots[11].proof.z[0] = z;
    let got = check(&ballots, &mut rng);
    assert_eq!(got.iter().filter(|r| r.is_err()).count(), 1);
    assert_eq!(got[11], Err(VoteError::BadMembershipProof));
    // Several, of every kind.
    ballots[2] =
        dishonest(&key, &sts[2], &(&key.encoding(0).unwrap() + &key.encoding(1).unwrap()), 0, l, &mut rng);
    ballots[5].proof.e[1] = ballots[5].proof.e[1].wrapping_add(7);
    ballots[7].c = Ciphertext(key.public.n().to_owned().unwrap());
    ballots[9].proof.a.pop();
    let got = check(&ballots, &mut rng);
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.is_err(), [2, 5, 7, 9, 11].contains(&i), "ballot {i}: {r:?}");
    }
    // A ballot valid for another voter is invalid here, in a batch too.
    let swapped = vec![ballots[0].clone(); 4];
    let got = check(&swapped, &mut rng);
    assert_eq!(got.iter().map(Result::is_ok).collect::<Vec<_>>(), [true, false, false, false]);
}

// ---- Tally.

#[test]
fn tally_of_random_elections_decrypts_to_the_truth_with_verified_proofs() {
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let sk = secret();
    for (voters, l) in [(1u64, 1usize), (17, 3), (40, 4)] {
        let key = ekey(voters);
        let mut truth = vec![0u64; l];
        let mut ballots = Vec::new();
        for i in 0..voters {
            let v = voter(i);
            let st = Statement { election: &ELECTION, voter: &v };
            let choice = (rng.next_u64() % l as u64) as usize;
            truth[choice] += 1;
            ballots.push(cast(&key, &st, choice, l, &mut rng).unwrap());
        }
        let c = tally(&key, &ballots).unwrap();
        let (counts, proof) = decrypt_tally(sk, &key, &c, l, voters).unwrap();
        assert_eq!(counts, truth, "voters {voters}");
        assert_eq!(verify_tally(&key, &c, &counts, voters, &proof), Ok(()));
        // Other counts, another r, another tally: refused.
        let mut wrong = counts.clone();
        wrong[0] = wrong[0].wrapping_add(1);
        if l > 1 {
            wrong[1] = wrong[1].wrapping_sub(1);
        }
        assert!(verify_tally(&key, &c, &wrong, voters, &proof).is_err());
        let mut r = proof.r.to_owned().unwrap();
        r.add_word(1).unwrap();
        assert_eq!(
            verify_tally(&key, &c, &counts, voters, &TallyProof { r }),
            Err(VoteError::BadDecryptionProof)
        );
        let fewer = tally(&key, &ballots[1..]).unwrap();
        assert!(verify_tally(&key, &fewer, &counts, voters, &proof).is_err());
    }
    // More ballots than the encoding counts: the EA refuses to decrypt.
    let key = ekey(1);
    let st = Statement { election: &ELECTION, voter: &[0; 32] };
    let two: Vec<Ballot> = (0..2).map(|_| cast(&key, &st, 0, 2, &mut rng).unwrap()).collect();
    let c = tally(&key, &two).unwrap();
    assert_eq!(
        decrypt_tally(sk, &key, &c, 2, 2).unwrap_err(),
        VoteError::TooManyBallots { ballots: 2, max: 1 }
    );
}

// ---- Encodings.

#[test]
fn encoding_round_trips_and_refuses_non_canonical_input() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let v = voter(9);
    let st = Statement { election: &ELECTION, voter: &v };
    let key = ekey(1000);
    let k = key.public.modulus_bytes();
    let b = cast(&key, &st, 2, 4, &mut rng).unwrap();
    let bytes = b.encode(k).unwrap();
    assert_eq!(bytes.len(), 4 + 512 + 4 * (512 + 16 + 256));
    assert_eq!(Ballot::decode(&bytes, &key).unwrap(), b);
    // z_0 ≥ N (z_0 + N would verify the same: non-canonical).
    let z0 = 4 + 512 + 512 + 16;
    let mut bad = bytes.clone();
    bad[z0..z0 + k].copy_from_slice(&[0xff; 256]);
    assert!(Ballot::decode(&bad, &key).unwrap_err().to_string().contains("paillier.z"));
    let mut bad = bytes.clone();
    bad[516..516 + 512].copy_from_slice(&[0; 512]);
    assert!(Ballot::decode(&bad, &key).unwrap_err().to_string().contains("paillier.a"));
    // Trailing bytes, truncation, absurd counts.
    let mut long = bytes.clone();
    long.push(0);
    assert!(Ballot::decode(&long, &key).is_err());
    assert!(Ballot::decode(&bytes[..bytes.len() - 1], &key).is_err());
    assert!(Ballot::decode(&[0xff, 0xff, 0xff, 0xff], &key).is_err());
    assert!(Ballot::decode(&[0, 0, 0, 0], &key).is_err());
}

fn small_key() -> &'static ElectionKey {
    static KEY: OnceLock<ElectionKey> = OnceLock::new();
    KEY.get_or_init(|| ElectionKey {
        public: keygen(512, &mut ChaCha20Rng::seed_from_u64(512)).unwrap().public().clone(),
        voters: 30,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn ballots_round_trip_through_their_encoding(seed in any::<u64>(), l in 1usize..5, pick in any::<usize>()) {
        let key = small_key();
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let st = Statement { election: &ELECTION, voter: &[3; 32] };
        let b = cast(key, &st, pick % l, l, &mut rng).unwrap();
        let bytes = b.encode(key.public.modulus_bytes()).unwrap();
        prop_assert_eq!(bytes.len(), Ballot::encoded_len(l, 64));
        let back = Ballot::decode(&bytes, key).unwrap();
        prop_assert_eq!(back.encode(64).unwrap(), bytes);
        prop_assert_eq!(verify_ballot(key, &st, &back, l), Ok(()));
    }

    #[test]
    fn decoding_arbitrary_ballot_bytes_never_panics(body in proptest::collection::vec(any::<u8>(), 0..700), l in 0u8..4) {
        let key = small_key();
        let mut bytes = vec![l, 0, 0, 0];
        bytes.extend_from_slice(&body);
        if let Ok(b) = Ballot::decode(&bytes, key) {
            prop_assert_eq!(b.encode(64).unwrap(), bytes);
        }
        if let Ok(b) = Ballot::decode(&body, key) {
            prop_assert_eq!(b.encode(64).unwrap(), body);
        }
    }

    #[test]
    fn decoding_arbitrary_election_keys_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(k) = ElectionKey::decode(&bytes) {
            prop_assert_eq!(k.encode(), bytes);
        }
    }

    #[test]
    fn tally_plaintexts_encode_counts_exactly(counts in proptest::collection::vec(0u64..=31, 1..8)) {
        let key = small_key();
        let m = key.tally_plaintext(&counts).unwrap();
        prop_assert_eq!(key.tally_counts(&m, counts.len()).unwrap(), Some(counts));
    }
}
