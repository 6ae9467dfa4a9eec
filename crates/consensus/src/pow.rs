//! Proof of work: block work, difficulty retargeting, median time past.

use ruint::aliases::U256;

use scalechain_types::{Hash, Header, Target};

use crate::params::Params;

/// Ancestors of a block on its own branch, by height (the parent and below).
pub trait HeaderChain {
    /// The header at `height` on this branch, if the branch reaches that low.
    fn header_at(&self, height: u64) -> Option<Header>;
}

/// The target as an integer.
pub fn target_to_u256(t: &Target) -> U256 {
    U256::from_be_bytes(t.0 .0)
}

/// An integer as a target.
pub fn u256_to_target(v: U256) -> Target {
    Target(Hash(v.to_be_bytes()))
}

/// Expected number of hashes to meet `target`: 2^256 / (target + 1), as Bitcoin counts it.
pub fn work(target: &Target) -> U256 {
    let t = target_to_u256(target);
    // (2^256 - 1 - t) / (t + 1) + 1 == 2^256 / (t + 1), without overflowing.
    match t.checked_add(U256::from(1u8)) {
        Some(d) => ((U256::MAX - t) / d).saturating_add(U256::from(1u8)),
        None => U256::from(1u8),
    }
}

/// The target the block after `parent` must carry.
///
/// Every `retarget_interval` blocks the target is scaled by how long the last window took:
/// `new = old × actual / expected`, where `actual = time(h−1) − time(h−interval)` is clamped to
/// [expected/4, expected×4] and `expected = (interval − 1) × target_block_ms`; the result never
/// exceeds `pow_limit`. Between retargets the parent's target carries over.
pub fn next_target(p: &Params, parent: &Header, chain: &dyn HeaderChain) -> Target {
    let h = parent.height + 1;
    let interval = p.retarget_interval.max(2);
    if !h.is_multiple_of(interval) {
        return parent.target;
    }
    let Some(first) = chain.header_at(h - interval) else {
        return parent.target;
    };
    let expected = (interval - 1).saturating_mul(p.target_block_ms).max(1);
    let actual =
        parent.time.saturating_sub(first.time).clamp(expected / 4, expected.saturating_mul(4)).max(1);
    let old = target_to_u256(&parent.target);
    let limit = target_to_u256(&p.pow_limit);
    // floor(old × actual / expected) exactly, without 512-bit intermediates: with
    // old = q·expected + r, it is q·actual + floor(r·actual / expected), and r·actual < 2^128.
    let (a, e) = (U256::from(actual), U256::from(expected));
    let (q, r) = (old / e, old % e);
    let new = q.saturating_mul(a).saturating_add(r * a / e);
    u256_to_target(new.min(limit).max(U256::from(1u8)))
}

/// The median time of the last `mtp_window` blocks ending at `parent`.
pub fn median_time_past(p: &Params, parent: &Header, chain: &dyn HeaderChain) -> u64 {
    let n = p.mtp_window.max(1);
    let mut times = Vec::with_capacity(n as usize);
    times.push(parent.time);
    let mut h = parent.height;
    while (times.len() as u64) < n && h > 0 {
        h -= 1;
        match chain.header_at(h) {
            Some(hd) => times.push(hd.time),
            None => break,
        }
    }
    times.sort_unstable();
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::SigMode;
    use scalechain_types::HashKind;

    struct Line(Vec<Header>);
    impl HeaderChain for Line {
        fn header_at(&self, h: u64) -> Option<Header> {
            self.0.get(h as usize).copied()
        }
    }

    fn line(p: &Params, n: u64, spacing: u64) -> Line {
        Line(
            (0..n)
                .map(|h| Header {
                    version: 1,
                    height: h,
                    prev_hash: Hash::ZERO,
                    merkle_root: Hash::ZERO,
                    time: p.genesis_time + h * spacing,
                    target: p.genesis_target,
                    nonce: 0,
                })
                .collect(),
        )
    }

    #[test]
    fn retarget_follows_block_times() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let i = p.retarget_interval;
        // On schedule: unchanged.
        let l = line(&p, i, p.target_block_ms);
        assert_eq!(next_target(&p, &l.0[(i - 1) as usize], &l), p.genesis_target);
        // Twice as slow: target doubles (easier).
        let l = line(&p, i, 2 * p.target_block_ms);
        let t = target_to_u256(&next_target(&p, &l.0[(i - 1) as usize], &l));
        assert_eq!(t, target_to_u256(&p.genesis_target) * U256::from(2u8));
        // Twice as fast: halves.
        let l = line(&p, i, p.target_block_ms / 2);
        let t = target_to_u256(&next_target(&p, &l.0[(i - 1) as usize], &l));
        assert_eq!(t, target_to_u256(&p.genesis_target) / U256::from(2u8));
        // Far too slow: clamped to x4 and then to the limit.
        let l = line(&p, i, 1000 * p.target_block_ms);
        let t = next_target(&p, &l.0[(i - 1) as usize], &l);
        assert!(t <= p.pow_limit);
        // Not a retarget height: the parent's target.
        assert_eq!(next_target(&p, &l.0[3], &l), l.0[3].target);
    }

    #[test]
    fn work_and_mtp() {
        assert_eq!(work(&Target::from_bits(255)), U256::from(2u8));
        assert_eq!(work(&Target::from_bits(256)), U256::from(1u8));
        assert!(work(&Target::from_bits(200)) > work(&Target::from_bits(201)));
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let l = line(&p, 30, 1000);
        assert_eq!(median_time_past(&p, &l.0[29], &l), p.genesis_time + 24 * 1000);
        assert_eq!(median_time_past(&p, &l.0[0], &l), p.genesis_time);
    }
}
