//! The `elgamal` ballot scheme: exponential ElGamal on ristretto255 with one ciphertext per
//! candidate, a disjunctive Chaum–Pedersen proof that each encrypts 0 or 1, a Chaum–Pedersen
//! proof that they sum to 1, homomorphic tallying, decryption by baby-step giant-step, and a
//! proof of correct decryption.
//!
//! Notation: `G` the ristretto basepoint, `K = x·G` the election key (`x` held by the election
//! authority). A vote `v ∈ {0, 1}` for candidate `j` is `(α, β) = (r·G, v·G + r·K)`.
//!
//! Every Fiat–Shamir challenge is `SHA-512(tag ‖ parts) mod ℓ` over length-prefixed parts, and
//! binds the whole statement: the election id, the voter's key hash, the election key, the
//! candidate index, the ciphertext and the commitments. A proof made for one voter or election
//! does not verify for another.
//!
//! Constant time: the authority's secret `x` is only used in `x·α` (constant-time variable-base
//! multiplication) and in scalar arithmetic (`Scalar` operations are constant time). The voter's
//! `r` and the proofs' nonces likewise go through constant-time multiplications. Verification
//! handles public data only and uses variable-time multiscalar multiplication.

use std::collections::HashMap;

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT as G;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{Identity, VartimeMultiscalarMul};
use rand_core::{CryptoRng, Rng};
use sha2::{Digest, Sha512};

use scalechain_types::codec::{put_count, DecodeError, Reader};

use crate::VoteError;

/// Domain tag of every challenge.
const TAG: &[u8] = b"scalechain/vote/elgamal/v1";

/// The most candidates an election may have.
pub const MAX_CANDIDATES: usize = 64;

/// What a ballot's proofs are bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statement<'a> {
    /// The election's id.
    pub election: &'a [u8; 32],
    /// Hash of the voter's public key (the ballot's storage key).
    pub voter: &'a [u8; 32],
}

/// The authority's secret key.
#[derive(Clone)]
pub struct SecretKey(Scalar);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

/// The election key `K = x·G`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey(pub RistrettoPoint);

/// One encrypted 0/1 vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    /// `r·G`.
    pub alpha: RistrettoPoint,
    /// `v·G + r·K`.
    pub beta: RistrettoPoint,
}

/// Compact disjunctive Chaum–Pedersen proof that a ciphertext encrypts 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitProof {
    /// Challenges of the 0 and 1 branches (they sum to the Fiat–Shamir challenge).
    pub c: [Scalar; 2],
    /// Responses of the 0 and 1 branches.
    pub s: [Scalar; 2],
}

/// Compact Chaum–Pedersen proof (challenge, response).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqProof {
    /// The challenge.
    pub c: Scalar,
    /// The response.
    pub s: Scalar,
}

/// An encrypted ballot: one ciphertext and one 0/1 proof per candidate, and a proof that the
/// votes sum to one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ballot {
    /// One per candidate.
    pub cts: Vec<Ciphertext>,
    /// One per candidate.
    pub bits: Vec<BitProof>,
    /// `Σ v_j = 1`.
    pub sum: EqProof,
}

fn random_scalar<R: Rng + CryptoRng>(rng: &mut R) -> Scalar {
    let mut b = [0u8; 64];
    rng.fill_bytes(&mut b);
    Scalar::from_bytes_mod_order_wide(&b)
}

fn challenge(st: &Statement<'_>, label: &[u8], points: &[&RistrettoPoint], extra: &[u8]) -> Scalar {
    let mut h = Sha512::new();
    let mut part = |b: &[u8]| {
        h.update((b.len() as u32).to_le_bytes());
        h.update(b);
    };
    part(TAG);
    part(label);
    part(st.election);
    part(st.voter);
    part(extra);
    for p in points {
        part(p.compress().as_bytes());
    }
    let out: [u8; 64] = h.finalize().into();
    Scalar::from_bytes_mod_order_wide(&out)
}

/// A fresh authority key pair.
pub fn keygen<R: Rng + CryptoRng>(rng: &mut R) -> (SecretKey, PublicKey) {
    let x = random_scalar(rng);
    (SecretKey(x), PublicKey(RistrettoPoint::mul_base(&x)))
}

impl SecretKey {
    /// The public key.
    pub fn public(&self) -> PublicKey {
        PublicKey(RistrettoPoint::mul_base(&self.0))
    }
}

fn bit_commitments(
    k: &RistrettoPoint,
    ct: &Ciphertext,
    bit: u64,
    c: &Scalar,
    s: &Scalar,
) -> [RistrettoPoint; 2] {
    // a = s·G − c·α ; b = s·K − c·(β − bit·G)
    let shifted = if bit == 1 { ct.beta - G } else { ct.beta };
    let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &ct.alpha, s);
    let b = RistrettoPoint::vartime_multiscalar_mul([*s, -c], [*k, shifted]);
    [a, b]
}

fn bit_challenge(
    st: &Statement<'_>,
    k: &PublicKey,
    j: usize,
    ct: &Ciphertext,
    com: &[RistrettoPoint; 4],
) -> Scalar {
    challenge(
        st,
        b"bit",
        &[&k.0, &ct.alpha, &ct.beta, &com[0], &com[1], &com[2], &com[3]],
        &(j as u32).to_le_bytes(),
    )
}

fn sum_challenge(
    st: &Statement<'_>,
    k: &PublicKey,
    a: &RistrettoPoint,
    b: &RistrettoPoint,
    t: [&RistrettoPoint; 2],
) -> Scalar {
    challenge(st, b"sum", &[&k.0, a, b, t[0], t[1]], &[])
}

/// Encrypts a vote for candidate `choice` of `candidates`, with its proofs.
pub fn cast<R: Rng + CryptoRng>(
    k: &PublicKey,
    st: &Statement<'_>,
    choice: usize,
    candidates: usize,
    rng: &mut R,
) -> Result<Ballot, VoteError> {
    if candidates == 0 || candidates > MAX_CANDIDATES {
        return Err(VoteError::CandidateCount { got: candidates, max: MAX_CANDIDATES });
    }
    if choice >= candidates {
        return Err(VoteError::ChoiceOutOfRange { choice, candidates });
    }
    let mut cts = Vec::with_capacity(candidates);
    let mut bits = Vec::with_capacity(candidates);
    let mut r_sum = Scalar::ZERO;
    for j in 0..candidates {
        let v = u64::from(j == choice);
        let r = random_scalar(rng);
        r_sum += r;
        let ct = Ciphertext {
            alpha: RistrettoPoint::mul_base(&r),
            beta: RistrettoPoint::mul_base(&Scalar::from(v)) + r * k.0,
        };
        // Real branch `v`, simulated branch `1 − v`.
        let w = random_scalar(rng);
        let (c_sim, s_sim) = (random_scalar(rng), random_scalar(rng));
        let real = [RistrettoPoint::mul_base(&w), w * k.0];
        let sim = bit_commitments(&k.0, &ct, 1 - v, &c_sim, &s_sim);
        let com =
            if v == 0 { [real[0], real[1], sim[0], sim[1]] } else { [sim[0], sim[1], real[0], real[1]] };
        let c = bit_challenge(st, k, j, &ct, &com);
        let c_real = c - c_sim;
        let s_real = w + c_real * r;
        let proof = if v == 0 {
            BitProof { c: [c_real, c_sim], s: [s_real, s_sim] }
        } else {
            BitProof { c: [c_sim, c_real], s: [s_sim, s_real] }
        };
        cts.push(ct);
        bits.push(proof);
    }
    // Σα = R·G and Σβ − G = R·K: equality of discrete logs, witness R = Σ r_j.
    let (a, b) = sums(&cts);
    let w = random_scalar(rng);
    let t = [RistrettoPoint::mul_base(&w), w * k.0];
    let c = sum_challenge(st, k, &a, &b, [&t[0], &t[1]]);
    Ok(Ballot { cts, bits, sum: EqProof { c, s: w + c * r_sum } })
}

fn sums(cts: &[Ciphertext]) -> (RistrettoPoint, RistrettoPoint) {
    let a = cts.iter().map(|c| c.alpha).sum::<RistrettoPoint>();
    let b = cts.iter().map(|c| c.beta).sum::<RistrettoPoint>() - G;
    (a, b)
}

/// Checks a ballot's proofs for an election of `candidates` candidates.
pub fn verify_ballot(
    k: &PublicKey,
    st: &Statement<'_>,
    ballot: &Ballot,
    candidates: usize,
) -> Result<(), VoteError> {
    if ballot.cts.len() != candidates || ballot.bits.len() != candidates {
        return Err(VoteError::WrongLength {
            expected: candidates,
            got: ballot.cts.len().max(ballot.bits.len()),
        });
    }
    for (j, (ct, p)) in ballot.cts.iter().zip(&ballot.bits).enumerate() {
        let [a0, b0] = bit_commitments(&k.0, ct, 0, &p.c[0], &p.s[0]);
        let [a1, b1] = bit_commitments(&k.0, ct, 1, &p.c[1], &p.s[1]);
        if p.c[0] + p.c[1] != bit_challenge(st, k, j, ct, &[a0, b0, a1, b1]) {
            return Err(VoteError::BadBitProof { candidate: j });
        }
    }
    let (a, b) = sums(&ballot.cts);
    let (c, s) = (ballot.sum.c, ballot.sum.s);
    let t1 = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &a, &s);
    let t2 = RistrettoPoint::vartime_multiscalar_mul([s, -c], [k.0, b]);
    if c != sum_challenge(st, k, &a, &b, [&t1, &t2]) {
        return Err(VoteError::BadSumProof);
    }
    Ok(())
}

/// Adds ballots homomorphically: one ciphertext per candidate (the identity for none).
pub fn tally<'a>(ballots: impl IntoIterator<Item = &'a Ballot>, candidates: usize) -> Vec<Ciphertext> {
    let mut acc =
        vec![Ciphertext { alpha: RistrettoPoint::identity(), beta: RistrettoPoint::identity() }; candidates];
    for b in ballots {
        for (t, c) in acc.iter_mut().zip(&b.cts) {
            t.alpha += c.alpha;
            t.beta += c.beta;
        }
    }
    acc
}

/// Baby-step giant-step table for discrete logs up to a bound.
pub struct Dlog {
    baby: HashMap<[u8; 32], u64>,
    m: u64,
    giant: RistrettoPoint,
    max: u64,
}

impl Dlog {
    /// A table solving `t·G` for `t ≤ max` (about `√max` points).
    pub fn new(max: u64) -> Dlog {
        let m = ((max as f64 + 1.0).sqrt().ceil() as u64).max(1);
        let mut baby = HashMap::with_capacity(m as usize);
        let mut p = RistrettoPoint::identity();
        for j in 0..m {
            baby.insert(p.compress().to_bytes(), j);
            p += G;
        }
        Dlog { baby, m, giant: -(RistrettoPoint::mul_base(&Scalar::from(m))), max }
    }

    /// `t` with `t·G = point`, if `t ≤ max`.
    pub fn solve(&self, point: &RistrettoPoint) -> Option<u64> {
        let mut y = *point;
        for i in 0..=self.max / self.m {
            if let Some(j) = self.baby.get(&y.compress().to_bytes()) {
                let t = i * self.m + j;
                return (t <= self.max).then_some(t);
            }
            y += self.giant;
        }
        None
    }
}

/// Decrypts a tallied ciphertext to a count `≤ dlog`'s bound, with a proof that the authority
/// used its key: `log_G K = log_α (β − count·G)`.
pub fn decrypt<R: Rng + CryptoRng>(
    sk: &SecretKey,
    st: &Statement<'_>,
    ct: &Ciphertext,
    dlog: &Dlog,
    rng: &mut R,
) -> Result<(u64, EqProof), VoteError> {
    let m = ct.beta - sk.0 * ct.alpha;
    let count = dlog.solve(&m).ok_or(VoteError::CountOutOfRange)?;
    let k = sk.public();
    let w = random_scalar(rng);
    let t = [RistrettoPoint::mul_base(&w), w * ct.alpha];
    let c = decryption_challenge(st, &k, ct, count, [&t[0], &t[1]]);
    Ok((count, EqProof { c, s: w + c * sk.0 }))
}

fn decryption_challenge(
    st: &Statement<'_>,
    k: &PublicKey,
    ct: &Ciphertext,
    count: u64,
    t: [&RistrettoPoint; 2],
) -> Scalar {
    challenge(st, b"decrypt", &[&k.0, &ct.alpha, &ct.beta, t[0], t[1]], &count.to_le_bytes())
}

/// Checks that `count` is the decryption of `ct` under the election key.
pub fn verify_decryption(
    k: &PublicKey,
    st: &Statement<'_>,
    ct: &Ciphertext,
    count: u64,
    proof: &EqProof,
) -> Result<(), VoteError> {
    let (c, s) = (proof.c, proof.s);
    let shared = ct.beta - RistrettoPoint::mul_base(&Scalar::from(count));
    let t1 = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &k.0, &s);
    let t2 = RistrettoPoint::vartime_multiscalar_mul([s, -c], [ct.alpha, shared]);
    if c != decryption_challenge(st, k, ct, count, [&t1, &t2]) {
        return Err(VoteError::BadDecryptionProof);
    }
    Ok(())
}

// ---- Encoding: points compressed (32 bytes), scalars canonical (32 bytes, little-endian).

/// Encoded size of one candidate's part of a ballot (ciphertext + bit proof).
const PER_CANDIDATE: usize = 64 + 128;

fn point(r: &mut Reader<'_>, field: &'static str) -> Result<RistrettoPoint, DecodeError> {
    let b: [u8; 32] = r.array(field)?;
    CompressedRistretto(b).decompress().ok_or_else(|| r.invalid(field, "not a canonical ristretto255 point"))
}

fn scalar(r: &mut Reader<'_>, field: &'static str) -> Result<Scalar, DecodeError> {
    let b: [u8; 32] = r.array(field)?;
    Option::from(Scalar::from_canonical_bytes(b)).ok_or_else(|| r.invalid(field, "scalar not reduced mod ℓ"))
}

impl Ballot {
    /// The canonical encoding: count (u32 LE), then per candidate `α β c0 c1 s0 s1`, then the sum
    /// proof `c s`; 32 bytes each.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.cts.len() * PER_CANDIDATE + 64);
        put_count(&mut out, self.cts.len());
        for (ct, p) in self.cts.iter().zip(&self.bits) {
            out.extend_from_slice(ct.alpha.compress().as_bytes());
            out.extend_from_slice(ct.beta.compress().as_bytes());
            for s in [p.c[0], p.c[1], p.s[0], p.s[1]] {
                out.extend_from_slice(s.as_bytes());
            }
        }
        out.extend_from_slice(self.sum.c.as_bytes());
        out.extend_from_slice(self.sum.s.as_bytes());
        out
    }

    /// Decodes [`Ballot::encode`]'s output exactly; points must decompress and scalars be
    /// canonical, so every decodable ballot has one encoding.
    pub fn decode(bytes: &[u8]) -> Result<Ballot, DecodeError> {
        let mut r = Reader::new(bytes);
        let n = r.count("ballot.candidates", PER_CANDIDATE)?;
        if n == 0 || n > MAX_CANDIDATES {
            return Err(
                r.invalid("ballot.candidates", format!("{n} candidates (1 to {MAX_CANDIDATES} allowed)"))
            );
        }
        let mut cts = Vec::with_capacity(n);
        let mut bits = Vec::with_capacity(n);
        for _ in 0..n {
            cts.push(Ciphertext {
                alpha: point(&mut r, "ballot.alpha")?,
                beta: point(&mut r, "ballot.beta")?,
            });
            let c0 = scalar(&mut r, "ballot.bit.c0")?;
            let c1 = scalar(&mut r, "ballot.bit.c1")?;
            let s0 = scalar(&mut r, "ballot.bit.s0")?;
            let s1 = scalar(&mut r, "ballot.bit.s1")?;
            bits.push(BitProof { c: [c0, c1], s: [s0, s1] });
        }
        let sum = EqProof { c: scalar(&mut r, "ballot.sum.c")?, s: scalar(&mut r, "ballot.sum.s")? };
        r.finish()?;
        Ok(Ballot { cts, bits, sum })
    }
}
