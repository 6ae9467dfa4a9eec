//! How much memory a run will take, estimated before it starts, so that a run too large for the
//! machine says so instead of being killed hours in.
//!
//! A simulated node's memory is its own chain state, UTXO set, txid index and mempool; blocks
//! and undo data are held once for all nodes (`store::Shelf`). The estimate is linear in what
//! a run makes: per node, a fixed start (the devnet chain, the machine, the caches' tables), a
//! share per block its chain grows by and a share per transaction it admits (the txid index,
//! the pool's removal log, the duplicate cache's ids); and once, the blocks' bodies. The
//! constants come from the runs measured in `docs/SIMULATOR.md` (10,000 nodes relaying 626
//! blocks: 15,221 MiB peak; 1,000 nodes at 100 tx/s for 60 s: 2,352 MiB), and a test holds the
//! estimate to them.
//!
//! Must not: refuse a run the machine can hold by a wide margin (the estimate is of the peak,
//! not a bound with slack piled on), or read anything but its arguments (the caller passes the
//! budget, e.g. [`available_bytes`]).

/// A node's memory before its chain grows, bytes.
pub const NODE_START: u64 = 680 * 1024;
/// A node's growth per block of its chain, bytes.
pub const NODE_PER_BLOCK: u64 = 1_430;
/// A node's growth per transaction it admits, bytes.
pub const NODE_PER_TX: u64 = 270;
/// The process beyond the nodes (the queue, counters, code), bytes.
pub const BASE: u64 = 64 << 20;

/// What a run will make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Nodes.
    pub nodes: usize,
    /// Virtual time, ms.
    pub virtual_ms: u64,
    /// Mean time between blocks, ms.
    pub block_interval_ms: u64,
    /// Offered load, transactions per second (every node admits each one).
    pub tps: f64,
    /// Mean bytes of a transaction.
    pub tx_bytes: u64,
}

/// The run would not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a run of {nodes} nodes would take about {} MiB of memory, more than the {} MiB budget \
     (about {} KiB a node; fewer nodes, less virtual time or a lighter load would fit)",
    need >> 20,
    budget >> 20,
    per_node >> 10
)]
pub struct OverBudget {
    /// Nodes of the run.
    pub nodes: usize,
    /// The estimate, bytes.
    pub need: u64,
    /// The budget, bytes.
    pub budget: u64,
    /// The estimate per node, bytes.
    pub per_node: u64,
}

impl Plan {
    /// Blocks the run will make (proof of work's mean; stale ones included).
    pub fn blocks(&self) -> u64 {
        self.virtual_ms / self.block_interval_ms.max(1) + 1
    }

    /// Transactions the load will offer.
    pub fn txs(&self) -> u64 {
        (self.tps.max(0.0) * self.virtual_ms as f64 / 1_000.0).ceil() as u64
    }

    /// The estimated peak memory of the run, bytes.
    pub fn estimate(&self) -> u64 {
        let per_node = self.per_node();
        let shelf = self.blocks() * 300 + self.txs().saturating_mul(self.tx_bytes.saturating_mul(2));
        BASE.saturating_add(per_node.saturating_mul(self.nodes as u64)).saturating_add(shelf)
    }

    fn per_node(&self) -> u64 {
        NODE_START
            .saturating_add(self.blocks().saturating_mul(NODE_PER_BLOCK))
            .saturating_add(self.txs().saturating_mul(NODE_PER_TX))
    }

    /// Refuses the run if its estimate is above `budget` bytes.
    pub fn check(&self, budget: u64) -> Result<u64, OverBudget> {
        let need = self.estimate();
        if need > budget {
            return Err(OverBudget { nodes: self.nodes, need, budget, per_node: self.per_node() });
        }
        Ok(need)
    }
}

/// The memory the system says is available (`MemAvailable` of `/proc/meminfo`, given as its
/// text), bytes; `None` if the text holds no such line.
pub fn available_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(estimate: u64, measured_mib: u64, pct: u64) -> bool {
        let m = measured_mib << 20;
        estimate.abs_diff(m) * 100 <= m * pct
    }

    #[test]
    fn the_estimate_holds_to_the_measured_runs() {
        // 10,000 nodes relaying blocks for 610 s at the devnet's 1 s: 15,221 MiB.
        let relay =
            Plan { nodes: 10_000, virtual_ms: 610_000, block_interval_ms: 1_000, tps: 0.0, tx_bytes: 190 };
        assert!(within(relay.estimate(), 15_221, 10), "{}", relay.estimate() >> 20);
        // 1,000 nodes, 100 tx/s for 60 s (70 s in all): 2,352 MiB.
        let loaded = Plan {
            nodes: 1_000,
            virtual_ms: 70_000,
            block_interval_ms: 1_000,
            tps: 6_000.0 / 70.0,
            tx_bytes: 190,
        };
        assert!(within(loaded.estimate(), 2_352, 10), "{}", loaded.estimate() >> 20);
    }

    #[test]
    fn a_run_over_its_budget_is_refused_with_the_numbers() {
        let p =
            Plan { nodes: 10_000, virtual_ms: 600_000, block_interval_ms: 1_000, tps: 0.0, tx_bytes: 190 };
        let e = p.check(8 << 30).unwrap_err();
        assert_eq!(e.nodes, 10_000);
        assert!(e.need > 8 << 30);
        let text = e.to_string();
        assert!(text.contains("10000 nodes") && text.contains("8192 MiB budget"), "{text}");
        assert!(p.check(64 << 30).is_ok());
        // More nodes, more time or more load never need less.
        let more = Plan { nodes: 20_000, ..p };
        assert!(more.estimate() > p.estimate());
        let loaded = Plan { tps: 100.0, ..p };
        assert!(loaded.estimate() > p.estimate());
    }

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text = "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(available_bytes(text), Some(20_000_000 * 1024));
        assert_eq!(available_bytes("MemTotal: 1 kB\n"), None);
        assert_eq!(available_bytes("MemAvailable: lots kB\n"), None);
    }
}
