//! Starting and running a node: open the chain, start the network, the pipeline, the block
//! worker, the miner and the API, then drive the network events until a shutdown signal.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use scalechain_chain::{Accepted, Chain, ChainError, DiskStore};
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_mempool::{Mempool, MempoolConfig};
use scalechain_p2p::msg::{
    ProtocolNames, Request, Response, TxBatch, MAX_BLOCKS_PER_REQUEST, MAX_HEADERS, MAX_TXS_PER_REQUEST,
};
use scalechain_p2p::net::{self, Command, Multiaddr, NetConfig, NetEvent, PeerId, Topic, Verdict};
use scalechain_p2p::score::{Offence, PeerBook, RateLimit, Verdict as ScoreVerdict};
use scalechain_p2p::sync::{fork_point, locator, Action, SyncConfig, SyncState};
use scalechain_types::codec::Decode;
use scalechain_types::{Amount, Block, Hash, Lock, SecretKey};
use tokio::sync::mpsc;

use crate::api::{self, ApiState};
use crate::blocks::{self, BlockJob, Origin, Outcome};
use crate::config::NodeConfig;
use crate::metrics::Metrics;
use crate::miner;
use crate::pipeline::{self, Penalty, Source};
use crate::state::{now_ms, PeerInfo, Shared};

/// Errors that stop a node from starting.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A bad setting.
    #[error("configuration: {0}")]
    Config(String),
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

/// The chain parameters a configuration selects.
pub fn params_of(cfg: &NodeConfig) -> Params {
    Params::devnet(cfg.chain.hash, cfg.chain.sig)
}

/// Opens the chain in `DATA_DIR/chain`; with `reindex`, first rebuilds the chain state from the
/// stored blocks (re-verifying every block from genesis).
pub fn open_chain(cfg: &NodeConfig, apps: Apps, reindex: bool) -> Result<Chain<DiskStore>, NodeError> {
    let dir = cfg.data_dir.join("chain");
    let params = params_of(cfg);
    let verify = VerifyConfig::parallel(random32()?).with_mode(cfg.chain.verify_mode);
    if reindex && dir.exists() {
        let old = Chain::open(DiskStore::open(&dir).map_err(ChainError::from)?, apps.clone(), verify)?;
        let blocks: Vec<Block> = (1..=old.tip_height())
            .map(|h| {
                old.block_at(h)?.ok_or_else(|| ChainError::Corrupt(format!("main-chain block {h} missing")))
            })
            .collect::<Result<_, _>>()?;
        drop(old);
        let moved = dir.with_extension(format!("old-{}", now_ms()));
        std::fs::rename(&dir, &moved).map_err(|e| io("moving aside", &dir, e))?;
        let mut fresh = Chain::open_or_init(
            DiskStore::open(&dir).map_err(ChainError::from)?,
            &params,
            apps.clone(),
            verify,
        )?;
        for b in blocks {
            let t = b.header.time;
            fresh.accept_block(b, now_ms().max(t))?;
        }
        tracing::info!("reindexed {} blocks; the old store is at {}", fresh.tip_height(), moved.display());
        std::fs::remove_dir_all(&moved).map_err(|e| io("removing", &moved, e))?;
        return Ok(fresh);
    }
    Ok(Chain::open_or_init(DiskStore::open(&dir).map_err(ChainError::from)?, &params, apps, verify)?)
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

/// Starts a node and runs it until SIGINT/SIGTERM (or `stop` resolves).
pub async fn run(
    cfg: NodeConfig,
    apps: Apps,
    reindex: bool,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), NodeError> {
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| io("creating", &cfg.data_dir, e))?;
    let _ = std::fs::remove_file(cfg.data_dir.join("node.json"));
    let params = params_of(&cfg);
    let mut chain = open_chain(&cfg, apps, reindex)?;
    let chain_id = chain.chain_id();
    let mp = &cfg.mempool;
    let mempool = Arc::new(Mempool::new(
        params.hash,
        MempoolConfig {
            max_bytes: mp.max_bytes as u64,
            max_txs: mp.max_txs,
            max_ancestors: mp.max_ancestors,
            min_fee_rate: mp.min_fee_rate,
            max_fee_less_bytes: mp.max_fee_less_bytes,
            dust_limit: Amount::new(mp.dust_limit)
                .map_err(|e| NodeError::Config(format!("mempool.dust_limit: {e}")))?,
            ..MempoolConfig::default()
        },
    ));
    chain.set_sig_cache(Some(mempool.sig_cache()));
    let key = node_key(&cfg.data_dir)?;
    let names = ProtocolNames::for_chain(&chain_id);
    let parse_addrs = |v: &[String], what: &str| -> Result<Vec<Multiaddr>, NodeError> {
        v.iter().map(|a| a.parse().map_err(|e| NodeError::Config(format!("{what} {a:?}: {e}")))).collect()
    };
    let net_cfg = NetConfig {
        listen: parse_addrs(&cfg.p2p.listen, "p2p.listen")?,
        bootstrap: parse_addrs(&cfg.p2p.bootstrap, "p2p.bootstrap")?,
        names,
        key_seed: key,
        max_message_bytes: cfg.p2p.max_message_bytes,
        max_connections: cfg.p2p.max_connections,
        event_buffer: 1024,
        agent: format!("scalechain/{}", env!("CARGO_PKG_VERSION")),
        gossip: cfg.role != scalechain_p2p::msg::Role::Bootstrap,
    };
    let mut netw = net::start(net_cfg).await?;
    let tip = (chain.tip_height(), chain.tip());
    let (tip_tx, _) = tokio::sync::watch::channel(tip);
    let shared = Arc::new(Shared {
        cfg: cfg.clone(),
        params: params.clone(),
        chain_id,
        chain: RwLock::new(chain),
        mempool,
        metrics: Metrics::default(),
        net_stats: RwLock::new(Some(netw.stats.clone())),
        peers: RwLock::new(Default::default()),
        peer_id: netw.peer_id,
        listen: RwLock::new(Vec::new()),
        started: Instant::now(),
        stopping: false.into(),
        tip_changed: tip_tx,
    });
    // Stages and workers.
    let (pipe_tx, pipe_rx) = mpsc::channel(cfg.mempool.buffer.max(1));
    let (pen_tx, mut pen_rx) = mpsc::unbounded_channel::<Penalty>();
    tokio::spawn(pipeline::run(shared.clone(), pipe_rx, netw.commands.clone(), pen_tx));
    let (block_tx, block_rx) = mpsc::channel::<BlockJob>(256);
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Outcome>();
    {
        let s = shared.clone();
        let d = done_tx.clone();
        std::thread::Builder::new()
            .name("blocks".into())
            .spawn(move || blocks::run(s, block_rx, d))
            .map_err(|e| NodeError::Config(format!("starting the block worker: {e}")))?;
    }
    let mut miner_thread = None;
    if cfg.role == scalechain_p2p::msg::Role::Miner {
        let reward = reward_lock(&cfg, &params)?;
        let (s, j, d) = (shared.clone(), block_tx.clone(), done_tx.clone());
        miner_thread = Some(
            std::thread::Builder::new()
                .name("miner".into())
                .spawn(move || miner::run(s, reward, j, d))
                .map_err(|e| NodeError::Config(format!("starting the miner: {e}")))?,
        );
    }
    // API.
    let api_addr = match cfg.api_addr().map_err(NodeError::Config)? {
        None => None,
        Some(addr) => {
            let token = match (&cfg.api.token, addr.ip().is_loopback()) {
                (Some(t), _) => Some(Arc::from(t.as_str())),
                (None, true) => None,
                (None, false) => {
                    let path = cfg.data_dir.join("api_token");
                    let t = match std::fs::read_to_string(&path) {
                        Ok(t) => t.trim().to_string(),
                        Err(_) => {
                            let t = hex::encode(random32()?);
                            write_private(&path, t.as_bytes())?;
                            t
                        }
                    };
                    Some(Arc::from(t.as_str()))
                }
            };
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| NodeError::Config(format!("api.listen {addr}: {e}")))?;
            let bound = listener.local_addr().map_err(|e| NodeError::Config(e.to_string()))?;
            let app = api::router(ApiState { shared: shared.clone(), pipeline: pipe_tx.clone(), token });
            tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            Some(bound)
        }
    };
    // Event loop.
    let mut ev = EventLoop {
        shared: shared.clone(),
        net: netw.commands.clone(),
        pipeline: pipe_tx.clone(),
        blocks: block_tx.clone(),
        sync: SyncState::new(SyncConfig::default()),
        book: PeerBook::new(4096),
        limits: HashMap::new(),
        asked: HashMap::new(),
        next_tag: 1,
        api_addr,
        info_written: false,
    };
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let sigterm = shutdown_signal();
    tokio::pin!(sigterm);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            e = netw.events.recv() => match e {
                Some(e) => ev.net_event(e).await,
                None => break,
            },
            Some(o) = done_rx.recv() => ev.outcome(o).await,
            Some(p) = pen_rx.recv() => ev.penalise(p.peer, p.offence).await,
            _ = tick.tick() => ev.tick().await,
            _ = &mut sigterm => break,
            _ = &mut stop => break,
        }
    }
    tracing::info!("stopping");
    shared.stopping.store(true, Ordering::Relaxed);
    drop(ev);
    drop(block_tx);
    drop(pipe_tx);
    if let Some(m) = miner_thread {
        let _ = tokio::task::spawn_blocking(move || m.join()).await;
    }
    let _ = std::fs::remove_file(shared.cfg.data_dir.join("node.json"));
    Ok(())
}

async fn shutdown_signal() {
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

/// What an outbound request was, for when its answer comes.
enum Asked {
    Hello,
    Headers,
    Blocks(Vec<Hash>),
    Txs,
}

struct EventLoop {
    shared: Arc<Shared>,
    net: mpsc::Sender<Command>,
    pipeline: mpsc::Sender<pipeline::Inbound>,
    blocks: mpsc::Sender<BlockJob>,
    sync: SyncState<PeerId>,
    book: PeerBook<PeerId>,
    limits: HashMap<PeerId, RateLimit>,
    asked: HashMap<u64, (PeerId, Asked)>,
    next_tag: u64,
    api_addr: Option<SocketAddr>,
    info_written: bool,
}

impl EventLoop {
    async fn send(&self, c: Command) {
        let _ = self.net.send(c).await;
    }

    async fn request(&mut self, peer: PeerId, request: Request, asked: Asked) {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.asked.insert(tag, (peer, asked));
        self.send(Command::Request { peer, request, tag }).await;
    }

    async fn penalise(&mut self, peer: PeerId, offence: Offence) {
        self.shared.metrics.penalties.add(1);
        tracing::info!("peer {peer}: {}", offence.name());
        if let ScoreVerdict::Ban { .. } = self.book.penalise(&peer, offence, now_ms()) {
            self.shared.metrics.bans.add(1);
            tracing::warn!("banning peer {peer}");
            self.send(Command::Ban(peer)).await;
        }
        if let Some(p) = self.shared.peers.write().get_mut(&peer) {
            p.score = self.book.score(&peer, now_ms());
        }
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
        match e {
            NetEvent::Listening(a) => {
                tracing::info!("listening on {a}");
                self.shared.listen.write().push(a);
                self.write_info();
            }
            NetEvent::Connected { peer, addr } => {
                if self.book.is_banned(&peer, now_ms()) {
                    self.send(Command::Ban(peer)).await;
                    return;
                }
                self.shared.peers.write().insert(
                    peer,
                    PeerInfo {
                        peer_id: peer.to_string(),
                        addr: addr.to_string(),
                        role: None,
                        height: 0,
                        score: 0,
                    },
                );
                let hello = self.shared.hello();
                self.request(peer, Request::Hello(hello), Asked::Hello).await;
            }
            NetEvent::Disconnected(peer) => {
                self.shared.peers.write().remove(&peer);
                self.sync.peer_gone(&peer);
                self.limits.remove(&peer);
            }
            NetEvent::Gossip { topic, id, source, data } => self.gossip(topic, id, source, data).await,
            NetEvent::Request { peer, id, request } => self.serve(peer, id, request).await,
            NetEvent::Response { peer, tag, response } => self.answer(peer, tag, response).await,
            NetEvent::RequestFailed { peer, tag, error } => {
                tracing::debug!("request to {peer} failed: {error}");
                if let Some((_, Asked::Blocks(hashes))) = self.asked.remove(&tag) {
                    self.sync.on_blocks_answer(&peer, &hashes, &HashSet::new());
                }
            }
        }
    }

    async fn gossip(&mut self, topic: Topic, id: net::MessageId, source: PeerId, data: Vec<u8>) {
        match topic {
            Topic::Txs => match TxBatch::decode(&data) {
                Ok(TxBatch(txs)) => {
                    let src = Source::Gossip { id, peer: source };
                    // Waiting here is the back-pressure: the swarm stops reading meanwhile.
                    if pipeline::submit(&self.shared, &self.pipeline, txs, src, Duration::from_secs(3600))
                        .await
                        .is_err()
                    {
                        tracing::debug!("pipeline closed");
                    }
                }
                Err(e) => {
                    tracing::debug!("malformed tx batch from {source}: {e}");
                    self.send(Command::Validate { id, source, verdict: Verdict::Reject }).await;
                    self.penalise(source, Offence::Malformed).await;
                }
            },
            Topic::Blocks => match Block::decode(&data) {
                Ok(block) => {
                    self.sync.peer_tip(source, block.header.height);
                    let _ = self
                        .blocks
                        .send(BlockJob { block, origin: Origin::Gossip { source, id }, reply: None })
                        .await;
                }
                Err(e) => {
                    tracing::debug!("malformed block from {source}: {e}");
                    self.send(Command::Validate { id, source, verdict: Verdict::Reject }).await;
                    self.penalise(source, Offence::Malformed).await;
                }
            },
        }
    }

    async fn outcome(&mut self, o: Outcome) {
        let accepted = match &o.result {
            Ok(a) => Some(a.clone()),
            Err(e) => {
                tracing::info!("block {} {}: {e}", o.height, o.hash);
                None
            }
        };
        self.sync.on_block(&o.hash);
        let invalid = matches!(&o.result, Err(e) if e.rejection().is_some());
        match o.origin {
            Origin::Gossip { source, id } => {
                let verdict = match &accepted {
                    Some(Accepted::Connected(_)) | Some(Accepted::SideBranch) => Verdict::Accept,
                    _ if invalid => Verdict::Reject,
                    _ => Verdict::Ignore,
                };
                self.send(Command::Validate { id, source, verdict }).await;
                if invalid {
                    self.penalise(source, Offence::InvalidBlock).await;
                }
            }
            Origin::Sync(peer) => {
                if invalid {
                    self.penalise(peer, Offence::InvalidBlock).await;
                }
            }
            Origin::Local(data) => {
                if let Some(Accepted::Connected(_)) = accepted {
                    tracing::info!("mined block {} {} ({} bytes)", o.height, o.hash, data.len());
                    self.send(Command::Publish { topic: Topic::Blocks, data }).await;
                }
            }
        }
    }

    async fn tick(&mut self) {
        let now = now_ms();
        self.book.expire(now);
        // Seed 000's peer server (the bootstrap role) answers discovery only: it fetches no chain,
        // so its sync state never plans a request (it still learns its peers' tips from their
        // handshakes, for /peers).
        if self.shared.role() != scalechain_p2p::msg::Role::Bootstrap {
            let height = self.shared.chain.read().tip_height();
            let shared = &self.shared;
            // The locator is built only when sync decides to ask for headers.
            let actions = self.sync.tick(now, height, || locator(shared.chain.read().main_chain()));
            for Action::Send(peer, req) in actions {
                let asked = match &req {
                    Request::GetBlocks(h) => Asked::Blocks(h.clone()),
                    Request::GetHeaders { .. } => Asked::Headers,
                    Request::GetTxs(_) => Asked::Txs,
                    Request::Hello(_) => Asked::Hello,
                };
                self.request(peer, req, asked).await;
            }
        }
        let tips: HashMap<PeerId, u64> = self.sync.peers().into_iter().collect();
        for (p, info) in self.shared.peers.write().iter_mut() {
            if let Some(h) = tips.get(p) {
                info.height = *h;
            }
        }
    }

    async fn serve(&mut self, peer: PeerId, id: u64, request: Request) {
        let now = now_ms();
        let per_s = self.shared.cfg.p2p.requests_per_s;
        let limit = self.limits.entry(peer).or_insert_with(|| RateLimit::new(per_s, per_s * 4.0, now));
        if !limit.take(1.0, now) {
            self.send(Command::Respond { id, response: Response::Refused("rate limit".into()) }).await;
            self.penalise(peer, Offence::RateLimited).await;
            return;
        }
        let shared = self.shared.clone();
        let response = match request {
            Request::Hello(h) => {
                if h.chain_id != self.shared.chain_id {
                    self.penalise(peer, Offence::WrongChain).await;
                    Response::Refused("wrong chain".into())
                } else {
                    self.sync.peer_tip(peer, h.tip_height);
                    if let Some(p) = self.shared.peers.write().get_mut(&peer) {
                        p.role = Some(h.role.name().into());
                    }
                    Response::Hello(self.shared.hello())
                }
            }
            Request::GetHeaders { locator, max } => {
                let c = shared.chain.read();
                let main = c.main_chain();
                let start = fork_point(&locator, |h| {
                    c.tree().get(h).map(|e| e.header.height).filter(|ht| main.get(*ht as usize) == Some(h))
                });
                let n = (max as usize).min(MAX_HEADERS);
                let headers = main
                    .iter()
                    .skip(start as usize + 1)
                    .take(n)
                    .filter_map(|h| c.tree().get(h).map(|e| e.header))
                    .collect();
                Response::Headers(headers)
            }
            Request::GetBlocks(hashes) => {
                let r = tokio::task::spawn_blocking(move || {
                    let c = shared.chain.read();
                    let mut out = Vec::new();
                    let mut bytes = 0usize;
                    for h in hashes.iter().take(MAX_BLOCKS_PER_REQUEST) {
                        if let Ok(Some(b)) = c.block(h) {
                            bytes += b.encoded_len();
                            if bytes > scalechain_p2p::msg::MAX_RESPONSE_BYTES - (1 << 20) {
                                break;
                            }
                            out.push(b);
                        }
                    }
                    out
                })
                .await
                .unwrap_or_default();
                Response::Blocks(r)
            }
            Request::GetTxs(txids) => {
                let txs = txids
                    .iter()
                    .take(MAX_TXS_PER_REQUEST)
                    .filter_map(|t| self.shared.mempool.get(t))
                    .map(|e| (*e.tx).clone())
                    .collect();
                Response::Txs(txs)
            }
        };
        self.send(Command::Respond { id, response }).await;
    }

    async fn answer(&mut self, peer: PeerId, tag: u64, response: Response) {
        let Some((_, asked)) = self.asked.remove(&tag) else { return };
        match (asked, response) {
            (Asked::Hello, Response::Hello(h)) => {
                if h.chain_id != self.shared.chain_id {
                    self.penalise(peer, Offence::WrongChain).await;
                    return;
                }
                self.sync.peer_tip(peer, h.tip_height);
                if let Some(p) = self.shared.peers.write().get_mut(&peer) {
                    p.role = Some(h.role.name().into());
                    p.height = h.tip_height;
                }
            }
            (Asked::Headers, Response::Headers(headers)) => {
                let kind = self.shared.params.hash;
                let r = {
                    let c = self.shared.chain.read();
                    self.sync.on_headers(&peer, &headers, kind, |h| c.tree().contains(h))
                };
                if let Err(o) = r {
                    self.penalise(peer, o).await;
                }
            }
            (Asked::Blocks(asked), Response::Blocks(blocks)) => {
                let kind = self.shared.params.hash;
                let wanted: HashSet<Hash> = asked.iter().copied().collect();
                let mut delivered = HashSet::new();
                for b in blocks {
                    let h = b.header.hash(kind);
                    if !wanted.contains(&h) {
                        self.penalise(peer, Offence::Malformed).await;
                        continue;
                    }
                    delivered.insert(h);
                    let _ = self
                        .blocks
                        .send(BlockJob { block: b, origin: Origin::Sync(peer), reply: None })
                        .await;
                }
                self.sync.on_blocks_answer(&peer, &asked, &delivered);
            }
            (Asked::Txs, Response::Txs(txs)) => {
                if !txs.is_empty() {
                    let (reply, _rx) = tokio::sync::oneshot::channel();
                    let _ = pipeline::submit(
                        &self.shared,
                        &self.pipeline,
                        txs,
                        Source::Api(reply),
                        Duration::from_secs(10),
                    )
                    .await;
                }
            }
            (Asked::Blocks(asked), _) => {
                self.sync.on_blocks_answer(&peer, &asked, &HashSet::new());
            }
            (_, Response::Refused(why)) => tracing::debug!("{peer} refused: {why}"),
            _ => self.penalise(peer, Offence::Malformed).await,
        }
    }
}
