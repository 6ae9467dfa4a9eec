//! Property tests of the protocol machine: whatever bytes peers send (requests, responses,
//! gossip) and in whatever order, the machine never panics, answers every inbound request
//! exactly once, bans only peers it penalised, asks only connected peers, and keeps its compact
//! block rebuilds bounded and none past the last peer's departure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use scalechain_p2p::msg::{
    message_id, CompactBlock, Hello, Request, Response, Role, Topic, TxBatch, PROTOCOL_VERSION,
};
use scalechain_p2p::protocol::{ChainView, Config, Event, Input, Output, Protocol, MAX_REBUILDS};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, Hash, HashKind, Header, Target, Tx};

const CHAIN: Hash = Hash([7; 32]);
const GENESIS: Hash = Hash([1; 32]);

/// A chain of only genesis and an empty mempool.
struct Genesis;

impl ChainView for Genesis {
    fn chain_id(&self) -> Hash {
        CHAIN
    }
    fn hash_kind(&self) -> HashKind {
        HashKind::Sha256
    }
    fn tip(&self) -> (u64, Hash) {
        (0, GENESIS)
    }
    fn locator(&self) -> Vec<Hash> {
        vec![GENESIS]
    }
    fn headers_after(&self, _: &[Hash], _: usize) -> Vec<Header> {
        Vec::new()
    }
    fn has_block(&self, h: &Hash) -> bool {
        *h == GENESIS
    }
    fn pooled_txs(&self, _: &[Hash], _: usize) -> Vec<Tx> {
        Vec::new()
    }
    fn has_tx(&self, _: &Hash) -> bool {
        false
    }
    fn pool_txids(&self, _: &Hash, _: usize) -> Vec<Hash> {
        Vec::new()
    }
    fn target_after(&self, parent: &Hash) -> Option<scalechain_types::Target> {
        (*parent == GENESIS).then(|| scalechain_types::Target::from_bits(250))
    }
    fn pooled_for_block(&self, refs: &[scalechain_p2p::msg::TxRef]) -> Vec<Option<Tx>> {
        vec![None; refs.len()]
    }
}

/// A structurally valid block claiming height `h`.
fn block(h: u64) -> Block {
    let header = Header {
        version: 1,
        height: h,
        prev_hash: GENESIS,
        merkle_root: Hash([0; 32]),
        time: 1,
        target: Target::from_bits(255),
        nonce: 0,
    };
    Block { header, txs: vec![Tx::coinbase(h, vec![])] }
}

/// A compact block on genesis naming two transactions nobody pools (so it is fetched), mined
/// on the target `target_after` gives.
fn compact(h: u64) -> CompactBlock {
    let mut b = block(h);
    b.header.target = Target::from_bits(250);
    b.txs.push(Tx::coinbase(h + 1000, vec![]));
    b.txs.push(Tx::coinbase(h + 2000, vec![]));
    while !b.header.target.is_met_by(&b.header.hash(HashKind::Sha256)) {
        b.header.nonce += 1;
    }
    CompactBlock::of(&b, HashKind::Sha256).unwrap()
}

/// Bytes that are sometimes valid messages and sometimes junk.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let hello = |chain: Hash, h: u64| Hello {
        version: PROTOCOL_VERSION,
        chain_id: chain,
        role: Role::Peer,
        tip_height: h,
        tip_hash: Hash([2; 32]),
        agent: "p".into(),
    };
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        (0u64..50).prop_map(move |h| Request::Hello(hello(CHAIN, h)).encode()),
        (0u64..50).prop_map(move |h| Response::Hello(hello(CHAIN, h)).encode()),
        Just(Request::Hello(hello(Hash([9; 32]), 3)).encode()),
        Just(Request::GetHeaders { locator: vec![GENESIS], max: 10 }.encode()),
        Just(Request::GetBlocks(vec![GENESIS]).encode()),
        Just(Response::Headers(vec![]).encode()),
        Just(Response::Blocks(vec![]).encode()),
        Just(Request::GetPoolTxids { from: Hash([0; 32]), max: 3 }.encode()),
        Just(Response::PoolTxids(vec![Hash([5; 32]), Hash([6; 32])]).encode()),
        Just(Response::Txs(vec![Tx::coinbase(1, vec![])]).encode()),
        Just(TxBatch(vec![Tx::coinbase(1, vec![])]).encode()),
        (1u64..100).prop_map(|h| block(h).encode()),
        (1u64..100).prop_map(|h| compact(h).encode()),
        Just(Request::GetBlockTxs { block: GENESIS, indexes: vec![1, 2] }.encode()),
        Just(Response::BlockTxs(vec![Tx::coinbase(7, vec![])]).encode()),
    ]
}

#[derive(Clone, Debug)]
enum Step {
    Connect(u8),
    Disconnect(u8),
    Gossip(u8, u8, Vec<u8>),
    Request(u8, Vec<u8>),
    /// An answer to the n-th request we sent (if any).
    Response(usize, Vec<u8>),
    Failed(usize),
    Tick(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..4).prop_map(Step::Connect),
        (0u8..4).prop_map(Step::Disconnect),
        (0u8..4, 0u8..3, body()).prop_map(|(p, t, b)| Step::Gossip(p, t, b)),
        (0u8..4, body()).prop_map(|(p, b)| Step::Request(p, b)),
        (0usize..8, body()).prop_map(|(n, b)| Step::Response(n, b)),
        (0usize..8).prop_map(Step::Failed),
        (0u16..3000).prop_map(Step::Tick),
    ]
}

proptest! {
    #[test]
    fn any_input_sequence_is_handled_and_every_request_answered_once(steps in proptest::collection::vec(step(), 1..80)) {
        // Room for three peers of the four, so newcomers evict.
        let mut cfg = Config::new(Role::Peer, "prop");
        cfg.max_peers = 3;
        let mut p: Protocol<u8> = Protocol::new(cfg);
        let mut now = 0u64;
        let mut next_id = 0u64;
        let mut answers: BTreeMap<u64, usize> = BTreeMap::new();
        let mut sent: Vec<(u8, u64)> = Vec::new();
        let mut connected = std::collections::BTreeSet::new();
        let mut penalised = std::collections::BTreeSet::new();
        for s in steps {
            let input = match s {
                Step::Connect(k) => { connected.insert(k); Input::Connected { peer: k, addr: String::new(), inbound: k % 2 == 0 } }
                Step::Disconnect(k) => { connected.remove(&k); Input::Disconnected { peer: k } }
                Step::Gossip(k, t, data) => {
                    let topic = [Topic::Txs, Topic::Blocks, Topic::CompactBlocks][usize::from(t)];
                    Input::Gossip { topic, id: message_id(&data), source: k, data }
                }
                Step::Request(k, data) => {
                    next_id += 1;
                    answers.insert(next_id, 0);
                    Input::Request { peer: k, id: next_id, data }
                }
                Step::Response(n, data) => match sent.get(n) {
                    Some(&(peer, tag)) => Input::Response { peer, tag, data },
                    None => Input::Tick,
                },
                Step::Failed(n) => match sent.get(n) {
                    Some(&(peer, tag)) => Input::RequestFailed { peer, tag, error: "x".into() },
                    None => Input::Tick,
                },
                Step::Tick(dt) => { now += u64::from(dt); Input::Tick }
            };
            p.step(now, input, &Genesis);
            for o in p.drain() {
                match o {
                    Output::Respond { id, .. } | Output::ServeBlocks { id, .. } | Output::ServeBlockTxs { id, .. } => {
                        *answers.get_mut(&id).unwrap() += 1;
                    }
                    Output::Request { peer, tag, .. } => {
                        prop_assert!(connected.contains(&peer), "asked {peer}, not connected");
                        sent.push((peer, tag));
                    }
                    Output::Event(Event::Penalised { peer, .. }) => { penalised.insert(peer); }
                    Output::Ban { peer, .. } => prop_assert!(penalised.contains(&peer)),
                    Output::Disconnect { peer, .. } => prop_assert!(connected.contains(&peer), "dropped {peer}, not connected"),
                    _ => {}
                }
            }
            prop_assert!(p.rebuilding() <= MAX_REBUILDS);
        }
        prop_assert!(answers.values().all(|n| *n == 1), "{answers:?}");
        for k in 0..4u8 {
            p.step(now, Input::Disconnected { peer: k }, &Genesis);
        }
        prop_assert_eq!(p.rebuilding(), 0, "rebuilds outlived their peers");
    }
}
