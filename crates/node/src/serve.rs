//! Serving the HTTP API so that slow or idle clients cannot pin it.
//!
//! - **Connections**: at most `api.max_connections` at once (clamped to half the process's
//!   open-file limit); past it the accept loop waits for one to close, and the kernel's backlog
//!   holds newcomers. An accept error (`EMFILE` and the like) is logged and retried after a
//!   pause: it never ends the loop.
//! - **Headers**: hyper's `header_read_timeout` closes a connection whose request headers are
//!   not complete within `api.header_timeout_s` (an idle keep-alive connection waiting for its
//!   next request included).
//! - **Bodies**: tower-http's `RequestBodyTimeout` fails a body that sends nothing for
//!   `api.body_timeout_s` (the handler answers 400).
//! - **Requests**: tower-http's `Timeout` answers 408 when a request takes longer than
//!   `api.request_timeout_s` in all (with the API's JSON error body, code `timeout`).
//! - **Stop**: when the node stops, connections finish their request and close, and the
//!   listener is dropped.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::state::Shared;

/// The limits the API is served with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// Longest wait for a request's headers (and for the next request on an idle connection).
    pub header_timeout: Duration,
    /// Longest a request body may send nothing.
    pub body_timeout: Duration,
    /// Longest a request may take in all, body and answer included.
    pub request_timeout: Duration,
    /// Most connections served at once.
    pub max_connections: usize,
}

/// Half the process's soft limit of open files, if it has one: what the API may use at most,
/// leaving the rest to the store, the peer-to-peer sockets and the rest of the process.
pub fn file_limit_share() -> Option<usize> {
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        limit.current.map(|n| usize::try_from(n / 2).unwrap_or(usize::MAX))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `max` clamped to [`file_limit_share`] (at least 1).
pub fn connection_cap(max: usize) -> usize {
    file_limit_share().map_or(max, |share| max.min(share)).max(1)
}

/// The answer a request that ran out of time gets: the API's JSON error, status 408.
async fn timeout_body(res: Response) -> Response {
    if res.status() != StatusCode::REQUEST_TIMEOUT {
        return res;
    }
    let body = serde_json::json!({
        "error": "timeout",
        "message": "the request took longer than the API's request time-out",
    });
    (StatusCode::REQUEST_TIMEOUT, [(header::CONTENT_TYPE, "application/json")], body.to_string())
        .into_response()
}

/// Resolves once `stop` turns true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The router with the body and request time-outs.
pub fn with_timeouts(app: Router, limits: &ServeLimits) -> Router {
    app.layer(axum::middleware::map_response(timeout_body))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, limits.request_timeout))
        .layer(RequestBodyTimeoutLayer::new(limits.body_timeout))
}

/// Serves `app` on `listener` within `limits` until `stop` turns true; the node's metrics
/// count the open connections and the accept errors.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let app = with_timeouts(app, &limits);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stopped(&mut stop) => break,
        };
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    shared.metrics.api_accept_errors.add(1);
                    tracing::debug!("api accept error: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut stop = stop.clone();
        let shared = shared.clone();
        shared.metrics.api_connections.inc();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(limits.request_timeout, conn).await;
                }
            }
            shared.metrics.api_connections.dec();
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_stays_below_the_file_limit() {
        assert!(connection_cap(usize::MAX) < usize::MAX || file_limit_share().is_none());
        assert_eq!(connection_cap(0), 1);
        if let Some(share) = file_limit_share() {
            assert_eq!(connection_cap(share + 10), share.max(1));
            assert_eq!(connection_cap(1), 1);
        }
    }
}
