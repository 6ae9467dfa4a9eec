//! The 1-out-of-L membership proof of Baudron, Fouque, Pointcheval, Poupard and Stern (PODC
//! 2001, "proof that an encrypted message lies in a given set of messages"): the
//! Cramer–Damgård–Schoenmakers OR-composition of `L` proofs of `N`-th residuosity, made
//! non-interactive by strong Fiat–Shamir, in commitment form so that many proofs can be checked
//! at once.
//!
//! Statement: `c ∈ Z*_{N²}` and, for some `k`, `u_k = c·g^(−m_k) mod N²` is an `N`-th residue
//! (i.e. `c` encrypts `m_k`). Notation: `t =` [`CHALLENGE_BITS`]; arithmetic on challenges is mod
//! `2^t`.
//!
//! **Prover** (knows the choice `i` and `r` with `c = g^(m_i)·r^N`):
//! 1. for `k ≠ i`: `e_k ←$ [0, 2^t)`, `z_k ←$ Z*_N`, `a_k = z_k^N·u_k^(−e_k) mod N²`
//!    (`u_k⁻¹ = c⁻¹·g^(m_k)`: one inversion serves every branch);
//! 2. `ω ←$ Z*_N`, `a_i = ω^N mod N²`;
//! 3. `e = H(election, voter, N, L, m_1..m_L, c, a_1..a_L) mod 2^t` (SHA-256 over length-prefixed
//!    parts, numbers big-endian at fixed width: `N` and the `m_k` at `|N|` bytes, `c` and the
//!    `a_k` at `2|N|`; the first 16 bytes of the digest, big-endian);
//! 4. `e_i = e − Σ_{k≠i} e_k`, `z_i = ω·r^(e_i) mod N`.
//!
//! The proof is `(a_k, e_k, z_k)` for every `k`.
//!
//! **Verifier**: `0 < a_k < N²`, `0 < z_k < N`, all `a_k` and `z_k` units (one `gcd` of their
//! product), `Σ e_k ≡ H(…) (mod 2^t)`, and for every `k`:
//! `z_k^N ≡ ±a_k·u_k^(e_k) (mod N²)`. The sign: `(N − z)^N ≡ −z^N`, so a proof with `z_k`
//! replaced by `N − z_k` is the same proof; accepting both signs makes single verification accept
//! exactly what batch verification accepts (below), since `−1` is the only element of small order
//! anyone can write down without the factors of `N`.
//!
//! **Batch verifier** ([`verify_ballots`]): with fresh random weights `d_jk` of
//! [`BATCH_WEIGHT_BITS`] bits, one equation for the whole batch:
//! `(Π z_jk^(d_jk) mod N)^N ≡ ±Π a_jk^(d_jk) · Π_j c_j^(Σ_k e_jk·d_jk) · g^(−Σ m_k·e_jk·d_jk) (mod N²)`
//! (the `N`-th power is paid once per batch; `g^(−x) = 1 − x·N`). Every valid ballot makes it
//! hold exactly, so a failing batch always holds an invalid ballot; it is then split in halves
//! down to single checks, which name the culprits. A batch holding an invalid ballot passes only
//! if the weights hit a relation of the error terms: probability about `2^−ℓ` when every error
//! term has large order, but about `1/r` for an error of small order `r` other than `±1` — and
//! whoever knows `N`'s factors (the election authority) can build one (order 3 when 3 divides
//! `p − 1`). No verdict is therefore taken from the batch equation: consensus, admission and
//! tally verification check each ballot with [`verify_ballot`]; [`verify_ballots`] stays for
//! the study, which measures what batching would save. See `docs/VOTING.md`.

use openssl::bn::{BigNum, BigNumContext, BigNumRef};
use rand_core::{CryptoRng, Rng};
use sha2::{Digest, Sha256};

use scalechain_types::codec::{put_count, DecodeError, Reader};

use super::{
    bn_u128, dup, fixed, is_unit_public, random_unit, secret, Ciphertext, ElectionKey, Randomness,
    MAX_CANDIDATES,
};
use crate::{Statement, VoteError};

/// Challenge length `t` in bits (`2^t` is far below the primes of `N`).
pub const CHALLENGE_BITS: u32 = 128;

/// Bits of the random weights of batch verification (`ℓ`).
pub const BATCH_WEIGHT_BITS: u32 = 128;

/// Domain tag of every challenge.
const TAG: &[u8] = b"scalechain/vote/paillier/v1";

/// Batches at most this large are resolved by single checks when they fail.
const SINGLES_BELOW: usize = 3;

/// The proof: commitments, challenges and responses, one of each per candidate.
#[derive(Debug, PartialEq, Eq)]
pub struct MembershipProof {
    /// Commitments `a_k ∈ Z*_{N²}`.
    pub a: Vec<BigNum>,
    /// Branch challenges `e_k ∈ [0, 2^t)`.
    pub e: Vec<u128>,
    /// Responses `z_k ∈ Z*_N`.
    pub z: Vec<BigNum>,
}

impl Clone for MembershipProof {
    fn clone(&self) -> Self {
        MembershipProof {
            a: self.a.iter().map(|x| dup(x)).collect(),
            e: self.e.clone(),
            z: self.z.iter().map(|x| dup(x)).collect(),
        }
    }
}

/// An encrypted ballot: the ciphertext of the chosen candidate's encoding and the proof that it
/// encrypts one of the candidates' encodings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ballot {
    /// `c = g^(m_i)·r^N mod N²`.
    pub c: Ciphertext,
    /// The membership proof.
    pub proof: MembershipProof,
}

/// Everything of an election key and candidate count that proofs use.
struct Setup<'k> {
    key: &'k ElectionKey,
    l: usize,
    /// `m_k` at `|N|` bytes.
    m_bytes: Vec<Vec<u8>>,
    /// `g^(m_k) mod N²`.
    g_pos: Vec<BigNum>,
    /// `g^(−m_k) mod N²`.
    g_neg: Vec<BigNum>,
    n_bytes: Vec<u8>,
    k: usize,
}

fn to_i32(x: usize) -> Result<i32, VoteError> {
    i32::try_from(x).map_err(|_| VoteError::Arithmetic("size".into()))
}

impl<'k> Setup<'k> {
    fn new(key: &'k ElectionKey, l: usize) -> Result<Setup<'k>, VoteError> {
        key.check_fits(l)?;
        let mut ctx = BigNumContext::new()?;
        let pk = &key.public;
        let k = pk.modulus_bytes();
        let mut m_bytes = Vec::with_capacity(l);
        let mut g_pos = Vec::with_capacity(l);
        let mut g_neg = Vec::with_capacity(l);
        for i in 0..l {
            let m = key.encoding(i)?;
            m_bytes.push(fixed(&m, k)?);
            g_pos.push(pk.g_pow(&m, &mut ctx)?);
            g_neg.push(pk.g_pow_neg(&m, &mut ctx)?);
        }
        Ok(Setup { key, l, m_bytes, g_pos, g_neg, n_bytes: pk.to_bytes(), k })
    }

    fn n(&self) -> &BigNumRef {
        self.key.public.n()
    }

    fn n2(&self) -> &BigNumRef {
        self.key.public.n_squared()
    }

    fn challenge(&self, st: &Statement<'_>, c: &BigNumRef, a: &[BigNum]) -> Result<u128, VoteError> {
        let mut h = Sha256::new();
        let mut part = |b: &[u8]| {
            h.update((b.len() as u32).to_le_bytes());
            h.update(b);
        };
        part(TAG);
        part(b"member");
        part(st.election);
        part(st.voter);
        part(&self.n_bytes);
        part(&(self.l as u32).to_le_bytes());
        for m in &self.m_bytes {
            part(m);
        }
        part(&fixed(c, 2 * self.k)?);
        for a in a {
            part(&fixed(a, 2 * self.k)?);
        }
        let out: [u8; 32] = h.finalize().into();
        let mut e = [0u8; 16];
        e.copy_from_slice(&out[..16]);
        Ok(u128::from_be_bytes(e))
    }

    /// Every check but the `L` exponentiation equations: lengths, `c ∈ Z*_{N²}`, ranges and
    /// units of the proof's numbers, and the Fiat–Shamir sum.
    fn cheap(&self, st: &Statement<'_>, b: &Ballot) -> Result<(), VoteError> {
        self.shape(b)?;
        self.key.public.check_ciphertext(&b.c.0)?;
        self.ranges(b)?;
        let mut ctx = BigNumContext::new()?;
        if !is_unit_public(&*self.proof_product(b, &mut ctx)?, self.n(), &mut ctx)? {
            return Err(VoteError::BadMembershipProof);
        }
        self.fiat_shamir(st, b)
    }

    /// One entry of each kind per candidate.
    fn shape(&self, b: &Ballot) -> Result<(), VoteError> {
        let p = &b.proof;
        if p.a.len() != self.l || p.e.len() != self.l || p.z.len() != self.l {
            return Err(VoteError::WrongLength {
                expected: self.l,
                got: p.a.len().max(p.e.len()).max(p.z.len()),
            });
        }
        Ok(())
    }

    /// `0 < a_k < N²`, `0 < z_k < N`.
    fn ranges(&self, b: &Ballot) -> Result<(), VoteError> {
        let below = |x: &BigNumRef, m: &BigNumRef| {
            !x.is_negative() && x.num_bits() > 0 && x.ucmp(m) == std::cmp::Ordering::Less
        };
        if b.proof.a.iter().all(|a| below(a, self.n2())) && b.proof.z.iter().all(|z| below(z, self.n())) {
            Ok(())
        } else {
            Err(VoteError::BadMembershipProof)
        }
    }

    /// `Π a_k · Π z_k mod N`: a unit iff every `a_k` and `z_k` is.
    fn proof_product(&self, b: &Ballot, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
        let mut prod = BigNum::new()?;
        prod.set_bit(0)?;
        let mut t = BigNum::new()?;
        for x in b.proof.a.iter().chain(&b.proof.z) {
            t.mod_mul(&prod, x, self.n(), ctx)?;
            std::mem::swap(&mut prod, &mut t);
        }
        Ok(prod)
    }

    /// `Σ e_k ≡ H(…) (mod 2^t)`.
    fn fiat_shamir(&self, st: &Statement<'_>, b: &Ballot) -> Result<(), VoteError> {
        let sum = b.proof.e.iter().fold(0u128, |s, e| s.wrapping_add(*e));
        if sum != self.challenge(st, &b.c.0, &b.proof.a)? {
            return Err(VoteError::BadMembershipProof);
        }
        Ok(())
    }

    /// [`Setup::cheap`] for many ballots, with one inversion for all their unit checks (the
    /// product of units is a unit): the shape, range and Fiat–Shamir checks of each, then
    /// `c·Π a_k·Π z_k mod N` multiplied over the batch and inverted once. Any ballot failing
    /// anything gets [`Setup::cheap`]'s own verdict, so the verdicts are exactly its.
    fn cheap_all(&self, items: &[(Statement<'_>, &Ballot)]) -> Vec<Result<(), VoteError>> {
        let mut verdicts = vec![Ok(()); items.len()];
        let mut passed = Vec::with_capacity(items.len());
        let mut batch_units = || -> Result<bool, VoteError> {
            let mut ctx = BigNumContext::new()?;
            let mut all = BigNum::new()?;
            all.set_bit(0)?;
            let (mut t, mut u) = (BigNum::new()?, BigNum::new()?);
            for (i, (st, b)) in items.iter().enumerate() {
                let c = &b.c.0;
                let quick =
                    self.shape(b).and_then(|()| self.ranges(b)).and_then(|()| self.fiat_shamir(st, b));
                if quick.is_err()
                    || c.is_negative()
                    || c.num_bits() == 0
                    || c.ucmp(self.n2()) != std::cmp::Ordering::Less
                {
                    verdicts[i] = self.cheap(st, b);
                    continue;
                }
                let p = self.proof_product(b, &mut ctx)?;
                t.mod_mul(&p, c, self.n(), &mut ctx)?;
                u.mod_mul(&all, &t, self.n(), &mut ctx)?;
                std::mem::swap(&mut all, &mut u);
                passed.push(i);
            }
            is_unit_public(&all, self.n(), &mut ctx)
        };
        if !batch_units().unwrap_or(false) {
            for &i in &passed {
                let (st, b) = &items[i];
                verdicts[i] = self.cheap(st, b);
            }
        }
        verdicts
    }

    /// `x ≡ ±y (mod N²)`, both reduced.
    fn plus_minus(&self, x: &BigNumRef, y: &BigNumRef) -> Result<bool, VoteError> {
        if x == y {
            return Ok(true);
        }
        let mut neg = BigNum::new()?;
        neg.checked_sub(self.n2(), y)?;
        Ok(*x == *neg)
    }

    /// The `L` equations `z_k^N ≡ ±a_k·u_k^(e_k) (mod N²)` of a ballot that passed
    /// [`Setup::cheap`].
    fn equations(&self, b: &Ballot) -> Result<(), VoteError> {
        let mut ctx = BigNumContext::new()?;
        let p = &b.proof;
        for k in 0..self.l {
            let mut lhs = BigNum::new()?;
            lhs.mod_exp(&p.z[k], self.n(), self.n2(), &mut ctx)?;
            let mut u = BigNum::new()?;
            u.mod_mul(&b.c.0, &self.g_neg[k], self.n2(), &mut ctx)?;
            let mut ue = BigNum::new()?;
            ue.mod_exp(&u, &*bn_u128(p.e[k])?, self.n2(), &mut ctx)?;
            let mut rhs = BigNum::new()?;
            rhs.mod_mul(&p.a[k], &ue, self.n2(), &mut ctx)?;
            if !self.plus_minus(&lhs, &rhs)? {
                return Err(VoteError::BadMembershipProof);
            }
        }
        Ok(())
    }

    /// The random-linear-combination check of the ballots `idx` of `items` (all through
    /// [`Setup::cheap`]).
    fn batch_ok<R: Rng + CryptoRng>(
        &self,
        items: &[(Statement<'_>, &Ballot)],
        idx: &[usize],
        rng: &mut R,
    ) -> Result<bool, VoteError> {
        let mut ctx = BigNumContext::new()?;
        let (n, n2) = (self.n(), self.n2());
        let one = || -> Result<BigNum, VoteError> {
            let mut x = BigNum::new()?;
            x.set_bit(0)?;
            Ok(x)
        };
        let (mut zp, mut ap, mut cp) = (one()?, one()?, one()?);
        let mut t: Vec<BigNum> = (0..self.l).map(|_| BigNum::new()).collect::<Result<_, _>>()?;
        let mut tmp = BigNum::new()?;
        let mut acc = BigNum::new()?;
        for &i in idx {
            let b = items[i].1;
            let mut exp_c = BigNum::new()?;
            let p = &b.proof;
            for (((z, a), e), tk) in p.z.iter().zip(&p.a).zip(&p.e).zip(t.iter_mut()) {
                let mut w = [0u8; 16];
                rng.fill_bytes(&mut w);
                let d = BigNum::from_slice(&w[..(BATCH_WEIGHT_BITS as usize / 8)])?;
                tmp.mod_exp(z, &d, n, &mut ctx)?;
                acc.mod_mul(&zp, &tmp, n, &mut ctx)?;
                std::mem::swap(&mut zp, &mut acc);
                tmp.mod_exp(a, &d, n2, &mut ctx)?;
                acc.mod_mul(&ap, &tmp, n2, &mut ctx)?;
                std::mem::swap(&mut ap, &mut acc);
                let mut ed = BigNum::new()?;
                ed.checked_mul(&*bn_u128(*e)?, &d, &mut ctx)?;
                acc.checked_add(&exp_c, &ed)?;
                std::mem::swap(&mut exp_c, &mut acc);
                acc.checked_add(tk, &ed)?;
                std::mem::swap(tk, &mut acc);
            }
            tmp.mod_exp(&b.c.0, &exp_c, n2, &mut ctx)?;
            acc.mod_mul(&cp, &tmp, n2, &mut ctx)?;
            std::mem::swap(&mut cp, &mut acc);
        }
        // s = Σ_k T_k·m_k mod N, with m_k = 2^(k·b).
        let b = to_i32(self.key.slot_bits() as usize)?;
        let mut s = BigNum::new()?;
        for k in (0..self.l).rev() {
            tmp.lshift(&s, b)?;
            s.checked_add(&tmp, &t[k])?;
        }
        tmp.nnmod(&s, n, &mut ctx)?;
        let g = self.key.public.g_pow_neg(&tmp, &mut ctx)?;
        let mut lhs = BigNum::new()?;
        lhs.mod_exp(&zp, n, n2, &mut ctx)?;
        acc.mod_mul(&ap, &cp, n2, &mut ctx)?;
        let mut rhs = BigNum::new()?;
        rhs.mod_mul(&acc, &g, n2, &mut ctx)?;
        self.plus_minus(&lhs, &rhs)
    }

    /// Settles the verdicts of `idx` (all through [`Setup::cheap`]): one batch if it passes,
    /// else halves, down to single checks. `known_bad`: the batch `idx` is known to fail.
    fn resolve<R: Rng + CryptoRng>(
        &self,
        items: &[(Statement<'_>, &Ballot)],
        idx: &[usize],
        known_bad: bool,
        rng: &mut R,
        verdicts: &mut [Result<(), VoteError>],
    ) {
        if idx.is_empty() {
            return;
        }
        if idx.len() < SINGLES_BELOW {
            for &i in idx {
                verdicts[i] = self.equations(items[i].1);
            }
            return;
        }
        if !known_bad && self.batch_ok(items, idx, rng).unwrap_or(false) {
            return;
        }
        let (left, right) = idx.split_at(idx.len() / 2);
        let left_ok = left.len() >= SINGLES_BELOW && self.batch_ok(items, left, rng).unwrap_or(false);
        if !left_ok {
            self.resolve(items, left, left.len() >= SINGLES_BELOW, rng, verdicts);
        }
        // A failing batch holds an invalid ballot: if the left half passed, it is on the right.
        self.resolve(items, right, left_ok, rng, verdicts);
    }
}

/// Proves that `c = g^(m_choice)·r^N mod N²` encrypts one of the `candidates` encodings, for the
/// statement `st`. (If `(c, r)` does not encrypt `m_choice`, the proof will not verify.) `c` may
/// come from elsewhere, e.g. python-paillier's `encrypt(m, r_value=r)`.
pub fn prove<R: Rng + CryptoRng>(
    key: &ElectionKey,
    st: &Statement<'_>,
    c: &Ciphertext,
    r: &Randomness,
    choice: usize,
    candidates: usize,
    rng: &mut R,
) -> Result<MembershipProof, VoteError> {
    prove_twisted(key, st, c, r, choice, candidates, None, rng)
}

/// [`prove`], with the real branch's commitment multiplied by `twist` when one is given, so
/// that its verification equation is off by `twist⁻¹`: how whoever knows `N`'s factors could
/// build a ballot whose error has small order (the tests build one to show that no
/// verification mode accepts it).
#[allow(clippy::too_many_arguments)]
fn prove_twisted<R: Rng + CryptoRng>(
    key: &ElectionKey,
    st: &Statement<'_>,
    c: &Ciphertext,
    r: &Randomness,
    choice: usize,
    candidates: usize,
    twist: Option<&BigNumRef>,
    rng: &mut R,
) -> Result<MembershipProof, VoteError> {
    let s = Setup::new(key, candidates)?;
    if choice >= candidates {
        return Err(VoteError::ChoiceOutOfRange { choice, candidates });
    }
    key.public.check_ciphertext(&c.0)?;
    let mut ctx = BigNumContext::new()?;
    let (n, n2) = (s.n(), s.n2());
    let mut c_inv = BigNum::new()?;
    c_inv.mod_inverse(&c.0, n2, &mut ctx)?;
    let mut a = Vec::with_capacity(candidates);
    let mut e = vec![0u128; candidates];
    let mut z = Vec::with_capacity(candidates);
    let omega = secret(&*random_unit(n, rng, &mut ctx)?);
    for (k, ek) in e.iter_mut().enumerate() {
        let mut ak = BigNum::new()?;
        if k == choice {
            ak.mod_exp(&omega, n, n2, &mut ctx)?;
            if let Some(t) = twist {
                let mut twisted = BigNum::new()?;
                twisted.mod_mul(&ak, t, n2, &mut ctx)?;
                ak = twisted;
            }
            z.push(BigNum::new()?);
        } else {
            // Simulated branch: a_k = z_k^N · (c⁻¹·g^(m_k))^(e_k).
            let mut w = [0u8; 16];
            rng.fill_bytes(&mut w);
            *ek = u128::from_be_bytes(w);
            let zk = random_unit(n, rng, &mut ctx)?;
            let mut zn = BigNum::new()?;
            zn.mod_exp(&secret(&zk), n, n2, &mut ctx)?;
            let mut u_inv = BigNum::new()?;
            u_inv.mod_mul(&c_inv, &s.g_pos[k], n2, &mut ctx)?;
            let mut ue = BigNum::new()?;
            ue.mod_exp(&u_inv, &*bn_u128(*ek)?, n2, &mut ctx)?;
            ak.mod_mul(&zn, &ue, n2, &mut ctx)?;
            z.push(zk);
        }
        a.push(ak);
    }
    let total = s.challenge(st, &c.0, &a)?;
    let others = e.iter().fold(0u128, |acc, x| acc.wrapping_add(*x));
    e[choice] = total.wrapping_sub(others);
    let mut re = BigNum::new()?;
    re.mod_exp(&secret(r.value()), &*bn_u128(e[choice])?, n, &mut ctx)?;
    let mut zi = BigNum::new()?;
    zi.mod_mul(&omega, &re, n, &mut ctx)?;
    z[choice] = zi;
    Ok(MembershipProof { a, e, z })
}

/// Encrypts a vote for candidate `choice` of `candidates` with its proof (randomness from `rng`).
pub fn cast<R: Rng + CryptoRng>(
    key: &ElectionKey,
    st: &Statement<'_>,
    choice: usize,
    candidates: usize,
    rng: &mut R,
) -> Result<Ballot, VoteError> {
    key.check_fits(candidates)?;
    if choice >= candidates {
        return Err(VoteError::ChoiceOutOfRange { choice, candidates });
    }
    let (c, r) = key.public.encrypt(&*key.encoding(choice)?, rng)?;
    let proof = prove(key, st, &c, &r, choice, candidates, rng)?;
    Ok(Ballot { c, proof })
}

/// Checks a ballot for an election of `candidates` candidates: `c ∈ Z*_{N²}`
/// ([`VoteError::CiphertextNotUnit`]), the proof's shape ([`VoteError::WrongLength`]) and the
/// proof ([`VoteError::BadMembershipProof`]).
pub fn verify_ballot(
    key: &ElectionKey,
    st: &Statement<'_>,
    ballot: &Ballot,
    candidates: usize,
) -> Result<(), VoteError> {
    let s = Setup::new(key, candidates)?;
    s.cheap(st, ballot)?;
    s.equations(ballot)
}

/// Checks many ballots of one election at once (see the module documentation): the cheap
/// checks of each, then one random-linear-combination equation for all that passed; a failing
/// batch is split in halves down to single checks. `rng` must be unpredictable to the ballots'
/// authors. Not a verdict: a ballot whose error has small order (which the election authority
/// can build) passes the equation for a fraction of the weight draws that
/// [`verify_ballot`] always refuses, so nothing in consensus or tally verification calls it;
/// the study measures it.
pub fn verify_ballots<R: Rng + CryptoRng>(
    key: &ElectionKey,
    items: &[(Statement<'_>, &Ballot)],
    candidates: usize,
    rng: &mut R,
) -> Vec<Result<(), VoteError>> {
    let s = match Setup::new(key, candidates) {
        Ok(s) => s,
        Err(e) => return vec![Err(e); items.len()],
    };
    let mut verdicts = s.cheap_all(items);
    let idx: Vec<usize> = (0..items.len()).filter(|&i| verdicts[i].is_ok()).collect();
    s.resolve(items, &idx, false, rng, &mut verdicts);
    verdicts
}

/// Multiplies ballots' ciphertexts: the encryption of the sum of their votes.
pub fn tally<'a>(
    key: &ElectionKey,
    ballots: impl IntoIterator<Item = &'a Ballot>,
) -> Result<Ciphertext, VoteError> {
    let mut ctx = BigNumContext::new()?;
    let n2 = key.public.n_squared();
    let mut acc = BigNum::new()?;
    acc.set_bit(0)?;
    let mut next = BigNum::new()?;
    for b in ballots {
        next.mod_mul(&acc, &b.c.0, n2, &mut ctx)?;
        std::mem::swap(&mut acc, &mut next);
    }
    Ok(Ciphertext(acc))
}

impl Ballot {
    /// Encoded size for `candidates` candidates and a modulus of `k` bytes.
    pub fn encoded_len(candidates: usize, k: usize) -> usize {
        4 + 2 * k + candidates * (2 * k + 16 + k)
    }

    /// The canonical encoding for a modulus of `k` bytes: count (u32 LE), `c` (`2k` bytes), then
    /// per candidate `a_k` (`2k`), `e_k` (16) and `z_k` (`k`), numbers big-endian.
    pub fn encode(&self, k: usize) -> Result<Vec<u8>, VoteError> {
        let l = self.proof.a.len();
        let mut out = Vec::with_capacity(Ballot::encoded_len(l, k));
        put_count(&mut out, l);
        out.extend_from_slice(&fixed(&self.c.0, 2 * k)?);
        for ((a, e), z) in self.proof.a.iter().zip(&self.proof.e).zip(&self.proof.z) {
            out.extend_from_slice(&fixed(a, 2 * k)?);
            out.extend_from_slice(&e.to_be_bytes());
            out.extend_from_slice(&fixed(z, k)?);
        }
        Ok(out)
    }

    /// Decodes [`Ballot::encode`]'s output for `key`, exactly: the length is checked against the
    /// count before anything is allocated, and `0 < a_k < N²`, `0 < z_k < N` (so every decodable
    /// ballot has one encoding). Whether `c ∈ Z*_{N²}` is left to verification (its own error).
    pub fn decode(bytes: &[u8], key: &ElectionKey) -> Result<Ballot, DecodeError> {
        let k = key.public.modulus_bytes();
        let mut r = Reader::new(bytes);
        let l = r.count("paillier.candidates", 3 * k + 16)?;
        if l == 0 || l > MAX_CANDIDATES {
            return Err(
                r.invalid("paillier.candidates", format!("{l} candidates (1 to {MAX_CANDIDATES} allowed)"))
            );
        }
        if bytes.len() != Ballot::encoded_len(l, k) {
            return Err(r.invalid(
                "paillier.ballot",
                format!("{} bytes; {l} candidates take {}", bytes.len(), Ballot::encoded_len(l, k)),
            ));
        }
        let num = |r: &mut Reader<'_>, field: &'static str, len: usize| -> Result<BigNum, DecodeError> {
            let b = r.bytes(field, len)?;
            BigNum::from_slice(b).map_err(|e| r.invalid(field, e.to_string()))
        };
        let in_range =
            |x: &BigNumRef, m: &BigNumRef| x.num_bits() > 0 && x.ucmp(m) == std::cmp::Ordering::Less;
        let c = Ciphertext(num(&mut r, "paillier.c", 2 * k)?);
        let (mut a, mut e, mut z) = (Vec::with_capacity(l), Vec::with_capacity(l), Vec::with_capacity(l));
        for _ in 0..l {
            let ak = num(&mut r, "paillier.a", 2 * k)?;
            if !in_range(&ak, key.public.n_squared()) {
                return Err(r.invalid("paillier.a", "not in (0, N²)"));
            }
            a.push(ak);
            e.push(u128::from_be_bytes(r.array("paillier.e")?));
            let zk = num(&mut r, "paillier.z", k)?;
            if !in_range(&zk, key.public.n()) {
                return Err(r.invalid("paillier.z", "not in (0, N)"));
            }
            z.push(zk);
        }
        r.finish()?;
        Ok(Ballot { c, proof: MembershipProof { a, e, z } })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::keygen;
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn key(seed: u64, voters: u64) -> ElectionKey {
        ElectionKey {
            public: keygen(512, &mut ChaCha20Rng::seed_from_u64(seed)).unwrap().public().clone(),
            voters,
        }
    }

    #[test]
    fn honest_proofs_verify_singly_and_in_batches() {
        let key = key(1, 10);
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let voters: Vec<[u8; 32]> = (0..9u8).map(|i| [i; 32]).collect();
        let sts: Vec<Statement<'_>> =
            voters.iter().map(|v| Statement { election: &[1; 32], voter: v }).collect();
        let ballots: Vec<Ballot> =
            sts.iter().enumerate().map(|(i, st)| cast(&key, st, i % 3, 3, &mut rng).unwrap()).collect();
        for (st, b) in sts.iter().zip(&ballots) {
            assert_eq!(verify_ballot(&key, st, b, 3), Ok(()));
        }
        let items: Vec<_> = sts.iter().copied().zip(ballots.iter()).collect();
        assert!(verify_ballots(&key, &items, 3, &mut rng).iter().all(Result::is_ok));
    }

    #[test]
    fn the_negated_response_is_the_same_proof_singly_and_in_a_batch() {
        let key = key(3, 5);
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let st = Statement { election: &[1; 32], voter: &[2; 32] };
        let mut b = cast(&key, &st, 1, 2, &mut rng).unwrap();
        let mut neg = BigNum::new().unwrap();
        neg.checked_sub(key.public.n(), &b.proof.z[0]).unwrap();
        b.proof.z[0] = neg;
        assert_eq!(verify_ballot(&key, &st, &b, 2), Ok(()));
        let items = vec![(st, &b); 4];
        assert!(verify_ballots(&key, &items, 2, &mut rng).iter().all(Result::is_ok));
    }

    /// An election key of `bits` bits whose first prime is 1 mod 3, and an element of order 3
    /// of `Z*_{N²}` (of order 3 mod `p²`, 1 mod `q²`): what only whoever chose the primes can
    /// write down.
    pub(crate) fn key_with_order_3(seed: u64, bits: usize) -> (ElectionKey, BigNum) {
        use super::super::{random_prime, SecretKey};
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut ctx = BigNumContext::new().unwrap();
        let three = BigNum::from_u32(3).unwrap();
        let mod3 = |x: &BigNumRef, ctx: &mut BigNumContext| {
            let mut r = BigNum::new().unwrap();
            r.nnmod(x, &three, ctx).unwrap();
            r
        };
        let one = BigNum::from_u32(1).unwrap();
        let p = loop {
            let p = random_prime(bits / 2, &mut rng, &mut ctx).unwrap();
            if mod3(&p, &mut ctx) == one {
                break p;
            }
        };
        let q = random_prime(bits / 2, &mut rng, &mut ctx).unwrap();
        let sk = SecretKey::from_primes(dup(&p), dup(&q)).unwrap();
        let (mut p2, mut q2) = (BigNum::new().unwrap(), BigNum::new().unwrap());
        p2.sqr(&p, &mut ctx).unwrap();
        q2.sqr(&q, &mut ctx).unwrap();
        // Z*_{p²} is cyclic of order p(p−1): x^(p(p−1)/3) has order 3 unless it is 1.
        let mut order = BigNum::new().unwrap();
        let mut pm1 = dup(&p);
        pm1.sub_word(1).unwrap();
        order.checked_mul(&p, &pm1, &mut ctx).unwrap();
        let mut exp = BigNum::new().unwrap();
        exp.checked_div(&order, &three, &mut ctx).unwrap();
        let mut tp = BigNum::new().unwrap();
        let mut x = BigNum::from_u32(2).unwrap();
        loop {
            tp.mod_exp(&x, &exp, &p2, &mut ctx).unwrap();
            if tp != one {
                break;
            }
            x.add_word(1).unwrap();
        }
        // t ≡ tp (mod p²), t ≡ 1 (mod q²): t = tp + p²·((1 − tp)·(p²)⁻¹ mod q²).
        let mut inv = BigNum::new().unwrap();
        inv.mod_inverse(&p2, &q2, &mut ctx).unwrap();
        let mut diff = BigNum::new().unwrap();
        diff.checked_sub(&one, &tp).unwrap();
        let mut k = BigNum::new().unwrap();
        k.mod_mul(&diff, &inv, &q2, &mut ctx).unwrap();
        let mut t = BigNum::new().unwrap();
        t.checked_mul(&p2, &k, &mut ctx).unwrap();
        let mut sum = BigNum::new().unwrap();
        sum.checked_add(&t, &tp).unwrap();
        let key = ElectionKey { public: sk.public().clone(), voters: 10 };
        let mut cube = BigNum::new().unwrap();
        cube.mod_exp(&sum, &three, key.public.n_squared(), &mut ctx).unwrap();
        assert_eq!(cube, one, "t has order 3");
        assert_ne!(sum, one);
        (key, sum)
    }

    /// A ballot for a valid choice whose proof's real branch is off by an element of order 3.
    pub(crate) fn order_3_ballot(key: &ElectionKey, t: &BigNumRef, st: &Statement<'_>, seed: u64) -> Ballot {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let (c, r) = key.public.encrypt(&key.encoding(1).unwrap(), &mut rng).unwrap();
        let proof = prove_twisted(key, st, &c, &r, 1, 3, Some(t), &mut rng).unwrap();
        Ballot { c, proof }
    }

    #[test]
    fn a_ballot_off_by_an_element_of_order_3_fools_the_batch_equation_but_not_the_single_check() {
        let (key, t) = key_with_order_3(7, 512);
        let st = Statement { election: &[1; 32], voter: &[2; 32] };
        let bad = order_3_ballot(&key, &t, &st, 8);
        assert!(matches!(verify_ballot(&key, &st, &bad, 3), Err(VoteError::BadMembershipProof)));
        // With an honest ballot beside it, the batch equation holds for about a third of the
        // weight draws: the chance a batch validator had to disagree with a single one. This is
        // why no verdict is taken from it (see `verify_ballots`).
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let honest = cast(&key, &Statement { election: &[1; 32], voter: &[3; 32] }, 0, 3, &mut rng).unwrap();
        let st_h = Statement { election: &[1; 32], voter: &[3; 32] };
        let items = vec![(st, &bad), (st_h, &honest)];
        let s = Setup::new(&key, 3).unwrap();
        let fooled = (0..60u64)
            .filter(|i| {
                s.batch_ok(&items, &[0, 1], &mut ChaCha20Rng::seed_from_u64(100 + i)).unwrap_or(false)
            })
            .count();
        assert!((8..=35).contains(&fooled), "{fooled} of 60 draws accepted the batch");
    }
}
