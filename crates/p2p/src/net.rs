//! The libp2p adapter: one task owns the swarm (TCP + noise + yamux; gossipsub, request-response,
//! identify, Kademlia, connection limits, a block list) and talks to the node through two
//! bounded channels. libp2p's API changes with every 0.x release; nothing outside this module
//! names a libp2p type but [`PeerId`] and [`Multiaddr`].
//!
//! Gossip: anonymous messages (no per-message signatures: 5–6× cheaper), content-derived ids
//! (the same payload from two peers is one message), a transmit limit sized for blocks, and
//! explicit validation: a message is forwarded only after the node reports it valid, and an
//! invalid one costs its sender gossipsub score as well as ours.
//!
//! Sync requests and responses travel as raw frames (`u32` big-endian length, then the body),
//! bounded before reading; the protocol machine (`crate::protocol`) decodes them, so a body
//! that does not decode reaches it and costs its sender a penalty.
//!
//! Back-pressure: the event channel is bounded; when the node falls behind, the swarm task
//! waits on it and stops reading from its sockets.
//!
//! Idle connections: the noise and yamux upgrade of a connection must finish within
//! [`NetLimits::handshake_timeout`]; one IP address may hold only so many connections being set
//! up and so many established inbound ones ([`NetLimits`]); inbound connections that have sent
//! nothing hold at most half the slots for connections being set up, the one silent longest
//! closed for a newcomer (`silent`); the established limit is
//! `max_connections` plus [`NetLimits::extra_connections`] of room, in which a newcomer
//! connects while the protocol machine (which keeps `max_connections` peers) evicts an idle
//! peer for it ([`Command::Disconnect`]).
//!
//! Bans wait for answers: a [`Command::Ban`] for a peer that still has an inbound request
//! being answered takes effect once that answer is written (or failed), or after
//! [`BAN_GRACE`] — so a peer refused for another chain reads why before it is cut off.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use futures::StreamExt;
use libp2p::core::{ConnectedPoint, Transport as _};
use libp2p::gossipsub::{
    self, IdentTopic, MessageAcceptance, MessageAuthenticity, MessageId, ValidationMode,
};
use libp2p::request_response::{self, OutboundRequestId, ProtocolSupport, ResponseChannel};
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{
    allow_block_list, connection_limits, identify, identity, kad, noise, ping, tcp, yamux, StreamProtocol,
};
pub use libp2p::{Multiaddr, PeerId};
use tokio::sync::mpsc;

use crate::msg::{message_id, MsgId, ProtocolNames, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES};

mod dial;
mod gate;
mod silent;
pub use crate::msg::Topic;
pub use crate::protocol::Verdict;
pub use gate::ip_of;

/// Longest a ban waits for the answers to the peer's requests to be written.
pub const BAN_GRACE: Duration = Duration::from_secs(2);

/// How often a node pings each connected peer (libp2p's ping). A ping unanswered within
/// [`PING_TIMEOUT`] closes the connection: a link that stopped carrying packets (a cut cable,
/// a partition, a peer frozen) is let go instead of holding the peer's slot while TCP backs
/// off its retransmissions for minutes, and the node dials the peer afresh.
pub const PING_INTERVAL: Duration = Duration::from_secs(15);

/// How long a ping may go unanswered before its connection is closed (libp2p's default).
pub const PING_TIMEOUT: Duration = Duration::from_secs(20);

/// How long data the node sent may stay unacknowledged before the kernel drops the connection
/// (`TCP_USER_TIMEOUT` on every peer-to-peer socket). A graceful close waits for the link to
/// carry its last frames, which a dead link never does; this ends such a connection with an
/// error instead, so the peer's slot is freed and it can be dialled again.
pub const LINK_TIMEOUT: Duration = Duration::from_secs(20);

/// Network settings.
#[derive(Clone, Debug)]
pub struct NetConfig {
    /// Where to listen (e.g. `/ip4/127.0.0.1/tcp/0` for an OS-chosen port).
    pub listen: Vec<Multiaddr>,
    /// Nodes to join through: full multiaddrs ending in `/p2p/<peer id>`.
    pub bootstrap: Vec<Multiaddr>,
    /// Protocol names of the chain.
    pub names: ProtocolNames,
    /// The node's identity key (ed25519, 32-byte secret).
    pub key_seed: [u8; 32],
    /// Largest gossip message, bytes (blocks travel whole).
    pub max_message_bytes: usize,
    /// Most established connections.
    pub max_connections: u32,
    /// Events buffered towards the node before the swarm waits.
    pub event_buffer: usize,
    /// Software name announced through identify.
    pub agent: String,
    /// Subscribe to the transaction and block topics. A bootstrap node (seed 000's peer server)
    /// does not: it answers discovery and handshakes, and never validates or relays gossip.
    pub gossip: bool,
    /// Find and dial peers beyond `bootstrap` (Kademlia walks, addresses learnt through
    /// identify). Off, the node connects only to its bootstrap addresses and to who dials it:
    /// a fixed topology, e.g. every connection through a delaying relay. Its Kademlia then
    /// still answers requests, from an empty table, and never searches (so never dials).
    pub discover: bool,
}

/// Limits against connections that take a slot and do nothing with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetLimits {
    /// Longest the transport upgrade (noise, then yamux) of a connection may take.
    pub handshake_timeout: Duration,
    /// Most inbound connections from one IP address being set up at once.
    pub max_pending_per_ip: u32,
    /// Most established inbound connections from one IP address.
    pub max_inbound_per_ip: u32,
    /// Established connections allowed past `NetConfig::max_connections`: room in which a
    /// newcomer connects while the node evicts a peer for it.
    pub extra_connections: u32,
}

impl Default for NetLimits {
    /// 5 s to set a connection up, 16 pending and 32 established inbound connections per IP
    /// address, 16 connections of room.
    fn default() -> Self {
        NetLimits {
            handshake_timeout: Duration::from_secs(5),
            max_pending_per_ip: 16,
            max_inbound_per_ip: 32,
            extra_connections: 16,
        }
    }
}

/// What the node asks of the network task.
#[derive(Debug)]
pub enum Command {
    /// Publish a payload on the transactions or blocks topic.
    Publish {
        /// Which topic.
        topic: Topic,
        /// The encoded payload.
        data: Vec<u8>,
    },
    /// The verdict on a received gossip message: forward it, drop it, or drop and penalise.
    Validate {
        /// The message id from [`NetEvent::Gossip`].
        id: MsgId,
        /// The peer it came from.
        source: PeerId,
        /// The verdict.
        verdict: Verdict,
    },
    /// Send a request body; the answer comes back as [`NetEvent::Response`] with `tag`.
    Request {
        /// To whom.
        peer: PeerId,
        /// The encoded request (at most `msg::MAX_REQUEST_BYTES`).
        data: Vec<u8>,
        /// The caller's tag for the answer.
        tag: u64,
    },
    /// Answer the inbound request with this id.
    Respond {
        /// The id from [`NetEvent::Request`].
        id: u64,
        /// The encoded response (at most `msg::MAX_RESPONSE_BYTES`).
        data: Vec<u8>,
    },
    /// Disconnect the peer and refuse it until [`Command::Unban`] (once the answers to its
    /// pending requests are written, or after [`BAN_GRACE`]).
    Ban(PeerId),
    /// Accept the peer again.
    Unban(PeerId),
    /// Close every connection to the peer (no ban: it may connect again).
    Disconnect(PeerId),
    /// Dial an address.
    Dial(Multiaddr),
    /// Dial a peer at any of its addresses, unless it is connected or being dialled already.
    DialPeer {
        /// The peer.
        peer: PeerId,
        /// Its addresses (without the `/p2p/<id>` suffix).
        addrs: Vec<Multiaddr>,
    },
}

/// What the network task tells the node.
#[derive(Debug)]
pub enum NetEvent {
    /// Listening on an address (with the `/p2p/<id>` suffix).
    Listening(Multiaddr),
    /// A first connection to a peer opened.
    Connected {
        /// The peer.
        peer: PeerId,
        /// Its address.
        addr: Multiaddr,
        /// True if the peer dialled us.
        inbound: bool,
    },
    /// A peer told us (through identify) the addresses it listens on.
    Identified {
        /// The peer.
        peer: PeerId,
        /// Its listen addresses, at most 16.
        listen: Vec<Multiaddr>,
    },
    /// A ping to a peer came back (libp2p's ping, every [`PING_INTERVAL`]).
    Rtt {
        /// The peer.
        peer: PeerId,
        /// The round trip.
        rtt: Duration,
    },
    /// The last connection to a peer closed.
    Disconnected(PeerId),
    /// A gossip message to validate (then answer with [`Command::Validate`]).
    Gossip {
        /// The topic.
        topic: Topic,
        /// Its id.
        id: MsgId,
        /// The peer that forwarded it.
        source: PeerId,
        /// The payload.
        data: Vec<u8>,
    },
    /// An inbound request (answer with [`Command::Respond`]).
    Request {
        /// From whom.
        peer: PeerId,
        /// The id to answer with.
        id: u64,
        /// The request body, not decoded.
        data: Vec<u8>,
    },
    /// The answer to one of our requests.
    Response {
        /// From whom.
        peer: PeerId,
        /// The caller's tag.
        tag: u64,
        /// The response body, not decoded.
        data: Vec<u8>,
    },
    /// One of our requests failed (timeout, closed connection, malformed answer).
    RequestFailed {
        /// To whom it went.
        peer: PeerId,
        /// The caller's tag.
        tag: u64,
        /// Why.
        error: String,
    },
}

/// Counters of the network task (read by the node's metrics).
#[derive(Debug, Default)]
pub struct NetStats {
    /// Gossip messages received.
    pub gossip_in: AtomicU64,
    /// Gossip payload bytes received.
    pub gossip_in_bytes: AtomicU64,
    /// Of those, on the block topics (whole and compact).
    pub gossip_in_block_bytes: AtomicU64,
    /// Response bodies received for this node's sync requests, bytes.
    pub sync_in_bytes: AtomicU64,
    /// Gossip messages published.
    pub gossip_out: AtomicU64,
    /// Publishes that failed (all queues full, no peers, too large).
    pub publish_failed: AtomicU64,
    /// Slow-peer reports from gossipsub (a peer could not take our messages in time).
    pub slow_peer: AtomicU64,
    /// Connected peers.
    pub peers: AtomicU64,
    /// Connections closed because a ping went unanswered for [`PING_TIMEOUT`].
    pub ping_failures: AtomicU64,
    /// Connections that ended in an error (a reset, or data unacknowledged for
    /// [`LINK_TIMEOUT`]) rather than closed by either side.
    pub connection_errors: AtomicU64,
    /// Inbound requests served.
    pub requests_in: AtomicU64,
    /// Inbound connections closed, having sent nothing, to make room for a newcomer.
    pub silent_closed: AtomicU64,
}

/// Errors starting the network.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// A setting libp2p refused.
    #[error("network configuration: {0}")]
    Config(String),
    /// Could not listen.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: Multiaddr,
        /// Why.
        reason: String,
    },
}

/// The running network task's handle.
pub struct Net {
    /// Commands to the task.
    pub commands: mpsc::Sender<Command>,
    /// Events from the task.
    pub events: mpsc::Receiver<NetEvent>,
    /// This node's peer id.
    pub peer_id: PeerId,
    /// Counters.
    pub stats: Arc<NetStats>,
}

/// Length-prefixed frames of the sync protocol, bounded before reading.
#[derive(Clone, Default)]
pub struct SyncCodec;

async fn read_frame<T: AsyncRead + Unpin + Send>(io: &mut T, max: usize) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    io.read_exact(&mut len).await?;
    let n = u32::from_be_bytes(len) as usize;
    if n > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {n} bytes, at most {max}"),
        ));
    }
    let mut buf = vec![0u8; n];
    io.read_exact(&mut buf).await?;
    Ok(buf)
}

async fn write_frame<T: AsyncWrite + Unpin + Send>(io: &mut T, data: &[u8]) -> std::io::Result<()> {
    let n = u32::try_from(data.len()).map_err(|_| std::io::Error::other("frame too large"))?;
    io.write_all(&n.to_be_bytes()).await?;
    io.write_all(data).await?;
    io.close().await
}

impl request_response::Codec for SyncCodec {
    type Protocol = StreamProtocol;
    type Request = Vec<u8>;
    type Response = Vec<u8>;

    async fn read_request<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> std::io::Result<Vec<u8>> {
        read_frame(io, MAX_REQUEST_BYTES).await
    }

    async fn read_response<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> std::io::Result<Vec<u8>> {
        read_frame(io, MAX_RESPONSE_BYTES).await
    }

    async fn write_request<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        req: Vec<u8>,
    ) -> std::io::Result<()> {
        write_frame(io, &req).await
    }

    async fn write_response<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        res: Vec<u8>,
    ) -> std::io::Result<()> {
        write_frame(io, &res).await
    }
}

#[derive(NetworkBehaviour)]
struct Behaviour {
    limits: connection_limits::Behaviour,
    gate: gate::Gate,
    blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    gossipsub: gossipsub::Behaviour,
    sync: request_response::Behaviour<SyncCodec>,
    identify: identify::Behaviour,
    kad: kad::Behaviour<kad::store::MemoryStore>,
    ping: ping::Behaviour,
}

fn gossip_config(max_bytes: usize) -> Result<gossipsub::Config, NetError> {
    gossipsub::ConfigBuilder::default()
        .validation_mode(ValidationMode::Anonymous)
        .message_id_fn(|m: &gossipsub::Message| MessageId::from(message_id(&m.data).0.to_vec()))
        .validate_messages()
        .max_transmit_size(max_bytes)
        .duplicate_cache_time(Duration::from_secs(120))
        .heartbeat_interval(Duration::from_millis(700))
        .heartbeat_initial_delay(Duration::from_millis(100))
        .mesh_n(8)
        .mesh_n_low(6)
        .mesh_n_high(12)
        .mesh_outbound_min(3)
        .connection_handler_queue_len(50_000)
        .publish_queue_duration(Duration::from_secs(30))
        .forward_queue_duration(Duration::from_secs(5))
        .build()
        .map_err(|e| NetError::Config(e.to_string()))
}

/// Starts the network task on the current tokio runtime with the default [`NetLimits`];
/// returns once it listens.
pub async fn start(cfg: NetConfig) -> Result<Net, NetError> {
    start_with(cfg, NetLimits::default()).await
}

/// Starts the network task on the current tokio runtime; returns once it listens.
pub async fn start_with(cfg: NetConfig, net_limits: NetLimits) -> Result<Net, NetError> {
    let key =
        identity::Keypair::ed25519_from_bytes(cfg.key_seed).map_err(|e| NetError::Config(e.to_string()))?;
    let peer_id = key.public().to_peer_id();
    let names = cfg.names.clone();
    let max_bytes = cfg.max_message_bytes;
    let max_conn = cfg.max_connections;
    let agent = cfg.agent.clone();
    let discover = cfg.discover;
    // Inbound connections that have said nothing get at most `max_conn` of the `2 × max_conn`
    // slots for connections being set up; past it the one silent longest is closed.
    let stats = Arc::new(NetStats::default());
    let silent = silent::Silent::new(max_conn as usize, stats.clone());
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_other_transport(|key| {
            // libp2p's TCP transport (as `with_tcp` builds it), each connection's socket, dialled
            // or accepted, given the link timeout, and each inbound one watched until it speaks.
            let watch = silent.clone();
            let noise = noise::Config::new(key)
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { Box::new(e) })?;
            // Dials from the listen port fall back to a new port when that one is taken (`dial`).
            Ok(dial::ReuseOrNew::new(tcp::tokio::Transport::new(tcp::Config::default().nodelay(true)))
                .and_then(move |stream: tcp::tokio::TcpStream, endpoint: ConnectedPoint| {
                    let _ = socket2::SockRef::from(&stream.0).set_tcp_user_timeout(Some(LINK_TIMEOUT));
                    let watched = watch.watch(stream, endpoint.is_listener());
                    futures::future::ok::<_, std::io::Error>(watched)
                })
                .upgrade(libp2p::core::upgrade::Version::V1Lazy)
                .authenticate(noise)
                .multiplex(yamux::Config::default()))
        })
        .map_err(|e| NetError::Config(e.to_string()))?
        .with_behaviour(|key| {
            let gossip_cfg = gossip_config(max_bytes).map_err(|e| e.to_string())?;
            let gossipsub = gossipsub::Behaviour::new(MessageAuthenticity::Anonymous, gossip_cfg)?;
            let sync_protocol =
                StreamProtocol::try_from_owned(names.sync.clone()).map_err(|e| e.to_string())?;
            let sync = request_response::Behaviour::new(
                [(sync_protocol, ProtocolSupport::Full)],
                request_response::Config::default().with_request_timeout(Duration::from_secs(30)),
            );
            let identify = identify::Behaviour::new(
                identify::Config::new(names.identify.clone(), key.public()).with_agent_version(agent),
            );
            let kad_protocol =
                StreamProtocol::try_from_owned(names.kad.clone()).map_err(|e| e.to_string())?;
            let id = key.public().to_peer_id();
            let mut kad_config = kad::Config::new(kad_protocol);
            if !discover {
                // A fixed topology: Kademlia still answers other nodes, but its table stays
                // empty (no peer enters it unasked, none is added) and it never walks it, so it
                // never dials. Otherwise its own bootstrap would find and dial peers' peers.
                kad_config.set_kbucket_inserts(kad::BucketInserts::Manual);
                kad_config.set_periodic_bootstrap_interval(None);
            }
            let mut kad = kad::Behaviour::with_config(id, kad::store::MemoryStore::new(id), kad_config);
            // On loopback and private networks no external address is ever confirmed, so
            // Kademlia would stay a client: every node serves the routing table.
            kad.set_mode(Some(kad::Mode::Server));
            let limits = connection_limits::Behaviour::new(
                connection_limits::ConnectionLimits::default()
                    .with_max_established(Some(max_conn.saturating_add(net_limits.extra_connections)))
                    .with_max_pending_incoming(Some(max_conn.saturating_mul(2)))
                    .with_max_established_per_peer(Some(2)),
            );
            let gate = gate::Gate::new(
                net_limits.max_pending_per_ip as usize,
                net_limits.max_inbound_per_ip as usize,
            );
            // libp2p's standard ping (`/ipfs/ping/1.0.0`): the round trip shown per peer.
            let ping = ping::Behaviour::new(
                ping::Config::new().with_interval(PING_INTERVAL).with_timeout(PING_TIMEOUT),
            );
            Ok(Behaviour { limits, gate, blocked: Default::default(), gossipsub, sync, identify, kad, ping })
        })
        .map_err(|e| NetError::Config(e.to_string()))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(3600)))
        .with_connection_timeout(net_limits.handshake_timeout)
        .build();
    let txs = IdentTopic::new(cfg.names.txs_topic.clone());
    let blocks = IdentTopic::new(cfg.names.blocks_topic.clone());
    let compact_blocks = IdentTopic::new(cfg.names.compact_blocks_topic.clone());
    if cfg.gossip {
        for t in [&txs, &blocks, &compact_blocks] {
            swarm.behaviour_mut().gossipsub.subscribe(t).map_err(|e| NetError::Config(e.to_string()))?;
        }
    }
    for addr in &cfg.listen {
        swarm
            .listen_on(addr.clone())
            .map_err(|e| NetError::Listen { addr: addr.clone(), reason: e.to_string() })?;
    }
    for addr in &cfg.bootstrap {
        if let Some(peer) = peer_of(addr).filter(|_| cfg.discover) {
            swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
        }
        let _ = swarm.dial(addr.clone());
    }
    let (cmd_tx, cmd_rx) = mpsc::channel(4096);
    let (evt_tx, evt_rx) = mpsc::channel(cfg.event_buffer.max(16));
    let task = Task {
        swarm,
        txs,
        blocks,
        compact_blocks,
        events: evt_tx,
        stats: stats.clone(),
        inbound: HashMap::new(),
        outbound: HashMap::new(),
        answering: HashMap::new(),
        bans: HashMap::new(),
        next_inbound: 0,
        bootstrapped: cfg.bootstrap.is_empty(),
        discover: cfg.discover,
    };
    tokio::spawn(task.run(cmd_rx));
    Ok(Net { commands: cmd_tx, events: evt_rx, peer_id, stats })
}

/// `addr` without its `/p2p/<id>` parts.
pub fn strip_peer(addr: &Multiaddr) -> Multiaddr {
    addr.iter().filter(|p| !matches!(p, libp2p::multiaddr::Protocol::P2p(_))).collect()
}

/// `addr` with `/p2p/<peer>` appended.
pub fn with_peer(addr: Multiaddr, peer: PeerId) -> Multiaddr {
    addr.with(libp2p::multiaddr::Protocol::P2p(peer))
}

/// The TCP port of an address, if it has one.
pub fn tcp_port(addr: &Multiaddr) -> Option<u16> {
    addr.iter().find_map(|p| match p {
        libp2p::multiaddr::Protocol::Tcp(port) => Some(port),
        _ => None,
    })
}

/// The peer id of a node whose identity key has this 32-byte ed25519 seed.
pub fn peer_id_of_seed(seed: [u8; 32]) -> Option<PeerId> {
    identity::Keypair::ed25519_from_bytes(seed).ok().map(|k| k.public().to_peer_id())
}

/// The peer id at the end of a `/p2p/<id>` multiaddr.
pub fn peer_of(addr: &Multiaddr) -> Option<PeerId> {
    addr.iter().find_map(|p| match p {
        libp2p::multiaddr::Protocol::P2p(id) => Some(id),
        _ => None,
    })
}

struct Task {
    swarm: libp2p::Swarm<Behaviour>,
    txs: IdentTopic,
    blocks: IdentTopic,
    compact_blocks: IdentTopic,
    events: mpsc::Sender<NetEvent>,
    stats: Arc<NetStats>,
    /// Inbound requests waiting for the node's answer, with their peer.
    inbound: HashMap<u64, (PeerId, ResponseChannel<Vec<u8>>)>,
    outbound: HashMap<OutboundRequestId, u64>,
    /// Per peer: inbound requests taken and not yet answered on the wire (answer written,
    /// or failed).
    answering: HashMap<PeerId, usize>,
    /// Bans waiting for those answers, with the time they take effect regardless.
    bans: HashMap<PeerId, Instant>,
    next_inbound: u64,
    bootstrapped: bool,
    /// [`NetConfig::discover`].
    discover: bool,
}

impl Task {
    async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        let mut discover = tokio::time::interval(Duration::from_secs(30));
        let mut grace = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    Some(c) => self.command(c),
                    None => break,
                },
                ev = self.swarm.select_next_some() => {
                    if !self.event(ev).await {
                        break;
                    }
                }
                _ = discover.tick(), if self.discover => {
                    let _ = self.swarm.behaviour_mut().kad.bootstrap();
                }
                _ = grace.tick(), if !self.bans.is_empty() => {
                    let now = Instant::now();
                    let due: Vec<PeerId> =
                        self.bans.iter().filter(|(_, t)| **t <= now).map(|(p, _)| *p).collect();
                    for p in due {
                        self.ban_now(p);
                    }
                }
            }
        }
    }

    fn ban_now(&mut self, peer: PeerId) {
        self.bans.remove(&peer);
        let b = self.swarm.behaviour_mut();
        b.blocked.block_peer(peer);
        b.kad.remove_peer(&peer);
    }

    /// One of the peer's inbound requests was answered on the wire (or failed): a ban waiting
    /// for it may now take effect.
    fn answered(&mut self, peer: PeerId) {
        if let Some(n) = self.answering.get_mut(&peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.answering.remove(&peer);
            }
        }
        if self.bans.contains_key(&peer) && !self.answering.contains_key(&peer) {
            self.ban_now(peer);
        }
    }

    fn command(&mut self, c: Command) {
        let b = self.swarm.behaviour_mut();
        match c {
            Command::Publish { topic, data } => {
                let t = match topic {
                    Topic::Txs => self.txs.clone(),
                    Topic::Blocks => self.blocks.clone(),
                    Topic::CompactBlocks => self.compact_blocks.clone(),
                };
                match b.gossipsub.publish(t, data) {
                    Ok(_) | Err(gossipsub::PublishError::Duplicate) => {
                        self.stats.gossip_out.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        tracing::debug!("publish failed: {e}");
                        self.stats.publish_failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Command::Validate { id, source, verdict } => {
                let acceptance = match verdict {
                    Verdict::Accept => MessageAcceptance::Accept,
                    Verdict::Ignore => MessageAcceptance::Ignore,
                    Verdict::Reject => MessageAcceptance::Reject,
                };
                let id = MessageId::from(id.0.to_vec());
                b.gossipsub.report_message_validation_result(&id, &source, acceptance);
            }
            Command::Request { peer, data, tag } => {
                let id = b.sync.send_request(&peer, data);
                self.outbound.insert(id, tag);
            }
            Command::Respond { id, data } => {
                if let Some((peer, ch)) = self.inbound.remove(&id) {
                    if b.sync.send_response(ch, data).is_err() {
                        // The connection is gone: nothing will be written.
                        self.answered(peer);
                    }
                }
            }
            Command::Ban(peer) => {
                if self.answering.contains_key(&peer) {
                    self.bans.entry(peer).or_insert_with(|| Instant::now() + BAN_GRACE);
                } else {
                    self.ban_now(peer);
                }
            }
            Command::Unban(peer) => {
                self.bans.remove(&peer);
                b.blocked.unblock_peer(peer);
            }
            Command::Disconnect(peer) => {
                let _ = self.swarm.disconnect_peer_id(peer);
            }
            Command::Dial(addr) => {
                let _ = self.swarm.dial(addr);
            }
            Command::DialPeer { peer, addrs } => {
                let opts = libp2p::swarm::dial_opts::DialOpts::peer_id(peer)
                    .condition(libp2p::swarm::dial_opts::PeerCondition::DisconnectedAndNotDialing)
                    .addresses(addrs)
                    .build();
                let _ = self.swarm.dial(opts);
            }
        }
    }

    /// Sends an event to the node, waiting while its channel is full (back-pressure).
    /// (The future owns a sender clone, so it does not borrow the swarm across the wait.)
    fn emit(&self, e: NetEvent) -> impl std::future::Future<Output = bool> + Send + 'static {
        let events = self.events.clone();
        async move { events.send(e).await.is_ok() }
    }

    async fn event(&mut self, ev: SwarmEvent<BehaviourEvent>) -> bool {
        match ev {
            SwarmEvent::NewListenAddr { address, .. } => {
                let full = address.with(libp2p::multiaddr::Protocol::P2p(*self.swarm.local_peer_id()));
                self.emit(NetEvent::Listening(full)).await
            }
            SwarmEvent::ConnectionEstablished { peer_id, endpoint, num_established, .. } => {
                if !self.bootstrapped && self.discover {
                    self.bootstrapped = true;
                    let _ = self.swarm.behaviour_mut().kad.bootstrap();
                }
                if num_established.get() == 1 {
                    self.stats.peers.fetch_add(1, Ordering::Relaxed);
                    let addr = endpoint.get_remote_address().clone();
                    let inbound = endpoint.is_listener();
                    return self.emit(NetEvent::Connected { peer: peer_id, addr, inbound }).await;
                }
                true
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established, cause, .. } => {
                if let Some(e) = cause {
                    tracing::debug!("the connection to {peer_id} ended: {e}");
                    self.stats.connection_errors.fetch_add(1, Ordering::Relaxed);
                }
                if num_established == 0 {
                    self.stats.peers.fetch_sub(1, Ordering::Relaxed);
                    return self.emit(NetEvent::Disconnected(peer_id)).await;
                }
                true
            }
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(e)) => self.gossip(e).await,
            SwarmEvent::Behaviour(BehaviourEvent::Sync(e)) => self.sync(e).await,
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
                peer_id,
                info,
                ..
            })) => {
                let kad = &mut self.swarm.behaviour_mut().kad;
                let listen: Vec<Multiaddr> = info.listen_addrs.into_iter().take(16).collect();
                if self.discover {
                    for a in &listen {
                        kad.add_address(&peer_id, a.clone());
                    }
                }
                self.emit(NetEvent::Identified { peer: peer_id, listen }).await
            }
            SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, result: Ok(rtt), .. })) => {
                self.emit(NetEvent::Rtt { peer, rtt }).await
            }
            SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, connection, result: Err(e) })) => {
                // Unanswered (or refused) ping: the link is dead or the peer does not ping.
                tracing::info!("closing the connection to {peer}: its ping failed ({e})");
                self.stats.ping_failures.fetch_add(1, Ordering::Relaxed);
                self.swarm.close_connection(connection);
                true
            }
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated {
                peer,
                addresses,
                ..
            })) => {
                if self.discover && !self.swarm.is_connected(&peer) {
                    let _ = self.swarm.dial(addresses.first().clone());
                }
                true
            }
            _ => true,
        }
    }

    async fn gossip(&mut self, e: gossipsub::Event) -> bool {
        match e {
            gossipsub::Event::Message { propagation_source, message_id, message } => {
                self.stats.gossip_in.fetch_add(1, Ordering::Relaxed);
                self.stats.gossip_in_bytes.fetch_add(message.data.len() as u64, Ordering::Relaxed);
                let topic = if message.topic == self.txs.hash() {
                    Topic::Txs
                } else if message.topic == self.blocks.hash() {
                    Topic::Blocks
                } else if message.topic == self.compact_blocks.hash() {
                    Topic::CompactBlocks
                } else {
                    self.swarm.behaviour_mut().gossipsub.report_message_validation_result(
                        &message_id,
                        &propagation_source,
                        MessageAcceptance::Reject,
                    );
                    return true;
                };
                if topic != Topic::Txs {
                    self.stats.gossip_in_block_bytes.fetch_add(message.data.len() as u64, Ordering::Relaxed);
                }
                let Some(id) = MsgId::from_slice(&message_id.0) else {
                    // Ids come from `message_id` (20 bytes); anything else is not ours.
                    self.swarm.behaviour_mut().gossipsub.report_message_validation_result(
                        &message_id,
                        &propagation_source,
                        MessageAcceptance::Ignore,
                    );
                    return true;
                };
                self.emit(NetEvent::Gossip { topic, id, source: propagation_source, data: message.data })
                    .await
            }
            gossipsub::Event::SlowPeer { peer_id, .. } => {
                tracing::debug!("slow peer {peer_id}");
                self.stats.slow_peer.fetch_add(1, Ordering::Relaxed);
                true
            }
            _ => true,
        }
    }

    async fn sync(&mut self, e: request_response::Event<Vec<u8>, Vec<u8>>) -> bool {
        match e {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request, channel, .. } => {
                    self.stats.requests_in.fetch_add(1, Ordering::Relaxed);
                    let id = self.next_inbound;
                    self.next_inbound += 1;
                    self.inbound.insert(id, (peer, channel));
                    *self.answering.entry(peer).or_insert(0) += 1;
                    self.emit(NetEvent::Request { peer, id, data: request }).await
                }
                request_response::Message::Response { request_id, response } => {
                    self.stats.sync_in_bytes.fetch_add(response.len() as u64, Ordering::Relaxed);
                    let Some(tag) = self.outbound.remove(&request_id) else { return true };
                    self.emit(NetEvent::Response { peer, tag, data: response }).await
                }
            },
            request_response::Event::OutboundFailure { peer, request_id, error, .. } => {
                let Some(tag) = self.outbound.remove(&request_id) else { return true };
                self.emit(NetEvent::RequestFailed { peer, tag, error: error.to_string() }).await
            }
            request_response::Event::InboundFailure { peer, .. }
            | request_response::Event::ResponseSent { peer, .. } => {
                self.answered(peer);
                true
            }
        }
    }
}
