//! The API's operations as values: method, path template, request body and the response the
//! client decodes. The node routes its handlers at these paths, the client calls them, and
//! [`all`] lists every one with the schema names of its types, so a test can compare them with
//! the OpenAPI document the node serves: a type changed on one side only fails that test.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use utoipa::ToSchema;

// Every JSON answer decodes through the crate's one decoder, found here by its callers.
pub use crate::decode::decode_json;
use crate::types::{
    AppEntries, AppEntry, ArrivalsJson, BlockJson, BlockTxids, MempoolJson, PeerInfo, ProfileControl,
    ProfileJson, ProfileStatus, RemovedJson, Status, SubmitResult, SubmitTxs, Tip, TxStatus, UtxoJson,
};

/// An HTTP method of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
}

impl Method {
    /// `GET` or `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The schema a body has in the OpenAPI document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schema {
    /// A named component (`#/components/schemas/<name>`).
    Named(Cow<'static, str>),
    /// An array of a named component.
    ListOf(Cow<'static, str>),
    /// No schema: a document of the given media type (text, or JSON of no fixed shape).
    Untyped,
}

/// How an answer is decoded.
pub trait Response {
    /// What the client returns.
    type Output;
    /// The media type the node answers with.
    const MEDIA: &'static str;
    /// Its schema.
    fn schema() -> Schema;
    /// Decodes an answer; the error names what did not parse and where.
    fn decode(bytes: &[u8]) -> Result<Self::Output, String>;
}

/// A request body.
pub trait Request {
    /// Its schema, if there is a body.
    fn schema() -> Option<Cow<'static, str>>;
}

/// A JSON body of type `T`.
pub struct Json<T>(PhantomData<fn() -> T>);

/// A JSON array of `T`.
pub struct JsonList<T>(PhantomData<fn() -> T>);

/// OpenMetrics text (the node's metrics).
pub struct Text;

/// A JSON document of no fixed shape (the OpenAPI document itself).
pub struct AnyJson;

/// A stream of server-sent events (`text/event-stream`), read by
/// [`Client::events`](crate::Client::events), not decoded whole.
pub struct EventStream;

/// No request body.
pub struct NoBody;

impl<T: DeserializeOwned + ToSchema> Response for Json<T> {
    type Output = T;
    const MEDIA: &'static str = "application/json";
    fn schema() -> Schema {
        Schema::Named(T::name())
    }
    fn decode(bytes: &[u8]) -> Result<T, String> {
        decode_json(bytes)
    }
}

impl<T: DeserializeOwned + ToSchema> Response for JsonList<T> {
    type Output = Vec<T>;
    const MEDIA: &'static str = "application/json";
    fn schema() -> Schema {
        Schema::ListOf(T::name())
    }
    fn decode(bytes: &[u8]) -> Result<Vec<T>, String> {
        decode_json(bytes)
    }
}

impl Response for Text {
    type Output = String;
    const MEDIA: &'static str = "application/openmetrics-text";
    fn schema() -> Schema {
        Schema::Untyped
    }
    fn decode(bytes: &[u8]) -> Result<String, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| format!("not UTF-8: {e}"))
    }
}

impl Response for AnyJson {
    type Output = serde_json::Value;
    const MEDIA: &'static str = "application/json";
    fn schema() -> Schema {
        Schema::Untyped
    }
    fn decode(bytes: &[u8]) -> Result<serde_json::Value, String> {
        decode_json(bytes)
    }
}

impl Response for EventStream {
    type Output = ();
    const MEDIA: &'static str = "text/event-stream";
    fn schema() -> Schema {
        Schema::Untyped
    }
    fn decode(_: &[u8]) -> Result<(), String> {
        Err("an event stream is read event by event".into())
    }
}

impl Request for NoBody {
    fn schema() -> Option<Cow<'static, str>> {
        None
    }
}

impl<T: ToSchema> Request for Json<T> {
    fn schema() -> Option<Cow<'static, str>> {
        Some(T::name())
    }
}

/// One operation: its method and path template (`{name}` marks a path parameter, in axum's and
/// OpenAPI's syntax alike), its request body and its response.
pub struct Op<Req, Resp> {
    /// The method.
    pub method: Method,
    /// The path template.
    pub path: &'static str,
    kinds: PhantomData<fn() -> (Req, Resp)>,
}

impl<Req: Request, Resp: Response> Op<Req, Resp> {
    const fn new(method: Method, path: &'static str) -> Self {
        Op { method, path, kinds: PhantomData }
    }

    /// The path with its parameters filled in, in order (each percent-encoded).
    pub fn fill(&self, args: &[&str]) -> String {
        let mut out = String::with_capacity(self.path.len() + 64);
        let mut args = args.iter();
        let mut rest = self.path;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = rest[open..].find('}').map_or(rest.len(), |c| open + c + 1);
            if let Some(a) = args.next() {
                encode_segment(a, &mut out);
            }
            rest = &rest[close.min(rest.len())..];
        }
        out.push_str(rest);
        out
    }

    /// The operation as the OpenAPI document should show it.
    pub fn describe(&self) -> Described {
        Described {
            method: self.method,
            path: self.path,
            request: Req::schema(),
            response: Resp::schema(),
            media: Resp::MEDIA,
        }
    }
}

/// Percent-encodes one path segment (everything but RFC 3986's unreserved characters).
pub(crate) fn encode_segment(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// An operation described for comparison with the OpenAPI document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Described {
    /// The method.
    pub method: Method,
    /// The path template.
    pub path: &'static str,
    /// The schema of the request body, if any.
    pub request: Option<Cow<'static, str>>,
    /// The schema of the success answer.
    pub response: Schema,
    /// The media type of the success answer.
    pub media: &'static str,
}

/// The media type of JSON bodies.
pub const JSON: &str = "application/json";
/// The media type of binary bodies: `POST /txs` takes one transaction batch so (PROTOCOL.md
/// §13.2's encoding, `count:u32 LE ‖ tx * count`).
pub const BINARY: &str = "application/octet-stream";

macro_rules! operations {
    ($($(#[$doc:meta])* $name:ident: $req:ty => $resp:ty = $method:ident $path:literal;)*) => {
        $($(#[$doc])* pub const $name: Op<$req, $resp> = Op::new(Method::$method, $path);)*

        /// Every operation of the API.
        pub fn all() -> Vec<Described> {
            vec![$($name.describe()),*]
        }
    };
}

operations! {
    /// The node at a glance.
    STATUS: NoBody => Json<Status> = Get "/status";
    /// The main chain's tip.
    TIP: NoBody => Json<Tip> = Get "/tip";
    /// Connected peers.
    PEERS: NoBody => JsonList<PeerInfo> = Get "/peers";
    /// A block by height or hash.
    BLOCK: NoBody => Json<BlockJson> = Get "/blocks/{id}";
    /// A block's txids.
    BLOCK_TXIDS: NoBody => Json<BlockTxids> = Get "/blocks/{id}/txids";
    /// A transaction from the mempool or the main chain.
    TX: NoBody => Json<TxStatus> = Get "/txs/{txid}";
    /// Submits transactions (needs the token when the node has one).
    SUBMIT: Json<SubmitTxs> => Json<SubmitResult> = Post "/txs";
    /// Unspent outputs of an owner (`?limit=`).
    UTXOS: NoBody => JsonList<UtxoJson> = Get "/utxos/{owner}";
    /// Mempool contents and counters (`?limit=`).
    MEMPOOL: NoBody => Json<MempoolJson> = Get "/mempool";
    /// When transactions and blocks arrived, and from where (`?after=&limit=`).
    ARRIVALS: NoBody => Json<ArrivalsJson> = Get "/arrivals";
    /// The function profile (`?after=&limit=`).
    PROFILE: NoBody => Json<ProfileJson> = Get "/profile";
    /// Turns the profiler on or off, or resets it (needs the token when the node has one).
    PROFILE_CONTROL: Json<ProfileControl> => Json<ProfileStatus> = Post "/profile";
    /// Transactions that left the mempool unconfirmed, and why (`?after=&limit=`).
    MEMPOOL_REMOVED: NoBody => Json<RemovedJson> = Get "/mempool/removed";
    /// Prometheus metrics.
    METRICS: NoBody => Text = Get "/metrics";
    /// Server-sent events: the main chain's tip, now and at every change.
    EVENTS: NoBody => EventStream = Get "/events";
    /// The OpenAPI document.
    OPENAPI: NoBody => AnyJson = Get "/openapi.json";
    /// One application state value.
    APP_VALUE: NoBody => Json<AppEntry> = Get "/apps/{kind}/state/{key}";
    /// Application state entries by key prefix (`?prefix=&after=&limit=`).
    APP_RANGE: NoBody => Json<AppEntries> = Get "/apps/{kind}/state";
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths_fill_in_order_and_encode_what_is_not_unreserved() {
        assert_eq!(BLOCK_TXIDS.fill(&["12"]), "/blocks/12/txids");
        assert_eq!(APP_VALUE.fill(&["2", "ab01"]), "/apps/2/state/ab01");
        assert_eq!(UTXOS.fill(&["a b/c?"]), "/utxos/a%20b%2Fc%3F");
        assert_eq!(STATUS.fill(&[]), "/status");
    }

    #[test]
    fn every_operation_is_listed_once_with_its_types() {
        let all = all();
        assert_eq!(all.len(), 18);
        let mut keys: Vec<_> = all.iter().map(|d| (d.method, d.path)).collect();
        keys.sort_by_key(|k| (k.1, k.0.as_str()));
        keys.dedup();
        assert_eq!(keys.len(), all.len());
        let submit = all.iter().find(|d| d.method == Method::Post).unwrap();
        assert_eq!(submit.request.as_deref(), Some("SubmitTxs"));
        assert_eq!(submit.response, Schema::Named("SubmitResult".into()));
        assert_eq!(PEERS.describe().response, Schema::ListOf("PeerInfo".into()));
        assert_eq!(METRICS.describe().media, "application/openmetrics-text");
    }

    #[test]
    fn decoding_names_the_field_that_does_not_parse() {
        let e = <Json<SubmitResult>>::decode(br#"{"accepted": 1, "results": [{"txid": "zz", "accepted": true, "reason": null, "detail": null}]}"#)
            .unwrap_err();
        assert!(e.starts_with("results[0].txid: "), "{e}");
        let e = <Json<crate::types::Tip>>::decode(b"{\"height\": 1}").unwrap_err();
        assert!(e.contains("missing field `hash`"), "{e}");
        let e = <Json<crate::types::Tip>>::decode(b"<html>").unwrap_err();
        assert!(e.contains("expected value"), "{e}");
        let tip = format!("{{\"height\": 1, \"hash\": \"{}\"}} x", "00".repeat(32));
        assert!(<Json<crate::types::Tip>>::decode(tip.as_bytes()).is_err(), "trailing bytes");
    }
}
