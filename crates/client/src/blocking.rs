//! The blocking client: the async [`crate::Client`] driven by a current-thread runtime the
//! blocking client owns, so both faces share one implementation. For synchronous code (the
//! wallet, the shell, the vote commands, tests); never call it from inside an async task.

use scalechain_types::{Hash, Tx};
use tokio::runtime::Runtime;

use crate::error::ClientError;
use crate::types::{
    AppEntries, AppEntry, AppRange, ArrivalsJson, BlockId, BlockJson, BlockTxids, MempoolJson, Owner,
    PeerInfo, ProfileControl, ProfileJson, ProfileStatus, Status, SubmitResult, Tip, TxStatus, UtxoJson,
};

/// A blocking client of one node's API.
pub struct Client {
    rt: Runtime,
    inner: crate::Client,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Client").field("base", &self.inner.base()).finish()
    }
}

impl Client {
    /// A client of the node at `base` with the default time-outs and no token.
    pub fn new(base: &str) -> Result<Client, ClientError> {
        crate::ClientBuilder::new(base).build_blocking()
    }

    /// Wraps an async client (whose connections will live on this client's runtime).
    pub fn from_async(inner: crate::Client) -> Result<Client, ClientError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Setup(format!("starting the HTTP runtime: {e}")))?;
        Ok(Client { rt, inner })
    }

    /// The base URL (`http://host:port`).
    pub fn base(&self) -> &str {
        self.inner.base()
    }
}

macro_rules! blocking {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {
        impl Client {
            $($(#[$doc])*
            pub fn $name(&self, $($arg: $ty),*) -> Result<$out, ClientError> {
                self.rt.block_on(self.inner.$name($($arg),*))
            })*
        }
    };
}

blocking! {
    /// `GET /status`.
    fn status() -> Status;
    /// `GET /tip`.
    fn tip() -> Tip;
    /// `GET /peers`.
    fn peers() -> Vec<PeerInfo>;
    /// `GET /blocks/{id}`.
    fn block(id: BlockId) -> BlockJson;
    /// `GET /blocks/{id}/txids`.
    fn block_txids(id: BlockId) -> BlockTxids;
    /// `GET /txs/{txid}`.
    fn tx(txid: &Hash) -> TxStatus;
    /// `POST /txs` as one binary transaction batch (one checked verdict per transaction).
    fn submit(txs: &[Tx]) -> SubmitResult;
    /// `POST /txs` with the JSON body (one checked verdict per transaction).
    fn submit_json(txs: &[Tx]) -> SubmitResult;
    /// `GET /utxos/{owner}?limit=N`.
    fn utxos(owner: &Owner, limit: Option<usize>) -> Vec<UtxoJson>;
    /// `GET /mempool?limit=N`.
    fn mempool(limit: Option<usize>) -> MempoolJson;
    /// `GET /metrics`.
    fn metrics() -> String;
    /// `GET /arrivals?after=&limit=`.
    fn arrivals(after: u64, limit: Option<usize>) -> ArrivalsJson;
    /// `GET /profile?after=&limit=`.
    fn profile(after: Option<&str>, limit: Option<usize>) -> ProfileJson;
    /// `POST /profile`.
    fn profile_control(control: &ProfileControl) -> ProfileStatus;
    /// `GET /openapi.json`.
    fn openapi() -> serde_json::Value;
    /// `GET /apps/{kind}/state/{key}`.
    fn app_value(kind: u8, key: &[u8]) -> AppEntry;
    /// `GET /apps/{kind}/state?prefix=&after=&limit=`.
    fn app_range(kind: u8, range: &AppRange) -> AppEntries;
}
