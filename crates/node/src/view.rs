//! What the node offers the pages served beside its API: [`NodeView`], the read-only view of a
//! running node that its shared state implements, and [`Pages`], the routes a caller of
//! [`run`](crate::run()) hands over to be mounted on the API's address.
//!
//! The web explorer (`scalechain-explorer`) sits above the node and reads it only through
//! [`NodeView`]; the node knows nothing of its pages. `scalechain node` mounts the explorer's
//! pages, and the election pages with the voting module it registers.
//!
//! The node decides whether pages are served and builds them once, when its API starts: only
//! when the API listens and `explorer.enabled` says so ([`ExplorerSection::serves`]). They are
//! merged into the API's router, so they are served within the API's limits (body size,
//! time-outs, connection cap), counted in its request metrics and profile, and a path nobody
//! routes gets the API's JSON 404. What the pages answer — their headers, their token gate — is
//! theirs; [`NodeView::token_matches`] tells them the API's token.
//!
//! An implementation of [`NodeView`] must not: hold a lock across an await (every method is
//! synchronous and returns owned values, or the replica whose locks its reader takes for as
//! short as it can); block for long (pages call it on the API's threads or inside
//! `spawn_blocking`); change the node (the view only reads; the pages have no way to submit,
//! mine or configure).
//!
//! [`ExplorerSection::serves`]: crate::config::ExplorerSection::serves

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use scalechain_chain::DiskStore;
use scalechain_client::types::{PeerInfo, ProfileJson, Status};
use scalechain_replica::Replica;
use tokio::sync::watch;

use crate::state::Shared;

/// The prefix of every metric name in [`NodeView::metrics_text`] (`scalechain_chain_height`).
pub const METRICS_PREFIX: &str = crate::metrics::PREFIX;

/// A running node as the pages beside its API read it.
pub trait NodeView: Send + Sync {
    /// The node at a glance: what `GET /status` answers.
    fn status(&self) -> Status;

    /// The connected peers: what `GET /peers` answers.
    fn peers(&self) -> Vec<PeerInfo>;

    /// The node's metrics in the OpenMetrics text format: what `GET /metrics` answers (every
    /// name starts with [`METRICS_PREFIX`]).
    fn metrics_text(&self) -> String;

    /// At most `limit` call paths of the function profile after `after`, in path order: what
    /// `GET /profile?after=…&limit=…` answers.
    fn profile(&self, after: Option<&str>, limit: usize) -> ProfileJson;

    /// Does the API have a token (`api.token`, or the one generated when it listens beyond
    /// loopback)? Then every page asks for it too.
    fn token_required(&self) -> bool;

    /// Is `given` the API's token? Compared in constant time; false when the API has none.
    fn token_matches(&self, given: &str) -> bool;

    /// The chain and the mempool, to read (the chain's lock for as short as possible: the block
    /// worker waits for readers to commit a block).
    fn replica(&self) -> &Replica<DiskStore>;

    /// The `scalechain study` output directory the node shows (`explorer.study_dir`), if any.
    fn study_dir(&self) -> Option<&Path>;

    /// Turns true when the API stops: open event streams end then.
    fn api_stopped(&self) -> watch::Receiver<bool>;
}

impl NodeView for Shared {
    fn status(&self) -> Status {
        crate::api::status_of(self)
    }

    fn peers(&self) -> Vec<PeerInfo> {
        self.peers.read().values().cloned().collect()
    }

    fn metrics_text(&self) -> String {
        crate::api::metrics_text(self)
    }

    fn profile(&self, after: Option<&str>, limit: usize) -> ProfileJson {
        self.profile.document(after, limit)
    }

    fn token_required(&self) -> bool {
        self.api_token.is_some()
    }

    fn token_matches(&self, given: &str) -> bool {
        self.api_token
            .as_deref()
            .is_some_and(|t| crate::api::constant_time_eq(given.as_bytes(), t.as_bytes()))
    }

    fn replica(&self) -> &Replica<DiskStore> {
        &self.replica
    }

    fn study_dir(&self) -> Option<&Path> {
        self.cfg.explorer.study_dir.as_deref()
    }

    fn api_stopped(&self) -> watch::Receiver<bool> {
        self.api_stop.subscribe()
    }
}

/// Builds one set of routes from the node's view.
type Build = Box<dyn FnOnce(Arc<dyn NodeView>) -> Router + Send>;

/// Routes served on the API's address beside the API when pages are served (see the module's
/// notes): each set built from the node's view when the API starts, all merged into the API's
/// router. Their paths must not overlap each other's or the API's.
#[derive(Default)]
pub struct Pages {
    builds: Vec<Build>,
}

impl Pages {
    /// No pages: the API alone.
    pub fn none() -> Pages {
        Pages::default()
    }

    /// These pages and the routes `build` makes.
    pub fn with(mut self, build: impl FnOnce(Arc<dyn NodeView>) -> Router + Send + 'static) -> Pages {
        self.builds.push(Box::new(build));
        self
    }

    /// Every set built and merged, if there is one.
    pub(crate) fn build(self, view: Arc<dyn NodeView>) -> Option<Router> {
        self.builds.into_iter().map(|b| b(view.clone())).reduce(Router::merge)
    }
}
