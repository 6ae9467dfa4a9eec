//! The client side of a ScaleChain node.
//!
//! - [`types`]: every request and response body of the node's HTTP API, defined once — the
//!   node's handlers build them and its OpenAPI document describes them, so the server, the
//!   document and every client agree by construction;
//! - [`ops`]: the API's operations (method, path, request, response) as values, used by the
//!   node's router and this client, and listed for the test that compares them with the
//!   OpenAPI document;
//! - [`Client`] (async) and [`blocking::Client`] (the same methods, through a runtime it owns),
//!   returning typed answers or a [`ClientError`] that says what was asked, where, and what went
//!   wrong (the node's JSON error with its `code` and `message`, unreachable, time-out, an answer
//!   that does not parse, a bad URL).

pub mod blocking;
mod client;
mod decode;
mod error;
pub mod ops;
pub mod types;

pub use client::{parse_base, Client, ClientBuilder, CONNECT_TIMEOUT, REQUEST_TIMEOUT};
pub use error::ClientError;
pub use types::NodeInfo;
