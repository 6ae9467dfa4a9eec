//! Test fixtures shared by the crate's unit tests.

use scalechain_types::{Hash, HashKind, Header, Target};

/// `n` headers mined on an easy target (`sha256`) after a made-up genesis hash `0xaa…`: the
/// headers and the hashes, genesis first.
pub fn mined(n: usize) -> (Vec<Header>, Vec<Hash>) {
    let mut headers = Vec::new();
    let mut hashes = vec![Hash([0xaa; 32])];
    for i in 1..=n {
        let mut h = Header {
            version: 1,
            height: i as u64,
            prev_hash: hashes[i - 1],
            merkle_root: Hash([0; 32]),
            time: i as u64,
            target: Target::from_bits(250),
            nonce: 0,
        };
        mine(&mut h);
        hashes.push(h.hash(HashKind::Sha256));
        headers.push(h);
    }
    (headers, hashes)
}

/// Raises the header's nonce until its `sha256` hash meets its own target.
pub fn mine(h: &mut Header) {
    while !h.target.is_met_by(&h.hash(HashKind::Sha256)) {
        h.nonce += 1;
    }
}
