//! Property tests of the address encoding: round trips, every single-character change detected,
//! and no panic on arbitrary input.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use scalechain_types::{Hash, HashKind, Lock, Scheme};
use scalechain_wallet::{encode_address, parse_address, Address, AddressError, AddressHrp};

const CHARSET: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

fn lock_strategy() -> impl Strategy<Value = Lock> {
    (prop_oneof![Just(Scheme::Ed25519), Just(Scheme::Secp256k1)], any::<[u8; 32]>())
        .prop_map(|(scheme, h)| Lock { scheme, pubkey_hash: Hash(h) })
}

fn hash_strategy() -> impl Strategy<Value = HashKind> {
    prop_oneof![Just(HashKind::Sha256), Just(HashKind::Sha512_256), Just(HashKind::Blake3)]
}

fn hrp_strategy() -> impl Strategy<Value = AddressHrp> {
    prop_oneof![
        Just(AddressHrp::main()),
        Just(AddressHrp::devnet()),
        "[a-z0-9]{1,12}".prop_map(|s| AddressHrp::new(&s).unwrap()),
    ]
}

proptest! {
    #[test]
    fn round_trip(lock in lock_strategy(), hrp in hrp_strategy(), hash in hash_strategy()) {
        let s = encode_address(&hrp, hash, &lock);
        prop_assert_eq!(parse_address(&s, &hrp, hash), Ok(lock));
        let a = Address::parse(&s, &hrp, hash).unwrap();
        prop_assert_eq!(a.to_string(), s.clone());
        prop_assert_eq!(a.lock(), lock);
        prop_assert_eq!(a.hrp(), hrp);
        prop_assert_eq!(a.hash(), hash);
        prop_assert_eq!(parse_address(&s.to_uppercase(), &hrp, hash), Ok(lock));
    }

    /// Every one-character substitution anywhere (prefix, separator, data, checksum), by any
    /// character of the alphabet, a letter of the other case or a character outside it, is
    /// rejected.
    #[test]
    fn every_single_character_change_is_detected(
        lock in lock_strategy(),
        hrp in hrp_strategy(),
        hash in hash_strategy(),
    ) {
        let s = encode_address(&hrp, hash, &lock);
        let chars: Vec<char> = s.chars().collect();
        let replacements: Vec<char> = CHARSET.chars().chain("1bioBQZ~ é".chars()).collect();
        for pos in 0..chars.len() {
            for &r in &replacements {
                if r == chars[pos] {
                    continue;
                }
                let mut changed = chars.clone();
                changed[pos] = r;
                let changed: String = changed.into_iter().collect();
                prop_assert!(
                    parse_address(&changed, &hrp, hash).is_err(),
                    "{} accepted after changing position {} to {:?}", changed, pos, r
                );
            }
        }
    }

    /// A single changed data character is reported as a checksum error (not silently decoded
    /// into another lock).
    #[test]
    fn data_typos_are_checksum_errors(lock in lock_strategy(), pos in 0usize..59, r in 0usize..32) {
        let hrp = AddressHrp::devnet();
        let s = encode_address(&hrp, HashKind::Sha256, &lock);
        let idx = "scdev1".len() + pos;
        let new = CHARSET.as_bytes()[r] as char;
        prop_assume!(s.as_bytes()[idx] as char != new);
        let mut changed = s.clone();
        changed.replace_range(idx..idx + 1, &new.to_string());
        prop_assert_eq!(parse_address(&changed, &hrp, HashKind::Sha256), Err(AddressError::BadChecksum));
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,120}") {
        let _ = parse_address(&s, &AddressHrp::devnet(), HashKind::Blake3);
    }

    #[test]
    fn other_networks_are_refused(lock in lock_strategy(), hash in hash_strategy()) {
        let s = encode_address(&AddressHrp::main(), hash, &lock);
        let wrong_network = matches!(
            parse_address(&s, &AddressHrp::devnet(), hash),
            Err(AddressError::WrongNetwork { .. })
        );
        prop_assert!(wrong_network);
    }

    /// An address made for a chain hashing with one function is refused on a chain hashing
    /// with another, whatever the lock.
    #[test]
    fn other_hash_functions_are_refused(lock in lock_strategy(), made in hash_strategy(), here in hash_strategy()) {
        prop_assume!(made != here);
        let s = encode_address(&AddressHrp::devnet(), made, &lock);
        prop_assert_eq!(
            parse_address(&s, &AddressHrp::devnet(), here),
            Err(AddressError::WrongHash { expected: here, found: made })
        );
    }
}
