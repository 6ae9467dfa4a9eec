//! [`Protocol`]: the state and the step function.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use scalechain_types::codec::Decode;
use scalechain_types::{Block, Hash, Tx};

use super::pool::{Next as PoolNext, PoolSync};
use super::rebuild::{Answered, Arrival, Rebuilds};
use super::{
    BlockOrigin, BlockVerdict, ChainView, Config, Event, Input, MsgId, Output, TxOrigin, TxsDone, Verdict,
    BLOCKS_RESPONSE_BYTES,
};
use crate::msg::{
    decode_tx_batch, encode_tx_batch, group_for_batches, refused, CompactBlock, Hello, Request, Response,
    Role, Topic, MAX_HEADERS, MAX_POOL_TXIDS, PROTOCOL_VERSION,
};
use crate::score::{Offence, PeerBook, RateLimit, Standing};
use crate::sync::{Action, SyncState};

/// What the machine knows of a connected peer.
#[derive(Clone, Debug)]
pub struct Peer {
    /// Its address, as the reactor gave it.
    pub addr: String,
    /// Its role, once its handshake came.
    pub role: Option<Role>,
    /// The tip height it last claimed.
    pub height: u64,
    /// Its score after its last penalty (0 is good; bans happen at -100).
    pub score: i32,
    /// Its inbound request budget.
    limit: RateLimit,
    /// True if it dialled us.
    pub inbound: bool,
    /// The caller's clock when it connected.
    pub connected_ms: u64,
    /// The caller's clock when this node last asked for its `Hello`.
    hello_asked_ms: u64,
    /// The caller's clock when it last gave this node a block it did not have (by gossip or
    /// sync) that was connected or stored on a side branch; none before the first.
    pub last_block_ms: Option<u64>,
    /// Its clock less this node's, ms, as the latest block it relayed by gossip shows it: the
    /// block's time less the caller's clock when it came (a fresh block's time is its miner's
    /// clock, a few seconds old at most); none before the first.
    pub clock_offset_ms: Option<i64>,
    /// A disconnection was asked for (evicted or timed out): it no longer counts.
    closing: bool,
    /// Its mempool being fetched (after the handshake).
    pool: Option<PoolSync>,
    /// Mempool sync was started with it (after the handshake, once per connection).
    pool_started: bool,
    /// It answered a mempool-sync request against the rules: its mempool is not fetched
    /// again on this connection.
    pool_misbehaved: bool,
}

/// What an outbound request was, for when its answer comes.
#[derive(Clone, Debug)]
enum Asked {
    Hello,
    Headers,
    Blocks(Vec<Hash>),
    /// An inventory page of the peer's mempool.
    PoolTxids {
        from: Hash,
        max: usize,
    },
    /// Transactions of the peer's mempool.
    Txs(Vec<Hash>),
    /// What the rebuild of a compact block (by its message) lacks, from the block the peer
    /// relayed.
    BlockTxs(MsgId),
}

/// The peer protocol of one node (see the module documentation).
#[derive(Debug)]
pub struct Protocol<K> {
    cfg: Config,
    peers: BTreeMap<K, Peer>,
    book: PeerBook<K>,
    sync: SyncState<K>,
    asked: BTreeMap<u64, (K, Asked)>,
    next_tag: u64,
    outbox: VecDeque<Output<K>>,
    /// Txids asked of some peer by mempool sync and not answered yet.
    pool_inflight: BTreeSet<Hash>,
    /// Compact blocks waiting for transactions (`super::rebuild`).
    rebuilds: Rebuilds<K>,
    /// The tip when transactions from peers were first refused for want of room since the
    /// last mempool sync: once the tip moves (a block took pooled transactions out), the
    /// peers' mempools are fetched again.
    crowded_at: Option<Hash>,
    /// The peers' median clock offset was past `Config::max_clock_offset_ms` at the last tick.
    clock_out: bool,
}

impl<K: Ord + Clone + std::hash::Hash + std::fmt::Debug> Protocol<K> {
    /// A machine with no peers.
    pub fn new(cfg: Config) -> Self {
        let sync = SyncState::new(cfg.sync);
        let book = PeerBook::new(cfg.book_entries);
        Protocol {
            cfg,
            peers: BTreeMap::new(),
            book,
            sync,
            asked: BTreeMap::new(),
            next_tag: 1,
            outbox: VecDeque::new(),
            pool_inflight: BTreeSet::new(),
            rebuilds: Rebuilds::new(),
            crowded_at: None,
            clock_out: false,
        }
    }

    /// Its settings.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Takes one input at the caller's clock `now_ms`; the outputs wait in the outbox.
    pub fn step(&mut self, now_ms: u64, input: Input<K>, chain: &impl ChainView) {
        match input {
            Input::Connected { peer, addr, inbound } => self.connected(now_ms, peer, addr, inbound, chain),
            Input::Disconnected { peer } => self.disconnected(peer),
            Input::Gossip { topic, id, source, data } => self.gossip(now_ms, topic, id, source, &data, chain),
            Input::Request { peer, id, data } => self.serve(now_ms, peer, id, &data, chain),
            Input::Response { peer, tag, data } => self.answer(now_ms, peer, tag, &data, chain),
            Input::RequestFailed { peer, tag, error } => self.failed(peer, tag, &error),
            Input::BlockDone { hash, height, origin, verdict } => {
                self.block_done(now_ms, hash, height, origin, verdict)
            }
            Input::TxsDone(batches) => self.txs_done(now_ms, batches, chain),
            Input::Tick => self.tick(now_ms, chain),
        }
    }

    /// The outbox, oldest first (each output once).
    pub fn drain(&mut self) -> impl Iterator<Item = Output<K>> + '_ {
        self.outbox.drain(..)
    }

    /// Connected peers, in key order.
    pub fn peers(&self) -> impl Iterator<Item = (&K, &Peer)> + '_ {
        self.peers.iter()
    }

    /// The peer's current score (recovered with time; 0 for a peer never penalised).
    pub fn score(&self, peer: &K, now_ms: u64) -> i32 {
        self.book.score(peer, now_ms)
    }

    /// True while the peer is banned.
    pub fn is_banned(&self, peer: &K, now_ms: u64) -> bool {
        self.book.is_banned(peer, now_ms)
    }

    /// Takes back what a previous run knew of a peer: its ban, if it lasts past `now_ms`, or
    /// its score (see [`PeerBook::restore`]).
    pub fn restore_peer(&mut self, peer: &K, score: i32, banned_until_ms: Option<u64>, now_ms: u64) {
        self.book.restore(peer, score, banned_until_ms, now_ms);
    }

    /// The median of the connected peers' clock offsets ([`Peer::clock_offset_ms`]; of an even
    /// count, the upper of the two middle ones) and how many peers have one; `None` while none
    /// has.
    pub fn clock_offset(&self) -> Option<(i64, usize)> {
        let mut offsets: Vec<i64> =
            self.peers.values().filter(|p| !p.closing).filter_map(|p| p.clock_offset_ms).collect();
        offsets.sort_unstable();
        offsets.get(offsets.len() / 2).map(|m| (*m, offsets.len()))
    }

    /// Notes the clock offset a block header relayed by `peer` shows.
    fn clock_sample(&mut self, now_ms: u64, peer: &K, block_time: u64) {
        if let Some(p) = self.peers.get_mut(peer) {
            let offset = i128::from(block_time) - i128::from(now_ms);
            p.clock_offset_ms =
                Some(i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX }));
        }
    }

    /// Compact blocks waiting for the transactions this node's mempool lacked.
    pub fn rebuilding(&self) -> usize {
        self.rebuilds.len()
    }

    /// Blocks that sync is fetching or has queued.
    pub fn sync_pending(&self) -> usize {
        self.sync.pending()
    }

    fn push(&mut self, o: Output<K>) {
        self.outbox.push_back(o);
    }

    fn event(&mut self, e: Event<K>) {
        self.outbox.push_back(Output::Event(e));
    }

    fn hello(&self, chain: &impl ChainView) -> Hello {
        let (tip_height, tip_hash) = chain.tip();
        Hello {
            version: PROTOCOL_VERSION,
            chain_id: chain.chain_id(),
            role: self.cfg.role,
            tip_height,
            tip_hash,
            agent: self.cfg.agent.clone(),
        }
    }

    fn request(&mut self, peer: K, request: Request, asked: Asked) {
        let tag = self.next_tag;
        self.next_tag += 1;
        self.asked.insert(tag, (peer.clone(), asked));
        self.push(Output::Request { peer, tag, request });
    }

    fn respond(&mut self, id: u64, response: Response) {
        self.push(Output::Respond { id, response });
    }

    /// Records an offence: an event, and a ban when the score reaches the threshold.
    fn penalise(&mut self, now_ms: u64, peer: &K, offence: Offence) {
        let standing = self.book.penalise(peer, offence, now_ms);
        let score = self.book.score(peer, now_ms);
        let score = match standing {
            Standing::Keep => score,
            Standing::Ban { .. } => -crate::score::BAN_SCORE,
        };
        if let Some(p) = self.peers.get_mut(peer) {
            p.score = score;
        }
        self.event(Event::Penalised { peer: peer.clone(), offence, score });
        if let Standing::Ban { until_ms } = standing {
            self.event(Event::Banned { peer: peer.clone(), until_ms });
            self.push(Output::Ban { peer: peer.clone(), until_ms });
        }
    }

    fn connected(&mut self, now_ms: u64, peer: K, addr: String, inbound: bool, chain: &impl ChainView) {
        if let Some(until_ms) = self.book.banned_until(&peer, now_ms) {
            self.push(Output::Ban { peer, until_ms });
            return;
        }
        let per_s = self.cfg.requests_per_s;
        let limit = RateLimit::new(per_s, per_s * 4.0, now_ms);
        let score = self.book.score(&peer, now_ms);
        let p = Peer {
            addr: addr.clone(),
            role: None,
            height: 0,
            score,
            limit,
            inbound,
            connected_ms: now_ms,
            hello_asked_ms: now_ms,
            last_block_ms: None,
            clock_offset_ms: None,
            closing: false,
            pool: None,
            pool_started: false,
            pool_misbehaved: false,
        };
        self.peers.insert(peer.clone(), p);
        self.event(Event::Connected { peer: peer.clone(), addr });
        if self.make_room(now_ms, &peer) {
            let hello = self.hello(chain);
            self.request(peer, Request::Hello(hello), Asked::Hello);
        }
    }

    /// Keeps at most `max_peers` peers counting the newcomer: past it, evicts the peer that has
    /// waited longest without completing the handshake, else the inbound peer with the lowest
    /// score below 0 (ties: the latest to connect), else turns the newcomer away. False if the
    /// newcomer itself goes.
    fn make_room(&mut self, now_ms: u64, newcomer: &K) -> bool {
        let open = self.peers.values().filter(|p| !p.closing).count();
        if open <= self.cfg.max_peers {
            return true;
        }
        let victim = {
            let others = || self.peers.iter().filter(|(k, p)| !p.closing && *k != newcomer);
            let idle = others().filter(|(_, p)| p.role.is_none()).min_by_key(|(_, p)| p.connected_ms);
            let worst = || {
                others()
                    .filter(|(k, p)| p.inbound && self.book.score(k, now_ms) < 0)
                    .min_by_key(|(k, p)| (self.book.score(k, now_ms), std::cmp::Reverse(p.connected_ms)))
            };
            idle.or_else(worst).map(|(k, _)| k.clone()).unwrap_or_else(|| newcomer.clone())
        };
        self.disconnect(&victim, "evicted for a newcomer");
        victim != *newcomer
    }

    fn disconnect(&mut self, peer: &K, reason: &'static str) {
        if let Some(p) = self.peers.get_mut(peer) {
            if !p.closing {
                p.closing = true;
                tracing::debug!("disconnecting {peer:?}: {reason}");
                self.push(Output::Disconnect { peer: peer.clone(), reason });
            }
        }
    }

    fn disconnected(&mut self, peer: K) {
        self.sync.peer_gone(&peer);
        // Answers from a peer that left never come: forget what we asked it.
        let gone: Vec<Asked> =
            self.asked.values().filter(|(p, _)| *p == peer).map(|(_, a)| a.clone()).collect();
        self.asked.retain(|_, (p, _)| *p != peer);
        for a in &gone {
            match a {
                Asked::Txs(hashes) => {
                    for h in hashes {
                        self.pool_inflight.remove(h);
                    }
                }
                Asked::BlockTxs(id) => self.rebuild_failed(id),
                _ => {}
            }
        }
        if self.peers.remove(&peer).is_some() {
            self.event(Event::Disconnected { peer });
        }
    }

    /// The handshake checks out: learn the peer's role and tip, and start fetching its
    /// mempool (neither side a bootstrap node, once per connection).
    fn learn(&mut self, now_ms: u64, peer: &K, h: &Hello, chain: &impl ChainView) {
        self.sync.peer_tip(peer.clone(), h.tip_height);
        self.sync.peer_tip_unknown(peer.clone(), !chain.has_block(&h.tip_hash));
        let height = self.sync.peer_height(peer).unwrap_or(h.tip_height);
        let pool_sync =
            self.cfg.role != Role::Bootstrap && h.role != Role::Bootstrap && self.cfg.pool_sync.max_txs > 0;
        let mut start = false;
        // A `Hello` asked again (`Config::status_every_ms`) only refreshes the peer's tip.
        let mut first = true;
        let mut moved = false;
        if let Some(p) = self.peers.get_mut(peer) {
            first = p.role.is_none();
            moved = p.height != height;
            p.role = Some(h.role);
            p.height = height;
            if pool_sync && !p.pool_started {
                p.pool_started = true;
                p.pool = Some(PoolSync::new());
                start = true;
            }
        }
        if first {
            self.event(Event::Handshake { peer: peer.clone(), role: h.role, height });
        } else if moved {
            self.event(Event::Height { peer: peer.clone(), height });
        }
        if start {
            self.pool_step(now_ms, peer, chain);
        }
    }

    /// Sends the peer's next mempool-sync request, if one is due.
    fn pool_step(&mut self, now_ms: u64, peer: &K, chain: &impl ChainView) {
        let cfg = self.cfg.pool_sync;
        let Some(p) = self.peers.get_mut(peer) else { return };
        let Some(s) = p.pool.as_mut() else { return };
        let next = s.next(&cfg, now_ms, &self.pool_inflight, |h| chain.has_tx(h));
        match &next {
            PoolNext::Wait => return,
            PoolNext::Done => {
                p.pool = None;
                return;
            }
            PoolNext::Inventory(_) | PoolNext::Txs(_) => {
                s.busy = true;
                s.last_ms = Some(now_ms);
            }
        }
        match next {
            PoolNext::Inventory(from) => {
                let max = MAX_POOL_TXIDS;
                let request = Request::GetPoolTxids { from, max: max as u32 };
                self.request(peer.clone(), request, Asked::PoolTxids { from, max });
            }
            PoolNext::Txs(hashes) => {
                self.pool_inflight.extend(hashes.iter().copied());
                self.request(peer.clone(), Request::GetTxs(hashes.clone()), Asked::Txs(hashes));
            }
            PoolNext::Wait | PoolNext::Done => {}
        }
    }

    /// Starts mempool sync again, with a new budget, with every peer not syncing now that
    /// never answered it against the rules (the caller sends the first requests).
    fn resync_pools(&mut self) {
        for p in self.peers.values_mut() {
            if p.pool_started && !p.pool_misbehaved && p.pool.is_none() && !p.closing {
                p.pool = Some(PoolSync::new());
            }
        }
    }

    /// Ends the sync with the peer's mempool (a request was refused or failed: a later
    /// resync may try again).
    fn pool_stop(&mut self, peer: &K) {
        if let Some(p) = self.peers.get_mut(peer) {
            p.pool = None;
        }
    }

    /// Ends the sync with the peer's mempool for good on this connection: its answer broke
    /// the rules (the caller penalises it).
    fn pool_refuse(&mut self, peer: &K) {
        if let Some(p) = self.peers.get_mut(peer) {
            p.pool = None;
            p.pool_misbehaved = true;
        }
    }

    fn same_chain(h: &Hello, chain: &impl ChainView) -> bool {
        h.version == PROTOCOL_VERSION && h.chain_id == chain.chain_id()
    }

    fn gossip(
        &mut self,
        now_ms: u64,
        topic: Topic,
        id: MsgId,
        source: K,
        data: &[u8],
        chain: &impl ChainView,
    ) {
        if self.book.is_banned(&source, now_ms) {
            self.push(Output::Validate { id, source, verdict: Verdict::Ignore });
            return;
        }
        match topic {
            Topic::Txs => {
                let max_txs = self.cfg.max_txs_per_message;
                let decoded = self.decode_gossip(now_ms, id, &source, "tx batch", data, |d| {
                    decode_tx_batch(d, max_txs).map_err(|e| e.to_string())
                });
                match decoded {
                    Some(txs) if txs.is_empty() => {
                        self.push(Output::Validate { id, source, verdict: Verdict::Ignore })
                    }
                    Some(txs) => {
                        self.push(Output::SubmitTxs { txs, origin: TxOrigin::Gossip { source, id } })
                    }
                    None => {}
                }
            }
            Topic::CompactBlocks => self.compact_block(now_ms, id, source, data, chain),
            Topic::Blocks => {
                let decoded = self.decode_gossip(now_ms, id, &source, "block", data, |d| {
                    Block::decode(d).map_err(|e| e.to_string())
                });
                if let Some(block) = decoded {
                    // Only a connected peer's claim counts: sync asks whoever claims most.
                    if self.peers.contains_key(&source) {
                        self.sync.peer_tip(source.clone(), block.header.height);
                        self.clock_sample(now_ms, &source, block.header.time);
                    }
                    self.push(Output::SubmitBlock { block, origin: BlockOrigin::Gossip { source, id } });
                }
            }
        }
    }

    /// A gossip payload within the message bound, decoded; `None` (the message rejected and
    /// its sender penalised `malformed`) for one too large or that does not decode.
    fn decode_gossip<T>(
        &mut self,
        now_ms: u64,
        id: MsgId,
        source: &K,
        what: &str,
        data: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Option<T> {
        let max_bytes = self.cfg.max_message_bytes;
        let decoded = if data.len() > max_bytes {
            Err(format!("{} bytes, at most {max_bytes}", data.len()))
        } else {
            decode(data)
        };
        match decoded {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!("malformed {what} from {source:?}: {e}");
                self.push(Output::Validate { id, source: source.clone(), verdict: Verdict::Reject });
                self.penalise(now_ms, source, Offence::Malformed);
                None
            }
        }
    }

    /// A compact block from gossip: decoded, its height noted as its relaying peer's claim,
    /// then judged by the rebuilds ([`Rebuilds::on_compact`]): submitted when the mempool
    /// completes it, else its missing transactions asked of the peer that relayed it, or its
    /// message dropped (sync fetches the block) or rejected for want of work.
    fn compact_block(&mut self, now_ms: u64, id: MsgId, source: K, data: &[u8], chain: &impl ChainView) {
        let decoded = self.decode_gossip(now_ms, id, &source, "compact block", data, |d| {
            CompactBlock::decode(d).map_err(|e| e.to_string())
        });
        let Some(compact) = decoded else { return };
        if self.peers.contains_key(&source) {
            self.sync.peer_tip(source.clone(), compact.header.height);
            self.clock_sample(now_ms, &source, compact.header.time);
        }
        let askable = self.peers.get(&source).is_some_and(|p| !p.closing);
        match self.rebuilds.on_compact(now_ms, id, &source, askable, compact, chain) {
            Arrival::Ignore => self.push(Output::Validate { id, source, verdict: Verdict::Ignore }),
            Arrival::Complete(block) => {
                self.push(Output::SubmitBlock { block, origin: BlockOrigin::Gossip { source, id } })
            }
            Arrival::BadWork(hash) => {
                tracing::debug!("compact block {hash} from {source:?} lacks the work consensus requires");
                self.push(Output::Validate { id, source: source.clone(), verdict: Verdict::Reject });
                self.penalise(now_ms, &source, Offence::InvalidBlock);
            }
            Arrival::Fetch { hash, missing } => {
                let request = Request::GetBlockTxs { block: hash, indexes: missing };
                self.request(source, request, Asked::BlockTxs(id));
            }
        }
    }

    /// The transactions a rebuild asked for came ([`Rebuilds::on_answer`]): the block goes to
    /// the block worker, or, if the answer is short (cut at the response bound), sync fetches
    /// the whole block. An answer with a transaction that was not asked for (txid or wtxid)
    /// costs `malformed`.
    fn rebuild_answered(
        &mut self,
        now_ms: u64,
        peer: &K,
        id: &MsgId,
        got: Vec<Tx>,
        kind: scalechain_types::HashKind,
    ) {
        match self.rebuilds.on_answer(id, got, kind) {
            None => {}
            Some(Answered::Block { block, msg }) => self.push(Output::SubmitBlock {
                block,
                origin: BlockOrigin::Gossip { source: msg.source, id: msg.id },
            }),
            Some(Answered::Short(msg)) => {
                self.push(Output::Validate { id: msg.id, source: msg.source, verdict: Verdict::Ignore })
            }
            Some(Answered::Malformed(msg)) => {
                self.push(Output::Validate { id: msg.id, source: msg.source, verdict: Verdict::Ignore });
                self.penalise(now_ms, peer, Offence::Malformed);
            }
        }
    }

    /// A rebuild's request was refused or failed, or its peer left: its message is dropped
    /// and sync fetches the block (the peer's claim to it stands until it fails to deliver).
    fn rebuild_failed(&mut self, id: &MsgId) {
        if let Some(msg) = self.rebuilds.remove(id) {
            self.push(Output::Validate { id: msg.id, source: msg.source, verdict: Verdict::Ignore });
        }
    }

    /// An inbound request: the rate limit first, then decoding, then the answer.
    fn serve(&mut self, now_ms: u64, peer: K, id: u64, data: &[u8], chain: &impl ChainView) {
        if self.book.is_banned(&peer, now_ms) {
            return self.respond(id, refused("banned"));
        }
        let Some(p) = self.peers.get_mut(&peer) else {
            return self.respond(id, refused("not connected"));
        };
        if !p.limit.take(1.0, now_ms) {
            self.respond(id, refused("rate limit"));
            return self.penalise(now_ms, &peer, Offence::RateLimited);
        }
        let request = match Request::decode(data) {
            Ok(r) => r,
            Err(e) => {
                self.respond(id, refused(format!("malformed request: {e}")));
                return self.penalise(now_ms, &peer, Offence::Malformed);
            }
        };
        match request {
            Request::Hello(h) => {
                if Self::same_chain(&h, chain) {
                    let ours = self.hello(chain);
                    self.respond(id, Response::Hello(ours));
                    self.learn(now_ms, &peer, &h, chain);
                } else {
                    // The refusal goes out before the ban; the reactor bans only once it is written.
                    self.respond(id, refused("wrong chain"));
                    self.penalise(now_ms, &peer, Offence::WrongChain);
                }
            }
            Request::GetHeaders { locator, max } => {
                let n = usize::try_from(max).unwrap_or(usize::MAX).min(MAX_HEADERS);
                let headers = chain.headers_after(&locator, n);
                self.respond(id, Response::Headers(headers));
            }
            Request::GetBlocks(hashes) => self.push(Output::ServeBlocks { id, hashes }),
            Request::GetTxs(txids) => {
                let txs = chain.pooled_txs(&txids, BLOCKS_RESPONSE_BYTES);
                self.respond(id, Response::Txs(txs));
            }
            Request::GetPoolTxids { from, max } => {
                let n = usize::try_from(max).unwrap_or(usize::MAX).min(MAX_POOL_TXIDS);
                self.respond(id, Response::PoolTxids(chain.pool_txids(&from, n)));
            }
            Request::GetBlockTxs { block, indexes } => {
                self.push(Output::ServeBlockTxs { id, block, indexes })
            }
        }
    }

    /// The answer to one of our requests.
    fn answer(&mut self, now_ms: u64, peer: K, tag: u64, data: &[u8], chain: &impl ChainView) {
        let Some(asked) = self.take_asked(&peer, tag) else { return };
        let response = match Response::decode(data) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("malformed response from {peer:?}: {e}");
                self.abandon(&peer, &asked);
                return self.penalise(now_ms, &peer, Offence::Malformed);
            }
        };
        match (asked, response) {
            (Asked::Hello, Response::Hello(h)) => {
                if Self::same_chain(&h, chain) {
                    self.learn(now_ms, &peer, &h, chain);
                } else {
                    self.penalise(now_ms, &peer, Offence::WrongChain);
                }
            }
            (Asked::Headers, Response::Headers(headers)) => {
                let kind = chain.hash_kind();
                let r = self.sync.on_headers(&peer, &headers, kind, |h| chain.has_block(h));
                if let Err(o) = r {
                    self.penalise(now_ms, &peer, o);
                }
            }
            (Asked::Blocks(asked), Response::Blocks(blocks)) => {
                let kind = chain.hash_kind();
                let wanted: BTreeSet<Hash> = asked.iter().copied().collect();
                let mut delivered = BTreeSet::new();
                let mut unasked = false;
                for block in blocks {
                    let h = block.header.hash(kind);
                    if !wanted.contains(&h) || delivered.contains(&h) {
                        unasked = true;
                        continue;
                    }
                    delivered.insert(h);
                    self.push(Output::SubmitBlock { block, origin: BlockOrigin::Sync(peer.clone()) });
                }
                self.sync.on_blocks_answer(&peer, &asked, &delivered);
                if unasked {
                    self.penalise(now_ms, &peer, Offence::Malformed);
                }
            }
            (Asked::PoolTxids { from, max }, Response::PoolTxids(txids)) => {
                let cfg = self.cfg.pool_sync;
                let ok = match self.peers.get_mut(&peer).and_then(|p| p.pool.as_mut()) {
                    Some(s) => s.on_inventory(&cfg, from, max, &txids, |h| chain.has_tx(h)),
                    None => true,
                };
                if ok {
                    self.pool_step(now_ms, &peer, chain);
                } else {
                    self.pool_refuse(&peer);
                    self.penalise(now_ms, &peer, Offence::Malformed);
                }
            }
            (Asked::Txs(asked), Response::Txs(txs)) => {
                for h in &asked {
                    self.pool_inflight.remove(h);
                }
                let kind = chain.hash_kind();
                let wanted: BTreeSet<Hash> = asked.iter().copied().collect();
                let mut delivered = BTreeSet::new();
                let mut bytes = 0usize;
                let mut unasked = false;
                let mut keep = Vec::with_capacity(txs.len());
                for tx in txs {
                    let h = tx.txid(kind);
                    if !wanted.contains(&h) || !delivered.insert(h) {
                        unasked = true;
                        continue;
                    }
                    bytes = bytes.saturating_add(tx.encoded_len());
                    keep.push(tx);
                }
                if let Some(s) = self.peers.get_mut(&peer).and_then(|p| p.pool.as_mut()) {
                    s.busy = false;
                    s.bytes = s.bytes.saturating_add(bytes);
                }
                if !keep.is_empty() {
                    self.push(Output::SubmitTxs { txs: keep, origin: TxOrigin::Pool(peer.clone()) });
                }
                if unasked {
                    self.pool_refuse(&peer);
                    self.penalise(now_ms, &peer, Offence::Malformed);
                } else {
                    self.pool_step(now_ms, &peer, chain);
                }
            }
            (Asked::BlockTxs(id), Response::BlockTxs(txs)) => {
                self.rebuild_answered(now_ms, &peer, &id, txs, chain.hash_kind())
            }
            (asked, Response::Refused(why)) => {
                tracing::debug!("{peer:?} refused: {why}");
                self.abandon(&peer, &asked);
            }
            (asked, _) => {
                // An answer of the wrong kind.
                self.abandon(&peer, &asked);
                if matches!(asked, Asked::PoolTxids { .. } | Asked::Txs(_)) {
                    self.pool_refuse(&peer);
                }
                self.penalise(now_ms, &peer, Offence::Malformed);
            }
        }
    }

    /// A request will not be answered usefully: sync may ask again (elsewhere).
    fn abandon(&mut self, peer: &K, asked: &Asked) {
        match asked {
            Asked::Hello => {}
            Asked::Headers => self.sync.header_failed(peer),
            Asked::Blocks(hashes) => self.sync.on_blocks_answer(peer, hashes, &BTreeSet::new()),
            Asked::PoolTxids { .. } => self.pool_stop(peer),
            Asked::Txs(hashes) => {
                for h in hashes {
                    self.pool_inflight.remove(h);
                }
                self.pool_stop(peer);
            }
            Asked::BlockTxs(id) => self.rebuild_failed(id),
        }
    }

    fn failed(&mut self, peer: K, tag: u64, error: &str) {
        if let Some(asked) = self.take_asked(&peer, tag) {
            tracing::debug!("request to {peer:?} failed: {error}");
            self.abandon(&peer, &asked);
        }
    }

    /// What request `tag` to `peer` asked. Unknown tags (late answers after the peer was
    /// forgotten) and answers from another peer give nothing and change nothing.
    fn take_asked(&mut self, peer: &K, tag: u64) -> Option<Asked> {
        match self.asked.get(&tag) {
            Some((p, _)) if p == peer => self.asked.remove(&tag).map(|(_, a)| a),
            _ => None,
        }
    }

    fn block_done(&mut self, now_ms: u64, hash: Hash, height: u64, origin: BlockOrigin<K>, v: BlockVerdict) {
        self.sync.on_block(&hash);
        let punish = matches!(v, BlockVerdict::Invalid { permanent: true, .. });
        if let BlockVerdict::Invalid { permanent, reason } = &v {
            tracing::info!(
                "block {height} {hash}: {reason}{}",
                if *permanent { "" } else { " (not penalised)" }
            );
        }
        let mut delivered = None;
        let delivered_by = match &origin {
            BlockOrigin::Gossip { source, .. } => Some(source),
            BlockOrigin::Sync(peer) => Some(peer),
            BlockOrigin::Local { .. } => None,
        };
        if let Some(peer) =
            delivered_by.filter(|_| matches!(v, BlockVerdict::Connected | BlockVerdict::SideBranch))
        {
            if let Some(p) = self.peers.get_mut(peer) {
                // It had the block: its claim is at least that height (sync reports a change on
                // the next tick).
                p.last_block_ms = Some(now_ms);
                let peer = peer.clone();
                self.sync.peer_tip(peer.clone(), height);
                delivered = Some(Event::Delivered { peer, height, at_ms: now_ms });
            }
        }
        match origin {
            BlockOrigin::Gossip { source, id } => {
                let verdict = match v {
                    BlockVerdict::Connected | BlockVerdict::SideBranch => Verdict::Accept,
                    _ if punish => Verdict::Reject,
                    _ => Verdict::Ignore,
                };
                self.push(Output::Validate { id, source: source.clone(), verdict });
                if punish {
                    self.penalise(now_ms, &source, Offence::InvalidBlock);
                }
            }
            BlockOrigin::Sync(peer) => {
                if punish {
                    self.penalise(now_ms, &peer, Offence::InvalidBlock);
                }
            }
            BlockOrigin::Local { topic, payload } => {
                if v == BlockVerdict::Connected {
                    self.push(Output::Publish { topic, data: payload });
                }
            }
        }
        if let Some(e) = delivered {
            self.event(e);
        }
    }

    fn txs_done(&mut self, now_ms: u64, batches: Vec<TxsDone<K>>, chain: &impl ChainView) {
        let mut relay: Vec<Arc<Tx>> = Vec::new();
        let mut released: Vec<Arc<Tx>> = Vec::new();
        let mut from_gossip: Vec<Arc<Tx>> = Vec::new();
        for b in batches {
            let from_peer = matches!(b.origin, TxOrigin::Gossip { .. } | TxOrigin::Pool(_));
            if from_peer && b.crowded > 0 && self.crowded_at.is_none() {
                self.crowded_at = Some(chain.tip().1);
            }
            match b.origin {
                TxOrigin::Gossip { source, id } => {
                    let verdict = if b.invalid {
                        Verdict::Reject
                    } else if !b.admitted.is_empty() {
                        Verdict::Accept
                    } else {
                        Verdict::Ignore
                    };
                    self.push(Output::Validate { id, source: source.clone(), verdict });
                    if b.invalid {
                        self.penalise(now_ms, &source, Offence::InvalidTx);
                    }
                    from_gossip.extend(b.admitted);
                }
                TxOrigin::Local => relay.extend(b.admitted),
                TxOrigin::Released => released.extend(b.admitted),
                TxOrigin::Pool(source) => {
                    if b.invalid {
                        self.penalise(now_ms, &source, Offence::InvalidTx);
                    }
                }
            }
        }
        if !released.is_empty() {
            // The parents gossip brought this round go out again beside their children.
            let kind = chain.hash_kind();
            let spent: BTreeSet<Hash> =
                released.iter().flat_map(|t| t.inputs.iter().map(|i| i.prev.txid)).collect();
            relay.extend(from_gossip.into_iter().filter(|t| spent.contains(&t.txid(kind))));
            relay.extend(released);
        }
        // What one verification round admitted from the API is published in as few messages
        // as the limits allow.
        let max_bytes = self.cfg.max_message_bytes.saturating_sub(1024).max(1024);
        let max_txs = self.cfg.max_txs_per_message.max(1);
        let groups: Vec<Vec<u8>> = group_for_batches(&relay, max_bytes, max_txs)
            .into_iter()
            .map(|g| encode_tx_batch(g.iter().map(|t| &**t)))
            .collect();
        for data in groups {
            self.push(Output::Publish { topic: Topic::Txs, data });
        }
    }

    fn tick(&mut self, now_ms: u64, chain: &impl ChainView) {
        for peer in self.book.expire(now_ms) {
            self.push(Output::Unban { peer });
        }
        // Rebuilds whose transactions are late: their messages are dropped, sync fetches.
        for msg in self.rebuilds.expire(now_ms) {
            self.push(Output::Validate { id: msg.id, source: msg.source, verdict: Verdict::Ignore });
        }
        // Connections that never completed the handshake are closed.
        let timeout = self.cfg.hello_timeout_ms;
        let silent: Vec<K> = self
            .peers
            .iter()
            .filter(|(_, p)| {
                p.role.is_none() && !p.closing && now_ms.saturating_sub(p.connected_ms) >= timeout
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in silent {
            self.disconnect(&k, "handshake timeout");
        }
        // Handshaken peers whose tip was last asked for long enough ago are asked again (one
        // `Hello` in flight per peer at most).
        let every = self.cfg.status_every_ms;
        if every > 0 {
            let due: Vec<K> = self
                .peers
                .iter()
                .filter(|(k, p)| {
                    p.role.is_some()
                        && !p.closing
                        && now_ms.saturating_sub(p.hello_asked_ms) >= every
                        && !self.asked.values().any(|(q, a)| q == *k && matches!(a, Asked::Hello))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for k in due {
                if let Some(p) = self.peers.get_mut(&k) {
                    p.hello_asked_ms = now_ms;
                }
                let hello = self.hello(chain);
                self.request(k, Request::Hello(hello), Asked::Hello);
            }
        }
        // Seed 000's peer server (the bootstrap role) answers discovery only: it fetches no
        // chain, so it never plans a request (it still learns its peers' tips from their
        // handshakes).
        if self.cfg.role != Role::Bootstrap {
            let (height, _) = chain.tip();
            for action in self.sync.tick(now_ms, height, || chain.locator()) {
                let asked = match &action {
                    Action::GetHeaders(..) => Asked::Headers,
                    Action::GetBlocks(_, hashes) => Asked::Blocks(hashes.clone()),
                };
                let (peer, request) = action.into_request();
                self.request(peer, request, asked);
            }
        }
        // Transactions from peers were refused for want of room and a block has made some:
        // fetch the peers' mempools again (those not being fetched already).
        if self.crowded_at.is_some_and(|at| at != chain.tip().1) {
            self.crowded_at = None;
            self.resync_pools();
        }
        // Mempool sync waiting for its pace.
        let syncing: Vec<K> = self
            .peers
            .iter()
            .filter(|(_, p)| p.pool.as_ref().is_some_and(|s| !s.busy))
            .map(|(k, _)| k.clone())
            .collect();
        for k in syncing {
            self.pool_step(now_ms, &k, chain);
        }
        let mut changed = Vec::new();
        for (k, p) in self.peers.iter_mut() {
            if let Some(h) = self.sync.peer_height(k) {
                if h != p.height {
                    p.height = h;
                    changed.push((k.clone(), h));
                }
            }
        }
        for (peer, height) in changed {
            self.event(Event::Height { peer, height });
        }
        // The peers' clocks against ours: reported when the median crosses the bound.
        if let Some((median, peers)) = self.clock_offset() {
            let out = median.unsigned_abs() > self.cfg.max_clock_offset_ms;
            if out != self.clock_out {
                self.clock_out = out;
                self.event(Event::Clock { median_offset_ms: median, peers, out_of_bound: out });
            }
        }
    }
}
