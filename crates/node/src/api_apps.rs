//! Reads of application state (the key-value state of application modules, e.g. the voting
//! application's elections and ballots) at the main chain's tip:
//!
//! - `GET /apps/{kind}/state/{key}`: one value (`404` if absent);
//! - `GET /apps/{kind}/state?prefix=HEX&after=HEX&limit=N`: the entries whose key starts with
//!   `prefix`, in key order, after the key `after` if given, at most `limit` (default 100, at most
//!   1,000), and whether more follow.
//!
//! Keys are those of the module's namespace (the kind byte left out), hex. Bad kinds, hex or
//! limits get a JSON `400`.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use scalechain_client::ops;

use super::{segment, ApiError, ApiResult, ApiState, AppEntries, AppEntry, ErrorBody, QueryPairs};

/// Longest key accepted in a path or a query (bytes).
const MAX_KEY_BYTES: usize = 256;

/// `?prefix=&after=&limit=`, parsed so that every mistake is a JSON 400 naming it: an unknown
/// parameter, one given twice, or a limit that is not an integer in `0..=1000`.
#[derive(Debug, Default)]
struct RangeQuery {
    prefix: Option<String>,
    after: Option<String>,
    limit: usize,
}

/// Most entries per page.
const MAX_PAGE: usize = 1000;

fn range_query(query: QueryPairs) -> Result<RangeQuery, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad(format!("query: {}", e.body_text())))?;
    let mut q = RangeQuery { limit: 100, ..RangeQuery::default() };
    let mut seen = [false; 3];
    for (k, v) in pairs {
        let i = match k.as_str() {
            "prefix" => 0,
            "after" => 1,
            "limit" => 2,
            _ => return Err(ApiError::bad(format!("query: unknown parameter {k:?} (prefix, after, limit)"))),
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(ApiError::bad(format!("{k}: given more than once")));
        }
        match i {
            0 => q.prefix = Some(v),
            1 => q.after = Some(v),
            _ => {
                q.limit = match v.parse::<usize>() {
                    Ok(n) if n <= MAX_PAGE => n,
                    _ => {
                        return Err(ApiError::bad(format!(
                            "limit: {v:?} is not an integer from 0 to {MAX_PAGE}"
                        )))
                    }
                }
            }
        }
    }
    Ok(q)
}

/// The routes.
pub fn router() -> Router<ApiState> {
    Router::new().route(ops::APP_RANGE.path, get(range)).route(ops::APP_VALUE.path, get(value))
}

fn parse_kind(s: &str) -> Result<u8, ApiError> {
    match s.parse::<u8>() {
        Ok(k) if k >= 2 => Ok(k),
        _ => Err(ApiError::bad(format!("kind {s:?} is not an application transaction kind (2 to 255)"))),
    }
}

fn parse_key(what: &str, s: &str) -> Result<Vec<u8>, ApiError> {
    if s.len() > 2 * MAX_KEY_BYTES {
        return Err(ApiError::bad(format!("{what}: longer than {MAX_KEY_BYTES} bytes")));
    }
    super::lower_hex(what, s).map_err(ApiError::bad)
}

fn full(kind: u8, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(kind);
    k.extend_from_slice(key);
    k
}

/// One application state value.
#[utoipa::path(get, path = "/apps/{kind}/state/{key}",
    params(("kind" = u8, Path, minimum = 2, description = "the module's transaction kind"), ("key" = String, Path, pattern = "^([0-9a-f]{2}){0,256}$", description = "key inside the module's namespace, hex")),
    responses((status = 200, body = AppEntry), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn value(
    State(s): State<ApiState>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> ApiResult<AppEntry> {
    let Path((kind, key)) = path.map_err(|e| ApiError::bad(format!("kind/key: {}", e.body_text())))?;
    let kind = parse_kind(&kind)?;
    let k = parse_key("key", &key)?;
    let v = s.shared.replica.chain.read().app_state().get(&full(kind, &k)).cloned();
    match v {
        Some(v) => Ok(Json(AppEntry { key: hex::encode(&k), value: hex::encode(v) })),
        None => Err(ApiError::not_found(format!("no key {key} in the state of kind {kind}"))),
    }
}

/// Application state entries by key prefix, in key order, paged.
#[utoipa::path(get, path = "/apps/{kind}/state",
    params(("kind" = u8, Path, minimum = 2, description = "the module's transaction kind"),
        ("prefix" = Option<String>, Query, pattern = "^([0-9a-f]{2}){0,256}$", description = "key prefix, hex (default: all)"),
        ("after" = Option<String>, Query, pattern = "^([0-9a-f]{2}){0,256}$", description = "start after this key, hex"),
        ("limit" = Option<u64>, Query, maximum = 1000, description = "most entries (default 100, at most 1000)")),
    responses((status = 200, body = AppEntries), (status = 400, body = ErrorBody)))]
pub(super) async fn range(
    State(s): State<ApiState>,
    kind: Result<Path<String>, PathRejection>,
    query: QueryPairs,
) -> ApiResult<AppEntries> {
    let kind = parse_kind(&segment(kind, "kind")?)?;
    let q = range_query(query)?;
    let n = q.limit;
    let prefix = full(kind, &parse_key("prefix", q.prefix.as_deref().unwrap_or(""))?);
    let after = q.after.as_deref().map(|a| parse_key("after", a)).transpose()?.map(|a| full(kind, &a));
    use std::ops::Bound;
    let start = match after {
        Some(a) if a >= prefix => Bound::Excluded(a),
        _ => Bound::Included(prefix.clone()),
    };
    let c = s.shared.replica.chain.read();
    let height = c.tip_height();
    let mut it = c
        .app_state()
        .range((start, Bound::Unbounded))
        .take_while(|(k, _)| k.starts_with(&prefix))
        .map(|(k, v)| AppEntry { key: hex::encode(&k[1..]), value: hex::encode(v) });
    let entries: Vec<AppEntry> = it.by_ref().take(n).collect();
    let more = it.next().is_some();
    drop(c);
    Ok(Json(AppEntries { kind, height, entries, more }))
}
