//! Property tests for the canonical codec of `scalechain-types`.
//!
//! For every encodable type (`Hash`, `OutPoint`, `TxOut`, `Witness`, `TxIn`, `Tx`, `Header`,
//! `Block`):
//! - `decode(encode(x)) == x`;
//! - `encode(decode(bytes)) == bytes` whenever decoding succeeds, for arbitrary bytes and for
//!   valid encodings with a few bytes overwritten;
//! - decoding arbitrary bytes never panics;
//! - every strict prefix of a valid encoding fails to decode, and so does a valid encoding with
//!   one byte appended.
//!
//! And for transactions: `encoded_len` is the encoding's length, and the txid commits to
//! everything but the witnesses while the wtxid also commits to the witnesses.
#![allow(clippy::unwrap_used)]

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use scalechain_types::{
    Amount, Block, Decode, DecodeErrorKind, Encode, Hash, HashKind, Header, Lock, OutPoint, PubKey, Scheme,
    Target, Tx, TxIn, TxKind, TxOut, Witness, HEADER_LEN,
};

// ---------------------------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------------------------

fn hash() -> impl Strategy<Value = Hash> {
    any::<[u8; 32]>().prop_map(Hash)
}

fn outpoint() -> impl Strategy<Value = OutPoint> {
    (hash(), any::<u32>()).prop_map(|(txid, index)| OutPoint { txid, index })
}

/// Amounts, with the edges (0 and 2^53 - 1) drawn often.
fn amount() -> impl Strategy<Value = Amount> {
    let max = Amount::MAX.get();
    prop_oneof![Just(0), Just(max), Just(max - 1), 0..=max].prop_map(|v| Amount::new(v).unwrap())
}

fn scheme() -> impl Strategy<Value = Scheme> {
    prop_oneof![Just(Scheme::Ed25519), Just(Scheme::Secp256k1)]
}

fn txout() -> impl Strategy<Value = TxOut> {
    (amount(), scheme(), hash())
        .prop_map(|(value, scheme, pubkey_hash)| TxOut { value, lock: Lock { scheme, pubkey_hash } })
}

fn signature() -> impl Strategy<Value = [u8; 64]> {
    vec(any::<u8>(), 64).prop_map(|v| v.try_into().unwrap())
}

/// Witnesses of both schemes, with arbitrary key bytes of the scheme's length (validity as a
/// curve point is a verification matter, not an encoding one).
fn witness() -> impl Strategy<Value = Witness> {
    scheme()
        .prop_flat_map(|sc| (Just(sc), vec(any::<u8>(), sc.pubkey_len()), signature()))
        .prop_map(|(sc, key, signature)| Witness { pubkey: PubKey::from_slice(sc, &key).unwrap(), signature })
}

fn txin() -> impl Strategy<Value = TxIn> {
    (outpoint(), witness()).prop_map(|(prev, witness)| TxIn { prev, witness })
}

fn tx() -> impl Strategy<Value = Tx> {
    (any::<u32>(), any::<u8>(), vec(txin(), 0..=4), vec(txout(), 0..=4), vec(any::<u8>(), 0..64)).prop_map(
        |(version, kind, inputs, outputs, data)| Tx { version, kind: TxKind(kind), inputs, outputs, data },
    )
}

fn header() -> impl Strategy<Value = Header> {
    (any::<u32>(), any::<u64>(), hash(), hash(), any::<u64>(), hash(), any::<u64>()).prop_map(
        |(version, height, prev_hash, merkle_root, time, target, nonce)| Header {
            version,
            height,
            prev_hash,
            merkle_root,
            time,
            target: Target(target),
            nonce,
        },
    )
}

fn block() -> impl Strategy<Value = Block> {
    (header(), vec(tx(), 0..=4)).prop_map(|(header, txs)| Block { header, txs })
}

// ---------------------------------------------------------------------------------------------
// Generic properties
// ---------------------------------------------------------------------------------------------

/// Round trip, strict prefixes and one trailing byte, for one value.
fn check_value<T: Encode + Decode + PartialEq + Debug>(x: &T) -> Result<(), TestCaseError> {
    let bytes = x.encode();
    let back = T::decode(&bytes);
    prop_assert_eq!(back.as_ref(), Ok(x), "decode(encode(x)) != x");
    prop_assert_eq!(back.unwrap().encode(), bytes.clone());
    for cut in 0..bytes.len() {
        match T::decode(&bytes[..cut]) {
            Ok(v) => prop_assert!(false, "prefix of {} of {} bytes decoded to {:?}", cut, bytes.len(), v),
            Err(e) => prop_assert!(
                matches!(
                    e.kind,
                    DecodeErrorKind::UnexpectedEnd { .. } | DecodeErrorKind::LengthTooLarge { .. }
                ),
                "prefix {cut}: unexpected error {e:?}"
            ),
        }
    }
    for extra in [0x00, 0x01, 0xff] {
        let mut longer = bytes.clone();
        longer.push(extra);
        let e = T::decode(&longer).unwrap_err();
        prop_assert_eq!(e.kind, DecodeErrorKind::TrailingBytes(1));
        prop_assert_eq!(e.offset, bytes.len());
    }
    Ok(())
}

/// Decodes arbitrary bytes (must not panic); whatever decodes re-encodes to the same bytes.
fn check_bytes<T: Encode + Decode + Debug>(bytes: &[u8]) -> Result<bool, TestCaseError> {
    match T::decode(bytes) {
        Ok(v) => {
            prop_assert_eq!(v.encode(), bytes, "{:?} re-encodes differently", v);
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// `check_bytes` for every type.
fn check_bytes_all(bytes: &[u8]) -> Result<(), TestCaseError> {
    check_bytes::<Hash>(bytes)?;
    check_bytes::<OutPoint>(bytes)?;
    check_bytes::<TxOut>(bytes)?;
    check_bytes::<Witness>(bytes)?;
    check_bytes::<TxIn>(bytes)?;
    check_bytes::<Tx>(bytes)?;
    check_bytes::<Header>(bytes)?;
    check_bytes::<Block>(bytes)?;
    Ok(())
}

/// Overwrites a few bytes of `bytes` (positions and values chosen by proptest).
fn mutate(bytes: &[u8], edits: &[(Index, u8)]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if !b.is_empty() {
        for (i, v) in edits {
            let at = i.index(b.len());
            b[at] = *v;
        }
    }
    b
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn hash_codec(x in hash()) {
        check_value(&x)?;
        prop_assert_eq!(x.encode().len(), 32);
    }

    #[test]
    fn outpoint_codec(x in outpoint()) {
        check_value(&x)?;
        prop_assert_eq!(x.encode().len(), 36);
    }

    #[test]
    fn txout_codec(x in txout()) {
        check_value(&x)?;
        prop_assert_eq!(x.encode().len(), TxOut::LEN);
    }

    #[test]
    fn witness_codec(x in witness()) {
        check_value(&x)?;
        prop_assert_eq!(x.encode().len(), 1 + x.pubkey.scheme().pubkey_len() + 64);
    }

    #[test]
    fn txin_codec(x in txin()) {
        check_value(&x)?;
    }

    #[test]
    fn tx_codec(x in tx()) {
        check_value(&x)?;
        prop_assert_eq!(x.encoded_len(), x.encode().len());
    }

    #[test]
    fn header_codec(x in header()) {
        check_value(&x)?;
        prop_assert_eq!(x.encode().len(), HEADER_LEN);
        for k in HashKind::ALL {
            prop_assert_eq!(x.hash(k), k.hash(&x.encode()));
        }
    }

    #[test]
    fn block_codec(x in block()) {
        check_value(&x)?;
        prop_assert_eq!(x.encoded_len(), x.encode().len());
    }

    /// Arbitrary bytes: decoding never panics, and any success re-encodes identically.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        check_bytes_all(&bytes)?;
    }

    /// Valid encodings with a few bytes overwritten: these often still decode (the fields that
    /// are not structural accept any value), and whatever decodes re-encodes identically. The
    /// changes also hit counts, scheme bytes and amounts, which must fail cleanly.
    #[test]
    fn mutated_encodings_decode_canonically(
        t in tx(),
        b in block(),
        w in witness(),
        o in txout(),
        edits in vec((any::<Index>(), any::<u8>()), 1..4),
    ) {
        check_bytes_all(&mutate(&t.encode(), &edits))?;
        check_bytes_all(&mutate(&b.encode(), &edits))?;
        check_bytes_all(&mutate(&w.encode(), &edits))?;
        check_bytes_all(&mutate(&o.encode(), &edits))?;
    }

    /// The txid ignores witnesses (signature and key); the wtxid does not. Changing what an
    /// input spends changes both.
    #[test]
    fn txid_ignores_witnesses_wtxid_does_not(
        t in tx().prop_filter("needs an input", |t| !t.inputs.is_empty()),
        which in any::<Index>(),
        byte in 0usize..64,
        flip in 1u8..=255,
        new_key in vec(any::<u8>(), 33),
    ) {
        let i = which.index(t.inputs.len());
        let mut resigned = t.clone();
        resigned.inputs[i].witness.signature[byte] ^= flip;
        let mut rekeyed = t.clone();
        let scheme = t.inputs[i].witness.pubkey.scheme();
        rekeyed.inputs[i].witness.pubkey =
            PubKey::from_slice(scheme, &new_key[..scheme.pubkey_len()]).unwrap();
        let mut respent = t.clone();
        respent.inputs[i].prev.index ^= 1;
        for k in HashKind::ALL {
            prop_assert_eq!(resigned.txid(k), t.txid(k));
            prop_assert_ne!(resigned.wtxid(k), t.wtxid(k));
            prop_assert_eq!(rekeyed.txid(k), t.txid(k));
            if rekeyed != t {
                prop_assert_ne!(rekeyed.wtxid(k), t.wtxid(k));
            }
            prop_assert_ne!(respent.txid(k), t.txid(k));
            prop_assert_ne!(respent.wtxid(k), t.wtxid(k));
            prop_assert_eq!(t.txid(k), k.hash(&t.encode_without_witnesses()));
            prop_assert_eq!(t.wtxid(k), k.hash(&t.encode()));
        }
    }
}

/// A transaction without inputs has the same bytes with and without witnesses, so its txid and
/// wtxid coincide.
#[test]
fn txid_equals_wtxid_without_inputs() {
    let out = TxOut {
        value: Amount::new(5).unwrap(),
        lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([3; 32]) },
    };
    let cb = Tx::coinbase(7, vec![out]);
    for k in HashKind::ALL {
        assert_eq!(cb.txid(k), cb.wtxid(k));
    }
    assert_eq!(Tx::decode(&cb.encode()), Ok(cb));
}
