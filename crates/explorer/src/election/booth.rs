//! The voting booth and the bulletin board (`docs/VOTING.md`, "Voting from the booth"):
//!
//! - the booth page (`/explorer/booth`, and `/explorer/election/{id}/booth` for one election):
//!   HTML and the booth's ES module (`assets/booth.js`, bundled from `booth/src` with its source
//!   map beside it), which reads a voter package, encrypts and proves the ballot in the page,
//!   and submits it through the node's `POST /txs`. Nothing of the voter's key or choice reaches
//!   this module: the page asks it only for the election ([`descriptor`]);
//! - the election's descriptor as JSON (`/explorer/election/{id}/descriptor`): its encoding, the
//!   chain's hash function and the tip height, what the booth builds a ballot from;
//! - the bulletin board (`/explorer/election/{id}/ballots`): every ballot the chain's state
//!   holds for the election, with its tracker (`H(encrypted ballot)`) and the block and
//!   transaction that carried it, and a search by tracker (`?tracker=HEX`).
//!
//! Bounds: the board lists [`BOARD_PAGE`] ballots a page (`?after=` the last voter id for the
//! next); the blocks that carried them are found by reading at most [`BOARD_SCAN_BLOCKS`] blocks
//! of the window, the newest (a ballot in an older block says so); a tracker is searched among at
//! most [`TRACKER_SEARCH`] ballots.

use std::collections::HashMap;

use askama::Template;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use scalechain_chain::DiskStore;
use scalechain_replica::Replica;
use scalechain_types::{Hash, HashKind};
use scalechain_voting::app::{ballots_prefix, Election, Message, VOTE_KIND};
use scalechain_voting::booth::tracker;

use super::{count_to, find, not_published, parse_id, row, under, ElectionRow, PAGE_COUNT_CAP};
use crate::data::{self, ReadError};
use crate::pages::{blocking, params, PageError, QueryPairs};
use crate::{secure, View};

/// Ballots listed per page of the board.
pub const BOARD_PAGE: usize = 500;
/// Blocks of the window read to find which block carried each ballot, the newest.
pub const BOARD_SCAN_BLOCKS: u64 = 2_000;
/// Ballots whose tracker is compared with a searched one, at most.
pub const TRACKER_SEARCH: usize = 100_000;

#[derive(Template)]
#[template(path = "booth.html")]
struct BoothPage {
    title: String,
    nav: &'static str,
    /// The election the booth is for (hex), or empty: the voter package names it.
    election: String,
}

/// `GET /explorer/booth`: the booth for the election the voter package names.
pub async fn any(State(node): State<View>) -> Response {
    blocking(node, |_| {
        Ok(BoothPage { title: "Voting booth".into(), nav: "elections", election: String::new() })
    })
    .await
}

/// `GET /explorer/election/{id}/booth`: the booth for election `id` (the explorer's 404 page if
/// it is not published).
pub async fn page(State(node): State<View>, id: Result<Path<String>, PathRejection>) -> Response {
    let id = match parse_id(id) {
        Ok(id) => id,
        Err(f) => return f.page(),
    };
    blocking(node, move |node| {
        let Some(e) = find(node.replica(), &id) else { return Err(not_published(&id)) };
        let mut name = String::from_utf8_lossy(&e.label).into_owned();
        if name.is_empty() {
            name = id.to_string()[..16].to_string();
        }
        Ok(BoothPage { title: format!("Voting booth: {name}"), nav: "elections", election: id.to_string() })
    })
    .await
}

fn json_answer(status: StatusCode, body: serde_json::Value) -> Response {
    secure(
        (
            status,
            [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")],
            body.to_string(),
        )
            .into_response(),
    )
}

/// `GET /explorer/election/{id}/descriptor`: `{id, hash, encoding, label, scheme, candidates,
/// start, end, voters, tip, status}`, or `{error}` with 400 (a bad id) or 404 (not published).
pub async fn descriptor(State(node): State<View>, id: Result<Path<String>, PathRejection>) -> Response {
    let id = match parse_id(id) {
        Ok(id) => id,
        Err(f) => return json_answer(f.status, json!({ "error": f.message })),
    };
    let done = tokio::task::spawn_blocking(move || {
        let sh = node.replica();
        let e = find(sh, &id)?;
        let tip = sh.chain.read().tip_height();
        let r = row(id, &e, String::new(), tip);
        Some(json!({
            "id": id.to_string(),
            "hash": sh.params.hash.name(),
            "encoding": hex::encode(e.encode()),
            "label": r.label,
            "scheme": r.scheme,
            "candidates": e.candidates,
            "start": e.start,
            "end": e.end,
            "voters": e.voters().ok(),
            "tip": tip,
            "status": r.status,
        }))
    })
    .await;
    match done {
        Ok(Some(v)) => json_answer(StatusCode::OK, v),
        Ok(None) => json_answer(StatusCode::NOT_FOUND, json!({ "error": not_published(&id).message })),
        Err(_) => json_answer(StatusCode::SERVICE_UNAVAILABLE, json!({ "error": "the node is stopping" })),
    }
}

/// One ballot on the board.
struct BoardRow {
    tracker: String,
    voter: String,
    /// The block that carried it, if found among the blocks read.
    height: Option<u64>,
    txid: Option<String>,
    /// Is it the searched tracker's?
    mine: bool,
}

/// What a tracker search found.
struct Found {
    tracker: String,
    /// The ballot's block and transaction, if it is on the chain and its block was read.
    at: Option<(u64, String)>,
    /// Is it among the chain's ballots?
    on_chain: bool,
}

#[derive(Template)]
#[template(path = "board.html")]
struct BoardPage {
    title: String,
    nav: &'static str,
    e: ElectionRow,
    rows: Vec<BoardRow>,
    /// The voter id after which the next page starts, if there is one.
    next: Option<String>,
    /// The first height whose block was read (ballots in older blocks show no block).
    scanned_from: u64,
    found: Option<Found>,
}

/// The block height and txid that carried each ballot, by voter id.
type Carriers = HashMap<Hash, (u64, Hash)>;

/// Which block and transaction carried each ballot of `e` (by voter id), over the newest
/// [`BOARD_SCAN_BLOCKS`] blocks of its window up to the tip; the first height read.
fn carriers(
    sh: &Replica<DiskStore>,
    e: &Election,
    kind: HashKind,
    tip: u64,
) -> Result<(Carriers, u64), ReadError> {
    let mut out = HashMap::new();
    let last = e.end.min(tip);
    if tip < e.start {
        return Ok((out, e.start));
    }
    let first = e.start.max(last.saturating_sub(BOARD_SCAN_BLOCKS - 1));
    for h in first..=last {
        let Some(b) = data::block_at(sh, h)? else { break };
        for t in b.txs.iter().filter(|t| t.kind == VOTE_KIND) {
            if let Ok(Message::Ballot(c)) = Message::decode(&t.data) {
                if c.election == *e {
                    out.insert(c.voter_id(kind), (h, t.txid(kind)));
                }
            }
        }
    }
    Ok((out, first))
}

/// `GET /explorer/election/{id}/ballots[?after=VOTER][&tracker=HEX]`: the bulletin board.
pub async fn board(
    State(node): State<View>,
    id: Result<Path<String>, PathRejection>,
    q: QueryPairs,
) -> Response {
    let id = match parse_id(id) {
        Ok(id) => id,
        Err(f) => return f.page(),
    };
    let p = match params(q) {
        Ok(p) => p,
        Err(f) => return f.page(),
    };
    let hash_param = |key: &str| -> Result<Option<Hash>, PageError> {
        match p.get(key).map(|s| s.trim()).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(s) => s
                .parse()
                .map(Some)
                .map_err(|_| PageError::bad(format!("{key}: {s:?} is not 64 lowercase hex digits"))),
        }
    };
    let (after, wanted) = match (hash_param("after"), hash_param("tracker")) {
        (Ok(a), Ok(t)) => (a, t),
        (Err(f), _) | (_, Err(f)) => return f.page(),
    };
    blocking(node, move |node| {
        let sh = node.replica();
        let kind = sh.params.hash;
        let Some(e) = find(sh, &id) else { return Err(not_published(&id)) };
        let tip = sh.chain.read().tip_height();
        let (carried, scanned_from) = carriers(sh, &e, kind, tip)?;
        let prefix = ballots_prefix(&id);
        let voter_of = |k: &[u8]| -> Option<Hash> { k.get(prefix.len()..)?.try_into().ok().map(Hash) };
        let (total, mut page, found_voter) = {
            let c = sh.chain.read();
            let state = c.app_state();
            let total = count_to(under(state, &prefix), PAGE_COUNT_CAP);
            // One more than a page, to know whether another follows.
            let page: Vec<(Hash, Hash)> = under(state, &prefix)
                .filter_map(|(k, v)| Some((voter_of(k.as_slice())?, v)))
                .filter(|(voter, _)| after.is_none_or(|a| *voter > a))
                .take(BOARD_PAGE + 1)
                .map(|(voter, v)| (voter, tracker(kind, v)))
                .collect();
            let found_voter = wanted.and_then(|t| {
                under(state, &prefix)
                    .take(TRACKER_SEARCH)
                    .find(|(_, v)| tracker(kind, v) == t)
                    .and_then(|(k, _)| voter_of(k.as_slice()))
            });
            (total, page, found_voter)
        };
        let next = (page.len() > BOARD_PAGE).then(|| {
            page.truncate(BOARD_PAGE);
            page.last().map(|(v, _)| v.to_string()).unwrap_or_default()
        });
        let rows = page
            .into_iter()
            .map(|(voter, t)| {
                let at = carried.get(&voter);
                BoardRow {
                    tracker: t.to_string(),
                    voter: voter.to_string(),
                    height: at.map(|a| a.0),
                    txid: at.map(|a| a.1.to_string()),
                    mine: Some(t) == wanted,
                }
            })
            .collect();
        let found = wanted.map(|t| Found {
            tracker: t.to_string(),
            at: found_voter.and_then(|v| carried.get(&v)).map(|(h, tx)| (*h, tx.to_string())),
            on_chain: found_voter.is_some(),
        });
        let r = row(id, &e, total, tip);
        Ok(BoardPage {
            title: format!("Bulletin board: {}", if r.label.is_empty() { &r.id[..16] } else { &r.label }),
            nav: "elections",
            e: r,
            rows,
            next,
            scanned_from,
            found,
        })
    })
    .await
}
