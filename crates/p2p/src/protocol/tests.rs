#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Block, Hash, HashKind, Header, Tx};

use super::*;
use crate::msg::{
    message_id, refused, CompactBlock, Hello, Request, Response, Role, TxBatch, TxRef,
    MAX_BLOCKS_PER_REQUEST, MAX_REASON, PROTOCOL_VERSION,
};
use crate::score::{Offence, BAN_MS};
use crate::sync::{fork_point, locator};
use crate::testing::{mine, mined};

const CHAIN: Hash = Hash([7; 32]);

/// A main chain of mined headers and a mempool, behind the machine's view.
struct Fake {
    hashes: Vec<Hash>,
    headers: Vec<Header>,
    pool: Vec<Tx>,
}

impl Fake {
    fn new(height: usize) -> Fake {
        let (headers, hashes) = mined(height);
        Fake { hashes, headers, pool: Vec::new() }
    }
}

impl ChainView for Fake {
    fn chain_id(&self) -> Hash {
        CHAIN
    }
    fn hash_kind(&self) -> HashKind {
        HashKind::Sha256
    }
    fn tip(&self) -> (u64, Hash) {
        ((self.hashes.len() - 1) as u64, self.hashes[self.hashes.len() - 1])
    }
    fn locator(&self) -> Vec<Hash> {
        locator(&self.hashes)
    }
    fn headers_after(&self, loc: &[Hash], max: usize) -> Vec<Header> {
        let start = fork_point(loc, |h| self.hashes.iter().position(|x| x == h).map(|p| p as u64));
        self.headers.iter().skip(start as usize).take(max).copied().collect()
    }
    fn has_block(&self, hash: &Hash) -> bool {
        self.hashes.contains(hash)
    }
    fn pooled_txs(&self, txids: &[Hash], max_bytes: usize) -> Vec<Tx> {
        let mut bytes = 0;
        txids
            .iter()
            .filter_map(|id| self.pool.iter().find(|t| t.txid(HashKind::Sha256) == *id).cloned())
            .take_while(|t| {
                bytes += t.encoded_len();
                bytes <= max_bytes
            })
            .collect()
    }
    fn has_tx(&self, txid: &Hash) -> bool {
        self.pool.iter().any(|t| t.txid(HashKind::Sha256) == *txid)
    }
    fn target_after(&self, parent: &Hash) -> Option<scalechain_types::Target> {
        self.headers.iter().find(|h| h.hash(HashKind::Sha256) == *parent).map(|h| h.target).or_else(|| {
            (self.hashes.first() == Some(parent)).then(|| scalechain_types::Target::from_bits(250))
        })
    }
    fn pooled_for_block(&self, refs: &[TxRef]) -> Vec<Option<Tx>> {
        refs.iter()
            .map(|r| self.pool.iter().find(|t| TxRef::of(t, HashKind::Sha256) == *r).cloned())
            .collect()
    }
    fn pool_txids(&self, from: &Hash, max: usize) -> Vec<Hash> {
        let mut ids: Vec<Hash> =
            self.pool.iter().map(|t| t.txid(HashKind::Sha256)).filter(|h| h >= from).collect();
        ids.sort();
        ids.truncate(max);
        ids
    }
}

/// A machine that does not ask its peers' `Hello` again (the test of that sets it).
fn machine(role: Role) -> Protocol<u32> {
    Protocol::new(Config::new(role, "test"))
}

fn out(p: &mut Protocol<u32>) -> Vec<Output<u32>> {
    p.drain().collect()
}

/// A handshake claiming the tip at `height` of the chain every `Fake` is a prefix of.
fn hello(chain: Hash, height: u64, role: Role) -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        chain_id: chain,
        role,
        tip_height: height,
        tip_hash: mined(height as usize).1[height as usize],
        agent: "x".into(),
    }
}

fn events(o: &[Output<u32>]) -> Vec<Event<u32>> {
    o.iter().filter_map(|x| if let Output::Event(e) = x { Some(e.clone()) } else { None }).collect()
}

fn penalties(o: &[Output<u32>]) -> Vec<(Offence, i32)> {
    events(o)
        .into_iter()
        .filter_map(|e| {
            if let Event::Penalised { offence, score, .. } = e {
                Some((offence, score))
            } else {
                None
            }
        })
        .collect()
}

fn refusal(o: &Output<u32>) -> Option<&str> {
    match o {
        Output::Respond { response: Response::Refused(s), .. } => Some(s),
        _ => None,
    }
}

/// Connects peer `k` and answers its handshake request with `h`; returns the outputs.
fn connect(p: &mut Protocol<u32>, chain: &Fake, k: u32, h: Option<Hello>) -> Vec<Output<u32>> {
    p.step(0, Input::Connected { peer: k, addr: format!("addr{k}"), inbound: true }, chain);
    let mut o = out(p);
    let tag = match &o[..] {
        [Output::Event(Event::Connected { peer, .. }), Output::Request { peer: to, tag, request: Request::Hello(ours) }] =>
        {
            assert_eq!((*peer, *to), (k, k));
            assert_eq!(
                (ours.chain_id, ours.tip_height, ours.version),
                (CHAIN, chain.tip().0, PROTOCOL_VERSION)
            );
            *tag
        }
        other => panic!("{other:?}"),
    };
    if let Some(h) = h {
        p.step(0, Input::Response { peer: k, tag, data: Response::Hello(h).encode() }, chain);
        o.extend(out(p));
    }
    o
}

fn banned(o: &[Output<u32>], k: u32) -> bool {
    o.iter().any(|x| matches!(x, Output::Ban { peer, .. } if *peer == k))
}

#[test]
fn a_connection_starts_a_handshake_and_a_higher_peer_is_synced_from() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    let o = connect(&mut p, &chain, 1, Some(hello(CHAIN, 5, Role::Miner)));
    assert_eq!(events(&o)[1], Event::Handshake { peer: 1, role: Role::Miner, height: 5 });
    let (_, peer) = p.peers().next().unwrap();
    assert_eq!((peer.role, peer.height, peer.addr.as_str()), (Some(Role::Miner), 5, "addr1"));
    p.step(250, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { peer: 1, tag, request: Request::GetHeaders { locator, .. } }] = &o[..] else {
        panic!("{o:?}")
    };
    assert_eq!(locator, &vec![chain.hashes[0]]);
    // The peer serves five headers: the blocks are asked for on the next tick.
    let (headers, hashes) = mined(5);
    p.step(300, Input::Response { peer: 1, tag: *tag, data: Response::Headers(headers).encode() }, &chain);
    assert!(out(&mut p).is_empty());
    p.step(500, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { peer: 1, tag, request: Request::GetBlocks(asked) }] = &o[..] else {
        panic!("{o:?}")
    };
    assert_eq!(asked[..], hashes[1..]);
    // Two of them come back (and one nobody asked for): the two go to the block worker, the
    // stray one costs `malformed`.
    let block = |h: &Header| Block { header: *h, txs: vec![Tx::coinbase(h.height, vec![])] };
    let (stray, _) = mined(7);
    let (h5, _) = mined(5);
    let blocks = vec![block(&h5[0]), block(&stray[6]), block(&h5[1])];
    p.step(600, Input::Response { peer: 1, tag: *tag, data: Response::Blocks(blocks).encode() }, &chain);
    let o = out(&mut p);
    let submitted: Vec<u64> = o
        .iter()
        .filter_map(|x| match x {
            Output::SubmitBlock { block, origin: BlockOrigin::Sync(1) } => Some(block.header.height),
            _ => None,
        })
        .collect();
    assert_eq!(submitted, vec![1, 2]);
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
}

#[test]
fn hello_requests_are_answered_and_another_chain_is_refused_before_the_ban() {
    let chain = Fake::new(3);
    let mut p = machine(Role::Miner);
    connect(&mut p, &chain, 1, None);
    connect(&mut p, &chain, 2, None);
    connect(&mut p, &chain, 3, None);
    p.step(
        1,
        Input::Request { peer: 1, id: 10, data: Request::Hello(hello(CHAIN, 9, Role::Peer)).encode() },
        &chain,
    );
    let o = out(&mut p);
    let Output::Respond { id: 10, response: Response::Hello(h) } = &o[0] else { panic!("{o:?}") };
    assert_eq!(
        (h.tip_height, h.tip_hash, h.role, h.agent.as_str()),
        (3, chain.hashes[3], Role::Miner, "test")
    );
    assert_eq!(events(&o), vec![Event::Handshake { peer: 1, role: Role::Peer, height: 9 }]);
    // Another chain: the refusal is the first output, the ban comes after it.
    p.step(
        2,
        Input::Request {
            peer: 2,
            id: 11,
            data: Request::Hello(hello(Hash([8; 32]), 1, Role::Peer)).encode(),
        },
        &chain,
    );
    let o = out(&mut p);
    assert_eq!(refusal(&o[0]), Some("wrong chain"));
    assert!(matches!(o.last(), Some(Output::Ban { peer: 2, until_ms }) if *until_ms == 2 + BAN_MS));
    assert_eq!(penalties(&o), vec![(Offence::WrongChain, -100)]);
    // Another protocol version is refused the same way.
    let mut v2 = hello(CHAIN, 1, Role::Peer);
    v2.version = PROTOCOL_VERSION + 1;
    p.step(3, Input::Request { peer: 3, id: 12, data: Request::Hello(v2).encode() }, &chain);
    let o = out(&mut p);
    assert_eq!(refusal(&o[0]), Some("wrong chain"));
    assert!(banned(&o, 3));
    // A handshake answer for another chain bans too (there is nothing to answer).
    let o = connect(&mut p, &chain, 4, Some(hello(Hash([9; 32]), 1, Role::Peer)));
    assert!(banned(&o, 4));
}

#[test]
fn the_rate_limit_applies_before_decoding_and_undecodable_requests_cost_malformed() {
    let chain = Fake::new(1);
    let mut cfg = Config::new(Role::Peer, "test");
    cfg.requests_per_s = 1.0; // burst 4
    let mut p = Protocol::new(cfg);
    connect(&mut p, &chain, 1, None);
    connect(&mut p, &chain, 2, None);
    // A request that does not decode: refused with the decoder's reason, 50 points.
    p.step(0, Input::Request { peer: 1, id: 1, data: vec![9, 9, 9] }, &chain);
    let o = out(&mut p);
    let why = refusal(&o[0]).unwrap();
    assert!(why.starts_with("malformed request: decoding request.tag"), "{why}");
    assert!(why.len() <= MAX_REASON);
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    // Four requests fit the burst; the fifth is refused without being decoded (junk bytes cost
    // `rate-limited`, not `malformed`).
    for id in 0..3 {
        p.step(0, Input::Request { peer: 2, id, data: Request::GetTxs(vec![]).encode() }, &chain);
        assert!(
            matches!(&out(&mut p)[..], [Output::Respond { response: Response::Txs(t), .. }] if t.is_empty())
        );
    }
    p.step(0, Input::Request { peer: 2, id: 3, data: Request::GetTxs(vec![]).encode() }, &chain);
    assert_eq!(out(&mut p).len(), 1);
    p.step(0, Input::Request { peer: 2, id: 4, data: vec![0xff; 3] }, &chain);
    let o = out(&mut p);
    assert_eq!(refusal(&o[0]), Some("rate limit"));
    assert_eq!(penalties(&o), vec![(Offence::RateLimited, -10)]);
    // A second later one token is back.
    p.step(1000, Input::Request { peer: 2, id: 5, data: Request::GetTxs(vec![]).encode() }, &chain);
    assert!(matches!(&out(&mut p)[..], [Output::Respond { id: 5, response: Response::Txs(_) }]));
    // A request from a peer that is not connected is refused, unpunished.
    p.step(1000, Input::Request { peer: 9, id: 6, data: Request::GetTxs(vec![]).encode() }, &chain);
    let o = out(&mut p);
    assert_eq!((refusal(&o[0]), o.len()), (Some("not connected"), 1));
}

#[test]
fn headers_transactions_and_blocks_are_served() {
    let mut chain = Fake::new(30);
    let tx = Tx::coinbase(4, vec![]);
    chain.pool.push(tx.clone());
    let mut p = machine(Role::Peer);
    connect(&mut p, &chain, 1, None);
    let req = Request::GetHeaders { locator: vec![Hash([3; 32]), chain.hashes[10]], max: 5 };
    p.step(0, Input::Request { peer: 1, id: 1, data: req.encode() }, &chain);
    let o = out(&mut p);
    let Output::Respond { response: Response::Headers(h), .. } = &o[0] else { panic!("{o:?}") };
    assert_eq!(h.iter().map(|h| h.height).collect::<Vec<_>>(), vec![11, 12, 13, 14, 15]);
    let txid = tx.txid(HashKind::Sha256);
    p.step(
        0,
        Input::Request { peer: 1, id: 2, data: Request::GetTxs(vec![Hash([1; 32]), txid]).encode() },
        &chain,
    );
    assert_eq!(out(&mut p), vec![Output::Respond { id: 2, response: Response::Txs(vec![tx]) }]);
    let asked = vec![chain.hashes[2], chain.hashes[1]];
    p.step(0, Input::Request { peer: 1, id: 3, data: Request::GetBlocks(asked.clone()).encode() }, &chain);
    assert_eq!(out(&mut p), vec![Output::ServeBlocks { id: 3, hashes: asked }]);
}

#[test]
fn the_blocks_answer_keeps_the_order_asked_and_stops_before_the_byte_cap() {
    let block = |h: u64| Block { header: mined(3).0[(h - 1) as usize], txs: vec![Tx::coinbase(h, vec![])] };
    let one = block(1).encoded_len();
    let hashes: Vec<Hash> = (0..20u8).map(|i| Hash([i; 32])).collect();
    let load = |h: &Hash| (h.0[0] % 2 == 1).then(|| block(u64::from(h.0[0] % 3) + 1));
    // Only the odd hashes are found; at most 16 asked are looked at.
    let Response::Blocks(all) = blocks_response(&hashes, usize::MAX, load) else { panic!() };
    assert_eq!(all.len(), MAX_BLOCKS_PER_REQUEST / 2);
    assert_eq!(all[0].header.height, 2);
    let Response::Blocks(capped) = blocks_response(&hashes, 3 * one + 1, load) else { panic!() };
    assert_eq!(capped.len(), 3);
    assert_eq!(capped[..], all[..3]);
}

fn gossip_block(p: &mut Protocol<u32>, chain: &Fake, k: u32, height: u64) -> (MsgId, Block) {
    let header = mined(height as usize).0[(height - 1) as usize];
    let block = Block { header, txs: vec![Tx::coinbase(height, vec![])] };
    let data = block.encode();
    let id = message_id(&data);
    p.step(0, Input::Gossip { topic: Topic::Blocks, id, source: k, data }, chain);
    let o = out(p);
    assert_eq!(
        o,
        vec![Output::SubmitBlock { block: block.clone(), origin: BlockOrigin::Gossip { source: k, id } }]
    );
    (id, block)
}

#[test]
fn block_verdicts_forward_drop_or_punish_and_only_permanent_failures_are_punished() {
    let chain = Fake::new(0);
    let mut p = one_peer(&chain);
    let done = |p: &mut Protocol<u32>, id: MsgId, b: &Block, verdict: BlockVerdict| {
        let hash = b.header.hash(HashKind::Sha256);
        let origin = BlockOrigin::Gossip { source: 1, id };
        p.step(5, Input::BlockDone { hash, height: b.header.height, origin, verdict }, &chain);
        p.drain().collect::<Vec<_>>()
    };
    let (id, b) = gossip_block(&mut p, &chain, 1, 1);
    assert_eq!(
        done(&mut p, id, &b, BlockVerdict::Connected),
        vec![
            Output::Validate { id, source: 1, verdict: Verdict::Accept },
            Output::Event(Event::Delivered { peer: 1, height: 1, at_ms: 5 })
        ]
    );
    assert_eq!(
        done(&mut p, id, &b, BlockVerdict::SideBranch)[0],
        Output::Validate { id, source: 1, verdict: Verdict::Accept }
    );
    assert_eq!(
        done(&mut p, id, &b, BlockVerdict::Orphan),
        vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]
    );
    assert_eq!(
        done(&mut p, id, &b, BlockVerdict::Known),
        vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]
    );
    // time-too-new: our clock or theirs is off; the block is dropped, the sender kept.
    let o = done(&mut p, id, &b, BlockVerdict::Invalid { permanent: false, reason: "time-too-new".into() });
    assert_eq!(o, vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]);
    assert_eq!(p.score(&1, 5), 0);
    // A consensus failure: rejected, 100 points, banned.
    let o = done(&mut p, id, &b, BlockVerdict::Invalid { permanent: true, reason: "bad-merkle-root".into() });
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Reject });
    assert_eq!(penalties(&o), vec![(Offence::InvalidBlock, -100)]);
    assert!(banned(&o, 1));
    assert!(p.is_banned(&1, 6));
}

#[test]
fn malformed_and_oversized_gossip_is_rejected_and_penalised() {
    let chain = Fake::new(0);
    let mut cfg = Config::new(Role::Peer, "test");
    cfg.max_txs_per_message = 2;
    let mut p = Protocol::new(cfg);
    connect(&mut p, &chain, 1, None);
    connect(&mut p, &chain, 2, None);
    let junk = vec![0xff, 1, 2];
    p.step(
        0,
        Input::Gossip { topic: Topic::Blocks, id: message_id(&junk), source: 1, data: junk.clone() },
        &chain,
    );
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id: message_id(&junk), source: 1, verdict: Verdict::Reject });
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    let three = TxBatch(vec![Tx::coinbase(1, vec![]); 3]).encode();
    let id = message_id(&three);
    p.step(0, Input::Gossip { topic: Topic::Txs, id, source: 1, data: three }, &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Reject });
    assert!(banned(&o, 1), "two malformed messages: {o:?}");
    // Gossip still queued from a banned peer is dropped without judging it.
    let two = TxBatch(vec![Tx::coinbase(1, vec![]); 2]).encode();
    let id2 = message_id(&two);
    p.step(1, Input::Gossip { topic: Topic::Txs, id: id2, source: 1, data: two.clone() }, &chain);
    assert_eq!(out(&mut p), vec![Output::Validate { id: id2, source: 1, verdict: Verdict::Ignore }]);
    // Peer 2's batch of two is within bounds: it goes to the pipeline; an empty one is ignored.
    p.step(1, Input::Gossip { topic: Topic::Txs, id: id2, source: 2, data: two }, &chain);
    assert!(
        matches!(&out(&mut p)[..], [Output::SubmitTxs { txs, origin: TxOrigin::Gossip { source: 2, .. } }] if txs.len() == 2)
    );
    let empty = TxBatch(vec![]).encode();
    p.step(1, Input::Gossip { topic: Topic::Txs, id: message_id(&empty), source: 2, data: empty }, &chain);
    assert!(matches!(&out(&mut p)[..], [Output::Validate { verdict: Verdict::Ignore, .. }]));
}

#[test]
fn pipeline_verdicts_go_back_to_gossip_and_local_admissions_are_relayed_in_batches() {
    let chain = Fake::new(0);
    let mut cfg = Config::new(Role::Peer, "test");
    cfg.max_txs_per_message = 2;
    let mut p = Protocol::new(cfg);
    connect(&mut p, &chain, 1, None);
    out(&mut p);
    let tx = |i: u64| Arc::new(Tx::coinbase(i, vec![]));
    let id = |i: u8| MsgId([i; 20]);
    let g = |i: u8, admitted: Vec<Arc<Tx>>, invalid: bool| TxsDone {
        origin: TxOrigin::Gossip { source: 1, id: id(i) },
        admitted,
        invalid,
        crowded: 0,
    };
    let local =
        |admitted: Vec<Arc<Tx>>| TxsDone { origin: TxOrigin::Local, admitted, invalid: false, crowded: 0 };
    let batches = vec![
        g(1, vec![tx(1)], false),
        local(vec![tx(2), tx(3)]),
        g(2, vec![], false),
        g(3, vec![tx(4)], true),
        local(vec![tx(5)]),
    ];
    p.step(0, Input::TxsDone(batches), &chain);
    let o = out(&mut p);
    let verdicts: Vec<(MsgId, Verdict)> = o
        .iter()
        .filter_map(
            |x| if let Output::Validate { id, verdict, .. } = x { Some((*id, *verdict)) } else { None },
        )
        .collect();
    assert_eq!(verdicts, vec![(id(1), Verdict::Accept), (id(2), Verdict::Ignore), (id(3), Verdict::Reject)]);
    assert_eq!(penalties(&o), vec![(Offence::InvalidTx, -20)]);
    let published: Vec<Vec<Tx>> = o
        .iter()
        .filter_map(|x| match x {
            Output::Publish { topic: Topic::Txs, data } => Some(TxBatch::decode(data).unwrap().0),
            _ => None,
        })
        .collect();
    assert_eq!(published, vec![vec![(*tx(2)).clone(), (*tx(3)).clone()], vec![(*tx(5)).clone()]]);
}

#[test]
fn the_local_miners_block_is_published_once_connected() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Miner);
    let b = Block { header: mined(1).0[0], txs: vec![Tx::coinbase(1, vec![])] };
    let hash = b.header.hash(HashKind::Sha256);
    for compact in [false, true] {
        let (topic, payload) = crate::msg::block_payload(&b, HashKind::Sha256, compact);
        assert_eq!(topic, if compact { Topic::CompactBlocks } else { Topic::Blocks });
        let expected =
            if compact { CompactBlock::of(&b, HashKind::Sha256).unwrap().encode() } else { b.encode() };
        assert_eq!(payload, expected);
        let done = |verdict| Input::BlockDone {
            hash,
            height: 1,
            origin: BlockOrigin::Local { topic, payload: payload.clone() },
            verdict,
        };
        p.step(0, done(BlockVerdict::SideBranch), &chain);
        assert!(out(&mut p).is_empty());
        p.step(0, done(BlockVerdict::Connected), &chain);
        assert_eq!(out(&mut p), vec![Output::Publish { topic, data: payload.clone() }]);
    }
}

/// A block at height 1 of the fake chain holding a coinbase and `n` other transactions, its
/// Merkle root right and its header mined.
fn block_of(n: u64) -> Block {
    let kind = HashKind::Sha256;
    let txs: Vec<Tx> = (0..=n).map(|i| Tx::coinbase(1000 + i, vec![])).collect();
    let mut header = mined(1).0[0];
    header.merkle_root = scalechain_types::merkle::root_of_txs(kind, &txs);
    mine(&mut header);
    Block { header, txs }
}

fn gossip_compact(
    p: &mut Protocol<u32>,
    chain: &Fake,
    k: u32,
    cb: &CompactBlock,
) -> (MsgId, Vec<Output<u32>>) {
    let data = cb.encode();
    let id = message_id(&data);
    p.step(0, Input::Gossip { topic: Topic::CompactBlocks, id, source: k, data }, chain);
    (id, out(p))
}

#[test]
fn a_compact_block_is_rebuilt_from_the_mempool_and_what_it_lacks_is_fetched_from_its_sender() {
    let kind = HashKind::Sha256;
    let b = block_of(5);
    let cb = CompactBlock::of(&b, kind).unwrap();
    assert_eq!(CompactBlock::decode(&cb.encode()).unwrap(), cb);
    assert_eq!(cb.encode().len(), 124 + b.txs[0].encoded_len() + 4 + 64 * 5);
    // Everything pooled: the block goes straight to the block worker, whole.
    let mut chain = Fake::new(0);
    chain.pool = b.txs[1..].to_vec();
    let mut p = one_peer(&chain);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &cb);
    assert_eq!(
        o,
        vec![Output::SubmitBlock { block: b.clone(), origin: BlockOrigin::Gossip { source: 1, id } }]
    );
    // Two missing (positions 2 and 5): asked of the sender by position, nothing submitted yet.
    chain.pool = vec![b.txs[1].clone(), b.txs[3].clone(), b.txs[4].clone()];
    let mut p = one_peer(&chain);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &cb);
    let hash = b.header.hash(kind);
    let [(1, tag, Request::GetBlockTxs { block, indexes })] = &requests(&o)[..] else { panic!("{o:?}") };
    assert_eq!((*block, indexes.clone()), (hash, vec![2, 5]));
    assert_eq!(o.len(), 1);
    assert_eq!(p.rebuilding(), 1);
    // The same block again (from another relay) while it is being rebuilt: dropped.
    let (id2, o) = gossip_compact(&mut p, &chain, 1, &cb);
    assert_eq!(o, vec![Output::Validate { id: id2, source: 1, verdict: Verdict::Ignore }]);
    // The answer completes it: the whole block goes to the worker, its verdict to gossip.
    let answer = Response::BlockTxs(vec![b.txs[2].clone(), b.txs[5].clone()]).encode();
    p.step(1, Input::Response { peer: 1, tag: *tag, data: answer }, &chain);
    assert_eq!(
        out(&mut p),
        vec![Output::SubmitBlock { block: b.clone(), origin: BlockOrigin::Gossip { source: 1, id } }]
    );
    assert_eq!(p.rebuilding(), 0);
}

#[test]
fn a_pooled_transaction_with_the_txid_but_another_witness_is_fetched() {
    use scalechain_types::keys::{Scheme, SecretKey};
    use scalechain_types::{OutPoint, TxIn, Witness};
    let kind = HashKind::Sha256;
    let key = SecretKey::from_seed(Scheme::Ed25519, [5; 32]);
    let spend = Tx {
        version: 1,
        kind: scalechain_types::TxKind::TRANSFER,
        inputs: vec![TxIn {
            prev: OutPoint { txid: Hash([3; 32]), index: 0 },
            witness: Witness { pubkey: key.public(), signature: [1; 64] },
        }],
        outputs: vec![],
        data: vec![],
    };
    let mut other = spend.clone();
    other.inputs[0].witness.signature = [2; 64];
    assert_eq!(other.txid(kind), spend.txid(kind));
    let txs = vec![Tx::coinbase(1, vec![]), spend.clone()];
    let mut header = mined(1).0[0];
    header.merkle_root = scalechain_types::merkle::root_of_txs(kind, &txs);
    mine(&mut header);
    let b = Block { header, txs };
    let mut chain = Fake::new(0);
    chain.pool = vec![other];
    let mut p = one_peer(&chain);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&b, kind).unwrap());
    let [(1, tag, Request::GetBlockTxs { indexes, .. })] = &requests(&o)[..] else { panic!("{o:?}") };
    assert_eq!(indexes, &vec![1]);
    // The pooled variant is no answer either: it is not the transaction asked for.
    let pooled = Response::BlockTxs(chain.pool.clone()).encode();
    p.step(1, Input::Response { peer: 1, tag: *tag, data: pooled }, &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Ignore });
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
}

/// A peer machine with peer 1 connected and through its handshake.
fn one_peer(chain: &Fake) -> Protocol<u32> {
    let mut p = machine(Role::Peer);
    connect(&mut p, chain, 1, Some(hello(CHAIN, 0, Role::Peer)));
    out(&mut p);
    p
}

/// A peer machine with peers 1 and 2 connected and through their handshakes.
fn two_peers(chain: &Fake) -> Protocol<u32> {
    let mut p = one_peer(chain);
    connect(&mut p, chain, 2, Some(hello(CHAIN, 0, Role::Peer)));
    out(&mut p);
    p
}

#[test]
fn compact_blocks_that_lie_or_answers_that_do_not_fit_are_punished_and_failures_fall_back_to_sync() {
    let kind = HashKind::Sha256;
    let b = block_of(4);
    let cb = CompactBlock::of(&b, kind).unwrap();
    let chain = Fake::new(0);
    let fresh = || two_peers(&chain);
    // A header that misses its own target: rejected before anything is fetched.
    let mut p = fresh();
    let mut liar = cb.clone();
    while liar.header.target.is_met_by(&liar.header.hash(kind)) {
        liar.header.nonce += 1;
    }
    let (id, o) = gossip_compact(&mut p, &chain, 1, &liar);
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Reject });
    assert_eq!(penalties(&o), vec![(Offence::InvalidBlock, -100)]);
    assert!(requests(&o).is_empty());
    // Undecodable bytes on the compact topic: malformed.
    let junk = vec![1, 2, 3];
    let jid = message_id(&junk);
    p.step(0, Input::Gossip { topic: Topic::CompactBlocks, id: jid, source: 2, data: junk }, &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id: jid, source: 2, verdict: Verdict::Reject });
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    // An answer carrying a transaction that was not asked for: malformed, message dropped.
    let mut p = fresh();
    let (id, o) = gossip_compact(&mut p, &chain, 2, &cb);
    let [(2, tag, _)] = requests(&o)[..] else { panic!("{o:?}") };
    let wrong = Response::BlockTxs(vec![Tx::coinbase(77, vec![]); 4]).encode();
    p.step(1, Input::Response { peer: 2, tag, data: wrong }, &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id, source: 2, verdict: Verdict::Ignore });
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    assert_eq!(p.rebuilding(), 0);
    // A short answer (cut at the response bound): dropped without penalty, left to sync,
    // which asks the sender for the whole block at the next tick.
    let mut p = fresh();
    let (id, o) = gossip_compact(&mut p, &chain, 2, &cb);
    let [(2, tag, _)] = requests(&o)[..] else { panic!("{o:?}") };
    let short = Response::BlockTxs(b.txs[1..3].to_vec()).encode();
    p.step(1, Input::Response { peer: 2, tag, data: short }, &chain);
    assert_eq!(out(&mut p), vec![Output::Validate { id, source: 2, verdict: Verdict::Ignore }]);
    p.step(300, Input::Tick, &chain);
    let o = out(&mut p);
    assert!(matches!(&requests(&o)[..], [(2, _, Request::GetHeaders { .. })]), "{o:?}");
    // A refusal and a peer that leaves: dropped, nobody punished.
    for leave in [false, true] {
        let mut p = fresh();
        let (id, o) = gossip_compact(&mut p, &chain, 2, &cb);
        let [(2, tag, _)] = requests(&o)[..] else { panic!("{o:?}") };
        if leave {
            p.step(1, Input::Disconnected { peer: 2 }, &chain);
        } else {
            p.step(1, Input::Response { peer: 2, tag, data: refused("unknown block").encode() }, &chain);
        }
        let o = out(&mut p);
        assert_eq!(o[0], Output::Validate { id, source: 2, verdict: Verdict::Ignore });
        assert!(penalties(&o).is_empty());
        assert_eq!(p.rebuilding(), 0);
    }
    // A compact block of a block already stored: dropped unseen.
    let mut chain = Fake::new(0);
    chain.hashes.push(b.header.hash(kind));
    let mut p = one_peer(&chain);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &cb);
    assert_eq!(o, vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]);
}

#[test]
fn rebuilds_need_a_known_parent_and_the_required_target_are_bounded_per_peer_and_expire() {
    let kind = HashKind::Sha256;
    let chain = Fake::new(0);
    let fresh = || two_peers(&chain);
    let mut p = fresh();
    // A parent unknown here: dropped, nothing fetched (sync fetches the branch).
    let mut orphan = CompactBlock::of(&block_of(3), kind).unwrap();
    orphan.header.prev_hash = Hash([0x77; 32]);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &orphan);
    assert_eq!(o, vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]);
    // A header with an easier target than consensus requires after its parent: rejected.
    let mut easy = CompactBlock::of(&block_of(3), kind).unwrap();
    easy.header.target = scalechain_types::Target(Hash([0xff; 32]));
    let (id, o) = gossip_compact(&mut p, &chain, 1, &easy);
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Reject });
    assert_eq!(penalties(&o), vec![(Offence::InvalidBlock, -100)]);
    // Two rebuilds wait for peer 2; a third from it is dropped, one from peer 1 is not.
    let mut p = fresh();
    let ids: Vec<MsgId> = (4..7)
        .map(|n| gossip_compact(&mut p, &chain, 2, &CompactBlock::of(&block_of(n), kind).unwrap()))
        .map(|(id, o)| {
            assert!(o.len() == 1, "{o:?}");
            id
        })
        .collect();
    assert_eq!(p.rebuilding(), MAX_REBUILDS_PER_PEER);
    let o = p.drain().collect::<Vec<_>>();
    assert!(o.is_empty());
    let (_, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&block_of(7), kind).unwrap());
    assert!(matches!(&requests(&o)[..], [(1, _, Request::GetBlockTxs { .. })]), "{o:?}");
    assert_eq!(p.rebuilding(), 3);
    // Late answers: past the time-out the rebuilds go, their messages dropped.
    p.step(REBUILD_TIMEOUT_MS - 1, Input::Tick, &chain);
    assert_eq!(p.rebuilding(), 3);
    p.step(REBUILD_TIMEOUT_MS, Input::Tick, &chain);
    assert_eq!(p.rebuilding(), 0);
    let dropped: Vec<MsgId> = out(&mut p)
        .into_iter()
        .filter_map(|o| match o {
            Output::Validate { id, verdict: Verdict::Ignore, .. } => Some(id),
            _ => None,
        })
        .collect();
    assert!(ids[..2].iter().all(|id| dropped.contains(id)) && dropped.len() == 3, "{dropped:?}");
}

#[test]
fn a_child_of_a_block_being_rebuilt_is_rebuilt_too() {
    let kind = HashKind::Sha256;
    let chain = Fake::new(0);
    let mut p = one_peer(&chain);
    let parent = block_of(3);
    let (_, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&parent, kind).unwrap());
    assert_eq!(requests(&o).len(), 1);
    let mut child = block_of(2);
    child.header.height = 2;
    child.header.prev_hash = parent.header.hash(kind);
    mine(&mut child.header);
    let (_, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&child, kind).unwrap());
    assert!(matches!(&requests(&o)[..], [(1, _, Request::GetBlockTxs { .. })]), "{o:?}");
    // With another target than its parent's, it waits for sync instead.
    let mut other = child.clone();
    other.header.target = scalechain_types::Target::from_bits(251);
    mine(&mut other.header);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&other, kind).unwrap());
    assert_eq!(o, vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]);
}

#[test]
fn a_rebuild_answered_with_the_wrong_kind_is_malformed_and_dropped() {
    let kind = HashKind::Sha256;
    let chain = Fake::new(0);
    let mut p = one_peer(&chain);
    let (id, o) = gossip_compact(&mut p, &chain, 1, &CompactBlock::of(&block_of(2), kind).unwrap());
    let [(1, tag, _)] = requests(&o)[..] else { panic!("{o:?}") };
    p.step(1, Input::Response { peer: 1, tag, data: Response::Txs(vec![]).encode() }, &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id, source: 1, verdict: Verdict::Ignore });
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    assert_eq!(p.rebuilding(), 0);
}

#[test]
fn block_transactions_are_served_by_position() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    connect(&mut p, &chain, 1, None);
    let req = Request::GetBlockTxs { block: Hash([9; 32]), indexes: vec![1, 3] };
    p.step(0, Input::Request { peer: 1, id: 4, data: req.encode() }, &chain);
    assert_eq!(out(&mut p), vec![Output::ServeBlockTxs { id: 4, block: Hash([9; 32]), indexes: vec![1, 3] }]);
    // Positions out of order do not decode: malformed.
    let mut bad = Request::GetBlockTxs { block: Hash([9; 32]), indexes: vec![3, 1] }.encode();
    p.step(0, Input::Request { peer: 1, id: 5, data: bad.clone() }, &chain);
    let o = out(&mut p);
    assert!(refusal(&o[0]).unwrap().contains("not strictly ascending"), "{o:?}");
    assert_eq!(penalties(&o), vec![(Offence::Malformed, -50)]);
    bad.truncate(bad.len() - 1);
    assert!(Request::decode(&bad).is_err());
    // The answer: the transactions at those positions, in order; refused for a block not
    // stored or a position past its end; cut before the byte bound.
    let b = block_of(4);
    assert_eq!(
        block_txs_response(Some(&b), &[0, 2, 4], usize::MAX),
        Response::BlockTxs(vec![b.txs[0].clone(), b.txs[2].clone(), b.txs[4].clone()])
    );
    assert!(
        matches!(block_txs_response(None, &[1], usize::MAX), Response::Refused(s) if s == "unknown block")
    );
    assert!(
        matches!(block_txs_response(Some(&b), &[1, 5], usize::MAX), Response::Refused(s) if s.contains("position 5"))
    );
    let one = b.txs[1].encoded_len();
    assert_eq!(block_txs_response(Some(&b), &[1, 2, 3], 2 * one), Response::BlockTxs(b.txs[1..3].to_vec()));
    assert!(
        matches!(block_txs_response(Some(&b), &[1, 2, 9], one), Response::Refused(s) if s.contains("position 9"))
    );
    // The decoder's bounds: at most 65,536 positions, and no more than the bytes hold.
    let mut big = vec![5u8];
    big.extend_from_slice(&[0xaa; 32]);
    big.extend_from_slice(&(MAX_BLOCK_TXS_PER_REQUEST as u32 + 1).to_le_bytes());
    for i in 0..=MAX_BLOCK_TXS_PER_REQUEST as u32 {
        big.extend_from_slice(&i.to_le_bytes());
    }
    assert!(Request::decode(&big).unwrap_err().to_string().contains("at most 65536"));
    let mut short = vec![5u8];
    short.extend_from_slice(&[0xaa; 32]);
    short.extend_from_slice(&3u32.to_le_bytes());
    short.extend_from_slice(&1u32.to_le_bytes());
    assert!(Request::decode(&short).is_err());
}

#[test]
fn banned_peers_are_refused_on_connect_until_the_ban_ends() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    connect(&mut p, &chain, 1, None);
    out(&mut p);
    p.step(10, Input::Request { peer: 1, id: 1, data: vec![] }, &chain);
    p.step(10, Input::Request { peer: 1, id: 2, data: vec![] }, &chain);
    assert!(banned(&out(&mut p), 1));
    p.step(11, Input::Disconnected { peer: 1 }, &chain);
    assert_eq!(out(&mut p), vec![Output::Event(Event::Disconnected { peer: 1 })]);
    assert_eq!(p.peers().count(), 0);
    // It comes back: banned again at once, no handshake.
    p.step(20, Input::Connected { peer: 1, addr: "a".into(), inbound: true }, &chain);
    assert_eq!(out(&mut p), vec![Output::Ban { peer: 1, until_ms: 10 + BAN_MS }]);
    // Requests that were queued before the ban are refused without another penalty.
    p.step(21, Input::Request { peer: 1, id: 3, data: Request::GetTxs(vec![]).encode() }, &chain);
    assert_eq!(refusal(&out(&mut p)[0]), Some("banned"));
    // When the ban ends, a tick lets it in again.
    p.step(10 + BAN_MS - 1, Input::Tick, &chain);
    assert!(out(&mut p).is_empty());
    p.step(10 + BAN_MS, Input::Tick, &chain);
    assert_eq!(out(&mut p), vec![Output::Unban { peer: 1 }]);
    let o = connect(&mut p, &chain, 1, None);
    assert!(!banned(&o, 1));
}

#[test]
fn the_bootstrap_role_never_syncs_but_learns_heights() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Bootstrap);
    connect(&mut p, &chain, 1, Some(hello(CHAIN, 50, Role::Miner)));
    p.step(250, Input::Tick, &chain);
    assert!(out(&mut p).is_empty());
    assert_eq!(p.peers().next().unwrap().1.height, 50);
}

#[test]
fn failures_and_bad_answers_requeue_sync_work() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    connect(&mut p, &chain, 1, Some(hello(CHAIN, 3, Role::Miner)));
    connect(&mut p, &chain, 2, Some(hello(CHAIN, 3, Role::Miner)));
    out(&mut p);
    p.step(0, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { peer: 1, tag, request: Request::GetHeaders { .. } }] = &o[..] else {
        panic!("{o:?}")
    };
    // The header request failed: asked again on the next tick, not after the 10 s timeout.
    p.step(1, Input::RequestFailed { peer: 1, tag: *tag, error: "closed".into() }, &chain);
    p.step(2, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { tag, request: Request::GetHeaders { .. }, .. }] = &o[..] else { panic!("{o:?}") };
    let (headers, hashes) = mined(3);
    p.step(3, Input::Response { peer: 1, tag: *tag, data: Response::Headers(headers).encode() }, &chain);
    p.step(4, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { peer: 1, tag, request: Request::GetBlocks(_) }] = &o[..] else { panic!("{o:?}") };
    // An answer that does not decode costs `malformed` and the blocks are asked of peer 2.
    p.step(5, Input::Response { peer: 1, tag: *tag, data: vec![2, 1] }, &chain);
    assert_eq!(penalties(&out(&mut p)), vec![(Offence::Malformed, -50)]);
    p.step(6, Input::Tick, &chain);
    let o = out(&mut p);
    let [Output::Request { peer: 2, tag, request: Request::GetBlocks(asked) }, Output::Event(Event::Height { peer: 1, height: 0 })] =
        &o[..]
    else {
        panic!("{o:?}")
    };
    assert_eq!(asked[..], hashes[1..]);
    // Peer 2 leaves: the late answer is dropped, and nothing is asked of a peer that is gone.
    p.step(7, Input::Disconnected { peer: 2 }, &chain);
    out(&mut p);
    let blocks = Response::Blocks(vec![]).encode();
    p.step(8, Input::Response { peer: 2, tag: *tag, data: blocks }, &chain);
    assert!(out(&mut p).is_empty());
    // Peer 1, the only one left, claims nothing now: the blocks wait in the queue.
    p.step(9, Input::Tick, &chain);
    assert!(out(&mut p).is_empty());
    assert_eq!(p.sync_pending(), 3);
}

#[test]
fn an_answer_of_the_wrong_kind_is_malformed_and_a_refusal_is_not() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    p.step(0, Input::Connected { peer: 1, addr: "a".into(), inbound: true }, &chain);
    let o = out(&mut p);
    let Output::Request { tag, .. } = &o[1] else { panic!("{o:?}") };
    p.step(
        0,
        Input::Response { peer: 1, tag: *tag, data: Response::Refused("busy".into()).encode() },
        &chain,
    );
    assert!(out(&mut p).is_empty());
    p.step(0, Input::Connected { peer: 2, addr: "b".into(), inbound: false }, &chain);
    let o = out(&mut p);
    let Output::Request { tag, .. } = &o[1] else { panic!("{o:?}") };
    // From the wrong peer: dropped; from the right one, a Headers answer to a Hello: malformed.
    p.step(0, Input::Response { peer: 1, tag: *tag, data: Response::Headers(vec![]).encode() }, &chain);
    assert!(out(&mut p).is_empty());
    p.step(0, Input::Response { peer: 2, tag: *tag, data: Response::Headers(vec![]).encode() }, &chain);
    assert_eq!(penalties(&out(&mut p)), vec![(Offence::Malformed, -50)]);
}

#[test]
fn the_same_inputs_give_the_same_outputs() {
    let run = || {
        let chain = Fake::new(2);
        let mut p = machine(Role::Peer);
        let mut all = Vec::new();
        for k in [5, 3, 9, 1] {
            all.extend(connect(&mut p, &chain, k, Some(hello(CHAIN, 4 + u64::from(k), Role::Peer))));
        }
        for t in 0..5 {
            p.step(t * 250, Input::Tick, &chain);
            all.extend(out(&mut p));
            p.step(t * 250 + 1, Input::Request { peer: 3, id: t, data: vec![t as u8] }, &chain);
            all.extend(out(&mut p));
        }
        all
    };
    let a = run();
    assert_eq!(a, run());
    assert!(a
        .iter()
        .any(|o| matches!(o, Output::Request { peer: 9, request: Request::GetHeaders { .. }, .. })));
}

#[test]
fn released_orphans_are_published_with_the_parents_gossip_brought_in_the_same_round() {
    let chain = Fake::new(0);
    let mut p = one_peer(&chain);
    let parent = Tx::coinbase(1, vec![]);
    let unrelated = Tx::coinbase(2, vec![]);
    let mut child = Tx::coinbase(3, vec![]);
    child.inputs = vec![scalechain_types::TxIn {
        prev: scalechain_types::OutPoint { txid: parent.txid(HashKind::Sha256), index: 0 },
        witness: scalechain_types::Witness {
            pubkey: scalechain_types::PubKey::from_slice(scalechain_types::Scheme::Ed25519, &[0; 32])
                .unwrap(),
            signature: [0; 64],
        },
    }];
    let round = vec![
        TxsDone {
            origin: TxOrigin::Gossip { source: 1, id: MsgId([1; 20]) },
            admitted: vec![Arc::new(unrelated.clone()), Arc::new(parent.clone())],
            invalid: false,
            crowded: 0,
        },
        TxsDone {
            origin: TxOrigin::Released,
            admitted: vec![Arc::new(child.clone())],
            invalid: false,
            crowded: 0,
        },
    ];
    p.step(0, Input::TxsDone(round), &chain);
    let o = out(&mut p);
    assert_eq!(o[0], Output::Validate { id: MsgId([1; 20]), source: 1, verdict: Verdict::Accept });
    let published: Vec<Vec<Tx>> = o
        .iter()
        .filter_map(|x| match x {
            Output::Publish { topic: Topic::Txs, data } => Some(TxBatch::decode(data).unwrap().0),
            _ => None,
        })
        .collect();
    assert_eq!(published, vec![vec![parent, child]]);
}

fn requests(o: &[Output<u32>]) -> Vec<(u32, u64, Request)> {
    o.iter()
        .filter_map(|x| match x {
            Output::Request { peer, tag, request } => Some((*peer, *tag, request.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_peers_mempool_is_fetched_page_by_page_and_only_what_is_missing() {
    let (a, b, c) = (Tx::coinbase(1, vec![]), Tx::coinbase(2, vec![]), Tx::coinbase(3, vec![]));
    let id = |t: &Tx| t.txid(HashKind::Sha256);
    let mut chain = Fake::new(0);
    chain.pool.push(b.clone());
    let mut p = machine(Role::Miner);
    // After the handshake: the first inventory page.
    let o = connect(&mut p, &chain, 1, Some(hello(CHAIN, 0, Role::Peer)));
    let r = requests(&o);
    let [_, (1, tag, Request::GetPoolTxids { from, max })] = &r[..] else { panic!("{r:?}") };
    assert_eq!((*from, *max as usize), (Hash([0; 32]), crate::msg::MAX_POOL_TXIDS));
    let mut inv = vec![id(&a), id(&b), id(&c)];
    inv.sort();
    p.step(10, Input::Response { peer: 1, tag: *tag, data: Response::PoolTxids(inv).encode() }, &chain);
    // Paced: nothing until 50 ms after the last request; then the two missing ones (b is here).
    assert!(requests(&out(&mut p)).is_empty());
    p.step(60, Input::Tick, &chain);
    let r = requests(&out(&mut p));
    let [(1, tag, Request::GetTxs(asked))] = &r[..] else { panic!("{r:?}") };
    let mut want = vec![id(&a), id(&c)];
    want.sort();
    assert_eq!(asked, &want);
    // A second peer offering the same: those in flight are not asked again, so it has nothing
    // to give.
    let o = connect(&mut p, &chain, 2, Some(hello(CHAIN, 0, Role::Peer)));
    let (_, tag2, _) = requests(&o)[1].clone();
    p.step(
        70,
        Input::Response { peer: 2, tag: tag2, data: Response::PoolTxids(want.clone()).encode() },
        &chain,
    );
    p.step(200, Input::Tick, &chain);
    assert!(requests(&out(&mut p)).iter().all(|(peer, _, _)| *peer != 2));
    // The answer goes to the pipeline as fetched from peer 1, and the sync is over (a short
    // page ended the inventory).
    p.step(
        210,
        Input::Response { peer: 1, tag: *tag, data: Response::Txs(vec![a.clone(), c.clone()]).encode() },
        &chain,
    );
    let o = out(&mut p);
    assert_eq!(o, vec![Output::SubmitTxs { txs: vec![a.clone(), c.clone()], origin: TxOrigin::Pool(1) }]);
    p.step(400, Input::Tick, &chain);
    assert!(requests(&out(&mut p)).is_empty());
    // What it fetched is judged like gossip, without a gossip verdict or a relay; an invalid
    // transaction costs the peer.
    let done = TxsDone { origin: TxOrigin::Pool(1), admitted: vec![], invalid: true, crowded: 0 };
    p.step(410, Input::TxsDone(vec![done]), &chain);
    assert_eq!(
        out(&mut p),
        vec![Output::Event(Event::Penalised { peer: 1, offence: Offence::InvalidTx, score: -20 })]
    );
}

#[test]
fn mempool_sync_refuses_unasked_answers_and_skips_bootstrap_nodes() {
    let (a, x) = (Tx::coinbase(1, vec![]), Tx::coinbase(9, vec![]));
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    let o = connect(&mut p, &chain, 1, Some(hello(CHAIN, 0, Role::Peer)));
    let (_, tag, _) = requests(&o)[1].clone();
    let inv = Response::PoolTxids(vec![a.txid(HashKind::Sha256)]).encode();
    p.step(0, Input::Response { peer: 1, tag, data: inv }, &chain);
    p.step(100, Input::Tick, &chain);
    let (_, tag, _) = requests(&out(&mut p))[0].clone();
    // A transaction nobody asked for: malformed, and the sync with it stops.
    p.step(110, Input::Response { peer: 1, tag, data: Response::Txs(vec![x]).encode() }, &chain);
    assert_eq!(penalties(&out(&mut p)), vec![(Offence::Malformed, -50)]);
    // An inventory out of order is malformed too.
    let o = connect(&mut p, &chain, 2, Some(hello(CHAIN, 0, Role::Peer)));
    let (_, tag, _) = requests(&o)[1].clone();
    let bad = Response::PoolTxids(vec![Hash([9; 32]), Hash([8; 32])]).encode();
    p.step(120, Input::Response { peer: 2, tag, data: bad }, &chain);
    assert_eq!(penalties(&out(&mut p)), vec![(Offence::Malformed, -50)]);
    // A bootstrap node has no mempool: not asked; and a bootstrap node asks nobody.
    let o = connect(&mut p, &chain, 3, Some(hello(CHAIN, 0, Role::Bootstrap)));
    assert_eq!(requests(&o).len(), 1);
    let mut boot = machine(Role::Bootstrap);
    let o = connect(&mut boot, &chain, 1, Some(hello(CHAIN, 0, Role::Miner)));
    assert_eq!(requests(&o).len(), 1);
}

#[test]
fn the_inventory_is_served_in_pages() {
    let mut chain = Fake::new(0);
    chain.pool = (0..5).map(|i| Tx::coinbase(i, vec![])).collect();
    let mut ids: Vec<Hash> = chain.pool.iter().map(|t| t.txid(HashKind::Sha256)).collect();
    ids.sort();
    let mut p = machine(Role::Peer);
    connect(&mut p, &chain, 1, None);
    let req = Request::GetPoolTxids { from: ids[1], max: 2 };
    p.step(0, Input::Request { peer: 1, id: 1, data: req.encode() }, &chain);
    assert_eq!(
        out(&mut p),
        vec![Output::Respond { id: 1, response: Response::PoolTxids(ids[1..3].to_vec()) }]
    );
    // Past the page limit, the limit applies.
    let req = Request::GetPoolTxids { from: Hash([0; 32]), max: u32::MAX };
    p.step(0, Input::Request { peer: 1, id: 2, data: req.encode() }, &chain);
    assert_eq!(out(&mut p), vec![Output::Respond { id: 2, response: Response::PoolTxids(ids) }]);
}

fn disconnects(o: &[Output<u32>]) -> Vec<(u32, &'static str)> {
    o.iter()
        .filter_map(|x| match x {
            Output::Disconnect { peer, reason } => Some((*peer, *reason)),
            _ => None,
        })
        .collect()
}

#[test]
fn silent_peers_time_out_and_a_full_node_makes_room_for_newcomers() {
    let chain = Fake::new(0);
    let mut cfg = Config::new(Role::Peer, "test");
    cfg.max_peers = 2;
    cfg.hello_timeout_ms = 1_000;
    let mut p = Protocol::new(cfg);
    let join = |p: &mut Protocol<u32>, now: u64, k: u32| {
        p.step(now, Input::Connected { peer: k, addr: format!("a{k}"), inbound: true }, &chain);
        p.drain().collect::<Vec<_>>()
    };
    let answer = |p: &mut Protocol<u32>, now: u64, o: &[Output<u32>], k: u32| {
        let (_, tag, _) = requests(o).into_iter().find(|(peer, _, _)| *peer == k).unwrap();
        let data = Response::Hello(hello(CHAIN, 0, Role::Bootstrap)).encode();
        p.step(now, Input::Response { peer: k, tag, data }, &chain);
        p.drain().collect::<Vec<_>>()
    };
    join(&mut p, 0, 1); // never answers
    let o = join(&mut p, 0, 2);
    answer(&mut p, 0, &o, 2);
    // Full: the newcomer 3 takes the place of 1, idle longest without a handshake.
    let o = join(&mut p, 10, 3);
    assert_eq!(disconnects(&o), vec![(1, "evicted for a newcomer")]);
    assert_eq!(requests(&o).len(), 1, "3 gets our Hello");
    // 3 does not answer either: closed once the handshake time-out passed, not before; 1 is
    // not asked twice.
    p.step(1_009, Input::Tick, &chain);
    assert!(disconnects(&out(&mut p)).is_empty());
    p.step(1_010, Input::Tick, &chain);
    assert_eq!(disconnects(&out(&mut p)), vec![(3, "handshake timeout")]);
    for k in [1, 3] {
        p.step(1_011, Input::Disconnected { peer: k }, &chain);
    }
    out(&mut p);
    // With everyone handshaked, the inbound peer with the lowest score below 0 goes.
    let o = join(&mut p, 1_100, 4);
    answer(&mut p, 1_100, &o, 4);
    p.step(1_200, Input::Request { peer: 2, id: 1, data: vec![0xee] }, &chain);
    assert_eq!(penalties(&out(&mut p)), vec![(Offence::Malformed, -50)]);
    let o = join(&mut p, 1_300, 5);
    assert_eq!(disconnects(&o), vec![(2, "evicted for a newcomer")]);
    answer(&mut p, 1_300, &o, 5);
    p.step(1_301, Input::Disconnected { peer: 2 }, &chain);
    out(&mut p);
    // Everyone handshaked and in good standing: the newcomer is turned away, unasked.
    let o = join(&mut p, 1_400, 6);
    assert_eq!(disconnects(&o), vec![(6, "evicted for a newcomer")]);
    assert!(requests(&o).is_empty());
    assert_eq!(p.peers().filter(|(_, x)| x.role.is_some()).count(), 2);
}

#[test]
fn peers_mempools_are_fetched_again_after_a_block_once_room_ran_out() {
    let inventories = |o: &[Output<u32>]| -> Vec<u32> {
        requests(o)
            .into_iter()
            .filter(|(_, _, r)| matches!(r, Request::GetPoolTxids { .. }))
            .map(|r| r.0)
            .collect()
    };
    let chain = Fake::new(0);
    let mut p = machine(Role::Miner);
    // Three peers: the first sync with peer 1 ends on an empty inventory, with peer 2 on a
    // failed request (it may be tried again), with peer 3 on an inventory out of order (never
    // again on this connection).
    for k in 1..=3 {
        let o = connect(&mut p, &chain, k, Some(hello(CHAIN, 0, Role::Peer)));
        let (_, tag, _) = requests(&o)[1].clone();
        let input = match k {
            1 => Input::Response { peer: k, tag, data: Response::PoolTxids(vec![]).encode() },
            2 => Input::RequestFailed { peer: k, tag, error: "timeout".into() },
            _ => {
                let bad = Response::PoolTxids(vec![Hash([9; 32]), Hash([8; 32])]).encode();
                Input::Response { peer: k, tag, data: bad }
            }
        };
        p.step(0, input, &chain);
    }
    p.step(100, Input::Tick, &chain);
    assert!(inventories(&out(&mut p)).is_empty());
    let done =
        |origin: TxOrigin<u32>, crowded: usize| TxsDone { origin, admitted: vec![], invalid: false, crowded };
    // Refusals of the API's transactions are the client's to retry: nothing is fetched.
    p.step(200, Input::TxsDone(vec![done(TxOrigin::Local, 5)]), &chain);
    let moved = Fake::new(1);
    p.step(300, Input::Tick, &moved);
    assert!(inventories(&out(&mut p)).is_empty());
    // Gossip refused for want of room: nothing while the tip stays...
    p.step(400, Input::TxsDone(vec![done(TxOrigin::Gossip { source: 1, id: MsgId([1; 20]) }, 2)]), &moved);
    p.step(500, Input::Tick, &moved);
    assert!(inventories(&out(&mut p)).is_empty());
    // ...then, once a block moved it, peers 1 and 2 are asked for their inventories again
    // (not peer 3, which answered against the rules), once.
    let next = Fake::new(2);
    p.step(600, Input::Tick, &next);
    assert_eq!(inventories(&out(&mut p)), vec![1, 2]);
    p.step(700, Input::Tick, &Fake::new(3));
    assert!(inventories(&out(&mut p)).is_empty());
}

#[test]
fn peers_heights_follow_their_blocks_and_their_hellos_asked_again() {
    let chain = Fake::new(0);
    let mut p = Protocol::new(Config { status_every_ms: STATUS_EVERY_MS, ..Config::new(Role::Peer, "test") });
    let every = p.config().status_every_ms;
    // Peer 1 mines, peer 2 relays; both start at height 0.
    connect(&mut p, &chain, 1, Some(hello(CHAIN, 0, Role::Miner)));
    connect(&mut p, &chain, 2, Some(hello(CHAIN, 0, Role::Peer)));
    out(&mut p);
    // Peer 1's ten blocks come by gossip from it (gossip delivers each once: peer 2's relay
    // of the same blocks never reaches the machine) and connect.
    let (headers, _) = mined(10);
    for (i, h) in headers.iter().enumerate() {
        let block = Block { header: *h, txs: vec![Tx::coinbase(h.height, vec![])] };
        let data = block.encode();
        let id = message_id(&data);
        let at = 100 + i as u64;
        p.step(at, Input::Gossip { topic: Topic::Blocks, id, source: 1, data }, &chain);
        let hash = h.hash(HashKind::Sha256);
        let origin = BlockOrigin::Gossip { source: 1, id };
        p.step(
            at,
            Input::BlockDone { hash, height: h.height, origin, verdict: BlockVerdict::Connected },
            &chain,
        );
    }
    let o = out(&mut p);
    let delivered: Vec<Event<u32>> =
        events(&o).into_iter().filter(|e| matches!(e, Event::Delivered { .. })).collect();
    assert_eq!(delivered.len(), 10);
    assert_eq!(delivered[9], Event::Delivered { peer: 1, height: 10, at_ms: 109 });
    p.step(200, Input::Tick, &chain);
    assert!(events(&out(&mut p)).contains(&Event::Height { peer: 1, height: 10 }));
    let shown = |p: &Protocol<u32>, k: u32| {
        let peer = p.peers().find(|(x, _)| **x == k).unwrap().1;
        (peer.height, peer.last_block_ms)
    };
    assert_eq!(shown(&p, 1), (10, Some(109)));
    assert_eq!(shown(&p, 2), (0, None));
    // Once `status_every_ms` has passed, both are asked for their `Hello` again (once, however
    // many ticks come before the answer); peer 2's answer says where it is now.
    p.step(every, Input::Tick, &chain);
    let o = out(&mut p);
    let asked: Vec<(u32, u64)> = o
        .iter()
        .filter_map(|x| match x {
            Output::Request { peer, tag, request: Request::Hello(h) } => {
                assert_eq!(h.tip_height, chain.tip().0);
                Some((*peer, *tag))
            }
            _ => None,
        })
        .collect();
    assert_eq!(asked.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1, 2]);
    p.step(every + 250, Input::Tick, &chain);
    assert!(!out(&mut p).iter().any(|x| matches!(x, Output::Request { request: Request::Hello(_), .. })));
    let tag2 = asked[1].1;
    p.step(
        every + 300,
        Input::Response { peer: 2, tag: tag2, data: Response::Hello(hello(CHAIN, 10, Role::Peer)).encode() },
        &chain,
    );
    // A refreshed tip is a height change, not a second handshake.
    assert_eq!(events(&out(&mut p)), vec![Event::Height { peer: 2, height: 10 }]);
    assert_eq!(shown(&p, 2), (10, None));
    // Asked again `status_every_ms` after it was last asked, not before; peer 1 not while its
    // first request is unanswered.
    let hellos = |p: &mut Protocol<u32>, at: u64| -> Vec<u32> {
        p.step(at, Input::Tick, &chain);
        out(p)
            .iter()
            .filter_map(|x| match x {
                Output::Request { peer, request: Request::Hello(_), .. } => Some(*peer),
                _ => None,
            })
            .collect()
    };
    assert_eq!(hellos(&mut p, 2 * every - 1), Vec::<u32>::new());
    assert_eq!(hellos(&mut p, 2 * every), vec![2]);
}

#[test]
fn a_block_from_a_clock_hours_ahead_is_held_unpunished_and_the_peers_median_offset_is_reported() {
    let chain = Fake::new(0);
    let mut p = machine(Role::Peer);
    let bound = p.config().max_clock_offset_ms;
    for k in 1..=3 {
        connect(&mut p, &chain, k, Some(hello(CHAIN, 0, Role::Miner)));
    }
    out(&mut p);
    let now = 1_000_000;
    // Peer 1's clock is three hours ahead: its block says so.
    let ahead = 3 * 60 * 60 * 1000;
    let gossip = |p: &mut Protocol<u32>, k: u32, time: u64| {
        let mut header = mined(1).0[0];
        header.time = time;
        mine(&mut header);
        let block = Block { header, txs: vec![Tx::coinbase(1, vec![])] };
        let data = block.encode();
        let id = message_id(&data);
        p.step(now, Input::Gossip { topic: Topic::Blocks, id, source: k, data }, &chain);
        (id, header.hash(HashKind::Sha256))
    };
    let (id, hash) = gossip(&mut p, 1, now + ahead);
    out(&mut p);
    // The block worker holds it as too new (not permanent): dropped, not forwarded, and its
    // relayer keeps its score.
    let verdict = BlockVerdict::Invalid { permanent: false, reason: "time-too-new".into() };
    let origin = BlockOrigin::Gossip { source: 1, id };
    p.step(now, Input::BlockDone { hash, height: 1, origin, verdict }, &chain);
    let o = out(&mut p);
    assert_eq!(o, vec![Output::Validate { id, source: 1, verdict: Verdict::Ignore }]);
    assert_eq!(p.score(&1, now), 0);
    // Its offset is the only one known: the median is past the bound, reported once.
    assert_eq!(p.clock_offset(), Some((ahead as i64, 1)));
    p.step(now + 250, Input::Tick, &chain);
    let clock = |o: &[Output<u32>]| -> Vec<Event<u32>> {
        events(o).into_iter().filter(|e| matches!(e, Event::Clock { .. })).collect()
    };
    assert_eq!(
        clock(&out(&mut p)),
        vec![Event::Clock { median_offset_ms: ahead as i64, peers: 1, out_of_bound: true }]
    );
    p.step(now + 500, Input::Tick, &chain);
    assert_eq!(clock(&out(&mut p)), vec![]);
    // Two peers whose blocks agree with this node's clock (a second late, and one at once):
    // the median is back within the bound.
    gossip(&mut p, 2, now - 1_000);
    gossip(&mut p, 3, now);
    out(&mut p);
    assert_eq!(p.clock_offset(), Some((0, 3)));
    p.step(now + 750, Input::Tick, &chain);
    assert_eq!(
        clock(&out(&mut p)),
        vec![Event::Clock { median_offset_ms: 0, peers: 3, out_of_bound: false }]
    );
    // A node whose own clock is behind sees every peer ahead: past the bound again (either
    // way counts).
    for k in 1..=3 {
        gossip(&mut p, k, now + bound + 60_000);
    }
    out(&mut p);
    p.step(now + 1_000, Input::Tick, &chain);
    let o = clock(&out(&mut p));
    assert_eq!(
        o,
        vec![Event::Clock { median_offset_ms: (bound + 60_000) as i64, peers: 3, out_of_bound: true }]
    );
}

#[test]
fn a_peer_with_a_tip_we_lack_is_asked_for_headers_even_below_our_height() {
    let chain = Fake::new(3);
    let mut p = machine(Role::Peer);
    // Peer 1 holds our tip; peer 2 a block at height 2 that is not ours (another branch, which
    // may hold more work than ours).
    connect(&mut p, &chain, 1, Some(hello(CHAIN, 3, Role::Peer)));
    connect(&mut p, &chain, 2, Some(Hello { tip_hash: Hash([7; 32]), ..hello(CHAIN, 2, Role::Peer) }));
    out(&mut p);
    p.step(0, Input::Tick, &chain);
    let r = requests(&out(&mut p));
    assert!(matches!(&r[..], [(2, _, Request::GetHeaders { .. })]), "{r:?}");
}
