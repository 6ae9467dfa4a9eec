//! Serving the HTTP API so that slow or idle clients cannot pin it.
//!
//! - **Connections**: an idle connection costs a task and a small buffer, so many are served
//!   at once: at most `api.max_connections`, within the descriptors the API is budgeted
//!   (`crate::fds`). At that cap a newcomer is still taken: the connection idle longest — one
//!   that has not sent a whole request head yet, or a kept-alive one between requests; never
//!   one being answered or streaming events — is closed to make room (nginx reuses its idle
//!   connections so when it runs short), so well-behaved clients do not queue behind slow
//!   ones. Only when every connection is busy does the newcomer wait, in the kernel's backlog.
//!   An accept error (`EMFILE` and the like) is logged and retried after a pause: it never
//!   ends the loop.
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

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Semaphore, TryAcquireError};
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

/// What one connection is doing, as the eviction at the cap sees it.
#[derive(Default)]
struct ConnState {
    /// Requests being answered.
    busy: AtomicU32,
    /// A response streams for as long as the client stays (server-sent events): never idle.
    streaming: AtomicBool,
    /// When it was last active (opened, or a request answered), ms since serving began.
    active_ms: AtomicU64,
}

/// An open connection: its state, and what tells it to close.
type Open = (Arc<ConnState>, oneshot::Sender<()>);

/// The open connections, for closing the one idle longest when the cap is reached.
struct Conns {
    epoch: Instant,
    open: Mutex<HashMap<u64, Open>>,
    next: AtomicU64,
}

impl Conns {
    fn new() -> Conns {
        Conns { epoch: Instant::now(), open: Mutex::new(HashMap::new()), next: AtomicU64::new(0) }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A new connection: its id, its state and what tells it to close.
    fn open(&self) -> (u64, Arc<ConnState>, oneshot::Receiver<()>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::default());
        state.active_ms.store(self.now_ms(), Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.open.lock().insert(id, (state.clone(), tx));
        (id, state, rx)
    }

    fn close(&self, id: u64) {
        self.open.lock().remove(&id);
    }

    /// Tells the connection idle longest (no request being answered, no stream) to close;
    /// false if every connection is busy.
    fn evict_idlest(&self) -> bool {
        let mut open = self.open.lock();
        let idlest = open
            .iter()
            .filter(|(_, (s, _))| s.busy.load(Ordering::Relaxed) == 0 && !s.streaming.load(Ordering::Relaxed))
            // The oldest first among those last active in the same millisecond.
            .min_by_key(|(id, (s, _))| (s.active_ms.load(Ordering::Relaxed), **id))
            .map(|(id, _)| *id);
        match idlest.and_then(|id| open.remove(&id)) {
            Some((_, close)) => {
                let _ = close.send(());
                true
            }
            None => false,
        }
    }
}

/// The API's service on one connection, counting its requests in flight and marking a
/// streaming answer, for [`Conns::evict_idlest`].
struct Tracked<S> {
    inner: S,
    state: Arc<ConnState>,
    conns: Arc<Conns>,
}

/// Ends a request in flight when dropped (answered, failed or abandoned).
struct InFlight {
    state: Arc<ConnState>,
    conns: Arc<Conns>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.state.active_ms.store(self.conns.now_ms(), Ordering::Relaxed);
        self.state.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S, Req, B> hyper::service::Service<Req> for Tracked<S>
where
    S: hyper::service::Service<Req, Response = hyper::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn call(&self, req: Req) -> Self::Future {
        self.state.busy.fetch_add(1, Ordering::Relaxed);
        let guard = InFlight { state: self.state.clone(), conns: self.conns.clone() };
        let answer = self.inner.call(req);
        Box::pin(async move {
            let r = answer.await;
            if let Ok(res) = &r {
                let events = res
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                if events {
                    guard.state.streaming.store(true, Ordering::Relaxed);
                }
            }
            drop(guard);
            r
        })
    }
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
    let conns = Arc::new(Conns::new());
    loop {
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
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => break,
            Err(TryAcquireError::NoPermits) => {
                // At the cap: the connection idle longest makes room; with every connection
                // busy, the newcomer waits for one to end.
                if conns.evict_idlest() {
                    shared.metrics.api_evictions.add(1);
                }
                tokio::select! {
                    p = slots.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                    _ = stopped(&mut stop) => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let (id, state, evicted) = conns.open();
        let service = Tracked { inner: TowerToHyperService::new(app.clone()), state, conns: conns.clone() };
        let mut stop = stop.clone();
        let shared = shared.clone();
        let conns = conns.clone();
        shared.metrics.api_connections.inc();
        tokio::spawn(async move {
            let (back, returned) = oneshot::channel();
            let io = Returned { stream: Some(stream), back: Some(back) };
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
            let mut conn = Box::pin(builder.serve_connection(TokioIo::new(io), service));
            tokio::select! {
                _ = conn.as_mut() => {}
                // Closed to make room for a newcomer (idle, so no answer is cut short).
                _ = evicted => {}
                _ = stopped(&mut stop) => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(limits.request_timeout, conn.as_mut()).await;
                }
            }
            conns.close(id);
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
