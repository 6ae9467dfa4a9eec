//! The web explorer: read-only HTML pages served on a node's API address under `/explorer` —
//! the overview (live charts fed by server-sent events), the chain picture with its side
//! branches, blocks, transactions, addresses, the mempool, peers, the profiler, study reports
//! and a search ([`router`]) — and seed 003's elections ([`election::router`], mounted by
//! whoever registers the voting module) with their voting booth and bulletin board.
//!
//! The explorer sits above the node: it reads a running node only through
//! [`NodeView`] (status, peers, metrics, profile, the API's token, the replica), and the
//! node serves its routes as the [`Pages`](scalechain_node::Pages) its caller hands to
//! `scalechain_node::run` — `scalechain node` mounts both routers. The node decides whether they
//! are served (`explorer.enabled`) and serves them within its API's limits.
//!
//! Pages are rendered here from the API's own types ([`Status`], [`TxJson`], [`UtxoJson`],
//! [`PeerInfo`], [`ProfileJson`]) with askama templates (`templates/`, compiled into the
//! binary; every value is HTML-escaped), plus one small ES module, the booth's bundled ES module
//! (built from `booth/` with pinned npm packages; the bundle is committed, so building the node
//! needs no npm) and one style sheet (`assets/`, also compiled in). Every answer carries a Content Security Policy that allows
//! no inline script and nothing from elsewhere, so the pages work offline.
//!
//! Work per page is bounded: block and mempool lists are paginated, and the scans that have no
//! index (an output's spender, an address's history, a transaction on a side branch) look at a
//! bounded number of blocks and say where they stopped. Some pages pass over the whole mempool
//! snapshot without a lock (at most `mempool.max_txs` entries: the mempool page's histogram and
//! newest entries, a transaction's pooled spenders, an address's pooled transactions); 134,000
//! entries take about 20 ms (`docs/PERFORMANCE.md`).
//!
//! [`Status`]: scalechain_client::types::Status
//! [`TxJson`]: scalechain_client::types::TxJson
//! [`UtxoJson`]: scalechain_client::types::UtxoJson
//! [`PeerInfo`]: scalechain_client::types::PeerInfo
//! [`ProfileJson`]: scalechain_client::types::ProfileJson

mod chart;
mod data;
pub mod election;
mod gate;
mod live;
mod pages;
mod study;

use std::sync::Arc;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use scalechain_node::NodeView;

/// What every handler reads the node through.
type View = Arc<dyn NodeView>;

/// Where the explorer lives on the API's address.
pub const ROOT: &str = "/explorer";

/// The Content Security Policy of every explorer answer: scripts, styles and connections only
/// from the node itself, no inline script or style, no frames, no plugins.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
                       connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The explorer's pages (all but the elections'), behind the API's token when it has one
/// ([`gate`]); `/` leads to the overview.
pub fn router(view: Arc<dyn NodeView>) -> Router {
    let routes = Router::new()
        .route(ROOT, get(pages::overview))
        .route("/explorer/chain", get(pages::chain))
        .route("/explorer/block/{id}", get(pages::block))
        .route("/explorer/tx/{txid}", get(pages::tx))
        .route("/explorer/address/{owner}", get(pages::address))
        .route("/explorer/mempool", get(pages::mempool))
        .route("/explorer/peers", get(pages::peers))
        .route("/explorer/profile", get(pages::profile))
        .route("/explorer/search", get(pages::search))
        .route("/explorer/study", get(study::page))
        .route("/explorer/study/files/{*path}", get(study::file))
        .route("/explorer/study/render", axum::routing::post(study::render))
        .route("/explorer/live", get(live::stream))
        .route("/explorer/assets/{name}", get(asset))
        .route("/explorer/{*rest}", get(pages::not_found));
    // `/` only leads to the explorer (which asks for the token itself, if there is one).
    Router::new()
        .route("/", get(|| async { Redirect::to(ROOT) }))
        .merge(gated(routes, &view))
        .with_state(view)
}

/// `routes` behind the API's token ([`gate`]).
fn gated(routes: Router<View>, view: &View) -> Router<View> {
    routes.layer(axum::middleware::from_fn_with_state(view.clone(), gate::check))
}

/// The headers every explorer answer carries.
fn secure(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    r
}

/// The assets compiled into the binary: name, content type, bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    ("explorer.css", "text/css; charset=utf-8", include_str!("../assets/explorer.css")),
    ("explorer.js", "text/javascript; charset=utf-8", include_str!("../assets/explorer.js")),
    // The booth's module, bundled from `booth/` (reproducibly: `.ci/booth-bundle.sh`), and its
    // source map with the sources inlined.
    ("booth.js", "text/javascript; charset=utf-8", include_str!("../assets/booth.js")),
    ("booth.js.map", "application/json", include_str!("../assets/booth.js.map")),
    ("favicon.svg", "image/svg+xml", include_str!("../assets/favicon.svg")),
];

/// One asset, or the explorer's 404 page.
async fn asset(
    name: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
) -> Response {
    let found = name.ok().and_then(|axum::extract::Path(n)| ASSETS.iter().find(|(a, _, _)| *a == n));
    match found {
        Some((_, kind, body)) => secure(
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, *kind), (header::CACHE_CONTROL, "public, max-age=300")],
                *body,
            )
                .into_response(),
        ),
        None => pages::error_page(StatusCode::NOT_FOUND, "Not found", "no such asset".into()),
    }
}
