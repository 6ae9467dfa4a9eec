//! The block tree: every known block header, on the main chain or on a competing branch, with
//! its cumulative work; fork choice picks the valid branch with the most work, the first seen
//! winning ties.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};

use ruint::aliases::U256;

use scalechain_types::{Hash, HashKind, Header};

use crate::pow::{work, HeaderChain};

/// Why a header cannot join the tree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// The parent is not in the tree (the block is an orphan).
    #[error("parent {0} is unknown")]
    UnknownParent(Hash),
    /// The parent, or one of its ancestors, is invalid.
    #[error("parent {0} is invalid")]
    InvalidParent(Hash),
}

/// One block in the tree.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The header.
    pub header: Header,
    /// Its hash.
    pub hash: Hash,
    /// Cumulative work from genesis up to and including this block.
    pub chain_work: U256,
    /// Arrival order (ties go to the first seen).
    pub seq: u64,
    /// Known to break a rule (it and its descendants can never be the tip).
    pub invalid: bool,
}

/// All known blocks and the fork choice over them.
#[derive(Debug, Clone)]
pub struct BlockTree {
    kind: HashKind,
    entries: HashMap<Hash, Entry>,
    children: HashMap<Hash, Vec<Hash>>,
    candidates: BTreeSet<(U256, Reverse<u64>, Hash)>,
    genesis: Hash,
    next_seq: u64,
}

impl BlockTree {
    /// A tree holding only genesis.
    pub fn new(kind: HashKind, genesis: Header) -> BlockTree {
        let hash = genesis.hash(kind);
        let chain_work = work(&genesis.target);
        let mut t = BlockTree {
            kind,
            entries: HashMap::new(),
            children: HashMap::new(),
            candidates: BTreeSet::new(),
            genesis: hash,
            next_seq: 1,
        };
        t.candidates.insert((chain_work, Reverse(0), hash));
        t.entries.insert(hash, Entry { header: genesis, hash, chain_work, seq: 0, invalid: false });
        t
    }

    /// The genesis hash.
    pub fn genesis(&self) -> Hash {
        self.genesis
    }

    /// Number of blocks known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never empty (genesis is always there).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// A block's entry.
    pub fn get(&self, hash: &Hash) -> Option<&Entry> {
        self.entries.get(hash)
    }

    /// Is the block known?
    pub fn contains(&self, hash: &Hash) -> bool {
        self.entries.contains_key(hash)
    }

    /// Adds a header whose parent is known and valid. Adding a known header is a no-op.
    pub fn insert(&mut self, header: Header) -> Result<&Entry, TreeError> {
        let hash = header.hash(self.kind);
        if self.entries.contains_key(&hash) {
            return Ok(&self.entries[&hash]);
        }
        let parent = self.entries.get(&header.prev_hash).ok_or(TreeError::UnknownParent(header.prev_hash))?;
        if parent.invalid {
            return Err(TreeError::InvalidParent(header.prev_hash));
        }
        let chain_work = parent.chain_work.saturating_add(work(&header.target));
        let seq = self.next_seq;
        self.next_seq += 1;
        self.children.entry(header.prev_hash).or_default().push(hash);
        self.candidates.insert((chain_work, Reverse(seq), hash));
        Ok(self.entries.entry(hash).or_insert(Entry { header, hash, chain_work, seq, invalid: false }))
    }

    /// Marks a block and all its descendants invalid.
    pub fn mark_invalid(&mut self, hash: &Hash) {
        let mut stack = vec![*hash];
        while let Some(h) = stack.pop() {
            if let Some(e) = self.entries.get_mut(&h) {
                if !e.invalid {
                    e.invalid = true;
                    self.candidates.remove(&(e.chain_work, Reverse(e.seq), h));
                }
            }
            stack.extend(self.children.get(&h).into_iter().flatten().copied());
        }
    }

    /// The known children of `hash`, in arrival order (none if it has none or is unknown).
    pub fn children(&self, hash: &Hash) -> &[Hash] {
        self.children.get(hash).map_or(&[], Vec::as_slice)
    }

    /// The block fork choice wants as the tip: most work, first seen on ties, never invalid.
    pub fn best(&self) -> Hash {
        self.candidates.last().map_or(self.genesis, |(_, _, h)| *h)
    }

    /// The ancestor of `hash` at `height` (itself if its height is `height`).
    pub fn ancestor(&self, hash: &Hash, height: u64) -> Option<Hash> {
        let mut e = self.entries.get(hash)?;
        if e.header.height < height {
            return None;
        }
        while e.header.height > height {
            e = self.entries.get(&e.header.prev_hash)?;
        }
        Some(e.hash)
    }

    /// The last common ancestor of two blocks.
    pub fn fork_point(&self, a: &Hash, b: &Hash) -> Option<Hash> {
        let (ha, hb) = (self.entries.get(a)?.header.height, self.entries.get(b)?.header.height);
        let h = ha.min(hb);
        let (mut x, mut y) = (self.ancestor(a, h)?, self.ancestor(b, h)?);
        while x != y {
            x = self.entries.get(&x)?.header.prev_hash;
            y = self.entries.get(&y)?.header.prev_hash;
        }
        Some(x)
    }

    /// The blocks after `from` (exclusive) up to `to` (inclusive), oldest first; `from` must be
    /// an ancestor of `to`.
    pub fn path(&self, from: &Hash, to: &Hash) -> Vec<Hash> {
        let mut out = Vec::new();
        let mut cur = *to;
        while cur != *from {
            let Some(e) = self.entries.get(&cur) else { break };
            out.push(cur);
            cur = e.header.prev_hash;
        }
        out.reverse();
        out
    }

    /// The ancestors of `tip` (tip included), as a [`HeaderChain`].
    pub fn branch(&self, tip: Hash) -> Branch<'_> {
        Branch { tree: self, tip }
    }
}

/// A branch of the tree ending at `tip`.
pub struct Branch<'a> {
    tree: &'a BlockTree,
    tip: Hash,
}

impl HeaderChain for Branch<'_> {
    fn header_at(&self, height: u64) -> Option<Header> {
        let h = self.tree.ancestor(&self.tip, height)?;
        Some(self.tree.entries[&h].header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::Target;

    fn hdr(parent: &Header, kind: HashKind, nonce: u64, bits: u32) -> Header {
        Header {
            version: 1,
            height: parent.height + 1,
            prev_hash: parent.hash(kind),
            merkle_root: Hash::ZERO,
            time: parent.time + 1,
            target: Target::from_bits(bits),
            nonce,
        }
    }

    #[test]
    fn most_work_wins_first_seen_breaks_ties_invalid_never_wins() {
        let k = HashKind::Sha256;
        let g = Header {
            version: 1,
            height: 0,
            prev_hash: Hash::ZERO,
            merkle_root: Hash::ZERO,
            time: 0,
            target: Target::from_bits(250),
            nonce: 0,
        };
        let mut t = BlockTree::new(k, g);
        let a1 = hdr(&g, k, 1, 250);
        let b1 = hdr(&g, k, 2, 250);
        t.insert(a1).expect("parent known");
        t.insert(b1).expect("parent known");
        assert_eq!(t.best(), a1.hash(k), "first seen wins a tie");
        let b2 = hdr(&b1, k, 3, 250);
        t.insert(b2).expect("parent known");
        assert_eq!(t.best(), b2.hash(k));
        // A harder single block outweighs two easy ones.
        let a2 = hdr(&a1, k, 4, 240);
        t.insert(a2).expect("parent known");
        assert_eq!(t.best(), a2.hash(k));
        assert_eq!(t.fork_point(&a2.hash(k), &b2.hash(k)), Some(g.hash(k)));
        assert_eq!(t.path(&g.hash(k), &b2.hash(k)), vec![b1.hash(k), b2.hash(k)]);
        t.mark_invalid(&a1.hash(k));
        assert_eq!(t.best(), b2.hash(k), "an invalid branch is never chosen");
        assert_eq!(t.insert(hdr(&a2, k, 5, 250)).err(), Some(TreeError::InvalidParent(a2.hash(k))));
        let orphan = hdr(&hdr(&b2, k, 6, 250), k, 7, 250);
        assert!(matches!(t.insert(orphan), Err(TreeError::UnknownParent(_))));
    }
}
