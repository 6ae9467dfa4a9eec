//! Keys and signatures for the two signature schemes.
//!
//! - `ed25519`: 32-byte keys, 64-byte signatures, verified under ZIP-215 rules (cofactored
//!   equation, canonical `s`, non-canonical and small-order points accepted) with
//!   `ed25519-zebra`, so single and batch verification accept exactly the same signatures.
//! - `secp256k1`: ECDSA over the 32-byte sighash used directly as the message digest (no
//!   re-hashing), 33-byte compressed SEC1 keys, 64-byte compact `r || s` signatures that must be
//!   low-S (libsecp256k1 rejects high-S).
//!
//! Every transaction input signs [`sighash`]`= H("scalechain/sighash/v1" || chain_id || txid)`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::hash::{Hash, HashKind};

/// The domain tag of the transaction signature message.
pub const SIGHASH_TAG: &[u8] = b"scalechain/sighash/v1";

/// A signature scheme.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// Ed25519 under ZIP-215.
    Ed25519,
    /// secp256k1 ECDSA, low-S, compact.
    Secp256k1,
}

impl Scheme {
    /// Both schemes, in encoding order.
    pub const ALL: [Scheme; 2] = [Scheme::Ed25519, Scheme::Secp256k1];

    /// The byte that encodes the scheme.
    pub fn code(self) -> u8 {
        match self {
            Scheme::Ed25519 => 0,
            Scheme::Secp256k1 => 1,
        }
    }

    /// The scheme a byte names.
    pub fn from_code(b: u8) -> Option<Scheme> {
        Self::ALL.into_iter().find(|s| s.code() == b)
    }

    /// Public key length in bytes: 32 (Ed25519) or 33 (compressed secp256k1).
    pub fn pubkey_len(self) -> usize {
        match self {
            Scheme::Ed25519 => 32,
            Scheme::Secp256k1 => 33,
        }
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Ed25519 => "ed25519",
            Scheme::Secp256k1 => "secp256k1",
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown signature scheme {s:?} (expected ed25519 or secp256k1)"))
    }
}

/// A public key's bytes, tagged with its scheme. Only the first `scheme.pubkey_len()` bytes are
/// meaningful; the rest are zero. Whether the bytes are a valid point is checked when verifying.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PubKey {
    scheme: Scheme,
    bytes: [u8; 33],
}

impl PubKey {
    /// A key from bytes of the right length for the scheme.
    pub fn from_slice(scheme: Scheme, b: &[u8]) -> Option<PubKey> {
        if b.len() != scheme.pubkey_len() {
            return None;
        }
        let mut bytes = [0u8; 33];
        bytes[..b.len()].copy_from_slice(b);
        Some(PubKey { scheme, bytes })
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The key bytes (32 or 33 of them).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.scheme.pubkey_len()]
    }

    /// `H(pubkey bytes)`: what an output's lock commits to.
    pub fn hash(&self, kind: HashKind) -> Hash {
        kind.hash(self.as_bytes())
    }
}

impl fmt::Debug for PubKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PubKey({}:{})", self.scheme, hex::encode(self.as_bytes()))
    }
}

/// A 64-byte signature (Ed25519 `R || s`, or ECDSA compact `r || s`).
pub type Signature = [u8; 64];

/// Why a signature did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
pub enum SigError {
    /// The public key bytes are not a valid key for the scheme.
    #[error("public key is not a valid {0} point")]
    BadKey(Scheme),
    /// The signature bytes are malformed (e.g. non-canonical scalar, r or s out of range).
    #[error("signature bytes are malformed")]
    Malformed,
    /// The signature is well formed but does not verify.
    #[error("signature does not verify")]
    Invalid,
}

/// A secret key of either scheme.
// The Ed25519 variant carries its expanded key (~200 bytes); keys are few, so no box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub enum SecretKey {
    /// Ed25519 signing key.
    Ed25519(ed25519_zebra::SigningKey),
    /// secp256k1 secret scalar.
    Secp256k1(secp256k1::SecretKey),
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({}, public {:?})", self.scheme(), self.public())
    }
}

impl SecretKey {
    /// The key derived from 32 seed bytes. For secp256k1 a seed that is not a valid scalar
    /// (probability ~2^-128) is re-hashed with SHA-256 until it is.
    pub fn from_seed(scheme: Scheme, seed: [u8; 32]) -> SecretKey {
        match scheme {
            Scheme::Ed25519 => SecretKey::Ed25519(ed25519_zebra::SigningKey::from(seed)),
            Scheme::Secp256k1 => {
                let mut s = seed;
                loop {
                    if let Ok(k) = secp256k1::SecretKey::from_secret_bytes(s) {
                        return SecretKey::Secp256k1(k);
                    }
                    s = HashKind::Sha256.hash(&s).0;
                }
            }
        }
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        match self {
            SecretKey::Ed25519(_) => Scheme::Ed25519,
            SecretKey::Secp256k1(_) => Scheme::Secp256k1,
        }
    }

    /// The public key.
    pub fn public(&self) -> PubKey {
        match self {
            SecretKey::Ed25519(k) => {
                let vk: [u8; 32] = ed25519_zebra::VerificationKeyBytes::from(k.verification_key()).into();
                PubKey::from_slice(Scheme::Ed25519, &vk).expect("ed25519 keys are 32 bytes")
            }
            SecretKey::Secp256k1(k) => {
                let pk = secp256k1::PublicKey::from_secret_key(k).serialize();
                PubKey::from_slice(Scheme::Secp256k1, &pk).expect("compressed keys are 33 bytes")
            }
        }
    }

    /// Signs a 32-byte message (a sighash). ECDSA signatures are RFC 6979 and low-S.
    pub fn sign(&self, msg: &Hash) -> Signature {
        match self {
            SecretKey::Ed25519(k) => k.sign(msg.as_bytes()).to_bytes(),
            SecretKey::Secp256k1(k) => {
                let m = secp256k1::Message::from_digest(msg.0);
                secp256k1::ecdsa::sign(m, k).serialize_compact()
            }
        }
    }
}

/// The message every input of a transaction signs.
pub fn sighash(kind: HashKind, chain_id: &Hash, txid: &Hash) -> Hash {
    kind.hash_parts(&[SIGHASH_TAG, chain_id.as_bytes(), txid.as_bytes()])
}

/// Verifies one signature (single verification; see the consensus crate for batches).
pub fn verify(key: &PubKey, msg: &Hash, sig: &Signature) -> Result<(), SigError> {
    match key.scheme() {
        Scheme::Ed25519 => verify_ed25519(key.as_bytes(), msg.as_bytes(), sig),
        Scheme::Secp256k1 => verify_secp256k1(key.as_bytes(), msg, sig),
    }
}

/// ZIP-215 single verification of an Ed25519 signature over arbitrary message bytes.
pub fn verify_ed25519(key: &[u8], msg: &[u8], sig: &Signature) -> Result<(), SigError> {
    let vk = ed25519_zebra::VerificationKey::try_from(key).map_err(|_| SigError::BadKey(Scheme::Ed25519))?;
    let sig = ed25519_zebra::Signature::from_bytes(sig);
    vk.verify(&sig, msg).map_err(|e| match e {
        ed25519_zebra::Error::InvalidSignature => SigError::Invalid,
        ed25519_zebra::Error::MalformedPublicKey => SigError::BadKey(Scheme::Ed25519),
        _ => SigError::Malformed,
    })
}

/// Verifies a low-S compact ECDSA signature over a 32-byte digest with a compressed key.
pub fn verify_secp256k1(key: &[u8], digest: &Hash, sig: &Signature) -> Result<(), SigError> {
    let pk = secp256k1::PublicKey::from_slice(key).map_err(|_| SigError::BadKey(Scheme::Secp256k1))?;
    let sig = secp256k1::ecdsa::Signature::from_compact(sig).map_err(|_| SigError::Malformed)?;
    secp256k1::ecdsa::verify(&sig, secp256k1::Message::from_digest(digest.0), &pk)
        .map_err(|_| SigError::Invalid)
}

pub use crate::keycache::Ed25519Item;

/// ZIP-215 batch verification: `Ok` iff every signature verifies, with the same verdict as
/// [`verify_ed25519`] on each (the cofactored equation makes batch and single agree).
///
/// Keys come from the process's cache of decompressed keys
/// ([`Ed25519KeyCache::global`](crate::keycache::Ed25519KeyCache::global)), which never changes
/// a verdict: [`verify_ed25519_batch_zebra`] is the same check without it.
///
/// `rng` draws the batch's random coefficients. It must be unpredictable to whoever made the
/// signatures (an adversary who knows the coefficients could forge a batch), so production
/// callers pass an OS-seeded generator; tests may pass a seeded one.
pub fn verify_ed25519_batch<R: rand_core::CryptoRng>(
    items: &[Ed25519Item<'_>],
    rng: R,
) -> Result<(), SigError> {
    crate::keycache::verify_batch(items, rng, crate::keycache::Ed25519KeyCache::global())
        .then_some(())
        .ok_or(SigError::Invalid)
}

/// [`verify_ed25519_batch`] by `ed25519-zebra`'s batch verifier, which decompresses every
/// distinct key of every batch: the reference the cached verifier is tested and measured
/// against.
pub fn verify_ed25519_batch_zebra<R: rand_core::CryptoRng>(
    items: &[Ed25519Item<'_>],
    rng: R,
) -> Result<(), SigError> {
    crate::keycache::verify_batch_zebra(items, rng).then_some(()).ok_or(SigError::Invalid)
}

/// The Ed25519 arithmetic backend curve25519-dalek selects on this CPU, as it selects it:
/// `avx512ifma` when the build compiled that backend (the workspace's `.cargo/config.toml`
/// sets `--cfg curve25519_dalek_backend="avx512"`; `-C target-cpu=native` on an IFMA CPU does
/// too) and the CPU has AVX-512 IFMA and VL; else `avx2` when the CPU has AVX2; else `serial`.
/// The choice is made at run time, so one binary runs on every x86-64 CPU.
pub fn ed25519_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        let compiled_avx512 = cfg!(curve25519_dalek_backend = "avx512")
            || (cfg!(target_feature = "avx512ifma") && cfg!(target_feature = "avx512vl"));
        let forced_serial =
            cfg!(curve25519_dalek_backend = "serial") || cfg!(curve25519_dalek_backend = "fiat");
        if compiled_avx512
            && std::arch::is_x86_feature_detected!("avx512ifma")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return "avx512ifma";
        }
        if !forced_serial && std::arch::is_x86_feature_detected!("avx2") {
            return "avx2";
        }
    }
    "serial"
}

/// The SHA-256 backend the `sha2` crate selects on this CPU: `sha-ni` (x86 SHA extensions,
/// detected at run time) unless the build chose the portable code (`--cfg sha2_backend="soft"`),
/// else `soft`.
pub fn sha256_backend() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if !cfg!(sha2_backend = "soft") && std::arch::is_x86_feature_detected!("sha") {
            return "sha-ni";
        }
    }
    "soft"
}

/// Both backends in one phrase, for `--version` and the study's reports:
/// `ed25519 avx512ifma, sha256 sha-ni`.
pub fn backends() -> String {
    format!("ed25519 {}, sha256 {}", ed25519_backend(), sha256_backend())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backends_named_are_those_the_cpu_and_build_allow() {
        let ed = ed25519_backend();
        assert!(["avx512ifma", "avx2", "serial"].contains(&ed), "{ed}");
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let ifma_cpu = has!("avx512ifma") && has!("avx512vl");
            assert!(ed != "avx512ifma" || ifma_cpu);
            assert!(ed != "avx2" || has!("avx2"));
            // The workspace builds the IFMA backend in (`.cargo/config.toml`), so a CPU with
            // IFMA gets it. CI's portable run (RUSTFLAGS set, which replaces the config's
            // flags) says what it expects instead.
            let expected = std::env::var("SCALECHAIN_EXPECT_ED25519").unwrap_or_else(|_| {
                (if ifma_cpu {
                    "avx512ifma"
                } else if has!("avx2") {
                    "avx2"
                } else {
                    "serial"
                })
                .to_string()
            });
            assert_eq!(ed, expected, "the Ed25519 backend this build selects");
        }
        assert!(backends().starts_with(&format!("ed25519 {ed}, sha256 ")));
    }

    #[test]
    fn sign_verify_both_schemes() {
        for scheme in Scheme::ALL {
            let k = SecretKey::from_seed(scheme, [7; 32]);
            let pk = k.public();
            assert_eq!(pk.as_bytes().len(), scheme.pubkey_len());
            let msg = sighash(HashKind::Sha256, &Hash([1; 32]), &Hash([2; 32]));
            let sig = k.sign(&msg);
            assert_eq!(verify(&pk, &msg, &sig), Ok(()));
            let other = sighash(HashKind::Sha256, &Hash([9; 32]), &Hash([2; 32]));
            assert!(verify(&pk, &other, &sig).is_err(), "{scheme}: another chain id must fail");
            let mut bad = sig;
            bad[10] ^= 1;
            assert!(verify(&pk, &msg, &bad).is_err());
        }
    }

    #[test]
    fn secp256k1_rejects_high_s() {
        let k = SecretKey::from_seed(Scheme::Secp256k1, [3; 32]);
        let msg = Hash([5; 32]);
        let sig = k.sign(&msg);
        // s' = n - s is the high-S twin of the same signature.
        let n: [u8; 32] = hex::decode("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
            .expect("constant hex")
            .try_into()
            .expect("32 bytes");
        let mut s = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = n[i] as i16 - sig[32 + i] as i16 - borrow;
            s[i] = d.rem_euclid(256) as u8;
            borrow = i16::from(d < 0);
        }
        let mut high = sig;
        high[32..].copy_from_slice(&s);
        assert_eq!(verify(&k.public(), &msg, &sig), Ok(()));
        assert!(verify(&k.public(), &msg, &high).is_err());
    }
}
