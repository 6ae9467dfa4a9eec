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
//! - **Closing**: a connection the node closes while its client is still sending (a body
//!   refused past `api.max_body_bytes`, or answered before it was read) is closed the way
//!   production servers do it (a lingering close): the answer is written, the sending side shut
//!   (the client sees the answer's end), and what the client still sends is read and dropped,
//!   for at most [`LINGER_TOTAL`], until it pauses [`LINGER_IDLE`] or passes
//!   [`LINGER_BYTES_PER_BODY`] × `api.max_body_bytes` — only then is the socket closed. Closed
//!   at once, the kernel would answer the client's next bytes with a reset, and a client that
//!   writes its whole body before reading (most HTTP clients) would see the connection end
//!   instead of its 413 or 400. The connection keeps its slot while it lingers.
//! - **Stop**: when the node stops, connections finish their request and close, and the
//!   listener is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Semaphore};
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::state::Shared;

/// Longest a closing connection reads what its client still sends (a lingering close).
pub const LINGER_TOTAL: Duration = Duration::from_secs(10);
/// A lingering close ends when the client sends nothing for this long.
pub const LINGER_IDLE: Duration = Duration::from_secs(2);
/// A lingering close reads at most this many times `api.max_body_bytes`.
pub const LINGER_BYTES_PER_BODY: usize = 4;

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
    /// The largest request body (`api.max_body_bytes`): a lingering close reads at most
    /// [`LINGER_BYTES_PER_BODY`] times it.
    pub max_body_bytes: usize,
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
            let (back, returned) = oneshot::channel();
            let io = Returned { stream: Some(stream), back: Some(back) };
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let mut conn = Box::pin(builder.serve_connection(TokioIo::new(io), service));
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(limits.request_timeout, conn.as_mut()).await;
                }
            }
            // hyper has written its last answer; dropping the connection hands the socket back.
            drop(conn);
            if let Ok(stream) = returned.await {
                let max = limits.max_body_bytes.saturating_mul(LINGER_BYTES_PER_BODY);
                let drained = linger(stream, max, LINGER_IDLE, LINGER_TOTAL).await;
                if drained > 0 {
                    shared.metrics.api_lingering_closes.add(1);
                    tracing::debug!("api: lingering close read {drained} bytes the client still sent");
                }
            }
            shared.metrics.api_connections.dec();
            drop(permit);
        });
    }
}

/// The API socket as hyper holds it: when hyper drops it (the connection is over), the socket
/// goes back to the connection's task for [`linger`] instead of being closed.
struct Returned {
    stream: Option<TcpStream>,
    back: Option<oneshot::Sender<TcpStream>>,
}

impl Returned {
    fn stream(&mut self) -> std::io::Result<&mut TcpStream> {
        self.stream.as_mut().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotConnected))
    }
}

impl Drop for Returned {
    fn drop(&mut self) {
        if let (Some(stream), Some(back)) = (self.stream.take(), self.back.take()) {
            // The task waits for it; if it is gone, the socket simply closes.
            let _ = back.send(stream);
        }
    }
}

impl AsyncRead for Returned {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => Pin::new(s).poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Returned {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut().stream() {
            Ok(s) => Pin::new(s).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => Pin::new(s).poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut().stream() {
            Ok(s) => Pin::new(s).poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut().stream() {
            Ok(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }
}

/// A lingering close of a connection whose answers are all written: if the client is still
/// sending (bytes wait unread), the sending side is shut and what comes is read and dropped
/// until the client closes, pauses `idle`, `max_bytes` are read or `total` has passed; then
/// the socket closes. Returns the bytes read (0: nothing was waiting, closed at once).
async fn linger(stream: TcpStream, max_bytes: usize, idle: Duration, total: Duration) -> usize {
    use std::io::Read;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 << 10];
    // Only unread bytes make the kernel answer with a reset: none, nothing to wait for. (One
    // non-blocking read of the socket itself: the runtime's readiness may be out of date.)
    let Ok(std_stream) = stream.into_std() else { return 0 };
    // Nothing waiting (`WouldBlock`), the end of the stream or an error: close at once.
    let mut drained: usize = (&std_stream).read(&mut buf).unwrap_or_default();
    if drained == 0 {
        return 0;
    }
    let Ok(mut stream) = TcpStream::from_std(std_stream) else { return drained };
    // The answer's end reaches the client now (hyper may have shut the side already).
    let _ = stream.shutdown().await;
    let deadline = tokio::time::Instant::now() + total;
    while drained < max_bytes {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break;
        }
        match tokio::time::timeout(idle.min(left), stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => drained = drained.saturating_add(n),
            _ => break,
        }
    }
    drained
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
