//! Application transactions: how a module (e.g. the voting application) adds its own
//! transaction kind with its own key-value state, without changes to the ledger.
//!
//! A module owns one [`TxKind`] (≥ 2). Its transactions pass every ledger rule a transfer passes
//! (inputs may pay fees; inputs and outputs may be empty), and in addition:
//! - [`AppModule::check_stateless`] runs in the parallel, stateless stage (the place for
//!   expensive proof checks);
//! - [`AppModule::apply`] runs in block order in the contextual stage, reading and writing the
//!   module's key-value namespace through an [`AppOverlay`].
//!
//! Keys are namespaced by the kind byte, so modules cannot touch each other's state. Writes of a
//! failed transaction are discarded; writes of a connected block are undone on a reorg.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use scalechain_types::{Hash, Tx, TxKind};

use crate::params::Params;

/// A module's rejection of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    /// A stable kebab-case name of the rule that failed.
    pub rule: &'static str,
    /// What was wrong.
    pub detail: String,
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for AppError {}

/// Where an application transaction is being applied.
#[derive(Debug, Clone, Copy)]
pub struct AppContext<'a> {
    /// Chain parameters.
    pub params: &'a Params,
    /// The chain id.
    pub chain_id: Hash,
    /// Height of the block.
    pub height: u64,
    /// Time of the block (ms).
    pub time: u64,
    /// Index of the transaction in the block.
    pub tx_index: usize,
    /// The transaction's txid.
    pub txid: Hash,
}

/// Read access to committed application state (full keys, namespace byte first).
pub trait AppStateView {
    /// The value under `key`, if any.
    fn get(&self, key: &[u8]) -> Option<Vec<u8>>;
}

impl AppStateView for BTreeMap<Vec<u8>, Vec<u8>> {
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        BTreeMap::get(self, key).cloned()
    }
}

/// Writes of a block (or a transaction) layered over committed state.
pub struct AppOverlay<'a> {
    base: &'a dyn AppStateView,
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    namespace: u8,
}

impl<'a> AppOverlay<'a> {
    /// An empty overlay over `base`.
    pub fn new(base: &'a dyn AppStateView) -> Self {
        AppOverlay { base, writes: BTreeMap::new(), namespace: 0 }
    }

    fn full_key(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(1 + key.len());
        k.push(self.namespace);
        k.extend_from_slice(key);
        k
    }

    fn lookup(&self, full: &[u8]) -> Option<Vec<u8>> {
        match self.writes.get(full) {
            Some(v) => v.clone(),
            None => self.base.get(full),
        }
    }

    /// Reads a key of the current module's namespace.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.lookup(&self.full_key(key))
    }

    /// Writes a key of the current module's namespace.
    pub fn put(&mut self, key: &[u8], value: Vec<u8>) {
        let k = self.full_key(key);
        self.writes.insert(k, Some(value));
    }

    /// Deletes a key of the current module's namespace.
    pub fn delete(&mut self, key: &[u8]) {
        let k = self.full_key(key);
        self.writes.insert(k, None);
    }

    pub(crate) fn set_namespace(&mut self, kind: TxKind) {
        self.namespace = kind.0;
    }

    /// The writes made, with the values they replace (for undo).
    pub(crate) fn into_changes(self) -> Vec<AppChange> {
        let base = self.base;
        self.writes
            .into_iter()
            .map(|(k, v)| {
                let old = base.get(&k);
                (k, v, old)
            })
            .collect()
    }
}

/// A key written by a block: `(key, new value, previous value)`, `None` meaning absent.
pub(crate) type AppChange = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// An application module.
pub trait AppModule: Send + Sync {
    /// The transaction kind it owns (≥ 2).
    fn kind(&self) -> TxKind;

    /// A name for people.
    fn name(&self) -> &str;

    /// Rules that need no state (run in parallel across a block's transactions).
    fn check_stateless(&self, tx: &Tx, params: &Params) -> Result<(), AppError>;

    /// Rules that need state, and the state changes, in block order.
    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError>;
}

/// The registered application modules.
#[derive(Clone, Default)]
pub struct Apps(Vec<Arc<dyn AppModule>>);

impl Apps {
    /// No modules: only coinbase and transfer transactions are valid.
    pub fn none() -> Apps {
        Apps(Vec::new())
    }

    /// Registers a module.
    ///
    /// # Panics
    /// If the module claims kind 0 or 1, or a kind already registered: a wiring bug, not data.
    pub fn register(&mut self, m: Arc<dyn AppModule>) {
        assert!(m.kind().0 > 1, "kinds 0 and 1 are the ledger's own");
        assert!(self.get(m.kind()).is_none(), "kind {} registered twice", m.kind().0);
        self.0.push(m);
    }

    /// The module for a kind.
    pub fn get(&self, kind: TxKind) -> Option<&Arc<dyn AppModule>> {
        self.0.iter().find(|m| m.kind() == kind)
    }
}

impl fmt::Debug for Apps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|m| (m.kind().0, m.name().to_string()))).finish()
    }
}
