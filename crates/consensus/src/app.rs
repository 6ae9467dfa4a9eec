//! Application transactions: how a module (e.g. the voting application) adds its own
//! transaction kind with its own key-value state, without changes to the ledger.
//!
//! A module owns one [`TxKind`] (≥ 2). Its transactions pass every ledger rule a transfer passes
//! (inputs may pay fees; inputs and outputs may be empty), and in addition:
//! - [`AppModule::check_stateless`] runs in the parallel, stateless stage (the place for
//!   expensive proof checks);
//! - [`AppModule::apply`] runs in block order in the contextual stage, reading and writing the
//!   module's key-value namespace through an [`AppOverlay`];
//! - optionally, [`AppModule::precheck_batch`] checks stateless work that batches well (e.g.
//!   zero-knowledge proofs, which a random linear combination verifies many at a time) for all of
//!   a block's (or a mempool chunk's) transactions of the module at once, before `apply` runs.
//!   `apply` then finds the transaction's verdict in [`AppContext::precheck`] and skips that work;
//!   without a pre-check ([`Precheck::None`]: `sequential` mode, or a module without the hook) it
//!   does the work itself. The verdicts must be the same either way ([`precheck_txs`]);
//! - optionally, [`AppModule::conflict_keys`] names keys a transaction holds exclusively while
//!   pooled, so the mempool keeps at most one pooled transaction per key (as it does for spent
//!   outputs) instead of pooling two that no block could hold together.
//!
//! A miner replays its template's application transactions through [`AppSequence`] (state
//! rules only, in block order) and leaves out those the tip's state refuses, so that a rule
//! the mempool cannot see — one that counts pooled transactions together — never makes it
//! build a block consensus refuses.
//!
//! Keys are namespaced by the kind byte, so modules cannot touch each other's state. Writes of a
//! failed transaction are discarded; writes of a connected block are undone on a reorg.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;

use scalechain_types::{Hash, HashKind, Tx, TxKind};

use crate::params::Params;
use crate::verify::{parallel_chunk, VerifyConfig, VerifyMode};

/// A module's rejection of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    /// A stable kebab-case name of the rule that failed.
    pub rule: &'static str,
    /// What was wrong.
    pub detail: String,
    /// The rule failed on the application's state, not on the transaction alone (a voter who
    /// already voted, an election not yet published, a window closed at this height): on a
    /// chain the sender has, the transaction may be valid, so the refusal says nothing
    /// against the peer that relayed it — as with an input that is missing here.
    pub on_state: bool,
}

impl AppError {
    /// A transaction that breaks the rule whatever the state (malformed, a proof that fails).
    pub fn invalid(rule: &'static str, detail: impl Into<String>) -> AppError {
        AppError { rule, detail: detail.into(), on_state: false }
    }

    /// A transaction that the state refuses ([`AppError::on_state`]).
    pub fn on_state(rule: &'static str, detail: impl Into<String>) -> AppError {
        AppError { rule, detail: detail.into(), on_state: true }
    }
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
    /// The verdict of the module's batch pre-check for this transaction, if one ran.
    pub precheck: Precheck<'a>,
}

/// What a module's batch pre-check ([`AppModule::precheck_batch`]) found for one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precheck<'a> {
    /// No pre-check ran: [`AppModule::apply`] does the deferred work itself.
    #[default]
    None,
    /// The deferred work was checked and passed.
    Passed,
    /// The deferred work was checked and failed with this error (which `apply` reports where it
    /// would have reported its own check's).
    Failed(&'a AppError),
}

impl<'a> Precheck<'a> {
    /// The pre-check of a transaction from [`precheck_txs`]'s verdicts.
    pub fn of(verdict: &'a Option<Result<(), AppError>>) -> Precheck<'a> {
        match verdict {
            None => Precheck::None,
            Some(Ok(())) => Precheck::Passed,
            Some(Err(e)) => Precheck::Failed(e),
        }
    }
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

/// An overlay read as state (full, namespaced keys): the writes over the base, so that one
/// overlay can be layered over another ([`AppSequence`]).
impl AppStateView for AppOverlay<'_> {
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.lookup(key)
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

    /// Rules that need state, and the state changes, in block order. Work that
    /// [`AppModule::precheck_batch`] covers is skipped when [`AppContext::precheck`] holds its
    /// verdict.
    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError>;

    /// An optional batch check of stateless work that `apply` otherwise does one transaction at
    /// a time. `txs` are transactions of this module's kind (that passed
    /// [`AppModule::check_stateless`], in block order); `seed` keys the random coefficients of
    /// batch verification (secret to the validator, derived from [`VerifyConfig::seed`]).
    ///
    /// Returns one verdict per transaction, each exactly what `apply`'s own check would give
    /// that transaction alone (a failed batch must be resolved down to the culprits), or `None`
    /// — the default — when the module has no batch check.
    fn precheck_batch(
        &self,
        txs: &[&Tx],
        params: &Params,
        seed: &[u8; 32],
    ) -> Option<Vec<Result<(), AppError>>> {
        let _ = (txs, params, seed);
        None
    }

    /// Keys that a pooled transaction holds exclusively: the mempool refuses a second pooled
    /// transaction claiming one of them (e.g. a voter's second ballot for an election, which
    /// [`AppModule::apply`] would refuse once the first is in a block), and frees them when the
    /// transaction leaves the pool. Keys live in the module's own space (the mempool pairs them
    /// with [`AppModule::kind`]). Must be a pure function of the transaction, cheap, and hold
    /// few keys; a transaction that does not decode has none (its rules refuse it anyway).
    /// Default: none.
    fn conflict_keys(&self, tx: &Tx, params: &Params) -> Vec<Hash> {
        let _ = (tx, params);
        Vec::new()
    }

    /// The group a transaction may ride fee-less in, if its module lets it: the mempool holds
    /// such a transaction below its minimum fee rate when it has no inputs (no coins to pay
    /// with) and pays no fee, within a budget of bytes for all fee-less transactions and a
    /// smaller one per group, so no one group (the ballots of one election) can crowd out the
    /// others. Policy only: blocks are judged without it. Must be a pure function of the
    /// transaction, and cheap; a transaction that does not decode has none. Default: `None`
    /// (the module's transactions pay fees like transfers).
    fn fee_less_group(&self, tx: &Tx, params: &Params) -> Option<Hash> {
        let _ = (tx, params);
        None
    }

    /// The last block height at which the transaction can be included, when its validity ends
    /// with the chain's height (a ballot past its voting window). The mempool drops a pooled
    /// transaction once the block at that height is connected, so no miner builds a block that
    /// [`AppModule::apply`] refuses. Must be a pure function of the transaction, and cheap; a
    /// transaction that does not decode has none. Default: `None` (no end).
    fn last_height(&self, tx: &Tx, params: &Params) -> Option<u64> {
        let _ = (tx, params);
        None
    }
}

/// The verdicts of every module's batch pre-check over `txs`, by index (`None`: not
/// pre-checked). Transactions for which `skip` holds (coinbase, transfers, those that failed an
/// earlier rule) and those of modules without a batch check are left out. In `sequential` mode
/// nothing is pre-checked. Each module's transactions are cut into chunks of at most
/// `cfg.batch_size` (in `parallel` mode spread over the current rayon pool when `parallel`
/// holds), each chunk with coefficients from `H(cfg.seed ‖ stream ‖ kind ‖ chunk)`.
pub fn precheck_txs(
    apps: &Apps,
    params: &Params,
    cfg: &VerifyConfig,
    txs: &[Tx],
    stream: u64,
    parallel: bool,
    skip: impl Fn(usize) -> bool,
) -> Vec<Option<Result<(), AppError>>> {
    let mut out: Vec<Option<Result<(), AppError>>> = vec![None; txs.len()];
    if cfg.mode == VerifyMode::Sequential {
        return out;
    }
    for m in &apps.0 {
        let idx: Vec<usize> = (0..txs.len()).filter(|&i| txs[i].kind == m.kind() && !skip(i)).collect();
        if idx.is_empty() {
            continue;
        }
        let per = if parallel && cfg.mode == VerifyMode::Parallel {
            parallel_chunk(idx.len(), cfg.batch_size)
        } else {
            cfg.batch_size.max(1)
        };
        let run = |(c, chunk): (usize, &[usize])| {
            let seed = HashKind::Sha256
                .hash_parts(&[
                    &cfg.seed,
                    b"app-precheck",
                    &stream.to_le_bytes(),
                    &[m.kind().0],
                    &(c as u64).to_le_bytes(),
                ])
                .0;
            let batch: Vec<&Tx> = chunk.iter().map(|&i| &txs[i]).collect();
            m.precheck_batch(&batch, params, &seed).filter(|v| v.len() == chunk.len())
        };
        let verdicts: Vec<Option<Vec<Result<(), AppError>>>> = if parallel && cfg.mode == VerifyMode::Parallel
        {
            idx.par_chunks(per).enumerate().map(run).collect()
        } else {
            idx.chunks(per).enumerate().map(run).collect()
        };
        for (chunk, v) in idx.chunks(per).zip(verdicts) {
            if let Some(v) = v {
                for (&i, r) in chunk.iter().zip(v) {
                    out[i] = Some(r);
                }
            }
        }
    }
    out
}

/// Application transactions applied one after another on committed state, as a block applies
/// them, keeping the writes of each transaction its module accepts and none of one it refuses:
/// how a miner leaves out of its block template a pooled transaction that the tip's state no
/// longer admits (a ballot past its election's maximum when two ballots were pooled for the
/// last place, say), so that its block is one consensus accepts.
///
/// The work a batch pre-check covers is taken as done ([`Precheck::Passed`]): a pooled
/// transaction passed it at admission, and it depends on no state. Only `apply`'s state rules
/// are judged here; the ledger's (inputs, amounts, signatures) are not.
pub struct AppSequence<'a> {
    apps: &'a Apps,
    params: &'a Params,
    chain_id: Hash,
    height: u64,
    time: u64,
    /// Committed state with the writes of the transactions kept so far.
    kept: AppOverlay<'a>,
}

impl<'a> AppSequence<'a> {
    /// An empty sequence for the block at `height` and `time` on `state` (the parent's
    /// committed application state) of the chain `chain_id`.
    pub fn new(
        apps: &'a Apps,
        params: &'a Params,
        chain_id: Hash,
        state: &'a dyn AppStateView,
        height: u64,
        time: u64,
    ) -> AppSequence<'a> {
        AppSequence { apps, params, chain_id, height, time, kept: AppOverlay::new(state) }
    }

    /// Applies `tx` (whose txid is `txid`, at index `tx_index` of the block) after the
    /// transactions kept so far: its writes are kept if its module accepts it, dropped if not.
    /// Coinbase and transfer transactions pass untouched.
    pub fn apply(&mut self, tx: &Tx, txid: Hash, tx_index: usize) -> Result<(), AppError> {
        if tx.kind == TxKind::COINBASE || tx.kind == TxKind::TRANSFER {
            return Ok(());
        }
        let module = self.apps.get(tx.kind).ok_or_else(|| {
            AppError::invalid("unknown-kind", format!("no application module handles kind {}", tx.kind.0))
        })?;
        let actx = AppContext {
            params: self.params,
            chain_id: self.chain_id,
            height: self.height,
            time: self.time,
            tx_index,
            txid,
            precheck: Precheck::Passed,
        };
        let mut overlay = AppOverlay::new(&self.kept);
        overlay.set_namespace(tx.kind);
        module.apply(tx, &actx, &mut overlay)?;
        let writes = overlay.writes;
        self.kept.writes.extend(writes);
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::SigMode;

    /// Kind 5: `data = [key, fail]`. A key is taken once; the write comes before a `fail` byte
    /// of 1 refuses the transaction, so a refused transaction has written something.
    struct Keys;

    impl AppModule for Keys {
        fn kind(&self) -> TxKind {
            TxKind(5)
        }
        fn name(&self) -> &str {
            "keys"
        }
        fn check_stateless(&self, _: &Tx, _: &Params) -> Result<(), AppError> {
            Ok(())
        }
        fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError> {
            assert_eq!(ctx.precheck, Precheck::Passed, "the pool verified the deferred work");
            if state.get(&tx.data[..1]).is_some() {
                return Err(AppError::on_state("key-taken", ""));
            }
            state.put(&tx.data[..1], vec![1]);
            if tx.data[1] == 1 {
                return Err(AppError::invalid("late-failure", ""));
            }
            Ok(())
        }
    }

    fn tx(kind: u8, key: u8, fail: u8) -> Tx {
        Tx { version: 1, kind: TxKind(kind), inputs: vec![], outputs: vec![], data: vec![key, fail] }
    }

    #[test]
    fn a_sequence_keeps_the_writes_of_accepted_transactions_only() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let mut apps = Apps::none();
        apps.register(Arc::new(Keys));
        let mut committed = BTreeMap::new();
        committed.insert(vec![5, 9], vec![1]);
        let mut seq = AppSequence::new(&apps, &p, Hash::ZERO, &committed, 7, 0);
        let rule = |r: Result<(), AppError>| r.map_err(|e| e.rule);
        assert_eq!(rule(seq.apply(&tx(5, 9, 0), Hash::ZERO, 1)), Err("key-taken"), "committed state");
        assert_eq!(rule(seq.apply(&tx(5, 1, 1), Hash::ZERO, 1)), Err("late-failure"));
        assert_eq!(rule(seq.apply(&tx(5, 1, 0), Hash::ZERO, 1)), Ok(()), "the refused one wrote nothing");
        assert_eq!(rule(seq.apply(&tx(5, 1, 0), Hash::ZERO, 2)), Err("key-taken"), "an earlier one did");
        assert_eq!(rule(seq.apply(&tx(1, 1, 1), Hash::ZERO, 2)), Ok(()), "transfers pass");
        assert_eq!(rule(seq.apply(&tx(6, 1, 0), Hash::ZERO, 2)), Err("unknown-kind"));
    }
}
