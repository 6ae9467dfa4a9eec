//! `scalechain node`: runs a node until SIGINT/SIGTERM.

use std::path::PathBuf;

use clap::Args;

use scalechain_consensus::Apps;
use scalechain_node::{NodeConfig, Pages};

use crate::Fail;

/// Arguments of `scalechain node` (each overrides the config file).
#[derive(Args)]
pub struct NodeArgs {
    /// bootstrap, peer or miner.
    #[arg(long)]
    role: Option<String>,
    /// Data directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// P2P listen multiaddr (repeatable; default /ip4/127.0.0.1/tcp/0).
    #[arg(long)]
    listen: Vec<String>,
    /// Multiaddr of a node to join through, ending in /p2p/<peer id> (repeatable).
    #[arg(long)]
    bootstrap: Vec<String>,
    /// API address (127.0.0.1:PORT; port 0 picks one; `off` disables).
    #[arg(long)]
    api: Option<String>,
    /// TOML configuration file (see --print-config).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Mining threads (role miner).
    #[arg(long)]
    miner_threads: Option<usize>,
    /// Rebuild the chain state from the stored blocks before starting.
    #[arg(long)]
    reindex: bool,
    /// Print the configuration in effect (the defaults, the file's settings and these flags)
    /// as TOML and exit.
    #[arg(long)]
    print_config: bool,
    /// Log lines as `text` (coloured only on a terminal) or `json` (one object per line).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
}

/// How the node writes its log (to standard error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines; ANSI colours only when standard error is a terminal.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`).
    Json,
}

/// The node's application modules: the voting application.
pub fn apps() -> Apps {
    let mut apps = Apps::none();
    apps.register(std::sync::Arc::new(scalechain_voting::app::VotingModule));
    apps
}

/// The pages served beside the node's API: the web explorer, and the election pages of the
/// voting module [`apps`] registers.
pub fn pages() -> Pages {
    Pages::none().with(scalechain_explorer::router).with(scalechain_explorer::election::router)
}

/// Builds the configuration from the file and the flags.
pub fn config(a: &NodeArgs) -> Result<NodeConfig, Fail> {
    let mut cfg = match &a.config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| Fail(2, format!("reading {}: {e}", p.display())))?;
            NodeConfig::from_toml(&text).map_err(|e| Fail(2, format!("{}: {e}", p.display())))?
        }
        None => NodeConfig::default(),
    };
    if let Some(r) = &a.role {
        cfg.role = r.parse().map_err(|e| Fail(2, e))?;
    }
    if let Some(d) = &a.data_dir {
        cfg.data_dir = d.clone();
    }
    if !a.listen.is_empty() {
        cfg.p2p.listen = a.listen.clone();
    }
    if !a.bootstrap.is_empty() {
        cfg.p2p.bootstrap = a.bootstrap.clone();
    }
    if let Some(api) = &a.api {
        cfg.api.listen = api.clone();
    }
    if let Some(t) = a.miner_threads {
        cfg.miner.threads = t;
    }
    Ok(cfg)
}

/// Runs `scalechain node`.
pub fn node(a: NodeArgs) -> Result<(), Fail> {
    let cfg = config(&a)?;
    if a.print_config {
        print!("{}", cfg.to_toml());
        return Ok(());
    }
    init_logs(a.log_format);
    let rt = tokio::runtime::Runtime::new().map_err(|e| Fail(2, format!("starting the runtime: {e}")))?;
    rt.block_on(scalechain_node::run(cfg, apps(), pages(), a.reindex, std::future::pending()))
        .map_err(|e| Fail(2, e.to_string()))
}

/// The log filter: `SCALECHAIN_LOG`, else `RUST_LOG`, else `info,libp2p=warn` (the syntax of
/// `tracing_subscriber::EnvFilter`: `debug`, `info,scalechain_p2p=debug`, …).
fn init_logs(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SCALECHAIN_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,libp2p=warn"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => logs.json().try_init(),
    };
}
