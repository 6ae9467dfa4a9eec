//! RFC 6962 Merkle trees (Certificate Transparency), array-based, with inclusion proofs.
//!
//! `leaf = H(0x00 || data)`, `node = H(0x01 || left || right)`; a tree of n > 1 leaves splits at
//! the largest power of two below n, so nothing is duplicated (Bitcoin's duplicate-last scheme,
//! CVE-2012-2459, is not used). The empty tree's root is `H("")`.
//!
//! The tree is built bottom-up level by level: pairs are hashed and a last unpaired node moves
//! up unchanged, which yields exactly the RFC 6962 root. Leaves, and wide levels, are hashed in
//! parallel with rayon.

use rayon::prelude::*;

use crate::codec::Encode;
use crate::hash::{Hash, HashKind};
use crate::profile;
use crate::tx::Tx;

/// Below this many nodes a level is hashed on one thread (spawning costs more than hashing).
const PAR_THRESHOLD: usize = 4096;

/// `H(0x00 || data)`.
pub fn leaf_hash(kind: HashKind, data: &[u8]) -> Hash {
    kind.hash_parts(&[&[0x00], data])
}

/// `H(0x01 || left || right)`.
pub fn node_hash(kind: HashKind, left: &Hash, right: &Hash) -> Hash {
    let mut buf = [0u8; 65];
    buf[0] = 0x01;
    buf[1..33].copy_from_slice(&left.0);
    buf[33..].copy_from_slice(&right.0);
    kind.hash(&buf)
}

fn next_level(kind: HashKind, level: &[Hash]) -> Vec<Hash> {
    let pair = |c: &[Hash]| if c.len() == 2 { node_hash(kind, &c[0], &c[1]) } else { c[0] };
    if level.len() >= PAR_THRESHOLD {
        let _s = profile::span("merkle.level_par");
        level.par_chunks(2).map(pair).collect()
    } else {
        let _s = profile::span("merkle.level_seq");
        level.chunks(2).map(pair).collect()
    }
}

/// The root over already-hashed leaves.
pub fn root_from_leaves(kind: HashKind, leaves: Vec<Hash>) -> Hash {
    if leaves.is_empty() {
        return kind.hash(&[]);
    }
    let mut level = leaves;
    while level.len() > 1 {
        level = next_level(kind, &level);
    }
    level[0]
}

/// Leaf hashes of transactions' full encodings, computed in parallel for large blocks.
pub fn tx_leaves(kind: HashKind, txs: &[Tx]) -> Vec<Hash> {
    let leaf = |tx: &Tx| {
        let mut buf = Vec::with_capacity(1 + tx.encoded_len());
        buf.push(0x00);
        tx.encode_to(&mut buf);
        kind.hash(&buf)
    };
    if txs.len() >= 256 {
        let _s = profile::span("merkle.leaves_par");
        txs.par_iter().map(leaf).collect()
    } else {
        let _s = profile::span("merkle.leaves_seq");
        txs.iter().map(leaf).collect()
    }
}

/// The RFC 6962 root over transactions.
pub fn root_of_txs(kind: HashKind, txs: &[Tx]) -> Hash {
    root_from_leaves(kind, tx_leaves(kind, txs))
}

/// The RFC 6962 root over arbitrary data items.
pub fn root<T: AsRef<[u8]> + Sync>(kind: HashKind, items: &[T]) -> Hash {
    let leaves = {
        let _s = profile::span("merkle.leaves_par");
        items.par_iter().map(|d| leaf_hash(kind, d.as_ref())).collect()
    };
    root_from_leaves(kind, leaves)
}

/// A whole tree, kept to produce inclusion proofs.
#[derive(Debug, Clone)]
pub struct MerkleTree {
    kind: HashKind,
    /// `levels[0]` are the leaf hashes, the last level is the root alone.
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// Builds the tree over already-hashed leaves.
    pub fn from_leaves(kind: HashKind, leaves: Vec<Hash>) -> MerkleTree {
        let mut levels = vec![leaves];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let next = next_level(kind, levels.last().expect("loop condition checked it"));
            levels.push(next);
        }
        MerkleTree { kind, levels }
    }

    /// Number of leaves.
    pub fn len(&self) -> usize {
        self.levels[0].len()
    }

    /// Is the tree empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The root (RFC 6962 `MTH`).
    pub fn root(&self) -> Hash {
        match self.levels.last() {
            Some(l) if l.len() == 1 => l[0],
            _ => self.kind.hash(&[]),
        }
    }

    /// The RFC 6962 audit path for leaf `index`, bottom-up; `None` if out of range.
    pub fn proof(&self, index: usize) -> Option<Vec<Hash>> {
        if index >= self.len() {
            return None;
        }
        let mut path = Vec::new();
        let mut i = index;
        for level in &self.levels[..self.levels.len() - 1] {
            let sibling = i ^ 1;
            // A last unpaired node has no sibling at this level: it moves up unchanged.
            if sibling < level.len() {
                path.push(level[sibling]);
            }
            i /= 2;
        }
        Some(path)
    }
}

/// Verifies an RFC 6962 inclusion proof (the algorithm of RFC 9162 §2.1.3.2).
pub fn verify_inclusion(
    kind: HashKind,
    leaf: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(kind, p, &r);
            if f & 1 == 0 {
                while f & 1 == 0 && f != 0 {
                    f >>= 1;
                    s >>= 1;
                }
            }
        } else {
            r = node_hash(kind, &r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && r == *root
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recursive definition straight from RFC 6962 §2.1, as a model.
    fn mth(kind: HashKind, d: &[Vec<u8>]) -> Hash {
        match d.len() {
            0 => kind.hash(&[]),
            1 => leaf_hash(kind, &d[0]),
            n => {
                let k = n.next_power_of_two() / 2;
                node_hash(kind, &mth(kind, &d[..k]), &mth(kind, &d[k..]))
            }
        }
    }

    #[test]
    #[allow(clippy::needless_range_loop)] // i is a leaf index as much as a position in data
    fn bottom_up_equals_recursive_definition_and_proofs_verify() {
        for kind in HashKind::ALL {
            for n in 0..40usize {
                let data: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; i % 5]).collect();
                let expect = mth(kind, &data);
                assert_eq!(root(kind, &data), expect, "n={n}");
                let tree = MerkleTree::from_leaves(kind, data.iter().map(|d| leaf_hash(kind, d)).collect());
                assert_eq!(tree.root(), expect);
                for i in 0..n {
                    let p = tree.proof(i).expect("in range");
                    let leaf = leaf_hash(kind, &data[i]);
                    assert!(verify_inclusion(kind, &leaf, i as u64, n as u64, &p, &expect));
                    if n > 1 {
                        let other = (i + 1) % n;
                        assert!(!verify_inclusion(kind, &leaf, other as u64, n as u64, &p, &expect));
                    }
                }
                assert!(tree.proof(n).is_none());
            }
        }
    }

    #[test]
    fn large_levels_take_the_parallel_path() {
        let data: Vec<Vec<u8>> = (0..10_001u32).map(|i| i.to_le_bytes().to_vec()).collect();
        assert_eq!(root(HashKind::Sha256, &data), mth(HashKind::Sha256, &data));
    }
}
