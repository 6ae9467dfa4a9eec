//! `scalechain wallet`: an encrypted key store (see `scalechain-wallet`) used through a node's
//! HTTP API: addresses, the confirmed balance from the node's UTXO set (and what its mempool
//! holds for or against it), transfers built, signed and submitted.
//!
//! - The wallet file is `--wallet FILE`, by default `wallet.json` in the current directory.
//! - The passphrase comes from `--passphrase-file FILE` (its first line) or the environment
//!   variable `SCALECHAIN_PASSPHRASE`; the command never prompts, so it runs the same in scripts
//!   and terminals.
//! - The node is `--api URL`, by default `http://` followed by the `api.listen` default of the
//!   node's configuration (`127.0.0.1:8645`). Writes send `--token`/`--token-file` as a bearer
//!   token (a node listening beyond loopback keeps it in `DATA_DIR/api_token`). These options,
//!   the client they give and the chain's recognition are [`crate::remote`]'s, shared with the
//!   other commands that talk to a node.
//! - The chain (hash function, signature schemes, coinbase maturity) is recognised from the
//!   node's chain id among the devnet parameter sets; addresses use the devnet prefix `scdev`
//!   and name the chain's hash function (an address of another is refused before sending).
//!   Commands that do not ask the node (`new`, `address`, `list`, `import --seed-file`) write
//!   addresses for `--hash` (default sha256).
//! - Receiving addresses (`address`, and the change of what the wallet sends) are the wallet's
//!   own derived keys; imported keys (a devnet premine key, say) are spent from, never handed
//!   out: their secret may be known to others.
//! - What the wallet sends may spend its own unconfirmed change: the outputs paying its keys of
//!   the pooled transactions that spend its coins (as Bitcoin Core spends its own unconfirmed
//!   change), so sends in a row need not wait for a block.
//!
//! Every failure is a [`WalletError`] saying what was wrong; its exit code follows the rest of
//! the command line: 1 for a refusal (wrong passphrase, insufficient funds, a transaction or
//! request the node refused), 2 for bad usage and IO (a malformed address or amount, files,
//! an unreachable API).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use scalechain_client::types::{Owner, TxState};
use scalechain_client::ClientError;
use scalechain_consensus::params::{devnet_premine_seed, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::Params;
use scalechain_types::codec::Decode;
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, Scheme, Tx, TxKind, TxOut};
use scalechain_wallet::{
    balance, build_app_tx, build_transfer, encode_address, parse_address, AddressError, AddressHrp,
    AppTxRequest, BalanceError, BuildError, BuildOptions, BuiltTransfer, ChainContext, FeeRate, KdfParams,
    KeyId, KeyInfo, Keyring, KeystoreError, Passphrase, PassphraseError, Seed, SeedError, TransferRequest,
    Wallet,
};

use crate::remote::{node_chain, Api, ChainInfo, NodeError, NodeOpts};
use crate::Fail;

/// The environment variable holding the passphrase.
pub const PASSPHRASE_ENV: &str = "SCALECHAIN_PASSPHRASE";
/// The most coins listed per key (the API's own maximum).
const UTXO_LIMIT: usize = 100_000;
/// The largest mempool whose transactions `balance` and `send` look through (one request each).
const PENDING_SCAN_MAX: usize = 500;

/// Where the wallet file is and how to unlock it.
#[derive(Args, Clone, Debug)]
pub struct WalletOpts {
    /// The wallet file.
    #[arg(long, global = true, default_value = "wallet.json")]
    pub wallet: PathBuf,
    /// Read the passphrase from the first line of this file (otherwise from the environment
    /// variable SCALECHAIN_PASSPHRASE; there is no prompt).
    #[arg(long, global = true)]
    pub passphrase_file: Option<PathBuf>,
    /// The chain's hash function, for commands that do not ask the node (addresses depend on
    /// it); default sha256. Commands that ask the node use the node's and refuse a different one.
    #[arg(long, global = true)]
    pub hash: Option<HashKind>,
}

/// Arguments of `scalechain wallet`.
#[derive(Args)]
pub struct WalletArgs {
    #[command(flatten)]
    wallet: WalletOpts,
    #[command(flatten)]
    api: NodeOpts,
    #[command(subcommand)]
    cmd: WalletCmd,
}

#[derive(Subcommand)]
enum WalletCmd {
    /// Create an encrypted key store with its first (ed25519) key; refuses to overwrite a file.
    New,
    /// Print a receiving address: the newest key of the scheme (one is derived if there is
    /// none), or a new key with --new.
    Address {
        /// Derive a new key.
        #[arg(long)]
        new: bool,
        /// Signature scheme: ed25519 or secp256k1.
        #[arg(long, default_value = "ed25519")]
        scheme: Scheme,
    },
    /// List every key and its address.
    List {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The confirmed balance from the node's UTXO set, and what its mempool adds or spends.
    Balance(BalanceArgs),
    /// Build, sign and submit a transfer; prints its txid.
    Send(SendArgs),
    /// Write a backup of the wallet file (encrypted under the same passphrase).
    Backup {
        /// The backup file (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
    /// Restore a backup into the wallet file (which must not exist).
    Restore {
        /// The backup file.
        #[arg(long)]
        from: PathBuf,
    },
    /// Add a key to spend from: a seed (64 hex digits on the first line of FILE), or devnet
    /// premine key N (the node says its scheme). Imported keys are never receiving addresses.
    Import {
        /// The file holding the seed.
        #[arg(long, required_unless_present = "devnet_key", conflicts_with = "devnet_key")]
        seed_file: Option<PathBuf>,
        /// The key's signature scheme (with --seed-file).
        #[arg(long, default_value = "ed25519", conflicts_with = "devnet_key")]
        scheme: Scheme,
        /// Devnet premine key N (0 to 1023, each holding 10 SC on a fresh devnet): asks the node
        /// for its chain.
        #[arg(long, value_parser = clap::value_parser!(u64).range(0..DEVNET_PREMINE_OUTPUTS))]
        devnet_key: Option<u64>,
    },
}

/// Arguments of `balance`.
#[derive(Args, Clone, Debug)]
pub struct BalanceArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `send`.
#[derive(Args, Clone, Debug)]
pub struct SendArgs {
    /// The recipient's address (bech32m, `scdev1...`).
    #[arg(long)]
    pub to: String,
    /// The amount the recipient gets, in base units.
    #[arg(long)]
    pub amount: u64,
    /// Fee per 1,000 bytes of the signed transaction.
    #[arg(long, default_value_t = 1_000)]
    pub fee_rate: u64,
}

/// Why a wallet command failed.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// No passphrase source was given.
    #[error(
        "no passphrase: set the environment variable {PASSPHRASE_ENV} or pass --passphrase-file FILE \
         (the wallet does not prompt)"
    )]
    NoPassphrase,
    /// The passphrase could not be read.
    #[error(transparent)]
    Passphrase(#[from] PassphraseError),
    /// The wallet file does not exist.
    #[error("no wallet file {0}: create one with `scalechain wallet new` (or pass --wallet FILE)")]
    NoWallet(PathBuf),
    /// The key store refused (wrong passphrase, corrupt file, existing file, IO).
    #[error(transparent)]
    Keystore(#[from] KeystoreError),
    /// An address given on the command line is malformed.
    #[error("{what} {input:?}: {source}")]
    Address {
        /// Which argument.
        what: &'static str,
        /// The text given.
        input: String,
        /// What was wrong with it.
        source: AddressError,
    },
    /// An amount is out of range.
    #[error("{what} {value}: amounts are at most 2^53 - 1 base units")]
    AmountRange {
        /// Which argument.
        what: &'static str,
        /// The value given.
        value: u64,
    },
    /// A seed file is unreadable or malformed.
    #[error("seed file {path}: {reason}")]
    SeedFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The transfer could not be built.
    #[error("{source}{note}")]
    Build {
        /// Why.
        source: BuildError,
        /// Which coins were left out, if any.
        note: String,
    },
    /// `import` was given neither a seed file nor a devnet key (the command line requires one).
    #[error("import needs --seed-file FILE or --devnet-key N")]
    NoSeed,
    /// The wallet holds no key.
    #[error("the wallet {0} holds no key: run `scalechain wallet address --new`")]
    NoKeys(PathBuf),
    /// Reaching the node failed (unusable options, unreachable), it answered with an error (its
    /// code and message), or its chain is not one this program knows or not `--hash`'s.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The API's answer is not what it documents.
    #[error("{url}: unexpected answer from the node: {detail}")]
    BadResponse {
        /// The URL.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The node refused the transaction (the rule named once: the node's detail may already
    /// start with it).
    #[error("the node refused transaction {txid}: {}", rule_detail(reason, detail))]
    Refused {
        /// Its txid.
        txid: Hash,
        /// The rule or policy.
        reason: String,
        /// Details.
        detail: String,
    },
    /// The coins the node lists do not add up.
    #[error("the node's coin list: {0}")]
    Balance(#[from] BalanceError),
}

/// A refusal's rule and detail as one text, the rule said once: `rule: detail`, or the detail
/// alone when it already starts with the rule (as the node's do).
pub(crate) fn rule_detail(rule: &str, detail: &str) -> String {
    match detail.strip_prefix(rule).and_then(|d| d.strip_prefix(": ")).unwrap_or(detail) {
        "" => rule.to_string(),
        what => format!("{rule}: {what}"),
    }
}

impl WalletError {
    /// The exit code: 1 for refusals, 2 for bad usage and IO.
    pub fn code(&self) -> u8 {
        match self {
            WalletError::Keystore(KeystoreError::WrongPassphrase { .. })
            | WalletError::Build { .. }
            | WalletError::BadResponse { .. }
            | WalletError::Refused { .. }
            | WalletError::Balance(_) => 1,
            WalletError::Node(e) => e.code(),
            _ => 2,
        }
    }

    fn bad(url: &str, detail: impl Into<String>) -> WalletError {
        WalletError::BadResponse { url: url.to_string(), detail: detail.into() }
    }
}

impl From<ClientError> for WalletError {
    fn from(e: ClientError) -> WalletError {
        WalletError::Node(e.into())
    }
}

impl From<WalletError> for Fail {
    fn from(e: WalletError) -> Fail {
        Fail(e.code(), e.to_string())
    }
}

/// A coin as the node lists it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Coin {
    /// Where it is.
    pub outpoint: OutPoint,
    /// Value and lock.
    pub out: TxOut,
    /// Height of the block that created it.
    pub height: u64,
    /// Created by a coinbase?
    pub coinbase: bool,
}

impl Coin {
    /// May a transaction in the next block spend it?
    pub fn spendable(&self, params: &Params, tip_height: u64) -> bool {
        !self.coinbase || tip_height.saturating_add(1) >= self.height.saturating_add(params.coinbase_maturity)
    }
}

/// The coins locked to `lock`, as the node lists them (at most [`UTXO_LIMIT`]).
pub(crate) fn coins_of(api: &Api, lock: &Lock) -> Result<Vec<Coin>, WalletError> {
    let list = api.utxos(&Owner::from(lock), Some(UTXO_LIMIT))?;
    Ok(list
        .into_iter()
        .filter(|u| u.scheme == lock.scheme)
        .map(|u| Coin {
            outpoint: u.outpoint(),
            out: TxOut { value: u.value, lock: *lock },
            height: u.height,
            coinbase: u.coinbase,
        })
        .collect())
}

/// What the mempool holds for and against a set of locks.
#[derive(Default)]
pub(crate) struct Pending {
    /// Was the mempool small enough to look through?
    pub scanned: bool,
    /// Transactions in the mempool.
    pub mempool_txs: usize,
    /// Unconfirmed outputs paying the locks that no pooled transaction spends.
    pub incoming: Amount,
    /// The value of confirmed coins that unconfirmed transactions spend.
    pub outgoing: Amount,
    /// The confirmed coins that pooled transactions spend.
    pub spent: HashSet<OutPoint>,
    /// The wallet's own unconfirmed change: outputs paying its locks of pooled transactions
    /// that spend its coins (confirmed, or such change in turn), that no pooled transaction
    /// spends. A transfer may spend them.
    pub change: Vec<(OutPoint, TxOut)>,
}

/// Looks through the mempool (when it holds at most [`PENDING_SCAN_MAX`] transactions) for
/// transactions paying `locks` or spending `coins`, and the wallet's own unconfirmed change.
pub(crate) fn pending(
    api: &Api,
    locks: &HashSet<Lock>,
    coins: &HashMap<OutPoint, Amount>,
) -> Result<Pending, WalletError> {
    let m = api.mempool(Some(PENDING_SCAN_MAX))?;
    let mut p = Pending { mempool_txs: m.count, ..Pending::default() };
    if m.count > PENDING_SCAN_MAX {
        return Ok(p);
    }
    let mut pooled: Vec<(Hash, Tx)> = Vec::with_capacity(m.txids.len());
    for txid in &m.txids {
        let st = match api.tx(txid) {
            Ok(s) => s,
            // Confirmed or evicted since the list was made.
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        if st.status != TxState::Mempool {
            continue;
        }
        let url = format!("{}/txs/{txid}", api.base());
        let bytes = hex::decode(&st.tx.raw).map_err(|e| WalletError::bad(&url, format!("raw: {e}")))?;
        let tx = Tx::decode(&bytes).map_err(|e| WalletError::bad(&url, format!("raw: {e}")))?;
        for i in &tx.inputs {
            if let Some(v) = coins.get(&i.prev) {
                if p.spent.insert(i.prev) {
                    p.outgoing =
                        p.outgoing.checked_add(*v).map_err(|e| WalletError::bad(&url, e.to_string()))?;
                }
            }
        }
        pooled.push((*txid, tx));
    }
    // Incoming: pooled outputs paying the locks that no pooled transaction spends (the change
    // of a send that a later send spent is not counted twice).
    let spent_in_pool: HashSet<OutPoint> =
        pooled.iter().flat_map(|(_, t)| t.inputs.iter().map(|i| i.prev)).collect();
    for (txid, tx) in &pooled {
        for (index, o) in tx.outputs.iter().enumerate() {
            let Ok(index) = u32::try_from(index) else { break };
            if locks.contains(&o.lock) && !spent_in_pool.contains(&OutPoint { txid: *txid, index }) {
                p.incoming = p
                    .incoming
                    .checked_add(o.value)
                    .map_err(|e| WalletError::bad(api.base(), e.to_string()))?;
            }
        }
    }
    p.change = own_change(&pooled, locks, coins, &spent_in_pool);
    p.scanned = true;
    Ok(p)
}

/// The wallet's own unconfirmed change among `pooled` transactions: the outputs paying `locks`
/// of those spending `coins` or such change in turn (found until nothing more is), that no
/// pooled transaction spends (`spent_in_pool`: every pooled input).
fn own_change(
    pooled: &[(Hash, Tx)],
    locks: &HashSet<Lock>,
    coins: &HashMap<OutPoint, Amount>,
    spent_in_pool: &HashSet<OutPoint>,
) -> Vec<(OutPoint, TxOut)> {
    let mut own = vec![false; pooled.len()];
    let mut change: HashMap<OutPoint, TxOut> = HashMap::new();
    // At most one pass per pooled transaction: each pass that goes on marks one more as own.
    loop {
        let mut grew = false;
        for ((txid, tx), own) in pooled.iter().zip(own.iter_mut()) {
            if *own || !tx.inputs.iter().any(|i| coins.contains_key(&i.prev) || change.contains_key(&i.prev))
            {
                continue;
            }
            *own = true;
            grew = true;
            for (index, o) in tx.outputs.iter().enumerate() {
                let Ok(index) = u32::try_from(index) else { break };
                if locks.contains(&o.lock) {
                    change.insert(OutPoint { txid: *txid, index }, *o);
                }
            }
        }
        if !grew {
            break;
        }
    }
    let mut out: Vec<(OutPoint, TxOut)> =
        change.into_iter().filter(|(op, _)| !spent_in_pool.contains(op)).collect();
    out.sort_by_key(|(op, _)| *op);
    out
}

/// Reads the passphrase: `--passphrase-file`, else the environment variable.
pub(crate) fn passphrase(opts: &WalletOpts) -> Result<Passphrase, WalletError> {
    if let Some(f) = &opts.passphrase_file {
        return Ok(Passphrase::from_file(f)?);
    }
    match Passphrase::from_env(PASSPHRASE_ENV) {
        Ok(p) => Ok(p),
        Err(PassphraseError::EnvMissing { .. }) => Err(WalletError::NoPassphrase),
        Err(e) => Err(e.into()),
    }
}

/// Opens the wallet file.
pub(crate) fn open(opts: &WalletOpts) -> Result<Wallet, WalletError> {
    if !opts.wallet.exists() {
        return Err(WalletError::NoWallet(opts.wallet.clone()));
    }
    let pass = passphrase(opts)?;
    Ok(Wallet::open(&opts.wallet, &pass)?)
}

fn amount(what: &'static str, value: u64) -> Result<Amount, WalletError> {
    Amount::new(value).map_err(|_| WalletError::AmountRange { what, value })
}

fn hrp() -> AddressHrp {
    AddressHrp::devnet()
}

/// `n` and the noun, plural unless `n` is 1 (`1 output`, `2 outputs`).
pub(crate) fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The key that receives: the wallet's first derived key (imported keys are spent from, never
/// handed out), else its first key.
fn receiving_key(wallet: &Wallet) -> Result<KeyInfo, WalletError> {
    let keys = wallet.keys();
    keys.iter()
        .find(|k| k.receives())
        .or_else(|| keys.first())
        .copied()
        .ok_or_else(|| WalletError::NoKeys(wallet.path().to_path_buf()))
}

fn key_name(id: KeyId) -> String {
    match id {
        KeyId::Derived { scheme, index } => format!("{scheme} #{index}"),
        KeyId::Imported { index } => format!("imported #{index}"),
    }
}

/// The hash function for commands that do not ask the node.
fn offline_hash(opts: &WalletOpts) -> HashKind {
    opts.hash.unwrap_or(HashKind::Sha256)
}

/// What a command prints: `out` on standard output, `info` on standard error (the shell prints
/// both).
#[derive(Default)]
pub(crate) struct Output {
    /// For standard output.
    pub out: String,
    /// For standard error.
    pub info: String,
}

/// A wallet's balance as `balance` reports it.
pub(crate) struct BalanceReport {
    /// The coins the node lists for the wallet's keys.
    pub confirmed: Amount,
    /// Of those, coinbase outputs not yet mature.
    pub immature: Amount,
    /// Coins.
    pub coins: usize,
    /// Per address: amount and coins.
    pub by_address: Vec<(String, Amount, usize)>,
    /// What the mempool holds.
    pub pending: Pending,
    /// The tip height the coins were read at.
    pub height: u64,
}

/// The wallet's locks, as a set and in key order without repeats.
fn wallet_locks(wallet: &Wallet, kind: HashKind) -> (HashSet<Lock>, Vec<Lock>) {
    let mut set = HashSet::new();
    let mut ordered = Vec::new();
    for l in wallet.locks(kind) {
        if set.insert(l) {
            ordered.push(l);
        }
    }
    (set, ordered)
}

/// Reads the balance of `wallet` from the node.
pub(crate) fn balance_of(
    api: &Api,
    opts: &WalletOpts,
    wallet: &Wallet,
) -> Result<BalanceReport, WalletError> {
    // The node's chain, checked against `--hash`.
    let chain = node_chain(api, opts.hash)?;
    let kind = chain.params.hash;
    let (locks, ordered) = wallet_locks(wallet, kind);
    let mut coins = Vec::new();
    for lock in &ordered {
        coins.extend(coins_of(api, lock)?);
    }
    let list: Vec<(OutPoint, TxOut)> = coins.iter().map(|c| (c.outpoint, c.out)).collect();
    let b = balance(&list, &hrp(), kind)?;
    let mut immature = Amount::ZERO;
    for c in coins.iter().filter(|c| !c.spendable(&chain.params, chain.height)) {
        immature = immature.checked_add(c.out.value).map_err(|_| BalanceError { at: c.outpoint })?;
    }
    let values: HashMap<OutPoint, Amount> = coins.iter().map(|c| (c.outpoint, c.out.value)).collect();
    let pending = pending(api, &locks, &values)?;
    let mut by_address: Vec<(String, Amount, usize)> =
        b.by_address.into_iter().map(|(a, v)| (a, v.amount, v.coins)).collect();
    // Addresses of keys without coins too.
    for lock in &ordered {
        let a = encode_address(&hrp(), kind, lock);
        if !by_address.iter().any(|(x, _, _)| *x == a) {
            by_address.push((a, Amount::ZERO, 0));
        }
    }
    by_address.sort();
    Ok(BalanceReport {
        confirmed: b.total,
        immature,
        coins: b.coins,
        by_address,
        pending,
        height: chain.height,
    })
}

/// Formats a balance.
pub(crate) fn balance_text(r: &BalanceReport, json: bool) -> String {
    let p = &r.pending;
    if json {
        let v = serde_json::json!({
            "height": r.height,
            "confirmed": r.confirmed.get(),
            "immature": r.immature.get(),
            "coins": r.coins,
            "pending_scanned": p.scanned,
            "pending_in": p.incoming.get(),
            "pending_out": p.outgoing.get(),
            "mempool_txs": p.mempool_txs,
            "addresses": r.by_address.iter().map(|(a, v, n)| serde_json::json!({"address": a, "amount": v.get(), "coins": n})).collect::<Vec<_>>(),
        });
        return format!("{v}\n");
    }
    let mut s = String::new();
    for (a, v, n) in &r.by_address {
        s.push_str(&format!("  {a}  {v:>16} ({}) in {}\n", v.coins(), plural(*n, "output")));
    }
    s.push_str(&format!(
        "confirmed {} ({}) in {} at height {} ({} immature)\n",
        r.confirmed,
        r.confirmed.coins(),
        plural(r.coins, "output"),
        r.height,
        r.immature
    ));
    if p.scanned {
        s.push_str(&format!(
            "pending   +{} incoming, -{} spent (mempool of {})\n",
            p.incoming,
            p.outgoing,
            plural(p.mempool_txs, "transaction")
        ));
    } else {
        s.push_str(&format!(
            "pending   not computed: the mempool holds {} transactions (more than {PENDING_SCAN_MAX})\n",
            p.mempool_txs
        ));
    }
    s.push_str("amounts in base units (1 SC = 100,000,000)\n");
    s
}

/// Builds, signs and submits a transfer from `wallet`.
pub(crate) fn send(
    api: &Api,
    opts: &WalletOpts,
    wallet: &Wallet,
    args: &SendArgs,
) -> Result<BuiltTransfer, WalletError> {
    // The node's chain, checked against `--hash`. The address must be one of its hash
    // function: coins sent elsewhere are lost.
    let chain = node_chain(api, opts.hash)?;
    let to = parse_address(&args.to, &hrp(), chain.params.hash).map_err(|source| WalletError::Address {
        what: "--to",
        input: args.to.clone(),
        source,
    })?;
    let value = amount("--amount", args.amount)?;
    let rate = FeeRate::per_kb(amount("--fee-rate", args.fee_rate)?);
    let built = fund(api, &chain, wallet, |signer, ctx, coins, change| {
        let req = TransferRequest { coins, to, amount: value, change, options: BuildOptions::new(rate) };
        build_transfer(signer, ctx, &req)
    })?;
    submit_built(api, &built)?;
    Ok(built)
}

/// Builds and signs an application transaction of `kind` carrying `data`, its fee at
/// `fee_rate` per 1,000 bytes paid from `wallet` (an election, say); [`submit_built`] submits it.
pub(crate) fn fund_app_tx(
    api: &Api,
    opts: &WalletOpts,
    wallet: &Wallet,
    kind: TxKind,
    data: &[u8],
    fee_rate: u64,
) -> Result<BuiltTransfer, WalletError> {
    let rate = FeeRate::per_kb(amount("--fee-rate", fee_rate)?);
    fund(api, &node_chain(api, opts.hash)?, wallet, |signer, ctx, coins, change| {
        let req = AppTxRequest { coins, kind, data, change, options: BuildOptions::new(rate) };
        build_app_tx(signer, ctx, &req)
    })
}

/// Builds a transaction with `build` from the wallet's spendable coins (mature, and not spent
/// by a pooled transaction) and its own unconfirmed change, change to its first derived key, on
/// the node's `chain`.
fn fund(
    api: &Api,
    chain: &ChainInfo,
    wallet: &Wallet,
    build: impl FnOnce(
        &Keyring<'_>,
        &ChainContext,
        &[(OutPoint, TxOut)],
        Lock,
    ) -> Result<BuiltTransfer, BuildError>,
) -> Result<BuiltTransfer, WalletError> {
    let kind = chain.params.hash;
    let change = receiving_key(wallet)?.lock(kind);
    let (locks, ordered) = wallet_locks(wallet, kind);
    let mut all = Vec::new();
    for lock in &ordered {
        all.extend(coins_of(api, lock)?);
    }
    let values: HashMap<OutPoint, Amount> = all.iter().map(|c| (c.outpoint, c.out.value)).collect();
    let pend = pending(api, &locks, &values)?;
    let (mut immature, mut in_flight) = (0usize, 0usize);
    let coins: Vec<(OutPoint, TxOut)> = all
        .iter()
        .filter(|c| {
            let ok = c.spendable(&chain.params, chain.height);
            immature += usize::from(!ok);
            ok
        })
        .filter(|c| {
            let free = !pend.spent.contains(&c.outpoint);
            in_flight += usize::from(!free);
            free
        })
        .map(|c| (c.outpoint, c.out))
        .chain(pend.change.iter().copied())
        .collect();
    let ctx = ChainContext { hash: kind, chain_id: chain.chain_id };
    build(&wallet.keyring(kind), &ctx, &coins, change).map_err(|source| {
        let mut note = String::new();
        if immature > 0 {
            note.push_str(&format!("; {} left out", plural(immature, "immature coinbase output")));
        }
        if in_flight > 0 {
            note.push_str(&format!(
                "; {} already spent by transactions waiting for a block left out",
                plural(in_flight, "output")
            ));
        }
        if !pend.scanned {
            note.push_str("; the mempool was too large to check for coins already being spent");
        }
        WalletError::Build { source, note }
    })
}

/// Submits a built transaction; the node's refusal is [`WalletError::Refused`].
pub(crate) fn submit_built(api: &Api, built: &BuiltTransfer) -> Result<(), WalletError> {
    let r = api.submit(std::slice::from_ref(&built.tx))?;
    let v = r.results.into_iter().next().ok_or_else(|| WalletError::bad(api.base(), "no verdict"))?;
    if !v.accepted {
        return Err(WalletError::Refused {
            txid: built.txid,
            reason: v.reason.unwrap_or_else(|| "refused".into()),
            detail: v.detail.unwrap_or_default(),
        });
    }
    Ok(())
}

/// Describes a sent transfer: the txid on `out`, the rest on `info`.
pub(crate) fn send_text(args: &SendArgs, b: &BuiltTransfer) -> Output {
    Output {
        out: format!("{}\n", b.txid),
        info: format!(
            "sent {} to {}: fee {} for {} bytes, {} spent, change {}\n",
            args.amount,
            args.to,
            b.fee,
            b.size,
            plural(b.spent.len(), "output"),
            b.change.map_or("none".to_string(), |c| c.to_string())
        ),
    }
}

fn run_cmd(a: &WalletArgs) -> Result<Output, WalletError> {
    let o = &a.wallet;
    let mut out = Output::default();
    match &a.cmd {
        WalletCmd::New => {
            if o.wallet.exists() {
                return Err(KeystoreError::AlreadyExists { path: o.wallet.clone() }.into());
            }
            let pass = passphrase(o)?;
            let mut w = Wallet::create(&o.wallet, &pass, KdfParams::DEFAULT)?;
            let k = w.new_key(Scheme::Ed25519)?;
            out.info = format!("created {}\n", o.wallet.display());
            out.out = format!("{}\n", k.address(offline_hash(o), &hrp()));
        }
        WalletCmd::Address { new, scheme } => {
            let mut w = open(o)?;
            // Receiving addresses are derived keys: an imported key's secret may be known.
            let newest =
                w.keys().iter().rev().find(|k| k.pubkey.scheme() == *scheme && k.receives()).copied();
            let k = match newest {
                Some(k) if !new => k,
                _ => {
                    let k = w.new_key(*scheme)?;
                    out.info = format!("new {} key\n", key_name(k.id));
                    k
                }
            };
            out.out = format!("{}\n", k.address(offline_hash(o), &hrp()));
        }
        WalletCmd::List { json } => {
            let w = open(o)?;
            let kind = offline_hash(o);
            if *json {
                let keys: Vec<serde_json::Value> = w
                    .keys()
                    .iter()
                    .map(|k| {
                        let (origin, index) = match k.id {
                            KeyId::Derived { index, .. } => ("derived", index),
                            KeyId::Imported { index } => ("imported", index),
                        };
                        serde_json::json!({
                            "address": k.address(kind, &hrp()).to_string(),
                            "scheme": k.pubkey.scheme().to_string(),
                            "origin": origin,
                            "index": index,
                            "receiving": k.receives(),
                        })
                    })
                    .collect();
                let v = serde_json::json!({ "hash": kind.name(), "keys": keys });
                out.out = format!("{v}\n");
            } else {
                for k in w.keys() {
                    out.out.push_str(&format!("{}  {}\n", k.address(kind, &hrp()), key_name(k.id)));
                }
            }
        }
        WalletCmd::Balance(b) => {
            let api = a.api.client()?;
            let w = open(o)?;
            out.out = balance_text(&balance_of(&api, o, &w)?, b.json);
        }
        WalletCmd::Send(s) => {
            // Arguments first: a bad address or amount fails before anything is opened or asked
            // (the address's hash function is checked against the node's chain by `send`).
            match parse_address(&s.to, &hrp(), offline_hash(o)) {
                Ok(_) => {}
                // Without --hash, the node's chain says which hash function is right.
                Err(AddressError::WrongHash { .. }) if o.hash.is_none() => {}
                Err(source) => {
                    return Err(WalletError::Address { what: "--to", input: s.to.clone(), source })
                }
            }
            amount("--amount", s.amount)?;
            amount("--fee-rate", s.fee_rate)?;
            let api = a.api.client()?;
            let w = open(o)?;
            let built = send(&api, o, &w, s)?;
            out = send_text(s, &built);
        }
        WalletCmd::Backup { out: dest } => {
            let w = open(o)?;
            w.backup(dest)?;
            out.info = format!("backup of {} keys written to {}\n", w.keys().len(), dest.display());
        }
        WalletCmd::Restore { from } => {
            if o.wallet.exists() {
                return Err(KeystoreError::AlreadyExists { path: o.wallet.clone() }.into());
            }
            let pass = passphrase(o)?;
            let w = Wallet::restore(from, &pass, &o.wallet)?;
            out.info = format!("restored {} keys into {}\n", w.keys().len(), o.wallet.display());
        }
        WalletCmd::Import { seed_file, scheme, devnet_key } => {
            let (seed, scheme, kind, what) = match (seed_file, devnet_key) {
                (Some(f), _) => (read_seed(f)?, *scheme, offline_hash(o), String::new()),
                (None, Some(i)) => {
                    // The node's chain says the key's scheme and the address's hash function.
                    let chain = node_chain(&a.api.client()?, o.hash)?;
                    let seed = Seed::from_bytes(devnet_premine_seed(*i));
                    (seed, chain.sig.scheme_for(*i), chain.params.hash, format!(", devnet premine key {i}"))
                }
                (None, None) => return Err(WalletError::NoSeed),
            };
            let mut w = open(o)?;
            let k = w.import_seed(scheme, seed)?;
            out.info = format!(
                "key {}{what}: spent from, never a receiving address (`wallet address` gives one)\n",
                key_name(k.id)
            );
            out.out = format!("{}\n", k.address(kind, &hrp()));
        }
    }
    Ok(out)
}

fn read_seed(path: &Path) -> Result<Seed, WalletError> {
    let err = |reason: String| WalletError::SeedFile { path: path.to_path_buf(), reason };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.len() > 1024 {
        return Err(err(format!("{} bytes; a seed file holds one line of 64 hex digits", meta.len())));
    }
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?);
    let line = text.lines().next().unwrap_or("");
    Seed::from_hex(line).map_err(|e: SeedError| err(e.to_string()))
}

/// Runs `scalechain wallet`.
pub fn run(a: WalletArgs) -> Result<(), Fail> {
    let out = run_cmd(&a)?;
    eprint!("{}", out.info);
    print!("{}", out.out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_its_rule_once() {
        let twice = "output-scheme-not-allowed: output 0 is locked to secp256k1";
        assert_eq!(rule_detail("output-scheme-not-allowed", twice), twice);
        assert_eq!(rule_detail("low-fee", "pays 0 per 1,000 bytes"), "low-fee: pays 0 per 1,000 bytes");
        assert_eq!(rule_detail("low-fee", ""), "low-fee");
        // A detail that merely starts with the rule's letters keeps the rule.
        assert_eq!(rule_detail("dust", "dusty output"), "dust: dusty output");
        let e = WalletError::Refused {
            txid: Hash([1; 32]),
            reason: "vote-double-vote".into(),
            detail: "vote-double-vote: voter x has already voted".into(),
        };
        assert_eq!(e.to_string().matches("vote-double-vote").count(), 1, "{e}");
    }
}
