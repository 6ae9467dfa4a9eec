//! Secret seeds, deterministic key derivation, and the wallet's secret payload.
//!
//! Derivation: key `i` of a scheme is [`SecretKey::from_seed`]`(scheme, seed)` with
//!
//! ```text
//! seed = SHA-256( "scalechain/wallet/derive/v1" || master_seed || scheme:u8 || i:u32 LE )
//! ```
//!
//! (SHA-256 always, whatever the chain's hash function, so one master seed gives the same keys on
//! every chain.) A backup of the master seed and the number of keys derived per scheme restores
//! every derived key. Seeds imported from elsewhere (for example the public devnet premine keys)
//! are kept beside them.
//!
//! The secret payload (the plaintext the key store encrypts), version 1:
//!
//! ```text
//! payload = version:u8 (= 1) master_seed:32
//!           n_ed25519:u32 n_secp256k1:u32          keys derived per scheme
//!           n_imported:u32 (scheme:u8 seed:32) * n_imported
//! ```
//!
//! Integers are little-endian; counts are at most [`MAX_KEYS`]; nothing may follow.

use std::fmt;

use scalechain_types::codec::{DecodeError, Reader};
use scalechain_types::{HashKind, PubKey, Scheme, SecretKey};
use zeroize::Zeroize;

/// The domain tag of key derivation.
pub const DERIVE_TAG: &[u8] = b"scalechain/wallet/derive/v1";
/// The most keys of one kind (derived ed25519, derived secp256k1, imported) a wallet holds.
pub const MAX_KEYS: u32 = 100_000;
/// The secret payload's version.
pub const PAYLOAD_VERSION: u8 = 1;

/// 32 secret bytes: a master seed or a key seed. Kept on the heap, zeroized on drop, never shown
/// by `Debug`.
pub struct Seed(Box<[u8; 32]>);

impl Seed {
    /// Seed length in bytes.
    pub const LEN: usize = 32;

    /// A seed from bytes. The caller's copy is the caller's to zeroize.
    pub fn from_bytes(bytes: [u8; 32]) -> Seed {
        Seed(Box::new(bytes))
    }

    /// A seed from 64 lowercase or uppercase hex digits (surrounding whitespace ignored).
    pub fn from_hex(s: &str) -> Result<Seed, SeedError> {
        let s = s.trim();
        if s.len() != 2 * Self::LEN {
            return Err(SeedError::Length { found: s.len() });
        }
        let mut seed = Seed(Box::new([0u8; 32]));
        hex::decode_to_slice(s, &mut seed.0[..]).map_err(|_| SeedError::NotHex)?;
        Ok(seed)
    }

    /// A fresh seed from the operating system's random number generator.
    pub fn random() -> Result<Seed, crate::KeystoreError> {
        let mut seed = Seed(Box::new([0u8; 32]));
        crate::keystore::random_bytes(&mut seed.0[..])?;
        Ok(seed)
    }

    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The seed as 64 lowercase hex digits (a secret: handle with care).
    pub fn to_hex(&self) -> zeroize::Zeroizing<String> {
        zeroize::Zeroizing::new(hex::encode(&self.0[..]))
    }
}

impl Clone for Seed {
    fn clone(&self) -> Seed {
        let mut s = Seed(Box::new([0u8; 32]));
        s.0.copy_from_slice(&self.0[..]);
        s
    }
}

impl Drop for Seed {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl PartialEq for Seed {
    fn eq(&self, other: &Seed) -> bool {
        // Not secret-dependent timing that matters here: seeds are only compared in tests and
        // to deduplicate imports.
        self.0 == other.0
    }
}

impl Eq for Seed {}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Seed(<redacted>)")
    }
}

/// Why a string is not a seed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    /// Not 64 characters long.
    #[error("a seed is 64 hex digits; got {found} characters")]
    Length {
        /// Characters found.
        found: usize,
    },
    /// Not hex.
    #[error("a seed is 64 hex digits; got a non-hex character")]
    NotHex,
}

/// Names a key of the wallet.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum KeyId {
    /// Key `index` derived from the master seed for `scheme`.
    Derived {
        /// The scheme.
        scheme: Scheme,
        /// The derivation index.
        index: u32,
    },
    /// The `index`-th imported seed.
    Imported {
        /// Position among the imported seeds.
        index: u32,
    },
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyId::Derived { scheme, index } => write!(f, "{scheme}/{index}"),
            KeyId::Imported { index } => write!(f, "imported/{index}"),
        }
    }
}

/// The seed of derived key `index` of `scheme` (see the module docs).
pub fn derive_seed(master: &Seed, scheme: Scheme, index: u32) -> Seed {
    let mut h =
        HashKind::Sha256.hash_parts(&[DERIVE_TAG, master.as_bytes(), &[scheme.code()], &index.to_le_bytes()]);
    let seed = Seed::from_bytes(h.0);
    h.0.zeroize();
    seed
}

/// A secret key that is erased when dropped.
pub(crate) struct SigningKey(SecretKey);

impl SigningKey {
    pub fn from_seed(scheme: Scheme, seed: &Seed) -> SigningKey {
        SigningKey(SecretKey::from_seed(scheme, *seed.as_bytes()))
    }

    pub fn key(&self) -> &SecretKey {
        &self.0
    }

    pub fn public(&self) -> PubKey {
        self.0.public()
    }
}

impl Drop for SigningKey {
    fn drop(&mut self) {
        match &mut self.0 {
            SecretKey::Ed25519(k) => k.zeroize(),
            SecretKey::Secp256k1(k) => k.non_secure_erase(),
        }
    }
}

/// The wallet's secrets: what the key store encrypts.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Secrets {
    pub master: Seed,
    /// Keys derived so far, per scheme code (ed25519, secp256k1).
    pub derived: [u32; 2],
    pub imported: Vec<(Scheme, Seed)>,
}

impl Secrets {
    pub fn new(master: Seed) -> Secrets {
        Secrets { master, derived: [0, 0], imported: Vec::new() }
    }

    /// Every key, in a fixed order: derived ed25519, derived secp256k1, imported.
    pub fn key_ids(&self) -> impl Iterator<Item = KeyId> + '_ {
        Scheme::ALL
            .into_iter()
            .flat_map(move |scheme| {
                (0..self.derived[usize::from(scheme.code())])
                    .map(move |index| KeyId::Derived { scheme, index })
            })
            .chain((0..self.imported.len() as u32).map(|index| KeyId::Imported { index }))
    }

    /// The seed and scheme of a key, if the wallet has it.
    pub fn seed_of(&self, id: KeyId) -> Option<(Scheme, Seed)> {
        match id {
            KeyId::Derived { scheme, index } => (index < self.derived[usize::from(scheme.code())])
                .then(|| (scheme, derive_seed(&self.master, scheme, index))),
            KeyId::Imported { index } => {
                self.imported.get(index as usize).map(|(scheme, seed)| (*scheme, seed.clone()))
            }
        }
    }

    /// The payload encoding (see the module docs), in a buffer that is zeroized on drop.
    pub fn encode(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let len = 1 + 32 + 4 + 4 + 4 + self.imported.len() * 33;
        let mut out = zeroize::Zeroizing::new(Vec::with_capacity(len));
        out.push(PAYLOAD_VERSION);
        out.extend_from_slice(self.master.as_bytes());
        out.extend_from_slice(&self.derived[0].to_le_bytes());
        out.extend_from_slice(&self.derived[1].to_le_bytes());
        out.extend_from_slice(&(self.imported.len() as u32).to_le_bytes());
        for (scheme, seed) in &self.imported {
            out.push(scheme.code());
            out.extend_from_slice(seed.as_bytes());
        }
        out
    }

    /// Decodes a payload: bounded, strict (no trailing bytes, known version and schemes, counts
    /// within [`MAX_KEYS`]).
    pub fn decode(bytes: &[u8]) -> Result<Secrets, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u8("payload.version")?;
        if version != PAYLOAD_VERSION {
            return Err(r.invalid("payload.version", format!("unknown payload version {version}")));
        }
        let master = read_seed(&mut r, "payload.master_seed")?;
        let mut derived = [0u32; 2];
        for (slot, field) in derived.iter_mut().zip(["payload.n_ed25519", "payload.n_secp256k1"]) {
            let n = r.u32(field)?;
            if n > MAX_KEYS {
                return Err(r.invalid(field, format!("{n} keys exceed the limit {MAX_KEYS}")));
            }
            *slot = n;
        }
        let n = r.count("payload.imported", 33)?;
        if n > MAX_KEYS as usize {
            return Err(r.invalid("payload.imported", format!("{n} keys exceed the limit {MAX_KEYS}")));
        }
        let mut imported = Vec::with_capacity(n);
        for _ in 0..n {
            let code = r.u8("payload.imported.scheme")?;
            let scheme = Scheme::from_code(code).ok_or_else(|| {
                r.invalid("payload.imported.scheme", format!("unknown signature scheme {code}"))
            })?;
            imported.push((scheme, read_seed(&mut r, "payload.imported.seed")?));
        }
        r.finish()?;
        Ok(Secrets { master, derived, imported })
    }
}

fn read_seed(r: &mut Reader<'_>, field: &'static str) -> Result<Seed, DecodeError> {
    let mut seed = Seed(Box::new([0u8; 32]));
    seed.0.copy_from_slice(r.bytes(field, 32)?);
    Ok(seed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn derivation_is_deterministic_and_separated() {
        let m = Seed::from_bytes([1; 32]);
        assert_eq!(derive_seed(&m, Scheme::Ed25519, 0), derive_seed(&m, Scheme::Ed25519, 0));
        assert_ne!(derive_seed(&m, Scheme::Ed25519, 0), derive_seed(&m, Scheme::Ed25519, 1));
        assert_ne!(derive_seed(&m, Scheme::Ed25519, 0), derive_seed(&m, Scheme::Secp256k1, 0));
        assert_ne!(
            derive_seed(&m, Scheme::Ed25519, 0),
            derive_seed(&Seed::from_bytes([2; 32]), Scheme::Ed25519, 0)
        );
        let expect = HashKind::Sha256.hash_parts(&[DERIVE_TAG, &[1; 32], &[0], &0u32.to_le_bytes()]);
        assert_eq!(derive_seed(&m, Scheme::Ed25519, 0).as_bytes(), &expect.0);
    }

    #[test]
    fn payload_round_trip_and_rejections() {
        let mut s = Secrets::new(Seed::from_bytes([9; 32]));
        s.derived = [3, 1];
        s.imported.push((Scheme::Secp256k1, Seed::from_bytes([4; 32])));
        let enc = s.encode();
        assert_eq!(enc.len(), 1 + 32 + 12 + 33);
        assert_eq!(Secrets::decode(&enc).unwrap(), s);
        let ids: Vec<String> = s.key_ids().map(|k| k.to_string()).collect();
        assert_eq!(ids, ["ed25519/0", "ed25519/1", "ed25519/2", "secp256k1/0", "imported/0"]);

        let mut trailing = enc.to_vec();
        trailing.push(0);
        assert!(Secrets::decode(&trailing).is_err());
        let mut bad_version = enc.to_vec();
        bad_version[0] = 2;
        assert_eq!(Secrets::decode(&bad_version).unwrap_err().field, "payload.version");
        let mut bad_scheme = enc.to_vec();
        bad_scheme[45] = 7;
        assert_eq!(Secrets::decode(&bad_scheme).unwrap_err().field, "payload.imported.scheme");
        let mut huge_count = enc.to_vec();
        huge_count[41..45].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Secrets::decode(&huge_count).unwrap_err().field, "payload.imported");
        let mut too_many = enc.to_vec();
        too_many[33..37].copy_from_slice(&(MAX_KEYS + 1).to_le_bytes());
        assert_eq!(Secrets::decode(&too_many).unwrap_err().field, "payload.n_ed25519");
        assert!(Secrets::decode(&enc[..20]).is_err());
    }

    #[test]
    fn seed_hex_and_debug() {
        let s = Seed::from_hex(&"ab".repeat(32)).unwrap();
        assert_eq!(s.as_bytes(), &[0xab; 32]);
        assert_eq!(&*s.to_hex(), &"ab".repeat(32));
        assert_eq!(Seed::from_hex("abc"), Err(SeedError::Length { found: 3 }));
        assert_eq!(Seed::from_hex(&"zz".repeat(32)), Err(SeedError::NotHex));
        assert_eq!(format!("{s:?}"), "Seed(<redacted>)");
    }

    proptest::proptest! {
        #[test]
        fn payload_encoding_round_trips(
            master in proptest::prelude::any::<[u8; 32]>(),
            n_ed in 0u32..=MAX_KEYS,
            n_secp in 0u32..=MAX_KEYS,
            imported in proptest::collection::vec((proptest::prelude::any::<bool>(), proptest::prelude::any::<[u8; 32]>()), 0..8),
        ) {
            let mut s = Secrets::new(Seed::from_bytes(master));
            s.derived = [n_ed, n_secp];
            for (secp, seed) in imported {
                let scheme = if secp { Scheme::Secp256k1 } else { Scheme::Ed25519 };
                s.imported.push((scheme, Seed::from_bytes(seed)));
            }
            let enc = s.encode();
            proptest::prop_assert_eq!(enc.len(), 45 + 33 * s.imported.len());
            proptest::prop_assert_eq!(Secrets::decode(&enc).unwrap(), s);
        }

        #[test]
        fn payload_decoding_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            if let Ok(s) = Secrets::decode(&bytes) {
                proptest::prop_assert_eq!(&s.encode()[..], &bytes[..]);
            }
        }
    }
}
