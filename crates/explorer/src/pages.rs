//! The page handlers: parse the path and query (a mistake is the explorer's own 400 or 404
//! page, never a stack trace), read the node off the API's threads, render a template.

use std::collections::HashMap;
use std::fmt;

use askama::Template;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};

use scalechain_chain::export::tx_json;
use scalechain_chain::DiskStore;
use scalechain_client::types::{PeerInfo, ProfilePath, Status, TxJson};
use scalechain_node::NodeView;
use scalechain_replica::Replica;
use scalechain_types::{Hash, HashKind, Header, Tx, TxKind};
use scalechain_wallet::{encode_address, parse_address, AddressHrp};

use super::chart::{self, BarChart, ChainPicture, PicBlock};
use super::data::{self, Place, ReadError, Scan, Spender};
use super::live::{self, BlockSummary};
use super::secure;
use super::View;

/// Transactions listed per page of a block.
pub const BLOCK_PAGE: usize = 100;
/// Entries listed per page of the mempool.
pub const MEMPOOL_PAGE: usize = 50;
/// Outputs listed on a transaction's page, at most.
pub const TX_IO_SHOWN: usize = 500;
/// Inputs listed on a transaction's page, at most, each with the output it spends (a block read
/// for each block not read before); the fee is shown when every input is.
pub const INPUTS_SHOWN: usize = 100;
/// Coins an address's balance sums, at most (under the chain's lock; more says so).
pub const BALANCE_COINS: usize = 100_000;
/// Coins listed on an address's page, at most.
pub const COINS_SHOWN: usize = 100;
/// History entries per page of an address.
pub const HISTORY_PAGE: usize = 50;
/// Blocks in the overview's list.
pub const RECENT_BLOCKS: u64 = 12;
/// Heights the chain picture spans by default, and at most.
pub const CHAIN_SPAN: u64 = 8;
/// The widest chain picture.
pub const CHAIN_SPAN_MAX: u64 = 30;

/// An amount: whole coins as text, base units on hover (markup from numbers only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coins(pub u64);

impl fmt::Display for Coins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = scalechain_types::amount::Coins(self.0).parts();
        write!(f, "<span class=\"amt\" title=\"{} base units\">{whole}{frac}&nbsp;SC</span>", self.0)
    }
}

/// A time: UTC in the markup, turned into the viewer's zone by the page's script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct When(pub u64);

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = data::rfc3339(self.0);
        write!(f, "<time datetime=\"{t}\">{}</time>", t.replace('T', " ").replace(".000Z", "Z"))
    }
}

/// A page's failure: its status and what to tell the reader (every explorer handler's).
pub struct PageError {
    pub(super) status: StatusCode,
    pub(super) message: String,
}

impl PageError {
    /// A failure with `status`.
    pub(super) fn new(status: StatusCode, message: impl Into<String>) -> PageError {
        PageError { status, message: message.into() }
    }

    /// 400.
    pub(super) fn bad(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub(super) fn not_found(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::NOT_FOUND, message)
    }

    /// 503.
    pub(super) fn unavailable(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// The error page's title.
    fn title(&self) -> &'static str {
        match self.status {
            StatusCode::BAD_REQUEST => "Bad request",
            StatusCode::NOT_FOUND => "Not found",
            StatusCode::PAYLOAD_TOO_LARGE => "Too large",
            _ => "Unavailable",
        }
    }

    /// As the explorer's error page.
    pub(super) fn page(self) -> Response {
        error_page(self.status, self.title(), self.message)
    }
}

impl From<ReadError> for PageError {
    fn from(e: ReadError) -> PageError {
        PageError::unavailable(e.to_string())
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    title: String,
    nav: &'static str,
    message: String,
}

/// The explorer's error page.
pub fn error_page(status: StatusCode, title: &str, message: String) -> Response {
    let page = ErrorPage { title: title.to_string(), nav: "", message };
    match page.render() {
        Ok(body) => secure((status, Html(body)).into_response()),
        Err(_) => secure((status, title.to_string()).into_response()),
    }
}

fn render<T: Template>(page: Result<T, PageError>) -> Response {
    match page {
        Ok(p) => match p.render() {
            Ok(body) => secure(Html(body).into_response()),
            Err(e) => {
                error_page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", format!("rendering the page: {e}"))
            }
        },
        Err(e) => e.page(),
    }
}

/// Builds a page off the API's threads (pages read blocks from the store).
pub(super) async fn blocking<T, F>(node: View, build: F) -> Response
where
    T: Template + Send + 'static,
    F: FnOnce(&dyn NodeView) -> Result<T, PageError> + Send + 'static,
{
    match tokio::task::spawn_blocking(move || build(node.as_ref())).await {
        Ok(page) => render(page),
        Err(_) => error_page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "the node is stopping".into()),
    }
}

pub(super) type QueryPairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// The query's parameters (the first of a repeated one); unknown ones are ignored, as links
/// from elsewhere may carry their own.
pub(super) fn params(q: QueryPairs) -> Result<HashMap<String, String>, PageError> {
    let Query(pairs) = q.map_err(|e| PageError::bad(format!("query: {}", e.body_text())))?;
    let mut out = HashMap::new();
    for (k, v) in pairs {
        out.entry(k).or_insert(v);
    }
    Ok(out)
}

/// Parameter `key` as an integer in `0..=max`, if given.
fn number(p: &HashMap<String, String>, key: &str, max: u64) -> Result<Option<u64>, PageError> {
    match p.get(key) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(Some(n)),
            _ => Err(PageError::bad(format!("{key}: {v:?} is not an integer from 0 to {max}"))),
        },
    }
}

fn segment(p: Result<Path<String>, PathRejection>, what: &str) -> Result<String, PageError> {
    p.map(|Path(s)| s).map_err(|e| PageError::bad(format!("{what}: {}", e.body_text())))
}

fn parse_hash(what: &str, s: &str) -> Result<Hash, PageError> {
    s.parse().map_err(|_| PageError::bad(format!("{what} {s:?} is not 64 lowercase hex digits")))
}

fn short(h: &Hash) -> String {
    h.to_string()[..16].to_string()
}

/// The address of a lock on the devnet, whose chain hashes with `kind`.
fn address_of(kind: HashKind, out: &scalechain_types::TxOut) -> String {
    encode_address(&AddressHrp::devnet(), kind, &out.lock)
}

// ---------------------------------------------------------------- overview

#[derive(Template)]
#[template(path = "overview.html")]
struct Overview {
    title: String,
    nav: &'static str,
    status: Status,
    uptime: String,
    blocks: Vec<BlockRow>,
    peers: Vec<PeerInfo>,
    mempool_bytes: String,
    /// The recent blocks as JSON, for the charts' first points.
    seed: String,
}

struct BlockRow {
    height: u64,
    hash: String,
    short: String,
    time: When,
    txs: usize,
    interval: String,
}

fn row(b: &BlockSummary) -> BlockRow {
    BlockRow {
        height: b.height,
        hash: b.hash.to_string(),
        short: short(&b.hash),
        time: When(b.time),
        txs: b.txs,
        interval: if b.interval_ms == 0 {
            "—".into()
        } else {
            format!("{:.1} s", b.interval_ms as f64 / 1000.0)
        },
    }
}

/// The newest `n` main-chain blocks in brief (genesis too while the chain is no longer),
/// newest first.
fn recent(r: &Replica<DiskStore>, tip: u64, n: u64) -> Result<Vec<BlockSummary>, PageError> {
    let lo = tip.saturating_sub(n);
    let mut out = live::summaries(r, if lo == 0 { 0 } else { lo + 1 }, tip)?;
    out.reverse();
    Ok(out)
}

pub async fn overview(State(node): State<View>) -> Response {
    blocking(node, |node| {
        let status = node.status();
        let recent = recent(node.replica(), status.height, RECENT_BLOCKS)?;
        let seed = serde_json::to_string(&recent).unwrap_or_else(|_| "[]".into());
        let up = status.uptime_s as u64;
        Ok(Overview {
            title: "Overview".into(),
            nav: "overview",
            uptime: format!("{}h {:02}m {:02}s", up / 3600, up / 60 % 60, up % 60),
            mempool_bytes: bytes(status.mempool_bytes),
            blocks: recent.iter().map(row).collect(),
            peers: node.peers(),
            status,
            seed,
        })
    })
    .await
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 10 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 10 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

// ---------------------------------------------------------------- chain

#[derive(Template)]
#[template(path = "chain.html")]
struct ChainPage {
    title: String,
    nav: &'static str,
    pic: ChainPicture,
    lo: u64,
    hi: u64,
    older: Option<u64>,
    newer: Option<u64>,
    span: u64,
}

pub async fn chain(State(node): State<View>, q: QueryPairs) -> Response {
    let p = params(q);
    blocking(node, move |node| {
        let r = node.replica();
        let p = p?;
        let span = number(&p, "span", CHAIN_SPAN_MAX)?.unwrap_or(CHAIN_SPAN).max(1);
        let tip = r.chain.read().tip_height();
        let hi = number(&p, "top", u64::MAX)?.unwrap_or(tip).min(tip);
        let lo = hi.saturating_sub(span - 1);
        let kind = r.params.hash;
        // The main chain's headers in the window, then the side branches' (headers only: the
        // bodies are read one at a time below).
        let mut headers: Vec<(Header, Hash, bool)> = {
            let c = r.chain.read();
            let m = c.main_chain();
            (lo..=hi)
                .filter_map(|h| usize::try_from(h).ok().and_then(|h| m.get(h)))
                .filter_map(|hash| c.tree().get(hash).map(|e| (e.header, *hash, true)))
                .collect()
        };
        headers.extend(data::side_blocks(r, lo, hi).into_iter().map(|h| (h, h.hash(kind), false)));
        let mut blocks = Vec::new();
        for (header, hash, is_main) in headers {
            let body = data::block(r, &hash)?;
            let txs = body
                .as_ref()
                .map(|b| {
                    b.txs
                        .iter()
                        .take(chart::TXS_SHOWN)
                        .map(|t| {
                            (t.txid(kind), t.inputs.iter().map(|i| (i.prev.txid, i.prev.index)).collect())
                        })
                        .collect()
                })
                .unwrap_or_default();
            blocks.push(PicBlock { header, hash, main: is_main, txs, tx_count: body.map(|b| b.txs.len()) });
        }
        Ok(ChainPage {
            title: format!("Chain {lo}–{hi}"),
            nav: "chain",
            pic: chart::layout(blocks, lo),
            lo,
            hi,
            older: lo.checked_sub(1),
            newer: (hi < tip).then(|| hi.saturating_add(span).min(tip)),
            span,
        })
    })
    .await
}

// ---------------------------------------------------------------- block

#[derive(Template)]
#[template(path = "block.html")]
struct BlockPage {
    title: String,
    nav: &'static str,
    hash: String,
    height: u64,
    main: bool,
    prev: String,
    children: Vec<(String, bool)>,
    time: When,
    merkle_root: String,
    target: String,
    nonce: u64,
    tx_count: usize,
    txs: Vec<TxRow>,
    page: usize,
    pages: usize,
}

struct TxRow {
    txid: String,
    kind: String,
    inputs: usize,
    outputs: usize,
    value: Coins,
}

pub async fn block(
    State(node): State<View>,
    id: Result<Path<String>, PathRejection>,
    q: QueryPairs,
) -> Response {
    let (id, p) = (segment(id, "block id"), params(q));
    blocking(node, move |node| {
        let r = node.replica();
        let (id, p) = (id?, p?);
        let kind = r.params.hash;
        let b = if id.len() == 64 {
            let h = parse_hash("block hash", &id)?;
            data::block(r, &h)?.ok_or_else(|| PageError::not_found(format!("no block {id}")))?
        } else {
            let h: u64 = id.parse().map_err(|_| {
                PageError::bad(format!("block {id:?} is neither a height nor 64 lowercase hex digits"))
            })?;
            data::block_at(r, h)?.ok_or_else(|| PageError::not_found(format!("no block at height {h}")))?
        };
        let hash = b.hash(kind);
        let pages = b.txs.len().div_ceil(BLOCK_PAGE).max(1);
        let page = usize::try_from(number(&p, "page", u64::MAX)?.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        if page > pages {
            return Err(PageError::not_found(format!("page {page}: the block has {pages}")));
        }
        let main = data::on_main(r, b.header.height, &hash);
        let children: Vec<(String, bool)> = {
            let c = r.chain.read();
            c.tree().children(&hash).to_vec()
        }
        .into_iter()
        .map(|h| (h.to_string(), data::on_main(r, b.header.height + 1, &h)))
        .collect();
        let txs = b
            .txs
            .iter()
            .skip((page - 1) * BLOCK_PAGE)
            .take(BLOCK_PAGE)
            .map(|t| TxRow {
                txid: t.txid(kind).to_string(),
                kind: t.kind.name(),
                inputs: t.inputs.len(),
                outputs: t.outputs.len(),
                value: Coins(out_value(t)),
            })
            .collect();
        Ok(BlockPage {
            title: format!("Block {}", b.header.height),
            nav: "chain",
            hash: hash.to_string(),
            height: b.header.height,
            main,
            prev: b.header.prev_hash.to_string(),
            children,
            time: When(b.header.time),
            merkle_root: b.header.merkle_root.to_string(),
            target: b.header.target.to_string(),
            nonce: b.header.nonce,
            tx_count: b.txs.len(),
            txs,
            page,
            pages,
        })
    })
    .await
}

fn out_value(t: &Tx) -> u64 {
    t.outputs.iter().fold(0u64, |a, o| a.saturating_add(o.value.get()))
}

// ---------------------------------------------------------------- transaction

#[derive(Template)]
#[template(path = "tx.html")]
struct TxPage {
    title: String,
    nav: &'static str,
    tx: TxJson,
    place: String,
    place_class: &'static str,
    block: Option<(u64, String)>,
    confirmations: Option<u64>,
    size: usize,
    fee: Option<Coins>,
    inputs: Vec<InRow>,
    more_inputs: usize,
    outputs: Vec<OutRow>,
    more_outputs: usize,
    /// The data as text, when it is printable UTF-8.
    data_text: Option<String>,
}

struct InRow {
    prev: String,
    index: u32,
    /// The spent output's value and address, if found.
    value: Option<Coins>,
    address: Option<String>,
    scheme: String,
}

struct OutRow {
    index: usize,
    value: Coins,
    address: String,
    spender: SpenderView,
}

enum SpenderView {
    Unspent,
    Pooled(String),
    Confirmed(String, u64),
    Beyond(Scan),
    Unknown,
}

pub async fn tx(State(node): State<View>, id: Result<Path<String>, PathRejection>) -> Response {
    let id = segment(id, "txid");
    blocking(node, move |node| {
        let r = node.replica();
        let id = id?;
        let txid = parse_hash("txid", &id)?;
        let kind = r.params.hash;
        let (t, place) = data::find_tx(r, &txid)?.ok_or_else(|| {
            PageError::not_found(format!(
                "no transaction {id} in the mempool, the main chain or the newest {} side-branch blocks",
                data::SIDE_BLOCKS
            ))
        })?;
        let json = tx_json(kind, &t);
        let size = json.raw.len() / 2;
        // The outputs the shown inputs spend (the fee only when every input is shown).
        let mut cache = data::PrevCache::default();
        let mut inputs = Vec::new();
        let mut in_sum: Option<u64> = (t.inputs.len() <= INPUTS_SHOWN).then_some(0);
        for i in t.inputs.iter().take(INPUTS_SHOWN) {
            let prev = data::prev_output(r, &i.prev, &mut cache)?;
            in_sum = match (&prev, in_sum) {
                (Some(o), Some(s)) => s.checked_add(o.value.get()),
                _ => None,
            };
            inputs.push(InRow {
                prev: i.prev.txid.to_string(),
                index: i.prev.index,
                value: prev.as_ref().map(|o| Coins(o.value.get())),
                address: prev.as_ref().map(|o| address_of(kind, o)),
                scheme: i.witness.pubkey.scheme().to_string(),
            });
        }
        let (place_text, place_class, block, confirmations, height) = match &place {
            Place::Pooled { .. } => ("in the mempool".to_string(), "pooled", None, None, None),
            Place::Confirmed { height, block } => {
                let tip = r.chain.read().tip_height();
                (
                    format!("confirmed at height {height}"),
                    "confirmed",
                    Some((*height, block.to_string())),
                    Some(tip.saturating_sub(*height) + 1),
                    Some(*height),
                )
            }
            Place::Side { height, block } => (
                format!("in a side-branch block at height {height} (not on the main chain)"),
                "side",
                Some((*height, block.to_string())),
                None,
                None,
            ),
        };
        let spenders = match place {
            Place::Side { .. } => vec![Spender::Unknown; t.outputs.len()],
            _ => data::spenders(r, &txid, t.outputs.len(), height)?,
        };
        let outputs = t
            .outputs
            .iter()
            .zip(spenders)
            .enumerate()
            .take(TX_IO_SHOWN)
            .map(|(index, (o, sp))| OutRow {
                index,
                value: Coins(o.value.get()),
                address: address_of(kind, o),
                spender: match sp {
                    Spender::Unspent => SpenderView::Unspent,
                    Spender::Pooled(h) => SpenderView::Pooled(h.to_string()),
                    Spender::Confirmed(h, ht) => SpenderView::Confirmed(h.to_string(), ht),
                    Spender::Beyond(scan) => SpenderView::Beyond(scan),
                    Spender::Unknown => SpenderView::Unknown,
                },
            })
            .collect();
        let fee = match place {
            Place::Pooled { fee, .. } => Some(Coins(fee.get())),
            _ if t.kind == TxKind::COINBASE || t.inputs.is_empty() => None,
            _ => in_sum.and_then(|i| i.checked_sub(out_value(&t))).map(Coins),
        };
        let data_text = (!t.data.is_empty())
            .then(|| std::str::from_utf8(&t.data).ok())
            .flatten()
            .filter(|s| s.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'))
            .map(str::to_string);
        Ok(TxPage {
            title: format!("Transaction {}", short(&txid)),
            nav: "",
            place: place_text,
            place_class,
            block,
            confirmations,
            size,
            fee,
            more_inputs: t.inputs.len().saturating_sub(INPUTS_SHOWN),
            more_outputs: t.outputs.len().saturating_sub(TX_IO_SHOWN),
            inputs,
            outputs,
            data_text,
            tx: json,
        })
    })
    .await
}

// ---------------------------------------------------------------- address

#[derive(Template)]
#[template(path = "address.html")]
struct AddressPage {
    title: String,
    nav: &'static str,
    owner: String,
    pubkey_hash: String,
    address: Option<String>,
    balance: Coins,
    coin_count: usize,
    /// More coins than [`BALANCE_COINS`]: the balance is of the first ones only.
    more_coins: bool,
    coins: Vec<CoinRow>,
    /// The node keeps the owner index: false shows no balance or coins, only the history.
    owner_index: bool,
    history: Vec<HistoryRow>,
    scan: Option<Scan>,
    older: Option<u64>,
}

struct CoinRow {
    txid: String,
    index: u32,
    value: Coins,
    height: u64,
    coinbase: bool,
}

struct HistoryRow {
    txid: String,
    height: Option<u64>,
    time: Option<When>,
    received: Coins,
    spent_inputs: usize,
}

pub async fn address(
    State(node): State<View>,
    owner: Result<Path<String>, PathRejection>,
    q: QueryPairs,
) -> Response {
    let (owner, p) = (segment(owner, "address"), params(q));
    blocking(node, move |node| {
        let r = node.replica();
        let (owner, p) = (owner?, p?);
        let before = number(&p, "before", u64::MAX)?;
        let (pkh, address) = if owner.len() == 64 && owner.bytes().all(|b| b.is_ascii_hexdigit()) {
            (parse_hash("pubkey hash", &owner)?, None)
        } else {
            let lock = parse_address(&owner, &AddressHrp::devnet(), r.params.hash).map_err(|e| {
                PageError::bad(format!("{owner:?} is neither a pubkey hash nor a devnet address: {e}"))
            })?;
            (lock.pubkey_hash, Some(owner.clone()))
        };
        let (balance, coin_count, coins, more_coins, owner_index) = {
            let c = r.chain.read();
            let mut total = 0u64;
            let mut n = 0usize;
            let mut more = false;
            let mut shown = Vec::new();
            // Without the owner index (`store.owner_index = false`) no coins are shown: the
            // page says so, and the history (a scan of blocks) still is.
            let owned = c.utxos_of(&pkh);
            let owner_index = owned.is_ok();
            for (op, coin) in owned.into_iter().flatten().take(BALANCE_COINS.saturating_add(1)) {
                if n == BALANCE_COINS {
                    more = true;
                    break;
                }
                total = total.saturating_add(coin.out.value.get());
                n += 1;
                if shown.len() < COINS_SHOWN {
                    shown.push(CoinRow {
                        txid: op.txid.to_string(),
                        index: op.index,
                        value: Coins(coin.out.value.get()),
                        height: coin.height,
                        coinbase: coin.coinbase,
                    });
                }
            }
            (total, n, shown, more, owner_index)
        };
        let (touches, scan) = data::history(r, &pkh, before, HISTORY_PAGE)?;
        let older = scan.filter(|s| s.to > 0).map(|s| s.to);
        Ok(AddressPage {
            title: format!("Address {}", address.as_deref().unwrap_or(&owner)),
            nav: "",
            owner: owner.clone(),
            pubkey_hash: pkh.to_string(),
            address,
            balance: Coins(balance),
            coin_count,
            more_coins,
            coins,
            owner_index,
            history: touches
                .into_iter()
                .map(|t| HistoryRow {
                    txid: t.txid.to_string(),
                    height: t.height,
                    time: t.time.map(When),
                    received: Coins(t.received),
                    spent_inputs: t.spent_inputs,
                })
                .collect(),
            scan,
            older,
        })
    })
    .await
}

// ---------------------------------------------------------------- mempool

#[derive(Template)]
#[template(path = "mempool.html")]
struct MempoolPage {
    title: String,
    nav: &'static str,
    count: usize,
    bytes: String,
    admitted: u64,
    rejected: u64,
    evicted: u64,
    fee_chart: BarChart,
    entries: Vec<PoolRow>,
    page: usize,
    pages: usize,
}

struct PoolRow {
    txid: String,
    kind: String,
    fee: Coins,
    size: u64,
    rate: String,
}

/// The fee-rate histogram's buckets: base units per 1,000 bytes, 0, then powers of two.
fn fee_buckets(rates: impl Iterator<Item = u64>) -> Vec<(String, u64)> {
    const N: usize = 12;
    let mut counts = [0u64; N];
    for r in rates {
        let i = if r == 0 { 0 } else { (1 + r.ilog2() as usize).min(N - 1) };
        counts[i] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let label = match i {
                0 => "0".to_string(),
                i if i == N - 1 => format!("≥{}", 1u64 << (i - 1)),
                1 => "1".to_string(),
                i => format!("{}–{}", 1u64 << (i - 1), (1u64 << i) - 1),
            };
            (label, *c)
        })
        .collect()
}

pub async fn mempool(State(node): State<View>, q: QueryPairs) -> Response {
    let p = params(q);
    blocking(node, move |node| {
        let r = node.replica();
        let p = p?;
        let snap = r.mempool.snapshot();
        let pages = snap.len().div_ceil(MEMPOOL_PAGE).max(1);
        let page = usize::try_from(number(&p, "page", u64::MAX)?.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        if page > pages {
            return Err(PageError::not_found(format!("page {page}: the mempool has {pages}")));
        }
        let rate = |fee: u64, size: u64| u128::from(fee) * 1000 / u128::from(size.max(1));
        let buckets =
            fee_buckets(snap.iter().map(|e| u64::try_from(rate(e.fee.get(), e.size)).unwrap_or(u64::MAX)));
        // Newest first: the page's entries by admission order, without sorting the pool.
        let mut order: Vec<_> = snap.iter().collect();
        let want = page * MEMPOOL_PAGE;
        if want < order.len() {
            order.select_nth_unstable_by_key(want, |e| std::cmp::Reverse(e.seq));
            order.truncate(want);
        }
        order.sort_unstable_by_key(|e| std::cmp::Reverse(e.seq));
        let entries = order
            .into_iter()
            .skip((page - 1) * MEMPOOL_PAGE)
            .map(|e| PoolRow {
                txid: e.txid.to_string(),
                kind: e.tx.kind.name(),
                fee: Coins(e.fee.get()),
                size: e.size,
                rate: rate(e.fee.get(), e.size).to_string(),
            })
            .collect();
        let st = r.mempool.stats();
        Ok(MempoolPage {
            title: "Mempool".into(),
            nav: "mempool",
            count: snap.len(),
            bytes: bytes(snap.bytes()),
            admitted: st.counters.admitted,
            rejected: st.counters.rejected_total(),
            evicted: st.counters.evicted,
            fee_chart: BarChart::new(
                "fee-histogram",
                "Fee rate, base units per 1,000 bytes (transactions per bucket)",
                &buckets,
            ),
            entries,
            page,
            pages,
        })
    })
    .await
}

// ---------------------------------------------------------------- peers, profile

#[derive(Template)]
#[template(path = "peers.html")]
struct PeersPage {
    title: String,
    nav: &'static str,
    peers: Vec<PeerRow>,
    peer_id: String,
    listen: Vec<String>,
}

/// One connected peer, with its last block time written out.
struct PeerRow {
    p: PeerInfo,
    /// `last_block_ms` as RFC 3339 (UTC), if it gave this node a block yet.
    last_block: Option<String>,
}

pub async fn peers(State(node): State<View>) -> Response {
    blocking(node, |node| {
        let status = node.status();
        Ok(PeersPage {
            title: "Peers".into(),
            nav: "peers",
            peers: node
                .peers()
                .into_iter()
                .map(|p| PeerRow { last_block: p.last_block_ms.map(crate::data::rfc3339), p })
                .collect(),
            peer_id: status.peer_id,
            listen: status.listen,
        })
    })
    .await
}

#[derive(Template)]
#[template(path = "profile.html")]
struct ProfilePage {
    title: String,
    nav: &'static str,
    enabled: bool,
    recorded_s: String,
    restarts: u64,
    rows: Vec<ProfileRow>,
    next: Option<String>,
    stages: Vec<BarChart>,
}

struct ProfileRow {
    path: String,
    depth: usize,
    name: String,
    count: u64,
    avg_us: String,
    excl_us: String,
    max_us: String,
    /// Share of the largest total, 0–200 (a bar's width).
    bar: u32,
}

/// A bucket's upper bound as a label (`≤40µs`, `≤2.6ms`, `≤10s`, `more`).
fn duration_label(le: f64) -> String {
    if le.is_infinite() {
        "more".into()
    } else {
        format!("≤{}", seconds(le))
    }
}

/// Seconds in the unit that reads best.
fn seconds(s: f64) -> String {
    if s < 1e-3 {
        format!("{:.0}µs", s * 1e6)
    } else if s < 1.0 {
        let ms = s * 1e3;
        if ms < 10.0 {
            format!("{ms:.1}ms")
        } else {
            format!("{ms:.0}ms")
        }
    } else {
        format!("{s:.1}s")
    }
}

/// Paths per page of the profile.
pub const PROFILE_PAGE: usize = 200;

pub async fn profile(State(node): State<View>, q: QueryPairs) -> Response {
    let p = params(q);
    blocking(node, move |node| {
        let p = p?;
        let doc = node.profile(p.get("after").map(String::as_str), PROFILE_PAGE);
        let next = doc.more.then(|| doc.paths.last().map(|x| x.path.clone())).flatten();
        let top = doc.paths.iter().map(|x| x.total_ns).max().unwrap_or(0).max(1);
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1000.0);
        let rows = doc
            .paths
            .iter()
            .map(|x: &ProfilePath| {
                let n = x.count.max(1);
                ProfileRow {
                    depth: x.path.matches(" -> ").count(),
                    name: x.path.rsplit(" -> ").next().unwrap_or(&x.path).to_string(),
                    path: x.path.clone(),
                    count: x.count,
                    avg_us: us(x.total_ns / n),
                    excl_us: us(x.exclusive_ns / n),
                    max_us: us(x.max_ns),
                    bar: u32::try_from(u128::from(x.total_ns) * 200 / u128::from(top)).unwrap_or(200),
                }
            })
            .collect();
        let stages = data::stage_times(&node.metrics_text())
            .into_iter()
            .map(|st| {
                let buckets: Vec<(String, u64)> =
                    st.buckets.iter().map(|&(le, n)| (duration_label(le), n)).collect();
                let mean = if st.count > 0 { st.sum_s / st.count as f64 } else { 0.0 };
                BarChart::new(
                    format!("stage-{}", st.name),
                    format!("{} — {}: {} observations, mean {}", st.name, st.what, st.count, seconds(mean)),
                    &buckets,
                )
            })
            .collect();
        Ok(ProfilePage {
            stages,
            title: "Profile".into(),
            nav: "profile",
            enabled: doc.enabled,
            recorded_s: format!("{:.0}", doc.recorded_s),
            restarts: doc.restarts,
            rows,
            next,
        })
    })
    .await
}

// ---------------------------------------------------------------- search, 404

/// Where a search for `q` leads: a height, a block hash, a txid, an address or a pubkey hash.
pub fn search_target(r: &Replica<DiskStore>, q: &str) -> Result<String, PageError> {
    let q = q.trim();
    if q.is_empty() {
        return Err(PageError::bad("search: type a height, a block hash, a txid or an address"));
    }
    if q.bytes().all(|b| b.is_ascii_digit()) {
        let h: u64 = q.parse().map_err(|_| PageError::not_found(format!("no block at height {q}")))?;
        if h > r.chain.read().tip_height() {
            return Err(PageError::not_found(format!("no block at height {h} (the tip is lower)")));
        }
        return Ok(format!("/explorer/block/{h}"));
    }
    let lower = q.to_ascii_lowercase();
    if lower.len() == 64 && lower.bytes().all(|b| b.is_ascii_hexdigit()) {
        let h: Hash = parse_hash("search", &lower)?;
        if r.chain.read().tree().contains(&h) {
            return Ok(format!("/explorer/block/{h}"));
        }
        if data::find_tx(r, &h)?.is_some() {
            return Ok(format!("/explorer/tx/{h}"));
        }
        // Without the owner index (`store.owner_index = false`) a pubkey hash leads to its
        // page, which says so, as an address does.
        if r.chain.read().utxos_of(&h).map_or(true, |mut coins| coins.next().is_some()) {
            return Ok(format!("/explorer/address/{h}"));
        }
        return Err(PageError::not_found(format!(
            "{lower} is no block, no transaction and no pubkey hash with coins that this node knows"
        )));
    }
    if parse_address(&lower, &AddressHrp::devnet(), r.params.hash).is_ok() {
        return Ok(format!("/explorer/address/{lower}"));
    }
    Err(PageError::not_found(format!(
        "{q:?} is not a height, a block hash, a txid, a pubkey hash or a devnet address"
    )))
}

pub async fn search(State(node): State<View>, q: QueryPairs) -> Response {
    let p = params(q);
    let target = tokio::task::spawn_blocking(move || {
        let p = p?;
        search_target(node.replica(), p.get("q").map(String::as_str).unwrap_or(""))
    })
    .await;
    match target {
        Ok(Ok(to)) => secure(Redirect::to(&to).into_response()),
        Ok(Err(e)) => e.page(),
        Err(_) => error_page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "the node is stopping".into()),
    }
}

pub async fn not_found() -> Response {
    error_page(StatusCode::NOT_FOUND, "Not found", "the explorer has no such page".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_whole_coins_with_base_units_on_hover() {
        assert_eq!(
            Coins(5_000_000_000).to_string(),
            "<span class=\"amt\" title=\"5000000000 base units\">50&nbsp;SC</span>"
        );
        assert!(Coins(1).to_string().contains(">0.00000001&nbsp;SC<"));
        assert!(Coins(150_000_000).to_string().contains(">1.5&nbsp;SC<"));
    }

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(duration_label(1e-5), "≤10µs");
        assert_eq!(duration_label(2.56e-3), "≤2.6ms");
        assert_eq!(duration_label(0.16384), "≤164ms");
        assert_eq!(duration_label(41.94304), "≤41.9s");
        assert_eq!(duration_label(f64::INFINITY), "more");
    }

    #[test]
    fn fee_buckets_are_powers_of_two() {
        let b = fee_buckets([0, 1, 2, 3, 4, 1000, u64::MAX].into_iter());
        assert_eq!(b[0], ("0".into(), 1));
        assert_eq!(b[1], ("1".into(), 1));
        assert_eq!(b[2], ("2–3".into(), 2));
        assert_eq!(b[3], ("4–7".into(), 1));
        assert_eq!(b[10], ("512–1023".into(), 1));
        assert_eq!(b.last().unwrap(), &("≥1024".to_string(), 1), "the largest falls in the last bucket");
    }
}
