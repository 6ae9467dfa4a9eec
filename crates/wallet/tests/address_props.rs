//! Property tests of the address encoding: round trips, every single-character change detected,
//! and no panic on arbitrary input.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use scalechain_types::{Hash, Lock, Scheme};
use scalechain_wallet::{encode_address, parse_address, Address, AddressError, AddressHrp};

const CHARSET: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

fn lock_strategy() -> impl Strategy<Value = Lock> {
    (prop_oneof![Just(Scheme::Ed25519), Just(Scheme::Secp256k1)], any::<[u8; 32]>())
        .prop_map(|(scheme, h)| Lock { scheme, pubkey_hash: Hash(h) })
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
    fn round_trip(lock in lock_strategy(), hrp in hrp_strategy()) {
        let s = encode_address(&hrp, &lock);
        prop_assert_eq!(parse_address(&s, &hrp), Ok(lock));
        let a = Address::parse(&s, &hrp).unwrap();
        prop_assert_eq!(a.to_string(), s.clone());
        prop_assert_eq!(a.lock(), lock);
        prop_assert_eq!(a.hrp(), hrp);
        prop_assert_eq!(parse_address(&s.to_uppercase(), &hrp), Ok(lock));
    }

    /// Every one-character substitution anywhere (prefix, separator, data, checksum), by any
    /// character of the alphabet, a letter of the other case or a character outside it, is
    /// rejected.
    #[test]
    fn every_single_character_change_is_detected(lock in lock_strategy(), hrp in hrp_strategy()) {
        let s = encode_address(&hrp, &lock);
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
                    parse_address(&changed, &hrp).is_err(),
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
        let s = encode_address(&hrp, &lock);
        let idx = "scdev1".len() + pos;
        let new = CHARSET.as_bytes()[r] as char;
        prop_assume!(s.as_bytes()[idx] as char != new);
        let mut changed = s.clone();
        changed.replace_range(idx..idx + 1, &new.to_string());
        prop_assert_eq!(parse_address(&changed, &hrp), Err(AddressError::BadChecksum));
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,120}") {
        let _ = parse_address(&s, &AddressHrp::devnet());
    }

    #[test]
    fn other_networks_are_refused(lock in lock_strategy()) {
        let s = encode_address(&AddressHrp::main(), &lock);
        let wrong_network = matches!(
            parse_address(&s, &AddressHrp::devnet()),
            Err(AddressError::WrongNetwork { .. })
        );
        prop_assert!(wrong_network);
    }
}
