//! How a command reaches a node: the options naming the node and the token for its writes
//! ([`NodeOpts`], [`TokenOpts`]), the client they give, which chain the node runs
//! ([`ChainInfo`], recognised from `/status`'s chain id among the devnet parameter sets), and
//! what can go wrong on the way ([`NodeError`]), with the message and exit code the command
//! line gives it.
//!
//! `wallet`, `shell`, `profile` and `vote` talk to one node: each flattens [`NodeOpts`] into its
//! arguments. `bench` talks to several (`--api` repeated) and flattens [`TokenOpts`] alone.
//!
//! The flags, the same in every command:
//! - `--api URL`: `http(s)://HOST:PORT` or `HOST:PORT`; by default the environment variable
//!   `SCALECHAIN_API` ([`API_ENV`]: `devnet` prints the line that sets it), else the node's
//!   default API address (`api.listen` of the node's configuration, `http://127.0.0.1:8645`);
//! - `--token T` (also `--api-token T`, hidden: `vote`'s spelling before the options were
//!   shared), or `--token-file FILE` (its first line; a node listening beyond loopback keeps
//!   its token in `DATA_DIR/api_token`); the two conflict. The token goes with writes only.
//!
//! `vote cast` has its own `--token` (the voter's registration token), so there the node's
//! token is spelt `--api-token` only ([`TOKEN_ARG`] names the argument to respell).
//!
//! Exit codes ([`NodeError::code`]): 2 when the options are unusable or the node cannot be
//! reached, 1 when it answered with an error or something the API does not document, or its
//! chain is not one this program knows, or not the one `--hash` says.
//!
//! This module must not print, and knows no command's own failures: those stay with the
//! command, which wraps a [`NodeError`] (the wallet's `WalletError::Node`) or turns it into a
//! [`Fail`].

use std::path::PathBuf;

use clap::Args;

use scalechain_client::types::Status;
use scalechain_client::{blocking, ClientBuilder, ClientError};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::Params;
use scalechain_node::NodeConfig;
use scalechain_types::{Hash, HashKind};

use crate::Fail;

/// The environment variable that gives `--api` when the flag is not.
pub const API_ENV: &str = "SCALECHAIN_API";

/// The blocking client of a node's API.
pub(crate) type Api = blocking::Client;

/// The id of [`TokenOpts::token`]'s argument (its field's name), for a command that spells the
/// flag otherwise (`vote cast`, whose `--token` is the voter's).
pub(crate) const TOKEN_ARG: &str = "token";

/// Which node to talk to, and the token for its writes.
#[derive(Args, Clone, Debug, Default)]
pub struct NodeOpts {
    /// The node's API, e.g. http://127.0.0.1:8645 (default: the environment variable
    /// SCALECHAIN_API, else the node's default API address; `devnet` prints its nodes').
    #[arg(long, global = true, env = API_ENV)]
    pub api: Option<String>,
    /// The token.
    #[command(flatten)]
    pub token: TokenOpts,
}

/// The bearer token sent with write requests.
#[derive(Args, Clone, Debug, Default)]
pub struct TokenOpts {
    /// Bearer token for write endpoints.
    #[arg(long, global = true, conflicts_with = "token_file", alias = "api-token")]
    pub token: Option<String>,
    /// Read the bearer token from the first line of this file (e.g. DATA_DIR/api_token).
    #[arg(long, global = true)]
    pub token_file: Option<PathBuf>,
}

impl TokenOpts {
    /// The client settings of the node at `base` with this token (`--token`, else
    /// `--token-file`, else none).
    pub fn builder(&self, base: impl Into<String>) -> ClientBuilder {
        let b = ClientBuilder::new(base);
        match (&self.token, &self.token_file) {
            (Some(t), _) => b.token(t.clone()),
            (None, Some(p)) => b.token_file(p.clone()),
            (None, None) => b,
        }
    }
}

/// The default API URL: the node's default listen address.
pub(crate) fn default_api() -> String {
    format!("http://{}", NodeConfig::default().api.listen)
}

impl NodeOpts {
    /// The client settings these options give (`--api`, or the node's default address; the
    /// token of `--token` or `--token-file`).
    pub fn builder(&self) -> ClientBuilder {
        self.token.builder(self.api.clone().unwrap_or_else(default_api))
    }

    /// A blocking client of the node; an unusable URL or token is [`NodeError::Option`]
    /// naming `--api` or `--token`.
    pub fn client(&self) -> Result<Api, NodeError> {
        self.client_naming("--token")
    }

    /// [`NodeOpts::client`] for a command that spells the token's flag `token_flag`.
    pub fn client_naming(&self, token_flag: &'static str) -> Result<Api, NodeError> {
        self.builder().build_blocking().map_err(|e| match e {
            ClientError::BadUrl { .. } => NodeError::Option { flag: "--api", source: e },
            ClientError::BadToken(_) => NodeError::Option { flag: token_flag, source: e },
            other => other.into(),
        })
    }
}

/// Why reaching a node, or learning its chain, failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// `--api`, `--token` or `--token-file` is unusable.
    #[error("{flag}: {source}")]
    Option {
        /// Which option.
        flag: &'static str,
        /// Why.
        source: ClientError,
    },
    /// Talking to the node failed, or it answered with an error (its code and message).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The node's chain is not one of the known parameter sets.
    #[error(
        "the node's chain {0} is not a devnet this program knows (no devnet hash function and \
         signature schemes give this chain id)"
    )]
    UnknownChain(Hash),
    /// `--hash` disagrees with the node.
    #[error("--hash {given} but the node's chain uses {node}")]
    HashMismatch {
        /// Given.
        given: HashKind,
        /// The node's.
        node: HashKind,
    },
}

impl NodeError {
    /// The exit code: 1 when the node answered (an error, an answer the API does not document,
    /// a chain not known or not the one asked for), 2 for unusable options and a node that
    /// cannot be reached.
    pub fn code(&self) -> u8 {
        match self {
            NodeError::Option { .. } => 2,
            NodeError::Client(e) if e.is_connection() => 2,
            NodeError::Client(_) | NodeError::UnknownChain(_) | NodeError::HashMismatch { .. } => 1,
        }
    }
}

impl From<NodeError> for Fail {
    fn from(e: NodeError) -> Fail {
        Fail(e.code(), e.to_string())
    }
}

/// The devnet parameter set whose genesis hash is `chain_id`, and its signature mode.
pub(crate) fn identify(chain_id: &Hash) -> Option<(Params, SigMode)> {
    for hash in HashKind::ALL {
        for sig in [SigMode::Ed25519, SigMode::Secp256k1, SigMode::Mixed] {
            let p = Params::devnet(hash, sig);
            if p.chain_id() == *chain_id {
                return Some((p, sig));
            }
        }
    }
    None
}

/// Refuses `given` (a command's `--hash`) when it is not `node`, the node chain's.
pub(crate) fn check_hash(given: Option<HashKind>, node: HashKind) -> Result<(), NodeError> {
    match given {
        Some(given) if given != node => Err(NodeError::HashMismatch { given, node }),
        _ => Ok(()),
    }
}

/// The node's chain: its parameters (recognised from the chain id) and tip height.
pub(crate) struct ChainInfo {
    /// The parameters.
    pub params: Params,
    /// The signature mode of the devnet parameter set (which premine keys it has).
    pub sig: SigMode,
    /// The chain id.
    pub chain_id: Hash,
    /// The tip height.
    pub height: u64,
}

impl ChainInfo {
    /// The chain a node's `/status` describes.
    pub fn of(s: &Status) -> Result<ChainInfo, NodeError> {
        let (params, sig) = identify(&s.chain_id).ok_or(NodeError::UnknownChain(s.chain_id))?;
        Ok(ChainInfo { params, sig, chain_id: s.chain_id, height: s.height })
    }
}

/// Asks the node for its chain.
pub(crate) fn chain_info(api: &Api) -> Result<ChainInfo, NodeError> {
    ChainInfo::of(&api.status()?)
}

/// Asks the node for its chain, refused when `hash` (a command's `--hash`) is another.
pub(crate) fn node_chain(api: &Api, hash: Option<HashKind>) -> Result<ChainInfo, NodeError> {
    let c = chain_info(api)?;
    check_hash(hash, c.params.hash)?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct One {
        #[command(flatten)]
        node: NodeOpts,
    }

    fn one(args: &[&str]) -> Result<One, clap::Error> {
        One::try_parse_from(std::iter::once("one").chain(args.iter().copied()))
    }

    #[test]
    fn every_command_line_builds_with_each_flag_spelt_once() {
        crate::Cli::command().debug_assert();
    }

    #[test]
    fn the_token_is_given_by_value_by_file_or_by_its_hidden_old_spelling() {
        let o = one(&["--api", "http://10.0.0.1:8645", "--token", "t1"]).unwrap().node;
        assert_eq!((o.api.as_deref(), o.token.token.as_deref()), (Some("http://10.0.0.1:8645"), Some("t1")));
        let o = one(&["--api-token", "t2"]).unwrap().node;
        assert_eq!(o.token.token.as_deref(), Some("t2"), "--api-token is --token");
        assert_eq!(o.builder().build().unwrap().base(), default_api(), "no --api: the default address");
        let o = one(&["--token-file", "tok"]).unwrap().node;
        assert_eq!(o.token.token_file, Some(PathBuf::from("tok")));
        for clash in [["--token", "a"], ["--api-token", "a"]] {
            let args = [clash[0], clash[1], "--token-file", "tok"];
            assert_eq!(one(&args).unwrap_err().kind(), clap::error::ErrorKind::ArgumentConflict);
        }
        let help = One::command().render_long_help().to_string();
        assert!(help.contains("--token <TOKEN>") && !help.contains("api-token"), "{help}");
    }

    #[test]
    fn unusable_options_are_named_and_exit_2() {
        let bad_url = NodeOpts { api: Some("ftp://x".into()), ..NodeOpts::default() };
        let e = bad_url.client().unwrap_err();
        assert!(e.to_string().starts_with("--api: "), "{e}");
        assert_eq!(e.code(), 2);
        let empty = TokenOpts { token: Some(" ".into()), token_file: None };
        let bad_token = NodeOpts { api: None, token: empty };
        assert!(bad_token.client().unwrap_err().to_string().starts_with("--token: API token: "));
        let e = bad_token.client_naming("--api-token").unwrap_err();
        assert!(e.to_string().starts_with("--api-token: API token: "), "{e}");
    }

    #[test]
    fn no_node_at_the_address_exits_2_and_says_what_to_pass() {
        use scalechain_client::ops::Method;
        let not_a_node = ClientError::NotANode {
            method: Method::Get,
            url: "http://127.0.0.1:8000/status".into(),
            status: 404,
            media: "text/html".into(),
        };
        let e = NodeError::from(not_a_node);
        assert_eq!(e.code(), 2);
        assert!(e.to_string().starts_with("not a ScaleChain node at http://127.0.0.1:8000/status"), "{e}");
        let unreachable = ClientError::Unreachable {
            method: Method::Get,
            url: "http://127.0.0.1:1/status".into(),
            detail: "Connection refused (os error 111)".into(),
        };
        let e = NodeError::from(unreachable);
        assert_eq!(e.code(), 2);
        assert!(e.to_string().contains("is a node running there? pass --api URL"), "{e}");
        let bad = NodeOpts { api: Some("http//bad url".into()), ..NodeOpts::default() };
        let e = bad.client().unwrap_err();
        assert!(e.to_string().starts_with("--api: \"http//bad url\" is not a node API URL"), "{e}");
        assert_eq!(e.code(), 2);
    }

    #[test]
    fn devnet_chains_are_recognised_and_another_hash_refused_naming_both() {
        let p = Params::devnet(HashKind::Blake3, SigMode::Mixed);
        let (found, sig) = identify(&p.chain_id()).unwrap();
        assert_eq!((found.hash, sig), (HashKind::Blake3, SigMode::Mixed));
        assert!(identify(&Hash([7; 32])).is_none());
        assert!(check_hash(None, HashKind::Blake3).is_ok());
        assert!(check_hash(Some(HashKind::Blake3), HashKind::Blake3).is_ok());
        let e = check_hash(Some(HashKind::Sha256), HashKind::Blake3).unwrap_err();
        assert_eq!(e.to_string(), "--hash sha256 but the node's chain uses blake3");
        assert_eq!(e.code(), 1);
        assert_eq!(NodeError::UnknownChain(Hash([7; 32])).code(), 1);
    }
}
