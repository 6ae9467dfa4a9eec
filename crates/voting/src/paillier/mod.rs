//! The `paillier` ballot scheme (seed 003's own): one Paillier ciphertext per ballot.
//!
//! - **Keys.** `N = p·q` (2048 bits for elections; [`MIN_MODULUS_BITS`] and up in the library,
//!   smaller sizes for tests only), `g = N + 1`, so `g^m = 1 + m·N (mod N²)`. Key generation
//!   ([`keygen`]) draws its primes from the RNG it is given (deterministic for a seed) and checks
//!   `p ≠ q`, both of `bits/2` bits with the top two set (so `N` has exactly `bits` bits), and
//!   `gcd(N, (p−1)(q−1)) = 1`.
//! - **Encoding.** With `V` voters, `b = ⌈log2(V + 1)⌉` bits per candidate and candidate `i`
//!   encoded as `m_i = 2^(i·b)`; a tally `Σ count_i·2^(i·b)` never carries from one candidate
//!   into the next. [`ElectionKey`] holds `N` and `V`; the encoding must fit: `L·b ≤ bits(N) − 3`
//!   (so the tally is also below python-paillier's `max_int = N/3 − 1`).
//! - **Encryption** `c = (1 + m·N)·r^N mod N²` with `r ∈ Z*_N` from the RNG passed in.
//! - **Ballot**: `c` and the 1-out-of-L membership proof of Baudron et al. ([`proof`]), bound by
//!   strong Fiat–Shamir to the election, the voter, `N`, the encodings, `c` and the commitments.
//!   Validators check `c ∈ Z*_{N²}` ([`PublicKey::check_ciphertext`]).
//! - **Tally**: `Π c_j mod N²` ([`tally`]), computed by anyone from chain data. The EA decrypts it
//!   (CRT) and publishes the counts with the randomness `r` of the tally ciphertext
//!   ([`TallyProof`]); anyone checks `c = (1 + m·N)·r^N mod N²` ([`verify_tally`]). That check is
//!   perfectly sound (Paillier encryption is injective in `(m, r)`), and `r` is the product of
//!   every voter's randomness, so it reveals nothing about a single ballot.
//! - **Interoperability**: keys and ciphertexts have the JSON form python-paillier (`phe`) uses
//!   ([`json`]).
//!
//! **Constant time.** Validators handle public data only and use OpenSSL's ordinary
//! (variable-time) exponentiation. The EA's secret-key operations — decryption's
//! `c^(p−1) mod p²` and `c^(q−1) mod q²`, the recovery of `r` (`c^(N⁻¹ mod (p−1)) mod p` and its `q`
//! half), and the inversions of key setup — run on big numbers carrying OpenSSL's
//! `BN_FLG_CONSTTIME` (set through `openssl::bn::BigNumRef::set_const_time`, see
//! [`SecretKey`]): `BN_mod_exp` then takes `BN_mod_exp_mont_consttime` (fixed window, cache-
//! uniform table reads), `BN_mod_inverse` the branch-free variant, and reductions the
//! constant-time division. Key generation's `gcd` is OpenSSL 3's constant-time binary gcd. The
//! voter's `r` and proof nonce `ω` are flagged too. Limits: OpenSSL documents this flag as a
//! best effort (lengths of the numbers are not hidden), and the CRT recombination uses ordinary
//! multiplications of secret values.

use openssl::bn::{BigNum, BigNumContext, BigNumRef};
use rand_core::{CryptoRng, Rng};

use crate::VoteError;

pub mod json;
pub mod proof;

pub use json::{ciphertexts_from_json, ciphertexts_to_json};
pub use proof::{
    cast, prove, tally, verify_ballot, verify_ballots, Ballot, MembershipProof, BATCH_WEIGHT_BITS,
    CHALLENGE_BITS,
};

/// The smallest modulus the library accepts (for tests; elections need
/// [`ELECTION_MIN_MODULUS_BITS`]).
pub const MIN_MODULUS_BITS: usize = 512;

/// The largest modulus the library accepts.
pub const MAX_MODULUS_BITS: usize = 4096;

/// The smallest modulus an election on the chain may use.
pub const ELECTION_MIN_MODULUS_BITS: usize = 2048;

/// The modulus size elections use by default.
pub const ELECTION_MODULUS_BITS: usize = 2048;

/// The most candidates an election may have.
pub const MAX_CANDIDATES: usize = 64;

/// `BN_dup`, which fails only when memory runs out (as Rust's own allocations abort then).
fn dup(x: &BigNumRef) -> BigNum {
    #[allow(clippy::expect_used)]
    x.to_owned().expect("BN_dup fails only when out of memory")
}

pub(crate) fn bn_u64(x: u64) -> Result<BigNum, VoteError> {
    Ok(BigNum::from_slice(&x.to_be_bytes())?)
}

pub(crate) fn bn_u128(x: u128) -> Result<BigNum, VoteError> {
    Ok(BigNum::from_slice(&x.to_be_bytes())?)
}

/// A copy flagged `BN_FLG_CONSTTIME` (the flag is not copied by `BN_dup`).
fn secret(x: &BigNumRef) -> BigNum {
    let mut s = dup(x);
    s.set_const_time();
    s
}

/// `x` as exactly `len` big-endian bytes (`x < 256^len`).
pub(crate) fn fixed(x: &BigNumRef, len: usize) -> Result<Vec<u8>, VoteError> {
    let len = i32::try_from(len).map_err(|_| VoteError::Arithmetic("length".into()))?;
    Ok(x.to_vec_padded(len)?)
}

/// A uniform value in `[0, n)` from the RNG (reduced from 128 extra bits: bias below 2^-128).
fn random_below<R: Rng + CryptoRng>(
    n: &BigNumRef,
    rng: &mut R,
    ctx: &mut BigNumContext,
) -> Result<BigNum, VoteError> {
    let mut bytes = vec![0u8; n.num_bytes() as usize + 16];
    rng.fill_bytes(&mut bytes);
    let wide = BigNum::from_slice(&bytes)?;
    bytes.fill(0);
    let mut out = BigNum::new()?;
    out.nnmod(&wide, n, ctx)?;
    Ok(out)
}

/// A uniform unit of `Z*_n` from the RNG.
pub(crate) fn random_unit<R: Rng + CryptoRng>(
    n: &BigNumRef,
    rng: &mut R,
    ctx: &mut BigNumContext,
) -> Result<BigNum, VoteError> {
    // A non-unit has probability about 2/√n per draw: 64 failures in a row mean a broken RNG.
    for _ in 0..64 {
        let x = random_below(n, rng, ctx)?;
        if x.num_bits() > 0 && is_unit(&x, n, ctx)? {
            return Ok(x);
        }
    }
    Err(VoteError::Arithmetic("the RNG gave 64 non-units in a row".into()))
}

/// `gcd(x, n) = 1` for a public `x` (variable time): `x mod n` is invertible. OpenSSL 3's
/// `BN_gcd` is constant time and costs about ten times `BN_mod_inverse`'s binary algorithm, which
/// is the right tool for public values (ciphertexts, proofs).
pub(crate) fn is_unit_public(
    x: &BigNumRef,
    n: &BigNumRef,
    ctx: &mut BigNumContext,
) -> Result<bool, VoteError> {
    let mut xr = BigNum::new()?;
    xr.nnmod(x, n, ctx)?;
    if xr.num_bits() == 0 {
        return Ok(false);
    }
    let mut inv = BigNum::new()?;
    // The only failure for a reduced, non-zero `x` is "no inverse" (or memory exhaustion).
    Ok(inv.mod_inverse(&xr, n, ctx).is_ok())
}

/// `gcd(x, n) = 1` in constant time (`BN_gcd`), for secret values.
pub(crate) fn is_unit(x: &BigNumRef, n: &BigNumRef, ctx: &mut BigNumContext) -> Result<bool, VoteError> {
    let mut g = BigNum::new()?;
    g.gcd(x, n, ctx)?;
    Ok(g.is_one())
}

trait IsOne {
    fn is_one(&self) -> bool;
}

impl IsOne for BigNumRef {
    fn is_one(&self) -> bool {
        self.num_bits() == 1 && !self.is_negative()
    }
}

/// The public key: the modulus `N` (with `g = N + 1` implied).
#[derive(Debug, PartialEq, Eq)]
pub struct PublicKey {
    n: BigNum,
    n2: BigNum,
    n_bytes: usize,
}

impl Clone for PublicKey {
    fn clone(&self) -> Self {
        PublicKey { n: dup(&self.n), n2: dup(&self.n2), n_bytes: self.n_bytes }
    }
}

impl PublicKey {
    /// The key of modulus `n`: odd, positive, of [`MIN_MODULUS_BITS`] to [`MAX_MODULUS_BITS`]
    /// bits. (Whether `n` is a product of two primes cannot be checked without its factors.)
    pub fn new(n: BigNum) -> Result<PublicKey, VoteError> {
        let bits = n.num_bits() as usize;
        if n.is_negative() || !(MIN_MODULUS_BITS..=MAX_MODULUS_BITS).contains(&bits) {
            return Err(VoteError::BadKey(format!(
                "modulus of {bits} bits ({MIN_MODULUS_BITS} to {MAX_MODULUS_BITS} allowed)"
            )));
        }
        if !n.is_odd() {
            return Err(VoteError::BadKey("even modulus".into()));
        }
        let mut ctx = BigNumContext::new()?;
        let mut n2 = BigNum::new()?;
        n2.sqr(&n, &mut ctx)?;
        let n_bytes = n.num_bytes() as usize;
        Ok(PublicKey { n, n2, n_bytes })
    }

    /// The key whose modulus has this minimal big-endian encoding (no leading zero byte).
    pub fn from_bytes(be: &[u8]) -> Result<PublicKey, VoteError> {
        if be.len() > MAX_MODULUS_BITS / 8 {
            return Err(VoteError::BadKey(format!("modulus of {} bytes", be.len())));
        }
        if be.first() == Some(&0) {
            return Err(VoteError::BadKey("modulus encoding has a leading zero byte".into()));
        }
        PublicKey::new(BigNum::from_slice(be)?)
    }

    /// The modulus, minimal big-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.n.to_vec()
    }

    /// `N`.
    pub fn n(&self) -> &BigNumRef {
        &self.n
    }

    /// `N²`.
    pub fn n_squared(&self) -> &BigNumRef {
        &self.n2
    }

    /// Bytes of `N` (a ciphertext has twice as many).
    pub fn modulus_bytes(&self) -> usize {
        self.n_bytes
    }

    /// Bits of `N`.
    pub fn bits(&self) -> usize {
        self.n.num_bits() as usize
    }

    /// `c ∈ Z*_{N²}`: `0 < c < N²` and `gcd(c, N) = 1`. Validators run this on every ballot.
    pub fn check_ciphertext(&self, c: &BigNumRef) -> Result<(), VoteError> {
        if c.is_negative() || c.num_bits() == 0 || c.ucmp(&self.n2) != std::cmp::Ordering::Less {
            return Err(VoteError::CiphertextNotUnit);
        }
        let mut ctx = BigNumContext::new()?;
        if !is_unit_public(c, &self.n, &mut ctx)? {
            return Err(VoteError::CiphertextNotUnit);
        }
        Ok(())
    }

    /// `(1 + m·N)·r^N mod N²` for `0 ≤ m < N` and `r ∈ Z*_N` (python-paillier's
    /// `raw_encrypt(m, r_value=r)`).
    pub fn encrypt_with(&self, m: &BigNumRef, r: &Randomness) -> Result<Ciphertext, VoteError> {
        let mut ctx = BigNumContext::new()?;
        if m.is_negative() || m.ucmp(&self.n) != std::cmp::Ordering::Less {
            return Err(VoteError::Arithmetic("plaintext not in [0, N)".into()));
        }
        let r = &r.0;
        if r.is_negative() || r.num_bits() == 0 || r.ucmp(&self.n) != std::cmp::Ordering::Less {
            return Err(VoteError::Arithmetic("randomness not in (0, N)".into()));
        }
        let mut rn = BigNum::new()?;
        rn.mod_exp(&secret(r), &self.n, &self.n2, &mut ctx)?;
        let gm = self.g_pow(m, &mut ctx)?;
        let mut c = BigNum::new()?;
        c.mod_mul(&gm, &rn, &self.n2, &mut ctx)?;
        Ok(Ciphertext(c))
    }

    /// Encrypts `m` with fresh randomness `r ∈ Z*_N` from `rng`; returns `r` too (a proof needs
    /// it).
    pub fn encrypt<R: Rng + CryptoRng>(
        &self,
        m: &BigNumRef,
        rng: &mut R,
    ) -> Result<(Ciphertext, Randomness), VoteError> {
        let mut ctx = BigNumContext::new()?;
        let r = Randomness(random_unit(&self.n, rng, &mut ctx)?);
        Ok((self.encrypt_with(m, &r)?, r))
    }

    /// Homomorphic addition: `a·b mod N²` encrypts the sum of their plaintexts (mod `N`).
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, VoteError> {
        let mut ctx = BigNumContext::new()?;
        let mut c = BigNum::new()?;
        c.mod_mul(&a.0, &b.0, &self.n2, &mut ctx)?;
        Ok(Ciphertext(c))
    }

    /// `g^m = 1 + m·N mod N²` for `0 ≤ m < N`.
    pub(crate) fn g_pow(&self, m: &BigNumRef, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
        let mut x = BigNum::new()?;
        x.checked_mul(m, &self.n, ctx)?;
        x.add_word(1)?;
        let mut out = BigNum::new()?;
        out.nnmod(&x, &self.n2, ctx)?;
        Ok(out)
    }

    /// `g^(−m) = 1 − m·N mod N²` for `0 ≤ m < N`.
    pub(crate) fn g_pow_neg(&self, m: &BigNumRef, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
        let mut mn = BigNum::new()?;
        mn.checked_mul(m, &self.n, ctx)?;
        let mut x = BigNum::new()?;
        x.checked_sub(&self.n2, &mn)?;
        x.add_word(1)?;
        let mut out = BigNum::new()?;
        out.nnmod(&x, &self.n2, ctx)?;
        Ok(out)
    }
}

/// The randomness `r ∈ Z*_N` of an encryption (secret to whoever encrypted).
pub struct Randomness(BigNum);

impl Randomness {
    /// Wraps a value (e.g. one chosen for python-paillier's `encrypt(m, r_value=r)`).
    pub fn new(r: BigNum) -> Randomness {
        Randomness(r)
    }

    /// Draws a fresh unit of `Z*_N`.
    pub fn random<R: Rng + CryptoRng>(pk: &PublicKey, rng: &mut R) -> Result<Randomness, VoteError> {
        let mut ctx = BigNumContext::new()?;
        Ok(Randomness(random_unit(&pk.n, rng, &mut ctx)?))
    }

    /// The value.
    pub fn value(&self) -> &BigNumRef {
        &self.0
    }
}

impl std::fmt::Debug for Randomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Randomness(..)")
    }
}

/// A Paillier ciphertext, an element of `Z*_{N²}` once checked.
#[derive(Debug, PartialEq, Eq)]
pub struct Ciphertext(pub BigNum);

impl Clone for Ciphertext {
    fn clone(&self) -> Self {
        Ciphertext(dup(&self.0))
    }
}

impl Ciphertext {
    /// The value.
    pub fn value(&self) -> &BigNumRef {
        &self.0
    }
}

/// The EA's secret key: the primes and the constants of CRT decryption, all flagged
/// `BN_FLG_CONSTTIME` (see the module documentation).
pub struct SecretKey {
    public: PublicKey,
    p: BigNum,
    q: BigNum,
    p2: BigNum,
    q2: BigNum,
    p_1: BigNum,
    q_1: BigNum,
    /// `L_p(g^(p−1) mod p²)⁻¹ mod p`.
    hp: BigNum,
    /// `L_q(g^(q−1) mod q²)⁻¹ mod q`.
    hq: BigNum,
    /// `p⁻¹ mod q` (CRT).
    p_inv_q: BigNum,
    /// `N⁻¹ mod (p−1)` and `N⁻¹ mod (q−1)` (recovering `r`).
    dp: BigNum,
    dq: BigNum,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey {{ public: {} bits, .. }}", self.public.bits())
    }
}

/// `(x − 1) / d` (Paillier's `L` function).
fn l_function(x: &BigNumRef, d: &BigNumRef, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
    let mut x1 = dup(x);
    x1.sub_word(1)?;
    let mut out = BigNum::new()?;
    out.checked_div(&x1, d, ctx)?;
    Ok(out)
}

fn inverse(a: &BigNumRef, m: &BigNumRef, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
    let mut out = BigNum::new()?;
    out.mod_inverse(a, m, ctx).map_err(|_| VoteError::BadKey("a key constant is not invertible".into()))?;
    out.set_const_time();
    Ok(out)
}

impl SecretKey {
    /// The key of primes `p` and `q`: distinct, prime (64 Miller–Rabin rounds), `N = p·q` of an
    /// accepted size, and `gcd(N, (p−1)(q−1)) = 1`.
    pub fn from_primes(p: BigNum, q: BigNum) -> Result<SecretKey, VoteError> {
        SecretKey::build(p, q, true)
    }

    fn build(p: BigNum, q: BigNum, check_primes: bool) -> Result<SecretKey, VoteError> {
        let mut ctx = BigNumContext::new()?;
        if p == q {
            return Err(VoteError::BadKey("p = q".into()));
        }
        for x in [&p, &q] {
            if x.is_negative()
                || x.num_bits() < 2
                || (check_primes && !x.is_prime_fasttest(64, &mut ctx, true)?)
            {
                return Err(VoteError::BadKey("a factor is not prime".into()));
            }
        }
        let (p, q) = (secret(&p), secret(&q));
        let mut n = BigNum::new()?;
        n.checked_mul(&p, &q, &mut ctx)?;
        let public = PublicKey::new(n)?;
        let (mut p_1, mut q_1) = (secret(&p), secret(&q));
        p_1.sub_word(1)?;
        q_1.sub_word(1)?;
        let mut phi = BigNum::new()?;
        phi.checked_mul(&p_1, &q_1, &mut ctx)?;
        phi.set_const_time();
        if !is_unit(&public.n, &phi, &mut ctx)? {
            return Err(VoteError::BadKey("gcd(N, (p-1)(q-1)) is not 1".into()));
        }
        let mut p2 = BigNum::new()?;
        p2.sqr(&p, &mut ctx)?;
        p2.set_const_time();
        let mut q2 = BigNum::new()?;
        q2.sqr(&q, &mut ctx)?;
        q2.set_const_time();
        // h_p = L_p(g^(p−1) mod p²)⁻¹ mod p, as python-paillier computes it.
        let h = |x: &BigNumRef,
                 x2: &BigNumRef,
                 x_1: &BigNumRef,
                 ctx: &mut BigNumContext|
         -> Result<BigNum, VoteError> {
            let mut g = dup(&public.n);
            g.add_word(1)?;
            let mut gx = BigNum::new()?;
            gx.mod_exp(&g, x_1, x2, ctx)?;
            let l = l_function(&gx, x, ctx)?;
            inverse(&l, x, ctx)
        };
        let hp = h(&p, &p2, &p_1, &mut ctx)?;
        let hq = h(&q, &q2, &q_1, &mut ctx)?;
        let p_inv_q = inverse(&p, &q, &mut ctx)?;
        let dp = inverse(&public.n, &p_1, &mut ctx)?;
        let dq = inverse(&public.n, &q_1, &mut ctx)?;
        Ok(SecretKey { public, p, q, p2, q2, p_1, q_1, hp, hq, p_inv_q, dp, dq })
    }

    /// The public key.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The primes `(p, q)` (for export to python-paillier).
    pub fn primes(&self) -> (&BigNumRef, &BigNumRef) {
        (&self.p, &self.q)
    }

    /// `x^e mod m` with everything secret-flagged, after reducing `x` mod `m`.
    fn ct_pow(
        &self,
        x: &BigNumRef,
        e: &BigNumRef,
        m: &BigNumRef,
        ctx: &mut BigNumContext,
    ) -> Result<BigNum, VoteError> {
        let mut xr = BigNum::new()?;
        xr.nnmod(x, m, ctx)?;
        xr.set_const_time();
        let mut out = BigNum::new()?;
        out.mod_exp(&xr, e, m, ctx)?;
        Ok(out)
    }

    /// `x` with `x ≡ xp (mod p)`, `x ≡ xq (mod q)`.
    fn crt(&self, xp: &BigNumRef, xq: &BigNumRef, ctx: &mut BigNumContext) -> Result<BigNum, VoteError> {
        // x = xp + p·((xq − xp)·p⁻¹ mod q)
        let mut d = BigNum::new()?;
        d.mod_sub(xq, xp, &self.q, ctx)?;
        let mut u = BigNum::new()?;
        u.mod_mul(&d, &self.p_inv_q, &self.q, ctx)?;
        let mut pu = BigNum::new()?;
        pu.checked_mul(&self.p, &u, ctx)?;
        let mut x = BigNum::new()?;
        x.checked_add(&pu, xp)?;
        Ok(x)
    }

    /// Decrypts (CRT, python-paillier's method): `m_p = L_p(c^(p−1) mod p²)·h_p mod p`, the same
    /// mod `q`, recombined.
    pub fn decrypt(&self, c: &Ciphertext) -> Result<BigNum, VoteError> {
        self.public.check_ciphertext(&c.0)?;
        let mut ctx = BigNumContext::new()?;
        let half = |x: &BigNumRef,
                    x2: &BigNumRef,
                    x_1: &BigNumRef,
                    h: &BigNumRef,
                    ctx: &mut BigNumContext|
         -> Result<BigNum, VoteError> {
            let cx = self.ct_pow(&c.0, x_1, x2, ctx)?;
            let l = l_function(&cx, x, ctx)?;
            let mut m = BigNum::new()?;
            m.mod_mul(&l, h, x, ctx)?;
            Ok(m)
        };
        let mp = half(&self.p, &self.p2, &self.p_1, &self.hp, &mut ctx)?;
        let mq = half(&self.q, &self.q2, &self.q_1, &self.hq, &mut ctx)?;
        self.crt(&mp, &mq, &mut ctx)
    }

    /// The randomness of a ciphertext: the `r ∈ Z*_N` with `c = g^m·r^N mod N²`, i.e. the `N`-th
    /// root of `c mod N` (`r = (c mod N)^(N⁻¹ mod φ(N))`, by CRT).
    pub fn randomness(&self, c: &Ciphertext) -> Result<Randomness, VoteError> {
        self.public.check_ciphertext(&c.0)?;
        let mut ctx = BigNumContext::new()?;
        let rp = self.ct_pow(&c.0, &self.dp, &self.p, &mut ctx)?;
        let rq = self.ct_pow(&c.0, &self.dq, &self.q, &mut ctx)?;
        Ok(Randomness(self.crt(&rp, &rq, &mut ctx)?))
    }
}

/// A random prime of exactly `bits` bits with the top two bits set, drawn from `rng`
/// (incremental search from a random odd start; OpenSSL's trial division and 64 Miller–Rabin
/// rounds decide primality).
fn random_prime<R: Rng + CryptoRng>(
    bits: usize,
    rng: &mut R,
    ctx: &mut BigNumContext,
) -> Result<BigNum, VoteError> {
    let bytes = bits.div_ceil(8);
    loop {
        let mut buf = vec![0u8; bytes];
        rng.fill_bytes(&mut buf);
        let excess = bytes * 8 - bits;
        buf[0] &= 0xffu8 >> excess;
        buf[0] |= 0xc0u8 >> excess;
        if let Some(last) = buf.last_mut() {
            *last |= 1;
        }
        let mut x = BigNum::from_slice(&buf)?;
        buf.fill(0);
        for _ in 0..(bits * 4) {
            if x.num_bits() as usize != bits {
                break;
            }
            if x.is_prime_fasttest(64, ctx, true)? {
                x.set_const_time();
                return Ok(x);
            }
            x.add_word(2)?;
        }
    }
}

/// A fresh key with a modulus of `bits` bits (even, [`MIN_MODULUS_BITS`] to
/// [`MAX_MODULUS_BITS`]); every random choice comes from `rng`.
pub fn keygen<R: Rng + CryptoRng>(bits: usize, rng: &mut R) -> Result<SecretKey, VoteError> {
    if !bits.is_multiple_of(2) || !(MIN_MODULUS_BITS..=MAX_MODULUS_BITS).contains(&bits) {
        return Err(VoteError::BadKey(format!("cannot make a {bits}-bit modulus")));
    }
    let mut ctx = BigNumContext::new()?;
    loop {
        let p = random_prime(bits / 2, rng, &mut ctx)?;
        let q = random_prime(bits / 2, rng, &mut ctx)?;
        match SecretKey::build(p, q, false) {
            Ok(sk) if sk.public.bits() == bits => return Ok(sk),
            Ok(_) | Err(VoteError::BadKey(_)) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Bits per candidate for `voters` voters: `⌈log2(voters + 1)⌉`.
pub fn slot_bits(voters: u64) -> u32 {
    64 - voters.leading_zeros()
}

/// An election's Paillier key: the public key and the number of voters, which fixes the
/// encoding (`b = ⌈log2(voters + 1)⌉` bits per candidate).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionKey {
    /// The public key.
    pub public: PublicKey,
    /// The most ballots the election counts (the registered voters).
    pub voters: u64,
}

impl ElectionKey {
    /// Longest encoding: the voter count and a [`MAX_MODULUS_BITS`] modulus.
    pub const MAX_ENCODED: usize = 8 + MAX_MODULUS_BITS / 8;

    /// Bits per candidate.
    pub fn slot_bits(&self) -> u32 {
        slot_bits(self.voters)
    }

    /// The largest count one candidate's slot holds: `2^b − 1 ≥ voters`.
    pub fn max_count(&self) -> u64 {
        let b = self.slot_bits();
        if b >= 64 {
            u64::MAX
        } else {
            (1u64 << b) - 1
        }
    }

    /// Checks that `candidates` candidates fit: 1 to [`MAX_CANDIDATES`], at least one voter, and
    /// `L·b ≤ bits(N) − 3`.
    pub fn check_fits(&self, candidates: usize) -> Result<(), VoteError> {
        if candidates == 0 || candidates > MAX_CANDIDATES {
            return Err(VoteError::CandidateCount { got: candidates, max: MAX_CANDIDATES });
        }
        if self.voters == 0 {
            return Err(VoteError::BadKey("an election needs at least one voter".into()));
        }
        let need = candidates as u64 * u64::from(self.slot_bits());
        let room = self.public.bits() as u64 - 3;
        if need > room {
            return Err(VoteError::BadKey(format!(
                "{candidates} candidates of {} bits need {need} bits; the modulus holds {room}",
                self.slot_bits()
            )));
        }
        Ok(())
    }

    /// Candidate `i`'s encoding `2^(i·b)`.
    pub fn encoding(&self, i: usize) -> Result<BigNum, VoteError> {
        let shift = i32::try_from(i as u64 * u64::from(self.slot_bits()))
            .map_err(|_| VoteError::Arithmetic("shift".into()))?;
        let mut one = BigNum::new()?;
        one.set_bit(0)?;
        let mut m = BigNum::new()?;
        m.lshift(&one, shift)?;
        Ok(m)
    }

    /// The canonical encoding: `voters` (u64 little-endian), then `N` big-endian, minimal.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.voters.to_le_bytes().to_vec();
        out.extend_from_slice(&self.public.to_bytes());
        out
    }

    /// Decodes [`ElectionKey::encode`]'s output (bounded, canonical).
    pub fn decode(bytes: &[u8]) -> Result<ElectionKey, VoteError> {
        if bytes.len() < 8 || bytes.len() > Self::MAX_ENCODED {
            return Err(VoteError::BadKey(format!("election key of {} bytes", bytes.len())));
        }
        let (v, n) = bytes.split_at(8);
        let mut vb = [0u8; 8];
        vb.copy_from_slice(v);
        Ok(ElectionKey { public: PublicKey::from_bytes(n)?, voters: u64::from_le_bytes(vb) })
    }

    /// The plaintext of a tally: `Σ counts_i·2^(i·b)`; every count at most [`Self::max_count`].
    pub fn tally_plaintext(&self, counts: &[u64]) -> Result<BigNum, VoteError> {
        let b = i32::try_from(self.slot_bits()).map_err(|_| VoteError::Arithmetic("slot bits".into()))?;
        let mut m = BigNum::new()?;
        for &c in counts.iter().rev() {
            if c > self.max_count() {
                return Err(VoteError::TooManyBallots { ballots: c, max: self.max_count() });
            }
            let mut shifted = BigNum::new()?;
            shifted.lshift(&m, b)?;
            m.checked_add(&shifted, &*bn_u64(c)?)?;
        }
        Ok(m)
    }

    /// The counts of a tally plaintext; `None` if it has more than `candidates` slots.
    pub fn tally_counts(&self, m: &BigNumRef, candidates: usize) -> Result<Option<Vec<u64>>, VoteError> {
        let b = self.slot_bits() as usize;
        if m.is_negative() || m.num_bits() as usize > candidates * b {
            return Ok(None);
        }
        let bytes = m.to_vec();
        let bit = |k: usize| -> bool {
            let byte = k / 8;
            byte < bytes.len() && (bytes[bytes.len() - 1 - byte] >> (k % 8)) & 1 == 1
        };
        Ok(Some(
            (0..candidates)
                .map(|i| (0..b).fold(0u64, |acc, j| acc | (u64::from(bit(i * b + j)) << j)))
                .collect(),
        ))
    }
}

/// The EA's proof that a tally decrypts to its counts: the randomness `r` of the tally
/// ciphertext, so that anyone checks `c = (1 + m·N)·r^N mod N²`.
#[derive(Debug, PartialEq, Eq)]
pub struct TallyProof {
    /// `r ∈ Z*_N`.
    pub r: BigNum,
}

impl Clone for TallyProof {
    fn clone(&self) -> Self {
        TallyProof { r: dup(&self.r) }
    }
}

/// Decrypts a tally of `ballots` ballots into per-candidate counts, with the proof.
pub fn decrypt_tally(
    sk: &SecretKey,
    key: &ElectionKey,
    c: &Ciphertext,
    candidates: usize,
    ballots: u64,
) -> Result<(Vec<u64>, TallyProof), VoteError> {
    if sk.public != key.public {
        return Err(VoteError::BadKey("the secret key is not the election's".into()));
    }
    key.check_fits(candidates)?;
    if ballots > key.max_count() {
        return Err(VoteError::TooManyBallots { ballots, max: key.max_count() });
    }
    let m = sk.decrypt(c)?;
    let counts = key.tally_counts(&m, candidates)?.ok_or(VoteError::CountOutOfRange)?;
    if counts.iter().try_fold(0u64, |a, &x| a.checked_add(x)) != Some(ballots) {
        return Err(VoteError::CountOutOfRange);
    }
    let r = sk.randomness(c)?;
    Ok((counts, TallyProof { r: r.0 }))
}

/// Checks that `counts` (of `ballots` ballots) is the decryption of the tally `c`.
pub fn verify_tally(
    key: &ElectionKey,
    c: &Ciphertext,
    counts: &[u64],
    ballots: u64,
    proof: &TallyProof,
) -> Result<(), VoteError> {
    key.check_fits(counts.len())?;
    let pk = &key.public;
    pk.check_ciphertext(&c.0)?;
    if ballots > key.max_count() {
        return Err(VoteError::TooManyBallots { ballots, max: key.max_count() });
    }
    if counts.iter().try_fold(0u64, |a, &x| a.checked_add(x)) != Some(ballots) {
        return Err(VoteError::BadDecryptionProof);
    }
    let r = &proof.r;
    let mut ctx = BigNumContext::new()?;
    if r.is_negative()
        || r.num_bits() == 0
        || r.ucmp(&pk.n) != std::cmp::Ordering::Less
        || !is_unit_public(r, &pk.n, &mut ctx)?
    {
        return Err(VoteError::BadDecryptionProof);
    }
    let m = key.tally_plaintext(counts)?;
    let expected = pk.encrypt_with(&m, &Randomness(dup(r)))?;
    if expected.0 != c.0 {
        return Err(VoteError::BadDecryptionProof);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn keygen_is_deterministic_and_decryption_inverts_encryption() {
        let sk = keygen(512, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        let again = keygen(512, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        assert_eq!(sk.public(), again.public());
        assert_eq!(sk.public().bits(), 512);
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for m in [0u64, 1, 2, 12345, u64::MAX] {
            let m = bn_u64(m).unwrap();
            let (c, r) = sk.public().encrypt(&m, &mut rng).unwrap();
            assert_eq!(sk.decrypt(&c).unwrap(), m);
            assert_eq!(sk.randomness(&c).unwrap().value(), r.value());
        }
        assert!(keygen(511, &mut rng).is_err());
        assert!(keygen(256, &mut rng).is_err());
    }

    #[test]
    fn ciphertexts_outside_the_unit_group_are_refused() {
        let sk = keygen(512, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
        let pk = sk.public();
        let (p, _) = sk.primes();
        let zero = BigNum::new().unwrap();
        let mut p_mul = dup(p);
        p_mul.mul_word(7).unwrap();
        for bad in [zero, dup(pk.n()), dup(pk.n_squared()), p_mul] {
            assert_eq!(pk.check_ciphertext(&bad), Err(VoteError::CiphertextNotUnit));
        }
        let mut one = BigNum::new().unwrap();
        one.set_bit(0).unwrap();
        assert_eq!(pk.check_ciphertext(&one), Ok(()));
    }

    #[test]
    fn tally_plaintexts_round_trip_through_counts() {
        let sk = keygen(512, &mut ChaCha20Rng::seed_from_u64(4)).unwrap();
        let key = ElectionKey { public: sk.public().clone(), voters: 1000 };
        assert_eq!(key.slot_bits(), 10);
        assert_eq!(key.max_count(), 1023);
        let counts = [3u64, 0, 1000, 17];
        let m = key.tally_plaintext(&counts).unwrap();
        assert_eq!(key.tally_counts(&m, 4).unwrap(), Some(counts.to_vec()));
        assert_eq!(key.tally_counts(&m, 3).unwrap(), None);
        assert_eq!(slot_bits(1), 1);
        assert_eq!(slot_bits(2), 2);
        assert_eq!(slot_bits(3), 2);
        assert_eq!(slot_bits(4), 3);
        assert_eq!(ElectionKey::decode(&key.encode()).unwrap(), key);
        assert!(key.check_fits(50).is_ok());
        assert!(key.check_fits(51).is_err());
        assert!(key.check_fits(0).is_err());
    }
}
