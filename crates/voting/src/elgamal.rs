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

/// Disjunctive Chaum–Pedersen proof that a ciphertext encrypts 0 or 1, in commitment form
/// (so many proofs can be checked in one multiscalar multiplication): the commitments of both
/// branches, the 0-branch challenge (the 1-branch one is the Fiat–Shamir challenge minus it),
/// and both responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitProof {
    /// `a_0, a_1` (commitments to `G`).
    pub a: [RistrettoPoint; 2],
    /// `b_0, b_1` (commitments to `K`).
    pub b: [RistrettoPoint; 2],
    /// The 0-branch challenge.
    pub c0: Scalar,
    /// Responses of the 0 and 1 branches.
    pub s: [Scalar; 2],
}

/// Chaum–Pedersen proof in commitment form that `(A, B)` share their discrete log over
/// `(G, K)`: commitments `t = (w·G, w·K)` and response `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumProof {
    /// The commitments.
    pub t: [RistrettoPoint; 2],
    /// The response.
    pub s: Scalar,
}

/// Compact Chaum–Pedersen proof (challenge, response), used for decryption.
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
    pub sum: SumProof,
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
    a: &[RistrettoPoint; 2],
    b: &[RistrettoPoint; 2],
) -> Scalar {
    challenge(st, b"bit", &[&k.0, &ct.alpha, &ct.beta, &a[0], &b[0], &a[1], &b[1]], &(j as u32).to_le_bytes())
}

fn sum_challenge(
    st: &Statement<'_>,
    k: &PublicKey,
    a: &RistrettoPoint,
    b: &RistrettoPoint,
    t: &[RistrettoPoint; 2],
) -> Scalar {
    challenge(st, b"sum", &[&k.0, a, b, &t[0], &t[1]], &[])
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
        let (a, b) = if v == 0 {
            ([real[0], sim[0]], [real[1], sim[1]])
        } else {
            ([sim[0], real[0]], [sim[1], real[1]])
        };
        let c = bit_challenge(st, k, j, &ct, &a, &b);
        let c_real = c - c_sim;
        let s_real = w + c_real * r;
        let proof = if v == 0 {
            BitProof { a, b, c0: c_real, s: [s_real, s_sim] }
        } else {
            BitProof { a, b, c0: c_sim, s: [s_sim, s_real] }
        };
        cts.push(ct);
        bits.push(proof);
    }
    // Σα = R·G and Σβ − G = R·K: equality of discrete logs, witness R = Σ r_j.
    let (a, b) = sums(&cts);
    let w = random_scalar(rng);
    let t = [RistrettoPoint::mul_base(&w), w * k.0];
    let c = sum_challenge(st, k, &a, &b, &t);
    Ok(Ballot { cts, bits, sum: SumProof { t, s: w + c * r_sum } })
}

fn sums(cts: &[Ciphertext]) -> (RistrettoPoint, RistrettoPoint) {
    let a = cts.iter().map(|c| c.alpha).sum::<RistrettoPoint>();
    let b = cts.iter().map(|c| c.beta).sum::<RistrettoPoint>() - G;
    (a, b)
}

/// The challenges of a ballot's proofs: per candidate `(c_0, c_1)`, and the sum proof's `c`
/// (over `(a, b)`, the ballot's [`sums`]).
fn challenges(
    k: &PublicKey,
    st: &Statement<'_>,
    ballot: &Ballot,
    (a, b): &(RistrettoPoint, RistrettoPoint),
) -> (Vec<[Scalar; 2]>, Scalar) {
    let bits = ballot
        .cts
        .iter()
        .zip(&ballot.bits)
        .enumerate()
        .map(|(j, (ct, p))| {
            let c = bit_challenge(st, k, j, ct, &p.a, &p.b);
            [p.c0, c - p.c0]
        })
        .collect();
    (bits, sum_challenge(st, k, a, b, &ballot.sum.t))
}

fn check_len(ballot: &Ballot, candidates: usize) -> Result<(), VoteError> {
    if ballot.cts.len() != candidates || ballot.bits.len() != candidates {
        return Err(VoteError::WrongLength {
            expected: candidates,
            got: ballot.cts.len().max(ballot.bits.len()),
        });
    }
    Ok(())
}

/// Checks a ballot's proofs for an election of `candidates` candidates.
pub fn verify_ballot(
    k: &PublicKey,
    st: &Statement<'_>,
    ballot: &Ballot,
    candidates: usize,
) -> Result<(), VoteError> {
    check_len(ballot, candidates)?;
    let (a, b) = sums(&ballot.cts);
    let (cs, c) = challenges(k, st, ballot, &(a, b));
    for (j, ((ct, p), c)) in ballot.cts.iter().zip(&ballot.bits).zip(&cs).enumerate() {
        for (bit, (cb, sb)) in c.iter().zip(&p.s).enumerate() {
            let [a, b] = bit_commitments(&k.0, ct, bit as u64, cb, sb);
            if a != p.a[bit] || b != p.b[bit] {
                return Err(VoteError::BadBitProof { candidate: j });
            }
        }
    }
    let s = ballot.sum.s;
    let t1 = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &a, &s);
    let t2 = RistrettoPoint::vartime_multiscalar_mul([s, -c], [k.0, b]);
    if t1 != ballot.sum.t[0] || t2 != ballot.sum.t[1] {
        return Err(VoteError::BadSumProof);
    }
    Ok(())
}

/// Checks many ballots at once: every verification equation of every ballot, each weighted by
/// a fresh random scalar, summed into one multiscalar multiplication that must give the
/// identity (sound because the group has prime order: a false equation survives only with
/// probability 1/ℓ). If the batch fails, each ballot is checked alone, so the verdicts are
/// exactly [`verify_ballot`]'s. `rng` must be unpredictable to the ballots' authors.
pub fn verify_ballots<R: Rng + CryptoRng>(
    k: &PublicKey,
    items: &[(Statement<'_>, &Ballot)],
    candidates: usize,
    rng: &mut R,
) -> Vec<Result<(), VoteError>> {
    let lens: Vec<Result<(), VoteError>> = items.iter().map(|(_, b)| check_len(b, candidates)).collect();
    let mut scalars: Vec<Scalar> = Vec::new();
    let mut points: Vec<RistrettoPoint> = Vec::new();
    let (mut g, mut kk) = (Scalar::ZERO, Scalar::ZERO);
    for ((st, ballot), len) in items.iter().zip(&lens) {
        if len.is_err() {
            continue;
        }
        let (cs, c) = challenges(k, st, ballot, &sums(&ballot.cts));
        for ((ct, p), c) in ballot.cts.iter().zip(&ballot.bits).zip(&cs) {
            let z: [Scalar; 4] =
                [random_scalar(rng), random_scalar(rng), random_scalar(rng), random_scalar(rng)];
            // z0: s0·G − c0·α − a0 ; z1: s0·K − c0·β − b0
            // z2: s1·G − c1·α − a1 ; z3: s1·K − c1·β + c1·G − b1
            g += z[0] * p.s[0] + z[2] * p.s[1] + z[3] * c[1];
            kk += z[1] * p.s[0] + z[3] * p.s[1];
            scalars.extend([
                -(z[0] * c[0] + z[2] * c[1]),
                -(z[1] * c[0] + z[3] * c[1]),
                -z[0],
                -z[1],
                -z[2],
                -z[3],
            ]);
            points.extend([ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]]);
        }
        // s·G − c·Σα − t1 ; s·K − c·Σβ + c·G − t2
        let z = [random_scalar(rng), random_scalar(rng)];
        let s = ballot.sum.s;
        g += z[0] * s + z[1] * c;
        kk += z[1] * s;
        for ct in &ballot.cts {
            scalars.extend([-(z[0] * c), -(z[1] * c)]);
            points.extend([ct.alpha, ct.beta]);
        }
        scalars.extend([-z[0], -z[1]]);
        points.extend([ballot.sum.t[0], ballot.sum.t[1]]);
    }
    scalars.extend([g, kk]);
    points.extend([G, k.0]);
    if RistrettoPoint::vartime_multiscalar_mul(&scalars, &points) == RistrettoPoint::identity() {
        return lens;
    }
    items
        .iter()
        .zip(lens)
        .map(|((st, b), len)| len.and_then(|()| verify_ballot(k, st, b, candidates)))
        .collect()
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
const PER_CANDIDATE: usize = 64 + 128 + 96;

fn point(r: &mut Reader<'_>, field: &'static str) -> Result<RistrettoPoint, DecodeError> {
    let b: [u8; 32] = r.array(field)?;
    CompressedRistretto(b).decompress().ok_or_else(|| r.invalid(field, "not a canonical ristretto255 point"))
}

fn scalar(r: &mut Reader<'_>, field: &'static str) -> Result<Scalar, DecodeError> {
    let b: [u8; 32] = r.array(field)?;
    Option::from(Scalar::from_canonical_bytes(b)).ok_or_else(|| r.invalid(field, "scalar not reduced mod ℓ"))
}

impl Ballot {
    /// The canonical encoding: count (u32 LE), then per candidate `α β a0 b0 a1 b1 c0 s0 s1`,
    /// then the sum proof `t1 t2 s`; 32 bytes each (points compressed, scalars canonical).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.cts.len() * PER_CANDIDATE + 96);
        put_count(&mut out, self.cts.len());
        for (ct, p) in self.cts.iter().zip(&self.bits) {
            for pt in [ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]] {
                out.extend_from_slice(pt.compress().as_bytes());
            }
            for s in [p.c0, p.s[0], p.s[1]] {
                out.extend_from_slice(s.as_bytes());
            }
        }
        out.extend_from_slice(self.sum.t[0].compress().as_bytes());
        out.extend_from_slice(self.sum.t[1].compress().as_bytes());
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
            let a0 = point(&mut r, "ballot.bit.a0")?;
            let b0 = point(&mut r, "ballot.bit.b0")?;
            let a1 = point(&mut r, "ballot.bit.a1")?;
            let b1 = point(&mut r, "ballot.bit.b1")?;
            let c0 = scalar(&mut r, "ballot.bit.c0")?;
            let s0 = scalar(&mut r, "ballot.bit.s0")?;
            let s1 = scalar(&mut r, "ballot.bit.s1")?;
            bits.push(BitProof { a: [a0, a1], b: [b0, b1], c0, s: [s0, s1] });
        }
        let t1 = point(&mut r, "ballot.sum.t1")?;
        let t2 = point(&mut r, "ballot.sum.t2")?;
        let sum = SumProof { t: [t1, t2], s: scalar(&mut r, "ballot.sum.s")? };
        r.finish()?;
        Ok(Ballot { cts, bits, sum })
    }
}
