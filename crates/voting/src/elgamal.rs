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
//! Verification: a ballot's `6L + 2` equations are checked in one multiscalar multiplication,
//! weighted by scalars derived from a hash of the whole ballot (single check, deterministic) or
//! drawn from the validator's RNG (batch check, many ballots); a failure is resolved equation by
//! equation to name the failing proof. Challenges hash the points' wire encodings
//! ([`WireBallot`]) instead of compressing the points again.
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
use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, Rng, SeedableRng};
use sha2::{Digest, Sha512};

use scalechain_types::codec::{put_count, DecodeError, Reader};

use crate::VoteError;

/// Domain tag of every challenge.
const TAG: &[u8] = b"scalechain/vote/elgamal/v1";

/// The most candidates an election may have.
pub const MAX_CANDIDATES: usize = 64;

pub use crate::Statement;

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

fn challenge(st: &Statement<'_>, label: &[u8], points: &[&[u8; 32]], extra: &[u8]) -> Scalar {
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
        part(&p[..]);
    }
    let out: [u8; 64] = h.finalize().into();
    Scalar::from_bytes_mod_order_wide(&out)
}

fn compress(p: &RistrettoPoint) -> [u8; 32] {
    p.compress().to_bytes()
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

    /// The scalar's canonical encoding (32 bytes, little-endian), for the EA's key file.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// A key from [`SecretKey::to_bytes`]; `None` unless the scalar is canonical and non-zero.
    pub fn from_bytes(bytes: [u8; 32]) -> Option<SecretKey> {
        Option::<Scalar>::from(Scalar::from_canonical_bytes(bytes))
            .filter(|x| *x != Scalar::ZERO)
            .map(SecretKey)
    }
}

impl Ciphertext {
    /// `α ‖ β`, compressed (64 bytes).
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[..32].copy_from_slice(&compress(&self.alpha));
        out[32..].copy_from_slice(&compress(&self.beta));
        out
    }

    /// Parses [`Ciphertext::to_bytes`]; `None` if a point does not decompress.
    pub fn from_bytes(bytes: &[u8; 64]) -> Option<Ciphertext> {
        let p = |b: &[u8]| CompressedRistretto::from_slice(b).ok()?.decompress();
        Some(Ciphertext { alpha: p(&bytes[..32])?, beta: p(&bytes[32..])? })
    }
}

impl EqProof {
    /// `c ‖ s` (64 bytes).
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[..32].copy_from_slice(&self.c.to_bytes());
        out[32..].copy_from_slice(&self.s.to_bytes());
        out
    }

    /// Parses [`EqProof::to_bytes`]; `None` unless both scalars are canonical.
    pub fn from_bytes(bytes: &[u8; 64]) -> Option<EqProof> {
        let sc = |b: &[u8]| -> Option<Scalar> {
            let a: [u8; 32] = b.try_into().ok()?;
            Scalar::from_canonical_bytes(a).into()
        };
        Some(EqProof { c: sc(&bytes[..32])?, s: sc(&bytes[32..])? })
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

/// The compressed points of a bit proof's challenge after `K`: `α β a_0 b_0 a_1 b_1`.
fn bit_challenge(st: &Statement<'_>, k: &[u8; 32], j: usize, pts: &[[u8; 32]]) -> Scalar {
    let mut all: Vec<&[u8; 32]> = Vec::with_capacity(7);
    all.push(k);
    all.extend(pts.iter());
    challenge(st, b"bit", &all, &(j as u32).to_le_bytes())
}

fn sum_challenge(st: &Statement<'_>, k: &[u8; 32], a: &[u8; 32], b: &[u8; 32], t: &[[u8; 32]]) -> Scalar {
    let mut all: Vec<&[u8; 32]> = vec![k, a, b];
    all.extend(t.iter());
    challenge(st, b"sum", &all, &[])
}

/// Encrypts a vote for candidate `choice` of `candidates`, with its proofs.
pub fn cast<R: Rng + CryptoRng>(
    k: &PublicKey,
    st: &Statement<'_>,
    choice: usize,
    candidates: usize,
    rng: &mut R,
) -> Result<Ballot, VoteError> {
    cast_opened(k, st, choice, candidates, rng).map(|(ballot, _)| ballot)
}

/// What opens a ballot (Benaloh's challenge, "cast or audit"): the choice and each candidate's
/// randomness `r_j`, with which anyone checks that the ballot encrypts that choice
/// ([`check_opening`]). A ballot whose opening was shown must never be cast: it no longer hides
/// the vote.
#[derive(Clone, PartialEq, Eq)]
pub struct Opening {
    /// The chosen candidate.
    pub choice: usize,
    /// `r_j` of each candidate's ciphertext.
    pub r: Vec<Scalar>,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opening({} values)", self.r.len())
    }
}

/// [`cast`], also returning the ballot's [`Opening`] (for an audit). Draws from `rng`, in
/// order, per candidate `r`, the real branch's nonce, the simulated branch's challenge and
/// response, then the sum proof's nonce: 64 bytes each, reduced mod ℓ (the booth's
/// `crates/explorer/booth/src/elgamal.js` draws the same, so the same bytes give the same ballot).
pub fn cast_opened<R: Rng + CryptoRng>(
    k: &PublicKey,
    st: &Statement<'_>,
    choice: usize,
    candidates: usize,
    rng: &mut R,
) -> Result<(Ballot, Opening), VoteError> {
    if candidates == 0 || candidates > MAX_CANDIDATES {
        return Err(VoteError::CandidateCount { got: candidates, max: MAX_CANDIDATES });
    }
    if choice >= candidates {
        return Err(VoteError::ChoiceOutOfRange { choice, candidates });
    }
    let kb = compress(&k.0);
    let mut cts = Vec::with_capacity(candidates);
    let mut bits = Vec::with_capacity(candidates);
    let mut r_sum = Scalar::ZERO;
    let mut rs = Vec::with_capacity(candidates);
    for j in 0..candidates {
        let v = u64::from(j == choice);
        let r = random_scalar(rng);
        rs.push(r);
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
        let pts = [ct.alpha, ct.beta, a[0], b[0], a[1], b[1]].map(|p| compress(&p));
        let c = bit_challenge(st, &kb, j, &pts);
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
    let c = sum_challenge(st, &kb, &compress(&a), &compress(&b), &t.map(|p| compress(&p)));
    let ballot = Ballot { cts, bits, sum: SumProof { t, s: w + c * r_sum } };
    Ok((ballot, Opening { choice, r: rs }))
}

/// Does `opening` open `ballot` under `k`: for every candidate `j`, `α_j = r_j·G` and
/// `β_j = v_j·G + r_j·K` with `v_j = 1` for the choice and 0 otherwise? Public data only
/// (variable time). [`VoteError::NotOpened`] names the first candidate that does not open.
pub fn check_opening(k: &PublicKey, ballot: &Ballot, opening: &Opening) -> Result<(), VoteError> {
    let l = ballot.cts.len();
    if opening.choice >= l {
        return Err(VoteError::ChoiceOutOfRange { choice: opening.choice, candidates: l });
    }
    if opening.r.len() != l {
        return Err(VoteError::WrongLength { expected: l, got: opening.r.len() });
    }
    for (j, (ct, r)) in ballot.cts.iter().zip(&opening.r).enumerate() {
        let alpha = RistrettoPoint::mul_base(r);
        let mut beta = RistrettoPoint::vartime_multiscalar_mul([*r], [k.0]);
        if j == opening.choice {
            beta += G;
        }
        if alpha != ct.alpha || beta != ct.beta {
            return Err(VoteError::NotOpened { candidate: j, choice: opening.choice });
        }
    }
    Ok(())
}

fn sums(cts: &[Ciphertext]) -> (RistrettoPoint, RistrettoPoint) {
    let a = cts.iter().map(|c| c.alpha).sum::<RistrettoPoint>();
    let b = cts.iter().map(|c| c.beta).sum::<RistrettoPoint>() - G;
    (a, b)
}

/// The compressed points of a ballot in wire order: per candidate `α β a_0 b_0 a_1 b_1`, then
/// the sum proof's `t_1 t_2`.
fn compressed_points(ballot: &Ballot) -> Vec<[u8; 32]> {
    let mut out = Vec::with_capacity(6 * ballot.cts.len() + 2);
    for (ct, p) in ballot.cts.iter().zip(&ballot.bits) {
        out.extend([ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]].map(|p| compress(&p)));
    }
    out.extend(ballot.sum.t.map(|p| compress(&p)));
    out
}

/// The challenges of a ballot's proofs: per candidate `(c_0, c_1)`, and the sum proof's `c`
/// (over `(a, b)`, the ballot's [`sums`]). `pts` are the ballot's points compressed
/// ([`compressed_points`], or the wire bytes they were decoded from), `kb` the election key's.
fn challenges(
    kb: &[u8; 32],
    st: &Statement<'_>,
    ballot: &Ballot,
    pts: &[[u8; 32]],
    (a, b): &(RistrettoPoint, RistrettoPoint),
) -> (Vec<[Scalar; 2]>, Scalar) {
    let l = ballot.cts.len();
    let bits = ballot
        .bits
        .iter()
        .enumerate()
        .map(|(j, p)| {
            let c = bit_challenge(st, kb, j, &pts[6 * j..6 * j + 6]);
            [p.c0, c - p.c0]
        })
        .collect();
    (bits, sum_challenge(st, kb, &compress(a), &compress(b), &pts[6 * l..6 * l + 2]))
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

/// A ballot decoded from its wire bytes ([`WireBallot::decode`]) that keeps the compressed
/// encodings of its points, so that verification hashes those bytes instead of compressing
/// every point again (32 of the 34 compressions of a 4-candidate ballot). Its fields cannot be
/// changed, so the bytes always match the points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireBallot {
    ballot: Ballot,
    compressed: Vec<[u8; 32]>,
}

impl WireBallot {
    /// Decodes [`Ballot::encode`]'s output exactly (see [`Ballot::decode`]).
    pub fn decode(bytes: &[u8]) -> Result<WireBallot, DecodeError> {
        let mut r = Reader::new(bytes);
        let n = r.count("ballot.candidates", PER_CANDIDATE)?;
        if n == 0 || n > MAX_CANDIDATES {
            return Err(
                r.invalid("ballot.candidates", format!("{n} candidates (1 to {MAX_CANDIDATES} allowed)"))
            );
        }
        let mut cts = Vec::with_capacity(n);
        let mut bits = Vec::with_capacity(n);
        let mut compressed = Vec::with_capacity(6 * n + 2);
        let mut pt = |r: &mut Reader<'_>, field: &'static str| -> Result<RistrettoPoint, DecodeError> {
            let (p, b) = point(r, field)?;
            compressed.push(b);
            Ok(p)
        };
        for _ in 0..n {
            let alpha = pt(&mut r, "ballot.alpha")?;
            let beta = pt(&mut r, "ballot.beta")?;
            cts.push(Ciphertext { alpha, beta });
            let a0 = pt(&mut r, "ballot.bit.a0")?;
            let b0 = pt(&mut r, "ballot.bit.b0")?;
            let a1 = pt(&mut r, "ballot.bit.a1")?;
            let b1 = pt(&mut r, "ballot.bit.b1")?;
            let c0 = scalar(&mut r, "ballot.bit.c0")?;
            let s0 = scalar(&mut r, "ballot.bit.s0")?;
            let s1 = scalar(&mut r, "ballot.bit.s1")?;
            bits.push(BitProof { a: [a0, a1], b: [b0, b1], c0, s: [s0, s1] });
        }
        let t1 = pt(&mut r, "ballot.sum.t1")?;
        let t2 = pt(&mut r, "ballot.sum.t2")?;
        let sum = SumProof { t: [t1, t2], s: scalar(&mut r, "ballot.sum.s")? };
        r.finish()?;
        Ok(WireBallot { ballot: Ballot { cts, bits, sum }, compressed })
    }

    /// The ballot.
    pub fn ballot(&self) -> &Ballot {
        &self.ballot
    }

    /// The ballot, without its wire bytes.
    pub fn into_ballot(self) -> Ballot {
        self.ballot
    }
}

/// Checks a ballot's proofs for an election of `candidates` candidates: all equations in one
/// multiscalar multiplication with weights hashed from the ballot, then, if that fails, one by
/// one to name the failing proof.
pub fn verify_ballot(
    k: &PublicKey,
    st: &Statement<'_>,
    ballot: &Ballot,
    candidates: usize,
) -> Result<(), VoteError> {
    check_len(ballot, candidates)?;
    verify_parts(k, &compress(&k.0), st, ballot, &compressed_points(ballot))
}

/// [`verify_ballot`] for a ballot decoded from the wire, hashing its wire bytes.
pub fn verify_wire(
    k: &PublicKey,
    st: &Statement<'_>,
    ballot: &WireBallot,
    candidates: usize,
) -> Result<(), VoteError> {
    check_len(&ballot.ballot, candidates)?;
    verify_parts(k, &compress(&k.0), st, &ballot.ballot, &ballot.compressed)
}

/// Every verification equation of ballots, each weighted by a scalar, summed into one
/// multiscalar multiplication: 6 points per candidate and 2 for the sum proof, plus `G` and `K`
/// once.
struct Combination {
    scalars: Vec<Scalar>,
    points: Vec<RistrettoPoint>,
    g: Scalar,
    kk: Scalar,
}

impl Combination {
    fn with_capacity(points: usize) -> Combination {
        Combination {
            scalars: Vec::with_capacity(points + 2),
            points: Vec::with_capacity(points + 2),
            g: Scalar::ZERO,
            kk: Scalar::ZERO,
        }
    }

    /// Adds a ballot's equations (`cs`, `c`: its challenges) with weights from `rng`.
    fn push<R: Rng + CryptoRng>(&mut self, ballot: &Ballot, cs: &[[Scalar; 2]], c: Scalar, rng: &mut R) {
        // Sum proof: s·G − c·Σα − t1 (weight y0) ; s·K − c·Σβ + c·G − t2 (weight y1). Its α and
        // β terms are folded into each candidate's.
        let y = [random_scalar(rng), random_scalar(rng)];
        let s = ballot.sum.s;
        self.g += y[0] * s + y[1] * c;
        self.kk += y[1] * s;
        let (ya, yb) = (y[0] * c, y[1] * c);
        for ((ct, p), c) in ballot.cts.iter().zip(&ballot.bits).zip(cs) {
            let z: [Scalar; 4] =
                [random_scalar(rng), random_scalar(rng), random_scalar(rng), random_scalar(rng)];
            // z0: s0·G − c0·α − a0 ; z1: s0·K − c0·β − b0
            // z2: s1·G − c1·α − a1 ; z3: s1·K − c1·β + c1·G − b1
            self.g += z[0] * p.s[0] + z[2] * p.s[1] + z[3] * c[1];
            self.kk += z[1] * p.s[0] + z[3] * p.s[1];
            self.scalars.extend([
                -(z[0] * c[0] + z[2] * c[1] + ya),
                -(z[1] * c[0] + z[3] * c[1] + yb),
                -z[0],
                -z[1],
                -z[2],
                -z[3],
            ]);
            self.points.extend([ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]]);
        }
        self.scalars.extend([-y[0], -y[1]]);
        self.points.extend([ballot.sum.t[0], ballot.sum.t[1]]);
    }

    /// Does the weighted sum vanish?
    fn holds(mut self, k: &PublicKey) -> bool {
        self.scalars.extend([self.g, self.kk]);
        self.points.extend([G, k.0]);
        RistrettoPoint::vartime_multiscalar_mul(&self.scalars, &self.points) == RistrettoPoint::identity()
    }
}

/// The generator of a single check's weights: seeded by hashing everything its equations hold
/// (statement, key, every point's encoding, every scalar), so the weights are fixed only once
/// the ballot is.
fn single_weights(kb: &[u8; 32], st: &Statement<'_>, ballot: &Ballot, pts: &[[u8; 32]]) -> ChaCha20Rng {
    let mut h = Sha512::new();
    for part in [TAG, b"single-check", st.election, st.voter, kb] {
        h.update((part.len() as u32).to_le_bytes());
        h.update(part);
    }
    for p in pts {
        h.update(p);
    }
    for p in &ballot.bits {
        h.update(p.c0.as_bytes());
        h.update(p.s[0].as_bytes());
        h.update(p.s[1].as_bytes());
    }
    h.update(ballot.sum.s.as_bytes());
    let out: [u8; 64] = h.finalize().into();
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&out[..32]);
    ChaCha20Rng::from_seed(seed)
}

/// A ballot's proofs (lengths already checked). All its equations are first checked at once,
/// in one multiscalar multiplication weighted by [`single_weights`] (deterministic; a false
/// equation survives only if the hash hits a linear relation, probability 1/ℓ); if that fails,
/// equation by equation, to name the failing proof — so the errors are exactly those of the
/// equation-by-equation check.
fn verify_parts(
    k: &PublicKey,
    kb: &[u8; 32],
    st: &Statement<'_>,
    ballot: &Ballot,
    pts: &[[u8; 32]],
) -> Result<(), VoteError> {
    let (a, b) = sums(&ballot.cts);
    let (cs, c) = challenges(kb, st, ballot, pts, &(a, b));
    let mut comb = Combination::with_capacity(6 * ballot.cts.len() + 2);
    comb.push(ballot, &cs, c, &mut single_weights(kb, st, ballot, pts));
    if comb.holds(k) {
        return Ok(());
    }
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
    // Unreachable: the weighted sum of true equations vanishes.
    Err(VoteError::BadSumProof)
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
    let pts: Vec<Vec<[u8; 32]>> = items.iter().map(|(_, b)| compressed_points(b)).collect();
    let parts: Vec<_> = items.iter().zip(&pts).map(|((st, b), p)| (*st, *b, p.as_slice())).collect();
    verify_batch(k, &parts, candidates, rng)
}

/// [`verify_ballots`] for ballots decoded from the wire, hashing their wire bytes.
pub fn verify_wire_ballots<R: Rng + CryptoRng>(
    k: &PublicKey,
    items: &[(Statement<'_>, &WireBallot)],
    candidates: usize,
    rng: &mut R,
) -> Vec<Result<(), VoteError>> {
    let parts: Vec<_> = items.iter().map(|(st, b)| (*st, &b.ballot, b.compressed.as_slice())).collect();
    verify_batch(k, &parts, candidates, rng)
}

fn verify_batch<R: Rng + CryptoRng>(
    k: &PublicKey,
    items: &[(Statement<'_>, &Ballot, &[[u8; 32]])],
    candidates: usize,
    rng: &mut R,
) -> Vec<Result<(), VoteError>> {
    let kb = compress(&k.0);
    let lens: Vec<Result<(), VoteError>> = items.iter().map(|(_, b, _)| check_len(b, candidates)).collect();
    let mut comb = Combination::with_capacity(items.len() * (6 * candidates + 2));
    for ((st, ballot, pts), len) in items.iter().zip(&lens) {
        if len.is_ok() {
            let (cs, c) = challenges(&kb, st, ballot, pts, &sums(&ballot.cts));
            comb.push(ballot, &cs, c, rng);
        }
    }
    if comb.holds(k) {
        return lens;
    }
    items
        .iter()
        .zip(lens)
        .map(|((st, b, pts), len)| len.and_then(|()| verify_parts(k, &kb, st, b, pts)))
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
    let pts = [&k.0, &ct.alpha, &ct.beta, t[0], t[1]].map(compress);
    challenge(st, b"decrypt", &pts.iter().collect::<Vec<_>>(), &count.to_le_bytes())
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

fn point(r: &mut Reader<'_>, field: &'static str) -> Result<(RistrettoPoint, [u8; 32]), DecodeError> {
    let b: [u8; 32] = r.array(field)?;
    let p = CompressedRistretto(b)
        .decompress()
        .ok_or_else(|| r.invalid(field, "not a canonical ristretto255 point"))?;
    Ok((p, b))
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
        WireBallot::decode(bytes).map(WireBallot::into_ballot)
    }
}
