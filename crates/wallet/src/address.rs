//! Addresses: a [`Lock`] written as a bech32m string whose human-readable part names the network
//! and whose version byte names the chain's hash function and the key's signature scheme.
//!
//! ```text
//! address = hrp "1" data checksum            (BIP 173 layout, BIP 350 bech32m checksum)
//! data    = base32( version:u8 || pubkey_hash:32 )      33 bytes -> 53 characters
//! version = hash_code << 4 | scheme_code
//! ```
//!
//! - `hrp` is the network's prefix: [`AddressHrp::MAIN`] (`sc`) or [`AddressHrp::DEVNET`]
//!   (`scdev`), or any other valid prefix of at most [`AddressHrp::MAX_LEN`] characters.
//! - `version`'s high four bits are the code of the hash function that made `pubkey_hash` (the
//!   chain's: `0` sha256, `1` sha512_256, `2` blake3, as in the chain parameters), its low four
//!   bits the scheme byte of the protocol (`0` ed25519, `1` secp256k1). A pubkey hash means
//!   nothing on a chain hashing with another function: coins sent there could never be spent,
//!   so an address of another hash function is refused ([`AddressError::WrongHash`]) like one of
//!   another network. SHA-256 addresses have the versions `0` and `1` of the first address
//!   format. Other codes are reserved and rejected today.
//! - The 53 data characters carry 265 bits; the one padding bit must be zero, so every lock has
//!   exactly one address per network and hash function (addresses are written in lowercase; an
//!   all-uppercase address is accepted, as BIP 173 asks).
//!
//! The checksum detects any error in up to four characters, so a single mistyped character is
//! always caught. [`Address::parse`] reports what was wrong, and where.

use std::fmt;

use bech32::primitives::decode::{CheckedHrpstring, CheckedHrpstringError, ChecksumError};
use bech32::{Bech32m, Hrp};
use scalechain_types::{Hash, HashKind, Lock, Scheme};

/// The bech32 data alphabet.
const CHARSET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
/// Bytes of the address payload: the version byte and the 32-byte pubkey hash.
pub const PAYLOAD_LEN: usize = 33;
/// Characters of the data part: 53 for the payload, 6 for the checksum.
const DATA_CHARS: usize = 53 + 6;
/// The longest string [`Address::parse`] looks at (BIP 173's limit).
pub const MAX_ADDRESS_LEN: usize = 90;

/// Why a string is not an address of the expected network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The string is longer than any address.
    #[error("address is {len} characters long; an address has at most {max}")]
    TooLong {
        /// Characters in the string.
        len: usize,
        /// The most an address may have.
        max: usize,
    },
    /// There is no `1` between the prefix and the data.
    #[error("address has no '1' separating the network prefix from the data")]
    MissingSeparator,
    /// A character outside the address alphabet.
    #[error("address has the invalid character {ch:?} at position {position}")]
    BadCharacter {
        /// The character.
        ch: char,
        /// Its position (0-based, in characters).
        position: usize,
    },
    /// Upper and lower case letters mixed.
    #[error("address mixes upper and lower case letters")]
    MixedCase,
    /// The network prefix itself is malformed (empty, too long, not printable ASCII).
    #[error("address prefix is malformed: {0}")]
    BadPrefix(String),
    /// The checksum does not match: some character was mistyped.
    #[error("address checksum is wrong (a character was mistyped or the address is not bech32m)")]
    BadChecksum,
    /// A valid address, but of another network.
    #[error("address is for network {found:?}, expected {expected:?}")]
    WrongNetwork {
        /// The prefix this network uses.
        expected: String,
        /// The prefix the address has.
        found: String,
    },
    /// The data part has the wrong number of characters.
    #[error("address data has {found} characters; an address has {expected}")]
    WrongLength {
        /// Characters expected after the separator (payload and checksum).
        expected: usize,
        /// Characters found.
        found: usize,
    },
    /// The version byte names no known hash function or signature scheme.
    #[error("address version byte {0} names no known hash function and signature scheme")]
    UnknownVersion(u8),
    /// A valid address, but for a chain hashing with another function: its coins could never
    /// be spent here.
    #[error(
        "address is for a chain hashing with {found}, and this chain uses {expected} (coins sent \
         to it could never be spent)"
    )]
    WrongHash {
        /// The chain's hash function.
        expected: HashKind,
        /// The address's.
        found: HashKind,
    },
    /// The padding bit after the payload is set: not the canonical encoding.
    #[error("address has non-zero padding bits (not a canonical encoding)")]
    NonZeroPadding,
}

/// A network's address prefix (bech32 human-readable part), stored in lowercase.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddressHrp(Hrp);

impl AddressHrp {
    /// The prefix of the main network.
    pub const MAIN: &'static str = "sc";
    /// The prefix of devnets.
    pub const DEVNET: &'static str = "scdev";
    /// The longest prefix allowed, so that addresses stay within [`MAX_ADDRESS_LEN`].
    pub const MAX_LEN: usize = MAX_ADDRESS_LEN - 1 - DATA_CHARS;

    /// A prefix from its text: 1 to [`AddressHrp::MAX_LEN`] printable ASCII characters (33–126),
    /// without upper-case letters.
    pub fn new(s: &str) -> Result<AddressHrp, AddressError> {
        if s.chars().count() > Self::MAX_LEN {
            return Err(AddressError::BadPrefix(format!(
                "{:?} is longer than {} characters",
                truncate(s),
                Self::MAX_LEN
            )));
        }
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(AddressError::BadPrefix(format!("{s:?} has upper-case letters")));
        }
        let hrp = Hrp::parse(s).map_err(|e| AddressError::BadPrefix(format!("{s:?}: {e}")))?;
        Ok(AddressHrp(hrp))
    }

    /// The main network's prefix, `sc`.
    pub fn main() -> AddressHrp {
        AddressHrp(Hrp::parse_unchecked(Self::MAIN))
    }

    /// The devnet prefix, `scdev`.
    pub fn devnet() -> AddressHrp {
        AddressHrp(Hrp::parse_unchecked(Self::DEVNET))
    }

    /// The prefix text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for AddressHrp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for AddressHrp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AddressHrp({})", self.as_str())
    }
}

/// The version byte of a lock made with `hash`.
pub fn version(hash: HashKind, scheme: Scheme) -> u8 {
    hash.code() << 4 | scheme.code()
}

/// A lock on a network whose chain hashes with `hash`: displays as its bech32m address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Address {
    hrp: AddressHrp,
    hash: HashKind,
    lock: Lock,
}

impl Address {
    /// The address of `lock` (its pubkey hash made with `hash`) on the network of `hrp`.
    pub fn new(hrp: AddressHrp, hash: HashKind, lock: Lock) -> Address {
        Address { hrp, hash, lock }
    }

    /// The hash function that made the lock's pubkey hash.
    pub fn hash(&self) -> HashKind {
        self.hash
    }

    /// The lock the address pays to.
    pub fn lock(&self) -> Lock {
        self.lock
    }

    /// The network prefix.
    pub fn hrp(&self) -> AddressHrp {
        self.hrp
    }

    /// The 33 payload bytes: the version byte, then the pubkey hash.
    pub fn payload(&self) -> [u8; PAYLOAD_LEN] {
        let mut p = [0u8; PAYLOAD_LEN];
        p[0] = version(self.hash, self.lock.scheme);
        p[1..].copy_from_slice(self.lock.pubkey_hash.as_bytes());
        p
    }

    /// Parses an address that must belong to the network of `expected` and a chain hashing with
    /// `hash`.
    ///
    /// Checks, in order: length, separator, characters and case, checksum (over the prefix too),
    /// network, data length, padding, version byte, hash function. The first failure is the
    /// error.
    pub fn parse(s: &str, expected: &AddressHrp, hash: HashKind) -> Result<Address, AddressError> {
        let len = s.chars().count();
        if len > MAX_ADDRESS_LEN {
            return Err(AddressError::TooLong { len, max: MAX_ADDRESS_LEN });
        }
        check_characters(s)?;
        let checked = CheckedHrpstring::new::<Bech32m>(s).map_err(map_bech32_error)?;
        let found = checked.hrp();
        if found != expected.0 {
            return Err(AddressError::WrongNetwork {
                expected: expected.as_str().to_string(),
                found: found.to_lowercase(),
            });
        }
        let data_chars = checked.data_part_ascii_no_checksum().len();
        if data_chars != DATA_CHARS - 6 {
            return Err(AddressError::WrongLength { expected: DATA_CHARS, found: data_chars + 6 });
        }
        if checked.validate_segwit_padding().is_err() {
            return Err(AddressError::NonZeroPadding);
        }
        let mut payload = [0u8; PAYLOAD_LEN];
        let mut n = 0;
        for b in checked.byte_iter() {
            // 53 characters carry exactly 33 whole bytes; bound the copy regardless.
            let slot = payload
                .get_mut(n)
                .ok_or(AddressError::WrongLength { expected: DATA_CHARS, found: data_chars + 6 })?;
            *slot = b;
            n += 1;
        }
        if n != PAYLOAD_LEN {
            return Err(AddressError::WrongLength { expected: DATA_CHARS, found: data_chars + 6 });
        }
        let v = payload[0];
        let (found, scheme) = HashKind::from_code(v >> 4)
            .zip(Scheme::from_code(v & 0x0f))
            .ok_or(AddressError::UnknownVersion(v))?;
        if found != hash {
            return Err(AddressError::WrongHash { expected: hash, found });
        }
        let mut pubkey_hash = [0u8; 32];
        pubkey_hash.copy_from_slice(&payload[1..]);
        Ok(Address { hrp: *expected, hash, lock: Lock { scheme, pubkey_hash: Hash(pubkey_hash) } })
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        bech32::encode_lower_to_fmt::<Bech32m, _>(f, self.hrp.0, &self.payload()).map_err(|_| fmt::Error)
    }
}

/// The address of `lock` (its pubkey hash made with `hash`) on the network of `hrp`, as a string.
pub fn encode_address(hrp: &AddressHrp, hash: HashKind, lock: &Lock) -> String {
    Address::new(*hrp, hash, *lock).to_string()
}

/// The lock an address of the network of `hrp`, for a chain hashing with `hash`, pays to.
pub fn parse_address(s: &str, hrp: &AddressHrp, hash: HashKind) -> Result<Lock, AddressError> {
    Address::parse(s, hrp, hash).map(|a| a.lock)
}

/// Finds the separator, then checks every character: the prefix must be printable ASCII, the data
/// part must use the bech32 alphabet, and letters must not mix cases. Reports the first offender
/// with its position, which the bech32 crate does not.
fn check_characters(s: &str) -> Result<(), AddressError> {
    let chars: Vec<char> = s.chars().collect();
    let Some(sep) = chars.iter().rposition(|&c| c == '1') else {
        return Err(AddressError::MissingSeparator);
    };
    for (position, &ch) in chars.iter().enumerate() {
        let ok = if position < sep {
            ch.is_ascii() && (33..=126).contains(&(ch as u32))
        } else if position == sep {
            true
        } else {
            ch.is_ascii() && CHARSET.contains(&(ch.to_ascii_lowercase() as u8))
        };
        if !ok {
            return Err(AddressError::BadCharacter { ch, position });
        }
    }
    let lower = chars.iter().any(|c| c.is_ascii_lowercase());
    let upper = chars.iter().any(|c| c.is_ascii_uppercase());
    if lower && upper {
        return Err(AddressError::MixedCase);
    }
    Ok(())
}

fn map_bech32_error(e: CheckedHrpstringError) -> AddressError {
    use bech32::primitives::decode::{CharError, UncheckedHrpstringError};
    match e {
        CheckedHrpstringError::Parse(UncheckedHrpstringError::Char(c)) => match c {
            CharError::MissingSeparator => AddressError::MissingSeparator,
            CharError::NothingAfterSeparator => AddressError::WrongLength { expected: DATA_CHARS, found: 0 },
            CharError::MixedCase => AddressError::MixedCase,
            CharError::InvalidChar(ch) => AddressError::BadCharacter { ch, position: 0 },
            other => AddressError::BadPrefix(other.to_string()),
        },
        CheckedHrpstringError::Parse(UncheckedHrpstringError::Hrp(h)) => {
            AddressError::BadPrefix(h.to_string())
        }
        CheckedHrpstringError::Checksum(ChecksumError::InvalidResidue(_)) => AddressError::BadChecksum,
        CheckedHrpstringError::Checksum(ChecksumError::InvalidLength) => {
            AddressError::WrongLength { expected: DATA_CHARS, found: 0 }
        }
        CheckedHrpstringError::Checksum(other) => AddressError::BadPrefix(other.to_string()),
        other => AddressError::BadPrefix(other.to_string()),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const SHA: HashKind = HashKind::Sha256;

    fn lock(scheme: Scheme, b: u8) -> Lock {
        Lock { scheme, pubkey_hash: Hash([b; 32]) }
    }

    #[test]
    fn round_trip_and_shape() {
        for (hrp, kind) in
            [AddressHrp::main(), AddressHrp::devnet()].into_iter().zip(HashKind::ALL.into_iter().cycle())
        {
            for scheme in Scheme::ALL {
                let l = lock(scheme, 0xa5);
                let s = encode_address(&hrp, kind, &l);
                assert!(s.starts_with(&format!("{hrp}1")), "{s}");
                assert_eq!(s.len(), hrp.as_str().len() + 1 + DATA_CHARS);
                assert_eq!(parse_address(&s, &hrp, kind), Ok(l));
                assert_eq!(parse_address(&s.to_uppercase(), &hrp, kind), Ok(l), "upper case is accepted");
            }
        }
    }

    #[test]
    fn typed_errors() {
        let dev = AddressHrp::devnet();
        let main = AddressHrp::main();
        let s = encode_address(&dev, SHA, &lock(Scheme::Ed25519, 1));
        assert_eq!(
            parse_address(&s, &main, SHA),
            Err(AddressError::WrongNetwork { expected: "sc".into(), found: "scdev".into() })
        );
        assert_eq!(parse_address("scdevqqqq", &dev, SHA), Err(AddressError::MissingSeparator));
        let mut bad = s.clone();
        bad.replace_range(10..11, "b");
        assert_eq!(parse_address(&bad, &dev, SHA), Err(AddressError::BadCharacter { ch: 'b', position: 10 }));
        let mut mixed = s.clone();
        mixed.replace_range(10..11, &s[10..11].to_uppercase());
        if s[10..11] != s[10..11].to_uppercase() {
            assert_eq!(parse_address(&mixed, &dev, SHA), Err(AddressError::MixedCase));
        }
        let long = format!("{s}{}", "q".repeat(40));
        assert!(matches!(parse_address(&long, &dev, SHA), Err(AddressError::TooLong { .. })));
        // A valid bech32m string of the wrong length.
        let short = bech32::encode::<Bech32m>(Hrp::parse_unchecked("scdev"), &[0u8; 20]).unwrap();
        assert!(matches!(parse_address(&short, &dev, SHA), Err(AddressError::WrongLength { found: 38, .. })));
        // Unknown version bytes: a scheme code, a hash code.
        for v in [9u8, 0x31] {
            let mut p = [7u8; 33];
            p[0] = v;
            let unknown = bech32::encode::<Bech32m>(Hrp::parse_unchecked("scdev"), &p).unwrap();
            assert_eq!(parse_address(&unknown, &dev, SHA), Err(AddressError::UnknownVersion(v)));
        }
        // A bech32 (not bech32m) checksum.
        let old = bech32::encode::<bech32::Bech32>(Hrp::parse_unchecked("scdev"), &[0u8; 33]).unwrap();
        assert_eq!(parse_address(&old, &dev, SHA), Err(AddressError::BadChecksum));
        assert!(matches!(parse_address("", &dev, SHA), Err(AddressError::MissingSeparator)));
        assert!(matches!(parse_address("1qqqqqqqq", &dev, SHA), Err(AddressError::BadPrefix(_))));
        assert!(matches!(parse_address("scdev1", &dev, SHA), Err(AddressError::WrongLength { .. })));
        assert!(matches!(
            parse_address("scdév1qqqq", &dev, SHA),
            Err(AddressError::BadCharacter { ch: 'é', position: 3 })
        ));
    }

    #[test]
    fn an_address_names_its_hash_function_and_another_chains_is_refused() {
        let dev = AddressHrp::devnet();
        let l = lock(Scheme::Ed25519, 3);
        // SHA-256 addresses keep the first format's version bytes 0 and 1.
        let sha = encode_address(&dev, SHA, &l);
        assert_eq!(Address::parse(&sha, &dev, SHA).unwrap().payload()[0], 0);
        assert_eq!(version(SHA, Scheme::Secp256k1), 1);
        for found in HashKind::ALL {
            let s = encode_address(&dev, found, &l);
            for expected in HashKind::ALL {
                let got = parse_address(&s, &dev, expected);
                if found == expected {
                    assert_eq!(got, Ok(l));
                } else {
                    assert_eq!(got, Err(AddressError::WrongHash { expected, found }), "{s}");
                    assert!(got.unwrap_err().to_string().contains("could never be spent"));
                }
            }
        }
        assert_ne!(encode_address(&dev, HashKind::Blake3, &l), sha);
    }

    #[test]
    fn non_zero_padding_is_rejected() {
        // Flip the last data character's padding bit and recompute a valid checksum.
        let dev = AddressHrp::devnet();
        let s = encode_address(&dev, SHA, &lock(Scheme::Secp256k1, 0));
        let data = &s[6..6 + 53];
        let last = data.as_bytes()[52];
        let fe = CHARSET.iter().position(|&c| c == last).unwrap() as u8;
        let flipped = CHARSET[(fe | 1) as usize] as char;
        let mut chars: String = data[..52].to_string();
        chars.push(flipped);
        let fes: Vec<bech32::Fe32> =
            chars.bytes().map(|b| bech32::Fe32::from_char(b as char).unwrap()).collect();
        let hrp = Hrp::parse_unchecked("scdev");
        let forged: String =
            bech32::primitives::iter::Fe32IterExt::with_checksum::<Bech32m>(fes.into_iter(), &hrp)
                .chars()
                .collect();
        assert_ne!(forged, s);
        assert_eq!(parse_address(&forged, &dev, SHA), Err(AddressError::NonZeroPadding));
    }

    #[test]
    fn hrp_rules() {
        assert!(AddressHrp::new("sc").is_ok());
        assert!(AddressHrp::new("Sc").is_err());
        assert!(AddressHrp::new("").is_err());
        assert!(AddressHrp::new(&"a".repeat(AddressHrp::MAX_LEN)).is_ok());
        assert!(AddressHrp::new(&"a".repeat(AddressHrp::MAX_LEN + 1)).is_err());
        assert!(AddressHrp::new("s c").is_err());
        assert_eq!(AddressHrp::new("scdev").unwrap(), AddressHrp::devnet());
    }
}
