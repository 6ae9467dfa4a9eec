//! Starting and running a node. Start-up prepares what nothing runs on yet: the data
//! directory, the chain (rebuilt first on `--reindex`), the identity key and the API's token.
//! The wiring then starts the network, the pipeline, the block worker, the miner and the API
//! (with the pages its caller gave beside it), and runs the reactor until a shutdown signal.
//!
//! The reactor is the IO half of the peer protocol (`scalechain_p2p::protocol`): it turns
//! network events, block-worker outcomes, pipeline verdicts and a 250 ms tick into the
//! machine's inputs, steps it with the node's clock, and carries out its outputs — network
//! commands, block-worker jobs, pipeline submissions (awaiting the bounded pipeline channel is
//! the back-pressure), blocks served off the event loop, metrics and the `/peers` map.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use scalechain_chain::{Chain, ChainError, DiskStore, OpenOptions};
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_p2p::msg::ProtocolNames;
use scalechain_p2p::net::{self, Command, Multiaddr, NetConfig, NetEvent, NetLimits, PeerId};
use scalechain_p2p::protocol::{
    block_txs_response, blocks_response, Config as ProtocolConfig, Event, Input, Output, Protocol, TxOrigin,
    TxsDone, BLOCKS_RESPONSE_BYTES,
};
use scalechain_replica::Replica;
use scalechain_types::codec::Encode;
use scalechain_types::{Block, Lock, SecretKey};
use tokio::sync::mpsc;

use crate::api::{self, ApiState};
use crate::blocks::{self, BlockJob, Outcome};
use crate::config::NodeConfig;
use crate::known::KnownPeers;
use crate::metrics::Metrics;
use crate::miner;
use crate::pipeline::{self, Source};
use crate::serve::{self, ServeLimits};
use crate::state::{now_ms, PeerInfo, Shared};
use crate::view::{NodeView, Pages};

/// Errors that stop a node from starting.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A bad setting.
    #[error("configuration: {0}")]
    Config(String),
    /// The study's execution settings (`mempool.execute_ms`, `mempool.execute_under_lock`).
    #[error("configuration: {0}")]
    Execution(#[from] crate::config::ExecutionError),
    /// The chain store.
    #[error("chain: {0}")]
    Chain(#[from] ChainError),
    /// The data directory.
    #[error("{what} {path}: {reason}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
    /// The network.
    #[error("network: {0}")]
    Net(#[from] net::NetError),
}

fn io(what: &'static str, path: &Path, e: impl std::fmt::Display) -> NodeError {
    NodeError::Io { what, path: path.to_path_buf(), reason: e.to_string() }
}

pub use scalechain_client::NodeInfo;

fn random32() -> Result<[u8; 32], NodeError> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| NodeError::Config(format!("no OS randomness: {e}")))?;
    Ok(b)
}

/// Reads the node's identity key from `DATA_DIR/node_key`, creating it on first start.
fn node_key(dir: &Path) -> Result<[u8; 32], NodeError> {
    let path = dir.join("node_key");
    match std::fs::read(&path) {
        Ok(b) => b.try_into().map_err(|_| io("reading", &path, "node_key must hold exactly 32 bytes")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let k = random32()?;
            write_private(&path, &k)?;
            Ok(k)
        }
        Err(e) => Err(io("reading", &path, e)),
    }
}

fn write_private(path: &Path, data: &[u8]) -> Result<(), NodeError> {
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut f = o.open(&tmp).map_err(|e| io("creating", &tmp, e))?;
        f.write_all(data).and_then(|_| f.sync_all()).map_err(|e| io("writing", &tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| io("renaming", path, e))
}

/// The chain parameters a configuration selects: the devnet of its hash function and
/// signature mode, with its target block interval, genesis time and signature flag.
pub fn params_of(cfg: &NodeConfig) -> Params {
    let mut p = Params::devnet(cfg.chain.hash, cfg.chain.sig);
    p.target_block_ms = cfg.chain.target_block_ms;
    p.genesis_time = cfg.chain.genesis_time_ms;
    p.skip_signatures = cfg.chain.skip_signatures;
    p
}

/// Opens the chain in `DATA_DIR/chain`; with `reindex`, first rebuilds the chain state from the
/// stored blocks (re-verifying every block from genesis).
pub fn open_chain(cfg: &NodeConfig, apps: Apps, reindex: bool) -> Result<Chain<DiskStore>, NodeError> {
    let dir = cfg.data_dir.join("chain");
    // A data directory of the old layout (the store directly in it, as `simulate` and `chain
    // import` once wrote it) moves to the one every command uses.
    if DiskStore::relocate(&cfg.data_dir, &dir).map_err(ChainError::from)? {
        tracing::info!("moved the store of {} into {}", cfg.data_dir.display(), dir.display());
    }
    let params = params_of(cfg);
    let verify = VerifyConfig::parallel(random32()?).with_mode(cfg.chain.verify_mode);
    let mem = cfg.store.memory().map_err(NodeError::Config)?;
    let options = OpenOptions { owner_index: cfg.store.owner_index };
    let open_store = || -> Result<DiskStore, ChainError> {
        let mut store = DiskStore::open_with(&dir, mem)?;
        store.set_txindex(cfg.store.tx_index);
        Ok(store)
    };
    if reindex && dir.exists() {
        // Only its blocks are read: no owner index.
        let old = Chain::open_with(open_store()?, apps.clone(), verify, OpenOptions { owner_index: false })?;
        let blocks: Vec<Block> = (1..=old.tip_height())
            .map(|h| {
                old.block_at(h)?.ok_or_else(|| ChainError::Corrupt(format!("main-chain block {h} missing")))
            })
            .collect::<Result<_, _>>()?;
        drop(old);
        let moved = dir.with_extension(format!("old-{}", now_ms()));
        std::fs::rename(&dir, &moved).map_err(|e| io("moving aside", &dir, e))?;
        let mut fresh = Chain::open_or_init_with(open_store()?, &params, apps.clone(), verify, options)?;
        for b in blocks {
            let t = b.header.time;
            fresh.accept_block(b, now_ms().max(t))?;
        }
        tracing::info!("reindexed {} blocks; the old store is at {}", fresh.tip_height(), moved.display());
        std::fs::remove_dir_all(&moved).map_err(|e| io("removing", &moved, e))?;
        return Ok(fresh);
    }
    Ok(Chain::open_or_init_with(open_store()?, &params, apps, verify, options)?)
}

fn reward_lock(cfg: &NodeConfig, params: &Params) -> Result<Lock, NodeError> {
    let seed = match &cfg.miner.reward_key {
        Some(h) => {
            let mut b = [0u8; 32];
            hex::decode_to_slice(h, &mut b)
                .map_err(|_| NodeError::Config("miner.reward_key must be 64 hex digits".into()))?;
            b
        }
        None => random32()?,
    };
    let scheme = params.schemes[0];
    let pk = SecretKey::from_seed(scheme, seed).public();
    Ok(Lock { scheme, pubkey_hash: pk.hash(params.hash) })
}

/// Starts a node and runs it until SIGINT/SIGTERM (or `stop` resolves): [`start_up`], then
/// the wiring — the network, the shared state, the workers, the API (with `pages` beside it
/// when the explorer is served) and the reactor — and at the end the shutdown.
pub async fn run(
    cfg: NodeConfig,
    apps: Apps,
    pages: Pages,
    reindex: bool,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), NodeError> {
    let api_fds = descriptors(&cfg);
    let opened = start_up(&cfg, apps, reindex)?;
    let mut netw = start_network(&cfg, &opened).await?;
    let (known, known_path) = redial_known(&cfg, &netw).await;
    let api = opened.api.clone();
    let shared = share(&cfg, opened, &netw);
    let (w, mut reports) = Workers::start(&shared)?;
    let (api_addr, api_task) = match api {
        None => (None, None),
        Some((addr, _)) => {
            let (bound, task) = serve_api(&shared, &w.pipeline, addr, pages, api_fds).await?;
            (Some(bound), Some(task))
        }
    };
    let mut r = Reactor::new(&shared, known, known_path, &netw, &w, api_addr);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let sigterm = shutdown_signal();
    tokio::pin!(sigterm);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            e = netw.events.recv() => match e {
                Some(e) => r.net_event(e).await,
                None => break,
            },
            Some(o) = reports.done.recv() => r.block_done(o).await,
            Some(v) = reports.verdicts.recv() => r.step(Input::TxsDone(v)).await,
            _ = tick.tick() => r.tick().await,
            _ = &mut sigterm => break,
            _ = &mut stop => break,
        }
    }
    tracing::info!("stopping");
    shared.stopping.store(true, Ordering::Relaxed);
    r.save_known();
    r.save_profile();
    drop(r);
    w.stop().await;
    // The API finishes the requests it is answering (within their time-out) and lets go.
    shared.api_stop.send_replace(true);
    if let Some(t) = api_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
    }
    let _ = std::fs::remove_file(shared.cfg.data_dir.join("node.json"));
    Ok(())
}

/// Raises the open-file limit and budgets it ([`crate::fds`]), saying so in the log; the API
/// connections the budget allows.
fn descriptors(cfg: &NodeConfig) -> usize {
    let limits = crate::fds::raise();
    let p2p = u64::from(cfg.p2p.max_connections)
        .saturating_mul(3)
        .saturating_add(u64::from(NetLimits::default().extra_connections));
    let b = crate::fds::budget(limits.soft, p2p, cfg.api.max_connections);
    let show = |l: Option<u64>| l.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    tracing::info!(
        soft = limits.soft,
        hard = limits.hard,
        api = b.api,
        p2p = b.p2p,
        store = b.store,
        other = b.other,
        "file descriptors: limit {} (was {}, hard limit {}): up to {} API connections, {} peer-to-peer \
         sockets, {} for the store, {} for the rest",
        show(limits.soft),
        show(limits.before),
        show(limits.hard),
        b.api,
        b.p2p,
        b.store,
        b.other
    );
    if b.api < cfg.api.max_connections {
        tracing::warn!(
            "api.max_connections {} does not fit the open-file limit: serving {} at most",
            cfg.api.max_connections,
            b.api
        );
    }
    b.api
}

/// What start-up prepared, before anything runs.
struct Opened {
    /// The chain and an empty mempool.
    replica: Replica<DiskStore>,
    /// The node's identity key.
    key: [u8; 32],
    /// The API's address and its token, if the API is on.
    api: Option<(SocketAddr, Option<Arc<str>>)>,
}

/// Start-up: the study's execution settings checked, the data directory (a `node.json` left
/// behind removed), the chain in it (rebuilt first with `reindex`), the node's identity key
/// (made on first start), the API's address and its token (see [`api_token`]).
fn start_up(cfg: &NodeConfig, apps: Apps, reindex: bool) -> Result<Opened, NodeError> {
    cfg.mempool.execution()?;
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| io("creating", &cfg.data_dir, e))?;
    let _ = std::fs::remove_file(cfg.data_dir.join("node.json"));
    let chain = open_chain(cfg, apps, reindex)?;
    let replica = Replica::new(chain, cfg.mempool.pool_config().map_err(NodeError::Config)?);
    let key = node_key(&cfg.data_dir)?;
    let api = match cfg.api_addr().map_err(NodeError::Config)? {
        None => None,
        Some(addr) => Some((addr, api_token(cfg, &addr)?)),
    };
    Ok(Opened { replica, key, api })
}

/// The API's token on `addr`: `api.token` (refused when empty); none on loopback without it;
/// beyond loopback without it, the one in `DATA_DIR/api_token`, made on first start (a file
/// that cannot be read, or holds no token, gets a new one).
fn api_token(cfg: &NodeConfig, addr: &SocketAddr) -> Result<Option<Arc<str>>, NodeError> {
    Ok(match (&cfg.api.token, addr.ip().is_loopback()) {
        (Some(t), _) if t.trim().is_empty() => {
            return Err(NodeError::Config("api.token is empty: set a token or leave it out".into()))
        }
        (Some(t), _) => Some(Arc::from(t.as_str())),
        (None, true) => None,
        (None, false) => {
            let path = cfg.data_dir.join("api_token");
            let t = match std::fs::read_to_string(&path).map(|t| t.trim().to_string()) {
                Ok(t) if !t.is_empty() => t,
                _ => {
                    let t = hex::encode(random32()?);
                    write_private(&path, t.as_bytes())?;
                    t
                }
            };
            Some(Arc::from(t.as_str()))
        }
    })
}

/// The user agent this node gives its peers.
fn agent() -> String {
    format!("scalechain/{}", env!("CARGO_PKG_VERSION"))
}

/// Starts the peer-to-peer network with the node's key, on the chain's protocol names.
async fn start_network(cfg: &NodeConfig, opened: &Opened) -> Result<net::Net, NodeError> {
    let parse_addrs = |v: &[String], what: &str| -> Result<Vec<Multiaddr>, NodeError> {
        v.iter().map(|a| a.parse().map_err(|e| NodeError::Config(format!("{what} {a:?}: {e}")))).collect()
    };
    let net_cfg = NetConfig {
        listen: parse_addrs(&cfg.p2p.listen, "p2p.listen")?,
        bootstrap: parse_addrs(&cfg.p2p.bootstrap, "p2p.bootstrap")?,
        names: ProtocolNames::for_chain(&opened.replica.chain_id),
        key_seed: opened.key,
        max_message_bytes: cfg.p2p.max_message_bytes,
        max_connections: cfg.p2p.max_connections,
        event_buffer: 1024,
        agent: agent(),
        gossip: cfg.role != scalechain_p2p::msg::Role::Bootstrap,
        discover: cfg.p2p.discover,
    };
    let limits = NetLimits {
        handshake_timeout: Duration::from_secs(cfg.p2p.handshake_timeout_s.max(1)),
        max_pending_per_ip: cfg.p2p.max_pending_per_ip.max(1),
        max_inbound_per_ip: cfg.p2p.max_connections_per_ip.max(1),
        ..NetLimits::default()
    };
    Ok(net::start_with(net_cfg, limits).await?)
}

/// The peer book a previous run left (`DATA_DIR/peers.json`) and where it lives; its peers are
/// dialled again (the bootstrap nodes are dialled besides).
async fn redial_known(cfg: &NodeConfig, netw: &net::Net) -> (KnownPeers, PathBuf) {
    let known_path = cfg.data_dir.join("peers.json");
    let known = KnownPeers::load(&known_path).unwrap_or_else(|e| {
        tracing::warn!("{e}; starting with an empty peer book");
        KnownPeers::new()
    });
    if cfg.p2p.discover {
        for addr in known.to_dial(now_ms(), DIAL_KNOWN) {
            let _ = netw.commands.send(Command::Dial(addr)).await;
        }
    }
    (known, known_path)
}

/// The state the node's tasks share, the profiler set as configured.
fn share(cfg: &NodeConfig, opened: Opened, netw: &net::Net) -> Arc<Shared> {
    let (tip_tx, _) = tokio::sync::watch::channel(opened.replica.tip());
    let (api_stop, _) = tokio::sync::watch::channel(false);
    let profile = crate::profile::Persisted::open(&cfg.data_dir);
    scalechain_types::profile::set_enabled(cfg.profile.enabled);
    let storage = crate::storage::Storage::new(&cfg.data_dir, cfg.store.min_free_bytes);
    storage.check_space();
    Arc::new(Shared {
        cfg: cfg.clone(),
        replica: opened.replica,
        metrics: Metrics::default(),
        profile,
        arrivals: crate::arrivals::Arrivals::new(cfg.arrivals.capacity),
        net_stats: RwLock::new(Some(netw.stats.clone())),
        peers: RwLock::new(Default::default()),
        peer_id: netw.peer_id,
        listen: RwLock::new(Vec::new()),
        started: Instant::now(),
        stopping: false.into(),
        tip_changed: tip_tx,
        api_token: opened.api.and_then(|(_, t)| t),
        api_stop,
        clock: RwLock::new(None),
        storage,
    })
}

/// The node's stages and workers — the transaction pipeline (a task), the block worker and the
/// miner (threads) — and the channels the reactor reaches them by.
struct Workers {
    /// The pipeline's receive side.
    pipeline: mpsc::Sender<pipeline::Inbound>,
    /// The block worker's jobs.
    blocks: mpsc::Sender<BlockJob>,
    /// The miner thread (role `miner` only).
    miner: Option<std::thread::JoinHandle<()>>,
}

/// What the workers report to the reactor (kept open until the node has stopped: the pipeline
/// still admits what the API submits while the API finishes).
struct Reports {
    /// The pipeline's verdicts, to relay.
    verdicts: mpsc::UnboundedReceiver<Vec<TxsDone<PeerId>>>,
    /// The block worker's outcomes (the miner's blocks' too).
    done: mpsc::UnboundedReceiver<Outcome>,
}

impl Workers {
    /// Starts the pipeline, the block worker and, for a miner, the miner.
    fn start(shared: &Arc<Shared>) -> Result<(Workers, Reports), NodeError> {
        let cfg = &shared.cfg;
        let (pipe_tx, pipe_rx) = mpsc::channel(cfg.mempool.buffer.max(1));
        let (verdict_tx, verdict_rx) = mpsc::unbounded_channel::<Vec<TxsDone<PeerId>>>();
        tokio::spawn(pipeline::run(shared.clone(), pipe_rx, verdict_tx));
        let (block_tx, block_rx) = mpsc::channel::<BlockJob>(256);
        let (done_tx, done_rx) = mpsc::unbounded_channel::<Outcome>();
        {
            let s = shared.clone();
            let d = done_tx.clone();
            std::thread::Builder::new()
                .name("blocks".into())
                .spawn(move || blocks::run(s, block_rx, d))
                .map_err(|e| NodeError::Config(format!("starting the block worker: {e}")))?;
        }
        let mut miner = None;
        if cfg.role == scalechain_p2p::msg::Role::Miner {
            let reward = reward_lock(cfg, &params_of(cfg))?;
            let (s, j, d) = (shared.clone(), block_tx.clone(), done_tx.clone());
            miner = Some(
                std::thread::Builder::new()
                    .name("miner".into())
                    .spawn(move || miner::run(s, reward, j, d))
                    .map_err(|e| NodeError::Config(format!("starting the miner: {e}")))?,
            );
        }
        let workers = Workers { pipeline: pipe_tx, blocks: block_tx, miner };
        Ok((workers, Reports { verdicts: verdict_rx, done: done_rx }))
    }

    /// Lets the pipeline and the block worker go (their channels closed) and waits for the
    /// miner thread.
    async fn stop(self) {
        let Workers { pipeline, blocks, miner } = self;
        drop(blocks);
        drop(pipeline);
        if let Some(m) = miner {
            let _ = tokio::task::spawn_blocking(move || m.join()).await;
        }
    }
}

/// Serves the API on `addr`, with `pages` beside it when the explorer is served there
/// (`explorer.enabled`): the address bound and the serving task.
async fn serve_api(
    shared: &Arc<Shared>,
    pipeline: &mpsc::Sender<pipeline::Inbound>,
    addr: SocketAddr,
    pages: Pages,
    max_connections: usize,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), NodeError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| NodeError::Config(format!("api.listen {addr}: {e}")))?;
    let bound = listener.local_addr().map_err(|e| NodeError::Config(e.to_string()))?;
    let pages = if shared.cfg.explorer.serves(&bound) {
        pages.build(shared.clone() as Arc<dyn NodeView>)
    } else {
        None
    };
    let app = api::router(ApiState { shared: shared.clone(), pipeline: pipeline.clone() }, pages);
    let a = &shared.cfg.api;
    let limits = ServeLimits {
        header_timeout: Duration::from_secs(a.header_timeout_s.max(1)),
        body_timeout: Duration::from_secs(a.body_timeout_s.max(1)),
        request_timeout: Duration::from_secs(a.request_timeout_s.max(1)),
        max_connections,
        max_body_bytes: a.max_body_bytes,
    };
    let task = tokio::spawn(serve::serve(listener, app, limits, shared.clone(), shared.api_stop.subscribe()));
    Ok((bound, task))
}

/// Resolves at the first SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Peers of the book dialled at start (the most recently seen).
const DIAL_KNOWN: usize = 16;
/// Least time between two writes of the peer book.
const SAVE_KNOWN_EVERY: Duration = Duration::from_secs(10);

/// The IO half of the peer protocol.
struct Reactor {
    shared: Arc<Shared>,
    protocol: Protocol<PeerId>,
    /// The persisted peer book and where it lives.
    known: KnownPeers,
    known_path: PathBuf,
    known_saved: Instant,
    /// When the profile was last written.
    profile_saved: Instant,
    net: mpsc::Sender<Command>,
    pipeline: mpsc::Sender<pipeline::Inbound>,
    blocks: mpsc::Sender<BlockJob>,
    api_addr: Option<SocketAddr>,
    info_written: bool,
    /// The last ping round trip per connected peer, µs (a ping can come back before the
    /// protocol machine reports the connection).
    rtts: HashMap<PeerId, u64>,
    /// Dialling again when links break.
    redial: crate::redial::Redial,
}

impl Reactor {
    /// The reactor of `shared`'s node: the peer protocol configured from its settings, the
    /// scores and bans of the peer book restored.
    fn new(
        shared: &Arc<Shared>,
        known: KnownPeers,
        known_path: PathBuf,
        netw: &net::Net,
        w: &Workers,
        api_addr: Option<SocketAddr>,
    ) -> Reactor {
        let cfg = &shared.cfg;
        let mut protocol = ProtocolConfig::new(cfg.role, agent());
        protocol.requests_per_s = cfg.p2p.requests_per_s;
        protocol.max_message_bytes = cfg.p2p.max_message_bytes;
        protocol.max_txs_per_message = cfg.p2p.max_txs_per_message;
        protocol.pool_sync.max_txs = cfg.p2p.mempool_sync_txs;
        protocol.pool_sync.max_bytes = cfg.p2p.mempool_sync_bytes;
        protocol.max_peers = cfg.p2p.max_connections as usize;
        protocol.hello_timeout_ms = cfg.p2p.handshake_timeout_s.max(1).saturating_mul(1000);
        protocol.max_clock_offset_ms = shared.replica.params.max_future_drift_ms;
        protocol.status_every_ms = scalechain_p2p::protocol::STATUS_EVERY_MS;
        let mut protocol = Protocol::new(protocol);
        let now = shared.now_ms();
        for (peer, k) in known.iter() {
            protocol.restore_peer(peer, k.score, k.banned_until_ms, now);
        }
        Reactor {
            shared: shared.clone(),
            protocol,
            known,
            known_path,
            known_saved: Instant::now(),
            profile_saved: Instant::now(),
            net: netw.commands.clone(),
            pipeline: w.pipeline.clone(),
            blocks: w.blocks.clone(),
            api_addr,
            info_written: false,
            rtts: HashMap::new(),
            redial: crate::redial::Redial::new(
                &cfg.p2p.bootstrap.iter().filter_map(|a| a.parse().ok()).collect::<Vec<_>>(),
                cfg.p2p.discover,
            ),
        }
    }

    async fn send(&self, c: Command) {
        let _ = self.net.send(c).await;
    }

    fn write_info(&mut self) {
        let listen = self.shared.listen.read().clone();
        if self.info_written || listen.is_empty() {
            return;
        }
        let info = NodeInfo {
            peer_id: self.shared.peer_id.to_string(),
            p2p: listen.iter().map(|a| a.to_string()).collect(),
            api: self.api_addr.map(|a| a.to_string()),
            role: self.shared.role().name().into(),
            pid: std::process::id(),
        };
        let path = self.shared.cfg.data_dir.join("node.json");
        if let Ok(text) = serde_json::to_string_pretty(&info) {
            if write_private(&path, text.as_bytes()).is_ok() {
                self.info_written = true;
            }
        }
    }

    async fn net_event(&mut self, e: NetEvent) {
        let input = match e {
            NetEvent::Listening(a) => {
                tracing::info!("listening on {a}");
                self.shared.listen.write().push(a);
                self.write_info();
                return;
            }
            NetEvent::Connected { peer, addr, inbound } => {
                // An address this node dialled is one the peer listens on: in the book at
                // once, before (or without) the peer's identify message.
                if !inbound {
                    self.known.listens(peer, std::slice::from_ref(&addr), now_ms());
                }
                self.redial.connected(peer);
                Input::Connected { peer, addr: addr.to_string(), inbound }
            }
            NetEvent::Identified { peer, listen } => {
                self.known.listens(peer, &listen, now_ms());
                return;
            }
            NetEvent::Rtt { peer, rtt } => {
                let us = u64::try_from(rtt.as_micros()).unwrap_or(u64::MAX);
                self.rtts.insert(peer, us);
                if let Some(p) = self.shared.peers.write().get_mut(&peer) {
                    p.rtt_us = Some(us);
                }
                return;
            }
            NetEvent::Disconnected(peer) => {
                self.rtts.remove(&peer);
                self.redial.disconnected(&peer);
                Input::Disconnected { peer }
            }
            NetEvent::Gossip { topic, id, source, data } => Input::Gossip { topic, id, source, data },
            NetEvent::Request { peer, id, data } => Input::Request { peer, id, data },
            NetEvent::Response { peer, tag, data } => Input::Response { peer, tag, data },
            NetEvent::RequestFailed { peer, tag, error } => Input::RequestFailed { peer, tag, error },
        };
        self.step(input).await;
    }

    /// A block worker outcome; orphans its block let in are relayed.
    async fn block_done(&mut self, mut o: Outcome) {
        let released = std::mem::take(&mut o.outcome.released);
        self.step(o.input()).await;
        if !released.is_empty() {
            let done = TxsDone::relay(TxOrigin::Released, released);
            self.step(Input::TxsDone(vec![done])).await;
        }
    }

    /// Writes the peer book if it changed.
    fn save_known(&mut self) {
        if self.known.is_dirty() {
            if let Err(e) = self.known.save(&self.known_path) {
                tracing::warn!("writing the peer book {}: {e}", self.known_path.display());
            }
            self.known_saved = Instant::now();
        }
    }

    /// Writes the profile, if the profiler is recording or holds statistics.
    fn save_profile(&mut self) {
        self.profile_saved = Instant::now();
        if scalechain_types::profile::enabled() || scalechain_types::profile::path_count() > 0 {
            if let Err(e) = self.shared.profile.save() {
                tracing::warn!("writing the profile to the data directory: {e}");
            }
        }
    }

    /// The periodic tick: peers dialled again while the node is below its target of
    /// connections (`redial`), the data directory's free space checked (`storage`), expired
    /// orphans leave, the peer book is written if it changed
    /// (at most every 10 s), the profile while recording (every `profile.save_every_s`), then
    /// the machine's tick.
    async fn tick(&mut self) {
        for d in self.redial.due(now_ms(), &self.known) {
            self.shared.metrics.redials.add(1);
            self.send(Command::DialPeer { peer: d.peer, addrs: d.addrs }).await;
        }
        self.shared.storage.check_space();
        if self.known_saved.elapsed() >= SAVE_KNOWN_EVERY {
            self.save_known();
        }
        let every = Duration::from_secs(self.shared.cfg.profile.save_every_s.max(1));
        if scalechain_types::profile::enabled() && self.profile_saved.elapsed() >= every {
            self.save_profile();
        }
        self.shared.replica.expire_orphans(self.shared.now_ms());
        self.step(Input::Tick).await;
        *self.shared.clock.write() = self.protocol.clock_offset();
    }

    /// Steps the machine with the node's clock and carries out its outputs, in order.
    async fn step(&mut self, input: Input<PeerId>) {
        let name = match &input {
            Input::Connected { .. } | Input::Disconnected { .. } => "protocol.connection",
            Input::Gossip { .. } => "protocol.gossip",
            Input::Request { .. } => "protocol.request",
            Input::Response { .. } | Input::RequestFailed { .. } => "protocol.response",
            Input::BlockDone { .. } => "protocol.block_done",
            Input::TxsDone(_) => "protocol.relay",
            Input::Tick => "protocol.tick",
        };
        {
            let _s = scalechain_types::profile::span(name);
            self.protocol.step(self.shared.now_ms(), input, &self.shared.replica);
        }
        let outputs: Vec<Output<PeerId>> = self.protocol.drain().collect();
        for o in outputs {
            self.carry(o).await;
        }
    }

    /// Answers inbound request `id` with what `answer` reads of the chain's store: off the
    /// event loop (a blocking task), sent when done.
    fn serve_from_store(
        &self,
        id: u64,
        span: &'static str,
        answer: impl FnOnce(&Chain<DiskStore>) -> scalechain_p2p::msg::Response + Send + 'static,
    ) {
        let (shared, net) = (self.shared.clone(), self.net.clone());
        tokio::spawn(async move {
            let load = move || {
                let _s = scalechain_types::profile::span(span);
                answer(&shared.replica.chain.read())
            };
            if let Ok(response) = tokio::task::spawn_blocking(load).await {
                let _ = net.send(Command::Respond { id, data: response.encode() }).await;
            }
        });
    }

    async fn carry(&mut self, o: Output<PeerId>) {
        match o {
            Output::Request { peer, tag, request } => {
                self.send(Command::Request { peer, data: request.encode(), tag }).await
            }
            Output::Respond { id, response } => {
                self.send(Command::Respond { id, data: response.encode() }).await
            }
            Output::ServeBlocks { id, hashes } => self.serve_from_store(id, "sync.serve_blocks", move |c| {
                blocks_response(&hashes, BLOCKS_RESPONSE_BYTES, |h| c.block(h).ok().flatten())
            }),
            Output::ServeBlockTxs { id, block, indexes } => {
                self.serve_from_store(id, "sync.serve_block_txs", move |c| {
                    let b = c.block(&block).ok().flatten();
                    block_txs_response(b.as_ref(), &indexes, BLOCKS_RESPONSE_BYTES)
                })
            }
            Output::Validate { id, source, verdict } => {
                self.send(Command::Validate { id, source, verdict }).await
            }
            Output::Publish { topic, data } => self.send(Command::Publish { topic, data }).await,
            Output::SubmitBlock { block, origin } => {
                let _ = self.blocks.send(BlockJob { block, origin, reply: None }).await;
            }
            Output::SubmitTxs { txs, origin } => {
                // While the node cannot write its data directory it takes no transactions:
                // gossip is dropped unjudged (the sender is not held to account).
                if self.shared.storage.halted() {
                    if let TxOrigin::Gossip { source, id } = origin {
                        self.send(Command::Validate { id, source, verdict: net::Verdict::Ignore }).await;
                    }
                    return;
                }
                let source = match origin {
                    TxOrigin::Gossip { source, id } => Source::Gossip { id, peer: source },
                    TxOrigin::Pool(peer) => Source::Pool { peer },
                    // The machine submits only what gossip brought; the API submits directly.
                    TxOrigin::Local | TxOrigin::Released => return,
                };
                // Waiting here is the back-pressure: the swarm stops being read meanwhile.
                let wait = Duration::from_secs(3600);
                if pipeline::submit(&self.shared, &self.pipeline, txs, source, wait).await.is_err() {
                    tracing::debug!("pipeline closed");
                }
            }
            Output::Ban { peer, until_ms } => {
                tracing::warn!(
                    "banning peer {peer} for {} s",
                    until_ms.saturating_sub(self.shared.now_ms()) / 1000
                );
                self.send(Command::Ban(peer)).await
            }
            Output::Unban { peer } => self.send(Command::Unban(peer)).await,
            Output::Disconnect { peer, reason } => {
                tracing::debug!("disconnecting peer {peer}: {reason}");
                self.send(Command::Disconnect(peer)).await
            }
            Output::Event(e) => self.event(e),
        }
    }

    /// Metrics and the `/peers` map.
    fn event(&mut self, e: Event<PeerId>) {
        let mut peers = self.shared.peers.write();
        match e {
            Event::Connected { peer, addr } => {
                self.known.seen(&peer, now_ms());
                peers.insert(
                    peer,
                    PeerInfo {
                        peer_id: peer.to_string(),
                        addr,
                        role: None,
                        height: 0,
                        score: 0,
                        rtt_us: None,
                        last_block_ms: None,
                    },
                );
            }
            Event::Handshake { peer, role, height } => {
                if let Some(p) = peers.get_mut(&peer) {
                    p.role = Some(role.name().into());
                    p.height = height;
                }
            }
            Event::Height { peer, height } => {
                if let Some(p) = peers.get_mut(&peer) {
                    p.height = height;
                }
            }
            Event::Delivered { peer, at_ms, .. } => {
                if let Some(p) = peers.get_mut(&peer) {
                    p.last_block_ms = Some(at_ms);
                }
            }
            Event::Clock { median_offset_ms, peers: n, out_of_bound } => {
                let bound_ms = self.shared.replica.params.max_future_drift_ms;
                if out_of_bound {
                    tracing::warn!(
                        median_offset_ms,
                        peers = n,
                        bound_ms,
                        "the peers' clocks differ from this node's by more than blocks' times may: check the clock"
                    );
                } else {
                    tracing::info!(
                        median_offset_ms,
                        peers = n,
                        bound_ms,
                        "the peers' clocks agree with this node's again"
                    );
                }
            }
            Event::Penalised { peer, offence, score } => {
                self.known.scored(peer, score, now_ms());
                self.shared.metrics.penalties.add(1);
                tracing::info!("peer {peer}: {} (score {score})", offence.name());
                if let Some(p) = peers.get_mut(&peer) {
                    p.score = score;
                }
            }
            Event::Banned { peer, until_ms } => {
                self.known.banned(peer, until_ms, now_ms());
                self.shared.metrics.bans.add(1)
            }
            Event::Disconnected { peer } => {
                self.known.seen(&peer, now_ms());
                peers.remove(&peer);
                self.shared.replica.forget_orphans_from(pipeline::orphan_tag(&peer));
            }
        }
    }
}
