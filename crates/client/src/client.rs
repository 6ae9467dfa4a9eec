//! The async client (reqwest): one method per operation of [`crate::ops`], each returning the
//! shared type or a [`ClientError`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scalechain_types::tx::encode_tx_batch;
use scalechain_types::{Hash, Tx};

use crate::decode::decode_json;
use crate::error::{error_chain, root_cause, ClientError};
use crate::ops::{self, Method, Op, Request, Response};
use crate::types::{
    ApiError, AppEntries, AppEntry, AppRange, ArrivalsJson, BlockId, BlockJson, BlockTxids, MempoolJson,
    NodeEvent, Owner, PeerInfo, ProfileControl, ProfileJson, ProfileStatus, RemovedJson, Status,
    SubmitResult, SubmitTxs, Tip, TxStatus, UtxoJson,
};

/// How long a connection may take to open, by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole request may take, by default.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long an idle pooled connection is kept.
const POOL_IDLE: Duration = Duration::from_secs(5);
/// How long `GET /events` may go without an event or a keep-alive before the stream counts as
/// dead (the node sends a keep-alive every 15 s).
pub const EVENTS_IDLE: Duration = Duration::from_secs(45);
/// The request time-out of `GET /events`, in place of the client's: the stream lives until the
/// node or the reader closes it.
const EVENTS_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// The largest token file read (a token is one short line).
const MAX_TOKEN_FILE: u64 = 4096;

/// Where the bearer token comes from.
#[derive(Clone, Debug)]
enum TokenSource {
    None,
    Value(String),
    File(PathBuf),
}

/// The settings of a client: base URL, token, time-outs. Cheap to clone, so a thread can
/// build its own client from the same settings.
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    base: String,
    token: TokenSource,
    connect_timeout: Duration,
    timeout: Duration,
}

impl ClientBuilder {
    /// Settings for the node at `base`: `host:port` or `http(s)://host:port[/prefix]`.
    pub fn new(base: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base: base.into(),
            token: TokenSource::None,
            connect_timeout: CONNECT_TIMEOUT,
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// The bearer token sent with write requests.
    pub fn token(mut self, token: impl Into<String>) -> ClientBuilder {
        self.token = TokenSource::Value(token.into());
        self
    }

    /// Reads the bearer token from the first line of `path` (e.g. `DATA_DIR/api_token`).
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> ClientBuilder {
        self.token = TokenSource::File(path.into());
        self
    }

    /// How long opening a connection may take.
    pub fn connect_timeout(mut self, d: Duration) -> ClientBuilder {
        self.connect_timeout = d;
        self
    }

    /// How long a whole request may take.
    pub fn timeout(mut self, d: Duration) -> ClientBuilder {
        self.timeout = d;
        self
    }

    /// The async client.
    pub fn build(&self) -> Result<Client, ClientError> {
        let base = parse_base(&self.base)?;
        let token = match &self.token {
            TokenSource::None => None,
            TokenSource::Value(t) if t.trim().is_empty() => {
                return Err(ClientError::BadToken("the token is empty".into()))
            }
            TokenSource::Value(t) => Some(t.trim().to_string()),
            TokenSource::File(p) => Some(read_token(p)?),
        };
        if token.as_deref().is_some_and(|t| t.bytes().any(|b| !(0x21..0x7f).contains(&b))) {
            return Err(ClientError::BadToken("a token is printable ASCII without spaces".into()));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.timeout)
            .pool_max_idle_per_host(8)
            // Below the node's keep-alive (its header time-out, 10 s by default), so the pool
            // rarely offers a connection the node is closing.
            .pool_idle_timeout(POOL_IDLE)
            .build()
            .map_err(|e| ClientError::Setup(error_chain(&e)))?;
        Ok(Client {
            http,
            base: base.into(),
            token: token.map(Into::into),
            connect_timeout: self.connect_timeout,
            timeout: self.timeout,
        })
    }

    /// The blocking client (its own current-thread runtime).
    pub fn build_blocking(&self) -> Result<crate::blocking::Client, ClientError> {
        crate::blocking::Client::from_async(self.build()?)
    }
}

/// The media type of an answer's `Content-Type`, without parameters ("no media type" when it
/// has none); read only for an answer that failed, off the path of those that succeed.
fn media_of(content_type: Option<&reqwest::header::HeaderValue>) -> String {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty() && v.len() <= 100)
        .unwrap_or_else(|| "no media type".into())
}

/// The normalised base URL (scheme, host, port, no trailing slash) of `input`.
pub fn parse_base(input: &str) -> Result<String, ClientError> {
    let bad = |reason: String| ClientError::BadUrl { input: input.to_string(), reason };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(bad("empty".into()));
    }
    let with_scheme = if trimmed.contains("://") { trimmed.to_string() } else { format!("http://{trimmed}") };
    let url = reqwest::Url::parse(&with_scheme).map_err(|e| bad(e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(bad(format!("scheme {:?} is not http or https", url.scheme())));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host".into()));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("a base URL has no query or fragment".into()));
    }
    if let Some(c) = trimmed.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(format!("it contains {c:?}")));
    }
    if url.path().contains("//") {
        return Err(bad("its path has an empty segment (a ':' missing after the scheme?)".into()));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn read_token(path: &Path) -> Result<String, ClientError> {
    let err = |reason: String| ClientError::TokenFile { path: path.to_path_buf(), reason };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.len() > MAX_TOKEN_FILE {
        return Err(err(format!("{} bytes; a token file holds one short line", meta.len())));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let token = text.lines().next().unwrap_or("").trim().to_string();
    if token.is_empty() {
        return Err(err("the first line is empty".into()));
    }
    Ok(token)
}

/// Why the body of `GET /events` ended early.
#[derive(Debug)]
enum BodyError {
    /// Nothing arrived for [`EVENTS_IDLE`].
    Idle,
    /// The connection failed.
    Transport(String),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Idle => write!(f, "no event or keep-alive for {EVENTS_IDLE:?}"),
            BodyError::Transport(d) => f.write_str(d),
        }
    }
}

/// An async client of one node's API. Cloning shares the connection pool.
///
/// A client's connections belong to the tokio runtime that opened them: use one client per
/// runtime (a thread with its own runtime builds its own from the same [`ClientBuilder`]).
#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    base: Arc<str>,
    token: Option<Arc<str>>,
    connect_timeout: Duration,
    timeout: Duration,
}

impl Client {
    /// A client of the node at `base` with the default time-outs and no token.
    pub fn new(base: &str) -> Result<Client, ClientError> {
        ClientBuilder::new(base).build()
    }

    /// Settings to build a client from.
    pub fn builder(base: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(base)
    }

    /// The base URL (`http://host:port`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends one operation and decodes its answer.
    async fn call<Req: Request, Resp: Response>(
        &self,
        op: &Op<Req, Resp>,
        args: &[&str],
        query: &[(&str, String)],
        body: Option<(Vec<u8>, &'static str)>,
    ) -> Result<Resp::Output, ClientError> {
        let (resp, url) = self.send(op, args, query, body, None).await?;
        let (status, content_type) =
            (resp.status().as_u16(), resp.headers().get(reqwest::header::CONTENT_TYPE).cloned());
        let bytes = resp.bytes().await.map_err(|e| self.transport(op.method, &url, &e))?;
        Resp::decode(&bytes).map_err(|detail| {
            // The API never answers with a web page: a page that does not decode is another
            // server's.
            let media = media_of(content_type.as_ref());
            if media.starts_with("text/html") {
                ClientError::NotANode { method: op.method, url, status, media }
            } else {
                ClientError::BadResponse { method: op.method, url, detail }
            }
        })
    }

    /// Sends one operation; an error status becomes [`ClientError::Api`] (with the API's
    /// error code and message when the body is one). `timeout` replaces the client's for this
    /// request. Returns the answer, its body unread, and the URL.
    async fn send<Req: Request, Resp: Response>(
        &self,
        op: &Op<Req, Resp>,
        args: &[&str],
        query: &[(&str, String)],
        body: Option<(Vec<u8>, &'static str)>,
        timeout: Option<Duration>,
    ) -> Result<(reqwest::Response, String), ClientError> {
        let mut url = self.url(&op.fill(args));
        for (i, (k, v)) in query.iter().enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(k);
            url.push('=');
            ops::encode_segment(v, &mut url);
        }
        let method = op.method;
        let mut req = match method {
            Method::Get => self.http.get(&url),
            Method::Post => self.http.post(&url),
        };
        if let Some((b, media)) = body {
            req = req.header(reqwest::header::CONTENT_TYPE, media).body(b);
        }
        if let (Method::Post, Some(t)) = (method, &self.token) {
            req = req.bearer_auth(t);
        }
        if let Some(t) = timeout {
            req = req.timeout(t);
        }
        // A GET that failed before any answer (not a time-out) goes once more, on a fresh
        // connection: a pooled keep-alive connection can be closed by the node just as it is
        // reused. A POST is never sent twice.
        let retry = if method == Method::Get { req.try_clone() } else { None };
        let resp = match (req.send().await, retry) {
            (Ok(r), _) => r,
            (Err(e), Some(again)) if !e.is_timeout() => {
                again.send().await.map_err(|e| self.transport(method, &url, &e))?
            }
            (Err(e), _) => return Err(self.transport(method, &url, &e)),
        };
        let status = resp.status();
        if !status.is_success() {
            let media = media_of(resp.headers().get(reqwest::header::CONTENT_TYPE));
            let bytes = resp.bytes().await.map_err(|e| self.transport(method, &url, &e))?;
            return Err(match decode_json::<ApiError>(&bytes) {
                Ok(b) => ClientError::Api {
                    method,
                    url,
                    status: status.as_u16(),
                    code: b.error,
                    message: b.message,
                },
                // Not the API's error: something else answered (a web server, a proxy).
                Err(_) => ClientError::NotANode { method, url, status: status.as_u16(), media },
            });
        }
        Ok((resp, url))
    }

    fn transport(&self, method: Method, url: &str, e: &reqwest::Error) -> ClientError {
        if e.is_timeout() {
            let after = if e.is_connect() { self.connect_timeout } else { self.timeout };
            return ClientError::Timeout { method, url: url.to_string(), after };
        }
        ClientError::Unreachable { method, url: url.to_string(), detail: root_cause(e) }
    }

    /// `GET /status`.
    pub async fn status(&self) -> Result<Status, ClientError> {
        self.call(&ops::STATUS, &[], &[], None).await
    }

    /// `GET /tip`.
    pub async fn tip(&self) -> Result<Tip, ClientError> {
        self.call(&ops::TIP, &[], &[], None).await
    }

    /// `GET /peers`.
    pub async fn peers(&self) -> Result<Vec<PeerInfo>, ClientError> {
        self.call(&ops::PEERS, &[], &[], None).await
    }

    /// `GET /blocks/{id}`.
    pub async fn block(&self, id: impl Into<BlockId>) -> Result<BlockJson, ClientError> {
        let id = id.into().to_string();
        self.call(&ops::BLOCK, &[&id], &[], None).await
    }

    /// `GET /blocks/{id}/txids`.
    pub async fn block_txids(&self, id: impl Into<BlockId>) -> Result<BlockTxids, ClientError> {
        let id = id.into().to_string();
        self.call(&ops::BLOCK_TXIDS, &[&id], &[], None).await
    }

    /// `GET /txs/{txid}`.
    pub async fn tx(&self, txid: &Hash) -> Result<TxStatus, ClientError> {
        let id = txid.to_string();
        self.call(&ops::TX, &[&id], &[], None).await
    }

    /// `POST /txs`, the transactions sent as one binary transaction batch
    /// (`application/octet-stream`, PROTOCOL.md §13.2's encoding): one verdict per transaction,
    /// in order (checked: as many verdicts as transactions, and `accepted` counts the accepted
    /// ones).
    pub async fn submit(&self, txs: &[Tx]) -> Result<SubmitResult, ClientError> {
        self.submit_body(txs.len(), (encode_tx_batch(txs.iter()), ops::BINARY)).await
    }

    /// `POST /txs` with the JSON body (`{"txs": [hex, …]}`), checked as [`Client::submit`].
    pub async fn submit_json(&self, txs: &[Tx]) -> Result<SubmitResult, ClientError> {
        let body = serde_json::to_vec(&SubmitTxs::encode(txs))
            .map_err(|e| ClientError::Setup(format!("encoding the transactions: {e}")))?;
        self.submit_body(txs.len(), (body, ops::JSON)).await
    }

    async fn submit_body(
        &self,
        n: usize,
        body: (Vec<u8>, &'static str),
    ) -> Result<SubmitResult, ClientError> {
        let r = self.call(&ops::SUBMIT, &[], &[], Some(body)).await?;
        let bad = |detail: String| ClientError::BadResponse {
            method: Method::Post,
            url: self.url(ops::SUBMIT.path),
            detail,
        };
        if r.results.len() != n {
            return Err(bad(format!("{} verdicts for {n} transactions", r.results.len())));
        }
        let accepted = r.results.iter().filter(|v| v.accepted).count();
        if accepted != r.accepted {
            return Err(bad(format!("`accepted` is {} but {accepted} verdicts accept", r.accepted)));
        }
        Ok(r)
    }

    /// `GET /utxos/{owner}?limit=N` (the node's default limit is 1,000, its maximum 100,000).
    pub async fn utxos(&self, owner: &Owner, limit: Option<usize>) -> Result<Vec<UtxoJson>, ClientError> {
        let owner = owner.to_string();
        let q: Vec<(&str, String)> = limit.map(|n| ("limit", n.to_string())).into_iter().collect();
        self.call(&ops::UTXOS, &[&owner], &q, None).await
    }

    /// `GET /mempool?limit=N` (txids listed; the node's default is 1,000).
    pub async fn mempool(&self, limit: Option<usize>) -> Result<MempoolJson, ClientError> {
        let q: Vec<(&str, String)> = limit.map(|n| ("limit", n.to_string())).into_iter().collect();
        self.call(&ops::MEMPOOL, &[], &q, None).await
    }

    /// `GET /mempool/removed?after=&limit=`: transactions that left the mempool unconfirmed
    /// after log position `after` (the node's default limit is 1,000, its maximum 10,000).
    pub async fn mempool_removed(
        &self,
        after: u64,
        limit: Option<usize>,
    ) -> Result<RemovedJson, ClientError> {
        let mut q: Vec<(&str, String)> = vec![("after", after.to_string())];
        q.extend(limit.map(|n| ("limit", n.to_string())));
        self.call(&ops::MEMPOOL_REMOVED, &[], &q, None).await
    }

    /// `GET /arrivals?after=&limit=`: the arrival log after position `after`.
    pub async fn arrivals(&self, after: u64, limit: Option<usize>) -> Result<ArrivalsJson, ClientError> {
        let mut q: Vec<(&str, String)> = vec![("after", after.to_string())];
        q.extend(limit.map(|n| ("limit", n.to_string())));
        self.call(&ops::ARRIVALS, &[], &q, None).await
    }

    /// `GET /profile?after=&limit=`: the function profile, paths after `after` in path order.
    pub async fn profile(
        &self,
        after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<ProfileJson, ClientError> {
        let mut q: Vec<(&str, String)> = after.map(|a| vec![("after", a.to_string())]).unwrap_or_default();
        q.extend(limit.map(|n| ("limit", n.to_string())));
        self.call(&ops::PROFILE, &[], &q, None).await
    }

    /// `POST /profile`: turns the profiler on or off, or resets it.
    pub async fn profile_control(&self, control: &ProfileControl) -> Result<ProfileStatus, ClientError> {
        let body = serde_json::to_vec(control)
            .map_err(|e| ClientError::Setup(format!("encoding the request: {e}")))?;
        self.call(&ops::PROFILE_CONTROL, &[], &[], Some((body, ops::JSON))).await
    }

    /// `GET /metrics`: the Prometheus text.
    pub async fn metrics(&self) -> Result<String, ClientError> {
        self.call(&ops::METRICS, &[], &[], None).await
    }

    /// `GET /events`: the node's server-sent events, as a stream that ends when the node closes
    /// it. The first event is the tip when the stream opened. A stream that carries no event
    /// and no keep-alive for [`EVENTS_IDLE`] ends with [`ClientError::Timeout`]; a broken
    /// connection ends it with [`ClientError::Unreachable`]; an event that does not parse ends
    /// it with [`ClientError::BadResponse`]; events of kinds this client does not know are
    /// skipped.
    pub async fn events(
        &self,
    ) -> Result<impl futures::Stream<Item = Result<NodeEvent, ClientError>> + Send + 'static, ClientError>
    {
        use eventsource_stream::{EventStreamError, Eventsource};
        use futures::StreamExt;
        let (resp, url) = self.send(&ops::EVENTS, &[], &[], None, Some(EVENTS_LIFETIME)).await?;
        // The node sends a keep-alive comment at least every 15 s: a longer silence is a dead
        // connection, whatever TCP says.
        let bytes = futures::stream::unfold(Some(resp.bytes_stream()), |body| async move {
            let mut body = body?;
            match tokio::time::timeout(EVENTS_IDLE, body.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(body))),
                Ok(Some(Err(e))) => Some((Err(BodyError::Transport(error_chain(&e))), None)),
                Ok(None) => None,
                Err(_) => Some((Err(BodyError::Idle), None)),
            }
        });
        let events = bytes.eventsource().filter_map(move |ev| {
            let (method, url) = (Method::Get, url.clone());
            let r = match ev {
                Ok(ev) => match NodeEvent::parse(&ev.event, &ev.data) {
                    Ok(known) => known.map(Ok),
                    Err(detail) => Some(Err(ClientError::BadResponse { method, url, detail })),
                },
                Err(EventStreamError::Transport(BodyError::Idle)) => {
                    Some(Err(ClientError::Timeout { method, url, after: EVENTS_IDLE }))
                }
                Err(EventStreamError::Transport(BodyError::Transport(detail))) => {
                    Some(Err(ClientError::Unreachable { method, url, detail }))
                }
                Err(e) => Some(Err(ClientError::BadResponse { method, url, detail: e.to_string() })),
            };
            futures::future::ready(r)
        });
        // An error ends the stream: what follows it could not be trusted to be in order.
        Ok(events.scan(false, |failed, r| {
            if *failed {
                return futures::future::ready(None);
            }
            *failed = r.is_err();
            futures::future::ready(Some(r))
        }))
    }

    /// `GET /openapi.json`.
    pub async fn openapi(&self) -> Result<serde_json::Value, ClientError> {
        self.call(&ops::OPENAPI, &[], &[], None).await
    }

    /// `GET /apps/{kind}/state/{key}` (404 if the key is absent: [`ClientError::is_not_found`]).
    pub async fn app_value(&self, kind: u8, key: &[u8]) -> Result<AppEntry, ClientError> {
        let (kind, key) = (kind.to_string(), hex::encode(key));
        self.call(&ops::APP_VALUE, &[&kind, &key], &[], None).await
    }

    /// `GET /apps/{kind}/state?prefix=&after=&limit=`.
    pub async fn app_range(&self, kind: u8, range: &AppRange) -> Result<AppEntries, ClientError> {
        let kind = kind.to_string();
        let mut q = vec![("prefix", hex::encode(&range.prefix))];
        if let Some(a) = &range.after {
            q.push(("after", hex::encode(a)));
        }
        if let Some(n) = range.limit {
            q.push(("limit", n.to_string()));
        }
        self.call(&ops::APP_RANGE, &[&kind], &q, None).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn base_urls_are_normalised_and_bad_ones_say_why() {
        assert_eq!(parse_base("127.0.0.1:8645").unwrap(), "http://127.0.0.1:8645");
        assert_eq!(parse_base("https://node.example:1/").unwrap(), "https://node.example:1");
        assert_eq!(parse_base(" http://h:2/api/ ").unwrap(), "http://h:2/api");
        for (input, why) in [
            ("", "empty"),
            ("ftp://h:1", "scheme \"ftp\""),
            ("http://", "empty host"),
            ("http://h:99999", "invalid port"),
            ("h:1/?x=1", "no query"),
            ("http//bad url", "' '"),
            ("http//bad", "empty segment"),
        ] {
            let e = parse_base(input).unwrap_err();
            assert!(matches!(e, ClientError::BadUrl { .. }), "{input}: {e}");
            assert!(e.to_string().contains(why), "{input}: {e}");
        }
    }

    #[test]
    fn tokens_come_from_a_string_or_the_first_line_of_a_file() {
        assert!(matches!(ClientBuilder::new("h:1").token("  ").build(), Err(ClientError::BadToken(_))));
        assert!(matches!(ClientBuilder::new("h:1").token("a b").build(), Err(ClientError::BadToken(_))));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("api_token");
        std::fs::write(&f, "s3cret\nignored\n").unwrap();
        let c = ClientBuilder::new("h:1").token_file(&f).build().unwrap();
        assert_eq!(c.token.as_deref(), Some("s3cret"));
        std::fs::write(&f, "\n").unwrap();
        let e = ClientBuilder::new("h:1").token_file(&f).build().unwrap_err();
        assert!(e.to_string().contains("the first line is empty"), "{e}");
        let missing = dir.path().join("none");
        let e = ClientBuilder::new("h:1").token_file(&missing).build().unwrap_err();
        assert!(matches!(e, ClientError::TokenFile { .. }) && e.to_string().contains("none"), "{e}");
        std::fs::write(&f, "x".repeat(5000)).unwrap();
        let e = ClientBuilder::new("h:1").token_file(&f).build().unwrap_err();
        assert!(e.to_string().contains("5000 bytes"), "{e}");
    }
}
