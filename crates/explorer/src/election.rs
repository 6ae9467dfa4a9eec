//! Seed 003's elections as pages: the elections published on the chain (from the voting
//! module's state), per election its descriptor, the ballots cast per block over its window,
//! and a "verify" action that runs anyone's check of an EA's result file against the chain's
//! ballots (`scalechain_voting::tally::verify`, as `scalechain vote verify` does) and says
//! which proofs were checked.
//!
//! Bounds: at most [`MAX_ELECTIONS`] listed; the ballots-per-block chart reads the newest
//! [`BALLOT_SCAN_BLOCKS`] blocks of the window; one verification runs at a time, of at most
//! [`VERIFY_MAX_ELGAMAL`] or [`VERIFY_MAX_PAILLIER`] ballots (more is a job for the command
//! line); a result file is at most [`MAX_RESULT_BYTES`].
//!
//! The voting booth and the bulletin board are the `booth` submodule.

mod booth;

use std::collections::BTreeMap;
use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use scalechain_chain::DiskStore;
use scalechain_node::NodeView;
use scalechain_replica::Replica;
use scalechain_types::{Hash, HashKind};
use scalechain_voting::app::{ballots_prefix, election_key, Election, Message, VOTE_KIND};
use scalechain_voting::tally::{self, ResultProof, StoredBallot, TallyResult};
use scalechain_voting::BallotScheme;

use super::chart::BarChart;
use super::data::{self, ReadError};
use super::pages::{blocking, error_page, PageError};
use super::{gated, secure, View};

/// The election pages (`/explorer/elections`, `/explorer/election/{id}` and its verification,
/// its booth, descriptor and bulletin board, and the booth for any election: the `booth` module), behind
/// the API's token as the explorer's other pages: for a node whose chain runs the voting module.
pub fn router(view: Arc<dyn NodeView>) -> Router {
    let routes = Router::new()
        .route("/explorer/elections", get(list))
        .route("/explorer/election/{id}", get(page))
        .route("/explorer/election/{id}/verify", post(verify))
        .route("/explorer/booth", get(booth::any))
        .route("/explorer/election/{id}/booth", get(booth::page))
        .route("/explorer/election/{id}/descriptor", get(booth::descriptor))
        .route("/explorer/election/{id}/ballots", get(booth::board));
    gated(routes, &view).with_state(view)
}

/// Elections listed, at most.
pub const MAX_ELECTIONS: usize = 100;
/// Blocks of an election's window read for its ballots-per-block chart, the newest.
pub const BALLOT_SCAN_BLOCKS: u64 = 500;
/// Ballots counted per election on the list, at most (more shows as "N+").
pub const LIST_COUNT_CAP: usize = 10_000;
/// Ballots counted on an election's page, at most.
pub const PAGE_COUNT_CAP: usize = 1_000_000;
/// Bars of that chart, at most (heights are grouped beyond).
pub const BALLOT_BARS: u64 = 30;
/// Ballots of an `elgamal` election the page verifies, at most.
pub const VERIFY_MAX_ELGAMAL: usize = 20_000;
/// Ballots of a `paillier` election the page verifies, at most (each proof takes milliseconds).
pub const VERIFY_MAX_PAILLIER: usize = 500;
/// The largest result file taken.
pub const MAX_RESULT_BYTES: usize = 1 << 20;

/// One verification at a time: it takes every core for a while.
static VERIFYING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// The voting module's key of state `key` (the namespace byte first).
fn full_key(key: &[u8]) -> Vec<u8> {
    let mut k = vec![VOTE_KIND.0];
    k.extend_from_slice(key);
    k
}

/// The entries of `state` under `prefix`.
fn under<'a>(
    state: &'a BTreeMap<Vec<u8>, Vec<u8>>,
    prefix: &'a [u8],
) -> impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)> {
    state.range(prefix.to_vec()..).take_while(move |(k, _)| k.starts_with(prefix))
}

/// A published election in brief.
pub struct ElectionRow {
    id: String,
    label: String,
    scheme: &'static str,
    candidates: u8,
    start: u64,
    end: u64,
    status: &'static str,
    /// Ballots, as counted up to a cap (`N+` past it).
    ballots: String,
}

fn status(e: &Election, tip: u64) -> &'static str {
    if tip < e.start {
        "upcoming"
    } else if tip <= e.end {
        "open"
    } else {
        "closed"
    }
}

fn scheme_name(e: &Election) -> &'static str {
    BallotScheme::from_byte(e.scheme).map_or("unknown", BallotScheme::name)
}

/// Counts `it` up to `cap`: the count, `cap+` past it.
fn count_to(it: impl Iterator, cap: usize) -> String {
    let n = it.take(cap.saturating_add(1)).count();
    if n > cap {
        format!("{cap}+")
    } else {
        n.to_string()
    }
}

fn row(id: Hash, e: &Election, ballots: String, tip: u64) -> ElectionRow {
    ElectionRow {
        id: id.to_string(),
        label: String::from_utf8_lossy(&e.label).into_owned(),
        scheme: scheme_name(e),
        candidates: e.candidates,
        start: e.start,
        end: e.end,
        status: status(e, tip),
        ballots,
    }
}

/// The published elections (at most [`MAX_ELECTIONS`]) with their ballot counts.
fn elections(sh: &Replica<DiskStore>) -> (Vec<ElectionRow>, bool) {
    let c = sh.chain.read();
    let tip = c.tip_height();
    let state = c.app_state();
    let prefix = full_key(&election_key(&Hash::ZERO)[..1]);
    let mut out = Vec::new();
    let mut more = false;
    for (k, v) in under(state, &prefix) {
        if out.len() == MAX_ELECTIONS {
            more = true;
            break;
        }
        let (Some(id), Ok(e)) =
            (k.get(2..34).and_then(|b| <[u8; 32]>::try_from(b).ok()), Election::decode(v))
        else {
            continue;
        };
        let id = Hash(id);
        let ballots = count_to(under(state, &ballots_prefix(&id)), LIST_COUNT_CAP);
        out.push(row(id, &e, ballots, tip));
    }
    (out, more)
}

#[derive(Template)]
#[template(path = "elections.html")]
struct ElectionsPage {
    title: String,
    nav: &'static str,
    rows: Vec<ElectionRow>,
    more: bool,
}

/// `GET /explorer/elections`.
pub async fn list(State(node): State<View>) -> Response {
    blocking(node, |node| {
        let (rows, more) = elections(node.replica());
        Ok(ElectionsPage { title: "Elections".into(), nav: "elections", rows, more })
    })
    .await
}

#[derive(Template)]
#[template(path = "election.html")]
struct ElectionPage {
    title: String,
    nav: &'static str,
    e: ElectionRow,
    token_key: String,
    election_key: String,
    chart: Option<BarChart>,
    verify_limit: usize,
}

/// The election `id`, if published.
fn find(sh: &Replica<DiskStore>, id: &Hash) -> Option<Election> {
    let c = sh.chain.read();
    c.app_state().get(&full_key(&election_key(id))).and_then(|v| Election::decode(v).ok())
}

fn parse_id(id: Result<Path<String>, PathRejection>) -> Result<Hash, PageError> {
    let Path(id) = id.map_err(|e| PageError::bad(format!("election id: {}", e.body_text())))?;
    id.parse().map_err(|_| PageError::bad(format!("election id {id:?} is not 64 lowercase hex digits")))
}

fn not_published(id: &Hash) -> PageError {
    PageError::not_found(format!("no election {id} is published on this chain"))
}

/// Ballots of `e` the page verifies, at most.
fn verify_limit(e: &Election) -> usize {
    if e.scheme == BallotScheme::Paillier.byte() {
        VERIFY_MAX_PAILLIER
    } else {
        VERIFY_MAX_ELGAMAL
    }
}

/// Ballots for `e` per main-chain block over the newest [`BALLOT_SCAN_BLOCKS`] of its window
/// so far, grouped into at most [`BALLOT_BARS`] bars.
fn ballots_per_block(sh: &Replica<DiskStore>, e: &Election, tip: u64) -> Result<Option<BarChart>, ReadError> {
    let last = e.end.min(tip);
    if tip < e.start {
        return Ok(None);
    }
    let first = e.start.max(last.saturating_sub(BALLOT_SCAN_BLOCKS - 1));
    let span = last - first + 1;
    let per = span.div_ceil(BALLOT_BARS).max(1);
    let mut buckets: Vec<(String, u64)> = Vec::new();
    for h in first..=last {
        let Some(b) = data::block_at(sh, h)? else { break };
        let n = b
            .txs
            .iter()
            .filter(|t| t.kind == VOTE_KIND)
            .filter(|t| matches!(Message::decode(&t.data), Ok(Message::Ballot(c)) if c.election == *e))
            .count() as u64;
        let i = usize::try_from((h - first) / per).unwrap_or(usize::MAX);
        if buckets.len() <= i {
            let label = if per == 1 { format!("{h}") } else { format!("{h}+") };
            buckets.push((label, 0));
        }
        if let Some(slot) = buckets.last_mut() {
            slot.1 += n;
        }
    }
    let caption = if per == 1 {
        format!("Ballots per block, heights {first}–{last}")
    } else {
        format!("Ballots per {per} blocks, heights {first}–{last}")
    };
    Ok(Some(BarChart::new("ballots-chart", caption, &buckets)))
}

/// `GET /explorer/election/{id}`.
pub async fn page(State(node): State<View>, id: Result<Path<String>, PathRejection>) -> Response {
    let id = match parse_id(id) {
        Ok(id) => id,
        Err(f) => return f.page(),
    };
    blocking(node, move |node| {
        let sh = node.replica();
        let Some(e) = find(sh, &id) else { return Err(not_published(&id)) };
        let tip = sh.chain.read().tip_height();
        let ballots = {
            let c = sh.chain.read();
            count_to(under(c.app_state(), &ballots_prefix(&id)), PAGE_COUNT_CAP)
        };
        let chart = ballots_per_block(sh, &e, tip)?;
        let r = row(id, &e, ballots, tip);
        Ok(ElectionPage {
            title: format!("Election {}", if r.label.is_empty() { &r.id[..16] } else { &r.label }),
            nav: "elections",
            token_key: hex::encode(e.token_key),
            election_key: hex::encode(&e.election_key),
            chart,
            verify_limit: verify_limit(&e),
            e: r,
        })
    })
    .await
}

#[derive(Template)]
#[template(path = "verified.html")]
struct Verified {
    ok: bool,
    /// What failed (when `ok` is false).
    failure: String,
    checks: Vec<String>,
    counts: Vec<(usize, u64)>,
}

/// The checks `tally::verify` made of `r` for `e` with `n` stored ballots, in words.
fn checks(e: &Election, n: usize, r: &TallyResult) -> Vec<String> {
    let mut out = vec![
        format!("the result names this election ({})", r.election),
        format!("it counts {} ballots, as many as the chain holds ({n})", r.ballots),
        format!("it has one count for each of the {} candidates", e.candidates),
    ];
    match &r.proof {
        ResultProof::Elgamal(p) => {
            out.push(format!(
                "each of the {n} ballots: its {} 0/1 proofs (one per candidate) and its sum-to-one proof, bound to this election and its voter",
                e.candidates
            ));
            out.push(format!(
                "the {} summed ciphertexts equal the sums of the ballots' ciphertexts",
                p.len()
            ));
            out.push(format!("the {} decryption proofs (Chaum–Pedersen) of the counts", p.len()));
        }
        ResultProof::Paillier { .. } => {
            out.push(format!("each of the {n} ballots: its 1-out-of-{} membership proof, bound to this election and its voter", e.candidates));
            out.push("the tally ciphertext equals the product of the ballots' ciphertexts".into());
            out.push("the tally's decryption proof (its randomness re-encrypts the counts to the tally ciphertext)".into());
        }
    }
    out
}

fn fragment(v: Verified, status: StatusCode) -> Response {
    match v.render() {
        Ok(body) => {
            secure((status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
        }
        Err(e) => error_page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", format!("rendering: {e}")),
    }
}

fn failed(status: StatusCode, why: String) -> Response {
    fragment(Verified { ok: false, failure: why, checks: vec![], counts: vec![] }, status)
}

/// `POST /explorer/election/{id}/verify`: an EA's result file (the JSON `vote tally` writes)
/// checked against the chain's ballots; answers an HTML fragment saying what was checked and
/// the counts (200), or what failed (422; 400 for a file that is not a result, 503 when busy).
pub async fn verify(
    State(node): State<View>,
    id: Result<Path<String>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let id = match parse_id(id) {
        Ok(id) => id,
        Err(f) => return failed(f.status, f.message),
    };
    let body = match body {
        Ok(b) if b.len() <= MAX_RESULT_BYTES => b,
        Ok(b) => {
            return failed(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a result file of {} bytes; at most {MAX_RESULT_BYTES}", b.len()),
            )
        }
        Err(e) => return failed(StatusCode::BAD_REQUEST, format!("body: {}", e.body_text())),
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return failed(StatusCode::BAD_REQUEST, "the result file is not UTF-8".into());
    };
    let result = match TallyResult::from_json(text) {
        Ok(r) => r,
        Err(e) => return failed(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let Ok(permit) = VERIFYING.try_acquire() else {
        return failed(
            StatusCode::SERVICE_UNAVAILABLE,
            "another verification is running: try again shortly".into(),
        );
    };
    let kind: HashKind = node.replica().params.hash;
    let done = tokio::task::spawn_blocking(move || {
        // Held until the verification ends, even if the client goes away.
        let _permit = permit;
        let sh = node.replica();
        let Some(e) = find(sh, &id) else { return Err(not_published(&id)) };
        let limit = verify_limit(&e);
        let stored: Vec<StoredBallot> = {
            let c = sh.chain.read();
            let prefix = ballots_prefix(&id);
            under(c.app_state(), &prefix)
                .take(limit.saturating_add(1))
                .filter_map(|(k, v)| {
                    let voter = <[u8; 32]>::try_from(k.get(prefix.len()..)?).ok()?;
                    Some(StoredBallot { voter: Hash(voter), ballot: v.clone() })
                })
                .collect()
        };
        if stored.len() > limit {
            return Err(PageError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "more than {limit} ballots: the page verifies at most {limit} for a {} election; run `scalechain vote verify --election {id} --result FILE`",
                    scheme_name(&e)
                ),
            ));
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|x| PageError::unavailable(format!("no OS randomness: {x}")))?;
        let mut rng = ChaCha20Rng::from_seed(seed);
        match tally::verify(&e, kind, &stored, &result, &mut rng) {
            Ok(()) => Ok(Verified {
                ok: true,
                failure: String::new(),
                checks: checks(&e, stored.len(), &result),
                counts: result.counts.iter().copied().enumerate().collect(),
            }),
            Err(x) => Err(PageError::new(StatusCode::UNPROCESSABLE_ENTITY, format!("verification failed: {x}"))),
        }
    })
    .await;
    match done {
        Ok(Ok(v)) => fragment(v, StatusCode::OK),
        Ok(Err(f)) => failed(f.status, f.message),
        Err(_) => failed(StatusCode::SERVICE_UNAVAILABLE, "the node is stopping".into()),
    }
}
