//! Blocks whose parent has not arrived yet, bounded in count.

use std::collections::{HashMap, VecDeque};

use scalechain_types::{Block, Hash};

/// Orphan blocks keyed by their parent's hash; the oldest is evicted when full.
#[derive(Debug)]
pub struct OrphanPool {
    max: usize,
    by_parent: HashMap<Hash, Vec<(Hash, Block)>>,
    order: VecDeque<(Hash, Hash)>,
}

impl OrphanPool {
    /// A pool holding at most `max` blocks.
    pub fn new(max: usize) -> Self {
        OrphanPool { max, by_parent: HashMap::new(), order: VecDeque::new() }
    }

    /// Number of orphans held.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Is this block held?
    pub fn contains(&self, parent: &Hash, hash: &Hash) -> bool {
        self.by_parent.get(parent).is_some_and(|v| v.iter().any(|(h, _)| h == hash))
    }

    /// Holds a block until its parent arrives.
    pub fn insert(&mut self, hash: Hash, block: Block) {
        let parent = block.header.prev_hash;
        if self.contains(&parent, &hash) || self.max == 0 {
            return;
        }
        while self.order.len() >= self.max {
            let Some((p, h)) = self.order.pop_front() else { break };
            if let Some(v) = self.by_parent.get_mut(&p) {
                v.retain(|(x, _)| *x != h);
                if v.is_empty() {
                    self.by_parent.remove(&p);
                }
            }
        }
        self.by_parent.entry(parent).or_default().push((hash, block));
        self.order.push_back((parent, hash));
    }

    /// Removes and returns the children waiting for `parent`.
    pub fn take_children(&mut self, parent: &Hash) -> Vec<(Hash, Block)> {
        let children = self.by_parent.remove(parent).unwrap_or_default();
        self.order.retain(|(p, _)| p != parent);
        children
    }
}
