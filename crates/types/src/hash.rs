//! 32-byte digests and the chain's pluggable hash function.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::Digest;

/// A 32-byte digest. Displayed and parsed as lowercase hex of the bytes in their natural order;
/// ordered as its bytes are, lexicographically.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// The digest as four big-endian words: compared in order, they order as the bytes do.
    fn words(&self) -> [u64; 4] {
        std::array::from_fn(|i| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&self.0[i * 8..i * 8 + 8]);
            u64::from_be_bytes(w)
        })
    }
}

/// The bytes' lexicographic order, compared a word at a time: the derived order calls `memcmp`
/// for each comparison, which costs more than the comparison itself, and the pool, the UTXO
/// set and the stores compare hashes millions of times (a simulated 1,000-node run spent 3% of
/// its time in those calls).
impl Ord for Hash {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words().cmp(&other.words())
    }
}

impl PartialOrd for Hash {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash {
    /// The all-zero hash (the genesis block's `prev_hash`).
    pub const ZERO: Hash = Hash([0; 32]);

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The first eight hex digits, for logs and pictures.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..4])
    }

    /// Writes the 64 lowercase hex digits into `buf` and returns them, without allocating.
    fn hex_into<'a>(&self, buf: &'a mut [u8; 64]) -> &'a str {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for (pair, b) in buf.chunks_exact_mut(2).zip(self.0) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0x0f)];
        }
        // Every byte written is an ASCII hex digit.
        std::str::from_utf8(buf).unwrap_or_default()
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hex_into(&mut [0; 64]))
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({self})")
    }
}

/// Why a string is not a hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected 64 lowercase hex digits, got {0:?}")]
pub struct ParseHashError(pub String);

impl FromStr for Hash {
    type Err = ParseHashError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits: &[u8; 64] = s.as_bytes().try_into().map_err(|_| ParseHashError(truncate(s)))?;
        let mut out = [0u8; 32];
        // Any byte not a lowercase hex digit sets the high bit of `bad`.
        let mut bad = 0u8;
        for (b, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
            bad |= hi | lo;
            *b = hi << 4 | (lo & 0x0f);
        }
        if bad & 0x80 != 0 {
            return Err(ParseHashError(truncate(s)));
        }
        Ok(Hash(out))
    }
}

/// The value of each lowercase hex digit; 0xff for every other byte.
const NIBBLE: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

impl Serialize for Hash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.hex_into(&mut [0; 64]))
    }
}

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// Parses the string where the deserializer holds it (no copy when it can lend it).
        struct HexVisitor;
        impl serde::de::Visitor<'_> for HexVisitor {
            type Value = Hash;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("64 lowercase hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Hash, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(HexVisitor)
    }
}

/// The chain's hash function, fixed at genesis. All three produce 32-byte digests.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HashKind {
    /// SHA-256 (FIPS 180-4). Uses SHA-NI where the CPU has it.
    #[default]
    Sha256,
    /// SHA-512/256 (FIPS 180-4 §5.3.6: SHA-512 with its own IV, truncated to 256 bits).
    Sha512_256,
    /// BLAKE3 with its default 32-byte output.
    Blake3,
}

impl HashKind {
    /// Every hash function, in encoding order.
    pub const ALL: [HashKind; 3] = [HashKind::Sha256, HashKind::Sha512_256, HashKind::Blake3];

    /// The byte that encodes this function in chain parameters.
    pub fn code(self) -> u8 {
        match self {
            HashKind::Sha256 => 0,
            HashKind::Sha512_256 => 1,
            HashKind::Blake3 => 2,
        }
    }

    /// The function a parameter byte names, if any.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            HashKind::Sha256 => "sha256",
            HashKind::Sha512_256 => "sha512_256",
            HashKind::Blake3 => "blake3",
        }
    }

    /// Hashes one byte string.
    pub fn hash(self, data: &[u8]) -> Hash {
        match self {
            // One-shot: no boxed incremental state for the common case.
            HashKind::Blake3 => Hash(*blake3::hash(data).as_bytes()),
            _ => {
                let mut h = self.hasher();
                h.update(data);
                h.finish()
            }
        }
    }

    /// Hashes the concatenation of several byte strings.
    pub fn hash_parts(self, parts: &[&[u8]]) -> Hash {
        let mut h = self.hasher();
        for p in parts {
            h.update(p);
        }
        h.finish()
    }

    /// An incremental hasher.
    pub fn hasher(self) -> Hasher {
        match self {
            HashKind::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            HashKind::Sha512_256 => Hasher::Sha512_256(sha2::Sha512_256::new()),
            HashKind::Blake3 => Hasher::Blake3(Box::default()),
        }
    }
}

impl fmt::Display for HashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HashKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown hash function {s:?} (expected sha256, sha512_256 or blake3)"))
    }
}

/// An incremental hasher for one of the chain's hash functions.
#[derive(Clone)]
pub enum Hasher {
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-512/256.
    Sha512_256(sha2::Sha512_256),
    /// BLAKE3 (boxed: its state is large).
    Blake3(Box<blake3::Hasher>),
}

impl Hasher {
    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha512_256(h) => h.update(data),
            Hasher::Blake3(h) => {
                h.update(data);
            }
        }
    }

    /// The digest of everything fed so far.
    pub fn finish(self) -> Hash {
        match self {
            Hasher::Sha256(h) => Hash(h.finalize().into()),
            Hasher::Sha512_256(h) => Hash(h.finalize().into()),
            Hasher::Blake3(h) => Hash(*h.finalize().as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_rejects_uppercase() {
        let h = HashKind::Sha256.hash(b"abc");
        assert_eq!(h.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(h.to_string().parse::<Hash>(), Ok(h));
        assert!(h.to_string().to_uppercase().parse::<Hash>().is_err());
        assert!("abc".parse::<Hash>().is_err());
    }

    proptest::proptest! {
        /// Hashes order as their bytes do, lexicographically, also when they share a prefix of
        /// any length (`b` is `a` with one byte changed at `at`).
        #[test]
        fn hashes_order_as_their_bytes(
            a in proptest::array::uniform32(proptest::num::u8::ANY),
            other in proptest::array::uniform32(proptest::num::u8::ANY),
            at in 0usize..32,
            byte in proptest::num::u8::ANY,
        ) {
            let mut b = a;
            b[at] = byte;
            for (x, y) in [(a, b), (b, a), (a, other), (a, a)] {
                proptest::prop_assert_eq!(Hash(x).cmp(&Hash(y)), x.cmp(&y));
                proptest::prop_assert_eq!(Hash(x).partial_cmp(&Hash(y)), Some(x.cmp(&y)));
            }
        }

        /// Display, `FromStr` and serde agree with the `hex` crate on every digest, and serde
        /// refuses what parsing refuses.
        #[test]
        fn hex_forms_agree(bytes in proptest::array::uniform32(proptest::num::u8::ANY)) {
            let h = Hash(bytes);
            let hex = hex::encode(bytes);
            proptest::prop_assert_eq!(h.to_string(), hex.clone());
            proptest::prop_assert_eq!(serde_json::to_string(&h).unwrap(), format!("\"{hex}\""));
            proptest::prop_assert_eq!(serde_json::from_str::<Hash>(&format!("\"{hex}\"")).unwrap(), h);
            let upper = format!("\"{}\"", hex.to_uppercase());
            proptest::prop_assert_eq!(serde_json::from_str::<Hash>(&upper).is_ok(), hex == hex.to_uppercase());
            let short = format!("\"{}\"", &hex[1..]);
            proptest::prop_assert!(serde_json::from_str::<Hash>(&short).is_err());
        }

        /// A string that is not 64 lowercase hex digits is refused, whichever byte is wrong.
        #[test]
        fn one_wrong_byte_is_refused(
            bytes in proptest::array::uniform32(proptest::num::u8::ANY),
            at in 0usize..64,
            wrong in proptest::num::u8::ANY,
        ) {
            let mut hex = hex::encode(bytes).into_bytes();
            hex[at] = wrong;
            let valid = wrong.is_ascii_digit() || (b'a'..=b'f').contains(&wrong);
            match String::from_utf8(hex) {
                Ok(s) => proptest::prop_assert_eq!(s.parse::<Hash>().is_ok(), valid),
                Err(_) => proptest::prop_assert!(!valid),
            }
        }
    }

    #[test]
    fn fips_180_4_sha512_256_examples() {
        // FIPS 180-4 example values (NIST CSRC "SHA512_256.pdf"): "abc" and the two-block message.
        assert_eq!(
            HashKind::Sha512_256.hash(b"abc").to_string(),
            "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23"
        );
        assert_eq!(
            HashKind::Sha512_256
                .hash(b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")
                .to_string(),
            "3928e184fb8690f840da3988121d31be65cb9d3ef83ee6146feac861e19b563a"
        );
    }

    #[test]
    fn parts_equal_concatenation() {
        for k in HashKind::ALL {
            assert_eq!(k.hash_parts(&[b"ab", b"", b"c"]), k.hash(b"abc"));
            assert_eq!(k.name().parse::<HashKind>(), Ok(k));
            assert_eq!(HashKind::from_code(k.code()), Some(k));
        }
        assert!(HashKind::from_code(3).is_none());
    }
}
