//! What can go wrong talking to a node, each case with what was asked and where.

use std::path::PathBuf;
use std::time::Duration;

use crate::ops::Method;

/// Why a client call (or building a client) failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The base URL is not an http(s) URL with a host.
    #[error("{input:?} is not a node API URL: {reason}")]
    BadUrl {
        /// The text given.
        input: String,
        /// Why it is not usable.
        reason: String,
    },
    /// The bearer token given is unusable.
    #[error("API token: {0}")]
    BadToken(String),
    /// The token file could not be read.
    #[error("API token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The HTTP client or its runtime could not be set up.
    #[error("setting up the HTTP client: {0}")]
    Setup(String),
    /// Nothing answered (connection refused, reset, DNS, ...); `detail` is the innermost cause.
    #[error(
        "the node's API at {url} is unreachable ({detail}): is a node running there? pass --api URL \
         with a node's API address (`scalechain devnet` prints its nodes')"
    )]
    Unreachable {
        /// The method.
        method: Method,
        /// The URL requested.
        url: String,
        /// The error chain.
        detail: String,
    },
    /// No (complete) answer within the time-out.
    #[error("{method} {url}: no answer within {after:?}")]
    Timeout {
        /// The method.
        method: Method,
        /// The URL requested.
        url: String,
        /// The time-out that passed (the connect or the request one).
        after: Duration,
    },
    /// The node answered with an error status; `code` and `message` are its JSON error's (or,
    /// if the body was not one, `code` is empty and `message` is the start of the body).
    #[error("{method} {url}: HTTP {status} {code}: {message}{}", hint(*.status))]
    Api {
        /// The method.
        method: Method,
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The API's error code (`bad-request`, `not-found`, `unauthorized`, ...).
        code: String,
        /// The API's message.
        message: String,
    },
    /// What answered is not a node's API: an error status without the API's JSON error, or a
    /// body of another media type where the API answers JSON. Nothing of the body is repeated.
    #[error(
        "not a ScaleChain node at {url}: HTTP {status} with {media}, where a node's API answers \
         JSON (pass --api with a node's API address)"
    )]
    NotANode {
        /// The method.
        method: Method,
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What the body was: its media type, or "no media type".
        media: String,
    },
    /// The answer is not what the API documents.
    #[error("{url}: unexpected answer from the node: {detail}")]
    BadResponse {
        /// The method.
        method: Method,
        /// The URL requested.
        url: String,
        /// What did not parse, and where.
        detail: String,
    },
}

fn hint(status: u16) -> &'static str {
    if status == 401 {
        " (pass --token or --token-file; the node keeps its token in DATA_DIR/api_token)"
    } else {
        ""
    }
}

impl ClientError {
    /// The HTTP status of an error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Did the node answer 404?
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Is this about reaching the node (unreachable, timed out, something else answered) or
    /// setting up the client, rather than about what the node answered?
    pub fn is_connection(&self) -> bool {
        matches!(
            self,
            ClientError::Unreachable { .. }
                | ClientError::NotANode { .. }
                | ClientError::Timeout { .. }
                | ClientError::BadUrl { .. }
                | ClientError::BadToken(_)
                | ClientError::TokenFile { .. }
                | ClientError::Setup(_)
        )
    }
}

/// The innermost cause of `e` (e.g. "Connection refused (os error 111)").
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur = e;
    while let Some(c) = cur.source() {
        cur = c;
    }
    cur.to_string()
}

/// `e`'s message followed by its sources' (skipping repeats).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}
