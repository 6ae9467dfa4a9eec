//! Decompressed Ed25519 verification keys, remembered across batches.
//!
//! Verifying an Ed25519 signature decompresses two curve points: the signer's key `A` and the
//! signature's `R` (each a field square root). `R` is new in every signature, but a key repeats
//! whenever its owner signs again: a wallet spending several coins, an exchange, a load that
//! spends from a ring of keys. `ed25519-zebra`'s batch verifier decompresses each distinct key
//! once per batch, so a key that signs in every batch is decompressed in every batch.
//! [`Ed25519KeyCache`] maps key bytes to their decompressed point, and [`verify_batch`] computes
//! `ed25519-zebra`'s ZIP-215 batch equation with `A` taken from the cache:
//!
//! `[8]([−Σ zᵢsᵢ]B + Σ [zᵢ]Rᵢ + Σ_A [Σ_{i signed by A} zᵢkᵢ]A) = 0`, with
//! `kᵢ = SHA-512(Rᵢ ‖ Aᵢ ‖ Mᵢ) mod ℓ` over the bytes as given and `zᵢ` random 128-bit.
//!
//! The process shares one cache ([`Ed25519KeyCache::global`], [`GLOBAL_CAPACITY`] keys), which
//! [`keys::verify_ed25519_batch`](crate::keys::verify_ed25519_batch) uses: the node's engine, the
//! mempool's admission and the study's signature bound all verify through it, so a bound and the
//! work it bounds see the same cache.
//!
//! Invariants:
//! - the verdict is `ed25519-zebra`'s for every input, cached or not: a cached point is the one
//!   `CompressedEdwardsY::decompress` returns for the key's bytes (which accepts non-canonical
//!   encodings, as ZIP-215 requires, exactly as `ed25519-zebra` does since both call it), `s`
//!   must be canonical, and `k` hashes the key bytes as given, not a re-encoding of the point;
//! - only bytes that decompress are cached, and only under those bytes;
//! - at most `capacity` keys are held; when full, the key inserted first goes first.
//!
//! Must not: change a verdict; do curve arithmetic while holding the lock; grow without bound
//! (keys come from the network).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};

/// One Ed25519 signature to check in a batch: key bytes, signature, message.
#[derive(Clone, Copy, Debug)]
pub struct Ed25519Item<'a> {
    /// The 32 key bytes.
    pub key: &'a [u8; 32],
    /// The signature.
    pub sig: &'a [u8; 64],
    /// The message bytes.
    pub msg: &'a [u8],
}

/// Keys the process-wide cache holds: 65,536, about 15 MiB (a 160-byte point, the 32 key
/// bytes twice and the map's overhead per key).
pub const GLOBAL_CAPACITY: usize = 1 << 16;

/// The cached points and their insertion order (for eviction).
#[derive(Default)]
struct Points {
    map: HashMap<[u8; 32], EdwardsPoint>,
    order: VecDeque<[u8; 32]>,
}

/// A bounded map from Ed25519 key bytes to the decompressed point, shared by threads.
pub struct Ed25519KeyCache {
    points: RwLock<Points>,
    capacity: usize,
    lookups: AtomicU64,
    hits: AtomicU64,
}

/// What a cache holds and how often it answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyCacheStats {
    /// Keys held.
    pub entries: usize,
    /// The most keys it holds.
    pub capacity: usize,
    /// Distinct keys of batches looked up (a key that signs twice in one batch counts once).
    pub lookups: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
}

impl Ed25519KeyCache {
    /// A cache of at most `capacity` keys (0: it never holds one, and [`verify_batch`] then
    /// decompresses every key of every batch, as `ed25519-zebra` does).
    pub fn new(capacity: usize) -> Self {
        Ed25519KeyCache {
            points: RwLock::new(Points::default()),
            capacity,
            lookups: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// The process's cache, of [`GLOBAL_CAPACITY`] keys.
    pub fn global() -> &'static Ed25519KeyCache {
        static GLOBAL: OnceLock<Ed25519KeyCache> = OnceLock::new();
        GLOBAL.get_or_init(|| Ed25519KeyCache::new(GLOBAL_CAPACITY))
    }

    /// Its size and counters.
    pub fn stats(&self) -> KeyCacheStats {
        let entries = self.points.read().unwrap_or_else(PoisonError::into_inner).map.len();
        KeyCacheStats {
            entries,
            capacity: self.capacity,
            lookups: self.lookups.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
        }
    }

    /// Whether `key`'s point is held.
    pub fn contains(&self, key: &[u8; 32]) -> bool {
        self.points.read().unwrap_or_else(PoisonError::into_inner).map.contains_key(key)
    }

    /// The points of `keys`, in order, or `None` if one of them is no point. Those not held are
    /// decompressed outside the lock and then remembered (one read lock for the lookups, one
    /// write lock for the inserts).
    fn points(&self, keys: &[[u8; 32]]) -> Option<Vec<EdwardsPoint>> {
        let held: Vec<Option<EdwardsPoint>> = {
            let p = self.points.read().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| p.map.get(k).copied()).collect()
        };
        let hits = held.iter().filter(|p| p.is_some()).count();
        self.lookups.fetch_add(keys.len() as u64, Ordering::Relaxed);
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        let mut fresh: Vec<([u8; 32], EdwardsPoint)> = Vec::with_capacity(keys.len() - hits);
        let mut out = Vec::with_capacity(keys.len());
        let mut bad = false;
        for (k, p) in keys.iter().zip(held) {
            let p = match p {
                Some(p) => p,
                None => match CompressedEdwardsY(*k).decompress() {
                    Some(p) => {
                        fresh.push((*k, p));
                        p
                    }
                    None => {
                        bad = true;
                        break;
                    }
                },
            };
            out.push(p);
        }
        self.remember(fresh);
        (!bad).then_some(out)
    }

    /// Holds `fresh` (points of their keys), dropping the oldest keys beyond the capacity.
    fn remember(&self, fresh: Vec<([u8; 32], EdwardsPoint)>) {
        if fresh.is_empty() || self.capacity == 0 {
            return;
        }
        let mut p = self.points.write().unwrap_or_else(PoisonError::into_inner);
        for (k, point) in fresh {
            if p.map.insert(k, point).is_none() {
                p.order.push_back(k);
            }
        }
        while p.order.len() > self.capacity {
            if let Some(old) = p.order.pop_front() {
                p.map.remove(&old);
            }
        }
    }
}

/// A random 128-bit batch coefficient.
fn coefficient<R: rand_core::CryptoRng>(rng: &mut R) -> Scalar {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    Scalar::from(u128::from_le_bytes(b))
}

/// ZIP-215 batch verification with keys from `cache`: true iff the batch equation holds, the
/// verdict of `ed25519-zebra`'s `batch::Verifier` ([`verify_batch_zebra`]) on the same items
/// (and so of single verification on each, up to the batch's 2^-128 chance of missing a bad
/// signature).
///
/// `rng` draws the coefficients and must be unpredictable to whoever made the signatures
/// (see [`keys::verify_ed25519_batch`](crate::keys::verify_ed25519_batch)).
pub fn verify_batch<R: rand_core::CryptoRng>(
    items: &[Ed25519Item<'_>],
    mut rng: R,
    cache: &Ed25519KeyCache,
) -> bool {
    // The batch's distinct keys in first-seen order, and each item's key among them: a key that
    // signs several items is one term of the sum, as in `ed25519-zebra`.
    let mut slot: HashMap<&[u8; 32], usize> = HashMap::with_capacity(items.len());
    let mut keys: Vec<[u8; 32]> = Vec::new();
    let of: Vec<usize> = items
        .iter()
        .map(|it| {
            *slot.entry(it.key).or_insert_with(|| {
                keys.push(*it.key);
                keys.len() - 1
            })
        })
        .collect();
    let Some(a_points) = cache.points(&keys) else {
        return false;
    };
    let mut a_coeffs = vec![Scalar::ZERO; keys.len()];
    let mut r_coeffs = Vec::with_capacity(items.len());
    let mut r_points = Vec::with_capacity(items.len());
    let mut b_coeff = Scalar::ZERO;
    for (it, &a) in items.iter().zip(&of) {
        let mut r_bytes = [0u8; 32];
        let mut s_bytes = [0u8; 32];
        r_bytes.copy_from_slice(&it.sig[..32]);
        s_bytes.copy_from_slice(&it.sig[32..]);
        let Some(r) = CompressedEdwardsY(r_bytes).decompress() else {
            return false;
        };
        let Some(s) = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes)) else {
            return false;
        };
        let h: [u8; 64] =
            Sha512::new().chain_update(r_bytes).chain_update(it.key).chain_update(it.msg).finalize().into();
        let k = Scalar::from_bytes_mod_order_wide(&h);
        let z = coefficient(&mut rng);
        b_coeff -= z * s;
        r_points.push(r);
        r_coeffs.push(z);
        a_coeffs[a] += z * k;
    }
    let check = EdwardsPoint::vartime_multiscalar_mul(
        std::iter::once(&b_coeff).chain(a_coeffs.iter()).chain(r_coeffs.iter()),
        std::iter::once(&ED25519_BASEPOINT_POINT).chain(a_points.iter()).chain(r_points.iter()),
    );
    check.mul_by_cofactor().is_identity()
}

/// The same check by `ed25519-zebra`'s batch verifier, which decompresses every distinct key of
/// every batch: the reference [`verify_batch`] is tested and measured against.
pub fn verify_batch_zebra<R: rand_core::CryptoRng>(items: &[Ed25519Item<'_>], rng: R) -> bool {
    let mut v = ed25519_zebra::batch::Verifier::new();
    for it in items {
        let vk = ed25519_zebra::VerificationKeyBytes::from(*it.key);
        v.queue((vk, ed25519_zebra::Signature::from_bytes(it.sig), it.msg));
    }
    v.verify(rng).is_ok()
}

#[cfg(test)]
mod tests {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::{HashKind, Scheme, SecretKey, Signature};

    /// `n` signatures by keys `i % ring`, each over its own message.
    fn signed(n: usize, ring: usize, from: usize) -> Vec<([u8; 32], Signature, Vec<u8>)> {
        (from..from + n)
            .map(|i| {
                let seed =
                    HashKind::Sha256.hash_parts(&[b"keycache/key", &((i % ring) as u64).to_le_bytes()]);
                let sk = SecretKey::from_seed(Scheme::Ed25519, seed.0);
                let msg = HashKind::Sha256.hash(&(i as u64).to_le_bytes());
                let key: [u8; 32] = sk.public().as_bytes().try_into().expect("32-byte key");
                (key, sk.sign(&msg), msg.as_bytes().to_vec())
            })
            .collect()
    }

    fn items(s: &[([u8; 32], Signature, Vec<u8>)]) -> Vec<Ed25519Item<'_>> {
        s.iter().map(|(key, sig, msg)| Ed25519Item { key, sig, msg }).collect()
    }

    /// ℓ, the order of the base point, little-endian.
    const ELL: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    #[test]
    fn a_warm_cache_answers_from_memory_and_verifies_the_same() {
        let s = signed(64, 16, 0);
        let cache = Ed25519KeyCache::new(100);
        assert!(verify_batch(&items(&s), rng(1), &cache));
        let cold = cache.stats();
        assert_eq!(
            (cold.entries, cold.lookups, cold.hits),
            (16, 16, 0),
            "distinct keys looked up once per batch"
        );
        assert!(verify_batch(&items(&s), rng(2), &cache));
        let warm = cache.stats();
        assert_eq!((warm.entries, warm.lookups, warm.hits), (16, 32, 16));
        assert!(s.iter().all(|(k, _, _)| cache.contains(k)));
    }

    #[test]
    fn the_cache_holds_at_most_its_capacity_and_drops_the_oldest_first() {
        let cache = Ed25519KeyCache::new(10);
        let first = signed(8, 8, 0);
        assert!(verify_batch(&items(&first), rng(1), &cache));
        let second = signed(8, 1_000, 100);
        assert!(verify_batch(&items(&second), rng(2), &cache));
        assert_eq!(cache.stats().entries, 10);
        let held: Vec<bool> = first.iter().map(|(k, _, _)| cache.contains(k)).collect();
        assert_eq!(held, [false, false, false, false, false, false, true, true]);
        assert!(second.iter().all(|(k, _, _)| cache.contains(k)));
        let none = Ed25519KeyCache::new(0);
        assert!(verify_batch(&items(&first), rng(3), &none));
        assert_eq!(none.stats().entries, 0);
    }

    #[test]
    fn bytes_that_are_no_point_fail_the_batch_and_are_not_cached() {
        let mut s = signed(4, 4, 0);
        // About half of all y give no point (x² = (y² − 1)/(d·y² + 1) has no square root).
        let not_a_point = (2u8..)
            .map(|y| {
                let mut b = [0u8; 32];
                b[0] = y;
                b
            })
            .find(|b| CompressedEdwardsY(*b).decompress().is_none())
            .expect("some small y is no point");
        s[2].0 = not_a_point;
        let cache = Ed25519KeyCache::new(100);
        assert!(!verify_batch(&items(&s), rng(1), &cache));
        assert!(!cache.contains(&not_a_point));
        assert!(cache.contains(&s[0].0) && cache.contains(&s[1].0));
        assert!(!verify_batch_zebra(&items(&s), rng(1)));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Random batches over a small ring of keys, some of them damaged: the verdict is
        /// `ed25519-zebra`'s with a cold cache, a warm one and none.
        #[test]
        fn the_verdict_is_zebras_cold_warm_and_uncached(
            n in 1usize..24,
            ring in 1usize..8,
            from in 0usize..1_000,
            damage in proptest::collection::vec((0usize..24, 0usize..4, 0usize..64, 0u8..8), 0..3),
        ) {
            let mut s = signed(n, ring, from);
            for (which, what, byte, bit) in damage {
                let (key, sig, msg) = &mut s[which % n];
                match what {
                    0 => sig[byte] ^= 1 << bit,
                    1 => {
                        let at = byte % msg.len();
                        msg[at] ^= 1 << bit;
                    }
                    2 => key[byte % 32] ^= 1 << bit,
                    // s + ℓ: a non-canonical s that single verification would reduce.
                    _ => {
                        let mut carry = 0u16;
                        for (b, lb) in sig[32..].iter_mut().zip(ELL) {
                            let v = *b as u16 + lb as u16 + carry;
                            *b = v as u8;
                            carry = v >> 8;
                        }
                    }
                }
            }
            let zebra = verify_batch_zebra(&items(&s), rng(7));
            let cache = Ed25519KeyCache::new(4);
            let cold = verify_batch(&items(&s), rng(8), &cache);
            let warm = verify_batch(&items(&s), rng(9), &cache);
            let none = verify_batch(&items(&s), rng(10), &Ed25519KeyCache::new(0));
            proptest::prop_assert_eq!(cold, zebra);
            proptest::prop_assert_eq!(warm, zebra);
            proptest::prop_assert_eq!(none, zebra);
            proptest::prop_assert!(cache.stats().entries <= 4);
        }
    }
}
