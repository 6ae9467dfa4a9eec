//! What a simulated node's work costs in virtual time: the [`CostModel`] (per-operation costs
//! measured on a real machine, in nanoseconds of one core) and the [`Work`] of one admission
//! round or one block, which [`CostModel::admission_us`] and [`CostModel::block_us`] turn into
//! the time a node of `cores` cores is busy with it.
//!
//! The model splits each kind of work into a serial part (one thread: a round's and a
//! transaction's bookkeeping in the pool, a block's connection and commit) and a parallel part
//! spread over the node's cores (the signature batches, decoding and hashing), as the node
//! runs them. A block's signatures are charged only for transactions the node had not admitted
//! before (the mempool's signature cache spares the rest, as in the node).
//!
//! The numbers come from [`crate::calibrate`], which times the engine's own code (admission
//! into a `Replica`, signature batches, decoding, a block accepted onto a disk store) on the
//! machine it runs on; [`CostModel::reference`] is one such run, kept in
//! `crates/simnet/calibration.toml` with the machine and the command that made it.
//!
//! Must not: depend on the scenario. A model is measured once per machine and build, never
//! fitted to a simulation's result.

use crate::net::ModelError;

/// Per-operation costs, nanoseconds of one core.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// Fixed per admission round (taking the buffer, publishing the pool's snapshot), serial.
    pub round_ns: f64,
    /// Per transaction of a round (one input), serial: coin lookups, the ledger rules, the
    /// pool's bookkeeping; its signature and bytes apart.
    pub tx_ns: f64,
    /// Per signature checked in a batch, parallel.
    pub sig_ns: f64,
    /// Per byte decoded and hashed, parallel.
    pub byte_ns: f64,
    /// Fixed per block accepted (header checks, fork choice, the commit, the tip's
    /// publication), serial.
    pub block_ns: f64,
    /// Per transaction of a block, serial: connecting it, its undo data, its share of the
    /// store's commit, the mempool's removal.
    pub block_tx_ns: f64,
    /// Where the numbers come from (machine, build, date).
    pub source: String,
}

/// The work of one admission round or one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Transactions.
    pub txs: u64,
    /// Signatures to check (for a block: of the transactions the node had not admitted).
    pub sigs: u64,
    /// Bytes decoded and hashed.
    pub bytes: u64,
}

const KEYS: [&str; 7] = ["source", "round_ns", "tx_ns", "sig_ns", "byte_ns", "block_ns", "block_tx_ns"];

impl CostModel {
    /// The calibration kept in the repository (`crates/simnet/calibration.toml`), for tests,
    /// examples and quick runs; `scalechain study scale` measures its own.
    pub fn reference() -> CostModel {
        CostModel::from_toml(include_str!("../calibration.toml")).expect("the kept calibration parses")
    }

    /// The time a node of `cores` cores is busy with an admission round, µs (at least 1).
    pub fn admission_us(&self, w: Work, cores: u32) -> u64 {
        let serial = self.round_ns + w.txs as f64 * self.tx_ns;
        to_us(serial + self.parallel_ns(w) / f64::from(cores.max(1)))
    }

    /// The time a node of `cores` cores is busy accepting a block, µs (at least 1).
    pub fn block_us(&self, w: Work, cores: u32) -> u64 {
        let serial = self.block_ns + w.txs as f64 * self.block_tx_ns;
        to_us(serial + self.parallel_ns(w) / f64::from(cores.max(1)))
    }

    /// An admission round as phases of a job on a machine other nodes share
    /// ([`crate::WorkModel::SharedHost`]): its parallel part on `threads` threads, then its
    /// serial part on one; core-nanoseconds.
    pub fn admission_phases(&self, w: Work, threads: u32) -> [(u64, u32); 2] {
        let serial = self.round_ns + w.txs as f64 * self.tx_ns;
        [(to_ns(self.parallel_ns(w)), threads.max(1)), (to_ns(serial), 1)]
    }

    /// A block's acceptance as phases, as [`CostModel::admission_phases`].
    pub fn block_phases(&self, w: Work, threads: u32) -> [(u64, u32); 2] {
        let serial = self.block_ns + w.txs as f64 * self.block_tx_ns;
        [(to_ns(self.parallel_ns(w)), threads.max(1)), (to_ns(serial), 1)]
    }

    fn parallel_ns(&self, w: Work) -> f64 {
        w.sigs as f64 * self.sig_ns + w.bytes as f64 * self.byte_ns
    }

    /// The model as a TOML document ([`CostModel::from_toml`] reads it back).
    pub fn to_toml(&self) -> String {
        let mut t = toml::Table::new();
        t.insert("source".into(), toml::Value::String(self.source.clone()));
        for (k, v) in self.numbers() {
            t.insert(k.into(), toml::Value::Float((v * 10.0).round() / 10.0));
        }
        t.to_string()
    }

    fn numbers(&self) -> [(&'static str, f64); 6] {
        [
            ("round_ns", self.round_ns),
            ("tx_ns", self.tx_ns),
            ("sig_ns", self.sig_ns),
            ("byte_ns", self.byte_ns),
            ("block_ns", self.block_ns),
            ("block_tx_ns", self.block_tx_ns),
        ]
    }

    /// Reads a model written by [`CostModel::to_toml`]: every cost present, a finite number
    /// of at least 0; an error names the key.
    pub fn from_toml(text: &str) -> Result<CostModel, ModelError> {
        let err = |place: &str, what: String| ModelError { place: place.into(), what };
        let doc: toml::Table =
            text.parse().map_err(|e: toml::de::Error| err("document", e.message().to_string()))?;
        if let Some(k) = doc.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(k, "unknown key".into()));
        }
        let num = |k: &str| -> Result<f64, ModelError> {
            let x = match doc.get(k) {
                None => return Err(err(k, "missing".into())),
                Some(toml::Value::Float(f)) => *f,
                Some(toml::Value::Integer(i)) => *i as f64,
                Some(_) => return Err(err(k, "not a number".into())),
            };
            if !(x.is_finite() && x >= 0.0) {
                return Err(err(k, format!("{x} is negative or not finite")));
            }
            Ok(x)
        };
        let source = match doc.get("source") {
            None => "from a file".to_string(),
            Some(v) => v.as_str().ok_or_else(|| err("source", "not a string".into()))?.to_string(),
        };
        Ok(CostModel {
            round_ns: num("round_ns")?,
            tx_ns: num("tx_ns")?,
            sig_ns: num("sig_ns")?,
            byte_ns: num("byte_ns")?,
            block_ns: num("block_ns")?,
            block_tx_ns: num("block_tx_ns")?,
            source,
        })
    }
}

fn to_us(ns: f64) -> u64 {
    ((ns / 1_000.0).ceil() as u64).max(1)
}

/// Whole nanoseconds (a cost is finite and at least 0: `from_toml` says so).
fn to_ns(ns: f64) -> u64 {
    ns.ceil().clamp(0.0, u64::MAX as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> CostModel {
        CostModel {
            round_ns: 0.0,
            tx_ns: 1_000.0,
            sig_ns: 10_000.0,
            byte_ns: 0.0,
            block_ns: 0.0,
            block_tx_ns: 0.0,
            source: "test".into(),
        }
    }

    #[test]
    fn cores_divide_only_the_parallel_part() {
        let m = model();
        let w = Work { txs: 100, sigs: 100, bytes: 0 };
        assert_eq!(m.admission_us(w, 1), 100 + 1_000);
        assert_eq!(m.admission_us(w, 4), 100 + 250);
        assert_eq!(m.admission_us(Work::default(), 8), 1, "never free");
        let block = Work { sigs: 0, ..w };
        assert_eq!(m.block_us(block, 1), m.block_us(block, 16), "a block of cached signatures is serial");
    }

    #[test]
    fn a_model_reads_back_what_it_wrote_and_bad_files_say_where() {
        let m = model();
        assert_eq!(CostModel::from_toml(&m.to_toml()).unwrap(), m);
        let bad = m.to_toml().replace("sig_ns = 10000.0", "sig_ns = -1.0");
        assert_eq!(CostModel::from_toml(&bad).unwrap_err().place, "sig_ns");
        let missing = m.to_toml().replace("sig_ns = 10000.0", "");
        assert_eq!(CostModel::from_toml(&missing).unwrap_err().place, "sig_ns");
        let unknown = format!("{}\ninput_ns = 3\n", m.to_toml());
        assert_eq!(CostModel::from_toml(&unknown).unwrap_err().place, "input_ns");
        let r = CostModel::reference();
        assert!(r.sig_ns > 0.0 && r.block_tx_ns > 0.0 && !r.source.is_empty());
    }
}
